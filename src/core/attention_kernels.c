/*
 * attention_kernels.c: the CPU kernels of block-sparse masked attention,
 * forward and backward, over a plan of attention_plan.c (contract in
 * attention.h).
 *
 * Kernels: one OpenMP task per (b, h).  The task gathers q, k, v of that head
 * in permuted order into contiguous per-thread buffers (k transposed per tile
 * so the score loop vectorises over keys), runs all visited tiles with online
 * softmax (fp32), and scatters back.  Backward recomputes probabilities from
 * the saved lse; because a whole (b, h) is handled by one thread in a fixed
 * tile order, dq/dk/dv are deterministic whatever the thread count.
 */
/* keeps the row gathers and scatters as inline loops: GCC would turn each
 * dh-float copy into a libc memmove call (a tenth of the forward's time) */
#pragma GCC optimize("no-tree-loop-distribute-patterns")

#include "core/attention_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/*
 * One vector = one key tile (16 fp32).  GCC vector extensions: lowered to
 * SSE in the default clone, one zmm register in the x86-64-v4 clone (runtime
 * dispatch by target_clones; no -march flag needed at build time).
 */
typedef float   v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

#define VLOAD(p)     (*(const v16f *) (p))
#define VSPLAT(x)    ((v16f) {} + (float) (x))

/* helpers are macros or take pointers: a static function with a 64-byte
 * vector argument or result draws GCC's -Wpsabi note in the default clone */
/* m ? a : b, lane-wise */
#define VSEL(m, a, b) ((v16f) (((v16i) (a) & (m)) | ((v16i) (b) & ~(m))))
/* lanes jj whose bit is set in the 16-bit mask word m */
#define VMASK_BITS(m) ((((v16i) {} + (int32_t) (m)) & \
	(v16i) {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}) != 0)

/*
 * exp(x) for x <= ~0 (and -inf), branch-free: exp(x) = 2^n * e^r with
 * |r| <= ln2/2 and a degree-6 Taylor polynomial (relative error ~1.2e-7);
 * exactly 0 below -87, exactly 1 at 0.
 */
static inline void
vexp(v16f *px)
{
	v16f x = *px;
	v16i under = x < -87.0f;
	v16f xc = VSEL(under, VSPLAT(-87.0f), x);
	/* round to nearest by the 1.5*2^23 trick (no SSE4.1 round needed) */
	v16f n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	v16f r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;
	v16f p = VSPLAT(1.0f / 720.0f);
	v16i e;

	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	e = (__builtin_convertvector(n, v16i) + 127) << 23;
	*px = VSEL(under, VSPLAT(0.0f), p * (v16f) e);
}

static inline float
attn_expf(float x)
{
	v16f v = VSPLAT(x);

	vexp(&v);
	return v[0];
}

static inline float
vhmax(const v16f *px)	/* tree: a linear chain of 15 dependent maxss is ~60 cycles */
{
	v16f  x = *px;
	float t[8];

	for (int i = 0; i < 8; i++)
		t[i] = x[i] > x[i + 8] ? x[i] : x[i + 8];
	for (int i = 0; i < 4; i++)
		t[i] = t[i] > t[i + 4] ? t[i] : t[i + 4];
	t[0] = t[0] > t[2] ? t[0] : t[2];
	t[1] = t[1] > t[3] ? t[1] : t[3];
	return t[0] > t[1] ? t[0] : t[1];
}

static inline float
vhsum(const v16f *px)	/* fixed pairwise order */
{
	v16f  x = *px;
	float t[8];
	for (int i = 0; i < 8; i++)
		t[i] = x[i] + x[i + 8];
	for (int i = 0; i < 4; i++)
		t[i] += t[i + 4];
	return (t[0] + t[2]) + (t[1] + t[3]);
}

/*
 * Per-thread buffers of one (b, h), all 64-byte aligned, dhp = dh rounded up
 * to 16 (extra dims are zero: they change no dot product and are dropped
 * on scatter).  Row layouts [Sp][dhp]; transposed tiles [nt][dhp][16].
 */
typedef struct AttnWork
{
	int    Sp, dhp;
	float *q, *k, *kt, *v, *vt, *o, *dout, *dq, *dk, *dv;
	float *rowv, *lse;	/* [Sp] */
	float *P, *dS;		/* [T][T] one tile pair */
} AttnWork;

static int
work_alloc(AttnWork *w, int S, int dh, bool backward)
{
	int     nt = (S + T - 1) / T;
	size_t  Sp = (size_t) nt * T, dhp = (size_t) ((dh + 15) / 16) * 16;
	size_t  n = Sp * dhp;
	/* the forward's buffers (q, kt, v, o, lse) first: a forward allocates
	 * and clears only those */
	size_t  total = backward ? n * 10 + 2 * Sp + 2 * T * T : n * 4 + Sp;
	float  *buf;

	memset(w, 0, sizeof(*w));
	buf = aligned_alloc(64, ((sizeof(float) * total + 63) / 64) * 64);
	if (!buf)
		return -1;
	memset(buf, 0, sizeof(float) * total);
	w->Sp = (int) Sp;
	w->dhp = (int) dhp;
	w->q = buf;
	w->kt = buf + n;
	w->v = buf + 2 * n;
	w->o = buf + 3 * n;
	w->lse = buf + 4 * n;
	if (backward)
	{
		w->rowv = w->lse + Sp;
		w->k = w->rowv + Sp;
		w->vt = w->k + n;
		w->dout = w->vt + n;
		w->dq = w->dout + n;
		w->dk = w->dq + n;
		w->dv = w->dk + n;
		w->P = w->dv + n;
		w->dS = w->P + T * T;
	}
	return 0;
}

/*
 * Gather/scatter between head h of x [S,H,dh] (one batch element) and the
 * permuted per-head buffers.  They walk the ORIGINAL order (iperm: original
 * index -> permuted position) so x is read/written at a constant stride the
 * prefetcher follows, and the random side is the L2-resident buffer.  Inline
 * loops, not memcpy: rows are only dh floats, and the copies get the vector
 * width of the calling clone.  Pads of the buffers (dims >= dh) stay 0.
 */
/* forward gathers in one pass over the original order: Q (q NULL: none), V
 * rows and K^T tiles */
static inline __attribute__((always_inline)) void
gather_fwd(float *restrict Q, float *restrict KT, float *restrict V,
		   const float *restrict q, const float *restrict k, const float *restrict v,
		   const int32_t *iperm, int S, int H, int h, int dh, int dhp)
{
	for (int i = 0; i < S; i++)
	{
		int64_t off = ((int64_t) i * H + h) * dh;
		int     p = iperm[i];
		float  *qd = Q + (int64_t) p * dhp, *vd = V + (int64_t) p * dhp;
		float  *kd = KT + (int64_t) (p / T) * dhp * T + (p % T);

		for (int d = 0; q && d < dh; d++)
			qd[d] = q[off + d];
		for (int d = 0; d < dh; d++)
			vd[d] = v[off + d];
		for (int d = 0; d < dh; d++)
			kd[d * T] = k[off + d];
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

		for (int d = 0; d < dh; d++)
		{
			qd[d] = q[off + d];
			kd[d] = k[off + d];
			gd[d] = dout[off + d];
		}
		for (int d = 0; d < dh; d++)
		{
			ktd[d * T] = k[off + d];
			vtd[d * T] = v[off + d];
		}
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
		float       *dst = x + ((int64_t) i * H + h) * dh;
		const float *src = xp + (int64_t) iperm[i] * dhp;

		for (int d = 0; d < dh; d++)
			dst[d] = src[d];
	}
}

/* s[jj] = q . k_jj over one key tile (kt [dhp][T]) */
static inline void
tile_scores(v16f *out, const float *restrict q, const float *restrict kt, int dhp)
{
	v16f s0 = {}, s1 = {}, s2 = {}, s3 = {};

	/* four accumulators: the FMA latency (4 cycles) is not a chain of dhp */
	for (int d = 0; d < dhp; d += 4)
	{
		s0 += q[d] * VLOAD(kt + d * T);
		s1 += q[d + 1] * VLOAD(kt + (d + 1) * T);
		s2 += q[d + 2] * VLOAD(kt + (d + 2) * T);
		s3 += q[d + 3] * VLOAD(kt + (d + 3) * T);
	}
	*out = (s0 + s1) + (s2 + s3);
}

/* One query row against one key tile (online softmax): its output oi
 * [dhp], running max *mrow and sum *lrow, from its q [dhp], the tile's K^T
 * [dhp][T] and V [T][dhp] and its mask word. */
static inline __attribute__((always_inline)) void
fwd_row_tile(float *oi, float *mrow, float *lrow, const float *qi, const float *Kt, const float *Vr, uint16_t mk,
			 int dhp)
{
	v16f  s, pv;
	float mx, mnew, scale;
	float pj[T];

	tile_scores(&s, qi, Kt, dhp);
	s = VSEL(VMASK_BITS(mk), s, VSPLAT(-INFINITY));
	mx = vhmax(&s);
	mnew = mx > *mrow ? mx : *mrow;
	/* the running max rarely moves after the first tiles */
	scale = mnew == *mrow ? 1.0f : attn_expf(*mrow - mnew);
	pv = s - mnew;
	vexp(&pv);
	*lrow = *lrow * scale + vhsum(&pv);
	*mrow = mnew;
	memcpy(pj, &pv, sizeof(pj));
	for (int c = 0; c < dhp; c += 16)
	{
		const float *vc = Vr + c;
		v16f         a0 = VLOAD(oi + c) * scale, a1 = {}, a2 = {}, a3 = {};

		for (int jj = 0; jj < T; jj += 4)
		{
			a0 += pj[jj] * VLOAD(vc + (int64_t) jj * dhp);
			a1 += pj[jj + 1] * VLOAD(vc + (int64_t) (jj + 1) * dhp);
			a2 += pj[jj + 2] * VLOAD(vc + (int64_t) (jj + 2) * dhp);
			a3 += pj[jj + 3] * VLOAD(vc + (int64_t) (jj + 3) * dhp);
		}
		*(v16f *) (oi + c) = (a0 + a1) + (a2 + a3);
	}
}

/* Forward of one (b, h): q,k,v,out [S,H,dh] of element b; lse [S] of (b,h).
 * only >= 0: the query at that position alone (inference): q and out are
 * its rows [H*dh], lse is not written; the same loops skip the other
 * queries, so the row runs the very instructions of the full forward. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static void
fwd_head(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
		 float *out, float *lse, const float *q, const float *k, const float *v, int only)
{
	int            S = plan->S, nt = plan->nt, dhp = w->dhp;
	const int32_t *iperm = plan->iperm + (int64_t) b * S;
	float         *Q = w->q, *KT = w->kt, *V = w->v, *O = w->o;
	float          mrow[T], lrow[T];
	int            pone = only >= 0 ? iperm[only] : -1;     /* its permuted position */

	gather_fwd(Q, KT, V, only >= 0 ? NULL : q, k, v, iperm, S, H, h, dh, dhp);
	for (int d = 0; only >= 0 && d < dh; d++)
		Q[(int64_t) pone * dhp + d] = q[h * dh + d];

	for (int qt = only >= 0 ? pone / T : 0; qt < (only >= 0 ? pone / T + 1 : nt); qt++)
	{
		int     nq = S - qt * T < T ? S - qt * T : T;
		int64_t p0 = plan->qptr[(int64_t) b * nt + qt], p1 = plan->qptr[(int64_t) b * nt + qt + 1];
		float  *Ot = O + (int64_t) qt * T * dhp;

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
			const float    *Kt = KT + (int64_t) kt * dhp * T;
			const float    *Vr = V + (int64_t) kt * T * dhp;

			for (int ii = 0; ii < nq; ii++)
				if (mk[ii] != 0 && (only < 0 || qt * T + ii == pone))
					fwd_row_tile(Ot + (int64_t) ii * dhp, &mrow[ii], &lrow[ii], Q + (int64_t) (qt * T + ii) * dhp,
								 Kt, Vr, mk[ii], dhp);
		}
		for (int ii = 0; ii < nq; ii++)
		{
			float *oi = Ot + (int64_t) ii * dhp;
			float  inv = 1.0f / lrow[ii];

			if (only >= 0 && qt * T + ii != pone)
				continue;
			for (int c = 0; c < dhp; c += 16)
				*(v16f *) (oi + c) = VLOAD(oi + c) * inv;
			w->lse[qt * T + ii] = mrow[ii] + logf(lrow[ii]);
		}
	}
	if (only >= 0)
	{
		for (int d = 0; d < dh; d++)
			out[h * dh + d] = O[(int64_t) pone * dhp + d];
		return;
	}
	scatter_rows(out, O, iperm, S, H, h, dh, dhp);
	for (int i = 0; i < S; i++)
		lse[i] = w->lse[iperm[i]];
}

/* Backward of one (b, h). */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static void
bwd_head(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
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
			float          *dKr = dK + (int64_t) kt * T * dhp;
			float          *dVr = dV + (int64_t) kt * T * dhp;
			int             rows[T], nr = 0;
			uint32_t        cols = 0;

			/* P and dS of the tile pair, one row per active query */
			for (int ii = 0; ii < nq; ii++)
			{
				int          p = qt * T + ii;
				const float *gi = dO + (int64_t) p * dhp;
				float       *dqi = dQ + (int64_t) p * dhp;
				v16f         s, pv, dp0 = {}, dp1 = {}, dp2 = {}, dp3 = {}, ds;
				float        dsj[T];

				if (mk[ii] == 0)
					continue;
				cols |= mk[ii];
				tile_scores(&s, Q + (int64_t) p * dhp, Kt, dhp);
				pv = s - L[p];
				vexp(&pv);
				pv = VSEL(VMASK_BITS(mk[ii]), pv, VSPLAT(0.0f));
				/* dP_ij = dout_i . v_j */
				for (int d = 0; d < dhp; d += 4)
				{
					dp0 += gi[d] * VLOAD(Vt + d * T);
					dp1 += gi[d + 1] * VLOAD(Vt + (d + 1) * T);
					dp2 += gi[d + 2] * VLOAD(Vt + (d + 2) * T);
					dp3 += gi[d + 3] * VLOAD(Vt + (d + 3) * T);
				}
				ds = pv * (((dp0 + dp1) + (dp2 + dp3)) - Dl[p]);
				*(v16f *) (P + nr * T) = pv;
				*(v16f *) (dS + nr * T) = ds;
				rows[nr++] = p;
				/* dq_i += sum_j dS_ij k_j */
				memcpy(dsj, &ds, sizeof(dsj));
				for (int c = 0; c < dhp; c += 16)
				{
					const float *kc = Kr + c;
					v16f         a0 = VLOAD(dqi + c), a1 = {}, a2 = {}, a3 = {};

					for (int jj = 0; jj < T; jj += 4)
					{
						a0 += dsj[jj] * VLOAD(kc + (int64_t) jj * dhp);
						a1 += dsj[jj + 1] * VLOAD(kc + (int64_t) (jj + 1) * dhp);
						a2 += dsj[jj + 2] * VLOAD(kc + (int64_t) (jj + 2) * dhp);
						a3 += dsj[jj + 3] * VLOAD(kc + (int64_t) (jj + 3) * dhp);
					}
					*(v16f *) (dqi + c) = (a0 + a1) + (a2 + a3);
				}
			}
			/* dk_j += sum_i dS_ij q_i;  dv_j += sum_i P_ij dout_i */
			for (int jj = 0; jj < T; jj++)
			{
				float *dkj = dKr + (int64_t) jj * dhp;
				float *dvj = dVr + (int64_t) jj * dhp;

				if (!((cols >> jj) & 1u))
					continue;
				for (int c = 0; c < dhp; c += 16)
				{
					v16f ak = VLOAD(dkj + c), av = VLOAD(dvj + c), ak1 = {}, av1 = {};
					int  r = 0;

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
					*(v16f *) (dkj + c) = ak + ak1;
					*(v16f *) (dvj + c) = av + av1;
				}
			}
		}
	}
	scatter_rows(dq, dQ, iperm, S, H, h, dh, dhp);
	scatter_rows(dk, dK, iperm, S, H, h, dh, dhp);
	scatter_rows(dv, dV, iperm, S, H, h, dh, dhp);
}

/* What a driver's per-head function reads: the call's tensors and plan. */
typedef struct HeadCall
{
	const HwAttnPlan *plan;
	int          H, dh;
	float       *out, *lse, *dq, *dk, *dv;
	const float *q, *k, *v, *dout, *o, *lse_in;
	const int32_t *cell;
} HeadCall;

/* One (b, h) of a call; w is NULL when the thread's work buffers could not
 * be allocated: the head's outputs are then NaN, which the trainer's NaN
 * check reports (the contract has no error channel). */
typedef void (*HeadFn)(const HeadCall *c, AttnWork *w, int b, int h);

/* fn on every (b, h) of the plan: one OpenMP task each, every thread with
 * its own work buffers (backward: with the gradient buffers too). */
static void
for_each_head(const HeadCall *c, bool backward, HeadFn fn)
{
	int B = c->plan->B, H = c->H;

#pragma omp parallel
	{
		AttnWork w;
		int      ok = work_alloc(&w, c->plan->S, c->dh, backward) == 0;

#pragma omp for schedule(dynamic, 1)
		for (int bh = 0; bh < B * H; bh++)
			fn(c, ok ? &w : NULL, bh / H, bh % H);
		if (ok)
			free(w.q);
	}
}

static void
forward_one_head(const HeadCall *c, AttnWork *w, int b, int h)
{
	int     S = c->plan->S, H = c->H, dh = c->dh;
	int64_t eo = (int64_t) b * S * H * dh, li = ((int64_t) b * H + h) * S;

	if (w)
	{
		fwd_head(c->plan, b, h, H, dh, w, c->out + eo, c->lse + li, c->q + eo, c->k + eo, c->v + eo, -1);
		return;
	}
	for (int i = 0; i < S; i++)
	{
		c->lse[li + i] = NAN;
		for (int d = 0; d < dh; d++)
			c->out[eo + ((int64_t) i * H + h) * dh + d] = NAN;
	}
}

void
attn_block_sparse_forward(float *out, float *lse,
						  const float *q, const float *k, const float *v,
						  const HwAttnPlan *plan, int H, int dh)
{
	HeadCall c = {.plan = plan, .H = H, .dh = dh, .out = out, .lse = lse, .q = q, .k = k, .v = v};

	for_each_head(&c, false, forward_one_head);
}

static void
backward_one_head(const HeadCall *c, AttnWork *w, int b, int h)
{
	int     S = c->plan->S, H = c->H, dh = c->dh;
	int64_t eo = (int64_t) b * S * H * dh;

	if (w)
	{
		bwd_head(c->plan, b, h, H, dh, w, c->dq + eo, c->dk + eo, c->dv + eo, c->dout + eo, c->o + eo,
				 c->lse_in + ((int64_t) b * H + h) * S, c->q + eo, c->k + eo, c->v + eo);
		return;
	}
	for (int i = 0; i < S; i++)
		for (int d = 0; d < dh; d++)
		{
			int64_t o = eo + ((int64_t) i * H + h) * dh + d;

			c->dq[o] = c->dk[o] = c->dv[o] = NAN;
		}
}

void
attn_block_sparse_backward(float *dq, float *dk, float *dv,
						   const float *dout, const float *out, const float *lse,
						   const float *q, const float *k, const float *v,
						   const HwAttnPlan *plan, int H, int dh)
{
	HeadCall c = {.plan = plan, .H = H, .dh = dh, .dq = dq, .dk = dk, .dv = dv, .dout = dout, .o = out,
				  .lse_in = lse, .q = q, .k = k, .v = v};

	for_each_head(&c, true, backward_one_head);
}

/* one query cell per sequence: cell[b] (a global cell index), q [B, H*dh] */
static void
rows_one_head(const HeadCall *c, AttnWork *w, int b, int h)
{
	int     S = c->plan->S, dh = c->dh, D = c->H * dh;
	int64_t eo = (int64_t) b * S * D;

	if (w)
	{
		fwd_head(c->plan, b, h, c->H, dh, w, c->out + (int64_t) b * D, NULL, c->q + (int64_t) b * D, c->k + eo,
				 c->v + eo, c->cell[b] - b * S);
		return;
	}
	for (int d = 0; d < dh; d++)
		c->out[(int64_t) b * D + h * dh + d] = NAN;
}

void
attn_block_sparse_forward_rows(float *out, const float *q, const float *k, const float *v, const HwAttnPlan *plan,
							   const int32_t *cell, int H, int dh)
{
	HeadCall c = {.plan = plan, .H = H, .dh = dh, .out = out, .q = q, .k = k, .v = v, .cell = cell};

	for_each_head(&c, false, rows_one_head);
}
