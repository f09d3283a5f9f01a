/*
 * thread_pool.h: the core's worker threads.  A fixed set of workers that
 * run one job at a time for one driving caller: the sampler's sequence
 * builders (sampler.c), the prefetch producer (prefetch.c) and the
 * data-parallel rank threads (dp_threads.c, pinned jobs and the timed,
 * wakeable wait) use it.
 *
 * A job is fn(arg, item, worker) for item = 0 .. nitems-1:
 *   HW_POOL_SHARED  items are handed out one at a time (an atomic counter)
 *                   to whichever worker is free: load balance, so an
 *                   item's result must not depend on the worker that ran it
 *                   (worker only picks per-thread scratch);
 *   HW_POOL_PINNED  item i runs on worker i (nitems <= workers): state bound
 *                   to a thread, such as a rank's device context, stays on
 *                   the thread it was made on, step after step.
 *
 *     HwThreadPool *p = hw_pool_start(3, "sampler", &err);
 *     hw_pool_run(p, build_one, &job, B);      // the caller works too (worker 3)
 *     hw_pool_post(p, HW_POOL_PINNED, rank_step, &step, 3, &err);
 *     while (!hw_pool_wait(p, 0.1)) { serve interrupts }
 *     hw_pool_stop(p);                         // finishes the job in hand, joins
 *
 * Why not OpenMP: workers block on a condition variable between jobs
 * instead of spinning, so they coexist on the same cores with the
 * trainer's OpenMP team and other load; and they start with every signal
 * blocked, because inside PostgreSQL signal handlers must run on the main
 * thread only.  Plain C and pthreads; fn never runs on the caller's thread
 * except in hw_pool_run (as worker `workers`).
 */
#ifndef HW_THREAD_POOL_H
#define HW_THREAD_POOL_H

#include <stdbool.h>

#include "core/hw_common.h"

typedef struct HwThreadPool HwThreadPool;

/* item: 0 .. nitems-1; worker: 0 .. workers-1, or `workers` for the caller
 * of hw_pool_run */
typedef void (*HwPoolFn)(void *arg, int item, int worker);

typedef enum HwPoolSchedule
{
	HW_POOL_SHARED = 0,         /* any free worker takes the next item */
	HW_POOL_PINNED = 1          /* item i on worker i */
} HwPoolSchedule;

/* nworkers >= 1 threads, idle until a job is posted.  what names the user
 * in the error message ("sampler", "prefetch"). */
HwThreadPool *hw_pool_start(int nworkers, const char *what, HwError *err);

int hw_pool_workers(const HwThreadPool *p);

/* Starts a job and returns at once.  HW_ERR_INVALID while an earlier job
 * has not been collected by hw_pool_wait, or for a pinned job of more
 * items than workers. */
int hw_pool_post(HwThreadPool *p, HwPoolSchedule sched, HwPoolFn fn, void *arg, int nitems,
				 HwError *err);

/* Waits up to timeout_s (< 0: without limit) for the posted job.  true:
 * every item ran, the job is collected and the next may be posted (also
 * when no job is outstanding).  false: still running -- the time ran out or
 * hw_pool_wake was called. */
bool hw_pool_wait(HwThreadPool *p, double timeout_s);

/* Whether a posted job is not collected yet (running, or done and not
 * waited for): what hw_pool_post would refuse.  For the driving caller,
 * to keep a job's inputs untouched until it is collected. */
bool hw_pool_pending(HwThreadPool *p);

/* Makes a caller blocked in hw_pool_wait return now (false unless the job
 * is done): for an event the caller must react to before the job ends,
 * such as a collective aborted by one of its ranks.  Any thread. */
void hw_pool_wake(HwThreadPool *p);

/* A parallel-for: fn on items 0 .. nitems-1 by the workers and the caller
 * (as worker `workers`), shared schedule; returns when every item ran.
 * p NULL: the caller runs them all, in order (as worker 0). */
void hw_pool_run(HwThreadPool *p, HwPoolFn fn, void *arg, int nitems);

/* Waits for the job in hand (a running item is never interrupted: tell it
 * to return through its own state first), stops and joins the workers.
 * NULL is a no-op. */
void hw_pool_stop(HwThreadPool *p);

#endif /* HW_THREAD_POOL_H */
