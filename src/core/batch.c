/*
 * batch.c: allocation and generic tensor views of a TrainingBatch.
 */
#include "core/batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[] = {
	"int8", "uint8", "uint16", "int32", "uint32", "float16", "float32"
};
static const size_t dtype_sizes[] = {1, 1, 2, 4, 4, 2, 4};

const char *
hw_dtype_name(int dtype)
{
	if (dtype < 0 || dtype > HW_DT_FLOAT32)
		return NULL;
	return dtype_names[dtype];
}

size_t
hw_dtype_size(int dtype)
{
	if (dtype < 0 || dtype > HW_DT_FLOAT32)
		return 0;
	return dtype_sizes[dtype];
}

HwBatch *
hw_batch_alloc(int32_t B, int32_t S, int32_t R, int32_t U, int32_t d_text)
{
	if (B <= 0 || S <= 0 || R < 0 || U < 0 || d_text <= 0 || S > 65536 || R > 65536)
		return NULL;

	HwBatch *b = calloc(1, sizeof(HwBatch));
	if (b == NULL)
		return NULL;
	b->B = B; b->S = S; b->R = R; b->U = U; b->d_text = d_text;

	size_t bs = (size_t) B * S;
	b->semantic_types = calloc(bs, 1);
	b->column_ids = calloc(bs, 4);
	b->seq_row_ids = calloc(bs, 2);
	b->is_null = calloc(bs, 1);
	b->numeric_values = calloc(bs, 4);
	b->timestamp_values = calloc(bs * HW_TS_DIM, 4);
	b->bool_values = calloc(bs, 1);
	b->categorical_embed_ids = calloc(bs, 4);
	b->text_embed_ids = calloc(bs, 4);
	b->is_target = calloc(bs, 1);
	b->is_padding = calloc(bs, 1);
	b->fk_adj = calloc((size_t) B * R * R + 1, 1);
	b->col_perm = calloc(bs, 2);
	b->out_perm = calloc(bs, 2);
	b->in_perm = calloc(bs, 2);
	b->text_batch_embeddings = calloc((size_t) U * d_text + 1, 2);
	b->seed_time = malloc(sizeof(float) * B);
	b->link_key = calloc(bs, 4);
	b->child_key = calloc(bs * HW_CHILD_LINKS, 4);
	b->child_count = calloc(bs * HW_CHILD_LINKS * HW_CHILD_WINDOWS, 2);
	b->mean_key = calloc(bs * HW_MEAN_SLOTS, 4);
	b->child_mean = calloc(bs * HW_MEAN_SLOTS * HW_CHILD_WINDOWS, sizeof(float));
	b->rel_time_scale = 1.0f;
	if (b->seed_time)
		for (int32_t i = 0; i < B; i++)
			b->seed_time[i] = NAN;     /* no observation time until a sampler sets one */

	if (!b->semantic_types || !b->column_ids || !b->seq_row_ids || !b->is_null ||
		!b->numeric_values || !b->timestamp_values || !b->bool_values ||
		!b->categorical_embed_ids || !b->text_embed_ids || !b->is_target ||
		!b->is_padding || !b->fk_adj || !b->col_perm || !b->out_perm ||
		!b->in_perm || !b->text_batch_embeddings || !b->seed_time || !b->link_key ||
		!b->child_key || !b->child_count || !b->mean_key || !b->child_mean)
	{
		hw_batch_free(b);
		return NULL;
	}
	return b;
}

void
hw_batch_free(HwBatch *b)
{
	if (b == NULL)
		return;
	free(b->semantic_types);
	free(b->column_ids);
	free(b->seq_row_ids);
	free(b->is_null);
	free(b->numeric_values);
	free(b->seed_time);
	free(b->link_key);
	free(b->child_key);
	free(b->child_count);
	free(b->mean_key);
	free(b->child_mean);
	free(b->timestamp_values);
	free(b->bool_values);
	free(b->categorical_embed_ids);
	free(b->text_embed_ids);
	free(b->is_target);
	free(b->is_padding);
	free(b->fk_adj);
	free(b->col_perm);
	free(b->out_perm);
	free(b->in_perm);
	free(b->text_batch_embeddings);
	free(b);
}

static void
set_view(HwTensorView *v, const char *name, int dtype, int ndim,
		 int64_t d0, int64_t d1, int64_t d2, void *data)
{
	v->name = name;
	v->dtype = dtype;
	v->ndim = ndim;
	v->shape[0] = d0;
	v->shape[1] = d1;
	v->shape[2] = d2;
	v->data = data;
}

void
hw_batch_tensors(HwBatch *b, HwTensorView *v)
{
	int64_t B = b->B, S = b->S, R = b->R;

	set_view(&v[0], "semantic_types", HW_DT_INT8, 2, B, S, 0, b->semantic_types);
	set_view(&v[1], "column_ids", HW_DT_INT32, 2, B, S, 0, b->column_ids);
	set_view(&v[2], "seq_row_ids", HW_DT_UINT16, 2, B, S, 0, b->seq_row_ids);
	set_view(&v[3], "is_null", HW_DT_UINT8, 2, B, S, 0, b->is_null);
	set_view(&v[4], "numeric_values", HW_DT_FLOAT32, 2, B, S, 0, b->numeric_values);
	set_view(&v[5], "timestamp_values", HW_DT_FLOAT32, 3, B, S, HW_TS_DIM, b->timestamp_values);
	set_view(&v[6], "bool_values", HW_DT_UINT8, 2, B, S, 0, b->bool_values);
	set_view(&v[7], "categorical_embed_ids", HW_DT_UINT32, 2, B, S, 0, b->categorical_embed_ids);
	set_view(&v[8], "text_embed_ids", HW_DT_UINT32, 2, B, S, 0, b->text_embed_ids);
	set_view(&v[9], "is_target", HW_DT_UINT8, 2, B, S, 0, b->is_target);
	set_view(&v[10], "is_padding", HW_DT_UINT8, 2, B, S, 0, b->is_padding);
	set_view(&v[11], "fk_adj", HW_DT_UINT8, 3, B, R, R, b->fk_adj);
	set_view(&v[12], "col_perm", HW_DT_UINT16, 2, B, S, 0, b->col_perm);
	set_view(&v[13], "out_perm", HW_DT_UINT16, 2, B, S, 0, b->out_perm);
	set_view(&v[14], "in_perm", HW_DT_UINT16, 2, B, S, 0, b->in_perm);
	set_view(&v[15], "text_batch_embeddings", HW_DT_FLOAT16, 2, b->U, b->d_text, 0, b->text_batch_embeddings);
	set_view(&v[16], "target_stype", HW_DT_UINT8, 1, 1, 0, 0, &b->target_stype);
	set_view(&v[17], "task_idx", HW_DT_UINT32, 1, 1, 0, 0, &b->task_idx);
	set_view(&v[18], "cat_emb_start", HW_DT_UINT32, 1, 1, 0, 0, &b->cat_emb_start);
	set_view(&v[19], "cat_emb_count", HW_DT_UINT32, 1, 1, 0, 0, &b->cat_emb_count);
}

bool
hw_batch_tensor(HwBatch *b, const char *name, HwTensorView *view)
{
	HwTensorView views[HW_BATCH_NTENSORS];

	hw_batch_tensors(b, views);
	for (int i = 0; i < HW_BATCH_NTENSORS; i++)
		if (strcmp(views[i].name, name) == 0)
		{
			*view = views[i];
			return true;
		}
	return false;
}
