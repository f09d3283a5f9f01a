/*
 * train_signals.c: the training worker's signals and the job state the
 * training loop polls (progress, stop requests).  Kept apart from the
 * worker's life cycle (train_worker.c), which runs the loop: the loop
 * depends on this file, not on the worker that calls it.
 *
 * SIGTERM (pg_terminate_backend, shutdown) stops the loop at once; a query
 * cancel (SIGINT) is an rt_cancel, honoured at the next step boundary.
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/spin.h"

#include "pg/train/hw_train.h"
#include "pg/train/train_signals.h"

static volatile sig_atomic_t got_sigterm = false;
static volatile sig_atomic_t got_sigint = false;

static void
hw_worker_sigterm(SIGNAL_ARGS)
{
	int save_errno = errno;

	got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* A query cancel (pg_cancel_backend) of the worker is an rt_cancel: the
 * job stops at the next step boundary with a checkpoint, state cancelled.
 * PostgreSQL's own handler would raise an error in the middle of a step and
 * fail the job, losing the steps since the last checkpoint. */
static void
hw_worker_sigint(SIGNAL_ARGS)
{
	int save_errno = errno;

	got_sigint = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

void
hw_worker_install_signal_handlers(void)
{
	pqsignal(SIGTERM, hw_worker_sigterm);
	/* in place of the cancel handler PostgreSQL gives connected workers */
	pqsignal(SIGINT, hw_worker_sigint);
}

void
hw_job_report_progress(HwJobShared *job, int32 step, double loss, double lr,
					   double grad_norm, double tokens_per_s, double eta_s)
{
	SpinLockAcquire(&job->mutex);
	job->step = step;
	job->loss = loss;
	job->lr = lr;
	job->grad_norm = grad_norm;
	job->tokens_per_s = tokens_per_s;
	job->eta_s = eta_s;
	job->progress_seq++;
	SpinLockRelease(&job->mutex);
}

bool
hw_job_should_stop(HwJobShared *job, bool *terminated)
{
	*terminated = got_sigterm;
	if (got_sigint)
		pg_atomic_write_u32(&job->cancel_requested, 1);
	return got_sigterm || pg_atomic_read_u32(&job->cancel_requested) != 0;
}

bool
hw_job_terminated(void)
{
	return got_sigterm;
}
