/*
 * snapshot_store.c: the persisted snapshot (chunked bytea in
 * headwater.snapshot_chunk, STORAGE EXTERNAL) and its loading by any
 * process; rt_snapshot_info / rt_snapshot_bytes / rt_snapshot_row /
 * rt_snapshot_edges.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"

#include "pg/base/hw_pg.h"
#include "pg/catalog/catalog_priv.h"

/* ---------------------------------------------------------------- storing */

void
hw_store_snapshot_chunks(int32 model_id, const uint8 *buf, size_t len)
{
	Oid argtypes[3] = {INT4OID, INT4OID, BYTEAOID};
	SPIPlanPtr plan;
	int chunk = 0;

	SPI_execute_with_args("DELETE FROM headwater.snapshot_chunk WHERE model_id = $1",
						  1, argtypes, (Datum[]) {Int32GetDatum(model_id)}, NULL, false, 0);
	plan = SPI_prepare("INSERT INTO headwater.snapshot_chunk (model_id, chunk_no, data) "
					   "VALUES ($1, $2, $3)", 3, argtypes);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	for (size_t off = 0; off < len || (len == 0 && chunk == 0); off += HW_SNAPSHOT_CHUNK_BYTES)
	{
		size_t n = Min((size_t) HW_SNAPSHOT_CHUNK_BYTES, len - off);
		bytea *b = palloc(VARHDRSZ + n);
		Datum vals[3];

		SET_VARSIZE(b, VARHDRSZ + n);
		memcpy(VARDATA(b), buf + off, n);
		vals[0] = Int32GetDatum(model_id);
		vals[1] = Int32GetDatum(chunk++);
		vals[2] = PointerGetDatum(b);
		if (SPI_execute_plan(plan, vals, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not store snapshot chunk %d", chunk - 1);
		pfree(b);
		CHECK_FOR_INTERRUPTS();
		if (len == 0)
			break;
	}
	SPI_freeplan(plan);
}

/* ---------------------------------------------------------------- loading */

/* Reassembles the chunks of a model into one malloc'd buffer; caller is
 * connected to SPI as the owner.  Checks the stored format version first so
 * a stale snapshot gets the hint to rebuild. */
static uint8 *
read_snapshot_bytes(int32 model_id, size_t *len_out)
{
	Oid argtypes[1] = {INT4OID};
	Datum args[1] = {Int32GetDatum(model_id)};
	bool isnull;
	int32 fmt;
	char *name;
	uint8 *buf = NULL;
	size_t len = 0, cap = 0;
	Portal portal;

	if (SPI_execute_with_args("SELECT name, snapshot_format FROM headwater.model WHERE model_id = $1",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("model with id %d does not exist", model_id)));
	name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	fmt = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (isnull)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("model \"%s\" has no snapshot", name),
						errhint("Run SELECT rt_refresh(%s).", quote_literal_cstr(name))));
	if (fmt != HW_SNAPSHOT_FORMAT_VERSION)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("snapshot of model \"%s\" has format version %d, this build of headwater reads version %d",
							   name, fmt, HW_SNAPSHOT_FORMAT_VERSION),
						errhint("Run SELECT rt_refresh(%s) to rebuild it.", quote_literal_cstr(name))));

	portal = SPI_cursor_open_with_args(NULL,
									   "SELECT data FROM headwater.snapshot_chunk WHERE model_id = $1 ORDER BY chunk_no",
									   1, argtypes, args, NULL, true, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, 16);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			Datum d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
			bytea *b = DatumGetByteaPP(d);
			size_t n = VARSIZE_ANY_EXHDR(b);

			if (len + n > cap)
			{
				size_t ncap = cap ? cap * 2 : (size_t) HW_SNAPSHOT_CHUNK_BYTES * 2;
				uint8 *nb;

				while (ncap < len + n)
					ncap *= 2;
				nb = realloc(buf, ncap);
				if (nb == NULL)
				{
					free(buf);
					ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
									errmsg("out of memory loading the snapshot of model \"%s\" (%zu bytes)", name, ncap)));
				}
				buf = nb;
				cap = ncap;
			}
			memcpy(buf + len, VARDATA_ANY(b), n);
			len += n;
			if ((Pointer) b != DatumGetPointer(d))
				pfree(b);
		}
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	*len_out = len;
	return buf;
}

HwSnapshot *
hw_pg_snapshot_load(int32 model_id)
{
	HwAsOwner as;
	size_t len = 0;
	uint8 *buf;
	HwSnapshot *snap = NULL;
	HwError err;
	int rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	buf = read_snapshot_bytes(model_id, &len);
	hw_restore_user(&as);
	SPI_finish();
	rc = snapshot_deserialize(buf, len, &snap, &err);
	free(buf);
	if (rc != HW_OK)
	{
		err.code = rc;
		if (rc == HW_ERR_CORRUPT)
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
							errmsg("could not load the snapshot of model %d: %s", model_id, err.msg),
							errhint("Run rt_refresh(model) to rebuild it.")));
		hw_pg_raise_core_error(&err, "could not load the snapshot");
	}
	return snap;
}

static void
snapshot_reset_cb(void *arg)
{
	snapshot_free((HwSnapshot *) arg);
}

HwSnapshot *
hw_pg_snapshot_load_in_context(int32 model_id, MemoryContext cxt)
{
	HwSnapshot *snap = hw_pg_snapshot_load(model_id);
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	cb->func = snapshot_reset_cb;
	cb->arg = snap;
	MemoryContextRegisterResetCallback(cxt, cb);
	return snap;
}

/* ------------------------------------------------------------ SQL functions */

PG_FUNCTION_INFO_V1(rt_snapshot_bytes);
Datum
rt_snapshot_bytes(PG_FUNCTION_ARGS)
{
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32 model_id = hw_pg_model_id(name, false);
	HwAsOwner as;
	size_t len = 0;
	uint8 *buf;
	bytea *res;

	hw_model_require(model_id, HW_RIGHT_OWN, NULL);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	buf = read_snapshot_bytes(model_id, &len);
	hw_restore_user(&as);
	SPI_finish();
	if (len > MaxAllocSize - VARHDRSZ)
	{
		free(buf);
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("snapshot of model \"%s\" is %zu bytes, more than a bytea can hold", name, len),
						errhint("Read the chunks of headwater.snapshot_chunk in chunk_no order instead.")));
	}
	res = palloc(VARHDRSZ + len);
	SET_VARSIZE(res, VARHDRSZ + len);
	memcpy(VARDATA(res), buf, len);
	free(buf);
	PG_RETURN_BYTEA_P(res);
}

PG_FUNCTION_INFO_V1(rt_snapshot_info);
Datum
rt_snapshot_info(PG_FUNCTION_ARGS)
{
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32 model_id = hw_pg_model_id(name, false);
	HwAsOwner as;
	Datum res;
	bool isnull;

	hw_model_require(model_id, HW_RIGHT_OWN, NULL);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args(
			"SELECT jsonb_build_object('bytes', m.snapshot_bytes, 'chunks', "
			"  (SELECT count(*) FROM headwater.snapshot_chunk c WHERE c.model_id = m.model_id), "
			"  'tables', m.n_tables, 'rows', m.n_rows, 'cells', m.n_cells, 'edges', m.n_edges, "
			"  'columns', (SELECT count(*) FROM headwater.model_column c WHERE c.model_id = m.model_id AND c.global_id IS NOT NULL), "
			"  'categories', (SELECT count(*) FROM headwater.model_category c WHERE c.model_id = m.model_id), "
			"  'd_text', m.d_text, 'embedder', m.embedder, 'format_version', m.snapshot_format, "
			"  'bytes_per_cell', round(m.snapshot_bytes::numeric / greatest(m.n_cells, 1), 2)) "
			"FROM headwater.model m WHERE m.model_id = $1",
			1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)}, NULL, true, 1) != SPI_OK_SELECT
		|| SPI_processed != 1)
		elog(ERROR, "model %d vanished", model_id);
	res = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	res = SPI_datumTransfer(res, false, -1);
	hw_restore_user(&as);
	SPI_finish();
	PG_RETURN_DATUM(res);
}

PG_FUNCTION_INFO_V1(rt_snapshot_row);
Datum
rt_snapshot_row(PG_FUNCTION_ARGS)
{
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char *table = text_to_cstring(PG_GETARG_TEXT_PP(1));
	text *key = PG_GETARG_TEXT_PP(2);
	int32 model_id = hw_pg_model_id(name, false);
	HwSnapshot *snap;
	int32 t = -1;
	int64 row;

	hw_model_require(model_id, HW_RIGHT_OWN, NULL);
	snap = hw_pg_snapshot_load_in_context(model_id, CurrentMemoryContext);
	for (int32 i = 0; i < snap->ntables; i++)
		if (strcmp(snap->tables[i].name, table) == 0)
			t = i;
	if (t < 0)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("table \"%s\" is not part of model \"%s\"", table, name)));
	if (snap->tables[t].key_hash == NULL)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("table \"%s\" of model \"%s\" has no primary key", table, name),
						errhint("Rows of a table without a primary key cannot be looked up by key.")));
	row = snapshot_find_row(snap, t, hw_hash_key_text(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)));
	if (row < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(row);
}

PG_FUNCTION_INFO_V1(rt_snapshot_edges);
Datum
rt_snapshot_edges(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32 model_id = hw_pg_model_id(name, false);
	HwSnapshot *snap;

	hw_model_require(model_id, HW_RIGHT_OWN, NULL);
	snap = hw_pg_snapshot_load_in_context(model_id, CurrentMemoryContext);
	InitMaterializedSRF(fcinfo, 0);
	for (uint32 r = 0; r < snap->nrows; r++)
	{
		const HwTable *ct = &snap->tables[snap->row_table[r]];

		for (uint64 e = snap->fp_off[r]; e < snap->fp_off[r + 1]; e++)
		{
			uint32 p = snap->fp_dst[e];
			const HwTable *pt = &snap->tables[snap->row_table[p]];
			Datum v[5];
			bool n[5] = {0};

			v[0] = CStringGetTextDatum(snap->fks[snap->fp_fk[e]].name);
			v[1] = CStringGetTextDatum(ct->name);
			v[2] = Int64GetDatum((int64) r - ct->row_offset);
			v[3] = CStringGetTextDatum(pt->name);
			v[4] = Int64GetDatum((int64) p - pt->row_offset);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
		}
		if ((r & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return (Datum) 0;
}
