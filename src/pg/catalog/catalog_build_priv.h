/*
 * catalog_build_priv.h: what the files of one model build share
 * (catalog_build.c and catalog_{common,discover,scan,infer,embed,persist}.c): the
 * build's state and the steps they call of each other.  Not for other
 * files: catalog_build.h.
 */
#ifndef HW_CATALOG_BUILD_PRIV_H
#define HW_CATALOG_BUILD_PRIV_H

#include "postgres.h"

#include <math.h>
#include <sys/resource.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "tcop/dest.h"
#include "executor/tuptable.h"
#include "portability/instr_time.h"

#include "pg/base/hw_pg.h"
#include "pg/catalog/catalog_priv.h"
#include "pg/catalog/catalog_build.h"
#include "core/embed_hash.h"
#include "core/name_rules.h"
#include "core/snapshot_build.h"
#include "core/snapshot_keys.h"
#include "core/snapshot_strmap.h"

#define SCAN_BATCH        20000		/* rows per cursor fetch */
#define CAT_MAX_DISTINCT  100		/* text with at most this many distinct values ... */
									/* ... and at most half as many as non-NULL rows is categorical */
#define CODE_MAX_DISTINCT 32		/* an integer with a code-like name and at most this many distinct values ... */
									/* ... and at most half as many as non-NULL rows is categorical */
#define INFER_TEXT_LIKE   (-1)		/* inferred: categorical or text, decided after the scan */
#define INFER_INT_CODE    (-2)		/* inferred: categorical, or numerical/identifier, decided after the scan */
#define EMBED_FN_BATCH    256		/* texts per call of a user embedding function */
#define EPOCH_2000_US     INT64CONST(946684800000000)	/* 2000-01-01 - 1970-01-01 in µs */

/* how a column's value is taken from the scan */
typedef enum
{
	K_NONE = 0,					/* not selected */
	K_VALID,					/* identifier: presence only */
	K_F8,						/* numerical: float8 */
	K_TS,						/* timestamp: int64 µs since 2000 */
	K_BOOL,
	K_TEXT						/* categorical or text: text */
} ValueKind;

typedef struct ColB
{
	char	   *name;
	int16		attnum;
	Oid			basetyp;
	char		typtype;
	char		typcat;
	char	   *sqltype;
	char	   *comment;
	bool		is_pk, is_fk;
	char	   *fk_target;
	int			inferred;		/* HwSemanticType, or INFER_TEXT_LIKE / INFER_INT_CODE until after the scan */
	int			stype;			/* final */
	bool		overridden;
	const char *ignore_reason;
	char	   *why;			/* why inference chose `inferred` ("categorical: integer code (...)") */
	char	   *time_note;		/* timestamp columns: why it is or is not the time column */
	/* integer code candidates: distinct values seen, up to CODE_MAX_DISTINCT */
	bool		code_track;
	bool		code_over;		/* more than CODE_MAX_DISTINCT, or a value not exact in float8 */
	int			ncode;
	double		code_vals[CODE_MAX_DISTINCT];
	int			sel;			/* select-list position, -1 none */
	ValueKind	kind;
	/* per-row values (malloc) */
	uint8	   *valid;
	double	   *f8;
	int64	   *i64;
	uint8	   *u8;
	uint32	   *u32;
	HwStrMap   *map;
	bool		enum_seeded;
	/* statistics */
	int64		nonnull, bad_values, truncated, ntrue;
	double		mean, m2, min, max;
	/* categorical result */
	uint32		cat_start, cat_count;
	int32		global_id;
} ColB;

typedef struct KeyB
{
	int			ncols;
	int16	   *att;			/* attnums, in key order */
	char	   *sql;
	int			sel;
	uint64	   *hash;			/* [nrows] (malloc); 0 for a NULL key */
	uint32	   *order;			/* PK only: rows sorted by hash (malloc), built after the scan */
	HwKeyIndex	index;			/* referenced keys: hash -> row, for FK resolution (malloc) */
} KeyB;

typedef struct TabB
{
	Oid			relid;
	char	   *name;
	int			ncols;
	ColB	   *cols;
	int			pk_key;			/* index in keys, -1 without PK */
	int			nkeys;
	KeyB		keys[64];
	uint32		nrows, cap;
	int			time_col;
	char	   *time_reason;	/* "time column: ..." / "no time column: ..." */
	bool		has_fk_out;		/* declares an FK to another table (inside the schema or not) */
} TabB;

typedef struct FkB
{
	char	   *name;
	int			child, parent;
	int			nkeys;
	int16	   *catt, *patt;
	int			ckey, pkey;		/* key exprs in child / parent */
	int64		nedges;
} FkB;

typedef struct Build
{
	MemoryContext cxt;
	const char *model;
	const char *schema;
	Oid			nsp;
	/* options */
	char	   *embedder;		/* "hash" or a function name */
	int			d_text;
	bool		embed_text;
	/* discovered */
	int			ntables;
	TabB	   *tabs;
	int			nfks;
	FkB		   *fks;
	/* results */
	HwStrMap   *texts;			/* global distinct text cells */
	uint32		ncat;
	int32		ncolumns;
	size_t		nedges, edges_cap;
	uint32	   *e_child, *e_parent;
	uint16	   *e_fk;
	HwSnapshot *snap;
	double		ts_mean, ts_m2;
	int64		ts_n;
} Build;

/* ---- catalog_common.c */

void hw_build_build_cleanup(void *arg);

void *hw_build_xrealloc(void *p, size_t n);

void hw_build_nomem_check(int rc);

const char *hw_build_qname(Build *b, const char *table);

int hw_build_find_table(Build *b, const char *name);

int hw_build_find_col_att(TabB *tb, int16 att);

int hw_build_find_col_name(TabB *tb, const char *name);

/* key expression over attnums; identical expressions are shared */
int hw_build_add_key(TabB *tb, int n, const int16 *att);

/* text[] of column names -> attnums of tb (names, because a partition's
 * attnums may differ from its root's) */
int16 *hw_build_names_to_atts(TabB *tb, Datum d, int *n);

char *hw_build_spi_text1(const char *sql, Datum arg, Oid argtype);

void hw_build_parse_options(Build *b, Datum options);

/* per-table and per-column overrides from options */
char *hw_build_option_time_column(Build *b, Datum options, const char *table, bool *present);

/* ---- catalog_discover.c */

void hw_build_discover(Build *b, Datum options);

/* ---- catalog_infer.c */

/* Semantic type from the SQL type, the keys and the name; text-like and
 * integer-code columns are settled after the scan (hw_build_finish_columns). */
void hw_build_infer_type(ColB *col);

/* SQL select expression and value kind for a column's semantic type; ERROR
 * when an override asks for a type the SQL type cannot give. */
char *hw_build_value_expr(Build *b, TabB *tb, ColB *col, int stype);

void hw_build_apply_overrides(Build *b, Datum options);

/* ids[n] (string ids of map) sorted by the byte order of their texts */
void hw_build_sort_ids_by_text(uint32 *ids, size_t n, const HwStrMap *map);

void hw_build_finish_columns(Build *b);

/*
 * The time column of a table is an EVENT time: when the row came into
 * existence.  Among its timestamp columns, maintenance stamps (last_update)
 * and attribute dates (birth_date, expires_at, due_date, end_date) never
 * are; of the others (candidates):
 *   1. one creation-like name (created_at, signup_date, date_joined ...);
 *   2. else one named after the table (rental_date of rental, ordered_at of orders);
 *   3. else the only candidate, when the table's rows are events: the table
 *      has an FK to another table, or no other table references it.  An
 *      entity (referenced, no FK of its own) whose only date is not
 *      creation-like keeps none;
 *   4. else none (several candidates: NOTICE).
 * options time_columns / rt_set_time_column win over all of this.
 */
void hw_build_choose_time_columns(Build *b, Datum options);

/* ---- catalog_scan.c */

void hw_build_scan_table(Build *b, int t);

/* ---- catalog_embed.c */

void hw_build_embed_all(Build *b, HwSnapshot *s);

/* ---- catalog_persist.c */

void hw_build_assemble(Build *b);

int32 hw_build_persist(Build *b, int32 model_id, Datum options, Oid owner);

#endif
