/*
 * train_loop.c: the training loop inside the background worker.
 *
 * Loads the snapshot and ALL tasks of the model once (in task_id order, so
 * the column / category layout is the same for training and prediction;
 * tasks not selected get weight 0), builds the sampler and the model (or
 * resumes it from the latest checkpoint of the model's current run,
 * hw_checkpoint.h: parameters, moments, step, RNG and the sampler position,
 * so resume equals straight-through), then steps:
 *   train batch k (prefetched on a producer thread) -> train step ->
 *   progress (shared memory, every step; the ETA from an EMA of step time
 *   plus the validation/checkpoint time per step, eta.h) -> log row (every log_every) ->
 *   validation (every val_every: the mixed loss on val_batches batches,
 *   which sets is_best, and each trained task's own metric on a fixed
 *   sample of its val rows, validate_tasks) -> checkpoint (every
 *   checkpoint_every, at the end, and when asked to stop; a validated one
 *   stores the per-task metrics in headwater.checkpoint_metric, from which
 *   serving picks each task's checkpoint, hw_checkpoint.h).
 * What the job holds outside PostgreSQL's memory, and the data-parallel
 * ranks, are train_ranks.c's.  Only this thread calls PostgreSQL; the
 * sampler's and the backend's threads touch plain memory only.
 */
#include "postgres.h"

#include <math.h>
#include <time.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/train/hw_train.h"
#include "pg/train/train_request.h"
#include "pg/train/train_ranks.h"
#include "pg/base/pg_xact.h"
#include "pg/train/hw_train_val.h"
#include "pg/train/hw_checkpoint.h"
#include "pg/train/hw_device.h"
#include "core/metrics.h"
#include "core/backend.h"
#include "core/budget.h"
#include "core/dp_threads.h"
#include "core/eta.h"
#include "core/model.h"
#include "core/prefetch.h"
#include "core/sampler.h"
#include "core/task.h"


static double
now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
check_core(int rc, const HwError *err, const char *what)
{
	if (rc != HW_OK)
		hw_pg_raise_core_error(err, what);
}

/* The model: the resumed checkpoint's state, or a new one of the settings. */
static HwModel *
create_or_resume_model(TrainSettings *st, HwJobShared *job, const uint8 *state_blob, size_t state_len,
					   uint16_t *col_emb, int32_t ncols, uint16_t *cat_emb, uint32_t ncat, HwBackend *be)
{
	HwError     err = {0};
	HwModel    *model;

	if (state_blob != NULL)
	{
		model = hw_model_state_deserialize(state_blob, state_len, col_emb, ncols, cat_emb, (int32_t) ncat, be, &err);
		if (model == NULL)
			hw_pg_raise_core_error(&err, "resuming from the last checkpoint (use options => '{\"restart\": true}' to start over)");
		/* the schedule follows the new total, continuing from the lr it
		 * had at the resume step (no jump; optim.c) */
		hw_lr_schedule_extend((HwModelConfig *) hw_model_config(model), hw_model_step(model),
							  job->steps_target);
		return model;
	}
	/* on the CPU the model lives in the server's memory: refuse what
	 * would not fit rather than be killed by the kernel */
	if (strcmp(hw_pg_backend_name(be), "cpu") == 0)
		hw_train_check_memory(&st->s, ncols, (int32) ncat);
	model = hw_model_create(&st->s.mcfg, col_emb, ncols, cat_emb, (int32_t) ncat, be, &err);
	if (model == NULL)
		hw_pg_raise_core_error(&err, "creating the model");
	return model;
}

/* The loop's state, passed between its steps by pointer. */
typedef struct TrainRun
{
	HwJobShared *job;
	TrainResources *tr;
	TrainSettings st;
	HwCheckpointInfo resume;
	uint8      *state_blob;         /* the resumed checkpoint's state, NULL for a new run */
	size_t      state_len;
	HwModel    *model;
	HwModelConfig *mcw;             /* the model's config: its runtime schedule state is written */
	HwSampler  *val_sampler;
	HwPrefetch *pf;                 /* one rank only: the queue on the sampler */
	int         W, A, V;
	bool        dp;
	int64       step;
	uint64_t    position;
	double      best_val;
	int64       last_ckpt;
	int64       lineage;            /* the run this job continues or starts (hw_checkpoint.h) */
	uint64      checksum;
	bool        checked;
	double      t0, t_window, t_mark;
	int64       window_steps;
	double      tokens_per_step, tps, last_loss, last_val;
	const char *final_state;
	bool        terminated;
	HwTaskValMetric *task_val;      /* [2 * ntasks] x2: last and average */
	int         ntask_val;
	HwEta       eta_est;            /* ETA: EMA of step time + validation/checkpoint share (eta.h) */
	double      t_call;             /* clock when the worker took the job: a budget counts set-up */
	HwBudget    budget;             /* max_minutes (budget.h) */
	double      val_batches_equiv;  /* a validation's forwards, in training batches */
	int64       budget_from;
	bool        out_of_time;
} TrainRun;

/* A validation's size in training batches' forwards: each trained task's
 * val rows (twice with a parameter average: both weights) and the
 * val_batches of the mixed loss, as hw_train_validate_tasks reads them. */
static double
validation_size(const TrainRun *run)
{
	int     B = Max(1, run->mcw->batch_size);
	double  rows = 0;

	for (int t = 0; t < run->tr->ntasks; t++)
	{
		uint32  n = 0;

		if (run->st.task_weights[t] > 0 && hw_sampler_shard(run->val_sampler, t, HW_SPLIT_VAL, &n) != NULL)
			rows += Min(n, (uint32) Max(0, run->st.s.val_rows));
	}
	if (hw_model_has_ema(run->model))
		rows *= 2;
	return rows / B + run->st.s.val_batches;
}

/* Load everything once, in one transaction: snapshot, tasks, settings and
 * the resumed checkpoint's state. */
static void
load_job(TrainRun *run)
{
	TrainResources *res = run->tr;
	HwAsOwner   as_owner;

	hw_worker_start_transaction();
	PushActiveSnapshot(GetTransactionSnapshot());
	res->snap = hw_pg_snapshot_load(run->job->model_id);
	res->tasks = hw_pg_tasks_load_all(run->job->model_id, res->snap, NULL, &res->ntasks);
	SPI_connect();
	hw_become_owner(&as_owner);
	hw_train_read_settings(run->job, &run->st, res->tasks, res->ntasks);
	run->state_blob = hw_train_load_resume_state(run->job, &run->resume, &run->state_len);
	hw_restore_user(&as_owner);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/* The anchor names sampler hides, joined by sep (palloc'd, "" for none). */
static char *
hidden_names_text(const HwSampler *sampler, const char *sep)
{
	StringInfoData buf;
	const char *table, *column;

	initStringInfo(&buf);
	for (int i = 0; hw_sampler_hidden_name(sampler, i, &table, &column); i++)
		appendStringInfo(&buf, "%s%s.%s", i ? sep : "", table, column);
	return buf.data;
}

/* Build the sampler, the backend and the model (and the other ranks). */
static void
build_model(TrainRun *run)
{
	TrainResources *res = run->tr;
	HwError     err = {0};
	int32_t     ncols;
	uint32_t    ncat;
	int         rank_threads;

	check_core(hw_training_tables(res->snap, res->tasks, res->ntasks, &res->col_emb, &ncols, &res->cat_emb, &ncat,
								  &err), &err, "building the embedding tables");
	res->sampler = hw_sampler_create(res->snap, res->tasks, res->ntasks, &run->st.s.scfg, &err);
	if (res->sampler == NULL)
		hw_pg_raise_core_error(&err, "creating the sampler");
	/* the checkpoints store what this run hides; a resumed run hid its checkpoint's */
	run->st.s.scfg.hidden_names = MemoryContextStrdup(TopMemoryContext,
													  hidden_names_text(res->sampler, (char[]) {HW_NAME_SEP, '\0'}));
	run->A = run->st.s.grad_accum;
	run->W = hw_train_resolve_ranks(&run->st, &rank_threads);
	res->be = hw_pg_backend_create_rank(run->st.s.device, rank_threads, 0, run->job);
	run->model = res->model = create_or_resume_model(&run->st, run->job, run->state_blob, run->state_len,
													 res->col_emb, ncols, res->cat_emb, ncat, res->be);
	hw_train_set_precision(run->model, &run->st);
	run->mcw = (HwModelConfig *) hw_model_config(run->model);
	run->step = hw_model_step(run->model);
	run->V = run->W * run->A;
	run->dp = run->V > 1;
	if (run->dp)
		hw_train_start_ranks(res, &run->st, run->job, run->model, res->be, res->sampler, ncols, ncat, run->W, run->A,
							 rank_threads, run->state_blob ? run->resume.sampler_position : 0);
	run->position = run->state_blob ? run->resume.sampler_position : 0;
	run->best_val = run->state_blob ? run->resume.best_val : INFINITY;
	run->last_ckpt = run->state_blob ? run->resume.checkpoint_id : -1;
	run->lineage = run->state_blob ? run->resume.lineage : run->job->job_id;
}

/* Refuse a total below the resume point, make this run the model's current
 * one, and announce it. */
static void
begin_run(TrainRun *run)
{
	HwJobShared *job = run->job;
	const HwModelConfig *mc = run->mcw;
	int64       step = run->step;

	/* rt_train refuses a total below the resume point; so does the worker */
	if (step > job->steps_target)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" is already trained to step %lld, beyond steps => %d",
						run->st.model_name, (long long) step, job->steps_target),
				 errhint("steps is the total number of steps: pass more than %lld to train further, "
						 "or options => '{\"restart\": true}' to start over.", (long long) step)));
	{
		Oid     argtypes[2] = {INT8OID, INT8OID};
		Datum   values[2] = {Int64GetDatum(job->job_id), Int64GetDatum(run->lineage)};

		/* from here on, this run is the model's current one */
		hw_job_exec_committed("UPDATE headwater.job SET lineage = $2, updated_at = clock_timestamp() "
							  "WHERE job_id = $1", 2, argtypes, values, NULL);
	}

	char msg[512], arith[128] = "", hidden[200] = "", ramps[96] = "";
	bool on_cpu = strcmp(hw_pg_backend_name(run->tr->be), "cpu") == 0;

	if (on_cpu)
	{
		HwPrecision prec = hw_model_train_precision(run->tr->model);

		snprintf(arith, sizeof(arith), ", layer products in %s%s, fp32 products on the %s", hw_precision_name(prec),
				 prec == HW_PRECISION_BF16 && hw_backend_cpu_amx_supported() ? " on AMX tiles" : "",
				 hw_backend_cpu_f32_kernels(run->tr->be));
	}
	/* the anchors' names the model does not see: say so, and how to show them */
	if (*run->st.s.scfg.hidden_names)
		snprintf(hidden, sizeof(hidden), "; names of the rows predicted about, hidden (anchor_names shows them): %s",
				 hidden_names_text(run->tr->sampler, ", "));
	/* time_ramps "events" where the pace binds: by how much */
	if (hw_sampler_rel_time_scale(run->tr->sampler) > 1.0f)
		snprintf(ramps, sizeof(ramps), "; recency ramps %.1f times narrower, at the events' pace",
				 (double) hw_sampler_rel_time_scale(run->tr->sampler));
	snprintf(msg, sizeof(msg), "training model \"%s\" on %s%s: preset %s (D=%d, %d layers, %d heads, B=%d, S=%d), "
			 "%d task(s), %d rank(s) x %d micro-batch(es), %s at step %lld%s%s",
			 run->st.model_name, hw_pg_backend_name(run->tr->be), arith, run->st.s.preset, mc->d_model, mc->n_layers,
			 mc->n_heads, mc->batch_size, mc->seq_len, run->tr->ntasks, run->W, run->A,
			 run->state_blob ? "resuming" : "starting", (long long) step, ramps, hidden);
	SpinLockAcquire(&job->mutex);
	strlcpy(job->message, msg, sizeof(job->message));
	job->start_step = (int32) step;
	job->step = (int32) step;
	job->progress_seq++;
	SpinLockRelease(&job->mutex);
	ereport(LOG, (errmsg("headwater: %s", msg)));
}

/* The validation sampler, the prefetcher, the clocks and the time budget. */
static void
start_loop(TrainRun *run)
{
	HwError     err = {0};

	/* validation gets its own sampler: the prefetcher owns the train one */
	run->val_sampler = run->tr->val_sampler = hw_sampler_clone(run->tr->sampler, &err);
	if (run->val_sampler == NULL)
		hw_pg_raise_core_error(&err, "creating the validation sampler");
	/* one rank: one queue on the sampler; data parallel: hw_train_start_ranks made one per virtual rank */
	if (!run->dp &&
		(run->pf = run->tr->pf = hw_prefetch_start(run->tr->sampler, HW_SPLIT_TRAIN, run->position, 3, &err)) == NULL)
		hw_pg_raise_core_error(&err, "starting the batch prefetcher");
	run->t0 = run->t_window = now_seconds();
	run->tokens_per_step = (double) run->mcw->batch_size * run->mcw->seq_len * run->V;
	run->last_loss = NAN;
	run->last_val = NAN;
	run->final_state = "succeeded";
	run->task_val = palloc0(sizeof(HwTaskValMetric) * 2 * Max(1, run->tr->ntasks));
	hw_eta_init(&run->eta_est);
	run->t_mark = now_seconds();     /* end of the last step's time */
	/* max_minutes: a time budget for this call's steps; the schedule is read
	 * at least at the budget's elapsed fraction of the steps left (optim.c
	 * sched_min_t), and training stops, checkpointed, when it is used up */
	hw_budget_init(&run->budget, run->st.s.max_minutes * 60.0, run->t_call, run->t0);
	run->budget_from = run->step;
	run->val_batches_equiv = validation_size(run);
}

/* One training step (one rank, or all ranks); false when the job was
 * terminated during it. */
static bool
train_step(TrainRun *run, HwStepResult *res)
{
	HwJobShared *job = run->job;
	HwError     err = {0};
	int         rc;

	if (run->budget.budget_s > 0)
	{
		double frac = hw_budget_fraction(&run->budget, now_seconds());

		run->mcw->sched_min_t = run->budget_from + frac * (double) (job->steps_target - run->budget_from);
	}
	if (!run->dp)
	{
		HwBatch    *batch;

		if (hw_prefetch_next(run->pf, &batch, NULL, NULL, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "sampling a training batch");
		rc = hw_model_train_step(run->model, batch, res, &err);
		hw_batch_free(batch);
	}
	else
	{
		/* every rank's parameters are compared at the first step, every
		 * check_every steps and at the last one */
		bool check = run->step == job->start_step || (run->step + 1) % run->st.s.check_every == 0 ||
			run->step + 1 == job->steps_target;

		rc = hw_train_dp_step(run->tr, run->mcw, check, res, &run->checksum, &run->terminated, &err);
		if (run->terminated)
			return false;
		run->checked |= check && rc == HW_OK;
	}
	run->position++;
	if (rc != HW_OK)
		hw_pg_raise_core_error(&err, psprintf("training step %lld", (long long) run->step + 1));
	run->step = res->step;
	run->last_loss = res->loss;
	run->window_steps++;
	return true;
}

/* Tokens/s, the ETA, progress in shared memory and the log row. */
static void
report_step(TrainRun *run, const HwStepResult *res, double now, bool last)
{
	HwJobShared *job = run->job;

	if (now - run->t_window >= 1.0 || last)
	{
		run->tps = run->window_steps * run->tokens_per_step / (now - run->t_window);
		run->t_window = now;
		run->window_steps = 0;
	}
	hw_eta_add_step(&run->eta_est, now - run->t_mark);
	run->t_mark = now;
	double eta = hw_eta_seconds(&run->eta_est, run->step, job->steps_target - run->step);
	if (run->budget.budget_s > 0 && run->step < job->steps_target)
	{
		double by_budget = hw_budget_eta(&run->budget, now);

		/* the steps' ETA only once it is measured and comes first; at the
		 * budget's stop, the time its closing validation has left */
		eta = run->out_of_time || !(eta > 0) ? by_budget : Min(eta, by_budget);
	}
	hw_job_report_progress(job, (int32) run->step, res->loss, res->lr, res->grad_norm, run->tps, eta);

	if (run->step % run->st.s.log_every == 0 || last)
		hw_train_log_row(job, (int32) run->step, "train", res->loss, res->lr, res->grad_norm, run->tps);
}

/*
 * Validation.  With a parameter average, each task is validated on both
 * weights serving could read -- the last parameters, then the average
 * (swapped in, and back before the checkpoint) -- and serving takes the
 * better (hw_checkpoint_find_task): the average wins where a run is noisy
 * around its best point, the last parameters where it still improves at
 * the end.  The mixed val loss (is_best, progress) is the average's.
 */
static void
validate_step(TrainRun *run, const HwStepResult *res)
{
	HwJobShared *job = run->job;
	TrainResources *tr = run->tr;
	HwError     err = {0};
	bool        averaged = hw_model_has_ema(run->model);

	run->ntask_val = 0;
	if (averaged)
	{
		run->ntask_val = hw_train_validate_tasks(run->model, run->val_sampler, tr->snap, tr->tasks, tr->ntasks,
												 run->st.task_weights, run->st.s.val_rows, run->task_val, false);
		check_core(hw_model_swap_ema(run->model, &err), &err, "validating the parameter average");
	}
	run->last_val = hw_train_validate(run->model, run->val_sampler, run->st.s.val_batches);
	SpinLockAcquire(&job->mutex);
	job->val_loss = run->last_val;
	SpinLockRelease(&job->mutex);
	hw_train_log_row(job, (int32) run->step, "val", run->last_val, res->lr, res->grad_norm, run->tps);
	run->ntask_val += hw_train_validate_tasks(run->model, run->val_sampler, tr->snap, tr->tasks, tr->ntasks,
											  run->st.task_weights, run->st.s.val_rows,
											  run->task_val + run->ntask_val, averaged);
	if (averaged)
		check_core(hw_model_swap_ema(run->model, &err), &err, "validating the parameter average");
	hw_train_log_task_val(job, (int32) run->step, tr->tasks, tr->ntasks, run->task_val, run->ntask_val);
	hw_train_report_task_val(job, (int32) run->step, tr->tasks, tr->ntasks, run->task_val, run->ntask_val);
}

/* The run ends here on its time budget: its schedule ends at this lr, so a
 * resume continues from it without a jump (hw_lr_schedule_extend). */
static void
end_schedule_here(TrainRun *run, const HwStepResult *res)
{
	HwModelConfig *mcw = run->mcw;

	mcw->sched_min_t = 0;
	if (run->step > mcw->warmup_steps)
	{
		mcw->sched_start = (int32) run->step;
		mcw->sched_start_lr = res->lr;
	}
	mcw->total_steps = (int32) run->step;
}

/* A checkpoint of the step, validated or not.  Under a time budget the
 * schedule is read ahead of the step (sched_min_t, which the checkpoint
 * does not keep): the saved copy ends its schedule where the run stands,
 * as end_schedule_here does, so that a run resumed from it after a cancel
 * or a crash goes on from this learning rate instead of jumping back. */
static void
save_checkpoint(TrainRun *run, const HwStepResult *res, bool validated)
{
	HwJobShared *job = run->job;
	HwModelConfig *mcw = run->mcw;
	HwModelConfig saved = *mcw;
	bool        best = validated && !isnan(run->last_val) && run->last_val < run->best_val;

	if (best)
		run->best_val = run->last_val;
	if (mcw->sched_min_t > (double) run->step)
		end_schedule_here(run, res);
	run->last_ckpt = hw_checkpoint_save(job->job_id, job->model_id, run->lineage, run->model, run->position,
										validated ? run->last_val : NAN, best, &run->st.s.scfg, run->st.s.preset,
										run->task_val, validated ? run->ntask_val : 0);
	*mcw = saved;
}

/* One iteration after the step: report, validate, checkpoint. */
static void
after_step(TrainRun *run, const HwStepResult *res)
{
	HwJobShared *job = run->job;
	double      now = now_seconds();

	/* the step time's moving average (the first step, with its one-off
	 * costs, would overstate the validation's estimate for good) */
	double      step_s = run->eta_est.ema_step_s > 0 ? run->eta_est.ema_step_s : 0;

	if (step_s > 0)
		hw_budget_estimate_validation(&run->budget, step_s, run->val_batches_equiv);
	run->out_of_time = hw_budget_must_stop(&run->budget, now, step_s) && run->step < job->steps_target;
	bool last = run->step == job->steps_target || run->out_of_time;

	report_step(run, res, now, last);
	bool do_val = last || (run->st.s.val_by_time ? hw_budget_validation_due(&run->budget, now)
						   : run->step % run->st.s.val_every == 0);
	bool overhead = do_val;         /* a validation or checkpoint this step */
	if (do_val)
		validate_step(run, res);
	if (run->out_of_time)
		end_schedule_here(run, res);
	/* validations by time each write a checkpoint: their metrics choose
	 * the serving checkpoint among them */
	if (run->step % run->st.s.checkpoint_every == 0 || last || (do_val && run->st.s.val_by_time))
	{
		save_checkpoint(run, res, do_val);
		overhead = true;
	}
	/* validation / checkpoint time, spread over the steps in the ETA;
	 * other iterations' logging counts in the next step's time */
	if (overhead)
	{
		run->t_mark = now_seconds();
		hw_eta_add_overhead(&run->eta_est, run->step, run->t_mark - now);
		if (do_val)
			hw_budget_validated(&run->budget, run->t_mark, run->t_mark - now);
		/* tokens/s measures training: the pause does not count in its window */
		run->t_window += run->t_mark - now;
	}
}

/* The job's result (JSON). */
static void
append_result(TrainRun *run, StringInfo result)
{
	HwJobShared *job = run->job;
	const char *final_state = run->final_state;
	double      wall = now_seconds() - run->t_call;     /* set-up included, as the budget */

	appendStringInfo(result,
					 "{\"job_id\": %lld, \"state\": \"%s\", \"steps_done\": %lld, \"steps_target\": %d, "
					 "\"resumed_from\": %d, "
					 "\"train_loss\": %s, \"val_loss\": %s, \"tokens_per_s\": %.1f, \"wall_s\": %.2f, "
					 "\"checkpoint_id\": %lld, \"stopped_on\": \"%s\", \"device\": ",
					 (long long) job->job_id, final_state, (long long) run->step, job->steps_target, job->start_step,
					 !isfinite(run->last_loss) ? "null" : psprintf("%.6g", run->last_loss),
					 !isfinite(run->last_val) ? "null" : psprintf("%.6g", run->last_val),
					 run->tps, wall, (long long) run->last_ckpt,
					 run->out_of_time ? "max_minutes" : strcmp(final_state, "cancelled") == 0 ? "cancel" : "steps");
	escape_json(result, hw_pg_backend_name(run->tr->be));
	appendStringInfo(result, ", \"ranks\": %d, \"grad_accum\": %d", run->W, run->A);
	if (run->checked)
		appendStringInfo(result, ", \"param_checksum\": \"%016llx\"", (unsigned long long) run->checksum);
	appendStringInfoString(result, ", \"preset\": ");
	escape_json(result, run->st.s.preset);
	/* what the serving checkpoints' predictions read: the parameter average (its decay) or the last parameters (0) */
	appendStringInfo(result, ", \"ema_decay\": %g", (double) run->mcw->ema_decay);
	if (!run->terminated)
		hw_train_append_serving(result, job->model_id, run->tr->tasks, run->tr->ntasks, run->st.task_weights);
	appendStringInfoChar(result, '}');
}

static const char *
train_loop(HwJobShared *job, StringInfo result, TrainResources *res)
{
	TrainRun    run;

	memset(&run, 0, sizeof(run));
	run.t_call = now_seconds();
	run.job = job;
	run.tr = res;
	load_job(&run);
	build_model(&run);
	begin_run(&run);
	start_loop(&run);

	while (run.step < job->steps_target)
	{
		HwStepResult sres;

		if (hw_job_should_stop(job, &run.terminated))
		{
			run.final_state = "cancelled";
			break;
		}
		CHECK_FOR_INTERRUPTS();
		if (!train_step(&run, &sres))
		{
			run.final_state = "cancelled";
			break;
		}
		after_step(&run, &sres);
		if (run.out_of_time)
			break;
	}
	hw_prefetch_stop(run.pf);
	res->pf = NULL;
	/* the ranks are idle between steps; stop them before the final checkpoint */
	hw_dp_threads_stop(res->threads, NULL);
	res->threads = NULL;

	/* Asked to stop (not terminated): checkpoint what we have. */
	if (strcmp(run.final_state, "cancelled") == 0 && !run.terminated && run.step > 0)
		run.last_ckpt = hw_checkpoint_save(job->job_id, job->model_id, run.lineage, run.model, run.position, NAN,
										   false, &run.st.s.scfg, run.st.s.preset, NULL, 0);
	append_result(&run, result);
	return run.final_state;     /* the caller releases res */
}

const char *
hw_train_loop_run(HwJobShared *job, StringInfo result)
{
	/* on the heap, not modified in this frame: valid in PG_FINALLY after a longjmp */
	TrainResources *res = MemoryContextAllocZero(TopMemoryContext, sizeof(TrainResources));
	const char *state = NULL;

	PG_TRY();
	{
		state = train_loop(job, result, res);
	}
	PG_FINALLY();
	{
		hw_train_release_resources(res);
		pfree(res);
	}
	PG_END_TRY();
	return state;
}
