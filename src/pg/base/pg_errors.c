/*
 * pg_errors.c: a core HwError raised as a PostgreSQL ERROR with the SQLSTATE
 * that fits its class, so SQL callers can tell bad input from corruption,
 * out-of-memory or a cancel.
 */
#include "postgres.h"

#include "pg/base/pg_errors.h"

void
hw_pg_raise_core_error(const HwError *err, const char *context_msg)
{
	int sqlstate;

	switch (err ? err->code : HW_ERR_INTERNAL)
	{
		case HW_ERR_NOMEM: sqlstate = ERRCODE_OUT_OF_MEMORY; break;
		case HW_ERR_INVALID: sqlstate = ERRCODE_INVALID_PARAMETER_VALUE; break;
		case HW_ERR_CORRUPT: sqlstate = ERRCODE_DATA_CORRUPTED; break;
		case HW_ERR_NUMERIC: sqlstate = ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE; break;
		case HW_ERR_CANCELLED: sqlstate = ERRCODE_QUERY_CANCELED; break;
		default: sqlstate = ERRCODE_INTERNAL_ERROR; break;
	}
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("%s: %s", context_msg ? context_msg : "headwater", err ? err->msg : "unknown error")));
	pg_unreachable();
}
