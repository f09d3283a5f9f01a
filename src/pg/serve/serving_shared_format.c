/*
 * serving_shared_format.c: the layout of a shared model cache file and its
 * checksum (see serving_shared.c for how files are written, mapped and
 * rebuilt).
 *
 * The file: a header (HwSharedFileHeader), the checkpoint's parameters
 * (64-byte aligned float[numel]), the snapshot's arrays (each 64-byte
 * aligned) and a description of the snapshot (names, tables, columns,
 * foreign keys, and the offsets of its arrays) that the reader checks
 * against the file's bounds before use.  The layout is this build's own
 * (a raw HwModelConfig, host byte order): the format number in the name and
 * header changes with it.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "pg/serve/hw_serving_shared.h"
#include "pg/serve/serving_shared_format.h"

/* ------------------------------------------------------------ hashing */

uint64
hw_shared_key_hash(const char *key)
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
uint64
hw_shared_file_hash(const uint8 *p, size_t n)
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

void
hw_shared_file_path(char *out, int32 model_id, HwServedAt at, uint64 kh, uint64 vh)
{
	snprintf(out, MAXPGPATH, SHARED_DIR "/v%d_d%u_m%d_c%lld_%c_%016llx_%016llx.hwsc", SHARED_VERSION, MyDatabaseId,
			 model_id, (long long) at.checkpoint_id, at.average ? 'a' : 'l', (unsigned long long) kh,
			 (unsigned long long) vh);
}

/* ------------------------------------------------------------ writing */


static void
buf_reserve(HwSharedBuf *b, size_t n)
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

void
hw_shared_buf_put(HwSharedBuf *b, const void *src, size_t n)
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

void
hw_shared_buf_align(HwSharedBuf *b)
{
	size_t pad = (SHARED_ALIGN - b->n % SHARED_ALIGN) % SHARED_ALIGN;

	hw_shared_buf_put(b, NULL, pad);
}

#define PUTV(b, v) do { __typeof__(v) _v = (v); hw_shared_buf_put((b), &_v, sizeof(_v)); } while (0)

static void
put_str(HwSharedBuf *meta, const char *s)
{
	uint32 n = s ? (uint32) strlen(s) : 0;

	PUTV(meta, n);
	hw_shared_buf_put(meta, s, n);
}

/* An array into data (aligned), its place (offset, bytes) into meta;
 * offset 0 stands for NULL. */
static void
put_array(HwSharedBuf *data, HwSharedBuf *meta, const void *src, size_t bytes)
{
	uint64 off = 0;

	if (src)
	{
		hw_shared_buf_align(data);
		off = data->n;
		hw_shared_buf_put(data, src, bytes);
	}
	PUTV(meta, off);
	PUTV(meta, (uint64) bytes);
}

void
hw_shared_write_snapshot(HwSharedBuf *data, HwSharedBuf *meta, const HwSnapshot *s)
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


/* ------------------------------------------------------------ reading */


static void
rd(HwSharedReader *r, void *dst, size_t n)
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
rd_str(HwSharedReader *r)
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
rd_array(HwSharedReader *r, size_t expect)
{
	uint64 off = 0, bytes = 0;

	GETV(r, off);
	GETV(r, bytes);
	if (r->fail)
		return NULL;
	if (off == 0)
		return NULL;
	if (bytes != expect || off % SHARED_ALIGN != 0 || off < sizeof(HwSharedFileHeader) || off > r->len ||
		bytes > r->len - off)
	{
		r->fail = true;
		return NULL;
	}
	return (void *) (r->base + off);
}

/* Frees what read_snapshot malloc'd (not the mapped arrays). */
void
hw_shared_snapshot_free(HwSnapshot *s)
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

HwSnapshot *
hw_shared_read_snapshot(HwSharedReader *r)
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
	hw_shared_snapshot_free(s);
	r->fail = true;
	return NULL;
}

/* Why the mapped file is not the one asked for, or NULL. */
const char *
hw_shared_check_header(const uint8 *base, size_t len, int32 model_id, HwServedAt at, uint64 kh, uint64 vh,
			 HwSharedFileHeader *h)
{
	if (len < sizeof(HwSharedFileHeader))
		return "truncated header";
	memcpy(h, base, sizeof(HwSharedFileHeader));
	if (memcmp(h->magic, SHARED_MAGIC, 8) != 0)
		return "bad magic";
	if (h->version != SHARED_VERSION || h->header_bytes != sizeof(HwSharedFileHeader) ||
		h->config_bytes != sizeof(HwModelConfig))
		return "another format";
	if (h->file_len != len)
		return "wrong length (truncated or extended)";
	if (hw_shared_file_hash(base + 16, len - 16) != h->checksum)
		return "checksum mismatch";
	if (h->model_id != model_id || h->checkpoint_id != at.checkpoint_id || h->average != (at.average ? 1 : 0) ||
		h->key_hash != kh || h->version_hash != vh)
		return "written for another model state";
	if (h->numel <= 0 || h->params_off % SHARED_ALIGN != 0 || h->params_off < sizeof(HwSharedFileHeader) ||
		h->params_off > len || (uint64) h->numel > (len - h->params_off) / sizeof(float) ||
		h->meta_off > len || h->meta_len > len - h->meta_off)
		return "sections outside the file";
	return NULL;
}
