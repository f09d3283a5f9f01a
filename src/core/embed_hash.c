/*
 * embed_hash.c: the built-in hashing embedder (see embed_hash.h).
 *
 * Why words + trigrams: words carry meaning for free text and category
 * values; trigrams make morphological variants ("returned", "returns") and
 * identifiers ("order_id", "orders") land near each other.  The sign bit
 * keeps the expected inner product of unrelated texts at zero.
 */
#include "core/embed_hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WORD_SEED 0x9e3779b97f4a7c15ULL
#define GRAM_SEED 0xc2b2ae3d27d4eb4fULL
#define MAX_WORD  64				/* bytes of one word that are hashed */

static inline uint64_t
mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static inline uint64_t
fnv(const unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	for (size_t i = 0; i < n; i++)
	{
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return mix64(h);
}

static inline void
add_feature(float *out, int32_t d, uint64_t h, float w)
{
	uint32_t idx = (uint32_t) ((h >> 1) % (uint64_t) d);

	out[idx] += (h & 1) ? w : -w;
}

static inline bool
is_word_byte(unsigned char c)
{
	/* ASCII letters/digits; every byte of a multi-byte UTF-8 character
	 * counts as a word byte so non-Latin words are kept whole */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

size_t
hw_utf8_truncate_len(const char *s, size_t len, size_t max_bytes)
{
	if (len <= max_bytes)
		return len;
	size_t n = max_bytes;

	/* step back over continuation bytes (10xxxxxx) to a character start */
	while (n > 0 && (((unsigned char) s[n]) & 0xC0) == 0x80)
		n--;
	return n;
}

void
hw_embed_hash_f32(const char *s, size_t len, int32_t d, float *out)
{
	unsigned char word[MAX_WORD + 2];

	memset(out, 0, sizeof(float) * (size_t) d);
	if (d <= 0)
		return;
	len = hw_utf8_truncate_len(s, len, HW_EMBED_MAX_BYTES);
	size_t i = 0;

	while (i < len)
	{
		while (i < len && !is_word_byte((unsigned char) s[i]))
			i++;
		if (i >= len)
			break;
		/* word[0] and word[n+1] are the padding spaces of the trigrams */
		size_t n = 0;

		word[0] = ' ';
		while (i < len && is_word_byte((unsigned char) s[i]))
		{
			unsigned char c = (unsigned char) s[i++];

			if (c >= 'A' && c <= 'Z')
				c = (unsigned char) (c - 'A' + 'a');
			if (n < MAX_WORD)
				word[1 + n++] = c;
		}
		word[n + 1] = ' ';
		add_feature(out, d, fnv(word + 1, n, WORD_SEED), 1.0f);
		for (size_t g = 0; g + 3 <= n + 2; g++)
			add_feature(out, d, fnv(word + g, 3, GRAM_SEED), 0.5f);
	}
	double ss = 0;

	for (int32_t k = 0; k < d; k++)
		ss += (double) out[k] * out[k];
	if (ss > 0)
	{
		float inv = (float) (1.0 / sqrt(ss));

		for (int32_t k = 0; k < d; k++)
			out[k] *= inv;
	}
}

void
hw_embed_hash_f16(const char *s, size_t len, int32_t d, uint16_t *out)
{
	float buf[1024];
	float *v = d <= 1024 ? buf : malloc(sizeof(float) * (size_t) d);

	if (v == NULL)
	{
		memset(out, 0, sizeof(uint16_t) * (size_t) (d > 0 ? d : 0));
		return;
	}
	hw_embed_hash_f32(s, len, d, v);
	for (int32_t k = 0; k < d; k++)
		out[k] = hw_f32_to_f16(v[k]);
	if (v != buf)
		free(v);
}
