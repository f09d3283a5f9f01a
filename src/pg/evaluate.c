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

#include "hw_pg.h"
#include "hw_serving.h"
#include "metrics.h"

typedef struct MetricRow { const char *name; double model; double baseline; } MetricRow;

/* The truth of seed i as the model's target index (categorical). */
static int32
truth_category(const HwTask *task, uint32 i)
{
	double v = task->target[i];
	return task->kind == HW_TASK_QUERY ? (int32) v : (int32) v - task->cat_base;
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
	HwError err = {0};
	int     t;

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

	HwServing *s = hw_serving_get(task_ref, checkpoint, hw_weights_arg(fcinfo, 3, task_ref), &t);
	const HwTask *task = s->tasks[t];

	/* the metrics aggregate over every row of the split, hidden ones too:
	 * a role that row-level security restricts on the anchor table may not
	 * read them */
	if (OidIsValid(hw_task_anchor_rls(task->task_id)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not evaluate task \"%s\": row-level security restricts the rows "
						"of its anchor table \"%s\"", GetUserNameFromId(GetUserId(), false), task_ref,
						s->snap->tables[task->anchor_table].name),
				 errdetail("Metrics are computed over every row of the split, including rows the role cannot see."),
				 errhint("The model's owner (or a role that row-level security does not restrict) runs rt_evaluate; "
						 "rt_predict_table predicts the rows you can see.")));
	uint32  n;
	const uint32_t *idx = hw_sampler_shard(s->sampler, t, split, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("task \"%s\" has no rows in its %s split", task_ref, split_name),
				 errhint("Splits are assigned by hash with ratios 0.8/0.1/0.1; small tasks may leave a split empty.")));

	/* model outputs per evaluated seed */
	float  *p_null = palloc(sizeof(float) * n);
	float  *value = palloc(sizeof(float) * n);
	int32  *label = palloc(sizeof(int32) * n);
	double *prob_true = palloc(sizeof(double) * n);
	int     maxb = s->scfg.batch_size;

	HwServingOutput *o = palloc(sizeof(HwServingOutput) * maxb);
	hw_serving_set_wide(s, true);
	PG_TRY();
	{
	for (uint32 off = 0; off < n; off += maxb)
	{
		int     nb = (int) Min((uint32) maxb, n - off);
		HwBatch *b = NULL;

		if (hw_sampler_seed_batch(s->sampler, t, idx + off, nb, &b, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "sampling the evaluation rows");
		hw_serving_eval_batch(s, b, o);
		for (int i = 0; i < nb; i++)
		{
			p_null[off + i] = o[i].p_null;
			prob_true[off + i] = o[i].value;
			value[off + i] = o[i].value;
			label[off + i] = o[i].label;
			if (o[i].probs)
				pfree(o[i].probs);
		}
		CHECK_FOR_INTERRUPTS();
	}
	}
	PG_FINALLY();
	{
		hw_serving_set_wide(s, false);
	}
	PG_END_TRY();

	/* train-split statistics for the baselines */
	double  train_mean = 0, train_n = 0, train_pos = 0;
	int32   K = (int32) Max(1, task->cat_count);
	double *train_counts = palloc0(sizeof(double) * K);
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
			if (c >= 0 && c < K)
				train_counts[c]++;
		}
	}
	train_mean = train_n > 0 ? train_mean / train_n : 0;
	double train_var = 0;
	for (uint32 i = 0; i < task->nseeds; i++)
		if (task->split[i] == HW_SPLIT_TRAIN && !task->target_null[i])
			train_var += (task->target[i] - train_mean) * (task->target[i] - train_mean);
	double train_std = train_n > 1 ? sqrt(train_var / (train_n - 1)) : 1;

	/* evaluated rows with a non-NULL truth */
	int64   m = 0, nulls_right = 0, n_null_truth = 0;
	for (uint32 j = 0; j < n; j++)
	{
		bool tn = task->target_null[idx[j]] != 0;
		n_null_truth += tn;
		nulls_right += tn == (p_null[j] > 0.5);
		m += !tn;
	}

	MetricRow rows[8];
	int     nrows = 0;

	if (m > 0)
	{
		switch (task->target_stype)
		{
			case HW_ST_BOOLEAN:
			{
				uint8  *y = palloc(m);
				double *p = palloc(sizeof(double) * m), *pb = palloc(sizeof(double) * m);
				HwBinaryMetrics mm, bm;
				int64 k = 0;
				double base = train_n > 0 ? train_pos / train_n : 0.5;
				for (uint32 j = 0; j < n; j++)
					if (!task->target_null[idx[j]])
					{
						y[k] = task->target[idx[j]] != 0;
						p[k] = prob_true[j];
						pb[k] = base;
						k++;
					}
				if (hw_metrics_binary(y, p, m, &mm, &err) != HW_OK || hw_metrics_binary(y, pb, m, &bm, &err) != HW_OK)
					hw_pg_raise_core_error(&err, "metrics");
				rows[nrows++] = (MetricRow) {"auroc", mm.auroc, bm.auroc};
				rows[nrows++] = (MetricRow) {"average_precision", mm.avg_precision, bm.avg_precision};
				rows[nrows++] = (MetricRow) {"accuracy", mm.accuracy, bm.accuracy};
				rows[nrows++] = (MetricRow) {"f1", mm.f1, bm.f1};
				rows[nrows++] = (MetricRow) {"log_loss", mm.log_loss, bm.log_loss};
				break;
			}
			case HW_ST_CATEGORICAL:
			{
				int32 *y = palloc(sizeof(int32) * m), *pr = palloc(sizeof(int32) * m), *pb = palloc(sizeof(int32) * m);
				HwCategoricalMetrics mm, bm;
				int32 majority = 0;
				int64 k = 0;
				for (int32 c = 1; c < K; c++)
					if (train_counts[c] > train_counts[majority])
						majority = c;
				for (uint32 j = 0; j < n; j++)
					if (!task->target_null[idx[j]])
					{
						y[k] = truth_category(task, idx[j]);
						pr[k] = Min(label[j], K - 1);
						pb[k] = majority;
						k++;
					}
				if (hw_metrics_categorical(y, pr, m, K, &mm, &err) != HW_OK ||
					hw_metrics_categorical(y, pb, m, K, &bm, &err) != HW_OK)
					hw_pg_raise_core_error(&err, "metrics");
				rows[nrows++] = (MetricRow) {"accuracy", mm.accuracy, bm.accuracy};
				rows[nrows++] = (MetricRow) {"macro_f1", mm.macro_f1, bm.macro_f1};
				break;
			}
			case HW_ST_NUMERICAL:
			case HW_ST_TIMESTAMP:
			{
				double *y = palloc(sizeof(double) * m), *pr = palloc(sizeof(double) * m), *pb = palloc(sizeof(double) * m);
				HwRegressionMetrics mm, bm;
				int64 k = 0;
				bool ts = task->target_stype == HW_ST_TIMESTAMP;
				for (uint32 j = 0; j < n; j++)
					if (!task->target_null[idx[j]])
					{
						y[k] = task->target[idx[j]];
						pr[k] = ts ? value[j] * s->snap->ts_std_us + s->snap->ts_mean_us
							: hw_task_decode_numerical(task, value[j], NULL);
						pb[k] = train_mean;
						k++;
					}
				if (hw_metrics_regression(y, pr, m, &mm, &err) != HW_OK ||
					hw_metrics_regression(y, pb, m, &bm, &err) != HW_OK)
					hw_pg_raise_core_error(&err, "metrics");
				if (ts)
					rows[nrows++] = (MetricRow) {"mae_days", mm.mae / 86400e6, bm.mae / 86400e6};
				else
				{
					rows[nrows++] = (MetricRow) {"mae", mm.mae, bm.mae};
					rows[nrows++] = (MetricRow) {"rmse", mm.rmse, bm.rmse};
					rows[nrows++] = (MetricRow) {"r2", mm.r2, bm.r2};
					rows[nrows++] = (MetricRow) {"mae_over_std", mm.mae / train_std, bm.mae / train_std};
				}
				break;
			}
		}
	}
	if (n_null_truth > 0)
		rows[nrows++] = (MetricRow) {"null_accuracy", (double) nulls_right / n,
									 (double) (n - n_null_truth) / n};

	for (int r = 0; r < nrows; r++)
	{
		Datum   v[4] = {CStringGetTextDatum(rows[r].name), Float8GetDatum(rows[r].model),
						Float8GetDatum(rows[r].baseline), Int64GetDatum(rows[r].name[0] == 'n' && strcmp(rows[r].name, "null_accuracy") == 0 ? n : m)};
		bool    vn[4] = {false, isnan(rows[r].model), isnan(rows[r].baseline), false};
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, vn);
	}
	return (Datum) 0;
}
