/*
 * model_state.c: the training state as one versioned blob (model.h).
 *
 * Layout (little-endian, as written by x86-64/aarch64 hosts):
 *   "HWMS"  u32 version  u32 config_bytes  config fields (below)
 *   i64 step  u64 rng[4]
 *   u32 n_params, then per parameter: u16 name_len, name, i32 ndim, i32 shape[2]
 *   i64 numel  f32 params[numel]  f32 m1[numel]  f32 m2[numel]
 *   [f32 ema[numel]: from version 6, when ema_decay > 0]
 *   u64 FNV-1a 64 of every preceding byte
 * Config fields, in order: i32 d_model n_heads n_layers seq_len batch_size
 * d_text d_ff full_attention, f32 lr, i32 warmup_steps total_steps, f32
 * weight_decay adam_b1 adam_b2 adam_eps muon_momentum clip_norm, u64 seed,
 * and from version 2: i32 sched_start, f32 sched_start_lr (version 1 blobs
 * load with both 0: a straight run's schedule), from version 3: i32
 * rel_time, i32 link_types (older blobs load with 0: their models have no
 * enc.ts_rel.w, enc.link.w), from version 4: i32 child_counts (older: 0,
 * no enc.cnt.w), from version 5: i32 child_means (older: 0, counts only),
 * from version 6: f32 ema_decay (older: 0, no parameter average).
 * from version 7: i32 ordinal_head (older: 0, no head.ord parameters),
 * from version 8: i32 count_ramps (older: 0, no enc.cramp.w),
 * from version 9: i32 head_adamw (older: 0, Muon heads),
 * from version 10: f32 head_weight_decay (older: weight_decay, as they trained),
 * from version 11 the same fields, count_ramps 1 the anchor row's ramps
 * (versions 8-10: 1 meant every row's; they load as HW_COUNT_RAMPS_EVERY_ROW),
 * from version 12: i32 absolute_time (older: 1, the epoch slot shown).
 * A new field means a new version; readers reject versions they do not know.
 */
#include "core/model.h"

#include <stdlib.h>
#include <string.h>

#define MAGIC "HWMS"
#define CONFIG_BYTES_V1 (8 * 4 + 4 + 2 * 4 + 6 * 4 + 8)
#define CONFIG_BYTES_V2 (CONFIG_BYTES_V1 + 4 + 4)
#define CONFIG_BYTES_V3 (CONFIG_BYTES_V2 + 4 + 4)
#define CONFIG_BYTES_V4 (CONFIG_BYTES_V3 + 4)
#define CONFIG_BYTES_V5 (CONFIG_BYTES_V4 + 4)
#define CONFIG_BYTES_V6 (CONFIG_BYTES_V5 + 4)
#define CONFIG_BYTES_V7 (CONFIG_BYTES_V6 + 4)
#define CONFIG_BYTES_V8 (CONFIG_BYTES_V7 + 4)
#define CONFIG_BYTES_V9 (CONFIG_BYTES_V8 + 4)
#define CONFIG_BYTES_V10 (CONFIG_BYTES_V9 + 4)
#define CONFIG_BYTES (CONFIG_BYTES_V10 + 4)

typedef struct Wr { uint8_t *p; size_t n, cap; int fail; } Wr;

static void
put(Wr *w, const void *src, size_t n)
{
	if (w->fail)
		return;
	if (w->n + n > w->cap)
	{
		size_t   nc = (w->cap ? w->cap * 2 : 4096);
		uint8_t *np;

		while (nc < w->n + n)
			nc *= 2;
		np = realloc(w->p, nc);
		if (!np)
		{
			w->fail = 1;
			return;
		}
		w->p = np;
		w->cap = nc;
	}
	memcpy(w->p + w->n, src, n);
	w->n += n;
}

#define PUT(w, v) do { __typeof__(v) _v = (v); put((w), &_v, sizeof(_v)); } while (0)

static uint64_t
fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
	{
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void
put_config(Wr *w, const HwModelConfig *c)
{
	PUT(w, c->d_model); PUT(w, c->n_heads); PUT(w, c->n_layers); PUT(w, c->seq_len);
	PUT(w, c->batch_size); PUT(w, c->d_text); PUT(w, c->d_ff); PUT(w, c->full_attention);
	PUT(w, c->lr); PUT(w, c->warmup_steps); PUT(w, c->total_steps);
	PUT(w, c->weight_decay); PUT(w, c->adam_b1); PUT(w, c->adam_b2); PUT(w, c->adam_eps);
	PUT(w, c->muon_momentum); PUT(w, c->clip_norm); PUT(w, c->seed);
	PUT(w, c->sched_start); PUT(w, c->sched_start_lr);
	PUT(w, c->rel_time); PUT(w, c->link_types);
	PUT(w, c->child_counts);
	PUT(w, c->child_means);
	PUT(w, c->ema_decay);
	PUT(w, c->ordinal_head);
	PUT(w, c->count_ramps);
	PUT(w, c->head_adamw);
	PUT(w, c->head_weight_decay);
	PUT(w, c->absolute_time);
}

int
hw_model_state_serialize(HwModel *m, uint8_t **out, size_t *len, HwError *err)
{
	Wr       w = {0};
	uint32_t ver = HW_MODEL_STATE_VERSION, cb = CONFIG_BYTES, np = (uint32_t) hw_model_n_params(m);
	uint64_t rng[4];
	int64_t  numel = hw_model_numel(m);
	float   *buf;

	*out = NULL;
	*len = 0;
	if (hw_model_is_frozen(m))
		return hw_error_set(err, HW_ERR_INVALID, "a frozen (serving) model has no training state to serialize");
	if (hw_model_ema_swapped(m))
		return hw_error_set(err, HW_ERR_INVALID, "swap the parameter average back before serializing the model");
	/* its parameters may be the average, and the average is gone either
	 * way: with its moments it would resume wrong */
	if (hw_model_ema_adopted(m))
		return hw_error_set(err, HW_ERR_INVALID, "a model loaded to predict (its parameter average adopted or dropped) has no training state");
	put(&w, MAGIC, 4);
	PUT(&w, ver);
	PUT(&w, cb);
	put_config(&w, hw_model_config(m));
	PUT(&w, (int64_t) hw_model_step(m));
	hw_model_rng_state(m, rng);
	put(&w, rng, sizeof(rng));
	PUT(&w, np);
	for (uint32_t i = 0; i < np; i++)
	{
		const HwParamInfo *p = hw_model_param_info(m, (int) i);
		uint16_t           nl = (uint16_t) strlen(p->name);

		PUT(&w, nl);
		put(&w, p->name, nl);
		PUT(&w, p->ndim);
		PUT(&w, p->shape[0]);
		PUT(&w, p->shape[1]);
	}
	PUT(&w, numel);
	buf = malloc(sizeof(float) * (size_t) (numel > 0 ? numel : 1));
	if (!buf)
		w.fail = 1;
	for (int which = 0; which < 5 && !w.fail; which++)
	{
		if (which == 1 || (which == 4 && !hw_model_has_ema(m)))
			continue;              /* gradients are not state; the average only when kept */
		hw_model_get_flat(m, which, buf);
		put(&w, buf, sizeof(float) * (size_t) numel);
	}
	free(buf);
	if (!w.fail)
		PUT(&w, fnv(w.p, w.n));
	if (w.fail)
	{
		free(w.p);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory serializing the model state");
	}
	/* never a state (checkpoint) made of a failed device's NaN bytes */
	int rc = hw_model_backend_status(m, err);
	if (rc != HW_OK)
	{
		free(w.p);
		return rc;
	}
	*out = w.p;
	*len = w.n;
	return HW_OK;
}

typedef struct Rd { const uint8_t *p; size_t n, off; int fail; } Rd;

static void
get(Rd *r, void *dst, size_t n)
{
	if (r->fail || r->off + n > r->n)
	{
		r->fail = 1;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, r->p + r->off, n);
	r->off += n;
}

#define GET(r, v) get((r), &(v), sizeof(v))

static int
read_head(Rd *r, HwModelConfig *c, HwError *err)
{
	char     mg[4];
	uint32_t ver, cb;
	uint64_t h;

	if (r->n < 16)
		return hw_error_set(err, HW_ERR_CORRUPT, "model state of %zu bytes is too short", r->n);
	memcpy(&h, r->p + r->n - 8, 8);
	if (fnv(r->p, r->n - 8) != h)
		return hw_error_set(err, HW_ERR_CORRUPT, "model state checksum mismatch (corrupted or truncated)");
	get(r, mg, 4);
	GET(r, ver);
	GET(r, cb);
	if (memcmp(mg, MAGIC, 4) != 0)
		return hw_error_set(err, HW_ERR_CORRUPT, "not a headwater model state (bad magic)");
	if (!((ver == HW_MODEL_STATE_VERSION && cb == CONFIG_BYTES) ||
		  ((ver == 11 || ver == 10) && cb == CONFIG_BYTES_V10) ||
		  (ver == 9 && cb == CONFIG_BYTES_V9) ||
		  (ver == 8 && cb == CONFIG_BYTES_V8) ||
		  (ver == 7 && cb == CONFIG_BYTES_V7) ||
		  (ver == 6 && cb == CONFIG_BYTES_V6) ||
		  (ver == 5 && cb == CONFIG_BYTES_V5) ||
		  (ver == 4 && cb == CONFIG_BYTES_V4) ||
		  (ver == 3 && cb == CONFIG_BYTES_V3) ||
		  (ver == 2 && cb == CONFIG_BYTES_V2) ||
		  (ver == 1 && cb == CONFIG_BYTES_V1)))
		return hw_error_set(err, HW_ERR_CORRUPT, "model state format version %u is not supported (this build reads %d)",
							ver, HW_MODEL_STATE_VERSION);
	memset(c, 0, sizeof(*c));
	GET(r, c->d_model); GET(r, c->n_heads); GET(r, c->n_layers); GET(r, c->seq_len);
	GET(r, c->batch_size); GET(r, c->d_text); GET(r, c->d_ff); GET(r, c->full_attention);
	GET(r, c->lr); GET(r, c->warmup_steps); GET(r, c->total_steps);
	GET(r, c->weight_decay); GET(r, c->adam_b1); GET(r, c->adam_b2); GET(r, c->adam_eps);
	GET(r, c->muon_momentum); GET(r, c->clip_norm); GET(r, c->seed);
	if (ver >= 2)
	{
		GET(r, c->sched_start);
		GET(r, c->sched_start_lr);
	}
	if (ver >= 3)
	{
		GET(r, c->rel_time);
		GET(r, c->link_types);
	}
	if (ver >= 4)
		GET(r, c->child_counts);
	if (ver >= 5)
		GET(r, c->child_means);
	if (ver >= 6)
		GET(r, c->ema_decay);
	if (ver >= 7)
		GET(r, c->ordinal_head);
	if (ver >= 8)
		GET(r, c->count_ramps);
	if (ver <= 10 && c->count_ramps)
		c->count_ramps = HW_COUNT_RAMPS_EVERY_ROW;   /* as they trained */
	if (ver >= 9)
		GET(r, c->head_adamw);
	if (ver >= 10)
		GET(r, c->head_weight_decay);
	else
		c->head_weight_decay = c->weight_decay;   /* the heads decayed like the rest */
	if (ver >= 12)
		GET(r, c->absolute_time);
	else
		c->absolute_time = 1;     /* they saw the epoch */
	if (r->fail)
		return hw_error_set(err, HW_ERR_CORRUPT, "model state truncated in its header");
	return HW_OK;
}

int
hw_model_state_read_config(const uint8_t *buf, size_t len, HwModelConfig *cfg, HwError *err)
{
	Rd r = { buf, len, 0, 0 };

	return read_head(&r, cfg, err);
}

int
hw_model_state_load(HwModel *m, const uint8_t *buf, size_t len, HwError *err)
{
	Rd                   r = { buf, len, 0, 0 };
	HwModelConfig        c;
	const HwModelConfig *mc = hw_model_config(m);
	int64_t              step, numel;
	uint64_t             rng[4];
	uint32_t             np;
	int                  rc;
	size_t               fbytes;

	if ((rc = read_head(&r, &c, err)) != HW_OK)
		return rc;
	if (c.d_model != mc->d_model || c.n_heads != mc->n_heads || c.n_layers != mc->n_layers ||
		c.d_text != mc->d_text || c.d_ff != mc->d_ff || c.full_attention != mc->full_attention)
		return hw_error_set(err, HW_ERR_INVALID,
							"model state is for d_model %d, %d heads, %d layers, d_text %d, d_ff %d, full %d; "
							"the model has %d, %d, %d, %d, %d, %d",
							c.d_model, c.n_heads, c.n_layers, c.d_text, c.d_ff, c.full_attention,
							mc->d_model, mc->n_heads, mc->n_layers, mc->d_text, mc->d_ff, mc->full_attention);
	/* inputs without a parameter of their own: the parameter table below cannot tell */
	if ((c.child_means != 0) != (mc->child_means != 0))
		return hw_error_set(err, HW_ERR_INVALID, "model state is for child_means %d; the model has %d",
							c.child_means != 0, mc->child_means != 0);
	GET(&r, step);
	get(&r, rng, sizeof(rng));
	GET(&r, np);
	if (r.fail || np != (uint32_t) hw_model_n_params(m))
		return hw_error_set(err, HW_ERR_CORRUPT, "model state has %u parameters, the model %d", np, hw_model_n_params(m));
	for (uint32_t i = 0; i < np; i++)
	{
		const HwParamInfo *p = hw_model_param_info(m, (int) i);
		uint16_t           nl;
		char               name[64];
		int32_t            nd, s0, s1;

		GET(&r, nl);
		if (nl >= sizeof(name))
			return hw_error_set(err, HW_ERR_CORRUPT, "model state: parameter name too long");
		get(&r, name, nl);
		name[nl] = 0;
		GET(&r, nd);
		GET(&r, s0);
		GET(&r, s1);
		if (r.fail || strcmp(name, p->name) != 0 || nd != p->ndim || s0 != p->shape[0] || s1 != p->shape[1])
			return hw_error_set(err, HW_ERR_CORRUPT, "model state parameter %u is \"%s\" [%d,%d], the model expects \"%s\" [%d,%d]",
								i, name, s0, s1, p->name, p->shape[0], p->shape[1]);
	}
	GET(&r, numel);
	fbytes = sizeof(float) * (size_t) numel;
	/* the average travels when the state's model kept one */
	int nbuf = c.ema_decay > 0 ? 4 : 3;
	if (r.fail || numel != hw_model_numel(m) || r.off + (size_t) nbuf * fbytes + 8 != r.n)
		return hw_error_set(err, HW_ERR_CORRUPT, "model state size does not match its parameter table");
	if (hw_model_ema_swapped(m) || hw_model_ema_adopted(m))
		return hw_error_set(err, HW_ERR_INVALID, "a model that reads its parameter average (swapped) or was loaded to predict cannot load a state");
	if (c.ema_decay > 0 && !hw_model_has_ema(m))
		return hw_error_set(err, HW_ERR_INVALID, "model state keeps a parameter average (ema_decay %g); the model does not",
							(double) c.ema_decay);
	/* buffers may be unaligned in the blob: copy through an aligned one */
	{
		float *tmp = malloc(fbytes ? fbytes : 4);

		if (!tmp)
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory loading the model state");
		for (int which = 0; which < 5; which++)
		{
			if (which == 1 || (which == 4 && nbuf == 3))
				continue;
			get(&r, tmp, fbytes);
			hw_model_set_flat(m, which, tmp);
			/* a model with an average loading a state without one: it starts at the parameters */
			if (which == 0 && nbuf == 3 && hw_model_has_ema(m))
				hw_model_set_flat(m, 4, tmp);
		}
		free(tmp);
	}
	hw_model_set_step(m, step);
	hw_model_set_rng_state(m, rng);
	return HW_OK;
}

HwModel *
hw_model_state_deserialize(const uint8_t *buf, size_t len, const uint16_t *col_table, int32_t ncols,
						   const uint16_t *cat_table, int32_t ncat, HwBackend *be, HwError *err)
{
	HwModelConfig c;
	HwModel      *m;

	if (hw_model_state_read_config(buf, len, &c, err) != HW_OK)
		return NULL;
	m = hw_model_create(&c, col_table, ncols, cat_table, ncat, be, err);
	if (!m)
		return NULL;
	if (hw_model_state_load(m, buf, len, err) != HW_OK)
	{
		hw_model_free(m);
		return NULL;
	}
	return m;
}

HwModel *
hw_model_state_deserialize_served(const uint8_t *buf, size_t len, const uint16_t *col_table, int32_t ncols,
								  const uint16_t *cat_table, int32_t ncat, int average, HwBackend *be, HwError *err)
{
	HwModel *m = hw_model_state_deserialize(buf, len, col_table, ncols, cat_table, ncat, be, err);

	if (m != NULL && (average ? hw_model_adopt_ema(m, err) : hw_model_drop_ema(m, err)) != HW_OK)
	{
		hw_model_free(m);
		return NULL;
	}
	return m;
}
