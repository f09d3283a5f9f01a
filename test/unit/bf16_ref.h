/*
 * bf16_ref.h: what the bf16 GEMM tests compare against, written here
 * independently of the kernels: round to nearest even, and a small
 * deterministic generator of values in [-1, 1).
 */
#ifndef HW_TEST_BF16_REF_H
#define HW_TEST_BF16_REF_H

#include <stdint.h>
#include <string.h>

static inline float
round_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
	memcpy(&f, &u, 4);
	return f;
}

static inline float
frand(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float) ((*s >> 40) / (double) (1ull << 24)) * 2.0f - 1.0f;
}

#endif /* HW_TEST_BF16_REF_H */
