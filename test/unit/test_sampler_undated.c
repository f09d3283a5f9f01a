/*
 * test_sampler_undated.c: with date_undated a row of a table without a time
 * column takes the latest time of its dated parents, else the earliest of
 * its dated children, and the sampler filters it like a dated row
 * (sampler.h "Undated rows"); off, it is shown at every observation time.
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "sampler_ref.h"
#include "core/sampler.h"

#include <string.h>

/*
 * team(id, rating num)                       t0            undated (global 0)
 * player(id, team_id, height num)            p0 p1 p2      undated (1..3)
 * goal(id, player_id, at ts*, minute num)    g0 g1 g2      dated   (4..6)
 *   g0: p0 day 5, g1: p0 day 30, g2: p1 day 25; p2 never scored
 * note(id, goal_id, player_id, x num)        n0            undated (7)
 *   n0 -> g1 (day 30) and -> p0
 * tag(id, w num)                             a0            undated (8)
 *   p0 -> a0 (player.tag_id; the others have none), n0 -> a0
 * Dated by their links: p0 day 5 (first goal), p1 day 25, p2 none (no
 * dated link), n0 day 30 (its dated parent, though p0 is older), a0 day 30
 * (its note, dated by the parent rule first; p0's day 5 is a child rule's),
 * t0 none (its children are undated in the snapshot and not parent-dated).
 */
enum { T0 = 0, P0 = 1, P1 = 2, P2 = 3, G0 = 4, G1 = 5, G2 = 6, N0 = 7, A0 = 8 };

static HwSnapshot *
squad(void)
{
	HwSnapshot *s = synth_new(4);
	int tm = synth_add_table(s, "team", 1, "id:identifier,rating:numerical", -1);
	int pl = synth_add_table(s, "player", 3, "id:identifier,team_id:identifier,height:numerical", -1);
	int gl = synth_add_table(s, "goal", 3, "id:identifier,player_id:identifier,at:timestamp,minute:numerical", 2);
	int nt = synth_add_table(s, "note", 1,
							 "id:identifier,goal_id:identifier,player_id:identifier,tag_id:identifier,x:numerical", -1);
	int tg = synth_add_table(s, "tag", 1, "id:identifier,w:numerical", -1);
	int fk_pt = synth_add_fk(s, "player_team_id_fkey", pl, tm);
	int fk_gp = synth_add_fk(s, "goal_player_id_fkey", gl, pl);
	int fk_ng = synth_add_fk(s, "note_goal_id_fkey", nt, gl);
	int fk_np = synth_add_fk(s, "note_player_id_fkey", nt, pl);
	int fk_pa = synth_add_fk(s, "player_tag_id_fkey", pl, tg);
	int fk_na = synth_add_fk(s, "note_tag_id_fkey", nt, tg);
	int scorer[3] = {0, 0, 1}, day[3] = {5, 30, 25};

	synth_col(s, tm, "rating")->f32[0] = 1.0f;
	for (int r = 0; r < 3; r++)
	{
		synth_edge(s, synth_row(s, pl, r), synth_row(s, tm, 0), fk_pt);
		synth_col(s, pl, "height")->f32[r] = 1.7f + 0.1f * r;
		synth_edge(s, synth_row(s, gl, r), synth_row(s, pl, scorer[r]), fk_gp);
		synth_col(s, gl, "at")->i64[r] = T0_US + day[r] * DAY_US;
		synth_col(s, gl, "minute")->f32[r] = 10.0f * (r + 1);
	}
	synth_edge(s, synth_row(s, nt, 0), synth_row(s, gl, 1), fk_ng);
	synth_edge(s, synth_row(s, nt, 0), synth_row(s, pl, 0), fk_np);
	synth_col(s, nt, "x")->f32[0] = 0.5f;
	synth_edge(s, synth_row(s, pl, 0), synth_row(s, tg, 0), fk_pa);
	synth_edge(s, synth_row(s, nt, 0), synth_row(s, tg, 0), fk_na);
	synth_col(s, tg, "w")->f32[0] = 2.0f;
	return synth_finish(s) == 0 ? s : NULL;
}

/* A query task about row r of table `table`, observed at obs_day,
 * without label history. */
static HwTask *
query_task(const HwSnapshot *s, int table, uint32_t r, int obs_day)
{
	HwError err = {0};
	HwTask *q = hw_task_new("q", HW_TASK_QUERY, &err);

	q->anchor_table = table;
	q->target_stype = HW_ST_NUMERICAL;
	q->label_history = false;
	if (hw_task_alloc_seeds(q, 1, &err) != HW_OK)
		return q;
	q->anchor_row[0] = synth_row(s, table, r);
	q->anchor_key[0] = s->tables[table].key_hash[r];
	q->obs_time_us[0] = T0_US + obs_day * DAY_US;
	q->target[0] = 1.0;
	q->target_std = 1.0;
	if (hw_task_assign_splits(q, &err) != HW_OK)
		unit_fail(__FILE__, __LINE__, "%s", err.msg);
	return q;
}

/* The snapshot rows (bit set) of task t's one sequence, and the count in
 * the first child-count slot of the team.rating cell, all windows ([0]):
 * the team's players (-1 when the team is not in the sequence).  Frees t. */
static uint32_t
sequence_rows(const HwSnapshot *s, HwTask *t, bool date_undated, int *players)
{
	HwSamplerConfig cfg;
	HwError err = {0};
	uint32_t seed = 0, set = 0;
	HwBatch *b = NULL;
	const HwCellSource *rows;
	int n = 0;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 64;
	cfg.n_threads = 1;
	cfg.date_undated = date_undated;
	HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

	*players = -1;
	if (sm == NULL)
		unit_fail(__FILE__, __LINE__, "%s", err.msg);
	if (sm != NULL && hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK &&
		hw_sampler_last_rows(sm, 0, &rows, &n) == HW_OK)
	{
		for (int r = 0; r < n; r++)
			if (rows[r].row >= 0)
				set |= 1u << rows[r].row;
		for (int q = 0; q < b->S; q++)
			if (!b->is_padding[q] && b->column_ids[q] == 1)    /* team.rating */
				*players = b->child_count[(size_t) q * HW_CHILD_LINKS * HW_CHILD_WINDOWS];
	}
	hw_batch_free(b);
	hw_sampler_free(sm);
	hw_task_free(t);
	return set;
}

/* team t0's sequence at obs_day */
static uint32_t
team_rows(const HwSnapshot *s, int obs_day, bool date_undated, int *players)
{
	return sequence_rows(s, query_task(s, 0, 0, obs_day), date_undated, players);
}

#define BIT(x) (1u << (x))

UNIT_TEST(sampler_undated_rows_dated_by_links)
{
	HwSnapshot *s = squad();
	HwSamplerConfig def;
	int players;

	CHECK(s != NULL);
	hw_sampler_config_default(&def);
	CHECK(!def.date_undated);
	/* off: every player, the note and the tag at day 20 (the note through
	 * p0; its goal g1 of day 30 is a future parent), goals by their own time */
	CHECK_EQ_INT(team_rows(s, 20, false, &players),
				 BIT(T0) | BIT(P0) | BIT(P1) | BIT(P2) | BIT(G0) | BIT(N0) | BIT(A0));
	CHECK_EQ_INT(players, 3);
	/* on: p1 first scored on day 25, the note is as old as g1 (day 30) and
	 * the tag as its note, so none is there at day 20 (the tag, p0's
	 * parent, is a future parent); p2 has no dated link and stays */
	CHECK_EQ_INT(team_rows(s, 20, true, &players), BIT(T0) | BIT(P0) | BIT(P2) | BIT(G0));
	CHECK_EQ_INT(players, 2);
	/* day 25: p1 and his goal appear (time <= obs, as for dated rows) */
	CHECK_EQ_INT(team_rows(s, 25, true, &players), BIT(T0) | BIT(P0) | BIT(P1) | BIT(P2) | BIT(G0) | BIT(G2));
	CHECK_EQ_INT(players, 3);
	/* day 30: everything */
	CHECK_EQ_INT(team_rows(s, 30, true, &players), 0x1ffu);
	synth_free(s);
}

UNIT_TEST(sampler_undated_rows_anchor_always_taken)
{
	/* a query task about p1 observed at day 20, before his first goal: the
	 * anchor is taken (as a dated anchor after its obs time is), the rows
	 * around it are filtered as usual */
	HwSnapshot *s = squad();
	int players;

	CHECK(s != NULL);
	/* p1 (anchor), its team, the team's other players of day 20 (p0, p2)
	 * and p0's goal g0; not p1's own goal of day 25 nor the note */
	CHECK_EQ_INT(sequence_rows(s, query_task(s, 1, 1, 20), true, &players),
				 BIT(P1) | BIT(T0) | BIT(P0) | BIT(P2) | BIT(G0));
	CHECK_EQ_INT(players, 2);
	synth_free(s);
}
