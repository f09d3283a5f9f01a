/*
 * test_dp_step.c: data-parallel training (dp_step.h) on the CPU backend with
 * the tiny preset and synthetic batches: two ranks (threads, the in-process
 * collective, one model replica and one backend each) end with parameters,
 * moments and losses BIT-IDENTICAL to one rank accumulating the same two
 * micro-batches per step, over several steps; both ranks agree (checksum);
 * the result is not the one of micro-batch 0 alone (the test can fail); a
 * failing rank stops the other with its message.  The same through the
 * rank threads of dp_threads.h (what the training worker uses).
 */
#include "unit.h"
#include "core/dp_step.h"
#include "core/dp_threads.h"
#include "synth_batch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define DT     64
#define NSTEPS 4
#define W      2

static HwModel *
tiny_model(HwBackend *be, HwError *err)
{
	HwModelConfig c;
	uint16_t     *colt, *catt;

	hw_model_config_preset(&c, "tiny", err);
	c.d_text = DT;
	c.batch_size = 4;
	c.seq_len = 32;
	c.warmup_steps = 2;
	c.total_steps = 20;
	hw_synth_tables(DT, 3, &colt, &catt);
	HwModel *m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, err);

	free(colt);
	free(catt);
	return m;
}

/* micro-batch k of step t: stream index t * W + k (rank k's batch) */
static HwBatch *
micro_batch(int t, int k)
{
	HwSynthSpec sp = { .B = 4, .S = 32, .d_text = DT, .target_stype = 4, .seed = 5 };

	return hw_synth_batch(&sp, (uint64_t) (t * W + k));
}

typedef struct RankRun
{
	HwCollective *c;
	int           rank;
	int           fail_at;      /* step at which this rank passes a bad batch; -1 never */
	float         loss[NSTEPS];
	float        *params, *m1;
	int64_t       numel;
	uint64_t      checksum;
	int           rc;
	HwError       err;
} RankRun;

static void *
rank_main(void *p)
{
	RankRun  *a = p;
	HwBackend *be = hw_backend_cpu_create(1, &a->err);
	HwModel  *m = be ? tiny_model(be, &a->err) : NULL;
	HwDpRank *d = m ? hw_dp_rank_create(m, a->c, a->rank, 1, &a->err) : NULL;

	a->rc = d ? hw_dp_sync_from_rank0(d, &a->err) : HW_ERR_INVALID;
	for (int t = 0; t < NSTEPS && a->rc == HW_OK; t++)
	{
		HwBatch     *b = micro_batch(t, a->rank);
		HwStepResult r;

		/* at fail_at the rank has no batch (a sampler that failed) */
		HwBatch *mb[1] = {t == a->fail_at ? NULL : b};

		a->rc = hw_dp_step(d, mb, &r, &a->err);
		hw_batch_free(b);
		a->loss[t] = r.loss;
		if (a->rc == HW_OK && t % 2 == 1)
			a->rc = hw_dp_check_params(d, &a->checksum, &a->err);
	}
	if (m)
	{
		a->numel = hw_model_numel(m);
		a->params = malloc(sizeof(float) * a->numel);
		a->m1 = malloc(sizeof(float) * a->numel);
		hw_model_get_flat(m, 0, a->params);
		hw_model_get_flat(m, 2, a->m1);
	}
	hw_dp_rank_free(d);
	hw_model_free(m);
	hw_backend_destroy(be);
	return NULL;
}

/* One rank, `accum` micro-batches per step (accum 1: micro-batch 0 only). */
static int
one_rank(int accum, float *loss, float **params, float **m1, uint64_t *checksum, HwError *err)
{
	HwBackend *be = hw_backend_cpu_create(2, err);
	HwModel   *m = tiny_model(be, err);
	HwDpRank  *d = hw_dp_rank_create(m, NULL, 0, accum, err);
	int        rc = d ? HW_OK : HW_ERR_INVALID;

	for (int t = 0; t < NSTEPS && rc == HW_OK; t++)
	{
		HwBatch     *mb[W] = {micro_batch(t, 0), micro_batch(t, 1)};
		HwStepResult r;

		rc = hw_dp_step(d, mb, &r, err);
		loss[t] = r.loss;
		hw_batch_free(mb[0]);
		hw_batch_free(mb[1]);
	}
	if (rc == HW_OK)
		rc = hw_dp_check_params(d, checksum, err);
	*params = malloc(sizeof(float) * hw_model_numel(m));
	*m1 = malloc(sizeof(float) * hw_model_numel(m));
	hw_model_get_flat(m, 0, *params);
	hw_model_get_flat(m, 2, *m1);
	hw_dp_rank_free(d);
	hw_model_free(m);
	hw_backend_destroy(be);
	return rc;
}

UNIT_TEST(dp_two_ranks_equal_one_rank_accumulating_two_bitwise)
{
	HwError       err = {0};
	HwCollective *c = hw_coll_local_create(W, 120.0, &err);
	RankRun       a[W];
	pthread_t     th[W];
	float         loss1[NSTEPS], loss0[NSTEPS], *p1, *m1, *p0, *m0;
	uint64_t      ck1 = 0, ck0 = 0;

	CHECK(c != NULL);
	memset(a, 0, sizeof(a));
	for (int r = 0; r < W; r++)
	{
		a[r].c = c;
		a[r].rank = r;
		a[r].fail_at = -1;
		pthread_create(&th[r], NULL, rank_main, &a[r]);
	}
	for (int r = 0; r < W; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < W; r++)
		CHECK_MSG(a[r].rc == HW_OK, "rank %d: %s", r, a[r].err.msg);
	CHECK_MSG(one_rank(W, loss1, &p1, &m1, &ck1, &err) == HW_OK, "%s", err.msg);
	CHECK_MSG(one_rank(1, loss0, &p0, &m0, &ck0, &err) == HW_OK, "%s", err.msg);

	int64_t n = a[0].numel;

	for (int r = 0; r < W; r++)
	{
		CHECK(a[r].checksum == ck1);
		CHECK_MSG(memcmp(a[r].params, p1, sizeof(float) * n) == 0, "rank %d parameters differ from accumulation", r);
		CHECK_MSG(memcmp(a[r].m1, m1, sizeof(float) * n) == 0, "rank %d moments differ from accumulation", r);
		for (int t = 0; t < NSTEPS; t++)
			CHECK_MSG(memcmp(&a[r].loss[t], &loss1[t], 4) == 0, "step %d loss %.9g vs %.9g", t,
					  a[r].loss[t], loss1[t]);
	}
	/* the accumulated step is not micro-batch 0's step: the check has teeth */
	CHECK(memcmp(p0, p1, sizeof(float) * n) != 0);
	CHECK(ck0 != ck1);
	CHECK(loss0[0] != loss1[0]);
	for (int r = 0; r < W; r++)
	{
		free(a[r].params);
		free(a[r].m1);
	}
	free(p1);
	free(m1);
	free(p0);
	free(m0);
	hw_coll_destroy(c);
}

UNIT_TEST(dp_failing_rank_stops_the_other_with_its_message)
{
	HwError       err = {0};
	HwCollective *c = hw_coll_local_create(W, 120.0, &err);
	RankRun       a[W];
	pthread_t     th[W];

	CHECK(c != NULL);
	memset(a, 0, sizeof(a));
	for (int r = 0; r < W; r++)
	{
		a[r].c = c;
		a[r].rank = r;
		a[r].fail_at = r == 1 ? 1 : -1;     /* rank 1 fails in step 2 */
		pthread_create(&th[r], NULL, rank_main, &a[r]);
	}
	for (int r = 0; r < W; r++)
		pthread_join(th[r], NULL);
	CHECK_EQ_INT(a[1].rc, HW_ERR_INVALID);
	CHECK_EQ_INT(a[0].rc, HW_ERR_CANCELLED);
	CHECK_MSG(strstr(a[0].err.msg, "rank 1: ") == a[0].err.msg && strstr(a[0].err.msg, "micro-batch 0 of rank 1 is missing"),
			  "%s", a[0].err.msg);
	for (int r = 0; r < W; r++)
	{
		free(a[r].params);
		free(a[r].m1);
	}
	hw_coll_destroy(c);
}

UNIT_TEST(dp_threads_two_ranks_equal_accumulation)
{
	HwError       err = {0};
	HwCollective *c = hw_coll_local_create(W, 120.0, &err);
	HwBackend    *be[W];
	HwModel      *m[W];
	HwDpRank     *d[W];
	float         loss1[NSTEPS], *p1, *m1, *pr;
	uint64_t      ck1 = 0, ck = 0;

	CHECK(c != NULL);
	for (int r = 0; r < W; r++)
	{
		be[r] = hw_backend_cpu_create(1, &err);
		m[r] = tiny_model(be[r], &err);
		d[r] = hw_dp_rank_create(m[r], c, r, 1, &err);
		CHECK_MSG(d[r] != NULL, "%s", err.msg);
	}
	HwDpThreads *t = hw_dp_threads_start(d, W, c, &err);

	CHECK(t != NULL);
	for (int s = 0; s < NSTEPS; s++)
	{
		HwBatch     *mb[W] = {micro_batch(s, 0), micro_batch(s, 1)};
		HwStepResult res;
		int          rc = -1, polls = 0;

		CHECK(hw_dp_threads_post(t, mb, s == NSTEPS - 1, &err) == HW_OK);
		CHECK(hw_dp_threads_post(t, mb, false, &err) == HW_ERR_INVALID);   /* one at a time */
		while (!hw_dp_threads_wait(t, 0.01, &res, &rc, &ck, &err))
			polls++;
		CHECK_MSG(rc == HW_OK, "step %d: %s", s, err.msg);
		loss1[s] = res.loss;
		CHECK_EQ_INT(res.step, s + 1);
		hw_batch_free(mb[0]);
		hw_batch_free(mb[1]);
	}
	/* a failing rank: the step ends with its own error (the root cause),
	 * not the bystander's "cancelled"; nothing reaches the optimiser */
	{
		HwBatch     *mb[W] = {micro_batch(0, 0), NULL};
		HwStepResult res;
		int          rc = -1;
		uint64_t     ck_fail = 0;

		CHECK(hw_dp_threads_post(t, mb, false, &err) == HW_OK);
		while (!hw_dp_threads_wait(t, 5.0, &res, &rc, &ck_fail, &err))
			;
		CHECK_EQ_INT(rc, HW_ERR_INVALID);
		CHECK_MSG(strstr(err.msg, "micro-batch 0 of rank 1 is missing"), "%s", err.msg);
		hw_batch_free(mb[0]);
	}
	hw_dp_threads_stop(t, NULL);
	float lref[NSTEPS];

	CHECK_MSG(one_rank(W, lref, &p1, &m1, &ck1, &err) == HW_OK, "%s", err.msg);
	CHECK(ck == ck1);
	CHECK(memcmp(loss1, lref, sizeof(lref)) == 0);
	pr = malloc(sizeof(float) * hw_model_numel(m[1]));
	hw_model_get_flat(m[1], 0, pr);
	CHECK(memcmp(pr, p1, sizeof(float) * hw_model_numel(m[1])) == 0);
	free(pr);
	free(p1);
	free(m1);
	for (int r = 0; r < W; r++)
	{
		hw_dp_rank_free(d[r]);
		hw_model_free(m[r]);
		hw_backend_destroy(be[r]);
	}
	hw_coll_destroy(c);
}

/* hw_dp_sync_from_rank0 copies the parameter average too: rank 1's model
 * starts with another average (zeros) and ends with rank 0's. */
typedef struct SyncRun
{
	HwCollective *c;
	int           rank;
	float        *ema;
	int64_t       numel;
	int           rc;
	HwError       err;
} SyncRun;

static void *
sync_main(void *p)
{
	SyncRun   *a = p;
	HwBackend *be = hw_backend_cpu_create(1, &a->err);
	HwModelConfig c;
	uint16_t  *colt, *catt;
	HwModel   *m = NULL;
	HwDpRank  *d = NULL;

	hw_model_config_preset(&c, "tiny", &a->err);
	c.d_text = DT; c.batch_size = 4; c.seq_len = 32; c.ema_decay = 0.9f;
	hw_synth_tables(DT, 3, &colt, &catt);
	if (be)
		m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &a->err);
	free(colt);
	free(catt);
	a->rc = HW_ERR_INVALID;
	if (m && hw_model_has_ema(m))
	{
		a->numel = hw_model_numel(m);
		a->ema = calloc((size_t) a->numel, sizeof(float));
		if (a->rank == 1)
			hw_model_set_flat(m, 4, a->ema);        /* zeros: not rank 0's average */
		d = hw_dp_rank_create(m, a->c, a->rank, 1, &a->err);
		a->rc = d ? hw_dp_sync_from_rank0(d, &a->err) : HW_ERR_INVALID;
		hw_model_get_flat(m, 4, a->ema);
	}
	hw_dp_rank_free(d);
	hw_model_free(m);
	hw_backend_destroy(be);
	return NULL;
}

UNIT_TEST(dp_sync_copies_the_parameter_average)
{
	HwError       err = {0};
	HwCollective *c = hw_coll_local_create(W, 120.0, &err);
	SyncRun       a[W];
	pthread_t     th[W];
	double        sum = 0;

	CHECK(c != NULL);
	memset(a, 0, sizeof(a));
	for (int r = 0; r < W; r++)
	{
		a[r].c = c;
		a[r].rank = r;
		pthread_create(&th[r], NULL, sync_main, &a[r]);
	}
	for (int r = 0; r < W; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < W; r++)
		CHECK_MSG(a[r].rc == HW_OK, "rank %d: %s", r, a[r].err.msg);
	for (int64_t i = 0; i < a[0].numel; i++)
		sum += fabs(a[0].ema[i]);
	CHECK_MSG(sum > 0, "rank 0's average is all zeros: the check has no teeth");
	CHECK_MSG(memcmp(a[0].ema, a[1].ema, sizeof(float) * a[0].numel) == 0, "rank 1's average is not rank 0's");
	for (int r = 0; r < W; r++)
		free(a[r].ema);
	hw_coll_destroy(c);
}
