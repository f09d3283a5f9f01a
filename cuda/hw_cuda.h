/*
 * hw_cuda.h: internal contract of the CUDA backend (the .cu files of cuda/ only).
 *
 * The CUDA backend is a separate library, headwater_cuda.so, dlopen'ed by the
 * training worker (never by the postmaster or _PG_init).  Everything here is
 * C++ compiled by nvcc; the entry points the worker resolves with dlsym are
 * declared extern "C" in backend_cuda.cu, nccl.cu and memory.cu.
 *
 * Conventions (llm.c style):
 *   - every launcher takes (outputs, inputs, weights, dimensions, stream) and
 *     returns a cudaError_t from cudaGetLastError() (asynchronous errors show
 *     up at the next synchronisation, which the backend turns into HwError);
 *   - every tensor is row-major, device memory, fp32 unless the name says
 *     bf16; shapes are in comments;
 *   - no exit()/abort(): errors are returned (HwError from hw_common.h);
 *   - deterministic: reductions use a fixed order (no float atomics) so that
 *     the same inputs give the same bits on the same GPU.
 */
#ifndef HW_CUDA_H
#define HW_CUDA_H

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <stdint.h>
#include <stddef.h>

extern "C" {
#include "core/hw_common.h"
#include "core/attention.h"
#include "core/backend.h"
}

/* headwater_cuda.so links none of src/core: it has its own error setter with
 * the semantics of hw_error_set (sets err if not NULL, returns code), so the
 * library loads whatever process dlopen's it. */
int hw_cuda_error_set(HwError *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define hw_error_set hw_cuda_error_set

/* ------------------------------------------------------------------ C++ exceptions
 * No C++ exception may cross into C: the model calls the backend table
 * through function pointers and the worker calls the extern "C" entries
 * through dlsym; unwinding through C frames is undefined behaviour, and an
 * uncaught exception abort()s the PostgreSQL backend (the postmaster then
 * restarts every session).  CUDA, cuBLAS, NCCL and CUB report errors as
 * status codes, but host C++ here can throw (std::vector in gemm.cu's peak
 * probe, bad_alloc), so every entry is guarded: the body of each extern "C"
 * function sits between HW_CXX_TRY and HW_CXX_CATCH (an exception becomes
 * HW_ERR_INTERNAL with its what()), and backend_cuda_ops.cu wraps every table
 * entry in a template that does the same into the backend's kept error. */
#include <exception>

/* Sets err to "C++ exception in <where>: <what>"; returns HW_ERR_INTERNAL.  Never throws. */
int hw_cuda_exception(HwError *err, const char *where, const char *what) noexcept;

#define HW_CXX_TRY try {
/* Ends a guarded body: on an exception, err is set and `ret` returned
 * (leave it empty in a void function). */
#define HW_CXX_CATCH(err, ret) \
	} catch (const std::exception &hw_ex_) { hw_cuda_exception((err), __func__, hw_ex_.what()); return ret; } \
	  catch (...) { hw_cuda_exception((err), __func__, "an exception that is not a std::exception"); return ret; }

/* ------------------------------------------------------------------ errors */

/* Turns a CUDA / cuBLAS status into an HwError with the call site. */
int hw_cuda_err(HwError *err, cudaError_t e, const char *what, const char *file, int line);
int hw_cublas_err(HwError *err, cublasStatus_t s, const char *what, const char *file, int line);

#define HW_CUDA_TRY(err, call) do { cudaError_t _e = (call); \
	if (_e != cudaSuccess) return hw_cuda_err((err), _e, #call, __FILE__, __LINE__); } while (0)
#define HW_CUBLAS_TRY(err, call) do { cublasStatus_t _s = (call); \
	if (_s != CUBLAS_STATUS_SUCCESS) return hw_cublas_err((err), _s, #call, __FILE__, __LINE__); } while (0)
/* Variant for cleanup paths: record the error, jump to a label. */
#define HW_CUDA_GOTO(err, rc, label, call) do { cudaError_t _e = (call); \
	if (_e != cudaSuccess) { rc = hw_cuda_err((err), _e, #call, __FILE__, __LINE__); goto label; } } while (0)

static inline int hw_cdiv(long a, long b) { return (int) ((a + b - 1) / b); }

/* ------------------------------------------------------------------ memory (memory.cu) */

typedef struct HwCudaAlloc HwCudaAlloc;      /* one tracked device allocation */

typedef struct HwCudaMem
{
	int          device;
	HwCudaAlloc *head;          /* every live allocation; freed by hw_cuda_mem_release_all */
	size_t       live_bytes;    /* in use */
	size_t       cached_bytes;  /* freed, kept for reuse */
	size_t       peak_bytes;
	size_t       reserve_bytes; /* headroom left free for cuBLAS / NCCL / the driver */
} HwCudaMem;

/* Allocates `bytes` on the current device after a cudaMemGetInfo check; on
 * failure err says how much was needed, how much is free and what to lower. */
int  hw_cuda_mem_alloc(HwCudaMem *m, size_t bytes, const char *what, void **out, HwError *err);
void hw_cuda_mem_free(HwCudaMem *m, void *p);   /* cached for reuse, not returned to the driver */
void hw_cuda_mem_trim(HwCudaMem *m);              /* return cached blocks to the driver */
void hw_cuda_mem_release_all(HwCudaMem *m);

/* Pinned host staging: two page-locked slots and a copy stream (memory.cu). */
typedef struct HwCudaStaging
{
	size_t       slot_bytes;
	void        *host[2];       /* cudaMallocHost */
	cudaEvent_t  copied[2];     /* recorded on the copy stream after the DMA out of slot i */
	cudaEvent_t  compute_ready; /* compute stream position the copy must follow */
	cudaEvent_t  upload_done;   /* copy stream position the compute stream waits for */
	cudaStream_t copy_stream;
	int          next;          /* slot the next chunk goes to */
} HwCudaStaging;

int  hw_cuda_staging_init(HwCudaStaging *st, size_t slot_bytes, HwError *err);
void hw_cuda_staging_destroy(HwCudaStaging *st);
/* Host (pageable) -> device, overlapped with compute (see memory.cu). */
int  hw_cuda_upload(HwCudaStaging *st, cudaStream_t compute, void *dst, const void *src,
					size_t bytes, HwError *err);

/* ------------------------------------------------------------------ GEMM (gemm.cu) */

typedef enum HwCudaDtype { HW_CUDA_F32 = 0, HW_CUDA_BF16 = 1 } HwCudaDtype;

typedef struct HwCudaBlas
{
	cublasHandle_t   handle;
	cublasLtHandle_t lt;
	void            *workspace;     /* cuBLASLt workspace (tracked by mem) */
	size_t           workspace_bytes;
	/* bf16 scratch for operands given in fp32 (converted on the fly) */
	__nv_bfloat16   *scratch;
	size_t           scratch_elems;
} HwCudaBlas;

int  hw_cuda_blas_init(HwCudaBlas *bl, HwCudaMem *m, cudaStream_t stream, HwError *err);
void hw_cuda_blas_destroy(HwCudaBlas *bl, HwCudaMem *m);

typedef enum HwCudaGemmMode
{
	HW_GEMM_BF16 = 0,    /* fp32 data, CUBLAS_COMPUTE_32F_FAST_16BF (default) */
	HW_GEMM_BF16X = 1,   /* explicit bf16 copies, CUBLAS_COMPUTE_32F */
	HW_GEMM_TF32 = 2,
	HW_GEMM_FP32 = 3     /* plain SGEMM: tight comparisons with the CPU backend */
} HwCudaGemmMode;

int         hw_cuda_gemm_mode(void);            /* HW_CUDA_GEMM env: bf16 | bf16x | tf32 | fp32 */
void        hw_cuda_gemm_set_mode(int mode);
const char *hw_cuda_gemm_mode_name(int mode);

/*
 * Row-major GEMM, the contract of backend.h: C[M,N] = alpha * op(A) @ op(B) +
 * beta * C, A stored [M,K] (or [K,M] when transA) with row stride lda, B
 * stored [K,N] (or [N,K] when transB) with row stride ldb; fp32 in and out,
 * tensor-core math per the mode above, fp32 accumulation.  beta 0: C not read.
 */
int hw_cuda_gemm(HwCudaBlas *bl, HwCudaMem *m, cudaStream_t stream, int transA, int transB,
				 int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
				 float beta, float *C, int ldc, HwError *err);

/* fp32 -> bf16 and back, elementwise, n elements. */
cudaError_t hw_cuda_f32_to_bf16(__nv_bfloat16 *dst, const float *src, size_t n, cudaStream_t s);
cudaError_t hw_cuda_bf16_to_f32(float *dst, const __nv_bfloat16 *src, size_t n, cudaStream_t s);

/* Measures the dense bf16 GEMM peak (TFLOP/s) with cuBLAS on the current
 * device: n x n x n GEMMs, fp32 accumulation, median of `reps` timed runs. */
int hw_cuda_measure_bf16_peak(HwCudaBlas *bl, HwCudaMem *m, cudaStream_t stream, int n, int reps,
							  double *tflops, HwError *err);

/* ------------------------------------------------------------------ attention (attention.cu) */

/* Device copy of the batch tensors a mask is computed from (borrowed). */
typedef struct HwCudaMaskInfo
{
	int32_t         B, S, R;
	const int32_t  *column_ids;   /* [B,S] device */
	const uint16_t *seq_row_ids;  /* [B,S] device */
	const uint8_t  *is_padding;   /* [B,S] device */
	const uint8_t  *fk_adj;       /* [B,R,R] device */
	const uint16_t *perm;         /* [B,S] device; NULL = identity */
} HwCudaMaskInfo;

#define HW_CUDA_ATTN_TILE 64

typedef struct HwCudaAttnPlan
{
	HwCudaMaskInfo info;
	int            kind;         /* HwMaskKind */
	int            nt;           /* tiles per sequence: ceil(S / 64) */
	/* device arrays */
	uint8_t       *tile_mask;    /* [B, nt, nt] 1 = tile has an allowed pair */
	int32_t       *q_count;      /* [B, nt] number of key tiles per query tile */
	int16_t       *q_list;       /* [B, nt, nt] key tiles per query tile, ascending */
	int32_t       *k_count;      /* [B, nt] number of query tiles per key tile */
	int16_t       *k_list;       /* [B, nt, nt] query tiles per key tile, ascending */
	unsigned long long *stats;   /* [2]: allowed pairs, visited tile pairs */
	void          *block;        /* single allocation holding all of the above */
} HwCudaAttnPlan;

int  hw_cuda_attn_plan_build(HwCudaAttnPlan *plan, HwCudaMem *m, const HwCudaMaskInfo *info,
							 int kind, cudaStream_t stream, HwError *err);
void hw_cuda_attn_plan_free(HwCudaAttnPlan *plan, HwCudaMem *m);
/* Synchronises the stream and reads the counters (benchmarks only). */
int  hw_cuda_attn_plan_stats(const HwCudaAttnPlan *plan, cudaStream_t stream,
							 int64_t *allowed_pairs, int64_t *visited_tile_pairs, HwError *err);

/* q, k, v, out: [B,S,H,dh] (q/k/v fp32 or bf16, out fp32); lse [B,H,S] fp32.
 * dh must be 16, 32, 64 or 128. */
int hw_cuda_attn_forward(float *out, float *lse,
						 const void *q, const void *k, const void *v, HwCudaDtype dt,
						 const HwCudaAttnPlan *plan, int H, int dh,
						 cudaStream_t stream, HwError *err);

/* dq, dk, dv [B,S,H,dh] fp32 OVERWRITTEN; dout, out [B,S,H,dh] fp32;
 * scratch_delta: [B,H,S] fp32 device scratch (rowsum(dout*out)). */
int hw_cuda_attn_backward(float *dq, float *dk, float *dv, float *scratch_delta,
						  const float *dout, const float *out, const float *lse,
						  const void *q, const void *k, const void *v, HwCudaDtype dt,
						  const HwCudaAttnPlan *plan, int H, int dh,
						  cudaStream_t stream, HwError *err);

/* ------------------------------------------------------------------ kernels of backend.h
 * Launchers: asynchronous on `s`, return cudaGetLastError().  Shapes and
 * semantics are those of the same-named entries of backend.h and of the CPU
 * backend (src/backend/backend_cpu*.c), which is their test oracle.
 * `part` arguments are device scratch for deterministic two-pass reductions
 * (fixed 256-row chunks summed in chunk order); sizes in the comments. */

#define HW_CUDA_RCH 256                      /* rows per reduction chunk */
static inline int hw_cuda_nch(int rows) { return (rows + HW_CUDA_RCH - 1) / HW_CUDA_RCH; }

/* util.cu */
cudaError_t hw_k_add_bias(cudaStream_t s, float *out, const float *bias, int M, int N);
/* out[N] (+=) column sums of x[M,N] (row stride ldx); part: nch(M)*N floats. */
cudaError_t hw_k_colsum(cudaStream_t s, float *out, float *part, const float *x, int M, int N, int ldx);
cudaError_t hw_k_axpby(cudaStream_t s, float *y, float a, const float *x, float b, size_t n);
/* *result (device double) = sum x^2; part: ceil(n/4096) doubles. */
cudaError_t hw_k_sumsq(cudaStream_t s, double *result, double *part, const float *x, size_t n);
cudaError_t hw_k_gather_f16_rows(cudaStream_t s, float *out, const uint16_t *table, const int32_t *idx, int M, int C);
cudaError_t hw_k_gather_rows(cudaStream_t s, float *out, const float *in, const int32_t *idx, int M, int C);
cudaError_t hw_k_scatter_add_rows(cudaStream_t s, float *din, const float *dout, const int32_t *idx, int M, int C);

/* norm.cu */
cudaError_t hw_k_rmsnorm_forward(cudaStream_t s, float *out, float *rstd, const float *x, const float *g, int N, int D);
/* part: nch(N)*D floats */
cudaError_t hw_k_rmsnorm_backward(cudaStream_t s, float *dx, float *dg, float *part, const float *dout,
								  const float *x, const float *rstd, const float *g, int N, int D);
cudaError_t hw_k_qknorm_forward(cudaStream_t s, float *qs, float *kn, float *v, float *qnorm, float *knorm,
								const float *qkvg, const float *tau, int N, int H, int dh);
/* tmp: N*H floats; part: nch(N)*H floats */
cudaError_t hw_k_qknorm_backward(cudaStream_t s, float *dqkvg, float *dtau, float *tmp, float *part,
								 const float *dqs, const float *dkn, const float *dv,
								 const float *qkvg, const float *qnorm, const float *knorm,
								 const float *tau, int N, int H, int dh);

/* activations.cu */
cudaError_t hw_k_gate_residual_forward(cudaStream_t s, float *xout, const float *xin, const float *gpre, int ld_g,
									   const float *o, int N, int D);
cudaError_t hw_k_gate_residual_backward(cudaStream_t s, float *dgpre, int ld_g, float *dO, const float *dxout,
										const float *gpre, const float *o, int N, int D);
cudaError_t hw_k_swiglu_forward(cudaStream_t s, float *h, const float *gu, int N, int F);
cudaError_t hw_k_swiglu_backward(cudaStream_t s, float *dgu, const float *dh, const float *gu, int N, int F);

/* encoder.cu (structs of backend.h, device pointers inside) */
struct HwEncInputs;
struct HwEncWeights;
struct HwEncGrads;
cudaError_t hw_k_encoder_forward(cudaStream_t s, float *e, const struct HwEncInputs *in,
								 const struct HwEncWeights *w, int N, int D);
/* Scratch of the encoder backward (sizes from hw_cuda_encoder_scratch_bytes). */
size_t      hw_cuda_encoder_scratch_bytes(int N, int D, int maxkeys);
cudaError_t hw_k_encoder_backward(cudaStream_t s, void *scratch, size_t scratch_bytes,
								  const struct HwEncGrads *g, const float *de,
								  const struct HwEncInputs *in, int N, int D, int ncols, int Uc, int U);

/* loss.cu */
struct HwLossTargets;
cudaError_t hw_k_loss_forward_backward(cudaStream_t s, float *loss, float *dZ, float *dlogits,
									   const float *Z, const float *logits, const struct HwLossTargets *t,
									   int stype, int B, int D, int K, float scale);

/* optim.cu */
cudaError_t hw_k_adamw_update(cudaStream_t s, float *p, float *m, float *v, const float *grad, size_t n,
							  float gscale, float lr, float b1, float b2, float eps, float wd,
							  float bc1, float bc2);
cudaError_t hw_k_muon_momentum(cudaStream_t s, float *u, float *buf, const float *grad, size_t n,
							   float gscale, float mu);

/* backend_cuda.cu: the stream and device of a CUDA backend (nccl.cu). */
cudaStream_t hw_backend_cuda_stream(HwBackend *be);
int          hw_backend_cuda_device(HwBackend *be);

#endif /* HW_CUDA_H */
