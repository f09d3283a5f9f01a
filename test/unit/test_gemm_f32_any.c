/*
 * test_gemm_f32_any.c: the CPU backend's fp32 GEMM (backend.h gemm) on its
 * own kernel (backend_cpu_f32pack.c cpu_gemm_f32_any): every operand
 * layout, alpha and beta, ragged shapes and a K long enough to be summed
 * in blocks, against an emulation of the documented arithmetic (fmaf
 * chains over k, block by block) bit for bit and against a double
 * reference; the same bits at any thread count and from the AVX2 build;
 * no read past the end of a B read in place; OpenBLAS when the kernel is
 * disabled; gemm_rows_ragged's products equal to lone calls.
 */
#include "unit.h"
#include "core/backend.h"
#include "backend/backend_cpu_internal.h"
#include "bf16_ref.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct Shape
{
	bool tA, tB;
	int  M, N, K;
	float alpha, beta;
} Shape;

typedef struct Operands
{
	int    lda, ldb, ldc;
	float *A, *B, *C0;     /* C0: C before the call */
} Operands;

static float
op_a(const Shape *s, const Operands *o, int i, int k)
{
	return s->tA ? o->A[(size_t) k * o->lda + i] : o->A[(size_t) i * o->lda + k];
}

static float
op_b(const Shape *s, const Operands *o, int k, int j)
{
	return s->tB ? o->B[(size_t) j * o->ldb + k] : o->B[(size_t) k * o->ldb + j];
}

/* operands with padded leading dimensions (lda etc. wider than needed) */
static Operands
operands(const Shape *s, uint64_t seed)
{
	Operands o;
	int      ar = s->tA ? s->K : s->M, ac = s->tA ? s->M : s->K;
	int      br = s->tB ? s->N : s->K, bc = s->tB ? s->K : s->N;

	o.lda = ac + 3;
	o.ldb = bc + 5;
	o.ldc = s->N + 2;
	o.A = malloc(sizeof(float) * ar * o.lda);
	o.B = malloc(sizeof(float) * br * o.ldb);
	o.C0 = malloc(sizeof(float) * s->M * o.ldc);
	for (int i = 0; i < ar * o.lda; i++)
		o.A[i] = frand(&seed);
	for (int i = 0; i < br * o.ldb; i++)
		o.B[i] = frand(&seed);
	for (int i = 0; i < s->M * o.ldc; i++)
		o.C0[i] = frand(&seed);
	return o;
}

static void
operands_free(Operands *o)
{
	free(o->A);
	free(o->B);
	free(o->C0);
}

/* C[i,j] as the kernel documents it: per block of K an fmaf chain from 0,
 * then alpha * acc (alpha 1: acc), the first block stored over beta * C
 * (one fma; beta 0: no read), later ones added to C in order */
static float
emulated(const Shape *s, const Operands *o, int i, int j)
{
	int   kb = s->K <= F32_KWHOLE ? s->K : F32_KBLK;
	float c = o->C0[(size_t) i * o->ldc + j];

	for (int k0 = 0; k0 < s->K; k0 += kb)
	{
		float acc = 0.0f, beta = k0 == 0 ? s->beta : 1.0f;

		for (int k = k0; k < s->K && k < k0 + kb; k++)
			acc = fmaf(op_a(s, o, i, k), op_b(s, o, k, j), acc);
		if (s->alpha != 1.0f)
			acc = s->alpha * acc;
		c = beta != 0.0f ? fmaf(beta, c, acc) : acc;
	}
	return c;
}

/* C after one backend gemm call on fresh copies of the operands */
static float *
run_gemm(HwBackend *be, const Shape *s, const Operands *o)
{
	float *C = malloc(sizeof(float) * s->M * o->ldc);

	memcpy(C, o->C0, sizeof(float) * s->M * o->ldc);
	be->ops->gemm(be, s->tA, s->tB, s->M, s->N, s->K, s->alpha, o->A, o->lda, o->B, o->ldb, s->beta, C, o->ldc);
	return C;
}

static const Shape shapes[] = {
	{false, true, 1, 1, 1, 1.0f, 0.0f},
	{false, true, 7, 33, 5, 1.0f, 0.0f},            /* a layer's forward: W stored [N, K] */
	{false, false, 50, 130, 257, 1.0f, 1.0f},       /* an input gradient: W stored [K, N] */
	{true, false, 37, 21, 3000, 1.0f, 1.0f},        /* a weight gradient: long K, in blocks */
	{true, true, 13, 200, 1025, 1.0f, 0.5f},        /* just past the unblocked K */
	{false, false, 64, 64, 64, -0.75f, 1.5f},       /* the optimiser's alpha and beta */
	{true, false, 290, 17, 1100, 1.0f, 0.0f},       /* more rows than a long-K task takes */
	{false, false, 9, 21, 1024, 1.0f, 0.0f},        /* the longest K summed whole */
	{true, false, 20, 40, 2000, 0.5f, 1.0f},        /* alpha on a sum in blocks */
};

UNIT_TEST(test_gemm_f32_any_matches_its_arithmetic)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);

	CHECK(be != NULL);
	if (!hw_backend_cpu_f32_pack_supported())
	{
		printf("  (neither AVX-512 nor AVX2 + FMA here: the kernel is not exercised)\n");
		hw_backend_destroy(be);
		return;
	}
	for (size_t t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++)
	{
		const Shape *s = &shapes[t];
		Operands     o = operands(s, 11 + t);
		float       *C = run_gemm(be, s, &o);
		int          bad = 0;
		double       worst = 0;

		for (int i = 0; i < s->M; i++)
			for (int j = 0; j < s->N; j++)
			{
				double r = 0, mag = 0, got = C[(size_t) i * o.ldc + j];

				for (int k = 0; k < s->K; k++)
				{
					r += (double) op_a(s, &o, i, k) * op_b(s, &o, k, j);
					mag += fabs((double) op_a(s, &o, i, k) * op_b(s, &o, k, j));
				}
				r = s->alpha * r + s->beta * o.C0[(size_t) i * o.ldc + j];
				mag = fabs(s->alpha) * mag + fabs(s->beta * o.C0[(size_t) i * o.ldc + j]) + 1e-30;
				if (fabs(got - r) / mag > worst)
					worst = fabs(got - r) / mag;
				bad += memcmp(&C[(size_t) i * o.ldc + j], &(float) {emulated(s, &o, i, j)}, sizeof(float)) != 0;
			}
		/* the pad columns of C untouched */
		for (int i = 0; i < s->M; i++)
			for (int j = s->N; j < o.ldc; j++)
				bad += C[(size_t) i * o.ldc + j] != o.C0[(size_t) i * o.ldc + j];
		CHECK_MSG(bad == 0, "tA %d tB %d %dx%dx%d: %d elements differ from the emulated arithmetic", s->tA, s->tB,
				  s->M, s->N, s->K, bad);
		CHECK_MSG(worst < 1e-5, "tA %d tB %d %dx%dx%d: relative error %.3g against double", s->tA, s->tB, s->M,
				  s->N, s->K, worst);
		free(C);
		operands_free(&o);
	}
	hw_backend_destroy(be);
}

/* one and two threads, and the AVX2 build where AVX-512 runs: the same bits */
UNIT_TEST(test_gemm_f32_any_same_bits_any_threads_and_isa)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);

	CHECK(be != NULL);
	if (!hw_backend_cpu_f32_pack_supported())
	{
		hw_backend_destroy(be);
		return;
	}
	for (size_t t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++)
	{
		const Shape *s = &shapes[t];
		Operands     o = operands(s, 101 + t);
		size_t       nb = sizeof(float) * s->M * o.ldc;
		float       *c2, *c1, *cv;

		hw_backend_cpu_set_threads(be, 2);
		c2 = run_gemm(be, s, &o);
		hw_backend_cpu_set_threads(be, 1);
		c1 = run_gemm(be, s, &o);
		CHECK_MSG(memcmp(c1, c2, nb) == 0, "shape %zu: 1 and 2 threads differ", t);
		if (__builtin_cpu_supports("avx512f"))
		{
			cpu_f32_packed_force_avx2(true);
			cv = run_gemm(be, s, &o);
			cpu_f32_packed_force_avx2(false);
			CHECK_MSG(memcmp(cv, c2, nb) == 0, "shape %zu: the AVX2 and AVX-512 builds differ", t);
			free(cv);
		}
		free(c1);
		free(c2);
		operands_free(&o);
	}
	hw_backend_destroy(be);
}

/* disabled: OpenBLAS computes the product (other roundings, same values) */
UNIT_TEST(test_gemm_f32_any_disabled_runs_openblas)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	Shape      s = {true, false, 40, 24, 600, 1.0f, 0.0f};
	Operands   o = operands(&s, 5);
	float     *own, *blas;

	CHECK(be != NULL);
	own = run_gemm(be, &s, &o);
	CHECK(!cpu_gemm_f32_any(be, false, false, 0, 1, 1, 1.0f, o.A, 1, o.B, 1, 0.0f, own, 1));   /* nothing to do */
	hw_backend_cpu_disable_f32_pack(be, true);
	CHECK(!cpu_gemm_f32_any(be, s.tA, s.tB, s.M, s.N, s.K, 1.0f, o.A, o.lda, o.B, o.ldb, 0.0f, own, o.ldc));
	blas = run_gemm(be, &s, &o);
	for (int i = 0; i < s.M * o.ldc; i++)
		CHECK_CLOSE(own[i], blas[i], 1e-5, 1e-5);
	free(own);
	free(blas);
	operands_free(&o);
	hw_backend_destroy(be);
}

/* a B stored [K, N] with ldb = N (not a multiple of 16) is read in place
 * up to its last element and no further: it ends at a page that faults
 * on any access */
UNIT_TEST(test_gemm_f32_any_reads_no_further_than_b)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	int        M = 5, N = 21, K = 40;
	size_t     page = (size_t) sysconf(_SC_PAGESIZE), bytes = sizeof(float) * K * N;
	size_t     span = (bytes + page - 1) / page * page;
	char      *region = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	float     *B, A[5 * 40], C[5 * 21];
	uint64_t   seed = 9;

	CHECK(be != NULL && region != MAP_FAILED);
	CHECK(mprotect(region + span, page, PROT_NONE) == 0);
	for (int blas = 0; blas < 2; blas++)
	{
		/* both kernels (AVX-512 where it runs, and the AVX2 build) */
		B = (float *) (region + span - bytes);
		for (int i = 0; i < K * N; i++)
			B[i] = frand(&seed);
		for (int i = 0; i < M * K; i++)
			A[i] = frand(&seed);
		cpu_f32_packed_force_avx2(blas == 1);
		be->ops->gemm(be, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
		cpu_f32_packed_force_avx2(false);
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
			{
				double r = 0;

				for (int k = 0; k < K; k++)
					r += (double) A[i * K + k] * B[(size_t) k * N + j];
				CHECK_CLOSE(C[i * N + j], r, 1e-5, 1e-5);
			}
	}
	munmap(region, span + page);
	hw_backend_destroy(be);
}

/* gemm_rows_ragged's products on lone calls: rows off[i] .. off[i+1] of a
 * call of several products (empty ones among them, off[0] > 0, beta 1)
 * are the bits of the same product called alone, on the own kernel and on
 * OpenBLAS; and within 1e-5 of a double reference. */
UNIT_TEST(test_gemm_rows_ragged_products_are_lone_calls)
{
	HwError        err = {0};
	HwBackend     *be = hw_backend_cpu_create(2, &err);
	enum { NB = 5, ROWS = 90, N = 40, K = 70 };
	static const int32_t off[NB + 1] = {3, 30, 30, 61, 62, 90};   /* product 1 is empty */
	uint64_t       rng = 11;
	float         *A = malloc(sizeof(float) * ROWS * K), *W = malloc(sizeof(float) * N * K);
	float         *C0 = malloc(sizeof(float) * ROWS * N), *all = malloc(sizeof(float) * ROWS * N);
	float         *lone = malloc(sizeof(float) * ROWS * N);

	CHECK(be != NULL);
	for (int i = 0; i < ROWS * K; i++)
		A[i] = (float) ((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 40) / (1 << 24) - 0.5f;
	for (int i = 0; i < N * K; i++)
		W[i] = (float) ((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 40) / (1 << 24) - 0.5f;
	for (int i = 0; i < ROWS * N; i++)
		C0[i] = (float) (i % 7) - 3.0f;
	for (int blas = 0; blas < 2; blas++)
	{
		hw_backend_cpu_disable_f32_pack(be, blas == 1);
		memcpy(all, C0, sizeof(float) * ROWS * N);
		memcpy(lone, C0, sizeof(float) * ROWS * N);
		be->ops->gemm_rows_ragged(be, NB, off, N, K, A, K, W, 1.0f, all, N);
		for (int i = 0; i < NB; i++)
		{
			int32_t one[2] = {0, off[i + 1] - off[i]};

			be->ops->gemm_rows_ragged(be, 1, one, N, K, A + (size_t) off[i] * K, K, W, 1.0f,
									  lone + (size_t) off[i] * N, N);
		}
		CHECK_MSG(memcmp(all, lone, sizeof(float) * ROWS * N) == 0, "%s: a product's bits depend on the call",
				  blas ? "OpenBLAS" : "own kernel");
		for (int r = 0; r < ROWS; r++)
			for (int j = 0; j < N; j++)
			{
				double want = C0[r * N + j];

				if (r >= off[0] && r < off[NB])
					for (int k = 0; k < K; k++)
						want += (double) A[r * K + k] * W[j * K + k];
				CHECK_CLOSE(all[r * N + j], want, 1e-5, 1e-5);
			}
	}
	free(A); free(W); free(C0); free(all); free(lone);
	hw_backend_destroy(be);
}
