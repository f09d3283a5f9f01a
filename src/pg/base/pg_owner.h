/*
 * pg_owner.h: acting as the owner of schema headwater (the extension owner)
 * around statements on headwater's own tables, which PUBLIC cannot touch;
 * source tables are always read as the calling role.  While acting as the
 * owner the search_path is pinned to "pg_catalog, headwater, pg_temp" so no
 * object of the caller's can shadow a built-in.  Pairs must nest (LIFO).  A
 * transaction abort restores both.
 */
#ifndef HW_PG_OWNER_H
#define HW_PG_OWNER_H

#include "postgres.h"

typedef struct HwAsOwner
{
	Oid  save_userid;
	int  save_sec_context;
	int  guc_nestlevel;
} HwAsOwner;

void hw_become_owner(HwAsOwner *s);
void hw_restore_user(const HwAsOwner *s);

#endif
