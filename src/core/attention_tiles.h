/*
 * attention_tiles.h: the per-(b, h) kernels of block-sparse attention,
 * forward and backward (contract in attention.h, buffers and signatures in
 * attention_internal.h), written once for a native vector of HW_ATTN_VW
 * fp32 lanes and compiled once per instruction set: the including file
 * defines HW_ATTN_VW (16, 8 or 4) and HW_ATTN_NAME(x) (the exported names'
 * suffix) and sets the target before including it.
 *
 * Why one build per vector width rather than one 16-lane vector type
 * compiled for every target: GCC lowers a vector wider than the target's
 * registers through the stack (on AVX2 each 16-lane FMA of the score loop
 * became some twenty moves through memory and general registers), which
 * made the AVX2 kernels several times slower than their arithmetic.  Here
 * every vector is a register of the build's width and a 16-key tile is
 * T / HW_ATTN_VW of them; per-tile values pass through small aligned
 * arrays in L1.
 *
 * Every lane runs the same operations in the same order whatever the
 * width (the horizontal max and sum are scalar trees in a fixed order), so
 * the AVX-512 and AVX2 builds, both with FMA, compute the same bits; the
 * baseline build on x86-64 has no FMA and rounds its products separately
 * (on AArch64 GCC fuses them there too).
 *
 * The task gathers q, k, v of its head in permuted order into contiguous
 * per-thread buffers (k transposed per tile so the score loop vectorises
 * over keys), runs all visited tiles with online softmax (fp32), and
 * scatters back.  Backward recomputes probabilities from the saved lse;
 * because a whole (b, h) is handled by one thread in a fixed tile order,
 * dq/dk/dv are deterministic whatever the thread count.
 */
#include "core/attention_internal.h"

#include <math.h>
#include <string.h>

/* keeps the row gathers and scatters as inline loops: GCC would turn each
 * dh-float copy into a libc memmove call (a tenth of the forward's time) */
#pragma GCC optimize("no-tree-loop-distribute-patterns")

#define VW HW_ATTN_VW
#if T % VW != 0
#error "the tile edge must be a multiple of the vector width"
#endif

typedef float   vf __attribute__((vector_size(VW * 4)));
typedef int32_t vi __attribute__((vector_size(VW * 4)));

#define VLOAD(p)     (*(const vf *) (p))
#define VSTORE(p, x) (*(vf *) (p) = (x))
#define VSPLAT(x)    ((vf) {} + (float) (x))
/* m ? a : b, lane-wise */
#define VSEL(m, a, b) ((vf) (((vi) (a) & (m)) | ((vi) (b) & ~(m))))

/* lane jj of a tile is selected by bit jj of a 16-bit mask word */
static const int32_t lane_bit[T] __attribute__((aligned(64))) = {
	1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};

/* lane jj's index, for a lane mask by position */
static const int32_t lane_idx[T] __attribute__((aligned(64))) = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* lanes c .. c + VW - 1 of a tile whose bit is set in the mask word m */
#define VMASK_BITS(m, c) ((((vi) {} + (int32_t) (m)) & *(const vi *) (lane_bit + (c))) != 0)

/*
 * exp(x) for x <= ~0 (and -inf), branch-free: exp(x) = 2^n * e^r with
 * |r| <= ln2/2 and a degree-6 Taylor polynomial (relative error ~1.2e-7);
 * exactly 0 below -87, exactly 1 at 0.
 */
static inline __attribute__((always_inline)) void
vexp(vf *px)
{
	vf x = *px;
	vi under = x < -87.0f;
	vf xc = VSEL(under, VSPLAT(-87.0f), x);
	/* round to nearest by the 1.5*2^23 trick (no SSE4.1 round needed) */
	vf n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	vf r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;
	vf p = VSPLAT(1.0f / 720.0f);
	vi e;

	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	e = (__builtin_convertvector(n, vi) + 127) << 23;
	*px = VSEL(under, VSPLAT(0.0f), p * (vf) e);
}

static inline __attribute__((always_inline)) float
attn_expf(float x)
{
	vf v = VSPLAT(x);

	vexp(&v);
	return v[0];
}

/* max of a tile's 16 values, as a tree (a chain of 15 dependent maxss is ~60 cycles) */
static inline __attribute__((always_inline)) float
tile_max(const float *x)
{
	float t[8];

	for (int i = 0; i < 8; i++)
		t[i] = x[i] > x[i + 8] ? x[i] : x[i + 8];
	for (int i = 0; i < 4; i++)
		t[i] = t[i] > t[i + 4] ? t[i] : t[i + 4];
	t[0] = t[0] > t[2] ? t[0] : t[2];
	t[1] = t[1] > t[3] ? t[1] : t[3];
	return t[0] > t[1] ? t[0] : t[1];
}

/* sum of a tile's 16 values in a fixed pairwise order */
static inline __attribute__((always_inline)) float
tile_sum(const float *x)
{
	float t[8];

	for (int i = 0; i < 8; i++)
		t[i] = x[i] + x[i + 8];
	for (int i = 0; i < 4; i++)
		t[i] += t[i + 4];
	return (t[0] + t[2]) + (t[1] + t[3]);
}

/* unaligned vectors of the build's width, for row copies */
typedef float vfu __attribute__((vector_size(VW * 4), aligned(4)));
#define VLOADU(p) (*(const vfu *) (p))

/*
 * Gather/scatter between head h of x [S,H,dh] (one batch element) and the
 * permuted per-head buffers.  The whole-sequence ones walk the ORIGINAL
 * order (iperm: original index -> permuted position) so x is read/written
 * at a constant stride the prefetcher follows, and the random side is the
 * L2-resident buffer; the forward of listed queries walks the permuted
 * order of the key tiles it needs (gather_fwd_tiles).  Inline copies, not
 * memcpy: rows are only dh floats.  Pads of the buffers (dims >= dh) stay
 * 0.
 */

/* dst[0 .. n) = src[0 .. n): whole vectors, then single floats (a plain
 * loop here stays scalar: GCC cannot prove the rows apart) */
static inline __attribute__((always_inline)) void
row_copy(float *restrict dst, const float *restrict src, int n)
{
	int d = 0;

	for (; d + VW <= n; d += VW)
		*(vfu *) (dst + d) = *(const vfu *) (src + d);
	for (; d < n; d++)
		dst[d] = src[d];
}

/* column p % T of a K^T tile kd [dhp][T] = the key row kr [dh] */
static inline __attribute__((always_inline)) void
kt_column(float *restrict kd, const float *restrict kr, int dh)
{
	for (int d = 0; d < dh; d++)
		kd[d * T] = kr[d];
}

/* the dh floats at x + off of a row read GATHER_AHEAD rows later: the
 * gathers read rows a stride of H*dh floats apart (in permuted order for
 * the listed queries' key tiles), which the hardware prefetchers follow
 * poorly, and the rows are in L3 or memory (their producer ran on the
 * whole batch before the attention); without this the gathers took a
 * third of the forward's attention time, waiting on loads */
#define GATHER_AHEAD 8

static inline __attribute__((always_inline)) void
row_prefetch(const float *x, int64_t off, int dh)
{
	for (int d = 0; d < dh; d += 16)
		__builtin_prefetch(x + off + d, 0, 3);
}

/* row p of K into the forward's K buffer: as K rows [Sp][dhp] (the list
 * kernel, krows) or as column p % T of a K^T tile [dhp][T] */
static inline __attribute__((always_inline)) void
k_into(float *restrict K, bool krows, int p, const float *restrict kr, int dh, int dhp)
{
	if (krows)
		row_copy(K + (int64_t) p * dhp, kr, dh);
	else
		kt_column(K + (int64_t) (p / T) * dhp * T + (p % T), kr, dh);
}

/* forward gathers in one pass over the original order: Q (q NULL: none), V
 * rows and K (k_into) */
static inline __attribute__((always_inline)) void
gather_fwd(float *restrict Q, float *restrict KT, float *restrict V,
		   const float *restrict q, const float *restrict k, const float *restrict v,
		   const int32_t *iperm, int S, int H, int h, int dh, int dhp, bool krows)
{
	for (int i = 0; i < S; i++)
	{
		int64_t off = ((int64_t) i * H + h) * dh;
		int64_t ahead = off + (int64_t) GATHER_AHEAD * H * dh;
		int     p = iperm[i];

		if (i + GATHER_AHEAD < S)
		{
			if (q)
				row_prefetch(q, ahead, dh);
			row_prefetch(k, ahead, dh);
			row_prefetch(v, ahead, dh);
		}
		if (q)
			row_copy(Q + (int64_t) p * dhp, q + off, dh);
		row_copy(V + (int64_t) p * dhp, v + off, dh);
		k_into(KT, krows, p, k + off, dh, dhp);
	}
}

/* the forward of listed queries: V rows and K (k_into) of the key tiles
 * marked in need [nt] alone (the only ones their visited pairs read), in
 * permuted order (perm: permuted position -> original index) */
static inline __attribute__((always_inline)) void
gather_fwd_tiles(float *restrict KT, float *restrict V, const float *restrict k, const float *restrict v,
				 const int32_t *perm, const uint8_t *need, int S, int nt, int H, int h, int dh, int dhp, bool krows)
{
	for (int kt = 0; kt < nt; kt++)
		for (int p = kt * T; need[kt] && p < S && p < kt * T + T; p++)
		{
			int64_t off = ((int64_t) perm[p] * H + h) * dh;

			if (p + GATHER_AHEAD < S)
			{
				int64_t ahead = ((int64_t) perm[p + GATHER_AHEAD] * H + h) * dh;

				row_prefetch(k, ahead, dh);
				row_prefetch(v, ahead, dh);
			}
			row_copy(V + (int64_t) p * dhp, v + off, dh);
			k_into(KT, krows, p, k + off, dh, dhp);
		}
}

/* backward gathers in one pass: Q, K, dO rows, K^T and V^T tiles, and per
 * query D = dout . out and lse, in permuted order */
static inline __attribute__((always_inline)) void
gather_bwd(float *restrict Q, float *restrict K, float *restrict KT, float *restrict VT,
		   float *restrict dO, float *restrict Dl, float *restrict L,
		   const float *restrict q, const float *restrict k, const float *restrict v,
		   const float *restrict dout, const float *restrict out, const float *restrict lse,
		   const int32_t *iperm, int S, int H, int h, int dh, int dhp)
{
	for (int i = 0; i < S; i++)
	{
		int64_t off = ((int64_t) i * H + h) * dh;
		int     p = iperm[i];
		float  *qd = Q + (int64_t) p * dhp, *kd = K + (int64_t) p * dhp;
		float  *gd = dO + (int64_t) p * dhp;
		float  *ktd = KT + (int64_t) (p / T) * dhp * T + (p % T);
		float  *vtd = VT + (int64_t) (p / T) * dhp * T + (p % T);
		float   acc = 0.0f;

		row_copy(qd, q + off, dh);
		row_copy(kd, k + off, dh);
		row_copy(gd, dout + off, dh);
		kt_column(ktd, k + off, dh);
		kt_column(vtd, v + off, dh);
		for (int d = 0; d < dh; d++)
			acc += out[off + d] * dout[off + d];
		Dl[p] = acc;
		L[p] = lse[i];
	}
}

static inline __attribute__((always_inline)) void
scatter_rows(float *restrict x, const float *restrict xp, const int32_t *iperm,
			 int S, int H, int h, int dh, int dhp)
{
	for (int i = 0; i < S; i++)
	{
		/* the rows to be written, fetched ahead as the gathers' are */
		if (i + GATHER_AHEAD < S)
			for (int d = 0; d < dh; d += 16)
				__builtin_prefetch(x + ((int64_t) (i + GATHER_AHEAD) * H + h) * dh + d, 1, 3);
		row_copy(x + ((int64_t) i * H + h) * dh, xp + (int64_t) iperm[i] * dhp, dh);
	}
}

/* lanes c .. c + VW - 1 of s[jj] = a . m_jj over one tile (mt [dhp][T],
 * a [dhp]): the score row of a query against K^T, or dout against V^T */
static inline __attribute__((always_inline)) vf
tile_dot(const float *restrict a, const float *restrict mt, int c, int dhp)
{
	vf s0 = {}, s1 = {}, s2 = {}, s3 = {};

	/* four accumulators: the FMA latency (4 cycles) is not a chain of dhp */
	for (int d = 0; d < dhp; d += 4)
	{
		s0 += a[d] * VLOAD(mt + d * T + c);
		s1 += a[d + 1] * VLOAD(mt + (d + 1) * T + c);
		s2 += a[d + 2] * VLOAD(mt + (d + 2) * T + c);
		s3 += a[d + 3] * VLOAD(mt + (d + 3) * T + c);
	}
	return (s0 + s1) + (s2 + s3);
}

/* acc [dhp] = acc * scale + sum_jj w[jj] * rows_jj (scaled: a query's
 * output update by P v) or acc + sum_jj w[jj] * rows_jj (not scaled: its dq
 * by dS k), rows [T][dhp]; scaled is a constant at every call, so each
 * inlined copy keeps only its own first line */
static inline __attribute__((always_inline)) void
rows_axpy(float *restrict acc, bool scaled, float scale, const float *restrict w, const float *restrict rows,
		  int dhp)
{
	for (int c = 0; c < dhp; c += VW)
	{
		const float *rc = rows + c;
		vf           a0 = scaled ? VLOAD(acc + c) * scale : VLOAD(acc + c), a1 = {}, a2 = {}, a3 = {};

		for (int jj = 0; jj < T; jj += 4)
		{
			a0 += w[jj] * VLOAD(rc + (int64_t) jj * dhp);
			a1 += w[jj + 1] * VLOAD(rc + (int64_t) (jj + 1) * dhp);
			a2 += w[jj + 2] * VLOAD(rc + (int64_t) (jj + 2) * dhp);
			a3 += w[jj + 3] * VLOAD(rc + (int64_t) (jj + 3) * dhp);
		}
		VSTORE(acc + c, (a0 + a1) + (a2 + a3));
	}
}

/* One query row against one key tile (online softmax): its output oi
 * [dhp], running max *mrow and sum *lrow, from its q [dhp], the tile's K^T
 * [dhp][T] and V [T][dhp] and its mask word. */
static inline __attribute__((always_inline)) void
fwd_row_tile(float *oi, float *mrow, float *lrow, const float *qi, const float *Kt, const float *Vr, uint16_t mk,
			 int dhp)
{
	float s[T] __attribute__((aligned(64)));
	float mx, mnew, scale;

	for (int c = 0; c < T; c += VW)
		VSTORE(s + c, VSEL(VMASK_BITS(mk, c), tile_dot(qi, Kt, c, dhp), VSPLAT(-INFINITY)));
	mx = tile_max(s);
	mnew = mx > *mrow ? mx : *mrow;
	/* the running max rarely moves after the first tiles */
	scale = mnew == *mrow ? 1.0f : attn_expf(*mrow - mnew);
	for (int c = 0; c < T; c += VW)
	{
		vf pv = VLOAD(s + c) - mnew;

		vexp(&pv);
		VSTORE(s + c, pv);
	}
	*lrow = *lrow * scale + tile_sum(s);
	*mrow = mnew;
	rows_axpy(oi, true, scale, s, Vr, dhp);
}

/* the forward of listed queries (only [n_only], flat cells of element b;
 * q their rows [n_only, H*dh]): marks them (w->qsel by permuted position,
 * w->tile_n per query tile), puts their q rows in place, and gathers the K
 * and V of the key tiles their query tiles visit (w->ktile_need) */
static inline __attribute__((always_inline)) void
gather_fwd_listed(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w, const float *q, const float *k,
				  const float *v, const int32_t *only, int n_only, bool krows)
{
	int            S = plan->S, nt = plan->nt, dhp = w->dhp;
	const int32_t *iperm = plan->iperm + (int64_t) b * S;
	const int64_t *qptr = plan->qptr + (int64_t) b * nt;

	for (int i = 0; i < n_only; i++)
	{
		int p = iperm[only[i] - b * S];

		if (i + GATHER_AHEAD < n_only)
			row_prefetch(q, (int64_t) (i + GATHER_AHEAD) * H * dh + h * dh, dh);
		w->qsel[p] = 1;
		w->tile_n[p / T]++;
		row_copy(w->q + (int64_t) p * dhp, q + (int64_t) i * H * dh + h * dh, dh);
	}
	for (int qt = 0; qt < nt; qt++)
		for (int64_t pr = qptr[qt]; w->tile_n[qt] && pr < qptr[qt + 1]; pr++)
			w->ktile_need[plan->ktile[pr]] = 1;
	gather_fwd_tiles(w->kt, w->v, k, v, plan->perm + (int64_t) b * S, w->ktile_need, S, nt, H, h, dh, dhp, krows);
}

#define HW_ATTENTION_TILES_H_INSIDE
#include "core/attention_lists.h"
#undef HW_ATTENTION_TILES_H_INSIDE

/* query tile qt's rows by the tile kernel: every visited key tile with
 * online softmax (fwd_row_tile), then each row's output scaled and lse */
static inline __attribute__((always_inline)) void
fwd_query_tile(const HwAttnPlan *plan, int64_t p0, int64_t p1, int qt, int nq, AttnWork *w, bool listed)
{
	int    dhp = w->dhp;
	float *Ot = w->o + (int64_t) qt * T * dhp;
	float  mrow[T], lrow[T];

	for (int ii = 0; ii < T; ii++)
	{
		mrow[ii] = -INFINITY;
		lrow[ii] = 0.0f;
	}
	memset(Ot, 0, sizeof(float) * T * dhp);
	for (int64_t pr = p0; pr < p1; pr++)
	{
		int             kt = plan->ktile[pr];
		const uint16_t *mk = plan->mask + pr * T;
		const float    *Kt = w->kt + (int64_t) kt * dhp * T;
		const float    *Vr = w->v + (int64_t) kt * T * dhp;

		for (int ii = 0; ii < nq; ii++)
			if (mk[ii] != 0 && (!listed || w->qsel[qt * T + ii]))
				fwd_row_tile(Ot + (int64_t) ii * dhp, &mrow[ii], &lrow[ii], w->q + (int64_t) (qt * T + ii) * dhp,
							 Kt, Vr, mk[ii], dhp);
	}
	for (int ii = 0; ii < nq; ii++)
	{
		float *oi = Ot + (int64_t) ii * dhp;
		float  inv = 1.0f / lrow[ii];

		if (listed && !w->qsel[qt * T + ii])
			continue;
		for (int c = 0; c < dhp; c += VW)
			VSTORE(oi + c, VLOAD(oi + c) * inv);
		w->lse[qt * T + ii] = mrow[ii] + logf(lrow[ii]);
	}
}

/* Forward of one (b, h) (attention_internal.h), by the tile kernel or the
 * list kernel on gathered rows (dh not a multiple of 16: where it is, the
 * serving forward runs fwd_rows_list_direct instead).  With a list of queries the same loops skip the other
 * queries (and the query tiles holding none of them), so a listed row runs
 * the very instructions of the full forward; only the key tiles those
 * query tiles visit are gathered (the other buffers' rows keep stale
 * values that nothing reads). */
static inline __attribute__((always_inline)) void
fwd_head(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w, float *out, float *lse, const float *q,
		 const float *k, const float *v, const int32_t *only, int n_only, bool list)
{
	int            S = plan->S, nt = plan->nt, dhp = w->dhp, D = H * dh;
	const int32_t *iperm = plan->iperm + (int64_t) b * S;

	if (only)
		gather_fwd_listed(plan, b, h, H, dh, w, q, k, v, only, n_only, list);
	else
		gather_fwd(w->q, w->kt, w->v, q, k, v, iperm, S, H, h, dh, dhp, list);

	for (int qt = 0; qt < nt; qt++)
	{
		int     nq = S - qt * T < T ? S - qt * T : T;
		int64_t p0 = plan->qptr[(int64_t) b * nt + qt], p1 = plan->qptr[(int64_t) b * nt + qt + 1];

		if (only && w->tile_n[qt] == 0)
			continue;
		if (list)
			fwd_query_tile_list(plan, b, qt, nq, w, only != NULL);
		else
			fwd_query_tile(plan, p0, p1, qt, nq, w, only != NULL);
	}
	if (only)
	{
		/* the listed rows out, and the marks cleared for the next call */
		for (int i = 0; i < n_only; i++)
		{
			int p = iperm[only[i] - b * S];

			row_copy(out + (int64_t) i * D + h * dh, w->o + (int64_t) p * dhp, dh);
			w->qsel[p] = 0;
			w->tile_n[p / T] = 0;
		}
		memset(w->ktile_need, 0, nt);
		return;
	}
	scatter_rows(out, w->o, iperm, S, H, h, dh, dhp);
	for (int i = 0; i < S; i++)
		lse[i] = w->lse[iperm[i]];
}

void
HW_ATTN_NAME(attn_fwd_head)(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
							float *out, float *lse, const float *q, const float *k, const float *v,
							const int32_t *only, int n_only)
{
	fwd_head(plan, b, h, H, dh, w, out, lse, q, k, v, only, n_only, false);
}

void
HW_ATTN_NAME(attn_fwd_head_list)(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
								 float *out, float *lse, const float *q, const float *k, const float *v,
								 const int32_t *only, int n_only)
{
	fwd_head(plan, b, h, H, dh, w, out, lse, q, k, v, only, n_only, true);
}

void
HW_ATTN_NAME(attn_fwd_rows_list)(const HwAttnPlan *plan, int b, int H, int dh, AttnWork *w, float *out, float *lse,
								 const float *q, const float *k, const float *v, const int32_t *only, int i0, int i1)
{
	fwd_rows_list_direct(plan, b, H, dh, w, out, lse, q, k, v, only, i0, i1);
}

/* P and dS of one query against one key tile (its rows of each, [T],
 * written to Prow and dSrow), and its dq row updated by dS k */
static inline __attribute__((always_inline)) void
bwd_row_tile(float *Prow, float *dSrow, float *dqi, const float *qi, const float *gi, float Lp, float Dp,
			 const float *Kt, const float *Vt, const float *Kr, uint16_t mk, int dhp)
{
	for (int c = 0; c < T; c += VW)
	{
		vf pv = tile_dot(qi, Kt, c, dhp) - Lp;
		vf dp;

		vexp(&pv);
		pv = VSEL(VMASK_BITS(mk, c), pv, VSPLAT(0.0f));
		/* dP_ij = dout_i . v_j */
		dp = tile_dot(gi, Vt, c, dhp);
		VSTORE(Prow + c, pv);
		VSTORE(dSrow + c, pv * (dp - Dp));
	}
	/* dq_i += sum_j dS_ij k_j */
	rows_axpy(dqi, false, 1.0f, dSrow, Kr, dhp);
}

/* dk_j += sum_i dS_ij q_i;  dv_j += sum_i P_ij dout_i over the nr active
 * query rows of a tile pair, for the keys jj whose bit is set in cols */
static inline __attribute__((always_inline)) void
bwd_key_tile(float *dKr, float *dVr, const float *P, const float *dS, const int *rows, int nr, uint32_t cols,
			 const float *Q, const float *dO, int dhp)
{
	for (int jj = 0; jj < T; jj++)
	{
		float *dkj = dKr + (int64_t) jj * dhp;
		float *dvj = dVr + (int64_t) jj * dhp;

		if (!((cols >> jj) & 1u))
			continue;
		for (int c = 0; c < dhp; c += VW)
		{
			vf  ak = VLOAD(dkj + c), av = VLOAD(dvj + c), ak1 = {}, av1 = {};
			int r = 0;

			for (; r + 1 < nr; r += 2)
			{
				ak += dS[r * T + jj] * VLOAD(Q + (int64_t) rows[r] * dhp + c);
				av += P[r * T + jj] * VLOAD(dO + (int64_t) rows[r] * dhp + c);
				ak1 += dS[(r + 1) * T + jj] * VLOAD(Q + (int64_t) rows[r + 1] * dhp + c);
				av1 += P[(r + 1) * T + jj] * VLOAD(dO + (int64_t) rows[r + 1] * dhp + c);
			}
			if (r < nr)
			{
				ak += dS[r * T + jj] * VLOAD(Q + (int64_t) rows[r] * dhp + c);
				av += P[r * T + jj] * VLOAD(dO + (int64_t) rows[r] * dhp + c);
			}
			VSTORE(dkj + c, ak + ak1);
			VSTORE(dvj + c, av + av1);
		}
	}
}

/* Backward of one (b, h) (attention_internal.h). */
void
HW_ATTN_NAME(attn_bwd_head)(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
							float *dq, float *dk, float *dv, const float *dout, const float *out,
							const float *lse, const float *q, const float *k, const float *v)
{
	int            S = plan->S, nt = plan->nt, dhp = w->dhp;
	const int32_t *iperm = plan->iperm + (int64_t) b * S;
	float         *Q = w->q, *K = w->k, *KT = w->kt, *VT = w->vt, *dO = w->dout;
	float         *dQ = w->dq, *dK = w->dk, *dV = w->dv, *Dl = w->rowv, *L = w->lse;
	float         *P = w->P, *dS = w->dS;
	size_t         nb = sizeof(float) * (size_t) w->Sp * dhp;

	gather_bwd(Q, K, KT, VT, dO, Dl, L, q, k, v, dout, out, lse, iperm, S, H, h, dh, dhp);
	memset(dQ, 0, nb);
	memset(dK, 0, nb);
	memset(dV, 0, nb);

	for (int qt = 0; qt < nt; qt++)
	{
		int     nq = S - qt * T < T ? S - qt * T : T;
		int64_t p0 = plan->qptr[(int64_t) b * nt + qt], p1 = plan->qptr[(int64_t) b * nt + qt + 1];

		for (int64_t pr = p0; pr < p1; pr++)
		{
			int             kt = plan->ktile[pr];
			const uint16_t *mk = plan->mask + pr * T;
			const float    *Kt = KT + (int64_t) kt * dhp * T;
			const float    *Vt = VT + (int64_t) kt * dhp * T;
			const float    *Kr = K + (int64_t) kt * T * dhp;
			int             rows[T], nr = 0;
			uint32_t        cols = 0;

			/* P and dS of the tile pair, one row per active query */
			for (int ii = 0; ii < nq; ii++)
			{
				int p = qt * T + ii;

				if (mk[ii] == 0)
					continue;
				cols |= mk[ii];
				bwd_row_tile(P + nr * T, dS + nr * T, dQ + (int64_t) p * dhp, Q + (int64_t) p * dhp,
							 dO + (int64_t) p * dhp, L[p], Dl[p], Kt, Vt, Kr, mk[ii], dhp);
				rows[nr++] = p;
			}
			bwd_key_tile(dK + (int64_t) kt * T * dhp, dV + (int64_t) kt * T * dhp, P, dS, rows, nr, cols, Q, dO,
						 dhp);
		}
	}
	scatter_rows(dq, dQ, iperm, S, H, h, dh, dhp);
	scatter_rows(dk, dK, iperm, S, H, h, dh, dhp);
	scatter_rows(dv, dV, iperm, S, H, h, dh, dhp);
}
