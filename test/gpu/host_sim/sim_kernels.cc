/*
 * sim_kernels.cc: the kernels of cuda/util.cu, norm.cu, activations.cu,
 * encoder.cu, loss.cu and optim.cu, run on the host (sim.h; launches
 * rewritten by launch2sim.py), against the CPU backend (src/backend/backend_cpu*.c) on the
 * same inputs.  Host memory stands in for device memory.  Not a GPU test.
 * Tolerances as in test/gpu/test_cuda_backend.c (fp32, other summation
 * orders).
 */
#include "hw_cuda.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

static HwBackend *cpu;
static int n_ok, n_fail;
static cudaStream_t S0 = 0;

static uint64_t rs = 777;
static float
nrand(void)
{
	double a = 0;
	for (int i = 0; i < 4; i++)
	{
		rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
		a += (rs >> 11) * (1.0 / 9007199254740992.0) - 0.5;
	}
	return (float) (a * 1.7320508);
}
static std::vector<float> randv(size_t n, float sc) { std::vector<float> v(n); for (auto &x : v) x = nrand() * sc; return v; }

static void
cmp(const char *what, const float *ref, const float *got, size_t n, double atol, double rtol)
{
	size_t bad = 0, wi = 0;
	double worst = 0;
	for (size_t i = 0; i < n; i++)
	{
		double e = fabs((double) ref[i] - got[i]), lim = atol + rtol * fabs(ref[i]);
		if (!(e <= lim)) { bad++; if (!(e / lim <= worst)) { worst = e / lim; wi = i; } }
	}
	if (bad) { n_fail++; printf("  FAIL %-36s %zu of %zu; worst [%zu] cpu %.9g sim %.9g\n", what, bad, n, wi, ref[wi], got[wi]); }
	else { n_ok++; printf("  ok   %-36s n=%zu\n", what, n); }
}
#define CMPV(what, a, b, at, rt) cmp(what, (a).data(), (b).data(), (a).size(), at, rt)

static void
utilities(void)
{
	printf("util.cu\n");
	int M = 300, N = 40;
	auto x = randv((size_t) M * N, 1), bias = randv(N, 1), y = randv((size_t) M * N, 1);
	auto x2 = x, b2 = bias, y2 = y;
	cpu->ops->add_bias(cpu, x.data(), bias.data(), M, N);
	hw_k_add_bias(S0, x2.data(), b2.data(), M, N);
	CMPV("add_bias", x, x2, 1e-6, 1e-6);
	std::vector<float> part((size_t) hw_cuda_nch(M) * N);
	cpu->ops->bias_backward(cpu, bias.data(), y.data(), M, N);
	hw_k_colsum(S0, b2.data(), part.data(), y2.data(), M, N, N);
	CMPV("bias_backward (+=)", bias, b2, 1e-5, 1e-5);
	cpu->ops->axpby(cpu, y.data(), 0.3f, x.data(), -1.5f, y.size());
	hw_k_axpby(S0, y2.data(), 0.3f, x2.data(), -1.5f, y2.size());
	CMPV("axpby", y, y2, 1e-6, 1e-6);
	size_t big = 300007;
	auto z = randv(big, 2);
	std::vector<double> dp((big + 4095) / 4096);
	double res = 0, ref = cpu->ops->sumsq(cpu, z.data(), big);
	hw_k_sumsq(S0, &res, dp.data(), z.data(), big);
	bool ok = fabs(res - ref) <= 1e-10 * ref;
	printf("  %s sumsq cpu %.15g sim %.15g\n", ok ? "ok  " : "FAIL", ref, res);
	ok ? n_ok++ : n_fail++;
	int rows = 20, C = 24, Mg = 77;
	std::vector<uint16_t> tab((size_t) rows * C);
	std::vector<int32_t> idx(Mg), perm(rows);
	for (auto &t : tab) t = hw_f32_to_f16(nrand());
	for (int i = 0; i < Mg; i++) idx[i] = (i * 7) % rows;
	std::vector<float> o1((size_t) Mg * C), o2((size_t) Mg * C);
	cpu->ops->gather_f16_rows(cpu, o1.data(), tab.data(), idx.data(), Mg, C);
	hw_k_gather_f16_rows(S0, o2.data(), tab.data(), idx.data(), Mg, C);
	CMPV("gather_f16_rows", o1, o2, 0, 0);
	for (int i = 0; i < rows; i++) perm[i] = (i * 7) % rows;     /* 7 coprime with 20: a permutation */
	auto src = randv((size_t) rows * C, 1), src2 = src;
	std::vector<float> g1((size_t) rows * C), g2((size_t) rows * C);
	cpu->ops->gather_rows(cpu, g1.data(), src.data(), perm.data(), rows, C);
	hw_k_gather_rows(S0, g2.data(), src2.data(), perm.data(), rows, C);
	CMPV("gather_rows", g1, g2, 0, 0);
	cpu->ops->scatter_add_rows(cpu, src.data(), g1.data(), perm.data(), rows, C);
	hw_k_scatter_add_rows(S0, src2.data(), g2.data(), perm.data(), rows, C);
	CMPV("scatter_add_rows", src, src2, 1e-6, 1e-6);
}

static void
norms(void)
{
	printf("norm.cu, activations.cu\n");
	int N = 300, D = 64, H = 4, dh = 16, F = 96;
	auto x = randv((size_t) N * D, 2), g = randv(D, 0.2f), dy = randv((size_t) N * D, 1);
	std::vector<float> o1((size_t) N * D), o2((size_t) N * D), r1(N), r2(N);
	cpu->ops->rmsnorm_forward(cpu, o1.data(), r1.data(), x.data(), g.data(), N, D);
	hw_k_rmsnorm_forward(S0, o2.data(), r2.data(), x.data(), g.data(), N, D);
	CMPV("rmsnorm_forward", o1, o2, 1e-5, 1e-4);
	CMPV("rmsnorm_forward rstd", r1, r2, 1e-6, 1e-5);
	auto dx1 = dy, dx2 = dy, dg1 = g, dg2 = g;
	std::vector<float> part((size_t) hw_cuda_nch(N) * D);
	cpu->ops->rmsnorm_backward(cpu, dx1.data(), dg1.data(), dy.data(), x.data(), r1.data(), g.data(), N, D);
	hw_k_rmsnorm_backward(S0, dx2.data(), dg2.data(), part.data(), dy.data(), x.data(), r1.data(), g.data(), N, D);
	CMPV("rmsnorm_backward dx", dx1, dx2, 1e-4, 1e-3);
	CMPV("rmsnorm_backward dg", dg1, dg2, 1e-3, 1e-3);

	auto qkvg = randv((size_t) N * 4 * D, 1), tau = randv(H, 1);
	for (int h = 0; h < H; h++) tau[h] = 4.0f * (1 + 0.1f * tau[h]);
	for (int i = 0; i < dh; i++) qkvg[i] = 1e-9f;        /* eps branch */
	std::vector<float> qs1((size_t) N * D), qs2((size_t) N * D), kn1((size_t) N * D), kn2((size_t) N * D);
	std::vector<float> v1((size_t) N * D), v2((size_t) N * D), qn1((size_t) N * H), qn2((size_t) N * H), kk1((size_t) N * H), kk2((size_t) N * H);
	cpu->ops->qknorm_forward(cpu, qs1.data(), kn1.data(), v1.data(), qn1.data(), kk1.data(), qkvg.data(), tau.data(), N, H, dh);
	hw_k_qknorm_forward(S0, qs2.data(), kn2.data(), v2.data(), qn2.data(), kk2.data(), qkvg.data(), tau.data(), N, H, dh);
	CMPV("qknorm_forward qs", qs1, qs2, 1e-5, 1e-4);
	CMPV("qknorm_forward kn", kn1, kn2, 1e-5, 1e-4);
	CMPV("qknorm_forward v", v1, v2, 0, 0);
	CMPV("qknorm_forward |q|", qn1, qn2, 1e-6, 1e-5);
	auto a = randv((size_t) N * D, 1), b = randv((size_t) N * D, 1), c = randv((size_t) N * D, 1);
	auto d1 = qkvg, d2 = qkvg, t1 = tau, t2 = tau;
	std::vector<float> tmp((size_t) N * H), part2((size_t) hw_cuda_nch(N) * H);
	cpu->ops->qknorm_backward(cpu, d1.data(), t1.data(), a.data(), b.data(), c.data(), qkvg.data(), qn1.data(), kk1.data(), tau.data(), N, H, dh);
	hw_k_qknorm_backward(S0, d2.data(), t2.data(), tmp.data(), part2.data(), a.data(), b.data(), c.data(), qkvg.data(), qn1.data(), kk1.data(), tau.data(), N, H, dh);
	CMPV("qknorm_backward dqkvg", d1, d2, 1e-4, 1e-4);
	CMPV("qknorm_backward dtau", t1, t2, 1e-3, 1e-3);

	std::vector<float> xo1((size_t) N * D), xo2((size_t) N * D), dO1((size_t) N * D), dO2((size_t) N * D);
	cpu->ops->gate_residual_forward(cpu, xo1.data(), x.data(), qkvg.data() + 3 * D, 4 * D, o1.data(), N, D);
	hw_k_gate_residual_forward(S0, xo2.data(), x.data(), qkvg.data() + 3 * D, 4 * D, o1.data(), N, D);
	CMPV("gate_residual_forward", xo1, xo2, 1e-5, 1e-5);
	cpu->ops->gate_residual_backward(cpu, d1.data() + 3 * D, 4 * D, dO1.data(), dy.data(), qkvg.data() + 3 * D, o1.data(), N, D);
	hw_k_gate_residual_backward(S0, d2.data() + 3 * D, 4 * D, dO2.data(), dy.data(), qkvg.data() + 3 * D, o1.data(), N, D);
	CMPV("gate_residual_backward dO", dO1, dO2, 1e-5, 1e-5);
	CMPV("gate_residual_backward dgpre", d1, d2, 1e-4, 1e-4);

	auto gu = randv((size_t) N * 2 * F, 2), dh_ = randv((size_t) N * F, 1);
	std::vector<float> h1((size_t) N * F), h2((size_t) N * F), dgu1((size_t) N * 2 * F), dgu2((size_t) N * 2 * F);
	cpu->ops->swiglu_forward(cpu, h1.data(), gu.data(), N, F);
	hw_k_swiglu_forward(S0, h2.data(), gu.data(), N, F);
	CMPV("swiglu_forward", h1, h2, 1e-5, 1e-5);
	cpu->ops->swiglu_backward(cpu, dgu1.data(), dh_.data(), gu.data(), N, F);
	hw_k_swiglu_backward(S0, dgu2.data(), dh_.data(), gu.data(), N, F);
	CMPV("swiglu_backward", dgu1, dgu2, 1e-5, 1e-5);
}

static void
encoder(void)
{
	printf("encoder.cu\n");
	int N = 700, D = 32, ncols = 12, Uc = 9, U = 37;
	std::vector<int8_t> st(N);
	std::vector<int32_t> col(N), cl(N), tl(N);
	std::vector<uint8_t> nul(N), tgt(N), bv(N);
	auto num = randv(N, 1), ts = randv((size_t) N * 15, 1);
	for (int n = 0; n < N; n++)
	{
		st[n] = (int8_t) ((n * 13 + n / 7) % 7);
		col[n] = (n * 5 + 3) % ncols;
		cl[n] = st[n] == 4 ? (n * 3) % Uc : 0;
		tl[n] = st[n] == 5 ? (n * 11) % U : 0;
		nul[n] = n % 10 == 3;
		tgt[n] = n % 19 == 0;
		bv[n] = (n / 3) % 2;
	}
	HwEncInputs in = { st.data(), col.data(), nul.data(), tgt.data(), num.data(), ts.data(), bv.data(), cl.data(), tl.data() };
	size_t nw = (size_t) (ncols + Uc + U + 6) * D + (size_t) D * 15 + D + 2 * D;
	auto w = randv(nw, 1);
	std::vector<float> gw1(nw, 7.f), gw2(nw, 7.f);
#define VIEW(f, base) do { float *p_ = (float *) (base); \
	f.colproj = p_; p_ += (size_t) ncols * D; f.catproj = p_; p_ += (size_t) Uc * D; f.textproj = p_; p_ += (size_t) U * D; \
	f.id_emb = p_; p_ += D; f.null_emb = p_; p_ += D; f.mask_emb = p_; p_ += D; f.num_w = p_; p_ += D; f.num_b = p_; p_ += D; \
	f.ts_w = p_; p_ += (size_t) D * 15; f.ts_b = p_; p_ += D; f.bool_emb = p_; } while (0)
	HwEncWeights ww;
	HwEncGrads g1, g2;
	VIEW(ww, w.data());
	VIEW(g1, gw1.data());
	VIEW(g2, gw2.data());
	std::vector<float> e1((size_t) N * D), e2((size_t) N * D);
	cpu->ops->encoder_forward(cpu, e1.data(), &in, &ww, N, D);
	hw_k_encoder_forward(S0, e2.data(), &in, &ww, N, D);
	CMPV("encoder_forward", e1, e2, 1e-5, 1e-5);
	auto de = randv((size_t) N * D, 1);
	std::vector<char> scr(hw_cuda_encoder_scratch_bytes(N, D, U));
	cpu->ops->encoder_backward(cpu, &g1, de.data(), &in, N, D, ncols, Uc, U);
	cudaError_t e = hw_k_encoder_backward(S0, scr.data(), scr.size(), &g2, de.data(), &in, N, D, ncols, Uc, U);
	if (e != cudaSuccess) { printf("  FAIL encoder_backward returned %d\n", e); n_fail++; }
	CMPV("encoder_backward (all grads)", gw1, gw2, 1e-4, 1e-4);
}

static void
loss_optim(void)
{
	printf("loss.cu, optim.cu\n");
	int B = 13, D = 32, K = 6, HZ = HW_HEAD_Z(D);
	auto Z = randv((size_t) B * HZ, 2), lg = randv((size_t) B * K, 3), num = randv(B, 1.5f), ts = randv((size_t) B * 15, 1);
	std::vector<uint8_t> nul(B), bv(B);
	std::vector<int32_t> cat(B);
	for (int i = 0; i < B; i++) { nul[i] = i % 5 == 1; bv[i] = i % 2; cat[i] = (i * 5) % K; }
	HwLossTargets t = { nul.data(), num.data(), bv.data(), ts.data(), cat.data() };
	int stypes[4] = { HW_ST_NUMERICAL, HW_ST_TIMESTAMP, HW_ST_BOOLEAN, HW_ST_CATEGORICAL };
	for (int s = 0; s < 4; s++)
	{
		std::vector<float> l1(B), l2(B), dz1((size_t) B * HZ), dz2((size_t) B * HZ), dl1((size_t) B * K), dl2((size_t) B * K);
		char what[64];
		cpu->ops->loss_forward_backward(cpu, l1.data(), dz1.data(), dl1.data(), Z.data(), lg.data(), &t, stypes[s], B, D, K, 1.0f / B);
		hw_k_loss_forward_backward(S0, l2.data(), dz2.data(), dl2.data(), Z.data(), lg.data(), &t, stypes[s], B, D, K, 1.0f / B);
		snprintf(what, sizeof(what), "loss stype %d", stypes[s]);
		CMPV(what, l1, l2, 1e-5, 1e-5);
		snprintf(what, sizeof(what), "loss stype %d dZ", stypes[s]);
		CMPV(what, dz1, dz2, 1e-6, 1e-5);
		snprintf(what, sizeof(what), "loss stype %d dlogits", stypes[s]);
		CMPV(what, dl1, dl2, 1e-6, 1e-5);
	}
	{
		/* the ordinal loss of a numerical target: levels 0..5 from the z-scores */
		auto zo = randv((size_t) B * HW_ORD_LEVELS, 2);
		std::vector<float> l1(B), l2(B), dz1((size_t) B * HZ), dz2((size_t) B * HZ), dl1((size_t) B * K), dl2((size_t) B * K);
		std::vector<float> do1((size_t) B * HW_ORD_LEVELS, 7.f), do2((size_t) B * HW_ORD_LEVELS, 7.f);
		HwLossTargets to = t;
		to.ord_levels = 5;
		to.ord_scale = 2.0f;
		to.ord_shift = 2.0f;
		to.ord_z = zo.data();
		to.ord_dz = do1.data();
		cpu->ops->loss_forward_backward(cpu, l1.data(), dz1.data(), dl1.data(), Z.data(), lg.data(), &to, HW_ST_NUMERICAL, B, D, K, 1.0f / B);
		to.ord_dz = do2.data();
		hw_k_loss_forward_backward(S0, l2.data(), dz2.data(), dl2.data(), Z.data(), lg.data(), &to, HW_ST_NUMERICAL, B, D, K, 1.0f / B);
		CMPV("loss ordinal", l1, l2, 1e-5, 1e-5);
		CMPV("loss ordinal dZ", dz1, dz2, 1e-6, 1e-5);
		CMPV("loss ordinal dord", do1, do2, 1e-6, 1e-5);
	}
	size_t n = 5001;
	auto p = randv(n, 1), m = randv(n, 0.1f), v = randv(n, 0.1f), g = randv(n, 1);
	for (auto &x : v) x = fabsf(x);
	auto p2 = p, m2 = m, v2 = v;
	for (int st = 1; st <= 3; st++)
	{
		cpu->ops->adamw_update(cpu, p.data(), m.data(), v.data(), g.data(), n, 0.7f, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, st);
		hw_k_adamw_update(S0, p2.data(), m2.data(), v2.data(), g.data(), n, 0.7f, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
						  1.0f - powf(0.9f, (float) st), 1.0f - powf(0.95f, (float) st));
	}
	CMPV("adamw p", p, p2, 1e-6, 1e-5);
	CMPV("adamw m", m, m2, 1e-7, 1e-5);
	CMPV("adamw v", v, v2, 1e-7, 1e-5);
	std::vector<float> u1(n), u2(n);
	cpu->ops->muon_momentum(cpu, u1.data(), m.data(), g.data(), n, 0.5f, 0.95f);
	hw_k_muon_momentum(S0, u2.data(), m2.data(), g.data(), n, 0.5f, 0.95f);
	CMPV("muon_momentum u", u1, u2, 1e-6, 1e-5);
	CMPV("muon_momentum buf", m, m2, 1e-6, 1e-5);
}

int
main(void)
{
	HwError err = {};
	cpu = hw_backend_cpu_create(1, &err);
	if (!cpu) { printf("CPU backend: %s\n", err.msg); return 1; }
	utilities();
	norms();
	encoder();
	loss_optim();
	hw_backend_destroy(cpu);
	printf("%d passed, %d failed\n", n_ok, n_fail);
	return n_fail ? 1 : 0;
}
