/*
 * snapshot_strmap.h: string interning for the snapshot builder (distinct
 * category values and text cells get dense ids 0..n-1 in first-seen order).
 * Plain C, malloc-owned, open addressing on a 64-bit hash.
 */
#ifndef HW_SNAPSHOT_STRMAP_H
#define HW_SNAPSHOT_STRMAP_H

#include "core/hw_common.h"

typedef struct HwStrMap
{
	uint32_t  n;            /* distinct strings */
	uint32_t  nslots;       /* power of two */
	uint32_t *slots;        /* [nslots] id+1, 0 = empty */
	uint64_t *hash;         /* [cap] hash of each id */
	uint64_t *off;          /* [cap] offset of each id in arena */
	uint32_t *len;          /* [cap] byte length of each id */
	uint32_t  cap;
	char     *arena;        /* strings, each followed by a NUL */
	size_t    arena_len, arena_cap;
} HwStrMap;

HwStrMap *hw_strmap_new(void);
void      hw_strmap_free(HwStrMap *m);
/* Id of s[0..len) (added when new); returns HW_OK or HW_ERR_NOMEM. */
int       hw_strmap_intern(HwStrMap *m, const char *s, size_t len, uint32_t *id);
/* NUL-terminated string of id (len in *len when not NULL). */
const char *hw_strmap_get(const HwStrMap *m, uint32_t id, size_t *len);

#endif
