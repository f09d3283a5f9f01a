/*
 * attention_gen.c: the attention tests' inputs (attention_gen.h).
 */
#include "attention_gen.h"

#include <math.h>
#include <stdlib.h>

uint64_t
trng_next(TRng *r)
{
	uint64_t x = r->s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return r->s = x;
}

int
trng_int(TRng *r, int n)
{
	return (int) (trng_next(r) % (uint64_t) n);
}

float
trng_unif(TRng *r)
{
	return (float) ((trng_next(r) >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

void
tbatch_free(TBatch *t)
{
	free(t->column_ids);
	free(t->seq_row_ids);
	free(t->is_padding);
	free(t->fk_adj);
	free(t->col_perm);
	free(t->out_perm);
	free(t->in_perm);
	free(t->rand_perm);
}

static const int32_t *g_sort_key;
static int
cmp_by_key(const void *a, const void *b)
{
	int x = *(const uint16_t *) a, y = *(const uint16_t *) b;
	int32_t kx = g_sort_key[x], ky = g_sort_key[y];
	if (kx != ky)
		return kx < ky ? -1 : 1;
	return x - y;
}

/* perm = positions sorted by key (stable); padding gets key INT32_MAX */
static void
perm_by_key(uint16_t *perm, const int32_t *key, int S)
{
	for (int i = 0; i < S; i++)
		perm[i] = (uint16_t) i;
	g_sort_key = key;
	qsort(perm, S, sizeof(uint16_t), cmp_by_key);
}

/*
 * Sequences: rows of 1..5 cells; each row belongs to one of 4 tables, each
 * table has its own columns (column id = table*8 + slot); row r > 0 points
 * to 0..2 earlier rows (F->P) like a BFS.  fill in (0,1]: share of S used.
 */
void
tbatch_make(TBatch *t, int B, int S, int R, double fill, uint64_t seed)
{
	TRng     rng = {seed * 0x9E3779B97F4A7C15ull + 12345};
	int32_t *key = malloc(sizeof(int32_t) * S);

	t->B = B;
	t->S = S;
	t->R = R;
	t->column_ids = calloc((size_t) B * S, sizeof(int32_t));
	t->seq_row_ids = calloc((size_t) B * S, sizeof(uint16_t));
	t->is_padding = calloc((size_t) B * S, 1);
	t->fk_adj = calloc((size_t) B * R * R, 1);
	t->col_perm = calloc((size_t) B * S, sizeof(uint16_t));
	t->out_perm = calloc((size_t) B * S, sizeof(uint16_t));
	t->in_perm = calloc((size_t) B * S, sizeof(uint16_t));
	t->rand_perm = calloc((size_t) B * S, sizeof(uint16_t));
	for (int b = 0; b < B; b++)
	{
		int       used = (int) (S * fill), pos = 0, row = 0;
		int64_t   base = (int64_t) b * S;
		uint8_t  *adj = t->fk_adj + (int64_t) b * R * R;

		if (b == B - 1 && B > 1)
			used = S;	/* one element without padding */
		while (pos < used && row < R)
		{
			int table = trng_int(&rng, 4), ncell = 1 + trng_int(&rng, 5);

			for (int c = 0; c < ncell && pos < used; c++, pos++)
			{
				t->column_ids[base + pos] = table * 8 + c;
				t->seq_row_ids[base + pos] = (uint16_t) row;
			}
			if (row > 0)
			{
				int nfk = trng_int(&rng, 3);
				for (int f = 0; f < nfk; f++)
					adj[row * R + trng_int(&rng, row)] = 1;
				if (trng_int(&rng, 4) == 0)	/* some parent -> child links too */
					adj[trng_int(&rng, row) * R + row] = 1;
			}
			row++;
		}
		for (int i = pos; i < S; i++)
		{
			t->is_padding[base + i] = 1;
			/* padding carries junk ids: the kernel must ignore them */
			t->column_ids[base + i] = trng_int(&rng, 4) * 8;
			t->seq_row_ids[base + i] = 0;
		}
		/* col_perm: argsort(column), padding last */
		for (int i = 0; i < S; i++)
			key[i] = t->is_padding[base + i] ? INT32_MAX : t->column_ids[base + i];
		perm_by_key(t->col_perm + base, key, S);
		/* out_perm: rows in a random order (grouping is what matters), padding last */
		{
			int *rank = malloc(sizeof(int) * (R > 0 ? R : 1));
			for (int r = 0; r < R; r++)
				rank[r] = r;
			for (int r = R - 1; r > 0; r--)
			{
				int j = trng_int(&rng, r + 1), x = rank[r];
				rank[r] = rank[j];
				rank[j] = x;
			}
			for (int i = 0; i < S; i++)
				key[i] = t->is_padding[base + i] ? INT32_MAX : rank[t->seq_row_ids[base + i]];
			perm_by_key(t->out_perm + base, key, S);
			free(rank);
		}
		/* in_perm: rows in natural (BFS) order */
		for (int i = 0; i < S; i++)
			key[i] = t->is_padding[base + i] ? INT32_MAX : t->seq_row_ids[base + i];
		perm_by_key(t->in_perm + base, key, S);
		/* an arbitrary permutation, padding anywhere */
		for (int i = 0; i < S; i++)
			t->rand_perm[base + i] = (uint16_t) i;
		for (int i = S - 1; i > 0; i--)
		{
			int j = trng_int(&rng, i + 1);
			uint16_t x = t->rand_perm[base + i];
			t->rand_perm[base + i] = t->rand_perm[base + j];
			t->rand_perm[base + j] = x;
		}
	}
	free(key);
}

HwAttnMaskInfo
tinfo(const TBatch *t, HwMaskKind kind, int which)
{
	HwAttnMaskInfo info = {t->B, t->S, t->R, t->column_ids, t->seq_row_ids, t->is_padding, t->fk_adj, NULL};

	if (which == 1)
		info.perm = kind == HW_MASK_COLUMN ? t->col_perm :
			kind == HW_MASK_OUTBOUND ? t->out_perm :
			kind == HW_MASK_INBOUND ? t->in_perm : NULL;
	else if (which == 2)
		info.perm = t->rand_perm;
	return info;
}

void
fill_rand(float *x, int64_t n, TRng *r, float scale)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = scale * trng_unif(r);
}

/* max |a-b| / (atol + rtol*|b|); <= 1 passes */
double
rel_err(const float *a, const float *b, int64_t n, double atol, double rtol)
{
	double worst = 0.0;
	for (int64_t i = 0; i < n; i++)
	{
		double e = fabs((double) a[i] - b[i]) / (atol + rtol * fabs((double) b[i]));
		if (!(e <= worst))
			worst = e;	/* also catches NaN */
	}
	return worst;
}

