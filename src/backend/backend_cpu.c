/*
 * backend_cpu.c: the CPU backend (backend.h): OpenBLAS sgemm + OpenMP.
 *
 * Determinism whatever the thread count: OpenBLAS is set to one thread and
 * every GEMM is cut by this file into blocks whose size depends only on the
 * shapes (rows of C when C is tall, else columns); each block is one
 * single-threaded sgemm call, so every element of C is computed by the same
 * code with the same summation order however many threads share the blocks.
 * (OpenBLAS's own threading splits K differently per thread count and is not
 * bit-reproducible across counts.)  Reductions over tokens (norm gains,
 * biases, tau, encoder tables) sum fixed 256-row chunks, then the chunks in
 * order; the encoder's grouped sums run over tokens in order with threads
 * owning disjoint feature columns.  No atomics anywhere.
 */
/* lets GCC if-convert the float compares of fast_expf and vectorise; no
 * code here relies on floating-point traps */
#pragma GCC optimize("no-trapping-math")

#include "backend.h"
#include "attention.h"

#include <cblas.h>
#ifndef OPENBLAS_VERSION
#error "cblas.h is not OpenBLAS's (the reference BLAS is single-threaded and slow): install libopenblas-dev"
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define RCH 256                    /* rows per reduction chunk */
#define KCH 4096                   /* K per chunk of a split-K GEMM */

/* Runtime dispatch (no -march=native): the memory/elementwise kernels are
 * compiled for AVX-512, AVX2 and the baseline, chosen once by the loader.
 * Results are deterministic on a given machine whatever the thread count. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SIMD_CLONES
#endif

typedef struct CpuCtx
{
	float  *scratch;               /* partial sums of reductions */
	size_t  scratch_n;
} CpuCtx;

static int
nthreads(HwBackend *be)
{
#ifdef _OPENMP
	return be->n_threads > 0 ? be->n_threads : omp_get_max_threads();
#else
	return 1;
#endif
}

static float *
scratch(HwBackend *be, size_t n)
{
	CpuCtx *c = be->ctx;

	if (c->scratch_n < n)
	{
		free(c->scratch);
		c->scratch = malloc(n * sizeof(float));
		c->scratch_n = c->scratch ? n : 0;
	}
	return c->scratch;
}

/* ---------------------------------------------------------------- memory */

static void *
cpu_alloc(HwBackend *be, size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
		return NULL;
	return p;
}

static void cpu_free(HwBackend *be, void *p) { free(p); }
static void cpu_memcpy(HwBackend *be, void *d, const void *s, size_t n) { if (n) memcpy(d, s, n); }
static void cpu_memset(HwBackend *be, void *d, int b, size_t n) { if (n) memset(d, b, n); }
static void cpu_sync(HwBackend *be) { }

static void
cpu_destroy(HwBackend *be)
{
	CpuCtx *c = be->ctx;

	if (c)
		free(c->scratch);
	free(c);
	free(be);
}

/* ---------------------------------------------------------------- GEMM */

static void
cpu_gemm(HwBackend *be, bool tA, bool tB, int M, int N, int K, float alpha,
		 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
	int rb, cb, nrb, ncb;

	if (M <= 0 || N <= 0)
		return;
	if (K <= 0)
	{
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				C[(size_t) i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t) i * ldc + j];
		return;
	}
	/* Long reductions with a small output (weight gradients dW = dY^T X over
	 * all tokens): split K into fixed chunks, one partial C per chunk, then
	 * add the partials in chunk order.  Splitting M or N instead would make
	 * every block re-pack the whole [K, *] operand. */
	if (K >= 2 * KCH && (int64_t) M * N <= (int64_t) K * 64)
	{
		int    nk = (K + KCH - 1) / KCH;
		float *part = scratch(be, (size_t) nk * M * N);

#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads(be))
		for (int c = 0; c < nk; c++)
		{
			int          k0 = c * KCH, kk = K - k0 < KCH ? K - k0 : KCH;
			const float *a = tA ? A + (size_t) k0 * lda : A + k0;
			const float *b = tB ? B + k0 : B + (size_t) k0 * ldb;

			cblas_sgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans,
						M, N, kk, alpha, a, lda, b, ldb, 0.0f, part + (size_t) c * M * N, N);
		}
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if ((int64_t) M * N > 32768)
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
			{
				float acc = 0;

				for (int c = 0; c < nk; c++)
					acc += part[((size_t) c * M + i) * N + j];
				C[(size_t) i * ldc + j] = beta == 0.0f ? acc : acc + beta * C[(size_t) i * ldc + j];
			}
		return;
	}
	/* block shape from the shapes only (thread-count independent) */
	if (M >= 1024)
	{
		rb = 512;
		cb = N;
	}
	else if (M >= 256)
	{
		rb = 128;
		cb = N;
	}
	else if (N >= 256)
	{
		rb = M;
		cb = 128;
	}
	else
	{
		rb = M;
		cb = N;
	}
	nrb = (M + rb - 1) / rb;
	ncb = (N + cb - 1) / cb;
	if (nrb * ncb == 1)
	{
		cblas_sgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans,
					M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads(be))
	for (int blk = 0; blk < nrb * ncb; blk++)
	{
		int          m0 = (blk / ncb) * rb, n0 = (blk % ncb) * cb;
		int          mm = M - m0 < rb ? M - m0 : rb, nn = N - n0 < cb ? N - n0 : cb;
		const float *a = tA ? A + m0 : A + (size_t) m0 * lda;
		const float *b = tB ? B + (size_t) n0 * ldb : B + n0;

		cblas_sgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans,
					mm, nn, K, alpha, a, lda, b, ldb, beta, C + (size_t) m0 * ldc + n0, ldc);
	}
}

/* backend.h gemm_rows_batched: one single-threaded sgemm per product,
 * products shared by the team (so a product never depends on nb). */
static void
cpu_gemm_rows_batched(HwBackend *be, int nb, int M, int N, int K, const float *A, int lda,
					  const float *W, float beta, float *C, int ldc)
{
	if (nb <= 0 || M <= 0 || N <= 0 || K <= 0)
		return;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads(be)) if (nb > 1)
	for (int i = 0; i < nb; i++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A + (size_t) i * M * lda, lda,
					W, K, beta, C + (size_t) i * M * ldc, ldc);
}

/* ---------------------------------------------------------------- utilities */

SIMD_CLONES static void
cpu_add_bias(HwBackend *be, float *out, const float *bias, int M, int N)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (M > 64)
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++)
			out[(size_t) i * N + j] += bias[j];
}

/* db[N] += column sums of dout[M,N] in fixed row chunks. */
static void
cpu_bias_backward(HwBackend *be, float *db, const float *dout, int M, int N)
{
	int    nch = (M + RCH - 1) / RCH;
	float *part = scratch(be, (size_t) nch * N);

#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (nch > 1)
	for (int c = 0; c < nch; c++)
	{
		float *p = part + (size_t) c * N;
		int    r1 = (c + 1) * RCH < M ? (c + 1) * RCH : M;

		memset(p, 0, N * sizeof(float));
		for (int i = c * RCH; i < r1; i++)
			for (int j = 0; j < N; j++)
				p[j] += dout[(size_t) i * N + j];
	}
	for (int c = 0; c < nch; c++)
		for (int j = 0; j < N; j++)
			db[j] += part[(size_t) c * N + j];
}

SIMD_CLONES static void
cpu_axpby(HwBackend *be, float *y, float a, const float *x, float b, size_t n)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (n > 65536)
	for (size_t i = 0; i < n; i++)
		y[i] = a * x[i] + b * y[i];
}

static double
cpu_sumsq(HwBackend *be, const float *x, size_t n)
{
	size_t  CH = 4096, nch = (n + CH - 1) / CH;
	double *part = malloc((nch ? nch : 1) * sizeof(double));
	double  s = 0;

	if (!part)
		return NAN;
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (nch > 16)
	for (size_t c = 0; c < nch; c++)
	{
		size_t e = (c + 1) * CH < n ? (c + 1) * CH : n;
		double a = 0;

		for (size_t i = c * CH; i < e; i++)
			a += (double) x[i] * x[i];
		part[c] = a;
	}
	for (size_t c = 0; c < nch; c++)
		s += part[c];
	free(part);
	return s;
}

static void
cpu_gather_f16_rows(HwBackend *be, float *out, const uint16_t *table, const int32_t *idx, int M, int C)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (M > 256)
	for (int m = 0; m < M; m++)
		for (int c = 0; c < C; c++)
			out[(size_t) m * C + c] = hw_f16_to_f32(table[(size_t) idx[m] * C + c]);
}

static void
cpu_gather_rows(HwBackend *be, float *out, const float *in, const int32_t *idx, int M, int C)
{
	for (int m = 0; m < M; m++)
		memcpy(out + (size_t) m * C, in + (size_t) idx[m] * C, C * sizeof(float));
}

static void
cpu_scatter_add_rows(HwBackend *be, float *din, const float *dout, const int32_t *idx, int M, int C)
{
	for (int m = 0; m < M; m++)
		for (int c = 0; c < C; c++)
			din[(size_t) idx[m] * C + c] += dout[(size_t) m * C + c];
}

/* ---------------------------------------------------------------- RMSNorm */

SIMD_CLONES static void
cpu_rmsnorm_forward(HwBackend *be, float *out, float *rstd, const float *x, const float *g, int N, int D)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if ((int64_t) N * D > 32768)
	for (int n = 0; n < N; n++)
	{
		const float *xr = x + (size_t) n * D;
		float       *o = out + (size_t) n * D;
		float        ss = 0, r;

#pragma omp simd reduction(+:ss)
		for (int d = 0; d < D; d++)
			ss += xr[d] * xr[d];
		r = 1.0f / sqrtf(ss / D + 1e-6f);
		rstd[n] = r;
#pragma omp simd
		for (int d = 0; d < D; d++)
			o[d] = (1.0f + g[d]) * xr[d] * r;
	}
}

SIMD_CLONES static void
cpu_rmsnorm_backward(HwBackend *be, float *dx, float *dg, const float *dout,
					 const float *x, const float *rstd, const float *g, int N, int D)
{
	int    nch = (N + RCH - 1) / RCH;
	float *part = scratch(be, (size_t) nch * D);

#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (nch > 1)
	for (int c = 0; c < nch; c++)
	{
		float *p = part + (size_t) c * D;
		int    n1 = (c + 1) * RCH < N ? (c + 1) * RCH : N;

		memset(p, 0, D * sizeof(float));
		for (int n = c * RCH; n < n1; n++)
		{
			const float *xr = x + (size_t) n * D, *dy = dout + (size_t) n * D;
			float       *dxr = dx + (size_t) n * D;
			float        r = rstd[n], dot = 0, k;

#pragma omp simd reduction(+:dot)
			for (int d = 0; d < D; d++)
			{
				dot += dy[d] * (1.0f + g[d]) * xr[d];
				p[d] += dy[d] * xr[d] * r;
			}
			k = r * r * r * dot / D;
#pragma omp simd
			for (int d = 0; d < D; d++)
				dxr[d] += r * (1.0f + g[d]) * dy[d] - k * xr[d];
		}
	}
	for (int c = 0; c < nch; c++)
		for (int d = 0; d < D; d++)
			dg[d] += part[(size_t) c * D + d];
}

/* ---------------------------------------------------------------- encoder */

SIMD_CLONES static void
cpu_encoder_forward(HwBackend *be, float *e, const HwEncInputs *in, const HwEncWeights *w, int N, int D)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
	{
		float       *o = e + (size_t) n * D;
		const float *cp = w->colproj + (size_t) in->col[n] * D;

		if (in->is_target[n] || in->is_null[n])
		{
			const float *v = in->is_target[n] ? w->mask_emb : w->null_emb;

			for (int d = 0; d < D; d++)
				o[d] = cp[d] + v[d];
			continue;
		}
		switch (in->stype[n])
		{
			case HW_ST_IDENTIFIER:
				for (int d = 0; d < D; d++)
					o[d] = cp[d] + w->id_emb[d];
				break;
			case HW_ST_NUMERICAL:
			{
				float x = in->num[n];

				for (int d = 0; d < D; d++)
					o[d] = cp[d] + (w->num_w[d] * x + w->num_b[d]);
				break;
			}
			case HW_ST_TIMESTAMP:
			{
				const float *t = in->ts + (size_t) n * 15;

				for (int d = 0; d < D; d++)
				{
					const float *wr = w->ts_w + (size_t) d * 15;
					float        s = w->ts_b[d];

					for (int k = 0; k < 15; k++)
						s += wr[k] * t[k];
					o[d] = cp[d] + s;
				}
				break;
			}
			case HW_ST_BOOLEAN:
			{
				const float *b = w->bool_emb + (size_t) (in->boolv[n] ? 1 : 0) * D;

				for (int d = 0; d < D; d++)
					o[d] = cp[d] + b[d];
				break;
			}
			case HW_ST_CATEGORICAL:
			{
				const float *c = w->catproj + (size_t) in->cat_local[n] * D;

				for (int d = 0; d < D; d++)
					o[d] = cp[d] + c[d];
				break;
			}
			case HW_ST_TEXT:
			{
				const float *c = w->textproj + (size_t) in->text_local[n] * D;

				for (int d = 0; d < D; d++)
					o[d] = cp[d] + c[d];
				break;
			}
			default:
				for (int d = 0; d < D; d++)
					o[d] = cp[d];
		}
	}
}

static void
cpu_encoder_backward(HwBackend *be, const HwEncGrads *g, const float *de, const HwEncInputs *in,
					 int N, int D, int ncols, int Uc, int U)
{
	int nt = nthreads(be);

	/* each thread owns feature columns [d0, d1) and walks all tokens in order */
#pragma omp parallel num_threads(nt)
	{
		int tid = 0, T = 1;
#ifdef _OPENMP
		tid = omp_get_thread_num();
		T = omp_get_num_threads();
#endif
		int d0 = (int) ((int64_t) D * tid / T), d1 = (int) ((int64_t) D * (tid + 1) / T);
		int w = d1 - d0;

		if (w > 0)
		{
			for (int c = 0; c < ncols; c++)
				memset(g->colproj + (size_t) c * D + d0, 0, w * sizeof(float));
			for (int c = 0; c < Uc; c++)
				memset(g->catproj + (size_t) c * D + d0, 0, w * sizeof(float));
			for (int c = 0; c < U; c++)
				memset(g->textproj + (size_t) c * D + d0, 0, w * sizeof(float));
			memset(g->id_emb + d0, 0, w * sizeof(float));
			memset(g->null_emb + d0, 0, w * sizeof(float));
			memset(g->mask_emb + d0, 0, w * sizeof(float));
			memset(g->num_w + d0, 0, w * sizeof(float));
			memset(g->num_b + d0, 0, w * sizeof(float));
			memset(g->ts_w + (size_t) d0 * 15, 0, (size_t) w * 15 * sizeof(float));
			memset(g->ts_b + d0, 0, w * sizeof(float));
			memset(g->bool_emb + d0, 0, w * sizeof(float));
			memset(g->bool_emb + D + d0, 0, w * sizeof(float));

			for (int n = 0; n < N; n++)
			{
				const float *dr = de + (size_t) n * D;
				float       *dst = NULL;
				float       *cp = g->colproj + (size_t) in->col[n] * D;

				for (int d = d0; d < d1; d++)
					cp[d] += dr[d];
				if (in->is_target[n])
					dst = g->mask_emb;
				else if (in->is_null[n])
					dst = g->null_emb;
				else
					switch (in->stype[n])
					{
						case HW_ST_IDENTIFIER:
							dst = g->id_emb;
							break;
						case HW_ST_NUMERICAL:
						{
							float x = in->num[n];

							for (int d = d0; d < d1; d++)
								g->num_w[d] += dr[d] * x;
							dst = g->num_b;
							break;
						}
						case HW_ST_TIMESTAMP:
						{
							const float *t = in->ts + (size_t) n * 15;

							for (int d = d0; d < d1; d++)
								for (int k = 0; k < 15; k++)
									g->ts_w[(size_t) d * 15 + k] += dr[d] * t[k];
							dst = g->ts_b;
							break;
						}
						case HW_ST_BOOLEAN:
							dst = g->bool_emb + (size_t) (in->boolv[n] ? 1 : 0) * D;
							break;
						case HW_ST_CATEGORICAL:
							dst = g->catproj + (size_t) in->cat_local[n] * D;
							break;
						case HW_ST_TEXT:
							dst = g->textproj + (size_t) in->text_local[n] * D;
							break;
						default:
							dst = NULL;
					}
				if (dst)
					for (int d = d0; d < d1; d++)
						dst[d] += dr[d];
			}
		}
	}
}

/* ---------------------------------------------------------------- QK-norm */

SIMD_CLONES static void
cpu_qknorm_forward(HwBackend *be, float *qs, float *kn, float *v, float *qnorm, float *knorm,
				   const float *qkvg, const float *tau, int N, int H, int dh)
{
	int   D = H * dh;
	float isq = 1.0f / sqrtf((float) dh);

#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
	{
		const float *row = qkvg + (size_t) n * 4 * D;

		for (int h = 0; h < H; h++)
		{
			const float *q = row + h * dh, *k = row + D + h * dh;
			float        sq = 0, sk = 0, nq, nk, fq, fk;

#pragma omp simd reduction(+:sq, sk)
			for (int i = 0; i < dh; i++)
			{
				sq += q[i] * q[i];
				sk += k[i] * k[i];
			}
			nq = sqrtf(sq);
			nk = sqrtf(sk);
			qnorm[(size_t) n * H + h] = nq;
			knorm[(size_t) n * H + h] = nk;
			fq = tau[h] * isq / fmaxf(nq, 1e-6f);
			fk = 1.0f / fmaxf(nk, 1e-6f);
			for (int i = 0; i < dh; i++)
			{
				qs[(size_t) n * D + h * dh + i] = q[i] * fq;
				kn[(size_t) n * D + h * dh + i] = k[i] * fk;
			}
		}
		memcpy(v + (size_t) n * D, row + 2 * D, D * sizeof(float));
	}
}

/* d of y = x / max(|x|, eps) given dy: (dy - y (y.dy)) / |x| when |x| > eps, dy / eps otherwise. */
static inline void
l2norm_backward(float *dx, const float *x, float nrm, const float *dy, int n)
{
	if (nrm > 1e-6f)
	{
		float dot = 0, inv = 1.0f / nrm;

		for (int i = 0; i < n; i++)
			dot += x[i] * inv * dy[i];
		for (int i = 0; i < n; i++)
			dx[i] = (dy[i] - x[i] * inv * dot) * inv;
	}
	else
		for (int i = 0; i < n; i++)
			dx[i] = dy[i] / 1e-6f;
}

SIMD_CLONES static void
cpu_qknorm_backward(HwBackend *be, float *dqkvg, float *dtau, const float *dqs, const float *dkn,
					const float *dv, const float *qkvg, const float *qnorm, const float *knorm,
					const float *tau, int N, int H, int dh)
{
	int    D = H * dh, nch = (N + RCH - 1) / RCH;
	float  isq = 1.0f / sqrtf((float) dh);
	float *part = scratch(be, (size_t) nch * H);

#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (nch > 1)
	for (int c = 0; c < nch; c++)
	{
		int   n1 = (c + 1) * RCH < N ? (c + 1) * RCH : N;
		float dyq[512];                     /* dh <= 512 (checked by the model) */

		for (int h = 0; h < H; h++)
			part[(size_t) c * H + h] = 0;
		for (int n = c * RCH; n < n1; n++)
		{
			const float *row = qkvg + (size_t) n * 4 * D;
			float       *drow = dqkvg + (size_t) n * 4 * D;

			for (int h = 0; h < H; h++)
			{
				const float *q = row + h * dh, *k = row + D + h * dh;
				const float *gq = dqs + (size_t) n * D + h * dh, *gk = dkn + (size_t) n * D + h * dh;
				float        nq = qnorm[(size_t) n * H + h], nk = knorm[(size_t) n * H + h];
				float        s = tau[h] * isq, t = 0, iq = 1.0f / fmaxf(nq, 1e-6f);

				for (int i = 0; i < dh; i++)
				{
					t += gq[i] * q[i] * iq;
					dyq[i] = gq[i] * s;
				}
				part[(size_t) c * H + h] += t * isq;
				l2norm_backward(drow + h * dh, q, nq, dyq, dh);
				l2norm_backward(drow + D + h * dh, k, nk, gk, dh);
			}
			memcpy(drow + 2 * D, dv + (size_t) n * D, D * sizeof(float));
		}
	}
	for (int c = 0; c < nch; c++)
		for (int h = 0; h < H; h++)
			dtau[h] += part[(size_t) c * H + h];
}

/* ---------------------------------------------------------------- attention */

/* The attention kernel (attention.c) runs its own OpenMP teams; give it the
 * backend's team size for the duration of the call. */
static int
push_threads(HwBackend *be)
{
#ifdef _OPENMP
	int old = omp_get_max_threads();

	if (be->n_threads > 0)
		omp_set_num_threads(be->n_threads);
	return old;
#else
	return 1;
#endif
}

static void
pop_threads(int old)
{
#ifdef _OPENMP
	omp_set_num_threads(old);
#endif
}

static void *
cpu_attn_plan_create(HwBackend *be, const HwAttnMaskInfo *info, HwMaskKind kind, HwError *err)
{
	int   old = push_threads(be);
	void *p = attn_plan_create(info, kind, err);

	pop_threads(old);
	return p;
}

static void cpu_attn_plan_free(HwBackend *be, void *plan) { attn_plan_free(plan); }

static void
cpu_attn_forward(HwBackend *be, float *out, float *lse, const float *q, const float *k,
				 const float *v, const void *plan, int H, int dh)
{
	int old = push_threads(be);

	attn_block_sparse_forward(out, lse, q, k, v, plan, H, dh);
	pop_threads(old);
}

static void
cpu_attn_backward(HwBackend *be, float *dq, float *dk, float *dv, const float *dout,
				  const float *out, const float *lse, const float *q, const float *k,
				  const float *v, const void *plan, int H, int dh)
{
	int old = push_threads(be);

	attn_block_sparse_backward(dq, dk, dv, dout, out, lse, q, k, v, plan, H, dh);
	pop_threads(old);
}

/* ---------------------------------------------------------------- gate, SwiGLU */

/* expf by range reduction + degree-6 polynomial (max rel. error ~2e-7 on
 * [-87, 87], checked against exp() in test_ops_cpu): plain arithmetic, so
 * `omp simd` loops vectorise without -ffast-math or libmvec. */
static inline float
fast_expf(float x)
{
	float    n, r, p;
	int32_t  e;
	union { float f; int32_t i; } u;

	x = x < -87.0f ? -87.0f : (x > 87.0f ? 87.0f : x);
	/* round to nearest by the 1.5 * 2^23 trick (SSE2 has no vector floor) */
	n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
	r = x - n * 0.693145752f - n * 1.42860677e-6f;
	p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666418f + r * (0.00833336823f +
		r * 0.00138889742f)))));
	e = (int32_t) n;
	u.i = (e + 127) << 23;
	return p * u.f;
}

static inline float sigm(float x) { return 1.0f / (1.0f + fast_expf(-x)); }

/* exported for the accuracy test */
float hw_cpu_fast_expf(float x);
float hw_cpu_fast_expf(float x) { return fast_expf(x); }

SIMD_CLONES static void
cpu_gate_residual_forward(HwBackend *be, float *xout, const float *xin, const float *gp, int ld,
						  const float *o, int N, int D)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
#pragma omp simd
		for (int d = 0; d < D; d++)
			xout[(size_t) n * D + d] = xin[(size_t) n * D + d] +
				sigm(gp[(size_t) n * ld + d]) * o[(size_t) n * D + d];
}

SIMD_CLONES static void
cpu_gate_residual_backward(HwBackend *be, float *dgp, int ld, float *dO, const float *dx,
						   const float *gp, const float *o, int N, int D)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
#pragma omp simd
		for (int d = 0; d < D; d++)
		{
			float s = sigm(gp[(size_t) n * ld + d]), g = dx[(size_t) n * D + d];

			dO[(size_t) n * D + d] = g * s;
			dgp[(size_t) n * ld + d] = g * o[(size_t) n * D + d] * s * (1.0f - s);
		}
}

SIMD_CLONES static void
cpu_swiglu_forward(HwBackend *be, float *h, const float *gu, int N, int F)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
	{
		const float *g = gu + (size_t) n * 2 * F, *u = g + F;
		float       *hr = h + (size_t) n * F;

#pragma omp simd
		for (int f = 0; f < F; f++)
			hr[f] = g[f] * sigm(g[f]) * u[f];
	}
}

SIMD_CLONES static void
cpu_swiglu_backward(HwBackend *be, float *dgu, const float *dh, const float *gu, int N, int F)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
	{
		const float *g = gu + (size_t) n * 2 * F, *u = g + F, *d = dh + (size_t) n * F;
		float       *dg = dgu + (size_t) n * 2 * F, *du = dg + F;

#pragma omp simd
		for (int f = 0; f < F; f++)
		{
			float s = sigm(g[f]);

			dg[f] = d[f] * u[f] * s * (1.0f + g[f] * (1.0f - s));
			du[f] = d[f] * g[f] * s;
		}
	}
}

/* ---------------------------------------------------------------- loss */

/* BCE with logits: loss and d/dz. */
static inline float
bce_logits(float z, float y, float *dz)
{
	*dz = sigm(z) - y;
	return fmaxf(z, 0.0f) - z * y + log1pf(expf(-fabsf(z)));
}

static inline float
smooth_l1(float d, float delta, float *dd)
{
	/* delta 1 is Huber; a small delta is L1 with a quadratic bottom (the
	 * gradient is sign(d) outside it, so the fit is the median). */
	float a = fabsf(d);

	if (a <= delta)
	{
		*dd = d / delta;
		return 0.5f * d * d / delta;
	}
	*dd = d > 0 ? 1.0f : -1.0f;
	return a - 0.5f * delta;
}

static inline float
huber(float d, float *dd)
{
	return smooth_l1(d, 1.0f, dd);
}

/* The ordinal loss of one target (backend.h HwLossTargets): the sum over
 * thresholds k < levels of BCE(z[k], level > k), level the target's z-score
 * mapped to its integer level; dz[k] = its gradient * scale. */
static inline float
ordinal_loss(const float *z, float num, int levels, float oscale, float oshift, float scale, float *dz)
{
	float lv = nearbyintf(num * oscale + oshift), tl = 0, g;

	lv = fminf(fmaxf(lv, 0.0f), (float) levels);
	for (int k = 0; k < levels; k++)
	{
		tl += bce_logits(z[k], lv > (float) k ? 1.0f : 0.0f, &g);
		dz[k] = g * scale;
	}
	return tl;
}

static void
cpu_loss_forward_backward(HwBackend *be, float *loss, float *dZ, float *dlogits, const float *Z,
						  const float *logits, const HwLossTargets *t, int stype, int B, int D,
						  int K, float scale)
{
	int HZ = HW_HEAD_Z(D);

	memset(dZ, 0, (size_t) B * HZ * sizeof(float));
	if (dlogits && K > 0)
		memset(dlogits, 0, (size_t) B * K * sizeof(float));
	for (int b = 0; b < B; b++)
	{
		const float *z = Z + (size_t) b * HZ;
		float       *dz = dZ + (size_t) b * HZ;
		const float *z_ord = t->ord_levels > 0 ? t->ord_z + (size_t) b * HW_ORD_LEVELS : NULL;
		float       *dz_ord = t->ord_levels > 0 ? t->ord_dz + (size_t) b * HW_ORD_LEVELS : NULL;
		float        g, l, tl = 0;
		int          isnull = t->is_null[b] != 0;

		if (dz_ord)
			memset(dz_ord, 0, HW_ORD_LEVELS * sizeof(float));

		l = bce_logits(z[HW_HEAD_NULL], (float) isnull, &g);
		dz[HW_HEAD_NULL] = g * scale;
		if (!isnull)
		{
			switch (stype)
			{
				case HW_ST_NUMERICAL:
					if (t->ord_levels > 0)
					{
						tl = ordinal_loss(z_ord, t->num[b], t->ord_levels, t->ord_scale, t->ord_shift, scale, dz_ord);
						break;
					}
					tl = smooth_l1(z[HW_HEAD_NUM] - t->num[b], t->num_loss == HW_NUM_LOSS_MAE ? HW_MAE_SMOOTH : 1.0f, &g);
					dz[HW_HEAD_NUM] = g * scale;
					break;
				case HW_ST_BOOLEAN:
					tl = bce_logits(z[HW_HEAD_BOOL], t->boolv[b] ? 1.0f : 0.0f, &g);
					dz[HW_HEAD_BOOL] = g * scale;
					break;
				case HW_ST_TIMESTAMP:
					for (int k = 0; k < 15; k++)
					{
						float w = k < 14 ? 1.0f / 14.0f : 2.0f;

						tl += w * huber(z[HW_HEAD_TS + k] - t->ts[(size_t) b * 15 + k], &g);
						dz[HW_HEAD_TS + k] = w * g * scale;
					}
					break;
				case HW_ST_CATEGORICAL:
				{
					const float *lg = logits + (size_t) b * K;
					float       *dl = dlogits + (size_t) b * K;
					float        mx = -INFINITY, lse;
					double       s = 0;
					int          y = t->cat[b];

					for (int k = 0; k < K; k++)
						mx = fmaxf(mx, lg[k]);
					for (int k = 0; k < K; k++)
						s += exp((double) (lg[k] - mx));
					lse = mx + (float) log(s);
					tl = lse - lg[y] + 1e-4f * lse * lse;
					for (int k = 0; k < K; k++)
						dl[k] = (expf(lg[k] - lse) * (1.0f + 2e-4f * lse) - (k == y ? 1.0f : 0.0f)) * scale;
					break;
				}
				default:
					break;
			}
		}
		loss[b] = l + tl;
	}
}

/* ---------------------------------------------------------------- optimiser */

SIMD_CLONES static void
cpu_adamw_update(HwBackend *be, float *p, float *m, float *v, const float *grad, size_t n,
				 float gscale, float lr, float b1, float b2, float eps, float wd, int t)
{
	float bc1 = 1.0f - powf(b1, (float) t), bc2 = 1.0f - powf(b2, (float) t);

#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (n > 65536)
	for (size_t i = 0; i < n; i++)
	{
		float g = grad[i] * gscale;

		m[i] = b1 * m[i] + (1.0f - b1) * g;
		v[i] = b2 * v[i] + (1.0f - b2) * g * g;
		p[i] -= lr * ((m[i] / bc1) / (sqrtf(v[i] / bc2) + eps) + wd * p[i]);
	}
}

SIMD_CLONES static void
cpu_muon_momentum(HwBackend *be, float *u, float *buf, const float *grad, size_t n, float gscale, float mu)
{
#pragma omp parallel for schedule(static) num_threads(nthreads(be)) if (n > 65536)
	for (size_t i = 0; i < n; i++)
	{
		float g = grad[i] * gscale;

		buf[i] = mu * buf[i] + g;
		u[i] = g + mu * buf[i];
	}
}

/* ---------------------------------------------------------------- table */

static const HwBackendOps cpu_ops = {
	.name = "cpu",
	.destroy = cpu_destroy,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.memcpy_h2d = cpu_memcpy,
	.memcpy_d2h = cpu_memcpy,
	.memcpy_d2d = cpu_memcpy,
	.memset = cpu_memset,
	.synchronize = cpu_sync,
	.gemm = cpu_gemm,
	.gemm_rows_batched = cpu_gemm_rows_batched,
	.add_bias = cpu_add_bias,
	.bias_backward = cpu_bias_backward,
	.axpby = cpu_axpby,
	.sumsq = cpu_sumsq,
	.gather_f16_rows = cpu_gather_f16_rows,
	.gather_rows = cpu_gather_rows,
	.scatter_add_rows = cpu_scatter_add_rows,
	.rmsnorm_forward = cpu_rmsnorm_forward,
	.rmsnorm_backward = cpu_rmsnorm_backward,
	.encoder_forward = cpu_encoder_forward,
	.encoder_backward = cpu_encoder_backward,
	.qknorm_forward = cpu_qknorm_forward,
	.qknorm_backward = cpu_qknorm_backward,
	.attn_plan_create = cpu_attn_plan_create,
	.attn_plan_free = cpu_attn_plan_free,
	.attn_forward = cpu_attn_forward,
	.attn_backward = cpu_attn_backward,
	.gate_residual_forward = cpu_gate_residual_forward,
	.gate_residual_backward = cpu_gate_residual_backward,
	.swiglu_forward = cpu_swiglu_forward,
	.swiglu_backward = cpu_swiglu_backward,
	.loss_forward_backward = cpu_loss_forward_backward,
	.adamw_update = cpu_adamw_update,
	.muon_momentum = cpu_muon_momentum,
};

HwBackend *
hw_backend_cpu_create(int n_threads, HwError *err)
{
	HwBackend *be = calloc(1, sizeof(*be));
	CpuCtx    *c = calloc(1, sizeof(*c));

	if (!be || !c)
	{
		free(be);
		free(c);
		hw_error_set(err, HW_ERR_NOMEM, "out of memory creating the CPU backend");
		return NULL;
	}
	be->ops = &cpu_ops;
	be->ctx = c;
	be->n_threads = n_threads;
	/* our blocking provides the parallelism; see the file comment */
	openblas_set_num_threads(1);
	return be;
}

void
hw_backend_cpu_set_threads(HwBackend *be, int n_threads)
{
	be->n_threads = n_threads;
}

void
hw_backend_destroy(HwBackend *be)
{
	if (be)
		be->ops->destroy(be);
}
