/*
 * batch_sql.c: rt_sample_batches: the sampler's batches made visible in SQL
 * (headwater.batch / batch_tensor; read back by batch_read.c).
 *
 * A stored batch holds the 20 tensors of batch.h plus two of its own for
 * inspection: _row_global [B,R] uint32 (global snapshot row of each
 * sequence-local row, 0xffffffff for a virtual task-table row or none) and
 * _row_vseed [B,R] uint32 (task seed index shown by a virtual row, else
 * 0xffffffff).  Tensors are stored little-endian, row-major, in the dtypes
 * of batch.h.
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

#include "core/batch.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/base/hw_settings_pg.h"
#include "pg/task/hw_batch_sql.h"
#include "core/sampler.h"
#include "core/timeenc.h"


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
char *
hw_batch_check_model(int32 model_id, const char *what)
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

ArrayType *
hw_batch_int_array(const int64 *v, int n)
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
		Int32GetDatum(b->U), Int32GetDatum(task->col_base), PointerGetDatum(hw_batch_int_array(seed_idx, B))
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
			PointerGetDatum(hw_batch_int_array(views[v].shape, views[v].ndim)),
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
 * The sampler options of rt_sample_batches(options => ...): the rows of the
 * settings table marked HW_SETTING_SAMPLE (the keys of rt_train that shape
 * sequences, with rt_train's ranges), so a person can look at what
 * training sees.
 */
static void
sample_option(const char *key, const JsonbValue *v, void *arg)
{
	HwSettings *st = (HwSettings *) arg;
	const HwSettingDef *d = hw_setting_find(key);
	HwSettingValue sv;
	HwError     err = {0};
	char       *got;

	if (d == NULL || !(d->flags & HW_SETTING_SAMPLE))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown rt_sample_batches option \"%s\"", key),
						errhint("Valid options are: %s.", hw_pg_setting_names(HW_SETTING_SAMPLE))));
	hw_pg_setting_value(v, &sv);
	if (hw_setting_apply(st, d, &sv, &err) == HW_OK)
		return;
	got = hw_pg_json_scalar_text(v);
	if (d->type == HW_SETTING_BOOL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option \"%s\" must be true or false, got \"%s\"", key, got),
						errhint("A JSON boolean, e.g. options => '{\"%s\": false}'.", key)));
	if (d->type == HW_SETTING_ENUM)
	{
		char        names[128];

		hw_setting_range_text(d, names, sizeof(names));
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option \"%s\" must be %s, got \"%s\"", key, names, got),
						d->choices ? errhint("%s", d->choices) : 0));
	}
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("option \"%s\" must be an integer from %.0f to %.0f, got %s", key, d->min, d->max,
						   hw_pg_json_value_text(v)),
					errhint("%s", hw_pg_setting_hint(d))));
}

static void
sample_options(Jsonb *options, HwSamplerConfig *cfg)
{
	HwSettings  st;

	if (!JsonContainerIsObject(&options->root) || JsonContainerIsScalar(&options->root))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("rt_sample_batches options must be a JSON object"),
						errhint("For example: options => '{\"key_cells\": true}'")));
	memset(&st, 0, sizeof(st));
	st.scfg = *cfg;
	hw_pg_jsonb_each(&options->root, sample_option, &st);
	*cfg = st.scfg;
	if (cfg->recent_children > cfg->bfs_child_width)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option \"recent_children\" (%d) must be at most child_width (%d)",
							   cfg->recent_children, cfg->bfs_child_width)));
}

/* rt_sample_batches' state, passed between its steps by pointer. */
typedef struct SampleCall
{
	char       *model;
	char       *tname;
	int32       model_id;
	int         split;
	int32       n, B, S;
	int64       seed;
	HwSamplerConfig cfg;
	HwSnapshot *snap;
	HwTask    **tasks;
	int         ntasks;
	int         ti;             /* the sampled task */
	HwSampler  *sm;
	HwBatch   **holder;         /* the batch being stored: freed with the context on an ERROR */
} SampleCall;

/* The split, n, batch_size and seq_len, refused outside their ranges. */
static void
check_sample_args(const SampleCall *c, const char *split_name)
{
	int32 n = c->n, B = c->B, S = c->S;

	if (c->split < 0)
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
							   c->tname, (int64) n * B * S, HW_SAMPLE_MAX_CELLS),
						errhint("Sample fewer, smaller or shorter batches (the defaults n => 1, batch_size => 32, "
								"seq_len => 1024 store 32768 cells).")));
}

/* SETOF bigint: a one-column tuplestore built by hand (InitMaterializedSRF
 * wants a row type unless the caller supplies one) */
static void
init_bigint_set(ReturnSetInfo *rsinfo)
{
	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) || !(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("rt_sample_batches must be called in a context that accepts a set")));
	MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	TupleDesc td = CreateTemplateTupleDesc(1);

	TupleDescInitEntry(td, (AttrNumber) 1, "rt_sample_batches", INT8OID, -1, 0);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
	rsinfo->setDesc = BlessTupleDesc(td);
	MemoryContextSwitchTo(old);
}

/* The snapshot, all tasks, and the named one, which must have seeds in the split. */
static void
load_sampled_task(SampleCall *c)
{
	const char *tname = c->tname;
	int split = c->split;

	c->snap = hw_pg_snapshot_load_in_context(c->model_id, CurrentMemoryContext);
	c->tasks = hw_pg_tasks_load_all(c->model_id, c->snap, CurrentMemoryContext, &c->ntasks);
	c->ti = -1;
	for (int i = 0; i < c->ntasks; i++)
		if (strcmp(c->tasks[i]->name, tname) == 0)
			c->ti = i;
	if (c->ti < 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("task \"%s\" does not exist in model \"%s\"", tname, c->model),
						errhint("rt_tasks(%s) lists the model's tasks.", quote_literal_cstr(c->model))));
	const HwTask *t = c->tasks[c->ti];

	if (t->split_count[split] == 0)
		ereport(ERROR, (errcode(ERRCODE_NO_DATA_FOUND),
						errmsg("task \"%s\" has no %s seeds", tname, hw_split_name(split)),
						errhint("Its splits are train %u, val %u, test %u; sample another split or change "
								"options split_ratios.", t->split_count[0], t->split_count[1],
								t->split_count[2])));
}

/* A sampler of the one task (weight 1, the others 0), and the batch
 * holder, both freed with the function's context. */
static void
create_task_sampler(SampleCall *c)
{
	HwError err = {0};
	double *w = palloc0(sizeof(double) * c->ntasks);

	w[c->ti] = 1.0;
	c->cfg.batch_size = c->B;
	c->cfg.seq_len = c->S;
	c->cfg.seed = (uint64_t) c->seed;
	c->cfg.n_threads = 1;
	c->cfg.task_weights = w;
	c->sm = hw_sampler_create(c->snap, c->tasks, c->ntasks, &c->cfg, &err);

	if (c->sm == NULL)
		hw_pg_raise_core_error(&err, "could not create the sampler");
	{
		MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

		cb->func = free_sampler_cb;
		cb->arg = c->sm;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	}
	c->holder = palloc0(sizeof(HwBatch *));
	{
		MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

		cb->func = free_batch_cb;
		cb->arg = c->holder;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	}
}

/* Sample and store the n batches, returning their ids. */
static void
store_batches(SampleCall *c, ReturnSetInfo *rsinfo)
{
	HwError err = {0};
	int32 B = c->B;
	uint32 *seeds = palloc(sizeof(uint32) * B);
	SPIPlanPtr plans[2] = {NULL, NULL};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int32 k = 0; k < c->n; k++)
	{
		HwBatch *b;

		if (hw_sampler_batch(c->sm, c->split, (uint64_t) k, &b, seeds, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "could not sample a batch");
		*c->holder = b;
		int64 *sv = palloc(sizeof(int64) * B);

		for (int i = 0; i < B; i++)
			sv[i] = seeds[i];
		int64 batch_id = hw_pg_store_batch(c->model_id, c->tasks[c->ti], hw_split_name(c->split), k, c->seed, c->S,
										   b, c->sm, sv, plans);

		hw_batch_free(b);
		*c->holder = NULL;
		{
			Datum out = Int64GetDatum(batch_id);
			bool onull = false;

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &out, &onull);
		}
		CHECK_FOR_INTERRUPTS();
	}
	SPI_finish();
}

PG_FUNCTION_INFO_V1(rt_sample_batches);
Datum
rt_sample_batches(PG_FUNCTION_ARGS)
{
	char *split_name = text_to_cstring(PG_GETARG_TEXT_PP(2));
	Jsonb *options = PG_GETARG_JSONB_P(7);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SampleCall c;

	memset(&c, 0, sizeof(c));
	c.model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	c.tname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	c.n = PG_GETARG_INT32(3);
	c.B = PG_GETARG_INT32(4);
	c.S = PG_GETARG_INT32(5);
	c.seed = PG_GETARG_INT64(6);
	c.model_id = hw_pg_model_id(c.model, false);
	c.split = hw_split_from_name(split_name);
	check_sample_args(&c, split_name);
	init_bigint_set(rsinfo);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_batch_check_model(c.model_id, "sample batches of");
	hw_sampler_config_default(&c.cfg);
	sample_options(options, &c.cfg);
	SPI_finish();

	load_sampled_task(&c);
	create_task_sampler(&c);
	store_batches(&c, rsinfo);
	return (Datum) 0;
}

