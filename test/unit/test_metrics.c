/* test_metrics.c: metrics against hand-computed cases and a naive O(n^2) AUROC. */
#include "unit.h"
#include "core/metrics.h"

#include <stdlib.h>

UNIT_TEST(metrics_binary_hand_computed)
{
	/* y = 1 0 1 0, p = .9 .8 .4 .1: pairs (pos,neg): (.9,.8)+ (.9,.1)+ (.4,.8)- (.4,.1)+ -> 3/4 */
	uint8_t y[] = {1, 0, 1, 0};
	double p[] = {0.9, 0.8, 0.4, 0.1};
	HwBinaryMetrics m;
	CHECK(hw_metrics_binary(y, p, 4, &m, NULL) == HW_OK);
	CHECK_CLOSE(m.auroc, 0.75, 1e-12, 0);
	/* AP: ranks 1 (pos, prec 1), 3 (pos, prec 2/3): (1 + 2/3)/2 */
	CHECK_CLOSE(m.avg_precision, (1.0 + 2.0 / 3.0) / 2.0, 1e-12, 0);
	/* threshold .5: preds 1 1 0 0 -> correct: 1,0,0,1 -> 0.5; tp=1 fp=1 fn=1 -> f1 = 2/4 */
	CHECK_CLOSE(m.accuracy, 0.5, 1e-12, 0);
	CHECK_CLOSE(m.f1, 0.5, 1e-12, 0);
	double ll = -(log(0.9) + log(0.2) + log(0.4) + log(0.9)) / 4;
	CHECK_CLOSE(m.log_loss, ll, 1e-12, 0);
}

UNIT_TEST(metrics_auroc_matches_naive_with_ties)
{
	enum { N = 300 };
	uint8_t y[N];
	double p[N];
	srand(7);
	for (int i = 0; i < N; i++)
	{
		y[i] = rand() % 3 == 0;
		p[i] = (double) (rand() % 20) / 20.0;   /* many ties */
	}
	double num = 0, npos = 0, nneg = 0;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			if (y[i] && !y[j])
				num += p[i] > p[j] ? 1 : (p[i] == p[j] ? 0.5 : 0);
	for (int i = 0; i < N; i++)
		y[i] ? npos++ : nneg++;
	HwBinaryMetrics m;
	CHECK(hw_metrics_binary(y, p, N, &m, NULL) == HW_OK);
	CHECK_CLOSE(m.auroc, num / (npos * nneg), 1e-12, 0);
}

UNIT_TEST(metrics_categorical_hand_computed)
{
	int32_t y[] = {0, 0, 1, 2, 2, 2};
	int32_t pr[] = {0, 1, 1, 2, 2, 0};
	HwCategoricalMetrics m;
	CHECK(hw_metrics_categorical(y, pr, 6, 4, &m, NULL) == HW_OK);
	CHECK_CLOSE(m.accuracy, 4.0 / 6.0, 1e-12, 0);
	/* class0: tp1 fp1 fn1 -> .5; class1: tp1 fp1 fn0 -> 2/3; class2: tp2 fp0 fn1 -> .8; class3 absent */
	CHECK_CLOSE(m.macro_f1, (0.5 + 2.0 / 3.0 + 0.8) / 3.0, 1e-12, 0);
	CHECK(hw_metrics_categorical(y, pr, 6, 2, &m, NULL) == HW_ERR_INVALID);
}

UNIT_TEST(metrics_regression_hand_computed)
{
	double y[] = {1, 2, 3, 4};
	double pr[] = {1, 3, 3, 2};
	HwRegressionMetrics m;
	CHECK(hw_metrics_regression(y, pr, 4, &m, NULL) == HW_OK);
	CHECK_CLOSE(m.mae, 3.0 / 4.0, 1e-12, 0);
	CHECK_CLOSE(m.rmse, sqrt(5.0 / 4.0), 1e-12, 0);
	CHECK_CLOSE(m.r2, 1.0 - 5.0 / 5.0, 1e-12, 0);
	CHECK(hw_metrics_regression(y, pr, 0, &m, NULL) == HW_ERR_INVALID);
}
