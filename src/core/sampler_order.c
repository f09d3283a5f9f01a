/*
 * sampler_order.c: the end of a sequence -- its deduplicated FK edges,
 * padding, and the three permutations the model's attention masks read
 * (sampler.h "Permutations"): col_perm by column id, out_perm and in_perm
 * by reverse Cuthill-McKee over the row graph, so rows that attend to each
 * other sit close together.
 */
#include "core/sampler_internal.h"

/* Insertion sort of a[0..n) by (deg, row id): a BFS level's new rows are
 * few, and the order must be exactly the one sampler.h specifies. */
static void
sort_by_deg(uint16_t *a, int n, const uint16_t *deg)
{
	for (int i = 1; i < n; i++)
	{
		uint16_t v = a[i];
		int j = i;

		while (j > 0 && (deg[a[j - 1]] > deg[v] || (deg[a[j - 1]] == deg[v] && a[j - 1] > v)))
		{
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

/*
 * Reverse Cuthill-McKee over the symmetrised row graph; deg decides the
 * start rows and the neighbour order (sampler.h).  order[0..n) out.
 */
static void
rcm_order(Scratch *w, int n, const uint16_t *deg, uint16_t *order)
{
	int head = 0, tail = 0, done = 0;

	memset(w->seen, 0, (size_t) n);
	while (done < n)
	{
		int start = -1;

		for (int r = 0; r < n; r++)
			if (!w->seen[r] && (start < 0 || deg[r] < deg[start]))
				start = r;
		w->seen[start] = 1;
		w->queue[tail++] = (uint16_t) start;
		while (head < tail)
		{
			uint16_t v = w->queue[head++];
			int first = tail;

			order[done++] = v;
			for (uint32_t k = w->nb_off[v]; k < w->nb_off[v + 1]; k++)
			{
				uint16_t u = w->nb[k];

				if (!w->seen[u])
				{
					w->seen[u] = 1;
					w->queue[tail++] = u;
				}
			}
			sort_by_deg(w->queue + first, tail - first, deg);
		}
	}
	for (int i = 0; i < n / 2; i++)
	{
		uint16_t tmp = order[i];

		order[i] = order[n - 1 - i];
		order[n - 1 - i] = tmp;
	}
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* Sorts and deduplicates the sequence's edges (keys r1 << 16 | r2) and
 * copies them to its output. */
static bool
store_edges(Scratch *w, SeqOut *so, int nrows)
{
	if (w->edges_n > 1)
	{
		qsort(w->edges, w->edges_n, sizeof(uint32_t), cmp_u32);
		size_t m = 1;

		for (size_t i = 1; i < w->edges_n; i++)
			if (w->edges[i] != w->edges[m - 1])
				w->edges[m++] = w->edges[i];
		w->edges_n = m;
	}
	if (grow((void **) &so->edges, &so->cap, w->edges_n + 1, sizeof(uint32_t)) != 0)
		return false;
	memcpy(so->edges, w->edges, w->edges_n * sizeof(uint32_t));
	so->nedges = w->edges_n;
	so->nrows = nrows;
	return true;
}

/* col_perm[S] of the sequence at base: a stable counting sort of its
 * cells by column id, padding last in position order. */
static void
write_col_perm(const HwSampler *s, Scratch *w, HwBatch *bt, size_t base, int ncells)
{
	int S = s->cfg.seq_len;
	int nd = 0;

	if (++w->colgen == 0)
	{
		memset(w->colmark, 0, sizeof(uint32_t) * ((size_t) s->ncols_total + 1));
		w->colgen = 1;
	}
	for (int p = 0; p < ncells; p++)
	{
		int32_t c = bt->column_ids[base + p];

		if (w->colmark[c] != w->colgen)
		{
			w->colmark[c] = w->colgen;
			w->distinct[nd++] = c;
		}
	}
	/* insertion sort of the (few) distinct ids */
	for (int i = 1; i < nd; i++)
	{
		int32_t v = w->distinct[i];
		int j = i;

		while (j > 0 && w->distinct[j - 1] > v)
		{
			w->distinct[j] = w->distinct[j - 1];
			j--;
		}
		w->distinct[j] = v;
	}
	for (int i = 0; i < nd; i++)
	{
		w->colslot[w->distinct[i]] = (uint16_t) i;
		w->count[i] = 0;
	}
	for (int p = 0; p < ncells; p++)
		w->count[w->colslot[bt->column_ids[base + p]]]++;
	uint16_t acc = 0;

	for (int i = 0; i < nd; i++)
	{
		uint16_t c = w->count[i];

		w->count[i] = acc;
		acc += c;
	}
	uint16_t *cp = bt->col_perm + base;

	for (int p = 0; p < ncells; p++)
		cp[w->count[w->colslot[bt->column_ids[base + p]]]++] = (uint16_t) p;
	for (int p = ncells; p < S; p++)
		cp[p] = (uint16_t) p;
}

/* The symmetrised neighbour lists of the rows (CSR in nb_off / nb; a self
 * edge is left out). */
static bool
build_row_graph(Scratch *w, int nrows)
{
	memset(w->nb_off, 0, sizeof(uint32_t) * ((size_t) nrows + 1));
	for (size_t e = 0; e < w->edges_n; e++)
	{
		uint32_t r1 = w->edges[e] >> 16, r2 = w->edges[e] & 0xffff;

		if (r1 == r2)
			continue;
		w->nb_off[r1 + 1]++;
		w->nb_off[r2 + 1]++;
	}
	for (int r = 0; r < nrows; r++)
		w->nb_off[r + 1] += w->nb_off[r];
	if (grow((void **) &w->nb, &w->nb_cap, (size_t) w->nb_off[nrows] + 1, sizeof(uint16_t)) != 0)
		return false;
	uint32_t *cur = w->nb_cur;

	memcpy(cur, w->nb_off, sizeof(uint32_t) * (size_t) nrows);
	for (size_t e = 0; e < w->edges_n; e++)
	{
		uint32_t r1 = w->edges[e] >> 16, r2 = w->edges[e] & 0xffff;

		if (r1 == r2)
			continue;
		w->nb[cur[r1]++] = (uint16_t) r2;
		w->nb[cur[r2]++] = (uint16_t) r1;
	}
	/* a pair linked both ways appears twice: harmless for BFS (seen[]) */
	return true;
}

/* perm[S]: the cells grouped by row, rows in w->order, cells of a row in
 * position order, then padding in position order. */
static void
write_row_perm(const Scratch *w, int nrows, int S, uint16_t *perm)
{
	int k = 0;

	for (int i = 0; i < nrows; i++)
	{
		int r = w->order[i];

		for (int p = 0; p < w->row_len[r]; p++)
			perm[k++] = (uint16_t) (w->row_start[r] + p);
	}
	for (int p = k; p < S; p++)
		perm[p] = (uint16_t) p;
}

bool
sampler_finish_sequence(const HwSampler *s, Scratch *w, HwBatch *bt, int b, int nrows, int ncells,
						SeqOut *so)
{
	int S = s->cfg.seq_len;
	size_t base = (size_t) b * S;

	if (!store_edges(w, so, nrows))
		return false;
	for (int p = ncells; p < S; p++)
		bt->is_padding[base + p] = 1;
	write_col_perm(s, w, bt, base, ncells);
	if (!build_row_graph(w, nrows))
		return false;

	/* out_perm: deg = 1 + #parents (row counts of I + fk_adj) */
	for (int r = 0; r < nrows; r++)
		w->deg[r] = 1;
	for (size_t e = 0; e < w->edges_n; e++)
		w->deg[w->edges[e] >> 16]++;
	rcm_order(w, nrows, w->deg, w->order);
	write_row_perm(w, nrows, S, bt->out_perm + base);

	/* in_perm: deg = #children (row counts of fk_adj^T) */
	for (int r = 0; r < nrows; r++)
		w->deg[r] = 0;
	for (size_t e = 0; e < w->edges_n; e++)
		w->deg[w->edges[e] & 0xffff]++;
	rcm_order(w, nrows, w->deg, w->order);
	write_row_perm(w, nrows, S, bt->in_perm + base);
	return true;
}
