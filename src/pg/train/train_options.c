/*
 * train_options.c: the arguments and options of rt_train (hw_train.h).
 *
 * The settings table (src/core/settings.c) says, for every option, its JSON
 * type, valid range and default; this file walks the options object and
 * hands each member to it.  The calling backend parses rt_train's arguments
 * here, so a bad value is an error of the call (SQLSTATE 22023 naming the
 * option, the value and, in the hint, the range) and never a failed job;
 * the worker receives the validated settings as they are (HwJobShared).
 * What depends on the server is clamped (threads to its CPUs) or checked
 * against it (the model's memory).  Resume merging is here too: which
 * settings a resumed run keeps is the table's flag.
 */
#include "postgres.h"

#include <math.h>
#include <unistd.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "pg/train/hw_checkpoint.h"
#include "pg/base/hw_pg.h"
#include "pg/base/hw_settings_pg.h"
#include "pg/train/hw_train.h"

/* The hint of an unknown option: every option's name, in the table's order. */
static void pg_attribute_noreturn()
unknown_option(const char *key)
{
	if (strcmp(key, "split_seed") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"split_seed\" is not an rt_train option"),
				 errhint("The train/val/test split is fixed per task: "
						 "rt_create_task(..., options => '{\"split_seed\": 7}').")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown rt_train option \"%s\"", key),
			 errhint("Valid options are: %s.", hw_pg_setting_names(0))));
}

static void pg_attribute_noreturn()
bad_value(const HwSettingDef *d, const JsonbValue *v)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for rt_train option \"%s\": %s", d->name, hw_pg_json_value_text(v)),
			 errhint("%s", hw_pg_setting_hint(d))));
}

/* task_weights: an object of numbers in the row's range (names: the caller
 * checks them against the model). */
static void
check_task_weights_values(const HwSettingDef *d, const JsonbValue *v)
{
	JsonbIterator *it;
	JsonbValue  k, w;
	JsonbIteratorToken tok;

	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		bad_value(d, v);
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		HwSettingValue sv;

		if (tok != WJB_KEY)
			continue;
		(void) JsonbIteratorNext(&it, &w, true);
		hw_pg_setting_value(&w, &sv);
		if (sv.kind != HW_JSON_NUMBER || !hw_setting_number_ok(d, sv.num))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid weight for task \"%s\" in rt_train option \"task_weights\": %s",
							pnstrdup(k.val.string.val, k.val.string.len), hw_pg_json_value_text(&w)),
					 errhint("%s", hw_pg_setting_hint(d))));
	}
}

/* One member of the options object, to the settings table. */
static void
apply_option(const char *key, const JsonbValue *v, void *arg)
{
	HwSettings *st = (HwSettings *) arg;
	const HwSettingDef *d = hw_setting_find(key);
	HwSettingValue sv;
	HwError     err = {0};

	if (d == NULL)
		unknown_option(key);
	if (d->type == HW_SETTING_WEIGHTS)
	{
		check_task_weights_values(d, v);
		return;
	}
	hw_pg_setting_value(v, &sv);
	if (hw_setting_apply(st, d, &sv, &err) != HW_OK)
		bad_value(d, v);
	if (d->offset == offsetof(HwSettings, ranks))
	{
		if (st->ranks_given)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rt_train options \"ranks\" and \"devices\" are the same setting"),
					 errhint("Give one of them: devices (\"all\" or a number) for GPUs, ranks for CPU threads.")));
		st->ranks_given = true;
	}
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

	/* the small preset unless asked otherwise (docs/model.md, presets) */
	preset = strcmp(preset, "auto") == 0 ? "small" : preset;
	/*
	 * The defaults are the table's (settings.c).  A parameter average by
	 * default: each checkpoint is validated on its last parameters and on
	 * the average, and each task is served from the better
	 * (hw_checkpoint_find_task).  A task's checkpoint is chosen on its
	 * val_rows; 2048 is a cost compromise: on the demo shop's orders_30d
	 * (3 seeds) 512 rows chose checkpoints 0.6% worse in test MAE than
	 * 2048, and the whole split (5,000 rows) 0.4% better at 2.5 times the
	 * cost.
	 */
	if (hw_settings_defaults(st, preset, steps, &err) != HW_OK)
		hw_pg_raise_core_error(&err, "preset");
	strlcpy(st->preset, preset, sizeof(st->preset));
	strlcpy(st->device, device, sizeof(st->device));
	if (options != NULL)
		hw_pg_jsonb_each(options, apply_option, st);
	hw_settings_finish(st);

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
	/* bf16 on the CPU needs AVX512_BF16 (a GPU keeps its own GEMM
	 * arithmetic, docs/cuda.md): refuse here what the worker would */
	if (st->train_precision == HW_PRECISION_BF16 && strcmp(device, "cuda") != 0 && !hw_backend_cpu_bf16_supported())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rt_train option \"train_precision\": \"bf16\" needs a processor with AVX512_BF16; this one "
						"has none"),
				 errhint("Use \"train_precision\": \"auto\" (bf16 where the processor can) or \"fp32\".")));
	if (hw_model_config_finish(&st->mcfg, &err) != HW_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid rt_train options: %s", err.msg),
				 errhint("Check the model options against the preset's values (docs/user_guide.md).")));
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
	HwSettingValue x;

	if (options == NULL)
		return dflt;
	tw = getKeyJsonValueFromContainer(options, "task_weights", strlen("task_weights"), NULL);
	if (tw == NULL || tw->type != jbvBinary || !JsonContainerIsObject(tw->val.binary.data))
		return dflt;
	w = getKeyJsonValueFromContainer(tw->val.binary.data, task, strlen(task), NULL);
	if (w == NULL)
		return dflt;
	hw_pg_setting_value(w, &x);
	return x.kind == HW_JSON_NUMBER ? x.num : dflt;
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
 * name, out of the option's range: an error that names the checkpoint (a
 * config is only ever written by the trainer, so this is a damaged one). */
static void pg_attribute_noreturn()
bad_kept(const HwSettingDef *d, const HwCheckpointInfo *ck)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("checkpoint %lld has an invalid sampler option \"%s\" (%g) to resume with",
					(long long) ck->checkpoint_id, d->name, hw_setting_get(&ck->config, d)),
			 errhint("%s Name it in this call to replace the checkpoint's value, or start over with "
					 "options => '{\"restart\": true}'.", hw_pg_setting_hint(d))));
}

/*
 * Why: the sampler decides what a model reads (which children, which cells,
 * which counts), and its defaults change between releases as the
 * benchmarks move them (docs/BENCHMARKS.md).  A run that resumes a
 * checkpoint trained under other defaults must not see other inputs than
 * it learnt from unless the caller says so; an option given in this call
 * still wins.  The seed goes with them: it orders the training batches
 * and draws the sequences predictions read.  Which settings a run keeps is
 * the table's HW_SETTING_KEPT.
 */
void
hw_train_settings_resume_sampler(HwTrainSettings *st, const HwCheckpointInfo *ck, JsonbContainer *options)
{
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
	{
		int         i = hw_setting_index(d);

		if (!(d->flags & HW_SETTING_KEPT) || option_given(options, d->name))
			continue;
		/* a setting the config lacks and has no meaning for stays as it is */
		if (!ck->config_present[i] && d->absent == NULL)
			continue;
		if (!ck->config_valid[i])
			bad_kept(d, ck);
		hw_setting_set(st, d, hw_setting_get(&ck->config, d));
	}
	st->scfg.seed = st->mcfg.seed;
	/* and the anchor names it hid, unless anchor_names is given */
	st->scfg.hidden_names = NULL;
	if (!option_given(options, "anchor_names") && ck->config.scfg.hidden_names != NULL)
		st->scfg.hidden_names = MemoryContextStrdup(TopMemoryContext, ck->config.scfg.hidden_names);
	if (st->scfg.recent_children > st->scfg.bfs_child_width)
		check_recent_within_width(&st->scfg,
								  psprintf("A resumed run keeps its checkpoint's sampler options unless given "
										   "(recent_children %d, child_width %d there); recent_children must "
										   "be at most child_width.", ck->config.scfg.recent_children,
										   ck->config.scfg.bfs_child_width));
}
