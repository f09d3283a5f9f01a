/*
 * metrics.c: AUROC, average precision, accuracy, F1, log loss, macro-F1,
 * MAE, RMSE, R^2.  Sorting-based where needed (O(n log n)).
 */
#include "core/metrics.h"

#include <math.h>
#include <stdlib.h>

typedef struct { double p; uint8_t y; } ScoredLabel;

static int
cmp_score_desc(const void *a, const void *b)
{
	double x = ((const ScoredLabel *) a)->p, y = ((const ScoredLabel *) b)->p;
	return (x < y) - (x > y);
}

int
hw_metrics_binary(const uint8_t *y, const double *p, int64_t n, HwBinaryMetrics *out, HwError *err)
{
	if (n <= 0)
		return hw_error_set(err, HW_ERR_INVALID, "no rows to evaluate");

	ScoredLabel *s = malloc(sizeof(ScoredLabel) * (size_t) n);
	if (s == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory in metrics");

	int64_t npos = 0, tp = 0, fp = 0, fn = 0, correct = 0;
	double ll = 0;
	for (int64_t i = 0; i < n; i++)
	{
		s[i].p = p[i];
		s[i].y = y[i] ? 1 : 0;
		npos += s[i].y;
		int pred = p[i] >= 0.5;
		correct += pred == s[i].y;
		tp += pred && s[i].y;
		fp += pred && !s[i].y;
		fn += !pred && s[i].y;
		double pc = fmin(fmax(p[i], 1e-7), 1 - 1e-7);
		ll -= s[i].y ? log(pc) : log(1 - pc);
	}
	int64_t nneg = n - npos;
	qsort(s, (size_t) n, sizeof(ScoredLabel), cmp_score_desc);

	/* Walk groups of tied scores from the highest down. */
	double auc_num = 0, ap = 0;
	int64_t seen_pos = 0, seen_neg = 0;
	for (int64_t i = 0; i < n;)
	{
		int64_t j = i, gpos = 0, gneg = 0;
		while (j < n && s[j].p == s[i].p)
		{
			gpos += s[j].y;
			gneg += !s[j].y;
			j++;
		}
		/* every positive in this group outranks the negatives not yet seen
		 * (below) and ties half with the group's negatives */
		auc_num += (double) gpos * (double) (nneg - seen_neg - gneg) + 0.5 * (double) gpos * (double) gneg;
		seen_pos += gpos;
		seen_neg += gneg;
		if (gpos > 0)
			ap += (double) gpos / (double) (npos > 0 ? npos : 1) * (double) seen_pos / (double) (seen_pos + seen_neg);
		i = j;
	}
	free(s);

	out->auroc = (npos > 0 && nneg > 0) ? auc_num / ((double) npos * (double) nneg) : NAN;
	out->avg_precision = npos > 0 ? ap : NAN;
	out->accuracy = (double) correct / (double) n;
	out->f1 = (2 * tp + fp + fn) > 0 ? 2.0 * tp / (double) (2 * tp + fp + fn) : 0.0;
	out->log_loss = ll / (double) n;
	return HW_OK;
}

int
hw_metrics_categorical(const int32_t *y, const int32_t *pred, int64_t n, int32_t k,
					   HwCategoricalMetrics *out, HwError *err)
{
	if (n <= 0 || k <= 0)
		return hw_error_set(err, HW_ERR_INVALID, "no rows or no classes to evaluate");

	int64_t *tp = calloc((size_t) k * 3, sizeof(int64_t));
	if (tp == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory in metrics");
	int64_t *fp = tp + k, *fn = tp + 2 * k;
	int64_t correct = 0;

	for (int64_t i = 0; i < n; i++)
	{
		if (y[i] < 0 || y[i] >= k || pred[i] < 0 || pred[i] >= k)
		{
			free(tp);
			return hw_error_set(err, HW_ERR_INVALID, "class index out of range 0..%d", k - 1);
		}
		if (y[i] == pred[i])
		{
			correct++;
			tp[y[i]]++;
		}
		else
		{
			fp[pred[i]]++;
			fn[y[i]]++;
		}
	}
	double f1sum = 0;
	int present = 0;
	for (int32_t c = 0; c < k; c++)
	{
		int64_t d = 2 * tp[c] + fp[c] + fn[c];
		if (d == 0)
			continue;           /* class absent from both labels and predictions */
		present++;
		f1sum += 2.0 * tp[c] / (double) d;
	}
	free(tp);
	out->accuracy = (double) correct / (double) n;
	out->macro_f1 = present ? f1sum / present : 0.0;
	return HW_OK;
}

int
hw_metrics_regression(const double *y, const double *pred, int64_t n,
					  HwRegressionMetrics *out, HwError *err)
{
	if (n <= 0)
		return hw_error_set(err, HW_ERR_INVALID, "no rows to evaluate");

	double mean = 0;
	for (int64_t i = 0; i < n; i++)
		mean += y[i];
	mean /= (double) n;

	double sae = 0, sse = 0, sst = 0;
	for (int64_t i = 0; i < n; i++)
	{
		double e = pred[i] - y[i];
		sae += fabs(e);
		sse += e * e;
		sst += (y[i] - mean) * (y[i] - mean);
	}
	out->mae = sae / (double) n;
	out->rmse = sqrt(sse / (double) n);
	out->r2 = sst > 0 ? 1.0 - sse / sst : (sse == 0 ? 1.0 : 0.0);
	return HW_OK;
}
