/*
 * test_settings.c: the settings table (settings.h) against hand-written
 * expectations: defaults (and that they agree with the preset and the
 * sampler's own defaults), parsing and ranges, stored values, texts, and
 * docs/user_guide.md's option table (names, ranges, defaults), so the two
 * cannot drift.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "core/settings.h"

static HwSettingValue
num(double x)
{
	return (HwSettingValue) {.kind = HW_JSON_NUMBER, .num = x};
}

static HwSettingValue
str(const char *s)
{
	return (HwSettingValue) {.kind = HW_JSON_STRING, .str = s};
}

static HwSettingValue
boolean(bool b)
{
	return (HwSettingValue) {.kind = HW_JSON_BOOL, .b = b};
}

static int
apply(HwSettings *st, const char *name, HwSettingValue v)
{
	HwError     err = {0};
	const HwSettingDef *d = hw_setting_find(name);

	return d ? hw_setting_apply(st, d, &v, &err) : -1;
}

UNIT_TEST(settings_defaults)
{
	HwSettings  st;
	HwError     err = {0};

	CHECK(hw_settings_defaults(&st, "small", 1000, &err) == HW_OK);
	CHECK_EQ_INT(st.steps, 1000);
	CHECK_EQ_INT(st.mcfg.total_steps, 1000);
	CHECK_EQ_INT(st.mcfg.d_model, 128);
	CHECK_EQ_INT(st.mcfg.batch_size, 32);
	CHECK_EQ_INT(st.mcfg.warmup_steps, 100);         /* min(100, 1000/10) */
	CHECK_EQ_INT(st.checkpoint_every, 200);          /* 1000/5 within 10..500 */
	CHECK_EQ_INT(st.val_every, -1);                  /* checkpoint_every, after the options */
	CHECK_EQ_INT(st.val_batches, 4);
	CHECK_EQ_INT(st.val_rows, 2048);
	CHECK_EQ_INT(st.log_every, 10);
	CHECK_CLOSE(st.progress_seconds, 2, 0, 0);
	CHECK_CLOSE(st.max_minutes, 0, 0, 0);
	CHECK_EQ_INT(st.ranks, 1);
	CHECK_EQ_INT(st.grad_accum, 1);
	CHECK_EQ_INT(st.check_every, 100);
	CHECK_CLOSE(st.rank_timeout, 600, 0, 0);
	CHECK_CLOSE(st.mcfg.ema_decay, 0.99, 1e-7, 0);
	CHECK_CLOSE(st.mcfg.lr, 3e-3, 1e-9, 0);
	CHECK_CLOSE(st.mcfg.weight_decay, 0.3, 1e-7, 0);
	CHECK_EQ_INT(st.mcfg.seed, 42);
	CHECK_EQ_INT(st.scfg.max_rows, 200);
	CHECK_EQ_INT(st.scfg.bfs_child_width, 16);
	CHECK_EQ_INT(st.scfg.recent_children, -1);
	CHECK_EQ_INT(st.scfg.child_sampling, HW_CHILD_RECENT);
	CHECK_EQ_INT(st.scfg.future_parents, HW_FUTURE_PARENTS_HIDE);
	CHECK(!st.scfg.key_cells);
	CHECK(st.scfg.descendant_counts);
	CHECK(!st.restart);
	/* short and long runs: the computed defaults' bounds */
	CHECK(hw_settings_defaults(&st, "tiny", 20, &err) == HW_OK);
	CHECK_EQ_INT(st.mcfg.warmup_steps, 2);
	CHECK_EQ_INT(st.checkpoint_every, 10);
	CHECK(hw_settings_defaults(&st, "base", 100000, &err) == HW_OK);
	CHECK_EQ_INT(st.checkpoint_every, 500);
	CHECK_EQ_INT(st.mcfg.d_model, 256);
	CHECK(hw_settings_defaults(&st, "huge", 10, &err) != HW_OK);
	hw_settings_finish(&st);
}

/* A row's plain default is what the preset or the sampler would give. */
UNIT_TEST(settings_defaults_agree_with_preset_and_sampler)
{
	HwSettings  from_core;
	HwSettings  st;
	HwError     err = {0};

	memset(&from_core, 0, sizeof(from_core));
	CHECK(hw_model_config_preset(&from_core.mcfg, "small", &err) == HW_OK);
	hw_sampler_config_default(&from_core.scfg);
	CHECK(hw_settings_defaults(&st, "small", 1000000, &err) == HW_OK);
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
	{
		size_t      mcfg_end = offsetof(HwSettings, mcfg) + sizeof(HwModelConfig);

		if (d->field == HW_FIELD_NONE || d->offset < offsetof(HwSettings, mcfg) || d->dflt_text != NULL)
			continue;
		/* ema_decay: the preset has none, training keeps an average by default */
		if (strcmp(d->name, "ema_decay") == 0)
			continue;
		CHECK_MSG(hw_setting_get(&from_core, d) == hw_setting_get(&st, d),
				  "default of %s: %g in the table, %g from the %s", d->name, hw_setting_get(&st, d),
				  hw_setting_get(&from_core, d), d->offset < mcfg_end ? "preset" : "sampler");
	}
}

UNIT_TEST(settings_parse_and_ranges)
{
	HwSettings  st;
	HwError     err = {0};

	CHECK(hw_settings_defaults(&st, "small", 100, &err) == HW_OK);
	CHECK(apply(&st, "child_width", num(64)) == HW_OK);
	CHECK_EQ_INT(st.scfg.bfs_child_width, 64);
	CHECK(apply(&st, "child_width", num(65)) != HW_OK);
	CHECK(apply(&st, "child_width", num(0)) != HW_OK);
	CHECK(apply(&st, "child_width", num(1.5)) != HW_OK);
	CHECK(apply(&st, "child_width", str("8")) != HW_OK);
	CHECK_EQ_INT(st.scfg.bfs_child_width, 64);
	CHECK(apply(&st, "recent_children", num(0)) == HW_OK);
	CHECK(apply(&st, "max_rows", num(65535)) == HW_OK);
	CHECK(apply(&st, "max_rows", num(65536)) != HW_OK);
	/* exclusive minimum */
	CHECK(apply(&st, "lr", num(0)) != HW_OK);
	CHECK(apply(&st, "lr", num(1)) == HW_OK);
	CHECK(apply(&st, "lr", num(1.01)) != HW_OK);
	CHECK(apply(&st, "weight_decay", num(0)) == HW_OK);
	CHECK(apply(&st, "max_minutes", num(0)) != HW_OK);
	CHECK(apply(&st, "max_minutes", num(0.5)) == HW_OK);
	CHECK_CLOSE(st.max_minutes, 0.5, 0, 0);
	/* bool: JSON true/false only; flag: 1/0 too */
	CHECK(apply(&st, "restart", num(1)) != HW_OK);
	CHECK(apply(&st, "restart", boolean(true)) == HW_OK);
	CHECK(st.restart);
	CHECK(apply(&st, "full_attention", num(1)) == HW_OK);
	CHECK_EQ_INT(st.mcfg.full_attention, 1);
	CHECK(apply(&st, "full_attention", num(2)) != HW_OK);
	CHECK(apply(&st, "rel_time", boolean(false)) == HW_OK);
	CHECK_EQ_INT(st.mcfg.rel_time, 0);
	/* enums by name */
	CHECK(apply(&st, "child_sampling", str("uniform")) == HW_OK);
	CHECK_EQ_INT(st.scfg.child_sampling, HW_CHILD_UNIFORM);
	CHECK(apply(&st, "child_sampling", str("newest")) != HW_OK);
	CHECK(apply(&st, "future_parents", boolean(true)) != HW_OK);
	CHECK(apply(&st, "future_parents", str("follow")) == HW_OK);
	CHECK_EQ_INT(st.scfg.future_parents, HW_FUTURE_PARENTS_FOLLOW);
	/* devices: "all" or a count, into ranks */
	CHECK(apply(&st, "devices", str("all")) == HW_OK);
	CHECK(st.devices_all);
	CHECK_EQ_INT(st.ranks, 1);
	CHECK(apply(&st, "devices", num(3)) == HW_OK);
	CHECK(!st.devices_all);
	CHECK_EQ_INT(st.ranks, 3);
	CHECK(apply(&st, "devices", str("some")) != HW_OK);
	CHECK(apply(&st, "ranks", num(65)) != HW_OK);
	/* the seed: up to 2^53 - 1, in the model's config; finish copies it to the sampler */
	CHECK(apply(&st, "seed", num(9007199254740991.0)) == HW_OK);
	CHECK(apply(&st, "seed", num(-1)) != HW_OK);
	CHECK(apply(&st, "batch_size", num(7)) == HW_OK);
	hw_settings_finish(&st);
	CHECK(st.scfg.seed == 9007199254740991ULL);
	CHECK_EQ_INT(st.scfg.batch_size, 7);
	CHECK_EQ_INT(st.val_every, st.checkpoint_every);
	/* gone: several hosts were never built */
	CHECK(hw_setting_find("hosts") == NULL);
	CHECK(hw_setting_find("split_seed") == NULL);
}

UNIT_TEST(settings_stored_values)
{
	HwSettings  st;
	HwError     err = {0};
	const HwSettingDef *width = hw_setting_find("child_width");
	const HwSettingDef *recent = hw_setting_find("recent_children");
	const HwSettingDef *sampling = hw_setting_find("child_sampling");
	char        buf[64];
	HwSettingValue v;

	CHECK(hw_settings_defaults(&st, "small", 100, &err) == HW_OK);
	v = num(0);
	CHECK(!hw_setting_read_stored(&st, width, &v));     /* damaged: kept as found, reported */
	CHECK_EQ_INT(st.scfg.bfs_child_width, 0);
	v = num(-1);
	CHECK(hw_setting_read_stored(&st, recent, &v));     /* the default (half) is always valid */
	CHECK_EQ_INT(st.scfg.recent_children, -1);
	st.scfg.child_sampling = HW_CHILD_UNIFORM;
	v = str("sideways");
	CHECK(!hw_setting_read_stored(&st, sampling, &v));
	CHECK_EQ_INT(st.scfg.child_sampling, HW_CHILD_UNIFORM);
	/* the config's JSON: as the checkpoints have always written it */
	CHECK(hw_setting_format(&st, sampling, buf, sizeof(buf)) == HW_JSON_STRING && strcmp(buf, "uniform") == 0);
	CHECK(hw_setting_format(&st, hw_setting_find("rel_time"), buf, sizeof(buf)) == HW_JSON_BOOL &&
		  strcmp(buf, "true") == 0);
	CHECK(hw_setting_format(&st, hw_setting_find("lr"), buf, sizeof(buf)) == HW_JSON_NUMBER &&
		  strcmp(buf, "0.003") == 0);
	st.mcfg.seed = 9007199254740991ULL;
	CHECK(hw_setting_format(&st, hw_setting_find("seed"), buf, sizeof(buf)) == HW_JSON_NUMBER &&
		  strcmp(buf, "9007199254740991") == 0);
	/* what a resumed run keeps: the sampler and the seed, nothing else */
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
	{
		bool        kept = (d->flags & HW_SETTING_KEPT) != 0;
		bool        sampler_or_seed = d->group == HW_GROUP_SAMPLER || strcmp(d->name, "seed") == 0;
		/* the sampler's training-only draws: a resumed run may change them */
		bool        training_only = strcmp(d->name, "cell_dropout") == 0 || strcmp(d->name, "recent_weight") == 0;

		CHECK_MSG(kept == (sampler_or_seed && !training_only), "%s kept: %d", d->name, kept);
		CHECK_MSG(!kept || (d->flags & HW_SETTING_STORED), "%s is kept but not stored", d->name);
	}
}

UNIT_TEST(settings_texts)
{
	char        buf[1024];

	hw_setting_hint(hw_setting_find("child_width"), buf, sizeof(buf));
	CHECK_MSG(strcmp(buf, "child_width must be an integer from 1 to 64 (children kept per foreign key and row).") == 0,
			  "%s", buf);
	hw_setting_hint(hw_setting_find("lr"), buf, sizeof(buf));
	CHECK_MSG(strcmp(buf, "lr must be a number greater than 0 and at most 1 (the peak learning rate).") == 0, "%s", buf);
	hw_setting_range_text(hw_setting_find("child_sampling"), buf, sizeof(buf));
	CHECK_MSG(strcmp(buf, "\"recent\" or \"uniform\"") == 0, "%s", buf);
	hw_setting_range_text(hw_setting_find("seed"), buf, sizeof(buf));
	CHECK_MSG(strcmp(buf, "integer 0..9007199254740991") == 0, "%s", buf);
	hw_setting_default_text(hw_setting_find("future_parents"), buf, sizeof(buf));
	CHECK_MSG(strcmp(buf, "\"hide\"") == 0, "%s", buf);
	hw_setting_default_text(hw_setting_find("ema_decay"), buf, sizeof(buf));
	CHECK_MSG(strcmp(buf, "0.99") == 0, "%s", buf);
	CHECK(hw_settings_count() <= HW_SETTINGS_MAX);
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
	{
		CHECK_MSG(d->what != NULL && d->what[0] != '\0', "%s has no description", d->name);
		CHECK_MSG(hw_setting_find(d->name) == d, "%s is not unique", d->name);
	}
}

/* ------------------------------------------------------------ the user guide */

/* s without backticks, trimmed */
static void
plain(const char *s, size_t len, char *out, size_t n)
{
	size_t      j = 0;

	while (len > 0 && isspace((unsigned char) *s))
		s++, len--;
	while (len > 0 && isspace((unsigned char) s[len - 1]))
		len--;
	for (size_t i = 0; i < len && j + 1 < n; i++)
		if (s[i] != '`')
			out[j++] = s[i];
	out[j] = '\0';
}

/* cell starts with want, followed by its end or by ":", ",", ";", " (" */
static bool
starts_with_text(const char *cell, const char *want)
{
	size_t      n = strlen(want);
	const char *rest = cell + n;

	if (strncmp(cell, want, n) != 0)
		return false;
	return *rest == '\0' || *rest == ':' || *rest == ',' || *rest == ';' || strncmp(rest, " (", 2) == 0;
}

/* One row "| `name` | type, range ... | default ... |" against the table;
 * false (with the failure reported) when it does not match. */
static bool
check_guide_row(char *p, bool *seen)
{
	char       *cells[4];
	int         ncell = 0;
	char        name[128], range[4096], dflt[4096], want[512];
	const HwSettingDef *d;

	for (char *c = p; *c && ncell < 4; c++)
		if (*c == '|')
			cells[ncell++] = c + 1;
	if (ncell < 4)
		return true;
	plain(cells[0], cells[1] - cells[0] - 1, name, sizeof(name));
	plain(cells[1], cells[2] - cells[1] - 1, range, sizeof(range));
	plain(cells[2], cells[3] - cells[2] - 1, dflt, sizeof(dflt));
	d = hw_setting_find(name);
	if (d == NULL)
	{
		unit_fail(__FILE__, __LINE__, "docs/user_guide.md lists \"%s\", which is not a setting", name);
		return false;
	}
	seen[hw_setting_index(d)] = true;
	hw_setting_range_text(d, want, sizeof(want));
	if (!starts_with_text(range, want))
	{
		unit_fail(__FILE__, __LINE__, "docs/user_guide.md: %s: range \"%.80s\", the table says \"%s\"",
				  name, range, want);
		return false;
	}
	hw_setting_default_text(d, want, sizeof(want));
	{
		char        w[512];

		plain(want, strlen(want), w, sizeof(w));
		if (!starts_with_text(dflt, w))
		{
			unit_fail(__FILE__, __LINE__, "docs/user_guide.md: %s: default \"%.80s\", the table says \"%s\"",
					  name, dflt, w);
			return false;
		}
	}
	return true;
}

/* rt_train's option table in docs/user_guide.md names every setting, with
 * the table's range and default. */
UNIT_TEST(settings_user_guide_table_matches)
{
	FILE       *f = fopen("docs/user_guide.md", "r");
	char        line[8192];
	bool        in_table = false, ok = true, seen[HW_SETTINGS_MAX] = {0};

	CHECK_MSG(f != NULL, "docs/user_guide.md not found (run from the repository root)");
	while (ok && fgets(line, sizeof(line), f) != NULL)
	{
		char       *p = line;

		while (isspace((unsigned char) *p))
			p++;
		if (strncmp(p, "| option | type, range | default |", 34) == 0)
			in_table = true;
		else if (in_table && *p != '|')
			break;
		else if (in_table && strncmp(p, "|---", 4) != 0)
			ok = check_guide_row(p, seen);
	}
	fclose(f);
	if (!ok)
		return;
	CHECK_MSG(in_table, "docs/user_guide.md has no option table");
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
		CHECK_MSG(seen[hw_setting_index(d)], "docs/user_guide.md's option table lacks \"%s\"", d->name);
}
