/*
 * backend_cpu_f32pack.c: the CPU backend's fp32 GEMMs, on processors with
 * AVX-512, or AVX2 and FMA.  The served model packs its weights once
 * (backend.h f32_weight_pack, gemm_f32_packed: C[M,N] (= or beta*C +)
 * A[M,K] @ W[N,K]^T); every other fp32 product of the backend (cpu_gemm:
 * training's, the heads', the optimiser's) runs here too
 * (cpu_gemm_f32_any): a B stored [N, K] (a weight) is packed per call, a
 * B stored [K, N] is read in place, and a transposed A (a weight
 * gradient's dY^T) is copied per task.
 *
 * Why not OpenBLAS: the serving forward multiplies each sequence's rows by
 * the same layer weights in its own call (a row's bits must not depend on
 * its batch, model_infer.c), and OpenBLAS packs both operands at every
 * call, zeroes C first, and picks its kernels by the processor's model
 * (a processor newer than the release gets its SSE3 kernels).  Here a
 * weight is packed once per loaded model, and A is read in place.  The
 * small preset's serving forward on two cores of an Emerald Rapids Xeon
 * (bench/bin/predict_forward, variants 2 and 6): its GEMMs at 262-270
 * GFLOP/s, against 186-194 on OpenBLAS's AVX-512 kernels and 43-51 on the
 * SSE3 kernels OpenBLAS picks there by itself.
 *
 * Layout.  B is read as panels of 16 output columns: panel q holds, for
 * every k, the 16 columns' B[k, n] (one zmm); packed, N is padded to 16
 * with zeros, read in place the last panel's load is masked.  A register
 * tile is MR rows x NP panels: per k, NP loads of B, MR broadcasts of
 * A[i, k] (A stored [M, K], or [K, M] when transposed), MR*NP FMAs (AVX2:
 * MR2 rows x one panel, as two ymm).
 *
 * Determinism.  Every element C[i,j] is the same sequence of operations
 * whatever M, the row's place in the call, the tile it falls in or the
 * thread count, and whichever of the two instruction sets runs it: acc =
 * 0, then acc = fma(A[i,k], B[k,j], acc) for k = 0, 1, ... in order, then
 * the store (alpha * acc, then with beta: fma(beta, C, that)).  A product
 * with K above F32_KWHOLE sums K in blocks of F32_KBLK, each block so and
 * added to C in order (a block of packed B, 128 x 4 panels x 64 bytes,
 * stays in L1 across a task's rows).
 *
 * Calls: from one thread per backend and never inside an OpenMP parallel
 * region (as every entry of the backend): the packed B and the buffers of
 * a transposed A are the backend's, one slice per thread of this call.
 */
#include "backend/backend_cpu_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#else
#define omp_get_thread_num() 0
#endif

#define PANEL   16                 /* output columns per panel (one zmm) */
#define MR      6                  /* rows per register tile */
#define NP      4                  /* panels per register tile: 6 x 4 = 24 accumulators */
#define ROWBLK  48                 /* rows per task (a multiple of MR and MR2) */
#define ROWBLK_LONG 288            /* at most, when K is long (below) */

typedef struct CpuF32Weight
{
	int    N, K, np;               /* np: panels */
	float *w;                      /* [np][K][PANEL] */
} CpuF32Weight;

/* One product C[M, N] (= or beta*C +) op(A) @ B of the kernels: B's
 * panels (panel q's 16 columns at row k from panels + q*ps + k*bks: packed
 * [np][K][PANEL], or B itself stored [K, N]: ps 16, bks its row stride;
 * the first panel q_first), A[i, k] at A[i*rs + k*ks], K summed in blocks
 * of kblk. */
typedef struct F32Product
{
	const float *panels;
	size_t       ps, bks;
	int          q_first, N, K, kblk;
	int          mblk;         /* rows per task (run_product sets it) */
	const float *A;
	size_t       rs, ks;
	float        alpha, beta;
	float       *C;
	int          ldc;
} F32Product;

/* the kernels' instruction sets: AVX-512 (a panel per zmm), else AVX2 +
 * FMA (a panel per two ymm); the same FMA chain per element either way */
static bool force_avx2;

void
cpu_f32_packed_force_avx2(bool on)
{
	force_avx2 = on;
}

static bool
use_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	return !force_avx2 && __builtin_cpu_supports("avx512f");
#else
	return false;
#endif
}

bool
hw_backend_cpu_f32_pack_supported(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	return __builtin_cpu_supports("avx512f") || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
#else
	return false;
#endif
}

bool
cpu_f32_packed_usable(HwBackend *be)
{
	return !((CpuCtx *) be->ctx)->f32pack_disabled && hw_backend_cpu_f32_pack_supported();
}

void *
cpu_f32_weight_pack(HwBackend *be, const float *W, int N, int K)
{
	CpuF32Weight *p;

	if (!cpu_f32_packed_usable(be) || N <= 0 || K <= 0 || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->N = N;
	p->K = K;
	p->np = (N + PANEL - 1) / PANEL;
	if (posix_memalign((void **) &p->w, 64, sizeof(float) * (size_t) p->np * K * PANEL) != 0)
	{
		free(p);
		return NULL;
	}
	for (int q = 0; q < p->np; q++)
		for (int k = 0; k < K; k++)
			for (int j = 0; j < PANEL; j++)
			{
				int n = q * PANEL + j;

				p->w[((size_t) q * K + k) * PANEL + j] = n < N ? W[(size_t) n * K + k] : 0.0f;
			}
	return p;
}

void
cpu_f32_weight_free(HwBackend *be, void *packed)
{
	CpuF32Weight *p = packed;

	(void) be;
	if (p)
		free(p->w);
	free(p);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include "backend/backend_cpu_tile.h"

/*
 * The A operand of rows [m0, m0+mb) over k in [k0, k0+kn) for a row
 * block: in place, or, when A is stored transposed ([K, M]: a weight
 * gradient's dY^T), copied k-major into the task's buffer abuf
 * [kn][mblk] first.  In place the kernel's broadcasts would step to a
 * new row of A, often a new page, at every k of every tile; copied, a k
 * is one contiguous run of mb floats, read once per block.  *rs, *ks: the
 * strides the kernel then reads with.
 */
static const float *
a_block(const F32Product *p, float *abuf, int m0, int mb, int k0, int kn, size_t *rs, size_t *ks)
{
	if (p->ks == 1)
	{
		*rs = p->rs;
		*ks = 1;
		return p->A + (size_t) m0 * p->rs + k0;
	}
	for (int k = 0; k < kn; k++)
		memcpy(abuf + (size_t) k * p->mblk, p->A + (size_t) (k0 + k) * p->ks + m0, sizeof(float) * mb);
	*rs = 1;
	*ks = (size_t) p->mblk;
	return abuf;
}

#pragma GCC push_options
#pragma GCC target("avx512f")

/* C[mr rows, np panels] (= alpha * sum, or beta*C + that) rows a (A[i, k]
 * at a[i*rs + k*ks]) by panels b (panel j's row k at b + j*ps + k*bks):
 * mr and np are constants at every call, so the accumulators stay in
 * registers; the last panel loads and stores only `lastmask` columns */
static inline __attribute__((always_inline)) void
tile(const float *a, size_t rs, size_t ks, const float *b, size_t ps, size_t bks, int K, int mr, int np, float *C,
	 int ldc, float alpha, float beta, __mmask16 lastmask)
{
	__m512 acc[MR][NP];

#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
		for (int j = 0; j < np; j++)
			acc[i][j] = _mm512_setzero_ps();
	for (int k = 0; k < K; k++)
	{
		__m512 bv[NP];

#pragma GCC unroll 8
		for (int j = 0; j < np; j++)
			bv[j] = _mm512_maskz_loadu_ps(j == np - 1 ? lastmask : (__mmask16) 0xffff, b + j * ps + (size_t) k * bks);
#pragma GCC unroll 8
		for (int i = 0; i < mr; i++)
		{
			__m512 av = _mm512_set1_ps(a[(size_t) i * rs + (size_t) k * ks]);

#pragma GCC unroll 8
			for (int j = 0; j < np; j++)
				acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
		}
	}
	tile_store(acc, mr, np, C, ldc, alpha, beta, lastmask);
}

/* rows in place (ks 1: the usual case, a constant) or transposed */
static void
tile_any(const float *a, size_t rs, size_t ks, const float *b, size_t ps, size_t bks, int K, int mr, int np, float *C,
		 int ldc, float alpha, float beta, __mmask16 lastmask)
{
	if (ks == 1)
		TILE_SWITCH(tile, (a, rs, 1, b, ps, bks, K), mr, np, (C, ldc, alpha, beta, lastmask))
	else
		TILE_SWITCH(tile, (a, rs, ks, b, ps, bks, K), mr, np, (C, ldc, alpha, beta, lastmask))
}

/* One K block [k0, k0+kn) of rows [m0, m0+mb) of C by panels [q_lo,
 * q_hi) (relative to q_first), A's block at a (strides rs, ks), the first
 * block over beta * C: the tiles of one instruction set (row_block runs
 * the blocks) */
typedef void (*F32BlockFn)(const F32Product *p, const float *a, size_t rs, size_t ks, int m0, int mb, int q_lo,
						   int q_hi, int k0, int kn, float beta);

/* AVX-512: register tiles of NP panels */
static void
block512(const F32Product *p, const float *a, size_t rs, size_t ks, int m0, int mb, int q_lo, int q_hi, int k0,
		 int kn, float beta)
{
	for (int q0 = q_lo; q0 < q_hi; q0 += NP)
	{
		int       np = q_hi - q0 < NP ? q_hi - q0 : NP;
		int       lastcols = p->N - (q0 + np - 1) * PANEL;
		__mmask16 lastmask = (__mmask16) (lastcols >= PANEL ? 0xffffu : (1u << lastcols) - 1u);

		for (int i0 = 0; i0 < mb; i0 += MR)
			tile_any(a + (size_t) i0 * rs, rs, ks, p->panels + (p->q_first + q0) * p->ps + (size_t) k0 * p->bks, p->ps,
					 p->bks, kn, mb - i0 < MR ? mb - i0 : MR, np, p->C + (size_t) (m0 + i0) * p->ldc + q0 * PANEL,
					 p->ldc, p->alpha, beta, lastmask);
	}
}

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#define MR2 6                      /* AVX2: rows per register tile, one panel (two ymm) wide: 12 accumulators */

/* ymm lanes below n on */
static inline __m256i
lanes_below(int n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* C[mr rows, one panel] (= alpha * sum, or beta*C + that) rows a by the
 * panel b (row k at b + k*bks), the panel's first `cols` columns loaded
 * and stored (AVX2: the panel's two halves in two ymm); full (a constant:
 * cols == PANEL) takes plain loads and stores, masked ones cost more on
 * several cores */
static inline __attribute__((always_inline)) void
tile2(const float *a, size_t rs, size_t ks, const float *b, size_t bks, int K, int mr, float *C, int ldc, float alpha,
	  float beta, int cols, bool full)
{
	__m256  acc[MR2][2];
	__m256i m0 = lanes_below(cols), m1 = lanes_below(cols - 8);

#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
		acc[i][0] = acc[i][1] = _mm256_setzero_ps();
	for (int k = 0; k < K; k++)
	{
		const float *bk = b + (size_t) k * bks;
		__m256       b0 = full ? _mm256_loadu_ps(bk) : _mm256_maskload_ps(bk, m0);
		__m256       b1 = full ? _mm256_loadu_ps(bk + 8) : _mm256_maskload_ps(bk + 8, m1);

#pragma GCC unroll 8
		for (int i = 0; i < mr; i++)
		{
			__m256 av = _mm256_broadcast_ss(a + (size_t) i * rs + (size_t) k * ks);

			acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
			acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
		}
	}
#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
		for (int h = 0; h < 2; h++)
		{
			float  *c = C + (size_t) i * ldc + 8 * h;
			__m256i mk = h ? m1 : m0;
			__m256  r = acc[i][h];

			if (alpha != 1.0f)
				r = _mm256_mul_ps(_mm256_set1_ps(alpha), r);
			if (beta != 0.0f)
				r = _mm256_fmadd_ps(_mm256_set1_ps(beta), full ? _mm256_loadu_ps(c) : _mm256_maskload_ps(c, mk), r);
			if (full)
				_mm256_storeu_ps(c, r);
			else
				_mm256_maskstore_ps(c, mk, r);
		}
}

#define TILE2_CASES(KS, FULL)                                                       \
	switch (mr)                                                                     \
	{                                                                               \
		case 1: tile2(a, rs, KS, b, bks, K, 1, C, ldc, alpha, beta, cols, FULL); break;  \
		case 2: tile2(a, rs, KS, b, bks, K, 2, C, ldc, alpha, beta, cols, FULL); break;  \
		case 3: tile2(a, rs, KS, b, bks, K, 3, C, ldc, alpha, beta, cols, FULL); break;  \
		case 4: tile2(a, rs, KS, b, bks, K, 4, C, ldc, alpha, beta, cols, FULL); break;  \
		case 5: tile2(a, rs, KS, b, bks, K, 5, C, ldc, alpha, beta, cols, FULL); break;  \
		default: tile2(a, rs, KS, b, bks, K, 6, C, ldc, alpha, beta, cols, FULL); break; \
	}

static void
tile2_any(const float *a, size_t rs, size_t ks, const float *b, size_t bks, int K, int mr, float *C, int ldc,
		  float alpha, float beta, int cols)
{
	if (ks == 1 && cols == PANEL)
		TILE2_CASES(1, true)
	else if (ks == 1)
		TILE2_CASES(1, false)
	else if (cols == PANEL)
		TILE2_CASES(ks, true)
	else
		TILE2_CASES(ks, false)
}

/* AVX2: panel by panel */
static void
block2(const F32Product *p, const float *a, size_t rs, size_t ks, int m0, int mb, int q_lo, int q_hi, int k0, int kn,
	   float beta)
{
	for (int q = q_lo; q < q_hi; q++)
	{
		int cols = p->N - q * PANEL < PANEL ? p->N - q * PANEL : PANEL;

		for (int i0 = 0; i0 < mb; i0 += MR2)
			tile2_any(a + (size_t) i0 * rs, rs, ks, p->panels + (p->q_first + q) * p->ps + (size_t) k0 * p->bks, p->bks,
					  kn, mb - i0 < MR2 ? mb - i0 : MR2, p->C + (size_t) (m0 + i0) * p->ldc + q * PANEL, p->ldc,
					  p->alpha, beta, cols);
	}
}

#pragma GCC pop_options

/* rows [m0, m0+mb) of C by panels [q_lo, q_hi), K block by block */
static void
row_block(const F32Product *p, F32BlockFn block, float *abuf, int m0, int mb, int q_lo, int q_hi)
{
	for (int k0 = 0; k0 < p->K; k0 += p->kblk)
	{
		int          kn = p->K - k0 < p->kblk ? p->K - k0 : p->kblk;
		size_t       rs, ks;
		const float *a = a_block(p, abuf, m0, mb, k0, kn, &rs, &ks);

		block(p, a, rs, ks, m0, mb, q_lo, q_hi, k0, kn, k0 == 0 ? p->beta : 1.0f);
	}
}

/* the product's M rows: tasks of ROWBLK rows, and when rows alone give
 * the team too little work, also of column chunks (whole panel groups;
 * an element's sum is the same whichever task computes it).  A long K (a
 * weight gradient's, over every token) has few rows and a B as large as
 * its A: there a task takes up to ROWBLK_LONG rows, so that B is read
 * once per task rather than once per 48 rows.  false: no memory for the
 * buffers of a transposed A (C untouched). */
static bool
run_product(HwBackend *be, F32Product *p, int M)
{
	int   nt = cpu_nthreads(be), npan = (p->N + PANEL - 1) / PANEL, ngroups = (npan + NP - 1) / NP;
	int   nblk, nchunk = 1, gper, ntask;
	F32BlockFn block = use_avx512() ? block512 : block2;
	float *abuf = NULL;	/* transposed A: nt buffers of [kblk][mblk] (a_block) */

	p->mblk = ROWBLK;
	if (p->kblk < p->K)
	{
		int per = ((M + nt - 1) / nt + ROWBLK - 1) / ROWBLK * ROWBLK;

		p->mblk = per < ROWBLK_LONG ? per : ROWBLK_LONG;
	}
	nblk = (M + p->mblk - 1) / p->mblk;
	while (nblk * nchunk < 4 * nt && nchunk < ngroups)
		nchunk++;
	gper = (ngroups + nchunk - 1) / nchunk;
	ntask = nblk * nchunk;
	if (nt > ntask)
		nt = ntask;
	if (p->ks != 1 && !(abuf = cpu_scratch(be, (size_t) nt * p->kblk * p->mblk)))
		return false;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
	for (int k = 0; k < ntask; k++)
	{
		int blk = k / nchunk, g0 = (k % nchunk) * gper * NP, g1 = g0 + gper * NP, m0 = blk * p->mblk;

		if (g0 < npan)
			row_block(p, block, abuf ? abuf + (size_t) omp_get_thread_num() * p->kblk * p->mblk : NULL, m0,
					  M - m0 < p->mblk ? M - m0 : p->mblk, g0, g1 < npan ? g1 : npan);
	}
	return true;
}

/* C[M, N] (= or beta*C +) A @ columns [n0, n0 + N) of the packed w, K whole */
void
cpu_gemm_f32_packed(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0,
					float beta, float *C, int ldc)
{
	const CpuF32Weight *w = packed;

	if (M <= 0 || N <= 0 || !w || w->K != K || n0 < 0 || n0 % PANEL != 0 || n0 + N > w->N)
		return;
	(void) run_product(be, &(F32Product) {.panels = w->w, .ps = (size_t) K * PANEL, .bks = PANEL, .q_first = n0 / PANEL,
										  .N = N,
										  .K = K, .kblk = K, .A = A, .rs = (size_t) lda, .ks = 1, .alpha = 1.0f, .beta = beta, .C = C,
										  .ldc = ldc},
					   M);    /* A in place: no buffers, nothing can fail */
}

/* B stored [N, K] into panels [np][K][PANEL], the pad columns zero */
static void
pack_b(float *dst, const float *B, int ldb, int N, int K, int nt)
{
	int np = (N + PANEL - 1) / PANEL;

#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && (int64_t) N * K > 32768)
	for (int q = 0; q < np; q++)
		for (int k = 0; k < K; k++)
			for (int j = 0; j < PANEL; j++)
				dst[((size_t) q * K + k) * PANEL + j] = q * PANEL + j < N ? B[(size_t) (q * PANEL + j) * ldb + k] : 0.0f;
}

bool
cpu_gemm_f32_any(HwBackend *be, bool transA, bool transB, int M, int N, int K, float alpha, const float *A, int lda,
				 const float *B, int ldb, float beta, float *C, int ldc)
{
	F32Product p = {.panels = B, .ps = PANEL, .bks = (size_t) ldb, .N = N, .K = K, .kblk = K <= F32_KWHOLE ? K : F32_KBLK,
					.A = A, .rs = transA ? 1 : (size_t) lda, .ks = transA ? (size_t) lda : 1, .alpha = alpha,
					.beta = beta, .C = C, .ldc = ldc};

	if (!cpu_f32_packed_usable(be) || M <= 0 || N <= 0 || K <= 0)
		return false;
	if (transB)
	{
		/* B stored [N, K] (a layer's weight): its columns of op(B) are
		 * strided, so it is packed (small: a weight) */
		float *panels = cpu_bpack(be, (size_t) ((N + PANEL - 1) / PANEL) * K * PANEL * sizeof(float));

		if (!panels)
			return false;
		pack_b(panels, B, ldb, N, K, cpu_nthreads(be));
		p.panels = panels;
		p.ps = (size_t) K * PANEL;
		p.bks = PANEL;
	}
	return run_product(be, &p, M);
}
#else
void
cpu_gemm_f32_packed(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0,
					float beta, float *C, int ldc)
{
	/* never called: cpu_f32_weight_pack returns NULL without AVX-512 or AVX2 */
}

bool
cpu_gemm_f32_any(HwBackend *be, bool transA, bool transB, int M, int N, int K, float alpha, const float *A, int lda,
				 const float *B, int ldb, float beta, float *C, int ldc)
{
	return false;
}
#endif
