/*
 * task_sql.c: rt_create_task, rt_drop_task, rt_tasks.
 *
 * Privileges follow the catalog: functions are not SECURITY DEFINER; the
 * task query runs as the calling role (so it sees exactly what that role
 * may read), and headwater's own tables are read and written as the owner
 * of schema headwater, only around those statements.  Only the model's
 * owner (or a member, or a superuser) may create, drop or sample tasks.
 * Query tasks: task_query.c; options: task_options.c.
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "utils/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "core/embed_hash.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/task/task_priv.h"

/* ------------------------------------------------------------ rt_create_task */

static bytea *
bytes_to_bytea(const void *p, size_t n)
{
	bytea *b = palloc(VARHDRSZ + n);

	SET_VARSIZE(b, VARHDRSZ + n);
	if (n)
		memcpy(VARDATA(b), p, n);
	return b;
}

static void
json_kv_str(StringInfo b, const char *k, const char *v, bool comma)
{
	if (comma)
		appendStringInfoString(b, ", ");
	escape_json(b, k);
	appendStringInfoString(b, ": ");
	if (v)
		escape_json(b, v);
	else
		appendStringInfoString(b, "null");
}

static void
json_num(StringInfo b, double v)
{
	if (isfinite(v))
		appendStringInfo(b, "%.17g", v);
	else
		appendStringInfoString(b, "null");
}

static char *
text_arg(FunctionCallInfo fcinfo, int i)
{
	return PG_ARGISNULL(i) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(i));
}

/* What the steps of rt_create_task share: its arguments, the model, the
 * parsed options and the task being built. */
typedef struct TaskCreate
{
	char   *model, *tname, *query, *anchor, *target, *stype, *obscol;
	Jsonb  *options;            /* as given; the default loss is added to it */
	int32   model_id;
	HwPgTaskModel mi;
	HwPgTaskOptions opts;
	HwSnapshot *snap;
	HwTask *t;
	char   *obs_source;         /* where the observation times come from, in words */
} TaskCreate;

/* A task name: 1 to 200 characters, no dot. */
static void
check_task_name(const TaskCreate *c)
{
	const char *tname = c->tname;

	if (c->model == NULL || tname == NULL)
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("model and task names must not be NULL")));
	if (tname[0] == 0 || strlen(tname) > 200)
		ereport(ERROR, (errcode(ERRCODE_INVALID_NAME),
						errmsg("task name must have 1 to 200 characters")));
	/* 'model.task' names a task where no model is given (task_ref.c) */
	if (strchr(tname, '.') != NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("task name \"%s\" contains '.'", tname),
						errhint("A task is addressed as 'model.task'; pick a name without a dot, e.g. %s.",
								quote_literal_cstr(psprintf("%.*s", (int) strcspn(tname, "."), tname)))));
}

/*
 * The access check first (a role without it learns nothing of the model's
 * tasks), then the name's uniqueness, then the (possibly large) snapshot.
 */
static void
check_model_and_load_snapshot(TaskCreate *c)
{
	MemoryContext fncxt = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_pgtask_model_info(c->model_id, c->model, &c->mi);
	/* names are unique within the model; other models may use the same */
	if (hw_pg_task_id_in_model(c->model_id, c->tname) >= 0)
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
						errmsg("task \"%s\" already exists", c->tname),
						errhint("Drop it first with rt_drop_task(%s, %s), or pick another name.",
								quote_literal_cstr(c->model), quote_literal_cstr(c->tname))));
	/* keep the strings past SPI_finish, which frees SPI's memory */
	c->mi.name = MemoryContextStrdup(fncxt, c->mi.name);
	c->mi.source_schema = MemoryContextStrdup(fncxt, c->mi.source_schema);
	c->mi.embedder = MemoryContextStrdup(fncxt, c->mi.embedder);
	SPI_finish();
	c->snap = hw_pg_snapshot_load_in_context(c->model_id, CurrentMemoryContext);
}

/* A cell task: predicts column target of table anchor, seeded by its rows. */
static void
build_cell_task(TaskCreate *c)
{
	const char *model = c->model, *tname = c->tname, *anchor = c->anchor, *target = c->target;
	const char *stype = c->stype;
	const HwSnapshot *snap = c->snap;
	HwError err = {0};

	if (anchor == NULL || target == NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("task \"%s\" needs a query, or anchor_table and target_column", tname),
						errhint("Predict a column: rt_create_task(%s, %s, anchor_table => 'orders', target_column => 'status').",
								quote_literal_cstr(model), quote_literal_cstr(tname))));
	if (c->obscol)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("observation_time_column applies to query tasks only"),
						errhint("A cell task observes each row at its table's time column; set it with rt_set_time_column.")));
	int at = hw_pgtask_snap_table(snap, anchor);

	if (at < 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("table \"%s\" is not part of model \"%s\"", anchor, model),
						errhint("rt_describe(%s) lists the model's tables.", quote_literal_cstr(model))));
	int col_idx = hw_pgtask_snap_column(snap, at, target);

	if (col_idx < 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
						errmsg("column \"%s\" of table \"%s\" is not part of model \"%s\"", target, anchor, model)));
	const HwColumn *col = &snap->tables[at].cols[col_idx];

	if (stype)
	{
		int want = hw_stype_from_name(stype);

		if (want < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("unknown semantic type \"%s\"", stype),
							errhint("Use numerical, boolean, categorical or timestamp.")));
		if (want != col->stype)
			ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
							errmsg("column \"%s\" of table \"%s\" is %s in model \"%s\", not %s",
								   target, anchor, hw_stype_name(col->stype), model, stype),
							errhint("Change its type first: rt_set_column_type(%s, %s, %s, %s).",
									quote_literal_cstr(model), quote_literal_cstr(anchor), quote_literal_cstr(target), quote_literal_cstr(stype))));
	}
	if (c->opts.split_method != HW_SPLIT_BY_HASH)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("the time split applies to query tasks only (task \"%s\" predicts a column)", tname),
						errhint("Write the task as a query returning the key, an observation time and the target.")));
	if (c->opts.horizon)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("label_horizon applies to query tasks only (task \"%s\" predicts a column)", tname),
						errhint("A cell task has no label history; drop the option.")));
	hw_pgtask_apply_options(c->t, &c->opts);
	if (hw_task_build_cell(c->t, snap, at, col_idx, &err) != HW_OK)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("%s", err.msg),
						errhint("Change its type with rt_set_column_type, or predict another column.")));
	c->obs_source = snap->tables[at].time_col >= 0 ?
		psprintf("time column %s of %s", snap->tables[at].cols[snap->tables[at].time_col].name, anchor) :
		pstrdup("none");
}

/* The loss option: numerical targets only; "ordinal" needs integer labels. */
static void
check_loss_option(const TaskCreate *c)
{
	const HwTask *t = c->t;

	if (c->opts.num_loss >= 0 && t->target_stype != HW_ST_NUMERICAL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option \"loss\" of task \"%s\" applies to numerical targets, not %s", c->tname,
							   hw_stype_name(t->target_stype)),
						errhint("Drop the option: boolean and categorical targets use cross-entropy.")));
	if (c->opts.num_loss == HW_NUM_LOSS_ORDINAL && hw_task_ordinal_levels(t) == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option \"loss\" of task \"%s\" is \"ordinal\", but its train labels are not integers spanning 2 to %d values",
							   c->tname, HW_ORD_LEVELS + 1),
						errhint("Use \"mae\" or \"huber\": the ordinal loss needs integer labels spanning at most %d values.",
								HW_ORD_LEVELS + 1)));
}

/*
 * The default loss of a numerical task is resolved here, once, and stored in
 * its options: "ordinal" where its train labels allow it (integers spanning
 * at most HW_ORD_LEVELS + 1 values), else "mae".  A task stored without a
 * loss (created before this default) keeps the MAE regression it was
 * trained with, so a model trained on it never starts serving from a head it
 * did not train.
 */
static void
resolve_default_loss(TaskCreate *c)
{
	HwTask *t = c->t;

	if (c->opts.num_loss >= 0 || t->target_stype != HW_ST_NUMERICAL)
		return;
	t->num_loss = HW_NUM_LOSS_ORDINAL;
	if (hw_task_ordinal_levels(t) == 0)
		t->num_loss = HW_NUM_LOSS_MAE;
	c->options = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
								c->options ? JsonbPGetDatum(c->options) : DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")),
								DirectFunctionCall1(jsonb_in, CStringGetDatum(t->num_loss == HW_NUM_LOSS_ORDINAL ?
																			  "{\"loss\": \"ordinal\"}" :
																			  "{\"loss\": \"mae\"}"))));
}

/* The task's row in headwater.task (caller already the owner); its task_id. */
static int32
insert_task_row(const TaskCreate *c)
{
	const HwTask *t = c->t;
	bool isnull;
	Datum ratios[3] = {Float8GetDatum(t->split_ratio[0]), Float8GetDatum(t->split_ratio[1]),
					   Float8GetDatum(t->split_ratio[2])};
	ArrayType *ra = construct_array(ratios, 3, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	Datum catarr = (Datum) 0;

	if (t->kind == HW_TASK_QUERY && t->target_stype == HW_ST_CATEGORICAL)
	{
		Datum *cv = palloc(sizeof(Datum) * (t->ncat_own ? t->ncat_own : 1));

		for (uint32 i = 0; i < t->ncat_own; i++)
			cv[i] = CStringGetTextDatum(t->cat_values[i]);
		catarr = PointerGetDatum(construct_array(cv, (int) t->ncat_own, TEXTOID, -1, false, TYPALIGN_INT));
	}
	Oid types[23] = {INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID,
					 INT8OID, FLOAT8ARRAYOID, BOOLOID, INT4OID, FLOAT8OID, FLOAT8OID, INT8OID, INT8OID,
					 INT8OID, INT8OID, INT8OID, TEXTARRAYOID, OIDOID, TEXTOID};
	Datum vals[23] = {
		Int32GetDatum(c->model_id), CStringGetTextDatum(c->tname),
		CStringGetTextDatum(t->kind == HW_TASK_QUERY ? "query" : "cell"),
		CStringGetTextDatum(c->anchor), CStringGetTextDatum(t->target_name),
		CStringGetTextDatum(hw_stype_name(t->target_stype)), CStringGetTextDatum(c->obs_source),
		c->query ? CStringGetTextDatum(c->query) : (Datum) 0,
		c->options ? JsonbPGetDatum(c->options) : DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")),
		Int64GetDatum((int64) t->split_seed), PointerGetDatum(ra), BoolGetDatum(t->label_history),
		Int32GetDatum(t->history_max), Float8GetDatum(t->target_mean), Float8GetDatum(t->target_std),
		Int64GetDatum(t->nseeds), Int64GetDatum(t->split_count[0]), Int64GetDatum(t->split_count[1]),
		Int64GetDatum(t->split_count[2]), Int64GetDatum(t->target_nulls), catarr,
		ObjectIdGetDatum(GetUserId()), CStringGetTextDatum(hw_split_method_name(t->split_method))
	};
	char nulls[24];

	memset(nulls, ' ', 23);
	nulls[23] = 0;
	if (!c->query)
		nulls[7] = 'n';
	if (catarr == (Datum) 0)
		nulls[20] = 'n';
	if (SPI_execute_with_args("INSERT INTO headwater.task (model_id, name, kind, anchor_table, target_column, "
							  "target_stype, obs_time_source, query, options, split_seed, split_ratios, "
							  "label_history, history_max, target_mean, target_std, n_seeds, n_train, n_val, "
							  "n_test, n_null_targets, categories, owner, split_method) VALUES ($1, $2, $3, $4, "
							  "$5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, "
							  "$22::regrole, $23) RETURNING task_id",
							  23, types, vals, nulls, false, 1) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "could not store task %s", c->tname);
	return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* A query task's seeds and embeddings (caller already the owner); a cell
 * task's seeds are its anchor table's rows, stored nowhere. */
static void
insert_query_seeds(const TaskCreate *c, int32 task_id)
{
	const HwTask *t = c->t;
	HwError err = {0};
	uint8_t *buf;
	size_t len;

	if (hw_task_seeds_serialize(t, &buf, &len, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not serialize the seeds");
	bytea *b = bytes_to_bytea(buf, len);

	free(buf);
	if (SPI_execute_with_args("INSERT INTO headwater.task_seed (task_id, n_seeds, data) VALUES ($1, $2, $3)",
							  3, (Oid[]) {INT4OID, INT8OID, BYTEAOID},
							  (Datum[]) {Int32GetDatum(task_id), Int64GetDatum(t->nseeds), PointerGetDatum(b)},
							  NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not store the seeds of task %s", c->tname);
	size_t d = (size_t) t->d_text;
	bytea *ve = bytes_to_bytea(t->vcol_emb, 2 * d * 2);
	bytea *ce = t->cat_emb_own ? bytes_to_bytea(t->cat_emb_own, (size_t) t->ncat_own * d * 2) : NULL;

	if (SPI_execute_with_args("UPDATE headwater.task SET vcol_emb = $2, cat_emb = $3 WHERE task_id = $1",
							  3, (Oid[]) {INT4OID, BYTEAOID, BYTEAOID},
							  (Datum[]) {Int32GetDatum(task_id), PointerGetDatum(ve), PointerGetDatum(ce)},
							  ce ? NULL : "  n", false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not store the embeddings of task %s", c->tname);
}

/* Stores the task, as the owner of headwater's tables. */
static void
store_task(const TaskCreate *c)
{
	HwAsOwner as;

	hw_become_owner(&as);
	int32 task_id = insert_task_row(c);

	if (c->t->kind == HW_TASK_QUERY)
		insert_query_seeds(c, task_id);
	hw_restore_user(&as);
}

/* The summary's target statistics: by the target's type. */
static void
append_target_summary(StringInfo js, const TaskCreate *c)
{
	const HwTask *t = c->t;

	if (t->target_stype == HW_ST_NUMERICAL)
	{
		appendStringInfoString(js, ", \"target_mean\": ");
		json_num(js, t->target_mean);
		appendStringInfoString(js, ", \"target_std\": ");
		json_num(js, t->target_std);
		json_kv_str(js, "loss", hw_num_loss_name(hw_task_effective_loss(t)), true);
		if (hw_task_ordinal_levels(t) > 0)
			appendStringInfo(js, ", \"ordinal_levels\": %d", hw_task_ordinal_levels(t));
		/* integer train labels and the MAE or ordinal loss: integer predictions */
		if (hw_task_rounds_predictions(t))
			appendStringInfoString(js, ", \"rounds_predictions\": true");
	}
	else if (t->target_stype == HW_ST_CATEGORICAL)
		appendStringInfo(js, ", \"categories\": %u",
						 t->kind == HW_TASK_QUERY ? t->ncat_own :
						 c->snap->tables[t->anchor_table].cols[t->target_col].cat_emb_count);
	else if (t->target_stype == HW_ST_BOOLEAN)
	{
		double ones = 0, nn = 0;

		for (uint32 i = 0; i < t->nseeds; i++)
			if (!t->target_null[i])
			{
				ones += t->target[i];
				nn++;
			}
		appendStringInfoString(js, ", \"true_rate\": ");
		json_num(js, nn > 0 ? ones / nn : NAN);
	}
}

/* The summary rt_create_task returns, as JSON text in memory context cxt
 * (appends repalloc in the buffer's own context). */
static char *
task_summary(const TaskCreate *c, MemoryContext cxt)
{
	const HwTask *t = c->t;
	StringInfoData js;
	MemoryContext spi_cxt = MemoryContextSwitchTo(cxt);

	initStringInfo(&js);
	MemoryContextSwitchTo(spi_cxt);
	appendStringInfoChar(&js, '{');
	json_kv_str(&js, "task", c->tname, false);
	json_kv_str(&js, "kind", t->kind == HW_TASK_QUERY ? "query" : "cell", true);
	json_kv_str(&js, "anchor_table", c->anchor, true);
	json_kv_str(&js, "target", t->target_name, true);
	json_kv_str(&js, "target_stype", hw_stype_name(t->target_stype), true);
	json_kv_str(&js, "observation_time", c->obs_source, true);
	appendStringInfo(&js, ", \"seeds\": %u, \"splits\": {\"train\": %u, \"val\": %u, \"test\": %u}, "
					 "\"null_targets\": %lld",
					 t->nseeds, t->split_count[0], t->split_count[1], t->split_count[2],
					 (long long) t->target_nulls);
	/* how the split was made: only when not the default hash (older summaries unchanged) */
	if (t->split_method != HW_SPLIT_BY_HASH)
		json_kv_str(&js, "split_method", hw_split_method_name(t->split_method), true);
	append_target_summary(&js, c);
	appendStringInfo(&js, ", \"label_history\": %s", t->label_history ? "true" : "false");
	/* when labels become known: only when not the default (older summaries unchanged) */
	if (t->label_time_us)
		json_kv_str(&js, "label_time", c->opts.horizon ? psprintf("observation time + %s", c->opts.label_horizon) :
					"query column label_time", true);
	appendStringInfoChar(&js, '}');
	return js.data;
}

PG_FUNCTION_INFO_V1(rt_create_task);
Datum
rt_create_task(PG_FUNCTION_ARGS)
{
	TaskCreate c = {.model = text_arg(fcinfo, 0), .tname = text_arg(fcinfo, 1), .query = text_arg(fcinfo, 2),
					.anchor = text_arg(fcinfo, 3), .target = text_arg(fcinfo, 4), .stype = text_arg(fcinfo, 5),
					.obscol = text_arg(fcinfo, 6), .options = PG_ARGISNULL(7) ? NULL : PG_GETARG_JSONB_P(7)};
	MemoryContext fncxt = CurrentMemoryContext;
	HwError err = {0};

	check_task_name(&c);
	c.model_id = hw_pg_model_id(c.model, false);
	hw_pgtask_parse_options(c.options, c.tname, &c.opts);
	check_model_and_load_snapshot(&c);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	c.t = hw_task_new(c.tname, c.query ? HW_TASK_QUERY : HW_TASK_CELL, &err);
	if (c.t == NULL)
		hw_pg_raise_core_error(&err, "could not create the task");
	hw_pgtask_free_with(c.t, CurrentMemoryContext);
	if (c.query == NULL)
		build_cell_task(&c);
	else
		hw_pgtask_build_query(c.t, &c.mi, c.snap, c.query, &c.anchor, c.target, c.stype, c.obscol, &c.opts,
							  &c.obs_source);
	check_loss_option(&c);
	resolve_default_loss(&c);
	store_task(&c);

	/* the summary in the function's memory: it is parsed after SPI_finish,
	 * which frees SPI's */
	char *summary = task_summary(&c, fncxt);

	SPI_finish();
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(summary)));
}

/* -------------------------------------------------------------- rt_drop_task */

PG_FUNCTION_INFO_V1(rt_drop_task);
Datum
rt_drop_task(PG_FUNCTION_ARGS)
{
	char *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char *tname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int32 model_id = hw_pg_model_id(model, false);
	HwPgTaskModel mi;
	HwAsOwner as;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_pgtask_model_info(model_id, model, &mi);
	hw_become_owner(&as);
	if (SPI_execute_with_args("DELETE FROM headwater.task WHERE model_id = $1 AND name = $2",
							  2, (Oid[]) {INT4OID, TEXTOID},
							  (Datum[]) {Int32GetDatum(model_id), CStringGetTextDatum(tname)},
							  NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete task %s", tname);
	hw_restore_user(&as);
	if (SPI_processed == 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("task \"%s\" does not exist in model \"%s\"", tname, model),
						errhint("rt_tasks(%s) lists the model's tasks.", quote_literal_cstr(model))));
	SPI_finish();
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------------ rt_tasks */

PG_FUNCTION_INFO_V1(rt_tasks);
Datum
rt_tasks(PG_FUNCTION_ARGS)
{
	char *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32 model_id = hw_pg_model_id(model, false);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HwPgTaskModel mi;
	HwAsOwner as;

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_pgtask_model_info(model_id, model, &mi);
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT name, kind, anchor_table, target_column, target_stype, obs_time_source, "
							  "n_seeds, n_train, n_val, n_test, n_null_targets, target_mean, target_std, "
							  "coalesce(array_length(categories, 1), 0), label_history, options, split_method "
							  "FROM headwater.task WHERE model_id = $1 ORDER BY task_id",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the tasks of model %s", model);
	hw_restore_user(&as);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum values[17];
		bool nulls[17];

		for (int c = 0; c < 17; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1, &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}
