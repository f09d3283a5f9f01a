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
 * Only this thread calls PostgreSQL; the sampler's and the backend's
 * threads touch plain memory only.
 */
#include "postgres.h"

#include <math.h>
#include <time.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "hw_pg.h"
#include "hw_pg_task.h"
#include "hw_train.h"
#include "hw_train_val.h"
#include "hw_checkpoint.h"
#include "hw_device.h"
#include "metrics.h"
#include "backend.h"
#include "collective.h"
#include "dp_step.h"
#include "dp_threads.h"
#include "eta.h"
#include "model.h"
#include "prefetch.h"
#include "sampler.h"
#include "task.h"

typedef struct TrainSettings
{
	char        model_name[NAMEDATALEN];
	HwTrainSettings s;            /* as the calling backend validated them (HwJobShared) */
	int         threads;          /* s.threads clamped to the server's CPUs */
	double     *task_weights;     /* [ntasks] */
} TrainSettings;

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

/* A string member of the request, or dflt. */
static const char *
request_string(Jsonb *req, const char *key, const char *dflt)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&req->root, key, strlen(key), NULL);

	if (v == NULL || v->type != jbvString)
		return dflt;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* Whether the request trains this task (its "tasks" array names it, or it
 * has none: every task). */
static bool
request_trains_task(Jsonb *req, const char *task)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&req->root, "tasks", strlen("tasks"), NULL);
	JsonbValue  name;

	if (v == NULL || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return true;
	name.type = jbvString;
	name.val.string.val = (char *) task;
	name.val.string.len = strlen(task);
	return findJsonbValueFromContainer(v->val.binary.data, JB_FARRAY, &name) != NULL;
}

/*
 * The job's settings (validated by the calling backend, HwJobShared) and
 * the weight of each task, from the request ({model, tasks, preset, device,
 * options}: the tasks and options.task_weights, parsed once here).  Caller
 * in a transaction.
 */
static void
read_settings(HwJobShared *job, TrainSettings *st, HwTask **tasks, int ntasks)
{
	Jsonb      *req = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(job->request)));
	JsonbValue *ov = getKeyJsonValueFromContainer(&req->root, "options", strlen("options"), NULL);
	JsonbContainer *options = ov != NULL && ov->type == jbvBinary ? ov->val.binary.data : NULL;
	double      total = 0;

	strlcpy(st->model_name, request_string(req, "model", "?"), sizeof(st->model_name));
	st->s = job->settings;
	st->threads = hw_train_clamp_threads(st->s.threads);
	if (st->threads != st->s.threads)
		ereport(LOG, (errmsg("headwater: training job %lld uses %d threads (asked for %d; the server has %d CPUs)",
							 (long long) job->job_id, st->threads, st->s.threads, st->threads)));
	st->s.scfg.n_threads = st->threads;

	/* Selected tasks train, others get weight 0.  With options.task_weights
	 * a task weighs what it says (absent: 1); without, several tasks weigh
	 * sqrt(their train seeds) each (at least 1), so a big task is seen more
	 * often without drowning a small one; a single task weighs 1. */
	/* outlives the transaction (and SPI): the worker's top context */
	bool        given = options != NULL &&
		getKeyJsonValueFromContainer(options, "task_weights", strlen("task_weights"), NULL) != NULL;
	int         ntrained = 0;

	for (int t = 0; t < ntasks; t++)
		ntrained += request_trains_task(req, tasks[t]->name) ? 1 : 0;
	st->task_weights = MemoryContextAllocZero(TopMemoryContext, sizeof(double) * Max(1, ntasks));
	for (int t = 0; t < ntasks; t++)
	{
		if (request_trains_task(req, tasks[t]->name))
		{
			double dflt = 1.0;

			if (!given && ntrained > 1)
				dflt = sqrt((double) Max(1, tasks[t]->split_count[HW_SPLIT_TRAIN]));
			st->task_weights[t] = hw_train_task_weight(options, tasks[t]->name, dflt);
			if (ntrained > 1)
				ereport(LOG, (errmsg("headwater: training job %lld: task \"%s\" weighs %g (%u train seeds%s)",
									 (long long) job->job_id, tasks[t]->name, st->task_weights[t],
									 tasks[t]->split_count[HW_SPLIT_TRAIN],
									 given ? ", task_weights" : ", sqrt of them")));
		}
		total += st->task_weights[t];
	}
	if (!(total > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no task of model \"%s\" is trained with a positive weight", st->model_name),
				 errhint("Name existing tasks in tasks => ... and give at least one a weight above 0 in task_weights.")));
	st->s.scfg.task_weights = st->task_weights;
}

/*
 * The state of the checkpoint the calling backend chose to resume
 * (HwJobShared.resume_checkpoint_id; its settings are merged already), or
 * NULL for a new run.  Caller in SPI, as owner; the blob outlives the
 * transaction.
 */
static uint8 *
load_resume_state(HwJobShared *job, HwCheckpointInfo *resume, size_t *len)
{
	uint8      *b, *blob;

	if (job->resume_checkpoint_id < 0)
		return NULL;
	if (!hw_checkpoint_find(job->model_id, job->resume_checkpoint_id, resume))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("checkpoint %lld to resume from no longer exists", (long long) job->resume_checkpoint_id),
				 errhint("Call rt_train again; it resumes from the latest checkpoint.")));
	b = hw_checkpoint_load_state(resume->checkpoint_id, len);
	blob = MemoryContextAlloc(TopMemoryContext, Max(*len, 1));
	memcpy(blob, b, *len);
	return blob;
}

/*
 * What the job holds outside PostgreSQL's memory: device memory, streams and
 * the cuBLAS handle (in the backend), the prefetch producer thread, and the
 * malloc'ed snapshot, tasks, tables and samplers.  hw_train_loop_run releases
 * all of it in a PG_FINALLY, so an ERROR (a failed step, a checkpoint that
 * cannot be written, a query cancel) frees it before the worker records the
 * failure, not at process exit, and the producer thread never runs on past
 * the job.
 */
typedef struct TrainResources
{
	HwSnapshot *snap;
	HwTask    **tasks;
	int         ntasks;
	uint16_t   *col_emb, *cat_emb;
	HwSampler  *sampler, *val_sampler;
	HwPrefetch *pf;
	HwBackend  *be;
	HwModel    *model;
	/* data parallel (docs/distributed.md): W ranks x A micro-batches; rank
	 * 0 is be/model above, ranks 1.. replicas; one sampler clone and
	 * prefetch queue per virtual rank v = r * A + a */
	int         nranks, nvirt;
	HwBackend **rbe;            /* [nranks], [0] = be */
	HwModel   **rmodel;         /* [nranks], [0] = model */
	HwDpRank  **dp;             /* [nranks] */
	HwCollective *coll;
	HwDpThreads *threads;
	HwSampler **vsampler;       /* [nvirt] */
	HwPrefetch **vpf;           /* [nvirt] */
	HwBatch   **inflight;       /* [nvirt] the step's micro-batches, freed after it */
} TrainResources;

static void
release_resources(TrainResources *r)
{
	/* first the rank threads (a running step is aborted through the
	 * collective), then what they borrowed */
	hw_dp_threads_stop(r->threads, "the training worker stopped (error, cancel or shutdown)");
	for (int v = 0; r->vpf && v < r->nvirt; v++)
		hw_prefetch_stop(r->vpf[v]);
	for (int v = 0; r->inflight && v < r->nvirt; v++)
		hw_batch_free(r->inflight[v]);
	for (int v = 0; r->vsampler && v < r->nvirt; v++)
		hw_sampler_free(r->vsampler[v]);
	for (int k = 0; r->dp && k < r->nranks; k++)
		hw_dp_rank_free(r->dp[k]);
	for (int k = 1; r->rmodel && k < r->nranks; k++)
		hw_model_free(r->rmodel[k]);
	for (int k = 1; r->rbe && k < r->nranks; k++)
		hw_backend_destroy(r->rbe[k]);
	hw_coll_destroy(r->coll);
	free(r->vpf);
	free(r->inflight);
	free(r->vsampler);
	free(r->dp);
	free(r->rmodel);
	free(r->rbe);
	hw_prefetch_stop(r->pf);            /* first: the producer thread uses the sampler */
	hw_model_free(r->model);            /* before the backend that holds its memory */
	hw_backend_destroy(r->be);
	hw_sampler_free(r->val_sampler);    /* the clone before the sampler it shares tables with */
	hw_sampler_free(r->sampler);
	free(r->col_emb);
	free(r->cat_emb);
	for (int t = 0; r->tasks && t < r->ntasks; t++)
		hw_task_free(r->tasks[t]);
	free(r->tasks);
	snapshot_free(r->snap);
	memset(r, 0, sizeof(*r));
}


/*
 * Data parallel (docs/distributed.md): ranks 1..W-1 get their own backend
 * and a replica of rank 0's model made from its serialized state (the same
 * parameters, moments, step and RNG, also when resuming); one collective;
 * one thread per rank (dp_threads.h: they never call PostgreSQL); one
 * sampler clone and prefetch queue per virtual rank v = r * A + a, drawing
 * shard v of V = W * A (seed 001 2c), so 1 rank with grad_accum A trains
 * on the batches W = A ranks would.  The base sampler (rank 0 of 1) stays
 * for validation.
 */
static void
start_ranks(TrainResources *r, TrainSettings *st, HwJobShared *job, HwModel *model, HwBackend *be,
			HwSampler *sampler, int32_t ncols, uint32_t ncat, int W, int A, int rank_threads, uint64 position)
{
	HwError     err = {0};
	uint8_t    *blob = NULL;
	size_t      len = 0;
	int         V = W * A;

	r->nranks = W;
	r->nvirt = V;
	r->rbe = calloc(W, sizeof(HwBackend *));
	r->rmodel = calloc(W, sizeof(HwModel *));
	r->dp = calloc(W, sizeof(HwDpRank *));
	r->vsampler = calloc(V, sizeof(HwSampler *));
	r->vpf = calloc(V, sizeof(HwPrefetch *));
	r->inflight = calloc(V, sizeof(HwBatch *));
	if (!r->rbe || !r->rmodel || !r->dp || !r->vsampler || !r->vpf || !r->inflight)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory starting %d ranks", W)));
	r->rbe[0] = be;
	r->rmodel[0] = model;
	if (W > 1)
	{
		uint8_t    *mblob = NULL;

		if (hw_model_state_serialize(model, &mblob, &len, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "copying the model to the other ranks");
		/* palloc: not lost on an ERROR below (the worker ends with the job) */
		blob = palloc(Max(len, 1));
		memcpy(blob, mblob, len);
		free(mblob);
		for (int k = 1; k < W; k++)
		{
			const HwModelConfig *mc = hw_model_config(model);
			HwModelConfig *rc;

			r->rbe[k] = hw_pg_backend_create_rank(st->s.device, rank_threads, k, job);
			if (strcmp(hw_pg_backend_name(r->rbe[k]), hw_pg_backend_name(be)) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("rank %d runs on %s, rank 0 on %s", k, hw_pg_backend_name(r->rbe[k]),
								hw_pg_backend_name(be)),
						 errhint("All ranks must use one kind of device.")));
			r->rmodel[k] = hw_model_state_deserialize(blob, len, r->col_emb, ncols, r->cat_emb, (int32_t) ncat,
														r->rbe[k], &err);
			if (r->rmodel[k] == NULL)
				hw_pg_raise_core_error(&err, psprintf("creating the model of rank %d", k));
			/* the schedule state rank 0 has (hw_lr_schedule_extend ran on it) */
			rc = (HwModelConfig *) hw_model_config(r->rmodel[k]);
			*rc = *mc;
		}
		pfree(blob);
		r->coll = hw_pg_collective_create(r->rbe, W, st->s.rank_timeout);
	}
	for (int k = 0; k < W; k++)
		if ((r->dp[k] = hw_dp_rank_create(r->rmodel[k], r->coll, k, A, &err)) == NULL)
			hw_pg_raise_core_error(&err, psprintf("starting rank %d", k));
	if (W > 1 && job->debug_rank_stall_ms > 0)
		hw_dp_rank_set_stall(r->dp[W - 1], job->debug_rank_stall_ms);
	for (int v = 0; v < V; v++)
	{
		if ((r->vsampler[v] = hw_sampler_clone_rank(sampler, v, V, &err)) == NULL)
			hw_pg_raise_core_error(&err, psprintf("creating the sampler of rank %d", v));
		if ((r->vpf[v] = hw_prefetch_start(r->vsampler[v], HW_SPLIT_TRAIN, position, 2, &err)) == NULL)
			hw_pg_raise_core_error(&err, "starting the batch prefetcher");
	}
	if ((r->threads = hw_dp_threads_start(r->dp, W, r->coll, &err)) == NULL)
		hw_pg_raise_core_error(&err, "starting the rank threads");
	if (W > 1)
	{
		/* one row per rank (headwater.rendezvous); the job's end sets their state */
		char        host[256] = "localhost";
		Oid         argtypes[4] = {INT8OID, INT4OID, TEXTOID, TEXTOID};
		Datum       values[4] = {Int64GetDatum(job->job_id), Int32GetDatum(W), (Datum) 0,
								 CStringGetTextDatum(hw_pg_backend_name(be))};

		(void) gethostname(host, sizeof(host) - 1);
		values[2] = CStringGetTextDatum(host);
		hw_job_exec_committed("INSERT INTO headwater.rendezvous (job_id, rank, host, device, state) "
							  "SELECT $1, r, $3, CASE WHEN $4 = 'cpu' THEN 'cpu' ELSE $4 || ':' || r END, 'running' "
							  "FROM generate_series(0, $2 - 1) r",
							  4, argtypes, values, NULL);
	}
}

/* One data-parallel step: the V micro-batches from the queues, the ranks
 * run it while this thread serves interrupts; *res is rank 0's result.
 * SIGTERM aborts the step (a rank waiting for a late one could wait
 * rank_timeout, up to a day): the ranks are stopped and joined, and
 * *terminated tells the loop to end the job at once. */
static int
dp_step(TrainResources *r, const HwModelConfig *mc0, bool check, HwStepResult *res, uint64 *checksum,
		bool *terminated, HwError *err)
{
	int rc = HW_OK;

	*terminated = false;
	for (int v = 0; v < r->nvirt; v++)
		if (hw_prefetch_next(r->vpf[v], &r->inflight[v], NULL, NULL, err) != HW_OK)
			hw_pg_raise_core_error(err, psprintf("sampling a training batch of rank %d", v));
	/* runtime schedule state (max_minutes) as rank 0 has it */
	for (int k = 1; k < r->nranks; k++)
		((HwModelConfig *) hw_model_config(r->rmodel[k]))->sched_min_t = mc0->sched_min_t;
	if (hw_dp_threads_post(r->threads, r->inflight, check, err) != HW_OK)
		hw_pg_raise_core_error(err, "starting a data-parallel step");
	while (!hw_dp_threads_wait(r->threads, 0.1, res, &rc, checksum, err))
	{
		CHECK_FOR_INTERRUPTS();
		if (hw_job_terminated())
		{
			hw_dp_threads_stop(r->threads, "the training worker was terminated");
			r->threads = NULL;
			*terminated = true;
			break;
		}
	}
	for (int v = 0; v < r->nvirt; v++)
	{
		hw_batch_free(r->inflight[v]);
		r->inflight[v] = NULL;
	}
	return *terminated ? HW_OK : rc;
}

/* Data parallel: the ranks (devices "all": every visible GPU, 1 on the
 * CPU) and the threads of each rank (the CPUs split between the ranks'
 * OpenMP teams, at least 1 each). */
static int
resolve_ranks(const TrainSettings *st, int *rank_threads)
{
	int         W = st->s.ranks;

	*rank_threads = st->threads;
	if (st->s.devices_all)
	{
		const char *why_not = NULL;

		W = strcmp(st->s.device, "cpu") == 0 ? 0 : hw_pg_cuda_device_count(&why_not);
		W = Max(1, Min(W, HW_TRAIN_MAX_RANKS));
	}
	if (W > 1)
	{
		int ncpu = st->threads > 0 ? st->threads : hw_train_clamp_threads(1 << 20);

		*rank_threads = Max(1, ncpu / W);
	}
	return W;
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

static const char *
train_loop(HwJobShared *job, StringInfo result, TrainResources *res)
{
	TrainSettings st;
	HwError     err = {0};
	HwSnapshot *snap;
	HwTask    **tasks;
	int         ntasks;
	HwCheckpointInfo resume = {0};
	uint8      *state_blob = NULL;
	size_t      state_len = 0;
	HwAsOwner   as_owner;

	memset(&st, 0, sizeof(st));

	/* ---- load everything once, in one transaction ---- */
	hw_worker_start_transaction();
	PushActiveSnapshot(GetTransactionSnapshot());
	snap = res->snap = hw_pg_snapshot_load(job->model_id);
	tasks = res->tasks = hw_pg_tasks_load_all(job->model_id, snap, NULL, &ntasks);
	res->ntasks = ntasks;
	SPI_connect();
	hw_become_owner(&as_owner);
	read_settings(job, &st, tasks, ntasks);
	state_blob = load_resume_state(job, &resume, &state_len);
	hw_restore_user(&as_owner);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();

	/* ---- build sampler and model ---- */
	uint16_t   *col_emb, *cat_emb;
	int32_t     ncols;
	uint32_t    ncat;
	check_core(hw_training_tables(snap, tasks, ntasks, &res->col_emb, &ncols, &res->cat_emb, &ncat, &err), &err,
			   "building the embedding tables");
	col_emb = res->col_emb;
	cat_emb = res->cat_emb;
	HwSampler  *sampler = res->sampler = hw_sampler_create(snap, tasks, ntasks, &st.s.scfg, &err);
	if (sampler == NULL)
		hw_pg_raise_core_error(&err, "creating the sampler");
	int         A = st.s.grad_accum, rank_threads;
	int         W = resolve_ranks(&st, &rank_threads);
	HwBackend  *be = res->be = hw_pg_backend_create_rank(st.s.device, rank_threads, 0, job);
	HwModel    *model = res->model = create_or_resume_model(&st, job, state_blob, state_len, col_emb, ncols,
															  cat_emb, ncat, be);
	const HwModelConfig *mc = hw_model_config(model);
	int64       step = hw_model_step(model);
	int         V = W * A;
	bool        dp = V > 1;

	if (dp)
		start_ranks(res, &st, job, model, be, sampler, ncols, ncat, W, A, rank_threads,
					state_blob ? resume.sampler_position : 0);
	uint64_t    position = state_blob ? resume.sampler_position : 0;
	double      best_val = state_blob ? resume.best_val : INFINITY;
	int64       last_ckpt = state_blob ? resume.checkpoint_id : -1;
	/* the run this job continues, or a new one it starts (hw_checkpoint.h) */
	int64       lineage = state_blob ? resume.lineage : job->job_id;

	/* rt_train refuses a total below the resume point; so does the worker */
	if (step > job->steps_target)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" is already trained to step %lld, beyond steps => %d",
						st.model_name, (long long) step, job->steps_target),
				 errhint("steps is the total number of steps: pass more than %lld to train further, "
						 "or options => '{\"restart\": true}' to start over.", (long long) step)));
	{
		Oid     argtypes[2] = {INT8OID, INT8OID};
		Datum   values[2] = {Int64GetDatum(job->job_id), Int64GetDatum(lineage)};

		/* from here on, this run is the model's current one */
		hw_job_exec_committed("UPDATE headwater.job SET lineage = $2, updated_at = clock_timestamp() "
							  "WHERE job_id = $1", 2, argtypes, values, NULL);
	}

	{
		char msg[512];
		snprintf(msg, sizeof(msg), "training model \"%s\" on %s: preset %s (D=%d, %d layers, %d heads, B=%d, S=%d), "
				 "%d task(s), %d rank(s) x %d micro-batch(es), %s at step %lld",
				 st.model_name, hw_pg_backend_name(be), st.s.preset, mc->d_model, mc->n_layers, mc->n_heads,
				 mc->batch_size, mc->seq_len, ntasks, W, A, state_blob ? "resuming" : "starting", (long long) step);
		SpinLockAcquire(&job->mutex);
		strlcpy(job->message, msg, sizeof(job->message));
		job->start_step = (int32) step;
		job->step = (int32) step;
		job->progress_seq++;
		SpinLockRelease(&job->mutex);
		ereport(LOG, (errmsg("headwater: %s", msg)));
	}

	/* validation gets its own sampler: the prefetcher owns the train one */
	HwSampler  *val_sampler = res->val_sampler = hw_sampler_clone(sampler, &err);
	if (val_sampler == NULL)
		hw_pg_raise_core_error(&err, "creating the validation sampler");
	/* one rank: one queue on the sampler; data parallel: start_ranks made one per virtual rank */
	HwPrefetch *pf = NULL;
	if (!dp && (pf = res->pf = hw_prefetch_start(sampler, HW_SPLIT_TRAIN, position, 3, &err)) == NULL)
		hw_pg_raise_core_error(&err, "starting the batch prefetcher");
	uint64      checksum = 0;
	bool        checked = false;

	double      t0 = now_seconds(), t_window = t0;
	int64       window_steps = 0;
	double      tokens_per_step = (double) mc->batch_size * mc->seq_len * V;
	double      tps = 0, last_loss = NAN, last_val = NAN;
	const char *final_state = "succeeded";
	bool        terminated = false;
	HwTaskValMetric *task_val = palloc0(sizeof(HwTaskValMetric) * 2 * Max(1, ntasks));    /* x2: last and average */
	int         ntask_val = 0;
	HwEta       eta_est;            /* ETA: EMA of step time + validation/checkpoint share (eta.h) */

	hw_eta_init(&eta_est);
	double      t_mark = now_seconds();     /* end of the last step's time */
	/* max_minutes: a time budget for this call's steps; the schedule is read
	 * at least at the budget's elapsed fraction of the steps left (optim.c
	 * sched_min_t), and training stops, checkpointed, when it is used up */
	double      budget_s = st.s.max_minutes * 60.0;
	int64       budget_from = step;
	bool        out_of_time = false;
	HwModelConfig *mcw = (HwModelConfig *) mc;

	TrainResources *tr = res;      /* the loop's `res` is the step result */

	while (step < job->steps_target)
	{
		HwBatch    *batch;
		HwStepResult res;

		if (hw_job_should_stop(job, &terminated))
		{
			final_state = "cancelled";
			break;
		}
		CHECK_FOR_INTERRUPTS();
		if (budget_s > 0)
		{
			double frac = Min(1.0, (now_seconds() - t0) / budget_s);

			mcw->sched_min_t = budget_from + frac * (double) (job->steps_target - budget_from);
		}
		int rc;
		if (!dp)
		{
			if (hw_prefetch_next(pf, &batch, NULL, NULL, &err) != HW_OK)
				hw_pg_raise_core_error(&err, "sampling a training batch");
			rc = hw_model_train_step(model, batch, &res, &err);
			hw_batch_free(batch);
		}
		else
		{
			/* every rank's parameters are compared at the first step, every
			 * check_every steps and at the last one */
			bool check = step == job->start_step || (step + 1) % st.s.check_every == 0 ||
				step + 1 == job->steps_target;

			rc = dp_step(tr, mcw, check, &res, &checksum, &terminated, &err);
			if (terminated)
			{
				final_state = "cancelled";
				break;
			}
			checked |= check && rc == HW_OK;
		}
		position++;
		if (rc != HW_OK)
			hw_pg_raise_core_error(&err, psprintf("training step %lld", (long long) step + 1));
		step = res.step;
		last_loss = res.loss;
		window_steps++;

		double now = now_seconds();
		out_of_time = budget_s > 0 && now - t0 >= budget_s && step < job->steps_target;
		bool last = step == job->steps_target || out_of_time;
		if (now - t_window >= 1.0 || last)
		{
			tps = window_steps * tokens_per_step / (now - t_window);
			t_window = now;
			window_steps = 0;
		}
		hw_eta_add_step(&eta_est, now - t_mark);
		t_mark = now;
		double eta = hw_eta_seconds(&eta_est, step, job->steps_target - step);
		hw_job_report_progress(job, (int32) step, res.loss, res.lr, res.grad_norm, tps, eta);

		if (step % st.s.log_every == 0 || last)
			hw_train_log_row(job, (int32) step, "train", res.loss, res.lr, res.grad_norm, tps);

		bool do_val = step % st.s.val_every == 0 || last;
		bool overhead = do_val;         /* a validation or checkpoint this step */
		if (do_val)
		{
			/* With a parameter average, each task is validated on both
			 * weights serving could read -- the last parameters, then the
			 * average (swapped in, and back before the checkpoint) -- and
			 * serving takes the better (hw_checkpoint_find_task): the
			 * average wins where a run is noisy around its best point, the
			 * last parameters where it still improves at the end.  The
			 * mixed val loss (is_best, progress) is the average's. */
			bool averaged = hw_model_has_ema(model);

			ntask_val = 0;
			if (averaged)
			{
				ntask_val = hw_train_validate_tasks(model, val_sampler, snap, tasks, ntasks, st.task_weights,
										   st.s.val_rows, task_val, false);
				check_core(hw_model_swap_ema(model, &err), &err, "validating the parameter average");
			}
			last_val = hw_train_validate(model, val_sampler, st.s.val_batches);
			SpinLockAcquire(&job->mutex);
			job->val_loss = last_val;
			SpinLockRelease(&job->mutex);
			hw_train_log_row(job, (int32) step, "val", last_val, res.lr, res.grad_norm, tps);
			ntask_val += hw_train_validate_tasks(model, val_sampler, snap, tasks, ntasks, st.task_weights,
										st.s.val_rows, task_val + ntask_val, averaged);
			if (averaged)
				check_core(hw_model_swap_ema(model, &err), &err, "validating the parameter average");
			hw_train_log_task_val(job, (int32) step, tasks, ntasks, task_val, ntask_val);
			hw_train_report_task_val(job, (int32) step, tasks, ntasks, task_val, ntask_val);
		}
		if (out_of_time)
		{
			/* the run ends here: its schedule ends at this lr, so a resume
			 * continues from it without a jump (hw_lr_schedule_extend) */
			mcw->sched_min_t = 0;
			if (step > mcw->warmup_steps)
			{
				mcw->sched_start = (int32) step;
				mcw->sched_start_lr = res.lr;
			}
			mcw->total_steps = (int32) step;
		}
		if (step % st.s.checkpoint_every == 0 || last)
		{
			bool best = do_val && !isnan(last_val) && last_val < best_val;
			if (best)
				best_val = last_val;
			last_ckpt = hw_checkpoint_save(job->job_id, job->model_id, lineage, model, position,
										   do_val ? last_val : NAN, best, &st.s.scfg, st.s.preset,
										   task_val, do_val ? ntask_val : 0);
			overhead = true;
		}
		/* validation / checkpoint time, spread over the steps in the ETA;
		 * other iterations' logging counts in the next step's time */
		if (overhead)
		{
			t_mark = now_seconds();
			hw_eta_add_overhead(&eta_est, step, t_mark - now);
			/* tokens/s measures training: the pause does not count in its window */
			t_window += t_mark - now;
		}
		if (out_of_time)
			break;
	}
	hw_prefetch_stop(pf);
	res->pf = NULL;
	/* the ranks are idle between steps; stop them before the final checkpoint */
	hw_dp_threads_stop(res->threads, NULL);
	res->threads = NULL;

	/* Asked to stop (not terminated): checkpoint what we have. */
	if (strcmp(final_state, "cancelled") == 0 && !terminated && step > 0)
		last_ckpt = hw_checkpoint_save(job->job_id, job->model_id, lineage, model, position, NAN, false,
									   &st.s.scfg, st.s.preset, NULL, 0);

	double wall = now_seconds() - t0;
	appendStringInfo(result,
					 "{\"job_id\": %lld, \"state\": \"%s\", \"steps_done\": %lld, \"steps_target\": %d, "
					 "\"resumed_from\": %d, "
					 "\"train_loss\": %s, \"val_loss\": %s, \"tokens_per_s\": %.1f, \"wall_s\": %.2f, "
					 "\"checkpoint_id\": %lld, \"stopped_on\": \"%s\", \"device\": ",
					 (long long) job->job_id, final_state, (long long) step, job->steps_target, job->start_step,
					 !isfinite(last_loss) ? "null" : psprintf("%.6g", last_loss),
					 !isfinite(last_val) ? "null" : psprintf("%.6g", last_val),
					 tps, wall, (long long) last_ckpt,
					 out_of_time ? "max_minutes" : strcmp(final_state, "cancelled") == 0 ? "cancel" : "steps");
	escape_json(result, hw_pg_backend_name(be));
	appendStringInfo(result, ", \"ranks\": %d, \"grad_accum\": %d", W, A);
	if (checked)
		appendStringInfo(result, ", \"param_checksum\": \"%016llx\"", (unsigned long long) checksum);
	appendStringInfoString(result, ", \"preset\": ");
	escape_json(result, st.s.preset);
	/* what the serving checkpoints' predictions read: the parameter average (its decay) or the last parameters (0) */
	appendStringInfo(result, ", \"ema_decay\": %g", (double) mc->ema_decay);
	if (!terminated)
		hw_train_append_serving(result, job->model_id, tasks, ntasks, st.task_weights);
	appendStringInfoChar(result, '}');

	return final_state;     /* the caller releases res */
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
		release_resources(res);
		pfree(res);
	}
	PG_END_TRY();
	return state;
}
