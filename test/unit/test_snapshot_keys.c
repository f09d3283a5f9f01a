/* Foreign keys resolved to edges by key hash (src/core/snapshot_keys.c),
 * against edges written out by hand. */
#include <string.h>

#include "core/snapshot_keys.h"
#include "unit.h"

static uint64_t
key(const char *s)
{
	return s ? hw_hash_key_text(s, strlen(s)) : 0;
}

/* parents: customers "1", "2", "3" (rows 0..2, global offset 10); children:
 * orders of "2", "1", NULL, "9" (no such customer), "2", "3" (rows 0..5,
 * global offset 100).  Expected, by hand: (100,11) (101,10) (104,11) (105,12). */
UNIT_TEST(snapshot_keys_edges_by_hand)
{
	const char *pk[] = {"1", "2", "3"};
	const char *fk[] = {"2", "1", NULL, "9", "2", "3"};
	uint64_t ph[3], ch[6];
	HwKeyIndex ix;
	HwError err = {0};
	uint32_t ec[6], ep[6];
	uint16_t ef[6];
	size_t n = 0;
	const uint32_t want_c[] = {100, 101, 104, 105}, want_p[] = {11, 10, 11, 12};

	for (int i = 0; i < 3; i++)
		ph[i] = key(pk[i]);
	for (int i = 0; i < 6; i++)
		ch[i] = key(fk[i]);
	CHECK_EQ_INT(hw_key_index_build(&ix, ph, 3, &err), HW_OK);
	CHECK_EQ_INT(hw_key_resolve_edges(&ix, ch, 6, 100, 10, 7, ec, ep, ef, &n), 4);
	CHECK_EQ_INT(n, 4);
	for (int i = 0; i < 4; i++)
	{
		CHECK_EQ_INT(ec[i], want_c[i]);
		CHECK_EQ_INT(ep[i], want_p[i]);
		CHECK_EQ_INT(ef[i], 7);
	}
	hw_key_index_free(&ix);
}

/* NULL keys are not indexed, equal keys resolve to their first row, and a
 * table far larger than the initial size (collisions, growth) still finds
 * every key. */
UNIT_TEST(snapshot_keys_index_lookup)
{
	enum { N = 5000 };
	static uint64_t h[N];
	HwKeyIndex ix;
	HwError err = {0};
	char buf[32];

	for (int i = 0; i < N; i++)
	{
		snprintf(buf, sizeof(buf), "%d", i);
		h[i] = key(buf);
	}
	h[7] = 0;					/* a NULL key */
	h[9] = h[3];				/* a duplicate of row 3 */
	CHECK_EQ_INT(hw_key_index_build(&ix, h, N, &err), HW_OK);
	CHECK(ix.mask + 1 >= 2 * (uint64_t) N);
	CHECK_EQ_INT(hw_key_index_lookup(&ix, h[3]), 3);
	CHECK_EQ_INT(hw_key_index_lookup(&ix, key("7")), -1);
	CHECK_EQ_INT(hw_key_index_lookup(&ix, key("no such key")), -1);
	for (int i = 0; i < N; i++)
		if (i != 7 && i != 9)
			CHECK_EQ_INT(hw_key_index_lookup(&ix, h[i]), i);
	hw_key_index_free(&ix);
	CHECK_EQ_INT(hw_key_index_lookup(&ix, h[0]), -1);
}
