/*
 * test_sampler_recency.c: recent_weight draws a task's training seeds with
 * weights that rise exponentially with their observation time; the other
 * splits and recent_weight 1 are untouched.
 */
#include "unit.h"
#include "sampler_fixtures.h"
#include "core/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The earliest and latest observation times of the task's train seeds. */
static void
train_span(const HwTask *t, int64_t *first, int64_t *last)
{
	*first = INT64_MAX;
	*last = INT64_MIN;
	for (uint32_t i = 0; i < t->nseeds; i++)
		if (t->split[i] == HW_SPLIT_TRAIN)
		{
			*first = t->obs_time_us[i] < *first ? t->obs_time_us[i] : *first;
			*last = t->obs_time_us[i] > *last ? t->obs_time_us[i] : *last;
		}
}

/* Mean position x = (obs - first) / (last - first) of the train seeds,
 * each weighted by r^x: what draws with recent_weight r average to,
 * computed from the task's arrays alone. */
static double
expected_position(const HwTask *t, double r)
{
	int64_t first, last;

	train_span(t, &first, &last);
	double num = 0, den = 0;

	for (uint32_t i = 0; i < t->nseeds; i++)
		if (t->split[i] == HW_SPLIT_TRAIN)
		{
			double x = (double) (t->obs_time_us[i] - first) / (double) (last - first);

			num += pow(r, x) * x;
			den += pow(r, x);
		}
	return num / den;
}

/* The mean position of the seeds of nbatch train batches, each checked to be
 * a train seed; NAN on a failed draw. */
static double
drawn_position(HwSampler *sm, const HwTask *t, int nbatch, int B)
{
	int64_t first, last;

	train_span(t, &first, &last);
	uint32_t *idx = malloc(sizeof(uint32_t) * (size_t) B);
	HwError err = {0};
	double sum = 0;
	long n = 0;

	for (int k = 0; k < nbatch; k++)
	{
		HwBatch *bt;

		if (hw_sampler_batch(sm, HW_SPLIT_TRAIN, (uint64_t) k, &bt, idx, &err) != HW_OK)
		{
			free(idx);
			return NAN;
		}
		hw_batch_free(bt);
		for (int b = 0; b < B; b++)
		{
			if (t->split[idx[b]] != HW_SPLIT_TRAIN)
			{
				free(idx);
				return NAN;
			}
			sum += (double) (t->obs_time_us[idx[b]] - first) / (double) (last - first);
			n++;
		}
	}
	free(idx);
	return sum / (double) n;
}

UNIT_TEST(sampler_recent_weight_draws_recent_seeds)
{
	shop_setup();
	HwError err = {0};
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	cfg.batch_size = 32;
	cfg.seq_len = 64;
	cfg.seed = 3;
	cfg.n_threads = 1;
	HwSampler *plain = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	cfg.recent_weight = 8.0f;
	HwSampler *recent = hw_sampler_create(shop, &shop_task, 1, &cfg, &err);

	CHECK_MSG(plain && recent, "%s", err.msg);
	double uniform = expected_position(shop_task, 1.0), weighted = expected_position(shop_task, 8.0);

	/* the fixture's train seeds spread over time, so the two means differ */
	CHECK_MSG(weighted - uniform > 0.08, "uniform %.3f, weighted %.3f", uniform, weighted);
	double got_plain = drawn_position(plain, shop_task, 80, 32);
	double got_recent = drawn_position(recent, shop_task, 80, 32);

	/* 2,560 draws: the standard error of a mean position is under 0.006 */
	CHECK_MSG(fabs(got_plain - uniform) < 0.025, "plain draws %.4f, uniform %.4f", got_plain, uniform);
	CHECK_MSG(fabs(got_recent - weighted) < 0.025, "recent draws %.4f, weighted %.4f", got_recent, weighted);

	/* deterministic; validation batches as without it */
	HwBatch *a, *b;
	uint32_t ia[32], ib[32];

	CHECK(hw_sampler_batch(recent, HW_SPLIT_TRAIN, 7, &a, ia, &err) == HW_OK);
	CHECK(hw_sampler_batch(recent, HW_SPLIT_TRAIN, 7, &b, ib, &err) == HW_OK);
	CHECK(memcmp(ia, ib, sizeof(ia)) == 0);
	hw_batch_free(a);
	hw_batch_free(b);
	CHECK(hw_sampler_batch(plain, HW_SPLIT_VAL, 2, &a, ia, &err) == HW_OK);
	CHECK(hw_sampler_batch(recent, HW_SPLIT_VAL, 2, &b, ib, &err) == HW_OK);
	CHECK(memcmp(ia, ib, sizeof(ia)) == 0);
	hw_batch_free(a);
	hw_batch_free(b);

	/* a clone for another rank draws from its own shard, with its own sums */
	HwSampler *rank1 = hw_sampler_clone_rank(recent, 1, 2, &err);

	CHECK_MSG(rank1 != NULL, "%s", err.msg);
	double got_rank1 = drawn_position(rank1, shop_task, 80, 32);

	CHECK_MSG(fabs(got_rank1 - weighted) < 0.04, "rank 1 draws %.4f, weighted %.4f", got_rank1, weighted);
	hw_sampler_free(rank1);
	hw_sampler_free(plain);
	hw_sampler_free(recent);

	/* out of range: refused, naming the field */
	float bad[] = {0.5f, 101.0f, NAN};

	for (int i = 0; i < 3; i++)
	{
		cfg.recent_weight = bad[i];
		CHECK(hw_sampler_create(shop, &shop_task, 1, &cfg, &err) == NULL);
		CHECK_EQ_INT(err.code, HW_ERR_INVALID);
		CHECK_MSG(strstr(err.msg, "recent_weight") != NULL, "message: %s", err.msg);
	}
}
