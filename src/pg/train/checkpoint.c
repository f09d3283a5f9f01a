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
#include "utils/snapmgr.h"

#include "pg/base/pg_spi_saved.h"
#include "pg/base/hw_pg.h"
#include "pg/train/hw_checkpoint.h"
#include "pg/base/hw_settings_pg.h"
#include "pg/train/hw_train.h"
#include "pg/base/pg_xact.h"

#define CHUNK_BYTES (1024 * 1024)

/* The config a checkpoint stores (settings.h, HW_SETTING_STORED): the
 * model's own config, the sampler it trained with. */
static Jsonb *
checkpoint_config(const HwModelConfig *mc, const HwSamplerConfig *scfg, const char *preset)
{
	HwSettings  st;

	memset(&st, 0, sizeof(st));
	st.mcfg = *mc;
	st.scfg = *scfg;
	st.mcfg.batch_size = scfg->batch_size;
	st.mcfg.seq_len = scfg->seq_len;
	st.mcfg.seed = scfg->seed;
	return hw_pg_settings_to_jsonb(&st, preset);
}

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

	if (hw_model_state_serialize(m, &blob, &len, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "serializing the training state");

	hw_worker_start_transaction();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	hw_become_owner(&as_owner);
	PG_TRY();
	{
		Jsonb  *config = checkpoint_config(hw_model_config(m), scfg, preset);
		Oid     argtypes[8] = {INT4OID, INT8OID, INT4OID, INT8OID, FLOAT8OID, BOOLOID, JSONBOID, INT8OID};
		Datum   values[8] = {Int32GetDatum(model_id), Int64GetDatum(job_id),
							 Int32GetDatum((int32) hw_model_step(m)), Int64GetDatum((int64) sampler_position),
							 Float8GetDatum(val), BoolGetDatum(best), JsonbPGetDatum(config),
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
								  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, clock_timestamp()) "
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
		sql = "SELECT c.checkpoint_id, c.step, c.sampler_position, c.config, c.lineage, cm.weights "
			  "FROM headwater.checkpoint c LEFT JOIN headwater.checkpoint_metric cm "
			  "  ON cm.checkpoint_id = c.checkpoint_id AND cm.task_id = $3 AND ($4 = '' OR cm.weights = $4) "
			  "WHERE c.model_id = $1 AND c.checkpoint_id = $2 " TASK_ORDER;
	else if (checkpoint_id == -1)
		/* serving: the newest run with a checkpoint; in it, as above */
		sql = "SELECT c.checkpoint_id, c.step, c.sampler_position, c.config, c.lineage, cm.weights "
			  "FROM headwater.checkpoint c LEFT JOIN headwater.checkpoint_metric cm "
			  "  ON cm.checkpoint_id = c.checkpoint_id AND cm.task_id = $3 AND ($4 = '' OR cm.weights = $4) "
			  "WHERE c.model_id = $1 AND $2 = $2 AND c.lineage = "
			  "  (SELECT max(lineage) FROM headwater.checkpoint WHERE model_id = $1) " TASK_ORDER;
	else
		/* resume point: the latest of the run of the newest job that started
		 * training (a restart with no checkpoint yet leaves nothing to resume) */
		sql = "SELECT checkpoint_id, step, sampler_position, config, lineage, NULL::text "
			  "FROM headwater.checkpoint "
			  "WHERE model_id = $1 AND $2 = $2 AND $3 = $3 AND $4 = $4 AND lineage = "
			  "  (SELECT lineage FROM headwater.job WHERE model_id = $1 AND lineage IS NOT NULL "
			  "   ORDER BY job_id DESC LIMIT 1) "
			  "ORDER BY step DESC, checkpoint_id DESC LIMIT 1";
#undef TASK_ORDER
	if (hw_spi_execute_saved(sql, 4, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.checkpoint");
	if (SPI_processed != 1)
		return false;
	HeapTuple tup = SPI_tuptable->vals[0];
	TupleDesc td = SPI_tuptable->tupdesc;
	info->checkpoint_id = DatumGetInt64(SPI_getbinval(tup, td, 1, &isnull));
	info->step = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
	info->sampler_position = (uint64) DatumGetInt64(SPI_getbinval(tup, td, 3, &isnull));
	bool  config_null;
	Datum config = SPI_getbinval(tup, td, 4, &config_null);
	info->lineage = DatumGetInt64(SPI_getbinval(tup, td, 5, &isnull));
	{
		char *w = SPI_getvalue(tup, td, 6);

		info->average = w == NULL || strcmp(w, "average") == 0;
	}

	/* the stored config, with the defaults and absent values of what it lacks */
	if (hw_settings_defaults(&info->config, "small", 1, NULL) != HW_OK)
		elog(ERROR, "no small preset");
	hw_pg_settings_from_jsonb(config_null ? NULL : &DatumGetJsonbP(config)->root, &info->config,
							  info->config_present, info->config_valid);
	/* out of SPI's memory: serving builds its sampler after SPI_finish */
	{
		char *hidden = hw_pg_hidden_names_from_jsonb(config_null ? NULL : &DatumGetJsonbP(config)->root);

		info->config.scfg.hidden_names = hidden ? strcpy(SPI_palloc(strlen(hidden) + 1), hidden) : NULL;
	}
	/* a run without a parameter average serves its parameters: one cache
	 * entry and file, whichever weights a row names */
	{
		info->has_average = info->config.mcfg.ema_decay > 0;
		if (weights != HW_WEIGHTS_BEST)
			info->average = weights == HW_WEIGHTS_AVERAGE;
		if (!info->has_average)
			info->average = false;
	}

	/* best val loss so far in its run (for "is this checkpoint the best") */
	{
		Oid     bargtypes[2] = {INT4OID, INT8OID};
		Datum   bvalues[2] = {Int32GetDatum(model_id), Int64GetDatum(info->lineage)};

		if (hw_spi_execute_saved("SELECT min(val_metric) FROM headwater.checkpoint "
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

void
hw_checkpoint_sampler_config(const HwCheckpointInfo *info, HwSamplerConfig *cfg)
{
	const HwSettingDef *seed = hw_setting_find("seed");

	hw_sampler_config_default(cfg);
	cfg->batch_size = info->config.mcfg.batch_size;
	cfg->seq_len = info->config.mcfg.seq_len;
	cfg->max_rows = info->config.scfg.max_rows;
	cfg->bfs_child_width = info->config.scfg.bfs_child_width;
	cfg->child_sampling = info->config.scfg.child_sampling;
	cfg->recent_children = info->config.scfg.recent_children;
	cfg->key_cells = info->config.scfg.key_cells;
	cfg->anchor_names = info->config.scfg.anchor_names;
	cfg->hidden_names = info->config.scfg.hidden_names;     /* hide what training hid */
	cfg->descendant_counts = info->config.scfg.descendant_counts;
	cfg->label_means = info->config.scfg.label_means;
	cfg->future_parents = info->config.scfg.future_parents;
	cfg->date_undated = info->config.scfg.date_undated;
	cfg->count_windows = info->config.scfg.count_windows;
	cfg->time_ramps = info->config.scfg.time_ramps;
	cfg->mean_windows = info->config.scfg.mean_windows;
	/* a config without a seed was sampled with seed 0 */
	cfg->seed = info->config_present[hw_setting_index(seed)] ? info->config.mcfg.seed : 0;
}
