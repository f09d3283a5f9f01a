/*
 * serving_shared.c: the model cache shared by all backends: mapping a
 * file, writing it atomically, removing a damaged one so it is rebuilt, and
 * cleanup.  The file format and its checksum: serving_shared_format.c.
 *
 * What a backend needs to serve a model at a checkpoint is mostly read-only
 * and the same in every backend: the snapshot (rows, edges, embeddings) and
 * the checkpoint's parameters.  Loading them privately cost each backend
 * ~150 ms and ~125 MB on the small preset (most of it the full training
 * state: parameters, gradients and two optimiser moments, and the model's
 * random initialisation, overwritten at once).  Here the first backend that
 * serves (model, checkpoint) writes them once to a file, laid out as they are
 * used (64-byte aligned arrays), and every backend maps that file read-only:
 * the snapshot's arrays and the parameters are used in place
 * (hw_model_create_frozen), and the OS page cache holds one copy for all.
 *
 * Why a file and not DSM: a memory-mapped file under the data directory
 * needs no shared_preload_libraries and no shared-memory registry, survives
 * the exit of the backend that made it (DSM segments die with their last
 * attached process, so a cache of idle models would need a keeper), and is
 * shared by the kernel's page cache for free.  It lives in
 * $PGDATA/pg_headwater/serving, readable by the server's OS user only (the
 * data directory's modes, MakePGDirectory / pg_file_create_mode).
 *
 * Name: v<format>_d<database oid>_m<model id>_c<checkpoint id>_<weights:
 * a = the parameter average, l = the last parameters>_<hash of the model
 * state key>_<hash of the checkpoint's state version>.hwsc (model ids are
 * per database, the directory per cluster; two tasks of a model may be
 * served from the two weights of one checkpoint).  The key (serving.c)
 * names the row versions of the model and of its tasks, the version those
 * of the checkpoint's stored state: rt_refresh, a task change or a new
 * checkpoint gives a new name, which a backend notices by its usual cache
 * key check, and a checkpoint changed in the database (even damaged) is
 * never served from a file made of its former bytes.  Written to tmp.<pid>.<n>.hwsc and
 * renamed: readers see a whole file or none; two backends building at once
 * both succeed (the same content; the last rename wins, a mapping of the
 * other stays valid).  Never written in place: a mapped file is never
 * changed, only unlinked (mappings survive an unlink).
 *
 * Damage: every open checks the header (magic, format, sizes, names), that
 * the file length is the one written, and a 64-bit checksum of all of it
 * (~1-2 ms for 20 MB); a file failing any check is removed with a LOG line
 * and rebuilt by the caller from the database.  Bounds of every array are
 * checked against the file before use.  A file that cannot be written
 * (disk full, permissions) leaves the backend serving from a private copy,
 * as before.
 *
 * Cleanup (hw_serving_shared_cleanup, after each new file): files of the
 * model with another state key or a checkpoint no task is served from any
 * more, files of dropped models, other formats, and temporary files of
 * processes that are gone; rt_drop_model removes the model's files.
 *
 * The file's layout is this build's own (a raw HwModelConfig, host byte
 * order): the format number in the name and header changes with it.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "common/file_perm.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/guc.h"

#include "pg/serve/hw_serving_shared.h"
#include "pg/serve/serving_shared_format.h"


bool hw_serving_shared_enabled = true;

void
hw_serving_shared_guc_init(void)
{
	DefineCustomBoolVariable("headwater.serving_shared_cache",
							 "Serve models from the cache file shared by all backends.",
							 "Off: this session loads each model privately (more memory and time per session).",
							 &hw_serving_shared_enabled, true, PGC_SUSET, 0, NULL, NULL, NULL);
}

static void
ensure_dir(void)
{
	if (MakePGDirectory(SHARED_PARENT) != 0 && errno != EEXIST)
		return;
	(void) MakePGDirectory(SHARED_DIR);
}

bool
hw_serving_shared_write(int32 model_id, HwServedAt at, const char *key, const char *version,
						const HwSnapshot *snap, HwModel *model)
{
	static uint32 tmp_counter;
	HwSharedBuf         data = {0}, meta = {0};
	HwSharedFileHeader  h;
	char        path[MAXPGPATH], tmp[MAXPGPATH];
	int64       numel = hw_model_numel(model);
	int         fd;
	bool        ok = false;

	memset(&h, 0, sizeof(h));
	hw_shared_buf_put(&data, NULL, sizeof(HwSharedFileHeader));
	hw_shared_write_snapshot(&data, &meta, snap);
	hw_shared_buf_align(&data);
	h.params_off = data.n;
	hw_shared_buf_put(&data, NULL, sizeof(float) * (size_t) numel);
	if (!data.fail && hw_model_get_flat(model, 0, (float *) (data.p + h.params_off)) != HW_OK)
		data.fail = true;
	hw_shared_buf_align(&data);
	h.meta_off = data.n;
	h.meta_len = meta.n;
	hw_shared_buf_put(&data, meta.p, meta.n);
	free(meta.p);
	if (data.fail || meta.fail)
	{
		free(data.p);
		ereport(LOG, (errmsg("headwater: out of memory writing the shared cache file of model %d; serving it privately",
							 model_id)));
		return false;
	}
	memcpy(h.magic, SHARED_MAGIC, 8);
	h.version = SHARED_VERSION;
	h.header_bytes = sizeof(HwSharedFileHeader);
	h.config_bytes = sizeof(HwModelConfig);
	h.model_id = model_id;
	h.file_len = data.n;
	h.checkpoint_id = at.checkpoint_id;
	h.average = at.average ? 1 : 0;
	h.key_hash = hw_shared_key_hash(key);
	h.version_hash = hw_shared_key_hash(version);
	h.cfg = *hw_model_config(model);
	h.numel = numel;
	memcpy(data.p, &h, sizeof(h));
	h.checksum = hw_shared_file_hash(data.p + 16, data.n - 16);
	memcpy(data.p + 8, &h.checksum, 8);

	ensure_dir();
	hw_shared_file_path(path, model_id, at, h.key_hash, h.version_hash);
	snprintf(tmp, sizeof(tmp), SHARED_DIR "/tmp.%d.%u.hwsc", MyProcPid, tmp_counter++);
	/* read-only from birth: nothing ever writes a file a backend may have
	 * mapped (a file truncated under a mapping faults its readers) */
	fd = OpenTransientFilePerm(tmp, O_CREAT | O_EXCL | O_WRONLY | PG_BINARY,
							   pg_file_create_mode & ~(S_IWUSR | S_IWGRP | S_IWOTH));
	if (fd >= 0)
	{
		size_t done = 0;

		while (done < data.n)
		{
			ssize_t w = write(fd, data.p + done, data.n - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			done += (size_t) w;
		}
		ok = done == data.n;
		if (CloseTransientFile(fd) != 0)
			ok = false;
		if (ok && rename(tmp, path) != 0)
			ok = false;
		if (!ok)
		{
			int save = errno;

			(void) unlink(tmp);
			errno = save;
		}
	}
	if (!ok)
		ereport(LOG, (errcode_for_file_access(),
					  errmsg("headwater: could not write the shared cache file \"%s\" of model %d: %m; serving it privately",
							 path, model_id)));
	free(data.p);
	return ok;
}


/* Removes a file that failed its checks, unless another backend has
 * already replaced it (same name, another file). */
static void
remove_bad(const char *path, const struct stat *seen, const char *why)
{
	struct stat now;

	ereport(LOG, (errmsg("headwater: removing the damaged shared model cache file \"%s\" (%s); it is rebuilt from the database",
						 path, why)));
	if (stat(path, &now) == 0 && now.st_ino == seen->st_ino && now.st_dev == seen->st_dev)
		(void) unlink(path);
}

HwSharedModel *
hw_serving_shared_open(int32 model_id, HwServedAt at, const char *key, const char *version)
{
	char          path[MAXPGPATH];
	uint64        kh = hw_shared_key_hash(key);
	uint64        vh = hw_shared_key_hash(version);
	struct stat   st;
	int           fd;
	void         *base;
	HwSharedFileHeader    h;
	const char   *why;
	HwSharedModel *sm;
	HwSharedReader            r;

	hw_shared_file_path(path, model_id, at, kh, vh);
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno != ENOENT)
			ereport(LOG, (errcode_for_file_access(),
						  errmsg("headwater: could not open the shared model cache file \"%s\": %m", path)));
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		CloseTransientFile(fd);
		return NULL;
	}
	if (st.st_size < (off_t) sizeof(HwSharedFileHeader))
	{
		CloseTransientFile(fd);
		remove_bad(path, &st, "truncated header");
		return NULL;
	}
	/* MAP_POPULATE: the checksum reads every page at once anyway; one
	 * call maps them from the page cache instead of one fault per page */
	base = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	CloseTransientFile(fd);
	if (base == MAP_FAILED)
	{
		ereport(LOG, (errmsg("headwater: could not map the shared model cache file \"%s\": %m", path)));
		return NULL;
	}
	why = hw_shared_check_header(base, (size_t) st.st_size, model_id, at, kh, vh, &h);
	if (why)
	{
		munmap(base, (size_t) st.st_size);
		remove_bad(path, &st, why);
		return NULL;
	}
	sm = calloc(1, sizeof(HwSharedModel));
	if (sm == NULL)
	{
		munmap(base, (size_t) st.st_size);
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory mapping a model for prediction")));
	}
	sm->base = base;
	sm->len = (size_t) st.st_size;
	sm->cfg = h.cfg;
	sm->params = (const float *) ((const uint8 *) base + h.params_off);
	sm->numel = h.numel;
	r = (HwSharedReader) {.base = base, .len = sm->len, .p = (const uint8 *) base + h.meta_off, .n = h.meta_len};
	sm->snap = hw_shared_read_snapshot(&r);
	if (sm->snap == NULL)
	{
		hw_serving_shared_close(sm);
		remove_bad(path, &st, "snapshot description does not fit the file");
		return NULL;
	}
	return sm;
}

void
hw_serving_shared_close(HwSharedModel *sm)
{
	if (sm == NULL)
		return;
	hw_shared_snapshot_free(sm->snap);
	if (sm->base)
		munmap(sm->base, sm->len);
	free(sm);
}

/* ------------------------------------------------------------ cleanup */

typedef struct CacheFile
{
	char   name[NAMEDATALEN * 2];
	Oid    db;
	int32  model_id;
	HwServedAt at;
	uint64 kh, vh;
	bool   current_format;
} CacheFile;

/* The cache files in the directory (palloc'd); stale temporary files are
 * removed on the way. */
static CacheFile *
list_files(int *n)
{
	DIR           *dir;
	struct dirent *de;
	int            cap = 16;
	CacheFile     *files = palloc(sizeof(CacheFile) * cap);
	time_t         now = time(NULL);

	*n = 0;
	dir = AllocateDir(SHARED_DIR);
	if (dir == NULL)
		return files;
	while ((de = ReadDirExtended(dir, SHARED_DIR, LOG)) != NULL)
	{
		char        path[MAXPGPATH];
		int         pid, ver;
		unsigned    cnt, db;
		int32       m;
		long long   ck;
		char        w;
		unsigned long long kh, vh;
		struct stat st;

		if (strlen(de->d_name) >= sizeof(files[0].name))
			continue;
		snprintf(path, sizeof(path), SHARED_DIR "/%s", de->d_name);
		if (sscanf(de->d_name, "tmp.%d.%u.hwsc", &pid, &cnt) == 2)
		{
			if (pid != MyProcPid && stat(path, &st) == 0 &&
				((kill(pid, 0) != 0 && errno == ESRCH) || now - st.st_mtime > SHARED_TMP_MAX_AGE_S))
				(void) unlink(path);
			continue;
		}
		if (sscanf(de->d_name, "v%d_d%u_m%d_c%lld_%c_%16llx_%16llx.hwsc", &ver, &db, &m, &ck, &w, &kh, &vh) != 7 ||
			(w != 'a' && w != 'l'))
		{
			/* an older format's name: stale */
			if (de->d_name[0] == 'v' && strstr(de->d_name, ".hwsc") != NULL)
				(void) unlink(path);
			continue;
		}
		if (*n == cap)
		{
			cap *= 2;
			files = repalloc(files, sizeof(CacheFile) * cap);
		}
		strlcpy(files[*n].name, de->d_name, sizeof(files[*n].name));
		files[*n].db = (Oid) db;
		files[*n].model_id = m;
		files[*n].at.checkpoint_id = ck;
		files[*n].at.average = w == 'a';
		files[*n].kh = kh;
		files[*n].vh = vh;
		files[*n].current_format = ver == SHARED_VERSION;
		(*n)++;
	}
	FreeDir(dir);
	return files;
}

static void
unlink_file(const CacheFile *f)
{
	char path[MAXPGPATH];

	snprintf(path, sizeof(path), SHARED_DIR "/%s", f->name);
	(void) unlink(path);
}

void
hw_serving_shared_cleanup(int32 model_id, const char *key, HwServedAt at, const char *version,
						  const HwServedAt *keep, int nkeep)
{
	int        n;
	CacheFile *files = list_files(&n);
	uint64     kh = hw_shared_key_hash(key);
	uint64     vh = hw_shared_key_hash(version);

	for (int i = 0; i < n; i++)
	{
		CacheFile *f = &files[i];
		bool       stale = !f->current_format;

		/* another database's models are that database's business */
		if (f->db != MyDatabaseId && !stale)
			continue;
		if (!stale && f->model_id == model_id)
		{
			bool kept = false;

			for (int k = 0; k < nkeep; k++)
				kept |= keep[k].checkpoint_id == f->at.checkpoint_id && keep[k].average == f->at.average;
			stale = f->kh != kh || !kept || (f->at.checkpoint_id == at.checkpoint_id && f->vh != vh);
		}
		else if (!stale)
		{
			Datum arg = Int32GetDatum(f->model_id);

			/* a dropped model (its drop removes its files; this catches a
			 * drop whose removal failed, or files restored with a backup) */
			if (SPI_execute_with_args("SELECT 1 FROM headwater.model WHERE model_id = $1", 1, (Oid[]) {INT4OID},
									  &arg, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 0)
				stale = true;
		}
		if (stale)
			unlink_file(f);
	}
	pfree(files);
}

void
hw_serving_shared_remove_model(int32 model_id)
{
	int        n;
	CacheFile *files = list_files(&n);

	for (int i = 0; i < n; i++)
		if (files[i].db == MyDatabaseId && files[i].model_id == model_id)
			unlink_file(&files[i]);
	pfree(files);
}
