/*
 * gpu_test.h: what the CUDA backend tests (test/gpu/test_cuda_*.c) share:
 * the two backends under comparison, the pass/fail count, random inputs,
 * buffers on both backends and their comparison, and the test entry points
 * run by main (test_cuda_backend.c).
 */
#ifndef HW_GPU_TEST_H
#define HW_GPU_TEST_H

#include "core/hw_common.h"
#include "core/backend.h"
#include "core/attention.h"
#include "core/model.h"
#include "synth_batch.h"
#include "hw_cuda_api.h"
#include "core/collective.h"
#include "core/dp_step.h"
#include "core/dp_threads.h"
#include <time.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern HwBackend *cpu, *gpu;
extern int n_pass, n_fail;

/* One test: prints its name; EXPECT marks it failed; TEST_END counts it. */
#define TEST_BEGIN(name) do { int _ok = 1; const char *_name = name; printf("%s\n", _name);
#define EXPECT(x) do { if (!(x)) _ok = 0; } while (0)
#define TEST_END() if (_ok) n_pass++; else { n_fail++; printf("  => %s FAILED\n", _name); } } while (0)

/* Uniform (0, 1) and standard normal draws of one fixed stream (the tests
 * run in a fixed order, so every run sees the same inputs). */
double urand(void);
float  nrand(void);
/* n normal draws times scale (malloc'd). */
float *randv(size_t n, float scale);

/* A buffer on both backends. */
typedef struct Dual { void *c, *g; size_t bytes; } Dual;
Dual dual(const void *host, size_t bytes);
void dual_free(Dual *d);
#define DF(x) ((float *) (x))
/* 1 when the GPU backend reports no error; prints it otherwise. */
int  gpu_ok(const char *what);
/* Compares n floats of d (cpu reference vs gpu) with |gpu - cpu| <= atol +
 * rtol |cpu|; prints the worst entry. */
int  cmp(const char *what, Dual d, size_t n, double atol, double rtol);
/* Like cmp with a per-element bound lim[i] (host array). */
int  cmp_bound(const char *what, Dual d, size_t n, const float *lim);

/* A model of `preset` at batch B, sequence S on be, with the synthetic
 * column tables (*colt, *catt: caller frees); NULL (printed) on failure. */
HwModel *make_model(HwBackend *be, const char *preset, int B, int S, int stype, uint16_t **colt, uint16_t **catt);

/* Defined by the host simulation (test/gpu/host_sim/sim_inject.cc) only:
 * makes the after-th runtime call from now fail, kind 1 with a C++
 * exception, kind 2 with cudaErrorIllegalAddress.  Absent on a GPU. */
extern void hw_sim_inject(int kind, int after) __attribute__((weak));

/* ops (test_cuda_ops.c) */
void test_gemm(const char *mode, int bf16);
void test_utilities(void);
void test_norms_activations(void);
void test_encoder(void);
void test_attention(int dh, int B_, int S_, int H);
void test_loss_optim(void);
/* whole model (test_cuda_model.c) */
void test_train_step(const char *mode, double loss_rtol, double grad_rtol, double update_rtol);
void test_learning(void);
void test_repeatable(int B, int S, int steps);
void test_shapes(void);
void test_serving(int B, int S);
/* inputs and failures (test_cuda_inputs.c) */
void test_plan_validation(void);
void test_uploads(void);
void test_faults(void);
/* NCCL (test_cuda_nccl.c) */
void test_nccl(int ngpu);
void test_nccl_collective(int ngpu);
void test_nccl_grouped(int ngpu);

#endif /* HW_GPU_TEST_H */
