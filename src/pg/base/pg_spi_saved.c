/*
 * pg_spi_saved.c: SPI statements run from saved plans (pg_spi_saved.h).
 *
 * A backend keeps at most SAVED_MAX plans, found by their statement text
 * and argument types; past that a statement runs unsaved.  The texts are
 * the callers' literals, so the table fills once and stays small.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/memutils.h"

#include "pg/base/pg_spi_saved.h"

#define SAVED_MAX  32
#define SAVED_ARGS 8

typedef struct SavedPlan
{
	char       *sql;                 /* in TopMemoryContext */
	int         nargs;
	Oid         argtypes[SAVED_ARGS];
	SPIPlanPtr  plan;                /* SPI_keepplan'd */
} SavedPlan;

static SavedPlan saved[SAVED_MAX];
static int       nsaved;

static SPIPlanPtr
saved_find(const char *sql, int nargs, const Oid *argtypes)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].nargs == nargs && strcmp(saved[i].sql, sql) == 0 &&
			memcmp(saved[i].argtypes, argtypes, sizeof(Oid) * nargs) == 0)
			return saved[i].plan;
	return NULL;
}

/* prepares and keeps the statement's plan; NULL when the table is full */
static SPIPlanPtr
saved_add(const char *sql, int nargs, const Oid *argtypes)
{
	SPIPlanPtr plan;
	SavedPlan *e;
	char      *text;

	if (nsaved >= SAVED_MAX || nargs > SAVED_ARGS)
		return NULL;
	/* the text first: an out-of-memory error then leaks no kept plan */
	text = MemoryContextStrdup(TopMemoryContext, sql);
	plan = SPI_prepare(sql, nargs, (Oid *) argtypes);
	if (plan == NULL || SPI_keepplan(plan) != 0)
	{
		pfree(text);
		elog(ERROR, "could not prepare and keep \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	}
	e = &saved[nsaved];
	e->sql = text;
	e->nargs = nargs;
	memcpy(e->argtypes, argtypes, sizeof(Oid) * nargs);
	e->plan = plan;
	nsaved++;
	return plan;
}

int
hw_spi_execute_saved(const char *sql, int nargs, const Oid *argtypes, Datum *values, const char *nulls,
					 bool read_only, long tcount)
{
	SPIPlanPtr plan = saved_find(sql, nargs, argtypes);

	if (plan == NULL)
		plan = saved_add(sql, nargs, argtypes);
	if (plan == NULL)
		return SPI_execute_with_args(sql, nargs, (Oid *) argtypes, values, nulls, read_only, tcount);
	return SPI_execute_plan(plan, values, nulls, read_only, tcount);
}
