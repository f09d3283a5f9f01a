/*
 * test_sampler_future_parents.c: a parent row dated after the seed's
 * observation time is not taken (future_parents "hide", the default), by
 * the children's test (time > obs; NULL time and "no cutoff" keep it); the
 * anchor is always taken; "follow" gives the sampler before the option.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "sampler_ref.h"
#include "core/sampler.h"

#include <stdlib.h>
#include <string.h>


/*
 * region(id, pop num)                          r0 r1            (global 0, 1)
 * store(id, region_id, opened ts*, size num)   s0 s1 s2         (global 2..4)
 *   s0 -> r0 opened day 25;  s1 -> r1 day 20;  s2 -> r1 NULL
 * orders(id, store_id, at ts*, amount num)     o0 o1 o2         (global 5..7)
 *   o0 -> s0, o1 -> s1, o2 -> s2, all at day 20
 * A cell task on orders.amount observes each order at day 20: o0's store
 * opened after it (hidden, and r0 with it: r0 is reachable only through
 * s0), o1's store opened exactly then (kept: time <= obs), o2's store has a
 * NULL opening time (kept).
 */
enum { R0 = 0, R1 = 1, S0 = 2, S1 = 3, S2 = 4, O0 = 5, O1 = 6, O2 = 7 };

static HwSnapshot *
stores(void)
{
	HwSnapshot *s = synth_new(4);
	int rg = synth_add_table(s, "region", 2, "id:identifier,pop:numerical", -1);
	int st = synth_add_table(s, "store", 3, "id:identifier,region_id:identifier,opened:timestamp,size:numerical", 2);
	int od = synth_add_table(s, "orders", 3, "id:identifier,store_id:identifier,at:timestamp,amount:numerical", 2);
	int fk_sr = synth_add_fk(s, "store_region_id_fkey", st, rg);
	int fk_os = synth_add_fk(s, "orders_store_id_fkey", od, st);
	int region_of[3] = {0, 1, 1};

	for (int r = 0; r < 2; r++)
		synth_col(s, rg, "pop")->f32[r] = 100.0f * (r + 1);
	for (int r = 0; r < 3; r++)
	{
		synth_edge(s, synth_row(s, st, r), synth_row(s, rg, region_of[r]), fk_sr);
		synth_col(s, st, "size")->f32[r] = 1.0f + r;
		synth_edge(s, synth_row(s, od, r), synth_row(s, st, r), fk_os);
		synth_col(s, od, "at")->i64[r] = T0_US + 20 * DAY_US;
		synth_col(s, od, "amount")->f32[r] = 10.0f * (r + 1);
	}
	synth_col(s, st, "opened")->i64[0] = T0_US + 25 * DAY_US;
	synth_col(s, st, "opened")->i64[1] = T0_US + 20 * DAY_US;
	synth_col(s, st, "opened")->valid[2] = 0;
	if (synth_finish(s) != 0)
		return NULL;
	return s;
}

/* Global rows of sequence b of the last batch as a bit set (virtual rows
 * are bit 31); *n = number of rows. */
static uint32_t
row_set(const HwSampler *sm, int b, int *n)
{
	const HwCellSource *rows;
	uint32_t set = 0;

	*n = -1;
	if (hw_sampler_last_rows(sm, b, &rows, n) != HW_OK)
		return 0;
	for (int r = 0; r < *n; r++)
		set |= rows[r].row >= 0 ? 1u << rows[r].row : 1u << 31;
	return set;
}

#define BIT(x) (1u << (x))

static HwSampler *
sampler_for(const HwSnapshot *s, HwTask *t, int future_parents, int B)
{
	HwSamplerConfig cfg;
	HwError err = {0};

	hw_sampler_config_default(&cfg);
	cfg.batch_size = B;
	cfg.seq_len = 64;
	cfg.n_threads = 1;
	cfg.future_parents = future_parents;
	return hw_sampler_create(s, &t, 1, &cfg, &err);
}

UNIT_TEST(sampler_future_parents_hidden_by_default)
{
	HwSnapshot *s = stores();
	HwError err = {0};

	CHECK(s != NULL);
	HwTask *t = hw_task_new("amount", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(t, s, 2, synth_col_index(s, 2, "amount"), &err) == HW_OK);
	CHECK_EQ_INT(t->nseeds, 3);
	HwSamplerConfig def;

	hw_sampler_config_default(&def);
	CHECK_EQ_INT(def.future_parents, HW_FUTURE_PARENTS_HIDE);
	HwSampler *hide = sampler_for(s, t, HW_FUTURE_PARENTS_HIDE, 3);
	HwSampler *follow = sampler_for(s, t, HW_FUTURE_PARENTS_FOLLOW, 3);

	CHECK(hide && follow);
	uint32_t seeds[3] = {0, 1, 2};      /* o0, o1, o2, observed at day 20 */
	HwBatch *b = NULL;
	int n;

	CHECK(hw_sampler_seed_batch(hide, 0, seeds, 3, &b, &err) == HW_OK);
	/* o0: its store opened on day 25 is not taken, nor r0 behind it: the
	 * seed row alone, no fk_adj edge (as for a parent that did not fit) */
	CHECK_EQ_INT(row_set(hide, 0, &n), BIT(O0));
	CHECK_EQ_INT(n, 1);
	for (int r2 = 0; r2 < b->R; r2++)
		CHECK_EQ_INT(b->fk_adj[r2], 0);
	for (int p = 0; p < b->S; p++)
		if (!b->is_padding[p])
			CHECK_EQ_INT(b->seq_row_ids[p], 0);
	/* o1: s1 opened exactly at the observation time (<=, as for children);
	 * through r1, s2 (NULL time) and its order o2 (day 20) */
	CHECK_EQ_INT(row_set(hide, 1, &n), BIT(O1) | BIT(S1) | BIT(R1) | BIT(S2) | BIT(O2));
	CHECK_EQ_INT(n, 5);
	/* o2: a parent with a NULL time is followed */
	CHECK_EQ_INT(row_set(hide, 2, &n), BIT(O2) | BIT(S2) | BIT(R1) | BIT(S1) | BIT(O1));
	hw_batch_free(b);

	/* follow: the old sampler, o0 shows its future store and its region */
	CHECK(hw_sampler_seed_batch(follow, 0, seeds, 3, &b, &err) == HW_OK);
	CHECK_EQ_INT(row_set(follow, 0, &n), BIT(O0) | BIT(S0) | BIT(R0));
	CHECK_EQ_INT(row_set(follow, 1, &n), BIT(O1) | BIT(S1) | BIT(R1) | BIT(S2) | BIT(O2));
	hw_batch_free(b);

	/* prediction of (o0, its own time): the training sequence, also in a
	 * clone and in a clone for another rank (the option is copied) */
	uint32_t anchor = O0;
	HwSampler *cl = hw_sampler_clone(hide, &err);
	HwSampler *cr = hw_sampler_clone_rank(hide, 1, 2, &err);

	CHECK(cl && cr);
	HwSampler *each[3] = {hide, cl, cr};

	for (int i = 0; i < 3; i++)
	{
		CHECK(hw_sampler_build_for_seeds(each[i], 0, &anchor, NULL, 1, &b, &err) == HW_OK);
		CHECK_EQ_INT(row_set(each[i], 0, &n), BIT(O0));
		hw_batch_free(b);
	}

	/* the anchor is kept even when it is dated after the observation time
	 * (o1 at day 20 observed at day 15); its store (day 20) is hidden and
	 * with it everything else; follow takes s1, r1 and s2 (NULL), not o2
	 * (a child after day 15) */
	int64_t day15 = T0_US + 15 * DAY_US;

	anchor = O1;
	CHECK(hw_sampler_build_for_seeds(hide, 0, &anchor, &day15, 1, &b, &err) == HW_OK);
	CHECK_EQ_INT(row_set(hide, 0, &n), BIT(O1));
	hw_batch_free(b);
	CHECK(hw_sampler_build_for_seeds(follow, 0, &anchor, &day15, 1, &b, &err) == HW_OK);
	CHECK_EQ_INT(row_set(follow, 0, &n), BIT(O1) | BIT(S1) | BIT(R1) | BIT(S2));
	hw_batch_free(b);
	/* no cutoff: every parent is followed */
	int64_t none = HW_NO_CUTOFF;

	anchor = O0;
	CHECK(hw_sampler_build_for_seeds(hide, 0, &anchor, &none, 1, &b, &err) == HW_OK);
	CHECK_EQ_INT(row_set(hide, 0, &n), BIT(O0) | BIT(S0) | BIT(R0));
	hw_batch_free(b);

	hw_sampler_free(cl);
	hw_sampler_free(cr);
	hw_sampler_free(hide);
	hw_sampler_free(follow);
	hw_task_free(t);
	synth_free(s);
}

UNIT_TEST(sampler_future_parents_query_anchor_kept)
{
	/* a query task anchored on store s0 (opened day 25) observed at day
	 * 22: the virtual row, s0 (the anchor, after T but kept), its region
	 * r0 (no time) and its order o0 (day 20), with their fk edges */
	HwSnapshot *s = stores();
	HwError err = {0};

	CHECK(s != NULL);
	HwTask *t = hw_task_new("q", HW_TASK_QUERY, &err);

	t->anchor_table = 1;
	t->target_stype = HW_ST_NUMERICAL;
	t->label_history = false;
	CHECK(hw_task_alloc_seeds(t, 1, &err) == HW_OK);
	t->anchor_row[0] = S0;
	t->anchor_key[0] = s->tables[1].key_hash[0];
	t->obs_time_us[0] = T0_US + 22 * DAY_US;
	t->target[0] = 1.0;
	t->target_std = 1.0;
	CHECK(hw_task_assign_splits(t, &err) == HW_OK);
	HwSampler *sm = sampler_for(s, t, HW_FUTURE_PARENTS_HIDE, 1);

	CHECK_MSG(sm != NULL, "%s", err.msg);
	uint32_t seed = 0;
	HwBatch *b = NULL;
	int n;

	CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
	CHECK_EQ_INT(row_set(sm, 0, &n), BIT(31) | BIT(S0) | BIT(R0) | BIT(O0));
	CHECK_EQ_INT(n, 4);
	const HwCellSource *rows;

	CHECK(hw_sampler_last_rows(sm, 0, &rows, &n) == HW_OK);
	int loc[8];

	for (int r = 0; r < n; r++)
		if (rows[r].row >= 0)
			loc[rows[r].row] = r;
	const uint8_t *a = b->fk_adj;

	CHECK_EQ_INT(a[0 * b->R + loc[S0]], 1);            /* virtual row -> anchor */
	CHECK_EQ_INT(a[loc[S0] * b->R + loc[R0]], 1);      /* anchor -> its region */
	CHECK_EQ_INT(a[loc[O0] * b->R + loc[S0]], 1);      /* order -> anchor */
	hw_batch_free(b);
	/* a seed observed before the order: the order is a child after T,
	 * dropped; the anchor stays */
	int64_t day19 = T0_US + 19 * DAY_US;
	uint32_t anchor = S0;

	CHECK(hw_sampler_build_for_seeds(sm, 0, &anchor, &day19, 1, &b, &err) == HW_OK);
	CHECK_EQ_INT(row_set(sm, 0, &n), BIT(31) | BIT(S0) | BIT(R0));
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(t);
	synth_free(s);
}

UNIT_TEST(sampler_future_parents_names_and_config)
{
	CHECK(strcmp(hw_future_parents_name(HW_FUTURE_PARENTS_HIDE), "hide") == 0);
	CHECK(strcmp(hw_future_parents_name(HW_FUTURE_PARENTS_FOLLOW), "follow") == 0);
	CHECK(hw_future_parents_name(2) == NULL);
	CHECK_EQ_INT(hw_future_parents_from_name("hide"), HW_FUTURE_PARENTS_HIDE);
	CHECK_EQ_INT(hw_future_parents_from_name("follow"), HW_FUTURE_PARENTS_FOLLOW);
	CHECK_EQ_INT(hw_future_parents_from_name("Hide"), -1);
	CHECK_EQ_INT(hw_future_parents_from_name(NULL), -1);
	HwSnapshot *s = stores();
	HwError err = {0};
	HwTask *t = hw_task_new("amount", HW_TASK_CELL, &err);

	CHECK(s && t && hw_task_build_cell(t, s, 2, synth_col_index(s, 2, "amount"), &err) == HW_OK);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.future_parents = 7;
	CHECK(hw_sampler_create(s, &t, 1, &cfg, &err) == NULL);
	CHECK_EQ_INT(err.code, HW_ERR_INVALID);
	CHECK(strstr(err.msg, "future_parents") != NULL);
	hw_task_free(t);
	synth_free(s);
}
