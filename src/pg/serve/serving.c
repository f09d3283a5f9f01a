/*
 * serving.c: the per-backend cache of trained models used by rt_predict,
 * rt_predict_batch and rt_evaluate.
 *
 * A cache entry holds, for one model: its snapshot, its servable tasks (in
 * task_id order, the layout used in training), the primary keys of its
 * tables, a sampler configured like the training run, and the model loaded
 * from a checkpoint on the CPU backend.  It is keyed by (model, checkpoint,
 * weights -- the last parameters or their average, whichever the task's
 * validation chose --, the row versions of the model's headwater.model and
 * headwater.task rows)
 * and rebuilt when any of them changes: a newer best checkpoint, an
 * rt_refresh (even two in one transaction: each writes a new model row
 * version), a new or dropped task.
 *
 * The snapshot and the checkpoint's parameters come from the cache file
 * shared by all backends (serving_shared.c): the first backend to serve a
 * (model, checkpoint, key) writes it, every backend maps it read-only and
 * runs an inference-only model on the mapped parameters
 * (hw_model_create_frozen), so a backend's first prediction loads nothing
 * heavy and its memory is mostly shared page cache.  A new best checkpoint
 * or key means a new file, seen by every backend through the key check
 * above.  Without the file (headwater.serving_shared_cache off, or it could
 * not be written) the entry loads both privately, with the same results.
 *
 * Crash safety: an entry is built aside and installed only once complete; a
 * build that fails (a damaged checkpoint, a cancel, out of memory) frees all
 * it made and leaves the cache as it was.  Entries are reference-counted
 * (hw_serving.h), so eviction never frees an entry a caller still uses.  A
 * task whose anchor table or target column vanished in an rt_refresh is left
 * out of the entry (hw_pg_tasks_load_usable) and gets its own error; the
 * model's other tasks keep serving.  Everything is malloc-owned by the entry;
 * nothing is PostgreSQL memory.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "pg/base/pg_spi_saved.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include <stdlib.h>
#include "pg/train/hw_checkpoint.h"
#include "pg/train/hw_device.h"
#include "pg/serve/hw_serving.h"
#include "pg/train/hw_train.h"
#include "pg/serve/hw_serving_shared.h"

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
	if (s->tasks)
		for (int t = 0; t < s->ntasks; t++)
			hw_task_free(s->tasks[t]);
	free(s->tasks);
	hw_pg_unusable_free(s->unusable, s->nunusable);
	if (s->cat_labels)
		for (uint32 i = 0; i < s->n_cat_labels; i++)
			free(s->cat_labels[i]);
	free(s->cat_labels);
	if (s->pk)
	{
		for (int t = 0; t < s->snap->ntables; t++)
		{
			if (s->pk[t].cols)
				for (int k = 0; k < s->pk[t].npk; k++)
					free(s->pk[t].cols[k]);
			free(s->pk[t].cols);
			free(s->pk[t].typid);
			free(s->pk[t].typmod);
		}
		free(s->pk);
	}
	free(s->col_emb);
	free(s->cat_emb);
	if (s->shared)
		hw_serving_shared_close(s->shared);     /* its snapshot too; the model is gone */
	else if (s->snap)
		snapshot_free(s->snap);
	free(s->key);
	free(s->model_name);
	free(s);
}

static void
serving_unref(void *arg)
{
	HwServing *s = arg;

	if (--s->refs <= 0)
		serving_free(s);
}

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (p == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory loading a model for prediction")));
	return p;
}

static char *
xstrdup(const char *str)
{
	char *p = strdup(str ? str : "");

	if (p == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory loading a model for prediction")));
	return p;
}

/* A core error while building an entry: SQLSTATE by kind, the model and
 * task named, a hint. */
static void
serving_core_error(const HwServing *s, const char *task, const HwError *err, const char *what,
				   const char *detail, const char *hint)
{
	int sqlstate;

	switch (err->code)
	{
		case HW_ERR_NOMEM: sqlstate = ERRCODE_OUT_OF_MEMORY; break;
		case HW_ERR_CORRUPT: sqlstate = ERRCODE_DATA_CORRUPTED; break;
		case HW_ERR_CANCELLED: sqlstate = ERRCODE_QUERY_CANCELED; break;
		case HW_ERR_INVALID: sqlstate = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE; break;
		default: sqlstate = ERRCODE_INTERNAL_ERROR; break;
	}
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("could not serve task \"%s\" of model \"%s\": %s: %s", task, s->model_name, what, err->msg),
			 detail ? errdetail("%s", detail) : 0,
			 errhint("%s", hint)));
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
	s->cat_labels = xcalloc(s->n_cat_labels, sizeof(char *));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool  isnull;
		int32 idx = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		if (idx >= 0 && (uint32) idx < s->n_cat_labels && s->cat_labels[idx] == NULL)
			s->cat_labels[idx] = xstrdup(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
	}
}

/* The primary key columns of the snapshot's tables with the current type of
 * each source column (to read key values given in another type). */
static void
load_primary_keys(HwServing *s)
{
	Oid     argtypes[1] = {INT4OID};
	Datum   values[1] = {Int32GetDatum(s->model_id)};
	int     nt = s->snap->ntables;

	if (SPI_execute_with_args(
			"SELECT mt.table_idx, array_length(mt.pk_columns, 1), k.col, a.atttypid, a.atttypmod "
			"FROM headwater.model_table mt JOIN headwater.model m ON m.model_id = mt.model_id "
			"CROSS JOIN LATERAL unnest(mt.pk_columns) WITH ORDINALITY AS k(col, ord) "
			"LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = m.source_schema "
			"LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = mt.table_name "
			"LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = k.col "
			"  AND a.attnum > 0 AND NOT a.attisdropped "
			"WHERE mt.model_id = $1 ORDER BY mt.table_idx, k.ord",
			1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.model_table");
	s->pk = xcalloc(nt, sizeof(HwServingKey));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple   tup = SPI_tuptable->vals[i];
		TupleDesc   td = SPI_tuptable->tupdesc;
		bool        isnull, tnull, mnull;
		int32       t = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
		int32       npk = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
		Oid         typid = DatumGetObjectId(SPI_getbinval(tup, td, 4, &tnull));
		int32       typmod = DatumGetInt32(SPI_getbinval(tup, td, 5, &mnull));
		HwServingKey *k;

		if (t < 0 || t >= nt || npk < 1 || npk > 1600)
			continue;
		k = &s->pk[t];
		if (k->cols == NULL)
		{
			k->cols = xcalloc(npk, sizeof(char *));
			k->typid = xcalloc(npk, sizeof(Oid));
			k->typmod = xcalloc(npk, sizeof(int32));
			k->npk = 0;
		}
		if (k->npk >= npk)
			continue;
		k->cols[k->npk] = xstrdup(SPI_getvalue(tup, td, 3));
		k->typid[k->npk] = tnull ? InvalidOid : typid;
		k->typmod[k->npk] = mnull ? -1 : typmod;
		k->npk++;
	}
}

const char *
hw_serving_category_label(const HwServing *s, int t, int32 k)
{
	const HwTask *task = s->tasks[t];

	if (task->kind == HW_TASK_QUERY)
		return (k >= 0 && (uint32) k < task->ncat_own && task->cat_values[k]) ? task->cat_values[k] : "?";
	if (k < 0)
		return "?";
	uint32 g = (uint32) (task->cat_base + k);
	return (g < s->n_cat_labels && s->cat_labels[g]) ? s->cat_labels[g] : "?";
}

/*
 * Identity of what a cache entry is built from: the row versions (xmin and
 * ctid) of the model's headwater.model row and of its headwater.task rows.
 * rt_refresh rewrites the model row, so even two refreshes in one
 * transaction give different keys; creating or dropping a task changes the
 * task list.  Times enter as epoch microseconds, never as text: the text
 * of a timestamptz follows the session's TimeZone and DateStyle, and
 * sessions that differ in them would rebuild each other's shared file.  Also the model's name (for messages).  Caller in SPI as owner.
 */
static char *
model_state_key(int32 model_id, char **model_name)
{
	Oid     argtypes[1] = {INT4OID};
	Datum   values[1] = {Int32GetDatum(model_id)};

	if (hw_spi_execute_saved(
			"SELECT m.xmin::text || '/' || m.ctid::text || '/' || "
			"(EXTRACT(epoch FROM coalesce(m.refreshed_at, m.created_at)) * 1000000)::int8 || '/' || "
			"(SELECT coalesce(string_agg(t.task_id::text || '@' || t.xmin::text || t.ctid::text, ',' "
			"  ORDER BY t.task_id), '') FROM headwater.task t WHERE t.model_id = m.model_id), m.name "
			"FROM headwater.model m WHERE m.model_id = $1",
			1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the model of the task was dropped while it was being loaded"),
				 errhint("Create the model and its tasks again.")));
	*model_name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/* ERROR for a checkpoint id that is not one of the task's model's. */
static void
checkpoint_not_found(int64 checkpoint_id, const char *task_ref, const char *model_name)
{
	Oid     argtypes[1] = {INT8OID};
	Datum   values[1] = {Int64GetDatum(checkpoint_id)};

	if (SPI_execute_with_args("SELECT m.name FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) "
							  "WHERE c.checkpoint_id = $1", 1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint %lld belongs to model \"%s\", not to model \"%s\" of task \"%s\"",
						(long long) checkpoint_id, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
						model_name, task_ref),
				 errhint("Pass one of model \"%s\"'s checkpoints (rt_status('%s') shows its jobs' checkpoints), "
						 "or NULL for its best checkpoint.", model_name, model_name)));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("checkpoint %lld does not exist for model \"%s\" of task \"%s\"",
					(long long) checkpoint_id, model_name, task_ref),
			 errhint("SELECT * FROM headwater.checkpoint lists the checkpoints; NULL uses the best one.")));
}

/* The version of a checkpoint's stored state: its rows' versions (a
 * rewritten or damaged state gets another).  In the transaction's memory
 * (it outlives the SPI connections of the build).  Caller in SPI as owner. */
static char *
checkpoint_state_version(int64 checkpoint_id)
{
	Datum arg = Int64GetDatum(checkpoint_id);

	if (SPI_execute_with_args("SELECT coalesce(string_agg(chunk_no::text || '@' || xmin::text || ctid::text, ',' "
							  "ORDER BY chunk_no), '') FROM headwater.checkpoint_state WHERE checkpoint_id = $1",
							  1, (Oid[]) {INT8OID}, &arg, NULL, true, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read headwater.checkpoint_state");
	return MemoryContextStrdup(TopTransactionContext, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
}

/* The (checkpoint, weights) the model's tasks are served from (best per
 * task), and `also`: the shared cache files to keep.  Caller in SPI as
 * owner. */
static HwServedAt *
served_checkpoints(int32 model_id, HwServedAt also, int *n)
{
	Datum   arg = Int32GetDatum(model_id);
	int     ntask;
	int32  *task_ids;
	HwServedAt *keep;

	if (SPI_execute_with_args("SELECT task_id FROM headwater.task WHERE model_id = $1", 1, (Oid[]) {INT4OID},
							  &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.task");
	ntask = (int) SPI_processed;
	task_ids = palloc(sizeof(int32) * (ntask + 1));
	for (int i = 0; i < ntask; i++)
	{
		bool isnull;

		task_ids[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	keep = palloc(sizeof(HwServedAt) * (ntask + 1));
	*n = 0;
	keep[(*n)++] = also;
	for (int i = 0; i < ntask; i++)
	{
		HwCheckpointInfo ci = {0};

		if (hw_checkpoint_find_task(model_id, task_ids[i], -1, HW_WEIGHTS_BEST, &ci))
			keep[(*n)++] = (HwServedAt) {ci.checkpoint_id, ci.average};
	}
	pfree(task_ids);
	return keep;
}

/*
 * Writes the shared cache file of (model, checkpoint, key) and maps it, or
 * returns NULL (the entry then loads privately).  The snapshot is loaded
 * into e->snap (freed with the entry on ERROR, and here once the file is
 * mapped); the parameters come from a full model of the checkpoint, made on
 * stand-in embedding tables (they size only the tables, never the
 * parameters) and freed here.  ERROR for a damaged checkpoint, as the
 * private load.  Caller in SPI as owner; returns the same way.
 */
static HwSharedModel *
shared_build(HwServing *e, const HwCheckpointInfo *info, const char *version, HwAsOwner *as_owner)
{
	HwError        err = {0};
	HwModelConfig  cfg;
	HwBackend     *be;
	HwModel       *full;
	uint16        *stand_in;
	uint8         *blob;
	size_t         len;
	bool           written;
	HwSharedModel *sm = NULL;
	HwServedAt     at = {info->checkpoint_id, info->average};

	blob = hw_checkpoint_load_state(info->checkpoint_id, &len);
	hw_restore_user(as_owner);
	SPI_finish();
	e->snap = hw_pg_snapshot_load(e->model_id);
	SPI_connect();
	hw_become_owner(as_owner);
	/* a damaged checkpoint: the private load reports it, with its detail */
	if (hw_model_state_read_config(blob, len, &cfg, &err) != HW_OK)
	{
		pfree(blob);
		return NULL;
	}
	be = hw_pg_backend_create("cpu", 1, NULL);
	stand_in = calloc((size_t) Max(cfg.d_text, 1), sizeof(uint16));
	/* the shared file holds what is served: the weights the task's validation chose */
	full = (be && stand_in) ? hw_model_state_deserialize_served(blob, len, stand_in, 1, NULL, 0, info->average, be, &err)
		: NULL;
	free(stand_in);
	pfree(blob);
	if (full == NULL)
	{
		if (be)
			hw_backend_destroy(be);
		/* the private load reports a damaged checkpoint with its detail */
		return NULL;
	}
	written = hw_serving_shared_write(e->model_id, at, e->key, version, e->snap, full);
	hw_model_free(full);
	hw_backend_destroy(be);
	if (written)
	{
		int    nkeep;
		HwServedAt *keep = served_checkpoints(e->model_id, at, &nkeep);

		hw_serving_shared_cleanup(e->model_id, e->key, at, version, keep, nkeep);
		pfree(keep);
		sm = hw_serving_shared_open(e->model_id, at, e->key, version);
	}
	if (sm)
	{
		snapshot_free(e->snap);
		e->snap = NULL;
	}
	return sm;
}

/* Builds the entry for (model, checkpoint) aside; on ERROR frees it. */
static HwServing *
serving_build(int32 model_id, const char *model_name, const char *key, const HwCheckpointInfo *info,
			  const char *task_ref, HwAsOwner *as_owner)
{
	HwServing *volatile s = xcalloc(1, sizeof(HwServing));

	PG_TRY();
	{
		HwServing *e = s;
		HwError     err = {0};
		uint8      *blob;
		size_t      len;

		e->model_id = model_id;
		e->checkpoint_id = info->checkpoint_id;
		e->average = info->average;
		e->key = xstrdup(key);
		e->model_name = xstrdup(model_name);
		if (hw_serving_shared_enabled)
		{
			char *version = checkpoint_state_version(info->checkpoint_id);

			e->shared = hw_serving_shared_open(model_id, (HwServedAt) {info->checkpoint_id, info->average}, key, version);
			if (e->shared == NULL)
				e->shared = shared_build(e, info, version, as_owner);
			pfree(version);
		}
		/* the loaders connect to SPI themselves */
		hw_restore_user(as_owner);
		SPI_finish();
		if (e->shared)
			e->snap = e->shared->snap;
		else if (e->snap == NULL)
			e->snap = hw_pg_snapshot_load(model_id);
		e->tasks = hw_pg_tasks_load_usable(model_id, e->snap, &e->ntasks, &e->unusable, &e->nunusable);
		SPI_connect();
		hw_become_owner(as_owner);
		load_category_labels(e);
		load_primary_keys(e);
		if (e->ntasks > 0)
		{
			if (hw_training_tables(e->snap, e->tasks, e->ntasks, &e->col_emb, &e->ncols,
								   &e->cat_emb, &e->ncat, &err) != HW_OK)
				serving_core_error(e, task_ref, &err, "building the embedding tables", NULL,
								   "Run rt_refresh(model); if that does not help, drop and create the task again.");
			hw_checkpoint_sampler_config(info, &e->scfg);
			e->scfg.n_threads = 1;
			if (e->scfg.batch_size < 1 || e->scfg.batch_size > 65535)
				e->scfg.batch_size = 32;
			e->sampler = hw_sampler_create(e->snap, e->tasks, e->ntasks, &e->scfg, &err);
			if (e->sampler == NULL)
				serving_core_error(e, task_ref, &err, "creating the sampler", NULL,
								   "Run rt_refresh(model); if that does not help, drop and create the task again.");
			/* one thread: many backends serve at once, and a single row is small */
			e->be = hw_pg_backend_create("cpu", 1, NULL);
			if (e->be == NULL)
				ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
								errmsg("could not create the CPU backend to serve task \"%s\"", task_ref),
								errhint("The server may be out of memory; try again later.")));
			if (e->shared)
				e->model = hw_model_create_frozen(&e->shared->cfg, e->shared->params, e->shared->numel,
												  e->col_emb, e->ncols, e->cat_emb, (int32_t) e->ncat, e->be, &err);
			else
			{
				blob = hw_checkpoint_load_state(info->checkpoint_id, &len);
				e->model = hw_model_state_deserialize_served(blob, len, e->col_emb, e->ncols, e->cat_emb,
															 (int32_t) e->ncat, info->average, e->be, &err);
				pfree(blob);
			}
			if (e->model == NULL)
			{
				char *detail = psprintf("The checkpoint is %lld (step %d).", (long long) info->checkpoint_id, info->step);

				serving_core_error(e, task_ref, &err, "loading its checkpoint", detail,
								   "The stored checkpoint is damaged or does not fit the model: evaluate another "
								   "one (rt_evaluate(task, checkpoint => ...)) or train again "
								   "(options => '{\"restart\": true}' starts over).");
			}
		}
	}
	PG_CATCH();
	{
		serving_free(s);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return s;
}

/* Puts a complete entry in the cache, evicting the least recently used one
 * (freed when its last user is done). */
static void
serving_install(HwServing *s)
{
	int slot = -1;

	for (int i = 0; i < HW_SERVING_CACHE_SIZE && slot < 0; i++)
		if (cache[i] == NULL)
			slot = i;
	if (slot < 0)
	{
		slot = 0;
		for (int i = 1; i < HW_SERVING_CACHE_SIZE; i++)
			if (cache[i]->last_used < cache[slot]->last_used)
				slot = i;
		HwServing *old = cache[slot];

		cache[slot] = NULL;
		serving_unref(old);
	}
	s->refs = 1;
	cache[slot] = s;
}

/* Drops cached entries of the model built from other model/task states. */
static void
serving_drop_stale(int32 model_id, const char *key)
{
	for (int i = 0; i < HW_SERVING_CACHE_SIZE; i++)
		if (cache[i] && cache[i]->model_id == model_id && strcmp(cache[i]->key, key) != 0)
		{
			HwServing *old = cache[i];

			cache[i] = NULL;
			serving_unref(old);
		}
}

HwServing *
hw_serving_get(const char *task_ref, int64 checkpoint_id, HwWeightsChoice weights, int *task_index)
{
	HwAsOwner   as_owner;
	int32       model_id;
	int32       task_id;
	char       *model_name;
	char       *key;
	HwCheckpointInfo info = {0};
	HwServing  *s = NULL;
	MemoryContext caller_cxt = CurrentMemoryContext;
	MemoryContextCallback *cb;

	if (task_ref == NULL)
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("task must not be NULL"),
						errhint("Pass the name given to rt_create_task.")));
	if (checkpoint_id < -1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("checkpoint %lld of task \"%s\" is not a checkpoint id", (long long) checkpoint_id, task_ref),
						errhint("Checkpoint ids are positive; NULL uses the best checkpoint.")));
	/* the reference is released with the caller's context (allocated first,
	 * so that nothing can fail between taking the reference and arming it) */
	cb = MemoryContextAlloc(caller_cxt, sizeof(MemoryContextCallback));
	hw_pg_task_lookup(task_ref, false, &model_id, &task_id);
	hw_task_require_predict(model_id, task_id, task_ref);
	SPI_connect();
	hw_become_owner(&as_owner);
	key = model_state_key(model_id, &model_name);
	if (!hw_checkpoint_find_task(model_id, task_id, checkpoint_id, weights, &info))
	{
		if (checkpoint_id >= 0)
			checkpoint_not_found(checkpoint_id, task_ref, model_name);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the model of task \"%s\" has not been trained yet", task_ref),
				 errhint("Train it with rt_train(model, steps => ...).")));
	}
	if (weights == HW_WEIGHTS_AVERAGE && !info.has_average)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("checkpoint %lld of task \"%s\" has no parameter average",
						(long long) info.checkpoint_id, task_ref),
				 errhint("Its run was trained with ema_decay 0; pass weights => 'last' or NULL, "
						 "or train with options => '{\"ema_decay\": 0.99}'.")));

	serving_drop_stale(model_id, key);
	for (int i = 0; i < HW_SERVING_CACHE_SIZE; i++)
		if (cache[i] && cache[i]->model_id == model_id && cache[i]->checkpoint_id == info.checkpoint_id &&
			cache[i]->average == info.average)
			s = cache[i];
	if (s == NULL)
	{
		s = serving_build(model_id, model_name, key, &info, task_ref, &as_owner);
		serving_install(s);
	}
	s->last_used = ++cache_clock;

	*task_index = -1;
	for (int t = 0; t < s->ntasks; t++)
		if (s->tasks[t]->task_id == task_id)
			*task_index = t;
	if (*task_index < 0)
	{
		for (int u = 0; u < s->nunusable; u++)
			if (s->unusable[u].task_id == task_id)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("task \"%s\" cannot be served: %s", task_ref, s->unusable[u].message),
						 errhint("Drop the task with rt_drop_task and create it again; "
								 "the other tasks of model \"%s\" are not affected.", s->model_name)));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" was dropped while its model was being loaded", task_ref),
				 errhint("Create it with rt_create_task(model, '%s', ...).", task_ref)));
	}
	hw_restore_user(&as_owner);
	SPI_finish();

	/* the caller's reference */
	s->refs++;
	cb->func = serving_unref;
	cb->arg = s;
	MemoryContextRegisterResetCallback(caller_cxt, cb);
	return s;
}

HwWeightsChoice
hw_weights_arg(FunctionCallInfo fcinfo, int argno, const char *task_ref)
{
	char   *w;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return HW_WEIGHTS_BEST;
	w = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(w, "last") == 0)
		return HW_WEIGHTS_LAST;
	if (strcmp(w, "average") == 0)
		return HW_WEIGHTS_AVERAGE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown weights \"%s\" for task \"%s\"", w, task_ref),
			 errhint("Use 'last' (the checkpoint's parameters), 'average' (their running average) "
					 "or NULL (the weights with the task's better validation).")));
	return HW_WEIGHTS_BEST;		/* not reached */
}

/* Precision of the served model's layer GEMMs (HwPrecision): auto = bf16
 * on processors with AVX512_BF16 where it beats the fp32 products
 * (backend_cpu_blas.c; metrics unchanged to the third digit), fp32
 * elsewhere. */
static int hw_inference_precision = HW_PRECISION_AUTO;
static const struct config_enum_entry hw_precision_options[] = {
	{"auto", HW_PRECISION_AUTO, false},
	{"fp32", HW_PRECISION_FP32, false},
	{"bf16", HW_PRECISION_BF16, false},
	{NULL, 0, false},
};

int
hw_serving_precision_setting(void)
{
	return hw_inference_precision;
}

void
hw_serving_set_precision_setting(int precision)
{
	hw_inference_precision = precision;
}

void
hw_serving_eval_batch(HwServing *s, HwBatch *b, HwServingOutput *out)
{
	hw_serving_eval_batch_on(s, s->model, b, out);
}

void
hw_serving_eval_batch_on(HwServing *s, HwModel *model, HwBatch *b, HwServingOutput *out)
{
	HwError     err = {0};
	int         B = b->B;
	int32       K = (int32) b->cat_emb_count;

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
	/* the session's precision (a no-op when unchanged: the bf16 copy of the
	 * weights is kept with the cached model); a GPU model computes as its
	 * backend does (bf16 tensor cores) */
	if (model == s->model &&
		hw_model_set_inference_precision(s->model, (HwPrecision) hw_inference_precision, &err) != HW_OK)
	{
		hw_batch_free(b);
		hw_predictions_free(pr);
		if (err.code == HW_ERR_INVALID)
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							errmsg("headwater.inference_precision = bf16 is not available to serve model \"%s\"",
								   s->model_name),
							errdetail("%s", err.msg),
							errhint("Set headwater.inference_precision to 'auto' (bf16 where the processor has it) "
									"or 'fp32'.")));
		hw_pg_raise_core_error(&err, "preparing the model's bf16 weights");
	}
	/* inference forward: no tape, no loss; bit-identical per row in any batch */
	int rc = hw_model_predict(model, b, pr, &err);
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
		o->ord_levels = pr->ord_levels;
		for (int k = 0; k < pr->ord_levels; k++)
			o->ord_p[k] = pr->ord_p[(size_t) i * HW_ORD_LEVELS + k];
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

/* Threads a multi-batch request may use: 0 = every CPU.  Several sessions
 * predicting in batch at once each take the whole team by default, which
 * oversubscribes the CPUs (a team whose threads wait for a busy core runs
 * many times slower); a DBA who serves many batch sessions lowers it. */
static int hw_serving_threads = 0;


void
hw_serving_guc_init(void)
{
	DefineCustomIntVariable("headwater.serving_threads",
							"Threads of an rt_predict_batch / rt_predict_table / rt_predict_into request of more than one batch.",
							"0: every CPU of the server (the default); 1: one thread. "
							"A single-row call also takes them while the server is idle and no other session serves. "
							"Lower it when many sessions predict in batch at once.",
							&hw_serving_threads, 0, 0, 1024, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("headwater.inference_precision",
							 "Arithmetic of the served model's layers: auto, fp32 or bf16.",
							 "auto (the default): bf16 on processors with AVX512_BF16 where it beats the fp32 "
							 "products, fp32 elsewhere; "
							 "fp32: always fp32; bf16: bf16 or an error.",
							 &hw_inference_precision, HW_PRECISION_AUTO, hw_precision_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

int
hw_serving_wide_threads(void)
{
	/* more threads than CPUs only oversubscribe them: clamped as rt_train's
	 * threads option is */
	return hw_train_clamp_threads(hw_serving_threads);
}

void
hw_serving_set_threads(HwServing *s, int n)
{
	if (strcmp(s->be->ops->name, "cpu") == 0)
		hw_backend_cpu_set_threads(s->be, n);
}

void
hw_serving_set_wide(HwServing *s, bool wide)
{
	s->wide = wide;
	hw_serving_set_threads(s, wide ? hw_serving_wide_threads() : 1);
}
