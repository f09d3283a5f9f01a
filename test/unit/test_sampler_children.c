/*
 * test_sampler_children.c: which children a sequence takes when more
 * exist than fit: the most recent first, older ones as fallback.
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
 * One customer c0 with 40 orders at days 1..40, stored out of time order
 * (order row r is at day (17 r mod 40) + 1), so "most recent" cannot come
 * from the row order.  A query task on c0 without label history, all seeds
 * at (almost) the same observation time.
 */
static HwSnapshot *
history_db(void)
{
	HwSnapshot *s = synth_new(4);
	int c = synth_add_table(s, "customer", 1, "id:identifier,age:numerical", -1);
	int o = synth_add_table(s, "orders", 40, "id:identifier,customer_id:identifier,at:timestamp,amount:numerical", 2);
	int fk = synth_add_fk(s, "orders_customer_id_fkey", o, c);

	synth_col(s, c, "age")->f32[0] = 30;
	for (int r = 0; r < 40; r++)
	{
		synth_edge(s, synth_row(s, o, r), synth_row(s, c, 0), fk);
		synth_col(s, o, "at")->i64[r] = T0_US + (int64_t) ((17 * r) % 40 + 1) * DAY_US;
		synth_col(s, o, "amount")->f32[r] = (float) r;
	}
	if (synth_finish(s) != 0)
		return NULL;
	return s;
}

static HwTask *
history_task(const HwSnapshot *s, int n, int64_t obs)
{
	HwError err = {0};
	HwTask *t = hw_task_new("h", HW_TASK_QUERY, &err);

	t->anchor_table = 0;
	t->target_stype = HW_ST_NUMERICAL;
	t->label_history = false;
	hw_task_alloc_seeds(t, (uint32_t) n, &err);
	for (int i = 0; i < n; i++)
	{
		t->anchor_row[i] = 0;
		t->anchor_key[i] = s->tables[0].key_hash[0];
		/* i µs apart: a sequence's random draws are keyed by (anchor, obs
		 * time), so equal times would make 20 copies of one draw */
		t->obs_time_us[i] = obs == HW_NO_CUTOFF ? obs : obs + i;
		t->target[i] = i;
	}
	hw_task_assign_splits(t, &err);
	t->target_mean = 0;
	t->target_std = 1;
	return t;
}

/* The order days of each of n sequences (sorted ascending) into days[b][],
 * their count into cnt[b].  Returns false on a sampler error. */
static bool
order_days(const HwSnapshot *s, HwTask *t, const HwSamplerConfig *cfg, int n,
		   int days[][64], int *cnt)
{
	HwError err = {0};
	HwSampler *sm = hw_sampler_create(s, &t, 1, cfg, &err);
	uint32_t seeds[64];
	HwBatch *b;

	if (sm == NULL)
		return false;
	for (int i = 0; i < n; i++)
		seeds[i] = (uint32_t) i;
	if (hw_sampler_seed_batch(sm, 0, seeds, n, &b, &err) != HW_OK)
	{
		hw_sampler_free(sm);
		return false;
	}
	for (int i = 0; i < n; i++)
	{
		const HwCellSource *rows;
		int nrows;

		hw_sampler_last_rows(sm, i, &rows, &nrows);
		cnt[i] = 0;
		for (int r = 0; r < nrows; r++)
			if (rows[r].row >= 0 && s->row_table[rows[r].row] == 1)
			{
				int d = (int) ((s->row_time_us[rows[r].row] - T0_US) / DAY_US);
				int j = cnt[i]++;

				while (j > 0 && days[i][j - 1] > d)
				{
					days[i][j] = days[i][j - 1];
					j--;
				}
				days[i][j] = d;
			}
	}
	hw_batch_free(b);
	hw_sampler_free(sm);
	return true;
}

static bool
has_day(const int *days, int n, int d)
{
	for (int i = 0; i < n; i++)
		if (days[i] == d)
			return true;
	return false;
}

UNIT_TEST(sampler_recent_children_most_recent_first)
{
	HwSnapshot *s = history_db();

	CHECK(s != NULL);
	/* observed at day 30 noon: orders of days 1..30 visible, 31..40 not */
	HwTask *t = history_task(s, 20, T0_US + 30 * DAY_US + DAY_US / 2);
	HwSamplerConfig cfg;
	int days[20][64], cnt[20];

	hw_sampler_config_default(&cfg);
	cfg.bfs_child_width = 4;    /* recent_children -1: 2 most recent + 2 older */
	cfg.seq_len = 64;
	cfg.max_rows = 64;
	cfg.n_threads = 1;
	CHECK_EQ_INT(cfg.child_sampling, HW_CHILD_RECENT);
	CHECK(order_days(s, t, &cfg, 20, days, cnt));
	int older_seen[41] = {0}, distinct_older = 0;

	for (int i = 0; i < 20; i++)
	{
		CHECK_EQ_INT(cnt[i], 4);
		CHECK_EQ_INT(days[i][3], 30);               /* the most recent two, always */
		CHECK_EQ_INT(days[i][2], 29);
		CHECK(days[i][0] >= 1 && days[i][1] <= 28);  /* two older ones, never after obs */
		for (int j = 0; j < 2; j++)
			if (!older_seen[days[i][j]]++)
				distinct_older++;
	}
	CHECK_MSG(distinct_older >= 8, "older children are sampled, not fixed (%d distinct days)", distinct_older);

	/* the uniform policy over the same history misses the latest orders */
	int both = 0;

	cfg.child_sampling = HW_CHILD_UNIFORM;
	CHECK(order_days(s, t, &cfg, 20, days, cnt));
	for (int i = 0; i < 20; i++)
	{
		CHECK_EQ_INT(cnt[i], 4);
		CHECK(days[i][3] <= 30);
		both += has_day(days[i], 4, 29) && has_day(days[i], 4, 30);
	}
	CHECK_MSG(both <= 5, "uniform kept days 29 and 30 in %d of 20 sequences", both);

	/* recent_children = width: exactly the 4 most recent; 0: all drawn */
	cfg.child_sampling = HW_CHILD_RECENT;
	cfg.recent_children = 4;
	CHECK(order_days(s, t, &cfg, 20, days, cnt));
	for (int i = 0; i < 20; i++)
		CHECK(cnt[i] == 4 && days[i][0] == 27 && days[i][3] == 30);
	cfg.recent_children = 0;
	CHECK(order_days(s, t, &cfg, 20, days, cnt));
	both = 0;
	for (int i = 0; i < 20; i++)
	{
		CHECK(cnt[i] == 4 && days[i][3] <= 30);
		both += has_day(days[i], 4, 29) && has_day(days[i], 4, 30);
	}
	CHECK(both <= 5);
	cfg.recent_children = 5;    /* more than the width */
	HwError err = {0};

	CHECK(hw_sampler_create(s, &t, 1, &cfg, &err) == NULL);
	CHECK_EQ_INT(err.code, HW_ERR_INVALID);

	/* a budget that fits two orders: the recent ones come first in the
	 * frontier (virtual row 2 cells + c0's age + 2 x (at, amount) = 7) */
	cfg.recent_children = -1;
	cfg.seq_len = 7;
	CHECK(order_days(s, t, &cfg, 20, days, cnt));
	for (int i = 0; i < 20; i++)
		CHECK(cnt[i] == 2 && days[i][0] == 29 && days[i][1] == 30);
	hw_task_free(t);

	/* no cutoff: the most recent of the whole history */
	t = history_task(s, 8, HW_NO_CUTOFF);
	cfg.seq_len = 64;
	CHECK(order_days(s, t, &cfg, 8, days, cnt));
	for (int i = 0; i < 8; i++)
		CHECK(cnt[i] == 4 && days[i][2] == 39 && days[i][3] == 40);
	hw_task_free(t);
	synth_free(s);
}

UNIT_TEST(sampler_recent_children_fall_back_to_older)
{
	HwSnapshot *s = history_db();

	CHECK(s != NULL);
	HwSamplerConfig cfg;
	int days[20][64], cnt[20];

	hw_sampler_config_default(&cfg);
	cfg.bfs_child_width = 4;
	cfg.seq_len = 64;
	cfg.max_rows = 64;
	cfg.n_threads = 1;
	/* day 3 noon: only 3 orders exist by then, fewer than the width: all
	 * of them, under either policy and any recent_children */
	HwTask *t = history_task(s, 20, T0_US + 3 * DAY_US + DAY_US / 2);

	for (int pol = 0; pol < 2; pol++)
		for (int k = -1; k <= 4; k += 5)
		{
			cfg.child_sampling = pol;
			cfg.recent_children = k;
			CHECK(order_days(s, t, &cfg, 20, days, cnt));
			for (int i = 0; i < 20; i++)
				CHECK(cnt[i] == 3 && days[i][0] == 1 && days[i][1] == 2 && days[i][2] == 3);
		}
	hw_task_free(t);
	/* day 5 noon: 5 orders; the 2 most recent (4, 5) and 2 of days 1..3 */
	t = history_task(s, 20, T0_US + 5 * DAY_US + DAY_US / 2);
	cfg.child_sampling = HW_CHILD_RECENT;
	cfg.recent_children = -1;
	CHECK(order_days(s, t, &cfg, 20, days, cnt));
	for (int i = 0; i < 20; i++)
		CHECK(cnt[i] == 4 && days[i][1] <= 3 && days[i][2] == 4 && days[i][3] == 5);
	/* all 5 fit the width but the budget fits two: the newest two (the
	 * frontier ranks a group's children newest first) */
	cfg.bfs_child_width = 8;
	cfg.seq_len = 7;
	CHECK(order_days(s, t, &cfg, 20, days, cnt));
	for (int i = 0; i < 20; i++)
		CHECK(cnt[i] == 2 && days[i][0] == 4 && days[i][1] == 5);
	cfg.child_sampling = HW_CHILD_UNIFORM;
	CHECK(order_days(s, t, &cfg, 20, days, cnt));
	int newest = 0;

	for (int i = 0; i < 20; i++)
		newest += cnt[i] == 2 && days[i][0] == 4 && days[i][1] == 5;
	CHECK_MSG(newest <= 8, "uniform kept the newest two in %d of 20", newest);
	cfg.child_sampling = HW_CHILD_RECENT;
	cfg.bfs_child_width = 4;
	cfg.seq_len = 64;
	hw_task_free(t);
	/* before the first order: none */
	t = history_task(s, 4, T0_US);
	CHECK(order_days(s, t, &cfg, 4, days, cnt));
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(cnt[i], 0);
	hw_task_free(t);
	synth_free(s);
}

UNIT_TEST(sampler_recent_children_on_the_shop)
{
	/* every child at or before the seed's time, and per (row, FK) the
	 * recent_children most recent of the visible ones are taken whenever
	 * a row's visible children exceed the width */
	shop_setup();
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 16;
	cfg.seq_len = 1024;
	cfg.max_rows = 400;
	cfg.bfs_child_width = 4;
	cfg.seed = 5;
	cfg.n_threads = 2;
	/* a query task on customers (many orders and reviews each, skewed),
	 * observed at 2021-08-23 (the shop's history spans 2020-2023) */
	HwTask *t = hw_task_new("cust", HW_TASK_QUERY, &err);
	const HwTable *ct = &shop->tables[1];

	t->anchor_table = 1;
	t->target_stype = HW_ST_NUMERICAL;
	t->label_history = false;
	CHECK(hw_task_alloc_seeds(t, ct->nrows, &err) == HW_OK);
	for (uint32_t r = 0; r < ct->nrows; r++)
	{
		t->anchor_row[r] = ct->row_offset + r;
		t->anchor_key[r] = ct->key_hash[r];
		t->obs_time_us[r] = (1577836800LL + 600LL * 86400) * 1000000LL;
	}
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	t->target_std = 1;
	HwSampler *sm = hw_sampler_create(shop, &t, 1, &cfg, &err);

	CHECK_MSG(sm != NULL, "%s", err.msg);
	int checked = 0;

	for (uint64_t k = 0; k < 10; k++)
	{
		HwBatch *b;
		uint32_t seeds[16];

		CHECK(hw_sampler_batch(sm, HW_SPLIT_TRAIN, k, &b, seeds, &err) == HW_OK);
		for (int i = 0; i < b->B; i++)
		{
			const HwCellSource *rows;
			int nrows;

			hw_sampler_last_rows(sm, i, &rows, &nrows);
			int64_t obs = t->obs_time_us[seeds[i]];
			uint32_t g = t->anchor_row[seeds[i]];

			/* row 1 (the customer, after the virtual row) is expanded
			 * first: for each FK of its children, the 2 most recent
			 * visible ones are in the sequence */
			CHECK_EQ_INT(rows[1].row, g);
			for (uint64_t e = shop->pf_off[g]; e < shop->pf_off[g + 1];)
			{
				uint16_t fk = shop->pf_fk[e];
				uint64_t e1 = e;
				int64_t best[2] = {INT64_MIN, INT64_MIN};
				uint32_t brow[2] = {0, 0};
				int visible = 0;

				while (e1 < shop->pf_off[g + 1] && shop->pf_fk[e1] == fk)
				{
					uint32_t c = shop->pf_dst[e1++];
					int64_t tm = shop->row_time_us[c];

					if (tm > obs)
						continue;
					visible++;
					/* most recent by (time, row) */
					if (tm > best[0] || (tm == best[0] && c > brow[0]))
					{
						best[1] = best[0]; brow[1] = brow[0];
						best[0] = tm; brow[0] = c;
					}
					else if (tm > best[1] || (tm == best[1] && c > brow[1]))
					{
						best[1] = tm; brow[1] = c;
					}
				}
				if (visible > cfg.bfs_child_width)
				{
					for (int q = 0; q < 2; q++)
					{
						bool in = false;

						for (int r = 0; r < nrows; r++)
							in |= rows[r].row == (int64_t) brow[q];
						CHECK_MSG(in, "recent child %u of customer %u missing", brow[q], g);
					}
					checked++;
				}
				e = e1;
			}
			/* and no child after obs: leakage as in the property test */
			const uint8_t *adj = b->fk_adj + (size_t) i * b->R * b->R;

			for (int r = 1; r < nrows; r++)
			{
				int64_t tm = shop->row_time_us[rows[r].row];

				if (tm != HW_NO_TIME && tm > obs)
				{
					bool is_parent = false;

					for (int x = 0; x < nrows; x++)
						is_parent |= adj[(size_t) x * b->R + r] != 0;
					CHECK(is_parent);
				}
			}
		}
		hw_batch_free(b);
	}
	CHECK_MSG(checked > 10, "only %d customers with more visible children than the width", checked);
	printf("  %d (customer, FK) groups over the width checked\n", checked);
	hw_sampler_free(sm);
	hw_task_free(t);
}
