/*
 * catalog.c: rt_create_model, rt_refresh, rt_drop_model, rt_set_column_type,
 * rt_set_time_column.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "pg/serve/hw_serving_shared.h"
#include "pg/base/hw_pg.h"
#include "pg/catalog/catalog_priv.h"
#include "pg/catalog/catalog_build.h"
#include "pg/train/hw_train.h"
#include "utils/jsonb.h"

/* ------------------------------------------------------------ SQL entry points */

static char *
arg_text(FunctionCallInfo fcinfo, int i, const char *what)
{
	if (PG_ARGISNULL(i))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", what)));
	return text_to_cstring(PG_GETARG_TEXT_PP(i));
}

/* source_schema and options of a stored model */
static void
model_source(int32 model_id, char **schema, Datum *options)
{
	HwAsOwner as;
	bool isnull;
	MemoryContext cxt = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT source_schema, options FROM headwater.model WHERE model_id = $1",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)}, NULL, true, 1) != SPI_OK_SELECT
		|| SPI_processed != 1)
		elog(ERROR, "model %d vanished", model_id);
	{
		MemoryContext spi = MemoryContextSwitchTo(cxt);

		*schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		*options = SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull), false, -1);
		MemoryContextSwitchTo(spi);
	}
	hw_restore_user(&as);
	SPI_finish();
}

/* runs `sql` ($1 = options jsonb, $2.. = text args) and returns the new options */
static Datum
edit_options(Datum options, const char *sql, int nargs, const char **args)
{
	Oid types[4] = {JSONBOID, TEXTOID, TEXTOID, TEXTOID};
	Datum v[4];
	char nulls[4] = "    ";
	bool isnull;
	Datum res;
	MemoryContext cxt = CurrentMemoryContext;

	v[0] = options;
	for (int i = 0; i < nargs; i++)
	{
		if (args[i])
			v[i + 1] = CStringGetTextDatum(args[i]);
		else
			nulls[i + 1] = 'n';
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, nargs + 1, types, v, nulls, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "editing options failed");
	res = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	{
		MemoryContext spi = MemoryContextSwitchTo(cxt);

		res = SPI_datumTransfer(res, false, -1);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	return res;
}

PG_FUNCTION_INFO_V1(rt_create_model);
Datum
rt_create_model(PG_FUNCTION_ARGS)
{
	char *name = arg_text(fcinfo, 0, "model name");
	char *schema = arg_text(fcinfo, 1, "source_schema");
	Datum options;

	if (PG_ARGISNULL(2))
		options = DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	else
		options = PG_GETARG_DATUM(2);
	if (name[0] == '\0')
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("model name must not be empty")));
	if (hw_pg_model_id(name, true) >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", name),
				 errhint("Choose another name, rebuild it with rt_refresh(%s), or drop it with rt_drop_model(%s).", quote_literal_cstr(name), quote_literal_cstr(name))));
	PG_RETURN_TEXT_P(cstring_to_text(hw_catalog_build(name, -1, schema, options, GetUserId())));
}

PG_FUNCTION_INFO_V1(rt_refresh);
Datum
rt_refresh(PG_FUNCTION_ARGS)
{
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32 id = hw_pg_model_id(name, false);
	char *schema;
	Datum options;

	hw_model_require(id, HW_RIGHT_OWN, NULL);
	model_source(id, &schema, &options);
	PG_RETURN_TEXT_P(cstring_to_text(hw_catalog_build(name, id, schema, options, InvalidOid)));
}

PG_FUNCTION_INFO_V1(rt_drop_model);
Datum
rt_drop_model(PG_FUNCTION_ARGS)
{
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32 id = hw_pg_model_id(name, false);
	HwAsOwner as;

	hw_model_require(id, HW_RIGHT_OWN, NULL);
	/* a running job would die on the rows it still writes: refuse (and keep
	 * new jobs of the model from starting until this transaction ends) */
	hw_train_require_idle(id, name, "drop");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	/* every headwater table that hangs off a model references it ON DELETE CASCADE */
	if (SPI_execute_with_args("DELETE FROM headwater.model WHERE model_id = $1", 1, (Oid[]) {INT4OID},
							  (Datum[]) {Int32GetDatum(id)}, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not drop model \"%s\"", name);
	hw_restore_user(&as);
	SPI_finish();
	/* its shared serving cache files (a rolled-back drop rebuilds them) */
	hw_serving_shared_remove_model(id);
	PG_RETURN_VOID();
}

/* checks that table (and column) belong to the model */
static void
check_model_column(int32 id, const char *model, const char *table, const char *column)
{
	HwAsOwner as;
	int n;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	SPI_execute_with_args("SELECT 1 FROM headwater.model_table WHERE model_id = $1 AND table_name = $2",
						  2, (Oid[]) {INT4OID, TEXTOID}, (Datum[]) {Int32GetDatum(id), CStringGetTextDatum(table)},
						  NULL, true, 1);
	n = (int) SPI_processed;
	if (n == 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("table \"%s\" is not part of model \"%s\"", table, model),
						errhint("rt_describe(%s) lists its tables.", quote_literal_cstr(model))));
	if (column)
	{
		SPI_execute_with_args("SELECT 1 FROM headwater.model_column WHERE model_id = $1 AND table_name = $2 AND column_name = $3",
							  3, (Oid[]) {INT4OID, TEXTOID, TEXTOID},
							  (Datum[]) {Int32GetDatum(id), CStringGetTextDatum(table), CStringGetTextDatum(column)},
							  NULL, true, 1);
		if (SPI_processed == 0)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
							errmsg("column \"%s\" of table \"%s\" is not part of model \"%s\"", column, table, model),
							errhint("rt_describe(%s) lists its columns.", quote_literal_cstr(model))));
	}
	hw_restore_user(&as);
	SPI_finish();
}

PG_FUNCTION_INFO_V1(rt_set_column_type);
Datum
rt_set_column_type(PG_FUNCTION_ARGS)
{
	char *name = arg_text(fcinfo, 0, "model name");
	char *table = arg_text(fcinfo, 1, "table_name");
	char *column = arg_text(fcinfo, 2, "column_name");
	char *stype = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	int32 id = hw_pg_model_id(name, false);
	char *schema;
	Datum options;
	const char *args[3] = {table, column, stype};

	hw_model_require(id, HW_RIGHT_OWN, NULL);
	if (stype && hw_stype_from_name(stype) < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown semantic type \"%s\"", stype),
						errhint("Semantic types: identifier, numerical, timestamp, boolean, categorical, text, ignored; NULL goes back to inference.")));
	check_model_column(id, name, table, column);
	model_source(id, &schema, &options);
	if (stype)
		options = edit_options(options,
							   "SELECT $1 || jsonb_build_object('column_types', "
							   "  coalesce($1->'column_types', '{}') || jsonb_build_object($2, "
							   "    coalesce($1->'column_types'->$2, '{}') || jsonb_build_object($3, $4)))",
							   3, args);
	else
		options = edit_options(options, "SELECT $1 #- ARRAY['column_types', $2, $3]", 2, args);
	PG_RETURN_TEXT_P(cstring_to_text(hw_catalog_build(name, id, schema, options, InvalidOid)));
}

PG_FUNCTION_INFO_V1(rt_set_time_column);
Datum
rt_set_time_column(PG_FUNCTION_ARGS)
{
	char *name = arg_text(fcinfo, 0, "model name");
	char *table = arg_text(fcinfo, 1, "table_name");
	char *column = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	int32 id = hw_pg_model_id(name, false);
	char *schema;
	Datum options;
	const char *args[2] = {table, column};

	hw_model_require(id, HW_RIGHT_OWN, NULL);
	check_model_column(id, name, table, column);
	model_source(id, &schema, &options);
	/* JSON null = "this table has no time column" (overrides detection) */
	options = edit_options(options,
						   "SELECT $1 || jsonb_build_object('time_columns', "
						   "  coalesce($1->'time_columns', '{}') || jsonb_build_object($2, $3))",
						   2, args);
	PG_RETURN_TEXT_P(cstring_to_text(hw_catalog_build(name, id, schema, options, InvalidOid)));
}
