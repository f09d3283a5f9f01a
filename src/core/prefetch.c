/*
 * prefetch.c: bounded batch queue with one producer thread (prefetch.h),
 * fed by a split's batch numbers (training) or by a list of anchor rows
 * (bulk prediction).
 * A ring of `capacity` slots under one mutex and two condition variables;
 * batches are large and few per second, so a lock per batch costs nothing.
 * The producer is the one job of a one-worker thread pool (thread_pool.h:
 * started with signals blocked, joined on stop).
 */
#include "core/prefetch.h"
#include "core/thread_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct Item
{
	HwBatch  *batch;
	uint64_t  k;
	uint32_t *seeds;            /* [B] */
} Item;

struct HwPrefetch
{
	HwSampler      *s;
	int             split;      /* a split's stream, or -1: the rows below */
	int             task;       /* rows: the task, anchors and obs times (the queue's copies) */
	uint32_t       *rows;
	int64_t        *obs;
	int             nrows;
	uint64_t        next_k;     /* producer's next batch number */
	int             cap, head, count;
	Item           *ring;
	int             B;
	bool            stop, done; /* done: producer exited (error set when it failed) */
	HwError         error;
	pthread_mutex_t mu;
	pthread_cond_t  not_full, not_empty;
	HwThreadPool   *pool;       /* the producer's thread */
};

/* Batch k of a row stream: rows k*B .. k*B+B-1 (fewer in the last one);
 * seeds gets their indices into the row list. */
static int
build_rows(HwPrefetch *q, uint64_t k, HwBatch **out, uint32_t *seeds, HwError *err)
{
	int first = (int) (k * (uint64_t) q->B);
	int n = q->nrows - first < q->B ? q->nrows - first : q->B;

	for (int i = 0; i < n; i++)
		seeds[i] = (uint32_t) (first + i);
	return hw_sampler_build_for_seeds(q->s, q->task, q->rows + first, q->obs + first, n, out, err);
}

/* The producer: batches k = next_k, next_k + 1, ... until stopped or an
 * error (the pool's one item). */
static void
producer(void *arg, int item, int worker)
{
	HwPrefetch *q = arg;

	for (;;)
	{
		pthread_mutex_lock(&q->mu);
		while (!q->stop && q->count == q->cap)
			pthread_cond_wait(&q->not_full, &q->mu);
		if (q->stop)
		{
			pthread_mutex_unlock(&q->mu);
			break;
		}
		uint64_t k = q->next_k++;

		pthread_mutex_unlock(&q->mu);

		/* build outside the lock: the consumer keeps draining meanwhile */
		HwError err = {0};
		HwBatch *b = NULL;
		uint32_t *seeds = calloc((size_t) q->B, sizeof(uint32_t));
		int rc = HW_OK;

		if (seeds == NULL)
			rc = hw_error_set(&err, HW_ERR_NOMEM, "out of memory in the prefetch producer");
		else if (q->split >= 0)
			rc = hw_sampler_batch(q->s, q->split, k, &b, seeds, &err);
		else if (k * (uint64_t) q->B >= (uint64_t) q->nrows)
		{
			free(seeds);        /* every row is queued: the stream ends */
			break;
		}
		else
			rc = build_rows(q, k, &b, seeds, &err);

		pthread_mutex_lock(&q->mu);
		if (rc != HW_OK)
		{
			free(seeds);
			q->error = err;
			q->done = true;
			pthread_cond_broadcast(&q->not_empty);
			pthread_mutex_unlock(&q->mu);
			break;
		}
		if (q->stop)
		{
			pthread_mutex_unlock(&q->mu);
			hw_batch_free(b);
			free(seeds);
			break;
		}
		Item *it = &q->ring[(q->head + q->count) % q->cap];

		it->batch = b;
		it->k = k;
		it->seeds = seeds;
		q->count++;
		pthread_cond_signal(&q->not_empty);
		pthread_mutex_unlock(&q->mu);
	}
	pthread_mutex_lock(&q->mu);
	q->done = true;
	pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->mu);
}

/* A queue of `capacity` batches of B sequences, its producer started on
 * what q's caller filled in (split or rows). */
static HwPrefetch *
queue_start(HwPrefetch *init, int capacity, HwError *err)
{
	HwPrefetch *q = calloc(1, sizeof(HwPrefetch));

	if (q == NULL || (q->ring = calloc((size_t) capacity, sizeof(Item))) == NULL)
	{
		free(q);
		hw_error_set(err, HW_ERR_NOMEM, "out of memory for the prefetch queue");
		return NULL;
	}
	q->s = init->s;
	q->split = init->split;
	q->task = init->task;
	q->nrows = init->nrows;
	if (init->split < 0)
	{
		/* the producer reads its own copies: the caller's memory may be a
		 * server's, which only the caller's thread may touch */
		size_t n = (size_t) (init->nrows > 0 ? init->nrows : 1);

		q->rows = malloc(sizeof(uint32_t) * n);
		q->obs = malloc(sizeof(int64_t) * n);
		if (q->rows == NULL || q->obs == NULL)
		{
			free(q->rows);
			free(q->obs);
			free(q->ring);
			free(q);
			hw_error_set(err, HW_ERR_NOMEM, "out of memory for the row stream");
			return NULL;
		}
		if (init->nrows > 0)
		{
			memcpy(q->rows, init->rows, sizeof(uint32_t) * (size_t) init->nrows);
			memcpy(q->obs, init->obs, sizeof(int64_t) * (size_t) init->nrows);
		}
	}
	q->next_k = init->next_k;
	q->B = init->B;
	q->cap = capacity;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->not_full, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	if ((q->pool = hw_pool_start(1, "prefetch", err)) == NULL ||
		hw_pool_post(q->pool, HW_POOL_PINNED, producer, q, 1, err) != HW_OK)
	{
		hw_prefetch_stop(q);
		return NULL;
	}
	return q;
}

HwPrefetch *
hw_prefetch_start(HwSampler *s, int split, uint64_t first_batch, int capacity, HwError *err)
{
	if (s == NULL || capacity < 1 || split < 0 || split >= HW_N_SPLITS)
	{
		hw_error_set(err, HW_ERR_INVALID, "prefetch needs a sampler, a split and capacity >= 1 (got %d)", capacity);
		return NULL;
	}
	HwPrefetch init = { .s = s, .split = split, .next_k = first_batch, .B = hw_sampler_config(s)->batch_size };

	return queue_start(&init, capacity, err);
}

HwPrefetch *
hw_prefetch_start_rows(HwSampler *s, int task, const uint32_t *anchor_rows, const int64_t *obs_time_us, int n,
					   int batch, int capacity, HwError *err)
{
	if (s == NULL || capacity < 1 || batch < 1 || n < 0 || (n > 0 && (anchor_rows == NULL || obs_time_us == NULL)))
	{
		hw_error_set(err, HW_ERR_INVALID, "a row stream needs a sampler, rows, batch >= 1 and capacity >= 1 "
					 "(got %d rows, batch %d, capacity %d)", n, batch, capacity);
		return NULL;
	}
	HwPrefetch init = { .s = s, .split = -1, .task = task, .rows = (uint32_t *) anchor_rows,
						.obs = (int64_t *) obs_time_us, .nrows = n, .B = batch };

	return queue_start(&init, capacity, err);
}

static int
take(HwPrefetch *q, bool wait, HwBatch **out, uint64_t *k, uint32_t *seed_idx, HwError *err)
{
	*out = NULL;
	pthread_mutex_lock(&q->mu);
	while (wait && q->count == 0 && !q->done && !q->stop)
		pthread_cond_wait(&q->not_empty, &q->mu);
	if (q->count > 0)
	{
		Item *it = &q->ring[q->head];

		*out = it->batch;
		if (k)
			*k = it->k;
		if (seed_idx)
			memcpy(seed_idx, it->seeds, sizeof(uint32_t) * (size_t) q->B);
		free(it->seeds);
		memset(it, 0, sizeof(*it));
		q->head = (q->head + 1) % q->cap;
		q->count--;
		pthread_cond_signal(&q->not_full);
		pthread_mutex_unlock(&q->mu);
		return HW_OK;
	}
	int rc;

	if (q->done && q->error.code != HW_OK)
	{
		if (err)
			*err = q->error;
		rc = q->error.code;
	}
	else
		rc = hw_error_set(err, HW_ERR_CANCELLED, q->stop || q->done ? "the batch stream was stopped"
						  : "no batch ready yet");
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int
hw_prefetch_next(HwPrefetch *q, HwBatch **out, uint64_t *k, uint32_t *seed_idx, HwError *err)
{
	return take(q, true, out, k, seed_idx, err);
}

int
hw_prefetch_try_next(HwPrefetch *q, HwBatch **out, uint64_t *k, uint32_t *seed_idx, HwError *err)
{
	return take(q, false, out, k, seed_idx, err);
}

void
hw_prefetch_stop(HwPrefetch *q)
{
	if (q == NULL)
		return;
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_broadcast(&q->not_full);
	pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->mu);
	hw_pool_stop(q->pool);      /* waits for the producer to return */
	for (int i = 0; i < q->count; i++)
	{
		Item *it = &q->ring[(q->head + i) % q->cap];

		hw_batch_free(it->batch);
		free(it->seeds);
	}
	pthread_cond_destroy(&q->not_full);
	pthread_cond_destroy(&q->not_empty);
	pthread_mutex_destroy(&q->mu);
	free(q->rows);
	free(q->obs);
	free(q->ring);
	free(q);
}
