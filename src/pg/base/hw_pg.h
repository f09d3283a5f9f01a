/*
 * hw_pg.h: what the src/pg files share (PostgreSQL side only).
 *
 * The shared utilities live in files of their own (pg_owner.h,
 * pg_errors.h, pg_model_lookup.h, pg_xact.h), included here so a feature
 * file needs one include; snapshot_store.c loads snapshots, access.c checks
 * rights.
 */
#ifndef HW_PG_H
#define HW_PG_H

#include "postgres.h"

#include "postmaster/bgworker.h"
#include "fmgr.h"
#include "core/snapshot.h"

#include "pg/base/pg_errors.h"
#include "pg/base/pg_model_lookup.h"
#include "pg/base/pg_owner.h"
#include "pg/base/pg_xact.h"

/* Loads the persisted snapshot of a model (one call, any process: backend or
 * background worker; needs a transaction and SPI not connected by the
 * caller).  The result is malloc-owned: free it with snapshot_free(), or let
 * hw_pg_snapshot_load_in_context() tie it to a memory context. */
HwSnapshot *hw_pg_snapshot_load(int32 model_id);

/* Same, but registers a reset callback on `cxt` that frees it. */
HwSnapshot *hw_pg_snapshot_load_in_context(int32 model_id, MemoryContext cxt);

/* Calls a type's input function (timestamp_in, interval_in, ...) on s.
 * False when the type rejects the text (an error of class 22, data
 * exception, which is flushed); any other error (a cancel, out of memory)
 * propagates.  type_input.c. */
bool hw_pg_try_type_input(PGFunction input_fn, const char *s, Datum *result);

/* pg_bgworker.c: w describes a headwater background worker running
 * function (exported by the library) of bgw_type `type` with main_arg arg;
 * the caller names it (bgw_name) and registers it. */
void hw_pg_bgworker_init(BackgroundWorker *w, const char *function, const char *type, Datum arg);

/* Rights on a model (access.c; docs/security.md).  OWN: the model's owner
 * role, its members, superusers.  PREDICT: those, plus roles granted with
 * rt_grant_predict (members of a granted role; 'public': everyone). */
typedef enum HwModelRight
{
	HW_RIGHT_OWN,
	HW_RIGHT_PREDICT
} HwModelRight;

/* whether the current user holds `right` on the model */
bool hw_model_has_right(int32 model_id, HwModelRight right);

/* ERROR 42501 naming the role and the model unless the current user holds
 * `right`; `action` words the refusal ("train", "cancel training of", ...). */
void hw_model_require(int32 model_id, HwModelRight right, const char *action);

/* ERROR 42501 unless the current user started training job job_id, owns its
 * model, or is a superuser (a missing job is left to the caller). */
void hw_job_require_visible(int64 job_id);

/* PREDICT on the task's model plus SELECT on its anchor table (42501). */
void hw_task_require_predict(int32 model_id, int32 task_id, const char *task_name);

/* Whether the current user may own what `owner` owns: a member of it (with
 * its privileges) or a superuser. */
bool hw_role_may_own(Oid owner);

/* The task's anchor table when row-level security is in force on it for the
 * current user (check_enable_rls: RLS_ENABLED), else InvalidOid; then the
 * caller may read every row it has SELECT on.  Right after
 * hw_task_require_predict for the same task (hw_serving_get) it reads no
 * table; superusers and BYPASSRLS roles cost nothing.  ERROR 42P01 when the
 * anchor table is gone. */
Oid hw_task_anchor_rls(int32 task_id);

#endif
