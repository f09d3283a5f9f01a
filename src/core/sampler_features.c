/*
 * sampler_features.c: what a row's cells carry about the rows around it
 * beyond the sequence -- child counts per FK in time windows, child means of
 * a few numerical / boolean columns, descendant counts along paths of 2-3
 * child FKs (sampler.h "Descendant counts") -- and the per-FK and per-table
 * choices behind them, made once per sampler.  Counts and means are exact
 * (up to a read budget) whatever the child width: attention averages, so a
 * row's count of children is otherwise hard to read from the few shown.
 */
#include "core/sampler_internal.h"

#include <stdio.h>

/* The columns whose child means FK f carries (row_child_means): the first
 * MEAN_COLS_PER_FK numerical or boolean columns of its child table, and
 * their keys: a hash of the child link key and the column's name, so a key
 * survives rt_refresh like the link key; never 0. */
void
sampler_init_fk_means(HwSampler *s, int f)
{
	const HwSnapshot *snap = s->snap;
	int ct = snap->fks[f].child_table;

	s->fk_mean_n[f] = 0;
	if (ct < 0 || ct >= snap->ntables)
		return;
	for (int c = 0; c < snap->tables[ct].ncols && s->fk_mean_n[f] < MEAN_COLS_PER_FK; c++)
	{
		const HwColumn *col = &snap->tables[ct].cols[c];
		char     buf[512];
		int      n;

		if (col->global_id < 0 || !((col->stype == HW_ST_NUMERICAL && col->f32) ||
									(col->stype == HW_ST_BOOLEAN && col->u8)))
			continue;
		n = snprintf(buf, sizeof(buf), "mean\x1f%u\x1f%s", (unsigned) s->fk_link[2 * f + 1], col->name ? col->name : "");
		s->fk_mean_col[f * MEAN_COLS_PER_FK + s->fk_mean_n[f]] = (int16_t) c;
		s->fk_mean_key[f * MEAN_COLS_PER_FK + s->fk_mean_n[f]] = text_key(buf, n, sizeof(buf));
		s->fk_mean_n[f]++;
	}
}

/* Window tally of one counted row dated t at or before obs (HW_NO_TIME:
 * counted in all only): row_child_counts' scan and descendant counts. */
static inline void
tally_windows(const HwSampler *s, int64_t t, int64_t obs, uint64_t n[HW_CHILD_WINDOWS])
{
	n[0]++;
	if (t == HW_NO_TIME || obs == HW_NO_CUTOFF)
		return;
	for (int j = HW_CHILD_WINDOWS - 1; j >= 1 && t > obs - s->cnt_win_us[j]; j--)
		n[j]++;
}

/* One level of row_descendant_counts: row r's children through
 * p->fk[level] at or before obs, newest first (RECENT groups are sorted by
 * time); a child of a table without time is dated like its nearest dated
 * ancestor on the path (t_in).  Reads at most *budget edges in all. */
static void
descend(const HwSampler *s, uint32_t r, int64_t obs, const DescPath *p, int level, int64_t t_in,
		uint64_t n[HW_CHILD_WINDOWS], uint32_t *budget)
{
	uint16_t fk = p->fk[level];
	uint64_t k0, e1;

	fk_group(s->snap, r, fk, &k0, &e1);
	uint64_t end = s->fk_recent[fk] ? first_after(s->pf_time, k0, e1, obs) : e1;

	for (uint64_t e = end; e-- > k0 && *budget > 0;)
	{
		int64_t te = s->pf_time[e];

		(*budget)--;
		if (te > obs)
			continue;
		if (te == HW_NO_TIME)
			te = t_in;
		if (level + 1 >= p->depth || level + 1 >= DESC_DEPTH_MAX)
			tally_windows(s, te, obs, n);
		else
			descend(s, s->pf_child[e], obs, p, level + 1, te, n, budget);
	}
}

/*
 * Descendant counts of row g at obs along path p: the rows reached by
 * crossing p's child FKs down from g (every row on the way at or before
 * obs, as the sampler could show them), counted like row_child_counts
 * counts children -- [0] all, [j] those dated in window j -- where a row of
 * a table without time takes the time of its nearest dated ancestor on the
 * path.  Why: a customer's returns hang three hops down (orders -> order
 * lines -> returns); "any return in the last 90 days" is a count the
 * sequence rarely shows whole.  At most DESC_SCAN_MAX edges are read (the
 * newest first in sorted groups), so a row with more descendants gets a
 * lower bound.
 */
static void
row_descendant_counts(const HwSampler *s, uint32_t g, int64_t obs, const DescPath *p, uint16_t *cnt)
{
	uint64_t n[HW_CHILD_WINDOWS] = {0};
	uint32_t budget = DESC_SCAN_MAX;

	descend(s, g, obs, p, 0, s->row_time[g], n, &budget);
	for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		cnt[j] = sat16(n[j]);
}

/* Path instances of p from every row of table t (no time filter): how
 * much of the data the path reaches, to rank candidate paths. */
static uint64_t
path_instances(const HwSnapshot *snap, uint32_t r, const DescPath *p, int level)
{
	uint64_t k0, e1, n = 0;

	fk_group(snap, r, p->fk[level], &k0, &e1);
	if (level + 1 >= p->depth || level + 1 >= DESC_DEPTH_MAX)
		return e1 - k0;
	for (uint64_t e = k0; e < e1; e++)
		n += path_instances(snap, snap->pf_dst[e], p, level + 1);
	return n;
}

/* init_descendant_paths' search: extends cur (cur->fk[0..level) lead from
 * table root to table at) by each child FK of at; at full depth, a leaf
 * table not taken is a candidate, kept if it reaches more rows than the
 * best path to the same leaf so far (best/best_n, *nbest of at most 64). */
static void
collect_paths(const HwSnapshot *snap, const int *cf_off, const int *cf, const bool *taken, int root, int at,
			  DescPath *cur, int level, DescPath *best, uint64_t *best_n, int *nbest)
{
	for (int i = cf_off[at]; i < cf_off[at + 1]; i++)
	{
		int f = cf[i], child = snap->fks[f].child_table;

		cur->fk[level] = (uint16_t) f;
		if (level + 1 < cur->depth && level + 1 < DESC_DEPTH_MAX)
		{
			collect_paths(snap, cf_off, cf, taken, root, child, cur, level + 1, best, best_n, nbest);
			continue;
		}
		if (taken[child])
			continue;
		uint64_t n = 0;

		for (uint32_t r = snap->tables[root].row_offset;
			 r < snap->tables[root].row_offset + (uint32_t) snap->tables[root].nrows; r++)
			n += path_instances(snap, r, cur, 0);
		/* a path reaching thousands of rows from a typical row (a
		 * category's order lines) costs thousands of reads per row and is
		 * a lower bound at the edge budget */
		if (n > (uint64_t) DESC_MEAN_MAX * (uint64_t) snap->tables[root].nrows)
			n = 0;
		int b = 0;

		while (b < *nbest && snap->fks[best[b].fk[cur->depth - 1]].child_table != child)
			b++;
		if (b == *nbest && *nbest < 64)
		{
			best[b] = *cur;
			best_n[(*nbest)++] = n;
		}
		else if (b < *nbest && n > best_n[b])
		{
			best[b] = *cur;
			best_n[b] = n;
		}
	}
}

/*
 * The descendant paths of each table (descendant_counts): the child-count
 * slots a table's own child FKs leave free (HW_CHILD_LINKS minus their
 * number) go to paths of 2 or 3 child FKs to a table that is neither the
 * table itself nor one of its child tables -- one path per such table, the
 * shortest, among those the one that reaches the most rows in the data
 * (so a customer counts the returns of the orders it placed, not of those
 * it received as gifts), unless it reaches more than DESC_MEAN_MAX rows
 * per row of the table on average; shorter paths first.  Deterministic for a
 * snapshot; the key hashes the path's child link keys, so it survives
 * rt_refresh like a link key.
 */
int
sampler_init_descendant_paths(HwSampler *s)
{
	const HwSnapshot *snap = s->snap;
	int nt = snap->ntables, nf = snap->nfks;
	uint32_t cap = 0;

	s->desc_off = calloc((size_t) nt + 1, sizeof(uint32_t));
	if (s->desc_off == NULL)
		return -1;
	if (!s->cfg.descendant_counts || nf == 0 || snap->pf_off == NULL)
		return 0;
	/* the child FKs of each table (those with a valid child table) */
	int *cf_off = calloc((size_t) nt + 1, sizeof(int)), *cf = malloc(sizeof(int) * (size_t) nf);
	int  rc = cf_off && cf ? 0 : -1, ncf = 0;

	/* FKs grouped by parent table, in FK order within a group */
	for (int t = 0; t < nt && rc == 0; t++)
	{
		cf_off[t] = ncf;
		for (int f = 0; f < nf; f++)
			if (snap->fks[f].parent_table == t && snap->fks[f].child_table >= 0 && snap->fks[f].child_table < nt)
				cf[ncf++] = f;
	}
	if (rc == 0)
		cf_off[nt] = ncf;

	for (int t = 0; t < nt && rc == 0; t++)
	{
		int      nchild = 0, nsel = 0;
		bool    *taken = calloc((size_t) nt, sizeof(bool));
		DescPath sel[HW_CHILD_LINKS];

		if (taken == NULL)
		{
			rc = -1;
			break;
		}
		taken[t] = true;
		for (int f = 0; f < nf; f++)
			if (snap->fks[f].parent_table == t)
				nchild++;
		for (int i = cf_off[t]; i < cf_off[t + 1]; i++)
			taken[snap->fks[cf[i]].child_table] = true;
		for (int depth = 2; depth <= DESC_DEPTH_MAX && nsel < HW_CHILD_LINKS - nchild; depth++)
		{
			/* every path of this depth: depth-first over the child FKs of
			 * each table on the way (cf_off/cf), the best per leaf table */
			DescPath best[64];
			uint64_t best_n[64];
			int      nbest = 0;
			DescPath cur = {.depth = (uint8_t) depth};

			collect_paths(snap, cf_off, cf, taken, t, t, &cur, 0, best, best_n, &nbest);
			/* the leaf tables of this depth, most rows reached first */
			while (nsel < HW_CHILD_LINKS - nchild)
			{
				int b = -1;

				for (int i = 0; i < nbest; i++)
					if (best_n[i] > 0 && (b < 0 || best_n[i] > best_n[b]))
						b = i;
				if (b < 0)
					break;
				taken[snap->fks[best[b].fk[depth - 1]].child_table] = true;
				sel[nsel++] = best[b];
				best_n[b] = 0;
			}
		}
		free(taken);
		s->desc_off[t + 1] = s->desc_off[t] + (uint32_t) nsel;
		if (nsel > 0)
		{
			if (s->desc_off[t + 1] > cap)
			{
				cap = s->desc_off[t + 1] * 2;
				DescPath *d = realloc(s->desc, sizeof(DescPath) * cap);

				if (d == NULL)
				{
					rc = -1;
					break;
				}
				s->desc = d;
			}
			for (int i = 0; i < nsel; i++)
			{
				char buf[256];
				int  n = snprintf(buf, sizeof(buf), "desc");

				for (int l = 0; l < sel[i].depth; l++)
					n += snprintf(buf + n, sizeof(buf) - (size_t) n, "\x1f%u", (unsigned) s->fk_link[2 * sel[i].fk[l] + 1]);
				sel[i].key = text_key(buf, n, sizeof(buf));
				s->desc[s->desc_off[t] + (uint32_t) i] = sel[i];
			}
		}
	}
	free(cf_off);
	free(cf);
	return rc;
}

/*
 * The temporal degree of row g at obs: for each of its first HW_CHILD_LINKS
 * child FKs (pf_fk order), the FK's child link key and HW_CHILD_WINDOWS
 * counts of its children that the sampler could show -- [0] every child at
 * or before obs (NULL times and children of a table without time count, as
 * push_children keeps them), [j] those dated in (obs - cnt_win_us[j], obs]
 * (0 with no cutoff).  Counts, unlike the sampled children, are exact
 * whatever the width: attention averages, so a row's count of children is
 * otherwise hard to read.  Sorted groups (RECENT) take binary searches; a
 * table without time needs no look at its children; else one scan.
 */
void
sampler_row_child_counts(const HwSampler *s, uint32_t g, int64_t obs, uint32_t *key, uint16_t *cnt)
{
	const HwSnapshot *snap = s->snap;
	const int64_t *pt = s->pf_time;
	uint64_t k0 = snap->pf_off[g], k1 = snap->pf_off[g + 1];
	int l = 0;

	memset(key, 0, sizeof(uint32_t) * HW_CHILD_LINKS);
	memset(cnt, 0, sizeof(uint16_t) * HW_CHILD_LINKS * HW_CHILD_WINDOWS);
	while (k0 < k1 && l < HW_CHILD_LINKS)
	{
		uint16_t fk = snap->pf_fk[k0];
		uint64_t e1 = fk_group_end(snap, k0, k1);
		uint16_t *c = cnt + l * HW_CHILD_WINDOWS;

		key[l++] = s->fk_link[2 * fk + 1];
		if (!s->fk_child_timed[fk])
			c[0] = sat16(e1 - k0);
		else if (s->fk_recent[fk])
		{
			/* sorted by time, HW_NO_TIME first: [k0, end) is at or before obs */
			uint64_t end = first_after(pt, k0, e1, obs);

			c[0] = sat16(end - k0);
			/* window j is (obs - win_j, obs], nested: from the widest down,
			 * and once one is empty so are the narrower ones */
			uint64_t lo = k0;

			for (int j = HW_CHILD_WINDOWS - 1; j >= 1 && obs != HW_NO_CUTOFF && lo < end; j--)
			{
				lo = first_after(pt, lo, end, obs - s->cnt_win_us[j]);
				c[j] = sat16(end - lo);
			}
		}
		else
		{
			uint64_t n[HW_CHILD_WINDOWS] = {0};

			for (uint64_t e = k0; e < e1; e++)
				if (pt[e] <= obs)
					tally_windows(s, pt[e], obs, n);
			for (int j = 0; j < HW_CHILD_WINDOWS; j++)
				c[j] = sat16(n[j]);
		}
		k0 = e1;
	}
	/* then the table's descendant paths, while slots are free */
	uint16_t t = snap->row_table[g];

	for (uint32_t i = s->desc_off[t]; i < s->desc_off[t + 1] && l < HW_CHILD_LINKS; i++)
	{
		row_descendant_counts(s, g, obs, &s->desc[i], cnt + l * HW_CHILD_WINDOWS);
		if (cnt[l * HW_CHILD_WINDOWS] > 0)
			key[l++] = s->desc[i].key;
	}
}

/* child row r's value of column c for child means, false when NULL */
static inline bool
mean_value(const HwColumn *c, uint32_t r, double *v)
{
	if (c->valid && !c->valid[r])
		return false;
	*v = c->stype == HW_ST_BOOLEAN ? (c->u8[r] ? 1.0 : -1.0) : (double) c->f32[r];
	return true;
}

/* Sums and counts of columns cols[0..nc-1] over the children of edges
 * [k0, e1) of an unsorted group: the MEAN_SCAN_MAX last edges at or before
 * obs, each added to [0] and to the windows it falls in. */
static void
scanned_group_sums(const HwSampler *s, const HwColumn *const *cols, int nc, uint32_t off, uint64_t k0,
				   uint64_t e1, int64_t obs, double sum[][HW_CHILD_WINDOWS], uint32_t n[][HW_CHILD_WINDOWS])
{
	const int64_t *pt = s->pf_time;
	uint32_t seen = 0;

	memset(sum, 0, sizeof(double) * MEAN_COLS_PER_FK * HW_CHILD_WINDOWS);
	memset(n, 0, sizeof(uint32_t) * MEAN_COLS_PER_FK * HW_CHILD_WINDOWS);
	for (uint64_t e = e1; e-- > k0 && seen < MEAN_SCAN_MAX;)
	{
		int64_t  te = pt[e];
		uint32_t r = s->pf_child[e] - off;

		if (te > obs)
			continue;
		seen++;
		for (int i = 0; i < nc; i++)
		{
			double v;

			if (!mean_value(cols[i], r, &v))
				continue;
			sum[i][0] += v;
			n[i][0]++;
			if (te == HW_NO_TIME || obs == HW_NO_CUTOFF)
				continue;
			for (int j = HW_CHILD_WINDOWS - 1; j >= 1 && te > obs - s->cnt_win_us[j]; j--)
			{
				sum[i][j] += v;
				n[i][j]++;
			}
		}
	}
}

/* run / cnt += column c's non-NULL values of the children of edges
 * (stop, *e], newest first; *e becomes stop.  One loop per value type,
 * the running sum in a register. */
static inline void
column_segment(const HwColumn *c, const uint32_t *child, uint32_t off, uint64_t stop, uint64_t *e, double *run,
			   uint32_t *cnt)
{
	const uint8_t *valid = c->valid;
	double   acc = *run;
	uint32_t k = *cnt;
	uint64_t i = *e;

	if (c->stype == HW_ST_BOOLEAN)
		for (; i > stop; i--)
		{
			uint32_t r = child[i - 1] - off;

			if (valid && !valid[r])
				continue;
			acc += c->u8[r] ? 1.0 : -1.0;
			k++;
		}
	else
		for (; i > stop; i--)
		{
			uint32_t r = child[i - 1] - off;

			if (valid && !valid[r])
				continue;
			acc += (double) c->f32[r];
			k++;
		}
	*run = acc;
	*cnt = k;
	*e = i;
}

/* mean_windows "recent": windows 1-5 of columns cols[0..nc-1] over the
 * last 1, 3, 5, 10, 20 children of the scanned edges [start, end) of a
 * group sorted by time (the newest last), in place of their time windows:
 * per column one running sum from the newest child back, read off at each
 * count.  Why: a team's or a customer's recent form is its last few
 * events, which a time window shows only where the events come at a
 * steady pace (on 150 years of football the narrowest window is a year). */
static void
recent_window_sums(const HwSampler *s, const HwColumn *const *cols, int nc, uint32_t off, uint64_t start,
				   uint64_t end, double sum[][HW_CHILD_WINDOWS], uint32_t n[][HW_CHILD_WINDOWS])
{
	static const int counts[MEAN_RECENT_WINDOWS] = MEAN_RECENT_COUNTS;

	_Static_assert(MEAN_RECENT_WINDOWS < HW_CHILD_WINDOWS, "the recent windows replace time windows");

	for (int i = 0; i < nc; i++)
	{
		double   run = 0.0;
		uint32_t cnt = 0;
		uint64_t e = end;

		for (int w = 0; w < MEAN_RECENT_WINDOWS; w++)
		{
			uint64_t stop = end - start > (uint64_t) counts[w] ? end - counts[w] : start;

			column_segment(cols[i], s->pf_child, off, stop, &e, &run, &cnt);
			sum[i][w + 1] = run;
			n[i][w + 1] = cnt;
		}
	}
}

/* The same for a group sorted by time (RECENT, HW_NO_TIME first): its
 * children at or before obs are [k0, end), the scanned ones [start, end),
 * and window j holds [lo_j, end), lo_1 >= lo_2 >= ... (window 1 the
 * narrowest).  Per column, one running sum from the newest child back,
 * read off as it passes each window's oldest child: the same additions in
 * the same order as the scan above, so the same bits, with one addition
 * per child instead of one per window it falls in. */
static void
sorted_group_sums(const HwSampler *s, const HwColumn *const *cols, int nc, uint32_t off, uint64_t k0,
				  uint64_t e1, int64_t obs, double sum[][HW_CHILD_WINDOWS], uint32_t n[][HW_CHILD_WINDOWS])
{
	const int64_t *pt = s->pf_time;
	uint64_t end = first_after(pt, k0, e1, obs);
	uint64_t start = end - k0 > MEAN_SCAN_MAX ? end - MEAN_SCAN_MAX : k0;
	uint64_t lo[HW_CHILD_WINDOWS + 1];

	/* the scan's test: a child is in window j when it is in every window
	 * from the last (the widest) down to j; lo[W]: the scan's start */
	lo[HW_CHILD_WINDOWS] = start;
	for (int w = HW_CHILD_WINDOWS - 1; w >= 1; w--)
	{
		lo[w] = obs == HW_NO_CUTOFF ? end : first_after(pt, start, end, obs - s->cnt_win_us[w]);
		if (lo[w] < lo[w + 1])
			lo[w] = lo[w + 1];
	}
	for (int i = 0; i < nc; i++)
	{
		double   run = 0.0;
		uint32_t cnt = 0;
		uint64_t e = end;

		for (int j = 1; j <= HW_CHILD_WINDOWS; j++)
		{
			column_segment(cols[i], s->pf_child, off, lo[j], &e, &run, &cnt);
			if (j < HW_CHILD_WINDOWS)
			{
				sum[i][j] = run;
				n[i][j] = cnt;
			}
		}
		sum[i][0] = run;
		n[i][0] = cnt;
	}
	if (s->cfg.mean_windows == HW_MEAN_WINDOWS_RECENT)
		recent_window_sums(s, cols, nc, off, start, end, sum, n);
}

/*
 * The child means of row g at obs: for each of its first HW_CHILD_LINKS
 * child FKs (the links of row_child_counts) and each of the first
 * MEAN_COLS_PER_FK numerical or boolean columns of the child table, in that
 * order, up to HW_MEAN_SLOTS (FK, column) pairs: the pair's key and the mean
 * of the column over the children row_child_counts counts -- [0] all at or
 * before obs, [j] those in window j (mean_windows "recent": windows 1-5
 * the last 1, 3, 5, 10, 20 of them, in a group sorted by time,
 * recent_window_sums) -- NULLs left out, a numerical value as
 * its z-score, a boolean as -1 / +1; 0 where no child has a value.  At most
 * the MEAN_SCAN_MAX most recent children are read (all of them in a group
 * that small, which is every group of the demo shop).  Why: "the customer's
 * average rating", like a count, is a feature attention can only estimate
 * from the few children a sequence shows.  A cell task's own target column
 * (excl_table, excl_col) is never averaged: the seed row is a child of its
 * parents, dated at obs, and its masked value would reach them.
 */
void
sampler_row_child_means(const HwSampler *s, uint32_t g, int64_t obs, int excl_table, int excl_col,
						uint32_t *key, float *mean)
{
	const HwSnapshot *snap = s->snap;
	uint64_t k0 = snap->pf_off[g], k1 = snap->pf_off[g + 1];
	int l = 0, m = 0;

	memset(key, 0, sizeof(uint32_t) * HW_MEAN_SLOTS);
	memset(mean, 0, sizeof(float) * HW_MEAN_SLOTS * HW_CHILD_WINDOWS);
	while (k0 < k1 && l < HW_CHILD_LINKS && m < HW_MEAN_SLOTS)
	{
		uint16_t fk = snap->pf_fk[k0];
		uint64_t e1 = fk_group_end(snap, k0, k1);
		int      ct = s->fk_child_table[fk];
		const HwColumn *cols[MEAN_COLS_PER_FK];
		int      nc = 0;

		l++;
		for (int i = 0; i < s->fk_mean_n[fk] && m + nc < HW_MEAN_SLOTS; i++)
		{
			int c = s->fk_mean_col[fk * MEAN_COLS_PER_FK + i];

			if (ct == excl_table && c == excl_col)
				continue;
			cols[nc] = &snap->tables[ct].cols[c];
			key[m + nc] = s->fk_mean_key[fk * MEAN_COLS_PER_FK + i];
			nc++;
		}
		if (nc > 0)
		{
			double   sum[MEAN_COLS_PER_FK][HW_CHILD_WINDOWS];
			uint32_t n[MEAN_COLS_PER_FK][HW_CHILD_WINDOWS];

			if (s->fk_recent[fk])
				sorted_group_sums(s, cols, nc, snap->tables[ct].row_offset, k0, e1, obs, sum, n);
			else
				scanned_group_sums(s, cols, nc, snap->tables[ct].row_offset, k0, e1, obs, sum, n);
			for (int i = 0; i < nc; i++)
				for (int j = 0; j < HW_CHILD_WINDOWS; j++)
					mean[(m + i) * HW_CHILD_WINDOWS + j] = n[i][j] ? (float) (sum[i][j] / n[i][j]) : 0.0f;
			m += nc;
		}
		k0 = e1;
	}
}

_Static_assert((FEAT_MEMO & (FEAT_MEMO - 1)) == 0, "FEAT_MEMO must be a power of two");

/* memo slot of (g, obs): a hash of both, FEAT_MEMO a power of two */
static inline uint32_t
memo_slot(uint32_t g, int64_t obs)
{
	uint64_t h = ((uint64_t) g * 0x9E3779B97F4A7C15ull) ^ ((uint64_t) obs * 0xC2B2AE3D27D4EB4Full);

	return (uint32_t) (h >> 40) & (FEAT_MEMO - 1);
}

/*
 * Row g's child counts and child means at obs (sampler_row_child_counts,
 * sampler_row_child_means), through the thread's memo (FeatMemo in
 * sampler_internal.h) for a row with many children: the stored results
 * when the slot holds the same (g, obs, excluded column), else computed
 * and stored.
 */
void
sampler_row_count_mean_features(const HwSampler *s, Scratch *w, uint32_t g, int64_t obs, int excl_table,
								int excl_col, uint32_t *ckey, uint16_t *ccnt, uint32_t *mkey, float *mval)
{
	bool      keep = s->snap->pf_off[g + 1] - s->snap->pf_off[g] >= FEAT_MEMO_MIN_EDGES;
	FeatMemo *e;

	if (keep && w->memo == NULL && !w->memo_failed)
		w->memo_failed = (w->memo = calloc(FEAT_MEMO, sizeof(FeatMemo))) == NULL;
	e = keep && w->memo ? &w->memo[memo_slot(g, obs)] : NULL;
	if (e && e->used && e->g == g && e->obs == obs && e->excl_table == excl_table && e->excl_col == excl_col)
	{
		memcpy(ckey, e->ckey, sizeof(e->ckey));
		memcpy(ccnt, e->ccnt, sizeof(e->ccnt));
		memcpy(mkey, e->mkey, sizeof(e->mkey));
		memcpy(mval, e->mval, sizeof(e->mval));
		return;
	}
	sampler_row_child_counts(s, g, obs, ckey, ccnt);
	sampler_row_child_means(s, g, obs, excl_table, excl_col, mkey, mval);
	if (e == NULL)
		return;
	*e = (FeatMemo) {.g = g, .excl_table = excl_table, .excl_col = excl_col, .used = true, .obs = obs};
	memcpy(e->ckey, ckey, sizeof(e->ckey));
	memcpy(e->ccnt, ccnt, sizeof(e->ccnt));
	memcpy(e->mkey, mkey, sizeof(e->mkey));
	memcpy(e->mval, mval, sizeof(e->mval));
}
