/*
 * budget.c: a training run driven by a time budget (budget.h).
 */
#include "core/budget.h"

/* a forward is about a third of a training step (forward + backward) */
#define FORWARD_SHARE_OF_STEP (1.0 / 3.0)

void
hw_budget_init(HwBudget *b, double budget_s, double t_start, double t_train)
{
	b->budget_s = budget_s > 0 ? budget_s : 0;
	b->t_start = t_start;
	b->t_train = t_train;
	b->close_s = 0;
	b->close_measured = false;
	b->t_last_val = t_train;
	b->frac = 0;
}

void
hw_budget_estimate_validation(HwBudget *b, double step_s, double val_batches)
{
	if (b->close_measured || !(step_s > 0) || !(val_batches > 0))
		return;
	b->close_s = step_s * val_batches * FORWARD_SHARE_OF_STEP;
}

void
hw_budget_validated(HwBudget *b, double now, double seconds)
{
	if (seconds >= 0)
	{
		b->close_s = seconds;
		b->close_measured = true;
	}
	b->t_last_val = now;
}

double
hw_budget_stop_at(const HwBudget *b)
{
	double end = b->t_start + b->budget_s;
	double floor_at = b->t_start + b->budget_s * HW_BUDGET_MIN_TRAIN_SHARE;
	double at = end - b->close_s;

	return at > floor_at ? at : floor_at;
}

bool
hw_budget_must_stop(const HwBudget *b, double now, double step_s)
{
	if (b->budget_s <= 0)
		return false;
	return now + (step_s > 0 ? step_s : 0) >= hw_budget_stop_at(b);
}

double
hw_budget_fraction(HwBudget *b, double now)
{
	double span = hw_budget_stop_at(b) - b->t_train;
	double f;

	if (b->budget_s <= 0)
		return 0;
	f = span > 0 ? (now - b->t_train) / span : 1.0;
	f = f < 0 ? 0 : f > 1 ? 1 : f;
	if (f > b->frac)
		b->frac = f;
	return b->frac;
}

double
hw_budget_val_spacing(const HwBudget *b)
{
	double by_count = b->budget_s / HW_BUDGET_MAX_VALIDATIONS;
	double by_share = b->close_s / HW_BUDGET_VAL_SHARE;

	return by_count > by_share ? by_count : by_share;
}

bool
hw_budget_validation_due(const HwBudget *b, double now)
{
	double spacing;

	if (b->budget_s <= 0)
		return false;
	spacing = hw_budget_val_spacing(b);
	return now >= b->t_last_val + spacing && now + spacing / 2 < hw_budget_stop_at(b);
}

double
hw_budget_eta(const HwBudget *b, double now)
{
	double left = b->t_start + b->budget_s - now;

	if (b->budget_s <= 0)
		return 0;
	/* past the end (a validation longer than estimated): what it still takes */
	return left > 0 ? left : 0;
}
