/*
 * predict_context.c: context labels at prediction time and
 * rt_debug_predict_batch.
 *
 * rt_predict(task, row_id, obs_time, checkpoint, context) takes labels the
 * stored task does not have -- e.g. the customer's last months, known to the
 * caller but newer than the task's seeds:
 *   context => '[{"obs_time": "2022-07-01", "label": 3}, ...]'
 * They join the sequence's label history exactly like the task's own
 * labels (hw_sampler_build_for_seeds_ctx): the newest
 * min(history_max, child width) of stored-and-visible plus context labels,
 * by observation time.  Each must be observed strictly before obs_time.
 *
 * rt_debug_predict_batch(task, row_id, obs_time, context, checkpoint)
 * builds the very batch rt_predict would feed the model and stores it in
 * headwater.batch (split 'predict'), so rt_batch_tensor / rt_batch_sequence
 * show it beside the training batches of rt_sample_batches: the test that
 * training and prediction see the same label history for the same
 * (entity, obs_time).  Owner only (it exposes the task's labels).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/serve/hw_predict.h"

/* PostgreSQL counts µs from 2000-01-01, the snapshot from 1970-01-01 */
#define EPOCH_2000_US INT64CONST(946684800000000)

static const char *
jb_type_name(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull: return "null";
		case jbvString: return "a string";
		case jbvNumeric: return "a number";
		case jbvBool: return "a boolean";
		default: return "an array or object";
	}
}

static char *
jb_string(const JsonbValue *v)
{
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* A timestamp string as epoch µs; false when it does not parse or is not
 * finite. */
static bool
parse_time(const char *s, int64_t *us)
{
	Datum       d;
	TimestampTz ts;

	if (!hw_pg_try_type_input(timestamptz_in, s, &d))
		return false;
	ts = DatumGetTimestampTz(d);
	if (TIMESTAMP_NOT_FINITE(ts))
		return false;
	*us = (int64_t) ts + EPOCH_2000_US;
	return true;
}

static int
cmp_cat(const void *key, const void *elem)
{
	return strcmp((const char *) key, *(char *const *) elem);
}

static const char *
type_hint(const HwTask *t)
{
	switch (t->target_stype)
	{
		case HW_ST_NUMERICAL: return "a number";
		case HW_ST_BOOLEAN: return "true or false";
		case HW_ST_TIMESTAMP: return "a timestamp string";
		default: return "one of the task's categories, as a string";
	}
}

/* The label of context element k (1-based) into c. */
static void
read_label(const JsonbValue *v, const HwTask *t, const char *task, int k, HwContextLabel *c)
{
	c->target = 0;
	c->target_null = 0;
	if (v->type == jbvNull)
	{
		c->target_null = 1;
		return;
	}
	switch (t->target_stype)
	{
		case HW_ST_NUMERICAL:
			if (v->type == jbvNumeric)
			{
				c->target = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
				if (isfinite(c->target))
					return;
			}
			break;
		case HW_ST_BOOLEAN:
			if (v->type == jbvBool)
			{
				c->target = v->val.boolean ? 1.0 : 0.0;
				return;
			}
			break;
		case HW_ST_TIMESTAMP:
			{
				int64_t us;

				if (v->type == jbvString && parse_time(jb_string(v), &us))
				{
					c->target = (double) us;
					return;
				}
			}
			break;
		default:
			if (v->type == jbvString)
			{
				char   *s = jb_string(v);
				char  **hit = t->ncat_own ? bsearch(s, t->cat_values, t->ncat_own, sizeof(char *), cmp_cat) : NULL;

				if (hit)
				{
					c->target = (double) (hit - t->cat_values);
					return;
				}
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("context label %d of task \"%s\" is \"%.100s\", not one of its %u categories",
								k, task, s, t->ncat_own),
						 errhint("Use a value the task's query returned (rt_tasks shows n_categories), or null.")));
			}
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("context label %d of task \"%s\" is %s, but the target \"%s\" is %s", k, task,
					jb_type_name(v), t->target_name ? t->target_name : "?", hw_stype_name(t->target_stype)),
			 errhint("Give \"label\" as %s (or null).", type_hint(t))));
}

void
hw_predict_context_arg(Jsonb *ctx, const HwTask *t, const char *task, int64_t obs_us,
					   HwContextLabel **out, uint32_t *n)
{
	const char *shape = "Pass a JSON array of {\"obs_time\": \"2022-07-01\", \"label\": ...} objects.";
	JsonbIterator *it;
	JsonbValue v;
	JsonbIteratorToken tok;
	HwContextLabel *c;
	int     k = 0, cap;

	*out = NULL;
	*n = 0;
	if (!JB_ROOT_IS_ARRAY(ctx) || JB_ROOT_IS_SCALAR(ctx))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("context of task \"%s\" must be a JSON array", task),
				 errhint("%s", shape)));
	cap = JB_ROOT_COUNT(ctx);
	if (cap == 0)
		return;
	if (t->kind != HW_TASK_QUERY || !t->label_history)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("task \"%s\" has no label history, so it takes no context labels", task),
				 errhint("Context labels join a query task's label history; create the task with "
						 "options {\"label_history\": true} (the default for query tasks).")));
	if (obs_us == HW_NO_CUTOFF)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("context labels of task \"%s\" need an obs_time", task),
				 errhint("Pass obs_time: the labels must be observed before it (without one, no label history is used).")));
	if (cap > HW_MAX_CONTEXT_LABELS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("context of task \"%s\" has %d labels, more than %d", task, cap, HW_MAX_CONTEXT_LABELS),
				 errhint("Pass the most recent ones: at most history_max of them enter the sequence.")));
	c = palloc0(sizeof(HwContextLabel) * cap);
	it = JsonbIteratorInit(&ctx->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		k++;
		if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("context element %d of task \"%s\" is not a JSON object", k, task),
					 errhint("%s", shape)));
		JsonbContainer *o = v.val.binary.data;
		JsonbIterator *oi = JsonbIteratorInit(o);
		JsonbValue kv;
		JsonbIteratorToken ot;
		bool    have_time = false, have_label = false;

		while ((ot = JsonbIteratorNext(&oi, &kv, true)) != WJB_DONE)
		{
			if (ot != WJB_KEY)
				continue;
			char   *key = jb_string(&kv);

			if (strcmp(key, "obs_time") != 0 && strcmp(key, "label") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("context element %d of task \"%s\" has an unknown key \"%.100s\"", k, task, key),
						 errhint("%s", shape)));
		}
		JsonbValue *tv = getKeyJsonValueFromContainer(o, "obs_time", 8, NULL);
		JsonbValue *lv = getKeyJsonValueFromContainer(o, "label", 5, NULL);
		char   *ts;

		have_time = tv != NULL && tv->type == jbvString;
		have_label = lv != NULL;
		if (!have_time || !have_label)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("context element %d of task \"%s\" needs %s", k, task,
							!have_time ? "\"obs_time\" as a timestamp string" : "a \"label\""),
					 errhint("%s", shape)));
		ts = jb_string(tv);
		if (!parse_time(ts, &c[k - 1].obs_time_us))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_DATETIME_FORMAT),
					 errmsg("obs_time \"%.100s\" of context label %d of task \"%s\" is not a timestamp", ts, k, task),
					 errhint("Write it as PostgreSQL reads a timestamptz, e.g. \"2022-07-01 00:00:00+00\".")));
		if (c[k - 1].obs_time_us >= obs_us)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("context label %d of task \"%s\" is observed at %s, not before obs_time %s", k, task,
							timestamptz_to_str((TimestampTz) (c[k - 1].obs_time_us - EPOCH_2000_US)),
							timestamptz_to_str((TimestampTz) (obs_us - EPOCH_2000_US))),
					 errhint("Label history holds labels observed before the prediction's obs_time; "
							 "leave out the later ones.")));
		read_label(lv, t, task, k, &c[k - 1]);
	}
	*out = c;
	*n = (uint32_t) k;
}

int
hw_predict_build(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n,
				 const HwContextLabel *ctx, uint32_t nctx, HwBatch **out, HwError *err)
{
	const HwContextLabel **cp = NULL;
	uint32_t *cn = NULL;

	if (nctx > 0)
	{
		cp = palloc(sizeof(HwContextLabel *) * n);
		cn = palloc(sizeof(uint32_t) * n);
		for (int i = 0; i < n; i++)
		{
			cp[i] = ctx;
			cn[i] = nctx;
		}
	}
	return hw_sampler_build_for_seeds_ctx(s->sampler, t, rows, obs, n, (const HwContextLabel *const *) cp, cn,
										  out, err);
}

static void
free_batch_cb(void *arg)
{
	HwBatch **b = arg;

	hw_batch_free(*b);
	*b = NULL;
}

PG_FUNCTION_INFO_V1(rt_debug_predict_batch);
Datum
rt_debug_predict_batch(PG_FUNCTION_ARGS)
{
	char   *task;
	int32   model_id, task_id;
	int64   ckpt = -1;
	int     t;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("task must not be NULL"),
				 errhint("Pass the name given to rt_create_task.")));
	task = text_to_cstring(PG_GETARG_TEXT_PP(0));
	hw_pg_task_lookup(task, false, &model_id, &task_id);
	hw_model_require(model_id, HW_RIGHT_OWN, "inspect the prediction batches of");
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("row_id of task \"%s\" is NULL", task),
				 errhint("Pass the primary key of the row, as to rt_predict.")));
	int64_t obs = hw_predict_obs_time_arg(fcinfo, 2, task);

	if (!PG_ARGISNULL(4))
	{
		ckpt = PG_GETARG_INT64(4);
		if (ckpt < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("checkpoint %lld for task \"%s\" is not a checkpoint id", (long long) ckpt, task),
					 errhint("Checkpoint ids are positive; NULL uses the task's best checkpoint.")));
	}
	HwServing *s = hw_serving_get(task, ckpt, HW_WEIGHTS_BEST, &t);
	uint32  row = hw_predict_anchor_row(s, t, task, PG_GETARG_DATUM(1), get_fn_expr_argtype(fcinfo->flinfo, 1));
	HwContextLabel *ctx = NULL;
	uint32  nctx = 0;
	HwError err = {0};
	HwBatch **holder = palloc0(sizeof(HwBatch *));
	MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

	if (!PG_ARGISNULL(3))
		hw_predict_context_arg(PG_GETARG_JSONB_P(3), s->tasks[t], task, obs, &ctx, &nctx);
	cb->func = free_batch_cb;
	cb->arg = holder;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	if (hw_predict_build(s, t, &row, &obs, 1, ctx, nctx, holder, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "sampling the row to predict");

	SPIPlanPtr plans[2] = {NULL, NULL};
	int64   none = -1;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	int64   batch_id = hw_pg_store_batch(s->model_id, s->tasks[t], "predict", 0, (int64) s->scfg.seed,
										 s->scfg.seq_len, *holder, s->sampler, &none, plans);

	SPI_finish();
	hw_batch_free(*holder);
	*holder = NULL;
	PG_RETURN_INT64(batch_id);
}
