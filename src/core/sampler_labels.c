/*
 * sampler_labels.c: label means (sampler option label_means).  A row of a
 * query task's anchor table tells the mean of its own labels known by the
 * observation time (an opponent team: how often it went unbeaten), and a
 * row that is the parent of anchors (through a foreign key of the anchor
 * table) the mean over all its anchors' seeds (a player's team: how often
 * the team's scorers of earlier years went on to score; a store: how often
 * its customers churned).  Label history shows the anchor its own earlier
 * labels as rows; this is the same leak-free knowledge for every row of the
 * sequence that has labels or whose children have, and it reaches the model
 * through the child-mean slots (no new parameter).  Why: on the football benchmark's player task a GBDT
 * gains most from the team's identity (a rating, or the team's past scoring
 * rate), which the sequence shows only through the few team rows it holds.
 */
#include "core/sampler_internal.h"

#include <stdio.h>

/* The anchor table itself (fk = LABEL_SELF) or one FK from it to a parent
 * table: the task's labelled seeds grouped by their anchor, or by the
 * anchor's parent through the FK (off over that table's rows), each group
 * sorted by (the time the label became known, seed index).  4 bytes a
 * labelled seed: a serving backend holds one index per cached model. */
#define LABEL_SELF UINT16_MAX

typedef struct LabelLink
{
	uint16_t    fk;             /* LABEL_SELF: the anchor rows' own labels */
	uint32_t    key;            /* the mean slot's key (never 0) */
	uint32_t    row0, nparents; /* the parent table's first global row and its rows */
	uint32_t   *off;            /* [nparents + 1] */
	uint32_t   *seed;           /* [off[nparents]] seed indices */
} LabelLink;

struct LabelIndex
{
	int       nlinks;
	LabelLink link[LABEL_LINKS_MAX];
};

/* Whether task t's labels can be averaged: a query task that shows label
 * history, with a numerical or boolean target. */
static bool
task_has_label_means(const HwTask *t)
{
	return t->kind == HW_TASK_QUERY && t->label_history &&
		(t->target_stype == HW_ST_NUMERICAL || t->target_stype == HW_ST_BOOLEAN);
}

/* The row whose group holds a seed of this anchor: the anchor itself
 * (LABEL_SELF), or its parent through FK fk (UINT32_MAX: none) */
static uint32_t
parent_of(const HwSnapshot *snap, uint32_t anchor, uint16_t fk)
{
	if (fk == LABEL_SELF)
		return anchor;
	for (uint64_t k = snap->fp_off[anchor]; k < snap->fp_off[anchor + 1]; k++)
		if (snap->fp_fk[k] == fk)
			return snap->fp_dst[k];
	return UINT32_MAX;
}

/* Sorts each group of l by (known, seed) through a buffer of the largest
 * group's size. */
static int
sort_groups(const HwTask *t, LabelLink *l)
{
	uint32_t    most = 0;
	TimedRow   *buf;

	for (uint32_t r = 0; r < l->nparents; r++)
		most = l->off[r + 1] - l->off[r] > most ? l->off[r + 1] - l->off[r] : most;
	if (most < 2)
		return HW_OK;
	buf = malloc(sizeof(TimedRow) * most);
	if (buf == NULL)
		return SAMPLER_OOM;
	for (uint32_t r = 0; r < l->nparents; r++)
	{
		uint32_t *g = l->seed + l->off[r], n = l->off[r + 1] - l->off[r];

		for (uint32_t k = 0; k < n; k++)
			buf[k] = (TimedRow) { .t = hw_task_label_time(t, g[k]), .row = g[k] };
		qsort(buf, n, sizeof(TimedRow), sampler_cmp_timed);
		for (uint32_t k = 0; k < n; k++)
			g[k] = buf[k].row;
	}
	free(buf);
	return HW_OK;
}

/* The groups of one link: a counting pass, a filling pass, a sort per group. */
static int
build_link(const HwSampler *s, const HwTask *t, LabelLink *l)
{
	const HwSnapshot *snap = s->snap;
	uint32_t *fill;

	l->off = calloc((size_t) l->nparents + 1, sizeof(uint32_t));
	fill = calloc((size_t) l->nparents + 1, sizeof(uint32_t));
	if (l->off == NULL || fill == NULL)
	{
		free(fill);
		return SAMPLER_OOM;
	}
	for (int pass = 0; pass < 2; pass++)
	{
		for (uint32_t i = 0; i < t->nseeds; i++)
		{
			int64_t  known = hw_task_label_time(t, i);
			uint32_t p;

			if (t->target_null[i] || t->obs_time_us[i] == HW_NO_CUTOFF || known == HW_NO_CUTOFF)
				continue;
			p = parent_of(snap, t->anchor_row[i], l->fk);
			if (p == UINT32_MAX || p < l->row0 || p - l->row0 >= l->nparents)
				continue;
			if (pass == 0)
				l->off[p - l->row0 + 1]++;
			else
				l->seed[fill[p - l->row0]++] = i;
		}
		if (pass == 0)
		{
			for (uint32_t r = 0; r < l->nparents; r++)
				l->off[r + 1] += l->off[r];
			memcpy(fill, l->off, sizeof(uint32_t) * l->nparents);
			l->seed = malloc(sizeof(uint32_t) * (l->off[l->nparents] ? l->off[l->nparents] : 1));
			if (l->seed == NULL)
			{
				free(fill);
				return SAMPLER_OOM;
			}
		}
	}
	free(fill);
	return sort_groups(t, l);
}

/* Link l of task t over the rows of table tab, keyed by what (the FK's child
 * link key, or 0 for the anchor rows' own labels) and the task's name. */
static int
add_link(const HwSampler *s, const HwTask *t, LabelIndex *ix, uint16_t fk, int tab, uint32_t what)
{
	LabelLink *l = &ix->link[ix->nlinks++];
	char       buf[512];
	int        n;

	l->fk = fk;
	l->row0 = s->snap->tables[tab].row_offset;
	l->nparents = (uint32_t) s->snap->tables[tab].nrows;
	n = snprintf(buf, sizeof(buf), "label mean\x1f%u\x1f%s", (unsigned) what, t->name ? t->name : "");
	l->key = text_key(buf, n, sizeof(buf));
	return build_link(s, t, l);
}

/* Task t's index: the anchor rows' own labels, then its first
 * LABEL_LINKS_MAX - 1 FKs from the anchor table (in FK order); NULL in *out
 * when the task has no label means. */
static int
build_task_index(const HwSampler *s, const HwTask *t, LabelIndex **out)
{
	const HwSnapshot *snap = s->snap;
	LabelIndex *ix;

	*out = NULL;
	if (!task_has_label_means(t))
		return HW_OK;
	ix = calloc(1, sizeof(LabelIndex));
	if (ix == NULL)
		return SAMPLER_OOM;
	*out = ix;
	if (add_link(s, t, ix, LABEL_SELF, t->anchor_table, 0) != HW_OK)
		return SAMPLER_OOM;
	for (int f = 0; f < snap->nfks && ix->nlinks < LABEL_LINKS_MAX; f++)
	{
		int pt = s->fk_parent_table[f];

		if (s->fk_child_table[f] != t->anchor_table || pt >= snap->ntables)
			continue;
		if (add_link(s, t, ix, (uint16_t) f, pt, s->fk_link[2 * f + 1]) != HW_OK)
			return SAMPLER_OOM;
	}
	return HW_OK;
}

int
sampler_init_label_means(HwSampler *s)
{
	if (!s->cfg.label_means)
		return HW_OK;
	s->label_idx = calloc((size_t) s->ntasks, sizeof(LabelIndex *));
	if (s->label_idx == NULL)
		return SAMPLER_OOM;
	for (int t = 0; t < s->ntasks; t++)
		if (build_task_index(s, s->tasks[t], &s->label_idx[t]) != HW_OK)
			return SAMPLER_OOM;
	return HW_OK;
}

void
sampler_free_label_means(HwSampler *s)
{
	if (s->label_idx == NULL)
		return;
	for (int t = 0; t < s->ntasks; t++)
	{
		LabelIndex *ix = s->label_idx[t];

		for (int k = 0; ix && k < ix->nlinks; k++)
		{
			free(ix->link[k].off);
			free(ix->link[k].seed);
		}
		free(ix);
	}
	free(s->label_idx);
	s->label_idx = NULL;
}

/* The mean of one parent's visible labels, [0] all and [j] those known in
 * window j, newest first, at most MEAN_SCAN_MAX read; 0 where none. */
static void
parent_label_mean(const HwSampler *s, const HwTask *t, const LabelLink *l, uint32_t p, int64_t obs,
				  int max_split, float *mean)
{
	const uint32_t *e = l->seed;
	uint32_t lo = l->off[p], hi = l->off[p + 1], seen = 0;
	double   sum[HW_CHILD_WINDOWS] = {0};
	uint32_t n[HW_CHILD_WINDOWS] = {0};

	/* the end of the entries known by obs */
	while (lo < hi)
	{
		uint32_t mid = lo + (hi - lo) / 2;

		if (hw_task_label_time(t, e[mid]) <= obs)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t k = lo; k-- > l->off[p] && seen < MEAN_SCAN_MAX;)
	{
		uint32_t i = e[k];
		int64_t  known = hw_task_label_time(t, i);
		double   v;

		if ((max_split >= 0 && t->split[i] > max_split) || !hw_task_label_visible(t, i, obs))
			continue;
		seen++;
		v = t->target_stype == HW_ST_BOOLEAN ? (t->target[i] != 0 ? 1.0 : -1.0) : (double) hw_task_target_z(t, i);
		sum[0] += v;
		n[0]++;
		for (int j = HW_CHILD_WINDOWS - 1; j >= 1 && known > obs - s->cnt_win_us[j]; j--)
		{
			sum[j] += v;
			n[j]++;
		}
	}
	for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		mean[j] = n[j] ? (float) (sum[j] / n[j]) : 0.0f;
}

int
sampler_row_label_means(const HwSampler *s, int task, uint32_t g, int64_t obs, int max_split, uint32_t *key,
						float *mean, int cap)
{
	const LabelIndex *ix = s->label_idx ? s->label_idx[task] : NULL;
	int m = 0;

	if (ix == NULL || obs == HW_NO_CUTOFF)
		return 0;
	for (int k = 0; k < ix->nlinks && m < cap; k++)
	{
		const LabelLink *l = &ix->link[k];

		if (g < l->row0 || g - l->row0 >= l->nparents)
			continue;
		key[m] = l->key;
		parent_label_mean(s, s->tasks[task], l, g - l->row0, obs, max_split, mean + (size_t) m * HW_CHILD_WINDOWS);
		m++;
	}
	return m;
}
