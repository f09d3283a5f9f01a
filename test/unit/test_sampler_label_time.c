/*
 * test_sampler_label_time.c: label history respects label_time, and the
 * context labels seen at prediction.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "sampler_ref.h"
#include "sampler_fixtures.h"
#include "core/sampler.h"
#include "core/timeenc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Label history respects label_time.  Customer c2 (no orders, no parents:
 * nothing random in its sequences) has four seeds observed on days 10, 20,
 * 30, 40 whose labels (windows of 15 days) become known 15 days later.  At
 * day 40 only the day-10 and day-20 labels are known (day 30's on day 45);
 * at day 35 the day-20 label is known exactly then (label_time <= T).  The
 * training sequence of the day-40 seed equals the prediction sequence of
 * (c2, day 40) cell for cell, except the target's value.
 */
static HwTask *
windowed_task(const HwSnapshot *s, bool with_label_time)
{
	HwError err = {0};
	HwTask *t = hw_task_new("win", HW_TASK_QUERY, &err);
	int64_t lt[4];

	t->anchor_table = 0;
	t->target_stype = HW_ST_NUMERICAL;
	hw_task_alloc_seeds(t, 4, &err);
	for (int i = 0; i < 4; i++)
	{
		t->anchor_row[i] = 2;
		t->anchor_key[i] = s->tables[0].key_hash[2];
		t->obs_time_us[i] = T0_US + (10 + 10 * i) * DAY_US;
		t->target[i] = 1.0 + i;
		lt[i] = t->obs_time_us[i] + 15 * DAY_US;
	}
	if (with_label_time)
		hw_task_set_label_times(t, lt, &err);
	hw_task_assign_splits(t, &err);
	t->target_mean = 2.5;
	t->target_std = 1.0;
	return t;
}

/* The seed indices shown by the history rows of sequence b of the last
 * batch, in row order; returns how many. */
static int
history_of(const HwSampler *sm, int b, int64_t *vs, int cap)
{
	const HwCellSource *rows;
	int nrows, n = 0;

	if (hw_sampler_last_rows(sm, b, &rows, &nrows) != HW_OK)
		return -1;
	for (int r = 1; r < nrows; r++)
		if (rows[r].row < 0 && n < cap)
			vs[n++] = rows[r].vseed;
	return n;
}

UNIT_TEST(sampler_history_respects_label_time)
{
	HwSnapshot *s = tiny();
	HwError err = {0};

	CHECK(s != NULL);
	for (int with_lt = 0; with_lt < 2; with_lt++)
	{
		HwTask *t = windowed_task(s, with_lt);
		HwSamplerConfig cfg;

		hw_sampler_config_default(&cfg);
		cfg.batch_size = 1;
		cfg.seq_len = 32;
		cfg.n_threads = 1;
		HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

		CHECK_MSG(sm != NULL, "%s", err.msg);
		uint32_t seed = 3;
		HwBatch *tb = NULL, *pb = NULL;
		int64_t vs[8];

		CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &tb, &err) == HW_OK);
		int n = history_of(sm, 0, vs, 8);

		if (with_lt)
		{
			/* day 30's label is known on day 45 > 40: left out */
			CHECK_EQ_INT(n, 2);
			CHECK_EQ_INT(vs[0], 1);
			CHECK_EQ_INT(vs[1], 0);
		}
		else
		{
			/* default label_time = obs time: every earlier seed */
			CHECK_EQ_INT(n, 3);
			CHECK_EQ_INT(vs[0], 2);
			CHECK_EQ_INT(vs[1], 1);
			CHECK_EQ_INT(vs[2], 0);
		}
		/* prediction of (c2, day 40): the same sequence, tensor for tensor */
		uint32_t anchor = 2;
		int64_t obs = t->obs_time_us[3];

		CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, &obs, 1, &pb, &err) == HW_OK);
		int64_t pvs[8];

		CHECK_EQ_INT(history_of(sm, 0, pvs, 8), n);
		CHECK(memcmp(vs, pvs, sizeof(int64_t) * n) == 0);
		CHECK_EQ_INT(tb->R, pb->R);
		CHECK(memcmp(tb->column_ids, pb->column_ids, sizeof(int32_t) * 32) == 0);
		CHECK(memcmp(tb->seq_row_ids, pb->seq_row_ids, 2 * 32) == 0);
		CHECK(memcmp(tb->semantic_types, pb->semantic_types, 32) == 0);
		CHECK(memcmp(tb->is_padding, pb->is_padding, 32) == 0);
		CHECK(memcmp(tb->is_target, pb->is_target, 32) == 0);
		CHECK(memcmp(tb->timestamp_values, pb->timestamp_values, sizeof(float) * 15 * 32) == 0);
		CHECK(memcmp(tb->fk_adj, pb->fk_adj, (size_t) tb->R * tb->R) == 0);
		CHECK(memcmp(tb->out_perm, pb->out_perm, 2 * 32) == 0);
		CHECK(memcmp(tb->in_perm, pb->in_perm, 2 * 32) == 0);
		CHECK_EQ_INT(tb->is_target[1], 1);
		CHECK(tb->numeric_values[1] == 1.5f && pb->numeric_values[1] == 0.0f);   /* truth (4 - 2.5) / 1 vs masked */
		CHECK(memcmp(tb->numeric_values + 2, pb->numeric_values + 2, sizeof(float) * 30) == 0);
		CHECK(memcmp(tb->is_null + 2, pb->is_null + 2, 30) == 0);
		/* the history labels are visible: day 20's is (2 - 2.5) / 1 */
		int found = 0;

		for (int p = 2; p < 32; p++)
			found += tb->column_ids[p] == t->col_base + 1 && tb->numeric_values[p] == -0.5f && !tb->is_target[p];
		CHECK_EQ_INT(found, 1);
		hw_batch_free(tb);
		hw_batch_free(pb);
		if (with_lt)
		{
			/* label_time <= T: at day 35 the day-20 label (known on day 35) is in */
			obs = T0_US + 35 * DAY_US;
			CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, &obs, 1, &pb, &err) == HW_OK);
			CHECK_EQ_INT(history_of(sm, 0, pvs, 8), 2);
			hw_batch_free(pb);
			obs -= 1;
			CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, &obs, 1, &pb, &err) == HW_OK);
			CHECK_EQ_INT(history_of(sm, 0, pvs, 8), 1);
			CHECK_EQ_INT(pvs[0], 0);
			hw_batch_free(pb);
		}
		hw_sampler_free(sm);
		hw_task_free(t);
	}
	synth_free(s);
}

/* Context labels join the history like stored labels: merged by obs time,
 * the most recent history_max kept, values encoded as targets; bad ones
 * are refused. */
UNIT_TEST(sampler_context_labels_at_prediction)
{
	HwSnapshot *s = tiny();
	HwError err = {0};

	CHECK(s != NULL);
	HwTask *t = windowed_task(s, true);

	t->history_max = 3;
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 32;
	cfg.n_threads = 1;
	HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

	CHECK_MSG(sm != NULL, "%s", err.msg);
	uint32_t anchor = 2;
	int64_t obs = T0_US + 40 * DAY_US;
	/* given out of order: day 38 (7.0) and day 5 (NULL) */
	HwContextLabel c[2] = {{T0_US + 38 * DAY_US, 7.0, 0}, {T0_US + 5 * DAY_US, 0.0, 1}};
	const HwContextLabel *cp = c;
	uint32_t nc = 2;
	HwBatch *b = NULL;
	int64_t vs[8];

	CHECK(hw_sampler_build_for_seeds_ctx(sm, 0, &anchor, &obs, 1, &cp, &nc, &b, &err) == HW_OK);
	/* newest three of {ctx day 38, seed 1 day 20, seed 0 day 10, ctx day 5};
	 * context k counts in obs-time order: day 38 is k = 1 */
	CHECK_EQ_INT(history_of(sm, 0, vs, 8), 3);
	CHECK_EQ_INT(vs[0], HW_VSEED_CONTEXT - 1);
	CHECK_EQ_INT(vs[1], 1);
	CHECK_EQ_INT(vs[2], 0);
	/* its cells: obs time and label (7 - 2.5) / 1, visible */
	float ts[15];
	int found = 0;

	hw_time_encode(T0_US + 38 * DAY_US, s->ts_mean_us, s->ts_std_us, ts);
	for (int p = 2; p < 31; p++)
		if (b->column_ids[p] == t->col_base && memcmp(b->timestamp_values + p * 15, ts, sizeof(ts)) == 0)
		{
			CHECK_EQ_INT(b->column_ids[p + 1], t->col_base + 1);
			CHECK(b->numeric_values[p + 1] == 4.5f);
			CHECK_EQ_INT(b->is_target[p + 1], 0);
			CHECK_EQ_INT(b->is_null[p + 1], 0);
			found++;
		}
	CHECK_EQ_INT(found, 1);
	hw_batch_free(b);
	/* with history_max 16 the NULL day-5 label comes in too, last */
	t->history_max = 16;
	CHECK(hw_sampler_build_for_seeds_ctx(sm, 0, &anchor, &obs, 1, &cp, &nc, &b, &err) == HW_OK);
	CHECK_EQ_INT(history_of(sm, 0, vs, 8), 4);
	CHECK_EQ_INT(vs[3], HW_VSEED_CONTEXT - 0);
	hw_batch_free(b);
	/* refused: a label not before obs, a value of the wrong kind, no obs time */
	c[0].obs_time_us = obs;
	CHECK(hw_sampler_build_for_seeds_ctx(sm, 0, &anchor, &obs, 1, &cp, &nc, &b, &err) == HW_ERR_INVALID);
	CHECK(b == NULL);
	c[0].obs_time_us = obs - 1;
	c[0].target = NAN;
	CHECK(hw_sampler_build_for_seeds_ctx(sm, 0, &anchor, &obs, 1, &cp, &nc, &b, &err) == HW_ERR_INVALID);
	c[0].target = 7.0;
	int64_t none = HW_NO_CUTOFF;

	CHECK(hw_sampler_build_for_seeds_ctx(sm, 0, &anchor, &none, 1, &cp, &nc, &b, &err) == HW_ERR_INVALID);
	t->label_history = false;
	CHECK(hw_sampler_build_for_seeds_ctx(sm, 0, &anchor, &obs, 1, &cp, &nc, &b, &err) == HW_ERR_INVALID);
	t->label_history = true;
	/* no context: the same as hw_sampler_build_for_seeds */
	nc = 0;
	CHECK(hw_sampler_build_for_seeds_ctx(sm, 0, &anchor, &obs, 1, &cp, &nc, &b, &err) == HW_OK);
	CHECK_EQ_INT(history_of(sm, 0, vs, 8), 2);
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(t);
	synth_free(s);
}
