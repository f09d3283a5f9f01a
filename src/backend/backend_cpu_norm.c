/*
 * backend_cpu_norm.c: the CPU backend's normalising and embedding kernels:
 * RMSNorm, the cell encoder and the QK-norm, forward and backward, with
 * reductions over fixed 256-row chunks (see backend_cpu.c).
 */
/* lets GCC if-convert the float compares of fast_expf and vectorise; no
 * code here relies on floating-point traps */
#pragma GCC optimize("no-trapping-math")

#include "backend/backend_cpu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---------------------------------------------------------------- RMSNorm */

SIMD_CLONES void
cpu_rmsnorm_forward(HwBackend *be, float *out, float *rstd, const float *x, const float *g, int N, int D)
{
	/* threads from 16k elements: the serving forward calls it a few hundred
	 * rows at a time (model_infer.c, chunk_rows) */
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) N * D > 16384)
	for (int n = 0; n < N; n++)
	{
		const float *xr = x + (size_t) n * D;
		float       *o = out + (size_t) n * D;
		float        ss = 0, r;

#pragma omp simd reduction(+:ss)
		for (int d = 0; d < D; d++)
			ss += xr[d] * xr[d];
		r = 1.0f / sqrtf(ss / D + 1e-6f);
		rstd[n] = r;
#pragma omp simd
		for (int d = 0; d < D; d++)
			o[d] = (1.0f + g[d]) * xr[d] * r;
	}
}

SIMD_CLONES void
cpu_rmsnorm_backward(HwBackend *be, float *dx, float *dg, const float *dout,
					 const float *x, const float *rstd, const float *g, int N, int D)
{
	int    nch = (N + RCH - 1) / RCH;
	float *part = cpu_scratch(be, (size_t) nch * D);

#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (nch > 1)
	for (int c = 0; c < nch; c++)
	{
		float *p = part + (size_t) c * D;
		int    n1 = (c + 1) * RCH < N ? (c + 1) * RCH : N;

		memset(p, 0, D * sizeof(float));
		for (int n = c * RCH; n < n1; n++)
		{
			const float *xr = x + (size_t) n * D, *dy = dout + (size_t) n * D;
			float       *dxr = dx + (size_t) n * D;
			float        r = rstd[n], dot = 0, k;

#pragma omp simd reduction(+:dot)
			for (int d = 0; d < D; d++)
			{
				dot += dy[d] * (1.0f + g[d]) * xr[d];
				p[d] += dy[d] * xr[d] * r;
			}
			k = r * r * r * dot / D;
#pragma omp simd
			for (int d = 0; d < D; d++)
				dxr[d] += r * (1.0f + g[d]) * dy[d] - k * xr[d];
		}
	}
	for (int c = 0; c < nch; c++)
		for (int d = 0; d < D; d++)
			dg[d] += part[(size_t) c * D + d];
}

/* ---------------------------------------------------------------- encoder */

SIMD_CLONES void
cpu_encoder_forward(HwBackend *be, float *e, const HwEncInputs *in, const HwEncWeights *w, int N, int D)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
	{
		float       *o = e + (size_t) n * D;
		const float *cp = w->colproj + (size_t) in->col[n] * D;

		if (in->is_target[n] || in->is_null[n])
		{
			const float *v = in->is_target[n] ? w->mask_emb : w->null_emb;

			for (int d = 0; d < D; d++)
				o[d] = cp[d] + v[d];
			continue;
		}
		switch (in->stype[n])
		{
			case HW_ST_IDENTIFIER:
				for (int d = 0; d < D; d++)
					o[d] = cp[d] + w->id_emb[d];
				break;
			case HW_ST_NUMERICAL:
			{
				float x = in->num[n];

				for (int d = 0; d < D; d++)
					o[d] = cp[d] + (w->num_w[d] * x + w->num_b[d]);
				break;
			}
			case HW_ST_TIMESTAMP:
			{
				const float *t = in->ts + (size_t) n * 15;

				for (int d = 0; d < D; d++)
				{
					const float *wr = w->ts_w + (size_t) d * 15;
					float        s = w->ts_b[d];

					for (int k = 0; k < 15; k++)
						s += wr[k] * t[k];
					o[d] = cp[d] + s;
				}
				break;
			}
			case HW_ST_BOOLEAN:
			{
				const float *b = w->bool_emb + (size_t) (in->boolv[n] ? 1 : 0) * D;

				for (int d = 0; d < D; d++)
					o[d] = cp[d] + b[d];
				break;
			}
			case HW_ST_CATEGORICAL:
			{
				const float *c = w->catproj + (size_t) in->cat_local[n] * D;

				for (int d = 0; d < D; d++)
					o[d] = cp[d] + c[d];
				break;
			}
			case HW_ST_TEXT:
			{
				const float *c = w->textproj + (size_t) in->text_local[n] * D;

				for (int d = 0; d < D; d++)
					o[d] = cp[d] + c[d];
				break;
			}
			default:
				for (int d = 0; d < D; d++)
					o[d] = cp[d];
		}
	}
}

void
cpu_encoder_backward(HwBackend *be, const HwEncGrads *g, const float *de, const HwEncInputs *in,
					 int N, int D, int ncols, int Uc, int U)
{
	int nt = cpu_nthreads(be);

	/* each thread owns feature columns [d0, d1) and walks all tokens in order */
#pragma omp parallel num_threads(nt)
	{
		int tid = 0, T = 1;
#ifdef _OPENMP
		tid = omp_get_thread_num();
		T = omp_get_num_threads();
#endif
		int d0 = (int) ((int64_t) D * tid / T), d1 = (int) ((int64_t) D * (tid + 1) / T);
		int w = d1 - d0;

		if (w > 0)
		{
			for (int c = 0; c < ncols; c++)
				memset(g->colproj + (size_t) c * D + d0, 0, w * sizeof(float));
			for (int c = 0; c < Uc; c++)
				memset(g->catproj + (size_t) c * D + d0, 0, w * sizeof(float));
			for (int c = 0; c < U; c++)
				memset(g->textproj + (size_t) c * D + d0, 0, w * sizeof(float));
			memset(g->id_emb + d0, 0, w * sizeof(float));
			memset(g->null_emb + d0, 0, w * sizeof(float));
			memset(g->mask_emb + d0, 0, w * sizeof(float));
			memset(g->num_w + d0, 0, w * sizeof(float));
			memset(g->num_b + d0, 0, w * sizeof(float));
			memset(g->ts_w + (size_t) d0 * 15, 0, (size_t) w * 15 * sizeof(float));
			memset(g->ts_b + d0, 0, w * sizeof(float));
			memset(g->bool_emb + d0, 0, w * sizeof(float));
			memset(g->bool_emb + D + d0, 0, w * sizeof(float));

			for (int n = 0; n < N; n++)
			{
				const float *dr = de + (size_t) n * D;
				float       *dst = NULL;
				float       *cp = g->colproj + (size_t) in->col[n] * D;

				for (int d = d0; d < d1; d++)
					cp[d] += dr[d];
				if (in->is_target[n])
					dst = g->mask_emb;
				else if (in->is_null[n])
					dst = g->null_emb;
				else
					switch (in->stype[n])
					{
						case HW_ST_IDENTIFIER:
							dst = g->id_emb;
							break;
						case HW_ST_NUMERICAL:
						{
							float x = in->num[n];

							for (int d = d0; d < d1; d++)
								g->num_w[d] += dr[d] * x;
							dst = g->num_b;
							break;
						}
						case HW_ST_TIMESTAMP:
						{
							const float *t = in->ts + (size_t) n * 15;

							for (int d = d0; d < d1; d++)
								for (int k = 0; k < 15; k++)
									g->ts_w[(size_t) d * 15 + k] += dr[d] * t[k];
							dst = g->ts_b;
							break;
						}
						case HW_ST_BOOLEAN:
							dst = g->bool_emb + (size_t) (in->boolv[n] ? 1 : 0) * D;
							break;
						case HW_ST_CATEGORICAL:
							dst = g->catproj + (size_t) in->cat_local[n] * D;
							break;
						case HW_ST_TEXT:
							dst = g->textproj + (size_t) in->text_local[n] * D;
							break;
						default:
							dst = NULL;
					}
				if (dst)
					for (int d = d0; d < d1; d++)
						dst[d] += dr[d];
			}
		}
	}
}

/* ---------------------------------------------------------------- QK-norm */

/* GCC vector types: one zmm, two ymm or four xmm by the clone (aligned(4):
 * loads from any float address).  The lanes sum in the same order in every
 * clone; the AVX-512 and AVX2 clones fuse the multiply-add where the
 * baseline one rounds twice, so the last bits of a norm follow the ISA, as
 * before. */
typedef float v16sf __attribute__((vector_size(64), aligned(4)));
typedef float v8sf __attribute__((vector_size(32), aligned(4)));
typedef float v4sf __attribute__((vector_size(16), aligned(4)));

/* sum of x[i]^2, i < n: sixteen running sums (lane j takes i = j mod 16),
 * then added pairwise (8, 4, 2, 1 apart).  Spelled with vector types so
 * the sums stay in registers: a "simd reduction" pragma spilled them and
 * added the lanes one by one from memory. */
static inline float
sumsq_lanes(const float *x, int n)
{
	v16sf acc = { 0 }, a;
	v8sf  h8, l8;
	v4sf  h4, l4;
	int   i = 0;

	for (; i + 16 <= n; i += 16)
	{
		memcpy(&a, x + i, sizeof a);
		acc += a * a;
	}
	if (i < n)
	{
		float lane[16];

		memcpy(lane, &acc, sizeof lane);
		for (; i < n; i++)
			lane[i & 15] += x[i] * x[i];
		memcpy(&acc, lane, sizeof lane);
	}
	memcpy(&l8, &acc, sizeof l8);
	memcpy(&h8, (const char *) &acc + sizeof l8, sizeof h8);
	l8 += h8;
	memcpy(&l4, &l8, sizeof l4);
	memcpy(&h4, (const char *) &l8 + sizeof l4, sizeof h4);
	l4 += h4;
	return (l4[0] + l4[2]) + (l4[1] + l4[3]);
}

/* dst[i] = src[i] * f, i < n, sixteen at a time (a plain loop stored one
 * float at a time: GCC could not prove dst and src apart) */
static inline void
scale_row(float *dst, const float *src, float f, int n)
{
	v16sf a;
	int   i = 0;

	for (; i + 16 <= n; i += 16)
	{
		memcpy(&a, src + i, sizeof a);
		a *= f;
		memcpy(dst + i, &a, sizeof a);
	}
	for (; i < n; i++)
		dst[i] = src[i] * f;
}

SIMD_CLONES void
cpu_qknorm_forward(HwBackend *be, float *qs, float *kn, float *v, float *qnorm, float *knorm,
				   const float *qkvg, const float *tau, int N, int H, int dh)
{
	int   D = H * dh;
	float isq = 1.0f / sqrtf((float) dh);

#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) N * D > 16384)
	for (int n = 0; n < N; n++)
	{
		const float *row = qkvg + (size_t) n * 4 * D;

		for (int h = 0; h < H && qs; h++)
		{
			const float *q = row + h * dh;
			float        nq = sqrtf(sumsq_lanes(q, dh));

			qnorm[(size_t) n * H + h] = nq;
			scale_row(qs + (size_t) n * D + h * dh, q, tau[h] * isq / fmaxf(nq, 1e-6f), dh);
		}
		for (int h = 0; h < H && kn; h++)
		{
			const float *k = row + D + h * dh;
			float        nk = sqrtf(sumsq_lanes(k, dh));

			knorm[(size_t) n * H + h] = nk;
			scale_row(kn + (size_t) n * D + h * dh, k, 1.0f / fmaxf(nk, 1e-6f), dh);
		}
		if (v)
			memcpy(v + (size_t) n * D, row + 2 * D, D * sizeof(float));
	}
}

/* d of y = x / max(|x|, eps) given dy: (dy - y (y.dy)) / |x| when |x| > eps, dy / eps otherwise. */
static inline void
l2norm_backward(float *dx, const float *x, float nrm, const float *dy, int n)
{
	if (nrm > 1e-6f)
	{
		float dot = 0, inv = 1.0f / nrm;

		for (int i = 0; i < n; i++)
			dot += x[i] * inv * dy[i];
		for (int i = 0; i < n; i++)
			dx[i] = (dy[i] - x[i] * inv * dot) * inv;
	}
	else
		for (int i = 0; i < n; i++)
			dx[i] = dy[i] / 1e-6f;
}

SIMD_CLONES void
cpu_qknorm_backward(HwBackend *be, float *dqkvg, float *dtau, const float *dqs, const float *dkn,
					const float *dv, const float *qkvg, const float *qnorm, const float *knorm,
					const float *tau, int N, int H, int dh)
{
	int    D = H * dh, nch = (N + RCH - 1) / RCH;
	float  isq = 1.0f / sqrtf((float) dh);
	float *part = cpu_scratch(be, (size_t) nch * H);

#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (nch > 1)
	for (int c = 0; c < nch; c++)
	{
		int   n1 = (c + 1) * RCH < N ? (c + 1) * RCH : N;
		float dyq[512];                     /* dh <= 512 (checked by the model) */

		for (int h = 0; h < H; h++)
			part[(size_t) c * H + h] = 0;
		for (int n = c * RCH; n < n1; n++)
		{
			const float *row = qkvg + (size_t) n * 4 * D;
			float       *drow = dqkvg + (size_t) n * 4 * D;

			for (int h = 0; h < H; h++)
			{
				const float *q = row + h * dh, *k = row + D + h * dh;
				const float *gq = dqs + (size_t) n * D + h * dh, *gk = dkn + (size_t) n * D + h * dh;
				float        nq = qnorm[(size_t) n * H + h], nk = knorm[(size_t) n * H + h];
				float        s = tau[h] * isq, t = 0, iq = 1.0f / fmaxf(nq, 1e-6f);

				for (int i = 0; i < dh; i++)
				{
					t += gq[i] * q[i] * iq;
					dyq[i] = gq[i] * s;
				}
				part[(size_t) c * H + h] += t * isq;
				l2norm_backward(drow + h * dh, q, nq, dyq, dh);
				l2norm_backward(drow + D + h * dh, k, nk, gk, dh);
			}
			memcpy(drow + 2 * D, dv + (size_t) n * D, D * sizeof(float));
		}
	}
	for (int c = 0; c < nch; c++)
		for (int h = 0; h < H; h++)
			dtau[h] += part[(size_t) c * H + h];
}
