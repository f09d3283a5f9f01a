/*
 * backend_cpu_blas.c: which kernels the CPU backend's fp32 products run
 * on, and whether bf16 products beat them (what precision `auto`
 * chooses).
 *
 * The products run on the backend's own kernel (backend_cpu_f32pack.c)
 * wherever the processor has AVX-512, or AVX2 and FMA; elsewhere on
 * OpenBLAS.  A DYNAMIC_ARCH OpenBLAS picks its kernels when it loads, from
 * the processor's model or from OPENBLAS_CORETYPE, and a processor newer
 * than the release gets a generic family: OpenBLAS 0.3.21 (Debian 12) runs
 * its SSE3 "Prescott" kernels on an Emerald Rapids Xeon, where a
 * small-preset fp32 training step took 1,956-2,635 ms on them against
 * 785-840 ms on the own kernel (docs/BENCHMARKS.md).  That is why the
 * products no longer depend on OpenBLAS where the processor has the
 * instructions.
 */
#include "backend/backend_cpu_internal.h"

#include <cblas.h>
#include <stdio.h>
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

/* the instruction level of the backend's fp32 products */
static int
f32_level(HwBackend *be)
{
	if (cpu_f32_packed_usable(be))
		return processor_level() >= HW_ISA_AVX512 ? HW_ISA_AVX512 : HW_ISA_AVX2;
	return core_level(hw_backend_cpu_blas_core());
}

const char *
hw_backend_cpu_f32_kernels(HwBackend *be)
{
	static char buf[96];

	if (cpu_f32_packed_usable(be))
		return f32_level(be) >= HW_ISA_AVX512 ? "own AVX-512 kernel" : "own AVX2 kernel";
	snprintf(buf, sizeof(buf), "OpenBLAS %s kernels", hw_backend_cpu_blas_core());
	return buf;
}

/*
 * bf16 products (VDPBF16PS: two products per fp32 lane) against fp32 ones.
 * On Intel's cores VDPBF16PS issues on one port where the AVX-512 FMA
 * issues on two, so against AVX-512 fp32 products it has the same peak and
 * pays the conversions: on an Emerald Rapids Xeon rt_predict_table served
 * 0.81-0.90 times the fp32 rows/s of OpenBLAS's AVX-512 kernels, and the
 * own fp32 kernel (backend_cpu_f32pack.c) ran the serving GEMMs at 1.7
 * times the bf16 kernel's GFLOP/s (bench/bin/predict_forward), and trained
 * at 1.2-1.35 times bf16's steps/s.  On AMD's Zen 4 both run at one a cycle,
 * and against kernels older than AVX-512 the fp32 side has half the width:
 * bf16 wins (1.5 times on the small preset).  Where the processor has AMX
 * tiles (backend_cpu_amx.c) the bf16 products run there at about five times
 * the AVX512_BF16 kernel's rate, and bf16 wins on every processor: an
 * Emerald Rapids Xeon served the demo shop at 1.6 times the rows/s, the
 * same metrics to the third digit.  (amx: the products run on tiles.)
 */
bool
cpu_bf16_beats_fp32(bool intel, int fp32_level, bool amx)
{
	return amx || !(intel && fp32_level >= HW_ISA_AVX512);
}

/* training: AMX does not change training's choice.  bf16 on the tiles
 * trains the small preset at 1.2 times fp32's steps/s, but bf16 training
 * changes the model, not only its speed: on that Xeon over two demo seeds
 * and one football seed it was mixed (one demo seed's rating MAE 0.419
 * against fp32's 0.380, order status 0.864 against 0.839; football seed 1,
 * paired: player AUROC 0.0071 lower, team goals MAE 0.0024 better, team
 * unbeaten level), so it stays an option there
 * (train_precision "bf16") until paired seeds show it level. */
bool
cpu_bf16_preferred(HwBackend *be, bool training)
{
	static int intel = -1;      /* per process: the processor does not change */

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
	return cpu_bf16_beats_fp32(intel, f32_level(be), !training && cpu_amx_usable(be));
}

const char *
hw_backend_cpu_blas_core(void)
{
	const char *core = openblas_get_corename();

	return core ? core : "unknown";
}
