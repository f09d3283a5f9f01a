/*
 * sim_attention.cc: runs the device code of cuda/attention.cu on the host
 * (sim.h) and compares it with the CPU dense reference of src/core/attention_reference.c.
 *
 *   test/gpu/host_sim/run.sh
 *
 * The kernels are taken verbatim from cuda/attention.cu (the regions between
 * HW_SIM_BEGIN and HW_SIM_END, extracted by run.sh into attention_body.inc).
 * Checks, for the four mask kinds, dh 16 and 32, fp32 and bf16 inputs, on a
 * synthetic batch whose S is not a multiple of the 64-wide tile:
 *   - the device tile plan counts exactly the allowed pairs of the CPU plan,
 *     and every tile with an allowed pair is listed (forward and backward lists);
 *   - forward out and lse, backward dq, dk, dv against the dense reference
 *     (|d| <= 1e-5 + 1e-4 |ref|: the same fp32 arithmetic in another order).
 * This is not a GPU test: it cannot see anything about real hardware.
 */
#include "sim.h"

extern "C" {
#include "core/hw_common.h"
#include "core/attention.h"
#include "core/batch.h"
#include "synth_batch.h"
}

#include <cstdio>
#include <cstdlib>

#define HW_CUDA_ATTN_TILE 64
#define TILE HW_CUDA_ATTN_TILE

typedef struct HwCudaMaskInfo
{
	int32_t         B, S, R;
	const int32_t  *column_ids;
	const uint16_t *seq_row_ids;
	const uint8_t  *is_padding;
	const uint8_t  *fk_adj;
	const uint16_t *perm;
} HwCudaMaskInfo;

#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#include "attention_body.inc"

static int n_fail, n_ok;

static void
cmp(const char *what, const float *ref, const float *got, size_t n, double atol, double rtol)
{
	size_t bad = 0, wi = 0;
	double worst = 0;
	for (size_t i = 0; i < n; i++)
	{
		double e = fabs((double) ref[i] - got[i]), lim = atol + rtol * fabs(ref[i]);
		if (!(e <= lim))
		{
			bad++;
			if (!(e / lim <= worst)) { worst = e / lim; wi = i; }
		}
	}
	if (bad)
	{
		n_fail++;
		printf("  FAIL %-40s %zu of %zu; worst [%zu] ref %.8g got %.8g\n", what, bad, n, wi, ref[wi], got[wi]);
	}
	else
	{
		n_ok++;
		printf("  ok   %-40s n=%zu\n", what, n);
	}
}

static uint64_t rs = 12345;
static float
rnd(void)
{
	rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
	return (float) ((rs >> 11) * (1.0 / 9007199254740992.0)) - 0.5f;
}

static uint16_t
to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);          /* round to nearest even */
	return (uint16_t) (u >> 16);
}

template <int DH, typename TIn>
static void
run(const HwBatch *b, int kind, int H, bool bf16)
{
	const uint16_t *perms[4] = { b->col_perm, b->out_perm, b->in_perm, NULL };
	HwCudaMaskInfo in = { b->B, b->S, b->R, b->column_ids, b->seq_row_ids, b->is_padding, b->fk_adj, perms[kind] };
	HwAttnMaskInfo hi = { b->B, b->S, b->R, b->column_ids, b->seq_row_ids, b->is_padding, b->fk_adj, perms[kind] };
	int B = b->B, S = b->S, nt = (S + TILE - 1) / TILE;
	size_t n = (size_t) B * S * H * DH, nl = (size_t) B * H * S;
	printf("kind %d, dh %d, %s inputs\n", kind, DH, bf16 ? "bf16" : "fp32");

	/* plan */
	std::vector<uint8_t> tm((size_t) B * nt * nt);
	std::vector<int32_t> qc((size_t) B * nt), kc((size_t) B * nt);
	std::vector<int16_t> ql((size_t) B * nt * nt), kl((size_t) B * nt * nt);
	unsigned long long stats[2] = {0, 0};
	sim_launch(dim3(nt, nt, B), dim3(256), [&] { plan_tiles_kernel(in, kind, nt, tm.data(), stats); });
	sim_launch(dim3(B), dim3(nt), [&] { plan_lists_kernel(nt, tm.data(), qc.data(), ql.data(), kc.data(), kl.data()); });
	HwError err = {0};
	HwAttnPlan *cp = attn_plan_create(&hi, (HwMaskKind) kind, &err);
	long long cpu_pairs = cp ? attn_plan_allowed_pairs(cp) : -1;
	if (cp) attn_plan_free(cp);
	/* brute force: every allowed pair lies in a listed tile, both lists agree */
	long long brute = 0, missing = 0;
	for (int bb = 0; bb < B; bb++)
		for (int p = 0; p < S; p++)
			for (int r = 0; r < S; r++)
			{
				int i = in.perm ? in.perm[bb * S + p] : p, j = in.perm ? in.perm[bb * S + r] : r;
				if (!attn_mask_allowed(&hi, (HwMaskKind) kind, bb, i, j))
					continue;
				brute++;
				int qt = p / TILE, kt = r / TILE, f1 = 0, f2 = 0;
				for (int c = 0; c < qc[bb * nt + qt]; c++) f1 |= ql[((size_t) bb * nt + qt) * nt + c] == kt;
				for (int c = 0; c < kc[bb * nt + kt]; c++) f2 |= kl[((size_t) bb * nt + kt) * nt + c] == qt;
				missing += !(f1 && f2);
			}
	bool plan_ok = (long long) stats[0] == brute && brute == cpu_pairs && missing == 0;
	printf("  %s plan: allowed pairs device %llu, brute force %lld, CPU plan %lld; pairs in unlisted tiles %lld; %llu of %d tiles visited\n",
		   plan_ok ? "ok  " : "FAIL", stats[0], brute, cpu_pairs, missing, stats[1], B * nt * nt);
	if (plan_ok) n_ok++; else n_fail++;

	/* inputs (bf16: the reference sees the same rounded values) */
	std::vector<float> q(n), k(n), v(n), dout(n);
	std::vector<TIn> qi(n), ki(n), vi(n);
	for (size_t i = 0; i < n; i++)
	{
		float a = 2 * rnd(), c = 2 * rnd(), d = rnd();
		dout[i] = rnd();
		if constexpr (sizeof(TIn) == 2)
		{
			qi[i].x = to_bf16(a); ki[i].x = to_bf16(c); vi[i].x = to_bf16(d);
			q[i] = __bfloat162float(qi[i]); k[i] = __bfloat162float(ki[i]); v[i] = __bfloat162float(vi[i]);
		}
		else
		{
			q[i] = qi[i] = a; k[i] = ki[i] = c; v[i] = vi[i] = d;
		}
	}
	std::vector<float> out(n), lse(nl), ro(n), rl(nl);
	sim_launch(dim3(nt, H, B), dim3(TILE), [&] {
		attn_fwd_kernel<DH, TIn>(out.data(), lse.data(), qi.data(), ki.data(), vi.data(), in, kind, nt, qc.data(), ql.data(), H);
	});
	attn_dense_reference_forward(ro.data(), rl.data(), q.data(), k.data(), v.data(), &hi, (HwMaskKind) kind, H, DH);
	cmp("forward out", ro.data(), out.data(), n, 1e-5, 1e-4);
	cmp("forward lse", rl.data(), lse.data(), nl, 1e-5, 1e-5);

	std::vector<float> delta(nl), dq(n), dk(n), dv(n), rq(n), rk(n), rv(n);
	unsigned nb = (unsigned) ((n / DH + 255) / 256);
	sim_launch(dim3(nb), dim3(256), [&] { attn_delta_kernel(delta.data(), dout.data(), out.data(), B, S, H, DH); });
	sim_launch(dim3(nt, H, B), dim3(TILE), [&] {
		attn_dq_kernel<DH, TIn>(dq.data(), dout.data(), lse.data(), delta.data(), qi.data(), ki.data(), vi.data(),
								in, kind, nt, qc.data(), ql.data(), H);
	});
	sim_launch(dim3(nt, H, B), dim3(TILE), [&] {
		attn_dkv_kernel<DH, TIn>(dk.data(), dv.data(), dout.data(), lse.data(), delta.data(), qi.data(), ki.data(),
								 vi.data(), in, kind, nt, kc.data(), kl.data(), H);
	});
	attn_dense_reference_backward(rq.data(), rk.data(), rv.data(), dout.data(), ro.data(), rl.data(),
								  q.data(), k.data(), v.data(), &hi, (HwMaskKind) kind, H, DH);
	cmp("backward dq", rq.data(), dq.data(), n, 1e-5, 1e-4);
	cmp("backward dk", rk.data(), dk.data(), n, 1e-5, 1e-4);
	cmp("backward dv", rv.data(), dv.data(), n, 1e-5, 1e-4);
}

int
main(void)
{
	HwSynthSpec sp = {};
	sp.B = 2;
	sp.S = 150;               /* 3 tiles, the last one partial */
	sp.d_text = 16;
	sp.target_stype = HW_ST_NUMERICAL;
	sp.seed = 3;
	HwBatch *b = hw_synth_batch(&sp, 0);
	if (!b)
	{
		printf("cannot make a synthetic batch\n");
		return 1;
	}
	for (int kind = 0; kind < 4; kind++)
	{
		run<16, float>(b, kind, 2, false);
		run<32, float>(b, kind, 2, false);
	}
	run<32, __nv_bfloat16>(b, HW_MASK_OUTBOUND, 2, true);
	run<64, float>(b, HW_MASK_INBOUND, 1, false);
	run<128, float>(b, HW_MASK_COLUMN, 1, false);     /* 32-key chunks: two per tile */
	hw_batch_free(b);
	printf("%d passed, %d failed\n", n_ok, n_fail);
	return n_fail ? 1 : 0;
}
