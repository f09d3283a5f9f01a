/*
 * snapshot_keys.h: resolving foreign keys to edges by key hash (no server).
 *
 * A row's key is the hash of its canonical key text (hw_hash_key_text;
 * 0 stands for a NULL key).  A child's foreign key columns and the parent's
 * referenced columns give the same key text, so an edge is a hash lookup:
 * an open-addressing index over the parent's key hashes, one or two cache
 * misses per child row instead of a binary search or an SQL join.
 */
#ifndef HW_SNAPSHOT_KEYS_H
#define HW_SNAPSHOT_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "core/hw_common.h"

/* hash -> first row with that hash (open addressing, size a power of two at
 * least twice the rows); malloc'd arrays, free with hw_key_index_free. */
typedef struct HwKeyIndex
{
	uint64_t *slot_hash;    /* [mask + 1] */
	uint32_t *slot_row;     /* [mask + 1], UINT32_MAX = empty */
	uint64_t  mask;
} HwKeyIndex;

/* Builds the index of hash[nrows] (rows with hash 0, NULL keys, are left
 * out; of equal hashes the first row wins).  HW_ERR_NOMEM on allocation
 * failure (ix then holds nothing). */
int     hw_key_index_build(HwKeyIndex *ix, const uint64_t *hash, uint32_t nrows, HwError *err);

/* The row whose key hash is h, or -1. */
int64_t hw_key_index_lookup(const HwKeyIndex *ix, uint64_t h);

void    hw_key_index_free(HwKeyIndex *ix);

/* The edges of one foreign key (number fk): for each child row r < nchild
 * whose key child_hash[r] is found in the parent's index as row p, appends
 * (child_offset + r, parent_offset + p, fk) to e_child / e_parent / e_fk
 * at position *nedges and advances it.  A NULL child key (0) or a key no
 * parent row has (a foreign key not validated) gives no edge.  The arrays
 * need room for nchild more edges.  Returns the edges added. */
size_t  hw_key_resolve_edges(const HwKeyIndex *parent, const uint64_t *child_hash, uint32_t nchild,
							 uint32_t child_offset, uint32_t parent_offset, uint16_t fk,
							 uint32_t *e_child, uint32_t *e_parent, uint16_t *e_fk, size_t *nedges);

#endif
