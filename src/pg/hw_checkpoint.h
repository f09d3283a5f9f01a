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
 * writes its first); is_best marks the best of each run.
 */
#ifndef HW_CHECKPOINT_H
#define HW_CHECKPOINT_H

#include "postgres.h"

#include "model.h"
#include "sampler.h"

typedef struct HwCheckpointInfo
{
	int64   checkpoint_id;
	int64   lineage;            /* job id that started its training run */
	int32   step;
	uint64  sampler_position;   /* next train batch number */
	double  best_val;           /* best val loss among its run's checkpoints (inf if none) */
	int32   batch_size, seq_len, max_rows, child_width;
	int32   child_sampling, recent_children;    /* HwChildSampling; -1 = half the width */
	bool    key_cells;
	uint64  seed;
} HwCheckpointInfo;

/* Saves a checkpoint of run `lineage` in its own committed transaction
 * (worker, outside a transaction); returns its id.  val may be NaN; best
 * moves the run's best mark. */
int64  hw_checkpoint_save(int64 job_id, int32 model_id, int64 lineage, HwModel *m, uint64 sampler_position,
						  double val, bool best, const HwSamplerConfig *scfg, const char *preset);

/* Caller connected to SPI (as owner).  checkpoint_id >= 0: that one;
 * -1 (serving): the best of the newest run that has checkpoints, else its
 * latest; -2 (resume point): the latest of the current run (that of the
 * newest job that started training).  False when none. */
bool   hw_checkpoint_find(int32 model_id, int64 checkpoint_id, HwCheckpointInfo *info);

/* Caller in SPI (as owner): the serialized training state, allocated in the
 * caller's context (SPI_palloc), so it survives SPI_finish. */
uint8 *hw_checkpoint_load_state(int64 checkpoint_id, size_t *len);

/* The resume point's (-2 above) state and info, or NULL when there is none. */
uint8 *hw_checkpoint_load_latest(int32 model_id, HwCheckpointInfo *info, size_t *len);

/* The sampler settings the checkpoint was trained with. */
void   hw_checkpoint_sampler_config(const HwCheckpointInfo *info, HwSamplerConfig *cfg);

#endif
