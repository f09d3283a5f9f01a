/*
 * task_query.c: query tasks: the caller's query run as the caller, its
 * result checked and materialised into the task's seeds (the rows are read
 * by task_query_seeds.c).  A task in general: src/core/task.h; SQL tables: sql/parts/20_tasks.sql.
 *
 * Privileges follow the catalog: functions are not SECURITY DEFINER; the
 * task query runs as the calling role (so it sees exactly what that role
 * may read), and headwater's own tables are read and written as the owner
 * of schema headwater, only around those statements.  Only the model's
 * owner (or a member, or a superuser) may create, drop or sample tasks.
 *
 * Query task result columns:
 *   the anchor table's primary key column(s), by name; the observation
 *   time: the column named by observation_time_column, else a column named
 *   observation_time if present, else none (then each seed takes its anchor
 *   row's time, or no cutoff); the target: target_column, else the one
 *   remaining column.  Any other column is an error.
 * Target type: target_stype, else inferred from the column's SQL type
 *   (bool -> boolean; integer/float/numeric -> numerical; date/timestamp[tz]
 *   -> timestamp; anything else -> categorical).  text targets are
 *   categorical: the task gets its own category block (distinct values in
 *   byte order, at most options.max_categories, default 1000).
 * Options (jsonb): split_seed (default 0), split_ratios [train, val, test]
 *   (default [0.8, 0.1, 0.1]), label_history (default true for query tasks;
 *   cell tasks have none), history_max (16), max_categories (1000), split
 *   ("hash", the default, or "time" with val_from and test_from: query tasks
 *   with an observation time).
 * Caller-given splits: a query result column named `split` ('train', 'val'
 *   or 'test') decides each seed's split; it is neither a feature nor the
 *   target.  headwater.task.split_method records hash, column or time.
 * Label times: a query result column named `label_time` (date/timestamp:
 *   when the label became known; NULL = not known, never history; before
 *   the observation time = error), or the option label_horizon (an
 *   interval: label_time = observation time + it).  Neither: label_time =
 *   observation time.  Label history shows a seed's label to a sequence
 *   observed at T only when label_time <= T (src/core/task.h); the label
 *   times are stored with the seeds.
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
#include "pg/task/task_query_priv.h"

/* ---------------------------------------------------------- query tasks */

static const char *err_ctx_task;

static void
query_error_context(void *arg)
{
	errcontext("running the query of task \"%s\"", err_ctx_task);
}

/* The query as a subquery: a trailing semicolon (and space) is dropped. */
static char *
strip_trailing_semicolons(const char *query)
{
	char *q = pstrdup(query);
	int ql = (int) strlen(q);

	while (ql > 0 && (q[ql - 1] == ';' || isspace((unsigned char) q[ql - 1])))
		q[--ql] = 0;
	return q;
}

/* Describes the query's result (running it with LIMIT 0) into b->td. */
static void
describe_query_result(QueryTaskBuild *b)
{
	StringInfoData cols;

	if (SPI_execute(psprintf("SELECT * FROM (%s\n) AS q LIMIT 0", b->q), true, 0) != SPI_OK_SELECT)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("the query of task \"%s\" must be a SELECT", b->t->name)));
	b->td = CreateTupleDescCopy(SPI_tuptable->tupdesc);
	b->natts = b->td->natts;
	initStringInfo(&cols);
	for (int a = 0; a < b->natts; a++)
		appendStringInfo(&cols, "%s%s", a ? ", " : "", query_att_name(b, a));
	b->cols = cols.data;
}

/*
 * The anchor table: given (*anchor_io), or the one table whose whole primary
 * key the query returns (the widest key wins; a tie is ambiguous).  Sets
 * b->anchor, b->at and b->pk.
 */
static void
find_anchor_table(QueryTaskBuild *b, char **anchor_io)
{
	HwAsOwner as;
	bool isnull;
	Datum *names = palloc(sizeof(Datum) * (b->natts ? b->natts : 1));

	for (int a = 0; a < b->natts; a++)
		names[a] = CStringGetTextDatum(query_att_name(b, a));
	ArrayType *name_arr = construct_array(names, b->natts, TEXTOID, -1, false, TYPALIGN_INT);

	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT table_name, pk_columns FROM headwater.model_table WHERE model_id = $1 "
							  "AND ($2::text IS NULL OR table_name = $2) "
							  "AND ($2::text IS NOT NULL OR (pk_columns IS NOT NULL AND pk_columns <@ $3)) "
							  "ORDER BY coalesce(array_length(pk_columns, 1), 0) DESC, table_name",
							  3, (Oid[]) {INT4OID, TEXTOID, TEXTARRAYOID},
							  (Datum[]) {Int32GetDatum(b->mi->model_id),
										 *anchor_io ? CStringGetTextDatum(*anchor_io) : (Datum) 0,
										 PointerGetDatum(name_arr)},
							  *anchor_io ? NULL : " n ", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the tables of model %s", b->mi->name);
	hw_restore_user(&as);
	if (*anchor_io == NULL)
	{
		if (SPI_processed == 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the query of task \"%s\" returns no table's primary key", b->t->name),
							errhint("Return the anchor table's key columns under their own names, or name it with anchor_table => '...'.")));
		if (SPI_processed > 1)
		{
			Datum k0 = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
			Datum k1 = SPI_getbinval(SPI_tuptable->vals[1], SPI_tuptable->tupdesc, 2, &isnull);

			if (ArrayGetNItems(ARR_NDIM(DatumGetArrayTypeP(k0)), ARR_DIMS(DatumGetArrayTypeP(k0))) ==
				ArrayGetNItems(ARR_NDIM(DatumGetArrayTypeP(k1)), ARR_DIMS(DatumGetArrayTypeP(k1))))
				ereport(ERROR, (errcode(ERRCODE_AMBIGUOUS_PARAMETER),
								errmsg("the query of task \"%s\" returns the key of both \"%s\" and \"%s\"", b->t->name,
									   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
									   SPI_getvalue(SPI_tuptable->vals[1], SPI_tuptable->tupdesc, 1)),
								errhint("Name the anchor with anchor_table => '...'.")));
		}
		*anchor_io = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	}
	b->anchor = *anchor_io;
	b->at = hw_pgtask_snap_table(b->snap, b->anchor);
	if (b->at < 0 || SPI_processed == 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("table \"%s\" is not part of model \"%s\"", b->anchor, b->mi->name),
						errhint("rt_describe(%s) lists the model's tables.", quote_literal_cstr(b->mi->name))));
	b->t->anchor_table = b->at;
	Datum pkd = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);

	if (isnull || b->snap->tables[b->at].key_hash == NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("anchor table \"%s\" of task \"%s\" has no primary key", b->anchor, b->t->name),
						errhint("Seeds are found by key; anchor the task on a table with a primary key.")));
	Datum *pkv;
	bool *pkn;

	deconstruct_array(DatumGetArrayTypeP(pkd), TEXTOID, -1, false, TYPALIGN_INT, &pkv, &pkn, &b->npk);
	b->pk = palloc(sizeof(char *) * b->npk);
	for (int i = 0; i < b->npk; i++)
		b->pk[i] = TextDatumGetCString(pkv[i]);
}

/* The result column named name that has no role yet, or -1 (the last one
 * of that name). */
static int
find_free_column(const QueryTaskBuild *b, const char *name)
{
	int found = -1;

	for (int a = 0; a < b->natts; a++)
		if (!b->role[a] && strcmp(query_att_name(b, a), name) == 0)
			found = a;
	return found;
}

/* Every key column of the anchor must be returned under its own name. */
static void
find_key_columns(QueryTaskBuild *b)
{
	for (int k = 0; k < b->npk; k++)
	{
		int keyatt = -1;

		for (int a = 0; a < b->natts; a++)
			if (strcmp(query_att_name(b, a), b->pk[k]) == 0)
				keyatt = a;
		if (keyatt < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							errmsg("the query of task \"%s\" must return the key column \"%s\" of anchor table \"%s\"",
								   b->t->name, b->pk[k], b->anchor),
							errdetail("It returns: %s.", b->cols),
							errhint("Select the anchor's primary key under its own name, e.g. SELECT c.%s, ...", b->pk[k])));
		b->role[keyatt] = ROLE_KEY;
	}
}

/* Observation time: the named column, else one called observation_time or obs_time. */
static void
find_obs_time_column(QueryTaskBuild *b, const char *obs_arg)
{
	for (int a = 0; a < b->natts; a++)
	{
		const char *an = query_att_name(b, a);

		if (!b->role[a] && (obs_arg ? strcmp(an, obs_arg) == 0 :
							(strcmp(an, "observation_time") == 0 || strcmp(an, "obs_time") == 0)))
			b->obsatt = a;
	}
	if (obs_arg && b->obsatt < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
						errmsg("the query of task \"%s\" has no column \"%s\" (observation_time_column)", b->t->name, obs_arg),
						errdetail("It returns: %s.", b->cols)));
	if (b->obsatt >= 0)
		b->role[b->obsatt] = ROLE_OBS_TIME;
}

/*
 * Caller-given splits (a column named split) and when each label became
 * known (a column named label_time, or options.label_horizon after the
 * observation time); neither column is ever a feature or the target.
 */
static void
find_split_and_label_time_columns(QueryTaskBuild *b)
{
	const HwPgTaskOptions *opts = b->opts;

	b->splitatt = find_free_column(b, "split");
	if (b->splitatt >= 0)
	{
		b->role[b->splitatt] = ROLE_SPLIT;
		if (opts->split_method == HW_SPLIT_BY_TIME)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the query of task \"%s\" returns a split column and options ask for a time split", b->t->name),
							errhint("Use one: drop the split column from the query, or the \"split\": \"time\" option.")));
	}
	b->ltatt = find_free_column(b, "label_time");
	if (b->ltatt >= 0)
	{
		Oid ltt = TupleDescAttr(b->td, b->ltatt)->atttypid;

		b->role[b->ltatt] = ROLE_LABEL_TIME;
		if (opts->horizon)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the query of task \"%s\" returns a label_time column and options give a label_horizon",
								   b->t->name),
							errhint("Use one: drop the label_time column from the query, or the \"label_horizon\" option.")));
		if (!hw_pgtask_is_time_type(ltt))
			ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
							errmsg("label_time column of task \"%s\" has type %s, not date or timestamp", b->t->name,
								   format_type_be(ltt)),
							errhint("Return when each label became known, e.g. obs_time + interval '30 days' AS label_time.")));
	}
	if (opts->split_method == HW_SPLIT_BY_TIME && b->obsatt < 0 && b->snap->tables[b->at].time_col < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("task \"%s\" has no observation time, so it cannot be split by time", b->t->name),
						errhint("Return an observation_time column from the query (or name it with "
								"observation_time_column => '...'), or use the default hash split.")));
}

/* The target: the named column, else the one column left; any other
 * column is an error. */
static void
find_target_column(QueryTaskBuild *b, const char *target_col)
{
	if (target_col)
	{
		b->tgtatt = find_free_column(b, target_col);
		if (b->tgtatt < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							errmsg("the query of task \"%s\" has no target column \"%s\"", b->t->name, target_col),
							errdetail("It returns: %s.", b->cols)));
	}
	else
	{
		int nrest = 0;

		for (int a = 0; a < b->natts; a++)
			if (!b->role[a])
			{
				b->tgtatt = a;
				nrest++;
			}
		if (nrest != 1)
			ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							errmsg("the query of task \"%s\" returns %d columns besides the key and the observation time; expected exactly one target",
								   b->t->name, nrest),
							errdetail("It returns: %s.", b->cols),
							errhint("Name the target with target_column => '...' (and the time with observation_time_column => '...').")));
	}
	b->role[b->tgtatt] = ROLE_TARGET;

	StringInfoData pkl;

	initStringInfo(&pkl);
	for (int k = 0; k < b->npk; k++)
		appendStringInfo(&pkl, "%s%s", k ? ", " : "", b->pk[k]);
	for (int a = 0; a < b->natts; a++)
		if (!b->role[a])
			ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							errmsg("the query of task \"%s\" returns an unexpected column \"%s\"",
								   b->t->name, query_att_name(b, a)),
							errdetail("A task query returns the anchor key (%s), optionally an observation time, and the target.",
									  pkl.data),
							errhint("Remove the column, or name the target with target_column => '...'.")));
}

/* Checks the observation time's type and chooses the target's semantic
 * type: target_stype, else from the column's SQL type; the two must fit. */
static void
choose_target_stype(QueryTaskBuild *b, const char *stype_arg)
{
	HwTask *t = b->t;
	Oid tgtt;
	int st;

	b->obst = b->obsatt >= 0 ? TupleDescAttr(b->td, b->obsatt)->atttypid : InvalidOid;
	b->tgtt = tgtt = TupleDescAttr(b->td, b->tgtatt)->atttypid;
	b->tgtname = query_att_name(b, b->tgtatt);
	if (b->obsatt >= 0 && !hw_pgtask_is_time_type(b->obst))
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("observation time column \"%s\" of task \"%s\" has type %s, not date or timestamp",
							   query_att_name(b, b->obsatt), t->name, format_type_be(b->obst))));
	if (stype_arg)
	{
		st = hw_stype_from_name(stype_arg);
		if (st == HW_ST_TEXT)
			st = HW_ST_CATEGORICAL;
		if (st != HW_ST_NUMERICAL && st != HW_ST_BOOLEAN && st != HW_ST_CATEGORICAL && st != HW_ST_TIMESTAMP)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("target_stype \"%s\" cannot be predicted", stype_arg),
							errhint("Use numerical, boolean, categorical or timestamp.")));
	}
	else
		st = tgtt == BOOLOID ? HW_ST_BOOLEAN : hw_pgtask_is_numeric_type(tgtt) ? HW_ST_NUMERICAL :
			hw_pgtask_is_time_type(tgtt) ? HW_ST_TIMESTAMP : HW_ST_CATEGORICAL;
	bool fits = st == HW_ST_CATEGORICAL ||
		(st == HW_ST_NUMERICAL && (hw_pgtask_is_numeric_type(tgtt) || tgtt == BOOLOID)) ||
		(st == HW_ST_BOOLEAN && (tgtt == BOOLOID || hw_pgtask_is_numeric_type(tgtt))) ||
		(st == HW_ST_TIMESTAMP && hw_pgtask_is_time_type(tgtt));

	if (!fits)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("target column \"%s\" of task \"%s\" has type %s, which does not fit target_stype %s",
							   b->tgtname, t->name, format_type_be(tgtt), hw_stype_name(st)),
						errhint("Cast the target in the query, or pass another target_stype.")));
	b->st = st;
	t->target_stype = (int8_t) st;
	t->target_name = strdup(b->tgtname);
}

/* Where the seeds' observation times come from, in words. */
static char *
describe_obs_source(const QueryTaskBuild *b)
{
	const HwTable *tab = &b->snap->tables[b->at];

	if (b->obsatt >= 0)
		return psprintf("query column %s", query_att_name(b, b->obsatt));
	if (tab->time_col >= 0)
		return psprintf("time column %s of %s", tab->cols[tab->time_col].name, b->anchor);
	return pstrdup("none");
}

/* Materialises a query task's seeds into t (caller connected to SPI). */
void
hw_pgtask_build_query(HwTask *t, const HwPgTaskModel *mi, const HwSnapshot *snap, const char *query,
				 char **anchor_io, const char *target_col, const char *stype_arg,
				 const char *obs_arg, const HwPgTaskOptions *opts, char **obs_source)
{
	QueryTaskBuild b = {.t = t, .mi = mi, .snap = snap, .opts = opts,
						.obsatt = -1, .tgtatt = -1, .splitatt = -1, .ltatt = -1};
	QuerySeeds *seeds;
	ErrorContextCallback ecb;

	b.q = strip_trailing_semicolons(query);
	/* errors while the query is checked and run name the task */
	err_ctx_task = t->name;
	ecb.callback = query_error_context;
	ecb.arg = NULL;
	ecb.previous = error_context_stack;
	error_context_stack = &ecb;

	describe_query_result(&b);
	find_anchor_table(&b, anchor_io);
	b.role = palloc0(sizeof(int) * (b.natts ? b.natts : 1));
	find_key_columns(&b);
	find_obs_time_column(&b, obs_arg);
	find_split_and_label_time_columns(&b);
	find_target_column(&b, target_col);
	choose_target_stype(&b, stype_arg);
	seeds = hw_pgtask_read_query_seeds(&b);
	error_context_stack = ecb.previous;

	hw_pgtask_store_query_seeds(&b, seeds);
	*obs_source = describe_obs_source(&b);
}
