/*
 * optim.c: Muon + AdamW, schedule, clipping (see optim.h, model.h).
 *
 * Deterministic: the global norm is summed per parameter in a fixed chunk
 * order (backend sumsq) and then over parameters in table order in double;
 * every update is elementwise or a backend GEMM (itself deterministic).
 */
#include "core/optim.h"

#include <math.h>

#define NS_A 3.4445f
#define NS_B (-4.7750f)
#define NS_C 2.0315f

/* The schedule after warm-up at a (possibly fractional) step t. */
static double
lr_after_warmup(const HwModelConfig *cfg, double t)
{
	double peak = cfg->lr, prog;

	if (cfg->sched_start > cfg->warmup_steps && t >= cfg->sched_start)
	{
		double floor_lr = peak * 0.1, lr0 = cfg->sched_start_lr;

		if (t == cfg->sched_start)
			return cfg->sched_start_lr;
		if (cfg->total_steps <= cfg->sched_start)
			return floor_lr;
		prog = (t - cfg->sched_start) / (double) (cfg->total_steps - cfg->sched_start);
		if (prog > 1.0)
			prog = 1.0;
		return floor_lr + (lr0 - floor_lr) * 0.5 * (1.0 + cos(M_PI * prog));
	}
	if (cfg->total_steps <= cfg->warmup_steps)
		return peak * 0.1;
	prog = (t - cfg->warmup_steps) / (double) (cfg->total_steps - cfg->warmup_steps);
	if (prog > 1.0)
		prog = 1.0;
	return peak * (0.1 + 0.9 * 0.5 * (1.0 + cos(M_PI * prog)));
}

float
hw_lr_at(const HwModelConfig *cfg, int64_t t)
{
	if (cfg->warmup_steps > 0 && t <= cfg->warmup_steps)
		return (float) ((double) cfg->lr * (double) t / cfg->warmup_steps);
	if (cfg->sched_min_t > (double) t)
		return (float) lr_after_warmup(cfg, cfg->sched_min_t);
	return (float) lr_after_warmup(cfg, (double) t);
}

void
hw_lr_schedule_extend(HwModelConfig *cfg, int64_t step, int32_t new_total)
{
	if (new_total == cfg->total_steps)
		return;                     /* a plain resume: the same schedule */
	if (step > cfg->warmup_steps)
	{
		/* the lr step `step` had, under the schedule so far */
		float lr0 = hw_lr_at(cfg, step);

		cfg->sched_start = (int32_t) step;
		cfg->sched_start_lr = lr0;
	}
	cfg->total_steps = new_total;
}

int64_t
hw_muon_work_floats(const HwParamInfo *p, int np)
{
	int64_t best = 0;

	for (int i = 0; i < np; i++)
		if (p[i].opt == HW_OPT_MUON)
		{
			int64_t r = p[i].shape[0], c = p[i].shape[1], m = r < c ? r : c;
			int64_t need = 2 * r * c + 2 * m * m;

			if (need > best)
				best = need;
		}
	return best;
}

void
hw_muon_orthogonalize(HwBackend *be, float *X, int rows, int cols, float *work)
{
	const HwBackendOps *o = be->ops;
	int64_t             n = (int64_t) rows * cols;
	int                 m = rows <= cols ? rows : cols;
	float              *X2 = work, *A = work + n, *Bm = A + (int64_t) m * m;
	double              nrm = sqrt(o->sumsq(be, X, (size_t) n));

	o->axpby(be, X, (float) (1.0 / (nrm + 1e-7)), X, 0.0f, (size_t) n);
	for (int it = 0; it < 5; it++)
	{
		float *tmp;

		if (rows <= cols)
			/* A = X X^T [r,r] */
			o->gemm(be, false, true, m, m, cols, 1.0f, X, cols, X, cols, 0.0f, A, m);
		else
			/* A = X^T X [c,c] */
			o->gemm(be, true, false, m, m, rows, 1.0f, X, cols, X, cols, 0.0f, A, m);
		/* Bm = b A + c A A */
		o->memcpy_d2d(be, Bm, A, sizeof(float) * m * m);
		o->gemm(be, false, false, m, m, m, NS_C, A, m, A, m, NS_B, Bm, m);
		/* X2 = a X + Bm X  (or X Bm) */
		o->memcpy_d2d(be, X2, X, sizeof(float) * n);
		if (rows <= cols)
			o->gemm(be, false, false, rows, cols, m, 1.0f, Bm, m, X, cols, NS_A, X2, cols);
		else
			o->gemm(be, false, false, rows, cols, m, 1.0f, X, cols, Bm, m, NS_A, X2, cols);
		tmp = X;
		X = X2;
		X2 = tmp;
	}
	/* 5 swaps: the result sits in work; copy it back to the caller's X */
	o->memcpy_d2d(be, X2, X, sizeof(float) * n);
}

int
hw_optim_step(HwBackend *be, const HwModelConfig *cfg, const HwParamInfo *p, int np,
			  float *params, const float *grads, float *m1, float *m2, float *work,
			  int64_t t, float *gnorm_out, float *lr_out, HwError *err)
{
	const HwBackendOps *o = be->ops;
	double              ss = 0, gnorm;
	float               gscale, lr;

	for (int i = 0; i < np; i++)
		ss += o->sumsq(be, grads + p[i].offset, (size_t) p[i].numel);
	gnorm = sqrt(ss);
	*gnorm_out = (float) gnorm;
	if (!isfinite(gnorm))
		return hw_error_set(err, HW_ERR_NUMERIC,
							"gradient norm is %s at step %lld: training stopped, parameters unchanged",
							isnan(gnorm) ? "NaN" : "infinite", (long long) t);
	gscale = gnorm > cfg->clip_norm ? (float) (cfg->clip_norm / (gnorm + 1e-6)) : 1.0f;
	lr = hw_lr_at(cfg, t);
	*lr_out = lr;
	for (int i = 0; i < np; i++)
	{
		float       *pp = params + p[i].offset, *a = m1 + p[i].offset, *b = m2 + p[i].offset;
		const float *g = grads + p[i].offset;
		/* the output heads' matrices have their own rate (model.h, head_weight_decay;
		 * negative only in a config not yet finished: as weight_decay) */
		float        wd = !p[i].decay ? 0.0f :
			p[i].head && cfg->head_weight_decay >= 0 ? cfg->head_weight_decay : cfg->weight_decay;

		if (p[i].opt == HW_OPT_MUON)
		{
			int   r = p[i].shape[0], c = p[i].shape[1];
			float *X = work + 2 * (int64_t) (r < c ? r : c) * (r < c ? r : c) + (int64_t) r * c;
			float scale = 0.2f * sqrtf((float) (r > c ? r : c));

			/* u into X (placed after the NS work area), then orthogonalise */
			o->muon_momentum(be, X, a, g, (size_t) p[i].numel, gscale, cfg->muon_momentum);
			hw_muon_orthogonalize(be, X, r, c, work);
			o->axpby(be, pp, -lr * scale, X, 1.0f - lr * wd, (size_t) p[i].numel);
		}
		else
			o->adamw_update(be, pp, a, b, g, (size_t) p[i].numel, gscale, lr,
							cfg->adam_b1, cfg->adam_b2, cfg->adam_eps, wd, (int) t);
	}
	return HW_OK;
}
