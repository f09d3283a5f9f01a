/*
 * catalog_persist.c: the snapshot assembled from the build and written,
 * with the catalog rows (tables, columns with their statistics and the
 * reasons of inference, foreign keys), as the owner of schema headwater.
 */
#include "postgres.h"

#include "pg/catalog/catalog_build_priv.h"

/* ------------------------------------------------------------- assembly */

/* Column col's values move into the snapshot's column hc (the build's
 * arrays are handed over, not copied; numerical values are standardised
 * into float32, col->m2 holding the std by now). */
static void
assemble_column(const TabB *tb, ColB *col, HwColumn *hc)
{
	hc->name = strdup(col->name);
	if (!hc->name)
		hw_build_nomem_check(HW_ERR_NOMEM);
	hc->global_id = col->global_id;
	hc->stype = (int8) col->stype;
	hc->null_count = (int64) tb->nrows - col->nonnull;
	if (col->stype == HW_ST_IGNORED)
	{
		hc->null_count = 0;
		return;
	}
	hc->valid = col->valid;
	col->valid = NULL;
	switch (col->stype)
	{
		case HW_ST_NUMERICAL:
			{
				float *z = malloc(sizeof(float) * (tb->nrows ? tb->nrows : 1));

				if (!z)
					hw_build_nomem_check(HW_ERR_NOMEM);
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

/* Table tb into the snapshot's table ht: its columns and primary key index. */
static void
assemble_table(TabB *tb, HwTable *ht)
{
	ht->name = strdup(tb->name);
	ht->nrows = tb->nrows;
	ht->ncols = tb->ncols;
	ht->time_col = tb->time_col;
	ht->cols = calloc(tb->ncols ? tb->ncols : 1, sizeof(HwColumn));
	if (!ht->name || !ht->cols)
		hw_build_nomem_check(HW_ERR_NOMEM);
	for (int c = 0; c < tb->ncols; c++)
		assemble_column(tb, &tb->cols[c], &ht->cols[c]);
	if (tb->pk_key >= 0)
	{
		ht->key_hash = tb->keys[tb->pk_key].hash;
		ht->key_order = tb->keys[tb->pk_key].order;
		tb->keys[tb->pk_key].hash = NULL;
		tb->keys[tb->pk_key].order = NULL;
	}
}

void
hw_build_assemble(Build *b)
{
	HwSnapshot *s = calloc(1, sizeof(HwSnapshot));
	HwError err;

	if (!s)
		hw_build_nomem_check(HW_ERR_NOMEM);
	b->snap = s;
	s->tables = calloc(b->ntables, sizeof(HwTable));
	s->fks = calloc(b->nfks ? b->nfks : 1, sizeof(HwForeignKey));
	if (!s->tables || !s->fks)
		hw_build_nomem_check(HW_ERR_NOMEM);
	s->ntables = b->ntables;
	for (int t = 0; t < b->ntables; t++)
		assemble_table(&b->tabs[t], &s->tables[t]);
	s->nfks = b->nfks;
	for (int f = 0; f < b->nfks; f++)
	{
		s->fks[f].name = strdup(b->fks[f].name);
		s->fks[f].child_table = b->fks[f].child;
		s->fks[f].parent_table = b->fks[f].parent;
	}
	/* times are standardised by the snapshot-wide mean and std */
	if (b->ts_n > 0)
	{
		s->ts_mean_us = b->ts_mean;
		s->ts_std_us = sqrt(b->ts_m2 / b->ts_n);
	}
	if (!(s->ts_std_us > 0))
		s->ts_std_us = 1;
	if (snapshot_build_rows(s, &err) != HW_OK || snapshot_build_csr(s, b->nedges, b->e_child, b->e_parent, b->e_fk, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not build the snapshot");
	hw_build_embed_all(b, s);
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
		const char *nm = tb->cols[hw_build_find_col_att(tb, att[i])].name;

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

/* Cells of the snapshot: rows times the columns that are not ignored. */
static int64
count_cells(const HwSnapshot *s)
{
	int64 cells = 0;

	for (int t = 0; t < s->ntables; t++)
		for (int c = 0; c < s->tables[t].ncols; c++)
			if (s->tables[t].cols[c].stype != HW_ST_IGNORED)
				cells += s->tables[t].nrows;
	return cells;
}

/* The model's row: inserted (model_id < 0; returns the new id), or updated
 * with its old catalog rows deleted (a refresh). */
static int32
write_model_row(Build *b, int32 model_id, Datum options, Oid owner)
{
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
		return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}

	Oid types[4] = {INT4OID, JSONBOID, INT4OID, TEXTOID};
	Datum v[4] = {Int32GetDatum(model_id), options, Int32GetDatum(b->d_text), CStringGetTextDatum(b->embedder)};

	SPI_execute_with_args("UPDATE headwater.model SET options = $2, d_text = $3, embedder = $4 WHERE model_id = $1",
						  4, types, v, NULL, false, 0);
	SPI_execute_with_args("DELETE FROM headwater.model_table WHERE model_id = $1; ", 1, types, v, NULL, false, 0);
	SPI_execute_with_args("DELETE FROM headwater.model_column WHERE model_id = $1", 1, types, v, NULL, false, 0);
	SPI_execute_with_args("DELETE FROM headwater.model_fk WHERE model_id = $1", 1, types, v, NULL, false, 0);
	SPI_execute_with_args("DELETE FROM headwater.model_category WHERE model_id = $1", 1, types, v, NULL, false, 0);
	return model_id;
}

/* headwater.model_table: each table's rows, key and time column. */
static void
write_table_rows(Build *b, int32 model_id)
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

/* headwater.model_column: each column's types, statistics and inference. */
static void
write_column_rows(Build *b, int32 model_id)
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
			HwColumn *hc = &b->snap->tables[t].cols[c];
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

/* headwater.model_fk: each foreign key and its edge count. */
static void
write_fk_rows(Build *b, int32 model_id)
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

/* The categories of one categorical column, in block order, with counts
 * (values in text order unless the block was seeded from an enum's order). */
static void
write_column_categories(SPIPlanPtr plan, int32 model_id, TabB *tb, ColB *col, const HwColumn *hc)
{
	int64 *cnt = palloc0(sizeof(int64) * (col->cat_count ? col->cat_count : 1));
	uint32 *byrank = palloc(sizeof(uint32) * (col->cat_count ? col->cat_count : 1));

	for (uint32 r = 0; r < tb->nrows; r++)
		if (hc->valid[r])
			cnt[hc->u32[r] - col->cat_start]++;
	for (uint32 i = 0; i < col->cat_count; i++)
		byrank[i] = i;
	if (!col->enum_seeded)
		hw_build_sort_ids_by_text(byrank, col->cat_count, col->map);
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

/* headwater.model_category: per categorical column. */
static void
write_category_rows(Build *b, int32 model_id)
{
	Oid types[6] = {INT4OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, INT8OID};
	SPIPlanPtr plan = SPI_prepare("INSERT INTO headwater.model_category VALUES ($1, $2, $3, $4, $5, $6)", 6, types);

	for (int t = 0; t < b->ntables; t++)
	{
		TabB *tb = &b->tabs[t];

		for (int c = 0; c < tb->ncols; c++)
			if (tb->cols[c].stype == HW_ST_CATEGORICAL)
				write_column_categories(plan, model_id, tb, &tb->cols[c], &b->snap->tables[t].cols[c]);
	}
	SPI_freeplan(plan);
}

/* The snapshot's format, size and counts on the model's row. */
static void
write_snapshot_totals(Build *b, int32 model_id, size_t len, int64 cells)
{
	Oid types[7] = {INT4OID, INT4OID, INT8OID, INT4OID, INT8OID, INT8OID, INT8OID};
	Datum v[7] = {Int32GetDatum(model_id), Int32GetDatum(HW_SNAPSHOT_FORMAT_VERSION), Int64GetDatum((int64) len),
		Int32GetDatum(b->ntables), Int64GetDatum((int64) b->snap->nrows), Int64GetDatum(cells),
		Int64GetDatum((int64) b->nedges)};

	SPI_execute_with_args("UPDATE headwater.model SET snapshot_format = $2, snapshot_bytes = $3, n_tables = $4, "
						  "n_rows = $5, n_cells = $6, n_edges = $7, refreshed_at = now() WHERE model_id = $1",
						  7, types, v, NULL, false, 0);
}

static void
log_elapsed(const char *what, instr_time p0)
{
	instr_time p1;

	INSTR_TIME_SET_CURRENT(p1);
	INSTR_TIME_SUBTRACT(p1, p0);
	elog(DEBUG1, "headwater hw_build_persist: %s at %.1f ms", what, INSTR_TIME_GET_MILLISEC(p1));
}

int32
hw_build_persist(Build *b, int32 model_id, Datum options, Oid owner)
{
	HwAsOwner as;
	HwSnapshot *s = b->snap;
	uint8 *buf = NULL;
	size_t len = 0;
	HwError err;
	instr_time p0, p1;

	INSTR_TIME_SET_CURRENT(p0);
	if (snapshot_serialize(s, &buf, &len, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not serialize the snapshot");
	INSTR_TIME_SET_CURRENT(p1);
	INSTR_TIME_SUBTRACT(p1, p0);
	elog(DEBUG1, "headwater hw_build_persist: serialized %zu bytes in %.1f ms", len, INSTR_TIME_GET_MILLISEC(p1));

	hw_become_owner(&as);
	model_id = write_model_row(b, model_id, options, owner);
	write_table_rows(b, model_id);
	write_column_rows(b, model_id);
	write_fk_rows(b, model_id);
	write_category_rows(b, model_id);
	log_elapsed("catalog rows written", p0);
	hw_store_snapshot_chunks(model_id, buf, len);
	free(buf);
	log_elapsed("chunks stored", p0);
	write_snapshot_totals(b, model_id, len, count_cells(s));
	hw_restore_user(&as);
	return model_id;
}
