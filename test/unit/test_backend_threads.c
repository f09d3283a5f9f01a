/*
 * test_backend_threads.c: the CPU backend's work shared between threads.
 * parallel_items (backend.h): every item runs once, each call on a single-thread backend of its own
 * with the parent's settings, two threads at once; with one thread, or
 * fewer items than threads, it runs nothing and says so.  Copies and row
 * gathers / scatters large enough to be split between the threads: every
 * byte where it belongs, at odd sizes and offsets.
 */
#include "unit.h"
#include "core/backend.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define N_ITEMS 40

typedef struct ItemLog
{
	HwBackend *parent;
	int        runs[N_ITEMS];
	HwBackend *on[N_ITEMS];     /* the backend each item ran on */
	int        team[N_ITEMS];   /* the team size a nested region gets */
	float      sum[N_ITEMS];    /* an entry run on the sub-backend: sumsq of a row */
	int        started;         /* items begun (atomic) */
	bool       overlapped;      /* item 0 saw another item begin before it ended */
} ItemLog;

static void
log_item(HwBackend *sub, int i, void *arg)
{
	ItemLog *g = arg;
	float    x[64];
	int      team = 0;

	for (int d = 0; d < 64; d++)
		x[d] = (float) (i + 1);
	__atomic_add_fetch(&g->started, 1, __ATOMIC_SEQ_CST);
	if (i == 0)
	{
		/* wait (2 s at most) for a second item: it can only start on
		 * another thread while this one runs */
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t);
		while (__atomic_load_n(&g->started, __ATOMIC_SEQ_CST) < 2 &&
			   (t.tv_sec - t0.tv_sec) + 1e-9 * (t.tv_nsec - t0.tv_nsec) < 2.0);
		g->overlapped = __atomic_load_n(&g->started, __ATOMIC_SEQ_CST) >= 2;
	}
	g->runs[i]++;
	g->on[i] = sub;
#ifdef _OPENMP
#pragma omp parallel
	{
#pragma omp single
		team = omp_get_num_threads();
	}
#endif
	g->team[i] = team;
	g->sum[i] = (float) sub->ops->sumsq(sub, x, 64);
}

UNIT_TEST(backend_parallel_items_each_once_on_its_own_backend)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	ItemLog    g;
	int        distinct = 0;

	CHECK(be != NULL);
	if (!be)
		return;
	CHECK(be->ops->parallel_items != NULL);
	memset(&g, 0, sizeof(g));
	g.parent = be;
#ifdef _OPENMP
	int team_before = omp_get_max_threads();
#endif
	CHECK(be->ops->parallel_items(be, N_ITEMS, log_item, &g));
#ifdef _OPENMP
	/* the items' one-thread setting stays inside the region */
	CHECK_EQ_INT(omp_get_max_threads(), team_before);
#endif
	for (int i = 0; i < N_ITEMS; i++)
	{
		CHECK_MSG(g.runs[i] == 1, "item %d ran %d times", i, g.runs[i]);
		CHECK_MSG(g.on[i] != NULL && g.on[i] != be && g.on[i]->n_threads == 1,
				  "item %d did not run on a single-thread backend of its own", i);
		CHECK_MSG(g.team[i] == 1, "item %d: a nested region took %d threads", i, g.team[i]);
		CHECK_MSG(g.sum[i] == 64.0f * (float) (i + 1) * (float) (i + 1), "item %d: sumsq %g", i, g.sum[i]);
	}
	/* the items run on two threads at once, on two sub-backends */
	CHECK_MSG(g.overlapped, "no item began while item 0 ran: one thread");
	for (int i = 0; i < N_ITEMS; i++)
		distinct += g.on[i] != g.on[0];
	CHECK_MSG(distinct > 0, "every item ran on one sub-backend");

	/* fewer items than threads: nothing runs (the caller's entries split
	 * their rows between the threads instead) */
	memset(&g, 0, sizeof(g));
	CHECK(!be->ops->parallel_items(be, 1, log_item, &g));
	CHECK_EQ_INT(g.runs[0], 0);

	/* one thread: nothing runs, the caller does the work itself */
	memset(&g, 0, sizeof(g));
	hw_backend_cpu_set_threads(be, 1);
	CHECK(!be->ops->parallel_items(be, N_ITEMS, log_item, &g));
	for (int i = 0; i < N_ITEMS; i++)
		CHECK_EQ_INT(g.runs[i], 0);
	hw_backend_destroy(be);
}

UNIT_TEST(backend_large_copies_and_row_moves_exact)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	size_t     n = ((size_t) 1 << 20) + 13;   /* bytes: over the split threshold, not a multiple of 64 */
	int        M = 3001, C = 37;                /* rows: M * C over the rows' threshold */
	uint8_t   *src = malloc(n + 1), *dst = malloc(n + 1);
	float     *rows = malloc(sizeof(float) * M * C), *out = malloc(sizeof(float) * M * C);
	float     *back = calloc((size_t) M * C, sizeof(float));
	int32_t   *idx = malloc(sizeof(int32_t) * M);

	CHECK(be && src && dst && rows && out && back && idx);
	if (!be || !src || !dst || !rows || !out || !back || !idx)
		return;
	for (size_t i = 0; i <= n; i++)
		src[i] = (uint8_t) (i * 131 + 7);
	memset(dst, 0xAB, n + 1);
	be->ops->memcpy_d2d(be, dst, src + 1, n);   /* an unaligned source */
	CHECK_MSG(memcmp(dst, src + 1, n) == 0, "a large copy differs");
	CHECK_MSG(dst[n] == 0xAB, "a large copy wrote past its end");

	for (int64_t i = 0; i < (int64_t) M * C; i++)
		rows[i] = (float) i;
	for (int m = 0; m < M; m++)
		idx[m] = (int32_t) (((int64_t) m * 1777) % M);   /* a permutation: 1777 and 3001 are coprime */
	be->ops->gather_rows(be, out, rows, idx, M, C);
	for (int m = 0; m < M; m++)
		CHECK_MSG(memcmp(out + (size_t) m * C, rows + (size_t) idx[m] * C, sizeof(float) * C) == 0,
				  "gathered row %d differs", m);
	be->ops->scatter_rows(be, back, out, idx, M, C);
	CHECK_MSG(memcmp(back, rows, sizeof(float) * M * C) == 0, "scattering the gathered rows back differs");
	hw_backend_destroy(be);
	free(src); free(dst); free(rows); free(out); free(back); free(idx);
}
