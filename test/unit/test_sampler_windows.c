/*
 * test_sampler_windows.c: the child-count windows (count_windows): "std"
 * spaces them from 0.044 to 1.41 timestamp std (the default); "events"
 * reaches down to half the typical interval between a row's dated
 * children when the std's narrowest window is wider than that interval,
 * and is "std" to the bit otherwise.  time_ramps: the model's recency
 * ramps narrowed by the same rule (a factor each batch carries).
 */
#include "unit.h"
#include "synth_snapshot.h"
#include "sampler_ref.h"
#include "core/sampler.h"

#include <math.h>
#include <string.h>

#define TEAMS   20
#define MATCHES 30          /* per team, every 10 days from day `team` */
#define ERA     30          /* undated-by-FK rows spread over a century */

/*
 *   team(id, rating)              TEAMS rows, no time column
 *   match(id, team_id, at*)       MATCHES per team: team k plays at days k, k + 10, ...
 *   era(id, at*)                  with `century`: ERA rows 1200 days apart before T0,
 *                                 no FK: they only widen the timestamp std
 */
static HwSnapshot *
league(bool century)
{
	HwSnapshot *s = synth_new(4);
	int tm = synth_add_table(s, "team", TEAMS, "id:identifier,rating:numerical", -1);
	int m = synth_add_table(s, "match", TEAMS * MATCHES, "id:identifier,team_id:identifier,at:timestamp", 2);
	int e = century ? synth_add_table(s, "era", ERA, "id:identifier,at:timestamp", 1) : -1;
	int fk = synth_add_fk(s, "match_team_id_fkey", m, tm);

	for (int k = 0; k < TEAMS; k++)
	{
		synth_col(s, tm, "rating")->f32[k] = (float) k;
		for (int i = 0; i < MATCHES; i++)
		{
			int r = k * MATCHES + i;

			synth_edge(s, synth_row(s, m, (uint32_t) r), synth_row(s, tm, (uint32_t) k), fk);
			synth_col(s, m, "at")->i64[r] = T0_US + (int64_t) (k + 10 * i) * DAY_US;
		}
	}
	for (int i = 0; i < ERA && century; i++)
		synth_col(s, e, "at")->i64[i] = T0_US - (int64_t) (i + 1) * 1200 * DAY_US;
	if (synth_finish(s) != 0)
	{
		synth_free(s);
		return NULL;
	}
	return s;
}

/* team 0 at day obs_day, no label history */
static HwTask *
team_task(const HwSnapshot *s, int obs_day)
{
	HwError err = {0};
	HwTask *t = hw_task_new("q", HW_TASK_QUERY, &err);

	t->anchor_table = 0;
	t->target_stype = HW_ST_NUMERICAL;
	t->label_history = false;
	hw_task_alloc_seeds(t, 1, &err);
	t->anchor_row[0] = 0;
	t->anchor_key[0] = s->tables[0].key_hash[0];
	t->obs_time_us[0] = T0_US + (int64_t) obs_day * DAY_US;
	t->target[0] = 1.0;
	hw_task_assign_splits(t, &err);
	t->target_mean = 0;
	t->target_std = 1;
	return t;
}

static HwSampler *
league_sampler_ramps(const HwSnapshot *s, HwTask *t, int count_windows, int time_ramps)
{
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 1;
	cfg.seq_len = 64;
	cfg.n_threads = 1;
	cfg.count_windows = count_windows;
	cfg.time_ramps = time_ramps;
	return hw_sampler_create(s, &t, 1, &cfg, &err);
}

static HwSampler *
league_sampler(const HwSnapshot *s, HwTask *t, int count_windows)
{
	return league_sampler_ramps(s, t, count_windows, HW_COUNT_WINDOWS_STD);
}

/* the windows of "std", worked out here */
static void
std_windows(const HwSnapshot *s, int64_t win[HW_CHILD_WINDOWS])
{
	win[0] = 0;
	for (int j = 1; j < HW_CHILD_WINDOWS; j++)
		win[j] = (int64_t) llround(s->ts_std_us * pow(2.0, (j - 10) / 2.0));
}

UNIT_TEST(sampler_count_windows_reach_the_events_pace)
{
	HwSnapshot *s = league(true);
	CHECK(s != NULL);
	HwTask *t = team_task(s, 150);
	int64_t ev[HW_CHILD_WINDOWS], sd[HW_CHILD_WINDOWS], ref[HW_CHILD_WINDOWS];

	HwSampler *se = league_sampler(s, t, HW_COUNT_WINDOWS_EVENTS), *ss = league_sampler(s, t, HW_COUNT_WINDOWS_STD);
	CHECK(se != NULL && ss != NULL);
	CHECK_EQ_INT(hw_sampler_config(se)->count_windows, HW_COUNT_WINDOWS_EVENTS);
	hw_sampler_count_windows(se, ev);
	hw_sampler_count_windows(ss, sd);
	std_windows(s, ref);
	/* a century of rows: the std is a decade or more, its narrowest window
	 * months, where the teams play every 10 days */
	CHECK(s->ts_std_us > 10 * 365.0 * DAY_US);
	for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		CHECK_EQ_INT(sd[j], ref[j]);
	CHECK(sd[1] > 100 * DAY_US);
	/* events: every team plays every 10 days, so the narrowest is 5 days,
	 * the widest the std's, geometric between */
	CHECK_EQ_INT(ev[0], 0);
	CHECK_EQ_INT(ev[1], 5 * DAY_US);
	CHECK_EQ_INT(ev[HW_CHILD_WINDOWS - 1], ref[HW_CHILD_WINDOWS - 1]);
	double ratio = (double) ev[2] / (double) ev[1];
	for (int j = 2; j < HW_CHILD_WINDOWS; j++)
		CHECK_MSG(fabs((double) ev[j] / (double) ev[j - 1] / ratio - 1) < 1e-6, "window %d", j);
	hw_sampler_free(ss);
	hw_sampler_free(se);
	hw_task_free(t);
	synth_free(s);
}

/* the team's count of matches in the batch against a naive count with the
 * sampler's windows: with "events" the windows tell the last match from
 * the last months; with "std" every match is in the narrowest window */
UNIT_TEST(sampler_count_windows_counts_match_naive)
{
	HwSnapshot *s = league(true);
	CHECK(s != NULL);
	HwTask *t = team_task(s, 150);
	int days[MATCHES];

	for (int i = 0; i < MATCHES; i++)
		days[i] = 10 * i;               /* team 0 */
	for (int mode = 0; mode < 2; mode++)
	{
		HwError err = {0};
		HwSampler *sm = league_sampler(s, t, mode);
		uint32_t seed = 0;
		HwBatch *b = NULL;
		int64_t win[HW_CHILD_WINDOWS];
		int want[HW_CHILD_WINDOWS], cell = -1;

		CHECK(sm != NULL);
		CHECK(hw_sampler_seed_batch(sm, 0, &seed, 1, &b, &err) == HW_OK);
		for (int i = 0; i < b->S && cell < 0; i++)
			if (!b->is_padding[i] && b->column_ids[i] == 1)      /* team.rating: the anchor's */
				cell = i;
		CHECK(cell >= 0);
		hw_sampler_count_windows(sm, win);
		naive_window_counts(win, days, MATCHES, 150, true, want);
		CHECK_EQ_INT(want[0], 16);                               /* days 0 .. 150 */
		const uint16_t *cnt = b->child_count + (size_t) cell * HW_CHILD_LINKS * HW_CHILD_WINDOWS;
		for (int j = 0; j < HW_CHILD_WINDOWS; j++)
			CHECK_MSG(cnt[j] == want[j], "mode %d window %d: %u, expected %d", mode, j, cnt[j], want[j]);
		if (mode == HW_COUNT_WINDOWS_EVENTS)
			CHECK(want[1] == 1 && want[HW_CHILD_WINDOWS - 1] == 16 && want[5] > 1 && want[5] < 16);
		else
			CHECK_EQ_INT(want[1], 16);
		hw_batch_free(b);
		hw_sampler_free(sm);
	}
	hw_task_free(t);
	synth_free(s);
}

/* data whose history is short against its pace: "events" = "std", to the bit */
UNIT_TEST(sampler_count_windows_short_history_unchanged)
{
	HwSnapshot *s = league(false);
	CHECK(s != NULL);
	HwTask *t = team_task(s, 150);
	int64_t ev[HW_CHILD_WINDOWS], ref[HW_CHILD_WINDOWS];
	HwSampler *se = league_sampler(s, t, HW_COUNT_WINDOWS_EVENTS);

	CHECK(se != NULL);
	hw_sampler_count_windows(se, ev);
	std_windows(s, ref);
	CHECK(ref[1] < 10 * DAY_US);        /* the std's narrowest is already below the pace */
	for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		CHECK_EQ_INT(ev[j], ref[j]);
	hw_sampler_free(se);
	hw_task_free(t);
	synth_free(s);
}

/* time_ramps "events": the ramps narrowed by the std's narrowest window
 * over half the pace (5 days), worked out here; the count windows stay the
 * std's unless count_windows says otherwise; each batch carries the
 * factor.  "std", or a history short against its pace: 1. */
UNIT_TEST(sampler_time_ramps_follow_the_events_pace)
{
	HwSnapshot *s = league(true), *shrt = league(false);
	CHECK(s != NULL && shrt != NULL);
	HwTask *t = team_task(s, 150), *ts = team_task(shrt, 150);
	HwSampler *re = league_sampler_ramps(s, t, HW_COUNT_WINDOWS_STD, HW_COUNT_WINDOWS_EVENTS);
	HwSampler *rs = league_sampler(s, t, HW_COUNT_WINDOWS_STD);
	HwSampler *rshort = league_sampler_ramps(shrt, ts, HW_COUNT_WINDOWS_EVENTS, HW_COUNT_WINDOWS_EVENTS);
	int64_t win[HW_CHILD_WINDOWS], ref[HW_CHILD_WINDOWS];
	double want = s->ts_std_us * pow(2.0, -4.5) / (5.0 * DAY_US);
	HwError err = {0};
	uint32_t seed = 0;
	HwBatch *b = NULL;

	CHECK(re != NULL && rs != NULL && rshort != NULL);
	CHECK_MSG(fabs(hw_sampler_rel_time_scale(re) / want - 1) < 1e-6, "scale %g, expected %g",
			  (double) hw_sampler_rel_time_scale(re), want);
	CHECK(want > 10);
	CHECK(hw_sampler_rel_time_scale(rs) == 1.0f);
	CHECK(hw_sampler_rel_time_scale(rshort) == 1.0f);
	hw_sampler_count_windows(re, win);
	std_windows(s, ref);
	for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		CHECK_EQ_INT(win[j], ref[j]);
	CHECK(hw_sampler_seed_batch(re, 0, &seed, 1, &b, &err) == HW_OK);
	CHECK(b->rel_time_scale == hw_sampler_rel_time_scale(re));
	hw_batch_free(b);
	b = NULL;
	CHECK(hw_sampler_seed_batch(rs, 0, &seed, 1, &b, &err) == HW_OK);
	CHECK(b->rel_time_scale == 1.0f);
	hw_batch_free(b);
	hw_sampler_free(rshort);
	hw_sampler_free(rs);
	hw_sampler_free(re);
	hw_task_free(ts);
	hw_task_free(t);
	synth_free(shrt);
	synth_free(s);
}

UNIT_TEST(sampler_count_windows_names_and_config)
{
	HwSamplerConfig cfg;
	HwError err = {0};

	CHECK(strcmp(hw_count_windows_name(HW_COUNT_WINDOWS_EVENTS), "events") == 0);
	CHECK(strcmp(hw_count_windows_name(HW_COUNT_WINDOWS_STD), "std") == 0);
	CHECK(hw_count_windows_name(2) == NULL && hw_count_windows_name(-1) == NULL);
	CHECK_EQ_INT(hw_count_windows_from_name("std"), HW_COUNT_WINDOWS_STD);
	CHECK_EQ_INT(hw_count_windows_from_name("weekly"), -1);
	hw_sampler_config_default(&cfg);
	CHECK_EQ_INT(cfg.count_windows, HW_COUNT_WINDOWS_STD);
	HwSnapshot *s = league(false);
	HwTask *t = team_task(s, 150);

	cfg.count_windows = 7;
	CHECK(hw_sampler_create(s, &t, 1, &cfg, &err) == NULL);
	CHECK(strstr(err.msg, "count_windows 7") != NULL);
	CHECK_EQ_INT(cfg.time_ramps, HW_COUNT_WINDOWS_EVENTS);
	cfg.count_windows = HW_COUNT_WINDOWS_STD;
	cfg.time_ramps = 2;
	CHECK(hw_sampler_create(s, &t, 1, &cfg, &err) == NULL);
	CHECK(strstr(err.msg, "time_ramps 2") != NULL);
	hw_task_free(t);
	synth_free(s);
}
