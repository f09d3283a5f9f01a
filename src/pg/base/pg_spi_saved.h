/*
 * pg_spi_saved.h: SPI statements run from saved plans.
 *
 * The lookups that every rt_predict call makes (task, model, rights,
 * checkpoint, cache key) are short statements whose parse and plan cost
 * more than their execution: run through SPI_execute_with_args they took
 * about 0.7 ms of a single-row call.  hw_spi_execute_saved prepares a
 * statement text once per backend (SPI_prepare + SPI_keepplan) and runs the
 * saved plan afterwards.  PostgreSQL's plan cache revalidates a saved plan
 * after DDL on what it reads and re-parses it when the search_path differs
 * (the callers pin it, pg_owner.h); privileges are checked at every
 * execution as the current user, as for a statement parsed afresh.  So the
 * answer is the one SPI_execute_with_args would give.  For fixed statement texts only (string literals): a text
 * built from names or values is never passed here.
 */
#ifndef HW_PG_SPI_SAVED_H
#define HW_PG_SPI_SAVED_H

#include "postgres.h"

/* As SPI_execute_with_args (caller connected to SPI). */
int hw_spi_execute_saved(const char *sql, int nargs, const Oid *argtypes, Datum *values, const char *nulls,
						 bool read_only, long tcount);

#endif
