/*
 * backend_cuda_ops.cu: the entries of src/core/backend.h's table on the
 * CUDA backend (the context, errors and life cycle: backend_cuda.cu).
 * Each entry makes its device current and returns at once after the first
 * error (backend_cuda.cu explains the sticky error); the kernels are in the
 * other files of cuda/.  The table wraps every entry in a guard that turns
 * a C++ exception into the backend's kept error.
 */
#include "backend_cuda_internal.h"
#include "core/attention_check.h"
#include "hw_cuda_limits.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- memory */

static void *
cu_alloc(HwBackend *be, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return NULL;
	void *p = NULL;
	HwError er;
	int rc = hw_cuda_mem_alloc(&c->mem, bytes, "model tensors", &p, &er);
	if (rc != HW_OK)
	{
		cu_keep(c, rc, &er);
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
	if (!cu_enter(c) || bytes == 0)
		return;
	HwError er;
	cu_keep(c, hw_cuda_upload(&c->staging, c->stream, dst, src, bytes, &er), &er);
}

static void
cu_memcpy_d2h(HwBackend *be, void *dst, const void *src, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (bytes == 0)
		return;
	if (cu_enter(c))
	{
		cu_check(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), "memcpy_d2h");
		cu_check(c, cudaStreamSynchronize(c->stream), "memcpy_d2h (synchronize)");
	}
	if (c->failed)
		memset(dst, 0xff, bytes);           /* NaN floats: the model stops with a numeric error */
}

static void
cu_memcpy_d2d(HwBackend *be, void *dst, const void *src, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c) || bytes == 0)
		return;
	cu_check(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream), "memcpy_d2d");
}

static void
cu_memset(HwBackend *be, void *dst, int byte, size_t bytes)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c) || bytes == 0)
		return;
	cu_check(c, cudaMemsetAsync(dst, byte, bytes, c->stream), "memset");
}

static void
cu_synchronize(HwBackend *be)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return;
	cu_check(c, cudaStreamSynchronize(c->stream), "synchronize");
}

/* ---------------------------------------------------------------- GEMM and utilities */

static void
cu_gemm(HwBackend *be, bool tA, bool tB, int M, int N, int K, float alpha, const float *A, int lda,
		const float *B, int ldb, float beta, float *C, int ldc)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return;
	HwError er;
	cu_keep(c, hw_cuda_gemm(&c->blas, &c->mem, c->stream, tA, tB, M, N, K, alpha, A, lda, B, ldb,
						 beta, C, ldc, &er), &er);
}

static void
cu_add_bias(HwBackend *be, float *out, const float *bias, int M, int N)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_add_bias(c->stream, out, bias, M, N), "add_bias");
}

static void
cu_bias_backward(HwBackend *be, float *db, const float *dout, int M, int N)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return;
	float *part = grow(c, &c->fscr, &c->fscr_n, (size_t) hw_cuda_nch(M) * N, "reduction scratch");
	if (part)
		cu_check(c, hw_k_colsum(c->stream, db, part, dout, M, N, N), "bias_backward");
}

static void
cu_axpby(HwBackend *be, float *y, float a, const float *x, float b, size_t n)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_axpby(c->stream, y, a, x, b, n), "axpby");
}

static double
cu_sumsq(HwBackend *be, const float *x, size_t n)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return NAN;
	double *part = grow(c, &c->dscr, &c->dscr_n, (n + 4095) / 4096, "sumsq scratch");
	if (!part)
		return NAN;
	cu_check(c, hw_k_sumsq(c->stream, c->d_result, part, x, n), "sumsq");
	cu_check(c, cudaMemcpyAsync(c->h_result, c->d_result, sizeof(double), cudaMemcpyDeviceToHost, c->stream),
		  "sumsq (copy)");
	cu_check(c, cudaStreamSynchronize(c->stream), "sumsq (synchronize)");
	return c->failed ? NAN : *c->h_result;
}

static void
cu_gather_f16_rows(HwBackend *be, float *out, const uint16_t *table, const int32_t *idx_host, int M, int C)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c) || M <= 0)
		return;
	/* the index array is host memory: stage it (stream-ordered, so reusing
	 * the scratch for the next call is safe) */
	int32_t *idx = grow(c, &c->iscr, &c->iscr_n, (size_t) M, "gather index scratch");
	if (!idx)
		return;
	HwError er;
	int rc = hw_cuda_upload(&c->staging, c->stream, idx, idx_host, (size_t) M * sizeof(int32_t), &er);
	cu_keep(c, rc, &er);
	if (rc == HW_OK)
		cu_check(c, hw_k_gather_f16_rows(c->stream, out, table, idx, M, C), "gather_f16_rows");
}

static void
cu_gather_rows(HwBackend *be, float *out, const float *in, const int32_t *idx, int M, int C)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_gather_rows(c->stream, out, in, idx, M, C), "gather_rows");
}

static void
cu_scatter_add_rows(HwBackend *be, float *din, const float *dout, const int32_t *idx, int M, int C)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_scatter_add_rows(c->stream, din, dout, idx, M, C), "scatter_add_rows");
}

/* ---------------------------------------------------------------- norms */

static void
cu_rmsnorm_forward(HwBackend *be, float *out, float *rstd, const float *x, const float *g, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_rmsnorm_forward(c->stream, out, rstd, x, g, N, D), "rmsnorm_forward");
}

static void
cu_rmsnorm_backward(HwBackend *be, float *dx, float *dg, const float *dout, const float *x,
					const float *rstd, const float *g, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return;
	float *part = grow(c, &c->fscr, &c->fscr_n, (size_t) hw_cuda_nch(N) * D, "reduction scratch");
	if (part)
		cu_check(c, hw_k_rmsnorm_backward(c->stream, dx, dg, part, dout, x, rstd, g, N, D), "rmsnorm_backward");
}

static void
cu_qknorm_forward(HwBackend *be, float *qs, float *kn, float *v, float *qnorm, float *knorm,
				  const float *qkvg, const float *tau, int N, int H, int dh)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_qknorm_forward(c->stream, qs, kn, v, qnorm, knorm, qkvg, tau, N, H, dh), "qknorm_forward");
}

static void
cu_qknorm_backward(HwBackend *be, float *dqkvg, float *dtau, const float *dqs, const float *dkn,
				   const float *dv, const float *qkvg, const float *qnorm, const float *knorm,
				   const float *tau, int N, int H, int dh)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return;
	float *tmp = grow(c, &c->fscr2, &c->fscr2_n, (size_t) N * H, "qknorm scratch");
	float *part = grow(c, &c->fscr, &c->fscr_n, (size_t) hw_cuda_nch(N) * H, "reduction scratch");
	if (tmp && part)
		cu_check(c, hw_k_qknorm_backward(c->stream, dqkvg, dtau, tmp, part, dqs, dkn, dv, qkvg, qnorm, knorm,
									  tau, N, H, dh), "qknorm_backward");
}

/* ---------------------------------------------------------------- encoder */

static void
cu_encoder_forward(HwBackend *be, float *e, const HwEncInputs *in, const HwEncWeights *w, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_encoder_forward(c->stream, e, in, w, N, D), "encoder_forward");
}

static void
cu_encoder_backward(HwBackend *be, const HwEncGrads *g, const float *de, const HwEncInputs *in,
					int N, int D, int ncols, int Uc, int U)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return;
	int maxkeys = ncols > Uc ? ncols : Uc;
	if (U > maxkeys)
		maxkeys = U;
	size_t need = hw_cuda_encoder_scratch_bytes(N, D, maxkeys);
	char *scr = grow(c, (char **) &c->escr, &c->escr_n, need, "encoder backward scratch");
	if (scr)
		cu_check(c, hw_k_encoder_backward(c->stream, scr, c->escr_n, g, de, in, N, D, ncols, Uc, U),
			  "encoder_backward");
}

/* ---------------------------------------------------------------- attention */

static void *
cu_attn_plan_create(HwBackend *be, const HwAttnMaskInfo *info, HwMaskKind kind, HwError *err)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
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
	if (!cu_enter(c) || ((const CudaPlan *) plan)->B == 0)
		return;
	HwError er;
	cu_keep(c, hw_cuda_attn_forward(out, lse, q, k, v, HW_CUDA_F32, &((const CudaPlan *) plan)->plan, H, dh,
								 c->stream, &er), &er);
}

static void
cu_attn_backward(HwBackend *be, float *dq, float *dk, float *dv, const float *dout, const float *out,
				 const float *lse, const float *q, const float *k, const float *v, const void *plan, int H, int dh)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return;
	const CudaPlan *p = (const CudaPlan *) plan;
	if (p->B == 0)
		return;
	float *delta = grow(c, &c->fscr2, &c->fscr2_n, (size_t) p->B * H * p->S, "attention backward scratch");
	if (!delta)
		return;
	HwError er;
	cu_keep(c, hw_cuda_attn_backward(dq, dk, dv, delta, dout, out, lse, q, k, v, HW_CUDA_F32, &p->plan, H, dh,
								  c->stream, &er), &er);
}

/* ---------------------------------------------------------------- gate, SwiGLU, loss, optimiser */

static void
cu_gate_residual_forward(HwBackend *be, float *xout, const float *xin, const float *gpre, int ld_g,
						 const float *o, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_gate_residual_forward(c->stream, xout, xin, gpre, ld_g, o, N, D), "gate_residual_forward");
}

static void
cu_gate_residual_backward(HwBackend *be, float *dgpre, int ld_g, float *dO, const float *dxout,
						  const float *gpre, const float *o, int N, int D)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_gate_residual_backward(c->stream, dgpre, ld_g, dO, dxout, gpre, o, N, D),
			  "gate_residual_backward");
}

static void
cu_swiglu_forward(HwBackend *be, float *h, const float *gu, int N, int F)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_swiglu_forward(c->stream, h, gu, N, F), "swiglu_forward");
}

static void
cu_swiglu_backward(HwBackend *be, float *dgu, const float *dh, const float *gu, int N, int F)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_swiglu_backward(c->stream, dgu, dh, gu, N, F), "swiglu_backward");
}

static void
cu_loss_forward_backward(HwBackend *be, float *loss, float *dZ, float *dlogits, const float *Z,
						 const float *logits, const HwLossTargets *t, int stype, int B, int D, int K, float scale)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_loss_forward_backward(c->stream, loss, dZ, dlogits, Z, logits, t, stype, B, D, K, scale),
			  "loss_forward_backward");
}

static void
cu_adamw_update(HwBackend *be, float *p, float *m, float *v, const float *grad, size_t n, float gscale,
				float lr, float b1, float b2, float eps, float wd, int t)
{
	CudaCtx *c = CTX(be);
	if (!cu_enter(c))
		return;
	float bc1 = 1.0f - powf(b1, (float) t), bc2 = 1.0f - powf(b2, (float) t);   /* as the CPU backend */
	cu_check(c, hw_k_adamw_update(c->stream, p, m, v, grad, n, gscale, lr, b1, b2, eps, wd, bc1, bc2), "adamw_update");
}

static void
cu_muon_momentum(HwBackend *be, float *u, float *buf, const float *grad, size_t n, float gscale, float mu)
{
	CudaCtx *c = CTX(be);
	if (cu_enter(c))
		cu_check(c, hw_k_muon_momentum(c->stream, u, buf, grad, n, gscale, mu), "muon_momentum");
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
	cu_keep(CTX(be), er.code, &er);
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

static HwBackendOps
make_ops()
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


const HwBackendOps *
hw_cuda_ops_table(void)
{
	static const HwBackendOps ops = make_ops();     /* built once, thread-safe */
	return &ops;
}
