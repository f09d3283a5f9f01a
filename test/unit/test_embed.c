/* test_embed.c: the built-in hashing embedder against an independent reference. */
#include "unit.h"
#include "core/embed_hash.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Reference: the documented feature set, computed the obvious way (split on
 * non-alphanumerics with ctype, build the padded word as a C string). */
static uint64_t
ref_hash(const char *p, size_t n, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	for (size_t i = 0; i < n; i++)
	{
		h ^= (unsigned char) p[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
	return h;
}

static void
ref_embed(const char *s, int d, double *out)
{
	char word[256];
	size_t n = 0;

	for (int k = 0; k < d; k++)
		out[k] = 0;
	for (size_t i = 0;; i++)
	{
		char ch = s[i];

		if (ch && isalnum((unsigned char) ch))
		{
			word[n++] = (char) tolower((unsigned char) ch);
			continue;
		}
		if (n > 0)
		{
			char padded[260];
			uint64_t h = ref_hash(word, n, 0x9e3779b97f4a7c15ULL);

			out[(h >> 1) % d] += (h & 1) ? 1.0 : -1.0;
			snprintf(padded, sizeof(padded), " %.*s ", (int) n, word);
			for (size_t g = 0; g + 3 <= n + 2; g++)
			{
				h = ref_hash(padded + g, 3, 0xc2b2ae3d27d4eb4fULL);
				out[(h >> 1) % d] += (h & 1) ? 0.5 : -0.5;
			}
			n = 0;
		}
		if (!ch)
			break;
	}
	double ss = 0;

	for (int k = 0; k < d; k++)
		ss += out[k] * out[k];
	for (int k = 0; k < d && ss > 0; k++)
		out[k] /= sqrt(ss);
}

static double
dot(const float *a, const float *b, int d)
{
	double s = 0;

	for (int k = 0; k < d; k++)
		s += (double) a[k] * b[k];
	return s;
}

UNIT_TEST(embed_hash_matches_reference)
{
	const char *texts[] = {"status is shipped", "Order_ID of orders: the order's key",
		"a", "Hello, World! 42 times", "  leading and trailing  ", "x-y-z"};
	float v[256];
	double ref[256];

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
	{
		hw_embed_hash_f32(texts[i], strlen(texts[i]), 256, v);
		ref_embed(texts[i], 256, ref);
		for (int k = 0; k < 256; k++)
			CHECK_CLOSE(v[k], ref[k], 1e-6, 1e-5);
		CHECK_CLOSE(dot(v, v, 256), 1.0, 1e-5, 0);
	}
}

UNIT_TEST(embed_hash_properties)
{
	float a[256], b[256], c[256];
	uint16_t h[256];

	/* empty and punctuation-only text: zero vector, no NaN */
	hw_embed_hash_f32("", 0, 256, a);
	CHECK_CLOSE(dot(a, a, 256), 0.0, 0, 0);
	hw_embed_hash_f32("!!", 2, 256, a);
	CHECK_CLOSE(dot(a, a, 256), 0.0, 0, 0);
	/* case-insensitive, deterministic */
	hw_embed_hash_f32("Shipped", 7, 256, a);
	hw_embed_hash_f32("shipped", 7, 256, b);
	CHECK_CLOSE(dot(a, b, 256), 1.0, 1e-6, 0);
	/* related texts are closer than unrelated ones */
	hw_embed_hash_f32("status is returned", 18, 256, a);
	hw_embed_hash_f32("status is returns", 17, 256, b);
	hw_embed_hash_f32("price of products", 17, 256, c);
	CHECK(dot(a, b, 256) > dot(a, c, 256) + 0.2);
	/* f16 output equals rounded f32 output */
	hw_embed_hash_f16("status is returned", 18, 256, h);
	for (int k = 0; k < 256; k++)
		CHECK_CLOSE(hw_f16_to_f32(h[k]), a[k], 1e-3, 1e-3);
}

UNIT_TEST(embed_hash_truncates_long_text)
{
	size_t n = 3 * HW_EMBED_MAX_BYTES;
	char *s = malloc(n + 1);
	float a[64], b[64];

	for (size_t i = 0; i < n; i++)
		s[i] = (char) ('a' + (i % 7 == 6 ? ' ' - 'a' : (int) (i % 7)));
	s[n] = 0;
	hw_embed_hash_f32(s, n, 64, a);
	hw_embed_hash_f32(s, HW_EMBED_MAX_BYTES, 64, b);
	for (int k = 0; k < 64; k++)
		CHECK_CLOSE(a[k], b[k], 0, 0);
	/* a multi-byte character straddling the limit is dropped whole */
	memset(s, 'a', n);
	s[HW_EMBED_MAX_BYTES - 1] = (char) 0xC3;
	s[HW_EMBED_MAX_BYTES] = (char) 0xA9;
	CHECK_EQ_INT(hw_utf8_truncate_len(s, n, HW_EMBED_MAX_BYTES), HW_EMBED_MAX_BYTES - 1);
	CHECK_EQ_INT(hw_utf8_truncate_len(s, 10, HW_EMBED_MAX_BYTES), 10);
	free(s);
}
