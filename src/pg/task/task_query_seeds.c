/*
 * task_query_seeds.c: reads a query task's rows into its seeds: each row's
 * anchor (by key), observation time, label time, caller-given split and
 * target; problems are counted while reading and reported once all rows are
 * read.  The query's columns were checked first (task_query.c).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "core/embed_hash.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/task/task_query_priv.h"

typedef struct CatEnt
{
	char   *value;
	uint32  idx;                /* first-seen index */
} CatEnt;

static int
cmp_catent(const void *a, const void *b)
{
	return strcmp(((const CatEnt *) a)->value, ((const CatEnt *) b)->value);
}

static char *
readable_key(const char *k)
{
	char *s = pstrdup(k);

	for (char *p = s; *p; p++)
		if (*p == '\x1f')
			*p = ',';
	return s;
}

/* Distinct category values of a categorical target, in first-seen order:
 * a plain array + linear probing on hash (slot has 2 * cap entries). */
typedef struct CatDict
{
	CatEnt *ent;
	uint32 *slot;
	uint32  cap;
	uint32  n;
} CatDict;

/* The seeds as read from the query (palloc'd, cap entries each), and the
 * problems counted while reading, reported once all rows are read. */
struct QuerySeeds
{
	size_t  n, cap;
	uint32 *rows;               /* anchor row in the snapshot */
	uint64 *keys;               /* anchor key hash */
	int64  *obs;                /* observation time (µs since 1970), HW_NO_CUTOFF = none */
	double *tv;                 /* target value (categorical: first-seen index) */
	uint8  *tn;                 /* target is NULL */
	uint8  *sp;                 /* caller-given split, or NULL */
	int64  *lt;                 /* label time, or NULL */
	CatDict dict;
	int64   n_null_keys, n_missing, n_bad_split, n_no_obs, n_early;
	char   *early;              /* the first label_time before its observation time */
	char   *bad_split;          /* the first bad split value */
	StringInfoData examples;    /* up to 5 anchors missing from the snapshot */
};

/*
 * The statement that reads the seeds, one column each in a canonical form:
 * the key columns as text (1..npk), the observation time as timestamp
 * (npk + 1), the target (npk + 2), then the split as text (if returned)
 * and the label time as timestamp (if returned).
 */
static char *
seed_statement(const QueryTaskBuild *b)
{
	StringInfoData sql;
	const char *tq = quote_identifier(b->tgtname);
	Oid tgtt = b->tgtt;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int k = 0; k < b->npk; k++)
		appendStringInfo(&sql, "%s(q.%s)::text", k ? ", " : "", quote_identifier(b->pk[k]));
	if (b->obsatt >= 0)
		appendStringInfo(&sql, ", (q.%s)%s", quote_identifier(query_att_name(b, b->obsatt)),
						 b->obst == DATEOID ? "::timestamp" : "");
	else
		appendStringInfoString(&sql, ", NULL::timestamp");
	switch (b->st)
	{
		case HW_ST_NUMERICAL:
			appendStringInfo(&sql, ", (q.%s)%s::float8", tq, tgtt == BOOLOID ? "::int" : "");
			break;
		case HW_ST_BOOLEAN:
			appendStringInfo(&sql, tgtt == BOOLOID ? ", (q.%s)" : ", (q.%s) <> 0", tq);
			break;
		case HW_ST_TIMESTAMP:
			appendStringInfo(&sql, ", (q.%s)%s", tq, tgtt == DATEOID ? "::timestamp" : "");
			break;
		default:
			appendStringInfo(&sql, ", (q.%s)::text", tq);
			break;
	}
	if (b->splitatt >= 0)
		appendStringInfo(&sql, ", (q.%s)::text", quote_identifier(query_att_name(b, b->splitatt)));
	if (b->ltatt >= 0)
		appendStringInfo(&sql, ", (q.%s)%s", quote_identifier(query_att_name(b, b->ltatt)),
						 TupleDescAttr(b->td, b->ltatt)->atttypid == DATEOID ? "::timestamp" : "");
	appendStringInfo(&sql, " FROM (%s\n) AS q", b->q);
	return sql.data;
}

static void
seeds_init(const QueryTaskBuild *b, QuerySeeds *s)
{
	size_t cap = 1024;

	memset(s, 0, sizeof(*s));
	s->cap = cap;
	s->rows = palloc(sizeof(uint32) * cap);
	s->keys = palloc(sizeof(uint64) * cap);
	s->obs = palloc(sizeof(int64) * cap);
	s->tv = palloc(sizeof(double) * cap);
	s->tn = palloc(sizeof(uint8) * cap);
	s->sp = b->splitatt >= 0 ? palloc(sizeof(uint8) * cap) : NULL;
	s->lt = b->ltatt >= 0 || b->opts->horizon != NULL ? palloc(sizeof(int64) * cap) : NULL;
	initStringInfo(&s->examples);
	if (b->st == HW_ST_CATEGORICAL)
	{
		s->dict.cap = 1024;
		s->dict.ent = palloc0(sizeof(CatEnt) * s->dict.cap);
		s->dict.slot = palloc(sizeof(uint32) * s->dict.cap * 2);
		memset(s->dict.slot, 0xff, sizeof(uint32) * s->dict.cap * 2);
	}
}

/* Room for one more seed. */
static void
seeds_reserve(QuerySeeds *s)
{
	if (s->n < s->cap)
		return;
	s->cap *= 2;
	s->rows = repalloc_huge(s->rows, sizeof(uint32) * s->cap);
	s->keys = repalloc_huge(s->keys, sizeof(uint64) * s->cap);
	s->obs = repalloc_huge(s->obs, sizeof(int64) * s->cap);
	s->tv = repalloc_huge(s->tv, sizeof(double) * s->cap);
	s->tn = repalloc_huge(s->tn, sizeof(uint8) * s->cap);
	if (s->sp)
		s->sp = repalloc_huge(s->sp, sizeof(uint8) * s->cap);
	if (s->lt)
		s->lt = repalloc_huge(s->lt, sizeof(int64) * s->cap);
}

/* Doubles the dictionary and rehashes its entries. */
static void
cat_dict_grow(CatDict *d)
{
	uint32 ncap = d->cap * 2;
	uint32 mask = ncap * 2 - 1;

	d->ent = repalloc(d->ent, sizeof(CatEnt) * ncap);
	pfree(d->slot);
	d->slot = palloc(sizeof(uint32) * ncap * 2);
	memset(d->slot, 0xff, sizeof(uint32) * ncap * 2);
	d->cap = ncap;
	for (uint32 e = 0; e < d->n; e++)
	{
		uint32 q2 = (uint32) hw_hash_key_text(d->ent[e].value, strlen(d->ent[e].value)) & mask;

		while (d->slot[q2] != UINT32_MAX)
			q2 = (q2 + 1) & mask;
		d->slot[q2] = e;
	}
}

/* The first-seen index of category value v, adding it if new (at most
 * opts->max_categories distinct values). */
static uint32
cat_dict_index(QueryTaskBuild *b, CatDict *d, char *v)
{
	uint32 hh = (uint32) hw_hash_key_text(v, strlen(v));
	uint32 mask = d->cap * 2 - 1, p = hh & mask;

	while (d->slot[p] != UINT32_MAX && strcmp(d->ent[d->slot[p]].value, v) != 0)
		p = (p + 1) & mask;
	if (d->slot[p] == UINT32_MAX)
	{
		if (d->n >= (uint32) b->opts->max_categories)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("the target of task \"%s\" has more than %d distinct values",
								   b->t->name, b->opts->max_categories),
							errhint("Predict it as numerical, group rare values in the query, "
									"or raise options {\"max_categories\": N}.")));
		if (d->n == d->cap)
		{
			cat_dict_grow(d);
			mask = d->cap * 2 - 1;
			p = hh & mask;
			while (d->slot[p] != UINT32_MAX)
				p = (p + 1) & mask;
		}
		d->ent[d->n].value = v;
		d->ent[d->n].idx = d->n;
		d->slot[p] = d->n++;
	}
	return d->slot[p];
}

/* The key text of a seed row (key columns joined by \x1f) into kb; false
 * if a key column is NULL. */
static bool
read_seed_key(const QueryTaskBuild *b, HeapTuple tup, TupleDesc rtd, StringInfo kb)
{
	resetStringInfo(kb);
	for (int k = 0; k < b->npk; k++)
	{
		char *v = SPI_getvalue(tup, rtd, k + 1);

		if (v == NULL)
			return false;
		if (k)
			appendStringInfoChar(kb, '\x1f');
		appendStringInfoString(kb, v);
	}
	return true;
}

/* Seed n's observation time (the query's, else the anchor row's, else
 * none) and label time. */
static void
read_seed_times(const QueryTaskBuild *b, QuerySeeds *s, HeapTuple tup, TupleDesc rtd, const char *key)
{
	size_t n = s->n;
	bool isnull;
	Datum od = SPI_getbinval(tup, rtd, b->npk + 1, &isnull);
	int64 g = s->rows[n];

	if (!isnull)
	{
		Timestamp ts = DatumGetTimestamp(od);

		if (TIMESTAMP_NOT_FINITE(ts))
			ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							errmsg("task \"%s\": observation time of anchor %s is infinite", b->t->name,
								   readable_key(key))));
		s->obs[n] = ts + EPOCH_2000_US;
	}
	else
		s->obs[n] = b->snap->row_time_us[g] == HW_NO_TIME ? HW_NO_CUTOFF : b->snap->row_time_us[g];
	s->n_no_obs += s->obs[n] == HW_NO_CUTOFF;
	if (b->ltatt >= 0)
	{
		/* NULL: the label never became known, so it is never history */
		int ltcol = b->npk + 3 + (b->splitatt >= 0);
		Datum ld = SPI_getbinval(tup, rtd, ltcol, &isnull);
		Timestamp ts = isnull ? DT_NOEND : DatumGetTimestamp(ld);

		if (!isnull && TIMESTAMP_IS_NOBEGIN(ts))
			ts = DT_NOBEGIN;
		s->lt[n] = TIMESTAMP_NOT_FINITE(ts) ? (TIMESTAMP_IS_NOEND(ts) ? HW_NO_CUTOFF : INT64_MIN) :
			ts + EPOCH_2000_US;
	}
	else if (s->lt)
	{
		/* obs time + label_horizon, in calendar terms (a month is a month) */
		s->lt[n] = s->obs[n] == HW_NO_CUTOFF ? HW_NO_CUTOFF :
			DatumGetTimestamp(DirectFunctionCall2(timestamp_pl_interval,
												  TimestampGetDatum(s->obs[n] - EPOCH_2000_US),
												  IntervalPGetDatum(b->opts->horizon))) + EPOCH_2000_US;
	}
	if (s->lt && s->obs[n] != HW_NO_CUTOFF && s->lt[n] != HW_NO_CUTOFF && s->lt[n] < s->obs[n])
	{
		if (s->n_early++ == 0)
			s->early = psprintf("anchor %s: label_time %s, observation time %s", readable_key(key),
								timestamptz_to_str((TimestampTz) (s->lt[n] == INT64_MIN ? DT_NOBEGIN : s->lt[n] - EPOCH_2000_US)),
								timestamptz_to_str((TimestampTz) (s->obs[n] - EPOCH_2000_US)));
	}
}

/* Seed n's caller-given split: exactly 'train', 'val' or 'test'
 * ('validation' is not a split value here); a bad one is counted. */
static void
read_seed_split(const QueryTaskBuild *b, QuerySeeds *s, HeapTuple tup, TupleDesc rtd)
{
	char *sv = SPI_getvalue(tup, rtd, b->npk + 3);
	int si = sv ? hw_split_from_name(sv) : -1;

	if (si < 0 || strcmp(sv, hw_split_name(si)) != 0)
	{
		if (s->n_bad_split++ == 0)
			s->bad_split = sv ? quote_literal_cstr(sv) : pstrdup("NULL");
		si = 0;
	}
	s->sp[s->n] = (uint8) si;
}

/* Seed n's target, as a double (categorical: the first-seen index). */
static void
read_seed_target(QueryTaskBuild *b, QuerySeeds *s, HeapTuple tup, TupleDesc rtd, const char *key)
{
	size_t n = s->n;
	bool isnull;
	Datum d = SPI_getbinval(tup, rtd, b->npk + 2, &isnull);

	s->tn[n] = isnull;
	s->tv[n] = 0;
	if (isnull)
		return;
	switch (b->st)
	{
		case HW_ST_NUMERICAL:
			s->tv[n] = DatumGetFloat8(d);
			if (!isfinite(s->tv[n]))
				ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
								errmsg("task \"%s\": the target of anchor %s is not finite", b->t->name,
									   readable_key(key))));
			break;
		case HW_ST_BOOLEAN:
			s->tv[n] = DatumGetBool(d) ? 1.0 : 0.0;
			break;
		case HW_ST_TIMESTAMP:
			{
				Timestamp ts = DatumGetTimestamp(d);

				if (TIMESTAMP_NOT_FINITE(ts))
					ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
									errmsg("task \"%s\": the target of anchor %s is infinite", b->t->name,
										   readable_key(key))));
				s->tv[n] = (double) (ts + EPOCH_2000_US);
			}
			break;
		default:
			s->tv[n] = (double) cat_dict_index(b, &s->dict, TextDatumGetCString(d));
			break;
	}
}

/* One row of the query: a seed, or a NULL / unknown key counted. */
static void
read_seed_row(QueryTaskBuild *b, QuerySeeds *s, HeapTuple tup, TupleDesc rtd, StringInfo kb)
{
	if (!read_seed_key(b, tup, rtd, kb))
	{
		s->n_null_keys++;
		return;
	}
	uint64 h = hw_hash_key_text(kb->data, kb->len);
	int64 g = snapshot_find_row(b->snap, b->at, h);

	if (g < 0)
	{
		if (s->n_missing < 5)
			appendStringInfo(&s->examples, "%s%s", s->n_missing ? ", " : "", readable_key(kb->data));
		s->n_missing++;
		return;
	}
	seeds_reserve(s);
	s->rows[s->n] = (uint32) g;
	s->keys[s->n] = h;
	read_seed_times(b, s, tup, rtd, kb->data);
	if (s->sp)
		read_seed_split(b, s, tup, rtd);
	read_seed_target(b, s, tup, rtd, kb->data);
	s->n++;
}

/* Runs the seed statement (as the caller) and reads every row. */
QuerySeeds *
hw_pgtask_read_query_seeds(QueryTaskBuild *b)
{
	QuerySeeds *s = palloc(sizeof(QuerySeeds));
	Portal portal = SPI_cursor_open_with_args(NULL, seed_statement(b), 0, NULL, NULL, NULL, true,
											  CURSOR_OPT_NO_SCROLL);
	StringInfoData kb;

	initStringInfo(&kb);
	seeds_init(b, s);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
			read_seed_row(b, s, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, &kb);
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	return s;
}

/* The problems counted while reading, reported once all rows are read
 * (so each message counts them all). */
static void
report_seed_problems(const QueryTaskBuild *b, const QuerySeeds *s)
{
	const char *name = b->t->name;

	if (s->n_null_keys > 0)
		ereport(ERROR, (errcode(ERRCODE_NOT_NULL_VIOLATION),
						errmsg("the query of task \"%s\" returned %lld rows with a NULL anchor key", name,
							   (long long) s->n_null_keys),
						errhint("Filter them out: WHERE %s IS NOT NULL.", b->pk[0])));
	if (s->n_missing > 0)
		ereport(ERROR, (errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
						errmsg("%lld anchors of task \"%s\" do not exist in table \"%s\" of model \"%s\"",
							   (long long) s->n_missing, name, b->anchor, b->mi->name),
						errdetail("For example: %s.", s->examples.data),
						errhint("Run rt_refresh(%s) if the rows were added after the model was built, "
								"or filter them out of the query.", quote_literal_cstr(b->mi->name))));
	if (s->n_bad_split > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("the split column of task \"%s\" has %lld rows with a value other than 'train', 'val' or 'test' (first: %s)",
							   name, (long long) s->n_bad_split, s->bad_split),
						errhint("Return exactly 'train', 'val' or 'test' (text, not NULL) in the split column, "
								"e.g. CASE WHEN ... THEN 'train' ... END AS split.")));
	if (s->n_early > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%lld seeds of task \"%s\" have a label_time before their observation time",
							   (long long) s->n_early, name),
						errdetail("First: %s.", s->early),
						errhint("label_time is when the label became known: at or after the observation time "
								"(e.g. the end of the label's window); NULL if it is not known yet.")));
	if (b->opts->split_method == HW_SPLIT_BY_TIME && s->n_no_obs > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%lld seeds of task \"%s\" have no observation time, so they cannot be split by time",
							   (long long) s->n_no_obs, name),
						errhint("Filter them out of the query, or give them an observation time.")));
	if (s->n == 0)
		ereport(ERROR, (errcode(ERRCODE_NO_DATA_FOUND),
						errmsg("the query of task \"%s\" returned no rows", name),
						errhint("A task needs at least one seed.")));
	if (s->n > UINT32_MAX / 2)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("task \"%s\" has too many seeds (%zu)", name, s->n)));
}

/*
 * The task's own category block, in byte order so that it does not depend
 * on row order; returns remap[first-seen index] = index in the block.
 */
static uint32 *
sort_categories(HwTask *t, const CatDict *d)
{
	uint32 ncat = d->n;
	CatEnt *sorted = palloc(sizeof(CatEnt) * (ncat ? ncat : 1));
	uint32 *remap = palloc(sizeof(uint32) * (ncat ? ncat : 1));

	memcpy(sorted, d->ent, sizeof(CatEnt) * ncat);
	qsort(sorted, ncat, sizeof(CatEnt), cmp_catent);
	t->ncat_own = ncat;
	t->cat_values = calloc(ncat ? ncat : 1, sizeof(char *));
	if (t->cat_values == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	for (uint32 i = 0; i < ncat; i++)
	{
		remap[sorted[i].idx] = i;
		t->cat_values[i] = strdup(sorted[i].value);
	}
	return remap;
}

/* Copies the seeds into the task, then its options, label times and splits. */
static void
store_seeds(QueryTaskBuild *b, const QuerySeeds *s)
{
	HwTask *t = b->t;
	uint32 *remap = b->st == HW_ST_CATEGORICAL ? sort_categories(t, &s->dict) : NULL;
	HwError err = {0};

	if (hw_task_alloc_seeds(t, (uint32) s->n, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not materialise the seeds");
	for (size_t i = 0; i < s->n; i++)
	{
		t->anchor_row[i] = s->rows[i];
		t->anchor_key[i] = s->keys[i];
		t->obs_time_us[i] = s->obs[i];
		t->target_null[i] = s->tn[i];
		t->target[i] = (remap && !s->tn[i]) ? (double) remap[(uint32) s->tv[i]] : s->tv[i];
	}
	hw_pgtask_apply_options(t, b->opts);
	if (s->lt && hw_task_set_label_times(t, s->lt, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not store the label times");
	if (s->sp)
	{
		t->split_method = HW_SPLIT_BY_COLUMN;
		memcpy(t->split, s->sp, s->n);
	}
	if (hw_task_assign_splits(t, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "could not assign splits");
	hw_task_compute_stats(t);
}

/* Embeddings of the virtual columns (observation time, target) and of the
 * task's own categories. */
static void
embed_task_strings(const QueryTaskBuild *b)
{
	HwTask *t = b->t;
	const HwPgTaskModel *mi = b->mi;
	char *names[2] = {psprintf("observation time of %s", t->name), psprintf("%s of %s", b->tgtname, t->name)};

	t->d_text = mi->d_text;
	t->vcol_emb = calloc((size_t) 2 * mi->d_text, sizeof(uint16));
	if (t->vcol_emb == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	hw_pgtask_embed_strings(mi, names, 2, t->vcol_emb);
	if (b->st == HW_ST_CATEGORICAL && t->ncat_own > 0)
	{
		uint32 ncat = t->ncat_own;
		char **s = palloc(sizeof(char *) * ncat);

		for (uint32 i = 0; i < ncat; i++)
			s[i] = psprintf("%s is %s", b->tgtname, t->cat_values[i]);
		t->cat_emb_own = calloc((size_t) ncat * mi->d_text, sizeof(uint16));
		if (t->cat_emb_own == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		hw_pgtask_embed_strings(mi, s, (int) ncat, t->cat_emb_own);
	}
}

void
hw_pgtask_store_query_seeds(QueryTaskBuild *b, QuerySeeds *s)
{
	report_seed_problems(b, s);
	store_seeds(b, s);
	embed_task_strings(b);
}
