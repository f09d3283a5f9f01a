/*
 * activations.cu: sigmoid-gated residual and SwiGLU, forward and backward.
 *
 *   gate:   xout = xin + sigmoid(gpre) * o        (gpre rows of stride ld_g:
 *           the gate block of the fused [q|k|v|gate] projection)
 *   SwiGLU: h = silu(gu[:, :F]) * gu[:, F:]
 *
 * Elementwise, one thread per element (grid-stride), fp32; formulas as in
 * src/backend/backend_cpu_pointwise.c.
 */
#include "hw_cuda.h"

__device__ __forceinline__ float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

static unsigned grid1(size_t n) { size_t g = (n + 255) / 256; return (unsigned) (g < 1048576 ? g : 1048576); }

#define GRID_STRIDE(e, tot) \
	for (size_t e = (size_t) blockIdx.x * blockDim.x + threadIdx.x; e < (tot); e += (size_t) gridDim.x * blockDim.x)

__global__ void
gate_fwd_kernel(float *xout, const float *xin, const float *gp, int ld, const float *o, int N, int D)
{
	GRID_STRIDE(e, (size_t) N * D)
	{
		size_t n = e / D, d = e % D;
		xout[e] = xin[e] + sigm(gp[n * ld + d]) * o[e];
	}
}

__global__ void
gate_bwd_kernel(float *dgp, int ld, float *dO, const float *dx, const float *gp, const float *o, int N, int D)
{
	GRID_STRIDE(e, (size_t) N * D)
	{
		size_t n = e / D, d = e % D;
		float s = sigm(gp[n * ld + d]), g = dx[e];
		dO[e] = g * s;
		dgp[n * ld + d] = g * o[e] * s * (1.0f - s);
	}
}

__global__ void
swiglu_fwd_kernel(float *h, const float *gu, int N, int F)
{
	GRID_STRIDE(e, (size_t) N * F)
	{
		size_t n = e / F, f = e % F;
		float g = gu[n * 2 * F + f], u = gu[n * 2 * F + F + f];
		h[e] = g * sigm(g) * u;
	}
}

__global__ void
swiglu_bwd_kernel(float *dgu, const float *dh, const float *gu, int N, int F)
{
	GRID_STRIDE(e, (size_t) N * F)
	{
		size_t n = e / F, f = e % F;
		float g = gu[n * 2 * F + f], u = gu[n * 2 * F + F + f], d = dh[e];
		float s = sigm(g);
		dgu[n * 2 * F + f] = d * u * s * (1.0f + g * (1.0f - s));
		dgu[n * 2 * F + F + f] = d * g * s;
	}
}

cudaError_t
hw_k_gate_residual_forward(cudaStream_t s, float *xout, const float *xin, const float *gpre, int ld_g,
						   const float *o, int N, int D)
{
	if (N <= 0 || D <= 0) return cudaSuccess;
	gate_fwd_kernel<<<grid1((size_t) N * D), 256, 0, s>>>(xout, xin, gpre, ld_g, o, N, D);
	return cudaGetLastError();
}

cudaError_t
hw_k_gate_residual_backward(cudaStream_t s, float *dgpre, int ld_g, float *dO, const float *dxout,
							const float *gpre, const float *o, int N, int D)
{
	if (N <= 0 || D <= 0) return cudaSuccess;
	gate_bwd_kernel<<<grid1((size_t) N * D), 256, 0, s>>>(dgpre, ld_g, dO, dxout, gpre, o, N, D);
	return cudaGetLastError();
}

cudaError_t
hw_k_swiglu_forward(cudaStream_t s, float *h, const float *gu, int N, int F)
{
	if (N <= 0 || F <= 0) return cudaSuccess;
	swiglu_fwd_kernel<<<grid1((size_t) N * F), 256, 0, s>>>(h, gu, N, F);
	return cudaGetLastError();
}

cudaError_t
hw_k_swiglu_backward(cudaStream_t s, float *dgu, const float *dh, const float *gu, int N, int F)
{
	if (N <= 0 || F <= 0) return cudaSuccess;
	swiglu_bwd_kernel<<<grid1((size_t) N * F), 256, 0, s>>>(dgu, dh, gu, N, F);
	return cudaGetLastError();
}
