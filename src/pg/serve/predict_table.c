/*
 * predict_table.c: whole tables: rt_predict_table(task, query) and
 * rt_predict_into(task, query, target_table).  The query (the caller's text, run with SPI as the
 * caller, never edited) returns one row per prediction: the key columns of
 * the task's anchor table in primary key order (or one ROW(...)/array
 * column, as for rt_predict), plus optionally a timestamptz column named
 * obs_time (NULL or absent: the whole snapshot).  Rows are fetched,
 * predicted and handed on in chunks of batch_rows.
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
/* One chunk of predictions (chunk memory). */
typedef struct PredChunk
{
	int          n;
	char       **row_id;     /* [n] the key as text (rt_predict_batch's row_id) */
	TimestampTz *obs;        /* [n] */
	bool        *obs_null;   /* [n] */
	HwPrediction     *d;          /* [n] */
} PredChunk;

typedef void (*PredChunkFn) (HwServing *s, int t, const PredChunk *c, void *arg);

/* What the steps of predict_query share: the task, the query's columns
 * and where each chunk goes. */
typedef struct PredictRun
{
	HwServing  *s;
	int         t;
	const char *task_ref;
	TupleDesc   td;           /* the query's result */
	int         obs_col;      /* the obs_time column, or -1 */
	int         nkey;
	int        *key_cols;     /* [nkey] the key columns: all the others */
	PredChunkFn fn;
	void       *arg;
	int64       total;        /* rows predicted so far */
	HwBulkState *bulk;        /* the request's device, kept across chunks */
} PredictRun;

/* The query's columns: obs_time (timestamptz) if returned, the rest the key. */
static void
find_key_and_time_columns(PredictRun *p)
{
	TupleDesc td = p->td;

	p->obs_col = -1;
	p->nkey = 0;
	p->key_cols = palloc(sizeof(int) * Max(1, td->natts));
	for (int i = 0; i < td->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(td, i);

		if (att->attisdropped)
			continue;
		if (strcmp(NameStr(att->attname), "obs_time") == 0 && p->obs_col < 0)
		{
			if (att->atttypid != TIMESTAMPTZOID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column obs_time of the query of task \"%s\" is %s, not timestamp with time zone",
								p->task_ref, format_type_be(att->atttypid)),
						 errhint("Cast it in the query: ... AS obs_time becomes ...::timestamptz AS obs_time.")));
			p->obs_col = i;
			continue;
		}
		p->key_cols[p->nkey++] = i;
	}
	if (p->nkey == 0)
	{
		HwServing *s = p->s;
		int at = s->tasks[p->t]->anchor_table;

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of task \"%s\" returns no key column", p->task_ref),
				 errhint("%s", hw_predict_pk_hint(&s->snap->tables[at], &s->pk[at]))));
	}
}

/* The canonical key text of a query row (for the lookup) and its display
 * form (row_id); a NULL key is an error. */
static char *
query_row_key(const PredictRun *p, HeapTuple tup, TupleDesc rtd, int64 rowno, char **display)
{
	int nkey = p->nkey;
	Datum  *parts = palloc(sizeof(Datum) * nkey);
	Oid    *types = palloc(sizeof(Oid) * nkey);
	bool   *nulls = palloc(sizeof(bool) * nkey);
	char    what[64];
	StringInfoData buf;

	snprintf(what, sizeof(what), "query row %lld", (long long) rowno);
	for (int k = 0; k < nkey; k++)
	{
		parts[k] = heap_getattr(tup, p->key_cols[k] + 1, rtd, &nulls[k]);
		types[k] = TupleDescAttr(p->td, p->key_cols[k])->atttypid;
	}
	initStringInfo(&buf);
	if (nkey == 1)
	{
		if (nulls[0])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the key of %s of task \"%s\" is NULL", what, p->task_ref),
					 errhint("Leave rows with a NULL key out of the query; a NULL key names no row.")));
		hw_predict_key_text(p->s, p->t, p->task_ref, what, parts[0], types[0], &buf, display);
	}
	else
		hw_predict_key_text_parts(p->s, p->t, p->task_ref, what, parts, types, nulls, nkey, &buf, display);
	return buf.data;
}

/* Row i's observation time into the chunk (NULL or no column: none). */
static void
query_row_obs_time(const PredictRun *p, HeapTuple tup, TupleDesc rtd, PredChunk *c, int i, int64_t *obs_us)
{
	c->obs_null[i] = true;
	c->obs[i] = 0;
	*obs_us = HW_NO_CUTOFF;
	if (p->obs_col >= 0)
	{
		bool  isnull;
		Datum v = heap_getattr(tup, p->obs_col + 1, rtd, &isnull);

		if (!isnull)
		{
			c->obs_null[i] = false;
			c->obs[i] = DatumGetTimestampTz(v);
			*obs_us = hw_predict_obs_time_value(c->obs[i], p->task_ref);
		}
	}
}

/* Predicts the rows of one fetch (tt) and hands them to p->fn (in the
 * current memory context: the chunk's).  Not inlined into predict_query's
 * PG_TRY, whose longjmp would then cover its locals. */
pg_noinline static void
predict_chunk(PredictRun *p, SPITupleTable *tt, int n)
{
	PredChunk   c;
	uint32_t   *rows;
	int64      *found;       /* [n] snapshot rows of the keys, -1 when missing */
	char      **keys;        /* [n] canonical key texts */
	int64_t    *obs_us;

	c.n = n;
	c.row_id = palloc(sizeof(char *) * c.n);
	c.obs = palloc(sizeof(TimestampTz) * c.n);
	c.obs_null = palloc(sizeof(bool) * c.n);
	c.d = palloc0(sizeof(HwPrediction) * c.n);
	rows = palloc(sizeof(uint32_t) * c.n);
	found = palloc(sizeof(int64) * c.n);
	keys = palloc(sizeof(char *) * c.n);
	obs_us = palloc(sizeof(int64_t) * c.n);
	for (int i = 0; i < c.n; i++)
	{
		keys[i] = query_row_key(p, tt->vals[i], tt->tupdesc, p->total + i + 1, &c.row_id[i]);
		found[i] = hw_predict_anchor_row_lookup(p->s, p->t, keys[i]);
		query_row_obs_time(p, tt->vals[i], tt->tupdesc, &c, i, &obs_us[i]);
	}
	SPI_freetuptable(tt);
	/* the query may name rows the caller cannot see (SELECT 5): the
	 * chunk's keys go through the same check as rt_predict_batch's */
	hw_predict_anchor_rows_require(p->s, p->t, keys, c.row_id, found, c.n);
	for (int i = 0; i < c.n; i++)
		rows[i] = (uint32) found[i];
	hw_predict_rows_bulk(p->s, p->t, rows, obs_us, c.n, c.d, p->bulk);
	p->fn(p->s, p->t, &c, p->arg);
}

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
	PredictRun  p = {.s = s, .t = t, .task_ref = task_ref, .fn = fn, .arg = arg};
	HwBulkState *const bulk = palloc0(sizeof(HwBulkState));
	Portal      portal;

	bulk->cxt = CurrentMemoryContext;
	p.bulk = bulk;
	hw_predict_require_anchor_key(s, t);
	/* one plain SELECT, else an error before any of it runs */
	portal = hw_caller_select_open(query, fn_name, task_ref);
	p.td = portal->tupDesc;
	find_key_and_time_columns(&p);
	PG_TRY();
	{
		for (;;)
		{
			MemoryContext old;
			int n;

			CHECK_FOR_INTERRUPTS();
			SPI_cursor_fetch(portal, true, batch_rows);
			if (SPI_processed == 0)
				break;
			n = (int) SPI_processed;
			old = MemoryContextSwitchTo(chunk_cxt);
			predict_chunk(&p, SPI_tuptable, n);
			MemoryContextSwitchTo(old);
			MemoryContextReset(chunk_cxt);
			p.total += n;
		}
	}
	PG_FINALLY();
	{
		/* the device memory goes now, not with the caller's context */
		hw_predict_bulk_end(bulk);
	}
	PG_END_TRY();
	SPI_cursor_close(portal);
	MemoryContextDelete(chunk_cxt);
	return p.total;
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
output_values(HwServing *s, int t, const HwPrediction *d, Datum *prediction, Datum *label, Datum *p_null,
			  Datum *detail)
{
	*prediction = Float8GetDatum(d->value);
	*label = CStringGetTextDatum(hw_predict_label_text(s, t, d));
	*p_null = Float8GetDatum(d->p_null);
	*detail = DirectFunctionCall1(jsonb_in, CStringGetDatum(hw_predict_proba_json(s, t, d)));
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
	char   *task_ref = hw_predict_task_arg(fcinfo);
	char   *query = query_arg(fcinfo, 1, task_ref);
	int64   ckpt = hw_predict_checkpoint_arg(fcinfo, 2, task_ref);
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
	char   *task_ref = hw_predict_task_arg(fcinfo);
	char   *query = query_arg(fcinfo, 1, task_ref);
	Oid     relid;
	int     batch_rows = batch_rows_arg(fcinfo, 3, task_ref);
	int64   ckpt = hw_predict_checkpoint_arg(fcinfo, 4, task_ref);
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
