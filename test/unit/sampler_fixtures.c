/*
 * sampler_fixtures.c: the snapshots the sampler tests share
 * (sampler_fixtures.h).
 */
#include "sampler_fixtures.h"
#include "synth_snapshot.h"
#include "sampler_ref.h"


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
HwSnapshot *
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

HwSnapshot *shop;
HwTask     *shop_task;

void
shop_setup(void)
{
	if (shop)
		return;
	HwError err = {0};

	shop = synth_shop(20000, 7, 8);
	shop_task = hw_task_new("status", HW_TASK_CELL, &err);
	hw_task_build_cell(shop_task, shop, 3, synth_col_index(shop, 3, "status"), &err);
}

