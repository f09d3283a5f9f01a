/*
 * test_model_frozen.c: a frozen (serving) model reading its parameters from
 * caller memory predicts bit-identically to the trained model it was copied
 * from, never writes that memory (mapped PROT_READ here: a write would
 * fault), and refuses training, serialization and writes.
 */
#include "unit.h"
#include "core/model.h"
#include "synth_batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define DT 64

UNIT_TEST(model_frozen_predicts_bit_identically)
{
	HwError        err = {0};
	HwBackend     *be = hw_backend_cpu_create(1, &err);
	HwModelConfig  c;
	uint16_t      *colt, *catt;
	HwSynthSpec    sp = { .B = 6, .S = 48, .d_text = DT, .target_stype = HW_ST_CATEGORICAL, .seed = 5 };

	CHECK(be);
	hw_model_config_preset(&c, "tiny", &err);
	c.d_text = DT;
	c.batch_size = 8;
	c.seq_len = 64;
	c.warmup_steps = 2;
	hw_synth_tables(DT, 3, &colt, &catt);
	HwModel *m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	CHECK(m);
	/* a few steps so the parameters are not the initial ones */
	for (int i = 0; i < 3; i++)
	{
		HwBatch     *b = hw_synth_batch(&sp, (uint64_t) i);
		HwStepResult r;

		CHECK_EQ_INT(hw_model_train_step(m, b, &r, &err), HW_OK);
		hw_batch_free(b);
	}
	int64_t n = hw_model_numel(m);
	size_t  bytes = sizeof(float) * (size_t) n;
	float  *ro = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(ro != MAP_FAILED);
	CHECK_EQ_INT(hw_model_get_flat(m, 0, ro), HW_OK);
	CHECK(mprotect(ro, bytes, PROT_READ) == 0);

	/* the wrong size is refused */
	CHECK(hw_model_create_frozen(&c, ro, n - 1, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err) == NULL);
	CHECK(strstr(err.msg, "floats") != NULL);
	HwModel *f = hw_model_create_frozen(&c, ro, n, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	CHECK(f);
	CHECK(hw_model_is_frozen(f) && !hw_model_is_frozen(m));

	for (int i = 10; i < 13; i++)
	{
		HwBatch       *b = hw_synth_batch(&sp, (uint64_t) i);
		HwPredictions *p1 = hw_predictions_alloc(6, HW_SYNTH_NCAT);
		HwPredictions *p2 = hw_predictions_alloc(6, HW_SYNTH_NCAT);
		float          l1, l2;

		CHECK(b && p1 && p2);
		CHECK_EQ_INT(hw_model_eval(m, b, &l1, p1, &err), HW_OK);
		CHECK_EQ_INT(hw_model_eval(f, b, &l2, p2, &err), HW_OK);
		CHECK(memcmp(&l1, &l2, sizeof(float)) == 0);
		CHECK(memcmp(p1->p_null, p2->p_null, sizeof(float) * 6) == 0);
		CHECK(memcmp(p1->value, p2->value, sizeof(float) * 6) == 0);
		CHECK(memcmp(p1->cat_probs, p2->cat_probs, sizeof(float) * 6 * HW_SYNTH_NCAT) == 0);
		CHECK(memcmp(p1->ts, p2->ts, sizeof(float) * 6 * 15) == 0);
		hw_predictions_free(p1);
		hw_predictions_free(p2);
		hw_batch_free(b);
	}

	/* no training, no state, no writes */
	{
		HwBatch     *b = hw_synth_batch(&sp, 1);
		HwStepResult r;
		uint8_t     *blob = NULL;
		size_t       len = 0;
		float        one = 1.0f;
		float        gn, lr;

		CHECK_EQ_INT(hw_model_train_step(f, b, &r, &err), HW_ERR_INVALID);
		CHECK_EQ_INT(hw_model_optimizer_step(f, &gn, &lr, &err), HW_ERR_INVALID);
		CHECK_EQ_INT(hw_model_state_serialize(f, &blob, &len, &err), HW_ERR_INVALID);
		CHECK(blob == NULL);
		CHECK_EQ_INT(hw_model_set_tensor(f, 0, "enc.id_emb", &one, 1, &err), HW_ERR_INVALID);
		CHECK(hw_model_set_flat(f, 0, ro) != HW_OK);
		hw_batch_free(b);
	}
	/* reading works */
	{
		float *back = malloc(bytes);

		CHECK(back);
		CHECK_EQ_INT(hw_model_get_flat(f, 0, back), HW_OK);
		CHECK(memcmp(back, ro, bytes) == 0);
		free(back);
	}
	hw_model_free(f);
	hw_model_free(m);
	munmap(ro, bytes);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}

/* On a backend that computes in its own memory (any but "cpu": here the CPU
 * backend's entries under another name, so the arithmetic is the same) a
 * frozen model copies the parameters once: the caller's buffer can be
 * overwritten and freed at once, and the model predicts the bits of one
 * reading them in place. */
UNIT_TEST(model_frozen_copies_parameters_to_a_device)
{
	HwError        err = {0};
	HwBackend     *be = hw_backend_cpu_create(1, &err);
	HwModelConfig  c;
	uint16_t      *colt, *catt;
	HwSynthSpec    sp = { .B = 4, .S = 48, .d_text = DT, .target_stype = HW_ST_NUMERICAL, .seed = 9 };

	CHECK(be);
	HwBackendOps dev_ops = *be->ops;
	HwBackend    dev = *be;

	dev_ops.name = "device";
	dev.ops = &dev_ops;
	/* and one without the per-product GEMM entry (as CUDA): a layer's
	 * products in one call of all the batch's rows, the same up to rounding */
	HwBackendOps one_ops = dev_ops;
	HwBackend    one = *be;

	one_ops.gemm_rows_batched = NULL;
	one.ops = &one_ops;
	hw_model_config_preset(&c, "tiny", &err);
	c.d_text = DT;
	c.batch_size = 4;
	c.seq_len = 64;
	c.warmup_steps = 2;
	hw_synth_tables(DT, 3, &colt, &catt);
	HwModel *m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	CHECK(m);
	for (int i = 0; i < 2; i++)
	{
		HwBatch     *b = hw_synth_batch(&sp, (uint64_t) i);
		HwStepResult r;

		CHECK_EQ_INT(hw_model_train_step(m, b, &r, &err), HW_OK);
		hw_batch_free(b);
	}
	int64_t n = hw_model_numel(m);
	float  *host = malloc(sizeof(float) * (size_t) n);
	float  *kept = malloc(sizeof(float) * (size_t) n);

	CHECK(host && kept);
	CHECK_EQ_INT(hw_model_get_flat(m, 0, host), HW_OK);
	memcpy(kept, host, sizeof(float) * (size_t) n);
	HwModel *in_place = hw_model_create_frozen(&c, kept, n, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	HwModel *copied = hw_model_create_frozen(&c, host, n, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, &dev, &err);
	HwModel *one_call = hw_model_create_frozen(&c, host, n, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, &one, &err);

	CHECK(in_place && copied && one_call);
	for (int64_t i = 0; i < n; i++)
		host[i] = 1e30f;        /* the device copy must not read this any more */
	free(host);
	for (int i = 20; i < 23; i++)
	{
		HwBatch       *b = hw_synth_batch(&sp, (uint64_t) i);
		HwPredictions *p1 = hw_predictions_alloc(4, HW_SYNTH_NCAT);
		HwPredictions *p2 = hw_predictions_alloc(4, HW_SYNTH_NCAT);
		HwPredictions *p3 = hw_predictions_alloc(4, HW_SYNTH_NCAT);

		CHECK(b && p1 && p2 && p3);
		CHECK_EQ_INT(hw_model_predict(in_place, b, p1, &err), HW_OK);
		CHECK_EQ_INT(hw_model_predict(copied, b, p2, &err), HW_OK);
		CHECK_EQ_INT(hw_model_predict(one_call, b, p3, &err), HW_OK);
		CHECK(memcmp(p1->value, p2->value, sizeof(float) * 4) == 0);
		CHECK(memcmp(p1->p_null, p2->p_null, sizeof(float) * 4) == 0);
		for (int k = 0; k < 4; k++)
		{
			CHECK_CLOSE(p3->value[k], p1->value[k], 1e-4, 1e-4);
			CHECK_CLOSE(p3->p_null[k], p1->p_null[k], 1e-5, 0);
		}
		hw_predictions_free(p1);
		hw_predictions_free(p2);
		hw_predictions_free(p3);
		hw_batch_free(b);
	}
	hw_model_free(one_call);
	hw_model_free(copied);
	hw_model_free(in_place);
	hw_model_free(m);
	free(kept);
	hw_backend_destroy(be);
	free(colt);
	free(catt);
}
