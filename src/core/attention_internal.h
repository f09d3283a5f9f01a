/*
 * attention_internal.h: the attention plan's layout, shared by the plan
 * builder (attention_plan.c) and the CPU kernels (attention_kernels.c, which
 * drives the per-(b, h) kernels of attention_tiles.h, built once per
 * instruction set by attention_kernels_{avx512,avx2,generic}.c).
 */
#ifndef HW_ATTENTION_INTERNAL_H
#define HW_ATTENTION_INTERNAL_H

#include "core/attention.h"

/* tile edge in positions: one 16-bit mask word per query row, 16 keys (one
 * AVX-512 register, two AVX2 ones) */
#define T HW_ATTN_TILE
#if HW_ATTN_TILE != 16
#error "the kernels assume 16-position tiles (16-bit masks)"
#endif

struct HwAttnPlan
{
	int32_t     B, S, R, nt;       /* nt = tiles per sequence */
	HwMaskKind  kind;
	int32_t    *perm;              /* [B,S] permuted position -> original index */
	int32_t    *iperm;             /* [B,S] original index -> permuted position */
	int64_t    *qptr;              /* [B*nt+1] CSR over query tiles */
	int32_t    *ktile;             /* [npairs] key tile of each visited pair */
	uint16_t   *mask;              /* [npairs,T] bit jj of word ii: (ii,jj) allowed */
	int64_t     npairs;
	int64_t     allowed;
};

/*
 * Per-thread buffers of one (b, h), all 64-byte aligned, dhp = dh rounded up
 * to 16 (extra dims are zero: they change no dot product and are dropped
 * on scatter).  Row layouts [Sp][dhp]; transposed tiles [nt][dhp][T].
 */
typedef struct AttnWork
{
	int    Sp, dhp;
	float *q, *k, *kt, *v, *vt, *o, *dout, *dq, *dk, *dv;
	float *rowv, *lse;	/* [Sp] */
	float *P, *dS;		/* [T][T] one tile pair */
	uint8_t *qsel;		/* [Sp] forward with a query list: the listed ones (zero between calls) */
	int   *tile_n;		/* [nt] forward with a query list: listed queries per tile (zero between calls) */
	uint8_t *ktile_need;	/* [nt] forward with a query list: the key tiles they visit (zero between calls) */
	float   *sc;		/* [Sp + T] the list kernel's scores of one query */
	int32_t *kidx;		/* [Sp] the list kernel's keys of one query (permuted positions) */
	int32_t *dense;		/* [Sp] the direct list kernel's rows set aside for the tiles */
} AttnWork;

/*
 * The kernels of one (b, h).  Forward: q, k, v, out [S,H,dh] of element b,
 * lse [S] of (b, h); only != NULL: the n_only queries at the flat cells
 * only[i] (b*S + position, distinct) alone (inference: q and out hold
 * their rows [n_only, H*dh] in that order, lse is not written).
 * Backward: dq, dk, dv overwritten; dout, out [S,H,dh], lse [S].
 * The forward by tiles (attn_fwd_head_*: every lane of each visited key
 * tile, online softmax) or by lists (attn_fwd_head_list_*: each query's
 * allowed keys alone, inference on the sparse masks).
 */
typedef void (*AttnFwdHeadFn)(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
							  float *out, float *lse, const float *q, const float *k, const float *v,
							  const int32_t *only, int n_only);
/* The serving forward by lists of queries [i0, i1) of sequence b, every
 * head at once (dh a multiple of 16; attention_lists.h
 * fwd_rows_list_direct): q and out rows [., H*dh] from sequence b's first
 * row (only == NULL: query i is row i; else only[i] the flat cell b*S +
 * position of query i, q and out the list's rows from its first), k, v
 * from sequence b's first row, lse [H,S] of sequence b (only == NULL). */
typedef void (*AttnFwdRowsFn)(const HwAttnPlan *plan, int b, int H, int dh, AttnWork *w, float *out, float *lse,
							  const float *q, const float *k, const float *v, const int32_t *only, int i0, int i1);
typedef void (*AttnBwdHeadFn)(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
							  float *dq, float *dk, float *dv, const float *dout, const float *out,
							  const float *lse, const float *q, const float *k, const float *v);

/* one build each: 16-lane AVX-512 (x86-64-v4), 8-lane AVX2 + FMA
 * (x86-64-v3), 4-lane baseline (any target of GCC's vectors); the x86 ones
 * only with GCC on x86-64 (HW_ATTN_X86_BUILDS) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HW_ATTN_X86_BUILDS 1
#else
#define HW_ATTN_X86_BUILDS 0
#endif
void attn_fwd_head_avx512(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
						  float *out, float *lse, const float *q, const float *k, const float *v,
						  const int32_t *only, int n_only);
void attn_fwd_head_list_avx512(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
							   float *out, float *lse, const float *q, const float *k, const float *v,
							   const int32_t *only, int n_only);
void attn_fwd_rows_list_avx512(const HwAttnPlan *plan, int b, int H, int dh, AttnWork *w, float *out, float *lse,
							 const float *q, const float *k, const float *v, const int32_t *only, int i0, int i1);
void attn_bwd_head_avx512(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
						  float *dq, float *dk, float *dv, const float *dout, const float *out,
						  const float *lse, const float *q, const float *k, const float *v);
void attn_fwd_head_avx2(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
						float *out, float *lse, const float *q, const float *k, const float *v,
						  const int32_t *only, int n_only);
void attn_fwd_head_list_avx2(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
							   float *out, float *lse, const float *q, const float *k, const float *v,
							   const int32_t *only, int n_only);
void attn_fwd_rows_list_avx2(const HwAttnPlan *plan, int b, int H, int dh, AttnWork *w, float *out, float *lse,
							 const float *q, const float *k, const float *v, const int32_t *only, int i0, int i1);
void attn_bwd_head_avx2(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
						float *dq, float *dk, float *dv, const float *dout, const float *out,
						const float *lse, const float *q, const float *k, const float *v);
void attn_fwd_head_generic(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
						   float *out, float *lse, const float *q, const float *k, const float *v,
						  const int32_t *only, int n_only);
void attn_fwd_head_list_generic(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
							   float *out, float *lse, const float *q, const float *k, const float *v,
							   const int32_t *only, int n_only);
void attn_fwd_rows_list_generic(const HwAttnPlan *plan, int b, int H, int dh, AttnWork *w, float *out, float *lse,
							 const float *q, const float *k, const float *v, const int32_t *only, int i0, int i1);
void attn_bwd_head_generic(const HwAttnPlan *plan, int b, int h, int H, int dh, AttnWork *w,
						   float *dq, float *dk, float *dv, const float *dout, const float *out,
						   const float *lse, const float *q, const float *k, const float *v);

/* Which build runs: AUTO (the default) is the widest this CPU has.  Tests
 * and bench/bin/attention force one to compare builds; attn_kernels_force
 * returns false and changes nothing when the CPU lacks it.  A call takes the
 * setting once, before its threads start, so changing it while another
 * thread runs attention affects only later calls. */
typedef enum HwAttnBuild
{
	HW_ATTN_BUILD_AUTO = 0,
	HW_ATTN_BUILD_GENERIC,
	HW_ATTN_BUILD_AVX2,
	HW_ATTN_BUILD_AVX512
} HwAttnBuild;

bool        attn_kernels_force(HwAttnBuild build);
HwAttnBuild attn_kernels_in_use(void);	/* never AUTO */
const char *attn_kernels_name(HwAttnBuild build);

#endif /* HW_ATTENTION_INTERNAL_H */
