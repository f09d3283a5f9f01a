/*
 * pg_owner.c: acting as the owner of schema headwater around statements on
 * headwater's own tables (see pg_owner.h).
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/syscache.h"
#include "access/htup_details.h"

#include "pg/base/pg_owner.h"

/*
 * The search_path every owner-context statement runs under: the caller's
 * path could name a schema of theirs holding an operator or function that
 * shadows a built-in (e.g. mal.=(text,text)), which would then run with the
 * owner's rights.  pg_temp last: never searched for functions or operators
 * unless named, and only after the trusted schemas for relations.
 */
#define HW_OWNER_SEARCH_PATH "pg_catalog, headwater, pg_temp"

void
hw_become_owner(HwAsOwner *s)
{
	Oid nsp = get_namespace_oid("headwater", false);
	HeapTuple tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	Oid owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for schema headwater");
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	GetUserIdAndSecContext(&s->save_userid, &s->save_sec_context);
	/* pin the path before switching: a GUC nest level undone by
	 * hw_restore_user, or by the transaction abort on ERROR (as PostgreSQL's
	 * own maintenance commands do) */
	s->guc_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", HW_OWNER_SEARCH_PATH, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	SetUserIdAndSecContext(owner, s->save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
}

void
hw_restore_user(const HwAsOwner *s)
{
	SetUserIdAndSecContext(s->save_userid, s->save_sec_context);
	AtEOXact_GUC(false, s->guc_nestlevel);
}
