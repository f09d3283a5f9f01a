/*
 * task.h: a prediction task in memory (docs/sampler.md, "Tasks"): its seeds
 * (anchor row, observation time, target), target statistics, the split of
 * each seed, rank shards, and the byte form in which src/pg persists seeds.
 * Plain C, no PostgreSQL.
 *
 * Kinds
 *   cell   predict column `target_col` of `anchor_table`: one seed per row of
 *          the anchor table, obs time = the row's own time (HW_NO_CUTOFF when
 *          the table has no time column or the row's time is NULL); the
 *          target cell is the anchor row's own cell, masked.
 *   query  seeds come from a SQL query; each seed is a row of the task's
 *          *virtual task table* with two virtual columns (observation time,
 *          target) and one FK to the anchor row.
 *
 * Target values (HwTask.target[] holds the raw value, the sampler derives
 * the model's value):
 *   numerical   raw value; z-scored with target_mean/target_std.  Query
 *               tasks: mean/std over the train split's non-NULL targets.
 *               Cell tasks: the column's own mean/std (the snapshot already
 *               stores that z-score, and the same column is an input
 *               feature of other rows, so one normalisation).
 *   boolean     0 or 1
 *   categorical category index.  Cell task: the global category index
 *               (column block).  Query task: 0..ncat_own-1 within the task's
 *               own block (cat_values[] holds the strings).
 *   timestamp   epoch µs (exact in a double up to year 2255)
 *   NULL        target_null[i] = 1 (target[i] = 0)
 *
 * Splits (docs/sampler.md, "Splits and shards"), fixed forever:
 *   bucket = hw_split_hash(hw_hash_key_text(task name), anchor key, split_seed) % 1000
 *   train if bucket < round(1000*r_train), val if < round(1000*(r_train+r_val)),
 *   else test.  anchor key = the anchor row's PK key hash (stable across
 *   rt_refresh; falls back to the anchor table-local row number when the table
 *   has no PK).  All seeds of one anchor share a split.  The split seed and
 *   ratios are task options, so a task's split never depends on who samples.
 *   Caller-given splits (split_method): a query task's `split` column
 *   (column), or obs time cutoffs (time): train if obs < val_from, val if
 *   obs < test_from, else test.  Their split[] is stored with the seeds.
 * Shards (section 2c): within a split, seeds in seed-index order, seed number
 *   i of that list belongs to rank i % world_size.
 *
 * Global index layout of the training tables (hw_training_tables):
 *   columns     [0, snap->ncolumns)                  the snapshot's columns
 *               then, for each task in model order (the order of the tasks
 *               array; src/pg orders by task_id), query tasks get 2 ids:
 *               col_base+0 = its observation time column, col_base+1 = its
 *               target column; cell tasks get none (col_base = -1).
 *   categories  [0, snap->ncat)                      the snapshot's blocks
 *               then, for each query task with a categorical target in model
 *               order, its own block [cat_base, cat_base + ncat_own).
 * hw_task_layout() computes col_base / cat_base; the sampler and
 * hw_training_tables both call it, so they always agree.  Adding a task
 * appends ids; dropping one shifts the ids of later tasks (retrain).
 */
#ifndef HW_TASK_H
#define HW_TASK_H

#include <math.h>

#include "core/hw_common.h"
#include "core/snapshot.h"

typedef enum HwTaskKind
{
	HW_TASK_CELL = 0,
	HW_TASK_QUERY = 1
} HwTaskKind;

typedef enum HwSplit
{
	HW_SPLIT_TRAIN = 0,
	HW_SPLIT_VAL = 1,
	HW_SPLIT_TEST = 2
} HwSplit;

#define HW_N_SPLITS 3

const char *hw_split_name(int split);         /* "train", "val", "test" */
int         hw_split_from_name(const char *s); /* -1 if unknown */

/* How a task's seeds were split (HwTask.split_method). */
typedef enum HwSplitMethod
{
	HW_SPLIT_BY_HASH = 0,       /* the fixed split hash (default) */
	HW_SPLIT_BY_COLUMN = 1,     /* the query's `split` column: split[] set by the caller */
	HW_SPLIT_BY_TIME = 2        /* obs time against split_val_from_us / split_test_from_us */
} HwSplitMethod;

const char *hw_split_method_name(int method);  /* "hash", "column", "time" */

typedef struct HwTask
{
	char     *name;
	int32_t   task_id;          /* headwater.task.task_id (0 in tests) */
	int8_t    kind;             /* HwTaskKind */
	int32_t   anchor_table;     /* table index in the snapshot */
	int32_t   target_col;       /* cell task: column index in anchor_table; query: -1 */
	int8_t    target_stype;     /* numerical, timestamp, boolean or categorical */
	char     *target_name;      /* name of the target (column of the query or table) */

	/* Options */
	uint64_t  split_seed;       /* default 0 */
	double    split_ratio[HW_N_SPLITS];  /* default 0.8, 0.1, 0.1 */
	bool      label_history;    /* query tasks: default true; cell tasks: false */
	int32_t   history_max;      /* most label-history rows per sequence (default 16) */
	int8_t    split_method;     /* HwSplitMethod, default hash */
	int64_t   split_val_from_us;   /* time split: obs < val_from -> train */
	int64_t   split_test_from_us;  /* time split: val_from <= obs < test_from -> val, else test */
	int8_t    num_loss;         /* HwNumLoss of a numerical target (default MAE) */
	bool      target_integer;   /* numerical: every train label an integer (hw_task_assign_splits) */
	double    target_min;       /* target_integer: the smallest train label */
	int32_t   target_span;      /* target_integer: largest - smallest train label (>= 1) */

	/* Target statistics (numerical: z-score; others: informational) */
	double    target_mean, target_std;
	int64_t   target_nulls;

	/* Query task with a categorical target: its own category block. */
	uint32_t  ncat_own;
	char    **cat_values;       /* [ncat_own] */
	uint16_t *cat_emb_own;      /* [ncat_own, d_text] f16, "<target> is <value>" */
	/* Query task: embeddings of its two virtual column names, [2, d_text] f16:
	 * "observation time of <task>", "<target> of <task>". */
	uint16_t *vcol_emb;
	int32_t   d_text;

	/* Seeds, struct of arrays [nseeds], in materialisation order. */
	uint32_t  nseeds;
	uint32_t *anchor_row;       /* global row id in the snapshot */
	uint64_t *anchor_key;       /* PK key hash (or local row number, see above) */
	int64_t  *obs_time_us;      /* HW_NO_CUTOFF = no cutoff */
	double   *target;
	uint8_t  *target_null;
	/* When each label became known (epoch µs, >= obs_time_us): label history
	 * shows seed i to a sequence observed at T only if obs_time_us[i] < T and
	 * label_time_us[i] <= T, in training and at prediction alike.  NULL (the
	 * default): label_time = obs_time.  HW_NO_CUTOFF: never shown. */
	int64_t  *label_time_us;

	/* Derived (hw_task_assign_splits): split of each seed. */
	uint8_t  *split;            /* [nseeds] HwSplit */
	uint32_t  split_count[HW_N_SPLITS];

	/* Derived (hw_task_layout) */
	int32_t   col_base;         /* first virtual column id, -1 for cell tasks */
	int32_t   cat_base;         /* first id of the own category block, or cat block of the column */
	uint32_t  cat_count;        /* K of the target's category block (categorical only) */

	/* Derived (hw_task_build_history): seeds of one anchor sorted by obs time */
	uint32_t *hist_order;       /* [nseeds] seed indices sorted by (anchor_row, obs_time, index) */
	uint32_t *hist_pos;         /* [nseeds] position of seed i in hist_order */
} HwTask;

/* An empty task with default options (malloc'd; name copied). */
HwTask *hw_task_new(const char *name, int kind, HwError *err);
void    hw_task_free(HwTask *task);

/* Allocates the seed arrays for n seeds (zeroed); replaces existing ones. */
int hw_task_alloc_seeds(HwTask *task, uint32_t n, HwError *err);

/* Cell task: fills seeds from the snapshot, one per row of anchor_table
 * (target_col must be a numerical, timestamp, boolean or categorical column).
 * Sets target_stype, target stats, anchor keys, then assigns splits. */
int hw_task_build_cell(HwTask *task, const HwSnapshot *snap, int32_t anchor_table,
					   int32_t target_col, HwError *err);

/* The fixed split hash (see top of file). */
uint64_t hw_split_hash(uint64_t task_hash, uint64_t anchor_key, uint64_t split_seed);
int      hw_split_of(const HwTask *task, uint64_t anchor_key);

/* Fills task->split and split_count.  hash: from anchor_key, split_seed and
 * ratios; time: from obs_time_us and the two cutoffs (a seed without a cutoff
 * is an error); column: split[] was filled by the caller, only counted. */
int hw_task_assign_splits(HwTask *task, HwError *err);

/* Numerical query tasks: target_mean/std over the train split's non-NULL
 * targets (std 0 or no values -> 1); counts target_nulls.  Call after
 * hw_task_assign_splits. */
void hw_task_compute_stats(HwTask *task);

/* Seed indices of `split` owned by `rank` (i % world_size == rank over the
 * split's seeds in index order).  *out is malloc'd (may be NULL when n = 0). */
int hw_task_shard(const HwTask *task, int split, int rank, int world_size,
				  uint32_t **out, uint32_t *n, HwError *err);

/* Model value of seed i's target for the sampler: numerical z-score. */
static inline float
hw_task_target_z(const HwTask *task, uint32_t i)
{
	return (float) ((task->target[i] - task->target_mean) / (task->target_std > 0 ? task->target_std : 1.0));
}

/* Whether task's predictions are rounded to integers: a numerical target
 * whose train labels are all integers (counts, ratings), fitted with the MAE
 * loss.  That loss fits the median, and the median of integer labels is an
 * integer: the expected absolute error is linear between two integers, so
 * one of them is never worse than any value between (a mean-fitting loss,
 * huber, keeps its values). */
static inline bool
hw_task_rounds_predictions(const HwTask *task)
{
	return task->target_stype == HW_ST_NUMERICAL && task->target_integer &&
		(task->num_loss == HW_NUM_LOSS_MAE || task->num_loss == HW_NUM_LOSS_ORDINAL);
}

/* The thresholds of the ordinal loss for task (HwBatch.ord_levels), 0 when
 * it does not use it.  It does when its loss is "ordinal" and its train
 * labels are integers spanning at most HW_ORD_LEVELS + 1 values (a count,
 * a rating): the model then learns P(label > min + k) for each k below the
 * span, by a logistic loss each, and predicts the median of that
 * distribution (model.c).  Why it exists: an MAE regression's gradient is
 * the sign of the error, the same for every row on one side of the median;
 * the thresholds' losses give each row a gradient as large as its
 * surprise, and their median is still what MAE rewards.  rt_create_task
 * stores "ordinal" as the loss of a numerical task that names none when
 * its train labels allow it (src/pg/task/task_sql.c; docs/model.md, "Ordinal
 * loss": it beat the regression on the shop's orders_30d, pagila's
 * rentals_21d and the demo's rating); a task stored without a loss
 * keeps the MAE regression. */
static inline int
hw_task_ordinal_levels(const HwTask *task)
{
	if (task->target_stype != HW_ST_NUMERICAL || !task->target_integer ||
		task->target_span < 1 || task->target_span > HW_ORD_LEVELS)
		return 0;
	return task->num_loss == HW_NUM_LOSS_ORDINAL ? task->target_span : 0;
}

/* The loss task trains with: its num_loss, or ORDINAL where that applies. */
static inline int
hw_task_effective_loss(const HwTask *task)
{
	return hw_task_ordinal_levels(task) > 0 ? HW_NUM_LOSS_ORDINAL
		: task->num_loss == HW_NUM_LOSS_ORDINAL ? HW_NUM_LOSS_MAE : task->num_loss;
}

/* z-score -> ordinal level: level = nearbyint(z * *scale + *shift). */
static inline void
hw_task_ordinal_map(const HwTask *task, float *scale, float *shift)
{
	*scale = (float) (task->target_std > 0 ? task->target_std : 1.0);
	*shift = (float) (task->target_mean - task->target_min);
}

/* The prediction of a numerical task from the model's z-score z: the value
 * in the target's units, rounded when hw_task_rounds_predictions;
 * *unrounded (may be NULL) gets the value before rounding. */
static inline double
hw_task_decode_numerical(const HwTask *task, float z, double *unrounded)
{
	double  v = (double) z * (task->target_std > 0 ? task->target_std : 1.0) + task->target_mean;

	if (unrounded)
		*unrounded = v;
	/* + 0.0: a negative value rounded to zero is 0, not -0 */
	return hw_task_rounds_predictions(task) ? nearbyint(v) + 0.0 : v;
}

/* Re-resolves anchor_row against a (possibly refreshed) snapshot by
 * anchor_key; seeds whose anchor no longer exists are removed (their count
 * goes to *ndropped).  Tables without a PK keep row numbers < nrows. */
int hw_task_resolve_rows(HwTask *task, const HwSnapshot *snap, uint32_t *ndropped, HwError *err);

/* Label-history index (hist_order / hist_pos). */
int hw_task_build_history(HwTask *task, HwError *err);

/* When seed i's label became known (obs time when label_time_us is NULL). */
static inline int64_t
hw_task_label_time(const HwTask *task, uint32_t i)
{
	return task->label_time_us ? task->label_time_us[i] : task->obs_time_us[i];
}

/* Seed i's label is history for a sequence observed at obs: observed
 * strictly before and known by then.  No cutoff: no history. */
static inline bool
hw_task_label_visible(const HwTask *task, uint32_t i, int64_t obs)
{
	return obs != HW_NO_CUTOFF && task->obs_time_us[i] < obs && hw_task_label_time(task, i) <= obs;
}

/* Sets label_time_us (copied, n = nseeds; NULL clears it).  Every label time
 * must be >= its seed's obs time (or HW_NO_CUTOFF); seeds without a cutoff
 * accept any.  HW_ERR_INVALID naming the first bad seed otherwise. */
int hw_task_set_label_times(HwTask *task, const int64_t *label_time_us, HwError *err);

/*
 * Byte form of a task's seeds (what src/pg stores in headwater.task_seed):
 *   "HWTS" u32 version(1) u32 nseeds u32 reserved,
 *   then arrays: anchor_key u64[n], anchor_row u32[n], obs_time_us i64[n],
 *   target f64[n], target_null u8[n]; little-endian.  The reserved u32 is
 *   a flag word: bit 0 = split u8[n] follows (caller-given splits; hash
 *   splits store none and are recomputed, so their bytes are unchanged);
 *   bit 1 = label_time_us i64[n] follows (after the splits; tasks without
 *   label times store none, so seeds stored before label times load as
 *   they were).
 * The task's metadata (kind, stats, categories, embeddings) is stored by
 * src/pg in ordinary columns.
 */
int hw_task_seeds_serialize(const HwTask *task, uint8_t **out, size_t *len, HwError *err);
int hw_task_seeds_deserialize(HwTask *task, const uint8_t *buf, size_t len, HwError *err);

/* Sets col_base / cat_base / cat_count of every task (layout at top). */
int hw_task_layout(const HwSnapshot *snap, HwTask *const *tasks, int ntasks, HwError *err);

/*
 * The model's full column-name and category embedding tables (f16,
 * row-major [n, d_text], malloc'd): the snapshot's, then each task's virtual
 * columns and own categories, in the layout above.  Calls hw_task_layout.
 * A query task without vcol_emb / cat_emb_own gets zero rows (the caller
 * should have embedded them at task creation).
 */
int hw_training_tables(const HwSnapshot *snap, HwTask *const *tasks, int ntasks,
					   uint16_t **col_emb, int32_t *ncols,
					   uint16_t **cat_emb, uint32_t *ncat, HwError *err);

#endif /* HW_TASK_H */
