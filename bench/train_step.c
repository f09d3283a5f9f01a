/*
 * bench/train_step.c: training-step speed of the CPU backend.
 *
 *   bench/bin/train_step [preset ...] [--steps N] [--threads T] [--layers L] [--tape] [--ema D]
 *                        [--set key=value ...] [--precision fp32|bf16|auto] [--full-tail] [--f32-blas] [--no-amx]
 *   bench/bin/train_step --gemm-shapes     (one-thread OpenBLAS sgemm on the shapes of its fallback blocks)
 *
 * Prints, per preset: ms per step, tokens/s, model GFLOP per step (matmuls,
 * counted from shapes, forward + backward = 3x forward; attention counted
 * from the plan's allowed pairs), achieved GFLOP/s, the matmul share of the
 * step and its GFLOP/s against this machine's sgemm peak measured first in the
 * same run (one 4096^3 multi-threaded OpenBLAS sgemm), and attention time with
 * block-sparse vs dense-reference kernels on the same q, k, v.  --ema D: the
 * model keeps a parameter average (ema_decay D; its update is part of every
 * step) and the update alone is timed and given as a share of the step.
 * --set key=value: any model setting (hw_model_config_set), e.g.
 * --set count_ramps=1 to time a step with the count ramps of the anchor
 * rows (the synthetic anchors then get children, 5 + b of them), 2 with
 * those of every row.
 * --precision: the training GEMMs' precision (hw_model_set_train_precision;
 * with bf16 the GEMM share below counts only the fp32 products left).
 * --full-tail: the last layer's tail on every cell, not only the target
 * cells (hw_model_set_full_tail: the step before the tail was pruned).
 * --f32-blas: the fp32 products on OpenBLAS, not on the backend's own
 * kernel (hw_backend_cpu_disable_f32_pack), to compare the two.
 * --no-amx: the bf16 products on the AVX512_BF16 kernel even where the
 * processor has AMX tiles (hw_backend_cpu_disable_amx).
 * Synthetic batches (synth_batch.h).  The peak is OpenBLAS's, with the
 * kernels it picked (OPENBLAS_CORETYPE, or the processor's model: its
 * SSE3 kernels on a processor newer than its release), while the step's
 * fp32 products run on the backend's own kernel where the processor has
 * it: compare the share of the peak within one environment (the
 * benchmark itself does not touch it).
 */
#include "core/attention.h"
#include "core/backend.h"
#include "core/model.h"
#include "synth_batch.h"
#include "core/tape.h"
#include "sgemm_peak.h"

#include <cblas.h>
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* GEMM timing shim: wraps the backend's gemm entry to count its flop and time */
static HwBackendOps shim_ops;
static void (*real_gemm)(HwBackend *, bool, bool, int, int, int, float, const float *, int,
						 const float *, int, float, float *, int);
static double gemm_ms, gemm_flop, gemm_cpu_ms;

/* CPU time of the whole process (all threads), ms: on a shared, oversubscribed
 * machine flop per CPU-second still measures the kernels' efficiency. */
static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec * 1e-6;
}

static void
timed_gemm(HwBackend *be, bool tA, bool tB, int M, int N, int K, float alpha, const float *A, int lda,
		   const float *B, int ldb, float beta, float *C, int ldc)
{
	double t0 = hw_now_ms(), c0 = cpu_ms();

	real_gemm(be, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
	gemm_ms += hw_now_ms() - t0;
	gemm_cpu_ms += cpu_ms() - c0;
	gemm_flop += 2.0 * M * N * K;
}

static double peak_core_cpu;    /* one-thread sgemm GFLOP per CPU-second */

/* One-thread sgemm on the block shapes the backend issues, by thread CPU time. */
static void
gemm_shapes(void)
{
	static const struct { const char *nm; int tA, tB, M, N, K; } sh[] = {
		{"fwd q|k|v|gate block, small", 0, 1, 512, 512, 128}, {"fwd q|k|v|gate block, base", 0, 1, 512, 1024, 256},
		{"dX block, small", 0, 0, 512, 128, 512}, {"dX block, base", 0, 0, 512, 256, 1024},
		{"dW split-K chunk, small", 1, 0, 512, 128, 4096}, {"dW split-K chunk, base", 1, 0, 1024, 256, 4096},
		{"Wo block, small", 0, 1, 512, 128, 128}, {"Wo block, base", 0, 1, 512, 256, 256},
	};

	openblas_set_num_threads(1);
	for (size_t i = 0; i < sizeof(sh) / sizeof(sh[0]); i++)
	{
		int    M = sh[i].M, N = sh[i].N, K = sh[i].K;
		float *A = calloc((size_t) M * K, 4), *B = calloc((size_t) K * N, 4), *C = calloc((size_t) M * N, 4);
		double best = 1e30;

		for (size_t j = 0; j < (size_t) M * K; j++)
			A[j] = (float) (j % 7) * 0.1f;
		for (size_t j = 0; j < (size_t) K * N; j++)
			B[j] = (float) (j % 5) * 0.1f;
		for (int r = 0; r < 4; r++)
		{
			struct timespec t0, t1;
			double          dt;

			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
			cblas_sgemm(CblasRowMajor, sh[i].tA ? CblasTrans : CblasNoTrans, sh[i].tB ? CblasTrans : CblasNoTrans,
						M, N, K, 1.0f, A, sh[i].tA ? M : K, B, sh[i].tB ? K : N, 0.0f, C, N);
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
			dt = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
			if (dt < best)
				best = dt;
		}
		printf("  %-30s %5d x %5d x %5d: %6.1f GFLOP per CPU-second\n", sh[i].nm, M, N, K, 2.0 * M * N * K / (best * 1e6));
		free(A);
		free(B);
		free(C);
	}
}

int
main(int argc, char **argv)
{
	const char *presets[8];
	const char *precision = "fp32";
	bool        full_tail = false, f32_blas = false, no_amx = false;
	int         np = 0, steps = 3, threads = 0, layers = 0, tape = 0, dt = 256;
	double      ema = 0;
	const char *sets[16];
	int         nsets = 0;
	HwError     err = {0};
	double      peak;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc)
			layers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--tape") == 0)
			tape = 1;
		else if (strcmp(argv[i], "--ema") == 0 && i + 1 < argc)
			ema = atof(argv[++i]);
		else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc && nsets < 16)
			sets[nsets++] = argv[++i];
		else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc)
			precision = argv[++i];
		else if (strcmp(argv[i], "--full-tail") == 0)
			full_tail = true;
		else if (strcmp(argv[i], "--f32-blas") == 0)
			f32_blas = true;
		else if (strcmp(argv[i], "--no-amx") == 0)
			no_amx = true;
		else if (strcmp(argv[i], "--gemm-shapes") == 0)
		{
			gemm_shapes();
			return 0;
		}
		else if (np < 8)
			presets[np++] = argv[i];
	}
	if (np == 0)
	{
		presets[np++] = "tiny";
		presets[np++] = "small";
		presets[np++] = "base";
	}
#ifdef _OPENMP
	if (threads <= 0)
		threads = omp_get_max_threads();
#else
	threads = 1;
#endif
	peak = bench_sgemm_gflops(threads, 4, hw_now_ms);
	peak_core_cpu = bench_sgemm_gflops(1, 3, cpu_ms);
	printf("sgemm peak (2048^3, %d threads): %.1f GFLOP/s wall; one thread: %.1f GFLOP per CPU-second\n",
		   threads, peak, peak_core_cpu);

	for (int pi = 0; pi < np; pi++)
	{
		HwModelConfig c;
		HwBackend    *be = hw_backend_cpu_create(threads, &err);
		uint16_t     *colt, *catt;
		HwModel      *m;
		HwSynthSpec   sp;
		HwBatch      *b;
		double        best = 1e30, mm_ms = 0, mm_flop = 0, att_ms = 0, att_flop = 0;
		int           D, N, F;
		const HwTape *t;
		double       *best_fw = NULL, best_gemm_ms = 0, best_gemm_flop = 0, best_gemm_cpu = 0, best_step_cpu = 0, c_step0 = 0;

		if (hw_model_config_preset(&c, presets[pi], &err) != HW_OK)
		{
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		if (layers > 0)
			c.n_layers = layers;
		c.d_text = dt;
		c.ema_decay = (float) ema;
		for (int k = 0; k < nsets; k++)
		{
			char        key[64];
			const char *eq = strchr(sets[k], '=');

			if (!eq || eq - sets[k] >= (long) sizeof(key))
			{
				fprintf(stderr, "--set %s: expected key=value\n", sets[k]);
				return 1;
			}
			memcpy(key, sets[k], eq - sets[k]);
			key[eq - sets[k]] = 0;
			if (hw_model_config_set(&c, key, atof(eq + 1), &err) != HW_OK)
			{
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
		}
		if (hw_model_config_finish(&c, &err) != HW_OK)
		{
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		hw_synth_tables(dt, 1, &colt, &catt);
		if (be)
		{
			hw_backend_cpu_disable_f32_pack(be, f32_blas);
			hw_backend_cpu_disable_amx(be, no_amx);
		}
		m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
		if (!m)
		{
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		{
			int k = 0;

			while (hw_precision_name(k) && strcmp(precision, hw_precision_name(k)) != 0)
				k++;
			if (!hw_precision_name(k))
			{
				fprintf(stderr, "--precision %s: expected fp32, bf16 or auto\n", precision);
				return 1;
			}
			if (hw_model_set_train_precision(m, (HwPrecision) k, &err) != HW_OK)
			{
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
		}
		hw_model_set_full_tail(m, full_tail);
		c = *hw_model_config(m);
		sp = (HwSynthSpec){ .B = c.batch_size, .S = c.seq_len, .d_text = dt, .target_stype = HW_ST_CATEGORICAL, .seed = 5, .pad_frac = 0.05f };
		b = hw_synth_batch(&sp, 0);
		if (b && c.count_ramps)
			hw_synth_anchor_counts(b, 0, 1, 5);
		shim_ops = *be->ops;
		real_gemm = be->ops->gemm;
		shim_ops.gemm = timed_gemm;
		be->ops = &shim_ops;
		for (int s = 0; s < steps + 1; s++)
		{
			HwStepResult r;
			double       t0 = hw_now_ms(), ms;

			gemm_ms = gemm_flop = gemm_cpu_ms = 0;
			c_step0 = cpu_ms();

			if (hw_model_train_step(m, b, &r, &err) != HW_OK)
			{
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
			ms = hw_now_ms() - t0;
			if (s > 0 && ms < best)
			{
				/* keep the op times of the fastest step (the machine is shared) */
				const HwTape *tp = hw_model_tape(m);

				best = ms;
				best_gemm_ms = gemm_ms;
				best_gemm_flop = gemm_flop;
				best_gemm_cpu = gemm_cpu_ms;
				best_step_cpu = cpu_ms() - c_step0;
				free(best_fw);
				best_fw = malloc(sizeof(double) * 2 * (tp->n + 1));
				for (int i = 0; i < tp->n; i++)
				{
					best_fw[2 * i] = tp->rec[i].fwd_ms;
					best_fw[2 * i + 1] = tp->rec[i].bwd_ms;
				}
			}
		}
		D = c.d_model;
		N = c.batch_size * c.seq_len;
		F = c.d_ff;
		/* matmul flop and time from the last step's tape */
		t = hw_model_tape(m);
		for (int i = 0; i < t->n && best_fw; i++)
		{
			((HwTape *) t)->rec[i].fwd_ms = best_fw[2 * i];
			((HwTape *) t)->rec[i].bwd_ms = best_fw[2 * i + 1];
		}
		free(best_fw);
		for (int i = 0; i < t->n; i++)
		{
			const HwTapeRec *r = &t->rec[i];

			if (strcmp(r->op, "linear") == 0 || strcmp(r->op, "norm_linear") == 0 ||
				strcmp(r->op, "swiglu_w2_residual") == 0)
			{
				/* rows x out x K: K is F for the FFN's down projection, D for
				 * the layers' other products (the last layer's tail on the
				 * target rows only) and the heads, d_text for the encoder's */
				bool   layer_or_head = strncmp(r->label, "layer", 5) == 0 || strcmp(r->label, "heads") == 0 ||
					strcmp(r->label, "cat_logits") == 0;
				double k = strcmp(r->op, "swiglu_w2_residual") == 0 ? F : layer_or_head ? D : dt;
				double f = 2.0 * r->shape[0] * r->shape[1] * k;
				mm_flop += 3 * f;
				mm_ms += r->fwd_ms + r->bwd_ms;
			}
			if (strcmp(r->op, "attention") == 0)
				att_ms += r->fwd_ms + r->bwd_ms;
		}
		{
			/* attention work: 4 dot products of dh per allowed pair per head fwd (qk, pv)
			 * and ~2.5x that backward: count 7 * 2 * pairs * D */
			HwAttnMaskInfo info = { .B = b->B, .S = b->S, .R = b->R, .column_ids = b->column_ids,
									.seq_row_ids = b->seq_row_ids, .is_padding = b->is_padding, .fk_adj = b->fk_adj };
			HwMaskKind     kinds[3] = {HW_MASK_OUTBOUND, HW_MASK_INBOUND, HW_MASK_COLUMN};
			const uint16_t *perms[3] = {b->out_perm, b->in_perm, b->col_perm};
			int64_t        pairs = 0;

			for (int k = 0; k < 3; k++)
			{
				HwAttnPlan *p;

				info.perm = perms[k];
				p = attn_plan_create(&info, kinds[k], &err);
				pairs += attn_plan_allowed_pairs(p);
				attn_plan_free(p);
			}
			att_flop = 7.0 * 2.0 * (double) pairs * D * c.n_layers;
		}
		printf("\n%s: D=%d H=%d L=%d B=%d S=%d F=%d, %d threads, training GEMMs in %s%s, last layer's tail on %s\n",
			   presets[pi], D, c.n_heads, c.n_layers, c.batch_size, c.seq_len, F, threads,
			   hw_precision_name(hw_model_train_precision(m)),
			   f32_blas ? " (fp32 on OpenBLAS)" : hw_model_train_precision(m) == HW_PRECISION_BF16 && !no_amx &&
			   hw_backend_cpu_amx_supported() ? " (on AMX tiles)" : "",
			   full_tail ? "every cell" : "the target cells");
		printf("  step %.1f ms, %.0f tokens/s\n", best, N / (best / 1e3));
		if (hw_model_has_ema(m))
		{
			/* the average's update alone, as the optimiser step runs it (best of 20) */
			float  *pa = hw_model_device_buffer(m, 0), *ea = hw_model_device_buffer(m, 4);
			double ema_best = 1e30;

			for (int k = 0; k < 20; k++)
			{
				double t0 = hw_now_ms(), ms;

				be->ops->axpby(be, ea, 0.01f, pa, 0.99f, (size_t) hw_model_numel(m));
				ms = hw_now_ms() - t0;
				if (ms < ema_best)
					ema_best = ms;
			}
			printf("  parameter average (ema_decay %g): %lld floats, update %.3f ms = %.2f%% of the step\n",
				   ema, (long long) hw_model_numel(m), ema_best, 100 * ema_best / best);
		}
		printf("RESULT impl=c preset=%s B=%d S=%d ms_per_step=%.1f tokens_per_s=%.1f\n", presets[pi],
			   c.batch_size, c.seq_len, best, N / (best / 1e3));
		printf("  model GFLOP/step %.2f (matmul %.2f, attention %.2f), achieved %.1f GFLOP/s\n",
			   (mm_flop + att_flop) / 1e9, mm_flop / 1e9, att_flop / 1e9, (mm_flop + att_flop) / (best * 1e6));
		printf("  matmul ops (GEMM + fused norm/SwiGLU): %.1f ms (%.0f%% of step), %.1f GFLOP/s = %.0f%% of sgemm peak\n", mm_ms,
			   100 * mm_ms / best, mm_flop / (mm_ms * 1e6), 100 * mm_flop / (mm_ms * 1e6) / peak);
		printf("  GEMM calls alone (incl. optimiser Newton-Schulz): %.1f GFLOP in %.1f ms (%.0f%% of step), "
			   "%.1f GFLOP/s = %.0f%% of sgemm peak\n", best_gemm_flop / 1e9, best_gemm_ms, 100 * best_gemm_ms / best,
			   best_gemm_flop / (best_gemm_ms * 1e6), 100 * best_gemm_flop / (best_gemm_ms * 1e6) / peak);
		printf("  by CPU time (robust on a shared machine): step %.0f CPU-ms, GEMM %.1f GFLOP per CPU-second = %.0f%% "
			   "of one-thread sgemm peak; idle-machine estimate %.0f tokens/s on %d cores\n", best_step_cpu,
			   best_gemm_flop / (best_gemm_cpu * 1e6), 100 * best_gemm_flop / (best_gemm_cpu * 1e6) / peak_core_cpu,
			   N / (best_step_cpu / threads / 1e3), threads);
		printf("  attention (fwd+bwd, all layers): %.1f ms (%.0f%% of step)\n", att_ms, 100 * att_ms / best);
		if (tape)
		{
			/* aggregate per op */
			const char *ops[32];
			double      fw[32] = {0}, bw[32] = {0};
			int         no = 0;

			for (int i = 0; i < t->n; i++)
			{
				int j;

				for (j = 0; j < no; j++)
					if (strcmp(ops[j], t->rec[i].op) == 0)
						break;
				if (j == no && no < 32)
					ops[no++] = t->rec[i].op;
				fw[j] += t->rec[i].fwd_ms;
				bw[j] += t->rec[i].bwd_ms;
			}
			for (int j = 0; j < no; j++)
				printf("    %-20s fwd %8.2f ms  bwd %8.2f ms\n", ops[j], fw[j], bw[j]);
		}
		/* block-sparse vs dense reference attention on one layer's shapes (forward only) */
		if (c.seq_len <= 1024)
		{
			int            H = c.n_heads, dh = D / H;
			float         *q = malloc(sizeof(float) * N * D), *k = malloc(sizeof(float) * N * D),
						  *v = malloc(sizeof(float) * N * D), *o = malloc(sizeof(float) * N * D),
						  *lse = malloc(sizeof(float) * N * H);
			HwAttnMaskInfo info = { .B = b->B, .S = b->S, .R = b->R, .column_ids = b->column_ids,
									.seq_row_ids = b->seq_row_ids, .is_padding = b->is_padding,
									.fk_adj = b->fk_adj, .perm = b->out_perm };
			HwAttnPlan    *p = attn_plan_create(&info, HW_MASK_OUTBOUND, &err);
			double         t0, ts, td;

			for (int i = 0; i < N * D; i++)
			{
				q[i] = (float) ((i * 7919) % 1000) * 1e-3f;
				k[i] = (float) ((i * 104729) % 1000) * 1e-3f;
				v[i] = (float) ((i * 31) % 1000) * 1e-3f;
			}
			t0 = hw_now_ms();
			attn_block_sparse_forward(o, lse, q, k, v, p, H, dh);
			ts = hw_now_ms() - t0;
			t0 = hw_now_ms();
			attn_dense_reference_forward(o, lse, q, k, v, &info, HW_MASK_OUTBOUND, H, dh);
			td = hw_now_ms() - t0;
			printf("  attention fwd, outbound mask, one sublayer: block-sparse %.1f ms, dense reference %.1f ms (%.1fx); "
				   "allowed pairs %.2f%% of S^2\n", ts, td, td / ts,
				   100.0 * attn_plan_allowed_pairs(p) / ((double) b->B * b->S * b->S));
			attn_plan_free(p);
			free(q); free(k); free(v); free(o); free(lse);
		}
		fflush(stdout);
		hw_batch_free(b);
		hw_model_free(m);
		hw_backend_destroy(be);
		free(colt);
		free(catt);
	}
	return 0;
}
