/*
 * sampler.h: the BFS sampler that turns tasks into TrainingBatches (batch.h,
 * exactly).  Plain C, no PostgreSQL; threads
 * (workers of the core's thread pool, thread_pool.h) touch only the
 * read-only snapshot/tasks and their own scratch.  The implementation is
 * split by concern over sampler*.c (sampler_internal.h lists the files).
 *
 * Typical use (trainer):
 *     HwSamplerConfig cfg;  hw_sampler_config_default(&cfg);
 *     cfg.batch_size = 32; cfg.seq_len = 1024; cfg.seed = 42;
 *     HwSampler *s = hw_sampler_create(snap, tasks, ntasks, &cfg, &err);
 *     for (uint64_t k = start; ...; k++) {
 *         HwBatch *b;  uint32_t seeds[32];
 *         hw_sampler_batch(s, HW_SPLIT_TRAIN, k, &b, seeds, &err);
 *         ... train on b ...;  hw_batch_free(b);
 *     }
 *     hw_sampler_free(s);
 * The snapshot and tasks must outlive the sampler and stay unchanged; the
 * sampler calls hw_task_layout() on them (sets col_base/cat_base) and builds
 * label-history indexes when missing.
 *
 * Determinism: batch k of a split is a pure function of (cfg.seed, cfg.rank,
 * cfg.world_size, split, k, snapshot, tasks, batch_size, seq_len, max_rows,
 * bfs_child_width, child_sampling, recent_children, key_cells, future_parents,
 * descendant_counts, count_windows, cell_dropout, task_weights)
 * -- never of n_threads or of which batches were drawn before.  So "sampler
 * position = batch number" for resuming.
 *
 * Which seeds form batch k of split s:
 *   task  = weighted draw from task_weights (hash of seed, rank, split, k)
 *           among tasks whose shard of split s is non-empty (1 task: that one)
 *   seeds = positions p = k*B + b of that task's shard (seed-index order,
 *           i % world_size == rank), permuted per epoch (epoch = p / n) by a
 *           bijection of [0, n) keyed by (seed, rank, split, task name,
 *           epoch): every seed once per epoch, and a task's batches do not
 *           depend on which other tasks the model has.
 *
 * One sequence (docs/sampler.md, "One sequence"):
 *   row 0 is the seed row: for a cell task the anchor row (its target column
 *   cell is the target); for a query task a virtual row of the task table
 *   with cells [observation time (timestamp, NULL when no cutoff), target]
 *   and one parent, the anchor row.  BFS from row 0 with a priority queue
 *   keyed (reached by child edge?, hops, random tie): rows reached F->P
 *   (parents) always before rows reached P->F; then fewest hops; ties by a
 *   seeded random key.  Popping a row emits its cells (non-ignored; see
 *   key cells below) in column order and pushes its parents; its
 *   children are pushed per FK after dropping those whose table time is
 *   after the seed's observation time (raw int64 µs compare: time > obs;
 *   rows without time or with a NULL time are kept; a seed without cutoff
 *   keeps everything) and sampling the rest down to bfs_child_width per FK
 *   (child_sampling, below).
 *   Future parents (future_parents): with HIDE (default) a parent is
 *   dropped by the same test as a child (its time > obs), so it emits no
 *   cells, its own parents are not pushed through it and it has no fk_adj
 *   entry -- exactly what the sequence shows for a parent that did not fit.
 *   The anchor row is always taken (it is pushed directly, not as a
 *   parent): the entity the prediction is about, and for a cell task the
 *   seed row itself.  FOLLOW takes every parent whatever its time (the
 *   seeds' original rule, which lets a parent from after obs -- a
 *   customer's first order inside the label window -- leak the future).
 *   Stop when S cells are filled (a row that does not fit is cut) or
 *   R = max_rows rows are taken.
 *   Label history (query tasks with label_history): when the anchor row is
 *   visited, the task's seeds of the same anchor observed strictly before
 *   the seed's obs time T whose label was known by T (label_time <= T;
 *   label_time defaults to the obs time) -- the most recent history_max of
 *   them, at most bfs_child_width -- are pushed as child rows of the
 *   anchor: virtual rows [obs time, target visible] with an FK to the
 *   anchor.  The same rule in training and at prediction, so a (anchor, T)
 *   gets the same history in both (with caller-given splits training also
 *   leaves out seeds of a later split).  Seeds without a cutoff have no
 *   history.
 *
 *   Undated rows (date_undated): a row of a table without a time column
 *   takes the latest time of its dated parents, else the earliest of its
 *   dated children (a child dated by its parents counts), else none
 *   (sampler_undated.c); the tests above, the
 *   recent-first child order and the child-count windows then read that
 *   time.  Off: such rows count as undated, shown at every obs time.
 *
 * Child sampling (per FK of a popped row, W = bfs_child_width, m = children
 * left after the time filter; m <= W: all of them):
 *   HW_CHILD_RECENT (default) for a child table with a time column: the
 *     k = recent_children (default ceil(W/2)) most recent children (by the
 *     child table's time; ties: the higher row; NULL times count as
 *     oldest), then W - k drawn uniformly without replacement from the
 *     older ones.  In the frontier, within a hop count, the recent picks
 *     come before the older draws, newest first (rank 0 = a group's newest,
 *     1 = the next, ...; label-history rows likewise; ties between groups
 *     at random), so a budget that runs out keeps the newest rows.  Children
 *     of a table without a time column: uniform, as below, at a random rank
 *     below W.
 *   HW_CHILD_UNIFORM: a uniform W-subset of the m (the sampler before
 *     child_sampling existed, bit for bit).
 *
 * Key cells: identifier columns (PK/FK columns and id-like columns: a
 * presence-only value, their information is the FK structure: fk_adj and
 * the rows themselves) emit no cells unless key_cells is set.  Exceptions:
 * a cell task's target column always emits; a table whose every emitted
 * column is an identifier keeps its first identifier column, so its rows
 * (link tables) still hold a position that links their parents and
 * children.  Column ids are unchanged (global ids; the column-name table
 * keeps every column).
 *
 * Anchor names: a text or categorical column of a task's anchor table
 * whose non-NULL values are nearly all distinct (at least
 * HW_NAME_DISTINCT_PCT percent of at least HW_NAME_MIN_ROWS values: a
 * team's name, a customer's e-mail) names its row, as a key does: it emits
 * no cells unless anchor_names is set (a cell task's target column always
 * emits), and for the rule above it counts as an identifier.  With it, the
 * model could learn each anchor row's past outcome by its name, and that
 * memory drifts; without it, the row is known by what it holds and what
 * links to it (measured: docs/BENCHMARKS.md).
 *
 * Descendant counts (descendant_counts, default on): the child-count slots
 * a row's table leaves free (HW_CHILD_LINKS minus its child FKs) count the
 * row's descendants along paths of 2-3 child FKs to tables that are not
 * its child tables (one path per table: the shortest, the one reaching
 * the most rows), in the same windows; a row of a table without time is
 * dated like its nearest dated ancestor on the path (docs/sampler.md).
 *
 * Label means (label_means, default off): in a sequence of a query task
 * with label history and a numerical or boolean target, a row of the
 * anchor table, and a row that is the parent of anchor rows through one of
 * the anchor table's first 2 FKs, get in their first mean slots (before
 * their child means) the mean of the task's labels over the row's own
 * seeds, or its anchors' seeds, visible at obs (observed before obs, known
 * by obs; of no later split under caller-given splits, as label history) --
 * boolean -1 / +1, numerical z-scored -- in all and per window of the time
 * the label became known; 0 where none (sampler_labels.c).
 *
 * Cell dropout (cell_dropout = p > 0, train split only, hw_sampler_batch):
 *   after the batch is built, each cell that is not padding, not the
 *   target and not in the seed row (row 0: the question itself) becomes a
 *   NULL cell (is_null = 1, value slots 0) when mix64(hash(seed, rank,
 *   split, k) + i * golden) / 2^64 < p, i = b * S + s.  Rows, positions,
 *   fk_adj and permutations are unchanged: the model still sees which rows
 *   and columns are there, not every value (meant against learning training
 *   rows by heart; measured without a gain, so off by default: docs/
 *   BENCHMARKS.md).  Validation, evaluation and prediction
 *   batches never drop.
 *
 * Recency (recent_weight = r > 1, train split only, hw_sampler_batch): the
 *   task's train seeds are drawn with replacement, seed i with weight
 *   r^((obs_i - first) / (last - first)) over the shard's observation
 *   times, by u = hash(seed, rank, split, k, b) / 2^53 against the running
 *   sums of the weights; r = 1 keeps the permutation above.  For data
 *   whose patterns drift: the model sees more of the years closest to the
 *   ones it will predict.  Validation, evaluation and prediction batches
 *   are as without it.
 *
 * Tensors (batch.h): values from the snapshot columns (numerical z-score,
 * timestamp via hw_time_encode with the snapshot's ts_mean_us/ts_std_us,
 * boolean, categorical global index, text global index remapped batch-wide
 * in first-occurrence order (b, s) in phase 2).  NULL cells: is_null = 1,
 * value slots 0.  The target cell: is_target = 1 and the truth in its value
 * slot (z-scored with the task's stats for numerical query targets; global
 * category index); a NULL truth sets is_null.  Padding: is_padding = 1,
 * everything else 0.  fk_adj[b, r1, r2] = 1 when row r1 has an FK to row r2
 * (both taken).  R = most rows of any sequence in the batch.
 * Permutations (padding positions always last, in position order):
 *   col_perm  stable argsort of column_ids
 *   out_perm  cells grouped by row, rows in reverse Cuthill-McKee order of
 *             the outbound graph I + fk_adj, cells of a row in position order
 *   in_perm   same for the inbound graph fk_adj^T
 *   RCM here: BFS over the symmetrised pattern (as scipy does for a
 *   non-symmetric matrix), where the direction shows through the degrees:
 *   out uses deg(r) = 1 + #parents of r, in uses deg(r) = #children of r.
 *   Each component starts at the unvisited row of least degree (ties: lower
 *   row id); a row's unvisited neighbours are queued by ascending degree
 *   (ties: lower row id); components are taken in that order; the whole
 *   order is then reversed.
 */
#ifndef HW_SAMPLER_H
#define HW_SAMPLER_H

#include "core/hw_common.h"
#include "core/snapshot.h"
#include "core/batch.h"
#include "core/task.h"

/* HwSamplerConfig.child_sampling */
typedef enum HwChildSampling
{
	HW_CHILD_RECENT = 0,        /* most recent first, then older ones sampled (default) */
	HW_CHILD_UNIFORM = 1        /* uniform over the whole (time-filtered) history */
} HwChildSampling;

/* "recent" / "uniform"; NULL if out of range.  _from_name: -1 if unknown. */
const char *hw_child_sampling_name(int policy);
int         hw_child_sampling_from_name(const char *name);

/* HwSamplerConfig.future_parents: what a parent row dated after the seed's
 * observation time becomes */
typedef enum HwFutureParents
{
	HW_FUTURE_PARENTS_HIDE = 0,     /* not taken, like a parent that did not fit (default) */
	HW_FUTURE_PARENTS_FOLLOW = 1    /* taken like any parent (the sampler before the option: a leak) */
} HwFutureParents;

/* "hide" / "follow"; NULL if out of range.  _from_name: -1 if unknown. */
const char *hw_future_parents_name(int policy);
int         hw_future_parents_from_name(const char *name);

/* HwSamplerConfig.count_windows: the time windows of the child counts and
 * means (sampler_cells.c, "The child-count windows"); also
 * HwSamplerConfig.time_ramps, the spacing of the relative-time ramps */
typedef enum HwCountWindows
{
	HW_COUNT_WINDOWS_EVENTS = 0,    /* from the events' own spacing up to 1.41 std */
	HW_COUNT_WINDOWS_STD = 1        /* 0.044 to 1.41 timestamp std (default) */
} HwCountWindows;

/* "events" / "std"; NULL if out of range.  _from_name: -1 if unknown. */
const char *hw_count_windows_name(int policy);
int         hw_count_windows_from_name(const char *name);

/* HwSamplerConfig.mean_windows: windows 1-5 of the child means
 * (sampler_features.c, sampler_row_child_means) */
typedef enum HwMeanWindows
{
	HW_MEAN_WINDOWS_TIME = 0,       /* the count windows' times, as the counts (default) */
	HW_MEAN_WINDOWS_RECENT = 1      /* the last 1, 3, 5, 10 and 20 children, where they are sorted by time */
} HwMeanWindows;

/* "time" / "recent"; NULL if out of range.  _from_name: -1 if unknown. */
const char *hw_mean_windows_name(int policy);
int         hw_mean_windows_from_name(const char *name);

/* Anchor names (above): the share of distinct values, in percent, and the
 * fewest non-NULL values that make a column of an anchor table a name. */
#define HW_NAME_DISTINCT_PCT 90
#define HW_NAME_MIN_ROWS     10
#define HW_NAME_SEP          '\x1f'   /* between the names of hidden_names */

typedef struct HwSamplerConfig
{
	int32_t   batch_size;       /* B, default 32 */
	int32_t   seq_len;          /* S, default 1024 (<= 65535) */
	int32_t   max_rows;         /* R cap per sequence, default 200 (<= 65535) */
	int32_t   bfs_child_width;  /* children kept per FK per row, default 16 */
	int32_t   child_sampling;   /* HwChildSampling, default HW_CHILD_RECENT */
	int32_t   recent_children;  /* RECENT: the most recent kept per FK (0..bfs_child_width);
								 * -1 (default) = half of bfs_child_width, rounded up */
	bool      key_cells;        /* emit identifier (key) cells, default false */
	bool      anchor_names;     /* emit the name columns of the tasks' anchor tables
								 * (below), default false */
	const char *hidden_names;   /* NULL (default): anchor names found by the rule; else
								 * exactly the columns listed, "table.column" joined by
								 * HW_NAME_SEP: what a checkpoint's training hid, so that
								 * prediction hides the same whatever tasks came since;
								 * read by hw_sampler_create only */
	bool      descendant_counts;/* child-count slots a row's child FKs leave free count
								 * descendants 2-3 FKs down (below), default true */
	bool      label_means;      /* parents of a query task's anchors show the mean of the
								 * task's labels known by the observation time (below) */
	int32_t   future_parents;   /* HwFutureParents, default HW_FUTURE_PARENTS_HIDE */
	bool      date_undated;     /* a row of a table without a time column takes the time of
								 * the rows it links to (below), default false */
	int32_t   count_windows;    /* HwCountWindows, default HW_COUNT_WINDOWS_STD */
	int32_t   time_ramps;       /* HwCountWindows: the spacing of the model's relative-time
								 * ramps by the same rule (sampler_cells.c), default
								 * HW_COUNT_WINDOWS_EVENTS */
	int32_t   mean_windows;     /* HwMeanWindows, default HW_MEAN_WINDOWS_TIME */
	float     cell_dropout;     /* train split only: each context cell is shown as NULL
								 * with this probability, [0, 0.9], default 0 (below) */
	float     recent_weight;    /* train split only: the latest seeds are drawn this many
								 * times as often as the earliest, [1, 100], default 1
								 * (uniform; below) */
	uint64_t  seed;             /* sampling randomness, default 0 */
	int32_t   rank;             /* default 0 */
	int32_t   world_size;       /* default 1 */
	int32_t   n_threads;        /* phase-1 threads incl. the caller; 0 = online CPUs; 1 = none */
	const double *task_weights; /* [ntasks] or NULL = uniform; copied */
} HwSamplerConfig;

typedef struct HwSampler HwSampler;

void hw_sampler_config_default(HwSamplerConfig *cfg);

HwSampler *hw_sampler_create(const HwSnapshot *snap, HwTask *const *tasks, int ntasks,
							 const HwSamplerConfig *cfg, HwError *err);
void hw_sampler_free(HwSampler *s);

/* A second sampler with its own scratch that shares base's read-only tables
 * (row cache, shards): same config, same batches.  For a second stream
 * (train + val prefetch queues).  base must outlive the clone. */
HwSampler *hw_sampler_clone(const HwSampler *base, HwError *err);

/* A clone (as hw_sampler_clone) whose batches are built by n_threads
 * threads (0 = online CPUs): the same batches, bit for bit, sooner. */
HwSampler *hw_sampler_clone_threads(const HwSampler *base, int n_threads, HwError *err);

/* A clone (as hw_sampler_clone) that draws rank `rank` of `world_size`'s
 * shards (seed i of a split is rank i % world_size's) instead of base's:
 * its batches are those of a sampler created with that rank and
 * world_size.  Data-parallel training
 * uses one per rank (and per micro-batch of gradient accumulation). */
HwSampler *hw_sampler_clone_rank(const HwSampler *base, int rank, int world_size, HwError *err);

/*
 * Batch number `batch_number` of `split` (HwSplit).  *out is a new batch
 * (free with hw_batch_free).  seed_idx (may be NULL) receives the B task
 * seed indices used, in sequence order; the task is (*out)->task_idx.
 * Fails with HW_ERR_INVALID when no task has seeds in this rank's shard of
 * the split.  Not reentrant on one sampler: one caller at a time (it drives the
 * sampler's thread pool).  Use one sampler (or clone) per concurrent stream.
 */
int hw_sampler_batch(HwSampler *s, int split, uint64_t batch_number,
					 HwBatch **out, uint32_t *seed_idx, HwError *err);

/*
 * A batch of the given seeds of task `task` (index into the sampler's
 * tasks), n = batch size (1..65535), in that order: evaluation walks a
 * split's shard (hw_sampler_shard) in chunks.  The target cell carries the
 * truth.  Randomness (tie-breaks, child sampling) is keyed by (cfg.seed,
 * task name, anchor row, obs time), as in hw_sampler_build_for_seeds, so a
 * seed's sequence does not depend on its batch nor on the model's other
 * tasks, and is the sequence its prediction gets (truth aside).
 */
int hw_sampler_seed_batch(HwSampler *s, int task, const uint32_t *seed_idx, int n,
						  HwBatch **out, HwError *err);

/*
 * Prediction: sequences for ad-hoc seeds (anchor global rows and obs times,
 * HW_NO_CUTOFF for none) of task `task`, with the target masked and its
 * value slot zero (truth unknown; is_null 0).  Label history uses the
 * task's seeds of the anchor observed strictly before obs_time whose label
 * was known by then (the training rule), so a seed's training sequence and
 * the prediction of its (anchor, obs time) hold the same history rows.
 * Randomness keyed by
 * (cfg.seed, task name, anchor row, obs time).
 */
int hw_sampler_build_for_seeds(HwSampler *s, int task, const uint32_t *anchor_rows,
							   const int64_t *obs_time_us, int n, HwBatch **out, HwError *err);

/* A label the caller knows at prediction time and the stored task does not
 * have (rt_predict(..., context => ...)): it enters the sequence exactly as
 * a label-history row of the seed. */
typedef struct HwContextLabel
{
	int64_t obs_time_us;        /* its observation time: before the seed's */
	double  target;             /* raw value, as HwTask.target[] (categorical: index in the task's block) */
	uint8_t target_null;
} HwContextLabel;

/*
 * hw_sampler_build_for_seeds with context labels: ctx[b] (nctx[b] of them,
 * any order; ctx/nctx may be NULL) join seed b's label history.  History
 * candidates are the stored labels visible at the seed's obs time (see
 * hw_task_label_visible) and its context labels; the most recent
 * min(history_max, bfs_child_width) by obs time are taken (on equal times a
 * context label first).  Context needs a query task with label history and
 * an obs time; each label must be observed strictly before it, and be a
 * value of the target's type (categorical: < ncat_own; boolean: 0/1;
 * numerical: finite): HW_ERR_INVALID otherwise.
 */
int hw_sampler_build_for_seeds_ctx(HwSampler *s, int task, const uint32_t *anchor_rows,
								   const int64_t *obs_time_us, int n,
								   const HwContextLabel *const *ctx, const uint32_t *nctx,
								   HwBatch **out, HwError *err);

/* This rank's seed indices of (task, split), in order (borrowed, valid
 * until hw_sampler_free). */
const uint32_t *hw_sampler_shard(const HwSampler *s, int task, int split, uint32_t *n);

/* Number of tasks / the config actually used. */
int hw_sampler_ntasks(const HwSampler *s);
/* The i-th (from 0) column the sampler hides as an anchor name (above):
 * its table and column names; false past the last. */
bool hw_sampler_hidden_name(const HwSampler *s, int i, const char **table, const char **column);
const HwSamplerConfig *hw_sampler_config(const HwSampler *s);
/* The child-count windows' widths in µs: out[j], j = 1..HW_CHILD_WINDOWS-1,
 * the window (obs - out[j], obs] (out[0] = 0: all); widest last. */
void hw_sampler_count_windows(const HwSampler *s, int64_t out[HW_CHILD_WINDOWS]);
/* The factor the relative-time ramps' spacing is divided by in this
 * sampler's batches (HwBatch.rel_time_scale, time_ramps): 1 with "std" or
 * where the events do not come faster than the std's narrowest window. */
float hw_sampler_rel_time_scale(const HwSampler *s);

/* Source of each cell of the last batch built, for inspection
 * (rt_batch_sequence): global row of cell (b, s), or -1 for a virtual row /
 * padding; for virtual rows *vseed = the task seed index it shows, else -1
 * (HW_VSEED_CONTEXT - k for context label k of the seed, sorted by obs time).
 * Valid until the next batch of this sampler. */
#define HW_VSEED_CONTEXT (-2)
typedef struct HwCellSource
{
	int64_t row;                /* global row or -1 */
	int64_t vseed;              /* task seed index of a virtual row or -1 */
} HwCellSource;
/* rows[b * R_b + r] for r < nrows[b]: the source of sequence-local row r. */
int hw_sampler_last_rows(const HwSampler *s, int b, const HwCellSource **rows, int *nrows);

#endif /* HW_SAMPLER_H */
