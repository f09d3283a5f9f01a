/*
 * sampler_cache.c: the read-only tables a sampler builds once and its
 * clones share -- the emitted columns of each table and the row cache (a
 * row-major copy of their values, one record per row), the child time of
 * every P->F edge, the per-FK link keys and tables, and (RECENT) each
 * temporal FK group sorted by time.  The BFS is bound by memory latency:
 * these turn scattered columnar reads into one record and one sequential
 * array per row.
 */
#include "core/sampler_internal.h"

#include <stdio.h>


/*
 * Link key of FK f crossed towards the parent (dir 0) or the child (dir 1):
 * a hash of the child table's, the constraint's and the parent table's
 * names, so it stays the same across rt_refresh (FK indices may not); never
 * 0 (0 is "no link": the seed, the anchor, label-history rows).  The model
 * turns it into a fixed code (model.h, link_types).
 */
static uint32_t
fk_link_key(const HwSnapshot *snap, int f, int dir)
{
	const HwForeignKey *k = &snap->fks[f];
	const char *ct = k->child_table >= 0 && k->child_table < snap->ntables ? snap->tables[k->child_table].name : "";
	const char *pt = k->parent_table >= 0 && k->parent_table < snap->ntables ? snap->tables[k->parent_table].name : "";
	const char *nm = k->name ? k->name : "";
	char        buf[512];
	int         n = snprintf(buf, sizeof(buf), "%s\x1f%s\x1f%s\x1f%d", ct ? ct : "", nm, pt ? pt : "", dir);

	return text_key(buf, n, sizeof(buf));
}

/* The records of inf's columns for every row of tb (TableInfo). */
static int
build_records(const HwTable *tb, TableInfo *inf)
{
	uint32_t nullbytes = ((uint32_t) inf->n + 7) / 8;
	uint32_t off = (nullbytes + 3) & ~3u;

	inf->off = malloc(sizeof(uint16_t) * ((size_t) inf->n + 1));
	if (inf->off == NULL)
		return -1;
	for (int k = 0; k < inf->n; k++)
	{
		int8_t st = inf->stype[k];

		inf->off[k] = (uint16_t) off;
		off += st == HW_ST_IDENTIFIER ? 0 : st == HW_ST_TIMESTAMP ? 8 : 4;
		if (off > 60000)
			return -1;
	}
	inf->stride = (off + 7) & ~7u;
	inf->rec = calloc((size_t) tb->nrows * inf->stride + 8, 1);
	if (inf->rec == NULL)
		return -1;
	for (uint32_t r = 0; r < tb->nrows; r++)
	{
		uint8_t *rec = inf->rec + (size_t) r * inf->stride;

		for (int k = 0; k < inf->n; k++)
		{
			const HwColumn *col = &tb->cols[inf->col[k]];
			uint8_t *v = rec + inf->off[k];

			if (col->valid && !col->valid[r])
			{
				rec[k >> 3] |= (uint8_t) (1u << (k & 7));
				continue;
			}
			switch (inf->stype[k])
			{
				case HW_ST_NUMERICAL: memcpy(v, &col->f32[r], 4); break;
				case HW_ST_TIMESTAMP: memcpy(v, &col->i64[r], 8); break;
				case HW_ST_BOOLEAN: v[0] = col->u8[r] != 0; break;
				case HW_ST_CATEGORICAL:
				case HW_ST_TEXT: memcpy(v, &col->u32[r], 4); break;
				default: break;
			}
		}
	}
	return 0;
}

int
sampler_cmp_timed(const void *a, const void *b)
{
	const TimedRow *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/*
 * RECENT policy: sorts each P->F group of a temporal FK by (child time,
 * child row) ascending, in pf_time and pf_child_own together.  The groups
 * stay where they are (pf_off/pf_fk unchanged).  Children usually arrive
 * in time order already, so an insertion sort does the small groups in
 * about one pass; large ones go through qsort.
 */
static int
sort_recent_groups(HwSampler *s)
{
	const HwSnapshot *snap = s->snap;
	TimedRow *tmp = NULL;
	size_t tmp_cap = 0;

	for (uint32_t r = 0; r < snap->nrows; r++)
	{
		uint64_t e = snap->pf_off[r], e1 = snap->pf_off[r + 1];

		while (e < e1)
		{
			uint16_t fk = snap->pf_fk[e];
			uint64_t g1 = fk_group_end(snap, e, e1);
			uint64_t n = g1 - e;

			if (s->fk_recent[fk] && n > 1)
			{
				int64_t *pt = s->pf_time + e;
				uint32_t *pd = s->pf_child_own + e;

				if (n <= 32)
				{
					for (uint64_t i = 1; i < n; i++)
					{
						int64_t t = pt[i];
						uint32_t d = pd[i];
						uint64_t j = i;

						while (j > 0 && (pt[j - 1] > t || (pt[j - 1] == t && pd[j - 1] > d)))
						{
							pt[j] = pt[j - 1];
							pd[j] = pd[j - 1];
							j--;
						}
						pt[j] = t;
						pd[j] = d;
					}
				}
				else
				{
					if (grow((void **) &tmp, &tmp_cap, n, sizeof(TimedRow)) != 0)
					{
						free(tmp);
						return -1;
					}
					for (uint64_t i = 0; i < n; i++)
					{
						tmp[i].t = pt[i];
						tmp[i].row = pd[i];
					}
					qsort(tmp, n, sizeof(TimedRow), sampler_cmp_timed);
					for (uint64_t i = 0; i < n; i++)
					{
						pt[i] = tmp[i].t;
						pd[i] = tmp[i].row;
					}
				}
			}
			e = g1;
		}
	}
	free(tmp);
	return 0;
}

/* Column c of table ti is some cell task's target. */
static bool
is_cell_target(const HwSampler *s, int ti, int c)
{
	bool target = false;

	for (int i = 0; i < s->ntasks; i++)
		target |= s->tasks[i]->kind == HW_TASK_CELL && s->tasks[i]->anchor_table == ti &&
			s->tasks[i]->target_col == c;
	return target;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

	return (x > y) - (x < y);
}

/* Column col's non-NULL values are nearly all distinct (sampler.h "Anchor
 * names"); -1 when out of memory. */
static int
values_nearly_distinct(const HwColumn *col, uint32_t nrows)
{
	uint32_t *v = malloc(sizeof(uint32_t) * ((size_t) nrows + 1));
	uint32_t n = 0, distinct = 0;

	if (v == NULL)
		return -1;
	for (uint32_t r = 0; r < nrows; r++)
		if (col->valid == NULL || col->valid[r])
			v[n++] = col->u32[r];
	qsort(v, n, sizeof(uint32_t), cmp_u32);
	for (uint32_t i = 0; i < n; i++)
		distinct += i == 0 || v[i] != v[i - 1];
	free(v);
	return n >= HW_NAME_MIN_ROWS && (uint64_t) distinct * 100 >= (uint64_t) n * HW_NAME_DISTINCT_PCT;
}

/* "table.column" is an item of list (items joined by HW_NAME_SEP). */
static bool
listed(const char *list, const char *table, const char *column)
{
	size_t tl = strlen(table), cl = strlen(column);

	for (const char *p = list;; )
	{
		const char *end = strchr(p, HW_NAME_SEP);
		size_t n = end ? (size_t) (end - p) : strlen(p);

		if (n == tl + 1 + cl && strncmp(p, table, tl) == 0 && p[tl] == '.' && strncmp(p + tl + 1, column, cl) == 0)
			return true;
		if (end == NULL)
			return false;
		p = end + 1;
	}
}

/* Column c of table ti is a name of a task's anchor rows that anchor_names
 * hides, or one that cfg.hidden_names lists (sampler.h "Anchor names");
 * -1 when out of memory. */
static int
is_hidden_name(const HwSampler *s, int ti, int c)
{
	const HwTable *tb = &s->snap->tables[ti];
	const HwColumn *col = &tb->cols[c];
	bool anchor = false;

	if (s->cfg.hidden_names != NULL)
		return !s->cfg.anchor_names && col->global_id >= 0 && !is_cell_target(s, ti, c) &&
			listed(s->cfg.hidden_names, tb->name, col->name);
	if (s->cfg.anchor_names || col->global_id < 0 || col->u32 == NULL ||
		(col->stype != HW_ST_TEXT && col->stype != HW_ST_CATEGORICAL) || is_cell_target(s, ti, c))
		return 0;
	for (int i = 0; i < s->ntasks; i++)
		anchor |= s->tasks[i]->anchor_table == ti;
	return anchor ? values_nearly_distinct(col, tb->nrows) : 0;
}

/* Without key_cells, identifier columns are left out, except in a table
 * whose every other column is left out too (ignored, or a hidden name) the
 * first one (sampler.h "Key cells"): the column index to keep, or -1.
 * hidden[c]: column c is a hidden name. */
static int
kept_identifier(const HwTable *tb, bool key_cells, const uint8_t *hidden)
{
	if (key_cells)
		return -1;
	for (int c = 0; c < tb->ncols; c++)
	{
		const HwColumn *col = &tb->cols[c];

		if (col->global_id >= 0 && col->stype > HW_ST_IDENTIFIER && col->stype < HW_ST_IGNORED && !hidden[c])
			return -1;          /* the table has a value column */
	}
	for (int c = 0; c < tb->ncols; c++)
		if (tb->cols[c].stype == HW_ST_IDENTIFIER && tb->cols[c].global_id >= 0)
			return c;
	return -1;
}

/* The columns of table ti that emit cells, into inf: not ignored, not a
 * hidden name (hidden[c]), an identifier only as sampler.h "Key cells"
 * says. */
static int
emit_columns(const HwSampler *s, int ti, const uint8_t *hidden, TableInfo *inf, HwError *err)
{
	const HwTable *tb = &s->snap->tables[ti];
	int keep_id = kept_identifier(tb, s->cfg.key_cells, hidden);

	for (int c = 0; c < tb->ncols; c++)
	{
		const HwColumn *col = &tb->cols[c];

		if (col->stype == HW_ST_IGNORED || col->global_id < 0 || col->stype < 0 ||
			col->stype >= HW_N_STYPES || hidden[c])
			continue;
		if (col->stype == HW_ST_IDENTIFIER && !s->cfg.key_cells && c != keep_id &&
			!is_cell_target(s, ti, c))
			continue;
		bool ok = col->stype == HW_ST_IDENTIFIER ||
			(col->stype == HW_ST_NUMERICAL && col->f32) ||
			(col->stype == HW_ST_TIMESTAMP && col->i64) ||
			(col->stype == HW_ST_BOOLEAN && col->u8) ||
			((col->stype == HW_ST_CATEGORICAL || col->stype == HW_ST_TEXT) && col->u32);

		if (!ok)
			return hw_error_set(err, HW_ERR_CORRUPT, "column %s of %s has no values for its type %s",
								col->name, tb->name, hw_stype_name(col->stype));
		inf->col[inf->n] = c;
		inf->gid[inf->n] = col->global_id;
		inf->stype[inf->n] = col->stype;
		inf->n++;
	}
	return HW_OK;
}

/* The emitted columns of table ti in inf (col, gid, stype, n) and its
 * hidden names (hidden).  HW_OK,
 * SAMPLER_OOM, or HW_ERR_CORRUPT (err set) for a column without values. */
static int
select_columns(const HwSampler *s, int ti, TableInfo *inf, HwError *err)
{
	const HwTable *tb = &s->snap->tables[ti];
	uint8_t *hidden = calloc((size_t) tb->ncols + 1, 1);

	inf->col = malloc(sizeof(int32_t) * ((size_t) tb->ncols + 1));
	inf->gid = malloc(sizeof(int32_t) * ((size_t) tb->ncols + 1));
	inf->stype = malloc((size_t) tb->ncols + 1);
	inf->hidden = hidden;
	if (!hidden || !inf->col || !inf->gid || !inf->stype)
		return SAMPLER_OOM;
	for (int c = 0; c < tb->ncols; c++)
	{
		int h = is_hidden_name(s, ti, c);

		if (h < 0)
			return SAMPLER_OOM;
		hidden[c] = (uint8_t) h;
	}
	return emit_columns(s, ti, hidden, inf, err);
}

int
sampler_build_row_cache(HwSampler *s, HwError *err)
{
	const HwSnapshot *snap = s->snap;

	s->tinfo = calloc((size_t) snap->ntables + 1, sizeof(TableInfo));
	if (s->tinfo == NULL)
		return SAMPLER_OOM;
	for (int ti = 0; ti < snap->ntables; ti++)
	{
		int rc = select_columns(s, ti, &s->tinfo[ti], err);

		if (rc != HW_OK)
			return rc;
		if (build_records(&snap->tables[ti], &s->tinfo[ti]) != 0)
			return SAMPLER_OOM;
	}
	return HW_OK;
}

/* pf_time and the per-FK tables of FK f's link keys, tables, policy and
 * child means */
static void
init_fk_tables(HwSampler *s, int f)
{
	const HwSnapshot *snap = s->snap;

	s->fk_child_table[f] = (uint16_t) snap->fks[f].child_table;
	s->fk_parent_table[f] = (uint16_t) snap->fks[f].parent_table;
	for (int dir = 0; dir < 2; dir++)
		s->fk_link[2 * f + dir] = fk_link_key(snap, f, dir);
	s->fk_child_timed[f] = snap->fks[f].child_table >= 0 &&
		snap->fks[f].child_table < snap->ntables &&
		s->table_dated[snap->fks[f].child_table];
	s->fk_recent[f] = s->recent && s->fk_child_timed[f];
	sampler_init_fk_means(s, f);
}

int
sampler_build_edge_tables(HwSampler *s)
{
	const HwSnapshot *snap = s->snap;
	uint64_t ne = snap->pf_off ? snap->pf_off[snap->nrows] : 0;
	bool any_recent = false;

	s->pf_time = malloc(sizeof(int64_t) * (ne + 1));
	s->fk_child_table = malloc(sizeof(uint16_t) * ((size_t) snap->nfks + 1));
	s->fk_parent_table = malloc(sizeof(uint16_t) * ((size_t) snap->nfks + 1));
	s->fk_recent = calloc((size_t) snap->nfks + 1, 1);
	s->fk_link = malloc(sizeof(uint32_t) * 2 * ((size_t) snap->nfks + 1));
	s->fk_child_timed = calloc((size_t) snap->nfks + 1, 1);
	s->fk_mean_n = calloc((size_t) snap->nfks + 1, 1);
	s->fk_mean_col = calloc(((size_t) snap->nfks + 1) * MEAN_COLS_PER_FK, sizeof(int16_t));
	s->fk_mean_key = calloc(((size_t) snap->nfks + 1) * MEAN_COLS_PER_FK, sizeof(uint32_t));
	if (!s->pf_time || !s->fk_child_table || !s->fk_parent_table || !s->fk_recent || !s->fk_link ||
		!s->fk_child_timed || !s->fk_mean_n || !s->fk_mean_col || !s->fk_mean_key)
		return SAMPLER_OOM;
	for (uint64_t e = 0; e < ne; e++)
		s->pf_time[e] = s->row_time[snap->pf_dst[e]];
	for (int f = 0; f < snap->nfks; f++)
	{
		init_fk_tables(s, f);
		any_recent |= s->fk_recent[f] != 0;
	}
	s->pf_child = snap->pf_dst;
	if (!any_recent || ne == 0)
		return HW_OK;
	s->pf_child_own = malloc(sizeof(uint32_t) * ne);
	if (s->pf_child_own == NULL)
		return SAMPLER_OOM;
	memcpy(s->pf_child_own, snap->pf_dst, sizeof(uint32_t) * ne);
	if (sort_recent_groups(s) != 0)
		return SAMPLER_OOM;
	s->pf_child = s->pf_child_own;
	return HW_OK;
}

bool
hw_sampler_hidden_name(const HwSampler *s, int i, const char **table, const char **column)
{
	for (int ti = 0; ti < s->snap->ntables; ti++)
		for (int c = 0; s->tinfo[ti].hidden && c < s->snap->tables[ti].ncols; c++)
			if (s->tinfo[ti].hidden[c] && i-- == 0)
			{
				*table = s->snap->tables[ti].name;
				*column = s->snap->tables[ti].cols[c].name;
				return true;
			}
	return false;
}
