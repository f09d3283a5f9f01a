/*
 * headwater.c: module entry point, GUCs, and small utility SQL functions.
 *
 * _PG_init only defines GUCs: it never starts threads, OpenMP teams or CUDA
 * (those belong to the training worker and to the calls that need them).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "hw_serving_shared.h"
#include "hw_serving.h"
#include "hw_pg_task.h"
#include "utils/guc.h"

#include "hw_common.h"
#include "snapshot.h"

PG_MODULE_MAGIC;

void _PG_init(void);

void
_PG_init(void)
{
	/* GUCs are defined by the files that own them. */
	hw_serving_shared_guc_init();
	hw_serving_guc_init();
	hw_batch_guc_init();
}

PG_FUNCTION_INFO_V1(rt_version);
Datum
rt_version(PG_FUNCTION_ARGS)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "headwater 0.1.0 (snapshot format %d)", HW_SNAPSHOT_FORMAT_VERSION);
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}
