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

#include "hw_pg.h"
#include "hw_predict.h"
#include "hw_serving.h"

/* One prediction, decoded into the task's units. */
typedef struct Decoded
{
	bool    is_null;
	double  p_null;
	double  value;       /* numeric value / P(true) / epoch seconds / prob of label */
	int32   label;       /* categorical: index in the block */
	float  *probs;       /* categorical [K] */
	int32   K;
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
	const HwTable *tab = &s->snap->tables[s->tasks[t]->anchor_table];
	const HwServingKey *pk = &s->pk[s->tasks[t]->anchor_table];
	Oid     elemtype = get_element_type(typid);
	char    typtype = get_typtype(typid);
	bool    itself = pk->npk == 1 && typid == pk->typid[0];  /* e.g. an array-typed key column */
	Datum  *parts;
	Oid    *types;
	bool   *nulls;
	int     n;
	StringInfoData disp;

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

/* Global row of the anchor named by key, or ERROR naming the table. */
static uint32
anchor_row_of(HwServing *s, int t, const char *task, const char *what, Datum key, Oid keytype)
{
	StringInfoData buf;
	char   *display;
	const HwTable *tab = &s->snap->tables[s->tasks[t]->anchor_table];

	if (tab->key_hash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" has no primary key, so its rows cannot be named for prediction", tab->name),
				 errhint("Add a primary key to the table and run rt_refresh.")));
	initStringInfo(&buf);
	key_text(s, t, task, what, key, keytype, &buf, &display);
	int64 row = snapshot_find_row(s->snap, s->tasks[t]->anchor_table, hw_hash_key_text(buf.data, buf.len));
	if (row < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("no row of \"%s\" has key %s", tab->name, display),
				 errhint("The model sees the data as of its last rt_create_model/rt_refresh; "
						 "run rt_refresh(model) to include newer rows.")));
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

/* obs_time: the model may see what happened up to here. */
static int64_t
obs_time_arg(FunctionCallInfo fcinfo, int argno, const char *task)
{
	TimestampTz ts;
	/* 0001-01-01 .. 9999-12-31 (UTC): the calendar range the time encoding
	 * is meant for; beyond it a time is a mistake, not a cutoff */
	const TimestampTz lo = (TimestampTz) (date2j(1, 1, 1) - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY;
	const TimestampTz hi = (TimestampTz) (date2j(10000, 1, 1) - POSTGRES_EPOCH_JDATE) * USECS_PER_DAY;

	/* No observation time: everything in the snapshot is visible (the
	 * snapshot holds the data as of the model's last refresh, all of it in
	 * the past), and predictions do not drift with the clock. */
	if (PG_ARGISNULL(argno))
		return HW_NO_CUTOFF;
	ts = PG_GETARG_TIMESTAMPTZ(argno);
	if (TIMESTAMP_NOT_FINITE(ts) || ts < lo || ts >= hi)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("obs_time %s for task \"%s\" is out of range", timestamptz_to_str(ts), task),
				 errhint("Pass a time between 0001-01-01 and 9999-12-31, or NULL (the default) to let the "
						 "model see its whole snapshot.")));
	/* PostgreSQL counts µs from 2000-01-01; the snapshot from 1970-01-01 */
	return (int64_t) ts + (int64_t) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
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
			if (task->target_stype == HW_ST_NUMERICAL)
				d->value = o[i].value * (task->target_std > 0 ? task->target_std : 1) + task->target_mean;
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
	HwServing *s = hw_serving_get(task_ref, checkpoint_arg(fcinfo, 3, task_ref), &t);
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

	InitMaterializedSRF(fcinfo, 0);
	HwServing *s = hw_serving_get(task_ref, ckpt, &t);

	uint32_t *rows = palloc(sizeof(uint32_t) * Max(1, n));
	int64_t  *obs = palloc(sizeof(int64_t) * Max(1, n));
	for (int i = 0; i < n; i++)
	{
		char what[48];

		snprintf(what, sizeof(what), "row_ids element %d", i + 1);
		rows[i] = anchor_row_of(s, t, task_ref, what, elems[i], elemtype);
		obs[i] = obs_all;
		CHECK_FOR_INTERRUPTS();
	}
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
