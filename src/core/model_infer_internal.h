/*
 * model_infer_internal.h: what the serving forward's files share
 * (model_infer.c: the forward, its whole stages and tail; model_infer_cells.c:
 * the stages on cell lists).
 */
#ifndef HW_MODEL_INFER_INTERNAL_H
#define HW_MODEL_INFER_INTERNAL_H

#include "core/model_internal.h"

/* rows per chunk of a sublayer's row-wise stages (model_infer.c) */
int  infer_chunk_rows(const HwModel *m);

/* C[nb*rows, N] (=, or += with beta 1) A @ W[N,K]^T as nb products of
 * `rows` rows each on the model's backend (fp32 without packed weights: a
 * row's bits stay its own in any batch) */
void infer_gemm_blocks(HwModel *m, int nb, int rows, int N, int K, const float *A, int lda, const float *W,
					   float beta, float *C, int ldc);

/* C[M, N] (=, or += with beta 1) A[M, K] @ W[n0:n0+N, :]^T on the model's
 * packed copy of layer weight `slot`, on backend be */
void infer_packed_gemm(HwModel *m, HwBackend *be, int slot, int M, int n0, int N, int K, const float *A, int lda,
					   float beta, float *C, int ldc);

/* xout [n,D] = xin + the FFN of layer l of xin [n,D] (rows r0 .. r0 + n of
 * the batch, or of a list: the norms' rstd rows) on packed weights and
 * backend be; scratch xn [n,D], gu [n,2F], h [n,F] */
void infer_ffn_rows(HwModel *m, HwBackend *be, int l, int r0, int n, const float *xin, float *xout, float *xn,
					float *gu, float *h);

/*
 * The stages on cell lists (model_reach.c), on sequences [b0, b1) and
 * backend be: the whole batch (0, B, the model's backend) or one sequence
 * on a thread's own backend.  A range's compact rows in the work buffers
 * start at row b0 * S, so ranges never share a row.
 */
/* keys and values of attention sublayer s of layer l for the cells that
 * stage kin listed (every cell when kin ran whole), and the normed rows */
void infer_keys_values(HwModel *m, HwBackend *be, int l, int s, int kin, int b0, int b1);
/* attention sublayer s of layer l on stage k's cells, into those rows of xout */
void infer_attention_cells(HwModel *m, HwBackend *be, int l, int s, int k, float *xout, int b0, int b1);
/* the FFN of layer l (not the last) on stage k's cells, into those rows of xout */
void infer_ffn_cells(HwModel *m, HwBackend *be, int l, int k, float *xout, int b0, int b1);

#endif /* HW_MODEL_INFER_INTERNAL_H */
