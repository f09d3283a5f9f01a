/*
 * pg_bgworker.c: the description of one of headwater's dynamic background
 * workers (training jobs, serving workers): a database connection, started
 * once recovery is over, never restarted by the postmaster, its start and
 * stop reported to the session that registers it.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "pg/base/hw_pg.h"

void
hw_pg_bgworker_init(BackgroundWorker *w, const char *function, const char *type, Datum arg)
{
	memset(w, 0, sizeof(*w));
	w->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w->bgw_start_time = BgWorkerStart_RecoveryFinished;
	w->bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(w->bgw_library_name, BGW_MAXLEN, "headwater");
	snprintf(w->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(w->bgw_type, BGW_MAXLEN, "%s", type);
	w->bgw_main_arg = arg;
	w->bgw_notify_pid = MyProcPid;
}
