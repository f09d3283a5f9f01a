/*
 * serving_worker_main.c: the serving worker (hw_serving_worker.h).  It
 * loads its (model, checkpoint, weights) once, as the model's owner (and
 * onto a GPU when headwater.serving_device gives one), then loops: wait for posted rows, wait up to window_ms for more, predict them
 * grouped by task in batches of the model's batch size (a batch predicts
 * each row as alone), answer each slot and wake its session.  It stops
 * after idle_s without a request, or when told to (SIGTERM), and removes
 * its rendezvous file and its segment's pin on the way out.
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "pg/serve/hw_serving_worker.h"
#include "pg/serve/hw_serving_device.h"
#include "core/sampler.h"

PGDLLEXPORT void hw_serving_worker_main(Datum main_arg);

typedef struct Worker
{
	HwSwQueue  *q;
	dsm_handle  handle;
	HwServing  *s;
	MemoryContext batch_cxt;
	/* the batch being run: slot numbers and their requests, copied when
	 * taken (an answered slot is its session's again at once) */
	int         taken[HW_SW_SLOTS];
	int32       task[HW_SW_SLOTS];
	uint32      row[HW_SW_SLOTS];
	int64       obs[HW_SW_SLOTS];
	int32       precision[HW_SW_SLOTS];
	int         ntaken;
	/* the device of every forward, chosen at the start by the server's
	 * headwater.serving_device: a GPU model for the worker's life, or the
	 * entry's CPU model */
	HwBulkState device;
} Worker;

/* Takes every posted slot (POSTED -> RUNNING); how many it holds now. */
static int
take_posted(Worker *w)
{
	for (int i = 0; i < HW_SW_SLOTS; i++)
	{
		uint32      st = HW_SW_POSTED;

		if (pg_atomic_compare_exchange_u32(&w->q->slots[i].state, &st, HW_SW_RUNNING))
		{
			pg_read_barrier();
			w->taken[w->ntaken] = i;
			w->task[w->ntaken] = w->q->slots[i].task;
			w->row[w->ntaken] = w->q->slots[i].row;
			w->obs[w->ntaken] = w->q->slots[i].obs;
			w->precision[w->ntaken] = w->q->slots[i].precision;
			w->ntaken++;
		}
	}
	return w->ntaken;
}

/* Answers slot i (DONE or FAILED) and wakes its session; a slot its
 * session abandoned is freed instead. */
static void
answer(Worker *w, int i, const HwPrediction *p)
{
	HwSwSlot   *slot = &w->q->slots[i];
	uint32      st = HW_SW_RUNNING;

	if (p != NULL)
	{
		slot->result = *p;
		slot->result.probs = NULL;      /* this process's memory: not sent */
	}
	pg_write_barrier();
	if (!pg_atomic_compare_exchange_u32(&slot->state, &st, p != NULL ? HW_SW_DONE : HW_SW_FAILED))
	{
		pg_atomic_write_u32(&slot->state, HW_SW_FREE);     /* ABANDONED */
		return;
	}
	SetLatch(&ProcGlobal->allProcs[slot->caller_procno].procLatch);
}

/* Predicts the batch's requests ks[0..n) (all of task t, in one
 * precision); a failed forward fails them (their sessions predict
 * themselves). */
static void
run_task(Worker *w, int t, const int *ks, int n)
{
	uint32     *rows = palloc(sizeof(uint32) * n);
	int64_t    *obs = palloc(sizeof(int64_t) * n);
	HwPrediction *out = palloc0(sizeof(HwPrediction) * n);
	volatile bool ok = true;

	for (int k = 0; k < n; k++)
	{
		rows[k] = w->row[ks[k]];
		obs[k] = w->obs[ks[k]];
	}
	PG_TRY();
	{
		/* every CPU of the team (hw_predict_rows narrows after a long
		 * request), the sessions' precision: their own answer; on a GPU
		 * one forward of all the rows, in the GPU's arithmetic */
		hw_serving_set_wide(w->s, true);
		hw_serving_set_precision_setting(w->precision[ks[0]]);
		hw_predict_rows_bulk(w->s, t, rows, obs, n, out, &w->device);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(w->batch_cxt);
		EmitErrorReport();
		FlushErrorState();
		ok = false;
		/* a failed GPU forward may have left the device unusable: the
		 * worker's later forwards run on the CPU */
		if (w->device.dev != NULL)
		{
			ereport(LOG, (errmsg("headwater serving worker for %s continues on the CPU", w->q->task_ref)));
			hw_predict_bulk_end(&w->device);
		}
	}
	PG_END_TRY();
	/* counted before the answers: a session that reads them sees its row */
	pg_atomic_fetch_add_u64(&w->q->batches, 1);
	pg_atomic_fetch_add_u64(&w->q->rows, n);
	for (int k = 0; k < n; k++)
		answer(w, w->taken[ks[k]], ok ? &out[k] : NULL);
}

/* Runs the taken slots, grouped by task and precision. */
static void
run_batch(Worker *w)
{
	MemoryContext old = MemoryContextSwitchTo(w->batch_cxt);
	int        *ks = palloc(sizeof(int) * w->ntaken);

	for (int t = 0; t < w->s->ntasks; t++)
		for (int prec = HW_PRECISION_AUTO; prec <= HW_PRECISION_BF16; prec++)
		{
			int         n = 0;

			for (int k = 0; k < w->ntaken; k++)
				if (w->task[k] == t && w->precision[k] == prec)
					ks[n++] = k;
			if (n > 0)
				run_task(w, t, ks, n);
		}
	/* a task index outside the model: nobody's row to predict */
	for (int k = 0; k < w->ntaken; k++)
		if (w->task[k] < 0 || w->task[k] >= w->s->ntasks ||
			w->precision[k] < HW_PRECISION_AUTO || w->precision[k] > HW_PRECISION_BF16)
			answer(w, w->taken[k], NULL);
	w->ntaken = 0;
	MemoryContextSwitchTo(old);
	MemoryContextReset(w->batch_cxt);
}

/* Loads the model as its owner, in a transaction; false with q->error. */
static bool
load_model(Worker *w)
{
	HwSwQueue  *q = w->q;
	volatile bool ok = true;
	int         t;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	PG_TRY();
	{
		/* the reference lives in TopMemoryContext: for the worker's life */
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		w->s = hw_serving_get(q->task_ref, q->checkpoint_id, q->average ? HW_WEIGHTS_AVERAGE : HW_WEIGHTS_LAST, &t);
		MemoryContextSwitchTo(old);
		if (w->s->checkpoint_id != q->checkpoint_id || w->s->average != q->average ||
			hw_serving_worker_key_hash(w->s->key) != q->state_key_hash)
			ereport(ERROR, (errmsg("the model changed while its serving worker started")));
		w->device.cxt = TopMemoryContext;
		w->device.dev = hw_serving_device_open(w->s, q->task_ref, TopMemoryContext);
		w->device.decided = true;
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(TopMemoryContext);
		e = CopyErrorData();
		FlushErrorState();
		strlcpy(q->error, e->message, sizeof(q->error));
		ok = false;
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	if (ok)
	{
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	return ok;
}

/* How the worker leaves, however it leaves (idle, told to, a FATAL while
 * connecting, an ERROR): it takes no more requests, fails the posted ones
 * (their sessions predict themselves), removes its rendezvous file if the
 * file still names it, and unpins its segment, which goes once no session
 * maps it.  A before_shmem_exit callback, run once. */
static Worker *exiting;

static void
worker_exit(int code, Datum arg)
{
	Worker     *w = exiting;
	char        path[MAXPGPATH];

	if (w == NULL)
		return;
	exiting = NULL;
	hw_predict_bulk_end(&w->device);        /* the GPU model, if any */
	pg_atomic_write_u32(&w->q->phase, HW_SW_STOPPING);
	pg_memory_barrier();
	for (int i = 0; i < HW_SW_SLOTS; i++)
	{
		HwSwSlot   *slot = &w->q->slots[i];
		uint32      st = pg_atomic_read_u32(&slot->state);

		if (st == HW_SW_ABANDONED)
			pg_atomic_write_u32(&slot->state, HW_SW_FREE);
		else if ((st == HW_SW_POSTED || st == HW_SW_RUNNING) &&
				 pg_atomic_compare_exchange_u32(&slot->state, &st, HW_SW_FAILED))
			SetLatch(&ProcGlobal->allProcs[slot->caller_procno].procLatch);
	}
	hw_serving_worker_path(path, sizeof(path), w->q->dboid, w->q->model_id, w->q->checkpoint_id, w->q->average,
						   w->q->state_key_hash);
	hw_serving_worker_unlink_if(path, w->handle);
	pg_atomic_write_u32(&w->q->phase, HW_SW_GONE);
	dsm_unpin_segment(w->handle);
}

void
hw_serving_worker_main(Datum main_arg)
{
	static Worker w;
	dsm_segment *seg;
	int         idle_ticks = 0;
	uint32      starting = HW_SW_STARTING;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	w.handle = DatumGetUInt32(main_arg);
	if ((seg = dsm_attach(w.handle)) == NULL)
		proc_exit(0);
	w.q = dsm_segment_address(seg);
	w.q->worker_pid = MyProcPid;
	exiting = &w;
	before_shmem_exit(worker_exit, (Datum) 0);
	BackgroundWorkerInitializeConnectionByOid(w.q->dboid, w.q->roleoid, 0);
	w.q->worker_procno = MyProc->pgprocno;
	if (!load_model(&w))
	{
		ereport(LOG, (errmsg("headwater serving worker for %s stops: %s", w.q->task_ref, w.q->error)));
		proc_exit(0);
	}
	w.batch_cxt = AllocSetContextCreate(TopMemoryContext, "headwater serving batch", ALLOCSET_DEFAULT_SIZES);
	pg_write_barrier();
	/* the session that started it may have given up on it meanwhile */
	if (!pg_atomic_compare_exchange_u32(&w.q->phase, &starting, HW_SW_READY))
		proc_exit(0);
	/* idle time counted in wake-ups by the 1 s timeout with nothing
	 * posted: a wall clock that jumps cannot stop a busy worker */
	while (!ShutdownRequestPending && idle_ticks < w.q->idle_s)
	{
		int         ev = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
								   PG_WAIT_EXTENSION);

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (take_posted(&w) == 0)
		{
			if (ev & WL_TIMEOUT)
				idle_ticks++;
			continue;
		}
		idle_ticks = 0;
		/* a short window for the rows of other sessions, unless the batch is full */
		if (w.q->window_ms > 0 && w.ntaken < hw_sampler_config(w.s->sampler)->batch_size)
		{
			pg_usleep(w.q->window_ms * 1000L);
			(void) take_posted(&w);
		}
		run_batch(&w);
	}
	ereport(LOG, (errmsg("headwater serving worker for %s, checkpoint %lld, stops: %s after %llu rows in %llu batches",
						 w.q->task_ref, (long long) w.q->checkpoint_id,
						 ShutdownRequestPending ? "told to" : "idle", (unsigned long long) pg_atomic_read_u64(&w.q->rows),
						 (unsigned long long) pg_atomic_read_u64(&w.q->batches))));
	proc_exit(0);
}
