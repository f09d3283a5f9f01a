/*
 * task.c: rt_create_task, rt_drop_task, rt_tasks and the task loaders
 * (hw_pg_task.h).  Design of a task: src/core/task.h; SQL tables:
 * sql/parts/20_tasks.sql.
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

#include "embed_hash.h"
#include "hw_pg.h"
#include "hw_pg_task.h"

#define EPOCH_2000_US INT64CONST(946684800000000)
#define FETCH_ROWS 10000

/* ------------------------------------------------------------ privileges */

typedef struct ModelInfo
{
	int32  model_id;
	char  *name;
	char  *source_schema;
	char  *embedder;
	int32  d_text;
	Oid    owner;
} ModelInfo;

/* Model row (caller connected to SPI) and the access check. */
static void
model_info(int32 model_id, const char *name, ModelInfo *mi)
{
	HwAsOwner as;
	bool isnull;

	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT source_schema, embedder, d_text, owner::oid FROM headwater.model "
							  "WHERE model_id = $1", 1, (Oid[]) {INT4OID},
							  (Datum[]) {Int32GetDatum(model_id)}, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read model %d", model_id);
	hw_restore_user(&as);
	mi->model_id = model_id;
	mi->name = pstrdup(name);
	mi->source_schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	mi->embedder = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	mi->d_text = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	mi->owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
	hw_model_require(model_id, HW_RIGHT_OWN, NULL);
}

/* ----------------------------------------------------------- small helpers */

static void
free_task_cb(void *arg)
{
	hw_task_free((HwTask *) arg);
}

/* Frees a malloc'd task when cxt is reset or deleted (also on ERROR). */
static void
task_free_with(HwTask *t, MemoryContext cxt)
{
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	cb->func = free_task_cb;
	cb->arg = t;
	MemoryContextRegisterResetCallback(cxt, cb);
}

static void
raise_core(const HwError *err, const char *what)
{
	hw_pg_raise_core_error(err, what);
}

static int
snap_table(const HwSnapshot *snap, const char *name)
{
	for (int t = 0; t < snap->ntables; t++)
		if (strcmp(snap->tables[t].name, name) == 0)
			return t;
	return -1;
}

static int
snap_column(const HwSnapshot *snap, int t, const char *name)
{
	for (int c = 0; c < snap->tables[t].ncols; c++)
		if (strcmp(snap->tables[t].cols[c].name, name) == 0)
			return c;
	return -1;
}

static char *
text_arg(FunctionCallInfo fcinfo, int i)
{
	return PG_ARGISNULL(i) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(i));
}

/* out[n, d] f16 embeddings of strings with the model's embedder (the
 * built-in hash, or a user function text -> float4[] called as the caller). */
static void
embed_strings(const ModelInfo *mi, char **s, int n, uint16 *out)
{
	size_t d = (size_t) mi->d_text;

	if (strcmp(mi->embedder, "hash") == 0)
	{
		for (int i = 0; i < n; i++)
			hw_embed_hash_f16(s[i], strlen(s[i]), mi->d_text, out + d * i);
		return;
	}
	char *sql = psprintf("SELECT (%s($1))::float4[]", mi->embedder);

	for (int i = 0; i < n; i++)
	{
		bool isnull;
		Datum *vals;
		bool *vnull;
		int nv;

		if (SPI_execute_with_args(sql, 1, (Oid[]) {TEXTOID}, (Datum[]) {CStringGetTextDatum(s[i])},
								  NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "embedding function %s returned no row", mi->embedder);
		Datum v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (isnull)
			ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
							errmsg("embedding function %s returned NULL for \"%s\"", mi->embedder, s[i])));
		deconstruct_array(DatumGetArrayTypeP(v), FLOAT4OID, 4, true, TYPALIGN_INT, &vals, &vnull, &nv);
		if (nv != mi->d_text)
			ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
							errmsg("embedding function %s returned %d values, expected %d",
								   mi->embedder, nv, mi->d_text)));
		for (int k = 0; k < nv; k++)
			out[d * i + k] = hw_f32_to_f16(vnull[k] ? 0.0f : DatumGetFloat4(vals[k]));
		SPI_freetuptable(SPI_tuptable);
	}
}

typedef struct TaskOpts
{
	int64  split_seed;
	double ratio[3];
	int    label_history;       /* -1: default for the kind */
	int    history_max;
	int    max_categories;
	int    split_method;        /* HW_SPLIT_BY_HASH or HW_SPLIT_BY_TIME */
	char  *label_horizon;       /* interval text: label_time = obs_time + it; NULL = none */
	Interval *horizon;
	char  *val_from, *test_from;    /* time split: the cutoffs as given */
	int64  val_from_us, test_from_us;
	int    num_loss;            /* HwNumLoss, -1: the default (numerical targets only) */
} TaskOpts;

/* A time-split cutoff as a timestamp (epoch µs); false if it does not parse. */
static bool
parse_cutoff(const char *s, int64 *us)
{
	Datum     d;
	Timestamp ts;

	if (!hw_pg_try_type_input(timestamp_in, s, &d))
		return false;
	ts = DatumGetTimestamp(d);
	if (TIMESTAMP_NOT_FINITE(ts))
		return false;
	*us = ts + EPOCH_2000_US;
	return true;
}

/* A label horizon: a finite interval not below zero; NULL if it is not one. */
static Interval *
parse_horizon(const char *s)
{
	Datum     d;
	Interval *iv;

	if (!hw_pg_try_type_input(interval_in, s, &d))
		return NULL;
	iv = DatumGetIntervalP(d);
	if (iv->month < 0 || iv->day < 0 || iv->time < 0)
		return NULL;
	return iv;
}

static void
parse_options(Jsonb *opts, const char *task, TaskOpts *o)
{
	JsonbIterator *it;
	JsonbValue v;
	JsonbIteratorToken tok;
	char *key = NULL;
	int depth = 0, nratio = 0;

	o->split_seed = 0;
	o->ratio[0] = 0.8;
	o->ratio[1] = 0.1;
	o->ratio[2] = 0.1;
	o->label_history = -1;
	o->history_max = 16;
	o->max_categories = 1000;
	o->split_method = HW_SPLIT_BY_HASH;
	o->val_from = o->test_from = NULL;
	o->val_from_us = o->test_from_us = 0;
	o->label_horizon = NULL;
	o->horizon = NULL;
	o->num_loss = -1;
	if (opts == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(opts))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("options of task \"%s\" must be a JSON object", task)));
	it = JsonbIteratorInit(&opts->root);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_BEGIN_OBJECT || tok == WJB_BEGIN_ARRAY)
		{
			depth++;
			continue;
		}
		if (tok == WJB_END_OBJECT || tok == WJB_END_ARRAY)
		{
			depth--;
			continue;
		}
		if (tok == WJB_KEY && depth == 1)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			if (strcmp(key, "split_seed") && strcmp(key, "split_ratios") && strcmp(key, "label_history") &&
				strcmp(key, "history_max") && strcmp(key, "max_categories") && strcmp(key, "split") &&
				strcmp(key, "val_from") && strcmp(key, "test_from") && strcmp(key, "label_horizon") &&
				strcmp(key, "loss"))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("unknown option \"%s\" for task \"%s\"", key, task),
								errhint("Known options: split_seed, split_ratios, label_history, history_max, max_categories, "
										"split, val_from, test_from, label_horizon, loss.")));
			if (strcmp(key, "split_ratios") == 0)
				nratio = 0;
			continue;
		}
		if (key == NULL)
			continue;
		bool ok = true;

		if (strcmp(key, "split_ratios") == 0)
		{
			if (tok == WJB_ELEM && v.type == jbvNumeric && nratio < 3)
				o->ratio[nratio++] = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v.val.numeric)));
			else
				ok = false;
		}
		else if (strcmp(key, "split") == 0)
		{
			char *m = v.type == jbvString ? pnstrdup(v.val.string.val, v.val.string.len) : NULL;

			if (m == NULL || (strcmp(m, "hash") != 0 && strcmp(m, "time") != 0))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("bad value for option \"split\" of task \"%s\"", task),
								errhint("split: \"hash\" (the default) or \"time\" with val_from and test_from; "
										"to give each seed's split, return a column named split from the query.")));
			o->split_method = strcmp(m, "time") == 0 ? HW_SPLIT_BY_TIME : HW_SPLIT_BY_HASH;
		}
		else if (strcmp(key, "val_from") == 0 || strcmp(key, "test_from") == 0)
		{
			char *c = v.type == jbvString ? pnstrdup(v.val.string.val, v.val.string.len) : NULL;
			int64 us = 0;

			if (c == NULL || !parse_cutoff(c, &us))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("option \"%s\" of task \"%s\" is not a timestamp", key, task),
								errhint("Give the cutoff as a date or timestamp string, e.g. \"%s\": \"2022-06-01\".", key)));
			if (key[0] == 'v')
			{
				o->val_from = c;
				o->val_from_us = us;
			}
			else
			{
				o->test_from = c;
				o->test_from_us = us;
			}
		}
		else if (strcmp(key, "label_horizon") == 0)
		{
			char *c = v.type == jbvString ? pnstrdup(v.val.string.val, v.val.string.len) : NULL;

			if (c == NULL || (o->horizon = parse_horizon(c)) == NULL)
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("option \"label_horizon\" of task \"%s\" is not a non-negative interval", task),
								errhint("Give how long after its observation time a label becomes known, "
										"e.g. \"label_horizon\": \"30 days\" for a 30-day window.")));
			o->label_horizon = c;
		}
		else if (strcmp(key, "loss") == 0)
		{
			char *c = v.type == jbvString ? pnstrdup(v.val.string.val, v.val.string.len) : NULL;

			if (c == NULL || (o->num_loss = hw_num_loss_from_name(c)) < 0)
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("bad value for option \"loss\" of task \"%s\"", task),
								errhint("loss (numerical targets): \"ordinal\" (the default for integer labels spanning at most %d "
										"values: the median of a learnt distribution), \"mae\" (the default otherwise: fits the "
										"median, what MAE rewards) or \"huber\" (fits the mean, what RMSE rewards).",
										HW_ORD_LEVELS + 1)));
		}
		else if (strcmp(key, "label_history") == 0)
		{
			if (v.type == jbvBool)
				o->label_history = v.val.boolean;
			else
				ok = false;
		}
		else if (v.type == jbvNumeric)
		{
			int64 x = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v.val.numeric)));

			if (strcmp(key, "split_seed") == 0)
				o->split_seed = x;
			else if (strcmp(key, "history_max") == 0)
				ok = (o->history_max = (int) x) >= 0 && x <= 64;
			else
				ok = (o->max_categories = (int) x) >= 2 && x <= 1000000;
		}
		else
			ok = false;
		if (!ok)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("bad value for option \"%s\" of task \"%s\"", key, task),
							errhint("split_seed: integer; split_ratios: [train, val, test] summing to 1; "
									"label_history: true/false; history_max: 0..64; max_categories: 2..1000000.")));
	}
	if (nratio != 0 && nratio != 3)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option split_ratios of task \"%s\" needs 3 numbers [train, val, test]", task)));
	double sum = o->ratio[0] + o->ratio[1] + o->ratio[2];

	if (fabs(sum - 1.0) > 1e-6 || o->ratio[0] < 0 || o->ratio[1] < 0 || o->ratio[2] < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("split ratios of task \"%s\" must be non-negative and sum to 1 (got %g)", task, sum)));
	if (o->split_method == HW_SPLIT_BY_TIME)
	{
		if (o->val_from == NULL || o->test_from == NULL)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the time split of task \"%s\" needs %s", task,
								   o->val_from == NULL && o->test_from == NULL ? "val_from and test_from" :
								   o->val_from == NULL ? "val_from" : "test_from"),
							errhint("For example: {\"split\": \"time\", \"val_from\": \"2022-06-01\", \"test_from\": \"2022-09-01\"}.")));
		if (o->val_from_us > o->test_from_us)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the time split of task \"%s\" has val_from %s after test_from %s", task,
								   o->val_from, o->test_from),
							errhint("Seeds before val_from are train, from val_from to test_from val, the rest test; "
									"val_from must not be after test_from.")));
	}
	else if (o->val_from != NULL || o->test_from != NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("options val_from and test_from of task \"%s\" apply to the time split only", task),
						errhint("Add \"split\": \"time\".")));
}

static void
apply_options(HwTask *t, const TaskOpts *o)
{
	t->split_seed = (uint64_t) o->split_seed;
	for (int i = 0; i < 3; i++)
		t->split_ratio[i] = o->ratio[i];
	t->label_history = t->kind == HW_TASK_QUERY && o->label_history != 0;
	t->history_max = o->history_max;
	t->split_method = (int8_t) o->split_method;
	t->split_val_from_us = o->val_from_us;
	t->split_test_from_us = o->test_from_us;
	if (o->num_loss >= 0)
		t->num_loss = (int8_t) o->num_loss;
}

static bool
is_numeric_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID || t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID;
}

static bool
is_time_type(Oid t)
{
	return t == DATEOID || t == TIMESTAMPOID || t == TIMESTAMPTZOID;
}

/* ---------------------------------------------------------- query tasks */

static const char *err_ctx_task;

static void
query_error_context(void *arg)
{
	errcontext("running the query of task \"%s\"", err_ctx_task);
}

typedef struct CatEnt
{
	char   *value;
	uint32  idx;                /* first-seen index */
} CatEnt;

static int
cmp_catent(const void *a, const void *b)
{
	return strcmp(((const CatEnt *) a)->value, ((const CatEnt *) b)->value);
}

static char *
readable_key(const char *k)
{
	char *s = pstrdup(k);

	for (char *p = s; *p; p++)
		if (*p == '\x1f')
			*p = ',';
	return s;
}

/* Materialises a query task's seeds into t (caller connected to SPI). */
static void
build_query_task(HwTask *t, const ModelInfo *mi, const HwSnapshot *snap, const char *query,
				 char **anchor_io, const char *target_col, const char *stype_arg,
				 const char *obs_arg, const TaskOpts *opts, char **obs_source)
{
	HwAsOwner as;
	bool isnull;

	/* the query as a subquery; a trailing semicolon is fine */
	char *q = pstrdup(query);
	int ql = (int) strlen(q);

	while (ql > 0 && (q[ql - 1] == ';' || isspace((unsigned char) q[ql - 1])))
		q[--ql] = 0;

	ErrorContextCallback ecb;

	err_ctx_task = t->name;
	ecb.callback = query_error_context;
	ecb.arg = NULL;
	ecb.previous = error_context_stack;
	error_context_stack = &ecb;

	/* describe the result */
	if (SPI_execute(psprintf("SELECT * FROM (%s\n) AS q LIMIT 0", q), true, 0) != SPI_OK_SELECT)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("the query of task \"%s\" must be a SELECT", t->name)));
	TupleDesc td = CreateTupleDescCopy(SPI_tuptable->tupdesc);
	int natts = td->natts;
	Datum *names = palloc(sizeof(Datum) * (natts ? natts : 1));

	for (int a = 0; a < natts; a++)
		names[a] = CStringGetTextDatum(NameStr(TupleDescAttr(td, a)->attname));
	ArrayType *name_arr = construct_array(names, natts, TEXTOID, -1, false, TYPALIGN_INT);

	/* the anchor table: given, or the one table whose whole primary key the
	 * query returns (the widest key wins; a tie is ambiguous) */
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT table_name, pk_columns FROM headwater.model_table WHERE model_id = $1 "
							  "AND ($2::text IS NULL OR table_name = $2) "
							  "AND ($2::text IS NOT NULL OR (pk_columns IS NOT NULL AND pk_columns <@ $3)) "
							  "ORDER BY coalesce(array_length(pk_columns, 1), 0) DESC, table_name",
							  3, (Oid[]) {INT4OID, TEXTOID, TEXTARRAYOID},
							  (Datum[]) {Int32GetDatum(mi->model_id),
										 *anchor_io ? CStringGetTextDatum(*anchor_io) : (Datum) 0,
										 PointerGetDatum(name_arr)},
							  *anchor_io ? NULL : " n ", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the tables of model %s", mi->name);
	hw_restore_user(&as);
	if (*anchor_io == NULL)
	{
		if (SPI_processed == 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the query of task \"%s\" returns no table's primary key", t->name),
							errhint("Return the anchor table's key columns under their own names, or name it with anchor_table => '...'.")));
		if (SPI_processed > 1)
		{
			Datum k0 = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
			Datum k1 = SPI_getbinval(SPI_tuptable->vals[1], SPI_tuptable->tupdesc, 2, &isnull);

			if (ArrayGetNItems(ARR_NDIM(DatumGetArrayTypeP(k0)), ARR_DIMS(DatumGetArrayTypeP(k0))) ==
				ArrayGetNItems(ARR_NDIM(DatumGetArrayTypeP(k1)), ARR_DIMS(DatumGetArrayTypeP(k1))))
				ereport(ERROR, (errcode(ERRCODE_AMBIGUOUS_PARAMETER),
								errmsg("the query of task \"%s\" returns the key of both \"%s\" and \"%s\"", t->name,
									   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
									   SPI_getvalue(SPI_tuptable->vals[1], SPI_tuptable->tupdesc, 1)),
								errhint("Name the anchor with anchor_table => '...'.")));
		}
		*anchor_io = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	}
	const char *anchor = *anchor_io;
	int at = snap_table(snap, anchor);

	if (at < 0 || SPI_processed == 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("table \"%s\" is not part of model \"%s\"", anchor, mi->name),
						errhint("rt_describe(%s) lists the model's tables.", quote_literal_cstr(mi->name))));
	t->anchor_table = at;
	Datum pkd = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);

	if (isnull || snap->tables[at].key_hash == NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("anchor table \"%s\" of task \"%s\" has no primary key", anchor, t->name),
						errhint("Seeds are found by key; anchor the task on a table with a primary key.")));
	Datum *pkv;
	bool *pkn;
	int npk;

	deconstruct_array(DatumGetArrayTypeP(pkd), TEXTOID, -1, false, TYPALIGN_INT, &pkv, &pkn, &npk);
	char **pk = palloc(sizeof(char *) * npk);

	for (int i = 0; i < npk; i++)
		pk[i] = TextDatumGetCString(pkv[i]);
	int *role = palloc0(sizeof(int) * natts);   /* 1 key, 2 obs, 3 target, 4 split, 5 label time */
	int *keyatt = palloc(sizeof(int) * npk);
	int obsatt = -1, tgtatt = -1, splitatt = -1, ltatt = -1;
	StringInfoData cols;

	initStringInfo(&cols);
	for (int a = 0; a < natts; a++)
		appendStringInfo(&cols, "%s%s", a ? ", " : "", NameStr(TupleDescAttr(td, a)->attname));
	for (int k = 0; k < npk; k++)
	{
		keyatt[k] = -1;
		for (int a = 0; a < natts; a++)
			if (strcmp(NameStr(TupleDescAttr(td, a)->attname), pk[k]) == 0)
				keyatt[k] = a;
		if (keyatt[k] < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							errmsg("the query of task \"%s\" must return the key column \"%s\" of anchor table \"%s\"",
								   t->name, pk[k], anchor),
							errdetail("It returns: %s.", cols.data),
							errhint("Select the anchor's primary key under its own name, e.g. SELECT c.%s, ...", pk[k])));
		role[keyatt[k]] = 1;
	}
	/* observation time: the named column, else one called observation_time or obs_time */
	for (int a = 0; a < natts; a++)
	{
		const char *an = NameStr(TupleDescAttr(td, a)->attname);

		if (!role[a] && (obs_arg ? strcmp(an, obs_arg) == 0 :
						 (strcmp(an, "observation_time") == 0 || strcmp(an, "obs_time") == 0)))
			obsatt = a;
	}
	if (obs_arg && obsatt < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
						errmsg("the query of task \"%s\" has no column \"%s\" (observation_time_column)", t->name, obs_arg),
						errdetail("It returns: %s.", cols.data)));
	if (obsatt >= 0)
		role[obsatt] = 2;
	/* caller-given splits: a column named split (never a feature or the target) */
	for (int a = 0; a < natts; a++)
		if (!role[a] && strcmp(NameStr(TupleDescAttr(td, a)->attname), "split") == 0)
			splitatt = a;
	if (splitatt >= 0)
	{
		role[splitatt] = 4;
		if (opts->split_method == HW_SPLIT_BY_TIME)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the query of task \"%s\" returns a split column and options ask for a time split", t->name),
							errhint("Use one: drop the split column from the query, or the \"split\": \"time\" option.")));
	}
	/* when each label became known: a column named label_time (never a
	 * feature or the target), or options.label_horizon after the obs time */
	for (int a = 0; a < natts; a++)
		if (!role[a] && strcmp(NameStr(TupleDescAttr(td, a)->attname), "label_time") == 0)
			ltatt = a;
	if (ltatt >= 0)
	{
		role[ltatt] = 5;
		if (opts->horizon)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the query of task \"%s\" returns a label_time column and options give a label_horizon",
								   t->name),
							errhint("Use one: drop the label_time column from the query, or the \"label_horizon\" option.")));
		if (!is_time_type(TupleDescAttr(td, ltatt)->atttypid))
			ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
							errmsg("label_time column of task \"%s\" has type %s, not date or timestamp", t->name,
								   format_type_be(TupleDescAttr(td, ltatt)->atttypid)),
							errhint("Return when each label became known, e.g. obs_time + interval '30 days' AS label_time.")));
	}
	if (opts->split_method == HW_SPLIT_BY_TIME && obsatt < 0 && snap->tables[at].time_col < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("task \"%s\" has no observation time, so it cannot be split by time", t->name),
						errhint("Return an observation_time column from the query (or name it with "
								"observation_time_column => '...'), or use the default hash split.")));
	if (target_col)
	{
		for (int a = 0; a < natts; a++)
			if (!role[a] && strcmp(NameStr(TupleDescAttr(td, a)->attname), target_col) == 0)
				tgtatt = a;
		if (tgtatt < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							errmsg("the query of task \"%s\" has no target column \"%s\"", t->name, target_col),
							errdetail("It returns: %s.", cols.data)));
	}
	else
	{
		int nrest = 0;

		for (int a = 0; a < natts; a++)
			if (!role[a])
			{
				tgtatt = a;
				nrest++;
			}
		if (nrest != 1)
			ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							errmsg("the query of task \"%s\" returns %d columns besides the key and the observation time; expected exactly one target",
								   t->name, nrest),
							errdetail("It returns: %s.", cols.data),
							errhint("Name the target with target_column => '...' (and the time with observation_time_column => '...').")));
	}
	role[tgtatt] = 3;
	StringInfoData pkl;

	initStringInfo(&pkl);
	for (int k = 0; k < npk; k++)
		appendStringInfo(&pkl, "%s%s", k ? ", " : "", pk[k]);
	const char *pk_list = pkl.data;

	for (int a = 0; a < natts; a++)
		if (!role[a])
			ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							errmsg("the query of task \"%s\" returns an unexpected column \"%s\"",
								   t->name, NameStr(TupleDescAttr(td, a)->attname)),
							errdetail("A task query returns the anchor key (%s), optionally an observation time, and the target.",
									  pk_list),
							errhint("Remove the column, or name the target with target_column => '...'.")));
	Oid obst = obsatt >= 0 ? TupleDescAttr(td, obsatt)->atttypid : InvalidOid;
	Oid tgtt = TupleDescAttr(td, tgtatt)->atttypid;
	const char *tgtname = NameStr(TupleDescAttr(td, tgtatt)->attname);

	if (obsatt >= 0 && !is_time_type(obst))
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("observation time column \"%s\" of task \"%s\" has type %s, not date or timestamp",
							   NameStr(TupleDescAttr(td, obsatt)->attname), t->name, format_type_be(obst))));
	int st;

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
		st = tgtt == BOOLOID ? HW_ST_BOOLEAN : is_numeric_type(tgtt) ? HW_ST_NUMERICAL :
			is_time_type(tgtt) ? HW_ST_TIMESTAMP : HW_ST_CATEGORICAL;
	bool fits = st == HW_ST_CATEGORICAL ||
		(st == HW_ST_NUMERICAL && (is_numeric_type(tgtt) || tgtt == BOOLOID)) ||
		(st == HW_ST_BOOLEAN && (tgtt == BOOLOID || is_numeric_type(tgtt))) ||
		(st == HW_ST_TIMESTAMP && is_time_type(tgtt));

	if (!fits)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("target column \"%s\" of task \"%s\" has type %s, which does not fit target_stype %s",
							   tgtname, t->name, format_type_be(tgtt), hw_stype_name(st)),
						errhint("Cast the target in the query, or pass another target_stype.")));
	t->target_stype = (int8_t) st;
	t->target_name = strdup(tgtname);

	/* the seeds: key text, observation time, target in a canonical form */
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int k = 0; k < npk; k++)
		appendStringInfo(&sql, "%s(q.%s)::text", k ? ", " : "", quote_identifier(pk[k]));
	if (obsatt >= 0)
		appendStringInfo(&sql, ", (q.%s)%s", quote_identifier(NameStr(TupleDescAttr(td, obsatt)->attname)),
						 obst == DATEOID ? "::timestamp" : "");
	else
		appendStringInfoString(&sql, ", NULL::timestamp");
	const char *tq = quote_identifier(tgtname);

	switch (st)
	{
		case HW_ST_NUMERICAL:
			appendStringInfo(&sql, ", (q.%s)%s::float8", tq, tgtt == BOOLOID ? "::int" : "");
			break;
		case HW_ST_BOOLEAN:
			appendStringInfo(&sql, tgtt == BOOLOID ? ", (q.%s)" : ", (q.%s) <> 0", tq);
			break;
		case HW_ST_TIMESTAMP:
			appendStringInfo(&sql, ", (q.%s)%s", tq, tgtt == DATEOID ? "::timestamp" : "");
			break;
		default:
			appendStringInfo(&sql, ", (q.%s)::text", tq);
			break;
	}
	if (splitatt >= 0)
		appendStringInfo(&sql, ", (q.%s)::text", quote_identifier(NameStr(TupleDescAttr(td, splitatt)->attname)));
	if (ltatt >= 0)
		appendStringInfo(&sql, ", (q.%s)%s", quote_identifier(NameStr(TupleDescAttr(td, ltatt)->attname)),
						 TupleDescAttr(td, ltatt)->atttypid == DATEOID ? "::timestamp" : "");
	int ltcol = npk + 3 + (splitatt >= 0);
	appendStringInfo(&sql, " FROM (%s\n) AS q", q);

	Portal portal = SPI_cursor_open_with_args(NULL, sql.data, 0, NULL, NULL, NULL, true, CURSOR_OPT_NO_SCROLL);
	size_t cap = 1024, n = 0;
	uint32 *rows = palloc(sizeof(uint32) * cap);
	uint64 *keys = palloc(sizeof(uint64) * cap);
	int64 *obs = palloc(sizeof(int64) * cap);
	double *tv = palloc(sizeof(double) * cap);
	uint8 *tn = palloc(sizeof(uint8) * cap);
	uint8 *sp = splitatt >= 0 ? palloc(sizeof(uint8) * cap) : NULL;
	bool with_lt = ltatt >= 0 || opts->horizon != NULL;
	int64 *lt = with_lt ? palloc(sizeof(int64) * cap) : NULL;
	int64 n_null_keys = 0, n_missing = 0, n_bad_split = 0, n_no_obs = 0, n_early = 0;
	char *early = NULL;
	char *bad_split = NULL;
	StringInfoData examples;
	uint32 ncat = 0;
	StringInfoData kb;

	initStringInfo(&examples);
	initStringInfo(&kb);
	/* category dictionary: a plain array + linear probing on hash */
	uint32 dict_cap = 1024;
	CatEnt *dict = st == HW_ST_CATEGORICAL ? palloc0(sizeof(CatEnt) * dict_cap) : NULL;
	uint32 *dict_slot = st == HW_ST_CATEGORICAL ? palloc(sizeof(uint32) * dict_cap * 2) : NULL;

	if (dict_slot)
		memset(dict_slot, 0xff, sizeof(uint32) * dict_cap * 2);

	for (;;)
	{
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		TupleDesc rtd = SPI_tuptable->tupdesc;

		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple tup = SPI_tuptable->vals[i];
			bool null_key = false;

			resetStringInfo(&kb);
			for (int k = 0; k < npk; k++)
			{
				char *v = SPI_getvalue(tup, rtd, k + 1);

				if (v == NULL)
				{
					null_key = true;
					break;
				}
				if (k)
					appendStringInfoChar(&kb, '\x1f');
				appendStringInfoString(&kb, v);
			}
			if (null_key)
			{
				n_null_keys++;
				continue;
			}
			uint64 h = hw_hash_key_text(kb.data, kb.len);
			int64 g = snapshot_find_row(snap, at, h);

			if (g < 0)
			{
				if (n_missing < 5)
					appendStringInfo(&examples, "%s%s", n_missing ? ", " : "", readable_key(kb.data));
				n_missing++;
				continue;
			}
			if (n == cap)
			{
				cap *= 2;
				rows = repalloc_huge(rows, sizeof(uint32) * cap);
				keys = repalloc_huge(keys, sizeof(uint64) * cap);
				obs = repalloc_huge(obs, sizeof(int64) * cap);
				tv = repalloc_huge(tv, sizeof(double) * cap);
				tn = repalloc_huge(tn, sizeof(uint8) * cap);
				if (sp)
					sp = repalloc_huge(sp, sizeof(uint8) * cap);
				if (lt)
					lt = repalloc_huge(lt, sizeof(int64) * cap);
			}
			rows[n] = (uint32) g;
			keys[n] = h;
			/* observation time: the query's, else the anchor row's, else none */
			Datum od = SPI_getbinval(tup, rtd, npk + 1, &isnull);

			if (!isnull)
			{
				Timestamp ts = DatumGetTimestamp(od);

				if (TIMESTAMP_NOT_FINITE(ts))
					ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
									errmsg("task \"%s\": observation time of anchor %s is infinite", t->name,
										   readable_key(kb.data))));
				obs[n] = ts + EPOCH_2000_US;
			}
			else
				obs[n] = snap->row_time_us[g] == HW_NO_TIME ? HW_NO_CUTOFF : snap->row_time_us[g];
			n_no_obs += obs[n] == HW_NO_CUTOFF;
			if (ltatt >= 0)
			{
				/* NULL: the label never became known, so it is never history */
				Datum ld = SPI_getbinval(tup, rtd, ltcol, &isnull);
				Timestamp ts = isnull ? DT_NOEND : DatumGetTimestamp(ld);

				if (!isnull && TIMESTAMP_IS_NOBEGIN(ts))
					ts = DT_NOBEGIN;
				lt[n] = TIMESTAMP_NOT_FINITE(ts) ? (TIMESTAMP_IS_NOEND(ts) ? HW_NO_CUTOFF : INT64_MIN) :
					ts + EPOCH_2000_US;
			}
			else if (lt)
			{
				/* obs time + label_horizon, in calendar terms (a month is a month) */
				lt[n] = obs[n] == HW_NO_CUTOFF ? HW_NO_CUTOFF :
					DatumGetTimestamp(DirectFunctionCall2(timestamp_pl_interval,
														  TimestampGetDatum(obs[n] - EPOCH_2000_US),
														  IntervalPGetDatum(opts->horizon))) + EPOCH_2000_US;
			}
			if (lt && obs[n] != HW_NO_CUTOFF && lt[n] != HW_NO_CUTOFF && lt[n] < obs[n])
			{
				if (n_early++ == 0)
					early = psprintf("anchor %s: label_time %s, observation time %s", readable_key(kb.data),
									 timestamptz_to_str((TimestampTz) (lt[n] == INT64_MIN ? DT_NOBEGIN : lt[n] - EPOCH_2000_US)),
									 timestamptz_to_str((TimestampTz) (obs[n] - EPOCH_2000_US)));
			}
			if (sp)
			{
				char *sv = SPI_getvalue(tup, rtd, npk + 3);
				int si = sv ? hw_split_from_name(sv) : -1;

				/* exactly 'train', 'val' or 'test' ('validation' is not a split value here) */
				if (si < 0 || strcmp(sv, hw_split_name(si)) != 0)
				{
					if (n_bad_split++ == 0)
						bad_split = sv ? quote_literal_cstr(sv) : pstrdup("NULL");
					si = 0;
				}
				sp[n] = (uint8) si;
			}
			Datum d = SPI_getbinval(tup, rtd, npk + 2, &isnull);

			tn[n] = isnull;
			tv[n] = 0;
			if (!isnull)
			{
				switch (st)
				{
					case HW_ST_NUMERICAL:
						tv[n] = DatumGetFloat8(d);
						if (!isfinite(tv[n]))
							ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
											errmsg("task \"%s\": the target of anchor %s is not finite", t->name,
												   readable_key(kb.data))));
						break;
					case HW_ST_BOOLEAN:
						tv[n] = DatumGetBool(d) ? 1.0 : 0.0;
						break;
					case HW_ST_TIMESTAMP:
						{
							Timestamp ts = DatumGetTimestamp(d);

							if (TIMESTAMP_NOT_FINITE(ts))
								ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
												errmsg("task \"%s\": the target of anchor %s is infinite", t->name,
													   readable_key(kb.data))));
							tv[n] = (double) (ts + EPOCH_2000_US);
						}
						break;
					default:
						{
							char *v = TextDatumGetCString(d);
							uint32 hh = (uint32) hw_hash_key_text(v, strlen(v));
							uint32 mask = dict_cap * 2 - 1, p = hh & mask;

							while (dict_slot[p] != UINT32_MAX && strcmp(dict[dict_slot[p]].value, v) != 0)
								p = (p + 1) & mask;
							if (dict_slot[p] == UINT32_MAX)
							{
								if (ncat >= (uint32) opts->max_categories)
									ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
													errmsg("the target of task \"%s\" has more than %d distinct values",
														   t->name, opts->max_categories),
													errhint("Predict it as numerical, group rare values in the query, "
															"or raise options {\"max_categories\": N}.")));
								if (ncat == dict_cap)
								{
									/* grow and rehash */
									uint32 ncap = dict_cap * 2;

									dict = repalloc(dict, sizeof(CatEnt) * ncap);
									pfree(dict_slot);
									dict_slot = palloc(sizeof(uint32) * ncap * 2);
									memset(dict_slot, 0xff, sizeof(uint32) * ncap * 2);
									dict_cap = ncap;
									mask = dict_cap * 2 - 1;
									for (uint32 e = 0; e < ncat; e++)
									{
										uint32 q2 = (uint32) hw_hash_key_text(dict[e].value, strlen(dict[e].value)) & mask;

										while (dict_slot[q2] != UINT32_MAX)
											q2 = (q2 + 1) & mask;
										dict_slot[q2] = e;
									}
									p = hh & mask;
									while (dict_slot[p] != UINT32_MAX)
										p = (p + 1) & mask;
								}
								dict[ncat].value = v;
								dict[ncat].idx = ncat;
								dict_slot[p] = ncat++;
							}
							tv[n] = (double) dict_slot[p];
						}
						break;
				}
			}
			n++;
		}
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	error_context_stack = ecb.previous;

	if (n_null_keys > 0)
		ereport(ERROR, (errcode(ERRCODE_NOT_NULL_VIOLATION),
						errmsg("the query of task \"%s\" returned %lld rows with a NULL anchor key", t->name,
							   (long long) n_null_keys),
						errhint("Filter them out: WHERE %s IS NOT NULL.", pk[0])));
	if (n_missing > 0)
		ereport(ERROR, (errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
						errmsg("%lld anchors of task \"%s\" do not exist in table \"%s\" of model \"%s\"",
							   (long long) n_missing, t->name, anchor, mi->name),
						errdetail("For example: %s.", examples.data),
						errhint("Run rt_refresh(%s) if the rows were added after the model was built, "
								"or filter them out of the query.", quote_literal_cstr(mi->name))));
	if (n_bad_split > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("the split column of task \"%s\" has %lld rows with a value other than 'train', 'val' or 'test' (first: %s)",
							   t->name, (long long) n_bad_split, bad_split),
						errhint("Return exactly 'train', 'val' or 'test' (text, not NULL) in the split column, "
								"e.g. CASE WHEN ... THEN 'train' ... END AS split.")));
	if (n_early > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%lld seeds of task \"%s\" have a label_time before their observation time",
							   (long long) n_early, t->name),
						errdetail("First: %s.", early),
						errhint("label_time is when the label became known: at or after the observation time "
								"(e.g. the end of the label's window); NULL if it is not known yet.")));
	if (opts->split_method == HW_SPLIT_BY_TIME && n_no_obs > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%lld seeds of task \"%s\" have no observation time, so they cannot be split by time",
							   (long long) n_no_obs, t->name),
						errhint("Filter them out of the query, or give them an observation time.")));
	if (n == 0)
		ereport(ERROR, (errcode(ERRCODE_NO_DATA_FOUND),
						errmsg("the query of task \"%s\" returned no rows", t->name),
						errhint("A task needs at least one seed.")));
	if (n > UINT32_MAX / 2)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("task \"%s\" has too many seeds (%zu)", t->name, n)));

	/* categories in byte order, so the block does not depend on row order */
	uint32 *remap = NULL;

	if (st == HW_ST_CATEGORICAL)
	{
		CatEnt *sorted = palloc(sizeof(CatEnt) * (ncat ? ncat : 1));

		memcpy(sorted, dict, sizeof(CatEnt) * ncat);
		qsort(sorted, ncat, sizeof(CatEnt), cmp_catent);
		remap = palloc(sizeof(uint32) * (ncat ? ncat : 1));
		t->ncat_own = ncat;
		t->cat_values = calloc(ncat ? ncat : 1, sizeof(char *));
		if (t->cat_values == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		for (uint32 i = 0; i < ncat; i++)
		{
			remap[sorted[i].idx] = i;
			t->cat_values[i] = strdup(sorted[i].value);
		}
	}
	HwError err = {0};

	if (hw_task_alloc_seeds(t, (uint32) n, &err) != HW_OK)
		raise_core(&err, "could not materialise the seeds");
	for (size_t i = 0; i < n; i++)
	{
		t->anchor_row[i] = rows[i];
		t->anchor_key[i] = keys[i];
		t->obs_time_us[i] = obs[i];
		t->target_null[i] = tn[i];
		t->target[i] = (remap && !tn[i]) ? (double) remap[(uint32) tv[i]] : tv[i];
	}
	apply_options(t, opts);
	if (lt && hw_task_set_label_times(t, lt, &err) != HW_OK)
		raise_core(&err, "could not store the label times");
	if (sp)
	{
		t->split_method = HW_SPLIT_BY_COLUMN;
		memcpy(t->split, sp, n);
	}
	if (hw_task_assign_splits(t, &err) != HW_OK)
		raise_core(&err, "could not assign splits");
	hw_task_compute_stats(t);

	/* embeddings of the virtual columns and the categories */
	t->d_text = mi->d_text;
	t->vcol_emb = calloc((size_t) 2 * mi->d_text, sizeof(uint16));
	if (t->vcol_emb == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	{
		char *names[2] = {psprintf("observation time of %s", t->name), psprintf("%s of %s", tgtname, t->name)};

		embed_strings(mi, names, 2, t->vcol_emb);
	}
	if (st == HW_ST_CATEGORICAL && ncat > 0)
	{
		char **s = palloc(sizeof(char *) * ncat);

		for (uint32 i = 0; i < ncat; i++)
			s[i] = psprintf("%s is %s", tgtname, t->cat_values[i]);
		t->cat_emb_own = calloc((size_t) ncat * mi->d_text, sizeof(uint16));
		if (t->cat_emb_own == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		embed_strings(mi, s, (int) ncat, t->cat_emb_own);
	}
	*obs_source = obsatt >= 0 ? psprintf("query column %s", NameStr(TupleDescAttr(td, obsatt)->attname)) :
		snap->tables[at].time_col >= 0 ?
		psprintf("time column %s of %s", snap->tables[at].cols[snap->tables[at].time_col].name, anchor) :
		pstrdup("none");
}

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

PG_FUNCTION_INFO_V1(rt_create_task);
Datum
rt_create_task(PG_FUNCTION_ARGS)
{
	char *model = text_arg(fcinfo, 0);
	char *tname = text_arg(fcinfo, 1);
	char *query = text_arg(fcinfo, 2);
	char *anchor = text_arg(fcinfo, 3);
	char *target = text_arg(fcinfo, 4);
	char *stype = text_arg(fcinfo, 5);
	char *obscol = text_arg(fcinfo, 6);
	Jsonb *options = PG_ARGISNULL(7) ? NULL : PG_GETARG_JSONB_P(7);
	int32 model_id;
	ModelInfo mi;
	TaskOpts opts;
	HwError err = {0};
	HwTask *t;
	char *obs_source = NULL;

	if (model == NULL || tname == NULL)
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
	model_id = hw_pg_model_id(model, false);
	parse_options(options, tname, &opts);
	/* the access check first (a role without it learns nothing of the
	 * model's tasks), then the (possibly large) snapshot */
	MemoryContext fncxt = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	model_info(model_id, model, &mi);
	/* names are unique within the model; other models may use the same */
	if (hw_pg_task_id_in_model(model_id, tname) >= 0)
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
						errmsg("task \"%s\" already exists", tname),
						errhint("Drop it first with rt_drop_task(%s, %s), or pick another name.",
								quote_literal_cstr(model), quote_literal_cstr(tname))));
	/* keep the strings past SPI_finish, which frees SPI's memory */
	mi.name = MemoryContextStrdup(fncxt, mi.name);
	mi.source_schema = MemoryContextStrdup(fncxt, mi.source_schema);
	mi.embedder = MemoryContextStrdup(fncxt, mi.embedder);
	SPI_finish();
	HwSnapshot *snap = hw_pg_snapshot_load_in_context(model_id, CurrentMemoryContext);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	t = hw_task_new(tname, query ? HW_TASK_QUERY : HW_TASK_CELL, &err);
	if (t == NULL)
		raise_core(&err, "could not create the task");
	task_free_with(t, CurrentMemoryContext);

	if (query == NULL)
	{
		if (anchor == NULL || target == NULL)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("task \"%s\" needs a query, or anchor_table and target_column", tname),
							errhint("Predict a column: rt_create_task(%s, %s, anchor_table => 'orders', target_column => 'status').",
									quote_literal_cstr(model), quote_literal_cstr(tname))));
		if (obscol)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("observation_time_column applies to query tasks only"),
							errhint("A cell task observes each row at its table's time column; set it with rt_set_time_column.")));
		int at = snap_table(snap, anchor);

		if (at < 0)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
							errmsg("table \"%s\" is not part of model \"%s\"", anchor, model),
							errhint("rt_describe(%s) lists the model's tables.", quote_literal_cstr(model))));
		int c = snap_column(snap, at, target);

		if (c < 0)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
							errmsg("column \"%s\" of table \"%s\" is not part of model \"%s\"", target, anchor, model)));
		const HwColumn *col = &snap->tables[at].cols[c];

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
		if (opts.split_method != HW_SPLIT_BY_HASH)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the time split applies to query tasks only (task \"%s\" predicts a column)", tname),
							errhint("Write the task as a query returning the key, an observation time and the target.")));
		if (opts.horizon)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("label_horizon applies to query tasks only (task \"%s\" predicts a column)", tname),
							errhint("A cell task has no label history; drop the option.")));
		apply_options(t, &opts);
		if (hw_task_build_cell(t, snap, at, c, &err) != HW_OK)
			ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
							errmsg("%s", err.msg),
							errhint("Change its type with rt_set_column_type, or predict another column.")));
		obs_source = snap->tables[at].time_col >= 0 ?
			psprintf("time column %s of %s", snap->tables[at].cols[snap->tables[at].time_col].name, anchor) :
			pstrdup("none");
	}
	else
	{
		build_query_task(t, &mi, snap, query, &anchor, target, stype, obscol, &opts, &obs_source);
	}
	if (opts.num_loss >= 0 && t->target_stype != HW_ST_NUMERICAL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option \"loss\" of task \"%s\" applies to numerical targets, not %s", tname,
							   hw_stype_name(t->target_stype)),
						errhint("Drop the option: boolean and categorical targets use cross-entropy.")));
	if (opts.num_loss == HW_NUM_LOSS_ORDINAL && hw_task_ordinal_levels(t) == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option \"loss\" of task \"%s\" is \"ordinal\", but its train labels are not integers spanning 2 to %d values",
							   tname, HW_ORD_LEVELS + 1),
						errhint("Use \"mae\" or \"huber\": the ordinal loss needs integer labels spanning at most %d values.",
								HW_ORD_LEVELS + 1)));
	/*
	 * The default loss of a numerical task is resolved here, once, and
	 * stored in its options: "ordinal" where its train labels allow it
	 * (integers spanning at most HW_ORD_LEVELS + 1 values), else "mae".  A
	 * task stored without a loss (created before this default) keeps the
	 * MAE regression it was trained with, so a model trained on it never
	 * starts serving from a head it did not train.
	 */
	if (opts.num_loss < 0 && t->target_stype == HW_ST_NUMERICAL)
	{
		t->num_loss = HW_NUM_LOSS_ORDINAL;
		if (hw_task_ordinal_levels(t) == 0)
			t->num_loss = HW_NUM_LOSS_MAE;
		options = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
								 options ? JsonbPGetDatum(options) : DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")),
								 DirectFunctionCall1(jsonb_in, CStringGetDatum(t->num_loss == HW_NUM_LOSS_ORDINAL ?
																			   "{\"loss\": \"ordinal\"}" :
																			   "{\"loss\": \"mae\"}"))));
	}

	/* store (as the owner of headwater's tables) */
	{
		HwAsOwner as;
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
			Int32GetDatum(model_id), CStringGetTextDatum(tname),
			CStringGetTextDatum(t->kind == HW_TASK_QUERY ? "query" : "cell"),
			CStringGetTextDatum(anchor), CStringGetTextDatum(t->target_name),
			CStringGetTextDatum(hw_stype_name(t->target_stype)), CStringGetTextDatum(obs_source),
			query ? CStringGetTextDatum(query) : (Datum) 0,
			options ? JsonbPGetDatum(options) : DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")),
			Int64GetDatum((int64) t->split_seed), PointerGetDatum(ra), BoolGetDatum(t->label_history),
			Int32GetDatum(t->history_max), Float8GetDatum(t->target_mean), Float8GetDatum(t->target_std),
			Int64GetDatum(t->nseeds), Int64GetDatum(t->split_count[0]), Int64GetDatum(t->split_count[1]),
			Int64GetDatum(t->split_count[2]), Int64GetDatum(t->target_nulls), catarr,
			ObjectIdGetDatum(GetUserId()), CStringGetTextDatum(hw_split_method_name(t->split_method))
		};
		char nulls[24];

		memset(nulls, ' ', 23);
		nulls[23] = 0;

		if (!query)
			nulls[7] = 'n';
		if (catarr == (Datum) 0)
			nulls[20] = 'n';
		hw_become_owner(&as);
		if (SPI_execute_with_args("INSERT INTO headwater.task (model_id, name, kind, anchor_table, target_column, "
								  "target_stype, obs_time_source, query, options, split_seed, split_ratios, "
								  "label_history, history_max, target_mean, target_std, n_seeds, n_train, n_val, "
								  "n_test, n_null_targets, categories, owner, split_method) VALUES ($1, $2, $3, $4, "
								  "$5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, "
								  "$22::regrole, $23) RETURNING task_id",
								  23, types, vals, nulls, false, 1) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "could not store task %s", tname);
		int32 task_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		if (t->kind == HW_TASK_QUERY)
		{
			uint8_t *buf;
			size_t len;

			if (hw_task_seeds_serialize(t, &buf, &len, &err) != HW_OK)
				raise_core(&err, "could not serialize the seeds");
			bytea *b = bytes_to_bytea(buf, len);

			free(buf);
			if (SPI_execute_with_args("INSERT INTO headwater.task_seed (task_id, n_seeds, data) VALUES ($1, $2, $3)",
									  3, (Oid[]) {INT4OID, INT8OID, BYTEAOID},
									  (Datum[]) {Int32GetDatum(task_id), Int64GetDatum(t->nseeds), PointerGetDatum(b)},
									  NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not store the seeds of task %s", tname);
			size_t d = (size_t) t->d_text;
			bytea *ve = bytes_to_bytea(t->vcol_emb, 2 * d * 2);
			bytea *ce = t->cat_emb_own ? bytes_to_bytea(t->cat_emb_own, (size_t) t->ncat_own * d * 2) : NULL;

			if (SPI_execute_with_args("UPDATE headwater.task SET vcol_emb = $2, cat_emb = $3 WHERE task_id = $1",
									  3, (Oid[]) {INT4OID, BYTEAOID, BYTEAOID},
									  (Datum[]) {Int32GetDatum(task_id), PointerGetDatum(ve), PointerGetDatum(ce)},
									  ce ? NULL : "  n", false, 0) != SPI_OK_UPDATE)
				elog(ERROR, "could not store the embeddings of task %s", tname);
		}
		hw_restore_user(&as);
	}

	/* summary, in the function's memory: it is parsed after SPI_finish,
	 * which frees SPI's (appends repalloc in the buffer's own context) */
	StringInfoData js;
	MemoryContext spi_cxt = MemoryContextSwitchTo(fncxt);

	initStringInfo(&js);
	MemoryContextSwitchTo(spi_cxt);
	appendStringInfoChar(&js, '{');
	json_kv_str(&js, "task", tname, false);
	json_kv_str(&js, "kind", t->kind == HW_TASK_QUERY ? "query" : "cell", true);
	json_kv_str(&js, "anchor_table", anchor, true);
	json_kv_str(&js, "target", t->target_name, true);
	json_kv_str(&js, "target_stype", hw_stype_name(t->target_stype), true);
	json_kv_str(&js, "observation_time", obs_source, true);
	appendStringInfo(&js, ", \"seeds\": %u, \"splits\": {\"train\": %u, \"val\": %u, \"test\": %u}, "
					 "\"null_targets\": %lld",
					 t->nseeds, t->split_count[0], t->split_count[1], t->split_count[2],
					 (long long) t->target_nulls);
	/* how the split was made: only when not the default hash (older summaries unchanged) */
	if (t->split_method != HW_SPLIT_BY_HASH)
		json_kv_str(&js, "split_method", hw_split_method_name(t->split_method), true);
	if (t->target_stype == HW_ST_NUMERICAL)
	{
		appendStringInfoString(&js, ", \"target_mean\": ");
		json_num(&js, t->target_mean);
		appendStringInfoString(&js, ", \"target_std\": ");
		json_num(&js, t->target_std);
		json_kv_str(&js, "loss", hw_num_loss_name(hw_task_effective_loss(t)), true);
		if (hw_task_ordinal_levels(t) > 0)
			appendStringInfo(&js, ", \"ordinal_levels\": %d", hw_task_ordinal_levels(t));
		/* integer train labels and the MAE or ordinal loss: integer predictions */
		if (hw_task_rounds_predictions(t))
			appendStringInfoString(&js, ", \"rounds_predictions\": true");
	}
	else if (t->target_stype == HW_ST_CATEGORICAL)
		appendStringInfo(&js, ", \"categories\": %u",
						 t->kind == HW_TASK_QUERY ? t->ncat_own :
						 snap->tables[t->anchor_table].cols[t->target_col].cat_emb_count);
	else if (t->target_stype == HW_ST_BOOLEAN)
	{
		double ones = 0, nn = 0;

		for (uint32 i = 0; i < t->nseeds; i++)
			if (!t->target_null[i])
			{
				ones += t->target[i];
				nn++;
			}
		appendStringInfoString(&js, ", \"true_rate\": ");
		json_num(&js, nn > 0 ? ones / nn : NAN);
	}
	appendStringInfo(&js, ", \"label_history\": %s", t->label_history ? "true" : "false");
	/* when labels become known: only when not the default (older summaries unchanged) */
	if (t->label_time_us)
		json_kv_str(&js, "label_time", opts.horizon ? psprintf("observation time + %s", opts.label_horizon) :
					"query column label_time", true);
	appendStringInfoChar(&js, '}');
	SPI_finish();
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(js.data)));
}

/* -------------------------------------------------------------- rt_drop_task */

PG_FUNCTION_INFO_V1(rt_drop_task);
Datum
rt_drop_task(PG_FUNCTION_ARGS)
{
	char *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char *tname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int32 model_id = hw_pg_model_id(model, false);
	ModelInfo mi;
	HwAsOwner as;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	model_info(model_id, model, &mi);
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
	ModelInfo mi;
	HwAsOwner as;

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	model_info(model_id, model, &mi);
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

/* ------------------------------------------------------------------ loaders */

typedef struct TaskList
{
	HwTask **tasks;
	int      n;
	bool     lenient;           /* tasks that no longer fit the snapshot go to bad[] */
	HwPgUnusableTask *bad;      /* [nbad] malloc'd (lenient only) */
	int      nbad;
} TaskList;

void
hw_pg_unusable_free(HwPgUnusableTask *u, int n)
{
	for (int i = 0; i < n; i++)
	{
		free(u[i].name);
		free(u[i].message);
	}
	free(u);
}

static void
free_task_list(void *arg)
{
	TaskList *l = arg;

	for (int i = 0; i < l->n; i++)
		hw_task_free(l->tasks[i]);
	free(l->tasks);
	l->tasks = NULL;
	l->n = 0;
	hw_pg_unusable_free(l->bad, l->nbad);
	l->bad = NULL;
	l->nbad = 0;
}

/* The task just added to l (its last) no longer fits the snapshot: msg says
 * why.  Strict: ERROR 55000.  Lenient: the task is freed and left out, and
 * (task_id, name, msg) is recorded in l->bad. */
static void
task_unusable(TaskList *l, const char *msg)
{
	HwTask *t = l->tasks[l->n - 1];
	HwPgUnusableTask *nb;

	if (!l->lenient)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("%s", msg),
						errhint("Drop the task with rt_drop_task and create it again.")));
	nb = realloc(l->bad, sizeof(HwPgUnusableTask) * (l->nbad + 1));
	if (nb == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	l->bad = nb;
	nb[l->nbad].task_id = t->task_id;
	nb[l->nbad].name = strdup(t->name);
	nb[l->nbad].message = strdup(msg);
	l->nbad++;
	if (nb[l->nbad - 1].name == NULL || nb[l->nbad - 1].message == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	l->tasks[--l->n] = NULL;
	hw_task_free(t);
}

/* Builds the tasks of rows of the query below into l (l->tasks malloc'd);
 * caller connected to SPI. */
static void
load_rows(TaskList *l, const HwSnapshot *snap, const char *model_name_for_msgs)
{
	uint64 nrows = SPI_processed;
	SPITupleTable *tt = SPI_tuptable;
	TupleDesc td = tt->tupdesc;
	HwError err = {0};

	l->tasks = calloc(nrows ? nrows : 1, sizeof(HwTask *));
	if (l->tasks == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	for (uint64 i = 0; i < nrows; i++)
	{
		HeapTuple tup = tt->vals[i];
		bool isnull;
		char *name = SPI_getvalue(tup, td, 2);
		char *kind = SPI_getvalue(tup, td, 3);
		char *anchor = SPI_getvalue(tup, td, 4);
		char *target = SPI_getvalue(tup, td, 5);
		char *stype = SPI_getvalue(tup, td, 6);
		HwTask *t = hw_task_new(name, strcmp(kind, "query") == 0 ? HW_TASK_QUERY : HW_TASK_CELL, &err);

		if (t == NULL)
			raise_core(&err, "could not load a task");
		l->tasks[l->n++] = t;
		t->task_id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
		t->target_stype = (int8_t) hw_stype_from_name(stype);
		t->target_name = strdup(target);
		t->split_seed = (uint64_t) DatumGetInt64(SPI_getbinval(tup, td, 7, &isnull));
		{
			Datum *rv;
			bool *rn;
			int nr;

			deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, td, 8, &isnull)), FLOAT8OID, 8,
							  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &rv, &rn, &nr);
			for (int k = 0; k < 3 && k < nr; k++)
				t->split_ratio[k] = DatumGetFloat8(rv[k]);
		}
		t->label_history = DatumGetBool(SPI_getbinval(tup, td, 9, &isnull));
		t->history_max = DatumGetInt32(SPI_getbinval(tup, td, 10, &isnull));
		t->target_mean = DatumGetFloat8(SPI_getbinval(tup, td, 11, &isnull));
		t->target_std = DatumGetFloat8(SPI_getbinval(tup, td, 12, &isnull));
		{
			char *loss = SPI_getvalue(tup, td, 18);
			int   nl = loss ? hw_num_loss_from_name(loss) : -1;

			if (nl >= 0)        /* validated at creation; absent = the default */
				t->num_loss = (int8_t) nl;
		}
		int at = snap ? snap_table(snap, anchor) : -1;

		if (snap && at < 0)
		{
			task_unusable(l, psprintf("anchor table \"%s\" of task \"%s\" is no longer part of model \"%s\"",
									  anchor, name, model_name_for_msgs));
			continue;
		}
		t->anchor_table = at;
		if (t->kind == HW_TASK_CELL)
		{
			if (snap == NULL)
				continue;
			int c = snap_column(snap, at, target);

			if (c < 0 || hw_task_build_cell(t, snap, at, c, &err) != HW_OK)
				task_unusable(l, psprintf("target column \"%s\" of task \"%s\" can no longer be predicted: %s",
										  target, name, c < 0 ? "it is not part of the model" : err.msg));
			continue;           /* split options were set above, before the splits */
		}
		/* query task: categories, embeddings, seeds */
		Datum cd = SPI_getbinval(tup, td, 13, &isnull);

		if (!isnull)
		{
			Datum *cv;
			bool *cn;
			int nc;

			deconstruct_array(DatumGetArrayTypeP(cd), TEXTOID, -1, false, TYPALIGN_INT, &cv, &cn, &nc);
			t->ncat_own = (uint32) nc;
			t->cat_values = calloc(nc ? nc : 1, sizeof(char *));
			for (int k = 0; k < nc; k++)
				t->cat_values[k] = strdup(TextDatumGetCString(cv[k]));
		}
		for (int col = 14; col <= 15; col++)
		{
			Datum bd = SPI_getbinval(tup, td, col, &isnull);

			if (isnull)
				continue;
			bytea *b = DatumGetByteaPP(bd);
			size_t len = VARSIZE_ANY_EXHDR(b);
			uint16_t *p = malloc(len ? len : 1);

			if (p == NULL)
				ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
			memcpy(p, VARDATA_ANY(b), len);
			if (col == 14)
				t->cat_emb_own = p;
			else
			{
				t->vcol_emb = p;
				t->d_text = (int32_t) (len / 4);
			}
		}
		Datum sd = SPI_getbinval(tup, td, 16, &isnull);

		if (isnull)
			elog(ERROR, "seeds of task %s are missing", name);
		bytea *sb = DatumGetByteaPP(sd);

		if (hw_task_seeds_deserialize(t, (const uint8_t *) VARDATA_ANY(sb), VARSIZE_ANY_EXHDR(sb), &err) != HW_OK)
			raise_core(&err, "could not load the seeds");
		if (snap)
		{
			uint32_t dropped = 0;

			if (hw_task_resolve_rows(t, snap, &dropped, &err) != HW_OK)
				raise_core(&err, "could not resolve the seeds");
			if (dropped > 0)
				ereport(NOTICE, (errmsg("%u seeds of task \"%s\" were dropped: their anchor rows are no longer in the model",
										dropped, name)));
		}
		CHECK_FOR_INTERRUPTS();
	}
}

static void
load_tasks(int32 model_id, const char *name, const HwSnapshot *snap, TaskList *l)
{
	HwAsOwner as;
	int rc;
	const char *sql =
		"SELECT t.task_id, t.name, t.kind, t.anchor_table, t.target_column, t.target_stype, t.split_seed, "
		"t.split_ratios, t.label_history, t.history_max, t.target_mean, t.target_std, t.categories, "
		"t.cat_emb, t.vcol_emb, s.data, m.name, t.options->>'loss' FROM headwater.task t JOIN headwater.model m USING (model_id) "
		"LEFT JOIN headwater.task_seed s USING (task_id) "
		"WHERE t.model_id = $1 AND ($2::text IS NULL OR t.name = $2) ORDER BY t.task_id";

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	rc = SPI_execute_with_args(sql, 2, (Oid[]) {INT4OID, TEXTOID},
							   (Datum[]) {Int32GetDatum(model_id), name ? CStringGetTextDatum(name) : (Datum) 0},
							   name ? NULL : " n", true, 0);
	hw_restore_user(&as);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the tasks of model %d", model_id);
	if (name && SPI_processed == 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("task \"%s\" does not exist in model %d", name, model_id),
						errhint("rt_tasks(model) lists the model's tasks.")));
	char *mname = SPI_processed > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 17) : "";

	PG_TRY();
	{
		load_rows(l, snap, mname);
	}
	PG_CATCH();
	{
		free_task_list(l);
		PG_RE_THROW();
	}
	PG_END_TRY();
	SPI_finish();
}

HwTask *
hw_pg_task_load(int32 model_id, const char *task_name, const HwSnapshot *snap)
{
	TaskList l = {NULL, 0, false, NULL, 0};
	HwTask *t;

	load_tasks(model_id, task_name, snap, &l);
	t = l.tasks[0];
	free(l.tasks);
	return t;
}

HwTask **
hw_pg_tasks_load_usable(int32 model_id, const HwSnapshot *snap, int *ntasks,
						HwPgUnusableTask **unusable, int *nunusable)
{
	TaskList l = {NULL, 0, true, NULL, 0};

	load_tasks(model_id, NULL, snap, &l);
	*ntasks = l.n;
	*unusable = l.bad;
	*nunusable = l.nbad;
	return l.tasks;
}

HwTask **
hw_pg_tasks_load_all(int32 model_id, const HwSnapshot *snap, MemoryContext cxt, int *ntasks)
{
	TaskList *l = cxt ? MemoryContextAllocZero(cxt, sizeof(TaskList)) : palloc0(sizeof(TaskList));

	load_tasks(model_id, NULL, snap, l);
	if (cxt)
	{
		MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

		cb->func = free_task_list;
		cb->arg = l;
		MemoryContextRegisterResetCallback(cxt, cb);
	}
	*ntasks = l->n;
	return l->tasks;
}
