/*
 * batch.h: the TrainingBatch: the tensors a batch carries from the sampler
 * to the model, with their shapes and dtypes exactly as listed below.
 *
 * One batch = B cell sequences of length S from one task (homogeneous target
 * type).  Every tensor is a flat row-major array owned by the batch.
 *
 *   semantic_types        [B,S]      int8     HwSemanticType of each cell
 *   column_ids            [B,S]      int32    global ColumnIdx
 *   seq_row_ids           [B,S]      uint16   sequence-local row 0..R-1
 *   is_null               [B,S]      uint8
 *   numeric_values        [B,S]      float32  z-score
 *   timestamp_values      [B,S,15]   float32  7 sin/cos pairs + z-scored epoch
 *   bool_values           [B,S]      uint8
 *   categorical_embed_ids [B,S]      uint32   global CategoricalEmbeddingIdx
 *   text_embed_ids        [B,S]      uint32   batch-local 0..U-1
 *   is_target             [B,S]      uint8    exactly one per sequence
 *   is_padding            [B,S]      uint8
 *   fk_adj                [B,R,R]    uint8    fk_adj[b,r1,r2]: row r1 points to row r2
 *   col_perm/out_perm/in_perm [B,S]  uint16   attention permutations, padding last
 *   text_batch_embeddings [U,D_t]    float16  (stored as uint16 bits)
 *   target_stype          [1]        uint8
 *   task_idx              [1]        uint32
 *   cat_emb_start         [1]        uint32
 *   cat_emb_count         [1]        uint32
 *
 * Beside the HW_BATCH_NTENSORS tensors above (not counted among them, not
 * stored with them):
 *   seed_time             [B]        float32  each sequence's observation time,
 *                                             z-scored like timestamp_values[..., 14];
 *                                             NaN when it has none (no cutoff)
 *   link_key              [B,S]      uint32   per cell, the key of the FK edge (and its
 *                                             direction) through which the sampler reached
 *                                             the cell's row; 0: none (seed, anchor,
 *                                             label-history rows, padding)
 *   child_key             [B,S,L]    uint32   per cell, the link keys (a child reached
 *                                             through FK f) of the first L = HW_CHILD_LINKS
 *                                             child FKs of the cell's row; 0: none
 *   child_count           [B,S,L,W]  uint16   per cell and child FK, W = HW_CHILD_WINDOWS
 *                                             counts (saturating) of the row's children
 *                                             through that FK that the sampler could show:
 *                                             [0] all at or before the observation time,
 *                                             [j >= 1] those dated within window j before
 *                                             it (sampler.h); the row's temporal degree
 *   mean_key              [B,S,M]    uint32   per cell, M = HW_MEAN_SLOTS keys of (child FK,
 *                                             numerical or boolean column of the child
 *                                             table) pairs of the cell's row; 0: none
 *   child_mean            [B,S,M,W]  float32  per cell and pair, the mean of that column
 *                                             over the children child_count counts, of them
 *                                             at most the 1,024 read last (the most recent
 *                                             under the recent-first policy) (z-score, or
 *                                             -1/+1 for a boolean; NULLs left out); 0 where
 *                                             no child has a value
 *   rel_time_scale        scalar     float32  the factor the model's relative-time ramps
 *                                             are narrowed by (time_ramps, sampler.h);
 *                                             1 unless a sampler sets it
 * The model derives its relative-time features from seed_time and
 * rel_time_scale, its link
 * codes from link_key and its child-count features from child_key,
 * child_count, mean_key and child_mean (model.h); a batch without them (NaN / 0, the defaults) gets
 * none.
 */
#ifndef HW_BATCH_H
#define HW_BATCH_H

#include "core/hw_common.h"

#define HW_TS_DIM 15
#define HW_CHILD_LINKS   6      /* child FKs per row whose counts a cell carries */
#define HW_CHILD_WINDOWS 12     /* counts per child FK: all, then 11 time windows */
#define HW_MEAN_SLOTS    8      /* (child FK, column) pairs per row whose means a cell carries */

typedef struct HwBatch
{
	int32_t   B, S, R, U, d_text;

	int8_t   *semantic_types;
	int32_t  *column_ids;
	uint16_t *seq_row_ids;
	uint8_t  *is_null;
	float    *numeric_values;
	float    *timestamp_values;
	uint8_t  *bool_values;
	uint32_t *categorical_embed_ids;
	uint32_t *text_embed_ids;
	uint8_t  *is_target;
	uint8_t  *is_padding;
	uint8_t  *fk_adj;
	uint16_t *col_perm;
	uint16_t *out_perm;
	uint16_t *in_perm;
	uint16_t *text_batch_embeddings;
	float    *seed_time;        /* [B], beside the listed tensors: see above */
	float     rel_time_scale;   /* beside the listed tensors: see above */
	uint32_t *link_key;         /* [B,S], beside the listed tensors: see above */
	uint32_t *child_key;        /* [B,S,HW_CHILD_LINKS], beside the listed tensors */
	uint16_t *child_count;      /* [B,S,HW_CHILD_LINKS,HW_CHILD_WINDOWS], beside the listed tensors */
	uint32_t *mean_key;         /* [B,S,HW_MEAN_SLOTS], beside the listed tensors */
	float    *child_mean;       /* [B,S,HW_MEAN_SLOTS,HW_CHILD_WINDOWS], beside the listed tensors */

	uint8_t   target_stype;
	uint8_t   num_loss;         /* HwNumLoss of a numerical target (not a tensor: from the task) */
	/* num_loss ORDINAL (not tensors: from the task, hw_task_ordinal_levels):
	 * the thresholds in use, 1..HW_ORD_LEVELS (0: not ordinal), and the map
	 * from a target's z-score to its level, nearbyint(z * ord_scale + ord_shift)
	 * (ord_scale = target_std, ord_shift = target_mean - target_min). */
	uint8_t   ord_levels;
	float     ord_scale, ord_shift;
	uint32_t  task_idx;
	uint32_t  cat_emb_start;
	uint32_t  cat_emb_count;
} HwBatch;

/* dtype codes used when a tensor is shipped or stored (headwater.batch) */
typedef enum HwDtype
{
	HW_DT_INT8, HW_DT_UINT8, HW_DT_UINT16, HW_DT_INT32, HW_DT_UINT32,
	HW_DT_FLOAT16, HW_DT_FLOAT32
} HwDtype;

const char *hw_dtype_name(int dtype);      /* "int8", "uint8", ..., "float16", "float32" */
size_t      hw_dtype_size(int dtype);

/* Description of one tensor of a batch, for generic serialization. */
typedef struct HwTensorView
{
	const char *name;
	int         dtype;
	int         ndim;
	int64_t     shape[3];
	void       *data;
} HwTensorView;

#define HW_BATCH_NTENSORS 20

/* Allocates every tensor zero-filled (zero-filled is what a padding
 * position holds, is_padding aside). */
HwBatch *hw_batch_alloc(int32_t B, int32_t S, int32_t R, int32_t U, int32_t d_text);
void     hw_batch_free(HwBatch *batch);
/* Fills views[HW_BATCH_NTENSORS] in the order of the list above; the views point into batch. */
void     hw_batch_tensors(HwBatch *batch, HwTensorView *views);
/* Finds one tensor by name; returns false if the name is unknown. */
bool     hw_batch_tensor(HwBatch *batch, const char *name, HwTensorView *view);

#endif /* HW_BATCH_H */
