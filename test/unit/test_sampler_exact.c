/*
 * test_sampler_exact.c: the sampler against sequences written out by hand
 * on the tiny snapshot (sampler_fixtures.h): cells, their order and
 * permutations, child counts and means, key cells, label history.
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

/* Sequence 0's three permutations (col_perm, out_perm, in_perm) are the
 * hand-computed ones, n positions each; a mismatch prints what the sampler
 * gave. */
static bool
perms_are(const HwBatch *b, const int *colp, const int *outp, const int *inp, int n)
{
	const uint16_t *got[3] = {b->col_perm, b->out_perm, b->in_perm};
	const int  *want[3] = {colp, outp, inp};
	const char *name[3] = {"col_perm", "out_perm", "in_perm"};
	bool        ok = true;

	for (int k = 0; k < 3; k++)
		if (!u16_eq(got[k], want[k], n))
		{
			print_u16(name[k], got[k], n);
			ok = false;
		}
	return ok;
}

/* The prediction path builds the same sequence for anchor row 4 of the
 * tiny snapshot, the target (at position target) masked to 0. */
static bool
prediction_masks_the_target(HwSampler *sm, int target)
{
	uint32_t    anchor = 4;
	HwBatch    *b = NULL;
	HwError     err = {0};
	bool        ok;

	if (hw_sampler_build_for_seeds(sm, 0, &anchor, NULL, 1, &b, &err) != HW_OK)
	{
		printf("    prediction batch: %s\n", err.msg);
		return false;
	}
	ok = b->is_target[target] == 1 && b->numeric_values[target] == 0.0f && b->R == 3;
	if (!ok)
		printf("    prediction batch: is_target[%d] %d, value %g, R %d (expected 1, 0, 3)\n", target,
			   (int) b->is_target[target], (double) b->numeric_values[target], (int) b->R);
	hw_batch_free(b);
	return ok;
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

	CHECK(perms_are(b, colp, outp, inp, 16));
	CHECK_EQ_INT(b->target_stype, HW_ST_NUMERICAL);
	CHECK_EQ_INT(b->task_idx, 0);
	CHECK_EQ_INT(b->cat_emb_count, 0);
	hw_batch_free(b);

	/* prediction path: same sequence, target value slot zeroed */
	CHECK(prediction_masks_the_target(sm, 1));
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


/* the first cell after the seed row's that carries counts (the customer's) */
static int
customer_cell(const HwBatch *b, int seq, int S)
{
	for (int c = seq * S; c < (seq + 1) * S; c++)
		if (!b->is_padding[c] && b->child_key[(size_t) c * HW_CHILD_LINKS] != 0)
			return c;
	return -1;
}

/* customer 0 with BUSY_ORDERS orders on days 1, 2, ... (amount 3 * day),
 * customer 1 with one: enough children for the feature memo */
enum { BUSY_ORDERS = 99 };

static HwSnapshot *
busy_customer(void)
{
	HwSnapshot *s = synth_new(4);
	int c = synth_add_table(s, "customer", 2, "id:identifier,age:numerical", -1);
	int o = synth_add_table(s, "orders", BUSY_ORDERS + 1, "id:identifier,customer_id:identifier,at:timestamp,amount:numerical", 2);
	int fk = synth_add_fk(s, "orders_customer_id_fkey", o, c);

	for (int r = 0; r <= BUSY_ORDERS; r++)
	{
		synth_edge(s, synth_row(s, o, r), synth_row(s, c, r < BUSY_ORDERS ? 0 : 1), fk);
		synth_col(s, o, "at")->i64[r] = T0_US + (r + 1) * DAY_US;
		synth_col(s, o, "amount")->f32[r] = 3.0f * (r + 1);
	}
	return synth_finish(s) == 0 ? s : NULL;
}

/* A thread keeps the count and mean features of a row with many children
 * by (row, obs, excluded target column) (FeatMemo): one sampler on one
 * thread with two tasks reaches the busy customer from one order at
 * observation days 50 and 70, alternating (plus k microseconds: the same
 * windows), 4,096 times, four times the memo's slots, so slots are shared
 * by keys of both days; the last keys again (answered from the memo: the
 * same bytes as the first time); then from the task on orders.amount
 * itself.  Each sequence must get the features of its own observation time
 * and task. */
UNIT_TEST(sampler_feature_memo_keys)
{
	enum { N = 4096, S = 16 };
	HwSnapshot *s = busy_customer();
	HwError err = {0};
	int days[BUSY_ORDERS];
	float amount[BUSY_ORDERS], at50[HW_CHILD_WINDOWS], at70[HW_CHILD_WINDOWS];
	HwTask *tasks[2];
	HwSamplerConfig cfg;
	HwSampler *sm;
	uint32_t *rows = malloc(sizeof(uint32_t) * N);
	int64_t  *obs = malloc(sizeof(int64_t) * N);
	HwBatch  *b = NULL;
	int       bad = -1;

	CHECK(s != NULL);
	for (int r = 0; r < BUSY_ORDERS; r++)
	{
		days[r] = r + 1;
		amount[r] = synth_col(s, 1, "amount")->f32[r];
	}
	naive_child_means(s, days, amount, BUSY_ORDERS, 50, true, at50);
	naive_child_means(s, days, amount, BUSY_ORDERS, 70, true, at70);
	CHECK(at50[0] != at70[0]);
	tasks[0] = hw_task_new("at", HW_TASK_CELL, &err);
	tasks[1] = hw_task_new("amount", HW_TASK_CELL, &err);
	CHECK(hw_task_build_cell(tasks[0], s, 1, 2, &err) == HW_OK);
	CHECK(hw_task_build_cell(tasks[1], s, 1, 3, &err) == HW_OK);
	hw_sampler_config_default(&cfg);
	cfg.seq_len = S;
	cfg.n_threads = 1;
	sm = hw_sampler_create(s, tasks, 2, &cfg, &err);
	CHECK_MSG(sm != NULL, "%s", err.msg);
	for (int k = 0; k < N; k++)
	{
		rows[k] = s->tables[1].row_offset + 39;          /* the order of day 40 */
		obs[k] = T0_US + (k % 2 ? 70 : 50) * DAY_US + k;
	}
	CHECK(hw_sampler_build_for_seeds(sm, 0, rows, obs, N, &b, &err) == HW_OK);
	for (int k = 0; k < N && bad < 0; k++)
	{
		int cust = customer_cell(b, k, S);

		if (cust < 0 || !means_are(b, cust, k % 2 ? at70 : at50))
			bad = k;
	}
	CHECK_MSG(bad < 0, "sequence %d (day %d): the means of another observation time", bad, bad % 2 ? 70 : 50);
	/* the last keys again (kept in the memo): the same bytes as their first
	 * answers, counts and keys included */
	{
		HwBatch *again = NULL;

		CHECK(hw_sampler_build_for_seeds(sm, 0, rows + N - 8, obs + N - 8, 8, &again, &err) == HW_OK);
		for (int k = 0; k < 8; k++)
		{
			size_t c1 = (size_t) customer_cell(b, N - 8 + k, S), c2 = (size_t) customer_cell(again, k, S);

			CHECK_MSG(memcmp(b->child_key + c1 * HW_CHILD_LINKS, again->child_key + c2 * HW_CHILD_LINKS,
							 sizeof(uint32_t) * HW_CHILD_LINKS) == 0 &&
					  memcmp(b->child_count + c1 * HW_CHILD_LINKS * HW_CHILD_WINDOWS,
							 again->child_count + c2 * HW_CHILD_LINKS * HW_CHILD_WINDOWS,
							 sizeof(uint16_t) * HW_CHILD_LINKS * HW_CHILD_WINDOWS) == 0 &&
					  memcmp(b->mean_key + c1 * HW_MEAN_SLOTS, again->mean_key + c2 * HW_MEAN_SLOTS,
							 sizeof(uint32_t) * HW_MEAN_SLOTS) == 0 &&
					  memcmp(b->child_mean + c1 * HW_MEAN_SLOTS * HW_CHILD_WINDOWS,
							 again->child_mean + c2 * HW_MEAN_SLOTS * HW_CHILD_WINDOWS,
							 sizeof(float) * HW_MEAN_SLOTS * HW_CHILD_WINDOWS) == 0,
					  "repeat %d: other features than its first answer", k);
		}
		hw_batch_free(again);
	}
	hw_batch_free(b);
	/* the last keys kept, for the task on amount: no mean of amount anywhere */
	CHECK(hw_sampler_build_for_seeds(sm, 1, rows + N - 8, obs + N - 8, 8, &b, &err) == HW_OK);
	for (int k = 0; k < 8; k++)
	{
		int cust = customer_cell(b, k, S);

		CHECK_MSG(cust >= 0 && means_are(b, cust, NULL), "sequence %d of the task on amount", k);
	}
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(tasks[0]);
	hw_task_free(tasks[1]);
	free(rows);
	free(obs);
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

	CHECK(perms_are(b, colp, outp, inp, 16));
	CHECK_EQ_INT(b->target_stype, HW_ST_NUMERICAL);
	CHECK_EQ_INT(b->task_idx, 0);
	CHECK_EQ_INT(b->cat_emb_count, 0);
	hw_batch_free(b);

	/* prediction path: same sequence, target value slot zeroed */
	CHECK(prediction_masks_the_target(sm, 3));
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

	CHECK(perms_are(b, colp, outp, inp, 10));

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
