/*
 * tensor.c: arenas, the parameter table and the RNG (see tensor.h).
 */
#include "core/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 64

void
hw_arena_measure(HwArena *a, HwBackend *be)
{
	memset(a, 0, sizeof(*a));
	a->be = be;
}

int
hw_arena_init(HwArena *a, HwBackend *be, size_t cap, HwError *err)
{
	memset(a, 0, sizeof(*a));
	a->be = be;
	a->cap = cap;
	a->base = cap ? be->ops->alloc(be, cap) : NULL;
	if (cap && !a->base)
		return hw_error_set(err, HW_ERR_NOMEM, "could not allocate %.1f MiB of %s memory for activations",
							(double) cap / 1048576.0, be->ops->name);
	return HW_OK;
}

void
hw_arena_release(HwArena *a)
{
	if (a->base)
		a->be->ops->free(a->be, a->base);
	a->base = NULL;
	a->used = a->cap = 0;
}

void *
hw_arena_bytes(HwArena *a, size_t bytes)
{
	size_t sz = (bytes + ALIGN - 1) / ALIGN * ALIGN;
	void  *p;

	if (!a->base)
	{
		a->used += sz;
		return NULL;
	}
	if (a->used + sz > a->cap)
		return NULL;
	p = a->base + a->used;
	a->used += sz;
	return p;
}

float *
hw_arena_floats(HwArena *a, int64_t n)
{
	return (float *) hw_arena_bytes(a, (size_t) (n > 0 ? n : 1) * sizeof(float));
}

int
hw_params_add(HwParamTable *t, const char *name, int ndim, int d0, int d1, int opt, int decay)
{
	HwParamInfo *pi;

	if (t->n == t->cap)
	{
		int          nc = t->cap ? 2 * t->cap : 64;
		HwParamInfo *np = realloc(t->p, (size_t) nc * sizeof(*np));

		if (!np)
			return -1;
		t->p = np;
		t->cap = nc;
	}
	pi = &t->p[t->n];
	memset(pi, 0, sizeof(*pi));
	strncpy(pi->name, name, sizeof(pi->name) - 1);
	pi->ndim = ndim;
	pi->shape[0] = d0;
	pi->shape[1] = ndim == 2 ? d1 : 1;
	pi->numel = (int64_t) d0 * (ndim == 2 ? d1 : 1);
	pi->offset = t->numel;
	pi->opt = opt;
	pi->decay = decay;
	t->numel += pi->numel;
	return t->n++;
}

int
hw_params_find(const HwParamTable *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->p[i].name, name) == 0)
			return i;
	return -1;
}

void
hw_params_free(HwParamTable *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
hw_rng_seed(HwRng *r, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
hw_rng_next(HwRng *r)
{
	uint64_t *s = r->s;
	uint64_t  res = rotl(s[1] * 5, 7) * 9;
	uint64_t  t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

double
hw_rng_uniform(HwRng *r)
{
	return (double) (hw_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double
hw_rng_normal(HwRng *r)
{
	double u1 = hw_rng_uniform(r), u2 = hw_rng_uniform(r);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
