/*
 * bench/embed_hash.c: throughput of the built-in hashing embedder
 * (strings/s, MB/s) at D_t = 256 on text shaped like the demo's cells.
 * Prints figures; never decides pass/fail.
 *
 *   make bench && bench/bin/embed_hash [n_strings]
 */
#include "core/embed_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200000;
	const int d = HW_EMBED_DEFAULT_DIM;
	static const char *const a[] = {"Sturdy", "Compact", "Classic", "Modern", "Handy", "Elegant"};
	static const char *const b[] = {"electronics", "books", "clothing", "home", "toys", "grocery"};
	static const char *const c[] = {"great for everyday use", "a popular gift", "made to last",
		"for my home office", "as a gift; arrived on time", "to replace an old one"};
	char **s = malloc(sizeof(char *) * n);
	size_t *len = malloc(sizeof(size_t) * n);
	uint16_t *out = malloc(sizeof(uint16_t) * d);
	size_t bytes = 0;
	double sink = 0;

	for (int i = 0; i < n; i++)
	{
		char buf[256];
		int m = snprintf(buf, sizeof(buf), "%s %s item by brand %d, %s (#%d)",
						 a[i % 6], b[(i / 6) % 6], i % 97, c[(i / 36) % 6], i);

		s[i] = strdup(buf);
		len[i] = (size_t) m;
		bytes += len[i];
	}
	/* warm-up, then the timed pass */
	for (int i = 0; i < n && i < 1000; i++)
		hw_embed_hash_f16(s[i], len[i], d, out);
	double t0 = now_s();

	for (int i = 0; i < n; i++)
	{
		hw_embed_hash_f16(s[i], len[i], d, out);
		sink += out[i % d];
	}
	double dt = now_s() - t0;

	printf("embed_hash: %d strings, mean %.1f bytes, D_t=%d, one thread\n", n, (double) bytes / n, d);
	printf("embed_hash: %.3f s, %.0f strings/s, %.1f MB/s (checksum %.0f)\n",
		   dt, n / dt, bytes / dt / 1e6, sink);
	for (int i = 0; i < n; i++)
		free(s[i]);
	free(s);
	free(len);
	free(out);
	return 0;
}
