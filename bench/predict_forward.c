/*
 * bench/predict_forward.c: inference forward speed (hw_model_predict) against
 * the training forward used before (hw_model_eval: tape + loss), with the
 * machine's sgemm peak measured first in the same run.
 *
 *   bench/bin/predict_forward [preset] [--rows N] [--threads T]   default: small, 10000 rows
 *
 * Synthetic sequences (synth_batch.h, 5% padding) of the preset's B x S; rows/s
 * counts predicted sequences (one target each).  Prints the forward GEMMs'
 * GFLOP/s (flop counted from the shapes of the calls) as a share of the
 * peak.  Sampling and SQL are not included (bench/serving.sh measures those).
 */
#include "backend.h"
#include "model.h"
#include "synth_batch.h"
#include "tape.h"
#include "sgemm_peak.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static HwBackendOps shim_ops;
static void (*real_gemm)(HwBackend *, bool, bool, int, int, int, float, const float *, int,
						 const float *, int, float, float *, int);
static double gemm_ms, gemm_flop;

static void
timed_gemm(HwBackend *be, bool tA, bool tB, int M, int N, int K, float alpha, const float *A, int lda,
		   const float *B, int ldb, float beta, float *C, int ldc)
{
	double t0 = hw_now_ms();

	if (M >= 0)
		real_gemm(be, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
	double dt = hw_now_ms() - t0;

	if (M < 0)
		goto report;
	gemm_ms += dt;
	gemm_flop += 2.0 * M * N * K;
	if (getenv("HW_BENCH_SHAPES"))
	{
		static int sm[64][3]; static double st[64], sf[64]; static int ns;
		int i;

report:
		if (M < 0)
		{
			for (i = 0; i < ns; i++)
				printf("    gemm %5d x %5d x %5d: %8.1f ms %6.1f GFLOP/s\n", sm[i][0], sm[i][1], sm[i][2], st[i], sf[i] / (st[i] * 1e6));
			ns = 0;
			return;
		}
		for (i = 0; i < ns; i++)
			if (sm[i][0] == M && sm[i][1] == N && sm[i][2] == K)
				break;
		if (i == ns && ns < 64)
		{
			sm[ns][0] = M; sm[ns][1] = N; sm[ns][2] = K; st[ns] = sf[ns] = 0; ns++;
		}
		if (i < 64)
		{
			st[i] += dt;
			sf[i] += 2.0 * M * N * K;
		}
	}
}

static void (*real_rows_batched)(HwBackend *, int, int, int, int, const float *, int, const float *, float,
								 float *, int);

static void
timed_rows_batched(HwBackend *be, int nb, int M, int N, int K, const float *A, int lda, const float *W, float beta,
				   float *C, int ldc)
{
	double t0 = hw_now_ms();

	real_rows_batched(be, nb, M, N, K, A, lda, W, beta, C, ldc);
	gemm_ms += hw_now_ms() - t0;
	gemm_flop += 2.0 * nb * M * N * K;
}

int
main(int argc, char **argv)
{
	const char   *preset = "small";
	int           rows = 10000, threads = 0, dt = 256;
	HwError       err = {0};
	HwModelConfig c;
	HwBackend    *be;
	uint16_t     *colt, *catt;
	HwModel      *m;
	HwBatch      *b;
	HwPredictions *pr;
	double        peak;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
			rows = atoi(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else
			preset = argv[i];
	}
#ifdef _OPENMP
	if (threads <= 0)
		threads = omp_get_max_threads();
#else
	threads = 1;
#endif
	peak = bench_sgemm_gflops(threads, 4, hw_now_ms);
	printf("sgemm peak (2048^3, %d threads): %.1f GFLOP/s\n", threads, peak);
	if (hw_model_config_preset(&c, preset, &err) != HW_OK)
	{
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	c.d_text = dt;
	be = hw_backend_cpu_create(threads, &err);
	hw_synth_tables(dt, 1, &colt, &catt);
	m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	if (!m)
	{
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	c = *hw_model_config(m);
	b = hw_synth_batch(&(HwSynthSpec){ .B = c.batch_size, .S = c.seq_len, .d_text = dt,
									   .target_stype = HW_ST_CATEGORICAL, .seed = 5, .pad_frac = 0.05f }, 0);
	pr = hw_predictions_alloc(c.batch_size, HW_SYNTH_NCAT);
	shim_ops = *be->ops;
	real_gemm = be->ops->gemm;
	shim_ops.gemm = timed_gemm;
	real_rows_batched = be->ops->gemm_rows_batched;
	if (real_rows_batched)
		shim_ops.gemm_rows_batched = timed_rows_batched;
	be->ops = &shim_ops;
	printf("%s: D=%d H=%d L=%d F=%d, batches of B=%d x S=%d, %d rows, %d threads\n", preset, c.d_model,
		   c.n_heads, c.n_layers, c.d_ff, c.batch_size, c.seq_len, rows, threads);
	for (int path = 0; path < 2; path++)
	{
		int    nb = (rows + c.batch_size - 1) / c.batch_size;
		double t0, ms;
		float  loss;

		/* one warm-up batch */
		if ((path ? hw_model_predict(m, b, pr, &err) : hw_model_eval(m, b, &loss, pr, &err)) != HW_OK)
		{
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		if (path == 0)
			nb = nb < 4 ? nb : 4;     /* the old path is slow: 4 batches are enough */
		gemm_ms = gemm_flop = 0;
		t0 = hw_now_ms();
		for (int k = 0; k < nb; k++)
			if ((path ? hw_model_predict(m, b, pr, &err) : hw_model_eval(m, b, &loss, pr, &err)) != HW_OK)
			{
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
		ms = hw_now_ms() - t0;
		printf("  %-44s %7.0f rows/s (%d batches, %.1f ms each); GEMM %.1f GFLOP/row, %.1f GFLOP/s = %.0f%% of "
			   "peak, %.0f%% of the time\n",
			   path ? "hw_model_predict (inference forward)" : "hw_model_eval (training forward + loss)",
			   nb * c.batch_size / (ms / 1e3), nb, ms / nb, gemm_flop / 1e9 / (nb * c.batch_size),
			   gemm_flop / (gemm_ms * 1e6), 100 * gemm_flop / (gemm_ms * 1e6) / peak, 100 * gemm_ms / ms);
		printf("RESULT path=%s preset=%s rows_per_s=%.1f gemm_gflops=%.1f peak_gflops=%.1f\n", path ? "predict" : "eval",
			   preset, nb * c.batch_size / (ms / 1e3), gemm_flop / (gemm_ms * 1e6), peak);
		timed_gemm(be, false, false, -1, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, 0);
		fflush(stdout);
	}
	hw_predictions_free(pr);
	hw_batch_free(b);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
	return 0;
}
