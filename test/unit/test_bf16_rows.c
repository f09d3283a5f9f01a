/*
 * test_bf16_rows.c: the served model's bf16 products on rows made in bf16
 * (backend.h gemm_bf16_rows, rmsnorm_forward_bf16, swiglu_forward_bf16):
 *  - each producer writes the bf16 bits of its fp32 op's output, rounded by
 *    a reference written here (to nearest even, a subnormal to a zero of
 *    its sign), a NaN a NaN, rstd the fp32 op's bits; inputs that make
 *    subnormal, tied and NaN outputs, one thread and two;
 *  - gemm_bf16_rows on the reference's rounding of fp32 rows gives the bits
 *    gemm_bf16 gives on those rows (which rounds them inside), on both
 *    kernels where the processor has AMX tiles, on ragged M and N, a slice
 *    n0 of the packed rows, beta 0 and 1: so the kernels round as the
 *    reference does, subnormals and ties included.
 * Skipped (passes, says so) on a processor without AVX512_BF16.
 */
#include "unit.h"
#include "core/backend.h"
#include "bf16_ref.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* f's bf16 bits as VCVTNEPS2BF16 rounds (the Intel SDM's pseudo-code) */
static uint16_t
ref_bf16_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7f800000u) == 0)                     /* zero or subnormal: a zero of its sign */
		return (uint16_t) ((u >> 16) & 0x8000u);
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))
		return (uint16_t) ((u >> 16) | 0x40u);      /* NaN: quiet */
	return (uint16_t) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static HwBackend *
backend_with_rows(int threads)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(threads, &err);

	if (be && (!be->ops->bf16_usable(be) || !be->ops->gemm_bf16_rows))
	{
		printf("  (no AVX512_BF16 on this processor: bf16 rows not exercised)\n");
		hw_backend_destroy(be);
		return NULL;
	}
	return be;
}

/* a value of an awkward kind now and then: a subnormal, a halfway case
 * between two bf16 values, a tiny one */
static float
awkward(uint64_t *seed, float scale)
{
	float    x = frand(seed) * scale;
	uint32_t u;

	switch ((*seed >> 20) % 11)
	{
		case 0:
			return frand(seed) * 1e-39f;                    /* subnormal */
		case 1:
			memcpy(&u, &x, 4);
			u = (u & 0xffff0000u) | 0x8000u;               /* a tie */
			memcpy(&x, &u, 4);
			return x;
		case 2:
			return x * 1e-36f;
		default:
			return x;
	}
}

static int
count_bits_differ(const uint16_t *got, const float *f32, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		if (isnan(f32[i]))   /* a NaN's sign and payload are not the products' concern */
			bad += (got[i] & 0x7f80u) != 0x7f80u || (got[i] & 0x7fu) == 0;
		else
			bad += got[i] != ref_bf16_bits(f32[i]);
	return bad;
}

UNIT_TEST(bf16_rows_producers_round_their_fp32_rows)
{
	for (int threads = 1; threads <= 2; threads++)
	{
		HwBackend *be = backend_with_rows(threads);
		static const int shapes[][2] = {{3, 16}, {37, 128}, {200, 130}, {300, 512}};

		if (!be)
			return;
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		{
			int       N = shapes[s][0], D = shapes[s][1];
			uint64_t  seed = 11u + s;
			float    *x = malloc(sizeof(float) * N * 2 * D), *g = malloc(sizeof(float) * D);
			float    *out = malloc(sizeof(float) * N * D), *rstd = malloc(sizeof(float) * N);
			float    *rstd16 = malloc(sizeof(float) * N);
			uint16_t *o16 = malloc(sizeof(uint16_t) * N * D);

			for (int i = 0; i < N * 2 * D; i++)
				x[i] = awkward(&seed, 3.0f);
			/* a row whose norm is one large value: the others' outputs subnormal */
			x[0] = 1e30f;
			for (int d = 0; d < D; d++)
				g[d] = frand(&seed) * 0.5f;
			be->ops->rmsnorm_forward(be, out, rstd, x, g, N, D);
			be->ops->rmsnorm_forward_bf16(be, o16, rstd16, x, g, N, D);
			CHECK_MSG(memcmp(rstd, rstd16, sizeof(float) * N) == 0, "rmsnorm %d x %d: rstd differs", N, D);
			CHECK_MSG(count_bits_differ(o16, out, N * D) == 0, "rmsnorm %d x %d (%d threads): %d values off", N, D,
					  threads, count_bits_differ(o16, out, N * D));
			/* swiglu on [N, 2D] (F = D), a NaN and very negative gates among them */
			x[1] = NAN;
			x[2] = -80.0f;
			be->ops->swiglu_forward(be, out, x, N, D);
			be->ops->swiglu_forward_bf16(be, o16, x, N, D);
			CHECK_MSG(count_bits_differ(o16, out, N * D) == 0, "swiglu %d x %d (%d threads): %d values off", N, D,
					  threads, count_bits_differ(o16, out, N * D));
			CHECK_MSG((o16[1] & 0x7f80u) == 0x7f80u && (o16[1] & 0x7fu), "swiglu's NaN became %#x", o16[1]);
			free(x); free(g); free(out); free(rstd); free(rstd16); free(o16);
		}
		hw_backend_destroy(be);
	}
}

/* gemm_bf16_rows on the rounded rows against gemm_bf16 on the fp32 rows */
static int
check_rows_product(HwBackend *be, int M, int N, int K, int n0)
{
	uint64_t  seed = (uint64_t) M * 7919u + (uint64_t) N * 31u + (uint64_t) K;
	int       Mp = (M + 15) / 16 * 16;
	float    *A = malloc(sizeof(float) * M * K), *W = malloc(sizeof(float) * (n0 + N) * K);
	float    *C = malloc(sizeof(float) * M * N), *C16 = malloc(sizeof(float) * M * N);
	uint16_t *A16 = malloc(sizeof(uint16_t) * Mp * K);
	void     *pk;
	int       bad = 0;

	for (int i = 0; i < M * K; i++)
		A[i] = awkward(&seed, 2.0f);
	for (int i = 0; i < M * K; i++)
		A16[i] = ref_bf16_bits(A[i]);
	for (int i = M * K; i < Mp * K; i++)
		A16[i] = 0x7fc0u;                                   /* rows past M: read, reach no output */
	for (int i = 0; i < (n0 + N) * K; i++)
		W[i] = frand(&seed) * 0.3f;
	pk = be->ops->bf16_weight_pack(be, W, n0 + N, K);
	if (!pk)
		bad = -1;
	for (int beta = 0; beta < 2 && pk; beta++)
	{
		for (int i = 0; i < M * N; i++)
			C[i] = C16[i] = frand(&seed);
		be->ops->gemm_bf16(be, M, N, K, A, K, pk, n0, (float) beta, C, N);
		be->ops->gemm_bf16_rows(be, M, N, K, A16, pk, n0, (float) beta, C16, N);
		for (int i = 0; i < M * N; i++)
			bad += memcmp(&C[i], &C16[i], sizeof(float)) != 0;
	}
	if (pk)
		be->ops->bf16_weight_free(be, pk);
	free(A); free(W); free(C); free(C16); free(A16);
	return bad;
}

UNIT_TEST(bf16_rows_product_equals_rounding_inside)
{
	HwBackend *be = backend_with_rows(2);
	static const int shapes[][4] = {{1, 16, 128, 0}, {7, 100, 128, 16}, {50, 384, 128, 0},
									{97, 128, 512, 32}, {300, 512, 128, 0}, {33, 40, 130, 0}};

	if (!be)
		return;
	for (int amx = 0; amx < 2; amx++)
	{
		if (amx && !hw_backend_cpu_amx_supported())
		{
			printf("  (no AMX tiles usable here: the AVX512_BF16 kernel alone was tested)\n");
			break;
		}
		hw_backend_cpu_disable_amx(be, !amx);
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		{
			int bad = check_rows_product(be, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);

			CHECK_MSG(bad == 0, "%s kernel, %d x %d x %d (n0 %d): %d elements differ from gemm_bf16's",
					  amx ? "AMX" : "AVX512_BF16", shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], bad);
		}
	}
	hw_backend_cpu_disable_amx(be, false);
	hw_backend_destroy(be);
}
