/*
 * attention_kernels.c: block-sparse masked attention on the CPU, forward
 * and backward, over a plan of attention_plan.c (contract in attention.h):
 * one OpenMP task per (b, h) (the serving forward by lists: per block of
 * queries, every head), each thread with its own work buffers, and
 * the kernels of attention_tiles.h in the build for this CPU's
 * vector width (AVX-512, AVX2 or the baseline), chosen at run time.
 */
#include "core/attention_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int
work_alloc(AttnWork *w, int S, int dh, bool backward)
{
	int     nt = (S + T - 1) / T;
	size_t  Sp = (size_t) nt * T, dhp = (size_t) ((dh + 15) / 16) * 16;
	size_t  n = Sp * dhp;
	/* the forward's buffers (q, kt, v, o, lse) first: a forward allocates
	 * and clears only those */
	size_t  base = backward ? n * 10 + 2 * Sp + 2 * T * T : n * 4 + Sp;
	/* then the list kernel's scores [Sp + T], keys [Sp] and rows set aside [Sp] */
	size_t  total = base + 3 * Sp + T;
	size_t  marks = total;     /* then the query list's marks: Sp bytes, nt ints, nt bytes */

	total += (Sp + 3) / 4 + (size_t) nt + ((size_t) nt + 3) / 4;
	float  *buf;

	memset(w, 0, sizeof(*w));
	buf = aligned_alloc(64, ((sizeof(float) * total + 63) / 64) * 64);
	if (!buf)
		return -1;
	memset(buf, 0, sizeof(float) * total);
	w->Sp = (int) Sp;
	w->dhp = (int) dhp;
	w->q = buf;
	w->kt = buf + n;
	w->v = buf + 2 * n;
	w->o = buf + 3 * n;
	w->lse = buf + 4 * n;
	w->sc = buf + base;
	w->kidx = (int32_t *) (buf + base + Sp + T);
	w->dense = w->kidx + Sp;
	w->qsel = (uint8_t *) (buf + marks);
	w->tile_n = (int *) (buf + marks + (Sp + 3) / 4);
	w->ktile_need = (uint8_t *) (w->tile_n + nt);
	if (backward)
	{
		w->rowv = w->lse + Sp;
		w->k = w->rowv + Sp;
		w->vt = w->k + n;
		w->dout = w->vt + n;
		w->dq = w->dout + n;
		w->dk = w->dq + n;
		w->dv = w->dk + n;
		w->P = w->dv + n;
		w->dS = w->P + T * T;
	}
	return 0;
}

static HwAttnBuild forced_build = HW_ATTN_BUILD_AUTO;

static bool
cpu_has(HwAttnBuild build)
{
	switch (build)
	{
		case HW_ATTN_BUILD_GENERIC:
			return true;
#if HW_ATTN_X86_BUILDS
		case HW_ATTN_BUILD_AVX2:
			return __builtin_cpu_supports("x86-64-v3");
		case HW_ATTN_BUILD_AVX512:
			return __builtin_cpu_supports("x86-64-v4");
#endif
		default:
			return false;
	}
}

bool
attn_kernels_force(HwAttnBuild build)
{
	if (build != HW_ATTN_BUILD_AUTO && !cpu_has(build))
		return false;
	__atomic_store_n(&forced_build, build, __ATOMIC_RELAXED);
	return true;
}

/* the forced build, else the widest this CPU has: the CPU is checked at
 * every call (a few loads), so there is nothing to initialise */
HwAttnBuild
attn_kernels_in_use(void)
{
	HwAttnBuild forced = __atomic_load_n(&forced_build, __ATOMIC_RELAXED);

	if (forced != HW_ATTN_BUILD_AUTO)
		return forced;
	if (cpu_has(HW_ATTN_BUILD_AVX512))
		return HW_ATTN_BUILD_AVX512;
	if (cpu_has(HW_ATTN_BUILD_AVX2))
		return HW_ATTN_BUILD_AVX2;
	return HW_ATTN_BUILD_GENERIC;
}

const char *
attn_kernels_name(HwAttnBuild build)
{
	static const char *const names[] = {"auto", "generic", "avx2", "avx512"};

	return build >= HW_ATTN_BUILD_AUTO && build <= HW_ATTN_BUILD_AVX512 ? names[build] : "?";
}

/* the forward (by tiles and by lists) and backward of one build */
typedef struct AttnKernels
{
	AttnFwdHeadFn fwd, fwd_list;
	AttnBwdHeadFn bwd;
	AttnFwdRowsFn fwd_rows;
} AttnKernels;

static const AttnKernels *
kernels_in_use(void)
{
	static const AttnKernels generic = {attn_fwd_head_generic, attn_fwd_head_list_generic, attn_bwd_head_generic,
										attn_fwd_rows_list_generic};
#if HW_ATTN_X86_BUILDS
	static const AttnKernels avx2 = {attn_fwd_head_avx2, attn_fwd_head_list_avx2, attn_bwd_head_avx2,
									 attn_fwd_rows_list_avx2};
	static const AttnKernels avx512 = {attn_fwd_head_avx512, attn_fwd_head_list_avx512, attn_bwd_head_avx512,
									   attn_fwd_rows_list_avx512};

	switch (attn_kernels_in_use())
	{
		case HW_ATTN_BUILD_AVX512:
			return &avx512;
		case HW_ATTN_BUILD_AVX2:
			return &avx2;
		default:
			break;
	}
#endif
	return &generic;
}

/* What a driver's per-head function reads: the call's tensors and plan. */
typedef struct HeadCall
{
	const HwAttnPlan *plan;
	int          H, dh;
	float       *out, *lse, *dq, *dk, *dv;
	const float *q, *k, *v, *dout, *o, *lse_in;
	const int32_t *cell, *off;	/* a query list (forward_cells) */
	int          b0, nb;        /* the sequences [b0, b0 + nb); nb 0: all */
	const AttnKernels *kern;	/* the build in use */
	AttnFwdHeadFn fwd;          /* its forward for this call (serving_forward) */
} HeadCall;

/* The serving forward (the ranges, rows and cell lists): by lists on the
 * sparse masks, where a query reads a few keys of each tile it visits, by
 * tiles on the full mask; the choice by the mask's kind alone, so a row's
 * bits never depend on its batch.  Training's forward (and the backward,
 * which recomputes its probabilities) stays on the tiles. */
static AttnFwdHeadFn
serving_forward(const AttnKernels *kern, const HwAttnPlan *plan)
{
	return plan->kind == HW_MASK_FULL ? kern->fwd : kern->fwd_list;
}

/* One (b, h) of a call; w is NULL when the thread's work buffers could not
 * be allocated: the head's outputs are then NaN, which the trainer's NaN
 * check reports (the contract has no error channel). */
typedef void (*HeadFn)(const HeadCall *c, AttnWork *w, int b, int h);

/* fn on every (b, h) of the plan (of the call's sequences): one OpenMP
 * task each, every thread with its own work buffers (backward: with the
 * gradient buffers too). */
static void
for_each_head(const HeadCall *c, bool backward, HeadFn fn)
{
	int B = c->nb > 0 ? c->nb : c->plan->B, H = c->H, b0 = c->b0;

#pragma omp parallel
	{
		AttnWork w;
		int      ok = work_alloc(&w, c->plan->S, c->dh, backward) == 0;

#pragma omp for schedule(dynamic, 1)
		for (int bh = 0; bh < B * H; bh++)
			fn(c, ok ? &w : NULL, b0 + bh / H, bh % H);
		if (ok)
			free(w.q);
	}
}

/* The serving forward by lists with every head of a query at once
 * (fwd_rows): on the sparse masks where dh is a multiple of 16. */
static bool
serving_by_rows(const HeadCall *c)
{
	return c->plan->kind != HW_MASK_FULL && c->dh % T == 0;
}

/*
 * Queries per task of the serving forward by rows.  A chunk of two
 * sequences of 256 rows makes eight tasks, as many as its (b, h) pairs
 * made for the two threads to balance; a sequence's dense rows are redone
 * by tiles within its task, so blocks much smaller would build its key
 * tiles more often.
 */
#define ROWS_PER_TASK 64

/* queries of sequence b in a serving call: the whole sequence, its listed
 * cells (off), or its one row (cell without off) */
static int
call_queries(const HeadCall *c, int b)
{
	if (c->off)
		return (int) (c->off[b + 1] - c->off[b]);
	return c->cell ? 1 : c->plan->S;
}

/* queries [i0, i1) of sequence b, every head (fwd_rows); w NULL (no work
 * buffers): their outputs NaN, as forward_one_head's */
static void
rows_block(const HeadCall *c, AttnWork *w, int b, int i0, int i1)
{
	int            S = c->plan->S, H = c->H, D = H * c->dh;
	int64_t        first = c->cell ? (c->off ? c->off[b] : b) : (int64_t) b * S;   /* its first q/out row */
	const int32_t *only = c->cell ? c->cell + first : NULL;
	float         *lse = c->cell ? NULL : c->lse + (int64_t) b * H * S;

	if (w)
	{
		c->kern->fwd_rows(c->plan, b, H, c->dh, w, c->out + first * D, lse, c->q + first * D,
						  c->k + (int64_t) b * S * D, c->v + (int64_t) b * S * D, only, i0, i1);
		return;
	}
	for (int i = i0; i < i1; i++)
	{
		for (int d = 0; d < D; d++)
			c->out[(first + i) * D + d] = NAN;
		for (int h = 0; lse && h < H; h++)
			lse[(int64_t) h * S + i] = NAN;
	}
}

/* the serving forward by rows on the call's sequences: one OpenMP task per
 * block of ROWS_PER_TASK queries of a sequence (a sequence's blocks in a
 * flat range of its maximal count; the empty ones return at once) */
static void
for_each_row_block(const HeadCall *c)
{
	int B = c->nb > 0 ? c->nb : c->plan->B, b0 = c->b0, per = 0;

	for (int b = b0; b < b0 + B; b++)
	{
		int n = (call_queries(c, b) + ROWS_PER_TASK - 1) / ROWS_PER_TASK;

		per = n > per ? n : per;
	}
#pragma omp parallel
	{
		AttnWork w;
		int      ok = work_alloc(&w, c->plan->S, c->dh, false) == 0;

#pragma omp for schedule(dynamic, 1)
		for (int t = 0; t < B * per; t++)
		{
			int b = b0 + t / per, i0 = (t % per) * ROWS_PER_TASK, n = call_queries(c, b);

			if (i0 < n)
				rows_block(c, ok ? &w : NULL, b, i0, i0 + ROWS_PER_TASK < n ? i0 + ROWS_PER_TASK : n);
		}
		if (ok)
			free(w.q);
	}
}

static void
forward_one_head(const HeadCall *c, AttnWork *w, int b, int h)
{
	int     S = c->plan->S, H = c->H, dh = c->dh;
	int64_t eo = (int64_t) b * S * H * dh, li = ((int64_t) b * H + h) * S;

	if (w)
	{
		c->fwd(c->plan, b, h, H, dh, w, c->out + eo, c->lse + li, c->q + eo, c->k + eo, c->v + eo, NULL, 0);
		return;
	}
	for (int i = 0; i < S; i++)
	{
		c->lse[li + i] = NAN;
		for (int d = 0; d < dh; d++)
			c->out[eo + ((int64_t) i * H + h) * dh + d] = NAN;
	}
}

void
attn_block_sparse_forward(float *out, float *lse,
						  const float *q, const float *k, const float *v,
						  const HwAttnPlan *plan, int H, int dh)
{
	HeadCall c = {.plan = plan, .H = H, .dh = dh, .out = out, .lse = lse, .q = q, .k = k, .v = v,
				  .kern = kernels_in_use()};

	c.fwd = c.kern->fwd;

	for_each_head(&c, false, forward_one_head);
}

void
attn_block_sparse_forward_seqs(float *out, float *lse, const float *q, const float *k, const float *v,
							   const HwAttnPlan *plan, int b0, int nb, int H, int dh)
{
	HeadCall c = {.plan = plan, .H = H, .dh = dh, .out = out, .lse = lse, .q = q, .k = k, .v = v,
				  .b0 = b0, .nb = nb, .kern = kernels_in_use()};

	c.fwd = serving_forward(c.kern, plan);
	if (nb > 0 && serving_by_rows(&c))
		for_each_row_block(&c);
	else if (nb > 0)
		for_each_head(&c, false, forward_one_head);
}

static void
backward_one_head(const HeadCall *c, AttnWork *w, int b, int h)
{
	int     S = c->plan->S, H = c->H, dh = c->dh;
	int64_t eo = (int64_t) b * S * H * dh;

	if (w)
	{
		c->kern->bwd(c->plan, b, h, H, dh, w, c->dq + eo, c->dk + eo, c->dv + eo, c->dout + eo, c->o + eo,
				 c->lse_in + ((int64_t) b * H + h) * S, c->q + eo, c->k + eo, c->v + eo);
		return;
	}
	for (int i = 0; i < S; i++)
		for (int d = 0; d < dh; d++)
		{
			int64_t o = eo + ((int64_t) i * H + h) * dh + d;

			c->dq[o] = c->dk[o] = c->dv[o] = NAN;
		}
}

void
attn_block_sparse_backward(float *dq, float *dk, float *dv,
						   const float *dout, const float *out, const float *lse,
						   const float *q, const float *k, const float *v,
						   const HwAttnPlan *plan, int H, int dh)
{
	HeadCall c = {.plan = plan, .H = H, .dh = dh, .dq = dq, .dk = dk, .dv = dv, .dout = dout, .o = out,
				  .lse_in = lse, .q = q, .k = k, .v = v, .kern = kernels_in_use()};

	for_each_head(&c, true, backward_one_head);
}

/* the listed query cells of sequence b: cell[off[b] .. off[b+1]) (off
 * NULL: cell[b] alone), q and out their rows [., H*dh] in that order */
static void
cells_one_head(const HeadCall *c, AttnWork *w, int b, int h)
{
	int     S = c->plan->S, dh = c->dh, D = c->H * dh;
	int64_t i0 = c->off ? c->off[b] : b, i1 = c->off ? c->off[b + 1] : b + 1;
	int64_t eo = (int64_t) b * S * D;

	if (i1 <= i0)
		return;
	if (w)
	{
		c->fwd(c->plan, b, h, c->H, dh, w, c->out + i0 * D, NULL, c->q + i0 * D, c->k + eo, c->v + eo,
					 c->cell + i0, (int) (i1 - i0));
		return;
	}
	for (int64_t i = i0; i < i1; i++)
		for (int d = 0; d < dh; d++)
			c->out[i * D + h * dh + d] = NAN;
}

void
attn_block_sparse_forward_cells(float *out, const float *q, const float *k, const float *v, const HwAttnPlan *plan,
								const int32_t *off, const int32_t *cell, int b0, int nb, int H, int dh)
{
	HeadCall c = {.plan = plan, .H = H, .dh = dh, .out = out, .q = q, .k = k, .v = v, .cell = cell, .off = off,
				  .b0 = off ? b0 : 0, .nb = off ? nb : 0, .kern = kernels_in_use()};

	c.fwd = serving_forward(c.kern, plan);
	if (serving_by_rows(&c))
		for_each_row_block(&c);
	else
		for_each_head(&c, false, cells_one_head);
}

void
attn_block_sparse_forward_rows(float *out, const float *q, const float *k, const float *v, const HwAttnPlan *plan,
							   const int32_t *cell, int H, int dh)
{
	attn_block_sparse_forward_cells(out, q, k, v, plan, NULL, cell, 0, 0, H, dh);
}
