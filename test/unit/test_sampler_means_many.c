/*
 * test_sampler_means_many.c: child means of a row with more children than
 * the sampler reads (MEAN_SCAN_MAX), against a reference written from the
 * definition: the most recent children at or before obs (by time, then
 * row, where children are sorted by time; by row where they are not), the
 * time windows, NULLs left out, booleans as -1 / +1; and with mean_windows
 * "recent", windows 1-5 over the last 1, 3, 5, 10, 20 of those children.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "sampler_ref.h"
#include "core/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N_ORDERS = 1600, SCAN_MAX = 1024, S = 16 };

/* customer 0 with N_ORDERS - 1 orders on days 1..1400 out of row order
 * (several a day), customer 1 with one; amount NULL in a seventh, paid
 * NULL in an eleventh */
static HwSnapshot *
many_orders(void)
{
	HwSnapshot *s = synth_new(4);
	int c = synth_add_table(s, "customer", 2, "id:identifier,age:numerical", -1);
	int o = synth_add_table(s, "orders", N_ORDERS,
							"id:identifier,customer_id:identifier,at:timestamp,amount:numerical,paid:boolean", 2);
	int fk = synth_add_fk(s, "orders_customer_id_fkey", o, c);

	for (int r = 0; r < N_ORDERS; r++)
	{
		synth_edge(s, synth_row(s, o, r), synth_row(s, c, r < N_ORDERS - 1 ? 0 : 1), fk);
		synth_col(s, o, "at")->i64[r] = T0_US + (1 + (r * 611) % 1400) * DAY_US;
		synth_col(s, o, "amount")->f32[r] = 3.0f * (float) ((r * 37) % 101);
		synth_col(s, o, "amount")->valid[r] = r % 7 != 3;
		synth_col(s, o, "paid")->u8[r] = (r * 13) % 3 == 0;
		synth_col(s, o, "paid")->valid[r] = r % 11 != 5;
	}
	return synth_finish(s) == 0 ? s : NULL;
}

static int64_t *order_at;       /* for sorting customer 0's orders by (time, row) */

static int
by_time_then_row(const void *a, const void *b)
{
	int x = *(const int *) a, y = *(const int *) b;

	if (order_at[x] != order_at[y])
		return order_at[x] < order_at[y] ? -1 : 1;
	return x - y;
}

/* the reference: means [2][HW_CHILD_WINDOWS] of amount and paid over
 * customer 0's orders seen at obs; last_k: windows 1-5 over the last
 * 1, 3, 5, 10, 20 orders instead of their time windows */
static void
reference_means(HwSnapshot *s, int64_t obs, bool by_time, bool last_k, float want[2][HW_CHILD_WINDOWS])
{
	static const int k_of[6] = {0, 1, 3, 5, 10, 20};
	const HwColumn *amount = synth_col(s, 1, "amount"), *paid = synth_col(s, 1, "paid");
	int    idx[N_ORDERS], n = 0, first;
	double sum[2][HW_CHILD_WINDOWS] = {{0}};
	int    cnt[2][HW_CHILD_WINDOWS] = {{0}};

	order_at = synth_col(s, 1, "at")->i64;
	for (int r = 0; r < N_ORDERS - 1; r++)
		if (order_at[r] <= obs)
			idx[n++] = r;
	if (by_time)
		qsort(idx, (size_t) n, sizeof(int), by_time_then_row);
	first = n > SCAN_MAX ? n - SCAN_MAX : 0;
	for (int i = first; i < n; i++)
	{
		int    r = idx[i];
		double v[2] = {amount->f32[r], paid->u8[r] ? 1.0 : -1.0};
		bool   ok[2] = {amount->valid[r] != 0, paid->valid[r] != 0};

		for (int c = 0; c < 2; c++)
			for (int j = 0; j < HW_CHILD_WINDOWS && ok[c]; j++)
				if (j == 0 || (last_k && j <= 5 ? n - i <= k_of[j] :
							   (double) (obs - order_at[r]) < s->ts_std_us * pow(2.0, (j - 10) / 2.0)))
				{
					sum[c][j] += v[c];
					cnt[c][j]++;
				}
	}
	for (int c = 0; c < 2; c++)
		for (int j = 0; j < HW_CHILD_WINDOWS; j++)
			want[c][j] = cnt[c][j] ? (float) (sum[c][j] / cnt[c][j]) : 0.0f;
}

/* the first cell after the seed row's that carries counts (the customer's) */
static int
customer_cell(const HwBatch *b, int seq)
{
	for (int c = seq * S; c < (seq + 1) * S; c++)
		if (!b->is_padding[c] && b->child_key[(size_t) c * HW_CHILD_LINKS] != 0)
			return c;
	return -1;
}

/* Customer 0 seen from one of its orders at four observation days: 300
 * (about 340 orders, all read), 700, 1100 and 1500 (1,599 orders, the 1,024
 * most recent read), under both child policies, and with mean_windows
 * "recent" (the children sorted by time).  The windows split each set
 * (checked on the reference), so every window's read-off is tested. */
UNIT_TEST(sampler_child_means_many_children)
{
	HwSnapshot *s = many_orders();
	HwError     err = {0};
	const int   days[4] = {300, 700, 1100, 1500};

	CHECK(s != NULL);
	/* pol 0: recent children, 1: uniform, 2: recent with mean_windows "recent" */
	for (int pol = 0; pol < 3; pol++)
	{
		HwTask *t = hw_task_new("at", HW_TASK_CELL, &err);
		HwSamplerConfig cfg;
		HwSampler *sm;
		HwBatch   *b = NULL;
		uint32_t   rows[4];
		int64_t    obs[4];

		CHECK(hw_task_build_cell(t, s, 1, 2, &err) == HW_OK);
		hw_sampler_config_default(&cfg);
		cfg.seq_len = S;
		cfg.n_threads = 1;
		cfg.child_sampling = pol == 1 ? HW_CHILD_UNIFORM : HW_CHILD_RECENT;
		cfg.mean_windows = pol == 2 ? HW_MEAN_WINDOWS_RECENT : HW_MEAN_WINDOWS_TIME;
		sm = hw_sampler_create(s, &t, 1, &cfg, &err);
		CHECK_MSG(sm != NULL, "%s", err.msg);
		for (int k = 0; k < 4; k++)
		{
			rows[k] = s->tables[1].row_offset + 5;
			obs[k] = T0_US + days[k] * DAY_US + DAY_US / 2;
		}
		CHECK(hw_sampler_build_for_seeds(sm, 0, rows, obs, 4, &b, &err) == HW_OK);
		for (int k = 0; k < 4; k++)
		{
			float want[2][HW_CHILD_WINDOWS];
			int   cust = customer_cell(b, k), split = 0;

			reference_means(s, obs[k], pol != 1, pol == 2, want);
			for (int j = 2; j < HW_CHILD_WINDOWS; j++)
				split += want[0][j] != want[0][j - 1];
			CHECK_MSG(split >= 3, "day %d: the windows must split the orders (%d splits)", days[k], split);
			CHECK_MSG(cust >= 0, "day %d: no customer cell", days[k]);
			if (cust < 0)
				continue;
			for (int q = 0; q < HW_MEAN_SLOTS; q++)
				for (int j = 0; j < HW_CHILD_WINDOWS; j++)
				{
					float got = b->child_mean[((size_t) cust * HW_MEAN_SLOTS + q) * HW_CHILD_WINDOWS + j];
					float exp = q < 2 ? want[q][j] : 0.0f;

					CHECK_MSG(fabsf(got - exp) <= 1e-5f * (1.0f + fabsf(exp)),
							  "%s day %d slot %d window %d: mean %.7g, expected %.7g",
							  pol == 1 ? "uniform" : pol == 2 ? "recent windows" : "recent", days[k], q, j, got, exp);
				}
		}
		hw_batch_free(b);
		hw_sampler_free(sm);
		hw_task_free(t);
	}
	synth_free(s);
}
