/*
 * dp_threads.h: one thread per data-parallel rank, driven by one caller
 * (the training worker's main thread, the only one that calls PostgreSQL).
 * The threads are the core's pool (thread_pool.h); each rank keeps its
 * thread, and so its device context, from step to step.
 *
 * The caller samples the batches, posts a step (every rank's micro-batches),
 * and polls for the end of the step so it can serve interrupts meanwhile;
 * between steps the rank threads are idle, so the caller may read rank 0's
 * model (validation, checkpoints).  Each rank thread runs hw_dp_step on its
 * own HwDpRank (own model, own backend) and, when the step asks for it, the
 * parameter check across ranks (hw_dp_check_params).
 *
 *     HwDpThreads *t = hw_dp_threads_start(ranks, W, &err);
 *     hw_dp_threads_post(t, micro, check);         // micro[r * A + a]
 *     while (!hw_dp_threads_wait(t, 0.1, &res, &rc, &err)) { serve interrupts }
 *     ...
 *     hw_dp_threads_stop(t, "why");                // aborts the collective, joins
 *
 * A rank that fails aborts the collective with its message (dp_step.c), so
 * the others return; the step's error is then the collective's FIRST error
 * (the failing rank's message), not an "aborted" of a bystander.
 */
#ifndef HW_DP_THREADS_H
#define HW_DP_THREADS_H

#include <stdbool.h>

#include "core/dp_step.h"

typedef struct HwDpThreads HwDpThreads;

/* Threads for ranks[0..nranks-1] (borrowed; ranks[r] is rank r of c). */
HwDpThreads *hw_dp_threads_start(HwDpRank **ranks, int nranks, HwCollective *c, HwError *err);

/* Starts one step: rank r trains on micro[r * A .. r * A + A - 1] (borrowed
 * until the step ends; A = the ranks' grad_accum); check: then compare the
 * parameter checksums of the ranks.  HW_ERR_INVALID while a step runs. */
int hw_dp_threads_post(HwDpThreads *t, HwBatch *const *micro, bool check, HwError *err);

/* Waits up to timeout_s for the posted step; a rank that fails ends the
 * wait at once (false until the others, stopped by the aborted collective,
 * have returned).  false: still running.  true: done; *res = rank 0's result, *rc = HW_OK or the step's error (in err),
 * *checksum = rank 0's parameter checksum when the step checked. */
bool hw_dp_threads_wait(HwDpThreads *t, double timeout_s, HwStepResult *res, int *rc,
						uint64_t *checksum, HwError *err);

/* Aborts the collective when a step is still running (why: the message),
 * stops and joins the threads.  NULL is a no-op. */
void hw_dp_threads_stop(HwDpThreads *t, const char *why);

#endif /* HW_DP_THREADS_H */
