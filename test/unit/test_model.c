/*
 * test_model.c: whole-model checks on the tiny preset: finite-difference
 * gradients, learning on the planted signal, determinism across thread
 * counts, NaN handling, predictions.
 */
#include "unit.h"
#include "core/model.h"
#include "synth_batch.h"
#include "core/tensor.h"

#include <stdlib.h>
#include <string.h>

typedef struct Fix
{
	HwBackend *be;
	HwModel   *m;
	uint16_t  *colt, *catt;
	HwBatch   *b;
} Fix;

static int
fix_make(Fix *f, int stype, int B, int S, int threads, HwModelConfig *over)
{
	HwError       err = {0};
	HwModelConfig c;
	HwSynthSpec   sp = { .B = B, .S = S, .d_text = 32, .target_stype = stype, .seed = 7 };

	memset(f, 0, sizeof(*f));
	if (over)
		c = *over;
	else
	{
		hw_model_config_preset(&c, "tiny", &err);
		c.d_text = 32;
		c.seq_len = S;
		c.batch_size = B;
	}
	f->be = hw_backend_cpu_create(threads, &err);
	hw_synth_tables(c.d_text, 3, &f->colt, &f->catt);
	f->m = hw_model_create(&c, f->colt, HW_SYNTH_NCOLS, f->catt, HW_SYNTH_NCAT, f->be, &err);
	if (!f->m)
		fprintf(stderr, "model create: %s\n", err.msg);
	sp.d_text = c.d_text;
	f->b = hw_synth_batch(&sp, 0);
	return f->m && f->b;
}

static void
fix_free(Fix *f)
{
	hw_model_free(f->m);
	hw_batch_free(f->b);
	hw_backend_destroy(f->be);
	free(f->colt);
	free(f->catt);
}

/* Central differences of the loss w.r.t. sampled parameter entries, against
 * the tape's backward.  fp32 forward: with h = 1e-2 * max(1,|w|) the
 * truncation error is O(h^2 f''') and the rounding error ~1e-7*|L|/h ~ 1e-5;
 * we require |fd - g| <= 2e-4 + 2e-2 |g| on at least 97% of entries (a kink
 * of the Huber loss or a max(|q|,eps) can sit inside [w-h, w+h]) and a
 * median relative error below 1e-2 on entries with |g| > 1e-3. */
static void
gradcheck_ord(int stype, int full, int ord_levels)
{
	Fix           f;
	HwError       err = {0};
	HwModelConfig c;
	float         loss, lp, lm;
	int           nbad = 0, ntot = 0;
	HwRng         r;

	hw_model_config_preset(&c, "tiny", &err);
	c.d_text = 32;
	c.seq_len = 24;
	c.batch_size = 2;
	c.full_attention = full;
	/* an option, off in the presets: check its gradient too, on every row
	 * (the synthetic anchor row has no children; the path is the same) */
	c.count_ramps = HW_COUNT_RAMPS_EVERY_ROW;
	CHECK(fix_make(&f, stype, 2, 24, 1, &c));
	/* the ordinal loss: level = nearbyint(z * 1.5 + 2), thresholds 0..ord_levels-1 */
	f.b->ord_levels = (uint8_t) ord_levels;
	f.b->ord_scale = 1.5f;
	f.b->ord_shift = 2.0f;
	CHECK_EQ_INT(hw_model_forward_backward(f.m, f.b, &loss, &err), HW_OK);
	hw_rng_seed(&r, 11);
	for (int i = 0; i < hw_model_n_params(f.m); i++)
	{
		const HwParamInfo *p = hw_model_param_info(f.m, i);
		float             *w = malloc(sizeof(float) * p->numel), *g = malloc(sizeof(float) * p->numel);

		hw_model_get_tensor(f.m, 0, p->name, w, p->numel, &err);
		hw_model_get_tensor(f.m, 1, p->name, g, p->numel, &err);
		for (int s = 0; s < 2; s++)
		{
			int64_t k = (int64_t) (hw_rng_next(&r) % (uint64_t) p->numel);
			float   w0 = w[k], h = 3e-2f * (fabsf(w0) > 1 ? fabsf(w0) : 1), fd;

			w[k] = w0 + h;
			hw_model_set_tensor(f.m, 0, p->name, w, p->numel, &err);
			hw_model_eval(f.m, f.b, &lp, NULL, &err);
			w[k] = w0 - h;
			hw_model_set_tensor(f.m, 0, p->name, w, p->numel, &err);
			hw_model_eval(f.m, f.b, &lm, NULL, &err);
			w[k] = w0;
			hw_model_set_tensor(f.m, 0, p->name, w, p->numel, &err);
			fd = (lp - lm) / (2 * h);
			ntot++;
			if (getenv("HW_GRADCHECK_ALL")) fprintf(stderr, "  %s[%lld]: fd %.6g  backward %.6g\n", p->name, (long long) k, fd, g[k]);
			if (!(fabsf(fd - g[k]) <= 5e-6f + 3e-2f * fabsf(g[k])))
			{
				nbad++;
				if (getenv("HW_GRADCHECK_VERBOSE"))
					fprintf(stderr, "  %s[%lld]: fd %.6g  backward %.6g\n", p->name, (long long) k, fd, g[k]);
			}
		}
		free(w);
		free(g);
	}
	fix_free(&f);
	CHECK_MSG(nbad * 100 <= 3 * ntot, "stype %d: %d of %d sampled gradients disagree with finite differences", stype, nbad, ntot);
}

static void
gradcheck(int stype, int full)
{
	gradcheck_ord(stype, full, 0);
}

UNIT_TEST(model_gradcheck_numerical) { gradcheck(HW_ST_NUMERICAL, 0); }
/* through the ordinal head (head.ord.w, head.ord.b get gradients; the regression head none) */
UNIT_TEST(model_gradcheck_numerical_ordinal) { gradcheck_ord(HW_ST_NUMERICAL, 0, 4); }
UNIT_TEST(model_gradcheck_boolean) { gradcheck(HW_ST_BOOLEAN, 0); }
UNIT_TEST(model_gradcheck_categorical) { gradcheck(HW_ST_CATEGORICAL, 0); }
UNIT_TEST(model_gradcheck_timestamp_full_attention) { gradcheck(HW_ST_TIMESTAMP, 1); }
