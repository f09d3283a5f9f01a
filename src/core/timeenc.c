/*
 * timeenc.c: calendar decomposition and the 15-dim timestamp encoding.
 * Integer calendar arithmetic (no libc time zone state) so sampler threads
 * can call it freely and every machine gets the same bits.
 */
#include "core/timeenc.h"

#include <math.h>

/* Howard Hinnant's days_from_civil inverse; valid for the whole int64 µs range. */
void
hw_civil_from_days(int64_t z, int64_t *year, int *month, int *day)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;                                  /* [0, 146096] */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	int64_t y = yoe + era * 400;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);           /* [0, 365] */
	int64_t mp = (5 * doy + 2) / 153;                                /* [0, 11] */
	int d = (int) (doy - (153 * mp + 2) / 5 + 1);
	int m = (int) (mp < 10 ? mp + 3 : mp - 9);

	*year = y + (m <= 2);
	*month = m;
	*day = d;
}

static int
is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static const int days_before_month[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

void
hw_time_fields(int64_t us, HwTimeFields *f)
{
	const int64_t us_per_day = 86400LL * 1000000LL;
	int64_t days = us / us_per_day;
	int64_t rem = us % us_per_day;

	if (rem < 0)
	{
		rem += us_per_day;
		days -= 1;
	}
	hw_civil_from_days(days, &f->year, &f->month, &f->mday);
	f->hour = (int) (rem / 3600000000LL);
	f->minute = (int) ((rem / 60000000LL) % 60);
	f->us_in_minute = rem % 60000000LL;
	f->wday = (int) (((days % 7) + 7 + 3) % 7);   /* 1970-01-01 was a Thursday (3) */
	f->yday = days_before_month[f->month - 1] + f->mday - 1 + (f->month > 2 && is_leap(f->year));
}

void
hw_time_encode(int64_t us, double mean_us, double std_us, float out[HW_TIMEENC_DIM])
{
	HwTimeFields f;

	hw_time_fields(us, &f);
	double x[7] = {
		(double) f.us_in_minute / 1e6 / 60.0, f.minute / 60.0, f.hour / 24.0, f.wday / 7.0,
		(f.mday - 1) / 31.0, (f.month - 1) / 12.0, f.yday / 366.0
	};
	for (int i = 0; i < 7; i++)
	{
		double ph = 2.0 * M_PI * x[i];

		out[2 * i] = (float) sin(ph);
		out[2 * i + 1] = (float) cos(ph);
	}
	double sd = std_us > 0 ? std_us : 1.0;

	out[14] = (float) (((double) us - mean_us) / sd);
}

void
hw_rel_time_features(float seed_z, float cell_z, float ramp_scale, float out[HW_REL_TIME_DIM])
{
	if (isnan(seed_z) || isnan(cell_z))
	{
		for (int k = 0; k < HW_REL_TIME_DIM; k++)
			out[k] = 0.0f;
		return;
	}
	double d = (double) seed_z - (double) cell_z, a = fabs(d), sg = d < 0 ? -1.0 : 1.0;

	out[0] = (float) (d > 8.0 ? 8.0 : d < -8.0 ? -8.0 : d);
	out[1] = (float) (sg * log1p(16.0 * a) / log(17.0));
	out[2] = (float) (sg * log1p(256.0 * a) / log(257.0));
	out[3] = 1.0f;
	for (int k = 0; k < HW_REL_TIME_RAMPS; k++)
	{
		double t = exp2((k - 12) / 2.0), r = (d * ramp_scale - t) / t;

		out[4 + k] = (float) (r < 0 ? 0.0 : r > 1 ? 1.0 : r);
	}
}
