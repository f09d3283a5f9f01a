/*
 * train_limits.c: how many training jobs may run, and when a model is busy.
 *
 * Every training job is one background worker (its data-parallel ranks are
 * threads inside it), taken from max_worker_processes, which parallel query,
 * logical replication and other extensions share.  So the server caps the
 * training workers (headwater.max_training_workers) and each role's
 * (headwater.max_training_workers_per_role), or one role could hold every
 * slot.
 *
 * Counting is race-free: the backend launching a job takes the server's
 * launch lock (a transaction-level lock SQL cannot take, hw_train.h) before
 * it counts, and keeps it until its worker is connected (and so counted) or
 * stopped; train_job.c.  The count is of live processes, read from the
 * backend status array: a worker is a background worker whose registered
 * type is "headwater training" (not its application_name, which any session
 * can set), counted for its role when it is connected as that role.  A
 * worker that crashed or was killed is gone from it at once.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"

#include "pg/train/hw_train.h"

void
hw_count_background_workers(const char *type_name, Oid role, int *server, int *of_role)
{
	int n;

	*server = 0;
	*of_role = 0;
	/* a fresh read, not this transaction's cached copy */
	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);
		PgBackendStatus *be;
		const char *type;

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		if (be->st_backendType != B_BG_WORKER || be->st_procpid <= 0)
			continue;
		type = GetBackgroundWorkerTypeByPid(be->st_procpid);
		if (type == NULL || strcmp(type, type_name) != 0)
			continue;
		(*server)++;
		if (be->st_userid == role)
			(*of_role)++;
	}
	pgstat_clear_backend_activity_snapshot();
}

void
hw_train_launch_limits_lock(Oid role, const char *model_name)
{
	LOCKTAG     tag;
	int         server, of_role;
	const char *role_name = GetUserNameFromId(role, false);

	HW_SET_LOCKTAG(tag, InvalidOid, HW_LAUNCH_LOCK_CLASS, 0);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	hw_count_background_workers(HW_TRAIN_WORKER_TYPE, role, &server, &of_role);
	if (server >= hw_max_training_workers)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("cannot train model \"%s\": the server already runs %d training job(s), "
						"headwater.max_training_workers = %d",
						model_name, server, hw_max_training_workers),
				 errhint("Wait for a job to finish (rt_wait), stop one with rt_cancel, or ask the "
						 "database administrator to raise headwater.max_training_workers "
						 "(below max_worker_processes).")));
	if (of_role >= hw_max_training_workers_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("cannot train model \"%s\": role \"%s\" already runs %d training job(s), "
						"headwater.max_training_workers_per_role = %d",
						model_name, role_name, of_role, hw_max_training_workers_per_role),
				 errhint("Wait for one of them to finish (rt_wait), stop one with rt_cancel, or ask a "
						 "superuser to raise headwater.max_training_workers_per_role for the role.")));
}

void
hw_train_launch_limits_unlock(void)
{
	LOCKTAG     tag;

	HW_SET_LOCKTAG(tag, InvalidOid, HW_LAUNCH_LOCK_CLASS, 0);
	LockRelease(&tag, ExclusiveLock, false);
}

void
hw_train_require_idle(int32 model_id, const char *model_name, const char *action)
{
	LOCKTAG     launch, train;

	/* no launch of this model until the caller's transaction ends */
	HW_SET_LOCKTAG(launch, MyDatabaseId, HW_LAUNCH_LOCK_CLASS, model_id);
	(void) LockAcquire(&launch, ExclusiveLock, false, false);
	HW_SET_LOCKTAG(train, MyDatabaseId, HW_TRAIN_LOCK_CLASS, model_id);
	if (LockAcquire(&train, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot %s model \"%s\": a training job of the model is running", action, model_name),
				 errhint("Stop it with rt_cancel(%s) and wait for it with rt_wait(job_id) "
						 "(rt_status(%s) shows it), then try again.",
						 quote_literal_cstr(model_name), quote_literal_cstr(model_name))));
	LockRelease(&train, ExclusiveLock, false);
}
