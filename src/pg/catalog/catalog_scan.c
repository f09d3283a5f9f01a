/*
 * catalog_scan.c: reading every source table once, as the calling role:
 * one cursor per table in key order, values taken as binary Datums into
 * the build's per-column arrays, statistics gathered on the way.
 */
#include "postgres.h"

#include "pg/catalog/catalog_build_priv.h"

/* ------------------------------------------------------------- scan */

static void
grow_table(TabB *tb, uint32 need)
{
	if (need <= tb->cap)
		return;
	uint64 nc = tb->cap ? (uint64) tb->cap * 2 : 1024;

	while (nc < need)
		nc *= 2;
	if (nc > UINT32_MAX)
		nc = UINT32_MAX;
	for (int c = 0; c < tb->ncols; c++)
	{
		ColB *col = &tb->cols[c];

		if (col->kind == K_NONE)
			continue;
		col->valid = hw_build_xrealloc(col->valid, nc);
		if (col->kind == K_F8)
			col->f8 = hw_build_xrealloc(col->f8, sizeof(double) * nc);
		else if (col->kind == K_TS)
			col->i64 = hw_build_xrealloc(col->i64, sizeof(int64) * nc);
		else if (col->kind == K_BOOL)
			col->u8 = hw_build_xrealloc(col->u8, nc);
		else if (col->kind == K_TEXT)
			col->u32 = hw_build_xrealloc(col->u32, sizeof(uint32) * nc);
	}
	for (int k = 0; k < tb->nkeys; k++)
		tb->keys[k].hash = hw_build_xrealloc(tb->keys[k].hash, sizeof(uint64) * nc);
	tb->cap = (uint32) nc;
}

static void
seed_enum_labels(ColB *col)
{
	/* enum categories: every label, in the enum's sort order */
	Oid argt = OIDOID;
	Datum arg = ObjectIdGetDatum(col->basetyp);

	if (SPI_execute_with_args("SELECT enumlabel::pg_catalog.text FROM pg_catalog.pg_enum WHERE enumtypid OPERATOR(pg_catalog.=) $1 "
							  "ORDER BY enumsortorder",
							  1, &argt, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "enum lookup failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char *l = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		uint32 id;

		hw_build_nomem_check(hw_strmap_intern(col->map, l, strlen(l), &id));
	}
	col->enum_seeded = true;
}

/*
 * The scan: one query per table whose rows go straight to a DestReceiver
 * (no tuple copies into an SPI tuptable).  Key columns are selected raw and
 * their canonical key text is made here from the type's output function
 * (integers by a fast path with the same digits), exactly what
 * rt_predict / the task loader compute for a key value.
 */
typedef struct RawCol
{
	int16		att;
	int			sel;
	Oid			typ;			/* base type */
	FmgrInfo	out;
	bool		fast_int;		/* int2/int4/int8: pg_lltoa */
	bool		varlena_text;	/* text/varchar/bpchar: bytes as they are */
} RawCol;

typedef struct ScanReceiver
{
	DestReceiver pub;
	Build	   *b;
	TabB	   *tb;
	int			nraw;
	RawCol	   *raw;
	int		   *key_raw;		/* [nkeys][ncols] index into raw, flattened by key start */
	int		   *key_start;
	StringInfoData kb;
	MemoryContext rowcxt;
} ScanReceiver;

/* distinct values of an integer code candidate, up to CODE_MAX_DISTINCT
 * (a linear search: at most 32 compares per row) */
static inline void
code_track_value(ColB *col, double v)
{
	for (int i = 0; i < col->ncode; i++)
		if (col->code_vals[i] == v)
			return;
	if (col->ncode == CODE_MAX_DISTINCT || fabs(v) >= 9007199254740992.0)	/* 2^53: not exact */
		col->code_over = true;
	else
		col->code_vals[col->ncode++] = v;
}

/* A float8 value of row r: NaN and infinities are counted and left NULL;
 * mean and variance by Welford's method (stable, one pass). */
static void
scan_float8(ColB *col, uint32 r, Datum d)
{
	double v = DatumGetFloat8(d);

	if (isnan(v) || isinf(v))
	{
		col->valid[r] = 0;
		col->bad_values++;
		return;
	}
	col->f8[r] = v;
	col->nonnull++;
	if (col->code_track && !col->code_over)
		code_track_value(col, v);
	double delta = v - col->mean;

	col->mean += delta / col->nonnull;
	col->m2 += delta * (v - col->mean);
	if (col->nonnull == 1 || v < col->min)
		col->min = v;
	if (col->nonnull == 1 || v > col->max)
		col->max = v;
}

/* A timestamp of row r (µs since 1970): infinities are counted and left
 * NULL; the snapshot-wide mean and variance of times by Welford's method. */
static void
scan_timestamp(Build *b, ColB *col, uint32 r, Datum d)
{
	Timestamp ts = DatumGetTimestamp(d);

	if (TIMESTAMP_NOT_FINITE(ts))
	{
		col->valid[r] = 0;
		col->bad_values++;
		return;
	}
	int64 us = ts + EPOCH_2000_US;

	col->i64[r] = us;
	col->nonnull++;
	if (col->nonnull == 1 || us < col->min)
		col->min = (double) us;
	if (col->nonnull == 1 || us > col->max)
		col->max = (double) us;
	b->ts_n++;
	double delta = (double) us - b->ts_mean;

	b->ts_mean += delta / b->ts_n;
	b->ts_m2 += delta * ((double) us - b->ts_mean);
}

/* A text value of row r, interned (cut to what the embedder reads). */
static void
scan_text(ColB *col, uint32 r, Datum d)
{
	text *tx = (text *) PG_DETOAST_DATUM_PACKED(d);
	const char *str = VARDATA_ANY(tx);
	size_t len = VARSIZE_ANY_EXHDR(tx);
	size_t cut = hw_utf8_truncate_len(str, len, HW_EMBED_MAX_BYTES);
	uint32 id;

	if (cut < len)
		col->truncated++;
	hw_build_nomem_check(hw_strmap_intern(col->map, str, cut, &id));
	col->u32[r] = id;
	col->nonnull++;
}

/* The value of column col in row r, by the kind of value it keeps. */
static void
scan_cell(Build *b, ColB *col, uint32 r, Datum d, bool nul)
{
	if (nul)
	{
		col->valid[r] = 0;
		return;
	}
	col->valid[r] = 1;
	switch (col->kind)
	{
		case K_VALID:
			col->nonnull++;
			break;
		case K_F8:
			scan_float8(col, r, d);
			break;
		case K_TS:
			scan_timestamp(b, col, r, d);
			break;
		case K_BOOL:
			col->u8[r] = DatumGetBool(d) ? 1 : 0;
			col->ntrue += col->u8[r];
			col->nonnull++;
			break;
		case K_TEXT:
			scan_text(col, r, d);
			break;
		default:
			break;
	}
}

/* One key column's value as key text (integers and text without the
 * output function: the common keys, on the hot path). */
static void
append_key_part(StringInfo kb, RawCol *rc, Datum d)
{
	if (rc->fast_int)
	{
		char buf[24];
		int64 v = rc->typ == INT2OID ? DatumGetInt16(d) : rc->typ == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
		int n = pg_lltoa(v, buf);

		appendBinaryStringInfo(kb, buf, n);
	}
	else if (rc->varlena_text)
	{
		text *tx = (text *) PG_DETOAST_DATUM_PACKED(d);

		appendBinaryStringInfo(kb, VARDATA_ANY(tx), VARSIZE_ANY_EXHDR(tx));
	}
	else
		appendStringInfoString(kb, OutputFunctionCall(&rc->out, d));
}

/* Hash of key k of the row (its columns' text joined by \x1f); 0 if a
 * key column is NULL. */
static uint64
row_key_hash(ScanReceiver *sr, int k, Datum *values, bool *nulls)
{
	KeyB *key = &sr->tb->keys[k];

	resetStringInfo(&sr->kb);
	for (int i = 0; i < key->ncols; i++)
	{
		RawCol *rc = &sr->raw[sr->key_raw[sr->key_start[k] + i]];

		if (nulls[rc->sel])
			return 0;
		if (i > 0)
			appendStringInfoChar(&sr->kb, '\x1f');
		append_key_part(&sr->kb, rc, values[rc->sel]);
	}
	return hw_hash_key_text(sr->kb.data, sr->kb.len);
}

/* One row of the table scan: each kept column's value, each key's hash. */
static void
scan_row(ScanReceiver *sr, Datum *values, bool *nulls)
{
	TabB *tb = sr->tb;

	if (tb->nrows == tb->cap)
	{
		if (tb->nrows >= UINT32_MAX - 1)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("table \"%s\" has too many rows for one snapshot", tb->name)));
		grow_table(tb, tb->nrows + 1);
	}
	uint32 r = tb->nrows++;

	for (int c = 0; c < tb->ncols; c++)
	{
		ColB *col = &tb->cols[c];

		if (col->kind != K_NONE)
			scan_cell(sr->b, col, r, values[col->sel], nulls[col->sel]);
	}
	for (int k = 0; k < tb->nkeys; k++)
		tb->keys[k].hash[r] = row_key_hash(sr, k, values, nulls);
}

static bool
scan_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ScanReceiver *sr = (ScanReceiver *) self;
	MemoryContext old = MemoryContextSwitchTo(sr->rowcxt);

	slot_getallattrs(slot);
	scan_row(sr, slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(old);
	if ((sr->tb->nrows & 1023) == 0)
	{
		/* detoasted copies and output strings of the last 1024 rows */
		MemoryContextReset(sr->rowcxt);
		CHECK_FOR_INTERRUPTS();
	}
	return true;
}

static void scan_startup(DestReceiver *self, int operation, TupleDesc typeinfo) {}
static void scan_shutdown(DestReceiver *self) {}
static void scan_destroy(DestReceiver *self) {}

static int
raw_slot(ScanReceiver *sr, StringInfo q, int *nsel, TabB *tb, int16 att)
{
	for (int i = 0; i < sr->nraw; i++)
		if (sr->raw[i].att == att)
			return i;
	ColB *col = &tb->cols[hw_build_find_col_att(tb, att)];
	RawCol *rc = &sr->raw[sr->nraw];
	Oid outfn;
	bool isvarlena;

	rc->att = att;
	rc->typ = col->basetyp;
	rc->fast_int = rc->typ == INT2OID || rc->typ == INT4OID || rc->typ == INT8OID;
	rc->varlena_text = rc->typ == TEXTOID || rc->typ == VARCHAROID || rc->typ == BPCHAROID;
	getTypeOutputInfo(rc->typ, &outfn, &isvarlena);
	fmgr_info(outfn, &rc->out);
	if (col->kind == K_VALID)
		rc->sel = col->sel;		/* the identifier's own slot is the raw column */
	else
	{
		rc->sel = (*nsel)++;
		appendStringInfo(q, "%shw_src.%s", rc->sel ? ", " : "", quote_identifier(col->name));
	}
	return sr->nraw++;
}

void
hw_build_scan_table(Build *b, int t)
{
	TabB *tb = &b->tabs[t];
	StringInfoData q;
	int nsel = 0, nkeycols = 0;
	ScanReceiver *sr = palloc0(sizeof(ScanReceiver));
	SPIExecuteOptions opts;
	int rc;

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT ");
	for (int c = 0; c < tb->ncols; c++)
	{
		ColB *col = &tb->cols[c];
		char *e = hw_build_value_expr(b, tb, col, col->stype);

		if (e == NULL)
			continue;
		/* an integer code candidate scanned as a number: count its values */
		col->code_track = col->inferred == INFER_INT_CODE && col->kind == K_F8;
		if (col->kind == K_VALID)
			e = psprintf("hw_src.%s", quote_identifier(col->name));	/* presence = not NULL */
		col->sel = nsel++;
		appendStringInfo(&q, "%s%s", col->sel ? ", " : "", e);
		if (col->kind == K_TEXT)
		{
			col->map = hw_strmap_new();
			if (!col->map)
				hw_build_nomem_check(HW_ERR_NOMEM);
			if (col->typtype == TYPTYPE_ENUM && col->stype == HW_ST_CATEGORICAL)
				seed_enum_labels(col);
		}
	}
	for (int k = 0; k < tb->nkeys; k++)
		nkeycols += tb->keys[k].ncols;
	sr->raw = palloc0(sizeof(RawCol) * (nkeycols + 1));
	sr->key_raw = palloc(sizeof(int) * (nkeycols + 1));
	sr->key_start = palloc(sizeof(int) * (tb->nkeys + 1));
	nkeycols = 0;
	for (int k = 0; k < tb->nkeys; k++)
	{
		sr->key_start[k] = nkeycols;
		for (int i = 0; i < tb->keys[k].ncols; i++)
			sr->key_raw[nkeycols++] = raw_slot(sr, &q, &nsel, tb, tb->keys[k].att[i]);
	}
	if (nsel == 0)
		appendStringInfoString(&q, "NULL::pg_catalog.int4");
	/* ORDER BY names are qualified with the alias: a bare name would match
	 * an output column first */
	appendStringInfo(&q, " FROM %s AS hw_src ORDER BY ", hw_build_qname(b, tb->name));
	if (tb->pk_key >= 0)
	{
		KeyB *pk = &tb->keys[tb->pk_key];

		for (int i = 0; i < pk->ncols; i++)
			appendStringInfo(&q, "%shw_src.%s", i ? ", " : "", quote_identifier(tb->cols[hw_build_find_col_att(tb, pk->att[i])].name));
	}
	else
		appendStringInfoString(&q, "hw_src.tableoid, hw_src.ctid");

	sr->pub.receiveSlot = scan_receive;
	sr->pub.rStartup = scan_startup;
	sr->pub.rShutdown = scan_shutdown;
	sr->pub.rDestroy = scan_destroy;
	sr->pub.mydest = DestNone;
	sr->b = b;
	sr->tb = tb;
	initStringInfo(&sr->kb);
	sr->rowcxt = AllocSetContextCreate(CurrentMemoryContext, "headwater scan rows", ALLOCSET_DEFAULT_SIZES);
	grow_table(tb, 1024);
	memset(&opts, 0, sizeof(opts));
	opts.read_only = true;
	opts.dest = (DestReceiver *) sr;
	rc = SPI_execute_extended(q.data, &opts);
	/* a SELECT into a DestNone receiver reports SPI_OK_UTILITY */
	if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
		elog(ERROR, "scan of table \"%s\" failed: %s", tb->name, SPI_result_code_string(rc));
	MemoryContextDelete(sr->rowcxt);
	pfree(q.data);
}
