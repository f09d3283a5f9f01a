/*
 * optim.cu: fused optimiser kernels (optim.h, backend.h).
 *
 *   AdamW: g' = grad*gscale; m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
 *          p -= lr * ((m/bc1) / (sqrt(v/bc2) + eps) + wd * p)     (one pass)
 *   Muon momentum (Nesterov): buf = mu buf + g'; u = g' + mu buf
 *
 * Muon's Newton-Schulz iterations are GEMMs: the model runs them through the
 * backend's gemm entry (bf16 tensor cores on this backend, see gemm.cu), so
 * there is no separate kernel for them here.  The global grad norm is the
 * deterministic sumsq of util.cu.  bc1/bc2 (bias corrections) are computed on
 * the host with powf, exactly like the CPU backend.
 */
#include "hw_cuda.h"

static unsigned grid1(size_t n) { size_t g = (n + 255) / 256; return (unsigned) (g < 1048576 ? g : 1048576); }

__global__ void
adamw_kernel(float *p, float *m, float *v, const float *grad, size_t n, float gscale, float lr,
			 float b1, float b2, float eps, float wd, float bc1, float bc2)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t) gridDim.x * blockDim.x)
	{
		float g = grad[i] * gscale;
		float mi = b1 * m[i] + (1.0f - b1) * g;
		float vi = b2 * v[i] + (1.0f - b2) * g * g;
		float pi = p[i];
		m[i] = mi;
		v[i] = vi;
		p[i] = pi - lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * pi);
	}
}

__global__ void
muon_momentum_kernel(float *u, float *buf, const float *grad, size_t n, float gscale, float mu)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t) gridDim.x * blockDim.x)
	{
		float g = grad[i] * gscale;
		float b = mu * buf[i] + g;
		buf[i] = b;
		u[i] = g + mu * b;
	}
}

cudaError_t
hw_k_adamw_update(cudaStream_t s, float *p, float *m, float *v, const float *grad, size_t n,
				  float gscale, float lr, float b1, float b2, float eps, float wd, float bc1, float bc2)
{
	if (n == 0) return cudaSuccess;
	adamw_kernel<<<grid1(n), 256, 0, s>>>(p, m, v, grad, n, gscale, lr, b1, b2, eps, wd, bc1, bc2);
	return cudaGetLastError();
}

cudaError_t
hw_k_muon_momentum(cudaStream_t s, float *u, float *buf, const float *grad, size_t n, float gscale, float mu)
{
	if (n == 0) return cudaSuccess;
	muon_momentum_kernel<<<grid1(n), 256, 0, s>>>(u, buf, grad, n, gscale, mu);
	return cudaGetLastError();
}
