/*
 * test_torch_fixture.c: the C model against the independent PyTorch reference.
 *
 * test/fixtures/make_fixture.py (float64 autograd, dense masks, hand-written
 * Muon/AdamW, written from model.h only) stored, per target type: config,
 * batch, frozen f16 tables, weights, loss, every gradient and the parameters
 * after one optimiser step.  This test rebuilds the batch and the model with
 * those weights through the model API and compares.  No torch needed.
 *
 * Tolerances (the reference is float64, the model fp32; the measured worst
 * errors are printed with HW_FIXTURE_VERBOSE=1):
 *  - loss: 1e-5 relative (a handful of fp32 reductions over <= 128 tokens).
 *  - gradients, per tensor: max |g - g_ref| <= 2e-5 * max |g_ref| + 1e-7.
 *    fp32 forward/backward through 2 layers loses ~1e-6 relative to the
 *    tensor's scale (measured <= 1e-6); elementwise relative checks would
 *    fail on entries that are tiny differences of large terms, so the scale
 *    is per tensor.
 *  - post-step parameters: |p - p_ref| <= 1e-6 + 1e-5|p_ref| + tol_step.
 *    AdamW at step 1 moves by lr * g/(|g|+eps) ~ lr * sign(g): where |g_ref|
 *    is below the gradient tolerance its sign is noise, so tol_step = lr
 *    there and 2e-4 * lr elsewhere.  Muon moves by lr*0.2*sqrt(max(r,c))*X
 *    with X from 5 Newton-Schulz iterations, which amplify the small singular
 *    directions of the gradient (up to ~3.4445^5 ~ 490x for tiny ones), so
 *    tol_step = 2e-3 * lr * 0.2 * sqrt(max(r,c)) (0.2% of one step; measured
 *    <= 2e-5 of a step for both optimisers).  A
 *    tensor whose reference gradient is zero within the gradient tolerance
 *    (structurally zero, e.g. attention with a single allowed key) gets a
 *    direction from fp32 noise after Muon's normalisation: there only the
 *    size of the move is checked (<= 1.5 steps).
 */
#include "unit.h"
#include "core/batch.h"
#include "core/model.h"
#include "core/backend.h"

#include <stdlib.h>
#include <string.h>

typedef struct FxRec
{
	char     name[64];
	int      dtype;      /* 0 f32, 1 i32, 2 u16 */
	int      ndim;
	int64_t  dims[4];
	int64_t  n;
	void    *data;
} FxRec;

typedef struct Fixture
{
	int    n;
	FxRec *r;
} Fixture;

static void
fx_free(Fixture *fx)
{
	for (int i = 0; i < fx->n; i++)
		free(fx->r[i].data);
	free(fx->r);
	fx->r = NULL;
	fx->n = 0;
}

/* Returns 0 on success; msg filled on failure. */
static int
fx_load(Fixture *fx, const char *path, char *msg, size_t msglen)
{
	FILE    *f = fopen(path, "rb");
	char     magic[4];
	uint32_t ver, cnt;

	memset(fx, 0, sizeof(*fx));
	if (!f)
	{
		snprintf(msg, msglen, "cannot open %s (run from the repository root)", path);
		return -1;
	}
	if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "HWFX", 4) != 0 ||
		fread(&ver, 4, 1, f) != 1 || ver != 1 || fread(&cnt, 4, 1, f) != 1 || cnt > 100000)
	{
		snprintf(msg, msglen, "%s: bad header", path);
		fclose(f);
		return -1;
	}
	fx->r = calloc(cnt, sizeof(FxRec));
	if (!fx->r)
	{
		fclose(f);
		return -1;
	}
	for (uint32_t i = 0; i < cnt; i++)
	{
		FxRec   *r = &fx->r[i];
		uint16_t nl;
		uint8_t  dt, nd;
		size_t   esz;

		if (fread(&nl, 2, 1, f) != 1 || nl >= sizeof(r->name) || fread(r->name, 1, nl, f) != nl ||
			fread(&dt, 1, 1, f) != 1 || fread(&nd, 1, 1, f) != 1 || nd > 4 || dt > 2)
			goto bad;
		r->name[nl] = 0;
		r->dtype = dt;
		r->ndim = nd;
		r->n = 1;
		for (int d = 0; d < nd; d++)
		{
			uint32_t v;
			if (fread(&v, 4, 1, f) != 1)
				goto bad;
			r->dims[d] = v;
			r->n *= v;
		}
		esz = dt == 2 ? 2 : 4;
		r->data = malloc(esz * (r->n > 0 ? r->n : 1));
		if (!r->data || fread(r->data, esz, r->n, f) != (size_t) r->n)
			goto bad;
		fx->n++;
	}
	fclose(f);
	return 0;
bad:
	snprintf(msg, msglen, "%s: truncated or malformed record %d", path, fx->n);
	fclose(f);
	fx_free(fx);
	return -1;
}

static const FxRec *
fx_get(const Fixture *fx, const char *name)
{
	for (int i = 0; i < fx->n; i++)
		if (strcmp(fx->r[i].name, name) == 0)
			return &fx->r[i];
	return NULL;
}

static double
fx_scalar(const Fixture *fx, const char *name)
{
	const FxRec *r = fx_get(fx, name);
	if (!r || r->n < 1)
		return NAN;
	return r->dtype == 0 ? ((float *) r->data)[0] : r->dtype == 1 ? ((int32_t *) r->data)[0] : NAN;
}

static const int32_t *
fx_i32(const Fixture *fx, const char *name, int64_t n)
{
	const FxRec *r = fx_get(fx, name);
	return (r && r->dtype == 1 && r->n == n) ? r->data : NULL;
}

static const float *
fx_f32(const Fixture *fx, const char *name, int64_t n)
{
	const FxRec *r = fx_get(fx, name);
	return (r && r->dtype == 0 && r->n == n) ? r->data : NULL;
}

static int
verbose(void)
{
	const char *v = getenv("HW_FIXTURE_VERBOSE");
	return v && *v && *v != '0';
}

/* Fills the batch from the fixture; returns NULL with msg on a missing record. */
static HwBatch *
fx_batch(const Fixture *fx, char *msg, size_t msglen)
{
	int      B = (int) fx_scalar(fx, "batch.B"), S = (int) fx_scalar(fx, "batch.S");
	int      R = (int) fx_scalar(fx, "batch.R"), U = (int) fx_scalar(fx, "batch.U");
	int      Dt = (int) fx_scalar(fx, "cfg.d_text");
	int64_t  n = (int64_t) B * S;
	HwBatch *bt;
	const FxRec *te;
	static const char *i32names[] = {
		"semantic_types", "column_ids", "seq_row_ids", "is_null", "bool_values",
		"categorical_embed_ids", "text_embed_ids", "is_target", "is_padding",
		"col_perm", "out_perm", "in_perm"};
	const int32_t *src[12];
	const float   *num, *ts;
	const int32_t *adj;

	if (B <= 0 || S <= 0 || R <= 0 || U < 0 || Dt <= 0)
	{
		snprintf(msg, msglen, "fixture lacks batch dimensions");
		return NULL;
	}
	for (int t = 0; t < 12; t++)
	{
		char nm[64];
		snprintf(nm, sizeof(nm), "batch.%s", i32names[t]);
		src[t] = fx_i32(fx, nm, n);
		if (!src[t])
		{
			snprintf(msg, msglen, "fixture lacks %s [%d,%d]", nm, B, S);
			return NULL;
		}
	}
	num = fx_f32(fx, "batch.numeric_values", n);
	ts = fx_f32(fx, "batch.timestamp_values", n * HW_TS_DIM);
	adj = fx_i32(fx, "batch.fk_adj", (int64_t) B * R * R);
	te = fx_get(fx, "batch.text_batch_embeddings");
	if (!num || !ts || !adj || !te || te->dtype != 2 || te->n != (int64_t) U * Dt)
	{
		snprintf(msg, msglen, "fixture lacks numeric/timestamp values, fk_adj or text embeddings");
		return NULL;
	}
	bt = hw_batch_alloc(B, S, R, U, Dt);
	if (!bt)
		return NULL;
	for (int64_t i = 0; i < n; i++)
	{
		bt->semantic_types[i] = (int8_t) src[0][i];
		bt->column_ids[i] = src[1][i];
		bt->seq_row_ids[i] = (uint16_t) src[2][i];
		bt->is_null[i] = (uint8_t) src[3][i];
		bt->bool_values[i] = (uint8_t) src[4][i];
		bt->categorical_embed_ids[i] = (uint32_t) src[5][i];
		bt->text_embed_ids[i] = (uint32_t) src[6][i];
		bt->is_target[i] = (uint8_t) src[7][i];
		bt->is_padding[i] = (uint8_t) src[8][i];
		bt->col_perm[i] = (uint16_t) src[9][i];
		bt->out_perm[i] = (uint16_t) src[10][i];
		bt->in_perm[i] = (uint16_t) src[11][i];
		bt->numeric_values[i] = num[i];
	}
	memcpy(bt->timestamp_values, ts, sizeof(float) * n * HW_TS_DIM);
	for (int64_t i = 0; i < (int64_t) B * R * R; i++)
		bt->fk_adj[i] = (uint8_t) adj[i];
	if (U > 0)
		memcpy(bt->text_batch_embeddings, te->data, sizeof(uint16_t) * U * Dt);
	bt->target_stype = (uint8_t) fx_scalar(fx, "batch.target_stype");
	bt->task_idx = 0;
	bt->cat_emb_start = (uint32_t) fx_scalar(fx, "batch.cat_emb_start");
	bt->cat_emb_count = (uint32_t) fx_scalar(fx, "batch.cat_emb_count");
	return bt;
}

static void
run_fixture(const char *tag)
{
	static const char *cfg_keys[] = {
		"d_model", "n_heads", "n_layers", "seq_len", "batch_size", "d_text", "d_ff",
		"full_attention", "lr", "warmup_steps", "total_steps", "weight_decay",
		"adam_b1", "adam_b2", "adam_eps", "muon_momentum", "clip_norm", "seed"};
	char          path[256], msg[512] = "";
	Fixture       fx;
	HwError       err = {0};
	HwModelConfig cfg;
	HwBatch      *bt = NULL;
	HwBackend    *be = NULL;
	HwModel      *m = NULL;
	const FxRec  *ct, *kt;
	float         loss = NAN, gnorm = NAN, lr = NAN, lr_ref;
	float        *buf = NULL;
	int           nparams = 0;
	double        loss_ref, gnorm_ref;

	/* HW_FIXTURE_DIR: another fixture directory (checking the test itself) */
	snprintf(path, sizeof(path), "%s/torch_%s.bin",
			 getenv("HW_FIXTURE_DIR") ? getenv("HW_FIXTURE_DIR") : "test/fixtures", tag);
	if (fx_load(&fx, path, msg, sizeof(msg)) != 0)
	{
		unit_fail(__FILE__, __LINE__, "%s", msg);
		return;
	}
	if (hw_model_config_preset(&cfg, "tiny", &err) != HW_OK)
	{
		unit_fail(__FILE__, __LINE__, "preset: %s", err.msg);
		goto done;
	}
	for (size_t i = 0; i < sizeof(cfg_keys) / sizeof(cfg_keys[0]); i++)
	{
		char   nm[64];
		double v;

		snprintf(nm, sizeof(nm), "cfg.%s", cfg_keys[i]);
		v = fx_scalar(&fx, nm);
		if (isnan(v) || hw_model_config_set(&cfg, cfg_keys[i], v, &err) != HW_OK)
		{
			unit_fail(__FILE__, __LINE__, "%s: config %s: %s", tag, cfg_keys[i], err.msg);
			goto done;
		}
	}
	cfg.rel_time = 0;     /* the PyTorch reference model has no relative-time features */
	cfg.link_types = 0;   /* nor link codes */
	cfg.child_counts = 0; /* nor child counts */
	cfg.ordinal_head = 0; /* nor the ordinal head */
	cfg.count_ramps = 0;  /* nor count ramps */
	cfg.head_weight_decay = -1.0f;   /* it decays the heads like every other matrix */
	bt = fx_batch(&fx, msg, sizeof(msg));
	if (!bt)
	{
		unit_fail(__FILE__, __LINE__, "%s: batch: %s", tag, msg);
		goto done;
	}
	ct = fx_get(&fx, "table.col");
	kt = fx_get(&fx, "table.cat");
	if (!ct || !kt || ct->ndim != 2 || kt->ndim != 2 || ct->dtype != 2 || kt->dtype != 2)
	{
		unit_fail(__FILE__, __LINE__, "%s: fixture lacks the f16 tables", tag);
		goto done;
	}
	be = hw_backend_cpu_create(0, &err);
	if (!be)
	{
		unit_fail(__FILE__, __LINE__, "backend: %s", err.msg);
		goto done;
	}
	m = hw_model_create(&cfg, ct->data, (int32_t) ct->dims[0], kt->data, (int32_t) kt->dims[0], be, &err);
	if (!m)
	{
		unit_fail(__FILE__, __LINE__, "%s: hw_model_create: %s", tag, err.msg);
		goto done;
	}
	buf = malloc(sizeof(float) * (hw_model_numel(m) + 1));

	/* every fixture parameter exists with the same shape and optimiser; set it */
	for (int i = 0; i < fx.n; i++)
	{
		const FxRec       *r = &fx.r[i], *oi;
		const char        *name;
		const HwParamInfo *pi;
		char               nm[80];
		int                idx;

		if (strncmp(r->name, "param.", 6) != 0)
			continue;
		name = r->name + 6;
		nparams++;
		idx = hw_model_param_index(m, name);
		if (idx < 0)
		{
			unit_fail(__FILE__, __LINE__, "%s: model has no parameter %s", tag, name);
			goto done;
		}
		pi = hw_model_param_info(m, idx);
		if (pi->numel != r->n || pi->shape[0] != r->dims[0] ||
			(r->ndim == 2 && pi->shape[1] != r->dims[1]))
		{
			unit_fail(__FILE__, __LINE__, "%s: %s shape [%d,%d] in the model, [%lld,%lld] in the reference",
					  tag, name, pi->shape[0], pi->ndim == 2 ? pi->shape[1] : 1,
					  (long long) r->dims[0], (long long) (r->ndim == 2 ? r->dims[1] : 1));
			goto done;
		}
		snprintf(nm, sizeof(nm), "optinfo.%s", name);
		oi = fx_get(&fx, nm);
		if (!oi || oi->n != 2 || ((int32_t *) oi->data)[0] != pi->opt || ((int32_t *) oi->data)[1] != pi->decay)
		{
			unit_fail(__FILE__, __LINE__, "%s: %s optimiser %d decay %d in the model, %d %d in the reference",
					  tag, name, pi->opt, pi->decay, oi ? ((int32_t *) oi->data)[0] : -1,
					  oi ? ((int32_t *) oi->data)[1] : -1);
			goto done;
		}
		if (hw_model_set_tensor(m, 0, name, r->data, r->n, &err) != HW_OK)
		{
			unit_fail(__FILE__, __LINE__, "%s: set %s: %s", tag, name, err.msg);
			goto done;
		}
	}
	if (nparams != hw_model_n_params(m))
	{
		unit_fail(__FILE__, __LINE__, "%s: model has %d parameters, reference %d", tag,
				  hw_model_n_params(m), nparams);
		goto done;
	}

	/* loss and gradients */
	if (hw_model_forward_backward(m, bt, &loss, &err) != HW_OK)
	{
		unit_fail(__FILE__, __LINE__, "%s: forward_backward: %s", tag, err.msg);
		goto done;
	}
	loss_ref = fx_scalar(&fx, "loss");
	if (verbose())
		printf("    %s: loss %.7f ref %.7f\n", tag, loss, loss_ref);
	if (!(fabs(loss - loss_ref) <= 1e-5 * fabs(loss_ref) + 1e-6))
	{
		unit_fail(__FILE__, __LINE__, "%s: loss %.7f, reference %.7f", tag, loss, loss_ref);
		goto done;
	}
	for (int i = 0; i < fx.n; i++)
	{
		const FxRec *r = &fx.r[i];
		const float *ref;
		double       scale = 0, worst = 0;

		if (strncmp(r->name, "grad.", 5) != 0)
			continue;
		ref = r->data;
		if (hw_model_get_tensor(m, 1, r->name + 5, buf, r->n, &err) != HW_OK)
		{
			unit_fail(__FILE__, __LINE__, "%s: get grad %s: %s", tag, r->name + 5, err.msg);
			goto done;
		}
		for (int64_t j = 0; j < r->n; j++)
			scale = fmax(scale, fabs(ref[j]));
		for (int64_t j = 0; j < r->n; j++)
		{
			double e = fabs((double) buf[j] - ref[j]);
			if (!(e <= worst))
				worst = e;
		}
		if (verbose())
			printf("    %s: %-24s max|g| %.3e  max err %.3e  (%.2e of scale)\n", tag, r->name,
				   scale, worst, worst / (scale + 1e-30));
		if (!(worst <= 2e-5 * scale + 1e-7))
		{
			unit_fail(__FILE__, __LINE__, "%s: %s max error %.3e for max |g| %.3e", tag, r->name, worst, scale);
			goto done;
		}
	}

	/* one optimiser step */
	if (hw_model_optimizer_step(m, &gnorm, &lr, &err) != HW_OK)
	{
		unit_fail(__FILE__, __LINE__, "%s: optimizer_step: %s", tag, err.msg);
		goto done;
	}
	gnorm_ref = fx_scalar(&fx, "grad_norm");
	lr_ref = (float) fx_scalar(&fx, "lr");
	if (!(fabs(gnorm - gnorm_ref) <= 1e-4 * gnorm_ref) || !(fabs(lr - lr_ref) <= 1e-7 * lr_ref))
	{
		unit_fail(__FILE__, __LINE__, "%s: grad_norm %.7g lr %.7g, reference %.7g %.7g", tag, gnorm, lr,
				  gnorm_ref, lr_ref);
		goto done;
	}
	for (int i = 0; i < fx.n; i++)
	{
		const FxRec       *r = &fx.r[i], *gr;
		const HwParamInfo *pi;
		const float       *ref, *g;
		char               nm[80];
		double             gscale = 0, worst = 0, stepscale;

		if (strncmp(r->name, "post.", 5) != 0)
			continue;
		ref = r->data;
		pi = hw_model_param_info(m, hw_model_param_index(m, r->name + 5));
		snprintf(nm, sizeof(nm), "grad.%s", r->name + 5);
		gr = fx_get(&fx, nm);
		g = gr->data;
		for (int64_t j = 0; j < r->n; j++)
			gscale = fmax(gscale, fabs(g[j]));
		if (hw_model_get_tensor(m, 0, r->name + 5, buf, r->n, &err) != HW_OK)
		{
			unit_fail(__FILE__, __LINE__, "%s: get %s: %s", tag, r->name + 5, err.msg);
			goto done;
		}
		stepscale = pi->opt == HW_OPT_MUON
			? lr_ref * 0.2 * sqrt((double) (pi->shape[0] > pi->shape[1] ? pi->shape[0] : pi->shape[1]))
			: lr_ref;
		for (int64_t j = 0; j < r->n; j++)
		{
			double tol_step, e = fabs((double) buf[j] - ref[j]);

			if (pi->opt == HW_OPT_MUON)
				tol_step = gscale <= 1e-7 ? 1.5 * stepscale : 2e-3 * stepscale;
			else
				tol_step = fabs(g[j]) <= 2e-5 * gscale + 1e-7 ? lr_ref : 2e-4 * lr_ref;
			if (!(e <= 1e-6 + 1e-5 * fabs(ref[j]) + tol_step))
			{
				unit_fail(__FILE__, __LINE__, "%s: %s[%lld] = %.8g after the step, reference %.8g (tol %.3g)",
						  tag, r->name + 5, (long long) j, buf[j], ref[j],
						  1e-6 + 1e-5 * fabs(ref[j]) + tol_step);
				goto done;
			}
			if (!(e / stepscale <= worst))
				worst = e / stepscale;
		}
		if (verbose())
			printf("    %s: %-24s post-step max err %.2e of one step\n", tag, r->name, worst);
	}

done:
	free(buf);
	if (m)
		hw_model_free(m);
	if (be)
		hw_backend_destroy(be);
	if (bt)
		hw_batch_free(bt);
	fx_free(&fx);
}

UNIT_TEST(torch_fixture_numerical) { run_fixture("numerical"); }
UNIT_TEST(torch_fixture_boolean) { run_fixture("boolean"); }
UNIT_TEST(torch_fixture_categorical) { run_fixture("categorical"); }
UNIT_TEST(torch_fixture_timestamp) { run_fixture("timestamp"); }
