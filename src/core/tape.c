/*
 * tape.c: the autograd tape (see tape.h).
 */
#include "core/tape.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double
hw_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec * 1e-6;
}

void
hw_tape_init(HwTape *t)
{
	memset(t, 0, sizeof(*t));
}

void
hw_tape_free(HwTape *t)
{
	free(t->rec);
	memset(t, 0, sizeof(*t));
}

void
hw_tape_reset(HwTape *t)
{
	t->n = 0;
}

HwTapeRec *
hw_tape_push(HwTape *t, const char *op, const char *label, const char *inputs,
			 int ndim, int64_t d0, int64_t d1, int64_t d2,
			 hw_tape_backward_fn backward, const void *args, size_t argsize)
{
	HwTapeRec *r;

	if (argsize > HW_TAPE_ARGS)
		return NULL;
	if (t->n == t->cap)
	{
		int        nc = t->cap ? 2 * t->cap : 128;
		HwTapeRec *nr = realloc(t->rec, (size_t) nc * sizeof(*nr));

		if (!nr)
			return NULL;
		t->rec = nr;
		t->cap = nc;
	}
	r = &t->rec[t->n++];
	r->op = op;
	strncpy(r->label, label ? label : "", sizeof(r->label) - 1);
	r->label[sizeof(r->label) - 1] = 0;
	strncpy(r->inputs, inputs ? inputs : "", sizeof(r->inputs) - 1);
	r->inputs[sizeof(r->inputs) - 1] = 0;
	r->ndim = ndim;
	r->shape[0] = d0;
	r->shape[1] = d1;
	r->shape[2] = d2;
	r->fwd_ms = r->bwd_ms = 0;
	r->backward = backward;
	if (argsize)
		memcpy(r->args.bytes, args, argsize);
	return r;
}

void
hw_tape_backward(HwTape *t, void *ctx)
{
	for (int i = t->n - 1; i >= 0; i--)
	{
		HwTapeRec *r = &t->rec[i];
		double     t0 = hw_now_ms();

		if (r->backward)
			r->backward(ctx, r);
		r->bwd_ms = hw_now_ms() - t0;
	}
}
