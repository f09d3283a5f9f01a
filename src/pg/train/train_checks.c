/*
 * train_checks.c: what rt_train (train_job.c) checks in the calling
 * backend before it launches a worker -- the tasks it names, the task
 * names of task_weights, the caller's rights on the source tables -- and
 * the request it hands the worker beside the validated settings.  Callers
 * in SPI, as the extension owner.
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

void
hw_train_check_tasks_exist(int32 model_id, ArrayType *tasks_arr, const char *model_name)
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
				 errhint("Create one with rt_create_task(%s, 'task_name', query => ...).",
						 quote_literal_cstr(model_name))));
	if (tasks_arr == NULL)
		return;
	if (SPI_execute_with_args("SELECT t FROM unnest($2) AS t WHERE NOT EXISTS "
							  "(SELECT 1 FROM headwater.task k WHERE k.model_id = $1 AND k.name = t)",
							  2, argtypes, values, nulls, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.task");
	if (SPI_processed > 0)
	{
		char *t = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist in model \"%s\"", t, model_name),
				 errhint("rt_tasks(%s) lists the model's tasks.", quote_literal_cstr(model_name))));
	}
}

/* The tasks argument, before any lookup: no NULL element, not empty. */
void
hw_train_check_tasks_array(ArrayType *tasks_arr)
{
	if (tasks_arr == NULL)
		return;
	if (array_contains_nulls(tasks_arr))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tasks must not contain NULL"),
				 errhint("tasks => ARRAY['task', ...] names tasks of the model; leave it NULL to train all of them.")));
	if (ArrayGetNItems(ARR_NDIM(tasks_arr), ARR_DIMS(tasks_arr)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tasks must name at least one task"),
				 errhint("tasks => ARRAY['task', ...] names tasks of the model; leave it NULL to train all of them.")));
}

/*
 * options.task_weights names tasks this call trains, and leaves at least
 * one of them a positive weight (its values were checked by
 * hw_train_settings_parse).  Caller in SPI, as owner.
 */
void
hw_train_check_task_weights(int32 model_id, ArrayType *tasks_arr, Jsonb *options, const char *model_name)
{
	Oid         argtypes[3] = {INT4OID, TEXTOID, TEXTARRAYOID};
	Datum       values[3];
	char        nulls[3] = {' ', ' ', tasks_arr ? ' ' : 'n'};
	JsonbValue *tw;
	JsonbIterator *it;
	JsonbValue  k;
	JsonbIteratorToken tok;
	double      total = 0;
	bool        isnull;

	if (options == NULL ||
		(tw = getKeyJsonValueFromContainer(&options->root, "task_weights", strlen("task_weights"), NULL)) == NULL)
		return;
	values[0] = Int32GetDatum(model_id);
	values[2] = tasks_arr ? PointerGetDatum(tasks_arr) : (Datum) 0;
	it = JsonbIteratorInit(tw->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		char   *name;

		if (tok != WJB_KEY)
			continue;
		name = pnstrdup(k.val.string.val, k.val.string.len);
		values[1] = CStringGetTextDatum(name);
		if (SPI_execute_with_args("SELECT EXISTS (SELECT 1 FROM headwater.task WHERE model_id = $1 AND name = $2), "
								  "$3 IS NULL OR $2 = ANY ($3)",
								  3, argtypes, values, nulls, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not read headwater.task");
		if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for rt_train option \"task_weights\": task \"%s\" does not exist in model \"%s\"",
							name, model_name),
					 errhint("task_weights maps task names to weights; rt_tasks(%s) lists the model's tasks.",
							 quote_literal_cstr(model_name))));
		if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for rt_train option \"task_weights\": task \"%s\" is not in tasks", name),
					 errhint("task_weights may only name the tasks being trained: add \"%s\" to tasks => ... or drop it from task_weights.",
							 name)));
	}
	if (SPI_execute_with_args("SELECT name FROM headwater.task WHERE model_id = $1 AND ($3 IS NULL OR name = ANY ($3))",
							  3, argtypes, (Datum[]) {values[0], (Datum) 0, values[2]}, (char[]) {' ', 'n', nulls[2]},
							  true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.task");
	for (uint64 i = 0; i < SPI_processed; i++)
		total += hw_train_task_weight(&options->root,
									  SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1), 1.0);
	if (!(total > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for rt_train option \"task_weights\": every task being trained has weight 0"),
				 errhint("Give at least one task a weight above 0 (a task not named weighs 1).")));
}

/* A role that cannot read every source table of the model cannot train it. */
void
hw_train_check_source_privileges(int32 model_id, const char *model_name, Oid role)
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

/* The worker's request, as jsonb text: {"model", "tasks" (absent: all),
 * "preset", "device", "options"}: what the job row records as the call
 * gave it, and the tasks to train with their weights (the settings
 * themselves go to the worker validated, HwJobShared.settings). */
char *
hw_train_worker_request(const char *model_name, ArrayType *tasks, const char *preset, const char *device,
			   Jsonb *options)
{
	JsonbParseState *ps = NULL;
	Jsonb      *j;

	(void) pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	hw_pg_jsonb_push_string(&ps, WJB_KEY, "model");
	hw_pg_jsonb_push_string(&ps, WJB_VALUE, model_name);
	if (tasks != NULL)
	{
		Datum      *elems;
		int         n;

		deconstruct_array(tasks, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
		hw_pg_jsonb_push_string(&ps, WJB_KEY, "tasks");
		(void) pushJsonbValue(&ps, WJB_BEGIN_ARRAY, NULL);
		for (int i = 0; i < n; i++)
			hw_pg_jsonb_push_string(&ps, WJB_ELEM, TextDatumGetCString(elems[i]));
		(void) pushJsonbValue(&ps, WJB_END_ARRAY, NULL);
	}
	hw_pg_jsonb_push_string(&ps, WJB_KEY, "preset");
	hw_pg_jsonb_push_string(&ps, WJB_VALUE, preset);
	hw_pg_jsonb_push_string(&ps, WJB_KEY, "device");
	hw_pg_jsonb_push_string(&ps, WJB_VALUE, device);
	hw_pg_jsonb_push_string(&ps, WJB_KEY, "options");
	if (options != NULL)
	{
		JsonbValue  ov;

		ov.type = jbvBinary;
		ov.val.binary.data = &options->root;
		ov.val.binary.len = VARSIZE(options) - VARHDRSZ;
		(void) pushJsonbValue(&ps, WJB_VALUE, &ov);
	}
	else
	{
		(void) pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
		(void) pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	}
	j = JsonbValueToJsonb(pushJsonbValue(&ps, WJB_END_OBJECT, NULL));
	return JsonbToCString(NULL, &j->root, VARSIZE(j));
}

