/*
 * encoder.cu: the value encoder (cells to h0, backend.h), forward and backward.
 *
 *   e[n] = colproj[col[n]] + val[n],  val by semantic type (id_emb, num_w*x+num_b,
 *          ts_w @ t + ts_b, bool_emb[v], catproj[cat_local], textproj[text_local]),
 *          is_null -> null_emb, is_target -> mask_emb (target wins)
 *
 * Forward: one thread per (token, feature).
 *
 * Backward, deterministic without float atomics:
 *  - the three gathered tables (colproj by column, catproj by category,
 *    textproj by text) are segment sums: the tokens are sorted by key with
 *    CUB's stable radix sort (token order kept inside a key), then one thread
 *    per (key, feature) sums its segment in token order: the same order as
 *    the CPU backend, so these sums match it closely;
 *  - the 23 fixed vectors (id, null, mask embeddings, num_w, num_b, the 15
 *    columns of ts_w, ts_b, the two bool rows) are masked column sums in fixed
 *    256-token chunks, then the chunks in order.
 */
#include "hw_cuda.h"
#include <cub/device/device_radix_sort.cuh>

#define NFIX 23    /* id, null, mask, num_w, num_b, ts_w[15], ts_b, bool0, bool1 */

static unsigned grid1(size_t n) { size_t g = (n + 255) / 256; return (unsigned) (g < 1048576 ? g : 1048576); }

__global__ void
enc_fwd_kernel(float *e, HwEncInputs in, HwEncWeights w, int N, int D)
{
	for (size_t g = (size_t) blockIdx.x * blockDim.x + threadIdx.x; g < (size_t) N * D;
		 g += (size_t) gridDim.x * blockDim.x)
	{
		int n = g / D, d = g % D;
		float c = w.colproj[(size_t) in.col[n] * D + d], v = 0.f;
		if (in.is_target[n])
			v = w.mask_emb[d];
		else if (in.is_null[n])
			v = w.null_emb[d];
		else
			switch (in.stype[n])
			{
				case HW_ST_IDENTIFIER: v = w.id_emb[d]; break;
				case HW_ST_NUMERICAL: v = w.num_w[d] * in.num[n] + w.num_b[d]; break;
				case HW_ST_TIMESTAMP:
				{
					const float *t = in.ts + (size_t) n * 15, *wr = w.ts_w + (size_t) d * 15;
					float s = w.ts_b[d];
					for (int k = 0; k < 15; k++)
						s += wr[k] * t[k];
					v = s;
					break;
				}
				case HW_ST_BOOLEAN: v = w.bool_emb[(size_t) (in.boolv[n] ? 1 : 0) * D + d]; break;
				case HW_ST_CATEGORICAL: v = w.catproj[(size_t) in.cat_local[n] * D + d]; break;
				case HW_ST_TEXT: v = w.textproj[(size_t) in.text_local[n] * D + d]; break;
				default: v = 0.f;
			}
		e[g] = c + v;
	}
}

cudaError_t
hw_k_encoder_forward(cudaStream_t s, float *e, const HwEncInputs *in, const HwEncWeights *w, int N, int D)
{
	if (N <= 0 || D <= 0) return cudaSuccess;
	enc_fwd_kernel<<<grid1((size_t) N * D), 256, 0, s>>>(e, *in, *w, N, D);
	return cudaGetLastError();
}

/* ------------------------------------------------------------------ backward */

/* which table a token's value gradient goes to: 0 none, 1 cat, 2 text */
__device__ __forceinline__ int
value_table(const HwEncInputs &in, int n)
{
	if (in.is_target[n] || in.is_null[n])
		return 0;
	if (in.stype[n] == HW_ST_CATEGORICAL) return 1;
	if (in.stype[n] == HW_ST_TEXT) return 2;
	return 0;
}

/* which: 0 colproj (all tokens), 1 catproj, 2 textproj; ineligible -> sentinel nkeys */
__global__ void
enc_keys_kernel(uint32_t *keys, int32_t *vals, HwEncInputs in, int which, int N, uint32_t nkeys)
{
	int n = blockIdx.x * blockDim.x + threadIdx.x;
	if (n >= N)
		return;
	uint32_t k = nkeys;
	if (which == 0)
		k = (uint32_t) in.col[n];
	else if (value_table(in, n) == which)
		k = (uint32_t) (which == 1 ? in.cat_local[n] : in.text_local[n]);
	keys[n] = k < nkeys ? k : nkeys;
	vals[n] = n;
}

__global__ void
enc_segments_kernel(int32_t *start, int32_t *end, const uint32_t *keys, int N, uint32_t nkeys)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	uint32_t k = keys[i];
	if (k >= nkeys)
		return;
	if (i == 0 || keys[i - 1] != k) start[k] = i;
	if (i == N - 1 || keys[i + 1] != k) end[k] = i + 1;
}

/* grad[k, d] (=) sum over the segment of key k, in token order */
__global__ void
enc_segsum_kernel(float *grad, const float *de, const int32_t *start, const int32_t *end,
				  const int32_t *tok, int nkeys, int D)
{
	int k = blockIdx.x, d = blockIdx.y * blockDim.x + threadIdx.x;
	if (k >= nkeys || d >= D)
		return;
	float a = 0.f;
	for (int i = start[k]; i < end[k]; i++)
		a += de[(size_t) tok[i] * D + d];
	grad[(size_t) k * D + d] = a;
}

/* part[c, j, d]: the 23 masked sums of chunk c */
__global__ void
enc_fixed_part_kernel(float *part, const float *de, HwEncInputs in, int N, int D)
{
	int c = blockIdx.x, d = blockIdx.y * blockDim.x + threadIdx.x;
	if (d >= D)
		return;
	float acc[NFIX];
#pragma unroll
	for (int j = 0; j < NFIX; j++)
		acc[j] = 0.f;
	int n0 = c * HW_CUDA_RCH, n1 = min(N, n0 + HW_CUDA_RCH);
	for (int n = n0; n < n1; n++)
	{
		float g = de[(size_t) n * D + d];
		if (in.is_target[n]) { acc[2] += g; continue; }
		if (in.is_null[n]) { acc[1] += g; continue; }
		switch (in.stype[n])
		{
			case HW_ST_IDENTIFIER: acc[0] += g; break;
			case HW_ST_NUMERICAL: acc[3] += g * in.num[n]; acc[4] += g; break;
			case HW_ST_TIMESTAMP:
			{
				const float *t = in.ts + (size_t) n * 15;
#pragma unroll
				for (int k = 0; k < 15; k++)
					acc[5 + k] += g * t[k];
				acc[20] += g;
				break;
			}
			case HW_ST_BOOLEAN:
				if (in.boolv[n]) acc[22] += g; else acc[21] += g;
				break;
			default: break;
		}
	}
#pragma unroll
	for (int j = 0; j < NFIX; j++)
		part[((size_t) c * NFIX + j) * D + d] = acc[j];
}

__global__ void
enc_fixed_finish_kernel(HwEncGrads g, const float *part, int nch, int D)
{
	int d = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
	if (d >= D)
		return;
	float a = 0.f;
	for (int c = 0; c < nch; c++)
		a += part[((size_t) c * NFIX + j) * D + d];
	switch (j)
	{
		case 0: g.id_emb[d] = a; break;
		case 1: g.null_emb[d] = a; break;
		case 2: g.mask_emb[d] = a; break;
		case 3: g.num_w[d] = a; break;
		case 4: g.num_b[d] = a; break;
		case 20: g.ts_b[d] = a; break;
		case 21: g.bool_emb[d] = a; break;
		case 22: g.bool_emb[D + d] = a; break;
		default: g.ts_w[(size_t) d * 15 + (j - 5)] = a; break;
	}
}

/* scratch layout (each piece 256-byte aligned) */
struct EncScratch
{
	uint32_t *keys_in, *keys_out;
	int32_t  *vals_in, *vals_out, *start, *end;
	float    *part;
	void     *cub_tmp;
	size_t    cub_bytes, total;
};

static size_t al(size_t b) { return (b + 255) & ~(size_t) 255; }

static EncScratch
enc_layout(void *base, int N, int D, int maxkeys)
{
	EncScratch s;
	size_t cub_bytes = 0;
	cub::DeviceRadixSort::SortPairs(NULL, cub_bytes, (const uint32_t *) NULL, (uint32_t *) NULL,
									(const int32_t *) NULL, (int32_t *) NULL, N);
	char *p = (char *) base;
	size_t off = 0;
#define PUT(field, type, bytes) s.field = (type) (p ? p + off : NULL); off += al(bytes)
	PUT(keys_in, uint32_t *, (size_t) N * 4);
	PUT(keys_out, uint32_t *, (size_t) N * 4);
	PUT(vals_in, int32_t *, (size_t) N * 4);
	PUT(vals_out, int32_t *, (size_t) N * 4);
	PUT(start, int32_t *, (size_t) (maxkeys + 1) * 4);
	PUT(end, int32_t *, (size_t) (maxkeys + 1) * 4);
	PUT(part, float *, (size_t) hw_cuda_nch(N) * NFIX * D * 4);
	PUT(cub_tmp, void *, cub_bytes);
#undef PUT
	s.cub_bytes = cub_bytes;
	s.total = off;
	return s;
}

size_t
hw_cuda_encoder_scratch_bytes(int N, int D, int maxkeys)
{
	return enc_layout(NULL, N, D, maxkeys).total;
}

static cudaError_t
segment_sum(cudaStream_t s, EncScratch &sc, float *grad, const float *de, const HwEncInputs *in,
			int which, int N, int D, int nkeys)
{
	if (nkeys <= 0)
		return cudaSuccess;
	int end_bit = 1;
	while (end_bit < 32 && ((uint32_t) nkeys >> end_bit) != 0)
		end_bit++;                                  /* keys 0..nkeys (sentinel) fit */
	enc_keys_kernel<<<(N + 255) / 256, 256, 0, s>>>(sc.keys_in, sc.vals_in, *in, which, N, (uint32_t) nkeys);
	size_t tmp = sc.cub_bytes;
	cudaError_t e = cub::DeviceRadixSort::SortPairs(sc.cub_tmp, tmp, sc.keys_in, sc.keys_out,
													sc.vals_in, sc.vals_out, N, 0, end_bit, s);
	if (e != cudaSuccess)
		return e;
	if ((e = cudaMemsetAsync(sc.start, 0, (size_t) nkeys * 4, s)) != cudaSuccess)
		return e;
	if ((e = cudaMemsetAsync(sc.end, 0, (size_t) nkeys * 4, s)) != cudaSuccess)
		return e;
	enc_segments_kernel<<<(N + 255) / 256, 256, 0, s>>>(sc.start, sc.end, sc.keys_out, N, (uint32_t) nkeys);
	enc_segsum_kernel<<<dim3(nkeys, (D + 127) / 128), 128, 0, s>>>(grad, de, sc.start, sc.end, sc.vals_out, nkeys, D);
	return cudaGetLastError();
}

cudaError_t
hw_k_encoder_backward(cudaStream_t s, void *scratch, size_t scratch_bytes, const HwEncGrads *g,
					  const float *de, const HwEncInputs *in, int N, int D, int ncols, int Uc, int U)
{
	if (N <= 0 || D <= 0)
		return cudaSuccess;
	int maxkeys = ncols > Uc ? ncols : Uc;
	if (U > maxkeys) maxkeys = U;
	EncScratch sc = enc_layout(scratch, N, D, maxkeys);
	if (sc.total > scratch_bytes)
		return cudaErrorInvalidValue;
	cudaError_t e;
	if ((e = segment_sum(s, sc, g->colproj, de, in, 0, N, D, ncols)) != cudaSuccess) return e;
	if ((e = segment_sum(s, sc, g->catproj, de, in, 1, N, D, Uc)) != cudaSuccess) return e;
	if ((e = segment_sum(s, sc, g->textproj, de, in, 2, N, D, U)) != cudaSuccess) return e;
	int nch = hw_cuda_nch(N);
	enc_fixed_part_kernel<<<dim3(nch, (D + 127) / 128), 128, 0, s>>>(sc.part, de, *in, N, D);
	enc_fixed_finish_kernel<<<dim3((D + 127) / 128, NFIX), 128, 0, s>>>(*g, sc.part, nch, D);
	return cudaGetLastError();
}
