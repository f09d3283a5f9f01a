/*
 * test_prefetch.c: the prefetch queue yields exactly hw_sampler_batch's
 * stream, stops cleanly with a full queue, and carries producer errors to
 * the consumer; a clone of a sampler gives the same batches.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "core/prefetch.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool
same_batch(HwBatch *a, HwBatch *b)
{
	HwTensorView va[HW_BATCH_NTENSORS], vb[HW_BATCH_NTENSORS];

	hw_batch_tensors(a, va);
	hw_batch_tensors(b, vb);
	for (int i = 0; i < HW_BATCH_NTENSORS; i++)
	{
		size_t n = hw_dtype_size(va[i].dtype);

		for (int d = 0; d < va[i].ndim; d++)
		{
			if (va[i].shape[d] != vb[i].shape[d])
				return false;
			n *= (size_t) va[i].shape[d];
		}
		if (memcmp(va[i].data, vb[i].data, n) != 0)
			return false;
	}
	return true;
}

static HwSnapshot *pf_snap;
static HwTask *pf_task;

static void
pf_setup(void)
{
	if (pf_snap)
		return;
	HwError err = {0};

	pf_snap = synth_shop(5000, 4, 8);
	pf_task = hw_task_new("total", HW_TASK_CELL, &err);
	hw_task_build_cell(pf_task, pf_snap, 3, synth_col_index(pf_snap, 3, "total"), &err);
}

static HwSampler *
pf_sampler(void)
{
	HwSamplerConfig cfg;
	HwError err = {0};

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 4;
	cfg.seq_len = 128;
	cfg.seed = 5;
	cfg.n_threads = 1;
	return hw_sampler_create(pf_snap, &pf_task, 1, &cfg, &err);
}

UNIT_TEST(prefetch_stream_equals_direct_batches)
{
	pf_setup();
	HwError err = {0};
	HwSampler *direct = pf_sampler();
	HwSampler *s = pf_sampler();

	CHECK(direct && s);
	HwSampler *val = hw_sampler_clone(s, &err);

	CHECK(val != NULL);
	HwPrefetch *q = hw_prefetch_start(s, HW_SPLIT_TRAIN, 7, 2, &err);
	HwPrefetch *qv = hw_prefetch_start(val, HW_SPLIT_VAL, 0, 1, &err);

	CHECK(q && qv);
	for (uint64_t i = 0; i < 10; i++)
	{
		HwBatch *a, *b;
		uint64_t k;
		uint32_t seeds[4], dseeds[4];

		CHECK(hw_prefetch_next(q, &a, &k, seeds, &err) == HW_OK);
		CHECK_EQ_INT(k, 7 + i);
		CHECK(hw_sampler_batch(direct, HW_SPLIT_TRAIN, k, &b, dseeds, &err) == HW_OK);
		CHECK(same_batch(a, b));
		CHECK(memcmp(seeds, dseeds, sizeof(seeds)) == 0);
		hw_batch_free(a);
		hw_batch_free(b);
		if (i % 3 == 0)
		{
			CHECK(hw_prefetch_next(qv, &a, &k, NULL, &err) == HW_OK);
			CHECK(hw_sampler_batch(direct, HW_SPLIT_VAL, k, &b, NULL, &err) == HW_OK);
			CHECK(same_batch(a, b));
			hw_batch_free(a);
			hw_batch_free(b);
		}
	}
	hw_prefetch_stop(qv);
	hw_prefetch_stop(q);
	hw_sampler_free(val);
	hw_sampler_free(s);
	hw_sampler_free(direct);
}

UNIT_TEST(prefetch_stop_with_full_queue)
{
	pf_setup();
	HwError err = {0};
	HwSampler *s = pf_sampler();
	HwPrefetch *q = hw_prefetch_start(s, HW_SPLIT_TRAIN, 0, 3, &err);

	CHECK(q);
	usleep(50000);              /* let the producer fill the queue and block */
	hw_prefetch_stop(q);        /* must not hang, must free the 3 batches */
	q = hw_prefetch_start(s, HW_SPLIT_TRAIN, 0, 1, &err);
	hw_prefetch_stop(q);        /* immediately: producer may be mid-batch */
	hw_sampler_free(s);
}

UNIT_TEST(prefetch_carries_producer_error)
{
	pf_setup();
	HwError err = {0};
	HwTask *t = hw_task_new("all_train", HW_TASK_CELL, &err);

	t->split_ratio[0] = 1.0;
	t->split_ratio[1] = 0.0;
	t->split_ratio[2] = 0.0;
	CHECK(hw_task_build_cell(t, pf_snap, 3, synth_col_index(pf_snap, 3, "total"), &err) == HW_OK);
	CHECK_EQ_INT(t->split_count[HW_SPLIT_TEST], 0);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 2;
	cfg.seq_len = 64;
	HwSampler *s = hw_sampler_create(pf_snap, &t, 1, &cfg, &err);

	CHECK(s);
	HwPrefetch *q = hw_prefetch_start(s, HW_SPLIT_TEST, 0, 2, &err);
	HwBatch *b;

	CHECK(q);
	memset(&err, 0, sizeof(err));
	CHECK_EQ_INT(hw_prefetch_next(q, &b, NULL, NULL, &err), HW_ERR_INVALID);
	CHECK(b == NULL);
	CHECK(strstr(err.msg, "no task has test seeds") != NULL);
	/* and again on a later call */
	CHECK_EQ_INT(hw_prefetch_next(q, &b, NULL, NULL, &err), HW_ERR_INVALID);
	hw_prefetch_stop(q);
	hw_sampler_free(s);
	hw_task_free(t);
}

/* A row stream (bulk prediction) gives hw_sampler_build_for_seeds' batches
 * of its rows, in order, the last one short, then ends, whatever the caller
 * does to its arrays meanwhile; a sampler clone on more threads builds the
 * same bits; stopping mid-stream frees all. */
UNIT_TEST(prefetch_row_stream_equals_direct_batches)
{
	pf_setup();
	HwError    err = {0};
	HwSampler *direct = pf_sampler();
	HwSampler *base = pf_sampler();
	HwSampler *wide;
	enum { N = 23, B = 5 };
	uint32_t   rows[N], idx[B];
	int64_t    obs[N];

	CHECK(direct && base);
	wide = hw_sampler_clone_threads(base, 3, &err);
	CHECK(wide != NULL);
	for (int i = 0; i < N; i++)
	{
		rows[i] = pf_snap->tables[3].row_offset + (uint32_t) ((i * 37) % pf_snap->tables[3].nrows);
		obs[i] = i % 2 ? HW_NO_CUTOFF : pf_snap->ts_mean_us;
	}
	/* the stream copies its rows: the caller's arrays may change at once */
	uint32_t   given_rows[N];
	int64_t    given_obs[N];

	memcpy(given_rows, rows, sizeof(rows));
	memcpy(given_obs, obs, sizeof(obs));
	HwPrefetch *q = hw_prefetch_start_rows(wide, 0, given_rows, given_obs, N, B, 2, &err);

	CHECK(q != NULL);
	memset(given_rows, 0xff, sizeof(given_rows));
	memset(given_obs, 0xff, sizeof(given_obs));
	for (int off = 0; off < N; off += B)
	{
		int      nb = N - off < B ? N - off : B;
		HwBatch *a = NULL, *b = NULL;
		uint64_t k;

		CHECK(hw_prefetch_next(q, &a, &k, idx, &err) == HW_OK);
		CHECK_EQ_INT((int) k, off / B);
		CHECK_EQ_INT(a->B, nb);
		for (int i = 0; i < nb; i++)
			CHECK_EQ_INT((int) idx[i], off + i);
		CHECK(hw_sampler_build_for_seeds(direct, 0, rows + off, obs + off, nb, &b, &err) == HW_OK);
		CHECK(same_batch(a, b));
		hw_batch_free(a);
		hw_batch_free(b);
	}
	HwBatch *none = NULL;

	CHECK_EQ_INT(hw_prefetch_next(q, &none, NULL, NULL, &err), HW_ERR_CANCELLED);
	CHECK(none == NULL);
	hw_prefetch_stop(q);

	/* bad arguments are refused; a stream stopped after one batch frees the rest */
	CHECK(hw_prefetch_start_rows(base, 0, rows, obs, N, 0, 2, &err) == NULL);
	CHECK(strstr(err.msg, "batch >= 1") != NULL);
	q = hw_prefetch_start_rows(base, 0, rows, obs, N, B, 3, &err);
	CHECK(q != NULL);
	CHECK(hw_prefetch_next(q, &none, NULL, NULL, &err) == HW_OK);
	hw_batch_free(none);
	hw_prefetch_stop(q);
	hw_sampler_free(wide);
	hw_sampler_free(base);
	hw_sampler_free(direct);
}
