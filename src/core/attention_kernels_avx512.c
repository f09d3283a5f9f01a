/*
 * attention_kernels_avx512.c: the attention kernels (attention_tiles.h)
 * built for x86-64-v4 (AVX-512), one 16-lane register per key tile.  The
 * driver (attention_kernels.c) calls them only where the CPU has them.
 * Built with GCC only: clang ignores #pragma GCC target (it would build
 * them for the baseline) and takes the baseline build alone.
 */
#include "core/attention_internal.h"
#if HW_ATTN_X86_BUILDS
#include <math.h>
#include <string.h>

#pragma GCC target("arch=x86-64-v4")
#define HW_ATTN_VW 16
#define HW_ATTN_NAME(x) x##_avx512
#include "core/attention_tiles.h"
#else
typedef int attention_kernels_avx512_unused;	/* ISO C: no empty file */
#endif
