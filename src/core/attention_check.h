/*
 * attention_check.h: validation of the host tensors an attention plan is
 * built from (HwAttnMaskInfo), shared by the CPU plan (attention.c) and the
 * CUDA plan (cuda/backend_cuda_ops.cu), so both backends accept and reject the
 * same inputs with the same message.  The CUDA plan runs it on the host
 * BEFORE uploading: its kernels index q/k/v/out rows through perm, so a value
 * >= S would read and write out of bounds and a duplicate would leave rows
 * unwritten.
 *
 * Header-only plain C: headwater_cuda.so links none of src/core.
 */
#ifndef HW_ATTENTION_CHECK_H
#define HW_ATTENTION_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hw_common.h"
#include "core/attention.h"

/* Longest S a plan accepts (perm and seq_row_ids are uint16). */
#define HW_ATTN_MAX_S 65536

/*
 * Returns HW_OK when `info` is a valid input for a plan of mask `kind`, else
 * HW_ERR_INVALID (or HW_ERR_NOMEM) with the reason in msg.  Checks: shapes
 * (B >= 0, S in 1..65536, R >= 0), kind, the tensors the kind reads, perm of
 * every batch element a permutation of 0..S-1 (NULL = identity), and for
 * the row masks (OUTBOUND, INBOUND) seq_row_ids < R at every non-padding
 * position.  O(B*S) time, S bytes of scratch.
 */
static inline int
hw_attn_mask_info_check(const HwAttnMaskInfo *info, HwMaskKind kind, char *msg, size_t msglen)
{
	if (!info || info->B < 0 || info->S <= 0 || info->R < 0 || !info->is_padding ||
		(int) kind < 0 || kind > HW_MASK_FULL)
	{
		snprintf(msg, msglen, "attention plan: invalid mask info (B %d, S %d, R %d, kind %d%s)",
				 info ? info->B : 0, info ? info->S : 0, info ? info->R : 0, (int) kind,
				 info && !info->is_padding ? ", no is_padding" : "");
		return HW_ERR_INVALID;
	}
	if (info->S > HW_ATTN_MAX_S)
	{
		snprintf(msg, msglen, "attention plan: S = %d exceeds %d", info->S, HW_ATTN_MAX_S);
		return HW_ERR_INVALID;
	}
	int rows = kind == HW_MASK_OUTBOUND || kind == HW_MASK_INBOUND;

	if ((kind == HW_MASK_COLUMN && !info->column_ids) || (rows && (!info->seq_row_ids || !info->fk_adj)))
	{
		snprintf(msg, msglen, "attention plan: missing tensor for mask kind %d", (int) kind);
		return HW_ERR_INVALID;
	}
	if (!info->perm && !rows)
		return HW_OK;

	int      S = info->S;
	uint8_t *seen = info->perm ? (uint8_t *) malloc((size_t) S) : NULL;

	if (info->perm && !seen)
	{
		snprintf(msg, msglen, "attention plan: out of memory validating perm");
		return HW_ERR_NOMEM;
	}
	for (int b = 0; b < info->B; b++)
	{
		int64_t base = (int64_t) b * S;

		if (seen)
			memset(seen, 0, (size_t) S);
		for (int p = 0; p < S; p++)
		{
			int i = info->perm ? (int) info->perm[base + p] : p;

			if (i >= S || (seen && seen[i]))
			{
				snprintf(msg, msglen,
						 "attention plan: perm of batch element %d is not a permutation of 0..%d "
						 "(position %d holds %d: %s)", b, S - 1, p, i, i >= S ? "out of range" : "a duplicate");
				free(seen);
				return HW_ERR_INVALID;
			}
			if (seen)
				seen[i] = 1;
			if (rows && !info->is_padding[base + i] && info->seq_row_ids[base + i] >= info->R)
			{
				snprintf(msg, msglen, "attention plan: seq_row_ids[%d,%d] = %d >= R = %d",
						 b, i, info->seq_row_ids[base + i], info->R);
				free(seen);
				return HW_ERR_INVALID;
			}
		}
	}
	free(seen);
	return HW_OK;
}

#endif /* HW_ATTENTION_CHECK_H */
