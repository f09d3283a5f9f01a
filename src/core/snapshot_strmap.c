/* snapshot_strmap.c: string interning (see snapshot_strmap.h). */
#include "core/snapshot_strmap.h"

#include <stdlib.h>
#include <string.h>

HwStrMap *
hw_strmap_new(void)
{
	HwStrMap *m = calloc(1, sizeof(HwStrMap));

	if (!m)
		return NULL;
	m->nslots = 64;
	m->slots = calloc(m->nslots, sizeof(uint32_t));
	if (!m->slots)
	{
		free(m);
		return NULL;
	}
	return m;
}

void
hw_strmap_free(HwStrMap *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m->hash);
	free(m->off);
	free(m->len);
	free(m->arena);
	free(m);
}

static int
rehash(HwStrMap *m)
{
	uint32_t ns = m->nslots * 2;
	uint32_t *s = calloc(ns, sizeof(uint32_t));

	if (!s)
		return HW_ERR_NOMEM;
	for (uint32_t id = 0; id < m->n; id++)
	{
		uint32_t i = (uint32_t) m->hash[id] & (ns - 1);

		while (s[i])
			i = (i + 1) & (ns - 1);
		s[i] = id + 1;
	}
	free(m->slots);
	m->slots = s;
	m->nslots = ns;
	return HW_OK;
}

int
hw_strmap_intern(HwStrMap *m, const char *str, size_t len, uint32_t *id)
{
	uint64_t h = hw_hash_key_text(str, len);
	uint32_t i = (uint32_t) h & (m->nslots - 1);

	while (m->slots[i])
	{
		uint32_t c = m->slots[i] - 1;

		if (m->hash[c] == h && m->len[c] == len && memcmp(m->arena + m->off[c], str, len) == 0)
		{
			*id = c;
			return HW_OK;
		}
		i = (i + 1) & (m->nslots - 1);
	}
	if (m->n == m->cap)
	{
		uint32_t nc = m->cap ? m->cap * 2 : 64;
		uint64_t *nh = realloc(m->hash, sizeof(uint64_t) * nc);

		if (!nh)
			return HW_ERR_NOMEM;
		m->hash = nh;
		uint64_t *no = realloc(m->off, sizeof(uint64_t) * nc);

		if (!no)
			return HW_ERR_NOMEM;
		m->off = no;
		uint32_t *nl = realloc(m->len, sizeof(uint32_t) * nc);

		if (!nl)
			return HW_ERR_NOMEM;
		m->len = nl;
		m->cap = nc;
	}
	if (m->arena_len + len + 1 > m->arena_cap)
	{
		size_t nc = m->arena_cap ? m->arena_cap : 4096;

		while (nc < m->arena_len + len + 1)
			nc *= 2;
		char *na = realloc(m->arena, nc);

		if (!na)
			return HW_ERR_NOMEM;
		m->arena = na;
		m->arena_cap = nc;
	}
	memcpy(m->arena + m->arena_len, str, len);
	m->arena[m->arena_len + len] = 0;
	m->hash[m->n] = h;
	m->off[m->n] = m->arena_len;
	m->len[m->n] = (uint32_t) len;
	m->arena_len += len + 1;
	m->slots[i] = m->n + 1;
	*id = m->n++;
	/* keep the load factor under 1/2 */
	if ((uint64_t) m->n * 2 > m->nslots)
		return rehash(m);
	return HW_OK;
}

const char *
hw_strmap_get(const HwStrMap *m, uint32_t id, size_t *len)
{
	if (id >= m->n)
		return NULL;
	if (len)
		*len = m->len[id];
	return m->arena + m->off[id];
}
