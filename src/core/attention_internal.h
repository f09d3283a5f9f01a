/*
 * attention_internal.h: the attention plan's layout, shared by the plan
 * builder (attention_plan.c) and the CPU kernels (attention_kernels.c).
 */
#ifndef HW_ATTENTION_INTERNAL_H
#define HW_ATTENTION_INTERNAL_H

#include "core/attention.h"

/* tile edge in positions: one 16-bit mask word per query row, one vector of keys */
#define T HW_ATTN_TILE
#if HW_ATTN_TILE != 16
#error "the kernels assume 16-position tiles (one 16-lane vector, 16-bit masks)"
#endif

struct HwAttnPlan
{
	int32_t     B, S, R, nt;       /* nt = tiles per sequence */
	HwMaskKind  kind;
	int32_t    *perm;              /* [B,S] permuted position -> original index */
	int32_t    *iperm;             /* [B,S] original index -> permuted position */
	int64_t    *qptr;              /* [B*nt+1] CSR over query tiles */
	int32_t    *ktile;             /* [npairs] key tile of each visited pair */
	uint16_t   *mask;              /* [npairs,T] bit jj of word ii: (ii,jj) allowed */
	int64_t     npairs;
	int64_t     allowed;
};

#endif /* HW_ATTENTION_INTERNAL_H */
