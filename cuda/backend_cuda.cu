/*
 * backend_cuda.cu: the CUDA backend: its per-GPU context, sticky error and
 * life cycle, and the library's extern "C" entries; the table of
 * src/core/backend.h is filled in backend_cuda_ops.cu.
 *
 * One backend = one GPU, one compute stream, one cuBLAS handle, a caching
 * device allocator with cudaMemGetInfo checks (memory.cu), pinned staging
 * and a copy stream for host->device copies (memory.cu), and device scratch
 * for the deterministic reductions.  All compute is ordered on the one
 * stream; entries are asynchronous; memcpy_d2h, sumsq and synchronize wait.
 *
 * Errors: backend.h's entries return void, so the first CUDA / cuBLAS error
 * is kept in the context (sticky); later entries do nothing, d2h copies fill
 * their destination with NaN bytes and sumsq returns NaN, so the model stops
 * with HW_ERR_NUMERIC; hw_backend_cuda_last_error gives the real message.
 * alloc returns NULL with the memory message kept the same way.
 *
 * Threads: an entry may be called from any host thread (the multi-GPU worker
 * runs one thread per GPU); each entry makes its device current first.
 * The library never calls exit/abort and never touches PostgreSQL.
 */
#include "backend_cuda_internal.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
cu_keep(CudaCtx *c, int rc, const HwError *e)
{
	if (rc != HW_OK && !c->failed)
	{
		c->err = *e;
		c->err.code = rc;
		c->failed = 1;
	}
}

void
cu_check(CudaCtx *c, cudaError_t e, const char *what)
{
	if (e != cudaSuccess && !c->failed)
	{
		HwError er;
		hw_cuda_err(&er, e, what, __FILE__, 0);
		cu_keep(c, er.code, &er);
	}
}

/* Entry prologue: nothing after the first error; the device made current. */
bool
cu_enter(CudaCtx *c)
{
	if (c->failed)
		return false;
	cudaError_t e = cudaSetDevice(c->device);
	if (e != cudaSuccess)
	{
		cu_check(c, e, "cudaSetDevice");
		return false;
	}
	return true;
}

/* ---------------------------------------------------------------- lifetime */

static void
ctx_release(CudaCtx *c)
{
	if (!c)
		return;
	cudaSetDevice(c->device);
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	hw_cuda_staging_destroy(&c->staging);
	hw_cuda_blas_destroy(&c->blas, &c->mem);
	if (c->h_result)
		cudaFreeHost(c->h_result);
	hw_cuda_mem_release_all(&c->mem);      /* every device allocation, the model's included */
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}

void
cu_destroy(HwBackend *be)
{
	if (!be)
		return;
	try
	{
		ctx_release(CTX(be));
	}
	catch (...)
	{
		/* nothing to report to: the backend is going away (see hw_cuda.h) */
	}
	free(be);
}


/* Every entry of backend.h must be filled, except those backend.h calls
 * optional (NULL = the model falls back): if backend.h grew an entry that
 * this file does not implement yet, refuse clearly instead of crashing on a
 * NULL pointer later.  Needs no GPU, so the GPU test runs it everywhere. */
extern "C" int
hw_cuda_backend_check_table(HwError *err)
{
	static const size_t optional[] = { offsetof(HwBackendOps, gemm_rows_batched), offsetof(HwBackendOps, bf16_usable),
									   offsetof(HwBackendOps, bf16_preferred),
									   offsetof(HwBackendOps, f32_weight_pack), offsetof(HwBackendOps, f32_weight_free),
									   offsetof(HwBackendOps, gemm_f32_packed),
									   offsetof(HwBackendOps, bf16_weight_pack), offsetof(HwBackendOps, bf16_weight_free),
									   offsetof(HwBackendOps, gemm_bf16), offsetof(HwBackendOps, gemm_bf16_any),
									   offsetof(HwBackendOps, attn_forward_seqs),
									   offsetof(HwBackendOps, attn_forward_rows), offsetof(HwBackendOps, attn_forward_cells),
									   offsetof(HwBackendOps, gemm_rows_ragged), offsetof(HwBackendOps, scatter_rows),
									   offsetof(HwBackendOps, parallel_items) };
	const char *base = (const char *) hw_cuda_ops_table();
	for (size_t off = offsetof(HwBackendOps, destroy); off < sizeof(HwBackendOps); off += sizeof(void *))
	{
		bool is_optional = false;
		for (size_t j = 0; j < sizeof(optional) / sizeof(optional[0]); j++)
			is_optional |= optional[j] == off;
		void *fn;
		memcpy(&fn, base + off, sizeof(fn));
		if (!fn && !is_optional)
			return hw_error_set(err, HW_ERR_INTERNAL,
								"the CUDA backend does not implement entry %zu of backend.h's table; "
								"update cuda/backend_cuda_ops.cu", off / sizeof(void *));
	}
	return HW_OK;
}

extern "C" HwBackend *
hw_backend_cuda_create(int device, HwError *err)
{
	HW_CXX_TRY
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0)
	{
		cudaGetLastError();
		hw_error_set(err, HW_ERR_INVALID,
					 "no CUDA device available (%s); use device => 'cpu', or check the NVIDIA driver",
					 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return NULL;
	}
	if (device < 0 || device >= ndev)
	{
		hw_error_set(err, HW_ERR_INVALID, "CUDA device %d does not exist (this machine has %d: 0..%d)",
					 device, ndev, ndev - 1);
		return NULL;
	}
	if (hw_cuda_backend_check_table(err) != HW_OK)
		return NULL;
	HwBackend *be = (HwBackend *) calloc(1, sizeof(HwBackend));
	CudaCtx *c = (CudaCtx *) calloc(1, sizeof(CudaCtx));
	int rc = HW_OK;
	if (!be || !c)
	{
		free(be);
		free(c);
		hw_error_set(err, HW_ERR_NOMEM, "out of host memory creating the CUDA backend");
		return NULL;
	}
	c->device = device;
	c->mem.device = device;
	c->mem.reserve_bytes = 256u << 20;     /* headroom for the driver, cuBLAS kernels, NCCL */
	HW_CUDA_GOTO(err, rc, fail, cudaSetDevice(device));
	HW_CUDA_GOTO(err, rc, fail, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	if ((rc = hw_cuda_blas_init(&c->blas, &c->mem, c->stream, err)) != HW_OK)
		goto fail;
	if ((rc = hw_cuda_staging_init(&c->staging, 8u << 20, err)) != HW_OK)
		goto fail;
	HW_CUDA_GOTO(err, rc, fail, cudaMallocHost((void **) &c->h_result, sizeof(double)));
	{
		void *p = NULL;
		if ((rc = hw_cuda_mem_alloc(&c->mem, sizeof(double), "sumsq result", &p, err)) != HW_OK)
			goto fail;
		c->d_result = (double *) p;
	}
	{
		char desc[128] = "?";
		hw_cuda_device_describe(device, desc, sizeof(desc));
		snprintf(c->name, sizeof(c->name), "GPU %d: %s", device, desc);
	}
	be->ops = hw_cuda_ops_table();
	be->ctx = c;
	be->n_threads = 0;
	return be;
fail:
	if (rc == HW_OK)        /* every path sets rc; keep err meaningful anyway */
		hw_error_set(err, HW_ERR_INTERNAL, "CUDA backend setup failed on device %d", device);
	ctx_release(c);
	free(be);
	return NULL;
	HW_CXX_CATCH(err, NULL)
}

extern "C" int
hw_cuda_backend_create(int device, HwBackend **out, HwError *err)
{
	/* no try needed: the one callee is guarded and the rest cannot throw */
	HwError er;
	HwError *e = err ? err : &er;
	e->code = HW_OK;
	*out = hw_backend_cuda_create(device, e);
	return *out ? HW_OK : (e->code != HW_OK ? e->code : HW_ERR_INTERNAL);
}

extern "C" int
hw_backend_cuda_last_error(HwBackend *be, HwError *err)
{
	HW_CXX_TRY
	CudaCtx *c = CTX(be);
	if (!c->failed)
	{
		/* surface asynchronous kernel faults too */
		cudaSetDevice(c->device);
		cu_check(c, cudaStreamSynchronize(c->stream), "synchronize");
	}
	if (!c->failed)
		return HW_OK;
	int code = c->err.code != HW_OK ? c->err.code : HW_ERR_INTERNAL;
	if (err)
	{
		*err = c->err;
		err->code = code;
	}
	c->failed = 0;
	memset(&c->err, 0, sizeof(c->err));
	return code;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

extern "C" int
hw_backend_cuda_describe(HwBackend *be, char *buf, size_t buflen)
{
	HW_CXX_TRY
	CudaCtx *c = CTX(be);
	snprintf(buf, buflen, "%s | gemm %s | %.3f GiB in use, peak %.3f GiB", c->name,
			 hw_cuda_gemm_mode_name(hw_cuda_gemm_mode()),
			 c->mem.live_bytes / 1073741824.0, c->mem.peak_bytes / 1073741824.0);
	return HW_OK;
	HW_CXX_CATCH(NULL, HW_ERR_INTERNAL)
}

extern "C" int
hw_backend_cuda_bf16_peak(HwBackend *be, int n, double *tflops, HwError *err)
{
	HW_CXX_TRY
	CudaCtx *c = CTX(be);
	HW_CUDA_TRY(err, cudaSetDevice(c->device));
	return hw_cuda_measure_bf16_peak(&c->blas, &c->mem, c->stream, n > 0 ? n : 8192, 10, tflops, err);
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

extern "C" int
hw_backend_cuda_set_gemm_mode(const char *mode)
{
	HW_CXX_TRY
	if (!mode) return HW_ERR_INVALID;
	if (strcmp(mode, "bf16") == 0) hw_cuda_gemm_set_mode(HW_GEMM_BF16);
	else if (strcmp(mode, "bf16x") == 0) hw_cuda_gemm_set_mode(HW_GEMM_BF16X);
	else if (strcmp(mode, "tf32") == 0) hw_cuda_gemm_set_mode(HW_GEMM_TF32);
	else if (strcmp(mode, "fp32") == 0) hw_cuda_gemm_set_mode(HW_GEMM_FP32);
	else return HW_ERR_INVALID;
	return HW_OK;
	HW_CXX_CATCH(NULL, HW_ERR_INTERNAL)
}

extern "C" size_t
hw_backend_cuda_peak_bytes(HwBackend *be)
{
	HW_CXX_TRY
	return CTX(be)->mem.peak_bytes;
	HW_CXX_CATCH(NULL, 0)
}

/* internal (nccl.cu) */
cudaStream_t hw_backend_cuda_stream(HwBackend *be) { return CTX(be)->stream; }
int          hw_backend_cuda_device(HwBackend *be) { return CTX(be)->device; }
