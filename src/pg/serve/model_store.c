/*
 * model_store.c: model inspection from SQL (rt_model_params) and the
 * autograd-tape debug dump (headwater.tape: rt_debug_tape writes it, rt_tape
 * reads it).  The tape shows a model's ops, tensor shapes and timings: the
 * owner's, like the weights, so headwater.tape is not readable by PUBLIC and
 * both functions check that the caller owns the model.  See
 * hw_pg_model.h; the state blob itself is stored by checkpoint.c.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include <math.h>

#include "pg/train/hw_checkpoint.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/catalog/hw_pg_model.h"
#include "pg/serve/hw_serving.h"
#include "core/tape.h"
#include "core/task.h"

void
hw_pg_tape_save(int32 model_id, int64 checkpoint_id, const HwModel *m)
{
	const HwTape *t = hw_model_tape(m);
	HwAsOwner     as;
	SPIPlanPtr    ins;
	Oid           types[9] = {INT4OID, INT8OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, INT8ARRAYOID,
							  FLOAT8OID, FLOAT8OID};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args("DELETE FROM headwater.tape WHERE model_id = $1", 1, (Oid[]) {INT4OID},
							  (Datum[]) {Int32GetDatum(model_id)}, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not clear headwater.tape");
	ins = SPI_prepare("INSERT INTO headwater.tape (model_id, checkpoint_id, seq, op, label, inputs, shape, "
					  "fwd_ms, bwd_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", 9, types);
	if (!ins)
		elog(ERROR, "could not prepare the headwater.tape insert");
	for (int i = 0; i < t->n; i++)
	{
		const HwTapeRec *r = &t->rec[i];
		Datum            sh[3];
		Datum            v[9];

		CHECK_FOR_INTERRUPTS();
		for (int d = 0; d < r->ndim; d++)
			sh[d] = Int64GetDatum(r->shape[d]);
		v[0] = Int32GetDatum(model_id);
		v[1] = Int64GetDatum(checkpoint_id);
		v[2] = Int32GetDatum(i);
		v[3] = CStringGetTextDatum(r->op);
		v[4] = CStringGetTextDatum(r->label);
		v[5] = CStringGetTextDatum(r->inputs);
		v[6] = PointerGetDatum(construct_array(sh, r->ndim, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		v[7] = Float8GetDatum(r->fwd_ms);
		v[8] = Float8GetDatum(r->bwd_ms);
		if (SPI_execute_plan(ins, v, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into headwater.tape");
	}
	hw_restore_user(&as);
	SPI_finish();
}

/* The task name (argument 0) after checking that the caller owns its model:
 * the tape and the weights are the owner's, not a predicting role's. */
static char *
task_arg_owned(FunctionCallInfo fcinfo, const char *action, int32 *model_id_out)
{
	char  *task;
	int32  model_id;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("task must not be NULL"),
				 errhint("Pass the name given to rt_create_task.")));
	task = text_to_cstring(PG_GETARG_TEXT_PP(0));
	hw_pg_task_lookup(task, false, &model_id, NULL);
	hw_model_require(model_id, HW_RIGHT_OWN, action);
	if (model_id_out)
		*model_id_out = model_id;
	return task;
}

PG_FUNCTION_INFO_V1(rt_debug_tape);
Datum
rt_debug_tape(PG_FUNCTION_ARGS)
{
	char      *task = task_arg_owned(fcinfo, "run the tape of", NULL);
	int64      ckpt = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	int        ti;
	HwServing *s = hw_serving_get(task, ckpt, HW_WEIGHTS_BEST, &ti);
	HwBatch   *b = NULL;
	HwError    err = {0};
	float      loss;
	int        rc;

	HwModel   *volatile full = NULL;
	HwBatch   *volatile pending;
	int        n = 0;

	if (hw_sampler_batch(s->sampler, HW_SPLIT_TRAIN, 0, &b, NULL, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "sampling a batch for the tape");
	pending = b;
	/* the served model is inference-only (hw_model_create_frozen, the shared
	 * cache): a backward needs the full model of the checkpoint, made here
	 * for this call */
	PG_TRY();
	{
		HwModel *m = s->model;

		if (hw_model_is_frozen(m))
		{
			HwAsOwner as;
			uint8    *blob;
			size_t    len;

			SPI_connect();
			hw_become_owner(&as);
			blob = hw_checkpoint_load_state(s->checkpoint_id, &len);
			hw_restore_user(&as);
			SPI_finish();
			/* the tape of the served model: the weights it serves */
			full = hw_model_state_deserialize_served(blob, len, s->col_emb, s->ncols, s->cat_emb,
													 (int32_t) s->ncat, s->average, s->be, &err);
			pfree(blob);
			if (full == NULL)
				hw_pg_raise_core_error(&err, "loading the checkpoint for the tape");
			m = full;
		}
		rc = hw_model_forward_backward(m, pending, &loss, &err);
		hw_batch_free(pending);
		pending = NULL;
		if (rc != HW_OK)
			hw_pg_raise_core_error(&err, "running the model for the tape");
		hw_pg_tape_save(s->model_id, s->checkpoint_id, m);
		n = hw_model_tape(m)->n;
	}
	PG_FINALLY();
	{
		if (pending)
			hw_batch_free(pending);
		hw_model_free(full);
	}
	PG_END_TRY();
	PG_RETURN_INT32(n);
}

PG_FUNCTION_INFO_V1(rt_model_params);
Datum
rt_model_params(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char          *task = task_arg_owned(fcinfo, "read the parameters of", NULL);
	int64          ckpt = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	int            ti;
	HwServing     *s = hw_serving_get(task, ckpt, HW_WEIGHTS_BEST, &ti);
	HwError        err = {0};

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < hw_model_n_params(s->model); i++)
	{
		const HwParamInfo *p = hw_model_param_info(s->model, i);
		bytea             *data = palloc(VARHDRSZ + sizeof(float) * p->numel);
		float             *f = (float *) VARDATA(data);
		double             ss = 0;
		Datum              sh[2], v[7];
		bool               nulls[7] = {0};

		CHECK_FOR_INTERRUPTS();
		SET_VARSIZE(data, VARHDRSZ + sizeof(float) * p->numel);
		if (hw_model_get_tensor(s->model, 0, p->name, f, p->numel, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "reading a parameter");
		for (int64 k = 0; k < p->numel; k++)
			ss += (double) f[k] * f[k];
		for (int d = 0; d < p->ndim; d++)
			sh[d] = Int32GetDatum(p->shape[d]);
		v[0] = CStringGetTextDatum(p->name);
		v[1] = PointerGetDatum(construct_array(sh, p->ndim, INT4OID, 4, true, TYPALIGN_INT));
		v[2] = Int64GetDatum(p->numel);
		v[3] = CStringGetTextDatum(p->opt == HW_OPT_MUON ? "muon" : "adamw");
		v[4] = BoolGetDatum(p->decay != 0);
		v[5] = Float8GetDatum(sqrt(ss / (double) (p->numel > 0 ? p->numel : 1)));
		v[6] = PointerGetDatum(data);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
	}
	return (Datum) 0;
}

/* rt_tape(task): the rows of headwater.tape of the task's model, read as
 * the extension owner after the owner check. */
#define TAPE_COLUMNS 8      /* after checkpoint_id: seq .. recorded_at */

PG_FUNCTION_INFO_V1(rt_tape);
Datum
rt_tape(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32          model_id;
	HwAsOwner      as;

	(void) task_arg_owned(fcinfo, "read the tape of", &model_id);
	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT checkpoint_id, seq, op, label, inputs, shape, fwd_ms, bwd_ms, recorded_at "
							  "FROM headwater.tape WHERE model_id = $1 ORDER BY seq",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.tape");
	hw_restore_user(&as);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum v[TAPE_COLUMNS + 1];
		bool  n[TAPE_COLUMNS + 1];

		for (int c = 0; c <= TAPE_COLUMNS; c++)
			v[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1, &n[c]);
		/* the tuplestore copies the values out of SPI's memory */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	}
	SPI_finish();
	return (Datum) 0;
}
