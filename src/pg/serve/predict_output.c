/*
 * predict_output.c: running the model on anchor rows and decoding its
 * output into the task's units (value, label, probabilities as jsonb).
 *
 * Output by target type:
 *   numerical    the value (de-normalised)
 *   boolean      P(true)
 *   timestamp    epoch seconds; the label is timestamptz text
 *   categorical  the probability of the most likely label; the label
 *   any          jsonb {"p_null": .., "value"/"label"/"probs": ..}
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

#include "pg/serve/hw_caller_query.h"
#include "pg/base/hw_pg.h"
#include "pg/serve/hw_predict.h"
#include "pg/serve/predict_priv.h"
#include "pg/serve/hw_serving.h"
#include "pg/serve/hw_serving_device.h"
#include "core/prefetch.h"
/* The decoded outputs o[nb] of rows into out[nb], in the task's units. */
static void
store_outputs(HwServing *s, int t, const HwServingOutput *o, int nb, HwPrediction *out)
{
	const HwTask *task = s->tasks[t];

	for (int i = 0; i < nb; i++)
	{
		HwPrediction *d = &out[i];

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
}

/*
 * Many rows without context labels: a producer thread samples the next
 * batch while this thread runs the model on the last one (prefetch.h's row
 * stream), on the GPU scorer dev when given, else on the entry's CPU model
 * with the whole OpenMP team.  On the CPU the batches are the serving
 * batches, so every row gets the bits of a single-row call.
 */
static void
predict_stream(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n, HwPrediction *out,
			   HwDeviceScorer *dev)
{
	HwError         err = {0};
	HwModel        *model = dev ? dev->model : s->model;
	int             B = dev ? dev->batch : s->scfg.batch_size;
	HwServingOutput *o = palloc(sizeof(HwServingOutput) * B);
	HwPrefetch     *volatile q = NULL;

	if (dev == NULL)
	{
		hw_serving_set_wide(s, true);
		hw_serving_forward_begin(hw_serving_wide_threads());
	}
	PG_TRY();
	{
		q = hw_prefetch_start_rows(dev ? dev->sampler : s->sampler, t, rows, obs, n, B, 2, &err);
		if (q == NULL)
			hw_pg_raise_core_error(&err, "starting the sampling of the rows to predict");
		for (int off = 0; off < n; off += B)
		{
			HwBatch *b = NULL;

			if (hw_prefetch_next(q, &b, NULL, NULL, &err) != HW_OK)
				hw_pg_raise_core_error(&err, "sampling the rows to predict");
			hw_serving_eval_batch_on(s, model, b, o);
			store_outputs(s, t, o, Min(B, n - off), out + off);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_FINALLY();
	{
		hw_prefetch_stop(q);
		if (dev == NULL)
		{
			hw_serving_set_wide(s, false);
			hw_serving_forward_end();
		}
	}
	PG_END_TRY();
}

/* A request's one batch: on the threads serving_threads.c gives it and
 * one thread again afterwards, also on error; the serving worker's entry,
 * already wide, keeps its threads.  Either way the forward is announced to
 * the other sessions (hw_serving_forward_begin). */
static void
eval_single_batch(HwServing *s, HwBatch *b, HwServingOutput *o)
{
	bool narrow = !s->wide;
	int  threads = narrow ? hw_serving_single_threads() : hw_serving_wide_threads();

	hw_serving_forward_begin(threads);
	if (narrow)
		hw_serving_set_threads(s, threads);
	PG_TRY();
	{
		hw_serving_eval_batch(s, b, o);
	}
	PG_FINALLY();
	{
		if (narrow)
			hw_serving_set_threads(s, 1);
		hw_serving_forward_end();
	}
	PG_END_TRY();
}

void
hw_predict_rows(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n, HwPrediction *out,
			 const HwContextLabel *ctx, uint32_t nctx)
{
	HwError err = {0};
	int     maxb = s->scfg.batch_size;
	HwServingOutput *o;

	if (n > maxb && nctx == 0)
	{
		predict_stream(s, t, rows, obs, n, out, NULL);
		return;
	}
	/* a single batch (or rows with context labels) runs on one thread, many
	 * sessions serving at once, or on the idle CPUs (serving_threads.c) */
	o = palloc(sizeof(HwServingOutput) * maxb);
	for (int off = 0; off < n; off += maxb)
	{
		int     nb = Min(maxb, n - off);
		HwBatch *b = NULL;

		if (hw_predict_build(s, t, rows + off, obs + off, nb, ctx, nctx, &b, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "sampling the rows to predict");
		eval_single_batch(s, b, o);
		store_outputs(s, t, o, nb, out + off);
		CHECK_FOR_INTERRUPTS();
	}
}

void
hw_predict_rows_bulk(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n, HwPrediction *out,
					 HwBulkState *bulk)
{
	/* the device is chosen by the request's first part of more than one
	 * batch; parts before it (and all, on the CPU) run as hw_predict_rows */
	if (!bulk->decided && n > s->scfg.batch_size)
	{
		bulk->dev = hw_serving_device_open(s, s->tasks[t]->name, bulk->cxt);
		bulk->decided = true;
	}
	if (bulk->dev)
		predict_stream(s, t, rows, obs, n, out, bulk->dev);
	else
		hw_predict_rows(s, t, rows, obs, n, out, NULL, 0);
}

void
hw_predict_bulk_end(HwBulkState *bulk)
{
	if (bulk->dev)
		hw_serving_device_close(bulk->dev);
	bulk->dev = NULL;
}

static const char *
category_label(HwServing *s, int t, int32 k)
{
	return hw_serving_category_label(s, t, k);
}

/* The optional checkpoint argument (argument argno): -1 (the task's best)
 * when absent or NULL, else a checkpoint id (hw_serving_get checks that it
 * is one of the task's model's). */
int64
hw_predict_checkpoint_arg(FunctionCallInfo fcinfo, int argno, const char *task_ref)
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

char *
hw_predict_label_text(HwServing *s, int t, const HwPrediction *d)
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

/* A number as JSON: NaN and infinities (a diverged model) become null. */
static void
json_number(StringInfo j, const char *fmt, double v)
{
	if (isfinite(v))
		appendStringInfo(j, fmt, v);
	else
		appendStringInfoString(j, "null");
}

char *
hw_predict_proba_json(HwServing *s, int t, const HwPrediction *d)
{
	StringInfoData j;

	initStringInfo(&j);
	appendStringInfoString(&j, "{\"p_null\": ");
	json_number(&j, "%.6g", d->p_null);
	appendStringInfoString(&j, ", \"label\": ");
	escape_json(&j, hw_predict_label_text(s, t, d));
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
