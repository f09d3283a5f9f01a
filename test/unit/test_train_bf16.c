/*
 * test_train_bf16.c: training in bf16 (train_precision).
 *  - the backend's gemm_bf16_any against an independent triple loop, for
 *    every layout (A [M,K] or [K,M], B [K,N] or [N,K]): to fp32
 *    accumulation error of the product of the operands rounded to bf16
 *    here, and within 2^-7 of the fp32 product; ragged shapes, K odd, K
 *    across several blocks of the sum, strides wider than the matrix,
 *    beta 1 on top of beta 0; on a processor with AMX tiles, on the tiles
 *    and on the AVX512_BF16 kernel;
 *  - its bits do not depend on the thread count (the task split does);
 *  - hw_model_set_train_precision: bf16 asked where the backend cannot is
 *    refused, auto falls back to fp32 there;
 *  - one forward and backward of a model in bf16 against the same model in
 *    fp32 (the reference): the loss within 2%, the gradient's direction
 *    within 2% (cosine > 0.98), and not the same bits (bf16 did run);
 *  - a bf16 training run is bit-identical with 1 and 2 threads.
 * The GEMM checks are skipped (pass, say so) on a processor without
 * AVX512_BF16.
 */
#include "unit.h"
#include "core/backend.h"
#include "core/model.h"
#include "synth_batch.h"
#include "bf16_ref.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DT HW_SYNTH_TINY_DT

static bool
has_bf16(HwBackend *be)
{
	if (be->ops->gemm_bf16_any && be->ops->bf16_usable(be))
		return true;
	printf("  (no AVX512_BF16 on this processor: bf16 training GEMMs not exercised)\n");
	return false;
}

/* One layout and shape: C = 2 op(A) op(B) (beta 0, then beta 1 on top)
 * against both references.  Strides are 3 wider than the stored rows. */
static int
check_any(HwBackend *be, bool tA, bool tB, int M, int N, int K)
{
	int      lda = (tA ? M : K) + 3, ldb = (tB ? K : N) + 3, ldc = N + 3;
	size_t   na = (size_t) (tA ? K : M) * lda, nb = (size_t) (tB ? N : K) * ldb;
	uint64_t seed = (uint64_t) M * 1000003u + N * 1009u + K + tA * 7 + tB * 13;
	float   *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb), *C = malloc(sizeof(float) * M * ldc);
	int      ok = 1;

	for (size_t i = 0; i < na; i++)
		A[i] = frand(&seed) * 3.0f;
	for (size_t i = 0; i < nb; i++)
		B[i] = frand(&seed) * 0.2f;
	for (int i = 0; i < M * ldc; i++)
		C[i] = NAN;              /* beta 0 must not read C */
	ok = be->ops->gemm_bf16_any(be, tA, tB, M, N, K, A, lda, B, ldb, 0.0f, C, ldc) &&
		be->ops->gemm_bf16_any(be, tA, tB, M, N, K, A, lda, B, ldb, 1.0f, C, ldc);
	for (int i = 0; i < M && ok; i++)
		for (int j = 0; j < N && ok; j++)
		{
			double rb = 0, rf = 0, mag = 0, c = C[(size_t) i * ldc + j];

			for (int k = 0; k < K; k++)
			{
				float a = tA ? A[(size_t) k * lda + i] : A[(size_t) i * lda + k];
				float b = tB ? B[(size_t) j * ldb + k] : B[(size_t) k * ldb + j];

				rb += (double) round_bf16(a) * round_bf16(b);
				rf += (double) a * b;
				mag += fabs((double) a * b);
			}
			if (!(fabs(c - 2 * rb) <= 2 * (1e-5 * mag + 1e-30)) || !(fabs(c - 2 * rf) <= 2 * (0x1p-7 * mag + 1e-30)))
			{
				printf("  tA=%d tB=%d M=%d N=%d K=%d C[%d,%d] = %.9g, bf16 ref %.9g, fp32 ref %.9g\n", tA, tB, M, N, K,
					   i, j, c, 2 * rb, 2 * rf);
				ok = 0;
			}
		}
	free(A); free(B); free(C);
	return ok;
}

UNIT_TEST(train_gemm_bf16_against_reference)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	static const int shapes[][3] = {
		{1, 1, 1}, {1, 16, 2}, {7, 17, 3}, {13, 100, 129}, {50, 64, 2100}, {97, 33, 3001}, {130, 70, 64},
		{33, 40, 96}, {100, 48, 2048},   /* K's pairs in whole AMX tiles: the second in two blocks of the sum */
	};

	CHECK(be != NULL);
	/* on a processor with AMX tiles both kernels: the tiles, then AVX512_BF16 */
	for (int amx = hw_backend_cpu_amx_supported(); amx >= 0 && has_bf16(be); amx--)
	{
		hw_backend_cpu_disable_amx(be, !amx);
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			for (int l = 0; l < 4; l++)
				CHECK_MSG(check_any(be, l & 1, l & 2, shapes[s][0], shapes[s][1], shapes[s][2]),
						  "gemm_bf16_any (%s) tA=%d tB=%d %d x %d x %d off its reference",
						  amx ? "AMX" : "AVX512_BF16", l & 1, (l & 2) != 0, shapes[s][0], shapes[s][1], shapes[s][2]);
	}
	hw_backend_destroy(be);
}

/* 1 and 2 threads: the same bits (2 threads also cut the columns of every
 * shape here into chunks, 1 thread does not) */
UNIT_TEST(train_gemm_bf16_thread_independent)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	static const int shapes[][4] = {{300, 96, 200, 0}, {64, 200, 2500, 1}, {10, 300, 1500, 1}};

	CHECK(be != NULL);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]) && has_bf16(be); s++)
	{
		int      M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		bool     tA = shapes[s][3];
		uint64_t seed = 11 + s;
		float   *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
		float   *c1 = malloc(sizeof(float) * M * N), *c2 = malloc(sizeof(float) * M * N);

		for (int i = 0; i < M * K; i++)
			A[i] = frand(&seed);
		for (int i = 0; i < K * N; i++)
			B[i] = frand(&seed);
		hw_backend_cpu_set_threads(be, 2);
		CHECK(be->ops->gemm_bf16_any(be, tA, false, M, N, K, A, tA ? M : K, B, N, 0.0f, c2, N));
		hw_backend_cpu_set_threads(be, 1);
		CHECK(be->ops->gemm_bf16_any(be, tA, false, M, N, K, A, tA ? M : K, B, N, 0.0f, c1, N));
		CHECK_MSG(memcmp(c1, c2, sizeof(float) * M * N) == 0, "%d x %d x %d (tA %d): 1 and 2 threads differ", M, N, K,
				  tA);
		free(A); free(B); free(c1); free(c2);
	}
	hw_backend_destroy(be);
}

static HwModel *
tiny_model(HwBackend *be, uint16_t **colt, uint16_t **catt, HwError *err)
{
	return hw_synth_tiny_model(be, 8, 64, colt, catt, err);
}

UNIT_TEST(train_precision_refused_where_unusable)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	uint16_t  *colt, *catt;
	HwModel   *m = tiny_model(be, &colt, &catt, &err);

	CHECK(m != NULL);
	CHECK_EQ_INT(hw_model_train_precision(m), HW_PRECISION_FP32);
	hw_backend_cpu_disable_bf16(be, true);
	CHECK_EQ_INT(hw_model_set_train_precision(m, HW_PRECISION_BF16, &err), HW_ERR_INVALID);
	CHECK(strstr(err.msg, "AVX512_BF16") != NULL);
	CHECK_EQ_INT(hw_model_set_train_precision(m, HW_PRECISION_AUTO, &err), HW_OK);
	CHECK_EQ_INT(hw_model_train_precision(m), HW_PRECISION_FP32);
	hw_backend_cpu_disable_bf16(be, false);
	CHECK_EQ_INT(hw_model_set_train_precision(m, HW_PRECISION_AUTO, &err), HW_OK);
	CHECK_EQ_INT(hw_model_train_precision(m),
				 has_bf16(be) && be->ops->bf16_preferred(be, true) ? HW_PRECISION_BF16 : HW_PRECISION_FP32);
	CHECK_EQ_INT(hw_model_set_train_precision(m, HW_PRECISION_FP32, &err), HW_OK);
	CHECK_EQ_INT(hw_model_train_precision(m), HW_PRECISION_FP32);
	CHECK(strcmp(hw_precision_name(HW_PRECISION_BF16), "bf16") == 0 && hw_precision_name(3) == NULL);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}

/* loss and gradient of one forward and backward on batch 0 */
static int
loss_and_grad(HwModel *m, int stype, float *loss, float *grad, HwError *err)
{
	HwSynthSpec sp = { .B = 8, .S = 64, .d_text = DT, .target_stype = stype, .seed = 99 };
	HwBatch    *b = hw_synth_batch(&sp, 0);
	int         rc = hw_model_forward_backward(m, b, loss, err);

	hw_batch_free(b);
	return rc == HW_OK ? hw_model_get_flat(m, 1, grad) : rc;
}

UNIT_TEST(train_bf16_step_against_fp32)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	uint16_t  *colt, *catt;
	HwModel   *m = tiny_model(be, &colt, &catt, &err);
	int64_t    n;
	float     *g32, *g16, l32, l16;
	double     dot = 0, n32 = 0, n16 = 0;

	CHECK(m != NULL);
	if (!has_bf16(be))
	{
		hw_model_free(m);
		hw_backend_destroy(be);
		free(colt);
		free(catt);
		return;
	}
	n = hw_model_numel(m);
	g32 = malloc(sizeof(float) * n);
	g16 = malloc(sizeof(float) * n);
	CHECK_EQ_INT(loss_and_grad(m, HW_ST_CATEGORICAL, &l32, g32, &err), HW_OK);
	CHECK_EQ_INT(hw_model_set_train_precision(m, HW_PRECISION_BF16, &err), HW_OK);
	CHECK_EQ_INT(loss_and_grad(m, HW_ST_CATEGORICAL, &l16, g16, &err), HW_OK);
	for (int64_t i = 0; i < n; i++)
	{
		dot += (double) g32[i] * g16[i];
		n32 += (double) g32[i] * g32[i];
		n16 += (double) g16[i] * g16[i];
	}
	printf("  loss fp32 %.6f bf16 %.6f, gradient cosine %.6f\n", l32, l16, dot / sqrt(n32 * n16));
	CHECK_CLOSE(l16, l32, 0, 0.02);
	CHECK_MSG(dot / sqrt(n32 * n16) > 0.98, "gradient cosine %.4f", dot / sqrt(n32 * n16));
	CHECK_MSG(memcmp(g32, g16, sizeof(float) * n) != 0, "bf16 gave the fp32 gradient to the bit: it did not run");
	free(g32);
	free(g16);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}

UNIT_TEST(train_bf16_deterministic_across_thread_counts)
{
	HwError    err = {0};
	HwBackend *be[2] = {hw_backend_cpu_create(1, &err), hw_backend_cpu_create(2, &err)};
	uint16_t  *colt[2], *catt[2];
	HwModel   *m[2];
	float      loss[2][4];
	float     *p[2];
	int64_t    n;

	if (!has_bf16(be[0]))
	{
		hw_backend_destroy(be[0]);
		hw_backend_destroy(be[1]);
		return;
	}
	for (int t = 0; t < 2; t++)
	{
		m[t] = tiny_model(be[t], &colt[t], &catt[t], &err);
		CHECK(m[t] != NULL);
		CHECK_EQ_INT(hw_model_set_train_precision(m[t], HW_PRECISION_BF16, &err), HW_OK);
		CHECK_EQ_INT(hw_synth_train(m[t], HW_ST_NUMERICAL, 99, 4, loss[t], &err), HW_OK);
	}
	n = hw_model_numel(m[0]);
	for (int t = 0; t < 2; t++)
	{
		p[t] = malloc(sizeof(float) * n);
		hw_model_get_flat(m[t], 0, p[t]);
	}
	CHECK_MSG(memcmp(loss[0], loss[1], sizeof(loss[0])) == 0, "bf16 losses differ between 1 and 2 threads");
	CHECK_MSG(memcmp(p[0], p[1], sizeof(float) * n) == 0, "bf16 parameters differ between 1 and 2 threads");
	for (int t = 0; t < 2; t++)
	{
		free(p[t]);
		hw_model_free(m[t]);
		hw_backend_destroy(be[t]);
		free(colt[t]);
		free(catt[t]);
	}
}
