/*
 * gpu_test_util.c: the helpers of the CUDA backend tests (gpu_test.h).
 */
#include "gpu_test.h"

HwBackend *cpu, *gpu;
int n_pass, n_fail;

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
double
urand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (rng_state >> 11) * (1.0 / 9007199254740992.0);
}
float nrand(void) { return (float) (sqrt(-2 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand())); }

float *
randv(size_t n, float scale)
{
	float *v = malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		v[i] = nrand() * scale;
	return v;
}

Dual
dual(const void *host, size_t bytes)
{
	Dual d = { cpu->ops->alloc(cpu, bytes), gpu->ops->alloc(gpu, bytes), bytes };
	if (host)
	{
		cpu->ops->memcpy_h2d(cpu, d.c, host, bytes);
		gpu->ops->memcpy_h2d(gpu, d.g, host, bytes);
	}
	else
	{
		cpu->ops->memset(cpu, d.c, 0, bytes);
		gpu->ops->memset(gpu, d.g, 0, bytes);
	}
	return d;
}
void
dual_free(Dual *d)
{
	cpu->ops->free(cpu, d->c);
	gpu->ops->free(gpu, d->g);
	memset(d, 0, sizeof(*d));
}

int
gpu_ok(const char *what)
{
	HwError err = {0};
	if (hw_backend_cuda_last_error(gpu, &err) != HW_OK)
	{
		printf("  FAIL %s: CUDA backend error: %s\n", what, err.msg);
		return 0;
	}
	return 1;
}

/* Compares n floats of d (cpu reference vs gpu); prints the worst entry. */
int
cmp(const char *what, Dual d, size_t n, double atol, double rtol)
{
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	double worst = 0;
	size_t wi = 0, nbad = 0;
	int ok;

	cpu->ops->memcpy_d2h(cpu, a, d.c, n * sizeof(float));
	gpu->ops->memcpy_d2h(gpu, b, d.g, n * sizeof(float));
	ok = gpu_ok(what);
	for (size_t i = 0; ok && i < n; i++)
	{
		double e = fabs((double) a[i] - b[i]), lim = atol + rtol * fabs(a[i]);
		if (!(e <= lim))          /* NaN fails */
		{
			nbad++;
			if (!(e / lim <= worst)) { worst = e / lim; wi = i; }
		}
	}
	if (ok && nbad == 0)
		printf("  ok   %-44s n=%zu\n", what, n);
	else if (ok)
	{
		printf("  FAIL %-44s %zu of %zu outside tolerance; worst [%zu] cpu %.9g gpu %.9g\n",
			   what, nbad, n, wi, a[wi], b[wi]);
		ok = 0;
	}
	free(a);
	free(b);
	return ok;
}

/* Like cmp with a per-element bound lim[i] (host array). */
int
cmp_bound(const char *what, Dual d, size_t n, const float *lim)
{
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	size_t wi = 0, nbad = 0;
	double worst = 0;
	int ok;

	cpu->ops->memcpy_d2h(cpu, a, d.c, n * sizeof(float));
	gpu->ops->memcpy_d2h(gpu, b, d.g, n * sizeof(float));
	ok = gpu_ok(what);
	for (size_t i = 0; ok && i < n; i++)
	{
		double e = fabs((double) a[i] - b[i]);
		if (!(e <= lim[i]))
		{
			nbad++;
			if (!(e / lim[i] <= worst)) { worst = e / lim[i]; wi = i; }
		}
	}
	if (ok && nbad == 0)
		printf("  ok   %-44s n=%zu\n", what, n);
	else if (ok)
	{
		printf("  FAIL %-44s %zu of %zu outside the bound; worst [%zu] cpu %.9g gpu %.9g bound %.3g\n",
			   what, nbad, n, wi, a[wi], b[wi], lim[wi]);
		ok = 0;
	}
	free(a);
	free(b);
	return ok;
}


HwModel *
make_model(HwBackend *be, const char *preset, int B, int S, int stype, uint16_t **colt, uint16_t **catt)
{
	HwError err = {0};
	HwModelConfig c;
	hw_model_config_preset(&c, preset, &err);
	c.d_text = 32;
	c.batch_size = B;
	c.seq_len = S;
	hw_synth_tables(c.d_text, 3, colt, catt);
	HwModel *m = hw_model_create(&c, *colt, HW_SYNTH_NCOLS, *catt, HW_SYNTH_NCAT, be, &err);
	if (!m)
		printf("  model create (%s): %s\n", be->ops->name, err.msg);
	return m;
}
