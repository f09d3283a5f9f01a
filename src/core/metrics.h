/*
 * metrics.h: evaluation metrics of rt_evaluate, each beside its trivial
 * baseline.  Plain C; inputs are arrays over the evaluated rows (NULL targets
 * excluded by the caller).
 */
#ifndef HW_METRICS_H
#define HW_METRICS_H

#include "core/hw_common.h"

/* Boolean task: y[n] in {0,1}, p[n] predicted probability of 1. */
typedef struct HwBinaryMetrics
{
	double auroc;          /* ties get half credit (Mann-Whitney U) */
	double avg_precision;  /* step-wise AP, as sklearn's average_precision_score */
	double accuracy;       /* threshold 0.5 */
	double f1;             /* positive class, threshold 0.5 */
	double log_loss;       /* p clipped to [1e-7, 1-1e-7] */
} HwBinaryMetrics;

int hw_metrics_binary(const uint8_t *y, const double *p, int64_t n, HwBinaryMetrics *out, HwError *err);

/* Categorical task: labels and predictions in 0..k-1. */
typedef struct HwCategoricalMetrics
{
	double accuracy;
	double macro_f1;       /* mean F1 over classes present in y or pred */
} HwCategoricalMetrics;

int hw_metrics_categorical(const int32_t *y, const int32_t *pred, int64_t n, int32_t k,
						   HwCategoricalMetrics *out, HwError *err);

/* Numerical task (values in the target's own units). */
typedef struct HwRegressionMetrics
{
	double mae;
	double rmse;
	double r2;             /* 1 - SSE/SST over the evaluated rows */
} HwRegressionMetrics;

int hw_metrics_regression(const double *y, const double *pred, int64_t n,
						  HwRegressionMetrics *out, HwError *err);

#endif
