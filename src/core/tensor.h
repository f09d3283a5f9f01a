/*
 * tensor.h: device-memory arenas and the flat parameter layout.
 *
 * An arena is one backend allocation cut into 64-byte aligned pieces by a
 * bump pointer; the model sizes it once (a measuring pass with no memory,
 * then the real one), so a training step allocates nothing.
 *
 * The parameter layout (llm.c habit): one table of HwParamInfo (model.h) over
 * one flat float buffer; gradients and optimiser moments use the same
 * offsets, so the optimiser is one loop and a checkpoint is one write.
 */
#ifndef HW_TENSOR_H
#define HW_TENSOR_H

#include "core/hw_common.h"
#include "core/backend.h"
#include "core/model.h"

typedef struct HwArena
{
	HwBackend *be;
	char      *base;      /* device memory; NULL while measuring */
	size_t     used;      /* bytes handed out */
	size_t     cap;       /* bytes reserved (0 while measuring) */
} HwArena;

/* Measuring mode: hw_arena_alloc returns NULL and only counts bytes. */
void   hw_arena_measure(HwArena *a, HwBackend *be);
/* Allocates cap bytes on the device; HW_ERR_NOMEM on failure. */
int    hw_arena_init(HwArena *a, HwBackend *be, size_t cap, HwError *err);
void   hw_arena_release(HwArena *a);
/* n floats (or bytes via hw_arena_bytes), 64-byte aligned; NULL when
 * measuring or when out of capacity (a sizing bug: callers check). */
float *hw_arena_floats(HwArena *a, int64_t n);
void  *hw_arena_bytes(HwArena *a, size_t bytes);

/* Growable parameter table. */
typedef struct HwParamTable
{
	HwParamInfo *p;
	int          n, cap;
	int64_t      numel;   /* total floats */
} HwParamTable;

/* Appends a parameter (offset = current total); returns its index or -1 (nomem). */
int  hw_params_add(HwParamTable *t, const char *name, int ndim, int d0, int d1, int opt, int decay);
int  hw_params_find(const HwParamTable *t, const char *name);
void hw_params_free(HwParamTable *t);

/* Deterministic RNG (xoshiro256**), seeded by splitmix64. */
typedef struct HwRng { uint64_t s[4]; } HwRng;
void     hw_rng_seed(HwRng *r, uint64_t seed);
uint64_t hw_rng_next(HwRng *r);
double   hw_rng_uniform(HwRng *r);        /* [0,1) with 53 bits */
double   hw_rng_normal(HwRng *r);         /* Box-Muller, one value per call */

#endif /* HW_TENSOR_H */
