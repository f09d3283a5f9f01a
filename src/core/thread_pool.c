/*
 * thread_pool.c: fixed worker threads running one job at a time
 * (thread_pool.h).
 *
 * One mutex and two condition variables: `go` wakes the workers when a job
 * is posted (a job number they have not run yet) or on stop; `done` wakes
 * the caller when the last worker left the job, or on hw_pool_wake.  Items
 * of a shared job are handed out by an atomic counter outside the lock:
 * the sampler posts a job per batch and its items are sequences, so the
 * lock is taken twice per worker per job, never per item.
 */
#include "core/thread_pool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

struct HwThreadPool
{
	int             nworkers;
	int             started;        /* threads created (== nworkers once running) */
	pthread_t      *th;
	pthread_mutex_t mu;
	pthread_cond_t  go, done;       /* done: CLOCK_MONOTONIC, for timed waits */
	uint64_t        job;            /* number of the latest job posted */
	int             active;         /* workers still on that job */
	bool            outstanding;    /* posted and not collected by hw_pool_wait */
	uint64_t        wakes;          /* hw_pool_wake calls */
	bool            quit;
	/* the current job (written under mu before `go`) */
	HwPoolSchedule  sched;
	HwPoolFn        fn;
	void           *arg;
	int             nitems;
	atomic_int      next;           /* next item of a shared job */
};

typedef struct WorkerStart
{
	HwThreadPool *p;
	int           worker;
} WorkerStart;

/* The items of the current job that fall to `worker`. */
static void
run_items(HwThreadPool *p, int worker)
{
	if (p->sched == HW_POOL_PINNED)
	{
		if (worker < p->nitems)
			p->fn(p->arg, worker, worker);
		return;
	}
	for (;;)
	{
		int item = atomic_fetch_add(&p->next, 1);

		if (item >= p->nitems)
			break;
		p->fn(p->arg, item, worker);
	}
}

static void *
worker_main(void *start)
{
	HwThreadPool *p = ((WorkerStart *) start)->p;
	int           worker = ((WorkerStart *) start)->worker;
	uint64_t      seen = 0;

	free(start);
	pthread_mutex_lock(&p->mu);
	for (;;)
	{
		while (!p->quit && p->job == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->job;
		pthread_mutex_unlock(&p->mu);
		run_items(p, worker);
		pthread_mutex_lock(&p->mu);
		if (--p->active == 0)
			pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Creates the worker threads with every signal blocked; false if one
 * could not be started (those that were are p->started). */
static bool
start_workers(HwThreadPool *p)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < p->nworkers; i++)
	{
		WorkerStart *ws = malloc(sizeof(WorkerStart));

		if (ws == NULL)
			break;
		ws->p = p;
		ws->worker = i;
		if (pthread_create(&p->th[i], NULL, worker_main, ws) != 0)
		{
			free(ws);
			break;
		}
		p->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return p->started == p->nworkers;
}

HwThreadPool *
hw_pool_start(int nworkers, const char *what, HwError *err)
{
	HwThreadPool *p;
	pthread_condattr_t ca;

	if (nworkers < 1)
	{
		hw_error_set(err, HW_ERR_INVALID, "a %s thread pool needs at least one worker (got %d)",
					 what, nworkers);
		return NULL;
	}
	p = calloc(1, sizeof(HwThreadPool));
	if (p == NULL || (p->th = calloc((size_t) nworkers, sizeof(pthread_t))) == NULL)
	{
		free(p);
		hw_error_set(err, HW_ERR_NOMEM, "out of memory for the %s threads", what);
		return NULL;
	}
	p->nworkers = nworkers;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->done, &ca);
	pthread_condattr_destroy(&ca);
	if (!start_workers(p))
	{
		hw_pool_stop(p);
		hw_error_set(err, HW_ERR_INTERNAL, "could not start %d %s threads", nworkers, what);
		return NULL;
	}
	return p;
}

int
hw_pool_workers(const HwThreadPool *p)
{
	return p ? p->nworkers : 0;
}

/* Posts a job; p->mu held. */
static void
post_locked(HwThreadPool *p, HwPoolSchedule sched, HwPoolFn fn, void *arg, int nitems)
{
	p->sched = sched;
	p->fn = fn;
	p->arg = arg;
	p->nitems = nitems;
	atomic_store(&p->next, 0);
	p->active = p->nworkers;
	p->outstanding = true;
	p->job++;
	pthread_cond_broadcast(&p->go);
}

int
hw_pool_post(HwThreadPool *p, HwPoolSchedule sched, HwPoolFn fn, void *arg, int nitems,
			 HwError *err)
{
	pthread_mutex_lock(&p->mu);
	if (p->outstanding)
	{
		pthread_mutex_unlock(&p->mu);
		return hw_error_set(err, HW_ERR_INVALID, "the thread pool is still running a job");
	}
	if (nitems < 0 || (sched == HW_POOL_PINNED && nitems > p->nworkers))
	{
		pthread_mutex_unlock(&p->mu);
		return hw_error_set(err, HW_ERR_INVALID, "a job of %d items for %d pinned workers",
							nitems, p->nworkers);
	}
	post_locked(p, sched, fn, arg, nitems);
	pthread_mutex_unlock(&p->mu);
	return HW_OK;
}

/* now + seconds on CLOCK_MONOTONIC, the clock of p->done */
static struct timespec
deadline_after(double seconds)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t) seconds;
	dl.tv_nsec += (long) ((seconds - (double) (time_t) seconds) * 1e9);
	if (dl.tv_nsec >= 1000000000L)
	{
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	return dl;
}

bool
hw_pool_wait(HwThreadPool *p, double timeout_s)
{
	struct timespec dl = deadline_after(timeout_s > 0 ? timeout_s : 0);
	bool     done;

	pthread_mutex_lock(&p->mu);
	uint64_t wakes = p->wakes;

	while (p->outstanding && p->active > 0 && p->wakes == wakes)
	{
		if (timeout_s < 0)
			pthread_cond_wait(&p->done, &p->mu);
		else if (pthread_cond_timedwait(&p->done, &p->mu, &dl) == ETIMEDOUT)
			break;
	}
	done = p->active == 0;
	if (done)
		p->outstanding = false;
	pthread_mutex_unlock(&p->mu);
	return done;
}

bool
hw_pool_pending(HwThreadPool *p)
{
	bool pending;

	pthread_mutex_lock(&p->mu);
	pending = p->outstanding;
	pthread_mutex_unlock(&p->mu);
	return pending;
}

void
hw_pool_wake(HwThreadPool *p)
{
	pthread_mutex_lock(&p->mu);
	p->wakes++;
	pthread_cond_broadcast(&p->done);
	pthread_mutex_unlock(&p->mu);
}

void
hw_pool_run(HwThreadPool *p, HwPoolFn fn, void *arg, int nitems)
{
	if (p == NULL)
	{
		for (int i = 0; i < nitems; i++)
			fn(arg, i, 0);
		return;
	}
	pthread_mutex_lock(&p->mu);
	while (p->outstanding && p->active > 0)     /* an uncollected job: let it end */
		pthread_cond_wait(&p->done, &p->mu);
	post_locked(p, HW_POOL_SHARED, fn, arg, nitems);
	pthread_mutex_unlock(&p->mu);
	run_items(p, p->nworkers);
	pthread_mutex_lock(&p->mu);
	while (p->active > 0)
		pthread_cond_wait(&p->done, &p->mu);
	p->outstanding = false;
	pthread_mutex_unlock(&p->mu);
}

void
hw_pool_stop(HwThreadPool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	while (p->outstanding && p->active > 0)
		pthread_cond_wait(&p->done, &p->mu);
	p->quit = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->th[i], NULL);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	free(p->th);
	free(p);
}
