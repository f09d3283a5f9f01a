/*
 * backend.h: the compute backend interface.
 *
 * The core (model, optimiser, tensors) calls a backend through this table; the
 * implementations depend on it, never the other way round: src/backend/ (CPU:
 * its own GEMM kernels, OpenBLAS where the processor lacks them, OpenMP)
 * and cuda/ (CUDA) include this header from the core.
 *
 * A backend is a table of function pointers behind an opaque handle, designed
 * for a device with its own memory: every float / int pointer passed to a
 * compute entry is a DEVICE pointer obtained from be->ops->alloc (or an offset
 * into one).  The model never dereferences device memory on the host; it moves
 * data with memcpy_h2d / memcpy_d2h.  On the CPU backend device memory is host
 * memory, but the model must not rely on it.
 *
 * Conventions
 *  - Row-major everywhere.  Shapes are written [rows, cols]; N = B*S tokens,
 *    D = d_model, H = heads, dh = D/H, F = d_ff, Dt = d_text.
 *  - Argument order (llm.c habit): outputs, inputs, weights, dimensions.
 *  - "(=)" means the output is overwritten, "(+=)" means accumulated into.
 *  - DETERMINISM: every entry gives bit-identical results whatever the number
 *    of threads (CPU) or launch configuration: reductions use a fixed chunking
 *    that depends only on the shapes, never atomics or thread-count-dependent
 *    trees.  Two runs with the same inputs give the same bits.
 *  - Entries are asynchronous on devices with streams; d2h copies and
 *    sumsq (which returns a host value) synchronise.
 *  - No entry calls PostgreSQL; entries may run OpenMP teams.
 */
#ifndef HW_BACKEND_H
#define HW_BACKEND_H

#include "core/hw_common.h"
#include "core/attention.h"

typedef struct HwBackend HwBackend;

/* Targets of one batch for the loss entry (device pointers, B entries each). */
typedef struct HwLossTargets
{
	const uint8_t *is_null;      /* [B] ground-truth is NULL */
	const float   *num;          /* [B] numerical z-score (target_stype 1) */
	const uint8_t *boolv;        /* [B] 0/1 (target_stype 3) */
	const float   *ts;           /* [B,15] timestamp encoding (target_stype 2) */
	const int32_t *cat;          /* [B] category index 0..K-1 (target_stype 4); ignored when is_null */
	int            num_loss;     /* HwNumLoss of a numerical target */
	/* The ordinal loss (ord_levels > 0: a numerical target with the
	 * ordinal loss, and a model with the ordinal head): the label's level
	 * is nearbyint(num * ord_scale + ord_shift), clamped to 0..ord_levels;
	 * threshold k < ord_levels is "level > k", with logit ord_z[b * HW_ORD_LEVELS + k]
	 * and gradient ord_dz (same layout; thresholds >= ord_levels get 0). */
	int            ord_levels;
	float          ord_scale, ord_shift;
	const float   *ord_z;        /* [B, HW_ORD_LEVELS] */
	float         *ord_dz;       /* [B, HW_ORD_LEVELS] */
} HwLossTargets;

/* Column offsets inside the head output Z [B, HW_HEAD_Z(D)] (see model.h). */
#define HW_HEAD_NULL 0
#define HW_HEAD_NUM  1
#define HW_HEAD_BOOL 2
#define HW_HEAD_TS   3            /* 15 columns: 3..17 */
#define HW_HEAD_CAT  18           /* D columns: 18..18+D-1 (the categorical "pred" vector) */
#define HW_HEAD_Z(D) (18 + (D))

/* Per-token inputs of the value encoder (device pointers, [N] unless said). */
typedef struct HwEncInputs
{
	const int8_t  *stype;        /* [N] semantic type */
	const int32_t *col;          /* [N] column id 0..ncols-1 */
	const uint8_t *is_null;      /* [N] */
	const uint8_t *is_target;    /* [N] */
	const float   *num;          /* [N] */
	const float   *ts;           /* [N,15] */
	const uint8_t *boolv;        /* [N] */
	const int32_t *cat_local;    /* [N] index into catproj rows (batch-local), valid where stype==4 */
	const int32_t *text_local;   /* [N] index into textproj rows, valid where stype==5 */
} HwEncInputs;

/* Encoder weights / projected tables (device pointers). */
typedef struct HwEncWeights
{
	const float *colproj;        /* [ncols, D] col_table @ enc.col.w^T + enc.col.b */
	const float *catproj;        /* [Uc, D]   projected categories used in the batch */
	const float *textproj;       /* [U, D]    projected text embeddings of the batch */
	const float *id_emb;         /* [D] */
	const float *null_emb;       /* [D] */
	const float *mask_emb;       /* [D] */
	const float *num_w;          /* [D] (Linear(1->D) weight, [D,1]) */
	const float *num_b;          /* [D] */
	const float *ts_w;           /* [D,15] */
	const float *ts_b;           /* [D] */
	const float *bool_emb;       /* [2,D] */
} HwEncWeights;

/* Gradients of the encoder (device pointers); all (=), overwritten. */
typedef struct HwEncGrads
{
	float *colproj;              /* [ncols, D] */
	float *catproj;              /* [Uc, D] */
	float *textproj;             /* [U, D] */
	float *id_emb, *null_emb, *mask_emb;   /* [D] each */
	float *num_w, *num_b;        /* [D] each */
	float *ts_w;                 /* [D,15] */
	float *ts_b;                 /* [D] */
	float *bool_emb;             /* [2,D] */
} HwEncGrads;

typedef struct HwBackendOps
{
	const char *name;                        /* "cpu", "cuda" */
	void (*destroy)(HwBackend *be);          /* frees ctx and be itself */

	/* ---- memory ---- */
	void *(*alloc)(HwBackend *be, size_t bytes);          /* NULL on failure; 64-byte aligned */
	void  (*free)(HwBackend *be, void *ptr);              /* NULL allowed */
	void  (*memcpy_h2d)(HwBackend *be, void *dst, const void *src, size_t bytes);
	void  (*memcpy_d2h)(HwBackend *be, void *dst, const void *src, size_t bytes);  /* synchronises */
	void  (*memcpy_d2d)(HwBackend *be, void *dst, const void *src, size_t bytes);
	void  (*memset)(HwBackend *be, void *dst, int byte, size_t bytes);
	void  (*synchronize)(HwBackend *be);

	/* ---- GEMM ----
	 * C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C, row-major, fp32,
	 * lda/ldb/ldc are row strides in elements of the stored matrices
	 * (A stored [M,K] if !transA else [K,M]; B stored [K,N] if !transB else [N,K]).
	 * beta == 0 means C is not read (may hold NaN); alpha == 0 or K == 0:
	 * C = beta * C, A and B not read. */
	void (*gemm)(HwBackend *be, bool transA, bool transB, int M, int N, int K,
				 float alpha, const float *A, int lda, const float *B, int ldb,
				 float beta, float *C, int ldc);

	/* ---- elementwise / small utilities ---- */
	/* out[M,N] (+=) bias[N] broadcast over rows. */
	void (*add_bias)(HwBackend *be, float *out, const float *bias, int M, int N);
	/* db[N] (+=) sum over rows of dout[M,N] (fixed row chunks, in order). */
	void (*bias_backward)(HwBackend *be, float *db, const float *dout, int M, int N);
	/* y[n] (=) a*x[n] + b*y[n]. */
	void (*axpby)(HwBackend *be, float *y, float a, const float *x, float b, size_t n);
	/* Returns sum of x[n]^2 in double (fixed 4096-element chunks summed in
	 * order); NaN/Inf propagate.  Synchronises. */
	double (*sumsq)(HwBackend *be, const float *x, size_t n);
	/* f32 rows from an f16 table: out[M,C] (=) f16_to_f32(table[idx[m], :]); idx is a
	 * HOST array (the model builds it from the batch); table is a DEVICE f16 array. */
	void (*gather_f16_rows)(HwBackend *be, float *out, const uint16_t *table,
							const int32_t *idx_host, int M, int C);
	/* out[M,C] (=) in[idx[m], :] with idx a DEVICE int32 array. */
	void (*gather_rows)(HwBackend *be, float *out, const float *in, const int32_t *idx, int M, int C);
	/* din[idx[m], :] (+=) dout[m, :]; idx values distinct. */
	void (*scatter_add_rows)(HwBackend *be, float *din, const float *dout, const int32_t *idx, int M, int C);
	/* dst[idx[m], :] (=) src[m, :]; idx a DEVICE int32 array, values
	 * distinct.  NULL: the serving forward computes every cell of every
	 * stage (no receptive-field pruning, model_reach.c). */
	void (*scatter_rows)(HwBackend *be, float *dst, const float *src, const int32_t *idx, int M, int C);

	/* ---- RMSNorm, zero-centred: out = (1+g) * x / sqrt(mean(x^2) + 1e-6) ----
	 * out[N,D] (=), rstd[N] (=) saved 1/sqrt(mean(x^2)+1e-6); x[N,D]; g[D]. */
	void (*rmsnorm_forward)(HwBackend *be, float *out, float *rstd, const float *x, const float *g, int N, int D);
	/* dx[N,D] (+=), dg[D] (+=; fixed token chunks summed in order);
	 * dout[N,D], x[N,D], rstd[N], g[D]. */
	void (*rmsnorm_backward)(HwBackend *be, float *dx, float *dg, const float *dout,
							 const float *x, const float *rstd, const float *g, int N, int D);

	/* ---- value encoder (cells to h0), after the model projected the tables ----
	 * e[N,D] (=) colproj[col[n]] + val[n], val by stype: 0 id_emb, 1 num_w*num+num_b,
	 * 2 ts_w @ ts + ts_b, 3 bool_emb[boolv], 4 catproj[cat_local], 5 textproj[text_local],
	 * other 0; then is_null -> null_emb; then is_target -> mask_emb (target wins). */
	void (*encoder_forward)(HwBackend *be, float *e, const HwEncInputs *in, const HwEncWeights *w,
							int N, int D);
	/* All grads (=); de[N,D].  Sizes ncols, Uc, U for the projected tables. */
	void (*encoder_backward)(HwBackend *be, const HwEncGrads *g, const float *de,
							 const HwEncInputs *in, int N, int D, int ncols, int Uc, int U);

	/* ---- QK-norm (fp32) + per-head scale ----
	 * qkvg[N, 4D] is the fused projection [q | k | v | gate_pre].
	 * qs[N,D] (=) q_h / max(|q_h|,1e-6) * tau[h] / sqrt(dh)  per head h
	 * kn[N,D] (=) k_h / max(|k_h|,1e-6)
	 * v[N,D]  (=) copy of the v part (contiguous, for the attention kernel)
	 * qnorm[N,H], knorm[N,H] (=) |q_h|, |k_h| (saved).
	 * qs NULL: the q part is skipped (qnorm untouched); kn and v NULL: the
	 * k and v parts (knorm untouched), for the serving forward's rows whose
	 * queries, or keys and values, nothing reads. */
	void (*qknorm_forward)(HwBackend *be, float *qs, float *kn, float *v, float *qnorm, float *knorm,
						   const float *qkvg, const float *tau, int N, int H, int dh);
	/* dqkvg[N,4D]: the q, k, v column blocks (=) (the gate block is untouched);
	 * dtau[H] (+=); dqs, dkn, dv [N,D]; qkvg, qnorm, knorm saved; tau[H]. */
	void (*qknorm_backward)(HwBackend *be, float *dqkvg, float *dtau,
							const float *dqs, const float *dkn, const float *dv,
							const float *qkvg, const float *qnorm, const float *knorm,
							const float *tau, int N, int H, int dh);

	/* ---- attention (see attention.h for masks and arithmetic) ----
	 * Plans are built from HOST batch tensors and live on the device. */
	void *(*attn_plan_create)(HwBackend *be, const HwAttnMaskInfo *info_host, HwMaskKind kind, HwError *err);
	void  (*attn_plan_free)(HwBackend *be, void *plan);
	/* out[N,D] (=), lse[B,H,S] (=); q, k, v [N,D] = [B,S,H,dh]. */
	void (*attn_forward)(HwBackend *be, float *out, float *lse, const float *q, const float *k,
						 const float *v, const void *plan, int H, int dh);
	/* dq, dk, dv [N,D] (=); dout, out [N,D], lse [B,H,S]. */
	void (*attn_backward)(HwBackend *be, float *dq, float *dk, float *dv, const float *dout,
						  const float *out, const float *lse, const float *q, const float *k,
						  const float *v, const void *plan, int H, int dh);

	/* ---- gated residual: xout = xin + sigmoid(gpre) * o ----
	 * xout[N,D] (=); xin[N,D]; gpre: [N,D] with row stride ld_g (the gate block of qkvg); o[N,D]. */
	void (*gate_residual_forward)(HwBackend *be, float *xout, const float *xin, const float *gpre,
								  int ld_g, const float *o, int N, int D);
	/* dgpre (=) rows of stride ld_g; dO[N,D] (=); dxout[N,D] (the residual
	 * gradient passes through unchanged: the caller keeps using dxout as dxin). */
	void (*gate_residual_backward)(HwBackend *be, float *dgpre, int ld_g, float *dO,
								   const float *dxout, const float *gpre, const float *o, int N, int D);

	/* ---- SwiGLU: h[N,F] (=) silu(gu[:, :F]) * gu[:, F:] ; gu[N,2F] ---- */
	void (*swiglu_forward)(HwBackend *be, float *h, const float *gu, int N, int F);
	/* dgu[N,2F] (=); dh[N,F]; gu[N,2F]. */
	void (*swiglu_backward)(HwBackend *be, float *dgu, const float *dh, const float *gu, int N, int F);

	/* ---- heads' loss (model.h), forward and backward in one entry ----
	 * Z[B, 18+D] head outputs (HW_HEAD_* columns), logits[B,K] categorical
	 * logits (only read when stype == 4).  loss[B] (=) per-sequence
	 * cell loss; dZ[B,18+D] (=) and dlogits[B,K] (=) are d(scale * sum loss)/d.
	 * stype is the batch's target_stype (1 num, 2 ts, 3 bool, 4 cat). */
	void (*loss_forward_backward)(HwBackend *be, float *loss, float *dZ, float *dlogits,
								  const float *Z, const float *logits, const HwLossTargets *t,
								  int stype, int B, int D, int K, float scale);

	/* ---- optimiser (optim.h) ----
	 * AdamW on n elements: g' = grad*gscale; m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
	 * p -= lr * ( (m/bc1) / (sqrt(v/bc2) + eps) + wd * p ), bc1 = 1-b1^t, bc2 = 1-b2^t. */
	void (*adamw_update)(HwBackend *be, float *p, float *m, float *v, const float *grad, size_t n,
						 float gscale, float lr, float b1, float b2, float eps, float wd, int t);
	/* Muon momentum (Nesterov): g' = grad*gscale; buf = mu*buf + g'; u (=) g' + mu*buf. */
	void (*muon_momentum)(HwBackend *be, float *u, float *buf, const float *grad, size_t n,
						  float gscale, float mu);

	/* ---- optional entries (NULL = not provided) ---- */
	/* Can this backend run a model of these shapes (max batch B, max seq_len
	 * S, d_model D, n_heads H, d_ff F)?  HW_OK, or HW_ERR_INVALID with what
	 * to change (e.g. the CUDA attention kernels take head sizes D/H of 16,
	 * 32, 64 and 128 only).  hw_model_create calls it before allocating, so
	 * an unsupported model fails up front instead of at its first step. */
	int (*check_shapes)(HwBackend *be, int B, int S, int D, int H, int F, HwError *err);
	/* The compute entries return void; a backend that can fail inside them
	 * (CUDA: a kernel fault, a cuBLAS error, a failed device allocation)
	 * keeps its FIRST error, makes later entries no-ops and d2h copies return
	 * NaN bytes, so the model stops with a numeric error.  This returns that
	 * first error (HW_OK if none) with its message and clears it; the model
	 * reports it in place of its own symptom ("loss is NaN"). */
	int (*last_error)(HwBackend *be, HwError *err);
	/* Inference GEMMs, nb independent products of one shape (the CPU backend
	 * provides it): for i < nb, C_i[M,N] (=, or beta*C_i +) A_i[M,K] @ W[N,K]^T
	 * with A_i = A + i*M*lda, C_i = C + i*M*ldc.  Each product is computed
	 * like a lone call of that shape (on the CPU: one call of the own fp32
	 * kernel over all rows, whose rows never depend on the call, else one
	 * single-threaded sgemm per product), so a product's bits depend only
	 * on its own operands, never on nb or the thread count.  NULL (a
	 * device): the model issues one gemm call of nb*M rows instead (the
	 * products lie one after another). */
	void (*gemm_rows_batched)(HwBackend *be, int nb, int M, int N, int K, const float *A, int lda,
							  const float *W, float beta, float *C, int ldc);
	/* The same with products of varied heights: for i < nb, rows off[i] ..
	 * off[i+1] of A and C (off [nb+1] a HOST array), each computed like a
	 * lone call of its shape.  NULL: one gemm call of off[nb] - off[0] rows. */
	void (*gemm_rows_ragged)(HwBackend *be, int nb, const int32_t *off, int N, int K, const float *A, int lda,
							 const float *W, float beta, float *C, int ldc);
	/* Inference GEMMs in bf16 (the CPU backend on processors with
	 * AVX512_BF16; NULL elsewhere).  bf16_usable: can this machine run them
	 * now?  bf16_weight_pack: an opaque packed bf16 copy of W[N,K] (rounded
	 * to nearest even), made once per loaded model; NULL when not usable or
	 * out of memory; freed by bf16_weight_free.  gemm_bf16: C[M,N] (=, or
	 * beta*C +) A[M,K] (row stride lda, rounded to bf16 per call) @
	 * W[n0:n0+N, :]^T with fp32 accumulation (n0 a multiple of 16: a slice
	 * of the packed rows, e.g. the k|v block of a fused projection).  Every element of C is the same sequence of
	 * operations whatever M, the row's place in the call and the thread
	 * count, so a row's bits depend only on that row of A and on W. */
	bool  (*bf16_usable)(HwBackend *be);
	/* Does bf16 beat this backend's fp32 products on this machine, for the
	 * training products (training) or the served model's (the precision
	 * `auto` chooses)?  NULL: whenever usable. */
	bool  (*bf16_preferred)(HwBackend *be, bool training);
	void *(*bf16_weight_pack)(HwBackend *be, const float *W, int N, int K);
	void  (*bf16_weight_free)(HwBackend *be, void *packed);
	void  (*gemm_bf16)(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed,
					   int n0, float beta, float *C, int ldc);
	/* The served model's fp32 GEMMs on weights packed once (the CPU
	 * backend; f32_weight_pack returns NULL where the processor has neither
	 * AVX-512 nor AVX2 and FMA): the same contract as bf16_weight_pack /
	 * gemm_bf16 with the operands kept in fp32.  Every element of C is the
	 * same sequence of fp32 FMAs over k in order whatever M, the row's
	 * place in the call and the thread count. */
	void *(*f32_weight_pack)(HwBackend *be, const float *W, int N, int K);
	void  (*f32_weight_free)(HwBackend *be, void *packed);
	void  (*gemm_f32_packed)(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed,
							 int n0, float beta, float *C, int ldc);
	/* Training GEMMs in bf16 (the CPU backend on processors with
	 * AVX512_BF16; NULL elsewhere): C[M,N] (=, or beta*C +) op(A) @ op(B),
	 * stored as gemm's (A [M,K] or transA [K,M]; B [K,N] or transB [N,K]),
	 * alpha 1; A and B rounded to bf16 on the fly (B packed per call), fp32
	 * accumulation in fixed blocks of K, deterministic whatever the thread
	 * count.  false: it did not run (not usable now, out of memory), C
	 * untouched; the caller runs gemm instead. */
	bool  (*gemm_bf16_any)(HwBackend *be, bool transA, bool transB, int M, int N, int K, const float *A, int lda,
						   const float *B, int ldb, float beta, float *C, int ldc);
	/* The serving forward (attention.h attn_block_sparse_forward_seqs) on
	 * sequences [b0, b0 + nb) alone (a chunk whose q, k, v are still in
	 * cache; 0 and B: the whole batch): their rows of out and lse, the
	 * same bits whatever the range, within fp32 rounding of attn_forward's;
	 * the pointers are the whole batch's.  NULL: the model runs
	 * attn_forward on the whole batch. */
	void  (*attn_forward_seqs)(HwBackend *be, float *out, float *lse, const float *q, const float *k,
							   const float *v, const void *plan, int b0, int nb, int H, int dh);
	/* Attention of one query cell per sequence (inference): out[B, H*dh]
	 * (=) rows cell[b] (device int32, flat b*S + position) of the serving
	 * forward's out (attn_forward_seqs where the backend has it, else
	 * attn_forward), bit for bit; q [B, H*dh] those cells' query rows, k, v
	 * [N, H*dh].
	 * NULL: the model runs attn_forward and gathers. */
	void  (*attn_forward_rows)(HwBackend *be, float *out, const float *q, const float *k, const float *v,
							   const void *plan, const int32_t *cell, int H, int dh);
	/* Attention of a list of query cells per sequence (inference, attention.h
	 * attn_block_sparse_forward_cells), for sequences [b0, b0 + nb) (nb 0:
	 * all): sequence b's cells cell[off[b] .. off[b+1]) (off [B+1] HOST,
	 * cell DEVICE int32, flat b*S + position); out and q [n, H*dh] their
	 * rows in that order (entry j at row j), each out row the bits of the
	 * serving forward's (as attn_forward_rows).  NULL: no receptive-field
	 * pruning. */
	void  (*attn_forward_cells)(HwBackend *be, float *out, const float *q, const float *k, const float *v,
								const void *plan, const int32_t *off, const int32_t *cell, int b0, int nb, int H,
								int dh);
	/* fn(sub, i, arg) for every i in [0, n), the items shared out between
	 * the backend's threads, each call on a single-thread backend of its own
	 * (sub: this backend's settings and device memory, its own scratch
	 * buffers; be's allocations are sub's to read and write) -- for items that
	 * touch disjoint data (a sequence's leading stages of the serving
	 * forward), where one item per thread beats every entry splitting its
	 * rows between the threads and joining after each.  Returns false,
	 * having run nothing, with one thread, with fewer items than threads,
	 * or when the single-thread backends cannot be made.  NULL: a device
	 * backend. */
	bool  (*parallel_items)(HwBackend *be, int n, void (*fn)(HwBackend *sub, int i, void *arg), void *arg);
} HwBackendOps;

struct HwBackend
{
	const HwBackendOps *ops;
	void               *ctx;       /* implementation state */
	int                 n_threads; /* CPU: OpenMP team size used by entries (0 = default) */
};

/* The CPU backend (its own fp32 and bf16 GEMM kernels, OpenBLAS sgemm in
 * fixed blocks where the processor lacks them, OpenMP).  n_threads 0 =
 * omp_get_max_threads().  Sets OpenBLAS to 1 thread: the backend does its
 * own (thread-count independent) blocking.  Like every backend, one
 * thread calls it at a time, never from inside an OpenMP parallel region
 * (its buffers are its own, sliced per thread of a call) -- except the
 * single-thread backends that parallel_items hands each of its threads. */
HwBackend *hw_backend_cpu_create(int n_threads, HwError *err);
void       hw_backend_destroy(HwBackend *be);

/* Changes the CPU backend's team size (tests of determinism). */
void       hw_backend_cpu_set_threads(HwBackend *be, int n_threads);
/* disabled: the CPU backend reports bf16 as unusable (bf16_usable false) even
 * on a processor with AVX512_BF16 (tests of the fp32 fallback). */
void       hw_backend_cpu_disable_bf16(HwBackend *be, bool disabled);
/* disabled: the CPU backend's bf16 products run on AVX512_BF16 even where
 * the processor has AMX tiles (tests and benchmarks of both kernels) */
void       hw_backend_cpu_disable_amx(HwBackend *be, bool disabled);
/* disabled: the CPU backend's own fp32 kernel is not used: no packed fp32
 * weights (f32_weight_pack NULL) and every fp32 GEMM on OpenBLAS (tests
 * and benchmarks of that path) */
void       hw_backend_cpu_disable_f32_pack(HwBackend *be, bool disabled);
/* this processor has AVX-512, or AVX2 and FMA, for the packed fp32 kernels */
bool       hw_backend_cpu_f32_pack_supported(void);
/* this processor has AVX512_BF16 and this build has the kernels for it */
bool       hw_backend_cpu_bf16_supported(void);
/* this processor has AMX tiles for bf16 (and AVX512_BF16), and the
 * operating system lets this process use them (asked once, on first call) */
bool       hw_backend_cpu_amx_supported(void);
/* OpenBLAS's kernel family (its core name, e.g. "Haswell") */
const char *hw_backend_cpu_blas_core(void);
/* what the CPU backend's fp32 products run on, in words: "own AVX-512
 * kernel", "own AVX2 kernel" or "OpenBLAS <family> kernels" (a static
 * string) */
const char *hw_backend_cpu_f32_kernels(HwBackend *be);

#endif /* HW_BACKEND_H */
