/*
 * tape_read.c: rt_tape(task), the rows of headwater.tape of the task's model.
 *
 * The tape shows a model's ops, tensor shapes and timings: the owner's, like
 * the weights.  headwater.tape is not readable by PUBLIC; this function
 * reads it as the extension owner after the same check as rt_debug_tape
 * (the model's owner, its members, superusers).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "hw_pg.h"
#include "hw_pg_task.h"

#define TAPE_COLUMNS 8      /* after checkpoint_id: seq .. recorded_at */

PG_FUNCTION_INFO_V1(rt_tape);
Datum
rt_tape(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char          *task;
	int32          model_id;
	HwAsOwner      as;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("task must not be NULL"),
				 errhint("Pass the name given to rt_create_task.")));
	task = text_to_cstring(PG_GETARG_TEXT_PP(0));
	hw_pg_task_lookup(task, false, &model_id, NULL);
	hw_model_require(model_id, HW_RIGHT_OWN, "read the tape of");
	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT checkpoint_id, seq, op, label, inputs, shape, fwd_ms, bwd_ms, recorded_at "
							  "FROM headwater.tape WHERE model_id = $1 ORDER BY seq",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.tape");
	hw_restore_user(&as);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum v[TAPE_COLUMNS + 1];
		bool  n[TAPE_COLUMNS + 1];

		for (int c = 0; c <= TAPE_COLUMNS; c++)
			v[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1, &n[c]);
		/* the tuplestore copies the values out of SPI's memory */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	}
	SPI_finish();
	return (Datum) 0;
}
