/*
 * embed_hash.h: the built-in offline text embedder (the frozen
 * text embeddings of text cells).
 *
 * A deterministic signed feature-hashing embedding: lower-cased words
 * (weight 1) and character trigrams of each word padded with spaces
 * (weight 0.5) are hashed to a dimension in [0, d) and a sign, summed, then
 * L2-normalised.  No model download, no state; the same text always gives the
 * same vector on every machine (the hash is fixed forever: persisted
 * snapshots depend on it).  Text longer than HW_EMBED_MAX_BYTES is cut at
 * that many bytes (on a UTF-8 boundary) before embedding.
 */
#ifndef HW_EMBED_HASH_H
#define HW_EMBED_HASH_H

#include "core/hw_common.h"

#define HW_EMBED_MAX_BYTES 2048		/* bytes of text read per string */
#define HW_EMBED_DEFAULT_DIM 256

/* out[d]: float embedding; all zeros for text without any word character. */
void hw_embed_hash_f32(const char *s, size_t len, int32_t d, float *out);

/* out[d]: same, stored as IEEE half. */
void hw_embed_hash_f16(const char *s, size_t len, int32_t d, uint16_t *out);

/* Length of s cut to at most max_bytes without splitting a UTF-8 sequence. */
size_t hw_utf8_truncate_len(const char *s, size_t len, size_t max_bytes);

#endif
