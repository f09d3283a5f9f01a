/*
 * backend_cpu_bf16.c: the CPU backend's bf16 GEMMs (backend.h, bf16_* and
 * gemm_bf16_any): C[M,N] (= or +=) A[M,K] @ W[N,K]^T with A and W rounded
 * to bf16 (round to nearest even) and fp32 accumulation by VDPBF16PS.  The
 * served model packs its weights once (bf16_weight_pack); a training GEMM
 * packs its B per call (gemm_bf16_any: B stored [N,K] or [K,N]), a few
 * percent of the product's time at the training shapes, and sums K in
 * blocks (the served model's products sum it whole).
 *
 * Where the processor has AMX tiles the inner block runs there instead
 * (backend_cpu_amx.c: the panels below are already its B operand; A's rows,
 * or a transposed A's columns, converted to rows of bf16 pairs).
 *
 * Only processors with AVX512_BF16 run it; it is compiled for that target
 * alone (no -march) and chosen at run time (cpu_bf16_usable), so the same
 * library runs everywhere and falls back to the fp32 path elsewhere.
 *
 * Layout.  W is packed once (per loaded model) into panels of 16 output
 * columns: panel q holds, for every pair p of K, the 16 columns' (W[k=2p],
 * W[k=2p+1]) pairs: 32 bf16 = one zmm, the B operand of a VDPBF16PS whose
 * A operand is one row's (A[2p], A[2p+1]) broadcast.  K is padded to even
 * and N to 16 with zeros (zero products change no sum).  A is converted per
 * call, a block of rows at a time, into a per-thread buffer.
 *
 * Determinism.  Every element C[i,j] is the same sequence of operations
 * whatever M, N, the row's place in the call, the tile it falls in or the
 * thread count: acc = 0, then acc = dpbf16(acc, A pair p, W pair p) for p
 * = 0, 1, ... in order, then the store.  So a row gets the same bits alone
 * and inside any batch (the serving forward's batch = single guarantee).
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

#define PANEL   16                 /* output columns per panel (one zmm of fp32) */
#define MR      6                  /* rows per register tile */
#define NP      4                  /* panels per register tile: 6 x 4 = 24 accumulators */
#define ROWBLK  48                 /* rows converted to bf16 per block (a multiple of MR and of 16) */
#define KCP     512                /* training products: pairs of K per block of the sum (the
									* served model's products sum K unblocked, as they always did) */

typedef struct CpuBf16Weight
{
	int       N, K, kp, np;        /* kp: pairs of K (K rounded up to even, halved); np: panels */
	uint16_t *w;                   /* [np][kp][PANEL][2] bf16 */
} CpuBf16Weight;

/* fp32 -> bf16, round to nearest even; NaN stays a (quiet) NaN */
static uint16_t
f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t) ((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t) (u >> 16);
}

bool
hw_backend_cpu_bf16_supported(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	return __builtin_cpu_supports("avx512bf16");
#else
	return false;
#endif
}

bool
cpu_bf16_usable(HwBackend *be)
{
	CpuCtx *c = be->ctx;

	return !c->bf16_disabled && hw_backend_cpu_bf16_supported();
}

/* dst [np][kp][PANEL][2] (see Layout) from the N x K matrix whose element
 * (n, k) is B[n * sn + k * sk], the pad zero; panels shared by nt threads */
static void
pack_panels(uint16_t *dst, const float *B, size_t sn, size_t sk, int N, int K, int kp, int np, int nt)
{
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
	for (int q = 0; q < np; q++)
		for (int pr = 0; pr < kp; pr++)
			for (int j = 0; j < PANEL; j++)
				for (int t = 0; t < 2; t++)
				{
					int n = q * PANEL + j, k = 2 * pr + t;

					dst[(((size_t) q * kp + pr) * PANEL + j) * 2 + t] =
						n < N && k < K ? f32_to_bf16(B[(size_t) n * sn + (size_t) k * sk]) : 0;
				}
}

void *
cpu_bf16_weight_pack(HwBackend *be, const float *W, int N, int K)
{
	CpuBf16Weight *p;

	if (!cpu_bf16_usable(be) || N <= 0 || K <= 0 || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->N = N;
	p->K = K;
	p->kp = (K + 1) / 2;
	p->np = (N + PANEL - 1) / PANEL;
	if (posix_memalign((void **) &p->w, 64, (size_t) p->np * p->kp * PANEL * 2 * sizeof(uint16_t)) != 0)
	{
		free(p);
		return NULL;
	}
	pack_panels(p->w, W, K, 1, N, K, p->kp, p->np, 1);
	return p;
}

void
cpu_bf16_weight_free(HwBackend *be, void *packed)
{
	CpuBf16Weight *p = packed;

	if (p)
		free(p->w);
	free(p);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include "backend/backend_cpu_tile.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")

/* pairs (x0[j], x1[j]) of two rows' 16 values, as 16 bf16 pairs */
static inline __m512i
interleave_pairs(__m512 x0, __m512 x1)
{
	static const uint16_t il[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
									8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

	/* cvtne2ps puts x0 in the low half */
	return _mm512_permutexvar_epi16(_mm512_loadu_si512((const void *) il), (__m512i) _mm512_cvtne2ps_pbh(x1, x0));
}

/* rows [M, K] fp32 (stride lda) -> [M, 2*kp] bf16 pairs, the pad zero */
static void
convert_rows(uint16_t *dst, const float *A, int lda, int M, int K, int kp)
{
	int Kp = 2 * kp;

	for (int i = 0; i < M; i++)
		for (int k0 = 0; k0 < Kp; k0 += 16)
		{
			int       nl = K - k0 >= 16 ? 16 : K - k0 > 0 ? K - k0 : 0;
			int       ns = Kp - k0 >= 16 ? 16 : Kp - k0;
			__m512    x = _mm512_maskz_loadu_ps((__mmask16) ((1u << nl) - 1u), A + (size_t) i * lda + k0);
			__m256bh  y = _mm512_cvtneps_pbh(x);

			_mm256_mask_storeu_epi16(dst + (size_t) i * Kp + k0, (__mmask16) ((1u << ns) - 1u), (__m256i) y);
		}
}

/* pair p of K of the (up to) 16 columns c .. c+15 of A stored [K, M]
 * (stride lda; mk: the columns that exist, the others and a pad row of K
 * zero), as 16 bf16 pairs */
static inline __m512i
column_pairs(const float *A, int lda, int K, int p, int c, __mmask16 mk)
{
	const float *r0 = A + (size_t) (2 * p) * lda + c;
	__m512       x0 = _mm512_maskz_loadu_ps(mk, r0);
	__m512       x1 = 2 * p + 1 < K ? _mm512_maskz_loadu_ps(mk, r0 + lda) : _mm512_setzero_ps();

	return interleave_pairs(x0, x1);
}

/* columns [m0, m0+mb) of A stored [K, M] (stride lda), pairs [p0, p1) of K
 * -> pair-major bf16: pair p of column m0 + r at dwords (p - p0) * ROWBLK + r */
static void
convert_cols(uint16_t *dst, const float *A, int lda, int m0, int mb, int K, int p0, int p1)
{
	for (int p = p0; p < p1; p++)
		for (int c0 = 0; c0 < mb; c0 += 16)
		{
			__mmask16 mk = (__mmask16) (mb - c0 >= 16 ? 0xffffu : (1u << (mb - c0)) - 1u);

			_mm512_storeu_si512((void *) (dst + ((size_t) (p - p0) * ROWBLK + c0) * 2),
								column_pairs(A, lda, K, p, m0 + c0, mk));
		}
}

/* columns [m0, m0+mb) of A stored [K, M] (stride lda), pairs [p0, p1) of K
 * -> row-major bf16 pairs, the AMX tiles' A layout: pair p of column m0 + r
 * at dword r * (p1 - p0) + (p - p0) */
static void
convert_cols_rowmajor(uint16_t *dst, const float *A, int lda, int m0, int mb, int K, int p0, int p1)
{
	int     kcn = p1 - p0;
	__m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
									 _mm512_set1_epi32(kcn));

	for (int p = p0; p < p1; p++)
		for (int c0 = 0; c0 < mb; c0 += 16)
		{
			__mmask16 mk = (__mmask16) (mb - c0 >= 16 ? 0xffffu : (1u << (mb - c0)) - 1u);

			_mm512_mask_i32scatter_epi32((void *) (dst + 2 * ((size_t) c0 * kcn + (p - p0))), mk, idx,
										 column_pairs(A, lda, K, p, m0 + c0, mk), 4);
		}
}

/* C[mr rows, np panels] (beta*C +) the kp pairs of bf16 rows a (pair p of
 * row i at dwords i*rs + p*ps) by panels b (stride pstride): mr and np are
 * constants at every call, so the accumulators stay in registers; the last
 * panel stores only `lastmask` columns */
static inline __attribute__((always_inline)) void
tile(const uint16_t *a, size_t rs, size_t ps, const uint16_t *b, size_t pstride, int kp, int mr, int np, float *C,
	 int ldc, float beta, __mmask16 lastmask)
{
	__m512 acc[MR][NP];

#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
		for (int j = 0; j < np; j++)
			acc[i][j] = _mm512_setzero_ps();
	for (int p = 0; p < kp; p++)
	{
		__m512bh bv[NP];

#pragma GCC unroll 8
		for (int j = 0; j < np; j++)
			bv[j] = (__m512bh) _mm512_load_si512((const void *) (b + j * pstride + (size_t) p * 2 * PANEL));
#pragma GCC unroll 8
		for (int i = 0; i < mr; i++)
		{
			int32_t  pair;
			__m512bh av;

			memcpy(&pair, a + 2 * (i * rs + p * ps), 4);
			av = (__m512bh) _mm512_set1_epi32(pair);
#pragma GCC unroll 8
			for (int j = 0; j < np; j++)
				acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
		}
	}
	tile_store(acc, mr, np, C, ldc, 1.0f, beta, lastmask);
}

static void
tile_any(const uint16_t *a, size_t rs, size_t ps, const uint16_t *b, size_t pstride, int kp, int mr, int np,
		 float *C, int ldc, float beta, __mmask16 lastmask)
{
	TILE_SWITCH(tile, (a, rs, ps, b, pstride, kp), mr, np, (C, ldc, beta, lastmask))
}

/* One task of a product: rows [m0, m0+mb) of C by panels [q_lo, q_hi) of
 * w (relative to q_first).  op(A) row i is row i of A (stride lda) or,
 * transA, column i of A stored [K, M].  K runs in blocks of kcp pairs (a
 * block's panels and rows stay in L2), each block added to C in order;
 * within a block, panel groups over the row tiles. */
typedef struct RowTask
{
	const CpuBf16Weight *w;
	int          q_first, N;
	const float *A;
	int          lda;
	bool         transA;
	int          kcp;          /* pairs of K per block of the sum */
	bool         amx;          /* the blocks on AMX tiles (backend_cpu_amx.c) */
	float        beta;
	float       *C;
	int          ldc;
} RowTask;

static void
gemm_row_block(const RowTask *t, int m0, int mb, int q_lo, int q_hi, uint16_t *abuf)
{
	const CpuBf16Weight *w = t->w;
	int    kp = w->kp;
	size_t pstride = (size_t) kp * 2 * PANEL;

	if (!t->transA)
		convert_rows(abuf, t->A + (size_t) m0 * t->lda, t->lda, mb, w->K, kp);
	if (t->amx)
	{
		/* the tiles read whole 16-row groups: the rows past mb are zeros */
		int mpad = (mb + 15) / 16 * 16;

		if (!t->transA)
			memset(abuf + (size_t) mb * 2 * kp, 0, (size_t) (mpad - mb) * 2 * kp * sizeof(uint16_t));
		for (int p0 = 0; p0 < kp; p0 += t->kcp)
		{
			int kcn = kp - p0 < t->kcp ? kp - p0 : t->kcp;

			if (t->transA)
			{
				convert_cols_rowmajor(abuf, t->A, t->lda, m0, mb, w->K, p0, p0 + kcn);
				memset(abuf + (size_t) mb * 2 * kcn, 0, (size_t) (mpad - mb) * 2 * kcn * sizeof(uint16_t));
			}
			cpu_amx_block(t->transA ? abuf : abuf + 2 * (size_t) p0, t->transA ? kcn : kp, mb,
						  w->w + (t->q_first + q_lo) * pstride + (size_t) p0 * 2 * PANEL, pstride, kcn, q_hi - q_lo,
						  t->N - q_lo * PANEL, t->C + (size_t) m0 * t->ldc + q_lo * PANEL, t->ldc,
						  p0 == 0 ? t->beta : 1.0f);
		}
		return;
	}
	for (int p0 = 0; p0 < kp; p0 += t->kcp)
	{
		int             kcn = kp - p0 < t->kcp ? kp - p0 : t->kcp;
		float           beta = p0 == 0 ? t->beta : 1.0f;
		const uint16_t *a = t->transA ? abuf : abuf + 2 * (size_t) p0;
		size_t          rs = t->transA ? 1 : (size_t) kp, ps = t->transA ? ROWBLK : 1;

		if (t->transA)
			convert_cols(abuf, t->A, t->lda, m0, mb, w->K, p0, p0 + kcn);
		for (int q0 = q_lo; q0 < q_hi; q0 += NP)
		{
			int       np = q_hi - q0 < NP ? q_hi - q0 : NP;
			int       lastcols = t->N - (q0 + np - 1) * PANEL;
			__mmask16 lastmask = (__mmask16) (lastcols >= PANEL ? 0xffffu : (1u << lastcols) - 1u);

			for (int i0 = 0; i0 < mb; i0 += MR)
				tile_any(a + 2 * (size_t) i0 * rs, rs, ps, w->w + (t->q_first + q0) * pstride + (size_t) p0 * 2 * PANEL,
						 pstride, kcn, mb - i0 < MR ? mb - i0 : MR, np, t->C + (size_t) (m0 + i0) * t->ldc + q0 * PANEL,
						 t->ldc, beta, lastmask);
		}
	}
}

/* B stored [K, N] (row stride ldb) -> panels: pair p of panel q is rows 2p
 * and 2p+1, 16 columns each, converted and interleaved in one zmm */
static void
pack_rows_kn(uint16_t *dst, const float *B, int ldb, int N, int K, int kp, int np, int nt)
{
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
	for (int q = 0; q < np; q++)
	{
		int       cols = N - q * PANEL >= PANEL ? PANEL : N - q * PANEL;
		__mmask16 cm = (__mmask16) ((1u << cols) - 1u);

		for (int pr = 0; pr < kp; pr++)
		{
			const float *r0 = B + (size_t) (2 * pr) * ldb + q * PANEL;
			__m512       x0 = _mm512_maskz_loadu_ps(cm, r0);
			__m512       x1 = 2 * pr + 1 < K ? _mm512_maskz_loadu_ps(cm, r0 + ldb) : _mm512_setzero_ps();

			_mm512_store_si512((void *) (dst + ((size_t) q * kp + pr) * PANEL * 2), interleave_pairs(x0, x1));
		}
	}
}

#pragma GCC pop_options

/* C[M, N] (= or beta*C +) op(A) @ columns [n0, n0 + N) of the packed w,
 * K summed in blocks of kcp pairs: tasks of ROWBLK rows, and when rows
 * alone give the team too little work, also of column chunks (whole panel
 * groups; an element's sum is the same whichever task computes it).
 * false: no memory for the converted rows (C untouched). */
static bool
gemm_packed(HwBackend *be, const CpuBf16Weight *w, int n0, int M, int N, const float *A, int lda, bool transA,
			int kcp, float beta, float *C, int ldc)
{
	/* AMX where the machine has it and K's pairs fill whole tiles: a choice
	 * by the weight's shape, never by M (a row's bits never depend on M) */
	RowTask t = {.w = w, .q_first = n0 / PANEL, .N = N, .A = A, .lda = lda, .transA = transA, .kcp = kcp,
				 .amx = w->kp % 16 == 0 && kcp % 16 == 0 && cpu_amx_usable(be),
				 .beta = beta, .C = C, .ldc = ldc};
	int     nblk = (M + ROWBLK - 1) / ROWBLK, nt = cpu_nthreads(be), npan = (N + PANEL - 1) / PANEL;
	int     ngroups = (npan + NP - 1) / NP, nchunk = 1, ntask, gper;
	size_t  per_thread;   /* floats: ROWBLK rows of 2*kp bf16, or transA ROWBLK columns of a K block */
	float  *scratch;

	while (nblk * nchunk < 4 * nt && nchunk < ngroups)
		nchunk++;
	gper = (ngroups + nchunk - 1) / nchunk;
	ntask = nblk * nchunk;
	per_thread = (size_t) ROWBLK * (transA && w->kp > kcp ? kcp : w->kp);
	if (nt > ntask)
		nt = ntask;
	if (!(scratch = cpu_scratch(be, per_thread * nt)))
		return false;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
	for (int k = 0; k < ntask; k++)
	{
		uint16_t *abuf = (uint16_t *) (scratch + per_thread * omp_get_thread_num());
		int       blk = k / nchunk, g0 = (k % nchunk) * gper * NP, g1 = g0 + gper * NP;

		if (g0 < npan)
			gemm_row_block(&t, blk * ROWBLK, M - blk * ROWBLK < ROWBLK ? M - blk * ROWBLK : ROWBLK, g0,
						   g1 < npan ? g1 : npan, abuf);
	}
	return true;
}

void
cpu_gemm_bf16(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0, float beta,
			  float *C, int ldc)
{
	const CpuBf16Weight *w = packed;

	if (M <= 0 || N <= 0 || !w || w->K != K || n0 < 0 || n0 % PANEL != 0 || n0 + N > w->N)
		return;
	/* out of memory: NaN rows, so the model stops with a numeric error */
	if (!gemm_packed(be, w, n0, M, N, A, lda, false, w->kp, beta, C, ldc))
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				C[(size_t) i * ldc + j] = NAN;
}

bool
cpu_gemm_bf16_any(HwBackend *be, bool transA, bool transB, int M, int N, int K, const float *A, int lda,
				  const float *B, int ldb, float beta, float *C, int ldc)
{
	CpuBf16Weight w = {.N = N, .K = K, .kp = (K + 1) / 2, .np = (N + PANEL - 1) / PANEL};
	int           nt = cpu_nthreads(be);

	if (!cpu_bf16_usable(be) || M <= 0 || N <= 0 || K <= 0)
		return false;
	if (!(w.w = cpu_bpack(be, (size_t) w.np * w.kp * PANEL * 2 * sizeof(uint16_t))))
		return false;
	if (transB)
		pack_panels(w.w, B, ldb, 1, N, K, w.kp, w.np, nt);
	else
		pack_rows_kn(w.w, B, ldb, N, K, w.kp, w.np, nt);
	return gemm_packed(be, &w, 0, M, N, A, lda, transA, KCP, beta, C, ldc);
}
#else
void
cpu_gemm_bf16(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0, float beta,
			  float *C, int ldc)
{
	/* never called: cpu_bf16_weight_pack returns NULL without AVX512_BF16 */
}

bool
cpu_gemm_bf16_any(HwBackend *be, bool transA, bool transB, int M, int N, int K, const float *A, int lda,
				  const float *B, int ldb, float beta, float *C, int ldc)
{
	return false;
}
#endif
