/*
 * bench/dp_step.c: data-parallel steps on the CPU backend (dp_step.h,
 * dp_threads.h), synthetic batches.
 *
 *   bench/bin/dp_step [tiny|small] [steps=N] [threads=T]
 *
 * Times, for the same global batch of 2 micro-batches of the preset's
 * batch_size x seq_len per step (best of 3 runs of N steps, default 6, after
 * one warm-up step):
 *   accum  1 rank, grad_accum 2, one backend with T OpenMP threads
 *   ranks  2 rank threads (in-process collective), T/2 threads each
 * and prints ms/step, tokens/s and whether both ended bit-identical
 * (they must).  T defaults to the online CPUs.
 */
#include "core/dp_step.h"
#include "core/dp_threads.h"
#include "synth_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DT 64

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static HwModel *
model(HwBackend *be, const char *preset)
{
	HwModelConfig c;
	HwError       err = {0};
	uint16_t     *colt, *catt;

	hw_model_config_preset(&c, preset, &err);
	c.d_text = DT;
	c.total_steps = 1000;
	hw_synth_tables(DT, 3, &colt, &catt);
	HwModel *m = hw_model_create(&c, colt, HW_SYNTH_NCOLS, catt, HW_SYNTH_NCAT, be, &err);
	free(colt);
	free(catt);
	if (!m)
	{
		fprintf(stderr, "model: %s\n", err.msg);
		exit(1);
	}
	return m;
}

int
main(int argc, char **argv)
{
	const char *preset = "tiny";
	int         steps = 6, T = (int) sysconf(_SC_NPROCESSORS_ONLN);

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "steps=", 6) == 0)
			steps = atoi(argv[i] + 6);
		else if (strncmp(argv[i], "threads=", 8) == 0)
			T = atoi(argv[i] + 8);
		else
			preset = argv[i];
	HwModelConfig pc;
	HwError       err = {0};

	hw_model_config_preset(&pc, preset, &err);
	HwSynthSpec sp = { .B = pc.batch_size, .S = pc.seq_len, .d_text = DT, .target_stype = 4, .seed = 5 };
	int         nb = (steps + 1) * 2;
	HwBatch   **b = malloc(sizeof(HwBatch *) * nb);

	for (int i = 0; i < nb; i++)
		b[i] = hw_synth_batch(&sp, (uint64_t) i);
	double tokens = 2.0 * pc.batch_size * pc.seq_len;
	double best_acc = 1e30, best_rk = 1e30;
	int    identical = 1;

	printf("preset %s, B=%d S=%d per micro-batch, 2 micro-batches per step, %d threads, %d steps\n",
		   preset, pc.batch_size, pc.seq_len, T, steps);
	for (int rep = 0; rep < 3; rep++)
	{
		/* 1 rank, grad_accum 2 */
		HwBackend *be = hw_backend_cpu_create(T, &err);
		HwModel   *m = model(be, preset);
		HwDpRank  *d = hw_dp_rank_create(m, NULL, 0, 2, &err);
		HwStepResult r;
		double     t0 = 0;

		for (int s = 0; s <= steps; s++)
		{
			if (s == 1)
				t0 = now_s();
			if (hw_dp_step(d, b + 2 * s, &r, &err) != HW_OK)
			{
				fprintf(stderr, "accum: %s\n", err.msg);
				return 1;
			}
		}
		double ta = (now_s() - t0) / steps;
		int64_t n = hw_model_numel(m);
		float  *pa = malloc(sizeof(float) * n), *pr = malloc(sizeof(float) * n);

		hw_model_get_flat(m, 0, pa);
		hw_dp_rank_free(d);
		hw_model_free(m);
		hw_backend_destroy(be);

		/* 2 rank threads */
		HwCollective *c = hw_coll_local_create(2, 600, &err);
		HwBackend    *rb[2];
		HwModel      *rm[2];
		HwDpRank     *rd[2];

		for (int k = 0; k < 2; k++)
		{
			rb[k] = hw_backend_cpu_create(T / 2 > 0 ? T / 2 : 1, &err);
			rm[k] = model(rb[k], preset);
			rd[k] = hw_dp_rank_create(rm[k], c, k, 1, &err);
		}
		HwDpThreads *th = hw_dp_threads_start(rd, 2, c, &err);
		int          rc = HW_OK;
		uint64_t     ck;

		for (int s = 0; s <= steps; s++)
		{
			if (s == 1)
				t0 = now_s();
			hw_dp_threads_post(th, b + 2 * s, false, &err);
			while (!hw_dp_threads_wait(th, 1.0, &r, &rc, &ck, &err))
				;
			if (rc != HW_OK)
			{
				fprintf(stderr, "ranks: %s\n", err.msg);
				return 1;
			}
		}
		double tr = (now_s() - t0) / steps;

		hw_dp_threads_stop(th, NULL);
		hw_model_get_flat(rm[1], 0, pr);
		identical &= memcmp(pa, pr, sizeof(float) * n) == 0;
		for (int k = 0; k < 2; k++)
		{
			hw_dp_rank_free(rd[k]);
			hw_model_free(rm[k]);
			hw_backend_destroy(rb[k]);
		}
		hw_coll_destroy(c);
		free(pa);
		free(pr);
		if (ta < best_acc)
			best_acc = ta;
		if (tr < best_rk)
			best_rk = tr;
	}
	printf("accum  1 rank x 2 micro-batches, %2d threads : %8.1f ms/step  %9.0f tokens/s\n", T, best_acc * 1e3,
		   tokens / best_acc);
	printf("ranks  2 ranks x 1 micro-batch, %2d thread(s) each: %8.1f ms/step  %9.0f tokens/s\n",
		   T / 2 > 0 ? T / 2 : 1, best_rk * 1e3, tokens / best_rk);
	printf("final parameters bit-identical: %s\n", identical ? "yes" : "NO");
	for (int i = 0; i < nb; i++)
		hw_batch_free(b[i]);
	free(b);
	return identical ? 0 : 1;
}
