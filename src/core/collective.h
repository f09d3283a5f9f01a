/*
 * collective.h: the collective operations data-parallel training needs,
 * behind one interface with two implementations:
 *   - in-process ("local", collective.c): the ranks are threads of one
 *     process; buffers are host memory (the CPU backend's device memory);
 *     the sum is taken in a FIXED rank order, so it is deterministic and
 *     equals a left fold g0 + g1 + ... + g(n-1) done by one thread;
 *   - NCCL (cuda/collective_nccl.cu, headwater_cuda.so): one communicator
 *     per rank, buffers in the rank's GPU memory, ordered on its backend's
 *     stream.  NCCL's ring/tree sum order is not a left fold: results match
 *     the local collective within rounding only.
 *
 * Every rank calls the same sequence of collectives with the same sizes
 * (the usual SPMD contract).  Each call waits for every rank at most
 * timeout_s seconds; past it the collective fails: the call returns
 * HW_ERR_CANCELLED naming the ranks that did not arrive, and the collective
 * is in the error state.  hw_coll_abort (a rank that failed, or the trainer's
 * cancel) puts it in the error state with that rank's message.  In the
 * error state every pending and later call returns HW_ERR_CANCELLED with the
 * FIRST error's message (the root cause, not "aborted"), so all ranks stop
 * and the job can be marked failed with the failing rank's message.
 *
 *     HwCollective *c = hw_coll_local_create(2, 60.0, &err);
 *     // in rank thread r:
 *     rc = hw_coll_allreduce_sum(c, r, grads, n, &err);   // grads := sum over ranks
 *     ...
 *     hw_coll_destroy(c);       // after every rank thread has returned
 *
 * No PostgreSQL here; the calls block the calling thread.
 */
#ifndef HW_COLLECTIVE_H
#define HW_COLLECTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "core/hw_common.h"

typedef struct HwCollective HwCollective;

typedef struct HwCollectiveOps
{
	const char *name;                        /* "local", "nccl" */
	/* buf[n] (=) elementwise sum of every rank's buf[n], in place. */
	int  (*allreduce_sum)(HwCollective *c, int rank, float *buf, size_t n, HwError *err);
	/* buf[n] (=) root's buf[n] on every rank. */
	int  (*broadcast)(HwCollective *c, int rank, float *buf, size_t n, int root, HwError *err);
	/* *equal = 1 when every rank passed the same v (a parameter checksum). */
	int  (*all_equal_u64)(HwCollective *c, int rank, uint64_t v, int *equal, HwError *err);
	int  (*barrier)(HwCollective *c, int rank, HwError *err);
	/* Error state with "rank <rank>: <why>" unless already failed; wakes
	 * every waiting rank.  Any thread may call it (rank -1: the trainer). */
	void (*abort_all)(HwCollective *c, int rank, const char *why);
	/* The first error (HW_OK when none); not cleared. */
	int  (*error)(HwCollective *c, HwError *err);
	void (*destroy)(HwCollective *c);
} HwCollectiveOps;

struct HwCollective
{
	const HwCollectiveOps *ops;
	int     nranks;
	double  timeout_s;
	void   *ctx;
};

/* The in-process collective for nranks threads (1..256); timeout_s > 0. */
HwCollective *hw_coll_local_create(int nranks, double timeout_s, HwError *err);

static inline int hw_coll_allreduce_sum(HwCollective *c, int rank, float *buf, size_t n, HwError *err)
{ return c->ops->allreduce_sum(c, rank, buf, n, err); }
static inline int hw_coll_broadcast(HwCollective *c, int rank, float *buf, size_t n, int root, HwError *err)
{ return c->ops->broadcast(c, rank, buf, n, root, err); }
static inline int hw_coll_all_equal_u64(HwCollective *c, int rank, uint64_t v, int *equal, HwError *err)
{ return c->ops->all_equal_u64(c, rank, v, equal, err); }
static inline int hw_coll_barrier(HwCollective *c, int rank, HwError *err)
{ return c->ops->barrier(c, rank, err); }
static inline void hw_coll_abort(HwCollective *c, int rank, const char *why)
{ c->ops->abort_all(c, rank, why); }
static inline int hw_coll_error(HwCollective *c, HwError *err)
{ return c->ops->error(c, err); }
static inline void hw_coll_destroy(HwCollective *c)
{ if (c) c->ops->destroy(c); }

#endif /* HW_COLLECTIVE_H */
