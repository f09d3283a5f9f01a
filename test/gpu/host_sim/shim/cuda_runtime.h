/* host_sim shim: the CUDA runtime API surface that the kernel files of cuda/ use. */
#ifndef HW_SIM_CUDA_RUNTIME_H
#define HW_SIM_CUDA_RUNTIME_H
#include "sim.h"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
#define cudaSuccess 0
#define cudaErrorInvalidValue 1
#define cudaErrorMemoryAllocation 2
#define cudaErrorIllegalAddress 700

/* Fault injection (sim_inject.cc, hw_sim_inject): the `after`-th call from now
 * (0 = the next) of cudaGetLastError (i.e. the check after a kernel launch),
 * cudaMemcpyAsync or cudaMemsetAsync fails: kind 1 throws a
 * std::runtime_error, kind 2 returns cudaErrorIllegalAddress (what a faulting
 * kernel gives).  For the tests of the backend's error paths. */
inline int sim_fault_kind, sim_fault_after = -1;
inline cudaError_t
sim_fault(void)
{
	if (sim_fault_after < 0 || sim_fault_after-- > 0)
		return cudaSuccess;
	if (sim_fault_kind == 1)
		throw std::runtime_error("exception injected by the host simulation");
	return cudaErrorIllegalAddress;
}
inline cudaError_t cudaGetLastError() { return sim_fault(); }
inline const char *cudaGetErrorString(cudaError_t e)
{ return e == cudaErrorIllegalAddress ? "an illegal memory access was encountered (injected by the host simulation)" : "sim"; }
inline const char *cudaGetErrorName(cudaError_t e) { return e == cudaErrorIllegalAddress ? "cudaErrorIllegalAddress" : "sim"; }
inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t = 0)
{ cudaError_t e = sim_fault(); if (e) return e; memset(p, v, n); return cudaSuccess; }

/* The rest of the runtime, for backend_cuda.cu / memory.cu / gemm.cu /
 * device_query.cu: one simulated device whose memory is host memory,
 * everything synchronous (streams and events are tokens). */
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
#define cudaStreamNonBlocking 1
#define cudaEventDisableTiming 2
struct cudaDeviceProp { char name[256]; int major, minor, multiProcessorCount; };
inline int sim_token;
inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidValue; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{ if (d) return cudaErrorInvalidValue; strcpy(p->name, "host simulation"); p->major = 9; p->minor = 0; p->multiProcessorCount = 1; return cudaSuccess; }
inline cudaError_t cudaMemGetInfo(size_t *f, size_t *t) { *f = (size_t) 8 << 30; *t = (size_t) 16 << 30; return cudaSuccess; }
inline cudaError_t cudaMalloc(void **p, size_t n) { *p = aligned_alloc(256, (n + 255) & ~(size_t) 255); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaMallocHost(void **p, size_t n) { return cudaMalloc(p, n); }
inline cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t = 0)
{ cudaError_t e = sim_fault(); if (e) return e; memmove(d, s, n); return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { *s = &sim_token; return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { *e = &sim_token; return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = &sim_token; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0) { return cudaSuccess; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) { *ms = 1.0f; return cudaSuccess; }
inline __nv_bfloat16 __float2bfloat16_rn(float f)
{ uint32_t u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); __nv_bfloat16 h; h.x = (uint16_t) (u >> 16); return h; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
struct __half { uint16_t x; };
inline __half __ushort_as_half(unsigned short u) { __half h; h.x = u; return h; }
inline float
__half2float(__half h)
{
	uint32_t s = (h.x & 0x8000u) << 16, e = (h.x >> 10) & 0x1f, m = h.x & 0x3ff, u;
	if (e == 0)
	{
		if (m == 0) u = s;
		else { int k = -1; do { m <<= 1; k++; } while (!(m & 0x400)); u = s | ((uint32_t) (112 - k) << 23) | ((m & 0x3ff) << 13); }
	}
	else if (e == 31) u = s | 0x7f800000u | (m << 13);
	else u = s | ((e + 112) << 23) | (m << 13);
	float f;
	memcpy(&f, &u, 4);
	return f;
}
#endif
