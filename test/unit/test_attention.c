/*
 * test_attention.c: block-sparse attention (attention_kernels.c) against the dense
 * O(S^2) reference, and the dense reference backward against finite
 * differences.
 *
 * Inputs come from attention_gen.c: sampler-like sequences with the
 * sampler's permutations and with arbitrary ones: correctness must not
 * depend on the permutation.  Every build of the kernels:
 * test_attention_builds.c.
 */
#include "unit.h"
#include "attention_gen.h"
#include "core/attention.h"
#include "core/attention_check.h"
#include "core/backend.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---------------- tests ---------------- */

UNIT_TEST(attn_mask_rule_basic)
{
	/* 4 cells: rows 0,0,1 and padding; row 1 -> row 0 */
	int32_t  col[4] = {7, 8, 7, 7};
	uint16_t row[4] = {0, 0, 1, 0};
	uint8_t  pad[4] = {0, 0, 0, 1};
	uint8_t  adj[4] = {0, 0, 1, 0};	/* adj[1*2+0] = 1 */
	HwAttnMaskInfo in = {1, 4, 2, col, row, pad, adj, NULL};

	CHECK(attn_mask_allowed(&in, HW_MASK_COLUMN, 0, 0, 2));
	CHECK(!attn_mask_allowed(&in, HW_MASK_COLUMN, 0, 0, 1));
	CHECK(!attn_mask_allowed(&in, HW_MASK_COLUMN, 0, 0, 3));	/* padding */
	CHECK(attn_mask_allowed(&in, HW_MASK_COLUMN, 0, 3, 3));	/* diagonal */
	CHECK(attn_mask_allowed(&in, HW_MASK_OUTBOUND, 0, 0, 1));	/* same row */
	CHECK(attn_mask_allowed(&in, HW_MASK_OUTBOUND, 0, 2, 0));	/* row 1 -> row 0 */
	CHECK(!attn_mask_allowed(&in, HW_MASK_OUTBOUND, 0, 0, 2));
	CHECK(attn_mask_allowed(&in, HW_MASK_INBOUND, 0, 0, 2));	/* row 0 <- row 1 */
	CHECK(!attn_mask_allowed(&in, HW_MASK_INBOUND, 0, 0, 1));	/* own row is not inbound */
	CHECK(!attn_mask_allowed(&in, HW_MASK_FULL, 0, 3, 0));
	CHECK(attn_mask_allowed(&in, HW_MASK_FULL, 0, 1, 2));
}

/* allowed pairs of the plan == count from the rule; visited tiles sane */
UNIT_TEST(attn_plan_counts_match_rule)
{
	TBatch t;

	tbatch_make(&t, 3, 200, 80, 0.8, 1);
	for (int kind = 0; kind < 4; kind++)
		for (int which = 0; which < 3; which++)
		{
			HwAttnMaskInfo info = tinfo(&t, kind, which);
			HwError        err = {0};
			HwAttnPlan    *plan = attn_plan_create(&info, kind, &err);
			int64_t        n = 0;
			int            nt = (t.S + HW_ATTN_TILE - 1) / HW_ATTN_TILE;

			CHECK_MSG(plan != NULL, "plan: %s", err.msg);
			for (int b = 0; b < t.B; b++)
				for (int i = 0; i < t.S; i++)
					for (int j = 0; j < t.S; j++)
						n += attn_mask_allowed(&info, kind, b, i, j);
			CHECK_EQ_INT(attn_plan_allowed_pairs(plan), n);
			CHECK(attn_plan_visited_tile_pairs(plan) >= (int64_t) t.B * nt);
			CHECK(attn_plan_visited_tile_pairs(plan) <= (int64_t) t.B * nt * nt);
			attn_plan_free(plan);
		}
	tbatch_free(&t);
}

/* Good permutations visit fewer tiles than bad ones for the sparse masks. */
UNIT_TEST(attn_plan_good_perm_is_sparser)
{
	TBatch t;

	tbatch_make(&t, 2, 512, 200, 0.9, 2);
	for (int kind = 0; kind < 3; kind++)
	{
		HwAttnMaskInfo good = tinfo(&t, kind, 1), bad = tinfo(&t, kind, 2);
		HwAttnPlan    *pg = attn_plan_create(&good, kind, NULL);
		HwAttnPlan    *pb = attn_plan_create(&bad, kind, NULL);

		CHECK(pg && pb);
		CHECK_EQ_INT(attn_plan_allowed_pairs(pg), attn_plan_allowed_pairs(pb));
		CHECK_MSG(attn_plan_visited_tile_pairs(pg) < attn_plan_visited_tile_pairs(pb),
				  "kind %d: good perm visits %lld tiles, random %lld", kind,
				  (long long) attn_plan_visited_tile_pairs(pg),
				  (long long) attn_plan_visited_tile_pairs(pb));
		/* the column mask is block diagonal under col_perm: segments of ~15
		 * cells touch at most 3 tiles each way: < 4 tiles per query tile */
		if (kind == HW_MASK_COLUMN)
			CHECK_MSG(attn_plan_visited_tile_pairs(pg) < 2 * 4 * (512 / HW_ATTN_TILE),
					  "%lld tiles", (long long) attn_plan_visited_tile_pairs(pg));
		attn_plan_free(pg);
		attn_plan_free(pb);
	}
	tbatch_free(&t);
}

UNIT_TEST(attn_plan_rejects_bad_input)
{
	TBatch         t;
	HwError        err = {0};
	HwAttnMaskInfo info;

	tbatch_make(&t, 1, 64, 30, 1.0, 3);
	info = tinfo(&t, HW_MASK_COLUMN, 1);
	t.col_perm[5] = t.col_perm[6];	/* duplicate: not a permutation */
	CHECK(attn_plan_create(&info, HW_MASK_COLUMN, &err) == NULL);
	CHECK_EQ_INT(err.code, HW_ERR_INVALID);
	info = tinfo(&t, HW_MASK_OUTBOUND, 0);
	t.seq_row_ids[3] = 30;	/* row out of range */
	CHECK(attn_plan_create(&info, HW_MASK_OUTBOUND, &err) == NULL);
	tbatch_free(&t);
}

/*
 * The plan-input contract shared with the CUDA backend (attention_check.h):
 * the CUDA plan runs the same check on the host before uploading, so these
 * cases are also the GPU's (its kernels would read out of bounds on a perm
 * value >= S and leave rows unwritten on a duplicate).  The CPU plan and the
 * CPU backend's table entry must return exactly the check's message.
 */
static void
expect_rejected(const HwAttnMaskInfo *info, HwMaskKind kind, const char *needle)
{
	char       why[256] = "";
	HwError    e1 = {0}, e2 = {0};
	HwBackend *be = hw_backend_cpu_create(1, NULL);

	CHECK_EQ_INT(hw_attn_mask_info_check(info, kind, why, sizeof(why)), HW_ERR_INVALID);
	CHECK_MSG(strstr(why, needle) != NULL, "message \"%s\" lacks \"%s\"", why, needle);
	CHECK(attn_plan_create(info, kind, &e1) == NULL);
	CHECK_EQ_INT(e1.code, HW_ERR_INVALID);
	CHECK_MSG(strcmp(e1.msg, why) == 0, "CPU plan says \"%s\", the check \"%s\"", e1.msg, why);
	CHECK(be->ops->attn_plan_create(be, info, kind, &e2) == NULL);
	CHECK_EQ_INT(e2.code, HW_ERR_INVALID);
	CHECK(strcmp(e2.msg, why) == 0);
	hw_backend_destroy(be);
}

UNIT_TEST(attn_mask_info_check_contract)
{
	TBatch         t;
	HwAttnMaskInfo info;
	char           why[256];
	uint16_t       save;

	tbatch_make(&t, 3, 150, 40, 0.8, 5);
	/* every sampler-like and random permutation, and the identity, pass */
	for (int kind = 0; kind < 4; kind++)
		for (int which = 0; which < 3; which++)
		{
			info = tinfo(&t, (HwMaskKind) kind, which);
			CHECK_EQ_INT(hw_attn_mask_info_check(&info, (HwMaskKind) kind, why, sizeof(why)), HW_OK);
		}

	/* a value >= S in batch element 2 (uint16 allows up to 65535) */
	info = tinfo(&t, HW_MASK_COLUMN, 1);
	save = t.col_perm[2 * 150 + 7];
	t.col_perm[2 * 150 + 7] = 150;
	expect_rejected(&info, HW_MASK_COLUMN, "batch element 2 is not a permutation of 0..149 (position 7 holds 150: out of range)");
	if (unit_current_failed) return;
	t.col_perm[2 * 150 + 7] = 65535;
	expect_rejected(&info, HW_MASK_COLUMN, "out of range");
	if (unit_current_failed) return;
	t.col_perm[2 * 150 + 7] = save;

	/* a duplicate (so some position is never visited) in batch element 0 */
	info = tinfo(&t, HW_MASK_INBOUND, 1);
	save = t.in_perm[149];
	t.in_perm[149] = t.in_perm[0];
	expect_rejected(&info, HW_MASK_INBOUND, "batch element 0 is not a permutation");
	if (unit_current_failed) return;
	expect_rejected(&info, HW_MASK_INBOUND, "a duplicate");
	if (unit_current_failed) return;
	t.in_perm[149] = save;
	info = tinfo(&t, HW_MASK_INBOUND, 1);
	CHECK_EQ_INT(hw_attn_mask_info_check(&info, HW_MASK_INBOUND, why, sizeof(why)), HW_OK);

	/* rows out of range are checked with the identity perm too */
	info = tinfo(&t, HW_MASK_OUTBOUND, 0);
	for (int i = 0; i < 150; i++)
		if (!t.is_padding[150 + i])
		{
			save = t.seq_row_ids[150 + i];
			t.seq_row_ids[150 + i] = 40;
			expect_rejected(&info, HW_MASK_OUTBOUND, "seq_row_ids[1,");
			t.seq_row_ids[150 + i] = save;
			break;
		}
	if (unit_current_failed) return;

	/* shapes and missing tensors */
	info = tinfo(&t, HW_MASK_COLUMN, 1);
	info.S = 65537;
	CHECK_EQ_INT(hw_attn_mask_info_check(&info, HW_MASK_COLUMN, why, sizeof(why)), HW_ERR_INVALID);
	CHECK(strstr(why, "exceeds 65536") != NULL);
	info = tinfo(&t, HW_MASK_OUTBOUND, 1);
	info.fk_adj = NULL;
	expect_rejected(&info, HW_MASK_OUTBOUND, "missing tensor for mask kind 1");
	if (unit_current_failed) return;
	info = tinfo(&t, HW_MASK_COLUMN, 1);
	expect_rejected(&info, (HwMaskKind) 7, "invalid mask info");
	if (unit_current_failed) return;
	/* B = 0 is a valid (empty) batch on both backends */
	info = tinfo(&t, HW_MASK_FULL, 0);
	info.B = 0;
	CHECK_EQ_INT(hw_attn_mask_info_check(&info, HW_MASK_FULL, why, sizeof(why)), HW_OK);
	tbatch_free(&t);
}

/*
 * Block-sparse vs dense reference, forward and backward.  Tolerance: the
 * reference accumulates in double, the kernel in fp32 with a polynomial exp
 * (~2 ulp) and online rescaling; with |q.k| <= ~10 and S <= 300 the fp32
 * error is a few 1e-6 relative; 2e-5 abs + 1e-4 rel leaves margin while a
 * single wrong mask bit (a p of ~1/S) gives errors of ~1e-3 and fails.
 */
static void
check_vs_dense(int B, int S, int R, int H, int dh, double fill, uint64_t seed)
{
	TBatch  t;
	TRng    rng = {seed + 99};
	int64_t n = (int64_t) B * S * H * dh, nl = (int64_t) B * H * S;
	float  *q = malloc(sizeof(float) * n), *k = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
	float  *g = malloc(sizeof(float) * n);
	float  *o1 = malloc(sizeof(float) * n), *o2 = malloc(sizeof(float) * n);
	float  *l1 = malloc(sizeof(float) * nl), *l2 = malloc(sizeof(float) * nl);
	float  *dq1 = malloc(sizeof(float) * n), *dk1 = malloc(sizeof(float) * n), *dv1 = malloc(sizeof(float) * n);
	float  *dq2 = malloc(sizeof(float) * n), *dk2 = malloc(sizeof(float) * n), *dv2 = malloc(sizeof(float) * n);

	tbatch_make(&t, B, S, R, fill, seed);
	fill_rand(q, n, &rng, 0.6f);
	fill_rand(k, n, &rng, 0.6f);
	fill_rand(v, n, &rng, 1.0f);
	fill_rand(g, n, &rng, 1.0f);
	for (int kind = 0; kind < 4; kind++)
	{
		HwAttnMaskInfo info0 = tinfo(&t, kind, 0);

		attn_dense_reference_forward(o1, l1, q, k, v, &info0, kind, H, dh);
		attn_dense_reference_backward(dq1, dk1, dv1, g, o1, l1, q, k, v, &info0, kind, H, dh);
		for (int which = 0; which < 3; which++)
		{
			HwAttnMaskInfo info = tinfo(&t, kind, which);
			HwAttnPlan    *plan = attn_plan_create(&info, kind, NULL);
			double         e;

			CHECK(plan != NULL);
			/* poison outputs: the kernel must overwrite every element */
			for (int64_t x = 0; x < n; x++)
				o2[x] = dq2[x] = dk2[x] = dv2[x] = NAN;
			attn_block_sparse_forward(o2, l2, q, k, v, plan, H, dh);
			attn_block_sparse_backward(dq2, dk2, dv2, g, o2, l2, q, k, v, plan, H, dh);
			attn_plan_free(plan);
			e = rel_err(o2, o1, n, 2e-5, 1e-4);
			CHECK_MSG(e <= 1.0, "out kind %d perm %d S %d: err %.3g", kind, which, S, e);
			e = rel_err(l2, l1, nl, 2e-5, 1e-4);
			CHECK_MSG(e <= 1.0, "lse kind %d perm %d S %d: err %.3g", kind, which, S, e);
			e = rel_err(dq2, dq1, n, 2e-5, 1e-4);
			CHECK_MSG(e <= 1.0, "dq kind %d perm %d S %d: err %.3g", kind, which, S, e);
			e = rel_err(dk2, dk1, n, 2e-5, 1e-4);
			CHECK_MSG(e <= 1.0, "dk kind %d perm %d S %d: err %.3g", kind, which, S, e);
			e = rel_err(dv2, dv1, n, 2e-5, 1e-4);
			CHECK_MSG(e <= 1.0, "dv kind %d perm %d S %d: err %.3g", kind, which, S, e);
		}
	}
	tbatch_free(&t);
	free(q); free(k); free(v); free(g); free(o1); free(o2); free(l1); free(l2);
	free(dq1); free(dk1); free(dv1); free(dq2); free(dk2); free(dv2);
}

UNIT_TEST(attn_block_sparse_matches_dense)
{
	check_vs_dense(3, 200, 80, 2, 16, 0.8, 11);	/* S not a multiple of the tile */
	if (unit_current_failed) return;
	check_vs_dense(2, 64, 40, 3, 32, 0.5, 12);	/* half padding */
	if (unit_current_failed) return;
	check_vs_dense(2, 37, 20, 1, 8, 1.0, 13);	/* no padding, tiny dh */
	if (unit_current_failed) return;
	check_vs_dense(2, 50, 20, 2, 20, 0.7, 15);	/* dh not a multiple of 16 */
	if (unit_current_failed) return;
	check_vs_dense(1, 300, 150, 2, 32, 0.95, 14);
}

/* Larger logits: the online softmax must rescale correctly across tiles. */
UNIT_TEST(attn_block_sparse_large_logits)
{
	TBatch  t;
	TRng    rng = {5};
	int     B = 2, S = 160, H = 2, dh = 16;
	int64_t n = (int64_t) B * S * H * dh, nl = (int64_t) B * H * S;
	float  *q = malloc(sizeof(float) * n), *k = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
	float  *o1 = malloc(sizeof(float) * n), *o2 = malloc(sizeof(float) * n);
	float  *l1 = malloc(sizeof(float) * nl), *l2 = malloc(sizeof(float) * nl);
	HwAttnMaskInfo info;
	HwAttnPlan    *plan;
	double         e;

	tbatch_make(&t, B, S, 60, 0.9, 21);
	fill_rand(q, n, &rng, 3.0f);
	fill_rand(k, n, &rng, 3.0f);
	fill_rand(v, n, &rng, 1.0f);
	info = tinfo(&t, HW_MASK_FULL, 2);
	plan = attn_plan_create(&info, HW_MASK_FULL, NULL);
	attn_block_sparse_forward(o2, l2, q, k, v, plan, H, dh);
	attn_dense_reference_forward(o1, l1, q, k, v, &info, HW_MASK_FULL, H, dh);
	attn_plan_free(plan);
	/* logits up to ~50: lse relative error stays ~1e-6, output error grows
	 * with the logit scale (exp amplifies fp32 score rounding) */
	e = rel_err(o2, o1, n, 1e-4, 1e-3);
	CHECK_MSG(e <= 1.0, "out err %.3g", e);
	e = rel_err(l2, l1, nl, 1e-4, 1e-5);
	CHECK_MSG(e <= 1.0, "lse err %.3g", e);
	tbatch_free(&t);
	free(q); free(k); free(v); free(o1); free(o2); free(l1); free(l2);
}

/*
 * Finite differences of L = sum(out * G) through the dense reference forward
 * checks the dense reference backward.  The forward rounds out to fp32, so
 * with eps = 1e-2 the central difference carries ~1e-5 absolute noise and an
 * O(eps^2) truncation error of ~1e-4 relative; tolerance 1e-3 abs + 1e-2 rel.
 */
UNIT_TEST(attn_dense_reference_backward_fd)
{
	TBatch  t;
	TRng    rng = {77};
	int     B = 1, S = 12, H = 2, dh = 4;
	int64_t n = (int64_t) B * S * H * dh, nl = (int64_t) B * H * S;
	float   q[96], k[96], v[96], g[96], o[96], l[24], dq[96], dk[96], dv[96];

	tbatch_make(&t, B, S, 8, 0.8, 31);
	fill_rand(q, n, &rng, 1.0f);
	fill_rand(k, n, &rng, 1.0f);
	fill_rand(v, n, &rng, 1.0f);
	fill_rand(g, n, &rng, 1.0f);
	(void) nl;
	for (int kind = 0; kind < 4; kind++)
	{
		HwAttnMaskInfo info = tinfo(&t, kind, 0);
		float         *xs[3] = {q, k, v}, *gs[3] = {dq, dk, dv};

		attn_dense_reference_forward(o, l, q, k, v, &info, kind, H, dh);
		attn_dense_reference_backward(dq, dk, dv, g, o, l, q, k, v, &info, kind, H, dh);
		for (int which = 0; which < 3; which++)
			for (int64_t x = 0; x < n; x++)
			{
				float  save = xs[which][x], eps = 1e-2f;
				double lp = 0, lm = 0, fd;

				xs[which][x] = save + eps;
				attn_dense_reference_forward(o, l, q, k, v, &info, kind, H, dh);
				for (int64_t y = 0; y < n; y++)
					lp += (double) o[y] * g[y];
				xs[which][x] = save - eps;
				attn_dense_reference_forward(o, l, q, k, v, &info, kind, H, dh);
				for (int64_t y = 0; y < n; y++)
					lm += (double) o[y] * g[y];
				xs[which][x] = save;
				fd = (lp - lm) / (2.0 * eps);
				CHECK_CLOSE(gs[which][x], fd, 1e-3, 1e-2);
			}
	}
	tbatch_free(&t);
}

/* Bit-identical results with 1 and 2 OpenMP threads. */
UNIT_TEST(attn_block_sparse_deterministic_threads)
{
#ifdef _OPENMP
	TBatch  t;
	TRng    rng = {8};
	int     B = 3, S = 256, H = 3, dh = 32;
	int64_t n = (int64_t) B * S * H * dh, nl = (int64_t) B * H * S;
	float  *q = malloc(sizeof(float) * n), *k = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
	float  *g = malloc(sizeof(float) * n);
	float  *buf[2][5];
	float  *lse[2];
	int     saved = omp_get_max_threads();

	tbatch_make(&t, B, S, 100, 0.85, 41);
	fill_rand(q, n, &rng, 0.7f);
	fill_rand(k, n, &rng, 0.7f);
	fill_rand(v, n, &rng, 1.0f);
	fill_rand(g, n, &rng, 1.0f);
	for (int run = 0; run < 2; run++)
	{
		for (int a = 0; a < 5; a++)
			buf[run][a] = malloc(sizeof(float) * n);
		lse[run] = malloc(sizeof(float) * nl);
	}
	for (int kind = 0; kind < 4; kind++)
	{
		HwAttnMaskInfo info = tinfo(&t, kind, 1);

		for (int run = 0; run < 2; run++)
		{
			HwAttnPlan *plan;

			omp_set_num_threads(run + 1);
			plan = attn_plan_create(&info, kind, NULL);
			attn_block_sparse_forward(buf[run][0], lse[run], q, k, v, plan, H, dh);
			attn_block_sparse_backward(buf[run][1], buf[run][2], buf[run][3], g,
									   buf[run][0], lse[run], q, k, v, plan, H, dh);
			attn_plan_free(plan);
		}
		omp_set_num_threads(saved);
		for (int a = 0; a < 4; a++)
			CHECK_MSG(memcmp(buf[0][a], buf[1][a], sizeof(float) * n) == 0,
					  "kind %d output %d differs between 1 and 2 threads", kind, a);
		CHECK(memcmp(lse[0], lse[1], sizeof(float) * nl) == 0);
	}
	for (int run = 0; run < 2; run++)
	{
		for (int a = 0; a < 5; a++)
			free(buf[run][a]);
		free(lse[run]);
	}
	tbatch_free(&t);
	free(q); free(k); free(v); free(g);
#endif
}

/* Padding rows see only themselves: out = v and lse = q.k exactly, and no
 * non-padding row reads a padding key (checked against the dense oracle). */
UNIT_TEST(attn_padding_rows_see_only_themselves)
{
	TBatch  t;
	TRng    rng = {9};
	int     B = 2, S = 40, H = 2, dh = 8;
	int64_t n = (int64_t) B * S * H * dh, nl = (int64_t) B * H * S;
	float  *q = malloc(sizeof(float) * n), *k = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
	float  *o = malloc(sizeof(float) * n), *o1 = malloc(sizeof(float) * n);
	float  *l = malloc(sizeof(float) * nl), *l1 = malloc(sizeof(float) * nl);

	tbatch_make(&t, B, S, 20, 0.3, 51);	/* 70% padding in element 0 */
	fill_rand(q, n, &rng, 1.0f);
	fill_rand(k, n, &rng, 1.0f);
	fill_rand(v, n, &rng, 1.0f);
	for (int kind = 0; kind < 4; kind++)
	{
		HwAttnMaskInfo info = tinfo(&t, kind, 2);
		HwAttnPlan    *plan = attn_plan_create(&info, kind, NULL);

		CHECK(plan != NULL);
		attn_block_sparse_forward(o, l, q, k, v, plan, H, dh);
		attn_plan_free(plan);
		for (int b = 0; b < B; b++)
			for (int i = 0; i < S; i++)
			{
				if (!t.is_padding[b * S + i])
					continue;
				for (int h = 0; h < H; h++)
				{
					int64_t off = (((int64_t) b * S + i) * H + h) * dh;
					float   self = 0.0f;

					for (int d = 0; d < dh; d++)
					{
						CHECK(o[off + d] == v[off + d]);
						self += q[off + d] * k[off + d];
					}
					CHECK_CLOSE(l[((int64_t) b * H + h) * S + i], self, 1e-6, 1e-6);
				}
			}
		attn_dense_reference_forward(o1, l1, q, k, v, &info, kind, H, dh);
		CHECK(rel_err(o, o1, n, 2e-5, 1e-4) <= 1.0);
	}
	tbatch_free(&t);
	free(q); free(k); free(v); free(o); free(o1); free(l); free(l1);
}

/* attn_block_sparse_forward_rows: one query cell per sequence (any position,
 * padding included; head sizes with and without padded dims) gives that
 * row of the serving forward of the whole batch, bit for bit, for every
 * mask kind. */
UNIT_TEST(attn_forward_rows_equal_full_rows)
{
	static const int dhs[2] = {32, 12};
	TBatch t;
	TRng   rng = {10};
	int    B = 3, S = 200, H = 2;

	tbatch_make(&t, B, S, 60, 0.85, 43);
	for (int di = 0; di < 2; di++)
	{
		int     dh = dhs[di], D = H * dh;
		int64_t n = (int64_t) B * S * D;
		float  *q = malloc(sizeof(float) * n), *k = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
		float  *out = malloc(sizeof(float) * n), *lse = malloc(sizeof(float) * B * H * S);
		float  *qr = malloc(sizeof(float) * B * D), *orow = malloc(sizeof(float) * B * D);
		int32_t cell[3];

		fill_rand(q, n, &rng, 0.7f);
		fill_rand(k, n, &rng, 0.7f);
		fill_rand(v, n, &rng, 1.0f);
		for (int kind = 0; kind < 4; kind++)
		{
			HwAttnMaskInfo info = tinfo(&t, kind, 1);
			HwAttnPlan    *plan = attn_plan_create(&info, kind, NULL);

			CHECK(plan != NULL);
			attn_block_sparse_forward_seqs(out, lse, q, k, v, plan, 0, B, H, dh);
			for (int pos = 0; pos < S; pos += 37)
			{
				for (int b = 0; b < B; b++)
				{
					cell[b] = b * S + (pos + 11 * b) % S;
					memcpy(qr + (size_t) b * D, q + (size_t) cell[b] * D, sizeof(float) * D);
				}
				attn_block_sparse_forward_rows(orow, qr, k, v, plan, cell, H, dh);
				for (int b = 0; b < B; b++)
					CHECK_MSG(memcmp(orow + (size_t) b * D, out + (size_t) cell[b] * D, sizeof(float) * D) == 0,
							  "kind %d dh %d: cell %d differs from the full forward", kind, dh, cell[b]);
			}
			attn_plan_free(plan);
		}
		free(q); free(k); free(v); free(out); free(lse); free(qr); free(orow);
	}
	tbatch_free(&t);
}

/* attn_block_sparse_forward_seqs (the serving forward: by lists on the
 * sparse masks): the whole batch's within fp32 rounding of the training
 * forward (by tiles); sequences [b0, b0 + nb) alone give their rows of out
 * and lse of the whole batch's, bit for bit, and leave every other
 * sequence's rows as they were, for every mask kind. */
UNIT_TEST(attn_forward_seqs_equal_full_sequences)
{
	TBatch t;
	TRng   rng = {12};
	int    B = 5, S = 120, H = 2, dh = 32, D = H * dh;
	int64_t n = (int64_t) B * S * D, nl = (int64_t) B * H * S;
	float  *q = malloc(sizeof(float) * n), *k = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
	float  *out = malloc(sizeof(float) * n), *lse = malloc(sizeof(float) * nl);
	float  *out2 = malloc(sizeof(float) * n), *lse2 = malloc(sizeof(float) * nl);
	static const int ranges[][2] = {{0, 2}, {2, 1}, {3, 2}};

	tbatch_make(&t, B, S, 40, 0.85, 47);
	fill_rand(q, n, &rng, 0.7f);
	fill_rand(k, n, &rng, 0.7f);
	fill_rand(v, n, &rng, 1.0f);
	for (int kind = 0; kind < 4; kind++)
	{
		HwAttnMaskInfo info = tinfo(&t, kind, 1);
		HwAttnPlan    *plan = attn_plan_create(&info, kind, NULL);

		CHECK(plan != NULL);
		attn_block_sparse_forward(out2, lse2, q, k, v, plan, H, dh);
		attn_block_sparse_forward_seqs(out, lse, q, k, v, plan, 0, B, H, dh);
		CHECK_MSG(rel_err(out, out2, n, 1e-6, 1e-5) <= 1.0 && rel_err(lse, lse2, nl, 1e-6, 1e-5) <= 1.0,
				  "kind %d: the serving forward is off the training forward", kind);
		for (int64_t i = 0; i < n; i++)
			out2[i] = -3.0f;
		for (int64_t i = 0; i < nl; i++)
			lse2[i] = -3.0f;
		for (int r = 0; r < 3; r++)
		{
			int b0 = ranges[r][0], nb = ranges[r][1], b1 = b0 + nb;

			attn_block_sparse_forward_seqs(out2, lse2, q, k, v, plan, b0, nb, H, dh);
			for (int b = 0; b < B; b++)
			{
				size_t ro = (size_t) b * S * D, rl = (size_t) b * H * S;
				bool   done = b < b1;   /* this range's sequences and the ranges' before */
				bool   same = memcmp(out2 + ro, out + ro, sizeof(float) * S * D) == 0 &&
					memcmp(lse2 + rl, lse + rl, sizeof(float) * H * S) == 0;

				CHECK_MSG(done ? same : out2[ro] == -3.0f && lse2[rl] == -3.0f,
						  "kind %d, range [%d, %d): sequence %d %s", kind, b0, b1, b,
						  done ? "differs from the whole batch's" : "was written");
			}
		}
		attn_plan_free(plan);
	}
	free(q); free(k); free(v); free(out); free(lse); free(out2); free(lse2);
	tbatch_free(&t);
}
