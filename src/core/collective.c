/*
 * collective.c: the in-process collective (collective.h) for rank threads.
 *
 * Shared state: each rank posts its buffer pointer, then all meet at a
 * barrier (a generation counter under a mutex, a condition variable on the
 * monotonic clock for the timeout).  All-reduce: rank r then sums elements
 * [r*n/R, (r+1)*n/R) over every rank's buffer in rank order (s = b0[j];
 * s += b1[j]; ...) and writes s back into every buffer; a second barrier
 * ends the call.  So the work is split over the ranks, the result is one
 * fixed left fold whatever the timing, and no buffer is copied.  A pointer
 * posted for call k is only read between call k's two barriers, and a rank
 * posts for call k+1 after passing call k's second barrier, so no post
 * overwrites a pointer still being read.
 */
#include "core/collective.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct LocalCtx
{
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	int             arrived;       /* ranks at the current barrier */
	uint64_t        gen;           /* barriers completed */
	uint64_t       *stamp;         /* [R] gen + 1 while rank r waits at barrier gen */
	float         **ptr;           /* [R] posted buffers */
	size_t         *len;           /* [R] their lengths */
	uint64_t       *val;           /* [R] posted u64 values */
	int             failed;
	HwError         first;         /* the first error */
} LocalCtx;

static int
failed_copy(LocalCtx *x, HwError *err)
{
	if (err)
		*err = x->first;
	return HW_ERR_CANCELLED;
}

/* The error state with msg (unless already failed); wakes every waiter. */
static void
fail_locked(LocalCtx *x, const char *msg)
{
	if (x->failed)
		return;
	x->failed = 1;
	x->first.code = HW_ERR_CANCELLED;
	snprintf(x->first.msg, sizeof(x->first.msg), "%s", msg);
	pthread_cond_broadcast(&x->cv);
}

/* Waits until every rank reached this barrier, the timeout, or an error. */
static int
barrier(HwCollective *c, int rank, const char *what, HwError *err)
{
	LocalCtx *x = c->ctx;
	struct timespec dl;

	if (rank < 0 || rank >= c->nranks)
		return hw_error_set(err, HW_ERR_INVALID, "collective %s: rank %d outside 0..%d", what, rank, c->nranks - 1);
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t) c->timeout_s;
	dl.tv_nsec += (long) ((c->timeout_s - (double) (time_t) c->timeout_s) * 1e9);
	if (dl.tv_nsec >= 1000000000L)
	{
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&x->mu);
	if (x->failed)
	{
		pthread_mutex_unlock(&x->mu);
		return failed_copy(x, err);
	}
	uint64_t my = x->gen;

	x->stamp[rank] = my + 1;
	if (++x->arrived == c->nranks)
	{
		x->arrived = 0;
		x->gen++;
		pthread_cond_broadcast(&x->cv);
		pthread_mutex_unlock(&x->mu);
		return HW_OK;
	}
	while (x->gen == my && !x->failed)
	{
		if (pthread_cond_timedwait(&x->cv, &x->mu, &dl) == ETIMEDOUT && x->gen == my && !x->failed)
		{
			char missing[256] = "";
			size_t off = 0;

			for (int r = 0; r < c->nranks && off < sizeof(missing) - 8; r++)
				if (x->stamp[r] != my + 1)
					off += snprintf(missing + off, sizeof(missing) - off, "%s%d", off ? ", " : "", r);
			char msg[512];

			snprintf(msg, sizeof(msg), "rank %d waited %g s at the %s for rank(s) %s, which did not arrive (timeout)",
					 rank, c->timeout_s, what, missing);
			fail_locked(x, msg);
		}
	}
	int ok = x->gen != my;      /* released before (or while) the error came */

	pthread_mutex_unlock(&x->mu);
	return ok ? HW_OK : failed_copy(x, err);
}

static int
local_allreduce_sum(HwCollective *c, int rank, float *buf, size_t n, HwError *err)
{
	LocalCtx *x = c->ctx;
	int       R = c->nranks, rc;

	if (rank >= 0 && rank < R)
	{
		x->ptr[rank] = buf;
		x->len[rank] = n;
	}
	if ((rc = barrier(c, rank, "all-reduce", err)) != HW_OK)
		return rc;
	for (int r = 0; r < R; r++)
		if (x->len[r] != n)
		{
			char msg[160];

			snprintf(msg, sizeof(msg), "all-reduce of %zu floats, rank %d passed %zu", n, r, x->len[r]);
			hw_coll_abort(c, rank, msg);
			return failed_copy(x, err);
		}
	size_t lo = n * (size_t) rank / (size_t) R, hi = n * (size_t) (rank + 1) / (size_t) R;

	for (size_t j = lo; j < hi; j++)
	{
		float s = x->ptr[0][j];

		for (int r = 1; r < R; r++)
			s += x->ptr[r][j];
		for (int r = 0; r < R; r++)
			x->ptr[r][j] = s;
	}
	return barrier(c, rank, "all-reduce", err);
}

static int
local_broadcast(HwCollective *c, int rank, float *buf, size_t n, int root, HwError *err)
{
	LocalCtx *x = c->ctx;
	int       rc;

	if (root < 0 || root >= c->nranks)
		return hw_error_set(err, HW_ERR_INVALID, "broadcast from rank %d of %d", root, c->nranks);
	if (rank >= 0 && rank < c->nranks)
	{
		x->ptr[rank] = buf;
		x->len[rank] = n;
	}
	if ((rc = barrier(c, rank, "broadcast", err)) != HW_OK)
		return rc;
	if (x->len[root] != n)
	{
		char msg[160];

		snprintf(msg, sizeof(msg), "broadcast of %zu floats, the root passed %zu", n, x->len[root]);
		hw_coll_abort(c, rank, msg);
		return failed_copy(x, err);
	}
	if (rank != root && n)
		memcpy(buf, x->ptr[root], n * sizeof(float));
	return barrier(c, rank, "broadcast", err);
}

static int
local_all_equal_u64(HwCollective *c, int rank, uint64_t v, int *equal, HwError *err)
{
	LocalCtx *x = c->ctx;
	int       rc;

	*equal = 0;
	if (rank >= 0 && rank < c->nranks)
		x->val[rank] = v;
	if ((rc = barrier(c, rank, "checksum comparison", err)) != HW_OK)
		return rc;
	*equal = 1;
	for (int r = 0; r < c->nranks; r++)
		*equal &= x->val[r] == x->val[0];
	return barrier(c, rank, "checksum comparison", err);
}

static int
local_barrier(HwCollective *c, int rank, HwError *err)
{
	return barrier(c, rank, "barrier", err);
}

static void
local_abort(HwCollective *c, int rank, const char *why)
{
	LocalCtx *x = c->ctx;
	char      msg[512];

	if (rank < 0)
		snprintf(msg, sizeof(msg), "%s", why ? why : "aborted");
	else
		snprintf(msg, sizeof(msg), "rank %d: %s", rank, why ? why : "aborted");
	pthread_mutex_lock(&x->mu);
	fail_locked(x, msg);
	pthread_mutex_unlock(&x->mu);
}

static int
local_error(HwCollective *c, HwError *err)
{
	LocalCtx *x = c->ctx;
	int       rc;

	pthread_mutex_lock(&x->mu);
	rc = x->failed ? failed_copy(x, err) : HW_OK;
	pthread_mutex_unlock(&x->mu);
	return rc;
}

static void
local_destroy(HwCollective *c)
{
	LocalCtx *x = c->ctx;

	if (x)
	{
		pthread_mutex_destroy(&x->mu);
		pthread_cond_destroy(&x->cv);
		free(x->stamp);
		free(x->ptr);
		free(x->len);
		free(x->val);
		free(x);
	}
	free(c);
}

static const HwCollectiveOps local_ops = {
	.name = "local",
	.allreduce_sum = local_allreduce_sum,
	.broadcast = local_broadcast,
	.all_equal_u64 = local_all_equal_u64,
	.barrier = local_barrier,
	.abort_all = local_abort,
	.error = local_error,
	.destroy = local_destroy,
};

HwCollective *
hw_coll_local_create(int nranks, double timeout_s, HwError *err)
{
	if (nranks < 1 || nranks > 256 || !(timeout_s > 0) || timeout_s > 1e7)
	{
		hw_error_set(err, HW_ERR_INVALID, "in-process collective: %d ranks (1..256), timeout %g s (> 0)",
					 nranks, timeout_s);
		return NULL;
	}
	HwCollective *c = calloc(1, sizeof(*c));
	LocalCtx     *x = calloc(1, sizeof(*x));
	pthread_condattr_t ca;

	if (c)
		c->ctx = x;
	if (!c || !x || !(x->stamp = calloc(nranks, sizeof(uint64_t))) || !(x->ptr = calloc(nranks, sizeof(float *))) ||
		!(x->len = calloc(nranks, sizeof(size_t))) || !(x->val = calloc(nranks, sizeof(uint64_t))))
	{
		if (c)
			local_destroy(c);
		else
			free(x);
		hw_error_set(err, HW_ERR_NOMEM, "out of memory creating the in-process collective");
		return NULL;
	}
	pthread_mutex_init(&x->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cv, &ca);
	pthread_condattr_destroy(&ca);
	c->ops = &local_ops;
	c->nranks = nranks;
	c->timeout_s = timeout_s;
	return c;
}
