/*
 * test_sampler_descendants.c: descendant counts (docs/sampler.md,
 * *Descendant counts*) against counts worked out by hand on a small shop
 * whose returns hang three foreign keys below the customer.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "sampler_ref.h"
#include "core/sampler.h"

#include <math.h>
#include <string.h>


/*
 *   customer(id, age)                        c0 c1, no time column
 *   orders(id, customer_id, gift_to, at*)    o0 c0 day 10; o1 c0 day 20; o2 c0 day 30;
 *                                            o3 c1 day 15, a gift to c0
 *   item(id, order_id, qty)                  i0 i1 of o0, i2 of o1, i3 of o2, i4 of o3;
 *                                            no time column (dated like their order)
 *   ret(id, item_id, at*)                    r0 i0 day 12; r1 i1 day 19; r2 i2 day 25;
 *                                            r3 i3 day 31; r4 i4 day 16
 * The customer has two child FKs (own orders, gifts received), so four
 * child-count slots are free: the items (two FKs down) and the returns
 * (three) of the orders it placed -- not of the gifts (fewer rows reached).
 */
static HwSnapshot *
gift_shop(void)
{
	HwSnapshot *s = synth_new(4);
	int c = synth_add_table(s, "customer", 2, "id:identifier,age:numerical", -1);
	int o = synth_add_table(s, "orders", 4, "id:identifier,customer_id:identifier,gift_to:identifier,at:timestamp", 3);
	int it = synth_add_table(s, "item", 5, "id:identifier,order_id:identifier,qty:numerical", -1);
	int rt = synth_add_table(s, "ret", 5, "id:identifier,item_id:identifier,at:timestamp", 2);
	const int o_cust[4] = {0, 0, 0, 1}, o_day[4] = {10, 20, 30, 15};
	const int i_order[5] = {0, 0, 1, 2, 3}, r_day[5] = {12, 19, 25, 31, 16};

	synth_col(s, c, "age")->f32[0] = 30;
	synth_col(s, c, "age")->f32[1] = 40;
	int f_own = synth_add_fk(s, "orders_customer_id_fkey", o, c);
	int f_gift = synth_add_fk(s, "orders_gift_to_fkey", o, c);
	int f_item = synth_add_fk(s, "item_order_id_fkey", it, o);
	int f_ret = synth_add_fk(s, "ret_item_id_fkey", rt, it);

	for (int r = 0; r < 4; r++)
	{
		synth_edge(s, synth_row(s, o, r), synth_row(s, c, o_cust[r]), f_own);
		synth_col(s, o, "at")->i64[r] = T0_US + o_day[r] * DAY_US;
	}
	synth_edge(s, synth_row(s, o, 3), synth_row(s, c, 0), f_gift);
	for (int r = 0; r < 5; r++)
	{
		synth_edge(s, synth_row(s, it, r), synth_row(s, o, i_order[r]), f_item);
		synth_col(s, it, "qty")->f32[r] = (float) (r + 1);
		synth_edge(s, synth_row(s, rt, r), synth_row(s, it, r), f_ret);
		synth_col(s, rt, "at")->i64[r] = T0_US + r_day[r] * DAY_US;
	}
	if (synth_finish(s) != 0)
	{
		synth_free(s);
		return NULL;
	}
	return s;
}

static bool
slot_is(const HwBatch *b, int cell, int slot, const int *want)
{
	const uint16_t *cnt = b->child_count + ((size_t) cell * HW_CHILD_LINKS + slot) * HW_CHILD_WINDOWS;

	for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		if (cnt[w] != (want ? want[w] : 0))
		{
			unit_fail(__FILE__, __LINE__, "cell %d slot %d window %d: count %u, expected %d",
					  cell, slot, w, cnt[w], want ? want[w] : 0);
			return false;
		}
	return true;
}

/* the first cell of customer.age (global column 1) in sequence q: the anchor's */
static int
anchor_cell(const HwBatch *b, int q)
{
	for (int i = 0; i < b->S; i++)
		if (!b->is_padding[q * b->S + i] && b->column_ids[q * b->S + i] == 1)
			return q * b->S + i;
	return -1;
}

UNIT_TEST(sampler_descendant_counts_hand_case)
{
	HwSnapshot *s = gift_shop();
	HwError err = {0};

	CHECK(s != NULL);
	for (int pol = 0; pol < 2; pol++)
		for (int on = 1; on >= 0; on--)
		{
			HwTask *t = hw_task_new("q", HW_TASK_QUERY, &err);

			t->anchor_table = 0;
			t->target_stype = HW_ST_NUMERICAL;
			CHECK(hw_task_alloc_seeds(t, 3, &err) == HW_OK);
			/* seeds: c0 at day 22, c1 at day 22, c0 without a cutoff */
			t->anchor_row[0] = 0; t->obs_time_us[0] = T0_US + 22 * DAY_US; t->target[0] = 1.0;
			t->anchor_row[1] = 1; t->obs_time_us[1] = T0_US + 22 * DAY_US; t->target[1] = 2.0;
			t->anchor_row[2] = 0; t->obs_time_us[2] = HW_NO_CUTOFF; t->target[2] = 3.0;
			for (int i = 0; i < 3; i++)
				t->anchor_key[i] = s->tables[0].key_hash[t->anchor_row[i]];
			CHECK(hw_task_assign_splits(t, &err) == HW_OK);
			t->target_mean = 2.0;
			t->target_std = 1.0;
			HwSamplerConfig cfg;

			hw_sampler_config_default(&cfg);
			CHECK(cfg.descendant_counts);                 /* on by default */
			cfg.batch_size = 3;
			cfg.seq_len = 64;
			cfg.n_threads = 1;
			cfg.child_sampling = pol ? HW_CHILD_UNIFORM : HW_CHILD_RECENT;
			cfg.descendant_counts = on;
			HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

			CHECK_MSG(sm != NULL, "%s", err.msg);
			uint32_t seeds[3] = {0, 1, 2};
			HwBatch *b = NULL;

			CHECK(hw_sampler_seed_batch(sm, 0, seeds, 3, &b, &err) == HW_OK);
			int a0 = anchor_cell(b, 0), a1 = anchor_cell(b, 1), a2 = anchor_cell(b, 2);

			CHECK(a0 >= 0 && a1 >= 0 && a2 >= 0);
			int want[HW_CHILD_WINDOWS];
			/* c0 at day 22: own orders (days 10, 20; o2 is later), the gift (15) */
			const int own[2] = {10, 20}, gift[1] = {15};
			/* its own orders' items, dated like their orders (o2's is later),
			 * and their returns (r2 at day 25 is later, r3's order too; r4 is
			 * the return of the gift, someone else's order) */
			const int items[3] = {10, 10, 20}, rets[2] = {12, 19};

			naive_child_counts(s, own, 2, 22, true, want);
			CHECK(slot_is(b, a0, 0, want));
			naive_child_counts(s, gift, 1, 22, true, want);
			CHECK(slot_is(b, a0, 1, want));
			naive_child_counts(s, items, 3, 22, true, want);
			CHECK_EQ_INT(want[0], 3);
			CHECK(want[1] < want[HW_CHILD_WINDOWS - 1]);  /* the windows do split them */
			CHECK(slot_is(b, a0, 2, on ? want : NULL));
			naive_child_counts(s, rets, 2, 22, true, want);
			CHECK(slot_is(b, a0, 3, on ? want : NULL));
			CHECK(slot_is(b, a0, 4, NULL) && slot_is(b, a0, 5, NULL));
			const uint32_t *k0 = b->child_key + (size_t) a0 * HW_CHILD_LINKS;

			CHECK(k0[0] != 0 && k0[1] != 0 && k0[0] != k0[1]);
			if (on)
				CHECK(k0[2] != 0 && k0[3] != 0 && k0[2] != k0[3] && k0[2] != k0[0] && k0[3] != k0[1]);
			else
				CHECK(k0[2] == 0 && k0[3] == 0);
			CHECK(k0[4] == 0 && k0[5] == 0);

			/* c1 at day 22: one own order (15), no gift, so the paths move up
			 * a slot and keep their keys */
			const int c1_day[1] = {15}, c1_ret[1] = {16};
			const uint32_t *k1 = b->child_key + (size_t) a1 * HW_CHILD_LINKS;

			naive_child_counts(s, c1_day, 1, 22, true, want);
			CHECK(slot_is(b, a1, 0, want) && k1[0] == k0[0]);
			CHECK(slot_is(b, a1, 1, on ? want : NULL));   /* its item, dated 15 */
			naive_child_counts(s, c1_ret, 1, 22, true, want);
			CHECK(slot_is(b, a1, 2, on ? want : NULL));
			if (on)
				CHECK(k1[1] == k0[2] && k1[2] == k0[3]);

			/* c0 without a cutoff: every own item and return, no windows */
			const int all4[4] = {0, 0, 0, 0};

			naive_child_counts(s, all4, 4, 0, false, want);
			CHECK(want[0] == 4 && want[1] == 0);
			CHECK(slot_is(b, a2, 2, on ? want : NULL) && slot_is(b, a2, 3, on ? want : NULL));
			hw_batch_free(b);
			hw_sampler_free(sm);
			hw_task_free(t);
		}
	synth_free(s);
}

/* One customer, one order, n order lines: the customer's count slots. */
static void
wide_order_slots(int nlines, uint16_t *slot0, uint16_t *slot1)
{
	HwSnapshot *s = synth_new(4);
	HwError err = {0};
	int c = synth_add_table(s, "customer", 1, "id:identifier,age:numerical", -1);
	int o = synth_add_table(s, "orders", 1, "id:identifier,customer_id:identifier,at:timestamp", 2);
	int it = synth_add_table(s, "item", (uint32_t) nlines, "id:identifier,order_id:identifier,qty:numerical", -1);
	int f_own = synth_add_fk(s, "orders_customer_id_fkey", o, c);
	int f_item = synth_add_fk(s, "item_order_id_fkey", it, o);

	*slot0 = *slot1 = UINT16_MAX;
	synth_col(s, c, "age")->f32[0] = 30;
	synth_edge(s, synth_row(s, o, 0), synth_row(s, c, 0), f_own);
	synth_col(s, o, "at")->i64[0] = T0_US + DAY_US;
	for (int r = 0; r < nlines; r++)
	{
		synth_edge(s, synth_row(s, it, (uint32_t) r), synth_row(s, o, 0), f_item);
		synth_col(s, it, "qty")->f32[r] = (float) r;
	}
	if (synth_finish(s) != 0)
	{
		synth_free(s);
		return;
	}
	HwTask *t = hw_task_new("q", HW_TASK_QUERY, &err);

	t->anchor_table = 0;
	t->target_stype = HW_ST_NUMERICAL;
	if (hw_task_alloc_seeds(t, 1, &err) == HW_OK)
	{
		t->anchor_row[0] = 0;
		t->obs_time_us[0] = T0_US + 10 * DAY_US;
		t->target[0] = 1.0;
		t->anchor_key[0] = s->tables[0].key_hash[0];
		t->target_std = 1.0;
		HwSamplerConfig cfg;

		hw_sampler_config_default(&cfg);
		cfg.batch_size = 1;
		cfg.seq_len = 16;
		cfg.n_threads = 1;
		cfg.descendant_counts = true;
		HwSampler *sm = hw_task_assign_splits(t, &err) == HW_OK ? hw_sampler_create(s, &t, 1, &cfg, &err) : NULL;
		uint32_t seed = 0;
		HwBatch *b = NULL;

		if (sm && hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK)
		{
			int a = anchor_cell(b, 0);

			if (a >= 0)
			{
				*slot0 = b->child_count[(size_t) a * HW_CHILD_LINKS * HW_CHILD_WINDOWS];
				*slot1 = b->child_count[((size_t) a * HW_CHILD_LINKS + 1) * HW_CHILD_WINDOWS];
			}
			hw_batch_free(b);
		}
		hw_sampler_free(sm);
	}
	hw_task_free(t);
	synth_free(s);
}

/* A path that reaches more than 64 rows per row of its table on average is
 * not counted (docs/sampler.md): 64 order lines per customer are, 65 not. */
UNIT_TEST(sampler_descendant_counts_skip_wide_paths)
{
	uint16_t own, lines;

	wide_order_slots(64, &own, &lines);
	CHECK_EQ_INT(own, 1);
	CHECK_EQ_INT(lines, 64);
	wide_order_slots(65, &own, &lines);
	CHECK_EQ_INT(own, 1);
	CHECK_EQ_INT(lines, 0);
}
