/*
 * test_sampler_label_means.c: label means (sampler option label_means,
 * sampler_labels.c) on the tiny customer/orders snapshot, against a naive
 * computation: a query task on orders (anchor table orders, parent
 * customers) whose seeds' labels become known at given times.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "sampler_fixtures.h"
#include "sampler_ref.h"
#include "core/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Seeds: anchor order, obs day, label, known day, caller split.  Orders
 * o0-o2 belong to c0, o3 to c1.  Seed 4 (o0, day 40) is the one whose
 * sequence is checked. */
enum { NSEEDS = 7, CHECKED = 4 };
static const int   seed_order[NSEEDS] = {0, 1, 2, 3, 0, 1, 2};
static const int   seed_day[NSEEDS] = {10, 20, 30, 5, 40, 22, 12};
static const int   seed_label[NSEEDS] = {1, 0, 1, 1, 0, 1, 1};
static const int   seed_known[NSEEDS] = {15, 25, 45, 6, 50, 30, 14};
static const int   seed_split[NSEEDS] = {0, 0, 0, 0, 0, 1, 0};

static HwTask *
label_task(const HwSnapshot *s, bool column_split)
{
	HwError err = {0};
	HwTask *t = hw_task_new("lm", HW_TASK_QUERY, &err);
	int64_t lt[NSEEDS];

	t->anchor_table = 1;
	t->target_stype = HW_ST_BOOLEAN;
	hw_task_alloc_seeds(t, NSEEDS, &err);
	for (int i = 0; i < NSEEDS; i++)
	{
		t->anchor_row[i] = s->tables[1].row_offset + (uint32_t) seed_order[i];
		t->anchor_key[i] = s->tables[1].key_hash[seed_order[i]];
		t->obs_time_us[i] = T0_US + seed_day[i] * DAY_US;
		t->target[i] = seed_label[i];
		lt[i] = T0_US + seed_known[i] * DAY_US;
		t->split[i] = (uint8_t) seed_split[i];
	}
	hw_task_set_label_times(t, lt, &err);
	if (column_split)
		t->split_method = HW_SPLIT_BY_COLUMN;
	hw_task_assign_splits(t, &err);
	return t;
}

/* The label means c0 shows to seed CHECKED, naively: its orders' seeds
 * observed before day 40 and known by then (of no later split than the
 * checked seed's with column splits), +1 / -1, per window of known time. */
static void
naive_label_means(const int64_t win[HW_CHILD_WINDOWS], bool column_split, float *out)
{
	int64_t obs = T0_US + seed_day[CHECKED] * DAY_US;
	double  sum[HW_CHILD_WINDOWS] = {0};
	int     n[HW_CHILD_WINDOWS] = {0};

	for (int i = 0; i < NSEEDS; i++)
	{
		int64_t known = T0_US + seed_known[i] * DAY_US;

		if (seed_order[i] == 3 || T0_US + seed_day[i] * DAY_US >= obs || known > obs ||
			(column_split && seed_split[i] > seed_split[CHECKED]))
			continue;
		for (int j = 0; j < HW_CHILD_WINDOWS; j++)
			if (j == 0 || known > obs - win[j])
			{
				sum[j] += seed_label[i] ? 1.0 : -1.0;
				n[j]++;
			}
	}
	for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		out[j] = n[j] ? (float) (sum[j] / n[j]) : 0.0f;
}

/* the first cell of the sequence with child counts: c0's (orders have no children) */
static int
customer_cell(const HwBatch *b, int S)
{
	for (int c = 0; c < S; c++)
		if (!b->is_padding[c] && b->child_key[(size_t) c * HW_CHILD_LINKS] != 0)
			return c;
	return -1;
}

/* A sampler of task t (label_means on or off) and the batch of seed
 * CHECKED in *b; NULL (failure reported) when either cannot be built. */
static HwSampler *
checked_batch(const HwSnapshot *s, HwTask *t, bool on, HwBatch **b)
{
	HwError          err = {0};
	HwSamplerConfig  cfg;
	HwSampler       *sm;
	uint32_t         seed = CHECKED;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 32;
	cfg.n_threads = 1;
	cfg.label_means = on;
	*b = NULL;
	sm = hw_sampler_create(s, &t, 1, &cfg, &err);
	if (sm != NULL && hw_sampler_seed_batch(sm, 0, &seed, 1, b, &err) == HW_OK)
		return sm;
	unit_fail(__FILE__, __LINE__, "sampler: %s", err.msg);
	hw_sampler_free(sm);
	return NULL;
}

/* The checked seed's batch under label_means on/off; its c0 cell's slots. */
static bool
c0_slots(const HwSnapshot *s, HwTask *t, bool on, int64_t win[HW_CHILD_WINDOWS], uint32_t *key, float *mean)
{
	HwBatch   *b;
	HwSampler *sm = checked_batch(s, t, on, &b);
	int        c;

	if (sm == NULL)
		return false;
	hw_sampler_count_windows(sm, win);
	c = customer_cell(b, 32);
	if (c >= 0)
	{
		memcpy(key, b->mean_key + (size_t) c * HW_MEAN_SLOTS, sizeof(uint32_t) * HW_MEAN_SLOTS);
		memcpy(mean, b->child_mean + (size_t) c * HW_MEAN_SLOTS * HW_CHILD_WINDOWS,
			   sizeof(float) * HW_MEAN_SLOTS * HW_CHILD_WINDOWS);
	}
	hw_batch_free(b);
	hw_sampler_free(sm);
	return c >= 0;
}

/*
 * c0 is the parent of the anchor o0: with the option its first mean slot
 * holds the mean of the labels visible at day 40 -- seeds on days 10, 20,
 * 22, 12 (+1, -1, +1, +1: 0.5; day 30's is known on day 45, c1's is
 * another parent's) -- per window of known time, and its child mean of
 * orders.amount moves to slot 1.  Under column splits the val seed (day 22)
 * is left out of the train seed's (1/3).  Without the option, slot 0 is
 * the amount mean again.
 */
UNIT_TEST(sampler_label_means_hand_case)
{
	HwSnapshot *s = tiny();
	int64_t     win[HW_CHILD_WINDOWS];
	float       want[HW_CHILD_WINDOWS];

	CHECK(s != NULL);
	for (int cs = 0; cs < 2; cs++)
	{
		HwTask  *t = label_task(s, cs);
		uint32_t key_on[HW_MEAN_SLOTS], key_off[HW_MEAN_SLOTS];
		float    on[HW_MEAN_SLOTS * HW_CHILD_WINDOWS], off[HW_MEAN_SLOTS * HW_CHILD_WINDOWS];
		bool     windows_split = false;

		CHECK(c0_slots(s, t, true, win, key_on, on));
		CHECK(c0_slots(s, t, false, win, key_off, off));
		naive_label_means(win, cs, want);
		CHECK(fabsf(want[0] - (cs ? 1.0f / 3 : 0.5f)) < 1e-6f);
		for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		{
			CHECK_MSG(fabsf(on[j] - want[j]) < 1e-6f, "column split %d window %d: %g, expected %g", cs, j,
					  on[j], want[j]);
			windows_split |= want[j] != want[0];
		}
		CHECK_MSG(windows_split, "the windows do not tell the known times apart: the check is weak");
		CHECK(key_on[0] != 0 && key_on[0] != key_off[0]);
		CHECK(key_on[1] == key_off[0]);         /* the amount mean, one slot later */
		CHECK(memcmp(on + HW_CHILD_WINDOWS, off, sizeof(float) * HW_CHILD_WINDOWS) == 0);
		hw_task_free(t);
	}
	synth_free(s);
}

/* Slot 0 of the first cell of row `order` (orders row) of sequence 0, or
 * NAN when the row is not in the sequence or has no mean slot */
static float
order_own_mean(const HwSnapshot *s, HwSampler *sm, const HwBatch *b, int order, int S)
{
	const HwCellSource *rows;
	int nrows;

	if (hw_sampler_last_rows(sm, 0, &rows, &nrows) != HW_OK)
		return NAN;
	for (int r = 0; r < nrows; r++)
		if (rows[r].row == (int64_t) (s->tables[1].row_offset + order))
			for (int c = 0; c < S; c++)
				if (!b->is_padding[c] && b->seq_row_ids[c] == r)
					return b->mean_key[(size_t) c * HW_MEAN_SLOTS] ? b->child_mean[(size_t) c * HW_MEAN_SLOTS *
																				   HW_CHILD_WINDOWS] : NAN;
	return NAN;
}

/*
 * Rows of the anchor table show their own labels: at day 40, o0 (the
 * anchor) its day-10 label (+1; its day-40 seed is the one predicted), o1
 * its days 20 and 22 (-1, +1: 0; under column splits the val seed is left
 * out: -1), o2 its day-12 label (+1; day 30's is known on day 45).
 */
UNIT_TEST(sampler_label_means_own_labels)
{
	HwSnapshot *s = tiny();

	CHECK(s != NULL);
	for (int cs = 0; cs < 2; cs++)
	{
		HwTask      *t = label_task(s, cs);
		HwBatch     *b;
		HwSampler   *sm = checked_batch(s, t, true, &b);
		const float  want[3] = {1.0f, cs ? -1.0f : 0.0f, 1.0f};

		CHECK(sm != NULL);
		for (int o = 0; o < 3 && sm != NULL; o++)
		{
			float got = order_own_mean(s, sm, b, o, 32);

			CHECK_MSG(fabsf(got - want[o]) < 1e-6f, "column split %d, o%d: own label mean %g, expected %g", cs, o,
					  got, want[o]);
		}
		hw_batch_free(b);
		hw_sampler_free(sm);
		hw_task_free(t);
	}
	synth_free(s);
}

/* A numerical target averages z-scores; a categorical one shows nothing. */
UNIT_TEST(sampler_label_means_target_types)
{
	HwSnapshot *s = tiny();
	int64_t     win[HW_CHILD_WINDOWS];
	uint32_t    key[HW_MEAN_SLOTS], key_off[HW_MEAN_SLOTS];
	float       mean[HW_MEAN_SLOTS * HW_CHILD_WINDOWS], off[HW_MEAN_SLOTS * HW_CHILD_WINDOWS];
	HwTask     *t;

	CHECK(s != NULL);
	t = label_task(s, false);
	t->target_stype = HW_ST_NUMERICAL;
	t->target_mean = 0.5;
	t->target_std = 2.0;
	CHECK(c0_slots(s, t, true, win, key, mean));
	/* labels 1, 0, 1, 1 as z-scores (x - 0.5) / 2: 0.25, -0.25, 0.25, 0.25 */
	CHECK_MSG(fabsf(mean[0] - 0.125f) < 1e-6f, "numerical mean %g, expected 0.125", mean[0]);
	t->target_stype = HW_ST_CATEGORICAL;
	CHECK(c0_slots(s, t, true, win, key, mean));
	CHECK(c0_slots(s, t, false, win, key_off, off));
	CHECK(memcmp(key, key_off, sizeof(key)) == 0 && memcmp(mean, off, sizeof(mean)) == 0);
	hw_task_free(t);
	synth_free(s);
}
