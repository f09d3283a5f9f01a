/*
 * collective_nccl.cu: the collective interface (src/core/collective.h) on
 * NCCL, for the ranks of one training worker, one thread and one GPU each.
 *
 * UNTESTED ON A GPU: written and compiled in a session without one
 * (docs/distributed.md says what was and was not run).
 *
 * Communicators: ncclCommInitAll over the ranks' devices (one process owns
 * every local GPU, no rendezvous).  Each rank thread issues its own
 * collectives on its backend's stream, so the all-reduce works in place on
 * the model's device gradient buffer, ordered after the backward pass.
 *
 * Waiting never blocks in CUDA: after enqueueing, the rank polls
 * cudaStreamQuery, ncclCommGetAsyncError (a peer that died or a network
 * error), the abort flag (another rank failed, or the trainer cancelled) and
 * its deadline (timeout_s), sleeping 100 us between polls; on any of the last
 * three it calls ncclCommAbort on its communicator, which makes the kernels
 * of the collective return, and reports the first error.  The previous code
 * (nccl.cu) called cudaStreamSynchronize first, which never returns when a
 * peer is gone.  After an abort the communicators are unusable: the job
 * fails and destroy() frees what is left.
 *
 * Sum order: NCCL's (ring or tree), not the rank-order fold of the
 * in-process collective: W GPUs agree with each other bit for bit (NCCL's
 * all-reduce gives every rank the same result) but match one GPU with
 * gradient accumulation within rounding only.
 */
#include "hw_cuda.h"
#include "hw_cuda_api.h"
#include "core/collective.h"

#include <atomic>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<nccl.h>)
#include <nccl.h>
#define HW_HAVE_NCCL 1
#else
#define HW_HAVE_NCCL 0
#endif

#if HW_HAVE_NCCL

struct NcclRank
{
	ncclComm_t    comm;
	HwBackend    *be;
	int           device;
	uint64_t     *scratch;       /* device [2]: checksum comparison, barrier */
	bool          aborted;
};

struct NcclCtx
{
	int                 n;
	NcclRank           *r;
	std::atomic<int>    failed;
	std::mutex          mu;      /* guards first */
	HwError             first;
};

static double
mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void
set_failed(NcclCtx *x, const char *msg)
{
	std::lock_guard<std::mutex> g(x->mu);
	if (x->failed.load())
		return;
	x->first.code = HW_ERR_CANCELLED;
	strncpy(x->first.msg, msg, sizeof(x->first.msg) - 1);
	x->first.msg[sizeof(x->first.msg) - 1] = 0;
	x->failed.store(1);
}

static int
first_error(NcclCtx *x, HwError *err)
{
	std::lock_guard<std::mutex> g(x->mu);
	if (err)
		*err = x->first;
	return HW_ERR_CANCELLED;
}

static void
abort_rank(NcclRank *r)
{
	if (!r->aborted && r->comm)
	{
		ncclCommAbort(r->comm);
		r->aborted = true;
		r->comm = NULL;
	}
}

/* Polls rank's stream until the enqueued collective is done, an async NCCL
 * error, the abort flag or the deadline. */
static int
wait_rank(HwCollective *c, int rank, const char *what, HwError *err)
{
	NcclCtx     *x = (NcclCtx *) c->ctx;
	NcclRank    *r = &x->r[rank];
	cudaStream_t s = hw_backend_cuda_stream(r->be);
	double       deadline = mono_s() + c->timeout_s;
	char         msg[512];

	for (;;)
	{
		cudaError_t q = cudaStreamQuery(s);
		if (q == cudaSuccess)
			return HW_OK;
		if (q != cudaErrorNotReady)
		{
			snprintf(msg, sizeof(msg), "rank %d: CUDA error in the %s: %s", rank, what, cudaGetErrorString(q));
			set_failed(x, msg);
			break;
		}
		ncclResult_t ae = ncclSuccess;
		if (ncclCommGetAsyncError(r->comm, &ae) == ncclSuccess && ae != ncclSuccess && ae != ncclInProgress)
		{
			snprintf(msg, sizeof(msg), "rank %d: NCCL error in the %s: %s", rank, what, ncclGetErrorString(ae));
			set_failed(x, msg);
			break;
		}
		if (x->failed.load())
			break;
		if (mono_s() > deadline)
		{
			snprintf(msg, sizeof(msg), "rank %d waited %g s at the %s for the other ranks (timeout)",
					 rank, c->timeout_s, what);
			set_failed(x, msg);
			break;
		}
		usleep(100);
	}
	abort_rank(r);
	return first_error(x, err);
}

static int
pre(HwCollective *c, int rank, HwError *err)
{
	NcclCtx *x = (NcclCtx *) c->ctx;

	if (rank < 0 || rank >= c->nranks)
		return hw_error_set(err, HW_ERR_INVALID, "NCCL collective: rank %d outside 0..%d", rank, c->nranks - 1);
	if (x->failed.load())
	{
		abort_rank(&x->r[rank]);
		return first_error(x, err);
	}
	int rc = hw_backend_cuda_last_error(x->r[rank].be, err);
	if (rc != HW_OK)
	{
		char msg[600];
		snprintf(msg, sizeof(msg), "rank %d: %s", rank, err ? err->msg : "CUDA error");
		set_failed(x, msg);
		abort_rank(&x->r[rank]);
		return rc;
	}
	HW_CUDA_TRY(err, cudaSetDevice(x->r[rank].device));
	return HW_OK;
}

static int
enqueued(HwCollective *c, int rank, ncclResult_t e, const char *what, HwError *err)
{
	NcclCtx *x = (NcclCtx *) c->ctx;

	if (e != ncclSuccess && e != ncclInProgress)
	{
		char msg[512];
		snprintf(msg, sizeof(msg), "rank %d: NCCL error in the %s: %s", rank, what, ncclGetErrorString(e));
		set_failed(x, msg);
		abort_rank(&x->r[rank]);
		return first_error(x, err);
	}
	return wait_rank(c, rank, what, err);
}

static int
nccl_allreduce_sum(HwCollective *c, int rank, float *buf, size_t n, HwError *err)
{
	HW_CXX_TRY
	int rc = pre(c, rank, err);
	if (rc != HW_OK)
		return rc;
	NcclRank *r = &((NcclCtx *) c->ctx)->r[rank];
	return enqueued(c, rank, ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, r->comm, hw_backend_cuda_stream(r->be)),
					"all-reduce", err);
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

static int
nccl_broadcast(HwCollective *c, int rank, float *buf, size_t n, int root, HwError *err)
{
	HW_CXX_TRY
	if (root < 0 || root >= c->nranks)
		return hw_error_set(err, HW_ERR_INVALID, "broadcast from rank %d of %d", root, c->nranks);
	int rc = pre(c, rank, err);
	if (rc != HW_OK)
		return rc;
	NcclRank *r = &((NcclCtx *) c->ctx)->r[rank];
	return enqueued(c, rank, ncclBroadcast(buf, buf, n, ncclFloat32, root, r->comm, hw_backend_cuda_stream(r->be)),
					"broadcast", err);
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

/* max over ranks of {v, ~v} = {max v, ~min v}: equal iff both are v. */
static int
nccl_all_equal_u64(HwCollective *c, int rank, uint64_t v, int *equal, HwError *err)
{
	HW_CXX_TRY
	*equal = 0;
	int rc = pre(c, rank, err);
	if (rc != HW_OK)
		return rc;
	NcclRank    *r = &((NcclCtx *) c->ctx)->r[rank];
	cudaStream_t s = hw_backend_cuda_stream(r->be);
	uint64_t     h[2] = {v, ~v};
	HW_CUDA_TRY(err, cudaMemcpyAsync(r->scratch, h, sizeof(h), cudaMemcpyHostToDevice, s));
	rc = enqueued(c, rank, ncclAllReduce(r->scratch, r->scratch, 2, ncclUint64, ncclMax, r->comm, s),
				  "checksum comparison", err);
	if (rc != HW_OK)
		return rc;
	HW_CUDA_TRY(err, cudaMemcpyAsync(h, r->scratch, sizeof(h), cudaMemcpyDeviceToHost, s));
	HW_CUDA_TRY(err, cudaStreamSynchronize(s));    /* a local copy: cannot hang on a peer */
	*equal = h[0] == v && ~h[1] == v;
	return HW_OK;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

static int
nccl_barrier(HwCollective *c, int rank, HwError *err)
{
	int equal;
	return nccl_all_equal_u64(c, rank, 0, &equal, err);
}

static void
nccl_abort(HwCollective *c, int rank, const char *why)
{
	char msg[512];

	if (rank < 0)
		snprintf(msg, sizeof(msg), "%s", why ? why : "aborted");
	else
		snprintf(msg, sizeof(msg), "rank %d: %s", rank, why ? why : "aborted");
	/* the ranks' own threads see the flag in their wait loop and abort
	 * their communicators (ncclCommAbort is not called on another thread's
	 * communicator while it may be enqueueing) */
	set_failed((NcclCtx *) c->ctx, msg);
}

static int
nccl_error(HwCollective *c, HwError *err)
{
	NcclCtx *x = (NcclCtx *) c->ctx;
	return x->failed.load() ? first_error(x, err) : HW_OK;
}

static void
nccl_destroy(HwCollective *c)
{
	HW_CXX_TRY
	NcclCtx *x = (NcclCtx *) c->ctx;
	if (x)
	{
		for (int i = 0; x->r && i < x->n; i++)
		{
			cudaSetDevice(x->r[i].device);
			if (x->r[i].comm)
				(x->failed.load() ? ncclCommAbort : ncclCommDestroy)(x->r[i].comm);
			if (x->r[i].scratch)
				cudaFree(x->r[i].scratch);
		}
		free(x->r);
		delete x;
	}
	free(c);
	HW_CXX_CATCH(NULL, )
}

static const HwCollectiveOps nccl_ops = {
	"nccl", nccl_allreduce_sum, nccl_broadcast, nccl_all_equal_u64, nccl_barrier, nccl_abort, nccl_error,
	nccl_destroy,
};

extern "C" int
hw_cuda_collective_create(int nranks, HwBackend **bes, double timeout_s, HwCollective **out, HwError *err)
{
	HW_CXX_TRY
	*out = NULL;
	if (nranks < 1 || nranks > 64 || !(timeout_s > 0))
		return hw_error_set(err, HW_ERR_INVALID, "NCCL collective: %d ranks (1..64), timeout %g s", nranks, timeout_s);
	int devs[64];
	for (int i = 0; i < nranks; i++)
		devs[i] = hw_backend_cuda_device(bes[i]);
	HwCollective *c = (HwCollective *) calloc(1, sizeof(HwCollective));
	NcclCtx      *x = new NcclCtx();
	if (!c)
	{
		delete x;
		return hw_error_set(err, HW_ERR_NOMEM, "out of host memory for the NCCL collective");
	}
	c->ops = &nccl_ops;
	c->nranks = nranks;
	c->timeout_s = timeout_s;
	c->ctx = x;
	x->n = nranks;
	x->failed.store(0);
	x->r = (NcclRank *) calloc(nranks, sizeof(NcclRank));
	ncclComm_t comms[64];
	ncclResult_t e = x->r ? ncclCommInitAll(comms, nranks, devs) : ncclSystemError;
	if (e != ncclSuccess)
	{
		nccl_destroy(c);
		return hw_error_set(err, HW_ERR_INTERNAL, "NCCL error in ncclCommInitAll over %d GPUs: %s", nranks,
							ncclGetErrorString(e));
	}
	for (int i = 0; i < nranks; i++)
	{
		x->r[i].comm = comms[i];
		x->r[i].be = bes[i];
		x->r[i].device = devs[i];
		if (cudaSetDevice(devs[i]) != cudaSuccess ||
			cudaMalloc((void **) &x->r[i].scratch, 2 * sizeof(uint64_t)) != cudaSuccess)
		{
			nccl_destroy(c);
			return hw_error_set(err, HW_ERR_NOMEM, "cannot allocate NCCL scratch on GPU %d", devs[i]);
		}
	}
	*out = c;
	return HW_OK;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

#else /* no NCCL */

extern "C" int
hw_cuda_collective_create(int, HwBackend **, double, HwCollective **out, HwError *err)
{
	*out = NULL;
	return hw_error_set(err, HW_ERR_INVALID,
						"headwater_cuda was built without NCCL: several GPUs need NCCL (install it and rebuild)");
}

#endif
