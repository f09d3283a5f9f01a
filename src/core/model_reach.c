/*
 * model_reach.c: the serving forward's receptive field.
 *
 * Only a sequence's target cell reaches the heads, and an attention
 * sublayer's output at a cell depends only on the cells its mask lets that
 * cell read (attention.h: its own row and its parents' rows, the rows that
 * point at it, its column); an FFN's only on the cell itself.  Walking the
 * stages of the forward backward from the target gives, for each stage, the
 * cells whose output can still reach the prediction.  On the football
 * player task (small preset, S = 256) the outputs needed are 4 cells in
 * the last layer, 8 to 75 in the layer below, 125 at the FFN under it and
 * nearly all 256 further down, so the serving forward
 * (model_infer.c) computes the late stages' queries, gates, output
 * projections and FFNs on those cells alone, and the keys and values on the
 * cells those read (in place: the attention kernels read them by
 * position).
 *
 * Stages in forward order: k = l * (A + 1) + s, s < A the attention
 * sublayers (sub_masks), s == A the layer's FFN.  The model's last
 * attention sublayer and last FFN already run on the target cells alone
 * (model_infer.c infer_last_attention), so the lists cover the stages
 * of the last REACH_LAYERS layers before them.  A sequence is pruned at a
 * stage when at most three quarters of its S cells are needed there;
 * otherwise its list is all its S cells in order.  Which stages run on
 * lists does not depend on the batch, and a sequence's rows there are
 * products of its own list's shape, so a prediction is the same alone and
 * in any batch (with other last bits than the whole forward's in fp32:
 * other GEMM shapes).
 */
#include "core/model_internal.h"

#include <stdlib.h>
#include <string.h>

/* the layers whose stages run on cell lists: the last two.  Below them most
 * sequences need most of their cells, and a stage on lists that needs them
 * all still pays a split projection (and copies when some sequence of the
 * batch is pruned): with three layers two football tasks served faster,
 * the third and the shop's cell task slower (docs/BENCHMARKS.md). */
#define REACH_LAYERS 2

/* one sequence's data for the walk (host arrays of the batch) */
typedef struct ReachSeq
{
	int             S, R;
	const int32_t  *col;      /* [S] column ids */
	const uint16_t *row;      /* [S] sequence-local rows */
	const uint8_t  *pad;      /* [S] */
	const uint8_t  *adj;      /* [R,R] fk_adj: adj[r*R + q]: row r points at row q */
	uint8_t        *need;     /* [S] the cells needed after the current stage */
	uint8_t        *rows, *rows2;   /* [R] scratch */
	uint8_t        *colmark;  /* [ncols] scratch, zero between calls */
} ReachSeq;

/* need |= the cells that the needed cells read through mask kind */
static void
add_reads(ReachSeq *q, HwMaskKind kind)
{
	int S = q->S, R = q->R;

	if (kind == HW_MASK_COLUMN)
	{
		for (int i = 0; i < S; i++)
			if (q->need[i])
				q->colmark[q->col[i]] = 1;
		for (int j = 0; j < S; j++)
			if (!q->pad[j] && q->colmark[q->col[j]])
				q->need[j] = 1;
		for (int i = 0; i < S; i++)
			q->colmark[q->col[i]] = 0;
		return;
	}
	memset(q->rows, 0, R);
	memset(q->rows2, 0, R);
	for (int i = 0; i < S; i++)
		if (q->need[i])
			q->rows[q->row[i]] = 1;
	for (int r = 0; r < R; r++)
	{
		if (!q->rows[r])
			continue;
		for (int p = 0; p < R; p++)
		{
			/* OUTBOUND: i reads row(i) and the rows it points at; INBOUND:
			 * the rows pointing at row(i); FULL: every row */
			bool out = p == r || q->adj[(int64_t) r * R + p];
			bool in = q->adj[(int64_t) p * R + r];

			if (kind == HW_MASK_FULL || (kind == HW_MASK_OUTBOUND ? out : in))
				q->rows2[p] = 1;
		}
	}
	for (int j = 0; j < S; j++)
		if (!q->pad[j] && q->rows2[q->row[j]])
			q->need[j] = 1;
}

/* the host and device lists, and the residual buffers zeroed, once */
static int
reach_alloc(HwModel *m, HwError *err)
{
	int     nst = m->L * (m->A + 1);
	size_t  ncell = (size_t) nst * m->Nmax;

	if (m->h_reach_cell)
		return HW_OK;
	m->h_reach_off = malloc(sizeof(int32_t) * (size_t) nst * (m->Bmax + 1));
	m->h_reach_cell = malloc(sizeof(int32_t) * ncell);
	m->d_reach_cell = m->be->ops->alloc(m->be, sizeof(int32_t) * ncell);
	if (!m->h_reach_off || !m->h_reach_cell || !m->d_reach_cell)
		return hw_error_set(err, HW_ERR_NOMEM, "could not allocate the serving forward's cell lists (%zu cells)",
							ncell);
	/* a pruned stage writes only its cells' rows of the residual stream, keys
	 * and values; the other rows keep older values, which the attention
	 * weighs by exactly zero, so they must be finite: zero them once */
	for (int i = 0; i < m->L * m->A; i++)
	{
		m->be->ops->memset(m->be, m->sa[i].x_in, 0, sizeof(float) * (size_t) m->Nmax * m->D);
		m->be->ops->memset(m->be, m->sa[i].kn, 0, sizeof(float) * (size_t) m->Nmax * m->D);
		m->be->ops->memset(m->be, m->sa[i].v, 0, sizeof(float) * (size_t) m->Nmax * m->D);
	}
	for (int l = 0; l < m->L; l++)
		m->be->ops->memset(m->be, m->fa[l].x_in, 0, sizeof(float) * (size_t) m->Nmax * m->D);
	m->be->ops->memset(m->be, m->x_final, 0, sizeof(float) * (size_t) m->Nmax * m->D);
	return HW_OK;
}

/* sequence b's lists of stages k0 down to k1 (appended at each stage's end) */
static void
walk_sequence(HwModel *m, ReachSeq *q, int b, int k0, int k1)
{
	int      S = q->S, A = m->A;
	int32_t *off = m->h_reach_off, *cell = m->h_reach_cell;
	bool     few = true;

	memset(q->need, 0, S);
	q->need[m->h_tidx[b] - b * S] = 1;
	add_reads(q, sub_masks[A - 1]);        /* the last attention sublayer's reads */
	for (int k = k0; k >= k1; k--)
	{
		int32_t *o = off + (int64_t) k * (m->B + 1), *c = cell + (int64_t) k * m->Nmax;
		int      n = 0, s = k % (A + 1);

		if (few)
		{
			for (int i = 0; i < S; i++)
				n += q->need[i];
			few = 4 * n <= 3 * S;
		}
		n = o[b];
		for (int i = 0; i < S; i++)
			if (!few || q->need[i])
				c[n++] = b * S + i;
		o[b + 1] = n;
		if (few && s < A)
			add_reads(q, sub_masks[s]);
	}
}

int
model_reach_plan(HwModel *m, const HwBatch *bt, HwError *err)
{
	const HwBackendOps *o = m->be->ops;
	int                 A = m->A, nst = m->L * (A + 1), k0 = nst - 3;   /* the stage before the last attention */
	int                 from = REACH_LAYERS * (A + 1) < nst ? nst - REACH_LAYERS * (A + 1) : 0;
	ReachSeq            q = {.S = m->S, .R = bt->R};
	int                 rc;

	m->reach_from = nst;
	if (k0 < 0 || m->full_tail || !o->scatter_rows || !o->attn_forward_cells || !o->attn_forward_rows)
		return HW_OK;
	if ((rc = reach_alloc(m, err)) != HW_OK)
		return rc;
	q.need = malloc(m->S + 2 * (size_t) bt->R + 2);
	q.colmark = calloc(m->ncols, 1);
	if (!q.need || !q.colmark)
	{
		free(q.need);
		free(q.colmark);
		return hw_error_set(err, HW_ERR_NOMEM, "out of host memory for the serving forward's cell lists");
	}
	q.rows = q.need + m->S;
	q.rows2 = q.rows + bt->R + 1;
	for (int k = from; k <= k0; k++)
		m->h_reach_off[(int64_t) k * (m->B + 1)] = 0;
	for (int b = 0; b < m->B; b++)
	{
		int64_t c0 = (int64_t) b * m->S;

		q.col = bt->column_ids + c0;
		q.row = bt->seq_row_ids + c0;
		q.pad = bt->is_padding + c0;
		q.adj = bt->fk_adj + (int64_t) b * bt->R * bt->R;
		walk_sequence(m, &q, b, k0, from);
	}
	/* which stages run on lists is the model's, not the batch's: a
	 * sequence's bits must not depend on the batch around it */
	m->reach_from = from;
	for (int k = m->reach_from; k <= k0; k++)
		o->memcpy_h2d(m->be, m->d_reach_cell + (int64_t) k * m->Nmax, m->h_reach_cell + (int64_t) k * m->Nmax,
					  sizeof(int32_t) * m->h_reach_off[(int64_t) k * (m->B + 1) + m->B]);
	free(q.need);
	free(q.colmark);
	return HW_OK;
}

int
hw_model_reach_cells(const HwModel *m, int k, int b, int32_t *cells)
{
	int            nst = m->L * (m->A + 1);
	const int32_t *off;

	if (!m->h_reach_off || k < m->reach_from || k > nst - 3 || b < 0 || b >= m->B)
		return -1;
	off = m->h_reach_off + (int64_t) k * (m->B + 1);
	if (cells)
		memcpy(cells, m->h_reach_cell + (int64_t) k * m->Nmax + off[b], sizeof(int32_t) * (off[b + 1] - off[b]));
	return off[b + 1] - off[b];
}
