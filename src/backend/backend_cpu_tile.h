/*
 * backend_cpu_tile.h: what the CPU backend's packed-weight GEMM kernels
 * (backend_cpu_bf16.c, backend_cpu_f32pack.c) share: the store of an
 * MR x NP register tile of fp32 sums, and the switch from a tile shape
 * known at run time to the constant shapes (the accumulators stay in
 * registers only when the shape is a constant).  The includer defines
 * PANEL (16: fp32 columns per zmm), MR and NP (the largest tile) and
 * includes <immintrin.h> first.
 */
#ifndef HW_BACKEND_CPU_TILE_H
#define HW_BACKEND_CPU_TILE_H

/* C[mr rows, np panels] = alpha * acc, or beta * C + alpha * acc (alpha 1:
 * acc itself); the last panel stores only `lastmask` columns */
static inline __attribute__((always_inline, target("avx512f"))) void
tile_store(__m512 acc[MR][NP], int mr, int np, float *C, int ldc, float alpha, float beta, __mmask16 lastmask)
{
#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
		for (int j = 0; j < np; j++)
		{
			float     *c = C + (size_t) i * ldc + j * PANEL;
			__mmask16  mk = j == np - 1 ? lastmask : (__mmask16) 0xffff;
			__m512     r = acc[i][j];

			if (alpha != 1.0f)
				r = _mm512_mul_ps(_mm512_set1_ps(alpha), r);
			if (beta != 0.0f)
				r = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mk, c), r);
			_mm512_mask_storeu_ps(c, mk, r);
		}
}

/* TILE(PRE..., mr, np, POST...) with mr (1..MR) and np (1..NP) as
 * constants; PRE and POST are parenthesised argument lists */
#define TILE_ARGS(...) __VA_ARGS__
#define TILE_NP_SWITCH(TILE, PRE, MRV, np, POST)                                \
	switch (np)                                                                 \
	{                                                                           \
		case 1: TILE(TILE_ARGS PRE, MRV, 1, TILE_ARGS POST); break;             \
		case 2: TILE(TILE_ARGS PRE, MRV, 2, TILE_ARGS POST); break;             \
		case 3: TILE(TILE_ARGS PRE, MRV, 3, TILE_ARGS POST); break;             \
		default: TILE(TILE_ARGS PRE, MRV, 4, TILE_ARGS POST); break;            \
	}
#define TILE_SWITCH(TILE, PRE, mr, np, POST)                                    \
	switch (mr)                                                                 \
	{                                                                           \
		case 1: TILE_NP_SWITCH(TILE, PRE, 1, np, POST) break;                   \
		case 2: TILE_NP_SWITCH(TILE, PRE, 2, np, POST) break;                   \
		case 3: TILE_NP_SWITCH(TILE, PRE, 3, np, POST) break;                   \
		case 4: TILE_NP_SWITCH(TILE, PRE, 4, np, POST) break;                   \
		case 5: TILE_NP_SWITCH(TILE, PRE, 5, np, POST) break;                   \
		default: TILE_NP_SWITCH(TILE, PRE, 6, np, POST) break;                  \
	}

#endif /* HW_BACKEND_CPU_TILE_H */
