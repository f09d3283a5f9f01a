/*
 * model_decode.c: predictions from the heads: buffers, the ordinal median, and the
 * decoding of a batch's head outputs (sigmoid, softmax, ordinal median).
 */

#include "core/model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
int
model_decode_predictions(HwModel *m, HwPredictions *pred, bool with_loss, HwError *err)
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
	if ((rc = model_backend_cause(m->be, HW_OK, err)) != HW_OK)
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
