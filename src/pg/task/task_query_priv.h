/*
 * task_query_priv.h: what the two halves of building a query task share:
 * task_query.c checks the query's result columns, task_query_seeds.c reads
 * its rows into the task's seeds.
 */
#ifndef HW_TASK_QUERY_PRIV_H
#define HW_TASK_QUERY_PRIV_H

#include "postgres.h"

#include "access/tupdesc.h"

#include "pg/task/task_priv.h"

/*
 * What the phases of building a query task share: the query, its result's
 * columns and the role each plays, the anchor table and the target's type.
 */
typedef struct QueryTaskBuild
{
	HwTask *t;
	const HwPgTaskModel *mi;
	const HwSnapshot *snap;
	const HwPgTaskOptions *opts;
	char   *q;                  /* the query, without a trailing semicolon */
	TupleDesc td;               /* its result's columns */
	int     natts;
	const char *cols;           /* "a, b, c": the returned columns, for error details */
	const char *anchor;         /* the anchor table ... */
	int     at;                 /* ... and its index in the snapshot */
	char  **pk;                 /* pk[npk]: the anchor's primary key columns */
	int     npk;
	int    *role;               /* role[natts]: ROLE_* of each result column */
	int     obsatt, tgtatt, splitatt, ltatt;   /* result column of each role, or -1 */
	Oid     obst, tgtt;         /* SQL types of the observation time and the target */
	const char *tgtname;
	int     st;                 /* the target's semantic type */
} QueryTaskBuild;

/* What a result column of the task query is. */
typedef enum QueryColumnRole
{
	ROLE_NONE = 0, ROLE_KEY, ROLE_OBS_TIME, ROLE_TARGET, ROLE_SPLIT, ROLE_LABEL_TIME
} QueryColumnRole;

/* The seeds as read from the query (opaque outside task_query_seeds.c). */
typedef struct QuerySeeds QuerySeeds;

static inline const char *
query_att_name(const QueryTaskBuild *b, int a)
{
	return NameStr(TupleDescAttr(b->td, a)->attname);
}

/* Runs the query for its seeds (as the caller, connected to SPI). */
QuerySeeds *hw_pgtask_read_query_seeds(QueryTaskBuild *b);

/* Reports the problems found while reading (ERROR), then stores the seeds,
 * the options, label times, splits and embeddings in the task. */
void hw_pgtask_store_query_seeds(QueryTaskBuild *b, QuerySeeds *s);

#endif
