/*
 * headwater.c: module entry point, GUCs, and small utility SQL functions.
 *
 * _PG_init only defines GUCs: it never starts threads, OpenMP teams or CUDA
 * (those belong to the training worker and to the calls that need them).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "pg/serve/hw_serving_shared.h"
#include "pg/serve/hw_serving.h"
#include "pg/serve/hw_serving_device.h"
#include "pg/serve/hw_serving_worker.h"
#include "pg/task/hw_pg_task.h"
#include "utils/guc.h"

#include "core/hw_common.h"
#include "pg/train/hw_train.h"
#include "core/snapshot.h"

PG_MODULE_MAGIC;

void _PG_init(void);

/* ---- training limits (train_limits.c, train_loop.c; docs/user_guide.md) ---- */
int hw_max_training_workers = 4;
int hw_max_training_workers_per_role = 2;
int hw_debug_rank_stall_ms = 0;

static void
hw_train_guc_init(void)
{
	/* each job is one background worker (its ranks are threads in it), and
	 * they come out of max_worker_processes, which parallel query, logical
	 * replication and other extensions share: the default leaves them room */
	DefineCustomIntVariable("headwater.max_training_workers",
							"Training jobs the server runs at once (one background worker each).",
							"Keep it below max_worker_processes minus the workers parallel query and "
							"replication need; 0 disables training.",
							&hw_max_training_workers, 4, 0, 1024,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("headwater.max_training_workers_per_role",
							"Training jobs one role runs at once.",
							"Superusers set it (ALTER ROLE ... SET for one role); 0 forbids training.",
							&hw_max_training_workers_per_role, 2, 0, 1024,
							PGC_SUSET, 0, NULL, NULL, NULL);
	/* a test hook, not a feature: a late rank for rank_timeout and for the
	 * termination of a stalled job; superuser only, so no role can park
	 * worker slots with it */
	DefineCustomIntVariable("headwater.debug_rank_stall_ms",
							"For tests: the last data-parallel rank sleeps this long at each step.",
							NULL,
							&hw_debug_rank_stall_ms, 0, 0, 60000,
							PGC_SUSET, GUC_UNIT_MS | GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							NULL, NULL, NULL);
}

void
_PG_init(void)
{
	/* GUCs are defined by the files that own them. */
	hw_serving_shared_guc_init();
	hw_serving_guc_init();
	hw_serving_device_guc_init();
	hw_serving_worker_guc_init();
	hw_batch_guc_init();
	hw_train_guc_init();
}

PG_FUNCTION_INFO_V1(rt_version);
Datum
rt_version(PG_FUNCTION_ARGS)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "headwater 0.1.0 (snapshot format %d)", HW_SNAPSHOT_FORMAT_VERSION);
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}
