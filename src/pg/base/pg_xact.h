/*
 * pg_xact.h: transactions of a background worker (pg_xact.c).
 */
#ifndef HW_PG_XACT_H
#define HW_PG_XACT_H

#include "postgres.h"

/* StartTransactionCommand for a worker, whose statement clock never moves
 * on its own (no client messages): now() in the transaction is its start. */
void hw_worker_start_transaction(void);

/* Runs SQL with SPI in its own committed transaction, as the extension owner
 * (headwater's tables are not writable by the training role). */
void hw_job_exec_committed(const char *sql, int nargs, Oid *argtypes, Datum *values, const char *nulls);

#endif
