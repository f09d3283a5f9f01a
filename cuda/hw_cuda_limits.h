/*
 * hw_cuda_limits.h: the model shapes the CUDA backend can run.
 *
 * Plain C, header-only, no CUDA: backend_cuda_ops.cu's check_shapes entry
 * (backend.h) uses it, and the CPU unit tests (test/unit/test_backend_checks.c)
 * include it, so the rule is tested on machines without a GPU.
 *
 * The limits, and where they come from:
 *   - head size dh = d_model / n_heads in {16, 32, 64, 128}: attention.cu's
 *     kernels are instantiated for those (registers and shared memory per
 *     head size); any other is rejected by them at every call;
 *   - seq_len <= 65536: perm and seq_row_ids are uint16, and the plan's list
 *     kernel runs one thread per 64-position tile (<= 1024 threads a block);
 *   - batch_size and n_heads <= 65535: attention grids are (tiles, H, B), and
 *     gridDim.y / gridDim.z are limited to 65535.
 */
#ifndef HW_CUDA_LIMITS_H
#define HW_CUDA_LIMITS_H

#include <stddef.h>
#include <stdio.h>

static inline int
hw_cuda_head_dim_supported(int dh)
{
	return dh == 16 || dh == 32 || dh == 64 || dh == 128;
}

/*
 * 0 when the CUDA backend can run a model with max batch B, max seq_len S,
 * d_model D, n_heads H (d_ff F: no limit of its own); otherwise 1 with the
 * reason, in the user's terms (the rt_train options), written to msg.
 */
static inline int
hw_cuda_shapes_problem(int B, int S, int D, int H, int F, char *msg, size_t msglen)
{
	(void) F;
	if (B <= 0 || S <= 0 || D <= 0 || H <= 0)
	{
		snprintf(msg, msglen, "the CUDA backend needs positive shapes (batch_size %d, seq_len %d, d_model %d, "
				 "n_heads %d)", B, S, D, H);
		return 1;
	}
	if (D % H != 0 || !hw_cuda_head_dim_supported(D / H))
	{
		char dh[32];

		if (D % H != 0)
			snprintf(dh, sizeof(dh), "%.2f", (double) D / H);
		else
			snprintf(dh, sizeof(dh), "%d", D / H);
		snprintf(msg, msglen,
				 "the CUDA backend's attention takes head sizes (d_model / n_heads) of 16, 32, 64 or 128; "
				 "this model has d_model %d / n_heads %d = %s: choose n_heads (or d_model) accordingly, "
				 "or train with device => 'cpu'", D, H, dh);
		return 1;
	}
	if (S > 65536)
	{
		snprintf(msg, msglen, "the CUDA backend takes seq_len up to 65536, not %d", S);
		return 1;
	}
	if (B > 65535 || H > 65535)
	{
		snprintf(msg, msglen, "the CUDA backend takes batch_size and n_heads up to 65535 (a CUDA grid "
				 "dimension), not %d and %d", B, H);
		return 1;
	}
	return 0;
}

#endif /* HW_CUDA_LIMITS_H */
