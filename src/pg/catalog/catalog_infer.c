/*
 * catalog_infer.c: the semantic type of every column: inferred from the SQL
 * type, the name and (after the scan) the values, or set by the model's
 * overrides; then the time column of each table.
 */
#include "postgres.h"

#include "pg/catalog/catalog_build_priv.h"

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
 * integer-code columns are settled after the scan (hw_build_finish_columns). */
void
hw_build_infer_type(ColB *col)
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
char *
hw_build_value_expr(Build *b, TabB *tb, ColB *col, int stype)
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

void
hw_build_apply_overrides(Build *b, Datum options)
{
	Oid jt = JSONBOID;
	const char *shape_hint = "Write {\"column_types\": {\"table\": {\"column\": \"type\"}}} or "
		"{\"column_types\": {\"table.column\": \"type\"}}; types: identifier, numerical, timestamp, "
		"boolean, categorical, text, ignored.";

	if (strcmp(hw_build_spi_text1("SELECT COALESCE(pg_catalog.jsonb_typeof($1 OPERATOR(pg_catalog.->) 'column_types') "
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
		t = hw_build_find_table(b, tn);
		c = t >= 0 ? hw_build_find_col_name(&b->tabs[t], cn) : -1;
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
	if (strcmp(hw_build_spi_text1("SELECT COALESCE(pg_catalog.jsonb_typeof($1 OPERATOR(pg_catalog.->) 'time_columns') "
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

		if (hw_build_find_table(b, tn) < 0)
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


/* ------------------------------------------------------------- finishing columns */

static const char *cmp_arena;
static const uint64 *cmp_off;

static int
cmp_str_ids(const void *a, const void *b)
{
	return strcmp(cmp_arena + cmp_off[*(const uint32 *) a], cmp_arena + cmp_off[*(const uint32 *) b]);
}

void
hw_build_sort_ids_by_text(uint32 *ids, size_t n, const HwStrMap *map)
{
	cmp_arena = map->arena;
	cmp_off = map->off;
	qsort(ids, n, sizeof(uint32), cmp_str_ids);
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
	const char *t = hw_build_qname(b, tb->name);
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
			hw_build_nomem_check(HW_ERR_NOMEM);
		for (int i = 0; i < col->ncode; i++)
		{
			char buf[32];
			int len = snprintf(buf, sizeof(buf), "%lld", (long long) col->code_vals[i]);

			hw_build_nomem_check(hw_strmap_intern(col->map, buf, (size_t) len, &ids[i]));
		}
		col->u32 = hw_build_xrealloc(NULL, sizeof(uint32) * (t->nrows ? t->nrows : 1));
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

/* A categorical column's block of category ids: its values in byte order
 * (an enum's in its sort order), appended after the blocks before it;
 * each cell's local id becomes its global category id. */
static void
number_categories(Build *b, const TabB *tb, ColB *col)
{
	uint32 n = col->map->n;
	uint32 *ord = palloc(sizeof(uint32) * (n ? n : 1));
	uint32 *rank = palloc(sizeof(uint32) * (n ? n : 1));

	for (uint32 i = 0; i < n; i++)
		ord[i] = i;
	if (!col->enum_seeded)
	{
		/* deterministic block order: byte order of the values */
		hw_build_sort_ids_by_text(ord, n, col->map);
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

/* A text column's values become ids in the model-wide text table (one
 * embedding per distinct text across all columns). */
static void
global_text_ids(Build *b, const TabB *tb, ColB *col)
{
	uint32 n = col->map->n;
	uint32 *gid = palloc(sizeof(uint32) * (n ? n : 1));

	for (uint32 i = 0; i < n; i++)
	{
		size_t len;
		const char *s = hw_strmap_get(col->map, i, &len);

		hw_build_nomem_check(hw_strmap_intern(b->texts, s, len, &gid[i]));
	}
	for (uint32 r = 0; r < tb->nrows; r++)
		if (col->valid[r])
			col->u32[r] = gid[col->u32[r]];
	pfree(gid);
}

void
hw_build_finish_columns(Build *b)
{
	StringInfoData unsupported, allnull;

	initStringInfo(&unsupported);
	initStringInfo(&allnull);
	b->texts = hw_strmap_new();
	if (!b->texts)
		hw_build_nomem_check(HW_ERR_NOMEM);
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
				number_categories(b, tb, col);
			else if (col->stype == HW_ST_TEXT)
				global_text_ids(b, tb, col);
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
/* The time column set by rt_set_time_column (option time_columns): a
 * timestamp column of the table, or none (opt NULL). */
static void
set_time_column_from_option(TabB *tb, const char *opt)
{
	if (opt != NULL)
	{
		int c = hw_build_find_col_name(tb, opt);

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
}

/* A table's date columns, classified by name. */
typedef struct TimeCandidates
{
	int    *cls;                /* cls[ncols]: HW_DATE_* of each timestamp column */
	int     ncand, cand;        /* candidates (neither attribute nor maintenance), the last */
	int     ncre, cre;          /* creation-like candidates, the last */
	int     naft, aft;          /* candidates named after the table, the last */
	StringInfoData cands, attrs, maint;    /* names, for the reasons */
} TimeCandidates;

static void
classify_date_columns(const TabB *tb, TimeCandidates *tc)
{
	memset(tc, 0, sizeof(*tc));
	tc->cls = palloc0(sizeof(int) * (tb->ncols ? tb->ncols : 1));
	tc->cand = tc->cre = tc->aft = -1;
	initStringInfo(&tc->cands);
	initStringInfo(&tc->attrs);
	initStringInfo(&tc->maint);
	for (int c = 0; c < tb->ncols; c++)
	{
		const ColB *col = &tb->cols[c];

		if (col->stype != HW_ST_TIMESTAMP)
			continue;
		tc->cls[c] = hw_name_date_class(col->name);
		if (tc->cls[c] == HW_DATE_MAINTENANCE)
		{
			appendStringInfo(&tc->maint, "%s%s", tc->maint.len ? ", " : "", col->name);
			continue;
		}
		if (tc->cls[c] == HW_DATE_ATTRIBUTE)
		{
			appendStringInfo(&tc->attrs, "%s%s", tc->attrs.len ? ", " : "", col->name);
			continue;
		}
		tc->ncand++;
		tc->cand = c;
		appendStringInfo(&tc->cands, "%s%s", tc->cands.len ? ", " : "", col->name);
		if (tc->cls[c] == HW_DATE_CREATION)
		{
			tc->ncre++;
			tc->cre = c;
		}
		else if (hw_name_after_table(col->name, tb->name))
		{
			tc->naft++;
			tc->aft = c;
		}
	}
}

/* Rule 3: the only candidate is the time column when the table's rows are
 * events.  Returns the reason. */
static char *
choose_only_candidate(Build *b, int t, int cand)
{
	TabB *tb = &b->tabs[t];
	char *refs = referenced_by(b, t);

	if (tb->has_fk_out)
	{
		tb->time_col = cand;
		return psprintf("time column: the only candidate date (\"%s\") of a table with a foreign key: its rows are events",
						tb->cols[cand].name);
	}
	if (refs == NULL)
	{
		tb->time_col = cand;
		return psprintf("time column: the only candidate date (\"%s\") of a table no foreign key references: its rows are events",
						tb->cols[cand].name);
	}
	return psprintf("no time column: an entity table (referenced by %s) whose only date \"%s\" is not creation-like",
					refs, tb->cols[cand].name);
}

/* Rules 1-4 on table t; returns the reason.  A table left with several
 * candidates is added to amb. */
static char *
choose_from_candidates(Build *b, int t, const TimeCandidates *tc, StringInfo amb)
{
	TabB *tb = &b->tabs[t];

	if (tc->ncre == 1)
	{
		tb->time_col = tc->cre;
		return psprintf("time column: creation-like name \"%s\"", tb->cols[tc->cre].name);
	}
	if (tc->ncre == 0 && tc->naft == 1)
	{
		tb->time_col = tc->aft;
		return psprintf("time column: event time named after its table (\"%s\")", tb->cols[tc->aft].name);
	}
	if (tc->ncand == 1)
		return choose_only_candidate(b, t, tc->cand);
	if (tc->ncand > 1)
	{
		appendStringInfo(amb, "%s%s (%s)", amb->len ? "; " : "", tb->name, tc->cands.data);
		return psprintf("no time column: several candidates (%s), %s", tc->cands.data,
						tc->ncre > 1 ? "more than one creation-like" : "none creation-like or named after the table");
	}
	if (tc->attrs.len && tc->maint.len)
		return psprintf("no time column: only attribute dates (%s) and maintenance stamps (%s)",
						tc->attrs.data, tc->maint.data);
	if (tc->attrs.len)
		return psprintf("no time column: only attribute dates (%s)", tc->attrs.data);
	if (tc->maint.len)
		return psprintf("no time column: only maintenance stamps (%s)", tc->maint.data);
	return pstrdup("no time column: no date or timestamp column");
}

/* rt_describe's note on each date column: the table's reason, or why it
 * is not the time column. */
static void
note_date_columns(TabB *tb, const int *cls)
{
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

void
hw_build_choose_time_columns(Build *b, Datum options)
{
	StringInfoData amb;

	initStringInfo(&amb);
	for (int t = 0; t < b->ntables; t++)
	{
		TabB *tb = &b->tabs[t];
		bool present;
		char *opt = hw_build_option_time_column(b, options, tb->name, &present);
		TimeCandidates tc;

		tb->time_col = -1;
		if (present)
		{
			set_time_column_from_option(tb, opt);
			continue;
		}
		classify_date_columns(tb, &tc);
		tb->time_reason = choose_from_candidates(b, t, &tc, &amb);
		note_date_columns(tb, tc.cls);
	}
	if (amb.len)
		ereport(NOTICE, (errmsg("no time column chosen for tables with several candidates: %s", amb.data),
						 errhint("Set one with rt_set_time_column(model, table, column) or options {\"time_columns\": {\"table\": \"column\"}}.")));
}
