/* test_common.c: f16 conversion, semantic type and other enum names. */
#include "unit.h"
#include "core/hw_common.h"
#include "core/batch.h"
#include "core/sampler.h"
#include "core/task.h"

#include <string.h>

UNIT_TEST(f16_roundtrip_exact_values)
{
	/* values exactly representable in binary16 must round-trip bit-exactly */
	const float exact[] = {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 5.9604645e-08f, 0.333251953125f};
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		CHECK_CLOSE(hw_f16_to_f32(hw_f32_to_f16(exact[i])), exact[i], 0, 0);
	CHECK_EQ_INT(hw_f32_to_f16(1.0f), 0x3c00);
	CHECK_EQ_INT(hw_f32_to_f16(-2.0f), 0xc000);
	CHECK_EQ_INT(hw_f32_to_f16(1e6f), 0x7c00);          /* overflow -> +Inf */
}

UNIT_TEST(f16_rounding_within_half_ulp)
{
	/* for normal values the relative error of rounding is at most 2^-11 */
	for (int i = -2000; i <= 2000; i++)
	{
		float x = (float) i * 0.0137f + 0.001f;
		float y = hw_f16_to_f32(hw_f32_to_f16(x));
		CHECK_CLOSE(y, x, 1e-7, 1.0 / 2048.0);
	}
}

UNIT_TEST(stype_names_roundtrip)
{
	for (int s = 0; s < HW_N_STYPES; s++)
		CHECK_EQ_INT(hw_stype_from_name(hw_stype_name(s)), s);
	CHECK(hw_stype_from_name("nonsense") == -1);
	CHECK(hw_stype_name(7) == NULL);
}

/* Every enum's name table through the shared lookups: names round-trip,
 * out-of-range values and unknown or NULL names are refused, and the one
 * alias ("validation") still maps to its split. */
UNIT_TEST(enum_names_roundtrip_and_refuse)
{
	for (int v = 0; v < HW_N_NUM_LOSSES; v++)
		CHECK_EQ_INT(hw_num_loss_from_name(hw_num_loss_name(v)), v);
	for (int v = 0; v < HW_N_SPLITS; v++)
		CHECK_EQ_INT(hw_split_from_name(hw_split_name(v)), v);
	CHECK_EQ_INT(hw_child_sampling_from_name(hw_child_sampling_name(HW_CHILD_UNIFORM)), HW_CHILD_UNIFORM);
	CHECK_EQ_INT(hw_future_parents_from_name(hw_future_parents_name(HW_FUTURE_PARENTS_FOLLOW)), HW_FUTURE_PARENTS_FOLLOW);
	CHECK(strcmp(hw_child_sampling_name(HW_CHILD_RECENT), "recent") == 0);
	CHECK(strcmp(hw_num_loss_name(HW_NUM_LOSS_ORDINAL), "ordinal") == 0);
	CHECK_EQ_INT(hw_split_from_name("validation"), HW_SPLIT_VAL);
	CHECK(hw_num_loss_name(-1) == NULL && hw_num_loss_name(HW_N_NUM_LOSSES) == NULL);
	CHECK(hw_split_name(HW_N_SPLITS) == NULL && hw_future_parents_name(2) == NULL);
	CHECK_EQ_INT(hw_num_loss_from_name(NULL), -1);
	CHECK_EQ_INT(hw_split_from_name(NULL), -1);
	CHECK_EQ_INT(hw_child_sampling_from_name("Recent"), -1);
	CHECK_EQ_INT(hw_stype_from_name(NULL), -1);
}

UNIT_TEST(batch_views_match_seed000_shapes)
{
	HwBatch *b = hw_batch_alloc(2, 8, 3, 4, 16);
	CHECK(b != NULL);
	HwTensorView v;
	CHECK(hw_batch_tensor(b, "fk_adj", &v));
	CHECK_EQ_INT(v.ndim, 3);
	CHECK_EQ_INT(v.shape[1] * v.shape[2], 9);
	CHECK(hw_batch_tensor(b, "timestamp_values", &v));
	CHECK_EQ_INT(v.shape[2], 15);
	CHECK_EQ_INT(v.dtype, HW_DT_FLOAT32);
	CHECK(hw_batch_tensor(b, "text_batch_embeddings", &v));
	CHECK_EQ_INT(v.dtype, HW_DT_FLOAT16);
	CHECK(!hw_batch_tensor(b, "nope", &v));
	hw_batch_free(b);
	CHECK(hw_batch_alloc(0, 8, 3, 4, 16) == NULL);
}
