/*
 * eta.h: a training ETA that does not swing (train_loop.c progress).
 *
 * Step time is an exponential moving average (alpha HW_ETA_ALPHA per step)
 * of the training steps' times, the first step (allocation, warm-up) left
 * out.  Validation and checkpoint time is spread over the steps: the time
 * spent in them after the first one (which carries one-off costs) divided by
 * the steps since that first one.  ETA = remaining steps * (EMA + that rate).
 * Pure arithmetic, no clock: the caller measures.
 */
#ifndef HW_ETA_H
#define HW_ETA_H

#include <stdint.h>

#define HW_ETA_ALPHA 0.05

typedef struct HwEta
{
	double   ema_step_s;       /* EMA of a step's seconds; < 0 until one is measured */
	int64_t  steps_seen;       /* steps passed to hw_eta_add_step */
	double   overhead_s;       /* validation/checkpoint seconds after the first */
	int64_t  overhead_from;    /* step of the first validation/checkpoint; -1: none yet */
} HwEta;

void   hw_eta_init(HwEta *e);
/* One training step took `seconds`. */
void   hw_eta_add_step(HwEta *e, double seconds);
/* Validation and/or checkpoint after step `step` took `seconds`. */
void   hw_eta_add_overhead(HwEta *e, int64_t step, double seconds);
/* Seconds left for `remaining` steps when at step `step`; 0 before any
 * measurement or with nothing remaining. */
double hw_eta_seconds(const HwEta *e, int64_t step, int64_t remaining);

#endif /* HW_ETA_H */
