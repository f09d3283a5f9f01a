/*
 * test_rel_time.c: the model's side features -- relative time (timeenc.h)
 * and link codes (model.h) -- and where the model uses them: relative time
 * only on visible timestamp cells of a sequence with an observation time,
 * link codes only on rows reached through an FK; the child-count features
 * (the temporal degree) likewise.  The gradients of enc.ts_rel.w,
 * enc.link.w and enc.cnt.w are checked by test_model.c's finite
 * differences (synthetic batches carry seed_time, link_key and child
 * counts).
 */
#include "unit.h"
#include "core/model.h"
#include "synth_batch.h"
#include "core/tensor.h"
#include "core/timeenc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* values computed by hand: log(1+16*0.5)/log(17) = log 9 / log 17, etc. */
UNIT_TEST(rel_time_features_hand_computed)
{
	float f[HW_REL_TIME_DIM];

	hw_rel_time_features(1.0f, 0.5f, 1.0f, f);      /* half a std before */
	CHECK_CLOSE(f[0], 0.5, 1e-7, 0);
	CHECK_CLOSE(f[1], 0.7755238700769802, 1e-6, 0);
	CHECK_CLOSE(f[2], 0.8757876680750967, 1e-6, 0);
	CHECK_CLOSE(f[3], 1.0, 0, 0);
	/* ramps, t_k = 2^((k-12)/2): d = 0.5 is past t_8 = 0.25 (1), inside
	 * [t_9, 2 t_9] = [0.3536, 0.7071] ((0.5 - 0.3536) / 0.3536 = sqrt(2) - 1),
	 * at t_10 = 0.5 (0) and before the rest (0) */
	for (int k = 0; k <= 8; k++)
		CHECK_CLOSE(f[4 + k], 1.0, 1e-6, 0);
	CHECK_CLOSE(f[4 + 9], 0.41421356237309515, 1e-6, 0);
	for (int k = 10; k < 16; k++)
		CHECK_CLOSE(f[4 + k], 0.0, 1e-7, 0);
	hw_rel_time_features(-1.0f, 1.0f, 1.0f, f);     /* two std after: negative */
	CHECK_CLOSE(f[0], -2.0, 1e-7, 0);
	CHECK_CLOSE(f[1], -1.234113755959037, 1e-6, 0);
	CHECK_CLOSE(f[2], -1.1245612332036714, 1e-6, 0);
	for (int k = 0; k < 16; k++)
		CHECK(f[4 + k] == 0.0f);                    /* after the observation time: no ramp */
	hw_rel_time_features(15.0f, -5.0f, 1.0f, f);    /* d = 20: linear part clamped */
	CHECK_CLOSE(f[0], 8.0, 0, 0);
	CHECK_CLOSE(f[1], 2.037065487933654, 1e-6, 0);
	CHECK_CLOSE(f[2], 1.539194071371942, 1e-6, 0);
	for (int k = 0; k < 16; k++)
		CHECK(f[4 + k] == 1.0f);                    /* 20 std: past every ramp */
	hw_rel_time_features(0.25f, 0.25f, 1.0f, f);    /* at the observation time */
	CHECK(f[0] == 0.0f && f[1] == 0.0f && f[2] == 0.0f && f[3] == 1.0f);
	hw_rel_time_features(NAN, 0.25f, 1.0f, f);      /* no observation time */
	for (int k = 0; k < HW_REL_TIME_DIM; k++)
		CHECK(f[k] == 0.0f);
}

/* A ramp scale narrows the ramps alone: d = 1/16 std with scale 8 reads
 * as 0.5 did above (past t_8, sqrt(2) - 1 into t_9, nothing from t_10
 * on), while the linear and log slots still say 1/16 std. */
UNIT_TEST(rel_time_ramp_scale_hand_computed)
{
	float f[HW_REL_TIME_DIM], g[HW_REL_TIME_DIM];

	hw_rel_time_features(0.3125f, 0.25f, 8.0f, f);
	hw_rel_time_features(0.3125f, 0.25f, 1.0f, g);
	for (int k = 0; k < 4; k++)
		CHECK(f[k] == g[k]);
	CHECK_CLOSE(f[0], 0.0625, 0, 0);
	for (int k = 0; k <= 8; k++)
		CHECK_CLOSE(f[4 + k], 1.0, 1e-6, 0);
	CHECK_CLOSE(f[4 + 9], 0.41421356237309515, 1e-6, 0);
	for (int k = 10; k < 16; k++)
		CHECK_CLOSE(f[4 + k], 0.0, 0, 0);
	/* without the scale 1/16 std = t_4 is past t_0..t_2 and sqrt(2) - 1
	 * into t_3 = 2^-4.5 */
	for (int k = 0; k <= 2; k++)
		CHECK_CLOSE(g[4 + k], 1.0, 1e-6, 0);
	CHECK_CLOSE(g[4 + 3], 0.41421356237309515, 1e-6, 0);
	for (int k = 4; k < 16; k++)
		CHECK_CLOSE(g[4 + k], 0.0, 0, 0);
}

typedef struct RtFix
{
	HwBackend     *be;
	HwModel       *m;
	uint16_t      *colt, *catt;
	HwBatch       *b;
	HwPredictions *p;
} RtFix;

static int
rt_make_abs(RtFix *f, int stype, int absolute_time)
{
	HwError       err = {0};
	HwModelConfig c;
	HwSynthSpec   sp = { .B = 6, .S = 32, .d_text = 32, .target_stype = stype, .seed = 5 };

	memset(f, 0, sizeof(*f));
	hw_model_config_preset(&c, "tiny", &err);
	c.absolute_time = absolute_time;
	c.d_text = 32;
	c.seq_len = 32;
	c.batch_size = 6;
	c.count_ramps = HW_COUNT_RAMPS_ANCHOR;   /* an option (off in the presets); the count-ramp tests need it */
	f->be = hw_backend_cpu_create(1, &err);
	hw_synth_tables(c.d_text, 3, &f->colt, &f->catt);
	f->m = hw_model_create(&c, f->colt, HW_SYNTH_NCOLS, f->catt, HW_SYNTH_NCAT, f->be, &err);
	f->b = hw_synth_batch(&sp, 0);
	f->p = hw_predictions_alloc(6, 8);
	return f->m && f->b && f->p && hw_model_param_index(f->m, "enc.ts_rel.w") >= 0;
}

static int rt_make(RtFix *f, int stype) { return rt_make_abs(f, stype, 1); }

static void
rt_free(RtFix *f)
{
	hw_predictions_free(f->p);
	hw_model_free(f->m);
	hw_batch_free(f->b);
	hw_backend_destroy(f->be);
	free(f->colt);
	free(f->catt);
}

/* weight `name` [D, K] := scale * (a fixed pattern), so that it visibly matters */
static void
set_side_w(RtFix *f, const char *name, int K, float scale)
{
	HwError err = {0};
	int64_t n = (int64_t) hw_model_config(f->m)->d_model * K;
	float  *w = malloc(sizeof(float) * n);

	for (int64_t k = 0; k < n; k++)
		w[k] = scale * (float) sin(1.7 * (double) k + 0.3);
	CHECK_EQ_INT(hw_model_set_tensor(f->m, 0, name, w, n, &err), HW_OK);
	free(w);
}

static void set_rel_w(RtFix *f, float scale) { set_side_w(f, "enc.ts_rel.w", HW_REL_TIME_DIM, scale); }
static void set_link_w(RtFix *f, float scale) { set_side_w(f, "enc.link.w", HW_LINK_DIM, scale); }
static void set_cnt_w(RtFix *f, float scale) { set_side_w(f, "enc.cnt.w", HW_CNT_DIM, scale); }

/* predictions ([B] values) of the fixture's batch as it is now */
static void
values(RtFix *f, float *out)
{
	HwError err = {0};
	float   loss;

	CHECK_EQ_INT(hw_model_eval(f->m, f->b, &loss, f->p, &err), HW_OK);
	memcpy(out, f->p->value, sizeof(float) * f->b->B);
}

/* Without an observation time the weights of relative time do not matter;
 * with one they do, for the sequences that have it. */
UNIT_TEST(model_rel_time_needs_an_observation_time)
{
	RtFix f;
	float a[6], z[6];

	CHECK(rt_make(&f, HW_ST_NUMERICAL));
	for (int b = 0; b < 6; b++)
		f.b->seed_time[b] = NAN;
	set_rel_w(&f, 2.0f);
	values(&f, a);
	set_rel_w(&f, 0.0f);
	values(&f, z);
	CHECK(memcmp(a, z, sizeof(a)) == 0);
	for (int b = 0; b < 6; b++)
		f.b->seed_time[b] = b % 2 ? 0.7f : NAN;
	set_rel_w(&f, 2.0f);
	values(&f, a);
	for (int b = 0; b < 6; b++)
		CHECK_MSG(b % 2 ? a[b] != z[b] : a[b] == z[b], "sequence %d: %g vs %g", b, a[b], z[b]);
	rt_free(&f);
}

/* The batch's rel_time_scale reaches the model: with relative-time weights
 * a sequence with an observation time predicts differently at scale 8 than
 * at 1, one without predicts the same. */
UNIT_TEST(model_rel_time_reads_the_batch_scale)
{
	RtFix f;
	float a[6], z[6];

	CHECK(rt_make(&f, HW_ST_NUMERICAL));
	CHECK(f.b->rel_time_scale == 1.0f);
	for (int b = 0; b < 6; b++)
		f.b->seed_time[b] = b % 2 ? 0.7f : NAN;
	set_rel_w(&f, 2.0f);
	values(&f, a);
	f.b->rel_time_scale = 8.0f;
	values(&f, z);
	for (int b = 0; b < 6; b++)
		CHECK_MSG(b % 2 ? a[b] != z[b] : a[b] == z[b], "sequence %d: %g at scale 1, %g at 8", b, a[b], z[b]);
	rt_free(&f);
}

/* A NULL timestamp cell and a masked timestamp target get no relative-time
 * input: what their value slots hold changes no prediction. */
UNIT_TEST(model_rel_time_skips_null_and_target_cells)
{
	RtFix f;
	float a[6], z[6];
	int   S = 32, changed = 0;

	CHECK(rt_make(&f, HW_ST_TIMESTAMP));
	for (int b = 0; b < 6; b++)
		f.b->seed_time[b] = 0.4f;
	set_rel_w(&f, 2.0f);
	/* one input timestamp cell per sequence made NULL (value slots zero, as the sampler writes it) */
	for (int b = 0; b < 6; b++)
		for (int s = 0; s < S; s++)
		{
			size_t i = (size_t) b * S + s;

			if (f.b->semantic_types[i] == HW_ST_TIMESTAMP && !f.b->is_target[i] && !f.b->is_padding[i])
			{
				f.b->is_null[i] = 1;
				memset(f.b->timestamp_values + i * 15, 0, 15 * sizeof(float));
				break;
			}
		}
	values(&f, a);
	/* garbage in the epoch slot of every NULL and every target timestamp cell */
	for (int i = 0; i < 6 * S; i++)
		if (f.b->semantic_types[i] == HW_ST_TIMESTAMP && (f.b->is_null[i] || f.b->is_target[i]) &&
			!f.b->is_padding[i])
		{
			f.b->timestamp_values[(size_t) i * 15 + 14] += 3.5f;
			changed++;
		}
	CHECK(changed >= 6);
	values(&f, z);
	CHECK(memcmp(a, z, sizeof(a)) == 0);
	rt_free(&f);
}

/* Every visible timestamp cell's epoch slot of sequences 0-5, and the
 * observation time of the odd ones, moved by +1 (values on a grid of 1/256,
 * so the moves and trel's differences are exact): the odd sequences' times
 * relative to their observation time stay as they were, their years do not. */
static void
shift_epochs(RtFix *f)
{
	int S = f->b->S;

	for (int b = 0; b < 6; b++)
	{
		if (b % 2)
			f->b->seed_time[b] += 1.0f;
		for (int s = 0; s < S; s++)
		{
			size_t i = (size_t) b * S + s;

			if (f->b->semantic_types[i] == HW_ST_TIMESTAMP && !f->b->is_padding[i])
				f->b->timestamp_values[i * 15 + 14] += 1.0f;
		}
	}
}

/* absolute_time 0: a sequence with an observation time predicts the same
 * when every time in it moves by the same amount (its cells' epoch slots
 * are not read); a sequence without one still reads them (a NULL timestamp
 * cell is read by neither).  With the
 * default (1) the moved times change the odd sequences' predictions too:
 * the check can fail.  The option survives the model's state. */
UNIT_TEST(model_absolute_time_off_reads_times_relative_only)
{
	for (int abs_time = 0; abs_time <= 1; abs_time++)
	{
		RtFix f;
		float a[6], z[6];
		int   S = 32, vis[6] = {0}, odd = 0, even = 0;

		CHECK(rt_make_abs(&f, HW_ST_NUMERICAL, abs_time));
		CHECK_EQ_INT(hw_model_config(f.m)->absolute_time, abs_time);
		for (int b = 0; b < 6; b++)
		{
			f.b->seed_time[b] = b % 2 ? 0.5f : NAN;
			for (int s = 0; s < S; s++)
			{
				size_t i = (size_t) b * S + s;
				float *t = f.b->timestamp_values + i * 15 + 14;

				if (f.b->semantic_types[i] == HW_ST_TIMESTAMP && !f.b->is_padding[i])
				{
					*t = (float) ((int) (s * 37 + b * 11) % 512 - 256) / 256.0f;   /* -1 .. 1 */
					vis[b] |= !f.b->is_null[i] && !f.b->is_target[i];
				}
			}
			odd += vis[b] && b % 2;
			even += vis[b] && !(b % 2);
		}
		CHECK_MSG(odd >= 2 && even >= 2, "sequences with a visible timestamp: %d odd, %d even", odd, even);
		set_rel_w(&f, 2.0f);
		values(&f, a);
		shift_epochs(&f);
		values(&f, z);
		for (int b = 0; b < 6; b++)
			CHECK_MSG(!vis[b] || (b % 2 && !abs_time) ? a[b] == z[b] : a[b] != z[b],
					  "absolute_time %d, sequence %d: %.9g before the move, %.9g after", abs_time, b, a[b], z[b]);
		{
			HwError       err = {0};
			HwModelConfig rc;
			uint8_t      *blob;
			size_t        len;

			CHECK_EQ_INT(hw_model_state_serialize(f.m, &blob, &len, &err), HW_OK);
			CHECK_EQ_INT(hw_model_state_read_config(blob, len, &rc, &err), HW_OK);
			CHECK_EQ_INT(rc.absolute_time, abs_time);
			free(blob);
		}
		rt_free(&f);
	}
}

/* absolute_time needs relative time: without it the epoch stays the only time */
UNIT_TEST(model_absolute_time_needs_rel_time)
{
	HwError       err = {0};
	HwModelConfig c;

	hw_model_config_preset(&c, "tiny", &err);
	CHECK_EQ_INT(c.absolute_time, 1);
	c.absolute_time = 0;
	CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_OK);
	CHECK_EQ_INT(c.absolute_time, 0);
	c.rel_time = 0;
	CHECK_EQ_INT(hw_model_config_finish(&c, &err), HW_OK);
	CHECK_EQ_INT(c.absolute_time, 1);
}

/* splitmix64's published first output for seed 0 is 0xE220A8397B1DCDAF;
 * hw_link_code(0) must be its bits, LSB first, as +-1/sqrt(32) */
UNIT_TEST(link_code_is_splitmix_bits)
{
	const uint64_t z = 0xE220A8397B1DCDAFULL;
	float          c[HW_LINK_DIM], d[HW_LINK_DIM];
	double         norm = 0, dot = 0;

	hw_link_code(0, c);
	for (int j = 0; j < HW_LINK_DIM; j++)
	{
		CHECK_CLOSE(c[j], ((z >> j) & 1) ? 0.17677669529663687 : -0.17677669529663687, 1e-7, 0);
		norm += (double) c[j] * c[j];
	}
	CHECK_CLOSE(norm, 1.0, 1e-6, 0);
	hw_link_code(0x51u, c);
	hw_link_code(0x52u, d);
	for (int j = 0; j < HW_LINK_DIM; j++)
		dot += (double) c[j] * d[j];
	CHECK(dot < 0.99);              /* neighbouring keys: different codes */
	hw_link_code(0x51u, d);
	CHECK(memcmp(c, d, sizeof(c)) == 0);
}

/* Without link keys enc.link.w does not matter; with them it does, and only
 * for the sequences that have keys. */
UNIT_TEST(model_link_codes_only_on_linked_rows)
{
	RtFix     f;
	float     a[6], z[6];
	uint32_t *keys;
	int       N = 6 * 32;

	CHECK(rt_make(&f, HW_ST_BOOLEAN));
	CHECK(hw_model_param_index(f.m, "enc.link.w") >= 0);
	keys = malloc(sizeof(uint32_t) * N);
	memcpy(keys, f.b->link_key, sizeof(uint32_t) * N);
	memset(f.b->link_key, 0, sizeof(uint32_t) * N);
	set_link_w(&f, 3.0f);
	values(&f, a);
	set_link_w(&f, 0.0f);
	values(&f, z);
	CHECK(memcmp(a, z, sizeof(a)) == 0);
	/* keys back on sequences 1, 3, 5 only */
	for (int b = 1; b < 6; b += 2)
		memcpy(f.b->link_key + b * 32, keys + b * 32, sizeof(uint32_t) * 32);
	set_link_w(&f, 3.0f);
	values(&f, a);
	for (int b = 0; b < 6; b++)
		CHECK_MSG(b % 2 ? a[b] != z[b] : a[b] == z[b], "sequence %d: %g vs %g", b, a[b], z[b]);
	free(keys);
	rt_free(&f);
}

/* Child-count features by hand: two links with known counts; slot
 * w * 32 + j is the sum over links of code_l[j] * log1p(n_lw) / 4 (a zero
 * count adds nothing, a link without a key is ignored whatever its counts). */
UNIT_TEST(child_count_features_hand_computed)
{
	uint32_t key[HW_CHILD_LINKS] = {0x51u, 0, 0x7du, 0, 0, 0};
	uint16_t cnt[HW_CHILD_LINKS * HW_CHILD_WINDOWS] = {0};
	float    f[HW_CNT_DIM], c1[HW_LINK_DIM], c2[HW_LINK_DIM];

	cnt[0] = 7;                                   /* link 0: 7 in all, 3 in window 5 */
	cnt[5] = 3;
	cnt[1 * HW_CHILD_WINDOWS + 0] = 999;          /* link 1 has no key: ignored */
	cnt[2 * HW_CHILD_WINDOWS + 0] = 1;            /* link 2: 1 in all, 1 in window 11 */
	cnt[2 * HW_CHILD_WINDOWS + 11] = 1;
	hw_child_count_features(key, cnt, NULL, NULL, f);
	hw_link_code(0x51u, c1);
	hw_link_code(0x7du, c2);
	for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		for (int j = 0; j < HW_LINK_DIM; j++)
		{
			double want = 0;

			if (w == 0)
				want = c1[j] * log(8.0) / 4 + c2[j] * log(2.0) / 4;
			else if (w == 5)
				want = c1[j] * log(4.0) / 4;
			else if (w == 11)
				want = c2[j] * log(2.0) / 4;
			CHECK_CLOSE(f[w * HW_LINK_DIM + j], want, 1e-6, 1e-6);
		}
}

/* Child means ride on the same features: slot w * 32 + j adds, per mean
 * slot with a key, code_m[j] * clamp(mean_mw, -4, 4) / 2 (a slot without a
 * key is ignored whatever its means). */
UNIT_TEST(child_mean_features_hand_computed)
{
	uint32_t key[HW_CHILD_LINKS] = {0x51u, 0, 0, 0, 0, 0};
	uint16_t cnt[HW_CHILD_LINKS * HW_CHILD_WINDOWS] = {0};
	uint32_t mkey[HW_MEAN_SLOTS] = {0, 0x99u, 0, 0, 0, 0, 0, 0x3au};
	float    mean[HW_MEAN_SLOTS * HW_CHILD_WINDOWS] = {0};
	float    f[HW_CNT_DIM], c1[HW_LINK_DIM], m1[HW_LINK_DIM], m7[HW_LINK_DIM];

	cnt[0] = 2;                                   /* link 0: 2 in all */
	mean[0] = 5.0f;                               /* slot 0 has no key: ignored */
	mean[1 * HW_CHILD_WINDOWS + 0] = -1.5f;       /* slot 1: -1.5 in all, 0.25 in window 3 */
	mean[1 * HW_CHILD_WINDOWS + 3] = 0.25f;
	mean[7 * HW_CHILD_WINDOWS + 0] = 9.0f;        /* slot 7: clamped to 4 */
	hw_child_count_features(key, cnt, mkey, mean, f);
	hw_link_code(0x51u, c1);
	hw_link_code(0x99u, m1);
	hw_link_code(0x3au, m7);
	for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		for (int j = 0; j < HW_LINK_DIM; j++)
		{
			double want = 0;

			if (w == 0)
				want = c1[j] * log(3.0) / 4 + m1[j] * -1.5 / 2 + m7[j] * 4.0 / 2;
			else if (w == 3)
				want = m1[j] * 0.25 / 2;
			CHECK_CLOSE(f[w * HW_LINK_DIM + j], want, 1e-6, 1e-6);
		}
}

/* The model reads child means only when child_means is on (a model trained
 * before it, child_means 0, ignores them), and only on the sequences that
 * carry them. */
UNIT_TEST(model_child_means_only_when_on)
{
	RtFix f;
	float a[6], z[6], off[6];
	int   N = 6 * 32;

	CHECK(rt_make(&f, HW_ST_NUMERICAL));
	CHECK_EQ_INT(hw_model_config(f.m)->child_means, 1);
	set_cnt_w(&f, 3.0f);
	memset(f.b->mean_key, 0, sizeof(uint32_t) * N * HW_MEAN_SLOTS);
	values(&f, z);
	for (int i = 0; i < 32; i++)                  /* sequence 0 only */
	{
		f.b->mean_key[i * HW_MEAN_SLOTS + 2] = 0x1234u;
		f.b->child_mean[(i * HW_MEAN_SLOTS + 2) * HW_CHILD_WINDOWS] = 1.5f;
	}
	values(&f, a);
	CHECK(a[0] != z[0]);
	for (int b = 1; b < 6; b++)
		CHECK(a[b] == z[b]);
	((HwModelConfig *) hw_model_config(f.m))->child_means = 0;
	values(&f, off);
	CHECK(memcmp(off, z, sizeof(z)) == 0);
	rt_free(&f);
}

/* Without child keys enc.cnt.w does not matter; with them it does, only for
 * the sequences that have them, and the counts themselves matter (the same
 * keys with other counts give other predictions). */
UNIT_TEST(model_child_counts_only_where_counted)
{
	RtFix     f;
	float     a[6], z[6], c[6];
	uint32_t *keys;
	int       N = 6 * 32, NK = N * HW_CHILD_LINKS;

	CHECK(rt_make(&f, HW_ST_NUMERICAL));
	CHECK(hw_model_param_index(f.m, "enc.cnt.w") >= 0);
	keys = malloc(sizeof(uint32_t) * NK);
	memcpy(keys, f.b->child_key, sizeof(uint32_t) * NK);
	memset(f.b->child_key, 0, sizeof(uint32_t) * NK);
	set_cnt_w(&f, 3.0f);
	values(&f, a);
	set_cnt_w(&f, 0.0f);
	values(&f, z);
	CHECK(memcmp(a, z, sizeof(a)) == 0);
	for (int b = 0; b < 6; b += 2)
		memcpy(f.b->child_key + b * 32 * HW_CHILD_LINKS, keys + b * 32 * HW_CHILD_LINKS,
			   sizeof(uint32_t) * 32 * HW_CHILD_LINKS);
	set_cnt_w(&f, 3.0f);
	values(&f, a);
	for (int b = 0; b < 6; b++)
		CHECK_MSG(b % 2 ? a[b] == z[b] : a[b] != z[b], "sequence %d: %g vs %g", b, a[b], z[b]);
	/* double every count of sequence 0 */
	for (int i = 0; i < 32 * HW_CHILD_LINKS * HW_CHILD_WINDOWS; i++)
		f.b->child_count[i] = (uint16_t) (2 * f.b->child_count[i]);
	values(&f, c);
	CHECK(c[0] != a[0]);
	for (int b = 1; b < 6; b++)
		CHECK(c[b] == a[b]);
	free(keys);
	rt_free(&f);
}

/* Count ramps by hand: slot (w * 4 + t) * 32 + j is the sum over links of
 * code_l[j] * clamp(log2(1 + n_lw) - t, 0, 1), computed here in double from
 * the definition (knots at 0, 1, 3, 7, 15 children); a link without a key
 * is ignored whatever its counts, and a zero count adds nothing. */
UNIT_TEST(count_ramp_features_hand_computed)
{
	uint32_t key[HW_CHILD_LINKS] = {0x51u, 0, 0x7du, 0, 0, 0};
	uint16_t cnt[HW_CHILD_LINKS * HW_CHILD_WINDOWS] = {0};
	float    f[HW_CRAMP_DIM], c1[HW_LINK_DIM], c2[HW_LINK_DIM];
	/* expected ramps [t] per (link, window) that has a count, by hand:
	 * 7 -> log2 8 = 3: 1 1 1 0; 2 -> log2 3: 1 0.585 0 0; 20 -> log2 21 =
	 * 4.39: 1 1 1 1; 1 -> 1 0 0 0; 65535 (saturated) -> 1 1 1 1 */
	const double r7[4] = {1, 1, 1, 0}, r2[4] = {1, log2(3.0) - 1, 0, 0}, r20[4] = {1, 1, 1, 1},
				 r1[4] = {1, 0, 0, 0};

	CHECK_EQ_INT(HW_CRAMP_STEPS, 4);
	cnt[0] = 7;                                   /* link 0: 7 in all, 2 in window 5 */
	cnt[5] = 2;
	cnt[1 * HW_CHILD_WINDOWS + 0] = 999;          /* link 1 has no key: ignored */
	cnt[2 * HW_CHILD_WINDOWS + 0] = 20;           /* link 2: 20 in all, 1 in window 11 */
	cnt[2 * HW_CHILD_WINDOWS + 11] = 1;
	cnt[2 * HW_CHILD_WINDOWS + 6] = 65535;        /* and a saturated count in window 6 */
	hw_count_ramp_features(key, cnt, f);
	hw_link_code(0x51u, c1);
	hw_link_code(0x7du, c2);
	for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		for (int t = 0; t < 4; t++)
			for (int j = 0; j < HW_LINK_DIM; j++)
			{
				double want = 0;

				if (w == 0)
					want = c1[j] * r7[t] + c2[j] * r20[t];
				else if (w == 5)
					want = c1[j] * r2[t];
				else if (w == 6)
					want = c2[j] * r20[t];
				else if (w == 11)
					want = c2[j] * r1[t];
				CHECK_CLOSE(f[(w * 4 + t) * HW_LINK_DIM + j], want, 1e-6, 1e-6);
			}
}

/* The model reads count ramps only when count_ramps is on: a model made
 * without them has no enc.cramp.w; with them, the ramp weights matter for
 * the sequences whose anchor row has child keys and for no other (the
 * other rows' ramps do not reach the model, unless every row gets them,
 * as models saved before did), and a count of 2 against 3 in one window
 * changes the prediction through them alone (enc.cnt.w zero). */
UNIT_TEST(model_count_ramps_only_where_counted)
{
	RtFix     f;
	float     a[6], z[6], c[6];
	uint32_t *keys;
	int       N = 6 * 32, NK = N * HW_CHILD_LINKS;
	HwError   err = {0};
	HwModelConfig cfg;
	HwModel  *off;

	CHECK(rt_make(&f, HW_ST_NUMERICAL));
	CHECK_EQ_INT(hw_model_config(f.m)->count_ramps, HW_COUNT_RAMPS_ANCHOR);
	CHECK(hw_model_param_index(f.m, "enc.cramp.w") == hw_model_param_index(f.m, "enc.cnt.w") + 1);
	hw_model_config_preset(&cfg, "tiny", &err);
	CHECK_EQ_INT(cfg.count_ramps, 0);             /* off in the presets */
	cfg = *hw_model_config(f.m);
	cfg.count_ramps = 0;
	off = hw_model_create(&cfg, f.colt, HW_SYNTH_NCOLS, f.catt, HW_SYNTH_NCAT, f.be, &err);
	CHECK(off && hw_model_param_index(off, "enc.cramp.w") < 0 &&
		  hw_model_n_params(off) == hw_model_n_params(f.m) - 1);
	hw_model_free(off);
	cfg.child_counts = 0;                         /* ramps ride on the counts */
	cfg.count_ramps = HW_COUNT_RAMPS_ANCHOR;
	CHECK_EQ_INT(hw_model_config_finish(&cfg, &err), HW_OK);
	CHECK_EQ_INT(cfg.count_ramps, 0);

	set_cnt_w(&f, 0.0f);
	keys = malloc(sizeof(uint32_t) * NK);
	memcpy(keys, f.b->child_key, sizeof(uint32_t) * NK);
	memset(f.b->child_key, 0, sizeof(uint32_t) * NK);
	set_side_w(&f, "enc.cramp.w", HW_CRAMP_DIM, 3.0f);
	values(&f, a);
	set_side_w(&f, "enc.cramp.w", HW_CRAMP_DIM, 0.0f);
	values(&f, z);
	CHECK(memcmp(a, z, sizeof(a)) == 0);
	for (int b = 0; b < 6; b += 2)                /* the rows other than the anchor: keys */
		memcpy(f.b->child_key + b * 32 * HW_CHILD_LINKS, keys + b * 32 * HW_CHILD_LINKS,
			   sizeof(uint32_t) * 32 * HW_CHILD_LINKS);
	set_side_w(&f, "enc.cramp.w", HW_CRAMP_DIM, 3.0f);
	values(&f, a);
	for (int b = 0; b < 6; b++)
		CHECK_MSG(a[b] == z[b], "sequence %d: ramps of rows other than the anchor: %g vs %g", b, a[b], z[b]);
	((HwModelConfig *) hw_model_config(f.m))->count_ramps = HW_COUNT_RAMPS_EVERY_ROW;
	values(&f, a);
	for (int b = 0; b < 6; b++)
		CHECK_MSG(b % 2 ? a[b] == z[b] : a[b] != z[b], "every row, sequence %d: %g vs %g", b, a[b], z[b]);
	((HwModelConfig *) hw_model_config(f.m))->count_ramps = HW_COUNT_RAMPS_ANCHOR;
	CHECK(f.b->link_key[0] == 0 && f.b->seq_row_ids[0] == 0);   /* row 0: the anchor */
	hw_synth_anchor_counts(f.b, 0, 2, 5);
	for (int i = 0; i < 32; i++)                  /* every row of sequence 0: 2 children in window 4 */
		f.b->child_count[(i * HW_CHILD_LINKS + 0) * HW_CHILD_WINDOWS + 4] = 2;
	values(&f, a);
	for (int b = 0; b < 6; b++)
		CHECK_MSG(b % 2 ? a[b] == z[b] : a[b] != z[b], "sequence %d: %g vs %g", b, a[b], z[b]);
	for (int i = 0; i < 32; i++)                  /* 3 instead of 2 */
		f.b->child_count[(i * HW_CHILD_LINKS + 0) * HW_CHILD_WINDOWS + 4] = 3;
	values(&f, c);
	CHECK_MSG(c[0] != a[0], "2 and 3 children give the same prediction: %g", c[0]);
	for (int b = 1; b < 6; b++)
		CHECK(c[b] == a[b]);
	free(keys);
	rt_free(&f);
}

/* Count ramps start with no effect: enc.cramp.w is zero at init and draws
 * nothing from the generator, so a fresh model with them has the other
 * parameters of the same model without them and predicts the fixture's
 * batch (anchor rows with child keys and counts) bit for bit as it does.  Why:
 * a team row's many saturated ramps would otherwise add init noise larger
 * than its value and column embeddings (docs/model.md, Count ramps). */
UNIT_TEST(model_count_ramps_start_without_effect)
{
	RtFix         f;
	float         on[6], off_v[6];
	HwError       err = {0};
	HwModelConfig cfg;
	HwModel      *off;
	int64_t       n;
	float        *w;
	int           nonzero = 0;

	CHECK(rt_make(&f, HW_ST_NUMERICAL));
	hw_synth_anchor_counts(f.b, 0, 1, 9);
	n = (int64_t) hw_model_config(f.m)->d_model * HW_CRAMP_DIM;
	w = malloc(sizeof(float) * n);
	CHECK_EQ_INT(hw_model_get_tensor(f.m, 0, "enc.cramp.w", w, n, &err), HW_OK);
	for (int64_t k = 0; k < n; k++)
		nonzero += w[k] != 0.0f;
	CHECK_EQ_INT(nonzero, 0);
	free(w);

	cfg = *hw_model_config(f.m);
	cfg.count_ramps = 0;
	off = hw_model_create(&cfg, f.colt, HW_SYNTH_NCOLS, f.catt, HW_SYNTH_NCAT, f.be, &err);
	CHECK(off != NULL);
	values(&f, on);
	CHECK_EQ_INT(hw_model_eval(off, f.b, &(float) {0}, f.p, &err), HW_OK);
	memcpy(off_v, f.p->value, sizeof(off_v));
	for (int b = 0; b < 6; b++)
		CHECK_MSG(on[b] == off_v[b], "sequence %d: %g with ramps, %g without", b, on[b], off_v[b]);
	hw_model_free(off);
	rt_free(&f);
}

/* The ramps' buffers follow the cells that have them, not the batch's N
 * cells: with the anchor's ramps a model needs about the same memory as
 * without, besides enc.cramp.w and its optimiser state (a few D x 1536
 * blocks), where buffers for N = B x S cells would add ~N x 6.5 KiB. */
UNIT_TEST(model_count_ramps_memory_follows_the_cells)
{
	HwModelConfig cfg;
	HwError       err = {0};
	int64_t       with, without, wblock;

	CHECK_EQ_INT(hw_model_config_preset(&cfg, "small", &err), HW_OK);
	cfg.count_ramps = 0;
	without = hw_model_memory_bytes(&cfg, 30, 0);
	cfg.count_ramps = HW_COUNT_RAMPS_ANCHOR;
	CHECK_EQ_INT(hw_model_config_finish(&cfg, &err), HW_OK);
	with = hw_model_memory_bytes(&cfg, 30, 0);
	wblock = (int64_t) cfg.d_model * HW_CRAMP_DIM * (int64_t) sizeof(float);
	CHECK_MSG(without > 0 && with >= without + wblock,
			  "with %lld, without %lld bytes: enc.cramp.w is missing", (long long) with, (long long) without);
	CHECK_MSG(with - without <= 8 * wblock,
			  "the ramps add %lld bytes, %.1f x enc.cramp.w (N = %d cells)", (long long) (with - without),
			  (double) (with - without) / (double) wblock, cfg.batch_size * cfg.seq_len);
}

/* The gradient of enc.cramp.w through the compacted ramp cells (gather of
 * de, one GEMM) against central finite differences of the loss, on the
 * entries with the largest gradients (the general gradient checks sample
 * two entries of its [D, 1536], most of them on ramps no cell has). */
UNIT_TEST(model_count_ramps_gradient)
{
	RtFix    f;
	HwError  err = {0};
	int64_t  n;
	float   *w, *g, loss, lp, lm, gmax = 0;
	int      nbad = 0;

	CHECK(rt_make(&f, HW_ST_NUMERICAL));
	hw_synth_anchor_counts(f.b, 0, 1, 6);
	set_side_w(&f, "enc.cramp.w", HW_CRAMP_DIM, 0.05f);
	n = (int64_t) hw_model_config(f.m)->d_model * HW_CRAMP_DIM;
	w = malloc(sizeof(float) * n);
	g = malloc(sizeof(float) * n);
	CHECK_EQ_INT(hw_model_forward_backward(f.m, f.b, &loss, &err), HW_OK);
	CHECK_EQ_INT(hw_model_get_tensor(f.m, 0, "enc.cramp.w", w, n, &err), HW_OK);
	CHECK_EQ_INT(hw_model_get_tensor(f.m, 1, "enc.cramp.w", g, n, &err), HW_OK);
	for (int s = 0; s < 12; s++)
	{
		int64_t k = 0;
		float   h = 1e-2f, fd, w0;

		for (int64_t j = 1; j < n; j++)           /* the largest |g| not yet checked (checked ones: NaN) */
			if (!isnan(g[j]) && (isnan(g[k]) || fabsf(g[j]) > fabsf(g[k])))
				k = j;
		if (s == 0)
			gmax = fabsf(g[k]);
		w0 = w[k];
		w[k] = w0 + h;
		hw_model_set_tensor(f.m, 0, "enc.cramp.w", w, n, &err);
		hw_model_eval(f.m, f.b, &lp, NULL, &err);
		w[k] = w0 - h;
		hw_model_set_tensor(f.m, 0, "enc.cramp.w", w, n, &err);
		hw_model_eval(f.m, f.b, &lm, NULL, &err);
		w[k] = w0;
		hw_model_set_tensor(f.m, 0, "enc.cramp.w", w, n, &err);
		fd = (lp - lm) / (2 * h);
		if (!(fabsf(fd - g[k]) <= 1e-5f + 3e-2f * fabsf(g[k])))
		{
			nbad++;
			printf("  enc.cramp.w[%lld]: fd %.6g, backward %.6g\n", (long long) k, fd, g[k]);
		}
		g[k] = NAN;
	}
	CHECK_MSG(gmax > 1e-4f, "the ramps' largest gradient is %g: they reach no loss", gmax);
	CHECK_MSG(nbad <= 1, "%d of 12 gradients of enc.cramp.w disagree with finite differences", nbad);
	free(w);
	free(g);
	rt_free(&f);
}
