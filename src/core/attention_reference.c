/*
 * attention_reference.c: dense masked attention, O(S^2) per (batch element,
 * head) with double accumulation: the test oracle of the block-sparse
 * kernels (CPU and CUDA), written from the mask rule alone.
 */
#include "core/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void
attn_dense_reference_forward(float *out, float *lse,
							 const float *q, const float *k, const float *v,
							 const HwAttnMaskInfo *info, HwMaskKind kind, int H, int dh)
{
	int     B = info->B, S = info->S;
	double *p = malloc(sizeof(double) * S);
	double *acc = malloc(sizeof(double) * (dh > 0 ? dh : 1));

	if (!p || !acc)
	{
		free(p);
		free(acc);
		return;
	}
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++)
			for (int i = 0; i < S; i++)
			{
				const float *qi = q + (((int64_t) b * S + i) * H + h) * dh;
				double       mx = -INFINITY, sum = 0.0;

				for (int j = 0; j < S; j++)
				{
					const float *kj = k + (((int64_t) b * S + j) * H + h) * dh;
					double       s = 0.0;

					if (!attn_mask_allowed(info, kind, b, i, j))
					{
						p[j] = -INFINITY;
						continue;
					}
					for (int d = 0; d < dh; d++)
						s += (double) qi[d] * kj[d];
					p[j] = s;
					if (s > mx)
						mx = s;
				}
				for (int d = 0; d < dh; d++)
					acc[d] = 0.0;
				for (int j = 0; j < S; j++)
				{
					const float *vj = v + (((int64_t) b * S + j) * H + h) * dh;
					double       e;

					if (p[j] == -INFINITY)
						continue;
					e = exp(p[j] - mx);
					sum += e;
					for (int d = 0; d < dh; d++)
						acc[d] += e * vj[d];
				}
				for (int d = 0; d < dh; d++)
					out[(((int64_t) b * S + i) * H + h) * dh + d] = (float) (acc[d] / sum);
				lse[((int64_t) b * H + h) * S + i] = (float) (mx + log(sum));
			}
	free(p);
	free(acc);
}

/* Recomputes the probabilities from q, k (ignores out and lse) so that it
 * checks the fast backward independently of the forward's saved state. */
void
attn_dense_reference_backward(float *dq, float *dk, float *dv,
							  const float *dout, const float *out, const float *lse,
							  const float *q, const float *k, const float *v,
							  const HwAttnMaskInfo *info, HwMaskKind kind, int H, int dh)
{
	int     B = info->B, S = info->S;
	int64_t n = (int64_t) B * S * H * dh;
	double *P = malloc(sizeof(double) * S);
	double *dP = malloc(sizeof(double) * S);
	double *gq = malloc(sizeof(double) * n);
	double *gk = malloc(sizeof(double) * n);
	double *gv = malloc(sizeof(double) * n);

	if (!P || !dP || !gq || !gk || !gv)
		goto done;
	memset(gq, 0, sizeof(double) * n);
	memset(gk, 0, sizeof(double) * n);
	memset(gv, 0, sizeof(double) * n);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++)
			for (int i = 0; i < S; i++)
			{
				int64_t      oi = (((int64_t) b * S + i) * H + h) * dh;
				double       mx = -INFINITY, sum = 0.0, Di = 0.0;

				for (int j = 0; j < S; j++)
				{
					int64_t oj = (((int64_t) b * S + j) * H + h) * dh;
					double  s = 0.0;

					if (!attn_mask_allowed(info, kind, b, i, j))
					{
						P[j] = -INFINITY;
						continue;
					}
					for (int d = 0; d < dh; d++)
						s += (double) q[oi + d] * k[oj + d];
					P[j] = s;
					if (s > mx)
						mx = s;
				}
				for (int j = 0; j < S; j++)
					if (P[j] != -INFINITY)
						sum += exp(P[j] - mx);
				for (int j = 0; j < S; j++)
				{
					int64_t oj = (((int64_t) b * S + j) * H + h) * dh;
					double  g = 0.0;

					P[j] = P[j] == -INFINITY ? 0.0 : exp(P[j] - mx) / sum;
					for (int d = 0; d < dh; d++)
						g += (double) dout[oi + d] * v[oj + d];
					dP[j] = g;
					Di += P[j] * g;
				}
				for (int j = 0; j < S; j++)
				{
					int64_t oj = (((int64_t) b * S + j) * H + h) * dh;
					double  dsij = P[j] * (dP[j] - Di);

					if (P[j] == 0.0)
						continue;
					for (int d = 0; d < dh; d++)
					{
						gv[oj + d] += P[j] * dout[oi + d];
						gq[oi + d] += dsij * k[oj + d];
						gk[oj + d] += dsij * q[oi + d];
					}
				}
			}
	for (int64_t x = 0; x < n; x++)
	{
		dq[x] = (float) gq[x];
		dk[x] = (float) gk[x];
		dv[x] = (float) gv[x];
	}
done:
	free(P);
	free(dP);
	free(gq);
	free(gk);
	free(gv);
}
