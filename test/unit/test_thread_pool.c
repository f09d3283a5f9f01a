/*
 * test_thread_pool.c: the core's thread pool runs every item of a job
 * exactly once (shared and pinned schedules, the caller working too),
 * keeps a pinned item on its own thread from job to job, refuses a second
 * job before the first is collected, and its timed wait both times out
 * and returns early when woken.
 */
#include "unit.h"
#include "core/thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define NITEMS 1000

typedef struct CountJob
{
	atomic_int runs[NITEMS];
	atomic_int by_worker[8];
} CountJob;

static void
count_item(void *arg, int item, int worker)
{
	CountJob *j = arg;

	atomic_fetch_add(&j->runs[item], 1);
	atomic_fetch_add(&j->by_worker[worker], 1);
}

UNIT_TEST(thread_pool_parallel_for_runs_each_item_once)
{
	static CountJob j;
	HwError err = {0};
	HwThreadPool *p = hw_pool_start(3, "test", &err);

	CHECK(p != NULL);
	CHECK_EQ_INT(hw_pool_workers(p), 3);
	for (int round = 0; round < 20; round++)
	{
		memset(&j, 0, sizeof(j));
		hw_pool_run(p, count_item, &j, NITEMS);
		for (int i = 0; i < NITEMS; i++)
			CHECK_EQ_INT(atomic_load(&j.runs[i]), 1);
		int total = 0;

		for (int w = 0; w < 8; w++)
			total += atomic_load(&j.by_worker[w]);
		CHECK_EQ_INT(total, NITEMS);
		for (int w = 5; w < 8; w++)             /* workers 0..2 and the caller (3) only */
			CHECK_EQ_INT(atomic_load(&j.by_worker[w]), 0);
		CHECK_EQ_INT(atomic_load(&j.by_worker[4]), 0);
	}
	/* no pool: the caller runs every item, in order, as worker 0 */
	memset(&j, 0, sizeof(j));
	hw_pool_run(NULL, count_item, &j, 10);
	CHECK_EQ_INT(atomic_load(&j.by_worker[0]), 10);
	hw_pool_stop(p);
	hw_pool_stop(NULL);
}

typedef struct PinJob
{
	pthread_t thread[4];
	int       worker[4];
} PinJob;

static void
record_thread(void *arg, int item, int worker)
{
	PinJob *j = arg;

	j->thread[item] = pthread_self();
	j->worker[item] = worker;
}

UNIT_TEST(thread_pool_pinned_items_stay_on_their_thread)
{
	HwError err = {0};
	HwThreadPool *p = hw_pool_start(4, "test", &err);
	PinJob first, again;

	CHECK(p != NULL);
	CHECK_EQ_INT(hw_pool_post(p, HW_POOL_PINNED, record_thread, &first, 4, &err), HW_OK);
	/* a second job before the first is collected is refused */
	CHECK_EQ_INT(hw_pool_post(p, HW_POOL_PINNED, record_thread, &again, 4, &err), HW_ERR_INVALID);
	CHECK(hw_pool_wait(p, -1));
	CHECK_EQ_INT(hw_pool_post(p, HW_POOL_PINNED, record_thread, &again, 4, &err), HW_OK);
	CHECK(hw_pool_wait(p, -1));
	for (int i = 0; i < 4; i++)
	{
		CHECK_EQ_INT(first.worker[i], i);
		CHECK(pthread_equal(first.thread[i], again.thread[i]));
		CHECK(!pthread_equal(first.thread[i], pthread_self()));
	}
	/* more pinned items than workers: refused */
	CHECK_EQ_INT(hw_pool_post(p, HW_POOL_PINNED, record_thread, &again, 5, &err), HW_ERR_INVALID);
	CHECK_EQ_INT(hw_pool_start(0, "test", &err) == NULL, 1);
	hw_pool_stop(p);
}

typedef struct GateJob
{
	atomic_int open;
} GateJob;

static void
wait_for_gate(void *arg, int item, int worker)
{
	GateJob *g = arg;

	while (!atomic_load(&g->open))
		usleep(1000);
}

static void *
wake_later(void *arg)
{
	usleep(50 * 1000);
	hw_pool_wake(arg);
	return NULL;
}

UNIT_TEST(thread_pool_wait_times_out_and_wakes)
{
	HwError err = {0};
	HwThreadPool *p = hw_pool_start(2, "test", &err);
	GateJob g = {0};
	pthread_t waker;

	CHECK(p != NULL);
	CHECK(hw_pool_wait(p, 0));                  /* nothing posted: done */
	CHECK_EQ_INT(hw_pool_post(p, HW_POOL_SHARED, wait_for_gate, &g, 2, &err), HW_OK);
	CHECK(!hw_pool_wait(p, 0.02));              /* times out: the items block */
	CHECK(pthread_create(&waker, NULL, wake_later, p) == 0);
	CHECK(!hw_pool_wait(p, 30.0));              /* woken long before 30 s */
	pthread_join(waker, NULL);
	atomic_store(&g.open, 1);
	CHECK(hw_pool_wait(p, -1));
	/* stop waits for a running job: post one, open its gate, stop */
	atomic_store(&g.open, 0);
	CHECK_EQ_INT(hw_pool_post(p, HW_POOL_SHARED, wait_for_gate, &g, 2, &err), HW_OK);
	atomic_store(&g.open, 1);
	hw_pool_stop(p);
}
