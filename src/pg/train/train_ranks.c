/*
 * train_ranks.c: what a training job holds outside PostgreSQL's memory and
 * its data-parallel ranks (train_ranks.h).  Only the calling thread calls
 * PostgreSQL; the rank threads touch plain memory only.
 */
#include "postgres.h"

#include <unistd.h>

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "pg/base/hw_pg.h"
#include "pg/train/hw_device.h"
#include "pg/train/train_ranks.h"


void
hw_train_release_resources(TrainResources *r)
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


/* The option train_precision on a rank's model (every rank alike). */
void
hw_train_set_precision(HwModel *model, const TrainSettings *st)
{
	HwError     err = {0};

	if (hw_model_set_train_precision(model, (HwPrecision) st->s.train_precision, &err) != HW_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("train_precision \"bf16\" cannot run here: %s", err.msg),
				 errhint("Use \"train_precision\": \"auto\" (bf16 where the processor can) or \"fp32\".")));
}

/*
 * Data parallel (docs/distributed.md): ranks 1..W-1 get their own backend
 * and a replica of rank 0's model made from its serialized state (the same
 * parameters, moments, step and RNG, also when resuming); one collective;
 * one thread per rank (dp_threads.h: they never call PostgreSQL); one
 * sampler clone and prefetch queue per virtual rank v = r * A + a, drawing
 * shard v of V = W * A (seed i belongs to shard i % V), so 1 rank with grad_accum A trains
 * on the batches W = A ranks would.  The base sampler (rank 0 of 1) stays
 * for validation.
 */
void
hw_train_start_ranks(TrainResources *r, TrainSettings *st, HwJobShared *job, HwModel *model, HwBackend *be,
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
			hw_train_set_precision(r->rmodel[k], st);
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
int
hw_train_dp_step(TrainResources *r, const HwModelConfig *mc0, bool check, HwStepResult *res, uint64 *checksum,
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
int
hw_train_resolve_ranks(const TrainSettings *st, int *rank_threads)
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
