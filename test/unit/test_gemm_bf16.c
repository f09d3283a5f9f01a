/*
 * test_gemm_bf16.c: the CPU backend's bf16 inference GEMM (backend.h
 * bf16_*) against an independent triple loop:
 *  - with the operands rounded to bf16 here (own rounding), the kernel
 *    equals the double-precision product of the rounded operands to fp32
 *    accumulation error: |C - ref| <= 1e-5 * sum_k |a_k w_k| (+ 1e-30);
 *  - against the fp32 operands, the bf16 rounding error stays within
 *    2^-7 * sum_k |a_k w_k| (each operand is off by at most 2^-9 relative);
 *  - shapes with ragged edges (M, N, K not multiples of the tiles, K odd),
 *    beta 1 accumulation, a row stride lda > K;
 *  - a row's bits do not depend on M, its place in the call or the thread
 *    count;
 *  - hw_backend_cpu_disable_bf16 makes the backend report bf16 unusable and
 *    refuse to pack (the fp32 fallback);
 *  - on a processor with AMX tiles both kernels (AMX, and AVX512_BF16 with
 *    hw_backend_cpu_disable_amx) pass the checks above, and agree with each
 *    other to fp32 accumulation error.
 * Skipped (passes, says so) on a processor without AVX512_BF16 (AMX: without
 * the tiles, or where the operating system refuses them).
 */
#include "unit.h"
#include "core/backend.h"
#include "bf16_ref.h"
#include "packed_gemm_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


static HwBackend *
bf16_backend(int threads)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(threads, &err);

	if (be && !be->ops->bf16_usable(be))
	{
		printf("  (no AVX512_BF16 on this processor: bf16 GEMM not exercised)\n");
		hw_backend_destroy(be);
		return NULL;
	}
	return be;
}

/* one shape: C (beta 0, then beta 1 on top) against both references */
static int
check_shape(HwBackend *be, int M, int N, int K, int lda)
{
	uint64_t seed = (uint64_t) M * 1000003u + N * 1009u + K;
	float   *A = malloc(sizeof(float) * M * lda), *W = malloc(sizeof(float) * N * K);
	float   *C = malloc(sizeof(float) * M * N), *C0 = malloc(sizeof(float) * M * N);
	void    *pk;
	int      ok = 1;

	for (int i = 0; i < M * lda; i++)
		A[i] = frand(&seed) * 3.0f;
	for (int i = 0; i < N * K; i++)
		W[i] = frand(&seed) * 0.2f;
	pk = be->ops->bf16_weight_pack(be, W, N, K);
	if (!pk)
		ok = 0;
	for (int i = 0; i < M * N && ok; i++)
		C0[i] = frand(&seed);
	memcpy(C, C0, sizeof(float) * M * N);
	if (ok)
	{
		be->ops->gemm_bf16(be, M, N, K, A, lda, pk, 0, 0.0f, C, N);
		be->ops->gemm_bf16(be, M, N, K, A, lda, pk, 0, 1.0f, C, N);    /* C = 2 * A @ W^T */
	}
	for (int i = 0; i < M && ok; i++)
		for (int j = 0; j < N && ok; j++)
		{
			double rb = 0, rf = 0, mag = 0;

			for (int k = 0; k < K; k++)
			{
				double a = A[(size_t) i * lda + k], w = W[(size_t) j * K + k];

				rb += (double) round_bf16((float) a) * round_bf16((float) w);
				rf += a * w;
				mag += fabs(a * w);
			}
			if (fabs(C[i * N + j] - 2 * rb) > 2 * (1e-5 * mag + 1e-30) ||
				fabs(C[i * N + j] - 2 * rf) > 2 * (0x1p-7 * mag + 1e-30))
			{
				printf("  M=%d N=%d K=%d C[%d,%d] = %.9g, bf16 ref %.9g, fp32 ref %.9g (sum|aw| %.3g)\n", M, N, K,
					   i, j, C[i * N + j], 2 * rb, 2 * rf, mag);
				ok = 0;
			}
		}
	if (pk)
		be->ops->bf16_weight_free(be, pk);
	free(A); free(W); free(C); free(C0);
	return ok;
}

UNIT_TEST(test_gemm_bf16_against_reference)
{
	HwBackend *be = bf16_backend(2);
	static const int shapes[][4] = {
		{1, 16, 2, 2}, {1, 1, 1, 1}, {7, 17, 3, 5}, {6, 64, 128, 128}, {13, 100, 129, 131},
		{50, 512, 128, 128}, {97, 128, 512, 520}, {256, 384, 128, 128},
	};

	if (!be)
		return;
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		CHECK_MSG(check_shape(be, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]),
				  "bf16 GEMM %d x %d x %d off its reference", shapes[s][0], shapes[s][1], shapes[s][2]);
	hw_backend_destroy(be);
}

/* a row's bits alone and in other calls (packed_gemm_check.h) */
UNIT_TEST(test_gemm_bf16_row_independent)
{
	HwBackend *be = bf16_backend(2);

	if (!be)
		return;
	check_packed_rows_independent(be, be->ops->bf16_weight_pack, be->ops->gemm_bf16, be->ops->bf16_weight_free);
	hw_backend_destroy(be);
}

/* both kernels on every shape of the reference test, rows alone and in
 * batches, and against each other (each C element within 2e-5 of the sum
 * of |a w| of the rounded operands: both sum the same bf16 products in fp32) */
UNIT_TEST(test_gemm_bf16_amx_and_avx512)
{
	HwBackend *be = bf16_backend(2);
	static const int shapes[][3] = {{1, 16, 32}, {17, 40, 128}, {50, 512, 128}, {97, 128, 512}, {256, 384, 128}};

	if (!be)
		return;
	if (!hw_backend_cpu_amx_supported())
	{
		printf("  (no AMX tiles usable here: the AVX512_BF16 kernel alone was tested)\n");
		hw_backend_destroy(be);
		return;
	}
	for (int amx = 0; amx < 2; amx++)
	{
		hw_backend_cpu_disable_amx(be, !amx);
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			CHECK_MSG(check_shape(be, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][2]),
					  "%s kernel: %d x %d x %d off its reference", amx ? "AMX" : "AVX512_BF16", shapes[s][0],
					  shapes[s][1], shapes[s][2]);
		check_packed_rows_independent(be, be->ops->bf16_weight_pack, be->ops->gemm_bf16, be->ops->bf16_weight_free);
	}
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int      M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		uint64_t seed = 77u + s;
		float   *A = malloc(sizeof(float) * M * K), *W = malloc(sizeof(float) * N * K);
		float   *C[2] = {malloc(sizeof(float) * M * N), malloc(sizeof(float) * M * N)};
		void    *pk;
		int      bad = 0;

		for (int i = 0; i < M * K; i++)
			A[i] = frand(&seed) * 2.0f;
		for (int i = 0; i < N * K; i++)
			W[i] = frand(&seed) * 0.3f;
		pk = be->ops->bf16_weight_pack(be, W, N, K);
		CHECK(pk != NULL);
		for (int amx = 0; amx < 2 && pk; amx++)
		{
			hw_backend_cpu_disable_amx(be, !amx);
			be->ops->gemm_bf16(be, M, N, K, A, K, pk, 0, 0.0f, C[amx], N);
		}
		for (int i = 0; i < M && pk; i++)
			for (int j = 0; j < N; j++)
			{
				double mag = 0;

				for (int k = 0; k < K; k++)
					mag += fabs((double) round_bf16(A[(size_t) i * K + k]) * round_bf16(W[(size_t) j * K + k]));
				bad += fabs(C[0][i * N + j] - C[1][i * N + j]) > 2e-5 * mag + 1e-30;
			}
		CHECK_MSG(bad == 0, "%d x %d x %d: %d elements differ between the AMX and AVX512_BF16 kernels", M, N, K,
				  bad);
		if (pk)
			be->ops->bf16_weight_free(be, pk);
		free(A); free(W); free(C[0]); free(C[1]);
	}
	hw_backend_cpu_disable_amx(be, false);
	hw_backend_destroy(be);
}

UNIT_TEST(test_gemm_bf16_disable)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	float      W[32] = {1};

	CHECK(be != NULL);
	hw_backend_cpu_disable_bf16(be, true);
	CHECK(!be->ops->bf16_usable(be));
	CHECK(be->ops->bf16_weight_pack(be, W, 2, 16) == NULL);
	hw_backend_cpu_disable_bf16(be, false);
	CHECK(be->ops->bf16_usable(be) == (__builtin_cpu_supports("avx512bf16") != 0));
	hw_backend_destroy(be);
}
