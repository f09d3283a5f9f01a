/* hw_serving_device.h: the device of a bulk prediction (serving_device.c). */
#ifndef HW_SERVING_DEVICE_H
#define HW_SERVING_DEVICE_H

#include "pg/serve/hw_serving.h"

/* A request's own model on a GPU: the entry's served parameters on the
 * device, batch sequences per forward, and a sampler clone that builds
 * them on every CPU. */
typedef struct HwDeviceScorer
{
	HwBackend *be;
	HwModel   *model;
	HwSampler *sampler;
	int        batch;
} HwDeviceScorer;

/* Defines headwater.serving_device and headwater.serving_device_batch. */
void hw_serving_device_guc_init(void);

/* The GPU scorer of a bulk prediction of entry s (task_ref names the task
 * in messages), or NULL: score on the CPU (headwater.serving_device 'cpu',
 * or 'auto' without a GPU that can take the model; NOTICE when a GPU was
 * there but could not).  ERROR under 'cuda' when no GPU can.  Allocated in
 * cxt; freed by hw_serving_device_close or with cxt. */
HwDeviceScorer *hw_serving_device_open(HwServing *s, const char *task_ref, MemoryContext cxt);
/* Frees the scorer's device memory, model and sampler (again: a no-op). */
void hw_serving_device_close(HwDeviceScorer *d);

#endif
