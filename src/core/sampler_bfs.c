/*
 * sampler_bfs.c: one sequence (sampler.h "One sequence"): a BFS from the
 * seed over a priority queue keyed (reached by a child edge?, hops,
 * tie-break), parents before children, children time-filtered and sampled
 * per FK (RECENT or UNIFORM), label-history rows under the anchor.  Phase 1
 * of a batch: each worker thread builds whole sequences with its own
 * scratch, writing cells straight into the batch tensors at offset b * S.
 *
 * Speed: the BFS is bound by cache misses, not arithmetic.  A visited
 * array stamped by a generation counter maps global row -> sequence-local
 * id without hashing; the frontier is a binary heap; the row cache
 * (sampler_cache.c) keeps a row's cells in one record; the next rows'
 * records and edges are prefetched while the current row is emitted.
 */
#include "core/sampler_internal.h"

#include <math.h>

/* ------------------------------------------------------------------- heap */

static inline bool
heap_push(Scratch *w, uint64_t key, uint32_t row, uint16_t hops, uint16_t table, uint8_t virt)
{
	if (w->heap_n == w->heap_cap &&
		grow((void **) &w->heap, &w->heap_cap, w->heap_n + 1, sizeof(HeapEnt)) != 0)
		return false;
	size_t i = w->heap_n++;
	HeapEnt e = {key, row, hops, table, virt, w->cur_link};

	while (i > 0)
	{
		size_t p = (i - 1) / 2;

		if (w->heap[p].key <= key)
			break;
		w->heap[i] = w->heap[p];
		i = p;
	}
	w->heap[i] = e;
	return true;
}

static inline HeapEnt
heap_pop(Scratch *w)
{
	HeapEnt top = w->heap[0];
	HeapEnt last = w->heap[--w->heap_n];
	size_t n = w->heap_n, i = 0;

	for (;;)
	{
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && w->heap[c + 1].key < w->heap[c].key)
			c++;
		if (w->heap[c].key >= last.key)
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (n > 0)
		w->heap[i] = last;
	return top;
}

/* priority: parents (via_child 0) first, then fewest hops, then random */
static inline uint64_t
prio(int via_child, unsigned hops, uint64_t *rng)
{
	return ((uint64_t) via_child << 63) | ((uint64_t) (hops & 0xffff) << 47) |
		(rng_next(rng) >> 17);
}

/*
 * Priority of a child row.  RECENT policy: below (via child, hops) the tie
 * key is (class, rank, random): class 0 = a most-recent pick, a child of a
 * table without time, a label-history row; class 1 = an older child drawn
 * to fill the width.  rank (0..63) orders class 0 newest first: 0 for the
 * most recent child of its group, 1 for the next, ...; children of a table
 * without time get a random rank below the width.  So when S or R runs out
 * within a hop level, the newest rows of every group are the ones kept.
 * UNIFORM: prio() (rank and class unused).
 */
static inline uint64_t
child_prio(const HwSampler *s, unsigned hops, unsigned older, unsigned rank, uint64_t *rng)
{
	if (!s->recent)
		return prio(1, hops, rng);
	return (1ULL << 63) | ((uint64_t) (hops & 0xffff) << 47) | ((uint64_t) older << 46) |
		((uint64_t) (rank < 63 ? rank : 63) << 40) | (rng_next(rng) >> 24);
}

/* rank of a child of a table without time (RECENT): random below the width */
static inline unsigned
untimed_rank(const HwSampler *s, uint64_t *rng)
{
	return s->recent ? rng_below(rng, (uint32_t) s->cfg.bfs_child_width) : 0;
}

/* ------------------------------------------------------------ child sampling */

/*
 * Pushes up to `width` children of group [e0, e1) of P->F (one FK).  The
 * time filter reads pf_time (sequential, no per-child cache miss); children
 * already taken are not excluded here (that would cost a miss per child):
 * a pushed duplicate is skipped when popped.
 */
static bool
push_children(const HwSampler *s, Scratch *w, uint64_t e0, uint64_t e1, int64_t obs,
			  unsigned hops, uint16_t ctable, uint64_t *rng)
{
	const int64_t *pt = s->pf_time;
	uint32_t width = (uint32_t) s->cfg.bfs_child_width;
	uint64_t deg = e1 - e0;

	if (width == 0 || deg == 0)
		return true;
	if (deg > 4 * (uint64_t) width)
	{
		/* hub: rejection sampling keeps the cost O(width), not O(degree) */
		uint64_t chosen[64];
		uint32_t nch = 0, lim = width < 64 ? width : 64;

		for (uint32_t a = 0; a < 4 * lim && nch < lim; a++)
		{
			uint64_t e = e0 + rng_below(rng, (uint32_t) (deg > UINT32_MAX ? UINT32_MAX : deg));

			if (pt[e] > obs)
				continue;
			bool dup = false;

			for (uint32_t k = 0; k < nch; k++)
				if (chosen[k] == e)
				{
					dup = true;
					break;
				}
			if (!dup)
				chosen[nch++] = e;
		}
		if (nch == lim)
		{
			for (uint32_t k = 0; k < nch; k++)
				if (!heap_push(w, child_prio(s, hops, 0, untimed_rank(s, rng), rng), s->pf_child[chosen[k]],
							   (uint16_t) hops, ctable, 0))
					return false;
			return true;
		}
		/* too few eligible found: fall through to the exact scan */
	}
	if (grow((void **) &w->buf, &w->buf_cap, deg, sizeof(uint32_t)) != 0)
		return false;
	uint32_t m = 0;

	for (uint64_t e = e0; e < e1; e++)
		if (pt[e] <= obs)
			w->buf[m++] = s->pf_child[e];
	uint32_t k = m < width ? m : width;

	for (uint32_t i = 0; i < k; i++)
	{
		if (m > width)
		{
			/* partial Fisher-Yates: uniform k-subset */
			uint32_t j = i + rng_below(rng, m - i);
			uint32_t tmp = w->buf[i];

			w->buf[i] = w->buf[j];
			w->buf[j] = tmp;
		}
		if (!heap_push(w, child_prio(s, hops, 0, untimed_rank(s, rng), rng), w->buf[i], (uint16_t) hops, ctable, 0))
			return false;
	}
	return true;
}


/*
 * RECENT policy for group [e0, e1) of a child table with a time column:
 * pf_time/pf_child of the group are sorted by (time, row) ascending, so the
 * children at or before obs are the prefix [e0, e0 + m) (binary search; NULL
 * times, HW_NO_TIME, sort first), the most recent k are its last k, and the
 * older fill is a uniform (width - k)-subset of the rest drawn with Floyd's
 * algorithm: exactly width - k draws, no scan of the group, whatever its
 * size.
 */
static bool
push_children_recent(const HwSampler *s, Scratch *w, uint64_t e0, uint64_t e1, int64_t obs,
					 unsigned hops, uint16_t ctable, uint64_t *rng)
{
	const int64_t *pt = s->pf_time;
	const uint32_t *dst = s->pf_child;
	uint32_t width = (uint32_t) s->cfg.bfs_child_width;
	uint64_t end = e1;

	if (width == 0 || e1 == e0)
		return true;
	if (pt[e1 - 1] > obs)
		end = first_after(pt, e0, e1 - 1, obs);
	uint64_t m = end - e0;

	if (m <= width)
	{
		for (uint64_t e = end; e-- > e0;)
			if (!heap_push(w, child_prio(s, hops, 0, (unsigned) (end - 1 - e), rng), dst[e], (uint16_t) hops, ctable, 0))
				return false;
		return true;
	}
	uint32_t k = s->recent_k;

	for (uint64_t e = end; e-- > end - k;)
		if (!heap_push(w, child_prio(s, hops, 0, (unsigned) (end - 1 - e), rng), dst[e], (uint16_t) hops, ctable, 0))
			return false;
	/* Floyd: a uniform need-subset of [0, nold) in exactly need draws */
	uint32_t need = width - k;
	uint32_t nold = (uint32_t) (m - k);
	uint32_t chosen[64];
	uint32_t nch = 0;

	for (uint32_t j = nold - need; j < nold; j++)
	{
		uint32_t t = rng_below(rng, j + 1);

		for (uint32_t q = 0; q < nch; q++)
			if (chosen[q] == t)
			{
				t = j;
				break;
			}
		chosen[nch++] = t;
	}
	for (uint32_t q = 0; q < nch; q++)
		if (!heap_push(w, child_prio(s, hops, 1, 0, rng), dst[e0 + chosen[q]], (uint16_t) hops, ctable, 0))
			return false;
	return true;
}

/* ------------------------------------------------------------ label history */

/* Pushes label-history rows of the anchor: its seeds whose label is
 * visible at obs (hw_task_label_visible: observed before obs, known by obs)
 * merged with the caller's context labels (prediction), the most recent
 * first.  max_split >= 0 (caller-given splits): seeds of a later split
 * (train < val < test) are left out, so a train sequence never shows a val
 * or test label even when one anchor's seeds are in several splits. */
static bool
push_history(const HwSampler *s, Scratch *w, const HwTask *t, const SeqSpec *sp, uint32_t anchor,
			 int64_t obs, unsigned hops, int max_split, uint64_t *rng)
{
	if (!t->label_history || obs == HW_NO_CUTOFF)
		return true;
	/* lower bound of (anchor, obs) in hist_order: candidates lie below it */
	uint32_t lo = 0, hi = t->hist_order ? t->nseeds : 0;

	while (lo < hi)
	{
		uint32_t mid = lo + (hi - lo) / 2;
		uint32_t i = t->hist_order[mid];

		if (t->anchor_row[i] < anchor || (t->anchor_row[i] == anchor && t->obs_time_us[i] < obs))
			lo = mid + 1;
		else
			hi = mid;
	}
	int lim = t->history_max < s->cfg.bfs_child_width ? t->history_max : s->cfg.bfs_child_width;
	uint32_t c = sp->nctx;      /* context labels left, newest at c - 1 */

	for (int k = 0; k < lim;)
	{
		/* the newest stored label still eligible */
		while (lo > 0)
		{
			uint32_t i = t->hist_order[lo - 1];

			if (t->anchor_row[i] != anchor)
				lo = 0;
			else if ((max_split >= 0 && t->split[i] > max_split) || !hw_task_label_visible(t, i, obs))
				lo--;
			else
				break;
		}
		if (lo == 0 && c == 0)
			break;
		bool take_ctx = c > 0 && (lo == 0 || sp->ctx[c - 1].obs_time_us >= t->obs_time_us[t->hist_order[lo - 1]]);
		uint32_t row = take_ctx ? --c : t->hist_order[--lo];

		if (!heap_push(w, child_prio(s, hops, 0, (unsigned) k, rng), row, (uint16_t) hops, 0, take_ctx ? 2 : 1))
			return false;
		k++;
	}
	return true;
}

/* ---------------------------------------------------------------- one sequence */

static bool
add_edge(Scratch *w, uint16_t r1, uint16_t r2)
{
	if (grow((void **) &w->edges, &w->edges_cap, w->edges_n + 1, sizeof(uint32_t)) != 0)
		return false;
	w->edges[w->edges_n++] = ((uint32_t) r1 << 16) | r2;
	return true;
}

static inline void
prefetch_row(const HwSampler *s, const Scratch *w, const HeapEnt *e)
{
	if (e->virt)
		return;
	const TableInfo *inf = &s->tinfo[e->table];

	__builtin_prefetch(&w->visit_gen[e->row]);
	__builtin_prefetch(&s->snap->fp_off[e->row]);
	__builtin_prefetch(&s->snap->pf_off[e->row]);
	__builtin_prefetch(inf->rec + (size_t) (e->row - s->snap->tables[e->table].row_offset) * inf->stride);
}

/* What building one sequence carries from step to step. */
typedef struct SeqState
{
	const HwSampler *s;
	Scratch       *w;
	HwBatch       *bt;
	const SeqSpec *sp;
	const HwTask  *t;
	SeqOut        *so;
	size_t         base;        /* b * S: the sequence's first cell in the batch tensors */
	uint64_t       rng;         /* the sequence's RNG stream (SeqSpec.rng) */
	int64_t        obs;         /* the seed's observation time */
	int            nrows, ncells;
	int            vseed_local; /* local id of a query seed's virtual row, else -1 */
	bool           hide_future; /* parents dated after obs are dropped (no cutoff: none is) */
} SeqState;

/*
 * Resets the scratch for a new sequence, sets the seed's time and takes
 * row 0: a query task's virtual seed row (then the anchor is pushed one hop
 * away), or for a cell task the anchor itself (pushed at hop 0).
 */
static bool
start_sequence(SeqState *st, int b)
{
	const HwSampler *s = st->s;
	const HwSnapshot *snap = s->snap;
	Scratch   *w = st->w;
	const HwTask *t = st->t;
	const SeqSpec *sp = st->sp;

	if (++w->gen == 0)
	{
		memset(w->visit_gen, 0, sizeof(uint32_t) * ((size_t) snap->nrows + 1));
		w->gen = 1;
	}
	w->heap_n = 0;
	w->edges_n = 0;
	w->cur_link = 0;            /* the anchor: reached by no FK */
	st->bt->rel_time_scale = s->rel_time_scale;     /* the same for every sequence */
	/* the observation time, z-scored exactly as enc_time's last slot (the
	 * model's relative-time features compare the two) */
	if (st->obs == HW_NO_CUTOFF)
		st->bt->seed_time[b] = NAN;
	else
	{
		double sd = snap->ts_std_us > 0 ? snap->ts_std_us : 1.0;

		st->bt->seed_time[b] = (float) (((double) st->obs - snap->ts_mean_us) / sd);
	}
	if (t->kind != HW_TASK_QUERY)
		return heap_push(w, 0, sp->anchor_row, 0, (uint16_t) t->anchor_table, 0);

	double tv = sp->seed_idx >= 0 ? t->target[sp->seed_idx] : 0.0;
	bool   tn = sp->seed_idx >= 0 ? t->target_null[sp->seed_idx] != 0 : false;

	st->so->rows[0].row = -1;
	st->so->rows[0].vseed = sp->seed_idx;
	w->row_start[0] = 0;
	st->ncells = sampler_emit_virtual(s, st->bt, st->base, 0, 0, t, st->obs, tv, tn, true, sp->with_truth);
	w->row_len[0] = (uint16_t) st->ncells;
	w->row_hops[0] = 0;
	st->vseed_local = 0;
	st->nrows = 1;
	return heap_push(w, prio(0, 1, &st->rng), sp->anchor_row, 1, (uint16_t) t->anchor_table, 0);
}

/* Takes a label-history row: seed e->row of the task, or context label
 * e->row of the caller (virt 2); linked to the anchor when it is taken. */
static bool
take_history_row(SeqState *st, const HeapEnt *e)
{
	const SeqSpec *sp = st->sp;
	const HwTask  *t = st->t;
	Scratch       *w = st->w;
	uint16_t       local = (uint16_t) st->nrows;
	bool           is_ctx = e->virt == 2;

	st->so->rows[st->nrows].row = -1;
	st->so->rows[st->nrows].vseed = is_ctx ? HW_VSEED_CONTEXT - (int64_t) e->row : e->row;
	w->row_start[st->nrows] = (uint16_t) st->ncells;
	st->ncells = is_ctx ?
		sampler_emit_virtual(st->s, st->bt, st->base, st->ncells, local, t, sp->ctx[e->row].obs_time_us,
							 sp->ctx[e->row].target, sp->ctx[e->row].target_null != 0, false, true) :
		sampler_emit_virtual(st->s, st->bt, st->base, st->ncells, local, t, t->obs_time_us[e->row],
							 t->target[e->row], t->target_null[e->row] != 0, false, true);
	w->row_len[st->nrows] = (uint16_t) (st->ncells - w->row_start[st->nrows]);
	st->nrows++;
	return w->visit_gen[sp->anchor_row] != w->gen || add_edge(w, local, w->local[sp->anchor_row]);
}

/* The latest split whose labels the sequence may show (label history, label
 * means): under caller-given splits a training seed's own, else -1 (all). */
static int
seq_max_split(const SeqState *st)
{
	const HwTask *t = st->t;

	return t->split_method != HW_SPLIT_BY_HASH && st->sp->seed_idx >= 0 ? t->split[st->sp->seed_idx] : -1;
}

/* Row g's label means (label_means) in the first mean slots: the child
 * means move up, the last ones dropped where the slots run out. */
static void
prepend_label_means(SeqState *st, uint32_t g, uint32_t *mkey, float *mval)
{
	uint32_t lkey[LABEL_LINKS_MAX];
	float    lval[LABEL_LINKS_MAX * HW_CHILD_WINDOWS];
	int      nl = sampler_row_label_means(st->s, st->sp->task, g, st->obs, seq_max_split(st), lkey, lval,
										  LABEL_LINKS_MAX);

	if (nl == 0)
		return;
	memmove(mkey + nl, mkey, sizeof(uint32_t) * (HW_MEAN_SLOTS - nl));
	memmove(mval + (size_t) nl * HW_CHILD_WINDOWS, mval, sizeof(float) * (HW_MEAN_SLOTS - nl) * HW_CHILD_WINDOWS);
	memcpy(mkey, lkey, sizeof(uint32_t) * nl);
	memcpy(mval, lval, sizeof(float) * nl * HW_CHILD_WINDOWS);
}

/* The link key, child counts, child means and label means of real row g on
 * each of its cells [first, ncells) (the same for every cell of the row). */
static void
write_row_features(SeqState *st, uint32_t g, uint32_t link, int first)
{
	const HwTask *t = st->t;
	HwBatch  *bt = st->bt;
	uint32_t  ckey[HW_CHILD_LINKS];
	uint16_t  ccnt[HW_CHILD_LINKS * HW_CHILD_WINDOWS];
	uint32_t  mkey[HW_MEAN_SLOTS];
	float     mval[HW_MEAN_SLOTS * HW_CHILD_WINDOWS];

	sampler_row_count_mean_features(st->s, st->w, g, st->obs, t->kind == HW_TASK_CELL ? t->anchor_table : -1,
									t->kind == HW_TASK_CELL ? t->target_col : -1, ckey, ccnt, mkey, mval);
	if (st->s->label_idx)
		prepend_label_means(st, g, mkey, mval);
	for (int c = first; c < st->ncells; c++)
	{
		size_t pos = st->base + c;

		bt->link_key[pos] = link;
		memcpy(bt->child_key + pos * HW_CHILD_LINKS, ckey, sizeof(ckey));
		memcpy(bt->child_count + pos * HW_CHILD_LINKS * HW_CHILD_WINDOWS, ccnt, sizeof(ccnt));
		memcpy(bt->mean_key + pos * HW_MEAN_SLOTS, mkey, sizeof(mkey));
		memcpy(bt->child_mean + pos * HW_MEAN_SLOTS * HW_CHILD_WINDOWS, mval, sizeof(mval));
	}
}

/* Takes real row e->row (not yet visited): its cells and features. */
static void
take_real_row(SeqState *st, const HeapEnt *e)
{
	const HwSampler *s = st->s;
	const HwSnapshot *snap = s->snap;
	Scratch  *w = st->w;
	uint32_t  g = e->row;
	int       r = st->nrows;

	w->visit_gen[g] = w->gen;
	w->local[g] = (uint16_t) r;
	/* software pipelining: the BFS is bound by cache misses, so start
	 * loading what the next pops will need (the heap top is the next row
	 * unless this row pushes a better one) and this row's edges before
	 * emitting its cells */
	for (size_t q = 0; q < 3 && q < w->heap_n; q++)
		prefetch_row(s, w, &w->heap[q]);
	__builtin_prefetch(&snap->fp_dst[snap->fp_off[g]]);
	__builtin_prefetch(&snap->fp_fk[snap->fp_off[g]]);
	__builtin_prefetch(&snap->pf_fk[snap->pf_off[g]]);
	__builtin_prefetch(&s->pf_time[snap->pf_off[g]]);
	__builtin_prefetch(&s->pf_child[snap->pf_off[g]]);
	st->so->rows[r].row = g;
	st->so->rows[r].vseed = -1;
	w->row_start[r] = (uint16_t) st->ncells;
	bool is_seed_row = st->t->kind == HW_TASK_CELL && r == 0;

	st->ncells = sampler_emit_row(s, st->bt, st->base, st->ncells, (uint16_t) r, g, e->table,
								  is_seed_row ? st->t->target_col : -1, st->sp->with_truth);
	write_row_features(st, g, e->link, w->row_start[r]);
	w->row_len[r] = (uint16_t) (st->ncells - w->row_start[r]);
	w->row_hops[r] = e->hops;
	st->nrows++;
}

/*
 * Pushes the neighbours of taken row g (popped at e->hops): all its
 * parents, except (hide_future) those dated after obs -- the children's
 * test, so NULL times and "no cutoff" keep them; a dropped parent is
 * simply never taken, as one that did not fit (the anchor was taken first,
 * so it is never dropped); its children per FK, time-filtered and sampled;
 * and, for the anchor of a query seed, the label-history rows.
 */
static bool
push_neighbours(SeqState *st, const HeapEnt *e)
{
	const HwSampler *s = st->s;
	const HwSnapshot *snap = s->snap;
	Scratch  *w = st->w;
	uint32_t  g = e->row;
	unsigned  h = (unsigned) e->hops + 1;
	uint64_t  fp0 = snap->fp_off[g], fp1 = snap->fp_off[g + 1];
	uint64_t  k0 = snap->pf_off[g], k1 = snap->pf_off[g + 1];

	for (uint64_t k = fp0; k < fp1; k++)
	{
		__builtin_prefetch(&w->visit_gen[snap->fp_dst[k]]);
		if (st->hide_future)
			__builtin_prefetch(&s->row_time[snap->fp_dst[k]]);
	}
	for (uint64_t k = fp0; k < fp1; k++)
	{
		uint32_t p = snap->fp_dst[k];

		if (w->visit_gen[p] == w->gen || (st->hide_future && s->row_time[p] > st->obs))
			continue;
		w->cur_link = s->fk_link[2 * snap->fp_fk[k]];
		if (!heap_push(w, prio(0, h, &st->rng), p, (uint16_t) h, s->fk_parent_table[snap->fp_fk[k]], 0))
			return false;
	}
	while (k0 < k1)
	{
		uint16_t fk = snap->pf_fk[k0];
		uint64_t k = fk_group_end(snap, k0, k1);

		w->cur_link = s->fk_link[2 * fk + 1];
		if (!(s->fk_recent[fk] ? push_children_recent(s, w, k0, k, st->obs, h, s->fk_child_table[fk], &st->rng)
			  : push_children(s, w, k0, k, st->obs, h, s->fk_child_table[fk], &st->rng)))
			return false;
		k0 = k;
	}
	w->cur_link = 0;            /* label-history rows: no FK */
	if (st->vseed_local < 0 || g != st->sp->anchor_row || e->hops != 1)
		return true;

	return push_history(s, w, st->t, st->sp, g, st->obs, h, seq_max_split(st), &st->rng);
}

/* fk edges among the taken rows: real rows' parents, the virtual seed row
 * -> the anchor (history rows got theirs when taken) */
static bool
collect_edges(SeqState *st)
{
	const HwSnapshot *snap = st->s->snap;
	Scratch  *w = st->w;
	const SeqOut *so = st->so;

	for (int r = 0; r < st->nrows; r++)
	{
		if (so->rows[r].row >= 0)
		{
			uint32_t g = (uint32_t) so->rows[r].row;

			for (uint64_t k = snap->fp_off[g]; k < snap->fp_off[g + 1]; k++)
			{
				uint32_t p = snap->fp_dst[k];

				if (w->visit_gen[p] == w->gen && !add_edge(w, (uint16_t) r, w->local[p]))
					return false;
			}
		}
		else if (r == st->vseed_local && w->visit_gen[st->sp->anchor_row] == w->gen)
		{
			if (!add_edge(w, (uint16_t) r, w->local[st->sp->anchor_row]))
				return false;
		}
	}
	return true;
}

bool
sampler_build_sequence(const HwSampler *s, Scratch *w, HwBatch *bt, int b, const SeqSpec *sp, SeqOut *so)
{
	SeqState st = {
		.s = s, .w = w, .bt = bt, .sp = sp, .t = s->tasks[sp->task], .so = so,
		.base = (size_t) b * s->cfg.seq_len, .rng = sp->rng, .obs = sp->obs_time_us,
		.nrows = 0, .ncells = 0, .vseed_local = -1,
		.hide_future = s->cfg.future_parents == HW_FUTURE_PARENTS_HIDE && sp->obs_time_us != HW_NO_CUTOFF,
	};
	int Rmax = s->cfg.max_rows, S = s->cfg.seq_len;

	if (!start_sequence(&st, b))
		return false;
	while (w->heap_n > 0 && st.nrows < Rmax && st.ncells < S)
	{
		HeapEnt e = heap_pop(w);

		if (e.virt)
		{
			if (!take_history_row(&st, &e))
				return false;
			continue;
		}
		if (w->visit_gen[e.row] == w->gen)
			continue;
		take_real_row(&st, &e);
		if (st.nrows >= Rmax || st.ncells >= S)
			break;
		if (!push_neighbours(&st, &e))
			return false;
	}
	if (!collect_edges(&st))
		return false;
	return sampler_finish_sequence(s, w, bt, b, st.nrows, st.ncells, so);
}
