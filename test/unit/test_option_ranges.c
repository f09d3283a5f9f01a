/*
 * test_option_ranges.c: the sampler's and the model's checks of values
 * that are rt_train options take the range from the settings table
 * (settings.c), the one definition, and name it in their messages.
 */
#include <string.h>

#include "unit.h"
#include "core/settings.h"
#include "core/model.h"
#include "core/sampler_internal.h"

/* A sampler config that passes, to change one field at a time. */
static HwSamplerConfig
valid_sampler_config(void)
{
	HwSamplerConfig cfg;

	hw_sampler_config_default(&cfg);
	return cfg;
}

UNIT_TEST(sampler_ranges_follow_settings_table)
{
	const HwSettingDef *seq_len = hw_setting_find("seq_len");
	const HwSettingDef *max_rows = hw_setting_find("max_rows");
	const HwSettingDef *width = hw_setting_find("child_width");
	const HwSettingDef *dropout = hw_setting_find("cell_dropout");
	HwSamplerConfig cfg;
	HwError     err = {0};

	CHECK(seq_len && max_rows && width && dropout);
	cfg = valid_sampler_config();
	CHECK(sampler_config_check(&cfg, &err));
	cfg.seq_len = (int32_t) seq_len->max;
	CHECK(sampler_config_check(&cfg, &err));
	cfg.seq_len = (int32_t) seq_len->max + 1;
	CHECK(!sampler_config_check(&cfg, &err));
	CHECK_MSG(strstr(err.msg, "seq_len 65536 (2..65535)") != NULL, "message: %s", err.msg);
	cfg = valid_sampler_config();
	cfg.seq_len = (int32_t) seq_len->min - 1;
	CHECK(!sampler_config_check(&cfg, &err));
	cfg = valid_sampler_config();
	cfg.max_rows = (int32_t) max_rows->max + 1;
	CHECK(!sampler_config_check(&cfg, &err));
	CHECK_MSG(strstr(err.msg, "max_rows 65536 (1..65535)") != NULL, "message: %s", err.msg);
	cfg = valid_sampler_config();
	cfg.bfs_child_width = (int32_t) width->max;
	CHECK(sampler_config_check(&cfg, &err));
	cfg.bfs_child_width = (int32_t) width->max + 1;
	CHECK(!sampler_config_check(&cfg, &err));
	CHECK_MSG(strstr(err.msg, "bfs_child_width 65 (0..64)") != NULL, "message: %s", err.msg);
	cfg.bfs_child_width = 0;        /* the sampler's own: no children */
	CHECK(sampler_config_check(&cfg, &err));
	cfg = valid_sampler_config();
	cfg.cell_dropout = (float) dropout->max;
	CHECK(sampler_config_check(&cfg, &err));
	cfg.cell_dropout = 0.95f;
	CHECK(!sampler_config_check(&cfg, &err));
	CHECK_MSG(strstr(err.msg, "cell_dropout 0.95 (0..0.9)") != NULL, "message: %s", err.msg);
}

UNIT_TEST(model_seq_len_follows_settings_table)
{
	const HwSettingDef *seq_len = hw_setting_find("seq_len");
	HwModelConfig c;
	HwError     err = {0};

	CHECK(seq_len != NULL);
	CHECK_EQ_INT(hw_model_config_preset(&c, "tiny", &err), HW_OK);
	c.seq_len = (int32_t) seq_len->max;
	CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_OK);
	c.seq_len = (int32_t) seq_len->max + 1;
	CHECK(hw_model_config_finish(&c, &err) != HW_OK);
	CHECK_MSG(strcmp(err.msg, "n_layers, seq_len (<= 65535), batch_size, d_text and d_ff must be positive") == 0,
			  "message: %s", err.msg);
}
