/*
 * test_model_infer.c: the inference forward (hw_model_predict).
 *  - a sequence's predictions are bit-identical alone (B = 1, one thread) and
 *    inside any batch (B = 24, two threads, three chunks of rows; a reordered
 *    sub-batch of 3), for all four target types, and with the count ramps
 *    of anchor rows;
 *  - the last attention sublayer on the target rows only (their query,
 *    attention, projection) agrees with computing it whole: bit for bit in
 *    bf16, to the last bits in fp32 (other sgemm call shapes);
 *  - they equal the training forward's (hw_model_eval, which computes every
 *    cell through the last layer and the loss) to fp32 rounding;
 *  - in bf16 (processors with AVX512_BF16), the same bit-for-bit checks
 *    hold within bf16, and predictions stay within 2e-2 of fp32's;
 *  - the stages on cell lists (model_reach.c; half the test sequences have
 *    few children, so that their lists are short) agree with the whole
 *    forward (hw_model_set_full_tail) to fp32 rounding, and the lists are
 *    the cells that reach the target by the masks' definitions
 *    (attention.h), found pair by pair.
 */
#include "unit.h"
#include "core/model.h"
#include "synth_batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Sequences idx[0..n-1] of bt as a new batch (text embeddings copied whole). */
static HwBatch *
batch_pick(const HwBatch *bt, const int *idx, int n)
{
	HwBatch *o = hw_batch_alloc(n, bt->S, bt->R, bt->U, bt->d_text);
	size_t   S = bt->S, R = bt->R;

	if (!o)
		return NULL;
	for (int j = 0; j < n; j++)
	{
		size_t f = (size_t) idx[j] * S, t = (size_t) j * S;

#define CP(field, per) memcpy(o->field + t * (per), bt->field + f * (per), sizeof(*bt->field) * S * (per))
		CP(semantic_types, 1); CP(column_ids, 1); CP(seq_row_ids, 1); CP(is_null, 1);
		CP(numeric_values, 1); CP(timestamp_values, HW_TS_DIM); CP(bool_values, 1);
		CP(categorical_embed_ids, 1); CP(text_embed_ids, 1); CP(is_target, 1); CP(is_padding, 1);
		CP(col_perm, 1); CP(out_perm, 1); CP(in_perm, 1); CP(link_key, 1);
		CP(child_key, HW_CHILD_LINKS); CP(child_count, HW_CHILD_LINKS * HW_CHILD_WINDOWS);
		CP(mean_key, HW_MEAN_SLOTS); CP(child_mean, HW_MEAN_SLOTS * HW_CHILD_WINDOWS);
#undef CP
		memcpy(o->fk_adj + (size_t) j * R * R, bt->fk_adj + (size_t) idx[j] * R * R, R * R);
		o->seed_time[j] = bt->seed_time[idx[j]];
	}
	if (bt->U > 0)
		memcpy(o->text_batch_embeddings, bt->text_batch_embeddings, sizeof(uint16_t) * bt->U * bt->d_text);
	o->target_stype = bt->target_stype;
	o->task_idx = bt->task_idx;
	o->cat_emb_start = bt->cat_emb_start;
	o->cat_emb_count = bt->cat_emb_count;
	return o;
}

/* Odd sequences: children rows 4.. point at the parent (row 1) instead of
 * the anchor (row 0), so the anchor has two children and the late stages
 * of the serving forward need few of the cells. */
static void
few_children(HwBatch *bt)
{
	size_t R = bt->R;

	for (int b = 1; b < bt->B; b += 2)
		for (size_t r = 4; r < R; r++)
		{
			uint8_t *adj = bt->fk_adj + (size_t) b * R * R + r * R;

			if (adj[0])
			{
				adj[0] = 0;
				adj[1] = 1;
			}
		}
}

/* cells listed at some stage over all sequences, and how many of the
 * lists are shorter than S (-1: no stage ran on lists) */
static int
short_lists(const HwModel *m, const HwBatch *bt)
{
	const HwModelConfig *c = hw_model_config(m);
	int                  A = c->full_attention ? 4 : 3, n = 0, any = 0;

	for (int k = 0; k < c->n_layers * (A + 1); k++)
		for (int b = 0; b < bt->B; b++)
		{
			int len = hw_model_reach_cells(m, k, b, NULL);

			any |= len >= 0;
			n += len >= 0 && len < bt->S;
		}
	return any ? n : -1;
}

/* Prediction b of p and prediction c of q: same bits? */
static int
same_bits(const HwPredictions *p, int b, const HwPredictions *q, int c, int K)
{
	return memcmp(&p->p_null[b], &q->p_null[c], sizeof(float)) == 0 &&
		memcmp(&p->value[b], &q->value[c], sizeof(float)) == 0 &&
		memcmp(&p->ts[b * 15], &q->ts[c * 15], sizeof(float) * 15) == 0 &&
		(K == 0 || memcmp(&p->cat_probs[(size_t) b * p->K], &q->cat_probs[(size_t) c * q->K], sizeof(float) * K) == 0);
}

/* Each sequence alone (one thread) and in a reordered sub-batch (two
 * threads) against its prediction in the whole batch `all`: same bits. */
static int
check_batch_single(HwModel *m, HwBackend *be, const HwBatch *bt, const HwPredictions *all, int K, const char *what)
{
	HwError        err = {0};
	HwPredictions *one = hw_predictions_alloc(bt->B, K > 0 ? K : 1);
	int            idx[3] = {6, 1, 3}, ok = 1;
	HwBatch       *sb;

	hw_backend_cpu_set_threads(be, 1);
	for (int b = 0; b < bt->B && ok; b++)
	{
		sb = batch_pick(bt, &b, 1);
		ok = hw_model_predict(m, sb, one, &err) == HW_OK && same_bits(all, b, one, 0, K);
		if (!ok)
			printf("  %s stype %d: sequence %d alone differs from the batch (%.9g vs %.9g)\n", what,
				   bt->target_stype, b, one->value[0], all->value[b]);
		hw_batch_free(sb);
	}
	hw_backend_cpu_set_threads(be, 2);
	sb = batch_pick(bt, idx, 3);
	ok = ok && hw_model_predict(m, sb, one, &err) == HW_OK;
	for (int j = 0; j < 3 && ok; j++)
		if (!(ok = same_bits(all, idx[j], one, j, K)))
			printf("  %s stype %d: sequence %d in a sub-batch differs\n", what, bt->target_stype, idx[j]);
	hw_batch_free(sb);
	hw_predictions_free(one);
	return ok;
}

/* The reference's two most probable classes of sequence b are within tol
 * of each other: a near tie, whose argmax may flip under rounding. */
static bool
near_tie(const HwPredictions *q, int b, int K, double tol)
{
	const float *pr = q->cat_probs + (size_t) b * q->K;
	float        top = -1, second = -1;

	for (int k = 0; k < K; k++)
	{
		if (pr[k] > top)
		{
			second = top;
			top = pr[k];
		}
		else if (pr[k] > second)
			second = pr[k];
	}
	return K > 1 && top - second <= tol;
}

/* |p - q| within atol + rtol*|q| for every output of every sequence; a
 * categorical argmax (value) must agree unless the reference's two best
 * classes are as near as the tolerance allows the probabilities to move */
static int
close_preds(const HwPredictions *p, const HwPredictions *q, int B, int K, double atol, double rtol)
{
#define NEAR(x, y) (fabs((double) (x) - (double) (y)) <= atol + rtol * fabs((double) (y)))
	for (int b = 0; b < B; b++)
	{
		bool tie = K > 0 && near_tie(q, b, K, 2 * (atol + rtol));

		if (!NEAR(p->p_null[b], q->p_null[b]) || (!tie && !NEAR(p->value[b], q->value[b])))
			return 0;
		for (int d = 0; d < 15; d++)
			if (!NEAR(p->ts[b * 15 + d], q->ts[b * 15 + d]))
				return 0;
		for (int k = 0; k < K; k++)
			if (!NEAR(p->cat_probs[(size_t) b * p->K + k], q->cat_probs[(size_t) b * q->K + k]))
				return 0;
	}
#undef NEAR
	return 1;
}

/* hw_model_predict with the backend's attn_forward_rows hidden: the last
 * attention sublayer computed whole and its target rows gathered */
static int
predict_untrimmed(HwModel *m, HwBackend *be, const HwBatch *bt, HwPredictions *pr)
{
	HwError             err = {0};
	const HwBackendOps *real = be->ops;
	HwBackendOps        shim = *real;
	int                 rc;

	shim.attn_forward_rows = NULL;
	be->ops = &shim;
	rc = hw_model_predict(m, bt, pr, &err);
	be->ops = real;
	return rc;
}

/* hw_model_predict counting the backend's gemm_f32_packed calls */
static void (*real_f32_packed)(HwBackend *, int, int, int, const float *, int, const void *, int, float, float *, int);
static int  f32_packed_calls;

static void
counting_f32_packed(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0,
					float beta, float *C, int ldc)
{
	f32_packed_calls++;
	real_f32_packed(be, M, N, K, A, lda, packed, n0, beta, C, ldc);
}

static int
predict_counting_f32(HwModel *m, HwBackend *be, const HwBatch *bt, HwPredictions *pr, int *calls)
{
	HwError             err = {0};
	const HwBackendOps *real = be->ops;
	HwBackendOps        shim = *real;
	int                 rc;

	real_f32_packed = real->gemm_f32_packed;
	if (real_f32_packed)
		shim.gemm_f32_packed = counting_f32_packed;
	f32_packed_calls = 0;
	be->ops = &shim;
	rc = hw_model_predict(m, bt, pr, &err);
	be->ops = real;
	*calls = f32_packed_calls;
	return rc;
}

/* The tiny preset for batches of B x S synthetic cells (d_text 32), with
 * the caller's changes to its config; *colt, *catt: its tables (freed by
 * the caller) */
static HwModel *
tiny_model(HwBackend *be, int B, int S, void (*edit)(HwModelConfig *, int, int), int a1, int a2, uint16_t **colt,
		   uint16_t **catt)
{
	HwError       err = {0};
	HwModelConfig c;

	hw_model_config_preset(&c, "tiny", &err);
	c.d_text = 32;
	c.seq_len = S;
	c.batch_size = B;
	edit(&c, a1, a2);
	hw_synth_tables(c.d_text, 3, colt, catt);
	return hw_model_create(&c, *colt, HW_SYNTH_NCOLS, *catt, HW_SYNTH_NCAT, be, &err);
}

static void
with_ramps(HwModelConfig *c, int ramps, int unused)
{
	(void) unused;
	c->seed = 5;
	c->count_ramps = ramps ? HW_COUNT_RAMPS_ANCHOR : 0;
}

static void
with_layers(HwModelConfig *c, int layers, int full_attention)
{
	c->n_layers = layers;
	c->full_attention = full_attention;
}

/* ramps: the model has count ramps (HW_COUNT_RAMPS_ANCHOR) and the
 * batch's anchor rows children, so that the compacted ramp cells
 * (model_internal.h) take part */
static void
check_type_with(int stype, int ramps)
{
	HwError       err = {0};
	HwBackend    *be = hw_backend_cpu_create(2, &err);
	uint16_t     *colt, *catt;
	HwModel      *m;
	HwBatch      *bt;
	int           B = 24, S = 64;   /* 1,536 cells: three of the serving forward's chunks of rows */
	HwSynthSpec   sp = { .B = B, .S = S, .d_text = 32, .target_stype = stype, .seed = 11 };
	HwPredictions *all, *ref, *bf, *fp;
	float         loss;
	int           K, calls;

	m = tiny_model(be, B, S, with_ramps, ramps, 0, &colt, &catt);
	bt = hw_synth_batch(&sp, 0);
	CHECK(m && bt);
	if (!m || !bt)
		return;
	few_children(bt);
	if (ramps)
		hw_synth_anchor_counts(bt, 0, 1, 3);
	/* a few training steps, so that the weights are not the symmetric init */
	for (int s = 0; s < 3; s++)
	{
		HwStepResult r;

		CHECK_EQ_INT(hw_model_train_step(m, bt, &r, &err), HW_OK);
	}
	K = stype == HW_ST_CATEGORICAL ? (int) bt->cat_emb_count : 0;
	all = hw_predictions_alloc(B, K > 0 ? K : 1);
	ref = hw_predictions_alloc(B, K > 0 ? K : 1);
	bf = hw_predictions_alloc(B, K > 0 ? K : 1);
	fp = hw_predictions_alloc(B, K > 0 ? K : 1);
	CHECK_EQ_INT(hw_model_inference_precision(m), HW_PRECISION_FP32);
	CHECK_EQ_INT(hw_model_predict(m, bt, all, &err), HW_OK);
	CHECK_MSG(short_lists(m, bt) > 0, "no stage ran on a short cell list (%d)", short_lists(m, bt));
	CHECK(check_batch_single(m, be, bt, all, K, "fp32"));
	/* the stages on cell lists against every cell computed: fp32 rounding
	 * (a listed row's products are calls of another height) */
	hw_model_set_full_tail(m, true);
	CHECK_EQ_INT(hw_model_predict(m, bt, ref, &err), HW_OK);
	CHECK_EQ_INT(short_lists(m, bt), -1);
	hw_model_set_full_tail(m, false);
	CHECK(close_preds(all, ref, B, K, 1e-6, 1e-5));
	if (ramps)
	{
		/* the steps moved enc.cramp.w off zero, and the ramps reach the predictions */
		int64_t n = (int64_t) hw_model_config(m)->d_model * HW_CRAMP_DIM;
		float  *w = calloc((size_t) n, sizeof(float)), *keep = malloc(sizeof(float) * n);

		CHECK_EQ_INT(hw_model_get_tensor(m, 0, "enc.cramp.w", keep, n, &err), HW_OK);
		CHECK_EQ_INT(hw_model_set_tensor(m, 0, "enc.cramp.w", w, n, &err), HW_OK);
		CHECK_EQ_INT(hw_model_predict(m, bt, ref, &err), HW_OK);
		CHECK_MSG(!close_preds(ref, all, B, K, 0, 0), "the count ramps changed no prediction");
		CHECK_EQ_INT(hw_model_set_tensor(m, 0, "enc.cramp.w", keep, n, &err), HW_OK);
		free(w);
		free(keep);
	}

	/* the last sublayer on the target rows only, against computing it whole:
	 * in fp32 the targets' q and gate come from one-row sgemm calls (and
	 * k|v from a narrower one), which OpenBLAS sums in another order than
	 * a row inside a sequence's call: last-bit differences, within 1e-5
	 * (exact in bf16 below, whose GEMM is the same for every row) */
	CHECK_EQ_INT(predict_untrimmed(m, be, bt, ref), HW_OK);
	CHECK(close_preds(all, ref, B, K, 1e-6, 1e-5));

	/* against the training forward */
	CHECK_EQ_INT(hw_model_eval(m, bt, &loss, ref, &err), HW_OK);
	CHECK(close_preds(all, ref, B, K, 1e-5, 1e-4));

	/* fp32 on packed weights (where the backend packs them: AVX-512), the
	 * precision fp32 set: batch = single, the trimmed tail exact (a row's
	 * bits never depend on its call), and within fp32 rounding of the
	 * OpenBLAS blocks above; elsewhere the blocks' own bits */
	CHECK_EQ_INT(hw_model_set_inference_precision(m, HW_PRECISION_FP32, &err), HW_OK);
	CHECK_EQ_INT(hw_model_inference_precision(m), HW_PRECISION_FP32);
	CHECK_EQ_INT(predict_counting_f32(m, be, bt, fp, &calls), HW_OK);
	if (be->ops->f32_weight_pack && hw_backend_cpu_f32_pack_supported())
	{
		CHECK_MSG(calls > 0, "fp32 set, but no GEMM ran on packed weights");
		CHECK(check_batch_single(m, be, bt, fp, K, "fp32 packed"));
		CHECK_EQ_INT(predict_untrimmed(m, be, bt, ref), HW_OK);
		for (int b = 0; b < B; b++)
			CHECK_MSG(same_bits(fp, b, ref, b, K), "packed fp32 stype %d: sequence %d differs untrimmed", stype, b);
		CHECK(close_preds(fp, all, B, K, 1e-6, 1e-5));
	}
	else
	{
		CHECK_EQ_INT(calls, 0);
		for (int b = 0; b < B; b++)
			CHECK(same_bits(all, b, fp, b, K));
	}

	/* bf16 (where the processor has it): batch = single within bf16, the
	 * trimmed tail exact, and close to fp32 */
	if (be->ops->bf16_usable(be))
	{
		/* auto: bf16 where it beats this machine's fp32 products */
		CHECK_EQ_INT(hw_model_set_inference_precision(m, HW_PRECISION_AUTO, &err), HW_OK);
		CHECK_EQ_INT(hw_model_inference_precision(m),
					 be->ops->bf16_preferred(be, false) ? HW_PRECISION_BF16 : HW_PRECISION_FP32);
		CHECK_EQ_INT(hw_model_set_inference_precision(m, HW_PRECISION_BF16, &err), HW_OK);
		CHECK_EQ_INT(hw_model_inference_precision(m), HW_PRECISION_BF16);
		CHECK_EQ_INT(hw_model_predict(m, bt, bf, &err), HW_OK);
		CHECK(check_batch_single(m, be, bt, bf, K, "bf16"));
		CHECK_EQ_INT(predict_untrimmed(m, be, bt, ref), HW_OK);
		for (int b = 0; b < B; b++)
			CHECK_MSG(same_bits(bf, b, ref, b, K), "bf16 stype %d: sequence %d differs untrimmed", stype, b);
		CHECK_MSG(!close_preds(bf, all, B, K, 0, 0), "bf16 gave fp32's bits: not in use");
		CHECK(close_preds(bf, all, B, K, 2e-2, 2e-2));
		/* back to fp32: fp32's bits again */
		CHECK_EQ_INT(hw_model_set_inference_precision(m, HW_PRECISION_FP32, &err), HW_OK);
		CHECK_EQ_INT(hw_model_predict(m, bt, ref, &err), HW_OK);
		for (int b = 0; b < B; b++)
			CHECK(same_bits(fp, b, ref, b, K));
	}
	hw_predictions_free(all);
	hw_predictions_free(ref);
	hw_predictions_free(bf);
	hw_predictions_free(fp);
	hw_batch_free(bt);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}

UNIT_TEST(model_predict_batch_equals_single_numerical) { check_type_with(HW_ST_NUMERICAL, 0); }
UNIT_TEST(model_predict_batch_equals_single_timestamp) { check_type_with(HW_ST_TIMESTAMP, 0); }
UNIT_TEST(model_predict_batch_equals_single_boolean) { check_type_with(HW_ST_BOOLEAN, 0); }
UNIT_TEST(model_predict_batch_equals_single_categorical) { check_type_with(HW_ST_CATEGORICAL, 0); }
UNIT_TEST(model_predict_batch_equals_single_count_ramps) { check_type_with(HW_ST_BOOLEAN, 1); }

/* the cells whose output at stage k reaches the target, pair by pair from
 * the masks of attention.h: need [S] holds those after stage k + 1 and
 * becomes those after stage k - 1 (an FFN reads its own cell only) */
static void
reads_by_pairs(const HwBatch *bt, int b, int kind, uint8_t *need)
{
	int            S = bt->S, R = bt->R;
	const uint8_t *pad = bt->is_padding + (size_t) b * S, *adj = bt->fk_adj + (size_t) b * R * R;
	const int32_t *col = bt->column_ids + (size_t) b * S;
	const uint16_t *row = bt->seq_row_ids + (size_t) b * S;
	uint8_t        was[1024];

	memcpy(was, need, S);
	for (int i = 0; i < S; i++)
		for (int j = 0; j < S && was[i]; j++)
		{
			bool allowed = kind == 0 ? row[i] == row[j] || adj[row[i] * R + row[j]]    /* outbound */
				: kind == 1 ? adj[row[j] * R + row[i]] != 0                             /* inbound */
				: kind == 2 ? col[i] == col[j] : true;                                  /* column, full */

			if (i == j || (allowed && !pad[i] && !pad[j]))
				need[j] = 1;
		}
}

static void
check_lists(int layers, int full_attention)
{
	HwError       err = {0};
	HwBackend    *be = hw_backend_cpu_create(2, &err);
	uint16_t     *colt, *catt;
	HwModel      *m;
	HwBatch      *bt;
	int           B = 8, S = 64, A = full_attention ? 4 : 3, nst = layers * (A + 1), listed = 0, short_ones = 0;
	HwPredictions *pr, *ref;
	int32_t       cells[64];

	m = tiny_model(be, B, S, with_layers, layers, full_attention, &colt, &catt);
	bt = hw_synth_batch(&(HwSynthSpec){ .B = B, .S = S, .d_text = 32, .target_stype = HW_ST_BOOLEAN, .seed = 3,
										.pad_frac = 0.2f }, 0);
	CHECK(m && bt);
	few_children(bt);
	pr = hw_predictions_alloc(B, 1);
	CHECK_EQ_INT(hw_model_predict(m, bt, pr, &err), HW_OK);
	for (int b = 0; b < B; b++)
	{
		uint8_t need[64] = {0};
		int     t = 0;

		while (!bt->is_target[b * S + t])
			t++;
		need[t] = 1;
		reads_by_pairs(bt, b, A - 1, need);             /* the last attention sublayer */
		for (int k = nst - 3; k >= 0; k--)
		{
			int n = 0, len = hw_model_reach_cells(m, k, b, cells), s = k % (A + 1);

			for (int i = 0; i < S; i++)
				n += need[i];
			if (len >= 0)
			{
				bool few = 4 * n <= 3 * S;

				listed++;
				short_ones += len < S;
				CHECK_MSG(len == (few ? n : S), "stage %d sequence %d: %d cells listed, %d needed", k, b, len, n);
				for (int i = 0, j = 0; i < S; i++)
					if (!few || need[i])
						CHECK_MSG(cells[j++] == b * S + i, "stage %d sequence %d: cell %d not listed", k, b, i);
			}
			if (s < A)
				reads_by_pairs(bt, b, s, need);
		}
	}
	CHECK_MSG(listed > 0, "no stage ran on lists");
	/* with full attention last every cell is needed from the first stage
	 * on (the lists are the buffers themselves); without it, the sequences
	 * with few children have short lists */
	CHECK_MSG(full_attention ? short_ones == 0 : short_ones > 0, "%d short lists of %d", short_ones, listed);
	/* and the predictions are those of every cell computed */
	ref = hw_predictions_alloc(B, 1);
	hw_model_set_full_tail(m, true);
	CHECK_EQ_INT(hw_model_predict(m, bt, ref, &err), HW_OK);
	CHECK(close_preds(pr, ref, B, 0, 1e-6, 1e-5));
	hw_predictions_free(ref);
	hw_predictions_free(pr);
	hw_batch_free(bt);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}

UNIT_TEST(model_predict_cell_lists_follow_the_masks) { check_lists(2, 0); check_lists(3, 0); }
UNIT_TEST(model_predict_cell_lists_full_attention) { check_lists(3, 1); }
