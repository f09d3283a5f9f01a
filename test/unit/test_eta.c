/*
 * test_eta.c: the training ETA (eta.h) does not swing on one slow step or a
 * validation, and spreads validation time over the steps.
 */
#include "unit.h"
#include "core/eta.h"

UNIT_TEST(eta_smooth_and_counts_validation)
{
	HwEta  e;
	double before, after;

	hw_eta_init(&e);
	CHECK(hw_eta_seconds(&e, 0, 100) == 0);
	hw_eta_add_step(&e, 5.0);              /* first step: left out */
	CHECK(hw_eta_seconds(&e, 1, 100) == 0);
	for (int s = 2; s <= 50; s++)
		hw_eta_add_step(&e, 0.1);
	CHECK_CLOSE(hw_eta_seconds(&e, 50, 100), 10.0, 1e-9, 0);
	/* one slow step moves the ETA by a few percent, not 10x */
	before = hw_eta_seconds(&e, 50, 100);
	hw_eta_add_step(&e, 1.0);
	after = hw_eta_seconds(&e, 51, 99);
	CHECK_MSG(after < before * 1.5, "ETA swung from %g to %g", before, after);
	hw_eta_init(&e);
	/* 0.1 s steps, a 1 s validation every 10 steps (the first, 20 s, left out):
	 * 0.2 s per step */
	for (int s = 1; s <= 200; s++)
	{
		hw_eta_add_step(&e, 0.1);
		if (s % 10 == 0)
			hw_eta_add_overhead(&e, s, s == 10 ? 20.0 : 1.0);
	}
	CHECK_CLOSE(hw_eta_seconds(&e, 200, 100), 20.0, 1e-6, 0);
	CHECK(hw_eta_seconds(&e, 200, 0) == 0);
}
