/*
 * pg_xact.c: transactions of a background worker (the training worker).
 *
 * A worker gets no client messages, so its statement clock (now()) would
 * stay at its start: every transaction it runs starts here, which moves it.
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "utils/snapmgr.h"

#include "pg/base/pg_owner.h"
#include "pg/base/pg_xact.h"

void
hw_worker_start_transaction(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
}

void
hw_job_exec_committed(const char *sql, int nargs, Oid *argtypes, Datum *values, const char *nulls)
{
	HwAsOwner as_owner;

	hw_worker_start_transaction();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	hw_become_owner(&as_owner);
	if (SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0) < 0)
		elog(ERROR, "headwater worker: could not run \"%s\"", sql);
	hw_restore_user(&as_owner);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
}
