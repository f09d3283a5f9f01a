/*
 * model_config.c: model settings: presets, named settings, defaults and checks (model.h).
 */

#include "core/model_internal.h"
#include "core/settings.h"

#include <math.h>
#include <string.h>

int
hw_model_config_preset(HwModelConfig *c, const char *preset, HwError *err)
{
	memset(c, 0, sizeof(*c));
	c->d_text = 256;
	c->lr = 3e-3f;
	c->warmup_steps = 100;
	c->total_steps = 10000;
	c->weight_decay = 0.3f;   /* 0.1 overfit the shop's orders_30d in 30-minute runs */
	c->adam_b1 = 0.9f;
	c->adam_b2 = 0.95f;
	c->adam_eps = 1e-8f;
	c->muon_momentum = 0.95f;
	c->clip_norm = 1.0f;
	c->rel_time = 1;
	c->link_types = 1;
	c->child_counts = 1;
	c->child_means = 1;
	c->ordinal_head = 1;
	c->count_ramps = 0;       /* an option (docs/model.md, Count ramps) */
	c->head_adamw = 0;        /* an option (docs/model.md, Optimisers of the heads) */
	c->absolute_time = 1;     /* 0: an option (docs/model.md, Absolute time) */
	c->head_weight_decay = 0.0f;    /* the heads undecayed: sharper probabilities (docs/model.md, Weight decay of the heads) */
	c->seed = 42;
	if (!preset || strcmp(preset, "tiny") == 0)
	{
		c->d_model = 64; c->n_heads = 4; c->n_layers = 2; c->seq_len = 128; c->batch_size = 16;
	}
	else if (strcmp(preset, "small") == 0)
	{
		c->d_model = 128; c->n_heads = 4; c->n_layers = 4; c->seq_len = 256; c->batch_size = 32;
	}
	else if (strcmp(preset, "base") == 0)
	{
		c->d_model = 256; c->n_heads = 8; c->n_layers = 6; c->seq_len = 1024; c->batch_size = 32;
	}
	else
		return hw_error_set(err, HW_ERR_INVALID, "unknown model preset \"%s\" (tiny, small or base)", preset);
	return HW_OK;
}

int
hw_model_config_set(HwModelConfig *c, const char *key, double v, HwError *err)
{
#define I(name) if (strcmp(key, #name) == 0) { c->name = (int32_t) v; return HW_OK; }
#define F(name) if (strcmp(key, #name) == 0) { c->name = (float) v; return HW_OK; }
	I(d_model) I(n_heads) I(n_layers) I(seq_len) I(batch_size) I(d_text) I(d_ff) I(full_attention) I(rel_time) I(link_types)
	I(child_counts) I(child_means) I(ordinal_head) I(count_ramps) I(head_adamw) I(absolute_time) F(ema_decay) F(head_weight_decay)
	F(lr) I(warmup_steps) I(total_steps) F(weight_decay) F(adam_b1) F(adam_b2) F(adam_eps)
	F(muon_momentum) F(clip_norm)
	if (strcmp(key, "seed") == 0) { c->seed = (uint64_t) v; return HW_OK; }
#undef I
#undef F
	return hw_error_set(err, HW_ERR_INVALID, "unknown model setting \"%s\"", key);
}

int
hw_model_config_finish(HwModelConfig *c, HwError *err)
{
	if (c->d_ff == 0)
		c->d_ff = ((8 * c->d_model + 2) / 3 + 255) / 256 * 256;
	if (c->d_model <= 0 || c->n_heads <= 0 || c->d_model % c->n_heads != 0 ||
		c->d_model / c->n_heads > 512)
		return hw_error_set(err, HW_ERR_INVALID, "d_model %d must be a positive multiple of n_heads %d (head size <= 512)",
							c->d_model, c->n_heads);
	/* seq_len's maximum is rt_train's (settings.c); being positive is the model's own */
	int32_t seq_max = (int32_t) hw_setting_find("seq_len")->max;

	if (c->n_layers <= 0 || c->seq_len <= 0 || c->seq_len > seq_max || c->batch_size <= 0 || c->d_text <= 0 || c->d_ff <= 0)
		return hw_error_set(err, HW_ERR_INVALID, "n_layers, seq_len (<= %d), batch_size, d_text and d_ff must be positive",
							seq_max);
	if (!(c->lr > 0) || c->warmup_steps < 0 || c->total_steps < 0 || !(c->clip_norm > 0) ||
		!(c->adam_b1 >= 0 && c->adam_b1 < 1) || !(c->adam_b2 >= 0 && c->adam_b2 < 1))
		return hw_error_set(err, HW_ERR_INVALID, "invalid optimiser settings (lr > 0, 0 <= betas < 1, clip_norm > 0)");
	if (!(c->ema_decay >= 0 && c->ema_decay < 1))
		return hw_error_set(err, HW_ERR_INVALID, "ema_decay %g must be at least 0 and below 1 (0: no average)",
							(double) c->ema_decay);
	c->full_attention = c->full_attention ? 1 : 0;
	c->rel_time = c->rel_time ? 1 : 0;
	c->link_types = c->link_types ? 1 : 0;
	c->child_counts = c->child_counts ? 1 : 0;
	c->child_means = c->child_counts && c->child_means ? 1 : 0;     /* they ride on enc.cnt.w */
	c->ordinal_head = c->ordinal_head ? 1 : 0;
	/* the same counts, another encoding: none without them */
	c->count_ramps = !c->child_counts || !c->count_ramps ? 0 :
		c->count_ramps == HW_COUNT_RAMPS_EVERY_ROW ? HW_COUNT_RAMPS_EVERY_ROW : HW_COUNT_RAMPS_ANCHOR;
	c->head_adamw = c->head_adamw ? 1 : 0;
	c->absolute_time = c->absolute_time || !c->rel_time ? 1 : 0;   /* nothing else would tell a time */
	if (c->head_weight_decay < 0)
		c->head_weight_decay = c->weight_decay;
	if (!(c->weight_decay >= 0 && c->head_weight_decay >= 0 && isfinite(c->weight_decay) &&
		  isfinite(c->head_weight_decay)))
		return hw_error_set(err, HW_ERR_INVALID, "weight_decay %g and head_weight_decay %g must be finite and at least 0",
							(double) c->weight_decay, (double) c->head_weight_decay);
	return HW_OK;
}
