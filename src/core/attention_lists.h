/*
 * attention_lists.h: the list kernel of the serving forward (included by
 * attention_tiles.h, after the tile helpers it shares; not on its own).
 *
 * On the column, outbound and inbound masks a query reads a few keys of
 * each 16-key tile it visits, so the serving forward (ranges of sequences,
 * target rows, cell lists) takes each query's allowed keys from the plan's
 * mask words as a list and computes only those: a dot product per key
 * summed over 16 lanes in tile_sum's order, a two-pass softmax, the
 * weighted V rows in four sums.  Rows dense in their tiles run by tiles
 * instead (fwd_row_dense).  Training and the full mask keep the tile
 * kernel of attention_tiles.h.
 */
#ifndef HW_ATTENTION_TILES_H_INSIDE
#error "attention_lists.h is part of attention_tiles.h"
#endif
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

/* tile_sum of the 16 lanes held in T / VW vectors, in registers: the same
 * pairs in the same order (x[i] + x[i + 8], then + 4, then (0 + 2) + (1 + 3)) */
static inline __attribute__((always_inline)) float
lanes_sum(const vf *a)
{
	v4f w;
#if VW == 4
	w = (a[0] + a[2]) + (a[1] + a[3]);
#else
#if VW == 16
	v8f u = __builtin_shufflevector(a[0], a[0], 0, 1, 2, 3, 4, 5, 6, 7) +
		__builtin_shufflevector(a[0], a[0], 8, 9, 10, 11, 12, 13, 14, 15);
#else
	v8f u = a[0] + a[1];
#endif
	w = __builtin_shufflevector(u, u, 0, 1, 2, 3) + __builtin_shufflevector(u, u, 4, 5, 6, 7);
#endif
	return (w[0] + w[2]) + (w[1] + w[3]);
}

/*
 * One query row against its allowed keys as a list (the list kernel): the
 * scores of the n keys whose rows start at K + koff[j] (dhp floats, pads
 * zero; V's rows at the same offsets), their softmax and the weighted sum
 * of their V rows into oi [dhp]; returns the row's lse.  sc [n rounded up
 * to 16] holds the scores, then their exponentials.  A score is a dot
 * product over 16 lanes summed by lanes_sum, the sums in key order, so
 * every build with FMA computes the same bits.  On the sparse masks a
 * query reads a few keys of each tile it visits (the small preset's
 * sampled sequences: ~6 of the ~40 lanes of its tiles), and the tile
 * kernel pays all 16 lanes of each.
 */
static inline __attribute__((always_inline)) float
fwd_row_list(float *restrict oi, const float *restrict qi, const float *restrict K, const float *restrict V,
			 const int32_t *restrict koff, int n, float *restrict sc, int dhp)
{
	const vi lane = *(const vi *) lane_idx;
	vf       cur = VSPLAT(-INFINITY), lsum[T / VW] = {};
	float    mx = -INFINITY, l, inv;
	int      nb = (n + T - 1) / T * T;    /* the scores padded with -inf to whole tiles */

	/* the scores, VW at a time into sc (a lane at a time in a register: a
	 * wide load of scalar stores would wait for them) */
	for (int j = 0; j < n; j++)
	{
		const float *kr = K + koff[j];
		vf           a[T / VW];
		float        sj;

		for (int c = 0; c < T; c += VW)
		{
			a[c / VW] = VLOADU(qi + c) * VLOADU(kr + c);
			for (int d = T; d < dhp; d += T)
				a[c / VW] += VLOADU(qi + d + c) * VLOADU(kr + d + c);
		}
		sj = lanes_sum(a);
		mx = sj > mx ? sj : mx;
		cur = VSEL(lane == j % VW, VSPLAT(sj), cur);
		if (j % VW == VW - 1)
		{
			VSTORE(sc + j + 1 - VW, cur);
			cur = VSPLAT(-INFINITY);
		}
	}
	for (int j = n / VW * VW; j < nb; j += VW)
	{
		VSTORE(sc + j, cur);
		cur = VSPLAT(-INFINITY);
	}
	/* exp(s - max) and their sum over 16 lanes, summed by lanes_sum */
	for (int j = 0; j < nb; j += VW)
	{
		vf pv = VLOAD(sc + j) - mx;

		vexp(&pv);
		VSTORE(sc + j, pv);
		lsum[(j % T) / VW] += pv;
	}
	l = lanes_sum(lsum);
	inv = 1.0f / l;
	/* a column block at a time, its sum in registers over the keys: four
	 * sums (keys j mod 4) so that the FMAs' latency is not a chain of n,
	 * added in a fixed order */
	for (int c = 0; c < dhp; c += VW)
	{
		vf  a0 = {}, a1 = {}, a2 = {}, a3 = {};
		int j = 0;

		for (; j + 4 <= n; j += 4)
		{
			a0 += sc[j] * VLOADU(V + koff[j] + c);
			a1 += sc[j + 1] * VLOADU(V + koff[j + 1] + c);
			a2 += sc[j + 2] * VLOADU(V + koff[j + 2] + c);
			a3 += sc[j + 3] * VLOADU(V + koff[j + 3] + c);
		}
		if (j < n)
			a0 += sc[j] * VLOADU(V + koff[j] + c);
		if (j + 1 < n)
			a1 += sc[j + 1] * VLOADU(V + koff[j + 1] + c);
		if (j + 2 < n)
			a2 += sc[j + 2] * VLOADU(V + koff[j + 2] + c);
		*(vfu *) (oi + c) = ((a0 + a1) + (a2 + a3)) * inv;
	}
	return mx + logf(l);
}

/* the list of query p's (a permuted position of sequence b) allowed keys
 * into w->kidx as offsets of their rows (fwd_row_list): permuted positions
 * p_k at a row stride stride (the gathered buffers), or, with perm (the
 * sequence's permuted -> original), the original rows of head h in [S,H,dh]
 * (read where they lie); returns their number */
static inline __attribute__((always_inline)) int
query_keys(const HwAttnPlan *plan, int b, int p, AttnWork *w, const int32_t *perm, int H, int h, int dh, int stride,
		   int *ntiles)
{
	int     nt = plan->nt, qt = p / T, ii = p % T, n = 0, tiles = 0;
	int64_t p0 = plan->qptr[(int64_t) b * nt + qt], p1 = plan->qptr[(int64_t) b * nt + qt + 1];

	for (int64_t pr = p0; pr < p1; pr++)
	{
		uint32_t mk = plan->mask[pr * T + ii];
		int      base = plan->ktile[pr] * T;

		tiles += mk != 0;
		for (; mk; mk &= mk - 1)
		{
			int kp = base + __builtin_ctz(mk);

			w->kidx[n++] = perm ? (perm[kp] * H + h) * dh : kp * stride;
		}
	}
	*ntiles = tiles;
	return n;
}

/* query tile qt's rows by the list kernel: each (listed) row's allowed
 * keys, tile by tile in the plan's order, then fwd_row_list */
static inline __attribute__((always_inline)) void
fwd_query_tile_list(const HwAttnPlan *plan, int b, int qt, int nq, AttnWork *w, bool listed)
{
	int dhp = w->dhp;

	for (int ii = 0; ii < nq; ii++)
	{
		int n, tiles;

		if (listed && !w->qsel[qt * T + ii])
			continue;
		n = query_keys(plan, b, qt * T + ii, w, NULL, 0, 0, 0, dhp, &tiles);
		w->lse[qt * T + ii] = fwd_row_list(w->o + (int64_t) (qt * T + ii) * dhp, w->q + (int64_t) (qt * T + ii) * dhp,
										   w->kt, w->v, w->kidx, n, w->sc, dhp);
	}
}

/* a row of the direct list kernel (dh a multiple of 16; the gathered one
 * keeps K as rows only and lists every row) that reads more than LIST_MAX_PER_TILE
 * keys per visited tile on average runs by tiles instead: a list pays a
 * 16-lane reduction per key, a tile 16 keys in dh FMAs.  The choice is by
 * the row's own masks, so its bits never depend on the batch.  On the
 * synthetic base-preset sequences (dense columns) lists alone served 0.6
 * of the tiles' rows/s, with this 0.9; 5 and 8 cost the demo shop's
 * sparse rows more */
#define LIST_MAX_PER_TILE 11

/* key tile kt of sequence b, head h as a K^T tile and V rows in the work
 * buffers, once per (b, h) (w->ktile_need marks those built; cleared by
 * the caller) */
static inline __attribute__((always_inline)) void
tile_built(AttnWork *w, int kt, const int32_t *perm, int S, const float *k, const float *v, int H, int h, int dh)
{
	int dhp = w->dhp;

	if (w->ktile_need[kt])
		return;
	w->ktile_need[kt] = 1;
	for (int p = kt * T; p < S && p < kt * T + T; p++)
	{
		int64_t off = ((int64_t) perm[p] * H + h) * dh;

		row_copy(w->v + (int64_t) p * dhp, v + off, dh);
		kt_column(w->kt + (int64_t) kt * dhp * T + (p % T), k + off, dh);
	}
}

/* query p of sequence b by tiles (fwd_row_tile over the key tiles its row
 * visits, built on demand) into oi [dh]; returns its lse */
static inline __attribute__((always_inline)) float
fwd_row_dense(float *restrict oi, const float *restrict qi, const HwAttnPlan *plan, int b, int p, AttnWork *w,
			  const int32_t *perm, const float *k, const float *v, int H, int h, int dh)
{
	int     S = plan->S, nt = plan->nt, qt = p / T, ii = p % T, dhp = w->dhp;
	int64_t p0 = plan->qptr[(int64_t) b * nt + qt], p1 = plan->qptr[(int64_t) b * nt + qt + 1];
	float  *o = w->o, *qa = w->q;   /* this row's output and q, aligned [dhp] */
	float   m = -INFINITY, l = 0.0f, inv;

	row_copy(qa, qi, dh);
	memset(o, 0, sizeof(float) * dhp);
	for (int64_t pr = p0; pr < p1; pr++)
	{
		uint16_t mk = plan->mask[pr * T + ii];
		int      kt = plan->ktile[pr];

		if (mk == 0)
			continue;
		tile_built(w, kt, perm, S, k, v, H, h, dh);
		fwd_row_tile(o, &m, &l, qa, w->kt + (int64_t) kt * dhp * T, w->v + (int64_t) kt * T * dhp, mk, dhp);
	}
	inv = 1.0f / l;
	for (int d = 0; d < dh; d++)
		oi[d] = o[d] * inv;
	return m + logf(l);
}

/*
 * Forward of one (b, h) by lists, reading q, k, v and writing out where
 * they lie (head h of rows [S,H,dh]: dh a multiple of 16, so a row's
 * vectors hold its own head alone): no gathers, no scatter.  Each query
 * (every row, or the listed ones) takes its keys from the plan
 * (query_keys) and fwd_row_list.
 */
static inline __attribute__((always_inline)) void
fwd_head_list_direct(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w, float *out, float *lse,
					 const float *q, const float *k, const float *v, const int32_t *only, int n_only)
{
	int            S = plan->S, D = H * dh;
	const int32_t *perm = plan->perm + (int64_t) b * S, *iperm = plan->iperm + (int64_t) b * S;
	int            nq = only ? n_only : S;

	for (int i = 0; i < nq; i++)
	{
		/* query i: row i of the sequence, or the list's i-th (its q and out
		 * rows the list's i-th) */
		int     pos = only ? only[i] - b * S : i, tiles;
		int64_t row = (int64_t) i * D + h * dh;
		int     n = query_keys(plan, b, iperm[pos], w, perm, H, h, dh, 0, &tiles);
		float   l = n > LIST_MAX_PER_TILE * tiles ?
			fwd_row_dense(out + row, q + row, plan, b, iperm[pos], w, perm, k, v, H, h, dh) :
			fwd_row_list(out + row, q + row, k, v, w->kidx, n, w->sc, dh);

		if (!only)
			lse[i] = l;
	}
	memset(w->ktile_need, 0, plan->nt);
}
