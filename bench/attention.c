/*
 * bench/attention.c: block-sparse attention forward+backward per mask kind.
 *
 *   bench/bin/attention [small] [base] [reps=N] [cputime] [build=generic|avx2|avx512]
 *
 * presets: small base (default both); reps: best of N (default 5 small, 3
 * base); cputime: time with the process CPU clock instead of the wall clock
 * (use with OMP_NUM_THREADS=1 on a machine shared with other work: it does
 * not count time the process waits for a core); build: run that build of
 * the kernels (default: the widest this CPU has; attention_kernels_*.c).
 *
 * Inputs: a synthetic sampler-like batch (rows of 1-8 cells over 6 tables,
 * each row points to up to 2 earlier rows, 10% padding) with sampler-like
 * permutations (argsort by column; grouped by row in BFS order).  Prints plan
 * time, allowed pairs, visited tile pairs vs (S/tile)^2, ms for forward and for
 * backward (training's, by tiles), and GFLOP/s of useful work (4*dh flops per allowed pair forward:
 * q.k and p*v; 8*dh backward: recomputed q.k, dout.v, dq, dk, dv).  The dense
 * O(S^2) reference is timed once per preset on one batch element, FULL mask.
 * Per mask it also prints a digest (FNV-1a of the bytes) of the forward's
 * output and lse, the backward's dq, dk, dv and the one-query-per-sequence
 * forward (the serving forward's bits), and a second digest of the serving
 * forward on whole sequences (output and lse): the inputs are fixed, so two
 * builds that print the same digests compute the same bits on this machine (a kernel change that claims to keep
 * the arithmetic can be checked that way).
 */
#include "core/attention.h"
#include "core/attention_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int use_cputime;

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(use_cputime ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rs = 88172645463325252ull;
static uint64_t rnext(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static int rint_(int n) { return (int) (rnext() % (uint64_t) n); }

/* FNV-1a over n floats' bytes, folded into h */
static uint64_t
digest(uint64_t h, const float *x, int64_t n)
{
	const unsigned char *p = (const unsigned char *) x;

	for (int64_t i = 0; i < n * (int64_t) sizeof(float); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static const int32_t *sort_key;
static int
cmp_key(const void *a, const void *b)
{
	int x = *(const uint16_t *) a, y = *(const uint16_t *) b;
	if (sort_key[x] != sort_key[y])
		return sort_key[x] < sort_key[y] ? -1 : 1;
	return x - y;
}

typedef struct Batch
{
	int B, S, R;
	int32_t *col; uint16_t *row; uint8_t *pad, *adj; uint16_t *perm[3];
} Batch;

static void
make_batch(Batch *t, int B, int S, int R)
{
	int32_t *key = malloc(sizeof(int32_t) * S);

	t->B = B; t->S = S; t->R = R;
	t->col = calloc((size_t) B * S, 4);
	t->row = calloc((size_t) B * S, 2);
	t->pad = calloc((size_t) B * S, 1);
	t->adj = calloc((size_t) B * R * R, 1);
	for (int m = 0; m < 3; m++)
		t->perm[m] = calloc((size_t) B * S, 2);
	for (int b = 0; b < B; b++)
	{
		int64_t base = (int64_t) b * S;
		int     used = S - S / 10, pos = 0, r = 0;

		while (pos < used && r < R)
		{
			int table = rint_(6), nc = 1 + rint_(8);
			for (int c = 0; c < nc && pos < used; c++, pos++)
			{
				t->col[base + pos] = table * 16 + c;
				t->row[base + pos] = (uint16_t) r;
			}
			if (r > 0)
				for (int f = rint_(3); f > 0; f--)
					t->adj[((int64_t) b * R + r) * R + rint_(r)] = 1;
			r++;
		}
		for (int i = pos; i < S; i++)
			t->pad[base + i] = 1;
		for (int m = 0; m < 3; m++)
		{
			for (int i = 0; i < S; i++)
			{
				key[i] = t->pad[base + i] ? INT32_MAX : m == 0 ? t->col[base + i] : t->row[base + i];
				t->perm[m][base + i] = (uint16_t) i;
			}
			sort_key = key;
			qsort(t->perm[m] + base, S, 2, cmp_key);
		}
	}
	free(key);
}

static void
run_preset(const char *name, int B, int S, int H, int dh, int R, int reps)
{
	Batch   t;
	int64_t n = (int64_t) B * S * H * dh;
	float  *q = malloc(4 * n), *k = malloc(4 * n), *v = malloc(4 * n), *g = malloc(4 * n);
	float  *o = malloc(4 * n), *dq = malloc(4 * n), *dk = malloc(4 * n), *dv = malloc(4 * n);
	float  *lse = malloc(4 * (size_t) B * H * S), *os = malloc(4 * n), *ls = malloc(4 * (size_t) B * H * S);
	int     nt = (S + HW_ATTN_TILE - 1) / HW_ATTN_TILE;
	static const char *kn[4] = {"column", "outbound", "inbound", "full"};

	make_batch(&t, B, S, R);
	/* touch outputs once: first-touch page faults are not attention's cost */
	memset(o, 0, 4 * n); memset(dq, 0, 4 * n); memset(dk, 0, 4 * n); memset(dv, 0, 4 * n);
	memset(lse, 0, 4 * (size_t) B * H * S);
	memset(os, 0, 4 * n); memset(ls, 0, 4 * (size_t) B * H * S);
	for (int64_t i = 0; i < n; i++)
	{
		q[i] = (float) ((int) (rnext() % 2001) - 1000) * 1e-3f;
		k[i] = (float) ((int) (rnext() % 2001) - 1000) * 1e-3f;
		v[i] = (float) ((int) (rnext() % 2001) - 1000) * 1e-3f;
		g[i] = (float) ((int) (rnext() % 2001) - 1000) * 1e-3f;
	}
	printf("\npreset %s: B=%d S=%d H=%d dh=%d R=%d, tile %d, %d threads, best of %d, %s clock, %s kernels\n",
		   name, B, S, H, dh, R, HW_ATTN_TILE, omp_get_max_threads(), reps,
		   use_cputime ? "process CPU" : "wall", attn_kernels_name(attn_kernels_in_use()));
	printf("%-9s %8s %12s %6s %8s %8s %8s %8s %8s %8s %8s\n", "mask", "plan_ms", "allowed",
		   "dens%", "tiles", "tiles%", "fwd_ms", "bwd_ms", "fwdGF/s", "bwdGF/s", "serve_ms");
	for (int kind = 0; kind < 4; kind++)
	{
		HwAttnMaskInfo info = {B, S, R, t.col, t.row, t.pad, t.adj, kind < 3 ? t.perm[kind] : NULL};
		double         t0 = now_s(), tp, tf = 1e30, tb = 1e30, ts = 1e30;
		HwAttnPlan    *plan = attn_plan_create(&info, kind, NULL);
		int64_t        ap, vt;

		tp = now_s() - t0;
		ap = attn_plan_allowed_pairs(plan);
		vt = attn_plan_visited_tile_pairs(plan);
		for (int r = 0; r < reps; r++)
		{
			t0 = now_s();
			attn_block_sparse_forward(o, lse, q, k, v, plan, H, dh);
			double t1 = now_s();
			attn_block_sparse_backward(dq, dk, dv, g, o, lse, q, k, v, plan, H, dh);
			double t2 = now_s();
			attn_block_sparse_forward_seqs(os, ls, q, k, v, plan, 0, B, H, dh);
			double t3 = now_s();
			if (t1 - t0 < tf) tf = t1 - t0;
			if (t2 - t1 < tb) tb = t2 - t1;
			if (t3 - t2 < ts) ts = t3 - t2;
		}
		printf("%-9s %8.2f %12lld %6.2f %8lld %8.2f %8.2f %8.2f %8.1f %8.1f %8.2f\n", kn[kind], tp * 1e3,
			   (long long) ap, 100.0 * ap / ((double) B * S * S), (long long) vt,
			   100.0 * vt / ((double) B * nt * nt), tf * 1e3, tb * 1e3,
			   4.0 * dh * ap * H / tf * 1e-9, 8.0 * dh * ap * H / tb * 1e-9, ts * 1e3);
		{
			/* one query per sequence, at a position that moves with b */
			int32_t *cell = malloc(sizeof(int32_t) * B);
			float   *qr = malloc(sizeof(float) * B * H * dh), *orow = malloc(sizeof(float) * B * H * dh);
			uint64_t h = 14695981039346656037ull;

			for (int b = 0; b < B; b++)
			{
				cell[b] = b * S + (b * 37) % (S - S / 10);
				memcpy(qr + (int64_t) b * H * dh, q + (int64_t) cell[b] * H * dh, sizeof(float) * H * dh);
			}
			attn_block_sparse_forward_rows(orow, qr, k, v, plan, cell, H, dh);
			h = digest(h, o, n);
			h = digest(h, lse, (int64_t) B * H * S);
			h = digest(h, dq, n);
			h = digest(h, dk, n);
			h = digest(h, dv, n);
			h = digest(h, orow, (int64_t) B * H * dh);
			printf("%-9s digest %016llx\n", kn[kind], (unsigned long long) h);
			h = digest(14695981039346656037ull, os, n);
			h = digest(h, ls, (int64_t) B * H * S);
			printf("%-9s serve digest %016llx\n", kn[kind], (unsigned long long) h);
			free(cell); free(qr); free(orow);
		}
		attn_plan_free(plan);
	}
	/* dense reference on one batch element, FULL mask, for scale */
	{
		HwAttnMaskInfo info1 = {1, S, R, t.col, t.row, t.pad, t.adj, NULL};
		double         t0 = now_s();
		attn_dense_reference_forward(o, lse, q, k, v, &info1, HW_MASK_FULL, H, dh);
		double t1 = now_s();
		attn_dense_reference_backward(dq, dk, dv, g, o, lse, q, k, v, &info1, HW_MASK_FULL, H, dh);
		double t2 = now_s();
		printf("dense reference (double, 1 thread), 1 of %d elements, FULL: fwd %.1f ms, bwd %.1f ms"
			   " (x%d = %.0f ms fwd+bwd for the batch)\n", B, (t1 - t0) * 1e3, (t2 - t1) * 1e3, B,
			   (t2 - t0) * 1e3 * B);
	}
	free(q); free(k); free(v); free(g); free(o); free(dq); free(dk); free(dv); free(lse); free(os); free(ls);
	free(t.col); free(t.row); free(t.pad); free(t.adj);
	for (int m = 0; m < 3; m++)
		free(t.perm[m]);
}

int
main(int argc, char **argv)
{
	bool small = false, base = false;
	int  reps = 0;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "small") == 0) small = true;
		else if (strcmp(argv[i], "base") == 0) base = true;
		else if (strncmp(argv[i], "reps=", 5) == 0) reps = atoi(argv[i] + 5);
		else if (strcmp(argv[i], "cputime") == 0) use_cputime = 1;
		else if (strncmp(argv[i], "build=", 6) == 0)
		{
			HwAttnBuild b = HW_ATTN_BUILD_AUTO;

			for (HwAttnBuild x = HW_ATTN_BUILD_GENERIC; x <= HW_ATTN_BUILD_AVX512; x++)
				if (strcmp(argv[i] + 6, attn_kernels_name(x)) == 0)
					b = x;
			if (b == HW_ATTN_BUILD_AUTO || !attn_kernels_force(b))
			{
				fprintf(stderr, "%s: build '%s' is not one this CPU runs (generic, avx2, avx512)\n", argv[0],
						argv[i] + 6);
				return 2;
			}
		}
		else
		{
			fprintf(stderr, "usage: %s [small] [base] [reps=N] [cputime] [build=generic|avx2|avx512]\n", argv[0]);
			return 2;
		}
	}
	if (!small && !base)
		small = base = true;
	if (small)
		run_preset("small", 32, 256, 4, 32, 200, reps > 0 ? reps : 5);
	if (base)
		run_preset("base", 32, 1024, 8, 32, 200, reps > 0 ? reps : 3);
	return 0;
}
