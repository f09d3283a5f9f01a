/*
 * test_cuda_nccl.c: the multi-GPU path: NCCL data-parallel training, the
 * NCCL collective as the training worker uses it, grouped calls.
 */
#include "gpu_test.h"

/* ---------------------------------------------------------------- NCCL */

typedef struct Rank
{
	int          rank, device, steps, ok;
	HwCudaNccl  *nc;
	float        final_loss;
	float       *params;        /* host copy after training */
	int64_t      n;
	char         msg[1200];
} Rank;

/* One thread per GPU: own backend and model, own shard of batches
 * (index rank + world*s), gradients averaged with NCCL before each update. */
static void *
rank_main(void *arg)
{
	Rank *r = arg;
	HwError e = {0};
	HwBackend *be = hw_backend_cuda_create(r->device, &e);
	uint16_t *ct = NULL, *ca = NULL;
	HwModel *m = NULL;
	float *grad = NULL, *dbuf = NULL;
	r->ok = 0;
	if (!be) { snprintf(r->msg, sizeof(r->msg), "backend: %s", e.msg); return NULL; }
	m = make_model(be, "tiny", 8, 128, HW_ST_NUMERICAL, &ct, &ca);
	if (!m) { snprintf(r->msg, sizeof(r->msg), "model create failed"); goto out; }
	r->n = hw_model_numel(m);
	grad = malloc(r->n * 4);
	r->params = malloc(r->n * 4);
	dbuf = be->ops->alloc(be, r->n * 4);
	if (!grad || !r->params || !dbuf) { snprintf(r->msg, sizeof(r->msg), "out of memory"); goto out; }
	/* start equal: broadcast rank 0's parameters */
	hw_model_get_flat(m, 0, r->params);
	be->ops->memcpy_h2d(be, dbuf, r->params, r->n * 4);
	if (hw_cuda_nccl_broadcast(r->nc, r->rank, be, dbuf, r->n, &e) != HW_OK)
	{ snprintf(r->msg, sizeof(r->msg), "broadcast: %s", e.msg); goto out; }
	be->ops->memcpy_d2h(be, r->params, dbuf, r->n * 4);
	hw_model_set_flat(m, 0, r->params);
	for (int s = 0; s < r->steps; s++)
	{
		HwSynthSpec sp = { .B = 8, .S = 128, .d_text = 32, .target_stype = HW_ST_NUMERICAL, .seed = 33 };
		HwBatch *b = hw_synth_batch(&sp, (uint64_t) (r->rank + 1000 * s));
		float loss, gn, lr;
		int rc = hw_model_forward_backward(m, b, &loss, &e);
		hw_batch_free(b);
		if (rc != HW_OK) { snprintf(r->msg, sizeof(r->msg), "forward/backward: %s", e.msg); goto out; }
		/* the model API exposes its gradient buffer as a host copy; the
		 * worker will all-reduce the device buffer in place */
		hw_model_get_flat(m, 1, grad);
		be->ops->memcpy_h2d(be, dbuf, grad, r->n * 4);
		if (hw_cuda_nccl_allreduce_avg(r->nc, r->rank, be, dbuf, r->n, &e) != HW_OK)
		{ snprintf(r->msg, sizeof(r->msg), "all-reduce: %s", e.msg); goto out; }
		be->ops->memcpy_d2h(be, grad, dbuf, r->n * 4);
		hw_model_set_flat(m, 1, grad);
		if (hw_model_optimizer_step(m, &gn, &lr, &e) != HW_OK)
		{ snprintf(r->msg, sizeof(r->msg), "optimizer: %s", e.msg); goto out; }
		r->final_loss = loss;
	}
	hw_model_get_flat(m, 0, r->params);
	r->ok = 1;
out:
	if (!r->ok && be && hw_backend_cuda_last_error(be, &e) != HW_OK)
		snprintf(r->msg + strlen(r->msg), sizeof(r->msg) - strlen(r->msg), " (CUDA: %s)", e.msg);
	if (dbuf) be->ops->free(be, dbuf);
	if (m) hw_model_free(m);
	if (be) hw_backend_destroy(be);
	free(grad); free(ct); free(ca);
	return NULL;
}

void
test_nccl(int ngpu)
{
	char name[80];
	snprintf(name, sizeof(name), "multi-GPU data parallel with NCCL, %d GPU(s), one thread per GPU", ngpu);
	TEST_BEGIN(name);
	if (!hw_cuda_nccl_available())
	{
		printf("  FAIL headwater_cuda.so was built without NCCL\n");
		EXPECT(0);
	}
	else
	{
		int devs[8];
		HwCudaNccl *nc = NULL;
		HwError e = {0};
		for (int i = 0; i < ngpu; i++) devs[i] = i;
		if (hw_cuda_nccl_create(ngpu, devs, &nc, &e) != HW_OK)
		{
			printf("  FAIL ncclCommInitAll: %s\n", e.msg);
			EXPECT(0);
		}
		else
		{
			Rank r[8];
			pthread_t th[8];
			memset(r, 0, sizeof(r));
			for (int i = 0; i < ngpu; i++)
			{
				r[i].rank = i; r[i].device = i; r[i].steps = 5; r[i].nc = nc;
				pthread_create(&th[i], NULL, rank_main, &r[i]);
			}
			for (int i = 0; i < ngpu; i++)
				pthread_join(th[i], NULL);
			for (int i = 0; i < ngpu; i++)
			{
				printf("  %s rank %d: %s (last loss %.4f)\n", r[i].ok ? "ok  " : "FAIL", i,
					   r[i].ok ? "5 steps" : r[i].msg, r[i].final_loss);
				EXPECT(r[i].ok);
			}
			/* replicas must stay identical: same averaged gradients, same update */
			for (int i = 1; i < ngpu; i++)
				if (r[0].ok && r[i].ok)
				{
					int same = r[0].n == r[i].n && memcmp(r[0].params, r[i].params, r[0].n * 4) == 0;
					printf("  %s parameters of rank %d bit-equal to rank 0\n", same ? "ok  " : "FAIL", i);
					EXPECT(same);
				}
			for (int i = 0; i < ngpu; i++)
				free(r[i].params);
			hw_cuda_nccl_destroy(nc);
		}
	}
	TEST_END();
}

/* ------------------------------------------------ NCCL collective (worker path)
 *
 * The collective interface on NCCL (cuda/collective_nccl.cu) as the training
 * worker uses it: one thread per GPU, hw_dp_step / dp_threads.h.
 *   1. ops: the sum of rank r's buffer (r+1)*(i%7) equals the exact sum,
 *      broadcast, checksum equal / differing;
 *   2. training: W ranks x 4 steps of the tiny preset, micro-batch t*W + r on
 *      rank r; replicas bit-identical (checksums); against ONE GPU with
 *      grad_accum W on the same micro-batches: losses within 1e-3 relative,
 *      parameters within 1e-2 of their largest magnitude (NCCL's sum order
 *      is not the accumulation's; both use the default bf16 GEMMs);
 *   3. abort: rank 0 aborts, every rank's next call fails with its message;
 *   4. timeout (2+ GPUs): rank 1 never arrives, rank 0 fails within
 *      timeout + 2 s naming the timeout, and the communicators are aborted.
 * With one GPU, W = 1: 1-3 run, 2 compares W = 1 with itself (exact). */
typedef struct CollRank
{
	HwCollective *c;
	HwBackend    *be;
	int           rank, mode, rc, equal1, equal2;
	size_t        n;
	double        waited;
	HwError       err;
} CollRank;

static double
mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *
coll_rank_main(void *p)
{
	CollRank *a = p;
	HwBackend *be = a->be;
	float    *h = malloc(a->n * 4), *d = be->ops->alloc(be, a->n * 4);
	double    t0 = mono_now();

	a->rc = HW_OK;
	for (size_t i = 0; i < a->n; i++)
		h[i] = (float) ((a->rank + 1) * (int) (i % 7));
	be->ops->memcpy_h2d(be, d, h, a->n * 4);
	if (a->mode == 0)
	{
		a->rc = hw_coll_allreduce_sum(a->c, a->rank, d, a->n, &a->err);
		if (a->rc == HW_OK)
		{
			be->ops->memcpy_d2h(be, h, d, a->n * 4);
			int W = a->c->nranks;
			for (size_t i = 0; i < a->n && a->rc == HW_OK; i++)
				if (h[i] != (float) (W * (W + 1) / 2 * (int) (i % 7)))
					a->rc = hw_error_set(&a->err, HW_ERR_INTERNAL, "element %zu: %g", i, h[i]);
		}
		if (a->rc == HW_OK)
			a->rc = hw_coll_all_equal_u64(a->c, a->rank, 42, &a->equal1, &a->err);
		if (a->rc == HW_OK)
			a->rc = hw_coll_all_equal_u64(a->c, a->rank, (uint64_t) a->rank, &a->equal2, &a->err);
	}
	else if (a->mode == 1 && a->rank == 0)          /* timeout: rank 0 alone */
		a->rc = hw_coll_allreduce_sum(a->c, a->rank, d, a->n, &a->err);
	a->waited = mono_now() - t0;
	be->ops->free(be, d);
	free(h);
	return NULL;
}

typedef struct DpRun
{
	int       W, A, steps;
	HwBackend *be[8];
	HwModel  *m[8];
	float     loss[8];
	uint64_t  checksum;
	int       ok;
	char      msg[600];
} DpRun;

/* W ranks (GPUs 0..W-1) with grad_accum A; micro-batch t*W*A + v. */
static void
dp_run(DpRun *r, HwCollective *c)
{
	HwError   e = {0};
	HwDpRank *d[8] = {0};
	uint16_t *ct = NULL, *ca = NULL;
	int       V = r->W * r->A;
	HwDpThreads *th = NULL;

	r->ok = 0;
	for (int k = 0; k < r->W; k++)
	{
		r->be[k] = hw_backend_cuda_create(k, &e);
		if (!r->be[k]) { snprintf(r->msg, sizeof(r->msg), "backend %d: %s", k, e.msg); goto out; }
		r->m[k] = make_model(r->be[k], "tiny", 8, 128, HW_ST_NUMERICAL, &ct, &ca);
		free(ct); free(ca);
		if (!r->m[k]) { snprintf(r->msg, sizeof(r->msg), "model %d", k); goto out; }
	}
	for (int k = 0; k < r->W; k++)
		if (!(d[k] = hw_dp_rank_create(r->m[k], c, k, r->A, &e))) { snprintf(r->msg, sizeof(r->msg), "dp rank: %s", e.msg); goto out; }
	if (!(th = hw_dp_threads_start(d, r->W, c, &e))) { snprintf(r->msg, sizeof(r->msg), "threads: %s", e.msg); goto out; }
	for (int t = 0; t < r->steps; t++)
	{
		HwBatch     *mb[16];
		HwStepResult res;
		int          rc = HW_OK;
		uint64_t     ck = 0;
		HwSynthSpec  sp = { .B = 8, .S = 128, .d_text = 32, .target_stype = HW_ST_NUMERICAL, .seed = 41 };

		for (int v = 0; v < V; v++)
			mb[v] = hw_synth_batch(&sp, (uint64_t) (t * V + v));
		hw_dp_threads_post(th, mb, t == r->steps - 1, &e);
		while (!hw_dp_threads_wait(th, 1.0, &res, &rc, &ck, &e))
			;
		for (int v = 0; v < V; v++)
			hw_batch_free(mb[v]);
		if (rc != HW_OK) { snprintf(r->msg, sizeof(r->msg), "step %d: %s", t + 1, e.msg); goto out; }
		r->loss[t] = res.loss;
		r->checksum = ck;
	}
	r->ok = 1;
out:
	hw_dp_threads_stop(th, "test ended");
	for (int k = 0; k < r->W; k++)
		hw_dp_rank_free(d[k]);
}

static void
dp_run_free(DpRun *r)
{
	for (int k = 0; k < r->W; k++)
	{
		if (r->m[k]) hw_model_free(r->m[k]);
		if (r->be[k]) hw_backend_destroy(r->be[k]);
	}
}

void
test_nccl_collective(int ngpu)
{
	char name[96];
	snprintf(name, sizeof(name), "NCCL collective interface (worker path), %d GPU(s), one thread per GPU", ngpu);
	TEST_BEGIN(name);
	HwBackend    *bes[8] = {0};
	HwCollective *c = NULL;
	HwError       e = {0};
	CollRank      a[8];
	pthread_t     th[8];

	for (int i = 0; i < ngpu; i++)
		bes[i] = hw_backend_cuda_create(i, &e);
	/* 1. ops */
	if (hw_cuda_collective_create(ngpu, bes, 30.0, &c, &e) != HW_OK)
	{
		printf("  FAIL create: %s\n", e.msg);
		EXPECT(0);
	}
	else
	{
		memset(a, 0, sizeof(a));
		for (int i = 0; i < ngpu; i++)
		{
			a[i].c = c; a[i].be = bes[i]; a[i].rank = i; a[i].n = 1000003;
			pthread_create(&th[i], NULL, coll_rank_main, &a[i]);
		}
		for (int i = 0; i < ngpu; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < ngpu; i++)
		{
			int good = a[i].rc == HW_OK && a[i].equal1 && a[i].equal2 == (ngpu == 1);
			printf("  %s rank %d: sum exact, checksums equal / differing: %s\n", good ? "ok  " : "FAIL", i,
				   a[i].rc == HW_OK ? "yes" : a[i].err.msg);
			EXPECT(good);
		}
		/* 3. abort: the first message stays and reaches every rank */
		hw_coll_abort(c, 0, "injected failure");
		float *d0 = bes[0]->ops->alloc(bes[0], 64);
		int rc = hw_coll_allreduce_sum(c, 0, d0, 16, &e);
		int good = rc == HW_ERR_CANCELLED && strstr(e.msg, "rank 0: injected failure") != NULL;
		printf("  %s abort: later calls fail with the first message (%s)\n", good ? "ok  " : "FAIL", e.msg);
		EXPECT(good);
		bes[0]->ops->free(bes[0], d0);
		hw_coll_destroy(c);
		c = NULL;
	}
	/* 2. training: W ranks vs one GPU accumulating W micro-batches */
	{
		DpRun w = { .W = ngpu, .A = 1, .steps = 4 }, one = { .W = 1, .A = ngpu, .steps = 4 };
		HwCollective *cw = NULL;

		if (hw_cuda_collective_create(ngpu, bes, 60.0, &cw, &e) != HW_OK)
			snprintf(w.msg, sizeof(w.msg), "create: %s", e.msg);
		else
			dp_run(&w, cw);
		dp_run(&one, NULL);
		printf("  %s %d ranks trained 4 steps: %s\n", w.ok ? "ok  " : "FAIL", ngpu, w.ok ? "replicas equal (checksums)" : w.msg);
		printf("  %s 1 GPU with grad_accum %d: %s\n", one.ok ? "ok  " : "FAIL", ngpu, one.ok ? "trained" : one.msg);
		EXPECT(w.ok && one.ok);
		if (w.ok && one.ok)
		{
			int64_t n = hw_model_numel(w.m[0]);
			float  *pw = malloc(n * 4), *po = malloc(n * 4);
			double  dmax = 0, pmax = 0, lrel = 0;

			hw_model_get_flat(w.m[0], 0, pw);
			hw_model_get_flat(one.m[0], 0, po);
			for (int64_t i = 0; i < n; i++)
			{
				dmax = fmax(dmax, fabs((double) pw[i] - po[i]));
				pmax = fmax(pmax, fabs((double) po[i]));
			}
			for (int t = 0; t < 4; t++)
				lrel = fmax(lrel, fabs((double) w.loss[t] - one.loss[t]) / fmax(1e-6, fabs((double) one.loss[t])));
			int good = lrel <= 1e-3 && dmax <= 1e-2 * pmax && (ngpu > 1 || (dmax == 0 && lrel == 0));
			printf("  %s vs 1 GPU accumulating: max |loss diff| %.2e relative (<= 1e-3), max |param diff| %.2e of max |p| %.3f (<= 1e-2 of it)%s\n",
				   good ? "ok  " : "FAIL", lrel, dmax, pmax, ngpu == 1 ? ", exact with 1 GPU" : "");
			EXPECT(good);
			free(pw);
			free(po);
		}
		dp_run_free(&w);
		dp_run_free(&one);
		hw_coll_destroy(cw);
	}
	/* 4. timeout */
	if (ngpu >= 2)
	{
		HwCollective *ct = NULL;

		if (hw_cuda_collective_create(2, bes, 1.0, &ct, &e) != HW_OK)
		{
			printf("  FAIL create (timeout case): %s\n", e.msg);
			EXPECT(0);
		}
		else
		{
			memset(a, 0, sizeof(a));
			for (int i = 0; i < 2; i++)
			{
				a[i].c = ct; a[i].be = bes[i]; a[i].rank = i; a[i].n = 1024; a[i].mode = 1;
				pthread_create(&th[i], NULL, coll_rank_main, &a[i]);
			}
			for (int i = 0; i < 2; i++)
				pthread_join(th[i], NULL);
			int good = a[0].rc == HW_ERR_CANCELLED && strstr(a[0].err.msg, "timeout") && a[0].waited < 3.0;
			printf("  %s rank 1 never arrives: rank 0 fails after %.2f s (%s)\n", good ? "ok  " : "FAIL",
				   a[0].waited, a[0].err.msg);
			EXPECT(good);
			hw_coll_destroy(ct);
		}
	}
	for (int i = 0; i < ngpu; i++)
		if (bes[i]) hw_backend_destroy(bes[i]);
	TEST_END();
}

/* All ranks from one thread (ncclGroupStart/End): rank r holds r+1 + i*1e-3;
 * after the average every rank holds mean(r+1) + i*1e-3. */
void
test_nccl_grouped(int ngpu)
{
	char name[80];
	snprintf(name, sizeof(name), "NCCL grouped all-reduce average, %d GPU(s), one thread", ngpu);
	TEST_BEGIN(name);
	HwBackend *bes[8] = {0};
	float *bufs[8] = {0};
	int devs[8];
	size_t n = 1000003;
	HwCudaNccl *nc = NULL;
	HwError e = {0};
	float *h = malloc(n * 4);
	int ok = 1;
	for (int r = 0; r < ngpu && ok; r++)
	{
		devs[r] = r;
		bes[r] = hw_backend_cuda_create(r, &e);
		if (!bes[r]) { printf("  FAIL backend %d: %s\n", r, e.msg); ok = 0; break; }
		bufs[r] = bes[r]->ops->alloc(bes[r], n * 4);
		for (size_t i = 0; i < n; i++) h[i] = (float) (r + 1) + (float) (i % 1000) * 1e-3f;
		bes[r]->ops->memcpy_h2d(bes[r], bufs[r], h, n * 4);
	}
	if (ok && hw_cuda_nccl_create(ngpu, devs, &nc, &e) != HW_OK) { printf("  FAIL create: %s\n", e.msg); ok = 0; }
	if (ok && hw_cuda_nccl_allreduce_avg_all(nc, bes, bufs, n, &e) != HW_OK) { printf("  FAIL all-reduce: %s\n", e.msg); ok = 0; }
	double mean = (ngpu + 1) / 2.0;
	for (int r = 0; ok && r < ngpu; r++)
	{
		bes[r]->ops->memcpy_d2h(bes[r], h, bufs[r], n * 4);
		size_t bad = 0;
		for (size_t i = 0; i < n; i++)
			if (fabs(h[i] - (mean + (i % 1000) * 1e-3)) > 1e-5 * (1 + mean))
				bad++;
		printf("  %s rank %d: %zu of %zu values differ from the average\n", bad ? "FAIL" : "ok  ", r, bad, n);
		if (bad) ok = 0;
	}
	EXPECT(ok);
	if (nc) hw_cuda_nccl_destroy(nc);
	for (int r = 0; r < ngpu; r++)
		if (bes[r]) { bes[r]->ops->free(bes[r], bufs[r]); hw_backend_destroy(bes[r]); }
	free(h);
	TEST_END();
}
