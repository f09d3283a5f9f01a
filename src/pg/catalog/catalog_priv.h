/*
 * catalog_priv.h: what the catalog files (catalog*.c, snapshot_store.c,
 * describe.c) share; not for other engineers' files (use hw_pg.h).
 *
 * Privileges: the SQL entry points are not SECURITY DEFINER.  They read the
 * source tables through SPI as the calling role (so a role that cannot
 * SELECT a table gets the usual permission error), and switch to the owner
 * of schema headwater (the extension owner) only around reads and writes of
 * headwater's own tables, which PUBLIC cannot touch.  A transaction abort
 * restores the user id, so an error between the two calls is safe.
 */
#ifndef HW_CATALOG_PRIV_H
#define HW_CATALOG_PRIV_H

#include "postgres.h"

#include "pg/base/hw_pg.h"

/* HwAsOwner, hw_become_owner, hw_restore_user: see hw_pg.h */

/* access checks: hw_model_require (hw_pg.h, access.c) */

/* Stores a serialized snapshot as chunks (replacing the old ones); caller is
 * connected to SPI and has become the owner. */
void hw_store_snapshot_chunks(int32 model_id, const uint8 *buf, size_t len);

#define HW_SNAPSHOT_CHUNK_BYTES (1024 * 1024)

#endif
