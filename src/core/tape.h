/*
 * tape.h: the in-memory autograd tape.
 *
 * Every op of the forward pass runs its forward kernel and appends a record:
 * op name, a label naming its output (e.g. "layer0.out.qkvg"), the inputs'
 * labels, the output shape, the saved state its backward needs (pointers to
 * saved activations, weights and gradient buffers, dimensions; copied into
 * the record) and the time the forward took.  hw_tape_backward walks the
 * records in reverse and calls each record's backward, timing it too.  The
 * records are reused from step to step (no allocation once the capacity is
 * reached); the debug dump (headwater.tape) reads them after a step and is
 * never on the hot path.
 */
#ifndef HW_TAPE_H
#define HW_TAPE_H

#include "core/hw_common.h"

#define HW_TAPE_ARGS 256

struct HwTapeRec;
typedef void (*hw_tape_backward_fn)(void *ctx, const struct HwTapeRec *rec);

typedef struct HwTapeRec
{
	const char          *op;              /* static op name */
	char                 label[48];       /* output name */
	char                 inputs[96];      /* comma-separated input names */
	int32_t              ndim;
	int64_t              shape[3];        /* output shape */
	double               fwd_ms, bwd_ms;  /* wall time of the forward / backward kernel(s) */
	hw_tape_backward_fn  backward;        /* NULL: nothing to propagate */
	union { unsigned char bytes[HW_TAPE_ARGS]; double align_; int64_t align2_; } args;
} HwTapeRec;

typedef struct HwTape
{
	HwTapeRec *rec;
	int        n, cap;
} HwTape;

void       hw_tape_init(HwTape *t);
void       hw_tape_free(HwTape *t);
void       hw_tape_reset(HwTape *t);
/* Appends a record; args (argsize <= HW_TAPE_ARGS) are copied.  Returns NULL
 * only when memory runs out. */
HwTapeRec *hw_tape_push(HwTape *t, const char *op, const char *label, const char *inputs,
						int ndim, int64_t d0, int64_t d1, int64_t d2,
						hw_tape_backward_fn backward, const void *args, size_t argsize);
/* Reverse walk; ctx is passed to every backward. */
void       hw_tape_backward(HwTape *t, void *ctx);
/* Wall clock in milliseconds (monotonic). */
double     hw_now_ms(void);

#endif /* HW_TAPE_H */
