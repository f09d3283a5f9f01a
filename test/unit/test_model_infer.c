/*
 * test_model_infer.c: the inference forward (hw_model_predict).
 *  - a sequence's predictions are bit-identical alone (B = 1, one thread) and
 *    inside any batch (B = 8, two threads; a reordered sub-batch of 3), for
 *    all four target types;
 *  - they equal the training forward's (hw_model_eval, which computes every
 *    cell through the last layer and the loss) to fp32 rounding: the
 *    target-rows-only tail changes no arithmetic of a target row.
 */
#include "unit.h"
#include "model.h"
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

/* Prediction b of p and prediction c of q: same bits? */
static int
same_bits(const HwPredictions *p, int b, const HwPredictions *q, int c, int K)
{
	return memcmp(&p->p_null[b], &q->p_null[c], sizeof(float)) == 0 &&
		memcmp(&p->value[b], &q->value[c], sizeof(float)) == 0 &&
		memcmp(&p->ts[b * 15], &q->ts[c * 15], sizeof(float) * 15) == 0 &&
		(K == 0 || memcmp(&p->cat_probs[(size_t) b * p->K], &q->cat_probs[(size_t) c * q->K], sizeof(float) * K) == 0);
}

static void
check_type(int stype)
{
	HwError       err = {0};
	HwModelConfig c;
	HwBackend    *be = hw_backend_cpu_create(2, &err);
	uint16_t     *colt, *catt;
	HwModel      *m;
	HwBatch      *bt;
	int           B = 8, S = 64;
	HwSynthSpec   sp = { .B = B, .S = S, .d_text = 32, .target_stype = stype, .seed = 11 };
	HwPredictions *all, *one, *sub, *ref;
	float         loss;
	int           K;

	hw_model_config_preset(&c, "tiny", &err);
	c.d_text = 32;
	c.seq_len = S;
	c.batch_size = B;
	c.seed = 5;
	hw_synth_tables(c.d_text, 3, &colt, &catt);
	m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	bt = hw_synth_batch(&sp, 0);
	CHECK(m && bt);
	if (!m || !bt)
		return;
	/* a few training steps, so that the weights are not the symmetric init */
	for (int s = 0; s < 3; s++)
	{
		HwStepResult r;

		CHECK_EQ_INT(hw_model_train_step(m, bt, &r, &err), HW_OK);
	}
	K = stype == HW_ST_CATEGORICAL ? (int) bt->cat_emb_count : 0;
	all = hw_predictions_alloc(B, K > 0 ? K : 1);
	one = hw_predictions_alloc(B, K > 0 ? K : 1);
	sub = hw_predictions_alloc(B, K > 0 ? K : 1);
	ref = hw_predictions_alloc(B, K > 0 ? K : 1);
	CHECK_EQ_INT(hw_model_predict(m, bt, all, &err), HW_OK);

	/* each sequence alone, one thread */
	hw_backend_cpu_set_threads(be, 1);
	for (int b = 0; b < B; b++)
	{
		HwBatch *sb = batch_pick(bt, &b, 1);

		CHECK_EQ_INT(hw_model_predict(m, sb, one, &err), HW_OK);
		CHECK_MSG(same_bits(all, b, one, 0, K), "stype %d: sequence %d alone differs from the batch (%.9g vs %.9g)",
				  stype, b, one->value[0], all->value[b]);
		hw_batch_free(sb);
	}
	/* a reordered sub-batch, two threads */
	hw_backend_cpu_set_threads(be, 2);
	{
		int      idx[3] = {6, 1, 3};
		HwBatch *sb = batch_pick(bt, idx, 3);

		CHECK_EQ_INT(hw_model_predict(m, sb, sub, &err), HW_OK);
		for (int j = 0; j < 3; j++)
			CHECK_MSG(same_bits(all, idx[j], sub, j, K), "stype %d: sequence %d in a sub-batch differs", stype, idx[j]);
		hw_batch_free(sb);
	}
	/* against the training forward */
	CHECK_EQ_INT(hw_model_eval(m, bt, &loss, ref, &err), HW_OK);
	for (int b = 0; b < B; b++)
	{
		CHECK_CLOSE(all->p_null[b], ref->p_null[b], 1e-5, 1e-4);
		CHECK_CLOSE(all->value[b], ref->value[b], 1e-5, 1e-4);
		for (int d = 0; d < 15; d++)
			CHECK_CLOSE(all->ts[b * 15 + d], ref->ts[b * 15 + d], 1e-5, 1e-4);
		for (int k = 0; k < K; k++)
			CHECK_CLOSE(all->cat_probs[(size_t) b * all->K + k], ref->cat_probs[(size_t) b * ref->K + k], 1e-5, 1e-4);
	}
	hw_predictions_free(all);
	hw_predictions_free(one);
	hw_predictions_free(sub);
	hw_predictions_free(ref);
	hw_batch_free(bt);
	hw_model_free(m);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}

UNIT_TEST(model_predict_batch_equals_single_numerical) { check_type(HW_ST_NUMERICAL); }
UNIT_TEST(model_predict_batch_equals_single_timestamp) { check_type(HW_ST_TIMESTAMP); }
UNIT_TEST(model_predict_batch_equals_single_boolean) { check_type(HW_ST_BOOLEAN); }
UNIT_TEST(model_predict_batch_equals_single_categorical) { check_type(HW_ST_CATEGORICAL); }
