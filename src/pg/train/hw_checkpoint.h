/*
 * hw_checkpoint.h: checkpoints of a model (checkpoint.c): one row of
 * headwater.checkpoint (step, sampler position, val metric, best flag,
 * config) plus the full training state (parameters, optimiser moments,
 * step, RNG) in headwater's model-state tables, written in one committed
 * transaction so a crash never leaves half a checkpoint.
 *
 * Lineage: every checkpoint belongs to one training run from scratch, named
 * by the job that started it (headwater.checkpoint.lineage, also recorded on
 * headwater.job when a job starts training).  A job resumes the run of the
 * newest job that started training, so options => '{"restart": true}' makes
 * every older run ineligible; prediction uses the best checkpoint of the
 * newest run that has checkpoints (the previous run's until a restarted one
 * writes its first); is_best marks the best of each run by the mixed val
 * loss.  Per task, headwater.checkpoint_metric holds each validated
 * checkpoint's own metric for every trained task -- twice when the run
 * keeps a parameter average: on the last parameters and on the average
 * (column weights) -- and a task is served from the (checkpoint, weights)
 * of that newest run with its best metric (higher auroc or accuracy, lower
 * mae); is_best only where the task has no metric row.
 */
#ifndef HW_CHECKPOINT_H
#define HW_CHECKPOINT_H

#include "postgres.h"

#include "core/model.h"
#include "core/sampler.h"
#include "core/settings.h"

typedef struct HwCheckpointInfo
{
	int64   checkpoint_id;
	int64   lineage;            /* job id that started its training run */
	int32   step;
	uint64  sampler_position;   /* next train batch number */
	double  best_val;           /* best val loss among its run's checkpoints (inf if none) */
	/* its stored config (settings.h, HW_SETTING_STORED): what it lacks is
	 * the row's absent value (a checkpoint from before the setting), else
	 * today's default; config_present[i] says whether row i was stored,
	 * config_valid[i] whether its value is of its type and range */
	HwSettings config;          /* config.scfg.hidden_names: its training's anchor
								 * names (SPI_palloc'd), NULL when not stored */
	bool    config_present[HW_SETTINGS_MAX];
	bool    config_valid[HW_SETTINGS_MAX];
	/* which weights predictions read (serving): the parameter average when
	 * the task's best validation there was the average's, or when the task
	 * has no validation row (a state without an average serves its
	 * parameters either way); the last parameters when theirs was */
	bool    average;
	bool    has_average;        /* the run kept a parameter average (ema_decay > 0) */
} HwCheckpointInfo;

/* Which weights a caller asks for: the task's choice (its best validation),
 * or those named (rt_predict*'s and rt_evaluate's weights argument). */
typedef enum HwWeightsChoice
{
	HW_WEIGHTS_BEST = -1,
	HW_WEIGHTS_LAST = 0,
	HW_WEIGHTS_AVERAGE = 1
} HwWeightsChoice;

/* One task's validation at a checkpoint (a headwater.checkpoint_metric row). */
typedef struct HwTaskValMetric
{
	int32       task_id;
	const char *metric;         /* auroc | accuracy | mae | mae_days */
	double      value;          /* NaN: undefined (stored as NULL) */
	double      loss;           /* mean val loss of the task on the same rows */
	int32       n_rows;
	bool        average;        /* measured on the parameter average, else the last parameters */
} HwTaskValMetric;

/* The weights' name in headwater.checkpoint_metric, the logs and rt_train's result. */
static inline const char *
hw_weights_name(bool average)
{
	return average ? "average" : "last";
}

/* Whether a higher value of the metric is better (auroc, accuracy). */
bool   hw_val_metric_higher_better(const char *metric);

/* Saves a checkpoint of run `lineage` in its own committed transaction
 * (worker, outside a transaction); returns its id.  val may be NaN; best
 * moves the run's best mark; metrics[nmetrics] (may be 0) are its per-task
 * validation rows. */
int64  hw_checkpoint_save(int64 job_id, int32 model_id, int64 lineage, HwModel *m, uint64 sampler_position,
						  double val, bool best, const HwSamplerConfig *scfg, const char *preset,
						  const HwTaskValMetric *metrics, int nmetrics);

/* Caller connected to SPI (as owner).  checkpoint_id >= 0: that one;
 * -1 (serving): the best of the newest run that has checkpoints, else its
 * latest; -2 (resume point): the latest of the current run (that of the
 * newest job that started training).  False when none. */
bool   hw_checkpoint_find(int32 model_id, int64 checkpoint_id, HwCheckpointInfo *info);

/* The same for one task: with checkpoint_id -1, the checkpoint of the newest
 * run with the task's best val metric (headwater.checkpoint_metric), else
 * as hw_checkpoint_find; info->average says which of its weights had it
 * (at a given checkpoint_id too).  task_id 0: no task (hw_checkpoint_find;
 * average true).  weights HW_WEIGHTS_LAST/AVERAGE: only those weights'
 * metric rows rank the checkpoints, and info->average is what was asked
 * (the caller checks info->has_average). */
bool   hw_checkpoint_find_task(int32 model_id, int32 task_id, int64 checkpoint_id, HwWeightsChoice weights,
							   HwCheckpointInfo *info);

/* Caller in SPI (as owner): the serialized training state, allocated in the
 * caller's context (SPI_palloc), so it survives SPI_finish. */
uint8 *hw_checkpoint_load_state(int64 checkpoint_id, size_t *len);

/* The sampler settings the checkpoint was trained with. */
void   hw_checkpoint_sampler_config(const HwCheckpointInfo *info, HwSamplerConfig *cfg);

#endif
