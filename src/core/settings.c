/*
 * settings.c: the table of training settings and what reads it (settings.h).
 *
 * The ranges are the ones rt_train has always checked; rt_sample_batches
 * takes the sampler's rows with the same ranges.  Defaults that are plain
 * values sit in the rows; the rest (the preset's model shape, the
 * schedule's computed steps) are set by hw_settings_defaults and described
 * by the row's dflt_text.
 */
#include "core/settings.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define I32MAX 2147483647.0
#define AT(f) offsetof(HwSettings, f)

/* what a model gets from the preset or the sampler's defaults, checked
 * against these rows by test_settings.c */
#define MODEL(n, t, lo, hi, d, f, ft, fl, desc) \
	{.name = n, .type = t, .min = lo, .max = hi, .dflt = d, .group = HW_GROUP_MODEL, .offset = AT(f), \
	 .field = ft, .flags = fl, .what = desc}
#define FLAG(n, d, f, desc) \
	{.name = n, .type = HW_SETTING_FLAG, .max = 1, .dflt = d, .group = HW_GROUP_MODEL, .offset = AT(mcfg.f), \
	 .field = HW_FIELD_I32, .flags = HW_SETTING_STORED, .what = desc}
#define PRESET(n, lo, hi, f, absent_json, desc) \
	{.name = n, .type = HW_SETTING_INT, .min = lo, .max = hi, .dflt_text = "preset", .group = HW_GROUP_MODEL, \
	 .offset = AT(mcfg.f), .field = HW_FIELD_I32, .flags = HW_SETTING_STORED, .absent = absent_json, .what = desc}
#define SCHED(n, t, lo, hi, d, f, ft, desc) \
	{.name = n, .type = t, .min = lo, .max = hi, .dflt = d, .group = HW_GROUP_SCHEDULE, .offset = AT(f), \
	 .field = ft, .what = desc}
#define INFRA(n, t, lo, hi, d, f, ft, desc) \
	{.name = n, .type = t, .min = lo, .max = hi, .dflt = d, .group = HW_GROUP_INFRA, .offset = AT(f), \
	 .field = ft, .what = desc}
/* kept by a resumed run, stored, and an rt_sample_batches option */
#define SAMPLER_KSS (HW_SETTING_KEPT | HW_SETTING_STORED | HW_SETTING_SAMPLE)

const HwSettingDef hw_settings[] = {
	{.name = "restart", .type = HW_SETTING_BOOL, .group = HW_GROUP_SCHEDULE, .offset = AT(restart),
	 .field = HW_FIELD_BOOL,
	 .what = "true trains from scratch; earlier checkpoints are no longer resumed or used for prediction"},
	{.name = "checkpoint_every", .type = HW_SETTING_INT, .min = 1, .max = I32MAX,
	 .dflt_text = "steps/5, within 10..500", .group = HW_GROUP_SCHEDULE, .offset = AT(checkpoint_every),
	 .field = HW_FIELD_I32, .what = "steps between checkpoints"},
	{.name = "val_every", .type = HW_SETTING_INT, .min = 1, .max = I32MAX, .dflt_text = "`checkpoint_every`; with max_minutes: by time",
	 .group = HW_GROUP_SCHEDULE, .offset = AT(val_every), .field = HW_FIELD_I32,
	 .what = "steps between validations (with max_minutes and no val_every: spaced by time)"},
	SCHED("val_batches", HW_SETTING_INT, 1, 1000, 4, val_batches, HW_FIELD_I32, "batches per validation"),
	SCHED("val_rows", HW_SETTING_INT, 0, 100000, 2048, val_rows, HW_FIELD_I32,
		  "val rows per task for its own metric at each validation (0: none)"),
	SCHED("log_every", HW_SETTING_INT, 1, I32MAX, 10, log_every, HW_FIELD_I32,
		  "steps between rows of headwater.train_log"),
	{.name = "lr", .type = HW_SETTING_NUM, .min = 0, .max = 1, .min_exclusive = true, .dflt = 0.003,
	 .group = HW_GROUP_MODEL, .offset = AT(mcfg.lr), .field = HW_FIELD_F32, .flags = HW_SETTING_STORED,
	 .what = "the peak learning rate"},
	{.name = "warmup_steps", .type = HW_SETTING_INT, .min = 0, .max = I32MAX, .dflt_text = "min(100, steps/10)",
	 .group = HW_GROUP_MODEL, .offset = AT(mcfg.warmup_steps), .field = HW_FIELD_I32,
	 .what = "steps of learning-rate warmup"},
	MODEL("weight_decay", HW_SETTING_NUM, 0, 1, 0.3, mcfg.weight_decay, HW_FIELD_F32, HW_SETTING_STORED,
		  "decoupled weight decay"),
	MODEL("head_weight_decay", HW_SETTING_NUM, 0, 1, 0, mcfg.head_weight_decay, HW_FIELD_F32, HW_SETTING_STORED,
		  "decoupled weight decay of the output heads' matrices (default 0: undecayed)"),
	{.name = "ema_decay", .type = HW_SETTING_NUM, .min = 0, .max = 0.9999, .dflt = 0.99, .group = HW_GROUP_MODEL,
	 .offset = AT(mcfg.ema_decay), .field = HW_FIELD_F32, .flags = HW_SETTING_STORED, .absent = "0",
	 .what = "the decay of the parameter average that validation and predictions read (0: none, the last parameters)"},
	PRESET("batch_size", 1, 4096, batch_size, "32", "sequences per batch"),
	PRESET("seq_len", 2, 65535, seq_len, "1024", "cells per sequence"),
	MODEL("seed", HW_SETTING_INT, 0, 9007199254740991.0, 42, mcfg.seed, HW_FIELD_U64,
		  HW_SETTING_STORED | HW_SETTING_KEPT, "initialisation and sampling seed"),
	INFRA("threads", HW_SETTING_INT, 0, 1024, 0, threads, HW_FIELD_I32,
		  "0: one per CPU of the server; more than it has are clamped to it"),
	{.name = "train_precision", .type = HW_SETTING_ENUM, .names_of = hw_precision_name, .dflt = HW_PRECISION_AUTO,
	 .group = HW_GROUP_INFRA, .offset = AT(train_precision), .field = HW_FIELD_I32,
	 .hint = "train_precision must be \"auto\" (bf16 where the processor has AVX512_BF16 and it beats the fp32 "
			 "products, else fp32), \"fp32\" or \"bf16\" (the CPU backend on a processor with AVX512_BF16).",
	 .what = "the arithmetic of the transformer layers' GEMMs in training on the CPU: bf16 (fp32 accumulation) "
			 "runs them up to twice as fast on a processor with AVX512_BF16"},
	{.name = "task_weights", .type = HW_SETTING_WEIGHTS, .min = 0, .max = 1000000,
	 .dflt_text = "sqrt(the task's train seeds) each when several tasks train", .group = HW_GROUP_SCHEDULE,
	 .field = HW_FIELD_NONE, .what = "relative shares of the batches; absent tasks weigh 1"},
	PRESET("d_model", 8, 4096, d_model, NULL, "model width, a multiple of n_heads"),
	PRESET("n_layers", 1, 64, n_layers, NULL, "transformer layers"),
	PRESET("n_heads", 1, 64, n_heads, NULL, "attention heads"),
	MODEL("full_attention", HW_SETTING_FLAG, 0, 1, 0, mcfg.full_attention, HW_FIELD_I32, 0,
		  "adds the full-attention sublayer"),
	FLAG("rel_time", 1, rel_time,
		 "gives timestamp cells their time before the observation time as an input (default true; false: absolute times only, as models trained before the option)"),
	FLAG("absolute_time", 1, absolute_time,
		 "timestamp cells also carry their absolute time (the z-scored epoch) beside their calendar phases (default true; false, with rel_time: in a sequence with an observation time they carry only their time before it and their calendar phases, not the year)"),
	FLAG("link_types", 1, link_types,
		 "tells the model through which foreign key (and direction) each row was reached (default true; false: as models trained before the option)"),
	FLAG("child_counts", 1, child_counts,
		 "gives each row how many children it had before the observation time, per foreign key, in all and in 11 time windows (default true; false: as models trained before the option)"),
	FLAG("child_means", 1, child_means,
		 "with child_counts, also gives each row the mean of each numerical or boolean column of its children before the observation time, per foreign key, in all and in the 11 windows (default true; false: as models trained before the option)"),
	FLAG("ordinal_head", 1, ordinal_head,
		 "the head that numerical tasks with the loss \"ordinal\" (integer labels spanning at most 17 values) train and predict with: a distribution over their values, one logistic loss per threshold, its median (default true; false: such tasks train with \"mae\", as models trained before the option)"),
	FLAG("count_ramps", 0, count_ramps,
		 "with child_counts, also gives the anchor row (the row a prediction is about) its child counts as steps (ramps in log2(1 + n) with knots at 0, 1, 3, 7 and 15 children), so a line between 2 and 3 orders is one linear map away (default false: on the football benchmark, with the anchors' names shown, it raised the player task's AUROC by 0.004 over three seeds, but with them hidden, as by default, one seed lost 0.008 on it, and on pagila it cost rentals_21d 0.058 MAE)"),
	FLAG("head_adamw", 0, head_adamw,
		 "the output heads' weight matrices train with AdamW instead of Muon (default false: Muon, as models trained before the option)"),
	{.name = "max_rows", .type = HW_SETTING_INT, .min = 1, .max = 65535, .dflt = 200, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.max_rows), .field = HW_FIELD_I32, .flags = SAMPLER_KSS, .absent = "200",
	 .what = "rows per sequence"},
	{.name = "child_width", .type = HW_SETTING_INT, .min = 1, .max = 64, .dflt = 16, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.bfs_child_width), .field = HW_FIELD_I32, .flags = SAMPLER_KSS, .absent = "16",
	 .what = "children kept per foreign key and row"},
	/* checkpoints from before child_sampling and key_cells were trained with
	 * uniform children and key cells: they keep predicting as trained */
	{.name = "child_sampling", .type = HW_SETTING_ENUM, .names_of = hw_child_sampling_name, .dflt = HW_CHILD_RECENT,
	 .group = HW_GROUP_SAMPLER, .offset = AT(scfg.child_sampling), .field = HW_FIELD_I32, .flags = SAMPLER_KSS,
	 .absent = "\"uniform\"",
	 .hint = "child_sampling must be \"recent\" (the most recent children first, then older ones drawn) "
			 "or \"uniform\" (which children a row keeps when it has too many).",
	 .what = "which children a row keeps when it has too many"},
	/* -1 (the default): half of child_width, rounded up */
	{.name = "recent_children", .type = HW_SETTING_INT, .min = 0, .max = 64, .dflt = -1,
	 .dflt_text = "half of `child_width`, rounded up", .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.recent_children), .field = HW_FIELD_I32, .flags = SAMPLER_KSS, .absent = "-1",
	 .what = "of child_width, how many are the most recent (default: half)"},
	{.name = "key_cells", .type = HW_SETTING_BOOL, .dflt = 0, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.key_cells), .field = HW_FIELD_BOOL, .flags = SAMPLER_KSS, .absent = "true",
	 .what = "emit cells for key columns"},
	/* absent: a checkpoint from before the option was trained seeing the
	 * names of its anchor rows */
	{.name = "anchor_names", .type = HW_SETTING_BOOL, .dflt = 0, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.anchor_names), .field = HW_FIELD_BOOL, .flags = SAMPLER_KSS, .absent = "true",
	 .what = "emit cells for the names of the rows the tasks predict about: a text or categorical column of a "
			 "task's anchor table whose values are at least 90% distinct (default false: hidden like keys, so the "
			 "model cannot learn each row's past by its name; on the football benchmark this raised the player "
			 "task's AUROC by 0.009 and improved team_goals in every seed over three)"},
	/* absent: a checkpoint from before the option was trained following
	 * future parents; predicting that way would show it rows from after the
	 * observation time, so it gets the leak-free default (the parameters do
	 * not depend on it) */
	{.name = "future_parents", .type = HW_SETTING_ENUM, .names_of = hw_future_parents_name,
	 .dflt = HW_FUTURE_PARENTS_HIDE, .group = HW_GROUP_SAMPLER, .offset = AT(scfg.future_parents),
	 .field = HW_FIELD_I32, .flags = SAMPLER_KSS, .absent = "\"hide\"",
	 .hint = "future_parents must be \"hide\" (the default: a parent row dated after the observation time is left "
			 "out of the sequence) or \"follow\" (it is shown, as before the option existed: the model then sees "
			 "the future).",
	 .choices = "\"hide\" (the default) leaves out a parent row dated after the observation time; \"follow\" "
				"shows it, as the sampler did before the option.",
	 .what = "a parent row dated after the observation time"},
	/* absent: a checkpoint from before the option was trained seeing undated
	 * rows at every observation time */
	{.name = "date_undated", .type = HW_SETTING_BOOL, .dflt = 0, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.date_undated), .field = HW_FIELD_BOOL, .flags = SAMPLER_KSS, .absent = "false",
	 .what = "a row of a table without a time column takes the time of the rows it links to (the latest of its "
			 "dated parents, else the earliest of its dated children) and is left out of sequences observed "
			 "before it"},
	/* absent: the checkpoint was trained with the windows of the std */
	{.name = "count_windows", .type = HW_SETTING_ENUM, .names_of = hw_count_windows_name,
	 .dflt = HW_COUNT_WINDOWS_STD, .group = HW_GROUP_SAMPLER, .offset = AT(scfg.count_windows),
	 .field = HW_FIELD_I32, .flags = SAMPLER_KSS, .absent = "\"std\"",
	 .hint = "count_windows must be \"std\" (the default: 0.044 to 1.41 timestamp standard deviations) or "
			 "\"events\" (on a long history, the child-count windows reach down to the pace of the database's "
			 "own events).",
	 .choices = "\"std\" (the default) spaces the 11 windows from 0.044 to 1.41 timestamp std; \"events\" from "
				"half the typical interval between a row's dated children, where that is narrower.",
	 .what = "the time windows of the child counts and means"},
	/* absent: the checkpoint was trained with the ramps of the std; not an
	 * option of rt_sample_batches (its batches do not carry the ramps) */
	{.name = "time_ramps", .type = HW_SETTING_ENUM, .names_of = hw_count_windows_name,
	 .dflt = HW_COUNT_WINDOWS_EVENTS, .group = HW_GROUP_SAMPLER, .offset = AT(scfg.time_ramps),
	 .field = HW_FIELD_I32, .flags = HW_SETTING_KEPT | HW_SETTING_STORED, .absent = "\"std\"",
	 .hint = "time_ramps must be \"events\" (the default: on a long history the 16 recency ramps move down to "
			 "the pace of the database's own events, by the rule of count_windows \"events\") or \"std\" (from "
			 "0.016 to 2.8 timestamp standard deviations, whatever the pace).",
	 .choices = "\"events\" (the default) divides the 16 ramps' spacing by the factor count_windows \"events\" "
				"narrows the windows by, where the events come faster than the std's narrowest window; \"std\" "
				"spaces them from 0.016 to 2.8 timestamp std.",
	 .what = "the spacing of the relative-time ramps (how long before the observation time a cell was)"},
	/* absent: the checkpoint was trained with the time windows */
	{.name = "mean_windows", .type = HW_SETTING_ENUM, .names_of = hw_mean_windows_name,
	 .dflt = HW_MEAN_WINDOWS_TIME, .group = HW_GROUP_SAMPLER, .offset = AT(scfg.mean_windows),
	 .field = HW_FIELD_I32, .flags = SAMPLER_KSS, .absent = "\"time\"",
	 .hint = "mean_windows must be \"time\" (the default: the child means in the child counts' time windows) or "
			 "\"recent\" (windows 1-5 of the child means over a row's last 1, 3, 5, 10 and 20 children).",
	 .choices = "\"time\" (the default) averages in the child counts' 11 time windows; \"recent\" makes the 5 "
				"narrowest the last 1, 3, 5, 10 and 20 children by time (where a row's children are sorted by "
				"time: child_sampling \"recent\", dated children).",
	 .what = "the windows of the child means"},
	/* absent: the checkpoint was trained without */
	{.name = "descendant_counts", .type = HW_SETTING_BOOL, .dflt = 1, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.descendant_counts), .field = HW_FIELD_BOOL, .flags = SAMPLER_KSS, .absent = "false",
	 .what = "with child_counts, the slots a row's own child foreign keys leave free count its descendants 2-3 foreign keys down, in all and in the 11 windows (default true: on the accuracy benchmark's shop it brought churn closer to its planted rule at no cost to the order counts; false: as models trained before it)"},
	/* absent: the checkpoint was trained without */
	{.name = "label_means", .type = HW_SETTING_BOOL, .dflt = 0, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.label_means), .field = HW_FIELD_BOOL, .flags = SAMPLER_KSS, .absent = "false",
	 .what = "with child_means, a row of a query task's anchor table shows the mean of its own labels known by the observation time, and a row that is the parent of its anchors the mean over their labels, in all and in the 11 windows (an opponent team: how often it went unbeaten; a player's team: how often its scorers went on to score again); query tasks with label history and a numerical or boolean target"},
	{.name = "cell_dropout", .type = HW_SETTING_NUM, .min = 0, .max = 0.9, .dflt = 0, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.cell_dropout), .field = HW_FIELD_F32, .flags = HW_SETTING_STORED,
	 .what = "training only: the chance that a context cell is shown as NULL"},
	{.name = "recent_weight", .type = HW_SETTING_NUM, .min = 1, .max = 100, .dflt = 1, .group = HW_GROUP_SAMPLER,
	 .offset = AT(scfg.recent_weight), .field = HW_FIELD_F32, .flags = HW_SETTING_STORED,
	 .what = "training only: each task's latest training rows (by observation time) are drawn this many times as often as its earliest, exponentially in between (1: all alike)"},
	SCHED("progress_seconds", HW_SETTING_NUM, 0, 3600, 2, progress_seconds, HW_FIELD_F64,
		  "seconds between progress NOTICEs"),
	{.name = "max_minutes", .type = HW_SETTING_NUM, .min = 0, .max = 1000000, .min_exclusive = true,
	 .dflt_text = "none", .group = HW_GROUP_SCHEDULE, .offset = AT(max_minutes), .field = HW_FIELD_F64,
	 .what = "a time budget in minutes for the whole call, its closing validation included; the schedule, the ETA and the validations follow it, and steps may be left out"},
	INFRA("ranks", HW_SETTING_INT, 1, HW_SETTINGS_MAX_RANKS, 1, ranks, HW_FIELD_I32,
		  "data-parallel ranks: threads of the CPU backend on the CPU, one GPU each on CUDA (docs/distributed.md)"),
	{.name = "devices", .type = HW_SETTING_DEVICES, .min = 1, .max = HW_SETTINGS_MAX_RANKS, .dflt_text = "–",
	 .group = HW_GROUP_INFRA, .offset = AT(ranks), .field = HW_FIELD_I32,
	 .what = "GPUs to train on, one rank each; \"all\": every visible GPU (1 rank on the CPU)"},
	INFRA("grad_accum", HW_SETTING_INT, 1, 1024, 1, grad_accum, HW_FIELD_I32,
		  "micro-batches per rank and step, gradients summed before the update: 1 rank with grad_accum n trains like n ranks"),
	INFRA("check_every", HW_SETTING_INT, 1, I32MAX, 100, check_every, HW_FIELD_I32,
		  "steps between comparisons of the ranks' parameter checksums"),
	{.name = "rank_timeout", .type = HW_SETTING_NUM, .min = 0, .max = 86400, .min_exclusive = true, .dflt = 600,
	 .group = HW_GROUP_INFRA, .offset = AT(rank_timeout), .field = HW_FIELD_F64,
	 .what = "seconds a rank waits for the others at a gradient exchange before the job fails"},
	{.name = NULL}
};

int
hw_settings_count(void)
{
	int         n = 0;

	while (hw_settings[n].name != NULL)
		n++;
	return n;
}

const HwSettingDef *
hw_setting_find(const char *name)
{
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

int
hw_setting_index(const HwSettingDef *d)
{
	return (int) (d - hw_settings);
}

double
hw_setting_get(const HwSettings *st, const HwSettingDef *d)
{
	const char *p = (const char *) st + d->offset;

	switch (d->field)
	{
		case HW_FIELD_BOOL: return *(const bool *) p ? 1 : 0;
		case HW_FIELD_I32: return *(const int32_t *) p;
		case HW_FIELD_U64: return (double) *(const uint64_t *) p;
		case HW_FIELD_F32: return *(const float *) p;
		case HW_FIELD_F64: return *(const double *) p;
		case HW_FIELD_NONE: break;
	}
	return 0;
}

void
hw_setting_set(HwSettings *st, const HwSettingDef *d, double x)
{
	char       *p = (char *) st + d->offset;

	switch (d->field)
	{
		case HW_FIELD_BOOL: *(bool *) p = x != 0; break;
		case HW_FIELD_I32: *(int32_t *) p = (int32_t) x; break;
		case HW_FIELD_U64: *(uint64_t *) p = (uint64_t) x; break;
		case HW_FIELD_F32: *(float *) p = (float) x; break;
		case HW_FIELD_F64: *(double *) p = x; break;
		case HW_FIELD_NONE: break;
	}
}

int
hw_settings_defaults(HwSettings *st, const char *preset, int32_t steps, HwError *err)
{
	memset(st, 0, sizeof(*st));
	if (hw_model_config_preset(&st->mcfg, preset, err) != HW_OK)
		return HW_ERR_INVALID;
	hw_sampler_config_default(&st->scfg);
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
		if (d->dflt_text == NULL)
			hw_setting_set(st, d, d->dflt);
	st->steps = steps;
	st->mcfg.total_steps = steps;
	{
		int32_t     tenth = steps / 10 > 1 ? steps / 10 : 1;
		int32_t     fifth = steps / 5;

		/* the preset's warmup, at most a tenth of the run */
		if (st->mcfg.warmup_steps > tenth)
			st->mcfg.warmup_steps = tenth;
		st->checkpoint_every = fifth < 10 ? 10 : fifth > 500 ? 500 : fifth;
	}
	st->val_every = -1;             /* checkpoint_every, after the options */
	return HW_OK;
}

bool
hw_setting_number_ok(const HwSettingDef *d, double x)
{
	if (d->min_exclusive ? !(x > d->min) : !(x >= d->min))
		return false;
	return x <= d->max;
}

/* An enum's value of a name, or -1. */
static int
enum_value(const HwSettingDef *d, const char *name)
{
	const char *n;

	for (int i = 0; (n = d->names_of(i)) != NULL; i++)
		if (strcmp(n, name) == 0)
			return i;
	return -1;
}

/* The value v means for d (bools 0/1, enums their index, devices "all" -1);
 * false when it is not of d's type or out of its range. */
static bool
value_of(const HwSettingDef *d, const HwSettingValue *v, double *x)
{
	bool        integral = v->kind == HW_JSON_NUMBER && v->num == floor(v->num);

	*x = v->kind == HW_JSON_NUMBER ? v->num : 0;
	switch (d->type)
	{
		case HW_SETTING_BOOL:
			*x = v->b ? 1 : 0;
			return v->kind == HW_JSON_BOOL;
		case HW_SETTING_FLAG:
			if (v->kind == HW_JSON_BOOL)
				*x = v->b ? 1 : 0;
			return v->kind == HW_JSON_BOOL || (v->kind == HW_JSON_NUMBER && (v->num == 0 || v->num == 1));
		case HW_SETTING_INT:
			return integral && hw_setting_number_ok(d, v->num);
		case HW_SETTING_NUM:
			return v->kind == HW_JSON_NUMBER && hw_setting_number_ok(d, v->num);
		case HW_SETTING_ENUM:
			*x = v->kind == HW_JSON_STRING ? enum_value(d, v->str) : -1;
			return *x >= 0;
		case HW_SETTING_DEVICES:
			if (v->kind == HW_JSON_STRING && strcmp(v->str, "all") == 0)
			{
				*x = -1;
				return true;
			}
			return integral && hw_setting_number_ok(d, v->num);
		case HW_SETTING_WEIGHTS:
			return v->kind == HW_JSON_OTHER;    /* an object: the caller walks it */
	}
	return false;
}

int
hw_setting_apply(HwSettings *st, const HwSettingDef *d, const HwSettingValue *v, HwError *err)
{
	double      x;

	if (!value_of(d, v, &x))
		return hw_error_set(err, HW_ERR_INVALID, "invalid value for option \"%s\"", d->name);
	if (d->type == HW_SETTING_DEVICES)
	{
		st->devices_all = x < 0;
		x = x < 0 ? 1 : x;
	}
	hw_setting_set(st, d, x);
	return HW_OK;
}

void
hw_settings_finish(HwSettings *st)
{
	/* a budget without val_every spaces validations by time (core/budget.h) */
	st->val_by_time = st->val_every < 0 && st->max_minutes > 0;
	if (st->val_every < 0)
		st->val_every = st->checkpoint_every;
	st->scfg.batch_size = st->mcfg.batch_size;
	st->scfg.seq_len = st->mcfg.seq_len;
	st->scfg.seed = st->mcfg.seed;
	st->scfg.n_threads = st->threads;
}

bool
hw_setting_read_stored(HwSettings *st, const HwSettingDef *d, const HwSettingValue *v)
{
	double      x;
	bool        ok = value_of(d, v, &x);

	if (!ok && d->type == HW_SETTING_ENUM)
		return false;               /* keeps what it had (the absent value) */
	if (!ok && d->type == HW_SETTING_INT && v->kind == HW_JSON_NUMBER)
		ok = v->num == d->dflt;     /* a default below the range (recent_children -1) */
	if (!ok && v->kind == HW_JSON_NUMBER)
		x = v->num;                 /* out of range: stored as found, reported by the caller */
	hw_setting_set(st, d, x);
	return ok;
}

HwJsonKind
hw_setting_format(const HwSettings *st, const HwSettingDef *d, char *buf, size_t n)
{
	double      x = hw_setting_get(st, d);

	switch (d->type)
	{
		case HW_SETTING_BOOL:
		case HW_SETTING_FLAG:
			snprintf(buf, n, "%s", x != 0 ? "true" : "false");
			return HW_JSON_BOOL;
		case HW_SETTING_ENUM:
			snprintf(buf, n, "%s", d->names_of((int) x) ? d->names_of((int) x) : "");
			return HW_JSON_STRING;
		default:
			if (d->field == HW_FIELD_U64)
				snprintf(buf, n, "%llu", (unsigned long long) *(const uint64_t *) ((const char *) st + d->offset));
			else if (d->field == HW_FIELD_I32)
				snprintf(buf, n, "%d", (int) x);
			else
				snprintf(buf, n, "%g", x);
			return HW_JSON_NUMBER;
	}
}

void
hw_setting_fmt_num(double x, char *buf, size_t n)
{
	if (x == floor(x) && fabs(x) < 1e17)
		snprintf(buf, n, "%.0f", x);
	else
		snprintf(buf, n, "%g", x);
}

/* '"a" or "b"' / '"a", "b" or "c"' */
static void
enum_names_text(const HwSettingDef *d, char *buf, size_t n)
{
	int         count = 0;
	size_t      len = 0;

	while (d->names_of(count) != NULL)
		count++;
	buf[0] = '\0';
	for (int i = 0; i < count && len < n; i++)
		len += snprintf(buf + len, n - len, "%s\"%s\"", i == 0 ? "" : i == count - 1 ? " or " : ", ",
						d->names_of(i));
}

void
hw_setting_range_text(const HwSettingDef *d, char *buf, size_t n)
{
	char        lo[32], hi[32];

	hw_setting_fmt_num(d->min, lo, sizeof(lo));
	hw_setting_fmt_num(d->max, hi, sizeof(hi));
	switch (d->type)
	{
		case HW_SETTING_BOOL: snprintf(buf, n, "true/false"); break;
		case HW_SETTING_FLAG: snprintf(buf, n, "true/false (or 1/0)"); break;
		case HW_SETTING_INT: snprintf(buf, n, "integer %s..%s", lo, hi); break;
		case HW_SETTING_NUM:
			if (d->min_exclusive)
				snprintf(buf, n, "number, > %s and <= %s", lo, hi);
			else
				snprintf(buf, n, "number %s..%s", lo, hi);
			break;
		case HW_SETTING_ENUM: enum_names_text(d, buf, n); break;
		case HW_SETTING_DEVICES: snprintf(buf, n, "\"all\" or %s..%s", lo, hi); break;
		case HW_SETTING_WEIGHTS: snprintf(buf, n, "object {\"task\": weight}, weights %s..%s", lo, hi); break;
	}
}

void
hw_setting_default_text(const HwSettingDef *d, char *buf, size_t n)
{
	if (d->dflt_text != NULL)
		snprintf(buf, n, "%s", d->dflt_text);
	else if (d->type == HW_SETTING_BOOL || d->type == HW_SETTING_FLAG)
		snprintf(buf, n, "%s", d->dflt != 0 ? "true" : "false");
	else if (d->type == HW_SETTING_ENUM)
		snprintf(buf, n, "\"%s\"", d->names_of((int) d->dflt));
	else
		hw_setting_fmt_num(d->dflt, buf, n);
}

void
hw_setting_hint(const HwSettingDef *d, char *buf, size_t n)
{
	char        lo[32], hi[32];

	if (d->hint != NULL)
	{
		snprintf(buf, n, "%s", d->hint);
		return;
	}
	hw_setting_fmt_num(d->min, lo, sizeof(lo));
	hw_setting_fmt_num(d->max, hi, sizeof(hi));
	switch (d->type)
	{
		case HW_SETTING_BOOL:
			snprintf(buf, n, "%s must be true or false (%s).", d->name, d->what);
			break;
		case HW_SETTING_FLAG:
			snprintf(buf, n, "%s must be true or false, or 1 or 0 (%s).", d->name, d->what);
			break;
		case HW_SETTING_INT:
			snprintf(buf, n, "%s must be an integer from %s to %s (%s).", d->name, lo, hi, d->what);
			break;
		case HW_SETTING_NUM:
			if (d->min_exclusive)
				snprintf(buf, n, "%s must be a number greater than %s and at most %s (%s).", d->name, lo, hi, d->what);
			else
				snprintf(buf, n, "%s must be a number from %s to %s (%s).", d->name, lo, hi, d->what);
			break;
		case HW_SETTING_ENUM:
			{
				char        names[128];

				enum_names_text(d, names, sizeof(names));
				snprintf(buf, n, "%s must be %s (%s).", d->name, names, d->what);
				break;
			}
		case HW_SETTING_DEVICES:
			snprintf(buf, n, "%s must be \"all\" or an integer from %s to %s (%s).", d->name, lo, hi, d->what);
			break;
		case HW_SETTING_WEIGHTS:
			snprintf(buf, n, "%s must be an object {\"task\": weight} of the tasks being trained, weights "
					 "from %s to %s (%s).", d->name, lo, hi, d->what);
			break;
	}
}

const char *
hw_setting_group_name(HwSettingGroup g)
{
	static const char *const names[] = {"model", "sampler", "schedule", "infrastructure"};

	return (int) g >= 0 && (int) g < 4 ? names[g] : "?";
}

const char *
hw_setting_type_name(HwSettingType t)
{
	static const char *const names[] = {"bool", "flag", "integer", "number", "enum", "devices", "weights"};

	return (int) t >= 0 && (int) t < 7 ? names[t] : "?";
}
