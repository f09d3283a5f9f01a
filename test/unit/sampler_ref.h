/*
 * sampler_ref.h: what the sampler tests share -- the day and epoch their
 * hand-made snapshots date rows by, and the naive reference for the
 * child-count windows (docs/sampler.md).
 */
#ifndef HW_TEST_SAMPLER_REF_H
#define HW_TEST_SAMPLER_REF_H

#include "core/batch.h"
#include "core/snapshot.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define DAY_US (86400LL * 1000000LL)
#define T0_US  (1704067200LL * 1000000LL)   /* 2024-01-01 UTC */

/* Expected counts of rows dated days[] (days after T0) seen at obs_day
 * with the windows win[1..HW_CHILD_WINDOWS-1] (µs): [0] those at or before
 * it (all with no cutoff), [j] those with age obs - t < win[j]. */
static inline void
naive_window_counts(const int64_t *win, const int *days, int n, int obs_day, bool cutoff, int *out)
{
	memset(out, 0, sizeof(int) * HW_CHILD_WINDOWS);
	for (int i = 0; i < n; i++)
	{
		if (cutoff && days[i] > obs_day)
			continue;
		out[0]++;
		for (int j = 1; j < HW_CHILD_WINDOWS && cutoff; j++)
			if ((double) (obs_day - days[i]) * DAY_US < (double) win[j])
				out[j]++;
	}
}

/* The same with the windows of count_windows "std": 2^((j - 10) / 2)
 * timestamp std. */
static inline void
naive_child_counts(const HwSnapshot *s, const int *days, int n, int obs_day, bool cutoff, int *out)
{
	int64_t win[HW_CHILD_WINDOWS] = {0};

	for (int j = 1; j < HW_CHILD_WINDOWS; j++)
		win[j] = (int64_t) llround(s->ts_std_us * pow(2.0, (j - 10) / 2.0));
	naive_window_counts(win, days, n, obs_day, cutoff, out);
}

#endif
