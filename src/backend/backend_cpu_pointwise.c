/*
 * backend_cpu_pointwise.c: the CPU backend's per-element kernels: gated
 * residual, SwiGLU, the heads' losses with their gradients, and the
 * optimiser updates (AdamW, Muon momentum).
 */
/* lets GCC if-convert the float compares of fast_expf and vectorise; no
 * code here relies on floating-point traps */
#pragma GCC optimize("no-trapping-math")

#include "backend/backend_cpu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- gate, SwiGLU */

/* expf by range reduction + degree-6 polynomial (max rel. error ~2e-7 on
 * [-87, 87], checked against exp() in test_ops_cpu): plain arithmetic, so
 * `omp simd` loops vectorise without -ffast-math or libmvec. */
static inline float
fast_expf(float x)
{
	float    n, r, p;
	int32_t  e;
	union { float f; int32_t i; } u;

	x = x < -87.0f ? -87.0f : (x > 87.0f ? 87.0f : x);
	/* round to nearest by the 1.5 * 2^23 trick (SSE2 has no vector floor) */
	n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
	r = x - n * 0.693145752f - n * 1.42860677e-6f;
	p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666418f + r * (0.00833336823f +
		r * 0.00138889742f)))));
	e = (int32_t) n;
	u.i = (e + 127) << 23;
	return p * u.f;
}

static inline float sigm(float x) { return 1.0f / (1.0f + fast_expf(-x)); }

/* exported for the accuracy test */
float hw_cpu_fast_expf(float x);
float hw_cpu_fast_expf(float x) { return fast_expf(x); }

SIMD_CLONES void
cpu_gate_residual_forward(HwBackend *be, float *xout, const float *xin, const float *gp, int ld,
						  const float *o, int N, int D)
{
	/* threads from 16k elements, as rmsnorm_forward (the serving forward's chunks) */
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) N * D > 16384)
	for (int n = 0; n < N; n++)
#pragma omp simd
		for (int d = 0; d < D; d++)
			xout[(size_t) n * D + d] = xin[(size_t) n * D + d] +
				sigm(gp[(size_t) n * ld + d]) * o[(size_t) n * D + d];
}

SIMD_CLONES void
cpu_gate_residual_backward(HwBackend *be, float *dgp, int ld, float *dO, const float *dx,
						   const float *gp, const float *o, int N, int D)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
#pragma omp simd
		for (int d = 0; d < D; d++)
		{
			float s = sigm(gp[(size_t) n * ld + d]), g = dx[(size_t) n * D + d];

			dO[(size_t) n * D + d] = g * s;
			dgp[(size_t) n * ld + d] = g * o[(size_t) n * D + d] * s * (1.0f - s);
		}
}

SIMD_CLONES void
cpu_swiglu_forward(HwBackend *be, float *h, const float *gu, int N, int F)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) N * F > 16384)
	for (int n = 0; n < N; n++)
	{
		const float *g = gu + (size_t) n * 2 * F, *u = g + F;
		float       *hr = h + (size_t) n * F;

#pragma omp simd
		for (int f = 0; f < F; f++)
			hr[f] = g[f] * sigm(g[f]) * u[f];
	}
}

SIMD_CLONES void
cpu_swiglu_backward(HwBackend *be, float *dgu, const float *dh, const float *gu, int N, int F)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if ((int64_t) N * 64 > 32768)
	for (int n = 0; n < N; n++)
	{
		const float *g = gu + (size_t) n * 2 * F, *u = g + F, *d = dh + (size_t) n * F;
		float       *dg = dgu + (size_t) n * 2 * F, *du = dg + F;

#pragma omp simd
		for (int f = 0; f < F; f++)
		{
			float s = sigm(g[f]);

			dg[f] = d[f] * u[f] * s * (1.0f + g[f] * (1.0f - s));
			du[f] = d[f] * g[f] * s;
		}
	}
}

/* ---------------------------------------------------------------- loss */

/* BCE with logits: loss and d/dz. */
static inline float
bce_logits(float z, float y, float *dz)
{
	*dz = sigm(z) - y;
	return fmaxf(z, 0.0f) - z * y + log1pf(expf(-fabsf(z)));
}

static inline float
smooth_l1(float d, float delta, float *dd)
{
	/* delta 1 is Huber; a small delta is L1 with a quadratic bottom (the
	 * gradient is sign(d) outside it, so the fit is the median). */
	float a = fabsf(d);

	if (a <= delta)
	{
		*dd = d / delta;
		return 0.5f * d * d / delta;
	}
	*dd = d > 0 ? 1.0f : -1.0f;
	return a - 0.5f * delta;
}

static inline float
huber(float d, float *dd)
{
	return smooth_l1(d, 1.0f, dd);
}

/* The ordinal loss of one target (backend.h HwLossTargets): the sum over
 * thresholds k < levels of BCE(z[k], level > k), level the target's z-score
 * mapped to its integer level; dz[k] = its gradient * scale. */
static inline float
ordinal_loss(const float *z, float num, int levels, float oscale, float oshift, float scale, float *dz)
{
	float lv = nearbyintf(num * oscale + oshift), tl = 0, g;

	lv = fminf(fmaxf(lv, 0.0f), (float) levels);
	for (int k = 0; k < levels; k++)
	{
		tl += bce_logits(z[k], lv > (float) k ? 1.0f : 0.0f, &g);
		dz[k] = g * scale;
	}
	return tl;
}

void
cpu_loss_forward_backward(HwBackend *be, float *loss, float *dZ, float *dlogits, const float *Z,
						  const float *logits, const HwLossTargets *t, int stype, int B, int D,
						  int K, float scale)
{
	int HZ = HW_HEAD_Z(D);

	memset(dZ, 0, (size_t) B * HZ * sizeof(float));
	if (dlogits && K > 0)
		memset(dlogits, 0, (size_t) B * K * sizeof(float));
	for (int b = 0; b < B; b++)
	{
		const float *z = Z + (size_t) b * HZ;
		float       *dz = dZ + (size_t) b * HZ;
		const float *z_ord = t->ord_levels > 0 ? t->ord_z + (size_t) b * HW_ORD_LEVELS : NULL;
		float       *dz_ord = t->ord_levels > 0 ? t->ord_dz + (size_t) b * HW_ORD_LEVELS : NULL;
		float        g, l, tl = 0;
		int          isnull = t->is_null[b] != 0;

		if (dz_ord)
			memset(dz_ord, 0, HW_ORD_LEVELS * sizeof(float));

		l = bce_logits(z[HW_HEAD_NULL], (float) isnull, &g);
		dz[HW_HEAD_NULL] = g * scale;
		if (!isnull)
		{
			switch (stype)
			{
				case HW_ST_NUMERICAL:
					if (t->ord_levels > 0)
					{
						tl = ordinal_loss(z_ord, t->num[b], t->ord_levels, t->ord_scale, t->ord_shift, scale, dz_ord);
						break;
					}
					tl = smooth_l1(z[HW_HEAD_NUM] - t->num[b], t->num_loss == HW_NUM_LOSS_MAE ? HW_MAE_SMOOTH : 1.0f, &g);
					dz[HW_HEAD_NUM] = g * scale;
					break;
				case HW_ST_BOOLEAN:
					tl = bce_logits(z[HW_HEAD_BOOL], t->boolv[b] ? 1.0f : 0.0f, &g);
					dz[HW_HEAD_BOOL] = g * scale;
					break;
				case HW_ST_TIMESTAMP:
					for (int k = 0; k < 15; k++)
					{
						float w = k < 14 ? 1.0f / 14.0f : 2.0f;

						tl += w * huber(z[HW_HEAD_TS + k] - t->ts[(size_t) b * 15 + k], &g);
						dz[HW_HEAD_TS + k] = w * g * scale;
					}
					break;
				case HW_ST_CATEGORICAL:
				{
					const float *lg = logits + (size_t) b * K;
					float       *dl = dlogits + (size_t) b * K;
					float        mx = -INFINITY, lse;
					double       s = 0;
					int          y = t->cat[b];

					for (int k = 0; k < K; k++)
						mx = fmaxf(mx, lg[k]);
					for (int k = 0; k < K; k++)
						s += exp((double) (lg[k] - mx));
					lse = mx + (float) log(s);
					tl = lse - lg[y] + 1e-4f * lse * lse;
					for (int k = 0; k < K; k++)
						dl[k] = (expf(lg[k] - lse) * (1.0f + 2e-4f * lse) - (k == y ? 1.0f : 0.0f)) * scale;
					break;
				}
				default:
					break;
			}
		}
		loss[b] = l + tl;
	}
}

/* ---------------------------------------------------------------- optimiser */

SIMD_CLONES void
cpu_adamw_update(HwBackend *be, float *p, float *m, float *v, const float *grad, size_t n,
				 float gscale, float lr, float b1, float b2, float eps, float wd, int t)
{
	float bc1 = 1.0f - powf(b1, (float) t), bc2 = 1.0f - powf(b2, (float) t);

#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (n > 65536)
	for (size_t i = 0; i < n; i++)
	{
		float g = grad[i] * gscale;

		m[i] = b1 * m[i] + (1.0f - b1) * g;
		v[i] = b2 * v[i] + (1.0f - b2) * g * g;
		p[i] -= lr * ((m[i] / bc1) / (sqrtf(v[i] / bc2) + eps) + wd * p[i]);
	}
}

SIMD_CLONES void
cpu_muon_momentum(HwBackend *be, float *u, float *buf, const float *grad, size_t n, float gscale, float mu)
{
#pragma omp parallel for schedule(static) num_threads(cpu_nthreads(be)) if (n > 65536)
	for (size_t i = 0; i < n; i++)
	{
		float g = grad[i] * gscale;

		buf[i] = mu * buf[i] + g;
		u[i] = g + mu * buf[i];
	}
}
