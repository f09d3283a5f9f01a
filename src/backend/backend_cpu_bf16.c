/*
 * backend_cpu_bf16.c: the CPU backend's bf16 inference GEMM (backend.h,
 * bf16_*): C[M,N] (= or +=) A[M,K] @ W[N,K]^T with A and W rounded to
 * bf16 (round to nearest even) and fp32 accumulation by VDPBF16PS.
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
#define ROWBLK  48                 /* rows converted to bf16 per block (a multiple of MR) */

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
cpu_bf16_usable(HwBackend *be)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	CpuCtx *c = be->ctx;

	return !c->bf16_disabled && __builtin_cpu_supports("avx512bf16");
#else
	return false;
#endif
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
	for (int q = 0; q < p->np; q++)
		for (int pr = 0; pr < p->kp; pr++)
			for (int j = 0; j < PANEL; j++)
				for (int t = 0; t < 2; t++)
				{
					int n = q * PANEL + j, k = 2 * pr + t;

					p->w[(((size_t) q * p->kp + pr) * PANEL + j) * 2 + t] =
						n < N && k < K ? f32_to_bf16(W[(size_t) n * K + k]) : 0;
				}
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

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")

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

/* C[mr rows, np panels] from bf16 rows a (stride Kp) and panels b (stride
 * pstride): mr and np are constants at every call, so the accumulators
 * stay in registers; the last panel stores only `lastmask` columns */
static inline __attribute__((always_inline)) void
tile(const uint16_t *a, int Kp, const uint16_t *b, size_t pstride, int kp, int mr, int np, float *C, int ldc,
	 float beta, __mmask16 lastmask)
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

			memcpy(&pair, a + (size_t) i * Kp + 2 * p, 4);
			av = (__m512bh) _mm512_set1_epi32(pair);
#pragma GCC unroll 8
		for (int j = 0; j < np; j++)
				acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
		}
	}
#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
		for (int j = 0; j < np; j++)
		{
			float     *c = C + (size_t) i * ldc + j * PANEL;
			__mmask16  mk = j == np - 1 ? lastmask : (__mmask16) 0xffff;
			__m512     r = acc[i][j];

			if (beta != 0.0f)
				r = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mk, c), r);
			_mm512_mask_storeu_ps(c, mk, r);
		}
}

/* the tile for mr (1..MR) rows and np (1..NP) panels */
#define TILE_NP(MRV)                                                                          \
	switch (np)                                                                               \
	{                                                                                         \
		case 1: tile(a, Kp, b, pstride, kp, MRV, 1, C, ldc, beta, lastmask); break;           \
		case 2: tile(a, Kp, b, pstride, kp, MRV, 2, C, ldc, beta, lastmask); break;           \
		case 3: tile(a, Kp, b, pstride, kp, MRV, 3, C, ldc, beta, lastmask); break;           \
		default: tile(a, Kp, b, pstride, kp, MRV, 4, C, ldc, beta, lastmask); break;          \
	}

static void
tile_any(const uint16_t *a, int Kp, const uint16_t *b, size_t pstride, int kp, int mr, int np, float *C, int ldc,
		 float beta, __mmask16 lastmask)
{
	switch (mr)
	{
		case 1: TILE_NP(1) break;
		case 2: TILE_NP(2) break;
		case 3: TILE_NP(3) break;
		case 4: TILE_NP(4) break;
		case 5: TILE_NP(5) break;
		default: TILE_NP(6) break;
	}
}

/* rows [m0, m0+mb) of C: convert them, then panel groups (each group's
 * panels stay in L1/L2) over the row tiles */
static void
gemm_row_block(const CpuBf16Weight *w, int q_first, int N, const float *A, int lda, float beta, float *C, int ldc,
			   int m0, int mb, uint16_t *abuf)
{
	int    Kp = 2 * w->kp, npan = (N + PANEL - 1) / PANEL;
	size_t pstride = (size_t) w->kp * 2 * PANEL;

	convert_rows(abuf, A + (size_t) m0 * lda, lda, mb, w->K, w->kp);
	for (int q0 = 0; q0 < npan; q0 += NP)
	{
		int       np = npan - q0 < NP ? npan - q0 : NP;
		int       lastcols = N - (q0 + np - 1) * PANEL;
		__mmask16 lastmask = (__mmask16) (lastcols >= PANEL ? 0xffffu : (1u << lastcols) - 1u);

		for (int i0 = 0; i0 < mb; i0 += MR)
			tile_any(abuf + (size_t) i0 * Kp, Kp, w->w + (q_first + q0) * pstride, pstride, w->kp, mb - i0 < MR ? mb - i0 : MR,
					 np, C + (size_t) (m0 + i0) * ldc + q0 * PANEL, ldc, beta, lastmask);
	}
}

#pragma GCC pop_options

void
cpu_gemm_bf16(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0, float beta,
			  float *C, int ldc)
{
	const CpuBf16Weight *w = packed;
	int                  nblk = (M + ROWBLK - 1) / ROWBLK, nt = cpu_nthreads(be);
	size_t               per_thread;
	float               *scratch;

	if (M <= 0 || N <= 0 || !w || w->K != K || n0 < 0 || n0 % PANEL != 0 || n0 + N > w->N)
		return;
	per_thread = (size_t) ROWBLK * w->kp;     /* floats: ROWBLK rows of 2*kp bf16 */
	if (nt > nblk)
		nt = nblk;
	/* out of memory: NaN rows, so the model stops with a numeric error */
	if (!(scratch = cpu_scratch(be, per_thread * nt)))
	{
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				C[(size_t) i * ldc + j] = NAN;
		return;
	}
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
	for (int blk = 0; blk < nblk; blk++)
	{
		uint16_t *abuf = (uint16_t *) (scratch + per_thread * omp_get_thread_num());

		gemm_row_block(w, n0 / PANEL, N, A, lda, beta, C, ldc, blk * ROWBLK, M - blk * ROWBLK < ROWBLK ? M - blk * ROWBLK : ROWBLK,
					   abuf);
	}
}
#else
void
cpu_gemm_bf16(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0, float beta,
			  float *C, int ldc)
{
	/* never called: cpu_bf16_weight_pack returns NULL without AVX512_BF16 */
}
#endif
