/*
 * synth_snapshot.c: builder of small hand-made and random snapshots for
 * tests and benchmarks (see synth_snapshot.h).  Uses the catalog's builder
 * helpers (snapshot_build.h) so the CSR/key layout is the real one.
 */
#include "synth_snapshot.h"
#include "core/snapshot_build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* builder state kept beside the snapshot (edges until synth_finish) */
typedef struct SynthState
{
	HwSnapshot *s;
	size_t      nedges, cap;
	uint32_t   *child, *parent;
	uint16_t   *fk;
	struct SynthState *next;
} SynthState;

static SynthState *states;

static SynthState *
state_of(const HwSnapshot *s)
{
	for (SynthState *st = states; st; st = st->next)
		if (st->s == s)
			return st;
	return NULL;
}

static char *
xstrdup(const char *s)
{
	size_t n = strlen(s);
	char *d = malloc(n + 1);

	memcpy(d, s, n + 1);
	return d;
}

HwSnapshot *
synth_new(int32_t d_text)
{
	HwSnapshot *s = calloc(1, sizeof(HwSnapshot));
	SynthState *st = calloc(1, sizeof(SynthState));

	s->d_text = d_text;
	st->s = s;
	st->next = states;
	states = st;
	return s;
}

int
synth_add_table(HwSnapshot *s, const char *name, uint32_t nrows, const char *spec, int time_col)
{
	s->tables = realloc(s->tables, sizeof(HwTable) * (size_t) (s->ntables + 1));
	HwTable *tb = &s->tables[s->ntables];

	memset(tb, 0, sizeof(*tb));
	tb->name = xstrdup(name);
	tb->nrows = nrows;
	tb->time_col = time_col;
	/* parse "name:stype,..." */
	char *sp = xstrdup(spec);
	int n = 1;

	for (char *p = sp; *p; p++)
		n += *p == ',';
	tb->cols = calloc((size_t) n, sizeof(HwColumn));
	tb->ncols = 0;
	size_t m = nrows ? nrows : 1;

	for (char *tok = strtok(sp, ","); tok; tok = strtok(NULL, ","))
	{
		char *colon = strchr(tok, ':');
		HwColumn *c = &tb->cols[tb->ncols++];

		*colon = 0;
		c->name = xstrdup(tok);
		c->stype = (int8_t) hw_stype_from_name(colon + 1);
		if (c->stype < 0)
		{
			fprintf(stderr, "synth: unknown stype %s\n", colon + 1);
			c->stype = HW_ST_IGNORED;
		}
		c->valid = malloc(m);
		memset(c->valid, 1, m);
		switch (c->stype)
		{
			case HW_ST_NUMERICAL: c->f32 = calloc(m, sizeof(float)); break;
			case HW_ST_TIMESTAMP: c->i64 = calloc(m, sizeof(int64_t)); break;
			case HW_ST_BOOLEAN: c->u8 = calloc(m, 1); break;
			case HW_ST_CATEGORICAL:
			case HW_ST_TEXT: c->u32 = calloc(m, sizeof(uint32_t)); break;
			default: break;
		}
	}
	free(sp);
	tb->key_hash = malloc(sizeof(uint64_t) * m);
	for (uint32_t r = 0; r < nrows; r++)
	{
		char buf[16];
		int len = snprintf(buf, sizeof(buf), "%u", r + 1);

		tb->key_hash[r] = hw_hash_key_text(buf, (size_t) len);
	}
	/* row offsets are known as tables are added */
	uint32_t off = 0;

	for (int t = 0; t < s->ntables; t++)
		off += s->tables[t].nrows;
	tb->row_offset = off;
	return s->ntables++;
}

int
synth_col_index(const HwSnapshot *s, int table, const char *col)
{
	const HwTable *tb = &s->tables[table];

	for (int c = 0; c < tb->ncols; c++)
		if (strcmp(tb->cols[c].name, col) == 0)
			return c;
	return -1;
}

HwColumn *
synth_col(HwSnapshot *s, int table, const char *col)
{
	int c = synth_col_index(s, table, col);

	return c < 0 ? NULL : &s->tables[table].cols[c];
}

void
synth_set_ncat(HwSnapshot *s, int table, const char *col, uint32_t k)
{
	synth_col(s, table, col)->cat_emb_count = k;
}

void
synth_set_ntext(HwSnapshot *s, uint32_t ntext)
{
	s->ntext = ntext;
}

int
synth_add_fk(HwSnapshot *s, const char *name, int child_table, int parent_table)
{
	s->fks = realloc(s->fks, sizeof(HwForeignKey) * (size_t) (s->nfks + 1));
	s->fks[s->nfks].name = xstrdup(name);
	s->fks[s->nfks].child_table = child_table;
	s->fks[s->nfks].parent_table = parent_table;
	return s->nfks++;
}

uint32_t
synth_row(const HwSnapshot *s, int table, uint32_t r)
{
	return s->tables[table].row_offset + r;
}

void
synth_edge(HwSnapshot *s, uint32_t child_row, uint32_t parent_row, int fk)
{
	SynthState *st = state_of(s);

	if (st->nedges == st->cap)
	{
		st->cap = st->cap ? st->cap * 2 : 1024;
		st->child = realloc(st->child, sizeof(uint32_t) * st->cap);
		st->parent = realloc(st->parent, sizeof(uint32_t) * st->cap);
		st->fk = realloc(st->fk, sizeof(uint16_t) * st->cap);
	}
	st->child[st->nedges] = child_row;
	st->parent[st->nedges] = parent_row;
	st->fk[st->nedges] = (uint16_t) fk;
	st->nedges++;
}

static uint16_t *
random_emb(uint64_t n, int32_t d, uint64_t salt)
{
	uint16_t *e = malloc(sizeof(uint16_t) * (size_t) (n * (uint64_t) d + 1));
	uint64_t x = salt * 0x9e3779b97f4a7c15ULL + 1;

	for (uint64_t i = 0; i < n * (uint64_t) d; i++)
	{
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		float v = (float) ((double) (x >> 11) * 0x1.0p-53 * 2.0 - 1.0) * 0.1f;

		e[i] = hw_f32_to_f16(v);
	}
	return e;
}

int
synth_finish(HwSnapshot *s)
{
	HwError err = {0};
	SynthState *st = state_of(s);
	int32_t gid = 0;
	uint32_t cat = 0;
	double ts_sum = 0, ts_ss = 0;
	uint64_t ts_n = 0;

	for (int t = 0; t < s->ntables; t++)
	{
		HwTable *tb = &s->tables[t];

		for (int c = 0; c < tb->ncols; c++)
		{
			HwColumn *col = &tb->cols[c];

			col->global_id = col->stype == HW_ST_IGNORED ? -1 : gid++;
			col->null_count = 0;
			for (uint32_t r = 0; r < tb->nrows; r++)
				col->null_count += !col->valid[r];
			if (col->stype == HW_ST_NUMERICAL)
			{
				double sum = 0, ss = 0;
				uint64_t n = 0;

				for (uint32_t r = 0; r < tb->nrows; r++)
					if (col->valid[r])
					{
						sum += col->f32[r];
						n++;
					}
				col->mean = n ? sum / n : 0;
				for (uint32_t r = 0; r < tb->nrows; r++)
					if (col->valid[r])
						ss += (col->f32[r] - col->mean) * (col->f32[r] - col->mean);
				col->std = n > 1 ? sqrt(ss / n) : 0;
				if (!(col->std > 0))
					col->std = 1;
				for (uint32_t r = 0; r < tb->nrows; r++)
					col->f32[r] = col->valid[r] ? (float) ((col->f32[r] - col->mean) / col->std) : 0.0f;
			}
			else if (col->stype == HW_ST_TIMESTAMP)
			{
				for (uint32_t r = 0; r < tb->nrows; r++)
					if (col->valid[r])
					{
						ts_sum += (double) col->i64[r];
						ts_n++;
					}
			}
			else if (col->stype == HW_ST_CATEGORICAL)
			{
				col->cat_emb_start = cat;
				for (uint32_t r = 0; r < tb->nrows; r++)
					col->u32[r] = col->valid[r] ? col->u32[r] + cat : 0;
				cat += col->cat_emb_count;
			}
		}
		if (snapshot_build_key_order(tb, &err) != HW_OK)
			return -1;
	}
	s->ts_mean_us = ts_n ? ts_sum / ts_n : 0;
	for (int t = 0; t < s->ntables; t++)
		for (int c = 0; c < s->tables[t].ncols; c++)
		{
			HwColumn *col = &s->tables[t].cols[c];

			if (col->stype == HW_ST_TIMESTAMP)
				for (uint32_t r = 0; r < s->tables[t].nrows; r++)
					if (col->valid[r])
						ts_ss += ((double) col->i64[r] - s->ts_mean_us) * ((double) col->i64[r] - s->ts_mean_us);
		}
	s->ts_std_us = ts_n > 1 ? sqrt(ts_ss / ts_n) : 1;
	if (!(s->ts_std_us > 0))
		s->ts_std_us = 1;
	s->ncolumns = gid;
	s->ncat = cat;
	if (snapshot_build_rows(s, &err) != HW_OK)
		return -1;
	if (snapshot_build_csr(s, st ? st->nedges : 0, st ? st->child : NULL, st ? st->parent : NULL,
						   st ? st->fk : NULL, &err) != HW_OK)
	{
		fprintf(stderr, "synth_finish: %s\n", err.msg);
		return -1;
	}
	s->col_emb = random_emb((uint64_t) s->ncolumns, s->d_text, 1);
	s->cat_emb = random_emb(s->ncat, s->d_text, 2);
	s->text_emb = random_emb(s->ntext, s->d_text, 3);
	return 0;
}

void
synth_free(HwSnapshot *s)
{
	SynthState **pp = &states;

	while (*pp)
	{
		if ((*pp)->s == s)
		{
			SynthState *st = *pp;

			*pp = st->next;
			free(st->child);
			free(st->parent);
			free(st->fk);
			free(st);
			break;
		}
		pp = &(*pp)->next;
	}
	snapshot_free(s);
}

/* ------------------------------------------------------------------- shop */

static uint64_t
rnd(uint64_t *x)
{
	*x += 0x9e3779b97f4a7c15ULL;
	uint64_t z = *x;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double
unif(uint64_t *x)
{
	return (double) (rnd(x) >> 11) * 0x1.0p-53;
}

/* skewed index in [0, n): a few popular parents, a long tail */
static uint32_t
skewed(uint64_t *x, uint32_t n)
{
	double u = unif(x);

	return (uint32_t) (n * u * u) % n;
}

static void
maybe_null(HwColumn *c, uint32_t r, uint64_t *x)
{
	if (unif(x) < 0.05)
		c->valid[r] = 0;
}

HwSnapshot *
synth_shop(uint32_t total, uint64_t seed, int32_t d_text)
{
	if (total < 200)
		total = 200;
	uint64_t x = seed * 7919 + 17;
	uint32_t n_cat = 20;
	uint32_t n_cust = total / 20, n_prod = total / 50, n_ord = total * 3 / 10;
	uint32_t n_item = total / 2, n_rev = total - n_cat - n_cust - n_prod - n_ord - n_item;
	HwSnapshot *s = synth_new(d_text);
	const int64_t t0 = 1577836800LL * 1000000LL;      /* 2020-01-01 UTC */
	const int64_t day = 86400LL * 1000000LL;
	uint32_t ntext = 4000;

	int tc = synth_add_table(s, "category", n_cat, "id:identifier,name:categorical", -1);
	int tu = synth_add_table(s, "customer", n_cust,
							 "id:identifier,segment:categorical,signup_at:timestamp,age:numerical,vip:boolean,bio:text", 2);
	int tp = synth_add_table(s, "product", n_prod,
							 "id:identifier,category_id:identifier,price:numerical,title:text,added_at:timestamp", 4);
	int to = synth_add_table(s, "orders", n_ord,
							 "id:identifier,customer_id:identifier,ordered_at:timestamp,status:categorical,total:numerical", 2);
	int ti = synth_add_table(s, "order_item", n_item,
							 "id:identifier,order_id:identifier,product_id:identifier,qty:numerical", -1);
	int tr = synth_add_table(s, "review", n_rev,
							 "id:identifier,customer_id:identifier,product_id:identifier,rating:numerical,body:text,created_at:timestamp", 5);

	synth_set_ntext(s, ntext);
	synth_set_ncat(s, tc, "name", n_cat);
	synth_set_ncat(s, tu, "segment", 5);
	synth_set_ncat(s, to, "status", 4);
	int fk_pc = synth_add_fk(s, "product_category_id_fkey", tp, tc);
	int fk_oc = synth_add_fk(s, "orders_customer_id_fkey", to, tu);
	int fk_io = synth_add_fk(s, "order_item_order_id_fkey", ti, to);
	int fk_ip = synth_add_fk(s, "order_item_product_id_fkey", ti, tp);
	int fk_rc = synth_add_fk(s, "review_customer_id_fkey", tr, tu);
	int fk_rp = synth_add_fk(s, "review_product_id_fkey", tr, tp);

	for (uint32_t r = 0; r < n_cat; r++)
		synth_col(s, tc, "name")->u32[r] = r;
	int64_t *signup = synth_col(s, tu, "signup_at")->i64;

	for (uint32_t r = 0; r < n_cust; r++)
	{
		synth_col(s, tu, "segment")->u32[r] = (uint32_t) (rnd(&x) % 5);
		signup[r] = t0 + (int64_t) (unif(&x) * 1000) * day + (int64_t) (rnd(&x) % 86400) * 1000000LL;
		synth_col(s, tu, "age")->f32[r] = (float) (18 + rnd(&x) % 60);
		synth_col(s, tu, "vip")->u8[r] = unif(&x) < 0.1;
		synth_col(s, tu, "bio")->u32[r] = (uint32_t) (rnd(&x) % ntext);
		maybe_null(synth_col(s, tu, "age"), r, &x);
		maybe_null(synth_col(s, tu, "bio"), r, &x);
	}
	for (uint32_t r = 0; r < n_prod; r++)
	{
		uint32_t c = (uint32_t) (rnd(&x) % n_cat);

		synth_edge(s, synth_row(s, tp, r), synth_row(s, tc, c), fk_pc);
		synth_col(s, tp, "price")->f32[r] = (float) (1 + unif(&x) * 200);
		synth_col(s, tp, "title")->u32[r] = (uint32_t) (rnd(&x) % ntext);
		synth_col(s, tp, "added_at")->i64[r] = t0 + (int64_t) (unif(&x) * 800) * day;
		maybe_null(synth_col(s, tp, "price"), r, &x);
	}
	int64_t *ordered = synth_col(s, to, "ordered_at")->i64;

	for (uint32_t r = 0; r < n_ord; r++)
	{
		uint32_t c = skewed(&x, n_cust);

		synth_edge(s, synth_row(s, to, r), synth_row(s, tu, c), fk_oc);
		ordered[r] = signup[c] + (int64_t) (unif(&x) * 400 * 86400) * 1000000LL;
		synth_col(s, to, "status")->u32[r] = (uint32_t) (rnd(&x) % 4);
		synth_col(s, to, "total")->f32[r] = (float) (5 + unif(&x) * 300);
		maybe_null(synth_col(s, to, "total"), r, &x);
		maybe_null(synth_col(s, to, "status"), r, &x);
	}
	for (uint32_t r = 0; r < n_item; r++)
	{
		uint32_t o = (uint32_t) (rnd(&x) % n_ord), p = skewed(&x, n_prod);

		synth_edge(s, synth_row(s, ti, r), synth_row(s, to, o), fk_io);
		synth_edge(s, synth_row(s, ti, r), synth_row(s, tp, p), fk_ip);
		synth_col(s, ti, "qty")->f32[r] = (float) (1 + rnd(&x) % 5);
	}
	for (uint32_t r = 0; r < n_rev; r++)
	{
		uint32_t c = skewed(&x, n_cust), p = skewed(&x, n_prod);

		synth_edge(s, synth_row(s, tr, r), synth_row(s, tu, c), fk_rc);
		synth_edge(s, synth_row(s, tr, r), synth_row(s, tp, p), fk_rp);
		synth_col(s, tr, "rating")->f32[r] = (float) (1 + rnd(&x) % 5);
		synth_col(s, tr, "body")->u32[r] = (uint32_t) (rnd(&x) % ntext);
		synth_col(s, tr, "created_at")->i64[r] = signup[c] + (int64_t) (unif(&x) * 500 * 86400) * 1000000LL;
		maybe_null(synth_col(s, tr, "body"), r, &x);
	}
	if (synth_finish(s) != 0)
	{
		synth_free(s);
		return NULL;
	}
	return s;
}
