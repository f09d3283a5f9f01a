/*
 * budget.h: a training run driven by a time budget (rt_train's max_minutes).
 *
 * A budget is all a user needs to give: the run ends, validated and
 * checkpointed, when the budget is used up, set-up and the closing
 * validation included; the learning-rate schedule reads the elapsed share
 * of the training time; validations are spaced by time, often enough to
 * pick a good serving checkpoint, rarely enough that they take at most
 * HW_BUDGET_VAL_SHARE of the budget.  A validation's cost is estimated from
 * the step time before the first one is measured (a forward is about a
 * third of a training step), so that even the first is placed right.
 * Pure arithmetic on a clock the caller reads (seconds).
 */
#ifndef HW_BUDGET_H
#define HW_BUDGET_H

#include <stdbool.h>

/* validations by time: at most this many over a budget ... */
#define HW_BUDGET_MAX_VALIDATIONS 20
/* ... and together at most this share of it.  The schedule anneals to the
 * budget's end, so on budgets that leave the model under-trained (CPU runs
 * of minutes) the closing validation's weights serve every task: the
 * earlier validations only cost steps.  A tenth keeps them where they are
 * cheap (a GPU, a long budget) and leaves the rest of the budget to
 * training (docs/BENCHMARKS.md, "Validations under a time budget"). */
#define HW_BUDGET_VAL_SHARE 0.1
/* however long a validation, training gets at least this share of the budget */
#define HW_BUDGET_MIN_TRAIN_SHARE 0.5

typedef struct HwBudget
{
	double   budget_s;       /* the budget; 0: none (every function then says "no") */
	double   t_start;        /* clock when the call's work began: set-up counts */
	double   t_train;        /* clock of the first training step */
	double   close_s;        /* one validation + checkpoint: estimated, then measured */
	bool     close_measured;
	double   t_last_val;     /* clock at the end of the last validation (t_train before one) */
	double   frac;           /* the schedule's share reached so far (never goes back) */
} HwBudget;

void   hw_budget_init(HwBudget *b, double budget_s, double t_start, double t_train);
/* Before a validation is measured: its cost, from the step time and its
 * size in training-step forwards (batches of the validation's rows). */
void   hw_budget_estimate_validation(HwBudget *b, double step_s, double val_batches);
/* A validation (and its checkpoint) ended at `now` and took `seconds`. */
void   hw_budget_validated(HwBudget *b, double now, double seconds);
/* Clock at which training must stop so that the closing validation ends
 * by the budget (at least HW_BUDGET_MIN_TRAIN_SHARE of the budget trains). */
double hw_budget_stop_at(const HwBudget *b);
/* After a step at `now` that took step_s: would another one overrun? */
bool   hw_budget_must_stop(const HwBudget *b, double now, double step_s);
/* The schedule's share of the run at `now`, in [0, 1], never decreasing. */
double hw_budget_fraction(HwBudget *b, double now);
/* Is a validation by time due at `now`?  (None within half a spacing of
 * the stop: the closing validation follows soon.) */
bool   hw_budget_validation_due(const HwBudget *b, double now);
/* Seconds between validations by time. */
double hw_budget_val_spacing(const HwBudget *b);
/* Seconds until the call ends on its budget. */
double hw_budget_eta(const HwBudget *b, double now);

#endif /* HW_BUDGET_H */
