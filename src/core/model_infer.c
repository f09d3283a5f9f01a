/*
 * model_infer.c: the serving forward (hw_model_predict).
 *
 * The training forward (model_forward.c) with the same backend entries
 * in the same order on the same buffers, minus what only training needs: no
 * tape records, no loss, no per-op timing.  One shortcut: only the target
 * cell's residual stream reaches the heads, so the last attention sublayer
 * computes keys and values for every cell but the query, gate, attention,
 * output projection and gated residual for the B target cells only
 * (gathered), and the last FFN runs on those B rows.  The stages before
 * run on the cells whose output can still reach a target (model_reach.c),
 * when those are few; the first layers stay whole, on packed weights a
 * sequence per thread through all the stages before the last attention
 * (infer_sequence_stages) where the backend runs items in parallel, else a
 * chunk of sequences at a time (the attention reads q, k, v in cache); the
 * stages on cell lists are model_infer_cells.c.
 *
 * Precision: the layers' GEMMs in fp32 (per-sequence products) or, after
 * hw_model_set_inference_precision, on packed weights in fp32 or bf16
 * (model_precision.c); the rest stays fp32.  Every row is computed by the
 * same kernels whatever the other
 * rows of the batch (the backend's GEMM blocks and row-wise entries), so a
 * sequence's predictions are bit-identical alone or in any batch, in either
 * precision (test_model_infer.c checks it).  On a device backend (CUDA,
 * bf16 tensor-core GEMMs) a row's bits may depend on its batch; run to run
 * they are the same.
 */
#include "core/model_infer_internal.h"

#include <stdbool.h>

/*
 * C[nb*rows, N] (=, or += with beta 1) A @ W[N,K]^T (A rows of stride lda)
 * as nb backend GEMM calls of `rows` rows each: one call per sequence
 * (rows = S) or per row (rows = 1).  BLAS kernels give a row other bits by
 * its position inside the call and by the call's shape (OpenBLAS's Haswell
 * sgemm: rows 6-11 of every 12 are summed differently from rows 0-5, and a
 * tail of rows differently again), so a row must always sit at the same
 * place of a call of the same shape: then a sequence gets the same bits
 * alone and in any batch, whatever the thread count (the backend splits a
 * call by its shape only).  That is the CPU backend's gemm_rows_batched.
 */
void
infer_gemm_blocks(HwModel *m, int nb, int rows, int N, int K, const float *A, int lda, const float *W,
				  float beta, float *C, int ldc)
{
	if (m->be->ops->gemm_rows_batched)
	{
		m->be->ops->gemm_rows_batched(m->be, nb, rows, N, K, A, lda, W, beta, C, ldc);
		return;
	}
	/* a device backend (no per-product entry): the nb blocks lie one after
	 * another, so one call of nb*rows rows computes them all; rows then need
	 * not keep their bits across batches (run to run they do) */
	m->be->ops->gemm(m->be, false, true, nb * rows, N, K, 1.0f, A, lda, W, K, beta, C, ldc);
}

/*
 * A transformer layer's GEMM: C[M, N] (=, or += with beta 1) A[M, K] @
 * W[n0:n0+N, :]^T, M = nb*rows rows of stride lda.  With the model's packed
 * copies (m->pk, hw_model_set_inference_precision) one call, bf16 or fp32,
 * whose every row is computed alike whatever M (backend.h gemm_bf16,
 * gemm_f32_packed); else fp32 per-sequence products (infer_gemm_blocks).
 */
void
infer_packed_gemm(HwModel *m, HwBackend *be, int slot, int M, int n0, int N, int K, const float *A, int lda,
				  float beta, float *C, int ldc)
{
	const HwBackendOps *o = be->ops;

	(m->pk_bf16 ? o->gemm_bf16 : o->gemm_f32_packed)(be, M, N, K, A, lda, m->pk[slot], n0, beta, C, ldc);
}

static void
packed_gemm(HwModel *m, int slot, int M, int n0, int N, int K, const float *A, int lda, float beta, float *C,
			int ldc)
{
	infer_packed_gemm(m, m->be, slot, M, n0, N, K, A, lda, beta, C, ldc);
}

static void
layer_gemm(HwModel *m, int slot, int nb, int rows, int n0, int N, int K, const float *A, int lda, const float *W,
		   float beta, float *C, int ldc)
{
	if (m->pk)
		packed_gemm(m, slot, nb * rows, n0, N, K, A, lda, beta, C, ldc);
	else
		infer_gemm_blocks(m, nb, rows, N, K, A, lda, W + (size_t) n0 * K, beta, C, ldc);
}

/* e [B*S, D] += a side feature's rows A [B*S, K] @ W[D, K]^T: on the
 * weight's fp32 pack (one call, a row's bits its own) or per sequence */
static void
side_gemm(HwModel *m, int side, int K, const float *A, int64_t w_off)
{
	if (m->pk_side[side])
		m->be->ops->gemm_f32_packed(m->be, m->B * m->S, m->D, K, A, K, m->pk_side[side], 0, 1.0f, m->e, m->D);
	else
		infer_gemm_blocks(m, m->B, m->S, m->D, K, A, K, P(w_off), 1.0f, m->e, m->D);
}

/* projected tables [ncols|Uc|U, D], the encoder e [N,D] with its side
 * features, and the first residual stream rms(e) */
static void
infer_encoder(HwModel *m)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	int                 D = m->D, Dt = m->Dt, N = m->N;
	float              *x;

	o->gemm(be, false, true, m->ncols, D, Dt, 1.0f, m->col_table, Dt, P(m->o_col_w), Dt, 0.0f, m->colproj, D);
	o->add_bias(be, m->colproj, P(m->o_col_b), m->ncols, D);
	if (m->Uc > 0)
	{
		infer_gemm_blocks(m, m->Uc, 1, D, Dt, m->cat_rows, Dt, P(m->o_cat_w), 0.0f, m->catproj, D);
		o->add_bias(be, m->catproj, P(m->o_cat_b), m->Uc, D);
	}
	if (m->U > 0)
	{
		infer_gemm_blocks(m, m->U, 1, D, Dt, m->text_f32, Dt, P(m->o_text_w), 0.0f, m->textproj, D);
		o->add_bias(be, m->textproj, P(m->o_text_b), m->U, D);
	}
	{
		HwEncInputs in = { .stype = m->d_stype, .col = m->d_col, .is_null = m->d_is_null, .is_target = m->d_is_target,
						   .num = m->d_num, .ts = m->d_ts, .boolv = m->d_bool, .cat_local = m->d_cat_local,
						   .text_local = m->d_text_local };
		HwEncWeights w = {
			.colproj = m->colproj, .catproj = m->catproj, .textproj = m->textproj, .id_emb = P(m->o_id),
			.null_emb = P(m->o_null), .mask_emb = P(m->o_mask), .num_w = P(m->o_num_w), .num_b = P(m->o_num_b),
			.ts_w = P(m->o_ts_w), .ts_b = P(m->o_ts_b), .bool_emb = P(m->o_bool),
		};

		o->encoder_forward(be, m->e, &in, &w, N, D);
	}
	if (m->o_ts_rel >= 0)
		side_gemm(m, PK_SIDE_TREL, HW_REL_TIME_DIM, m->d_trel, m->o_ts_rel);
	if (m->o_link >= 0)
		side_gemm(m, PK_SIDE_LINK, HW_LINK_DIM, m->d_link, m->o_link);
	if (m->o_cnt >= 0)
		side_gemm(m, PK_SIDE_CNT, HW_CNT_DIM, m->d_cnt, m->o_cnt);
	if (m->o_cramp >= 0 && m->n_cramp > 0)
	{
		/* the compacted cells (model_internal.h), one block each: a cell's
		 * bits do not depend on the batch around it */
		infer_gemm_blocks(m, m->n_cramp, 1, D, HW_CRAMP_DIM, m->d_cramp, HW_CRAMP_DIM, P(m->o_cramp), 0.0f,
					m->d_cramp_y, D);
		o->scatter_add_rows(be, m->e, m->d_cramp_y, m->d_cramp_idx, m->n_cramp, D);
	}
	x = m->L > 0 ? m->sa[0].x_in : m->x_final;
	o->rmsnorm_forward(be, x, m->rstd0, m->e, P(m->o_enc_g), N, D);
}

/*
 * Rows per chunk of a sublayer's row-wise stages.  With packed layer
 * weights a row's bits never depend on the call, so the projections,
 * norms, SwiGLU and residuals run a chunk of rows at a time and their
 * intermediates ([rows, 4D], [rows, 2F]) stay in the cores' caches (512 rows
 * of the small preset's FFN: 3 MB, half on each of two cores) instead of
 * streaming [B*S, 2F] through memory.  A sublayer whose every cell is
 * computed runs whole by chunks of sequences (infer_attention_sublayer);
 * on cell lists the attention between the chunked stages runs on the whole
 * batch.  Smaller chunks lost more to the threads' start and
 * join than they gained (two cores, small preset: 128 rows 0.78 and 256
 * rows 0.88 of 512's rows/s, 1024 rows 0.97).  Without packed weights the
 * products are per sequence: one chunk.
 */
#define INFER_CHUNK_ROWS 512

int
infer_chunk_rows(const HwModel *m)
{
	return m->pk ? INFER_CHUNK_ROWS : m->N;
}

/* sublayer a's attention (plan s) on sequences [b0, b0 + nb): the
 * backend's serving forward where it has one (on the CPU the sparse masks'
 * list kernel, whose bits the target rows and cell lists share), else the
 * training forward on the whole batch (nb = B) */
static void
serving_attention(HwModel *m, HwBackend *be, int s, SubAct *a, int b0, int nb)
{
	const HwBackendOps *o = be->ops;

	if (o->attn_forward_seqs)
		o->attn_forward_seqs(be, a->att, a->lse, a->qs, a->kn, a->v, m->plans[s], b0, nb, m->H, m->dh);
	else
		o->attn_forward(be, a->att, a->lse, a->qs, a->kn, a->v, m->plans[s], m->H, m->dh);
}

/*
 * Attention sublayer s of layer l (not the model's last) on sequences
 * [b0, b0 + nb) into those rows of xout [N,D], on backend be: [q|k|v|gp] =
 * rms(x) @ W4^T, QK-norm, the attention, the output projection and the
 * gated residual; the range's [q|k|v|gp] rows in qkvg [nb*S,4D] and its
 * projected rows in o [nb*S,D].  The whole batch in one call per stage, a
 * chunk of sequences at a time (infer_attention_sublayer) or one sequence
 * on a thread's own backend (stages_of_sequence): the same kernels
 * on the same rows, the same bits.  Without packed weights be is the
 * model's and the range the whole batch (per-sequence products).
 */
static void
attention_sequences(HwModel *m, HwBackend *be, int l, int s, int b0, int nb, float *xout, float *qkvg, float *o)
{
	const HwBackendOps *ops = be->ops;
	SubAct             *a = &m->sa[l * m->A + s];
	SubParams          *p = &m->sp[l * m->A + s];
	int                 D = m->D, S = m->S, H = m->H, r0 = b0 * S, n = nb * S;
	size_t              rd = (size_t) r0 * D;

	ops->rmsnorm_forward(be, m->xn + rd, a->rstd + r0, a->x_in + rd, P(p->norm_g), n, D);
	if (m->pk)
		infer_packed_gemm(m, be, PK_W4(m, l, s), n, 0, 4 * D, D, m->xn + rd, D, 0.0f, qkvg, 4 * D);
	else
		infer_gemm_blocks(m, nb, S, 4 * D, D, m->xn + rd, D, P(p->w4), 0.0f, qkvg, 4 * D);
	ops->qknorm_forward(be, a->qs + rd, a->kn + rd, a->v + rd, a->qnorm + (size_t) r0 * H,
						a->knorm + (size_t) r0 * H, qkvg, P(p->tau), n, H, m->dh);
	serving_attention(m, be, s, a, b0, nb);
	if (m->pk)
		infer_packed_gemm(m, be, PK_WO(m, l, s), n, 0, D, D, a->att + rd, D, 0.0f, o, D);
	else
		infer_gemm_blocks(m, nb, S, D, D, a->att + rd, D, P(p->wo), 0.0f, o, D);
	ops->gate_residual_forward(be, xout + rd, a->x_in + rd, qkvg + 3 * D, 4 * D, o, n, D);
}

static void
infer_attention_sequences(HwModel *m, int l, int s, int b0, int nb, float *xout)
{
	SubAct *a = &m->sa[l * m->A + s];

	attention_sequences(m, m->be, l, s, b0, nb, xout, a->qkvg, a->o);
}

/*
 * Attention sublayer s of layer l (not the model's last) on every cell.
 * Without packed weights (or no more cells than a chunk) the whole batch
 * at once.  On packed weights, where the backend runs the attention on a
 * range of sequences, a chunk of sequences at a time (about chunk_rows
 * rows, one sequence at least): a sequence's attention reads its own rows
 * alone, so each chunk's q, k, v are read while still in cache (computed
 * for the whole batch first, the attention's per-head gathers waited on
 * memory).  Else in chunks of rows around the whole batch's attention: the
 * normed rows, q|k|v and QK-norm before it, the gate, output projection and
 * residual after it; a chunk's [q|k|v|gp] and projected rows in the first
 * rows of qkvg and o.
 */
static void
infer_attention_sublayer(HwModel *m, int l, int s, float *xout)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	SubAct             *a = &m->sa[l * m->A + s];
	SubParams          *p = &m->sp[l * m->A + s];
	int                 D = m->D, N = m->N, H = m->H, ch = infer_chunk_rows(m);
	int                 per = ch / m->S > 1 ? ch / m->S : 1;   /* sequences per chunk */

	if (ch >= N)
	{
		infer_attention_sequences(m, l, s, 0, m->B, xout);
		return;
	}
	if (o->attn_forward_seqs)
	{
		for (int b0 = 0; b0 < m->B; b0 += per)
			infer_attention_sequences(m, l, s, b0, m->B - b0 < per ? m->B - b0 : per, xout);
		return;
	}
	for (int r0 = 0; r0 < N; r0 += ch)
	{
		int    n = N - r0 < ch ? N - r0 : ch;
		size_t rd = (size_t) r0 * D;

		o->rmsnorm_forward(be, m->xn + rd, a->rstd + r0, a->x_in + rd, P(p->norm_g), n, D);
		packed_gemm(m, PK_W4(m, l, s), n, 0, 3 * D, D, m->xn + rd, D, 0.0f, a->qkvg, 4 * D);
		o->qknorm_forward(be, a->qs + rd, a->kn + rd, a->v + rd, a->qnorm + (size_t) r0 * H,
						  a->knorm + (size_t) r0 * H, a->qkvg, P(p->tau), n, H, m->dh);
	}
	o->attn_forward(be, a->att, a->lse, a->qs, a->kn, a->v, m->plans[s], H, m->dh);
	for (int r0 = 0; r0 < N; r0 += ch)
	{
		int    n = N - r0 < ch ? N - r0 : ch;
		size_t rd = (size_t) r0 * D;

		packed_gemm(m, PK_W4(m, l, s), n, 3 * D, D, D, m->xn + rd, D, 0.0f, a->qkvg + 3 * D, 4 * D);
		packed_gemm(m, PK_WO(m, l, s), n, 0, D, D, a->att + rd, D, 0.0f, a->o, D);
		o->gate_residual_forward(be, xout + rd, a->x_in + rd, a->qkvg + 3 * D, 4 * D, a->o, n, D);
	}
}

/*
 * The model's last attention sublayer, into m->dkn [B,D]: only the B target
 * cells' rows reach the heads from here, so the cells they read get their
 * keys and values (k|v columns of the projection) but only the target
 * cells get a query, a gate, attention, the output projection and the
 * gated residual.
 * Row-wise entries give a target row the bits of the full computation; the
 * GEMMs too in bf16 (a row's bits never depend on the call), in fp32 the
 * target rows' GEMMs are one-row calls (the same whatever the batch).
 * Without the backend's attn_forward_rows: full attention, then gathers.
 */
static void
infer_last_attention(HwModel *m, int l, int s)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	SubAct             *a = &m->sa[l * m->A + s];
	SubParams          *p = &m->sp[l * m->A + s];
	int                 D = m->D, N = m->N, B = m->B, slot = PK_W4(m, l, s);
	float              *tq = m->dqkvg;              /* [B,4D] the targets' [q|k|v|gp] */
	float              *xnt = m->dxn, *att_t = m->datt, *xin_t = m->dqs, *o_t = m->dO;   /* [B,D] */

	if (!o->attn_forward_rows)
	{
		o->rmsnorm_forward(be, m->xn, a->rstd, a->x_in, P(p->norm_g), N, D);
		layer_gemm(m, slot, B, m->S, 0, 4 * D, D, m->xn, D, P(p->w4), 0.0f, a->qkvg, 4 * D);
		o->qknorm_forward(be, a->qs, a->kn, a->v, a->qnorm, a->knorm, a->qkvg, P(p->tau), N, m->H, m->dh);
		serving_attention(m, be, s, a, 0, B);
		o->gather_rows(be, att_t, a->att, m->d_tidx, B, D);
		o->gather_rows(be, tq, a->qkvg, m->d_tidx, B, 4 * D);
	}
	else
	{
		/* the keys and values of the cells the targets read (every cell's,
		 * or the last stage list's); then the targets' q and gp from their
		 * normed rows (tq's k|v columns only feed qknorm's scratch) */
		infer_keys_values(m, be, l, s, l * (m->A + 1) + s - 1, 0, B);
		/* the targets' normed rows (m->xn holds every row's only when the
		 * keys were computed for every cell) */
		o->gather_rows(be, o_t, a->x_in, m->d_tidx, B, D);
		o->rmsnorm_forward(be, xnt, a->rstd, o_t, P(p->norm_g), B, D);
		layer_gemm(m, slot, B, 1, 0, D, D, xnt, D, P(p->w4), 0.0f, tq, 4 * D);
		layer_gemm(m, slot, B, 1, 3 * D, D, D, xnt, D, P(p->w4), 0.0f, tq + 3 * D, 4 * D);
		/* the targets' qs [B,D] into xin_t (qknorm on the B rows of tq: the
		 * q part alone; its norms of those rows go to scratch, unread) */
		o->qknorm_forward(be, xin_t, NULL, NULL, a->qnorm, a->knorm, tq, P(p->tau), B, m->H, m->dh);
		o->attn_forward_rows(be, att_t, xin_t, a->kn, a->v, m->plans[s], m->d_tidx, m->H, m->dh);
	}
	o->gather_rows(be, xin_t, a->x_in, m->d_tidx, B, D);
	layer_gemm(m, PK_WO(m, l, s), B, 1, 0, D, D, att_t, D, P(p->wo), 0.0f, o_t, D);
	o->gate_residual_forward(be, m->dkn, xin_t, tq + 3 * D, 4 * D, o_t, B, D);
}

/* xout [n,D] = xin + the FFN of layer l of xin [n,D] (rows r0 .. r0 + n
 * of the batch: their norms' rstd), on packed weights and backend be: the
 * normed rows in xn [n,D], [gate|up] in gu [n,2F], the hidden rows in h
 * [n,F] */
void
infer_ffn_rows(HwModel *m, HwBackend *be, int l, int r0, int n, const float *xin, float *xout, float *xn, float *gu,
			   float *h)
{
	const HwBackendOps *o = be->ops;
	FfnParams          *p = &m->fp[l];
	int                 D = m->D, F = m->F;

	o->rmsnorm_forward(be, xn, m->fa[l].rstd + r0, xin, P(p->norm_g), n, D);
	infer_packed_gemm(m, be, PK_WGU(m, l), n, 0, 2 * F, D, xn, D, 0.0f, gu, 2 * F);
	o->swiglu_forward(be, h, gu, n, F);
	o->memcpy_d2d(be, xout, xin, sizeof(float) * (size_t) n * D);
	infer_packed_gemm(m, be, PK_W2(m, l), n, 0, D, F, h, F, 1.0f, xout, D);
}

/* xout [R,D] = xin + the FFN of layer l of xin [R,D], on packed weights, a
 * chunk of rows at a time (chunk_rows): a chunk's normed, [gate|up] and
 * hidden rows in the first rows of xn, qkvg and hbuf */
static void
ffn_rows_chunked(HwModel *m, int l, int R, const float *xin, float *xout)
{
	int ch = infer_chunk_rows(m);

	for (int r0 = 0; r0 < R; r0 += ch)
	{
		int    n = R - r0 < ch ? R - r0 : ch;
		size_t rd = (size_t) r0 * m->D;

		infer_ffn_rows(m, m->be, l, r0, n, xin + rd, xout + rd, m->xn, m->fa[l].qkvg, m->hbuf);
	}
}

/* feed-forward sublayer of layer l; the last layer's runs on the B target
 * rows (m->dkn) and writes xt [B,D]; with packed weights the other layers'
 * in chunks of rows (ffn_rows_chunked) */
static void
infer_ffn_sublayer(HwModel *m, int l)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	SubAct             *a = &m->fa[l];
	FfnParams          *p = &m->fp[l];
	int                 D = m->D, F = m->F, N = m->N, B = m->B;
	bool                last = l == m->L - 1;
	int                 R = last ? B : N;                         /* rows: all cells, or the B targets */
	int                 ch = last ? R : infer_chunk_rows(m);
	const float        *xin = last ? m->dkn : a->x_in;          /* [R,D] */
	float              *xout = last ? m->xt : l + 1 < m->L ? m->sa[(l + 1) * m->A].x_in : m->x_final;

	if (ch >= R)
	{
		o->rmsnorm_forward(be, m->xn, a->rstd, xin, P(p->norm_g), R, D);
		layer_gemm(m, PK_WGU(m, l), B, R / B, 0, 2 * F, D, m->xn, D, P(p->wgu), 0.0f, a->qkvg, 2 * F);
		o->swiglu_forward(be, m->hbuf, a->qkvg, R, F);
		o->memcpy_d2d(be, xout, xin, sizeof(float) * (size_t) R * D);
		layer_gemm(m, PK_W2(m, l), B, R / B, 0, D, F, m->hbuf, F, P(p->w2), 1.0f, xout, D);
		return;
	}
	ffn_rows_chunked(m, l, R, xin, xout);
}

/* heads on the target positions xt [B,D] (L == 0: gathered from x_final):
 * Z [B, HW_HEAD_Z(D)], the ordinal head Zo and the category logits [B,K] */
static void
infer_heads(HwModel *m)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	int                 D = m->D, Dt = m->Dt, B = m->B, HZ = HW_HEAD_Z(m->D);

	if (m->L == 0)
		o->gather_rows(be, m->xt, m->x_final, m->d_tidx, B, D);
	o->rmsnorm_forward(be, m->hf, m->rstdf, m->xt, P(m->o_final_g), B, D);
	if (m->K > 0)
	{
		o->gemm(be, false, true, m->K, D, Dt, 1.0f, m->catblock, Dt, P(m->o_cat_w), Dt, 0.0f, m->E, D);
		o->add_bias(be, m->E, P(m->o_cat_b), m->K, D);
	}
	infer_gemm_blocks(m, B, 1, HZ, D, m->hf, D, P(m->o_head_w), 0.0f, m->Z, HZ);
	o->add_bias(be, m->Z, P(m->o_head_b), B, HZ);
	if (m->ord_levels > 0)
	{
		infer_gemm_blocks(m, B, 1, HW_ORD_LEVELS, D, m->hf, D, P(m->o_ord_w), 0.0f, m->Zo, HW_ORD_LEVELS);
		o->add_bias(be, m->Zo, P(m->o_ord_b), B, HW_ORD_LEVELS);
	}
	if (m->K > 0)
		infer_gemm_blocks(m, B, 1, m->K, D, m->Z + HW_HEAD_CAT, HZ, m->E, 0.0f, m->logits, m->K);
}

/* the input of the stage after stage k (forward order l*(A+1)+s, s == A
 * the FFN): the next sublayer's, or the model's final rows */
static float *
stage_output(HwModel *m, int k)
{
	int l = k / (m->A + 1), s = k % (m->A + 1);

	if (s + 1 < m->A)
		return m->sa[l * m->A + s + 1].x_in;
	if (s + 1 == m->A)
		return m->fa[l].x_in;
	return l + 1 < m->L ? m->sa[(l + 1) * m->A].x_in : m->x_final;
}

/* The stages that run a sequence per thread: every one before the last
 * attention sublayer (on the targets, one row a sequence: a batch's
 * products), on every cell or on cell lists.  0 without packed weights
 * (the products are per sequence, one call for the batch). */
static int
sequence_stage_count(const HwModel *m)
{
	if (!m->pk || m->L == 0)
		return 0;
	return (m->L - 1) * (m->A + 1) + m->A - 1;
}

/*
 * Stages [0, n) of sequence b alone, on a thread's own backend
 * (parallel_items): each stage's kernels on the sequence's rows, its
 * intermediates at those rows of the full-size buffers ([N,4D] qkvg, [N,D]
 * o and xn, [N,2F] and [N,F] of the FFN; a stage on cell lists, its
 * compact rows from row b * S: model_infer_cells.c), so that sequences on
 * other threads never share a row.  The same kernels on the same rows as
 * stage by stage (a sequence's attention reads its own rows alone; a
 * packed product's row is computed alike whatever the call), so the same
 * bits; and a sequence's rows stay in its core's cache from stage to
 * stage, with no join between stages.
 */
typedef struct SequenceStages
{
	HwModel *m;
	int      n;
} SequenceStages;

static void
stages_of_sequence(HwBackend *be, int b, void *arg)
{
	const SequenceStages *w = arg;
	HwModel              *m = w->m;
	int                   S = m->S, D = m->D, F = m->F, r0 = b * S;
	size_t                rd = (size_t) r0 * D;

	for (int k = 0; k < w->n; k++)
	{
		int    l = k / (m->A + 1), s = k % (m->A + 1);
		float *xout = stage_output(m, k);

		if (s < m->A && k >= m->reach_from)
			infer_attention_cells(m, be, l, s, k, xout, b, b + 1);
		else if (s < m->A)
			attention_sequences(m, be, l, s, b, 1, xout, m->sa[l * m->A + s].qkvg + 4 * rd, m->sa[l * m->A + s].o + rd);
		else if (k >= m->reach_from)
			infer_ffn_cells(m, be, l, k, xout, b, b + 1);
		else
			infer_ffn_rows(m, be, l, r0, S, m->fa[l].x_in + rd, xout + rd, m->xn + rd,
						   m->fa[l].qkvg + (size_t) r0 * 2 * F, m->hbuf + (size_t) r0 * F);
	}
}

/* the stages before the last attention sublayer (sequence_stage_count) a
 * sequence per thread, where the backend runs items in parallel; returns
 * how many stages ran (0: the stage-by-stage loop runs them all) */
static int
infer_sequence_stages(HwModel *m)
{
	SequenceStages w = {.m = m, .n = sequence_stage_count(m)};

	if (w.n == 0 || !m->be->ops->parallel_items ||
		!m->be->ops->parallel_items(m->be, m->B, stages_of_sequence, &w))
		return 0;
	return w.n;
}

static int
infer_forward(HwModel *m, const HwBatch *bt, HwError *err)
{
	int rc, done;

	if ((rc = model_prepare_batch(m, bt, err)) != HW_OK || (rc = model_packed_refresh(m, err)) != HW_OK ||
		(rc = model_reach_plan(m, bt, err)) != HW_OK)
		return rc;
	infer_encoder(m);
	done = infer_sequence_stages(m);
	for (int l = 0; l < m->L; l++)
	{
		float *next_x = l + 1 < m->L ? m->sa[(l + 1) * m->A].x_in : m->x_final;

		for (int s = 0; s < m->A; s++)
		{
			int    k = l * (m->A + 1) + s;
			float *xout = s + 1 < m->A ? m->sa[l * m->A + s + 1].x_in : m->fa[l].x_in;

			if (k < done)
				continue;
			if (l == m->L - 1 && s == m->A - 1)
				infer_last_attention(m, l, s);
			else if (k >= m->reach_from)
				infer_attention_cells(m, m->be, l, s, k, xout, 0, m->B);
			else
				infer_attention_sublayer(m, l, s, xout);
		}
		if (l * (m->A + 1) + m->A < done)
			continue;
		if (l < m->L - 1 && l * (m->A + 1) + m->A >= m->reach_from)
			infer_ffn_cells(m, m->be, l, l * (m->A + 1) + m->A, next_x, 0, m->B);
		else
			infer_ffn_sublayer(m, l);
	}
	infer_heads(m);
	return HW_OK;
}

int
hw_model_predict(HwModel *m, const HwBatch *bt, HwPredictions *pred, HwError *err)
{
	int rc = infer_forward(m, bt, err);

	if (rc != HW_OK)
		return model_backend_cause(m->be, rc, err);
	return model_decode_predictions(m, pred, false, err);
}
