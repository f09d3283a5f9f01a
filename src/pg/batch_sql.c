/*
 * batch_sql.c: rt_sample_batches, rt_batch_tensor, rt_batch_sequence: the
 * sampler's batches made visible in SQL (headwater.batch / batch_tensor).
 *
 * A stored batch holds the 20 seed-000 tensors plus two of its own for
 * inspection: _row_global [B,R] uint32 (global snapshot row of each
 * sequence-local row, 0xffffffff for a virtual task-table row or none) and
 * _row_vseed [B,R] uint32 (task seed index shown by a virtual row, else
 * 0xffffffff).  Tensors are stored little-endian, row-major, in the dtypes
 * of seed 001 section 3b.
 *
 * Bounds: the batches are for looking at, and live in the extension's own
 * tables, so one call may write at most HW_SAMPLE_MAX_N batches and
 * HW_SAMPLE_MAX_CELLS cells (n x batch_size x seq_len), the batches of one
 * owner role's models at most headwater.max_batch_storage bytes, and a new
 * call prunes the model's batches older than its last HW_BATCH_KEEP_CALLS
 * calls of the same function (batches made in the current transaction are
 * kept).
 *
 * The sampler runs single-threaded here (a backend is no place for thread
 * teams); batches are the same with any thread count.  All tasks of the
 * model are loaded so the virtual column ids match training (task.h layout).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/timestamp.h"

#include "batch.h"
#include "hw_pg.h"
#include "hw_pg_task.h"
#include "sampler.h"
#include "timeenc.h"

#define EPOCH_2000_US INT64CONST(946684800000000)
#define NO_ROW 0xffffffffu
/* _row_vseed of context label k (prediction): CTX_ROW_BASE - k */
#define CTX_ROW_BASE 0xfffffffeu

/* one call of rt_sample_batches: at most this many batches ... */
#define HW_SAMPLE_MAX_N 1000
/* ... and n x batch_size x seq_len cells (about 16 bytes stored per cell) */
#define HW_SAMPLE_MAX_CELLS (INT64CONST(4) * 1024 * 1024)
/* a new call (rt_sample_batches, rt_debug_predict_batch) keeps the batches
 * of the model's last calls before it, up to this many calls with itself */
#define HW_BATCH_KEEP_CALLS 16

/* headwater.max_batch_storage, kB: stored batches per owner role */
static int hw_max_batch_storage_kb = 256 * 1024;

void
hw_batch_guc_init(void)
{
	DefineCustomIntVariable("headwater.max_batch_storage",
							"Most bytes of sampled batches (rt_sample_batches, rt_debug_predict_batch) stored "
							"for the models of one owner role.",
							"A call that would store more is refused and writes nothing; "
							"each model keeps the batches of its last calls only.",
							&hw_max_batch_storage_kb, 256 * 1024, 0, INT_MAX, PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/* ERROR unless the caller may use the model (owner, member, superuser);
 * caller connected to SPI.  Returns the model's source schema. */
static char *
check_model(int32 model_id, const char *what)
{
	HwAsOwner as;
	char *schema;

	hw_model_require(model_id, HW_RIGHT_OWN, what);
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT source_schema FROM headwater.model WHERE model_id = $1",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)},
							  NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read model %d", model_id);
	hw_restore_user(&as);
	schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return schema;
}

static void
free_sampler_cb(void *arg)
{
	hw_sampler_free((HwSampler *) arg);
}

static void
free_batch_cb(void *arg)
{
	HwBatch **b = arg;

	hw_batch_free(*b);
	*b = NULL;
}

static bytea *
to_bytea(const void *p, size_t n)
{
	bytea *b = palloc(VARHDRSZ + n);

	SET_VARSIZE(b, VARHDRSZ + n);
	if (n)
		memcpy(VARDATA(b), p, n);
	return b;
}

static ArrayType *
int_array(const int64 *v, int n)
{
	Datum *d = palloc(sizeof(Datum) * (n ? n : 1));

	for (int i = 0; i < n; i++)
		d[i] = Int32GetDatum((int32) v[i]);
	return construct_array(d, n, INT4OID, 4, true, TYPALIGN_INT);
}

static size_t
view_bytes(const HwTensorView *v)
{
	size_t bytes = hw_dtype_size(v->dtype);

	for (int d = 0; d < v->ndim; d++)
		bytes *= (size_t) v->shape[d];
	return bytes;
}

/* Bytes the current call may still store (set by start_batch_call). */
static int64 call_bytes_left;

/*
 * The first batch of a call (rt_sample_batches, rt_debug_predict_batch):
 * prunes the model's batches older than its last HW_BATCH_KEEP_CALLS - 1
 * calls of the same function (a call's batches are numbered from 0; the
 * prediction batches, split 'predict', are counted apart from the sampled
 * ones, which they are compared with; those of the current transaction
 * stay, its caller may still read them), then sets the bytes
 * the call may store: headwater.max_batch_storage less what the batches of
 * the owner role's models hold.  As the extension owner, in SPI.
 */
static void
start_batch_call(int32 model_id, const char *split)
{
	bool  isnull;
	int64 used;

	if (SPI_execute_with_args("DELETE FROM headwater.batch b WHERE b.model_id = $1 AND b.created_at < now() "
							  "AND (b.split = 'predict') = $3 "
							  "AND b.batch_id < (SELECT k.batch_id FROM headwater.batch k "
							  "                  WHERE k.model_id = $1 AND k.batch_number = 0 "
							  "                    AND (k.split = 'predict') = $3 "
							  "                  ORDER BY k.batch_id DESC OFFSET $2 LIMIT 1)",
							  3, (Oid[]) {INT4OID, INT4OID, BOOLOID},
							  (Datum[]) {Int32GetDatum(model_id), Int32GetDatum(HW_BATCH_KEEP_CALLS - 2),
										 BoolGetDatum(strcmp(split, "predict") == 0)},
							  NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not prune the stored batches of model %d", model_id);
	if (SPI_execute_with_args("SELECT coalesce(sum(octet_length(t.data)), 0)::bigint "
							  "FROM headwater.batch_tensor t JOIN headwater.batch b USING (batch_id) "
							  "JOIN headwater.model m USING (model_id) "
							  "WHERE m.owner = (SELECT o.owner FROM headwater.model o WHERE o.model_id = $1)",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)},
							  NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not measure the stored batches of model %d", model_id);
	used = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	call_bytes_left = (int64) hw_max_batch_storage_kb * 1024 - used;
}

/* ERROR 54000 when a batch of `bytes` would pass the call's storage budget. */
static void
charge_batch(const char *task_name, int64 bytes)
{
	if (bytes > call_bytes_left)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("storing these batches of task \"%s\" would pass headwater.max_batch_storage (%d kB) "
						"for the models of its model's owner", task_name, hw_max_batch_storage_kb),
				 errdetail("Nothing was stored."),
				 errhint("Sample fewer or smaller batches; each model keeps the batches of its last %d calls "
						 "(rt_drop_task removes a task's), and a superuser may raise headwater.max_batch_storage.",
						 HW_BATCH_KEEP_CALLS)));
	call_bytes_left -= bytes;
}

/*
 * Stores batch b (the last one sm built) of task in headwater.batch /
 * batch_tensor as the extension owner and returns its id; the caller is
 * connected to SPI and has checked the model's owner.  split is a label
 * ('train', ..., 'predict'); seed_idx[B] the task seed of each sequence (-1:
 * a prediction).  plans (2, NULL at first) caches the prepared inserts.
 */
int64
hw_pg_store_batch(int32 model_id, const HwTask *task, const char *split, int64 batch_number, int64 seed,
				  int32 S, const HwBatch *b, const HwSampler *sm, const int64 *seed_idx, SPIPlanPtr *plans)
{
	HwAsOwner as;
	bool isnull;
	int B = b->B;

	hw_become_owner(&as);
	if (plans[0] == NULL)
	{
		start_batch_call(model_id, split);
		plans[0] = SPI_prepare("INSERT INTO headwater.batch (model_id, task_id, split, batch_number, seed, batch_size, "
							   "seq_len, n_rows, n_texts, vcol_base, seed_idx) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
							   "$9, $10, $11) RETURNING batch_id",
							   11, (Oid[]) {INT4OID, INT4OID, TEXTOID, INT8OID, INT8OID, INT4OID, INT4OID, INT4OID,
											INT4OID, INT4OID, INT4ARRAYOID});
		plans[1] = SPI_prepare("INSERT INTO headwater.batch_tensor (batch_id, name, dtype, shape, data) "
							   "VALUES ($1, $2, $3, $4, $5)",
							   5, (Oid[]) {INT8OID, TEXTOID, TEXTOID, INT4ARRAYOID, BYTEAOID});
		if (!plans[0] || !plans[1])
			elog(ERROR, "could not prepare batch inserts");
	}
	HwTensorView views[HW_BATCH_NTENSORS + 2];

	hw_batch_tensors((HwBatch *) b, views);
	/* the sequences' row sources, for rt_batch_sequence */
	size_t BR = (size_t) B * b->R;
	uint32 *rg = palloc(sizeof(uint32) * (BR ? BR : 1));
	uint32 *rv = palloc(sizeof(uint32) * (BR ? BR : 1));

	for (size_t i = 0; i < BR; i++)
		rg[i] = rv[i] = NO_ROW;
	for (int i = 0; i < B; i++)
	{
		const HwCellSource *rows;
		int nrows;

		if (hw_sampler_last_rows(sm, i, &rows, &nrows) != HW_OK)
			continue;
		for (int r = 0; r < nrows; r++)
		{
			rg[(size_t) i * b->R + r] = rows[r].row >= 0 ? (uint32) rows[r].row : NO_ROW;
			/* a context label: its index below NO_ROW (see rt_batch_sequence) */
			rv[(size_t) i * b->R + r] = rows[r].vseed >= 0 ? (uint32) rows[r].vseed :
				rows[r].vseed <= HW_VSEED_CONTEXT ? CTX_ROW_BASE - (uint32) (HW_VSEED_CONTEXT - rows[r].vseed) : NO_ROW;
		}
	}
	views[HW_BATCH_NTENSORS] = (HwTensorView) {"_row_global", HW_DT_UINT32, 2, {B, b->R, 0}, rg};
	views[HW_BATCH_NTENSORS + 1] = (HwTensorView) {"_row_vseed", HW_DT_UINT32, 2, {B, b->R, 0}, rv};
	{
		int64 batch_bytes = 0;

		for (int v = 0; v < HW_BATCH_NTENSORS + 2; v++)
			batch_bytes += (int64) view_bytes(&views[v]);
		charge_batch(task->name, batch_bytes);
	}
	Datum bv[11] = {
		Int32GetDatum(model_id), Int32GetDatum(task->task_id), CStringGetTextDatum(split),
		Int64GetDatum(batch_number), Int64GetDatum(seed), Int32GetDatum(B), Int32GetDatum(S), Int32GetDatum(b->R),
		Int32GetDatum(b->U), Int32GetDatum(task->col_base), PointerGetDatum(int_array(seed_idx, B))
	};
	char bn[12] = "           ";

	if (task->col_base < 0)
		bn[9] = 'n';
	if (SPI_execute_plan(plans[0], bv, bn, false, 1) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "could not store a batch");
	int64 batch_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	for (int v = 0; v < HW_BATCH_NTENSORS + 2; v++)
	{
		size_t bytes = view_bytes(&views[v]);
		Datum tv[5] = {
			Int64GetDatum(batch_id), CStringGetTextDatum(views[v].name),
			CStringGetTextDatum(hw_dtype_name(views[v].dtype)),
			PointerGetDatum(int_array(views[v].shape, views[v].ndim)),
			PointerGetDatum(to_bytea(views[v].data, bytes))
		};

		if (SPI_execute_plan(plans[1], tv, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not store tensor %s", views[v].name);
	}
	hw_restore_user(&as);
	return batch_id;
}

/* ------------------------------------------------------------ rt_sample_batches */

/*
 * The sampler options of rt_sample_batches(options => ...): the keys of
 * rt_train that shape sequences, so a person can look at what training
 * sees.  Caller connected to SPI.
 */
static void
sample_options(Datum options, HwSamplerConfig *cfg)
{
	static const char *const keys[] = {"max_rows", "child_width", "child_sampling", "recent_children",
									   "key_cells", "future_parents", "descendant_counts", NULL};
	Oid     argtypes[1] = {JSONBOID};
	Datum   values[1] = {options};
	char   *v;

	if (SPI_execute_with_args("SELECT pg_catalog.jsonb_typeof($1)", 1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT ||
		strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "object") != 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("rt_sample_batches options must be a JSON object"),
						errhint("For example: options => '{\"key_cells\": true}'")));
	if (SPI_execute_with_args("SELECT k FROM pg_catalog.jsonb_object_keys($1) k WHERE k OPERATOR(pg_catalog.<>) ALL ("
							  "'{max_rows,child_width,child_sampling,recent_children,key_cells,future_parents,descendant_counts}'"
							  "::pg_catalog.text[]) "
							  "ORDER BY k LIMIT 1",
							  1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the options");
	if (SPI_processed > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown rt_sample_batches option \"%s\"",
							   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
						errhint("Valid options are: max_rows, child_width, child_sampling, recent_children, key_cells, "
								"future_parents, descendant_counts.")));
	for (int i = 0; keys[i]; i++)
	{
		Oid     at[2] = {JSONBOID, TEXTOID};
		Datum   av[2] = {options, CStringGetTextDatum(keys[i])};
		char   *end;
		long    x = 0;

		if (SPI_execute_with_args("SELECT $1 OPERATOR(pg_catalog.->>) $2", 2, at, av, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read the options");
		v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (v == NULL)
			continue;
		if (i == 2)
		{
			if ((cfg->child_sampling = hw_child_sampling_from_name(v)) < 0)
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("option \"child_sampling\" must be \"recent\" or \"uniform\", got \"%s\"", v)));
			continue;
		}
		if (i == 5)
		{
			if ((cfg->future_parents = hw_future_parents_from_name(v)) < 0)
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("option \"future_parents\" must be \"hide\" or \"follow\", got \"%s\"", v),
								errhint("\"hide\" (the default) leaves out a parent row dated after the observation "
										"time; \"follow\" shows it, as the sampler did before the option.")));
			continue;
		}
		if (i == 4 || i == 6)
		{
			if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("option \"%s\" must be true or false, got \"%s\"", keys[i], v),
								errhint("A JSON boolean, e.g. options => '{\"%s\": false}'.", keys[i])));
			if (i == 4)
				cfg->key_cells = strcmp(v, "true") == 0;
			else
				cfg->descendant_counts = strcmp(v, "true") == 0;
			continue;
		}
		x = strtol(v, &end, 10);
		if (*end != '\0' || x < (i == 3 ? 0 : 1) || x > 65535)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"%s\" must be an integer >= %d, got \"%s\"", keys[i], i == 3 ? 0 : 1, v)));
		if (i == 0)
			cfg->max_rows = (int32) x;
		else if (i == 1)
			cfg->bfs_child_width = (int32) x;
		else
			cfg->recent_children = (int32) x;
	}
	if (cfg->recent_children > cfg->bfs_child_width)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option \"recent_children\" (%d) must be at most child_width (%d)",
							   cfg->recent_children, cfg->bfs_child_width)));
}

PG_FUNCTION_INFO_V1(rt_sample_batches);
Datum
rt_sample_batches(PG_FUNCTION_ARGS)
{
	char *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char *tname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	char *split_name = text_to_cstring(PG_GETARG_TEXT_PP(2));
	int32 n = PG_GETARG_INT32(3);
	int32 B = PG_GETARG_INT32(4);
	int32 S = PG_GETARG_INT32(5);
	int64 seed = PG_GETARG_INT64(6);
	Datum options = PG_GETARG_DATUM(7);
	HwSamplerConfig cfg;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32 model_id = hw_pg_model_id(model, false);
	int split = hw_split_from_name(split_name);
	HwError err = {0};

	if (split < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown split \"%s\"", split_name),
						errhint("Use train, val or test.")));
	if (n < 1 || n > HW_SAMPLE_MAX_N)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("n of rt_sample_batches must be between 1 and %d, not %d", HW_SAMPLE_MAX_N, n),
						errhint("Sampled batches are for inspection; rt_train samples its own.")));
	if (B < 1 || B > 4096 || S < 2 || S > 65535)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("batch_size must be 1..4096 and seq_len 2..65535 (got %d, %d)", B, S)));
	if ((int64) n * B * S > HW_SAMPLE_MAX_CELLS)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("rt_sample_batches of task \"%s\" would store n x batch_size x seq_len = "
							   INT64_FORMAT " cells, more than the limit of " INT64_FORMAT " per call",
							   tname, (int64) n * B * S, HW_SAMPLE_MAX_CELLS),
						errhint("Sample fewer, smaller or shorter batches (the defaults n => 1, batch_size => 32, "
								"seq_len => 1024 store 32768 cells).")));
	/* SETOF bigint: a one-column tuplestore built by hand (InitMaterializedSRF
	 * wants a row type unless the caller supplies one) */
	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) || !(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("rt_sample_batches must be called in a context that accepts a set")));
	{
		MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
		TupleDesc td = CreateTemplateTupleDesc(1);

		TupleDescInitEntry(td, (AttrNumber) 1, "rt_sample_batches", INT8OID, -1, 0);
		rsinfo->returnMode = SFRM_Materialize;
		rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
		rsinfo->setDesc = BlessTupleDesc(td);
		MemoryContextSwitchTo(old);
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	check_model(model_id, "sample batches of");
	hw_sampler_config_default(&cfg);
	sample_options(options, &cfg);
	SPI_finish();

	HwSnapshot *snap = hw_pg_snapshot_load_in_context(model_id, CurrentMemoryContext);
	int ntasks;
	HwTask **tasks = hw_pg_tasks_load_all(model_id, snap, CurrentMemoryContext, &ntasks);
	int ti = -1;

	for (int i = 0; i < ntasks; i++)
		if (strcmp(tasks[i]->name, tname) == 0)
			ti = i;
	if (ti < 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("task \"%s\" does not exist in model \"%s\"", tname, model),
						errhint("rt_tasks(%s) lists the model's tasks.", quote_literal_cstr(model))));
	if (tasks[ti]->split_count[split] == 0)
		ereport(ERROR, (errcode(ERRCODE_NO_DATA_FOUND),
						errmsg("task \"%s\" has no %s seeds", tname, hw_split_name(split)),
						errhint("Its splits are train %u, val %u, test %u; sample another split or change "
								"options split_ratios.", tasks[ti]->split_count[0], tasks[ti]->split_count[1],
								tasks[ti]->split_count[2])));
	double *w = palloc0(sizeof(double) * ntasks);

	w[ti] = 1.0;
	cfg.batch_size = B;
	cfg.seq_len = S;
	cfg.seed = (uint64_t) seed;
	cfg.n_threads = 1;
	cfg.task_weights = w;
	HwSampler *sm = hw_sampler_create(snap, tasks, ntasks, &cfg, &err);

	if (sm == NULL)
		hw_pg_raise_core_error(&err, "could not create the sampler");
	{
		MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

		cb->func = free_sampler_cb;
		cb->arg = sm;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	}
	HwBatch **holder = palloc0(sizeof(HwBatch *));
	{
		MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

		cb->func = free_batch_cb;
		cb->arg = holder;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	}
	uint32 *seeds = palloc(sizeof(uint32) * B);
	SPIPlanPtr plans[2] = {NULL, NULL};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int32 k = 0; k < n; k++)
	{
		HwBatch *b;

		if (hw_sampler_batch(sm, split, (uint64_t) k, &b, seeds, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "could not sample a batch");
		*holder = b;
		int64 *sv = palloc(sizeof(int64) * B);

		for (int i = 0; i < B; i++)
			sv[i] = seeds[i];
		int64 batch_id = hw_pg_store_batch(model_id, tasks[ti], hw_split_name(split), k, seed, S, b, sm, sv, plans);

		hw_batch_free(b);
		*holder = NULL;
		{
			Datum out = Int64GetDatum(batch_id);
			bool onull = false;

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &out, &onull);
		}
		CHECK_FOR_INTERRUPTS();
	}
	SPI_finish();
	return (Datum) 0;
}

/* ------------------------------------------------------------- reading back */

typedef struct StoredTensor
{
	int     dtype;
	int     ndim;
	int64   shape[3];
	int64   count;
	bytea  *data;
} StoredTensor;

static int
dtype_from_name(const char *s)
{
	for (int d = HW_DT_INT8; d <= HW_DT_FLOAT32; d++)
		if (strcmp(hw_dtype_name(d), s) == 0)
			return d;
	return -1;
}

/* Reads one tensor (caller connected to SPI, owner already checked). */
static MemoryContext keep_cxt;      /* where read_tensor copies to: the function's context */

static bool
read_tensor(int64 batch_id, const char *name, StoredTensor *t)
{
	HwAsOwner as;
	bool isnull;
	int rc;

	hw_become_owner(&as);
	rc = SPI_execute_with_args("SELECT dtype, shape, data FROM headwater.batch_tensor WHERE batch_id = $1 AND name = $2",
							   2, (Oid[]) {INT8OID, TEXTOID},
							   (Datum[]) {Int64GetDatum(batch_id), CStringGetTextDatum(name)}, NULL, true, 1);
	hw_restore_user(&as);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read tensor %s", name);
	if (SPI_processed != 1)
		return false;
	HeapTuple tup = SPI_tuptable->vals[0];
	TupleDesc td = SPI_tuptable->tupdesc;
	Datum *sv;
	bool *sn;
	int ns;
	MemoryContext old = MemoryContextSwitchTo(keep_cxt);

	t->dtype = dtype_from_name(SPI_getvalue(tup, td, 1));
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, td, 2, &isnull)), INT4OID, 4, true, TYPALIGN_INT,
					  &sv, &sn, &ns);
	t->ndim = ns;
	t->count = 1;
	for (int i = 0; i < ns && i < 3; i++)
	{
		t->shape[i] = DatumGetInt32(sv[i]);
		t->count *= t->shape[i];
	}
	t->data = DatumGetByteaPCopy(SPI_getbinval(tup, td, 3, &isnull));
	MemoryContextSwitchTo(old);
	if (t->dtype < 0 || (int64) VARSIZE(t->data) - VARHDRSZ != t->count * (int64) hw_dtype_size(t->dtype))
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("tensor %s of batch %lld is malformed", name, (long long) batch_id)));
	return true;
}

static double
tensor_at(const StoredTensor *t, int64 i)
{
	const char *p = VARDATA(t->data);

	switch (t->dtype)
	{
		case HW_DT_INT8: return ((const int8 *) p)[i];
		case HW_DT_UINT8: return ((const uint8 *) p)[i];
		case HW_DT_UINT16: return ((const uint16 *) p)[i];
		case HW_DT_INT32: return ((const int32 *) p)[i];
		case HW_DT_UINT32: return ((const uint32 *) p)[i];
		case HW_DT_FLOAT16: return hw_f16_to_f32(((const uint16 *) p)[i]);
		default: return ((const float *) p)[i];
	}
}

typedef struct BatchRow
{
	int32  model_id;
	int32  task_id;
	int32  B, S, R;
	int32  vcol_base;           /* -1 when none */
	bool   stale;               /* model refreshed after the batch */
	char  *task_name;
} BatchRow;

static void
read_batch_row(int64 batch_id, BatchRow *br)
{
	HwAsOwner as;
	bool isnull;
	int rc;

	hw_become_owner(&as);
	rc = SPI_execute_with_args("SELECT b.model_id, b.task_id, b.batch_size, b.seq_len, b.n_rows, b.vcol_base, "
							   "coalesce(m.refreshed_at > b.created_at, false), t.name "
							   "FROM headwater.batch b JOIN headwater.model m USING (model_id) "
							   "JOIN headwater.task t USING (task_id) WHERE b.batch_id = $1",
							   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(batch_id)}, NULL, true, 1);
	hw_restore_user(&as);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read batch %lld", (long long) batch_id);
	if (SPI_processed != 1)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("batch %lld does not exist", (long long) batch_id),
						errhint("rt_sample_batches returns the ids of the batches it makes.")));
	HeapTuple tup = SPI_tuptable->vals[0];
	TupleDesc td = SPI_tuptable->tupdesc;

	br->model_id = DatumGetInt32(SPI_getbinval(tup, td, 1, &isnull));
	br->task_id = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
	br->B = DatumGetInt32(SPI_getbinval(tup, td, 3, &isnull));
	br->S = DatumGetInt32(SPI_getbinval(tup, td, 4, &isnull));
	br->R = DatumGetInt32(SPI_getbinval(tup, td, 5, &isnull));
	Datum v = SPI_getbinval(tup, td, 6, &isnull);

	br->vcol_base = isnull ? -1 : DatumGetInt32(v);
	br->stale = DatumGetBool(SPI_getbinval(tup, td, 7, &isnull));
	br->task_name = MemoryContextStrdup(keep_cxt, SPI_getvalue(tup, td, 8));
}

PG_FUNCTION_INFO_V1(rt_batch_tensor);
Datum
rt_batch_tensor(PG_FUNCTION_ARGS)
{
	int64 batch_id = PG_GETARG_INT64(0);
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BatchRow br;
	StoredTensor t;

	InitMaterializedSRF(fcinfo, 0);
	keep_cxt = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	read_batch_row(batch_id, &br);
	check_model(br.model_id, "read the batches of");
	if (!read_tensor(batch_id, name, &t))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("batch %lld has no tensor \"%s\"", (long long) batch_id, name),
						errhint("Tensors: semantic_types, column_ids, seq_row_ids, is_null, numeric_values, "
								"timestamp_values, bool_values, categorical_embed_ids, text_embed_ids, is_target, "
								"is_padding, fk_adj, col_perm, out_perm, in_perm, text_batch_embeddings, "
								"target_stype, task_idx, cat_emb_start, cat_emb_count, _row_global, _row_vseed.")));
	SPI_finish();
	Datum *vals = palloc(sizeof(Datum) * (t.count ? t.count : 1));

	for (int64 i = 0; i < t.count; i++)
		vals[i] = Float8GetDatum(tensor_at(&t, i));
	Datum out[3] = {
		PointerGetDatum(int_array(t.shape, t.ndim)),
		CStringGetTextDatum(hw_dtype_name(t.dtype)),
		PointerGetDatum(construct_array(vals, (int) t.count, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE))
	};
	bool nulls[3] = {false, false, false};

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
	return (Datum) 0;
}

/* ----------------------------------------------------------- rt_batch_sequence */

/* ISO 8601 in UTC, as to_jsonb prints the source timestamps beside it */
static char *
format_us(int64 us)
{
	const int64 day = INT64CONST(86400000000);
	int64 days = us / day, rem = us % day, y;
	int m, d;

	if (rem < 0)
	{
		rem += day;
		days--;
	}
	hw_civil_from_days(days, &y, &m, &d);
	int64 s = rem / 1000000, frac = rem % 1000000;
	char *out = psprintf("%04lld-%02d-%02dT%02d:%02d:%02d", (long long) y, m, d,
						 (int) (s / 3600), (int) (s / 60 % 60), (int) (s % 60));

	if (frac)
		out = psprintf("%s.%06lld", out, (long long) frac);
	return psprintf("%s+00:00", out);
}

static char *
task_value_text(const HwTask *t, uint32 seed)
{
	if (seed >= t->nseeds)
		return NULL;
	if (t->target_null[seed])
		return NULL;
	double v = t->target[seed];

	switch (t->target_stype)
	{
		case HW_ST_NUMERICAL: return psprintf("%.15g", v);
		case HW_ST_BOOLEAN: return pstrdup(v != 0 ? "true" : "false");
		case HW_ST_TIMESTAMP: return format_us((int64) v);
		case HW_ST_CATEGORICAL:
			if (t->kind == HW_TASK_QUERY && (uint32) v < t->ncat_own)
				return pstrdup(t->cat_values[(uint32) v]);
			return psprintf("category %u", (uint32) v);
		default: return NULL;
	}
}

typedef struct SrcRow
{
	char  *key;
	Jsonb *row;
	bool   changed;
} SrcRow;

PG_FUNCTION_INFO_V1(rt_batch_sequence);
Datum
rt_batch_sequence(PG_FUNCTION_ARGS)
{
	int64 batch_id = PG_GETARG_INT64(0);
	int32 b = PG_GETARG_INT32(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BatchRow br;
	StoredTensor st, ci, sr, nu, tg, pd, rg, rv;
	char *schema;

	InitMaterializedSRF(fcinfo, 0);
	MemoryContext fncxt = CurrentMemoryContext;

	keep_cxt = fncxt;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	read_batch_row(batch_id, &br);
	schema = MemoryContextStrdup(fncxt, check_model(br.model_id, "read the batches of"));
	if (b < 0 || b >= br.B)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("batch %lld has sequences 0..%d, not %d", (long long) batch_id, br.B - 1, b)));
	if (br.stale)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("batch %lld was sampled before the last rt_refresh of its model", (long long) batch_id),
						errhint("Its rows no longer match the snapshot; sample it again with rt_sample_batches.")));
	if (!read_tensor(batch_id, "semantic_types", &st) || !read_tensor(batch_id, "column_ids", &ci) ||
		!read_tensor(batch_id, "seq_row_ids", &sr) || !read_tensor(batch_id, "is_null", &nu) ||
		!read_tensor(batch_id, "is_target", &tg) || !read_tensor(batch_id, "is_padding", &pd) ||
		!read_tensor(batch_id, "_row_global", &rg) || !read_tensor(batch_id, "_row_vseed", &rv))
		elog(ERROR, "batch %lld is incomplete", (long long) batch_id);
	SPI_finish();

	HwSnapshot *snap = hw_pg_snapshot_load_in_context(br.model_id, CurrentMemoryContext);
	HwTask *task = hw_pg_task_load(br.model_id, br.task_name, snap);
	MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

	cb->func = (MemoryContextCallbackFunction) hw_task_free;
	cb->arg = task;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);

	/* source rows of this sequence, fetched per table as the calling role */
	int R = br.R, S = br.S;
	SrcRow *src = palloc0(sizeof(SrcRow) * (R ? R : 1));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int ti = 0; ti < snap->ntables; ti++)
	{
		const HwTable *tb = &snap->tables[ti];
		int64 *want = palloc(sizeof(int64) * (R ? R : 1));
		int nwant = 0;

		for (int r = 0; r < R; r++)
		{
			uint32 g = (uint32) tensor_at(&rg, (int64) b * R + r);

			if (g != NO_ROW && g < snap->nrows && snap->row_table[g] == ti)
				want[nwant++] = g - tb->row_offset;
		}
		if (nwant == 0)
			continue;
		/* the catalog numbers rows ORDER BY the primary key */
		HwAsOwner as;
		bool isnull;

		hw_become_owner(&as);
		if (SPI_execute_with_args("SELECT pk_columns FROM headwater.model_table WHERE model_id = $1 AND table_name = $2",
								  2, (Oid[]) {INT4OID, TEXTOID},
								  (Datum[]) {Int32GetDatum(br.model_id), CStringGetTextDatum(tb->name)},
								  NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not read table %s of the model", tb->name);
		hw_restore_user(&as);
		Datum pkd = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		StringInfoData order, key, sql;

		initStringInfo(&order);
		initStringInfo(&key);
		if (isnull)
		{
			appendStringInfoString(&order, "tableoid, ctid");
			appendStringInfoString(&key, "x.ctid::pg_catalog.text");
		}
		else
		{
			Datum *pv;
			bool *pn;
			int np;

			deconstruct_array(DatumGetArrayTypeP(pkd), TEXTOID, -1, false, TYPALIGN_INT, &pv, &pn, &np);
			appendStringInfoString(&key, "pg_catalog.concat_ws(E'\\x1f'");
			for (int k = 0; k < np; k++)
			{
				const char *c = quote_identifier(TextDatumGetCString(pv[k]));

				appendStringInfo(&order, "%s%s", k ? ", " : "", c);
				appendStringInfo(&key, ", x.%s::pg_catalog.text", c);
			}
			appendStringInfoChar(&key, ')');
		}
		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT r, k, j FROM (SELECT pg_catalog.row_number() OVER (ORDER BY %s) OPERATOR(pg_catalog.-) 1 AS r, "
						 "%s AS k, pg_catalog.to_jsonb(x.*) AS j FROM %s.%s x) s WHERE r OPERATOR(pg_catalog.=) ANY($1)",
						 order.data, key.data, quote_identifier(schema), quote_identifier(tb->name));
		if (SPI_execute_with_args(sql.data, 1, (Oid[]) {INT8ARRAYOID},
								  (Datum[]) {PointerGetDatum(construct_array((Datum *) want, nwant, INT8OID, 8,
																			   true, TYPALIGN_DOUBLE))},
								  NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read rows of %s", tb->name);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple tup = SPI_tuptable->vals[i];
			int64 lr = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
			char *k = SPI_getvalue(tup, SPI_tuptable->tupdesc, 2);
			/* copy out of SPI's memory, which SPI_finish releases */
			MemoryContext old = MemoryContextSwitchTo(fncxt);
			Jsonb *j = DatumGetJsonbPCopy(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull));

			MemoryContextSwitchTo(old);

			for (int r = 0; r < R; r++)
				if ((uint32) tensor_at(&rg, (int64) b * R + r) == tb->row_offset + (uint32) lr)
				{
					src[r].key = MemoryContextStrdup(fncxt, k ? k : "");
					src[r].row = j;
					src[r].changed = tb->key_hash && k &&
						hw_hash_key_text(k, strlen(k)) != tb->key_hash[lr];
				}
		}
	}
	SPI_finish();

	for (int p = 0; p < S; p++)
	{
		int64 pos = (int64) b * S + p;
		Datum values[10];
		bool nulls[10] = {false};
		bool padding = tensor_at(&pd, pos) != 0;
		int row = (int) tensor_at(&sr, pos);
		int stype = (int) tensor_at(&st, pos);
		int32 col = (int32) tensor_at(&ci, pos);

		values[0] = Int32GetDatum(p);
		values[6] = BoolGetDatum(tensor_at(&tg, pos) != 0);
		values[7] = BoolGetDatum(tensor_at(&nu, pos) != 0);
		values[8] = BoolGetDatum(padding);
		values[9] = Int32GetDatum(row);
		if (padding)
		{
			for (int c = 1; c <= 5; c++)
				nulls[c] = true;
			nulls[9] = true;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			continue;
		}
		values[5] = CStringGetTextDatum(hw_stype_name(stype) ? hw_stype_name(stype) : "?");
		uint32 g = row < R ? (uint32) tensor_at(&rg, (int64) b * R + row) : NO_ROW;
		uint32 vs = row < R ? (uint32) tensor_at(&rv, (int64) b * R + row) : NO_ROW;
		int32 tix, cix;

		if (g != NO_ROW && snapshot_column_by_global_id(snap, col, &tix, &cix))
		{
			const char *cname = snap->tables[tix].cols[cix].name;

			values[1] = CStringGetTextDatum(snap->tables[tix].name);
			values[2] = CStringGetTextDatum(cname);
			if (src[row].key)
			{
				values[3] = CStringGetTextDatum(src[row].changed ? psprintf("%s (changed since the snapshot)", src[row].key)
												: src[row].key);
				JsonbValue kv, *jv;

				kv.type = jbvString;
				kv.val.string.val = (char *) cname;
				kv.val.string.len = (int) strlen(cname);
				jv = findJsonbValueFromContainer(&src[row].row->root, JB_FOBJECT, &kv);
				if (jv == NULL || jv->type == jbvNull)
					nulls[4] = true;
				else if (jv->type == jbvString)
					values[4] = CStringGetTextDatum(pnstrdup(jv->val.string.val, jv->val.string.len));
				else if (jv->type == jbvBool)
					values[4] = CStringGetTextDatum(jv->val.boolean ? "true" : "false");
				else if (jv->type == jbvNumeric)
					values[4] = DirectFunctionCall1(textin, DirectFunctionCall1(numeric_out, NumericGetDatum(jv->val.numeric)));
				else
				{
					Jsonb *one = JsonbValueToJsonb(jv);

					values[4] = CStringGetTextDatum(JsonbToCString(NULL, &one->root, VARSIZE(one)));
				}
			}
			else
			{
				nulls[3] = true;        /* row gone from the source table */
				nulls[4] = true;
			}
		}
		else
		{
			/* a row of the task's virtual table (observation time, target) */
			values[1] = CStringGetTextDatum(psprintf("task %s", task->name));
			values[2] = CStringGetTextDatum(col == br.vcol_base ? "observation time" : task->target_name);
			if (vs != NO_ROW && vs < task->nseeds)
			{
				values[3] = CStringGetTextDatum(psprintf("seed %u", vs));
				char *v = NULL;

				if (col == br.vcol_base)
					v = task->obs_time_us[vs] == HW_NO_CUTOFF ? NULL : format_us(task->obs_time_us[vs]);
				else
					v = task_value_text(task, vs);
				if (v)
					values[4] = CStringGetTextDatum(v);
				else
					nulls[4] = true;
			}
			else if (vs != NO_ROW && vs > CTX_ROW_BASE - 65536u)
			{
				/* a context label of the prediction (its value is in the tensors only) */
				values[3] = CStringGetTextDatum(psprintf("context label %u", CTX_ROW_BASE - vs + 1));
				nulls[4] = true;
			}
			else
			{
				nulls[3] = true;
				nulls[4] = true;
			}
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
