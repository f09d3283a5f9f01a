/*
 * predict_batch.c: rt_predict_batch(task, row_ids[], obs_time, checkpoint,
 * weights): one row per id with the prediction, label, p_null and the
 * probabilities, all ids predicted in batches of the serving batch size.
 * A NULL array or element is an error (22004) naming the element.
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
/* The n rows as one bulk request: its device memory goes before it returns. */
static void
predict_all(HwServing *s, int t, const uint32_t *rows, const int64_t *obs, int n, HwPrediction *d)
{
	HwBulkState *bulk = palloc0(sizeof(HwBulkState));

	bulk->cxt = CurrentMemoryContext;
	PG_TRY();
	{
		hw_predict_rows_bulk(s, t, rows, obs, n, d, bulk);
	}
	PG_FINALLY();
	{
		hw_predict_bulk_end(bulk);
	}
	PG_END_TRY();
}

PG_FUNCTION_INFO_V1(rt_predict_batch);
Datum
rt_predict_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char   *task_ref = hw_predict_task_arg(fcinfo);
	ArrayType *ids;
	Oid     elemtype;
	int     t;
	Datum  *elems;
	bool   *nulls;
	int     n;
	int16   len;
	bool    byval;
	char    align;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("row_ids of task \"%s\" is NULL", task_ref),
				 errhint("Pass an array of primary keys, e.g. ARRAY[1, 2, 3], or ARRAY[ROW(1, 2), ROW(3, 4)] "
						 "for a composite key.")));
	ids = PG_GETARG_ARRAYTYPE_P(1);
	elemtype = ARR_ELEMTYPE(ids);
	int64_t   obs_all = hw_predict_obs_time_arg(fcinfo, 2, task_ref);

	get_typlenbyvalalign(elemtype, &len, &byval, &align);
	deconstruct_array(ids, elemtype, len, byval, align, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
							errmsg("row_ids element %d of task \"%s\" is NULL", i + 1, task_ref),
							errhint("Remove NULL ids from the array; a NULL key names no row.")));

	int64     ckpt = hw_predict_checkpoint_arg(fcinfo, 3, task_ref);
	HwWeightsChoice weights = hw_weights_arg(fcinfo, 4, task_ref);

	InitMaterializedSRF(fcinfo, 0);
	HwServing *s = hw_serving_get(task_ref, ckpt, weights, &t);

	uint32_t *rows = palloc(sizeof(uint32_t) * Max(1, n));
	int64_t  *obs = palloc(sizeof(int64_t) * Max(1, n));
	int64    *found = palloc(sizeof(int64) * Max(1, n));
	char    **keys = palloc(sizeof(char *) * Max(1, n));
	char    **display = palloc(sizeof(char *) * Max(1, n));

	hw_predict_require_anchor_key(s, t);
	for (int i = 0; i < n; i++)
	{
		char what[48];
		StringInfoData buf;

		snprintf(what, sizeof(what), "row_ids element %d", i + 1);
		initStringInfo(&buf);
		hw_predict_key_text(s, t, task_ref, what, elems[i], elemtype, &buf, &display[i]);
		keys[i] = buf.data;
		found[i] = hw_predict_anchor_row_lookup(s, t, keys[i]);
		obs[i] = obs_all;
		CHECK_FOR_INTERRUPTS();
	}
	/* all keys at once: one visibility query under row-level security */
	hw_predict_anchor_rows_require(s, t, keys, display, found, n);
	for (int i = 0; i < n; i++)
		rows[i] = (uint32) found[i];
	HwPrediction *d = palloc0(sizeof(HwPrediction) * Max(1, n));
	if (n > 0)
		predict_all(s, t, rows, obs, n, d);

	Oid     out;
	bool    varlena;
	getTypeOutputInfo(elemtype, &out, &varlena);
	for (int i = 0; i < n; i++)
	{
		Datum   v[5];
		bool    vn[5] = {false, d[i].is_null, d[i].is_null, false, false};

		v[0] = CStringGetTextDatum(OidOutputFunctionCall(out, elems[i]));
		v[1] = Float8GetDatum(d[i].value);
		v[2] = CStringGetTextDatum(hw_predict_label_text(s, t, &d[i]));
		v[3] = Float8GetDatum(d[i].p_null);
		v[4] = DirectFunctionCall1(jsonb_in, CStringGetDatum(hw_predict_proba_json(s, t, &d[i])));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, vn);
	}
	return (Datum) 0;
}
