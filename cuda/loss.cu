/*
 * loss.cu: the heads' loss (model.h), forward and backward in one kernel.
 *
 * Z [B, 18+D] head outputs (columns HW_HEAD_*), logits [B,K] categorical
 * logits (the model computes them with a GEMM against the projected category
 * block).  One thread per sequence: B is small (32) and K at most a few
 * thousand, so this kernel is latency, not throughput; it mirrors the CPU
 * backend formula by formula (stable BCE with logits, Huber delta 1,
 * timestamp weights 1/14 and 2.0, cross-entropy + 1e-4 z-loss with the
 * log-sum-exp in double, the ordinal loss's BCE per threshold on t.ord_z).
 */
#include "hw_cuda.h"

__device__ __forceinline__ float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float
bce_logits(float z, float y, float *dz)
{
	*dz = sigm(z) - y;
	return fmaxf(z, 0.0f) - z * y + log1pf(expf(-fabsf(z)));
}

__device__ __forceinline__ float
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

__device__ __forceinline__ float
huber(float d, float *dd)
{
	return smooth_l1(d, 1.0f, dd);
}

__global__ void
loss_kernel(float *loss, float *dZ, float *dlogits, const float *Z, const float *logits, HwLossTargets t,
			int stype, int B, int D, int K, float scale)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b >= B)
		return;
	int HZ = HW_HEAD_Z(D);
	const float *z = Z + (size_t) b * HZ;
	float *dz = dZ + (size_t) b * HZ;
	for (int j = 0; j < HZ; j++)
		dz[j] = 0.f;
	if (dlogits && K > 0)
		for (int k = 0; k < K; k++)
			dlogits[(size_t) b * K + k] = 0.f;

	const float *z_ord = t.ord_levels > 0 ? t.ord_z + (size_t) b * HW_ORD_LEVELS : NULL;
	float *dz_ord = t.ord_levels > 0 ? t.ord_dz + (size_t) b * HW_ORD_LEVELS : NULL;
	if (dz_ord)
		for (int k = 0; k < HW_ORD_LEVELS; k++)
			dz_ord[k] = 0.f;

	float g, l, tl = 0.f;
	int isnull = t.is_null[b] != 0;
	l = bce_logits(z[HW_HEAD_NULL], (float) isnull, &g);
	dz[HW_HEAD_NULL] = g * scale;
	if (!isnull)
	{
		switch (stype)
		{
			case HW_ST_NUMERICAL:
				if (t.ord_levels > 0)
				{
					/* the ordinal loss: BCE per threshold k < levels on "level > k" */
					float lv = fminf(fmaxf(nearbyintf(t.num[b] * t.ord_scale + t.ord_shift), 0.0f), (float) t.ord_levels);
					for (int k = 0; k < t.ord_levels; k++)
					{
						tl += bce_logits(z_ord[k], lv > (float) k ? 1.0f : 0.0f, &g);
						dz_ord[k] = g * scale;
					}
					break;
				}
				tl = smooth_l1(z[HW_HEAD_NUM] - t.num[b], t.num_loss == HW_NUM_LOSS_MAE ? HW_MAE_SMOOTH : 1.0f, &g);
				dz[HW_HEAD_NUM] = g * scale;
				break;
			case HW_ST_BOOLEAN:
				tl = bce_logits(z[HW_HEAD_BOOL], t.boolv[b] ? 1.0f : 0.0f, &g);
				dz[HW_HEAD_BOOL] = g * scale;
				break;
			case HW_ST_TIMESTAMP:
				for (int k = 0; k < 15; k++)
				{
					float w = k < 14 ? 1.0f / 14.0f : 2.0f;
					tl += w * huber(z[HW_HEAD_TS + k] - t.ts[(size_t) b * 15 + k], &g);
					dz[HW_HEAD_TS + k] = w * g * scale;
				}
				break;
			case HW_ST_CATEGORICAL:
			{
				const float *lg = logits + (size_t) b * K;
				float *dl = dlogits + (size_t) b * K;
				float mx = -INFINITY, lse;
				double s = 0;
				int y = t.cat[b];
				for (int k = 0; k < K; k++)
					mx = fmaxf(mx, lg[k]);
				for (int k = 0; k < K; k++)
					s += exp((double) (lg[k] - mx));
				lse = mx + (float) log(s);
				tl = (y >= 0 && y < K) ? lse - lg[y] + 1e-4f * lse * lse : NAN;  /* bad label: NaN -> numeric error */
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

cudaError_t
hw_k_loss_forward_backward(cudaStream_t s, float *loss, float *dZ, float *dlogits, const float *Z,
						   const float *logits, const HwLossTargets *t, int stype, int B, int D, int K,
						   float scale)
{
	if (B <= 0) return cudaSuccess;
	loss_kernel<<<(B + 63) / 64, 64, 0, s>>>(loss, dZ, dlogits, Z, logits, *t, stype, B, D, K, scale);
	return cudaGetLastError();
}
