/*
 * test_model_ema.c: the parameter average (HwModelConfig.ema_decay).
 *
 * Checked against independent references: the average against a host
 * recomputation in double of d = min(decay, (1+t)/(10+t)) and
 * ema = d*ema + (1-d)*params from the parameters read after every step; the
 * swapped model's forward against a second model whose parameters were set
 * to the average; the state round trip against the model it came from.
 */
#include "unit.h"
#include "core/model.h"
#include "synth_batch.h"
#include "state_blob.h"

#include <stdlib.h>
#include <string.h>

#define DT 64

static HwModel *
ema_model(HwBackend *be, uint16_t *colt, uint16_t *catt, float decay, HwError *err)
{
	HwModelConfig c;

	hw_model_config_preset(&c, "tiny", err);
	c.d_text = DT;
	c.batch_size = 8;
	c.seq_len = 64;
	c.warmup_steps = 5;
	c.total_steps = 100;
	c.ema_decay = decay;
	return hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, err);
}

static HwBatch *
ema_batch(uint64_t k)
{
	HwSynthSpec sp = { .B = 8, .S = 64, .d_text = DT, .target_stype = HW_ST_NUMERICAL, .seed = 7 };

	return hw_synth_batch(&sp, k);
}

static int
train(HwModel *m, uint64_t from, uint64_t to, HwError *err)
{
	for (uint64_t k = from; k < to; k++)
	{
		HwBatch     *b = ema_batch(k);
		HwStepResult r;
		int          rc = hw_model_train_step(m, b, &r, err);

		hw_batch_free(b);
		if (rc != HW_OK)
			return rc;
	}
	return HW_OK;
}

static float
eval_loss(HwModel *m, uint64_t k, HwError *err)
{
	HwBatch *b = ema_batch(k);
	float    loss = NAN;

	if (hw_model_eval(m, b, &loss, NULL, err) != HW_OK)
		loss = NAN;
	hw_batch_free(b);
	return loss;
}

static int
flat_eq(HwModel *a, int wa, HwModel *b, int wb)
{
	int64_t n = hw_model_numel(a);
	float  *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
	int     eq = n == hw_model_numel(b) && hw_model_get_flat(a, wa, x) == HW_OK &&
		hw_model_get_flat(b, wb, y) == HW_OK && memcmp(x, y, sizeof(float) * n) == 0;

	free(x);
	free(y);
	return eq;
}

/* The average after each of 6 steps equals a host recomputation from the
 * parameters (decay 0.35: the warm-up factor (1+t)/(10+t) rules steps 1-3,
 * the decay from step 4 on, so both branches of the weight are exercised),
 * and differs from the parameters themselves. */
UNIT_TEST(model_ema_is_the_polyak_average)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *colt, *catt;
	HwModel   *m, *plain;
	int64_t    n;
	double    *ref;
	float     *p, *e;
	double     maxdiff = 0, moved = 0;

	hw_synth_tables(DT, 3, &colt, &catt);
	m = ema_model(be, colt, catt, 0.35f, &err);
	CHECK_MSG(m != NULL, "%s", err.msg);
	CHECK(hw_model_has_ema(m));
	n = hw_model_numel(m);
	ref = malloc(sizeof(double) * n);
	p = malloc(sizeof(float) * n);
	e = malloc(sizeof(float) * n);
	/* the average starts at the initial parameters */
	CHECK(flat_eq(m, 0, m, 4));
	hw_model_get_flat(m, 0, p);
	for (int64_t i = 0; i < n; i++)
		ref[i] = p[i];
	for (int t = 1; t <= 6; t++)
	{
		double d = (1.0 + t) / (10.0 + t);

		if (d > 0.35)
			d = 0.35;
		CHECK_MSG((t >= 4) == (d == 0.35), "step %d: weight %g, the test no longer spans both branches", t, d);
		CHECK_EQ_INT(train(m, (uint64_t) t - 1, (uint64_t) t, &err), HW_OK);
		CHECK_CLOSE(hw_ema_weight(0.35f, t), d, 1e-7, 0);
		hw_model_get_flat(m, 0, p);
		for (int64_t i = 0; i < n; i++)
			ref[i] = d * ref[i] + (1 - d) * p[i];
	}
	hw_model_get_flat(m, 4, e);
	for (int64_t i = 0; i < n; i++)
	{
		double diff = fabs(e[i] - ref[i]);

		if (diff > maxdiff)
			maxdiff = diff;
		moved += fabs(e[i] - p[i]);
	}
	CHECK_MSG(maxdiff < 1e-6, "average differs from the host reference by %g", maxdiff);
	CHECK_MSG(moved > 1e-3 * n * 1e-3, "the average equals the parameters (sum |ema - p| = %g)", moved);
	/* no decay: no average */
	plain = ema_model(be, colt, catt, 0, &err);
	CHECK(plain && !hw_model_has_ema(plain));
	CHECK(hw_model_get_flat(plain, 4, e) != HW_OK);
	CHECK(hw_model_swap_ema(plain, &err) != HW_OK);
	hw_model_free(plain);
	free(ref); free(p); free(e);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt); free(catt);
}

/* Swapped in, the model computes what a model holding the average as its
 * parameters computes (bit for bit), refuses to train or serialize, and
 * swaps back to its own parameters; adopted, the average is its parameters. */
UNIT_TEST(model_ema_swap_reads_the_average)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *colt, *catt;
	HwModel   *m, *ref;
	float     *avg, l_params, l_avg, l_ref;
	uint8_t   *blob = NULL;
	size_t     len = 0;
	HwBatch   *b;
	HwStepResult r;

	hw_synth_tables(DT, 3, &colt, &catt);
	m = ema_model(be, colt, catt, 0.9f, &err);
	ref = ema_model(be, colt, catt, 0, &err);
	CHECK(m && ref);
	CHECK_EQ_INT(train(m, 0, 8, &err), HW_OK);
	avg = malloc(sizeof(float) * hw_model_numel(m));
	hw_model_get_flat(m, 4, avg);
	CHECK_EQ_INT(hw_model_set_flat(ref, 0, avg), HW_OK);
	l_ref = eval_loss(ref, 100, &err);
	l_params = eval_loss(m, 100, &err);
	CHECK_EQ_INT(hw_model_swap_ema(m, &err), HW_OK);
	CHECK(hw_model_ema_swapped(m));
	l_avg = eval_loss(m, 100, &err);
	CHECK_MSG(l_avg == l_ref, "swapped loss %.9g, the average as parameters %.9g", l_avg, l_ref);
	CHECK_MSG(l_avg != l_params, "the swap changed nothing (%.9g)", l_avg);
	b = ema_batch(9);
	CHECK_EQ_INT(hw_model_train_step(m, b, &r, &err), HW_ERR_INVALID);
	CHECK_EQ_INT(hw_model_state_serialize(m, &blob, &len, &err), HW_ERR_INVALID);
	CHECK(blob == NULL);
	CHECK_EQ_INT(hw_model_step(m), 8);
	CHECK_EQ_INT(hw_model_swap_ema(m, &err), HW_OK);
	CHECK(!hw_model_ema_swapped(m));
	CHECK(eval_loss(m, 100, &err) == l_params);
	/* adopted: the parameters are the average, its buffer gone; training,
	 * serializing (the moments would not fit) and loading a state are refused */
	CHECK_EQ_INT(hw_model_state_serialize(m, &blob, &len, &err), HW_OK);     /* before: a valid state */
	CHECK_EQ_INT(hw_model_adopt_ema(m, &err), HW_OK);
	CHECK(hw_model_ema_adopted(m) && !hw_model_has_ema(m));
	CHECK(flat_eq(m, 0, ref, 0));
	CHECK(eval_loss(m, 100, &err) == l_ref);
	CHECK_EQ_INT(hw_model_train_step(m, b, &r, &err), HW_ERR_INVALID);
	CHECK_EQ_INT(hw_model_swap_ema(m, &err), HW_ERR_INVALID);
	{
		uint8_t *again = NULL;
		size_t   alen = 0;

		CHECK_EQ_INT(hw_model_state_serialize(m, &again, &alen, &err), HW_ERR_INVALID);
		CHECK(again == NULL);
	}
	CHECK_EQ_INT(hw_model_state_load(m, blob, len, &err), HW_ERR_INVALID);
	CHECK(eval_loss(m, 100, &err) == l_ref);
	free(blob);
	/* a model without an average adopts nothing */
	CHECK_EQ_INT(hw_model_adopt_ema(ref, &err), HW_OK);
	CHECK(eval_loss(ref, 100, &err) == l_ref);
	hw_batch_free(b);
	free(avg);
	hw_model_free(m);
	hw_model_free(ref);
	hw_backend_destroy(be);
	free(colt); free(catt);
}

/* Dropping the average (serving the last parameters) keeps the parameters
 * the optimiser trained, also when called while the average is swapped in;
 * the model is then loaded to predict: no swap, no training. */
UNIT_TEST(model_ema_drop_keeps_the_last_parameters)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *colt, *catt;
	HwModel   *m, *twin;
	float      l_last, l_avg;

	hw_synth_tables(DT, 3, &colt, &catt);
	m = ema_model(be, colt, catt, 0.9f, &err);
	twin = ema_model(be, colt, catt, 0.9f, &err);
	CHECK(m && twin);
	CHECK_EQ_INT(train(m, 0, 6, &err), HW_OK);
	CHECK_EQ_INT(train(twin, 0, 6, &err), HW_OK);
	l_last = eval_loss(m, 100, &err);
	CHECK_EQ_INT(hw_model_swap_ema(m, &err), HW_OK);
	l_avg = eval_loss(m, 100, &err);
	CHECK_MSG(l_avg != l_last, "the average equals the parameters (%.9g): the test cannot tell them apart", l_avg);
	CHECK_EQ_INT(hw_model_drop_ema(m, &err), HW_OK);          /* while swapped */
	CHECK(hw_model_ema_adopted(m) && !hw_model_has_ema(m) && !hw_model_ema_swapped(m));
	CHECK_MSG(flat_eq(m, 0, twin, 0), "dropping the average changed the parameters");
	CHECK(eval_loss(m, 100, &err) == l_last);
	CHECK_EQ_INT(hw_model_swap_ema(m, &err), HW_ERR_INVALID);
	CHECK_EQ_INT(train(m, 6, 7, &err), HW_ERR_INVALID);
	/* not swapped: the same */
	CHECK_EQ_INT(hw_model_drop_ema(twin, &err), HW_OK);
	CHECK(eval_loss(twin, 100, &err) == l_last);
	hw_model_free(m);
	hw_model_free(twin);
	hw_backend_destroy(be);
	free(colt); free(catt);
}

/* The average travels in the state (version 6): a resumed model continues
 * it exactly as the straight run does; the same blob passed off as version 5
 * (no ema_decay field) is refused (its size no longer matches); a state
 * without an average loaded into a model with one starts the average at
 * the parameters. */
UNIT_TEST(model_ema_state_round_trip)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *colt, *catt;
	HwModel   *a, *r, *plain, *m2;
	uint8_t   *blob, *pblob;
	size_t     len, plen;
	HwModelConfig rc;

	hw_synth_tables(DT, 3, &colt, &catt);
	a = ema_model(be, colt, catt, 0.95f, &err);
	CHECK(a);
	CHECK_EQ_INT(train(a, 0, 4, &err), HW_OK);
	CHECK_EQ_INT(hw_model_state_serialize(a, &blob, &len, &err), HW_OK);
	CHECK_EQ_INT(hw_model_state_read_config(blob, len, &rc, &err), HW_OK);
	CHECK(rc.ema_decay == 0.95f);
	r = hw_model_state_deserialize(blob, len, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	CHECK_MSG(r != NULL, "%s", err.msg);
	CHECK(hw_model_has_ema(r));
	CHECK(flat_eq(a, 0, r, 0) && flat_eq(a, 2, r, 2) && flat_eq(a, 3, r, 3) && flat_eq(a, 4, r, 4));
	CHECK_EQ_INT(train(a, 4, 7, &err), HW_OK);
	CHECK_EQ_INT(train(r, 4, 7, &err), HW_OK);
	CHECK_MSG(flat_eq(a, 0, r, 0) && flat_eq(a, 4, r, 4), "resumed average differs from the straight run");
	hw_model_free(r);
	/* loaded to predict on the average: its parameters are the state's
	 * average; on the last weights: the state's parameters; either way
	 * the average's buffer is gone and training is refused */
	for (int average = 1; average >= 0; average--)
	{
		HwModel *straight = hw_model_state_deserialize(blob, len, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
		HwBatch *b = ema_batch(9);
		HwStepResult sr;

		r = hw_model_state_deserialize_served(blob, len, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, average, be, &err);
		CHECK_MSG(r != NULL, "%s", err.msg);
		CHECK(straight != NULL);
		CHECK(hw_model_ema_adopted(r) && !hw_model_has_ema(r));
		CHECK_MSG(flat_eq(r, 0, straight, average ? 4 : 0) && !flat_eq(r, 0, straight, average ? 0 : 4),
				  "served %s weights are not the state's", average ? "average" : "last");
		CHECK_EQ_INT(hw_model_train_step(r, b, &sr, &err), HW_ERR_INVALID);
		hw_batch_free(b);
		hw_model_free(straight);
		hw_model_free(r);
	}

	/* version 5 had no ema_decay: the same blob passed off as one (its
	 * config without absolute_time, head_weight_decay, head_adamw, count_ramps, ordinal_head and ema_decay) */
	{
		size_t   olen;
		uint8_t *o = unit_state_as_version(blob, len, 5, 24, &olen);

		r = hw_model_state_deserialize(o, olen, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
		CHECK_MSG(r == NULL && err.code == HW_ERR_CORRUPT, "a v5 blob carrying an average was not refused");
		free(o);
	}

	/* a state without an average into a model with one */
	plain = ema_model(be, colt, catt, 0, &err);
	m2 = ema_model(be, colt, catt, 0.95f, &err);
	CHECK(plain && m2);
	CHECK_EQ_INT(train(plain, 0, 3, &err), HW_OK);
	CHECK_EQ_INT(hw_model_state_serialize(plain, &pblob, &plen, &err), HW_OK);
	/* the same parameter table: the blobs differ by exactly the average */
	CHECK_MSG(plen + sizeof(float) * (size_t) hw_model_numel(plain) == len,
			  "states of %zu bytes without and %zu with an average", plen, len);
	CHECK_EQ_INT(hw_model_state_load(m2, pblob, plen, &err), HW_OK);
	CHECK(flat_eq(m2, 0, plain, 0) && flat_eq(m2, 4, plain, 0));
	/* ... and a state with one into a model without: refused */
	CHECK_EQ_INT(hw_model_state_load(plain, blob, len, &err), HW_ERR_INVALID);
	free(pblob);
	hw_model_free(plain);
	hw_model_free(m2);
	free(blob);
	hw_model_free(a);
	hw_backend_destroy(be);
	free(colt); free(catt);
}

UNIT_TEST(model_ema_decay_out_of_range_refused)
{
	HwError       err = {0};
	HwModelConfig c;

	hw_model_config_preset(&c, "tiny", &err);
	CHECK_EQ_INT(c.ema_decay == 0, 1);
	c.ema_decay = 1.0f;
	CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_ERR_INVALID);
	c.ema_decay = NAN;
	CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_ERR_INVALID);
	c.ema_decay = -0.1f;
	CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_ERR_INVALID);
	CHECK_EQ_INT(hw_model_config_set(&c, "ema_decay", 0.99, &err), HW_OK);
	CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_OK);
}

/* The memory estimate counts the average: 4 bytes per parameter more. */
UNIT_TEST(model_ema_memory_estimate)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *colt, *catt;
	HwModel   *m;
	HwModelConfig c;

	hw_synth_tables(DT, 3, &colt, &catt);
	m = ema_model(be, colt, catt, 0.99f, &err);
	CHECK(m);
	c = *hw_model_config(m);
	int64_t with = hw_model_memory_bytes(&c, HW_SYNTH_NCOLS, HW_SYNTH_NCAT);
	c.ema_decay = 0;
	int64_t without = hw_model_memory_bytes(&c, HW_SYNTH_NCOLS, HW_SYNTH_NCAT);
	CHECK_EQ_INT(with - without, (int64_t) sizeof(float) * hw_model_numel(m));
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt); free(catt);
}
