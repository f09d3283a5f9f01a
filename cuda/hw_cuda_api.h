/*
 * hw_cuda_api.h: the C entry points of headwater_cuda.so (plain C header).
 *
 * The training worker never links headwater_cuda.so: it dlopen()s it (only
 * when device => 'cuda' / 'auto' asks for it, inside the background worker)
 * and resolves these names with dlsym; the typedefs below are the pointer
 * types to cast to.  The GPU test program and bench/train_step_cuda link it
 * directly.  Everything returns an HwErrorCode (0 = HW_OK) and fills err.
 */
#ifndef HW_CUDA_API_H
#define HW_CUDA_API_H

#include "core/hw_common.h"
#include "core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* device_query.cu */
int hw_cuda_device_count(void);                         /* 0 when no driver / no GPU */
int hw_cuda_device_describe(int dev, char *buf, size_t buflen);

/* backend_cuda.cu: the backend table of backend.h on GPU `device`. */
HwBackend *hw_backend_cuda_create(int device, HwError *err);
int        hw_cuda_backend_create(int device, HwBackend **out, HwError *err);   /* same, status form */
/* HW_OK when every non-optional entry of backend.h's table is filled (no GPU needed). */
int        hw_cuda_backend_check_table(HwError *err);

/*
 * backend.h's compute entries return void.  On this backend the first CUDA /
 * cuBLAS error of any entry is kept (later entries then do nothing, d2h copies
 * return NaN bytes and sumsq NaN, so the model stops with a numeric error);
 * this call returns that first error (HW_OK if none) with its message and
 * clears it.  The worker calls it whenever a model call fails on CUDA.
 */
int    hw_backend_cuda_last_error(HwBackend *be, HwError *err);
/* "NVIDIA H100 ... | gemm bf16 | 1.23 GiB in use, peak 2.34 GiB" */
int    hw_backend_cuda_describe(HwBackend *be, char *buf, size_t buflen);
/* Dense bf16 GEMM peak (TFLOP/s) measured now with cuBLAS, n x n x n. */
int    hw_backend_cuda_bf16_peak(HwBackend *be, int n, double *tflops, HwError *err);
/* GEMM arithmetic: "bf16" (default), "bf16x", "tf32", "fp32"; process-wide. */
int    hw_backend_cuda_set_gemm_mode(const char *mode);
size_t hw_backend_cuda_peak_bytes(HwBackend *be);

/*
 * nccl.cu: several GPUs of one machine, one thread per GPU.
 * hw_cuda_nccl_create makes one communicator per listed device
 * (ncclCommInitAll); rank r belongs to devices[r].  From the thread that owns
 * rank r, hw_cuda_nccl_allreduce_avg averages `n` floats of a device buffer
 * of that rank's backend in place (ncclAvg), ordered after the work already
 * queued on that backend's stream, and waits for it.
 */
typedef struct HwCudaNccl HwCudaNccl;
int  hw_cuda_nccl_available(void);                       /* 1 if built with NCCL */
int  hw_cuda_nccl_create(int ndev, const int *devices, HwCudaNccl **out, HwError *err);
int  hw_cuda_nccl_allreduce_avg(HwCudaNccl *nc, int rank, HwBackend *be, float *buf, size_t n, HwError *err);
/* The same for all local ranks from ONE thread (ncclGroupStart/End):
 * bes[r], bufs[r] for r = 0..ndev-1 (communicators of hw_cuda_nccl_create). */
int  hw_cuda_nccl_allreduce_avg_all(HwCudaNccl *nc, HwBackend **bes, float **bufs, size_t n, HwError *err);
/* Broadcast n floats from rank 0 (initial parameters) in place. */
int  hw_cuda_nccl_broadcast(HwCudaNccl *nc, int rank, HwBackend *be, float *buf, size_t n, HwError *err);
void hw_cuda_nccl_destroy(HwCudaNccl *nc);
/* Multi-host (docs/cuda.md): unique id bytes for the database rendezvous and
 * one communicator per process/GPU from it. */
int  hw_cuda_nccl_unique_id(unsigned char *buf, size_t buflen, size_t *idlen, HwError *err);
int  hw_cuda_nccl_create_rank(const unsigned char *id, size_t idlen, int nranks, int rank, int device,
							  HwCudaNccl **out, HwError *err);

/*
 * collective_nccl.cu: the collective interface of src/core/collective.h on
 * NCCL for nranks local ranks, rank r on bes[r]'s GPU and stream
 * (ncclCommInitAll).  Waits poll (stream, async error, abort flag, timeout)
 * and call ncclCommAbort on failure instead of blocking.  UNTESTED on a GPU.
 */
struct HwCollective;
int  hw_cuda_collective_create(int nranks, HwBackend **bes, double timeout_s, struct HwCollective **out, HwError *err);

/* dlsym pointer types */
typedef int        (*hw_cuda_device_count_fn)(void);
typedef HwBackend *(*hw_backend_cuda_create_fn)(int device, HwError *err);
typedef int        (*hw_backend_cuda_last_error_fn)(HwBackend *be, HwError *err);
typedef int        (*hw_cuda_collective_create_fn)(int nranks, HwBackend **bes, double timeout_s,
												   struct HwCollective **out, HwError *err);

#ifdef __cplusplus
}
#endif

#endif /* HW_CUDA_API_H */
