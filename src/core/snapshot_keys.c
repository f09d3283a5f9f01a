/*
 * snapshot_keys.c: foreign keys resolved to edges by key hash (see
 * snapshot_keys.h).
 */
#include "core/snapshot_keys.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t
first_slot(const HwKeyIndex *ix, uint64_t h)
{
	/* the hashes are already mixed; folding the high bits in keeps small
	 * tables from depending on the low bits alone */
	return (h ^ (h >> 29)) & ix->mask;
}

int
hw_key_index_build(HwKeyIndex *ix, const uint64_t *hash, uint32_t nrows, HwError *err)
{
	uint64_t size = 64;

	memset(ix, 0, sizeof(*ix));
	while (size < (uint64_t) nrows * 2)
		size *= 2;
	ix->slot_hash = malloc(sizeof(uint64_t) * size);
	ix->slot_row = malloc(sizeof(uint32_t) * size);
	if (ix->slot_hash == NULL || ix->slot_row == NULL)
	{
		hw_key_index_free(ix);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory indexing %u keys", nrows);
	}
	memset(ix->slot_row, 0xff, sizeof(uint32_t) * size);
	ix->mask = size - 1;
	for (uint32_t r = 0; r < nrows; r++)
	{
		uint64_t h = hash[r];
		uint64_t i;

		if (h == 0)
			continue;			/* NULL key */
		i = first_slot(ix, h);
		while (ix->slot_row[i] != UINT32_MAX && ix->slot_hash[i] != h)
			i = (i + 1) & ix->mask;
		if (ix->slot_row[i] == UINT32_MAX)	/* first row of equal keys wins */
		{
			ix->slot_hash[i] = h;
			ix->slot_row[i] = r;
		}
	}
	return HW_OK;
}

int64_t
hw_key_index_lookup(const HwKeyIndex *ix, uint64_t h)
{
	uint64_t i;

	if (ix->slot_row == NULL)
		return -1;
	i = first_slot(ix, h);
	while (ix->slot_row[i] != UINT32_MAX)
	{
		if (ix->slot_hash[i] == h)
			return ix->slot_row[i];
		i = (i + 1) & ix->mask;
	}
	return -1;
}

void
hw_key_index_free(HwKeyIndex *ix)
{
	free(ix->slot_hash);
	free(ix->slot_row);
	ix->slot_hash = NULL;
	ix->slot_row = NULL;
	ix->mask = 0;
}

size_t
hw_key_resolve_edges(const HwKeyIndex *parent, const uint64_t *child_hash, uint32_t nchild,
					 uint32_t child_offset, uint32_t parent_offset, uint16_t fk,
					 uint32_t *e_child, uint32_t *e_parent, uint16_t *e_fk, size_t *nedges)
{
	size_t added = 0;

	for (uint32_t r = 0; r < nchild; r++)
	{
		int64_t p;

		if (child_hash[r] == 0)
			continue;			/* NULL foreign key: no edge */
		p = hw_key_index_lookup(parent, child_hash[r]);
		if (p < 0)
			continue;			/* dangling (foreign key not validated): no edge */
		e_child[*nedges] = child_offset + r;
		e_parent[*nedges] = parent_offset + (uint32_t) p;
		e_fk[*nedges] = fk;
		(*nedges)++;
		added++;
	}
	return added;
}
