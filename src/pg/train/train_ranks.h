/*
 * train_ranks.h: what a training job holds outside PostgreSQL's memory,
 * and its data-parallel ranks (train_ranks.c; docs/distributed.md): the
 * rank models and threads, their samplers and prefetch queues, one step
 * across them.  Used by the loop (train_loop.c).
 */
#ifndef HW_TRAIN_RANKS_H
#define HW_TRAIN_RANKS_H

#include "postgres.h"

#include "pg/train/hw_train.h"
#include "pg/train/train_request.h"
#include "core/backend.h"
#include "core/collective.h"
#include "core/dp_step.h"
#include "core/dp_threads.h"
#include "core/model.h"
#include "core/prefetch.h"
#include "core/sampler.h"
#include "core/task.h"

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

/* Frees all of it (each part may be absent), ranks first; zeroes *r. */
void hw_train_release_resources(TrainResources *r);

/* The option train_precision on a rank's model (every rank alike). */
void hw_train_set_precision(HwModel *model, const TrainSettings *st);

/* The ranks W and each rank's threads for the settings. */
int  hw_train_resolve_ranks(const TrainSettings *st, int *rank_threads);

/* Ranks 1..W-1 beside rank 0's model and backend, W x A prefetch queues
 * from `position`, the rank threads (and the rendezvous rows). */
void hw_train_start_ranks(TrainResources *r, TrainSettings *st, HwJobShared *job, HwModel *model, HwBackend *be,
						  HwSampler *sampler, int32_t ncols, uint32_t ncat, int W, int A, int rank_threads,
						  uint64 position);

/* One data-parallel step (*terminated: SIGTERM ended it; end the job). */
int  hw_train_dp_step(TrainResources *r, const HwModelConfig *mc0, bool check, HwStepResult *res, uint64 *checksum,
					  bool *terminated, HwError *err);

#endif
