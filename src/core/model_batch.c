/*
 * model_batch.c: a batch on the model: checks it against the model, maps its
 * categories and texts to the batch-local rows, uploads cells, targets and
 * side features, and builds the attention plans of its sublayers.
 */

#include "core/model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The batch's shape and target type against the model; sets m->K (the
 * categorical target's block size, 0 otherwise). */
static int
check_batch(HwModel *m, const HwBatch *bt, HwError *err)
{
	int B = bt->B, S = bt->S, N = B * S;

	if (B <= 0 || S <= 0 || B > m->Bmax || S > m->Smax)
		return hw_error_set(err, HW_ERR_INVALID, "batch of %d x %d does not fit the model's batch_size %d x seq_len %d",
							B, S, m->Bmax, m->Smax);
	if (bt->U > 0 && bt->d_text != m->Dt)
		return hw_error_set(err, HW_ERR_INVALID, "batch text embeddings have d_text %d, the model %d", bt->d_text, m->Dt);
	if (bt->U > N)
		return hw_error_set(err, HW_ERR_INVALID, "batch has %d text embeddings for %d cells", bt->U, N);
	if (bt->target_stype < HW_ST_NUMERICAL || bt->target_stype > HW_ST_CATEGORICAL)
		return hw_error_set(err, HW_ERR_INVALID, "target type %s has no prediction head (numerical, timestamp, boolean or categorical)",
							hw_stype_name(bt->target_stype) ? hw_stype_name(bt->target_stype) : "?");
	m->K = 0;
	if (bt->target_stype == HW_ST_CATEGORICAL)
	{
		if (bt->cat_emb_count == 0 || (int64_t) bt->cat_emb_start + bt->cat_emb_count > m->ncat)
			return hw_error_set(err, HW_ERR_INVALID, "categorical target block [%u, %u+%u) outside the category table of %d",
								bt->cat_emb_start, bt->cat_emb_start, bt->cat_emb_count, m->ncat);
		m->K = (int) bt->cat_emb_count;
	}
	return HW_OK;
}

/* Checks every cell and maps it to batch-local rows: catl [N] the row of its
 * category among the Uc distinct ones (their ids in h_f32 as int32), textl
 * [N] its text embedding, h_tidx [B] the target cell of each sequence. */
static int
map_cells(HwModel *m, const HwBatch *bt, int32_t *catl, int32_t *textl, int *Uc_out, HwError *err)
{
	int B = bt->B, S = bt->S, Uc = 0;

	for (int c = 0; c < m->ncat; c++)
		m->h_catmap[c] = -1;
	for (int b = 0; b < B; b++)
	{
		int nt = 0;

		for (int s = 0; s < S; s++)
		{
			int64_t i = (int64_t) b * S + s;

			if (bt->column_ids[i] < 0 || bt->column_ids[i] >= m->ncols)
				return hw_error_set(err, HW_ERR_INVALID, "column id %d at (%d,%d) outside the column table of %d",
									bt->column_ids[i], b, s, m->ncols);
			catl[i] = 0;
			textl[i] = 0;
			if (bt->is_target[i])
			{
				if (bt->is_padding[i])
					return hw_error_set(err, HW_ERR_INVALID, "sequence %d has its target on a padding position", b);
				nt++;
				m->h_tidx[b] = (int32_t) i;
				continue;
			}
			if (bt->is_null[i])
				continue;
			if (bt->semantic_types[i] == HW_ST_CATEGORICAL)
			{
				uint32_t id = bt->categorical_embed_ids[i];

				if (id >= (uint32_t) m->ncat)
					return hw_error_set(err, HW_ERR_INVALID, "category id %u at (%d,%d) outside the category table of %d",
										id, b, s, m->ncat);
				if (m->h_catmap[id] < 0)
				{
					m->h_catmap[id] = Uc;
					((int32_t *) m->h_f32)[Uc] = (int32_t) id;
					Uc++;
				}
				catl[i] = m->h_catmap[id];
			}
			else if (bt->semantic_types[i] == HW_ST_TEXT)
			{
				if (bt->text_embed_ids[i] >= (uint32_t) bt->U)
					return hw_error_set(err, HW_ERR_INVALID, "text id %u at (%d,%d) outside the batch's %d text embeddings",
										bt->text_embed_ids[i], b, s, bt->U);
				textl[i] = (int32_t) bt->text_embed_ids[i];
			}
		}
		if (nt != 1)
			return hw_error_set(err, HW_ERR_INVALID, "sequence %d has %d target cells (exactly one expected)", b, nt);
	}
	*Uc_out = Uc;
	return HW_OK;
}

/* per-sequence targets [B] (null, bool, number, timestamp [B,15], category
 * within its block) to the device */
static int
upload_targets(HwModel *m, const HwBatch *bt, HwError *err)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	int                 B = bt->B;
	int64_t             ti;
	float              *tnum = malloc(sizeof(float) * B * 16);

	if (!tnum)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	for (int b = 0; b < B; b++)
	{
		ti = m->h_tidx[b];
		m->h_u8a[b] = bt->is_null[ti] ? 1 : 0;
		m->h_u8b[b] = bt->bool_values[ti] ? 1 : 0;
		tnum[b] = bt->numeric_values[ti];
		memcpy(tnum + B + b * 15, bt->timestamp_values + ti * 15, 15 * sizeof(float));
		m->h_tcat[b] = 0;
		if (bt->target_stype == HW_ST_CATEGORICAL && !bt->is_null[ti])
		{
			int64_t y = (int64_t) bt->categorical_embed_ids[ti] - bt->cat_emb_start;

			if (y < 0 || y >= m->K)
			{
				free(tnum);
				return hw_error_set(err, HW_ERR_INVALID, "target category %u of sequence %d outside its block [%u, %u)",
									bt->categorical_embed_ids[ti], b, bt->cat_emb_start,
									bt->cat_emb_start + bt->cat_emb_count);
			}
			m->h_tcat[b] = (int32_t) y;
		}
	}
	o->memcpy_h2d(be, m->d_tidx, m->h_tidx, sizeof(int32_t) * B);
	o->memcpy_h2d(be, m->d_tcat, m->h_tcat, sizeof(int32_t) * B);
	o->memcpy_h2d(be, m->d_tnull, m->h_u8a, B);
	o->memcpy_h2d(be, m->d_tbool, m->h_u8b, B);
	o->memcpy_h2d(be, m->d_tnum, tnum, sizeof(float) * B);
	o->memcpy_h2d(be, m->d_tts, tnum + B, sizeof(float) * B * 15);
	free(tnum);
	return HW_OK;
}

/* sequence b's rows of [N, HW_REL_TIME_DIM]: non-zero only on visible
 * timestamp cells of a sequence with an observation time (timeenc.h) */
static void
rel_time_rows(HwModel *m, const HwBatch *bt, int b)
{
	int     S = bt->S;
	float   ref = bt->seed_time[b];
	int64_t i0 = (int64_t) b * S;

	memset(m->h_trel + i0 * HW_REL_TIME_DIM, 0, sizeof(float) * (size_t) S * HW_REL_TIME_DIM);
	if (isnan(ref))
		return;
	for (int64_t i = i0; i < i0 + S; i++)
		if (bt->semantic_types[i] == HW_ST_TIMESTAMP && !bt->is_null[i] && !bt->is_target[i] && !bt->is_padding[i])
			hw_rel_time_features(ref, bt->timestamp_values[i * 15 + 14], bt->rel_time_scale,
								 m->h_trel + i * HW_REL_TIME_DIM);
}

/* the timestamp values [N, HW_TS_DIM] the model reads: the batch's, or
 * (!absolute_time) those with the epoch slot 0 in every sequence with an
 * observation time, where trel says when a cell was */
static const float *
timestamp_values(HwModel *m, const HwBatch *bt)
{
	int B = bt->B, S = bt->S;

	if (m->cfg.absolute_time)
		return bt->timestamp_values;
	memcpy(m->h_ts, bt->timestamp_values, sizeof(float) * (size_t) B * S * HW_TS_DIM);
	for (int b = 0; b < B; b++)
		if (!isnan(bt->seed_time[b]))
			for (int s = 0; s < S; s++)
				m->h_ts[((int64_t) b * S + s) * HW_TS_DIM + HW_TS_DIM - 1] = 0.0f;
	return m->h_ts;
}

/* sequence b's rows of [N, HW_LINK_DIM]: every cell of a row reached
 * through an FK gets its link's code */
static void
link_code_rows(HwModel *m, const HwBatch *bt, int b)
{
	for (int64_t i = (int64_t) b * bt->S; i < (int64_t) (b + 1) * bt->S; i++)
	{
		float *f = m->h_link + i * HW_LINK_DIM;

		if (bt->link_key[i] != 0 && !bt->is_padding[i])
			hw_link_code(bt->link_key[i], f);
		else
			memset(f, 0, sizeof(float) * HW_LINK_DIM);
	}
}

/* sequence b's rows of [N, HW_CNT_DIM], the child-count features: the
 * cells of a row share its features, and a row's cells are consecutive:
 * computed once per run of equal counts inside the sequence (whose rows
 * alone a call writes and reads) */
static void
child_count_rows(HwModel *m, const HwBatch *bt, int b)
{
	const size_t nk = HW_CHILD_LINKS, nc = HW_CHILD_LINKS * HW_CHILD_WINDOWS;
	const size_t mk = HW_MEAN_SLOTS, mc = HW_MEAN_SLOTS * HW_CHILD_WINDOWS;
	const bool   means = m->cfg.child_means && bt->mean_key && bt->child_mean;
	int64_t      i0 = (int64_t) b * bt->S;

	for (int64_t i = i0; i < i0 + bt->S; i++)
	{
		float          *f = m->h_cnt + i * HW_CNT_DIM;
		const uint32_t *key = bt->child_key + i * nk;
		const uint16_t *cnt = bt->child_count + i * nc;
		const uint32_t *mkey = means ? bt->mean_key + i * mk : NULL;
		const float    *mean = means ? bt->child_mean + i * mc : NULL;
		bool            same = i > i0 && !bt->is_padding[i - 1] &&
							   memcmp(key, key - nk, sizeof(uint32_t) * nk) == 0 &&
							   memcmp(cnt, cnt - nc, sizeof(uint16_t) * nc) == 0;

		if (bt->is_padding[i])
			memset(f, 0, sizeof(float) * HW_CNT_DIM);
		else if (same && (!means || (memcmp(mkey, mkey - mk, sizeof(uint32_t) * mk) == 0 &&
									 memcmp(mean, mean - mc, sizeof(float) * mc) == 0)))
			memcpy(f, f - HW_CNT_DIM, sizeof(float) * HW_CNT_DIM);
		else
			hw_child_count_features(key, cnt, mkey, mean, f);
	}
}

/* The per-cell side features the model's config asks for (relative times,
 * link codes, child counts), computed on the host a sequence at a time */
typedef struct SideFeatures
{
	HwModel       *m;
	const HwBatch *bt;
	bool           copy;    /* each sequence copies its rows to the device (on a thread's own backend) */
} SideFeatures;

/* the side features of one [rows, dim] buffer: sequence b's rows from host
 * h to device d */
static void
copy_rows(HwBackend *be, float *d, const float *h, int b, int S, int dim)
{
	size_t off = (size_t) b * S * dim;

	be->ops->memcpy_h2d(be, d + off, h + off, sizeof(float) * (size_t) S * dim);
}

static void
side_features_of_sequence(HwBackend *be, int b, void *arg)
{
	const SideFeatures *f = arg;
	HwModel            *m = f->m;
	int                 S = f->bt->S;

	if (m->cfg.rel_time)
		rel_time_rows(m, f->bt, b);
	if (m->cfg.link_types)
		link_code_rows(m, f->bt, b);
	if (m->cfg.child_counts)
		child_count_rows(m, f->bt, b);
	if (!f->copy)
		return;
	if (m->cfg.rel_time)
		copy_rows(be, m->d_trel, m->h_trel, b, S, HW_REL_TIME_DIM);
	if (m->cfg.link_types)
		copy_rows(be, m->d_link, m->h_link, b, S, HW_LINK_DIM);
	if (m->cfg.child_counts)
		copy_rows(be, m->d_cnt, m->h_cnt, b, S, HW_CNT_DIM);
}

/* The side features of every sequence: a sequence per thread where the
 * backend runs items in parallel (each copying its own rows), else one
 * after the other and each buffer copied whole */
static void
upload_side_features(HwModel *m, const HwBatch *bt)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	SideFeatures        f = {.m = m, .bt = bt, .copy = true};
	size_t              N = (size_t) bt->B * bt->S;

	if (!m->cfg.rel_time && !m->cfg.link_types && !m->cfg.child_counts)
		return;
	if (o->parallel_items && o->parallel_items(be, bt->B, side_features_of_sequence, &f))
		return;
	f.copy = false;
	for (int b = 0; b < bt->B; b++)
		side_features_of_sequence(be, b, &f);
	if (m->cfg.rel_time)
		o->memcpy_h2d(be, m->d_trel, m->h_trel, sizeof(float) * N * HW_REL_TIME_DIM);
	if (m->cfg.link_types)
		o->memcpy_h2d(be, m->d_link, m->h_link, sizeof(float) * N * HW_LINK_DIM);
	if (m->cfg.child_counts)
		o->memcpy_h2d(be, m->d_cnt, m->h_cnt, sizeof(float) * N * HW_CNT_DIM);
}

/* Does cell i carry count ramps?  A cell of the anchor row (link_key 0), or
 * of any row under HW_COUNT_RAMPS_EVERY_ROW, whose row has a child key. */
static bool
cell_has_ramps(const HwBatch *bt, int32_t i, bool every_row)
{
	const uint32_t *key = bt->child_key + (size_t) i * HW_CHILD_LINKS;
	bool            any = false;

	for (size_t l = 0; l < HW_CHILD_LINKS; l++)
		any |= key[l] != 0;
	return any && !bt->is_padding[i] && (every_row || bt->link_key[i] == 0);
}

/* The ramp buffers (host and device) hold at least n cells: grown by half
 * again over n, at most to Nmax, when a batch has more than ever before.
 * The old device blocks go back to the backend (the CUDA backend reuses
 * them in stream order). */
static int
ensure_ramp_capacity(HwModel *m, int n, HwError *err)
{
	HwBackend *be = m->be;
	int        cap;

	if (n <= m->cramp_cap)
		return HW_OK;
	cap = n + n / 2 > m->Nmax ? m->Nmax : n + n / 2;
	float   *h = realloc(m->h_cramp, sizeof(float) * (size_t) cap * HW_CRAMP_DIM);
	if (h != NULL)
		m->h_cramp = h;
	int32_t *hi = realloc(m->h_cramp_idx, sizeof(int32_t) * (size_t) cap);
	if (hi != NULL)
		m->h_cramp_idx = hi;
	be->ops->free(be, m->d_cramp);
	be->ops->free(be, m->d_cramp_y);
	be->ops->free(be, m->d_cramp_idx);
	m->d_cramp = be->ops->alloc(be, sizeof(float) * (size_t) cap * HW_CRAMP_DIM);
	m->d_cramp_y = be->ops->alloc(be, sizeof(float) * (size_t) cap * m->D);
	m->d_cramp_idx = be->ops->alloc(be, sizeof(int32_t) * (size_t) cap);
	if (h == NULL || hi == NULL || !m->d_cramp || !m->d_cramp_y || !m->d_cramp_idx)
	{
		m->cramp_cap = 0;   /* the next batch tries again from nothing */
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for the count ramps of %d cells", n);
	}
	m->cramp_cap = cap;
	return HW_OK;
}

/* The count ramps (cfg.count_ramps, which needs child_counts), compacted:
 * only the cells that have them (cell_has_ramps), in cell order, d_cramp
 * [n_cramp, HW_CRAMP_DIM] and d_cramp_idx [n_cramp]; the others' ramps are
 * zero.  Consecutive cells of one row share theirs. */
static int
upload_count_ramps(HwModel *m, const HwBatch *bt, HwError *err)
{
	const HwBackendOps *o = m->be->ops;
	int                 N = bt->B * bt->S, n = 0, rc;
	const size_t        nk = HW_CHILD_LINKS, nc = HW_CHILD_LINKS * HW_CHILD_WINDOWS;
	const bool          every_row = m->cfg.count_ramps == HW_COUNT_RAMPS_EVERY_ROW;

	for (int32_t i = 0; i < N; i++)
		n += cell_has_ramps(bt, i, every_row);
	m->n_cramp = 0;
	if (n == 0)
		return HW_OK;
	if ((rc = ensure_ramp_capacity(m, n, err)) != HW_OK)
		return rc;
	n = 0;
	for (int32_t i = 0; i < N; i++)
	{
		const uint32_t *key = bt->child_key + (size_t) i * nk;
		const uint16_t *cnt = bt->child_count + (size_t) i * nc;
		float          *r = m->h_cramp + (size_t) n * HW_CRAMP_DIM;

		if (!cell_has_ramps(bt, i, every_row))
			continue;
		if (n > 0 && m->h_cramp_idx[n - 1] == i - 1 && bt->link_key[i] == bt->link_key[i - 1] &&
			memcmp(key, key - nk, sizeof(uint32_t) * nk) == 0 && memcmp(cnt, cnt - nc, sizeof(uint16_t) * nc) == 0)
			memcpy(r, r - HW_CRAMP_DIM, sizeof(float) * HW_CRAMP_DIM);
		else
			hw_count_ramp_features(key, cnt, r);
		m->h_cramp_idx[n++] = i;
	}
	m->n_cramp = n;
	o->memcpy_h2d(m->be, m->d_cramp, m->h_cramp, sizeof(float) * (size_t) n * HW_CRAMP_DIM);
	o->memcpy_h2d(m->be, m->d_cramp_idx, m->h_cramp_idx, sizeof(int32_t) * (size_t) n);
	return HW_OK;
}

/* the cells [N] and their batch-local rows to the device; the category rows
 * used by the batch, then the target block (f16 -> f32 on the device); the
 * text embeddings [U, Dt] */
static void
upload_cells(HwModel *m, const HwBatch *bt, const int32_t *catl, const int32_t *textl, int Uc)
{
	HwBackend          *be = m->be;
	const HwBackendOps *o = be->ops;
	int                 N = bt->B * bt->S, Dt = m->Dt;

	o->memcpy_h2d(be, m->d_stype, bt->semantic_types, N);
	o->memcpy_h2d(be, m->d_col, bt->column_ids, sizeof(int32_t) * N);
	o->memcpy_h2d(be, m->d_is_null, bt->is_null, N);
	o->memcpy_h2d(be, m->d_is_target, bt->is_target, N);
	o->memcpy_h2d(be, m->d_bool, bt->bool_values, N);
	o->memcpy_h2d(be, m->d_num, bt->numeric_values, sizeof(float) * N);
	o->memcpy_h2d(be, m->d_ts, timestamp_values(m, bt), sizeof(float) * N * HW_TS_DIM);
	o->memcpy_h2d(be, m->d_cat_local, catl, sizeof(int32_t) * N);
	o->memcpy_h2d(be, m->d_text_local, textl, sizeof(int32_t) * N);
	if (Uc > 0)
		o->gather_f16_rows(be, m->cat_rows, m->cat_table, (const int32_t *) m->h_f32, Uc, Dt);
	if (m->K > 0)
	{
		for (int k = 0; k < m->K; k++)
			m->h_i32a[k] = (int32_t) bt->cat_emb_start + k;   /* catl already uploaded */
		o->gather_f16_rows(be, m->catblock, m->cat_table, m->h_i32a, m->K, Dt);
	}
	if (bt->U > 0)
	{
		for (int64_t i = 0; i < (int64_t) bt->U * Dt; i++)
			m->h_f32[i] = hw_f16_to_f32(bt->text_batch_embeddings[i]);
		o->memcpy_h2d(be, m->text_f32, m->h_f32, sizeof(float) * (size_t) bt->U * Dt);
	}
}

/* one attention plan per sublayer, each over its mask's permutation */
static int
build_plans(HwModel *m, const HwBatch *bt, HwError *err)
{
	model_free_plans(m);
	for (int s = 0; s < m->A; s++)
	{
		HwAttnMaskInfo info = {
			.B = bt->B, .S = bt->S, .R = bt->R, .column_ids = bt->column_ids, .seq_row_ids = bt->seq_row_ids,
			.is_padding = bt->is_padding, .fk_adj = bt->fk_adj,
			.perm = sub_masks[s] == HW_MASK_COLUMN ? bt->col_perm : sub_masks[s] == HW_MASK_OUTBOUND ? bt->out_perm :
				sub_masks[s] == HW_MASK_INBOUND ? bt->in_perm : NULL,
		};

		m->plans[s] = m->be->ops->attn_plan_create(m->be, &info, sub_masks[s], err);
		if (!m->plans[s])
		{
			model_free_plans(m);
			if (!err || !err->code)
				return hw_error_set(err, HW_ERR_INVALID, "attention plan failed");
			/* the backend's own failure, named as model_backend_cause names
			 * the failures it keeps */
			char cause[sizeof(err->msg)];

			snprintf(cause, sizeof(cause), "%s", err->msg);
			return hw_error_set(err, err->code, "%s backend: %s", m->be->ops->name, cause);
		}
	}
	return HW_OK;
}

int
model_prepare_batch(HwModel *m, const HwBatch *bt, HwError *err)
{
	int32_t *catl = m->h_i32a, *textl = m->h_i32b;
	int      Uc = 0, rc;

	if ((rc = check_batch(m, bt, err)) != HW_OK ||
		(rc = map_cells(m, bt, catl, textl, &Uc, err)) != HW_OK ||
		(rc = upload_targets(m, bt, err)) != HW_OK)
		return rc;
	upload_side_features(m, bt);
	if (m->cfg.count_ramps && (rc = upload_count_ramps(m, bt, err)) != HW_OK)
		return rc;
	m->B = bt->B;
	m->S = bt->S;
	m->N = bt->B * bt->S;
	m->U = bt->U;
	m->Uc = Uc;
	m->stype = bt->target_stype;
	m->num_loss = bt->num_loss;
	/* a model without the ordinal head fits such a task by MAE (HwNumLoss) */
	m->ord_levels = m->cfg.ordinal_head && bt->target_stype == HW_ST_NUMERICAL ? bt->ord_levels : 0;
	m->ord_scale = bt->ord_scale;
	m->ord_shift = bt->ord_shift;
	upload_cells(m, bt, catl, textl, Uc);
	return build_plans(m, bt, err);
}
