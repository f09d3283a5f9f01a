/*
 * model_access.c: access to a model's state: small getters, its device buffers and
 * named tensors, and the backend's errors as the cause of a failure.
 */

#include "core/model_internal.h"

#include <stdio.h>
#include <string.h>

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
int
model_backend_cause(HwBackend *be, int rc, HwError *err)
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
	return model_backend_cause(m->be, HW_OK, err);
}


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
	return model_backend_cause(m->be, HW_OK, err);
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
