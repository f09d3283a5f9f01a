/*
 * sampler_seeds.c: which seeds form a batch (sampler.h "Which seeds form
 * batch k"): the weighted task draw and the per-epoch permutation of a
 * task's shard for training batches; the given seeds of an evaluation
 * batch; ad-hoc anchors, observation times and context labels of a
 * prediction batch.  Each becomes a SeqSpec with its own RNG key.
 */
#include "core/sampler_internal.h"

#include <math.h>


/*
 * Keyed bijection of [0, n): a 4-round Feistel network on 2h bits with
 * cycle walking (each seed exactly once per epoch without storing a
 * permutation).
 */
static uint64_t
feistel_perm(uint64_t x, uint64_t n, uint64_t key)
{
	if (n <= 1)
		return 0;
	int bits = 64 - __builtin_clzll(n - 1);
	int h = (bits + 1) / 2;

	if (h < 1)
		h = 1;
	uint64_t mask = (1ULL << h) - 1;

	do
	{
		uint64_t L = x >> h, R = x & mask;

		for (int r = 0; r < 4; r++)
		{
			uint64_t F = mix64(R ^ (key + (uint64_t) r * 0x632be59bd9b4e019ULL)) & mask;
			uint64_t nl = R;

			R = L ^ F;
			L = nl;
		}
		x = (L << h) | R;
	} while (x >= n);
	return x;
}

/*
 * recent_weight = r > 1: each task's train seeds are drawn with weight
 * r^((obs - first) / (last - first)) between the shard's first and last
 * observation time (a seed without one counts as the last), kept as running
 * sums for a binary search.  r = 1 leaves train_cdf NULL: every seed once
 * an epoch, in a keyed permutation.
 */
int
sampler_build_recency(HwSampler *s)
{
	double r = (double) s->cfg.recent_weight;

	if (!(r > 1.0))
		return HW_OK;
	if ((s->train_cdf = calloc((size_t) s->ntasks, sizeof(double *))) == NULL)
		return SAMPLER_OOM;
	for (int t = 0; t < s->ntasks; t++)
	{
		const uint32_t *idx = s->shard_idx[HW_SPLIT_TRAIN][t];
		const int64_t *obs = s->tasks[t]->obs_time_us;
		uint32_t n = s->shard_n[HW_SPLIT_TRAIN][t];
		int64_t first = HW_NO_CUTOFF, last = INT64_MIN;

		if (n == 0)
			continue;
		if ((s->train_cdf[t] = malloc(sizeof(double) * n)) == NULL)
			return SAMPLER_OOM;
		for (uint32_t i = 0; i < n; i++)
			if (obs[idx[i]] != HW_NO_CUTOFF)
			{
				first = obs[idx[i]] < first ? obs[idx[i]] : first;
				last = obs[idx[i]] > last ? obs[idx[i]] : last;
			}
		double span = last > first ? (double) (last - first) : 0.0, sum = 0.0;

		for (uint32_t i = 0; i < n; i++)
		{
			double x = obs[idx[i]] == HW_NO_CUTOFF ? 1.0 : span > 0 ? (double) (obs[idx[i]] - first) / span : 0.0;

			sum += pow(r, x);
			s->train_cdf[t][i] = sum;
		}
	}
	return HW_OK;
}

/* The position in [0, n) whose weight covers u in [0, 1): the first running
 * sum above u * total. */
static uint32_t
weighted_position(const double *cdf, uint32_t n, double u)
{
	double v = u * cdf[n - 1];
	uint32_t lo = 0, hi = n - 1;

	while (lo < hi)
	{
		uint32_t mid = lo + (hi - lo) / 2;

		if (cdf[mid] > v)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int
hw_sampler_batch(HwSampler *s, int split, uint64_t k, HwBatch **out, uint32_t *seed_idx, HwError *err)
{
	*out = NULL;
	if (split < 0 || split >= HW_N_SPLITS)
		return hw_error_set(err, HW_ERR_INVALID, "unknown split %d", split);
	/* task: weighted draw among tasks with seeds in this shard */
	double total = 0;

	for (int t = 0; t < s->ntasks; t++)
		if (s->shard_n[split][t] > 0)
			total += s->weights[t];
	if (!(total > 0))
		return hw_error_set(err, HW_ERR_INVALID, "no task has %s seeds for rank %d of %d",
							hw_split_name(split), s->cfg.rank, s->cfg.world_size);
	const uint64_t seed = s->cfg.seed, rank = (uint64_t) s->cfg.rank;
	double u = (double) (hash5(seed, rank, (uint64_t) split, k, 0x7461736bULL) >> 11) * 0x1.0p-53 * total;
	int task = -1;

	for (int t = 0; t < s->ntasks; t++)
		if (s->shard_n[split][t] > 0 && s->weights[t] > 0)
		{
			task = t;
			if (u < s->weights[t])
				break;
			u -= s->weights[t];
		}
	int B = s->cfg.batch_size;
	uint32_t n = s->shard_n[split][task];
	const uint32_t *idx = s->shard_idx[split][task];
	SeqSpec specs_stack[64] = {{0}};
	SeqSpec *specs = B <= 64 ? specs_stack : calloc((size_t) B, sizeof(SeqSpec));

	if (specs == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	const HwTask *t = s->tasks[task];
	const double *cdf = split == HW_SPLIT_TRAIN && s->train_cdf ? s->train_cdf[task] : NULL;

	for (int b = 0; b < B; b++)
	{
		uint64_t p = k * (uint64_t) B + (uint64_t) b;
		uint64_t epoch = p / n;
		uint64_t key = hash5(seed, rank, (uint64_t) split, s->task_key[task], epoch ^ 0x65706f6368ULL);
		/* recent_weight: a weighted draw with replacement; else each seed once an epoch */
		uint32_t si = cdf ? idx[weighted_position(cdf, n, (double) (hash5(seed, rank, (uint64_t) split, k,
																			(uint64_t) b ^ 0x72656365ULL) >> 11) * 0x1.0p-53)]
			: idx[feistel_perm(p % n, n, key)];

		specs[b].task = task;
		specs[b].anchor_row = t->anchor_row[si];
		specs[b].obs_time_us = t->obs_time_us[si];
		specs[b].seed_idx = si;
		specs[b].with_truth = true;
		specs[b].rng = hash5(seed, rank, (uint64_t) split, k, (uint64_t) b);
		if (seed_idx)
			seed_idx[b] = si;
	}
	int rc = sampler_build_batch(s, specs, B, out, err);

	if (rc == HW_OK && split == HW_SPLIT_TRAIN && s->cfg.cell_dropout > 0.0f)
		sampler_drop_cells(*out, s->cfg.cell_dropout, hash5(seed, rank, (uint64_t) split, k, 0x64726f70ULL));
	if (specs != specs_stack)
		free(specs);
	return rc;
}

/*
 * The random choices of an evaluation or prediction sequence, keyed by what
 * it is about -- (cfg.seed, task, anchor row, obs time) -- and not by the
 * seed's index: rt_evaluate (seed batches) and rt_predict (ad-hoc seeds)
 * then build the same sequence for the same (anchor, obs time), so the
 * metric rt_evaluate reports is the one of the served predictions.
 */
static uint64_t
sequence_rng(const HwSampler *s, int task, uint32_t anchor_row, int64_t obs_time_us)
{
	return hash5(s->cfg.seed, 0x70726564ULL, s->task_key[task], anchor_row, (uint64_t) obs_time_us);
}

int
hw_sampler_seed_batch(HwSampler *s, int task, const uint32_t *seed_idx, int n,
					  HwBatch **out, HwError *err)
{
	*out = NULL;
	if (task < 0 || task >= s->ntasks || n < 1 || n > 65535)
		return hw_error_set(err, HW_ERR_INVALID, "bad seed batch: task %d, %d seeds", task, n);
	const HwTask *t = s->tasks[task];
	SeqSpec *specs = calloc((size_t) n, sizeof(SeqSpec));

	if (specs == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	for (int b = 0; b < n; b++)
	{
		uint32_t si = seed_idx[b];

		if (si >= t->nseeds)
		{
			free(specs);
			return hw_error_set(err, HW_ERR_INVALID, "seed %u of task %s out of range (%u seeds)",
								si, t->name, t->nseeds);
		}
		specs[b].task = task;
		specs[b].anchor_row = t->anchor_row[si];
		specs[b].obs_time_us = t->obs_time_us[si];
		specs[b].seed_idx = si;
		specs[b].with_truth = true;
		specs[b].rng = sequence_rng(s, task, t->anchor_row[si], t->obs_time_us[si]);
	}
	int rc = sampler_build_batch(s, specs, n, out, err);

	free(specs);
	return rc;
}

int
hw_sampler_build_for_seeds(HwSampler *s, int task, const uint32_t *anchor_rows,
						   const int64_t *obs_time_us, int n, HwBatch **out, HwError *err)
{
	return hw_sampler_build_for_seeds_ctx(s, task, anchor_rows, obs_time_us, n, NULL, NULL, out, err);
}

static int
cmp_ctx(const void *a, const void *b)
{
	const HwContextLabel *x = a, *y = b;

	return x->obs_time_us < y->obs_time_us ? -1 : x->obs_time_us > y->obs_time_us;
}

/* A context label's value fits the task's target type. */
static bool
ctx_value_ok(const HwTask *t, const HwContextLabel *c)
{
	if (c->target_null)
		return true;
	switch (t->target_stype)
	{
		case HW_ST_NUMERICAL:
			return isfinite(c->target);
		case HW_ST_BOOLEAN:
			return c->target == 0.0 || c->target == 1.0;
		case HW_ST_CATEGORICAL:
			return c->target >= 0 && c->target < (double) t->ncat_own && c->target == floor(c->target);
		case HW_ST_TIMESTAMP:
			return isfinite(c->target) && fabs(c->target) < 9.0e18;
		default:
			return false;
	}
}

/* The context labels of seed b (m of them, m > 0): the task takes them
 * (query task with label history), the seed has an obs time, and each is
 * observed before it and a value of the target's type. */
static int
check_context(const HwTask *t, int b, int64_t obs, const HwContextLabel *ctx, uint32_t m, HwError *err)
{
	if (ctx == NULL)
		return hw_error_set(err, HW_ERR_INVALID, "context labels of seed %d of task %s are missing", b, t->name);
	if (t->kind != HW_TASK_QUERY || !t->label_history)
		return hw_error_set(err, HW_ERR_INVALID, "task %s has no label history, so it takes no context labels",
							t->name);
	if (obs == HW_NO_CUTOFF)
		return hw_error_set(err, HW_ERR_INVALID, "context labels of task %s need an observation time", t->name);
	for (uint32_t k = 0; k < m; k++)
	{
		const HwContextLabel *c = &ctx[k];

		if (c->obs_time_us >= obs)
			return hw_error_set(err, HW_ERR_INVALID,
								"context label %u of task %s is observed at %lld, not before the observation time %lld",
								k + 1, t->name, (long long) c->obs_time_us, (long long) obs);
		if (!ctx_value_ok(t, c))
			return hw_error_set(err, HW_ERR_INVALID, "context label %u of task %s is not a %s value",
								k + 1, t->name, hw_stype_name(t->target_stype));
	}
	return HW_OK;
}

int
hw_sampler_build_for_seeds_ctx(HwSampler *s, int task, const uint32_t *anchor_rows,
							   const int64_t *obs_time_us, int n,
							   const HwContextLabel *const *ctx, const uint32_t *nctx,
							   HwBatch **out, HwError *err)
{
	*out = NULL;
	if (task < 0 || task >= s->ntasks || n < 1 || n > 65535)
		return hw_error_set(err, HW_ERR_INVALID, "bad prediction batch: task %d, %d seeds", task, n);
	const HwTask *t = s->tasks[task];
	const HwTable *at = &s->snap->tables[t->anchor_table];
	SeqSpec *specs = calloc((size_t) n, sizeof(SeqSpec));
	size_t total_ctx = 0;
	HwContextLabel *sorted = NULL;
	int rc = HW_OK;

	if (specs == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	for (int b = 0; ctx && nctx && b < n; b++)
		total_ctx += nctx[b];
	if (total_ctx > 0 && (sorted = malloc(sizeof(HwContextLabel) * total_ctx)) == NULL)
	{
		free(specs);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	}
	size_t used = 0;

	for (int b = 0; b < n; b++)
	{
		if (anchor_rows[b] < at->row_offset || anchor_rows[b] >= at->row_offset + at->nrows)
		{
			rc = hw_error_set(err, HW_ERR_INVALID, "row %u is not a row of %s, the anchor table of task %s",
							  anchor_rows[b], at->name, t->name);
			goto done;
		}
		int64_t obs = obs_time_us ? obs_time_us[b] : HW_NO_CUTOFF;

		if (t->kind == HW_TASK_CELL && obs_time_us == NULL)
		{
			int64_t rt = s->snap->row_time_us[anchor_rows[b]];

			obs = rt == HW_NO_TIME ? HW_NO_CUTOFF : rt;
		}
		specs[b].task = task;
		specs[b].anchor_row = anchor_rows[b];
		specs[b].obs_time_us = obs;
		specs[b].seed_idx = -1;
		specs[b].with_truth = false;
		specs[b].rng = sequence_rng(s, task, anchor_rows[b], obs);
		uint32_t m = ctx && nctx ? nctx[b] : 0;

		if (m == 0)
			continue;
		if ((rc = check_context(t, b, obs, ctx[b], m, err)) != HW_OK)
			goto done;
		memcpy(sorted + used, ctx[b], sizeof(HwContextLabel) * m);
		/* stable by obs time: equal times keep the caller's order */
		for (uint32_t i = 1; i < m; i++)
			for (uint32_t j = i; j > 0 && cmp_ctx(&sorted[used + j - 1], &sorted[used + j]) > 0; j--)
			{
				HwContextLabel x = sorted[used + j];

				sorted[used + j] = sorted[used + j - 1];
				sorted[used + j - 1] = x;
			}
		specs[b].ctx = sorted + used;
		specs[b].nctx = m;
		used += m;
	}
	rc = sampler_build_batch(s, specs, n, out, err);
done:
	free(sorted);
	free(specs);
	return rc;
}
