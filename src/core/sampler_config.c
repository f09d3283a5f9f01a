/*
 * sampler_config.c: the sampler's options -- defaults, the names of its
 * enums, the validation of HwSamplerConfig -- and the accessors of a
 * sampler (sampler.h).
 */
#include "sampler_internal.h"

void
hw_sampler_config_default(HwSamplerConfig *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->batch_size = 32;
	cfg->seq_len = 1024;
	cfg->max_rows = 200;
	cfg->bfs_child_width = 16;
	cfg->child_sampling = HW_CHILD_RECENT;
	cfg->recent_children = -1;
	cfg->key_cells = false;
	cfg->future_parents = HW_FUTURE_PARENTS_HIDE;
	cfg->cell_dropout = 0.0f;
	cfg->descendant_counts = true;    /* brings churn closer to its planted rule and leaves orders_30d
									   * and pagila unchanged (docs/BENCHMARKS.md) */
	cfg->world_size = 1;
}

/* indexed by HwChildSampling and HwFutureParents */
static const char *const child_sampling_names[] = {"recent", "uniform"};
static const char *const future_parents_names[] = {"hide", "follow"};
#define N_NAMES(a) ((int) (sizeof(a) / sizeof((a)[0])))

const char *
hw_child_sampling_name(int policy)
{
	return hw_enum_name(child_sampling_names, N_NAMES(child_sampling_names), policy);
}

int
hw_child_sampling_from_name(const char *name)
{
	return hw_enum_from_name(child_sampling_names, N_NAMES(child_sampling_names), name);
}

const char *
hw_future_parents_name(int policy)
{
	return hw_enum_name(future_parents_names, N_NAMES(future_parents_names), policy);
}

int
hw_future_parents_from_name(const char *name)
{
	return hw_enum_from_name(future_parents_names, N_NAMES(future_parents_names), name);
}

/* The ranges hw_sampler_create accepts; the message names every field, so
 * a caller sees which one is off without reading the source. */
bool
sampler_config_check(const HwSamplerConfig *cfg, HwError *err)
{
	if (cfg->batch_size < 1 || cfg->batch_size > 65535 || cfg->seq_len < 2 || cfg->seq_len > 65535 ||
		cfg->max_rows < 1 || cfg->max_rows > 65535 || cfg->bfs_child_width < 0 ||
		cfg->bfs_child_width > 64 || cfg->world_size < 1 || cfg->rank < 0 ||
		cfg->rank >= cfg->world_size || cfg->n_threads < 0 ||
		hw_child_sampling_name(cfg->child_sampling) == NULL ||
		cfg->recent_children < -1 || cfg->recent_children > cfg->bfs_child_width ||
		hw_future_parents_name(cfg->future_parents) == NULL ||
		!(cfg->cell_dropout >= 0.0f && cfg->cell_dropout <= 0.9f))
	{
		hw_error_set(err, HW_ERR_INVALID,
					 "bad sampler config: batch_size %d (1..65535), seq_len %d (2..65535), max_rows %d "
					 "(1..65535), bfs_child_width %d (0..64), rank %d of world_size %d, child_sampling %d "
					 "(recent 0, uniform 1), recent_children %d (-1..bfs_child_width), future_parents %d "
					 "(hide 0, follow 1), cell_dropout %g (0..0.9)",
					 cfg->batch_size, cfg->seq_len, cfg->max_rows, cfg->bfs_child_width,
					 cfg->rank, cfg->world_size, cfg->child_sampling, cfg->recent_children,
					 cfg->future_parents, (double) cfg->cell_dropout);
		return false;
	}
	return true;
}

const uint32_t *
hw_sampler_shard(const HwSampler *s, int task, int split, uint32_t *n)
{
	if (task < 0 || task >= s->ntasks || split < 0 || split >= HW_N_SPLITS)
	{
		*n = 0;
		return NULL;
	}
	*n = s->shard_n[split][task];
	return s->shard_idx[split][task];
}

int
hw_sampler_ntasks(const HwSampler *s)
{
	return s->ntasks;
}

const HwSamplerConfig *
hw_sampler_config(const HwSampler *s)
{
	return &s->cfg;
}

int
hw_sampler_last_rows(const HwSampler *s, int b, const HwCellSource **rows, int *nrows)
{
	if (b < 0 || b >= s->last_B)
		return HW_ERR_INVALID;
	*rows = s->seq[b].rows;
	*nrows = s->seq[b].nrows;
	return HW_OK;
}
