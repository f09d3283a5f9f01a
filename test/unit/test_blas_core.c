/*
 * test_blas_core.c: the check that OpenBLAS runs kernels as new as the
 * processor allows (backend_cpu_blas.c), on a table of families and
 * processor levels, and on this machine's own OpenBLAS.
 */
#include "unit.h"
#include "core/backend.h"
#include "backend/backend_cpu_internal.h"

#include <stdbool.h>
#include <string.h>

static int
same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

UNIT_TEST(test_blas_better_family_table)
{
	static const struct { const char *core; int cpu; const char *want; } cases[] = {
		{"Prescott", HW_ISA_AVX512_BF16, "Cooperlake"},   /* a processor OpenBLAS 0.3.21 does not know */
		{"Prescott", HW_ISA_AVX2, "Haswell"},
		{"Prescott", HW_ISA_OLD, NULL},
		{"Haswell", HW_ISA_AVX2, NULL},
		{"Zen", HW_ISA_AVX2, NULL},
		{"Haswell", HW_ISA_AVX512, "SkylakeX"},
		{"Zen", HW_ISA_AVX512_BF16, "Cooperlake"},
		{"SkylakeX", HW_ISA_AVX512_BF16, "Cooperlake"},
		{"SKYLAKEX", HW_ISA_AVX512, NULL},                 /* names compare without case */
		{"Cooperlake", HW_ISA_AVX512_BF16, NULL},
		{"SapphireRapids", HW_ISA_AVX512_BF16, NULL},
		{"Cooperlake", HW_ISA_AVX2, NULL},                 /* newer than the processor: not ours to judge */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		const char *got = cpu_blas_better_family(cases[i].core, cases[i].cpu);

		CHECK_MSG(same(got, cases[i].want), "%s on level %d: got %s, want %s", cases[i].core, cases[i].cpu,
				  got ? got : "none", cases[i].want ? cases[i].want : "none");
	}
}

/* bf16 against fp32 products: only Intel's cores against AVX-512 fp32
 * keep fp32 (VDPBF16PS issues on one port there, the FMA on two) */
UNIT_TEST(test_bf16_beats_fp32_rule)
{
	CHECK(!cpu_bf16_beats_fp32(true, HW_ISA_AVX512_BF16));
	CHECK(!cpu_bf16_beats_fp32(true, HW_ISA_AVX512));
	CHECK(cpu_bf16_beats_fp32(true, HW_ISA_OLD));
	CHECK(cpu_bf16_beats_fp32(true, HW_ISA_AVX2));
	CHECK(cpu_bf16_beats_fp32(false, HW_ISA_AVX512_BF16));
	CHECK(cpu_bf16_beats_fp32(false, HW_ISA_AVX2));
}

/* the backend's entry follows the rule on this machine, against the packed
 * fp32 kernel (AVX-512) or OpenBLAS's kernels, and never prefers what it
 * cannot run */
UNIT_TEST(test_bf16_preferred_here)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	bool       intel = false, avx512 = false;
	int        blas;

	CHECK(be != NULL);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	__builtin_cpu_init();
	intel = __builtin_cpu_is("intel");
	avx512 = __builtin_cpu_supports("avx512f");
#endif
	blas = cpu_blas_better_family(hw_backend_cpu_blas_core(NULL), HW_ISA_AVX512) == NULL ? HW_ISA_AVX512 : HW_ISA_OLD;
	CHECK_EQ_INT(be->ops->bf16_preferred(be, false), be->ops->bf16_usable(be) && cpu_bf16_beats_fp32(intel, blas));
	CHECK_EQ_INT(be->ops->bf16_preferred(be, true),
				 be->ops->bf16_usable(be) && cpu_bf16_beats_fp32(intel, avx512 ? HW_ISA_AVX512 : blas));
	hw_backend_cpu_disable_bf16(be, true);
	CHECK(!be->ops->bf16_preferred(be, true) && !be->ops->bf16_preferred(be, false));
	hw_backend_destroy(be);
}

UNIT_TEST(test_blas_core_of_this_machine)
{
	const char *better = "unset", *core = hw_backend_cpu_blas_core(&better);

	CHECK(core != NULL && core[0] != '\0');
	CHECK(better == NULL || (strcmp(better, core) != 0 && cpu_blas_better_family(core, HW_ISA_AVX512_BF16) != NULL));
	CHECK(hw_backend_cpu_blas_core(NULL) == core);
}
