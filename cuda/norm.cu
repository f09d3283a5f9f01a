/*
 * norm.cu: zero-centred RMSNorm and the attention QK-norm, forward and backward.
 *
 *   rmsnorm: out = (1+g) * x * rstd,  rstd = 1/sqrt(mean(x^2) + 1e-6)     (per row)
 *   qknorm : qs = q/max(|q|,1e-6) * tau_h/sqrt(dh), kn = k/max(|k|,1e-6)  (per token, head)
 *
 * One warp per row for RMSNorm (lane-strided sums, then a fixed butterfly:
 * deterministic); the gain gradient is a two-pass chunked column sum (util.cu).
 * QK-norm: one thread per (token, head), dh <= 128 values in a loop.  The
 * formulas mirror src/backend/backend_cpu_norm.c line by line.
 */
#include "hw_cuda.h"

__device__ __forceinline__ float
warp_sum(float a)
{
	for (int o = 16; o > 0; o >>= 1)
		a += __shfl_xor_sync(0xffffffffu, a, o);
	return a;
}

/* 8 warps per block, warp w of block b handles row b*8+w */
__global__ void
rmsnorm_fwd_kernel(float *out, float *rstd, const float *x, const float *g, int N, int D)
{
	int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
	if (row >= N)
		return;
	const float *xr = x + (size_t) row * D;
	float ss = 0.f;
	for (int d = lane; d < D; d += 32)
		ss += xr[d] * xr[d];
	ss = warp_sum(ss);
	float r = 1.0f / sqrtf(ss / D + 1e-6f);
	if (lane == 0)
		rstd[row] = r;
	float *o = out + (size_t) row * D;
	for (int d = lane; d < D; d += 32)
		o[d] = (1.0f + g[d]) * xr[d] * r;
}

cudaError_t
hw_k_rmsnorm_forward(cudaStream_t s, float *out, float *rstd, const float *x, const float *g, int N, int D)
{
	if (N <= 0 || D <= 0) return cudaSuccess;
	rmsnorm_fwd_kernel<<<(N + 7) / 8, 256, 0, s>>>(out, rstd, x, g, N, D);
	return cudaGetLastError();
}

__global__ void
rmsnorm_bwd_dx_kernel(float *dx, const float *dout, const float *x, const float *rstd, const float *g, int N, int D)
{
	int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
	if (row >= N)
		return;
	const float *xr = x + (size_t) row * D, *dy = dout + (size_t) row * D;
	float *dxr = dx + (size_t) row * D;
	float r = rstd[row], dot = 0.f;
	for (int d = lane; d < D; d += 32)
		dot += dy[d] * (1.0f + g[d]) * xr[d];
	dot = warp_sum(dot);
	float k = r * r * r * dot / D;
	for (int d = lane; d < D; d += 32)
		dxr[d] += r * (1.0f + g[d]) * dy[d] - k * xr[d];
}

/* part[c, d] = sum over rows n of chunk c of dy[n,d] * x[n,d] * rstd[n] */
__global__ void
rmsnorm_bwd_dg_part_kernel(float *part, const float *dout, const float *x, const float *rstd, int N, int D)
{
	int c = blockIdx.x, d = blockIdx.y * blockDim.x + threadIdx.x;
	if (d >= D)
		return;
	int n0 = c * HW_CUDA_RCH, n1 = min(N, n0 + HW_CUDA_RCH);
	float a = 0.f;
	for (int n = n0; n < n1; n++)
		a += dout[(size_t) n * D + d] * x[(size_t) n * D + d] * rstd[n];
	part[(size_t) c * D + d] = a;
}

__global__ void
finish_kernel(float *out, const float *part, int nch, int N)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= N)
		return;
	float a = 0.f;
	for (int c = 0; c < nch; c++)
		a += part[(size_t) c * N + j];
	out[j] += a;
}

cudaError_t
hw_k_rmsnorm_backward(cudaStream_t s, float *dx, float *dg, float *part, const float *dout,
					  const float *x, const float *rstd, const float *g, int N, int D)
{
	if (N <= 0 || D <= 0) return cudaSuccess;
	int nch = hw_cuda_nch(N);
	rmsnorm_bwd_dx_kernel<<<(N + 7) / 8, 256, 0, s>>>(dx, dout, x, rstd, g, N, D);
	rmsnorm_bwd_dg_part_kernel<<<dim3(nch, (D + 127) / 128), 128, 0, s>>>(part, dout, x, rstd, N, D);
	finish_kernel<<<(D + 127) / 128, 128, 0, s>>>(dg, part, nch, D);
	return cudaGetLastError();
}

/* ------------------------------------------------------------------ QK-norm */

__global__ void
qknorm_fwd_kernel(float *qs, float *kn, float *qnorm, float *knorm, const float *qkvg, const float *tau,
				  int N, int H, int dh)
{
	size_t g = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= (size_t) N * H)
		return;
	int n = g / H, h = g % H, D = H * dh;
	const float *q = qkvg + (size_t) n * 4 * D + h * dh, *k = q + D;
	float sq = 0.f, sk = 0.f;
	for (int i = 0; i < dh; i++)
	{
		sq += q[i] * q[i];
		sk += k[i] * k[i];
	}
	float nq = sqrtf(sq), nk = sqrtf(sk);
	float fq = tau[h] * (1.0f / sqrtf((float) dh)) / fmaxf(nq, 1e-6f);
	float fk = 1.0f / fmaxf(nk, 1e-6f);
	/* a NULL output's part is skipped (backend.h) */
	if (qs)
	{
		float *qo = qs + (size_t) n * D + h * dh;
		qnorm[g] = nq;
		for (int i = 0; i < dh; i++)
			qo[i] = q[i] * fq;
	}
	if (kn)
	{
		float *ko = kn + (size_t) n * D + h * dh;
		knorm[g] = nk;
		for (int i = 0; i < dh; i++)
			ko[i] = k[i] * fk;
	}
}

/* dst[n, off + d] = src[n, d] for a [N, D] block inside rows of width ld */
__global__ void
copy_block_kernel(float *dst, int ld_dst, const float *src, int ld_src, int N, int D)
{
	size_t tot = (size_t) N * D;
	for (size_t e = (size_t) blockIdx.x * blockDim.x + threadIdx.x; e < tot; e += (size_t) gridDim.x * blockDim.x)
	{
		size_t n = e / D, d = e % D;
		dst[n * ld_dst + d] = src[n * ld_src + d];
	}
}

static unsigned grid1(size_t n) { size_t g = (n + 255) / 256; return (unsigned) (g < 1048576 ? g : 1048576); }

cudaError_t
hw_k_qknorm_forward(cudaStream_t s, float *qs, float *kn, float *v, float *qnorm, float *knorm,
					const float *qkvg, const float *tau, int N, int H, int dh)
{
	if (N <= 0 || H <= 0) return cudaSuccess;
	int D = H * dh;
	qknorm_fwd_kernel<<<grid1((size_t) N * H), 256, 0, s>>>(qs, kn, qnorm, knorm, qkvg, tau, N, H, dh);
	if (v)
		copy_block_kernel<<<grid1((size_t) N * D), 256, 0, s>>>(v, D, qkvg + 2 * D, 4 * D, N, D);
	return cudaGetLastError();
}

/* y = x / max(|x|, eps): dx = (dy - y (y.dy)) / |x| when |x| > eps, else dy / eps */
__device__ __forceinline__ void
l2norm_bwd(float *dx, const float *x, float nrm, const float *dy, float dyscale, int n)
{
	if (nrm > 1e-6f)
	{
		float dot = 0.f, inv = 1.0f / nrm;
		for (int i = 0; i < n; i++)
			dot += x[i] * inv * (dy[i] * dyscale);
		for (int i = 0; i < n; i++)
			dx[i] = ((dy[i] * dyscale) - x[i] * inv * dot) * inv;
	}
	else
		for (int i = 0; i < n; i++)
			dx[i] = (dy[i] * dyscale) / 1e-6f;
}

__global__ void
qknorm_bwd_kernel(float *dqkvg, float *tmp, const float *dqs, const float *dkn, const float *qkvg,
				  const float *qnorm, const float *knorm, const float *tau, int N, int H, int dh)
{
	size_t g = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= (size_t) N * H)
		return;
	int n = g / H, h = g % H, D = H * dh;
	float isq = 1.0f / sqrtf((float) dh);
	const float *q = qkvg + (size_t) n * 4 * D + h * dh, *k = q + D;
	const float *gq = dqs + (size_t) n * D + h * dh, *gk = dkn + (size_t) n * D + h * dh;
	float *drow = dqkvg + (size_t) n * 4 * D;
	float nq = qnorm[g], nk = knorm[g];
	float sc = tau[h] * isq, t = 0.f, iq = 1.0f / fmaxf(nq, 1e-6f);
	for (int i = 0; i < dh; i++)
		t += gq[i] * q[i] * iq;
	tmp[g] = t * isq;
	l2norm_bwd(drow + h * dh, q, nq, gq, sc, dh);
	l2norm_bwd(drow + D + h * dh, k, nk, gk, 1.0f, dh);
}

cudaError_t
hw_k_qknorm_backward(cudaStream_t s, float *dqkvg, float *dtau, float *tmp, float *part,
					 const float *dqs, const float *dkn, const float *dv,
					 const float *qkvg, const float *qnorm, const float *knorm,
					 const float *tau, int N, int H, int dh)
{
	if (N <= 0 || H <= 0) return cudaSuccess;
	int D = H * dh;
	qknorm_bwd_kernel<<<grid1((size_t) N * H), 256, 0, s>>>(dqkvg, tmp, dqs, dkn, qkvg, qnorm, knorm, tau, N, H, dh);
	copy_block_kernel<<<grid1((size_t) N * D), 256, 0, s>>>(dqkvg + 2 * D, 4 * D, dv, D, N, D);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	return hw_k_colsum(s, dtau, part, tmp, N, H, H);
}
