/*
 * test_blas_core.c: what the CPU backend's fp32 products run on and the
 * rule of precision `auto` against them (backend_cpu_blas.c), on a table
 * and on this machine.
 */
#include "unit.h"
#include "core/backend.h"
#include "backend/backend_cpu_internal.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* bf16 against fp32 products: only Intel's cores against AVX-512 fp32
 * keep fp32 (VDPBF16PS issues on one port there, the FMA on two), unless
 * the bf16 products run on AMX tiles */
UNIT_TEST(test_bf16_beats_fp32_rule)
{
	CHECK(!cpu_bf16_beats_fp32(true, HW_ISA_AVX512_BF16, false));
	CHECK(!cpu_bf16_beats_fp32(true, HW_ISA_AVX512, false));
	CHECK(cpu_bf16_beats_fp32(true, HW_ISA_AVX512, true));
	CHECK(cpu_bf16_beats_fp32(true, HW_ISA_OLD, false));
	CHECK(cpu_bf16_beats_fp32(true, HW_ISA_AVX2, false));
	CHECK(cpu_bf16_beats_fp32(false, HW_ISA_AVX512_BF16, false));
	CHECK(cpu_bf16_beats_fp32(false, HW_ISA_AVX2, false));
}

/* the backend's entry follows the rule on this machine, against the
 * level of what its fp32 products run on (its own kernel, or OpenBLAS's
 * kernels when that is disabled), for serving with AMX tiles where they
 * run and for training without them, and never prefers what it cannot run */
UNIT_TEST(test_bf16_preferred_here)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	bool       intel = false, avx512 = false, amx = hw_backend_cpu_amx_supported();
	const char *core = hw_backend_cpu_blas_core();
	int        blas, own;

	CHECK(be != NULL);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	__builtin_cpu_init();
	intel = __builtin_cpu_is("intel");
	avx512 = __builtin_cpu_supports("avx512f");
#endif
	blas = strcasecmp(core, "SkylakeX") == 0 || strcasecmp(core, "Cooperlake") == 0 ||
		strcasecmp(core, "SapphireRapids") == 0 ? HW_ISA_AVX512 : HW_ISA_OLD;
	own = avx512 ? HW_ISA_AVX512 : HW_ISA_AVX2;
	CHECK_EQ_INT(be->ops->bf16_preferred(be, false), be->ops->bf16_usable(be) && cpu_bf16_beats_fp32(intel, own, amx));
	CHECK_EQ_INT(be->ops->bf16_preferred(be, true), be->ops->bf16_usable(be) && cpu_bf16_beats_fp32(intel, own, false));
	CHECK(strstr(hw_backend_cpu_f32_kernels(be), "own") != NULL || !hw_backend_cpu_f32_pack_supported());
	hw_backend_cpu_disable_f32_pack(be, true);
	CHECK_EQ_INT(be->ops->bf16_preferred(be, false), be->ops->bf16_usable(be) && cpu_bf16_beats_fp32(intel, blas, amx));
	CHECK(strstr(hw_backend_cpu_f32_kernels(be), core) != NULL);
	hw_backend_cpu_disable_amx(be, true);
	CHECK_EQ_INT(be->ops->bf16_preferred(be, false), be->ops->bf16_usable(be) && cpu_bf16_beats_fp32(intel, blas, false));
	hw_backend_cpu_disable_amx(be, false);
	hw_backend_cpu_disable_bf16(be, true);
	CHECK(!be->ops->bf16_preferred(be, false));
	CHECK(!be->ops->bf16_preferred(be, true));
	hw_backend_destroy(be);
}
