/*
 * synth_batch.c: the synthetic batch generator (see synth_batch.h).
 */
#include "synth_batch.h"
#include "tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void
unit_rows(uint16_t *t, int n, int dt, HwRng *r)
{
	float *v = malloc(sizeof(float) * dt);

	for (int i = 0; i < n; i++)
	{
		double s = 0;

		for (int d = 0; d < dt; d++)
		{
			v[d] = (float) hw_rng_normal(r);
			s += (double) v[d] * v[d];
		}
		for (int d = 0; d < dt; d++)
			t[(size_t) i * dt + d] = hw_f32_to_f16(v[d] / (float) sqrt(s));
	}
	free(v);
}

void
hw_synth_tables(int32_t d_text, uint64_t seed, uint16_t **col_table, uint16_t **cat_table)
{
	HwRng r;

	hw_rng_seed(&r, seed ^ 0x7ab1e5ULL);
	*col_table = malloc(sizeof(uint16_t) * HW_SYNTH_NCOLS * d_text);
	*cat_table = malloc(sizeof(uint16_t) * HW_SYNTH_NCAT * d_text);
	unit_rows(*col_table, HW_SYNTH_NCOLS, d_text, &r);
	unit_rows(*cat_table, HW_SYNTH_NCAT, d_text, &r);
}

static void
ts_encode(float *t, float x)
{
	for (int k = 0; k < 7; k++)
	{
		t[2 * k] = sinf((k + 1) * x);
		t[2 * k + 1] = cosf((k + 1) * x);
	}
	t[14] = x;
}

/* stable counting sort of positions by key; padding (key -1) last */
static void
perm_by_key(uint16_t *perm, const int32_t *key, int S, int maxkey)
{
	int p = 0;

	for (int k = 0; k <= maxkey; k++)
		for (int i = 0; i < S; i++)
			if (key[i] == k)
				perm[p++] = (uint16_t) i;
	for (int i = 0; i < S; i++)
		if (key[i] < 0)
			perm[p++] = (uint16_t) i;
}

HwBatch *
hw_synth_batch(const HwSynthSpec *spec, uint64_t index)
{
	int      B = spec->B, S = spec->S, Dt = spec->d_text, U = 8;
	int      R = 2 + (S + 3) / 4;
	float    padf = spec->pad_frac > 0 ? spec->pad_frac : 0.25f;
	HwRng    r;
	HwBatch *bt;
	int32_t *key;
	int      ts = spec->target_stype;

	if (B <= 0 || S < 8 || S > 65535 || Dt <= 0 || ts < 1 || ts > 4)
		return NULL;
	bt = hw_batch_alloc(B, S, R, U, Dt);
	key = malloc(sizeof(int32_t) * S);
	if (!bt || !key)
	{
		hw_batch_free(bt);
		free(key);
		return NULL;
	}
	hw_rng_seed(&r, spec->seed * 0x9E3779B97F4A7C15ULL + index + 1);
	bt->target_stype = (uint8_t) ts;
	bt->task_idx = 0;
	bt->cat_emb_start = ts == HW_ST_CATEGORICAL ? 4 : 0;
	bt->cat_emb_count = ts == HW_ST_CATEGORICAL ? 5 : 0;
	for (int u = 0; u < U * Dt; u++)
		bt->text_batch_embeddings[u] = hw_f32_to_f16((float) hw_rng_normal(&r) / sqrtf((float) Dt));

	for (int b = 0; b < B; b++)
	{
		size_t base = (size_t) b * S;
		int    len = S - (int) (hw_rng_uniform(&r) * padf * S);
		float  x = (float) hw_rng_normal(&r);
		int    isnull = fabsf(x) > 1.6f;
		int    pos = 0, row = 0;

		/* row 0: A */
		static const int colsA[] = {0, 1, 2, 3, 4}, colsP[] = {5, 6, 7}, colsC[] = {8, 9, 10, 11};
		static const int8_t stA[] = {0, 1, -1, 3, 4}, stP[] = {0, 1, 2}, stC[] = {0, 0, 1, 5};

		while (pos < len)
		{
			const int    *cols = row == 0 ? colsA : row == 1 ? colsP : colsC;
			const int8_t *sts = row == 0 ? stA : row == 1 ? stP : stC;
			int           nc = row == 0 ? 5 : row == 1 ? 3 : 4;

			if (row >= R)
				break;
			for (int c = 0; c < nc && pos < len; c++, pos++)
			{
				size_t i = base + pos;
				int8_t st = sts[c] < 0 ? (int8_t) ts : sts[c];

				bt->semantic_types[i] = st;
				bt->column_ids[i] = cols[c];
				bt->seq_row_ids[i] = (uint16_t) row;
				if (row == 0 && c == 2)
				{
					bt->is_target[i] = 1;
					bt->is_null[i] = (uint8_t) isnull;
					if (!isnull)
						switch (ts)
						{
							case HW_ST_NUMERICAL:
								bt->numeric_values[i] = 0.9f * x;
								break;
							case HW_ST_BOOLEAN:
								bt->bool_values[i] = x > 0;
								break;
							case HW_ST_CATEGORICAL:
								bt->categorical_embed_ids[i] = 4 + (x < -0.84f ? 0 : x < -0.25f ? 1 : x < 0.25f ? 2 : x < 0.84f ? 3 : 4);
								break;
							case HW_ST_TIMESTAMP:
								ts_encode(bt->timestamp_values + i * 15, x);
								break;
						}
					continue;
				}
				switch (st)
				{
					case HW_ST_NUMERICAL:
						bt->numeric_values[i] = row == 0 ? x : row == 1 ? (float) hw_rng_normal(&r)
							: x + 0.3f * (float) hw_rng_normal(&r);
						break;
					case HW_ST_BOOLEAN:
						bt->bool_values[i] = hw_rng_uniform(&r) < 0.5;
						break;
					case HW_ST_CATEGORICAL:
						bt->categorical_embed_ids[i] = (uint32_t) (hw_rng_next(&r) % 4);
						break;
					case HW_ST_TIMESTAMP:
						ts_encode(bt->timestamp_values + i * 15, (float) hw_rng_normal(&r));
						break;
					case HW_ST_TEXT:
						bt->text_embed_ids[i] = (uint32_t) (hw_rng_next(&r) % U);
						break;
					default:
						break;
				}
				/* a few NULLs among the inputs */
				if (st != HW_ST_IDENTIFIER && hw_rng_uniform(&r) < 0.05)
				{
					bt->is_null[i] = 1;
					bt->numeric_values[i] = 0;
					bt->bool_values[i] = 0;
					bt->categorical_embed_ids[i] = 0;
					bt->text_embed_ids[i] = 0;
					memset(bt->timestamp_values + i * 15, 0, 15 * sizeof(float));
				}
			}
			/* link keys: the parent reached from row 0, the children from the
			 * parent (two FKs, alternating), row 0 none */
			for (int p = pos - nc < 0 ? 0 : pos - nc; p < pos; p++)
				if (bt->seq_row_ids[base + p] == row)
					bt->link_key[base + p] = row == 0 ? 0u : row == 1 ? 0x51u : row % 2 ? 0xc3u : 0x7du;
			if (row == 0)
				bt->fk_adj[((size_t) b * R + 0) * R + 1] = 1;
			else if (row >= 2)
				bt->fk_adj[((size_t) b * R + row) * R + 0] = 1;
			row++;
		}
		for (; pos < S; pos++)
			bt->is_padding[base + pos] = 1;

		for (int i = 0; i < S; i++)
			key[i] = bt->is_padding[base + i] ? -1 : bt->column_ids[base + i];
		perm_by_key(bt->col_perm + base, key, S, HW_SYNTH_NCOLS - 1);
		for (int i = 0; i < S; i++)
			key[i] = bt->is_padding[base + i] ? -1 : bt->seq_row_ids[base + i];
		perm_by_key(bt->out_perm + base, key, S, R - 1);
		memcpy(bt->in_perm + base, bt->out_perm + base, sizeof(uint16_t) * S);
	}
	/* observation times from their own stream (the draws above are as they
	 * were before seed_time existed): every third sequence has none */
	{
		HwRng rt;

		hw_rng_seed(&rt, (spec->seed * 0x9E3779B97F4A7C15ULL + index + 1) ^ 0x5eed71e5ULL);
		for (int b = 0; b < B; b++)
		{
			float z = (float) hw_rng_normal(&rt) + 1.0f;

			bt->seed_time[b] = b % 3 == 2 ? NAN : z;
		}
	}
	/* child counts (the temporal degree), from a third stream: the parent
	 * (row 1) has children through two FKs, every even row >= 2 through
	 * one; counts shrink with the window as real ones do, row 0 has none */
	{
		HwRng rc;

		hw_rng_seed(&rc, (spec->seed * 0x9E3779B97F4A7C15ULL + index + 1) ^ 0xc0c0a7edULL);
		for (int b = 0; b < B; b++)
		{
			uint16_t cnt[HW_CHILD_LINKS * HW_CHILD_WINDOWS];
			uint32_t key[HW_CHILD_LINKS];
			int      last = -1;

			for (int p = 0; p < S; p++)
			{
				size_t i = (size_t) b * S + p;
				int    row = bt->seq_row_ids[i];

				if (bt->is_padding[i] || (row != 1 && (row < 2 || row % 2)))
					continue;
				if (row != last)
				{
					memset(key, 0, sizeof(key));
					memset(cnt, 0, sizeof(cnt));
					for (int l = 0; l < (row == 1 ? 2 : 1); l++)
					{
						int n = 1 + (int) (hw_rng_uniform(&rc) * 40);

						key[l] = row == 1 ? (l ? 0x7du : 0xc3u) : 0x2eu;
						for (int w = 0; w < HW_CHILD_WINDOWS; w++)
							cnt[l * HW_CHILD_WINDOWS + w] = (uint16_t) (w == 0 ? n : n * w / (2 * HW_CHILD_WINDOWS));
					}
					last = row;
				}
				memcpy(bt->child_key + i * HW_CHILD_LINKS, key, sizeof(key));
				memcpy(bt->child_count + i * HW_CHILD_LINKS * HW_CHILD_WINDOWS, cnt, sizeof(cnt));
			}
		}
	}
	free(key);
	return bt;
}
