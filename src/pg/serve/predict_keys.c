/*
 * predict_keys.c: the arguments of the prediction functions: task, row ids
 * (primary keys), observation time.
 *
 * An anchor row is named by its primary key.  A single-column key is passed
 * as its value, a composite key as a ROW(...) or an array of the key columns
 * in primary key order, e.g. rt_predict('t', ROW(film_id, actor_id)).  Each
 * value may be of any type: its text is read as the key column's type and
 * written back, then compared with the snapshot's key text (so '7'::text
 * and 7::bigint name the int key 7).  Under row-level security a row the
 * caller cannot see is reported exactly like a missing one.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/json.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/datetime.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "pg/serve/hw_caller_query.h"
#include "pg/base/hw_pg.h"
#include "pg/serve/hw_predict.h"
#include "pg/serve/predict_priv.h"
#include "pg/serve/hw_serving.h"
/* "col1, col2" or, with types, "col1 integer, col2 text". */
static char *
pk_columns_text(const HwServingKey *pk, bool with_types)
{
	StringInfoData b;

	initStringInfo(&b);
	for (int k = 0; k < pk->npk; k++)
	{
		if (k)
			appendStringInfoString(&b, ", ");
		appendStringInfoString(&b, pk->cols[k]);
		if (with_types && OidIsValid(pk->typid[k]) &&
			SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(pk->typid[k])))
			appendStringInfo(&b, " %s", format_type_with_typemod(pk->typid[k], pk->typmod[k]));
	}
	return b.data;
}

/* How to name a row of tab: the hint of key errors. */
char *
hw_predict_pk_hint(const HwTable *tab, const HwServingKey *pk)
{
	char *cols = pk_columns_text(pk, false);

	if (pk->npk == 0)
		return psprintf("Pass the primary key of a row of \"%s\" (ROW(...) or ARRAY[...] for a composite key).",
						tab->name);
	if (pk->npk == 1)
		return psprintf("Pass the primary key value of a row of \"%s\" (%s).", tab->name, pk_columns_text(pk, true));
	return psprintf("Pass ROW(%s) or ARRAY[%s] naming a row of \"%s\", in primary key order (%s).",
					cols, cols, tab->name, pk_columns_text(pk, true));
}

/* Text of one key column's value as the snapshot has it: the value's text
 * read as the key column's type and written back (so 7::bigint or '007'
 * name the int key 7); ERROR naming the task when it is not a valid value
 * of that type. */
static char *
key_part_text(Datum v, Oid type, const HwTable *tab, const HwServingKey *pk, int k,
			  const char *what, const char *task)
{
	Oid     out;
	bool    varlena;
	char   *txt;
	Oid     pktype = k < pk->npk ? pk->typid[k] : InvalidOid;
	MemoryContext cxt = CurrentMemoryContext;
	char   *volatile result = NULL;

	getTypeOutputInfo(type, &out, &varlena);
	txt = OidOutputFunctionCall(out, v);
	/* the key column is gone from the source: compare the text as given */
	if (!OidIsValid(pktype) || !SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(pktype)))
		return txt;
	PG_TRY();
	{
		Oid     in, ioparam, pkout;
		bool    pkvarlena;
		Datum   d;

		getTypeInputInfo(pktype, &in, &ioparam);
		d = OidInputFunctionCall(in, txt, ioparam, pk->typmod[k]);
		getTypeOutputInfo(pktype, &pkout, &pkvarlena);
		result = OidOutputFunctionCall(pkout, d);
	}
	PG_CATCH();
	{
		ErrorData *ed;

		MemoryContextSwitchTo(cxt);
		ed = CopyErrorData();
		/* only a value the type rejects becomes our error; anything else
		 * (a cancel, out of memory) goes on as it was */
		if (ERRCODE_TO_CATEGORY(ed->sqlerrcode) != ERRCODE_DATA_EXCEPTION)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ed->sqlerrcode),
				 errmsg("%s of task \"%s\" names no row of \"%s\": \"%.100s\" is not a valid %s for key column \"%s\"",
						what, task, tab->name, txt, format_type_with_typemod(pktype, pk->typmod[k]), pk->cols[k]),
				 errdetail("%s", ed->message),
				 errhint("%s", hw_predict_pk_hint(tab, pk))));
	}
	PG_END_TRY();
	return result;
}

/*
 * Canonical key text (snapshot.h: the key columns' text outputs joined by
 * 0x1f) of a row id of task t's anchor table: a value for a one-column key,
 * ROW(...) or an array for a composite key.  `what` names the argument in
 * messages ("row_id", "row_ids element 3"); value is not NULL.  ERROR (with
 * the key columns) for the wrong number of values, a NULL key column or a
 * value that is not one of the key column's type.  *display gets a readable
 * form for messages.
 */
void
hw_predict_key_text(HwServing *s, int t, const char *task, const char *what, Datum value, Oid typid,
		 StringInfo buf, char **display)
{
	const HwServingKey *pk = &s->pk[s->tasks[t]->anchor_table];
	Oid     elemtype = get_element_type(typid);
	char    typtype = get_typtype(typid);
	bool    itself = pk->npk == 1 && typid == pk->typid[0];  /* e.g. an array-typed key column */
	Datum  *parts;
	Oid    *types;
	bool   *nulls;
	int     n;

	if (!OidIsValid(typid))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_DATATYPE),
				 errmsg("could not determine the type of %s of task \"%s\"", what, task),
				 errhint("Cast the key to its column's type, e.g. rt_predict('%s', 42::int).", task)));
	if (!itself && OidIsValid(elemtype))
	{
		ArrayType *arr = DatumGetArrayTypeP(value);
		int16   len;
		bool    byval;
		char    align;

		get_typlenbyvalalign(elemtype, &len, &byval, &align);
		deconstruct_array(arr, elemtype, len, byval, align, &parts, &nulls, &n);
		types = palloc(sizeof(Oid) * Max(1, n));
		for (int i = 0; i < n; i++)
			types[i] = elemtype;
	}
	else if (!itself && (typtype == TYPTYPE_COMPOSITE || typid == RECORDOID))
	{
		HeapTupleHeader th = DatumGetHeapTupleHeader(value);
		TupleDesc td = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(th), HeapTupleHeaderGetTypMod(th));
		HeapTupleData tup;

		tup.t_len = HeapTupleHeaderGetDatumLength(th);
		tup.t_data = th;
		ItemPointerSetInvalid(&tup.t_self);
		tup.t_tableOid = InvalidOid;
		parts = palloc(sizeof(Datum) * Max(1, td->natts));
		types = palloc(sizeof(Oid) * Max(1, td->natts));
		nulls = palloc(sizeof(bool) * Max(1, td->natts));
		n = 0;
		for (int i = 0; i < td->natts; i++)
		{
			if (TupleDescAttr(td, i)->attisdropped)
				continue;
			parts[n] = heap_getattr(&tup, i + 1, td, &nulls[n]);
			types[n] = TupleDescAttr(td, i)->atttypid;
			n++;
		}
		ReleaseTupleDesc(td);
	}
	else
	{
		parts = &value;
		types = &typid;
		nulls = palloc0(sizeof(bool));
		n = 1;
	}
	hw_predict_key_text_parts(s, t, task, what, parts, types, nulls, n, buf, display);
}

/* hw_predict_key_text of a key given as its n column values (parts[n] of types[n]). */
void
hw_predict_key_text_parts(HwServing *s, int t, const char *task, const char *what, Datum *parts, Oid *types,
			   bool *nulls, int n, StringInfo buf, char **display)
{
	const HwTable *tab = &s->snap->tables[s->tasks[t]->anchor_table];
	const HwServingKey *pk = &s->pk[s->tasks[t]->anchor_table];
	StringInfoData disp;

	/* (npk 0: the key columns are not recorded; the values are compared as
	 * given) */
	if (pk->npk > 0 && n != pk->npk)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of task \"%s\" has %d value%s, but the primary key of \"%s\" has %d column%s (%s)",
						what, task, n, n == 1 ? "" : "s", tab->name, pk->npk, pk->npk == 1 ? "" : "s",
						pk_columns_text(pk, false)),
				 errhint("%s", hw_predict_pk_hint(tab, pk))));
	initStringInfo(&disp);
	for (int k = 0; k < n; k++)
	{
		char *txt;

		if (nulls[k])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key column %s of %s of task \"%s\" is NULL",
							pk->npk ? psprintf("\"%s\"", pk->cols[k]) : psprintf("%d", k + 1), what, task),
					 errhint("Primary key columns are never NULL. %s", hw_predict_pk_hint(tab, pk))));
		txt = key_part_text(parts[k], types[k], tab, pk, k, what, task);
		if (k)
		{
			appendStringInfoChar(buf, '\x1f');
			appendStringInfoString(&disp, ", ");
		}
		appendStringInfoString(buf, txt);
		appendStringInfoString(&disp, txt);
	}
	*display = n > 1 ? psprintf("(%s)", disp.data) : disp.data;
}

/* ERROR when the anchor table of task t has no primary key (rows cannot be named). */
void
hw_predict_require_anchor_key(HwServing *s, int t)
{
	const HwTable *tab = &s->snap->tables[s->tasks[t]->anchor_table];

	if (tab->key_hash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" has no primary key, so its rows cannot be named for prediction", tab->name),
				 errhint("Add a primary key to the table and run rt_refresh.")));
}

/* The one error for a key that names no row the caller may predict: the
 * same (SQLSTATE, message, hint) whether no row has the key or row-level
 * security hides it from the caller, so that it tells nothing of hidden rows. */
pg_attribute_noreturn() static void
anchor_key_missing(const HwTable *tab, const char *display)
{
	ereport(ERROR,
			(errcode(ERRCODE_NO_DATA_FOUND),
			 errmsg("no row of \"%s\" has key %s", tab->name, display),
			 errhint("The model sees the data as of its last rt_create_model/rt_refresh; "
					 "run rt_refresh(model) to include newer rows.")));
}

/* Global row of the anchor whose canonical key text is key, or -1. */
int64
hw_predict_anchor_row_lookup(HwServing *s, int t, const char *key)
{
	return snapshot_find_row(s->snap, s->tasks[t]->anchor_table, hw_hash_key_text(key, strlen(key)));
}

/*
 * The rows[n] looked up for keys[n] (canonical key texts; display[n] their
 * readable forms) must each exist and, when row-level security is in force
 * on the anchor table for the caller, be visible to it (predict_rls.c: one
 * query as the caller for all n; none when RLS is not in force).  ERROR
 * (anchor_key_missing) naming the first key in order that fails either way,
 * so that the answer is the same whichever way a key fails.
 */
void
hw_predict_anchor_rows_require(HwServing *s, int t, char *const *keys, char *const *display, const int64 *rows, int n)
{
	const HwTable *tab = &s->snap->tables[s->tasks[t]->anchor_table];
	Oid     rls = hw_task_anchor_rls(s->tasks[t]->task_id);
	bool   *visible = NULL;

	if (OidIsValid(rls))
	{
		visible = palloc(sizeof(bool) * Max(1, n));
		hw_predict_keys_visible(rls, &s->pk[s->tasks[t]->anchor_table], keys, n, visible);
	}
	for (int i = 0; i < n; i++)
		if (rows[i] < 0 || (visible && !visible[i]))
			anchor_key_missing(tab, display[i]);
}

/* Global row of the anchor named by key, or ERROR naming the table. */
uint32
hw_predict_anchor_row_of(HwServing *s, int t, const char *task, const char *what, Datum key, Oid keytype)
{
	StringInfoData buf;
	char   *display;
	int64   row;

	hw_predict_require_anchor_key(s, t);
	initStringInfo(&buf);
	hw_predict_key_text(s, t, task, what, key, keytype, &buf, &display);
	row = hw_predict_anchor_row_lookup(s, t, buf.data);
	hw_predict_anchor_rows_require(s, t, &buf.data, &display, &row, 1);
	return (uint32) row;
}

/* The task argument (0), not NULL. */
char *
hw_predict_task_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("task must not be NULL"),
				 errhint("Pass the name given to rt_create_task.")));
	return text_to_cstring(PG_GETARG_TEXT_PP(0));
}

/* An observation time as the snapshot counts it (µs since 1970), or ERROR
 * (22008) outside 0001-01-01 .. 9999-12-31 (UTC), the calendar range the
 * time encoding is meant for; beyond it a time is a mistake, not a cutoff. */
int64_t
hw_predict_obs_time_value(TimestampTz ts, const char *task)
{
	const TimestampTz lo = (TimestampTz) (date2j(1, 1, 1) - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY;
	const TimestampTz hi = (TimestampTz) (date2j(10000, 1, 1) - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY;

	if (TIMESTAMP_NOT_FINITE(ts) || ts < lo || ts >= hi)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("obs_time %s for task \"%s\" is out of range", timestamptz_to_str(ts), task),
				 errhint("Pass a time between 0001-01-01 and 9999-12-31, or NULL (the default) to let the "
						 "model see its whole snapshot.")));
	/* PostgreSQL counts µs from 2000-01-01; the snapshot from 1970-01-01 */
	return (int64_t) ts + (int64_t) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
}

/* obs_time: the model may see what happened up to here. */
int64_t
hw_predict_obs_time_arg(FunctionCallInfo fcinfo, int argno, const char *task)
{
	/* No observation time: everything in the snapshot is visible (the
	 * snapshot holds the data as of the model's last refresh, all of it in
	 * the past), and predictions do not drift with the clock. */
	if (PG_ARGISNULL(argno))
		return HW_NO_CUTOFF;
	return hw_predict_obs_time_value(PG_GETARG_TIMESTAMPTZ(argno), task);
}

/* For rt_debug_predict_batch (predict_context.c): the anchor row named by
 * key, exactly as rt_predict reads it. */
uint32
hw_predict_anchor_row(HwServing *s, int t, const char *task, Datum key, Oid keytype)
{
	return hw_predict_anchor_row_of(s, t, task, "row_id", key, keytype);
}
