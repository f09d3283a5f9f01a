/*
 * bench/sampler.c: sampler throughput (sequences/s, cells/s) with 1 and 2
 * threads, including fk_adj and the three permutations, and peak memory.
 *
 *   bench/bin/sampler [--rows N] [--snapshot FILE] [--task TABLE.COLUMN]
 *                     [--batches K] [--B 32] [--S 1024] [--width 16] [--threads 1,2]
 *                     [--max-rows 200] [--child-sampling recent|uniform]
 *                     [--recent-children K] [--key-cells 0|1] [--descendants 0|1]
 *                     [--no-query-load] [--digest]
 *
 * --digest prints a hash of every batch's bytes (all tensors), for checking
 * that a change to the sampler gives the same batches; it slows the run.
 * --child-sampling uniform --key-cells 1 is the sampler before those options
 * existed (same batches, bit for bit).
 *
 * Without --snapshot it builds the synthetic shop database (test/unit/
 * synth_snapshot.c) of N rows (default 1,000,000) and predicts orders.status.
 * With --snapshot it reads a file holding snapshot_serialize() bytes (e.g.
 * dumped with rt_snapshot_bytes(model)) and, without --task, predicts the
 * first targetable column of the largest table.
 */
#include "../test/unit/synth_snapshot.c"
#include "core/sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* FNV-1a over n bytes, continuing h */
static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}

/* every tensor of b, the listed ones and those beside them */
static uint64_t
batch_digest(uint64_t h, HwBatch *b)
{
	HwTensorView v[HW_BATCH_NTENSORS];
	size_t bs = (size_t) b->B * b->S;

	hw_batch_tensors(b, v);
	for (int i = 0; i < HW_BATCH_NTENSORS; i++)
	{
		size_t n = hw_dtype_size(v[i].dtype);

		for (int d = 0; d < v[i].ndim; d++)
			n *= (size_t) v[i].shape[d];
		h = fnv(h, v[i].data, n);
	}
	h = fnv(h, b->seed_time, sizeof(float) * b->B);
	h = fnv(h, b->link_key, sizeof(uint32_t) * bs);
	h = fnv(h, b->child_key, sizeof(uint32_t) * bs * HW_CHILD_LINKS);
	h = fnv(h, b->child_count, sizeof(uint16_t) * bs * HW_CHILD_LINKS * HW_CHILD_WINDOWS);
	h = fnv(h, b->mean_key, sizeof(uint32_t) * bs * HW_MEAN_SLOTS);
	return fnv(h, b->child_mean, sizeof(float) * bs * HW_MEAN_SLOTS * HW_CHILD_WINDOWS);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static HwSnapshot *
load_file(const char *path)
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

	if (fread(buf, 1, (size_t) n, f) != (size_t) n)
	{
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	HwSnapshot *s = NULL;
	HwError err = {0};

	if (snapshot_deserialize(buf, (size_t) n, &s, &err) != HW_OK)
		fprintf(stderr, "%s: %s\n", path, err.msg);
	free(buf);
	return s;
}

static bool
targetable(const HwColumn *c)
{
	return c->stype == HW_ST_NUMERICAL || c->stype == HW_ST_CATEGORICAL ||
		c->stype == HW_ST_BOOLEAN || c->stype == HW_ST_TIMESTAMP;
}

int
main(int argc, char **argv)
{
	uint32_t rows = 1000000;
	const char *snap_path = NULL, *task_spec = NULL, *threads = "1,2";
	int batches = 60, B = 32, S = 1024, width = 16, max_rows = 200, recent = -1, key_cells = 0, descendants = 1,
		date_undated = 0;
	int policy = HW_CHILD_RECENT, query_load = 1, digest = 0, future = HW_FUTURE_PARENTS_HIDE;
	double cell_dropout = 0;

	for (int i = 1; i < argc; i++)
	{
		if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = (uint32_t) atol(argv[++i]);
		else if (!strcmp(argv[i], "--snapshot") && i + 1 < argc) snap_path = argv[++i];
		else if (!strcmp(argv[i], "--task") && i + 1 < argc) task_spec = argv[++i];
		else if (!strcmp(argv[i], "--batches") && i + 1 < argc) batches = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--B") && i + 1 < argc) B = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--S") && i + 1 < argc) S = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--width") && i + 1 < argc) width = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = argv[++i];
		else if (!strcmp(argv[i], "--max-rows") && i + 1 < argc) max_rows = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--recent-children") && i + 1 < argc) recent = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--key-cells") && i + 1 < argc) key_cells = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--descendants") && i + 1 < argc) descendants = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--date-undated") && i + 1 < argc) date_undated = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-query-load")) query_load = 0;
		else if (!strcmp(argv[i], "--digest")) digest = 1;
		else if (!strcmp(argv[i], "--cell-dropout") && i + 1 < argc) cell_dropout = atof(argv[++i]);
		else if (!strcmp(argv[i], "--child-sampling") && i + 1 < argc &&
				 (policy = hw_child_sampling_from_name(argv[++i])) >= 0) ;
		else if (!strcmp(argv[i], "--future-parents") && i + 1 < argc &&
				 (future = hw_future_parents_from_name(argv[++i])) >= 0) ;
		else
		{
			fprintf(stderr, "usage: %s [--rows N] [--snapshot FILE] [--task T.C] [--batches K] "
					"[--B 32] [--S 1024] [--width 16] [--threads 1,2] [--max-rows 200] "
					"[--child-sampling recent|uniform] [--recent-children K] [--key-cells 0|1] "
					"[--descendants 0|1] [--future-parents hide|follow] [--date-undated 0|1] [--cell-dropout P] [--no-query-load]\n", argv[0]);
			return 2;
		}
	}
	double t0 = now_s();
	HwSnapshot *snap = snap_path ? load_file(snap_path) : synth_shop(rows, 1, 256);

	if (!snap)
		return 1;
	printf("snapshot: %s, %u rows, %d tables, %d columns, d_text %d (%.2f s to build/load)\n",
		   snap_path ? snap_path : "synthetic shop", snap->nrows, snap->ntables, snap->ncolumns,
		   snap->d_text, now_s() - t0);
	int ti = -1, ci = -1;

	if (task_spec)
	{
		char tn[256];
		const char *dot = strchr(task_spec, '.');

		snprintf(tn, sizeof(tn), "%.*s", dot ? (int) (dot - task_spec) : 0, task_spec);
		for (int t = 0; t < snap->ntables; t++)
			if (!strcmp(snap->tables[t].name, tn))
				for (int c = 0; c < snap->tables[t].ncols; c++)
					if (dot && !strcmp(snap->tables[t].cols[c].name, dot + 1))
					{
						ti = t;
						ci = c;
					}
	}
	else if (!snap_path)
	{
		ti = 3;
		ci = 3;                 /* orders.status */
	}
	else
	{
		uint32_t best = 0;

		for (int t = 0; t < snap->ntables; t++)
			for (int c = 0; c < snap->tables[t].ncols; c++)
				if (targetable(&snap->tables[t].cols[c]) && snap->tables[t].nrows > best)
				{
					best = snap->tables[t].nrows;
					ti = t;
					ci = c;
					break;
				}
	}
	if (ti < 0)
	{
		fprintf(stderr, "no target column found\n");
		return 1;
	}
	HwError err = {0};
	HwTask *task = hw_task_new("bench", HW_TASK_CELL, &err);

	if (hw_task_build_cell(task, snap, ti, ci, &err) != HW_OK)
	{
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("task: predict %s.%s (%s), %u seeds; B=%d S=%d R<=%d child width %d, child_sampling %s "
		   "(recent_children %d), key_cells %d, descendant_counts %d, future_parents %s, date_undated %d, cell_dropout %g, "
		   "%d batches per run\n",
		   snap->tables[ti].name, snap->tables[ti].cols[ci].name,
		   hw_stype_name(task->target_stype), task->nseeds, B, S, max_rows, width,
		   hw_child_sampling_name(policy), recent, key_cells, descendants, hw_future_parents_name(future), date_undated, cell_dropout,
		   batches);

	char tbuf[64];

	snprintf(tbuf, sizeof(tbuf), "%s", threads);
	for (char *tok = strtok(tbuf, ","); tok; tok = strtok(NULL, ","))
	{
		int nt = atoi(tok);
		HwSamplerConfig cfg;

		hw_sampler_config_default(&cfg);
		cfg.batch_size = B;
		cfg.seq_len = S;
		cfg.bfs_child_width = width;
		cfg.max_rows = max_rows;
		cfg.child_sampling = policy;
		cfg.recent_children = recent;
		cfg.key_cells = key_cells != 0;
		cfg.descendant_counts = descendants != 0;
		cfg.future_parents = future;
		cfg.date_undated = date_undated != 0;
		cfg.cell_dropout = (float) cell_dropout;
		cfg.n_threads = nt;
		cfg.seed = 1;
		double tc = now_s();
		HwSampler *sm = hw_sampler_create(snap, &task, 1, &cfg, &err);

		if (!sm)
		{
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		printf("threads %d: sampler created in %.3f s (row cache, shards, scratch)\n", nt, now_s() - tc);
		/* warm-up batch (page-ins, scratch growth) */
		HwBatch *b;

		hw_sampler_batch(sm, HW_SPLIT_TRAIN, 1000000, &b, NULL, &err);
		hw_batch_free(b);
		double cells = 0, rsum = 0, usum = 0, rows = 0;
		uint64_t h = 14695981039346656037ull;
		double start = now_s(), cstart = cpu_s();

		for (int k = 0; k < batches; k++)
		{
			if (hw_sampler_batch(sm, HW_SPLIT_TRAIN, (uint64_t) k, &b, NULL, &err) != HW_OK)
			{
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
			for (size_t p = 0; p < (size_t) B * S; p++)
				cells += !b->is_padding[p];
			rsum += b->R;
			usum += b->U;
			for (int q = 0; q < B; q++)
			{
				const HwCellSource *src;
				int nr;

				if (hw_sampler_last_rows(sm, q, &src, &nr) == HW_OK)
					rows += nr;
			}
			if (digest)
				h = batch_digest(h, b);
			hw_batch_free(b);
		}
		double el = now_s() - start, cel = cpu_s() - cstart;

		/* CPU time too: on a shared machine wall time includes other load */
		printf("threads %d: %.0f sequences/s (wall), %.0f sequences per CPU-second, %.2f M cells/s, "
			   "%.3f ms/batch, mean cells/seq %.0f, mean rows/seq %.1f, mean R %.0f, mean U %.0f\n",
			   nt, batches * (double) B / el, batches * (double) B / cel, cells / el / 1e6, el / batches * 1e3,
			   cells / (batches * (double) B), rows / (batches * (double) B), rsum / batches, usum / batches);
		if (digest)
			printf("threads %d: digest of the batches %016llx\n", nt, (unsigned long long) h);
		hw_sampler_free(sm);
	}
	/* loading a big query task: 1M seeds through the byte form, row
	 * re-resolution by key hash (after a refresh every row may have moved:
	 * the slow path), and the label-history index */
	if (query_load)
	{
		const HwTable *at = &snap->tables[ti];
		uint32_t nseed = 1000000;
		HwTask *q = hw_task_new("bench_query", HW_TASK_QUERY, &err);
		uint8_t *buf;
		size_t len;

		q->anchor_table = ti;
		hw_task_alloc_seeds(q, nseed, &err);
		for (uint32_t i = 0; i < nseed; i++)
		{
			uint32_t r = (uint32_t) ((i * 2654435761u) % at->nrows);

			q->anchor_row[i] = at->row_offset + (r + 1) % at->nrows;  /* stale on purpose */
			q->anchor_key[i] = at->key_hash ? at->key_hash[r] : r;
			q->obs_time_us[i] = (int64_t) i * 1000;
			q->target[i] = i % 7;
		}
		hw_task_assign_splits(q, &err);
		hw_task_seeds_serialize(q, &buf, &len, &err);
		HwTask *q2 = hw_task_new("bench_query", HW_TASK_QUERY, &err);
		double t0 = now_s();

		hw_task_seeds_deserialize(q2, buf, len, &err);
		double t1 = now_s();
		uint32_t dropped = 0;

		q2->anchor_table = ti;
		hw_task_resolve_rows(q2, snap, &dropped, &err);
		double t2 = now_s();

		hw_task_build_history(q2, &err);
		double t3 = now_s();

		printf("query task of %u seeds (%.1f MiB): deserialize %.3f s, resolve rows by key %.3f s "
			   "(%u dropped), label-history index %.3f s\n", nseed, len / 1048576.0, t1 - t0, t2 - t1,
			   dropped, t3 - t2);
		free(buf);
		hw_task_free(q);
		hw_task_free(q2);
	}
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("peak memory (maxrss): %.1f MiB\n", ru.ru_maxrss / 1024.0);
	hw_task_free(task);
	if (snap_path)
		snapshot_free(snap);
	else
		synth_free(snap);
	return 0;
}
