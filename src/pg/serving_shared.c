/*
 * serving_shared.c: the model cache shared by all backends (issue 13).
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

#include "hw_serving_shared.h"

#define SHARED_PARENT "pg_headwater"
#define SHARED_DIR SHARED_PARENT "/serving"
#define SHARED_VERSION 9       /* 3: HwModelConfig gained child_means (same size on x86-64); 4: ema_decay (served parameters may be the average);
								* 5: which weights (last or average) in the name and header; 6: HwModelConfig gained ordinal_head;
								* 7: count_ramps; 8: head_adamw; 9: head_weight_decay */
#define SHARED_MAGIC "HWSERVE"        /* 8 bytes with its NUL */
#define SHARED_ALIGN 64
/* a temporary file older than this is an abandoned one */
#define SHARED_TMP_MAX_AGE_S 3600

bool hw_serving_shared_enabled = true;

void
hw_serving_shared_guc_init(void)
{
	DefineCustomBoolVariable("headwater.serving_shared_cache",
							 "Serve models from the cache file shared by all backends.",
							 "Off: this session loads each model privately (more memory and time per session).",
							 &hw_serving_shared_enabled, true, PGC_SUSET, 0, NULL, NULL, NULL);
}

/* At offset 0 of the file; everything after `checksum` is covered by it. */
typedef struct FileHeader
{
	char          magic[8];
	uint64        checksum;        /* file_hash of bytes [16, file_len) */
	uint32        version;
	uint32        header_bytes;    /* sizeof(FileHeader) */
	uint32        config_bytes;    /* sizeof(HwModelConfig) */
	int32         model_id;
	uint64        file_len;
	int64         checkpoint_id;
	int32         average;         /* the weights: 1 the parameter average, 0 the last parameters */
	int32         pad;
	uint64        key_hash;
	uint64        version_hash;
	HwModelConfig cfg;
	uint64        params_off;      /* float[numel] */
	int64         numel;
	uint64        meta_off;        /* the snapshot's description (write_snapshot) */
	uint64        meta_len;
} FileHeader;

/* ------------------------------------------------------------ hashing */

static uint64
key_hash(const char *key)
{
	uint64 h = 0xcbf29ce484222325ULL;

	for (const unsigned char *p = (const unsigned char *) key; *p; p++)
	{
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* A fast 64-bit checksum (four independent multiply-xor lanes over 64-bit
 * words, then the tail bytes): detects damage, not an adversary. */
static uint64
file_hash(const uint8 *p, size_t n)
{
	const uint64 K = 0x9e3779b97f4a7c15ULL;
	uint64       h[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
	size_t       nb = n / 32;
	uint64       out;

	for (size_t i = 0; i < nb; i++)
		for (int l = 0; l < 4; l++)
		{
			uint64 w;

			memcpy(&w, p + i * 32 + l * 8, 8);
			h[l] = (h[l] ^ w) * K;
			h[l] ^= h[l] >> 29;
		}
	out = h[0] ^ (h[1] * 3) ^ (h[2] * 5) ^ (h[3] * 7) ^ (uint64) n;
	for (size_t i = nb * 32; i < n; i++)
		out = (out ^ p[i]) * 0x100000001b3ULL;
	return out ^ (out >> 31);
}

static void
file_path(char *out, int32 model_id, HwServedAt at, uint64 kh, uint64 vh)
{
	snprintf(out, MAXPGPATH, SHARED_DIR "/v%d_d%u_m%d_c%lld_%c_%016llx_%016llx.hwsc", SHARED_VERSION, MyDatabaseId,
			 model_id, (long long) at.checkpoint_id, at.average ? 'a' : 'l', (unsigned long long) kh,
			 (unsigned long long) vh);
}

/* ------------------------------------------------------------ writing */

typedef struct Buf
{
	uint8  *p;
	size_t  n, cap;
	bool    fail;
} Buf;

static void
buf_reserve(Buf *b, size_t n)
{
	if (b->fail || b->n + n <= b->cap)
		return;
	size_t nc = b->cap ? b->cap : 1 << 20;

	while (nc < b->n + n)
		nc *= 2;
	uint8 *np = realloc(b->p, nc);

	if (np == NULL)
	{
		b->fail = true;
		return;
	}
	b->p = np;
	b->cap = nc;
}

static void
buf_put(Buf *b, const void *src, size_t n)
{
	buf_reserve(b, n);
	if (b->fail)
		return;
	if (src)
		memcpy(b->p + b->n, src, n);
	else
		memset(b->p + b->n, 0, n);
	b->n += n;
}

static void
buf_align(Buf *b)
{
	size_t pad = (SHARED_ALIGN - b->n % SHARED_ALIGN) % SHARED_ALIGN;

	buf_put(b, NULL, pad);
}

#define PUTV(b, v) do { __typeof__(v) _v = (v); buf_put((b), &_v, sizeof(_v)); } while (0)

static void
put_str(Buf *meta, const char *s)
{
	uint32 n = s ? (uint32) strlen(s) : 0;

	PUTV(meta, n);
	buf_put(meta, s, n);
}

/* An array into data (aligned), its place (offset, bytes) into meta;
 * offset 0 stands for NULL. */
static void
put_array(Buf *data, Buf *meta, const void *src, size_t bytes)
{
	uint64 off = 0;

	if (src)
	{
		buf_align(data);
		off = data->n;
		buf_put(data, src, bytes);
	}
	PUTV(meta, off);
	PUTV(meta, (uint64) bytes);
}

static void
write_snapshot(Buf *data, Buf *meta, const HwSnapshot *s)
{
	size_t nr = s->nrows;
	size_t dt = (size_t) (s->d_text > 0 ? s->d_text : 0);
	size_t nfp = s->fp_off ? s->fp_off[nr] : 0;
	size_t npf = s->pf_off ? s->pf_off[nr] : 0;

	PUTV(meta, s->ntables);
	PUTV(meta, s->nfks);
	PUTV(meta, s->nrows);
	PUTV(meta, s->d_text);
	PUTV(meta, s->ncolumns);
	PUTV(meta, s->ncat);
	PUTV(meta, s->ntext);
	PUTV(meta, s->ts_mean_us);
	PUTV(meta, s->ts_std_us);
	put_array(data, meta, s->row_table, nr * sizeof(uint16_t));
	put_array(data, meta, s->row_time_us, nr * sizeof(int64_t));
	put_array(data, meta, s->fp_off, s->fp_off ? (nr + 1) * sizeof(uint64_t) : 0);
	put_array(data, meta, s->fp_dst, nfp * sizeof(uint32_t));
	put_array(data, meta, s->fp_fk, nfp * sizeof(uint16_t));
	put_array(data, meta, s->pf_off, s->pf_off ? (nr + 1) * sizeof(uint64_t) : 0);
	put_array(data, meta, s->pf_dst, npf * sizeof(uint32_t));
	put_array(data, meta, s->pf_fk, npf * sizeof(uint16_t));
	put_array(data, meta, s->col_emb, (size_t) Max(s->ncolumns, 0) * dt * sizeof(uint16_t));
	put_array(data, meta, s->cat_emb, (size_t) s->ncat * dt * sizeof(uint16_t));
	put_array(data, meta, s->text_emb, (size_t) s->ntext * dt * sizeof(uint16_t));
	for (int t = 0; t < s->ntables; t++)
	{
		const HwTable *tb = &s->tables[t];
		size_t         n = tb->nrows;

		put_str(meta, tb->name);
		PUTV(meta, tb->nrows);
		PUTV(meta, tb->row_offset);
		PUTV(meta, tb->ncols);
		PUTV(meta, tb->time_col);
		put_array(data, meta, tb->key_hash, n * sizeof(uint64_t));
		put_array(data, meta, tb->key_order, n * sizeof(uint32_t));
		for (int c = 0; c < tb->ncols; c++)
		{
			const HwColumn *col = &tb->cols[c];

			put_str(meta, col->name);
			PUTV(meta, col->global_id);
			PUTV(meta, col->stype);
			PUTV(meta, col->null_count);
			PUTV(meta, col->mean);
			PUTV(meta, col->std);
			PUTV(meta, col->min);
			PUTV(meta, col->max);
			PUTV(meta, col->cat_emb_start);
			PUTV(meta, col->cat_emb_count);
			put_array(data, meta, col->valid, n);
			put_array(data, meta, col->f32, n * sizeof(float));
			put_array(data, meta, col->i64, n * sizeof(int64_t));
			put_array(data, meta, col->u8, n);
			put_array(data, meta, col->u32, n * sizeof(uint32_t));
		}
	}
	for (int f = 0; f < s->nfks; f++)
	{
		put_str(meta, s->fks[f].name);
		PUTV(meta, s->fks[f].child_table);
		PUTV(meta, s->fks[f].parent_table);
	}
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
	Buf         data = {0}, meta = {0};
	FileHeader  h;
	char        path[MAXPGPATH], tmp[MAXPGPATH];
	int64       numel = hw_model_numel(model);
	int         fd;
	bool        ok = false;

	memset(&h, 0, sizeof(h));
	buf_put(&data, NULL, sizeof(FileHeader));
	write_snapshot(&data, &meta, snap);
	buf_align(&data);
	h.params_off = data.n;
	buf_put(&data, NULL, sizeof(float) * (size_t) numel);
	if (!data.fail && hw_model_get_flat(model, 0, (float *) (data.p + h.params_off)) != HW_OK)
		data.fail = true;
	buf_align(&data);
	h.meta_off = data.n;
	h.meta_len = meta.n;
	buf_put(&data, meta.p, meta.n);
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
	h.header_bytes = sizeof(FileHeader);
	h.config_bytes = sizeof(HwModelConfig);
	h.model_id = model_id;
	h.file_len = data.n;
	h.checkpoint_id = at.checkpoint_id;
	h.average = at.average ? 1 : 0;
	h.key_hash = key_hash(key);
	h.version_hash = key_hash(version);
	h.cfg = *hw_model_config(model);
	h.numel = numel;
	memcpy(data.p, &h, sizeof(h));
	h.checksum = file_hash(data.p + 16, data.n - 16);
	memcpy(data.p + 8, &h.checksum, 8);

	ensure_dir();
	file_path(path, model_id, at, h.key_hash, h.version_hash);
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

/* ------------------------------------------------------------ reading */

typedef struct Rd
{
	const uint8 *base;       /* the whole file */
	size_t       len;
	const uint8 *p;          /* meta */
	size_t       n, off;
	bool         fail;
} Rd;

static void
rd(Rd *r, void *dst, size_t n)
{
	if (r->fail || r->off + n > r->n)
	{
		r->fail = true;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, r->p + r->off, n);
	r->off += n;
}

#define GETV(r, v) rd((r), &(v), sizeof(v))

static char *
rd_str(Rd *r)
{
	uint32 n = 0;
	char  *s;

	GETV(r, n);
	if (r->fail || n > r->n - r->off)
	{
		r->fail = true;
		return NULL;
	}
	s = malloc((size_t) n + 1);
	if (s == NULL)
	{
		r->fail = true;
		return NULL;
	}
	memcpy(s, r->p + r->off, n);
	s[n] = '\0';
	r->off += n;
	return s;
}

/* The array at the next (offset, bytes) of meta, which must be `expect`
 * bytes (NULL for offset 0), aligned and inside the file. */
static void *
rd_array(Rd *r, size_t expect)
{
	uint64 off = 0, bytes = 0;

	GETV(r, off);
	GETV(r, bytes);
	if (r->fail)
		return NULL;
	if (off == 0)
		return NULL;
	if (bytes != expect || off % SHARED_ALIGN != 0 || off < sizeof(FileHeader) || off > r->len ||
		bytes > r->len - off)
	{
		r->fail = true;
		return NULL;
	}
	return (void *) (r->base + off);
}

/* Frees what read_snapshot malloc'd (not the mapped arrays). */
static void
shared_snapshot_free(HwSnapshot *s)
{
	if (s == NULL)
		return;
	for (int t = 0; t < s->ntables && s->tables; t++)
	{
		for (int c = 0; c < s->tables[t].ncols && s->tables[t].cols; c++)
			free(s->tables[t].cols[c].name);
		free(s->tables[t].cols);
		free(s->tables[t].name);
	}
	free(s->tables);
	for (int f = 0; f < s->nfks && s->fks; f++)
		free(s->fks[f].name);
	free(s->fks);
	free(s);
}

static HwSnapshot *
read_snapshot(Rd *r)
{
	HwSnapshot *s = calloc(1, sizeof(HwSnapshot));
	size_t      nr, dt, nfp, npf;

	if (s == NULL)
		return NULL;
	GETV(r, s->ntables);
	GETV(r, s->nfks);
	GETV(r, s->nrows);
	GETV(r, s->d_text);
	GETV(r, s->ncolumns);
	GETV(r, s->ncat);
	GETV(r, s->ntext);
	GETV(r, s->ts_mean_us);
	GETV(r, s->ts_std_us);
	if (r->fail || s->ntables < 0 || s->ntables > 65535 || s->nfks < 0 || s->nfks > 65535 ||
		s->d_text < 0 || s->ncolumns < 0)
		goto bad;
	nr = s->nrows;
	dt = (size_t) s->d_text;
	s->row_table = rd_array(r, nr * sizeof(uint16_t));
	s->row_time_us = rd_array(r, nr * sizeof(int64_t));
	s->fp_off = rd_array(r, (nr + 1) * sizeof(uint64_t));
	nfp = s->fp_off ? s->fp_off[nr] : 0;
	if (nfp > r->len)
		goto bad;
	s->fp_dst = rd_array(r, nfp * sizeof(uint32_t));
	s->fp_fk = rd_array(r, nfp * sizeof(uint16_t));
	s->pf_off = rd_array(r, (nr + 1) * sizeof(uint64_t));
	npf = s->pf_off ? s->pf_off[nr] : 0;
	if (npf > r->len)
		goto bad;
	s->pf_dst = rd_array(r, npf * sizeof(uint32_t));
	s->pf_fk = rd_array(r, npf * sizeof(uint16_t));
	s->col_emb = rd_array(r, (size_t) s->ncolumns * dt * sizeof(uint16_t));
	s->cat_emb = rd_array(r, (size_t) s->ncat * dt * sizeof(uint16_t));
	s->text_emb = rd_array(r, (size_t) s->ntext * dt * sizeof(uint16_t));
	if (r->fail)
		goto bad;
	s->tables = calloc(Max(s->ntables, 1), sizeof(HwTable));
	s->fks = calloc(Max(s->nfks, 1), sizeof(HwForeignKey));
	if (s->tables == NULL || s->fks == NULL)
		goto bad;
	for (int t = 0; t < s->ntables; t++)
	{
		HwTable *tb = &s->tables[t];
		size_t   n;

		tb->name = rd_str(r);
		GETV(r, tb->nrows);
		GETV(r, tb->row_offset);
		GETV(r, tb->ncols);
		GETV(r, tb->time_col);
		if (r->fail || tb->ncols < 0 || tb->ncols > 1600 || (size_t) tb->row_offset + tb->nrows > nr)
		{
			tb->ncols = 0;
			goto bad;
		}
		n = tb->nrows;
		tb->key_hash = rd_array(r, n * sizeof(uint64_t));
		tb->key_order = rd_array(r, n * sizeof(uint32_t));
		tb->cols = calloc(Max(tb->ncols, 1), sizeof(HwColumn));
		if (tb->cols == NULL)
		{
			tb->ncols = 0;
			goto bad;
		}
		for (int c = 0; c < tb->ncols; c++)
		{
			HwColumn *col = &tb->cols[c];

			col->name = rd_str(r);
			GETV(r, col->global_id);
			GETV(r, col->stype);
			GETV(r, col->null_count);
			GETV(r, col->mean);
			GETV(r, col->std);
			GETV(r, col->min);
			GETV(r, col->max);
			GETV(r, col->cat_emb_start);
			GETV(r, col->cat_emb_count);
			col->valid = rd_array(r, n);
			col->f32 = rd_array(r, n * sizeof(float));
			col->i64 = rd_array(r, n * sizeof(int64_t));
			col->u8 = rd_array(r, n);
			col->u32 = rd_array(r, n * sizeof(uint32_t));
		}
		if (r->fail)
			goto bad;
	}
	for (int f = 0; f < s->nfks; f++)
	{
		s->fks[f].name = rd_str(r);
		GETV(r, s->fks[f].child_table);
		GETV(r, s->fks[f].parent_table);
	}
	if (r->fail || r->off != r->n)
		goto bad;
	return s;
bad:
	shared_snapshot_free(s);
	r->fail = true;
	return NULL;
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

/* Why the mapped file is not the one asked for, or NULL. */
static const char *
check_header(const uint8 *base, size_t len, int32 model_id, HwServedAt at, uint64 kh, uint64 vh,
			 FileHeader *h)
{
	if (len < sizeof(FileHeader))
		return "truncated header";
	memcpy(h, base, sizeof(FileHeader));
	if (memcmp(h->magic, SHARED_MAGIC, 8) != 0)
		return "bad magic";
	if (h->version != SHARED_VERSION || h->header_bytes != sizeof(FileHeader) ||
		h->config_bytes != sizeof(HwModelConfig))
		return "another format";
	if (h->file_len != len)
		return "wrong length (truncated or extended)";
	if (file_hash(base + 16, len - 16) != h->checksum)
		return "checksum mismatch";
	if (h->model_id != model_id || h->checkpoint_id != at.checkpoint_id || h->average != (at.average ? 1 : 0) ||
		h->key_hash != kh || h->version_hash != vh)
		return "written for another model state";
	if (h->numel <= 0 || h->params_off % SHARED_ALIGN != 0 || h->params_off < sizeof(FileHeader) ||
		h->params_off > len || (uint64) h->numel > (len - h->params_off) / sizeof(float) ||
		h->meta_off > len || h->meta_len > len - h->meta_off)
		return "sections outside the file";
	return NULL;
}

HwSharedModel *
hw_serving_shared_open(int32 model_id, HwServedAt at, const char *key, const char *version)
{
	char          path[MAXPGPATH];
	uint64        kh = key_hash(key);
	uint64        vh = key_hash(version);
	struct stat   st;
	int           fd;
	void         *base;
	FileHeader    h;
	const char   *why;
	HwSharedModel *sm;
	Rd            r;

	file_path(path, model_id, at, kh, vh);
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
	if (st.st_size < (off_t) sizeof(FileHeader))
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
	why = check_header(base, (size_t) st.st_size, model_id, at, kh, vh, &h);
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
	r = (Rd) {.base = base, .len = sm->len, .p = (const uint8 *) base + h.meta_off, .n = h.meta_len};
	sm->snap = read_snapshot(&r);
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
	shared_snapshot_free(sm->snap);
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
	uint64     kh = key_hash(key);
	uint64     vh = key_hash(version);

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
