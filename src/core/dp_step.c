/*
 * dp_step.c: data-parallel step, accumulation and parameter checks
 * (contract and arithmetic in dp_step.h).
 */
#include "core/dp_step.h"

#include <time.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct HwDpRank
{
	HwModel      *m;
	HwBackend    *be;
	HwCollective *c;
	int           rank, world, accum;
	int           stall_ms;    /* tests: a late rank (hw_dp_rank_set_stall) */
	int64_t       numel;
	float        *acc;         /* device [numel + 1]: summed gradients, then the loss sum */
};

HwDpRank *
hw_dp_rank_create(HwModel *m, HwCollective *c, int rank, int grad_accum, HwError *err)
{
	int world = c ? c->nranks : 1;

	if (m == NULL || grad_accum < 1 || grad_accum > 1024 || rank < 0 || rank >= world)
	{
		hw_error_set(err, HW_ERR_INVALID, "data-parallel rank %d of %d with grad_accum %d (1..1024)",
					 rank, world, grad_accum);
		return NULL;
	}
	HwDpRank *d = calloc(1, sizeof(*d));

	if (d == NULL)
	{
		hw_error_set(err, HW_ERR_NOMEM, "out of memory for a data-parallel rank");
		return NULL;
	}
	d->m = m;
	d->be = hw_model_backend(m);
	d->c = c;
	d->rank = rank;
	d->world = world;
	d->accum = grad_accum;
	d->numel = hw_model_numel(m);
	if (world * grad_accum > 1)
	{
		d->acc = d->be->ops->alloc(d->be, sizeof(float) * (size_t) (d->numel + 1));
		if (d->acc == NULL)
		{
			hw_error_set(err, HW_ERR_NOMEM, "out of device memory for the gradient accumulator (%lld floats)",
						 (long long) d->numel + 1);
			free(d);
			return NULL;
		}
	}
	return d;
}

void
hw_dp_rank_free(HwDpRank *d)
{
	if (d == NULL)
		return;
	if (d->acc)
		d->be->ops->free(d->be, d->acc);
	free(d);
}

int
hw_dp_rank_grad_accum(const HwDpRank *d)
{
	return d->accum;
}

/* A failure on this rank: stop the others (first message wins). */
static int
fail(HwDpRank *d, int rc, HwError *err)
{
	if (rc != HW_OK && d->c)
		hw_coll_abort(d->c, d->rank, err ? err->msg : "failed");
	return rc;
}

void
hw_dp_rank_set_stall(HwDpRank *d, int ms)
{
	d->stall_ms = ms < 0 ? 0 : ms > 60000 ? 60000 : ms;
}

int
hw_dp_step(HwDpRank *d, HwBatch *const *micro, HwStepResult *res, HwError *err)
{
	const HwBackendOps *o = d->be->ops;
	float  *grads = hw_model_device_buffer(d->m, 1);
	float   loss = 0, lsum = 0, gn = 0, lr = 0;
	int     rc;

	/* the late rank sleeps in slices, so an aborted collective (the job
	 * was stopped, hw_dp_threads_stop) ends the stall within one slice */
	for (int slept = 0; slept < d->stall_ms; slept += 20)
	{
		int    ms = d->stall_ms - slept < 20 ? d->stall_ms - slept : 20;
		struct timespec ts = { 0, (long) ms * 1000000L };

		if (d->c && hw_coll_error(d->c, NULL) != HW_OK)
			return hw_coll_error(d->c, err);
		nanosleep(&ts, NULL);
	}

	if (d->world * d->accum == 1)
		return fail(d, hw_model_train_step(d->m, micro[0], res, err), err);
	memset(res, 0, sizeof(*res));
	for (int a = 0; a < d->accum; a++)
	{
		if (micro[a] == NULL)
			return fail(d, hw_error_set(err, HW_ERR_INVALID, "micro-batch %d of rank %d is missing", a, d->rank), err);
		if (micro[a]->B != micro[0]->B)
			return fail(d, hw_error_set(err, HW_ERR_INVALID, "micro-batch %d of rank %d: %d sequences, micro-batch 0 has %d",
										a, d->rank, micro[a]->B, micro[0]->B), err);
		if ((rc = hw_model_forward_backward(d->m, micro[a], &loss, err)) != HW_OK)
			return fail(d, rc, err);
		if (a == 0)
		{
			o->memcpy_d2d(d->be, d->acc, grads, sizeof(float) * (size_t) d->numel);
			lsum = loss;
		}
		else
		{
			o->axpby(d->be, d->acc, 1.0f, grads, 1.0f, (size_t) d->numel);
			lsum = loss + lsum;
		}
	}
	o->memcpy_h2d(d->be, d->acc + d->numel, &lsum, sizeof(float));
	if (d->world > 1 && (rc = hw_coll_allreduce_sum(d->c, d->rank, d->acc, (size_t) d->numel + 1, err)) != HW_OK)
		return fail(d, rc, err);
	float scale = 1.0f / (float) (d->world * d->accum);

	o->memcpy_d2h(d->be, &lsum, d->acc + d->numel, sizeof(float));
	o->axpby(d->be, d->acc, scale, d->acc, 0.0f, (size_t) d->numel);
	o->memcpy_d2d(d->be, grads, d->acc, sizeof(float) * (size_t) d->numel);
	if ((rc = hw_model_backend_status(d->m, err)) != HW_OK)
		return fail(d, rc, err);
	res->loss = lsum * scale;
	if (!isfinite(res->loss))
		return fail(d, hw_error_set(err, HW_ERR_NUMERIC, "loss is %s at step %lld: training stopped, parameters unchanged",
									isnan(res->loss) ? "NaN" : "infinite", (long long) hw_model_step(d->m) + 1), err);
	rc = hw_model_optimizer_step(d->m, &gn, &lr, err);
	res->grad_norm = gn;
	res->lr = lr;
	res->step = hw_model_step(d->m);
	return fail(d, rc, err);
}

int
hw_dp_sync_from_rank0(HwDpRank *d, HwError *err)
{
	int rc = HW_OK;

	if (d->world == 1)
		return HW_OK;
	/* params, first and second moments, the parameter average when kept
	 * (0, 2, 3, 4; 1 = gradients, not state) */
	for (int which = 0; which < 5 && rc == HW_OK; which++)
		if (which != 1 && (which != 4 || hw_model_has_ema(d->m)))
			rc = hw_coll_broadcast(d->c, d->rank, hw_model_device_buffer(d->m, which), (size_t) d->numel, 0, err);
	return fail(d, rc, err);
}

int
hw_model_params_checksum(HwModel *m, uint64_t *checksum, HwError *err)
{
	int64_t  n = hw_model_numel(m);
	float   *p = malloc(sizeof(float) * (size_t) (n ? n : 1));
	uint64_t h = 0xcbf29ce484222325ULL;
	int      rc;

	*checksum = 0;
	if (p == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for the parameter checksum");
	hw_model_get_flat(m, 0, p);
	if ((rc = hw_model_backend_status(m, err)) == HW_OK)
	{
		const unsigned char *b = (const unsigned char *) p;

		for (size_t i = 0; i < sizeof(float) * (size_t) n; i++)
			h = (h ^ b[i]) * 0x100000001b3ULL;
		*checksum = h;
	}
	free(p);
	return rc;
}

int
hw_dp_check_params(HwDpRank *d, uint64_t *checksum, HwError *err)
{
	int rc = hw_model_params_checksum(d->m, checksum, err), equal = 1;

	if (rc != HW_OK)
		return fail(d, rc, err);
	if (d->world == 1)
		return HW_OK;
	if ((rc = hw_coll_all_equal_u64(d->c, d->rank, *checksum, &equal, err)) != HW_OK)
		return fail(d, rc, err);
	if (!equal)
		return fail(d, hw_error_set(err, HW_ERR_INTERNAL,
									"parameters of the ranks differ at step %lld (rank %d checksum %016llx)",
									(long long) hw_model_step(d->m), d->rank, (unsigned long long) *checksum), err);
	return HW_OK;
}
