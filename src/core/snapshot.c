/*
 * snapshot.c: lifetime, (de)serialization and lookups of HwSnapshot, plus the
 * builder helpers the catalog uses (CSR adjacency from an edge list, key
 * order for PK lookup, per-row table/time arrays).
 *
 * Serialized layout (little-endian, the host order of every supported
 * platform: x86-64 and aarch64):
 *   "HWSNAP\0\0"  u32 format version  u32 header bytes (reserved, 0)
 *   scalars, then per table: name, nrows, row_offset, ncols, time_col,
 *   has_key, per column: name, global_id, stype, stats, array-presence bits,
 *   arrays; then FKs, row_table, row_time_us, both CSRs, embedding tables.
 *   Every array is preceded by nothing but its implied length, so a reader
 *   validates lengths against the remaining bytes before copying.
 */
#include "core/snapshot.h"
#include "core/snapshot_build.h"

#include <stdlib.h>
#include <string.h>

static const char HW_SNAP_MAGIC[8] = {'H', 'W', 'S', 'N', 'A', 'P', 0, 0};

void
snapshot_free(HwSnapshot *snap)
{
	if (snap == NULL)
		return;
	for (int32_t t = 0; t < snap->ntables && snap->tables; t++)
	{
		HwTable *tb = &snap->tables[t];

		for (int32_t c = 0; c < tb->ncols && tb->cols; c++)
		{
			HwColumn *col = &tb->cols[c];

			free(col->name);
			free(col->valid);
			free(col->f32);
			free(col->i64);
			free(col->u8);
			free(col->u32);
		}
		free(tb->cols);
		free(tb->name);
		free(tb->key_hash);
		free(tb->key_order);
	}
	free(snap->tables);
	for (int32_t f = 0; f < snap->nfks && snap->fks; f++)
		free(snap->fks[f].name);
	free(snap->fks);
	free(snap->row_table);
	free(snap->row_time_us);
	free(snap->fp_off);
	free(snap->fp_dst);
	free(snap->fp_fk);
	free(snap->pf_off);
	free(snap->pf_dst);
	free(snap->pf_fk);
	free(snap->col_emb);
	free(snap->cat_emb);
	free(snap->text_emb);
	free(snap);
}

/* ------------------------------------------------------------------ lookups */

bool
snapshot_column_by_global_id(const HwSnapshot *snap, int32_t global_id,
							 int32_t *table, int32_t *col)
{
	if (snap == NULL || global_id < 0 || global_id >= snap->ncolumns)
		return false;
	/* global ids are assigned in table order then column order, so a linear
	 * scan over tables is short (tables are few) */
	for (int32_t t = 0; t < snap->ntables; t++)
	{
		const HwTable *tb = &snap->tables[t];

		for (int32_t c = 0; c < tb->ncols; c++)
			if (tb->cols[c].global_id == global_id)
			{
				if (table)
					*table = t;
				if (col)
					*col = c;
				return true;
			}
	}
	return false;
}

int64_t
snapshot_find_row(const HwSnapshot *snap, int32_t table, uint64_t key_hash)
{
	if (snap == NULL || table < 0 || table >= snap->ntables)
		return -1;
	const HwTable *tb = &snap->tables[table];

	if (tb->key_hash == NULL || tb->key_order == NULL || tb->nrows == 0)
		return -1;
	/* lower bound over key_order by key_hash */
	uint32_t lo = 0, hi = tb->nrows;

	while (lo < hi)
	{
		uint32_t mid = lo + (hi - lo) / 2;

		if (tb->key_hash[tb->key_order[mid]] < key_hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < tb->nrows && tb->key_hash[tb->key_order[lo]] == key_hash)
		return (int64_t) tb->row_offset + tb->key_order[lo];
	return -1;
}

/* ------------------------------------------------------------------ builders */

/* Fills tb->key_order from tb->key_hash (allocated by the caller): rows by
 * ascending hash, ties by row.  LSD radix sort, 4 passes of 16 bits over
 * (hash, row) pairs: O(n), stable, so ties keep row order. */
int
snapshot_build_key_order(HwTable *tb, HwError *err)
{
	uint32_t n = tb->nrows;

	free(tb->key_order);
	tb->key_order = NULL;
	if (tb->key_hash == NULL)
		return HW_OK;
	tb->key_order = malloc(sizeof(uint32_t) * (n ? n : 1));
	uint32_t *tmp = malloc(sizeof(uint32_t) * (n ? n : 1));
	uint32_t *count = malloc(sizeof(uint32_t) * 65536);

	if (tb->key_order == NULL || tmp == NULL || count == NULL)
	{
		free(tmp);
		free(count);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory ordering keys of table %s", tb->name);
	}
	for (uint32_t r = 0; r < n; r++)
		tb->key_order[r] = r;
	uint32_t *src = tb->key_order, *dst = tmp;

	for (int pass = 0; pass < 4; pass++)
	{
		int shift = 16 * pass;
		uint32_t sum = 0;

		memset(count, 0, sizeof(uint32_t) * 65536);
		for (uint32_t i = 0; i < n; i++)
			count[(tb->key_hash[src[i]] >> shift) & 0xFFFF]++;
		for (uint32_t d = 0; d < 65536; d++)
		{
			uint32_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++)
			dst[count[(tb->key_hash[src[i]] >> shift) & 0xFFFF]++] = src[i];
		uint32_t *sw = src;

		src = dst;
		dst = sw;
	}
	/* 4 passes: the result is back in key_order */
	free(tmp);
	free(count);
	return HW_OK;
}

/* Sets row_offset of every table, nrows, row_table and row_time_us from the
 * tables' nrows and time columns. */
int
snapshot_build_rows(HwSnapshot *snap, HwError *err)
{
	uint64_t total = 0;

	for (int32_t t = 0; t < snap->ntables; t++)
	{
		snap->tables[t].row_offset = (uint32_t) total;
		total += snap->tables[t].nrows;
	}
	if (total >= UINT32_MAX)
		return hw_error_set(err, HW_ERR_INVALID, "too many rows for one snapshot: %llu",
							(unsigned long long) total);
	snap->nrows = (uint32_t) total;
	free(snap->row_table);
	free(snap->row_time_us);
	snap->row_table = malloc(sizeof(uint16_t) * (total ? total : 1));
	snap->row_time_us = malloc(sizeof(int64_t) * (total ? total : 1));
	if (!snap->row_table || !snap->row_time_us)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %llu row headers",
							(unsigned long long) total);
	for (int32_t t = 0; t < snap->ntables; t++)
	{
		const HwTable *tb = &snap->tables[t];
		const HwColumn *tc = tb->time_col >= 0 ? &tb->cols[tb->time_col] : NULL;

		for (uint32_t r = 0; r < tb->nrows; r++)
		{
			uint32_t g = tb->row_offset + r;

			snap->row_table[g] = (uint16_t) t;
			snap->row_time_us[g] = (tc && tc->i64 && tc->valid && tc->valid[r]) ? tc->i64[r] : HW_NO_TIME;
		}
	}
	return HW_OK;
}

/*
 * Builds both CSRs from an edge list (child global row -> parent global row
 * via FK index).  F->P lists each child's parents in edge-list order sorted by
 * FK index; P->F lists each parent's children grouped by FK index, ascending
 * child row (the contract of snapshot.h).  Counting sort: O(nrows + nedges).
 */
int
snapshot_build_csr(HwSnapshot *snap, size_t nedges, const uint32_t *child,
				   const uint32_t *parent, const uint16_t *fk, HwError *err)
{
	uint32_t n = snap->nrows;
	int32_t nfk = snap->nfks > 0 ? snap->nfks : 1;

	free(snap->fp_off); free(snap->fp_dst); free(snap->fp_fk);
	free(snap->pf_off); free(snap->pf_dst); free(snap->pf_fk);
	snap->fp_off = calloc((size_t) n + 1, sizeof(uint64_t));
	snap->pf_off = calloc((size_t) n + 1, sizeof(uint64_t));
	snap->fp_dst = malloc(sizeof(uint32_t) * (nedges ? nedges : 1));
	snap->fp_fk = malloc(sizeof(uint16_t) * (nedges ? nedges : 1));
	snap->pf_dst = malloc(sizeof(uint32_t) * (nedges ? nedges : 1));
	snap->pf_fk = malloc(sizeof(uint16_t) * (nedges ? nedges : 1));
	/* order edges by (fk, child): both CSRs are then stable fills */
	uint64_t *fkcount = calloc((size_t) nfk + 1, sizeof(uint64_t));
	size_t   *order = malloc(sizeof(size_t) * (nedges ? nedges : 1));
	uint64_t *cursor = malloc(sizeof(uint64_t) * ((size_t) n + 1));

	if (!snap->fp_off || !snap->pf_off || !snap->fp_dst || !snap->fp_fk || !snap->pf_dst ||
		!snap->pf_fk || !fkcount || !order || !cursor)
	{
		free(fkcount); free(order); free(cursor);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %zu FK edges", nedges);
	}
	for (size_t e = 0; e < nedges; e++)
	{
		if (child[e] >= n || parent[e] >= n || (int32_t) fk[e] >= nfk)
		{
			free(fkcount); free(order); free(cursor);
			return hw_error_set(err, HW_ERR_INTERNAL, "edge %zu out of range", e);
		}
		fkcount[fk[e] + 1]++;
	}
	for (int32_t f = 0; f < nfk; f++)
		fkcount[f + 1] += fkcount[f];
	/* edges of one FK come from one child table scanned in row order, but do
	 * not rely on it: the second pass below sorts by child within FK */
	for (size_t e = 0; e < nedges; e++)
		order[fkcount[fk[e]]++] = e;
	/* within each FK sort by child using a counting pass over rows */
	{
		uint64_t start = 0;

		for (int32_t f = 0; f < nfk; f++)
		{
			uint64_t end = fkcount[f];
			bool sorted = true;

			for (uint64_t i = start + 1; i < end; i++)
				if (child[order[i]] < child[order[i - 1]])
				{
					sorted = false;
					break;
				}
			if (!sorted)
			{
				/* insertion sort: the catalog emits each FK's edges in child
				 * row order, so this path is only for other callers */
				for (uint64_t i = start + 1; i < end; i++)
				{
					size_t v = order[i];
					uint64_t j = i;

					while (j > start && child[order[j - 1]] > child[v])
					{
						order[j] = order[j - 1];
						j--;
					}
					order[j] = v;
				}
			}
			start = end;
		}
	}
	/* F->P: count per child, then fill in (fk, child) order: per child the
	 * parents appear by ascending FK index */
	for (size_t i = 0; i < nedges; i++)
		snap->fp_off[child[order[i]] + 1]++;
	for (uint32_t r = 0; r < n; r++)
		snap->fp_off[r + 1] += snap->fp_off[r];
	memcpy(cursor, snap->fp_off, sizeof(uint64_t) * ((size_t) n + 1));
	for (size_t i = 0; i < nedges; i++)
	{
		size_t e = order[i];
		uint64_t p = cursor[child[e]]++;

		snap->fp_dst[p] = parent[e];
		snap->fp_fk[p] = fk[e];
	}
	/* P->F: per parent, children grouped by FK then ascending child */
	for (size_t i = 0; i < nedges; i++)
		snap->pf_off[parent[order[i]] + 1]++;
	for (uint32_t r = 0; r < n; r++)
		snap->pf_off[r + 1] += snap->pf_off[r];
	memcpy(cursor, snap->pf_off, sizeof(uint64_t) * ((size_t) n + 1));
	for (size_t i = 0; i < nedges; i++)
	{
		size_t e = order[i];
		uint64_t p = cursor[parent[e]]++;

		snap->pf_dst[p] = child[e];
		snap->pf_fk[p] = fk[e];
	}
	free(fkcount);
	free(order);
	free(cursor);
	return HW_OK;
}

/* ------------------------------------------------------------ serialization */

typedef struct Wbuf
{
	uint8_t *p;
	size_t   len, cap;
	bool     oom;
	bool     count_only;	/* first pass: only add up the size */
} Wbuf;

static void
w_bytes(Wbuf *w, const void *src, size_t n)
{
	if (w->oom || n == 0)
		return;
	if (w->count_only)
	{
		w->len += n;
		return;
	}
	if (w->len + n > w->cap)
	{
		size_t ncap = w->cap ? w->cap : 4096;

		while (ncap < w->len + n)
			ncap *= 2;
		uint8_t *np = realloc(w->p, ncap);

		if (!np)
		{
			w->oom = true;
			return;
		}
		w->p = np;
		w->cap = ncap;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

#define W_SCALAR(w, v) do { __typeof__(v) _v = (v); w_bytes((w), &_v, sizeof(_v)); } while (0)

static void
w_str(Wbuf *w, const char *s)
{
	uint32_t n = s ? (uint32_t) strlen(s) : 0;

	W_SCALAR(w, n);
	w_bytes(w, s, n);
}

/* an optional array: u8 present flag, then n*elem bytes */
static void
w_opt(Wbuf *w, const void *arr, size_t nbytes)
{
	uint8_t present = arr != NULL;

	W_SCALAR(w, present);
	if (present)
		w_bytes(w, arr, nbytes);
}

static void serialize_into(const HwSnapshot *snap, Wbuf *w);

int
snapshot_serialize(const HwSnapshot *snap, uint8_t **out, size_t *out_len, HwError *err)
{
	Wbuf w = {0};

	*out = NULL;
	*out_len = 0;
	/* two passes: count, then copy into one exact allocation (a growing
	 * buffer would copy a large snapshot several times) */
	w.count_only = true;
	serialize_into(snap, &w);
	w.cap = w.len;
	w.len = 0;
	w.count_only = false;
	w.p = malloc(w.cap ? w.cap : 1);
	if (w.p == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory serializing the snapshot (%zu bytes)", w.cap);
	serialize_into(snap, &w);
	if (w.oom)
	{
		free(w.p);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory serializing the snapshot");
	}
	*out = w.p;
	*out_len = w.len;
	return HW_OK;
}

static void
serialize_into(const HwSnapshot *snap, Wbuf *wp)
{
	Wbuf w = *wp;
	uint32_t version = HW_SNAPSHOT_FORMAT_VERSION, reserved = 0;

	w_bytes(&w, HW_SNAP_MAGIC, 8);
	W_SCALAR(&w, version);
	W_SCALAR(&w, reserved);
	W_SCALAR(&w, snap->ntables);
	W_SCALAR(&w, snap->nfks);
	W_SCALAR(&w, snap->nrows);
	W_SCALAR(&w, snap->d_text);
	W_SCALAR(&w, snap->ncolumns);
	W_SCALAR(&w, snap->ncat);
	W_SCALAR(&w, snap->ntext);
	W_SCALAR(&w, snap->ts_mean_us);
	W_SCALAR(&w, snap->ts_std_us);
	for (int32_t t = 0; t < snap->ntables; t++)
	{
		const HwTable *tb = &snap->tables[t];

		w_str(&w, tb->name);
		W_SCALAR(&w, tb->nrows);
		W_SCALAR(&w, tb->row_offset);
		W_SCALAR(&w, tb->ncols);
		W_SCALAR(&w, tb->time_col);
		w_opt(&w, tb->key_hash, sizeof(uint64_t) * tb->nrows);
		w_opt(&w, tb->key_order, sizeof(uint32_t) * tb->nrows);
		for (int32_t c = 0; c < tb->ncols; c++)
		{
			const HwColumn *col = &tb->cols[c];

			w_str(&w, col->name);
			W_SCALAR(&w, col->global_id);
			W_SCALAR(&w, col->stype);
			W_SCALAR(&w, col->null_count);
			W_SCALAR(&w, col->mean);
			W_SCALAR(&w, col->std);
			W_SCALAR(&w, col->min);
			W_SCALAR(&w, col->max);
			W_SCALAR(&w, col->cat_emb_start);
			W_SCALAR(&w, col->cat_emb_count);
			w_opt(&w, col->valid, tb->nrows);
			w_opt(&w, col->f32, sizeof(float) * tb->nrows);
			w_opt(&w, col->i64, sizeof(int64_t) * tb->nrows);
			w_opt(&w, col->u8, tb->nrows);
			w_opt(&w, col->u32, sizeof(uint32_t) * tb->nrows);
		}
	}
	for (int32_t f = 0; f < snap->nfks; f++)
	{
		w_str(&w, snap->fks[f].name);
		W_SCALAR(&w, snap->fks[f].child_table);
		W_SCALAR(&w, snap->fks[f].parent_table);
	}
	w_opt(&w, snap->row_table, sizeof(uint16_t) * snap->nrows);
	w_opt(&w, snap->row_time_us, sizeof(int64_t) * snap->nrows);

	uint64_t nfp = snap->fp_off ? snap->fp_off[snap->nrows] : 0;
	uint64_t npf = snap->pf_off ? snap->pf_off[snap->nrows] : 0;

	W_SCALAR(&w, nfp);
	W_SCALAR(&w, npf);
	w_opt(&w, snap->fp_off, sizeof(uint64_t) * ((size_t) snap->nrows + 1));
	w_opt(&w, snap->fp_dst, sizeof(uint32_t) * nfp);
	w_opt(&w, snap->fp_fk, sizeof(uint16_t) * nfp);
	w_opt(&w, snap->pf_off, sizeof(uint64_t) * ((size_t) snap->nrows + 1));
	w_opt(&w, snap->pf_dst, sizeof(uint32_t) * npf);
	w_opt(&w, snap->pf_fk, sizeof(uint16_t) * npf);
	w_opt(&w, snap->col_emb, sizeof(uint16_t) * (size_t) snap->ncolumns * snap->d_text);
	w_opt(&w, snap->cat_emb, sizeof(uint16_t) * (size_t) snap->ncat * snap->d_text);
	w_opt(&w, snap->text_emb, sizeof(uint16_t) * (size_t) snap->ntext * snap->d_text);
	*wp = w;
}

typedef struct Rbuf
{
	const uint8_t *p;
	size_t len, pos;
	bool   bad;
	bool   oom;
} Rbuf;

static void
r_bytes(Rbuf *r, void *dst, size_t n)
{
	if (r->bad || n > r->len - r->pos)
	{
		r->bad = true;
		if (n)
			memset(dst, 0, n);
		return;
	}
	memcpy(dst, r->p + r->pos, n);
	r->pos += n;
}

#define R_SCALAR(r, v) r_bytes((r), &(v), sizeof(v))

static char *
r_str(Rbuf *r)
{
	uint32_t n = 0;

	R_SCALAR(r, n);
	if (r->bad || n > r->len - r->pos)
	{
		r->bad = true;
		return NULL;
	}
	char *s = malloc((size_t) n + 1);

	if (!s)
	{
		r->oom = r->bad = true;
		return NULL;
	}
	memcpy(s, r->p + r->pos, n);
	s[n] = 0;
	r->pos += n;
	return s;
}

static void *
r_opt(Rbuf *r, size_t nbytes)
{
	uint8_t present = 0;

	R_SCALAR(r, present);
	if (r->bad || !present)
		return NULL;
	if (nbytes > r->len - r->pos)
	{
		r->bad = true;
		return NULL;
	}
	void *a = malloc(nbytes ? nbytes : 1);

	if (!a)
	{
		r->oom = r->bad = true;
		return NULL;
	}
	memcpy(a, r->p + r->pos, nbytes);
	r->pos += nbytes;
	return a;
}

/* One column: its name, statistics and value arrays of nrows each. */
static void
read_column(Rbuf *r, HwColumn *col, uint32_t nrows)
{
	col->name = r_str(r);
	R_SCALAR(r, col->global_id);
	R_SCALAR(r, col->stype);
	R_SCALAR(r, col->null_count);
	R_SCALAR(r, col->mean);
	R_SCALAR(r, col->std);
	R_SCALAR(r, col->min);
	R_SCALAR(r, col->max);
	R_SCALAR(r, col->cat_emb_start);
	R_SCALAR(r, col->cat_emb_count);
	col->valid = r_opt(r, nrows);
	col->f32 = r_opt(r, sizeof(float) * nrows);
	col->i64 = r_opt(r, sizeof(int64_t) * nrows);
	col->u8 = r_opt(r, nrows);
	col->u32 = r_opt(r, sizeof(uint32_t) * nrows);
}

/* One table: its header, key index and columns.  tb->ncols counts the
 * columns filled so far, so snapshot_free frees exactly those on error. */
static void
read_table(Rbuf *r, HwTable *tb)
{
	tb->name = r_str(r);
	R_SCALAR(r, tb->nrows);
	R_SCALAR(r, tb->row_offset);
	R_SCALAR(r, tb->ncols);
	R_SCALAR(r, tb->time_col);
	if (r->bad || tb->ncols < 0 || tb->ncols > 65535 || (uint64_t) tb->nrows > r->len)
	{
		tb->ncols = 0;
		r->bad = true;
		return;
	}
	tb->key_hash = r_opt(r, sizeof(uint64_t) * tb->nrows);
	tb->key_order = r_opt(r, sizeof(uint32_t) * tb->nrows);
	int32_t ncols = tb->ncols;

	tb->cols = calloc(ncols ? ncols : 1, sizeof(HwColumn));
	tb->ncols = 0;
	if (!tb->cols)
	{
		r->oom = r->bad = true;
		return;
	}
	for (int32_t c = 0; c < ncols && !r->bad; c++)
	{
		tb->ncols = c + 1;
		read_column(r, &tb->cols[c], tb->nrows);
	}
}

/* The tables and foreign keys (s->ntables / s->nfks hold the counts read
 * from the header; on return they count what was filled, for
 * snapshot_free on error). */
static void
read_tables_and_fks(Rbuf *r, HwSnapshot *s)
{
	int32_t ntables = s->ntables;
	int32_t nfks = s->nfks;

	s->tables = calloc(s->ntables ? s->ntables : 1, sizeof(HwTable));
	s->fks = calloc(s->nfks ? s->nfks : 1, sizeof(HwForeignKey));
	if (!s->tables || !s->fks)
		r->oom = r->bad = true;
	s->ntables = 0;
	for (int32_t t = 0; t < ntables && !r->bad; t++)
	{
		s->ntables = t + 1;
		read_table(r, &s->tables[t]);
	}
	s->nfks = 0;
	for (int32_t f = 0; f < nfks && !r->bad; f++)
	{
		s->nfks = f + 1;
		s->fks[f].name = r_str(r);
		R_SCALAR(r, s->fks[f].child_table);
		R_SCALAR(r, s->fks[f].parent_table);
		if (s->fks[f].child_table < 0 || s->fks[f].child_table >= ntables ||
			s->fks[f].parent_table < 0 || s->fks[f].parent_table >= ntables)
			r->bad = true;
	}
}

/* The per-row arrays, the two CSR edge indexes (their edge counts into
 * *nfp, *npf) and the embeddings; counts are bounded by the buffer's size
 * before anything is allocated by them. */
static void
read_rows_edges_embeddings(Rbuf *r, HwSnapshot *s, uint64_t *nfp, uint64_t *npf)
{
	if ((uint64_t) s->nrows > r->len)
		r->bad = true;
	s->row_table = r_opt(r, sizeof(uint16_t) * s->nrows);
	s->row_time_us = r_opt(r, sizeof(int64_t) * s->nrows);
	R_SCALAR(r, *nfp);
	R_SCALAR(r, *npf);
	if (*nfp > r->len || *npf > r->len)
		r->bad = true;
	s->fp_off = r_opt(r, sizeof(uint64_t) * ((size_t) s->nrows + 1));
	s->fp_dst = r_opt(r, sizeof(uint32_t) * *nfp);
	s->fp_fk = r_opt(r, sizeof(uint16_t) * *nfp);
	s->pf_off = r_opt(r, sizeof(uint64_t) * ((size_t) s->nrows + 1));
	s->pf_dst = r_opt(r, sizeof(uint32_t) * *npf);
	s->pf_fk = r_opt(r, sizeof(uint16_t) * *npf);
	if ((uint64_t) s->ncolumns * s->d_text > r->len || (uint64_t) s->ncat * s->d_text > r->len ||
		(uint64_t) s->ntext * s->d_text > r->len)
		r->bad = true;
	s->col_emb = r_opt(r, sizeof(uint16_t) * (size_t) s->ncolumns * s->d_text);
	s->cat_emb = r_opt(r, sizeof(uint16_t) * (size_t) s->ncat * s->d_text);
	s->text_emb = r_opt(r, sizeof(uint16_t) * (size_t) s->ntext * s->d_text);
}

/* The header's counts; false if they are out of bounds (checked before
 * anything is allocated by them). */
static bool
read_counts(Rbuf *r, HwSnapshot *s)
{
	R_SCALAR(r, s->ntables);
	R_SCALAR(r, s->nfks);
	R_SCALAR(r, s->nrows);
	R_SCALAR(r, s->d_text);
	R_SCALAR(r, s->ncolumns);
	R_SCALAR(r, s->ncat);
	R_SCALAR(r, s->ntext);
	R_SCALAR(r, s->ts_mean_us);
	R_SCALAR(r, s->ts_std_us);
	return !(r->bad || s->ntables < 0 || s->ntables > 65535 || s->nfks < 0 || s->nfks > 65535 ||
			 s->d_text < 0 || s->d_text > 65536 || s->ncolumns < 0);
}

int
snapshot_deserialize(const uint8_t *buf, size_t len, HwSnapshot **out, HwError *err)
{
	Rbuf r = {buf, len, 0, false, false};
	char magic[8];
	uint32_t version = 0, reserved = 0;

	*out = NULL;
	r_bytes(&r, magic, 8);
	if (r.bad || memcmp(magic, HW_SNAP_MAGIC, 8) != 0)
		return hw_error_set(err, HW_ERR_CORRUPT, "not a headwater snapshot (bad magic, %zu bytes)", len);
	R_SCALAR(&r, version);
	R_SCALAR(&r, reserved);
	if (version != HW_SNAPSHOT_FORMAT_VERSION)
		return hw_error_set(err, HW_ERR_CORRUPT,
							"snapshot format version %u, this build reads version %d",
							version, HW_SNAPSHOT_FORMAT_VERSION);

	HwSnapshot *s = calloc(1, sizeof(HwSnapshot));

	if (!s)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory loading the snapshot");
	if (!read_counts(&r, s))
	{
		int32_t nt = s->ntables;

		s->ntables = 0;
		s->nfks = 0;
		snapshot_free(s);
		return hw_error_set(err, HW_ERR_CORRUPT, "snapshot header malformed (%d tables)", nt);
	}
	read_tables_and_fks(&r, s);

	uint64_t nfp = 0, npf = 0;

	if (!r.bad)
		read_rows_edges_embeddings(&r, s, &nfp, &npf);
	if (!r.bad && r.pos != r.len)
		r.bad = true;
	/* structural checks a sampler relies on */
	if (!r.bad && s->fp_off && (s->fp_off[s->nrows] != nfp))
		r.bad = true;
	if (!r.bad && s->pf_off && (s->pf_off[s->nrows] != npf))
		r.bad = true;
	if (r.bad)
	{
		bool oom = r.oom;

		snapshot_free(s);
		if (oom)
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory loading the snapshot");
		return hw_error_set(err, HW_ERR_CORRUPT, "snapshot truncated or malformed (%zu bytes)", len);
	}
	*out = s;
	return HW_OK;
}
