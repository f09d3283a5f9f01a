/*
 * test_budget.c: a run driven by a time budget (budget.h) ends with its
 * closing validation inside the budget, spaces validations by time within
 * their share, and follows the budget in its schedule and ETA.
 */
#include "unit.h"
#include "core/budget.h"

/* Simulates a run: 1 s steps, validations of val_s seconds when due, until
 * the budget says stop; returns the end clock and counts validations. */
static double
simulate(double budget_s, double setup_s, double val_s, int *nval, double *last_frac)
{
	HwBudget b;
	double   now = setup_s;

	hw_budget_init(&b, budget_s, 0.0, setup_s);
	*nval = 0;
	for (int step = 1; step < 1000000; step++)
	{
		now += 1.0;
		hw_budget_estimate_validation(&b, 1.0, val_s * 3.0);
		*last_frac = hw_budget_fraction(&b, now);
		if (hw_budget_must_stop(&b, now, 1.0))
			break;
		if (hw_budget_validation_due(&b, now))
		{
			now += val_s;
			hw_budget_validated(&b, now, val_s);
			(*nval)++;
		}
	}
	now += val_s;                   /* the closing validation */
	(*nval)++;
	return now;
}

UNIT_TEST(budget_closing_validation_fits)
{
	int    nval;
	double frac;
	double end = simulate(1800, 5, 117, &nval, &frac);

	/* the closing validation ends within a step of the budget */
	CHECK_MSG(end <= 1800 + 1.0 && end >= 1800 - 3.0, "ended at %g of 1800", end);
	/* validations of 117 s: 1,170 s apart, none before the closing one fits */
	CHECK_MSG(nval == 1, "%d validations of 117 s in 1800 s", nval);
	CHECK_CLOSE(frac, 1.0, 0.01, 0);
	/* a longer budget: several, their time at most the share (+ the closing one) */
	end = simulate(7200, 5, 117, &nval, &frac);
	CHECK_MSG(end <= 7200 + 1.0 && end >= 7200 - 3.0, "ended at %g of 7200", end);
	CHECK_MSG(nval >= 3, "%d validations of 117 s in 7200 s", nval);
	CHECK_MSG((nval - 1) * 117 <= HW_BUDGET_VAL_SHARE * 7200 + 1e-9, "%d validations of 117 s", nval);
	CHECK_CLOSE(frac, 1.0, 0.01, 0);
	/* cheap validations: as many as the count allows, not one per second */
	end = simulate(1800, 0, 2, &nval, &frac);
	CHECK_MSG(nval >= HW_BUDGET_MAX_VALIDATIONS - 2 && nval <= HW_BUDGET_MAX_VALIDATIONS + 1,
			  "%d validations of 2 s", nval);
	CHECK_MSG(end <= 1800 + 1.0, "ended at %g", end);
	/* a validation longer than half the budget: training still gets half */
	end = simulate(60, 0, 117, &nval, &frac);
	CHECK_MSG(nval == 1, "%d validations in a 60 s budget", nval);
	CHECK_CLOSE(end, 30 + 117, 1.0, 0);
}

UNIT_TEST(budget_fraction_eta_and_none)
{
	HwBudget b;

	hw_budget_init(&b, 100, 0, 10);
	hw_budget_estimate_validation(&b, 1.0, 30);    /* 10 s validation: stop at 90 */
	CHECK_CLOSE(hw_budget_stop_at(&b), 90, 1e-9, 0);
	CHECK_CLOSE(hw_budget_fraction(&b, 50), 0.5, 1e-9, 0);
	/* a longer validation brings the stop closer: the schedule moves on
	 * (40 of 70 s), and never goes back */
	hw_budget_estimate_validation(&b, 2.0, 30);
	CHECK_CLOSE(hw_budget_fraction(&b, 50), 40.0 / 70.0, 1e-9, 0);
	hw_budget_estimate_validation(&b, 1.0, 30);
	CHECK_CLOSE(hw_budget_fraction(&b, 50), 40.0 / 70.0, 1e-9, 0);
	CHECK_CLOSE(hw_budget_eta(&b, 40), 60, 1e-9, 0);
	CHECK(hw_budget_eta(&b, 130) == 0);
	/* a measured validation replaces the estimate */
	hw_budget_validated(&b, 60, 4.0);
	CHECK_CLOSE(hw_budget_stop_at(&b), 96, 1e-9, 0);
	hw_budget_estimate_validation(&b, 5.0, 30);
	CHECK_CLOSE(hw_budget_stop_at(&b), 96, 1e-9, 0);
	/* no budget: never stops, never validates by time */
	hw_budget_init(&b, 0, 0, 0);
	CHECK(!hw_budget_must_stop(&b, 1e9, 1));
	CHECK(!hw_budget_validation_due(&b, 1e9));
	CHECK(hw_budget_fraction(&b, 1e9) == 0);
}
