/*
 * catalog_discover.c: the schema of a model, read from pg_catalog as the
 * calling role: tables (partitions through their parent), columns, primary
 * and unique keys, foreign keys, comments.
 */
#include "postgres.h"

#include "pg/catalog/catalog_build_priv.h"

/* ------------------------------------------------------------- discovery */

/* Index of the table with relation id rel, or -1. */
static int
find_table_by_relid(const Build *b, Oid rel)
{
	int t = -1;

	for (int k = 0; k < b->ntables; k++)
		if (b->tabs[k].relid == rel)
			t = k;
	return t;
}

/* The schema's tables: ordinary and partitioned, partitions folded into
 * their parent. */
static void
discover_tables(Build *b)
{
	Oid argt[1] = {OIDOID};
	bool isnull;
	char *nsp = hw_build_spi_text1("SELECT oid FROM pg_catalog.pg_namespace WHERE nspname OPERATOR(pg_catalog.=) $1",
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
}

/* The columns of table tb, with their types and comments. */
static void
discover_table_columns(Build *b, TabB *tb)
{
	Oid argt[1] = {OIDOID};
	bool isnull;

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

/* true if the FK just added (the last of b->fks) repeats an earlier one:
 * the same FK declared on several partitions is one FK of the root. */
static bool
fk_is_duplicate(const Build *b)
{
	const FkB *fk = &b->fks[b->nfks - 1];

	for (int g = 0; g < b->nfks - 1; g++)
	{
		const FkB *o = &b->fks[g];

		if (o->child == fk->child && o->parent == fk->parent && o->nkeys == fk->nkeys &&
			memcmp(o->catt, fk->catt, sizeof(int16) * fk->nkeys) == 0 &&
			memcmp(o->patt, fk->patt, sizeof(int16) * fk->nkeys) == 0)
			return true;
	}
	return false;
}

/* One row of the constraint query: a primary key, or a foreign key (one to
 * a table outside the schema is noted and ignored). */
static void
add_constraint(Build *b, HeapTuple tup, TupleDesc td)
{
	bool isnull;
	char *conname = SPI_getvalue(tup, td, 1);
	char *contype = SPI_getvalue(tup, td, 2);
	Oid rel = DatumGetObjectId(SPI_getbinval(tup, td, 3, &isnull));
	int t = find_table_by_relid(b, rel);

	if (t < 0)
		return;
	TabB *tb = &b->tabs[t];
	int n;
	int16 *key = hw_build_names_to_atts(tb, SPI_getbinval(tup, td, 5, &isnull), &n);

	if (contype[0] == 'p')
	{
		tb->pk_key = hw_build_add_key(tb, n, key);
		for (int j = 0; j < n; j++)
			tb->cols[hw_build_find_col_att(tb, key[j])].is_pk = true;
		return;
	}
	Oid frel = DatumGetObjectId(SPI_getbinval(tup, td, 4, &isnull));
	char *fnsp = SPI_getvalue(tup, td, 7);
	char *frelname = SPI_getvalue(tup, td, 8);
	int p = find_table_by_relid(b, frel);

	/* the FK columns are identifiers either way */
	for (int j = 0; j < n; j++)
		tb->cols[hw_build_find_col_att(tb, key[j])].is_fk = true;
	if (frel != rel)
		tb->has_fk_out = true;	/* a child of another table: its rows are events */
	if (p < 0)
	{
		ereport(NOTICE,
				(errmsg("foreign key \"%s\" of table \"%s\" references \"%s.%s\", outside schema \"%s\"; it is ignored",
						conname, tb->name, fnsp ? fnsp : "?", frelname ? frelname : "?", b->schema),
				 errhint("Only edges between tables of the modelled schema are followed.")));
		return;
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
	fk->patt = hw_build_names_to_atts(&b->tabs[p], SPI_getbinval(tup, td, 6, &isnull), &pn);
	if (fk_is_duplicate(b))
		b->nfks--;
}

/*
 * Primary keys and foreign keys.  Constraints cloned from a parent onto its
 * partitions (conparentid <> 0) are skipped; FKs declared on a partition
 * itself (pagila's payment) are folded into the root table, columns matched
 * by name, duplicates across partitions merged.
 */
static void
discover_constraints(Build *b)
{
	Oid argt[1] = {OIDOID};

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
		add_constraint(b, SPI_tuptable->vals[i], SPI_tuptable->tupdesc);
}

/* Each FK's key expressions on both tables, and its columns' targets. */
static void
link_fk_targets(Build *b)
{
	for (int f = 0; f < b->nfks; f++)
	{
		FkB *fk = &b->fks[f];
		TabB *ct = &b->tabs[fk->child], *pt = &b->tabs[fk->parent];

		fk->ckey = hw_build_add_key(ct, fk->nkeys, fk->catt);
		fk->pkey = hw_build_add_key(pt, fk->nkeys, fk->patt);
		for (int j = 0; j < fk->nkeys; j++)
		{
			ColB *cc = &ct->cols[hw_build_find_col_att(ct, fk->catt[j])];
			char *target = psprintf("%s.%s", pt->name, pt->cols[hw_build_find_col_att(pt, fk->patt[j])].name);

			cc->fk_target = cc->fk_target ? psprintf("%s, %s", cc->fk_target, target) : target;
		}
	}
}

void
hw_build_discover(Build *b, Datum options)
{
	discover_tables(b);
	for (int t = 0; t < b->ntables; t++)
		discover_table_columns(b, &b->tabs[t]);
	discover_constraints(b);
	link_fk_targets(b);
	(void) options;
}
