/*
 * model_create.c: creating and freeing a model: parameter and optimiser buffers,
 * the frozen tables, the activation arena and its layout.
 */

#include "core/model_internal.h"
#include "core/optim.h"

#include <stdlib.h>
#include <string.h>

/*
 * A frozen model never runs backward, so nothing of a sublayer is needed
 * after it: one set of sublayer buffers serves every sublayer, and the
 * residual stream alternates between two [N,D] buffers (a sublayer reads
 * x_in and writes the next one's, never the same buffer).  Touched memory
 * per forward drops from ~(L*(A+1)) sublayers' activations to one's (on
 * small, ~22 MB to ~3 MB for a 256-cell sequence); the arithmetic is the
 * same, so are the results.
 */
static void
layout_frozen_sublayers(HwModel *m, HwArena *a)
{
	int64_t N = m->Nmax, D = m->D, H = m->H, F = m->F, B = m->Bmax, S = m->Smax;
	SubAct  one = {0}, ffn = {0};
	float  *xr[2];
	int     k = 0;

	xr[0] = hw_arena_floats(a, N * D);
	xr[1] = hw_arena_floats(a, N * D);
	one.rstd = hw_arena_floats(a, N);
	one.qkvg = hw_arena_floats(a, N * 4 * D);
	one.qs = hw_arena_floats(a, N * D);
	one.kn = hw_arena_floats(a, N * D);
	one.v = hw_arena_floats(a, N * D);
	one.qnorm = hw_arena_floats(a, N * H);
	one.knorm = hw_arena_floats(a, N * H);
	one.att = hw_arena_floats(a, N * D);
	one.lse = hw_arena_floats(a, B * H * S);
	one.o = hw_arena_floats(a, N * D);
	ffn.rstd = one.rstd;
	ffn.qkvg = hw_arena_floats(a, N * 2 * F);
	/* x_in in forward order: the attention sublayers of layer l, then its ffn */
	for (int l = 0; l < m->L; l++)
	{
		for (int s = 0; s < m->A; s++)
		{
			m->sa[l * m->A + s] = one;
			m->sa[l * m->A + s].x_in = xr[k++ % 2];
		}
		m->fa[l] = ffn;
		m->fa[l].x_in = xr[k++ % 2];
	}
	m->x_final = xr[k % 2];
}

static void
layout_activations(HwModel *m, HwArena *a)
{
	int64_t N = m->Nmax, D = m->D, H = m->H, F = m->F, B = m->Bmax, S = m->Smax, Dt = m->Dt;

	if (m->frozen)
		layout_frozen_sublayers(m, a);
	for (int i = 0; i < m->L * m->A && !m->frozen; i++)
	{
		SubAct *s = &m->sa[i];

		s->x_in = hw_arena_floats(a, N * D);
		s->rstd = hw_arena_floats(a, N);
		s->qkvg = hw_arena_floats(a, N * 4 * D);
		s->qs = hw_arena_floats(a, N * D);
		s->kn = hw_arena_floats(a, N * D);
		s->v = hw_arena_floats(a, N * D);
		s->qnorm = hw_arena_floats(a, N * H);
		s->knorm = hw_arena_floats(a, N * H);
		s->att = hw_arena_floats(a, N * D);
		s->lse = hw_arena_floats(a, B * H * S);
		s->o = hw_arena_floats(a, N * D);
	}
	for (int l = 0; l < m->L && !m->frozen; l++)
	{
		m->fa[l].x_in = hw_arena_floats(a, N * D);
		m->fa[l].rstd = hw_arena_floats(a, N);
		m->fa[l].qkvg = hw_arena_floats(a, N * 2 * F);
	}
	if (!m->frozen)
		m->x_final = hw_arena_floats(a, N * D);
	m->e = hw_arena_floats(a, N * D);
	m->rstd0 = hw_arena_floats(a, N);
	m->xn = hw_arena_floats(a, N * D);
	m->dxn = hw_arena_floats(a, N * D);
	m->dqkvg = hw_arena_floats(a, N * 4 * D > N * 2 * F ? N * 4 * D : N * 2 * F);
	m->dgu = m->dqkvg;      /* the FFN's dgu and the attention's dqkvg are never live together */
	m->dqs = hw_arena_floats(a, N * D);
	m->dkn = hw_arena_floats(a, N * D);
	m->dv = hw_arena_floats(a, N * D);
	m->datt = hw_arena_floats(a, N * D);
	m->dO = hw_arena_floats(a, N * D);
	m->hbuf = hw_arena_floats(a, N * F);
	m->dhbuf = hw_arena_floats(a, N * F);
	m->dx = hw_arena_floats(a, N * D);
	m->de = hw_arena_floats(a, N * D);
	m->d_stype = hw_arena_bytes(a, N);
	m->d_col = hw_arena_bytes(a, N * 4);
	m->d_cat_local = hw_arena_bytes(a, N * 4);
	m->d_text_local = hw_arena_bytes(a, N * 4);
	m->d_is_null = hw_arena_bytes(a, N);
	m->d_is_target = hw_arena_bytes(a, N);
	m->d_bool = hw_arena_bytes(a, N);
	m->d_num = hw_arena_floats(a, N);
	m->d_ts = hw_arena_floats(a, N * 15);
	m->d_trel = m->cfg.rel_time ? hw_arena_floats(a, N * HW_REL_TIME_DIM) : NULL;
	m->d_link = m->cfg.link_types ? hw_arena_floats(a, N * HW_LINK_DIM) : NULL;
	m->d_cnt = m->cfg.child_counts ? hw_arena_floats(a, N * HW_CNT_DIM) : NULL;
	m->d_tidx = hw_arena_bytes(a, B * 4);
	m->d_tcat = hw_arena_bytes(a, B * 4);
	m->d_tnull = hw_arena_bytes(a, B);
	m->d_tbool = hw_arena_bytes(a, B);
	m->d_tnum = hw_arena_floats(a, B);
	m->d_tts = hw_arena_floats(a, B * 15);
	m->text_f32 = hw_arena_floats(a, N * Dt);
	m->cat_rows = hw_arena_floats(a, N * Dt);
	m->catproj = hw_arena_floats(a, N * D);
	m->textproj = hw_arena_floats(a, N * D);
	m->dcatproj = hw_arena_floats(a, N * D);
	m->dtextproj = hw_arena_floats(a, N * D);
	m->colproj = hw_arena_floats(a, (int64_t) m->ncols * D);
	m->dcolproj = hw_arena_floats(a, (int64_t) m->ncols * D);
	m->xt = hw_arena_floats(a, B * D);
	m->att_t = hw_arena_floats(a, B * D);
	m->qg_t = hw_arena_floats(a, B * 4 * D);
	m->x_t = hw_arena_floats(a, B * D);
	m->datt_t = hw_arena_floats(a, B * D);
	m->dqg_t = hw_arena_floats(a, B * 4 * D);
	m->dx_t = hw_arena_floats(a, B * D);
	m->d_iota = hw_arena_bytes(a, B * 4);
	m->rstdf = hw_arena_floats(a, B);
	m->hf = hw_arena_floats(a, B * D);
	m->dhf = hw_arena_floats(a, B * D);
	m->dxt = hw_arena_floats(a, B * D);
	m->Z = hw_arena_floats(a, B * HW_HEAD_Z(D));
	m->dZ = hw_arena_floats(a, B * HW_HEAD_Z(D));
	m->logits = hw_arena_floats(a, B * m->Kmax);
	m->dlogits = hw_arena_floats(a, B * m->Kmax);
	m->catblock = hw_arena_floats(a, (int64_t) m->Kmax * Dt);
	m->E = hw_arena_floats(a, (int64_t) m->Kmax * D);
	m->dE = hw_arena_floats(a, (int64_t) m->Kmax * D);
	m->lossb = hw_arena_floats(a, B);
	m->Zo = hw_arena_floats(a, B * HW_ORD_LEVELS);
	m->dZo = hw_arena_floats(a, B * HW_ORD_LEVELS);
}

void
model_free_plans(HwModel *m)
{
	for (int s = 0; s < MAX_SUB; s++)
		if (m->plans[s])
		{
			m->be->ops->attn_plan_free(m->be, m->plans[s]);
			m->plans[s] = NULL;
		}
}

void
hw_model_free(HwModel *m)
{
	HwBackend *be;

	if (!m)
		return;
	be = m->be;
	model_free_plans(m);
	model_free_packed(m);
	hw_arena_release(&m->arena);
	if (m->params_owned)
		be->ops->free(be, m->params);
	if (!m->frozen)
	{
		be->ops->free(be, m->params);
		be->ops->free(be, m->grads);
		be->ops->free(be, m->m1);
		be->ops->free(be, m->m2);
		be->ops->free(be, m->muon_work);
		be->ops->free(be, m->ema);
	}
	be->ops->free(be, m->col_table);
	be->ops->free(be, m->cat_table);
	be->ops->free(be, m->d_cramp);
	be->ops->free(be, m->d_cramp_y);
	be->ops->free(be, m->d_cramp_idx);
	be->ops->free(be, m->d_reach_cell);
	free(m->h_reach_off);
	free(m->h_reach_cell);
	hw_params_free(&m->pt);
	hw_tape_free(&m->tape);
	free(m->sp);
	free(m->fp);
	free(m->sa);
	free(m->fa);
	free(m->h_i32a);
	free(m->h_trel);
	free(m->h_ts);
	free(m->h_link);
	free(m->h_cnt);
	free(m->h_cramp);
	free(m->h_cramp_idx);
	free(m->h_i32b);
	free(m->h_catmap);
	free(m->h_tidx);
	free(m->h_tcat);
	free(m->h_f32);
	free(m->h_u8a);
	free(m->h_u8b);
	free(m);
}

/* the dimensions of a model of cfg over ncols columns and ncat categories */
static void
set_dims(HwModel *m, const HwModelConfig *cfg, int32_t ncols, int32_t ncat)
{
	m->cfg = *cfg;
	m->D = cfg->d_model;
	m->H = cfg->n_heads;
	m->dh = m->D / m->H;
	m->F = cfg->d_ff;
	m->L = cfg->n_layers;
	m->A = cfg->full_attention ? 4 : 3;
	m->Dt = cfg->d_text;
	m->Bmax = cfg->batch_size;
	m->Smax = cfg->seq_len;
	m->Nmax = cfg->batch_size * cfg->seq_len;
	m->ncols = ncols;
	m->ncat = ncat;
	m->Kmax = ncat > 0 ? ncat : 1;
}

/* the per-sublayer tables: parameter offsets and activations */
static int
alloc_sublayer_tables(HwModel *m)
{
	m->sp = calloc((size_t) m->L * m->A, sizeof(SubParams));
	m->fp = calloc((size_t) m->L, sizeof(FfnParams));
	m->sa = calloc((size_t) m->L * m->A, sizeof(SubAct));
	m->fa = calloc((size_t) m->L, sizeof(SubAct));
	return m->sp && m->fp && m->sa && m->fa;
}

int64_t
hw_model_memory_bytes(const HwModelConfig *cfg_in, int32_t ncols, int32_t ncat)
{
	HwModelConfig c = *cfg_in;
	HwModel       m;
	HwArena       meas;
	int64_t       total = -1;

	if (hw_model_config_finish(&c, NULL) != HW_OK || ncols <= 0)
		return -1;
	memset(&m, 0, sizeof(m));
	set_dims(&m, &c, ncols, ncat);
	if (alloc_sublayer_tables(&m) && model_build_params(&m))
	{
		hw_arena_measure(&meas, NULL);
		layout_activations(&m, &meas);
		/* params, grads, two moments, and the parameter average when kept */
		total = (int64_t) meas.used + (c.ema_decay > 0 ? 5 : 4) * (int64_t) sizeof(float) * m.pt.numel +
			(int64_t) sizeof(float) * hw_muon_work_floats(m.pt.p, m.pt.n) +
			(int64_t) sizeof(float) * ncols * m.Dt + (int64_t) sizeof(uint16_t) * ncat * m.Dt;
	}
	hw_params_free(&m.pt);
	free(m.sp);
	free(m.fp);
	free(m.sa);
	free(m.fa);
	return total;
}

/* host scratch for preparing a batch (sized for the largest batch) */
static int
alloc_host_scratch(HwModel *m)
{
	const HwModelConfig *cfg = &m->cfg;
	int                  ncat = m->ncat;

	m->h_i32a = malloc(sizeof(int32_t) * m->Nmax);
	m->h_i32b = malloc(sizeof(int32_t) * m->Nmax);
	m->h_catmap = malloc(sizeof(int32_t) * (ncat > 0 ? ncat : 1));
	m->h_tidx = malloc(sizeof(int32_t) * m->Bmax);
	m->h_tcat = malloc(sizeof(int32_t) * m->Bmax);
	m->h_f32 = malloc(sizeof(float) * (size_t) m->Nmax * (m->Dt > 16 ? m->Dt : 16));
	m->h_u8a = malloc(m->Bmax);
	m->h_u8b = malloc(m->Bmax);
	m->h_trel = cfg->rel_time ? malloc(sizeof(float) * (size_t) m->Nmax * HW_REL_TIME_DIM) : NULL;
	m->h_ts = cfg->absolute_time ? NULL : malloc(sizeof(float) * (size_t) m->Nmax * HW_TS_DIM);
	m->h_link = cfg->link_types ? malloc(sizeof(float) * (size_t) m->Nmax * HW_LINK_DIM) : NULL;
	m->h_cnt = cfg->child_counts ? malloc(sizeof(float) * (size_t) m->Nmax * HW_CNT_DIM) : NULL;
	return !((cfg->rel_time && !m->h_trel) || (!cfg->absolute_time && !m->h_ts) || (cfg->link_types && !m->h_link) ||
			 (cfg->child_counts && !m->h_cnt) ||
			 !m->h_i32a || !m->h_i32b || !m->h_catmap ||
			 !m->h_tidx || !m->h_tcat || !m->h_f32 || !m->h_u8a || !m->h_u8b);
}

/* parameters, gradients, moments, Newton-Schulz work and (ema_decay > 0)
 * the average on the device; gradients and moments zeroed */
static int
alloc_training_buffers(HwModel *m, size_t pbytes)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;

	m->params = o->alloc(be, pbytes);
	m->grads = o->alloc(be, pbytes);
	m->m1 = o->alloc(be, pbytes);
	m->m2 = o->alloc(be, pbytes);
	m->muon_work = o->alloc(be, sizeof(float) * (size_t) (hw_muon_work_floats(m->pt.p, m->pt.n) + 1));
	m->ema = m->cfg.ema_decay > 0 ? o->alloc(be, pbytes) : NULL;
	if (!m->params || !m->grads || !m->m1 || !m->m2 || !m->muon_work || (m->cfg.ema_decay > 0 && !m->ema))
		return 0;
	o->memset(be, m->grads, 0, pbytes);
	o->memset(be, m->m1, 0, pbytes);
	o->memset(be, m->m2, 0, pbytes);
	return 1;
}

/* initial parameters (unless frozen: the caller's) and the frozen tables
 * (column names f16 -> f32 on the host, categories as f16) to the device */
static int
upload_initial_values(HwModel *m, size_t pbytes, const uint16_t *col_table, const uint16_t *cat_table)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	size_t              colbytes = sizeof(float) * (size_t) m->ncols * m->Dt;
	float              *host = malloc(!m->frozen && pbytes > colbytes ? pbytes : colbytes);

	if (!host)
		return 0;
	if (!m->frozen)
	{
		model_init_params(m, host);
		o->memcpy_h2d(be, m->params, host, pbytes);
		if (m->ema)
			o->memcpy_h2d(be, m->ema, host, pbytes);     /* the average starts at the initial parameters */
	}
	for (int64_t i = 0; i < (int64_t) m->ncols * m->Dt; i++)
		host[i] = hw_f16_to_f32(col_table[i]);
	o->memcpy_h2d(be, m->col_table, host, colbytes);
	free(host);
	if (m->ncat > 0)
		o->memcpy_h2d(be, m->cat_table, cat_table, sizeof(uint16_t) * (size_t) m->ncat * m->Dt);
	return 1;
}

/* the activation arena: sized by a measuring pass, then laid out for real */
static int
create_arena(HwModel *m, HwError *err)
{
	HwArena meas;

	hw_arena_measure(&meas, m->be);
	layout_activations(m, &meas);
	if (hw_arena_init(&m->arena, m->be, meas.used, err) != HW_OK)
	{
		model_backend_cause(m->be, HW_ERR_NOMEM, err);
		return HW_ERR_NOMEM;
	}
	layout_activations(m, &m->arena);
	{
		int32_t *iota = malloc(sizeof(int32_t) * m->Bmax);

		if (!iota)
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory creating the model");
		for (int b = 0; b < m->Bmax; b++)
			iota[b] = b;
		m->be->ops->memcpy_h2d(m->be, m->d_iota, iota, sizeof(int32_t) * m->Bmax);
		free(iota);
	}
	return HW_OK;
}

/* hw_model_create and hw_model_create_frozen (frozen_params != NULL: no
 * training buffers, the parameters are the caller's memory). */
static HwModel *
model_create(const HwModelConfig *cfg_in, const uint16_t *col_table, int32_t ncols,
			 const uint16_t *cat_table, int32_t ncat, HwBackend *be,
			 const float *frozen_params, int64_t frozen_numel, HwError *err)
{
	HwModel            *m;
	HwModelConfig       cfg = *cfg_in;
	const HwBackendOps *o = be->ops;
	size_t              pbytes;

	if (hw_model_config_finish(&cfg, err) != HW_OK)
		return NULL;
	if (ncols <= 0 || !col_table || ncat < 0 || (ncat > 0 && !cat_table))
	{
		hw_error_set(err, HW_ERR_INVALID, "model needs a column-embedding table (ncols %d) and, if ncat > 0, a category table", ncols);
		return NULL;
	}
	/* shapes the backend cannot run fail here, not as a NaN at the first step */
	if (o->check_shapes &&
		o->check_shapes(be, cfg.batch_size, cfg.seq_len, cfg.d_model, cfg.n_heads, cfg.d_ff, err) != HW_OK)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto nomem;
	set_dims(m, &cfg, ncols, ncat);
	m->be = be;
	hw_tape_init(&m->tape);
	hw_rng_seed(&m->rng, cfg.seed);
	if (!alloc_sublayer_tables(m) || !alloc_host_scratch(m) || !model_build_params(m))
		goto nomem;

	pbytes = sizeof(float) * (size_t) m->pt.numel;
	if (frozen_params)
	{
		if (frozen_numel != m->pt.numel)
		{
			hw_error_set(err, HW_ERR_INVALID, "frozen parameters hold %lld floats, the model has %lld",
						 (long long) frozen_numel, (long long) m->pt.numel);
			hw_model_free(m);
			return NULL;
		}
		m->frozen = 1;
		if (strcmp(o->name, "cpu") == 0)
			m->params = (float *) frozen_params;     /* read only: forward never writes parameters */
		else if ((m->params = o->alloc(be, pbytes)) == NULL)
			goto nomem;
		else
		{
			/* a device computes in its own memory: one copy, the model's */
			m->params_owned = 1;
			o->memcpy_h2d(be, m->params, frozen_params, pbytes);
		}
	}
	else if (!alloc_training_buffers(m, pbytes))
		goto nomem;
	m->col_table = o->alloc(be, sizeof(float) * (size_t) ncols * m->Dt);
	m->cat_table = o->alloc(be, sizeof(uint16_t) * (size_t) (ncat > 0 ? ncat : 1) * m->Dt);
	if (!m->col_table || !m->cat_table || !upload_initial_values(m, pbytes, col_table, cat_table))
		goto nomem;
	/* a failed arena, upload or device allocation surfaces here, with its cause */
	if (create_arena(m, err) != HW_OK || model_backend_cause(be, HW_OK, err) != HW_OK)
	{
		hw_model_free(m);
		return NULL;
	}
	return m;

nomem:
	/* a device allocation that failed on the backend says why (how much
	 * memory was needed and free) */
	model_backend_cause(be, hw_error_set(err, HW_ERR_NOMEM, "out of memory creating the model"), err);
	hw_model_free(m);
	return NULL;
}

HwModel *
hw_model_create(const HwModelConfig *cfg, const uint16_t *col_table, int32_t ncols,
				const uint16_t *cat_table, int32_t ncat, HwBackend *be, HwError *err)
{
	return model_create(cfg, col_table, ncols, cat_table, ncat, be, NULL, 0, err);
}

HwModel *
hw_model_create_frozen(const HwModelConfig *cfg, const float *params, int64_t numel,
					   const uint16_t *col_table, int32_t ncols,
					   const uint16_t *cat_table, int32_t ncat, HwBackend *be, HwError *err)
{
	if (!params)
	{
		hw_error_set(err, HW_ERR_INVALID, "a frozen model needs its parameters (host memory)");
		return NULL;
	}
	return model_create(cfg, col_table, ncols, cat_table, ncat, be, params, numel, err);
}

int
hw_model_is_frozen(const HwModel *m)
{
	return m->frozen;
}
