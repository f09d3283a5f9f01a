/*
 * sampler_fixtures.h: the snapshots the sampler tests share: a tiny
 * hand-made database whose sequences can be written out by hand, and a
 * random shop (built once, on first use) for properties over many seeds.
 */
#ifndef HW_TEST_SAMPLER_FIXTURES_H
#define HW_TEST_SAMPLER_FIXTURES_H

#include "core/snapshot.h"
#include "core/task.h"

/* The tiny customer/orders database (sampler_fixtures.c); caller frees. */
HwSnapshot *tiny(void);

/* The shop snapshot and its "status" cell task, after shop_setup(). */
extern HwSnapshot *shop;
extern HwTask     *shop_task;
void shop_setup(void);

#endif /* HW_TEST_SAMPLER_FIXTURES_H */
