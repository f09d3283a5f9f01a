/*
 * test_sampler_rank.c: hw_sampler_clone_rank, the sampler of another rank's
 * shards that data-parallel training uses (one per virtual rank: seed i
 * of a split belongs to rank i % world_size), on the random shop snapshot
 * of synth_snapshot.h.
 */
#include "unit.h"
#include "core/sampler.h"
#include "synth_snapshot.h"

#include <stdlib.h>
#include <string.h>

/* hw_sampler_clone_rank: a clone for rank r of w draws exactly the batches
 * (seeds and cells) of a sampler created for rank r of w, while the base
 * keeps its own shards; the ranks' shards partition the split. */
UNIT_TEST(sampler_clone_rank_equals_created_rank)
{
	HwError err = {0};
	HwSnapshot *shop = synth_shop(20000, 7, 8);
	HwTask     *shop_task = hw_task_new("status", HW_TASK_CELL, &err);

	CHECK(shop && shop_task);
	CHECK(hw_task_build_cell(shop_task, shop, 3, synth_col_index(shop, 3, "status"), &err) == HW_OK);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 6;
	cfg.seq_len = 48;
	cfg.max_rows = 8;
	cfg.n_threads = 1;
	HwSampler *base = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);
	uint32_t   nbase, total = 0;

	CHECK(base);
	hw_sampler_shard(base, 0, HW_SPLIT_TRAIN, &nbase);
	for (int r = 0; r < 3; r++)
	{
		HwSamplerConfig rc = cfg;

		rc.rank = r;
		rc.world_size = 3;
		HwSampler *made = hw_sampler_create(shop, &shop_task, 1, &rc, &err);
		HwSampler *cl = hw_sampler_clone_rank(base, r, 3, &err);
		uint32_t   n1, n2;

		CHECK(made && cl);
		hw_sampler_shard(made, 0, HW_SPLIT_TRAIN, &n1);
		hw_sampler_shard(cl, 0, HW_SPLIT_TRAIN, &n2);
		CHECK_EQ_INT(n1, n2);
		total += n2;
		for (uint64_t k = 0; k < 3; k++)
		{
			HwBatch *a, *b;
			uint32_t sa[6], sb[6];

			CHECK(hw_sampler_batch(made, HW_SPLIT_TRAIN, k, &a, sa, &err) == HW_OK);
			CHECK(hw_sampler_batch(cl, HW_SPLIT_TRAIN, k, &b, sb, &err) == HW_OK);
			CHECK(memcmp(sa, sb, sizeof(sa)) == 0);
			CHECK(memcmp(a->column_ids, b->column_ids, sizeof(int32_t) * 6 * 48) == 0);
			CHECK(memcmp(a->numeric_values, b->numeric_values, sizeof(float) * 6 * 48) == 0);
			hw_batch_free(a);
			hw_batch_free(b);
		}
		hw_sampler_free(cl);
		hw_sampler_free(made);
	}
	CHECK_EQ_INT(total, nbase);
	/* the base still draws its own (rank 0 of 1) shard after the clones went */
	uint32_t n0;

	hw_sampler_shard(base, 0, HW_SPLIT_TRAIN, &n0);
	CHECK_EQ_INT(n0, nbase);
	CHECK(hw_sampler_clone_rank(base, 3, 3, &err) == NULL);
	hw_sampler_free(base);
	hw_task_free(shop_task);
	synth_free(shop);
}
