/*
 * serving_worker.c: a session's side of the serving worker
 * (hw_serving_worker.h): finding the worker of its (model, checkpoint,
 * weights, model state), starting it when there is none, posting a row to
 * its queue and waiting for the answer.
 *
 * Starting is serialised over the server by an advisory lock of a class
 * SQL cannot build (hw_train.h), held while the workers are counted
 * against headwater.max_serving_workers, the worker is registered and
 * started, and its rendezvous file written (serving_worker_rendezvous.c).
 * A start that fails is not retried for the next SW_RETRY_AFTER calls of
 * the session.  A session whose wait ends by ERROR or FATAL gives its slot
 * back.
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "pg/base/hw_pg.h"
#include "pg/base/pg_owner.h"
#include "pg/serve/hw_serving_worker.h"
#include "pg/train/hw_train.h"

/* how long a session waits for a new worker to load its model */
#define SW_START_TIMEOUT_MS 60000
/* worker segments a session keeps mapped (each takes one of the
 * backend's dynamic shared memory slots) */
#define SW_ATTACHED 4
/* calls a session predicts itself after a failed start before it tries again */
#define SW_RETRY_AFTER 256

bool hw_serving_worker_enabled = false;
int  hw_serving_worker_window_ms = 2;
int  hw_serving_worker_idle_s = 60;
int  hw_max_serving_workers = 2;

void
hw_serving_worker_guc_init(void)
{
	DefineCustomBoolVariable("headwater.serving_worker",
							 "Single-row predictions go through one serving worker per model and checkpoint, "
							 "which batches the rows of all sessions.",
							 "Off: every session runs its own forward.  The answers are the same either way.",
							 &hw_serving_worker_enabled, false, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("headwater.serving_worker_window_ms",
							"How long a serving worker waits for more rows before it runs a batch.",
							NULL, &hw_serving_worker_window_ms, 2, 0, 100, PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("headwater.serving_worker_idle_s",
							"Seconds without a request after which a serving worker stops.",
							NULL, &hw_serving_worker_idle_s, 60, 1, 86400, PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("headwater.max_serving_workers",
							"Serving workers the server runs at once (one background worker each).",
							"Beyond it, sessions predict in-process.",
							&hw_max_serving_workers, 2, 0, 1024, PGC_SIGHUP, 0, NULL, NULL, NULL);
}

uint64
hw_serving_worker_key_hash(const char *key)
{
	return hash_bytes_extended((const unsigned char *) key, (int) strlen(key), 0x6877);
}

typedef struct Attached
{
	int32       model_id;
	int64       checkpoint_id;
	bool        average;
	uint64      key_hash;
	dsm_segment *seg;
	HwSwQueue  *q;
} Attached;

static Attached attached[SW_ATTACHED];
static int  calls_before_retry;
/* the slot this session waits on, given back if the session dies waiting */
static HwSwSlot *inflight;
static bool exit_hook_armed;

static void
forget(Attached *a)
{
	if (a->seg != NULL)
		dsm_detach(a->seg);
	memset(a, 0, sizeof(*a));
}

/* Drops the mappings of workers that stopped: their segments go once no
 * session maps them. */
static void
forget_stopped(void)
{
	for (int i = 0; i < SW_ATTACHED; i++)
		if (attached[i].seg != NULL && pg_atomic_read_u32(&attached[i].q->phase) >= HW_SW_STOPPING)
			forget(&attached[i]);
}

static void
path_of(const HwServing *s, char *path, size_t len)
{
	hw_serving_worker_path(path, len, MyDatabaseId, s->model_id, s->checkpoint_id, s->average,
						   hw_serving_worker_key_hash(s->key));
}

/* Maps the worker segment named by s's rendezvous file; NULL when there is
 * none, its segment is gone, or it is not s's. */
static Attached *
attach_existing(HwServing *s)
{
	char        path[MAXPGPATH];
	uint64      key_hash = hw_serving_worker_key_hash(s->key);
	dsm_handle  h;
	dsm_segment *seg;
	HwSwQueue  *q;
	Attached   *slot = NULL;

	path_of(s, path, sizeof(path));
	if ((h = hw_serving_worker_read_handle(path)) == DSM_HANDLE_INVALID || dsm_find_mapping(h) != NULL)
		return NULL;
	if ((seg = dsm_attach(h)) == NULL)
		return NULL;
	q = dsm_segment_address(seg);
	if (q->magic != HW_SW_MAGIC || q->model_id != s->model_id || q->checkpoint_id != s->checkpoint_id ||
		q->average != s->average || q->state_key_hash != key_hash)
	{
		dsm_detach(seg);
		return NULL;
	}
	dsm_pin_mapping(seg);
	for (int i = 0; i < SW_ATTACHED && slot == NULL; i++)
		if (attached[i].seg == NULL)
			slot = &attached[i];
	if (slot == NULL)
	{
		slot = &attached[0];    /* a session serving many models: drop the first */
		forget(slot);
	}
	*slot = (Attached) {.model_id = s->model_id, .checkpoint_id = s->checkpoint_id, .average = s->average,
						.key_hash = key_hash, .seg = seg, .q = q};
	return slot;
}

/* The model's owner, read as the extension owner. */
static Oid
model_owner(int32 model_id)
{
	HwAsOwner   as_owner;
	Oid         argt[1] = {INT4OID};
	Datum       argv[1] = {Int32GetDatum(model_id)};
	Oid         owner = InvalidOid;
	bool        isnull;

	SPI_connect();
	hw_become_owner(&as_owner);
	if (SPI_execute_with_args("SELECT owner::oid FROM headwater.model WHERE model_id = $1", 1, argt, argv,
							  NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		owner = isnull ? InvalidOid : DatumGetObjectId(d);
	}
	hw_restore_user(&as_owner);
	SPI_finish();
	return owner;
}

/* A new worker's segment: the request of its (model, checkpoint, weights,
 * model state), every slot free; NULL when no segment can be had. */
static dsm_segment *
make_segment(HwServing *s, int t, Oid owner)
{
	dsm_segment *seg = dsm_create(sizeof(HwSwQueue), DSM_CREATE_NULL_IF_MAXSEGMENTS);
	HwSwQueue  *q;

	if (seg == NULL)
		return NULL;
	q = dsm_segment_address(seg);
	memset(q, 0, sizeof(*q));
	q->magic = HW_SW_MAGIC;
	q->dboid = MyDatabaseId;
	q->roleoid = owner;
	q->model_id = s->model_id;
	q->checkpoint_id = s->checkpoint_id;
	q->average = s->average;
	q->state_key_hash = hw_serving_worker_key_hash(s->key);
	snprintf(q->task_ref, sizeof(q->task_ref), "%s.%s", s->model_name, s->tasks[t]->name);
	pg_atomic_init_u32(&q->phase, HW_SW_STARTING);
	pg_atomic_init_u64(&q->batches, 0);
	pg_atomic_init_u64(&q->rows, 0);
	q->window_ms = hw_serving_worker_window_ms;
	q->idle_s = hw_serving_worker_idle_s;
	for (int i = 0; i < HW_SW_SLOTS; i++)
		pg_atomic_init_u32(&q->slots[i].state, HW_SW_FREE);
	return seg;
}

/* Starts the worker of s and writes its rendezvous file once it runs;
 * false (LOG) when it cannot.  Caller holds the serving-worker lock. */
static bool
start_worker(HwServing *s, int t)
{
	char        path[MAXPGPATH];
	Oid         owner = model_owner(s->model_id);
	dsm_segment *seg;
	BackgroundWorker w;
	BackgroundWorkerHandle *handle;
	pid_t       pid;
	dsm_handle  h;

	if (!OidIsValid(owner) || (seg = make_segment(s, t, owner)) == NULL)
		return false;
	h = dsm_segment_handle(seg);
	hw_pg_bgworker_init(&w, "hw_serving_worker_main", HW_SW_TYPE, UInt32GetDatum(h));
	snprintf(w.bgw_name, BGW_MAXLEN, "headwater serving %s checkpoint %lld", s->model_name,
			 (long long) s->checkpoint_id);
	/* the worker unpins it as it stops; this session's mapping goes now */
	dsm_pin_segment(seg);
	path_of(s, path, sizeof(path));
	if (!RegisterDynamicBackgroundWorker(&w, &handle) ||
		WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED ||
		!hw_serving_worker_write_handle(path, h))
	{
		ereport(LOG, (errmsg("headwater: could not start a serving worker for model \"%s\"; "
							 "sessions predict in-process", s->model_name)));
		/* a worker that did start stops at once: nobody can find it */
		pg_atomic_write_u32(&((HwSwQueue *) dsm_segment_address(seg))->phase, HW_SW_STOPPING);
		dsm_detach(seg);
		return false;
	}
	dsm_detach(seg);
	return true;
}

/* Starts s's worker unless the server runs its maximum, under the
 * server's serving-worker lock; the worker attached, or NULL. */
static Attached *
start_or_find(HwServing *s, int t)
{
	LOCKTAG     tag;
	Attached   *a;

	HW_SET_LOCKTAG(tag, InvalidOid, HW_SERVING_WORKER_LOCK_CLASS, 0);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	a = attach_existing(s);
	if (a == NULL && hw_serving_worker_count_live() < hw_max_serving_workers && start_worker(s, t))
		a = attach_existing(s);
	(void) LockRelease(&tag, ExclusiveLock, false);
	if (a == NULL)
		calls_before_retry = SW_RETRY_AFTER;
	return a;
}

/* The worker of s, ready, or NULL (this session then predicts itself). */
static HwSwQueue *
find_worker(HwServing *s, int t)
{
	uint64      key_hash = hw_serving_worker_key_hash(s->key);
	Attached   *a = NULL;

	forget_stopped();
	for (int i = 0; i < SW_ATTACHED; i++)
		if (attached[i].seg != NULL && attached[i].model_id == s->model_id &&
			attached[i].checkpoint_id == s->checkpoint_id && attached[i].average == s->average &&
			attached[i].key_hash == key_hash)
			a = &attached[i];
	if (a == NULL && (a = attach_existing(s)) == NULL)
	{
		/* a standby cannot run one; a failed start waits a while */
		if (RecoveryInProgress())
			return NULL;
		if (calls_before_retry > 0)
		{
			calls_before_retry--;
			return NULL;
		}
		if ((a = start_or_find(s, t)) == NULL)
			return NULL;
	}
	/* a worker still loading its model: wait for it, a bounded time, while it lives */
	for (int waited = 0; pg_atomic_read_u32(&a->q->phase) == HW_SW_STARTING; waited += 10)
	{
		if (waited >= SW_START_TIMEOUT_MS || (a->q->worker_pid > 0 && kill(a->q->worker_pid, 0) != 0))
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	pg_read_barrier();          /* worker_procno was written before READY */
	if (pg_atomic_read_u32(&a->q->phase) == HW_SW_READY)
		return a->q;
	/* it failed to start (its owner cannot connect, the model cannot be
	 * loaded): not again at every call */
	calls_before_retry = SW_RETRY_AFTER;
	return NULL;
}

/* Takes the slot back from the worker: a posted request is withdrawn, one
 * in the worker's batch is left for the worker to free. */
static void
abandon(HwSwSlot *slot)
{
	uint32      st = HW_SW_POSTED;

	inflight = NULL;
	if (pg_atomic_compare_exchange_u32(&slot->state, &st, HW_SW_FREE))
		return;
	st = HW_SW_RUNNING;
	if (pg_atomic_compare_exchange_u32(&slot->state, &st, HW_SW_ABANDONED))
		return;
	pg_atomic_write_u32(&slot->state, HW_SW_FREE);     /* DONE or FAILED: ours to free */
}

/* A session that exits (FATAL) while it waits gives its slot back. */
static void
abandon_at_exit(int code, Datum arg)
{
	if (inflight != NULL)
		abandon(inflight);
}

/* A cancel (an ERROR here) gives the slot back; an interrupt that does not
 * end the call (a barrier, a catch-up) leaves it waiting. */
static void
check_interrupts(HwSwSlot *slot)
{
	PG_TRY();
	{
		CHECK_FOR_INTERRUPTS();
	}
	PG_CATCH();
	{
		abandon(slot);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* Waits for the slot's answer: true with *out, false when the worker
 * failed it, stopped or died (the slot is given back either way). */
static bool
wait_answer(HwSwQueue *q, HwSwSlot *slot, HwPrediction *out)
{
	for (int polls = 0;; polls++)
	{
		uint32      st = pg_atomic_read_u32(&slot->state);

		if (st == HW_SW_DONE || st == HW_SW_FAILED)
		{
			pg_read_barrier();
			if (st == HW_SW_DONE)
				*out = slot->result;
			/* the result is read before the slot can be reused */
			pg_memory_barrier();
			inflight = NULL;
			pg_atomic_write_u32(&slot->state, HW_SW_FREE);
			return st == HW_SW_DONE;
		}
		/* a worker that stopped or died answers no more: withdraw */
		if (polls % 10 == 9 && (pg_atomic_read_u32(&q->phase) == HW_SW_GONE ||
								(q->worker_pid > 0 && kill(q->worker_pid, 0) != 0)))
		{
			abandon(slot);
			return false;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		check_interrupts(slot);
	}
}

/* A free slot of q, taken (FILLING), or NULL when the queue is full. */
static HwSwSlot *
claim_slot(HwSwQueue *q)
{
	for (int i = MyProcPid % HW_SW_SLOTS, k = 0; k < HW_SW_SLOTS; k++, i = (i + 1) % HW_SW_SLOTS)
	{
		uint32      st = HW_SW_FREE;

		if (pg_atomic_compare_exchange_u32(&q->slots[i].state, &st, HW_SW_FILLING))
			return &q->slots[i];
	}
	return NULL;
}

bool
hw_serving_worker_predict(HwServing *s, int t, uint32 row, int64 obs, HwPrediction *out)
{
	HwSwQueue  *q;
	HwSwSlot   *slot;

	if (!hw_serving_worker_enabled || (q = find_worker(s, t)) == NULL || (slot = claim_slot(q)) == NULL)
		return false;
	if (!exit_hook_armed)
	{
		before_shmem_exit(abandon_at_exit, (Datum) 0);
		exit_hook_armed = true;
	}
	slot->caller_procno = MyProc->pgprocno;
	slot->task = t;
	slot->row = row;
	slot->obs = obs;
	slot->precision = hw_serving_precision_setting();
	inflight = slot;
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, HW_SW_POSTED);
	/* a worker that began stopping after find_worker may never see it */
	pg_memory_barrier();
	if (pg_atomic_read_u32(&q->phase) != HW_SW_READY)
	{
		abandon(slot);
		return false;
	}
	SetLatch(&ProcGlobal->allProcs[q->worker_procno].procLatch);
	return wait_answer(q, slot, out);
}
