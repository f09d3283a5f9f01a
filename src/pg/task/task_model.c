/*
 * task_model.c: what the task files need of the model: its row and the
 * owner check, the snapshot's tables and columns by name, text embeddings
 * with the model's embedder, and freeing loaded tasks with a memory context.
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "utils/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "core/embed_hash.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/task/task_priv.h"

/* ------------------------------------------------------------ privileges */

/* Model row (caller connected to SPI) and the access check. */
void
hw_pgtask_model_info(int32 model_id, const char *name, HwPgTaskModel *mi)
{
	HwAsOwner as;
	bool isnull;

	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT source_schema, embedder, d_text, owner::oid FROM headwater.model "
							  "WHERE model_id = $1", 1, (Oid[]) {INT4OID},
							  (Datum[]) {Int32GetDatum(model_id)}, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read model %d", model_id);
	hw_restore_user(&as);
	mi->model_id = model_id;
	mi->name = pstrdup(name);
	mi->source_schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	mi->embedder = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	mi->d_text = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	mi->owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
	hw_model_require(model_id, HW_RIGHT_OWN, NULL);
}

/* ----------------------------------------------------------- small helpers */

static void
free_task_cb(void *arg)
{
	hw_task_free((HwTask *) arg);
}

/* Frees a malloc'd task when cxt is reset or deleted (also on ERROR). */
void
hw_pgtask_free_with(HwTask *t, MemoryContext cxt)
{
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	cb->func = free_task_cb;
	cb->arg = t;
	MemoryContextRegisterResetCallback(cxt, cb);
}

int
hw_pgtask_snap_table(const HwSnapshot *snap, const char *name)
{
	for (int t = 0; t < snap->ntables; t++)
		if (strcmp(snap->tables[t].name, name) == 0)
			return t;
	return -1;
}

int
hw_pgtask_snap_column(const HwSnapshot *snap, int t, const char *name)
{
	for (int c = 0; c < snap->tables[t].ncols; c++)
		if (strcmp(snap->tables[t].cols[c].name, name) == 0)
			return c;
	return -1;
}

/* out[n, d] f16 embeddings of strings with the model's embedder (the
 * built-in hash, or a user function text -> float4[] called as the caller). */
void
hw_pgtask_embed_strings(const HwPgTaskModel *mi, char **s, int n, uint16 *out)
{
	size_t d = (size_t) mi->d_text;

	if (strcmp(mi->embedder, "hash") == 0)
	{
		for (int i = 0; i < n; i++)
			hw_embed_hash_f16(s[i], strlen(s[i]), mi->d_text, out + d * i);
		return;
	}
	char *sql = psprintf("SELECT (%s($1))::float4[]", mi->embedder);

	for (int i = 0; i < n; i++)
	{
		bool isnull;
		Datum *vals;
		bool *vnull;
		int nv;

		if (SPI_execute_with_args(sql, 1, (Oid[]) {TEXTOID}, (Datum[]) {CStringGetTextDatum(s[i])},
								  NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "embedding function %s returned no row", mi->embedder);
		Datum v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (isnull)
			ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
							errmsg("embedding function %s returned NULL for \"%s\"", mi->embedder, s[i])));
		deconstruct_array(DatumGetArrayTypeP(v), FLOAT4OID, 4, true, TYPALIGN_INT, &vals, &vnull, &nv);
		if (nv != mi->d_text)
			ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
							errmsg("embedding function %s returned %d values, expected %d",
								   mi->embedder, nv, mi->d_text)));
		for (int k = 0; k < nv; k++)
			out[d * i + k] = hw_f32_to_f16(vnull[k] ? 0.0f : DatumGetFloat4(vals[k]));
		SPI_freetuptable(SPI_tuptable);
	}
}
