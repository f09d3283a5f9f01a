/*
 * test_cuda_inputs.c: what the CUDA backend takes from the host and how it
 * fails: attention plan validation, uploads through the staging slots, and
 * (host simulation only) CUDA errors and exceptions injected into the
 * runtime.
 */
#include "gpu_test.h"

/* ---------------------------------------------------------------- plan inputs */

/* The CUDA plan validates perm and rows on the host before uploading, with
 * the CPU plan's check (src/core/attention_check.h): both must reject the
 * same inputs with the same message (out-of-range perm values would make the
 * kernels read and write out of bounds; duplicates leave rows unwritten). */
void
test_plan_validation(void)
{
	TEST_BEGIN("attention plan inputs: CPU and GPU accept and reject the same (perm, rows, B = 0)");
	HwSynthSpec sp = { .B = 3, .S = 150, .d_text = 16, .target_stype = HW_ST_NUMERICAL, .seed = 4 };
	HwBatch *b = hw_synth_batch(&sp, 0);
	int B = b->B, S = b->S;
	uint16_t *perm = malloc((size_t) B * S * 2), *rows = malloc((size_t) B * S * 2);
	memcpy(perm, b->col_perm, (size_t) B * S * 2);
	memcpy(rows, b->seq_row_ids, (size_t) B * S * 2);
	HwAttnMaskInfo mi = { B, S, b->R, b->column_ids, rows, b->is_padding, b->fk_adj, perm };
	struct { const char *what; int kind; uint16_t *arr; int pos, val; } cases[] = {
		{ "perm value = S", HW_MASK_COLUMN, perm, 2 * S + 7, S },
		{ "perm value 65535", HW_MASK_COLUMN, perm, 5, 65535 },
		{ "duplicate in perm", HW_MASK_COLUMN, perm, S + S - 1, -1 },
		{ "row >= R", HW_MASK_OUTBOUND, rows, -1, b->R },
	};
	for (int ci = 0; ci < 4; ci++)
	{
		int pos = cases[ci].pos, val = cases[ci].val;
		if (pos < 0)               /* a non-padding position of sequence 1 */
			for (pos = S; pos < 2 * S && b->is_padding[pos]; pos++)
				;
		if (val < 0)
			val = cases[ci].arr[S];   /* a copy of the first entry of sequence 1 */
		uint16_t save = cases[ci].arr[pos];
		cases[ci].arr[pos] = (uint16_t) val;
		mi.perm = cases[ci].kind == HW_MASK_COLUMN ? perm : NULL;
		HwError e1 = {0}, e2 = {0};
		void *pc = cpu->ops->attn_plan_create(cpu, &mi, (HwMaskKind) cases[ci].kind, &e1);
		void *pg = gpu->ops->attn_plan_create(gpu, &mi, (HwMaskKind) cases[ci].kind, &e2);
		int ok = !pc && !pg && e1.code == HW_ERR_INVALID && e2.code == HW_ERR_INVALID && strcmp(e1.msg, e2.msg) == 0;
		printf("  %s %-18s cpu: %s | gpu: %s\n", ok ? "ok  " : "FAIL", cases[ci].what, e1.msg, e2.msg);
		EXPECT(ok);
		if (pc) cpu->ops->attn_plan_free(cpu, pc);
		if (pg) gpu->ops->attn_plan_free(gpu, pg);
		cases[ci].arr[pos] = save;
	}
	/* valid inputs, and an empty batch (B = 0), pass on both */
	for (int kind = 0; kind < 4; kind++)
		for (int empty = 0; empty < 2; empty++)
		{
			HwError e1 = {0}, e2 = {0};
			mi.B = empty ? 0 : B;
			mi.perm = kind == HW_MASK_COLUMN ? perm : kind == HW_MASK_OUTBOUND ? b->out_perm :
				kind == HW_MASK_INBOUND ? b->in_perm : NULL;
			void *pc = cpu->ops->attn_plan_create(cpu, &mi, (HwMaskKind) kind, &e1);
			void *pg = gpu->ops->attn_plan_create(gpu, &mi, (HwMaskKind) kind, &e2);
			if (!pc || !pg)
				printf("  FAIL valid input, kind %d, B %d: cpu %s / gpu %s\n", kind, mi.B, e1.msg, e2.msg);
			EXPECT(pc && pg);
			if (pg && empty)
			{
				float *o = gpu->ops->alloc(gpu, 64);       /* B = 0: forward and backward do nothing */
				gpu->ops->attn_forward(gpu, o, o, o, o, o, pg, 2, 16);
				gpu->ops->attn_backward(gpu, o, o, o, o, o, o, o, o, o, pg, 2, 16);
				gpu->ops->free(gpu, o);
			}
			if (pc) cpu->ops->attn_plan_free(cpu, pc);
			if (pg) gpu->ops->attn_plan_free(gpu, pg);
		}
	printf("  ok   valid perms of the 4 kinds and B = 0 accepted by both\n");
	EXPECT(gpu_ok("plan validation"));        /* a rejected plan leaves no kept error */
	free(perm);
	free(rows);
	hw_batch_free(b);
	TEST_END();
}

/* ---------------------------------------------------------------- uploads */

static void
fill_bytes(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	for (size_t i = 0; i < n; i++)
	{
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		p[i] = (uint8_t) (x >> 24);
	}
}

/* memcpy_h2d goes through two pinned 8 MiB staging slots on a copy stream
 * (memory.cu): sizes around and above one slot, odd sizes and offsets,
 * back-to-back uploads that reuse the slots, the host source overwritten as
 * soon as the call returns (the contract: the data is already staged), and an
 * upload into a buffer that a queued kernel still reads (the copy must wait). */
void
test_uploads(void)
{
	TEST_BEGIN("host->device uploads through the pinned staging slots (sizes above the 8 MiB slot)");
	const size_t slot = (size_t) 8 << 20;
	const size_t sizes[] = { 1, 4097, slot - 1, slot, slot + 1, 2 * slot + 12345, 5 * slot / 2 + 3 };
	const size_t cap = 3 * slot + 64;
	uint8_t *src = malloc(cap), *keep = malloc(cap), *back = malloc(cap);
	uint8_t *d = gpu->ops->alloc(gpu, cap), *d2 = gpu->ops->alloc(gpu, cap);
	int ok = src && keep && back && d && d2;
	for (size_t si = 0; ok && si < sizeof(sizes) / sizeof(sizes[0]); si++)
		for (size_t off = 0; off < 8; off += 3)
		{
			size_t n = sizes[si];
			gpu->ops->memset(gpu, d, 0xab, cap);
			fill_bytes(src, n, si * 10 + off);
			memcpy(keep, src, n);
			gpu->ops->memcpy_h2d(gpu, d + off, src, n);
			fill_bytes(src, n, 999);            /* reusable at once: must not reach the device */
			gpu->ops->memcpy_d2h(gpu, back, d, off + n + 16);
			int good = memcmp(back + off, keep, n) == 0;
			for (size_t i = 0; i < off; i++) good &= back[i] == 0xab;
			for (size_t i = off + n; i < off + n + 16; i++) good &= back[i] == 0xab;
			if (!good || si == sizeof(sizes) / sizeof(sizes[0]) - 1)
				printf("  %s %zu bytes at offset %zu (%.2f slots)\n", good ? "ok  " : "FAIL", n, off, (double) n / slot);
			ok &= good;
		}
	/* back-to-back: 2 x 2.5 slots, then read both */
	if (ok)
	{
		size_t n = 5 * slot / 2 + 3;
		uint8_t *k2 = malloc(n);
		fill_bytes(src, n, 1); memcpy(keep, src, n);
		gpu->ops->memcpy_h2d(gpu, d, src, n);
		fill_bytes(src, n, 2); memcpy(k2, src, n);
		gpu->ops->memcpy_h2d(gpu, d2, src, n);
		gpu->ops->memcpy_d2h(gpu, back, d, n);
		int good = memcmp(back, keep, n) == 0;
		gpu->ops->memcpy_d2h(gpu, back, d2, n);
		good &= memcmp(back, k2, n) == 0;
		printf("  %s two uploads of %.2f slots back to back\n", good ? "ok  " : "FAIL", (double) n / slot);
		ok &= good;
		free(k2);
	}
	/* an upload into x while a queued kernel (y = 2 x) still reads the old x */
	if (ok)
	{
		size_t nf = (3 * slot) / 4;          /* 3 slots of floats */
		float *x = (float *) d, *y = (float *) d2, *h = (float *) src, *hy = (float *) back;
		for (size_t i = 0; i < nf; i++) h[i] = (float) (i % 1000);
		gpu->ops->memcpy_h2d(gpu, x, h, nf * 4);
		gpu->ops->memset(gpu, y, 0, nf * 4);
		gpu->ops->axpby(gpu, y, 2.0f, x, 0.0f, nf);
		for (size_t i = 0; i < nf; i++) h[i] = -1.0f;
		gpu->ops->memcpy_h2d(gpu, x, h, nf * 4);
		gpu->ops->memcpy_d2h(gpu, hy, y, nf * 4);
		size_t bad = 0;
		for (size_t i = 0; i < nf; i++) bad += hy[i] != 2.0f * (float) (i % 1000);
		printf("  %s a queued kernel reads x before the next upload overwrites it (%zu of %zu wrong)\n",
			   bad ? "FAIL" : "ok  ", bad, nf);
		ok &= bad == 0;
	}
	EXPECT(ok);
	EXPECT(gpu_ok("uploads"));
	gpu->ops->free(gpu, d);
	gpu->ops->free(gpu, d2);
	free(src); free(keep); free(back);
	TEST_END();
}

/* ---------------------------------------------------------------- fault injection (host simulation) */

/* Runs only in the host simulation, where hw_sim_inject (gpu_test.h) exists. */
void
test_faults(void)
{
	TEST_BEGIN("fault injection (host simulation): CUDA errors and C++ exceptions reach the caller as errors");
	HwError e = {0};
	int rc;

	/* a C++ exception inside a table entry stays inside it */
	void *buf = gpu->ops->alloc(gpu, 256);
	hw_sim_inject(1, 0);
	gpu->ops->memset(gpu, buf, 0, 256);
	rc = hw_backend_cuda_last_error(gpu, &e);
	int ok = rc == HW_ERR_INTERNAL && strstr(e.msg, "C++ exception in the CUDA backend's cu_memset") &&
		strstr(e.msg, "injected");
	printf("  %s exception in a table entry: %s\n", ok ? "ok  " : "FAIL", e.msg);
	EXPECT(ok);
	gpu->ops->free(gpu, buf);

	/* ... and inside an extern "C" entry */
	double tf = 0;
	hw_sim_inject(1, 0);
	memset(&e, 0, sizeof(e));
	rc = hw_backend_cuda_bf16_peak(gpu, 64, &tf, &e);
	ok = rc == HW_ERR_INTERNAL && strstr(e.msg, "C++ exception in hw_backend_cuda_bf16_peak");
	printf("  %s exception in an extern \"C\" entry: %s\n", ok ? "ok  " : "FAIL", e.msg);
	EXPECT(ok);

	/* a faulting kernel in the middle of a training step: the caller gets the
	 * CUDA error, not "loss is NaN", and the model is not updated */
	uint16_t *ct, *ca;
	HwModel *m = make_model(gpu, "tiny", 4, 64, HW_ST_NUMERICAL, &ct, &ca);
	HwSynthSpec sp = { .B = 4, .S = 64, .d_text = 32, .target_stype = HW_ST_NUMERICAL, .seed = 9 };
	HwBatch *b = hw_synth_batch(&sp, 0);
	HwStepResult r;
	uint8_t *state = NULL;
	size_t len = 0;
	ok = m && b && hw_model_train_step(m, b, &r, &e) == HW_OK;
	EXPECT(ok);
	for (int kind = 1; ok && kind <= 2; kind++)
	{
		hw_sim_inject(kind, 40);
		memset(&e, 0, sizeof(e));
		rc = hw_model_train_step(m, b, &r, &e);
		int good = rc != HW_OK && hw_model_step(m) == 1 &&
			strstr(e.msg, kind == 1 ? "cuda backend: C++ exception in the CUDA backend's" :
				   "cuda backend: CUDA error cudaErrorIllegalAddress") != NULL;
		printf("  %s %s during a step: %s\n", good ? "ok  " : "FAIL", kind == 1 ? "exception" : "kernel fault", e.msg);
		EXPECT(good);
	}
	/* reported once and cleared: the simulation has no sticky context, so the next step runs */
	if (ok)
	{
		rc = hw_model_train_step(m, b, &r, &e);
		printf("  %s next step after the error: %s\n", rc == HW_OK && hw_model_step(m) == 2 ? "ok  " : "FAIL",
			   rc == HW_OK ? "trained" : e.msg);
		EXPECT(rc == HW_OK && hw_model_step(m) == 2);
		/* a training state is never made from a failed device's NaN bytes */
		hw_sim_inject(2, 0);
		rc = hw_model_state_serialize(m, &state, &len, &e);
		printf("  %s no training state from a failed copy: %s\n", rc != HW_OK && !state ? "ok  " : "FAIL", e.msg);
		EXPECT(rc != HW_OK && !state);
		free(state);
	}
	hw_sim_inject(0, -1);
	if (m) hw_model_free(m);
	if (b) hw_batch_free(b);
	free(ct); free(ca);
	EXPECT(gpu_ok("fault injection"));
	TEST_END();
}
