/*
 * evaluate.c: rt_evaluate(task, split, checkpoint): the task's metrics on a
 * split, each beside the trivial baseline on the same rows:
 *   boolean      AUROC, average precision, accuracy, F1, log loss
 *                (baseline: the train split's positive rate for every row)
 *   categorical  accuracy, macro-F1 (baseline: the train split's majority class)
 *   numerical    MAE, RMSE, R^2, MAE / std of train targets (baseline: train mean)
 *   timestamp    MAE in days (baseline: train mean time)
 * plus null_accuracy when the split has NULL targets.  Rows whose target is
 * NULL are left out of the type metrics (their loss is the null head's).
 * A caller that row-level security restricts on the task's anchor table is
 * refused (42501): the metrics summarise rows it may not see.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "pg/base/hw_pg.h"
#include "pg/serve/hw_serving.h"
#include "core/metrics.h"

typedef struct MetricRow { const char *name; double model; double baseline; } MetricRow;

/* The truth of seed i as the model's target index (categorical). */
static int32
truth_category(const HwTask *task, uint32 i)
{
	double v = task->target[i];
	return task->kind == HW_TASK_QUERY ? (int32) v : (int32) v - task->cat_base;
}

/* What the steps of rt_evaluate share: the task, the split's seeds, the
 * model's outputs on them and the train split's statistics. */
typedef struct EvalRun
{
	HwServing *s;
	int     t;                  /* the task's index in s */
	const HwTask *task;
	const uint32_t *idx;        /* idx[n]: the split's seeds */
	uint32  n;
	int64   m;                  /* of them, those with a non-NULL truth */
	/* model outputs per evaluated seed, [n] each */
	float  *p_null;
	float  *value;
	int32  *label;
	double *prob_true;
	/* train-split statistics for the baselines */
	double  train_mean, train_n, train_pos, train_std;
	int32   K;                  /* categories (at least 1) */
	double *train_counts;       /* [K] */
	MetricRow rows[8];
	int     nrows;
} EvalRun;

/*
 * The metrics aggregate over every row of the split, hidden ones too: a role
 * that row-level security restricts on the anchor table may not read them.
 */
static void
refuse_rls_restricted(const EvalRun *e, const char *task_ref)
{
	if (OidIsValid(hw_task_anchor_rls(e->task->task_id)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not evaluate task \"%s\": row-level security restricts the rows "
						"of its anchor table \"%s\"", GetUserNameFromId(GetUserId(), false), task_ref,
						e->s->snap->tables[e->task->anchor_table].name),
				 errdetail("Metrics are computed over every row of the split, including rows the role cannot see."),
				 errhint("The model's owner (or a role that row-level security does not restrict) runs rt_evaluate; "
						 "rt_predict_table predicts the rows you can see.")));
}

/* The model's outputs on every seed of the split, a batch at a time (the
 * serving state is wide only while the batches run, also on ERROR). */
static void
run_model_on_split(EvalRun *e)
{
	HwServing *s = e->s;
	uint32 n = e->n;
	int maxb = s->scfg.batch_size;
	HwServingOutput *o = palloc(sizeof(HwServingOutput) * maxb);
	HwError err = {0};

	e->p_null = palloc(sizeof(float) * n);
	e->value = palloc(sizeof(float) * n);
	e->label = palloc(sizeof(int32) * n);
	e->prob_true = palloc(sizeof(double) * n);
	hw_serving_set_wide(s, true);
	hw_serving_forward_begin(hw_serving_wide_threads());
	PG_TRY();
	{
		for (uint32 off = 0; off < n; off += maxb)
		{
			int nb = (int) Min((uint32) maxb, n - off);
			HwBatch *b = NULL;

			if (hw_sampler_seed_batch(s->sampler, e->t, e->idx + off, nb, &b, &err) != HW_OK)
				hw_pg_raise_core_error(&err, "sampling the evaluation rows");
			hw_serving_eval_batch(s, b, o);
			for (int i = 0; i < nb; i++)
			{
				e->p_null[off + i] = o[i].p_null;
				e->prob_true[off + i] = o[i].value;
				e->value[off + i] = o[i].value;
				e->label[off + i] = o[i].label;
				if (o[i].probs)
					pfree(o[i].probs);
			}
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_FINALLY();
	{
		hw_serving_set_wide(s, false);
		hw_serving_forward_end();
	}
	PG_END_TRY();
}

/* Train-split mean, positive count, std and class counts, for the baselines. */
static void
train_split_stats(EvalRun *e)
{
	const HwTask *task = e->task;
	double train_mean = 0, train_n = 0, train_pos = 0;

	e->K = (int32) Max(1, task->cat_count);
	e->train_counts = palloc0(sizeof(double) * e->K);
	for (uint32 i = 0; i < task->nseeds; i++)
	{
		if (task->split[i] != HW_SPLIT_TRAIN || task->target_null[i])
			continue;
		train_n++;
		train_mean += task->target[i];
		train_pos += task->target[i] != 0;
		if (task->target_stype == HW_ST_CATEGORICAL)
		{
			int32 c = truth_category(task, i);
			if (c >= 0 && c < e->K)
				e->train_counts[c]++;
		}
	}
	train_mean = train_n > 0 ? train_mean / train_n : 0;
	double train_var = 0;
	for (uint32 i = 0; i < task->nseeds; i++)
		if (task->split[i] == HW_SPLIT_TRAIN && !task->target_null[i])
			train_var += (task->target[i] - train_mean) * (task->target[i] - train_mean);
	e->train_mean = train_mean;
	e->train_n = train_n;
	e->train_pos = train_pos;
	e->train_std = train_n > 1 ? sqrt(train_var / (train_n - 1)) : 1;
}

static void
add_metric(EvalRun *e, const char *name, double model, double baseline)
{
	e->rows[e->nrows++] = (MetricRow) {name, model, baseline};
}

/* Boolean: against the train split's positive rate for every row. */
static void
boolean_metrics(EvalRun *e)
{
	const HwTask *task = e->task;
	int64 m = e->m;
	uint8  *y = palloc(m);
	double *p = palloc(sizeof(double) * m), *pb = palloc(sizeof(double) * m);
	HwBinaryMetrics mm, bm;
	HwError err = {0};
	int64 k = 0;
	double base = e->train_n > 0 ? e->train_pos / e->train_n : 0.5;

	for (uint32 j = 0; j < e->n; j++)
		if (!task->target_null[e->idx[j]])
		{
			y[k] = task->target[e->idx[j]] != 0;
			p[k] = e->prob_true[j];
			pb[k] = base;
			k++;
		}
	if (hw_metrics_binary(y, p, m, &mm, &err) != HW_OK || hw_metrics_binary(y, pb, m, &bm, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "metrics");
	add_metric(e, "auroc", mm.auroc, bm.auroc);
	add_metric(e, "average_precision", mm.avg_precision, bm.avg_precision);
	add_metric(e, "accuracy", mm.accuracy, bm.accuracy);
	add_metric(e, "f1", mm.f1, bm.f1);
	add_metric(e, "log_loss", mm.log_loss, bm.log_loss);
}

/* Categorical: against the train split's majority class. */
static void
categorical_metrics(EvalRun *e)
{
	const HwTask *task = e->task;
	int64 m = e->m;
	int32 K = e->K;
	int32 *y = palloc(sizeof(int32) * m), *pr = palloc(sizeof(int32) * m), *pb = palloc(sizeof(int32) * m);
	HwCategoricalMetrics mm, bm;
	HwError err = {0};
	int32 majority = 0;
	int64 k = 0;

	for (int32 c = 1; c < K; c++)
		if (e->train_counts[c] > e->train_counts[majority])
			majority = c;
	for (uint32 j = 0; j < e->n; j++)
		if (!task->target_null[e->idx[j]])
		{
			y[k] = truth_category(task, e->idx[j]);
			pr[k] = Min(e->label[j], K - 1);
			pb[k] = majority;
			k++;
		}
	if (hw_metrics_categorical(y, pr, m, K, &mm, &err) != HW_OK ||
		hw_metrics_categorical(y, pb, m, K, &bm, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "metrics");
	add_metric(e, "accuracy", mm.accuracy, bm.accuracy);
	add_metric(e, "macro_f1", mm.macro_f1, bm.macro_f1);
}

/* Numerical and timestamp: against the train mean (timestamps in days). */
static void
regression_metrics(EvalRun *e)
{
	const HwTask *task = e->task;
	const HwSnapshot *snap = e->s->snap;
	int64 m = e->m;
	double *y = palloc(sizeof(double) * m), *pr = palloc(sizeof(double) * m), *pb = palloc(sizeof(double) * m);
	HwRegressionMetrics mm, bm;
	HwError err = {0};
	int64 k = 0;
	bool ts = task->target_stype == HW_ST_TIMESTAMP;

	for (uint32 j = 0; j < e->n; j++)
		if (!task->target_null[e->idx[j]])
		{
			y[k] = task->target[e->idx[j]];
			pr[k] = ts ? e->value[j] * snap->ts_std_us + snap->ts_mean_us
				: hw_task_decode_numerical(task, e->value[j], NULL);
			pb[k] = e->train_mean;
			k++;
		}
	if (hw_metrics_regression(y, pr, m, &mm, &err) != HW_OK ||
		hw_metrics_regression(y, pb, m, &bm, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "metrics");
	if (ts)
		add_metric(e, "mae_days", mm.mae / 86400e6, bm.mae / 86400e6);
	else
	{
		add_metric(e, "mae", mm.mae, bm.mae);
		add_metric(e, "rmse", mm.rmse, bm.rmse);
		add_metric(e, "r2", mm.r2, bm.r2);
		add_metric(e, "mae_over_std", mm.mae / e->train_std, bm.mae / e->train_std);
	}
}

/* The metric rows: by the target's type over rows with a non-NULL truth,
 * then null_accuracy over all rows when some truths are NULL. */
static void
compute_metrics(EvalRun *e)
{
	const HwTask *task = e->task;
	int64 nulls_right = 0, n_null_truth = 0;

	e->m = 0;
	for (uint32 j = 0; j < e->n; j++)
	{
		bool tn = task->target_null[e->idx[j]] != 0;
		n_null_truth += tn;
		nulls_right += tn == (e->p_null[j] > 0.5);
		e->m += !tn;
	}
	if (e->m > 0)
	{
		switch (task->target_stype)
		{
			case HW_ST_BOOLEAN:
				boolean_metrics(e);
				break;
			case HW_ST_CATEGORICAL:
				categorical_metrics(e);
				break;
			case HW_ST_NUMERICAL:
			case HW_ST_TIMESTAMP:
				regression_metrics(e);
				break;
		}
	}
	if (n_null_truth > 0)
		add_metric(e, "null_accuracy", (double) nulls_right / e->n, (double) (e->n - n_null_truth) / e->n);
}

PG_FUNCTION_INFO_V1(rt_evaluate);
Datum
rt_evaluate(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char   *task_ref;
	char   *split_name = PG_ARGISNULL(1) ? "test" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	int64   checkpoint = PG_ARGISNULL(2) ? -1 : PG_GETARG_INT64(2);
	int     split = hw_split_from_name(split_name);
	EvalRun e = {0};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("task must not be NULL"),
				 errhint("Pass the name given to rt_create_task.")));
	task_ref = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (split < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown split \"%s\"", split_name),
				 errhint("Use 'train', 'val' or 'test'.")));
	if (!PG_ARGISNULL(2) && checkpoint < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint %lld for task \"%s\" is not a checkpoint id", (long long) checkpoint, task_ref),
				 errhint("Checkpoint ids are positive (headwater.checkpoint); NULL evaluates the best checkpoint.")));
	InitMaterializedSRF(fcinfo, 0);

	e.s = hw_serving_get(task_ref, checkpoint, hw_weights_arg(fcinfo, 3, task_ref), &e.t);
	e.task = e.s->tasks[e.t];
	refuse_rls_restricted(&e, task_ref);
	e.idx = hw_sampler_shard(e.s->sampler, e.t, split, &e.n);
	if (e.n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("task \"%s\" has no rows in its %s split", task_ref, split_name),
				 errhint("Splits are assigned by hash with ratios 0.8/0.1/0.1; small tasks may leave a split empty.")));
	run_model_on_split(&e);
	train_split_stats(&e);
	compute_metrics(&e);

	for (int r = 0; r < e.nrows; r++)
	{
		const MetricRow *row = &e.rows[r];
		/* null_accuracy counts every row of the split, the others those with a truth */
		int64 rows_counted = strcmp(row->name, "null_accuracy") == 0 ? e.n : e.m;
		Datum   v[4] = {CStringGetTextDatum(row->name), Float8GetDatum(row->model),
						Float8GetDatum(row->baseline), Int64GetDatum(rows_counted)};
		bool    vn[4] = {false, isnan(row->model), isnan(row->baseline), false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, vn);
	}
	return (Datum) 0;
}
