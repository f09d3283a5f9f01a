/*
 * access.c: who may do what with a model (docs/security.md).
 *
 *   own      the model's owner role, its members, superusers: train, cancel,
 *            refresh, drop, edit tasks and types, inspect weights and
 *            snapshots, grant prediction.
 *   predict  owners, and roles named by rt_grant_predict (or members of
 *            such a role; 'public' names every role); a predicting role also
 *            needs SELECT on the task's anchor table.
 *
 * Grants live in headwater.model_grant (grantee 0 = PUBLIC).  Every check
 * reads headwater's tables as the owner (hw_become_owner, which pins the
 * search_path) and decides as the calling role.  Refusals are 42501 and name
 * the role and the object.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"

#include "pg/base/pg_spi_saved.h"
#include "pg/base/hw_pg.h"

typedef struct ModelRow
{
	char *name;
	Oid   owner;
	char *source_schema;
} ModelRow;

/* the model row; caller connected to SPI; the strings go to cxt, a context
 * the caller had before SPI_connect (SPI_finish frees SPI's own, and the
 * callers read the name and schema after it) */
static void
model_row(int32 model_id, ModelRow *m, MemoryContext cxt)
{
	HwAsOwner as;
	bool isnull;

	hw_become_owner(&as);
	if (hw_spi_execute_saved("SELECT name, owner::oid, source_schema FROM headwater.model WHERE model_id = $1",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)},
							  NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.model");
	hw_restore_user(&as);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model %d does not exist", model_id),
				 errhint("It was dropped concurrently; rt_create_model creates it again.")));
	{
		MemoryContext spi = MemoryContextSwitchTo(cxt);

		m->name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		m->owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		m->source_schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
		MemoryContextSwitchTo(spi);
	}
}

bool
hw_role_may_own(Oid owner)
{
	return superuser() || has_privs_of_role(GetUserId(), owner);
}

static bool
may_own(const ModelRow *m)
{
	return hw_role_may_own(m->owner);
}

/* a grant to PUBLIC, to the caller, or to a role whose privileges the caller has */
static bool
granted_predict(int32 model_id)
{
	HwAsOwner as;
	bool ok = false;

	hw_become_owner(&as);
	if (hw_spi_execute_saved("SELECT grantee FROM headwater.model_grant WHERE model_id = $1",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.model_grant");
	hw_restore_user(&as);
	for (uint64 i = 0; i < SPI_processed && !ok; i++)
	{
		bool isnull;
		Oid grantee = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));

		ok = grantee == InvalidOid || has_privs_of_role(GetUserId(), grantee);
	}
	return ok;
}

static const char *
right_verb(HwModelRight right)
{
	return right == HW_RIGHT_PREDICT ? "predict with" : "manage";
}

bool
hw_model_has_right(int32 model_id, HwModelRight right)
{
	ModelRow m;
	bool ok;

	if (superuser())
		return true;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	model_row(model_id, &m, CurrentMemoryContext);    /* read before SPI_finish only */
	ok = may_own(&m) || (right == HW_RIGHT_PREDICT && granted_predict(model_id));
	SPI_finish();
	return ok;
}

void
hw_model_require(int32 model_id, HwModelRight right, const char *action)
{
	ModelRow m;
	MemoryContext cxt = CurrentMemoryContext;

	if (hw_model_has_right(model_id, right))
		return;
	/* refused: the model's name and owner for the message */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	model_row(model_id, &m, cxt);
	SPI_finish();
	if (right == HW_RIGHT_PREDICT)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not %s model \"%s\"",
						GetUserNameFromId(GetUserId(), false), action ? action : right_verb(right), m.name),
				 errdetail("Prediction needs a grant from the model's owner \"%s\".",
						   GetUserNameFromId(m.owner, true) ? GetUserNameFromId(m.owner, true) : "?"),
				 errhint("The owner runs SELECT rt_grant_predict(%s, %s).",
						 quote_literal_cstr(m.name),
						 quote_literal_cstr(GetUserNameFromId(GetUserId(), false)))));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("role \"%s\" may not %s model \"%s\"",
					GetUserNameFromId(GetUserId(), false), action ? action : right_verb(right), m.name),
			 errdetail("Only the model's owner \"%s\", its members and superusers may.",
					   GetUserNameFromId(m.owner, true) ? GetUserNameFromId(m.owner, true) : "?"),
			 errhint("Ask the owner, or a superuser, to do it (or GRANT the owner's role to you).")));
}

/* The anchor table found by the latest hw_task_require_predict: serving
 * asks, right after that check, whether row-level security applies to it
 * (hw_task_anchor_rls) without reading headwater.task again. */
static struct
{
	LocalTransactionId lxid;
	int32   task_id;
	Oid     relid;
} last_anchor;

void
hw_task_require_predict(int32 model_id, int32 task_id, const char *task_name)
{
	ModelRow m;
	HwAsOwner as;
	char *anchor;
	Oid nsp, rel;
	MemoryContext cxt = CurrentMemoryContext;

	hw_model_require(model_id, HW_RIGHT_PREDICT, "predict with");
	if (superuser())
		return;
	/* predictions read the anchor row: the caller must be able to SELECT it */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	model_row(model_id, &m, cxt);
	hw_become_owner(&as);
	if (hw_spi_execute_saved("SELECT anchor_table FROM headwater.task WHERE task_id = $1",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(task_id)},
							  NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "task \"%s\" vanished", task_name);
	hw_restore_user(&as);
	{
		char *a = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		anchor = MemoryContextStrdup(cxt, a ? a : "");
	}
	SPI_finish();
	nsp = get_namespace_oid(m.source_schema, true);
	rel = OidIsValid(nsp) ? get_relname_relid(anchor, nsp) : InvalidOid;
	if (!OidIsValid(rel))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("anchor table %s of task \"%s\" does not exist",
						quote_qualified_identifier(m.source_schema, anchor), task_name),
				 errhint("The source schema changed: rt_refresh(%s) rebuilds the model.", quote_literal_cstr(m.name))));
	last_anchor.lxid = MyProc->lxid;
	last_anchor.task_id = task_id;
	last_anchor.relid = rel;
	if (pg_class_aclcheck(rel, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not predict with task \"%s\": no SELECT privilege on its anchor table %s",
						GetUserNameFromId(GetUserId(), false), task_name,
						quote_qualified_identifier(m.source_schema, anchor)),
				 errhint("Predictions read the anchor row: GRANT SELECT ON %s TO %s.",
						 quote_qualified_identifier(m.source_schema, anchor),
						 quote_identifier(GetUserNameFromId(GetUserId(), false)))));
}

/* The anchor table of a task, read as the owner (InvalidOid when it is gone). */
static Oid
anchor_relid(int32 task_id)
{
	HwAsOwner as;
	char   *schema = NULL, *table = NULL;
	Oid     nsp;
	MemoryContext cxt = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (hw_spi_execute_saved("SELECT m.source_schema, t.anchor_table FROM headwater.task t "
							  "JOIN headwater.model m USING (model_id) WHERE t.task_id = $1",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(task_id)},
							  NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.task");
	hw_restore_user(&as);
	if (SPI_processed == 1)
	{
		MemoryContext spi = MemoryContextSwitchTo(cxt);

		schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		table = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	if (schema == NULL || table == NULL)
		return InvalidOid;
	nsp = get_namespace_oid(schema, true);
	return OidIsValid(nsp) ? get_relname_relid(table, nsp) : InvalidOid;
}

Oid
hw_task_anchor_rls(int32 task_id)
{
	Oid     rel;

	/* superusers and BYPASSRLS roles see every row: no lookup at all */
	if (superuser() || has_bypassrls_privilege(GetUserId()))
		return InvalidOid;
	if (last_anchor.lxid == MyProc->lxid && last_anchor.task_id == task_id && OidIsValid(last_anchor.relid))
		rel = last_anchor.relid;
	else
		rel = anchor_relid(task_id);
	if (!OidIsValid(rel))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the anchor table of task %d does not exist", task_id),
				 errhint("The source schema changed: rt_refresh(model) rebuilds the model.")));
	/* as the caller; ERROR (42501) when row_security is off and a policy applies */
	return check_enable_rls(rel, InvalidOid, false) == RLS_ENABLED ? rel : InvalidOid;
}

void
hw_job_require_visible(int64 job_id)
{
	HwAsOwner as;
	bool isnull, found;
	int32 model_id = -1;
	Oid role = InvalidOid;

	if (superuser())
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT model_id, role_oid FROM headwater.job WHERE job_id = $1",
							  1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)},
							  NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.job");
	hw_restore_user(&as);
	found = SPI_processed == 1;
	if (found)
	{
		model_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		role = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_finish();
	if (!found)
		return;			/* the caller reports a missing job */
	if (has_privs_of_role(GetUserId(), role) || hw_model_has_right(model_id, HW_RIGHT_OWN))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("role \"%s\" may not follow training job %lld",
					GetUserNameFromId(GetUserId(), false), (long long) job_id),
			 errdetail("A job is visible to the role that started it, to its model's owner and to superusers."),
			 errhint("rt_status() lists the jobs you may see.")));
}

/* ------------------------------------------------------- SQL entry points */

/* role name -> oid; 'public' (any case) -> InvalidOid = PUBLIC */
static Oid
grantee_oid(const char *role)
{
	if (pg_strcasecmp(role, "public") == 0)
		return InvalidOid;
	return get_role_oid(role, false);   /* 42704 naming the role */
}

static void
edit_grant(FunctionCallInfo fcinfo, bool grant)
{
	char *model, *role;
	int32 model_id;
	Oid grantee;
	HwAsOwner as;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s: model and role must not be NULL", grant ? "rt_grant_predict" : "rt_revoke_predict"),
				 errhint("Pass a model name and a role name (or 'public').")));
	model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	role = text_to_cstring(PG_GETARG_TEXT_PP(1));
	model_id = hw_pg_model_id(model, false);
	hw_model_require(model_id, HW_RIGHT_OWN, grant ? "grant prediction on" : "revoke prediction on");
	grantee = grantee_oid(role);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args(grant
							  ? "INSERT INTO headwater.model_grant (model_id, grantee) VALUES ($1, $2) "
								"ON CONFLICT DO NOTHING"
							  : "DELETE FROM headwater.model_grant WHERE model_id = $1 AND grantee = $2",
							  2, (Oid[]) {INT4OID, OIDOID},
							  (Datum[]) {Int32GetDatum(model_id), ObjectIdGetDatum(grantee)},
							  NULL, false, 0) < 0)
		elog(ERROR, "could not write headwater.model_grant");
	if (!grant && SPI_processed == 0)
		ereport(NOTICE,
				(errmsg("role \"%s\" had no prediction grant on model \"%s\"", role, model)));
	hw_restore_user(&as);
	SPI_finish();
}

PG_FUNCTION_INFO_V1(rt_grant_predict);
Datum
rt_grant_predict(PG_FUNCTION_ARGS)
{
	edit_grant(fcinfo, true);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(rt_revoke_predict);
Datum
rt_revoke_predict(PG_FUNCTION_ARGS)
{
	edit_grant(fcinfo, false);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(rt_grants);
Datum
rt_grants(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char *model;
	int32 model_id;
	HwAsOwner as;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("rt_grants: model must not be NULL"),
				 errhint("Pass a model name.")));
	model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	model_id = hw_pg_model_id(model, false);
	hw_model_require(model_id, HW_RIGHT_OWN, "list the grants of");
	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (SPI_execute_with_args("SELECT grantee FROM headwater.model_grant WHERE model_id = $1 ORDER BY grantee",
							  1, (Oid[]) {INT4OID}, (Datum[]) {Int32GetDatum(model_id)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read headwater.model_grant");
	hw_restore_user(&as);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool isnull;
		Oid grantee = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		const char *name = grantee == InvalidOid ? "public" : GetUserNameFromId(grantee, true);
		Datum v[2];
		bool n[2] = {false, false};

		if (name == NULL)
			continue;           /* a dropped role: its grant is inert */
		v[0] = CStringGetTextDatum(name);
		v[1] = CStringGetTextDatum("predict");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	}
	SPI_finish();
	return (Datum) 0;
}
