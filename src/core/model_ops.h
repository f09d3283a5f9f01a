/*
 * model_ops.h: the taped ops of the training forward (model_ops.c).  Each
 * runs its forward through the backend, timed, and pushes a tape record with
 * the arguments its backward needs; shapes are row-major, N = B*S cells.
 */
#ifndef HW_MODEL_OPS_H
#define HW_MODEL_OPS_H

#include "core/model_internal.h"

/* linear: Y[M,Nout] (ldy) = X[M,K] (ldx) @ W[Nout,K]^T (+ b); backward:
 * dX (dx_beta: 0 overwrite / 1 accumulate; NULL = none), dW (dw_beta), db (+=). */
typedef struct LinArgs
{
	float *Y; const float *X, *W; const float *dY; float *dX, *dW, *db;
	int M, Nout, K, ldx, ldy; float dx_beta, dw_beta;
	bool layer;    /* a transformer layer's product: bf16 when the model trains so (model_ops.c gemm_op) */
} LinArgs;

/* side features (relative time, link codes): e[N,D] += X[N,K] @ W[D,K]^T
 * (X is data: no dX); backward dW (+=) de^T @ X, reading de before the
 * encoder's backward does. */
typedef struct SideArgs { const float *X; int64_t w; int N, K; } SideArgs;

/* count ramps at the n compacted cells (model_internal.h d_cramp):
 * d_cramp_y [n,D] (=) d_cramp [n,K] @ enc.cramp.w^T, e[d_cramp_idx] (+=)
 * d_cramp_y; backward: d_cramp_y (=) de[d_cramp_idx], dW (+=) d_cramp_y^T
 * @ d_cramp, reading de as model_op_side does. */
typedef struct RampArgs { int n; } RampArgs;

/* rmsnorm: out = rms(x; g) (out may be gathered rows); backward dx (+=) after optional zeroing. */
typedef struct NormArgs
{
	float *out, *rstd; const float *x, *g; const float *dout; float *dx, *dg; int N, D, zero_dx;
} NormArgs;

/* norm_linear: Y[N,Nout] = rms(x; g) @ W^T; xn recomputed in backward. */
typedef struct NLArgs
{
	float *Y, *rstd; const float *x, *g, *W; const float *dY; float *dx, *dg, *dW, *xn, *dxn;
	int N, D, Nout;
} NLArgs;

typedef struct QKArgs
{
	float *qs, *kn, *v, *qnorm, *knorm; const float *qkvg, *tau;
	const float *dqs, *dkn, *dv; float *dqkvg, *dtau; int N, H, dh;
} QKArgs;

typedef struct AttArgs
{
	float *out, *lse; const float *q, *k, *v; const void *plan;
	const float *dout; float *dq, *dk, *dv; int H, dh;
} AttArgs;

typedef struct GateArgs
{
	float *xout; const float *xin, *gp, *o; const float *dx; float *dgp, *dO; int ld, N, D;
} GateArgs;

/* xout = xin + swiglu(gu) @ W2^T; h recomputed in backward. */
typedef struct SwArgs
{
	float *xout; const float *xin, *gu, *W2; const float *dx; float *dW2, *dgu, *h, *dh; int N, D, F;
} SwArgs;

typedef struct EncArgs
{
	HwEncInputs in; HwEncGrads g; const float *de; int N, D, ncols, Uc, U;
} EncArgs;

/* target rows: att_t [B,D], qg_t [B,4D], x_t [B,D] = rows idx of att,
 * qkvg, x_in [N,...]; backward: datt and dqkvg [N,...] (=) the scattered
 * datt_t and dqg_t (zero elsewhere), dx (+=) the scattered dx_t.  The
 * forward zeroes dqg_t and dx_t, which the tail's ops then fill. */
typedef struct RowsArgs
{
	const float *att, *qkvg, *x_in; float *att_t, *qg_t, *x_t;
	float *datt, *dqkvg, *dx; float *datt_t, *dqg_t, *dx_t; const int32_t *idx; int B, N, D;
} RowsArgs;

typedef struct HeadArgs
{
	const float *x; float *xt, *rstd, *hf; const float *g; const int32_t *idx;
	const float *dhf; float *dxt, *dg, *dx; int B, D;
} HeadArgs;

/* a tape record of an op the caller ran itself (bw NULL: nothing backward) */
void model_rec(HwModel *m, const char *op, const char *label, const char *inputs, int64_t d0, int64_t d1,
			   hw_tape_backward_fn bw, const void *args, size_t sz, double t0);

void model_op_linear(HwModel *m, const char *label, const char *inputs, LinArgs a, const float *b);
void model_op_target_rows(HwModel *m, const char *label, RowsArgs a);
void model_op_side(HwModel *m, const char *label, const char *inputs, const float *X, int64_t w, int N, int K);
void model_op_ramps(HwModel *m, const char *label, const char *inputs);
void model_op_rmsnorm(HwModel *m, const char *label, const char *inputs, NormArgs a);
void model_op_norm_linear(HwModel *m, const char *label, const char *inputs, NLArgs a);
/* m->e [N,D] = encoder(batch cells; w) */
void model_op_encoder(HwModel *m, EncArgs a, const HwEncWeights *w);
void model_op_qknorm(HwModel *m, const char *label, QKArgs q);
/* at.out [N, H*dh] = attention(q, k, v; at.plan) */
void model_op_attention(HwModel *m, const char *label, AttArgs at, int N);
void model_op_gate_residual(HwModel *m, const char *label, GateArgs g);
void model_op_swiglu_w2_residual(HwModel *m, const char *label, SwArgs sw);
/* hf [B,D] = rms(x[target rows]; g) */
void model_op_final_norm(HwModel *m, HeadArgs h);

#endif /* HW_MODEL_OPS_H */
