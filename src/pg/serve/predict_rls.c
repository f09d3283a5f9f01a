/*
 * predict_rls.c: row-level security in serving (hw_predict.h).
 *
 * A prediction reads its anchor row from the model's snapshot, which holds
 * every row.  When row-level security is in force on the anchor table for
 * the caller (hw_task_anchor_rls), the keys asked for are looked up in the
 * table itself through the caller's own query, one for all the keys of a
 * call:
 *   SELECT k.c1 FROM s.t k WHERE k.c1 = ANY ($1)                  one column
 *   SELECT k.c1, k.c2 FROM s.t k
 *     WHERE (k.c1, k.c2) IN (SELECT * FROM unnest($1, $2))        composite
 * run as the calling role (never the owner), names quoted, values as SPI
 * parameters of the key columns' types (so an index on the key serves it).
 * The rows it returns are the ones the policies let the caller see; their
 * keys, written back as text, are compared with the keys asked for in C,
 * so no operator of the caller's can make an invisible row pass.  A key the
 * check cannot be made for (its key column is gone) counts as invisible.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "pg/serve/hw_predict.h"

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The n keys' values of key column k as an array of the column's type
 * (keys: canonical key texts, columns joined by 0x1f). */
static Datum
key_column_array(const HwServingKey *pk, int k, char *const *keys, int n)
{
	Oid     in, ioparam;
	int16   len;
	bool    byval;
	char    align;
	Datum  *vals = palloc(sizeof(Datum) * Max(1, n));

	getTypeInputInfo(pk->typid[k], &in, &ioparam);
	get_typlenbyvalalign(pk->typid[k], &len, &byval, &align);
	for (int i = 0; i < n; i++)
	{
		const char *p = keys[i];
		int     w;

		for (int skip = 0; skip < k && p; skip++)
		{
			p = strchr(p, '\x1f');
			p = p ? p + 1 : NULL;
		}
		if (p == NULL)
			p = "";
		w = (int) strcspn(p, "\x1f");
		vals[i] = OidInputFunctionCall(in, pnstrdup(p, w), ioparam, pk->typmod[k]);
	}
	return PointerGetDatum(construct_array(vals, n, pk->typid[k], len, byval, align));
}

/* The statement that returns the visible rows among the keys ($1..$npk). */
static char *
visible_keys_sql(Oid relid, const HwServingKey *pk)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int k = 0; k < pk->npk; k++)
		appendStringInfo(&sql, "%sk.%s", k ? ", " : "", quote_identifier(pk->cols[k]));
	appendStringInfo(&sql, " FROM %s k WHERE ",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid)));
	if (pk->npk == 1)
	{
		appendStringInfo(&sql, "k.%s = ANY ($1)", quote_identifier(pk->cols[0]));
		return sql.data;
	}
	appendStringInfoChar(&sql, '(');
	for (int k = 0; k < pk->npk; k++)
		appendStringInfo(&sql, "%sk.%s", k ? ", " : "", quote_identifier(pk->cols[k]));
	appendStringInfoString(&sql, ") IN (SELECT * FROM unnest(");
	for (int k = 0; k < pk->npk; k++)
		appendStringInfo(&sql, "%s$%d", k ? ", " : "", k + 1);
	appendStringInfoString(&sql, "))");
	return sql.data;
}

void
hw_predict_keys_visible(Oid relid, const HwServingKey *pk, char *const *keys, int n, bool *visible)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid    *argtypes;
	Datum  *args;
	char  **seen;
	uint64  nseen;

	memset(visible, 0, sizeof(bool) * n);
	if (n == 0 || pk->npk == 0)
		return;
	argtypes = palloc(sizeof(Oid) * pk->npk);
	args = palloc(sizeof(Datum) * pk->npk);
	for (int k = 0; k < pk->npk; k++)
	{
		argtypes[k] = OidIsValid(pk->typid[k]) ? get_array_type(pk->typid[k]) : InvalidOid;
		if (!OidIsValid(argtypes[k]))
			return;				/* the key column is gone: nothing can be shown */
		args[k] = key_column_array(pk, k, keys, n);
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* as the calling role: its policies decide */
	if (SPI_execute_with_args(visible_keys_sql(relid, pk), pk->npk, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the anchor table %u", relid);
	nseen = SPI_processed;
	seen = MemoryContextAlloc(cxt, sizeof(char *) * Max(1, nseen));
	for (uint64 i = 0; i < nseen; i++)
	{
		StringInfoData key;

		initStringInfo(&key);
		for (int k = 0; k < pk->npk; k++)
		{
			char *v = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, k + 1);

			if (k)
				appendStringInfoChar(&key, '\x1f');
			appendStringInfoString(&key, v ? v : "");
		}
		seen[i] = MemoryContextStrdup(cxt, key.data);
	}
	SPI_finish();
	qsort(seen, nseen, sizeof(char *), cmp_str);
	for (int i = 0; i < n; i++)
		visible[i] = nseen > 0 && bsearch(&keys[i], seen, nseen, sizeof(char *), cmp_str) != NULL;
}
