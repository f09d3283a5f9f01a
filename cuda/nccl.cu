/*
 * nccl.cu: several GPUs of one machine with NCCL (and the pieces for several
 * machines).
 *
 * Data parallel in one process (docs/distributed.md): one training
 * worker, one host thread per GPU, each thread with its own CUDA backend
 * (backend_cuda.cu) and model replica; every rank samples its own shard of
 * the seeds (seed i of a split belongs to rank i % world); after backward,
 * each thread averages the flat gradient buffer with ncclAllReduce(ncclAvg)
 * on its backend's stream; the optimiser step then runs identically on every
 * rank (same averaged gradients, same parameters), and rank 0 alone writes
 * checkpoints.  Initial parameters are broadcast from rank 0 so the replicas
 * start equal even if initialisation were not bit-reproducible.
 *
 * Communicators: ncclCommInitAll(ndev, devices) from the worker's main thread
 * (one process owns all local GPUs, no rendezvous needed).  Each thread then
 * calls the collectives of its own rank only; NCCL supports one thread per
 * communicator without ncclGroupStart/End (hw_cuda_nccl_allreduce_avg_all is
 * the grouped form for a worker that drives every GPU from one thread).
 * Multi-host: ncclGetUniqueId on
 * the first host, stored in a headwater table, ncclCommInitRank everywhere
 * (docs/cuda.md); the two functions are here, the worker side is not.
 *
 * Built without NCCL (no nccl.h), every function reports that clearly.
 */
#include "hw_cuda.h"
#include "hw_cuda_api.h"
#include <stdlib.h>
#include <string.h>

#if __has_include(<nccl.h>)
#include <nccl.h>
#define HW_HAVE_NCCL 1
#else
#define HW_HAVE_NCCL 0
#endif

struct HwCudaNccl
{
	int  n;                  /* communicators held by this object */
	int  first_rank;         /* rank of comms[0] (0 for InitAll, the rank for InitRank) */
#if HW_HAVE_NCCL
	ncclComm_t comms[64];
#endif
	int  devices[64];
};

extern "C" int
hw_cuda_nccl_available(void)
{
	return HW_HAVE_NCCL;
}

#if HW_HAVE_NCCL

static int
nccl_err(HwError *err, ncclResult_t r, const char *what)
{
	return hw_error_set(err, HW_ERR_INTERNAL, "NCCL error in %s: %s (%d)", what, ncclGetErrorString(r), (int) r);
}

extern "C" int
hw_cuda_nccl_create(int ndev, const int *devices, HwCudaNccl **out, HwError *err)
{
	HW_CXX_TRY
	*out = NULL;
	if (ndev < 1 || ndev > 64)
		return hw_error_set(err, HW_ERR_INVALID, "NCCL: %d devices requested (1..64)", ndev);
	int have = 0;
	if (cudaGetDeviceCount(&have) != cudaSuccess)
		have = 0;
	for (int i = 0; i < ndev; i++)
		if (devices[i] < 0 || devices[i] >= have)
			return hw_error_set(err, HW_ERR_INVALID, "NCCL: device %d does not exist (%d GPUs here)",
								devices[i], have);
	HwCudaNccl *nc = (HwCudaNccl *) calloc(1, sizeof(HwCudaNccl));
	if (!nc)
		return hw_error_set(err, HW_ERR_NOMEM, "out of host memory for NCCL communicators");
	memcpy(nc->devices, devices, ndev * sizeof(int));
	ncclResult_t r = ncclCommInitAll(nc->comms, ndev, devices);
	if (r != ncclSuccess)
	{
		free(nc);
		return nccl_err(err, r, "ncclCommInitAll");
	}
	nc->n = ndev;
	nc->first_rank = 0;
	*out = nc;
	return HW_OK;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

static int
comm_of(HwCudaNccl *nc, int rank, ncclComm_t *comm, HwError *err)
{
	*comm = NULL;
	if (!nc)
		return hw_error_set(err, HW_ERR_INVALID, "NCCL: no communicators");
	int i = rank - nc->first_rank;
	if (i < 0 || i >= nc->n)
		return hw_error_set(err, HW_ERR_INVALID, "NCCL: rank %d is not held here", rank);
	*comm = nc->comms[i];
	return HW_OK;
}

extern "C" int
hw_cuda_nccl_allreduce_avg(HwCudaNccl *nc, int rank, HwBackend *be, float *buf, size_t n, HwError *err)
{
	HW_CXX_TRY
	ncclComm_t comm = NULL;
	int rc = comm_of(nc, rank, &comm, err);
	if (rc != HW_OK)
		return rc;
	/* anything the backend already failed on is reported first */
	if ((rc = hw_backend_cuda_last_error(be, err)) != HW_OK)
		return rc;
	cudaStream_t s = hw_backend_cuda_stream(be);
	HW_CUDA_TRY(err, cudaSetDevice(hw_backend_cuda_device(be)));
	ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat32, ncclAvg, comm, s);
	if (r != ncclSuccess)
		return nccl_err(err, r, "ncclAllReduce");
	/* Waiting here keeps error reporting simple (a failed peer shows up as an
	 * error on every rank); the step synchronises for the grad norm anyway. */
	HW_CUDA_TRY(err, cudaStreamSynchronize(s));
	ncclResult_t async_err = ncclSuccess;
	if (ncclCommGetAsyncError(comm, &async_err) == ncclSuccess && async_err != ncclSuccess)
		return nccl_err(err, async_err, "ncclAllReduce (asynchronous)");
	return HW_OK;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

/* One host thread driving every local rank: the collectives of all ranks in
 * one ncclGroupStart/End (NCCL requires the group when one thread issues the
 * calls of several communicators), then every stream waited for. */
extern "C" int
hw_cuda_nccl_allreduce_avg_all(HwCudaNccl *nc, HwBackend **bes, float **bufs, size_t n, HwError *err)
{
	HW_CXX_TRY
	if (!nc || nc->first_rank != 0)
		return hw_error_set(err, HW_ERR_INVALID, "NCCL: grouped all-reduce needs the communicators of ncclCommInitAll");
	for (int i = 0; i < nc->n; i++)
	{
		int rc = hw_backend_cuda_last_error(bes[i], err);
		if (rc != HW_OK)
			return rc;
	}
	ncclResult_t r = ncclGroupStart();
	for (int i = 0; r == ncclSuccess && i < nc->n; i++)
	{
		if (cudaSetDevice(hw_backend_cuda_device(bes[i])) != cudaSuccess)
		{
			ncclGroupEnd();
			return hw_error_set(err, HW_ERR_INTERNAL, "NCCL: cannot select GPU of rank %d", i);
		}
		r = ncclAllReduce(bufs[i], bufs[i], n, ncclFloat32, ncclAvg, nc->comms[i], hw_backend_cuda_stream(bes[i]));
	}
	ncclResult_t r2 = ncclGroupEnd();
	if (r != ncclSuccess)
		return nccl_err(err, r, "ncclAllReduce (grouped)");
	if (r2 != ncclSuccess)
		return nccl_err(err, r2, "ncclGroupEnd");
	for (int i = 0; i < nc->n; i++)
	{
		HW_CUDA_TRY(err, cudaSetDevice(hw_backend_cuda_device(bes[i])));
		HW_CUDA_TRY(err, cudaStreamSynchronize(hw_backend_cuda_stream(bes[i])));
	}
	return HW_OK;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

extern "C" int
hw_cuda_nccl_broadcast(HwCudaNccl *nc, int rank, HwBackend *be, float *buf, size_t n, HwError *err)
{
	HW_CXX_TRY
	ncclComm_t comm = NULL;
	int rc = comm_of(nc, rank, &comm, err);
	if (rc != HW_OK)
		return rc;
	if ((rc = hw_backend_cuda_last_error(be, err)) != HW_OK)
		return rc;
	cudaStream_t s = hw_backend_cuda_stream(be);
	HW_CUDA_TRY(err, cudaSetDevice(hw_backend_cuda_device(be)));
	ncclResult_t r = ncclBroadcast(buf, buf, n, ncclFloat32, 0, comm, s);
	if (r != ncclSuccess)
		return nccl_err(err, r, "ncclBroadcast");
	HW_CUDA_TRY(err, cudaStreamSynchronize(s));
	return HW_OK;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

extern "C" void
hw_cuda_nccl_destroy(HwCudaNccl *nc)
{
	HW_CXX_TRY
	if (!nc)
		return;
	for (int i = 0; i < nc->n; i++)
		if (nc->comms[i])
			ncclCommDestroy(nc->comms[i]);
	free(nc);
	HW_CXX_CATCH(NULL, )
}

extern "C" int
hw_cuda_nccl_unique_id(unsigned char *buf, size_t buflen, size_t *idlen, HwError *err)
{
	HW_CXX_TRY
	ncclUniqueId id;
	if (buflen < sizeof(id.internal))
		return hw_error_set(err, HW_ERR_INVALID, "NCCL unique id needs %zu bytes", sizeof(id.internal));
	ncclResult_t r = ncclGetUniqueId(&id);
	if (r != ncclSuccess)
		return nccl_err(err, r, "ncclGetUniqueId");
	memcpy(buf, id.internal, sizeof(id.internal));
	*idlen = sizeof(id.internal);
	return HW_OK;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

extern "C" int
hw_cuda_nccl_create_rank(const unsigned char *idbytes, size_t idlen, int nranks, int rank, int device,
						 HwCudaNccl **out, HwError *err)
{
	HW_CXX_TRY
	ncclUniqueId id;
	*out = NULL;
	if (idlen != sizeof(id.internal))
		return hw_error_set(err, HW_ERR_INVALID, "NCCL unique id of %zu bytes, expected %zu",
							idlen, sizeof(id.internal));
	if (rank < 0 || rank >= nranks)
		return hw_error_set(err, HW_ERR_INVALID, "NCCL rank %d outside 0..%d", rank, nranks - 1);
	memcpy(id.internal, idbytes, idlen);
	HW_CUDA_TRY(err, cudaSetDevice(device));
	HwCudaNccl *nc = (HwCudaNccl *) calloc(1, sizeof(HwCudaNccl));
	if (!nc)
		return hw_error_set(err, HW_ERR_NOMEM, "out of host memory for an NCCL communicator");
	ncclResult_t r = ncclCommInitRank(&nc->comms[0], nranks, id, rank);
	if (r != ncclSuccess)
	{
		free(nc);
		return nccl_err(err, r, "ncclCommInitRank");
	}
	nc->n = 1;
	nc->first_rank = rank;
	nc->devices[0] = device;
	*out = nc;
	return HW_OK;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

#else /* no NCCL */

/* These stubs cannot throw (a vsnprintf, a free): no HW_CXX_TRY needed. */
#define NO_NCCL(err) hw_error_set((err), HW_ERR_INVALID, \
	"headwater_cuda was built without NCCL: several GPUs need NCCL (install it and rebuild); one GPU works without")

extern "C" int hw_cuda_nccl_create(int, const int *, HwCudaNccl **out, HwError *err) { *out = NULL; return NO_NCCL(err); }
extern "C" int hw_cuda_nccl_allreduce_avg(HwCudaNccl *, int, HwBackend *, float *, size_t, HwError *err) { return NO_NCCL(err); }
extern "C" int hw_cuda_nccl_broadcast(HwCudaNccl *, int, HwBackend *, float *, size_t, HwError *err) { return NO_NCCL(err); }
extern "C" int hw_cuda_nccl_allreduce_avg_all(HwCudaNccl *, HwBackend **, float **, size_t, HwError *err) { return NO_NCCL(err); }
extern "C" void hw_cuda_nccl_destroy(HwCudaNccl *nc) { free(nc); }
extern "C" int hw_cuda_nccl_unique_id(unsigned char *, size_t, size_t *, HwError *err) { return NO_NCCL(err); }
extern "C" int hw_cuda_nccl_create_rank(const unsigned char *, size_t, int, int, int, HwCudaNccl **out, HwError *err)
{ *out = NULL; return NO_NCCL(err); }

#endif
