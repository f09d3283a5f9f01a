/*
 * task_ref.c: how a task is named where no model is given (rt_predict and
 * the other serving entry points; hw_pg_task.h).
 *
 * Task names are unique within their model only, so a bare name could be
 * claimed by any role that creates a model.  A reference is therefore
 *   'model.task'  split at the LAST dot (model names may contain dots, task
 *                 names may not): the model by name, then the task in it;
 *   'task'        the short form, looked up ONLY among the models the caller
 *                 may own (its own role's, those of roles it is a member of;
 *                 superusers: every model).
 * Another role's model never answers a short name, so creating a task of
 * the same name cannot capture the callers of someone else's task.
 *
 * Nothing here reveals another role's tasks: a short name that names none
 * of the caller's is "does not exist" however many other models use it; a
 * qualified name is refused (42501, naming the model, which rt_create_model
 * already reveals) before its task is looked up unless the caller may at
 * least predict with the model, so a missing task and an existing one read
 * the same to a role without rights.  An ambiguous short name lists only
 * the caller's own models.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "pg/base/pg_spi_saved.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"

pg_attribute_noreturn() static void
task_not_found(const char *task_ref, const char *model)
{
	const char *dot = strrchr(task_ref, '.');
	const char *short_name = dot ? dot + 1 : task_ref;

	if (model != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist", task_ref),
				 errhint("The model's owner lists its tasks with rt_tasks(%s) and creates one with "
						 "rt_create_task(%s, %s, ...).", quote_literal_cstr(model), quote_literal_cstr(model),
						 quote_literal_cstr(short_name))));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("task \"%s\" does not exist", task_ref),
			 errhint("Create it with rt_create_task(model, %s, ...); a task of a model you do not own is "
					 "named 'model.task'.", quote_literal_cstr(short_name))));
}

/* The task named `name` in model model_id (read as the owner): its id, or -1. */
int32
hw_pg_task_id_in_model(int32 model_id, const char *name)
{
	HwAsOwner as;
	int32 task_id = -1;
	bool isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (hw_spi_execute_saved("SELECT task_id FROM headwater.task WHERE model_id = $1 AND name = $2",
							  2, (Oid[]) {INT4OID, TEXTOID},
							  (Datum[]) {Int32GetDatum(model_id), CStringGetTextDatum(name)},
							  NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.task");
	hw_restore_user(&as);
	if (SPI_processed == 1)
		task_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return task_id;
}

/* 'model.task': the model, the caller's right to see it, then the task. */
static bool
lookup_qualified(const char *task_ref, const char *dot, bool missing_ok, int32 *model_id, int32 *task_id)
{
	char  *model = pnstrdup(task_ref, dot - task_ref);
	int32  mid = model[0] ? hw_pg_model_id(model, true) : -1;
	int32  tid;

	if (mid < 0 || dot[1] == '\0')
	{
		if (missing_ok)
			return false;
		task_not_found(task_ref, NULL);
	}
	/* before the task is looked up: without a right on the model, a task
	 * that exists and one that does not are refused alike */
	hw_model_require(mid, HW_RIGHT_PREDICT, "predict with");
	tid = hw_pg_task_id_in_model(mid, dot + 1);
	if (tid < 0)
	{
		if (missing_ok)
			return false;
		task_not_found(task_ref, model);
	}
	*model_id = mid;
	*task_id = tid;
	return true;
}

/* 'task': among the models the caller may own; ERROR 42725 when several. */
static bool
lookup_short(const char *task_ref, bool missing_ok, int32 *model_id, int32 *task_id)
{
	HwAsOwner as;
	MemoryContext caller_cxt = CurrentMemoryContext;
	int    nfound = 0;
	char  *first = NULL;
	StringInfoData names;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (hw_spi_execute_saved("SELECT t.model_id, t.task_id, m.owner::oid, m.name "
							  "FROM headwater.task t JOIN headwater.model m USING (model_id) "
							  "WHERE t.name = $1 ORDER BY m.name",
							  1, (Oid[]) {TEXTOID}, (Datum[]) {CStringGetTextDatum(task_ref)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.task");
	hw_restore_user(&as);
	/* in the caller's context: SPI_finish frees SPI's memory */
	{
		MemoryContext spi = MemoryContextSwitchTo(caller_cxt);

		initStringInfo(&names);
		MemoryContextSwitchTo(spi);
	}
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple tup = SPI_tuptable->vals[i];
		TupleDesc td = SPI_tuptable->tupdesc;
		bool isnull;

		if (!hw_role_may_own(DatumGetObjectId(SPI_getbinval(tup, td, 3, &isnull))))
			continue;			/* another role's model: not an answer to a short name */
		*model_id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
		*task_id = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
		appendStringInfo(&names, "%s%s", nfound ? ", " : "",
						 quote_literal_cstr(psprintf("%s.%s", SPI_getvalue(tup, td, 4), task_ref)));
		if (nfound++ == 0)
			first = MemoryContextStrdup(caller_cxt, names.data);
	}
	SPI_finish();
	if (nfound > 1)
		ereport(ERROR,
				(errcode(ERRCODE_AMBIGUOUS_FUNCTION),
				 errmsg("task name \"%s\" is ambiguous", task_ref),
				 errdetail("It names a task in %d of your models: %s.", nfound, names.data),
				 errhint("Name the task as 'model.task', e.g. %s.", first)));
	if (nfound == 0 && !missing_ok)
		task_not_found(task_ref, NULL);
	return nfound == 1;
}

bool
hw_pg_task_lookup(const char *task_ref, bool missing_ok, int32 *model_id, int32 *task_id)
{
	const char *dot = strrchr(task_ref, '.');
	int32 mid = -1, tid = -1;
	bool found;

	found = dot ? lookup_qualified(task_ref, dot, missing_ok, &mid, &tid)
		: lookup_short(task_ref, missing_ok, &mid, &tid);
	if (found && model_id)
		*model_id = mid;
	if (found && task_id)
		*task_id = tid;
	return found;
}
