/*
 * test_model_tail.c: the training forward's pruned tail (model_forward.c,
 * prunes_tail): from the last attention sublayer's attention on, only the
 * target cells' rows, against the same model computing that tail for every
 * cell (hw_model_set_full_tail), the reference:
 *  - the loss agrees to fp32 rounding (1e-5 relative) and every parameter's
 *    gradient to 1e-4 of the gradient's norm, for all four target types;
 *  - the gradient is not zero where the pruned rows feed it (the last
 *    layer's weights), so the comparison compares something;
 *  - four training steps give the same losses to 1e-5 relative.
 */
#include "unit.h"
#include "core/model.h"
#include "synth_batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DT HW_SYNTH_TINY_DT

static HwModel *
tail_model(HwBackend *be, uint16_t **colt, uint16_t **catt, HwError *err)
{
	return hw_synth_tiny_model(be, 8, 64, colt, catt, err);
}

/* loss and gradient of one forward and backward of batch i, full or pruned tail */
static int
loss_grad(HwModel *m, bool full, int stype, uint64_t i, float *loss, float *grad, HwError *err)
{
	HwSynthSpec sp = { .B = 8, .S = 64, .d_text = DT, .target_stype = stype, .seed = 41 };
	HwBatch    *b = hw_synth_batch(&sp, i);
	int         rc;

	hw_model_set_full_tail(m, full);
	rc = hw_model_forward_backward(m, b, loss, err);
	hw_batch_free(b);
	return rc == HW_OK ? hw_model_get_flat(m, 1, grad) : rc;
}

static void
check_type(int stype)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	uint16_t  *colt, *catt;
	HwModel   *m = tail_model(be, &colt, &catt, &err);
	int64_t    n;
	float     *gf, *gp, lf, lp;
	double     dn = 0, nf = 0;

	CHECK(m != NULL);
	n = hw_model_numel(m);
	gf = malloc(sizeof(float) * n);
	gp = malloc(sizeof(float) * n);
	CHECK_EQ_INT(loss_grad(m, true, stype, 0, &lf, gf, &err), HW_OK);
	CHECK_EQ_INT(loss_grad(m, false, stype, 0, &lp, gp, &err), HW_OK);
	for (int64_t i = 0; i < n; i++)
	{
		dn += ((double) gf[i] - gp[i]) * ((double) gf[i] - gp[i]);
		nf += (double) gf[i] * gf[i];
	}
	printf("  stype %d: loss full %.7f pruned %.7f, |grad difference| / |grad| %.2e\n", stype, lf, lp, sqrt(dn / nf));
	CHECK_CLOSE(lp, lf, 0, 1e-5);
	CHECK_MSG(nf > 0 && sqrt(dn / nf) < 1e-4, "gradients differ: %.3e of the norm", sqrt(dn / nf));
	free(gf);
	free(gp);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}

UNIT_TEST(model_tail_numerical) { check_type(HW_ST_NUMERICAL); }
UNIT_TEST(model_tail_categorical) { check_type(HW_ST_CATEGORICAL); }
UNIT_TEST(model_tail_boolean) { check_type(HW_ST_BOOLEAN); }
UNIT_TEST(model_tail_timestamp) { check_type(HW_ST_TIMESTAMP); }

/* the last layer's output projection and FFN weights get a gradient only
 * through the tail: nonzero in both */
UNIT_TEST(model_tail_last_layer_weights_get_gradient)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *colt, *catt;
	HwModel   *m = tail_model(be, &colt, &catt, &err);
	const HwModelConfig *c;
	char       name[64];
	float      loss, *g;
	int64_t    n;

	CHECK(m != NULL);
	c = hw_model_config(m);
	n = hw_model_numel(m);
	g = malloc(sizeof(float) * n);
	CHECK_EQ_INT(loss_grad(m, false, HW_ST_NUMERICAL, 1, &loss, g, &err), HW_OK);
	free(g);
	snprintf(name, sizeof(name), "layer%d.ffn.w2", c->n_layers - 1);
	{
		float  w2[4096 * 4];
		int64_t k = (int64_t) c->d_model * c->d_ff;
		double s = 0;

		CHECK(k <= (int64_t) (sizeof(w2) / sizeof(w2[0])));
		CHECK_EQ_INT(hw_model_get_tensor(m, 1, name, w2, k, &err), HW_OK);
		for (int64_t i = 0; i < k; i++)
			s += fabs(w2[i]);
		CHECK_MSG(s > 0, "%s has no gradient", name);
	}
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}

/*
 * four steps with each, from the same start: the same losses (each step's
 * loss is the forward of the parameters the previous steps left, through
 * the tail's buffers reused from step to step) to 1e-5 relative.  Losses, not
 * parameters: a weight matrix whose true gradient is zero (here the last
 * column attention's queries and keys, whose target cell has no other cell
 * of its column to attend to) gets a gradient of rounding noise, which
 * Muon's orthogonalisation turns into a full-size step in a direction that
 * differs with the rounding, yet moves the loss by nothing.
 */
UNIT_TEST(model_tail_steps_match)
{
	enum { STEPS = 4 };
	HwError    err = {0};
	float      loss[2][STEPS];
	double     worst = 0;

	for (int t = 0; t < 2; t++)
	{
		HwBackend *be = hw_backend_cpu_create(2, &err);
		uint16_t  *colt, *catt;
		HwModel   *m = tail_model(be, &colt, &catt, &err);

		CHECK(m != NULL);
		hw_model_set_full_tail(m, t == 0);
		CHECK_EQ_INT(hw_synth_train(m, HW_ST_CATEGORICAL, 43, STEPS, loss[t], &err), HW_OK);
		hw_model_free(m);
		hw_backend_destroy(be);
		free(colt);
		free(catt);
	}
	for (int k = 0; k < STEPS; k++)
	{
		double d = fabs((double) loss[0][k] - loss[1][k]) / fabs((double) loss[0][k]);

		printf("  step %d: loss full %.7f pruned %.7f\n", k + 1, loss[0][k], loss[1][k]);
		worst = d > worst ? d : worst;
	}
	CHECK_MSG(loss[0][STEPS - 1] != loss[0][0], "the loss did not move: the steps compare nothing");
	CHECK_MSG(worst < 1e-5, "losses differ by %.3e relative", worst);
}
