/*
 * test_ops_qknorm.c: the CPU backend's QK-norm forward against a double
 * reference, element by element (the gradient check is in test_ops_cpu.c).
 */
#include "unit.h"
#include "core/backend.h"
#include "core/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static HwRng R;

/* The forward against a double reference, element by element, for head
 * widths below, at and above the kernel's 16 lanes (a tail of 8). */
UNIT_TEST(ops_qknorm_forward_reference)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	static const int dhs[] = { 8, 32, 40 };

	hw_rng_seed(&R, 5);
	for (int t = 0; t < 3; t++)
	{
		int    N = 70, H = 3, dh = dhs[t], D = H * dh;
		float *qkvg = malloc(sizeof(float) * N * 4 * D), *tau = malloc(sizeof(float) * H);
		float *qs = malloc(sizeof(float) * N * D), *kn = malloc(sizeof(float) * N * D);
		float *v = malloc(sizeof(float) * N * D), *qn = malloc(sizeof(float) * N * H), *knn = malloc(sizeof(float) * N * H);

		for (int i = 0; i < N * 4 * D; i++)
			qkvg[i] = (float) hw_rng_normal(&R);
		for (int h = 0; h < H; h++)
			tau[h] = (float) hw_rng_normal(&R);
		qkvg[5 * 4 * D + D] = 1e3f;                  /* one large key element */
		be->ops->qknorm_forward(be, qs, kn, v, qn, knn, qkvg, tau, N, H, dh);
		for (int n = 0; n < N; n++)
			for (int h = 0; h < H; h++)
			{
				const float *q = qkvg + (size_t) n * 4 * D + h * dh, *k = q + D;
				double       sq = 0, sk = 0;

				for (int i = 0; i < dh; i++)
				{
					sq += (double) q[i] * q[i];
					sk += (double) k[i] * k[i];
				}
				CHECK_CLOSE(qn[n * H + h], sqrt(sq), 1e-6, 1e-6);
				CHECK_CLOSE(knn[n * H + h], sqrt(sk), 1e-6, 1e-6);
				for (int i = 0; i < dh; i++)
				{
					CHECK_CLOSE(qs[n * D + h * dh + i], q[i] * tau[h] / sqrt((double) dh) / sqrt(sq), 1e-6, 1e-5);
					CHECK_CLOSE(kn[n * D + h * dh + i], k[i] / sqrt(sk), 1e-6, 1e-5);
					CHECK_CLOSE(v[n * D + h * dh + i], q[2 * D + i], 0, 0);
				}
			}
		free(qkvg); free(tau); free(qs); free(kn); free(v); free(qn); free(knn);
	}
	hw_backend_destroy(be);
}

/* A NULL output's part is skipped: the q part alone leaves knorm as it
 * was, the k and v parts alone leave qnorm; what is computed equals the
 * whole call's bits. */
UNIT_TEST(ops_qknorm_forward_parts)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	int        N = 40, H = 2, dh = 32, D = H * dh;
	float     *qkvg = malloc(sizeof(float) * N * 4 * D), tau[2] = {0.7f, -1.3f};
	float     *qs = malloc(sizeof(float) * N * D), *kn = malloc(sizeof(float) * N * D), *v = malloc(sizeof(float) * N * D);
	float     *qs1 = malloc(sizeof(float) * N * D), *kn1 = malloc(sizeof(float) * N * D), *v1 = malloc(sizeof(float) * N * D);
	float     *qn = malloc(sizeof(float) * N * H), *knn = malloc(sizeof(float) * N * H);
	float     *qn1 = malloc(sizeof(float) * N * H), *knn1 = malloc(sizeof(float) * N * H);

	hw_rng_seed(&R, 9);
	for (int i = 0; i < N * 4 * D; i++)
		qkvg[i] = (float) hw_rng_normal(&R);
	be->ops->qknorm_forward(be, qs, kn, v, qn, knn, qkvg, tau, N, H, dh);
	for (int i = 0; i < N * H; i++)
		qn1[i] = knn1[i] = -7.0f;
	be->ops->qknorm_forward(be, qs1, NULL, NULL, qn1, knn1, qkvg, tau, N, H, dh);
	CHECK(memcmp(qs1, qs, sizeof(float) * N * D) == 0);
	CHECK(memcmp(qn1, qn, sizeof(float) * N * H) == 0);
	for (int i = 0; i < N * H; i++)
		CHECK(knn1[i] == -7.0f);
	for (int i = 0; i < N * H; i++)
		qn1[i] = -7.0f;
	be->ops->qknorm_forward(be, NULL, kn1, v1, qn1, knn1, qkvg, tau, N, H, dh);
	CHECK(memcmp(kn1, kn, sizeof(float) * N * D) == 0);
	CHECK(memcmp(v1, v, sizeof(float) * N * D) == 0);
	CHECK(memcmp(knn1, knn, sizeof(float) * N * H) == 0);
	for (int i = 0; i < N * H; i++)
		CHECK(qn1[i] == -7.0f);
	free(qkvg); free(qs); free(kn); free(v); free(qs1); free(kn1); free(v1);
	free(qn); free(knn); free(qn1); free(knn1);
	hw_backend_destroy(be);
}
