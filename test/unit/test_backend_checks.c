/*
 * test_backend_checks.c: the backend-facing checks of the model, on the CPU:
 *
 *   - the CUDA backend's shape rule (cuda/hw_cuda_limits.h, plain C: the
 *     same function backend_cuda_ops.cu's check_shapes entry calls);
 *   - hw_model_create asks the backend's check_shapes before allocating, so
 *     a model the backend cannot run (CUDA: head size outside 16/32/64/128)
 *     fails up front with the backend's reason, on creation and on resume;
 *   - when a model call fails, the backend's kept error (last_error) is
 *     reported instead of the model's symptom ("loss is NaN"), and a
 *     training state is never serialised from a failed backend.
 *
 * The backend here is the CPU backend with a few entries replaced ("fake"):
 * check_shapes = the CUDA rule; an injected fault behaves like the CUDA
 * backend's sticky error (backend_cuda.cu: later d2h copies return NaN bytes,
 * last_error returns the first error and clears it).
 */
#include "unit.h"
#include "core/model.h"
#include "synth_batch.h"
#include "../../cuda/hw_cuda_limits.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the rule */

UNIT_TEST(cuda_shape_rule)
{
	char why[400];
	static const char *const presets[] = {"tiny", "small", "base"};

	/* every preset runs on CUDA (head sizes 16, 32, 32) */
	for (int i = 0; i < 3; i++)
	{
		HwModelConfig c;
		HwError       err = {0};

		CHECK_EQ_INT(hw_model_config_preset(&c, presets[i], &err), HW_OK);
		CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_OK);
		CHECK_MSG(hw_cuda_shapes_problem(c.batch_size, c.seq_len, c.d_model, c.n_heads, c.d_ff, why, sizeof(why)) == 0,
				  "preset %s: %s", presets[i], why);
	}
	for (int dh = 1; dh <= 512; dh++)
		CHECK_EQ_INT(hw_cuda_head_dim_supported(dh), dh == 16 || dh == 32 || dh == 64 || dh == 128);
	CHECK_EQ_INT(hw_cuda_shapes_problem(32, 1024, 512, 4, 0, why, sizeof(why)), 0);     /* dh 128 */

	CHECK_EQ_INT(hw_cuda_shapes_problem(32, 1024, 96, 4, 0, why, sizeof(why)), 1);      /* dh 24 */
	CHECK_MSG(strstr(why, "d_model 96 / n_heads 4 = 24") && strstr(why, "16, 32, 64 or 128") &&
			  strstr(why, "device => 'cpu'"), "%s", why);
	CHECK_EQ_INT(hw_cuda_shapes_problem(32, 1024, 64, 8, 0, why, sizeof(why)), 1);      /* dh 8 */
	CHECK(strstr(why, "= 8:") != NULL);
	CHECK_EQ_INT(hw_cuda_shapes_problem(32, 1024, 1024, 4, 0, why, sizeof(why)), 1);    /* dh 256 */
	CHECK_EQ_INT(hw_cuda_shapes_problem(32, 1024, 100, 3, 0, why, sizeof(why)), 1);     /* not integral */
	CHECK(strstr(why, "33.33") != NULL);
	CHECK_EQ_INT(hw_cuda_shapes_problem(32, 65537, 256, 8, 0, why, sizeof(why)), 1);
	CHECK(strstr(why, "seq_len") != NULL);
	CHECK_EQ_INT(hw_cuda_shapes_problem(32, 65536, 256, 8, 0, why, sizeof(why)), 0);
	CHECK_EQ_INT(hw_cuda_shapes_problem(65536, 128, 256, 8, 0, why, sizeof(why)), 1);
	CHECK(strstr(why, "batch_size") != NULL);
	CHECK_EQ_INT(hw_cuda_shapes_problem(0, 128, 256, 8, 0, why, sizeof(why)), 1);
}

/* ---------------------------------------------------------------- a fake backend */

static HwBackendOps fake_ops;
static const HwBackendOps *cpu_ops;
static int fake_fault_at_attn;    /* inject a fault at the next attention forward */
static int fake_failed;           /* the kept (sticky) error */

static int
fake_check_shapes(HwBackend *be, int B, int S, int D, int H, int F, HwError *err)
{
	char why[400];

	if (hw_cuda_shapes_problem(B, S, D, H, F, why, sizeof(why)))
		return hw_error_set(err, HW_ERR_INVALID, "%s", why);
	return HW_OK;
}

static void
fake_attn_forward(HwBackend *be, float *out, float *lse, const float *q, const float *k, const float *v,
				  const void *plan, int H, int dh)
{
	if (fake_fault_at_attn)
	{
		fake_fault_at_attn = 0;
		fake_failed = 1;
	}
	if (!fake_failed)
		cpu_ops->attn_forward(be, out, lse, q, k, v, plan, H, dh);
}

static void
fake_memcpy_d2h(HwBackend *be, void *dst, const void *src, size_t bytes)
{
	if (fake_failed)
		memset(dst, 0xff, bytes);            /* NaN floats, as backend_cuda.cu */
	else
		cpu_ops->memcpy_d2h(be, dst, src, bytes);
}

static int
fake_last_error(HwBackend *be, HwError *err)
{
	if (!fake_failed)
		return HW_OK;
	fake_failed = 0;
	return hw_error_set(err, HW_ERR_INTERNAL,
						"CUDA error cudaErrorIllegalAddress (an illegal memory access was encountered) in "
						"attention kernels (injected)");
}

static HwBackend *
fake_backend(void)
{
	HwBackend *be = hw_backend_cpu_create(0, NULL);

	cpu_ops = be->ops;
	fake_ops = *be->ops;
	fake_ops.name = "fake";
	fake_ops.check_shapes = fake_check_shapes;
	fake_ops.attn_forward = fake_attn_forward;
	fake_ops.memcpy_d2h = fake_memcpy_d2h;
	fake_ops.last_error = fake_last_error;
	be->ops = &fake_ops;
	fake_fault_at_attn = fake_failed = 0;
	return be;
}

static void
tiny_config(HwModelConfig *c, int n_heads)
{
	hw_model_config_preset(c, "tiny", NULL);
	c->d_text = 32;
	c->batch_size = 4;
	c->seq_len = 64;
	c->n_heads = n_heads;
}

/* ---------------------------------------------------------------- tests */

UNIT_TEST(model_create_asks_backend_shapes)
{
	HwBackend    *be = fake_backend(), *cpu = hw_backend_cpu_create(0, NULL);
	HwModelConfig c;
	HwError       err = {0};
	uint16_t     *colt, *catt;
	uint8_t      *state = NULL;
	size_t        len = 0;

	hw_synth_tables(32, 3, &colt, &catt);
	tiny_config(&c, 8);                      /* d_model 64 / 8 heads = head size 8 */
	CHECK(hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err) == NULL);
	CHECK_EQ_INT(err.code, HW_ERR_INVALID);
	CHECK_MSG(strstr(err.msg, "d_model 64 / n_heads 8 = 8") != NULL, "%s", err.msg);

	/* the CPU backend has no such limit */
	HwModel *m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, cpu, &err);
	CHECK_MSG(m != NULL, "%s", err.msg);
	/* resuming that state on the restricted backend fails up front too */
	CHECK_EQ_INT(hw_model_state_serialize(m, &state, &len, &err), HW_OK);
	memset(&err, 0, sizeof(err));
	CHECK(hw_model_state_deserialize(state, len, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err) == NULL);
	CHECK_MSG(err.code == HW_ERR_INVALID && strstr(err.msg, "head sizes"), "%s", err.msg);
	hw_model_free(m);

	/* head size 16 is fine on both */
	tiny_config(&c, 4);
	m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	CHECK_MSG(m != NULL, "%s", err.msg);
	hw_model_free(m);
	free(state);
	free(colt);
	free(catt);
	hw_backend_destroy(be);
	hw_backend_destroy(cpu);
}

UNIT_TEST(model_reports_backend_error)
{
	HwBackend    *be = fake_backend();
	HwModelConfig c;
	HwError       err = {0};
	uint16_t     *colt, *catt;
	HwSynthSpec   sp = { .B = 4, .S = 64, .d_text = 32, .target_stype = HW_ST_NUMERICAL, .seed = 3 };
	HwBatch      *b = hw_synth_batch(&sp, 0);
	HwStepResult  r;
	uint8_t      *state = NULL;
	size_t        len = 0;
	float         loss;

	hw_synth_tables(32, 3, &colt, &catt);
	tiny_config(&c, 4);
	HwModel *m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	CHECK_MSG(m != NULL, "%s", err.msg);
	CHECK_EQ_INT(hw_model_train_step(m, b, &r, &err), HW_OK);

	/* a kernel fault in step 2: the user sees the backend's error, not "loss is NaN" */
	fake_fault_at_attn = 1;
	int rc = hw_model_train_step(m, b, &r, &err);
	CHECK_EQ_INT(rc, HW_ERR_INTERNAL);
	CHECK_MSG(strncmp(err.msg, "fake backend: CUDA error cudaErrorIllegalAddress", 48) == 0, "%s", err.msg);
	CHECK_MSG(strstr(err.msg, "(the model then reported: loss is NaN at step 2") != NULL, "%s", err.msg);
	CHECK_EQ_INT(hw_model_step(m), 1);       /* parameters untouched */
	CHECK(!fake_failed);                     /* reported once, cleared */

	/* evaluation and parameter reads report it the same way */
	fake_fault_at_attn = 1;
	CHECK_EQ_INT(hw_model_eval(m, b, &loss, NULL, &err), HW_ERR_INTERNAL);
	CHECK(strstr(err.msg, "cudaErrorIllegalAddress") != NULL);
	fake_failed = 1;
	float one[64];
	CHECK_EQ_INT(hw_model_get_tensor(m, 0, "enc.norm.g", one, 64, &err), HW_ERR_INTERNAL);

	/* no training state (checkpoint) from a failed backend's NaN bytes */
	fake_failed = 1;
	CHECK_EQ_INT(hw_model_state_serialize(m, &state, &len, &err), HW_ERR_INTERNAL);
	CHECK(state == NULL);
	CHECK(strstr(err.msg, "cudaErrorIllegalAddress") != NULL);

	/* once cleared, the backend works again (a transient error) */
	CHECK_EQ_INT(hw_model_train_step(m, b, &r, &err), HW_OK);
	CHECK_EQ_INT(hw_model_step(m), 2);
	CHECK_EQ_INT(hw_model_state_serialize(m, &state, &len, &err), HW_OK);
	free(state);

	hw_model_free(m);
	hw_batch_free(b);
	free(colt);
	free(catt);
	hw_backend_destroy(be);
}
