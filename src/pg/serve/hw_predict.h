/*
 * hw_predict.h: what the prediction files (predict*.c) share with
 * predict_context.c and predict_rls.c (context labels
 * at prediction time and rt_debug_predict_batch).
 */
#ifndef HW_PREDICT_H
#define HW_PREDICT_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/jsonb.h"

#include "pg/serve/hw_serving.h"
#include "core/sampler.h"

/* Most context labels one prediction takes (only the newest
 * min(history_max, child width) can enter a sequence anyway). */
#define HW_MAX_CONTEXT_LABELS 1000

/*
 * The context argument of rt_predict: a JSON array of objects
 * {"obs_time": "<timestamp>", "label": <value of the target's type or null>}
 * for task `task` observed at obs_us (epoch µs, HW_NO_CUTOFF when none).
 * *out is palloc'd (NULL when empty), *n its length.  ERROR with a SQLSTATE
 * (22023; 22007 for a time that does not parse), the task named and a hint
 * for anything else, a label observed at or after obs_us, a task without
 * label history, or no obs_time.
 */
void hw_predict_context_arg(Jsonb *ctx, const HwTask *task, const char *task_ref, int64_t obs_us,
							HwContextLabel **out, uint32_t *n);

/* The prediction batch of n anchors of task t (hw_sampler_build_for_seeds_ctx
 * on the cached sampler), every row taking the same context labels. */
int hw_predict_build(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n,
					 const HwContextLabel *ctx, uint32_t nctx, HwBatch **out, HwError *err);

/* predict_rls.c: visible[i] = whether the calling role can see the row of
 * relid (the anchor table, row-level security in force) whose key is
 * keys[i] (canonical key text, hw_hash_key_text's input), for i < n; one
 * query run as the caller for all n. */
void hw_predict_keys_visible(Oid relid, const HwServingKey *pk, char *const *keys, int n, bool *visible);

/* predict_keys.c: rt_predict's reading of its row_id and obs_time
 * (argument argno: HW_NO_CUTOFF when NULL, else µs since 1970) arguments. */
uint32  hw_predict_anchor_row(HwServing *s, int t, const char *task, Datum key, Oid keytype);
int64_t hw_predict_obs_time_arg(FunctionCallInfo fcinfo, int argno, const char *task);

#endif /* HW_PREDICT_H */
