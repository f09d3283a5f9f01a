/*
 * serving_worker_rendezvous.c: how sessions find serving workers without
 * shared_preload_libraries (hw_serving_worker.h).  A worker's segment
 * handle lies in $PGDATA/pg_headwater/serving_worker/<db>_<model>_
 * <checkpoint>_<weights>_<model state hash>; the file is written by the
 * session that starts the worker, under the server's serving-worker lock,
 * once the worker runs, and removed by the worker as it stops (only while
 * it still holds that worker's handle).  A file whose segment is gone (the
 * server restarted after a crash) is removed under the lock.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"

#include "pg/serve/hw_serving_worker.h"

void
hw_serving_worker_path(char *path, size_t len, Oid dboid, int32 model_id, int64 checkpoint_id, bool average,
					   uint64 key_hash)
{
	snprintf(path, len, HW_SW_DIR "/%u_%d_%lld_%d_%016llx", dboid, model_id, (long long) checkpoint_id,
			 average ? 1 : 0, (unsigned long long) key_hash);
}

/* Plain read(2): the worker's exit path reads it too, where fd.c's
 * bookkeeping may already be gone. */
dsm_handle
hw_serving_worker_read_handle(const char *path)
{
	char        buf[32];
	int         fd = open(path, O_RDONLY | PG_BINARY);
	ssize_t     n;
	unsigned long h;
	char       *end;

	if (fd < 0)
		return DSM_HANDLE_INVALID;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return DSM_HANDLE_INVALID;
	buf[n] = '\0';
	h = strtoul(buf, &end, 10);
	return end == buf ? DSM_HANDLE_INVALID : (dsm_handle) h;
}

bool
hw_serving_worker_write_handle(const char *path, dsm_handle h)
{
	char        tmp[MAXPGPATH];
	FILE       *f;

	(void) MakePGDirectory("pg_headwater");
	(void) MakePGDirectory(HW_SW_DIR);
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

void
hw_serving_worker_unlink_if(const char *path, dsm_handle h)
{
	if (hw_serving_worker_read_handle(path) == h)
		(void) unlink(path);
}

/* The phase of the worker whose handle is h: HW_SW_GONE when its segment
 * is gone or is not a worker's. */
static uint32
phase_of(dsm_handle h)
{
	dsm_segment *mapped = dsm_find_mapping(h);
	dsm_segment *seg = mapped != NULL ? mapped : dsm_attach(h);
	uint32      phase = HW_SW_GONE;

	if (seg == NULL)
		return phase;
	if (((HwSwQueue *) dsm_segment_address(seg))->magic == HW_SW_MAGIC)
		phase = pg_atomic_read_u32(&((HwSwQueue *) dsm_segment_address(seg))->phase);
	if (mapped == NULL)
		dsm_detach(seg);
	return phase;
}

int
hw_serving_worker_count_live(void)
{
	DIR        *dir = AllocateDir(HW_SW_DIR);
	struct dirent *de;
	char        path[MAXPGPATH];
	int         live = 0;

	if (dir == NULL)
		return 0;
	while ((de = ReadDirExtended(dir, HW_SW_DIR, LOG)) != NULL)
	{
		dsm_handle  h;

		if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp.") != NULL)
			continue;
		snprintf(path, sizeof(path), HW_SW_DIR "/%s", de->d_name);
		if ((h = hw_serving_worker_read_handle(path)) == DSM_HANDLE_INVALID)
			continue;
		if (phase_of(h) < HW_SW_GONE)
			live++;
		else
			hw_serving_worker_unlink_if(path, h);   /* a crash's leftover */
	}
	FreeDir(dir);
	return live;
}
