/*
 * train_val.c: what the training loop (train_loop.c) measures and reports:
 * the mixed val loss, each trained task's own val metric, the rows of
 * headwater.train_log, the status lines, and which checkpoint serves each
 * task at the end (hw_train_val.h).
 */
#include "postgres.h"

#include <math.h>
#include <time.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/train/hw_train.h"
#include "pg/base/pg_xact.h"
#include "pg/train/hw_train_val.h"
#include "pg/train/hw_checkpoint.h"
#include "pg/train/hw_device.h"
#include "core/metrics.h"
#include "core/backend.h"
#include "core/collective.h"
#include "core/dp_step.h"
#include "core/dp_threads.h"
#include "core/eta.h"
#include "core/model.h"
#include "core/prefetch.h"
#include "core/sampler.h"
#include "core/task.h"


/* Validation: mean loss over val_batches batches 0..n-1 of the val split
 * (the same batches every time, so the numbers are comparable). */
double
hw_train_validate(HwModel *model, HwSampler *sampler, int nbatches)
{
	HwError err = {0};
	double  sum = 0;
	int     done = 0;

	for (int k = 0; k < nbatches; k++)
	{
		HwBatch *b = NULL;
		float    loss;

		if (hw_sampler_batch(sampler, HW_SPLIT_VAL, (uint64_t) k, &b, NULL, &err) != HW_OK)
			break;              /* no val seeds: no validation */
		int rc = hw_model_eval(model, b, &loss, NULL, &err);
		hw_batch_free(b);
		if (rc != HW_OK)
			hw_pg_raise_core_error(&err, "validation");
		sum += loss;
		done++;
		CHECK_FOR_INTERRUPTS();
	}
	return done ? sum / done : NAN;
}

/* One task's validation: its sample of val rows and the model's
 * predictions on them, passed between the steps by pointer. */
typedef struct TaskVal
{
	HwModel    *model;
	HwSampler  *vs;
	const HwSnapshot *snap;
	const HwTask *task;
	int         t;              /* the task's index in the sampler */
	uint32      k;              /* rows validated */
	uint32     *sel;            /* [k] their seeds */
	double     *pred;           /* [k] P(true) / value in target units */
	int32      *label;          /* [k] the most probable category */
	double      loss_sum;
	int32       K;              /* the target's categories (1: not categorical) */
} TaskVal;

/* The model's predictions on rows sel[off .. off + nb). */
static void
predict_val_batch(TaskVal *v, uint32 off, int nb)
{
	HwError err = {0};
	HwBatch *b = NULL;
	float   loss;

	if (hw_sampler_seed_batch(v->vs, v->t, v->sel + off, nb, &b, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "sampling the validation rows");
	int32 Kb = (int32) Max(1, b->cat_emb_count);
	/* a categorical target outside its block (NULL truth): a placeholder id */
	if (b->target_stype == HW_ST_CATEGORICAL)
		for (int64 c = 0; c < (int64) b->B * b->S; c++)
			if (b->is_target[c] && (b->categorical_embed_ids[c] < b->cat_emb_start ||
									b->categorical_embed_ids[c] >= b->cat_emb_start + b->cat_emb_count))
				b->categorical_embed_ids[c] = b->cat_emb_start;
	HwPredictions *pr = hw_predictions_alloc(b->B, Kb);
	if (pr == NULL)
	{
		hw_batch_free(b);
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory in validation")));
	}
	int rc = hw_model_eval(v->model, b, &loss, pr, &err);
	int stype = b->target_stype;
	hw_batch_free(b);
	if (rc != HW_OK)
	{
		hw_predictions_free(pr);
		hw_pg_raise_core_error(&err, "validation");
	}
	v->K = Kb;
	v->loss_sum += (double) loss * nb;
	for (int i = 0; i < nb; i++)
	{
		int32 *label = &v->label[off + i];

		*label = 0;
		if (stype == HW_ST_TIMESTAMP)
			v->pred[off + i] = pr->ts[i * HW_TS_DIM + HW_TS_DIM - 1] * v->snap->ts_std_us + v->snap->ts_mean_us;
		else if (stype == HW_ST_NUMERICAL)
			v->pred[off + i] = hw_task_decode_numerical(v->task, pr->value[i], NULL);
		else
			v->pred[off + i] = pr->value[i];
		if (stype == HW_ST_CATEGORICAL)
			for (int c = 1; c < Kb; c++)
				if (pr->cat_probs[(size_t) i * Kb + c] > pr->cat_probs[(size_t) i * Kb + *label])
					*label = c;
	}
	hw_predictions_free(pr);
}

/* The task's metric on the validated rows with a non-NULL truth. */
static void
task_metric(const TaskVal *v, HwTaskValMetric *o)
{
	const HwTask *task = v->task;
	HwError err = {0};
	uint32  k = v->k;
	int64   m = 0;
	double *yd = palloc(sizeof(double) * k), *pd = palloc(sizeof(double) * k);
	int32  *yc = palloc(sizeof(int32) * k), *pc = palloc(sizeof(int32) * k);
	uint8  *yb = palloc(k);

	for (uint32 j = 0; j < k; j++)
	{
		uint32 i = v->sel[j];
		if (task->target_null[i])
			continue;
		yd[m] = task->target[i];
		yb[m] = task->target[i] != 0;
		yc[m] = task->kind == HW_TASK_QUERY ? (int32) task->target[i] : (int32) task->target[i] - task->cat_base;
		pd[m] = v->pred[j];
		pc[m] = Min(v->label[j], v->K - 1);
		m++;
	}
	o->n_rows = (int32) m;
	o->value = NAN;
	switch (task->target_stype)
	{
		case HW_ST_BOOLEAN:
		{
			HwBinaryMetrics bm;
			o->metric = "auroc";
			if (m > 0 && hw_metrics_binary(yb, pd, m, &bm, &err) == HW_OK)
				o->value = bm.auroc;
			break;
		}
		case HW_ST_CATEGORICAL:
		{
			HwCategoricalMetrics cm;
			o->metric = "accuracy";
			if (m > 0 && hw_metrics_categorical(yc, pc, m, v->K, &cm, &err) == HW_OK)
				o->value = cm.accuracy;
			break;
		}
		case HW_ST_TIMESTAMP:
		{
			HwRegressionMetrics rm;
			o->metric = "mae_days";
			if (m > 0 && hw_metrics_regression(yd, pd, m, &rm, &err) == HW_OK)
				o->value = rm.mae / 86400e6;
			break;
		}
		default:
		{
			HwRegressionMetrics rm;
			o->metric = "mae";
			if (m > 0 && hw_metrics_regression(yd, pd, m, &rm, &err) == HW_OK)
				o->value = rm.mae;
			break;
		}
	}
	pfree(yd); pfree(pd); pfree(yc); pfree(pc); pfree(yb);
}

/*
 * Per-task validation: each trained task (weight > 0) on a fixed sample of
 * its val split (min(n_val, val_rows) rows spread evenly over the shard, the
 * same every time), its own metric (auroc, accuracy, mae, mae_days) with
 * src/core/metrics.c and its mean loss on the same rows.  Fills out[] (one
 * per task evaluated) and returns how many.  Rows with a NULL target count
 * in the loss, not in the metric.
 */
int
hw_train_validate_tasks(HwModel *model, HwSampler *vs, const HwSnapshot *snap, HwTask **tasks, int ntasks,
			   const double *weights, int val_rows, HwTaskValMetric *out, bool average)
{
	int     nout = 0;
	int     maxb = Max(1, hw_sampler_config(vs)->batch_size);

	if (val_rows <= 0)
		return 0;
	for (int t = 0; t < ntasks; t++)
	{
		uint32  n;
		const uint32_t *idx = hw_sampler_shard(vs, t, HW_SPLIT_VAL, &n);

		if (!(weights[t] > 0) || idx == NULL || n == 0)
			continue;
		TaskVal v = {.model = model, .vs = vs, .snap = snap, .task = tasks[t], .t = t, .K = 1};

		v.k = Min(n, (uint32) val_rows);
		v.sel = palloc(sizeof(uint32) * v.k);
		v.pred = palloc(sizeof(double) * v.k);
		v.label = palloc(sizeof(int32) * v.k);
		for (uint32 j = 0; j < v.k; j++)
			v.sel[j] = idx[(uint64) j * n / v.k];
		for (uint32 off = 0; off < v.k; off += maxb)
		{
			predict_val_batch(&v, off, (int) Min((uint32) maxb, v.k - off));
			CHECK_FOR_INTERRUPTS();
		}

		HwTaskValMetric *o = &out[nout++];

		o->task_id = v.task->task_id;
		o->average = average;
		o->loss = v.loss_sum / v.k;
		task_metric(&v, o);
		pfree(v.sel); pfree(v.pred); pfree(v.label);
	}
	return nout;
}

/* Per-task validation rows of headwater.train_log, and the job's val_metrics. */
void
hw_train_log_task_val(HwJobShared *job, int step, HwTask **tasks, int ntasks, const HwTaskValMetric *vm, int nvm)
{
	for (int i = 0; i < nvm; i++)
	{
		const char *name = "?";
		for (int t = 0; t < ntasks; t++)
			if (tasks[t]->task_id == vm[i].task_id)
				name = tasks[t]->name;
		Oid     argtypes[9] = {INT8OID, INT4OID, INT4OID, TEXTOID, FLOAT8OID, TEXTOID, FLOAT8OID, INT4OID, TEXTOID};
		Datum   values[9] = {Int64GetDatum(job->job_id), Int32GetDatum(job->model_id), Int32GetDatum(step),
							 CStringGetTextDatum(name), Float8GetDatum(vm[i].loss),
							 CStringGetTextDatum(vm[i].metric), Float8GetDatum(vm[i].value),
							 Int32GetDatum(vm[i].n_rows), CStringGetTextDatum(hw_weights_name(vm[i].average))};
		char    nulls[9] = {' ', ' ', ' ', ' ', isfinite(vm[i].loss) ? ' ' : 'n', ' ',
							isfinite(vm[i].value) ? ' ' : 'n', ' ', ' '};

		/* and on the job (rt_status): {"val_loss": .., "<task>": {"<metric>": .., "loss": ..,
		 * ["average": {"<metric>": .., "loss": ..}]}}: a validation writes the last
		 * parameters' row first, so the average's nests in it; the log's row of the
		 * average says "weights": "average" */
		hw_job_exec_committed(
			"WITH l AS (INSERT INTO headwater.train_log (job_id, model_id, step, split, task, loss, metrics) "
			"VALUES ($1, $2, $3, 'val', $4, $5, jsonb_build_object($6, $7, 'n_rows', $8) || "
			"  CASE WHEN $9 = 'average' THEN jsonb_build_object('weights', $9) ELSE '{}'::jsonb END)) "
			"UPDATE headwater.job SET val_metrics = coalesce(val_metrics, '{}'::jsonb) || "
			"  jsonb_build_object($4, CASE WHEN $9 = 'average' "
			"    THEN coalesce(val_metrics->$4, '{}'::jsonb) || jsonb_build_object('average', jsonb_build_object($6, $7, 'loss', $5)) "
			"    ELSE jsonb_build_object($6, $7, 'loss', $5) END) WHERE job_id = $1",
			9, argtypes, values, nulls);
	}
}

/* The validation's per-task metrics as a status line (relayed as a NOTICE). */
void
hw_train_report_task_val(HwJobShared *job, int step, HwTask **tasks, int ntasks, const HwTaskValMetric *vm, int nvm)
{
	StringInfoData msg;

	if (nvm == 0)
		return;
	initStringInfo(&msg);
	appendStringInfo(&msg, "validation at step %d:", step);
	/* one entry per task: the last parameters', and the average's beside
	 * it (the status line is bounded: HwJobShared.message) */
	for (int i = 0, first = 1; i < nvm; i++)
	{
		const char *name = "?";
		const HwTaskValMetric *avg = NULL;

		if (vm[i].average)
			continue;
		for (int t = 0; t < ntasks; t++)
			if (tasks[t]->task_id == vm[i].task_id)
				name = tasks[t]->name;
		for (int j = 0; j < nvm; j++)
			if (vm[j].average && vm[j].task_id == vm[i].task_id)
				avg = &vm[j];
		appendStringInfo(&msg, "%s %s %s %.4g (loss %.4g", first ? "" : ",", name, vm[i].metric, vm[i].value,
						 vm[i].loss);
		if (avg)
			appendStringInfo(&msg, "; average %.4g, loss %.4g", avg->value, avg->loss);
		appendStringInfo(&msg, "; %d rows)", vm[i].n_rows);
		first = 0;
	}
	SpinLockAcquire(&job->mutex);
	strlcpy(job->message, msg.data, sizeof(job->message));
	job->progress_seq++;
	SpinLockRelease(&job->mutex);
	pfree(msg.data);
}

void
hw_train_log_row(HwJobShared *job, int step, const char *split, double loss, double lr, double gnorm, double tps)
{
	Oid     argtypes[8] = {INT8OID, INT4OID, INT4OID, TEXTOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID};
	Datum   values[8] = {Int64GetDatum(job->job_id), Int32GetDatum(job->model_id), Int32GetDatum(step),
						 CStringGetTextDatum(split), Float8GetDatum(loss), Float8GetDatum(lr),
						 Float8GetDatum(gnorm), Float8GetDatum(tps)};
	char    nulls[8] = {' ', ' ', ' ', ' ', isnan(loss) ? 'n' : ' ', ' ', ' ', ' '};

	hw_job_exec_committed(
		"WITH l AS (INSERT INTO headwater.train_log (job_id, model_id, step, split, loss, lr, grad_norm, tokens_per_s) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8)), "
		"h AS (UPDATE headwater.rendezvous SET heartbeat = clock_timestamp() WHERE job_id = $1 AND state = 'running') "
		"UPDATE headwater.job SET step = $3, updated_at = clock_timestamp(), tokens_per_s = $8, "
		"loss = CASE WHEN $4 = 'train' THEN $5 ELSE loss END, "
		"val_metrics = CASE WHEN $4 = 'val' THEN jsonb_build_object('val_loss', $5) ELSE val_metrics END "
		"WHERE job_id = $1",
		8, argtypes, values, nulls);
}

/*
 * ", \"serving\": {task: {checkpoint_id, step, weights, metric, value}}" for each
 * trained task: the checkpoint prediction uses for it (hw_checkpoint_find_task)
 * and its val metric there (metric and value null for a checkpoint without
 * one).  Worker, outside a transaction.
 */
void
hw_train_append_serving(StringInfo result, int32 model_id, HwTask **tasks, int ntasks, const double *weights)
{
	HwAsOwner   as_owner;
	bool        first = true;

	hw_worker_start_transaction();
	PushActiveSnapshot(GetTransactionSnapshot());
	SPI_connect();
	hw_become_owner(&as_owner);
	appendStringInfoString(result, ", \"serving\": {");
	for (int t = 0; t < ntasks; t++)
	{
		HwCheckpointInfo info = {0};

		if (!(weights[t] > 0) || !hw_checkpoint_find_task(model_id, tasks[t]->task_id, -1, HW_WEIGHTS_BEST, &info))
			continue;
		/* what its predictions read (info.average: only where the run kept one) */
		const char *served = hw_weights_name(info.average);
		Oid     argtypes[3] = {INT8OID, INT4OID, TEXTOID};
		Datum   values[3] = {Int64GetDatum(info.checkpoint_id), Int32GetDatum(tasks[t]->task_id),
							 CStringGetTextDatum(served)};
		char   *metric = NULL, *value = NULL;

		if (SPI_execute_with_args("SELECT metric, value FROM headwater.checkpoint_metric "
								  "WHERE checkpoint_id = $1 AND task_id = $2 AND weights = $3",
								  3, argtypes, values, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		{
			metric = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		}
		if (!first)
			appendStringInfoString(result, ", ");
		first = false;
		escape_json(result, tasks[t]->name);
		appendStringInfo(result, ": {\"checkpoint_id\": %lld, \"step\": %d, \"weights\": \"%s\", \"metric\": ",
						 (long long) info.checkpoint_id, info.step, served);
		if (metric)
			escape_json(result, metric);
		else
			appendStringInfoString(result, "null");
		appendStringInfo(result, ", \"value\": %s}",
						 value && strcmp(value, "NaN") != 0 && strcmp(value, "Infinity") != 0 &&
						 strcmp(value, "-Infinity") != 0 ? value : "null");
	}
	appendStringInfoChar(result, '}');
	hw_restore_user(&as_owner);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
}
