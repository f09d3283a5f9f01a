/*
 * backend_cpu.c: the CPU backend (backend.h): our fp32 GEMM kernel
 * (backend_cpu_f32pack.c) or OpenBLAS sgemm, and OpenMP.
 *
 * Determinism whatever the thread count: our kernel computes every element
 * of C by one fixed chain of FMAs, whichever thread runs it.  OpenBLAS
 * (processors with neither AVX-512 nor AVX2 and FMA, or the kernel
 * disabled) is set to one thread and every GEMM is cut by
 * backend_cpu_gemm.c into blocks whose size depends only on the shapes (rows of C when C is tall, else columns); each block is one
 * single-threaded sgemm call, so every element of C is computed by the same
 * code with the same summation order however many threads share the blocks.
 * (OpenBLAS's own threading splits K differently per thread count and is not
 * bit-reproducible across counts.)  Reductions over tokens (norm gains,
 * biases, tau, encoder tables) sum fixed 256-row chunks, then the chunks in
 * order; the encoder's grouped sums run over tokens in order with threads
 * owning disjoint feature columns.  No atomics anywhere.
 */
/* lets GCC if-convert the float compares of fast_expf and vectorise; no
 * code here relies on floating-point traps */
#pragma GCC optimize("no-trapping-math")

#include "backend/backend_cpu_internal.h"

#include <cblas.h>
#ifndef OPENBLAS_VERSION
#error "cblas.h is not OpenBLAS's (the reference BLAS is single-threaded and slow): install libopenblas-dev"
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int
cpu_nthreads(HwBackend *be)
{
#ifdef _OPENMP
	return be->n_threads > 0 ? be->n_threads : omp_get_max_threads();
#else
	return 1;
#endif
}

float *
cpu_scratch(HwBackend *be, size_t n)
{
	CpuCtx *c = be->ctx;

	if (c->scratch_n < n)
	{
		free(c->scratch);
		c->scratch = malloc(n * sizeof(float));
		c->scratch_n = c->scratch ? n : 0;
	}
	return c->scratch;
}

void *
cpu_bpack(HwBackend *be, size_t bytes)
{
	CpuCtx *c = be->ctx;

	if (c->bpack_bytes < bytes)
	{
		void *p = NULL;

		free(c->bpack);
		c->bpack = NULL;
		c->bpack_bytes = 0;
		if (posix_memalign(&p, 64, bytes) != 0)
			return NULL;
		c->bpack = p;
		c->bpack_bytes = bytes;
	}
	return c->bpack;
}

/* ---------------------------------------------------------------- memory */

static void *
cpu_alloc(HwBackend *be, size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
		return NULL;
	return p;
}

static void cpu_free(HwBackend *be, void *p) { free(p); }
/* a copy of more than 256 KB in one piece per thread (64-byte aligned
 * pieces): one core's copy bandwidth is well below the socket's */
static void
cpu_memcpy(HwBackend *be, void *d, const void *s, size_t n)
{
	int    nt = cpu_nthreads(be);
	size_t piece = ((n + nt - 1) / nt + 63) / 64 * 64;

	if (n <= ((size_t) 256 << 10) || nt <= 1)
	{
		if (n)
			memcpy(d, s, n);
		return;
	}
#pragma omp parallel for schedule(static) num_threads(nt)
	for (int t = 0; t < nt; t++)
	{
		size_t o = (size_t) t * piece;

		if (o < n)
			memcpy((char *) d + o, (const char *) s + o, n - o < piece ? n - o : piece);
	}
}
static void cpu_memset(HwBackend *be, void *d, int b, size_t n) { if (n) memset(d, b, n); }
static void cpu_sync(HwBackend *be) { }

static void
cpu_destroy(HwBackend *be)
{
	CpuCtx *c = be->ctx;

	if (c)
	{
		free(c->scratch);
		free(c->bpack);
		for (int t = 0; t < c->n_sub; t++)
			cpu_destroy(c->sub[t]);
		free(c->sub);
	}
	free(c);
	free(be);
}

/* ---------------------------------------------------------------- attention */

/* The attention kernels (attention_kernels.c) run their own OpenMP teams; give them the
 * backend's team size for the duration of the call. */
static int
push_threads(HwBackend *be)
{
#ifdef _OPENMP
	int old = omp_get_max_threads();

	if (be->n_threads > 0)
		omp_set_num_threads(be->n_threads);
	return old;
#else
	return 1;
#endif
}

static void
pop_threads(int old)
{
#ifdef _OPENMP
	omp_set_num_threads(old);
#endif
}

static void *
cpu_attn_plan_create(HwBackend *be, const HwAttnMaskInfo *info, HwMaskKind kind, HwError *err)
{
	int   old = push_threads(be);
	void *p = attn_plan_create(info, kind, err);

	pop_threads(old);
	return p;
}

static void cpu_attn_plan_free(HwBackend *be, void *plan) { attn_plan_free(plan); }

static void
cpu_attn_forward(HwBackend *be, float *out, float *lse, const float *q, const float *k,
				 const float *v, const void *plan, int H, int dh)
{
	int old = push_threads(be);

	attn_block_sparse_forward(out, lse, q, k, v, plan, H, dh);
	pop_threads(old);
}

static void
cpu_attn_forward_seqs(HwBackend *be, float *out, float *lse, const float *q, const float *k, const float *v,
					  const void *plan, int b0, int nb, int H, int dh)
{
	int old = push_threads(be);

	attn_block_sparse_forward_seqs(out, lse, q, k, v, plan, b0, nb, H, dh);
	pop_threads(old);
}

static void
cpu_attn_forward_rows(HwBackend *be, float *out, const float *q, const float *k, const float *v, const void *plan,
					  const int32_t *cell, int H, int dh)
{
	int old = push_threads(be);

	attn_block_sparse_forward_rows(out, q, k, v, plan, cell, H, dh);
	pop_threads(old);
}

static void
cpu_attn_forward_cells(HwBackend *be, float *out, const float *q, const float *k, const float *v, const void *plan,
					   const int32_t *off, const int32_t *cell, int b0, int nb, int H, int dh)
{
	int old = push_threads(be);

	attn_block_sparse_forward_cells(out, q, k, v, plan, off, cell, b0, nb, H, dh);
	pop_threads(old);
}

static void
cpu_attn_backward(HwBackend *be, float *dq, float *dk, float *dv, const float *dout,
				  const float *out, const float *lse, const float *q, const float *k,
				  const float *v, const void *plan, int H, int dh)
{
	int old = push_threads(be);

	attn_block_sparse_backward(dq, dk, dv, dout, out, lse, q, k, v, plan, H, dh);
	pop_threads(old);
}

/* ---------------------------------------------------------------- items */

/* the single-thread backends of parallel_items for nt threads (made once,
 * grown with the team), their settings copied from be's at every call */
static bool
cpu_subs(HwBackend *be, int nt)
{
	CpuCtx *c = be->ctx;

	if (c->n_sub < nt)
	{
		HwBackend **sub = realloc(c->sub, sizeof(HwBackend *) * nt);

		if (!sub)
			return false;
		c->sub = sub;
		for (; c->n_sub < nt; c->n_sub++)
			if (!(c->sub[c->n_sub] = hw_backend_cpu_create(1, NULL)))
				return false;
	}
	for (int t = 0; t < nt; t++)
	{
		CpuCtx *sc = c->sub[t]->ctx;

		sc->f32pack_disabled = c->f32pack_disabled;
		sc->bf16_disabled = c->bf16_disabled;
		sc->amx_disabled = c->amx_disabled;
	}
	return true;
}

/* backend.h parallel_items: the items dynamically over the team, thread t
 * calling on sub-backend t; a nested region inside takes one thread (the
 * sub-backends' team size, and omp_set_num_threads(1) for the entries
 * that take the default).  Fewer items than threads would leave threads
 * idle (one sequence served alone: every entry splitting its rows is
 * faster), so they run nothing. */
static bool
cpu_parallel_items(HwBackend *be, int n, void (*fn)(HwBackend *sub, int i, void *arg), void *arg)
{
	int nt = cpu_nthreads(be);

	if (nt <= 1 || n < nt || !cpu_subs(be, nt))
		return false;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
	{
		HwBackend *sub = ((CpuCtx *) be->ctx)->sub[omp_get_thread_num()];

		omp_set_num_threads(1);
#pragma omp for schedule(dynamic, 1)
		for (int i = 0; i < n; i++)
			fn(sub, i, arg);
	}
#endif
	return true;
}

/* ---------------------------------------------------------------- table */

static const HwBackendOps cpu_ops = {
	.name = "cpu",
	.destroy = cpu_destroy,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.memcpy_h2d = cpu_memcpy,
	.memcpy_d2h = cpu_memcpy,
	.memcpy_d2d = cpu_memcpy,
	.memset = cpu_memset,
	.synchronize = cpu_sync,
	.gemm = cpu_gemm,
	.gemm_rows_batched = cpu_gemm_rows_batched,
	.gemm_rows_ragged = cpu_gemm_rows_ragged,
	.add_bias = cpu_add_bias,
	.bias_backward = cpu_bias_backward,
	.axpby = cpu_axpby,
	.sumsq = cpu_sumsq,
	.gather_f16_rows = cpu_gather_f16_rows,
	.gather_rows = cpu_gather_rows,
	.scatter_add_rows = cpu_scatter_add_rows,
	.scatter_rows = cpu_scatter_rows,
	.rmsnorm_forward = cpu_rmsnorm_forward,
	.rmsnorm_backward = cpu_rmsnorm_backward,
	.encoder_forward = cpu_encoder_forward,
	.encoder_backward = cpu_encoder_backward,
	.qknorm_forward = cpu_qknorm_forward,
	.qknorm_backward = cpu_qknorm_backward,
	.attn_plan_create = cpu_attn_plan_create,
	.attn_plan_free = cpu_attn_plan_free,
	.attn_forward = cpu_attn_forward,
	.attn_backward = cpu_attn_backward,
	.gate_residual_forward = cpu_gate_residual_forward,
	.gate_residual_backward = cpu_gate_residual_backward,
	.swiglu_forward = cpu_swiglu_forward,
	.swiglu_backward = cpu_swiglu_backward,
	.loss_forward_backward = cpu_loss_forward_backward,
	.adamw_update = cpu_adamw_update,
	.muon_momentum = cpu_muon_momentum,
	.bf16_usable = cpu_bf16_usable,
	.bf16_preferred = cpu_bf16_preferred,
	.bf16_weight_pack = cpu_bf16_weight_pack,
	.bf16_weight_free = cpu_bf16_weight_free,
	.gemm_bf16 = cpu_gemm_bf16,
	.gemm_bf16_any = cpu_gemm_bf16_any,
	.f32_weight_pack = cpu_f32_weight_pack,
	.f32_weight_free = cpu_f32_weight_free,
	.gemm_f32_packed = cpu_gemm_f32_packed,
	.attn_forward_seqs = cpu_attn_forward_seqs,
	.attn_forward_rows = cpu_attn_forward_rows,
	.attn_forward_cells = cpu_attn_forward_cells,
	.parallel_items = cpu_parallel_items,
};

HwBackend *
hw_backend_cpu_create(int n_threads, HwError *err)
{
	HwBackend *be = calloc(1, sizeof(*be));
	CpuCtx    *c = calloc(1, sizeof(*c));

	if (!be || !c)
	{
		free(be);
		free(c);
		hw_error_set(err, HW_ERR_NOMEM, "out of memory creating the CPU backend");
		return NULL;
	}
	be->ops = &cpu_ops;
	be->ctx = c;
	be->n_threads = n_threads;
	/* our blocking provides the parallelism; see the file comment */
	openblas_set_num_threads(1);
	return be;
}

void
hw_backend_cpu_set_threads(HwBackend *be, int n_threads)
{
	be->n_threads = n_threads;
}

void
hw_backend_cpu_disable_bf16(HwBackend *be, bool disabled)
{
	((CpuCtx *) be->ctx)->bf16_disabled = disabled;
}

void
hw_backend_cpu_disable_amx(HwBackend *be, bool disabled)
{
	((CpuCtx *) be->ctx)->amx_disabled = disabled;
}

void
hw_backend_cpu_disable_f32_pack(HwBackend *be, bool disabled)
{
	((CpuCtx *) be->ctx)->f32pack_disabled = disabled;
}

void
hw_backend_destroy(HwBackend *be)
{
	if (be)
		be->ops->destroy(be);
}
