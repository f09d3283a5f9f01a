/*
 * sampler_cells.c: the values of a sequence's cells -- a real row's cells
 * from the row cache, a virtual task-table row's (observation time,
 * target) -- and the timestamp encoding through lookup tables (sampler.h,
 * "Tensors").
 */
#include "core/sampler_internal.h"
#include "core/timeenc.h"

#include <math.h>

static void
fill_phase_table(float (*tab)[2], int n, double period)
{
	for (int i = 0; i < n; i++)
	{
		tab[i][0] = (float) sin(2.0 * M_PI * (i / period));
		tab[i][1] = (float) cos(2.0 * M_PI * (i / period));
	}
}
static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

#define SPACING_PARENTS_MAX 4096    /* parents read per FK (evenly spread) */
#define SPACING_GROUPS_MIN  16      /* parents with a spacing for an FK to count */

/*
 * The typical interval between one row's dated children through FK f: over
 * at most SPACING_PARENTS_MAX parent rows (evenly spread over the parent
 * table) with two or more dated children spanning a positive time, the
 * median of (newest - oldest) / (children - 1); 0 without
 * SPACING_GROUPS_MIN such parents.  Deterministic: a function of the
 * snapshot alone, so training and serving get the same windows.
 */
static double
fk_event_spacing_us(const HwSampler *s, int f, double *gaps)
{
	const HwSnapshot *snap = s->snap;
	const HwTable *pt = &snap->tables[s->fk_parent_table[f]];
	uint32_t n = pt->nrows, take = n < SPACING_PARENTS_MAX ? n : SPACING_PARENTS_MAX;
	int      ng = 0;

	for (uint32_t i = 0; i < take; i++)
	{
		uint32_t r = pt->row_offset + (uint32_t) ((uint64_t) i * n / take);
		uint64_t lo, hi, k = 0;
		int64_t  t0 = INT64_MAX, t1 = INT64_MIN;

		fk_group(snap, r, (uint16_t) f, &lo, &hi);
		for (uint64_t e = lo; e < hi; e++)
		{
			int64_t t = s->pf_time[e];

			if (t == HW_NO_TIME)
				continue;
			t0 = t < t0 ? t : t0;
			t1 = t > t1 ? t : t1;
			k++;
		}
		if (k >= 2 && t1 > t0)
			gaps[ng++] = (double) (t1 - t0) / (double) (k - 1);
	}
	if (ng < SPACING_GROUPS_MIN)
		return 0;
	qsort(gaps, (size_t) ng, sizeof(double), cmp_double);
	return gaps[ng / 2];
}

/* The shortest of the FKs' typical intervals between dated children
 * (fk_event_spacing_us); 0 when no FK has one (or out of memory). */
static double
event_spacing_us(const HwSampler *s)
{
	double *gaps = malloc(sizeof(double) * SPACING_PARENTS_MAX);
	double  best = 0;

	if (gaps == NULL)
		return 0;
	for (int f = 0; f < s->snap->nfks; f++)
	{
		if (!s->fk_child_timed[f] || s->fk_parent_table[f] >= s->snap->ntables)
			continue;
		double g = fk_event_spacing_us(s, f, gaps);

		if (g > 0 && (best == 0 || g < best))
			best = g;
	}
	free(gaps);
	return best;
}

/*
 * The child-count windows (row_child_counts, the child means, the
 * descendant counts): window j = 1..11 counts the children dated in
 * (obs - w_j, obs], geometrically spaced from w_1 to w_11 = 2^(1/2)
 * timestamp std.  "std": w_1 = 2^(-9/2) std (0.044 std, the recency
 * ramps' spacing of 2^(1/2); the default).  "events": when even that
 * narrowest window is wider than the shortest typical interval between a
 * row's dated children (the pace, event_spacing_us), w_1 is half the pace
 * instead, so the windows reach down to single events; else the same
 * windows as "std".  Why: the std measures the whole history's span, not
 * the pace of events -- on a database of 150 years of football matches
 * (std 24 years, pace 55 days) the narrowest window was 1.06 years, so
 * "matches in the last 90 days" could not be read, where a team plays
 * every few weeks.  (The demo shop: pace 7.6 days, narrowest std window
 * 6.9 days: unchanged.)  An option, not the default: on that football
 * database it was level with "std" over three seeds, better on one task
 * and worse on another (docs/BENCHMARKS.md).
 *
 * time_ramps "events" (the default) moves the model's relative-time ramps
 * (timeenc.c) down by the same factor, std w_1 over the w_1 "events" would
 * use (rel_time_scale), for the same reason: their narrowest, 2^-6 std, is
 * 137 days on that database.  1 where the pace does not bind, so there
 * "events" equals "std" to the bit.  The two options are independent.
 */
static double
narrowest_window_us(const HwSampler *s, double w1, double top)
{
	bool   events = s->cfg.count_windows == HW_COUNT_WINDOWS_EVENTS ||
		s->cfg.time_ramps == HW_COUNT_WINDOWS_EVENTS;
	double pace = events ? event_spacing_us(s) : 0;

	if (!(pace > 0 && pace < w1))
		return w1;
	/* half the pace, at most 2^20 below the widest */
	return pace / 2 > top * pow(2.0, -20) ? pace / 2 : top * pow(2.0, -20);
}

static void
init_count_windows(HwSampler *s)
{
	double sd = s->snap->ts_std_us > 0 ? s->snap->ts_std_us : 1.0;
	double top = sd * pow(2.0, 0.5), w1 = sd * pow(2.0, -4.5);
	double lo = narrowest_window_us(s, w1, top);

	s->rel_time_scale = s->cfg.time_ramps == HW_COUNT_WINDOWS_EVENTS ? (float) (w1 / lo) : 1.0f;
	s->cnt_win_us[0] = 0;
	if (s->cfg.count_windows == HW_COUNT_WINDOWS_EVENTS && lo < w1)
	{
		for (int j = 1; j < HW_CHILD_WINDOWS; j++)
			s->cnt_win_us[j] = (int64_t) llround(top * pow(lo / top, (double) (HW_CHILD_WINDOWS - 1 - j) /
														 (HW_CHILD_WINDOWS - 2)));
		return;
	}
	/* the same windows as before the option, to the bit */
	for (int j = 1; j < HW_CHILD_WINDOWS; j++)
		s->cnt_win_us[j] = (int64_t) llround(sd * pow(2.0, (j - 10) / 2.0));
}

void
hw_sampler_count_windows(const HwSampler *s, int64_t out[HW_CHILD_WINDOWS])
{
	memcpy(out, s->cnt_win_us, sizeof(int64_t) * HW_CHILD_WINDOWS);
}

float
hw_sampler_rel_time_scale(const HwSampler *s)
{
	return s->rel_time_scale;
}

/* The child-count windows and the timestamp encoding tables of s. */
void
sampler_init_time_tables(HwSampler *s)
{
	init_count_windows(s);
	fill_phase_table(s->tab_min, 60, 60.0);
	fill_phase_table(s->tab_hour, 24, 24.0);
	fill_phase_table(s->tab_wday, 7, 7.0);
	fill_phase_table(s->tab_mday, 31, 31.0);
	fill_phase_table(s->tab_mon, 12, 12.0);
	fill_phase_table(s->tab_yday, 366, 366.0);
}

/*
 * hw_time_encode through lookup tables: every phase except fractional
 * seconds takes integer values, and sin/cos of those are the same doubles
 * rounded to float as hw_time_encode computes, so the result is
 * bit-identical (checked by a unit test) at a fraction of the cost.
 */
static void
enc_time(const HwSampler *s, int64_t us, float *out)
{
	HwTimeFields f;

	hw_time_fields(us, &f);
	if (f.us_in_minute % 1000000LL != 0)
	{
		/* fractional seconds: the one phase computed here, the same
		 * expression as hw_time_encode, so the same bits */
		double ph = 2.0 * M_PI * ((double) f.us_in_minute / 1e6 / 60.0);

		out[0] = (float) sin(ph);
		out[1] = (float) cos(ph);
	}
	else
	{
		int sec = (int) (f.us_in_minute / 1000000LL);

		out[0] = s->tab_min[sec][0];
		out[1] = s->tab_min[sec][1];
	}
	out[2] = s->tab_min[f.minute][0]; out[3] = s->tab_min[f.minute][1];
	out[4] = s->tab_hour[f.hour][0]; out[5] = s->tab_hour[f.hour][1];
	out[6] = s->tab_wday[f.wday][0]; out[7] = s->tab_wday[f.wday][1];
	out[8] = s->tab_mday[f.mday - 1][0]; out[9] = s->tab_mday[f.mday - 1][1];
	out[10] = s->tab_mon[f.month - 1][0]; out[11] = s->tab_mon[f.month - 1][1];
	out[12] = s->tab_yday[f.yday][0]; out[13] = s->tab_yday[f.yday][1];
	double sd = s->snap->ts_std_us > 0 ? s->snap->ts_std_us : 1.0;

	out[14] = (float) (((double) us - s->snap->ts_mean_us) / sd);
}

/* Writes the value of a target (query task or label history) at pos. */
static void
write_task_value(const HwSampler *s, HwBatch *bt, size_t pos, const HwTask *t,
				 double v, bool null)
{
	if (null)
	{
		bt->is_null[pos] = 1;
		return;
	}
	switch (t->target_stype)
	{
		case HW_ST_NUMERICAL:
			bt->numeric_values[pos] = (float) ((v - t->target_mean) / (t->target_std > 0 ? t->target_std : 1.0));
			break;
		case HW_ST_TIMESTAMP:
			enc_time(s, (int64_t) v, bt->timestamp_values + pos * HW_TS_DIM);
			break;
		case HW_ST_BOOLEAN:
			bt->bool_values[pos] = v != 0.0;
			break;
		case HW_ST_CATEGORICAL:
			bt->categorical_embed_ids[pos] = (uint32_t) t->cat_base + (uint32_t) v;
			break;
		default:
			break;
	}
}

/* Emits the cells of one virtual task-table row (obs time, target). */
int
sampler_emit_virtual(const HwSampler *s, HwBatch *bt, size_t base, int ncells, uint16_t local,
					 const HwTask *t, int64_t obs, double target, bool tnull, bool is_target,
					 bool with_truth)
{
	int S = s->cfg.seq_len;

	if (ncells < S)
	{
		size_t pos = base + ncells++;

		bt->semantic_types[pos] = HW_ST_TIMESTAMP;
		bt->column_ids[pos] = t->col_base;
		bt->seq_row_ids[pos] = local;
		if (obs == HW_NO_CUTOFF)
			bt->is_null[pos] = 1;
		else
			enc_time(s, obs, bt->timestamp_values + pos * HW_TS_DIM);
	}
	if (ncells < S)
	{
		size_t pos = base + ncells++;

		bt->semantic_types[pos] = t->target_stype;
		bt->column_ids[pos] = t->col_base + 1;
		bt->seq_row_ids[pos] = local;
		bt->is_target[pos] = is_target;
		if (!is_target || with_truth)
			write_task_value(s, bt, pos, t, target, tnull);
	}
	return ncells;
}

/* Emits the cells of real row g (table ti) from position ncells; target_c >=
 * 0 marks that column index as the target. */
int
sampler_emit_row(const HwSampler *s, HwBatch *bt, size_t base, int ncells, uint16_t local,
				 uint32_t g, int ti, int target_c, bool with_truth)
{
	const HwTable *tb = &s->snap->tables[ti];
	const TableInfo *inf = &s->tinfo[ti];
	uint32_t r = g - tb->row_offset;
	const uint8_t *rec = inf->rec + (size_t) r * inf->stride;
	int S = s->cfg.seq_len;
	int n = inf->n;
	int skip_from = n;          /* row 0 of a cell task cut before its target */

	if (target_c >= 0 && ncells + n > S)
	{
		for (int k = 0; k < n; k++)
			if (inf->col[k] == target_c && ncells + k >= S)
				skip_from = S - 1 - ncells;   /* leave one slot for the target */
	}
	for (int k = 0; k < n && ncells < S; k++)
	{
		int c = inf->col[k];

		if (k >= skip_from && c != target_c)
			continue;
		size_t pos = base + ncells++;
		int8_t st = inf->stype[k];

		bt->semantic_types[pos] = st;
		bt->column_ids[pos] = inf->gid[k];
		bt->seq_row_ids[pos] = local;
		if (c == target_c)
		{
			bt->is_target[pos] = 1;
			if (!with_truth)
				continue;
		}
		if ((rec[k >> 3] >> (k & 7)) & 1)
		{
			bt->is_null[pos] = 1;
			continue;
		}
		const uint8_t *v = rec + inf->off[k];

		switch (st)
		{
			case HW_ST_NUMERICAL:
				memcpy(&bt->numeric_values[pos], v, 4);
				break;
			case HW_ST_TIMESTAMP:
				{
					int64_t us;

					memcpy(&us, v, 8);
					enc_time(s, us, bt->timestamp_values + pos * HW_TS_DIM);
				}
				break;
			case HW_ST_BOOLEAN:
				bt->bool_values[pos] = v[0];
				break;
			case HW_ST_CATEGORICAL:
				memcpy(&bt->categorical_embed_ids[pos], v, 4);
				break;
			case HW_ST_TEXT:
				memcpy(&bt->text_embed_ids[pos], v, 4);   /* global; phase 2 remaps */
				break;
			default:
				break;
		}
	}
	return ncells;
}
