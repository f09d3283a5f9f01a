/*
 * train_step_cuda.c: training-step throughput of the CUDA backend.
 *
 *   make gpu-bench                       (base preset, 20 timed steps)
 *   bench/bin/train_step_cuda [--preset base|small|tiny] [--steps N] [--warmup N]
 *                             [--gemm bf16|bf16x|tf32|fp32] [--device N] [--cpu-steps N]
 *                             [--attention]
 *
 * Prints ms per step, tokens/s, model GFLOP per step, achieved TFLOP/s and
 * MFU against the dense bf16 GEMM peak measured with cuBLAS in the same run
 * (8192^3, median of 10), and, with --cpu-steps > 0, the CPU backend's step
 * time on the same batch for the GPU/CPU throughput ratio.  A benchmark: it
 * prints figures and never decides pass/fail.  Without a GPU it says so and
 * exits 0 without measuring anything.
 *
 * --attention also times the attention entries alone on the same batch (the
 * kernel workbench of llm.c's dev/cuda, through the backend table): per mask
 * kind, forward and backward ms on the GPU and on the CPU backend, allowed
 * pairs and the share of the dense S^2 work that the block-sparse plan does.
 *
 * Model FLOPs per step (the MFU numerator, the usual convention: what the
 * model needs, not what the kernels do):
 *   matmuls: 6 * N_tokens * (L * (A * 5 D^2 + 3 D F))   forward 2, backward 4
 *            (A attention sublayers: fused [q|k|v|gate] 4 D^2 + wo D^2; FFN
 *            [wg|wu] 2 D F + w2 D F), N_tokens = B * S including padding
 *   attention: per allowed (i,j) pair and head, 4 dh forward (q.k and p.v)
 *            and 8 dh backward: 12 dh H * allowed pairs, per sublayer and layer
 *            (allowed pairs counted by the CPU plan on the same batch)
 *   not counted: encoder, heads, norms, elementwise ops, Muon's
 *            Newton-Schulz GEMMs (optimiser work, not model FLOPs).
 */
#include "core/hw_common.h"
#include "core/backend.h"
#include "core/attention.h"
#include "core/model.h"
#include "synth_batch.h"
#include "hw_cuda_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double
attention_pairs(const HwBatch *b, int full)
{
	const uint16_t *perms[4] = { b->col_perm, b->out_perm, b->in_perm, NULL };
	double total = 0;
	for (int k = 0; k < (full ? 4 : 3); k++)
	{
		HwAttnMaskInfo mi = { b->B, b->S, b->R, b->column_ids, b->seq_row_ids, b->is_padding, b->fk_adj, perms[k] };
		HwError err = {0};
		HwAttnPlan *p = attn_plan_create(&mi, (HwMaskKind) k, &err);
		if (p)
		{
			total += (double) attn_plan_allowed_pairs(p);
			attn_plan_free(p);
		}
	}
	return total;
}

static double
time_attention(HwBackend *be, const HwBatch *b, int kind, int H, int dh, int reps, double *bw_ms)
{
	const uint16_t *perms[4] = { b->col_perm, b->out_perm, b->in_perm, NULL };
	HwAttnMaskInfo mi = { b->B, b->S, b->R, b->column_ids, b->seq_row_ids, b->is_padding, b->fk_adj, perms[kind] };
	size_t n = (size_t) b->B * b->S * H * dh;
	HwError err = {0};
	float *host = malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		host[i] = (float) ((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	float *q = be->ops->alloc(be, n * 4), *k = be->ops->alloc(be, n * 4), *v = be->ops->alloc(be, n * 4);
	float *o = be->ops->alloc(be, n * 4), *d = be->ops->alloc(be, n * 4);
	float *dq = be->ops->alloc(be, n * 4), *dk = be->ops->alloc(be, n * 4), *dv = be->ops->alloc(be, n * 4);
	float *lse = be->ops->alloc(be, (size_t) b->B * H * b->S * 4);
	double fw = -1;
	*bw_ms = -1;
	void *plan = NULL;
	if (q && k && v && o && d && dq && dk && dv && lse)
	{
		be->ops->memcpy_h2d(be, q, host, n * 4);
		be->ops->memcpy_h2d(be, k, host, n * 4);
		be->ops->memcpy_h2d(be, v, host, n * 4);
		be->ops->memcpy_h2d(be, d, host, n * 4);
		plan = be->ops->attn_plan_create(be, &mi, (HwMaskKind) kind, &err);
	}
	if (plan)
	{
		be->ops->attn_forward(be, o, lse, q, k, v, plan, H, dh);      /* warm-up */
		be->ops->synchronize(be);
		double t0 = now_s();
		for (int r = 0; r < reps; r++)
			be->ops->attn_forward(be, o, lse, q, k, v, plan, H, dh);
		be->ops->synchronize(be);
		fw = (now_s() - t0) * 1e3 / reps;
		t0 = now_s();
		for (int r = 0; r < reps; r++)
			be->ops->attn_backward(be, dq, dk, dv, d, o, lse, q, k, v, plan, H, dh);
		be->ops->synchronize(be);
		*bw_ms = (now_s() - t0) * 1e3 / reps;
		be->ops->attn_plan_free(be, plan);
	}
	float *bufs[] = { q, k, v, o, d, dq, dk, dv, lse };
	for (int i = 0; i < 9; i++)
		be->ops->free(be, bufs[i]);
	free(host);
	return fw;
}

/*
 * ms per training step over `steps` steps after `warmup`.  prebuilt 0: each
 * step synthesises its batch inside the timed loop (host work the worker's
 * prefetch thread would overlap: a conservative figure); prebuilt > 0: that
 * many batches are built before the clock starts and reused in turn, so the
 * figure is hw_model_train_step alone (its host-side preparation included).
 * Each step ends with a device->host copy of the loss (synchronous), so wall
 * time covers all GPU work.  *synth_ms (may be NULL): mean ms to synthesise
 * one batch, timed while prebuilding.
 */
static int
time_steps(HwModel *m, const HwSynthSpec *sp, int warmup, int steps, int prebuilt, double *ms_per_step,
		   double *synth_ms, float *last_loss, HwError *err)
{
	HwBatch *pre[8] = {0};
	double   t0 = now_s();
	if (prebuilt > 8)
		prebuilt = 8;
	for (int i = 0; i < prebuilt; i++)
		pre[i] = hw_synth_batch(sp, (uint64_t) i);
	if (synth_ms && prebuilt > 0)
		*synth_ms = (now_s() - t0) * 1e3 / prebuilt;
	int rc = HW_OK;
	for (int s = 0; s < warmup + steps && rc == HW_OK; s++)
	{
		HwBatch *b = prebuilt ? pre[s % prebuilt] : hw_synth_batch(sp, (uint64_t) s);
		HwStepResult r;
		if (s == warmup)
			t0 = now_s();
		rc = hw_model_train_step(m, b, &r, err);
		if (!prebuilt)
			hw_batch_free(b);
		if (rc == HW_OK)
			*last_loss = r.loss;
	}
	*ms_per_step = (now_s() - t0) * 1e3 / (steps ? steps : 1);
	for (int i = 0; i < prebuilt; i++)
		hw_batch_free(pre[i]);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *preset = "base", *gemm = "bf16";
	int steps = 20, warmup = 3, device = 0, cpu_steps = 2, attention = 0;
	for (int i = 1; i < argc; i++)
	{
		if (!strcmp(argv[i], "--preset") && i + 1 < argc) preset = argv[++i];
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--gemm") && i + 1 < argc) gemm = argv[++i];
		else if (!strcmp(argv[i], "--device") && i + 1 < argc) device = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cpu-steps") && i + 1 < argc) cpu_steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--attention")) attention = 1;
		else
		{
			fprintf(stderr, "usage: %s [--preset P] [--steps N] [--warmup N] [--gemm MODE] [--device N] [--cpu-steps N]\n", argv[0]);
			return 2;
		}
	}
	if (hw_cuda_device_count() == 0)
	{
		printf("train_step_cuda: no CUDA device on this machine: nothing measured (this is not a result)\n");
		return 0;
	}

	HwError err = {0};
	HwModelConfig c;
	if (hw_model_config_preset(&c, preset, &err) != HW_OK || hw_model_config_finish(&c, &err) != HW_OK)
	{
		fprintf(stderr, "preset: %s\n", err.msg);
		return 1;
	}
	if (hw_backend_cuda_set_gemm_mode(gemm) != HW_OK)
	{
		fprintf(stderr, "unknown --gemm %s (bf16, bf16x, tf32, fp32)\n", gemm);
		return 1;
	}
	HwBackend *gpu = hw_backend_cuda_create(device, &err);
	if (!gpu)
	{
		fprintf(stderr, "CUDA backend: %s\n", err.msg);
		return 1;
	}
	char desc[256];
	hw_backend_cuda_describe(gpu, desc, sizeof(desc));
	double peak = 0;
	if (hw_backend_cuda_bf16_peak(gpu, 8192, &peak, &err) != HW_OK)
	{
		fprintf(stderr, "bf16 peak: %s\n", err.msg);
		return 1;
	}

	uint16_t *colt = NULL, *catt = NULL;
	hw_synth_tables(c.d_text, 3, &colt, &catt);
	HwModel *m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, gpu, &err);
	if (!m)
	{
		HwError e2 = {0};
		hw_backend_cuda_last_error(gpu, &e2);
		fprintf(stderr, "model: %s %s\n", err.msg, e2.msg);
		return 1;
	}
	HwSynthSpec sp = { .B = c.batch_size, .S = c.seq_len, .d_text = c.d_text,
					   .target_stype = HW_ST_NUMERICAL, .seed = 1 };

	/* FLOPs of the model on batch 0 (all batches of the stream are alike) */
	HwBatch *b0 = hw_synth_batch(&sp, 0);
	double D = c.d_model, F = c.d_ff, L = c.n_layers, A = c.full_attention ? 4 : 3;
	double ntok = (double) c.batch_size * c.seq_len, npad = 0;
	for (int64_t i = 0; i < (int64_t) b0->B * b0->S; i++)
		npad += b0->is_padding[i];
	double mm_flops = 6.0 * ntok * L * (A * 5 * D * D + 3 * D * F);
	double attn_flops = 12.0 * (D / c.n_heads) * c.n_heads * attention_pairs(b0, c.full_attention) * L;
	double flops = mm_flops + attn_flops;
	hw_batch_free(b0);

	double ms = 0, ms_synth_in_loop = 0, synth_ms = 0;
	float loss = 0;
	if (time_steps(m, &sp, warmup, steps, 4, &ms, &synth_ms, &loss, &err) != HW_OK ||
		time_steps(m, &sp, 1, steps < 5 ? steps : 5, 0, &ms_synth_in_loop, NULL, &loss, &err) != HW_OK)
	{
		HwError e2 = {0};
		hw_backend_cuda_last_error(gpu, &e2);
		fprintf(stderr, "training step: %s %s\n", err.msg, e2.msg);
		return 1;
	}
	double tflops = flops / (ms * 1e-3) / 1e12;
	printf("device        %s\n", desc);
	printf("preset        %s: D=%d H=%d L=%d S=%d B=%d F=%d, gemm %s\n", preset, c.d_model, c.n_heads,
		   c.n_layers, c.seq_len, c.batch_size, c.d_ff, gemm);
	printf("bf16 peak     %.1f TFLOP/s (cuBLAS 8192^3, bf16 in, fp32 accumulate, median of 10)\n", peak);
	printf("step          %.2f ms  (%d timed steps after %d warm-up, 4 batches built beforehand and reused; last loss %.4f)\n",
		   ms, steps, warmup, loss);
	printf("batch synth   %.2f ms per batch on the host (%.2f ms per step when each step also builds its batch:\n"
		   "              the worker's prefetch thread overlaps that with training)\n", synth_ms, ms_synth_in_loop);
	printf("tokens/s      %.0f (all B*S positions); %.0f non-padding\n", ntok / (ms * 1e-3),
		   (ntok - npad) / (ms * 1e-3));
	printf("model GFLOP   %.1f per step (matmuls %.1f, attention %.1f)\n", flops / 1e9, mm_flops / 1e9, attn_flops / 1e9);
	printf("achieved      %.1f TFLOP/s = MFU %.1f%% of the measured bf16 peak\n", tflops, 100 * tflops / peak);
	printf("peak memory   %.2f GiB (headwater's allocations on the device)\n",
		   hw_backend_cuda_peak_bytes(gpu) / 1073741824.0);
	hw_model_free(m);

	if (attention)
	{
		HwBatch *b = hw_synth_batch(&sp, 0);
		HwBackend *cpu = hw_backend_cpu_create(0, &err);
		const char *names[4] = { "column", "outbound", "inbound", "full" };
		int dh = c.d_model / c.n_heads;
		printf("attention     per call, H=%d dh=%d, B=%d S=%d (GPU: mean of 10; CPU: 1)\n", c.n_heads, dh, b->B, b->S);
		for (int kind = 0; kind < 4; kind++)
		{
			HwAttnMaskInfo mi = { b->B, b->S, b->R, b->column_ids, b->seq_row_ids, b->is_padding, b->fk_adj,
								  kind == 0 ? b->col_perm : kind == 1 ? b->out_perm : kind == 2 ? b->in_perm : NULL };
			HwError e2 = {0};
			HwAttnPlan *p = attn_plan_create(&mi, (HwMaskKind) kind, &e2);
			double pairs = p ? (double) attn_plan_allowed_pairs(p) : 0;
			if (p) attn_plan_free(p);
			double gb = 0, cb = 0;
			double gf = time_attention(gpu, b, kind, c.n_heads, dh, 10, &gb);
			double cf = cpu ? time_attention(cpu, b, kind, c.n_heads, dh, 1, &cb) : -1;
			printf("  %-9s allowed pairs %.3g (%.2f%% of B*S^2)  GPU fwd %.3f ms bwd %.3f ms | CPU fwd %.1f ms bwd %.1f ms\n",
				   names[kind], pairs, 100.0 * pairs / ((double) b->B * b->S * b->S), gf, gb, cf, cb);
		}
		if (cpu) hw_backend_destroy(cpu);
		hw_batch_free(b);
		HwError e3 = {0};
		if (hw_backend_cuda_last_error(gpu, &e3) != HW_OK)
			printf("  CUDA error during the attention timing: %s\n", e3.msg);
	}
	hw_backend_destroy(gpu);

	if (cpu_steps > 0)
	{
		HwBackend *cpu = hw_backend_cpu_create(0, &err);
		HwModel *mc = cpu ? hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, cpu, &err) : NULL;
		double cms = 0;
		float closs = 0;
		if (mc && time_steps(mc, &sp, 1, cpu_steps, 2, &cms, NULL, &closs, &err) == HW_OK)
			printf("CPU backend   %.1f ms/step on the same preset (%d steps): GPU is %.1fx the CPU throughput\n",
				   cms, cpu_steps, cms / ms);
		else
			printf("CPU backend   not measured: %s\n", err.msg);
		if (mc) hw_model_free(mc);
		if (cpu) hw_backend_destroy(cpu);
	}
	free(colt);
	free(catt);
	return 0;
}
