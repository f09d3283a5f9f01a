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
 * a player from his first goal); a row that links to no dated row stays
 * undated.  The sampler then filters it like a dated row.
 */
#include "core/sampler_internal.h"

#include <stdlib.h>
#include <string.h>

/* The time row r of an undated table takes: the latest time of its dated
 * parents, else the earliest of its dated children, else HW_NO_TIME.
 * Reads the snapshot's own times only, so the result does not depend on
 * the order in which rows are dated. */
static int64_t
linked_time(const HwSnapshot *snap, uint32_t r)
{
	int64_t latest_parent = HW_NO_TIME, earliest_child = HW_NO_TIME;

	for (uint64_t k = snap->fp_off[r]; k < snap->fp_off[r + 1]; k++)
	{
		int64_t t = snap->row_time_us[snap->fp_dst[k]];

		if (t > latest_parent)
			latest_parent = t;
	}
	if (latest_parent != HW_NO_TIME)
		return latest_parent;
	for (uint64_t e = snap->pf_off[r]; e < snap->pf_off[r + 1]; e++)
	{
		int64_t t = snap->row_time_us[snap->pf_dst[e]];

		if (t != HW_NO_TIME && (earliest_child == HW_NO_TIME || t < earliest_child))
			earliest_child = t;
	}
	return earliest_child;
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
	for (int t = 0; t < snap->ntables; t++)
	{
		const HwTable *tb = &snap->tables[t];

		if (tb->time_col >= 0)
			continue;
		for (uint32_t r = tb->row_offset; r < tb->row_offset + tb->nrows; r++)
		{
			s->row_time_own[r] = linked_time(snap, r);
			s->table_dated[t] |= s->row_time_own[r] != HW_NO_TIME;
		}
	}
	s->row_time = s->row_time_own;
	return HW_OK;
}
