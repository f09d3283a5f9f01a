/*
 * state_blob.c: test helper for model state blobs (state_blob.h).
 */
#include "state_blob.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a 64, as model_state.c checksums a blob */
static uint64_t
fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
	{
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint8_t *
unit_state_as_version(const uint8_t *blob, size_t len, uint32_t ver, uint32_t drop, size_t *olen)
{
	uint32_t cb;
	uint8_t *o = malloc(len - drop);
	uint64_t h;

	memcpy(&cb, blob + 8, 4);
	memcpy(o, blob, 12 + cb - drop);
	memcpy(o + 12 + cb - drop, blob + 12 + cb, len - 12 - cb);
	cb -= drop;
	memcpy(o + 4, &ver, 4);
	memcpy(o + 8, &cb, 4);
	*olen = len - drop;
	h = fnv64(o, *olen - 8);
	memcpy(o + *olen - 8, &h, 8);
	return o;
}
