/*
 * model.c: the Relational Transformer (contract and arithmetic in model.h).
 *
 * Memory: parameters, gradients and both optimiser moments are four flat
 * device buffers with one layout; activations live in one arena sized at
 * creation for (batch_size, seq_len), so a step allocates nothing.  Per
 * sublayer we keep what backward needs (input x, rstd, the fused projection
 * qkvg, qs/kn/v, attention output and lse, projected output o); the normed
 * input xn and the SwiGLU product are recomputed in backward (cheap,
 * memory-bound) to save two [N,D]/[N,F] buffers per sublayer.
 *
 * Every op runs its forward through the backend and appends a tape record
 * (tape.h) holding the pointers its backward needs; backward is the reverse
 * walk of the tape.  Gradient buffers of activations are shared scratch
 * (each is consumed before the next sublayer's backward overwrites it); the
 * residual-stream gradient dx is one running buffer.
 */
#include "model.h"
#include "timeenc.h"
#include "optim.h"
#include "tape.h"
#include "tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SUB 4
static const char *const sub_names[MAX_SUB] = {"out", "in", "col", "full"};
static const HwMaskKind sub_masks[MAX_SUB] = {HW_MASK_OUTBOUND, HW_MASK_INBOUND, HW_MASK_COLUMN, HW_MASK_FULL};

typedef struct SubAct
{
	float *x_in;       /* [N,D] residual stream entering the sublayer */
	float *rstd;       /* [N] */
	float *qkvg;       /* [N,4D] (attention) or gu [N,2F] (ffn) */
	float *qs, *kn, *v;/* [N,D] */
	float *qnorm, *knorm; /* [N,H] */
	float *att;        /* [N,D] */
	float *lse;        /* [B,H,S] */
	float *o;          /* [N,D] */
} SubAct;

typedef struct SubParams
{
	int64_t norm_g, w4, wo, tau;     /* offsets (w4: wq start, [4D,D]) */
} SubParams;

typedef struct FfnParams
{
	int64_t norm_g, wgu, w2;
} FfnParams;

struct HwModel
{
	HwModelConfig cfg;
	HwBackend    *be;
	int           D, H, dh, F, L, A, Dt, Nmax, Bmax, Smax;
	int32_t       ncols, ncat;

	HwParamTable  pt;
	float        *params, *grads, *m1, *m2, *muon_work;
	/* hw_model_create_frozen: params is the caller's read-only memory (never
	 * written, never freed); grads, m1, m2, muon_work are NULL */
	int           frozen;
	/* cfg.ema_decay > 0: the parameter average (NULL otherwise).  Swapped:
	 * params and ema exchanged (forward reads the average); adopted: loaded
	 * to predict, the average either copied over params or dropped, and
	 * freed (inference only: no training, no state). */
	float        *ema;
	int           ema_swapped, ema_adopted;

	/* parameter offsets */
	int64_t       o_col_w, o_col_b, o_id, o_null, o_mask, o_num_w, o_num_b, o_ts_w, o_ts_b,
				  o_bool, o_cat_w, o_cat_b, o_text_w, o_text_b, o_enc_g, o_final_g, o_head_w, o_head_b,
				  o_ts_rel,   /* enc.ts_rel.w [D, HW_REL_TIME_DIM]; -1 without relative time */
				  o_link,     /* enc.link.w [D, HW_LINK_DIM]; -1 without link codes */
				  o_cnt,      /* enc.cnt.w [D, HW_CNT_DIM]; -1 without child counts */
				  o_ord_w,    /* head.ord.w [HW_ORD_LEVELS, D]; -1 without the ordinal head */
				  o_ord_b,    /* head.ord.b [HW_ORD_LEVELS] */
				  o_cramp;    /* enc.cramp.w [D, HW_CRAMP_DIM]; -1 without count ramps */
	SubParams    *sp;         /* [L*A] */
	FfnParams    *fp;         /* [L] */

	/* frozen tables (device) */
	float        *col_table;  /* [ncols, Dt] f32 */
	uint16_t     *cat_table;  /* [ncat, Dt] f16 */

	/* activations */
	HwArena       arena;
	SubAct       *sa;         /* [L*A] */
	SubAct       *fa;         /* [L] (x_in, rstd, qkvg = gu) */
	float        *x_final, *e, *rstd0;
	/* scratch / activation grads */
	float        *xn, *dxn, *dqkvg, *dqs, *dkn, *dv, *datt, *dO, *hbuf, *dhbuf, *dgu, *dx, *de;
	/* encoder */
	int8_t       *d_stype;
	int32_t      *d_col, *d_cat_local, *d_text_local, *d_tidx, *d_tcat;
	uint8_t      *d_is_null, *d_is_target, *d_bool, *d_tnull, *d_tbool;
	float        *d_num, *d_ts, *d_tnum, *d_tts;
	float        *d_trel;     /* [N, HW_REL_TIME_DIM] relative-time features (cfg.rel_time) */
	float        *d_link;     /* [N, HW_LINK_DIM] link codes (cfg.link_types) */
	float        *d_cnt;      /* [N, HW_CNT_DIM] child-count features (cfg.child_counts) */
	float        *d_cramp;    /* [N, HW_CRAMP_DIM] count ramps (cfg.count_ramps) */
	float        *text_f32, *cat_rows, *catproj, *textproj, *colproj, *dcolproj, *dcatproj, *dtextproj;
	/* heads */
	float        *xt, *rstdf, *hf, *dhf, *dxt, *Z, *dZ, *logits, *dlogits, *catblock, *E, *dE, *lossb;
	float        *Zo, *dZo;   /* [B, HW_ORD_LEVELS] ordinal head output and its gradient (cfg.ordinal_head) */
	int           Kmax;

	/* host scratch */
	int32_t      *h_i32a, *h_i32b, *h_catmap, *h_tidx, *h_tcat;
	float        *h_f32;
	float        *h_trel;     /* [Nmax, HW_REL_TIME_DIM] (cfg.rel_time) */
	float        *h_link;     /* [Nmax, HW_LINK_DIM] (cfg.link_types) */
	float        *h_cnt;      /* [Nmax, HW_CNT_DIM] (cfg.child_counts) */
	float        *h_cramp;    /* [Nmax, HW_CRAMP_DIM] (cfg.count_ramps) */
	uint8_t      *h_u8a, *h_u8b;

	void         *plans[MAX_SUB];
	HwTape        tape;
	HwRng         rng;
	int64_t       step;

	/* current batch */
	int           B, S, N, U, Uc, K, stype, num_loss;   /* num_loss: HwNumLoss of the batch */
	int           ord_levels;          /* the batch's ordinal thresholds in use (0: none or no head) */
	float         ord_scale, ord_shift;
};

/* ------------------------------------------------------------------ config */

int
hw_model_config_preset(HwModelConfig *c, const char *preset, HwError *err)
{
	memset(c, 0, sizeof(*c));
	c->d_text = 256;
	c->lr = 3e-3f;
	c->warmup_steps = 100;
	c->total_steps = 10000;
	c->weight_decay = 0.3f;   /* 0.1 overfit the shop's orders_30d (docs/BENCHMARKS.md, session 9) */
	c->adam_b1 = 0.9f;
	c->adam_b2 = 0.95f;
	c->adam_eps = 1e-8f;
	c->muon_momentum = 0.95f;
	c->clip_norm = 1.0f;
	c->rel_time = 1;
	c->link_types = 1;
	c->child_counts = 1;
	c->child_means = 1;
	c->ordinal_head = 1;
	c->count_ramps = 0;       /* an option: the shop's orders_30d stayed at predicting 0 (docs/BENCHMARKS.md, session 18) */
	c->head_adamw = 0;        /* an option (docs/model.md, Optimisers of the heads) */
	c->head_weight_decay = 0.0f;    /* the heads undecayed: sharper probabilities (docs/BENCHMARKS.md, session 22) */
	c->seed = 42;
	if (!preset || strcmp(preset, "tiny") == 0)
	{
		c->d_model = 64; c->n_heads = 4; c->n_layers = 2; c->seq_len = 128; c->batch_size = 16;
	}
	else if (strcmp(preset, "small") == 0)
	{
		c->d_model = 128; c->n_heads = 4; c->n_layers = 4; c->seq_len = 256; c->batch_size = 32;
	}
	else if (strcmp(preset, "base") == 0)
	{
		c->d_model = 256; c->n_heads = 8; c->n_layers = 6; c->seq_len = 1024; c->batch_size = 32;
	}
	else
		return hw_error_set(err, HW_ERR_INVALID, "unknown model preset \"%s\" (tiny, small or base)", preset);
	return HW_OK;
}

int
hw_model_config_set(HwModelConfig *c, const char *key, double v, HwError *err)
{
#define I(name) if (strcmp(key, #name) == 0) { c->name = (int32_t) v; return HW_OK; }
#define F(name) if (strcmp(key, #name) == 0) { c->name = (float) v; return HW_OK; }
	I(d_model) I(n_heads) I(n_layers) I(seq_len) I(batch_size) I(d_text) I(d_ff) I(full_attention) I(rel_time) I(link_types)
	I(child_counts) I(child_means) I(ordinal_head) I(count_ramps) I(head_adamw) F(ema_decay) F(head_weight_decay)
	F(lr) I(warmup_steps) I(total_steps) F(weight_decay) F(adam_b1) F(adam_b2) F(adam_eps)
	F(muon_momentum) F(clip_norm)
	if (strcmp(key, "seed") == 0) { c->seed = (uint64_t) v; return HW_OK; }
#undef I
#undef F
	return hw_error_set(err, HW_ERR_INVALID, "unknown model setting \"%s\"", key);
}

int
hw_model_config_finish(HwModelConfig *c, HwError *err)
{
	if (c->d_ff == 0)
		c->d_ff = ((8 * c->d_model + 2) / 3 + 255) / 256 * 256;
	if (c->d_model <= 0 || c->n_heads <= 0 || c->d_model % c->n_heads != 0 ||
		c->d_model / c->n_heads > 512)
		return hw_error_set(err, HW_ERR_INVALID, "d_model %d must be a positive multiple of n_heads %d (head size <= 512)",
							c->d_model, c->n_heads);
	if (c->n_layers <= 0 || c->seq_len <= 0 || c->seq_len > 65535 || c->batch_size <= 0 || c->d_text <= 0 || c->d_ff <= 0)
		return hw_error_set(err, HW_ERR_INVALID, "n_layers, seq_len (<= 65535), batch_size, d_text and d_ff must be positive");
	if (!(c->lr > 0) || c->warmup_steps < 0 || c->total_steps < 0 || !(c->clip_norm > 0) ||
		!(c->adam_b1 >= 0 && c->adam_b1 < 1) || !(c->adam_b2 >= 0 && c->adam_b2 < 1))
		return hw_error_set(err, HW_ERR_INVALID, "invalid optimiser settings (lr > 0, 0 <= betas < 1, clip_norm > 0)");
	if (!(c->ema_decay >= 0 && c->ema_decay < 1))
		return hw_error_set(err, HW_ERR_INVALID, "ema_decay %g must be at least 0 and below 1 (0: no average)",
							(double) c->ema_decay);
	c->full_attention = c->full_attention ? 1 : 0;
	c->rel_time = c->rel_time ? 1 : 0;
	c->link_types = c->link_types ? 1 : 0;
	c->child_counts = c->child_counts ? 1 : 0;
	c->child_means = c->child_counts && c->child_means ? 1 : 0;     /* they ride on enc.cnt.w */
	c->ordinal_head = c->ordinal_head ? 1 : 0;
	c->count_ramps = c->child_counts && c->count_ramps ? 1 : 0;    /* the same counts, another encoding */
	c->head_adamw = c->head_adamw ? 1 : 0;
	if (c->head_weight_decay < 0)
		c->head_weight_decay = c->weight_decay;
	if (!(c->weight_decay >= 0 && c->head_weight_decay >= 0 && isfinite(c->weight_decay) &&
		  isfinite(c->head_weight_decay)))
		return hw_error_set(err, HW_ERR_INVALID, "weight_decay %g and head_weight_decay %g must be finite and at least 0",
							(double) c->weight_decay, (double) c->head_weight_decay);
	return HW_OK;
}

const HwModelConfig *hw_model_config(const HwModel *m) { return &m->cfg; }
int64_t hw_model_step(const HwModel *m) { return m->step; }
void hw_model_set_step(HwModel *m, int64_t s) { m->step = s; }
void hw_model_rng_state(const HwModel *m, uint64_t s[4]) { memcpy(s, m->rng.s, sizeof(m->rng.s)); }
void hw_model_set_rng_state(HwModel *m, const uint64_t s[4]) { memcpy(m->rng.s, s, sizeof(m->rng.s)); }
const struct HwTape *hw_model_tape(const HwModel *m) { return &m->tape; }
int hw_model_n_params(const HwModel *m) { return m->pt.n; }
int64_t hw_model_numel(const HwModel *m) { return m->pt.numel; }
const HwParamInfo *hw_model_param_info(const HwModel *m, int i) { return (i >= 0 && i < m->pt.n) ? &m->pt.p[i] : NULL; }
int hw_model_param_index(const HwModel *m, const char *name) { return hw_params_find(&m->pt, name); }

/* link code: bit j of splitmix64(key) -> +-1/sqrt(HW_LINK_DIM) in slot j (model.h) */
void
hw_link_code(uint32_t key, float out[HW_LINK_DIM])
{
	uint64_t z = (uint64_t) key + 0x9E3779B97F4A7C15ULL;
	float    a = 1.0f / sqrtf((float) HW_LINK_DIM);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	for (int j = 0; j < HW_LINK_DIM; j++)
		out[j] = (z >> j) & 1 ? a : -a;
}

/* out[w * HW_LINK_DIM + j] += v[w] * code(key)[j] for every window w */
static void
add_coded_windows(float out[HW_CNT_DIM], uint32_t key, const float v[HW_CHILD_WINDOWS])
{
	float code[HW_LINK_DIM];

	hw_link_code(key, code);
	for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		if (v[w] != 0.0f)
			for (int j = 0; j < HW_LINK_DIM; j++)
				out[w * HW_LINK_DIM + j] += v[w] * code[j];
}

/* child-count features of one cell (model.h) */
void
hw_child_count_features(const uint32_t *key, const uint16_t *count, const uint32_t *mean_key,
						const float *mean, float out[HW_CNT_DIM])
{
	float v[HW_CHILD_WINDOWS];

	memset(out, 0, sizeof(float) * HW_CNT_DIM);
	for (int l = 0; l < HW_CHILD_LINKS; l++)
	{
		if (key[l] == 0)
			continue;
		for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		{
			uint16_t n = count[l * HW_CHILD_WINDOWS + w];

			v[w] = n ? 0.25f * log1pf((float) n) : 0.0f;
		}
		add_coded_windows(out, key[l], v);
	}
	for (int q = 0; mean_key && q < HW_MEAN_SLOTS; q++)
	{
		if (mean_key[q] == 0)
			continue;
		for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		{
			float x = mean[q * HW_CHILD_WINDOWS + w];

			/* non-finite: never from the sampler (the catalog stores NaN as NULL) */
			v[w] = !isfinite(x) ? 0.0f : 0.5f * (x > 4.0f ? 4.0f : x < -4.0f ? -4.0f : x);
		}
		add_coded_windows(out, mean_key[q], v);
	}
}

/* count ramps of one cell (model.h) */
void
hw_count_ramp_features(const uint32_t *key, const uint16_t *count, float out[HW_CRAMP_DIM])
{
	memset(out, 0, sizeof(float) * HW_CRAMP_DIM);
	for (int l = 0; l < HW_CHILD_LINKS; l++)
	{
		float code[HW_LINK_DIM];

		if (key[l] == 0)
			continue;
		hw_link_code(key[l], code);
		for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		{
			uint16_t n = count[l * HW_CHILD_WINDOWS + w];
			float    lg = n ? log2f(1.0f + (float) n) : 0.0f;

			for (int t = 0; t < HW_CRAMP_STEPS && lg > (float) t; t++)
			{
				float r = lg - (float) t > 1.0f ? 1.0f : lg - (float) t;
				float *o = out + (w * HW_CRAMP_STEPS + t) * HW_LINK_DIM;

				for (int j = 0; j < HW_LINK_DIM; j++)
					o[j] += r * code[j];
			}
		}
	}
}

/* ------------------------------------------------------------------ params */

static int64_t
addp(HwModel *m, const char *name, int ndim, int d0, int d1, int *ok)
{
	int head = strncmp(name, "head.", 5) == 0;
	int opt = (ndim == 2 && d0 >= 2 && d1 >= 2 && strcmp(name, "enc.bool_emb") != 0 &&
			   !(m->cfg.head_adamw && head)) ? HW_OPT_MUON : HW_OPT_ADAMW;
	/* weight decay on every weight matrix (2-D) except the boolean embedding
	 * table (the heads' at head_weight_decay: optim.c) */
	int decay = ndim == 2 && strcmp(name, "enc.bool_emb") != 0;
	int i = hw_params_add(&m->pt, name, ndim, d0, d1, opt, decay);

	if (i < 0)
	{
		*ok = 0;
		return 0;
	}
	m->pt.p[i].head = head;
	return m->pt.p[i].offset;
}

static int
build_params(HwModel *m)
{
	int  D = m->D, Dt = m->Dt, F = m->F, H = m->H, ok = 1;
	char nm[64];

	m->o_col_w = addp(m, "enc.col.w", 2, D, Dt, &ok);
	m->o_col_b = addp(m, "enc.col.b", 1, D, 1, &ok);
	m->o_id = addp(m, "enc.id_emb", 1, D, 1, &ok);
	m->o_null = addp(m, "enc.null_emb", 1, D, 1, &ok);
	m->o_mask = addp(m, "enc.mask_emb", 1, D, 1, &ok);
	m->o_num_w = addp(m, "enc.num.w", 2, D, 1, &ok);
	m->o_num_b = addp(m, "enc.num.b", 1, D, 1, &ok);
	m->o_ts_w = addp(m, "enc.ts.w", 2, D, 15, &ok);
	m->o_ts_b = addp(m, "enc.ts.b", 1, D, 1, &ok);
	m->o_bool = addp(m, "enc.bool_emb", 2, 2, D, &ok);
	m->o_cat_w = addp(m, "enc.cat.w", 2, D, Dt, &ok);
	m->o_cat_b = addp(m, "enc.cat.b", 1, D, 1, &ok);
	m->o_text_w = addp(m, "enc.text.w", 2, D, Dt, &ok);
	m->o_text_b = addp(m, "enc.text.b", 1, D, 1, &ok);
	m->o_enc_g = addp(m, "enc.norm.g", 1, D, 1, &ok);
	for (int l = 0; l < m->L; l++)
	{
		for (int s = 0; s < m->A; s++)
		{
			SubParams *p = &m->sp[l * m->A + s];
			const char *sn = sub_names[s];

#define NM(x) (snprintf(nm, sizeof(nm), "layer%d.%s.%s", l, sn, x), nm)
			p->norm_g = addp(m, NM("norm.g"), 1, D, 1, &ok);
			p->w4 = addp(m, NM("wq"), 2, D, D, &ok);
			addp(m, NM("wk"), 2, D, D, &ok);
			addp(m, NM("wv"), 2, D, D, &ok);
			addp(m, NM("wgate"), 2, D, D, &ok);
			p->wo = addp(m, NM("wo"), 2, D, D, &ok);
			p->tau = addp(m, NM("tau"), 1, H, 1, &ok);
#undef NM
		}
		snprintf(nm, sizeof(nm), "layer%d.ffn.norm.g", l);
		m->fp[l].norm_g = addp(m, nm, 1, D, 1, &ok);
		snprintf(nm, sizeof(nm), "layer%d.ffn.wg", l);
		m->fp[l].wgu = addp(m, nm, 2, F, D, &ok);
		snprintf(nm, sizeof(nm), "layer%d.ffn.wu", l);
		addp(m, nm, 2, F, D, &ok);
		snprintf(nm, sizeof(nm), "layer%d.ffn.w2", l);
		m->fp[l].w2 = addp(m, nm, 2, D, F, &ok);
	}
	m->o_final_g = addp(m, "final.norm.g", 1, D, 1, &ok);
	m->o_head_w = addp(m, "head.null.w", 2, 1, D, &ok);
	addp(m, "head.num.w", 2, 1, D, &ok);
	addp(m, "head.bool.w", 2, 1, D, &ok);
	addp(m, "head.ts.w", 2, 15, D, &ok);
	addp(m, "head.cat.w", 2, D, D, &ok);
	m->o_head_b = addp(m, "head.null.b", 1, 1, 1, &ok);
	addp(m, "head.num.b", 1, 1, 1, &ok);
	addp(m, "head.bool.b", 1, 1, 1, &ok);
	addp(m, "head.ts.b", 1, 15, 1, &ok);
	addp(m, "head.cat.b", 1, D, 1, &ok);
	/* last, so that every other parameter keeps its offset and initial
	 * draw whether or not the model has it */
	m->o_ts_rel = m->cfg.rel_time ? addp(m, "enc.ts_rel.w", 2, D, HW_REL_TIME_DIM, &ok) : -1;
	m->o_link = m->cfg.link_types ? addp(m, "enc.link.w", 2, D, HW_LINK_DIM, &ok) : -1;
	m->o_cnt = m->cfg.child_counts ? addp(m, "enc.cnt.w", 2, D, HW_CNT_DIM, &ok) : -1;
	/* before the ordinal head, so that a model with the (unused) head trains
	 * bit for bit as one without it (unit model_unused_ordinal_head_changes_nothing) */
	m->o_cramp = m->cfg.count_ramps ? addp(m, "enc.cramp.w", 2, D, HW_CRAMP_DIM, &ok) : -1;
	m->o_ord_w = m->cfg.ordinal_head ? addp(m, "head.ord.w", 2, HW_ORD_LEVELS, D, &ok) : -1;
	m->o_ord_b = m->cfg.ordinal_head ? addp(m, "head.ord.b", 1, HW_ORD_LEVELS, 1, &ok) : -1;
	return ok;
}

static int
ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Initial values (documented in docs/model.md); drawn in parameter order. */
static void
init_params(HwModel *m, float *host)
{
	double resid = 1.0 / sqrt(2.0 * m->L);

	for (int i = 0; i < m->pt.n; i++)
	{
		const HwParamInfo *p = &m->pt.p[i];
		float             *w = host + p->offset;
		double             std = 0;

		if (ends_with(p->name, "norm.g") || ends_with(p->name, ".b"))
			std = 0;
		else if (ends_with(p->name, ".tau"))
		{
			for (int64_t k = 0; k < p->numel; k++)
				w[k] = sqrtf((float) m->dh);
			continue;
		}
		else if (ends_with(p->name, "_emb") || strcmp(p->name, "enc.num.w") == 0 ||
				 strcmp(p->name, "enc.col.w") == 0 || strcmp(p->name, "enc.cat.w") == 0 ||
				 strcmp(p->name, "enc.text.w") == 0 || strcmp(p->name, "enc.link.w") == 0)
			std = 1.0;          /* inputs are unit vectors / scalars: outputs ~ N(0,1) */
		else if (strcmp(p->name, "enc.cnt.w") == 0)
			std = 1.0 / sqrt((double) HW_CHILD_WINDOWS);   /* a row's 12 counts ~ one unit vector */
		else if (strcmp(p->name, "enc.cramp.w") == 0)
			std = 1.0 / sqrt((double) (HW_CHILD_WINDOWS * HW_CRAMP_STEPS));  /* likewise, 48 ramps */
		else if (strncmp(p->name, "head.", 5) == 0)
			std = 0.1 / sqrt((double) p->shape[1]);
		else
		{
			std = 1.0 / sqrt((double) p->shape[1]);
			if (ends_with(p->name, ".wo") || ends_with(p->name, ".w2"))
				std *= resid;
		}
		for (int64_t k = 0; k < p->numel; k++)
			w[k] = std == 0 ? 0.0f : (float) (std * hw_rng_normal(&m->rng));
	}
}

/* ------------------------------------------------------------------ create */

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
	m->d_cramp = m->cfg.count_ramps ? hw_arena_floats(a, N * HW_CRAMP_DIM) : NULL;
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

static void
free_plans(HwModel *m)
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
	free_plans(m);
	hw_arena_release(&m->arena);
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
	hw_params_free(&m->pt);
	hw_tape_free(&m->tape);
	free(m->sp);
	free(m->fp);
	free(m->sa);
	free(m->fa);
	free(m->h_i32a);
	free(m->h_trel);
	free(m->h_link);
	free(m->h_cnt);
	free(m->h_cramp);
	free(m->h_i32b);
	free(m->h_catmap);
	free(m->h_tidx);
	free(m->h_tcat);
	free(m->h_f32);
	free(m->h_u8a);
	free(m->h_u8b);
	free(m);
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
	m.cfg = c;
	m.D = c.d_model;
	m.H = c.n_heads;
	m.dh = m.D / m.H;
	m.F = c.d_ff;
	m.L = c.n_layers;
	m.A = c.full_attention ? 4 : 3;
	m.Dt = c.d_text;
	m.Bmax = c.batch_size;
	m.Smax = c.seq_len;
	m.Nmax = c.batch_size * c.seq_len;
	m.ncols = ncols;
	m.ncat = ncat;
	m.Kmax = ncat > 0 ? ncat : 1;
	m.sp = calloc((size_t) m.L * m.A, sizeof(SubParams));
	m.fp = calloc((size_t) m.L, sizeof(FfnParams));
	m.sa = calloc((size_t) m.L * m.A, sizeof(SubAct));
	m.fa = calloc((size_t) m.L, sizeof(SubAct));
	if (m.sp && m.fp && m.sa && m.fa && build_params(&m))
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

/*
 * The backend's own first error (backend.h last_error; CUDA: a kernel fault,
 * a cuBLAS error, a failed device allocation or upload), HW_OK if none.  When
 * rc reports a failure of the model, or the backend kept one, the backend's
 * error is the cause and the model's message at most its symptom (a failed
 * kernel makes the loss NaN): err gets the backend's message, with the
 * symptom appended.  Otherwise returns rc unchanged.  Synchronises a device
 * backend: call it where the caller has already waited (after a failure, a
 * d2h copy, at creation), never on the per-step path.
 */
static int
backend_cause(HwBackend *be, int rc, HwError *err)
{
	HwError cause = {0};
	int     brc;

	if (!be->ops->last_error || (brc = be->ops->last_error(be, &cause)) == HW_OK)
		return rc;
	if (err)
	{
		char symptom[sizeof(err->msg)];

		if (rc != HW_OK && err->msg[0])
			snprintf(symptom, sizeof(symptom), "%s", err->msg);
		else
			symptom[0] = '\0';
		hw_error_set(err, brc, "%s backend: %s%s%s%s", be->ops->name, cause.msg,
					 symptom[0] ? " (the model then reported: " : "", symptom, symptom[0] ? ")" : "");
	}
	return brc;
}

int
hw_model_backend_status(HwModel *m, HwError *err)
{
	return backend_cause(m->be, HW_OK, err);
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
	float              *host;
	HwArena             meas;

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
	m->cfg = cfg;
	m->be = be;
	m->D = cfg.d_model;
	m->H = cfg.n_heads;
	m->dh = m->D / m->H;
	m->F = cfg.d_ff;
	m->L = cfg.n_layers;
	m->A = cfg.full_attention ? 4 : 3;
	m->Dt = cfg.d_text;
	m->Bmax = cfg.batch_size;
	m->Smax = cfg.seq_len;
	m->Nmax = cfg.batch_size * cfg.seq_len;
	m->ncols = ncols;
	m->ncat = ncat;
	m->Kmax = ncat > 0 ? ncat : 1;
	hw_tape_init(&m->tape);
	hw_rng_seed(&m->rng, cfg.seed);
	m->sp = calloc((size_t) m->L * m->A, sizeof(SubParams));
	m->fp = calloc((size_t) m->L, sizeof(FfnParams));
	m->sa = calloc((size_t) m->L * m->A, sizeof(SubAct));
	m->fa = calloc((size_t) m->L, sizeof(SubAct));
	m->h_i32a = malloc(sizeof(int32_t) * m->Nmax);
	m->h_i32b = malloc(sizeof(int32_t) * m->Nmax);
	m->h_catmap = malloc(sizeof(int32_t) * (ncat > 0 ? ncat : 1));
	m->h_tidx = malloc(sizeof(int32_t) * m->Bmax);
	m->h_tcat = malloc(sizeof(int32_t) * m->Bmax);
	m->h_f32 = malloc(sizeof(float) * (size_t) m->Nmax * (m->Dt > 16 ? m->Dt : 16));
	m->h_u8a = malloc(m->Bmax);
	m->h_u8b = malloc(m->Bmax);
	m->h_trel = cfg.rel_time ? malloc(sizeof(float) * (size_t) m->Nmax * HW_REL_TIME_DIM) : NULL;
	m->h_link = cfg.link_types ? malloc(sizeof(float) * (size_t) m->Nmax * HW_LINK_DIM) : NULL;
	m->h_cnt = cfg.child_counts ? malloc(sizeof(float) * (size_t) m->Nmax * HW_CNT_DIM) : NULL;
	m->h_cramp = cfg.count_ramps ? malloc(sizeof(float) * (size_t) m->Nmax * HW_CRAMP_DIM) : NULL;
	if ((cfg.rel_time && !m->h_trel) || (cfg.link_types && !m->h_link) || (cfg.child_counts && !m->h_cnt) ||
		(cfg.count_ramps && !m->h_cramp) ||
		!m->sp || !m->fp || !m->sa || !m->fa || !m->h_i32a || !m->h_i32b || !m->h_catmap ||
		!m->h_tidx || !m->h_tcat || !m->h_f32 || !m->h_u8a || !m->h_u8b || !build_params(m))
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
		m->params = (float *) frozen_params;     /* read only: forward never writes parameters */
	}
	else
	{
		m->params = o->alloc(be, pbytes);
		m->grads = o->alloc(be, pbytes);
		m->m1 = o->alloc(be, pbytes);
		m->m2 = o->alloc(be, pbytes);
		m->muon_work = o->alloc(be, sizeof(float) * (size_t) (hw_muon_work_floats(m->pt.p, m->pt.n) + 1));
		m->ema = cfg.ema_decay > 0 ? o->alloc(be, pbytes) : NULL;
		if (!m->params || !m->grads || !m->m1 || !m->m2 || !m->muon_work || (cfg.ema_decay > 0 && !m->ema))
			goto nomem;
		o->memset(be, m->grads, 0, pbytes);
		o->memset(be, m->m1, 0, pbytes);
		o->memset(be, m->m2, 0, pbytes);
	}
	m->col_table = o->alloc(be, sizeof(float) * (size_t) ncols * m->Dt);
	m->cat_table = o->alloc(be, sizeof(uint16_t) * (size_t) (ncat > 0 ? ncat : 1) * m->Dt);
	if (!m->col_table || !m->cat_table)
		goto nomem;

	if (frozen_params)
		host = malloc(sizeof(float) * (size_t) ncols * m->Dt);
	else
		host = malloc(pbytes > sizeof(float) * (size_t) ncols * m->Dt ? pbytes : sizeof(float) * (size_t) ncols * m->Dt);
	if (!host)
		goto nomem;
	if (!frozen_params)
	{
		init_params(m, host);
		o->memcpy_h2d(be, m->params, host, pbytes);
		if (m->ema)
			o->memcpy_h2d(be, m->ema, host, pbytes);     /* the average starts at the initial parameters */
	}
	for (int64_t i = 0; i < (int64_t) ncols * m->Dt; i++)
		host[i] = hw_f16_to_f32(col_table[i]);
	o->memcpy_h2d(be, m->col_table, host, sizeof(float) * (size_t) ncols * m->Dt);
	free(host);
	if (ncat > 0)
		o->memcpy_h2d(be, m->cat_table, cat_table, sizeof(uint16_t) * (size_t) ncat * m->Dt);

	/* size the activation arena by a measuring pass, then lay it out for real */
	hw_arena_measure(&meas, be);
	layout_activations(m, &meas);
	if (hw_arena_init(&m->arena, be, meas.used, err) != HW_OK)
	{
		backend_cause(be, HW_ERR_NOMEM, err);
		hw_model_free(m);
		return NULL;
	}
	layout_activations(m, &m->arena);
	/* a failed upload or device allocation surfaces here, with its cause */
	if (backend_cause(be, HW_OK, err) != HW_OK)
	{
		hw_model_free(m);
		return NULL;
	}
	return m;

nomem:
	/* a device allocation that failed on the backend says why (how much
	 * memory was needed and free) */
	backend_cause(be, hw_error_set(err, HW_ERR_NOMEM, "out of memory creating the model"), err);
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
	/* the parameters are used where they lie: only a backend computing in
	 * host memory can read them */
	if (!params || strcmp(be->ops->name, "cpu") != 0)
	{
		hw_error_set(err, HW_ERR_INVALID, "a frozen model needs its parameters in host memory and the cpu backend, not %s",
					 be->ops->name);
		return NULL;
	}
	return model_create(cfg, col_table, ncols, cat_table, ncat, be, params, numel, err);
}

int
hw_model_is_frozen(const HwModel *m)
{
	return m->frozen;
}

/* ------------------------------------------------------------------ ops
 * Each op: forward now (timed), then a tape record with its backward. */

#define P(off) (m->params + (off))
#define G(off) (m->grads + (off))

static void
rec(HwModel *m, const char *op, const char *label, const char *inputs, int64_t d0, int64_t d1,
	hw_tape_backward_fn bw, const void *args, size_t sz, double t0)
{
	HwTapeRec *r = hw_tape_push(&m->tape, op, label, inputs, d1 ? 2 : 1, d0, d1, 0, bw, args, sz);

	if (r)
		r->fwd_ms = hw_now_ms() - t0;
}

/* linear: Y[M,Nout] (ldy) = X[M,K] (ldx) @ W[Nout,K]^T (+ b); backward:
 * dX (dx_beta: 0 overwrite / 1 accumulate; NULL = none), dW (dw_beta), db (+=). */
typedef struct LinArgs
{
	float *Y; const float *X, *W; const float *dY; float *dX, *dW, *db;
	int M, Nout, K, ldx, ldy; float dx_beta, dw_beta;
} LinArgs;

static void
linear_bw(void *ctx, const HwTapeRec *r)
{
	HwModel       *m = ctx;
	const LinArgs *a = (const LinArgs *) r->args.bytes;
	HwBackend     *be = m->be;

	if (a->dW)
		be->ops->gemm(be, true, false, a->Nout, a->K, a->M, 1.0f, a->dY, a->ldy, a->X, a->ldx,
					  a->dw_beta, a->dW, a->K);
	if (a->db)
		be->ops->bias_backward(be, a->db, a->dY, a->M, a->Nout);   /* dY rows contiguous (ldy == Nout) */
	if (a->dX)
		be->ops->gemm(be, false, false, a->M, a->K, a->Nout, 1.0f, a->dY, a->ldy, a->W, a->K,
					  a->dx_beta, a->dX, a->ldx);
}

static void
op_linear(HwModel *m, const char *label, const char *inputs, LinArgs a, const float *b)
{
	double t0 = hw_now_ms();

	m->be->ops->gemm(m->be, false, true, a.M, a.Nout, a.K, 1.0f, a.X, a.ldx, a.W, a.K, 0.0f, a.Y, a.ldy);
	if (b)
		m->be->ops->add_bias(m->be, a.Y, b, a.M, a.Nout);
	rec(m, "linear", label, inputs, a.M, a.Nout, linear_bw, &a, sizeof(a), t0);
}

/* side features (relative time, link codes): e[N,D] += X[N,K] @ W[D,K]^T
 * (X is data: no dX); backward dW (+=) de^T @ X, reading de before the
 * encoder's backward does. */
typedef struct SideArgs { const float *X; int64_t w; int N, K; } SideArgs;

static void
side_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const SideArgs *a = (const SideArgs *) r->args.bytes;

	m->be->ops->gemm(m->be, true, false, m->D, a->K, a->N, 1.0f, m->de, m->D, a->X, a->K, 1.0f, G(a->w), a->K);
}

static void
op_side(HwModel *m, const char *label, const char *inputs, const float *X, int64_t w, int N, int K)
{
	double   t0 = hw_now_ms();
	SideArgs a = { X, w, N, K };

	m->be->ops->gemm(m->be, false, true, N, m->D, K, 1.0f, X, K, P(w), K, 1.0f, m->e, m->D);
	rec(m, "linear", label, inputs, N, m->D, side_bw, &a, sizeof(a), t0);
}

/* rmsnorm: out = rms(x; g) (out may be gathered rows); backward dx (+=) after optional zeroing. */
typedef struct NormArgs
{
	float *out, *rstd; const float *x, *g; const float *dout; float *dx, *dg; int N, D, zero_dx;
} NormArgs;

static void
rmsnorm_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const NormArgs *a = (const NormArgs *) r->args.bytes;

	if (a->zero_dx)
		m->be->ops->memset(m->be, a->dx, 0, sizeof(float) * (size_t) a->N * a->D);
	m->be->ops->rmsnorm_backward(m->be, a->dx, a->dg, a->dout, a->x, a->rstd, a->g, a->N, a->D);
}

static void
op_rmsnorm(HwModel *m, const char *label, const char *inputs, NormArgs a)
{
	double t0 = hw_now_ms();

	m->be->ops->rmsnorm_forward(m->be, a.out, a.rstd, a.x, a.g, a.N, a.D);
	rec(m, "rmsnorm", label, inputs, a.N, a.D, rmsnorm_bw, &a, sizeof(a), t0);
}

/* norm_linear: Y[N,Nout] = rms(x; g) @ W^T; xn recomputed in backward. */
typedef struct NLArgs
{
	float *Y, *rstd; const float *x, *g, *W; const float *dY; float *dx, *dg, *dW, *xn, *dxn;
	int N, D, Nout;
} NLArgs;

static void
norm_linear_bw(void *ctx, const HwTapeRec *r)
{
	HwModel      *m = ctx;
	const NLArgs *a = (const NLArgs *) r->args.bytes;
	HwBackend    *be = m->be;

	be->ops->rmsnorm_forward(be, a->xn, a->rstd, a->x, a->g, a->N, a->D);
	be->ops->gemm(be, true, false, a->Nout, a->D, a->N, 1.0f, a->dY, a->Nout, a->xn, a->D, 1.0f, a->dW, a->D);
	be->ops->gemm(be, false, false, a->N, a->D, a->Nout, 1.0f, a->dY, a->Nout, a->W, a->D, 0.0f, a->dxn, a->D);
	be->ops->rmsnorm_backward(be, a->dx, a->dg, a->dxn, a->x, a->rstd, a->g, a->N, a->D);
}

static void
op_norm_linear(HwModel *m, const char *label, const char *inputs, NLArgs a)
{
	double t0 = hw_now_ms();

	m->be->ops->rmsnorm_forward(m->be, a.xn, a.rstd, a.x, a.g, a.N, a.D);
	m->be->ops->gemm(m->be, false, true, a.N, a.Nout, a.D, 1.0f, a.xn, a.D, a.W, a.D, 0.0f, a.Y, a.Nout);
	rec(m, "norm_linear", label, inputs, a.N, a.Nout, norm_linear_bw, &a, sizeof(a), t0);
}

typedef struct QKArgs
{
	float *qs, *kn, *v, *qnorm, *knorm; const float *qkvg, *tau;
	const float *dqs, *dkn, *dv; float *dqkvg, *dtau; int N, H, dh;
} QKArgs;

static void
qknorm_bw(void *ctx, const HwTapeRec *r)
{
	HwModel      *m = ctx;
	const QKArgs *a = (const QKArgs *) r->args.bytes;

	m->be->ops->qknorm_backward(m->be, a->dqkvg, a->dtau, a->dqs, a->dkn, a->dv, a->qkvg,
								a->qnorm, a->knorm, a->tau, a->N, a->H, a->dh);
}

typedef struct AttArgs
{
	float *out, *lse; const float *q, *k, *v; const void *plan;
	const float *dout; float *dq, *dk, *dv; int H, dh;
} AttArgs;

static void
attn_bw(void *ctx, const HwTapeRec *r)
{
	HwModel       *m = ctx;
	const AttArgs *a = (const AttArgs *) r->args.bytes;

	m->be->ops->attn_backward(m->be, a->dq, a->dk, a->dv, a->dout, a->out, a->lse, a->q, a->k,
							  a->v, a->plan, a->H, a->dh);
}

typedef struct GateArgs
{
	float *xout; const float *xin, *gp, *o; const float *dx; float *dgp, *dO; int ld, N, D;
} GateArgs;

static void
gate_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const GateArgs *a = (const GateArgs *) r->args.bytes;

	m->be->ops->gate_residual_backward(m->be, a->dgp, a->ld, a->dO, a->dx, a->gp, a->o, a->N, a->D);
}

/* xout = xin + swiglu(gu) @ W2^T; h recomputed in backward. */
typedef struct SwArgs
{
	float *xout; const float *xin, *gu, *W2; const float *dx; float *dW2, *dgu, *h, *dh; int N, D, F;
} SwArgs;

static void
swiglu_bw(void *ctx, const HwTapeRec *r)
{
	HwModel      *m = ctx;
	const SwArgs *a = (const SwArgs *) r->args.bytes;
	HwBackend    *be = m->be;

	be->ops->swiglu_forward(be, a->h, a->gu, a->N, a->F);
	be->ops->gemm(be, true, false, a->D, a->F, a->N, 1.0f, a->dx, a->D, a->h, a->F, 1.0f, a->dW2, a->F);
	be->ops->gemm(be, false, false, a->N, a->F, a->D, 1.0f, a->dx, a->D, a->W2, a->F, 0.0f, a->dh, a->F);
	be->ops->swiglu_backward(be, a->dgu, a->dh, a->gu, a->N, a->F);
}

typedef struct EncArgs
{
	HwEncInputs in; HwEncGrads g; const float *de; int N, D, ncols, Uc, U;
} EncArgs;

static void
encoder_bw(void *ctx, const HwTapeRec *r)
{
	HwModel       *m = ctx;
	const EncArgs *a = (const EncArgs *) r->args.bytes;

	m->be->ops->encoder_backward(m->be, &a->g, a->de, &a->in, a->N, a->D, a->ncols, a->Uc, a->U);
}

typedef struct HeadArgs
{
	const float *x; float *xt, *rstd, *hf; const float *g; const int32_t *idx;
	const float *dhf; float *dxt, *dg, *dx; int B, D;
} HeadArgs;

static void
final_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const HeadArgs *a = (const HeadArgs *) r->args.bytes;
	HwBackend      *be = m->be;

	be->ops->memset(be, a->dxt, 0, sizeof(float) * (size_t) a->B * a->D);
	be->ops->rmsnorm_backward(be, a->dxt, a->dg, a->dhf, a->xt, a->rstd, a->g, a->B, a->D);
	be->ops->scatter_add_rows(be, a->dx, a->dxt, a->idx, a->B, a->D);
}

/* ------------------------------------------------------------------ batch */

static int
prepare_batch(HwModel *m, const HwBatch *bt, HwError *err)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	int                 B = bt->B, S = bt->S, N = B * S, D = m->D, Dt = m->Dt;
	int32_t            *catl = m->h_i32a, *textl = m->h_i32b;
	int                 Uc = 0;

	if (B <= 0 || S <= 0 || B > m->Bmax || S > m->Smax)
		return hw_error_set(err, HW_ERR_INVALID, "batch of %d x %d does not fit the model's batch_size %d x seq_len %d",
							B, S, m->Bmax, m->Smax);
	if (bt->U > 0 && bt->d_text != Dt)
		return hw_error_set(err, HW_ERR_INVALID, "batch text embeddings have d_text %d, the model %d", bt->d_text, Dt);
	if (bt->U > N)
		return hw_error_set(err, HW_ERR_INVALID, "batch has %d text embeddings for %d cells", bt->U, N);
	if (bt->target_stype < HW_ST_NUMERICAL || bt->target_stype > HW_ST_CATEGORICAL)
		return hw_error_set(err, HW_ERR_INVALID, "target type %s has no prediction head (numerical, timestamp, boolean or categorical)",
							hw_stype_name(bt->target_stype) ? hw_stype_name(bt->target_stype) : "?");
	m->K = 0;
	if (bt->target_stype == HW_ST_CATEGORICAL)
	{
		if (bt->cat_emb_count == 0 || (int64_t) bt->cat_emb_start + bt->cat_emb_count > m->ncat)
			return hw_error_set(err, HW_ERR_INVALID, "categorical target block [%u, %u+%u) outside the category table of %d",
								bt->cat_emb_start, bt->cat_emb_start, bt->cat_emb_count, m->ncat);
		m->K = (int) bt->cat_emb_count;
	}
	for (int c = 0; c < m->ncat; c++)
		m->h_catmap[c] = -1;
	for (int b = 0; b < B; b++)
	{
		int nt = 0;

		for (int s = 0; s < S; s++)
		{
			int64_t i = (int64_t) b * S + s;

			if (bt->column_ids[i] < 0 || bt->column_ids[i] >= m->ncols)
				return hw_error_set(err, HW_ERR_INVALID, "column id %d at (%d,%d) outside the column table of %d",
									bt->column_ids[i], b, s, m->ncols);
			catl[i] = 0;
			textl[i] = 0;
			if (bt->is_target[i])
			{
				if (bt->is_padding[i])
					return hw_error_set(err, HW_ERR_INVALID, "sequence %d has its target on a padding position", b);
				nt++;
				m->h_tidx[b] = (int32_t) i;
				continue;
			}
			if (bt->is_null[i])
				continue;
			if (bt->semantic_types[i] == HW_ST_CATEGORICAL)
			{
				uint32_t id = bt->categorical_embed_ids[i];

				if (id >= (uint32_t) m->ncat)
					return hw_error_set(err, HW_ERR_INVALID, "category id %u at (%d,%d) outside the category table of %d",
										id, b, s, m->ncat);
				if (m->h_catmap[id] < 0)
				{
					m->h_catmap[id] = Uc;
					((int32_t *) m->h_f32)[Uc] = (int32_t) id;
					Uc++;
				}
				catl[i] = m->h_catmap[id];
			}
			else if (bt->semantic_types[i] == HW_ST_TEXT)
			{
				if (bt->text_embed_ids[i] >= (uint32_t) bt->U)
					return hw_error_set(err, HW_ERR_INVALID, "text id %u at (%d,%d) outside the batch's %d text embeddings",
										bt->text_embed_ids[i], b, s, bt->U);
				textl[i] = (int32_t) bt->text_embed_ids[i];
			}
		}
		if (nt != 1)
			return hw_error_set(err, HW_ERR_INVALID, "sequence %d has %d target cells (exactly one expected)", b, nt);
	}
	/* per-sequence targets */
	{
		int64_t ti;
		float  *tnum = malloc(sizeof(float) * B * 16);

		if (!tnum)
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
		for (int b = 0; b < B; b++)
		{
			ti = m->h_tidx[b];
			m->h_u8a[b] = bt->is_null[ti] ? 1 : 0;
			m->h_u8b[b] = bt->bool_values[ti] ? 1 : 0;
			tnum[b] = bt->numeric_values[ti];
			memcpy(tnum + B + b * 15, bt->timestamp_values + ti * 15, 15 * sizeof(float));
			m->h_tcat[b] = 0;
			if (bt->target_stype == HW_ST_CATEGORICAL && !bt->is_null[ti])
			{
				int64_t y = (int64_t) bt->categorical_embed_ids[ti] - bt->cat_emb_start;

				if (y < 0 || y >= m->K)
				{
					free(tnum);
					return hw_error_set(err, HW_ERR_INVALID, "target category %u of sequence %d outside its block [%u, %u)",
										bt->categorical_embed_ids[ti], b, bt->cat_emb_start,
										bt->cat_emb_start + bt->cat_emb_count);
				}
				m->h_tcat[b] = (int32_t) y;
			}
		}
		o->memcpy_h2d(be, m->d_tidx, m->h_tidx, sizeof(int32_t) * B);
		o->memcpy_h2d(be, m->d_tcat, m->h_tcat, sizeof(int32_t) * B);
		o->memcpy_h2d(be, m->d_tnull, m->h_u8a, B);
		o->memcpy_h2d(be, m->d_tbool, m->h_u8b, B);
		o->memcpy_h2d(be, m->d_tnum, tnum, sizeof(float) * B);
		o->memcpy_h2d(be, m->d_tts, tnum + B, sizeof(float) * B * 15);
		free(tnum);
	}
	if (m->cfg.rel_time)
	{
		/* [N, HW_REL_TIME_DIM]: non-zero only on visible timestamp cells of a
		 * sequence with an observation time (timeenc.h) */
		memset(m->h_trel, 0, sizeof(float) * (size_t) N * HW_REL_TIME_DIM);
		for (int b = 0; b < B; b++)
		{
			float ref = bt->seed_time[b];

			if (isnan(ref))
				continue;
			for (int s = 0; s < S; s++)
			{
				int64_t i = (int64_t) b * S + s;

				if (bt->semantic_types[i] == HW_ST_TIMESTAMP && !bt->is_null[i] && !bt->is_target[i] &&
					!bt->is_padding[i])
					hw_rel_time_features(ref, bt->timestamp_values[i * 15 + 14],
										 m->h_trel + i * HW_REL_TIME_DIM);
			}
		}
		o->memcpy_h2d(be, m->d_trel, m->h_trel, sizeof(float) * (size_t) N * HW_REL_TIME_DIM);
	}
	if (m->cfg.link_types)
	{
		/* [N, HW_LINK_DIM]: every cell of a row reached through an FK gets its link's code */
		for (int64_t i = 0; i < N; i++)
		{
			float *f = m->h_link + i * HW_LINK_DIM;

			if (bt->link_key[i] != 0 && !bt->is_padding[i])
				hw_link_code(bt->link_key[i], f);
			else
				memset(f, 0, sizeof(float) * HW_LINK_DIM);
		}
		o->memcpy_h2d(be, m->d_link, m->h_link, sizeof(float) * (size_t) N * HW_LINK_DIM);
	}
	if (m->cfg.child_counts)
	{
		/* [N, HW_CNT_DIM]: the cells of a row share its features, and a
		 * row's cells are consecutive: compute once per run of equal counts */
		const size_t nk = HW_CHILD_LINKS, nc = HW_CHILD_LINKS * HW_CHILD_WINDOWS;
		const size_t mk = HW_MEAN_SLOTS, mc = HW_MEAN_SLOTS * HW_CHILD_WINDOWS;
		const bool   means = m->cfg.child_means && bt->mean_key && bt->child_mean;

		for (int64_t i = 0; i < N; i++)
		{
			float          *f = m->h_cnt + i * HW_CNT_DIM;
			const uint32_t *key = bt->child_key + i * nk;
			const uint16_t *cnt = bt->child_count + i * nc;
			const uint32_t *mkey = means ? bt->mean_key + i * mk : NULL;
			const float    *mean = means ? bt->child_mean + i * mc : NULL;

			/* the count ramps (cfg.count_ramps, which needs child_counts) [N, HW_CRAMP_DIM], from the same counts */
			float          *r = m->cfg.count_ramps ? m->h_cramp + i * HW_CRAMP_DIM : NULL;
			bool            same = i > 0 && !bt->is_padding[i - 1] &&
								   memcmp(key, key - nk, sizeof(uint32_t) * nk) == 0 &&
								   memcmp(cnt, cnt - nc, sizeof(uint16_t) * nc) == 0;

			if (bt->is_padding[i])
				memset(f, 0, sizeof(float) * HW_CNT_DIM);
			else if (same && (!means || (memcmp(mkey, mkey - mk, sizeof(uint32_t) * mk) == 0 &&
										 memcmp(mean, mean - mc, sizeof(float) * mc) == 0)))
				memcpy(f, f - HW_CNT_DIM, sizeof(float) * HW_CNT_DIM);
			else
				hw_child_count_features(key, cnt, mkey, mean, f);
			if (r && bt->is_padding[i])
				memset(r, 0, sizeof(float) * HW_CRAMP_DIM);
			else if (r && same)
				memcpy(r, r - HW_CRAMP_DIM, sizeof(float) * HW_CRAMP_DIM);
			else if (r)
				hw_count_ramp_features(key, cnt, r);
		}
		o->memcpy_h2d(be, m->d_cnt, m->h_cnt, sizeof(float) * (size_t) N * HW_CNT_DIM);
		if (m->cfg.count_ramps)
			o->memcpy_h2d(be, m->d_cramp, m->h_cramp, sizeof(float) * (size_t) N * HW_CRAMP_DIM);
	}
	m->B = B;
	m->S = S;
	m->N = N;
	m->U = bt->U;
	m->Uc = Uc;
	m->stype = bt->target_stype;
	m->num_loss = bt->num_loss;
	/* a model without the ordinal head fits such a task by MAE (HwNumLoss) */
	m->ord_levels = m->cfg.ordinal_head && bt->target_stype == HW_ST_NUMERICAL ? bt->ord_levels : 0;
	m->ord_scale = bt->ord_scale;
	m->ord_shift = bt->ord_shift;
	o->memcpy_h2d(be, m->d_stype, bt->semantic_types, N);
	o->memcpy_h2d(be, m->d_col, bt->column_ids, sizeof(int32_t) * N);
	o->memcpy_h2d(be, m->d_is_null, bt->is_null, N);
	o->memcpy_h2d(be, m->d_is_target, bt->is_target, N);
	o->memcpy_h2d(be, m->d_bool, bt->bool_values, N);
	o->memcpy_h2d(be, m->d_num, bt->numeric_values, sizeof(float) * N);
	o->memcpy_h2d(be, m->d_ts, bt->timestamp_values, sizeof(float) * N * 15);
	o->memcpy_h2d(be, m->d_cat_local, catl, sizeof(int32_t) * N);
	o->memcpy_h2d(be, m->d_text_local, textl, sizeof(int32_t) * N);
	/* category rows used by the batch, then the target block (f16 -> f32 on the device) */
	if (Uc > 0)
		o->gather_f16_rows(be, m->cat_rows, m->cat_table, (const int32_t *) m->h_f32, Uc, Dt);
	if (m->K > 0)
	{
		for (int k = 0; k < m->K; k++)
			m->h_i32a[k] = (int32_t) bt->cat_emb_start + k;   /* catl already uploaded */
		o->gather_f16_rows(be, m->catblock, m->cat_table, m->h_i32a, m->K, Dt);
	}
	if (bt->U > 0)
	{
		for (int64_t i = 0; i < (int64_t) bt->U * Dt; i++)
			m->h_f32[i] = hw_f16_to_f32(bt->text_batch_embeddings[i]);
		o->memcpy_h2d(be, m->text_f32, m->h_f32, sizeof(float) * (size_t) bt->U * Dt);
	}
	/* attention plans */
	free_plans(m);
	for (int s = 0; s < m->A; s++)
	{
		HwAttnMaskInfo info = {
			.B = B, .S = S, .R = bt->R, .column_ids = bt->column_ids, .seq_row_ids = bt->seq_row_ids,
			.is_padding = bt->is_padding, .fk_adj = bt->fk_adj,
			.perm = sub_masks[s] == HW_MASK_COLUMN ? bt->col_perm : sub_masks[s] == HW_MASK_OUTBOUND ? bt->out_perm :
				sub_masks[s] == HW_MASK_INBOUND ? bt->in_perm : NULL,
		};

		m->plans[s] = o->attn_plan_create(be, &info, sub_masks[s], err);
		if (!m->plans[s])
		{
			free_plans(m);
			return err && err->code ? err->code : hw_error_set(err, HW_ERR_INVALID, "attention plan failed");
		}
	}
	(void) D;
	return HW_OK;
}

/* ------------------------------------------------------------------ forward */

static int
forward(HwModel *m, const HwBatch *bt, float *loss_out, HwError *err)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	int                 rc, D = m->D, Dt = m->Dt, N, B, HZ = HW_HEAD_Z(m->D);
	char                lbl[48];
	float              *x;
	double              t0, sum = 0;
	float              *lossh;

	hw_tape_reset(&m->tape);
	t0 = hw_now_ms();
	if ((rc = prepare_batch(m, bt, err)) != HW_OK)
		return rc;
	rec(m, "prepare_batch", "batch", "", bt->B, bt->S, NULL, NULL, 0, t0);
	N = m->N;
	B = m->B;

	/* projected tables */
	op_linear(m, "enc.colproj", "col_table,enc.col.w,enc.col.b",
			  (LinArgs){ .Y = m->colproj, .X = m->col_table, .W = P(m->o_col_w), .dY = m->dcolproj,
						 .dW = G(m->o_col_w), .db = G(m->o_col_b), .M = m->ncols, .Nout = D, .K = Dt,
						 .ldx = Dt, .ldy = D, .dw_beta = 1.0f }, P(m->o_col_b));
	if (m->Uc > 0)
		op_linear(m, "enc.catproj", "cat_rows,enc.cat.w,enc.cat.b",
				  (LinArgs){ .Y = m->catproj, .X = m->cat_rows, .W = P(m->o_cat_w), .dY = m->dcatproj,
							 .dW = G(m->o_cat_w), .db = G(m->o_cat_b), .M = m->Uc, .Nout = D, .K = Dt,
							 .ldx = Dt, .ldy = D, .dw_beta = 1.0f }, P(m->o_cat_b));
	if (m->U > 0)
		op_linear(m, "enc.textproj", "text_emb,enc.text.w,enc.text.b",
				  (LinArgs){ .Y = m->textproj, .X = m->text_f32, .W = P(m->o_text_w), .dY = m->dtextproj,
							 .dW = G(m->o_text_w), .db = G(m->o_text_b), .M = m->U, .Nout = D, .K = Dt,
							 .ldx = Dt, .ldy = D, .dw_beta = 1.0f }, P(m->o_text_b));
	{
		EncArgs a = {
			.in = { .stype = m->d_stype, .col = m->d_col, .is_null = m->d_is_null, .is_target = m->d_is_target,
					.num = m->d_num, .ts = m->d_ts, .boolv = m->d_bool, .cat_local = m->d_cat_local,
					.text_local = m->d_text_local },
			.g = { .colproj = m->dcolproj, .catproj = m->dcatproj, .textproj = m->dtextproj,
				   .id_emb = G(m->o_id), .null_emb = G(m->o_null), .mask_emb = G(m->o_mask),
				   .num_w = G(m->o_num_w), .num_b = G(m->o_num_b), .ts_w = G(m->o_ts_w), .ts_b = G(m->o_ts_b),
				   .bool_emb = G(m->o_bool) },
			.de = m->de, .N = N, .D = D, .ncols = m->ncols, .Uc = m->Uc, .U = m->U,
		};
		HwEncWeights w = {
			.colproj = m->colproj, .catproj = m->catproj, .textproj = m->textproj, .id_emb = P(m->o_id),
			.null_emb = P(m->o_null), .mask_emb = P(m->o_mask), .num_w = P(m->o_num_w), .num_b = P(m->o_num_b),
			.ts_w = P(m->o_ts_w), .ts_b = P(m->o_ts_b), .bool_emb = P(m->o_bool),
		};

		t0 = hw_now_ms();
		o->encoder_forward(be, m->e, &a.in, &w, N, D);
		rec(m, "encoder", "enc.e", "batch,colproj,catproj,textproj", N, D, encoder_bw, &a, sizeof(a), t0);
	}
	if (m->o_ts_rel >= 0)
		op_side(m, "enc.ts_rel", "batch,enc.ts_rel.w", m->d_trel, m->o_ts_rel, N, HW_REL_TIME_DIM);
	if (m->o_link >= 0)
		op_side(m, "enc.link", "batch,enc.link.w", m->d_link, m->o_link, N, HW_LINK_DIM);
	if (m->o_cnt >= 0)
		op_side(m, "enc.cnt", "batch,enc.cnt.w", m->d_cnt, m->o_cnt, N, HW_CNT_DIM);
	if (m->o_cramp >= 0)
		op_side(m, "enc.cramp", "batch,enc.cramp.w", m->d_cramp, m->o_cramp, N, HW_CRAMP_DIM);
	x = m->L > 0 ? m->sa[0].x_in : m->x_final;
	op_rmsnorm(m, "h0", "enc.e,enc.norm.g",
			   (NormArgs){ .out = x, .rstd = m->rstd0, .x = m->e, .g = P(m->o_enc_g), .dout = m->dx,
						   .dx = m->de, .dg = G(m->o_enc_g), .N = N, .D = D, .zero_dx = 1 });

	for (int l = 0; l < m->L; l++)
	{
		for (int s = 0; s < m->A; s++)
		{
			SubAct    *a = &m->sa[l * m->A + s];
			SubParams *p = &m->sp[l * m->A + s];
			float     *xout = s + 1 < m->A ? m->sa[l * m->A + s + 1].x_in : m->fa[l].x_in;
			const char *sn = sub_names[s];

			snprintf(lbl, sizeof(lbl), "layer%d.%s.qkvg", l, sn);
			op_norm_linear(m, lbl, "x,norm.g,wq|wk|wv|wgate",
						   (NLArgs){ .Y = a->qkvg, .rstd = a->rstd, .x = a->x_in, .g = P(p->norm_g), .W = P(p->w4),
									 .dY = m->dqkvg, .dx = m->dx, .dg = G(p->norm_g), .dW = G(p->w4),
									 .xn = m->xn, .dxn = m->dxn, .N = N, .D = D, .Nout = 4 * D });
			{
				QKArgs q = { .qs = a->qs, .kn = a->kn, .v = a->v, .qnorm = a->qnorm, .knorm = a->knorm,
							 .qkvg = a->qkvg, .tau = P(p->tau), .dqs = m->dqs, .dkn = m->dkn, .dv = m->dv,
							 .dqkvg = m->dqkvg, .dtau = G(p->tau), .N = N, .H = m->H, .dh = m->dh };

				t0 = hw_now_ms();
				o->qknorm_forward(be, q.qs, q.kn, q.v, q.qnorm, q.knorm, q.qkvg, q.tau, N, m->H, m->dh);
				snprintf(lbl, sizeof(lbl), "layer%d.%s.qknorm", l, sn);
				rec(m, "qknorm", lbl, "qkvg,tau", N, D, qknorm_bw, &q, sizeof(q), t0);
			}
			{
				AttArgs at = { .out = a->att, .lse = a->lse, .q = a->qs, .k = a->kn, .v = a->v,
							   .plan = m->plans[s], .dout = m->datt, .dq = m->dqs, .dk = m->dkn, .dv = m->dv,
							   .H = m->H, .dh = m->dh };

				t0 = hw_now_ms();
				o->attn_forward(be, at.out, at.lse, at.q, at.k, at.v, at.plan, m->H, m->dh);
				snprintf(lbl, sizeof(lbl), "layer%d.%s.attn", l, sn);
				rec(m, "attention", lbl, "qs,kn,v", N, D, attn_bw, &at, sizeof(at), t0);
			}
			snprintf(lbl, sizeof(lbl), "layer%d.%s.o", l, sn);
			op_linear(m, lbl, "attn,wo",
					  (LinArgs){ .Y = a->o, .X = a->att, .W = P(p->wo), .dY = m->dO, .dX = m->datt,
								 .dW = G(p->wo), .M = N, .Nout = D, .K = D, .ldx = D, .ldy = D,
								 .dx_beta = 0.0f, .dw_beta = 1.0f }, NULL);
			{
				GateArgs g = { .xout = xout, .xin = a->x_in, .gp = a->qkvg + 3 * D, .o = a->o, .dx = m->dx,
							   .dgp = m->dqkvg + 3 * D, .dO = m->dO, .ld = 4 * D, .N = N, .D = D };

				t0 = hw_now_ms();
				o->gate_residual_forward(be, xout, g.xin, g.gp, g.ld, g.o, N, D);
				snprintf(lbl, sizeof(lbl), "layer%d.%s.residual", l, sn);
				rec(m, "gate_residual", lbl, "x,gate,o", N, D, gate_bw, &g, sizeof(g), t0);
			}
		}
		{
			SubAct    *a = &m->fa[l];
			FfnParams *p = &m->fp[l];
			float     *xout = l + 1 < m->L ? m->sa[(l + 1) * m->A].x_in : m->x_final;
			SwArgs     sw;

			snprintf(lbl, sizeof(lbl), "layer%d.ffn.gu", l);
			op_norm_linear(m, lbl, "x,norm.g,wg|wu",
						   (NLArgs){ .Y = a->qkvg, .rstd = a->rstd, .x = a->x_in, .g = P(p->norm_g), .W = P(p->wgu),
									 .dY = m->dgu, .dx = m->dx, .dg = G(p->norm_g), .dW = G(p->wgu),
									 .xn = m->xn, .dxn = m->dxn, .N = N, .D = D, .Nout = 2 * m->F });
			sw = (SwArgs){ .xout = xout, .xin = a->x_in, .gu = a->qkvg, .W2 = P(p->w2), .dx = m->dx,
						   .dW2 = G(p->w2), .dgu = m->dgu, .h = m->hbuf, .dh = m->dhbuf, .N = N, .D = D, .F = m->F };
			t0 = hw_now_ms();
			o->swiglu_forward(be, m->hbuf, a->qkvg, N, m->F);
			o->memcpy_d2d(be, xout, a->x_in, sizeof(float) * (size_t) N * D);
			o->gemm(be, false, true, N, D, m->F, 1.0f, m->hbuf, m->F, P(p->w2), m->F, 1.0f, xout, D);
			snprintf(lbl, sizeof(lbl), "layer%d.ffn.residual", l);
			rec(m, "swiglu_w2_residual", lbl, "x,gu,w2", N, D, swiglu_bw, &sw, sizeof(sw), t0);
		}
	}

	/* heads on the target positions */
	{
		HeadArgs h = { .x = m->x_final, .xt = m->xt, .rstd = m->rstdf, .hf = m->hf, .g = P(m->o_final_g),
					   .idx = m->d_tidx, .dhf = m->dhf, .dxt = m->dxt, .dg = G(m->o_final_g), .dx = m->dx,
					   .B = B, .D = D };

		t0 = hw_now_ms();
		o->gather_rows(be, m->xt, m->x_final, m->d_tidx, B, D);
		o->rmsnorm_forward(be, m->hf, m->rstdf, m->xt, P(m->o_final_g), B, D);
		rec(m, "final_norm", "hf", "x[target],final.norm.g", B, D, final_bw, &h, sizeof(h), t0);
	}
	if (m->K > 0)
		op_linear(m, "cat_block", "cat_table[start:start+K],enc.cat.w,enc.cat.b",
				  (LinArgs){ .Y = m->E, .X = m->catblock, .W = P(m->o_cat_w), .dY = m->dE,
							 .dW = G(m->o_cat_w), .db = G(m->o_cat_b), .M = m->K, .Nout = D, .K = Dt,
							 .ldx = Dt, .ldy = D, .dw_beta = 1.0f }, P(m->o_cat_b));
	/* recorded before "heads": the backward runs heads first, which
	 * writes dhf (dx_beta 0), then this, which adds to it */
	if (m->ord_levels > 0)
		op_linear(m, "ord_head", "hf,head.ord.w,head.ord.b",
				  (LinArgs){ .Y = m->Zo, .X = m->hf, .W = P(m->o_ord_w), .dY = m->dZo, .dX = m->dhf,
							 .dW = G(m->o_ord_w), .db = G(m->o_ord_b), .M = B, .Nout = HW_ORD_LEVELS, .K = D,
							 .ldx = D, .ldy = HW_ORD_LEVELS, .dx_beta = 1.0f, .dw_beta = 1.0f }, P(m->o_ord_b));
	op_linear(m, "heads", "hf,head.w,head.b",
			  (LinArgs){ .Y = m->Z, .X = m->hf, .W = P(m->o_head_w), .dY = m->dZ, .dX = m->dhf,
						 .dW = G(m->o_head_w), .db = G(m->o_head_b), .M = B, .Nout = HZ, .K = D,
						 .ldx = D, .ldy = HZ, .dx_beta = 0.0f, .dw_beta = 1.0f }, P(m->o_head_b));
	if (m->K > 0)
		op_linear(m, "cat_logits", "heads[cat],cat_block",
				  (LinArgs){ .Y = m->logits, .X = m->Z + HW_HEAD_CAT, .W = m->E, .dY = m->dlogits,
							 .dX = m->dZ + HW_HEAD_CAT, .dW = m->dE, .M = B, .Nout = m->K, .K = D,
							 .ldx = HZ, .ldy = m->K, .dx_beta = 1.0f, .dw_beta = 0.0f }, NULL);
	{
		HwLossTargets t = { .is_null = m->d_tnull, .num = m->d_tnum, .boolv = m->d_tbool, .ts = m->d_tts,
							.cat = m->d_tcat, .num_loss = m->num_loss == HW_NUM_LOSS_ORDINAL ? HW_NUM_LOSS_MAE : m->num_loss,
							.ord_levels = m->ord_levels, .ord_scale = m->ord_scale, .ord_shift = m->ord_shift,
							.ord_z = m->Zo, .ord_dz = m->dZo };

		t0 = hw_now_ms();
		o->loss_forward_backward(be, m->lossb, m->dZ, m->dlogits, m->Z, m->logits, &t, m->stype, B, D,
								 m->K, 1.0f / (float) B);
		rec(m, "loss", "loss", "heads,targets", B, 0, NULL, NULL, 0, t0);
	}
	lossh = (float *) m->h_f32;
	o->memcpy_d2h(be, lossh, m->lossb, sizeof(float) * B);
	for (int b = 0; b < B; b++)
		sum += lossh[b];
	*loss_out = (float) (sum / B);
	if (!isfinite(*loss_out))
		return hw_error_set(err, HW_ERR_NUMERIC, "loss is %s at step %lld: training stopped, parameters unchanged",
							isnan(*loss_out) ? "NaN" : "infinite", (long long) m->step + 1);
	return HW_OK;
}

int
hw_model_forward_backward(HwModel *m, const HwBatch *bt, float *loss, HwError *err)
{
	if (m->frozen)
		return hw_error_set(err, HW_ERR_INVALID, "a frozen (serving) model has no gradients");
	int rc = forward(m, bt, loss, err);

	if (rc != HW_OK)
		return backend_cause(m->be, rc, err);
	m->be->ops->memset(m->be, m->grads, 0, sizeof(float) * (size_t) m->pt.numel);
	m->be->ops->memset(m->be, m->dx, 0, sizeof(float) * (size_t) m->N * m->D);
	hw_tape_backward(&m->tape, m);
	return HW_OK;
}

int
hw_model_optimizer_step(HwModel *m, float *gnorm, float *lr, HwError *err)
{
	if (m->frozen)
		return hw_error_set(err, HW_ERR_INVALID, "a frozen (serving) model cannot be trained");
	if (m->ema_swapped || m->ema_adopted)
		return hw_error_set(err, HW_ERR_INVALID, "the model %s: it cannot be trained",
							m->ema_adopted ? "is loaded to predict (its parameter average adopted or dropped)"
							: "reads its parameter average (swapped in)");
	int rc = hw_optim_step(m->be, &m->cfg, m->pt.p, m->pt.n, m->params, m->grads, m->m1, m->m2,
						   m->muon_work, m->step + 1, gnorm, lr, err);

	if (rc == HW_OK)
	{
		m->step++;
		if (m->ema)
		{
			float d = hw_ema_weight(m->cfg.ema_decay, m->step);

			/* ema = d * ema + (1 - d) * params */
			m->be->ops->axpby(m->be, m->ema, 1.0f - d, m->params, d, (size_t) m->pt.numel);
		}
	}
	return rc == HW_OK ? rc : backend_cause(m->be, rc, err);
}

int
hw_model_train_step(HwModel *m, const HwBatch *bt, HwStepResult *res, HwError *err)
{
	float loss = 0, gn = 0, lr = 0;
	int   rc;

	memset(res, 0, sizeof(*res));
	if ((rc = hw_model_forward_backward(m, bt, &loss, err)) != HW_OK)
		return rc;
	res->loss = loss;
	rc = hw_model_optimizer_step(m, &gn, &lr, err);
	res->grad_norm = gn;
	res->lr = lr;
	res->step = m->step;
	return rc;
}

HwPredictions *
hw_predictions_alloc(int32_t B, int32_t K)
{
	HwPredictions *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->B = B;
	p->K = K;
	p->p_null = calloc(B, sizeof(float));
	p->value = calloc(B, sizeof(float));
	p->ts = calloc((size_t) B * 15, sizeof(float));
	p->cat_probs = calloc((size_t) B * (K > 0 ? K : 1), sizeof(float));
	p->loss = calloc(B, sizeof(float));
	p->ord_p = calloc((size_t) B * HW_ORD_LEVELS, sizeof(float));
	if (!p->p_null || !p->value || !p->ts || !p->cat_probs || !p->loss || !p->ord_p)
	{
		hw_predictions_free(p);
		return NULL;
	}
	return p;
}

void
hw_predictions_free(HwPredictions *p)
{
	if (!p)
		return;
	free(p->p_null);
	free(p->value);
	free(p->ts);
	free(p->cat_probs);
	free(p->loss);
	free(p->ord_p);
	free(p);
}

float
hw_ordinal_median_level(const float *logits, int levels)
{
	/* S_k = P(level > k); S_-1 = 1.  The median is the first k with
	 * S_k < 1/2 (not assuming the S_k decrease: the first crossing). */
	float prev = 1.0f;

	for (int k = 0; k < levels; k++)
	{
		float sk = 1.0f / (1.0f + expf(-logits[k]));

		if (sk < 0.5f)
		{
			/* inside [k - 1/2, k + 1/2), nearer k - 1/2 as S_{k-1} nears 1/2 */
			float f = (prev - 0.5f) / (prev - sk);

			f = fminf(fmaxf(f, 0.001f), 0.999f);
			return (float) k - 0.5f + f;
		}
		prev = sk;
	}
	/* every threshold passed: the top level, above it as S nears 1 */
	return (float) levels - 0.5f + fminf(fmaxf(prev, 0.501f), 0.999f);
}

float
hw_ordinal_median_z(const float *logits, int levels, float scale, float shift)
{
	return (hw_ordinal_median_level(logits, levels) - shift) / (scale != 0 ? scale : 1.0f);
}

/* Copies the heads' outputs of the current batch (m->Z, m->logits, m->Zo) to
 * pred and decodes them (sigmoid, softmax over the category block, the
 * ordinal median); with_loss: also the per-sequence loss (training forward
 * only). */
static int
decode_predictions(HwModel *m, HwPredictions *pred, bool with_loss, HwError *err)
{
	int    rc, B = m->B, HZ = HW_HEAD_Z(m->D), K = m->K;
	float *Z, *lg, *zo;

	if (pred->B < B || pred->K < K)
		return hw_error_set(err, HW_ERR_INVALID, "prediction buffers sized %d x %d, batch needs %d x %d", pred->B, pred->K, B, K);
	Z = malloc(sizeof(float) * ((size_t) B * HZ + (size_t) B * (K > 0 ? K : 1) + (size_t) B * HW_ORD_LEVELS));
	if (!Z)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	lg = Z + (size_t) B * HZ;
	zo = lg + (size_t) B * (K > 0 ? K : 1);
	m->be->ops->memcpy_d2h(m->be, Z, m->Z, sizeof(float) * B * HZ);
	if (K > 0)
		m->be->ops->memcpy_d2h(m->be, lg, m->logits, sizeof(float) * B * K);
	if (m->ord_levels > 0)
		m->be->ops->memcpy_d2h(m->be, zo, m->Zo, sizeof(float) * B * HW_ORD_LEVELS);
	if (with_loss)
		m->be->ops->memcpy_d2h(m->be, pred->loss, m->lossb, sizeof(float) * B);
	else
		memset(pred->loss, 0, sizeof(float) * B);
	if ((rc = backend_cause(m->be, HW_OK, err)) != HW_OK)
	{
		free(Z);
		return rc;
	}
	pred->stype = m->stype;
	pred->ord_levels = m->stype == HW_ST_NUMERICAL ? m->ord_levels : 0;
	for (int b = 0; b < B; b++)
	{
		const float *z = Z + (size_t) b * HZ;

		pred->p_null[b] = 1.0f / (1.0f + expf(-z[HW_HEAD_NULL]));
		memcpy(pred->ts + b * 15, z + HW_HEAD_TS, 15 * sizeof(float));
		switch (m->stype)
		{
			case HW_ST_NUMERICAL:
				for (int k = 0; k < m->ord_levels; k++)
					pred->ord_p[(size_t) b * HW_ORD_LEVELS + k] = 1.0f / (1.0f + expf(-zo[(size_t) b * HW_ORD_LEVELS + k]));
				pred->value[b] = m->ord_levels > 0
					? hw_ordinal_median_z(zo + (size_t) b * HW_ORD_LEVELS, m->ord_levels, m->ord_scale, m->ord_shift)
					: z[HW_HEAD_NUM];
				break;
			case HW_ST_BOOLEAN: pred->value[b] = 1.0f / (1.0f + expf(-z[HW_HEAD_BOOL])); break;
			case HW_ST_TIMESTAMP: pred->value[b] = z[HW_HEAD_TS + 14]; break;
			case HW_ST_CATEGORICAL:
			{
				const float *l = lg + (size_t) b * K;
				float        mx = -INFINITY;
				double       s = 0;
				int          am = 0;

				for (int k = 0; k < K; k++)
					if (l[k] > mx)
					{
						mx = l[k];
						am = k;
					}
				for (int k = 0; k < K; k++)
					s += exp((double) (l[k] - mx));
				for (int k = 0; k < K; k++)
					pred->cat_probs[(size_t) b * pred->K + k] = (float) (exp((double) (l[k] - mx)) / s);
				pred->value[b] = (float) am;
				break;
			}
		}
	}
	free(Z);
	return HW_OK;
}

int
hw_model_eval(HwModel *m, const HwBatch *bt, float *loss, HwPredictions *pred, HwError *err)
{
	int rc = forward(m, bt, loss, err);

	if (rc != HW_OK)
		return backend_cause(m->be, rc, err);
	if (!pred)
		return HW_OK;
	return decode_predictions(m, pred, true, err);
}

/* ------------------------------------------------------------------ inference
 *
 * hw_model_predict: the forward of forward() with the same backend entries
 * in the same order on the same buffers, minus what only training needs: no
 * tape records, no loss, no per-op timing.  One shortcut that does not
 * change a row's arithmetic: after the last attention sublayer's attention
 * only the target cell's residual stream reaches the heads, so its output
 * projection, gated residual and the last FFN run on the B target rows
 * (gathered) instead of all B*S cells (~12% of the small preset's forward
 * GEMM work).  Every row is computed by the same kernels whatever the other
 * rows of the batch (the backend's GEMM blocks and row-wise entries), so a
 * sequence's predictions are bit-identical alone or in any batch
 * (test_model_infer.c checks it).
 */
/*
 * C[nb*rows, N] (=, or += with beta 1) A @ W[N,K]^T (A rows of stride lda)
 * as nb backend GEMM calls of `rows` rows each: one call per sequence
 * (rows = S) or per row (rows = 1).  BLAS kernels give a row other bits by
 * its position inside the call and by the call's shape (OpenBLAS's Haswell
 * sgemm: rows 6-11 of every 12 are summed differently from rows 0-5, and a
 * tail of rows differently again), so a row must always sit at the same
 * place of a call of the same shape: then a sequence gets the same bits
 * alone and in any batch, whatever the thread count (the backend splits a
 * call by its shape only).
 */
static void
gemm_blocks(HwModel *m, int nb, int rows, int N, int K, const float *A, int lda, const float *W, float beta,
			float *C, int ldc)
{
	if (m->be->ops->gemm_rows_batched)
	{
		m->be->ops->gemm_rows_batched(m->be, nb, rows, N, K, A, lda, W, beta, C, ldc);
		return;
	}
	for (int b = 0; b < nb; b++)
		m->be->ops->gemm(m->be, false, true, rows, N, K, 1.0f, A + (size_t) b * rows * lda, lda, W, K, beta,
						 C + (size_t) b * rows * ldc, ldc);
}

static int
infer_forward(HwModel *m, const HwBatch *bt, HwError *err)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	int                 rc, D = m->D, Dt = m->Dt, F = m->F, N, B, HZ = HW_HEAD_Z(m->D);
	float              *x;

	if ((rc = prepare_batch(m, bt, err)) != HW_OK)
		return rc;
	N = m->N;
	B = m->B;

	/* projected tables [ncols|Uc|U, D] */
	o->gemm(be, false, true, m->ncols, D, Dt, 1.0f, m->col_table, Dt, P(m->o_col_w), Dt, 0.0f, m->colproj, D);
	o->add_bias(be, m->colproj, P(m->o_col_b), m->ncols, D);
	if (m->Uc > 0)
	{
		gemm_blocks(m, m->Uc, 1, D, Dt, m->cat_rows, Dt, P(m->o_cat_w), 0.0f, m->catproj, D);
		o->add_bias(be, m->catproj, P(m->o_cat_b), m->Uc, D);
	}
	if (m->U > 0)
	{
		gemm_blocks(m, m->U, 1, D, Dt, m->text_f32, Dt, P(m->o_text_w), 0.0f, m->textproj, D);
		o->add_bias(be, m->textproj, P(m->o_text_b), m->U, D);
	}
	{
		HwEncInputs in = { .stype = m->d_stype, .col = m->d_col, .is_null = m->d_is_null, .is_target = m->d_is_target,
						   .num = m->d_num, .ts = m->d_ts, .boolv = m->d_bool, .cat_local = m->d_cat_local,
						   .text_local = m->d_text_local };
		HwEncWeights w = {
			.colproj = m->colproj, .catproj = m->catproj, .textproj = m->textproj, .id_emb = P(m->o_id),
			.null_emb = P(m->o_null), .mask_emb = P(m->o_mask), .num_w = P(m->o_num_w), .num_b = P(m->o_num_b),
			.ts_w = P(m->o_ts_w), .ts_b = P(m->o_ts_b), .bool_emb = P(m->o_bool),
		};

		o->encoder_forward(be, m->e, &in, &w, N, D);
	}
	if (m->o_ts_rel >= 0)
		gemm_blocks(m, B, m->S, D, HW_REL_TIME_DIM, m->d_trel, HW_REL_TIME_DIM, P(m->o_ts_rel), 1.0f, m->e, D);
	if (m->o_link >= 0)
		gemm_blocks(m, B, m->S, D, HW_LINK_DIM, m->d_link, HW_LINK_DIM, P(m->o_link), 1.0f, m->e, D);
	if (m->o_cnt >= 0)
		gemm_blocks(m, B, m->S, D, HW_CNT_DIM, m->d_cnt, HW_CNT_DIM, P(m->o_cnt), 1.0f, m->e, D);
	if (m->o_cramp >= 0)
		gemm_blocks(m, B, m->S, D, HW_CRAMP_DIM, m->d_cramp, HW_CRAMP_DIM, P(m->o_cramp), 1.0f, m->e, D);
	x = m->L > 0 ? m->sa[0].x_in : m->x_final;
	o->rmsnorm_forward(be, x, m->rstd0, m->e, P(m->o_enc_g), N, D);

	for (int l = 0; l < m->L; l++)
	{
		for (int s = 0; s < m->A; s++)
		{
			SubAct    *a = &m->sa[l * m->A + s];
			SubParams *p = &m->sp[l * m->A + s];
			bool       last = l == m->L - 1 && s == m->A - 1;
			float     *xout = s + 1 < m->A ? m->sa[l * m->A + s + 1].x_in : m->fa[l].x_in;

			/* [q|k|v|gp] [N,4D] = rms(x) @ W4^T */
			o->rmsnorm_forward(be, m->xn, a->rstd, a->x_in, P(p->norm_g), N, D);
			gemm_blocks(m, B, m->S, 4 * D, D, m->xn, D, P(p->w4), 0.0f, a->qkvg, 4 * D);
			o->qknorm_forward(be, a->qs, a->kn, a->v, a->qnorm, a->knorm, a->qkvg, P(p->tau), N, m->H, m->dh);
			o->attn_forward(be, a->att, a->lse, a->qs, a->kn, a->v, m->plans[s], m->H, m->dh);
			if (!last)
			{
				gemm_blocks(m, B, m->S, D, D, a->att, D, P(p->wo), 0.0f, a->o, D);
				o->gate_residual_forward(be, xout, a->x_in, a->qkvg + 3 * D, 4 * D, a->o, N, D);
				continue;
			}
			/* target rows only from here: att, x_in, qkvg rows -> [B, *] */
			{
				float *att_t = m->datt, *xin_t = m->dqs, *o_t = m->dO, *g_t = m->dqkvg;

				o->gather_rows(be, att_t, a->att, m->d_tidx, B, D);
				o->gather_rows(be, xin_t, a->x_in, m->d_tidx, B, D);
				o->gather_rows(be, g_t, a->qkvg, m->d_tidx, B, 4 * D);
				gemm_blocks(m, B, 1, D, D, att_t, D, P(p->wo), 0.0f, o_t, D);
				o->gate_residual_forward(be, m->dkn, xin_t, g_t + 3 * D, 4 * D, o_t, B, D);
			}
		}
		{
			SubAct    *a = &m->fa[l];
			FfnParams *p = &m->fp[l];
			bool       last = l == m->L - 1;
			int        R = last ? B : N;                         /* rows: all cells, or the B targets */
			const float *xin = last ? m->dkn : a->x_in;          /* [R,D] */
			float     *xout = last ? m->xt : l + 1 < m->L ? m->sa[(l + 1) * m->A].x_in : m->x_final;

			o->rmsnorm_forward(be, m->xn, a->rstd, xin, P(p->norm_g), R, D);
			gemm_blocks(m, B, R / B, 2 * F, D, m->xn, D, P(p->wgu), 0.0f, a->qkvg, 2 * F);
			o->swiglu_forward(be, m->hbuf, a->qkvg, R, F);
			o->memcpy_d2d(be, xout, xin, sizeof(float) * (size_t) R * D);
			gemm_blocks(m, B, R / B, D, F, m->hbuf, F, P(p->w2), 1.0f, xout, D);
		}
	}
	/* heads on the target positions: xt [B,D] (L == 0: gather from x_final) */
	if (m->L == 0)
		o->gather_rows(be, m->xt, m->x_final, m->d_tidx, B, D);
	o->rmsnorm_forward(be, m->hf, m->rstdf, m->xt, P(m->o_final_g), B, D);
	if (m->K > 0)
	{
		o->gemm(be, false, true, m->K, D, Dt, 1.0f, m->catblock, Dt, P(m->o_cat_w), Dt, 0.0f, m->E, D);
		o->add_bias(be, m->E, P(m->o_cat_b), m->K, D);
	}
	gemm_blocks(m, B, 1, HZ, D, m->hf, D, P(m->o_head_w), 0.0f, m->Z, HZ);
	o->add_bias(be, m->Z, P(m->o_head_b), B, HZ);
	if (m->ord_levels > 0)
	{
		gemm_blocks(m, B, 1, HW_ORD_LEVELS, D, m->hf, D, P(m->o_ord_w), 0.0f, m->Zo, HW_ORD_LEVELS);
		o->add_bias(be, m->Zo, P(m->o_ord_b), B, HW_ORD_LEVELS);
	}
	if (m->K > 0)
		gemm_blocks(m, B, 1, m->K, D, m->Z + HW_HEAD_CAT, HZ, m->E, 0.0f, m->logits, m->K);
	return HW_OK;
	return HW_OK;
}

int
hw_model_predict(HwModel *m, const HwBatch *bt, HwPredictions *pred, HwError *err)
{
	int rc = infer_forward(m, bt, err);

	if (rc != HW_OK)
		return backend_cause(m->be, rc, err);
	return decode_predictions(m, pred, false, err);
}

/* ------------------------------------------------------------------ access */

static float *
buf_of(HwModel *m, int which)
{
	switch (which)
	{
		case 0: return m->params;
		case 1: return m->grads;
		case 2: return m->m1;
		case 3: return m->m2;
		case 4: return m->ema;
	}
	return NULL;
}

float
hw_ema_weight(float ema_decay, int64_t t)
{
	double warm = (1.0 + (double) t) / (10.0 + (double) t);

	return (float) (ema_decay < warm ? ema_decay : warm);
}

int
hw_model_has_ema(const HwModel *m)
{
	return m->ema != NULL;
}

int
hw_model_ema_swapped(const HwModel *m)
{
	return m->ema_swapped;
}

int
hw_model_ema_adopted(const HwModel *m)
{
	return m->ema_adopted;
}

int
hw_model_swap_ema(HwModel *m, HwError *err)
{
	float *t;

	if (m->ema == NULL)
		return hw_error_set(err, HW_ERR_INVALID, "the model keeps no parameter average to swap (%s)",
							m->ema_adopted ? "it was loaded to predict" : "ema_decay is 0");
	/* parameters are read at offsets from m->params: swapping the pointers swaps every tensor */
	t = m->params;
	m->params = m->ema;
	m->ema = t;
	m->ema_swapped = !m->ema_swapped;
	return HW_OK;
}

int
hw_model_adopt_ema(HwModel *m, HwError *err)
{
	if (m->frozen)
		return hw_error_set(err, HW_ERR_INVALID, "a frozen (serving) model has no parameter average to adopt");
	if (m->ema == NULL)
		return HW_OK;
	/* swapped: params is the average already; the other buffer goes */
	if (!m->ema_swapped)
		m->be->ops->memcpy_d2d(m->be, m->params, m->ema, sizeof(float) * (size_t) m->pt.numel);
	m->be->ops->free(m->be, m->ema);
	m->ema = NULL;
	m->ema_swapped = 0;
	m->ema_adopted = 1;
	return backend_cause(m->be, HW_OK, err);
}

int
hw_model_drop_ema(HwModel *m, HwError *err)
{
	if (m->frozen)
		return hw_error_set(err, HW_ERR_INVALID, "a frozen (serving) model has no parameter average to drop");
	if (m->ema == NULL)
		return HW_OK;
	/* swapped: the last parameters are in the other buffer; swap them back */
	if (m->ema_swapped)
	{
		float *t = m->params;

		m->params = m->ema;
		m->ema = t;
	}
	m->be->ops->free(m->be, m->ema);
	m->ema = NULL;
	m->ema_swapped = 0;
	m->ema_adopted = 1;
	return HW_OK;
}

float *
hw_model_device_buffer(HwModel *m, int which)
{
	return buf_of(m, which);
}

HwBackend *
hw_model_backend(HwModel *m)
{
	return m->be;
}

int
hw_model_get_tensor(HwModel *m, int which, const char *name, float *dst, int64_t n, HwError *err)
{
	int    i = hw_params_find(&m->pt, name);
	float *b = buf_of(m, which);

	if (i < 0 || !b)
		return hw_error_set(err, HW_ERR_INVALID, "no parameter \"%s\"", name);
	if (n != m->pt.p[i].numel)
		return hw_error_set(err, HW_ERR_INVALID, "parameter \"%s\" has %lld elements, not %lld", name,
							(long long) m->pt.p[i].numel, (long long) n);
	m->be->ops->memcpy_d2h(m->be, dst, b + m->pt.p[i].offset, sizeof(float) * (size_t) n);
	return backend_cause(m->be, HW_OK, err);
}

int
hw_model_set_tensor(HwModel *m, int which, const char *name, const float *src, int64_t n, HwError *err)
{
	int    i = hw_params_find(&m->pt, name);
	float *b = m->frozen ? NULL : buf_of(m, which);

	if (i < 0 || !b)
		return hw_error_set(err, HW_ERR_INVALID, "no parameter \"%s\"%s", name, m->frozen ? " to write (frozen model)" : "");
	if (n != m->pt.p[i].numel)
		return hw_error_set(err, HW_ERR_INVALID, "parameter \"%s\" has %lld elements, not %lld", name,
							(long long) m->pt.p[i].numel, (long long) n);
	m->be->ops->memcpy_h2d(m->be, b + m->pt.p[i].offset, src, sizeof(float) * (size_t) n);
	return HW_OK;
}

int
hw_model_get_flat(HwModel *m, int which, float *dst)
{
	float *b = buf_of(m, which);

	if (!b)
		return HW_ERR_INVALID;
	m->be->ops->memcpy_d2h(m->be, dst, b, sizeof(float) * (size_t) m->pt.numel);
	return HW_OK;
}

int
hw_model_set_flat(HwModel *m, int which, const float *src)
{
	float *b = m->frozen ? NULL : buf_of(m, which);

	if (!b)
		return HW_ERR_INVALID;
	m->be->ops->memcpy_h2d(m->be, b, src, sizeof(float) * (size_t) m->pt.numel);
	return HW_OK;
}
