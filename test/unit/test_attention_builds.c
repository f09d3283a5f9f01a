/*
 * test_attention_builds.c: every build of the attention kernels this CPU
 * runs (attention_kernels_*.c: the baseline, AVX2, AVX-512) against the
 * dense reference, forward, backward, the serving forward (by lists on the
 * sparse masks) and one query per sequence (the serving forward's bits); the
 * builds with FMA (AVX2, AVX-512) run the same operations per lane, so
 * they must agree bit for bit (the baseline on x86-64 rounds its products
 * separately and only meets the tolerance).
 */
#include "unit.h"
#include "attention_gen.h"
#include "core/attention_internal.h"

#include <stdlib.h>
#include <string.h>

/* forward, backward, the serving forward (os, ls) and the one-query
 * forward (at cell (5 + 29 b) mod S of each element b) of one build, the
 * sampler's permutation */
static void
run_build(HwAttnBuild build, const TBatch *t, HwMaskKind kind, int H, int dh, const float *q, const float *k,
		  const float *v, const float *g, float *o, float *l, float *dq, float *dk, float *dv, float *orow,
		  float *os, float *ls)
{
	HwAttnMaskInfo info = tinfo(t, kind, 1);
	HwAttnPlan    *plan = attn_plan_create(&info, kind, NULL);
	int            D = H * dh;
	int32_t       *cell = malloc(sizeof(int32_t) * t->B);
	float         *qr = malloc(sizeof(float) * t->B * D);

	attn_kernels_force(build);	/* the caller has checked that the CPU runs it */
	for (int b = 0; b < t->B; b++)
	{
		cell[b] = b * t->S + (5 + 29 * b) % t->S;
		memcpy(qr + (size_t) b * D, q + (size_t) cell[b] * D, sizeof(float) * D);
	}
	attn_block_sparse_forward(o, l, q, k, v, plan, H, dh);
	attn_block_sparse_backward(dq, dk, dv, g, o, l, q, k, v, plan, H, dh);
	attn_block_sparse_forward_seqs(os, ls, q, k, v, plan, 0, t->B, H, dh);
	attn_block_sparse_forward_rows(orow, qr, k, v, plan, cell, H, dh);
	attn_kernels_force(HW_ATTN_BUILD_AUTO);
	attn_plan_free(plan);
	free(cell);
	free(qr);
}

/* every build against the dense reference at head size dh (24: the list
 * kernel on gathered buffers; 32: where the rows lie) */
static void
every_build_matches_dense(int dh)
{
	TBatch  t;
	TRng    rng = {77};
	int     B = 2, S = 150, H = 2;
	int64_t n = (int64_t) B * S * H * dh, nl = (int64_t) B * H * S, nr = (int64_t) B * H * dh;
	float  *in = malloc(sizeof(float) * 4 * n), *ref = malloc(sizeof(float) * (4 * n + nl));
	float  *got[3], *fma_first = NULL;
	int     ran = 0;

	tbatch_make(&t, B, S, 60, 0.85, 61);
	fill_rand(in, 2 * n, &rng, 0.6f);			/* q, k */
	fill_rand(in + 2 * n, 2 * n, &rng, 1.0f);	/* v, dout */
	for (int x = 0; x < 3; x++)
		got[x] = malloc(sizeof(float) * (5 * n + 2 * nl + nr));
	for (int kind = 0; kind < 4 && !unit_current_failed; kind++)
	{
		HwAttnMaskInfo info0 = tinfo(&t, kind, 0);
		float         *o1 = ref, *dq1 = ref + n, *dk1 = ref + 2 * n, *dv1 = ref + 3 * n, *l1 = ref + 4 * n;

		attn_dense_reference_forward(o1, l1, in, in + n, in + 2 * n, &info0, kind, H, dh);
		attn_dense_reference_backward(dq1, dk1, dv1, in + 3 * n, o1, l1, in, in + n, in + 2 * n, &info0, kind, H,
									  dh);
		fma_first = NULL;
		for (HwAttnBuild build = HW_ATTN_BUILD_GENERIC; build <= HW_ATTN_BUILD_AVX512; build++)
		{
			float *r = got[build - HW_ATTN_BUILD_GENERIC];

			if (!attn_kernels_force(build))
				continue;	/* this CPU lacks it */
			CHECK_EQ_INT(attn_kernels_in_use(), build);
			attn_kernels_force(HW_ATTN_BUILD_AUTO);
			ran++;
			float *os = r + 4 * n + nl + nr, *ls = os + n;   /* the serving forward */

			run_build(build, &t, kind, H, dh, in, in + n, in + 2 * n, in + 3 * n, r, r + 4 * n, r + n, r + 2 * n,
					  r + 3 * n, r + 4 * n + nl, os, ls);
			for (int part = 0; part < 4; part++)
				CHECK_MSG(rel_err(r + part * n, ref + part * n, n, 2e-5, 1e-4) <= 1.0,
						  "build %s kind %d: part %d (out, dq, dk, dv) off the reference",
						  attn_kernels_name(build), kind, part);
			CHECK_MSG(rel_err(r + 4 * n, l1, nl, 2e-5, 1e-4) <= 1.0, "build %s kind %d: lse",
					  attn_kernels_name(build), kind);
			CHECK_MSG(rel_err(os, o1, n, 2e-5, 1e-4) <= 1.0 && rel_err(ls, l1, nl, 2e-5, 1e-4) <= 1.0,
					  "build %s kind %d: the serving forward off the reference", attn_kernels_name(build), kind);
			for (int b = 0; b < B; b++)
			{
				int cellb = b * S + (5 + 29 * b) % S;

				CHECK_MSG(memcmp(r + 4 * n + nl + (int64_t) b * H * dh, os + (int64_t) cellb * H * dh,
								 sizeof(float) * H * dh) == 0,
						  "build %s kind %d: the one-query forward differs from the serving one",
						  attn_kernels_name(build), kind);
			}
			if (build == HW_ATTN_BUILD_GENERIC)
				continue;
			if (fma_first)
				CHECK_MSG(memcmp(r, fma_first, sizeof(float) * (5 * n + 2 * nl + nr)) == 0,
						  "kind %d: the %s build's bits differ from the avx2 build's", kind,
						  attn_kernels_name(build));
			else
				fma_first = r;
		}
	}
	CHECK(ran >= 4);	/* at least the baseline, on every mask */
	/* auto takes the widest build: never the baseline where AVX2 runs */
	if (attn_kernels_force(HW_ATTN_BUILD_AVX2))
	{
		attn_kernels_force(HW_ATTN_BUILD_AUTO);
		CHECK(attn_kernels_in_use() != HW_ATTN_BUILD_GENERIC);
	}
	tbatch_free(&t);
	for (int x = 0; x < 3; x++)
		free(got[x]);
	free(in);
	free(ref);
}

UNIT_TEST(attn_every_build_matches_dense)
{
	every_build_matches_dense(24);
	every_build_matches_dense(32);
}
