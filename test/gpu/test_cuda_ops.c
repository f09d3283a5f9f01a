/*
 * test_cuda_ops.c: every op of backend.h on the CUDA backend against the
 * CPU backend on the same inputs: GEMM (fp32 and bf16 modes), utilities,
 * norms, gates and SwiGLU, the encoder, attention, loss and optimisers.
 * Tolerances: test_cuda_backend.c.
 */
#include "gpu_test.h"

/* ---------------------------------------------------------------- GEMM */

void
test_gemm(const char *mode, int bf16)
{
	char name[64];
	snprintf(name, sizeof(name), "gemm (%s)", mode);
	hw_backend_cuda_set_gemm_mode(mode);
	TEST_BEGIN(name);
	int shapes[][3] = { {300, 200, 64}, {64, 768, 256}, {1, 17, 33}, {257, 129, 1000} };
	for (int s = 0; s < 4; s++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++)
			{
				int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
				int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;   /* padded strides */
				size_t na = (size_t) (ta ? K : M) * lda, nb = (size_t) (tb ? N : K) * ldb, nc = (size_t) M * ldc;
				float *A = randv(na, 1), *B = randv(nb, 1), *C = randv(nc, 1);
				Dual a = dual(A, na * 4), b = dual(B, nb * 4), c = dual(C, nc * 4);
				float beta = (s % 2) ? 0.5f : 0.0f;
				cpu->ops->gemm(cpu, ta, tb, M, N, K, 0.75f, a.c, lda, b.c, ldb, beta, c.c, ldc);
				gpu->ops->gemm(gpu, ta, tb, M, N, K, 0.75f, a.g, lda, b.g, ldb, beta, c.g, ldc);
				double scale = sqrt((double) K) * 0.75;    /* rms(A) = rms(B) = 1 */
				char what[80];
				snprintf(what, sizeof(what), "M%d N%d K%d tA%d tB%d beta%.1f", M, N, K, ta, tb, beta);
				if (!bf16)
					EXPECT(cmp(what, c, nc, 1e-4 * scale, 1e-5));
				else
				{
					/* bound = (2^-8 + 2^-18 + 2K 2^-24) * 0.75 * (|A| @ |B|) + 1e-5 */
					float *aa = malloc(na * 4), *ab = malloc(nb * 4), *lim = calloc(nc, 4);
					for (size_t i = 0; i < na; i++) aa[i] = fabsf(A[i]);
					for (size_t i = 0; i < nb; i++) ab[i] = fabsf(B[i]);
					cpu->ops->gemm(cpu, ta, tb, M, N, K, 1.0f, aa, lda, ab, ldb, 0.0f, lim, ldc);
					double rel = (1.0 / 256 + 1.0 / 262144 + 2.0 * K / 16777216.0) * 0.75;
					for (size_t i = 0; i < nc; i++) lim[i] = (float) (rel * lim[i] + 1e-5);
					EXPECT(cmp_bound(what, c, nc, lim));
					free(aa); free(ab); free(lim);
				}
				dual_free(&a); dual_free(&b); dual_free(&c);
				free(A); free(B); free(C);
			}
	TEST_END();
	hw_backend_cuda_set_gemm_mode("bf16");
}

/* ---------------------------------------------------------------- utilities */

void
test_utilities(void)
{
	TEST_BEGIN("add_bias, bias_backward, axpby, sumsq, gathers, scatter");
	int M = 700, N = 96;
	float *x = randv((size_t) M * N, 1), *bias = randv(N, 1), *y = randv((size_t) M * N, 1);
	Dual dx = dual(x, (size_t) M * N * 4), db = dual(bias, N * 4), dy = dual(y, (size_t) M * N * 4);

	cpu->ops->add_bias(cpu, dx.c, db.c, M, N);
	gpu->ops->add_bias(gpu, dx.g, db.g, M, N);
	EXPECT(cmp("add_bias", dx, (size_t) M * N, 1e-6, 1e-6));

	cpu->ops->bias_backward(cpu, db.c, dy.c, M, N);
	gpu->ops->bias_backward(gpu, db.g, dy.g, M, N);
	EXPECT(cmp("bias_backward (+=)", db, N, 1e-4, 1e-4));

	cpu->ops->axpby(cpu, dy.c, 0.3f, dx.c, -1.5f, (size_t) M * N);
	gpu->ops->axpby(gpu, dy.g, 0.3f, dx.g, -1.5f, (size_t) M * N);
	EXPECT(cmp("axpby", dy, (size_t) M * N, 1e-6, 1e-6));

	size_t big = 1000003;
	float *z = randv(big, 2);
	Dual dz = dual(z, big * 4);
	double sc = cpu->ops->sumsq(cpu, dz.c, big), sg = gpu->ops->sumsq(gpu, dz.g, big);
	EXPECT(gpu_ok("sumsq"));
	printf("  %s sumsq cpu %.15g gpu %.15g\n", fabs(sc - sg) <= 1e-10 * sc ? "ok  " : "FAIL", sc, sg);
	EXPECT(fabs(sc - sg) <= 1e-10 * sc);
	double sg2 = gpu->ops->sumsq(gpu, dz.g, big);
	printf("  %s sumsq deterministic (two GPU runs bit-equal)\n", sg2 == sg ? "ok  " : "FAIL");
	EXPECT(sg2 == sg);

	/* f16 table gather with a host index array */
	int rows = 40, C = 48, Mg = 333;
	uint16_t *tab = malloc((size_t) rows * C * 2);
	int32_t *idx = malloc(Mg * 4);
	for (int i = 0; i < rows * C; i++) tab[i] = hw_f32_to_f16(nrand());
	for (int i = 0; i < Mg; i++) idx[i] = (int32_t) (urand() * rows);
	Dual dt = dual(tab, (size_t) rows * C * 2), dout = dual(NULL, (size_t) Mg * C * 4);
	cpu->ops->gather_f16_rows(cpu, dout.c, dt.c, idx, Mg, C);
	gpu->ops->gather_f16_rows(gpu, dout.g, dt.g, idx, Mg, C);
	EXPECT(cmp("gather_f16_rows", dout, (size_t) Mg * C, 0, 0));

	/* gather_rows / scatter_add_rows with a device index (distinct for scatter) */
	int32_t *perm = malloc(rows * 4);
	for (int i = 0; i < rows; i++) perm[i] = i;
	for (int i = rows - 1; i > 0; i--) { int j = (int) (urand() * (i + 1)); int t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
	float *src = randv((size_t) rows * C, 1);
	Dual dsrc = dual(src, (size_t) rows * C * 4), didx = dual(perm, rows * 4), dg = dual(NULL, (size_t) rows * C * 4);
	cpu->ops->gather_rows(cpu, dg.c, dsrc.c, didx.c, rows, C);
	gpu->ops->gather_rows(gpu, dg.g, dsrc.g, didx.g, rows, C);
	EXPECT(cmp("gather_rows", dg, (size_t) rows * C, 0, 0));
	cpu->ops->scatter_add_rows(cpu, dsrc.c, dg.c, didx.c, rows, C);
	gpu->ops->scatter_add_rows(gpu, dsrc.g, dg.g, didx.g, rows, C);
	EXPECT(cmp("scatter_add_rows (+=)", dsrc, (size_t) rows * C, 1e-6, 1e-6));

	dual_free(&dx); dual_free(&db); dual_free(&dy); dual_free(&dz); dual_free(&dt); dual_free(&dout);
	dual_free(&dsrc); dual_free(&didx); dual_free(&dg);
	free(x); free(bias); free(y); free(z); free(tab); free(idx); free(perm); free(src);
	TEST_END();
}

/* ---------------------------------------------------------------- norms, gates, SwiGLU */

void
test_norms_activations(void)
{
	TEST_BEGIN("rmsnorm, qknorm, gate_residual, swiglu (fwd + bwd)");
	int N = 523, D = 128, H = 4, dh = 32, F = 256;
	float *x = randv((size_t) N * D, 2), *g = randv(D, 0.2f), *dy = randv((size_t) N * D, 1);
	Dual dX = dual(x, (size_t) N * D * 4), dG = dual(g, D * 4), dOut = dual(NULL, (size_t) N * D * 4);
	Dual dR = dual(NULL, (size_t) N * 4), dDy = dual(dy, (size_t) N * D * 4);
	Dual dDx = dual(dy, (size_t) N * D * 4), dDg = dual(g, D * 4);      /* (+=) targets start non-zero */

	cpu->ops->rmsnorm_forward(cpu, dOut.c, dR.c, dX.c, dG.c, N, D);
	gpu->ops->rmsnorm_forward(gpu, dOut.g, dR.g, dX.g, dG.g, N, D);
	EXPECT(cmp("rmsnorm_forward out", dOut, (size_t) N * D, 1e-5, 1e-4));
	EXPECT(cmp("rmsnorm_forward rstd", dR, N, 1e-6, 1e-5));
	cpu->ops->rmsnorm_backward(cpu, dDx.c, dDg.c, dDy.c, dX.c, dR.c, dG.c, N, D);
	gpu->ops->rmsnorm_backward(gpu, dDx.g, dDg.g, dDy.g, dX.g, dR.g, dG.g, N, D);
	EXPECT(cmp("rmsnorm_backward dx (+=)", dDx, (size_t) N * D, 1e-4, 1e-3));
	EXPECT(cmp("rmsnorm_backward dg (+=)", dDg, D, 1e-3, 1e-3));

	/* QK-norm on a fused [q|k|v|gate] projection; one q head set to ~0 to hit the eps branch */
	float *qkvg = randv((size_t) N * 4 * D, 1), *tau = randv(H, 1);
	for (int h = 0; h < H; h++) tau[h] = sqrtf((float) dh) * (1 + 0.1f * tau[h]);
	for (int i = 0; i < dh; i++) qkvg[i] = 1e-9f;
	Dual dQ = dual(qkvg, (size_t) N * 4 * D * 4), dT = dual(tau, H * 4);
	Dual qs = dual(NULL, (size_t) N * D * 4), kn = dual(NULL, (size_t) N * D * 4), v = dual(NULL, (size_t) N * D * 4);
	Dual qn = dual(NULL, (size_t) N * H * 4), knn = dual(NULL, (size_t) N * H * 4);
	cpu->ops->qknorm_forward(cpu, qs.c, kn.c, v.c, qn.c, knn.c, dQ.c, dT.c, N, H, dh);
	gpu->ops->qknorm_forward(gpu, qs.g, kn.g, v.g, qn.g, knn.g, dQ.g, dT.g, N, H, dh);
	EXPECT(cmp("qknorm_forward qs", qs, (size_t) N * D, 1e-5, 1e-4));
	EXPECT(cmp("qknorm_forward kn", kn, (size_t) N * D, 1e-5, 1e-4));
	EXPECT(cmp("qknorm_forward v", v, (size_t) N * D, 0, 0));
	EXPECT(cmp("qknorm_forward |q|", qn, (size_t) N * H, 1e-6, 1e-5));
	/* the parts alone (a NULL output skips its part): the q part, then k|v */
	cpu->ops->qknorm_forward(cpu, kn.c, NULL, NULL, qn.c, knn.c, dQ.c, dT.c, N, H, dh);
	gpu->ops->qknorm_forward(gpu, kn.g, NULL, NULL, qn.g, knn.g, dQ.g, dT.g, N, H, dh);
	EXPECT(cmp("qknorm_forward q part alone", kn, (size_t) N * D, 1e-5, 1e-4));
	cpu->ops->qknorm_forward(cpu, NULL, qs.c, v.c, qn.c, knn.c, dQ.c, dT.c, N, H, dh);
	gpu->ops->qknorm_forward(gpu, NULL, qs.g, v.g, qn.g, knn.g, dQ.g, dT.g, N, H, dh);
	EXPECT(cmp("qknorm_forward k part alone", qs, (size_t) N * D, 1e-5, 1e-4));
	EXPECT(cmp("qknorm_forward |k| of the k part", knn, (size_t) N * H, 1e-6, 1e-5));
	/* the buffers back as the backward below reads them */
	cpu->ops->qknorm_forward(cpu, qs.c, kn.c, v.c, qn.c, knn.c, dQ.c, dT.c, N, H, dh);
	gpu->ops->qknorm_forward(gpu, qs.g, kn.g, v.g, qn.g, knn.g, dQ.g, dT.g, N, H, dh);
	float *g1 = randv((size_t) N * D, 1), *g2 = randv((size_t) N * D, 1), *g3 = randv((size_t) N * D, 1);
	Dual dqs = dual(g1, (size_t) N * D * 4), dkn = dual(g2, (size_t) N * D * 4), dv = dual(g3, (size_t) N * D * 4);
	Dual dqkvg = dual(qkvg, (size_t) N * 4 * D * 4), dtau = dual(tau, H * 4);
	cpu->ops->qknorm_backward(cpu, dqkvg.c, dtau.c, dqs.c, dkn.c, dv.c, dQ.c, qn.c, knn.c, dT.c, N, H, dh);
	gpu->ops->qknorm_backward(gpu, dqkvg.g, dtau.g, dqs.g, dkn.g, dv.g, dQ.g, qn.g, knn.g, dT.g, N, H, dh);
	/* the eps-branch head scales by 1/1e-6: compare relative there */
	EXPECT(cmp("qknorm_backward dqkvg (gate block untouched)", dqkvg, (size_t) N * 4 * D, 1e-4, 1e-4));
	EXPECT(cmp("qknorm_backward dtau (+=)", dtau, H, 1e-3, 1e-3));

	/* gate residual: gpre is the gate block of qkvg (row stride 4D) */
	Dual xo = dual(NULL, (size_t) N * D * 4);
	cpu->ops->gate_residual_forward(cpu, xo.c, dX.c, DF(dQ.c) + 3 * D, 4 * D, dOut.c, N, D);
	gpu->ops->gate_residual_forward(gpu, xo.g, dX.g, DF(dQ.g) + 3 * D, 4 * D, dOut.g, N, D);
	EXPECT(cmp("gate_residual_forward", xo, (size_t) N * D, 1e-5, 1e-5));
	Dual dO = dual(NULL, (size_t) N * D * 4);
	cpu->ops->gate_residual_backward(cpu, DF(dqkvg.c) + 3 * D, 4 * D, dO.c, dDy.c, DF(dQ.c) + 3 * D, dOut.c, N, D);
	gpu->ops->gate_residual_backward(gpu, DF(dqkvg.g) + 3 * D, 4 * D, dO.g, dDy.g, DF(dQ.g) + 3 * D, dOut.g, N, D);
	EXPECT(cmp("gate_residual_backward dO", dO, (size_t) N * D, 1e-5, 1e-5));
	EXPECT(cmp("gate_residual_backward dgpre (in qkvg rows)", dqkvg, (size_t) N * 4 * D, 1e-4, 1e-4));

	float *gu = randv((size_t) N * 2 * F, 2), *dh_ = randv((size_t) N * F, 1);
	Dual dGU = dual(gu, (size_t) N * 2 * F * 4), dH = dual(NULL, (size_t) N * F * 4), dDH = dual(dh_, (size_t) N * F * 4);
	Dual dDGU = dual(NULL, (size_t) N * 2 * F * 4);
	cpu->ops->swiglu_forward(cpu, dH.c, dGU.c, N, F);
	gpu->ops->swiglu_forward(gpu, dH.g, dGU.g, N, F);
	EXPECT(cmp("swiglu_forward", dH, (size_t) N * F, 1e-5, 1e-5));
	cpu->ops->swiglu_backward(cpu, dDGU.c, dDH.c, dGU.c, N, F);
	gpu->ops->swiglu_backward(gpu, dDGU.g, dDH.g, dGU.g, N, F);
	EXPECT(cmp("swiglu_backward", dDGU, (size_t) N * 2 * F, 1e-5, 1e-5));

	Dual *all[] = { &dX, &dG, &dOut, &dR, &dDy, &dDx, &dDg, &dQ, &dT, &qs, &kn, &v, &qn, &knn, &dqs, &dkn, &dv,
					&dqkvg, &dtau, &xo, &dO, &dGU, &dH, &dDH, &dDGU };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		dual_free(all[i]);
	free(x); free(g); free(dy); free(qkvg); free(tau); free(g1); free(g2); free(g3); free(gu); free(dh_);
	TEST_END();
}

/* ---------------------------------------------------------------- encoder */

void
test_encoder(void)
{
	TEST_BEGIN("encoder_forward, encoder_backward");
	int N = 1500, D = 64, ncols = 12, Uc = 9, U = 37;
	int8_t *st = malloc(N); int32_t *col = malloc(N * 4), *cl = malloc(N * 4), *tl = malloc(N * 4);
	uint8_t *nul = malloc(N), *tgt = malloc(N), *bv = malloc(N);
	float *num = randv(N, 1), *ts = randv((size_t) N * 15, 1);
	for (int n = 0; n < N; n++)
	{
		st[n] = (int8_t) (urand() * 7);             /* 0..6, 6 = ignored -> no value */
		col[n] = (int32_t) (urand() * ncols);
		cl[n] = st[n] == 4 ? (int32_t) (urand() * Uc) : 0;
		tl[n] = st[n] == 5 ? (int32_t) (urand() * U) : 0;
		nul[n] = urand() < 0.1;
		tgt[n] = urand() < 0.05;
		bv[n] = urand() < 0.5;
	}
	Dual d_st = dual(st, N), d_col = dual(col, N * 4), d_nul = dual(nul, N), d_tgt = dual(tgt, N);
	Dual d_num = dual(num, N * 4), d_ts = dual(ts, (size_t) N * 60), d_bv = dual(bv, N), d_cl = dual(cl, N * 4), d_tl = dual(tl, N * 4);
	HwEncInputs ic = { d_st.c, d_col.c, d_nul.c, d_tgt.c, d_num.c, d_ts.c, d_bv.c, d_cl.c, d_tl.c };
	HwEncInputs ig = { d_st.g, d_col.g, d_nul.g, d_tgt.g, d_num.g, d_ts.g, d_bv.g, d_cl.g, d_tl.g };

	/* weights: one block [colproj | catproj | textproj | id | null | mask | num_w | num_b | ts_w | ts_b | bool] */
	size_t nw = (size_t) (ncols + Uc + U + 6) * D + (size_t) D * 15 + D + 2 * D;
	float *w = randv(nw, 1);
	Dual dw = dual(w, nw * 4), dgw = dual(NULL, nw * 4);
#define ENC_VIEW(T, base, f) do { float *p_ = (float *) (base); \
	f.colproj = p_; p_ += (size_t) ncols * D; f.catproj = p_; p_ += (size_t) Uc * D; f.textproj = p_; p_ += (size_t) U * D; \
	f.id_emb = p_; p_ += D; f.null_emb = p_; p_ += D; f.mask_emb = p_; p_ += D; f.num_w = p_; p_ += D; f.num_b = p_; p_ += D; \
	f.ts_w = p_; p_ += (size_t) D * 15; f.ts_b = p_; p_ += D; f.bool_emb = p_; } while (0)
	HwEncWeights wc, wg;
	HwEncGrads gc, gg;
	ENC_VIEW(HwEncWeights, dw.c, wc);
	ENC_VIEW(HwEncWeights, dw.g, wg);
	ENC_VIEW(HwEncGrads, dgw.c, gc);
	ENC_VIEW(HwEncGrads, dgw.g, gg);
	/* (=) outputs: poison them first */
	cpu->ops->memset(cpu, dgw.c, 0x7f, nw * 4);
	gpu->ops->memset(gpu, dgw.g, 0x7f, nw * 4);

	Dual de = dual(NULL, (size_t) N * D * 4);
	cpu->ops->encoder_forward(cpu, de.c, &ic, &wc, N, D);
	gpu->ops->encoder_forward(gpu, de.g, &ig, &wg, N, D);
	EXPECT(cmp("encoder_forward", de, (size_t) N * D, 1e-5, 1e-5));

	float *g = randv((size_t) N * D, 1);
	Dual dde = dual(g, (size_t) N * D * 4);
	cpu->ops->encoder_backward(cpu, &gc, dde.c, &ic, N, D, ncols, Uc, U);
	gpu->ops->encoder_backward(gpu, &gg, dde.g, &ig, N, D, ncols, Uc, U);
	EXPECT(cmp("encoder_backward (all grads)", dgw, nw, 1e-4, 1e-4));

	Dual *all[] = { &d_st, &d_col, &d_nul, &d_tgt, &d_num, &d_ts, &d_bv, &d_cl, &d_tl, &dw, &dgw, &de, &dde };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		dual_free(all[i]);
	free(st); free(col); free(cl); free(tl); free(nul); free(tgt); free(bv); free(num); free(ts); free(w); free(g);
	TEST_END();
}

/* ---------------------------------------------------------------- attention */

void
test_attention(int dh, int B_, int S_, int H)
{
	char name[100];
	snprintf(name, sizeof(name), "attention fwd + bwd, 4 masks, dh %d, B %d, S %d, H %d (block-sparse, permuted)",
			 dh, B_, S_, H);
	TEST_BEGIN(name);
	HwSynthSpec sp = { .B = B_, .S = S_, .d_text = 16, .target_stype = HW_ST_NUMERICAL, .seed = 11 + S_ };
	HwBatch *b = hw_synth_batch(&sp, 0);
	int B = b->B, S = b->S, D = H * dh;
	size_t nq = (size_t) B * S * D;
	float *q = randv(nq, 1.5f), *k = randv(nq, 1.5f), *v = randv(nq, 1), *dout = randv(nq, 1);
	Dual dq_ = dual(q, nq * 4), dk_ = dual(k, nq * 4), dv_ = dual(v, nq * 4), ddo = dual(dout, nq * 4);
	Dual out = dual(NULL, nq * 4), lse = dual(NULL, (size_t) B * H * S * 4);
	Dual gq = dual(NULL, nq * 4), gk = dual(NULL, nq * 4), gv = dual(NULL, nq * 4);
	double grow = S > 200 ? sqrt(S / 200.0) : 1.0;   /* round-off of S-term sums (see the top) */
	const uint16_t *perms[4] = { b->col_perm, b->out_perm, b->in_perm, NULL };
	const char *kinds[4] = { "column", "outbound", "inbound", "full" };

	for (int kind = 0; kind < 4; kind++)
	{
		HwAttnMaskInfo mi = { b->B, b->S, b->R, b->column_ids, b->seq_row_ids, b->is_padding, b->fk_adj, perms[kind] };
		HwError e1 = {0}, e2 = {0};
		void *pc = cpu->ops->attn_plan_create(cpu, &mi, (HwMaskKind) kind, &e1);
		void *pg = gpu->ops->attn_plan_create(gpu, &mi, (HwMaskKind) kind, &e2);
		if (!pc || !pg)
		{
			printf("  FAIL plan %s: %s %s\n", kinds[kind], e1.msg, e2.msg);
			EXPECT(0);
			continue;
		}
		char what[64];
		cpu->ops->attn_forward(cpu, out.c, lse.c, dq_.c, dk_.c, dv_.c, pc, H, dh);
		gpu->ops->attn_forward(gpu, out.g, lse.g, dq_.g, dk_.g, dv_.g, pg, H, dh);
		snprintf(what, sizeof(what), "%s: out", kinds[kind]);
		EXPECT(cmp(what, out, nq, 5e-5 * grow, 1e-4));
		snprintf(what, sizeof(what), "%s: lse", kinds[kind]);
		EXPECT(cmp(what, lse, (size_t) B * H * S, 1e-5, 1e-5));
		cpu->ops->attn_backward(cpu, gq.c, gk.c, gv.c, ddo.c, out.c, lse.c, dq_.c, dk_.c, dv_.c, pc, H, dh);
		gpu->ops->attn_backward(gpu, gq.g, gk.g, gv.g, ddo.g, out.g, lse.g, dq_.g, dk_.g, dv_.g, pg, H, dh);
		snprintf(what, sizeof(what), "%s: dq", kinds[kind]);
		EXPECT(cmp(what, gq, nq, 1e-4 * grow, 1e-3));
		snprintf(what, sizeof(what), "%s: dk", kinds[kind]);
		EXPECT(cmp(what, gk, nq, 1e-4 * grow, 1e-3));
		snprintf(what, sizeof(what), "%s: dv", kinds[kind]);
		EXPECT(cmp(what, gv, nq, 1e-4 * grow, 1e-3));
		cpu->ops->attn_plan_free(cpu, pc);
		gpu->ops->attn_plan_free(gpu, pg);
	}
	Dual *all[] = { &dq_, &dk_, &dv_, &ddo, &out, &lse, &gq, &gk, &gv };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		dual_free(all[i]);
	free(q); free(k); free(v); free(dout);
	hw_batch_free(b);
	TEST_END();
}

/* ---------------------------------------------------------------- loss, optimiser */

void
test_loss_optim(void)
{
	TEST_BEGIN("loss_forward_backward (4 target types and the ordinal loss), adamw_update, muon_momentum");
	int B = 19, D = 64, K = 7, HZ = HW_HEAD_Z(D);
	float *Z = randv((size_t) B * HZ, 2), *lg = randv((size_t) B * K, 3), *num = randv(B, 1.5f), *ts = randv((size_t) B * 15, 1);
	uint8_t *nul = malloc(B), *bv = malloc(B);
	int32_t *cat = malloc(B * 4);
	for (int i = 0; i < B; i++) { nul[i] = urand() < 0.2; bv[i] = urand() < 0.5; cat[i] = (int32_t) (urand() * K); }
	Dual dZ = dual(Z, (size_t) B * HZ * 4), dl = dual(lg, (size_t) B * K * 4), dn = dual(num, B * 4), dts = dual(ts, (size_t) B * 60);
	Dual dnul = dual(nul, B), dbv = dual(bv, B), dcat = dual(cat, B * 4);
	Dual loss = dual(NULL, B * 4), gZ = dual(NULL, (size_t) B * HZ * 4), gl = dual(NULL, (size_t) B * K * 4);
	HwLossTargets tc = { dnul.c, dn.c, dbv.c, dts.c, dcat.c }, tg = { dnul.g, dn.g, dbv.g, dts.g, dcat.g };
	int stypes[4] = { HW_ST_NUMERICAL, HW_ST_TIMESTAMP, HW_ST_BOOLEAN, HW_ST_CATEGORICAL };
	for (int s = 0; s < 4; s++)
	{
		char what[64];
		cpu->ops->loss_forward_backward(cpu, loss.c, gZ.c, gl.c, dZ.c, dl.c, &tc, stypes[s], B, D, K, 1.0f / B);
		gpu->ops->loss_forward_backward(gpu, loss.g, gZ.g, gl.g, dZ.g, dl.g, &tg, stypes[s], B, D, K, 1.0f / B);
		snprintf(what, sizeof(what), "loss stype %d: loss", stypes[s]);
		EXPECT(cmp(what, loss, B, 1e-5, 1e-5));
		snprintf(what, sizeof(what), "loss stype %d: dZ", stypes[s]);
		EXPECT(cmp(what, gZ, (size_t) B * HZ, 1e-6, 1e-5));
		if (stypes[s] == HW_ST_CATEGORICAL)
			EXPECT(cmp("loss stype 4: dlogits", gl, (size_t) B * K, 1e-6, 1e-5));
	}
	{
		/* the ordinal loss of a numerical target (levels 0..6 from the z-scores) */
		float *zo = randv((size_t) B * HW_ORD_LEVELS, 2);
		Dual   dzo = dual(zo, (size_t) B * HW_ORD_LEVELS * 4), gzo = dual(NULL, (size_t) B * HW_ORD_LEVELS * 4);
		HwLossTargets oc = tc, og = tg;

		oc.ord_levels = og.ord_levels = 6;
		oc.ord_scale = og.ord_scale = 2.0f;
		oc.ord_shift = og.ord_shift = 3.0f;
		oc.ord_z = dzo.c; oc.ord_dz = gzo.c;
		og.ord_z = dzo.g; og.ord_dz = gzo.g;
		cpu->ops->loss_forward_backward(cpu, loss.c, gZ.c, gl.c, dZ.c, dl.c, &oc, HW_ST_NUMERICAL, B, D, K, 1.0f / B);
		gpu->ops->loss_forward_backward(gpu, loss.g, gZ.g, gl.g, dZ.g, dl.g, &og, HW_ST_NUMERICAL, B, D, K, 1.0f / B);
		EXPECT(cmp("loss ordinal: loss", loss, B, 1e-5, 1e-5));
		EXPECT(cmp("loss ordinal: dZ", gZ, (size_t) B * HZ, 1e-6, 1e-5));
		EXPECT(cmp("loss ordinal: dord", gzo, (size_t) B * HW_ORD_LEVELS, 1e-6, 1e-5));
		dual_free(&dzo);
		dual_free(&gzo);
		free(zo);
	}

	size_t n = 100001;
	float *p = randv(n, 1), *m = randv(n, 0.1f), *v = randv(n, 0.1f), *g = randv(n, 1);
	for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
	Dual dp = dual(p, n * 4), dm = dual(m, n * 4), dv = dual(v, n * 4), dg = dual(g, n * 4), du = dual(NULL, n * 4);
	for (int t = 1; t <= 3; t++)
	{
		cpu->ops->adamw_update(cpu, dp.c, dm.c, dv.c, dg.c, n, 0.7f, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
		gpu->ops->adamw_update(gpu, dp.g, dm.g, dv.g, dg.g, n, 0.7f, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
	}
	EXPECT(cmp("adamw_update p (3 steps)", dp, n, 1e-6, 1e-5));
	EXPECT(cmp("adamw_update m", dm, n, 1e-7, 1e-5));
	EXPECT(cmp("adamw_update v", dv, n, 1e-7, 1e-5));
	cpu->ops->muon_momentum(cpu, du.c, dm.c, dg.c, n, 0.5f, 0.95f);
	gpu->ops->muon_momentum(gpu, du.g, dm.g, dg.g, n, 0.5f, 0.95f);
	EXPECT(cmp("muon_momentum u", du, n, 1e-6, 1e-5));
	EXPECT(cmp("muon_momentum buf", dm, n, 1e-6, 1e-5));

	Dual *all[] = { &dZ, &dl, &dn, &dts, &dnul, &dbv, &dcat, &loss, &gZ, &gl, &dp, &dm, &dv, &dg, &du };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		dual_free(all[i]);
	free(Z); free(lg); free(num); free(ts); free(nul); free(bv); free(cat); free(p); free(m); free(v); free(g);
	TEST_END();
}
