/*
 * test_task.c: splits (stable, proportional, per-anchor), shards (disjoint,
 * complete), cell-task seeds, seed byte form, row re-resolution, layout and
 * training tables, timestamp encoding against hand-computed calendars.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "core/task.h"
#include "core/model.h"
#include "core/timeenc.h"

#include <stdlib.h>
#include <string.h>

static HwTask *
random_query_task(const char *name, uint32_t n, uint64_t salt)
{
	HwError err = {0};
	HwTask *t = hw_task_new(name, HW_TASK_QUERY, &err);

	hw_task_alloc_seeds(t, n, &err);
	for (uint32_t i = 0; i < n; i++)
	{
		t->anchor_row[i] = i / 3;                     /* 3 seeds per anchor */
		t->anchor_key[i] = (i / 3) * 0x9e3779b97f4a7c15ULL + salt;
		t->obs_time_us[i] = (int64_t) i * 1000;
		t->target[i] = (double) (i % 17);
	}
	return t;
}

UNIT_TEST(task_split_hash_is_fixed)
{
	/* pinned values: the split of a seed must never change across versions */
	CHECK(hw_split_hash(0, 0, 0) == hw_split_hash(0, 0, 0));
	CHECK(hw_split_hash(1, 2, 3) != hw_split_hash(1, 2, 4));
	CHECK(hw_split_hash(1, 2, 3) != hw_split_hash(2, 2, 3));
	/* golden value: pins the hash forever (a change would move every
	 * persisted task's seeds between splits) */
	CHECK(hw_split_hash(hw_hash_key_text("churn", 5), 42, 0) == 0x8e45bd52672f6043ULL);
}

UNIT_TEST(task_splits_stable_proportional_per_anchor)
{
	HwError err = {0};
	HwTask *t = random_query_task("churn", 30000, 1);

	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK_EQ_INT(t->split_count[0] + t->split_count[1] + t->split_count[2], 30000);
	CHECK_CLOSE(t->split_count[0] / 30000.0, 0.8, 0.03, 0);
	CHECK_CLOSE(t->split_count[1] / 30000.0, 0.1, 0.02, 0);
	/* all seeds of an anchor share a split, and the split is recomputable */
	for (uint32_t i = 0; i < t->nseeds; i++)
	{
		CHECK_EQ_INT(t->split[i], t->split[(i / 3) * 3]);
		CHECK_EQ_INT(t->split[i], hw_split_of(t, t->anchor_key[i]));
	}
	/* stable: a second assignment (another run) gives the same */
	uint8_t *first = malloc(t->nseeds);

	memcpy(first, t->split, t->nseeds);
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(memcmp(first, t->split, t->nseeds) == 0);
	/* another split seed changes assignment; another task name too */
	t->split_seed = 99;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(memcmp(first, t->split, t->nseeds) != 0);
	/* bad ratios */
	t->split_ratio[0] = 0.9;
	CHECK(hw_task_assign_splits(t, &err) == HW_ERR_INVALID);
	free(first);
	hw_task_free(t);
}

UNIT_TEST(task_shards_disjoint_and_complete)
{
	HwError err = {0};
	HwTask *t = random_query_task("x", 1001, 5);

	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	for (int split = 0; split < HW_N_SPLITS; split++)
	{
		int *owner = calloc(t->nseeds, sizeof(int));
		uint32_t total = 0;

		for (int r = 0; r < 3; r++)
		{
			uint32_t *idx, n;

			CHECK(hw_task_shard(t, split, r, 3, &idx, &n, &err) == HW_OK);
			total += n;
			for (uint32_t i = 0; i < n; i++)
			{
				CHECK_EQ_INT(t->split[idx[i]], split);
				CHECK_EQ_INT(owner[idx[i]], 0);
				owner[idx[i]] = r + 1;
				if (i > 0)
					CHECK(idx[i] > idx[i - 1]);
			}
			/* balanced within one */
			CHECK(n * 3 + 3 >= t->split_count[split] && n * 3 <= t->split_count[split] + 3);
			free(idx);
		}
		CHECK_EQ_INT(total, t->split_count[split]);
		free(owner);
	}
	uint32_t *idx, n;

	CHECK(hw_task_shard(t, 0, 3, 3, &idx, &n, &err) == HW_ERR_INVALID);
	hw_task_free(t);
}

UNIT_TEST(task_numeric_stats_over_train_only)
{
	HwError err = {0};
	HwTask *t = random_query_task("y", 3000, 9);

	t->target_null[5] = 1;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	hw_task_compute_stats(t);
	double sum = 0, ss = 0;
	int n = 0;

	for (uint32_t i = 0; i < t->nseeds; i++)
		if (t->split[i] == HW_SPLIT_TRAIN && !t->target_null[i])
		{
			sum += t->target[i];
			n++;
		}
	double mean = sum / n;

	for (uint32_t i = 0; i < t->nseeds; i++)
		if (t->split[i] == HW_SPLIT_TRAIN && !t->target_null[i])
			ss += (t->target[i] - mean) * (t->target[i] - mean);
	CHECK_CLOSE(t->target_mean, mean, 1e-12, 1e-12);
	CHECK_CLOSE(t->target_std, sqrt(ss / n), 1e-12, 1e-12);
	CHECK_EQ_INT(t->target_nulls, 1);
	CHECK_CLOSE(hw_task_target_z(t, 0), (0 - mean) / sqrt(ss / n), 1e-6, 0);
	hw_task_free(t);
}

UNIT_TEST(task_seed_bytes_roundtrip)
{
	HwError err = {0};
	HwTask *t = random_query_task("z", 777, 3);

	t->target_null[7] = 1;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	uint8_t *buf;
	size_t len;

	CHECK(hw_task_seeds_serialize(t, &buf, &len, &err) == HW_OK);
	HwTask *u = hw_task_new("z", HW_TASK_QUERY, &err);

	CHECK(hw_task_seeds_deserialize(u, buf, len, &err) == HW_OK);
	CHECK_EQ_INT(u->nseeds, 777);
	CHECK(memcmp(u->anchor_key, t->anchor_key, 777 * 8) == 0);
	CHECK(memcmp(u->anchor_row, t->anchor_row, 777 * 4) == 0);
	CHECK(memcmp(u->obs_time_us, t->obs_time_us, 777 * 8) == 0);
	CHECK(memcmp(u->target, t->target, 777 * 8) == 0);
	CHECK(memcmp(u->target_null, t->target_null, 777) == 0);
	CHECK(memcmp(u->split, t->split, 777) == 0);
	/* corrupt: truncated, bad magic, other version */
	CHECK(hw_task_seeds_deserialize(u, buf, len - 1, &err) == HW_ERR_CORRUPT);
	buf[4] = 9;
	CHECK(hw_task_seeds_deserialize(u, buf, len, &err) == HW_ERR_CORRUPT);
	buf[0] = 'X';
	CHECK(hw_task_seeds_deserialize(u, buf, len, &err) == HW_ERR_CORRUPT);
	free(buf);
	hw_task_free(u);
	hw_task_free(t);
}

UNIT_TEST(task_caller_given_splits)
{
	HwError err = {0};
	HwTask *t = random_query_task("g", 300, 5);
	uint8_t *buf;
	size_t len;

	/* hash: the byte form is the 29-byte one (no split array) */
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(hw_task_seeds_serialize(t, &buf, &len, &err) == HW_OK);
	CHECK(len == 16 + 300 * 29);
	free(buf);

	/* time: obs = i * 1000; train < 100000 <= val < 250000 <= test */
	t->split_method = HW_SPLIT_BY_TIME;
	t->split_val_from_us = 100000;
	t->split_test_from_us = 250000;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK_EQ_INT(t->split_count[0], 100);
	CHECK_EQ_INT(t->split_count[1], 150);
	CHECK_EQ_INT(t->split_count[2], 50);
	CHECK(t->split[99] == HW_SPLIT_TRAIN && t->split[100] == HW_SPLIT_VAL && t->split[250] == HW_SPLIT_TEST);
	/* stored with the seeds, read back as they are */
	CHECK(hw_task_seeds_serialize(t, &buf, &len, &err) == HW_OK);
	CHECK(len == 16 + 300 * 30);
	HwTask *u = hw_task_new("g", HW_TASK_QUERY, &err);

	CHECK(hw_task_seeds_deserialize(u, buf, len, &err) == HW_OK);
	CHECK(memcmp(u->split, t->split, 300) == 0);
	CHECK(memcmp(u->split_count, t->split_count, sizeof(t->split_count)) == 0);
	CHECK(hw_task_seeds_deserialize(u, buf, len - 300, &err) == HW_ERR_CORRUPT);
	free(buf);
	hw_task_free(u);
	/* a seed without an observation time cannot be split by time */
	t->obs_time_us[3] = HW_NO_CUTOFF;
	CHECK(hw_task_assign_splits(t, &err) == HW_ERR_INVALID);
	t->split_val_from_us = 300000;
	t->obs_time_us[3] = 3000;
	CHECK(hw_task_assign_splits(t, &err) == HW_ERR_INVALID);   /* val_from > test_from */

	/* column: split[] given, only counted; out of range is an error */
	t->split_method = HW_SPLIT_BY_COLUMN;
	for (uint32_t i = 0; i < 300; i++)
		t->split[i] = (uint8_t) (i % 3 == 0 ? HW_SPLIT_TEST : HW_SPLIT_TRAIN);
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK_EQ_INT(t->split_count[0], 200);
	CHECK_EQ_INT(t->split_count[1], 0);
	CHECK_EQ_INT(t->split_count[2], 100);
	t->split[5] = 7;
	CHECK(hw_task_assign_splits(t, &err) == HW_ERR_INVALID);
	CHECK(strcmp(hw_split_method_name(HW_SPLIT_BY_COLUMN), "column") == 0);
	hw_task_free(t);
}

UNIT_TEST(task_cell_seeds_and_resolve)
{
	HwError err = {0};
	HwSnapshot *s = synth_shop(2000, 3, 8);

	CHECK(s != NULL);
	int to = 3;
	int st = synth_col_index(s, to, "status");
	HwTask *t = hw_task_new("status", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(t, s, to, st, &err) == HW_OK);
	CHECK_EQ_INT(t->nseeds, s->tables[to].nrows);
	CHECK_EQ_INT(t->target_stype, HW_ST_CATEGORICAL);
	const HwColumn *c = &s->tables[to].cols[st];

	for (uint32_t r = 0; r < t->nseeds; r++)
	{
		CHECK_EQ_INT(t->anchor_row[r], s->tables[to].row_offset + r);
		CHECK_EQ_INT(t->target_null[r], !c->valid[r]);
		if (c->valid[r])
			CHECK_EQ_INT((uint32_t) t->target[r], c->u32[r]);
		CHECK_EQ_INT(t->obs_time_us[r], s->tables[to].cols[2].i64[r]);
	}
	/* text columns and identifiers cannot be targets */
	CHECK(hw_task_build_cell(t, s, 1, synth_col_index(s, 1, "bio"), &err) == HW_ERR_INVALID);
	CHECK(hw_task_build_cell(t, s, 1, 0, &err) == HW_ERR_INVALID);
	CHECK(strstr(err.msg, "identifier") != NULL);

	/* resolve: rows moved (simulated by scrambling anchor_row) come back by key */
	HwTask *q = hw_task_new("q", HW_TASK_QUERY, &err);

	q->anchor_table = 1;
	hw_task_alloc_seeds(q, 3, &err);
	const char *keys[3] = {"5", "999999", "1"};

	for (int i = 0; i < 3; i++)
	{
		q->anchor_key[i] = hw_hash_key_text(keys[i], strlen(keys[i]));
		q->anchor_row[i] = 0;
	}
	uint32_t dropped;

	CHECK(hw_task_resolve_rows(q, s, &dropped, &err) == HW_OK);
	CHECK_EQ_INT(dropped, 1);
	CHECK_EQ_INT(q->nseeds, 2);
	CHECK_EQ_INT(q->anchor_row[0], s->tables[1].row_offset + 4);
	CHECK_EQ_INT(q->anchor_row[1], s->tables[1].row_offset + 0);

	/* layout: snapshot columns, then 2 per query task; own categories after */
	q->target_stype = HW_ST_CATEGORICAL;
	q->ncat_own = 3;
	q->d_text = s->d_text;
	q->cat_emb_own = calloc(3 * (size_t) s->d_text, 2);
	q->vcol_emb = calloc(2 * (size_t) s->d_text, 2);
	q->cat_emb_own[0] = 0x3c00;
	q->vcol_emb[s->d_text] = 0x4000;
	HwTask *tasks[2] = {t, q};
	uint16_t *ce, *ke;
	int32_t nc;
	uint32_t nk;

	CHECK(hw_task_build_cell(t, s, to, st, &err) == HW_OK);
	CHECK(hw_training_tables(s, tasks, 2, &ce, &nc, &ke, &nk, &err) == HW_OK);
	CHECK_EQ_INT(nc, s->ncolumns + 2);
	CHECK_EQ_INT(nk, s->ncat + 3);
	CHECK_EQ_INT(t->col_base, -1);
	CHECK_EQ_INT(t->cat_base, c->cat_emb_start);
	CHECK_EQ_INT(t->cat_count, 4);
	CHECK_EQ_INT(q->col_base, s->ncolumns);
	CHECK_EQ_INT(q->cat_base, s->ncat);
	CHECK(memcmp(ce, s->col_emb, (size_t) s->ncolumns * s->d_text * 2) == 0);
	CHECK_EQ_INT(ce[(size_t) (s->ncolumns + 1) * s->d_text], 0x4000);
	CHECK_EQ_INT(ke[(size_t) s->ncat * s->d_text], 0x3c00);
	free(ce);
	free(ke);
	hw_task_free(q);
	hw_task_free(t);
	synth_free(s);
}

UNIT_TEST(timeenc_hand_computed_calendar)
{
	/* 2024-02-29 13:45:30 UTC is a Thursday, day-of-year 60 (1-based) */
	int64_t us = 1709214330LL * 1000000LL;
	float o[15];

	hw_time_encode(us, (double) us - 2e6, 4e6, o);
	const double x[7] = {30 / 60.0, 45 / 60.0, 13 / 24.0, 3 / 7.0, 28 / 31.0, 1 / 12.0, 59 / 366.0};

	for (int i = 0; i < 7; i++)
	{
		CHECK_CLOSE(o[2 * i], sin(2 * M_PI * x[i]), 1e-6, 0);
		CHECK_CLOSE(o[2 * i + 1], cos(2 * M_PI * x[i]), 1e-6, 0);
	}
	CHECK_CLOSE(o[14], 0.5, 1e-6, 0);
	/* before the epoch: 1969-12-31 23:59:59.5 is a Wednesday (2) */
	hw_time_encode(-500000, 0, 1, o);
	CHECK_CLOSE(o[0], sin(2 * M_PI * (59.5 / 60.0)), 1e-6, 0);
	CHECK_CLOSE(o[4], sin(2 * M_PI * (23 / 24.0)), 1e-6, 0);
	CHECK_CLOSE(o[6], sin(2 * M_PI * (2 / 7.0)), 1e-6, 0);
	CHECK_CLOSE(o[8], sin(2 * M_PI * (30 / 31.0)), 1e-6, 0);
	CHECK_CLOSE(o[10], sin(2 * M_PI * (11 / 12.0)), 1e-6, 0);
	CHECK_CLOSE(o[12], sin(2 * M_PI * (364 / 366.0)), 1e-6, 0);
	int64_t y;
	int m, d;

	hw_civil_from_days(19782, &y, &m, &d);           /* 2024-02-29 */
	CHECK(y == 2024 && m == 2 && d == 29);
	hw_civil_from_days(-1, &y, &m, &d);
	CHECK(y == 1969 && m == 12 && d == 31);
}

/* Label times: stored with the seeds (flag bit 1, 8 bytes a seed more),
 * read back as they are; a task without them keeps the old byte form; a
 * label time before its obs time is refused; re-resolution keeps them. */
UNIT_TEST(task_label_times_byte_form)
{
	HwError err = {0};
	HwTask *t = random_query_task("lt", 300, 3);
	uint8_t *buf;
	size_t len;
	int64_t *lt = malloc(sizeof(int64_t) * 300);

	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(hw_task_seeds_serialize(t, &buf, &len, &err) == HW_OK);
	CHECK(len == 16 + 300 * 29);
	HwTask *u = hw_task_new("lt", HW_TASK_QUERY, &err);

	CHECK(hw_task_seeds_deserialize(u, buf, len, &err) == HW_OK);
	CHECK(u->label_time_us == NULL);
	CHECK(hw_task_label_time(u, 7) == u->obs_time_us[7]);
	free(buf);
	for (uint32_t i = 0; i < 300; i++)
		lt[i] = t->obs_time_us[i] + 500 + i;
	lt[5] = HW_NO_CUTOFF;       /* never known */
	CHECK(hw_task_set_label_times(t, lt, &err) == HW_OK);
	CHECK(hw_task_seeds_serialize(t, &buf, &len, &err) == HW_OK);
	CHECK(len == 16 + 300 * 37);
	CHECK(hw_task_seeds_deserialize(u, buf, len, &err) == HW_OK);
	CHECK(u->label_time_us != NULL && memcmp(u->label_time_us, lt, sizeof(int64_t) * 300) == 0);
	CHECK(!hw_task_label_visible(u, 5, HW_NO_CUTOFF - 1));
	CHECK(hw_task_label_visible(u, 6, u->obs_time_us[6] + 506));
	CHECK(!hw_task_label_visible(u, 6, u->obs_time_us[6] + 505));
	CHECK(hw_task_seeds_deserialize(u, buf, len - 8, &err) == HW_ERR_CORRUPT);
	/* a stored label time before its obs time is corruption */
	int64_t bad = -1;

	memcpy(buf + len - 8, &bad, 8);
	CHECK(hw_task_seeds_deserialize(u, buf, len, &err) == HW_ERR_CORRUPT);
	free(buf);
	lt[9] = t->obs_time_us[9] - 1;
	CHECK(hw_task_set_label_times(t, lt, &err) == HW_ERR_INVALID);
	CHECK(strstr(err.msg, "seed 9") != NULL);
	hw_task_free(u);
	free(lt);
	hw_task_free(t);
}

/* Integer labels round predictions (MAE loss only); a hand-checked case of
 * each rule: what counts as integer (train split only, a float32 z-score
 * trip allowed, not a constant), rounding to the nearest, no -0, and huber
 * left alone (why rounding never loses for MAE: docs/model.md). */
UNIT_TEST(task_integer_labels_round_predictions)
{
	HwError err = {0};
	HwTask *t = random_query_task("counts", 300, 5);      /* labels i % 17 */

	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	hw_task_compute_stats(t);
	CHECK(t->target_integer);
	CHECK(hw_task_rounds_predictions(t));
	double  raw;
	float   z = (float) ((2.4 - t->target_mean) / t->target_std);

	CHECK_CLOSE(hw_task_decode_numerical(t, z, &raw), 2.0, 1e-12, 0);
	CHECK_CLOSE(raw, 2.4, 1e-5, 0);
	z = (float) ((2.6 - t->target_mean) / t->target_std);
	CHECK_CLOSE(hw_task_decode_numerical(t, z, NULL), 3.0, 1e-12, 0);
	/* a small negative value rounds to 0, not -0 (it would print "-0") */
	z = (float) ((-0.2 - t->target_mean) / t->target_std);
	CHECK(!signbit(hw_task_decode_numerical(t, z, NULL)) && hw_task_decode_numerical(t, z, NULL) == 0.0);
	z = (float) ((2.6 - t->target_mean) / t->target_std);
	/* the huber loss fits a mean: values as they are */
	t->num_loss = HW_NUM_LOSS_HUBER;
	CHECK(!hw_task_rounds_predictions(t));
	CHECK_CLOSE(hw_task_decode_numerical(t, z, NULL), 2.6, 1e-5, 0);
	t->num_loss = HW_NUM_LOSS_MAE;
	/* a value that came back from a float32 z-score is still an integer */
	for (uint32_t i = 0; i < t->nseeds; i++)
		t->target[i] = (double) (float) ((t->target[i] - t->target_mean) / t->target_std) * t->target_std + t->target_mean;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(t->target_integer);
	/* a fraction in the val or test split does not count ... */
	uint32_t tr = 0, other = 0;

	while (t->split[tr] != HW_SPLIT_TRAIN)
		tr++;
	while (t->split[other] == HW_SPLIT_TRAIN)
		other++;
	t->target[other] = 2.5;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(t->target_integer);
	/* ... nor a NULL target's value; one in train does */
	t->target_null[tr] = 1;
	t->target[tr] = 0.25;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(t->target_integer);
	t->target_null[tr] = 0;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(!t->target_integer);
	CHECK(!hw_task_rounds_predictions(t));
	CHECK_CLOSE(hw_task_decode_numerical(t, z, NULL), z * t->target_std + t->target_mean, 1e-9, 0);
	/* a constant label is not a count to round */
	for (uint32_t i = 0; i < t->nseeds; i++)
		t->target[i] = 4.0;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(!t->target_integer);
	/* not numerical: never */
	for (uint32_t i = 0; i < t->nseeds; i++)
		t->target[i] = i % 2;
	t->target_stype = HW_ST_BOOLEAN;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK(!t->target_integer);
	hw_task_free(t);
}

static float
logit(double p)
{
	return (float) log(p / (1 - p));
}

/* The ordinal loss: which tasks get it (loss "ordinal", integer train labels
 * spanning at most HW_ORD_LEVELS + 1 values), the level map,
 * and the median it predicts, hand-computed (model.h hw_ordinal_median_level). */
UNIT_TEST(task_ordinal_levels_and_median)
{
	HwError err = {0};
	HwTask *t = random_query_task("counts", 300, 5);      /* labels i % 17: 0..16 */
	float   scale, shift;

	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	hw_task_compute_stats(t);
	CHECK_CLOSE(t->target_min, 0.0, 0, 0);
	CHECK_EQ_INT(t->target_span, 16);
	CHECK_EQ_INT(hw_task_ordinal_levels(t), 0);             /* the default: MAE, rounded */
	CHECK_EQ_INT(hw_task_effective_loss(t), HW_NUM_LOSS_MAE);
	CHECK(hw_task_rounds_predictions(t));
	t->num_loss = HW_NUM_LOSS_ORDINAL;
	CHECK_EQ_INT(hw_task_ordinal_levels(t), 16);
	CHECK_EQ_INT(hw_task_effective_loss(t), HW_NUM_LOSS_ORDINAL);
	CHECK(hw_task_rounds_predictions(t));
	/* every train label maps to its level through the float32 z-score */
	hw_task_ordinal_map(t, &scale, &shift);
	for (uint32_t i = 0; i < t->nseeds; i++)
	{
		float z = (float) ((t->target[i] - t->target_mean) / t->target_std);

		CHECK_CLOSE(nearbyintf(z * scale + shift), t->target[i] - t->target_min, 0, 0);
	}
	t->num_loss = HW_NUM_LOSS_HUBER;
	CHECK_EQ_INT(hw_task_ordinal_levels(t), 0);
	CHECK(!hw_task_rounds_predictions(t));
	t->num_loss = HW_NUM_LOSS_ORDINAL;
	/* 18 values (span 17): too many for the head, the regression */
	for (uint32_t i = 0; i < t->nseeds; i++)
		t->target[i] = 3 + i % 18;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	CHECK_EQ_INT(t->target_span, 17);
	/* asked for, but cannot: MAE (rt_create_task refuses it) */
	CHECK_EQ_INT(hw_task_ordinal_levels(t), 0);
	CHECK_EQ_INT(hw_task_effective_loss(t), HW_NUM_LOSS_MAE);
	/* ratings 1..5 */
	for (uint32_t i = 0; i < t->nseeds; i++)
		t->target[i] = 1 + i % 5;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	hw_task_compute_stats(t);
	CHECK_CLOSE(t->target_min, 1.0, 0, 0);
	CHECK_EQ_INT(hw_task_ordinal_levels(t), 4);
	hw_task_ordinal_map(t, &scale, &shift);

	/* the median: S = P(level > k) = 0.9, 0.7, 0.4, 0.1 -> level 2, and the
	 * value m - 1/2 + (S_1 - 1/2) / (S_1 - S_2) = 1.5 + 0.2 / 0.3 */
	float lg[4] = { logit(0.9), logit(0.7), logit(0.4), logit(0.1) };

	CHECK_CLOSE(hw_ordinal_median_level(lg, 4), 1.5 + 0.2 / 0.3, 1e-5, 0);
	/* as the task's prediction: rating 1 + 2 = 3, unrounded 3.1667 */
	{
		double raw, v = hw_task_decode_numerical(t, hw_ordinal_median_z(lg, 4, scale, shift), &raw);

		CHECK_CLOSE(v, 3.0, 0, 0);
		CHECK_CLOSE(raw, 1 + 1.5 + 0.2 / 0.3, 1e-5, 0);
	}
	/* S_0 below 1/2: level 0, S_-1 = 1: -0.5 + 0.5 / 0.7 */
	lg[0] = logit(0.3);
	CHECK_CLOSE(hw_ordinal_median_level(lg, 4), -0.5 + 0.5 / 0.7, 1e-5, 0);
	/* not decreasing: the first crossing (0.8, 0.3, 0.6, ...) -> level 1 */
	lg[0] = logit(0.8); lg[1] = logit(0.3); lg[2] = logit(0.6);
	CHECK_CLOSE(nearbyintf(hw_ordinal_median_level(lg, 4)), 1.0, 0, 0);
	/* every threshold passed: the top level, 3 of 3 thresholds at S_2 = 0.6 -> 3.1 */
	lg[0] = logit(0.9); lg[1] = logit(0.8); lg[2] = logit(0.6);
	CHECK_CLOSE(hw_ordinal_median_level(lg, 3), 3.1, 1e-5, 0);
	/* a value that rounds to the median, whatever the probabilities */
	for (int a = 1; a < 20; a++)
		for (int b = 1; b < 20; b++)
		{
			float l2[2] = { logit(a / 20.0), logit(b / 20.0) };
			int   med = a * 2 < 20 ? 0 : b * 2 < 20 ? 1 : 2;

			CHECK_CLOSE(nearbyintf(hw_ordinal_median_level(l2, 2)), (double) med, 0, 0);
		}
	hw_task_free(t);
}
