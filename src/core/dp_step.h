/*
 * dp_step.h: one optimiser step of data-parallel training (docs/distributed.md).
 *
 * W ranks (threads on the CPU, one GPU each on CUDA), each with its own
 * model replica on its own backend, all with the same parameters and
 * optimiser state.  Per step every rank runs A = grad_accum micro-batches
 * of the same size B; the step's gradient is the mean over all W*A
 * micro-batches of each micro-batch's mean-loss gradient, i.e. the gradient
 * of the mean loss over the global batch of W*A*B sequences:
 *     acc   = g(0)                     rank-local, on the device
 *     acc   = g(a) + acc   a = 1..A-1  (axpby 1, 1: the plain float sum; x + y == y + x)
 *     acc   = all-reduce sum of acc over ranks, rank order (collective.h)
 *     grads = (1 / (W*A)) * acc        one rounding, the same on every rank
 * then the optimiser step, identical on every rank (same gradients, same
 * parameters, same step count).  The reported loss is the same fold over
 * the micro-batch losses (carried as one more float of the all-reduced
 * buffer), divided by W*A.
 *
 * Exactness: W ranks with A = 1 and one rank with A = W fold the same
 * micro-batch gradients in the same order, g0 + g1 + ... (the in-process
 * collective is a left fold in rank order; the local accumulation is a left
 * fold in micro-batch order), so both give bit-identical parameters when
 * micro-batch k of the one rank is rank k's batch (the trainer shards seeds
 * by virtual rank r*A + a for that).  Layouts with W > 1 and A > 1 group
 * the sum differently ((g0+g1)+(g2+g3) for W=2, A=2) and agree within
 * rounding only; so does NCCL, whose sum order is its own.
 * W = A = 1 is hw_model_train_step itself (no copy, no scaling).
 *
 * The model has no dropout or other per-step randomness: nothing needs a
 * per-rank RNG stream.  On any failure the rank aborts the collective with
 * its message, so the other ranks stop instead of waiting.
 */
#ifndef HW_DP_STEP_H
#define HW_DP_STEP_H

#include "core/collective.h"
#include "core/model.h"

typedef struct HwDpRank HwDpRank;

/* Rank `rank` of c (NULL: one rank) training m with grad_accum (1..1024)
 * micro-batches per step.  Borrows m and c. */
HwDpRank *hw_dp_rank_create(HwModel *m, HwCollective *c, int rank, int grad_accum, HwError *err);
void      hw_dp_rank_free(HwDpRank *d);
/* Tests only: sleep ms (0..60000) at the start of every step of this rank,
 * so a peer's rank_timeout is reached deterministically. */
void      hw_dp_rank_set_stall(HwDpRank *d, int ms);
int       hw_dp_rank_grad_accum(const HwDpRank *d);

/* One step on micro[0..grad_accum-1] (all of batch size micro[0]->B).
 * res as hw_model_train_step's, loss = mean over the global batch. */
int hw_dp_step(HwDpRank *d, HwBatch *const *micro, HwStepResult *res, HwError *err);

/* Parameters and both optimiser moments := rank 0's (at the start of a
 * run, so the replicas agree even if creation were not reproducible). */
int hw_dp_sync_from_rank0(HwDpRank *d, HwError *err);

/* FNV-1a 64 of the parameter bytes of this rank; then, with a collective,
 * whether every rank has the same: HW_ERR_INTERNAL "parameters of the
 * ranks differ" when not. */
int hw_dp_check_params(HwDpRank *d, uint64_t *checksum, HwError *err);

/* FNV-1a 64 of the model's parameter bytes (hw_model_numel floats). */
int hw_model_params_checksum(HwModel *m, uint64_t *checksum, HwError *err);

#endif /* HW_DP_STEP_H */
