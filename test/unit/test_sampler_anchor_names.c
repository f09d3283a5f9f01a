/*
 * test_sampler_anchor_names.c: the names of a task's anchor rows are hidden
 * unless anchor_names is set (sampler.h "Anchor names").
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "core/sampler.h"

#include <string.h>

#define NROWS 20

/* global column ids, in table and column order */
enum
{
	TEAM_ID, TEAM_NAME,
	VENUE_ID, VENUE_LABEL,
	PLAYER_ID, PLAYER_TEAM, PLAYER_VENUE, PLAYER_ALIAS, PLAYER_NICK, PLAYER_HEIGHT,
	NCOLS
};

/*
 * team(id, name)            every name distinct; a query task's anchor
 * venue(id, label)          every label distinct; no task's anchor
 * player(id, team_id, venue_id, alias, nick, height)
 *                           alias 18 distinct values of 20 (90%), nick 17
 *                           (85%); a cell task on height anchors here
 * player r belongs to team r and plays at venue r.
 */
static HwSnapshot *
league(void)
{
	HwSnapshot *s = synth_new(4);
	int t = synth_add_table(s, "team", NROWS, "id:identifier,name:text", -1);
	int v = synth_add_table(s, "venue", NROWS, "id:identifier,label:text", -1);
	int p = synth_add_table(s, "player", NROWS,
							"id:identifier,team_id:identifier,venue_id:identifier,alias:text,nick:text,"
							"height:numerical", -1);

	synth_set_ntext(s, 100);
	for (uint32_t r = 0; r < NROWS; r++)
	{
		synth_col(s, t, "name")->u32[r] = r;
		synth_col(s, v, "label")->u32[r] = 20 + r;
		synth_col(s, p, "alias")->u32[r] = 40 + (r < 2 ? 0 : r - 2);    /* rows 0-2 share one */
		synth_col(s, p, "nick")->u32[r] = 60 + (r < 3 ? 0 : r - 3);     /* rows 0-3 share one */
		synth_col(s, p, "height")->f32[r] = (float) r / NROWS;
	}
	int ft = synth_add_fk(s, "player_team_id_fkey", p, t);
	int fv = synth_add_fk(s, "player_venue_id_fkey", p, v);

	for (uint32_t r = 0; r < NROWS; r++)
	{
		synth_edge(s, synth_row(s, p, r), synth_row(s, t, r), ft);
		synth_edge(s, synth_row(s, p, r), synth_row(s, v, r), fv);
	}
	return synth_finish(s) == 0 ? s : NULL;
}

/* A query task about team 0 (a numerical label). */
static HwTask *
team_task(const HwSnapshot *s, HwError *err)
{
	HwTask *q = hw_task_new("team_q", HW_TASK_QUERY, err);

	q->anchor_table = 0;
	q->target_stype = HW_ST_NUMERICAL;
	q->label_history = false;
	if (hw_task_alloc_seeds(q, 1, err) != HW_OK)
		return q;
	q->anchor_row[0] = synth_row(s, 0, 0);
	q->anchor_key[0] = s->tables[0].key_hash[0];
	q->obs_time_us[0] = 0;
	q->target[0] = 1.0;
	q->target_std = 1.0;
	if (hw_task_assign_splits(q, err) != HW_OK)
		unit_fail(__FILE__, __LINE__, "%s", err->msg);
	return q;
}

/* Cells per global column in the sequence of player 0 (height task),
 * hidden_names as given (NULL: by the rule). */
static void
cells_per_column_listed(const HwSnapshot *s, HwTask **tasks, int ntasks, bool anchor_names,
						const char *hidden_names, int *per_col)
{
	HwSamplerConfig cfg;
	HwError err = {0};
	uint32_t seed = 0;
	HwBatch *b = NULL;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 64;
	cfg.n_threads = 1;
	cfg.anchor_names = anchor_names;
	cfg.hidden_names = hidden_names;
	HwSampler *sm = hw_sampler_create(s, tasks, ntasks, &cfg, &err);

	CHECK_MSG(sm != NULL, "%s", err.msg);
	memset(per_col, 0, sizeof(int) * NCOLS);
	if (sm == NULL)
		return;
	CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
	for (int q = 0; b && q < 64; q++)
		if (!b->is_padding[q] && b->column_ids[q] >= 0 && b->column_ids[q] < NCOLS)
			per_col[b->column_ids[q]]++;
	hw_batch_free(b);
	hw_sampler_free(sm);
}

static void
cells_per_column(const HwSnapshot *s, HwTask **tasks, int ntasks, bool anchor_names, int *per_col)
{
	cells_per_column_listed(s, tasks, ntasks, anchor_names, NULL, per_col);
}

UNIT_TEST(sampler_anchor_names_hidden_by_default)
{
	HwSnapshot *s = league();
	HwError err = {0};

	CHECK(s != NULL);
	HwTask *height = hw_task_new("height", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(height, s, 2, synth_col_index(s, 2, "height"), &err) == HW_OK);
	HwTask *tasks[2] = {height, team_task(s, &err)};
	int shown[NCOLS], def[NCOLS];
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	CHECK(!cfg.anchor_names);
	/* the rows of player 0's sequence: player 0, team 0, venue 0 */
	cells_per_column(s, tasks, 2, true, shown);
	CHECK(shown[TEAM_NAME] == 1 && shown[VENUE_LABEL] == 1 && shown[PLAYER_ALIAS] == 1 &&
		  shown[PLAYER_NICK] == 1 && shown[PLAYER_HEIGHT] == 1);
	CHECK(shown[TEAM_ID] == 0 && shown[VENUE_ID] == 0 && shown[PLAYER_ID] == 0);
	cells_per_column(s, tasks, 2, false, def);
	/* the anchors' names are gone: team.name (all distinct) and
	 * player.alias (90% distinct); nick (85%) and the label of venue (no
	 * task's anchor) stay */
	CHECK_EQ_INT(def[TEAM_NAME], 0);
	CHECK_EQ_INT(def[PLAYER_ALIAS], 0);
	CHECK(def[PLAYER_NICK] == 1 && def[VENUE_LABEL] == 1 && def[PLAYER_HEIGHT] == 1);
	/* team has nothing left but its key: the key keeps the row's place */
	CHECK_EQ_INT(def[TEAM_ID], 1);
	CHECK(def[VENUE_ID] == 0 && def[PLAYER_ID] == 0);

	/* the sampler names what it hides (the training's first line, the
	 * checkpoint's list) */
	const char *tn, *cn;

	hw_sampler_config_default(&cfg);
	HwSampler *sm = hw_sampler_create(s, tasks, 2, &cfg, &err);

	CHECK(sm != NULL);
	CHECK(hw_sampler_hidden_name(sm, 0, &tn, &cn) && strcmp(tn, "team") == 0 && strcmp(cn, "name") == 0);
	CHECK(hw_sampler_hidden_name(sm, 1, &tn, &cn) && strcmp(tn, "player") == 0 && strcmp(cn, "alias") == 0);
	CHECK(!hw_sampler_hidden_name(sm, 2, &tn, &cn));
	hw_sampler_free(sm);

	/* a checkpoint's list hides exactly what it names, whatever the tasks:
	 * with the height task alone, team.name stays hidden and alias shows */
	int listed[NCOLS];

	cells_per_column_listed(s, tasks, 1, false, "team.name\x1fvenue.label", listed);
	CHECK(listed[TEAM_NAME] == 0 && listed[VENUE_LABEL] == 0 && listed[PLAYER_ALIAS] == 1);
	CHECK(listed[TEAM_ID] == 1 && listed[PLAYER_NICK] == 1);
	/* an empty list hides nothing */
	cells_per_column_listed(s, tasks, 2, false, "", listed);
	CHECK(listed[TEAM_NAME] == 1 && listed[PLAYER_ALIAS] == 1 && listed[TEAM_ID] == 0);

	/* without the team task, team is no anchor: its name shows */
	cells_per_column(s, tasks, 1, false, def);
	CHECK(def[TEAM_NAME] == 1 && def[TEAM_ID] == 0 && def[PLAYER_ALIAS] == 0);
	hw_task_free(tasks[1]);
	hw_task_free(height);
	synth_free(s);
}

UNIT_TEST(sampler_anchor_names_keep_a_cell_target)
{
	/* a categorical column of all-distinct values that a cell task
	 * predicts stays: the target always emits */
	HwSnapshot *s = synth_new(4);
	int t = synth_add_table(s, "item", NROWS, "id:identifier,code:categorical,size:numerical", -1);
	HwError err = {0};

	synth_set_ncat(s, t, "code", NROWS);
	for (uint32_t r = 0; r < NROWS; r++)
	{
		synth_col(s, t, "code")->u32[r] = r;
		synth_col(s, t, "size")->f32[r] = (float) r;
	}
	CHECK(synth_finish(s) == 0);
	HwTask *code = hw_task_new("code", HW_TASK_CELL, &err);
	HwTask *size = hw_task_new("size", HW_TASK_CELL, &err);

	CHECK(hw_task_build_cell(code, s, t, 1, &err) == HW_OK);
	CHECK(hw_task_build_cell(size, s, t, 2, &err) == HW_OK);
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 16;
	cfg.n_threads = 1;
	for (int with_code = 0; with_code < 2; with_code++)
	{
		HwTask *tasks[2] = {size, code};
		HwSampler *sm = hw_sampler_create(s, tasks, 1 + with_code, &cfg, &err);
		uint32_t seed = 0;
		HwBatch *b = NULL;
		int code_cells = 0;

		CHECK(sm && hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		for (int q = 0; b && q < 16; q++)
			code_cells += !b->is_padding[q] && b->column_ids[q] == 1;
		/* only the size task: code is a name of its anchor rows */
		CHECK_EQ_INT(code_cells, with_code);
		hw_batch_free(b);
		hw_sampler_free(sm);
	}
	hw_task_free(code);
	hw_task_free(size);
	synth_free(s);
}
