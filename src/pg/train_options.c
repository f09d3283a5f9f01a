/*
 * train_options.c: the arguments and options of rt_train (hw_train.h).
 *
 * One table says, for every option key, its JSON type and valid range.  The
 * calling backend parses rt_train's arguments with it, so a bad value is an
 * error of the call (SQLSTATE 22023 naming the option, the value and, in the
 * hint, the range) and never a failed job; the training worker parses the
 * request it was handed with the same code before using any of it, so no
 * value reaches the trainer unchecked.  What depends on the server is
 * clamped (threads to its CPUs) or checked against it (the model's memory).
 * docs/user_guide.md lists the same ranges.
 */
#include "postgres.h"

#include <math.h>
#include <unistd.h>

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "hw_checkpoint.h"
#include "hw_pg.h"
#include "hw_train.h"

typedef enum OptKind
{
	OPT_BOOL,        /* true / false */
	OPT_FLAG,        /* true / false, or 1 / 0 */
	OPT_INT,         /* an integral number in [min, max] */
	OPT_NUM,         /* a number in [min, max] ((min, max] when min_exclusive) */
	OPT_WEIGHTS,     /* {"task": number in [min, max], ...} */
	OPT_SAMPLING,    /* "recent" | "uniform" (hw_child_sampling_from_name) */
	OPT_FUTURE,      /* "hide" | "follow" (hw_future_parents_from_name) */
	OPT_DEVICES,     /* "all" (-1) or an integral number in [min, max] */
	OPT_HOSTS        /* an array of [min, max] host names (strings of 1..255 bytes, distinct) */
} OptKind;

typedef struct OptSpec
{
	const char *key;
	OptKind     kind;
	double      min, max;
	bool        min_exclusive;
	const char *what;            /* what the value means, for the hint */
} OptSpec;

#define I32MAX 2147483647.0

/* In the order the "unknown option" hint lists them. */
static const OptSpec opt_specs[] = {
	{"restart", OPT_BOOL, 0, 0, false,
	 "true trains from scratch; earlier checkpoints are no longer resumed or used for prediction"},
	{"checkpoint_every", OPT_INT, 1, I32MAX, false, "steps between checkpoints"},
	{"val_every", OPT_INT, 1, I32MAX, false, "steps between validations"},
	{"val_batches", OPT_INT, 1, 1000, false, "batches per validation"},
	{"val_rows", OPT_INT, 0, 100000, false, "val rows per task for its own metric at each validation (0: none)"},
	{"log_every", OPT_INT, 1, I32MAX, false, "steps between rows of headwater.train_log"},
	{"lr", OPT_NUM, 0, 1, true, "the peak learning rate"},
	{"warmup_steps", OPT_INT, 0, I32MAX, false, "steps of learning-rate warmup"},
	{"weight_decay", OPT_NUM, 0, 1, false, "decoupled weight decay"},
	{"head_weight_decay", OPT_NUM, 0, 1, false,
	 "decoupled weight decay of the output heads' matrices (default 0: undecayed)"},
	{"ema_decay", OPT_NUM, 0, 0.9999, false,
	 "the decay of the parameter average that validation and predictions read (0: none, the last parameters)"},
	{"batch_size", OPT_INT, 1, 4096, false, "sequences per batch"},
	{"seq_len", OPT_INT, 2, 65535, false, "cells per sequence"},
	{"seed", OPT_INT, 0, 9007199254740991.0, false, "initialisation and sampling seed"},
	{"threads", OPT_INT, 0, 1024, false, "0: one per CPU of the server; more than it has are clamped to it"},
	{"task_weights", OPT_WEIGHTS, 0, 1000000, false, NULL},
	{"d_model", OPT_INT, 8, 4096, false, "model width, a multiple of n_heads"},
	{"n_layers", OPT_INT, 1, 64, false, "transformer layers"},
	{"n_heads", OPT_INT, 1, 64, false, "attention heads"},
	{"full_attention", OPT_FLAG, 0, 1, false, "adds the full-attention sublayer"},
	{"rel_time", OPT_FLAG, 0, 1, false,
	 "gives timestamp cells their time before the observation time as an input (default true; false: absolute times only, as models trained before the option)"},
	{"link_types", OPT_FLAG, 0, 1, false,
	 "tells the model through which foreign key (and direction) each row was reached (default true; false: as models trained before the option)"},
	{"child_counts", OPT_FLAG, 0, 1, false,
	 "gives each row how many children it had before the observation time, per foreign key, in all and in 11 time windows (default true; false: as models trained before the option)"},
	{"child_means", OPT_FLAG, 0, 1, false,
	 "with child_counts, also gives each row the mean of each numerical or boolean column of its children before the observation time, per foreign key, in all and in the 11 windows (default true; false: as models trained before the option)"},
	{"ordinal_head", OPT_FLAG, 0, 1, false,
	 "the head that numerical tasks with the loss \"ordinal\" (integer labels spanning at most 17 values) train and predict with: a distribution over their values, one logistic loss per threshold, its median (default true; false: such tasks train with \"mae\", as models trained before the option)"},
	{"count_ramps", OPT_FLAG, 0, 1, false,
	 "with child_counts, also gives each row its child counts as steps (ramps in log2(1 + n) with knots at 0, 1, 3, 7 and 15 children), so a line between 2 and 3 orders is one linear map away (default false: in a benchmark run on the demo shop's order counts, the model trained with it predicted 0 for every row)"},
	{"head_adamw", OPT_FLAG, 0, 1, false,
	 "the output heads' weight matrices train with AdamW instead of Muon (default false: Muon, as models trained before the option)"},
	{"max_rows", OPT_INT, 1, 65535, false, "rows per sequence"},
	{"child_width", OPT_INT, 1, 64, false, "children kept per foreign key and row"},
	{"child_sampling", OPT_SAMPLING, 0, 0, false, "which children a row keeps when it has too many"},
	{"recent_children", OPT_INT, 0, 64, false, "of child_width, how many are the most recent (default: half)"},
	{"key_cells", OPT_BOOL, 0, 0, false, "emit cells for key columns"},
	{"descendant_counts", OPT_BOOL, 0, 0, false,
	 "with child_counts, the slots a row's own child foreign keys leave free count its descendants 2-3 foreign keys down, in all and in the 11 windows (default true: on the accuracy benchmark's shop it brought churn closer to its planted rule at no cost to the order counts; false: as models trained before it)"},
	{"future_parents", OPT_FUTURE, 0, 0, false, "a parent row dated after the observation time"},
	{"cell_dropout", OPT_NUM, 0, 0.9, false, "training only: the chance that a context cell is shown as NULL"},
	{"progress_seconds", OPT_NUM, 0, 3600, false, "seconds between progress NOTICEs"},
	{"max_minutes", OPT_NUM, 0, 1000000, true,
	 "a time budget: training stops with a checkpoint when it is used up, and the learning rate follows it"},
	{"ranks", OPT_INT, 1, HW_TRAIN_MAX_RANKS, false,
	 "data-parallel ranks: threads of the CPU backend on the CPU, one GPU each on CUDA (docs/distributed.md)"},
	{"devices", OPT_DEVICES, 1, HW_TRAIN_MAX_RANKS, false,
	 "GPUs to train on, one rank each; \"all\": every visible GPU (1 rank on the CPU)"},
	{"grad_accum", OPT_INT, 1, 1024, false,
	 "micro-batches per rank and step, gradients summed before the update: "
	 "1 rank with grad_accum n trains like n ranks"},
	{"check_every", OPT_INT, 1, I32MAX, false, "steps between comparisons of the ranks' parameter checksums"},
	{"rank_timeout", OPT_NUM, 0, 86400, true,
	 "seconds a rank waits for the others at a gradient exchange before the job fails"},
	{"hosts", OPT_HOSTS, 1, HW_TRAIN_MAX_RANKS, false,
	 "the PostgreSQL servers to train on, this one first (training across hosts: docs/distributed.md)"},
	{NULL}
};

static char *
fmt_num(double x)
{
	if (x == floor(x) && fabs(x) < 1e17)
		return psprintf("%.0f", x);
	return psprintf("%g", x);
}

/* The hint of an option: its type and range. */
static char *
opt_hint(const OptSpec *o)
{
	switch (o->kind)
	{
		case OPT_BOOL:
			return psprintf("%s must be true or false (%s).", o->key, o->what);
		case OPT_FLAG:
			return psprintf("%s must be true or false, or 1 or 0 (%s).", o->key, o->what);
		case OPT_INT:
			return psprintf("%s must be an integer from %s to %s (%s).", o->key, fmt_num(o->min),
							fmt_num(o->max), o->what);
		case OPT_NUM:
			if (o->min_exclusive)
				return psprintf("%s must be a number greater than %s and at most %s (%s).", o->key,
								fmt_num(o->min), fmt_num(o->max), o->what);
			return psprintf("%s must be a number from %s to %s (%s).", o->key, fmt_num(o->min),
							fmt_num(o->max), o->what);
		case OPT_SAMPLING:
			return psprintf("%s must be \"recent\" (the most recent children first, then older ones drawn) "
							"or \"uniform\" (%s).", o->key, o->what);
		case OPT_FUTURE:
			return psprintf("%s must be \"hide\" (the default: %s is left out of the sequence) or \"follow\" "
							"(it is shown, as before the option existed: the model then sees the future).",
							o->key, o->what);
		case OPT_DEVICES:
			return psprintf("%s must be \"all\" or an integer from %s to %s (%s).", o->key, fmt_num(o->min),
							fmt_num(o->max), o->what);
		case OPT_HOSTS:
			return psprintf("%s must be an array of %s to %s distinct host names, non-empty strings of at most "
							"255 bytes (%s).", o->key, fmt_num(o->min), fmt_num(o->max), o->what);
		case OPT_WEIGHTS:
			return psprintf("%s must be an object {\"task\": weight} of the tasks being trained, weights "
							"from %s to %s (relative shares of the batches; absent tasks weigh 1).",
							o->key, fmt_num(o->min), fmt_num(o->max));
	}
	return NULL;
}

/* A JSON value as text for a message, clipped (a value may be huge). */
static char *
json_value_text(const JsonbValue *v)
{
	char       *s;
	int         len;

	if (v->type == jbvBinary)
		s = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
	else
	{
		JsonbValue  copy = *v;
		Jsonb      *j = JsonbValueToJsonb(&copy);

		s = JsonbToCString(NULL, &j->root, VARSIZE(j));
	}
	len = strlen(s);
	if (len > 60)
		s = psprintf("%.*s...", pg_mbcliplen(s, len, 57), s);
	return s;
}

static void pg_attribute_noreturn()
bad_value(const OptSpec *o, const JsonbValue *v)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for rt_train option \"%s\": %s", o->key, json_value_text(v)),
			 errhint("%s", opt_hint(o))));
}

/* The number of a JSON numeric; false when v is not a finite number. */
static bool
json_number(const JsonbValue *v, double *out)
{
	char       *s;

	if (v->type != jbvNumeric)
		return false;
	s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
	*out = strtod(s, NULL);
	return isfinite(*out);
}

static bool
in_range(const OptSpec *o, double x)
{
	if (o->min_exclusive ? !(x > o->min) : !(x >= o->min))
		return false;
	return x <= o->max;
}

/* Checks one value against its spec; returns it as a number (bools: 0/1). */
static double
check_value(const OptSpec *o, const JsonbValue *v)
{
	double      x;

	switch (o->kind)
	{
		case OPT_BOOL:
			if (v->type != jbvBool)
				bad_value(o, v);
			return v->val.boolean ? 1 : 0;
		case OPT_FLAG:
			if (v->type == jbvBool)
				return v->val.boolean ? 1 : 0;
			if (!json_number(v, &x) || (x != 0 && x != 1))
				bad_value(o, v);
			return x;
		case OPT_INT:
			if (!json_number(v, &x) || x != floor(x) || !in_range(o, x))
				bad_value(o, v);
			return x;
		case OPT_NUM:
			if (!json_number(v, &x) || !in_range(o, x))
				bad_value(o, v);
			return x;
		case OPT_DEVICES:
			if (v->type == jbvString && v->val.string.len == 3 && strncmp(v->val.string.val, "all", 3) == 0)
				return -1;
			if (!json_number(v, &x) || x != floor(x) || !in_range(o, x))
				bad_value(o, v);
			return x;
		case OPT_HOSTS:
			{
				JsonbIterator *it;
				JsonbValue  e;
				JsonbIteratorToken tok;
				List       *seen = NIL;

				if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
					bad_value(o, v);
				it = JsonbIteratorInit(v->val.binary.data);
				while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
				{
					ListCell   *lc;
					char       *h;

					if (tok != WJB_ELEM)
						continue;
					if (e.type != jbvString || e.val.string.len < 1 || e.val.string.len > 255 ||
						list_length(seen) >= (int) o->max)
						bad_value(o, v);
					h = pnstrdup(e.val.string.val, e.val.string.len);
					foreach(lc, seen)
						if (strcmp((char *) lfirst(lc), h) == 0)
							bad_value(o, v);
					seen = lappend(seen, h);
				}
				if (list_length(seen) < (int) o->min)
					bad_value(o, v);
				return list_length(seen);
			}
		case OPT_SAMPLING:
			{
				int         c = v->type == jbvString
					? hw_child_sampling_from_name(pnstrdup(v->val.string.val, v->val.string.len)) : -1;

				if (c < 0)
					bad_value(o, v);
				return c;
			}
		case OPT_FUTURE:
			{
				int         c = v->type == jbvString
					? hw_future_parents_from_name(pnstrdup(v->val.string.val, v->val.string.len)) : -1;

				if (c < 0)
					bad_value(o, v);
				return c;
			}
		case OPT_WEIGHTS:
			{
				JsonbIterator *it;
				JsonbValue  k, w;
				JsonbIteratorToken tok;

				if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
					bad_value(o, v);
				it = JsonbIteratorInit(v->val.binary.data);
				while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
				{
					if (tok != WJB_KEY)
						continue;
					tok = JsonbIteratorNext(&it, &w, true);
					if (!json_number(&w, &x) || !in_range(o, x))
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								 errmsg("invalid weight for task \"%s\" in rt_train option \"task_weights\": %s",
										pnstrdup(k.val.string.val, k.val.string.len), json_value_text(&w)),
								 errhint("%s", opt_hint(o))));
				}
				return 0;
			}
	}
	return 0;
}

void
hw_train_settings_parse(HwTrainSettings *st, int32 steps, const char *preset, const char *device,
						JsonbContainer *options)
{
	HwError     err = {0};

	memset(st, 0, sizeof(*st));
	if (steps < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("steps must be positive, got %d", steps),
				 errhint("steps is the total number of optimiser steps (1 to %d); training resumes from the last checkpoint.",
						 HW_TRAIN_MAX_STEPS)));
	if (steps > HW_TRAIN_MAX_STEPS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("steps must be at most %d, got %d", HW_TRAIN_MAX_STEPS, steps),
				 errhint("steps is the total number of optimiser steps (1 to %d); training resumes from the last checkpoint.",
						 HW_TRAIN_MAX_STEPS)));
	if (strcmp(preset, "auto") && strcmp(preset, "tiny") && strcmp(preset, "small") && strcmp(preset, "base"))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown preset \"%s\"", preset),
				 errhint("Use 'auto', 'tiny', 'small' or 'base'.")));
	if (strcmp(device, "auto") && strcmp(device, "cpu") && strcmp(device, "cuda"))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown device \"%s\"", device),
				 errhint("Use 'auto', 'cpu' or 'cuda'.")));
	if (options != NULL && !JsonContainerIsObject(options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rt_train options must be a JSON object"),
				 errhint("For example: options => '{\"checkpoint_every\": 100}'")));

	st->steps = steps;
	/* the small preset unless asked otherwise (MODEL.md section 7) */
	strlcpy(st->preset, strcmp(preset, "auto") == 0 ? "small" : preset, sizeof(st->preset));
	strlcpy(st->device, device, sizeof(st->device));
	if (hw_model_config_preset(&st->mcfg, st->preset, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "preset");
	st->mcfg.total_steps = steps;
	st->mcfg.warmup_steps = Min(st->mcfg.warmup_steps, Max(1, steps / 10));
	/*
	 * A parameter average by default: each checkpoint is validated on its
	 * last parameters and on the average, and each task is served from the
	 * better (hw_checkpoint_find_task).  The average won on pagila's
	 * rentals, whose best point is an early one of a noisy run, and lost on
	 * the shop's orders_30d, still improving at its last step
	 * (docs/BENCHMARKS.md, sessions 10-11): the choice takes either.  A
	 * resumed run keeps the decay of its state.
	 */
	st->mcfg.ema_decay = 0.99f;
	st->log_every = 10;
	st->val_batches = 4;
	/*
	 * A task's checkpoint is chosen on its val_rows: with 512 rows of a
	 * noisy target (a count) two shop runs of three served checkpoints 0.8%
	 * and 2.6% worse on test than the whole val split chose; 2048 is a cost
	 * compromise between the two (docs/BENCHMARKS.md, "Choosing the
	 * checkpoint").  A val row costs about a third of a training sequence,
	 * so by default validation runs where a checkpoint is written, not in
	 * between.
	 */
	st->val_rows = 2048;
	st->checkpoint_every = Max(10, Min(500, steps / 5));
	st->val_every = -1;             /* checkpoint_every, after the options */
	st->progress_seconds = 2;
	st->ranks = 1;
	st->grad_accum = 1;
	st->check_every = 100;
	st->rank_timeout = 600;
	hw_sampler_config_default(&st->scfg);

	if (options != NULL)
	{
		JsonbIterator *it = JsonbIteratorInit(options);
		JsonbValue  k, v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
		{
			const OptSpec *o = NULL;
			char       *key;
			double      x;

			if (tok != WJB_KEY)
				continue;
			key = pnstrdup(k.val.string.val, k.val.string.len);
			(void) JsonbIteratorNext(&it, &v, true);
			for (int i = 0; opt_specs[i].key; i++)
				if (strcmp(key, opt_specs[i].key) == 0)
					o = &opt_specs[i];
			if (o == NULL && strcmp(key, "split_seed") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("\"split_seed\" is not an rt_train option"),
						 errhint("The train/val/test split is fixed per task: "
								 "rt_create_task(..., options => '{\"split_seed\": 7}').")));
			if (o == NULL)
			{
				StringInfoData known;

				initStringInfo(&known);
				for (int i = 0; opt_specs[i].key; i++)
					appendStringInfo(&known, "%s%s", i ? ", " : "", opt_specs[i].key);
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unknown rt_train option \"%s\"", key),
						 errhint("Valid options are: %s.", known.data)));
			}
			x = check_value(o, &v);
			if (strcmp(key, "restart") == 0)
				st->restart = x != 0;
			else if (strcmp(key, "checkpoint_every") == 0)
				st->checkpoint_every = (int32) x;
			else if (strcmp(key, "val_every") == 0)
				st->val_every = (int32) x;
			else if (strcmp(key, "val_batches") == 0)
				st->val_batches = (int32) x;
			else if (strcmp(key, "val_rows") == 0)
				st->val_rows = (int32) x;
			else if (strcmp(key, "log_every") == 0)
				st->log_every = (int32) x;
			else if (strcmp(key, "progress_seconds") == 0)
				st->progress_seconds = x;
			else if (strcmp(key, "max_minutes") == 0)
				st->max_minutes = x;
			else if (strcmp(key, "threads") == 0)
				st->threads = (int32) x;
			else if (strcmp(key, "ranks") == 0 || strcmp(key, "devices") == 0)
			{
				if (st->ranks_given)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("rt_train options \"ranks\" and \"devices\" are the same setting"),
							 errhint("Give one of them: devices (\"all\" or a number) for GPUs, ranks for CPU threads.")));
				st->ranks_given = true;
				st->devices_all = x < 0;
				st->ranks = x < 0 ? 1 : (int32) x;
			}
			else if (strcmp(key, "grad_accum") == 0)
				st->grad_accum = (int32) x;
			else if (strcmp(key, "check_every") == 0)
				st->check_every = (int32) x;
			else if (strcmp(key, "rank_timeout") == 0)
				st->rank_timeout = x;
			else if (strcmp(key, "hosts") == 0 && x > 1)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("training across %d hosts is not available yet", (int) x),
						 errhint("Train on one server (hosts with one entry, or no hosts option), with ranks or devices "
								 "for several CPU ranks or GPUs; docs/distributed.md describes the design for several "
								 "machines and what of it exists.")));
			else if (strcmp(key, "max_rows") == 0)
				st->scfg.max_rows = (int32) x;
			else if (strcmp(key, "child_width") == 0)
				st->scfg.bfs_child_width = (int32) x;
			else if (strcmp(key, "child_sampling") == 0)
				st->scfg.child_sampling = (int) x;
			else if (strcmp(key, "recent_children") == 0)
				st->scfg.recent_children = (int32) x;
			else if (strcmp(key, "key_cells") == 0)
				st->scfg.key_cells = x != 0;
			else if (strcmp(key, "descendant_counts") == 0)
				st->scfg.descendant_counts = x != 0;
			else if (strcmp(key, "future_parents") == 0)
				st->scfg.future_parents = (int32) x;
			else if (strcmp(key, "cell_dropout") == 0)
				st->scfg.cell_dropout = (float) x;
			else if (strcmp(key, "seed") == 0)
				st->mcfg.seed = (uint64) x;
			else if (strcmp(key, "task_weights") == 0)
				;                   /* names: the caller checks them against the model */
			else if (hw_model_config_set(&st->mcfg, key, x, &err) != HW_OK)
				hw_pg_raise_core_error(&err, "options");
		}
	}

	if (st->val_every < 0)
		st->val_every = st->checkpoint_every;

	/* what single ranges cannot say */
	if (st->mcfg.d_model % st->mcfg.n_heads != 0 || st->mcfg.d_model / st->mcfg.n_heads > 512)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid values for rt_train options \"d_model\" and \"n_heads\": %d and %d",
						st->mcfg.d_model, st->mcfg.n_heads),
				 errhint("d_model must be a multiple of n_heads, with at most 512 per head "
						 "(a value not given is the preset's).")));
	if ((int64) st->mcfg.batch_size * st->mcfg.seq_len > HW_TRAIN_MAX_TOKENS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid values for rt_train options \"batch_size\" and \"seq_len\": %d and %d",
						st->mcfg.batch_size, st->mcfg.seq_len),
				 errhint("batch_size * seq_len (cells per batch) must be at most %d "
						 "(a value not given is the preset's).", HW_TRAIN_MAX_TOKENS)));
	if (hw_model_config_finish(&st->mcfg, &err) != HW_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid rt_train options: %s", err.msg),
				 errhint("Check the model options against the preset's values (docs/user_guide.md).")));

	st->scfg.batch_size = st->mcfg.batch_size;
	st->scfg.seq_len = st->mcfg.seq_len;
	st->scfg.seed = st->mcfg.seed;
	st->scfg.n_threads = st->threads;
}

/* Physical memory, or the cgroup (v2) limit when lower. */
static int64
server_memory_bytes(void)
{
	long        pages = sysconf(_SC_PHYS_PAGES);
	long        psize = sysconf(_SC_PAGESIZE);
	int64       mem = (pages > 0 && psize > 0) ? (int64) pages * psize : PG_INT64_MAX;
	FILE       *f = fopen("/sys/fs/cgroup/memory.max", "r");

	if (f != NULL)
	{
		char        buf[64];

		if (fgets(buf, sizeof(buf), f) != NULL && strncmp(buf, "max", 3) != 0)
		{
			int64       lim = strtoll(buf, NULL, 10);

			if (lim > 0 && lim < mem)
				mem = lim;
		}
		fclose(f);
	}
	return mem;
}

static char *
size_pretty(int64 bytes)
{
	return text_to_cstring(DatumGetTextPP(DirectFunctionCall1(pg_size_pretty, Int64GetDatum(bytes))));
}

void
hw_train_check_memory(const HwTrainSettings *st, int32 ncols, int32 ncat)
{
	/* one model replica per rank (data parallel on the CPU) */
	int64       need = hw_model_memory_bytes(&st->mcfg, Max(ncols, 1), Max(ncat, 0));

	if (need > 0)
		need *= Max(1, st->ranks);
	int64       have = server_memory_bytes();
	/* the rest is for the server itself, the sampler and everyone else */
	int64       budget = have / 4 * 3;

	if (need >= 0 && need <= budget)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("rt_train options need %s of memory for the model (batch_size %d, seq_len %d, d_model %d, n_layers %d, "
					"%d rank(s)), more than 3/4 of this server's %s",
					need < 0 ? "an unknown amount" : size_pretty(need), st->mcfg.batch_size, st->mcfg.seq_len,
					st->mcfg.d_model, st->mcfg.n_layers, Max(1, st->ranks), size_pretty(have)),
			 errhint("Lower batch_size, seq_len, d_model, n_layers or ranks, or use a smaller preset.")));
}

int
hw_train_clamp_threads(int threads)
{
	long        ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (threads < 0)
		return 0;
	if (ncpu > 0 && threads > ncpu)
		return (int) ncpu;
	return threads;
}

double
hw_train_task_weight(JsonbContainer *options, const char *task, double dflt)
{
	JsonbValue *tw, *w;
	double      x;

	if (options == NULL)
		return dflt;
	tw = getKeyJsonValueFromContainer(options, "task_weights", strlen("task_weights"), NULL);
	if (tw == NULL || tw->type != jbvBinary || !JsonContainerIsObject(tw->val.binary.data))
		return dflt;
	w = getKeyJsonValueFromContainer(tw->val.binary.data, task, strlen(task), NULL);
	if (w == NULL || !json_number(w, &x))
		return dflt;
	return x;
}

JsonbContainer *
hw_train_request_options(Jsonb *request)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&request->root, "options", strlen("options"), NULL);

	if (v == NULL || v->type != jbvBinary)
		return NULL;
	return v->val.binary.data;
}

static bool
option_given(JsonbContainer *options, const char *key)
{
	return options != NULL && getKeyJsonValueFromContainer(options, key, strlen(key), NULL) != NULL;
}

/* recent_children (of child_width) above child_width: ERROR 22023 with hint */
static void
check_recent_within_width(const HwSamplerConfig *c, const char *hint)
{
	if (c->recent_children > c->bfs_child_width)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid values for rt_train options \"recent_children\" and \"child_width\": %d and %d",
						c->recent_children, c->bfs_child_width),
				 errhint("%s", hint)));
}

void
hw_train_settings_check_sampler(const HwTrainSettings *st)
{
	check_recent_within_width(&st->scfg, "recent_children must be at most child_width (default 16).");
}

/* A value the checkpoint's config gives for an option the call does not
 * name: in the option's range, or an error that names the checkpoint (a
 * config is only ever written by the trainer, so this is a damaged one). */
static void
check_kept(const char *key, double v, bool ok, const HwCheckpointInfo *ck)
{
	const OptSpec *o = NULL;

	for (int i = 0; opt_specs[i].key; i++)
		if (strcmp(key, opt_specs[i].key) == 0)
			o = &opt_specs[i];
	if (ok && o != NULL && o->kind == OPT_INT && (v < o->min || v > o->max))
		ok = false;
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("checkpoint %lld has an invalid sampler option \"%s\" (%g) to resume with",
						(long long) ck->checkpoint_id, key, v),
				 errhint("%s Name it in this call to replace the checkpoint's value, or start over with "
						 "options => '{\"restart\": true}'.", o ? opt_hint(o) : "")));
}

/*
 * Why: the sampler decides what a model reads (which children, which cells,
 * which counts), and its defaults change between releases as the
 * benchmarks move them (docs/BENCHMARKS.md).  A run that resumes a
 * checkpoint trained under other defaults must not see other inputs than
 * it learnt from unless the caller says so; an option given in this call
 * still wins.  The seed goes with them: it orders the training batches
 * and draws the sequences predictions read.
 */
void
hw_train_settings_resume_sampler(HwTrainSettings *st, const HwCheckpointInfo *ck, JsonbContainer *options)
{
	HwSamplerConfig *c = &st->scfg;

	if (!option_given(options, "max_rows"))
	{
		c->max_rows = ck->max_rows;
		check_kept("max_rows", c->max_rows, true, ck);
	}
	if (!option_given(options, "child_width"))
	{
		c->bfs_child_width = ck->child_width;
		check_kept("child_width", c->bfs_child_width, true, ck);
	}
	if (!option_given(options, "child_sampling"))
	{
		c->child_sampling = ck->child_sampling;
		check_kept("child_sampling", c->child_sampling, hw_child_sampling_name(c->child_sampling) != NULL, ck);
	}
	if (!option_given(options, "recent_children"))
	{
		c->recent_children = ck->recent_children;
		/* -1: half of child_width, the default */
		check_kept("recent_children", c->recent_children == -1 ? 0 : c->recent_children, true, ck);
	}
	if (!option_given(options, "key_cells"))
		c->key_cells = ck->key_cells;
	if (!option_given(options, "descendant_counts"))
		c->descendant_counts = ck->descendant_counts;
	if (!option_given(options, "future_parents"))
		c->future_parents = ck->future_parents;
	if (!option_given(options, "seed") && ck->has_seed)
		st->mcfg.seed = c->seed = ck->seed;
	if (c->recent_children > c->bfs_child_width)
		check_recent_within_width(c, psprintf("A resumed run keeps its checkpoint's sampler options unless given "
											  "(recent_children %d, child_width %d there); recent_children must "
											  "be at most child_width.", ck->recent_children, ck->child_width));
}
