/*
 * dp_threads.c: rank threads for data-parallel steps (dp_threads.h).
 *
 * One mutex + two condition variables: `work` wakes the ranks when a step
 * is posted (a step number they have not run yet) or on stop; `done` wakes
 * the caller when the last rank finished the step.
 */
#include "dp_threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct RankSlot
{
	HwDpThreads  *t;
	int           rank;
	pthread_t     th;
	bool          started;
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
	RankSlot       *slot;
	pthread_mutex_t mu;
	pthread_cond_t  work, done;
	uint64_t        posted;        /* steps posted */
	int             finished;      /* ranks done with step `posted` */
	bool            running;       /* a posted step is not collected yet */
	bool            stop;
	HwBatch *const *micro;
	bool            check;
	int             accum;
};

static void *
rank_main(void *p)
{
	RankSlot    *s = p;
	HwDpThreads *t = s->t;
	uint64_t     seen = 0;

	for (;;)
	{
		pthread_mutex_lock(&t->mu);
		while (!t->stop && t->posted == seen)
			pthread_cond_wait(&t->work, &t->mu);
		if (t->stop)
		{
			pthread_mutex_unlock(&t->mu);
			return NULL;
		}
		seen = t->posted;
		HwBatch *const *micro = t->micro + (size_t) s->rank * t->accum;
		bool     check = t->check;

		pthread_mutex_unlock(&t->mu);

		memset(&s->err, 0, sizeof(s->err));
		s->checksum = 0;
		s->rc = hw_dp_step(t->ranks[s->rank], micro, &s->res, &s->err);
		if (s->rc == HW_OK && check)
			s->rc = hw_dp_check_params(t->ranks[s->rank], &s->checksum, &s->err);

		pthread_mutex_lock(&t->mu);
		if (++t->finished == t->n)
			pthread_cond_broadcast(&t->done);
		pthread_mutex_unlock(&t->mu);
	}
}

HwDpThreads *
hw_dp_threads_start(HwDpRank **ranks, int nranks, HwCollective *c, HwError *err)
{
	HwDpThreads *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;

	if (t == NULL || nranks < 1 || (t->slot = calloc(nranks, sizeof(RankSlot))) == NULL)
	{
		free(t);
		hw_error_set(err, nranks < 1 ? HW_ERR_INVALID : HW_ERR_NOMEM, "cannot start %d rank threads", nranks);
		return NULL;
	}
	t->ranks = ranks;
	t->c = c;
	t->n = nranks;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->work, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->done, &ca);
	pthread_condattr_destroy(&ca);
	for (int r = 0; r < nranks; r++)
	{
		t->slot[r].t = t;
		t->slot[r].rank = r;
		if (pthread_create(&t->slot[r].th, NULL, rank_main, &t->slot[r]) != 0)
		{
			hw_dp_threads_stop(t, NULL);
			hw_error_set(err, HW_ERR_NOMEM, "cannot start the thread of rank %d", r);
			return NULL;
		}
		t->slot[r].started = true;
	}
	return t;
}

int
hw_dp_threads_post(HwDpThreads *t, HwBatch *const *micro, bool check, HwError *err)
{
	pthread_mutex_lock(&t->mu);
	if (t->running)
	{
		pthread_mutex_unlock(&t->mu);
		return hw_error_set(err, HW_ERR_INVALID, "a data-parallel step is still running");
	}
	t->micro = micro;
	t->check = check;
	t->accum = hw_dp_rank_grad_accum(t->ranks[0]);
	t->finished = 0;
	t->running = true;
	t->posted++;
	pthread_cond_broadcast(&t->work);
	pthread_mutex_unlock(&t->mu);
	return HW_OK;
}

bool
hw_dp_threads_wait(HwDpThreads *t, double timeout_s, HwStepResult *res, int *rc, uint64_t *checksum, HwError *err)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t) timeout_s;
	dl.tv_nsec += (long) ((timeout_s - (double) (time_t) timeout_s) * 1e9);
	if (dl.tv_nsec >= 1000000000L)
	{
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->mu);
	while (t->running && t->finished < t->n)
		if (pthread_cond_timedwait(&t->done, &t->mu, &dl) == ETIMEDOUT)
			break;
	bool done = t->running && t->finished == t->n;

	if (done)
		t->running = false;
	pthread_mutex_unlock(&t->mu);
	if (!done)
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
	pthread_mutex_lock(&t->mu);
	bool busy = t->running && t->finished < t->n;

	t->stop = true;
	pthread_cond_broadcast(&t->work);
	pthread_mutex_unlock(&t->mu);
	/* ranks blocked in a collective return once it is aborted; a rank in
	 * the middle of its own compute finishes that first */
	if (busy && t->c)
		hw_coll_abort(t->c, -1, why ? why : "training stopped");
	for (int r = 0; r < t->n; r++)
		if (t->slot[r].started)
			pthread_join(t->slot[r].th, NULL);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->work);
	pthread_cond_destroy(&t->done);
	free(t->slot);
	free(t);
}
