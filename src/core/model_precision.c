/*
 * model_precision.c: the serving forward's precision
 * (hw_model_set_inference_precision): copies of the transformer layers'
 * weights (w4, wo, wgu, w2: ~all of the forward's GEMM work) packed once
 * by the backend, in bf16 (backend.h bf16_weight_pack) or in fp32
 * (f32_weight_pack, where the backend has it; else the fp32 GEMMs run on
 * OpenBLAS blocks), read by model_infer.c's GEMMs; and, with either, fp32
 * packs of the encoder's side-feature projections.  Attention, norms, the
 * table projections and the heads stay fp32 as in training.
 * And the training GEMMs' precision (hw_model_set_train_precision): a flag
 * model_ops.c reads; their weights change every step, so the backend packs
 * them per product (gemm_bf16_any).
 */
#include "core/model_internal.h"

#include <stdlib.h>

static bool
backend_has_bf16(HwBackend *be)
{
	return be->ops->bf16_usable && be->ops->bf16_weight_pack && be->ops->gemm_bf16 && be->ops->bf16_usable(be);
}

/* precision auto: bf16 where it is usable and beats fp32 here, for the
 * training products (training) or the served model's */
static bool
backend_prefers_bf16(HwBackend *be, bool training)
{
	return backend_has_bf16(be) && (!be->ops->bf16_preferred || be->ops->bf16_preferred(be, training));
}

/* the backend can pack fp32 weights for the served fp32 GEMMs */
static bool
backend_has_f32_pack(HwBackend *be)
{
	return be->ops->f32_weight_pack && be->ops->f32_weight_free && be->ops->gemm_f32_packed;
}

static void
free_packs(HwBackend *be, void **pk, int n, bool bf16)
{
	for (int i = 0; pk && i < n; i++)
		(bf16 ? be->ops->bf16_weight_free : be->ops->f32_weight_free)(be, pk[i]);
	free(pk);
}

void
model_free_packed(HwModel *m)
{
	for (int i = 0; i < PK_SIDES; i++)
	{
		if (m->pk_side[i])
			m->be->ops->f32_weight_free(m->be, m->pk_side[i]);
		m->pk_side[i] = NULL;
	}
	if (!m->pk)
		return;
	free_packs(m->be, m->pk, 2 * m->L * m->A + 2 * m->L, m->pk_bf16);
	m->pk = NULL;
}

/* fp32 packs of the encoder's side-feature projections (PK_SIDE_*), those
 * the model has; a NULL slot (absent, or out of memory) stays on OpenBLAS */
static void
pack_sides(HwModel *m)
{
	const int64_t offs[PK_SIDES] = {m->o_ts_rel, m->o_link, m->o_cnt};
	const int     dims[PK_SIDES] = {HW_REL_TIME_DIM, HW_LINK_DIM, HW_CNT_DIM};

	for (int i = 0; i < PK_SIDES; i++)
		m->pk_side[i] = offs[i] >= 0 && backend_has_f32_pack(m->be) ?
			m->be->ops->f32_weight_pack(m->be, P(offs[i]), m->D, dims[i]) : NULL;
}

/* the packed copies of the current parameters, in bf16 or fp32, all or
 * none; fp32 where the backend packs none: no copies (OpenBLAS blocks) */
static int
pack_layers(HwModel *m, bool bf16, HwError *err)
{
	HwBackend *be = m->be;
	int        n = 2 * m->L * m->A + 2 * m->L, D = m->D, F = m->F;
	void    *(*pack)(HwBackend *, const float *, int, int) = bf16 ? be->ops->bf16_weight_pack : be->ops->f32_weight_pack;
	void     **pk;
	bool       ok;

	if (!bf16 && !backend_has_f32_pack(be))
	{
		model_free_packed(m);
		return HW_OK;
	}
	pk = calloc(n, sizeof(void *));
	ok = pk != NULL;
	for (int l = 0; l < m->L && ok; l++)
	{
		for (int s = 0; s < m->A; s++)
		{
			pk[PK_W4(m, l, s)] = pack(be, P(m->sp[l * m->A + s].w4), 4 * D, D);
			pk[PK_WO(m, l, s)] = pack(be, P(m->sp[l * m->A + s].wo), D, D);
		}
		pk[PK_WGU(m, l)] = pack(be, P(m->fp[l].wgu), 2 * F, D);
		pk[PK_W2(m, l)] = pack(be, P(m->fp[l].w2), D, F);
	}
	for (int i = 0; i < n && ok; i++)
		ok = pk[i] != NULL;
	if (!ok && !bf16)
	{
		/* unusable here (f32_weight_pack gave NULL: no AVX-512) or out of
		 * memory: the OpenBLAS blocks need no copies */
		free_packs(be, pk, n, false);
		model_free_packed(m);
		return HW_OK;
	}
	if (!ok)
	{
		free_packs(be, pk, n, true);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for the bf16 copy of the model's weights");
	}
	model_free_packed(m);
	m->pk = pk;
	m->pk_bf16 = bf16;
	pack_sides(m);
	m->pk_step = m->step;
	m->pk_params = m->params;
	return HW_OK;
}

int
hw_model_set_inference_precision(HwModel *m, HwPrecision p, HwError *err)
{
	bool can = backend_has_bf16(m->be), bf16;

	if (p == HW_PRECISION_BF16 && !can)
		return hw_error_set(err, HW_ERR_INVALID,
							"bf16 inference needs a processor with AVX512_BF16 and the CPU backend (this one: %s); "
							"use fp32 or auto", m->be->ops->name);
	bf16 = p == HW_PRECISION_BF16 || (p == HW_PRECISION_AUTO && backend_prefers_bf16(m->be, false));
	if (m->pk && m->pk_bf16 == bf16 && m->pk_step == m->step && m->pk_params == m->params)
		return HW_OK;
	return pack_layers(m, bf16, err);
}

HwPrecision
hw_model_inference_precision(const HwModel *m)
{
	return m->pk && m->pk_bf16 ? HW_PRECISION_BF16 : HW_PRECISION_FP32;
}

int
model_packed_refresh(HwModel *m, HwError *err)
{
	if (!m->pk || (m->pk_step == m->step && m->pk_params == m->params))
		return HW_OK;
	return pack_layers(m, m->pk_bf16, err);
}

const char *
hw_precision_name(int p)
{
	static const char *const names[] = {"auto", "fp32", "bf16"};

	return p >= 0 && p < (int) (sizeof(names) / sizeof(names[0])) ? names[p] : NULL;
}

int
hw_model_set_train_precision(HwModel *m, HwPrecision p, HwError *err)
{
	HwBackend *be = m->be;
	bool       can = be->ops->gemm_bf16_any && backend_has_bf16(be);

	if (p != HW_PRECISION_AUTO && p != HW_PRECISION_FP32 && p != HW_PRECISION_BF16)
		return hw_error_set(err, HW_ERR_INVALID, "unknown training precision %d", (int) p);
	if (!be->ops->gemm_bf16_any)
	{
		/* a GPU backend: its own GEMM arithmetic */
		m->train_bf16 = false;
		return HW_OK;
	}
	if (p == HW_PRECISION_BF16 && !can)
		return hw_error_set(err, HW_ERR_INVALID,
							"training in bf16 needs a processor with AVX512_BF16 and the CPU backend (this one: %s)",
							be->ops->name);
	m->train_bf16 = p == HW_PRECISION_BF16 || (p == HW_PRECISION_AUTO && can && backend_prefers_bf16(be, true));
	return HW_OK;
}

HwPrecision
hw_model_train_precision(const HwModel *m)
{
	return m->train_bf16 ? HW_PRECISION_BF16 : HW_PRECISION_FP32;
}
