/*
 * backend_cuda_internal.h: what the CUDA backend's files share
 * (backend_cuda.cu: context and life cycle; backend_cuda_ops.cu: the
 * entries of backend.h's table): the per-GPU context, its sticky error,
 * grow-only scratch.  Not part of the library's interface.
 */
#ifndef HW_BACKEND_CUDA_INTERNAL_H
#define HW_BACKEND_CUDA_INTERNAL_H

#include "hw_cuda.h"
#include "hw_cuda_api.h"

typedef struct CudaCtx
{
	int            device;
	cudaStream_t   stream;
	HwCudaMem      mem;
	HwCudaBlas     blas;
	HwCudaStaging  staging;
	HwError        err;           /* first error (sticky) */
	int            failed;
	double        *d_result;      /* [1] device result of sumsq */
	double        *h_result;      /* [1] pinned */
	/* grow-only device scratch */
	float         *fscr;   size_t fscr_n;     /* reduction partials */
	float         *fscr2;  size_t fscr2_n;    /* second float scratch (qknorm tmp) */
	double        *dscr;   size_t dscr_n;     /* sumsq partials */
	int32_t       *iscr;   size_t iscr_n;     /* host index arrays uploaded */
	void          *escr;   size_t escr_n;     /* encoder backward scratch (bytes) */
	char           name[160];
} CudaCtx;

typedef struct CudaPlan
{
	HwCudaAttnPlan plan;
	void          *tensors;       /* device copies of the mask tensors */
	int            B, S, H_unused;
} CudaPlan;

#define CTX(be) ((CudaCtx *) (be)->ctx)

/* Keeps the first error of the backend (sticky); later ones are dropped. */
void cu_keep(CudaCtx *c, int rc, const HwError *e);
/* cu_keep for a CUDA runtime status (nothing on cudaSuccess). */
void cu_check(CudaCtx *c, cudaError_t e, const char *what);
/* Entry prologue: false after the first error; else the device made current. */
bool cu_enter(CudaCtx *c);

/* *buf holds at least n T's (grown, never shrunk; contents not kept); NULL
 * with the error kept when the device is out of memory. */
template <typename T>
static T *
grow(CudaCtx *c, T **buf, size_t *cap, size_t n, const char *what)
{
	if (*cap >= n && *buf)
		return *buf;
	if (*buf)
		hw_cuda_mem_free(&c->mem, *buf);
	*buf = NULL;
	*cap = 0;
	void *p = NULL;
	HwError er;
	int rc = hw_cuda_mem_alloc(&c->mem, (n ? n : 1) * sizeof(T), what, &p, &er);
	if (rc != HW_OK)
	{
		cu_keep(c, rc, &er);
		return NULL;
	}
	*buf = (T *) p;
	*cap = n;
	return *buf;
}

/* The table of backend.h, every entry guarded against C++ exceptions
 * (backend_cuda_ops.cu); built on first use. */
const HwBackendOps *hw_cuda_ops_table(void);
/* The table's destroy entry (backend_cuda.cu). */
void cu_destroy(HwBackend *be);

#endif /* HW_BACKEND_CUDA_INTERNAL_H */
