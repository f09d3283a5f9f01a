/*
 * train_worker.c: the training background worker's life cycle.
 *
 * Attaches the job's shared memory (hw_train.h), connects to the caller's
 * database as the caller's role, takes the model's training lock (one job per
 * model; the caller serialises launches, train_job.c), records the job in
 * headwater.job, runs hw_train_loop_run(), and
 * records the outcome: succeeded / cancelled (after a checkpoint) / failed
 * (with the error message).  A query cancel (pg_cancel_backend) is an
 * rt_cancel.  SIGTERM (pg_terminate_backend, shutdown) stops the loop at
 * once (a running data-parallel step is aborted, train_loop.c) and marks the
 * job failed; the last checkpoint stays intact.
 *
 * A worker gets no client messages, so its statement clock (now()) would
 * stay at its start: every transaction it runs starts through
 * hw_worker_start_transaction, and the times it writes are clock_timestamp().
 * Its signals and the stop requests the loop polls: train_signals.c.
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "catalog/pg_type.h"

#include "pg/base/hw_pg.h"
#include "pg/train/hw_train.h"
#include "pg/base/pg_xact.h"
#include "pg/train/train_signals.h"

static void
set_message(HwJobShared *job, const char *msg)
{
	SpinLockAcquire(&job->mutex);
	strlcpy(job->message, msg, sizeof(job->message));
	job->progress_seq++;
	SpinLockRelease(&job->mutex);
}

static void
finish_job(HwJobShared *job, const char *state, const char *error, const char *result)
{
	Oid     argtypes[5] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, INT4OID};
	Datum   values[5];
	char    nulls[5] = {' ', ' ', error ? ' ' : 'n', result ? ' ' : 'n', ' '};

	values[0] = Int64GetDatum(job->job_id);
	values[1] = CStringGetTextDatum(state);
	values[2] = error ? CStringGetTextDatum(error) : (Datum) 0;
	values[3] = result ? CStringGetTextDatum(result) : (Datum) 0;
	values[4] = Int32GetDatum(job->step);
	/* the job's ranks (headwater.rendezvous, data parallel) end with it */
	hw_job_exec_committed("WITH r AS (UPDATE headwater.rendezvous SET state = $2, heartbeat = clock_timestamp() "
						  "           WHERE job_id = $1 AND state IN ('waiting', 'running')) "
						  "UPDATE headwater.job SET state = $2, error = $3, result = $4::jsonb, "
						  "step = $5, finished_at = clock_timestamp(), updated_at = clock_timestamp() "
						  "WHERE job_id = $1",
						  5, argtypes, values, nulls);
}

/* The job's shared memory, mapped until the worker exits. */
static HwJobShared *
attach_job(Datum main_arg, dsm_segment **segp)
{
	dsm_segment *seg = dsm_attach((dsm_handle) DatumGetUInt32(main_arg));

	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("headwater training worker: the job's shared memory is gone (caller exited)")));
	dsm_pin_mapping(seg);   /* keep it mapped until the worker exits */
	*segp = seg;
	return dsm_segment_address(seg);
}

/* Record the job (as the extension owner: PUBLIC cannot write it); a
 * failure here finishes the job's phase for the waiting caller. */
static void
record_job(HwJobShared *job, dsm_segment *seg)
{
	PG_TRY();
	{
		Oid     argtypes[6] = {INT8OID, INT4OID, INT4OID, TEXTOID, OIDOID, INT8OID};
		Datum   values[6];

		values[0] = Int64GetDatum(job->job_id);
		values[1] = Int32GetDatum(job->model_id);
		values[2] = Int32GetDatum(job->steps_target);
		values[3] = CStringGetTextDatum(job->request);
		values[4] = ObjectIdGetDatum(job->roleoid);
		values[5] = Int64GetDatum((int64) dsm_segment_handle(seg));
		hw_job_exec_committed(
			"INSERT INTO headwater.job (job_id, model_id, state, steps_target, tasks, preset, device, "
			"options, role_oid, pid, dsm_handle, started_at, updated_at) SELECT $1, $2, 'running', $3, "
			"CASE WHEN jsonb_typeof(r->'tasks') = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(r->'tasks')) ELSE '{}' END, r->>'preset', r->>'device', "
			"r->'options', $5, pg_backend_pid(), $6, clock_timestamp(), clock_timestamp() "
			"FROM (SELECT $4::jsonb AS r) s",
			6, argtypes, values, NULL);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		set_message(job, edata->message);
		SpinLockAcquire(&job->mutex);
		job->phase = HW_PHASE_FINISHED;
		SpinLockRelease(&job->mutex);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* Train, and record the outcome: the loop's state and result, a
 * termination, or the error (logged, and kept for the caller). */
static void
run_job(HwJobShared *job)
{
	PG_TRY();
	{
		StringInfoData result;
		const char *state;

		initStringInfo(&result);
		state = hw_train_loop_run(job, &result);
		if (hw_job_terminated())
		{
			char msg[256];
			snprintf(msg, sizeof(msg),
					 "terminated at step %d (pg_terminate_backend or server shutdown); "
					 "the last checkpoint is intact and rt_train resumes from it", job->step);
			finish_job(job, "failed", msg, NULL);
			set_message(job, msg);
		}
		else
		{
			finish_job(job, state, NULL, result.len > 0 ? result.data : NULL);
			set_message(job, state);
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		edata = CopyErrorData();
		MemoryContextSwitchTo(oldcxt);
		FlushErrorState();
		AbortCurrentTransaction();
		/* log it like an ordinary error, then record it for the caller */
		/* keep the worker's hint: the caller re-raises this text */
		char *text = edata->hint ? psprintf("%s (%s)", edata->message, edata->hint) : edata->message;

		ereport(LOG, (errmsg("headwater training job %lld failed: %s", (long long) job->job_id, text)));
		set_message(job, text);
		finish_job(job, "failed", text, NULL);
	}
	PG_END_TRY();
}

void
hw_train_worker_main(Datum main_arg)
{
	dsm_segment *seg;
	HwJobShared *job;
	LOCKTAG     tag;
	bool        locked;

	hw_worker_install_signal_handlers();
	BackgroundWorkerUnblockSignals();

	CurrentResourceOwner = ResourceOwnerCreate(NULL, "headwater training worker");
	job = attach_job(main_arg, &seg);

	BackgroundWorkerInitializeConnectionByOid(job->dboid, job->roleoid, 0);
	pgstat_report_appname("headwater training");

	/* One training job per model: a session-level advisory lock, taken
	 * before the job row says "running" (the caller, holding the model's
	 * launch lock, waits for this phase change; train_job.c). */
	HW_SET_LOCKTAG(tag, MyDatabaseId, HW_TRAIN_LOCK_CLASS, job->model_id);
	locked = LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;

	record_job(job, seg);
	if (!locked)
		finish_job(job, "failed", "another training job is already running for this model", NULL);
	else
	{
		SpinLockAcquire(&job->mutex);
		job->phase = HW_PHASE_RUNNING;
		SpinLockRelease(&job->mutex);
		run_job(job);
	}

	SpinLockAcquire(&job->mutex);
	job->phase = HW_PHASE_FINISHED;
	job->progress_seq++;
	SpinLockRelease(&job->mutex);
	if (locked)
		LockRelease(&tag, ExclusiveLock, true);
	proc_exit(0);
}
