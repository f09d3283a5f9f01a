/*
 * backend_cpu_amx.c: the bf16 GEMMs' inner block on Intel's AMX tiles
 * (TDPBF16PS), for processors that have them (Sapphire Rapids and later).
 *
 * Why: a TDPBF16PS multiplies a 16 x 32 bf16 tile by a 32 x 16 one into
 * 16 x 16 fp32 sums, 8,192 multiply-adds in one instruction, about eight
 * times the AVX-512 units' rate per core.  The served model's layer GEMMs
 * (backend_cpu_bf16.c) spend most of their time in that inner product.
 *
 * Layout.  The packed weights of backend_cpu_bf16.c are already the B
 * operand's layout: panel q holds, pair by pair of K, its 16 columns' pairs
 * (64 bytes a pair), so 16 consecutive pairs of a panel are one B tile
 * (16 rows of 64 bytes, stride 64).  The rows of A converted to bf16 pairs
 * (convert_rows) are the A operand: a tile is 16 rows, 16 pairs each,
 * at the rows' stride.  So the AMX path needs no other packing; it needs
 * K's pairs in whole tiles (kp a multiple of 16: every D and F of the
 * presets), else the caller keeps the AVX512_BF16 path for that weight.
 *
 * Determinism.  Each C element is acc = 0, then one TDPBF16PS per 16 pairs
 * of K in order, then the store (beta * C + acc, as the AVX512_BF16
 * kernel's store): the same operations whatever M, the row's place in the
 * call, the tile it falls in or the thread count.  Whether a product runs
 * here depends only on the machine and the weight's shape, never on M, so
 * a row alone and in a batch still get the same bits.  Not the same bits as
 * the AVX512_BF16 kernel (the tile sums its pairs in its own order): both
 * are within bf16's error of the fp32 product (test_gemm_bf16_amx.c).
 *
 * The operating system hands the tiles' state to a process only on request
 * (Linux: arch_prctl ARCH_REQ_XCOMP_PERM, once per process, before any
 * thread touches a tile); where it refuses, or on other kernels and
 * compilers, cpu_amx_usable is false and the AVX512_BF16 kernel runs.
 */
#include "backend/backend_cpu_internal.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && __GNUC__ >= 11
#define HW_HAVE_AMX 1
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023     /* <asm/prctl.h>, Linux 5.16 */
#define XFEATURE_XTILEDATA  18

/* -1 unknown, 0 no, 1 yes: per process (the processor and the permission
 * do not change); a race only repeats the same idempotent request */
static int amx_state = -1;

bool
hw_backend_cpu_amx_supported(void)
{
	int s = __atomic_load_n(&amx_state, __ATOMIC_ACQUIRE);

	if (s < 0)
	{
		__builtin_cpu_init();
		s = __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") &&
			__builtin_cpu_supports("avx512bf16") &&
			syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
		__atomic_store_n(&amx_state, s, __ATOMIC_RELEASE);
	}
	return s == 1;
}
#else
bool
hw_backend_cpu_amx_supported(void)
{
	return false;
}
#endif

bool
cpu_amx_usable(HwBackend *be)
{
	CpuCtx *c = be->ctx;

	return !c->amx_disabled && cpu_bf16_usable(be) && hw_backend_cpu_amx_supported();
}

#ifdef HW_HAVE_AMX

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bf16,amx-tile,amx-bf16")

#define TROWS 16                       /* rows of a tile; also pairs of K per A/B tile */
#define TBYTES 64                      /* bytes of a tile row */

/* palette 1, the eight tiles 16 rows x 64 bytes: C tiles 0-3 (2 x 2 of
 * 16 x 16 fp32), A tiles 4-5, B tiles 6-7 */
typedef struct __attribute__((aligned(64))) TileConfig
{
	uint8_t  palette_id, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t  rows[16];
} TileConfig;

static void
tiles_configure(void)
{
	TileConfig cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.palette_id = 1;
	for (int t = 0; t < 8; t++)
	{
		cfg.colsb[t] = TBYTES;
		cfg.rows[t] = TROWS;
	}
	_tile_loadconfig(&cfg);
}

/* out[i * 2 + j] (16 x 16 fp32 each, row stride ostride bytes) = A rows
 * (na tiles of 16 rows, row stride astride bytes) @ panels (nb of them,
 * panel stride pstride uint16) over kcn pairs (a multiple of 16).  na and
 * nb are constants at every call, so the branches fold. */
static inline __attribute__((always_inline)) void
tile_product(const uint16_t *a, size_t astride, const uint16_t *b, size_t pstride, int kcn, int na, int nb,
			 float *const out[4], size_t ostride)
{
	_tile_zero(0);
	if (nb == 2)
		_tile_zero(1);
	if (na == 2)
	{
		_tile_zero(2);
		if (nb == 2)
			_tile_zero(3);
	}
	for (int p = 0; p < kcn; p += TROWS)
	{
		_tile_loadd(4, a + 2 * (size_t) p, astride);
		_tile_loadd(6, b + (size_t) p * 32, TBYTES);
		if (nb == 2)
			_tile_loadd(7, b + pstride + (size_t) p * 32, TBYTES);
		_tile_dpbf16ps(0, 4, 6);
		if (nb == 2)
			_tile_dpbf16ps(1, 4, 7);
		if (na == 2)
		{
			_tile_loadd(5, (const uint8_t *) (a + 2 * (size_t) p) + TROWS * astride, astride);
			_tile_dpbf16ps(2, 5, 6);
			if (nb == 2)
				_tile_dpbf16ps(3, 5, 7);
		}
	}
	_tile_stored(0, out[0], ostride);
	if (nb == 2)
		_tile_stored(1, out[1], ostride);
	if (na == 2)
	{
		_tile_stored(2, out[2], ostride);
		if (nb == 2)
			_tile_stored(3, out[3], ostride);
	}
}

/* C rows [0, mr) x panels [0, nb) (= or beta*C +) the tiles' sums; the last
 * panel stores only `lastmask` columns */
static void
sums_store(float sums[4][TROWS * 16], int mr, int nb, float *C, int ldc, float beta, __mmask16 lastmask)
{
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nb; j++)
		{
			float     *c = C + (size_t) i * ldc + j * 16;
			__mmask16  mk = j == nb - 1 ? lastmask : (__mmask16) 0xffff;
			__m512     r = _mm512_load_ps(sums[(i / TROWS) * 2 + j] + (i % TROWS) * 16);

			if (beta != 0.0f)
				r = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mk, c), r);
			_mm512_mask_storeu_ps(c, mk, r);
		}
}

void
cpu_amx_block(const uint16_t *a, size_t rs, int mb, const uint16_t *b, size_t pstride, int kcn, int np, int N,
			  float *C, int ldc, float beta)
{
	float  sums[4][TROWS * 16] __attribute__((aligned(64)));
	size_t astride = rs * 4;

	tiles_configure();
	for (int i0 = 0; i0 < mb; i0 += 2 * TROWS)
	{
		int mr = mb - i0 < 2 * TROWS ? mb - i0 : 2 * TROWS;
		int na = mr > TROWS ? 2 : 1;

		for (int q = 0; q < np; q += 2)
		{
			int             nb = np - q >= 2 ? 2 : 1;
			int             lastcols = N - (q + nb - 1) * 16;
			__mmask16       lastmask = (__mmask16) (lastcols >= 16 ? 0xffffu : (1u << lastcols) - 1u);
			const uint16_t *ai = a + 2 * (size_t) i0 * rs, *bq = b + (size_t) q * pstride;
			float          *c = C + (size_t) i0 * ldc + q * 16;
			/* C = the sums, on whole tiles: stored from the tiles in place
			 * (the same values sums_store would copy) */
			bool            direct = beta == 0.0f && mr == na * TROWS && lastcols >= 16;
			float *const    out[4] = {direct ? c : sums[0], direct ? c + 16 : sums[1],
									  direct ? c + (size_t) TROWS * ldc : sums[2],
									  direct ? c + (size_t) TROWS * ldc + 16 : sums[3]};
			size_t          ostride = direct ? (size_t) ldc * sizeof(float) : TBYTES;

			if (na == 2 && nb == 2)
				tile_product(ai, astride, bq, pstride, kcn, 2, 2, out, ostride);
			else if (na == 2)
				tile_product(ai, astride, bq, pstride, kcn, 2, 1, out, ostride);
			else if (nb == 2)
				tile_product(ai, astride, bq, pstride, kcn, 1, 2, out, ostride);
			else
				tile_product(ai, astride, bq, pstride, kcn, 1, 1, out, ostride);
			if (!direct)
				sums_store(sums, mr, nb, c, ldc, beta, lastmask);
		}
	}
	_tile_release();
}

#pragma GCC pop_options

#else

void
cpu_amx_block(const uint16_t *a, size_t rs, int mb, const uint16_t *b, size_t pstride, int kcn, int np, int N,
			  float *C, int ldc, float beta)
{
	/* never called: cpu_amx_usable is false without the tiles */
}

#endif
