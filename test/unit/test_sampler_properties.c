/*
 * test_sampler_properties.c: properties of the sampler over many seeds of
 * the random shop snapshot: evaluation = prediction sequences, split and
 * time rules, thread-count independence, epoch coverage, timestamps, cell
 * dropout, task weights, configuration checks.
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

static bool
is_perm_padding_last(const uint16_t *perm, const uint8_t *pad, int S, int *why)
{
	uint8_t seen[4096] = {0};
	int n = 0;

	for (int p = 0; p < S; p++)
		n += !pad[p];
	for (int i = 0; i < S; i++)
	{
		if (perm[i] >= S || seen[perm[i]])
		{
			*why = 1;
			return false;
		}
		seen[perm[i]] = 1;
		if ((i < n) != !pad[perm[i]])
		{
			*why = 2;
			return false;
		}
	}
	return true;
}

/* rt_evaluate and rt_predict see the same sequence: a seed batch and the
 * prediction of the same (anchor, obs time) make the same random choices
 * (children sampled uniformly from more than fit), target value aside;
 * and those choices do depend on cfg.seed, so the comparison has teeth. */
UNIT_TEST(sampler_evaluation_sequence_is_the_prediction_sequence)
{
	shop_setup();
	HwError err = {0};
	HwSamplerConfig cfg;
	const int S = 48;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = S;
	cfg.n_threads = 1;
	cfg.child_sampling = HW_CHILD_UNIFORM;
	HwSampler *sm = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	cfg.seed += 1;
	HwSampler *other = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	CHECK_MSG(sm != NULL && other != NULL, "%s", err.msg);
	int compared = 0, seed_dependent = 0;

	for (uint32_t si = 0; si < shop_task->nseeds && compared < 60; si += 7)
	{
		HwBatch *eb = NULL, *pb = NULL, *ob = NULL;
		uint32_t anchor = shop_task->anchor_row[si];
		int64_t obs = shop_task->obs_time_us[si];

		CHECK(hw_sampler_seed_batch(sm, 0, &si, 1, &eb, &err) == HW_OK);
		CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, &obs, 1, &pb, &err) == HW_OK);
		CHECK(hw_sampler_seed_batch(other, 0, &si, 1, &ob, &err) == HW_OK);
		if (eb == NULL || pb == NULL || ob == NULL)
			break;
		CHECK(memcmp(eb->seq_row_ids, pb->seq_row_ids, sizeof(eb->seq_row_ids[0]) * S) == 0);
		CHECK(memcmp(eb->column_ids, pb->column_ids, sizeof(int32_t) * S) == 0);
		CHECK(memcmp(eb->is_target, pb->is_target, S) == 0);
		CHECK(memcmp(eb->is_padding, pb->is_padding, S) == 0);
		for (int p = 0; p < S; p++)
			if (!eb->is_target[p])
				CHECK(eb->numeric_values[p] == pb->numeric_values[p]);
		seed_dependent += memcmp(eb->column_ids, ob->column_ids, sizeof(int32_t) * S) != 0 ||
			memcmp(eb->numeric_values, ob->numeric_values, sizeof(float) * S) != 0;
		compared++;
		hw_batch_free(eb);
		hw_batch_free(pb);
		hw_batch_free(ob);
	}
	CHECK_EQ_INT(compared, 60);
	CHECK(seed_dependent > 0);
	hw_sampler_free(sm);
	hw_sampler_free(other);
}

/* Caller-given splits: one anchor's seeds in two splits; a train seed's
 * label history leaves out the earlier test seed, a test seed sees the
 * earlier train seed. */
UNIT_TEST(sampler_history_respects_caller_splits)
{
	HwSnapshot *s = tiny();
	HwError err = {0};

	CHECK(s != NULL);
	for (int order = 0; order < 2; order++)
	{
		HwTask *t = hw_task_new("q", HW_TASK_QUERY, &err);

		t->anchor_table = 0;
		t->target_stype = HW_ST_NUMERICAL;
		CHECK(hw_task_alloc_seeds(t, 3, &err) == HW_OK);
		t->anchor_row[0] = 1; t->obs_time_us[0] = T0_US + 3 * DAY_US; t->target[0] = 1.0;
		t->anchor_row[1] = 1; t->obs_time_us[1] = T0_US + 4 * DAY_US; t->target[1] = 2.0;
		t->anchor_row[2] = 0; t->obs_time_us[2] = HW_NO_CUTOFF; t->target_null[2] = 1;
		for (int i = 0; i < 3; i++)
			t->anchor_key[i] = s->tables[0].key_hash[t->anchor_row[i]];
		t->split_method = HW_SPLIT_BY_COLUMN;
		/* order 0: seed 0 test, seed 1 train; order 1: seed 0 train, seed 1 test */
		t->split[0] = order == 0 ? HW_SPLIT_TEST : HW_SPLIT_TRAIN;
		t->split[1] = order == 0 ? HW_SPLIT_TRAIN : HW_SPLIT_TEST;
		t->split[2] = HW_SPLIT_TRAIN;
		CHECK(hw_task_assign_splits(t, &err) == HW_OK);
		t->target_mean = 1.5;
		t->target_std = 0.5;
		HwSamplerConfig cfg;

		hw_sampler_config_default(&cfg);
		cfg.batch_size = 2;
		cfg.seq_len = 10;
		cfg.n_threads = 1;
		HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

		CHECK_MSG(sm != NULL, "%s", err.msg);
		uint32_t seeds[2] = {1, 2};
		HwBatch *b = NULL;

		CHECK(hw_sampler_seed_batch(sm, 0, seeds, 2, &b, &err) == HW_OK);
		/* positions 5-6: the history row of seed 0 (as in the test above) or padding */
		if (order == 0)
		{
			CHECK_EQ_INT(b->is_padding[5], 1);
			CHECK_EQ_INT(b->is_padding[6], 1);
		}
		else
		{
			CHECK_EQ_INT(b->is_padding[5], 0);
			CHECK_EQ_INT(b->column_ids[5], 8);
			CHECK_CLOSE(b->numeric_values[6], -1.0, 1e-7, 0);
		}
		hw_batch_free(b);
		hw_sampler_free(sm);
		hw_task_free(t);
	}
	synth_free(s);
}

UNIT_TEST(sampler_properties_over_many_seeds)
{
	shop_setup();
	CHECK(shop && shop_task && shop_task->nseeds > 1000);
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 16;
	cfg.seq_len = 256;
	cfg.max_rows = 40;
	cfg.seed = 3;
	cfg.n_threads = 2;
	HwSampler *sm = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	CHECK_MSG(sm != NULL, "%s", err.msg);
	int S = cfg.seq_len;

	for (uint64_t k = 0; k < 40; k++)
	{
		HwBatch *b;
		uint32_t seeds[16];

		CHECK(hw_sampler_batch(sm, HW_SPLIT_TRAIN, k, &b, seeds, &err) == HW_OK);
		CHECK_EQ_INT(b->cat_emb_count, 4);
		CHECK_EQ_INT(b->target_stype, HW_ST_CATEGORICAL);
		for (int i = 0; i < b->B; i++)
		{
			size_t base = (size_t) i * S;
			int why = 0;

			CHECK_EQ_INT(shop_task->split[seeds[i]], HW_SPLIT_TRAIN);
			CHECK_MSG(is_perm_padding_last(b->col_perm + base, b->is_padding + base, S, &why), "col_perm %d", why);
			CHECK_MSG(is_perm_padding_last(b->out_perm + base, b->is_padding + base, S, &why), "out_perm %d", why);
			CHECK_MSG(is_perm_padding_last(b->in_perm + base, b->is_padding + base, S, &why), "in_perm %d", why);
			/* col_perm sorts column ids */
			int n = 0;

			for (int p = 0; p < S; p++)
				n += !b->is_padding[base + p];
			for (int j = 1; j < n; j++)
				CHECK(b->column_ids[base + b->col_perm[base + j - 1]] <= b->column_ids[base + b->col_perm[base + j]]);
			/* padding only at the end, exactly one target, on row 0 */
			int targets = 0;

			for (int p = 0; p < S; p++)
			{
				if (p > 0 && b->is_padding[base + p - 1])
					CHECK(b->is_padding[base + p]);
				targets += b->is_target[base + p];
				if (b->is_target[base + p])
					CHECK_EQ_INT(b->seq_row_ids[base + p], 0);
			}
			CHECK_EQ_INT(targets, 1);
			/* out_perm groups rows contiguously */
			const HwCellSource *rows;
			int nrows;

			CHECK(hw_sampler_last_rows(sm, i, &rows, &nrows) == HW_OK);
			CHECK(nrows <= cfg.max_rows && nrows <= b->R);
			CHECK_EQ_INT(rows[0].row, shop_task->anchor_row[seeds[i]]);
			/* leakage: no row after the seed's obs time but the anchor (row
			 * 0 of a cell task): children are time-filtered, and parents too
			 * (future_parents "hide", the default) */
			int64_t obs = shop_task->obs_time_us[seeds[i]];
			const uint8_t *adj = b->fk_adj + (size_t) i * b->R * b->R;

			for (int r = 1; r < nrows; r++)
			{
				int64_t tm = shop->row_time_us[rows[r].row];

				CHECK_MSG(tm == HW_NO_TIME || tm <= obs, "row %lld after obs time in the sequence",
						  (long long) rows[r].row);
			}
			/* fk_adj matches the snapshot's FK edges among the taken rows */
			for (int r1 = 0; r1 < nrows; r1++)
				for (int r2 = 0; r2 < nrows; r2++)
				{
					bool edge = false;
					uint32_t g1 = (uint32_t) rows[r1].row, g2 = (uint32_t) rows[r2].row;

					for (uint64_t e = shop->fp_off[g1]; e < shop->fp_off[g1 + 1]; e++)
						edge |= shop->fp_dst[e] == g2;
					CHECK_EQ_INT(adj[(size_t) r1 * b->R + r2], edge);
				}
		}
		hw_batch_free(b);
	}
	hw_sampler_free(sm);
}

static bool
batches_equal(HwBatch *a, HwBatch *b)
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
		{
			printf("    tensor %s differs\n", va[i].name);
			return false;
		}
	}
	return true;
}

UNIT_TEST(sampler_identical_with_1_2_and_5_threads)
{
	shop_setup();
	for (int mode = 0; mode < 2; mode++)
	{
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 8;
	cfg.seq_len = 512;
	cfg.seed = 11;
	cfg.n_threads = 1;
	/* the defaults (recent children, no key cells), then the other two */
	cfg.child_sampling = mode ? HW_CHILD_UNIFORM : HW_CHILD_RECENT;
	cfg.key_cells = mode;
	HwSampler *s1 = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	cfg.n_threads = 2;
	HwSampler *s2 = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	cfg.n_threads = 5;          /* more threads than cores, and than some batches have sequences */
	HwSampler *s5 = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	CHECK(s1 && s2 && s5);
	/* also out of order on s2: batch k does not depend on history */
	for (int i = 0; i < 6; i++)
	{
		uint64_t k1 = (uint64_t) i, k2 = (uint64_t) (5 - i);
		HwBatch *a, *b, *c;

		CHECK(hw_sampler_batch(s1, HW_SPLIT_VAL, k1, &a, NULL, &err) == HW_OK);
		CHECK(hw_sampler_batch(s2, HW_SPLIT_VAL, k2, &c, NULL, &err) == HW_OK);
		CHECK(hw_sampler_batch(s2, HW_SPLIT_VAL, k1, &b, NULL, &err) == HW_OK);
		CHECK(batches_equal(a, b));
		hw_batch_free(c);
		CHECK(hw_sampler_batch(s5, HW_SPLIT_VAL, k1, &c, NULL, &err) == HW_OK);
		CHECK(batches_equal(a, c));
		hw_batch_free(a);
		hw_batch_free(b);
		hw_batch_free(c);
	}
	/* a 2-sequence seed batch on 5 threads */
	uint32_t two[2] = {3, 4};
	HwBatch *x, *y;

	CHECK(hw_sampler_seed_batch(s1, 0, two, 2, &x, &err) == HW_OK);
	CHECK(hw_sampler_seed_batch(s5, 0, two, 2, &y, &err) == HW_OK);
	CHECK(batches_equal(x, y));
	hw_batch_free(x);
	hw_batch_free(y);
	hw_sampler_free(s1);
	hw_sampler_free(s2);
	hw_sampler_free(s5);
	}
}

UNIT_TEST(sampler_epoch_covers_shard_once)
{
	shop_setup();
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 10;
	cfg.seq_len = 32;
	cfg.max_rows = 4;
	cfg.rank = 1;
	cfg.world_size = 3;
	HwSampler *sm = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	CHECK(sm);
	uint32_t n;
	const uint32_t *shard = hw_sampler_shard(sm, 0, HW_SPLIT_TEST, &n);

	CHECK(n > 20);
	uint8_t *hit = calloc(shop_task->nseeds, 1);
	uint32_t nb = (n / 10) * 10;

	for (uint64_t k = 0; k < nb / 10; k++)
	{
		uint32_t seeds[10];
		HwBatch *b;

		CHECK(hw_sampler_batch(sm, HW_SPLIT_TEST, k, &b, seeds, &err) == HW_OK);
		for (int i = 0; i < 10; i++)
		{
			CHECK_MSG(!hit[seeds[i]], "seed %u drawn twice in one epoch", seeds[i]);
			hit[seeds[i]] = 1;
		}
		hw_batch_free(b);
	}
	uint32_t got = 0;

	for (uint32_t i = 0; i < n; i++)
		got += hit[shard[i]];
	CHECK_EQ_INT(got, nb);
	free(hit);
	hw_sampler_free(sm);
}

UNIT_TEST(sampler_timestamp_tables_match_reference)
{
	/* enc_time's lookup tables must give the bits of hw_time_encode */
	shop_setup();
	HwError err = {0};
	HwTask *t = hw_task_new("total", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(t, shop, 3, synth_col_index(shop, 3, "total"), &err) == HW_OK);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 4;
	cfg.seq_len = 64;
	HwSampler *sm = hw_sampler_create(shop, &t, 1, &cfg, &err);

	CHECK(sm);
	uint32_t seeds[4] = {0, 1, 2, 3};
	HwBatch *b;

	CHECK(hw_sampler_seed_batch(sm, 0, seeds, 4, &b, &err) == HW_OK);
	int checked = 0;

	for (int p = 0; p < 4 * 64; p++)
		if (b->semantic_types[p] == HW_ST_TIMESTAMP && !b->is_null[p] && !b->is_padding[p])
		{
			const HwCellSource *rows;
			int nrows;

			hw_sampler_last_rows(sm, p / 64, &rows, &nrows);
			uint32_t g = (uint32_t) rows[b->seq_row_ids[p]].row;
			int ti = shop->row_table[g];
			int32_t tcol = shop->tables[ti].time_col;
			float ref[15];

			/* every timestamp column in the shop is its table's time column */
			CHECK(tcol >= 0);
			hw_time_encode(shop->tables[ti].cols[tcol].i64[g - shop->tables[ti].row_offset],
						   shop->ts_mean_us, shop->ts_std_us, ref);
			CHECK(memcmp(ref, b->timestamp_values + (size_t) p * 15, sizeof(ref)) == 0);
			checked++;
		}
	CHECK(checked > 4);
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(t);
}

/* Cell dropout: train batches only; a dropped cell is an eligible one (not
 * padding, not the target, not in the seed row) made NULL with zero
 * values; every other cell and the structure are those of the same batch
 * without dropout; about p of the eligible cells go; deterministic. */
UNIT_TEST(sampler_cell_dropout_train_only)
{
	shop_setup();
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 8;
	cfg.seq_len = 256;
	cfg.seed = 5;
	HwSampler *plain = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	cfg.cell_dropout = 0.3f;
	HwSampler *drop = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	CHECK(plain && drop);
	long eligible = 0, dropped = 0, row0_cells = 0;

	for (uint64_t k = 0; k < 4; k++)
	{
		HwBatch *a, *d, *again;

		CHECK(hw_sampler_batch(plain, HW_SPLIT_VAL, k, &a, NULL, &err) == HW_OK);
		CHECK(hw_sampler_batch(drop, HW_SPLIT_VAL, k, &d, NULL, &err) == HW_OK);
		CHECK(batches_equal(a, d));
		hw_batch_free(a);
		hw_batch_free(d);

		CHECK(hw_sampler_batch(plain, HW_SPLIT_TRAIN, k, &a, NULL, &err) == HW_OK);
		CHECK(hw_sampler_batch(drop, HW_SPLIT_TRAIN, k, &d, NULL, &err) == HW_OK);
		CHECK(hw_sampler_batch(drop, HW_SPLIT_TRAIN, k, &again, NULL, &err) == HW_OK);
		CHECK(batches_equal(d, again));
		CHECK(a->B == d->B && a->S == d->S && a->R == d->R && a->U == d->U);
		CHECK(memcmp(a->fk_adj, d->fk_adj, (size_t) a->B * a->R * a->R) == 0);
		for (size_t i = 0; i < (size_t) a->B * a->S; i++)
		{
			CHECK(a->column_ids[i] == d->column_ids[i] && a->seq_row_ids[i] == d->seq_row_ids[i] &&
				  a->is_padding[i] == d->is_padding[i] && a->is_target[i] == d->is_target[i] &&
				  a->semantic_types[i] == d->semantic_types[i]);
			bool ok_cell = !a->is_padding[i] && !a->is_target[i] && !a->is_null[i];

			if (ok_cell && a->seq_row_ids[i] == 0)
				row0_cells++;
			if (ok_cell && a->seq_row_ids[i] != 0)
				eligible++;
			if (d->is_null[i] && !a->is_null[i])
			{
				float zeros[HW_TS_DIM] = {0};

				CHECK(ok_cell && a->seq_row_ids[i] != 0);
				CHECK(d->numeric_values[i] == 0.0f && d->bool_values[i] == 0 &&
					  d->categorical_embed_ids[i] == 0 && d->text_embed_ids[i] == 0);
				CHECK(memcmp(d->timestamp_values + i * HW_TS_DIM, zeros, sizeof(zeros)) == 0);
				dropped++;
				continue;
			}
			CHECK(d->is_null[i] == a->is_null[i]);
			CHECK(d->numeric_values[i] == a->numeric_values[i] && d->bool_values[i] == a->bool_values[i] &&
				  d->categorical_embed_ids[i] == a->categorical_embed_ids[i] &&
				  d->text_embed_ids[i] == a->text_embed_ids[i]);
			CHECK(memcmp(d->timestamp_values + i * HW_TS_DIM, a->timestamp_values + i * HW_TS_DIM,
						 sizeof(float) * HW_TS_DIM) == 0);
		}
		hw_batch_free(a);
		hw_batch_free(d);
		hw_batch_free(again);
	}
	CHECK(row0_cells > 0 && eligible > 2000);
	CHECK_MSG(fabs((double) dropped / eligible - 0.3) < 0.03, "dropped %ld of %ld eligible cells", dropped, eligible);
	hw_sampler_free(plain);
	hw_sampler_free(drop);

	/* out of range: refused */
	cfg.cell_dropout = 0.95f;
	CHECK(hw_sampler_create(shop, &shop_task, 1, &cfg, &err) == NULL);
	CHECK_EQ_INT(err.code, HW_ERR_INVALID);
	cfg.cell_dropout = NAN;
	CHECK(hw_sampler_create(shop, &shop_task, 1, &cfg, &err) == NULL);
	cfg.cell_dropout = -0.1f;
	CHECK(hw_sampler_create(shop, &shop_task, 1, &cfg, &err) == NULL);
}

UNIT_TEST(sampler_rejects_bad_config)
{
	shop_setup();
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.seq_len = 70000;
	CHECK(hw_sampler_create(shop, &shop_task, 1, &cfg, &err) == NULL);
	CHECK_EQ_INT(err.code, HW_ERR_INVALID);
	hw_sampler_config_default(&cfg);
	cfg.rank = 2;
	cfg.world_size = 2;
	CHECK(hw_sampler_create(shop, &shop_task, 1, &cfg, &err) == NULL);
}

UNIT_TEST(sampler_query_prediction_masks_target)
{
	HwSnapshot *s = tiny();
	HwError err = {0};
	HwTask *t = hw_task_new("q", HW_TASK_QUERY, &err);

	t->anchor_table = 0;
	t->target_stype = HW_ST_NUMERICAL;
	CHECK(hw_task_alloc_seeds(t, 2, &err) == HW_OK);
	t->anchor_row[0] = 1; t->obs_time_us[0] = T0_US + 3 * DAY_US; t->target[0] = 1.0;
	t->anchor_row[1] = 1; t->obs_time_us[1] = T0_US + 4 * DAY_US; t->target[1] = 2.0;
	for (int i = 0; i < 2; i++)
		t->anchor_key[i] = s->tables[0].key_hash[1];
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	t->target_mean = 1.5;
	t->target_std = 0.5;
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 10;
	HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

	CHECK(sm);
	/* predict customer c1 at day 4: the same sequence as seed 1 but the
	 * target's value slot is empty; the history label (seed 0) is visible */
	uint32_t anchor = 1;
	int64_t obs = T0_US + 4 * DAY_US;
	HwBatch *b;

	CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, &obs, 1, &b, &err) == HW_OK);
	const int cols[7] = {8, 9, 1, 2, 3, 8, 9};

	for (int p = 0; p < 7; p++)
		CHECK_EQ_INT(b->column_ids[p], cols[p]);
	CHECK_EQ_INT(b->is_target[1], 1);
	CHECK(b->numeric_values[1] == 0.0f);
	CHECK_EQ_INT(b->is_null[1], 0);
	CHECK_CLOSE(b->numeric_values[6], -1.0, 1e-7, 0);
	hw_batch_free(b);
	/* anchors outside the anchor table are refused */
	anchor = 4;
	CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, &obs, 1, &b, &err) == HW_ERR_INVALID);
	hw_sampler_free(sm);
	hw_task_free(t);
	synth_free(s);
}

UNIT_TEST(sampler_task_weights_pick_batches)
{
	shop_setup();
	HwError err = {0};
	HwTask *t2 = hw_task_new("total", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(t2, shop, 3, synth_col_index(shop, 3, "total"), &err) == HW_OK);
	HwTask *tasks[2] = {shop_task, t2};
	double w[2] = {0.0, 1.0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 2;
	cfg.seq_len = 32;
	cfg.task_weights = w;
	HwSampler *sm = hw_sampler_create(shop, tasks, 2, &cfg, &err);

	CHECK(sm);
	for (uint64_t k = 0; k < 20; k++)
	{
		HwBatch *b;

		CHECK(hw_sampler_batch(sm, HW_SPLIT_TRAIN, k, &b, NULL, &err) == HW_OK);
		CHECK_EQ_INT(b->task_idx, 1);
		CHECK_EQ_INT(b->target_stype, HW_ST_NUMERICAL);
		hw_batch_free(b);
	}
	hw_sampler_free(sm);
	w[0] = 1.0;
	sm = hw_sampler_create(shop, tasks, 2, &cfg, &err);
	int seen[2] = {0, 0};

	for (uint64_t k = 0; k < 60; k++)
	{
		HwBatch *b;

		CHECK(hw_sampler_batch(sm, HW_SPLIT_TRAIN, k, &b, NULL, &err) == HW_OK);
		seen[b->task_idx]++;
		CHECK_EQ_INT(b->cat_emb_count, b->task_idx == 0 ? 4 : 0);
		hw_batch_free(b);
	}
	CHECK(seen[0] > 10 && seen[1] > 10);
	hw_sampler_free(sm);
	hw_task_free(t2);
}

UNIT_TEST(sampler_timestamp_fractional_and_negative)
{
	/* the sampler's table-driven encoding must give hw_time_encode's bits
	 * for fractional seconds and times before 1970 too */
	HwSnapshot *s = synth_new(4);
	int t = synth_add_table(s, "ev", 64, "id:identifier,at:timestamp,x:numerical", -1);
	HwError err = {0};

	for (int r = 0; r < 64; r++)
	{
		synth_col(s, t, "at")->i64[r] = (int64_t) (r - 32) * 987654321987LL + r * 123457;
		synth_col(s, t, "x")->f32[r] = (float) r;
	}
	CHECK(synth_finish(s) == 0);
	HwTask *task = hw_task_new("x", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(task, s, 0, 2, &err) == HW_OK);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 64;
	cfg.seq_len = 4;
	HwSampler *sm = hw_sampler_create(s, &task, 1, &cfg, &err);
	uint32_t seeds[64];

	for (int i = 0; i < 64; i++)
		seeds[i] = (uint32_t) i;
	HwBatch *b;

	CHECK(sm && hw_sampler_seed_batch(sm, 0, seeds, 64, &b, &err) == HW_OK);
	for (int i = 0; i < 64; i++)
	{
		float ref[15];

		/* ev's cells: at, x (no cell for the identifier id) */
		CHECK_EQ_INT(b->semantic_types[i * 4 + 0], HW_ST_TIMESTAMP);
		hw_time_encode(synth_col(s, t, "at")->i64[i], s->ts_mean_us, s->ts_std_us, ref);
		CHECK(memcmp(ref, b->timestamp_values + (size_t) (i * 4 + 0) * 15, sizeof(ref)) == 0);
	}
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(task);
	synth_free(s);
}
