/*
 * snapshot.h: the compact, read-only form of a source schema that the
 * sampler walks (docs/catalog.md).  Plain C, no PostgreSQL.
 *
 * Index spaces
 *   table index   0..ntables-1
 *   global row    0..nrows-1; table t owns rows [tables[t].row_offset, +nrows)
 *   global column 0..ncolumns-1: index into col_emb (one per non-ignored
 *                 column of every table, in table order, then column order)
 *   categorical   0..ncat-1: index into cat_emb; each categorical column owns
 *                 the block [cat_emb_start, cat_emb_start + cat_emb_count)
 *   text          0..ntext-1: index into text_emb (deduplicated strings)
 *
 * Ownership: a snapshot built by snapshot_builder_* or loaded by
 * snapshot_deserialize owns all its arrays; snapshot_free releases them.
 *
 * Serialized form (snapshot_serialize): a little-endian byte string that
 * starts with the magic "HWSNAP" and HW_SNAPSHOT_FORMAT_VERSION; a reader of
 * another version fails with HW_ERR_CORRUPT and says which versions differ.
 */
#ifndef HW_SNAPSHOT_H
#define HW_SNAPSHOT_H

#include "core/hw_common.h"

#define HW_SNAPSHOT_FORMAT_VERSION 1

typedef struct HwColumn
{
	char     *name;
	int32_t   global_id;        /* index into col_emb; -1 when stype is IGNORED */
	int8_t    stype;            /* HwSemanticType */
	/* Values, one slot per row of the owning table; only the slot of the
	 * column's stype is allocated, the others are NULL. */
	uint8_t  *valid;            /* [nrows] 1 = not NULL */
	float    *f32;              /* NUMERICAL: z-scored value (mean/std below) */
	int64_t  *i64;              /* TIMESTAMP: epoch microseconds (UTC) */
	uint8_t  *u8;               /* BOOLEAN: 0/1 */
	uint32_t *u32;              /* CATEGORICAL: global category index; TEXT: global text index */
	/* Statistics (computed over non-NULL values). */
	int64_t   null_count;
	double    mean, std;        /* NUMERICAL; std 0 stored as 1 */
	double    min, max;         /* NUMERICAL and TIMESTAMP (µs) */
	uint32_t  cat_emb_start;    /* CATEGORICAL */
	uint32_t  cat_emb_count;
} HwColumn;

typedef struct HwTable
{
	char     *name;
	uint32_t  nrows;
	uint32_t  row_offset;       /* first global row of this table */
	int32_t   ncols;
	HwColumn *cols;             /* [ncols], source column order, ignored ones included */
	int32_t   time_col;         /* index into cols of the time column, -1 if none */
	/* Row lookup by primary key (NULL when the table has no PK): key_hash[r]
	 * is hw_hash_key_text() of the row's canonical key text (each PK column's
	 * text output, joined by 0x1f, in PK column order); key_order lists local
	 * rows sorted by key_hash so snapshot_find_row() is a binary search. */
	uint64_t *key_hash;         /* [nrows] */
	uint32_t *key_order;        /* [nrows] */
} HwTable;

typedef struct HwForeignKey
{
	char     *name;             /* constraint name */
	int32_t   child_table;      /* table holding the FK columns (F) */
	int32_t   parent_table;     /* referenced table (P) */
} HwForeignKey;

typedef struct HwSnapshot
{
	int32_t       ntables;
	HwTable      *tables;
	int32_t       nfks;
	HwForeignKey *fks;

	uint32_t      nrows;
	uint16_t     *row_table;    /* [nrows] table index of each global row */
	int64_t      *row_time_us;  /* [nrows] the row's time, HW_NO_TIME if its table has none or it is NULL */

	/* CSR F->P: parents of row r are fp_dst[fp_off[r] .. fp_off[r+1]) via FK fp_fk[] */
	uint64_t     *fp_off;       /* [nrows+1] */
	uint32_t     *fp_dst;       /* [n_fp_edges] global row ids */
	uint16_t     *fp_fk;        /* [n_fp_edges] FK index */
	/* CSR P->F: children of row r, grouped by FK index, ascending child row */
	uint64_t     *pf_off;       /* [nrows+1] */
	uint32_t     *pf_dst;       /* [n_pf_edges] */
	uint16_t     *pf_fk;        /* [n_pf_edges] */

	/* Frozen embeddings, IEEE half, row-major [n, d_text]. */
	int32_t       d_text;
	int32_t       ncolumns;     /* global (non-ignored) columns */
	uint16_t     *col_emb;      /* [ncolumns, d_text] */
	uint32_t      ncat;
	uint16_t     *cat_emb;      /* [ncat, d_text] */
	uint32_t      ntext;
	uint16_t     *text_emb;     /* [ntext, d_text] */

	double        ts_mean_us;   /* database-wide timestamp mean / std (µs), for z-scoring */
	double        ts_std_us;
} HwSnapshot;

void snapshot_free(HwSnapshot *snap);

/* Serialize into a malloc'd buffer (*out, *out_len).  Returns HW_OK or an error. */
int snapshot_serialize(const HwSnapshot *snap, uint8_t **out, size_t *out_len, HwError *err);
/* Parse a buffer produced by snapshot_serialize into a new snapshot. */
int snapshot_deserialize(const uint8_t *buf, size_t len, HwSnapshot **out, HwError *err);

/* Global column id -> (table, column) lookup; returns false if out of range. */
bool snapshot_column_by_global_id(const HwSnapshot *snap, int32_t global_id,
								  int32_t *table, int32_t *col);

/* Global row id of the row of `table` whose canonical key text hashes to
 * key_hash; -1 when absent or the table has no PK. */
int64_t snapshot_find_row(const HwSnapshot *snap, int32_t table, uint64_t key_hash);

#endif /* HW_SNAPSHOT_H */
