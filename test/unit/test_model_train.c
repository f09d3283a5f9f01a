/*
 * test_model_train.c: training behaviour on the synthetic planted-signal task:
 * the loss falls, runs are bit-identical across thread counts, save at k +
 * resume equals never stopping, NaN stops training without changing the model.
 */
#include "unit.h"
#include "core/model.h"
#include "synth_batch.h"
#include "state_blob.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DT 64
#define NSTEP 200

static HwModel *
make_model_bs(HwBackend *be, uint16_t **colt, uint16_t **catt, int steps, int B, int S, HwError *err)
{
	HwModelConfig c;

	hw_model_config_preset(&c, "tiny", err);
	c.d_text = DT;
	c.batch_size = B;
	c.seq_len = S;
	c.warmup_steps = 20;
	c.total_steps = steps;
	hw_synth_tables(DT, 3, colt, catt);
	return hw_model_create(&c, *colt, HW_SYNTH_NCOLS, *catt, HW_SYNTH_NCAT, be, err);
}

/* tiny preset, smaller batches (8 x 64): the tests stay ~10 s on 2 busy cores */
static HwModel *
make_model(HwBackend *be, uint16_t **colt, uint16_t **catt, int steps, HwError *err)
{
	return make_model_bs(be, colt, catt, steps, 8, 64, err);
}

/* Runs steps [from, to) of the synthetic stream; losses[i] for step i. */
static int
run_steps_bs(HwModel *m, int stype, int from, int to, float *losses, int B, int S, HwError *err)
{
	HwSynthSpec sp = { .B = B, .S = S, .d_text = DT, .target_stype = stype, .seed = 99 };

	for (int i = from; i < to; i++)
	{
		HwBatch     *b = hw_synth_batch(&sp, (uint64_t) i);
		HwStepResult r;
		int          rc = hw_model_train_step(m, b, &r, err);

		hw_batch_free(b);
		if (rc != HW_OK)
			return rc;
		if (losses)
			losses[i] = r.loss;
	}
	return HW_OK;
}

static int
run_steps(HwModel *m, int stype, int from, int to, float *losses, HwError *err)
{
	return run_steps_bs(m, stype, from, to, losses, 8, 64, err);
}

static double
mean(const float *x, int a, int b)
{
	double s = 0;

	for (int i = a; i < b; i++)
		s += x[i];
	return s / (b - a);
}

/* Numerical target = 0.9 x, null when |x| > 1.6: at the start the loss is
 * ~ null BCE 0.69 + Huber of 0.9x (~0.3); predicting from x drives the
 * Huber part to ~0 and the null part to the ~0.2 of a well-calibrated
 * |x| > 1.6 detector.  Threshold: last 20 steps' mean < 45% of the first
 * 20 steps' mean, within 200 steps. */
UNIT_TEST(model_learns_planted_signal_numerical)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);   /* 1 thread: fastest on a shared 2-core box */
	uint16_t  *colt, *catt;
	HwModel   *m = make_model(be, &colt, &catt, NSTEP, &err);
	float      losses[NSTEP];
	double     a, b;

	CHECK(m != NULL);
	CHECK_EQ_INT(run_steps(m, HW_ST_NUMERICAL, 0, NSTEP, losses, &err), HW_OK);
	a = mean(losses, 0, 20);
	b = mean(losses, NSTEP - 20, NSTEP);
	fprintf(stderr, "  numerical: loss first 20 %.4f, last 20 %.4f\n", a, b);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
	CHECK_MSG(b < 0.45 * a, "loss %.4f -> %.4f did not fall below 45%%", a, b);
}

/* Categorical target (5 quintile classes): start ~ 0.69 + ln 5 = 2.3. */
UNIT_TEST(model_learns_planted_signal_categorical)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);   /* 1 thread: fastest on a shared 2-core box */
	uint16_t  *colt, *catt;
	HwModel   *m = make_model(be, &colt, &catt, NSTEP, &err);
	float      losses[NSTEP];
	double     a, b;

	CHECK(m != NULL);
	CHECK_EQ_INT(run_steps(m, HW_ST_CATEGORICAL, 0, NSTEP, losses, &err), HW_OK);
	a = mean(losses, 0, 20);
	b = mean(losses, NSTEP - 20, NSTEP);
	fprintf(stderr, "  categorical: loss first 20 %.4f, last 20 %.4f\n", a, b);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
	CHECK_MSG(b < 0.5 * a, "loss %.4f -> %.4f did not fall below 50%%", a, b);
}

static int
flat_equal(HwModel *a, HwModel *b, int which)
{
	int64_t n = hw_model_numel(a);
	float  *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
	int     eq;

	hw_model_get_flat(a, which, x);
	hw_model_get_flat(b, which, y);
	eq = n == hw_model_numel(b) && memcmp(x, y, sizeof(float) * n) == 0;
	free(x);
	free(y);
	return eq;
}

/* Same seed, 1 vs 2 threads: every loss and every final parameter bit-identical. */
UNIT_TEST(model_deterministic_across_thread_counts)
{
	HwError    err = {0};
	HwBackend *b1 = hw_backend_cpu_create(1, &err), *b2 = hw_backend_cpu_create(2, &err);
	uint16_t  *c1, *k1, *c2, *k2;
	/* the full tiny batch (16 x 128) so that every kernel takes its parallel path */
	HwModel   *m1 = make_model_bs(b1, &c1, &k1, 100, 16, 128, &err), *m2 = make_model_bs(b2, &c2, &k2, 100, 16, 128, &err);
	float      l1[6], l2[6];
	int        same_loss, same_params, same_m;

	CHECK(m1 && m2);
	CHECK_EQ_INT(run_steps_bs(m1, HW_ST_CATEGORICAL, 0, 6, l1, 16, 128, &err), HW_OK);
	CHECK_EQ_INT(run_steps_bs(m2, HW_ST_CATEGORICAL, 0, 6, l2, 16, 128, &err), HW_OK);
	same_loss = memcmp(l1, l2, sizeof(l1)) == 0;
	same_params = flat_equal(m1, m2, 0);
	same_m = flat_equal(m1, m2, 2) && flat_equal(m1, m2, 3);
	hw_model_free(m1);
	hw_model_free(m2);
	hw_backend_destroy(b1);
	hw_backend_destroy(b2);
	free(c1); free(k1); free(c2); free(k2);
	CHECK_MSG(same_loss, "loss curves differ between 1 and 2 threads");
	CHECK_MSG(same_params, "parameters differ between 1 and 2 threads");
	CHECK_MSG(same_m, "optimiser moments differ between 1 and 2 threads");
}

/* Save at step 4 (serialize, free, deserialize into a fresh model) then run
 * to 9 == run straight to 9, bit for bit. */
UNIT_TEST(model_resume_equals_straight_run)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *c1, *k1, *c2, *k2;
	HwModel   *a = make_model(be, &c1, &k1, 100, &err), *b = make_model(be, &c2, &k2, 100, &err), *r;
	uint8_t   *blob;
	size_t     len;
	int        same;

	CHECK(a && b);
	CHECK_EQ_INT(run_steps(a, HW_ST_BOOLEAN, 0, 9, NULL, &err), HW_OK);
	CHECK_EQ_INT(run_steps(b, HW_ST_BOOLEAN, 0, 4, NULL, &err), HW_OK);
	CHECK_EQ_INT(hw_model_state_serialize(b, &blob, &len, &err), HW_OK);
	hw_model_free(b);
	r = hw_model_state_deserialize(blob, len, c2, HW_SYNTH_NCOLS, k2, HW_SYNTH_NCAT, be, &err);
	CHECK_MSG(r != NULL, "deserialize: %s", err.msg);
	CHECK_EQ_INT(hw_model_step(r), 4);
	/* a corrupted blob is refused */
	blob[len / 2] ^= 1;
	CHECK(hw_model_state_load(r, blob, len, &err) == HW_ERR_CORRUPT);
	free(blob);
	CHECK_EQ_INT(run_steps(r, HW_ST_BOOLEAN, 4, 9, NULL, &err), HW_OK);
	same = flat_equal(a, r, 0) && flat_equal(a, r, 2) && flat_equal(a, r, 3);
	CHECK_EQ_INT(hw_model_step(r), 9);
	hw_model_free(a);
	hw_model_free(r);
	hw_backend_destroy(be);
	free(c1); free(k1); free(c2); free(k2);
	CHECK_MSG(same, "resumed run differs from the straight run");
}

/* The schedule continuation travels in the state (version 2), rel_time and
 * link_types too (version 3), child_counts (version 4), child_means
 * (version 5), ema_decay (version 6); a version 1 to 5 state (without the later fields) of a
 * model without them still loads, with a straight schedule and the missing
 * flags 0. */
UNIT_TEST(model_state_schedule_fields_and_v1)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *c1, *k1;
	HwModelConfig c;
	HwModel   *a, *r, *rt;
	uint8_t   *blob, *old;
	size_t     len, olen;
	HwModelConfig rc;

	/* a model as trained before relative time */
	hw_model_config_preset(&c, "tiny", &err);
	c.d_text = DT; c.batch_size = 8; c.seq_len = 64; c.warmup_steps = 20; c.total_steps = 100;
	c.rel_time = 0;
	c.link_types = 0;
	c.child_counts = 0;
	c.ordinal_head = 0;
	c.count_ramps = 0;
	hw_synth_tables(DT, 3, &c1, &k1);
	a = hw_model_create(&c, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
	CHECK(a);
	CHECK(hw_model_param_index(a, "enc.ts_rel.w") < 0 && hw_model_param_index(a, "enc.link.w") < 0 &&
		  hw_model_param_index(a, "enc.cnt.w") < 0);
	CHECK_EQ_INT(run_steps(a, HW_ST_BOOLEAN, 0, 3, NULL, &err), HW_OK);
	((HwModelConfig *) hw_model_config(a))->sched_start = 30;
	((HwModelConfig *) hw_model_config(a))->sched_start_lr = 1.25e-3f;
	CHECK_EQ_INT(hw_model_state_serialize(a, &blob, &len, &err), HW_OK);
	CHECK_EQ_INT(hw_model_state_read_config(blob, len, &rc, &err), HW_OK);
	CHECK_EQ_INT(rc.sched_start, 30);
	CHECK(rc.sched_start_lr == 1.25e-3f);
	CHECK_EQ_INT(rc.rel_time, 0);
	CHECK_EQ_INT(rc.link_types, 0);
	CHECK_EQ_INT(rc.child_counts, 0);
	CHECK_EQ_INT(rc.child_means, 0);
	CHECK_EQ_INT(rc.ordinal_head, 0);
	CHECK_EQ_INT(rc.count_ramps, 0);
	CHECK(rc.head_weight_decay == 0);   /* the presets' */
	for (uint32_t ver = 1; ver <= 11; ver++)
	{
		/* the bytes each older config lacks: 12 absolute_time, 10
		 * head_weight_decay, 9 head_adamw, 8 count_ramps, 7 ordinal_head,
		 * 6 ema_decay, 5 child_means, 4 child_counts, 3 rel_time +
		 * link_types, 2 the schedule */
		old = unit_state_as_version(blob, len, ver, ver == 1 ? 48 : ver == 2 ? 40 : ver == 3 ? 32 : ver == 4 ? 28 :
									ver == 5 ? 24 : ver == 6 ? 20 : ver == 7 ? 16 : ver == 8 ? 12 : ver == 9 ? 8 : 4,
									&olen);
		r = hw_model_state_deserialize(old, olen, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
		CHECK_MSG(r != NULL, "version %u state: %s", ver, err.msg);
		if (r)
		{
			CHECK_EQ_INT(hw_model_step(r), 3);
			CHECK_EQ_INT(hw_model_config(r)->sched_start, ver == 1 ? 0 : 30);
			CHECK_EQ_INT(hw_model_config(r)->rel_time, 0);
			CHECK_EQ_INT(hw_model_config(r)->link_types, 0);
			CHECK_EQ_INT(hw_model_config(r)->child_counts, 0);
			CHECK_EQ_INT(hw_model_config(r)->child_means, 0);
			CHECK_EQ_INT(hw_model_config(r)->ordinal_head, 0);
			CHECK_EQ_INT(hw_model_config(r)->count_ramps, 0);
			CHECK_EQ_INT(hw_model_config(r)->head_adamw, 0);
			CHECK(hw_model_config(r)->head_weight_decay ==
				  (ver >= 10 ? rc.head_weight_decay : hw_model_config(a)->weight_decay));
			CHECK_EQ_INT(hw_model_config(r)->absolute_time, 1);
			CHECK(flat_equal(a, r, 0) && flat_equal(a, r, 2) && flat_equal(a, r, 3));
			hw_model_free(r);
		}
		free(old);
	}
	free(blob); free(c1); free(k1);
	/* a model with relative time (the presets' default) keeps it through its
	 * state, and with the count ramps (an option) too */
	hw_model_config_preset(&c, "tiny", &err);
	c.d_text = DT; c.batch_size = 8; c.seq_len = 64; c.warmup_steps = 20; c.total_steps = 100;
	c.count_ramps = HW_COUNT_RAMPS_ANCHOR;
	hw_synth_tables(DT, 3, &c1, &k1);
	rt = hw_model_create(&c, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
	CHECK(rt && hw_model_config(rt)->rel_time == 1 && hw_model_param_index(rt, "enc.ts_rel.w") >= 0);
	CHECK(hw_model_config(rt)->link_types == 1 && hw_model_param_index(rt, "enc.link.w") >= 0);
	CHECK(hw_model_config(rt)->child_counts == 1 && hw_model_param_index(rt, "enc.cnt.w") >= 0);
	CHECK_EQ_INT(hw_model_config(rt)->child_means, 1);
	CHECK(hw_model_config(rt)->ordinal_head == 1 && hw_model_param_index(rt, "head.ord.w") >= 0);
	CHECK(hw_model_config(rt)->count_ramps == HW_COUNT_RAMPS_ANCHOR && hw_model_param_index(rt, "enc.cramp.w") >= 0);
	CHECK_EQ_INT(run_steps(rt, HW_ST_NUMERICAL, 0, 3, NULL, &err), HW_OK);
	CHECK_EQ_INT(hw_model_state_serialize(rt, &blob, &len, &err), HW_OK);
	r = hw_model_state_deserialize(blob, len, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
	CHECK_MSG(r != NULL, "current state: %s", err.msg);
	if (r)
	{
		CHECK_EQ_INT(hw_model_config(r)->rel_time, 1);
		CHECK_EQ_INT(hw_model_config(r)->link_types, 1);
		CHECK_EQ_INT(hw_model_config(r)->child_counts, 1);
		CHECK_EQ_INT(hw_model_config(r)->child_means, 1);
		CHECK_EQ_INT(hw_model_config(r)->ordinal_head, 1);
		CHECK_EQ_INT(hw_model_config(r)->count_ramps, HW_COUNT_RAMPS_ANCHOR);
		CHECK(flat_equal(rt, r, 0) && flat_equal(rt, r, 2) && flat_equal(rt, r, 3));
		hw_model_free(r);
	}
	/* the same bytes as a version 8-10 state, whose count_ramps 1 meant
	 * every row's ramps: it loads with every row's, as it trained; as a
	 * version 11 state, the anchor's; before version 12, with the epoch shown */
	for (uint32_t ver = 8; ver <= 11; ver++)
	{
		old = unit_state_as_version(blob, len, ver, ver == 8 ? 12 : ver == 9 ? 8 : 4, &olen);
		r = hw_model_state_deserialize(old, olen, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
		CHECK_MSG(r != NULL, "version %u state: %s", ver, err.msg);
		if (r)
		{
			CHECK_EQ_INT(hw_model_config(r)->count_ramps, ver <= 10 ? HW_COUNT_RAMPS_EVERY_ROW : HW_COUNT_RAMPS_ANCHOR);
			CHECK_EQ_INT(hw_model_config(r)->absolute_time, 1);
			CHECK(flat_equal(rt, r, 0) && flat_equal(rt, r, 2) && flat_equal(rt, r, 3));
			hw_model_free(r);
		}
		free(old);
	}
	/* as a version 7 state it would lack the count ramps it has, as a
	 * version 6 state also the ordinal head: refused */
	for (uint32_t ver = 6; ver <= 7; ver++)
	{
		old = unit_state_as_version(blob, len, ver, ver == 6 ? 20 : 16, &olen);
		r = hw_model_state_deserialize(old, olen, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
		CHECK_MSG(r == NULL, "a version %u state of a model with count ramps was loaded", ver);
		hw_model_free(r);
		free(old);
	}
	hw_model_free(rt);
	free(blob); free(c1); free(k1);
	/* a version 4 state of a model without the ordinal head: child counts without means */
	hw_model_config_preset(&c, "tiny", &err);
	c.d_text = DT; c.batch_size = 8; c.seq_len = 64; c.warmup_steps = 20; c.total_steps = 100;
	c.ordinal_head = 0;
	c.count_ramps = 0;
	hw_synth_tables(DT, 3, &c1, &k1);
	rt = hw_model_create(&c, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
	CHECK(rt != NULL);
	CHECK_EQ_INT(run_steps(rt, HW_ST_NUMERICAL, 0, 3, NULL, &err), HW_OK);
	CHECK_EQ_INT(hw_model_state_serialize(rt, &blob, &len, &err), HW_OK);
	old = unit_state_as_version(blob, len, 4, 28, &olen);
	r = hw_model_state_deserialize(old, olen, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
	CHECK_MSG(r != NULL, "version 4 state: %s", err.msg);
	if (r)
	{
		CHECK_EQ_INT(hw_model_config(r)->child_counts, 1);
		CHECK_EQ_INT(hw_model_config(r)->child_means, 0);
		CHECK(flat_equal(rt, r, 0) && flat_equal(rt, r, 2) && flat_equal(rt, r, 3));
		hw_model_free(r);
	}
	free(old);
	hw_model_free(rt);
	hw_model_free(a);
	hw_backend_destroy(be);
	free(blob); free(c1); free(k1);
}

/* A NaN parameter: the step fails with HW_ERR_NUMERIC and changes nothing. */
UNIT_TEST(model_nan_stops_without_update)
{
	HwError      err = {0};
	HwBackend   *be = hw_backend_cpu_create(1, &err);
	uint16_t    *c1, *k1;
	HwModel     *m = make_model(be, &c1, &k1, 100, &err);
	HwSynthSpec  sp = { .B = 8, .S = 64, .d_text = DT, .target_stype = HW_ST_NUMERICAL, .seed = 1 };
	HwBatch     *b = hw_synth_batch(&sp, 0);
	HwStepResult r;
	int64_t      n;
	float       *before, *after, *bias = calloc(64, sizeof(float));
	int          rc, same;

	CHECK(m && b);
	CHECK_EQ_INT(hw_model_train_step(m, b, &r, &err), HW_OK);
	bias[3] = NAN;
	CHECK_EQ_INT(hw_model_set_tensor(m, 0, "enc.col.b", bias, 64, &err), HW_OK);
	n = hw_model_numel(m);
	before = malloc(sizeof(float) * n * 2);
	after = before + n;
	hw_model_get_flat(m, 0, before);
	rc = hw_model_train_step(m, b, &r, &err);
	hw_model_get_flat(m, 0, after);
	same = memcmp(before, after, sizeof(float) * n) == 0;
	CHECK_EQ_INT(rc, HW_ERR_NUMERIC);
	CHECK(strstr(err.msg, "NaN") != NULL);
	CHECK(same);
	CHECK_EQ_INT(hw_model_step(m), 1);
	free(before);
	free(bias);
	hw_batch_free(b);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(c1); free(k1);
}

/* Eval: probabilities are distributions, mean of per-sequence losses is the
 * reported loss, parameters are untouched; a batch with two targets in one
 * sequence is refused with a clear message. */
UNIT_TEST(model_eval_predictions)
{
	HwError        err = {0};
	HwBackend     *be = hw_backend_cpu_create(1, &err);
	uint16_t      *c1, *k1;
	HwModel       *m = make_model(be, &c1, &k1, 100, &err);
	HwSynthSpec    sp = { .B = 5, .S = 40, .d_text = DT, .target_stype = HW_ST_CATEGORICAL, .seed = 1 };
	HwBatch       *b = hw_synth_batch(&sp, 0);
	HwPredictions *p = hw_predictions_alloc(5, 5);
	float          loss;
	double         s = 0;

	CHECK(m && b && p);
	CHECK_EQ_INT(hw_model_eval(m, b, &loss, p, &err), HW_OK);
	for (int i = 0; i < 5; i++)
	{
		double t = 0;

		for (int k = 0; k < 5; k++)
		{
			CHECK(p->cat_probs[i * 5 + k] >= 0 && p->cat_probs[i * 5 + k] <= 1);
			t += p->cat_probs[i * 5 + k];
		}
		CHECK_CLOSE(t, 1.0, 1e-5, 0);
		CHECK(p->p_null[i] > 0 && p->p_null[i] < 1);
		CHECK(p->value[i] >= 0 && p->value[i] < 5);
		s += p->loss[i];
	}
	CHECK_CLOSE(loss, s / 5, 1e-6, 1e-6);
	CHECK_EQ_INT(hw_model_step(m), 0);
	/* second target in sequence 0 */
	b->is_target[3] = 1;
	CHECK_EQ_INT(hw_model_eval(m, b, &loss, p, &err), HW_ERR_INVALID);
	CHECK(strstr(err.msg, "target cells") != NULL);
	hw_predictions_free(p);
	hw_batch_free(b);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(c1); free(k1);
}

/* The memory estimate grows with the batch and is in the expected range for
 * base (about 7 GB of activations + 4 x 10 M parameters x 4 bytes). */
UNIT_TEST(model_memory_estimate)
{
	HwModelConfig c;
	HwError       err = {0};
	int64_t       tiny, base, base2;

	hw_model_config_preset(&c, "tiny", &err);
	tiny = hw_model_memory_bytes(&c, 12, 9);
	hw_model_config_preset(&c, "base", &err);
	base = hw_model_memory_bytes(&c, 12, 9);
	c.batch_size = 64;
	base2 = hw_model_memory_bytes(&c, 12, 9);
	fprintf(stderr, "  tiny %.1f MiB, base %.2f GiB, base B=64 %.2f GiB\n", tiny / 1048576.0,
			base / 1073741824.0, base2 / 1073741824.0);
	CHECK(tiny > 1 << 20 && tiny < 1LL << 30);
	CHECK(base > 4LL << 30 && base < 12LL << 30);
	CHECK(base2 > base + (base / 3));
	c.n_heads = 7;
	CHECK_EQ_INT(hw_model_memory_bytes(&c, 12, 9), -1);
}

/* Every parameter of a (by a's table) equal, bit for bit, to b's of the same
 * name, except those whose name starts with skip (NULL: none skipped). */
static void
check_same_params(HwModel *a, HwModel *b, const char *skip)
{
	HwError err = {0};

	for (int i = 0; i < hw_model_n_params(a); i++)
	{
		const HwParamInfo *p = hw_model_param_info(a, i);
		float             *x, *y;
		int                same;

		if (skip && strncmp(p->name, skip, strlen(skip)) == 0)
			continue;
		x = malloc(sizeof(float) * p->numel);
		y = malloc(sizeof(float) * p->numel);
		same = hw_model_get_tensor(a, 0, p->name, x, p->numel, &err) == HW_OK &&
			hw_model_get_tensor(b, 0, p->name, y, p->numel, &err) == HW_OK &&
			memcmp(x, y, sizeof(float) * p->numel) == 0;
		free(x);
		free(y);
		CHECK_MSG(same, "%s differs (%s)", p->name, err.msg);
	}
}

/* The small tiny-preset configuration of the paired-model tests below
 * (8 x 64 batches, a short warm-up so step 1 has a non-zero rate). */
static void
pair_config(HwModelConfig *c, HwError *err)
{
	hw_model_config_preset(c, "tiny", err);
	c->d_text = DT;
	c->batch_size = 8;
	c->seq_len = 64;
	c->warmup_steps = 2;
	c->total_steps = 100;
}

/* One optimiser step of both models on batch b.  Before m[1]'s step, its
 * gradient of tensor `grad_of` (n floats) is copied into g (NULL: none). */
static void
step_pair(HwModel *m[2], HwBatch *b, const char *grad_of, float *g, int64_t n,
		  float loss[2], float gn[2], float lr[2])
{
	HwError err = {0};

	for (int h = 0; h < 2; h++)
	{
		CHECK_EQ_INT(hw_model_forward_backward(m[h], b, &loss[h], &err), HW_OK);
		if (h == 1 && grad_of)
			CHECK_EQ_INT(hw_model_get_tensor(m[1], 1, grad_of, g, n, &err), HW_OK);
		CHECK_EQ_INT(hw_model_optimizer_step(m[h], &gn[h], &lr[h], &err), HW_OK);
	}
	CHECK(loss[0] == loss[1] && gn[0] == gn[1] && lr[0] == lr[1]);
}

/* The largest |p1 - want| over n values, want being AdamW's first step by
 * hand: p0 - lr * (g' / (|g'| + eps) + wd * p0), g' the gradient g after
 * clipping the global norm gn to the configuration's clip_norm. */
static double
adamw_first_step_error(const HwModelConfig *c, float gn, float lr, double wd,
					   const float *p0, const float *g, const float *p1, int64_t n)
{
	double gscale = gn > c->clip_norm ? c->clip_norm / (gn + 1e-6) : 1.0, worst = 0;

	for (int64_t i = 0; i < n; i++)
	{
		double gs = g[i] * gscale;
		double want = p0[i] - lr * (gs / (fabs(gs) + c->adam_eps) + wd * p0[i]);
		double d = fabs(p1[i] - want);

		worst = d > worst ? d : worst;
	}
	return worst;
}

/* The configuration m's serialized state carries. */
static void
state_config(HwModel *m, HwModelConfig *rc)
{
	HwError  err = {0};
	uint8_t *blob;
	size_t   len;

	CHECK_EQ_INT(hw_model_state_serialize(m, &blob, &len, &err), HW_OK);
	CHECK_EQ_INT(hw_model_state_read_config(blob, len, rc, &err), HW_OK);
	free(blob);
}

/* A model with the ordinal head trains tasks that do not use it exactly as
 * a model without it: the head's parameters come last (the others keep
 * their offsets and initial draws) and get no gradient, so every shared
 * parameter is bit-identical after a few steps (docs/model.md, Ordinal loss). */
UNIT_TEST(model_unused_ordinal_head_changes_nothing)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *c1, *k1;
	HwModel   *m[2];
	float      l[2][6];

	hw_synth_tables(DT, 3, &c1, &k1);
	for (int h = 0; h < 2; h++)
	{
		HwModelConfig c;

		pair_config(&c, &err);
		c.ordinal_head = h;
		m[h] = hw_model_create(&c, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
		CHECK(m[h] != NULL);
		CHECK_EQ_INT(run_steps(m[h], HW_ST_NUMERICAL, 0, 6, l[h], &err), HW_OK);
	}
	CHECK_EQ_INT(hw_model_n_params(m[1]), hw_model_n_params(m[0]) + 2);
	CHECK(memcmp(l[0], l[1], sizeof(l[0])) == 0);
	check_same_params(m[0], m[1], NULL);
	hw_model_free(m[0]);
	hw_model_free(m[1]);
	hw_backend_destroy(be);
	free(c1); free(k1);
}

/* head_adamw: the same model and batch with the heads on Muon (0) and on
 * AdamW (1).  Step 1 must leave every parameter outside head.* identical
 * (the loss and the gradients do not depend on the heads' optimiser), keep
 * Muon's second moments empty, and move head.cat.w (the categorical target's
 * head) by AdamW's first step computed here from its gradient:
 * p1 = p0 - lr * (g' / (|g'| + eps) + wd * p0), g' the clipped gradient. */
UNIT_TEST(model_head_adamw_moves_heads_by_adamw)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *c1, *k1;
	HwModel   *m[2];
	HwSynthSpec sp = { .B = 8, .S = 64, .d_text = DT, .target_stype = HW_ST_CATEGORICAL, .seed = 7 };
	HwBatch   *b = hw_synth_batch(&sp, 0);
	float      loss[2], gn[2], lr[2];

	hw_synth_tables(DT, 3, &c1, &k1);
	for (int h = 0; h < 2; h++)
	{
		HwModelConfig c;

		pair_config(&c, &err);
		c.head_adamw = h;
		m[h] = hw_model_create(&c, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
		CHECK(m[h] != NULL);
		CHECK_EQ_INT(hw_model_config(m[h])->head_adamw, h);
	}
	const HwParamInfo *hp = hw_model_param_info(m[1], hw_model_param_index(m[1], "head.cat.w"));
	int64_t  n = hp->numel;
	float   *p0 = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n), *p1 = malloc(sizeof(float) * n);
	float   *v = malloc(sizeof(float) * n);

	CHECK_EQ_INT(hw_model_get_tensor(m[1], 0, "head.cat.w", p0, n, &err), HW_OK);
	step_pair(m, b, "head.cat.w", g, n, loss, gn, lr);
	/* AdamW's first step on head.cat.w, by hand */
	{
		const HwModelConfig *c = hw_model_config(m[1]);
		double worst;
		int    moved = 0;

		CHECK_EQ_INT(hw_model_get_tensor(m[1], 0, "head.cat.w", p1, n, &err), HW_OK);
		worst = adamw_first_step_error(c, gn[1], lr[1], c->head_weight_decay, p0, g, p1, n);
		for (int64_t i = 0; i < n; i++)
			moved += g[i] != 0;
		CHECK_MSG(worst <= 1e-6 * lr[1] + 1e-7, "head.cat.w after AdamW's first step: worst error %g (lr %g)",
				  worst, (double) lr[1]);
		CHECK(moved > n / 2);
		CHECK_EQ_INT(hw_model_get_tensor(m[1], 3, "head.cat.w", v, n, &err), HW_OK);
		CHECK(v[0] != 0 || v[1] != 0);
		CHECK_EQ_INT(hw_model_get_tensor(m[0], 3, "head.cat.w", v, n, &err), HW_OK);
		for (int64_t i = 0; i < n; i++)
			if (v[i] != 0)
			{
				CHECK_MSG(0, "Muon head.cat.w has a second moment");
				break;
			}
		/* and the Muon head moved differently */
		CHECK_EQ_INT(hw_model_get_tensor(m[0], 0, "head.cat.w", v, n, &err), HW_OK);
		CHECK(memcmp(v, p1, sizeof(float) * n) != 0);
	}
	/* everything outside head.* identical */
	check_same_params(m[0], m[1], "head.");
	/* the option survives the state */
	{
		HwModelConfig rc;

		state_config(m[1], &rc);
		CHECK_EQ_INT(rc.head_adamw, 1);
	}
	free(p0); free(g); free(p1); free(v);
	hw_batch_free(b);
	hw_model_free(m[0]);
	hw_model_free(m[1]);
	hw_backend_destroy(be);
	free(c1); free(k1);
}

/* head_weight_decay: the same model and batch with the heads' decay as the
 * rest's (the preset's default, resolved to weight_decay) and with none.
 * Step 1 must leave every parameter outside head.* identical; on a Muon
 * head (head.ord.w), p1 = (1 - lr wd) p0 - lr * update with the same update,
 * so the two models' p1 differ by exactly lr * weight_decay * p0; with
 * head_adamw, head.cat.w must match AdamW's first step by hand with wd = 0. */
UNIT_TEST(model_head_weight_decay_only_on_heads)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *c1, *k1;
	HwModel   *m[2];
	HwSynthSpec sp = { .B = 8, .S = 64, .d_text = DT, .target_stype = HW_ST_CATEGORICAL, .seed = 11 };
	HwBatch   *b = hw_synth_batch(&sp, 0);
	float      loss[2], gn[2], lr[2];

	hw_synth_tables(DT, 3, &c1, &k1);
	for (int h = 0; h < 2; h++)
	{
		HwModelConfig c;

		pair_config(&c, &err);
		CHECK(c.head_weight_decay == 0);         /* the presets leave the heads undecayed */
		c.head_adamw = 1;                        /* head.cat.w on AdamW: a hand-checkable step */
		/* model 0: "as weight_decay" (negative); model 1: none */
		CHECK_EQ_INT(hw_model_config_set(&c, "head_weight_decay", h == 0 ? -1.0 : 0.0, &err), HW_OK);
		m[h] = hw_model_create(&c, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
		CHECK(m[h] != NULL);
	}
	CHECK(hw_model_config(m[0])->head_weight_decay == hw_model_config(m[0])->weight_decay);
	CHECK(hw_model_config(m[0])->weight_decay > 0 && hw_model_config(m[1])->head_weight_decay == 0);
	/* with head_adamw every head.* matrix is on AdamW: the Muon case is the
	 * second pair below */
	const HwParamInfo *hp = hw_model_param_info(m[1], hw_model_param_index(m[1], "head.cat.w"));
	int64_t  n = hp->numel;
	float   *p0 = malloc(sizeof(float) * n), *g = malloc(sizeof(float) * n), *p1 = malloc(sizeof(float) * n);

	CHECK_EQ_INT(hw_model_get_tensor(m[1], 0, "head.cat.w", p0, n, &err), HW_OK);
	step_pair(m, b, "head.cat.w", g, n, loss, gn, lr);
	{
		double worst;

		CHECK_EQ_INT(hw_model_get_tensor(m[1], 0, "head.cat.w", p1, n, &err), HW_OK);
		worst = adamw_first_step_error(hw_model_config(m[1]), gn[1], lr[1], 0.0 /* no decay */, p0, g, p1, n);
		CHECK_MSG(worst <= 1e-6 * lr[1] + 1e-7, "head.cat.w without decay: worst error %g (lr %g)", worst, (double) lr[1]);
	}
	check_same_params(m[0], m[1], "head.");
	{
		HwModelConfig rc;

		state_config(m[1], &rc);
		CHECK(rc.head_weight_decay == 0 && rc.weight_decay == hw_model_config(m[1])->weight_decay);
	}
	hw_model_free(m[0]);
	hw_model_free(m[1]);
	free(p0); free(g); free(p1);

	/* Muon heads (head_adamw off): head.ord.w's two p1 differ by lr wd p0 */
	for (int h = 0; h < 2; h++)
	{
		HwModelConfig c;

		pair_config(&c, &err);
		c.head_weight_decay = h == 0 ? -1.0f : 0.0f;
		m[h] = hw_model_create(&c, c1, HW_SYNTH_NCOLS, k1, HW_SYNTH_NCAT, be, &err);
		CHECK(m[h] != NULL);
	}
	hp = hw_model_param_info(m[0], hw_model_param_index(m[0], "head.ord.w"));
	CHECK(hp != NULL && hp->opt == HW_OPT_MUON && hp->decay);
	n = hp->numel;
	p0 = malloc(sizeof(float) * n);
	float *q0 = malloc(sizeof(float) * n), *q1 = malloc(sizeof(float) * n);

	CHECK_EQ_INT(hw_model_get_tensor(m[0], 0, "head.ord.w", p0, n, &err), HW_OK);
	step_pair(m, b, NULL, NULL, 0, loss, gn, lr);
	CHECK_EQ_INT(hw_model_get_tensor(m[0], 0, "head.ord.w", q0, n, &err), HW_OK);
	CHECK_EQ_INT(hw_model_get_tensor(m[1], 0, "head.ord.w", q1, n, &err), HW_OK);
	{
		double wd = hw_model_config(m[0])->weight_decay, worst = 0, norm = 0;

		for (int64_t i = 0; i < n; i++)
		{
			double d = fabs((q1[i] - q0[i]) - lr[0] * wd * p0[i]);

			worst = d > worst ? d : worst;
			norm += fabs(p0[i]);
		}
		CHECK(norm > 0);
		CHECK_MSG(worst <= 1e-7, "head.ord.w: the two models differ by other than lr wd p0 (worst %g)", worst);
	}
	check_same_params(m[0], m[1], "head.");
	/* NaN is refused */
	{
		HwModelConfig c;

		hw_model_config_preset(&c, "tiny", &err);
		c.head_weight_decay = NAN;
		CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_ERR_INVALID);
	}
	free(p0); free(q0); free(q1);
	hw_batch_free(b);
	hw_model_free(m[0]);
	hw_model_free(m[1]);
	hw_backend_destroy(be);
	free(c1); free(k1);
}
