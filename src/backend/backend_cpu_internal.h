/*
 * backend_cpu_internal.h: what the files of the CPU backend share: its
 * context, the chunk sizes that make reductions independent of the thread
 * count, and the entries its table (backend_cpu.c) points to.
 */
#ifndef HW_BACKEND_CPU_INTERNAL_H
#define HW_BACKEND_CPU_INTERNAL_H

#include "core/backend.h"
#include "core/attention.h"

#define RCH 256                    /* rows per reduction chunk */
#define KCH 4096                   /* K per chunk of a split-K GEMM */

/* Runtime dispatch (no -march=native): the memory/elementwise kernels are
 * compiled for AVX-512, AVX2 and the baseline, chosen once by the loader.
 * Results are deterministic on a given machine whatever the thread count. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SIMD_CLONES
#endif

typedef struct CpuCtx
{
	float  *scratch;               /* partial sums of reductions */
	size_t  scratch_n;
	bool    f32pack_disabled;      /* hw_backend_cpu_disable_f32_pack: every fp32 GEMM on OpenBLAS */
	bool    bf16_disabled;         /* hw_backend_cpu_disable_bf16: fp32 even where AVX512_BF16 exists */
	bool    amx_disabled;          /* hw_backend_cpu_disable_amx: bf16 on AVX512_BF16 even where AMX exists */
	void   *bpack;                 /* a product's packed B (cpu_bpack) */
	size_t  bpack_bytes;
	struct HwBackend **sub;        /* [n_sub] single-thread backends of parallel_items, made on first use */
	int     n_sub;
} CpuCtx;

/* the backend's OpenMP team size */
int    cpu_nthreads(HwBackend *be);
/* the backend's reduction scratch of at least n floats (grown, kept) */
float *cpu_scratch(HwBackend *be, size_t n);
/* the backend's buffer for a product's packed B operand, at least `bytes`,
 * 64-byte aligned (grown, kept); NULL when out of memory */
void  *cpu_bpack(HwBackend *be, size_t bytes);

/* backend_cpu_gemm.c */
void cpu_gemm(HwBackend *be, bool tA, bool tB, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
void cpu_gemm_rows_ragged(HwBackend *be, int nb, const int32_t *off, int N, int K, const float *A, int lda,
						  const float *W, float beta, float *C, int ldc);
void cpu_gemm_rows_batched(HwBackend *be, int nb, int M, int N, int K, const float *A, int lda, const float *W, float beta, float *C, int ldc);
void cpu_add_bias(HwBackend *be, float *out, const float *bias, int M, int N);
void cpu_bias_backward(HwBackend *be, float *db, const float *dout, int M, int N);
void cpu_axpby(HwBackend *be, float *y, float a, const float *x, float b, size_t n);
double cpu_sumsq(HwBackend *be, const float *x, size_t n);
void cpu_gather_f16_rows(HwBackend *be, float *out, const uint16_t *table, const int32_t *idx, int M, int C);
void cpu_gather_rows(HwBackend *be, float *out, const float *in, const int32_t *idx, int M, int C);
void cpu_scatter_rows(HwBackend *be, float *dst, const float *src, const int32_t *idx, int M, int C);
void cpu_scatter_add_rows(HwBackend *be, float *din, const float *dout, const int32_t *idx, int M, int C);
/* backend_cpu_bf16.c (backend.h bf16_* entries) */
bool  cpu_bf16_usable(HwBackend *be);
void *cpu_bf16_weight_pack(HwBackend *be, const float *W, int N, int K);
void  cpu_bf16_weight_free(HwBackend *be, void *packed);
void  cpu_gemm_bf16(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0, float beta, float *C, int ldc);
bool  cpu_gemm_bf16_any(HwBackend *be, bool transA, bool transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* backend_cpu_amx.c: AMX tiles usable by this backend now; C rows [0, mb)
 * x panels [0, np) (= or beta*C +) bf16 rows a (row i's pairs at a + 2*i*rs,
 * rows up to mb rounded up to 16 readable) @ panels b (panel j at b +
 * j*pstride, backend_cpu_bf16.c's layout) over kcn pairs, a multiple of 16;
 * N: the columns of the np panels (the last may be partial) */
bool  cpu_amx_usable(HwBackend *be);
void  cpu_amx_block(const uint16_t *a, size_t rs, int mb, const uint16_t *b, size_t pstride, int kcn, int np, int N,
					float *C, int ldc, float beta);
/* backend_cpu_norm.c */
void cpu_rmsnorm_forward(HwBackend *be, float *out, float *rstd, const float *x, const float *g, int N, int D);
void cpu_rmsnorm_backward(HwBackend *be, float *dx, float *dg, const float *dout, const float *x, const float *rstd, const float *g, int N, int D);
void cpu_encoder_forward(HwBackend *be, float *e, const HwEncInputs *in, const HwEncWeights *w, int N, int D);
void cpu_encoder_backward(HwBackend *be, const HwEncGrads *g, const float *de, const HwEncInputs *in, int N, int D, int ncols, int Uc, int U);
void cpu_qknorm_forward(HwBackend *be, float *qs, float *kn, float *v, float *qnorm, float *knorm, const float *qkvg, const float *tau, int N, int H, int dh);
void cpu_qknorm_backward(HwBackend *be, float *dqkvg, float *dtau, const float *dqs, const float *dkn, const float *dv, const float *qkvg, const float *qnorm, const float *knorm, const float *tau, int N, int H, int dh);
/* backend_cpu_pointwise.c */
void cpu_gate_residual_forward(HwBackend *be, float *xout, const float *xin, const float *gp, int ld, const float *o, int N, int D);
void cpu_gate_residual_backward(HwBackend *be, float *dgp, int ld, float *dO, const float *dx, const float *gp, const float *o, int N, int D);
void cpu_swiglu_forward(HwBackend *be, float *h, const float *gu, int N, int F);
void cpu_swiglu_backward(HwBackend *be, float *dgu, const float *dh, const float *gu, int N, int F);
void cpu_loss_forward_backward(HwBackend *be, float *loss, float *dZ, float *dlogits, const float *Z, const float *logits, const HwLossTargets *t, int stype, int B, int D, int K, float scale);
void cpu_adamw_update(HwBackend *be, float *p, float *m, float *v, const float *grad, size_t n, float gscale, float lr, float b1, float b2, float eps, float wd, int t);
void cpu_muon_momentum(HwBackend *be, float *u, float *buf, const float *grad, size_t n, float gscale, float mu);

/* Instruction levels of a processor or of an OpenBLAS kernel family. */
enum { HW_ISA_OLD, HW_ISA_AVX2, HW_ISA_AVX512, HW_ISA_AVX512_BF16 };
/* backend_cpu_blas.c: bf16 products beat fp32 ones of that instruction
 * level on a processor of this vendor (the rule), and on this machine
 * (backend.h bf16_preferred) */
bool cpu_bf16_beats_fp32(bool intel, int fp32_level, bool amx);
bool cpu_bf16_preferred(HwBackend *be, bool training);

/* backend_cpu_f32pack.c (backend.h f32_weight_pack, gemm_f32_packed; and
 * cpu_gemm's products where the processor has the kernels: false when it
 * did not run, C untouched) */
bool  cpu_f32_packed_usable(HwBackend *be);
void  cpu_f32_packed_force_avx2(bool on);    /* tests: the AVX2 kernel on an AVX-512 processor */
void *cpu_f32_weight_pack(HwBackend *be, const float *W, int N, int K);
void  cpu_f32_weight_free(HwBackend *be, void *packed);
#define F32_KWHOLE 1024            /* cpu_gemm_f32_any sums K unblocked up to this (gemm_f32_packed always) */
#define F32_KBLK   128             /* above it, in blocks of this, each added to C in order */
bool  cpu_gemm_f32_any(HwBackend *be, bool transA, bool transB, int M, int N, int K, float alpha, const float *A,
					   int lda, const float *B, int ldb, float beta, float *C, int ldc);
void  cpu_gemm_f32_packed(HwBackend *be, int M, int N, int K, const float *A, int lda, const void *packed, int n0,
						  float beta, float *C, int ldc);

#endif /* HW_BACKEND_CPU_INTERNAL_H */
