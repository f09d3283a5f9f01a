/*
 * task_load.c: the task loaders (hw_pg_task.h): a model's tasks read from
 * headwater.task / task_seed and resolved against its current snapshot.
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "utils/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "core/embed_hash.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/task/task_priv.h"

/* ------------------------------------------------------------------ loaders */

typedef struct TaskList
{
	HwTask **tasks;
	int      n;
	bool     lenient;           /* tasks that no longer fit the snapshot go to bad[] */
	HwPgUnusableTask *bad;      /* [nbad] malloc'd (lenient only) */
	int      nbad;
} TaskList;

void
hw_pg_unusable_free(HwPgUnusableTask *u, int n)
{
	for (int i = 0; i < n; i++)
	{
		free(u[i].name);
		free(u[i].message);
	}
	free(u);
}

static void
free_task_list(void *arg)
{
	TaskList *l = arg;

	for (int i = 0; i < l->n; i++)
		hw_task_free(l->tasks[i]);
	free(l->tasks);
	l->tasks = NULL;
	l->n = 0;
	hw_pg_unusable_free(l->bad, l->nbad);
	l->bad = NULL;
	l->nbad = 0;
}

/* The task just added to l (its last) no longer fits the snapshot: msg says
 * why.  Strict: ERROR 55000.  Lenient: the task is freed and left out, and
 * (task_id, name, msg) is recorded in l->bad. */
static void
task_unusable(TaskList *l, const char *msg)
{
	HwTask *t = l->tasks[l->n - 1];
	HwPgUnusableTask *nb;

	if (!l->lenient)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("%s", msg),
						errhint("Drop the task with rt_drop_task and create it again.")));
	nb = realloc(l->bad, sizeof(HwPgUnusableTask) * (l->nbad + 1));
	if (nb == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	l->bad = nb;
	nb[l->nbad].task_id = t->task_id;
	nb[l->nbad].name = strdup(t->name);
	nb[l->nbad].message = strdup(msg);
	l->nbad++;
	if (nb[l->nbad - 1].name == NULL || nb[l->nbad - 1].message == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	l->tasks[--l->n] = NULL;
	hw_task_free(t);
}

/* The settings of a task stored with it (columns 1, 5-12 and 18 of the
 * query below). */
static void
read_task_settings(HwTask *t, HeapTuple tup, TupleDesc td)
{
	bool isnull;
	Datum *rv;
	bool *rn;
	int nr;

	t->task_id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
	t->target_stype = (int8_t) hw_stype_from_name(SPI_getvalue(tup, td, 6));
	t->target_name = strdup(SPI_getvalue(tup, td, 5));
	t->split_seed = (uint64_t) DatumGetInt64(SPI_getbinval(tup, td, 7, &isnull));
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, td, 8, &isnull)), FLOAT8OID, 8,
					  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &rv, &rn, &nr);
	for (int k = 0; k < 3 && k < nr; k++)
		t->split_ratio[k] = DatumGetFloat8(rv[k]);
	t->label_history = DatumGetBool(SPI_getbinval(tup, td, 9, &isnull));
	t->history_max = DatumGetInt32(SPI_getbinval(tup, td, 10, &isnull));
	t->target_mean = DatumGetFloat8(SPI_getbinval(tup, td, 11, &isnull));
	t->target_std = DatumGetFloat8(SPI_getbinval(tup, td, 12, &isnull));

	char *loss = SPI_getvalue(tup, td, 18);
	int   nl = loss ? hw_num_loss_from_name(loss) : -1;

	if (nl >= 0)        /* validated at creation; absent = the default */
		t->num_loss = (int8_t) nl;
}

/* A query task's own categories (column 13) and the embeddings of its
 * categories (14) and virtual columns (15), into malloc'd arrays. */
static void
read_categories_and_embeddings(HwTask *t, HeapTuple tup, TupleDesc td)
{
	bool isnull;
	Datum cd = SPI_getbinval(tup, td, 13, &isnull);

	if (!isnull)
	{
		Datum *cv;
		bool *cn;
		int nc;

		deconstruct_array(DatumGetArrayTypeP(cd), TEXTOID, -1, false, TYPALIGN_INT, &cv, &cn, &nc);
		t->ncat_own = (uint32) nc;
		t->cat_values = calloc(nc ? nc : 1, sizeof(char *));
		for (int k = 0; k < nc; k++)
			t->cat_values[k] = strdup(TextDatumGetCString(cv[k]));
	}
	for (int col = 14; col <= 15; col++)
	{
		Datum bd = SPI_getbinval(tup, td, col, &isnull);

		if (isnull)
			continue;
		bytea *b = DatumGetByteaPP(bd);
		size_t len = VARSIZE_ANY_EXHDR(b);
		uint16_t *p = malloc(len ? len : 1);

		if (p == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		memcpy(p, VARDATA_ANY(b), len);
		if (col == 14)
			t->cat_emb_own = p;
		else
		{
			t->vcol_emb = p;
			t->d_text = (int32_t) (len / 4);
		}
	}
}

/* A query task's seeds (column 16), resolved against the snapshot if given:
 * seeds whose anchor rows are gone are dropped with a NOTICE. */
static void
read_query_seeds(HwTask *t, HeapTuple tup, TupleDesc td, const HwSnapshot *snap, const char *name)
{
	HwError err = {0};
	bool isnull;
	Datum sd = SPI_getbinval(tup, td, 16, &isnull);

	if (isnull)
		elog(ERROR, "seeds of task %s are missing", name);
	bytea *sb = DatumGetByteaPP(sd);

	if (hw_task_seeds_deserialize(t, (const uint8_t *) VARDATA_ANY(sb), VARSIZE_ANY_EXHDR(sb), &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not load the seeds");
	if (snap)
	{
		uint32_t dropped = 0;

		if (hw_task_resolve_rows(t, snap, &dropped, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "could not resolve the seeds");
		if (dropped > 0)
			ereport(NOTICE, (errmsg("%u seeds of task \"%s\" were dropped: their anchor rows are no longer in the model",
									dropped, name)));
	}
}

/* A cell task's seeds are its anchor table's rows in the snapshot (split
 * options were set before, ahead of the splits); a target column no longer
 * predictable makes the task unusable. */
static void
build_cell_seeds(TaskList *l, HwTask *t, const HwSnapshot *snap, int at, const char *target, const char *name)
{
	HwError err = {0};
	int c = hw_pgtask_snap_column(snap, at, target);

	if (c < 0 || hw_task_build_cell(t, snap, at, c, &err) != HW_OK)
		task_unusable(l, psprintf("target column \"%s\" of task \"%s\" can no longer be predicted: %s",
								  target, name, c < 0 ? "it is not part of the model" : err.msg));
}

/* Builds the tasks of rows of the query below into l (l->tasks malloc'd);
 * caller connected to SPI. */
static void
load_rows(TaskList *l, const HwSnapshot *snap, const char *model_name_for_msgs)
{
	uint64 nrows = SPI_processed;
	SPITupleTable *tt = SPI_tuptable;
	TupleDesc td = tt->tupdesc;
	HwError err = {0};

	l->tasks = calloc(nrows ? nrows : 1, sizeof(HwTask *));
	if (l->tasks == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	for (uint64 i = 0; i < nrows; i++)
	{
		HeapTuple tup = tt->vals[i];
		char *name = SPI_getvalue(tup, td, 2);
		char *kind = SPI_getvalue(tup, td, 3);
		char *anchor = SPI_getvalue(tup, td, 4);
		char *target = SPI_getvalue(tup, td, 5);
		HwTask *t = hw_task_new(name, strcmp(kind, "query") == 0 ? HW_TASK_QUERY : HW_TASK_CELL, &err);

		if (t == NULL)
			hw_pg_raise_core_error(&err, "could not load a task");
		l->tasks[l->n++] = t;
		read_task_settings(t, tup, td);

		int at = snap ? hw_pgtask_snap_table(snap, anchor) : -1;

		if (snap && at < 0)
		{
			task_unusable(l, psprintf("anchor table \"%s\" of task \"%s\" is no longer part of model \"%s\"",
									  anchor, name, model_name_for_msgs));
			continue;
		}
		t->anchor_table = at;
		if (t->kind == HW_TASK_CELL)
		{
			if (snap != NULL)
				build_cell_seeds(l, t, snap, at, target, name);
			continue;
		}
		read_categories_and_embeddings(t, tup, td);
		read_query_seeds(t, tup, td, snap, name);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
load_tasks(int32 model_id, const char *name, const HwSnapshot *snap, TaskList *l)
{
	HwAsOwner as;
	int rc;
	const char *sql =
		"SELECT t.task_id, t.name, t.kind, t.anchor_table, t.target_column, t.target_stype, t.split_seed, "
		"t.split_ratios, t.label_history, t.history_max, t.target_mean, t.target_std, t.categories, "
		"t.cat_emb, t.vcol_emb, s.data, m.name, t.options->>'loss' FROM headwater.task t JOIN headwater.model m USING (model_id) "
		"LEFT JOIN headwater.task_seed s USING (task_id) "
		"WHERE t.model_id = $1 AND ($2::text IS NULL OR t.name = $2) ORDER BY t.task_id";

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	rc = SPI_execute_with_args(sql, 2, (Oid[]) {INT4OID, TEXTOID},
							   (Datum[]) {Int32GetDatum(model_id), name ? CStringGetTextDatum(name) : (Datum) 0},
							   name ? NULL : " n", true, 0);
	hw_restore_user(&as);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the tasks of model %d", model_id);
	if (name && SPI_processed == 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("task \"%s\" does not exist in model %d", name, model_id),
						errhint("rt_tasks(model) lists the model's tasks.")));
	char *mname = SPI_processed > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 17) : "";

	PG_TRY();
	{
		load_rows(l, snap, mname);
	}
	PG_CATCH();
	{
		free_task_list(l);
		PG_RE_THROW();
	}
	PG_END_TRY();
	SPI_finish();
}

HwTask *
hw_pg_task_load(int32 model_id, const char *task_name, const HwSnapshot *snap)
{
	TaskList l = {NULL, 0, false, NULL, 0};
	HwTask *t;

	load_tasks(model_id, task_name, snap, &l);
	t = l.tasks[0];
	free(l.tasks);
	return t;
}

HwTask **
hw_pg_tasks_load_usable(int32 model_id, const HwSnapshot *snap, int *ntasks,
						HwPgUnusableTask **unusable, int *nunusable)
{
	TaskList l = {NULL, 0, true, NULL, 0};

	load_tasks(model_id, NULL, snap, &l);
	*ntasks = l.n;
	*unusable = l.bad;
	*nunusable = l.nbad;
	return l.tasks;
}

HwTask **
hw_pg_tasks_load_all(int32 model_id, const HwSnapshot *snap, MemoryContext cxt, int *ntasks)
{
	TaskList *l = cxt ? MemoryContextAllocZero(cxt, sizeof(TaskList)) : palloc0(sizeof(TaskList));

	load_tasks(model_id, NULL, snap, l);
	if (cxt)
	{
		MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

		cb->func = free_task_list;
		cb->arg = l;
		MemoryContextRegisterResetCallback(cxt, cb);
	}
	*ntasks = l->n;
	return l->tasks;
}
