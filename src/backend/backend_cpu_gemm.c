/*
 * backend_cpu_gemm.c: the CPU backend's GEMM (our packed fp32 kernel where
 * the processor has it, else OpenBLAS sgemm in blocks fixed by the shapes,
 * see backend_cpu.c) and its row utilities: bias, axpby,
 * sum of squares, gathers and scatters.
 */
/* lets GCC if-convert the float compares of fast_expf and vectorise; no
 * code here relies on floating-point traps */
#pragma GCC optimize("no-trapping-math")

#include "backend/backend_cpu_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- GEMM */

void
cpu_gemm(HwBackend *be, bool tA, bool tB, int M, int N, int K, float alpha,
		 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
	int rb, cb, nrb, ncb;

	if (M <= 0 || N <= 0)
		return;
	if (K <= 0 || alpha == 0.0f)
	{
		/* C = beta * C, A and B not read (the BLAS convention) */
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				C[(size_t) i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t) i * ldc + j];
		return;
	}
	/* the own fp32 kernel where the processor has it (backend_cpu_f32pack.c;
	 * it declines only when out of memory for a transposed A's buffers) */
	if (cpu_gemm_f32_any(be, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
		return;
	/* Long reductions with a small output (weight gradients dW = dY^T X over
	 * all tokens): split K into fixed chunks, one partial C per chunk, then
	 * add the partials in chunk order.  Splitting M or N instead would make
	 * every block re-pack the whole [K, *] operand.  Without memory for the
	 * partials, the blocks below (slower, other bits, the same at any
	 * thread count). */
	float *part;

	if (K >= 2 * KCH && (int64_t) M * N <= (int64_t) K * 64 &&
		(part = cpu_scratch(be, (size_t) ((K + KCH - 1) / KCH) * M * N)) != NULL)
	{
		int nk = (K + KCH - 1) / KCH;

#pragma omp parallel for schedule(dynamic, 1) num_threads(cpu_nthreads(be))
		for (int c = 0; c < nk; c++)
		{
			int          k0 = c * KCH, kk = K - k0 < KCH ? K - k0 : KCH;
			const float *a = tA ? A + (size_t) k0 * lda : A + k0;
			const float *b = tB ? B + k0 : B + (size_t) k0 * ldb;

			cblas_sgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans,
						M, N, kk, alpha, a, lda, b, ldb, 0.0f, part + (size_t) c * M * N, N);
		}
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) M * N > 32768)
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
#pragma omp parallel for schedule(dynamic, 1) num_threads(cpu_nthreads(be))
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

/* backend.h gemm_rows_batched: the nb products' rows lie one after another,
 * so the own fp32 kernel computes them in one call (a row's bits never depend
 * on the call there); without it, one single-threaded sgemm per product,
 * products shared by the team (so a product never depends on nb). */
void
cpu_gemm_rows_batched(HwBackend *be, int nb, int M, int N, int K, const float *A, int lda,
					  const float *W, float beta, float *C, int ldc)
{
	if (nb <= 0 || M <= 0 || N <= 0 || K <= 0)
		return;
	if ((int64_t) nb * M <= INT32_MAX &&
		cpu_gemm_f32_any(be, false, true, nb * M, N, K, 1.0f, A, lda, W, K, beta, C, ldc))
		return;
#pragma omp parallel for schedule(dynamic, 1) num_threads(cpu_nthreads(be)) if (nb > 1)
	for (int i = 0; i < nb; i++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A + (size_t) i * M * lda, lda,
					W, K, beta, C + (size_t) i * M * ldc, ldc);
}

/* backend.h gemm_rows_ragged: as gemm_rows_batched, products of varied
 * heights (rows off[0] .. off[nb] in one call of the own kernel, else one
 * single-threaded sgemm each, so a product's bits depend only on its own
 * operands and shape). */
void
cpu_gemm_rows_ragged(HwBackend *be, int nb, const int32_t *off, int N, int K, const float *A, int lda,
					 const float *W, float beta, float *C, int ldc)
{
	if (nb <= 0 || N <= 0 || K <= 0)
		return;
	if (off[nb] <= off[0] ||
		cpu_gemm_f32_any(be, false, true, off[nb] - off[0], N, K, 1.0f, A + (size_t) off[0] * lda, lda, W, K, beta,
						 C + (size_t) off[0] * ldc, ldc))
		return;
#pragma omp parallel for schedule(dynamic, 1) num_threads(cpu_nthreads(be)) if (nb > 1)
	for (int i = 0; i < nb; i++)
		if (off[i + 1] > off[i])
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, off[i + 1] - off[i], N, K, 1.0f,
						A + (size_t) off[i] * lda, lda, W, K, beta, C + (size_t) off[i] * ldc, ldc);
}

/* ---------------------------------------------------------------- utilities */

SIMD_CLONES void
cpu_add_bias(HwBackend *be, float *out, const float *bias, int M, int N)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (M > 64)
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++)
			out[(size_t) i * N + j] += bias[j];
}

/* db[N] += column sums of dout[M,N] in fixed row chunks. */
void
cpu_bias_backward(HwBackend *be, float *db, const float *dout, int M, int N)
{
	int    nch = (M + RCH - 1) / RCH;
	float *part = cpu_scratch(be, (size_t) nch * N);

#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (nch > 1)
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

SIMD_CLONES void
cpu_axpby(HwBackend *be, float *y, float a, const float *x, float b, size_t n)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (n > 65536)
	for (size_t i = 0; i < n; i++)
		y[i] = a * x[i] + b * y[i];
}

double
cpu_sumsq(HwBackend *be, const float *x, size_t n)
{
	size_t  CH = 4096, nch = (n + CH - 1) / CH;
	double *part = malloc((nch ? nch : 1) * sizeof(double));
	double  s = 0;

	if (!part)
		return NAN;
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (nch > 16)
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

void
cpu_gather_f16_rows(HwBackend *be, float *out, const uint16_t *table, const int32_t *idx, int M, int C)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (M > 256)
	for (int m = 0; m < M; m++)
		for (int c = 0; c < C; c++)
			out[(size_t) m * C + c] = hw_f16_to_f32(table[(size_t) idx[m] * C + c]);
}

/* row copies: split between the threads when they move more than 256 KB
 * (the serving forward's cell lists: thousands of rows of D floats) */
void
cpu_gather_rows(HwBackend *be, float *out, const float *in, const int32_t *idx, int M, int C)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) M * C > 65536)
	for (int m = 0; m < M; m++)
		memcpy(out + (size_t) m * C, in + (size_t) idx[m] * C, C * sizeof(float));
}

void
cpu_scatter_rows(HwBackend *be, float *dst, const float *src, const int32_t *idx, int M, int C)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) M * C > 65536)
	for (int m = 0; m < M; m++)
		memcpy(dst + (size_t) idx[m] * C, src + (size_t) m * C, C * sizeof(float));
}

void
cpu_scatter_add_rows(HwBackend *be, float *din, const float *dout, const int32_t *idx, int M, int C)
{
	for (int m = 0; m < M; m++)
		for (int c = 0; c < C; c++)
			din[(size_t) idx[m] * C + c] += dout[(size_t) m * C + c];
}
