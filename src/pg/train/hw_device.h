/* hw_device.h: backend selection for workers and prediction (device.c). */
#ifndef HW_DEVICE_H
#define HW_DEVICE_H

#include "core/backend.h"
#include "core/collective.h"
#include "pg/train/hw_train.h"

/* 'cpu' | 'cuda' | 'auto'; ERROR with a hint when 'cuda' is not available.
 * threads 0 = OpenMP default.  job may be NULL (prediction). */
HwBackend  *hw_pg_backend_create(const char *device, int threads, HwJobShared *job);
/* The same for data-parallel rank `rank`: on CUDA its GPU is device `rank`
 * (ERROR when there are not that many). */
HwBackend  *hw_pg_backend_create_rank(const char *device, int threads, int rank, HwJobShared *job);
/* The collective of nranks ranks on bes[] (all of one kind): in-process on
 * the CPU, NCCL on CUDA (collective.h); ERROR when it cannot start. */
HwCollective *hw_pg_collective_create(HwBackend **bes, int nranks, double timeout_s);
const char *hw_pg_backend_name(HwBackend *be);
/* The CUDA backend on GPU `device`, or NULL with the reason in *err (not
 * built, no such GPU visible, the GPU busy or out of memory); never ERROR. */
HwBackend  *hw_pg_cuda_backend_try(int device, HwError *err);
/* Number of visible CUDA devices (0 with *why_not set when none / not built). */
int         hw_pg_cuda_device_count(const char **why_not);

#endif
