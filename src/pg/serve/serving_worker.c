/*
 * serving_worker.c: a session's side of the serving worker
 * (hw_serving_worker.h): finding the worker of a (model, checkpoint,
 * weights), starting it when there is none, posting a row to its queue and
 * waiting for the answer.
 *
 * Rendezvous without shared_preload_libraries: the session that starts a
 * worker makes its segment, pins it (it outlives that session), and writes
 * the segment's handle to $PGDATA/pg_headwater/serving_worker/<db>_<model>_
 * <checkpoint>_<weights>; other sessions read the handle there.  Starting is
 * serialised per model by an advisory lock of a class SQL cannot build
 * (hw_train.h).  The worker unpins the segment and removes the file when it
 * stops; a file whose segment is gone (a crash) is removed by the next
 * session that finds it.
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "pg/base/pg_owner.h"
#include "pg/serve/hw_serving_worker.h"
#include "pg/train/hw_train.h"

#define SW_DIR "pg_headwater/serving_worker"
#define SW_TYPE "headwater serving"
/* how long a session waits for a new worker to load its model */
#define SW_START_TIMEOUT_MS 60000
/* segments this session keeps mapped */
#define SW_ATTACHED 8

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
	dsm_segment *seg;
	HwSwQueue  *q;
} Attached;

static Attached attached[SW_ATTACHED];

static void
rendezvous_path(char *path, size_t len, int32 model_id, int64 checkpoint_id, bool average)
{
	snprintf(path, len, SW_DIR "/%u_%d_%lld_%d", MyDatabaseId, model_id, (long long) checkpoint_id,
			 average ? 1 : 0);
}

dsm_handle
hw_serving_worker_read_handle(const char *path)
{
	FILE       *f = AllocateFile(path, "r");
	unsigned    h = 0;

	if (f == NULL)
		return DSM_HANDLE_INVALID;
	if (fscanf(f, "%u", &h) != 1)
		h = DSM_HANDLE_INVALID;
	FreeFile(f);
	return (dsm_handle) h;
}

static bool
write_rendezvous(const char *path, dsm_handle h)
{
	char        tmp[MAXPGPATH];
	FILE       *f;

	(void) MakePGDirectory("pg_headwater");
	(void) MakePGDirectory(SW_DIR);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, MyProcPid);
	if ((f = AllocateFile(tmp, "w")) == NULL)
		return false;
	fprintf(f, "%u\n", (unsigned) h);
	if (FreeFile(f) != 0 || rename(tmp, path) != 0)
	{
		(void) unlink(tmp);
		return false;
	}
	return true;
}

static void
forget(Attached *a)
{
	if (a->seg != NULL)
		dsm_detach(a->seg);
	memset(a, 0, sizeof(*a));
}

/* Maps the worker segment of the rendezvous file; NULL when there is none
 * or it is not s's (another model state: the worker of a former one). */
static Attached *
attach_existing(HwServing *s)
{
	char        path[MAXPGPATH];
	dsm_handle  h;
	dsm_segment *seg;
	HwSwQueue  *q;
	Attached   *slot = NULL;

	rendezvous_path(path, sizeof(path), s->model_id, s->checkpoint_id, s->average);
	if ((h = hw_serving_worker_read_handle(path)) == DSM_HANDLE_INVALID)
		return NULL;
	/* mapped already, yet not found by find_worker: not for this model state */
	if (dsm_find_mapping(h) != NULL)
		return NULL;
	if ((seg = dsm_attach(h)) == NULL)
	{
		(void) unlink(path);    /* its worker is gone without cleaning up (a crash) */
		return NULL;
	}
	q = dsm_segment_address(seg);
	if (q->magic != HW_SW_MAGIC || q->model_id != s->model_id || q->checkpoint_id != s->checkpoint_id ||
		q->average != s->average || q->state_key_hash != hw_serving_worker_key_hash(s->key))
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
						.seg = seg, .q = q};
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

/* Makes the segment, writes the rendezvous file and starts the worker;
 * false (LOG) when it cannot. */
static bool
start_worker(HwServing *s, int t)
{
	char        path[MAXPGPATH];
	dsm_segment *seg;
	HwSwQueue  *q;
	BackgroundWorker w;
	BackgroundWorkerHandle *handle;
	Oid         owner = model_owner(s->model_id);

	if (!OidIsValid(owner))
		return false;
	seg = dsm_create(sizeof(HwSwQueue), 0);
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

	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(w.bgw_library_name, BGW_MAXLEN, "headwater");
	snprintf(w.bgw_function_name, BGW_MAXLEN, "hw_serving_worker_main");
	snprintf(w.bgw_name, BGW_MAXLEN, "headwater serving %s checkpoint %lld", s->model_name,
			 (long long) s->checkpoint_id);
	snprintf(w.bgw_type, BGW_MAXLEN, SW_TYPE);
	w.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	/* the worker holds its own pin from here; this session's mapping goes */
	dsm_pin_segment(seg);
	rendezvous_path(path, sizeof(path), s->model_id, s->checkpoint_id, s->average);
	if (!write_rendezvous(path, dsm_segment_handle(seg)) || !RegisterDynamicBackgroundWorker(&w, &handle))
	{
		ereport(LOG, (errmsg("headwater: could not start a serving worker for model \"%s\"; "
							 "sessions predict in-process", s->model_name)));
		(void) unlink(path);
		dsm_unpin_segment(dsm_segment_handle(seg));
		dsm_detach(seg);
		return false;
	}
	dsm_detach(seg);
	return true;
}

/* The attached worker of s, started when there is none (under the model's
 * launch lock); NULL when none serves now. */
static HwSwQueue *
find_worker(HwServing *s, int t)
{
	Attached   *a = NULL;
	LOCKTAG     tag;
	int         running, of_role;

	uint64      key_hash = hw_serving_worker_key_hash(s->key);

	for (int i = 0; i < SW_ATTACHED; i++)
		if (attached[i].seg != NULL && attached[i].model_id == s->model_id &&
			attached[i].checkpoint_id == s->checkpoint_id && attached[i].average == s->average &&
			attached[i].q->state_key_hash == key_hash)
			a = &attached[i];
	if (a != NULL && pg_atomic_read_u32(&a->q->phase) >= HW_SW_STOPPING)
		forget(a), a = NULL;
	if (a == NULL && (a = attach_existing(s)) == NULL)
	{
		HW_SET_LOCKTAG(tag, MyDatabaseId, HW_SERVING_WORKER_LOCK_CLASS, s->model_id);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		a = attach_existing(s);
		hw_count_background_workers(SW_TYPE, InvalidOid, &running, &of_role);
		if (a == NULL && running < hw_max_serving_workers && start_worker(s, t))
			a = attach_existing(s);
		(void) LockRelease(&tag, ExclusiveLock, false);
	}
	if (a == NULL)
		return NULL;
	/* a worker still loading its model: wait for it, a bounded time */
	for (int waited = 0; pg_atomic_read_u32(&a->q->phase) == HW_SW_STARTING; waited += 10)
	{
		if (waited >= SW_START_TIMEOUT_MS)
			return NULL;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if (pg_atomic_read_u32(&a->q->phase) != HW_SW_READY)
	{
		forget(a);
		return NULL;
	}
	return a->q;
}

static void
copy_result(const HwSwResult *r, HwPrediction *out)
{
	memset(out, 0, sizeof(*out));
	out->is_null = r->is_null;
	out->p_null = r->p_null;
	out->value = r->value;
	out->unrounded = r->unrounded;
	out->label = r->label;
	out->K = r->K;
	out->ord_levels = r->ord_levels;
	memcpy(out->ord_p, r->ord_p, sizeof(out->ord_p));
}

/* Takes the slot back from the worker after an interrupt: a posted request
 * is withdrawn, one in the worker's batch is left for the worker to free. */
static void
abandon(HwSwSlot *slot)
{
	uint32      st = HW_SW_POSTED;

	if (pg_atomic_compare_exchange_u32(&slot->state, &st, HW_SW_FREE))
		return;
	st = HW_SW_RUNNING;
	if (pg_atomic_compare_exchange_u32(&slot->state, &st, HW_SW_ABANDONED))
		return;
	pg_atomic_write_u32(&slot->state, HW_SW_FREE);     /* DONE or FAILED: ours to free */
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
 * failed it, stopped or died (the slot is freed either way). */
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
				copy_result(&slot->result, out);
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

bool
hw_serving_worker_predict(HwServing *s, int t, uint32 row, int64 obs, HwPrediction *out)
{
	HwSwQueue  *q;
	HwSwSlot   *slot = NULL;

	if (!hw_serving_worker_enabled || (q = find_worker(s, t)) == NULL)
		return false;
	for (int i = MyProcPid % HW_SW_SLOTS, k = 0; k < HW_SW_SLOTS && slot == NULL; k++, i = (i + 1) % HW_SW_SLOTS)
	{
		uint32      st = HW_SW_FREE;

		if (pg_atomic_compare_exchange_u32(&q->slots[i].state, &st, HW_SW_FILLING))
			slot = &q->slots[i];
	}
	if (slot == NULL)
		return false;           /* the queue is full: this one runs here */
	slot->caller_procno = MyProc->pgprocno;
	slot->task = t;
	slot->row = row;
	slot->obs = obs;
	slot->precision = hw_serving_precision_setting();
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, HW_SW_POSTED);
	/* a worker that began stopping after find_worker may never see it */
	if (pg_atomic_read_u32(&q->phase) != HW_SW_READY)
	{
		abandon(slot);
		return false;
	}
	SetLatch(&ProcGlobal->allProcs[q->worker_procno].procLatch);
	return wait_answer(q, slot, out);
}
