/*
 * sampler_undated.c: when a row of a table without a time column enters
 * the history (sampler.h "Undated rows", docs/sampler.md).
 *
 * A table without a time column still holds rows that began at some time:
 * a player who first scored in 2019, a stock item first rented in July, an
 * order line written with its order.  Shown at every observation time, such
 * a row tells a sequence observed in 2010 about the 2019 player (a row of
 * the team with no goal yet), and the share of such rows shrinks towards
 * the end of the data, so the training years and the serving years look
 * different.  With date_undated each such row takes the time of the rows
 * it links to: the latest of its dated parents (it cannot exist before the
 * rows it references: an order line is as old as its order), else the
 * earliest of its dated children (it exists once something happened to it:
 * a player from his first goal, a product from its first order line or
 * review, whichever came first); a row that links to no dated row stays
 * undated.  The sampler then filters it like a dated row.
 */
#include "core/sampler_internal.h"

#include <stdlib.h>
#include <string.h>

/* The latest snapshot time among row r's parents (HW_NO_TIME: none). */
static int64_t
latest_parent_time(const HwSnapshot *snap, uint32_t r)
{
	int64_t latest = HW_NO_TIME;

	for (uint64_t k = snap->fp_off[r]; k < snap->fp_off[r + 1]; k++)
		if (snap->row_time_us[snap->fp_dst[k]] > latest)
			latest = snap->row_time_us[snap->fp_dst[k]];
	return latest;
}

/* The earliest time among row r's children in time[] (HW_NO_TIME: none). */
static int64_t
earliest_child_time(const HwSnapshot *snap, const int64_t *time, uint32_t r)
{
	int64_t earliest = HW_NO_TIME;

	for (uint64_t e = snap->pf_off[r]; e < snap->pf_off[r + 1]; e++)
	{
		int64_t t = time[snap->pf_dst[e]];

		if (t != HW_NO_TIME && (earliest == HW_NO_TIME || t < earliest))
			earliest = t;
	}
	return earliest;
}

/*
 * Two passes over the rows of undated tables, each reading only what the
 * pass before left, so the result does not depend on the order of the
 * rows: first the parent rule (snapshot times), then, for the rows it left
 * undated, the child rule over the times after the first pass -- a
 * product first sold before its first review is dated by the order line
 * that the first pass dated by its order.
 */
static int
date_undated_rows(HwSampler *s, int64_t *time)
{
	const HwSnapshot *snap = s->snap;
	int64_t *after_parents;

	for (int t = 0; t < snap->ntables; t++)
	{
		const HwTable *tb = &snap->tables[t];

		if (tb->time_col >= 0)
			continue;
		for (uint32_t r = tb->row_offset; r < tb->row_offset + tb->nrows; r++)
			time[r] = latest_parent_time(snap, r);
	}
	if ((after_parents = malloc(sizeof(int64_t) * snap->nrows)) == NULL)
		return SAMPLER_OOM;
	memcpy(after_parents, time, sizeof(int64_t) * snap->nrows);
	for (int t = 0; t < snap->ntables; t++)
	{
		const HwTable *tb = &snap->tables[t];

		if (tb->time_col >= 0)
			continue;
		for (uint32_t r = tb->row_offset; r < tb->row_offset + tb->nrows; r++)
		{
			if (time[r] == HW_NO_TIME)
				time[r] = earliest_child_time(snap, after_parents, r);
			s->table_dated[t] |= time[r] != HW_NO_TIME;
		}
	}
	free(after_parents);
	return HW_OK;
}

int
sampler_build_row_times(HwSampler *s)
{
	const HwSnapshot *snap = s->snap;

	s->row_time = snap->row_time_us;
	s->table_dated = calloc((size_t) snap->ntables + 1, 1);
	if (s->table_dated == NULL)
		return SAMPLER_OOM;
	for (int t = 0; t < snap->ntables; t++)
		s->table_dated[t] = snap->tables[t].time_col >= 0;
	if (!s->cfg.date_undated || snap->nrows == 0)
		return HW_OK;
	s->row_time_own = malloc(sizeof(int64_t) * snap->nrows);
	if (s->row_time_own == NULL)
		return SAMPLER_OOM;
	memcpy(s->row_time_own, snap->row_time_us, sizeof(int64_t) * snap->nrows);
	if (date_undated_rows(s, s->row_time_own) != HW_OK)
		return SAMPLER_OOM;
	s->row_time = s->row_time_own;
	return HW_OK;
}
