/*
 * predict.c: rt_predict, rt_predict_label, rt_predict_proba, rt_predict_batch.
 *
 * An anchor row is named by its primary key.  A single-column key is passed
 * as its value, a composite key as a ROW(...) or an array of the key columns
 * in primary key order, e.g. rt_predict('t', ROW(film_id, actor_id)).  Each
 * value may be of any type: its text is read as the key column's type and
 * written back, then compared with the snapshot's key text (so '7'::text
 * and 7::bigint name the int key 7).  The sequence is sampled around the
 * row with everything up to the observation time visible (default: no
 * cutoff), the target masked, and the model of the best checkpoint (cached
 * per backend, serving.c) reads it.
 *
 * Bad arguments are errors with a SQLSTATE, the task named and a hint, never
 * a crash (the functions are not STRICT): a NULL task, key, key column or
 * batch element (22004), a key of the wrong arity (22023, naming the key
 * columns), a value the key column's type rejects (its own SQLSTATE, e.g.
 * 22P02), obs_time outside 0001-01-01 .. 9999-12-31 or infinite (22008).
 * rt_predict, _label and _proba take optional context labels (argument 4),
 * which join the row's label history: predict_context.c.
 *
 * Output by target type:
 *   numerical    rt_predict -> the value (de-normalised)
 *   boolean      rt_predict -> P(true)
 *   timestamp    rt_predict -> epoch seconds; rt_predict_label -> timestamptz text
 *   categorical  rt_predict_label -> the most likely label;
 *                rt_predict -> its probability
 *   any          rt_predict_proba -> jsonb {"p_null": .., "value"/"label"/"probs": ..}
 *   NULL when the null head says the value is NULL (p_null > 0.5).
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

#include "hw_caller_query.h"
#include "hw_pg.h"
#include "hw_predict.h"
#include "hw_serving.h"

/* One prediction, decoded into the task's units. */
typedef struct Decoded
{
	bool    is_null;
	double  p_null;
	double  value;       /* numeric value / P(true) / epoch seconds / prob of label */
	double  unrounded;   /* numerical: the value before rounding (hw_task_decode_numerical) */
	int32   label;       /* categorical: index in the block */
	float  *probs;       /* categorical [K] */
	int32   K;
	int32   ord_levels;  /* numerical, ordinal loss: P(level > k) for k < ord_levels */
	float   ord_p[HW_ORD_LEVELS];
} Decoded;

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
static char *
pk_hint(const HwTable *tab, const HwServingKey *pk)
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
				 errhint("%s", pk_hint(tab, pk))));
	}
	PG_END_TRY();
	return result;
}

static void key_text_parts(HwServing *s, int t, const char *task, const char *what, Datum *parts,
						   Oid *types, bool *nulls, int n, StringInfo buf, char **display);

/*
 * Canonical key text (snapshot.h: the key columns' text outputs joined by
 * 0x1f) of a row id of task t's anchor table: a value for a one-column key,
 * ROW(...) or an array for a composite key.  `what` names the argument in
 * messages ("row_id", "row_ids element 3"); value is not NULL.  ERROR (with
 * the key columns) for the wrong number of values, a NULL key column or a
 * value that is not one of the key column's type.  *display gets a readable
 * form for messages.
 */
static void
key_text(HwServing *s, int t, const char *task, const char *what, Datum value, Oid typid,
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
	key_text_parts(s, t, task, what, parts, types, nulls, n, buf, display);
}

/* key_text of a key given as its n column values (parts[n] of types[n]). */
static void
key_text_parts(HwServing *s, int t, const char *task, const char *what, Datum *parts, Oid *types,
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
				 errhint("%s", pk_hint(tab, pk))));
	initStringInfo(&disp);
	for (int k = 0; k < n; k++)
	{
		char *txt;

		if (nulls[k])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key column %s of %s of task \"%s\" is NULL",
							pk->npk ? psprintf("\"%s\"", pk->cols[k]) : psprintf("%d", k + 1), what, task),
					 errhint("Primary key columns are never NULL. %s", pk_hint(tab, pk))));
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
static void
require_anchor_key(HwServing *s, int t)
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
static int64
anchor_row_lookup(HwServing *s, int t, const char *key)
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
static void
anchor_rows_require(HwServing *s, int t, char *const *keys, char *const *display, const int64 *rows, int n)
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
static uint32
anchor_row_of(HwServing *s, int t, const char *task, const char *what, Datum key, Oid keytype)
{
	StringInfoData buf;
	char   *display;
	int64   row;

	require_anchor_key(s, t);
	initStringInfo(&buf);
	key_text(s, t, task, what, key, keytype, &buf, &display);
	row = anchor_row_lookup(s, t, buf.data);
	anchor_rows_require(s, t, &buf.data, &display, &row, 1);
	return (uint32) row;
}

/* The task argument (0), not NULL. */
static char *
task_arg(FunctionCallInfo fcinfo)
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
static int64_t
obs_time_value(TimestampTz ts, const char *task)
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
static int64_t
obs_time_arg(FunctionCallInfo fcinfo, int argno, const char *task)
{
	/* No observation time: everything in the snapshot is visible (the
	 * snapshot holds the data as of the model's last refresh, all of it in
	 * the past), and predictions do not drift with the clock. */
	if (PG_ARGISNULL(argno))
		return HW_NO_CUTOFF;
	return obs_time_value(PG_GETARG_TIMESTAMPTZ(argno), task);
}

/* Runs the model on n anchors; out[n].  ctx (nctx labels, may be NULL):
 * context labels every row's label history takes in (predict_context.c). */
static void
predict_rows(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n, Decoded *out,
			 const HwContextLabel *ctx, uint32_t nctx)
{
	HwError err = {0};
	const HwTask *task = s->tasks[t];
	int     maxb = s->scfg.batch_size;
	HwServingOutput *o = palloc(sizeof(HwServingOutput) * maxb);

	/* a single row runs on one thread (many sessions serve at once); a
	 * multi-batch request uses the whole OpenMP team for its duration */
	bool    wide = n > maxb;
	if (wide)
		hw_serving_set_wide(s, true);
	PG_TRY();
	{
	for (int off = 0; off < n; off += maxb)
	{
		int     nb = Min(maxb, n - off);
		HwBatch *b = NULL;

		if (hw_predict_build(s, t, rows + off, obs + off, nb, ctx, nctx, &b, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "sampling the rows to predict");
		hw_serving_eval_batch(s, b, o);
		for (int i = 0; i < nb; i++)
		{
			Decoded *d = &out[off + i];

			d->p_null = o[i].p_null;
			d->is_null = d->p_null > 0.5;
			d->value = o[i].value;
			d->label = o[i].label;
			d->probs = o[i].probs;
			d->K = o[i].K;
			d->ord_levels = o[i].ord_levels;
			memcpy(d->ord_p, o[i].ord_p, sizeof(d->ord_p));
			if (task->target_stype == HW_ST_NUMERICAL)
				d->value = hw_task_decode_numerical(task, o[i].value, &d->unrounded);
			else if (task->target_stype == HW_ST_TIMESTAMP)
				d->value = (o[i].value * s->snap->ts_std_us + s->snap->ts_mean_us) / 1e6;
		}
		CHECK_FOR_INTERRUPTS();
	}
	}
	PG_FINALLY();
	{
		if (wide)
			hw_serving_set_wide(s, false);
	}
	PG_END_TRY();
}

static const char *
category_label(HwServing *s, int t, int32 k)
{
	return hw_serving_category_label(s, t, k);
}

/* The optional checkpoint argument (argument argno): -1 (the task's best)
 * when absent or NULL, else a checkpoint id (hw_serving_get checks that it
 * is one of the task's model's). */
static int64
checkpoint_arg(FunctionCallInfo fcinfo, int argno, const char *task_ref)
{
	int64 c;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return -1;
	c = PG_GETARG_INT64(argno);
	if (c < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint %lld for task \"%s\" is not a checkpoint id", (long long) c, task_ref),
				 errhint("Checkpoint ids are positive (headwater.checkpoint); NULL predicts with the task's best checkpoint.")));
	return c;
}

static Decoded
predict_one(FunctionCallInfo fcinfo, HwServing **s_out, int *t_out)
{
	char   *task_ref = task_arg(fcinfo);
	int     t;
	Decoded d;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("row_id of task \"%s\" is NULL", task_ref),
				 errhint("Pass the primary key of the row to predict (ROW(...) or ARRAY[...] for a composite key); "
						 "a NULL key names no row.")));
	int64_t obs = obs_time_arg(fcinfo, 2, task_ref);
	HwServing *s = hw_serving_get(task_ref, checkpoint_arg(fcinfo, 3, task_ref), hw_weights_arg(fcinfo, 5, task_ref), &t);
	uint32  row = anchor_row_of(s, t, task_ref, "row_id", PG_GETARG_DATUM(1),
								get_fn_expr_argtype(fcinfo->flinfo, 1));

	/* optional context labels (argument 4) */
	HwContextLabel *ctx = NULL;
	uint32  nctx = 0;

	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
		hw_predict_context_arg(PG_GETARG_JSONB_P(4), s->tasks[t], task_ref, obs, &ctx, &nctx);
	memset(&d, 0, sizeof(d));
	predict_rows(s, t, &row, &obs, 1, &d, ctx, nctx);
	*s_out = s;
	*t_out = t;
	return d;
}

PG_FUNCTION_INFO_V1(rt_predict);
Datum
rt_predict(PG_FUNCTION_ARGS)
{
	HwServing *s;
	int     t;
	Decoded d = predict_one(fcinfo, &s, &t);

	if (d.is_null)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(d.value);
}

static char *
label_text(HwServing *s, int t, const Decoded *d)
{
	switch (s->tasks[t]->target_stype)
	{
		case HW_ST_CATEGORICAL:
			return pstrdup(category_label(s, t, d->label));
		case HW_ST_BOOLEAN:
			return pstrdup(d->value >= 0.5 ? "true" : "false");
		case HW_ST_TIMESTAMP:
		{
			double us = d->value * 1e6 - (double) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;

			/* a wild prediction must not overflow the conversion */
			if (isnan(us))
				return pstrdup("NaN");
			if (!(fabs(us) < 9.0e18))
				return pstrdup(us > 0 ? "infinity" : "-infinity");
			return pstrdup(timestamptz_to_str((TimestampTz) us));
		}
		default:
			return psprintf("%.6g", d->value);
	}
}

PG_FUNCTION_INFO_V1(rt_predict_label);
Datum
rt_predict_label(PG_FUNCTION_ARGS)
{
	HwServing *s;
	int     t;
	Decoded d = predict_one(fcinfo, &s, &t);

	if (d.is_null)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(label_text(s, t, &d)));
}

/* A number as JSON: NaN and infinities (a diverged model) become null. */
static void
json_number(StringInfo j, const char *fmt, double v)
{
	if (isfinite(v))
		appendStringInfo(j, fmt, v);
	else
		appendStringInfoString(j, "null");
}

static char *
proba_json(HwServing *s, int t, const Decoded *d)
{
	StringInfoData j;

	initStringInfo(&j);
	appendStringInfoString(&j, "{\"p_null\": ");
	json_number(&j, "%.6g", d->p_null);
	appendStringInfoString(&j, ", \"label\": ");
	escape_json(&j, label_text(s, t, d));
	if (s->tasks[t]->target_stype == HW_ST_CATEGORICAL)
	{
		appendStringInfoString(&j, ", \"probs\": {");
		for (int k = 0; k < d->K; k++)
		{
			if (k)
				appendStringInfoString(&j, ", ");
			escape_json(&j, category_label(s, t, k));
			appendStringInfoString(&j, ": ");
			json_number(&j, "%.6g", d->probs[k]);
		}
		appendStringInfoChar(&j, '}');
	}
	else
	{
		appendStringInfoString(&j, ", \"value\": ");
		json_number(&j, "%.9g", d->value);
		if (hw_task_rounds_predictions(s->tasks[t]))
		{
			appendStringInfoString(&j, ", \"unrounded\": ");
			json_number(&j, "%.9g", d->unrounded);
		}
		/* the ordinal head's distribution: P(label >= v) for each value v
		 * above the smallest train label */
		if (d->ord_levels > 0)
		{
			appendStringInfoString(&j, ", \"p_at_least\": {");
			for (int k = 0; k < d->ord_levels; k++)
			{
				appendStringInfo(&j, "%s\"%.0f\": ", k ? ", " : "", s->tasks[t]->target_min + k + 1);
				json_number(&j, "%.6g", d->ord_p[k]);
			}
			appendStringInfoChar(&j, '}');
		}
	}
	appendStringInfoChar(&j, '}');
	return j.data;
}

PG_FUNCTION_INFO_V1(rt_predict_proba);
Datum
rt_predict_proba(PG_FUNCTION_ARGS)
{
	HwServing *s;
	int     t;
	Decoded d = predict_one(fcinfo, &s, &t);

	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(proba_json(s, t, &d))));
}

PG_FUNCTION_INFO_V1(rt_predict_batch);
Datum
rt_predict_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char   *task_ref = task_arg(fcinfo);
	ArrayType *ids;
	Oid     elemtype;
	int     t;
	Datum  *elems;
	bool   *nulls;
	int     n;
	int16   len;
	bool    byval;
	char    align;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("row_ids of task \"%s\" is NULL", task_ref),
				 errhint("Pass an array of primary keys, e.g. ARRAY[1, 2, 3], or ARRAY[ROW(1, 2), ROW(3, 4)] "
						 "for a composite key.")));
	ids = PG_GETARG_ARRAYTYPE_P(1);
	elemtype = ARR_ELEMTYPE(ids);
	int64_t   obs_all = obs_time_arg(fcinfo, 2, task_ref);

	get_typlenbyvalalign(elemtype, &len, &byval, &align);
	deconstruct_array(ids, elemtype, len, byval, align, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
							errmsg("row_ids element %d of task \"%s\" is NULL", i + 1, task_ref),
							errhint("Remove NULL ids from the array; a NULL key names no row.")));

	int64     ckpt = checkpoint_arg(fcinfo, 3, task_ref);
	HwWeightsChoice weights = hw_weights_arg(fcinfo, 4, task_ref);

	InitMaterializedSRF(fcinfo, 0);
	HwServing *s = hw_serving_get(task_ref, ckpt, weights, &t);

	uint32_t *rows = palloc(sizeof(uint32_t) * Max(1, n));
	int64_t  *obs = palloc(sizeof(int64_t) * Max(1, n));
	int64    *found = palloc(sizeof(int64) * Max(1, n));
	char    **keys = palloc(sizeof(char *) * Max(1, n));
	char    **display = palloc(sizeof(char *) * Max(1, n));

	require_anchor_key(s, t);
	for (int i = 0; i < n; i++)
	{
		char what[48];
		StringInfoData buf;

		snprintf(what, sizeof(what), "row_ids element %d", i + 1);
		initStringInfo(&buf);
		key_text(s, t, task_ref, what, elems[i], elemtype, &buf, &display[i]);
		keys[i] = buf.data;
		found[i] = anchor_row_lookup(s, t, keys[i]);
		obs[i] = obs_all;
		CHECK_FOR_INTERRUPTS();
	}
	/* all keys at once: one visibility query under row-level security */
	anchor_rows_require(s, t, keys, display, found, n);
	for (int i = 0; i < n; i++)
		rows[i] = (uint32) found[i];
	Decoded *d = palloc0(sizeof(Decoded) * Max(1, n));
	if (n > 0)
		predict_rows(s, t, rows, obs, n, d, NULL, 0);

	Oid     out;
	bool    varlena;
	getTypeOutputInfo(elemtype, &out, &varlena);
	for (int i = 0; i < n; i++)
	{
		Datum   v[5];
		bool    vn[5] = {false, d[i].is_null, d[i].is_null, false, false};

		v[0] = CStringGetTextDatum(OidOutputFunctionCall(out, elems[i]));
		v[1] = Float8GetDatum(d[i].value);
		v[2] = CStringGetTextDatum(label_text(s, t, &d[i]));
		v[3] = Float8GetDatum(d[i].p_null);
		v[4] = DirectFunctionCall1(jsonb_in, CStringGetDatum(proba_json(s, t, &d[i])));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, vn);
	}
	return (Datum) 0;
}

/* ---------------------------------------------------------------------------
 * Whole tables: rt_predict_table(task, query) and rt_predict_into(task,
 * query, target_table).  The query (the caller's text, run with SPI as the
 * caller, never edited) returns one row per prediction: the key columns of
 * the task's anchor table in primary key order (or one ROW(...)/array
 * column, as for rt_predict), plus optionally a timestamptz column named
 * obs_time (NULL or absent: the whole snapshot).  Rows are fetched,
 * predicted and handed on in chunks of batch_rows.
 * ------------------------------------------------------------------------- */

/* One chunk of predictions (chunk memory). */
typedef struct PredChunk
{
	int          n;
	char       **row_id;     /* [n] the key as text (rt_predict_batch's row_id) */
	TimestampTz *obs;        /* [n] */
	bool        *obs_null;   /* [n] */
	Decoded     *d;          /* [n] */
} PredChunk;

typedef void (*PredChunkFn) (HwServing *s, int t, const PredChunk *c, void *arg);

/* Runs the caller's query (connected to SPI by the caller) in chunks of
 * batch_rows, predicts each chunk and hands it to fn; returns the number of
 * rows.  ERROR for a query that is not one SELECT, has no key column, an
 * obs_time that is not timestamptz, a NULL or unknown key. */
static int64
predict_query(HwServing *s, int t, const char *task_ref, const char *query, const char *fn_name,
			  int batch_rows, PredChunkFn fn, void *arg)
{
	MemoryContext chunk_cxt = AllocSetContextCreate(CurrentMemoryContext, "headwater predict chunk",
													ALLOCSET_DEFAULT_SIZES);
	Portal      portal;
	TupleDesc   td;
	int         obs_col = -1, nkey = 0;
	int        *key_cols;
	int64       total = 0;

	require_anchor_key(s, t);
	/* one plain SELECT, else an error before any of it runs */
	portal = hw_caller_select_open(query, fn_name, task_ref);
	td = portal->tupDesc;
	key_cols = palloc(sizeof(int) * Max(1, td->natts));
	for (int i = 0; i < td->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(td, i);

		if (att->attisdropped)
			continue;
		if (strcmp(NameStr(att->attname), "obs_time") == 0 && obs_col < 0)
		{
			if (att->atttypid != TIMESTAMPTZOID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column obs_time of the query of task \"%s\" is %s, not timestamp with time zone",
								task_ref, format_type_be(att->atttypid)),
						 errhint("Cast it in the query: ... AS obs_time becomes ...::timestamptz AS obs_time.")));
			obs_col = i;
			continue;
		}
		key_cols[nkey++] = i;
	}
	if (nkey == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of task \"%s\" returns no key column", task_ref),
				 errhint("%s", pk_hint(&s->snap->tables[s->tasks[t]->anchor_table], &s->pk[s->tasks[t]->anchor_table]))));

	for (;;)
	{
		SPITupleTable *tt;
		MemoryContext old;
		PredChunk   c;
		uint32_t   *rows;
		int64      *found;       /* [n] snapshot rows of the keys, -1 when missing */
		char      **keys;        /* [n] canonical key texts */
		int64_t    *obs_us;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, batch_rows);
		if (SPI_processed == 0)
			break;
		tt = SPI_tuptable;
		old = MemoryContextSwitchTo(chunk_cxt);
		c.n = (int) SPI_processed;
		c.row_id = palloc(sizeof(char *) * c.n);
		c.obs = palloc(sizeof(TimestampTz) * c.n);
		c.obs_null = palloc(sizeof(bool) * c.n);
		c.d = palloc0(sizeof(Decoded) * c.n);
		rows = palloc(sizeof(uint32_t) * c.n);
		found = palloc(sizeof(int64) * c.n);
		keys = palloc(sizeof(char *) * c.n);
		obs_us = palloc(sizeof(int64_t) * c.n);
		for (int i = 0; i < c.n; i++)
		{
			Datum  *parts = palloc(sizeof(Datum) * nkey);
			Oid    *types = palloc(sizeof(Oid) * nkey);
			bool   *nulls = palloc(sizeof(bool) * nkey);
			char    what[64];
			StringInfoData buf;
			char   *display;

			snprintf(what, sizeof(what), "query row %lld", (long long) (total + i + 1));
			for (int k = 0; k < nkey; k++)
			{
				parts[k] = heap_getattr(tt->vals[i], key_cols[k] + 1, tt->tupdesc, &nulls[k]);
				types[k] = TupleDescAttr(td, key_cols[k])->atttypid;
			}
			initStringInfo(&buf);
			if (nkey == 1)
			{
				if (nulls[0])
					ereport(ERROR,
							(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
							 errmsg("the key of %s of task \"%s\" is NULL", what, task_ref),
							 errhint("Leave rows with a NULL key out of the query; a NULL key names no row.")));
				key_text(s, t, task_ref, what, parts[0], types[0], &buf, &display);
			}
			else
				key_text_parts(s, t, task_ref, what, parts, types, nulls, nkey, &buf, &display);
			keys[i] = buf.data;
			found[i] = anchor_row_lookup(s, t, buf.data);
			c.row_id[i] = display;
			c.obs_null[i] = true;
			c.obs[i] = 0;
			obs_us[i] = HW_NO_CUTOFF;
			if (obs_col >= 0)
			{
				bool  isnull;
				Datum v = heap_getattr(tt->vals[i], obs_col + 1, tt->tupdesc, &isnull);

				if (!isnull)
				{
					c.obs_null[i] = false;
					c.obs[i] = DatumGetTimestampTz(v);
					obs_us[i] = obs_time_value(c.obs[i], task_ref);
				}
			}
		}
		SPI_freetuptable(tt);
		/* the query may name rows the caller cannot see (SELECT 5): the
		 * chunk's keys go through the same check as rt_predict_batch's */
		anchor_rows_require(s, t, keys, c.row_id, found, c.n);
		for (int i = 0; i < c.n; i++)
			rows[i] = (uint32) found[i];
		predict_rows(s, t, rows, obs_us, c.n, c.d, NULL, 0);
		fn(s, t, &c, arg);
		MemoryContextSwitchTo(old);
		MemoryContextReset(chunk_cxt);
		total += c.n;
	}
	SPI_cursor_close(portal);
	MemoryContextDelete(chunk_cxt);
	return total;
}

/* batch_rows argument: NULL -> 1000; 1 .. 100000. */
static int
batch_rows_arg(FunctionCallInfo fcinfo, int argno, const char *task_ref)
{
	int32 n;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return 1000;
	n = PG_GETARG_INT32(argno);
	if (n < 1 || n > 100000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_rows %d for task \"%s\" is out of range", n, task_ref),
				 errhint("Pass 1 .. 100000 rows per batch (default 1000).")));
	return n;
}

static char *
query_arg(FunctionCallInfo fcinfo, int argno, const char *task_ref)
{
	char *q;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("query of task \"%s\" is NULL", task_ref),
				 errhint("Pass a SELECT returning the key columns of the rows to predict and optionally obs_time, "
						 "e.g. 'SELECT order_id FROM shop.orders'.")));
	q = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strspn(q, " \t\r\n;") == strlen(q))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query of task \"%s\" is empty", task_ref),
				 errhint("Pass a SELECT returning the key columns of the rows to predict and optionally obs_time.")));
	return q;
}

/* The five output values of one prediction (rt_predict_batch's columns). */
static void
output_values(HwServing *s, int t, const Decoded *d, Datum *prediction, Datum *label, Datum *p_null,
			  Datum *detail)
{
	*prediction = Float8GetDatum(d->value);
	*label = CStringGetTextDatum(label_text(s, t, d));
	*p_null = Float8GetDatum(d->p_null);
	*detail = DirectFunctionCall1(jsonb_in, CStringGetDatum(proba_json(s, t, d)));
}

typedef struct TableOut
{
	ReturnSetInfo *rsinfo;
} TableOut;

static void
table_chunk(HwServing *s, int t, const PredChunk *c, void *arg)
{
	TableOut *to = arg;

	for (int i = 0; i < c->n; i++)
	{
		Datum   v[6];
		bool    vn[6] = {false, c->obs_null[i], c->d[i].is_null, c->d[i].is_null, false, false};

		v[0] = CStringGetTextDatum(c->row_id[i]);
		v[1] = TimestampTzGetDatum(c->obs[i]);
		output_values(s, t, &c->d[i], &v[2], &v[3], &v[4], &v[5]);
		tuplestore_putvalues(to->rsinfo->setResult, to->rsinfo->setDesc, v, vn);
	}
}

PG_FUNCTION_INFO_V1(rt_predict_table);
Datum
rt_predict_table(PG_FUNCTION_ARGS)
{
	char   *task_ref = task_arg(fcinfo);
	char   *query = query_arg(fcinfo, 1, task_ref);
	int64   ckpt = checkpoint_arg(fcinfo, 2, task_ref);
	HwWeightsChoice weights = hw_weights_arg(fcinfo, 3, task_ref);
	int     t;
	TableOut to;

	InitMaterializedSRF(fcinfo, 0);
	to.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	/* the model first (checks the predict right; not inside SPI) */
	HwServing *s = hw_serving_get(task_ref, ckpt, weights, &t);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	predict_query(s, t, task_ref, query, "rt_predict_table", 1000, table_chunk, &to);
	SPI_finish();
	return (Datum) 0;
}

/* rt_predict_into: the target's columns among the outputs, and the INSERT. */
static const char *const into_cols[6] = {"row_id", "obs_time", "prediction", "label", "p_null", "detail"};
static const Oid into_types[6] = {TEXTARRAYOID, TIMESTAMPTZARRAYOID, FLOAT8ARRAYOID, TEXTARRAYOID,
								  FLOAT8ARRAYOID, JSONBARRAYOID};

typedef struct IntoOut
{
	SPIPlanPtr plan;
	bool       use[6];
	int        nuse;
	const char *target;
	const char *task;
	int64      written;
	double     t0;
} IntoOut;

static void
into_chunk(HwServing *s, int t, const PredChunk *c, void *arg)
{
	IntoOut *io = arg;
	Datum   *cols[6];
	bool    *nulls[6];
	Datum    args[6];
	char     argn[6];
	int      a = 0;

	for (int k = 0; k < 6; k++)
	{
		cols[k] = palloc(sizeof(Datum) * c->n);
		nulls[k] = palloc0(sizeof(bool) * c->n);
	}
	for (int i = 0; i < c->n; i++)
	{
		cols[0][i] = CStringGetTextDatum(c->row_id[i]);
		cols[1][i] = TimestampTzGetDatum(c->obs[i]);
		nulls[1][i] = c->obs_null[i];
		output_values(s, t, &c->d[i], &cols[2][i], &cols[3][i], &cols[4][i], &cols[5][i]);
		nulls[2][i] = nulls[3][i] = c->d[i].is_null;
	}
	for (int k = 0; k < 6; k++)
	{
		Oid     elem = get_element_type(into_types[k]);
		int16   len;
		bool    byval;
		char    align;
		int     dims[1] = {c->n}, lbs[1] = {1};

		if (!io->use[k])
			continue;
		get_typlenbyvalalign(elem, &len, &byval, &align);
		args[a] = PointerGetDatum(construct_md_array(cols[k], nulls[k], 1, dims, lbs, elem, len, byval, align));
		argn[a] = ' ';
		a++;
	}
	if (SPI_execute_plan(io->plan, args, argn, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert the predictions into %s", io->target);
	io->written += c->n;
	ereport(NOTICE,
			(errmsg("rt_predict_into: %lld rows of task \"%s\" written to %s",
					(long long) io->written, io->task, io->target),
			 errdetail("%.0f rows/s so far.", io->written / Max(1e-3, (GetCurrentTimestamp() - io->t0) / 1e6))));
}

PG_FUNCTION_INFO_V1(rt_predict_into);
Datum
rt_predict_into(PG_FUNCTION_ARGS)
{
	char   *task_ref = task_arg(fcinfo);
	char   *query = query_arg(fcinfo, 1, task_ref);
	Oid     relid;
	int     batch_rows = batch_rows_arg(fcinfo, 3, task_ref);
	int64   ckpt = checkpoint_arg(fcinfo, 4, task_ref);
	HwWeightsChoice weights = hw_weights_arg(fcinfo, 5, task_ref);
	int     t;
	IntoOut io = {0};
	StringInfoData sql;
	Oid     argtypes[6];
	char   *relname;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("target_table of task \"%s\" is NULL", task_ref),
				 errhint("Pass a table with a column row_id (text) and any of obs_time, prediction, label, p_null, "
						 "detail, e.g. CREATE TABLE preds (row_id text, obs_time timestamptz, prediction float8, "
						 "label text, p_null float8, detail jsonb).")));
	relid = PG_GETARG_OID(2);
	relname = get_rel_name(relid);
	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("target_table %u of task \"%s\" does not exist", relid, task_ref),
				 errhint("Create the table first (row_id text and any of obs_time, prediction, label, p_null, detail).")));
	io.target = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), relname);
	io.task = task_ref;
	/* the model first: checks the predict right (not inside SPI) */
	HwServing *s = hw_serving_get(task_ref, ckpt, weights, &t);

	if (pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to write the predictions of task \"%s\" into %s", task_ref, io.target),
				 errhint("The table's owner can GRANT INSERT ON %s TO %s.", io.target,
						 quote_identifier(GetUserNameFromId(GetUserId(), false)))));
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (", io.target);
	for (int k = 0; k < 6; k++)
	{
		AttrNumber att = get_attnum(relid, into_cols[k]);

		if (att == InvalidAttrNumber)
			continue;
		io.use[k] = true;
		argtypes[io.nuse] = into_types[k];
		appendStringInfo(&sql, "%s%s", io.nuse ? ", " : "", quote_identifier(into_cols[k]));
		io.nuse++;
	}
	if (!io.use[0])
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("target table %s of task \"%s\" has no column row_id", io.target, task_ref),
				 errhint("The table needs row_id (text) and any of obs_time, prediction, label, p_null, detail; "
						 "other columns get their defaults.")));
	/* ROWS FROM of one qualified unnest per array (multi-argument unnest
	 * exists only unqualified, resolved through the caller's search_path) */
	appendStringInfoString(&sql, ") SELECT * FROM ROWS FROM (");
	for (int a = 0; a < io.nuse; a++)
		appendStringInfo(&sql, "%spg_catalog.unnest($%d)", a ? ", " : "", a + 1);
	appendStringInfoChar(&sql, ')');

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	io.plan = SPI_prepare(sql.data, io.nuse, argtypes);
	if (io.plan == NULL)
		elog(ERROR, "could not prepare the insert into %s: %s", io.target, SPI_result_code_string(SPI_result));
	io.t0 = GetCurrentTimestamp();
	predict_query(s, t, task_ref, query, "rt_predict_into", batch_rows, into_chunk, &io);
	SPI_finish();
	PG_RETURN_INT64(io.written);
}

/* For rt_debug_predict_batch (predict_context.c): the anchor row named by
 * key and the obs_time argument, exactly as rt_predict reads them. */
uint32
hw_predict_anchor_row(HwServing *s, int t, const char *task, Datum key, Oid keytype)
{
	return anchor_row_of(s, t, task, "row_id", key, keytype);
}

int64_t
hw_predict_obs_time_arg(FunctionCallInfo fcinfo, int argno, const char *task)
{
	return obs_time_arg(fcinfo, argno, task);
}
