/*
 * attention_lists.h: the list kernel of the serving forward (included by
 * attention_tiles.h, after the tile helpers it shares; not on its own).
 *
 * On the column, outbound and inbound masks a query reads a few keys of
 * each 16-key tile it visits, so the serving forward (ranges of sequences,
 * target rows, cell lists) takes each query's allowed keys from the plan's
 * mask words as a list and computes only those: a dot product per key
 * summed over 16 lanes in tile_sum's order, a two-pass softmax, the
 * weighted V rows in four sums.  Where dh is a multiple of 16 every head
 * of a query runs on one list of its keys (fwd_rows_list_direct).  Rows
 * dense in their tiles run by tiles instead (fwd_row_dense).  Training and the full mask keep the tile
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

/* One key's products with qi in lanes: the T lanes of key row kr times qi
 * (dhp floats, summed over T-lane blocks) folded into VW lanes as
 * lanes_sum folds them -- nothing at VW = 16, a[0] + a[1] at 8, (a[0] +
 * a[2]) + (a[1] + a[3]) at 4 -- so lanes_sum's remaining levels are the
 * strides VW / 2, ..., 1 of group_scores */
static inline __attribute__((always_inline)) vf
key_lanes(const float *restrict qi, const float *restrict kr, int dhp)
{
	vf a[T / VW];

	for (int c = 0; c < T; c += VW)
	{
		a[c / VW] = VLOADU(qi + c) * VLOADU(kr + c);
		for (int d = T; d < dhp; d += T)
			a[c / VW] += VLOADU(qi + d + c) * VLOADU(kr + d + c);
	}
#if VW == 4
	return (a[0] + a[2]) + (a[1] + a[3]);
#elif VW == 8
	return a[0] + a[1];
#else
	return a[0];
#endif
}

/* One level of the transposed sum: output lane t lies in group t / h of h
 * lanes, an even group from vector A, an odd one from B, each the sum of
 * its source group's halves (source group size 2h).  LEVEL_IDX(h, 0, t) is
 * the lower half's lane in the pair (A, B), LEVEL_IDX(h, 1, t) the upper. */
#define LEVEL_IDX(h, hi, t) \
	((((t) / (h)) & 1) * VW + (((t) / (h)) >> 1) * 2 * (h) + (t) % (h) + (hi) * (h))
#if VW == 16
#define LEVEL_MASK(h, hi) ((vi) {LEVEL_IDX(h, hi, 0), LEVEL_IDX(h, hi, 1), LEVEL_IDX(h, hi, 2), \
	LEVEL_IDX(h, hi, 3), LEVEL_IDX(h, hi, 4), LEVEL_IDX(h, hi, 5), LEVEL_IDX(h, hi, 6), LEVEL_IDX(h, hi, 7), \
	LEVEL_IDX(h, hi, 8), LEVEL_IDX(h, hi, 9), LEVEL_IDX(h, hi, 10), LEVEL_IDX(h, hi, 11), \
	LEVEL_IDX(h, hi, 12), LEVEL_IDX(h, hi, 13), LEVEL_IDX(h, hi, 14), LEVEL_IDX(h, hi, 15)})
#elif VW == 8
#define LEVEL_MASK(h, hi) ((vi) {LEVEL_IDX(h, hi, 0), LEVEL_IDX(h, hi, 1), LEVEL_IDX(h, hi, 2), \
	LEVEL_IDX(h, hi, 3), LEVEL_IDX(h, hi, 4), LEVEL_IDX(h, hi, 5), LEVEL_IDX(h, hi, 6), LEVEL_IDX(h, hi, 7)})
#else
#define LEVEL_MASK(h, hi) ((vi) {LEVEL_IDX(h, hi, 0), LEVEL_IDX(h, hi, 1), LEVEL_IDX(h, hi, 2), \
	LEVEL_IDX(h, hi, 3)})
#endif
/* x with lane t swapped for lane t ^ h (h a power of two below VW) */
#define SWAP_HALVES(x, h) __builtin_shuffle(x, *(const vi *) lane_idx ^ (h))
/* x[i] for i < h: x[i] and x[i + h] folded by one level */
#define SCORE_LEVEL(x, h) \
	for (int i_ = 0; i_ < (h); i_++) \
		x[i_] = __builtin_shuffle(x[i_], x[i_ + (h)], LEVEL_MASK(h, 0)) + \
			__builtin_shuffle(x[i_], x[i_ + (h)], LEVEL_MASK(h, 1))

/*
 * The scores of VW keys (rows at K + koff[i], i < cnt; lanes from cnt on
 * -inf) as one vector, lane i key i: each key's lanes folded to VW
 * (key_lanes), then the VW vectors summed transposed -- level h pairs
 * vector i with vector i + h and halves every group -- so that each lane's
 * additions are lanes_sum's (strides VW / 2, ..., 2, 1: (w0 + w2) + (w1 +
 * w3) last), the same bits, at about a third of the shuffles of one
 * horizontal sum per key.  After level h, vector i's group g holds key
 * i + g h; after the last, lane i holds key i.
 */
static inline __attribute__((always_inline)) vf
group_scores(const float *restrict qi, const float *restrict K, const int32_t *restrict koff, int cnt, int dhp)
{
	const vi lane = *(const vi *) lane_idx;
	vf       x[VW];

#pragma GCC unroll 16
	for (int i = 0; i < VW; i++)
		x[i] = key_lanes(qi, K + koff[i < cnt ? i : 0], dhp);
#if VW == 16
	SCORE_LEVEL(x, 8);
#endif
#if VW >= 8
	SCORE_LEVEL(x, 4);
#endif
	SCORE_LEVEL(x, 2);
	SCORE_LEVEL(x, 1);
	return cnt < VW ? VSEL(lane < cnt, x[0], VSPLAT(-INFINITY)) : x[0];
}

/* the largest lane of x, by halves in registers (a max is exact: any order
 * gives the same value) */
static inline __attribute__((always_inline)) float
lanes_max(vf x)
{
#if VW == 16
	x = VSEL(x > SWAP_HALVES(x, 8), x, SWAP_HALVES(x, 8));
#endif
#if VW >= 8
	x = VSEL(x > SWAP_HALVES(x, 4), x, SWAP_HALVES(x, 4));
#endif
	x = VSEL(x > SWAP_HALVES(x, 2), x, SWAP_HALVES(x, 2));
	x = VSEL(x > SWAP_HALVES(x, 1), x, SWAP_HALVES(x, 1));
	return x[0];
}

/*
 * One query row against its allowed keys as a list (the list kernel): the
 * scores of the n keys whose rows start at K + koff[j] (dhp floats, pads
 * zero; V's rows at the same offsets), their softmax and the weighted sum
 * of their V rows into oi [dhp]; returns the row's lse.  sc [n rounded up
 * to 16] holds the scores, then their exponentials.  A score is a dot
 * product over 16 lanes summed in lanes_sum's order (group_scores: VW keys
 * at a time), so every build with FMA computes the same bits.  On the
 * sparse masks a query reads a few keys of each tile it visits (the small
 * preset's sampled sequences: ~6 of the ~40 lanes of its tiles), and the
 * tile kernel pays all 16 lanes of each.
 */
static inline __attribute__((always_inline)) float
fwd_row_list(float *restrict oi, const float *restrict qi, const float *restrict K, const float *restrict V,
			 const int32_t *restrict koff, int n, float *restrict sc, int dhp)
{
	vf    mxv = VSPLAT(-INFINITY), lsum[T / VW] = {};
	float mx = -INFINITY, l, inv;
	int   nb = (n + T - 1) / T * T;    /* the scores padded with -inf to whole tiles */
	int   j = 0;

	for (; j < n; j += VW)
	{
		vf s = group_scores(qi, K, koff + j, n - j, dhp);

		VSTORE(sc + j, s);
		mxv = VSEL(s > mxv, s, mxv);
	}
	for (; j < nb; j += VW)
		VSTORE(sc + j, VSPLAT(-INFINITY));
	mx = lanes_max(mxv);
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
 * Forward of queries [i0, i1) of sequence b by lists, every head at once,
 * reading q, k, v and writing out where they lie (rows [., H*dh], dh a
 * multiple of 16, so a row's vectors hold one head alone): no gathers, no
 * scatter.  A query's allowed keys are the same for every head (the masks
 * are per position), so they are listed once (query_keys, offsets of whole
 * rows) and each head runs fwd_row_list on them: per head the arithmetic of
 * a kernel that ran one head at a time, the same bits, and a key row's
 * heads are read together.  Query i is row i of the sequence, or (only) the
 * list's i-th, whose q and out rows are the list's i-th.  lse [H,S] of
 * sequence b (whole sequences only).  Rows dense in their tiles
 * (LIST_MAX_PER_TILE) are set aside in w->dense and run by tiles after the
 * others, head by head (fwd_row_dense builds one head's key tiles).
 */
static inline __attribute__((always_inline)) void
fwd_rows_list_direct(const HwAttnPlan *plan, int b, int H, int dh, AttnWork *w, float *out, float *lse,
					 const float *q, const float *k, const float *v, const int32_t *only, int i0, int i1)
{
	int            S = plan->S, D = H * dh, nd = 0;
	const int32_t *perm = plan->perm + (int64_t) b * S, *iperm = plan->iperm + (int64_t) b * S;

	for (int i = i0; i < i1; i++)
	{
		int     pos = only ? only[i] - b * S : i, tiles;
		int64_t row = (int64_t) i * D;
		int     n = query_keys(plan, b, iperm[pos], w, perm, H, 0, dh, 0, &tiles);

		if (n > LIST_MAX_PER_TILE * tiles)
		{
			w->dense[nd++] = i;
			continue;
		}
		for (int h = 0; h < H; h++)
		{
			float l = fwd_row_list(out + row + h * dh, q + row + h * dh, k + h * dh, v + h * dh, w->kidx, n,
								   w->sc, dh);

			if (!only)
				lse[(int64_t) h * S + i] = l;
		}
	}
	for (int h = 0; h < H && nd > 0; h++)
	{
		for (int j = 0; j < nd; j++)
		{
			int     i = w->dense[j], pos = only ? only[i] - b * S : i;
			int64_t row = (int64_t) i * D + h * dh;
			float   l = fwd_row_dense(out + row, q + row, plan, b, iperm[pos], w, perm, k, v, H, h, dh);

			if (!only)
				lse[(int64_t) h * S + i] = l;
		}
		memset(w->ktile_need, 0, plan->nt);
	}
}
