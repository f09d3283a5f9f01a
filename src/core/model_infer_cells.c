/*
 * model_infer_cells.c: the serving forward's stages on cell lists
 * (model_reach.c: the cells whose output can still reach a target).  A
 * listed cell's rows are gathered compact, computed, and scattered back;
 * the keys and values a stage's queries read come from the cells the stage
 * before listed.  Each entry runs a range of sequences [b0, b1): the whole
 * batch on the model's backend, or one sequence on a thread's own backend
 * (model_infer.c, a sequence per thread).  A range's compact rows start at
 * row b0 * S of the work buffers (entry j of the lists at row j + shift,
 * shift = b0 * S - off[b0] >= 0, since no sequence lists more than S
 * cells), so two ranges never share a row.  The same kernels on the same
 * rows either way: the same bits.
 */
#include "core/model_infer_internal.h"

#include <stdbool.h>

/* Sequences [b0, b1) of stage k's lists */
typedef struct CellSpan
{
	const int32_t *off;     /* [B+1] host: the stage's list offsets */
	const int32_t *cell;    /* device: the cells, flat b*S + position */
	int            b0, b1;
	int64_t        first;   /* off[b0]: the range's first entry */
	int            n;       /* off[b1] - off[b0] entries */
	int64_t        base;    /* b0 * S: the compact row of entry `first` */
	bool           all;     /* every cell of the range listed: the lists are its rows in order */
} CellSpan;

static CellSpan
stage_span(const HwModel *m, int k, int b0, int b1)
{
	CellSpan sp = {.off = m->h_reach_off + (int64_t) k * (m->B + 1), .cell = m->d_reach_cell + (int64_t) k * m->Nmax,
				   .b0 = b0, .b1 = b1, .base = (int64_t) b0 * m->S};

	sp.first = sp.off[b0];
	sp.n = (int) (sp.off[b1] - sp.first);
	sp.all = sp.n == (b1 - b0) * m->S;
	return sp;
}

/*
 * A layer GEMM on a span's compact rows: A and C from the span's first row.
 * On packed weights one call (a row's bits never depend on the call); else
 * (the whole batch only) one product per sequence, of its list's height
 * (gemm_rows_ragged), or one call.
 */
static void
span_gemm(HwModel *m, HwBackend *be, const CellSpan *sp, int slot, int n0, int N, int K, const float *A, int lda,
		  const float *W, float beta, float *C, int ldc)
{
	const HwBackendOps *o = be->ops;

	if (m->pk)
		infer_packed_gemm(m, be, slot, sp->n, n0, N, K, A, lda, beta, C, ldc);
	else if (o->gemm_rows_ragged)
		o->gemm_rows_ragged(be, sp->b1 - sp->b0, sp->off + sp->b0, N, K, A, lda, W + (size_t) n0 * K, beta, C, ldc);
	else
		o->gemm(be, false, true, sp->n, N, K, 1.0f, A, lda, W + (size_t) n0 * K, K, beta, C, ldc);
}

/* [k|v] of n normed rows xn [n,D] (rows r0 .. of the norms' scratch) into
 * kn, v [n,D]: the projection's k|v columns in the [n,4D] rows of qkvg,
 * then QK-norm of those parts; in chunks of rows on packed weights */
static void
keys_values_rows(HwModel *m, HwBackend *be, const CellSpan *sp, int l, int s, const float *xn, int64_t r0, int n,
				 float *kn, float *v, float *qkvg)
{
	SubAct    *a = &m->sa[l * m->A + s];
	SubParams *p = &m->sp[l * m->A + s];
	int        D = m->D, H = m->H, ch = infer_chunk_rows(m);

	if (ch >= n || !m->pk)
	{
		if (sp)
			span_gemm(m, be, sp, PK_W4(m, l, s), D, 2 * D, D, xn, D, P(p->w4), 0.0f, qkvg + D, 4 * D);
		else if (m->pk)
			infer_packed_gemm(m, be, PK_W4(m, l, s), n, D, 2 * D, D, xn, D, 0.0f, qkvg + D, 4 * D);
		else
			infer_gemm_blocks(m, n / m->S, m->S, 2 * D, D, xn, D, P(p->w4) + (size_t) D * D, 0.0f, qkvg + D, 4 * D);
		be->ops->qknorm_forward(be, NULL, kn, v, a->qnorm + r0 * H, a->knorm + r0 * H, qkvg, P(p->tau), n, H, m->dh);
		return;
	}
	for (int c0 = 0; c0 < n; c0 += ch)
	{
		int    nc = n - c0 < ch ? n - c0 : ch;
		size_t rd = (size_t) c0 * D;

		infer_packed_gemm(m, be, PK_W4(m, l, s), nc, D, 2 * D, D, xn + rd, D, 0.0f, qkvg + (size_t) c0 * 4 * D + D,
						  4 * D);
		be->ops->qknorm_forward(be, NULL, kn + rd, v + rd, a->qnorm + (r0 + c0) * H, a->knorm + (r0 + c0) * H,
								qkvg + (size_t) c0 * 4 * D, P(p->tau), nc, H, m->dh);
	}
}

/*
 * The normed rows m->xn and the keys and values a->kn, a->v of attention
 * sublayer s of layer l for sequences [b0, b1): for every cell when the
 * stage before (kin) ran whole or listed all of them, else for its listed
 * cells alone (the only ones this sublayer's queries read), normed where
 * they lie compact and scattered into place.  QK-norm runs on the k and v
 * parts alone (the q columns are not set).
 */
void
infer_keys_values(HwModel *m, HwBackend *be, int l, int s, int kin, int b0, int b1)
{
	const HwBackendOps *o = be->ops;
	SubAct             *a = &m->sa[l * m->A + s];
	SubParams          *p = &m->sp[l * m->A + s];
	int                 D = m->D, S = m->S;
	int64_t             r0 = (int64_t) b0 * S;
	bool                listed = kin >= m->reach_from;
	CellSpan            sp = listed ? stage_span(m, kin, b0, b1) : (CellSpan) {0};

	if (!listed || sp.all)
	{
		int n = (b1 - b0) * S;

		o->rmsnorm_forward(be, m->xn + r0 * D, a->rstd + r0, a->x_in + r0 * D, P(p->norm_g), n, D);
		keys_values_rows(m, be, NULL, l, s, m->xn + r0 * D, r0, n, a->kn + r0 * D, a->v + r0 * D,
						 a->qkvg + r0 * 4 * D);
		return;
	}
	/* the listed rows alone (dkn holds their inputs until qknorm writes it) */
	o->gather_rows(be, m->dkn + sp.base * D, a->x_in, sp.cell + sp.first, sp.n, D);
	o->rmsnorm_forward(be, m->dxn + sp.base * D, a->rstd + sp.base, m->dkn + sp.base * D, P(p->norm_g), sp.n, D);
	keys_values_rows(m, be, &sp, l, s, m->dxn + sp.base * D, sp.base, sp.n, m->dkn + sp.base * D,
					 m->dv + sp.base * D, m->dqkvg + sp.base * 4 * D);
	o->scatter_rows(be, a->kn, m->dkn + sp.base * D, sp.cell + sp.first, sp.n, D);
	o->scatter_rows(be, a->v, m->dv + sp.base * D, sp.cell + sp.first, sp.n, D);
}

/* the listed cells' queries: q and gp columns of the projection into qg
 * [n,4D], qs [n,D] their QK-normed q (n rows of xn_c; norms' scratch from
 * row base) */
static void
span_queries(HwModel *m, HwBackend *be, const CellSpan *sp, int l, int s, const float *xn_c, float *qg, float *qs)
{
	SubAct    *a = &m->sa[l * m->A + s];
	SubParams *p = &m->sp[l * m->A + s];
	int        D = m->D, H = m->H, n = sp->n, ch = infer_chunk_rows(m), slot = PK_W4(m, l, s);

	if (ch >= n || !m->pk)
	{
		span_gemm(m, be, sp, slot, 0, D, D, xn_c, D, P(p->w4), 0.0f, qg, 4 * D);
		span_gemm(m, be, sp, slot, 3 * D, D, D, xn_c, D, P(p->w4), 0.0f, qg + 3 * D, 4 * D);
		be->ops->qknorm_forward(be, qs, NULL, NULL, a->qnorm + sp->base * H, a->knorm + sp->base * H, qg, P(p->tau),
								n, H, m->dh);
		return;
	}
	for (int c0 = 0; c0 < n; c0 += ch)
	{
		int    nc = n - c0 < ch ? n - c0 : ch;
		size_t rd = (size_t) c0 * D;
		float *qgc = qg + (size_t) c0 * 4 * D;

		infer_packed_gemm(m, be, slot, nc, 0, D, D, xn_c + rd, D, 0.0f, qgc, 4 * D);
		infer_packed_gemm(m, be, slot, nc, 3 * D, D, D, xn_c + rd, D, 0.0f, qgc + 3 * D, 4 * D);
		be->ops->qknorm_forward(be, qs + rd, NULL, NULL, a->qnorm + (sp->base + c0) * H,
								a->knorm + (sp->base + c0) * H, qgc, P(p->tau), nc, H, m->dh);
	}
}

/*
 * Attention sublayer s of layer l on stage k's cells of sequences [b0, b1)
 * into those rows of xout: the keys and values of the cells they read (in
 * place: the attention reads them by position), the listed cells' query,
 * gate, attention, output projection and gated residual, [n, .] compact,
 * scattered into xout at the end.  The other rows of xout keep older values
 * that no later stage reads.  When every cell of the range is listed the
 * compact rows are the buffers' own rows: the same calls without the
 * copies (the same bits either way).
 */
void
infer_attention_cells(HwModel *m, HwBackend *be, int l, int s, int k, float *xout, int b0, int b1)
{
	const HwBackendOps *o = be->ops;
	SubAct             *a = &m->sa[l * m->A + s];
	SubParams          *p = &m->sp[l * m->A + s];
	int                 D = m->D, H = m->H;
	CellSpan            sp = stage_span(m, k, b0, b1);
	int64_t             rb = sp.base * D, shift = sp.base - sp.first;
	float              *qg = m->dqkvg + sp.base * 4 * D;                 /* [n,4D]: q and gp columns */
	float              *qs_c = m->dqs + rb, *att_c = m->datt + rb, *o_c = m->dO + rb;   /* [n,D] */
	float              *xn_c = sp.all ? m->xn + rb : m->dxn + rb;
	float              *xin_c = sp.all ? a->x_in + rb : m->dkn + rb;
	float              *out_c = sp.all ? xout + rb : m->dxn + rb;        /* (dxn reused: xn_c is consumed) */

	infer_keys_values(m, be, l, s, k - 1, b0, b1);
	if (!sp.all)
	{
		/* the listed rows' inputs, normed where they lie compact */
		o->gather_rows(be, xin_c, a->x_in, sp.cell + sp.first, sp.n, D);
		o->rmsnorm_forward(be, xn_c, a->rstd + sp.base, xin_c, P(p->norm_g), sp.n, D);
	}
	span_queries(m, be, &sp, l, s, xn_c, qg, qs_c);
	/* the lists' entries from the range's first: out and q by entry */
	o->attn_forward_cells(be, m->datt + shift * D, m->dqs + shift * D, a->kn, a->v, m->plans[s], sp.off, sp.cell, b0,
						  b1 - b0, H, m->dh);
	span_gemm(m, be, &sp, PK_WO(m, l, s), 0, D, D, att_c, D, P(p->wo), 0.0f, o_c, D);
	o->gate_residual_forward(be, out_c, xin_c, qg + 3 * D, 4 * D, o_c, sp.n, D);
	if (!sp.all)
		o->scatter_rows(be, xout, out_c, sp.cell + sp.first, sp.n, D);
}

/* the FFN of layer l (not the last) on stage k's cells of sequences [b0,
 * b1) into those rows of xout; on packed weights in chunks of rows, each
 * chunk's intermediates at its own rows */
void
infer_ffn_cells(HwModel *m, HwBackend *be, int l, int k, float *xout, int b0, int b1)
{
	const HwBackendOps *o = be->ops;
	SubAct             *a = &m->fa[l];
	FfnParams          *p = &m->fp[l];
	int                 D = m->D, F = m->F, ch = infer_chunk_rows(m);
	CellSpan            sp = stage_span(m, k, b0, b1);
	int64_t             rb = sp.base * D;
	float              *xin_c = sp.all ? a->x_in + rb : m->dkn + rb, *out_c = sp.all ? xout + rb : m->dxn + rb;

	if (!sp.all)
		o->gather_rows(be, xin_c, a->x_in, sp.cell + sp.first, sp.n, D);
	if (!m->pk)
	{
		o->rmsnorm_forward(be, m->xn + rb, a->rstd + sp.base, xin_c, P(p->norm_g), sp.n, D);
		span_gemm(m, be, &sp, PK_WGU(m, l), 0, 2 * F, D, m->xn + rb, D, P(p->wgu), 0.0f,
				  a->qkvg + sp.base * 2 * F, 2 * F);
		o->swiglu_forward(be, m->hbuf + sp.base * F, a->qkvg + sp.base * 2 * F, sp.n, F);
		o->memcpy_d2d(be, out_c, xin_c, sizeof(float) * (size_t) sp.n * D);
		span_gemm(m, be, &sp, PK_W2(m, l), 0, D, F, m->hbuf + sp.base * F, F, P(p->w2), 1.0f, out_c, D);
	}
	else
		for (int c0 = 0; c0 < sp.n; c0 += ch)
		{
			int     nc = sp.n - c0 < ch ? sp.n - c0 : ch;
			int64_t r = sp.base + c0;

			infer_ffn_rows(m, be, l, (int) r, nc, xin_c + (size_t) c0 * D, out_c + (size_t) c0 * D, m->xn + r * D,
						   a->qkvg + r * 2 * F, m->hbuf + r * F);
		}
	if (!sp.all)
		o->scatter_rows(be, xout, out_c, sp.cell + sp.first, sp.n, D);
}
