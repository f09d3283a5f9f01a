/*
 * backend_cpu_f32pack.c: the served model's fp32 GEMMs on packed weights
 * (backend.h f32_weight_pack, gemm_f32_packed): C[M,N] (= or beta*C +)
 * A[M,K] @ W[N,K]^T in fp32 on processors with AVX-512, or AVX2 and FMA.
 *
 * Why not OpenBLAS: the serving forward multiplies each sequence's rows by
 * the same layer weights in its own call (a row's bits must not depend on
 * its batch, model_infer.c), and OpenBLAS packs both operands at every
 * call, zeroes C first, and picks its kernels by the processor's model
 * (a processor newer than the release gets its SSE3 kernels).  Here the
 * weights are packed once per loaded model and A is read in place.  The
 * small preset's serving forward on two cores of an Emerald Rapids Xeon
 * (bench/bin/predict_forward, variants 2 and 6): its GEMMs at 262-270
 * GFLOP/s, against 186-194 on OpenBLAS's AVX-512 kernels and 43-51 on the
 * SSE3 kernels OpenBLAS picks there by itself.
 *
 * Layout.  W is packed into panels of 16 output columns: panel q holds,
 * for every k, the 16 columns' W[n, k] (one zmm), N padded to 16 with
 * zeros.  A register tile is MR rows x NP panels: per k, NP loads of W,
 * MR broadcasts of A[i, k], MR*NP FMAs (AVX2: MR2 rows x one panel, as
 * two ymm).
 *
 * Determinism.  Every element C[i,j] is the same sequence of operations
 * whatever M, N, the row's place in the call, the tile it falls in or the
 * thread count, and whichever of the two instruction sets runs it: acc =
 * 0, then acc = fma(A[i,k], W[j,k], acc) for k = 0, 1, ... in order, then
 * the store (with beta: fma(beta, C, acc)).
 */
#include "backend/backend_cpu_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PANEL   16                 /* output columns per panel (one zmm) */
#define MR      6                  /* rows per register tile */
#define NP      4                  /* panels per register tile: 6 x 4 = 24 accumulators */
#define ROWBLK  48                 /* rows per task (a multiple of MR and MR2) */

typedef struct CpuF32Weight
{
	int    N, K, np;               /* np: panels */
	float *w;                      /* [np][K][PANEL] */
} CpuF32Weight;

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

#pragma GCC push_options
#pragma GCC target("avx512f")

/* C[mr rows, np panels] (beta*C +) rows a (stride lda) by panels b (stride
 * ps): mr and np are constants at every call, so the accumulators stay in
 * registers; the last panel stores only `lastmask` columns */
static inline __attribute__((always_inline)) void
tile(const float *a, int lda, const float *b, size_t ps, int K, int mr, int np, float *C, int ldc, float beta,
	 __mmask16 lastmask)
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
			bv[j] = _mm512_load_ps(b + j * ps + (size_t) k * PANEL);
#pragma GCC unroll 8
		for (int i = 0; i < mr; i++)
		{
			__m512 av = _mm512_set1_ps(a[(size_t) i * lda + k]);

#pragma GCC unroll 8
			for (int j = 0; j < np; j++)
				acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
		}
	}
	tile_store(acc, mr, np, C, ldc, beta, lastmask);
}

static void
tile_any(const float *a, int lda, const float *b, size_t ps, int K, int mr, int np, float *C, int ldc, float beta,
		 __mmask16 lastmask)
{
	TILE_SWITCH(tile, (a, lda, b, ps, K), mr, np, (C, ldc, beta, lastmask))
}

/* rows [m0, m0+mb) of C by panels [q_lo, q_hi) (relative to the slice's
 * first panel q_first) */
static void
row_block(const CpuF32Weight *w, int q_first, int N, const float *A, int lda, float beta, float *C, int ldc, int m0,
		  int mb, int q_lo, int q_hi)
{
	size_t ps = (size_t) w->K * PANEL;

	for (int q0 = q_lo; q0 < q_hi; q0 += NP)
	{
		int       np = q_hi - q0 < NP ? q_hi - q0 : NP;
		int       lastcols = N - (q0 + np - 1) * PANEL;
		__mmask16 lastmask = (__mmask16) (lastcols >= PANEL ? 0xffffu : (1u << lastcols) - 1u);

		for (int i0 = 0; i0 < mb; i0 += MR)
			tile_any(A + (size_t) (m0 + i0) * lda, lda, w->w + (q_first + q0) * ps, ps, w->K,
					 mb - i0 < MR ? mb - i0 : MR, np, C + (size_t) (m0 + i0) * ldc + q0 * PANEL, ldc, beta, lastmask);
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

/* C[mr rows, one panel] (beta*C +) rows a by the panel b, the panel's
 * first `cols` columns stored (AVX2: the panel's two halves in two ymm) */
static inline __attribute__((always_inline)) void
tile2(const float *a, int lda, const float *b, int K, int mr, float *C, int ldc, float beta, int cols)
{
	__m256  acc[MR2][2];
	__m256i m0 = lanes_below(cols), m1 = lanes_below(cols - 8);

#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
		acc[i][0] = acc[i][1] = _mm256_setzero_ps();
	for (int k = 0; k < K; k++)
	{
		__m256 b0 = _mm256_load_ps(b + (size_t) k * PANEL), b1 = _mm256_load_ps(b + (size_t) k * PANEL + 8);

#pragma GCC unroll 8
		for (int i = 0; i < mr; i++)
		{
			__m256 av = _mm256_broadcast_ss(a + (size_t) i * lda + k);

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

			if (beta != 0.0f)
				r = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_maskload_ps(c, mk), r);
			_mm256_maskstore_ps(c, mk, r);
		}
}

static void
tile2_any(const float *a, int lda, const float *b, int K, int mr, float *C, int ldc, float beta, int cols)
{
	switch (mr)
	{
		case 1: tile2(a, lda, b, K, 1, C, ldc, beta, cols); break;
		case 2: tile2(a, lda, b, K, 2, C, ldc, beta, cols); break;
		case 3: tile2(a, lda, b, K, 3, C, ldc, beta, cols); break;
		case 4: tile2(a, lda, b, K, 4, C, ldc, beta, cols); break;
		case 5: tile2(a, lda, b, K, 5, C, ldc, beta, cols); break;
		default: tile2(a, lda, b, K, 6, C, ldc, beta, cols); break;
	}
}

/* row_block's AVX2 twin: panel by panel */
static void
row_block2(const CpuF32Weight *w, int q_first, int N, const float *A, int lda, float beta, float *C, int ldc, int m0,
		   int mb, int q_lo, int q_hi)
{
	size_t ps = (size_t) w->K * PANEL;

	for (int q = q_lo; q < q_hi; q++)
	{
		int cols = N - q * PANEL < PANEL ? N - q * PANEL : PANEL;

		for (int i0 = 0; i0 < mb; i0 += MR2)
			tile2_any(A + (size_t) (m0 + i0) * lda, lda, w->w + (q_first + q) * ps, w->K, mb - i0 < MR2 ? mb - i0 : MR2,
					  C + (size_t) (m0 + i0) * ldc + q * PANEL, ldc, beta, cols);
	}
}

#pragma GCC pop_options

/* C[M, N] (= or beta*C +) A @ columns [n0, n0 + N) of the packed w: tasks
 * of ROWBLK rows, and when rows alone give the team too little work, also
 * of column chunks (whole panel groups; an element's sum is the same
 * whichever task computes it) */
void
cpu_gemm_f32_packed(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0,
					float beta, float *C, int ldc)
{
	const CpuF32Weight *w = packed;
	int                 nblk, nt = cpu_nthreads(be), npan, ngroups, nchunk = 1, gper, ntask;
	void              (*block_fn)(const CpuF32Weight *, int, int, const float *, int, float, float *, int, int, int,
								  int, int);

	if (M <= 0 || N <= 0 || !w || w->K != K || n0 < 0 || n0 % PANEL != 0 || n0 + N > w->N)
		return;
	nblk = (M + ROWBLK - 1) / ROWBLK;
	npan = (N + PANEL - 1) / PANEL;
	ngroups = (npan + NP - 1) / NP;
	while (nblk * nchunk < 4 * nt && nchunk < ngroups)
		nchunk++;
	gper = (ngroups + nchunk - 1) / nchunk;
	ntask = nblk * nchunk;
	if (nt > ntask)
		nt = ntask;
	block_fn = use_avx512() ? row_block : row_block2;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
	for (int k = 0; k < ntask; k++)
	{
		int blk = k / nchunk, g0 = (k % nchunk) * gper * NP, g1 = g0 + gper * NP;

		if (g0 < npan)
			block_fn(w, n0 / PANEL, N, A, lda, beta, C, ldc, blk * ROWBLK,
					 M - blk * ROWBLK < ROWBLK ? M - blk * ROWBLK : ROWBLK, g0, g1 < npan ? g1 : npan);
	}
}
#else
void
cpu_gemm_f32_packed(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0,
					float beta, float *C, int ldc)
{
	/* never called: cpu_f32_weight_pack returns NULL without AVX-512 or AVX2 */
}
#endif
