/*
 * attention.h: masked multi-head attention over a cell sequence, block-sparse.
 *
 * Contract between the model (which computes Q, K, V projections, QK-norm and
 * the per-head scale) and the attention kernel (owner: attention.c).
 *
 * Masks (one per attention sublayer), never materialised as [B,S,S]:
 *   COLUMN   i->j allowed iff column_ids[i] == column_ids[j]
 *   OUTBOUND i->j allowed iff row(i) == row(j) or fk_adj[b, row(i), row(j)]
 *   INBOUND  i->j allowed iff fk_adj[b, row(j), row(i)]
 *   FULL     any pair
 * each AND not padding on both sides, OR i == j (identity diagonal, so no
 * softmax row is empty).  row(i) = seq_row_ids[b,i].
 *
 * Arithmetic: logits = q . k (the caller has already L2-normalised q and k
 * and multiplied q by tau_h / sqrt(d_head)); masked pairs contribute exactly
 * nothing (equivalent to a -1e9 fill in fp32); softmax in fp32.
 *
 * Block-sparse: the kernel visits positions in the order of `perm` (col_perm
 * for COLUMN, out_perm for OUTBOUND, in_perm for INBOUND; identity allowed for
 * FULL), in tiles, skips tiles with no allowed pair (computed on the fly from
 * seq_row_ids / fk_adj / column_ids), and uses online softmax; cost follows
 * the number of allowed pairs, not S^2.
 */
#ifndef HW_ATTENTION_H
#define HW_ATTENTION_H

#include "core/hw_common.h"

typedef enum HwMaskKind
{
	HW_MASK_COLUMN = 0,
	HW_MASK_OUTBOUND = 1,
	HW_MASK_INBOUND = 2,
	HW_MASK_FULL = 3
} HwMaskKind;

/* The batch tensors the masks are computed from (all borrowed). */
typedef struct HwAttnMaskInfo
{
	int32_t          B, S, R;
	const int32_t   *column_ids;   /* [B,S] */
	const uint16_t  *seq_row_ids;  /* [B,S] */
	const uint8_t   *is_padding;   /* [B,S] */
	const uint8_t   *fk_adj;       /* [B,R,R] */
	const uint16_t  *perm;         /* [B,S] permutation for this mask kind; NULL = identity */
} HwAttnMaskInfo;

/* Precomputed tile plan (which tiles of the permuted sequence have allowed
 * pairs); build once per batch and mask kind, reuse for every layer and head
 * and for backward.  Opaque; owned by attention.c. */
typedef struct HwAttnPlan HwAttnPlan;

/* Tile edge (positions) of the plan: visited tile pairs are HW_ATTN_TILE^2 cells. */
#define HW_ATTN_TILE 16

HwAttnPlan *attn_plan_create(const HwAttnMaskInfo *info, HwMaskKind kind, HwError *err);
void        attn_plan_free(HwAttnPlan *plan);
/* Number of allowed (i,j) pairs and of visited tile pairs, for benchmarks. */
int64_t     attn_plan_allowed_pairs(const HwAttnPlan *plan);
int64_t     attn_plan_visited_tile_pairs(const HwAttnPlan *plan);

/*
 * Forward.  q, k, v, out: [B, S, H, dh] fp32 (row-major, head-interleaved, as
 * they come out of the projection GEMM [B*S, H*dh]).  lse: [B, H, S] fp32
 * log-sum-exp per query, saved for backward.  Threads: OpenMP over (b, h),
 * one thread per (b, h) in a fixed tile order; deterministic whatever the
 * thread count (no atomics, fixed summation order).  Uses the OpenMP team
 * size in effect (omp_set_num_threads / OMP_NUM_THREADS).
 */
void attn_block_sparse_forward(float *out, float *lse,
							   const float *q, const float *k, const float *v,
							   const HwAttnPlan *plan, int H, int dh);

/* The serving forward (inference) on sequences [b0, b0 + nb) alone (a
 * chunk whose q, k, v were just computed, still in cache; 0 and B: the
 * whole batch): their rows of out and lse, the same bits whatever the
 * range; the pointers are the whole batch's.  On the column, outbound and
 * inbound masks each query computes its allowed keys alone (by lists: a
 * query there reads a few keys of each tile it visits), on the full mask
 * the tiles; within fp32 rounding of attn_block_sparse_forward. */
void attn_block_sparse_forward_seqs(float *out, float *lse,
									const float *q, const float *k, const float *v,
									const HwAttnPlan *plan, int b0, int nb, int H, int dh);

/* Forward of one query cell per batch element (inference: only the target
 * cell's row reaches the heads): out[b, :] (=) [B, H*dh] row cell[b] (a flat
 * index b*S + position) of what the serving forward (_seqs) writes, bit
 * for bit; q [B, H*dh] holds those cells' query rows, k and v are whole. */
void attn_block_sparse_forward_rows(float *out, const float *q, const float *k, const float *v,
									const HwAttnPlan *plan, const int32_t *cell, int H, int dh);

/* Forward of a list of query cells (inference: the cells whose output can
 * still reach a target): for sequence b the cells cell[off[b] ..
 * off[b+1]) (flat b*S + position, distinct, off [B+1] host memory; NULL:
 * cell[b] alone, as attn_block_sparse_forward_rows); out and q hold their
 * rows [n, H*dh] in the list's order; each out row is the bits of what
 * the serving forward (_seqs) writes for that cell; k and v are whole.
 * Sequences [b0, b0 + nb) alone (nb 0: all; with off only), out and q
 * still indexed by list entry. */
void attn_block_sparse_forward_cells(float *out, const float *q, const float *k, const float *v,
									 const HwAttnPlan *plan, const int32_t *off, const int32_t *cell, int b0, int nb,
									 int H, int dh);

/* Backward: dq, dk, dv [B,S,H,dh] are OVERWRITTEN (not accumulated).
 * dout [B,S,H,dh]; out and lse from the forward. */
void attn_block_sparse_backward(float *dq, float *dk, float *dv,
								const float *dout, const float *out, const float *lse,
								const float *q, const float *k, const float *v,
								const HwAttnPlan *plan, int H, int dh);

/* Naive references (materialise the mask per row; O(S^2)); test oracles. */
bool attn_mask_allowed(const HwAttnMaskInfo *info, HwMaskKind kind, int b, int i, int j);
void attn_dense_reference_forward(float *out, float *lse,
								  const float *q, const float *k, const float *v,
								  const HwAttnMaskInfo *info, HwMaskKind kind, int H, int dh);
void attn_dense_reference_backward(float *dq, float *dk, float *dv,
								   const float *dout, const float *out, const float *lse,
								   const float *q, const float *k, const float *v,
								   const HwAttnMaskInfo *info, HwMaskKind kind, int H, int dh);

#endif /* HW_ATTENTION_H */
