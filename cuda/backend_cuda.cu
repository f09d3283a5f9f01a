/*
 * backend_cuda.cu: the CUDA backend: fills the table of src/core/backend.h.
 *
 * One backend = one GPU, one compute stream, one cuBLAS handle, a caching
 * device allocator with cudaMemGetInfo checks (memory.cu), pinned staging
 * and a copy stream for host->device copies (memory.cu), and device scratch
 * for the deterministic reductions.  All compute is ordered on the one
 * stream; entries are asynchronous; memcpy_d2h, sumsq and synchronize wait.
 *
 * Errors: backend.h's entries return void, so the first CUDA / cuBLAS error
 * is kept in the context (sticky); later entries do nothing, d2h copies fill
 * their destination with NaN bytes and sumsq returns NaN, so the model stops
 * with HW_ERR_NUMERIC; hw_backend_cuda_last_error gives the real message.
 * alloc returns NULL with the memory message kept the same way.
 *
 * Threads: an entry may be called from any host thread (the multi-GPU worker
 * runs one thread per GPU); each entry makes its device current first.
 * The library never calls exit/abort and never touches PostgreSQL.
 */
#include "hw_cuda.h"
#include "hw_cuda_api.h"
#include "attention_check.h"
#include "hw_cuda_limits.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct CudaCtx
{
	int            device;
	cudaStream_t   stream;
	HwCudaMem      mem;
	HwCudaBlas     blas;
	HwCudaStaging  staging;
	HwError        err;           /* first error (sticky) */
	int            failed;
	double        *d_result;      /* [1] device result of sumsq */
	double        *h_result;      /* [1] pinned */
	/* grow-only device scratch */
	float         *fscr;   size_t fscr_n;     /* reduction partials */
	float         *fscr2;  size_t fscr2_n;    /* second float scratch (qknorm tmp) */
	double        *dscr;   size_t dscr_n;     /* sumsq partials */
	int32_t       *iscr;   size_t iscr_n;     /* host index arrays uploaded */
	void          *escr;   size_t escr_n;     /* encoder backward scratch (bytes) */
	char           name[160];
} CudaCtx;

typedef struct CudaPlan
{
	HwCudaAttnPlan plan;
	void          *tensors;       /* device copies of the mask tensors */
	int            B, S, H_unused;
} CudaPlan;

#define CTX(be) ((CudaCtx *) (be)->ctx)

static void
keep(CudaCtx *c, int rc, const HwError *e)
{
	if (rc != HW_OK && !c->failed)
	{
		c->err = *e;
		c->err.code = rc;
		c->failed = 1;
	}
}

static void
check(CudaCtx *c, cudaError_t e, const char *what)
{
	if (e != cudaSuccess && !c->failed)
	{
		HwError er;
		hw_cuda_err(&er, e, what, __FILE__, 0);
		keep(c, er.code, &er);
	}
}

/* Entry prologue: nothing after the first error; the device made current. */
static bool
enter(CudaCtx *c)
{
	if (c->failed)
		return false;
	cudaError_t e = cudaSetDevice(c->device);
	if (e != cudaSuccess)
	{
		check(c, e, "cudaSetDevice");
		return false;
	}
	return true;
}

template <typename T>
static T *
grow(CudaCtx *c, T **buf, size_t *cap, size_t n, const char *what)
{
	if (*cap >= n && *buf)
		return *buf;
	if (*buf)
		hw_cuda_mem_free(&c->mem, *buf);
	*buf = NULL;
	*cap = 0;
	void *p = NULL;
	HwError er;
	int rc = hw_cuda_mem_alloc(&c->mem, (n ? n : 1) * sizeof(T), what, &p, &er);
	if (rc != HW_OK)
	{
		keep(c, rc, &er);
		return NULL;
	}
	*buf = (T *) p;
	*cap = n;
	return *buf;
}

/* ---------------------------------------------------------------- memory */

static void *
cu_alloc(HwBackend *be, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return NULL;
	void *p = NULL;
	HwError er;
	int rc = hw_cuda_mem_alloc(&c->mem, bytes, "model tensors", &p, &er);
	if (rc != HW_OK)
	{
		keep(c, rc, &er);
		return NULL;
	}
	return p;
}

static void
cu_free(HwBackend *be, void *p)
{
	CudaCtx *c = CTX(be);
	if (p)
		hw_cuda_mem_free(&c->mem, p);      /* cached; stream order makes reuse safe */
}

static void
cu_memcpy_h2d(HwBackend *be, void *dst, const void *src, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (!enter(c) || bytes == 0)
		return;
	HwError er;
	keep(c, hw_cuda_upload(&c->staging, c->stream, dst, src, bytes, &er), &er);
}

static void
cu_memcpy_d2h(HwBackend *be, void *dst, const void *src, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (bytes == 0)
		return;
	if (enter(c))
	{
		check(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), "memcpy_d2h");
		check(c, cudaStreamSynchronize(c->stream), "memcpy_d2h (synchronize)");
	}
	if (c->failed)
		memset(dst, 0xff, bytes);           /* NaN floats: the model stops with a numeric error */
}

static void
cu_memcpy_d2d(HwBackend *be, void *dst, const void *src, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (!enter(c) || bytes == 0)
		return;
	check(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream), "memcpy_d2d");
}

static void
cu_memset(HwBackend *be, void *dst, int byte, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (!enter(c) || bytes == 0)
		return;
	check(c, cudaMemsetAsync(dst, byte, bytes, c->stream), "memset");
}

static void
cu_synchronize(HwBackend *be)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return;
	check(c, cudaStreamSynchronize(c->stream), "synchronize");
}

/* ---------------------------------------------------------------- GEMM and utilities */

static void
cu_gemm(HwBackend *be, bool tA, bool tB, int M, int N, int K, float alpha, const float *A, int lda,
		const float *B, int ldb, float beta, float *C, int ldc)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return;
	HwError er;
	keep(c, hw_cuda_gemm(&c->blas, &c->mem, c->stream, tA, tB, M, N, K, alpha, A, lda, B, ldb,
						 beta, C, ldc, &er), &er);
}

static void
cu_add_bias(HwBackend *be, float *out, const float *bias, int M, int N)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_add_bias(c->stream, out, bias, M, N), "add_bias");
}

static void
cu_bias_backward(HwBackend *be, float *db, const float *dout, int M, int N)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return;
	float *part = grow(c, &c->fscr, &c->fscr_n, (size_t) hw_cuda_nch(M) * N, "reduction scratch");
	if (part)
		check(c, hw_k_colsum(c->stream, db, part, dout, M, N, N), "bias_backward");
}

static void
cu_axpby(HwBackend *be, float *y, float a, const float *x, float b, size_t n)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_axpby(c->stream, y, a, x, b, n), "axpby");
}

static double
cu_sumsq(HwBackend *be, const float *x, size_t n)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return NAN;
	double *part = grow(c, &c->dscr, &c->dscr_n, (n + 4095) / 4096, "sumsq scratch");
	if (!part)
		return NAN;
	check(c, hw_k_sumsq(c->stream, c->d_result, part, x, n), "sumsq");
	check(c, cudaMemcpyAsync(c->h_result, c->d_result, sizeof(double), cudaMemcpyDeviceToHost, c->stream),
		  "sumsq (copy)");
	check(c, cudaStreamSynchronize(c->stream), "sumsq (synchronize)");
	return c->failed ? NAN : *c->h_result;
}

static void
cu_gather_f16_rows(HwBackend *be, float *out, const uint16_t *table, const int32_t *idx_host, int M, int C)
{
	CudaCtx *c = CTX(be);
	if (!enter(c) || M <= 0)
		return;
	/* the index array is host memory: stage it (stream-ordered, so reusing
	 * the scratch for the next call is safe) */
	int32_t *idx = grow(c, &c->iscr, &c->iscr_n, (size_t) M, "gather index scratch");
	if (!idx)
		return;
	HwError er;
	int rc = hw_cuda_upload(&c->staging, c->stream, idx, idx_host, (size_t) M * sizeof(int32_t), &er);
	keep(c, rc, &er);
	if (rc == HW_OK)
		check(c, hw_k_gather_f16_rows(c->stream, out, table, idx, M, C), "gather_f16_rows");
}

static void
cu_gather_rows(HwBackend *be, float *out, const float *in, const int32_t *idx, int M, int C)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_gather_rows(c->stream, out, in, idx, M, C), "gather_rows");
}

static void
cu_scatter_add_rows(HwBackend *be, float *din, const float *dout, const int32_t *idx, int M, int C)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_scatter_add_rows(c->stream, din, dout, idx, M, C), "scatter_add_rows");
}

/* ---------------------------------------------------------------- norms */

static void
cu_rmsnorm_forward(HwBackend *be, float *out, float *rstd, const float *x, const float *g, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_rmsnorm_forward(c->stream, out, rstd, x, g, N, D), "rmsnorm_forward");
}

static void
cu_rmsnorm_backward(HwBackend *be, float *dx, float *dg, const float *dout, const float *x,
					const float *rstd, const float *g, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return;
	float *part = grow(c, &c->fscr, &c->fscr_n, (size_t) hw_cuda_nch(N) * D, "reduction scratch");
	if (part)
		check(c, hw_k_rmsnorm_backward(c->stream, dx, dg, part, dout, x, rstd, g, N, D), "rmsnorm_backward");
}

static void
cu_qknorm_forward(HwBackend *be, float *qs, float *kn, float *v, float *qnorm, float *knorm,
				  const float *qkvg, const float *tau, int N, int H, int dh)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_qknorm_forward(c->stream, qs, kn, v, qnorm, knorm, qkvg, tau, N, H, dh), "qknorm_forward");
}

static void
cu_qknorm_backward(HwBackend *be, float *dqkvg, float *dtau, const float *dqs, const float *dkn,
				   const float *dv, const float *qkvg, const float *qnorm, const float *knorm,
				   const float *tau, int N, int H, int dh)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return;
	float *tmp = grow(c, &c->fscr2, &c->fscr2_n, (size_t) N * H, "qknorm scratch");
	float *part = grow(c, &c->fscr, &c->fscr_n, (size_t) hw_cuda_nch(N) * H, "reduction scratch");
	if (tmp && part)
		check(c, hw_k_qknorm_backward(c->stream, dqkvg, dtau, tmp, part, dqs, dkn, dv, qkvg, qnorm, knorm,
									  tau, N, H, dh), "qknorm_backward");
}

/* ---------------------------------------------------------------- encoder */

static void
cu_encoder_forward(HwBackend *be, float *e, const HwEncInputs *in, const HwEncWeights *w, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_encoder_forward(c->stream, e, in, w, N, D), "encoder_forward");
}

static void
cu_encoder_backward(HwBackend *be, const HwEncGrads *g, const float *de, const HwEncInputs *in,
					int N, int D, int ncols, int Uc, int U)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return;
	int maxkeys = ncols > Uc ? ncols : Uc;
	if (U > maxkeys)
		maxkeys = U;
	size_t need = hw_cuda_encoder_scratch_bytes(N, D, maxkeys);
	char *scr = grow(c, (char **) &c->escr, &c->escr_n, need, "encoder backward scratch");
	if (scr)
		check(c, hw_k_encoder_backward(c->stream, scr, c->escr_n, g, de, in, N, D, ncols, Uc, U),
			  "encoder_backward");
}

/* ---------------------------------------------------------------- attention */

static void *
cu_attn_plan_create(HwBackend *be, const HwAttnMaskInfo *info, HwMaskKind kind, HwError *err)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
	{
		if (err) *err = c->err;
		return NULL;
	}
	/* Validated on the host before anything is uploaded, with the CPU plan's
	 * check and message (attention_check.h): the kernels index q/k/v/out rows
	 * through perm, so a value >= S would read and write out of bounds and a
	 * duplicate would leave rows unwritten. */
	char why[256];
	int  vrc = hw_attn_mask_info_check(info, kind, why, sizeof(why));
	if (vrc != HW_OK)
	{
		hw_error_set(err, vrc, "%s", why);
		return NULL;
	}
	CudaPlan *p = (CudaPlan *) calloc(1, sizeof(CudaPlan));
	if (!p)
	{
		hw_error_set(err, HW_ERR_NOMEM, "out of host memory for an attention plan");
		return NULL;
	}
	if (info->B == 0)            /* an empty batch: nothing to plan or compute (as on the CPU) */
		return p;
	size_t BS = (size_t) info->B * info->S, RR = (size_t) info->B * info->R * info->R;
	size_t o_col = 0, o_row = o_col + ((BS * 4 + 255) & ~255UL), o_pad = o_row + ((BS * 2 + 255) & ~255UL);
	size_t o_perm = o_pad + ((BS + 255) & ~255UL), o_fk = o_perm + ((BS * 2 + 255) & ~255UL);
	size_t bytes = o_fk + (RR ? RR : 1);
	int rc = hw_cuda_mem_alloc(&c->mem, bytes, "attention mask tensors", &p->tensors, err);
	if (rc != HW_OK)
	{
		free(p);
		return NULL;
	}
	char *base = (char *) p->tensors;
	HwCudaMaskInfo di;
	di.B = info->B;
	di.S = info->S;
	di.R = info->R;
	di.column_ids = (const int32_t *) (base + o_col);
	di.seq_row_ids = (const uint16_t *) (base + o_row);
	di.is_padding = (const uint8_t *) (base + o_pad);
	di.perm = info->perm ? (const uint16_t *) (base + o_perm) : NULL;
	di.fk_adj = (const uint8_t *) (base + o_fk);
	rc = hw_cuda_upload(&c->staging, c->stream, base + o_col, info->column_ids, BS * 4, err);
	if (rc == HW_OK)
		rc = hw_cuda_upload(&c->staging, c->stream, base + o_row, info->seq_row_ids, BS * 2, err);
	if (rc == HW_OK)
		rc = hw_cuda_upload(&c->staging, c->stream, base + o_pad, info->is_padding, BS, err);
	if (rc == HW_OK && info->perm)
		rc = hw_cuda_upload(&c->staging, c->stream, base + o_perm, info->perm, BS * 2, err);
	if (rc == HW_OK && RR)
		rc = hw_cuda_upload(&c->staging, c->stream, base + o_fk, info->fk_adj, RR, err);
	if (rc == HW_OK)
		rc = hw_cuda_attn_plan_build(&p->plan, &c->mem, &di, (int) kind, c->stream, err);
	if (rc != HW_OK)
	{
		hw_cuda_mem_free(&c->mem, p->tensors);
		free(p);
		return NULL;
	}
	p->B = info->B;
	p->S = info->S;
	return p;
}

static void
cu_attn_plan_free(HwBackend *be, void *plan)
{
	CudaCtx *c = CTX(be);
	CudaPlan *p = (CudaPlan *) plan;
	if (!p)
		return;
	hw_cuda_attn_plan_free(&p->plan, &c->mem);
	hw_cuda_mem_free(&c->mem, p->tensors);
	free(p);
}

static void
cu_attn_forward(HwBackend *be, float *out, float *lse, const float *q, const float *k, const float *v,
				const void *plan, int H, int dh)
{
	CudaCtx *c = CTX(be);
	if (!enter(c) || ((const CudaPlan *) plan)->B == 0)
		return;
	HwError er;
	keep(c, hw_cuda_attn_forward(out, lse, q, k, v, HW_CUDA_F32, &((const CudaPlan *) plan)->plan, H, dh,
								 c->stream, &er), &er);
}

static void
cu_attn_backward(HwBackend *be, float *dq, float *dk, float *dv, const float *dout, const float *out,
				 const float *lse, const float *q, const float *k, const float *v, const void *plan, int H, int dh)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return;
	const CudaPlan *p = (const CudaPlan *) plan;
	if (p->B == 0)
		return;
	float *delta = grow(c, &c->fscr2, &c->fscr2_n, (size_t) p->B * H * p->S, "attention backward scratch");
	if (!delta)
		return;
	HwError er;
	keep(c, hw_cuda_attn_backward(dq, dk, dv, delta, dout, out, lse, q, k, v, HW_CUDA_F32, &p->plan, H, dh,
								  c->stream, &er), &er);
}

/* ---------------------------------------------------------------- gate, SwiGLU, loss, optimiser */

static void
cu_gate_residual_forward(HwBackend *be, float *xout, const float *xin, const float *gpre, int ld_g,
						 const float *o, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_gate_residual_forward(c->stream, xout, xin, gpre, ld_g, o, N, D), "gate_residual_forward");
}

static void
cu_gate_residual_backward(HwBackend *be, float *dgpre, int ld_g, float *dO, const float *dxout,
						  const float *gpre, const float *o, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_gate_residual_backward(c->stream, dgpre, ld_g, dO, dxout, gpre, o, N, D),
			  "gate_residual_backward");
}

static void
cu_swiglu_forward(HwBackend *be, float *h, const float *gu, int N, int F)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_swiglu_forward(c->stream, h, gu, N, F), "swiglu_forward");
}

static void
cu_swiglu_backward(HwBackend *be, float *dgu, const float *dh, const float *gu, int N, int F)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_swiglu_backward(c->stream, dgu, dh, gu, N, F), "swiglu_backward");
}

static void
cu_loss_forward_backward(HwBackend *be, float *loss, float *dZ, float *dlogits, const float *Z,
						 const float *logits, const HwLossTargets *t, int stype, int B, int D, int K, float scale)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_loss_forward_backward(c->stream, loss, dZ, dlogits, Z, logits, t, stype, B, D, K, scale),
			  "loss_forward_backward");
}

static void
cu_adamw_update(HwBackend *be, float *p, float *m, float *v, const float *grad, size_t n, float gscale,
				float lr, float b1, float b2, float eps, float wd, int t)
{
	CudaCtx *c = CTX(be);
	if (!enter(c))
		return;
	float bc1 = 1.0f - powf(b1, (float) t), bc2 = 1.0f - powf(b2, (float) t);   /* as the CPU backend */
	check(c, hw_k_adamw_update(c->stream, p, m, v, grad, n, gscale, lr, b1, b2, eps, wd, bc1, bc2), "adamw_update");
}

static void
cu_muon_momentum(HwBackend *be, float *u, float *buf, const float *grad, size_t n, float gscale, float mu)
{
	CudaCtx *c = CTX(be);
	if (enter(c))
		check(c, hw_k_muon_momentum(c->stream, u, buf, grad, n, gscale, mu), "muon_momentum");
}

/* ---------------------------------------------------------------- shapes */

/* backend.h check_shapes: called by hw_model_create before it allocates, so
 * a model the kernels cannot run fails up front with what to change
 * (hw_cuda_limits.h), not as "loss is NaN" at its first step. */
static int
cu_check_shapes(HwBackend *be, int B, int S, int D, int H, int F, HwError *err)
{
	char why[400];
	if (hw_cuda_shapes_problem(B, S, D, H, F, why, sizeof(why)))
		return hw_error_set(err, HW_ERR_INVALID, "%s", why);
	return HW_OK;
}

/* ---------------------------------------------------------------- lifetime */

static void
ctx_release(CudaCtx *c)
{
	if (!c)
		return;
	cudaSetDevice(c->device);
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	hw_cuda_staging_destroy(&c->staging);
	hw_cuda_blas_destroy(&c->blas, &c->mem);
	if (c->h_result)
		cudaFreeHost(c->h_result);
	hw_cuda_mem_release_all(&c->mem);      /* every device allocation, the model's included */
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}

static void
cu_destroy(HwBackend *be)
{
	if (!be)
		return;
	try
	{
		ctx_release(CTX(be));
	}
	catch (...)
	{
		/* nothing to report to: the backend is going away (see hw_cuda.h) */
	}
	free(be);
}

/* ---------------------------------------------------------------- the table, guarded
 * The model calls these through function pointers from C: no C++ exception
 * may leave them (hw_cuda.h).  Guard<entry>::call runs the entry in a
 * try/catch; an exception becomes the backend's kept error (so the model
 * reports it through last_error, like a CUDA error), an HwError* argument is
 * filled too, and the entry returns NULL, NaN (sumsq), HW_ERR_INTERNAL
 * (check_shapes) or nothing. */

template <typename R> struct GuardFail { static R value() { return R(); } };
template <> struct GuardFail<int> { static int value() { return HW_ERR_INTERNAL; } };      /* check_shapes */
template <> struct GuardFail<double> { static double value() { return NAN; } };
template <> struct GuardFail<void> { static void value() {} };

template <typename T> static inline void guard_fill(T, const HwError &) {}
static inline void guard_fill(HwError *e, const HwError &src) { if (e) *e = src; }

template <typename... A>
static void
guard_caught(HwBackend *be, const char *entry, const char *what, A... a) noexcept
{
	HwError er;
	hw_cuda_exception(&er, entry, what);
	keep(CTX(be), er.code, &er);
	(guard_fill(a, er), ...);
}

template <auto F, typename Name, typename Sig = decltype(F)> struct Guard;
template <auto F, typename Name, typename R, typename... A>
struct Guard<F, Name, R (*)(HwBackend *, A...)>
{
	static R call(HwBackend *be, A... a) noexcept
	{
		try
		{
			return F(be, a...);
		}
		catch (const std::exception &ex)
		{
			guard_caught(be, Name::get(), ex.what(), a...);
		}
		catch (...)
		{
			guard_caught(be, Name::get(), "an exception that is not a std::exception", a...);
		}
		return GuardFail<R>::value();
	}
};

/* &Guard<fn, (a type naming fn)>::call */
#define GUARDED(fn) ([] { struct Name { static const char *get() { return "the CUDA backend's " #fn; } }; \
	return &Guard<fn, Name>::call; }())

static HwBackendOps make_ops()
{
	HwBackendOps o;
	memset(&o, 0, sizeof(o));
	o.name = "cuda";
	o.destroy = cu_destroy;
	o.alloc = GUARDED(cu_alloc);
	o.free = GUARDED(cu_free);
	o.memcpy_h2d = GUARDED(cu_memcpy_h2d);
	o.memcpy_d2h = GUARDED(cu_memcpy_d2h);
	o.memcpy_d2d = GUARDED(cu_memcpy_d2d);
	o.memset = GUARDED(cu_memset);
	o.synchronize = GUARDED(cu_synchronize);
	o.gemm = GUARDED(cu_gemm);
	o.add_bias = GUARDED(cu_add_bias);
	o.bias_backward = GUARDED(cu_bias_backward);
	o.axpby = GUARDED(cu_axpby);
	o.sumsq = GUARDED(cu_sumsq);
	o.gather_f16_rows = GUARDED(cu_gather_f16_rows);
	o.gather_rows = GUARDED(cu_gather_rows);
	o.scatter_add_rows = GUARDED(cu_scatter_add_rows);
	o.rmsnorm_forward = GUARDED(cu_rmsnorm_forward);
	o.rmsnorm_backward = GUARDED(cu_rmsnorm_backward);
	o.encoder_forward = GUARDED(cu_encoder_forward);
	o.encoder_backward = GUARDED(cu_encoder_backward);
	o.qknorm_forward = GUARDED(cu_qknorm_forward);
	o.qknorm_backward = GUARDED(cu_qknorm_backward);
	o.attn_plan_create = GUARDED(cu_attn_plan_create);
	o.attn_plan_free = GUARDED(cu_attn_plan_free);
	o.attn_forward = GUARDED(cu_attn_forward);
	o.attn_backward = GUARDED(cu_attn_backward);
	o.gate_residual_forward = GUARDED(cu_gate_residual_forward);
	o.gate_residual_backward = GUARDED(cu_gate_residual_backward);
	o.swiglu_forward = GUARDED(cu_swiglu_forward);
	o.swiglu_backward = GUARDED(cu_swiglu_backward);
	o.loss_forward_backward = GUARDED(cu_loss_forward_backward);
	o.adamw_update = GUARDED(cu_adamw_update);
	o.muon_momentum = GUARDED(cu_muon_momentum);
	o.check_shapes = GUARDED(cu_check_shapes);
	o.last_error = hw_backend_cuda_last_error;
	return o;
}

static const HwBackendOps cuda_ops = make_ops();

/* Every entry of backend.h must be filled, except those backend.h calls
 * optional (NULL = the model falls back): if backend.h grew an entry that
 * this file does not implement yet, refuse clearly instead of crashing on a
 * NULL pointer later.  Needs no GPU, so the GPU test runs it everywhere. */
extern "C" int
hw_cuda_backend_check_table(HwError *err)
{
	static const size_t optional[] = { offsetof(HwBackendOps, gemm_rows_batched), offsetof(HwBackendOps, bf16_usable),
									   offsetof(HwBackendOps, bf16_weight_pack), offsetof(HwBackendOps, bf16_weight_free),
									   offsetof(HwBackendOps, gemm_bf16), offsetof(HwBackendOps, attn_forward_rows) };
	const char *base = (const char *) &cuda_ops;
	for (size_t off = offsetof(HwBackendOps, destroy); off < sizeof(HwBackendOps); off += sizeof(void *))
	{
		bool is_optional = false;
		for (size_t j = 0; j < sizeof(optional) / sizeof(optional[0]); j++)
			is_optional |= optional[j] == off;
		void *fn;
		memcpy(&fn, base + off, sizeof(fn));
		if (!fn && !is_optional)
			return hw_error_set(err, HW_ERR_INTERNAL,
								"the CUDA backend does not implement entry %zu of backend.h's table; "
								"update cuda/backend_cuda.cu", off / sizeof(void *));
	}
	return HW_OK;
}

extern "C" HwBackend *
hw_backend_cuda_create(int device, HwError *err)
{
	HW_CXX_TRY
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0)
	{
		cudaGetLastError();
		hw_error_set(err, HW_ERR_INVALID,
					 "no CUDA device available (%s); use device => 'cpu', or check the NVIDIA driver",
					 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return NULL;
	}
	if (device < 0 || device >= ndev)
	{
		hw_error_set(err, HW_ERR_INVALID, "CUDA device %d does not exist (this machine has %d: 0..%d)",
					 device, ndev, ndev - 1);
		return NULL;
	}
	if (hw_cuda_backend_check_table(err) != HW_OK)
		return NULL;
	HwBackend *be = (HwBackend *) calloc(1, sizeof(HwBackend));
	CudaCtx *c = (CudaCtx *) calloc(1, sizeof(CudaCtx));
	int rc = HW_OK;
	if (!be || !c)
	{
		free(be);
		free(c);
		hw_error_set(err, HW_ERR_NOMEM, "out of host memory creating the CUDA backend");
		return NULL;
	}
	c->device = device;
	c->mem.device = device;
	c->mem.reserve_bytes = 256u << 20;     /* headroom for the driver, cuBLAS kernels, NCCL */
	HW_CUDA_GOTO(err, rc, fail, cudaSetDevice(device));
	HW_CUDA_GOTO(err, rc, fail, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	if ((rc = hw_cuda_blas_init(&c->blas, &c->mem, c->stream, err)) != HW_OK)
		goto fail;
	if ((rc = hw_cuda_staging_init(&c->staging, 8u << 20, err)) != HW_OK)
		goto fail;
	HW_CUDA_GOTO(err, rc, fail, cudaMallocHost((void **) &c->h_result, sizeof(double)));
	{
		void *p = NULL;
		if ((rc = hw_cuda_mem_alloc(&c->mem, sizeof(double), "sumsq result", &p, err)) != HW_OK)
			goto fail;
		c->d_result = (double *) p;
	}
	{
		char desc[128] = "?";
		hw_cuda_device_describe(device, desc, sizeof(desc));
		snprintf(c->name, sizeof(c->name), "GPU %d: %s", device, desc);
	}
	be->ops = &cuda_ops;
	be->ctx = c;
	be->n_threads = 0;
	return be;
fail:
	if (rc == HW_OK)        /* every path sets rc; keep err meaningful anyway */
		hw_error_set(err, HW_ERR_INTERNAL, "CUDA backend setup failed on device %d", device);
	ctx_release(c);
	free(be);
	return NULL;
	HW_CXX_CATCH(err, NULL)
}

extern "C" int
hw_cuda_backend_create(int device, HwBackend **out, HwError *err)
{
	/* no try needed: the one callee is guarded and the rest cannot throw */
	HwError er;
	HwError *e = err ? err : &er;
	e->code = HW_OK;
	*out = hw_backend_cuda_create(device, e);
	return *out ? HW_OK : (e->code != HW_OK ? e->code : HW_ERR_INTERNAL);
}

extern "C" int
hw_backend_cuda_last_error(HwBackend *be, HwError *err)
{
	HW_CXX_TRY
	CudaCtx *c = CTX(be);
	if (!c->failed)
	{
		/* surface asynchronous kernel faults too */
		cudaSetDevice(c->device);
		check(c, cudaStreamSynchronize(c->stream), "synchronize");
	}
	if (!c->failed)
		return HW_OK;
	int code = c->err.code != HW_OK ? c->err.code : HW_ERR_INTERNAL;
	if (err)
	{
		*err = c->err;
		err->code = code;
	}
	c->failed = 0;
	memset(&c->err, 0, sizeof(c->err));
	return code;
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

extern "C" int
hw_backend_cuda_describe(HwBackend *be, char *buf, size_t buflen)
{
	HW_CXX_TRY
	CudaCtx *c = CTX(be);
	snprintf(buf, buflen, "%s | gemm %s | %.3f GiB in use, peak %.3f GiB", c->name,
			 hw_cuda_gemm_mode_name(hw_cuda_gemm_mode()),
			 c->mem.live_bytes / 1073741824.0, c->mem.peak_bytes / 1073741824.0);
	return HW_OK;
	HW_CXX_CATCH(NULL, HW_ERR_INTERNAL)
}

extern "C" int
hw_backend_cuda_bf16_peak(HwBackend *be, int n, double *tflops, HwError *err)
{
	HW_CXX_TRY
	CudaCtx *c = CTX(be);
	HW_CUDA_TRY(err, cudaSetDevice(c->device));
	return hw_cuda_measure_bf16_peak(&c->blas, &c->mem, c->stream, n > 0 ? n : 8192, 10, tflops, err);
	HW_CXX_CATCH(err, HW_ERR_INTERNAL)
}

extern "C" int
hw_backend_cuda_set_gemm_mode(const char *mode)
{
	HW_CXX_TRY
	if (!mode) return HW_ERR_INVALID;
	if (strcmp(mode, "bf16") == 0) hw_cuda_gemm_set_mode(HW_GEMM_BF16);
	else if (strcmp(mode, "bf16x") == 0) hw_cuda_gemm_set_mode(HW_GEMM_BF16X);
	else if (strcmp(mode, "tf32") == 0) hw_cuda_gemm_set_mode(HW_GEMM_TF32);
	else if (strcmp(mode, "fp32") == 0) hw_cuda_gemm_set_mode(HW_GEMM_FP32);
	else return HW_ERR_INVALID;
	return HW_OK;
	HW_CXX_CATCH(NULL, HW_ERR_INTERNAL)
}

extern "C" size_t
hw_backend_cuda_peak_bytes(HwBackend *be)
{
	HW_CXX_TRY
	return CTX(be)->mem.peak_bytes;
	HW_CXX_CATCH(NULL, 0)
}

/* internal (nccl.cu) */
cudaStream_t hw_backend_cuda_stream(HwBackend *be) { return CTX(be)->stream; }
int          hw_backend_cuda_device(HwBackend *be) { return CTX(be)->device; }
