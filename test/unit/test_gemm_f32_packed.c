/*
 * test_gemm_f32_packed.c: the CPU backend's fp32 GEMM on packed weights
 * (backend.h f32_weight_pack, gemm_f32_packed; backend_cpu_f32pack.c)
 * against a double-precision reference, with beta 0 and 1, slices of the
 * packed columns (n0), ragged shapes, and a row's bits alone and inside
 * any call at any thread count.
 */
#include "unit.h"
#include "core/backend.h"
#include "backend/backend_cpu_internal.h"
#include "bf16_ref.h"
#include "packed_gemm_check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static HwBackend *
packed_backend(int threads)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(threads, &err);

	if (be && !hw_backend_cpu_f32_pack_supported())
	{
		printf("  (no AVX-512 on this processor: the packed fp32 GEMM not exercised)\n");
		hw_backend_destroy(be);
		return NULL;
	}
	return be;
}

/* one shape, columns [n0, n0 + N) of a packed [Nw, K]: C (beta 0, then
 * beta 1 on top) against the double reference */
static int
check_shape(HwBackend *be, int M, int Nw, int n0, int N, int K, int lda)
{
	uint64_t seed = (uint64_t) M * 1000003u + Nw * 1009u + K;
	float   *A = malloc(sizeof(float) * M * lda), *W = malloc(sizeof(float) * Nw * K);
	float   *C = malloc(sizeof(float) * M * N);
	void    *pk;
	int      ok = 1;

	for (int i = 0; i < M * lda; i++)
		A[i] = frand(&seed) * 3.0f;
	for (int i = 0; i < Nw * K; i++)
		W[i] = frand(&seed) * 0.2f;
	pk = be->ops->f32_weight_pack(be, W, Nw, K);
	ok = pk != NULL;
	if (ok)
	{
		be->ops->gemm_f32_packed(be, M, N, K, A, lda, pk, n0, 0.0f, C, N);
		be->ops->gemm_f32_packed(be, M, N, K, A, lda, pk, n0, 1.0f, C, N);    /* C = 2 * A @ W^T */
	}
	for (int i = 0; i < M && ok; i++)
		for (int j = 0; j < N && ok; j++)
		{
			double r = 0, mag = 0;

			for (int k = 0; k < K; k++)
			{
				double a = A[(size_t) i * lda + k], w = W[(size_t) (n0 + j) * K + k];

				r += a * w;
				mag += fabs(a * w);
			}
			if (fabs(C[i * N + j] - 2 * r) > 2 * (1e-6 * mag + 1e-30))
			{
				printf("  M=%d N=%d (of %d from %d) K=%d C[%d,%d] = %.9g, reference %.9g (sum|aw| %.3g)\n", M, N,
					   Nw, n0, K, i, j, C[i * N + j], 2 * r, mag);
				ok = 0;
			}
		}
	if (pk)
		be->ops->f32_weight_free(be, pk);
	free(A); free(W); free(C);
	return ok;
}

static void
against_reference(void)
{
	HwBackend *be = packed_backend(2);
	static const int shapes[][6] = {   /* M, packed N, n0, N, K, lda */
		{1, 16, 0, 16, 2, 2}, {1, 1, 0, 1, 1, 1}, {7, 17, 0, 17, 3, 5}, {6, 64, 0, 64, 128, 128},
		{13, 100, 0, 100, 129, 131}, {50, 512, 128, 256, 128, 128}, {97, 128, 0, 128, 512, 520},
		{256, 384, 0, 384, 128, 128}, {49, 512, 384, 128, 128, 130},
	};

	if (!be)
		return;
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		CHECK_MSG(check_shape(be, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4], shapes[s][5]),
				  "packed fp32 GEMM %d x %d x %d off its reference", shapes[s][0], shapes[s][3], shapes[s][4]);
	hw_backend_destroy(be);
}

/* a row's bits alone and in other calls (packed_gemm_check.h) */
static void
row_independent(void)
{
	HwBackend *be = packed_backend(2);

	if (!be)
		return;
	check_packed_rows_independent(be, be->ops->f32_weight_pack, be->ops->gemm_f32_packed, be->ops->f32_weight_free);
	hw_backend_destroy(be);
}

static bool
has_avx2(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* the processor's widest kernel, then the AVX2 one (where it runs) */
UNIT_TEST(test_gemm_f32_packed_against_reference)
{
	against_reference();
	cpu_f32_packed_force_avx2(true);
	if (has_avx2())
		against_reference();
	cpu_f32_packed_force_avx2(false);
}

UNIT_TEST(test_gemm_f32_packed_row_independent)
{
	row_independent();
	cpu_f32_packed_force_avx2(true);
	if (has_avx2())
		row_independent();
	cpu_f32_packed_force_avx2(false);
}

/* the AVX-512 and AVX2 kernels: the same FMA chain per element, so the
 * same bits (on a processor that has both) */
UNIT_TEST(test_gemm_f32_packed_same_bits_across_isas)
{
	HwBackend *be = packed_backend(2);
	int        M = 37, N = 200, K = 131;
	uint64_t   seed = 3;
	float     *A, *W, *C512, *C2;
	void      *pk;

	if (!be || !__builtin_cpu_supports("avx512f"))
	{
		hw_backend_destroy(be);
		return;
	}
	A = malloc(sizeof(float) * M * K);
	W = malloc(sizeof(float) * N * K);
	C512 = malloc(sizeof(float) * M * N);
	C2 = malloc(sizeof(float) * M * N);
	for (int i = 0; i < M * K; i++)
		A[i] = frand(&seed);
	for (int i = 0; i < N * K; i++)
		W[i] = frand(&seed);
	for (int i = 0; i < M * N; i++)
		C512[i] = C2[i] = frand(&seed);
	pk = be->ops->f32_weight_pack(be, W, N, K);
	CHECK(pk != NULL);
	be->ops->gemm_f32_packed(be, M, N - 16, K, A, K, pk, 16, 1.0f, C512, N);
	cpu_f32_packed_force_avx2(true);
	be->ops->gemm_f32_packed(be, M, N - 16, K, A, K, pk, 16, 1.0f, C2, N);
	cpu_f32_packed_force_avx2(false);
	CHECK(memcmp(C512, C2, sizeof(float) * M * N) == 0);
	be->ops->f32_weight_free(be, pk);
	free(A); free(W); free(C512); free(C2);
	hw_backend_destroy(be);
}

/* disabled (or without AVX-512 and AVX2): no packs, so the model keeps OpenBLAS */
UNIT_TEST(test_gemm_f32_packed_disable)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	float      W[32] = {1};
	void      *pk;

	CHECK(be != NULL);
	hw_backend_cpu_disable_f32_pack(be, true);
	CHECK(be->ops->f32_weight_pack(be, W, 2, 16) == NULL);
	hw_backend_cpu_disable_f32_pack(be, false);
	pk = be->ops->f32_weight_pack(be, W, 2, 16);
	CHECK((pk != NULL) == hw_backend_cpu_f32_pack_supported());
	be->ops->f32_weight_free(be, pk);
	hw_backend_destroy(be);
}
