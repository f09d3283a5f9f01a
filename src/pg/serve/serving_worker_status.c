/*
 * serving_worker_status.c: rt_serving_workers(), the serving workers of
 * this database (hw_serving_worker.h) whose models the caller may predict
 * with: what each serves, its process, its state, and how many forwards
 * it ran for how many rows (rows / batches: the batching it achieved).
 */
#include "postgres.h"

#include <dirent.h>

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "pg/base/hw_pg.h"
#include "pg/serve/hw_serving_worker.h"

static const char *const phase_names[] = {"starting", "ready", "stopping", "gone"};

/* One row of rt_serving_workers from a rendezvous file's segment. */
static void
worker_row(Tuplestorestate *ts, TupleDesc desc, dsm_handle h)
{
	/* this session may map it already (it predicts through it) */
	dsm_segment *mapped = dsm_find_mapping(h);
	dsm_segment *seg = mapped != NULL ? mapped : dsm_attach(h);
	HwSwQueue  *q;
	Datum       v[7];
	bool        nulls[7] = {0};
	uint32      phase;

	if (seg == NULL)
		return;
	q = dsm_segment_address(seg);
	if (q->magic != HW_SW_MAGIC || q->dboid != MyDatabaseId || !hw_model_has_right(q->model_id, HW_RIGHT_PREDICT))
	{
		if (mapped == NULL)
			dsm_detach(seg);
		return;
	}
	phase = pg_atomic_read_u32(&q->phase);
	/* task_ref is 'model.task': the model is what comes before the last dot */
	v[0] = CStringGetTextDatum(pnstrdup(q->task_ref, strrchr(q->task_ref, '.') - q->task_ref));
	v[1] = Int64GetDatum(q->checkpoint_id);
	v[2] = CStringGetTextDatum(q->average ? "average" : "last");
	v[3] = Int32GetDatum(q->worker_pid);
	nulls[3] = q->worker_pid <= 0;
	v[4] = CStringGetTextDatum(phase_names[Min(phase, (uint32) HW_SW_GONE)]);
	v[5] = Int64GetDatum((int64) pg_atomic_read_u64(&q->batches));
	v[6] = Int64GetDatum((int64) pg_atomic_read_u64(&q->rows));
	tuplestore_putvalues(ts, desc, v, nulls);
	if (mapped == NULL)
		dsm_detach(seg);
}

PG_FUNCTION_INFO_V1(rt_serving_workers);
Datum
rt_serving_workers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DIR        *dir;
	struct dirent *de;
	char        prefix[32];
	char        path[MAXPGPATH];

	InitMaterializedSRF(fcinfo, 0);
	snprintf(prefix, sizeof(prefix), "%u_", MyDatabaseId);
	if ((dir = AllocateDir(HW_SW_DIR)) == NULL)
		return (Datum) 0;
	while ((de = ReadDirExtended(dir, HW_SW_DIR, LOG)) != NULL)
	{
		dsm_handle  h;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || strstr(de->d_name, ".tmp.") != NULL)
			continue;
		snprintf(path, sizeof(path), HW_SW_DIR "/%s", de->d_name);
		if ((h = hw_serving_worker_read_handle(path)) != DSM_HANDLE_INVALID)
			worker_row(rsinfo->setResult, rsinfo->setDesc, h);
		CHECK_FOR_INTERRUPTS();
	}
	FreeDir(dir);
	return (Datum) 0;
}
