/*
 * catalog_common.c: what every step of a model build uses: freeing the
 * build's malloc'd arrays (also on ERROR), allocation, lookups of tables,
 * columns and keys by name or attnum, and the model's options.
 */
#include "postgres.h"

#include "pg/catalog/catalog_build_priv.h"

/* ------------------------------------------------------------- cleanup */

void
hw_build_build_cleanup(void *arg)
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
			hw_key_index_free(&tb->keys[k].index);
			tb->keys[k].hash = NULL;
			tb->keys[k].order = NULL;
		}
	}
	hw_strmap_free(b->texts);
	b->texts = NULL;
	free(b->e_child); free(b->e_parent); free(b->e_fk);
	b->e_child = NULL; b->e_parent = NULL; b->e_fk = NULL;
	snapshot_free(b->snap);
	b->snap = NULL;
}

void *
hw_build_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
						errmsg("out of memory building the snapshot (%zu bytes)", n)));
	return q;
}

void
hw_build_nomem_check(int rc)
{
	if (rc != HW_OK)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory building the snapshot")));
}


/* ------------------------------------------------------------- helpers */

const char *
hw_build_qname(Build *b, const char *table)
{
	return quote_qualified_identifier(b->schema, table);
}

int
hw_build_find_table(Build *b, const char *name)
{
	for (int t = 0; t < b->ntables; t++)
		if (strcmp(b->tabs[t].name, name) == 0)
			return t;
	return -1;
}

int
hw_build_find_col_att(TabB *tb, int16 att)
{
	for (int c = 0; c < tb->ncols; c++)
		if (tb->cols[c].attnum == att)
			return c;
	return -1;
}

int
hw_build_find_col_name(TabB *tb, const char *name)
{
	for (int c = 0; c < tb->ncols; c++)
		if (strcmp(tb->cols[c].name, name) == 0)
			return c;
	return -1;
}

/* key expression over attnums; identical expressions are shared */
int
hw_build_add_key(TabB *tb, int n, const int16 *att)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoChar(&s, '(');
	for (int i = 0; i < n; i++)
	{
		int c = hw_build_find_col_att(tb, att[i]);

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
int16 *
hw_build_names_to_atts(TabB *tb, Datum d, int *n)
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
		int c = hw_build_find_col_name(tb, name);

		if (c < 0)
			elog(ERROR, "key column \"%s\" not found in table \"%s\"", name, tb->name);
		out[i] = tb->cols[c].attnum;
	}
	return out;
}


/* ------------------------------------------------------------- options */

char *
hw_build_spi_text1(const char *sql, Datum arg, Oid argtype)
{
	bool isnull;

	if (SPI_execute_with_args(sql, 1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return NULL;
	(void) SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NULL : SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

void
hw_build_parse_options(Build *b, Datum options)
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
	v = hw_build_spi_text1("SELECT $1 OPERATOR(pg_catalog.->>) 'embedder'", options, jt);
	b->embedder = v ? v : pstrdup("hash");
	v = hw_build_spi_text1("SELECT $1 OPERATOR(pg_catalog.->>) 'd_text'", options, jt);
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
	v = hw_build_spi_text1("SELECT $1 OPERATOR(pg_catalog.->>) 'embed_text'", options, jt);
	b->embed_text = !(v && strcmp(v, "false") == 0);
	if (strcmp(b->embedder, "hash") != 0)
	{
		char *fn = hw_build_spi_text1("SELECT pg_catalog.to_regprocedure($1 OPERATOR(pg_catalog.||) '(text)')::pg_catalog.text",
							 CStringGetTextDatum(b->embedder), TEXTOID);

		if (fn == NULL)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
							errmsg("embedding function %s(text) does not exist", b->embedder),
							errhint("Use {\"embedder\": \"hash\"} or name a function text -> float4[] returning d_text values.")));
		/* the resolved function as schema.name, each part quoted: the only
		 * form ever pasted into the embedding call */
		b->embedder = hw_build_spi_text1("SELECT pg_catalog.format('%I.%I', n.nspname, p.proname) FROM pg_catalog.pg_proc p "
								"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace "
								"WHERE p.oid OPERATOR(pg_catalog.=) $1::pg_catalog.regprocedure", CStringGetTextDatum(fn), TEXTOID);
	}
}

/* per-table and per-column overrides from options */
char *
hw_build_option_time_column(Build *b, Datum options, const char *table, bool *present)
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
