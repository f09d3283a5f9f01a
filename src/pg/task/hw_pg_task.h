/*
 * hw_pg_task.h: PG-side access to tasks (owner: src/pg/task_*.c).
 *
 * Tasks live in headwater.task / headwater.task_seed (sql/parts/20_tasks.sql).
 * Task names are unique within their model (they may not contain '.').
 * Where no model is given (rt_predict and the other serving entry points) a
 * task is named 'model.task', or by its short name among the caller's own
 * models: hw_pg_task_lookup (task_ref.c).
 * "Model order" of tasks = ascending task_id: it fixes the virtual column
 * and category ids (task.h, hw_task_layout), so the trainer and rt_predict
 * must load tasks with hw_pg_tasks_load_all (all of the model's tasks, in
 * that order) even when they use only some of them.
 *
 * Loaded tasks are malloc-owned (hw_task_free), resolved against `snap`
 * (query tasks: anchors found again by key hash, vanished ones dropped with
 * a NOTICE; cell tasks: seeds rebuilt from the snapshot's rows).  `snap`
 * must be the model's current snapshot (hw_pg_snapshot_load).  Callers need
 * a transaction and no SPI connection of their own (these connect to SPI).
 */
#ifndef HW_PG_TASK_H
#define HW_PG_TASK_H

#include "postgres.h"

#include "executor/spi.h"
#include "core/sampler.h"
#include "core/task.h"

/* One task by name (ERROR 42704 with a hint when the model has no such task). */
HwTask *hw_pg_task_load(int32 model_id, const char *task_name, const HwSnapshot *snap);

/* All tasks of a model in model order; *ntasks may be 0.  When cxt is not
 * NULL, a reset callback on cxt frees the tasks and the array; when it is
 * NULL the caller owns them: hw_task_free() each, then free() the array. */
HwTask **hw_pg_tasks_load_all(int32 model_id, const HwSnapshot *snap, MemoryContext cxt, int *ntasks);

/* A task that can no longer be built against the model's current snapshot:
 * its anchor table or its target column is gone (after an rt_refresh). */
typedef struct HwPgUnusableTask
{
	int32   task_id;
	char   *name;               /* malloc'd */
	char   *message;            /* malloc'd: why, naming the task and what vanished */
} HwPgUnusableTask;

/* Serving (serving.c): all tasks of a model in model order like
 * hw_pg_tasks_load_all(cxt NULL) -- the caller owns them -- except that a
 * task that no longer fits `snap` is left out instead of failing the whole
 * model, and listed in *unusable (malloc'd [*nunusable], may be NULL; free
 * with hw_pg_unusable_free).  Leaving a task out only renumbers the virtual
 * columns and categories of later query tasks (task.h), which index frozen
 * embedding tables built from the same array, so the other tasks serve as
 * before. */
HwTask **hw_pg_tasks_load_usable(int32 model_id, const HwSnapshot *snap, int *ntasks,
								 HwPgUnusableTask **unusable, int *nunusable);
void     hw_pg_unusable_free(HwPgUnusableTask *u, int n);

/* The one resolver of a task reference given without a model (task_ref.c):
 * 'model.task' (split at the last dot; ERROR 42501 unless the caller may at
 * least predict with the model, before its task is looked up) or a short
 * 'task' among the models the caller may own (superusers: all; ERROR 42725
 * naming the candidates when several).  Its model id and task id; false
 * when missing and missing_ok, else ERROR 42704 that says nothing of other
 * roles' tasks.  The caller still checks the right it needs
 * (hw_task_require_predict, hw_model_require). */
bool hw_pg_task_lookup(const char *task_ref, bool missing_ok, int32 *model_id, int32 *task_id);

/* The id of the task `name` of model model_id, or -1 (no access check). */
int32 hw_pg_task_id_in_model(int32 model_id, const char *name);

/* Stores a sampled batch for inspection (batch_sql.c; rt_batch_tensor,
 * rt_batch_sequence read it back): see there. */
/* Defines headwater.max_batch_storage (batch_sql.c; from _PG_init). */
void hw_batch_guc_init(void);

int64 hw_pg_store_batch(int32 model_id, const HwTask *task, const char *split, int64 batch_number, int64 seed,
						int32 S, const HwBatch *b, const HwSampler *sm, const int64 *seed_idx, SPIPlanPtr *plans);

#endif
