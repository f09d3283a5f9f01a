/*
 * model_params.c: the parameter table (names, shapes, optimiser and decay of every
 * tensor, in one flat layout) and the initial values.
 */

#include "core/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

int
model_build_params(HwModel *m)
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
void
model_init_params(HwModel *m, float *host)
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
			std = 0;   /* the ramps start with no effect (docs/model.md, Count ramps) */
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
