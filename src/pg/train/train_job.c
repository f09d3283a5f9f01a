/*
 * train_job.c: the caller side of training: rt_train, rt_wait, rt_cancel,
 * rt_status.
 *
 * rt_train validates its arguments and options (train_options.c), checks
 * that no other job trains the model, creates the job's shared memory
 * segment (hw_train.h), starts a dynamic background worker connected to the
 * same database as the calling role, and by default waits for it, relaying
 * progress as NOTICEs.  If the wait is cancelled (Ctrl-C, pg_cancel_backend,
 * statement_timeout) the worker is asked to write a checkpoint and stop, and
 * the error says so.
 *
 * One job per model, race-free: the worker holds the model's training lock
 * (a session advisory lock) while it trains.  A caller takes the model's
 * launch lock (a transaction advisory lock, so an error releases it), and
 * under it checks the training lock, starts the worker and waits until the
 * worker holds the training lock and has committed its job row; only then
 * does it release the launch lock.  A concurrent caller therefore waits for
 * at most one worker start-up and then sees the training lock held: it gets
 * 55006 (object_in_use) at call time, naming the running job.  (The caller
 * cannot insert the job row itself: with wait => true its transaction stays
 * open, so the row would be invisible to the worker until training ends.)
 *
 * Launches of the whole server are also serialised, shortly, to count the
 * training workers against their caps (train_limits.c).
 *
 * Names in hints that suggest SQL are quoted with quote_literal_cstr; no
 * value is ever formatted into SQL text (SPI parameters only).
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/datum.h"
#include <math.h>
#include "utils/timestamp.h"

#include "utils/snapmgr.h"

#include "pg/base/hw_pg.h"
#include "pg/train/hw_checkpoint.h"
#include "pg/base/hw_settings_pg.h"
#include "pg/train/hw_train.h"

/*
 * The job of the worker holding the model's training lock, read with the
 * latest snapshot (whatever this transaction's isolation level), so a job
 * committed by a worker a moment ago is seen; -1 if none.  Caller in SPI.
 */
static int64
running_job_of_model(int32 model_id)
{
	Oid     argtypes[1] = {INT4OID};
	Datum   values[1] = {Int32GetDatum(model_id)};
	int64   job = -1;
	bool    isnull;

	PushActiveSnapshot(GetLatestSnapshot());
	if (SPI_execute_with_args("SELECT job_id FROM headwater.job WHERE model_id = $1 "
							  "AND state IN ('starting','running') ORDER BY job_id DESC LIMIT 1",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		job = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	PopActiveSnapshot();
	return job;
}

/* True when some process (a training worker) holds the model's train lock. */
static bool
model_lock_held(int32 model_id)
{
	LOCKTAG     tag;
	LockAcquireResult r;

	HW_SET_LOCKTAG(tag, MyDatabaseId, HW_TRAIN_LOCK_CLASS, model_id);
	r = LockAcquire(&tag, ExclusiveLock, true, true);
	if (r == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ExclusiveLock, true);
	return false;
}

/* ---- waiting and relaying progress ---- */

typedef struct WaitState
{
	HwJobShared *job;
	int32        last_step_reported;
	char         last_message[1024];
} WaitState;

static void
wait_error_context(void *arg)
{
	WaitState *ws = (WaitState *) arg;

	/* Reached only for errors raised while waiting (cancel, timeout,
	 * termination of this backend): tell the worker to checkpoint and stop. */
	pg_atomic_write_u32(&ws->job->cancel_requested, 1);
	errcontext("training job %lld was asked to write a checkpoint and stop (at step %d); "
			   "rt_train resumes from the last checkpoint",
			   (long long) ws->job->job_id, ws->job->step);
}

/* A waiting caller that goes away (error, cancel, lost connection, exit)
 * detaches the segment: tell the worker to checkpoint and stop, so no
 * orphan keeps training for nobody. */
static void
caller_detached(dsm_segment *seg, Datum arg)
{
	HwJobShared *job = (HwJobShared *) DatumGetPointer(arg);

	pg_atomic_write_u32(&job->cancel_requested, 1);
}

/*
 * A jsonb datum of an SPI result, detoasted and copied into the caller's
 * memory (the context current at SPI_connect): SPI_finish frees SPI's own,
 * and a function's result that pointed there was read after it was freed
 * (rt_train's result, stored with INSERT ... SELECT rt_train(...), then
 * crashed a backend reading it once it had grown by a field).
 */
static Jsonb *
jsonb_out_of_spi(Datum d)
{
	return DatumGetJsonbP(SPI_datumTransfer(PointerGetDatum(DatumGetJsonbP(d)), false, -1));
}

/* Final row of a job as jsonb (result or error), in the caller's memory;
 * caller in SPI. */
static Jsonb *
job_result(int64 job_id, char **state_out, char **error_out)
{
	Oid     argtypes[1] = {INT8OID};
	Datum   values[1] = {Int64GetDatum(job_id)};
	bool    isnull;
	Jsonb  *res = NULL;

	*state_out = NULL;
	*error_out = NULL;
	if (SPI_execute_with_args("SELECT state, error, coalesce(result, jsonb_build_object("
							  "'job_id', job_id, 'state', state, 'steps_done', step)) "
							  "FROM headwater.job WHERE job_id = $1",
							  1, argtypes, values, NULL, false /* fresh snapshot: see the worker's commit */, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		return NULL;
	*state_out = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	*error_out = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);
	if (!isnull)
		res = jsonb_out_of_spi(d);
	return res;
}

/*
 * Wait for the job's worker to finish, relaying progress every
 * progress_ms.  Returns the job's result; raises the worker's error.
 * Caller is connected to SPI.
 */
static Jsonb *
wait_for_job(HwJobShared *job, BackgroundWorkerHandle *handle, int progress_ms)
{
	WaitState   ws = {job, -1, ""};
	ErrorContextCallback cb;
	TimestampTz last_notice = GetCurrentTimestamp();
	uint64      seen_seq = 0;

	for (;;)
	{
		int     phase;
		uint64  seq;
		int32   step;
		double  loss, lr, tps, eta, vloss;
		char    msg[1024];

		SpinLockAcquire(&job->mutex);
		phase = job->phase;
		seq = job->progress_seq;
		step = job->step;
		loss = job->loss;
		lr = job->lr;
		tps = job->tokens_per_s;
		eta = job->eta_s;
		vloss = job->val_loss;
		strlcpy(msg, job->message, sizeof(msg));
		SpinLockRelease(&job->mutex);

		/* status lines (device, preset, resume point) as they change */
		if (msg[0] != '\0' && strcmp(msg, ws.last_message) != 0 && phase == HW_PHASE_RUNNING)
		{
			ereport(NOTICE, (errmsg("%s", msg)));
			strlcpy(ws.last_message, msg, sizeof(ws.last_message));
		}
		if (seq != seen_seq && step != ws.last_step_reported && step > job->start_step &&
			TimestampDifferenceExceeds(last_notice, GetCurrentTimestamp(), progress_ms))
		{
			/* a budget without steps: the step alone, not a total */
			const char *of = job->steps_target == HW_TRAIN_MAX_STEPS ? "" : psprintf("/%d", job->steps_target);

			if (isnan(vloss))
				ereport(NOTICE,
						(errmsg("step %d%s  loss %.4f  lr %.2e  %.0f tokens/s  ETA %.0f s",
								step, of, loss, lr, tps, eta)));
			else
				ereport(NOTICE,
						(errmsg("step %d%s  loss %.4f  val loss %.4f  lr %.2e  %.0f tokens/s  ETA %.0f s",
								step, of, loss, vloss, lr, tps, eta)));
			ws.last_step_reported = step;
			seen_seq = seq;
			last_notice = GetCurrentTimestamp();
		}

		if (phase == HW_PHASE_FINISHED)
			break;
		if (handle != NULL)
		{
			pid_t pid;
			if (GetBackgroundWorkerPid(handle, &pid) == BGWH_STOPPED)
				break;
		}

		/* Only the wait itself runs under the cancel-forwarding callback. */
		cb.callback = wait_error_context;
		cb.arg = &ws;
		cb.previous = error_context_stack;
		error_context_stack = &cb;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 200,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		error_context_stack = cb.previous;
	}

	/* The worker committed its final row before exiting (or died). */
	char   *state, *error;
	Jsonb  *res = job_result(job->job_id, &state, &error);

	if (state == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("training job %lld stopped before it recorded itself", (long long) job->job_id),
				 errdetail("%s", job->message[0] ? job->message : "the worker exited early"),
				 errhint("Check the server log.")));
	if (strcmp(state, "failed") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("training job %lld failed: %s", (long long) job->job_id,
						error ? error : "unknown error"),
				 errhint("Fix the cause and call rt_train again; it resumes from the last checkpoint.")));
	if (strcmp(state, "starting") == 0 || strcmp(state, "running") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("training job %lld ended without a final state (worker exited unexpectedly)",
						(long long) job->job_id),
				 errhint("Check the server log; rt_train resumes from the last checkpoint.")));
	if (strcmp(state, "cancelled") == 0)
		ereport(NOTICE,
				(errmsg("training job %lld was cancelled at step %d; its checkpoint is saved",
						(long long) job->job_id, job->step)));
	return res;
}

/* Marks jobs of the model whose worker is gone (crash, restart) as failed. */
static void
fail_stale_jobs(int32 model_id)
{
	Oid     argtypes[1] = {INT4OID};
	Datum   values[1] = {Int32GetDatum(model_id)};

	SPI_execute_with_args("UPDATE headwater.job SET state = 'failed', finished_at = now(), "
						  "updated_at = now(), error = 'the training worker exited without finishing "
						  "(server crash, restart or kill); the last checkpoint is intact' "
						  "WHERE model_id = $1 AND state IN ('starting','running')",
						  1, argtypes, values, NULL, false, 0);
}

/* The result of a call that has nothing to train (steps = the resume point). */
static Jsonb *
up_to_date_result(const HwCheckpointInfo *at)
{
	Oid     argtypes[2] = {INT4OID, INT8OID};
	Datum   values[2] = {Int32GetDatum(at->step), Int64GetDatum(at->checkpoint_id)};
	bool    isnull;

	if (SPI_execute_with_args("SELECT jsonb_build_object('job_id', NULL, 'state', 'up_to_date', 'steps_done', $1, "
							  "'steps_target', $1, 'resumed_from', $1, 'checkpoint_id', $2)",
							  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not build result");
	return jsonb_out_of_spi(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* rt_train's state, passed between its steps by pointer. */
typedef struct TrainCall
{
	char       *model_name;
	int32       steps;
	ArrayType  *tasks;
	char       *preset;
	Jsonb      *options;
	char       *device;
	bool        wait;
	HwTrainSettings settings;
	int32       model_id;
	Oid         caller;
	LOCKTAG     launch_tag;
	HwCheckpointInfo at;            /* the checkpoint a resumed run continues */
	bool        resuming;
	int64       job_id;
	dsm_segment *seg;
	HwJobShared *job;
	BackgroundWorkerHandle *handle;
	int         phase;              /* the worker's phase when it was counted */
} TrainCall;

/* Every argument and option, here and now (the worker receives them checked). */
static void
parse_train_args(TrainCall *c, FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("model must not be NULL"),
						errhint("Pass the name given to rt_create_model.")));
	c->model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	c->tasks = PG_ARGISNULL(2) ? NULL : PG_GETARG_ARRAYTYPE_P(2);
	c->preset = PG_ARGISNULL(3) ? "auto" : text_to_cstring(PG_GETARG_TEXT_PP(3));
	c->options = PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4);
	/* steps left out: 10000, or with a budget as many as it allows (the
	 * budget ends the run, budget.h) */
	if (!PG_ARGISNULL(1))
		c->steps = PG_GETARG_INT32(1);
	else
		c->steps = c->options != NULL &&
			getKeyJsonValueFromContainer(&c->options->root, "max_minutes", strlen("max_minutes"), NULL) != NULL
			? HW_TRAIN_MAX_STEPS : HW_TRAIN_DEFAULT_STEPS;
	c->device = PG_ARGISNULL(5) ? "auto" : text_to_cstring(PG_GETARG_TEXT_PP(5));
	c->wait = PG_ARGISNULL(6) ? true : PG_GETARG_BOOL(6);

	hw_train_settings_parse(&c->settings, c->steps, c->preset, c->device, c->options ? &c->options->root : NULL);
	/* a lower bound (the real tables only add to it); the worker checks the
	 * exact figure on the CPU.  A GPU's memory is the CUDA backend's concern. */
	if (strcmp(c->settings.device, "cuda") != 0)
		hw_train_check_memory(&c->settings, 1, 0);
	hw_train_check_tasks_array(c->tasks);
}

/* Refuse while another job trains the model; caller holds the launch lock. */
static void
refuse_if_training(const TrainCall *c)
{
	const char *model_name = c->model_name;

	if (!model_lock_held(c->model_id))
		return;
	int64 other = running_job_of_model(c->model_id);

	if (other < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("model \"%s\" is already being trained by another job", model_name),
				 errhint("rt_status(%s) shows its jobs; rt_cancel(%s) stops the running one.",
						 quote_literal_cstr(model_name), quote_literal_cstr(model_name))));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("model \"%s\" is already being trained by job %lld", model_name, (long long) other),
			 errhint("Wait for it with rt_wait(%lld) or stop it with rt_cancel(%s).",
					 (long long) other, quote_literal_cstr(model_name))));
}

/* Whether the call resumes, its sampler checked; true when there is nothing
 * to train (steps = the resume point; below it is an error). */
static bool
resolve_resume(TrainCall *c)
{
	const char *model_name = c->model_name;
	const HwCheckpointInfo *at = &c->at;

	c->resuming = !c->settings.restart && hw_checkpoint_find(c->model_id, -2, &c->at);
	/* a resumed run keeps its checkpoint's sampler: check the mix now */
	if (c->resuming)
		hw_train_settings_resume_sampler(&c->settings, &c->at, c->options ? &c->options->root : NULL);
	else
		hw_train_settings_check_sampler(&c->settings);
	if (!c->resuming || c->steps > at->step)
		return false;
	if (c->steps < at->step)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" is already trained to step %d, beyond steps => %d",
						model_name, at->step, c->steps),
				 errhint("steps is the total number of steps, not the number to add: pass steps => more than %d "
						 "to train further, or options => '{\"restart\": true}' to start over.", at->step)));
	ereport(NOTICE,
			(errmsg("model \"%s\" is already trained to step %d; nothing was trained", model_name, at->step),
			 errhint("steps is the total number of steps, not the number to add: pass steps => more than %d "
					 "to train further, or options => '{\"restart\": true}' to start over.", at->step)));
	return true;
}

/* The job's id and its shared segment, filled for the worker; caller in SPI. */
static void
create_job(TrainCall *c)
{
	bool isnull;

	if (SPI_execute("SELECT nextval('headwater.job_job_id_seq')", false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not allocate a job id");
	c->job_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/* What the worker reads besides the settings (as text, parsed once there). */
	char   *req = hw_train_worker_request(c->model_name, c->tasks, c->preset, c->device, c->options);
	int     req_len = strlen(req);

	if (req_len >= HW_JOB_REQUEST_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rt_train request is too long (%d bytes, at most %d)", req_len, HW_JOB_REQUEST_MAX - 1),
				 errhint("Pass fewer tasks or shorter options.")));

	/* the worker caps, counted under the server's launch lock, kept until
	 * our worker is counted (train_limits.c) */
	hw_train_launch_limits_lock(c->caller, c->model_name);

	c->seg = dsm_create(sizeof(HwJobShared), 0);
	HwJobShared *job = c->job = dsm_segment_address(c->seg);
	memset(job, 0, sizeof(HwJobShared));
	job->job_id = c->job_id;
	job->model_id = c->model_id;
	job->dboid = MyDatabaseId;
	job->roleoid = c->caller;
	job->steps_target = c->steps;
	job->wait = c->wait;
	/* a test hook for superusers only (PGC_SUSET), never an rt_train option */
	job->debug_rank_stall_ms = hw_debug_rank_stall_ms;
	/* validated here, resume merged: the worker uses them as they are */
	job->settings = c->settings;
	job->resume_checkpoint_id = c->resuming ? c->at.checkpoint_id : -1;
	strlcpy(job->request, req, sizeof(job->request));
	pg_atomic_init_u32(&job->cancel_requested, 0);
	SpinLockInit(&job->mutex);
	job->phase = HW_PHASE_LAUNCHED;
	job->val_loss = NAN;
}

/* Start the worker, and wait until it holds the training lock and has
 * recorded the job (or stopped). */
static void
launch_worker(TrainCall *c)
{
	BackgroundWorker worker;
	pid_t pid;

	hw_pg_bgworker_init(&worker, "hw_train_worker_main", HW_TRAIN_WORKER_TYPE,
						UInt32GetDatum(dsm_segment_handle(c->seg)));
	snprintf(worker.bgw_name, BGW_MAXLEN, "headwater training job %lld", (long long) c->job_id);

	if (!RegisterDynamicBackgroundWorker(&worker, &c->handle))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start a training worker for model \"%s\": no free background worker slot",
						c->model_name),
				 errhint("Raise max_worker_processes (restart required) or wait for other workers to finish.")));
	if (WaitForBackgroundWorkerStartup(c->handle, &pid) != BGWH_STARTED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("the training worker for model \"%s\" did not start", c->model_name),
				 errhint("Check the server log.")));

	/* Do not return (and detach the segment), nor let the next caller in,
	 * before the worker holds the training lock and has recorded the job. */
	for (;;)
	{
		SpinLockAcquire(&c->job->mutex);
		c->phase = c->job->phase;
		SpinLockRelease(&c->job->mutex);
		if (c->phase != HW_PHASE_LAUNCHED)
			break;
		if (GetBackgroundWorkerPid(c->handle, &pid) == BGWH_STOPPED)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* The call's result: the job's outcome (waiting, or a worker that stopped
 * already) or where to follow it; caller in SPI. */
static Jsonb *
call_result(TrainCall *c)
{
	int    progress_ms = (int) (c->settings.progress_seconds * 1000);
	Jsonb *result;
	bool   isnull;

	if (c->wait)
	{
		on_dsm_detach(c->seg, caller_detached, PointerGetDatum(c->job));
		result = wait_for_job(c->job, c->handle, progress_ms);
		/* the worker keeps its own mapping; ours ends here (not at commit) */
		cancel_on_dsm_detach(c->seg, caller_detached, PointerGetDatum(c->job));
		return result;
	}
	if (c->phase != HW_PHASE_RUNNING)
		/* the worker stopped already: its outcome (an error, usually) */
		return wait_for_job(c->job, c->handle, progress_ms);

	Oid     argtypes[2] = {INT8OID, TEXTOID};
	Datum   values[2];

	values[0] = Int64GetDatum(c->job_id);
	values[1] = CStringGetTextDatum(psprintf("follow it with rt_status(%s) or rt_wait(%lld)",
											 quote_literal_cstr(c->model_name), (long long) c->job_id));
	if (SPI_execute_with_args("SELECT jsonb_build_object('job_id', $1, 'state', 'running', 'hint', $2)",
							  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not build result");
	return jsonb_out_of_spi(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

PG_FUNCTION_INFO_V1(rt_train);
Datum
rt_train(PG_FUNCTION_ARGS)
{
	TrainCall   c;
	HwAsOwner   as_owner;
	Jsonb      *result;

	memset(&c, 0, sizeof(c));
	parse_train_args(&c, fcinfo);
	c.model_id = hw_pg_model_id(c.model_name, false);
	c.caller = GetUserId();
	hw_model_require(c.model_id, HW_RIGHT_OWN, "train");

	SPI_connect();
	/* headwater's tables are read and written as their owner; the source
	 * tables' privileges are checked for the calling role explicitly */
	hw_become_owner(&as_owner);
	hw_train_check_tasks_exist(c.model_id, c.tasks, c.model_name);
	hw_train_check_task_weights(c.model_id, c.tasks, c.options, c.model_name);
	hw_train_check_source_privileges(c.model_id, c.model_name, c.caller);

	/* One launch at a time per model (file comment); held until our worker
	 * holds the training lock, released at once by an error. */
	HW_SET_LOCKTAG(c.launch_tag, MyDatabaseId, HW_LAUNCH_LOCK_CLASS, c.model_id);
	(void) LockAcquire(&c.launch_tag, ExclusiveLock, false, false);
	refuse_if_training(&c);
	fail_stale_jobs(c.model_id);

	/* steps is a total: nothing to do at the resume point, an error below it */
	if (resolve_resume(&c))
	{
		result = up_to_date_result(&c.at);
		LockRelease(&c.launch_tag, ExclusiveLock, false);
		hw_restore_user(&as_owner);
		SPI_finish();
		PG_RETURN_JSONB_P(result);
	}
	create_job(&c);
	launch_worker(&c);
	hw_train_launch_limits_unlock();
	LockRelease(&c.launch_tag, ExclusiveLock, false);

	result = call_result(&c);
	dsm_detach(c.seg);
	hw_restore_user(&as_owner);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(rt_wait);
Datum
rt_wait(PG_FUNCTION_ARGS)
{
	int64   job_id = PG_GETARG_INT64(0);
	Oid     argtypes[1] = {INT8OID};
	Datum   values[1] = {Int64GetDatum(job_id)};
	bool    isnull;
	Jsonb  *result;
	HwAsOwner as_owner;

	hw_job_require_visible(job_id);
	SPI_connect();
	hw_become_owner(&as_owner);
	if (SPI_execute_with_args("SELECT state, dsm_handle FROM headwater.job WHERE job_id = $1",
							  1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("training job %lld does not exist", (long long) job_id),
				 errhint("rt_status() lists the jobs.")));
	Datum h = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	dsm_segment *seg = isnull ? NULL : dsm_attach((dsm_handle) DatumGetInt64(h));

	if (seg == NULL)
	{
		/* finished (or never started): report the recorded state */
		char *state, *error;
		result = job_result(job_id, &state, &error);
		if (state && strcmp(state, "failed") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("training job %lld failed: %s", (long long) job_id, error ? error : "unknown error"),
					 errhint("Fix the cause and call rt_train again; it resumes from the last checkpoint.")));
	}
	else
	{
		result = wait_for_job((HwJobShared *) dsm_segment_address(seg), NULL, 2000);
		dsm_detach(seg);
	}
	hw_restore_user(&as_owner);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(rt_cancel);
Datum
rt_cancel(PG_FUNCTION_ARGS)
{
	char   *model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32   model_id = hw_pg_model_id(model_name, false);
	Oid     argtypes[1] = {INT4OID};
	Datum   values[1] = {Int32GetDatum(model_id)};
	bool    isnull;
	int64   job_id = -1;
	dsm_segment *seg = NULL;
	HwAsOwner as_owner;

	hw_model_require(model_id, HW_RIGHT_OWN, "cancel training of");
	SPI_connect();
	hw_become_owner(&as_owner);
	if (SPI_execute_with_args("SELECT job_id, dsm_handle FROM headwater.job WHERE model_id = $1 "
							  "AND state IN ('starting','running') ORDER BY job_id DESC LIMIT 1",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		job_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		Datum h = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
		if (!isnull)
			seg = dsm_attach((dsm_handle) DatumGetInt64(h));
	}
	hw_restore_user(&as_owner);
	SPI_finish();
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" has no running training job", model_name),
				 errhint("rt_status(%s) shows its jobs.", quote_literal_cstr(model_name))));
	pg_atomic_write_u32(&((HwJobShared *) dsm_segment_address(seg))->cancel_requested, 1);
	dsm_detach(seg);
	ereport(NOTICE,
			(errmsg("training job %lld of model \"%s\" will write a checkpoint and stop",
					(long long) job_id, model_name)));
	PG_RETURN_INT64(job_id);
}

PG_FUNCTION_INFO_V1(rt_status);
Datum
rt_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	/* $2, $3: the caller and whether it is a superuser, decided here (the
	 * query runs as the owner): a job is visible to the role that started
	 * it, to the model's owner role and its members, and to superusers */
	Oid     argtypes[3] = {TEXTOID, OIDOID, BOOLOID};
	Datum   values[3] = {(Datum) 0, ObjectIdGetDatum(GetUserId()), BoolGetDatum(superuser())};
	char    nulls[3] = {PG_ARGISNULL(0) ? 'n' : ' ', ' ', ' '};

	InitMaterializedSRF(fcinfo, 0);
	if (!PG_ARGISNULL(0))
	{
		(void) hw_pg_model_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
		values[0] = PG_GETARG_DATUM(0);
	}
	HwAsOwner as_owner;
	SPI_connect();
	hw_become_owner(&as_owner);
	/* A job still marked running whose worker is not alive is reported as
	 * failed (the row is fixed by the next rt_train of that model). */
	if (SPI_execute_with_args(
			"SELECT j.job_id, m.name, "
			"  CASE WHEN j.state IN ('starting','running') AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a "
			"       WHERE a.pid = j.pid AND a.backend_type = 'headwater training') THEN 'failed' ELSE j.state END, "
			"  j.step, j.steps_target, j.loss, j.val_metrics, j.tokens_per_s, j.checkpoint_id, "
			"  j.started_at, j.updated_at, j.finished_at, "
			"  CASE WHEN j.state IN ('starting','running') AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a "
			"       WHERE a.pid = j.pid AND a.backend_type = 'headwater training') "
			"       THEN 'the training worker exited without finishing (server crash, restart or kill)' ELSE j.error END "
			"FROM headwater.job j JOIN headwater.model m USING (model_id) "
			"WHERE ($1 IS NULL OR m.name = $1) "
			"  AND ($3 OR pg_has_role($2, j.role_oid, 'USAGE') OR pg_has_role($2, m.owner::oid, 'USAGE')) "
			"ORDER BY j.job_id DESC",
			3, argtypes, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.job");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum   out[13];
		bool    outnull[13];
		for (int c = 0; c < 13; c++)
			out[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1, &outnull[c]);
		/* copy by-reference values out of SPI memory */
		MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
		for (int c = 0; c < 13; c++)
			if (!outnull[c])
			{
				Form_pg_attribute att = TupleDescAttr(SPI_tuptable->tupdesc, c);
				out[c] = datumCopy(out[c], att->attbyval, att->attlen);
			}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, outnull);
		MemoryContextSwitchTo(old);
	}
	hw_restore_user(&as_owner);
	SPI_finish();
	return (Datum) 0;
}
