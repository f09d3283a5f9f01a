/*
 * attention_gen.h: the inputs the attention tests share: a small generator
 * of sampler-like sequences (rows of a few cells, columns per table, random
 * FK edges between rows, padding at the end) with permutations like the
 * sampler's (argsort by column, grouped by row) and arbitrary ones, random
 * tensors, and the error measure against the dense reference.
 */
#ifndef HW_TEST_ATTENTION_GEN_H
#define HW_TEST_ATTENTION_GEN_H

#include "core/attention.h"

/* xorshift, deterministic */
typedef struct TRng { uint64_t s; } TRng;

typedef struct TBatch
{
	int        B, S, R;
	int32_t   *column_ids;
	uint16_t  *seq_row_ids;
	uint8_t   *is_padding;
	uint8_t   *fk_adj;
	uint16_t  *col_perm, *out_perm, *in_perm, *rand_perm;
} TBatch;

uint64_t trng_next(TRng *r);
int      trng_int(TRng *r, int n);			/* uniform in [0, n) */
float    trng_unif(TRng *r);				/* uniform in [-1, 1) */

/* Sequences: rows of 1..5 cells; each row belongs to one of 4 tables, each
 * table has its own columns (column id = table*8 + slot); row r > 0 points
 * to 0..2 earlier rows (F->P) like a BFS.  fill in (0,1]: share of S used
 * (the last element of a batch of several has no padding). */
void     tbatch_make(TBatch *t, int B, int S, int R, double fill, uint64_t seed);
void     tbatch_free(TBatch *t);

/* The mask inputs of kind; which: 0 identity permutation, 1 the sampler's
 * permutation for the kind (none for FULL), 2 an arbitrary one. */
HwAttnMaskInfo tinfo(const TBatch *t, HwMaskKind kind, int which);

void     fill_rand(float *x, int64_t n, TRng *r, float scale);	/* scale * uniform [-1, 1) */

/* max |a-b| / (atol + rtol*|b|); <= 1 passes (NaN never does) */
double   rel_err(const float *a, const float *b, int64_t n, double atol, double rtol);

#endif /* HW_TEST_ATTENTION_GEN_H */
