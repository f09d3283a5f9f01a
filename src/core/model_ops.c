/*
 * model_ops.c: the taped ops of the training forward: each runs its forward through
 * the backend now (timed) and records its backward on the tape.
 */
#include "core/model_ops.h"

/* C[M,N] (=, or beta*C +) op(A) @ op(B), stored as the backend's gemm
 * reads them, alpha 1: a transformer layer's products (layer: forward,
 * input and weight gradients) in bf16 when the model trains so
 * (model_precision.c) and the backend ran it, else the fp32 gemm */
static void
gemm_op(HwModel *m, bool layer, bool transA, bool transB, int M, int N, int K, const float *A, int lda,
		const float *B, int ldb, float beta, float *C, int ldc)
{
	HwBackend *be = m->be;

	if (layer && m->train_bf16 && be->ops->gemm_bf16_any(be, transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc))
		return;
	be->ops->gemm(be, transA, transB, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

void
model_rec(HwModel *m, const char *op, const char *label, const char *inputs, int64_t d0, int64_t d1,
	hw_tape_backward_fn bw, const void *args, size_t sz, double t0)
{
	HwTapeRec *r = hw_tape_push(&m->tape, op, label, inputs, d1 ? 2 : 1, d0, d1, 0, bw, args, sz);

	if (r)
		r->fwd_ms = hw_now_ms() - t0;
}

static void
linear_bw(void *ctx, const HwTapeRec *r)
{
	HwModel       *m = ctx;
	const LinArgs *a = (const LinArgs *) r->args.bytes;
	HwBackend     *be = m->be;

	if (a->dW)
		gemm_op(m, a->layer, true, false, a->Nout, a->K, a->M, a->dY, a->ldy, a->X, a->ldx, a->dw_beta, a->dW, a->K);
	if (a->db)
		be->ops->bias_backward(be, a->db, a->dY, a->M, a->Nout);   /* dY rows contiguous (ldy == Nout) */
	if (a->dX)
		gemm_op(m, a->layer, false, false, a->M, a->K, a->Nout, a->dY, a->ldy, a->W, a->K, a->dx_beta, a->dX, a->ldx);
}

void
model_op_linear(HwModel *m, const char *label, const char *inputs, LinArgs a, const float *b)
{
	double t0 = hw_now_ms();

	gemm_op(m, a.layer, false, true, a.M, a.Nout, a.K, a.X, a.ldx, a.W, a.K, 0.0f, a.Y, a.ldy);
	if (b)
		m->be->ops->add_bias(m->be, a.Y, b, a.M, a.Nout);
	model_rec(m, "linear", label, inputs, a.M, a.Nout, linear_bw, &a, sizeof(a), t0);
}

static void
side_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const SideArgs *a = (const SideArgs *) r->args.bytes;

	m->be->ops->gemm(m->be, true, false, m->D, a->K, a->N, 1.0f, m->de, m->D, a->X, a->K, 1.0f, G(a->w), a->K);
}

void
model_op_side(HwModel *m, const char *label, const char *inputs, const float *X, int64_t w, int N, int K)
{
	double   t0 = hw_now_ms();
	SideArgs a = { X, w, N, K };

	m->be->ops->gemm(m->be, false, true, N, m->D, K, 1.0f, X, K, P(w), K, 1.0f, m->e, m->D);
	model_rec(m, "linear", label, inputs, N, m->D, side_bw, &a, sizeof(a), t0);
}

/* d_cramp_y (=) de at the compacted cells; enc.cramp.w's gradient (+=) d_cramp_y^T @ d_cramp */
static void
ramps_bw(void *ctx, const HwTapeRec *r)
{
	HwModel       *m = ctx;
	const RampArgs *a = (const RampArgs *) r->args.bytes;

	m->be->ops->gather_rows(m->be, m->d_cramp_y, m->de, m->d_cramp_idx, a->n, m->D);
	m->be->ops->gemm(m->be, true, false, m->D, HW_CRAMP_DIM, a->n, 1.0f, m->d_cramp_y, m->D, m->d_cramp,
					 HW_CRAMP_DIM, 1.0f, G(m->o_cramp), HW_CRAMP_DIM);
}

void
model_op_ramps(HwModel *m, const char *label, const char *inputs)
{
	double   t0 = hw_now_ms();
	RampArgs a = { m->n_cramp };

	m->be->ops->gemm(m->be, false, true, a.n, m->D, HW_CRAMP_DIM, 1.0f, m->d_cramp, HW_CRAMP_DIM, P(m->o_cramp),
					 HW_CRAMP_DIM, 0.0f, m->d_cramp_y, m->D);
	m->be->ops->scatter_add_rows(m->be, m->e, m->d_cramp_y, m->d_cramp_idx, a.n, m->D);
	model_rec(m, "linear", label, inputs, a.n, m->D, ramps_bw, &a, sizeof(a), t0);
}

static void
rmsnorm_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const NormArgs *a = (const NormArgs *) r->args.bytes;

	if (a->zero_dx)
		m->be->ops->memset(m->be, a->dx, 0, sizeof(float) * (size_t) a->N * a->D);
	m->be->ops->rmsnorm_backward(m->be, a->dx, a->dg, a->dout, a->x, a->rstd, a->g, a->N, a->D);
}

void
model_op_rmsnorm(HwModel *m, const char *label, const char *inputs, NormArgs a)
{
	double t0 = hw_now_ms();

	m->be->ops->rmsnorm_forward(m->be, a.out, a.rstd, a.x, a.g, a.N, a.D);
	model_rec(m, "rmsnorm", label, inputs, a.N, a.D, rmsnorm_bw, &a, sizeof(a), t0);
}

static void
norm_linear_bw(void *ctx, const HwTapeRec *r)
{
	HwModel      *m = ctx;
	const NLArgs *a = (const NLArgs *) r->args.bytes;
	HwBackend    *be = m->be;

	be->ops->rmsnorm_forward(be, a->xn, a->rstd, a->x, a->g, a->N, a->D);
	gemm_op(m, true, true, false, a->Nout, a->D, a->N, a->dY, a->Nout, a->xn, a->D, 1.0f, a->dW, a->D);
	gemm_op(m, true, false, false, a->N, a->D, a->Nout, a->dY, a->Nout, a->W, a->D, 0.0f, a->dxn, a->D);
	be->ops->rmsnorm_backward(be, a->dx, a->dg, a->dxn, a->x, a->rstd, a->g, a->N, a->D);
}

void
model_op_norm_linear(HwModel *m, const char *label, const char *inputs, NLArgs a)
{
	double t0 = hw_now_ms();

	m->be->ops->rmsnorm_forward(m->be, a.xn, a.rstd, a.x, a.g, a.N, a.D);
	gemm_op(m, true, false, true, a.N, a.Nout, a.D, a.xn, a.D, a.W, a.D, 0.0f, a.Y, a.Nout);
	model_rec(m, "norm_linear", label, inputs, a.N, a.Nout, norm_linear_bw, &a, sizeof(a), t0);
}

static void
qknorm_bw(void *ctx, const HwTapeRec *r)
{
	HwModel      *m = ctx;
	const QKArgs *a = (const QKArgs *) r->args.bytes;

	m->be->ops->qknorm_backward(m->be, a->dqkvg, a->dtau, a->dqs, a->dkn, a->dv, a->qkvg,
								a->qnorm, a->knorm, a->tau, a->N, a->H, a->dh);
}

void
model_op_qknorm(HwModel *m, const char *label, QKArgs q)
{
	double t0 = hw_now_ms();

	m->be->ops->qknorm_forward(m->be, q.qs, q.kn, q.v, q.qnorm, q.knorm, q.qkvg, q.tau, q.N, q.H, q.dh);
	model_rec(m, "qknorm", label, "qkvg,tau", q.N, (int64_t) q.H * q.dh, qknorm_bw, &q, sizeof(q), t0);
}

static void
attn_bw(void *ctx, const HwTapeRec *r)
{
	HwModel       *m = ctx;
	const AttArgs *a = (const AttArgs *) r->args.bytes;

	m->be->ops->attn_backward(m->be, a->dq, a->dk, a->dv, a->dout, a->out, a->lse, a->q, a->k,
							  a->v, a->plan, a->H, a->dh);
}

void
model_op_attention(HwModel *m, const char *label, AttArgs at, int N)
{
	double t0 = hw_now_ms();

	m->be->ops->attn_forward(m->be, at.out, at.lse, at.q, at.k, at.v, at.plan, at.H, at.dh);
	model_rec(m, "attention", label, "qs,kn,v", N, (int64_t) at.H * at.dh, attn_bw, &at, sizeof(at), t0);
}

static void
gate_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const GateArgs *a = (const GateArgs *) r->args.bytes;

	m->be->ops->gate_residual_backward(m->be, a->dgp, a->ld, a->dO, a->dx, a->gp, a->o, a->N, a->D);
}

void
model_op_gate_residual(HwModel *m, const char *label, GateArgs g)
{
	double t0 = hw_now_ms();

	m->be->ops->gate_residual_forward(m->be, g.xout, g.xin, g.gp, g.ld, g.o, g.N, g.D);
	model_rec(m, "gate_residual", label, "x,gate,o", g.N, g.D, gate_bw, &g, sizeof(g), t0);
}

static void
swiglu_bw(void *ctx, const HwTapeRec *r)
{
	HwModel      *m = ctx;
	const SwArgs *a = (const SwArgs *) r->args.bytes;
	HwBackend    *be = m->be;

	be->ops->swiglu_forward(be, a->h, a->gu, a->N, a->F);
	gemm_op(m, true, true, false, a->D, a->F, a->N, a->dx, a->D, a->h, a->F, 1.0f, a->dW2, a->F);
	gemm_op(m, true, false, false, a->N, a->F, a->D, a->dx, a->D, a->W2, a->F, 0.0f, a->dh, a->F);
	be->ops->swiglu_backward(be, a->dgu, a->dh, a->gu, a->N, a->F);
}

void
model_op_swiglu_w2_residual(HwModel *m, const char *label, SwArgs sw)
{
	HwBackend *be = m->be;
	double     t0 = hw_now_ms();

	be->ops->swiglu_forward(be, sw.h, sw.gu, sw.N, sw.F);
	be->ops->memcpy_d2d(be, sw.xout, sw.xin, sizeof(float) * (size_t) sw.N * sw.D);
	gemm_op(m, true, false, true, sw.N, sw.D, sw.F, sw.h, sw.F, sw.W2, sw.F, 1.0f, sw.xout, sw.D);
	model_rec(m, "swiglu_w2_residual", label, "x,gu,w2", sw.N, sw.D, swiglu_bw, &sw, sizeof(sw), t0);
}

static void
encoder_bw(void *ctx, const HwTapeRec *r)
{
	HwModel       *m = ctx;
	const EncArgs *a = (const EncArgs *) r->args.bytes;

	m->be->ops->encoder_backward(m->be, &a->g, a->de, &a->in, a->N, a->D, a->ncols, a->Uc, a->U);
}

void
model_op_encoder(HwModel *m, EncArgs a, const HwEncWeights *w)
{
	double t0 = hw_now_ms();

	m->be->ops->encoder_forward(m->be, m->e, &a.in, w, a.N, a.D);
	model_rec(m, "encoder", "enc.e", "batch,colproj,catproj,textproj", a.N, a.D, encoder_bw, &a, sizeof(a), t0);
}

static void
target_rows_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const RowsArgs *a = (const RowsArgs *) r->args.bytes;
	HwBackend      *be = m->be;

	be->ops->memset(be, a->datt, 0, sizeof(float) * (size_t) a->N * a->D);
	be->ops->scatter_add_rows(be, a->datt, a->datt_t, a->idx, a->B, a->D);
	be->ops->memset(be, a->dqkvg, 0, sizeof(float) * (size_t) a->N * 4 * a->D);
	be->ops->scatter_add_rows(be, a->dqkvg, a->dqg_t, a->idx, a->B, 4 * a->D);
	be->ops->scatter_add_rows(be, a->dx, a->dx_t, a->idx, a->B, a->D);
}

void
model_op_target_rows(HwModel *m, const char *label, RowsArgs a)
{
	HwBackend *be = m->be;
	double     t0 = hw_now_ms();

	be->ops->gather_rows(be, a.att_t, a.att, a.idx, a.B, a.D);
	be->ops->gather_rows(be, a.qg_t, a.qkvg, a.idx, a.B, 4 * a.D);
	be->ops->gather_rows(be, a.x_t, a.x_in, a.idx, a.B, a.D);
	be->ops->memset(be, a.dqg_t, 0, sizeof(float) * (size_t) a.B * 4 * a.D);
	be->ops->memset(be, a.dx_t, 0, sizeof(float) * (size_t) a.B * a.D);
	model_rec(m, "target_rows", label, "attn,qkvg,x", a.B, a.D, target_rows_bw, &a, sizeof(a), t0);
}

static void
final_bw(void *ctx, const HwTapeRec *r)
{
	HwModel        *m = ctx;
	const HeadArgs *a = (const HeadArgs *) r->args.bytes;
	HwBackend      *be = m->be;

	be->ops->memset(be, a->dxt, 0, sizeof(float) * (size_t) a->B * a->D);
	be->ops->rmsnorm_backward(be, a->dxt, a->dg, a->dhf, a->xt, a->rstd, a->g, a->B, a->D);
	be->ops->scatter_add_rows(be, a->dx, a->dxt, a->idx, a->B, a->D);
}

void
model_op_final_norm(HwModel *m, HeadArgs h)
{
	double t0 = hw_now_ms();

	m->be->ops->gather_rows(m->be, h.xt, h.x, h.idx, h.B, h.D);
	m->be->ops->rmsnorm_forward(m->be, h.hf, h.rstd, h.xt, h.g, h.B, h.D);
	model_rec(m, "final_norm", "hf", "x[target],final.norm.g", h.B, h.D, final_bw, &h, sizeof(h), t0);
}
