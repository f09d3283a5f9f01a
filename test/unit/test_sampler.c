/*
 * test_sampler.c: the sampler against hand-computed sequences on a tiny
 * snapshot, and properties over many seeds of a random shop snapshot.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "sampler_ref.h"
#include "sampler.h"
#include "timeenc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/*
 * Tiny database:
 *   customer(id, age num, seg cat K=2, bio text)   rows c0 c1 c2 (global 0..2)
 *     age 30 40 50; seg 1 0 NULL; bio text#5 text#2 NULL
 *   orders(id, customer_id, at ts*, amount num)     rows o0..o3 (global 3..6)
 *     o0 -> c0 day 10, 10.0;  o1 -> c0 day 20, 20.0;  o2 -> c0 day 30, 30.0;
 *     o3 -> c1 day 5, 40.0
 * Global columns: customer id 0, age 1, seg 2, bio 3; orders id 4,
 * customer_id 5, at 6, amount 7.
 */
static HwSnapshot *
tiny(void)
{
	HwSnapshot *s = synth_new(4);
	int c = synth_add_table(s, "customer", 3, "id:identifier,age:numerical,seg:categorical,bio:text", -1);
	int o = synth_add_table(s, "orders", 4, "id:identifier,customer_id:identifier,at:timestamp,amount:numerical", 2);

	synth_set_ntext(s, 8);
	synth_set_ncat(s, c, "seg", 2);
	float ages[3] = {30, 40, 50};

	for (int r = 0; r < 3; r++)
		synth_col(s, c, "age")->f32[r] = ages[r];
	synth_col(s, c, "seg")->u32[0] = 1;
	synth_col(s, c, "seg")->u32[1] = 0;
	synth_col(s, c, "seg")->valid[2] = 0;
	synth_col(s, c, "bio")->u32[0] = 5;
	synth_col(s, c, "bio")->u32[1] = 2;
	synth_col(s, c, "bio")->valid[2] = 0;
	int fk = synth_add_fk(s, "orders_customer_id_fkey", o, c);
	int cust[4] = {0, 0, 0, 1};
	int days[4] = {10, 20, 30, 5};

	for (int r = 0; r < 4; r++)
	{
		synth_edge(s, synth_row(s, o, r), synth_row(s, c, cust[r]), fk);
		synth_col(s, o, "at")->i64[r] = T0_US + days[r] * DAY_US;
		synth_col(s, o, "amount")->f32[r] = 10.0f * (r + 1);
	}
	if (synth_finish(s) != 0)
		return NULL;
	return s;
}

static bool
u16_eq(const uint16_t *a, const int *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* Sequence 0 of b holds cells 0..n-1 with these column ids, rows and
 * semantic types (the target at position `target`, nothing NULL), then
 * padding up to S. */
/* CHECK_EQ_INT for a helper that returns bool: fail, then return false. */
#define CELL_EQ(a, b) do { long long _a = (long long) (a), _b = (long long) (b); \
	if (_a != _b) { unit_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, _a, #b, _b); \
		return false; } } while (0)

static bool
cells_are(const HwBatch *b, int n, const int *cols, const int *rows, const int *st, int target, int S)
{
	for (int p = 0; p < n; p++)
	{
		CELL_EQ(b->column_ids[p], cols[p]);
		CELL_EQ(b->seq_row_ids[p], rows[p]);
		CELL_EQ(b->semantic_types[p], st[p]);
		CELL_EQ(b->is_padding[p], 0);
		CELL_EQ(b->is_target[p], p == target);
		CELL_EQ(b->is_null[p], 0);
	}
	for (int p = n; p < S; p++)
	{
		CELL_EQ(b->is_padding[p], 1);
		CELL_EQ(b->column_ids[p], 0);
		CELL_EQ(b->is_target[p], 0);
	}
	return true;
}
#undef CELL_EQ

static void
print_u16(const char *what, const uint16_t *a, int n)
{
	printf("    %s:", what);
	for (int i = 0; i < n; i++)
		printf(" %u", a[i]);
	printf("\n");
}

UNIT_TEST(sampler_exact_cell_task_sequence)
{
	HwSnapshot *s = tiny();
	HwError err = {0};

	CHECK(s != NULL);
	HwTask *t = hw_task_new("amount", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(t, s, 1, 3, &err) == HW_OK);
	CHECK_EQ_INT(t->nseeds, 4);
	CHECK_EQ_INT(t->obs_time_us[1], T0_US + 20 * DAY_US);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 16;
	cfg.n_threads = 1;
	HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

	CHECK_MSG(sm != NULL, "%s", err.msg);
	uint32_t seed = 1;           /* o1 */
	HwBatch *b = NULL;

	CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
	/* rows: o1 (seed), c0 (parent), o0 (child of c0 at day 10 <= 20; o2 at
	 * day 30 dropped); no cells for the identifier columns (customer id 0,
	 * orders id 4, customer_id 5) */
	CHECK_EQ_INT(b->R, 3);
	const int cols[7] = {6, 7, 1, 2, 3, 6, 7};
	const int rows[7] = {0, 0, 1, 1, 1, 2, 2};
	const int st[7] = {2, 1, 1, 4, 5, 2, 1};

	CHECK(cells_are(b, 7, cols, rows, st, 1, 16));
	/* values: amount z-scores (mean 25, std sqrt(125)); age z of 30 (mean 40, std sqrt(200/3)) */
	CHECK_CLOSE(b->numeric_values[1], (20.0 - 25.0) / sqrt(125.0), 1e-6, 0);
	CHECK_CLOSE(b->numeric_values[6], (10.0 - 25.0) / sqrt(125.0), 1e-6, 0);
	CHECK_CLOSE(b->numeric_values[2], (30.0 - 40.0) / sqrt(200.0 / 3.0), 1e-6, 0);
	CHECK_EQ_INT(b->categorical_embed_ids[3], 1);
	CHECK_EQ_INT(b->text_embed_ids[4], 0);           /* batch-local */
	CHECK_EQ_INT(b->U, 1);
	CHECK(memcmp(b->text_batch_embeddings, s->text_emb + 5 * 4, 4 * 2) == 0);
	float ts[15];

	hw_time_encode(T0_US + 20 * DAY_US, s->ts_mean_us, s->ts_std_us, ts);
	CHECK(memcmp(b->timestamp_values + 0 * 15, ts, sizeof(ts)) == 0);
	/* the seed's observation time (a cell task: its own time, day 20), z-scored
	 * exactly as its timestamp cell: what the model's relative time reads */
	CHECK(b->seed_time[0] == ts[14]);
	/* link keys (the model's link codes): the seed row none; c0 reached as
	 * o1's parent and o0 as c0's child through the same FK, in the two
	 * directions: two different nonzero keys, the same on every cell of a row */
	CHECK(b->link_key[0] == 0 && b->link_key[1] == 0);
	CHECK(b->link_key[2] != 0 && b->link_key[3] == b->link_key[2] && b->link_key[4] == b->link_key[2]);
	CHECK(b->link_key[5] != 0 && b->link_key[6] == b->link_key[5] && b->link_key[5] != b->link_key[2]);
	CHECK(b->link_key[7] == 0);      /* padding */
	hw_time_encode(T0_US + 10 * DAY_US, s->ts_mean_us, s->ts_std_us, ts);
	CHECK(memcmp(b->timestamp_values + 5 * 15, ts, sizeof(ts)) == 0);
	/* fk_adj [1,3,3]: o1 -> c0, o0 -> c0 (the structure the key cells carried) */
	const uint8_t adj[9] = {0, 1, 0, 0, 0, 0, 0, 1, 0};

	CHECK(memcmp(b->fk_adj, adj, 9) == 0);
	/* permutations (hand-computed, see docs/sampler.md): rows in RCM order
	 * out [o0, o1, c0], in [o0, c0, o1] as with key cells; col_perm by
	 * column id 1, 2, 3, 6, 6, 7, 7 */
	const int colp[16] = {2, 3, 4, 0, 5, 1, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
	const int outp[16] = {5, 6, 0, 1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15};
	const int inp[16] = {5, 6, 2, 3, 4, 0, 1, 7, 8, 9, 10, 11, 12, 13, 14, 15};

	if (!u16_eq(b->col_perm, colp, 16)) print_u16("col_perm", b->col_perm, 16);
	if (!u16_eq(b->out_perm, outp, 16)) print_u16("out_perm", b->out_perm, 16);
	if (!u16_eq(b->in_perm, inp, 16)) print_u16("in_perm", b->in_perm, 16);
	CHECK(u16_eq(b->col_perm, colp, 16));
	CHECK(u16_eq(b->out_perm, outp, 16));
	CHECK(u16_eq(b->in_perm, inp, 16));
	CHECK_EQ_INT(b->target_stype, HW_ST_NUMERICAL);
	CHECK_EQ_INT(b->task_idx, 0);
	CHECK_EQ_INT(b->cat_emb_count, 0);
	hw_batch_free(b);

	/* prediction path: same sequence, target value slot zeroed */
	uint32_t anchor = 4;

	CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, NULL, 1, &b, &err) == HW_OK);
	CHECK_EQ_INT(b->is_target[1], 1);
	CHECK(b->numeric_values[1] == 0.0f);
	CHECK_EQ_INT(b->R, 3);
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(t);
	synth_free(s);
}

static bool
counts_are(const HwBatch *b, int cell, uint32_t key0, const int *want)
{
	const uint32_t *key = b->child_key + (size_t) cell * HW_CHILD_LINKS;
	const uint16_t *cnt = b->child_count + (size_t) cell * HW_CHILD_LINKS * HW_CHILD_WINDOWS;

	for (int l = 0; l < HW_CHILD_LINKS; l++)
		for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		{
			int expect = l == 0 && want ? want[w] : 0;

			if (cnt[l * HW_CHILD_WINDOWS + w] != expect)
			{
				unit_fail(__FILE__, __LINE__, "cell %d link %d window %d: count %u, expected %d",
						  cell, l, w, cnt[l * HW_CHILD_WINDOWS + w], expect);
				return false;
			}
		}
	if (key[0] != (want ? key0 : 0u))
	{
		unit_fail(__FILE__, __LINE__, "cell %d: key %u, expected %u", cell, key[0], want ? key0 : 0u);
		return false;
	}
	for (int l = 1; l < HW_CHILD_LINKS; l++)
		if (key[l] != 0)
			return false;
	return true;
}

/* Child counts (the model's temporal degree input) on the hand-built
 * snapshot, under both child policies (RECENT reads them by binary search
 * in time-sorted groups, UNIFORM by a scan): c0's orders at days 10, 20,
 * 30 seen from o1 (day 20: the day-30 order is not counted), c1's from o3
 * (day 5), and c0's from a customer cell task (no cutoff: all three, no
 * windows).  Orders have no children: their cells carry no counts. */
UNIT_TEST(sampler_child_counts_hand_case)
{
	HwSnapshot *s = tiny();
	HwError err = {0};
	const int c0_days[3] = {10, 20, 30}, c1_days[1] = {5};
	int want[HW_CHILD_WINDOWS];

	CHECK(s != NULL);
	for (int pol = 0; pol < 2; pol++)
	{
		HwTask *t = hw_task_new("amount", HW_TASK_CELL, &err);
		HwTask *tc = hw_task_new("age", HW_TASK_CELL, &err);
		HwSamplerConfig cfg;
		HwBatch *b = NULL;

		CHECK(hw_task_build_cell(t, s, 1, 3, &err) == HW_OK);
		hw_sampler_config_default(&cfg);
		cfg.batch_size = 1;
		cfg.seq_len = 16;
		cfg.n_threads = 1;
		cfg.child_sampling = pol ? HW_CHILD_UNIFORM : HW_CHILD_RECENT;
		HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

		CHECK_MSG(sm != NULL, "%s", err.msg);
		uint32_t seed = 1;           /* o1: cells o1 0-1, c0 2-4, o0 5-6 */

		CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		naive_child_counts(s, c0_days, 3, 20, true, want);
		CHECK_EQ_INT(want[0], 2);
		CHECK(want[1] == 1 && want[HW_CHILD_WINDOWS - 1] == 2);   /* the windows do split them */
		for (int cell = 2; cell <= 4; cell++)
			CHECK(counts_are(b, cell, b->link_key[5], want));     /* the key o0 was reached by */
		CHECK(counts_are(b, 0, 0, NULL) && counts_are(b, 1, 0, NULL) && counts_are(b, 5, 0, NULL) &&
			  counts_are(b, 6, 0, NULL) && counts_are(b, 7, 0, NULL));
		hw_batch_free(b);
		seed = 3;                    /* o3 (day 5) -> c1 */
		CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		naive_child_counts(s, c1_days, 1, 5, true, want);
		CHECK(want[1] == 1);
		CHECK(counts_are(b, 2, b->child_key[2 * HW_CHILD_LINKS], want) && b->child_key[2 * HW_CHILD_LINKS] != 0);
		hw_batch_free(b);
		hw_sampler_free(sm);

		/* no cutoff: a cell task on customers (no time column) */
		CHECK(hw_task_build_cell(tc, s, 0, 1, &err) == HW_OK);
		sm = hw_sampler_create(s, &tc, 1, &cfg, &err);
		CHECK_MSG(sm != NULL, "%s", err.msg);
		seed = 0;                    /* c0: its cells first */
		CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		naive_child_counts(s, c0_days, 3, 0, false, want);
		CHECK(want[0] == 3 && want[1] == 0);
		CHECK(counts_are(b, 0, b->child_key[0], want) && b->child_key[0] != 0);
		hw_batch_free(b);
		hw_sampler_free(sm);
		hw_task_free(t);
		hw_task_free(tc);
	}
	synth_free(s);
}

/* Expected child means of a row's first (FK, column) pair, computed
 * naively: the mean of vals over the children counted by
 * naive_child_counts, per window; 0 where there are none. */
static void
naive_child_means(const HwSnapshot *s, const int *days, const float *vals, int n, int obs_day, bool cutoff,
				  float *out)
{
	double sum[HW_CHILD_WINDOWS] = {0};
	int    cnt[HW_CHILD_WINDOWS] = {0};

	for (int i = 0; i < n; i++)
	{
		if (cutoff && days[i] > obs_day)
			continue;
		sum[0] += vals[i];
		cnt[0]++;
		for (int j = 1; j < HW_CHILD_WINDOWS && cutoff; j++)
			if ((double) (obs_day - days[i]) * DAY_US < s->ts_std_us * pow(2.0, (j - 10) / 2.0))
			{
				sum[j] += vals[i];
				cnt[j]++;
			}
	}
	for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		out[j] = cnt[j] ? (float) (sum[j] / cnt[j]) : 0.0f;
}

/* The cell's mean slots: slot 0 with key0 (nonzero) and the means of want,
 * all others empty; want NULL: no slot at all. */
static bool
means_are(const HwBatch *b, int cell, const float *want)
{
	const uint32_t *key = b->mean_key + (size_t) cell * HW_MEAN_SLOTS;
	const float    *mean = b->child_mean + (size_t) cell * HW_MEAN_SLOTS * HW_CHILD_WINDOWS;

	if ((key[0] != 0) != (want != NULL))
	{
		unit_fail(__FILE__, __LINE__, "cell %d: mean key %u, expected %s", cell, key[0], want ? "one" : "none");
		return false;
	}
	for (int q = 0; q < HW_MEAN_SLOTS; q++)
		for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		{
			float expect = q == 0 && want ? want[w] : 0.0f;

			if (fabsf(mean[q * HW_CHILD_WINDOWS + w] - expect) > 1e-5f || (q > 0 && key[q] != 0))
			{
				unit_fail(__FILE__, __LINE__, "cell %d slot %d window %d: mean %g, expected %g",
						  cell, q, w, mean[q * HW_CHILD_WINDOWS + w], expect);
				return false;
			}
		}
	return true;
}

/* Child means on the hand-built snapshot, under both child policies: the
 * mean of orders.amount over c0's orders at days 10, 20, 30 (amounts 10,
 * 20, 30) seen from o1 (day 20) by a task on orders.at: 15 over all, 20 in
 * the windows too narrow for the day-10 order; from a customer task (no
 * cutoff): 20, no windows.  A task on orders.amount itself gets no mean of
 * amount anywhere (the seed is its customer's child, dated at obs: its
 * masked value would reach the customer's cells). */
UNIT_TEST(sampler_child_means_hand_case)
{
	HwSnapshot *s = tiny();
	HwError err = {0};
	const int c0_days[3] = {10, 20, 30};
	float c0_amount[3];         /* amounts 10, 20, 30 as the snapshot stores them: z-scores */
	float want[HW_CHILD_WINDOWS];

	CHECK(s != NULL);
	for (int r = 0; r < 3; r++)
		c0_amount[r] = synth_col(s, 1, "amount")->f32[r];
	CHECK(c0_amount[0] < c0_amount[1] && c0_amount[1] < c0_amount[2]);
	for (int pol = 0; pol < 2; pol++)
	{
		HwTask *ta = hw_task_new("at", HW_TASK_CELL, &err);
		HwTask *tm = hw_task_new("amount", HW_TASK_CELL, &err);
		HwTask *tc = hw_task_new("age", HW_TASK_CELL, &err);
		HwSamplerConfig cfg;
		HwBatch *b = NULL;
		uint32_t seed = 1, key0;    /* o1: cells o1, then c0's (age, seg, bio), then o0's */
		HwSampler *sm;

		CHECK(hw_task_build_cell(ta, s, 1, 2, &err) == HW_OK);
		CHECK(hw_task_build_cell(tm, s, 1, 3, &err) == HW_OK);
		CHECK(hw_task_build_cell(tc, s, 0, 1, &err) == HW_OK);
		hw_sampler_config_default(&cfg);
		cfg.batch_size = 1;
		cfg.seq_len = 16;
		cfg.n_threads = 1;
		cfg.child_sampling = pol ? HW_CHILD_UNIFORM : HW_CHILD_RECENT;

		sm = hw_sampler_create(s, &ta, 1, &cfg, &err);
		CHECK_MSG(sm != NULL, "%s", err.msg);
		CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		naive_child_means(s, c0_days, c0_amount, 3, 20, true, want);
		CHECK(fabsf(want[0] - (c0_amount[0] + c0_amount[1]) / 2) < 1e-6f && want[1] == c0_amount[1] &&
			  want[HW_CHILD_WINDOWS - 1] == want[0]);   /* the windows do split them */
		/* the customer's cells: the ones after the seed row's that carry counts */
		int cust = -1;

		for (int c = 0; c < 16 && cust < 0; c++)
			if (!b->is_padding[c] && b->child_key[(size_t) c * HW_CHILD_LINKS] != 0)
				cust = c;
		CHECK(cust > 0);
		if (cust > 0)
		{
			CHECK(means_are(b, cust, want));
			key0 = b->mean_key[(size_t) cust * HW_MEAN_SLOTS];
			CHECK(key0 != b->child_key[(size_t) cust * HW_CHILD_LINKS]);   /* its own code */
			CHECK(means_are(b, 0, NULL));                                   /* orders have no children */
		}
		hw_batch_free(b);
		hw_sampler_free(sm);

		/* the task on amount: no mean of amount, the customer's counts stay */
		sm = hw_sampler_create(s, &tm, 1, &cfg, &err);
		CHECK_MSG(sm != NULL, "%s", err.msg);
		CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		for (int c = 0; c < 16; c++)
			if (!b->is_padding[c])
				CHECK(means_are(b, c, NULL));
		CHECK(cust > 0 && b->child_key[(size_t) cust * HW_CHILD_LINKS] != 0);
		hw_batch_free(b);
		hw_sampler_free(sm);

		/* no cutoff: all three orders, no windows */
		sm = hw_sampler_create(s, &tc, 1, &cfg, &err);
		CHECK_MSG(sm != NULL, "%s", err.msg);
		seed = 0;
		CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		naive_child_means(s, c0_days, c0_amount, 3, 0, false, want);
		CHECK(fabsf(want[0] - (c0_amount[0] + c0_amount[1] + c0_amount[2]) / 3) < 1e-6f && want[1] == 0.0f);
		CHECK(means_are(b, 0, want));
		hw_batch_free(b);
		hw_sampler_free(sm);
		hw_task_free(ta);
		hw_task_free(tm);
		hw_task_free(tc);
	}
	synth_free(s);
}


UNIT_TEST(sampler_exact_cell_task_sequence_key_cells)
{
	HwSnapshot *s = tiny();
	HwError err = {0};

	CHECK(s != NULL);
	HwTask *t = hw_task_new("amount", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(t, s, 1, 3, &err) == HW_OK);
	CHECK_EQ_INT(t->nseeds, 4);
	CHECK_EQ_INT(t->obs_time_us[1], T0_US + 20 * DAY_US);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 16;
	cfg.n_threads = 1;
	cfg.key_cells = true;       /* the identifier columns emit cells too */
	HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

	CHECK_MSG(sm != NULL, "%s", err.msg);
	uint32_t seed = 1;           /* o1 */
	HwBatch *b = NULL;

	CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
	/* rows: o1 (seed), c0 (parent), o0 (child of c0 at day 10 <= 20; o2 at day 30 dropped) */
	CHECK_EQ_INT(b->R, 3);
	const int cols[12] = {4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7};
	const int rows[12] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
	const int st[12] = {0, 0, 2, 1, 0, 1, 4, 5, 0, 0, 2, 1};

	CHECK(cells_are(b, 12, cols, rows, st, 3, 16));
	/* values: amount z-scores (mean 25, std sqrt(125)); age z of 30 (mean 40, std sqrt(200/3)) */
	CHECK_CLOSE(b->numeric_values[3], (20.0 - 25.0) / sqrt(125.0), 1e-6, 0);
	CHECK_CLOSE(b->numeric_values[11], (10.0 - 25.0) / sqrt(125.0), 1e-6, 0);
	CHECK_CLOSE(b->numeric_values[5], (30.0 - 40.0) / sqrt(200.0 / 3.0), 1e-6, 0);
	CHECK_EQ_INT(b->categorical_embed_ids[6], 1);
	CHECK_EQ_INT(b->text_embed_ids[7], 0);           /* batch-local */
	CHECK_EQ_INT(b->U, 1);
	CHECK(memcmp(b->text_batch_embeddings, s->text_emb + 5 * 4, 4 * 2) == 0);
	float ts[15];

	hw_time_encode(T0_US + 20 * DAY_US, s->ts_mean_us, s->ts_std_us, ts);
	CHECK(memcmp(b->timestamp_values + 2 * 15, ts, sizeof(ts)) == 0);
	hw_time_encode(T0_US + 10 * DAY_US, s->ts_mean_us, s->ts_std_us, ts);
	CHECK(memcmp(b->timestamp_values + 10 * 15, ts, sizeof(ts)) == 0);
	/* fk_adj [1,3,3]: o1 -> c0, o0 -> c0 */
	const uint8_t adj[9] = {0, 1, 0, 0, 0, 0, 0, 1, 0};

	CHECK(memcmp(b->fk_adj, adj, 9) == 0);
	/* permutations (hand-computed, see docs/sampler.md) */
	const int colp[16] = {4, 5, 6, 7, 0, 8, 1, 9, 2, 10, 3, 11, 12, 13, 14, 15};
	const int outp[16] = {8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15};
	const int inp[16] = {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15};

	if (!u16_eq(b->col_perm, colp, 16)) print_u16("col_perm", b->col_perm, 16);
	if (!u16_eq(b->out_perm, outp, 16)) print_u16("out_perm", b->out_perm, 16);
	if (!u16_eq(b->in_perm, inp, 16)) print_u16("in_perm", b->in_perm, 16);
	CHECK(u16_eq(b->col_perm, colp, 16));
	CHECK(u16_eq(b->out_perm, outp, 16));
	CHECK(u16_eq(b->in_perm, inp, 16));
	CHECK_EQ_INT(b->target_stype, HW_ST_NUMERICAL);
	CHECK_EQ_INT(b->task_idx, 0);
	CHECK_EQ_INT(b->cat_emb_count, 0);
	hw_batch_free(b);

	/* prediction path: same sequence, target value slot zeroed */
	uint32_t anchor = 4;

	CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, NULL, 1, &b, &err) == HW_OK);
	CHECK_EQ_INT(b->is_target[3], 1);
	CHECK(b->numeric_values[3] == 0.0f);
	CHECK_EQ_INT(b->R, 3);
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(t);
	synth_free(s);
}

UNIT_TEST(sampler_exact_query_task_with_history)
{
	HwSnapshot *s = tiny();
	HwError err = {0};

	CHECK(s != NULL);
	HwTask *t = hw_task_new("q", HW_TASK_QUERY, &err);

	t->anchor_table = 0;
	t->target_stype = HW_ST_NUMERICAL;
	CHECK(hw_task_alloc_seeds(t, 3, &err) == HW_OK);
	/* seeds: (c1, day 3, 1.0), (c1, day 4, 2.0), (c0, no cutoff, NULL) */
	t->anchor_row[0] = 1; t->obs_time_us[0] = T0_US + 3 * DAY_US; t->target[0] = 1.0;
	t->anchor_row[1] = 1; t->obs_time_us[1] = T0_US + 4 * DAY_US; t->target[1] = 2.0;
	t->anchor_row[2] = 0; t->obs_time_us[2] = HW_NO_CUTOFF; t->target_null[2] = 1;
	for (int i = 0; i < 3; i++)
		t->anchor_key[i] = s->tables[0].key_hash[t->anchor_row[i]];
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
	CHECK_EQ_INT(t->col_base, 8);
	uint32_t seeds[2] = {1, 2};
	HwBatch *b = NULL;

	CHECK(hw_sampler_seed_batch(sm, 0, seeds, 2, &b, &err) == HW_OK);
	/* sequence 0: virtual row, c1 (no cell for its id), history row of
	 * seed 0 (o3 at day 5 > day 4 dropped) */
	const int cols[7] = {8, 9, 1, 2, 3, 8, 9};
	const int rows[7] = {0, 0, 1, 1, 1, 2, 2};
	const int st[7] = {2, 1, 1, 4, 5, 2, 1};

	CHECK(cells_are(b, 7, cols, rows, st, 1, 10));
	CHECK_CLOSE(b->numeric_values[1], 1.0, 1e-7, 0);     /* (2 - 1.5) / 0.5 */
	CHECK_CLOSE(b->numeric_values[6], -1.0, 1e-7, 0);    /* history label visible */
	CHECK_EQ_INT(b->categorical_embed_ids[3], 0);
	float ts[15];

	hw_time_encode(T0_US + 4 * DAY_US, s->ts_mean_us, s->ts_std_us, ts);
	CHECK(memcmp(b->timestamp_values + 0 * 15, ts, sizeof(ts)) == 0);
	hw_time_encode(T0_US + 3 * DAY_US, s->ts_mean_us, s->ts_std_us, ts);
	CHECK(memcmp(b->timestamp_values + 5 * 15, ts, sizeof(ts)) == 0);
	/* rows in RCM order: out [hist, virtual, c1], in [hist, c1, virtual] */
	const int colp[10] = {2, 3, 4, 0, 5, 1, 6, 7, 8, 9};
	const int outp[10] = {5, 6, 0, 1, 2, 3, 4, 7, 8, 9};
	const int inp[10] = {5, 6, 2, 3, 4, 0, 1, 7, 8, 9};

	if (!u16_eq(b->out_perm, outp, 10)) print_u16("out_perm", b->out_perm, 10);
	if (!u16_eq(b->in_perm, inp, 10)) print_u16("in_perm", b->in_perm, 10);
	CHECK(u16_eq(b->col_perm, colp, 10));
	CHECK(u16_eq(b->out_perm, outp, 10));
	CHECK(u16_eq(b->in_perm, inp, 10));

	/* sequence 1: virtual row of seed 2 (no cutoff -> NULL obs time, NULL
	 * target), then c0 (age, seg, bio) and its three orders (no time
	 * filter; 2 cells each, the third cut to its first cell at S = 10) */
	const uint16_t *rid = b->seq_row_ids + 10;

	CHECK_EQ_INT(b->is_null[10], 1);
	CHECK_EQ_INT(b->is_target[11], 1);
	CHECK_EQ_INT(b->is_null[11], 1);
	CHECK_EQ_INT(rid[2], 1);
	CHECK_EQ_INT(b->column_ids[12], 1);
	const int rows1[10] = {0, 0, 1, 1, 1, 2, 2, 3, 3, 4};
	const int cols1[10] = {8, 9, 1, 2, 3, 6, 7, 6, 7, 6};

	for (int p = 0; p < 10; p++)
	{
		CHECK_EQ_INT(rid[p], rows1[p]);
		CHECK_EQ_INT(b->column_ids[10 + p], cols1[p]);
		CHECK_EQ_INT(b->is_padding[10 + p], 0);
	}
	/* R = 5 = max over the batch (seq 1: virtual, c0, three orders) */
	CHECK_EQ_INT(b->R, 5);
	/* fk_adj of seq 0: 0 -> 1, 2 -> 1 */
	uint8_t adj0[25] = {0};

	adj0[0 * 5 + 1] = adj0[2 * 5 + 1] = 1;
	CHECK(memcmp(b->fk_adj, adj0, 25) == 0);
	/* seq 1: row 0 -> 1 and the orders 2, 3, 4 -> 1 */
	uint8_t adj1[25] = {0};

	adj1[0 * 5 + 1] = adj1[2 * 5 + 1] = adj1[3 * 5 + 1] = adj1[4 * 5 + 1] = 1;
	CHECK(memcmp(b->fk_adj + 25, adj1, 25) == 0);
	/* text dedup in first-occurrence order: seq 0 has text#2 at p4 */
	CHECK_EQ_INT(b->U, 2);
	CHECK_EQ_INT(b->text_embed_ids[4], 0);
	CHECK_EQ_INT(b->text_embed_ids[14], 1);
	CHECK(memcmp(b->text_batch_embeddings, s->text_emb + 2 * 4, 8) == 0);
	CHECK(memcmp(b->text_batch_embeddings + 4, s->text_emb + 5 * 4, 8) == 0);
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(t);
	synth_free(s);
}

/* ----------------------------------------------------------- properties */

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

static HwSnapshot *shop;
static HwTask *shop_task;

static void
shop_setup(void)
{
	if (shop)
		return;
	HwError err = {0};

	shop = synth_shop(20000, 7, 8);
	shop_task = hw_task_new("status", HW_TASK_CELL, &err);
	hw_task_build_cell(shop_task, shop, 3, synth_col_index(shop, 3, "status"), &err);
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

/* ------------------------------------------------------------ child sampling */

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

/* ------------------------------------------------------------ key cells */

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

/* ------------------------------------------------------ label time, context */

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
