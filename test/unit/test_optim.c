/*
 * test_optim.c: the optimiser (optim.h) against hand-written double
 * references: schedule values, AdamW with bias correction and decoupled
 * decay, Muon's Newton-Schulz (both orientations), clipping, NaN/Inf refusal.
 */
#include "unit.h"
#include "core/optim.h"
#include "core/tensor.h"

#include <stdlib.h>
#include <string.h>

UNIT_TEST(optim_schedule_warmup_cosine_floor)
{
	HwModelConfig c;
	HwError       err = {0};

	hw_model_config_preset(&c, "tiny", &err);
	c.lr = 1.0f;
	c.warmup_steps = 10;
	c.total_steps = 110;
	CHECK_CLOSE(hw_lr_at(&c, 1), 0.1, 1e-7, 0);
	CHECK_CLOSE(hw_lr_at(&c, 10), 1.0, 1e-7, 0);
	CHECK_CLOSE(hw_lr_at(&c, 60), 0.1 + 0.9 * 0.5, 1e-6, 0);      /* half way: cos = 0 */
	CHECK_CLOSE(hw_lr_at(&c, 110), 0.1, 1e-6, 0);
	CHECK_CLOSE(hw_lr_at(&c, 5000), 0.1, 1e-6, 0);
}

/* Resume with a larger total: the lr at the resume step is the lr it had
 * before (no jump), then decays to the 10% floor at the new total; a plain
 * resume (same total) and a resume inside warm-up keep a straight run's
 * schedule bit for bit. */
UNIT_TEST(optim_schedule_extend_continuous)
{
	HwModelConfig c, e, same;
	HwError       err = {0};
	float         before, prev;

	hw_model_config_preset(&c, "tiny", &err);
	c.lr = 1.0f;
	c.warmup_steps = 10;
	c.total_steps = 110;
	before = hw_lr_at(&c, 60);
	e = c;
	hw_lr_schedule_extend(&e, 60, 310);
	CHECK_EQ_INT(e.total_steps, 310);
	CHECK_EQ_INT(e.sched_start, 60);
	CHECK_CLOSE(hw_lr_at(&e, 60), before, 0, 1e-6);
	CHECK_CLOSE(hw_lr_at(&e, 61), before, 0, 1e-3);
	CHECK(hw_lr_at(&e, 61) <= before);
	CHECK_CLOSE(hw_lr_at(&e, 310), 0.1, 1e-6, 0);
	CHECK_CLOSE(hw_lr_at(&e, 400), 0.1, 1e-6, 0);
	CHECK_CLOSE(hw_lr_at(&e, 185), 0.1 + (before - 0.1) * 0.5, 1e-6, 0);  /* half way */
	prev = before;
	for (int t = 61; t <= 310; t++)
	{
		float lr = hw_lr_at(&e, t);
		CHECK_MSG(lr <= prev && lr >= 0.1f - 1e-7f, "lr not decaying at step %d: %g after %g", t, lr, prev);
		prev = lr;
	}
	/* a second extension continues from the first one's curve */
	before = hw_lr_at(&e, 200);
	hw_lr_schedule_extend(&e, 200, 1000);
	CHECK_CLOSE(hw_lr_at(&e, 200), before, 0, 1e-6);
	CHECK_CLOSE(hw_lr_at(&e, 1000), 0.1, 1e-6, 0);
	/* the same total: nothing changes */
	same = c;
	hw_lr_schedule_extend(&same, 60, 110);
	CHECK(memcmp(&same, &c, sizeof(c)) == 0);
	/* inside warm-up: the straight schedule of the new total */
	same = c;
	hw_lr_schedule_extend(&same, 5, 310);
	e = c;
	e.total_steps = 310;
	CHECK(memcmp(&same, &e, sizeof(c)) == 0);
	for (int t = 1; t <= 400; t++)
		CHECK(hw_lr_at(&same, t) == hw_lr_at(&e, t));
}

/* A time budget moves the schedule on (sched_min_t), never back, and not
 * during warm-up. */
UNIT_TEST(optim_schedule_min_t)
{
	HwModelConfig c, b;
	HwError       err = {0};

	hw_model_config_preset(&c, "tiny", &err);
	c.lr = 1.0f;
	c.warmup_steps = 10;
	c.total_steps = 110;
	b = c;
	b.sched_min_t = 60;
	CHECK(hw_lr_at(&b, 5) == hw_lr_at(&c, 5));          /* warm-up: by step */
	CHECK_CLOSE(hw_lr_at(&b, 20), 0.1 + 0.9 * 0.5, 1e-6, 0);   /* at the budget's point */
	CHECK(hw_lr_at(&b, 80) == hw_lr_at(&c, 80));        /* the step is further on */
	b.sched_min_t = 110;
	CHECK_CLOSE(hw_lr_at(&b, 20), 0.1, 1e-6, 0);        /* budget used up: the floor */
}

/* naive double Newton-Schulz, same coefficients and orientation rule */
static void
ns_ref(double *X, int r, int c)
{
	int     m = r <= c ? r : c;
	double *A = malloc(sizeof(double) * m * m), *Bm = malloc(sizeof(double) * m * m), *Y = malloc(sizeof(double) * r * c);
	double  n = 0;

	for (int i = 0; i < r * c; i++)
		n += X[i] * X[i];
	n = sqrt(n) + 1e-7;
	for (int i = 0; i < r * c; i++)
		X[i] /= n;
	for (int it = 0; it < 5; it++)
	{
		for (int i = 0; i < m; i++)
			for (int j = 0; j < m; j++)
			{
				double s = 0;

				if (r <= c)
					for (int k = 0; k < c; k++)
						s += X[i * c + k] * X[j * c + k];
				else
					for (int k = 0; k < r; k++)
						s += X[k * c + i] * X[k * c + j];
				A[i * m + j] = s;
			}
		for (int i = 0; i < m; i++)
			for (int j = 0; j < m; j++)
			{
				double s = 0;

				for (int k = 0; k < m; k++)
					s += A[i * m + k] * A[k * m + j];
				Bm[i * m + j] = -4.7750 * A[i * m + j] + 2.0315 * s;
			}
		for (int i = 0; i < r; i++)
			for (int j = 0; j < c; j++)
			{
				double s = 0;

				if (r <= c)
					for (int k = 0; k < m; k++)
						s += Bm[i * m + k] * X[k * c + j];
				else
					for (int k = 0; k < m; k++)
						s += X[i * c + k] * Bm[k * m + j];
				Y[i * c + j] = 3.4445 * X[i * c + j] + s;
			}
		memcpy(X, Y, sizeof(double) * r * c);
	}
	free(A);
	free(Bm);
	free(Y);
}

UNIT_TEST(optim_newton_schulz_matches_reference)
{
	HwError    err = {0};
	HwBackend *be = hw_backend_cpu_create(2, &err);
	HwRng      r;
	int        shapes[][2] = {{8, 20}, {20, 8}, {16, 16}, {300, 64}};

	hw_rng_seed(&r, 9);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int     R = shapes[s][0], C = shapes[s][1], m = R < C ? R : C;
		float  *X = malloc(sizeof(float) * R * C), *work = malloc(sizeof(float) * (R * C + 2 * m * m));
		double *Xd = malloc(sizeof(double) * R * C), sv = 0;

		for (int i = 0; i < R * C; i++)
			Xd[i] = X[i] = (float) hw_rng_normal(&r);
		hw_muon_orthogonalize(be, X, R, C, work);
		ns_ref(Xd, R, C);
		for (int i = 0; i < R * C; i++)
			CHECK_CLOSE(X[i], Xd[i], 1e-4, 1e-3);
		/* approximately orthogonal: mean squared singular value (|X|_F^2 / m) in the NS band */
		for (int i = 0; i < R * C; i++)
			sv += Xd[i] * Xd[i];
		sv /= m;
		CHECK(sv > 0.4 && sv < 1.3);
		free(X);
		free(work);
		free(Xd);
	}
	hw_backend_destroy(be);
}

/* Table: one AdamW vector p0 [3] and one Muon matrix p1 [2,3]. */
UNIT_TEST(optim_step_adamw_muon_clip_and_nan)
{
	HwError       err = {0};
	HwBackend    *be = hw_backend_cpu_create(1, &err);
	HwModelConfig c;
	HwParamTable  t = {0};
	float         p[9] = {0.5f, -1.0f, 2.0f, 1, 2, 3, 4, 5, 6}, p0[9], g[9] = {3, 4, 0, 1, 0, 0, 0, 0, 0};
	float         m1[9] = {0}, m2[9] = {0}, work[64], gn, lr;
	double        gnorm = sqrt(9.0 + 16.0 + 1.0), sc, mu[6], mm;

	hw_model_config_preset(&c, "tiny", &err);
	c.lr = 0.01f;
	c.warmup_steps = 0;
	c.total_steps = 1000;
	CHECK(c.weight_decay > 0);              /* the decay term below is exercised */
	hw_params_add(&t, "v.b", 1, 3, 1, HW_OPT_ADAMW, 0);
	hw_params_add(&t, "m.w", 2, 2, 3, HW_OPT_MUON, 1);
	memcpy(p0, p, sizeof(p));
	CHECK_EQ_INT(hw_optim_step(be, &c, t.p, t.n, p, g, m1, m2, work, 1, &gn, &lr, &err), HW_OK);
	CHECK_CLOSE(gn, gnorm, 1e-5, 1e-6);
	sc = 1.0 / (gnorm + 1e-6);               /* clip to norm 1 */
	CHECK_CLOSE(lr, hw_lr_at(&c, 1), 0, 0);
	/* AdamW step 1: m/bc1 = g', v/bc2 = g'^2 -> update = sign(g') (|g'| >> eps); no decay on v.b */
	for (int i = 0; i < 3; i++)
	{
		double gg = g[i] * sc, upd = gg / (fabs(gg) + 1e-8);

		CHECK_CLOSE(p[i], p0[i] - lr * upd, 1e-6, 1e-6);
		CHECK_CLOSE(m1[i], 0.1 * gg, 1e-7, 1e-5);
		CHECK_CLOSE(m2[i], 0.05 * gg * gg, 1e-7, 1e-5);
	}
	/* Muon: buf = g'; u = g' + 0.95 g'; NS(u) scaled by 0.2 sqrt(3); decay lr*wd */
	mm = 0;
	for (int i = 0; i < 6; i++)
	{
		mu[i] = 1.95 * g[3 + i] * sc;
		CHECK_CLOSE(m1[3 + i], g[3 + i] * sc, 1e-7, 1e-5);
	}
	ns_ref(mu, 2, 3);
	for (int i = 0; i < 6; i++)
	{
		mm = p0[3 + i] * (1 - lr * (double) c.weight_decay) - lr * 0.2 * sqrt(3.0) * mu[i];
		CHECK_CLOSE(p[3 + i], mm, 1e-6, 1e-5);
	}
	/* Inf gradient: refused, nothing changes */
	memcpy(p0, p, sizeof(p));
	{
		float m10[9], m20[9];

		memcpy(m10, m1, sizeof(m1));
		memcpy(m20, m2, sizeof(m2));
		g[4] = INFINITY;
		CHECK_EQ_INT(hw_optim_step(be, &c, t.p, t.n, p, g, m1, m2, work, 2, &gn, &lr, &err), HW_ERR_NUMERIC);
		CHECK(strstr(err.msg, "infinite") != NULL);
		CHECK(memcmp(p, p0, sizeof(p)) == 0 && memcmp(m1, m10, sizeof(m1)) == 0 && memcmp(m2, m20, sizeof(m2)) == 0);
	}
	hw_params_free(&t);
	hw_backend_destroy(be);
}
