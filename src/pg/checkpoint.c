/*
 * checkpoint.c: writing and finding checkpoints (hw_checkpoint.h).
 *
 * A checkpoint = one headwater.checkpoint row + the serialized training
 * state (hw_model_state_serialize: parameters, optimiser moments, step, RNG,
 * config; versioned, checksummed) in headwater.checkpoint_state as 1 MB
 * bytea chunks (STORAGE EXTERNAL: the blob is already dense, compressing it
 * costs time for nothing).  Both are written in one transaction, so a crash
 * leaves either the whole checkpoint or none.  Which checkpoint is resumed
 * and which is served follows the runs ("lineage", hw_checkpoint.h).
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/snapmgr.h"

#include "hw_pg.h"
#include "hw_checkpoint.h"
#include "hw_train.h"

#define CHUNK_BYTES (1024 * 1024)

int64
hw_checkpoint_save(int64 job_id, int32 model_id, int64 lineage, HwModel *m, uint64 sampler_position,
				   double val, bool best, const HwSamplerConfig *scfg, const char *preset,
				   const HwTaskValMetric *metrics, int nmetrics)
{
	HwError     err = {0};
	uint8_t    *blob = NULL;
	size_t      len = 0;
	HwAsOwner   as_owner;
	int64       ckpt_id;
	bool        isnull;
	const HwModelConfig *mc = hw_model_config(m);

	if (hw_model_state_serialize(m, &blob, &len, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "serializing the training state");

	hw_worker_start_transaction();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	hw_become_owner(&as_owner);
	PG_TRY();
	{
		StringInfoData preset_json;

		initStringInfo(&preset_json);
		escape_json(&preset_json, preset);
		char *config = psprintf("{\"preset\": %s, \"d_model\": %d, \"n_heads\": %d, \"n_layers\": %d, "
								"\"batch_size\": %d, \"seq_len\": %d, \"max_rows\": %d, \"child_width\": %d, "
								"\"child_sampling\": \"%s\", \"recent_children\": %d, \"key_cells\": %s, \"descendant_counts\": %s, "
								"\"future_parents\": \"%s\", \"seed\": %llu, \"lr\": %g, \"total_steps\": %d, "
								"\"rel_time\": %s, \"link_types\": %s, \"child_counts\": %s, \"child_means\": %s, "
								"\"cell_dropout\": %g, \"ema_decay\": %g, \"ordinal_head\": %s, \"count_ramps\": %s, \"head_adamw\": %s, "
								"\"weight_decay\": %g, \"head_weight_decay\": %g}",
								preset_json.data, mc->d_model, mc->n_heads, mc->n_layers, scfg->batch_size,
								scfg->seq_len, scfg->max_rows, scfg->bfs_child_width,
								hw_child_sampling_name(scfg->child_sampling), scfg->recent_children,
								scfg->key_cells ? "true" : "false", scfg->descendant_counts ? "true" : "false",
								hw_future_parents_name(scfg->future_parents),
								(unsigned long long) scfg->seed, mc->lr, mc->total_steps, mc->rel_time ? "true" : "false",
								mc->link_types ? "true" : "false", mc->child_counts ? "true" : "false",
								mc->child_means ? "true" : "false", (double) scfg->cell_dropout,
								(double) mc->ema_decay, mc->ordinal_head ? "true" : "false",
								mc->count_ramps ? "true" : "false", mc->head_adamw ? "true" : "false",
								(double) mc->weight_decay, (double) mc->head_weight_decay);
		Oid     argtypes[8] = {INT4OID, INT8OID, INT4OID, INT8OID, FLOAT8OID, BOOLOID, TEXTOID, INT8OID};
		Datum   values[8] = {Int32GetDatum(model_id), Int64GetDatum(job_id),
							 Int32GetDatum((int32) hw_model_step(m)), Int64GetDatum((int64) sampler_position),
							 Float8GetDatum(val), BoolGetDatum(best), CStringGetTextDatum(config),
							 Int64GetDatum(lineage)};
		char    nulls[8] = {' ', job_id > 0 ? ' ' : 'n', ' ', ' ', isnan(val) ? 'n' : ' ', ' ', ' ', ' '};

		/* one best per run: a restarted run competes only with itself */
		if (best &&
			SPI_execute_with_args("UPDATE headwater.checkpoint SET is_best = false "
								  "WHERE model_id = $1 AND lineage = $8 AND is_best",
								  8, argtypes, values, nulls, false, 0) < 0)
			elog(ERROR, "could not update headwater.checkpoint");
		/* clock_timestamp: the worker's transactions all share one now() */
		if (SPI_execute_with_args("INSERT INTO headwater.checkpoint (model_id, job_id, step, sampler_position, "
								  "val_metric, is_best, config, lineage, created_at) "
								  "VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, clock_timestamp()) "
								  "RETURNING checkpoint_id",
								  8, argtypes, values, nulls, false, 1) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "could not insert into headwater.checkpoint");
		ckpt_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		Oid     cargtypes[3] = {INT8OID, INT4OID, BYTEAOID};
		SPIPlanPtr plan = SPI_prepare("INSERT INTO headwater.checkpoint_state (checkpoint_id, chunk_no, data) "
									  "VALUES ($1, $2, $3)", 3, cargtypes);
		for (size_t off = 0, chunk = 0; off < len; off += CHUNK_BYTES, chunk++)
		{
			size_t  n = Min((size_t) CHUNK_BYTES, len - off);
			bytea  *b = palloc(VARHDRSZ + n);
			Datum   cv[3];

			SET_VARSIZE(b, VARHDRSZ + n);
			memcpy(VARDATA(b), blob + off, n);
			cv[0] = Int64GetDatum(ckpt_id);
			cv[1] = Int32GetDatum((int32) chunk);
			cv[2] = PointerGetDatum(b);
			if (SPI_execute_plan(plan, cv, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not insert into headwater.checkpoint_state");
			pfree(b);
		}
		/* its per-task validation */
		for (int i = 0; i < nmetrics; i++)
		{
			Oid     margtypes[7] = {INT8OID, INT4OID, TEXTOID, FLOAT8OID, FLOAT8OID, INT4OID, TEXTOID};
			Datum   mvalues[7] = {Int64GetDatum(ckpt_id), Int32GetDatum(metrics[i].task_id),
								  CStringGetTextDatum(metrics[i].metric), Float8GetDatum(metrics[i].value),
								  Float8GetDatum(metrics[i].loss), Int32GetDatum(metrics[i].n_rows),
								  CStringGetTextDatum(hw_weights_name(metrics[i].average))};
			char    mnulls[7] = {' ', ' ', ' ', isfinite(metrics[i].value) ? ' ' : 'n',
								 isfinite(metrics[i].loss) ? ' ' : 'n', ' ', ' '};

			if (SPI_execute_with_args("INSERT INTO headwater.checkpoint_metric "
									  "(checkpoint_id, task_id, metric, value, loss, n_rows, weights) "
									  "VALUES ($1, $2, $3, $4, $5, $6, $7)",
									  7, margtypes, mvalues, mnulls, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not insert into headwater.checkpoint_metric");
		}
		/* the job row points at its latest checkpoint */
		if (job_id > 0)
			SPI_execute_with_args("UPDATE headwater.job SET checkpoint_id = $2, updated_at = clock_timestamp() "
								  "WHERE job_id = $1",
								  2, (Oid[]) {INT8OID, INT8OID},
								  (Datum[]) {Int64GetDatum(job_id), Int64GetDatum(ckpt_id)}, NULL, false, 0);
	}
	PG_FINALLY();
	{
		free(blob);
	}
	PG_END_TRY();
	hw_restore_user(&as_owner);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	return ckpt_id;
}

static char *
json_text(const char *config, const char *key)
{
	Oid     argtypes[2] = {TEXTOID, TEXTOID};
	Datum   values[2] = {CStringGetTextDatum(config), CStringGetTextDatum(key)};

	if (SPI_execute_with_args("SELECT $1::jsonb ->> $2", 2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

static int64
json_int(const char *config, const char *key, int64 dflt)
{
	char   *v = json_text(config, key);

	return v ? strtoll(v, NULL, 10) : dflt;
}

bool
hw_val_metric_higher_better(const char *metric)
{
	return strcmp(metric, "auroc") == 0 || strcmp(metric, "accuracy") == 0;
}

bool
hw_checkpoint_find(int32 model_id, int64 checkpoint_id, HwCheckpointInfo *info)
{
	return hw_checkpoint_find_task(model_id, 0, checkpoint_id, HW_WEIGHTS_BEST, info);
}

bool
hw_checkpoint_find_task(int32 model_id, int32 task_id, int64 checkpoint_id, HwWeightsChoice weights,
						HwCheckpointInfo *info)
{
	Oid     argtypes[4] = {INT4OID, INT8OID, INT4OID, TEXTOID};
	Datum   values[4] = {Int32GetDatum(model_id), Int64GetDatum(checkpoint_id), Int32GetDatum(task_id),
						 CStringGetTextDatum(weights == HW_WEIGHTS_BEST ? "" : hw_weights_name(weights == HW_WEIGHTS_AVERAGE))};
	bool    isnull;
	const char *sql;

	/* A task's validation rows order its candidates: the best of its own
	 * val metric (higher auroc/accuracy, lower mae; ties: the task's lower
	 * val loss, then the average before the last parameters), then the best
	 * by mixed val loss (is_best), then the latest.  With no row (no task,
	 * or a checkpoint not validated) weights is NULL: the average when kept.
	 * Named weights ($4) take only their own rows. */
#define TASK_ORDER "ORDER BY CASE WHEN cm.metric IN ('auroc', 'accuracy') THEN cm.value " \
				   "              ELSE -cm.value END DESC NULLS LAST, " \
				   "  cm.loss ASC NULLS LAST, (cm.weights = 'average') DESC NULLS LAST, " \
				   "  c.is_best DESC, c.step DESC, c.checkpoint_id DESC LIMIT 1"
	if (checkpoint_id >= 0)
		sql = "SELECT c.checkpoint_id, c.step, c.sampler_position, c.config::text, c.lineage, cm.weights "
			  "FROM headwater.checkpoint c LEFT JOIN headwater.checkpoint_metric cm "
			  "  ON cm.checkpoint_id = c.checkpoint_id AND cm.task_id = $3 AND ($4 = '' OR cm.weights = $4) "
			  "WHERE c.model_id = $1 AND c.checkpoint_id = $2 " TASK_ORDER;
	else if (checkpoint_id == -1)
		/* serving: the newest run with a checkpoint; in it, as above */
		sql = "SELECT c.checkpoint_id, c.step, c.sampler_position, c.config::text, c.lineage, cm.weights "
			  "FROM headwater.checkpoint c LEFT JOIN headwater.checkpoint_metric cm "
			  "  ON cm.checkpoint_id = c.checkpoint_id AND cm.task_id = $3 AND ($4 = '' OR cm.weights = $4) "
			  "WHERE c.model_id = $1 AND $2 = $2 AND c.lineage = "
			  "  (SELECT max(lineage) FROM headwater.checkpoint WHERE model_id = $1) " TASK_ORDER;
	else
		/* resume point: the latest of the run of the newest job that started
		 * training (a restart with no checkpoint yet leaves nothing to resume) */
		sql = "SELECT checkpoint_id, step, sampler_position, config::text, lineage, NULL::text "
			  "FROM headwater.checkpoint "
			  "WHERE model_id = $1 AND $2 = $2 AND $3 = $3 AND $4 = $4 AND lineage = "
			  "  (SELECT lineage FROM headwater.job WHERE model_id = $1 AND lineage IS NOT NULL "
			  "   ORDER BY job_id DESC LIMIT 1) "
			  "ORDER BY step DESC, checkpoint_id DESC LIMIT 1";
#undef TASK_ORDER
	if (SPI_execute_with_args(sql, 4, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.checkpoint");
	if (SPI_processed != 1)
		return false;
	HeapTuple tup = SPI_tuptable->vals[0];
	TupleDesc td = SPI_tuptable->tupdesc;
	info->checkpoint_id = DatumGetInt64(SPI_getbinval(tup, td, 1, &isnull));
	info->step = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
	info->sampler_position = (uint64) DatumGetInt64(SPI_getbinval(tup, td, 3, &isnull));
	char *config = SPI_getvalue(tup, td, 4);
	info->lineage = DatumGetInt64(SPI_getbinval(tup, td, 5, &isnull));
	{
		char *w = SPI_getvalue(tup, td, 6);

		info->average = w == NULL || strcmp(w, "average") == 0;
	}

	info->batch_size = (int32) json_int(config, "batch_size", 32);
	info->seq_len = (int32) json_int(config, "seq_len", 1024);
	info->max_rows = (int32) json_int(config, "max_rows", 200);
	info->child_width = (int32) json_int(config, "child_width", 16);
	/* checkpoints from before these options were trained with uniform
	 * children and key cells: keep predicting as they were trained */
	char *cs = json_text(config, "child_sampling");
	char *kc = json_text(config, "key_cells");

	info->child_sampling = cs ? hw_child_sampling_from_name(cs) : HW_CHILD_UNIFORM;
	info->recent_children = (int32) json_int(config, "recent_children", -1);
	info->key_cells = kc ? strcmp(kc, "true") == 0 : true;
	/* descendant counts came later still: absent, the checkpoint was trained without */
	char *dc = json_text(config, "descendant_counts");

	info->descendant_counts = dc ? strcmp(dc, "true") == 0 : false;
	/* ... but not with future parents: a checkpoint from before the option
	 * was trained following them, and predicting or evaluating that way
	 * would show it rows from after the observation time (inflated val and
	 * test metrics); it gets the leak-free default.  The parameters do not
	 * depend on it, so the checkpoint loads as before. */
	char *fp = json_text(config, "future_parents");

	info->future_parents = fp && hw_future_parents_from_name(fp) >= 0
		? hw_future_parents_from_name(fp) : HW_FUTURE_PARENTS_HIDE;
	info->seed = (uint64) json_int(config, "seed", 0);
	info->has_seed = json_text(config, "seed") != NULL;
	/* a run without a parameter average serves its parameters: one cache
	 * entry and file, whichever weights a row names */
	{
		char *ed = json_text(config, "ema_decay");

		info->has_average = ed != NULL && strtod(ed, NULL) > 0;
		if (weights != HW_WEIGHTS_BEST)
			info->average = weights == HW_WEIGHTS_AVERAGE;
		if (!info->has_average)
			info->average = false;
	}

	/* best val loss so far in its run (for "is this checkpoint the best") */
	{
		Oid     bargtypes[2] = {INT4OID, INT8OID};
		Datum   bvalues[2] = {Int32GetDatum(model_id), Int64GetDatum(info->lineage)};

		if (SPI_execute_with_args("SELECT min(val_metric) FROM headwater.checkpoint "
								  "WHERE model_id = $1 AND lineage = $2",
								  2, bargtypes, bvalues, NULL, false, 1) == SPI_OK_SELECT)
		{
			Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
			info->best_val = isnull ? INFINITY : DatumGetFloat8(d);
		}
	}
	return true;
}

uint8 *
hw_checkpoint_load_state(int64 checkpoint_id, size_t *len)
{
	Oid     argtypes[1] = {INT8OID};
	Datum   values[1] = {Int64GetDatum(checkpoint_id)};
	StringInfoData buf;
	bool    isnull;

	if (SPI_execute_with_args("SELECT data FROM headwater.checkpoint_state WHERE checkpoint_id = $1 "
							  "ORDER BY chunk_no", 1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.checkpoint_state");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("checkpoint %lld has no stored state", (long long) checkpoint_id),
				 errhint("Train again with options => '{\"restart\": true}'.")));
	initStringInfo(&buf);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bytea *b = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		appendBinaryStringInfo(&buf, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
	}
	/* out of SPI's memory, which SPI_finish frees */
	uint8 *out = SPI_palloc(Max(buf.len, 1));
	memcpy(out, buf.data, buf.len);
	*len = buf.len;
	return out;
}

uint8 *
hw_checkpoint_load_latest(int32 model_id, HwCheckpointInfo *info, size_t *len)
{
	if (!hw_checkpoint_find(model_id, -2, info))
		return NULL;
	return hw_checkpoint_load_state(info->checkpoint_id, len);
}

void
hw_checkpoint_sampler_config(const HwCheckpointInfo *info, HwSamplerConfig *cfg)
{
	hw_sampler_config_default(cfg);
	cfg->batch_size = info->batch_size;
	cfg->seq_len = info->seq_len;
	cfg->max_rows = info->max_rows;
	cfg->bfs_child_width = info->child_width;
	cfg->child_sampling = info->child_sampling;
	cfg->recent_children = info->recent_children;
	cfg->key_cells = info->key_cells;
	cfg->descendant_counts = info->descendant_counts;
	cfg->future_parents = info->future_parents;
	cfg->seed = info->seed;
}
