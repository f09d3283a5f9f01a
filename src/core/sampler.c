/*
 * sampler.c: a sampler's life -- create (the read-only tables, then the
 * threads), clone (a second stream sharing those tables), free.  What it
 * does with them is in the other sampler_*.c files (sampler_internal.h
 * lists them); semantics in sampler.h.
 *
 * Threads: n_threads - 1 workers of a thread pool (thread_pool.h) plus the
 * caller, each with its own scratch; they build the B sequences of a batch
 * (sampler_collate.c).  The workers block between batches instead of
 * spinning, so the sampler coexists with the trainer's OpenMP team.
 */
#include "core/sampler_internal.h"

#include <unistd.h>

static void
scratch_free(Scratch *w)
{
	if (w == NULL)
		return;
	free(w->visit_gen); free(w->local); free(w->heap); free(w->buf);
	free(w->colmark); free(w->colslot); free(w->edges);
	free(w->row_start); free(w->row_len); free(w->row_hops);
	free(w->deg); free(w->nb_off); free(w->nb_cur); free(w->nb); free(w->order); free(w->queue);
	free(w->seen); free(w->distinct); free(w->count); free(w->memo);
	free(w);
}

static Scratch *
scratch_new(const HwSampler *s)
{
	Scratch *w = calloc(1, sizeof(Scratch));
	size_t R = (size_t) s->cfg.max_rows + 1;
	size_t S = (size_t) s->cfg.seq_len + 1;

	if (w == NULL)
		return NULL;
	w->visit_gen = calloc((size_t) s->snap->nrows + 1, sizeof(uint32_t));
	w->local = malloc(((size_t) s->snap->nrows + 1) * sizeof(uint16_t));
	w->colmark = calloc((size_t) s->ncols_total + 1, sizeof(uint32_t));
	w->colslot = malloc(((size_t) s->ncols_total + 1) * sizeof(uint16_t));
	w->row_start = malloc(R * 2);
	w->row_len = malloc(R * 2);
	w->row_hops = malloc(R * 2);
	w->deg = malloc(R * 2);
	w->nb_off = malloc((R + 1) * sizeof(uint32_t));
	w->nb_cur = malloc((R + 1) * sizeof(uint32_t));
	w->order = malloc(R * 2);
	w->queue = malloc(R * 2);
	w->seen = malloc(R);
	w->distinct = malloc(S * sizeof(int32_t));
	w->count = malloc((S + 1) * 2);
	if (!w->visit_gen || !w->local || !w->colmark || !w->colslot || !w->row_start ||
		!w->row_len || !w->row_hops || !w->deg || !w->nb_off || !w->nb_cur || !w->order ||
		!w->queue || !w->seen || !w->distinct || !w->count)
	{
		scratch_free(w);
		return NULL;
	}
	return w;
}

void
hw_sampler_free(HwSampler *s)
{
	if (s == NULL)
		return;
	if (s->is_clone && !s->own_shards)
		goto own;
	for (int sp = 0; sp < HW_N_SPLITS; sp++)
	{
		if (s->shard_idx[sp])
			for (int t = 0; t < s->ntasks; t++)
				free(s->shard_idx[sp][t]);
		free(s->shard_idx[sp]);
		free(s->shard_n[sp]);
		if (!s->is_clone)
			free(s->shard[sp]);
	}
	if (s->train_cdf)
		for (int t = 0; t < s->ntasks; t++)
			free(s->train_cdf[t]);
	free(s->train_cdf);
	if (s->is_clone)
		goto own;
	if (s->tinfo)
		for (int t = 0; t < s->snap->ntables; t++)
		{
			free(s->tinfo[t].col);
			free(s->tinfo[t].gid);
			free(s->tinfo[t].stype);
			free(s->tinfo[t].hidden);
			free(s->tinfo[t].off);
			free(s->tinfo[t].rec);
		}
	free(s->tinfo);
	free(s->row_time_own);
	free(s->table_dated);
	free(s->pf_time);
	free(s->pf_child_own);
	free(s->fk_recent);
	free(s->fk_child_timed);
	free(s->fk_mean_n);
	free(s->fk_mean_col);
	free(s->fk_mean_key);
	free(s->desc_off);
	free(s->desc);
	sampler_free_label_means(s);
	free(s->fk_child_table);
	free(s->fk_parent_table);
	free(s->fk_link);
	free(s->weights);
	free(s->task_key);
	free(s->tasks);
own:
	hw_pool_stop(s->pool);
	if (s->scratch)
		for (int i = 0; i < s->nthreads; i++)
			scratch_free(s->scratch[i]);
	free(s->scratch);
	for (int i = 0; i < s->seq_cap; i++)
	{
		free(s->seq[i].rows);
		free(s->seq[i].edges);
	}
	free(s->seq);
	free(s->tmap_key);
	free(s->tmap_val);
	free(s->tmap_gen);
	free(s->uniq);
	free(s);
}

int
sampler_ensure_slots(HwSampler *s, int n, HwError *err)
{
	if (n <= s->seq_cap)
		return HW_OK;
	SeqOut *q = realloc(s->seq, sizeof(SeqOut) * (size_t) n);

	if (q == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %d sequences", n);
	s->seq = q;
	for (int i = s->seq_cap; i < n; i++)
	{
		memset(&s->seq[i], 0, sizeof(SeqOut));
		s->seq[i].rows = malloc(sizeof(HwCellSource) * ((size_t) s->cfg.max_rows + 1));
		if (s->seq[i].rows == NULL)
		{
			s->seq_cap = i;
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %d sequences", n);
		}
	}
	s->seq_cap = n;
	return HW_OK;
}

/* Copies the tasks and their weights and checks each against the
 * snapshot.  HW_OK, SAMPLER_OOM, or HW_ERR_INVALID with err set. */
static int
take_tasks(HwSampler *s, HwTask *const *tasks, int ntasks, const double *task_weights, HwError *err)
{
	const HwSnapshot *snap = s->snap;

	s->ntasks = ntasks;
	s->tasks = malloc(sizeof(HwTask *) * (size_t) ntasks);
	s->weights = malloc(sizeof(double) * (size_t) ntasks);
	s->task_key = malloc(sizeof(uint64_t) * (size_t) ntasks);
	if (!s->tasks || !s->weights || !s->task_key)
		return SAMPLER_OOM;
	for (int i = 0; i < ntasks; i++)
	{
		const HwTask *t = tasks[i];

		s->tasks[i] = tasks[i];
		s->task_key[i] = hw_hash_key_text(t->name, strlen(t->name));
		s->weights[i] = task_weights ? task_weights[i] : 1.0;
		if (!(s->weights[i] >= 0))
			return hw_error_set(err, HW_ERR_INVALID, "task weight %g of task %s is negative", s->weights[i], t->name);
		if (t->anchor_table < 0 || t->anchor_table >= snap->ntables)
			return hw_error_set(err, HW_ERR_INVALID, "task %s: anchor table not in the snapshot", t->name);
		const HwTable *at = &snap->tables[t->anchor_table];

		for (uint32_t k = 0; k < t->nseeds; k++)
			if (t->anchor_row[k] < at->row_offset || t->anchor_row[k] >= at->row_offset + at->nrows)
				return hw_error_set(err, HW_ERR_INVALID, "task %s: seed %u has anchor row %u outside table %s",
									t->name, k, t->anchor_row[k], at->name);
		if (t->kind == HW_TASK_CELL &&
			(t->target_col < 0 || t->target_col >= at->ncols ||
			 at->cols[t->target_col].stype == HW_ST_IGNORED || at->cols[t->target_col].global_id < 0))
			return hw_error_set(err, HW_ERR_INVALID, "task %s: target column is not a column of %s the model sees",
								t->name, at->name);
	}
	return HW_OK;
}

/* Column ids of the tasks (hw_task_layout: a query task adds two virtual
 * columns) and the label-history indexes the tasks lack. */
static int
lay_out_tasks(HwSampler *s, HwError *err)
{
	if (hw_task_layout(s->snap, s->tasks, s->ntasks, err) != HW_OK)
		return err ? err->code : HW_ERR_INVALID;
	s->ncols_total = s->snap->ncolumns;
	for (int i = 0; i < s->ntasks; i++)
	{
		HwTask *t = s->tasks[i];

		if (t->kind == HW_TASK_QUERY)
			s->ncols_total += 2;
		if (t->kind == HW_TASK_QUERY && t->label_history && t->hist_order == NULL &&
			hw_task_build_history(t, err) != HW_OK)
			return err ? err->code : HW_ERR_INVALID;
	}
	return HW_OK;
}

/* This rank's seed indices of every (split, task). */
static int
make_shards(HwSampler *s, int rank, int world_size, HwError *err)
{
	for (int sp = 0; sp < HW_N_SPLITS; sp++)
	{
		s->shard_idx[sp] = calloc((size_t) s->ntasks, sizeof(uint32_t *));
		s->shard_n[sp] = calloc((size_t) s->ntasks, sizeof(uint32_t));
		if (!s->shard_idx[sp] || !s->shard_n[sp])
			return SAMPLER_OOM;
		for (int t = 0; t < s->ntasks; t++)
			if (hw_task_shard(s->tasks[t], sp, rank, world_size, &s->shard_idx[sp][t], &s->shard_n[sp][t],
							  err) != HW_OK)
				return err ? err->code : HW_ERR_INVALID;
	}
	return sampler_build_recency(s);
}

/* Scratch per thread, output slots for a batch, and the workers besides
 * the caller (none with one thread).  HW_OK, SAMPLER_OOM, or an error code
 * with err set. */
static int
start_threads(HwSampler *s, HwError *err)
{
	int rc;

	s->scratch = calloc((size_t) s->nthreads, sizeof(Scratch *));
	if (s->scratch == NULL)
		return SAMPLER_OOM;
	for (int i = 0; i < s->nthreads; i++)
		if ((s->scratch[i] = scratch_new(s)) == NULL)
			return SAMPLER_OOM;
	if ((rc = sampler_ensure_slots(s, s->cfg.batch_size, err)) != HW_OK)
		return rc;
	if (s->nthreads > 1 && (s->pool = hw_pool_start(s->nthreads - 1, "sampler", err)) == NULL)
		return err ? err->code : HW_ERR_INTERNAL;
	return HW_OK;
}

/* n_threads resolved: 0 = online CPUs, at most 256 */
static int
thread_count(int n_threads)
{
	int nt = n_threads;

	if (nt <= 0)
		nt = (int) sysconf(_SC_NPROCESSORS_ONLN);
	if (nt <= 0)
		nt = 1;
	return nt > 256 ? 256 : nt;
}

/* The read-only tables of a new sampler, in order (each step may read
 * what the ones before built). */
static int
build_tables(HwSampler *s, HwTask *const *tasks, int ntasks, const HwSamplerConfig *cfg, HwError *err)
{
	int rc;

	if ((rc = take_tasks(s, tasks, ntasks, cfg->task_weights, err)) != HW_OK ||
		(rc = lay_out_tasks(s, err)) != HW_OK ||
		(rc = make_shards(s, cfg->rank, cfg->world_size, err)) != HW_OK ||
		(rc = sampler_build_row_cache(s, err)) != HW_OK ||
		(rc = sampler_build_row_times(s)) != HW_OK ||
		(rc = sampler_build_edge_tables(s)) != HW_OK)
		return rc;
	if (sampler_init_descendant_paths(s) != 0 || sampler_init_label_means(s) != HW_OK)
		return SAMPLER_OOM;
	sampler_init_time_tables(s);
	return HW_OK;
}

HwSampler *
hw_sampler_create(const HwSnapshot *snap, HwTask *const *tasks, int ntasks,
				  const HwSamplerConfig *cfg, HwError *err)
{
	if (snap == NULL || tasks == NULL || ntasks < 1)
	{
		hw_error_set(err, HW_ERR_INVALID, "a sampler needs a snapshot and at least one task");
		return NULL;
	}
	if (!sampler_config_check(cfg, err))
		return NULL;
	HwSampler *s = calloc(1, sizeof(HwSampler));
	int rc = SAMPLER_OOM;

	if (s != NULL)
	{
		s->snap = snap;
		s->cfg = *cfg;
		s->cfg.task_weights = NULL;
		s->recent = cfg->child_sampling == HW_CHILD_RECENT;
		s->recent_k = (uint32_t) (cfg->recent_children < 0 ? (cfg->bfs_child_width + 1) / 2 : cfg->recent_children);
		s->nthreads = thread_count(cfg->n_threads);
		rc = build_tables(s, tasks, ntasks, cfg, err);
		s->cfg.hidden_names = NULL;     /* the caller's, read by build_tables only */
		if (rc == HW_OK)
			rc = start_threads(s, err);
	}
	if (rc == HW_OK)
		return s;
	hw_sampler_free(s);
	if (rc == SAMPLER_OOM)
		hw_error_set(err, HW_ERR_NOMEM, "out of memory creating the sampler (%u snapshot rows)", snap->nrows);
	return NULL;
}


HwSampler *
hw_sampler_clone(const HwSampler *base, HwError *err)
{
	return hw_sampler_clone_threads(base, base->nthreads, err);
}

HwSampler *
hw_sampler_clone_threads(const HwSampler *base, int n_threads, HwError *err)
{
	HwSampler *s = malloc(sizeof(HwSampler));

	if (s == NULL)
		goto oom;
	*s = *base;
	s->nthreads = thread_count(n_threads);
	s->is_clone = true;
	s->scratch = NULL;
	s->pool = NULL;
	s->seq = NULL;
	s->seq_cap = 0;
	s->last_B = 0;
	s->tmap_key = s->tmap_val = s->tmap_gen = s->uniq = NULL;
	s->tmap_cap = s->tmap_genc = 0;
	int rc = start_threads(s, err);

	if (rc == SAMPLER_OOM)
		goto oom;
	if (rc != HW_OK)
	{
		hw_sampler_free(s);
		return NULL;
	}
	return s;
oom:
	hw_sampler_free(s);
	hw_error_set(err, HW_ERR_NOMEM, "out of memory cloning the sampler");
	return NULL;
}

HwSampler *
hw_sampler_clone_rank(const HwSampler *base, int rank, int world_size, HwError *err)
{
	if (world_size < 1 || rank < 0 || rank >= world_size)
	{
		hw_error_set(err, HW_ERR_INVALID, "sampler for rank %d of world_size %d", rank, world_size);
		return NULL;
	}
	HwSampler *s = hw_sampler_clone(base, err);

	if (s == NULL)
		return NULL;
	/* until the own arrays exist, free() must not touch the base's */
	for (int sp = 0; sp < HW_N_SPLITS; sp++)
	{
		s->shard_idx[sp] = NULL;
		s->shard_n[sp] = NULL;
	}
	s->train_cdf = NULL;
	s->own_shards = true;
	s->cfg.rank = rank;
	s->cfg.world_size = world_size;
	int rc = make_shards(s, rank, world_size, err);

	if (rc != HW_OK)
	{
		hw_sampler_free(s);
		if (rc == SAMPLER_OOM)
			hw_error_set(err, HW_ERR_NOMEM, "out of memory sharding the seeds for rank %d", rank);
		return NULL;
	}
	return s;
}
