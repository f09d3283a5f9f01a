/*
 * backend_cpu_blas.c: which of OpenBLAS's kernel families the CPU backend's
 * fp32 products run on, whether the processor could run a faster one, and
 * whether bf16 products beat them (what precision `auto` chooses).
 *
 * A DYNAMIC_ARCH OpenBLAS picks its kernels when it loads, from the
 * processor's model or from OPENBLAS_CORETYPE.  A processor newer than the
 * OpenBLAS release gets a generic family: OpenBLAS 0.3.21 (Debian 12) runs
 * its SSE3 "Prescott" kernels on an Emerald Rapids Xeon, where its AVX-512
 * "Cooperlake" kernels take a small-preset fp32 training step in 686 ms
 * instead of 1,798 (docs/BENCHMARKS.md).  The choice cannot be changed once OpenBLAS is
 * loaded, so the server's environment has to: this file only detects the
 * case, and the training job says it in its log line.
 */
#include "backend/backend_cpu_internal.h"

#include <cblas.h>
#include <string.h>

/* OpenBLAS's own names, in its DYNAMIC_ARCH tables */
char *openblas_get_corename(void);

static int
core_level(const char *core)
{
	static const struct { const char *name; int level; } families[] = {
		{"haswell", HW_ISA_AVX2}, {"zen", HW_ISA_AVX2}, {"excavator", HW_ISA_AVX2},
		{"skylakex", HW_ISA_AVX512}, {"cooperlake", HW_ISA_AVX512_BF16}, {"sapphirerapids", HW_ISA_AVX512_BF16},
	};

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (strcasecmp(core, families[i].name) == 0)
			return families[i].level;
	return HW_ISA_OLD;
}

static int
processor_level(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
		return HW_ISA_AVX512_BF16;
	if (__builtin_cpu_supports("avx512f"))
		return HW_ISA_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return HW_ISA_AVX2;
#endif
	return HW_ISA_OLD;
}

const char *
cpu_blas_better_family(const char *core, int processor)
{
	static const char *const name_of_level[] = {NULL, "Haswell", "SkylakeX", "Cooperlake"};

	return processor > core_level(core) ? name_of_level[processor] : NULL;
}

/*
 * bf16 products (VDPBF16PS: two products per fp32 lane) against fp32 ones.
 * On Intel's cores VDPBF16PS issues on one port where the AVX-512 FMA
 * issues on two, so against AVX-512 fp32 products it has the same peak and
 * pays the conversions: on an Emerald Rapids Xeon rt_predict_table served
 * 0.81-0.90 times the fp32 rows/s of OpenBLAS's AVX-512 kernels, and the
 * packed fp32 kernel (backend_cpu_f32pack.c) ran the serving GEMMs at 1.7
 * times the bf16 kernel's GFLOP/s (bench/bin/predict_forward).  On AMD's Zen 4 both run at one a cycle, and against kernels
 * older than AVX-512 the fp32 side has half the width: bf16 wins (1.5
 * times on the small preset).
 */
bool
cpu_bf16_beats_fp32(bool intel, int fp32_level)
{
	return !(intel && fp32_level >= HW_ISA_AVX512);
}

bool
cpu_bf16_preferred(HwBackend *be, bool packed)
{
	static int intel = -1;      /* per process: the processor does not change */
	int        level;

	if (!cpu_bf16_usable(be))
		return false;
	if (intel < 0)
	{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
		__builtin_cpu_init();
		intel = __builtin_cpu_is("intel") != 0;
#else
		intel = 0;
#endif
	}
	level = packed && cpu_f32_packed_usable(be) ? HW_ISA_AVX512 : core_level(hw_backend_cpu_blas_core(NULL));
	return cpu_bf16_beats_fp32(intel, level);
}

const char *
hw_backend_cpu_blas_core(const char **better)
{
	const char *core = openblas_get_corename();

	if (core == NULL)
		core = "unknown";
	if (better)
		*better = cpu_blas_better_family(core, processor_level());
	return core;
}
