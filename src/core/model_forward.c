/*
 * model_forward.c: the training forward (encoder, layers, heads, loss) as taped ops,
 * backward, the optimiser step with the parameter average, and eval.
 */

#include "core/model_internal.h"
#include "core/model_ops.h"
#include "core/optim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* projected tables [ncols|Uc|U, D], the encoder e [N,D] with its side
 * features, and the first residual stream rms(e) */
static void
forward_encoder(HwModel *m)
{
	int    D = m->D, Dt = m->Dt, N = m->N;
	float *x;

	model_op_linear(m, "enc.colproj", "col_table,enc.col.w,enc.col.b",
					(LinArgs){ .Y = m->colproj, .X = m->col_table, .W = P(m->o_col_w), .dY = m->dcolproj,
							   .dW = G(m->o_col_w), .db = G(m->o_col_b), .M = m->ncols, .Nout = D, .K = Dt,
							   .ldx = Dt, .ldy = D, .dw_beta = 1.0f }, P(m->o_col_b));
	if (m->Uc > 0)
		model_op_linear(m, "enc.catproj", "cat_rows,enc.cat.w,enc.cat.b",
						(LinArgs){ .Y = m->catproj, .X = m->cat_rows, .W = P(m->o_cat_w), .dY = m->dcatproj,
								   .dW = G(m->o_cat_w), .db = G(m->o_cat_b), .M = m->Uc, .Nout = D, .K = Dt,
								   .ldx = Dt, .ldy = D, .dw_beta = 1.0f }, P(m->o_cat_b));
	if (m->U > 0)
		model_op_linear(m, "enc.textproj", "text_emb,enc.text.w,enc.text.b",
						(LinArgs){ .Y = m->textproj, .X = m->text_f32, .W = P(m->o_text_w), .dY = m->dtextproj,
								   .dW = G(m->o_text_w), .db = G(m->o_text_b), .M = m->U, .Nout = D, .K = Dt,
								   .ldx = Dt, .ldy = D, .dw_beta = 1.0f }, P(m->o_text_b));
	{
		EncArgs a = {
			.in = { .stype = m->d_stype, .col = m->d_col, .is_null = m->d_is_null, .is_target = m->d_is_target,
					.num = m->d_num, .ts = m->d_ts, .boolv = m->d_bool, .cat_local = m->d_cat_local,
					.text_local = m->d_text_local },
			.g = { .colproj = m->dcolproj, .catproj = m->dcatproj, .textproj = m->dtextproj,
				   .id_emb = G(m->o_id), .null_emb = G(m->o_null), .mask_emb = G(m->o_mask),
				   .num_w = G(m->o_num_w), .num_b = G(m->o_num_b), .ts_w = G(m->o_ts_w), .ts_b = G(m->o_ts_b),
				   .bool_emb = G(m->o_bool) },
			.de = m->de, .N = N, .D = D, .ncols = m->ncols, .Uc = m->Uc, .U = m->U,
		};
		HwEncWeights w = {
			.colproj = m->colproj, .catproj = m->catproj, .textproj = m->textproj, .id_emb = P(m->o_id),
			.null_emb = P(m->o_null), .mask_emb = P(m->o_mask), .num_w = P(m->o_num_w), .num_b = P(m->o_num_b),
			.ts_w = P(m->o_ts_w), .ts_b = P(m->o_ts_b), .bool_emb = P(m->o_bool),
		};

		model_op_encoder(m, a, &w);
	}
	if (m->o_ts_rel >= 0)
		model_op_side(m, "enc.ts_rel", "batch,enc.ts_rel.w", m->d_trel, m->o_ts_rel, N, HW_REL_TIME_DIM);
	if (m->o_link >= 0)
		model_op_side(m, "enc.link", "batch,enc.link.w", m->d_link, m->o_link, N, HW_LINK_DIM);
	if (m->o_cnt >= 0)
		model_op_side(m, "enc.cnt", "batch,enc.cnt.w", m->d_cnt, m->o_cnt, N, HW_CNT_DIM);
	if (m->o_cramp >= 0 && m->n_cramp > 0)
		model_op_ramps(m, "enc.cramp", "batch,enc.cramp.w");
	x = m->L > 0 ? m->sa[0].x_in : m->x_final;
	model_op_rmsnorm(m, "h0", "enc.e,enc.norm.g",
					 (NormArgs){ .out = x, .rstd = m->rstd0, .x = m->e, .g = P(m->o_enc_g), .dout = m->dx,
								 .dx = m->de, .dg = G(m->o_enc_g), .N = N, .D = D, .zero_dx = 1 });
}

/* Does the forward prune its tail?  Only the B target cells' rows reach
 * the heads (the loss reads nothing else), so from the last attention
 * sublayer's attention on (its output projection, gated residual and the
 * last FFN) the training forward runs on those rows, gathered, as the
 * serving forward does: the same loss and gradients, ~10% less work on
 * the small preset.  The attention itself stays whole: its keys and values
 * are every cell's. */
static bool
prunes_tail(const HwModel *m)
{
	return m->L > 0 && !m->full_tail;
}

/* attention sublayer s of layer l: xout [N,D] = x_in + gate * (attention(qkvg(rms(x_in))) @ Wo^T);
 * the tail (prunes_tail, the last sublayer): after the attention, the B
 * target rows only, xout [B,D], the residual gradient in dx_t [B,D] */
static void
forward_attention_sublayer(HwModel *m, int l, int s, float *xout)
{
	SubAct     *a = &m->sa[l * m->A + s];
	SubParams  *p = &m->sp[l * m->A + s];
	int         D = m->D, N = m->N;
	const char *sn = sub_names[s];
	char        lbl[48];

	snprintf(lbl, sizeof(lbl), "layer%d.%s.qkvg", l, sn);
	model_op_norm_linear(m, lbl, "x,norm.g,wq|wk|wv|wgate",
						 (NLArgs){ .Y = a->qkvg, .rstd = a->rstd, .x = a->x_in, .g = P(p->norm_g), .W = P(p->w4),
								   .dY = m->dqkvg, .dx = m->dx, .dg = G(p->norm_g), .dW = G(p->w4),
								   .xn = m->xn, .dxn = m->dxn, .N = N, .D = D, .Nout = 4 * D });
	snprintf(lbl, sizeof(lbl), "layer%d.%s.qknorm", l, sn);
	model_op_qknorm(m, lbl,
					(QKArgs){ .qs = a->qs, .kn = a->kn, .v = a->v, .qnorm = a->qnorm, .knorm = a->knorm,
							  .qkvg = a->qkvg, .tau = P(p->tau), .dqs = m->dqs, .dkn = m->dkn, .dv = m->dv,
							  .dqkvg = m->dqkvg, .dtau = G(p->tau), .N = N, .H = m->H, .dh = m->dh });
	snprintf(lbl, sizeof(lbl), "layer%d.%s.attn", l, sn);
	model_op_attention(m, lbl,
					   (AttArgs){ .out = a->att, .lse = a->lse, .q = a->qs, .k = a->kn, .v = a->v,
								  .plan = m->plans[s], .dout = m->datt, .dq = m->dqs, .dk = m->dkn, .dv = m->dv,
								  .H = m->H, .dh = m->dh }, N);
	if (prunes_tail(m) && l == m->L - 1 && s == m->A - 1)
	{
		snprintf(lbl, sizeof(lbl), "layer%d.%s.targets", l, sn);
		model_op_target_rows(m, lbl,
							 (RowsArgs){ .att = a->att, .qkvg = a->qkvg, .x_in = a->x_in, .att_t = m->att_t,
										 .qg_t = m->qg_t, .x_t = m->x_t, .datt = m->datt, .dqkvg = m->dqkvg,
										 .dx = m->dx, .datt_t = m->datt_t, .dqg_t = m->dqg_t, .dx_t = m->dx_t,
										 .idx = m->d_tidx, .B = m->B, .N = N, .D = D });
		snprintf(lbl, sizeof(lbl), "layer%d.%s.o", l, sn);
		model_op_linear(m, lbl, "attn[targets],wo",
						(LinArgs){ .Y = a->o, .X = m->att_t, .W = P(p->wo), .dY = m->dO, .dX = m->datt_t,
								   .dW = G(p->wo), .M = m->B, .Nout = D, .K = D, .ldx = D, .ldy = D,
								   .dx_beta = 0.0f, .dw_beta = 1.0f, .layer = true }, NULL);
		snprintf(lbl, sizeof(lbl), "layer%d.%s.residual", l, sn);
		model_op_gate_residual(m, lbl,
							   (GateArgs){ .xout = xout, .xin = m->x_t, .gp = m->qg_t + 3 * D, .o = a->o,
										   .dx = m->dx_t, .dgp = m->dqg_t + 3 * D, .dO = m->dO, .ld = 4 * D,
										   .N = m->B, .D = D });
		return;
	}
	snprintf(lbl, sizeof(lbl), "layer%d.%s.o", l, sn);
	model_op_linear(m, lbl, "attn,wo",
					(LinArgs){ .Y = a->o, .X = a->att, .W = P(p->wo), .dY = m->dO, .dX = m->datt,
							   .dW = G(p->wo), .M = N, .Nout = D, .K = D, .ldx = D, .ldy = D,
							   .dx_beta = 0.0f, .dw_beta = 1.0f, .layer = true }, NULL);
	snprintf(lbl, sizeof(lbl), "layer%d.%s.residual", l, sn);
	model_op_gate_residual(m, lbl,
						   (GateArgs){ .xout = xout, .xin = a->x_in, .gp = a->qkvg + 3 * D, .o = a->o, .dx = m->dx,
									   .dgp = m->dqkvg + 3 * D, .dO = m->dO, .ld = 4 * D, .N = N, .D = D });
}

/* feed-forward sublayer of layer l: xout [R,D] = x_in + swiglu(rms(x_in) @ Wgu^T) @ W2^T,
 * R = N, or in the pruned tail (the last layer) the B target rows */
static void
forward_ffn_sublayer(HwModel *m, int l, float *xout)
{
	SubAct    *a = &m->fa[l];
	FfnParams *p = &m->fp[l];
	bool       tail = prunes_tail(m) && l == m->L - 1;
	int        D = m->D, R = tail ? m->B : m->N;
	float     *dx = tail ? m->dx_t : m->dx;
	char       lbl[48];

	snprintf(lbl, sizeof(lbl), "layer%d.ffn.gu", l);
	model_op_norm_linear(m, lbl, "x,norm.g,wg|wu",
						 (NLArgs){ .Y = a->qkvg, .rstd = a->rstd, .x = a->x_in, .g = P(p->norm_g), .W = P(p->wgu),
								   .dY = m->dgu, .dx = dx, .dg = G(p->norm_g), .dW = G(p->wgu),
								   .xn = m->xn, .dxn = m->dxn, .N = R, .D = D, .Nout = 2 * m->F });
	snprintf(lbl, sizeof(lbl), "layer%d.ffn.residual", l);
	model_op_swiglu_w2_residual(m, lbl,
								(SwArgs){ .xout = xout, .xin = a->x_in, .gu = a->qkvg, .W2 = P(p->w2), .dx = dx,
										  .dW2 = G(p->w2), .dgu = m->dgu, .h = m->hbuf, .dh = m->dhbuf,
										  .N = R, .D = D, .F = m->F });
}

/* the residual stream through every layer: x_in of sublayer 0 -> x_final */
static void
forward_layers(HwModel *m)
{
	for (int l = 0; l < m->L; l++)
	{
		for (int s = 0; s < m->A; s++)
			forward_attention_sublayer(m, l, s, s + 1 < m->A ? m->sa[l * m->A + s + 1].x_in : m->fa[l].x_in);
		forward_ffn_sublayer(m, l, l + 1 < m->L ? m->sa[(l + 1) * m->A].x_in : m->x_final);
	}
}

/* heads on the target positions: Z [B, HW_HEAD_Z(D)], the category logits
 * [B,K] and the ordinal head [B, HW_ORD_LEVELS]; then the loss per sequence
 * (lossb [B]) with the heads' gradients */
static void
forward_heads_and_loss(HwModel *m)
{
	HwBackend *be = m->be;
	int        D = m->D, Dt = m->Dt, B = m->B, HZ = HW_HEAD_Z(m->D);
	double     t0;

	/* x_final: every cell's rows (the targets' at d_tidx), or the pruned
	 * tail's B target rows */
	bool       tail = prunes_tail(m);

	model_op_final_norm(m, (HeadArgs){ .x = m->x_final, .xt = m->xt, .rstd = m->rstdf, .hf = m->hf, .g = P(m->o_final_g),
									   .idx = tail ? m->d_iota : m->d_tidx, .dhf = m->dhf, .dxt = m->dxt,
									   .dg = G(m->o_final_g), .dx = tail ? m->dx_t : m->dx, .B = B, .D = D });
	if (m->K > 0)
		model_op_linear(m, "cat_block", "cat_table[start:start+K],enc.cat.w,enc.cat.b",
						(LinArgs){ .Y = m->E, .X = m->catblock, .W = P(m->o_cat_w), .dY = m->dE,
								   .dW = G(m->o_cat_w), .db = G(m->o_cat_b), .M = m->K, .Nout = D, .K = Dt,
								   .ldx = Dt, .ldy = D, .dw_beta = 1.0f }, P(m->o_cat_b));
	/* recorded before "heads": the backward runs heads first, which
	 * writes dhf (dx_beta 0), then this, which adds to it */
	if (m->ord_levels > 0)
		model_op_linear(m, "ord_head", "hf,head.ord.w,head.ord.b",
						(LinArgs){ .Y = m->Zo, .X = m->hf, .W = P(m->o_ord_w), .dY = m->dZo, .dX = m->dhf,
								   .dW = G(m->o_ord_w), .db = G(m->o_ord_b), .M = B, .Nout = HW_ORD_LEVELS, .K = D,
								   .ldx = D, .ldy = HW_ORD_LEVELS, .dx_beta = 1.0f, .dw_beta = 1.0f }, P(m->o_ord_b));
	model_op_linear(m, "heads", "hf,head.w,head.b",
					(LinArgs){ .Y = m->Z, .X = m->hf, .W = P(m->o_head_w), .dY = m->dZ, .dX = m->dhf,
							   .dW = G(m->o_head_w), .db = G(m->o_head_b), .M = B, .Nout = HZ, .K = D,
							   .ldx = D, .ldy = HZ, .dx_beta = 0.0f, .dw_beta = 1.0f }, P(m->o_head_b));
	if (m->K > 0)
		model_op_linear(m, "cat_logits", "heads[cat],cat_block",
						(LinArgs){ .Y = m->logits, .X = m->Z + HW_HEAD_CAT, .W = m->E, .dY = m->dlogits,
								   .dX = m->dZ + HW_HEAD_CAT, .dW = m->dE, .M = B, .Nout = m->K, .K = D,
								   .ldx = HZ, .ldy = m->K, .dx_beta = 1.0f, .dw_beta = 0.0f }, NULL);
	{
		HwLossTargets t = { .is_null = m->d_tnull, .num = m->d_tnum, .boolv = m->d_tbool, .ts = m->d_tts,
							.cat = m->d_tcat, .num_loss = m->num_loss == HW_NUM_LOSS_ORDINAL ? HW_NUM_LOSS_MAE : m->num_loss,
							.ord_levels = m->ord_levels, .ord_scale = m->ord_scale, .ord_shift = m->ord_shift,
							.ord_z = m->Zo, .ord_dz = m->dZo };

		t0 = hw_now_ms();
		be->ops->loss_forward_backward(be, m->lossb, m->dZ, m->dlogits, m->Z, m->logits, &t, m->stype, B, D,
									   m->K, 1.0f / (float) B);
		model_rec(m, "loss", "loss", "heads,targets", B, 0, NULL, NULL, 0, t0);
	}
}

/* The training forward of one batch as taped ops; *loss_out: the mean cell loss. */
static int
forward(HwModel *m, const HwBatch *bt, float *loss_out, HwError *err)
{
	int    rc, B;
	double t0, sum = 0;
	float *lossh;

	hw_tape_reset(&m->tape);
	t0 = hw_now_ms();
	if ((rc = model_prepare_batch(m, bt, err)) != HW_OK)
		return rc;
	model_rec(m, "prepare_batch", "batch", "", bt->B, bt->S, NULL, NULL, 0, t0);
	B = m->B;
	forward_encoder(m);
	forward_layers(m);
	forward_heads_and_loss(m);
	lossh = (float *) m->h_f32;
	m->be->ops->memcpy_d2h(m->be, lossh, m->lossb, sizeof(float) * B);
	for (int b = 0; b < B; b++)
		sum += lossh[b];
	*loss_out = (float) (sum / B);
	if (!isfinite(*loss_out))
		return hw_error_set(err, HW_ERR_NUMERIC, "loss is %s at step %lld: training stopped, parameters unchanged",
							isnan(*loss_out) ? "NaN" : "infinite", (long long) m->step + 1);
	return HW_OK;
}

void
hw_model_set_full_tail(HwModel *m, bool full)
{
	m->full_tail = full;
}

int
hw_model_forward_backward(HwModel *m, const HwBatch *bt, float *loss, HwError *err)
{
	if (m->frozen)
		return hw_error_set(err, HW_ERR_INVALID, "a frozen (serving) model has no gradients");
	int rc = forward(m, bt, loss, err);

	if (rc != HW_OK)
		return model_backend_cause(m->be, rc, err);
	m->be->ops->memset(m->be, m->grads, 0, sizeof(float) * (size_t) m->pt.numel);
	m->be->ops->memset(m->be, m->dx, 0, sizeof(float) * (size_t) m->N * m->D);
	hw_tape_backward(&m->tape, m);
	return HW_OK;
}

int
hw_model_optimizer_step(HwModel *m, float *gnorm, float *lr, HwError *err)
{
	if (m->frozen)
		return hw_error_set(err, HW_ERR_INVALID, "a frozen (serving) model cannot be trained");
	if (m->ema_swapped || m->ema_adopted)
		return hw_error_set(err, HW_ERR_INVALID, "the model %s: it cannot be trained",
							m->ema_adopted ? "is loaded to predict (its parameter average adopted or dropped)"
							: "reads its parameter average (swapped in)");
	int rc = hw_optim_step(m->be, &m->cfg, m->pt.p, m->pt.n, m->params, m->grads, m->m1, m->m2,
						   m->muon_work, m->step + 1, gnorm, lr, err);

	if (rc == HW_OK)
	{
		m->step++;
		if (m->ema)
		{
			float d = hw_ema_weight(m->cfg.ema_decay, m->step);

			/* ema = d * ema + (1 - d) * params */
			m->be->ops->axpby(m->be, m->ema, 1.0f - d, m->params, d, (size_t) m->pt.numel);
		}
	}
	return rc == HW_OK ? rc : model_backend_cause(m->be, rc, err);
}

int
hw_model_train_step(HwModel *m, const HwBatch *bt, HwStepResult *res, HwError *err)
{
	float loss = 0, gn = 0, lr = 0;
	int   rc;

	memset(res, 0, sizeof(*res));
	if ((rc = hw_model_forward_backward(m, bt, &loss, err)) != HW_OK)
		return rc;
	res->loss = loss;
	rc = hw_model_optimizer_step(m, &gn, &lr, err);
	res->grad_norm = gn;
	res->lr = lr;
	res->step = m->step;
	return rc;
}


int
hw_model_eval(HwModel *m, const HwBatch *bt, float *loss, HwPredictions *pred, HwError *err)
{
	int rc = forward(m, bt, loss, err);

	if (rc != HW_OK)
		return model_backend_cause(m->be, rc, err);
	if (!pred)
		return HW_OK;
	return model_decode_predictions(m, pred, true, err);
}
