/*
 * model_ema.c: the parameter average (cfg.ema_decay): its weight, swapping it in to
 * evaluate, adopting or dropping it to predict.
 */

#include "core/model_internal.h"

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
	return model_backend_cause(m->be, HW_OK, err);
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
