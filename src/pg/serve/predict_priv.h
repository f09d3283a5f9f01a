/*
 * predict_priv.h: what the prediction files share (predict*.c): reading
 * the arguments (predict_keys.c) and running and decoding the model
 * (predict_output.c).  Not for other files: hw_predict.h.
 */
#ifndef HW_PREDICT_PRIV_H
#define HW_PREDICT_PRIV_H

#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/timestamp.h"

#include "pg/serve/hw_serving.h"
#include "core/sampler.h"

/* One prediction, decoded into the task's units. */
typedef struct HwPrediction
{
	bool    is_null;
	double  p_null;
	double  value;       /* numeric value / P(true) / epoch seconds / prob of label */
	double  unrounded;   /* numerical: the value before rounding (hw_task_decode_numerical) */
	int32   label;       /* categorical: index in the block */
	float  *probs;       /* categorical [K] */
	int32   K;
	int32   ord_levels;  /* numerical, ordinal loss: P(level > k) for k < ord_levels */
	float   ord_p[HW_ORD_LEVELS];
} HwPrediction;

/* ---- predict_keys.c */

/* The task argument (0), not NULL. */
char   *hw_predict_task_arg(FunctionCallInfo fcinfo);

/* hw_predict_obs_time_arg, hw_predict_anchor_row: hw_predict.h */

/* An observation time as the snapshot counts it (µs since 1970), or ERROR
 * (22008) outside 0001-01-01 .. 9999-12-31 (UTC). */
int64_t hw_predict_obs_time_value(TimestampTz ts, const char *task);

/* ERROR unless task t's anchor table has a primary key to name rows by. */
void    hw_predict_require_anchor_key(HwServing *s, int t);

/* Canonical key text (snapshot.h) of a row id given as one value (a ROW or
 * an array for a composite key), or as n separate parts (one column each);
 * `what` names the argument in messages; *display a readable form. */
void    hw_predict_key_text(HwServing *s, int t, const char *task, const char *what, Datum value, Oid typid,
							StringInfo buf, char **display);
void    hw_predict_key_text_parts(HwServing *s, int t, const char *task, const char *what, Datum *parts,
								  Oid *types, bool *nulls, int n, StringInfo buf, char **display);

/* The key columns of a table as a hint ("Pass ... (col1 integer, ...)"). */
char   *hw_predict_pk_hint(const HwTable *tab, const HwServingKey *pk);

/* Snapshot row of a canonical key, or -1. */
int64   hw_predict_anchor_row_lookup(HwServing *s, int t, const char *key);

/* ERROR (naming the first) when a row is missing or, under row-level
 * security, not visible to the caller: rows[i] < 0 or hidden. */
void    hw_predict_anchor_rows_require(HwServing *s, int t, char *const *keys, char *const *display,
									   const int64 *rows, int n);

/* The snapshot row named by key (argument `what`), or ERROR. */
uint32  hw_predict_anchor_row_of(HwServing *s, int t, const char *task, const char *what, Datum key, Oid keytype);

/* ---- predict_output.c */

/* Runs the entry's CPU model on n anchors; out[n].  ctx (nctx labels, may
 * be NULL): context labels every row's label history takes in
 * (predict_context.c).  More than one batch without context: the row
 * stream, on the whole OpenMP team; the same bits as single rows. */
void    hw_predict_rows(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n, HwPrediction *out,
						const HwContextLabel *ctx, uint32_t nctx);

/* A bulk request's device (rt_predict_batch, rt_predict_table,
 * rt_predict_into): chosen once by headwater.serving_device at its first
 * part of more than one batch (hw_serving_device.h), kept for its later
 * parts, and allocated in cxt, a context that outlives them. */
typedef struct HwBulkState
{
	MemoryContext          cxt;
	bool                   decided;
	struct HwDeviceScorer *dev;       /* NULL: the CPU */
} HwBulkState;

/* hw_predict_rows for one part of a bulk request (no context labels), on
 * the request's device. */
void    hw_predict_rows_bulk(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n, HwPrediction *out,
							 HwBulkState *bulk);
/* Frees the request's device model (also freed with bulk->cxt). */
void    hw_predict_bulk_end(HwBulkState *bulk);

/* The optional checkpoint argument: -1 (the task's best) when absent or NULL. */
int64   hw_predict_checkpoint_arg(FunctionCallInfo fcinfo, int argno, const char *task_ref);

/* The prediction as text (rt_predict_label) and as jsonb text (rt_predict_proba). */
char   *hw_predict_label_text(HwServing *s, int t, const HwPrediction *d);
char   *hw_predict_proba_json(HwServing *s, int t, const HwPrediction *d);

#endif /* HW_PREDICT_PRIV_H */
