/*
 * model_internal.h: what the files of the model share (model.h is the
 * public interface; nothing outside src/core/model_*.c includes this).
 *
 * Memory: parameters, gradients and both optimiser moments are four flat
 * device buffers with one layout; activations live in one arena sized at
 * creation for (batch_size, seq_len), so a step allocates nothing.  Per
 * sublayer we keep what backward needs (input x, rstd, the fused projection
 * qkvg, qs/kn/v, attention output and lse, projected output o); the normed
 * input xn and the SwiGLU product are recomputed in backward (cheap,
 * memory-bound) to save two [N,D]/[N,F] buffers per sublayer.
 *
 * Every op runs its forward through the backend and appends a tape record
 * (tape.h) holding the pointers its backward needs; backward is the reverse
 * walk of the tape.  Gradient buffers of activations are shared scratch
 * (each is consumed before the next sublayer's backward overwrites it); the
 * residual-stream gradient dx is one running buffer.
 *
 * The files: model_config.c (presets, settings), model_features.c (cell
 * features: link codes, child counts, count ramps), model_params.c (the
 * parameter table and its initial values), model_create.c (buffers, arena,
 * create/free), model_batch.c (a batch's checks and uploads, attention
 * plans), model_ops.c (taped ops and their backward), model_forward.c
 * (training forward, backward, optimiser step, eval), model_decode.c
 * (predictions from the heads), model_infer.c (the serving forward),
 * model_reach.c (its receptive field: the cells each stage needs),
 * model_ema.c (the parameter average), model_access.c (buffers, tensors,
 * backend errors).
 */
#ifndef HW_MODEL_INTERNAL_H
#define HW_MODEL_INTERNAL_H

#include "core/model.h"
#include "core/tape.h"
#include "core/timeenc.h"
#include "core/tensor.h"

/* attention sublayers of a layer: outbound, inbound, column, and (cfg.full_attention) full */
#define MAX_SUB 4
static const char *const sub_names[MAX_SUB] = {"out", "in", "col", "full"};
static const HwMaskKind sub_masks[MAX_SUB] = {HW_MASK_OUTBOUND, HW_MASK_INBOUND, HW_MASK_COLUMN, HW_MASK_FULL};

typedef struct SubAct
{
	float *x_in;       /* [N,D] residual stream entering the sublayer */
	float *rstd;       /* [N] */
	float *qkvg;       /* [N,4D] (attention) or gu [N,2F] (ffn) */
	float *qs, *kn, *v;/* [N,D] */
	float *qnorm, *knorm; /* [N,H] */
	float *att;        /* [N,D] */
	float *lse;        /* [B,H,S] */
	float *o;          /* [N,D] */
} SubAct;

typedef struct SubParams
{
	int64_t norm_g, w4, wo, tau;     /* offsets (w4: wq start, [4D,D]) */
} SubParams;

typedef struct FfnParams
{
	int64_t norm_g, wgu, w2;
} FfnParams;

struct HwModel
{
	HwModelConfig cfg;
	HwBackend    *be;
	int           D, H, dh, F, L, A, Dt, Nmax, Bmax, Smax;
	int32_t       ncols, ncat;

	HwParamTable  pt;
	float        *params, *grads, *m1, *m2, *muon_work;
	/* hw_model_create_frozen: params is the caller's read-only memory (never
	 * written, never freed) on the cpu backend, or on a device backend the
	 * model's own device copy of it (params_owned: freed with the model);
	 * grads, m1, m2, muon_work are NULL */
	int           frozen;
	int           params_owned;
	/* cfg.ema_decay > 0: the parameter average (NULL otherwise).  Swapped:
	 * params and ema exchanged (forward reads the average); adopted: loaded
	 * to predict, the average either copied over params or dropped, and
	 * freed (inference only: no training, no state). */
	float        *ema;
	int           ema_swapped, ema_adopted;

	/* parameter offsets */
	int64_t       o_col_w, o_col_b, o_id, o_null, o_mask, o_num_w, o_num_b, o_ts_w, o_ts_b,
				  o_bool, o_cat_w, o_cat_b, o_text_w, o_text_b, o_enc_g, o_final_g, o_head_w, o_head_b,
				  o_ts_rel,   /* enc.ts_rel.w [D, HW_REL_TIME_DIM]; -1 without relative time */
				  o_link,     /* enc.link.w [D, HW_LINK_DIM]; -1 without link codes */
				  o_cnt,      /* enc.cnt.w [D, HW_CNT_DIM]; -1 without child counts */
				  o_ord_w,    /* head.ord.w [HW_ORD_LEVELS, D]; -1 without the ordinal head */
				  o_ord_b,    /* head.ord.b [HW_ORD_LEVELS] */
				  o_cramp;    /* enc.cramp.w [D, HW_CRAMP_DIM]; -1 without count ramps */
	SubParams    *sp;         /* [L*A] */
	FfnParams    *fp;         /* [L] */

	/* frozen tables (device) */
	float        *col_table;  /* [ncols, Dt] f32 */
	uint16_t     *cat_table;  /* [ncat, Dt] f16 */

	/* activations */
	HwArena       arena;
	SubAct       *sa;         /* [L*A] */
	SubAct       *fa;         /* [L] (x_in, rstd, qkvg = gu) */
	float        *x_final, *e, *rstd0;
	/* scratch / activation grads */
	float        *xn, *dxn, *dqkvg, *dqs, *dkn, *dv, *datt, *dO, *hbuf, *dhbuf, *dgu, *dx, *de;
	/* encoder */
	int8_t       *d_stype;
	int32_t      *d_col, *d_cat_local, *d_text_local, *d_tidx, *d_tcat;
	uint8_t      *d_is_null, *d_is_target, *d_bool, *d_tnull, *d_tbool;
	float        *d_num, *d_ts, *d_tnum, *d_tts;
	float        *d_trel;     /* [N, HW_REL_TIME_DIM] relative-time features (cfg.rel_time) */
	float        *d_link;     /* [N, HW_LINK_DIM] link codes (cfg.link_types) */
	float        *d_cnt;      /* [N, HW_CNT_DIM] child-count features (cfg.child_counts) */
	/* count ramps (cfg.count_ramps), compacted: the n_cramp cells that have
	 * them (model_batch.c), d_cramp [n_cramp, HW_CRAMP_DIM] their ramps,
	 * d_cramp_idx [n_cramp] their flat cells b*S + position, d_cramp_y
	 * [n_cramp, D] their encoder terms (backward: de at those cells).  The
	 * anchor row's cells are a few of a sequence's S: a GEMM over all N
	 * rows would be nearly all zeros, and buffers for N rows would take
	 * ~2 x N x 6 KiB (100 MB at N = 8192, per serving backend).  So they
	 * hold cramp_cap cells, grown to the largest batch seen (outside the
	 * arena: model_batch.c ensure_ramp_capacity); NULL until then. */
	float        *d_cramp, *d_cramp_y;
	int32_t      *d_cramp_idx;
	int           n_cramp, cramp_cap;
	float        *text_f32, *cat_rows, *catproj, *textproj, *colproj, *dcolproj, *dcatproj, *dtextproj;
	/* heads */
	float        *xt, *rstdf, *hf, *dhf, *dxt, *Z, *dZ, *logits, *dlogits, *catblock, *E, *dE, *lossb;
	/* the training forward's target tail (model_forward.c): the last
	 * attention sublayer's attention, [q|k|v|gp] and x_in at the B target
	 * cells and their gradients ([B,D], [B,4D]); d_iota [B] = 0..B-1 */
	float        *att_t, *qg_t, *x_t, *datt_t, *dqg_t, *dx_t;
	int32_t      *d_iota;
	bool          full_tail;  /* hw_model_set_full_tail: the tail on every cell (the tests' reference) */
	float        *Zo, *dZo;   /* [B, HW_ORD_LEVELS] ordinal head output and its gradient (cfg.ordinal_head) */
	int           Kmax;

	/* model_reach.c: the serving forward's receptive field.  For stages k
	 * (forward order l*(A+1)+s, s == A the FFN) from reach_from to the one
	 * before the last attention sublayer: the cells whose output can reach
	 * a target, flat b*S + position, sequence by sequence: sequence b's are
	 * h_reach_cell[k*Nmax + h_reach_off[k*(B+1) + b] ...] (d_reach_cell the
	 * device copy); reach_from = L*(A+1): no stage on lists */
	int32_t      *h_reach_off, *h_reach_cell, *d_reach_cell;
	int           reach_from;

	/* host scratch */
	int32_t      *h_i32a, *h_i32b, *h_catmap, *h_tidx, *h_tcat;
	float        *h_f32;
	float        *h_trel;     /* [Nmax, HW_REL_TIME_DIM] (cfg.rel_time) */
	float        *h_ts;       /* [Nmax, HW_TS_DIM] timestamp values without the epoch (!cfg.absolute_time) */
	float        *h_link;     /* [Nmax, HW_LINK_DIM] (cfg.link_types) */
	float        *h_cnt;      /* [Nmax, HW_CNT_DIM] (cfg.child_counts) */
	float        *h_cramp;    /* [cramp_cap, HW_CRAMP_DIM] (cfg.count_ramps), compacted as d_cramp */
	int32_t      *h_cramp_idx;/* [cramp_cap] (cfg.count_ramps) */
	uint8_t      *h_u8a, *h_u8b;

	void         *plans[MAX_SUB];
	HwTape        tape;
	HwRng         rng;
	int64_t       step;

	/* hw_model_set_inference_precision: packed copies of the layer weights
	 * (backend bf16_weight_pack or f32_weight_pack; NULL: fp32 on OpenBLAS
	 * blocks), PK_* indexes; the step they
	 * were taken at (model_precision.c) */
	void        **pk;         /* [2*L*A + 2*L] or NULL */
	bool          pk_bf16;    /* pk holds bf16 copies (else fp32 ones: f32_weight_pack) */
	void         *pk_side[3]; /* with pk, fp32 packs of enc.ts_rel.w, enc.link.w, enc.cnt.w (PK_SIDE_*) or NULL */
	bool          train_bf16; /* hw_model_set_train_precision: the layers' GEMMs in bf16 (model_ops.c) */
	int64_t       pk_step;
	const float  *pk_params;

	/* current batch */
	int           B, S, N, U, Uc, K, stype, num_loss;   /* num_loss: HwNumLoss of the batch */
	int           ord_levels;          /* the batch's ordinal thresholds in use (0: none or no head) */
	float         ord_scale, ord_shift;
};

/* parameter and gradient of a parameter offset */
#define P(off) (m->params + (off))
#define G(off) (m->grads + (off))

/* model_params.c: the parameter table (0 when out of memory) and initial values */
int   model_build_params(HwModel *m);
void  model_init_params(HwModel *m, float *host);

/* model_precision.c: the packed copies of the layer weights, bf16 or fp32
 * (PK_* slots of m->pk, NULL: fp32 on OpenBLAS); model_packed_refresh retakes them when the
 * parameters moved (a training step, an average swap) since they were taken */
#define PK_W4(m, l, s)  ((2 * ((l) * (m)->A + (s))))
#define PK_WO(m, l, s)  ((2 * ((l) * (m)->A + (s)) + 1))
#define PK_WGU(m, l)    ((2 * (m)->L * (m)->A + 2 * (l)))
#define PK_W2(m, l)     ((2 * (m)->L * (m)->A + 2 * (l) + 1))
#define PK_SIDE_TREL 0  /* m->pk_side slots */
#define PK_SIDE_LINK 1
#define PK_SIDE_CNT  2
#define PK_SIDES     3
int    model_packed_refresh(HwModel *m, HwError *err);
void   model_free_packed(HwModel *m);

/* model_create.c */
void  model_free_plans(HwModel *m);

/* model_access.c: the backend's own error as the cause of rc (see there) */
int   model_backend_cause(HwBackend *be, int rc, HwError *err);

/* model_batch.c: checks and uploads a batch, builds its attention plans */
int   model_prepare_batch(HwModel *m, const HwBatch *bt, HwError *err);

/* model_reach.c: the current batch's cell lists (after model_prepare_batch) */
int   model_reach_plan(HwModel *m, const HwBatch *bt, HwError *err);

/* model_decode.c: the heads' outputs of the current batch into pred */
int   model_decode_predictions(HwModel *m, HwPredictions *pred, bool with_loss, HwError *err);

#endif /* HW_MODEL_INTERNAL_H */
