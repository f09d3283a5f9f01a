/*
 * serving_device.c: the device of a bulk prediction (rt_predict_batch,
 * rt_predict_table, rt_predict_into of more than one serving batch).
 *
 * headwater.serving_device chooses it:
 *   auto  (default) a GPU when the CUDA backend is built and a GPU is
 *         visible, else the CPU; a GPU that cannot take the model (busy,
 *         out of memory) falls back to the CPU with a NOTICE
 *   cpu   the session's cached CPU model (serving.c), as single rows
 *   cuda  a GPU or an ERROR (0A000) saying why
 *
 * On a GPU the request gets a model of its own for its duration: the
 * cached entry's served parameters copied to the device once, batches of
 * headwater.serving_device_batch sequences (one forward each, bf16
 * tensor-core GEMMs: the CUDA backend's default), sampled on the host by a
 * clone of the entry's sampler on headwater.serving_threads threads while
 * the device runs the previous batch (predict_output.c's row stream).  The device memory is
 * released when the request ends, on ERROR and on cancel: the scorer is
 * freed by the request's PG_FINALLY and, should that be skipped, by a reset
 * callback of the request's memory context.  Single-row calls stay on the
 * CPU: a GPU forward of one sequence gains nothing (the serving worker is
 * where single rows meet).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "pg/base/hw_pg.h"
#include "pg/serve/hw_serving_device.h"
#include "pg/serve/hw_serving_shared.h"
#include "pg/train/hw_device.h"

typedef enum ServingDevice
{
	SERVING_DEVICE_AUTO,
	SERVING_DEVICE_CPU,
	SERVING_DEVICE_CUDA
} ServingDevice;

static int serving_device = SERVING_DEVICE_AUTO;
static int serving_device_batch = 256;

static const struct config_enum_entry serving_device_options[] = {
	{"auto", SERVING_DEVICE_AUTO, false},
	{"cpu", SERVING_DEVICE_CPU, false},
	{"cuda", SERVING_DEVICE_CUDA, false},
	{NULL, 0, false},
};

void
hw_serving_device_guc_init(void)
{
	DefineCustomEnumVariable("headwater.serving_device",
							 "Device of bulk predictions (rt_predict_batch, rt_predict_table, rt_predict_into): "
							 "auto, cpu or cuda.",
							 "auto (the default): a GPU when the CUDA backend is built and a GPU is visible, "
							 "else the CPU; cuda: a GPU or an error.",
							 &serving_device, SERVING_DEVICE_AUTO, serving_device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("headwater.serving_device_batch",
							"Sequences per GPU forward of a bulk prediction.",
							"Larger batches keep the GPU busier and hold more device memory "
							"(about 30 KB per cell of the small preset, 256 cells a sequence).",
							&serving_device_batch, 256, 1, 4096, PGC_USERSET, 0, NULL, NULL, NULL);
}

void
hw_serving_device_close(HwDeviceScorer *d)
{
	if (d == NULL)
		return;
	if (d->model)
		hw_model_free(d->model);
	if (d->be)
		hw_backend_destroy(d->be);
	if (d->sampler)
		hw_sampler_free(d->sampler);
	d->model = NULL;
	d->be = NULL;
	d->sampler = NULL;
}

static void
close_cb(void *arg)
{
	hw_serving_device_close(arg);
}

/* The served parameters in host memory: the shared file's mapping, or a
 * copy of the private model's (*copy: the caller frees it). */
static const float *
served_params(HwServing *s, int64_t *numel, float **copy)
{
	*copy = NULL;
	if (s->shared)
	{
		*numel = s->shared->numel;
		return s->shared->params;
	}
	*numel = hw_model_numel(s->model);
	*copy = malloc(sizeof(float) * (size_t) *numel);
	if (*copy == NULL || hw_model_get_flat(s->model, 0, *copy) != HW_OK)
	{
		free(*copy);
		*copy = NULL;
	}
	return *copy;
}

/* The model and sampler of a GPU scorer on d->be; false with *err set. */
static bool
scorer_build(HwServing *s, HwDeviceScorer *d, HwError *err)
{
	HwModelConfig cfg = *hw_model_config(s->model);
	int64_t      numel;
	float       *copy;
	const float *params = served_params(s, &numel, &copy);

	if (params == NULL)
	{
		hw_error_set(err, HW_ERR_NOMEM, "out of memory copying the served parameters");
		return false;
	}
	cfg.batch_size = d->batch;
	d->model = hw_model_create_frozen(&cfg, params, numel, s->col_emb, s->ncols, s->cat_emb, (int32_t) s->ncat,
									  d->be, err);
	free(copy);
	if (d->model == NULL)
		return false;
	/* the host side must keep up with the device: sampled on the threads a
	 * multi-batch request may use (headwater.serving_threads) */
	d->sampler = hw_sampler_clone_threads(s->sampler, hw_serving_wide_threads(), err);
	return d->sampler != NULL;
}

HwDeviceScorer *
hw_serving_device_open(HwServing *s, const char *task_ref, MemoryContext cxt)
{
	HwError        err = {0};
	HwDeviceScorer *d;
	MemoryContextCallback *cb;
	const char    *why_not = NULL;
	bool           had_gpu;

	if (serving_device == SERVING_DEVICE_CPU)
		return NULL;
	/* the callback first: nothing made below can then be left behind */
	d = MemoryContextAllocZero(cxt, sizeof(HwDeviceScorer));
	d->batch = serving_device_batch;
	cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	cb->func = close_cb;
	cb->arg = d;
	MemoryContextRegisterResetCallback(cxt, cb);
	had_gpu = hw_pg_cuda_device_count(&why_not) > 0;
	if (!had_gpu)
		hw_error_set(&err, HW_ERR_INVALID, "%s", why_not ? why_not : "no CUDA device is visible to the server");
	else if ((d->be = hw_pg_cuda_backend_try(0, &err)) != NULL && scorer_build(s, d, &err))
		return d;
	hw_serving_device_close(d);
	if (serving_device == SERVING_DEVICE_CUDA)
		ereport(ERROR,
				(errcode(err.code == HW_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("headwater.serving_device 'cuda' cannot score task \"%s\": %s", task_ref, err.msg),
				 errhint("Set headwater.serving_device to 'auto' (the CPU when no GPU can take the model) "
						 "or 'cpu'; for device memory, lower headwater.serving_device_batch.")));
	/* auto: no GPU at all is the usual CPU server, said only in the log */
	if (!had_gpu)
		elog(DEBUG1, "headwater: bulk prediction of task \"%s\" on the CPU: %s", task_ref, err.msg);
	else
		ereport(NOTICE,
				(errmsg("headwater: bulk prediction of task \"%s\" runs on the CPU: the GPU cannot take the model: %s",
						task_ref, err.msg),
				 errhint("Lower headwater.serving_device_batch, or set headwater.serving_device to 'cpu' "
						 "to skip the GPU.")));
	return NULL;
}
