/*
 * device_query.cu: the smallest piece of the CUDA backend: how many GPUs,
 * which ones, how much memory.  Exported with C linkage so the training
 * worker can dlopen headwater_cuda.so and ask before choosing a device.
 */
#include "hw_cuda.h"
#include <stdio.h>
#include <string.h>

extern "C" int
hw_cuda_device_count(void)
{
	HW_CXX_TRY
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess)
		return 0;
	return n;
	HW_CXX_CATCH(NULL, 0)
}

/* Writes a one-line description of device `dev` into buf; returns 0 on success. */
extern "C" int
hw_cuda_device_describe(int dev, char *buf, size_t buflen)
{
	HW_CXX_TRY
	cudaDeviceProp prop;
	size_t free_b = 0, total_b = 0;

	if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
		return -1;
	if (cudaSetDevice(dev) == cudaSuccess)
		cudaMemGetInfo(&free_b, &total_b);
	snprintf(buf, buflen, "%s (sm_%d%d, %d SMs, %.1f GiB free of %.1f GiB)",
			 prop.name, prop.major, prop.minor, prop.multiProcessorCount,
			 free_b / 1073741824.0, total_b / 1073741824.0);
	return 0;
	HW_CXX_CATCH(NULL, -1)
}
