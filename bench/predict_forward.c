/*
 * bench/predict_forward.c: inference forward speed (hw_model_predict) against
 * the training forward used before (hw_model_eval: tape + loss), with the
 * machine's sgemm peak measured first in the same run.
 *
 *   bench/bin/predict_forward [preset] [--rows N] [--threads T] [--rounds R] [--batch B] [--variant V]
 *                             [--f32-avx2] [--trained]
 *
 * Defaults: small, 10000 rows, every thread, 2 rounds, the preset's batch
 * size, every variant.  --batch sets the sequences per forward call;
 * --f32-avx2 runs the packed fp32 kernel's AVX2 build on an AVX-512
 * processor (to compare it with OpenBLAS's AVX2 kernels there).  The
 * serving variants run on a frozen copy of the model, as the server loads
 * one (its sublayers share two residual buffers and one set of activation
 * buffers, which stay in cache: about 1.12 times the rows/s of the trained
 * model on the small preset); --trained runs them on the trained model
 * itself (the same predictions).
 *
 * The serving forward in eight variants, alternating over R rounds: fp32
 * (on packed weights where the processor has AVX-512) or bf16 layer GEMMs
 * (bf16 only on processors with AVX512_BF16; on AMX tiles where the
 * processor has them), and the last
 * attention sublayer whole, on the target cells only, or the last layers
 * on the cells that can reach a target (cell lists, model_reach.c; the
 * share of the listed stages' cells they computed is printed: on these
 * synthetic sequences the anchor has many children, so it is high); the
 * seventh: fp32 on OpenBLAS's sgemm (no packed weights), with cell lists;
 * the eighth (only where the processor has AMX tiles): bf16 on the
 * AVX512_BF16 kernel, with cell lists.
 *
 * Synthetic sequences (synth_batch.h, 5% padding) of the preset's B x S; rows/s
 * counts predicted sequences (one target each).  Prints the forward GEMMs'
 * GFLOP/s (flop counted from the shapes of the calls) as a share of the
 * peak: the products called on the model's backend only (the leading
 * stages that run a sequence per thread call the threads' own backends,
 * parallel_items, and are not counted; with two threads or more the figure
 * covers the stages on cell lists and the tail).  Sampling and SQL are
 * not included (bench/serving.sh measures those).
 */
#include "core/backend.h"
#include "backend/backend_cpu_internal.h"
#include "core/model.h"
#include "synth_batch.h"
#include "core/tape.h"
#include "sgemm_peak.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

static void (*real_gemm_bf16)(HwBackend *, int, int, int, const float *, int, const void *, int, float, float *,
							  int);

static void
timed_gemm_bf16(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *pk, int n0, float beta,
				float *C, int ldc)
{
	double t0 = hw_now_ms();

	real_gemm_bf16(be, M, N, K, A, lda, pk, n0, beta, C, ldc);
	gemm_ms += hw_now_ms() - t0;
	gemm_flop += 2.0 * M * N * K;
}

static void (*real_gemm_f32_packed)(HwBackend *, int, int, int, const float *, int, const void *, int, float,
									float *, int);

static void
timed_gemm_f32_packed(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *pk, int n0,
					  float beta, float *C, int ldc)
{
	double t0 = hw_now_ms();

	real_gemm_f32_packed(be, M, N, K, A, lda, pk, n0, beta, C, ldc);
	gemm_ms += hw_now_ms() - t0;
	gemm_flop += 2.0 * M * N * K;
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

static void (*real_rows_ragged)(HwBackend *, int, const int32_t *, int, int, const float *, int, const float *,
								float, float *, int);

static void
timed_rows_ragged(HwBackend *be, int nb, const int32_t *off, int N, int K, const float *A, int lda, const float *W,
				  float beta, float *C, int ldc)
{
	double t0 = hw_now_ms();

	real_rows_ragged(be, nb, off, N, K, A, lda, W, beta, C, ldc);
	gemm_ms += hw_now_ms() - t0;
	gemm_flop += 2.0 * (off[nb] - off[0]) * N * K;
}

static double
cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* the serving forward's variants: precision x how much is pruned: the
 * last sublayer whole (attn_forward_rows hidden: the forward before the
 * target-rows tail), on the target cells (attn_forward_cells hidden: the
 * forward before the cell lists), or the last layers on the cells that
 * reach a target (model_reach.c) */
#define NVARIANT 8
#define NPRUNE 3
#define V_OPENBLAS 6    /* fp32 on OpenBLAS blocks (no packed fp32 weights), cell lists */
#define V_NO_AMX 7      /* bf16 on AVX512_BF16 where the processor also has AMX tiles, cell lists */
static const char *const variant_names[NVARIANT] = {
	"fp32, last sublayer whole", "fp32, last sublayer on targets", "fp32, last layers on cell lists",
	"bf16, last sublayer whole", "bf16, last sublayer on targets", "bf16, last layers on cell lists",
	"fp32 on OpenBLAS, cell lists", "bf16 without AMX, cell lists",
};

/* the share of the cells that the stages on cell lists computed (1: no
 * stage on lists) */
static double
cell_share(const HwModel *m, const HwBatch *b)
{
	const HwModelConfig *c = hw_model_config(m);
	int                  A = c->full_attention ? 4 : 3;
	double               listed = 0, all = 0;

	for (int k = 0; k < c->n_layers * (A + 1); k++)
		for (int s = 0; s < b->B; s++)
		{
			int n = hw_model_reach_cells(m, k, s, NULL);

			if (n >= 0)
			{
				listed += n;
				all += b->S;
			}
		}
	return all > 0 ? listed / all : 1.0;
}

static int
run_variant(HwModel *m, HwBackend *be, const HwBatch *b, HwPredictions *pr, int v, int nb, int B, const char *preset,
			double peak)
{
	HwError err = {0};
	bool    bf16 = v >= NPRUNE && v != V_OPENBLAS;
	int     prune = v >= V_OPENBLAS ? 2 : v % NPRUNE;     /* 0 whole, 1 the last sublayer, 2 cell lists */
	HwBackendOps keep = shim_ops;
	double  t0, c0, ms, cms, cells;

	if ((bf16 && !be->ops->bf16_usable(be)) || (v == V_NO_AMX && !hw_backend_cpu_amx_supported()))
		return 0;
	hw_backend_cpu_disable_f32_pack(be, v == V_OPENBLAS);
	hw_backend_cpu_disable_amx(be, v == V_NO_AMX);
	if (hw_model_set_inference_precision(m, bf16 ? HW_PRECISION_BF16 : HW_PRECISION_FP32, &err) != HW_OK)
	{
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	if (prune < 1)
		shim_ops.attn_forward_rows = NULL;
	if (prune < 2)
		shim_ops.attn_forward_cells = NULL;
	if (hw_model_predict(m, b, pr, &err) != HW_OK)      /* warm-up (and the bf16 packing) */
	{
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	gemm_ms = gemm_flop = 0;
	t0 = hw_now_ms();
	c0 = cpu_ms();
	for (int k = 0; k < nb; k++)
		if (hw_model_predict(m, b, pr, &err) != HW_OK)
		{
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
	ms = hw_now_ms() - t0;
	cms = cpu_ms() - c0;
	cells = cell_share(m, b);
	shim_ops = keep;
	printf("  %-40s %7.1f rows/s wall, %7.1f rows/s per CPU-second (%d batches); GEMM on the model's backend %.2f GFLOP/row, "
		   "%.0f%% of the wall time; listed cells %.0f%%\n", variant_names[v], nb * B / (ms / 1e3), nb * B / (cms / 1e3),
		   nb, gemm_flop / 1e9 / (nb * B), 100 * gemm_ms / ms, 100 * cells);
	printf("RESULT variant=%d precision=%s prune=%d preset=%s rows_per_s=%.1f rows_per_cpu_s=%.1f "
		   "gemm_gflops=%.1f peak_gflops=%.1f listed=%.3f\n", v, bf16 ? "bf16" : "fp32", prune, preset,
		   nb * B / (ms / 1e3), nb * B / (cms / 1e3), gemm_flop / (gemm_ms * 1e6), peak, cells);
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	const char   *preset = "small";
	int           rows = 10000, threads = 0, dt = 256, rounds = 2, only = -1, batch = 0;
	HwError       err = {0};
	HwModelConfig c;
	HwBackend    *be;
	uint16_t     *colt, *catt;
	HwModel      *m, *served;
	float        *flat = NULL;
	bool          trained = false;
	HwBatch      *b;
	HwPredictions *pr;
	double        peak;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
			rows = atoi(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc)
			only = atoi(argv[++i]);
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (strcmp(argv[i], "--f32-avx2") == 0)
			cpu_f32_packed_force_avx2(true);
		else if (strcmp(argv[i], "--trained") == 0)
			trained = true;
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
	if (batch > 0)
		c.batch_size = batch;
	b = hw_synth_batch(&(HwSynthSpec){ .B = c.batch_size, .S = c.seq_len, .d_text = dt,
									   .target_stype = HW_ST_CATEGORICAL, .seed = 5, .pad_frac = 0.05f }, 0);
	pr = hw_predictions_alloc(c.batch_size, HW_SYNTH_NCAT);
	shim_ops = *be->ops;
	real_gemm = be->ops->gemm;
	shim_ops.gemm = timed_gemm;
	real_rows_batched = be->ops->gemm_rows_batched;
	if (real_rows_batched)
		shim_ops.gemm_rows_batched = timed_rows_batched;
	real_rows_ragged = be->ops->gemm_rows_ragged;
	if (real_rows_ragged)
		shim_ops.gemm_rows_ragged = timed_rows_ragged;
	real_gemm_bf16 = be->ops->gemm_bf16;
	if (real_gemm_bf16)
		shim_ops.gemm_bf16 = timed_gemm_bf16;
	real_gemm_f32_packed = be->ops->gemm_f32_packed;
	if (real_gemm_f32_packed)
		shim_ops.gemm_f32_packed = timed_gemm_f32_packed;
	be->ops = &shim_ops;
	if (trained)
		served = m;
	else
	{
		/* the variants on a served (frozen) copy, as rt_predict loads one */
		int64_t n = hw_model_numel(m);

		flat = malloc(sizeof(float) * (size_t) n);
		if (!flat || hw_model_get_flat(m, 0, flat) != HW_OK ||
			!(served = hw_model_create_frozen(&c, flat, n, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err)))
		{
			fprintf(stderr, "a frozen copy: %s\n", err.msg);
			return 1;
		}
	}
	printf("%s: D=%d H=%d L=%d F=%d, batches of B=%d x S=%d, %d rows, %d threads\n", preset, c.d_model,
		   c.n_heads, c.n_layers, c.d_ff, c.batch_size, c.seq_len, rows, threads);
	/* the training forward (4 batches), then the serving forward's variants
	 * in alternating rounds (the machine may be shared: process CPU time is
	 * reported beside the wall clock) */
	if (only < 0)
	{
		double t0 = hw_now_ms(), c0 = cpu_ms();
		float  loss;

		for (int k = 0; k < 5; k++)
			if (hw_model_eval(m, b, &loss, pr, &err) != HW_OK)
			{
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
		printf("  %-40s %7.1f rows/s wall, %7.1f rows/s per CPU-second\n", "hw_model_eval (training forward + loss)",
			   5 * c.batch_size / ((hw_now_ms() - t0) / 1e3), 5 * c.batch_size / ((cpu_ms() - c0) / 1e3));
	}
	for (int round = 0; round < rounds; round++)
		for (int v = 0; v < NVARIANT; v++)
			if ((only < 0 || v == only) && run_variant(served, be, b, pr, v, (rows + c.batch_size - 1) / c.batch_size, c.batch_size, preset, peak) != 0)
				return 1;
	hw_predictions_free(pr);
	hw_batch_free(b);
	if (served != m)
		hw_model_free(served);
	free(flat);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
	return 0;
}
