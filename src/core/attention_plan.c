/*
 * attention_plan.c: the mask rule and the block-sparse plan of masked
 * attention over a permuted cell sequence (contract in attention.h; design
 * note in docs/attention.md; the kernels that run a plan: attention_kernels.c).
 *
 * Plan (once per batch and mask kind): the sequence of batch element b is
 * visited in the order of its permutation, cut into tiles of HW_ATTN_TILE
 * positions.  For every tile we know which "keys" it holds (rows for
 * OUTBOUND/INBOUND, batch-local column ids for COLUMN) and which keys its
 * queries may reach (their own row plus FK targets, FK sources, or their own
 * column) as bitsets; a (query tile, key tile) pair is visited iff the two
 * sets intersect, or it is a diagonal tile (identity pairs).  For each
 * visited pair the exact element mask is stored as one 16-bit word per query
 * row, so the kernels never evaluate the mask rule again.  The tile test is
 * exact, so correctness never depends on the permutation; a good one only
 * makes fewer tiles.
 */
#include "core/attention_internal.h"
#include "core/attention_check.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* mask rule                                                                */

bool
attn_mask_allowed(const HwAttnMaskInfo *info, HwMaskKind kind, int b, int i, int j)
{
	int64_t base = (int64_t) b * info->S;

	if (i == j)
		return true;
	if (info->is_padding[base + i] || info->is_padding[base + j])
		return false;
	switch (kind)
	{
		case HW_MASK_COLUMN:
			return info->column_ids[base + i] == info->column_ids[base + j];
		case HW_MASK_OUTBOUND:
		{
			int ri = info->seq_row_ids[base + i], rj = info->seq_row_ids[base + j];
			return ri == rj ||
				info->fk_adj[((int64_t) b * info->R + ri) * info->R + rj] != 0;
		}
		case HW_MASK_INBOUND:
		{
			int ri = info->seq_row_ids[base + i], rj = info->seq_row_ids[base + j];
			return info->fk_adj[((int64_t) b * info->R + rj) * info->R + ri] != 0;
		}
		case HW_MASK_FULL:
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------------ */
/* plan                                                                     */

static int
cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
	return (x > y) - (x < y);
}

/* Growable per-batch-element pair list, merged in b order afterwards. */
typedef struct PairList
{
	int64_t   n, cap;
	int32_t  *ktile;
	uint16_t *mask;
	int64_t  *qcount;    /* [nt] */
	int64_t   allowed;
	int       failed;
} PairList;

static int
pairlist_push(PairList *pl, int32_t kt, const uint16_t *mask)
{
	if (pl->n == pl->cap)
	{
		int64_t   cap = pl->cap ? pl->cap * 2 : 64;
		int32_t  *k2 = realloc(pl->ktile, cap * sizeof(int32_t));
		uint16_t *m2;

		if (!k2)
			return -1;
		pl->ktile = k2;
		m2 = realloc(pl->mask, cap * T * sizeof(uint16_t));
		if (!m2)
			return -1;
		pl->mask = m2;
		pl->cap = cap;
	}
	pl->ktile[pl->n] = kt;
	memcpy(pl->mask + pl->n * T, mask, T * sizeof(uint16_t));
	pl->n++;
	return 0;
}

/*
 * key[p] [S]: the key of permuted position p, -1 for padding: its row
 * (OUTBOUND/INBOUND), its column's rank among the element's distinct columns
 * (COLUMN; *cols_out holds them sorted) or 0 (FULL).  Returns the number of
 * keys (at least 1), or -1 when out of memory.
 */
static int
plan_keys(const HwAttnMaskInfo *info, HwMaskKind kind, int b, const int32_t *perm, int32_t *key,
		  int32_t **cols_out)
{
	int      S = info->S;
	int64_t  base = (int64_t) b * S;
	int32_t *cols = NULL;
	int      nkeys = 1;

	if (kind == HW_MASK_COLUMN)
	{
		int nc = 0;

		cols = malloc(sizeof(int32_t) * (S > 0 ? S : 1));
		if (!cols)
			return -1;
		*cols_out = cols;
		for (int i = 0; i < S; i++)
			if (!info->is_padding[base + i])
				cols[nc++] = info->column_ids[base + i];
		qsort(cols, nc, sizeof(int32_t), cmp_i32);
		nkeys = 0;
		for (int i = 0; i < nc; i++)
			if (nkeys == 0 || cols[nkeys - 1] != cols[i])
				cols[nkeys++] = cols[i];
	}
	else if (kind == HW_MASK_OUTBOUND || kind == HW_MASK_INBOUND)
		nkeys = info->R;
	if (nkeys < 1)
		nkeys = 1;
	for (int p = 0; p < S; p++)
	{
		int i = perm[p];

		if (info->is_padding[base + i])
			key[p] = -1;
		else if (kind == HW_MASK_COLUMN)
		{
			int32_t c = info->column_ids[base + i];
			int32_t *f = bsearch(&c, cols, nkeys, sizeof(int32_t), cmp_i32);
			key[p] = (int32_t) (f - cols);
		}
		else if (kind == HW_MASK_FULL)
			key[p] = 0;
		else
			key[p] = info->seq_row_ids[base + i];
	}
	return nkeys;
}

/*
 * Per-tile bitsets over the nw words of keys: member [nt,nw] the keys a tile
 * holds, reach [nt,nw] the keys its queries may see.  Row masks: the reach
 * of each row once (one row-major pass over adj [R,R]), then OR'ed per
 * position.  Returns -1 when out of memory.
 */
static int
plan_tile_bitsets(HwMaskKind kind, const uint8_t *adj, int R, const int32_t *key, int S, int nw,
				  uint64_t *reach, uint64_t *member)
{
	uint64_t *rowreach = NULL;

	if (kind == HW_MASK_OUTBOUND || kind == HW_MASK_INBOUND)
	{
		rowreach = calloc((size_t) (R > 0 ? R : 1) * nw, sizeof(uint64_t));
		if (!rowreach)
			return -1;
		for (int r1 = 0; r1 < R; r1++)
		{
			const uint8_t *a = adj + (int64_t) r1 * R;

			if (kind == HW_MASK_OUTBOUND)
				rowreach[(int64_t) r1 * nw + r1 / 64] |= 1ull << (r1 % 64);
			for (int r2 = 0; r2 < R; r2++)
				if (a[r2])
				{
					if (kind == HW_MASK_OUTBOUND)	/* r1 -> r2: r1 sees r2 */
						rowreach[(int64_t) r1 * nw + r2 / 64] |= 1ull << (r2 % 64);
					else	/* r1 -> r2: r2 sees r1 */
						rowreach[(int64_t) r2 * nw + r1 / 64] |= 1ull << (r1 % 64);
				}
		}
	}
	for (int p = 0; p < S; p++)
	{
		int       t = p / T, r = key[p];
		uint64_t *rt = reach + (int64_t) t * nw;

		if (r < 0)
			continue;
		member[(int64_t) t * nw + r / 64] |= 1ull << (r % 64);
		if (rowreach)
		{
			const uint64_t *rr = rowreach + (int64_t) r * nw;

			for (int w = 0; w < nw; w++)
				rt[w] |= rr[w];
		}
		else
			rt[r / 64] |= 1ull << (r % 64);
	}
	free(rowreach);
	return 0;
}

/* mask[ii] bit jj: query qt*T+ii may see key kt*T+jj, from the keys (same
 * rule as attn_mask_allowed); returns the number of allowed pairs */
static int64_t
tile_pair_mask(HwMaskKind kind, const uint8_t *adj, int R, const int32_t *key, int S, int qt, int kt,
			   uint16_t mask[T])
{
	int     nq = S - qt * T < T ? S - qt * T : T;
	int     nk = S - kt * T < T ? S - kt * T : T;
	int64_t allowed = 0;

	memset(mask, 0, sizeof(uint16_t) * T);
	for (int ii = 0; ii < nq; ii++)
	{
		int      p = qt * T + ii, rq = key[p];
		uint32_t m = 0;

		for (int jj = 0; jj < nk; jj++)
		{
			int  p2 = kt * T + jj, rk = key[p2];
			bool ok;

			if (p == p2)
				ok = true;
			else if (rq < 0 || rk < 0)
				ok = false;
			else if (kind == HW_MASK_COLUMN || kind == HW_MASK_FULL)
				ok = (rq == rk);
			else if (kind == HW_MASK_OUTBOUND)
				ok = rq == rk || adj[(int64_t) rq * R + rk];
			else
				ok = adj[(int64_t) rk * R + rq] != 0;
			if (ok)
				m |= 1u << jj;
		}
		mask[ii] = (uint16_t) m;
		allowed += __builtin_popcount(m);
	}
	return allowed;
}

/*
 * Builds the visited pairs of one batch element.  key[p]: row or local column
 * id of permuted position p (-1 for padding); reach/member bitsets per tile.
 */
static void
plan_one(const HwAttnMaskInfo *info, HwMaskKind kind, int b, const int32_t *perm,
		 int nt, PairList *pl)
{
	int       S = info->S, R = info->R;
	const uint8_t *adj = info->fk_adj ? info->fk_adj + (int64_t) b * R * R : NULL;
	int32_t  *key = malloc(sizeof(int32_t) * S);
	int32_t  *cols = NULL;
	int       nkeys, nw;
	uint64_t *reach = NULL, *member = NULL;
	uint16_t  mask[T];

	pl->qcount = calloc(nt, sizeof(int64_t));
	if (!key || !pl->qcount)
		goto fail;
	if ((nkeys = plan_keys(info, kind, b, perm, key, &cols)) < 0)
		goto fail;
	nw = (nkeys + 63) / 64;
	reach = calloc((size_t) nt * nw, sizeof(uint64_t));
	member = calloc((size_t) nt * nw, sizeof(uint64_t));
	if (!reach || !member || plan_tile_bitsets(kind, adj, R, key, S, nw, reach, member) != 0)
		goto fail;
	for (int qt = 0; qt < nt; qt++)
		for (int kt = 0; kt < nt; kt++)
		{
			bool    hit = (qt == kt);
			int64_t allowed;

			for (int w = 0; w < nw && !hit; w++)
				hit = (reach[(int64_t) qt * nw + w] & member[(int64_t) kt * nw + w]) != 0;
			if (!hit)
				continue;
			allowed = tile_pair_mask(kind, adj, R, key, S, qt, kt, mask);
			pl->allowed += allowed;
			if (allowed == 0)
				continue;
			if (pairlist_push(pl, kt, mask) != 0)
				goto fail;
			pl->qcount[qt]++;
		}
	free(key);
	free(cols);
	free(reach);
	free(member);
	return;

fail:
	pl->failed = 1;
	free(key);
	free(cols);
	free(reach);
	free(member);
}

HwAttnPlan *
attn_plan_create(const HwAttnMaskInfo *info, HwMaskKind kind, HwError *err)
{
	HwAttnPlan *plan;
	PairList   *pls;
	int         B, S, R, nt;
	int         bad = 0;
	char        why[256];
	int         rc;

	/* shapes, tensors, perm a permutation, rows < R: the same check (and
	 * message) as the CUDA plan's (attention_check.h) */
	if ((rc = hw_attn_mask_info_check(info, kind, why, sizeof(why))) != HW_OK)
	{
		hw_error_set(err, rc, "%s", why);
		return NULL;
	}
	B = info->B;
	S = info->S;
	R = info->R;
	nt = (S + T - 1) / T;

	plan = calloc(1, sizeof(HwAttnPlan));
	pls = calloc(B > 0 ? B : 1, sizeof(PairList));
	if (!plan || !pls)
		goto nomem;
	plan->B = B;
	plan->S = S;
	plan->R = R;
	plan->nt = nt;
	plan->kind = kind;
	plan->perm = malloc(sizeof(int32_t) * (size_t) B * S + 1);
	plan->iperm = malloc(sizeof(int32_t) * (size_t) B * S + 1);
	plan->qptr = malloc(sizeof(int64_t) * ((size_t) B * nt + 1));
	if (!plan->perm || !plan->iperm || !plan->qptr)
		goto nomem;

	/* perm was validated above */
	for (int b = 0; b < B; b++)
	{
		int64_t base = (int64_t) b * S;

		for (int p = 0; p < S; p++)
		{
			int i = info->perm ? info->perm[base + p] : p;

			plan->perm[base + p] = i;
			plan->iperm[base + i] = p;
		}
	}

#pragma omp parallel for schedule(dynamic, 1)
	for (int b = 0; b < B; b++)
		plan_one(info, kind, b, plan->perm + (int64_t) b * S, nt, &pls[b]);

	/* merge in b order */
	for (int b = 0; b < B; b++)
	{
		if (pls[b].failed)
			bad = 1;
		plan->npairs += pls[b].n;
		plan->allowed += pls[b].allowed;
	}
	if (!bad)
	{
		plan->ktile = malloc(sizeof(int32_t) * (plan->npairs + 1));
		plan->mask = malloc(sizeof(uint16_t) * T * (plan->npairs + 1));
		if (!plan->ktile || !plan->mask)
			bad = 1;
	}
	if (!bad)
	{
		int64_t off = 0;

		plan->qptr[0] = 0;
		for (int b = 0; b < B; b++)
		{
			memcpy(plan->ktile + off, pls[b].ktile, sizeof(int32_t) * pls[b].n);
			memcpy(plan->mask + off * T, pls[b].mask, sizeof(uint16_t) * T * pls[b].n);
			off += pls[b].n;
			for (int qt = 0; qt < nt; qt++)
				plan->qptr[(int64_t) b * nt + qt + 1] =
					plan->qptr[(int64_t) b * nt + qt] + pls[b].qcount[qt];
		}
	}
	for (int b = 0; b < B; b++)
	{
		free(pls[b].ktile);
		free(pls[b].mask);
		free(pls[b].qcount);
	}
	free(pls);
	if (bad)
	{
		attn_plan_free(plan);
		hw_error_set(err, HW_ERR_NOMEM, "attention plan: out of memory");
		return NULL;
	}
	return plan;

nomem:
	free(pls);
	attn_plan_free(plan);
	hw_error_set(err, HW_ERR_NOMEM, "attention plan: out of memory");
	return NULL;
}

void
attn_plan_free(HwAttnPlan *plan)
{
	if (!plan)
		return;
	free(plan->perm);
	free(plan->iperm);
	free(plan->qptr);
	free(plan->ktile);
	free(plan->mask);
	free(plan);
}

int64_t
attn_plan_allowed_pairs(const HwAttnPlan *plan)
{
	return plan ? plan->allowed : 0;
}

int64_t
attn_plan_visited_tile_pairs(const HwAttnPlan *plan)
{
	return plan ? plan->npairs : 0;
}

