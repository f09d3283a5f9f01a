/*
 * predict.c: the single-row entry points rt_predict, rt_predict_label,
 * rt_predict_proba (rt_predict_batch: predict_batch.c; whole tables:
 * predict_table.c).
 *
 * An anchor row is named by its primary key.  A single-column key is passed
 * as its value, a composite key as a ROW(...) or an array of the key columns
 * in primary key order, e.g. rt_predict('t', ROW(film_id, actor_id)).  Each
 * value may be of any type: its text is read as the key column's type and
 * written back, then compared with the snapshot's key text (so '7'::text
 * and 7::bigint name the int key 7).  The sequence is sampled around the
 * row with everything up to the observation time visible (default: no
 * cutoff), the target masked, and the model of the best checkpoint (cached
 * per backend, serving.c) reads it.
 *
 * Bad arguments are errors with a SQLSTATE, the task named and a hint, never
 * a crash (the functions are not STRICT): a NULL task, key, key column or
 * batch element (22004), a key of the wrong arity (22023, naming the key
 * columns), a value the key column's type rejects (its own SQLSTATE, e.g.
 * 22P02), obs_time outside 0001-01-01 .. 9999-12-31 or infinite (22008).
 * rt_predict, _label and _proba take optional context labels (argument 4),
 * which join the row's label history: predict_context.c.
 *
 * Output by target type:
 *   numerical    rt_predict -> the value (de-normalised)
 *   boolean      rt_predict -> P(true)
 *   timestamp    rt_predict -> epoch seconds; rt_predict_label -> timestamptz text
 *   categorical  rt_predict_label -> the most likely label;
 *                rt_predict -> its probability
 *   any          rt_predict_proba -> jsonb {"p_null": .., "value"/"label"/"probs": ..}
 *   NULL when the null head says the value is NULL (p_null > 0.5).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/json.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/datetime.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "pg/serve/hw_caller_query.h"
#include "pg/base/hw_pg.h"
#include "pg/serve/hw_predict.h"
#include "pg/serve/predict_priv.h"
#include "pg/serve/hw_serving.h"
#include "pg/serve/hw_serving_worker.h"
/* One row's prediction; with_probs: the categorical probabilities too
 * (rt_predict_proba), which the serving worker does not send back. */
static HwPrediction
predict_one(FunctionCallInfo fcinfo, bool with_probs, HwServing **s_out, int *t_out)
{
	char   *task_ref = hw_predict_task_arg(fcinfo);
	int     t;
	HwPrediction d;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("row_id of task \"%s\" is NULL", task_ref),
				 errhint("Pass the primary key of the row to predict (ROW(...) or ARRAY[...] for a composite key); "
						 "a NULL key names no row.")));
	int64_t obs = hw_predict_obs_time_arg(fcinfo, 2, task_ref);
	HwServing *s = hw_serving_get(task_ref, hw_predict_checkpoint_arg(fcinfo, 3, task_ref), hw_weights_arg(fcinfo, 5, task_ref), &t);
	uint32  row = hw_predict_anchor_row_of(s, t, task_ref, "row_id", PG_GETARG_DATUM(1),
								get_fn_expr_argtype(fcinfo->flinfo, 1));

	/* optional context labels (argument 4) */
	HwContextLabel *ctx = NULL;
	uint32  nctx = 0;

	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
		hw_predict_context_arg(PG_GETARG_JSONB_P(4), s->tasks[t], task_ref, obs, &ctx, &nctx);
	memset(&d, 0, sizeof(d));
	/* the serving worker's answer is this session's, bit for bit: an
	 * optimisation that falls back to the forward here */
	if (with_probs || nctx > 0 || !hw_serving_worker_predict(s, t, row, obs, &d))
		hw_predict_rows(s, t, &row, &obs, 1, &d, ctx, nctx);
	*s_out = s;
	*t_out = t;
	return d;
}

PG_FUNCTION_INFO_V1(rt_predict);
Datum
rt_predict(PG_FUNCTION_ARGS)
{
	HwServing *s;
	int     t;
	HwPrediction d = predict_one(fcinfo, false, &s, &t);

	if (d.is_null)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(d.value);
}


PG_FUNCTION_INFO_V1(rt_predict_label);
Datum
rt_predict_label(PG_FUNCTION_ARGS)
{
	HwServing *s;
	int     t;
	HwPrediction d = predict_one(fcinfo, false, &s, &t);

	if (d.is_null)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(hw_predict_label_text(s, t, &d)));
}


PG_FUNCTION_INFO_V1(rt_predict_proba);
Datum
rt_predict_proba(PG_FUNCTION_ARGS)
{
	HwServing *s;
	int     t;
	HwPrediction d = predict_one(fcinfo, true, &s, &t);

	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(hw_predict_proba_json(s, t, &d))));
}
