/*
 * hw_serving_worker.h: the serving worker (headwater.serving_worker, off by
 * default).  One background worker per (model, checkpoint, weights) owns
 * the model; sessions that call rt_predict / rt_predict_label for one row
 * hand it the row through a shared-memory queue instead of running a
 * forward of their own, it batches what arrives within
 * headwater.serving_worker_window_ms and answers each caller in its slot.
 * Many clients predicting one row each then share one forward.
 *
 * The caller still resolves its task, rights, row-level security and key in
 * its own session (hw_serving_get, predict_keys.c): the worker receives a
 * row index of the snapshot both map, never a key or SQL.  Its answer is the
 * one the session would compute (a batch predicts each row as alone, bit for
 * bit), so it is an optimisation only: whenever the worker cannot answer
 * (not started, busy starting, stopped, failed, a request with context
 * labels or for probabilities) the session predicts in-process.
 *
 * Files: serving_worker.c (the caller's side: finding or starting the
 * worker, posting, waiting), serving_worker_main.c (the worker),
 * serving_worker_rendezvous.c (the files that name the workers' segments),
 * serving_worker_status.c (rt_serving_workers).
 */
#ifndef HW_SERVING_WORKER_H
#define HW_SERVING_WORKER_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/dsm.h"

#include "pg/serve/hw_serving.h"
#include "pg/serve/predict_priv.h"

#define HW_SW_DIR "pg_headwater/serving_worker"
#define HW_SW_TYPE "headwater serving"    /* bgw_type */

/* requests in flight per worker (a caller finding none free predicts itself) */
#define HW_SW_SLOTS 256

typedef enum HwSwSlotState
{
	HW_SW_FREE = 0,
	HW_SW_FILLING,       /* a caller owns it and writes its request */
	HW_SW_POSTED,        /* waiting for the worker */
	HW_SW_RUNNING,       /* in the worker's batch */
	HW_SW_DONE,          /* answered: the caller reads it and frees it */
	HW_SW_FAILED,        /* the worker's forward failed: the caller predicts itself */
	HW_SW_ABANDONED      /* the caller left (cancel, error) while it ran: the worker frees it */
} HwSwSlotState;

typedef enum HwSwPhase
{
	HW_SW_STARTING = 0,  /* segment made, the worker loads the model */
	HW_SW_READY,         /* serving */
	HW_SW_STOPPING,      /* idle or told to stop: takes no new requests */
	HW_SW_GONE           /* failed to start or exited */
} HwSwPhase;

typedef struct HwSwSlot
{
	pg_atomic_uint32 state;      /* HwSwSlotState */
	int         caller_procno;   /* whose latch to set when done */
	int32       task;            /* index in the served model's tasks */
	uint32      row;             /* the anchor row in the snapshot */
	int64       obs;             /* observation time, epoch µs (HW_NO_CUTOFF: none) */
	int32       precision;       /* the session's headwater.inference_precision */
	HwPrediction result;         /* the answer, without categorical probabilities (probs NULL) */
} HwSwSlot;

#define HW_SW_MAGIC 0x68777377   /* 'hwsw' */

/* The shared segment of one worker, made by the session that starts it. */
typedef struct HwSwQueue
{
	uint32      magic;
	Oid         dboid;
	Oid         roleoid;         /* the model's owner: the worker loads the model as it */
	int32       model_id;
	int64       checkpoint_id;
	bool        average;
	uint64      state_key_hash;  /* of HwServing.key: a worker of another model state is not used */
	char        task_ref[2 * NAMEDATALEN + 2];   /* any task of the model ('model.task') */
	pg_atomic_uint32 phase;      /* HwSwPhase */
	int         worker_procno;
	int         worker_pid;
	int         window_ms;
	int         idle_s;
	pg_atomic_uint64 batches;    /* forwards run */
	pg_atomic_uint64 rows;       /* rows answered */
	char        error[256];      /* why it is GONE, when it failed */
	HwSwSlot    slots[HW_SW_SLOTS];
} HwSwQueue;

/* GUCs (serving_worker.c) */
extern bool hw_serving_worker_enabled;
extern int  hw_serving_worker_window_ms;
extern int  hw_serving_worker_idle_s;
extern int  hw_max_serving_workers;
void hw_serving_worker_guc_init(void);

/* The worker's answer for task t's anchor row `row` at obs into *out (its
 * probs NULL), true; false when the worker cannot answer now (then the
 * caller predicts in-process).  Starts the worker of s's (model,
 * checkpoint, weights) when there is none and the setting is on. */
bool hw_serving_worker_predict(HwServing *s, int t, uint32 row, int64 obs, HwPrediction *out);

/* serving_worker_rendezvous.c: the rendezvous file of a worker; the
 * segment handle in one (DSM_HANDLE_INVALID: none); writing one
 * (atomically); removing one only while it holds handle h; the workers
 * of the server not yet gone (files of vanished segments are removed;
 * caller holds the server's serving-worker lock). */
void       hw_serving_worker_path(char *path, size_t len, Oid dboid, int32 model_id, int64 checkpoint_id,
								  bool average, uint64 key_hash);
dsm_handle hw_serving_worker_read_handle(const char *path);
bool       hw_serving_worker_write_handle(const char *path, dsm_handle h);
void       hw_serving_worker_unlink_if(const char *path, dsm_handle h);
int        hw_serving_worker_count_live(void);

/* The key hash both sides compare (serving_worker.c). */
uint64 hw_serving_worker_key_hash(const char *key);

#endif /* HW_SERVING_WORKER_H */
