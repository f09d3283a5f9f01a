/*
 * snapshot_build.h: helpers that fill the derived arrays of an HwSnapshot
 * (implemented in snapshot.c).  Used by the catalog (src/pg/catalog*.c) and
 * by tests/benchmarks that build synthetic snapshots.
 */
#ifndef HW_SNAPSHOT_BUILD_H
#define HW_SNAPSHOT_BUILD_H

#include "core/snapshot.h"

/* Fills tb->key_order from tb->key_hash (malloc'd [nrows] by the caller);
 * no-op when key_hash is NULL.  Not thread-safe. */
int snapshot_build_key_order(HwTable *tb, HwError *err);

/* From tables[].nrows and time columns: row_offset, nrows, row_table,
 * row_time_us. */
int snapshot_build_rows(HwSnapshot *snap, HwError *err);

/* Both CSRs (F->P, P->F) from an edge list of nedges (child global row,
 * parent global row, FK index).  Needs nrows and nfks set. */
int snapshot_build_csr(HwSnapshot *snap, size_t nedges, const uint32_t *child,
					   const uint32_t *parent, const uint16_t *fk, HwError *err);

#endif
