/*
 * task_query.c: query tasks: the caller's query run as the caller, its
 * result checked and materialised into the task's seeds.  A task in
 * general: src/core/task.h; SQL tables: sql/parts/20_tasks.sql.
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
#include "task_priv.h"

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
void
hw_pgtask_build_query(HwTask *t, const HwPgTaskModel *mi, const HwSnapshot *snap, const char *query,
				 char **anchor_io, const char *target_col, const char *stype_arg,
				 const char *obs_arg, const HwPgTaskOptions *opts, char **obs_source)
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
	int at = hw_pgtask_snap_table(snap, anchor);

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
		if (!hw_pgtask_is_time_type(TupleDescAttr(td, ltatt)->atttypid))
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

	if (obsatt >= 0 && !hw_pgtask_is_time_type(obst))
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
		st = tgtt == BOOLOID ? HW_ST_BOOLEAN : hw_pgtask_is_numeric_type(tgtt) ? HW_ST_NUMERICAL :
			hw_pgtask_is_time_type(tgtt) ? HW_ST_TIMESTAMP : HW_ST_CATEGORICAL;
	bool fits = st == HW_ST_CATEGORICAL ||
		(st == HW_ST_NUMERICAL && (hw_pgtask_is_numeric_type(tgtt) || tgtt == BOOLOID)) ||
		(st == HW_ST_BOOLEAN && (tgtt == BOOLOID || hw_pgtask_is_numeric_type(tgtt))) ||
		(st == HW_ST_TIMESTAMP && hw_pgtask_is_time_type(tgtt));

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
		hw_pg_raise_core_error(&err, "could not materialise the seeds");
	for (size_t i = 0; i < n; i++)
	{
		t->anchor_row[i] = rows[i];
		t->anchor_key[i] = keys[i];
		t->obs_time_us[i] = obs[i];
		t->target_null[i] = tn[i];
		t->target[i] = (remap && !tn[i]) ? (double) remap[(uint32) tv[i]] : tv[i];
	}
	hw_pgtask_apply_options(t, opts);
	if (lt && hw_task_set_label_times(t, lt, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not store the label times");
	if (sp)
	{
		t->split_method = HW_SPLIT_BY_COLUMN;
		memcpy(t->split, sp, n);
	}
	if (hw_task_assign_splits(t, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not assign splits");
	hw_task_compute_stats(t);

	/* embeddings of the virtual columns and the categories */
	t->d_text = mi->d_text;
	t->vcol_emb = calloc((size_t) 2 * mi->d_text, sizeof(uint16));
	if (t->vcol_emb == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	{
		char *names[2] = {psprintf("observation time of %s", t->name), psprintf("%s of %s", tgtname, t->name)};

		hw_pgtask_embed_strings(mi, names, 2, t->vcol_emb);
	}
	if (st == HW_ST_CATEGORICAL && ncat > 0)
	{
		char **s = palloc(sizeof(char *) * ncat);

		for (uint32 i = 0; i < ncat; i++)
			s[i] = psprintf("%s is %s", tgtname, t->cat_values[i]);
		t->cat_emb_own = calloc((size_t) ncat * mi->d_text, sizeof(uint16));
		if (t->cat_emb_own == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		hw_pgtask_embed_strings(mi, s, (int) ncat, t->cat_emb_own);
	}
	*obs_source = obsatt >= 0 ? psprintf("query column %s", NameStr(TupleDescAttr(td, obsatt)->attname)) :
		snap->tables[at].time_col >= 0 ?
		psprintf("time column %s of %s", snap->tables[at].cols[snap->tables[at].time_col].name, anchor) :
		pstrdup("none");
}
