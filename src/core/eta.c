/*
 * eta.c: the training ETA (eta.h).
 */
#include "core/eta.h"

void
hw_eta_init(HwEta *e)
{
	e->ema_step_s = -1;
	e->steps_seen = 0;
	e->overhead_s = 0;
	e->overhead_from = -1;
}

void
hw_eta_add_step(HwEta *e, double seconds)
{
	if (!(seconds >= 0))
		return;
	e->steps_seen++;
	if (e->steps_seen == 1)
		return;                 /* the first step: one-off costs */
	if (e->ema_step_s < 0)
		e->ema_step_s = seconds;
	else
		e->ema_step_s += HW_ETA_ALPHA * (seconds - e->ema_step_s);
}

void
hw_eta_add_overhead(HwEta *e, int64_t step, double seconds)
{
	if (!(seconds >= 0))
		return;
	if (e->overhead_from < 0)
		e->overhead_from = step;    /* the first one: left out */
	else
		e->overhead_s += seconds;
}

double
hw_eta_seconds(const HwEta *e, int64_t step, int64_t remaining)
{
	double per_step, rate = 0;

	if (remaining <= 0 || e->ema_step_s < 0)
		return 0;
	per_step = e->ema_step_s;
	if (e->overhead_from >= 0 && step > e->overhead_from)
		rate = e->overhead_s / (double) (step - e->overhead_from);
	return (double) remaining * (per_step + rate);
}
