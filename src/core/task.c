/*
 * task.c: seeds, target statistics, splits, shards and the seed byte form of
 * a task (design notes in task.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* qsort_r */
#endif
#include "core/task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const split_names[HW_N_SPLITS] = {"train", "val", "test"};

const char *
hw_split_name(int split)
{
	return hw_enum_name(split_names, HW_N_SPLITS, split);
}

int
hw_split_from_name(const char *s)
{
	int split = hw_enum_from_name(split_names, HW_N_SPLITS, s);

	if (split < 0 && s && strcmp(s, "validation") == 0)
		return HW_SPLIT_VAL;
	return split;
}

const char *
hw_split_method_name(int method)
{
	switch (method)
	{
		case HW_SPLIT_BY_HASH:
			return "hash";
		case HW_SPLIT_BY_COLUMN:
			return "column";
		case HW_SPLIT_BY_TIME:
			return "time";
		default:
			return NULL;
	}
}

static char *
dupstr(const char *s)
{
	if (s == NULL)
		return NULL;
	size_t n = strlen(s);
	char *d = malloc(n + 1);

	if (d)
		memcpy(d, s, n + 1);
	return d;
}

HwTask *
hw_task_new(const char *name, int kind, HwError *err)
{
	HwTask *t = calloc(1, sizeof(HwTask));

	if (t == NULL || (t->name = dupstr(name ? name : "")) == NULL)
	{
		free(t);
		hw_error_set(err, HW_ERR_NOMEM, "out of memory creating task");
		return NULL;
	}
	t->kind = (int8_t) kind;
	t->anchor_table = -1;
	t->target_col = -1;
	t->target_stype = HW_ST_NUMERICAL;
	t->split_ratio[0] = 0.8;
	t->split_ratio[1] = 0.1;
	t->split_ratio[2] = 0.1;
	t->label_history = (kind == HW_TASK_QUERY);
	t->history_max = 16;
	t->num_loss = HW_NUM_LOSS_MAE;
	t->target_std = 1.0;
	t->col_base = -1;
	return t;
}

static void
free_seeds(HwTask *t)
{
	free(t->anchor_row);
	free(t->anchor_key);
	free(t->obs_time_us);
	free(t->target);
	free(t->target_null);
	free(t->split);
	free(t->label_time_us);
	free(t->hist_order);
	free(t->hist_pos);
	t->label_time_us = NULL;
	t->anchor_row = NULL;
	t->anchor_key = NULL;
	t->obs_time_us = NULL;
	t->target = NULL;
	t->target_null = NULL;
	t->split = NULL;
	t->hist_order = NULL;
	t->hist_pos = NULL;
	t->nseeds = 0;
}

void
hw_task_free(HwTask *t)
{
	if (t == NULL)
		return;
	free_seeds(t);
	for (uint32_t i = 0; i < t->ncat_own && t->cat_values; i++)
		free(t->cat_values[i]);
	free(t->cat_values);
	free(t->cat_emb_own);
	free(t->vcol_emb);
	free(t->target_name);
	free(t->name);
	free(t);
}

int
hw_task_alloc_seeds(HwTask *t, uint32_t n, HwError *err)
{
	free_seeds(t);
	size_t m = n ? n : 1;

	t->anchor_row = calloc(m, sizeof(uint32_t));
	t->anchor_key = calloc(m, sizeof(uint64_t));
	t->obs_time_us = calloc(m, sizeof(int64_t));
	t->target = calloc(m, sizeof(double));
	t->target_null = calloc(m, 1);
	t->split = calloc(m, 1);
	if (!t->anchor_row || !t->anchor_key || !t->obs_time_us || !t->target ||
		!t->target_null || !t->split)
	{
		free_seeds(t);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %u seeds of task %s", n, t->name);
	}
	t->nseeds = n;
	return HW_OK;
}

/* ------------------------------------------------------------------ splits */

static inline uint64_t
mix64(uint64_t x)
{
	/* splitmix64 finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t
hw_split_hash(uint64_t task_hash, uint64_t anchor_key, uint64_t split_seed)
{
	uint64_t h = mix64(task_hash ^ 0x9e3779b97f4a7c15ULL);

	h = mix64(h ^ anchor_key);
	h = mix64(h ^ split_seed);
	return h;
}

int
hw_split_of(const HwTask *t, uint64_t anchor_key)
{
	uint64_t th = hw_hash_key_text(t->name, strlen(t->name));
	unsigned bucket = (unsigned) (hw_split_hash(th, anchor_key, t->split_seed) % 1000);
	long t1 = lround(t->split_ratio[0] * 1000.0);
	long t2 = lround((t->split_ratio[0] + t->split_ratio[1]) * 1000.0);

	if ((long) bucket < t1)
		return HW_SPLIT_TRAIN;
	if ((long) bucket < t2)
		return HW_SPLIT_VAL;
	return HW_SPLIT_TEST;
}

static int
assign_splits(HwTask *t, HwError *err)
{
	if (t->split_method == HW_SPLIT_BY_COLUMN || t->split_method == HW_SPLIT_BY_TIME)
	{
		if (t->split_method == HW_SPLIT_BY_TIME && t->split_val_from_us > t->split_test_from_us)
			return hw_error_set(err, HW_ERR_INVALID, "time split of task %s: val_from is after test_from",
								t->name);
		for (int s = 0; s < HW_N_SPLITS; s++)
			t->split_count[s] = 0;
		for (uint32_t i = 0; i < t->nseeds; i++)
		{
			if (t->split_method == HW_SPLIT_BY_TIME)
			{
				int64_t o = t->obs_time_us[i];

				if (o == HW_NO_CUTOFF)
					return hw_error_set(err, HW_ERR_INVALID,
										"time split of task %s: seed %u has no observation time", t->name, i);
				t->split[i] = (uint8_t) (o < t->split_val_from_us ? HW_SPLIT_TRAIN :
										 o < t->split_test_from_us ? HW_SPLIT_VAL : HW_SPLIT_TEST);
			}
			else if (t->split[i] >= HW_N_SPLITS)
				return hw_error_set(err, HW_ERR_INVALID, "seed %u of task %s has split %u", i, t->name,
									(unsigned) t->split[i]);
			t->split_count[t->split[i]]++;
		}
		return HW_OK;
	}
	for (int s = 0; s < HW_N_SPLITS; s++)
	{
		if (!(t->split_ratio[s] >= 0.0) || t->split_ratio[s] > 1.0)
			return hw_error_set(err, HW_ERR_INVALID, "split ratio %g of task %s is not in [0, 1]",
								t->split_ratio[s], t->name);
		t->split_count[s] = 0;
	}
	double sum = t->split_ratio[0] + t->split_ratio[1] + t->split_ratio[2];

	if (fabs(sum - 1.0) > 1e-6)
		return hw_error_set(err, HW_ERR_INVALID, "split ratios of task %s sum to %g, not 1",
							t->name, sum);
	uint64_t th = hw_hash_key_text(t->name, strlen(t->name));
	long t1 = lround(t->split_ratio[0] * 1000.0);
	long t2 = lround((t->split_ratio[0] + t->split_ratio[1]) * 1000.0);

	for (uint32_t i = 0; i < t->nseeds; i++)
	{
		long bucket = (long) (hw_split_hash(th, t->anchor_key[i], t->split_seed) % 1000);
		int s = bucket < t1 ? HW_SPLIT_TRAIN : bucket < t2 ? HW_SPLIT_VAL : HW_SPLIT_TEST;

		t->split[i] = (uint8_t) s;
		t->split_count[s]++;
	}
	return HW_OK;
}

/*
 * Whether every non-NULL train label of a numerical task is an integer (at
 * least one, not all equal).  A cell task's labels come back from float32
 * z-scores (value * std + mean), so "integer" allows the rounding error of
 * that trip: about 2^-24 of |value - mean|, well inside the tolerance.
 * Also sets target_min and target_span (hw_task_ordinal_levels).
 */
static bool
train_labels_integer(HwTask *t)
{
	bool    any = false;
	double  lo = 0, hi = 0;

	t->target_min = 0;
	t->target_span = 0;
	if (t->target_stype != HW_ST_NUMERICAL)
		return false;
	for (uint32_t i = 0; i < t->nseeds; i++)
	{
		if (t->target_null[i] || t->split[i] != HW_SPLIT_TRAIN)
			continue;
		double  y = t->target[i];

		if (!isfinite(y) || fabs(y) > 1e15 ||
			fabs(y - nearbyint(y)) > 1e-5 * (1.0 + fabs(y) + fabs(t->target_mean)))
			return false;
		y = nearbyint(y);
		lo = any ? fmin(lo, y) : y;
		hi = any ? fmax(hi, y) : y;
		any = true;
	}
	if (!any || hi == lo)
		return false;
	t->target_min = lo;
	t->target_span = hi - lo > INT32_MAX ? INT32_MAX : (int32_t) (hi - lo);
	return true;
}

int
hw_task_assign_splits(HwTask *t, HwError *err)
{
	int     rc = assign_splits(t, err);

	t->target_integer = rc == HW_OK && train_labels_integer(t);
	return rc;
}

void
hw_task_compute_stats(HwTask *t)
{
	int64_t nulls = 0;

	for (uint32_t i = 0; i < t->nseeds; i++)
		nulls += t->target_null[i] != 0;
	t->target_nulls = nulls;
	if (t->kind != HW_TASK_QUERY || t->target_stype != HW_ST_NUMERICAL)
		return;
	/* two-pass mean / variance over train non-NULL targets */
	double sum = 0;
	uint64_t n = 0;

	for (uint32_t i = 0; i < t->nseeds; i++)
		if (!t->target_null[i] && t->split[i] == HW_SPLIT_TRAIN)
		{
			sum += t->target[i];
			n++;
		}
	double mean = n ? sum / (double) n : 0.0;
	double ss = 0;

	for (uint32_t i = 0; i < t->nseeds; i++)
		if (!t->target_null[i] && t->split[i] == HW_SPLIT_TRAIN)
			ss += (t->target[i] - mean) * (t->target[i] - mean);
	double sd = n > 1 ? sqrt(ss / (double) n) : 0.0;

	t->target_mean = mean;
	t->target_std = (sd > 0 && isfinite(sd)) ? sd : 1.0;
}

int
hw_task_shard(const HwTask *t, int split, int rank, int world_size,
			  uint32_t **out, uint32_t *n, HwError *err)
{
	*out = NULL;
	*n = 0;
	if (split < 0 || split >= HW_N_SPLITS || world_size < 1 || rank < 0 || rank >= world_size)
		return hw_error_set(err, HW_ERR_INVALID, "bad shard request: split %d rank %d world_size %d",
							split, rank, world_size);
	uint32_t cap = t->split_count[split] / (uint32_t) world_size + 1;
	uint32_t *idx = malloc(sizeof(uint32_t) * cap);

	if (idx == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory sharding task %s", t->name);
	uint32_t k = 0, m = 0;

	for (uint32_t i = 0; i < t->nseeds; i++)
		if (t->split[i] == split)
		{
			if (k % (uint32_t) world_size == (uint32_t) rank)
				idx[m++] = i;
			k++;
		}
	*out = idx;
	*n = m;
	return HW_OK;
}

/* --------------------------------------------------------------- cell task */

int
hw_task_build_cell(HwTask *t, const HwSnapshot *snap, int32_t table, int32_t col, HwError *err)
{
	if (table < 0 || table >= snap->ntables)
		return hw_error_set(err, HW_ERR_INVALID, "task %s: table index %d out of range", t->name, table);
	const HwTable *tb = &snap->tables[table];

	if (col < 0 || col >= tb->ncols)
		return hw_error_set(err, HW_ERR_INVALID, "task %s: column index %d out of range in %s",
							t->name, col, tb->name);
	const HwColumn *c = &tb->cols[col];

	if (c->stype != HW_ST_NUMERICAL && c->stype != HW_ST_TIMESTAMP &&
		c->stype != HW_ST_BOOLEAN && c->stype != HW_ST_CATEGORICAL)
		return hw_error_set(err, HW_ERR_INVALID,
							"column %s of %s has semantic type %s, which cannot be a target "
							"(numerical, timestamp, boolean or categorical)",
							c->name, tb->name, hw_stype_name(c->stype));
	t->kind = HW_TASK_CELL;
	t->anchor_table = table;
	t->target_col = col;
	t->target_stype = c->stype;
	t->label_history = false;
	free(t->target_name);
	t->target_name = dupstr(c->name);
	int rc = hw_task_alloc_seeds(t, tb->nrows, err);

	if (rc != HW_OK)
		return rc;
	for (uint32_t r = 0; r < tb->nrows; r++)
	{
		uint32_t g = tb->row_offset + r;
		bool valid = c->valid ? c->valid[r] != 0 : true;

		t->anchor_row[r] = g;
		t->anchor_key[r] = tb->key_hash ? tb->key_hash[r] : r;
		t->obs_time_us[r] = snap->row_time_us[g] == HW_NO_TIME ? HW_NO_CUTOFF : snap->row_time_us[g];
		t->target_null[r] = !valid;
		if (!valid)
			continue;
		switch (c->stype)
		{
			case HW_ST_NUMERICAL:
				t->target[r] = (double) c->f32[r] * (c->std > 0 ? c->std : 1.0) + c->mean;
				break;
			case HW_ST_TIMESTAMP:
				t->target[r] = (double) c->i64[r];
				break;
			case HW_ST_BOOLEAN:
				t->target[r] = c->u8[r] ? 1.0 : 0.0;
				break;
			default:
				t->target[r] = (double) c->u32[r];
				break;
		}
	}
	t->target_mean = c->stype == HW_ST_NUMERICAL ? c->mean : 0.0;
	t->target_std = (c->stype == HW_ST_NUMERICAL && c->std > 0) ? c->std : 1.0;
	rc = hw_task_assign_splits(t, err);
	if (rc != HW_OK)
		return rc;
	hw_task_compute_stats(t);
	return HW_OK;
}

/* -------------------------------------------------------------- resolution */

int
hw_task_resolve_rows(HwTask *t, const HwSnapshot *snap, uint32_t *ndropped, HwError *err)
{
	if (ndropped)
		*ndropped = 0;
	if (t->anchor_table < 0 || t->anchor_table >= snap->ntables)
		return hw_error_set(err, HW_ERR_INVALID, "task %s: anchor table %d is not in the snapshot",
							t->name, t->anchor_table);
	const HwTable *tb = &snap->tables[t->anchor_table];
	uint32_t w = 0;

	for (uint32_t i = 0; i < t->nseeds; i++)
	{
		int64_t g;

		if (tb->key_hash)
		{
			uint32_t r = t->anchor_row[i];

			/* fast path: the stored row still holds this key */
			if (r >= tb->row_offset && r < tb->row_offset + tb->nrows &&
				tb->key_hash[r - tb->row_offset] == t->anchor_key[i])
				g = r;
			else
				g = snapshot_find_row(snap, t->anchor_table, t->anchor_key[i]);
		}
		else
			g = t->anchor_key[i] < tb->nrows ? (int64_t) (tb->row_offset + t->anchor_key[i]) : -1;
		if (g < 0)
			continue;
		t->anchor_row[w] = (uint32_t) g;
		t->anchor_key[w] = t->anchor_key[i];
		t->obs_time_us[w] = t->obs_time_us[i];
		t->target[w] = t->target[i];
		t->target_null[w] = t->target_null[i];
		t->split[w] = t->split[i];
		if (t->label_time_us)
			t->label_time_us[w] = t->label_time_us[i];
		w++;
	}
	if (ndropped)
		*ndropped = t->nseeds - w;
	t->nseeds = w;
	free(t->hist_order);
	free(t->hist_pos);
	t->hist_order = t->hist_pos = NULL;
	return hw_task_assign_splits(t, err);
}

/* ----------------------------------------------------------- label history */

static int
cmp_hist(const void *a, const void *b, void *ctx)
{
	uint32_t i = *(const uint32_t *) a, j = *(const uint32_t *) b;
	const HwTask *t = ctx;

	if (t->anchor_row[i] != t->anchor_row[j])
		return t->anchor_row[i] < t->anchor_row[j] ? -1 : 1;
	if (t->obs_time_us[i] != t->obs_time_us[j])
		return t->obs_time_us[i] < t->obs_time_us[j] ? -1 : 1;
	return i < j ? -1 : (i > j);
}

int
hw_task_build_history(HwTask *t, HwError *err)
{
	free(t->hist_order);
	free(t->hist_pos);
	t->hist_order = malloc(sizeof(uint32_t) * (t->nseeds ? t->nseeds : 1));
	t->hist_pos = malloc(sizeof(uint32_t) * (t->nseeds ? t->nseeds : 1));
	if (!t->hist_order || !t->hist_pos)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for label history of task %s", t->name);
	for (uint32_t i = 0; i < t->nseeds; i++)
		t->hist_order[i] = i;
	qsort_r(t->hist_order, t->nseeds, sizeof(uint32_t), cmp_hist, t);
	for (uint32_t p = 0; p < t->nseeds; p++)
		t->hist_pos[t->hist_order[p]] = p;
	return HW_OK;
}

int
hw_task_set_label_times(HwTask *t, const int64_t *lt, HwError *err)
{
	if (lt == NULL)
	{
		free(t->label_time_us);
		t->label_time_us = NULL;
		return HW_OK;
	}
	for (uint32_t i = 0; i < t->nseeds; i++)
		if (t->obs_time_us[i] != HW_NO_CUTOFF && lt[i] != HW_NO_CUTOFF && lt[i] < t->obs_time_us[i])
			return hw_error_set(err, HW_ERR_INVALID,
								"task %s: seed %u has its label time %lld before its observation time %lld",
								t->name, i, (long long) lt[i], (long long) t->obs_time_us[i]);
	int64_t *c = malloc(sizeof(int64_t) * (t->nseeds ? t->nseeds : 1));

	if (c == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for label times of task %s", t->name);
	memcpy(c, lt, sizeof(int64_t) * t->nseeds);
	free(t->label_time_us);
	t->label_time_us = c;
	return HW_OK;
}

/* ------------------------------------------------------------ byte form */

#define SEEDS_MAGIC "HWTS"
#define SEEDS_VERSION 1u
#define SEEDS_HEADER 16
#define SEEDS_FLAG_SPLITS 1u    /* split u8[n] follows the arrays */
#define SEEDS_FLAG_LABEL_TIME 2u    /* label_time_us i64[n] follows (after the splits) */

int
hw_task_seeds_serialize(const HwTask *t, uint8_t **out, size_t *len, HwError *err)
{
	size_t n = t->nseeds;
	bool given = t->split_method != HW_SPLIT_BY_HASH;
	bool lt = t->label_time_us != NULL;
	size_t total = SEEDS_HEADER + n * (8 + 4 + 8 + 8 + 1) + (given ? n : 0) + (lt ? n * 8 : 0);
	uint8_t *b = malloc(total);

	if (b == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory serializing %zu seeds", n);
	uint32_t hdr[3] = {SEEDS_VERSION, (uint32_t) n,
					   (given ? SEEDS_FLAG_SPLITS : 0u) | (lt ? SEEDS_FLAG_LABEL_TIME : 0u)};

	memcpy(b, SEEDS_MAGIC, 4);
	memcpy(b + 4, hdr, 12);
	uint8_t *p = b + SEEDS_HEADER;

	memcpy(p, t->anchor_key, n * 8); p += n * 8;
	memcpy(p, t->anchor_row, n * 4); p += n * 4;
	memcpy(p, t->obs_time_us, n * 8); p += n * 8;
	memcpy(p, t->target, n * 8); p += n * 8;
	memcpy(p, t->target_null, n); p += n;
	if (given)
	{
		memcpy(p, t->split, n);
		p += n;
	}
	if (lt)
		memcpy(p, t->label_time_us, n * 8);
	*out = b;
	*len = total;
	return HW_OK;
}

int
hw_task_seeds_deserialize(HwTask *t, const uint8_t *buf, size_t len, HwError *err)
{
	uint32_t hdr[3];

	if (len < SEEDS_HEADER || memcmp(buf, SEEDS_MAGIC, 4) != 0)
		return hw_error_set(err, HW_ERR_CORRUPT, "seeds of task %s are not in headwater's seed format", t->name);
	memcpy(hdr, buf + 4, 12);
	if (hdr[0] != SEEDS_VERSION)
		return hw_error_set(err, HW_ERR_CORRUPT, "seeds of task %s have format version %u, this build reads %u",
							t->name, hdr[0], SEEDS_VERSION);
	size_t n = hdr[1];
	bool given = (hdr[2] & SEEDS_FLAG_SPLITS) != 0;
	bool lt = (hdr[2] & SEEDS_FLAG_LABEL_TIME) != 0;

	if ((hdr[2] & ~(SEEDS_FLAG_SPLITS | SEEDS_FLAG_LABEL_TIME)) != 0)
		return hw_error_set(err, HW_ERR_CORRUPT, "seeds of task %s have unknown flags %u", t->name, hdr[2]);
	if (len != SEEDS_HEADER + n * ((given ? 30 : 29) + (lt ? 8 : 0)))
		return hw_error_set(err, HW_ERR_CORRUPT, "seeds of task %s: %zu bytes for %zu seeds", t->name, len, n);
	int rc = hw_task_alloc_seeds(t, (uint32_t) n, err);

	if (rc != HW_OK)
		return rc;
	const uint8_t *p = buf + SEEDS_HEADER;

	memcpy(t->anchor_key, p, n * 8); p += n * 8;
	memcpy(t->anchor_row, p, n * 4); p += n * 4;
	memcpy(t->obs_time_us, p, n * 8); p += n * 8;
	memcpy(t->target, p, n * 8); p += n * 8;
	memcpy(t->target_null, p, n); p += n;
	if (given)
	{
		/* caller-given splits are stored: count them as they are */
		memcpy(t->split, p, n);
		p += n;
		t->split_method = HW_SPLIT_BY_COLUMN;
	}
	else if (t->split_method != HW_SPLIT_BY_HASH)
		return hw_error_set(err, HW_ERR_CORRUPT, "seeds of task %s lack their %s split", t->name,
							hw_split_method_name(t->split_method));
	if (lt)
	{
		int64_t *v = malloc(sizeof(int64_t) * (n ? n : 1));

		if (v == NULL)
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory for label times of task %s", t->name);
		memcpy(v, p, n * 8);
		rc = hw_task_set_label_times(t, v, err);
		free(v);
		if (rc != HW_OK)
		{
			char why[sizeof(err->msg)];

			memcpy(why, err->msg, sizeof(why));
			return hw_error_set(err, HW_ERR_CORRUPT, "seeds of task %s: %s", t->name, why);
		}
	}
	return hw_task_assign_splits(t, err);
}

/* ------------------------------------------------------------------ layout */

int
hw_task_layout(const HwSnapshot *snap, HwTask *const *tasks, int ntasks, HwError *err)
{
	int64_t col = snap->ncolumns;
	int64_t cat = snap->ncat;

	for (int i = 0; i < ntasks; i++)
	{
		HwTask *t = tasks[i];

		t->col_base = -1;
		t->cat_base = 0;
		t->cat_count = 0;
		if (t->kind == HW_TASK_QUERY)
		{
			t->col_base = (int32_t) col;
			col += 2;
			if (t->target_stype == HW_ST_CATEGORICAL)
			{
				t->cat_base = (int32_t) cat;
				t->cat_count = t->ncat_own;
				cat += t->ncat_own;
			}
		}
		else if (t->target_stype == HW_ST_CATEGORICAL)
		{
			if (t->anchor_table < 0 || t->anchor_table >= snap->ntables ||
				t->target_col < 0 || t->target_col >= snap->tables[t->anchor_table].ncols)
				return hw_error_set(err, HW_ERR_INVALID, "task %s: target column not in the snapshot", t->name);
			const HwColumn *c = &snap->tables[t->anchor_table].cols[t->target_col];

			t->cat_base = (int32_t) c->cat_emb_start;
			t->cat_count = c->cat_emb_count;
		}
		if (col > INT32_MAX || cat > INT32_MAX)
			return hw_error_set(err, HW_ERR_INVALID, "too many columns or categories");
	}
	return HW_OK;
}

int
hw_training_tables(const HwSnapshot *snap, HwTask *const *tasks, int ntasks,
				   uint16_t **col_emb, int32_t *ncols,
				   uint16_t **cat_emb, uint32_t *ncat, HwError *err)
{
	*col_emb = NULL;
	*cat_emb = NULL;
	int rc = hw_task_layout(snap, tasks, ntasks, err);

	if (rc != HW_OK)
		return rc;
	size_t d = (size_t) snap->d_text;
	int64_t nc = snap->ncolumns;
	int64_t nk = snap->ncat;

	for (int i = 0; i < ntasks; i++)
		if (tasks[i]->kind == HW_TASK_QUERY)
		{
			nc += 2;
			if (tasks[i]->target_stype == HW_ST_CATEGORICAL)
				nk += tasks[i]->ncat_own;
		}
	uint16_t *ce = calloc((size_t) nc * d + 1, sizeof(uint16_t));
	uint16_t *ke = calloc((size_t) nk * d + 1, sizeof(uint16_t));

	if (!ce || !ke)
	{
		free(ce);
		free(ke);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for embedding tables (%lld columns, %lld categories)",
							(long long) nc, (long long) nk);
	}
	if (snap->col_emb)
		memcpy(ce, snap->col_emb, (size_t) snap->ncolumns * d * 2);
	if (snap->cat_emb)
		memcpy(ke, snap->cat_emb, (size_t) snap->ncat * d * 2);
	for (int i = 0; i < ntasks; i++)
	{
		const HwTask *t = tasks[i];

		if (t->kind != HW_TASK_QUERY)
			continue;
		if (t->vcol_emb && t->d_text == snap->d_text)
			memcpy(ce + (size_t) t->col_base * d, t->vcol_emb, 2 * d * 2);
		if (t->target_stype == HW_ST_CATEGORICAL && t->cat_emb_own && t->d_text == snap->d_text)
			memcpy(ke + (size_t) t->cat_base * d, t->cat_emb_own, (size_t) t->ncat_own * d * 2);
	}
	*col_emb = ce;
	*ncols = (int32_t) nc;
	*cat_emb = ke;
	*ncat = (uint32_t) nk;
	return HW_OK;
}
