/*
 * catalog_build.c: one build of a model, step by step: discover the schema
 * (catalog_discover.c), scan every table once (catalog_scan.c), type the
 * columns (catalog_infer.c), resolve foreign keys to edges (here, with
 * src/core/snapshot_keys.c), embed (catalog_embed.c), assemble the snapshot
 * and persist everything (catalog_persist.c).  rt_create_model, rt_refresh
 * and the override functions all end here.
 *
 * How a build reads and keeps data
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

#include "pg/catalog/catalog_build_priv.h"

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
			hw_build_nomem_check(snapshot_build_key_order(&tmp, &err));
			tb->keys[k].order = tmp.key_order;
		}
	}
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
	b->e_child = hw_build_xrealloc(b->e_child, sizeof(uint32) * (b->edges_cap + 1));
	b->e_parent = hw_build_xrealloc(b->e_parent, sizeof(uint32) * (b->edges_cap + 1));
	b->e_fk = hw_build_xrealloc(b->e_fk, sizeof(uint16) * (b->edges_cap + 1));
	for (int f = 0; f < b->nfks; f++)
	{
		FkB *fk = &b->fks[f];
		TabB *ct = &b->tabs[fk->child], *pt = &b->tabs[fk->parent];
		KeyB *ck = &ct->keys[fk->ckey], *pk = &pt->keys[fk->pkey];

		if (pt->nrows == 0)
			continue;
		if (pk->index.slot_row == NULL)
		{
			HwError err;

			hw_build_nomem_check(hw_key_index_build(&pk->index, pk->hash, pt->nrows, &err));
		}
		fk->nedges += hw_key_resolve_edges(&pk->index, ck->hash, ct->nrows, offset[fk->child],
										   offset[fk->parent], (uint16) f, b->e_child, b->e_parent,
										   b->e_fk, &b->nedges);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(offset);
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
	cb->func = hw_build_build_cleanup;
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
	hw_build_parse_options(b, options);
	hw_build_discover(b, options);
	PHASE("discovery");
	for (int t = 0; t < b->ntables; t++)
		for (int c = 0; c < b->tabs[t].ncols; c++)
		{
			hw_build_infer_type(&b->tabs[t].cols[c]);
			b->tabs[t].cols[c].stype = b->tabs[t].cols[c].inferred;
		}
	hw_build_apply_overrides(b, options);
	for (int t = 0; t < b->ntables; t++)
		if (b->tabs[t].pk_key < 0)
			ereport(NOTICE,
					(errmsg("table \"%s\" has no primary key: its rows cannot be looked up by key and are reached only through its foreign keys", b->tabs[t].name),
					 errdetail("Its rows are numbered in physical order (tableoid, ctid).")));
	for (int t = 0; t < b->ntables; t++)
	{
		hw_build_scan_table(b, t);
		MemoryContextSwitchTo(bcxt);
		PHASE(b->tabs[t].name);
	}
	hw_build_finish_columns(b);
	hw_build_choose_time_columns(b, options);
	PHASE("columns");
	build_key_orders(b);
	build_edges(b);
	PHASE("edges");
	hw_build_assemble(b);
	PHASE("hw_build_assemble+embed");
	MemoryContextSwitchTo(bcxt);
	model_id = hw_build_persist(b, model_id, options, owner);
	PHASE("hw_build_persist");
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
