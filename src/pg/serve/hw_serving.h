/* hw_serving.h: per-backend cache of trained models for prediction and
 * evaluation (serving.c). */
#ifndef HW_SERVING_H
#define HW_SERVING_H

#include "postgres.h"

#include "fmgr.h"

#include "core/backend.h"
#include "pg/train/hw_checkpoint.h"
#include "pg/task/hw_pg_task.h"
#include "core/model.h"
#include "core/sampler.h"
#include "core/snapshot.h"
#include "core/task.h"

/* The primary key of one snapshot table, to name its rows (predict.c). */
typedef struct HwServingKey
{
	int     npk;             /* number of PK columns; 0: no primary key (or unknown) */
	char  **cols;            /* [npk] column names, in primary key order */
	Oid    *typid;           /* [npk] the source column's current type; InvalidOid when the
							  * column is gone (key values are then compared as given) */
	int32  *typmod;          /* [npk] */
} HwServingKey;

/*
 * One cache entry: everything needed to serve one model at one checkpoint,
 * malloc-owned, never PostgreSQL memory.  An entry is installed in the cache
 * only once fully built (a failed build frees what it made), and it is
 * reference-counted: the cache holds one reference and every
 * hw_serving_get() caller one more until its memory context goes away, so an
 * entry evicted while a caller still uses it lives until that caller is done.
 *
 * Invariant: ntasks > 0 implies sampler, be and model are set.
 */
typedef struct HwServing
{
	int32           model_id;
	int64           checkpoint_id;
	bool            average;         /* serves the checkpoint's parameter average, else its last parameters */
	char           *key;             /* what it was built from: model and task rows (serving.c) */
	char           *model_name;
	uint64          last_used;
	int             refs;
	HwSnapshot     *snap;
	HwTask        **tasks;           /* [ntasks] the servable tasks, model order */
	int             ntasks;
	HwPgUnusableTask *unusable;      /* [nunusable] tasks whose columns/tables vanished */
	int             nunusable;
	HwServingKey   *pk;              /* [snap->ntables] */
	uint16_t       *col_emb, *cat_emb;
	int32_t         ncols;
	uint32_t        ncat;
	HwSamplerConfig scfg;
	HwSampler      *sampler;
	HwBackend      *be;
	HwModel        *model;
	char          **cat_labels;      /* [n_cat_labels] the snapshot's category strings */
	uint32          n_cat_labels;
	/* The shared cache file this entry serves from (hw_serving_shared.h):
	 * snap is its snapshot and model reads its parameters; NULL when the
	 * entry loaded both privately (the cache is off, or its file could not
	 * be written). */
	struct HwSharedModel *shared;
	bool            wide;            /* the CPU backend runs on the multi-batch threads (hw_serving_set_wide) */
} HwServing;

/* One sequence's model output, decoded from the heads. */
typedef struct HwServingOutput
{
	float   p_null;        /* P(value is NULL) */
	float   value;         /* numerical z-score; boolean P(true); timestamp epoch z; categorical P(label) */
	int32   label;         /* categorical: most likely category 0..K-1 */
	float  *probs;         /* categorical: [K] (palloc'd), else NULL */
	int32   K;
	int32   ord_levels;    /* numerical with the ordinal loss: P(level > k) for k < ord_levels */
	float   ord_p[HW_ORD_LEVELS];
} HwServingOutput;

/* Runs the cached model (forward only) on a batch of task t's sequences and
 * decodes out[0..B-1]; frees the batch.  A masked categorical target gets a
 * placeholder id inside its block (its truth is unknown or not used). */
void hw_serving_eval_batch(HwServing *s, HwBatch *b, HwServingOutput *out);
/* The same on another model of the entry's parameters (a GPU scorer's,
 * hw_serving_device.h). */
void hw_serving_eval_batch_on(HwServing *s, HwModel *model, HwBatch *b, HwServingOutput *out);

/* Threads of a request of more than one batch (true: GUC
 * headwater.serving_threads, 0 = every CPU of the server) or one thread
 * (false, the default: many sessions serve at once and a single row is
 * small) for the CPU backend. */
void hw_serving_set_wide(HwServing *s, bool wide);
/* The threads of a multi-batch request: headwater.serving_threads, 0 and
 * values above the CPUs as every CPU. */
int  hw_serving_wide_threads(void);
/* The CPU backend's threads for the entry's next forwards (n >= 1). */
void hw_serving_set_threads(HwServing *s, int n);

/* Threads of a request of one batch: 1, or the multi-batch request's while
 * the server's CPUs are idle and no other session is serving
 * (serving_threads.c). */
int  hw_serving_single_threads(void);
/* This backend runs a forward on `threads` threads (0: every CPU) / has
 * finished it: what other sessions' hw_serving_single_threads reads. */
void hw_serving_forward_begin(int threads);
void hw_serving_forward_end(void);

/* headwater.inference_precision of this session (an HwPrecision), and its
 * change for the serving worker, which runs each request in its
 * session's precision. */
int  hw_serving_precision_setting(void);
void hw_serving_set_precision_setting(int precision);

/* Defines headwater.serving_threads (called from _PG_init). */
void hw_serving_guc_init(void);

/* Label of category k (0..K-1) of task t's block. */
const char *hw_serving_category_label(const HwServing *s, int t, int32 k);

/* The cached model serving task `task_ref` (a task name, not NULL) at
 * checkpoint_id (-1: the task's best checkpoint, hw_checkpoint_find_task; >= 0: that
 * checkpoint, which must belong to the task's model) with weights (the
 * task's choice, or those named: ERROR for an average its run did not keep);
 * *task_index is the
 * task's index in the entry.  The entry stays valid until
 * CurrentMemoryContext is reset or deleted (also on ERROR).  ERROR with a
 * SQLSTATE and a hint for an unknown task, a task whose table or column
 * vanished, an untrained model, a checkpoint that is not the model's, or a
 * damaged checkpoint.  Must not be called inside SPI. */
HwServing *hw_serving_get(const char *task_ref, int64 checkpoint_id, HwWeightsChoice weights, int *task_index);

/* The optional weights argument number argno of a prediction or evaluation
 * function: NULL or absent -> HW_WEIGHTS_BEST, 'last', 'average'; ERROR
 * (22023) naming the task for anything else. */
HwWeightsChoice hw_weights_arg(FunctionCallInfo fcinfo, int argno, const char *task_ref);

#endif
