/*
 * bench/sampler_recency.c: how often a sequence shows an entity's most
 * recent history, under the previous sampler (child_sampling uniform + key
 * cells) and under the defaults (recent children, no key cells).
 *
 *   bench/bin/sampler_recency SNAPSHOT ANCHOR_TABLE CHILD_TABLE OBS_EPOCH_SECONDS
 *
 * A query task on every row of ANCHOR_TABLE observed at OBS; for each
 * sequence: is the anchor's latest CHILD_TABLE row at or before OBS (by the
 * child table's time column) in it, are its latest 3 (anchors with >= 3),
 * how many visible child-table rows it shows.  S = 128, 256, 1024; B = 64,
 * child width 16, R <= 200.  Snapshot files: bench/sampler.sh.
 */
#include "core/sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static HwSnapshot *
load(const char *path)
{
	FILE *f = fopen(path, "rb");

	if (!f)
	{
		perror(path);
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);

	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t) n);
	HwSnapshot *s = NULL;
	HwError err = {0};

	if (fread(buf, 1, (size_t) n, f) != (size_t) n || snapshot_deserialize(buf, (size_t) n, &s, &err) != HW_OK)
		fprintf(stderr, "%s: %s\n", path, err.msg);
	fclose(f);
	free(buf);
	return s;
}

int
main(int argc, char **argv)
{
	if (argc != 5)
	{
		fprintf(stderr, "usage: %s SNAPSHOT ANCHOR_TABLE CHILD_TABLE OBS_EPOCH_SECONDS\n", argv[0]);
		return 2;
	}
	HwSnapshot *s = load(argv[1]);
	HwError err = {0};
	int at = -1, ct = -1;

	if (!s)
		return 1;
	for (int t = 0; t < s->ntables; t++)
	{
		if (!strcmp(s->tables[t].name, argv[2]))
			at = t;
		if (!strcmp(s->tables[t].name, argv[3]))
			ct = t;
	}
	if (at < 0 || ct < 0 || s->tables[ct].time_col < 0)
	{
		fprintf(stderr, "need tables %s and %s (with a time column)\n", argv[2], argv[3]);
		return 1;
	}
	const HwTable *a = &s->tables[at];
	int64_t obs = atoll(argv[4]) * 1000000LL;
	HwTask *t = hw_task_new("recency", HW_TASK_QUERY, &err);

	t->anchor_table = at;
	t->target_stype = HW_ST_BOOLEAN;
	t->label_history = false;
	hw_task_alloc_seeds(t, a->nrows, &err);
	for (uint32_t r = 0; r < a->nrows; r++)
	{
		t->anchor_row[r] = a->row_offset + r;
		t->anchor_key[r] = a->key_hash ? a->key_hash[r] : r;
		t->obs_time_us[r] = obs;
	}
	hw_task_assign_splits(t, &err);
	const int Ss[3] = {128, 256, 1024};

	for (int si = 0; si < 3; si++)
		for (int mode = 0; mode < 2; mode++)
		{
			HwSamplerConfig cfg;

			hw_sampler_config_default(&cfg);
			cfg.batch_size = 64;
			cfg.seq_len = Ss[si];
			cfg.n_threads = 1;
			cfg.seed = 1;
			if (mode == 0)
			{
				cfg.child_sampling = HW_CHILD_UNIFORM;
				cfg.key_cells = true;
			}
			HwSampler *sm = hw_sampler_create(s, &t, 1, &cfg, &err);

			if (!sm)
			{
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
			long seqs = 0, has1 = 0, has3 = 0, elig3 = 0, shown = 0;

			for (uint32_t b0 = 0; b0 + 64 <= a->nrows; b0 += 64)
			{
				uint32_t idx[64];
				HwBatch *b;

				for (int i = 0; i < 64; i++)
					idx[i] = b0 + (uint32_t) i;
				if (hw_sampler_seed_batch(sm, 0, idx, 64, &b, &err) != HW_OK)
				{
					fprintf(stderr, "%s\n", err.msg);
					return 1;
				}
				for (int i = 0; i < 64; i++)
				{
					uint32_t g = t->anchor_row[idx[i]];
					int64_t best[3] = {INT64_MIN, INT64_MIN, INT64_MIN}, brow[3] = {-1, -1, -1};
					int nvis = 0;

					for (uint64_t e = s->pf_off[g]; e < s->pf_off[g + 1]; e++)
					{
						uint32_t c = s->pf_dst[e];
						int64_t tm = s->row_time_us[c];

						if (s->row_table[c] != ct || tm > obs)
							continue;
						nvis++;
						for (int q = 0; q < 3; q++)
							if (tm > best[q])
							{
								for (int z = 2; z > q; z--)
								{
									best[z] = best[z - 1];
									brow[z] = brow[z - 1];
								}
								best[q] = tm;
								brow[q] = c;
								break;
							}
					}
					if (nvis == 0)
						continue;
					const HwCellSource *rows;
					int nr, in[3] = {0, 0, 0};

					hw_sampler_last_rows(sm, i, &rows, &nr);
					for (int r = 0; r < nr; r++)
					{
						if (rows[r].row < 0)
							continue;
						if (s->row_table[rows[r].row] == ct && s->row_time_us[rows[r].row] <= obs)
							shown++;
						for (int q = 0; q < 3; q++)
							in[q] |= rows[r].row == brow[q];
					}
					seqs++;
					has1 += in[0];
					if (nvis >= 3)
					{
						elig3++;
						has3 += in[0] && in[1] && in[2];
					}
				}
				hw_batch_free(b);
			}
			printf("S=%4d %-32s: latest %s in %5.1f%% of sequences, latest 3 in %5.1f%% (anchors with >= 3), "
				   "visible %s rows shown %.2f a sequence\n",
				   Ss[si], mode ? "defaults (recent, no key cells)" : "before (uniform, key cells)", argv[3],
				   seqs ? 100.0 * has1 / seqs : 0.0, elig3 ? 100.0 * has3 / elig3 : 0.0, argv[3],
				   seqs ? (double) shown / seqs : 0.0);
			hw_sampler_free(sm);
		}
	hw_task_free(t);
	snapshot_free(s);
	return 0;
}
