/*
 * attention_kernels_generic.c: the attention kernels (attention_tiles.h)
 * built for the compiler's baseline target (SSE2 on x86-64, NEON on
 * AArch64), four 4-lane registers per key tile: any CPU runs them.
 */
#define HW_ATTN_VW 4
#define HW_ATTN_NAME(x) x##_generic
#include "core/attention_tiles.h"
