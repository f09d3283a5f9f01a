/*
 * timeenc.h: the 15-dim encoding of a timestamp cell.
 *
 * out[0..13] are 7 (sin, cos) pairs of the phase 2*pi*x for
 *   x = second-of-minute / 60      (fractional seconds included)
 *       minute-of-hour / 60
 *       hour-of-day / 24
 *       weekday / 7                (Monday = 0)
 *       (day-of-month - 1) / 31
 *       (month - 1) / 12
 *       (day-of-year - 1) / 366
 * in UTC, in that order (sin first), and
 * out[14] = (epoch_us - mean_us) / std_us  (std 0 treated as 1).
 */
#ifndef HW_TIMEENC_H
#define HW_TIMEENC_H

#include "core/hw_common.h"

#define HW_TIMEENC_DIM 15

void hw_time_encode(int64_t epoch_us, double mean_us, double std_us, float out[HW_TIMEENC_DIM]);

/*
 * Relative-time features of a timestamp cell (the model's, not the batch's:
 * docs/model.md "Relative time").  With d = seed_z - cell_z, the time from
 * the cell to the sequence's observation time in units of the database's
 * timestamp std (positive: before it), both z-scored as out[14] above:
 *   out[0] = d clamped to [-8, 8]
 *   out[1] = sign(d) log(1 + 16 |d|) / log(17)      (1 at one std)
 *   out[2] = sign(d) log(1 + 256 |d|) / log(257)    (finer near 0)
 *   out[3] = 1                                      (an observation time exists)
 *   out[4 + k] = clamp((d ramp_scale - t_k) / t_k, 0, 1), t_k = 2^((k - 12) / 2),
 *                k = 0..15: ramps from 1/64 std to 2.8 std, sqrt(2) apart,
 *                divided by ramp_scale (1; > 1 on a history whose events
 *                come faster than its std's scale: time_ramps, sampler.h)
 * seed_z NaN (no observation time): all 0.  So "how long before the
 * observation time" is a direct input of every timestamp cell, instead of a
 * difference the attention must form between two absolute times; the ramps
 * let a linear map draw a sharp line anywhere ("no order in the last 90
 * days": 0.59 std in the demo shop, 70 days 0.46) where the log scales
 * differ by a few hundredths.
 */
#define HW_REL_TIME_RAMPS 16
#define HW_REL_TIME_DIM (4 + HW_REL_TIME_RAMPS)

void hw_rel_time_features(float seed_z, float cell_z, float ramp_scale, float out[HW_REL_TIME_DIM]);

/* The calendar fields the encoding is made of (UTC). */
typedef struct HwTimeFields
{
	int64_t year;
	int     month;          /* 1..12 */
	int     mday;           /* 1..31 */
	int     yday;           /* 0..365 */
	int     wday;           /* Monday = 0 */
	int     hour, minute;
	int64_t us_in_minute;   /* 0..59,999,999: second of minute with its fraction */
} HwTimeFields;

void hw_time_fields(int64_t epoch_us, HwTimeFields *f);

/* Civil date of a day count since 1970-01-01 (proleptic Gregorian). */
void hw_civil_from_days(int64_t days, int64_t *year, int *month, int *day);

#endif
