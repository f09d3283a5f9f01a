/*
 * backend_cpu_blas.c: which of OpenBLAS's kernel families the CPU backend's
 * fp32 products run on, whether the processor could run a faster one, and
 * whether bf16 products beat them (what precision `auto` chooses).
 *
 * A DYNAMIC_ARCH OpenBLAS picks its kernels when it loads, from the
 * processor's model or from OPENBLAS_CORETYPE.  A processor newer than the
 * OpenBLAS release gets a generic family: OpenBLAS 0.3.21 (Debian 12) runs
 * its SSE3 "Prescott" kernels on an Emerald Rapids Xeon, where its AVX-512
 * "Cooperlake" kernels serve 2.7 times the fp32 rows/s end to end
 * (docs/BENCHMARKS.md).  The choice cannot be changed once OpenBLAS is
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
 * bf16 products (VDPBF16PS: two products per fp32 lane) against OpenBLAS's
 * fp32 sgemm.  On Intel's cores VDPBF16PS issues on one port where the
 * AVX-512 FMA issues on two, so against OpenBLAS's AVX-512 kernels it has
 * the same peak and pays the conversions: rt_predict_table 0.85 times the
 * fp32 rows/s on an Emerald Rapids Xeon (2.4 times faster than the
 * Prescott kernels that OpenBLAS 0.3.21 picks there by itself).  On AMD's
 * Zen 4 both run at one a cycle, and against kernels older than AVX-512
 * the fp32 side has half the width: bf16 wins (1.5 times on small).
 */
bool
cpu_bf16_beats_blas(bool intel, const char *core)
{
	return !(intel && core_level(core) >= HW_ISA_AVX512);
}

bool
cpu_bf16_preferred(HwBackend *be)
{
	static int preferred = -1;      /* per process: the processor and OpenBLAS's kernels do not change */

	if (!cpu_bf16_usable(be))
		return false;
	if (preferred < 0)
	{
		bool intel = false;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
		__builtin_cpu_init();
		intel = __builtin_cpu_is("intel");
#endif
		preferred = cpu_bf16_beats_blas(intel, hw_backend_cpu_blas_core(NULL));
	}
	return preferred;
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
