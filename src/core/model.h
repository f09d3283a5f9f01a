/*
 * model.h: the Relational Transformer on a backend (docs/model.md).
 *
 * Dimensions: B sequences of S cells, N = B*S tokens, D = d_model, H heads,
 * dh = D/H, F = d_ff, Dt = d_text, L layers, A = attention sublayers per layer
 * (3: outbound, inbound, column; 4 with full_attention).
 *
 * ---- Parameters (by name; fp32; row-major; Linear weights are [out, in]) ----
 *   enc.col.w     [D, Dt]   column-name encoder Linear(Dt->D)        Muon, wd
 *   enc.col.b     [D]                                                AdamW
 *   enc.id_emb    [D]       identifier value (presence only)         AdamW
 *   enc.null_emb  [D]                                                AdamW
 *   enc.mask_emb  [D]                                                AdamW
 *   enc.num.w     [D, 1]    Linear(1->D)                             AdamW, wd
 *   enc.num.b     [D]                                                AdamW
 *   enc.ts.w      [D, 15]   Linear(15->D)                            Muon, wd
 *   enc.ts.b      [D]                                                AdamW
 *   enc.bool_emb  [2, D]    Embedding(2, D)                          AdamW
 *   enc.cat.w     [D, Dt]   categorical encoder Linear(Dt->D)        Muon, wd
 *   enc.cat.b     [D]       (also projects the category block of the loss)
 *   enc.text.w    [D, Dt]   text encoder Linear(Dt->D)               Muon, wd
 *   enc.text.b    [D]
 *   enc.norm.g    [D]       RMSNorm gain of h0                       AdamW
 *   for l in 0..L-1, for s in (out, in, col[, full]):
 *     layer{l}.{s}.norm.g  [D]                                       AdamW
 *     layer{l}.{s}.wq      [D, D]                                    Muon, wd
 *                                  (all layer matrices: Muon, wd)
 *     layer{l}.{s}.wk      [D, D]   (wq, wk, wv, wgate are contiguous: one
 *     layer{l}.{s}.wv      [D, D]    fused GEMM [4D, D] computes all four)
 *     layer{l}.{s}.wgate   [D, D]
 *     layer{l}.{s}.wo      [D, D]
 *     layer{l}.{s}.tau     [H]      per-head scale, init sqrt(dh)    AdamW
 *   layer{l}.ffn.norm.g    [D]
 *   layer{l}.ffn.wg        [F, D]   (wg, wu contiguous: one GEMM [2F, D])
 *   layer{l}.ffn.wu        [F, D]
 *   layer{l}.ffn.w2        [D, F]
 *   final.norm.g  [D]
 *   head.null.w [1,D], head.num.w [1,D], head.bool.w [1,D], head.ts.w [15,D],
 *   head.cat.w [D,D]        contiguous = one matrix [18+D, D] (columns of Z:
 *                           backend.h HW_HEAD_*); head.ts.w, head.cat.w Muon,
 *                           the [1,D] ones AdamW; all wd
 *   head.null.b [1], head.num.b [1], head.bool.b [1], head.ts.b [15],
 *   head.cat.b [D]          contiguous [18+D]                        AdamW
 *   enc.ts_rel.w [D,20]     only when cfg.rel_time, after the heads  Muon, wd
 *   enc.link.w [D,32]       only when cfg.link_types, after those    Muon, wd
 *   enc.cnt.w [D,384]       only when cfg.child_counts, after those  Muon, wd
 *   enc.cramp.w [D,1536]    only when cfg.count_ramps, after those   Muon, wd
 *   head.ord.w [16,D]       only when cfg.ordinal_head, last         Muon, wd
 *   head.ord.b [16]         (its own GEMM: Zo [B,16])                AdamW
 * Optimiser rule: Muon for 2-D weights with both dims >= 2 except the
 * embedding table enc.bool_emb (and, with cfg.head_adamw, the head.*
 * weights); AdamW for the rest.  Weight decay (weight_decay, 0.3 by default,
 * decoupled, times lr) on every 2-D weight matrix except enc.bool_emb (so not
 * on biases, gains, tau, embedding vectors); the head.* matrices take
 * head_weight_decay instead (0 by default: undecayed).
 *
 * ---- Arithmetic (fp32 throughout) ----
 *   rms(x; g)   = (1 + g) * x / sqrt(mean_d(x^2) + 1e-6)
 *   colproj     = col_table_f32 @ enc.col.w^T + enc.col.b          [ncols, D]
 *   val[n]      = by stype: 0 id_emb | 1 num.w * x + num.b | 2 ts.w @ t + ts.b
 *                 | 3 bool_emb[v] | 4 cat.w @ cat_table[id] + cat.b
 *                 | 5 text.w @ text_emb[id] + text.b | other: 0
 *   val[n]      = is_null ? null_emb : val;  val = is_target ? mask_emb : val
 *                 (t: the cell's 15 timestamp values, its epoch slot t[14] 0
 *                 when !absolute_time and the sequence has an observation time)
 *   rel[n]      = rel_time ? trel[n] @ enc.ts_rel.w^T : 0, trel [N,20] the
 *                 relative-time features of a visible timestamp cell of a
 *                 sequence with an observation time (timeenc.h), else 0
 *   lnk[n]      = link_types ? code(link_key[n]) @ enc.link.w^T : 0, code the
 *                 fixed +-1/sqrt(32) vector of hw_link_code (0 without a key)
 *   cnt[n]      = child_counts ? ccf[n] @ enc.cnt.w^T : 0, ccf [N,384] the
 *                 child-count features of the cell's row, with its child means
 *                 when child_means (hw_child_count_features)
 *   ramp[n]     = count_ramps ? crf[n] @ enc.cramp.w^T : 0, crf [N,1536] the
 *                 count ramps of the cell's row (hw_count_ramp_features)
 *   x           = rms(colproj[col[n]] + val[n] + rel[n] + lnk[n] + cnt[n] + ramp[n];
 *                     enc.norm.g)
 *   attention sublayer s (same normed input for projections and gate):
 *     xn        = rms(x; s.norm.g)
 *     [q|k|v|gp]= xn @ [wq; wk; wv; wgate]^T                       [N, 4D]
 *     per head: qs = q/max(|q|,1e-6) * tau_h / sqrt(dh), kn = k/max(|k|,1e-6)
 *     a         = softmax_masked(qs . kn) @ v    (mask s, attention.h) [N, D]
 *     x         = x + sigmoid(gp) * (a @ wo^T)
 *   ffn:  xn = rms(x; ffn.norm.g); x = x + (silu(xn @ wg^T) * (xn @ wu^T)) @ w2^T
 *   per sequence b, t = its target position:
 *     hf        = rms(x[b, t]; final.norm.g)                        [B, D]
 *     Z         = hf @ head.W^T + head.b                            [B, 18+D]
 *     null_loss = BCE(sigmoid(Z[:,0]), is_null)   (with logits, stable form)
 *     num: huber(Z[:,1] - y; delta 1) or, for a task with loss "mae", smooth L1 (delta 0.05)   bool: BCE(Z[:,2], y)
 *     ts : mean_{d<14} huber(Z[:,3+d] - t_d) + 2.0 * huber(Z[:,17] - t_14)
 *     cat: E = cat_table[start:start+K] @ enc.cat.w^T + enc.cat.b  [K, D]
 *          logits = Z[:, 18:18+D] @ E^T  [B, K];  lse = logsumexp(logits)
 *          loss = lse - logits[y] + 1e-4 * lse^2
 *     cell_loss = null_loss + (1 - is_null) * type_loss
 *   loss = mean_b cell_loss
 * Padding positions are computed like any cell (never zeroed: the masks keep
 * them out of every other cell's attention, and the loss reads targets only).
 *
 * ---- Optimiser (one step, after backward) ----
 *   gnorm = sqrt(sum of all grad^2)  (double, parameter order); NaN/Inf -> error,
 *   model untouched.  gscale = min(1, clip / (gnorm + 1e-6)).
 *   lr(t) for step t = 1,2,...: t <= warmup: lr * t / warmup; after:
 *   lr * (0.1 + 0.9 * 0.5 * (1 + cos(pi * min(1, (t-warmup)/(total-warmup))))).
 *   A resumed run with a new total continues from s0 = sched_start: for
 *   t >= s0, f + (lr0 - f) * 0.5 * (1 + cos(pi * min(1, (t-s0)/(total-s0))))
 *   with f = 0.1 lr and lr0 = sched_start_lr (the lr of step s0 before).
 *   AdamW: backend.h adamw_update with (b1 0.9, b2 0.95, eps 1e-8, wd).
 *   Muon: u = nesterov momentum (mu 0.95) of grad*gscale; X = u/(|u|_F+1e-7),
 *   transposed when rows > cols; 5 times: A = X X^T; X = 3.4445 X +
 *   (-4.7750 A + 2.0315 A A) X; p = p * (1 - lr*wd) - lr * 0.2 *
 *   sqrt(max(rows, cols)) * X  (the 0.2*sqrt(max) scale matches AdamW's update
 *   RMS, so one learning rate serves both; Moonlight's recipe).
 *
 * Determinism: same config + seed + batches -> bit-identical results whatever
 * the thread count (backend.h).  Errors: functions return HW_OK or an
 * HwErrorCode and fill err.
 */
#ifndef HW_MODEL_H
#define HW_MODEL_H

#include "core/hw_common.h"
#include "core/batch.h"
#include "core/backend.h"

typedef struct HwModelConfig
{
	int32_t  d_model;          /* D */
	int32_t  n_heads;          /* H; D % H == 0 */
	int32_t  n_layers;         /* L */
	int32_t  seq_len;          /* S (max; batches may be shorter) */
	int32_t  batch_size;       /* B (max; batches may be smaller) */
	int32_t  d_text;           /* Dt of the frozen embeddings */
	int32_t  d_ff;             /* F; 0 -> 8/3 D rounded up to a multiple of 256 */
	int32_t  full_attention;   /* 0/1: add the full-attention sublayer */
	float    lr;               /* peak learning rate (Muon and AdamW) */
	int32_t  warmup_steps;
	int32_t  total_steps;      /* cosine horizon; after it lr stays at 10% */
	float    weight_decay;     /* 0.1 */
	float    adam_b1, adam_b2, adam_eps;   /* 0.9, 0.95, 1e-8 */
	float    muon_momentum;    /* 0.95 */
	float    clip_norm;        /* 1.0 */
	uint64_t seed;             /* init RNG */
	/* 1 (the presets): timestamp cells also get relative-time features,
	 * e += trel @ enc.ts_rel.w^T (timeenc.h, docs/model.md); 0: a model
	 * without them (state blobs before version 3 load as 0). */
	int32_t  rel_time;
	/* 1 (the presets): every cell of a row the sampler reached through an
	 * FK also gets that link's code (which FK, which direction),
	 * e += link @ enc.link.w^T (hw_link_code); 0: none (state blobs before
	 * version 3 load as 0).  fk_adj says only that two rows are linked, not
	 * by which FK: an order a customer placed and one they received as a
	 * gift looked alike. */
	int32_t  link_types;
	/* 1 (the presets): every cell of a row also gets its row's temporal
	 * degree -- per child FK, how many children it had before the
	 * observation time, in all and within 11 windows -- as
	 * e += ccf @ enc.cnt.w^T (hw_child_count_features); 0: none (state
	 * blobs before version 4 load as 0).  Attention averages over the
	 * children it sees, so "how many" was otherwise hard to read. */
	int32_t  child_counts;
	/* 1 (the presets; only with child_counts): ccf also carries the row's
	 * child means -- per (child FK, numerical or boolean column of the child
	 * table), the column's mean over the same children, in all and per
	 * window (HwBatch.mean_key, child_mean) -- through enc.cnt.w, so no new
	 * parameter; 0: counts only (state blobs before version 5 load as 0).
	 * "The customer's average rating" was otherwise an estimate from the
	 * few reviews a sequence shows. */
	int32_t  child_means;
	/* > 0: the model also keeps an exponential moving average of its
	 * parameters (Polyak averaging), updated after every optimiser step t as
	 *   d = min(ema_decay, (1 + t) / (10 + t)),  ema = d * ema + (1 - d) * params
	 * (the warm-up factor lets early steps count while the average is young);
	 * validation, evaluation and serving read the average, training the
	 * parameters (hw_model_swap_ema, hw_model_adopt_ema).  0: none (state
	 * blobs before version 6 load as 0).  Averaging the recent steps
	 * smooths the noise of small-batch steps on a small training set. */
	float    ema_decay;
	/* 1 (the presets): the ordinal head, Zo = hf @ head.ord.w^T + head.ord.b
	 * [B, HW_ORD_LEVELS], logits of P(label > min + k) for the numerical
	 * tasks with the ordinal loss (hw_task_ordinal_levels); their prediction
	 * is the median of that distribution.  0: none, such tasks train with
	 * the MAE loss (state blobs before version 7 load as 0). */
	int32_t  ordinal_head;
	/* HW_COUNT_RAMPS_ANCHOR (an option, 0 in the presets; only with
	 * child_counts): every cell of the anchor row (the row a sequence is
	 * about: link_key 0) also gets its row's child counts as ramps in
	 * log2(1 + n) (HW_CRAMP_STEPS per link and window), e += crf @
	 * enc.cramp.w^T (hw_count_ramp_features); the other rows' crf is 0.
	 * HW_COUNT_RAMPS_EVERY_ROW: every row's cells get them (what state
	 * blobs of versions 8-10 with ramps trained with, and load as).  0:
	 * none (state blobs before version 8 load as 0).  log1p(n) / 4 told 2
	 * orders from 3 by 0.07, and the benchmark's models did not learn a
	 * line between them; a ramp gives a linear map a step at any count,
	 * like the relative-time ramps.  Only the anchor: on every row the
	 * ramps cost the football benchmark's team unbeaten task what they
	 * gave its player task (docs/model.md, Count ramps).  enc.cramp.w
	 * starts at zero, so a fresh model with ramps predicts as the model
	 * without them. */
	int32_t  count_ramps;
	/* 1 (an option, 0 in the presets): the output heads' weight matrices
	 * (head.ts.w, head.cat.w, head.ord.w) train with AdamW instead of Muon,
	 * as Muon's authors advise for an output layer: Newton-Schulz gives every
	 * singular direction of the update the same size, so the ordinal head's
	 * 16 thresholds, whose gradients are nearly one direction plus noise
	 * from the rare high counts, move as much along the noise as along the
	 * signal.  Weight decay unchanged.  0: Muon (state blobs before version 9
	 * load as 0). */
	int32_t  head_adamw;
	/* The decoupled weight decay of the output heads' matrices (head.*.w),
	 * where weight_decay applies to the rest.  0 in the presets (measured:
	 * docs/model.md, Weight decay of the heads); negative: the same as weight_decay,
	 * resolved by hw_model_config_finish.  Decay bounds
	 * a matrix's norm (Muon's updates have a fixed size, so the norm settles
	 * near update / decay), and on a head that bound is the logits' scale:
	 * the probabilities it can express (docs/model.md, Weight decay of the
	 * heads).  State blobs before version 10 load with weight_decay. */
	float    head_weight_decay;
	/* 1 (the presets): a timestamp cell's value carries its absolute time,
	 * the z-scored epoch (timeenc.h, out[14]), beside its calendar phases.
	 * 0 (an option; only with rel_time, without it this is 1): in a
	 * sequence with an observation time that slot is 0 on every cell, so the
	 * model reads when things happened only relative to the observation time
	 * (trel) and by their calendar phases, not in which year: a time split
	 * serves at times the training never saw, where a learnt function of the
	 * epoch extrapolates (docs/model.md, Absolute time).  State blobs before
	 * version 12 load as 1. */
	int32_t  absolute_time;
	/* Schedule continuation (hw_lr_schedule_extend): 0 for a straight run.
	 * When sched_start > warmup_steps, steps t >= sched_start decay by cosine
	 * from sched_start_lr (at t = sched_start) to the 10% floor at
	 * total_steps, instead of the warm-up + cosine curve above. */
	int32_t  sched_start;
	float    sched_start_lr;
	/* Runtime only, not in the model state: after warm-up the schedule is
	 * read at max(t, sched_min_t) (a time budget moves it on, train_loop.c);
	 * 0: by step alone. */
	double   sched_min_t;
} HwModelConfig;

/* The link code of a link key (HwBatch.link_key, nonzero): bit j of
 * splitmix64(key) gives +-1/sqrt(HW_LINK_DIM) in slot j.  Fixed, not
 * learned: enc.link.w learns what each code means; distinct keys give
 * nearly orthogonal codes. */
#define HW_LINK_DIM 32
void hw_link_code(uint32_t key, float out[HW_LINK_DIM]);

/* The child-count features of one cell (HwBatch.child_key, child_count:
 * HW_CHILD_LINKS keys, each with HW_CHILD_WINDOWS counts; and, unless
 * mean_key is NULL, mean_key, child_mean: HW_MEAN_SLOTS keys, each with
 * HW_CHILD_WINDOWS means):
 *   out[w * HW_LINK_DIM + j] = sum over links l with a key of
 *                              code(key_l)[j] * log1p(count_l[w]) / 4
 *                            + sum over mean slots m with a key of
 *                              code(mkey_m)[j] * clamp(mean_m[w], -4, 4) / 2
 * so enc.cnt.w can read each link's counts and each pair's means back
 * through its code (distinct keys: nearly orthogonal codes; 14 codes in 32
 * dimensions stay linearly independent). */
#define HW_CNT_DIM (HW_LINK_DIM * HW_CHILD_WINDOWS)
void hw_child_count_features(const uint32_t *key, const uint16_t *count, const uint32_t *mean_key,
							 const float *mean, float out[HW_CNT_DIM]);

/* The count ramps of one cell (HwBatch.child_key, child_count as above):
 *   out[(w * HW_CRAMP_STEPS + t) * HW_LINK_DIM + j] = sum over links l with
 *       a key of code(key_l)[j] * clamp(log2(1 + count_l[w]) - t, 0, 1)
 * for t = 0 .. HW_CRAMP_STEPS-1: ramp 0 is "any" (n >= 1), ramp 1 climbs
 * from 1 to 3, ramp 2 from 3 to 7, ramp 3 from 7 to 15 (a piecewise-linear
 * basis in log2(1 + n) with knots at n = 0, 1, 3, 7, 15). */
#define HW_CRAMP_STEPS 4
#define HW_CRAMP_DIM (HW_LINK_DIM * HW_CHILD_WINDOWS * HW_CRAMP_STEPS)
/* HwModelConfig.count_ramps: which rows' cells get them */
#define HW_COUNT_RAMPS_ANCHOR    1
#define HW_COUNT_RAMPS_EVERY_ROW 2
void hw_count_ramp_features(const uint32_t *key, const uint16_t *count, float out[HW_CRAMP_DIM]);

/* Presets: "tiny" (64,4,2,S128,B16), "small" (128,4,4,256,32),
 * "base" (256,8,6,1024,32); d_text 256, lr 3e-3, warmup 100, total 10000. */
int hw_model_config_preset(HwModelConfig *cfg, const char *preset, HwError *err);
/* Override one field by its name above ("d_model", "lr", "seed", ...). */
int hw_model_config_set(HwModelConfig *cfg, const char *key, double value, HwError *err);
/* Fills derived fields (d_ff) and validates; called by hw_model_create too. */
int hw_model_config_finish(HwModelConfig *cfg, HwError *err);

/* Parameter description (by index, in flat-buffer order). */
typedef enum HwOptKind { HW_OPT_ADAMW = 0, HW_OPT_MUON = 1 } HwOptKind;
typedef struct HwParamInfo
{
	char     name[48];
	int32_t  ndim;             /* 1 or 2 */
	int32_t  shape[2];
	int64_t  offset;           /* in floats, into the flat buffers */
	int64_t  numel;
	int32_t  opt;              /* HwOptKind */
	int32_t  decay;            /* 1: weight decay applies */
	int32_t  head;             /* 1: an output head's (head.*): decays at head_weight_decay */
} HwParamInfo;

typedef struct HwModel HwModel;

/*
 * Creates and initialises a model (seeded: bit-identical for the same config).
 * col_table [ncols, d_text] and cat_table [ncat, d_text] are frozen f16 tables
 * (uint16 bits), copied to the device; cat_table may be NULL when ncat == 0.
 * The backend is borrowed (must outlive the model).  Activations are
 * preallocated for cfg->batch_size x cfg->seq_len.
 */
HwModel *hw_model_create(const HwModelConfig *cfg,
						 const uint16_t *col_table, int32_t ncols,
						 const uint16_t *cat_table, int32_t ncat,
						 HwBackend *be, HwError *err);
/*
 * A model for inference only (serving): its parameters are params[numel]
 * (flat-buffer order, as hw_model_get_flat(m, 0) gives them), host memory
 * the caller keeps valid and unchanged until hw_model_free: the model reads
 * them in place (e.g. from a read-only shared file mapping), never writes or
 * frees them.  No gradients or optimiser moments: training calls,
 * serialization and hw_model_set_* fail with HW_ERR_INVALID.  The cpu
 * backend reads params in place (it computes in host memory); a device
 * backend (CUDA) copies them once into device memory of the model's own,
 * freed with it, and the caller may then release params.  Activations as
 * hw_model_create.
 * hw_model_eval gives results bit-identical to a hw_model_create'd model
 * holding the same parameters.
 */
HwModel *hw_model_create_frozen(const HwModelConfig *cfg, const float *params, int64_t numel,
								const uint16_t *col_table, int32_t ncols,
								const uint16_t *cat_table, int32_t ncat, HwBackend *be, HwError *err);
int      hw_model_is_frozen(const HwModel *m);
void     hw_model_free(HwModel *m);
/* Device memory hw_model_create will need (parameters, gradients, moments,
 * activations, tables) in bytes, for a budget check before creating; -1 on
 * an invalid config. */
int64_t  hw_model_memory_bytes(const HwModelConfig *cfg, int32_t ncols, int32_t ncat);
const HwModelConfig *hw_model_config(const HwModel *m);
int64_t  hw_model_step(const HwModel *m);          /* optimiser steps taken */

typedef struct HwStepResult
{
	float   loss;              /* mean cell loss of the batch (before the update) */
	float   grad_norm;         /* global norm before clipping */
	float   lr;                /* learning rate used */
	int64_t step;              /* steps taken after this one */
} HwStepResult;

/* forward + backward + clip + optimiser step.  On NaN/Inf in the loss or the
 * gradients returns HW_ERR_NUMERIC and leaves parameters, moments and step
 * unchanged. */
int hw_model_train_step(HwModel *m, const HwBatch *batch, HwStepResult *res, HwError *err);

/* Predictions of one batch (host memory; hw_predictions_alloc sizes them). */
typedef struct HwPredictions
{
	int32_t B, K;
	int32_t stype;             /* target_stype of the batch */
	float  *p_null;            /* [B] P(value is NULL) */
	float  *value;             /* [B] num: z-score; bool: P(true); ts: epoch z (dim 14); cat: argmax index */
	float  *ts;                /* [B,15] raw timestamp head */
	float  *cat_probs;         /* [B,K] softmax over the batch's category block (K = cat_emb_count) */
	float  *loss;              /* [B] per-sequence cell loss */
	int32_t ord_levels;        /* numerical with the ordinal loss: thresholds in use (else 0) */
	float  *ord_p;             /* [B,HW_ORD_LEVELS] P(level > k), k < ord_levels (the ordinal head) */
} HwPredictions;
HwPredictions *hw_predictions_alloc(int32_t B, int32_t K);
/* The ordinal head's prediction (HwBatch.ord_levels > 0): from the logits of
 * S_k = P(level > k), k < levels, the median level m (the first k with
 * S_k < 1/2; levels if none) as a value that rounds to m: m - 1/2 + f, f in
 * (0, 1) growing with S_{m-1} - 1/2 against S_{m-1} - S_m, so that the
 * value before rounding says how near the median came to m - 1 or m + 1.
 * _z: that value as the task's z-score, (level - shift) / scale. */
float hw_ordinal_median_level(const float *logits, int levels);
float hw_ordinal_median_z(const float *logits, int levels, float scale, float shift);
void           hw_predictions_free(HwPredictions *p);

/* Forward only, no update: mean loss and (if pred != NULL, sized >= B, K)
 * per-sequence predictions. */
int hw_model_eval(HwModel *m, const HwBatch *batch, float *loss, HwPredictions *pred, HwError *err);

/* Inference (serving): the same arithmetic per sequence as hw_model_eval's
 * forward, with no tape, no loss and the work after the last attention
 * sublayer done on the B target cells only.  A sequence's predictions are
 * bit-identical whatever the other sequences of the batch and the thread
 * count.  pred sized >= B, K; pred->loss is zeroed.  The batch's targets
 * are not read (a categorical target id need only lie inside its block). */
int hw_model_predict(HwModel *m, const HwBatch *batch, HwPredictions *pred, HwError *err);

/* Precision of hw_model_predict's transformer-layer GEMMs (the encoder,
 * attention, norms and heads stay fp32).  BF16: weights and activations
 * rounded to bf16, fp32 accumulation (backend.h bf16_*: the CPU backend on
 * processors with AVX512_BF16); AUTO: bf16 where the backend can, else fp32.
 * A model starts in FP32.  Within one precision a sequence's predictions
 * stay bit-identical whatever the batch.  Setting BF16 or AUTO takes a bf16
 * copy of the parameters as they are now (kept until hw_model_free or
 * FP32); training steps drop it (the next prediction retakes it), other
 * parameter writes (hw_model_set_flat, loading state) need the precision
 * set again.  HW_ERR_INVALID: BF16 asked where the backend cannot;
 * HW_ERR_NOMEM: no memory for the copy (the model stays as it was). */
typedef enum HwPrecision { HW_PRECISION_AUTO = 0, HW_PRECISION_FP32 = 1, HW_PRECISION_BF16 = 2 } HwPrecision;
int         hw_model_set_inference_precision(HwModel *m, HwPrecision p, HwError *err);
/* the precision hw_model_predict uses now: HW_PRECISION_FP32 or HW_PRECISION_BF16 */
HwPrecision hw_model_inference_precision(const HwModel *m);
/* a precision's name ("auto", "fp32", "bf16"), NULL past the last */
const char *hw_precision_name(int p);

/* Precision of the transformer layers' GEMMs in training (forward, input
 * and weight gradients; the encoder, attention, norms, heads, loss and
 * optimiser stay fp32), on the CPU backend.  BF16: both operands rounded
 * to bf16, fp32 accumulation (backend.h gemm_bf16_any, on processors with
 * AVX512_BF16), about twice the fp32 GEMM's speed; AUTO: bf16 where the
 * backend can, else fp32.  A backend without gemm_bf16_any (CUDA) keeps
 * its own GEMM arithmetic (bf16 tensor cores by default, docs/cuda.md)
 * whatever p.  A model starts in FP32; it applies to everything
 * hw_model_forward_backward, hw_model_train_step and hw_model_eval run on
 * this model.  HW_ERR_INVALID: BF16 asked on a CPU backend that cannot, or
 * an unknown p.  hw_model_train_precision: BF16 when the CPU backend's
 * bf16 products run. */
int         hw_model_set_train_precision(HwModel *m, HwPrecision p, HwError *err);
HwPrecision hw_model_train_precision(const HwModel *m);

/* Lower level (tests, the PyTorch fixture): forward + backward leaving the
 * gradients in the grad buffer, no update; then the update alone. */
int hw_model_forward_backward(HwModel *m, const HwBatch *batch, float *loss, HwError *err);
/* full: the training forward computes the last layer's tail (the last
 * attention sublayer's projection and residual, the last FFN) for every
 * cell, not only the target cells that reach the loss: the reference the
 * pruned tail is tested against (the same loss and gradients; slower).
 * The serving forward then computes every stage before its last attention
 * sublayer for every cell (no cell lists, model_reach.c). */
void hw_model_set_full_tail(HwModel *m, bool full);
/* The serving forward's cell list at stage k (forward order l*(A+1) + s,
 * s == A the layer's FFN) for sequence b of the last batch predicted: how
 * many cells (their flat b*S + position into cells when not NULL, in
 * order); -1 when that stage computed every cell (tests, benchmarks). */
int  hw_model_reach_cells(const HwModel *m, int k, int b, int32_t *cells);
int hw_model_optimizer_step(HwModel *m, float *grad_norm, float *lr, HwError *err);
/* Learning rate of step t (1-based) under the config's schedule. */
float hw_lr_at(const HwModelConfig *cfg, int64_t t);
/* A new total for a run at step `step` (resume with a different steps):
 * sets total_steps and, after warm-up, makes the schedule continue from the
 * learning rate it had at `step` (sched_start, sched_start_lr), decaying to
 * the 10% floor at the new total, so the lr does not jump.  The same total,
 * or a step inside warm-up, leaves the schedule as a straight run's. */
void hw_lr_schedule_extend(HwModelConfig *cfg, int64_t step, int32_t new_total);

/* Parameters and gradients by index / name (copies through the backend). */
int                 hw_model_n_params(const HwModel *m);
int64_t             hw_model_numel(const HwModel *m);       /* total floats */
const HwParamInfo  *hw_model_param_info(const HwModel *m, int i);
int                 hw_model_param_index(const HwModel *m, const char *name);  /* -1 if unknown */
/* which: 0 params, 1 grads, 2 first moment (AdamW m / Muon buffer), 3 AdamW v. */
int hw_model_get_tensor(HwModel *m, int which, const char *name, float *dst, int64_t n, HwError *err);
int hw_model_set_tensor(HwModel *m, int which, const char *name, const float *src, int64_t n, HwError *err);
/* HW_OK, or the error the backend kept (backend.h last_error: on CUDA a
 * failed kernel, copy or allocation; its d2h copies then return NaN bytes),
 * which it clears.  Call after reading buffers that must be trusted (the
 * training state does).  Synchronises a device backend. */
int hw_model_backend_status(HwModel *m, HwError *err);
/* The flat DEVICE buffer `which` (as above; hw_model_numel floats) and the
 * backend it lives on, for collectives that work in place on the device
 * (data-parallel gradients, dp_step.h).  NULL for a bad which. */
float     *hw_model_device_buffer(HwModel *m, int which);
HwBackend *hw_model_backend(HwModel *m);
/* Whole flat buffers (hw_model_numel floats); which 4: the parameter
 * average (cfg.ema_decay > 0 only). */
int hw_model_get_flat(HwModel *m, int which, float *dst);
int hw_model_set_flat(HwModel *m, int which, const float *src);

/* ---- parameter average (cfg.ema_decay > 0) ----
 * hw_model_has_ema: 1 when the model keeps one.
 * hw_model_swap_ema: exchanges the parameters and the average (pointers,
 *   no copy), so that forward/eval/predict read the average; call again to
 *   swap back.  While swapped, training steps and serialization fail
 *   (HW_ERR_INVALID): the average is not what the optimiser updates.
 * hw_model_ema_swapped: 1 while swapped.
 * hw_model_adopt_ema: for a model loaded only to predict (serving,
 *   evaluation): its parameters become the average, for good, and the
 *   average's buffer is freed; afterwards training steps, serialization
 *   and state loads fail (HW_ERR_INVALID) and hw_model_ema_adopted is 1.
 *   A model without an average is left as it is.  HW_OK, or
 *   HW_ERR_INVALID for a frozen model.
 * hw_model_drop_ema: the same for serving the last parameters: the
 *   average's buffer is freed unread (swapped back first if swapped), with
 *   the same restrictions afterwards. */
int hw_model_has_ema(const HwModel *m);
int hw_model_swap_ema(HwModel *m, HwError *err);
int hw_model_ema_swapped(const HwModel *m);
int hw_model_ema_adopted(const HwModel *m);
int hw_model_adopt_ema(HwModel *m, HwError *err);
int hw_model_drop_ema(HwModel *m, HwError *err);
/* The averaging weight d of step t (1-based) for a decay (see ema_decay). */
float hw_ema_weight(float ema_decay, int64_t t);

/* ---- training state (model_state.c) ----
 * Versioned little-endian blob: magic "HWMS", format version, config, step,
 * RNG state, parameter table (names, shapes), params, m, v, [ema], checksum. */
#define HW_MODEL_STATE_VERSION 12    /* 2: + sched_start, sched_start_lr; 3: + rel_time, link_types;
									  * 4: + child_counts; 5: + child_means; 6: + ema_decay and,
									  * when > 0, the parameter average; 7: + ordinal_head;
									  * 8: + count_ramps; 9: + head_adamw; 10: + head_weight_decay;
									  * 11: count_ramps 1 means the anchor row only (8-10: every
									  * row, loaded as HW_COUNT_RAMPS_EVERY_ROW); 12: + absolute_time;
									  * 1..11 still load */
/* *out is malloc'ed; free() it. */
int      hw_model_state_serialize(HwModel *m, uint8_t **out, size_t *len, HwError *err);
/* Reads the config only (to create a model before loading). */
int      hw_model_state_read_config(const uint8_t *buf, size_t len, HwModelConfig *cfg, HwError *err);
/* Loads params, moments, step and RNG into a model of the same config. */
int      hw_model_state_load(HwModel *m, const uint8_t *buf, size_t len, HwError *err);
/* Convenience: read config, create, load. */
HwModel *hw_model_state_deserialize(const uint8_t *buf, size_t len,
									const uint16_t *col_table, int32_t ncols,
									const uint16_t *cat_table, int32_t ncat,
									HwBackend *be, HwError *err);
/* The same for a model loaded only to predict (serving, evaluation, the
 * debug tape), on the weights validation chose for the task: average 1
 * reads the parameter average when the state kept one (hw_model_adopt_ema),
 * 0 the last parameters (hw_model_drop_ema); either way it cannot be
 * trained or serialized.  A state without an average serves its
 * parameters for both. */
HwModel *hw_model_state_deserialize_served(const uint8_t *buf, size_t len,
										   const uint16_t *col_table, int32_t ncols,
										   const uint16_t *cat_table, int32_t ncat,
										   int average, HwBackend *be, HwError *err);

/* RNG state (xoshiro256**, 4 words), part of the training state. */
void hw_model_rng_state(const HwModel *m, uint64_t s[4]);
void hw_model_set_rng_state(HwModel *m, const uint64_t s[4]);
void hw_model_set_step(HwModel *m, int64_t step);

/* The tape of the last forward/backward (tape.h), for the debug dump. */
struct HwTape;
const struct HwTape *hw_model_tape(const HwModel *m);

#endif /* HW_MODEL_H */
