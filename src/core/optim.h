/*
 * optim.h: the optimiser (Muon for 2-D weights, AdamW for the
 * rest, warm-up + cosine schedule to 10%, global-norm clipping), on a backend,
 * over the flat buffers of model.h (parameters, gradients, first and second
 * moments share one layout).  Exact arithmetic: model.h "Optimiser".
 */
#ifndef HW_OPTIM_H
#define HW_OPTIM_H

#include "core/model.h"

/* Muon scratch sizes in floats for the largest matrix of the table. */
int64_t hw_muon_work_floats(const HwParamInfo *p, int np);

/* Orthogonalises X[rows, cols] in place (5 quintic Newton-Schulz iterations
 * after Frobenius normalisation); work: hw_muon_work_floats floats (device). */
void hw_muon_orthogonalize(HwBackend *be, float *X, int rows, int cols, float *work);

/*
 * One optimiser step t (1-based).  Computes the global gradient norm (written
 * to *gnorm); if it is NaN/Inf returns HW_ERR_NUMERIC with nothing changed.
 * Otherwise clips, updates params and moments, and writes the lr used.
 */
int hw_optim_step(HwBackend *be, const HwModelConfig *cfg, const HwParamInfo *p, int np,
				  float *params, const float *grads, float *m1, float *m2, float *work,
				  int64_t t, float *gnorm, float *lr, HwError *err);

#endif /* HW_OPTIM_H */
