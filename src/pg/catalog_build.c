/*
 * catalog_build.c: one build of a model: discover the schema through
 * pg_catalog, scan every table once, type the columns, gather statistics,
 * embed, assemble the snapshot and persist everything (rt_create_model,
 * rt_refresh and the override functions all end here).
 *
 * Design notes
 * - Reads run through SPI as the calling role: pg_catalog queries and one
 *   cursor per source table, fetched in batches of SCAN_BATCH rows, values
 *   taken as binary Datums (no per-row SQL, no per-cell text parsing except
 *   for categorical/text cells).
 * - Row order: ORDER BY the primary key; tables without one are numbered by
 *   ORDER BY tableoid, ctid (physical order; stable until the table is
 *   rewritten).  Partitions are read through their parent.
 * - Row lookup keys: canonical key text = each PK column's ::text joined by
 *   0x1f, hashed with hw_hash_key_text (snapshot.h).  FK edges are resolved
 *   the same way: the child's FK columns and the parent's referenced columns
 *   give the same key text, so an edge is a hash lookup (no SQL join).
 * - Everything per row lives in malloc'd arrays that a reset callback on the
 *   build context frees, so an ERROR anywhere leaks nothing.
 */
#include "postgres.h"

#include <math.h>
#include <sys/resource.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "tcop/dest.h"
#include "executor/tuptable.h"
#include "portability/instr_time.h"

#include "hw_pg.h"
#include "catalog_priv.h"
#include "catalog_build.h"
#include "embed_hash.h"
#include "name_rules.h"
#include "snapshot_build.h"
#include "snapshot_strmap.h"

#define SCAN_BATCH        20000		/* rows per cursor fetch */
#define CAT_MAX_DISTINCT  100		/* text with at most this many distinct values ... */
									/* ... and at most half as many as non-NULL rows is categorical */
#define CODE_MAX_DISTINCT 32		/* an integer with a code-like name and at most this many distinct values ... */
									/* ... and at most half as many as non-NULL rows is categorical */
#define INFER_TEXT_LIKE   (-1)		/* inferred: categorical or text, decided after the scan */
#define INFER_INT_CODE    (-2)		/* inferred: categorical, or numerical/identifier, decided after the scan */
#define EMBED_FN_BATCH    256		/* texts per call of a user embedding function */
#define EPOCH_2000_US     INT64CONST(946684800000000)	/* 2000-01-01 - 1970-01-01 in µs */

/* how a column's value is taken from the scan */
typedef enum
{
	K_NONE = 0,					/* not selected */
	K_VALID,					/* identifier: presence only */
	K_F8,						/* numerical: float8 */
	K_TS,						/* timestamp: int64 µs since 2000 */
	K_BOOL,
	K_TEXT						/* categorical or text: text */
} ValueKind;

typedef struct ColB
{
	char	   *name;
	int16		attnum;
	Oid			basetyp;
	char		typtype;
	char		typcat;
	char	   *sqltype;
	char	   *comment;
	bool		is_pk, is_fk;
	char	   *fk_target;
	int			inferred;		/* HwSemanticType, or INFER_TEXT_LIKE / INFER_INT_CODE until after the scan */
	int			stype;			/* final */
	bool		overridden;
	const char *ignore_reason;
	char	   *why;			/* why inference chose `inferred` ("categorical: integer code (...)") */
	char	   *time_note;		/* timestamp columns: why it is or is not the time column */
	/* integer code candidates: distinct values seen, up to CODE_MAX_DISTINCT */
	bool		code_track;
	bool		code_over;		/* more than CODE_MAX_DISTINCT, or a value not exact in float8 */
	int			ncode;
	double		code_vals[CODE_MAX_DISTINCT];
	int			sel;			/* select-list position, -1 none */
	ValueKind	kind;
	/* per-row values (malloc) */
	uint8	   *valid;
	double	   *f8;
	int64	   *i64;
	uint8	   *u8;
	uint32	   *u32;
	HwStrMap   *map;
	bool		enum_seeded;
	/* statistics */
	int64		nonnull, bad_values, truncated, ntrue;
	double		mean, m2, min, max;
	/* categorical result */
	uint32		cat_start, cat_count;
	int32		global_id;
} ColB;

typedef struct KeyB
{
	int			ncols;
	int16	   *att;			/* attnums, in key order */
	char	   *sql;
	int			sel;
	uint64	   *hash;			/* [nrows] (malloc); 0 for a NULL key */
	uint32	   *order;			/* PK only: rows sorted by hash (malloc), built after the scan */
	/* hash index for FK resolution (malloc, open addressing): slot -> row */
	uint64	   *ht_hash;
	uint32	   *ht_row;			/* UINT32_MAX = empty */
	uint64		ht_mask;
} KeyB;

typedef struct TabB
{
	Oid			relid;
	char	   *name;
	int			ncols;
	ColB	   *cols;
	int			pk_key;			/* index in keys, -1 without PK */
	int			nkeys;
	KeyB		keys[64];
	uint32		nrows, cap;
	int			time_col;
	char	   *time_reason;	/* "time column: ..." / "no time column: ..." */
	bool		has_fk_out;		/* declares an FK to another table (inside the schema or not) */
} TabB;

typedef struct FkB
{
	char	   *name;
	int			child, parent;
	int			nkeys;
	int16	   *catt, *patt;
	int			ckey, pkey;		/* key exprs in child / parent */
	int64		nedges;
} FkB;

typedef struct Build
{
	MemoryContext cxt;
	const char *model;
	const char *schema;
	Oid			nsp;
	/* options */
	char	   *embedder;		/* "hash" or a function name */
	int			d_text;
	bool		embed_text;
	/* discovered */
	int			ntables;
	TabB	   *tabs;
	int			nfks;
	FkB		   *fks;
	/* results */
	HwStrMap   *texts;			/* global distinct text cells */
	uint32		ncat;
	int32		ncolumns;
	size_t		nedges, edges_cap;
	uint32	   *e_child, *e_parent;
	uint16	   *e_fk;
	HwSnapshot *snap;
	double		ts_mean, ts_m2;
	int64		ts_n;
} Build;

/* ------------------------------------------------------------- cleanup */

static void
build_cleanup(void *arg)
{
	Build *b = (Build *) arg;

	for (int t = 0; t < b->ntables; t++)
	{
		TabB *tb = &b->tabs[t];

		for (int c = 0; c < tb->ncols; c++)
		{
			ColB *col = &tb->cols[c];

			free(col->valid); free(col->f8); free(col->i64); free(col->u8); free(col->u32);
			hw_strmap_free(col->map);
			col->valid = NULL; col->f8 = NULL; col->i64 = NULL; col->u8 = NULL; col->u32 = NULL;
			col->map = NULL;
		}
		for (int k = 0; k < tb->nkeys; k++)
		{
			free(tb->keys[k].hash);
			free(tb->keys[k].order);
			free(tb->keys[k].ht_hash);
			free(tb->keys[k].ht_row);
			tb->keys[k].hash = NULL;
			tb->keys[k].order = NULL;
			tb->keys[k].ht_hash = NULL;
			tb->keys[k].ht_row = NULL;
		}
	}
	hw_strmap_free(b->texts);
	b->texts = NULL;
	free(b->e_child); free(b->e_parent); free(b->e_fk);
	b->e_child = NULL; b->e_parent = NULL; b->e_fk = NULL;
	snapshot_free(b->snap);
	b->snap = NULL;
}

static void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
						errmsg("out of memory building the snapshot (%zu bytes)", n)));
	return q;
}

static void
nomem_check(int rc)
{
	if (rc != HW_OK)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory building the snapshot")));
}

/* ------------------------------------------------------------- helpers */

static const char *
qname(Build *b, const char *table)
{
	return quote_qualified_identifier(b->schema, table);
}

static int
find_table(Build *b, const char *name)
{
	for (int t = 0; t < b->ntables; t++)
		if (strcmp(b->tabs[t].name, name) == 0)
			return t;
	return -1;
}

static int
find_col_att(TabB *tb, int16 att)
{
	for (int c = 0; c < tb->ncols; c++)
		if (tb->cols[c].attnum == att)
			return c;
	return -1;
}

static int
find_col_name(TabB *tb, const char *name)
{
	for (int c = 0; c < tb->ncols; c++)
		if (strcmp(tb->cols[c].name, name) == 0)
			return c;
	return -1;
}

/* key expression over attnums; identical expressions are shared */
static int
add_key(TabB *tb, int n, const int16 *att)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoChar(&s, '(');
	for (int i = 0; i < n; i++)
	{
		int c = find_col_att(tb, att[i]);

		if (c < 0)
			elog(ERROR, "key column %d of table %s not found", att[i], tb->name);
		if (i > 0)
			appendStringInfoString(&s, " || E'\\x1f' || ");
		appendStringInfo(&s, "%s::text", quote_identifier(tb->cols[c].name));
	}
	appendStringInfoChar(&s, ')');
	for (int k = 0; k < tb->nkeys; k++)
		if (strcmp(tb->keys[k].sql, s.data) == 0)
			return k;
	if (tb->nkeys >= (int) lengthof(tb->keys))
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("table \"%s\" has too many distinct foreign key column sets", tb->name)));
	KeyB *k = &tb->keys[tb->nkeys];

	k->ncols = n;
	k->att = palloc(sizeof(int16) * n);
	memcpy(k->att, att, sizeof(int16) * n);
	k->sql = s.data;
	k->sel = -1;
	return tb->nkeys++;
}

/* text[] of column names -> attnums of tb (names, because a partition's
 * attnums may differ from its root's) */
static int16 *
names_to_atts(TabB *tb, Datum d, int *n)
{
	ArrayType *a = DatumGetArrayTypeP(d);
	Datum *elems;
	bool *nulls;
	int16 *out;

	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	out = palloc(sizeof(int16) * (*n > 0 ? *n : 1));
	for (int i = 0; i < *n; i++)
	{
		char *name = TextDatumGetCString(elems[i]);
		int c = find_col_name(tb, name);

		if (c < 0)
			elog(ERROR, "key column \"%s\" not found in table \"%s\"", name, tb->name);
		out[i] = tb->cols[c].attnum;
	}
	return out;
}

/* ------------------------------------------------------------- options */

static char *
spi_text1(const char *sql, Datum arg, Oid argtype)
{
	bool isnull;

	if (SPI_execute_with_args(sql, 1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return NULL;
	(void) SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NULL : SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

static void
parse_options(Build *b, Datum options)
{
	char *v;
	Oid jt = JSONBOID;

	if (SPI_execute_with_args("SELECT k FROM pg_catalog.jsonb_object_keys($1) k WHERE k OPERATOR(pg_catalog.<>) ALL "
							  "('{embedder,d_text,embed_text,time_columns,column_types}'::pg_catalog.text[]) ORDER BY 1",
							  1, &jt, &options, NULL, true, 1) != SPI_OK_SELECT)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("options of model \"%s\" must be a JSON object", b->model)));
	if (SPI_processed > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown option \"%s\" for model \"%s\"", SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), b->model),
						errhint("Known options: embedder, d_text, embed_text, time_columns, column_types.")));
	v = spi_text1("SELECT $1 OPERATOR(pg_catalog.->>) 'embedder'", options, jt);
	b->embedder = v ? v : pstrdup("hash");
	v = spi_text1("SELECT $1 OPERATOR(pg_catalog.->>) 'd_text'", options, jt);
	b->d_text = HW_EMBED_DEFAULT_DIM;
	if (v)
	{
		char *end;
		long d = strtol(v, &end, 10);

		if (*end || d < 8 || d > 4096)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option d_text of model \"%s\" must be an integer between 8 and 4096, not \"%s\"", b->model, v)));
		b->d_text = (int) d;
	}
	v = spi_text1("SELECT $1 OPERATOR(pg_catalog.->>) 'embed_text'", options, jt);
	b->embed_text = !(v && strcmp(v, "false") == 0);
	if (strcmp(b->embedder, "hash") != 0)
	{
		char *fn = spi_text1("SELECT pg_catalog.to_regprocedure($1 OPERATOR(pg_catalog.||) '(text)')::pg_catalog.text",
							 CStringGetTextDatum(b->embedder), TEXTOID);

		if (fn == NULL)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
							errmsg("embedding function %s(text) does not exist", b->embedder),
							errhint("Use {\"embedder\": \"hash\"} or name a function text -> float4[] returning d_text values.")));
		/* the resolved function as schema.name, each part quoted: the only
		 * form ever pasted into the embedding call */
		b->embedder = spi_text1("SELECT pg_catalog.format('%I.%I', n.nspname, p.proname) FROM pg_catalog.pg_proc p "
								"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace "
								"WHERE p.oid OPERATOR(pg_catalog.=) $1::pg_catalog.regprocedure", CStringGetTextDatum(fn), TEXTOID);
	}
}

/* per-table and per-column overrides from options */
static char *
option_time_column(Build *b, Datum options, const char *table, bool *present)
{
	Datum args[2] = {options, CStringGetTextDatum(table)};
	Oid types[2] = {JSONBOID, TEXTOID};
	bool isnull;

	*present = false;
	if (SPI_execute_with_args("SELECT ($1 OPERATOR(pg_catalog.->) 'time_columns') OPERATOR(pg_catalog.?) $2, "
							  "($1 OPERATOR(pg_catalog.->) 'time_columns') OPERATOR(pg_catalog.->>) $2",
							  2, types, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return NULL;
	Datum p = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

	*present = !isnull && DatumGetBool(p);
	return *present ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2) : NULL;
}

/* ------------------------------------------------------------- discovery */

static void
discover(Build *b, Datum options)
{
	Oid argt[1] = {OIDOID};
	bool isnull;
	char *nsp = spi_text1("SELECT oid FROM pg_catalog.pg_namespace WHERE nspname OPERATOR(pg_catalog.=) $1",
						  CStringGetTextDatum(b->schema), TEXTOID);

	if (nsp == NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_SCHEMA_NAME),
						errmsg("schema \"%s\" does not exist", b->schema),
						errhint("Pass the schema that holds the tables: rt_create_model(%s, source_schema => '<schema>').", quote_literal_cstr(b->model))));
	b->nsp = (Oid) strtoul(nsp, NULL, 10);

	/* tables: ordinary and partitioned, partitions folded into their parent */
	if (SPI_execute_with_args("SELECT c.oid, c.relname::pg_catalog.text FROM pg_catalog.pg_class c "
							  "WHERE c.relnamespace OPERATOR(pg_catalog.=) $1 "
							  "  AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}'::pg_catalog.\"char\"[]) "
							  "  AND NOT c.relispartition "
							  "ORDER BY c.relname COLLATE pg_catalog.\"C\"",
							  1, argt, (Datum[]) {ObjectIdGetDatum(b->nsp)}, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "table discovery failed");
	if (SPI_processed == 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("schema \"%s\" has no tables", b->schema),
						errhint("Create or load tables into schema \"%s\" first (e.g. SELECT rt_demo_shop(%s)).", b->schema, quote_literal_cstr(b->schema))));
	if (SPI_processed > 65535)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("schema \"%s\" has more than 65535 tables", b->schema)));
	b->ntables = (int) SPI_processed;
	/* in the build context: the cleanup callback reads these after SPI
	 * memory is gone (SPI calls leave CurrentMemoryContext in SPI's own) */
	b->tabs = MemoryContextAllocZero(b->cxt, sizeof(TabB) * b->ntables);
	for (int t = 0; t < b->ntables; t++)
	{
		b->tabs[t].relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[t], SPI_tuptable->tupdesc, 1, &isnull));
		b->tabs[t].name = SPI_getvalue(SPI_tuptable->vals[t], SPI_tuptable->tupdesc, 2);
		b->tabs[t].pk_key = -1;
		b->tabs[t].time_col = -1;
	}

	/* columns */
	for (int t = 0; t < b->ntables; t++)
	{
		TabB *tb = &b->tabs[t];

		if (SPI_execute_with_args("SELECT a.attnum, a.attname::pg_catalog.text, a.atttypid, "
								  "       pg_catalog.format_type(a.atttypid, a.atttypmod), "
								  "       pg_catalog.col_description(a.attrelid, a.attnum) "
								  "FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $1 "
								  "  AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped "
								  "ORDER BY a.attnum",
								  1, argt, (Datum[]) {ObjectIdGetDatum(tb->relid)}, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "column discovery failed");
		tb->ncols = (int) SPI_processed;
		tb->cols = MemoryContextAllocZero(b->cxt, sizeof(ColB) * (tb->ncols ? tb->ncols : 1));
		for (int c = 0; c < tb->ncols; c++)
		{
			ColB *col = &tb->cols[c];
			HeapTuple tup = SPI_tuptable->vals[c];
			TupleDesc td = SPI_tuptable->tupdesc;
			Oid typ;

			col->attnum = DatumGetInt16(SPI_getbinval(tup, td, 1, &isnull));
			col->name = SPI_getvalue(tup, td, 2);
			typ = DatumGetObjectId(SPI_getbinval(tup, td, 3, &isnull));
			col->sqltype = SPI_getvalue(tup, td, 4);
			col->comment = SPI_getvalue(tup, td, 5);
			col->basetyp = getBaseType(typ);
			col->typtype = get_typtype(col->basetyp);
			{
				char cat;
				bool pref;

				get_type_category_preferred(col->basetyp, &cat, &pref);
				col->typcat = cat;
			}
			col->sel = -1;
			col->global_id = -1;
		}
	}

	/* primary keys and foreign keys.  Constraints cloned from a parent onto
	 * its partitions (conparentid <> 0) are skipped; FKs declared on a
	 * partition itself (pagila's payment) are folded into the root table,
	 * columns matched by name, duplicates across partitions merged. */
	if (SPI_execute_with_args("SELECT con.conname::pg_catalog.text, con.contype::pg_catalog.text, "
							  "       COALESCE(pg_catalog.pg_partition_root(con.conrelid), con.conrelid), "
							  "       COALESCE(pg_catalog.pg_partition_root(con.confrelid), con.confrelid), "
							  "       ARRAY(SELECT a.attname::pg_catalog.text "
							  "             FROM pg_catalog.unnest(con.conkey) WITH ORDINALITY k(n, i) "
							  "             JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) con.conrelid "
							  "                  AND a.attnum OPERATOR(pg_catalog.=) k.n ORDER BY k.i), "
							  "       ARRAY(SELECT a.attname::pg_catalog.text "
							  "             FROM pg_catalog.unnest(con.confkey) WITH ORDINALITY k(n, i) "
							  "             JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) con.confrelid "
							  "                  AND a.attnum OPERATOR(pg_catalog.=) k.n ORDER BY k.i), "
							  "       fn.nspname::pg_catalog.text, fc.relname::pg_catalog.text "
							  "FROM pg_catalog.pg_constraint con "
							  "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) con.conrelid "
							  "JOIN pg_catalog.pg_class rc ON rc.oid OPERATOR(pg_catalog.=) "
							  "     COALESCE(pg_catalog.pg_partition_root(con.conrelid), con.conrelid) "
							  "LEFT JOIN pg_catalog.pg_class fc ON fc.oid OPERATOR(pg_catalog.=) "
							  "     COALESCE(pg_catalog.pg_partition_root(con.confrelid), con.confrelid) "
							  "LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid OPERATOR(pg_catalog.=) fc.relnamespace "
							  "WHERE c.relnamespace OPERATOR(pg_catalog.=) $1 AND con.conparentid OPERATOR(pg_catalog.=) 0 "
							  "  AND (con.contype OPERATOR(pg_catalog.=) 'f' "
							  "       OR (con.contype OPERATOR(pg_catalog.=) 'p' AND NOT c.relispartition)) "
							  "ORDER BY con.contype DESC, rc.relname COLLATE pg_catalog.\"C\", c.relispartition, "
							  "         con.conname COLLATE pg_catalog.\"C\"",
							  1, argt, (Datum[]) {ObjectIdGetDatum(b->nsp)}, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "constraint discovery failed");
	b->fks = palloc0(sizeof(FkB) * (SPI_processed ? SPI_processed : 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple tup = SPI_tuptable->vals[i];
		TupleDesc td = SPI_tuptable->tupdesc;
		char *conname = SPI_getvalue(tup, td, 1);
		char *contype = SPI_getvalue(tup, td, 2);
		Oid rel = DatumGetObjectId(SPI_getbinval(tup, td, 3, &isnull));
		int t = -1;

		for (int k = 0; k < b->ntables; k++)
			if (b->tabs[k].relid == rel)
				t = k;
		if (t < 0)
			continue;
		TabB *tb = &b->tabs[t];
		int n;
		int16 *key = names_to_atts(tb, SPI_getbinval(tup, td, 5, &isnull), &n);

		if (contype[0] == 'p')
		{
			tb->pk_key = add_key(tb, n, key);
			for (int j = 0; j < n; j++)
				tb->cols[find_col_att(tb, key[j])].is_pk = true;
			continue;
		}
		Oid frel = DatumGetObjectId(SPI_getbinval(tup, td, 4, &isnull));
		char *fnsp = SPI_getvalue(tup, td, 7);
		char *frelname = SPI_getvalue(tup, td, 8);
		int p = -1;

		for (int k = 0; k < b->ntables; k++)
			if (b->tabs[k].relid == frel)
				p = k;
		/* the FK columns are identifiers either way */
		for (int j = 0; j < n; j++)
			tb->cols[find_col_att(tb, key[j])].is_fk = true;
		if (frel != rel)
			tb->has_fk_out = true;	/* a child of another table: its rows are events */
		if (p < 0)
		{
			ereport(NOTICE,
					(errmsg("foreign key \"%s\" of table \"%s\" references \"%s.%s\", outside schema \"%s\"; it is ignored",
							conname, tb->name, fnsp ? fnsp : "?", frelname ? frelname : "?", b->schema),
					 errhint("Only edges between tables of the modelled schema are followed.")));
			continue;
		}
		if (b->nfks >= 65535)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("schema \"%s\" has more than 65535 foreign keys", b->schema)));
		FkB *fk = &b->fks[b->nfks++];
		int pn;

		fk->name = conname;
		fk->child = t;
		fk->parent = p;
		fk->nkeys = n;
		fk->catt = key;
		fk->patt = names_to_atts(&b->tabs[p], SPI_getbinval(tup, td, 6, &isnull), &pn);
		/* the same FK declared on several partitions is one FK of the root */
		for (int g = 0; g < b->nfks - 1; g++)
		{
			FkB *o = &b->fks[g];

			if (o->child == t && o->parent == p && o->nkeys == n &&
				memcmp(o->catt, fk->catt, sizeof(int16) * n) == 0 &&
				memcmp(o->patt, fk->patt, sizeof(int16) * n) == 0)
			{
				b->nfks--;
				break;
			}
		}
	}
	/* key expressions, FK targets */
	for (int f = 0; f < b->nfks; f++)
	{
		FkB *fk = &b->fks[f];
		TabB *ct = &b->tabs[fk->child], *pt = &b->tabs[fk->parent];

		fk->ckey = add_key(ct, fk->nkeys, fk->catt);
		fk->pkey = add_key(pt, fk->nkeys, fk->patt);
		for (int j = 0; j < fk->nkeys; j++)
		{
			ColB *cc = &ct->cols[find_col_att(ct, fk->catt[j])];
			char *target = psprintf("%s.%s", pt->name, pt->cols[find_col_att(pt, fk->patt[j])].name);

			cc->fk_target = cc->fk_target ? psprintf("%s, %s", cc->fk_target, target) : target;
		}
	}
	(void) options;
}

/* ------------------------------------------------------------- typing */

static bool
is_int_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID || t == OIDOID;
}

static bool
is_float_type(Oid t)
{
	return t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID || t == CASHOID;
}

static bool
is_ts_type(Oid t)
{
	return t == TIMESTAMPOID || t == TIMESTAMPTZOID || t == DATEOID;
}

static const char *
number_kind(Oid t)
{
	return is_int_type(t) ? "integer" : t == CASHOID ? "money" : t == NUMERICOID ? "numeric" : "floating-point";
}

/* Semantic type from the SQL type, the keys and the name; text-like and
 * integer-code columns are settled after the scan (finish_columns). */
static void
infer_type(ColB *col)
{
	Oid t = col->basetyp;

	col->ignore_reason = NULL;
	/* a key column is an identifier, except a timestamp (pagila's payment
	 * has payment_date in its PK for partitioning: the time is data) */
	if ((col->is_pk || col->is_fk) && !is_ts_type(t))
	{
		col->inferred = HW_ST_IDENTIFIER;
		col->why = col->is_pk && col->is_fk ? psprintf("identifier: primary key and foreign key (to %s)", col->fk_target ? col->fk_target : "a table outside the schema")
			: col->is_pk ? pstrdup("identifier: primary key")
			: psprintf("identifier: foreign key (to %s)", col->fk_target ? col->fk_target : "a table outside the schema");
	}
	else if (t == UUIDOID)
	{
		col->inferred = HW_ST_IDENTIFIER;
		col->why = pstrdup("identifier: uuid");
	}
	else if (is_int_type(t) && t != OIDOID && hw_name_code_like(col->name))
		col->inferred = INFER_INT_CODE;	/* counted during the scan */
	else if (is_int_type(t) && hw_name_id_like(col->name))
	{
		col->inferred = HW_ST_IDENTIFIER;
		col->why = psprintf("identifier: %s named like an id", col->sqltype);
	}
	else if (is_int_type(t) || is_float_type(t))
	{
		col->inferred = HW_ST_NUMERICAL;
		col->why = psprintf("numerical: %s type", number_kind(t));
	}
	else if (t == BOOLOID)
	{
		col->inferred = HW_ST_BOOLEAN;
		col->why = pstrdup("boolean: bool type");
	}
	else if (is_ts_type(t))
	{
		col->inferred = HW_ST_TIMESTAMP;
		col->why = psprintf("timestamp: %s type%s", t == DATEOID ? "date" : "timestamp",
							col->is_pk || col->is_fk ? " (a key column, but a time is data)" : "");
	}
	else if (col->typtype == TYPTYPE_ENUM)
	{
		col->inferred = HW_ST_CATEGORICAL;
		col->why = pstrdup("categorical: enum type");
	}
	else if (col->typcat == TYPCATEGORY_STRING)
		col->inferred = INFER_TEXT_LIKE;	/* categorical or text, by cardinality */
	else
	{
		col->inferred = HW_ST_IGNORED;
		col->ignore_reason = "unsupported type";
		col->why = psprintf("ignored: unsupported type %s", col->sqltype);
	}
}

/* SQL select expression and value kind for a column's semantic type; ERROR
 * when an override asks for a type the SQL type cannot give. */
static char *
value_expr(Build *b, TabB *tb, ColB *col, int stype)
{
	const char *q = quote_identifier(col->name);
	Oid t = col->basetyp;

	switch (stype)
	{
		case HW_ST_IDENTIFIER:
			col->kind = K_VALID;
			return psprintf("(%s IS NOT NULL)", q);
		case HW_ST_NUMERICAL:
		case INFER_INT_CODE:
			col->kind = K_F8;
			if (t == BOOLOID)
				return psprintf("%s::pg_catalog.int4::pg_catalog.float8", q);
			if (t == CASHOID)
				return psprintf("%s::pg_catalog.numeric::pg_catalog.float8", q);
			if (is_int_type(t) || is_float_type(t))
				return psprintf("%s::pg_catalog.float8", q);
			break;
		case HW_ST_TIMESTAMP:
			col->kind = K_TS;
			if (t == DATEOID)
				return psprintf("%s::pg_catalog.timestamp", q);
			if (t == TIMESTAMPOID || t == TIMESTAMPTZOID)
				return psprintf("%s", q);
			break;
		case HW_ST_BOOLEAN:
			col->kind = K_BOOL;
			if (t == BOOLOID)
				return psprintf("%s", q);
			if (is_int_type(t) || is_float_type(t))
				return psprintf("(%s OPERATOR(pg_catalog.<>) 0)", q);
			break;
		case HW_ST_CATEGORICAL:
		case HW_ST_TEXT:
		case INFER_TEXT_LIKE:
			col->kind = K_TEXT;
			return psprintf("%s::pg_catalog.text", q);
		default:
			col->kind = K_NONE;
			return NULL;
	}
	ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
					errmsg("column \"%s\" of table \"%s\" has type %s, which cannot be used as %s",
						   col->name, tb->name, col->sqltype, hw_stype_name(stype)),
					errhint("Use rt_set_column_type(%s, %s, %s, NULL) to go back to the inferred type.",
							quote_literal_cstr(b->model), quote_literal_cstr(tb->name), quote_literal_cstr(col->name))));
	return NULL;
}

static void
apply_overrides(Build *b, Datum options)
{
	Oid jt = JSONBOID;
	const char *shape_hint = "Write {\"column_types\": {\"table\": {\"column\": \"type\"}}} or "
		"{\"column_types\": {\"table.column\": \"type\"}}; types: identifier, numerical, timestamp, "
		"boolean, categorical, text, ignored.";

	if (strcmp(spi_text1("SELECT COALESCE(pg_catalog.jsonb_typeof($1 OPERATOR(pg_catalog.->) 'column_types') "
						 "OPERATOR(pg_catalog.<>) ALL ('{object,null}'::pg_catalog.text[]), false)::pg_catalog.text",
						 options, jt), "true") == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option column_types of model \"%s\" must be a JSON object", b->model),
						errhint("%s", shape_hint)));
	/* one row per (table, column): the nested form, or "table.column": "type" */
	if (SPI_execute_with_args("SELECT t.key, pg_catalog.jsonb_typeof(t.value), c.key, "
							  "       COALESCE(c.value, t.value) OPERATOR(pg_catalog.#>>) '{}'::pg_catalog.text[] "
							  "FROM pg_catalog.jsonb_each(CASE WHEN pg_catalog.jsonb_typeof($1 OPERATOR(pg_catalog.->) 'column_types') "
							  "                                OPERATOR(pg_catalog.=) 'object' "
							  "                     THEN $1 OPERATOR(pg_catalog.->) 'column_types' ELSE '{}' END) t "
							  "LEFT JOIN LATERAL pg_catalog.jsonb_each(CASE WHEN pg_catalog.jsonb_typeof(t.value) "
							  "                                                  OPERATOR(pg_catalog.=) 'object' "
							  "                                             THEN t.value ELSE '{}' END) c ON true "
							  "ORDER BY 1, 3",
							  1, &jt, &options, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "reading column_types failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char *tn = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char *kind = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		char *cn = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
		char *st = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4);
		int t, c, s;

		if (strcmp(kind, "object") == 0 && cn == NULL)
			continue;			/* {"table": {}}: nothing to override */
		if (strcmp(kind, "string") == 0)
		{
			char *dot = strrchr(tn, '.');

			if (dot == NULL)
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("entry \"%s\" of option column_types of model \"%s\" names no column",
									   tn, b->model),
								errhint("%s", shape_hint)));
			tn = pstrdup(tn);
			dot = strrchr(tn, '.');
			*dot = '\0';
			cn = dot + 1;
		}
		else if (strcmp(kind, "object") != 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("entry \"%s\" of option column_types of model \"%s\" is a JSON %s",
								   tn, b->model, kind),
							errhint("%s", shape_hint)));
		t = find_table(b, tn);
		c = t >= 0 ? find_col_name(&b->tabs[t], cn) : -1;
		s = st ? hw_stype_from_name(st) : -1;
		if (t < 0)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
							errmsg("table \"%s\" of option column_types is not in schema \"%s\"", tn, b->schema),
							errhint("rt_create_model reads the tables of schema \"%s\"; name one of them.", b->schema)));
		if (c < 0)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
							errmsg("column \"%s\" of option column_types does not exist in table \"%s\"", cn, tn),
							errhint("Column names are case-sensitive, as in the table.")));
		if (s < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("unknown semantic type \"%s\" for column \"%s\" of table \"%s\"", st ? st : "null", cn, tn),
							errhint("Semantic types: identifier, numerical, timestamp, boolean, categorical, text, ignored.")));
		b->tabs[t].cols[c].stype = s;
		b->tabs[t].cols[c].overridden = true;
	}
	/* time_columns: an object whose keys are tables of the schema */
	if (strcmp(spi_text1("SELECT COALESCE(pg_catalog.jsonb_typeof($1 OPERATOR(pg_catalog.->) 'time_columns') "
						 "OPERATOR(pg_catalog.<>) ALL ('{object,null}'::pg_catalog.text[]), false)::pg_catalog.text",
						 options, jt), "true") == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option time_columns of model \"%s\" must be a JSON object", b->model),
						errhint("Write {\"time_columns\": {\"table\": \"column\"}} (null: the table has none).")));
	if (SPI_execute_with_args("SELECT t.key, pg_catalog.jsonb_typeof(t.value) "
							  "FROM pg_catalog.jsonb_each(CASE WHEN pg_catalog.jsonb_typeof($1 OPERATOR(pg_catalog.->) 'time_columns') "
							  "OPERATOR(pg_catalog.=) 'object' THEN $1 OPERATOR(pg_catalog.->) 'time_columns' ELSE '{}' END) t "
							  "ORDER BY 1",
							  1, &jt, &options, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "reading time_columns failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char *tn = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char *kind = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		if (find_table(b, tn) < 0)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
							errmsg("table \"%s\" of option time_columns is not in schema \"%s\"", tn, b->schema),
							errhint("rt_create_model reads the tables of schema \"%s\"; name one of them.", b->schema)));
		if (strcmp(kind, "string") != 0 && strcmp(kind, "null") != 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("time column of table \"%s\" in option time_columns must be a column name or null, not a JSON %s",
								   tn, kind),
							errhint("Write {\"time_columns\": {\"%s\": \"column\"}} (null: the table has none).", tn)));
	}
}

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
		col->valid = xrealloc(col->valid, nc);
		if (col->kind == K_F8)
			col->f8 = xrealloc(col->f8, sizeof(double) * nc);
		else if (col->kind == K_TS)
			col->i64 = xrealloc(col->i64, sizeof(int64) * nc);
		else if (col->kind == K_BOOL)
			col->u8 = xrealloc(col->u8, nc);
		else if (col->kind == K_TEXT)
			col->u32 = xrealloc(col->u32, sizeof(uint32) * nc);
	}
	for (int k = 0; k < tb->nkeys; k++)
		tb->keys[k].hash = xrealloc(tb->keys[k].hash, sizeof(uint64) * nc);
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

		nomem_check(hw_strmap_intern(col->map, l, strlen(l), &id));
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

static void
scan_row(ScanReceiver *sr, Datum *values, bool *nulls)
{
	Build *b = sr->b;
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

		if (col->kind == K_NONE)
			continue;
		Datum d = values[col->sel];
		bool nul = nulls[col->sel];

		if (nul)
		{
			col->valid[r] = 0;
			continue;
		}
		col->valid[r] = 1;
		switch (col->kind)
		{
			case K_VALID:
				col->nonnull++;
				break;
			case K_F8:
				{
					double v = DatumGetFloat8(d);

					if (isnan(v) || isinf(v))
					{
						col->valid[r] = 0;
						col->bad_values++;
						continue;
					}
					col->f8[r] = v;
					col->nonnull++;
					if (col->code_track && !col->code_over)
						code_track_value(col, v);
					/* Welford: stable mean/variance in one pass */
					double delta = v - col->mean;

					col->mean += delta / col->nonnull;
					col->m2 += delta * (v - col->mean);
					if (col->nonnull == 1 || v < col->min)
						col->min = v;
					if (col->nonnull == 1 || v > col->max)
						col->max = v;
					break;
				}
			case K_TS:
				{
					Timestamp ts = DatumGetTimestamp(d);

					if (TIMESTAMP_NOT_FINITE(ts))
					{
						col->valid[r] = 0;
						col->bad_values++;
						continue;
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
					break;
				}
			case K_BOOL:
				col->u8[r] = DatumGetBool(d) ? 1 : 0;
				col->ntrue += col->u8[r];
				col->nonnull++;
				break;
			case K_TEXT:
				{
					text *tx = (text *) PG_DETOAST_DATUM_PACKED(d);
					const char *str = VARDATA_ANY(tx);
					size_t len = VARSIZE_ANY_EXHDR(tx);
					size_t cut = hw_utf8_truncate_len(str, len, HW_EMBED_MAX_BYTES);
					uint32 id;

					if (cut < len)
						col->truncated++;
					nomem_check(hw_strmap_intern(col->map, str, cut, &id));
					col->u32[r] = id;
					col->nonnull++;
					break;
				}
			default:
				break;
		}
	}
	for (int k = 0; k < tb->nkeys; k++)
	{
		KeyB *key = &tb->keys[k];
		bool isnull = false;

		resetStringInfo(&sr->kb);
		for (int i = 0; i < key->ncols && !isnull; i++)
		{
			RawCol *rc = &sr->raw[sr->key_raw[sr->key_start[k] + i]];
			Datum d = values[rc->sel];

			if (nulls[rc->sel])
			{
				isnull = true;
				break;
			}
			if (i > 0)
				appendStringInfoChar(&sr->kb, '\x1f');
			if (rc->fast_int)
			{
				char buf[24];
				int64 v = rc->typ == INT2OID ? DatumGetInt16(d) : rc->typ == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
				int n = pg_lltoa(v, buf);

				appendBinaryStringInfo(&sr->kb, buf, n);
			}
			else if (rc->varlena_text)
			{
				text *tx = (text *) PG_DETOAST_DATUM_PACKED(d);

				appendBinaryStringInfo(&sr->kb, VARDATA_ANY(tx), VARSIZE_ANY_EXHDR(tx));
			}
			else
				appendStringInfoString(&sr->kb, OutputFunctionCall(&rc->out, d));
		}
		key->hash[r] = isnull ? 0 : hw_hash_key_text(sr->kb.data, sr->kb.len);
	}
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
	ColB *col = &tb->cols[find_col_att(tb, att)];
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

static void
scan_table(Build *b, int t)
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
		char *e = value_expr(b, tb, col, col->stype);

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
				nomem_check(HW_ERR_NOMEM);
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
	appendStringInfo(&q, " FROM %s AS hw_src ORDER BY ", qname(b, tb->name));
	if (tb->pk_key >= 0)
	{
		KeyB *pk = &tb->keys[tb->pk_key];

		for (int i = 0; i < pk->ncols; i++)
			appendStringInfo(&q, "%shw_src.%s", i ? ", " : "", quote_identifier(tb->cols[find_col_att(tb, pk->att[i])].name));
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

/* ------------------------------------------------------------- finishing columns */

static const char *cmp_arena;
static const uint64 *cmp_off;

static int
cmp_str_ids(const void *a, const void *b)
{
	return strcmp(cmp_arena + cmp_off[*(const uint32 *) a], cmp_arena + cmp_off[*(const uint32 *) b]);
}

/* text-like column: categorical when few distinct values relative to rows,
 * else text (ignored with embed_text false) */
static void
settle_text_like(Build *b, ColB *col)
{
	bool counted = col->kind == K_TEXT && col->map != NULL;
	uint32 nd = counted ? col->map->n : 0;

	if (counted && col->nonnull > 0 && nd <= CAT_MAX_DISTINCT && 2 * (int64) nd <= col->nonnull)
	{
		col->inferred = HW_ST_CATEGORICAL;
		col->why = psprintf("categorical: text with %u distinct value%s in " INT64_FORMAT " non-NULL rows (<= %d, <= half)",
							nd, nd == 1 ? "" : "s", col->nonnull, CAT_MAX_DISTINCT);
	}
	else
	{
		col->inferred = b->embed_text ? HW_ST_TEXT : HW_ST_IGNORED;
		if (counted)
			col->why = psprintf("%s: text with %u distinct value%s in " INT64_FORMAT " non-NULL row%s (categorical: <= %d, <= half)%s",
								hw_stype_name(col->inferred), nd, nd == 1 ? "" : "s", col->nonnull,
								col->nonnull == 1 ? "" : "s", CAT_MAX_DISTINCT,
								b->embed_text ? "" : "; embed_text is false");
		else
			col->why = psprintf("%s: string type (distinct values not counted: the column is overridden)%s",
								hw_stype_name(col->inferred), b->embed_text ? "" : "; embed_text is false");
	}
	if (col->stype != INFER_TEXT_LIKE)
		return;					/* overridden */
	col->stype = col->inferred;
	if (col->stype == HW_ST_IGNORED)
	{
		col->ignore_reason = "embed_text is false";
		hw_strmap_free(col->map);
		col->map = NULL;
		free(col->u32);
		col->u32 = NULL;
		free(col->valid);
		col->valid = NULL;
		col->kind = K_NONE;
	}
}

/* distinct (at most CODE_MAX_DISTINCT + 1 counted) and non-NULL values of a
 * column by SQL: only for an overridden integer code candidate whose scan
 * did not count them */
static void
count_distinct_sql(Build *b, TabB *tb, ColB *col, int *nd, int64 *nonnull)
{
	const char *q = quote_identifier(col->name);
	const char *t = qname(b, tb->name);
	char *sql = psprintf("SELECT (SELECT pg_catalog.count(*) FROM (SELECT DISTINCT %s FROM %s WHERE %s IS NOT NULL LIMIT %d) d), "
						 "(SELECT pg_catalog.count(%s) FROM %s)", q, t, q, CODE_MAX_DISTINCT + 1, q, t);
	bool isnull;

	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "counting the values of column \"%s\" of table \"%s\" failed", col->name, tb->name);
	*nd = (int) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*nonnull = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	pfree(sql);
}

/* integer with a code-like name: categorical when it has at most
 * CODE_MAX_DISTINCT distinct values and at most half as many as non-NULL
 * rows; else an identifier ("..._id") or numerical */
static void
settle_int_code(Build *b, TabB *tb, ColB *col)
{
	int nd;
	int64 nonnull;
	bool over;
	bool id = hw_name_id_like(col->name);

	if (col->code_track)
	{
		nd = col->ncode;
		over = col->code_over;
		nonnull = col->nonnull;
	}
	else if (col->kind == K_TEXT && col->map != NULL)
	{
		nd = (int) Min(col->map->n, (uint32) CODE_MAX_DISTINCT + 1);
		over = col->map->n > CODE_MAX_DISTINCT;
		nonnull = col->nonnull;
	}
	else
	{
		count_distinct_sql(b, tb, col, &nd, &nonnull);
		over = nd > CODE_MAX_DISTINCT;
	}
	if (!over && nonnull > 0 && 2 * (int64) nd <= nonnull)
	{
		col->inferred = HW_ST_CATEGORICAL;
		col->why = psprintf("categorical: integer code (%d distinct value%s in " INT64_FORMAT " non-NULL rows, name \"%s\")",
							nd, nd == 1 ? "" : "s", nonnull, col->name);
	}
	else
	{
		char *detail = over ? psprintf("more than %d distinct values", CODE_MAX_DISTINCT)
			: nonnull == 0 ? pstrdup("no non-NULL values")
			: psprintf("%d distinct value%s in " INT64_FORMAT " non-NULL row%s, more than half",
					   nd, nd == 1 ? "" : "s", nonnull, nonnull == 1 ? "" : "s");

		col->inferred = id ? HW_ST_IDENTIFIER : HW_ST_NUMERICAL;
		col->why = id ? psprintf("identifier: %s named like an id, not a code (%s)", col->sqltype, detail)
			: psprintf("numerical: integer type; name \"%s\" looks like a code, but %s", col->name, detail);
	}
	if (col->stype != INFER_INT_CODE)
		return;					/* overridden */
	col->stype = col->inferred;
	if (col->stype == HW_ST_CATEGORICAL)
	{
		/* the categories are the values' text, as ::text gives it */
		uint32 ids[CODE_MAX_DISTINCT];
		TabB *t = tb;

		col->map = hw_strmap_new();
		if (!col->map)
			nomem_check(HW_ERR_NOMEM);
		for (int i = 0; i < col->ncode; i++)
		{
			char buf[32];
			int len = snprintf(buf, sizeof(buf), "%lld", (long long) col->code_vals[i]);

			nomem_check(hw_strmap_intern(col->map, buf, (size_t) len, &ids[i]));
		}
		col->u32 = xrealloc(NULL, sizeof(uint32) * (t->nrows ? t->nrows : 1));
		for (uint32 r = 0; r < t->nrows; r++)
		{
			col->u32[r] = 0;
			if (!col->valid[r])
				continue;
			for (int i = 0; i < col->ncode; i++)
				if (col->code_vals[i] == col->f8[r])
				{
					col->u32[r] = ids[i];
					break;
				}
		}
		free(col->f8);
		col->f8 = NULL;
		col->kind = K_TEXT;
	}
	else if (col->stype == HW_ST_IDENTIFIER)
	{
		free(col->f8);
		col->f8 = NULL;
		col->kind = K_VALID;
	}
}

static void
finish_columns(Build *b)
{
	StringInfoData unsupported, allnull;

	initStringInfo(&unsupported);
	initStringInfo(&allnull);
	b->texts = hw_strmap_new();
	if (!b->texts)
		nomem_check(HW_ERR_NOMEM);
	for (int t = 0; t < b->ntables; t++)
	{
		TabB *tb = &b->tabs[t];

		if (tb->nrows == 0)
			ereport(NOTICE, (errmsg("table \"%s\" is empty", tb->name),
							 errdetail("It is kept in the model with no rows; its columns have no statistics.")));
		for (int c = 0; c < tb->ncols; c++)
		{
			ColB *col = &tb->cols[c];

			if (col->inferred == INFER_TEXT_LIKE)
				settle_text_like(b, col);
			else if (col->inferred == INFER_INT_CODE)
				settle_int_code(b, tb, col);
			if (col->stype == HW_ST_IGNORED && !col->overridden && col->ignore_reason &&
				strcmp(col->ignore_reason, "unsupported type") == 0)
				appendStringInfo(&unsupported, "%s%s.%s (%s)", unsupported.len ? ", " : "",
								 tb->name, col->name, col->sqltype);
			if (col->kind == K_NONE)
				continue;
			if (tb->nrows > 0 && col->nonnull == 0)
				appendStringInfo(&allnull, "%s%s.%s", allnull.len ? ", " : "", tb->name, col->name);
			if (col->bad_values > 0)
				ereport(NOTICE,
						(errmsg("column \"%s\" of table \"%s\" has " INT64_FORMAT " %s values; they are treated as NULL",
								col->name, tb->name, col->bad_values, col->kind == K_TS ? "infinite" : "NaN or infinite"),
						 errdetail("Statistics and z-scores are computed over the finite values only.")));
			if (col->truncated > 0)
				ereport(NOTICE,
						(errmsg("column \"%s\" of table \"%s\" has " INT64_FORMAT " values longer than %d bytes; only their first %d bytes are used",
								col->name, tb->name, col->truncated, HW_EMBED_MAX_BYTES, HW_EMBED_MAX_BYTES)));
			if (col->stype == HW_ST_CATEGORICAL)
			{
				uint32 n = col->map->n;
				uint32 *ord = palloc(sizeof(uint32) * (n ? n : 1));
				uint32 *rank = palloc(sizeof(uint32) * (n ? n : 1));

				for (uint32 i = 0; i < n; i++)
					ord[i] = i;
				if (!col->enum_seeded)
				{
					/* deterministic block order: byte order of the values */
					cmp_arena = col->map->arena;
					cmp_off = col->map->off;
					qsort(ord, n, sizeof(uint32), cmp_str_ids);
				}
				for (uint32 i = 0; i < n; i++)
					rank[ord[i]] = i;
				col->cat_start = b->ncat;
				col->cat_count = n;
				b->ncat += n;
				for (uint32 r = 0; r < tb->nrows; r++)
					if (col->valid[r])
						col->u32[r] = col->cat_start + rank[col->u32[r]];
				pfree(ord);
				pfree(rank);
			}
			else if (col->stype == HW_ST_TEXT)
			{
				uint32 n = col->map->n;
				uint32 *gid = palloc(sizeof(uint32) * (n ? n : 1));

				for (uint32 i = 0; i < n; i++)
				{
					size_t len;
					const char *s = hw_strmap_get(col->map, i, &len);

					nomem_check(hw_strmap_intern(b->texts, s, len, &gid[i]));
				}
				for (uint32 r = 0; r < tb->nrows; r++)
					if (col->valid[r])
						col->u32[r] = gid[col->u32[r]];
				pfree(gid);
			}
			if (col->stype == HW_ST_NUMERICAL)
			{
				double sd = col->nonnull > 0 ? sqrt(col->m2 / col->nonnull) : 0;

				if (!(sd > 0))
					sd = 1;
				col->m2 = sd;	/* reuse: std */
			}
		}
	}
	if (unsupported.len)
		ereport(NOTICE, (errmsg("ignoring columns of unsupported types: %s", unsupported.data),
						 errhint("Give one a semantic type with rt_set_column_type(model, table, column, stype).")));
	if (allnull.len)
		ereport(NOTICE, (errmsg("columns NULL in every row: %s", allnull.data),
						 errdetail("They are kept; their cells are always NULL.")));
	/* global column ids: table order, then column order */
	for (int t = 0; t < b->ntables; t++)
		for (int c = 0; c < b->tabs[t].ncols; c++)
			if (b->tabs[t].cols[c].stype != HW_ST_IGNORED)
				b->tabs[t].cols[c].global_id = b->ncolumns++;
}

/* ------------------------------------------------------------- time columns */

/* names of the tables (other than t) whose FKs reference t, comma-separated;
 * NULL when none */
static char *
referenced_by(Build *b, int t)
{
	StringInfoData s;

	initStringInfo(&s);
	for (int f = 0; f < b->nfks; f++)
	{
		FkB *fk = &b->fks[f];
		bool seen = false;

		if (fk->parent != t || fk->child == t)
			continue;
		for (int g = 0; g < f; g++)
			seen |= b->fks[g].parent == t && b->fks[g].child == fk->child;
		if (!seen)
			appendStringInfo(&s, "%s%s", s.len ? ", " : "", b->tabs[fk->child].name);
	}
	return s.len ? s.data : NULL;
}

/*
 * The time column of a table is an EVENT time: when the row came into
 * existence.  Among its timestamp columns, maintenance stamps (last_update)
 * and attribute dates (birth_date, expires_at, due_date, end_date) never
 * are; of the others (candidates):
 *   1. one creation-like name (created_at, signup_date, date_joined ...);
 *   2. else one named after the table (rental_date of rental, ordered_at of orders);
 *   3. else the only candidate, when the table's rows are events: the table
 *      has an FK to another table, or no other table references it.  An
 *      entity (referenced, no FK of its own) whose only date is not
 *      creation-like keeps none;
 *   4. else none (several candidates: NOTICE).
 * options time_columns / rt_set_time_column win over all of this.
 */
static void
choose_time_columns(Build *b, Datum options)
{
	StringInfoData amb;

	initStringInfo(&amb);
	for (int t = 0; t < b->ntables; t++)
	{
		TabB *tb = &b->tabs[t];
		bool present;
		char *opt = option_time_column(b, options, tb->name, &present);
		int *cls = palloc0(sizeof(int) * (tb->ncols ? tb->ncols : 1));
		int ncand = 0, cand = -1, ncre = 0, cre = -1, naft = 0, aft = -1;
		StringInfoData cands, attrs, maint;
		const char *why = NULL;

		tb->time_col = -1;
		if (present)
		{
			if (opt != NULL)
			{
				int c = find_col_name(tb, opt);

				if (c < 0)
					ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
									errmsg("time column \"%s\" does not exist in table \"%s\"", opt, tb->name)));
				if (tb->cols[c].stype != HW_ST_TIMESTAMP)
					ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
									errmsg("time column \"%s\" of table \"%s\" is %s, not a timestamp",
										   opt, tb->name, hw_stype_name(tb->cols[c].stype)),
									errhint("A time column must be a date, timestamp or timestamptz column typed timestamp.")));
				tb->time_col = c;
				tb->time_reason = pstrdup("time column: set by rt_set_time_column (option time_columns)");
			}
			else
				tb->time_reason = pstrdup("no time column: set to none by rt_set_time_column (option time_columns)");
			for (int c = 0; c < tb->ncols; c++)
				if (tb->cols[c].stype == HW_ST_TIMESTAMP)
					tb->cols[c].time_note = c == tb->time_col || tb->time_col < 0 ? tb->time_reason :
						psprintf("not the time column: \"%s\" is set by rt_set_time_column (option time_columns)",
								 tb->cols[tb->time_col].name);
			continue;
		}
		initStringInfo(&cands);
		initStringInfo(&attrs);
		initStringInfo(&maint);
		for (int c = 0; c < tb->ncols; c++)
		{
			ColB *col = &tb->cols[c];

			if (col->stype != HW_ST_TIMESTAMP)
				continue;
			cls[c] = hw_name_date_class(col->name);
			if (cls[c] == HW_DATE_MAINTENANCE)
			{
				appendStringInfo(&maint, "%s%s", maint.len ? ", " : "", col->name);
				continue;
			}
			if (cls[c] == HW_DATE_ATTRIBUTE)
			{
				appendStringInfo(&attrs, "%s%s", attrs.len ? ", " : "", col->name);
				continue;
			}
			ncand++;
			cand = c;
			appendStringInfo(&cands, "%s%s", cands.len ? ", " : "", col->name);
			if (cls[c] == HW_DATE_CREATION)
			{
				ncre++;
				cre = c;
			}
			else if (hw_name_after_table(col->name, tb->name))
			{
				naft++;
				aft = c;
			}
		}
		if (ncre == 1)
		{
			tb->time_col = cre;
			why = psprintf("time column: creation-like name \"%s\"", tb->cols[cre].name);
		}
		else if (ncre == 0 && naft == 1)
		{
			tb->time_col = aft;
			why = psprintf("time column: event time named after its table (\"%s\")", tb->cols[aft].name);
		}
		else if (ncand == 1)
		{
			char *refs = referenced_by(b, t);

			if (tb->has_fk_out)
			{
				tb->time_col = cand;
				why = psprintf("time column: the only candidate date (\"%s\") of a table with a foreign key: its rows are events",
							   tb->cols[cand].name);
			}
			else if (refs == NULL)
			{
				tb->time_col = cand;
				why = psprintf("time column: the only candidate date (\"%s\") of a table no foreign key references: its rows are events",
							   tb->cols[cand].name);
			}
			else
				why = psprintf("no time column: an entity table (referenced by %s) whose only date \"%s\" is not creation-like",
							   refs, tb->cols[cand].name);
		}
		else if (ncand > 1)
		{
			why = psprintf("no time column: several candidates (%s), %s", cands.data,
						   ncre > 1 ? "more than one creation-like" : "none creation-like or named after the table");
			appendStringInfo(&amb, "%s%s (%s)", amb.len ? "; " : "", tb->name, cands.data);
		}
		else if (attrs.len && maint.len)
			why = psprintf("no time column: only attribute dates (%s) and maintenance stamps (%s)", attrs.data, maint.data);
		else if (attrs.len)
			why = psprintf("no time column: only attribute dates (%s)", attrs.data);
		else if (maint.len)
			why = psprintf("no time column: only maintenance stamps (%s)", maint.data);
		else
			why = pstrdup("no time column: no date or timestamp column");
		tb->time_reason = (char *) why;
		for (int c = 0; c < tb->ncols; c++)
		{
			ColB *col = &tb->cols[c];

			if (col->stype != HW_ST_TIMESTAMP)
				continue;
			if (c == tb->time_col || tb->time_col < 0)
				col->time_note = tb->time_reason;
			else
				col->time_note = psprintf("not the time column: %s; the time column is \"%s\"",
										  cls[c] == HW_DATE_MAINTENANCE ? "a maintenance stamp" :
										  cls[c] == HW_DATE_ATTRIBUTE ? "an attribute date" :
										  cls[c] == HW_DATE_CREATION ? "another creation-like date" :
										  "another date", tb->cols[tb->time_col].name);
		}
	}
	if (amb.len)
		ereport(NOTICE, (errmsg("no time column chosen for tables with several candidates: %s", amb.data),
						 errhint("Set one with rt_set_time_column(model, table, column) or options {\"time_columns\": {\"table\": \"column\"}}.")));
}

/* ------------------------------------------------------------- edges */

static void
build_key_orders(Build *b)
{
	for (int t = 0; t < b->ntables; t++)
	{
		TabB *tb = &b->tabs[t];

		for (int k = 0; k < tb->nkeys; k++)
		{
			HwTable tmp = {0};
			HwError err;

			if (k != tb->pk_key)
				continue;		/* FK ends use the hash index below */

			tmp.name = tb->name;
			tmp.nrows = tb->nrows;
			tmp.key_hash = tb->keys[k].hash;
			if (tmp.key_hash == NULL)
				continue;
			nomem_check(snapshot_build_key_order(&tmp, &err));
			tb->keys[k].order = tmp.key_order;
		}
	}
}

/* Open-addressing index over a key's hashes (built once per referenced key):
 * one or two cache misses per FK lookup instead of a binary search. */
static void
build_hash_index(KeyB *k, uint32 nrows)
{
	uint64 size = 64;

	if (k->ht_row)
		return;
	while (size < (uint64) nrows * 2)
		size *= 2;
	k->ht_hash = xrealloc(NULL, sizeof(uint64) * size);
	k->ht_row = xrealloc(NULL, sizeof(uint32) * size);
	memset(k->ht_row, 0xff, sizeof(uint32) * size);
	k->ht_mask = size - 1;
	for (uint32 r = 0; r < nrows; r++)
	{
		uint64 h = k->hash[r];

		if (h == 0)
			continue;			/* NULL key */
		uint64 i = (h ^ (h >> 29)) & k->ht_mask;

		while (k->ht_row[i] != UINT32_MAX && k->ht_hash[i] != h)
			i = (i + 1) & k->ht_mask;
		if (k->ht_row[i] == UINT32_MAX)	/* first row of equal keys wins */
		{
			k->ht_hash[i] = h;
			k->ht_row[i] = r;
		}
	}
}

static inline int64
key_lookup(const KeyB *k, uint64 h)
{
	uint64 i = (h ^ (h >> 29)) & k->ht_mask;

	while (k->ht_row[i] != UINT32_MAX)
	{
		if (k->ht_hash[i] == h)
			return k->ht_row[i];
		i = (i + 1) & k->ht_mask;
	}
	return -1;
}

static void
build_edges(Build *b)
{
	uint32 *offset = palloc(sizeof(uint32) * b->ntables);
	uint64 off = 0;

	for (int t = 0; t < b->ntables; t++)
	{
		offset[t] = (uint32) off;
		off += b->tabs[t].nrows;
	}
	/* at most one edge per child row and FK: size the edge list once */
	for (int f = 0; f < b->nfks; f++)
		b->edges_cap += b->tabs[b->fks[f].child].nrows;
	b->e_child = xrealloc(b->e_child, sizeof(uint32) * (b->edges_cap + 1));
	b->e_parent = xrealloc(b->e_parent, sizeof(uint32) * (b->edges_cap + 1));
	b->e_fk = xrealloc(b->e_fk, sizeof(uint16) * (b->edges_cap + 1));
	for (int f = 0; f < b->nfks; f++)
	{
		FkB *fk = &b->fks[f];
		TabB *ct = &b->tabs[fk->child], *pt = &b->tabs[fk->parent];
		KeyB *ck = &ct->keys[fk->ckey], *pk = &pt->keys[fk->pkey];

		if (pt->nrows == 0)
			continue;
		build_hash_index(pk, pt->nrows);
		for (uint32 r = 0; r < ct->nrows; r++)
		{
			if (ck->hash[r] == 0)
				continue;		/* NULL FK: no edge */
			int64 p = key_lookup(pk, ck->hash[r]);

			if (p < 0)
				continue;		/* dangling (FK not validated): no edge */
			b->e_child[b->nedges] = offset[fk->child] + r;
			b->e_parent[b->nedges] = offset[fk->parent] + (uint32) p;
			b->e_fk[b->nedges] = (uint16) f;
			b->nedges++;
			fk->nedges++;
		}
		CHECK_FOR_INTERRUPTS();
	}
	pfree(offset);
}

/* ------------------------------------------------------------- embeddings */

typedef struct EmbedList
{
	int		n, cap;
	char  **s;
	int	   *len;
} EmbedList;

static void
embed_push(EmbedList *l, char *s, int len)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 256;
		l->s = l->s ? repalloc(l->s, sizeof(char *) * l->cap) : palloc(sizeof(char *) * l->cap);
		l->len = l->len ? repalloc(l->len, sizeof(int) * l->cap) : palloc(sizeof(int) * l->cap);
	}
	l->s[l->n] = s;
	l->len[l->n] = len;
	l->n++;
}

static const char *embed_fn_name;

static void
embed_error_context(void *arg)
{
	errcontext("embedding texts with function %s (option \"embedder\")", embed_fn_name);
}

/* out[n, d_text] f16 (malloc'd) */
static uint16 *
embed_texts(Build *b, int n, char **s, const int *len, const char *what)
{
	size_t d = (size_t) b->d_text;
	uint16 *out = xrealloc(NULL, sizeof(uint16) * d * (n ? n : 1));

	if (strcmp(b->embedder, "hash") == 0)
	{
		for (int i = 0; i < n; i++)
		{
			hw_embed_hash_f16(s[i], (size_t) len[i], b->d_text, out + d * i);
			if ((i & 8191) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		return out;
	}
	/* user function, called as the calling role, EMBED_FN_BATCH texts a call */
	ErrorContextCallback ecb;
	char *sql = psprintf("SELECT i, (%s(t))::pg_catalog.float4[] FROM pg_catalog.unnest($1::pg_catalog.text[]) "
						 "WITH ORDINALITY AS u(t, i) ORDER BY i",
						 b->embedder);
	Oid argt = TEXTARRAYOID;
	SPIPlanPtr plan;

	embed_fn_name = b->embedder;
	ecb.callback = embed_error_context;
	ecb.arg = NULL;
	ecb.previous = error_context_stack;
	error_context_stack = &ecb;
	plan = SPI_prepare(sql, 1, &argt);
	if (plan == NULL)
		elog(ERROR, "could not prepare the call of embedding function %s", b->embedder);
	for (int start = 0; start < n; start += EMBED_FN_BATCH)
	{
		int m = Min(EMBED_FN_BATCH, n - start);
		Datum *el = palloc(sizeof(Datum) * m);
		ArrayType *arr;
		Datum arg;

		for (int i = 0; i < m; i++)
			el[i] = PointerGetDatum(cstring_to_text_with_len(s[start + i], len[start + i]));
		arr = construct_array(el, m, TEXTOID, -1, false, TYPALIGN_INT);
		arg = PointerGetDatum(arr);
		if (SPI_execute_plan(plan, &arg, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != (uint64) m)
			elog(ERROR, "embedding function %s returned no rows", b->embedder);
		for (int i = 0; i < m; i++)
		{
			bool isnull;
			Datum v = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
			ArrayType *a;
			Datum *vals;
			bool *vnull;
			int nv;

			if (isnull)
				ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
								errmsg("embedding function %s returned NULL for a %s", b->embedder, what),
								errhint("The function must return float4[] of exactly %d values (option d_text).", b->d_text)));
			a = DatumGetArrayTypeP(v);
			deconstruct_array(a, FLOAT4OID, 4, true, TYPALIGN_INT, &vals, &vnull, &nv);
			if (nv != b->d_text)
				ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
								errmsg("embedding function %s returned %d values for a %s, expected %d",
									   b->embedder, nv, what, b->d_text),
								errhint("Make the function return d_text values, or set options {\"d_text\": %d}.", nv)));
			for (int k = 0; k < nv; k++)
			{
				float f = vnull[k] ? NAN : DatumGetFloat4(vals[k]);

				if (isnan(f) || isinf(f))
					ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
									errmsg("embedding function %s returned a NULL, NaN or infinite value for a %s", b->embedder, what)));
				out[d * (start + i) + k] = hw_f32_to_f16(f);
			}
		}
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_freeplan(plan);
	error_context_stack = ecb.previous;
	return out;
}

static void
embed_all(Build *b, HwSnapshot *s)
{
	EmbedList cols = {0}, cats = {0}, texts = {0};

	s->d_text = b->d_text;
	for (int t = 0; t < b->ntables; t++)
		for (int c = 0; c < b->tabs[t].ncols; c++)
		{
			ColB *col = &b->tabs[t].cols[c];

			if (col->global_id < 0)
				continue;
			char *e = col->comment ? psprintf("%s of %s: %s", col->name, b->tabs[t].name, col->comment)
				: psprintf("%s of %s", col->name, b->tabs[t].name);

			embed_push(&cols, e, (int) strlen(e));
		}
	for (int t = 0; t < b->ntables; t++)
		for (int c = 0; c < b->tabs[t].ncols; c++)
		{
			ColB *col = &b->tabs[t].cols[c];

			if (col->stype != HW_ST_CATEGORICAL)
				continue;
			/* block order = rank order; recover value by rank */
			uint32 n = col->map->n;
			uint32 *byrank = palloc(sizeof(uint32) * (n ? n : 1));

			for (uint32 i = 0; i < n; i++)
				byrank[i] = i;
			if (!col->enum_seeded)
			{
				cmp_arena = col->map->arena;
				cmp_off = col->map->off;
				qsort(byrank, n, sizeof(uint32), cmp_str_ids);
			}
			for (uint32 i = 0; i < n; i++)
			{
				char *e = psprintf("%s is %s", col->name, hw_strmap_get(col->map, byrank[i], NULL));

				embed_push(&cats, e, (int) strlen(e));
			}
		}
	for (uint32 i = 0; i < b->texts->n; i++)
	{
		size_t len;
		const char *tx = hw_strmap_get(b->texts, i, &len);

		embed_push(&texts, (char *) tx, (int) len);
	}
	s->ncolumns = cols.n;
	s->col_emb = embed_texts(b, cols.n, cols.s, cols.len, "column name");
	s->ncat = (uint32) cats.n;
	s->cat_emb = embed_texts(b, cats.n, cats.s, cats.len, "category");
	s->ntext = (uint32) texts.n;
	s->text_emb = embed_texts(b, texts.n, texts.s, texts.len, "text value");
}

/* ------------------------------------------------------------- assembly */

static void
assemble(Build *b)
{
	HwSnapshot *s = calloc(1, sizeof(HwSnapshot));
	HwError err;

	if (!s)
		nomem_check(HW_ERR_NOMEM);
	b->snap = s;
	s->tables = calloc(b->ntables, sizeof(HwTable));
	s->fks = calloc(b->nfks ? b->nfks : 1, sizeof(HwForeignKey));
	if (!s->tables || !s->fks)
		nomem_check(HW_ERR_NOMEM);
	s->ntables = b->ntables;
	for (int t = 0; t < b->ntables; t++)
	{
		TabB *tb = &b->tabs[t];
		HwTable *ht = &s->tables[t];

		ht->name = strdup(tb->name);
		ht->nrows = tb->nrows;
		ht->ncols = tb->ncols;
		ht->time_col = tb->time_col;
		ht->cols = calloc(tb->ncols ? tb->ncols : 1, sizeof(HwColumn));
		if (!ht->name || !ht->cols)
			nomem_check(HW_ERR_NOMEM);
		for (int c = 0; c < tb->ncols; c++)
		{
			ColB *col = &tb->cols[c];
			HwColumn *hc = &ht->cols[c];

			hc->name = strdup(col->name);
			if (!hc->name)
				nomem_check(HW_ERR_NOMEM);
			hc->global_id = col->global_id;
			hc->stype = (int8) col->stype;
			hc->null_count = (int64) tb->nrows - col->nonnull;
			if (col->stype == HW_ST_IGNORED)
			{
				hc->null_count = 0;
				continue;
			}
			hc->valid = col->valid;
			col->valid = NULL;
			switch (col->stype)
			{
				case HW_ST_NUMERICAL:
					{
						float *z = malloc(sizeof(float) * (tb->nrows ? tb->nrows : 1));

						if (!z)
							nomem_check(HW_ERR_NOMEM);
						for (uint32 r = 0; r < tb->nrows; r++)
							z[r] = hc->valid[r] ? (float) ((col->f8[r] - col->mean) / col->m2) : 0.0f;
						hc->f32 = z;
						hc->mean = col->nonnull ? col->mean : 0;
						hc->std = col->m2;
						hc->min = col->min;
						hc->max = col->max;
						break;
					}
				case HW_ST_TIMESTAMP:
					hc->i64 = col->i64;
					col->i64 = NULL;
					hc->min = col->min;
					hc->max = col->max;
					break;
				case HW_ST_BOOLEAN:
					hc->u8 = col->u8;
					col->u8 = NULL;
					break;
				case HW_ST_CATEGORICAL:
					hc->cat_emb_start = col->cat_start;
					hc->cat_emb_count = col->cat_count;
					/* fall through */
				case HW_ST_TEXT:
					hc->u32 = col->u32;
					col->u32 = NULL;
					break;
				default:
					break;
			}
		}
		if (tb->pk_key >= 0)
		{
			ht->key_hash = tb->keys[tb->pk_key].hash;
			ht->key_order = tb->keys[tb->pk_key].order;
			tb->keys[tb->pk_key].hash = NULL;
			tb->keys[tb->pk_key].order = NULL;
		}
	}
	s->nfks = b->nfks;
	for (int f = 0; f < b->nfks; f++)
	{
		s->fks[f].name = strdup(b->fks[f].name);
		s->fks[f].child_table = b->fks[f].child;
		s->fks[f].parent_table = b->fks[f].parent;
	}
	if (b->ts_n > 0)
	{
		s->ts_mean_us = b->ts_mean;
		s->ts_std_us = sqrt(b->ts_m2 / b->ts_n);
	}
	if (!(s->ts_std_us > 0))
		s->ts_std_us = 1;
	if (snapshot_build_rows(s, &err) != HW_OK || snapshot_build_csr(s, b->nedges, b->e_child, b->e_parent, b->e_fk, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not build the snapshot");
	embed_all(b, s);
}

/* ------------------------------------------------------------- persistence */

static void
fmt_ts(StringInfo s, double us)
{
	/* UTC civil time from epoch µs (days-from-civil inverse, H. Hinnant) */
	int64 t = (int64) us;
	int64 days = t >= 0 ? t / INT64CONST(86400000000) : -((-t + INT64CONST(86399999999)) / INT64CONST(86400000000));
	int64 rem = t - days * INT64CONST(86400000000);
	int64 z = days + 719468;
	int64 era = (z >= 0 ? z : z - 146096) / 146097;
	int64 doe = z - era * 146097;
	int64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64 y = yoe + era * 400;
	int64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64 mp = (5 * doy + 2) / 153;
	int64 d = doy - (153 * mp + 2) / 5 + 1;
	int64 m = mp < 10 ? mp + 3 : mp - 9;
	int64 sec = rem / 1000000;

	y += m <= 2;
	appendStringInfo(s, "\"%04d-%02d-%02d %02d:%02d:%02d+00\"", (int) y, (int) m, (int) d,
					 (int) (sec / 3600), (int) (sec / 60 % 60), (int) (sec % 60));
}

static void
fmt_num(StringInfo s, double v)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.6g", v);
	if (strcmp(buf, "-0") == 0)
		strcpy(buf, "0");
	appendStringInfoString(s, buf);
}

static char *
column_stats(Build *b, TabB *tb, ColB *col, HwColumn *hc)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	switch (col->stype)
	{
		case HW_ST_IDENTIFIER:
			appendStringInfo(&s, "\"key\": \"%s\"", col->is_pk && col->is_fk ? "primary, foreign" :
							 col->is_pk ? "primary" : col->is_fk ? "foreign" : "id-like");
			break;
		case HW_ST_NUMERICAL:
			if (col->nonnull > 0)
			{
				appendStringInfoString(&s, "\"mean\": ");
				fmt_num(&s, hc->mean);
				appendStringInfoString(&s, ", \"std\": ");
				fmt_num(&s, hc->std);
				appendStringInfoString(&s, ", \"min\": ");
				fmt_num(&s, hc->min);
				appendStringInfoString(&s, ", \"max\": ");
				fmt_num(&s, hc->max);
			}
			if (col->bad_values)
				appendStringInfo(&s, "%s\"nan_or_inf_as_null\": " INT64_FORMAT, col->nonnull > 0 ? ", " : "", col->bad_values);
			break;
		case HW_ST_TIMESTAMP:
			if (col->nonnull > 0)
			{
				appendStringInfoString(&s, "\"min\": ");
				fmt_ts(&s, hc->min);
				appendStringInfoString(&s, ", \"max\": ");
				fmt_ts(&s, hc->max);
			}
			if (col->bad_values)
				appendStringInfo(&s, "%s\"infinite_as_null\": " INT64_FORMAT, col->nonnull > 0 ? ", " : "", col->bad_values);
			break;
		case HW_ST_BOOLEAN:
			appendStringInfo(&s, "\"true\": " INT64_FORMAT ", \"false\": " INT64_FORMAT, col->ntrue, col->nonnull - col->ntrue);
			break;
		case HW_ST_CATEGORICAL:
			appendStringInfo(&s, "\"categories\": %u, \"cat_emb_start\": %u", col->cat_count, col->cat_start);
			break;
		case HW_ST_TEXT:
			appendStringInfo(&s, "\"distinct\": %u", col->map ? col->map->n : 0);
			if (col->truncated)
				appendStringInfo(&s, ", \"truncated\": " INT64_FORMAT, col->truncated);
			break;
		default:
			appendStringInfo(&s, "\"reason\": \"%s\"", col->overridden ? "set by rt_set_column_type" :
							 col->ignore_reason ? col->ignore_reason : "ignored");
			break;
	}
	appendStringInfoChar(&s, '}');
	(void) b;
	(void) tb;
	return s.data;
}

/* rt_describe's inference: why the semantic type, and for a timestamp
 * column why it is (not) the time column */
static char *
inference_text(ColB *col)
{
	const char *why = col->why ? col->why : hw_stype_name(col->stype);
	char *s = col->overridden ?
		psprintf("%s: overridden by rt_set_column_type (option column_types); inferred %s",
				 hw_stype_name(col->stype), why) : pstrdup(why);

	if (col->time_note)
		s = psprintf("%s; %s", s, col->time_note);
	return s;
}

static char *
text_array_lit(TabB *tb, int n, const int16 *att)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	for (int i = 0; i < n; i++)
	{
		const char *nm = tb->cols[find_col_att(tb, att[i])].name;

		appendStringInfoString(&s, i ? ",\"" : "\"");
		for (const char *p = nm; *p; p++)
		{
			if (*p == '"' || *p == '\\')
				appendStringInfoChar(&s, '\\');
			appendStringInfoChar(&s, *p);
		}
		appendStringInfoChar(&s, '"');
	}
	appendStringInfoChar(&s, '}');
	return s.data;
}

static void
exec_plan(SPIPlanPtr plan, Datum *v, const char *nulls, int expect)
{
	int rc = SPI_execute_plan(plan, v, nulls, false, 0);

	if (rc != expect)
		elog(ERROR, "headwater catalog write failed: %s", SPI_result_code_string(rc));
}

static int32
persist(Build *b, int32 model_id, Datum options, Oid owner)
{
	HwAsOwner as;
	HwSnapshot *s = b->snap;
	uint8 *buf = NULL;
	size_t len = 0;
	HwError err;
	int64 cells = 0;

	instr_time p0, p1;

	INSTR_TIME_SET_CURRENT(p0);
	if (snapshot_serialize(s, &buf, &len, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not serialize the snapshot");
	INSTR_TIME_SET_CURRENT(p1);
	INSTR_TIME_SUBTRACT(p1, p0);
	elog(DEBUG1, "headwater persist: serialized %zu bytes in %.1f ms", len, INSTR_TIME_GET_MILLISEC(p1));
	for (int t = 0; t < s->ntables; t++)
		for (int c = 0; c < s->tables[t].ncols; c++)
			if (s->tables[t].cols[c].stype != HW_ST_IGNORED)
				cells += s->tables[t].nrows;

	hw_become_owner(&as);
	if (model_id < 0)
	{
		Oid types[6] = {TEXTOID, TEXTOID, JSONBOID, INT4OID, TEXTOID, OIDOID};
		Datum v[6] = {CStringGetTextDatum(b->model), CStringGetTextDatum(b->schema), options,
			Int32GetDatum(b->d_text), CStringGetTextDatum(b->embedder), ObjectIdGetDatum(owner)};
		bool isnull;

		if (SPI_execute_with_args("INSERT INTO headwater.model (name, source_schema, options, d_text, embedder, owner) "
								  "VALUES ($1, $2, $3, $4, $5, $6::regrole) RETURNING model_id",
								  6, types, v, NULL, false, 1) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "could not insert model");
		model_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	else
	{
		Oid types[4] = {INT4OID, JSONBOID, INT4OID, TEXTOID};
		Datum v[4] = {Int32GetDatum(model_id), options, Int32GetDatum(b->d_text), CStringGetTextDatum(b->embedder)};

		SPI_execute_with_args("UPDATE headwater.model SET options = $2, d_text = $3, embedder = $4 WHERE model_id = $1",
							  4, types, v, NULL, false, 0);
		SPI_execute_with_args("DELETE FROM headwater.model_table WHERE model_id = $1; ", 1, types, v, NULL, false, 0);
		SPI_execute_with_args("DELETE FROM headwater.model_column WHERE model_id = $1", 1, types, v, NULL, false, 0);
		SPI_execute_with_args("DELETE FROM headwater.model_fk WHERE model_id = $1", 1, types, v, NULL, false, 0);
		SPI_execute_with_args("DELETE FROM headwater.model_category WHERE model_id = $1", 1, types, v, NULL, false, 0);
	}

	/* tables */
	{
		Oid types[8] = {INT4OID, INT4OID, TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
		SPIPlanPtr plan = SPI_prepare("INSERT INTO headwater.model_table VALUES ($1, $2, $3, $4, $5::text[], $6, $7, $8)", 8, types);

		for (int t = 0; t < b->ntables; t++)
		{
			TabB *tb = &b->tabs[t];
			Datum v[8];
			char n[9] = "        ";

			v[0] = Int32GetDatum(model_id);
			v[1] = Int32GetDatum(t);
			v[2] = CStringGetTextDatum(tb->name);
			v[3] = Int64GetDatum(tb->nrows);
			if (tb->pk_key >= 0)
				v[4] = CStringGetTextDatum(text_array_lit(tb, tb->keys[tb->pk_key].ncols, tb->keys[tb->pk_key].att));
			else
				n[4] = 'n';
			if (tb->time_col >= 0)
				v[5] = CStringGetTextDatum(tb->cols[tb->time_col].name);
			else
				n[5] = 'n';
			v[6] = CStringGetTextDatum(tb->pk_key >= 0 ? "primary key" : "tableoid, ctid (no primary key)");
			v[7] = CStringGetTextDatum(tb->time_reason ? tb->time_reason : "no time column");
			exec_plan(plan, v, n, SPI_OK_INSERT);
		}
		SPI_freeplan(plan);
	}
	/* columns */
	{
		Oid types[18] = {INT4OID, INT4OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, BOOLOID,
			BOOLOID, INT4OID, INT8OID, INT8OID, TEXTOID, INT4OID, INT4OID, TEXTOID, TEXTOID};
		SPIPlanPtr plan = SPI_prepare("INSERT INTO headwater.model_column VALUES "
									  "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15, $16, $17, $18)",
									  18, types);

		for (int t = 0; t < b->ntables; t++)
		{
			TabB *tb = &b->tabs[t];

			for (int c = 0; c < tb->ncols; c++)
			{
				ColB *col = &tb->cols[c];
				HwColumn *hc = &s->tables[t].cols[c];
				Datum v[18];
				char n[19] = "                  ";

				v[0] = Int32GetDatum(model_id);
				v[1] = Int32GetDatum(t);
				v[2] = Int32GetDatum(c);
				v[3] = CStringGetTextDatum(tb->name);
				v[4] = CStringGetTextDatum(col->name);
				v[5] = CStringGetTextDatum(col->sqltype);
				v[6] = CStringGetTextDatum(hw_stype_name(col->stype));
				v[7] = CStringGetTextDatum(hw_stype_name(col->inferred));
				v[8] = BoolGetDatum(col->overridden);
				v[9] = BoolGetDatum(tb->time_col == c);
				v[10] = Int32GetDatum(col->global_id);
				if (col->global_id < 0)
					n[10] = 'n';
				v[11] = Int64GetDatum(hc->null_count);
				v[12] = Int64GetDatum(tb->nrows);
				v[13] = CStringGetTextDatum(column_stats(b, tb, col, hc));
				v[14] = Int32GetDatum(col->cat_start);
				v[15] = Int32GetDatum(col->cat_count);
				if (col->stype != HW_ST_CATEGORICAL)
					n[14] = n[15] = 'n';
				if (col->fk_target)
					v[16] = CStringGetTextDatum(col->fk_target);
				else
					n[16] = 'n';
				v[17] = CStringGetTextDatum(inference_text(col));
				exec_plan(plan, v, n, SPI_OK_INSERT);
			}
		}
		SPI_freeplan(plan);
	}
	/* foreign keys */
	{
		Oid types[8] = {INT4OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID};
		SPIPlanPtr plan = SPI_prepare("INSERT INTO headwater.model_fk VALUES ($1, $2, $3, $4, $5::text[], $6, $7::text[], $8)", 8, types);

		for (int f = 0; f < b->nfks; f++)
		{
			FkB *fk = &b->fks[f];
			Datum v[8];

			v[0] = Int32GetDatum(model_id);
			v[1] = Int32GetDatum(f);
			v[2] = CStringGetTextDatum(fk->name);
			v[3] = CStringGetTextDatum(b->tabs[fk->child].name);
			v[4] = CStringGetTextDatum(text_array_lit(&b->tabs[fk->child], fk->nkeys, fk->catt));
			v[5] = CStringGetTextDatum(b->tabs[fk->parent].name);
			v[6] = CStringGetTextDatum(text_array_lit(&b->tabs[fk->parent], fk->nkeys, fk->patt));
			v[7] = Int64GetDatum(fk->nedges);
			exec_plan(plan, v, NULL, SPI_OK_INSERT);
		}
		SPI_freeplan(plan);
	}
	/* categories: per column, in block order, with counts */
	{
		Oid types[6] = {INT4OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, INT8OID};
		SPIPlanPtr plan = SPI_prepare("INSERT INTO headwater.model_category VALUES ($1, $2, $3, $4, $5, $6)", 6, types);

		for (int t = 0; t < b->ntables; t++)
		{
			TabB *tb = &b->tabs[t];

			for (int c = 0; c < tb->ncols; c++)
			{
				ColB *col = &tb->cols[c];
				HwColumn *hc = &s->tables[t].cols[c];

				if (col->stype != HW_ST_CATEGORICAL)
					continue;
				int64 *cnt = palloc0(sizeof(int64) * (col->cat_count ? col->cat_count : 1));
				uint32 *byrank = palloc(sizeof(uint32) * (col->cat_count ? col->cat_count : 1));

				for (uint32 r = 0; r < tb->nrows; r++)
					if (hc->valid[r])
						cnt[hc->u32[r] - col->cat_start]++;
				for (uint32 i = 0; i < col->cat_count; i++)
					byrank[i] = i;
				if (!col->enum_seeded)
				{
					cmp_arena = col->map->arena;
					cmp_off = col->map->off;
					qsort(byrank, col->cat_count, sizeof(uint32), cmp_str_ids);
				}
				for (uint32 i = 0; i < col->cat_count; i++)
				{
					size_t len;
					const char *val = hw_strmap_get(col->map, byrank[i], &len);
					Datum v[6];

					v[0] = Int32GetDatum(model_id);
					v[1] = Int32GetDatum(col->cat_start + i);
					v[2] = CStringGetTextDatum(tb->name);
					v[3] = CStringGetTextDatum(col->name);
					v[4] = PointerGetDatum(cstring_to_text_with_len(val, (int) len));
					v[5] = Int64GetDatum(cnt[i]);
					exec_plan(plan, v, NULL, SPI_OK_INSERT);
				}
				pfree(cnt);
				pfree(byrank);
			}
		}
		SPI_freeplan(plan);
	}
	INSTR_TIME_SET_CURRENT(p1);
	INSTR_TIME_SUBTRACT(p1, p0);
	elog(DEBUG1, "headwater persist: catalog rows written at %.1f ms", INSTR_TIME_GET_MILLISEC(p1));
	hw_store_snapshot_chunks(model_id, buf, len);
	free(buf);
	INSTR_TIME_SET_CURRENT(p1);
	INSTR_TIME_SUBTRACT(p1, p0);
	elog(DEBUG1, "headwater persist: chunks stored at %.1f ms", INSTR_TIME_GET_MILLISEC(p1));
	{
		Oid types[7] = {INT4OID, INT4OID, INT8OID, INT4OID, INT8OID, INT8OID, INT8OID};
		Datum v[7] = {Int32GetDatum(model_id), Int32GetDatum(HW_SNAPSHOT_FORMAT_VERSION), Int64GetDatum((int64) len),
			Int32GetDatum(b->ntables), Int64GetDatum((int64) s->nrows), Int64GetDatum(cells), Int64GetDatum((int64) b->nedges)};

		SPI_execute_with_args("UPDATE headwater.model SET snapshot_format = $2, snapshot_bytes = $3, n_tables = $4, "
							  "n_rows = $5, n_cells = $6, n_edges = $7, refreshed_at = now() WHERE model_id = $1",
							  7, types, v, NULL, false, 0);
	}
	hw_restore_user(&as);
	return model_id;
}

/* ------------------------------------------------------------- entry */

static double
cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
}

char *
hw_catalog_build(const char *model, int32 model_id, const char *schema, Datum options, Oid owner)
{
	MemoryContext bcxt = AllocSetContextCreate(CurrentMemoryContext, "headwater build", ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(bcxt);
	Build *b = palloc0(sizeof(Build));
	MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));
	char *summary;
	int nign = 0;

	b->cxt = bcxt;
	b->model = pstrdup(model);
	b->schema = pstrdup(schema);
	cb->func = build_cleanup;
	cb->arg = b;
	MemoryContextRegisterResetCallback(bcxt, cb);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	MemoryContextSwitchTo(bcxt);
	instr_time t0;
	double cpu0 = cpu_ms();

	INSTR_TIME_SET_CURRENT(t0);
	/* wall time and this backend's CPU time (user + system): on a shared
	 * machine the CPU time is the figure that does not depend on the load */
#define PHASE(name) do { instr_time t1; INSTR_TIME_SET_CURRENT(t1); INSTR_TIME_SUBTRACT(t1, t0); \
		elog(DEBUG1, "headwater build %s: %s done at %.1f ms (cpu %.1f ms)", b->model, name, \
			 INSTR_TIME_GET_MILLISEC(t1), cpu_ms() - cpu0); } while (0)
	parse_options(b, options);
	discover(b, options);
	PHASE("discovery");
	for (int t = 0; t < b->ntables; t++)
		for (int c = 0; c < b->tabs[t].ncols; c++)
		{
			infer_type(&b->tabs[t].cols[c]);
			b->tabs[t].cols[c].stype = b->tabs[t].cols[c].inferred;
		}
	apply_overrides(b, options);
	for (int t = 0; t < b->ntables; t++)
		if (b->tabs[t].pk_key < 0)
			ereport(NOTICE,
					(errmsg("table \"%s\" has no primary key: its rows cannot be looked up by key and are reached only through its foreign keys", b->tabs[t].name),
					 errdetail("Its rows are numbered in physical order (tableoid, ctid).")));
	for (int t = 0; t < b->ntables; t++)
	{
		scan_table(b, t);
		MemoryContextSwitchTo(bcxt);
		PHASE(b->tabs[t].name);
	}
	finish_columns(b);
	choose_time_columns(b, options);
	PHASE("columns");
	build_key_orders(b);
	build_edges(b);
	PHASE("edges");
	assemble(b);
	PHASE("assemble+embed");
	MemoryContextSwitchTo(bcxt);
	model_id = persist(b, model_id, options, owner);
	PHASE("persist");
	for (int t = 0; t < b->ntables; t++)
		for (int c = 0; c < b->tabs[t].ncols; c++)
			nign += b->tabs[t].cols[c].stype == HW_ST_IGNORED;
	/* in the caller's context: SPI_finish frees whatever SPI left current */
	MemoryContextSwitchTo(old);
	summary = psprintf("model %s: %d tables, %u rows, %d foreign keys (%zu edges), %d columns (%d ignored), %u categories, %u distinct texts",
					   b->model, b->ntables, b->snap->nrows, b->nfks, b->nedges, b->ncolumns, nign,
					   b->snap->ncat, b->snap->ntext);
	SPI_finish();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(bcxt);
	return summary;
}
