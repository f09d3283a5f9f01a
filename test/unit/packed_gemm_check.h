/*
 * packed_gemm_check.h: the row-independence check that the CPU backend's
 * two GEMMs on packed weights (bf16: bf16_weight_pack / gemm_bf16; fp32:
 * f32_weight_pack / gemm_f32_packed) share: row r of a 200-row call equals
 * the same row computed alone (M = 1) and in a 7-row call at another
 * place, the call of 200 on the backend's team and the others on one
 * thread, bit for bit.  Include after unit.h and bf16_ref.h (frand).
 */
#ifndef HW_PACKED_GEMM_CHECK_H
#define HW_PACKED_GEMM_CHECK_H

#include "core/backend.h"

#include <stdlib.h>
#include <string.h>

typedef void *(*PackedWeightFn)(HwBackend *be, const float *W, int N, int K);
typedef void (*PackedGemmFn)(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0,
							 float beta, float *C, int ldc);
typedef void (*PackedFreeFn)(HwBackend *be, void *packed);

/* leaves the backend at one thread */
static void
check_packed_rows_independent(HwBackend *be, PackedWeightFn pack, PackedGemmFn gemm, PackedFreeFn pfree)
{
	int      M = 200, N = 80, K = 96;
	uint64_t seed = 7;
	float   *A = malloc(sizeof(float) * M * K), *W = malloc(sizeof(float) * N * K);
	float   *C = malloc(sizeof(float) * M * N), *c1 = malloc(sizeof(float) * 7 * N);
	void    *pk;

	for (int i = 0; i < M * K; i++)
		A[i] = frand(&seed);
	for (int i = 0; i < N * K; i++)
		W[i] = frand(&seed);
	pk = pack(be, W, N, K);
	CHECK(pk != NULL);
	if (pk)
	{
		gemm(be, M, N, K, A, K, pk, 0, 0.0f, C, N);
		hw_backend_cpu_set_threads(be, 1);
		for (int r = 0; r < M; r += 13)
		{
			gemm(be, 1, N, K, A + (size_t) r * K, K, pk, 0, 0.0f, c1, N);
			CHECK_MSG(memcmp(c1, C + (size_t) r * N, sizeof(float) * N) == 0, "row %d alone differs", r);
			if (r >= 3 && r + 4 <= M)
			{
				gemm(be, 7, N, K, A + (size_t) (r - 3) * K, K, pk, 0, 0.0f, c1, N);
				CHECK_MSG(memcmp(c1 + 3 * N, C + (size_t) r * N, sizeof(float) * N) == 0,
						  "row %d in a 7-row call differs", r);
			}
		}
		pfree(be, pk);
	}
	free(A); free(W); free(C); free(c1);
}

#endif /* HW_PACKED_GEMM_CHECK_H */
