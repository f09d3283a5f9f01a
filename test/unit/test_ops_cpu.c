/*
 * test_ops_cpu.c: every CPU backend op against an independent double-precision
 * reference written here: the forward against the reference forward, the
 * backward against central finite differences of the reference (h = 1e-5 in
 * double: truncation ~1e-10, rounding ~1e-11, so the FD values are exact to
 * far below the fp32 tolerances used).  The loss is L = sum(wout * out) with
 * random wout, i.e. dout = wout.  Tolerances: fp32 kernels accumulate in
 * float over at most a few hundred terms: |err| <= 1e-4 + 1e-3 |ref|.
 */
#include "unit.h"
#include "core/backend.h"
#include "core/tensor.h"

#include <stdlib.h>
#include <string.h>

#define ATOL 1e-4
#define RTOL 1e-3

static HwRng R;

static float *
randf(int64_t n, double scale)
{
	float *x = malloc(sizeof(float) * (n > 0 ? n : 1));

	for (int64_t i = 0; i < n; i++)
		x[i] = (float) (scale * hw_rng_normal(&R));
	return x;
}

static int
close_arr(const float *a, const double *b, int64_t n, double atol, double rtol, const char *what)
{
	for (int64_t i = 0; i < n; i++)
		if (!isnan(b[i]) && !(fabs(a[i] - b[i]) <= atol + rtol * fabs(b[i])))
		{
			unit_fail(__FILE__, __LINE__, "%s[%lld] = %.8g, reference %.8g", what, (long long) i, a[i], b[i]);
			return 0;
		}
	return 1;
}

/* FD of a double function over the float array x (perturbed in place as double copies) */
typedef double (*lossfn)(void *ctx);

/* every stride-th entry (the others NaN: skipped by close_arr) */
static void
fd_grad_sub(double *g, double *x, int64_t n, lossfn f, void *ctx, int stride)
{
	for (int64_t i = 0; i < n; i++)
	{
		if (i % stride != 0)
		{
			g[i] = NAN;
			continue;
		}
		{
		double x0 = x[i], h = 1e-5 * (fabs(x0) > 1 ? fabs(x0) : 1), lp, lm;

		x[i] = x0 + h;
		lp = f(ctx);
		x[i] = x0 - h;
		lm = f(ctx);
		x[i] = x0;
		g[i] = (lp - lm) / (2 * h);
		}
	}
}

static void
fd_grad(double *g, double *x, int64_t n, lossfn f, void *ctx)
{
	fd_grad_sub(g, x, n, f, ctx, 1);
}

static double *
tod(const float *x, int64_t n)
{
	double *d = malloc(sizeof(double) * (n > 0 ? n : 1));

	for (int64_t i = 0; i < n; i++)
		d[i] = x[i];
	return d;
}

/* ------------------------------------------------------------ GEMM */

/* the backend's GEMM on both of its paths: its own kernel (where the
 * processor has it) and OpenBLAS in blocks (elsewhere, or disabled) */
UNIT_TEST(ops_gemm_blocked_matches_naive)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	/* shapes that take each blocking path: tall M (row blocks), mid M, wide N (column blocks), small */
	int        shapes[][3] = {{1100, 70, 33}, {300, 40, 17}, {20, 300, 50}, {7, 5, 3}, {2048, 256, 64},
							  {64, 48, 9000} /* split K */};

	hw_rng_seed(&R, 1);
	for (int blas = 0; blas < 2; blas++)
	for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++)
			{
				int     M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
				int     lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
				float  *A = randf((int64_t) (ta ? K : M) * lda, 1), *Bm = randf((int64_t) (tb ? N : K) * ldb, 1);
				float  *C = randf((int64_t) M * ldc, 1);
				double *ref = malloc(sizeof(double) * M * ldc);

				for (int i = 0; i < M; i++)
					for (int j = 0; j < N; j++)
					{
						double s = 0;

						for (int k = 0; k < K; k++)
							s += (double) (ta ? A[(size_t) k * lda + i] : A[(size_t) i * lda + k]) *
								(tb ? Bm[(size_t) j * ldb + k] : Bm[(size_t) k * ldb + j]);
						ref[(size_t) i * ldc + j] = 0.5 * s + 0.25 * C[(size_t) i * ldc + j];
					}
				hw_backend_cpu_disable_f32_pack(be, blas);
				be->ops->gemm(be, ta, tb, M, N, K, 0.5f, A, lda, Bm, ldb, 0.25f, C, ldc);
				for (int i = 0; i < M; i++)
					if (!close_arr(C + (size_t) i * ldc, ref + (size_t) i * ldc, N, 1e-4 * sqrt(K), 1e-4, "gemm C"))
						return;
				free(A);
				free(Bm);
				free(C);
				free(ref);
			}
	hw_backend_destroy(be);
}

/* ------------------------------------------------------------ RMSNorm */

typedef struct { int N, D; double *x, *g, *w; } NormCtx;

static double
norm_loss(void *c)
{
	NormCtx *k = c;
	double   L = 0;

	for (int n = 0; n < k->N; n++)
	{
		double ss = 0, r;

		for (int d = 0; d < k->D; d++)
			ss += k->x[n * k->D + d] * k->x[n * k->D + d];
		r = 1.0 / sqrt(ss / k->D + 1e-6);
		for (int d = 0; d < k->D; d++)
			L += k->w[n * k->D + d] * (1 + k->g[d]) * k->x[n * k->D + d] * r;
	}
	return L;
}

UNIT_TEST(ops_rmsnorm_forward_backward)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	int        N = 600, D = 24;      /* > 2 reduction chunks of 256 rows */
	/* dx by FD on every 5th entry (the loss is O(N D) per evaluation) */
	float     *x, *g, *w, *out = malloc(sizeof(float) * N * D), *rstd = malloc(sizeof(float) * N);
	float     *dx, *dg = calloc(D, sizeof(float));
	NormCtx    c = { N, D };
	double    *ref, *rdx, *rdg;

	hw_rng_seed(&R, 2);
	x = randf(N * D, 1.5);
	g = randf(D, 0.3);
	w = randf(N * D, 1);
	dx = randf(N * D, 1);        /* dx is accumulated into: start non-zero */
	c.x = tod(x, N * D);
	c.g = tod(g, D);
	c.w = tod(w, N * D);
	ref = malloc(sizeof(double) * N * D);
	for (int n = 0; n < N; n++)
	{
		double ss = 0, r;

		for (int d = 0; d < D; d++)
			ss += c.x[n * D + d] * c.x[n * D + d];
		r = 1.0 / sqrt(ss / D + 1e-6);
		for (int d = 0; d < D; d++)
			ref[n * D + d] = (1 + c.g[d]) * c.x[n * D + d] * r;
	}
	be->ops->rmsnorm_forward(be, out, rstd, x, g, N, D);
	CHECK(close_arr(out, ref, N * D, ATOL, RTOL, "rmsnorm out"));
	rdx = malloc(sizeof(double) * N * D);
	rdg = malloc(sizeof(double) * D);
	fd_grad_sub(rdx, c.x, N * D, norm_loss, &c, 5);
	fd_grad(rdg, c.g, D, norm_loss, &c);
	for (int i = 0; i < N * D; i++)
		rdx[i] += dx[i];
	be->ops->rmsnorm_backward(be, dx, dg, w, x, rstd, g, N, D);
	CHECK(close_arr(dx, rdx, N * D, ATOL, RTOL, "rmsnorm dx"));
	CHECK(close_arr(dg, rdg, D, 1e-3, RTOL, "rmsnorm dg"));
	free(x); free(g); free(w); free(out); free(rstd); free(dx); free(dg);
	free(c.x); free(c.g); free(c.w); free(ref); free(rdx); free(rdg);
	hw_backend_destroy(be);
}

/* ------------------------------------------------------------ QK-norm */

typedef struct { int N, H, dh; double *qkvg, *tau, *wq, *wk, *wv; } QKCtx;

static double
qk_loss(void *c)
{
	QKCtx *k = c;
	int    D = k->H * k->dh;
	double L = 0;

	for (int n = 0; n < k->N; n++)
		for (int h = 0; h < k->H; h++)
		{
			const double *q = k->qkvg + (size_t) n * 4 * D + h * k->dh, *kk = q + D, *v = q + 2 * D;
			double        nq = 0, nk = 0;

			for (int i = 0; i < k->dh; i++)
			{
				nq += q[i] * q[i];
				nk += kk[i] * kk[i];
			}
			nq = fmax(sqrt(nq), 1e-6);
			nk = fmax(sqrt(nk), 1e-6);
			for (int i = 0; i < k->dh; i++)
			{
				size_t o = (size_t) n * D + h * k->dh + i;

				L += k->wq[o] * q[i] / nq * k->tau[h] / sqrt((double) k->dh);
				L += k->wk[o] * kk[i] / nk;
				L += k->wv[o] * v[i];
			}
		}
	return L;
}

UNIT_TEST(ops_qknorm_forward_backward)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	int        N = 260, H = 3, dh = 8, D = H * dh;   /* 2 reduction chunks for dtau */
	float     *qkvg, *tau, *wq, *wk, *wv;
	float     *qs = malloc(sizeof(float) * N * D), *kn = malloc(sizeof(float) * N * D), *v = malloc(sizeof(float) * N * D);
	float     *qn = malloc(sizeof(float) * N * H), *knn = malloc(sizeof(float) * N * H);
	float     *dqkvg = calloc((size_t) N * 4 * D, sizeof(float)), *dtau = calloc(H, sizeof(float));
	QKCtx      c = { N, H, dh };
	double    *rd, *rdt;

	hw_rng_seed(&R, 3);
	qkvg = randf((int64_t) N * 4 * D, 1);
	tau = randf(H, 1);
	for (int h = 0; h < H; h++)
		tau[h] += 2.8f;
	wq = randf(N * D, 1);
	wk = randf(N * D, 1);
	wv = randf(N * D, 1);
	c.qkvg = tod(qkvg, (int64_t) N * 4 * D);
	c.tau = tod(tau, H);
	c.wq = tod(wq, N * D);
	c.wk = tod(wk, N * D);
	c.wv = tod(wv, N * D);
	be->ops->qknorm_forward(be, qs, kn, v, qn, knn, qkvg, tau, N, H, dh);
	/* forward: the reference of one entry per output kind, via the loss with one-hot weights is
	 * costly; check unit norms and the scale directly instead */
	for (int n = 0; n < N; n++)
		for (int h = 0; h < H; h++)
		{
			double a = 0, b = 0;

			for (int i = 0; i < dh; i++)
			{
				a += (double) qs[n * D + h * dh + i] * qs[n * D + h * dh + i];
				b += (double) kn[n * D + h * dh + i] * kn[n * D + h * dh + i];
			}
			CHECK_CLOSE(sqrt(a), fabs(tau[h]) / sqrt((double) dh), 1e-5, 1e-5);
			CHECK_CLOSE(sqrt(b), 1.0, 1e-5, 1e-5);
			CHECK_CLOSE(v[n * D + h * dh], qkvg[(size_t) n * 4 * D + 2 * D + h * dh], 0, 0);
		}
	rd = malloc(sizeof(double) * N * 4 * D);
	rdt = malloc(sizeof(double) * H);
	fd_grad_sub(rd, c.qkvg, (int64_t) N * 4 * D, qk_loss, &c, 7);
	fd_grad(rdt, c.tau, H, qk_loss, &c);
	be->ops->qknorm_backward(be, dqkvg, dtau, wq, wk, wv, qkvg, qn, knn, tau, N, H, dh);
	for (int n = 0; n < N; n++)      /* the gate block is untouched: reference 0 and dqkvg stays 0 */
		if (!close_arr(dqkvg + (size_t) n * 4 * D, rd + (size_t) n * 4 * D, 4 * D, ATOL, RTOL, "qknorm dqkvg"))
			return;
	CHECK(close_arr(dtau, rdt, H, 1e-3, RTOL, "qknorm dtau"));
	free(qkvg); free(tau); free(wq); free(wk); free(wv); free(qs); free(kn); free(v); free(qn); free(knn);
	free(dqkvg); free(dtau); free(c.qkvg); free(c.tau); free(c.wq); free(c.wk); free(c.wv); free(rd); free(rdt);
	hw_backend_destroy(be);
}

/* ------------------------------------------------------------ gate, SwiGLU */

typedef struct { int N, D, F; double *a, *b, *w; } EwCtx;

static double
gate_loss(void *c)
{
	EwCtx *k = c;     /* a = gp [N,D], b = o [N,D]; out = x + sig(gp) o (x contributes a constant) */
	double L = 0;

	for (int i = 0; i < k->N * k->D; i++)
		L += k->w[i] * (1.0 / (1.0 + exp(-k->a[i]))) * k->b[i];
	return L;
}

static double
swiglu_loss(void *c)
{
	EwCtx *k = c;     /* a = gu [N,2F] */
	double L = 0;

	for (int n = 0; n < k->N; n++)
		for (int f = 0; f < k->F; f++)
		{
			double g = k->a[(size_t) n * 2 * k->F + f], u = k->a[(size_t) n * 2 * k->F + k->F + f];

			L += k->w[(size_t) n * k->F + f] * g / (1.0 + exp(-g)) * u;
		}
	return L;
}

UNIT_TEST(ops_gate_residual_and_swiglu)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	int        N = 150, D = 16, F = 12;
	float     *gp = NULL, *o, *x, *w, *xo = malloc(sizeof(float) * N * D), *dO = malloc(sizeof(float) * N * D);
	float     *dgp, *gu, *wh, *h = malloc(sizeof(float) * N * F), *dgu = malloc(sizeof(float) * N * 2 * F);
	EwCtx      c = { N, D, F };
	double    *r1, *r2;

	hw_rng_seed(&R, 4);
	/* gate pre-activations with row stride 3D, as inside qkvg */
	gp = randf((int64_t) N * 3 * D, 2);
	dgp = calloc((size_t) N * 3 * D, sizeof(float));
	o = randf(N * D, 1);
	x = randf(N * D, 1);
	w = randf(N * D, 1);
	be->ops->gate_residual_forward(be, xo, x, gp, 3 * D, o, N, D);
	for (int n = 0; n < N; n++)
		for (int d = 0; d < D; d++)
			CHECK_CLOSE(xo[n * D + d], x[n * D + d] + o[n * D + d] / (1 + exp(-(double) gp[n * 3 * D + d])), 1e-6, 1e-6);
	c.a = malloc(sizeof(double) * N * D);
	for (int n = 0; n < N; n++)
		for (int d = 0; d < D; d++)
			c.a[n * D + d] = gp[n * 3 * D + d];
	c.b = tod(o, N * D);
	c.w = tod(w, N * D);
	r1 = malloc(sizeof(double) * N * D);
	r2 = malloc(sizeof(double) * N * D);
	fd_grad(r1, c.a, N * D, gate_loss, &c);
	fd_grad(r2, c.b, N * D, gate_loss, &c);
	be->ops->gate_residual_backward(be, dgp, 3 * D, dO, w, gp, o, N, D);
	for (int n = 0; n < N; n++)
		if (!close_arr(dgp + n * 3 * D, r1 + n * D, D, ATOL, RTOL, "gate dgp"))
			return;
	CHECK(close_arr(dO, r2, N * D, ATOL, RTOL, "gate dO"));
	free(c.a); free(c.b); free(c.w); free(r1); free(r2);

	gu = randf((int64_t) N * 2 * F, 2);
	wh = randf(N * F, 1);
	be->ops->swiglu_forward(be, h, gu, N, F);
	for (int n = 0; n < N; n++)
		for (int f = 0; f < F; f++)
		{
			double g = gu[n * 2 * F + f], u = gu[n * 2 * F + F + f];

			CHECK_CLOSE(h[n * F + f], g / (1 + exp(-g)) * u, 1e-6, 1e-5);
		}
	c.a = tod(gu, (int64_t) N * 2 * F);
	c.w = tod(wh, N * F);
	r1 = malloc(sizeof(double) * N * 2 * F);
	fd_grad(r1, c.a, (int64_t) N * 2 * F, swiglu_loss, &c);
	be->ops->swiglu_backward(be, dgu, wh, gu, N, F);
	CHECK(close_arr(dgu, r1, (int64_t) N * 2 * F, ATOL, RTOL, "swiglu dgu"));
	free(c.a); free(c.w); free(r1);
	free(gp); free(o); free(x); free(w); free(xo); free(dO); free(dgp); free(gu); free(wh); free(h); free(dgu);
	hw_backend_destroy(be);
}

/* ------------------------------------------------------------ encoder */

typedef struct
{
	int N, D, ncols, Uc, U;
	const int8_t *st; const int32_t *col, *cl, *tl; const uint8_t *isn, *ist, *bv; const float *num, *ts;
	double *colproj, *catproj, *textproj, *id, *nul, *msk, *nw, *nb, *tw, *tb, *be2, *w;
} EncCtx;

static double
enc_loss(void *c)
{
	EncCtx *k = c;
	double  L = 0;

	for (int n = 0; n < k->N; n++)
		for (int d = 0; d < k->D; d++)
		{
			double v;

			if (k->ist[n])
				v = k->msk[d];
			else if (k->isn[n])
				v = k->nul[d];
			else
				switch (k->st[n])
				{
					case 0: v = k->id[d]; break;
					case 1: v = k->nw[d] * k->num[n] + k->nb[d]; break;
					case 2:
						v = k->tb[d];
						for (int j = 0; j < 15; j++)
							v += k->tw[d * 15 + j] * k->ts[n * 15 + j];
						break;
					case 3: v = k->be2[(k->bv[n] ? 1 : 0) * k->D + d]; break;
					case 4: v = k->catproj[k->cl[n] * k->D + d]; break;
					case 5: v = k->textproj[k->tl[n] * k->D + d]; break;
					default: v = 0;
				}
			L += k->w[n * k->D + d] * (k->colproj[k->col[n] * k->D + d] + v);
		}
	return L;
}

UNIT_TEST(ops_encoder_forward_backward)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	int        N = 200, D = 10, ncols = 5, Uc = 3, U = 4;
	int8_t    *st = malloc(N);
	int32_t   *col = malloc(4 * N), *cl = malloc(4 * N), *tl = malloc(4 * N);
	uint8_t   *isn = malloc(N), *ist = malloc(N), *bv = malloc(N);
	float     *num = randf(N, 1), *ts = randf(N * 15, 1), *e = malloc(sizeof(float) * N * D);
	float     *colproj = randf(ncols * D, 1), *catproj = randf(Uc * D, 1), *textproj = randf(U * D, 1);
	float     *small = randf(8 * D + 15 * D, 1), *w = randf(N * D, 1);
	float     *gbuf = malloc(sizeof(float) * (ncols + Uc + U + 8) * D + sizeof(float) * 15 * D);
	EncCtx     c = { N, D, ncols, Uc, U };
	HwEncInputs in;
	HwEncWeights wt;
	HwEncGrads g;
	double    *ref;

	hw_rng_seed(&R, 5);
	for (int n = 0; n < N; n++)
	{
		st[n] = (int8_t) (hw_rng_next(&R) % 7);   /* 6 = ignored: value 0 */
		col[n] = (int32_t) (hw_rng_next(&R) % ncols);
		cl[n] = (int32_t) (hw_rng_next(&R) % Uc);
		tl[n] = (int32_t) (hw_rng_next(&R) % U);
		isn[n] = hw_rng_uniform(&R) < 0.1;
		ist[n] = hw_rng_uniform(&R) < 0.1;
		bv[n] = hw_rng_uniform(&R) < 0.5;
	}
	in = (HwEncInputs){ st, col, isn, ist, num, ts, bv, cl, tl };
	/* separate storage per weight */
	wt = (HwEncWeights){ .colproj = colproj, .catproj = catproj, .textproj = textproj,
						 .id_emb = small, .null_emb = small + D, .mask_emb = small + 2 * D,
						 .num_w = small + 3 * D, .num_b = small + 4 * D, .ts_b = small + 5 * D,
						 .bool_emb = small + 6 * D /* [2,D]: 6D..8D */, .ts_w = small + 8 * D };
	be->ops->encoder_forward(be, e, &in, &wt, N, D);
	c.st = st; c.col = col; c.cl = cl; c.tl = tl; c.isn = isn; c.ist = ist; c.bv = bv; c.num = num; c.ts = ts;
	c.colproj = tod(colproj, ncols * D);
	c.catproj = tod(catproj, Uc * D);
	c.textproj = tod(textproj, U * D);
	c.id = tod(wt.id_emb, D);
	c.nul = tod(wt.null_emb, D);
	c.msk = tod(wt.mask_emb, D);
	c.nw = tod(wt.num_w, D);
	c.nb = tod(wt.num_b, D);
	c.tw = tod(wt.ts_w, 15 * D);
	c.tb = tod(wt.ts_b, D);
	c.be2 = tod(wt.bool_emb, 2 * D);
	/* forward: with one-hot weights the loss is one output entry */
	c.w = calloc(N * D, sizeof(double));
	for (int i = 0; i < N * D; i += 7)
	{
		c.w[i] = 1;
		CHECK_CLOSE(e[i], enc_loss(&c), 1e-5, 1e-5);
		c.w[i] = 0;
	}
	free(c.w);
	c.w = tod(w, N * D);
	g.colproj = gbuf;
	g.catproj = g.colproj + ncols * D;
	g.textproj = g.catproj + Uc * D;
	g.id_emb = g.textproj + U * D;
	g.null_emb = g.id_emb + D;
	g.mask_emb = g.null_emb + D;
	g.num_w = g.mask_emb + D;
	g.num_b = g.num_w + D;
	g.ts_b = g.num_b + D;
	g.bool_emb = g.ts_b + D;
	g.ts_w = g.bool_emb + 2 * D;
	be->ops->encoder_backward(be, &g, w, &in, N, D, ncols, Uc, U);
	{
		struct { double *x; int n; float *gr; const char *nm; } chk[] = {
			{c.colproj, ncols * D, g.colproj, "dcolproj"}, {c.catproj, Uc * D, g.catproj, "dcatproj"},
			{c.textproj, U * D, g.textproj, "dtextproj"}, {c.id, D, g.id_emb, "did"}, {c.nul, D, g.null_emb, "dnull"},
			{c.msk, D, g.mask_emb, "dmask"}, {c.nw, D, g.num_w, "dnum_w"}, {c.nb, D, g.num_b, "dnum_b"},
			{c.tw, 15 * D, g.ts_w, "dts_w"}, {c.tb, D, g.ts_b, "dts_b"}, {c.be2, 2 * D, g.bool_emb, "dbool"},
		};

		for (size_t i = 0; i < sizeof(chk) / sizeof(chk[0]); i++)
		{
			ref = malloc(sizeof(double) * chk[i].n);
			fd_grad(ref, chk[i].x, chk[i].n, enc_loss, &c);
			if (!close_arr(chk[i].gr, ref, chk[i].n, ATOL, RTOL, chk[i].nm))
				return;
			free(ref);
		}
	}
	hw_backend_destroy(be);
}

/* ------------------------------------------------------------ loss */

typedef struct { int B, D, K, st; double *Z, *lg; const HwLossTargets *t; } LossCtx;

static double
hub(double d)
{
	return fabs(d) <= 1 ? 0.5 * d * d : fabs(d) - 0.5;
}

/* The "mae" loss written out independently: L1 with a quadratic bottom of
 * half-width 0.05 (continuous value and slope at the joins). */
static double
smooth_mae(double d)
{
	return fabs(d) <= 0.05 ? d * d / 0.1 : fabs(d) - 0.025;
}

static double
bce(double z, double y)
{
	double p = 1 / (1 + exp(-z));

	return -(y * log(p) + (1 - y) * log(1 - p));
}

static double
loss_ref(void *c)
{
	LossCtx *k = c;
	int      HZ = HW_HEAD_Z(k->D);
	double   L = 0;

	for (int b = 0; b < k->B; b++)
	{
		const double *z = k->Z + b * HZ;
		double        tl = 0;

		L += bce(z[0], k->t->is_null[b]);
		if (k->t->is_null[b])
			continue;
		if (k->st == 1)
			tl = k->t->num_loss == HW_NUM_LOSS_MAE ? smooth_mae(z[1] - k->t->num[b]) : hub(z[1] - k->t->num[b]);
		else if (k->st == 3)
			tl = bce(z[2], k->t->boolv[b]);
		else if (k->st == 2)
		{
			for (int j = 0; j < 14; j++)
				tl += hub(z[3 + j] - k->t->ts[b * 15 + j]) / 14.0;
			tl += 2.0 * hub(z[17] - k->t->ts[b * 15 + 14]);
		}
		else
		{
			double mx = -1e300, s = 0, lse;

			for (int j = 0; j < k->K; j++)
				mx = fmax(mx, k->lg[b * k->K + j]);
			for (int j = 0; j < k->K; j++)
				s += exp(k->lg[b * k->K + j] - mx);
			lse = mx + log(s);
			tl = lse - k->lg[b * k->K + k->t->cat[b]] + 1e-4 * lse * lse;
		}
		L += tl;
	}
	return L / k->B;
}

UNIT_TEST(ops_loss_heads_all_types)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	int        B = 9, D = 6, K = 5, HZ = HW_HEAD_Z(D);

	hw_rng_seed(&R, 6);
	/* 1..4: each target type (numerical with Huber); 5: numerical with "mae" */
	for (int pass = 1; pass <= 5; pass++)
	{
		int           st = pass == 5 ? HW_ST_NUMERICAL : pass;
		float        *Z = randf(B * HZ, 1.5), *lg = randf(B * K, 2), *tnum = randf(B, 1.5), *tts = randf(B * 15, 1.5);
		float        *loss = malloc(sizeof(float) * B), *dZ = malloc(sizeof(float) * B * HZ), *dl = malloc(sizeof(float) * B * K);
		uint8_t       isn[9], bv[9];
		int32_t       cat[9];
		HwLossTargets t = { isn, tnum, bv, tts, cat, pass == 5 ? HW_NUM_LOSS_MAE : HW_NUM_LOSS_HUBER };
		LossCtx       c = { B, D, K, st };
		double       *rz = malloc(sizeof(double) * B * HZ), *rl = malloc(sizeof(double) * B * K), tot = 0;

		for (int b = 0; b < B; b++)
		{
			isn[b] = b % 4 == 0;
			bv[b] = b % 3 == 0;
			cat[b] = b % K;
		}
		c.Z = tod(Z, B * HZ);
		c.lg = tod(lg, B * K);
		c.t = &t;
		be->ops->loss_forward_backward(be, loss, dZ, dl, Z, lg, &t, st, B, D, K, 1.0f / B);
		for (int b = 0; b < B; b++)
			tot += loss[b];
		CHECK_CLOSE(tot / B, loss_ref(&c), 1e-5, 1e-5);
		fd_grad(rz, c.Z, B * HZ, loss_ref, &c);
		fd_grad(rl, c.lg, B * K, loss_ref, &c);
		CHECK(close_arr(dZ, rz, B * HZ, 1e-5, RTOL, "loss dZ"));
		if (st == 4)
			CHECK(close_arr(dl, rl, B * K, 1e-5, RTOL, "loss dlogits"));
		free(Z); free(lg); free(tnum); free(tts); free(loss); free(dZ); free(dl); free(c.Z); free(c.lg); free(rz); free(rl);
	}
	hw_backend_destroy(be);
}

/* The ordinal loss (a numerical target with ord_levels > 0): against a naive
 * reference -- the label's level from its z-score by the map, clamped, and
 * one BCE per threshold -- by value and by finite differences of the
 * thresholds' logits; the regression column gets no gradient, a NULL target
 * none on the thresholds, and thresholds >= ord_levels none. */
typedef struct OrdCtx { int B, levels; double scale, shift; const float *num; const uint8_t *isn; double *zo; } OrdCtx;

static double
ord_ref(void *c)
{
	OrdCtx *k = c;
	double  L = 0;

	for (int b = 0; b < k->B; b++)
	{
		if (k->isn[b])
			continue;
		double lv = floor(k->num[b] * k->scale + k->shift + 0.5);

		lv = lv < 0 ? 0 : lv > k->levels ? k->levels : lv;
		for (int j = 0; j < k->levels; j++)
			L += bce(k->zo[b * HW_ORD_LEVELS + j], lv > j ? 1.0 : 0.0);
	}
	return L / k->B;
}

UNIT_TEST(ops_loss_ordinal_matches_reference)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(1, &err);
	int        B = 9, D = 6, K = 5, HZ = HW_HEAD_Z(D), levels = 5;
	float     *Z, *lg, *zo, *tnum, *tts, *loss = malloc(sizeof(float) * B), *dZ = malloc(sizeof(float) * B * HZ);
	float     *dl = malloc(sizeof(float) * B * K), *dzo = malloc(sizeof(float) * B * HW_ORD_LEVELS);
	uint8_t    isn[9], bv[9];
	int32_t    cat[9];
	double     tot = 0, *rzo = malloc(sizeof(double) * B * HW_ORD_LEVELS);
	int        seen[6] = {0};

	hw_rng_seed(&R, 16);
	Z = randf(B * HZ, 1.5);
	lg = randf(B * K, 2);
	zo = randf(B * HW_ORD_LEVELS, 2);
	tnum = randf(B, 1.5);
	tts = randf(B * 15, 1.5);
	for (int b = 0; b < B; b++)
	{
		isn[b] = b == 4;
		bv[b] = 0;
		cat[b] = 0;
	}
	/* levels = nearbyint(z * 2 + 2.5 - 0.5) -> 2z + 2, clamped to 0..5: make
	 * sure the batch has a 0 (clamped from below), a 5 (from above) and one between */
	tnum[0] = -1.8f;
	tnum[1] = 2.6f;
	tnum[2] = 0.4f;
	HwLossTargets t = { isn, tnum, bv, tts, cat, HW_NUM_LOSS_MAE, levels, 2.0f, 2.0f, zo, dzo };
	OrdCtx        c = { B, levels, 2.0, 2.0, tnum, isn, tod(zo, B * HW_ORD_LEVELS) };

	for (int b = 0; b < B; b++)
		if (!isn[b])
		{
			double lv = floor(tnum[b] * 2.0 + 2.0 + 0.5);

			seen[lv < 0 ? 0 : lv > 5 ? 5 : (int) lv]++;
		}
	CHECK(seen[0] > 0 && seen[5] > 0);
	be->ops->loss_forward_backward(be, loss, dZ, dl, Z, lg, &t, HW_ST_NUMERICAL, B, D, K, 1.0f / B);
	for (int b = 0; b < B; b++)
		tot += loss[b] - bce(Z[b * HZ], isn[b]);      /* minus each row's NULL BCE */
	CHECK_CLOSE(tot / B, ord_ref(&c), 1e-5, 1e-5);
	fd_grad(rzo, c.zo, B * HW_ORD_LEVELS, ord_ref, &c);
	CHECK(close_arr(dzo, rzo, B * HW_ORD_LEVELS, 1e-5, RTOL, "ordinal dzo"));
	for (int b = 0; b < B; b++)
	{
		CHECK(dZ[b * HZ + HW_HEAD_NUM] == 0.0f);
		for (int j = levels; j < HW_ORD_LEVELS; j++)
			CHECK(dzo[b * HW_ORD_LEVELS + j] == 0.0f);
	}
	for (int j = 0; j < HW_ORD_LEVELS; j++)
		CHECK(dzo[4 * HW_ORD_LEVELS + j] == 0.0f);
	free(Z); free(lg); free(zo); free(tnum); free(tts); free(loss); free(dZ); free(dl); free(dzo); free(rzo); free(c.zo);
	hw_backend_destroy(be);
}

/* ------------------------------------------------------------ reductions */

UNIT_TEST(ops_bias_backward_and_sumsq)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	int        M = 1000, N = 7;
	float     *dy = NULL, *db = calloc(N, sizeof(float));
	double     s = 0;

	hw_rng_seed(&R, 7);
	dy = randf(M * N, 1);
	db[2] = 1.0f;
	be->ops->bias_backward(be, db, dy, M, N);
	for (int j = 0; j < N; j++)
	{
		double r = j == 2 ? 1.0 : 0.0;

		for (int i = 0; i < M; i++)
			r += dy[i * N + j];
		CHECK_CLOSE(db[j], r, 1e-4, 1e-5);
	}
	for (int i = 0; i < M * N; i++)
		s += (double) dy[i] * dy[i];
	CHECK_CLOSE(be->ops->sumsq(be, dy, M * N), s, 0, 1e-12);
	dy[17] = INFINITY;
	CHECK(!isfinite(be->ops->sumsq(be, dy, M * N)));
	free(dy);
	free(db);
	hw_backend_destroy(be);
}

/* Every blocking path gives the same bits with 1 and 2 threads, on the
 * own kernel and on OpenBLAS. */
UNIT_TEST(ops_gemm_thread_count_invariant)
{
	HwError    err = {0};
	HwBackend *b1 = hw_backend_cpu_create(1, &err), *b2 = hw_backend_cpu_create(2, &err);
	int        shapes[][3] = {{1100, 70, 33}, {300, 40, 17}, {20, 300, 50}, {64, 48, 9000}, {256, 64, 8192}};

	hw_rng_seed(&R, 12);
	for (int blas = 0; blas < 2; blas++)
	for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++)
	{
		int    M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
		float *A = randf((int64_t) K * M, 1), *Bm = randf((int64_t) K * N, 1);
		float *C1 = randf((int64_t) M * N, 1), *C2 = malloc(sizeof(float) * M * N);

		memcpy(C2, C1, sizeof(float) * M * N);
		hw_backend_cpu_disable_f32_pack(b1, blas);
		hw_backend_cpu_disable_f32_pack(b2, blas);
		/* the weight-gradient orientation: C = A^T B with A [K,M], B [K,N] */
		b1->ops->gemm(b1, true, false, M, N, K, 1.0f, A, M, Bm, N, 1.0f, C1, N);
		b2->ops->gemm(b2, true, false, M, N, K, 1.0f, A, M, Bm, N, 1.0f, C2, N);
		CHECK_MSG(memcmp(C1, C2, sizeof(float) * M * N) == 0, "gemm %dx%dx%d (%s) differs between 1 and 2 threads", M, N,
				  K, blas ? "OpenBLAS" : "own kernel");
		free(A); free(Bm); free(C1); free(C2);
	}
	hw_backend_destroy(b1);
	hw_backend_destroy(b2);
}

/* The vectorisable expf of the CPU backend (sigmoid, SiLU) against exp(). */
float hw_cpu_fast_expf(float x);
UNIT_TEST(ops_fast_expf_accuracy)
{
	double worst = 0;

	for (float x = -80.0f; x <= 80.0f; x += 0.0137f)
	{
		double r = exp((double) x), e = fabs(hw_cpu_fast_expf(x) - r) / r;

		if (e > worst)
			worst = e;
	}
	CHECK_MSG(worst < 1e-6, "fast expf relative error %.3g", worst);
	CHECK(hw_cpu_fast_expf(-200.0f) < 1e-37f && hw_cpu_fast_expf(200.0f) > 1e37f);
}
