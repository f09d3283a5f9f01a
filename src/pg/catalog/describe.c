/*
 * describe.c: rt_describe(model), one row per column of every table of the
 * model, read from headwater.model_column (written by the catalog).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "pg/base/hw_pg.h"
#include "pg/catalog/catalog_priv.h"

PG_FUNCTION_INFO_V1(rt_describe);
Datum
rt_describe(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32 model_id = hw_pg_model_id(name, false);
	HwAsOwner as;

	hw_model_require(model_id, HW_RIGHT_OWN, NULL);
	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args(
			"SELECT table_name, column_name, sql_type, stype, is_time_column, null_count, "
			"       n_rows, stats, fk_target, inference "
			"FROM headwater.model_column WHERE model_id = $1 ORDER BY table_idx, column_idx",
			1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)}, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "rt_describe: catalog query failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum values[10];
		bool nulls[10];

		for (int c = 0; c < 10; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1, &nulls[c]);
		/* the tuplestore copies the values before SPI_finish frees them */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	hw_restore_user(&as);
	SPI_finish();
	return (Datum) 0;
}
