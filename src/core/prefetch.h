/*
 * prefetch.h: a bounded queue of batches filled by a producer thread (seed
 * 001 section 2e), for the trainer and for bulk prediction.  One queue =
 * one stream (train or val, or a list of rows): run two queues, each on its own sampler (hw_sampler_clone shares the
 * read-only tables), for separate train and val streams.
 *
 *     HwPrefetch *q = hw_prefetch_start(sampler, HW_SPLIT_TRAIN, step, 3, &err);
 *     for (...) {
 *         HwBatch *b;  uint64_t k;
 *         if (hw_prefetch_next(q, &b, &k, NULL, &err) != HW_OK) break;  // producer's error
 *         ...;  hw_batch_free(b);
 *     }
 *     hw_prefetch_stop(q);     // wakes and joins the producer, frees queued batches
 *
 * The producer builds batch numbers first_batch, first_batch+1, ... with
 * hw_sampler_batch, so the stream is exactly the one a caller would get by
 * calling hw_sampler_batch itself (deterministic; resume = start at k).
 * While the queue runs it owns the sampler: do not call the sampler from
 * elsewhere until hw_prefetch_stop returns.  A producer error (out of
 * memory, a split without seeds) is delivered to the consumer after the
 * batches already queued, and again on every later call.  Plain C (pthreads);
 * the consumer may be PostgreSQL's main thread, the producer never calls
 * into PostgreSQL.
 */
#ifndef HW_PREFETCH_H
#define HW_PREFETCH_H

#include "core/sampler.h"

typedef struct HwPrefetch HwPrefetch;

/* capacity: batches held ready (>= 1; the trainer holds 3, or 2 per
 * virtual rank in data-parallel training). */
HwPrefetch *hw_prefetch_start(HwSampler *s, int split, uint64_t first_batch, int capacity, HwError *err);

/*
 * A stream of the sequences of n anchor rows of `task` at their obs times
 * (bulk prediction): batch k holds rows k*batch .. k*batch+batch-1 (the
 * last one fewer), each built by hw_sampler_build_for_seeds, so a row's
 * sequence is the one a direct call gives; seed_idx of hw_prefetch_next
 * receives the batch's indices into the row list.  anchor_rows and
 * obs_time_us are copied: the caller may free them at once.
 * After the last batch, next returns HW_ERR_CANCELLED ("stopped").
 */
HwPrefetch *hw_prefetch_start_rows(HwSampler *s, int task, const uint32_t *anchor_rows, const int64_t *obs_time_us,
								   int n, int batch, int capacity, HwError *err);

/* Blocks until the next batch (in batch-number order).  seed_idx, when not
 * NULL, receives the batch's B seed indices.  Returns HW_OK, the producer's
 * error, or HW_ERR_CANCELLED after hw_prefetch_stop started. */
int hw_prefetch_next(HwPrefetch *q, HwBatch **out, uint64_t *batch_number, uint32_t *seed_idx, HwError *err);

/* Like hw_prefetch_next but returns HW_ERR_CANCELLED with *out NULL at once
 * when no batch is ready (for a consumer that polls for interrupts). */
int hw_prefetch_try_next(HwPrefetch *q, HwBatch **out, uint64_t *batch_number, uint32_t *seed_idx, HwError *err);

/* Stops the producer (it finishes the batch in hand), joins it, frees the
 * queued batches and the queue.  NULL is a no-op. */
void hw_prefetch_stop(HwPrefetch *q);

#endif
