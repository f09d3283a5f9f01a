/*
 * dp_threads.c: rank threads for data-parallel steps (dp_threads.h).
 *
 * The core's thread pool (thread_pool.h) with one worker per rank; a step
 * is a PINNED job, so rank r runs on worker r step after step and its
 * thread-bound state (a GPU's device context) stays where it was made.
 * Each rank leaves its outcome in its slot; the caller reads the slots only
 * after hw_pool_wait collected the job.
 */
#include "core/dp_threads.h"

#include <stdlib.h>
#include <string.h>

#include "core/thread_pool.h"

/* One rank's outcome of the last step (written by its worker only). */
typedef struct RankSlot
{
	HwStepResult  res;
	uint64_t      checksum;
	int           rc;
	HwError       err;
} RankSlot;

struct HwDpThreads
{
	HwDpRank      **ranks;
	HwCollective   *c;
	int             n;
	HwThreadPool   *pool;           /* n workers, worker r = rank r */
	RankSlot       *slot;
	/* the posted step (set before hw_pool_post, read-only while it runs) */
	HwBatch *const *micro;
	bool            check;
	int             accum;
};

/* The pinned job: rank `rank` runs its part of the step. */
static void
rank_step(void *arg, int rank, int worker)
{
	HwDpThreads *t = arg;
	RankSlot    *s = &t->slot[rank];

	(void) worker;
	memset(&s->err, 0, sizeof(s->err));
	s->checksum = 0;
	s->rc = hw_dp_step(t->ranks[rank], t->micro + (size_t) rank * t->accum, &s->res, &s->err);
	if (s->rc == HW_OK && t->check)
		s->rc = hw_dp_check_params(t->ranks[rank], &s->checksum, &s->err);
	/* a failed rank has aborted the collective (dp_step.c): the caller's
	 * wait returns now instead of at its timeout, so it can react at once */
	if (s->rc != HW_OK)
		hw_pool_wake(t->pool);
}

HwDpThreads *
hw_dp_threads_start(HwDpRank **ranks, int nranks, HwCollective *c, HwError *err)
{
	HwDpThreads *t;

	if (nranks < 1)
	{
		hw_error_set(err, HW_ERR_INVALID, "cannot start %d rank threads", nranks);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL || (t->slot = calloc((size_t) nranks, sizeof(RankSlot))) == NULL)
	{
		free(t);
		hw_error_set(err, HW_ERR_NOMEM, "cannot start %d rank threads", nranks);
		return NULL;
	}
	t->ranks = ranks;
	t->c = c;
	t->n = nranks;
	if ((t->pool = hw_pool_start(nranks, "data-parallel rank", err)) == NULL)
	{
		free(t->slot);
		free(t);
		return NULL;
	}
	return t;
}

int
hw_dp_threads_post(HwDpThreads *t, HwBatch *const *micro, bool check, HwError *err)
{
	/* a step not collected yet: refused before its inputs are touched */
	if (hw_pool_pending(t->pool))
		return hw_error_set(err, HW_ERR_INVALID, "a data-parallel step is still running");
	t->micro = micro;
	t->check = check;
	t->accum = hw_dp_rank_grad_accum(t->ranks[0]);
	return hw_pool_post(t->pool, HW_POOL_PINNED, rank_step, t, t->n, err);
}

bool
hw_dp_threads_wait(HwDpThreads *t, double timeout_s, HwStepResult *res, int *rc, uint64_t *checksum, HwError *err)
{
	if (!hw_pool_wait(t->pool, timeout_s))
		return false;
	*res = t->slot[0].res;
	*checksum = t->slot[0].checksum;
	*rc = HW_OK;
	/* the root cause: the code of a rank that failed on its own (not
	 * HW_ERR_CANCELLED by the collective), the collective's first message */
	for (int r = 0; r < t->n; r++)
		if (t->slot[r].rc != HW_OK && (*rc == HW_OK || *rc == HW_ERR_CANCELLED))
		{
			if (*rc == HW_OK && err)
				*err = t->slot[r].err;
			*rc = t->slot[r].rc;
		}
	if (*rc != HW_OK && t->c)
		(void) hw_coll_error(t->c, err);
	return true;
}

void
hw_dp_threads_stop(HwDpThreads *t, const char *why)
{
	if (t == NULL)
		return;
	bool busy = !hw_pool_wait(t->pool, 0);

	/* ranks blocked in a collective return once it is aborted; a rank in
	 * the middle of its own compute finishes that first */
	if (busy && t->c)
		hw_coll_abort(t->c, -1, why ? why : "training stopped");
	hw_pool_stop(t->pool);
	free(t->slot);
	free(t);
}
