/*
 * bench/sgemm_peak.h: this machine's measured limit for the benchmarks that
 * report a share of it (train_step.c, predict_forward.c): the best of a few
 * 2048^3 OpenBLAS sgemm calls, taken in the same run as the figures it is
 * compared with.  Header-only: each bench is one program built from one .c.
 */
#ifndef HW_BENCH_SGEMM_PEAK_H
#define HW_BENCH_SGEMM_PEAK_H

#include <cblas.h>
#include <stdlib.h>

/* GFLOP/s of an n = 2048 sgemm on `threads` OpenBLAS threads, best of
 * reps - 1 timed calls (the first warms up), timed by now_ms (wall clock,
 * or a CPU-time clock).  Leaves OpenBLAS on one thread.  0 when out of
 * memory. */
static inline double
bench_sgemm_gflops(int threads, int reps, double (*now_ms)(void))
{
	const int n = 2048;
	float  *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n), *c = malloc(sizeof(float) * n * n);
	double  best = 0;

	if (a && b && c)
	{
		for (int i = 0; i < n * n; i++)
		{
			a[i] = (float) (i % 7) * 0.1f;
			b[i] = (float) (i % 5) * 0.1f;
		}
		openblas_set_num_threads(threads);
		for (int r = 0; r < reps; r++)
		{
			double t0 = now_ms(), gflops;

			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
			gflops = 2.0 * n * n * (double) n / ((now_ms() - t0) * 1e6);
			if (r > 0 && gflops > best)
				best = gflops;
		}
		openblas_set_num_threads(1);
	}
	free(a);
	free(b);
	free(c);
	return best;
}

#endif
