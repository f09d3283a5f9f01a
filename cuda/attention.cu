/*
 * attention.cu: block-sparse masked attention on the GPU, forward and backward.
 *
 * Same contract as src/core/attention.h (the CPU kernel is the test oracle):
 *   q, k, v, out  [B,S,H,dh]  (q already L2-normalised and scaled by tau/sqrt(dh),
 *                              k L2-normalised; logits = q . k)
 *   lse           [B,H,S]     fp32 log-sum-exp per query, saved for backward
 *   masks         COLUMN / OUTBOUND / INBOUND / FULL, AND not-padding on both
 *                 sides, OR the identity diagonal; computed on the fly from
 *                 column_ids, seq_row_ids, fk_adj, is_padding.  Never [B,S,S].
 *
 * Block sparsity: positions are visited in the order of the sampler's
 * permutation (col_perm / out_perm / in_perm, identity for FULL), cut into
 * tiles of 64 permuted positions.  A plan (built on the device, once per
 * batch and mask kind, reused for every layer, head and for backward) marks
 * the (query tile, key tile) pairs that hold at least one allowed pair and
 * lists them per query tile (forward, dq) and per key tile (dk, dv).  Empty
 * tiles are never loaded: cost follows the number of non-empty tiles.
 *
 * Arithmetic: fp32 everywhere (inputs may be bf16 and are widened on load),
 * online softmax (flash-style: running max and sum, output rescaled when the
 * max grows), masked pairs contribute exactly nothing.  Backward recomputes
 * the probabilities from lse (no [S,S] storage): dq per query tile, dk/dv per
 * key tile, so no atomics and a fixed summation order (deterministic).
 *
 * Kernel shape: one thread per query (or key) row, a 64-row tile per block,
 * the other side's tile staged in shared memory in chunks.  This is a CUDA
 * core kernel, simple enough to be checked by reading; a tensor-core (mma)
 * version is future work (docs/cuda.md).
 */
#include "hw_cuda.h"
#include "hw_cuda_limits.h"
#include <math.h>
#include <string.h>

extern "C" {
#include "core/attention.h"
}

#define TILE HW_CUDA_ATTN_TILE

/* HW_SIM_BEGIN: device code also compiled on the host by test/gpu/host_sim */
__device__ __forceinline__ float ldf(const float *p) { return __ldg(p); }
__device__ __forceinline__ float ldf(const __nv_bfloat16 *p) { return __bfloat162float(*p); }

/* The mask of attention.h for one (query i, key j) pair, original positions. */
__device__ __forceinline__ bool
mask_ok(int kind, int i, int j, int ri, int rj, int ci, int cj, int padi, int padj,
		const uint8_t *fk, int R)
{
	if (i == j)
		return true;
	if (padi | padj)
		return false;
	switch (kind)
	{
		case HW_MASK_COLUMN:
			return ci == cj;
		case HW_MASK_OUTBOUND:
			if (ri == rj)
				return true;
			return ri < R && rj < R && __ldg(fk + (size_t) ri * R + rj) != 0;
		case HW_MASK_INBOUND:
			return ri < R && rj < R && __ldg(fk + (size_t) rj * R + ri) != 0;
		default:
			return true;
	}
}

/* Metadata of one permuted position p of sequence b. */
struct PosMeta { int idx, row, col, pad; };

__device__ __forceinline__ PosMeta
pos_meta(const HwCudaMaskInfo &in, int b, int p)
{
	PosMeta m;
	size_t base = (size_t) b * in.S;
	m.idx = in.perm ? (int) in.perm[base + p] : p;
	m.row = in.seq_row_ids[base + m.idx];
	m.col = in.column_ids[base + m.idx];
	m.pad = in.is_padding[base + m.idx];
	return m;
}

/* ------------------------------------------------------------------ plan */

/* grid (nt, nt, B), 256 threads: counts allowed pairs of tile (qt, kt). */
__global__ void
plan_tiles_kernel(HwCudaMaskInfo in, int kind, int nt, uint8_t *tile_mask, unsigned long long *stats)
{
	int qt = blockIdx.x, kt = blockIdx.y, b = blockIdx.z;
	__shared__ int qi[TILE], qr[TILE], qc[TILE], qp[TILE];
	__shared__ int ki[TILE], kr[TILE], kc[TILE], kp[TILE];
	const uint8_t *fk = in.fk_adj + (size_t) b * in.R * in.R;
	int t = threadIdx.x;

	if (t < TILE)
	{
		int p = qt * TILE + t;
		if (p < in.S) { PosMeta m = pos_meta(in, b, p); qi[t] = m.idx; qr[t] = m.row; qc[t] = m.col; qp[t] = m.pad; }
		else qi[t] = -1;
	}
	else if (t < 2 * TILE)
	{
		int u = t - TILE, p = kt * TILE + u;
		if (p < in.S) { PosMeta m = pos_meta(in, b, p); ki[u] = m.idx; kr[u] = m.row; kc[u] = m.col; kp[u] = m.pad; }
		else ki[u] = -1;
	}
	__syncthreads();

	int total = 0;
	for (int e = t; e < TILE * TILE; e += blockDim.x)
	{
		int a = e / TILE, c = e % TILE;
		bool ok = qi[a] >= 0 && ki[c] >= 0 &&
			mask_ok(kind, qi[a], ki[c], qr[a], kr[c], qc[a], kc[c], qp[a], kp[c], fk, in.R);
		total += __syncthreads_count(ok);
	}
	if (t == 0)
	{
		tile_mask[((size_t) b * nt + qt) * nt + kt] = total > 0;
		if (total > 0)
		{
			atomicAdd(&stats[0], (unsigned long long) total);   /* integer: order-free */
			atomicAdd(&stats[1], 1ULL);
		}
	}
}

/* grid B, nt threads: compacts the tile mask into per-row and per-column lists. */
__global__ void
plan_lists_kernel(int nt, const uint8_t *tile_mask, int32_t *q_count, int16_t *q_list,
				  int32_t *k_count, int16_t *k_list)
{
	int b = blockIdx.x, t = threadIdx.x;
	if (t >= nt)
		return;
	const uint8_t *tm = tile_mask + (size_t) b * nt * nt;
	int c = 0;
	for (int kt = 0; kt < nt; kt++)
		if (tm[t * nt + kt])
			q_list[((size_t) b * nt + t) * nt + c++] = (int16_t) kt;
	q_count[b * nt + t] = c;
	c = 0;
	for (int qt = 0; qt < nt; qt++)
		if (tm[qt * nt + t])
			k_list[((size_t) b * nt + t) * nt + c++] = (int16_t) qt;
	k_count[b * nt + t] = c;
}

/* HW_SIM_END */
int
hw_cuda_attn_plan_build(HwCudaAttnPlan *plan, HwCudaMem *m, const HwCudaMaskInfo *info,
						int kind, cudaStream_t stream, HwError *err)
{
	memset(plan, 0, sizeof(*plan));
	if (info->B <= 0 || info->S <= 0 || info->R < 0 || kind < 0 || kind > HW_MASK_FULL)
		return hw_error_set(err, HW_ERR_INVALID, "attention plan: bad shape B=%d S=%d R=%d kind=%d",
							info->B, info->S, info->R, kind);
	int nt = hw_cdiv(info->S, TILE);
	if (nt > 1024)
		return hw_error_set(err, HW_ERR_INVALID, "attention plan: S=%d too long (at most %d)",
							info->S, 1024 * TILE);
	size_t B = info->B, nn = B * nt * nt;
	/* layout: stats | q_count | k_count | q_list | k_list | tile_mask (aligned pieces) */
	size_t off_stats = 0, off_qc = 16, off_kc = off_qc + ((B * nt * 4 + 15) & ~15UL);
	size_t off_ql = off_kc + ((B * nt * 4 + 15) & ~15UL);
	size_t off_kl = off_ql + ((nn * 2 + 15) & ~15UL);
	size_t off_tm = off_kl + ((nn * 2 + 15) & ~15UL);
	size_t bytes = off_tm + nn;
	void *blk = NULL;
	int rc = hw_cuda_mem_alloc(m, bytes, "attention tile plan", &blk, err);
	if (rc != HW_OK)
		return rc;
	char *base = (char *) blk;
	plan->info = *info;
	plan->kind = kind;
	plan->nt = nt;
	plan->block = blk;
	plan->stats = (unsigned long long *) (base + off_stats);
	plan->q_count = (int32_t *) (base + off_qc);
	plan->k_count = (int32_t *) (base + off_kc);
	plan->q_list = (int16_t *) (base + off_ql);
	plan->k_list = (int16_t *) (base + off_kl);
	plan->tile_mask = (uint8_t *) (base + off_tm);

	cudaError_t e = cudaMemsetAsync(plan->stats, 0, 16, stream);
	if (e == cudaSuccess)
	{
		plan_tiles_kernel<<<dim3(nt, nt, info->B), 256, 0, stream>>>(*info, kind, nt, plan->tile_mask, plan->stats);
		plan_lists_kernel<<<info->B, nt, 0, stream>>>(nt, plan->tile_mask, plan->q_count, plan->q_list,
													   plan->k_count, plan->k_list);
		e = cudaGetLastError();
	}
	if (e != cudaSuccess)
	{
		hw_cuda_mem_free(m, blk);
		memset(plan, 0, sizeof(*plan));
		return hw_cuda_err(err, e, "attention plan kernels", __FILE__, __LINE__);
	}
	return HW_OK;
}

void
hw_cuda_attn_plan_free(HwCudaAttnPlan *plan, HwCudaMem *m)
{
	if (plan && plan->block)
		hw_cuda_mem_free(m, plan->block);
	if (plan)
		memset(plan, 0, sizeof(*plan));
}

int
hw_cuda_attn_plan_stats(const HwCudaAttnPlan *plan, cudaStream_t stream,
						int64_t *allowed_pairs, int64_t *visited_tile_pairs, HwError *err)
{
	unsigned long long h[2] = {0, 0};
	HW_CUDA_TRY(err, cudaMemcpyAsync(h, plan->stats, sizeof(h), cudaMemcpyDeviceToHost, stream));
	HW_CUDA_TRY(err, cudaStreamSynchronize(stream));
	if (allowed_pairs) *allowed_pairs = (int64_t) h[0];
	if (visited_tile_pairs) *visited_tile_pairs = (int64_t) h[1];
	return HW_OK;
}

/* HW_SIM_BEGIN */
/* ------------------------------------------------------------------ forward */

/* Keys staged per shared-memory chunk: 64 keys of dh floats for K and V
 * (32 KiB at dh = 64); 32 keys at dh = 128 (32 KiB). */
template <int DH> struct Chunk { static const int KC = DH <= 64 ? 64 : 32; };

/* grid (nt, H, B), 64 threads: thread t owns the query at permuted position qt*64+t. */
template <int DH, typename TIn>
__global__ void __launch_bounds__(TILE)
attn_fwd_kernel(float *out, float *lse, const TIn *q, const TIn *k, const TIn *v,
				HwCudaMaskInfo in, int kind, int nt, const int32_t *q_count, const int16_t *q_list, int H)
{
	const int KC = Chunk<DH>::KC;
	__shared__ float Ks[KC][DH];
	__shared__ float Vs[KC][DH];
	__shared__ int   ki[KC], kr[KC], kc[KC], kp[KC];

	int qt = blockIdx.x, h = blockIdx.y, b = blockIdx.z, t = threadIdx.x;
	int S = in.S, R = in.R;
	const uint8_t *fk = in.fk_adj + (size_t) b * R * R;
	int p = qt * TILE + t;
	bool valid = p < S;
	PosMeta me = {0, 0, 0, 0};
	if (valid)
		me = pos_meta(in, b, p);

	float qv[DH], acc[DH];
	float mx = -INFINITY, l = 0.f;
	if (valid)
	{
		const TIn *qp = q + (((size_t) b * S + me.idx) * H + h) * DH;
#pragma unroll
		for (int d = 0; d < DH; d++) { qv[d] = ldf(qp + d); acc[d] = 0.f; }
	}

	int ntiles = q_count[b * nt + qt];
	const int16_t *list = q_list + ((size_t) b * nt + qt) * nt;
	for (int li = 0; li < ntiles; li++)
	{
		int kt = list[li];
		for (int c0 = 0; c0 < TILE; c0 += KC)
		{
			__syncthreads();
			for (int u = t; u < KC; u += TILE)
			{
				int pk = kt * TILE + c0 + u;
				if (pk < S) { PosMeta km = pos_meta(in, b, pk); ki[u] = km.idx; kr[u] = km.row; kc[u] = km.col; kp[u] = km.pad; }
				else ki[u] = -1;
			}
			__syncthreads();
			for (int e = t; e < KC * DH; e += TILE)
			{
				int u = e / DH, d = e % DH;
				float kvv = 0.f, vvv = 0.f;
				if (ki[u] >= 0)
				{
					size_t off = (((size_t) b * S + ki[u]) * H + h) * DH + d;
					kvv = ldf(k + off);
					vvv = ldf(v + off);
				}
				Ks[u][d] = kvv;
				Vs[u][d] = vvv;
			}
			__syncthreads();
			if (!valid)
				continue;
			for (int u = 0; u < KC; u++)
			{
				if (ki[u] < 0 ||
					!mask_ok(kind, me.idx, ki[u], me.row, kr[u], me.col, kc[u], me.pad, kp[u], fk, R))
					continue;
				float s = 0.f;
#pragma unroll
				for (int d = 0; d < DH; d++)
					s = fmaf(qv[d], Ks[u][d], s);
				if (s > mx)
				{
					float sc = expf(mx - s);    /* exp(-inf) = 0 on the first key */
					l *= sc;
#pragma unroll
					for (int d = 0; d < DH; d++)
						acc[d] *= sc;
					mx = s;
				}
				float pr = expf(s - mx);
				l += pr;
#pragma unroll
				for (int d = 0; d < DH; d++)
					acc[d] = fmaf(pr, Vs[u][d], acc[d]);
			}
		}
	}
	if (valid)
	{
		float inv = 1.f / l;      /* l >= 1: the diagonal is always allowed */
		float *op = out + (((size_t) b * S + me.idx) * H + h) * DH;
#pragma unroll
		for (int d = 0; d < DH; d++)
			op[d] = acc[d] * inv;
		lse[((size_t) b * H + h) * S + me.idx] = mx + logf(l);
	}
}

/* ------------------------------------------------------------------ backward */

/* delta[b,h,i] = sum_d dout[b,i,h,d] * out[b,i,h,d]; one thread per (b,i,h). */
__global__ void
attn_delta_kernel(float *delta, const float *dout, const float *out, int B, int S, int H, int dh)
{
	size_t n = (size_t) B * S * H;
	size_t g = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
	if (g >= n)
		return;
	int h = g % H;
	size_t bi = g / H;
	int i = bi % S, b = bi / S;
	const float *a = dout + g * dh, *o = out + g * dh;
	float s = 0.f;
	for (int d = 0; d < dh; d++)
		s = fmaf(a[d], o[d], s);
	delta[((size_t) b * H + h) * S + i] = s;
}

/* dq: grid (nt, H, B), 64 threads, thread per query (same walk as forward). */
template <int DH, typename TIn>
__global__ void __launch_bounds__(TILE)
attn_dq_kernel(float *dq, const float *dout, const float *lse, const float *delta,
			   const TIn *q, const TIn *k, const TIn *v,
			   HwCudaMaskInfo in, int kind, int nt, const int32_t *q_count, const int16_t *q_list, int H)
{
	const int KC = Chunk<DH>::KC;
	__shared__ float Ks[KC][DH];
	__shared__ float Vs[KC][DH];
	__shared__ int   ki[KC], kr[KC], kc[KC], kp[KC];

	int qt = blockIdx.x, h = blockIdx.y, b = blockIdx.z, t = threadIdx.x;
	int S = in.S, R = in.R;
	const uint8_t *fk = in.fk_adj + (size_t) b * R * R;
	int p = qt * TILE + t;
	bool valid = p < S;
	PosMeta me = {0, 0, 0, 0};
	if (valid)
		me = pos_meta(in, b, p);

	float qv[DH], dov[DH], acc[DH];
	float my_lse = 0.f, my_delta = 0.f;
	if (valid)
	{
		size_t off = (((size_t) b * S + me.idx) * H + h) * DH;
#pragma unroll
		for (int d = 0; d < DH; d++) { qv[d] = ldf(q + off + d); dov[d] = dout[off + d]; acc[d] = 0.f; }
		my_lse = lse[((size_t) b * H + h) * S + me.idx];
		my_delta = delta[((size_t) b * H + h) * S + me.idx];
	}

	int ntiles = q_count[b * nt + qt];
	const int16_t *list = q_list + ((size_t) b * nt + qt) * nt;
	for (int li = 0; li < ntiles; li++)
	{
		int kt = list[li];
		for (int c0 = 0; c0 < TILE; c0 += KC)
		{
			__syncthreads();
			for (int u = t; u < KC; u += TILE)
			{
				int pk = kt * TILE + c0 + u;
				if (pk < S) { PosMeta km = pos_meta(in, b, pk); ki[u] = km.idx; kr[u] = km.row; kc[u] = km.col; kp[u] = km.pad; }
				else ki[u] = -1;
			}
			__syncthreads();
			for (int e = t; e < KC * DH; e += TILE)
			{
				int u = e / DH, d = e % DH;
				float kvv = 0.f, vvv = 0.f;
				if (ki[u] >= 0)
				{
					size_t off = (((size_t) b * S + ki[u]) * H + h) * DH + d;
					kvv = ldf(k + off);
					vvv = ldf(v + off);
				}
				Ks[u][d] = kvv;
				Vs[u][d] = vvv;
			}
			__syncthreads();
			if (!valid)
				continue;
			for (int u = 0; u < KC; u++)
			{
				if (ki[u] < 0 ||
					!mask_ok(kind, me.idx, ki[u], me.row, kr[u], me.col, kc[u], me.pad, kp[u], fk, R))
					continue;
				float s = 0.f, dp = 0.f;
#pragma unroll
				for (int d = 0; d < DH; d++)
				{
					s = fmaf(qv[d], Ks[u][d], s);
					dp = fmaf(dov[d], Vs[u][d], dp);
				}
				float pr = expf(s - my_lse);
				float ds = pr * (dp - my_delta);
#pragma unroll
				for (int d = 0; d < DH; d++)
					acc[d] = fmaf(ds, Ks[u][d], acc[d]);
			}
		}
	}
	if (valid)
	{
		float *o = dq + (((size_t) b * S + me.idx) * H + h) * DH;
#pragma unroll
		for (int d = 0; d < DH; d++)
			o[d] = acc[d];
	}
}

/* dk, dv: grid (nt, H, B), 64 threads, thread per key; walks the query tiles
 * that see this key tile (k_list), query tile staged in shared memory. */
template <int DH, typename TIn>
__global__ void __launch_bounds__(TILE)
attn_dkv_kernel(float *dk, float *dv, const float *dout, const float *lse, const float *delta,
				const TIn *q, const TIn *k, const TIn *v,
				HwCudaMaskInfo in, int kind, int nt, const int32_t *k_count, const int16_t *k_list, int H)
{
	const int KC = Chunk<DH>::KC;
	__shared__ float Qs[KC][DH];
	__shared__ float Os[KC][DH];     /* dout rows */
	__shared__ float Ls[KC], Ds[KC];
	__shared__ int   qi[KC], qr[KC], qc[KC], qp[KC];

	int kt = blockIdx.x, h = blockIdx.y, b = blockIdx.z, t = threadIdx.x;
	int S = in.S, R = in.R;
	const uint8_t *fk = in.fk_adj + (size_t) b * R * R;
	int p = kt * TILE + t;
	bool valid = p < S;
	PosMeta me = {0, 0, 0, 0};
	if (valid)
		me = pos_meta(in, b, p);

	float kv[DH], vv[DH], dka[DH], dva[DH];
	if (valid)
	{
		size_t off = (((size_t) b * S + me.idx) * H + h) * DH;
#pragma unroll
		for (int d = 0; d < DH; d++) { kv[d] = ldf(k + off + d); vv[d] = ldf(v + off + d); dka[d] = 0.f; dva[d] = 0.f; }
	}

	int ntiles = k_count[b * nt + kt];
	const int16_t *list = k_list + ((size_t) b * nt + kt) * nt;
	for (int li = 0; li < ntiles; li++)
	{
		int qt = list[li];
		for (int c0 = 0; c0 < TILE; c0 += KC)
		{
			__syncthreads();
			for (int u = t; u < KC; u += TILE)
			{
				int pq = qt * TILE + c0 + u;
				if (pq < S)
				{
					PosMeta qm = pos_meta(in, b, pq);
					qi[u] = qm.idx; qr[u] = qm.row; qc[u] = qm.col; qp[u] = qm.pad;
					Ls[u] = lse[((size_t) b * H + h) * S + qm.idx];
					Ds[u] = delta[((size_t) b * H + h) * S + qm.idx];
				}
				else qi[u] = -1;
			}
			__syncthreads();
			for (int e = t; e < KC * DH; e += TILE)
			{
				int u = e / DH, d = e % DH;
				float a = 0.f, o = 0.f;
				if (qi[u] >= 0)
				{
					size_t off = (((size_t) b * S + qi[u]) * H + h) * DH + d;
					a = ldf(q + off);
					o = dout[off];
				}
				Qs[u][d] = a;
				Os[u][d] = o;
			}
			__syncthreads();
			if (!valid)
				continue;
			for (int u = 0; u < KC; u++)
			{
				/* query qi[u] attends to this key me.idx */
				if (qi[u] < 0 ||
					!mask_ok(kind, qi[u], me.idx, qr[u], me.row, qc[u], me.col, qp[u], me.pad, fk, R))
					continue;
				float s = 0.f, dp = 0.f;
#pragma unroll
				for (int d = 0; d < DH; d++)
				{
					s = fmaf(Qs[u][d], kv[d], s);
					dp = fmaf(Os[u][d], vv[d], dp);
				}
				float pr = expf(s - Ls[u]);
				float ds = pr * (dp - Ds[u]);
#pragma unroll
				for (int d = 0; d < DH; d++)
				{
					dva[d] = fmaf(pr, Os[u][d], dva[d]);
					dka[d] = fmaf(ds, Qs[u][d], dka[d]);
				}
			}
		}
	}
	if (valid)
	{
		size_t off = (((size_t) b * S + me.idx) * H + h) * DH;
#pragma unroll
		for (int d = 0; d < DH; d++) { dk[off + d] = dka[d]; dv[off + d] = dva[d]; }
	}
}

/* HW_SIM_END */
/* ------------------------------------------------------------------ launchers */

template <int DH, typename TIn>
static void
launch_fwd(float *out, float *lse, const void *q, const void *k, const void *v,
		   const HwCudaAttnPlan *pl, int H, cudaStream_t s)
{
	dim3 grid(pl->nt, H, pl->info.B);
	attn_fwd_kernel<DH, TIn><<<grid, TILE, 0, s>>>(out, lse, (const TIn *) q, (const TIn *) k, (const TIn *) v,
												   pl->info, pl->kind, pl->nt, pl->q_count, pl->q_list, H);
}

template <int DH, typename TIn>
static void
launch_bwd(float *dq, float *dk, float *dv, const float *delta, const float *dout, const float *lse,
		   const void *q, const void *k, const void *v, const HwCudaAttnPlan *pl, int H, cudaStream_t s)
{
	dim3 grid(pl->nt, H, pl->info.B);
	attn_dq_kernel<DH, TIn><<<grid, TILE, 0, s>>>(dq, dout, lse, delta, (const TIn *) q, (const TIn *) k,
												  (const TIn *) v, pl->info, pl->kind, pl->nt,
												  pl->q_count, pl->q_list, H);
	attn_dkv_kernel<DH, TIn><<<grid, TILE, 0, s>>>(dk, dv, dout, lse, delta, (const TIn *) q, (const TIn *) k,
												   (const TIn *) v, pl->info, pl->kind, pl->nt,
												   pl->k_count, pl->k_list, H);
}

#define HW_ATTN_DISPATCH(FN, ...) do { \
	if (dt == HW_CUDA_F32) { \
		switch (dh) { \
			case 16: FN<16, float>(__VA_ARGS__); break; \
			case 32: FN<32, float>(__VA_ARGS__); break; \
			case 64: FN<64, float>(__VA_ARGS__); break; \
			case 128: FN<128, float>(__VA_ARGS__); break; } \
	} else { \
		switch (dh) { \
			case 16: FN<16, __nv_bfloat16>(__VA_ARGS__); break; \
			case 32: FN<32, __nv_bfloat16>(__VA_ARGS__); break; \
			case 64: FN<64, __nv_bfloat16>(__VA_ARGS__); break; \
			case 128: FN<128, __nv_bfloat16>(__VA_ARGS__); break; } \
	} } while (0)

static int
check_dh(int dh, int H, const HwCudaAttnPlan *pl, HwError *err)
{
	if (!pl || !pl->block)
		return hw_error_set(err, HW_ERR_INVALID, "attention: no tile plan");
	if (!hw_cuda_head_dim_supported(dh))     /* hw_model_create rejects these up front (check_shapes) */
		return hw_error_set(err, HW_ERR_INVALID,
							"attention: head dimension %d not supported on CUDA (16, 32, 64 or 128)", dh);
	if (H <= 0 || H > 65535)
		return hw_error_set(err, HW_ERR_INVALID, "attention: bad head count %d", H);
	return HW_OK;
}

int
hw_cuda_attn_forward(float *out, float *lse, const void *q, const void *k, const void *v, HwCudaDtype dt,
					 const HwCudaAttnPlan *plan, int H, int dh, cudaStream_t stream, HwError *err)
{
	int rc = check_dh(dh, H, plan, err);
	if (rc != HW_OK)
		return rc;
	HW_ATTN_DISPATCH(launch_fwd, out, lse, q, k, v, plan, H, stream);
	HW_CUDA_TRY(err, cudaGetLastError());
	return HW_OK;
}

int
hw_cuda_attn_backward(float *dq, float *dk, float *dv, float *scratch_delta,
					  const float *dout, const float *out, const float *lse,
					  const void *q, const void *k, const void *v, HwCudaDtype dt,
					  const HwCudaAttnPlan *plan, int H, int dh, cudaStream_t stream, HwError *err)
{
	int rc = check_dh(dh, H, plan, err);
	if (rc != HW_OK)
		return rc;
	size_t n = (size_t) plan->info.B * plan->info.S * H;
	attn_delta_kernel<<<hw_cdiv(n, 256), 256, 0, stream>>>(scratch_delta, dout, out,
														   plan->info.B, plan->info.S, H, dh);
	HW_ATTN_DISPATCH(launch_bwd, dq, dk, dv, scratch_delta, dout, lse, q, k, v, plan, H, stream);
	HW_CUDA_TRY(err, cudaGetLastError());
	return HW_OK;
}
