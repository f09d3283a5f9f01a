/*
 * model_features.c: per-cell input features computed on the host from a batch: link codes,
 * child-count features and count ramps (model.h gives their layout).
 */

#include "core/model.h"

#include <math.h>
#include <string.h>

/* link code: bit j of splitmix64(key) -> +-1/sqrt(HW_LINK_DIM) in slot j (model.h) */
void
hw_link_code(uint32_t key, float out[HW_LINK_DIM])
{
	uint64_t z = (uint64_t) key + 0x9E3779B97F4A7C15ULL;
	float    a = 1.0f / sqrtf((float) HW_LINK_DIM);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	for (int j = 0; j < HW_LINK_DIM; j++)
		out[j] = (z >> j) & 1 ? a : -a;
}

/* out[w * HW_LINK_DIM + j] += v[w] * code(key)[j] for every window w */
static void
add_coded_windows(float out[HW_CNT_DIM], uint32_t key, const float v[HW_CHILD_WINDOWS])
{
	float code[HW_LINK_DIM];

	hw_link_code(key, code);
	for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		if (v[w] != 0.0f)
			for (int j = 0; j < HW_LINK_DIM; j++)
				out[w * HW_LINK_DIM + j] += v[w] * code[j];
}

/* child-count features of one cell (model.h) */
void
hw_child_count_features(const uint32_t *key, const uint16_t *count, const uint32_t *mean_key,
						const float *mean, float out[HW_CNT_DIM])
{
	float v[HW_CHILD_WINDOWS];

	memset(out, 0, sizeof(float) * HW_CNT_DIM);
	for (int l = 0; l < HW_CHILD_LINKS; l++)
	{
		if (key[l] == 0)
			continue;
		for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		{
			uint16_t n = count[l * HW_CHILD_WINDOWS + w];

			v[w] = n ? 0.25f * log1pf((float) n) : 0.0f;
		}
		add_coded_windows(out, key[l], v);
	}
	for (int q = 0; mean_key && q < HW_MEAN_SLOTS; q++)
	{
		if (mean_key[q] == 0)
			continue;
		for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		{
			float x = mean[q * HW_CHILD_WINDOWS + w];

			/* non-finite: never from the sampler (the catalog stores NaN as NULL) */
			v[w] = !isfinite(x) ? 0.0f : 0.5f * (x > 4.0f ? 4.0f : x < -4.0f ? -4.0f : x);
		}
		add_coded_windows(out, mean_key[q], v);
	}
}

/* count ramps of one cell (model.h) */
void
hw_count_ramp_features(const uint32_t *key, const uint16_t *count, float out[HW_CRAMP_DIM])
{
	memset(out, 0, sizeof(float) * HW_CRAMP_DIM);
	for (int l = 0; l < HW_CHILD_LINKS; l++)
	{
		float code[HW_LINK_DIM];

		if (key[l] == 0)
			continue;
		hw_link_code(key[l], code);
		for (int w = 0; w < HW_CHILD_WINDOWS; w++)
		{
			uint16_t n = count[l * HW_CHILD_WINDOWS + w];
			float    lg = n ? log2f(1.0f + (float) n) : 0.0f;

			for (int t = 0; t < HW_CRAMP_STEPS && lg > (float) t; t++)
			{
				float r = lg - (float) t > 1.0f ? 1.0f : lg - (float) t;
				float *o = out + (w * HW_CRAMP_STEPS + t) * HW_LINK_DIM;

				for (int j = 0; j < HW_LINK_DIM; j++)
					o[j] += r * code[j];
			}
		}
	}
}
