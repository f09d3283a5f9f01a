/*
 * batch_read.c: rt_batch_tensor and rt_batch_sequence: a stored batch
 * (batch_sql.c, which describes the tensors) read back, as arrays or as one
 * sequence's rows beside the source rows they show.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/timestamp.h"

#include "core/batch.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/task/hw_batch_sql.h"
#include "pg/base/hw_settings_pg.h"
#include "core/sampler.h"
#include "core/timeenc.h"

/* ------------------------------------------------------------- reading back */

typedef struct StoredTensor
{
	int     dtype;
	int     ndim;
	int64   shape[3];
	int64   count;
	bytea  *data;
} StoredTensor;

static int
dtype_from_name(const char *s)
{
	for (int d = HW_DT_INT8; d <= HW_DT_FLOAT32; d++)
		if (strcmp(hw_dtype_name(d), s) == 0)
			return d;
	return -1;
}

/* Reads one tensor (caller connected to SPI, owner already checked). */
static MemoryContext keep_cxt;      /* where read_tensor copies to: the function's context */

static bool
read_tensor(int64 batch_id, const char *name, StoredTensor *t)
{
	HwAsOwner as;
	bool isnull;
	int rc;

	hw_become_owner(&as);
	rc = SPI_execute_with_args("SELECT dtype, shape, data FROM headwater.batch_tensor WHERE batch_id = $1 AND name = $2",
							   2, (Oid[]) {INT8OID, TEXTOID},
							   (Datum[]) {Int64GetDatum(batch_id), CStringGetTextDatum(name)}, NULL, true, 1);
	hw_restore_user(&as);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read tensor %s", name);
	if (SPI_processed != 1)
		return false;
	HeapTuple tup = SPI_tuptable->vals[0];
	TupleDesc td = SPI_tuptable->tupdesc;
	Datum *sv;
	bool *sn;
	int ns;
	MemoryContext old = MemoryContextSwitchTo(keep_cxt);

	t->dtype = dtype_from_name(SPI_getvalue(tup, td, 1));
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, td, 2, &isnull)), INT4OID, 4, true, TYPALIGN_INT,
					  &sv, &sn, &ns);
	t->ndim = ns;
	t->count = 1;
	for (int i = 0; i < ns && i < 3; i++)
	{
		t->shape[i] = DatumGetInt32(sv[i]);
		t->count *= t->shape[i];
	}
	t->data = DatumGetByteaPCopy(SPI_getbinval(tup, td, 3, &isnull));
	MemoryContextSwitchTo(old);
	if (t->dtype < 0 || (int64) VARSIZE(t->data) - VARHDRSZ != t->count * (int64) hw_dtype_size(t->dtype))
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("tensor %s of batch %lld is malformed", name, (long long) batch_id)));
	return true;
}

static double
tensor_at(const StoredTensor *t, int64 i)
{
	const char *p = VARDATA(t->data);

	switch (t->dtype)
	{
		case HW_DT_INT8: return ((const int8 *) p)[i];
		case HW_DT_UINT8: return ((const uint8 *) p)[i];
		case HW_DT_UINT16: return ((const uint16 *) p)[i];
		case HW_DT_INT32: return ((const int32 *) p)[i];
		case HW_DT_UINT32: return ((const uint32 *) p)[i];
		case HW_DT_FLOAT16: return hw_f16_to_f32(((const uint16 *) p)[i]);
		default: return ((const float *) p)[i];
	}
}

typedef struct BatchRow
{
	int32  model_id;
	int32  task_id;
	int32  B, S, R;
	int32  vcol_base;           /* -1 when none */
	bool   stale;               /* model refreshed after the batch */
	char  *task_name;
} BatchRow;

static void
read_batch_row(int64 batch_id, BatchRow *br)
{
	HwAsOwner as;
	bool isnull;
	int rc;

	hw_become_owner(&as);
	rc = SPI_execute_with_args("SELECT b.model_id, b.task_id, b.batch_size, b.seq_len, b.n_rows, b.vcol_base, "
							   "coalesce(m.refreshed_at > b.created_at, false), t.name "
							   "FROM headwater.batch b JOIN headwater.model m USING (model_id) "
							   "JOIN headwater.task t USING (task_id) WHERE b.batch_id = $1",
							   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(batch_id)}, NULL, true, 1);
	hw_restore_user(&as);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read batch %lld", (long long) batch_id);
	if (SPI_processed != 1)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("batch %lld does not exist", (long long) batch_id),
						errhint("rt_sample_batches returns the ids of the batches it makes.")));
	HeapTuple tup = SPI_tuptable->vals[0];
	TupleDesc td = SPI_tuptable->tupdesc;

	br->model_id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
	br->task_id = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
	br->B = DatumGetInt32(SPI_getbinval(tup, td, 3, &isnull));
	br->S = DatumGetInt32(SPI_getbinval(tup, td, 4, &isnull));
	br->R = DatumGetInt32(SPI_getbinval(tup, td, 5, &isnull));
	Datum v = SPI_getbinval(tup, td, 6, &isnull);

	br->vcol_base = isnull ? -1 : DatumGetInt32(v);
	br->stale = DatumGetBool(SPI_getbinval(tup, td, 7, &isnull));
	br->task_name = MemoryContextStrdup(keep_cxt, SPI_getvalue(tup, td, 8));
}

PG_FUNCTION_INFO_V1(rt_batch_tensor);
Datum
rt_batch_tensor(PG_FUNCTION_ARGS)
{
	int64 batch_id = PG_GETARG_INT64(0);
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BatchRow br;
	StoredTensor t;

	InitMaterializedSRF(fcinfo, 0);
	keep_cxt = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	read_batch_row(batch_id, &br);
	hw_batch_check_model(br.model_id, "read the batches of");
	if (!read_tensor(batch_id, name, &t))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("batch %lld has no tensor \"%s\"", (long long) batch_id, name),
						errhint("Tensors: semantic_types, column_ids, seq_row_ids, is_null, numeric_values, "
								"timestamp_values, bool_values, categorical_embed_ids, text_embed_ids, is_target, "
								"is_padding, fk_adj, col_perm, out_perm, in_perm, text_batch_embeddings, "
								"target_stype, task_idx, cat_emb_start, cat_emb_count, _row_global, _row_vseed.")));
	SPI_finish();
	Datum *vals = palloc(sizeof(Datum) * (t.count ? t.count : 1));

	for (int64 i = 0; i < t.count; i++)
		vals[i] = Float8GetDatum(tensor_at(&t, i));
	Datum out[3] = {
		PointerGetDatum(hw_batch_int_array(t.shape, t.ndim)),
		CStringGetTextDatum(hw_dtype_name(t.dtype)),
		PointerGetDatum(construct_array(vals, (int) t.count, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE))
	};
	bool nulls[3] = {false, false, false};

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
	return (Datum) 0;
}

/* ----------------------------------------------------------- rt_batch_sequence */

/* ISO 8601 in UTC, as to_jsonb prints the source timestamps beside it */
static char *
format_us(int64 us)
{
	const int64 day = INT64CONST(86400000000);
	int64 days = us / day, rem = us % day, y;
	int m, d;

	if (rem < 0)
	{
		rem += day;
		days--;
	}
	hw_civil_from_days(days, &y, &m, &d);
	int64 s = rem / 1000000, frac = rem % 1000000;
	char *out = psprintf("%04lld-%02d-%02dT%02d:%02d:%02d", (long long) y, m, d,
						 (int) (s / 3600), (int) (s / 60 % 60), (int) (s % 60));

	if (frac)
		out = psprintf("%s.%06lld", out, (long long) frac);
	return psprintf("%s+00:00", out);
}

static char *
task_value_text(const HwTask *t, uint32 seed)
{
	if (seed >= t->nseeds)
		return NULL;
	if (t->target_null[seed])
		return NULL;
	double v = t->target[seed];

	switch (t->target_stype)
	{
		case HW_ST_NUMERICAL: return psprintf("%.15g", v);
		case HW_ST_BOOLEAN: return pstrdup(v != 0 ? "true" : "false");
		case HW_ST_TIMESTAMP: return format_us((int64) v);
		case HW_ST_CATEGORICAL:
			if (t->kind == HW_TASK_QUERY && (uint32) v < t->ncat_own)
				return pstrdup(t->cat_values[(uint32) v]);
			return psprintf("category %u", (uint32) v);
		default: return NULL;
	}
}

typedef struct SrcRow
{
	char  *key;
	Jsonb *row;
	bool   changed;
} SrcRow;

/* rt_batch_sequence's state, passed between its steps by pointer. */
typedef struct SeqRead
{
	int64        batch_id;
	int32        b;                 /* the sequence */
	BatchRow     br;
	StoredTensor st, ci, sr, nu, tg, pd, rg, rv;
	char        *schema;
	MemoryContext fncxt;            /* the function's context: what outlives SPI */
	HwSnapshot  *snap;
	HwTask      *task;
	SrcRow      *src;               /* [R] the source rows of the sequence */
} SeqRead;

/* The batch's row and tensors, checked: the caller may read the model, the
 * sequence exists, the batch is not stale. */
static void
read_sequence_tensors(SeqRead *q)
{
	int64 batch_id = q->batch_id;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	read_batch_row(batch_id, &q->br);
	q->schema = MemoryContextStrdup(q->fncxt, hw_batch_check_model(q->br.model_id, "read the batches of"));
	if (q->b < 0 || q->b >= q->br.B)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("batch %lld has sequences 0..%d, not %d", (long long) batch_id, q->br.B - 1, q->b)));
	if (q->br.stale)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("batch %lld was sampled before the last rt_refresh of its model", (long long) batch_id),
						errhint("Its rows no longer match the snapshot; sample it again with rt_sample_batches.")));
	if (!read_tensor(batch_id, "semantic_types", &q->st) || !read_tensor(batch_id, "column_ids", &q->ci) ||
		!read_tensor(batch_id, "seq_row_ids", &q->sr) || !read_tensor(batch_id, "is_null", &q->nu) ||
		!read_tensor(batch_id, "is_target", &q->tg) || !read_tensor(batch_id, "is_padding", &q->pd) ||
		!read_tensor(batch_id, "_row_global", &q->rg) || !read_tensor(batch_id, "_row_vseed", &q->rv))
		elog(ERROR, "batch %lld is incomplete", (long long) batch_id);
	SPI_finish();
}

/* The snapshot and the batch's task, freed with the function's context. */
static void
load_snapshot_task(SeqRead *q)
{
	q->snap = hw_pg_snapshot_load_in_context(q->br.model_id, CurrentMemoryContext);
	q->task = hw_pg_task_load(q->br.model_id, q->br.task_name, q->snap);
	MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

	cb->func = (MemoryContextCallbackFunction) hw_task_free;
	cb->arg = q->task;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
}

/* The table's row order (its primary key, or its physical order) and the
 * row key text of x, from its model_table row; caller in SPI. */
static void
table_order_and_key(const SeqRead *q, const HwTable *tb, StringInfo order, StringInfo key)
{
	HwAsOwner as;
	bool isnull;

	/* the catalog numbers rows ORDER BY the primary key */
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT pk_columns FROM headwater.model_table WHERE model_id = $1 AND table_name = $2",
							  2, (Oid[]) {INT4OID, TEXTOID},
							  (Datum[]) {Int32GetDatum(q->br.model_id), CStringGetTextDatum(tb->name)},
							  NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read table %s of the model", tb->name);
	hw_restore_user(&as);
	Datum pkd = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

	initStringInfo(order);
	initStringInfo(key);
	if (isnull)
	{
		appendStringInfoString(order, "tableoid, ctid");
		appendStringInfoString(key, "x.ctid::pg_catalog.text");
		return;
	}
	Datum *pv;
	bool *pn;
	int np;

	deconstruct_array(DatumGetArrayTypeP(pkd), TEXTOID, -1, false, TYPALIGN_INT, &pv, &pn, &np);
	appendStringInfoString(key, "pg_catalog.concat_ws(E'\\x1f'");
	for (int k = 0; k < np; k++)
	{
		const char *c = quote_identifier(TextDatumGetCString(pv[k]));

		appendStringInfo(order, "%s%s", k ? ", " : "", c);
		appendStringInfo(key, ", x.%s::pg_catalog.text", c);
	}
	appendStringInfoChar(key, ')');
}

/* The sequence's rows of table ti, read as the calling role; caller in SPI. */
static void
fetch_table_rows(SeqRead *q, int ti)
{
	const HwSnapshot *snap = q->snap;
	const HwTable *tb = &snap->tables[ti];
	int R = q->br.R, b = q->b;
	int64 *want = palloc(sizeof(int64) * (R ? R : 1));
	int nwant = 0;

	for (int r = 0; r < R; r++)
	{
		uint32 g = (uint32) tensor_at(&q->rg, (int64) b * R + r);

		if (g != NO_ROW && g < snap->nrows && snap->row_table[g] == ti)
			want[nwant++] = g - tb->row_offset;
	}
	if (nwant == 0)
		return;
	StringInfoData order, key, sql;
	bool isnull;

	table_order_and_key(q, tb, &order, &key);
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT r, k, j FROM (SELECT pg_catalog.row_number() OVER (ORDER BY %s) OPERATOR(pg_catalog.-) 1 AS r, "
					 "%s AS k, pg_catalog.to_jsonb(x.*) AS j FROM %s.%s x) s WHERE r OPERATOR(pg_catalog.=) ANY($1)",
					 order.data, key.data, quote_identifier(q->schema), quote_identifier(tb->name));
	if (SPI_execute_with_args(sql.data, 1, (Oid[]) {INT8ARRAYOID},
							  (Datum[]) {PointerGetDatum(construct_array((Datum *) want, nwant, INT8OID, 8,
																		   true, TYPALIGN_DOUBLE))},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read rows of %s", tb->name);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple tup = SPI_tuptable->vals[i];
		int64 lr = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		char *k = SPI_getvalue(tup, SPI_tuptable->tupdesc, 2);
		/* copy out of SPI's memory, which SPI_finish releases */
		MemoryContext old = MemoryContextSwitchTo(q->fncxt);
		Jsonb *j = DatumGetJsonbPCopy(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull));

		MemoryContextSwitchTo(old);

		for (int r = 0; r < R; r++)
			if ((uint32) tensor_at(&q->rg, (int64) b * R + r) == tb->row_offset + (uint32) lr)
			{
				q->src[r].key = MemoryContextStrdup(q->fncxt, k ? k : "");
				q->src[r].row = j;
				q->src[r].changed = tb->key_hash && k &&
					hw_hash_key_text(k, strlen(k)) != tb->key_hash[lr];
			}
	}
}

/* Source rows of this sequence, fetched per table as the calling role. */
static void
fetch_source_rows(SeqRead *q)
{
	q->src = palloc0(sizeof(SrcRow) * (q->br.R ? q->br.R : 1));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int ti = 0; ti < q->snap->ntables; ti++)
		fetch_table_rows(q, ti);
	SPI_finish();
}

/* A member of a row's JSON as text (NULL: absent or JSON null). */
static Datum
json_member_text(Jsonb *row, const char *cname, bool *isnull)
{
	JsonbValue kv, *jv;

	kv.type = jbvString;
	kv.val.string.val = (char *) cname;
	kv.val.string.len = (int) strlen(cname);
	jv = findJsonbValueFromContainer(&row->root, JB_FOBJECT, &kv);
	*isnull = false;
	if (jv == NULL || jv->type == jbvNull)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (jv->type == jbvString)
		return CStringGetTextDatum(pnstrdup(jv->val.string.val, jv->val.string.len));
	if (jv->type == jbvBool)
		return CStringGetTextDatum(jv->val.boolean ? "true" : "false");
	if (jv->type == jbvNumeric)
		return DirectFunctionCall1(textin, DirectFunctionCall1(numeric_out, NumericGetDatum(jv->val.numeric)));
	Jsonb *one = JsonbValueToJsonb(jv);

	return CStringGetTextDatum(JsonbToCString(NULL, &one->root, VARSIZE(one)));
}

/* Source, key and value of a position on a row of the task's virtual
 * table (observation time, target). */
static void
virtual_cell(const SeqRead *q, int32 col, uint32 vs, Datum *values, bool *nulls)
{
	const HwTask *task = q->task;

	values[1] = CStringGetTextDatum(psprintf("task %s", task->name));
	values[2] = CStringGetTextDatum(col == q->br.vcol_base ? "observation time" : task->target_name);
	if (vs != NO_ROW && vs < task->nseeds)
	{
		values[3] = CStringGetTextDatum(psprintf("seed %u", vs));
		char *v = NULL;

		if (col == q->br.vcol_base)
			v = task->obs_time_us[vs] == HW_NO_CUTOFF ? NULL : format_us(task->obs_time_us[vs]);
		else
			v = task_value_text(task, vs);
		if (v)
			values[4] = CStringGetTextDatum(v);
		else
			nulls[4] = true;
	}
	else if (vs != NO_ROW && vs > CTX_ROW_BASE - 65536u)
	{
		/* a context label of the prediction (its value is in the tensors only) */
		values[3] = CStringGetTextDatum(psprintf("context label %u", CTX_ROW_BASE - vs + 1));
		nulls[4] = true;
	}
	else
	{
		nulls[3] = true;
		nulls[4] = true;
	}
}

/* The result row of position p of the sequence. */
static void
emit_position(const SeqRead *q, ReturnSetInfo *rsinfo, int p)
{
	const HwSnapshot *snap = q->snap;
	int R = q->br.R;
	int64 pos = (int64) q->b * q->br.S + p;
	Datum values[10];
	bool nulls[10] = {false};
	bool padding = tensor_at(&q->pd, pos) != 0;
	int row = (int) tensor_at(&q->sr, pos);
	int stype = (int) tensor_at(&q->st, pos);
	int32 col = (int32) tensor_at(&q->ci, pos);

	values[0] = Int32GetDatum(p);
	values[6] = BoolGetDatum(tensor_at(&q->tg, pos) != 0);
	values[7] = BoolGetDatum(tensor_at(&q->nu, pos) != 0);
	values[8] = BoolGetDatum(padding);
	values[9] = Int32GetDatum(row);
	if (padding)
	{
		for (int c = 1; c <= 5; c++)
			nulls[c] = true;
		nulls[9] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		return;
	}
	values[5] = CStringGetTextDatum(hw_stype_name(stype) ? hw_stype_name(stype) : "?");
	uint32 g = row < R ? (uint32) tensor_at(&q->rg, (int64) q->b * R + row) : NO_ROW;
	uint32 vs = row < R ? (uint32) tensor_at(&q->rv, (int64) q->b * R + row) : NO_ROW;
	int32 tix, cix;

	if (g != NO_ROW && snapshot_column_by_global_id(snap, col, &tix, &cix))
	{
		const char *cname = snap->tables[tix].cols[cix].name;
		const SrcRow *src = &q->src[row];

		values[1] = CStringGetTextDatum(snap->tables[tix].name);
		values[2] = CStringGetTextDatum(cname);
		if (src->key)
		{
			values[3] = CStringGetTextDatum(src->changed ? psprintf("%s (changed since the snapshot)", src->key)
											: src->key);
			values[4] = json_member_text(src->row, cname, &nulls[4]);
		}
		else
		{
			nulls[3] = true;        /* row gone from the source table */
			nulls[4] = true;
		}
	}
	else
		virtual_cell(q, col, vs, values, nulls);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

PG_FUNCTION_INFO_V1(rt_batch_sequence);
Datum
rt_batch_sequence(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SeqRead q;

	memset(&q, 0, sizeof(q));
	q.batch_id = PG_GETARG_INT64(0);
	q.b = PG_GETARG_INT32(1);
	InitMaterializedSRF(fcinfo, 0);
	q.fncxt = CurrentMemoryContext;
	keep_cxt = q.fncxt;
	read_sequence_tensors(&q);
	load_snapshot_task(&q);
	fetch_source_rows(&q);
	for (int p = 0; p < q.br.S; p++)
		emit_position(&q, rsinfo, p);
	return (Datum) 0;
}
