/*
 * task_priv.h: what the task files (task_*.c) share; other files use
 * hw_pg_task.h.
 */
#ifndef HW_TASK_PRIV_H
#define HW_TASK_PRIV_H

#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "core/snapshot.h"
#include "core/task.h"

#define EPOCH_2000_US INT64CONST(946684800000000)	/* 2000-01-01 - 1970-01-01 in µs */
#define FETCH_ROWS 10000							/* rows per cursor fetch of a task query */

/* ---- task_model.c */

/* The model a task belongs to. */
typedef struct HwPgTaskModel
{
	int32  model_id;
	char  *name;
	char  *source_schema;
	char  *embedder;
	int32  d_text;
	Oid    owner;
} HwPgTaskModel;

/* Model row (caller connected to SPI) and the access check (owner only). */
void hw_pgtask_model_info(int32 model_id, const char *name, HwPgTaskModel *mi);

/* Frees a malloc'd task when cxt is reset or deleted (also on ERROR). */
void hw_pgtask_free_with(HwTask *t, MemoryContext cxt);

/* Index of the snapshot table / column of table t named name, or -1. */
int  hw_pgtask_snap_table(const HwSnapshot *snap, const char *name);
int  hw_pgtask_snap_column(const HwSnapshot *snap, int t, const char *name);

/* out[n, d] f16 embeddings of strings with the model's embedder (the
 * built-in hash, or a user function text -> float4[] called as the caller). */
void hw_pgtask_embed_strings(const HwPgTaskModel *mi, char **s, int n, uint16 *out);

/* ---- task_options.c */

/* The parsed options of rt_create_task. */
typedef struct HwPgTaskOptions
{
	int64  split_seed;
	double ratio[3];
	int    label_history;       /* -1: default for the kind */
	int    history_max;
	int    max_categories;
	int    split_method;        /* HW_SPLIT_BY_HASH or HW_SPLIT_BY_TIME */
	char  *label_horizon;       /* interval text: label_time = obs_time + it; NULL = none */
	Interval *horizon;
	char  *val_from, *test_from;    /* time split: the cutoffs as given */
	int64  val_from_us, test_from_us;
	int    num_loss;            /* HwNumLoss, -1: the default (numerical targets only) */
} HwPgTaskOptions;

/* Reads and checks the options of task `task` (NULL: the defaults). */
void hw_pgtask_parse_options(Jsonb *opts, const char *task, HwPgTaskOptions *o);
/* Copies the options that live in the task itself into t. */
void hw_pgtask_apply_options(HwTask *t, const HwPgTaskOptions *o);

/* SQL types read as numbers / as times by a task query's columns. */
bool hw_pgtask_is_numeric_type(Oid t);
bool hw_pgtask_is_time_type(Oid t);

/* ---- task_query.c */

/* Materialises a query task's seeds into t (caller connected to SPI). */
void hw_pgtask_build_query(HwTask *t, const HwPgTaskModel *mi, const HwSnapshot *snap, const char *query,
						   char **anchor_io, const char *target_col, const char *stype_arg,
						   const char *obs_arg, const HwPgTaskOptions *opts, char **obs_source);

#endif
