/*
 * train_job.c: the caller side of training: rt_train, rt_wait, rt_cancel,
 * rt_status.
 *
 * rt_train validates its arguments, checks that no other job trains the
 * model, creates the job's shared memory segment (hw_train.h), starts a
 * dynamic background worker connected to the same database as the calling
 * role, and by default waits for it, relaying progress as NOTICEs.  If the
 * wait is cancelled (Ctrl-C, pg_cancel_backend, statement_timeout) the worker
 * is asked to write a checkpoint and stop, and the error says so.
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

#include "hw_pg.h"
#include "hw_train.h"

/* advisory-lock class for "a worker trains model X" (pg_locks.classid) */
#define HW_TRAIN_LOCK_CLASS 0x6877   /* 'hw' */

static const char *const known_option_keys[] = {
	"restart", "checkpoint_every", "val_every", "val_batches", "log_every",
	"lr", "warmup_steps", "weight_decay", "batch_size", "seq_len", "seed",
	"split_seed", "threads", "task_weights", "d_model", "n_layers", "n_heads",
	"full_attention", "max_rows", "child_width", "child_sampling", "recent_children",
	"key_cells", "progress_seconds", NULL
};

static void
check_option_keys(Jsonb *options)
{
	JsonbIterator *it;
	JsonbValue  v;
	JsonbIteratorToken tok;
	int         depth = 0;

	if (options == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rt_train options must be a JSON object"),
				 errhint("For example: options => '{\"checkpoint_every\": 100}'")));
	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_BEGIN_OBJECT || tok == WJB_BEGIN_ARRAY)
			depth++;
		else if (tok == WJB_END_OBJECT || tok == WJB_END_ARRAY)
			depth--;
		else if (tok == WJB_KEY && depth == 1)
		{
			char   *key = pnstrdup(v.val.string.val, v.val.string.len);
			bool    ok = false;
			StringInfoData known;

			for (int i = 0; known_option_keys[i]; i++)
				ok |= strcmp(key, known_option_keys[i]) == 0;
			if (ok)
				continue;
			initStringInfo(&known);
			for (int i = 0; known_option_keys[i]; i++)
				appendStringInfo(&known, "%s%s", i ? ", " : "", known_option_keys[i]);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown rt_train option \"%s\"", key),
					 errhint("Valid options are: %s.", known.data)));
		}
	}
}

/* Name of the model with this id (for messages); caller is in SPI. */
static int64
running_job_of_model(int32 model_id)
{
	Oid     argtypes[1] = {INT4OID};
	Datum   values[1] = {Int32GetDatum(model_id)};
	int64   job = -1;
	bool    isnull;

	if (SPI_execute_with_args("SELECT job_id FROM headwater.job WHERE model_id = $1 "
							  "AND state IN ('starting','running') ORDER BY job_id DESC LIMIT 1",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		job = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return job;
}

/* True when some process (a training worker) holds the model's train lock. */
static bool
model_lock_held(int32 model_id)
{
	LOCKTAG     tag;
	LockAcquireResult r;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, HW_TRAIN_LOCK_CLASS, (uint32) model_id, 2);
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

/* Final row of a job as jsonb (result or error); caller in SPI. */
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
		res = DatumGetJsonbPCopy(d);
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
			if (isnan(vloss))
				ereport(NOTICE,
						(errmsg("step %d/%d  loss %.4f  lr %.2e  %.0f tokens/s  ETA %.0f s",
								step, job->steps_target, loss, lr, tps, eta)));
			else
				ereport(NOTICE,
						(errmsg("step %d/%d  loss %.4f  val loss %.4f  lr %.2e  %.0f tokens/s  ETA %.0f s",
								step, job->steps_target, loss, vloss, lr, tps, eta)));
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

static void
validate_tasks(int32 model_id, ArrayType *tasks_arr, const char *model_name)
{
	Oid     argtypes[2] = {INT4OID, TEXTARRAYOID};
	Datum   values[2] = {Int32GetDatum(model_id), tasks_arr ? PointerGetDatum(tasks_arr) : (Datum) 0};
	char    nulls[2] = {' ', tasks_arr ? ' ' : 'n'};

	if (SPI_execute_with_args("SELECT count(*) FROM headwater.task WHERE model_id = $1",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.task");
	bool isnull;
	int64 ntasks = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (ntasks == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" has no tasks to train on", model_name),
				 errhint("Create one with rt_create_task('%s', 'task_name', query => ...).", model_name)));
	if (tasks_arr == NULL)
		return;
	if (SPI_execute_with_args("SELECT t FROM unnest($2) AS t WHERE t IS NULL OR NOT EXISTS "
							  "(SELECT 1 FROM headwater.task k WHERE k.model_id = $1 AND k.name = t)",
							  2, argtypes, values, nulls, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.task");
	if (SPI_processed > 0)
	{
		char *t = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist in model \"%s\"", t ? t : "(null)", model_name),
				 errhint("rt_tasks('%s') lists the model's tasks.", model_name)));
	}
}

/* A role that cannot read every source table of the model cannot train it. */
static void
check_source_privileges(int32 model_id, const char *model_name, Oid role)
{
	Oid     argtypes[2] = {INT4OID, OIDOID};
	Datum   values[2] = {Int32GetDatum(model_id), ObjectIdGetDatum(role)};

	if (SPI_execute_with_args("SELECT format('%I.%I', m.source_schema, t.table_name) "
							  "FROM headwater.model m JOIN headwater.model_table t USING (model_id) "
							  "WHERE m.model_id = $1 AND NOT has_table_privilege($2, "
							  "format('%I.%I', m.source_schema, t.table_name), 'SELECT') LIMIT 1",
							  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.model_table");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to train model \"%s\": role \"%s\" cannot SELECT from %s",
						model_name, GetUserNameFromId(GetUserId(), false),
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errhint("Training reads the model's source tables as the calling role; GRANT SELECT on them.")));
}

/* options.progress_seconds: how often progress NOTICEs are relayed (default 2 s). */
static int
progress_ms_option(Jsonb *options)
{
	JsonbValue *v;

	if (options == NULL)
		return 2000;
	v = getKeyJsonValueFromContainer(&options->root, "progress_seconds", strlen("progress_seconds"), NULL);
	if (v == NULL || v->type != jbvNumeric)
		return 2000;
	return (int) (DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric))) * 1000);
}

PG_FUNCTION_INFO_V1(rt_train);
Datum
rt_train(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("model must not be NULL"),
						errhint("Pass the name given to rt_create_model.")));
	char       *model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32       steps = PG_ARGISNULL(1) ? 10000 : PG_GETARG_INT32(1);
	ArrayType  *tasks = PG_ARGISNULL(2) ? NULL : PG_GETARG_ARRAYTYPE_P(2);
	char       *preset = PG_ARGISNULL(3) ? "auto" : text_to_cstring(PG_GETARG_TEXT_PP(3));
	Jsonb      *options = PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4);
	char       *device = PG_ARGISNULL(5) ? "auto" : text_to_cstring(PG_GETARG_TEXT_PP(5));
	bool        wait = PG_ARGISNULL(6) ? true : PG_GETARG_BOOL(6);

	if (steps <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("steps must be positive, got %d", steps),
				 errhint("steps is the total number of optimiser steps; training resumes from the last checkpoint.")));
	if (strcmp(preset, "auto") && strcmp(preset, "tiny") && strcmp(preset, "small") && strcmp(preset, "base"))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown preset \"%s\"", preset),
				 errhint("Use 'auto', 'tiny', 'small' or 'base'.")));
	if (strcmp(device, "auto") && strcmp(device, "cpu") && strcmp(device, "cuda"))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown device \"%s\"", device),
				 errhint("Use 'auto', 'cpu' or 'cuda'.")));
	check_option_keys(options);

	int32 model_id = hw_pg_model_id(model_name, false);
	Oid   caller = GetUserId();
	HwAsOwner as_owner;

	SPI_connect();
	/* headwater's tables are read and written as their owner; the source
	 * tables' privileges are checked for the calling role explicitly */
	hw_become_owner(&as_owner);
	validate_tasks(model_id, tasks, model_name);
	check_source_privileges(model_id, model_name, caller);

	if (model_lock_held(model_id))
	{
		int64 other = running_job_of_model(model_id);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("model \"%s\" is already being trained by job %lld", model_name, (long long) other),
				 errhint("Wait for it with rt_wait(%lld) or stop it with rt_cancel('%s').",
						 (long long) other, model_name)));
	}
	fail_stale_jobs(model_id);

	if (SPI_execute("SELECT nextval('headwater.job_job_id_seq')", false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not allocate a job id");
	bool isnull;
	int64 job_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/* The request the worker reads: everything as one jsonb text. */
	StringInfoData req;
	initStringInfo(&req);
	{
		Oid     argtypes[5] = {TEXTOID, TEXTARRAYOID, TEXTOID, TEXTOID, JSONBOID};
		Datum   values[5];
		char    nulls[5] = {' ', tasks ? ' ' : 'n', ' ', ' ', options ? ' ' : 'n'};

		values[0] = CStringGetTextDatum(model_name);
		values[1] = tasks ? PointerGetDatum(tasks) : (Datum) 0;
		values[2] = CStringGetTextDatum(preset);
		values[3] = CStringGetTextDatum(device);
		values[4] = options ? JsonbPGetDatum(options) : (Datum) 0;
		if (SPI_execute_with_args("SELECT jsonb_build_object('model', $1, 'tasks', $2, 'preset', $3, "
								  "'device', $4, 'options', coalesce($5, '{}'::jsonb))::text",
								  5, argtypes, values, nulls, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not build the training request");
		appendStringInfoString(&req, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	}
	if (req.len >= HW_JOB_REQUEST_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rt_train request is too long (%d bytes, at most %d)", req.len, HW_JOB_REQUEST_MAX - 1),
				 errhint("Pass fewer tasks or shorter options.")));

	dsm_segment *seg = dsm_create(sizeof(HwJobShared), 0);
	HwJobShared *job = dsm_segment_address(seg);
	memset(job, 0, sizeof(HwJobShared));
	job->job_id = job_id;
	job->model_id = model_id;
	job->dboid = MyDatabaseId;
	job->roleoid = caller;
	job->steps_target = steps;
	job->wait = wait;
	strlcpy(job->request, req.data, sizeof(job->request));
	pg_atomic_init_u32(&job->cancel_requested, 0);
	SpinLockInit(&job->mutex);
	job->phase = HW_PHASE_LAUNCHED;
	job->val_loss = NAN;

	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "headwater");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "hw_train_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "headwater training job %lld", (long long) job_id);
	snprintf(worker.bgw_type, BGW_MAXLEN, "headwater training");
	worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start a training worker for model \"%s\": no free background worker slot",
						model_name),
				 errhint("Raise max_worker_processes (restart required) or wait for other workers to finish.")));
	pid_t pid;
	if (WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("the training worker for model \"%s\" did not start", model_name),
				 errhint("Check the server log.")));

	/* Do not return (and detach the segment) before the worker has attached. */
	for (;;)
	{
		int phase;
		SpinLockAcquire(&job->mutex);
		phase = job->phase;
		SpinLockRelease(&job->mutex);
		if (phase != HW_PHASE_LAUNCHED)
			break;
		if (GetBackgroundWorkerPid(handle, &pid) == BGWH_STOPPED)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}

	Jsonb *result;
	if (wait)
		on_dsm_detach(seg, caller_detached, PointerGetDatum(job));
	if (!wait)
	{
		if (SPI_execute(psprintf("SELECT jsonb_build_object('job_id', %lld, 'state', 'running', "
								 "'hint', 'follow it with rt_status(''%s'') or rt_wait(%lld)')",
								 (long long) job_id, model_name, (long long) job_id), true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not build result");
		result = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	else
		result = wait_for_job(job, handle, progress_ms_option(options));
	/* the worker keeps its own mapping; ours ends here (not at commit) */
	if (wait)
		cancel_on_dsm_detach(seg, caller_detached, PointerGetDatum(job));
	dsm_detach(seg);
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
				 errhint("rt_status('%s') shows its jobs.", model_name)));
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
	Oid     argtypes[1] = {TEXTOID};
	Datum   values[1];
	char    nulls[1] = {PG_ARGISNULL(0) ? 'n' : ' '};

	InitMaterializedSRF(fcinfo, 0);
	if (!PG_ARGISNULL(0))
	{
		(void) hw_pg_model_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
		values[0] = PG_GETARG_DATUM(0);
	}
	else
		values[0] = (Datum) 0;

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
			"WHERE $1 IS NULL OR m.name = $1 ORDER BY j.job_id DESC",
			1, argtypes, values, nulls, true, 0) != SPI_OK_SELECT)
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
