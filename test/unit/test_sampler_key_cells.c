/*
 * test_sampler_key_cells.c: the key-cells option of the sampler.
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

UNIT_TEST(sampler_key_cells_option)
{
	/* post(id, score) <- post_tag(post_id, tag_id) -> tag(id, name):
	 * post_tag is a link table of nothing but keys */
	HwSnapshot *s = synth_new(4);
	int p = synth_add_table(s, "post", 2, "id:identifier,score:numerical", -1);
	int g = synth_add_table(s, "tag", 2, "id:identifier,name:categorical", -1);
	int l = synth_add_table(s, "post_tag", 2, "post_id:identifier,tag_id:identifier", -1);
	HwError err = {0};

	synth_set_ncat(s, g, "name", 2);
	synth_col(s, p, "score")->f32[0] = 1;
	synth_col(s, p, "score")->f32[1] = 2;
	synth_col(s, g, "name")->u32[1] = 1;
	int f1 = synth_add_fk(s, "post_tag_post_id_fkey", l, p);
	int f2 = synth_add_fk(s, "post_tag_tag_id_fkey", l, g);

	for (int r = 0; r < 2; r++)
	{
		synth_edge(s, synth_row(s, l, r), synth_row(s, p, 0), f1);
		synth_edge(s, synth_row(s, l, r), synth_row(s, g, r), f2);
	}
	CHECK(synth_finish(s) == 0);
	/* global columns: post.id 0, score 1, tag.id 2, name 3, post_tag.post_id 4, tag_id 5 */
	HwTask *t = hw_task_new("score", HW_TASK_CELL, &err);

	/* a key column is never a target (identifier cells carry no value) */
	CHECK(hw_task_build_cell(t, s, p, 0, &err) == HW_ERR_INVALID);
	CHECK(hw_task_build_cell(t, s, p, 1, &err) == HW_OK);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 32;
	cfg.n_threads = 1;
	CHECK(!cfg.key_cells);
	for (int kc = 0; kc < 2; kc++)
	{
		cfg.key_cells = kc;
		HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);
		uint32_t seed = 0;
		HwBatch *b;
		int per_col[6] = {0}, n = 0, targets = 0;

		CHECK(sm && hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		for (int q = 0; q < 32; q++)
			if (!b->is_padding[q])
			{
				per_col[b->column_ids[q]]++;
				n++;
				targets += b->is_target[q];
				if (b->is_target[q])
					CHECK(b->column_ids[q] == 1 && b->seq_row_ids[q] == 0);
			}
		/* rows: post0, both links, both tags: 5 in either mode */
		CHECK_EQ_INT(b->R, 5);
		CHECK_EQ_INT(targets, 1);
		/* fk_adj: link rows -> post0 and -> their tag */
		int edges = 0;

		for (int q = 0; q < 25; q++)
			edges += b->fk_adj[q];
		CHECK_EQ_INT(edges, 4);
		if (!kc)
		{
			/* score, name x2, and one cell per link row (its first key) */
			CHECK(per_col[0] == 0 && per_col[2] == 0 && per_col[5] == 0);
			CHECK(per_col[1] == 1 && per_col[3] == 2 && per_col[4] == 2);
			CHECK_EQ_INT(n, 5);
		}
		else
		{
			CHECK(per_col[0] == 1 && per_col[1] == 1 && per_col[2] == 2 && per_col[3] == 2 &&
				  per_col[4] == 2 && per_col[5] == 2);
			CHECK_EQ_INT(n, 10);
		}
		hw_batch_free(b);
		hw_sampler_free(sm);
	}
	hw_task_free(t);
	synth_free(s);

	/* the shop: no identifier cell by default (every table there has a
	 * value column), with key_cells some; the target always there */
	shop_setup();
	double rows_sum[2] = {0, 0};

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 16;
	cfg.seq_len = 256;
	cfg.seed = 9;
	cfg.n_threads = 2;
	for (int kc = 0; kc < 2; kc++)
	{
		cfg.key_cells = kc;
		HwSampler *sm = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);
		int ids = 0;

		CHECK(sm);
		for (uint64_t k = 0; k < 5; k++)
		{
			HwBatch *b;

			CHECK(hw_sampler_batch(sm, HW_SPLIT_TRAIN, k, &b, NULL, &err) == HW_OK);
			for (int i = 0; i < b->B; i++)
			{
				int targets = 0;
				const HwCellSource *rows;
				int nrows;

				for (int q = 0; q < 256; q++)
				{
					size_t pos = (size_t) i * 256 + q;

					ids += !b->is_padding[pos] && b->semantic_types[pos] == HW_ST_IDENTIFIER;
					targets += b->is_target[pos];
				}
				CHECK_EQ_INT(targets, 1);
				hw_sampler_last_rows(sm, i, &rows, &nrows);
				rows_sum[kc] += nrows;
			}
			hw_batch_free(b);
		}
		if (kc)
			CHECK(ids > 0);
		else
			CHECK_EQ_INT(ids, 0);
		hw_sampler_free(sm);
	}
	printf("  rows per sequence at S=256: %.1f without key cells, %.1f with\n", rows_sum[0] / 80, rows_sum[1] / 80);
	/* the point of it: more rows in the same S */
	CHECK_MSG(rows_sum[0] > 1.2 * rows_sum[1], "rows per sequence %.1f without key cells, %.1f with",
			  rows_sum[0] / 80, rows_sum[1] / 80);
}

UNIT_TEST(sampler_uniform_with_key_cells_is_the_previous_sampler)
{
	/* child_sampling uniform + key_cells + future_parents follow gives, bit
	 * for bit, the batches of the sampler before these options existed: a hash of the integer
	 * tensors of 5 batches, taken with that sampler (commit 7bb1b9a) */
	shop_setup();
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 8;
	cfg.seq_len = 256;
	cfg.seed = 3;
	cfg.n_threads = 1;
	cfg.max_rows = 60;
	cfg.child_sampling = HW_CHILD_UNIFORM;
	cfg.key_cells = true;
	cfg.future_parents = HW_FUTURE_PARENTS_FOLLOW;
	HwSampler *sm = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);
	uint64_t h = 0xcbf29ce484222325ULL;

	CHECK(sm);
	for (uint64_t k = 0; k < 5; k++)
	{
		HwBatch *b;

		CHECK(hw_sampler_batch(sm, HW_SPLIT_TRAIN, k, &b, NULL, &err) == HW_OK);
		size_t BS = (size_t) b->B * b->S;
		const struct { const void *p; size_t n; } parts[] = {
			{b->semantic_types, BS}, {b->column_ids, BS * 4}, {b->seq_row_ids, BS * 2},
			{b->is_null, BS}, {b->is_target, BS}, {b->is_padding, BS},
			{b->categorical_embed_ids, BS * 4}, {b->text_embed_ids, BS * 4},
			{b->col_perm, BS * 2}, {b->out_perm, BS * 2}, {b->in_perm, BS * 2},
			{&b->R, 4}, {b->fk_adj, (size_t) b->B * b->R * b->R}};

		for (size_t q = 0; q < sizeof(parts) / sizeof(parts[0]); q++)
			for (size_t i = 0; i < parts[q].n; i++)
			{
				h ^= ((const uint8_t *) parts[q].p)[i];
				h *= 0x100000001b3ULL;
			}
		hw_batch_free(b);
	}
	CHECK_MSG(h == 0xf98e9febecb505e4ULL, "hash %016llx", (unsigned long long) h);
	hw_sampler_free(sm);
}
