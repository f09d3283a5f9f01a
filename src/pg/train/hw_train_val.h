/*
 * hw_train_val.h: measuring and reporting inside the training worker
 * (train_val.c), for the loop (train_loop.c).  Only the worker's main
 * thread calls these.
 */
#ifndef HW_TRAIN_VAL_H
#define HW_TRAIN_VAL_H

#include "postgres.h"

#include "lib/stringinfo.h"

#include "pg/train/hw_checkpoint.h"
#include "pg/train/hw_train.h"
#include "core/model.h"
#include "core/sampler.h"
#include "core/task.h"

/* The mean loss over val batches 0..nbatches-1 (the same batches every
 * time, so the numbers are comparable); NaN without val seeds. */
double hw_train_validate(HwModel *model, HwSampler *sampler, int nbatches);

/* Each trained task (weights[t] > 0) on a fixed sample of at most val_rows
 * of its val split: its own metric and mean loss into out[] (one per task
 * evaluated, on the average's parameters when `average`); returns how many. */
int    hw_train_validate_tasks(HwModel *model, HwSampler *vs, const HwSnapshot *snap, HwTask **tasks,
							   int ntasks, const double *weights, int val_rows, HwTaskValMetric *out,
							   bool average);

/* The per-task validation rows of headwater.train_log and the job's
 * val_metrics; the same as a status line (relayed as a NOTICE). */
void   hw_train_log_task_val(HwJobShared *job, int step, HwTask **tasks, int ntasks,
							 const HwTaskValMetric *vm, int nvm);
void   hw_train_report_task_val(HwJobShared *job, int step, HwTask **tasks, int ntasks,
								const HwTaskValMetric *vm, int nvm);

/* One row of headwater.train_log (split "train" or "val"), the job row's
 * progress and the ranks' heartbeat, committed. */
void   hw_train_log_row(HwJobShared *job, int step, const char *split, double loss, double lr,
						double gnorm, double tps);

/* ", \"serving\": {task: {checkpoint_id, step, weights, metric, value}}" for
 * each trained task (weights[t] > 0).  Worker, outside a transaction. */
void   hw_train_append_serving(StringInfo result, int32 model_id, HwTask **tasks, int ntasks,
							   const double *weights);

#endif
