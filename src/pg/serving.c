/*
 * serving.c: the per-backend cache of trained models used by rt_predict,
 * rt_predict_batch and rt_evaluate.
 *
 * A cache entry holds, for one model: its snapshot, all its tasks (in
 * task_id order, the layout used in training), a sampler configured like
 * the training run, and the model loaded from a checkpoint on the CPU
 * backend.  It is keyed by (model, checkpoint, snapshot refresh time, task
 * set) and rebuilt when any of them changes (a newer best checkpoint, an
 * rt_refresh, a new task).  Everything is malloc-owned by the entry and
 * freed when the entry is replaced; nothing is PostgreSQL memory.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "hw_pg.h"
#include "hw_pg_task.h"
#include <stdlib.h>
#include "hw_checkpoint.h"
#include "hw_device.h"
#include "hw_serving.h"

#define HW_SERVING_CACHE_SIZE 4

static HwServing *cache[HW_SERVING_CACHE_SIZE];
static uint64 cache_clock;

static void
serving_free(HwServing *s)
{
	if (s == NULL)
		return;
	if (s->model)
		hw_model_free(s->model);
	if (s->be)
		hw_backend_destroy(s->be);
	if (s->sampler)
		hw_sampler_free(s->sampler);
	for (int t = 0; t < s->ntasks; t++)
		hw_task_free(s->tasks[t]);
	free(s->tasks);
	if (s->cat_labels)
		for (uint32 i = 0; i < s->n_cat_labels; i++)
			free(s->cat_labels[i]);
	free(s->cat_labels);
	free(s->col_emb);
	free(s->cat_emb);
	if (s->snap)
		snapshot_free(s->snap);
	free(s);
}

/* The snapshot's category strings (for labels of categorical predictions). */
static void
load_category_labels(HwServing *s)
{
	Oid     argtypes[1] = {INT4OID};
	Datum   values[1] = {Int32GetDatum(s->model_id)};

	if (SPI_execute_with_args("SELECT cat_idx, value FROM headwater.model_category WHERE model_id = $1 "
							  "ORDER BY cat_idx", 1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.model_category");
	s->n_cat_labels = s->snap->ncat;
	s->cat_labels = calloc(Max(1, s->n_cat_labels), sizeof(char *));
	if (s->cat_labels == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory loading category labels")));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool  isnull;
		int32 idx = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		if (idx >= 0 && (uint32) idx < s->n_cat_labels)
			s->cat_labels[idx] = strdup(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	}
}

const char *
hw_serving_category_label(const HwServing *s, int t, int32 k)
{
	const HwTask *task = s->tasks[t];

	if (task->kind == HW_TASK_QUERY)
		return (k >= 0 && (uint32) k < task->ncat_own) ? task->cat_values[k] : "?";
	uint32 g = (uint32) (task->cat_base + k);
	return (g < s->n_cat_labels && s->cat_labels[g]) ? s->cat_labels[g] : "?";
}

/* Identity of what a cache entry was built from. */
static char *
snapshot_key(int32 model_id)
{
	Oid     argtypes[1] = {INT4OID};
	Datum   values[1] = {Int32GetDatum(model_id)};

	if (SPI_execute_with_args(
			"SELECT coalesce(m.refreshed_at, m.created_at)::text || '/' || "
			"(SELECT coalesce(string_agg(task_id::text, ',' ORDER BY task_id), '') FROM headwater.task t "
			" WHERE t.model_id = m.model_id) FROM headwater.model m WHERE m.model_id = $1",
			1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "model %d vanished", model_id);
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

HwServing *
hw_serving_get(const char *task_ref, int64 checkpoint_id, int *task_index)
{
	HwAsOwner   as_owner;
	int32       model_id;
	char       *task_name;
	HwCheckpointInfo info = {0};
	HwServing  *s = NULL;
	int         slot = -1;

	int32       task_id;

	hw_pg_task_lookup(task_ref, false, &model_id, &task_id);
	hw_task_require_predict(model_id, task_id, task_ref);
	task_name = pstrdup(task_ref);
	SPI_connect();
	hw_become_owner(&as_owner);
	if (!hw_checkpoint_find(model_id, checkpoint_id, &info))
	{
		if (checkpoint_id >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("checkpoint %lld does not exist for the model of task \"%s\"",
							(long long) checkpoint_id, task_ref),
					 errhint("SELECT * FROM headwater.checkpoint lists the checkpoints.")));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the model of task \"%s\" has not been trained yet", task_ref),
				 errhint("Train it with rt_train(model, steps => ...).")));
	}
	char *key = snapshot_key(model_id);

	for (int i = 0; i < HW_SERVING_CACHE_SIZE; i++)
		if (cache[i] && cache[i]->model_id == model_id && cache[i]->checkpoint_id == info.checkpoint_id &&
			strcmp(cache[i]->key, key) == 0)
			s = cache[i];

	if (s == NULL)
	{
		HwError err = {0};
		uint8  *blob;
		size_t  len;

		/* evict the least recently used slot */
		for (int i = 0; i < HW_SERVING_CACHE_SIZE; i++)
			if (slot < 0 || cache[i] == NULL || (cache[slot] && cache[i]->last_used < cache[slot]->last_used))
				if (slot < 0 || cache[slot] != NULL)
					slot = i;
		serving_free(cache[slot]);
		cache[slot] = NULL;

		s = calloc(1, sizeof(HwServing));
		if (s == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory loading a model")));
		cache[slot] = s;     /* from here on, a failure leaves a freeable entry */
		s->model_id = model_id;
		s->checkpoint_id = info.checkpoint_id;
		strlcpy(s->key, key, sizeof(s->key));
		/* the loaders connect to SPI themselves */
		hw_restore_user(&as_owner);
		SPI_finish();
		s->snap = hw_pg_snapshot_load(model_id);
		s->tasks = hw_pg_tasks_load_all(model_id, s->snap, NULL, &s->ntasks);
		SPI_connect();
		hw_become_owner(&as_owner);
		load_category_labels(s);
		if (hw_training_tables(s->snap, s->tasks, s->ntasks, &s->col_emb, &s->ncols,
							   &s->cat_emb, &s->ncat, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "building the embedding tables");
		blob = hw_checkpoint_load_state(info.checkpoint_id, &len);
		hw_checkpoint_sampler_config(&info, &s->scfg);
		s->scfg.n_threads = 1;
		s->sampler = hw_sampler_create(s->snap, s->tasks, s->ntasks, &s->scfg, &err);
		if (s->sampler == NULL)
			hw_pg_raise_core_error(&err, "creating the sampler");
		/* one thread: many backends serve at once, and a single row is small */
		s->be = hw_pg_backend_create("cpu", 1, NULL);
		s->model = hw_model_state_deserialize(blob, len, s->col_emb, s->ncols, s->cat_emb, (int32_t) s->ncat,
											  s->be, &err);
		pfree(blob);
		if (s->model == NULL)
			hw_pg_raise_core_error(&err, "loading the checkpoint");
	}
	s->last_used = ++cache_clock;

	*task_index = -1;
	for (int t = 0; t < s->ntasks; t++)
		if (strcmp(s->tasks[t]->name, task_name) == 0)
			*task_index = t;
	if (*task_index < 0)
		elog(ERROR, "task \"%s\" missing from its model's cache", task_name);
	hw_restore_user(&as_owner);
	SPI_finish();
	return s;
}

void
hw_serving_eval_batch(HwServing *s, HwBatch *b, HwServingOutput *out)
{
	HwError     err = {0};
	int         B = b->B;
	int32       K = (int32) b->cat_emb_count;
	float       loss;

	if (b->target_stype == HW_ST_CATEGORICAL)
		for (int64 c = 0; c < (int64) b->B * b->S; c++)
			if (b->is_target[c] && (b->categorical_embed_ids[c] < b->cat_emb_start ||
									b->categorical_embed_ids[c] >= b->cat_emb_start + b->cat_emb_count))
				b->categorical_embed_ids[c] = b->cat_emb_start;

	HwPredictions *pr = hw_predictions_alloc(B, Max(1, K));
	if (pr == NULL)
	{
		hw_batch_free(b);
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory running the model")));
	}
	int rc = hw_model_eval(s->model, b, &loss, pr, &err);
	int stype = b->target_stype;
	hw_batch_free(b);
	if (rc != HW_OK)
	{
		hw_predictions_free(pr);
		hw_pg_raise_core_error(&err, "running the model");
	}
	for (int i = 0; i < B; i++)
	{
		HwServingOutput *o = &out[i];

		o->p_null = pr->p_null[i];
		o->value = stype == HW_ST_TIMESTAMP ? pr->ts[i * HW_TS_DIM + HW_TS_DIM - 1] : pr->value[i];
		o->label = 0;
		o->probs = NULL;
		o->K = 0;
		if (stype == HW_ST_CATEGORICAL && K > 0)
		{
			o->K = K;
			o->probs = palloc(sizeof(float) * K);
			for (int k = 0; k < K; k++)
			{
				o->probs[k] = pr->cat_probs[(size_t) i * K + k];
				if (o->probs[k] > o->probs[o->label])
					o->label = k;
			}
			o->value = o->probs[o->label];
		}
	}
	hw_predictions_free(pr);
}

void
hw_serving_set_wide(HwServing *s, bool wide)
{
	if (strcmp(s->be->ops->name, "cpu") == 0)
		hw_backend_cpu_set_threads(s->be, wide ? 0 : 1);
}
