/*
 * sampler_collate.c: a batch from its sequence specs -- phase 1 builds the
 * B sequences on the sampler's threads (each depends only on its spec,
 * never on the thread that built it), phase 2 collates what needs the
 * whole batch (fk_adj of R = the most rows of any sequence; text
 * embeddings deduplicated batch-wide) -- and cell dropout (sampler.h).
 */
#include "core/sampler_internal.h"

#include <stdatomic.h>

/* phase 2: fk_adj and text dedup; the batch was allocated with R = U = 0 */
static int
collate(HwSampler *s, HwBatch *bt, int B, HwError *err)
{
	int S = s->cfg.seq_len;
	int R = 1;

	for (int b = 0; b < B; b++)
		if (s->seq[b].nrows > R)
			R = s->seq[b].nrows;
	uint8_t *adj = calloc((size_t) B * R * R + 1, 1);

	if (adj == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for fk_adj [%d,%d,%d]", B, R, R);
	for (int b = 0; b < B; b++)
	{
		const SeqOut *so = &s->seq[b];
		uint8_t *a = adj + (size_t) b * R * R;

		for (size_t e = 0; e < so->nedges; e++)
			a[(size_t) (so->edges[e] >> 16) * R + (so->edges[e] & 0xffff)] = 1;
	}
	free(bt->fk_adj);
	bt->fk_adj = adj;
	bt->R = R;

	/* text: global -> batch-local in first-occurrence order */
	uint32_t need = 1;

	while (need < (uint32_t) (2 * (size_t) B * S) && need < (1u << 31))
		need <<= 1;
	if (need > s->tmap_cap)
	{
		free(s->tmap_key);
		free(s->tmap_val);
		free(s->tmap_gen);
		free(s->uniq);
		s->tmap_key = malloc(sizeof(uint32_t) * need);
		s->tmap_val = malloc(sizeof(uint32_t) * need);
		s->tmap_gen = calloc(need, sizeof(uint32_t));
		s->uniq = malloc(sizeof(uint32_t) * need);
		s->tmap_cap = need;
		s->tmap_genc = 0;
		if (!s->tmap_key || !s->tmap_val || !s->tmap_gen || !s->uniq)
		{
			s->tmap_cap = 0;
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory for text dedup");
		}
	}
	if (++s->tmap_genc == 0)
	{
		memset(s->tmap_gen, 0, sizeof(uint32_t) * s->tmap_cap);
		s->tmap_genc = 1;
	}
	uint32_t U = 0, mask = s->tmap_cap - 1;
	size_t BS = (size_t) B * S;

	for (size_t p = 0; p < BS; p++)
	{
		if (bt->semantic_types[p] != HW_ST_TEXT || bt->is_null[p] || bt->is_padding[p] || bt->is_target[p])
			continue;
		uint32_t g = bt->text_embed_ids[p];
		uint32_t h = (uint32_t) (mix64(g) & mask);

		while (s->tmap_gen[h] == s->tmap_genc && s->tmap_key[h] != g)
			h = (h + 1) & mask;
		if (s->tmap_gen[h] != s->tmap_genc)
		{
			s->tmap_gen[h] = s->tmap_genc;
			s->tmap_key[h] = g;
			s->tmap_val[h] = U;
			s->uniq[U++] = g;
		}
		bt->text_embed_ids[p] = s->tmap_val[h];
	}
	int d = s->snap->d_text > 0 ? s->snap->d_text : 1;
	uint16_t *te = calloc((size_t) U * d + 1, sizeof(uint16_t));

	if (te == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %u text embeddings", U);
	if (s->snap->text_emb)
		for (uint32_t u = 0; u < U; u++)
			if (s->uniq[u] < s->snap->ntext)
				memcpy(te + (size_t) u * d, s->snap->text_emb + (size_t) s->uniq[u] * d, (size_t) d * 2);
	free(bt->text_batch_embeddings);
	bt->text_batch_embeddings = te;
	bt->U = (int32_t) U;
	bt->d_text = d;
	return HW_OK;
}

/* Phase 1 as a thread-pool job: item b = sequence b. */
typedef struct SequenceJob
{
	HwSampler     *s;
	HwBatch       *bt;
	const SeqSpec *specs;
	atomic_int     failed;      /* a sequence ran out of memory */
} SequenceJob;

static void
build_one_sequence(void *arg, int b, int worker)
{
	SequenceJob *j = arg;

	if (!sampler_build_sequence(j->s, j->s->scratch[worker], j->bt, b, &j->specs[b], &j->s->seq[b]))
		atomic_store(&j->failed, 1);
}

int
sampler_build_batch(HwSampler *s, const SeqSpec *specs, int B, HwBatch **out, HwError *err)
{
	*out = NULL;
	int rc = sampler_ensure_slots(s, B, err);

	if (rc != HW_OK)
		return rc;
	HwBatch *bt = hw_batch_alloc(B, s->cfg.seq_len, 0, 0, s->snap->d_text > 0 ? s->snap->d_text : 1);

	if (bt == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for a batch of %d x %d", B, s->cfg.seq_len);
	const HwTask *t = s->tasks[specs[0].task];

	bt->target_stype = (uint8_t) t->target_stype;
	bt->num_loss = (uint8_t) t->num_loss;
	bt->ord_levels = (uint8_t) hw_task_ordinal_levels(t);
	hw_task_ordinal_map(t, &bt->ord_scale, &bt->ord_shift);
	bt->task_idx = (uint32_t) specs[0].task;
	bt->cat_emb_start = t->target_stype == HW_ST_CATEGORICAL ? (uint32_t) t->cat_base : 0;
	bt->cat_emb_count = t->target_stype == HW_ST_CATEGORICAL ? t->cat_count : 0;

	SequenceJob job = {.s = s, .bt = bt, .specs = specs};

	/* one sequence needs no workers (the caller's scratch is the last) */
	if (B > 1)
		hw_pool_run(s->pool, build_one_sequence, &job, B);
	else
		build_one_sequence(&job, 0, s->nthreads - 1);
	s->last_B = B;
	if (atomic_load(&job.failed))
	{
		hw_batch_free(bt);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory while sampling a batch");
	}
	rc = collate(s, bt, B, err);
	if (rc != HW_OK)
	{
		hw_batch_free(bt);
		return rc;
	}
	*out = bt;
	return HW_OK;
}

/*
 * Cell dropout (sampler.h): each cell of bt that is not padding, not the
 * target and not in the seed row becomes NULL with probability p, drawn
 * from mix64(key + i * golden ratio), i = b * S + s, key = hash of (seed,
 * rank, split, k): the batch stays a pure function of its number.
 * Only values change; the NULL contract (value slots 0) holds.
 */
void
sampler_drop_cells(HwBatch *bt, float p, uint64_t key)
{
	const uint64_t threshold = (uint64_t) ((double) p * 0x1.0p64);     /* p <= 0.9: fits */

	for (int b = 0; b < bt->B; b++)
		for (int s = 0; s < bt->S; s++)
		{
			size_t i = (size_t) b * (size_t) bt->S + (size_t) s;

			if (bt->is_padding[i] || bt->is_target[i] || bt->is_null[i] || bt->seq_row_ids[i] == 0)
				continue;
			if (mix64(key + (uint64_t) i * 0x9e3779b97f4a7c15ULL) >= threshold)   /* one mix per cell */
				continue;
			bt->is_null[i] = 1;
			bt->numeric_values[i] = 0.0f;
			bt->bool_values[i] = 0;
			bt->categorical_embed_ids[i] = 0;
			bt->text_embed_ids[i] = 0;
			memset(bt->timestamp_values + i * HW_TS_DIM, 0, sizeof(float) * HW_TS_DIM);
		}
}
