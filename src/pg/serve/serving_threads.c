/*
 * serving_threads.c: how many threads a request of one batch (a single row,
 * a short batch) runs its forward on.
 *
 * One by default, so that sessions serving at once each keep a core (a
 * team whose threads wait for a busy core runs many times slower).  But a
 * lone session on an idle server would leave its other cores unused while
 * its caller waits.  So a request of one batch takes the multi-batch
 * request's threads (headwater.serving_threads, capped by the CPUs left
 * idle) when the server is idle now and no other session is serving:
 *
 *  - idle now: the kernel's count of runnable tasks at this moment
 *    (/proc/loadavg) less this process's own (/proc/self/task: this thread
 *    and OpenMP workers still spinning after its previous forward) leaves
 *    at least two CPUs.  This sees every other process: training, bulk
 *    requests, other queries.
 *  - no other session serving: the backends' forward slots (below) show no
 *    other backend inside a forward, and none that left one within the last
 *    RECENT_US.  The runnable count alone would miss the session that is
 *    between two calls (parsing, sending its answer): under a steady load of
 *    two clients a call saw an idle CPU just before the other client's next
 *    forward began, and the two teams and a single thread shared two cores.
 *    A session that served a moment ago is about to serve again.
 *
 * Every forward of a serving request says so in its backend's slot: single
 * rows, bulk requests, rt_evaluate and the serving worker's batches.
 *
 * The forward slots: a file under $PGDATA/pg_headwater, mapped shared by
 * every backend (no shared_preload_libraries needed), one 64-byte slot per
 * PGPROC (MyProc->pgprocno), each written by its own backend only: its pid,
 * the threads of the forward it is running (0 when none) and when its last
 * forward ended.  A slot counts only while its pid is the live PGPROC's, so
 * a backend that died inside a forward is never counted.  The file's name
 * carries the slot count (max_connections can change between restarts);
 * files of another count are removed when a backend maps its own.
 * Where it cannot be made or mapped, requests of one batch keep one thread.
 *
 * The predictions are the same bits on any number of threads
 * (test_model_infer.c), so only the latency depends on the choice.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/fd.h"
#include "storage/proc.h"

#include "pg/serve/hw_serving.h"

/* another session's forward that ended this recently counts as serving */
#define RECENT_US 20000

typedef struct ForwardSlot
{
	pg_atomic_uint32 pid;		/* the backend that last wrote the slot */
	pg_atomic_uint32 threads;	/* threads of its forward now, 0 = none */
	pg_atomic_uint64 ended_us;	/* CLOCK_MONOTONIC µs of its last forward's end */
	char		pad[48];
} ForwardSlot;

StaticAssertDecl(sizeof(ForwardSlot) == 64, "one slot per cache line");

static ForwardSlot *slots;		/* NULL: not mapped (yet, or for good) */
static uint32 n_slots;
static bool map_failed;

static uint64
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64) ts.tv_sec * 1000000 + (uint64) ts.tv_nsec / 1000;
}

/* removes the slot files of another slot count: left by a server that ran
 * with another max_connections (every backend of this one maps `keep`;
 * a mapping would survive the unlink anyway) */
static void
remove_other_slot_files(const char *keep)
{
	DIR		   *dir = AllocateDir("pg_headwater");
	struct dirent *de;

	if (dir == NULL)
		return;
	while ((de = ReadDirExtended(dir, "pg_headwater", LOG)) != NULL)
		if (strncmp(de->d_name, "forward_slots_", 14) == 0 && strcmp(de->d_name, keep) != 0)
		{
			char		path[MAXPGPATH];

			snprintf(path, sizeof(path), "pg_headwater/%s", de->d_name);
			(void) unlink(path);
		}
	FreeDir(dir);
}

/* maps the slots file once per backend; false where it cannot */
static bool
map_slots(void)
{
	char		path[MAXPGPATH];
	uint32		n;
	size_t		bytes;
	int			fd;
	void	   *p;

	if (slots != NULL)
		return true;
	if (map_failed || MyProc == NULL || ProcGlobal == NULL)
		return false;
	map_failed = true;			/* until it succeeds */
	n = ProcGlobal->allProcCount;
	bytes = (size_t) n * sizeof(ForwardSlot);
	if (MakePGDirectory("pg_headwater") != 0 && errno != EEXIST)
		return false;
	snprintf(path, sizeof(path), "pg_headwater/forward_slots_%u", n);
	/* every backend opens the same file; growing it from 0 to `bytes`
	 * zero-fills it, and a second ftruncate to the same length changes
	 * nothing, so creators racing each other are harmless */
	if ((fd = OpenTransientFile(path, O_RDWR | O_CREAT | PG_BINARY)) < 0)
		return false;
	if (ftruncate(fd, (off_t) bytes) != 0)
	{
		CloseTransientFile(fd);
		return false;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CloseTransientFile(fd);
	if (p == MAP_FAILED)
		return false;
	slots = p;
	n_slots = n;
	map_failed = false;
	remove_other_slot_files(strrchr(path, '/') + 1);
	return true;
}

/* whether another live backend is in a forward or left one within
 * RECENT_US; true (busy) where the slots cannot be read */
static bool
other_session_serving(void)
{
	uint64		now = now_us();
	int			me = MyProc->pgprocno;

	if (!map_slots())
		return true;
	for (uint32 i = 0; i < n_slots; i++)
	{
		uint32		pid = pg_atomic_read_u32(&slots[i].pid);
		uint64		ended;

		if ((int) i == me || pid == 0 || pid != (uint32) ProcGlobal->allProcs[i].pid)
			continue;
		if (pg_atomic_read_u32(&slots[i].threads) > 0)
			return true;
		ended = pg_atomic_read_u64(&slots[i].ended_us);
		if (ended + RECENT_US > now)
			return true;
	}
	return false;
}

void
hw_serving_forward_begin(int threads)
{
	ForwardSlot *mine;

	if (!map_slots())
		return;
	if (threads <= 0)			/* every CPU */
		threads = (int) Max(sysconf(_SC_NPROCESSORS_ONLN), 1);
	mine = &slots[MyProc->pgprocno];
	pg_atomic_write_u32(&mine->pid, (uint32) MyProcPid);
	pg_atomic_write_u32(&mine->threads, (uint32) threads);
}

void
hw_serving_forward_end(void)
{
	ForwardSlot *mine;

	if (slots == NULL)
		return;
	mine = &slots[MyProc->pgprocno];
	pg_atomic_write_u64(&mine->ended_us, now_us());
	pg_atomic_write_u32(&mine->threads, 0);
}

/* this process's threads that are runnable now (in state R: this one, and
 * OpenMP workers still spinning after the previous forward, which the next
 * forward takes back); 1 where it cannot be read */
static int
own_runnable_threads(void)
{
	DIR		   *d = opendir("/proc/self/task");
	struct dirent *e;
	int			n = 0;

	if (d == NULL)
		return 1;
	while ((e = readdir(d)) != NULL)
	{
		char		path[64],
					buf[256],
				   *p;
		int			fd;
		ssize_t		len;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* "tid (comm) S ...": the state follows the last ')' */
		if ((p = strrchr(buf, ')')) != NULL && p[1] == ' ' && p[2] == 'R')
			n++;
	}
	closedir(d);
	return n > 0 ? n : 1;
}

/* the kernel's runnable tasks now (the "4" of "0.50 0.40 0.30 4/120 999"),
 * this backend's included; -1 where it cannot be read */
static int
runnable_tasks(void)
{
	char		buf[128];
	int			fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	ssize_t		n;
	char	   *p = buf;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (int field = 0; field < 3 && p; field++)
		if ((p = strchr(p, ' ')) != NULL)
			p++;
	return p && *p >= '0' && *p <= '9' ? atoi(p) : -1;
}

int
hw_serving_single_threads(void)
{
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int			wide = hw_serving_wide_threads();	/* 0: every CPU */
	int			run,
				idle;

	if (ncpu < 2 || wide == 1 || other_session_serving() || (run = runnable_tasks()) < 1)
		return 1;
	/* the CPUs that other processes' runnable tasks leave */
	idle = (int) ncpu - Max(run - own_runnable_threads(), 0);
	if (wide > 0 && idle > wide)
		idle = wide;
	return idle >= 2 ? idle : 1;
}
