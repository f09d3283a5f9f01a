/*
 * task_options.c: the options (jsonb) of rt_create_task: split_seed,
 * split_ratios, label_history, history_max, max_categories, split ("hash" or
 * "time" with val_from / test_from), label_horizon, loss (numerical
 * targets).  Each bad option is an error naming the task and the option,
 * with a hint.
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "utils/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "core/embed_hash.h"
#include "pg/base/hw_pg.h"
#include "pg/task/hw_pg_task.h"
#include "pg/task/task_priv.h"

/* A time-split cutoff as a timestamp (epoch µs); false if it does not parse. */
static bool
parse_cutoff(const char *s, int64 *us)
{
	Datum     d;
	Timestamp ts;

	if (!hw_pg_try_type_input(timestamp_in, s, &d))
		return false;
	ts = DatumGetTimestamp(d);
	if (TIMESTAMP_NOT_FINITE(ts))
		return false;
	*us = ts + EPOCH_2000_US;
	return true;
}

/* A label horizon: a finite interval not below zero; NULL if it is not one. */
static Interval *
parse_horizon(const char *s)
{
	Datum     d;
	Interval *iv;

	if (!hw_pg_try_type_input(interval_in, s, &d))
		return NULL;
	iv = DatumGetIntervalP(d);
	if (iv->month < 0 || iv->day < 0 || iv->time < 0)
		return NULL;
	return iv;
}

static void
set_default_options(HwPgTaskOptions *o)
{
	o->split_seed = 0;
	o->ratio[0] = 0.8;
	o->ratio[1] = 0.1;
	o->ratio[2] = 0.1;
	o->label_history = -1;
	o->history_max = 16;
	o->max_categories = 1000;
	o->split_method = HW_SPLIT_BY_HASH;
	o->val_from = o->test_from = NULL;
	o->val_from_us = o->test_from_us = 0;
	o->label_horizon = NULL;
	o->horizon = NULL;
	o->num_loss = -1;
}

/* An unknown option is an error, so a misspelt one is not silently ignored. */
static void
check_known_option(const char *key, const char *task)
{
	if (strcmp(key, "split_seed") && strcmp(key, "split_ratios") && strcmp(key, "label_history") &&
		strcmp(key, "history_max") && strcmp(key, "max_categories") && strcmp(key, "split") &&
		strcmp(key, "val_from") && strcmp(key, "test_from") && strcmp(key, "label_horizon") &&
		strcmp(key, "loss"))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown option \"%s\" for task \"%s\"", key, task),
						errhint("Known options: split_seed, split_ratios, label_history, history_max, max_categories, "
								"split, val_from, test_from, label_horizon, loss.")));
}

static char *
string_value(const JsonbValue *v)
{
	return v->type == jbvString ? pnstrdup(v->val.string.val, v->val.string.len) : NULL;
}

/* The options whose value is a string (split, val_from, test_from,
 * label_horizon, loss): each bad one is an error with its own hint.  false
 * if key is not one of them. */
static bool
parse_string_option(HwPgTaskOptions *o, const char *key, const JsonbValue *v, const char *task)
{
	if (strcmp(key, "split") == 0)
	{
		char *m = string_value(v);

		if (m == NULL || (strcmp(m, "hash") != 0 && strcmp(m, "time") != 0))
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("bad value for option \"split\" of task \"%s\"", task),
							errhint("split: \"hash\" (the default) or \"time\" with val_from and test_from; "
									"to give each seed's split, return a column named split from the query.")));
		o->split_method = strcmp(m, "time") == 0 ? HW_SPLIT_BY_TIME : HW_SPLIT_BY_HASH;
	}
	else if (strcmp(key, "val_from") == 0 || strcmp(key, "test_from") == 0)
	{
		char *c = string_value(v);
		int64 us = 0;

		if (c == NULL || !parse_cutoff(c, &us))
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"%s\" of task \"%s\" is not a timestamp", key, task),
							errhint("Give the cutoff as a date or timestamp string, e.g. \"%s\": \"2022-06-01\".", key)));
		if (key[0] == 'v')
		{
			o->val_from = c;
			o->val_from_us = us;
		}
		else
		{
			o->test_from = c;
			o->test_from_us = us;
		}
	}
	else if (strcmp(key, "label_horizon") == 0)
	{
		char *c = string_value(v);

		if (c == NULL || (o->horizon = parse_horizon(c)) == NULL)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"label_horizon\" of task \"%s\" is not a non-negative interval", task),
							errhint("Give how long after its observation time a label becomes known, "
									"e.g. \"label_horizon\": \"30 days\" for a 30-day window.")));
		o->label_horizon = c;
	}
	else if (strcmp(key, "loss") == 0)
	{
		char *c = string_value(v);

		if (c == NULL || (o->num_loss = hw_num_loss_from_name(c)) < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("bad value for option \"loss\" of task \"%s\"", task),
							errhint("loss (numerical targets): \"ordinal\" (the default for integer labels spanning at most %d "
									"values: the median of a learnt distribution), \"mae\" (the default otherwise: fits the "
									"median, what MAE rewards) or \"huber\" (fits the mean, what RMSE rewards).",
									HW_ORD_LEVELS + 1)));
	}
	else
		return false;
	return true;
}

/* One value of option key (an element, for split_ratios): false if it is
 * bad for a numeric or boolean option. */
static bool
parse_option_value(HwPgTaskOptions *o, const char *key, JsonbIteratorToken tok, const JsonbValue *v,
				   const char *task, int *nratio)
{
	bool ok = true;

	if (strcmp(key, "split_ratios") == 0)
	{
		if (tok == WJB_ELEM && v->type == jbvNumeric && *nratio < 3)
			o->ratio[(*nratio)++] = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
		else
			ok = false;
	}
	else if (parse_string_option(o, key, v, task))
		;
	else if (strcmp(key, "label_history") == 0)
	{
		if (v->type == jbvBool)
			o->label_history = v->val.boolean;
		else
			ok = false;
	}
	else if (v->type == jbvNumeric)
	{
		int64 x = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));

		if (strcmp(key, "split_seed") == 0)
			o->split_seed = x;
		else if (strcmp(key, "history_max") == 0)
			ok = (o->history_max = (int) x) >= 0 && x <= 64;
		else
			ok = (o->max_categories = (int) x) >= 2 && x <= 1000000;
	}
	else
		ok = false;
	return ok;
}

/* The options taken together: three split ratios summing to 1, and the
 * cutoffs of a time split (and only of a time split). */
static void
check_split_options(const HwPgTaskOptions *o, const char *task, int nratio)
{
	if (nratio != 0 && nratio != 3)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("option split_ratios of task \"%s\" needs 3 numbers [train, val, test]", task)));
	double sum = o->ratio[0] + o->ratio[1] + o->ratio[2];

	if (fabs(sum - 1.0) > 1e-6 || o->ratio[0] < 0 || o->ratio[1] < 0 || o->ratio[2] < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("split ratios of task \"%s\" must be non-negative and sum to 1 (got %g)", task, sum)));
	if (o->split_method == HW_SPLIT_BY_TIME)
	{
		if (o->val_from == NULL || o->test_from == NULL)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the time split of task \"%s\" needs %s", task,
								   o->val_from == NULL && o->test_from == NULL ? "val_from and test_from" :
								   o->val_from == NULL ? "val_from" : "test_from"),
							errhint("For example: {\"split\": \"time\", \"val_from\": \"2022-06-01\", \"test_from\": \"2022-09-01\"}.")));
		if (o->val_from_us > o->test_from_us)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the time split of task \"%s\" has val_from %s after test_from %s", task,
								   o->val_from, o->test_from),
							errhint("Seeds before val_from are train, from val_from to test_from val, the rest test; "
									"val_from must not be after test_from.")));
	}
	else if (o->val_from != NULL || o->test_from != NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("options val_from and test_from of task \"%s\" apply to the time split only", task),
						errhint("Add \"split\": \"time\".")));
}

void
hw_pgtask_parse_options(Jsonb *opts, const char *task, HwPgTaskOptions *o)
{
	JsonbIterator *it;
	JsonbValue v;
	JsonbIteratorToken tok;
	char *key = NULL;
	int depth = 0, nratio = 0;

	set_default_options(o);
	if (opts == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(opts))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("options of task \"%s\" must be a JSON object", task)));
	it = JsonbIteratorInit(&opts->root);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_BEGIN_OBJECT || tok == WJB_BEGIN_ARRAY)
		{
			depth++;
			continue;
		}
		if (tok == WJB_END_OBJECT || tok == WJB_END_ARRAY)
		{
			depth--;
			continue;
		}
		if (tok == WJB_KEY && depth == 1)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			check_known_option(key, task);
			if (strcmp(key, "split_ratios") == 0)
				nratio = 0;
			continue;
		}
		if (key == NULL)
			continue;
		if (!parse_option_value(o, key, tok, &v, task, &nratio))
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("bad value for option \"%s\" of task \"%s\"", key, task),
							errhint("split_seed: integer; split_ratios: [train, val, test] summing to 1; "
									"label_history: true/false; history_max: 0..64; max_categories: 2..1000000.")));
	}
	check_split_options(o, task, nratio);
}

void
hw_pgtask_apply_options(HwTask *t, const HwPgTaskOptions *o)
{
	t->split_seed = (uint64_t) o->split_seed;
	for (int i = 0; i < 3; i++)
		t->split_ratio[i] = o->ratio[i];
	t->label_history = t->kind == HW_TASK_QUERY && o->label_history != 0;
	t->history_max = o->history_max;
	t->split_method = (int8_t) o->split_method;
	t->split_val_from_us = o->val_from_us;
	t->split_test_from_us = o->test_from_us;
	if (o->num_loss >= 0)
		t->num_loss = (int8_t) o->num_loss;
}

bool
hw_pgtask_is_numeric_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID || t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID;
}

bool
hw_pgtask_is_time_type(Oid t)
{
	return t == DATEOID || t == TIMESTAMPOID || t == TIMESTAMPTZOID;
}
