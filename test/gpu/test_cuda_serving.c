/*
 * test_cuda_serving.c: the serving forward on the GPU (bulk prediction,
 * headwater.serving_device).  A frozen model on the CUDA backend (its own
 * device copy of the parameters) predicts what the CPU's frozen model
 * predicts, within the bounds of its GEMM mode, and the same bits on a
 * second run; the host buffer it was made from may go at once.
 */
#include "gpu_test.h"

/* predictions of `m` on batches first..first+nb-1 of sp (the last one of
 * `last`, fewer sequences): value and p_null per sequence into val and pn,
 * [nb * B] each (a short batch's missing rows left as they are) */
static int
predict_batches(HwModel *m, HwSynthSpec *sp, HwSynthSpec *last, int first, int nb, float *val, float *pn)
{
	for (int i = 0; i < nb; i++)
	{
		HwSynthSpec   *bs = i == nb - 1 ? last : sp;
		HwBatch       *b = hw_synth_batch(bs, (uint64_t) (first + i));
		HwPredictions *p = hw_predictions_alloc(sp->B, HW_SYNTH_NCAT);
		HwError        e = {0};
		int            rc = b && p ? hw_model_predict(m, b, p, &e) : HW_ERR_NOMEM;

		if (rc == HW_OK)
		{
			memcpy(val + i * sp->B, p->value, sizeof(float) * bs->B);
			memcpy(pn + i * sp->B, p->p_null, sizeof(float) * bs->B);
		}
		else
			printf("  predict (%s): %s\n", hw_model_backend(m)->ops->name, e.msg);
		hw_predictions_free(p);
		hw_batch_free(b);
		if (rc != HW_OK)
			return 0;
	}
	return 1;
}

/* largest |gpu - cpu| / (atol + rtol |cpu|) over n values (> 1: out of bounds) */
static double
worst_ratio(const float *c, const float *g, int n, double atol, double rtol)
{
	double worst = 0;

	for (int i = 0; i < n; i++)
	{
		double r = fabs((double) g[i] - c[i]) / (atol + rtol * fabs(c[i]));

		if (!(r <= worst))
			worst = r;          /* NaN counts as out of bounds */
	}
	return worst;
}

static HwModel *
frozen_on(HwBackend *be, const HwModelConfig *c, const float *params, int64_t n, const uint16_t *ct,
		  const uint16_t *ca)
{
	HwError  err = {0};
	HwModel *m = hw_model_create_frozen(c, params, n, ct, HW_SYNTH_NCOLS, ca, HW_SYNTH_NCAT, be, &err);

	if (!m)
		printf("  frozen model (%s): %s\n", be->ops->name, err.msg);
	return m;
}

void
test_serving(int B, int S)
{
	char name[120];

	snprintf(name, sizeof(name), "serving forward on the GPU against the CPU (tiny, B %d, S %d, gemm bf16 and fp32)", B, S);
	TEST_BEGIN(name);
	enum { NB = 3 };
	/* the last batch is short (as a request's last, or the serving
	 * worker's): B - 1 sequences on a model made for B */
	HwSynthSpec short_sp = { .B = B - 1, .S = S, .d_text = 32, .target_stype = HW_ST_NUMERICAL, .seed = 29 };
	uint16_t   *ct = NULL, *ca = NULL;
	HwModel    *trained = make_model(cpu, "tiny", B, S, HW_ST_NUMERICAL, &ct, &ca);
	HwSynthSpec sp = { .B = B, .S = S, .d_text = 32, .target_stype = HW_ST_NUMERICAL, .seed = 23 };
	float      *v[4], *p[4];
	int         ok = trained != NULL;

	for (int k = 0; k < 4; k++)
	{
		v[k] = calloc((size_t) NB * B, sizeof(float));
		p[k] = calloc((size_t) NB * B, sizeof(float));
	}
	for (int s = 0; ok && s < 3; s++)
	{
		HwBatch     *b = hw_synth_batch(&sp, (uint64_t) s);
		HwStepResult r;
		HwError      e = {0};

		ok = hw_model_train_step(trained, b, &r, &e) == HW_OK;
		hw_batch_free(b);
	}
	if (ok)
	{
		HwModelConfig c = *hw_model_config(trained);
		int64_t       n = hw_model_numel(trained);
		float        *host = malloc(sizeof(float) * (size_t) n);
		float        *kept = malloc(sizeof(float) * (size_t) n);

		hw_model_get_flat(trained, 0, kept);
		HwModel *mc = frozen_on(cpu, &c, kept, n, ct, ca);

		/* k = 1, 2: two bf16 runs (each a fresh model); k = 3: fp32 GEMMs */
		ok = mc && predict_batches(mc, &sp, &short_sp, 10, NB, v[0], p[0]);
		for (int k = 1; ok && k < 4; k++)
		{
			hw_backend_cuda_set_gemm_mode(k == 3 ? "fp32" : "bf16");
			memcpy(host, kept, sizeof(float) * (size_t) n);
			HwModel *mg = frozen_on(gpu, &c, host, n, ct, ca);

			memset(host, 0xff, sizeof(float) * (size_t) n);     /* the GPU holds its own copy */
			ok = mg && predict_batches(mg, &sp, &short_sp, 10, NB, v[k], p[k]);
			if (mg)
				hw_model_free(mg);
		}
		hw_backend_cuda_set_gemm_mode("bf16");
		if (mc)
			hw_model_free(mc);
		free(host);
		free(kept);
	}
	if (ok)
	{
		int    same = memcmp(v[1], v[2], sizeof(float) * NB * B) == 0 && memcmp(p[1], p[2], sizeof(float) * NB * B) == 0;
		/* bf16 operands (8 bits of mantissa) through 2 layers: ~5e-3 of a
		 * z-scored value at most (~3e-4 seen); fp32 GEMMs: ~1e-5 */
		double rb = worst_ratio(v[0], v[1], NB * B, 5e-3, 5e-3), rbp = worst_ratio(p[0], p[1], NB * B, 2e-3, 0);
		double rf = worst_ratio(v[0], v[3], NB * B, 1e-4, 1e-4), rfp = worst_ratio(p[0], p[3], NB * B, 1e-5, 0);

		printf("  %s two GPU runs bit-identical\n", same ? "ok  " : "FAIL");
		printf("  %s bf16 GEMMs vs CPU: worst value %.3f, p_null %.3f of the bound\n", rb <= 1 && rbp <= 1 ? "ok  " : "FAIL",
			   rb, rbp);
		printf("  %s fp32 GEMMs vs CPU: worst value %.3f, p_null %.3f of the bound\n", rf <= 1 && rfp <= 1 ? "ok  " : "FAIL",
			   rf, rfp);
		ok = same && rb <= 1 && rbp <= 1 && rf <= 1 && rfp <= 1;
	}
	EXPECT(ok);
	EXPECT(gpu_ok("serving"));
	for (int k = 0; k < 4; k++)
	{
		free(v[k]);
		free(p[k]);
	}
	if (trained)
		hw_model_free(trained);
	free(ct);
	free(ca);
	TEST_END();
}
