/* test_snapshot.c: snapshot builders, lookups, and (de)serialization. */
#include "unit.h"
#include "core/snapshot.h"
#include "core/snapshot_build.h"

#include <stdlib.h>
#include <string.h>

static char *
dupstr(const char *s)
{
	char *d = malloc(strlen(s) + 1);

	strcpy(d, s);
	return d;
}

/*
 * parent(id PK, ts timestamp) 3 rows; child(id PK, parent_id FK, x float)
 * 5 rows: children 0,1 -> parent 2; child 2 -> parent 0; child 3 -> NULL;
 * child 4 -> parent 2.  Plus a self-FK child.prev -> child (row r -> r-1).
 */
static HwSnapshot *
make_snapshot(void)
{
	HwSnapshot *s = calloc(1, sizeof(HwSnapshot));
	HwError err;

	s->ntables = 2;
	s->tables = calloc(2, sizeof(HwTable));
	HwTable *p = &s->tables[0], *c = &s->tables[1];

	p->name = dupstr("parent");
	p->nrows = 3;
	p->ncols = 2;
	p->cols = calloc(2, sizeof(HwColumn));
	p->cols[0].name = dupstr("id");
	p->cols[0].stype = HW_ST_IDENTIFIER;
	p->cols[0].global_id = 0;
	p->cols[0].valid = calloc(3, 1);
	memset(p->cols[0].valid, 1, 3);
	p->cols[1].name = dupstr("ts");
	p->cols[1].stype = HW_ST_TIMESTAMP;
	p->cols[1].global_id = 1;
	p->cols[1].valid = calloc(3, 1);
	p->cols[1].i64 = calloc(3, sizeof(int64_t));
	p->cols[1].valid[0] = 1; p->cols[1].i64[0] = 1000;
	p->cols[1].valid[1] = 0;
	p->cols[1].valid[2] = 1; p->cols[1].i64[2] = -5;
	p->cols[1].null_count = 1;
	p->time_col = 1;
	p->key_hash = malloc(3 * sizeof(uint64_t));
	for (int r = 0; r < 3; r++)
	{
		char k[8];

		snprintf(k, sizeof(k), "%d", 10 + r);
		p->key_hash[r] = hw_hash_key_text(k, strlen(k));
	}

	c->name = dupstr("child");
	c->nrows = 5;
	c->ncols = 3;
	c->time_col = -1;
	c->cols = calloc(3, sizeof(HwColumn));
	c->cols[0].name = dupstr("id");
	c->cols[0].stype = HW_ST_IDENTIFIER;
	c->cols[0].global_id = 2;
	c->cols[1].name = dupstr("blob");
	c->cols[1].stype = HW_ST_IGNORED;
	c->cols[1].global_id = -1;
	c->cols[2].name = dupstr("x");
	c->cols[2].stype = HW_ST_NUMERICAL;
	c->cols[2].global_id = 3;
	c->cols[2].valid = malloc(5);
	c->cols[2].f32 = malloc(5 * sizeof(float));
	for (int r = 0; r < 5; r++)
	{
		c->cols[2].valid[r] = 1;
		c->cols[2].f32[r] = 0.5f * r;
	}
	c->cols[2].mean = 3;
	c->cols[2].std = 2;
	s->nfks = 2;
	s->fks = calloc(2, sizeof(HwForeignKey));
	s->fks[0].name = dupstr("child_parent_fk");
	s->fks[0].child_table = 1;
	s->fks[0].parent_table = 0;
	s->fks[1].name = dupstr("child_prev_fk");
	s->fks[1].child_table = 1;
	s->fks[1].parent_table = 1;
	s->d_text = 4;
	s->ncolumns = 4;
	s->col_emb = calloc(16, sizeof(uint16_t));
	for (int i = 0; i < 16; i++)
		s->col_emb[i] = hw_f32_to_f16((float) i);
	s->ncat = 0;
	s->ntext = 1;
	s->text_emb = calloc(4, sizeof(uint16_t));
	s->ts_mean_us = 497.5;
	s->ts_std_us = 502.5;
	if (snapshot_build_rows(s, &err) != HW_OK || snapshot_build_key_order(p, &err) != HW_OK)
		return NULL;
	/* edges given deliberately out of (fk, child) order */
	uint32_t ch[] = {3 + 4, 3 + 0, 3 + 2, 3 + 1, 3 + 4, 3 + 3, 3 + 2, 3 + 1};
	uint32_t pa[] = {2, 2, 0, 2, 3 + 3, 3 + 2, 3 + 1, 3 + 0};
	uint16_t fk[] = {0, 0, 0, 0, 1, 1, 1, 1};

	if (snapshot_build_csr(s, 8, ch, pa, fk, &err) != HW_OK)
		return NULL;
	return s;
}

UNIT_TEST(snapshot_rows_and_time)
{
	HwSnapshot *s = make_snapshot();

	CHECK(s != NULL);
	CHECK_EQ_INT(s->nrows, 8);
	CHECK_EQ_INT(s->tables[1].row_offset, 3);
	CHECK_EQ_INT(s->row_table[2], 0);
	CHECK_EQ_INT(s->row_table[3], 1);
	CHECK_EQ_INT(s->row_time_us[0], 1000);
	CHECK(s->row_time_us[1] == HW_NO_TIME);	/* NULL time */
	CHECK_EQ_INT(s->row_time_us[2], -5);
	CHECK(s->row_time_us[5] == HW_NO_TIME);	/* table without time column */
	snapshot_free(s);
}

UNIT_TEST(snapshot_csr_matches_edge_list)
{
	HwSnapshot *s = make_snapshot();

	CHECK(s != NULL);
	/* reference: brute force over the edge list, sorted as documented */
	CHECK_EQ_INT(s->fp_off[8], 8);
	CHECK_EQ_INT(s->pf_off[8], 8);
	/* child 1 (global 4): parents 2 (fk0) then 3 (fk1, child row 0) */
	CHECK_EQ_INT(s->fp_off[5] - s->fp_off[4], 2);
	CHECK_EQ_INT(s->fp_dst[s->fp_off[4]], 2);
	CHECK_EQ_INT(s->fp_fk[s->fp_off[4]], 0);
	CHECK_EQ_INT(s->fp_dst[s->fp_off[4] + 1], 3);
	CHECK_EQ_INT(s->fp_fk[s->fp_off[4] + 1], 1);
	/* child 0 (global 3): only parent 2 */
	CHECK_EQ_INT(s->fp_off[4] - s->fp_off[3], 1);
	/* parent 2: children 3, 4, 7 ascending (fk 0) */
	CHECK_EQ_INT(s->pf_off[3] - s->pf_off[2], 3);
	CHECK_EQ_INT(s->pf_dst[s->pf_off[2]], 3);
	CHECK_EQ_INT(s->pf_dst[s->pf_off[2] + 1], 4);
	CHECK_EQ_INT(s->pf_dst[s->pf_off[2] + 2], 7);
	/* parent 1 has no children */
	CHECK_EQ_INT(s->pf_off[2] - s->pf_off[1], 0);
	/* every F->P edge appears once as P->F */
	for (uint32_t r = 0; r < s->nrows; r++)
		for (uint64_t e = s->fp_off[r]; e < s->fp_off[r + 1]; e++)
		{
			uint32_t p = s->fp_dst[e];
			int found = 0;

			for (uint64_t q = s->pf_off[p]; q < s->pf_off[p + 1]; q++)
				found += s->pf_dst[q] == r && s->pf_fk[q] == s->fp_fk[e];
			CHECK_EQ_INT(found, 1);
		}
	snapshot_free(s);
}

UNIT_TEST(snapshot_find_row_by_key)
{
	HwSnapshot *s = make_snapshot();

	CHECK(s != NULL);
	CHECK_EQ_INT(snapshot_find_row(s, 0, hw_hash_key_text("10", 2)), 0);
	CHECK_EQ_INT(snapshot_find_row(s, 0, hw_hash_key_text("12", 2)), 2);
	CHECK_EQ_INT(snapshot_find_row(s, 0, hw_hash_key_text("13", 2)), -1);
	CHECK_EQ_INT(snapshot_find_row(s, 1, hw_hash_key_text("10", 2)), -1);	/* no PK */
	CHECK_EQ_INT(snapshot_find_row(s, 7, 1), -1);
	int32_t t = -9, c = -9;

	CHECK(snapshot_column_by_global_id(s, 3, &t, &c));
	CHECK_EQ_INT(t, 1);
	CHECK_EQ_INT(c, 2);
	CHECK(!snapshot_column_by_global_id(s, 4, &t, &c));
	CHECK(!snapshot_column_by_global_id(s, -1, &t, &c));
	snapshot_free(s);
}

UNIT_TEST(snapshot_serialize_roundtrip)
{
	HwSnapshot *s = make_snapshot();
	HwSnapshot *r = NULL;
	uint8_t *buf = NULL, *buf2 = NULL;
	size_t len = 0, len2 = 0;
	HwError err;

	CHECK(s != NULL);
	CHECK_EQ_INT(snapshot_serialize(s, &buf, &len, &err), HW_OK);
	CHECK(memcmp(buf, "HWSNAP", 6) == 0);
	CHECK_EQ_INT(snapshot_deserialize(buf, len, &r, &err), HW_OK);
	CHECK_EQ_INT(r->ntables, 2);
	CHECK_EQ_INT(r->nrows, 8);
	CHECK(strcmp(r->tables[1].name, "child") == 0);
	CHECK(strcmp(r->tables[1].cols[2].name, "x") == 0);
	CHECK_CLOSE(r->tables[1].cols[2].f32[4], 2.0, 0, 0);
	CHECK(r->tables[1].cols[1].valid == NULL);
	CHECK_EQ_INT(r->tables[0].cols[1].i64[2], -5);
	CHECK_EQ_INT(snapshot_find_row(r, 0, hw_hash_key_text("11", 2)), 1);
	CHECK_CLOSE(hw_f16_to_f32(r->col_emb[15]), 15.0, 0, 0);
	CHECK_CLOSE(r->ts_std_us, 502.5, 0, 0);
	CHECK(strcmp(r->fks[1].name, "child_prev_fk") == 0);
	/* a second serialization is byte-identical */
	CHECK_EQ_INT(snapshot_serialize(r, &buf2, &len2, &err), HW_OK);
	CHECK_EQ_INT(len2, len);
	CHECK(memcmp(buf, buf2, len) == 0);
	free(buf2);
	snapshot_free(r);

	/* every truncation is rejected, never crashes */
	for (size_t cut = 0; cut < len; cut += 7)
	{
		r = NULL;
		CHECK(snapshot_deserialize(buf, cut, &r, &err) == HW_ERR_CORRUPT);
		CHECK(r == NULL);
	}
	/* another format version is rejected with a message naming both */
	buf[8] = (uint8_t) (HW_SNAPSHOT_FORMAT_VERSION + 1);
	CHECK(snapshot_deserialize(buf, len, &r, &err) == HW_ERR_CORRUPT);
	CHECK(strstr(err.msg, "format version") != NULL);
	free(buf);
	snapshot_free(s);
}

#include "core/snapshot_strmap.h"

UNIT_TEST(strmap_interns_distinct_strings)
{
	HwStrMap *m = hw_strmap_new();
	char buf[32];
	uint32_t id;

	CHECK(m != NULL);
	/* ids are first-seen order; a second pass finds the same ids */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 5000; i++)
		{
			int n = snprintf(buf, sizeof(buf), "value %d", i);

			CHECK_EQ_INT(hw_strmap_intern(m, buf, (size_t) n, &id), HW_OK);
			CHECK_EQ_INT(id, i);
		}
	CHECK_EQ_INT(m->n, 5000);
	/* embedded NUL and empty strings are distinct values */
	CHECK_EQ_INT(hw_strmap_intern(m, "", 0, &id), HW_OK);
	CHECK_EQ_INT(id, 5000);
	CHECK_EQ_INT(hw_strmap_intern(m, "a\0b", 3, &id), HW_OK);
	CHECK_EQ_INT(id, 5001);
	size_t len;

	CHECK(strcmp(hw_strmap_get(m, 1234, &len), "value 1234") == 0);
	CHECK_EQ_INT(len, 10);
	CHECK(hw_strmap_get(m, 6000, NULL) == NULL);
	hw_strmap_free(m);
}

UNIT_TEST(snapshot_empty_table_roundtrip)
{
	/* a table with no rows and no edges survives serialization */
	HwSnapshot *s = calloc(1, sizeof(HwSnapshot));
	HwSnapshot *r = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	HwError err;

	s->ntables = 1;
	s->tables = calloc(1, sizeof(HwTable));
	s->tables[0].name = dupstr("empty");
	s->tables[0].time_col = -1;
	s->tables[0].key_hash = malloc(1);
	s->d_text = 8;
	CHECK_EQ_INT(snapshot_build_rows(s, &err), HW_OK);
	CHECK_EQ_INT(snapshot_build_key_order(&s->tables[0], &err), HW_OK);
	CHECK_EQ_INT(snapshot_build_csr(s, 0, NULL, NULL, NULL, &err), HW_OK);
	CHECK_EQ_INT(snapshot_serialize(s, &buf, &len, &err), HW_OK);
	CHECK_EQ_INT(snapshot_deserialize(buf, len, &r, &err), HW_OK);
	CHECK_EQ_INT(r->nrows, 0);
	CHECK_EQ_INT(r->fp_off[0], 0);
	CHECK_EQ_INT(snapshot_find_row(r, 0, 42), -1);
	free(buf);
	snapshot_free(r);
	snapshot_free(s);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

UNIT_TEST(snapshot_key_order_matches_qsort)
{
	/* radix order against a qsort of the hashes; duplicates keep row order */
	HwTable tb = {0};
	HwError err;
	uint32_t n = 50000;
	uint64_t *ref = malloc(sizeof(uint64_t) * n);

	tb.name = "t";
	tb.nrows = n;
	tb.key_hash = malloc(sizeof(uint64_t) * n);
	for (uint32_t r = 0; r < n; r++)
	{
		/* every 7th row repeats an earlier hash */
		tb.key_hash[r] = (r % 7 == 6) ? tb.key_hash[r - 3] : hw_hash_key_text((const char *) &r, sizeof(r));
		ref[r] = tb.key_hash[r];
	}
	CHECK_EQ_INT(snapshot_build_key_order(&tb, &err), HW_OK);
	qsort(ref, n, sizeof(uint64_t), cmp_u64);
	for (uint32_t i = 0; i < n; i++)
	{
		CHECK(tb.key_hash[tb.key_order[i]] == ref[i]);
		if (i > 0 && ref[i] == ref[i - 1])
			CHECK(tb.key_order[i] > tb.key_order[i - 1]);
	}
	free(ref);
	free(tb.key_hash);
	free(tb.key_order);
}
