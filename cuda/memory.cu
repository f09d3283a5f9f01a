/*
 * memory.cu: device memory of the CUDA backend, and the error helpers.
 *
 * - Every device allocation goes through hw_cuda_mem_alloc, which checks
 *   cudaMemGetInfo first and, when the request does not fit, fails with a
 *   message that says how much was needed, how much is free and what to lower
 *   (batch size, seq_len, preset).  Allocations are tracked in a list so that
 *   an error, a cancel or a normal exit releases all of them
 *   (hw_cuda_mem_release_all).
 * - Freed blocks are cached (exact rounded size) and reused: the model may
 *   allocate per step, and cudaFree synchronises the whole device.  Reuse is
 *   safe because all compute is ordered on one stream (the copy stream waits
 *   for it, backend_cuda.cu).  When a request does not fit, cached blocks are
 *   returned to the driver first.
 * - Pinned staging: two page-locked host slots and two device slots with a
 *   copy stream; the batch of step n+1 is copied host->device while step n
 *   computes (events order the copy after the slot's previous consumer).
 */
#include "hw_cuda.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct HwCudaAlloc
{
	void        *ptr;
	size_t       bytes;
	const char  *what;
	int          in_use;
	HwCudaAlloc *next;
};

int
hw_cuda_error_set(HwError *err, int code, const char *fmt, ...)
{
	if (err)
	{
		va_list ap;
		va_start(ap, fmt);
		err->code = code;
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

int
hw_cuda_exception(HwError *err, const char *where, const char *what) noexcept
{
	/* vsnprintf does not throw; what() is noexcept */
	return hw_cuda_error_set(err, HW_ERR_INTERNAL, "C++ exception in %s: %s", where, what ? what : "?");
}

int
hw_cuda_err(HwError *err, cudaError_t e, const char *what, const char *file, int line)
{
	int code = (e == cudaErrorMemoryAllocation) ? HW_ERR_NOMEM : HW_ERR_INTERNAL;
	return hw_cuda_error_set(err, code, "CUDA error %s (%s) in %s at %s:%d",
							 cudaGetErrorName(e), cudaGetErrorString(e), what, file, line);
}

int
hw_cublas_err(HwError *err, cublasStatus_t s, const char *what, const char *file, int line)
{
	int code = (s == CUBLAS_STATUS_ALLOC_FAILED) ? HW_ERR_NOMEM :
		(s == CUBLAS_STATUS_INVALID_VALUE || s == CUBLAS_STATUS_NOT_SUPPORTED) ? HW_ERR_INVALID : HW_ERR_INTERNAL;
	return hw_cuda_error_set(err, code, "cuBLAS error %s (%d) in %s at %s:%d",
							 cublasGetStatusString(s), (int) s, what, file, line);
}

static double gib(size_t b) { return b / 1073741824.0; }

static size_t
round_bytes(size_t b)
{
	if (b < (1u << 20))
		return (b + 511) & ~(size_t) 511;          /* 512 B granules below 1 MiB */
	return (b + (2u << 20) - 1) & ~(size_t) ((2u << 20) - 1);   /* 2 MiB above */
}

/* Returns cached (unused) blocks to the driver. */
void
hw_cuda_mem_trim(HwCudaMem *m)
{
	HwCudaAlloc **pp = &m->head;
	while (*pp)
	{
		HwCudaAlloc *n = *pp;
		if (!n->in_use)
		{
			*pp = n->next;
			m->cached_bytes -= n->bytes;
			cudaFree(n->ptr);
			free(n);
		}
		else
			pp = &n->next;
	}
}

int
hw_cuda_mem_alloc(HwCudaMem *m, size_t bytes, const char *what, void **out, HwError *err)
{
	size_t free_b = 0, total_b = 0;
	*out = NULL;
	if (bytes == 0)
		bytes = 16;
	bytes = round_bytes(bytes);
	for (HwCudaAlloc *n = m->head; n; n = n->next)
	{
		if (!n->in_use && n->bytes == bytes)
		{
			n->in_use = 1;
			n->what = what;
			m->cached_bytes -= bytes;
			m->live_bytes += bytes;
			if (m->live_bytes > m->peak_bytes)
				m->peak_bytes = m->live_bytes;
			*out = n->ptr;
			return HW_OK;
		}
	}
	cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
	if (e != cudaSuccess)
		return hw_cuda_err(err, e, "cudaMemGetInfo", __FILE__, __LINE__);
	if (bytes + m->reserve_bytes > free_b && m->cached_bytes > 0)
	{
		hw_cuda_mem_trim(m);
		e = cudaMemGetInfo(&free_b, &total_b);
		if (e != cudaSuccess)
			return hw_cuda_err(err, e, "cudaMemGetInfo", __FILE__, __LINE__);
	}
	if (bytes + m->reserve_bytes > free_b)
		return hw_cuda_error_set(err, HW_ERR_NOMEM,
			"GPU %d: not enough memory for %s: needed %.3f GiB (+%.2f GiB headroom), "
			"%.3f GiB free of %.2f GiB (headwater holds %.3f GiB); "
			"lower the batch size, seq_len or use a smaller preset",
			m->device, what, gib(bytes), gib(m->reserve_bytes), gib(free_b), gib(total_b),
			gib(m->live_bytes));
	HwCudaAlloc *node = (HwCudaAlloc *) calloc(1, sizeof(HwCudaAlloc));
	if (!node)
		return hw_cuda_error_set(err, HW_ERR_NOMEM, "out of host memory tracking a device allocation");
	void *p = NULL;
	e = cudaMalloc(&p, bytes);
	if (e != cudaSuccess)
	{
		free(node);
		cudaGetLastError();      /* clear the error so later calls do not see it */
		return hw_cuda_error_set(err, HW_ERR_NOMEM,
			"GPU %d: cudaMalloc of %.3f GiB for %s failed (%s), %.3f GiB were reported free; "
			"lower the batch size, seq_len or use a smaller preset",
			m->device, gib(bytes), what, cudaGetErrorString(e), gib(free_b));
	}
	node->ptr = p;
	node->bytes = bytes;
	node->what = what;
	node->in_use = 1;
	node->next = m->head;
	m->head = node;
	m->live_bytes += bytes;
	if (m->live_bytes > m->peak_bytes)
		m->peak_bytes = m->live_bytes;
	*out = p;
	return HW_OK;
}

/* Marks a block free (cached for reuse); NULL and unknown pointers ignored. */
void
hw_cuda_mem_free(HwCudaMem *m, void *p)
{
	if (!p)
		return;
	for (HwCudaAlloc *n = m->head; n; n = n->next)
	{
		if (n->ptr == p && n->in_use)
		{
			n->in_use = 0;
			m->live_bytes -= n->bytes;
			m->cached_bytes += n->bytes;
			return;
		}
	}
}

void
hw_cuda_mem_release_all(HwCudaMem *m)
{
	HwCudaAlloc *n = m->head;
	while (n)
	{
		HwCudaAlloc *next = n->next;
		cudaFree(n->ptr);
		free(n);
		n = next;
	}
	m->head = NULL;
	m->live_bytes = 0;
	m->cached_bytes = 0;
}

/* ------------------------------------------------------------------ staging */

int
hw_cuda_staging_init(HwCudaStaging *st, size_t slot_bytes, HwError *err)
{
	int rc = HW_OK;
	memset(st, 0, sizeof(*st));
	st->slot_bytes = slot_bytes;
	HW_CUDA_GOTO(err, rc, fail, cudaStreamCreateWithFlags(&st->copy_stream, cudaStreamNonBlocking));
	HW_CUDA_GOTO(err, rc, fail, cudaEventCreateWithFlags(&st->compute_ready, cudaEventDisableTiming));
	HW_CUDA_GOTO(err, rc, fail, cudaEventCreateWithFlags(&st->upload_done, cudaEventDisableTiming));
	for (int i = 0; i < 2; i++)
	{
		HW_CUDA_GOTO(err, rc, fail, cudaMallocHost(&st->host[i], slot_bytes));
		HW_CUDA_GOTO(err, rc, fail, cudaEventCreateWithFlags(&st->copied[i], cudaEventDisableTiming));
		/* a slot starts free so that the first upload need not wait */
		HW_CUDA_GOTO(err, rc, fail, cudaEventRecord(st->copied[i], st->copy_stream));
	}
	return HW_OK;
fail:
	hw_cuda_staging_destroy(st);
	return rc;
}

void
hw_cuda_staging_destroy(HwCudaStaging *st)
{
	if (st->copy_stream)
		cudaStreamSynchronize(st->copy_stream);
	for (int i = 0; i < 2; i++)
	{
		if (st->host[i]) cudaFreeHost(st->host[i]);
		if (st->copied[i]) cudaEventDestroy(st->copied[i]);
	}
	if (st->compute_ready) cudaEventDestroy(st->compute_ready);
	if (st->upload_done) cudaEventDestroy(st->upload_done);
	if (st->copy_stream) cudaStreamDestroy(st->copy_stream);
	memset(st, 0, sizeof(*st));
}

/*
 * Host (pageable) -> device through the pinned slots, on the copy stream.
 * Ordering: the copy starts after the work already queued on `compute`
 * (the destination may still be read by it) and `compute` waits for the copy
 * before its next kernel.  The host returns as soon as the last chunk is in
 * a pinned slot: it never waits for the GPU to finish computing, unlike
 * cudaMemcpyAsync from pageable memory, which synchronises the stream first.
 * So the host prepares batch n+1 (sampling, plans, uploads) while the GPU
 * computes step n.
 */
int
hw_cuda_upload(HwCudaStaging *st, cudaStream_t compute, void *dst, const void *src, size_t bytes, HwError *err)
{
	if (bytes == 0)
		return HW_OK;
	HW_CUDA_TRY(err, cudaEventRecord(st->compute_ready, compute));
	HW_CUDA_TRY(err, cudaStreamWaitEvent(st->copy_stream, st->compute_ready, 0));
	for (size_t off = 0; off < bytes; off += st->slot_bytes)
	{
		size_t len = bytes - off < st->slot_bytes ? bytes - off : st->slot_bytes;
		int slot = st->next;
		HW_CUDA_TRY(err, cudaEventSynchronize(st->copied[slot]));   /* slot's previous DMA done */
		memcpy(st->host[slot], (const char *) src + off, len);
		HW_CUDA_TRY(err, cudaMemcpyAsync((char *) dst + off, st->host[slot], len,
										 cudaMemcpyHostToDevice, st->copy_stream));
		HW_CUDA_TRY(err, cudaEventRecord(st->copied[slot], st->copy_stream));
		st->next ^= 1;
	}
	HW_CUDA_TRY(err, cudaEventRecord(st->upload_done, st->copy_stream));
	HW_CUDA_TRY(err, cudaStreamWaitEvent(compute, st->upload_done, 0));
	return HW_OK;
}
