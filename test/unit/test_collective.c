/*
 * test_collective.c: the in-process collective (collective.h): the
 * all-reduce equals a naive left fold in rank order bit for bit (values of
 * mixed magnitude, where another order would round differently), broadcast
 * and checksum comparison, and failure: a rank that never arrives times the
 * others out naming it, a rank that aborts stops the others with its
 * message, and the collective stays failed.
 */
#include "unit.h"
#include "core/collective.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NR 3
#define NE 1001
#define ITER 25

typedef struct RankArg
{
	HwCollective *c;
	int           rank;
	float        *buf;          /* [ITER][NE] inputs, replaced by results */
	int           rc;
	HwError       err;
	int           mode;         /* 0 all-reduce loop, 1 wait once, 2 abort, 3 skip */
	double        waited;
} RankArg;

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *
rank_main(void *p)
{
	RankArg *a = p;
	double   t0 = now_s();

	a->rc = HW_OK;
	switch (a->mode)
	{
		case 0:
			for (int it = 0; it < ITER && a->rc == HW_OK; it++)
				a->rc = hw_coll_allreduce_sum(a->c, a->rank, a->buf + (size_t) it * NE, NE, &a->err);
			break;
		case 1:
			a->rc = hw_coll_allreduce_sum(a->c, a->rank, a->buf, NE, &a->err);
			break;
		case 2:
			{
				struct timespec ts = {0, 50 * 1000 * 1000};

				nanosleep(&ts, NULL);
				hw_coll_abort(a->c, a->rank, "out of memory in the backward pass");
				a->rc = HW_ERR_NOMEM;
				break;
			}
		case 3:
			break;
	}
	a->waited = now_s() - t0;
	return NULL;
}

static float
mixed(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	double u = (double) (*s >> 11) * 0x1.0p-53;
	int    e = (int) ((*s >> 3) % 40) - 20;      /* magnitudes 2^-20 .. 2^20 */

	return (float) ((u - 0.5) * ldexp(1.0, e));
}

static void
run_ranks(RankArg *a, int n)
{
	pthread_t th[8];

	for (int r = 0; r < n; r++)
		pthread_create(&th[r], NULL, rank_main, &a[r]);
	for (int r = 0; r < n; r++)
		pthread_join(th[r], NULL);
}

UNIT_TEST(collective_allreduce_is_rank_order_fold)
{
	HwError       err = {0};
	HwCollective *c = hw_coll_local_create(NR, 30.0, &err);
	RankArg       a[NR];
	float        *in[NR];
	uint64_t      s = 12345;
	int           order_matters = 0;

	CHECK_MSG(c != NULL, "%s", err.msg);
	CHECK(strcmp(c->ops->name, "local") == 0);
	for (int r = 0; r < NR; r++)
	{
		in[r] = malloc(sizeof(float) * NE * ITER);
		for (int i = 0; i < NE * ITER; i++)
			in[r][i] = mixed(&s);
		memset(&a[r], 0, sizeof(a[r]));
		a[r].c = c;
		a[r].rank = r;
		a[r].buf = malloc(sizeof(float) * NE * ITER);
		memcpy(a[r].buf, in[r], sizeof(float) * NE * ITER);
	}
	run_ranks(a, NR);
	for (int r = 0; r < NR; r++)
		CHECK_MSG(a[r].rc == HW_OK, "rank %d: %s", r, a[r].err.msg);
	/* independent reference: the naive left fold, element by element */
	for (int i = 0; i < NE * ITER; i++)
	{
		volatile float ref = in[0][i];

		for (int r = 1; r < NR; r++)
			ref = ref + in[r][i];
		volatile float rev = in[2][i] + in[1][i];

		rev = rev + in[0][i];
		order_matters |= memcmp((const void *) &rev, (const void *) &ref, 4) != 0;
		for (int r = 0; r < NR; r++)
			CHECK_MSG(memcmp(&a[r].buf[i], (const void *) &ref, 4) == 0,
					  "element %d of rank %d: %.9g, fold %.9g", i, r, a[r].buf[i], (double) ref);
	}
	/* the data are such that the order of the sum shows in the bits */
	CHECK(order_matters);
	CHECK_EQ_INT(hw_coll_error(c, &err), HW_OK);
	for (int r = 0; r < NR; r++)
	{
		free(in[r]);
		free(a[r].buf);
	}
	hw_coll_destroy(c);
}

typedef struct BcArg
{
	HwCollective *c;
	int           rank, rc, equal;
	float         buf[5];
	HwError       err;
} BcArg;

static void *
bc_main(void *p)
{
	BcArg *a = p;

	a->rc = hw_coll_broadcast(a->c, a->rank, a->buf, 5, 1, &a->err);
	if (a->rc == HW_OK)
		a->rc = hw_coll_all_equal_u64(a->c, a->rank, 77, &a->equal, &a->err);
	if (a->rc == HW_OK && a->equal)
		a->rc = hw_coll_all_equal_u64(a->c, a->rank, a->rank == 2 ? 78 : 77, &a->equal, &a->err);
	if (a->rc == HW_OK)
		a->rc = hw_coll_barrier(a->c, a->rank, &a->err);
	return NULL;
}

UNIT_TEST(collective_broadcast_and_checksum_compare)
{
	HwError       err = {0};
	HwCollective *c = hw_coll_local_create(3, 30.0, &err);
	BcArg         a[3];
	pthread_t     th[3];

	CHECK(c != NULL);
	for (int r = 0; r < 3; r++)
	{
		memset(&a[r], 0, sizeof(a[r]));
		a[r].c = c;
		a[r].rank = r;
		for (int i = 0; i < 5; i++)
			a[r].buf[i] = (float) (10 * r + i);
		pthread_create(&th[r], NULL, bc_main, &a[r]);
	}
	for (int r = 0; r < 3; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < 3; r++)
	{
		CHECK_MSG(a[r].rc == HW_OK, "rank %d: %s", r, a[r].err.msg);
		for (int i = 0; i < 5; i++)
			CHECK(a[r].buf[i] == (float) (10 + i));
		CHECK_EQ_INT(a[r].equal, 0);        /* the second comparison: rank 2 differs */
	}
	hw_coll_destroy(c);
	/* bad arguments */
	CHECK(hw_coll_local_create(0, 1.0, &err) == NULL);
	CHECK(hw_coll_local_create(2, 0.0, &err) == NULL);
}

UNIT_TEST(collective_timeout_names_the_missing_rank)
{
	HwError       err = {0};
	HwCollective *c = hw_coll_local_create(3, 0.3, &err);
	RankArg       a[3];
	float         b0[NE], b1[NE];

	CHECK(c != NULL);
	memset(a, 0, sizeof(a));
	for (int r = 0; r < 3; r++)
	{
		a[r].c = c;
		a[r].rank = r;
		a[r].mode = r == 2 ? 3 : 1;         /* rank 2 never calls */
	}
	a[0].buf = b0;
	a[1].buf = b1;
	memset(b0, 0, sizeof(b0));
	memset(b1, 0, sizeof(b1));
	run_ranks(a, 3);
	for (int r = 0; r < 2; r++)
	{
		CHECK_EQ_INT(a[r].rc, HW_ERR_CANCELLED);
		CHECK_MSG(strstr(a[r].err.msg, "rank(s) 2") && strstr(a[r].err.msg, "timeout"), "%s", a[r].err.msg);
		CHECK_MSG(a[r].waited >= 0.25 && a[r].waited < 10.0, "waited %.3f s", a[r].waited);
	}
	/* failed for good: a later call (even of the late rank) fails at once */
	CHECK_EQ_INT(hw_coll_barrier(c, 2, &err), HW_ERR_CANCELLED);
	CHECK(strstr(err.msg, "rank(s) 2") != NULL);
	CHECK_EQ_INT(hw_coll_error(c, &err), HW_ERR_CANCELLED);
	hw_coll_destroy(c);
}

UNIT_TEST(collective_abort_stops_all_ranks_with_its_message)
{
	HwError       err = {0};
	HwCollective *c = hw_coll_local_create(3, 60.0, &err);
	RankArg       a[3];
	float         b0[NE], b2[NE];

	CHECK(c != NULL);
	memset(a, 0, sizeof(a));
	memset(b0, 0, sizeof(b0));
	memset(b2, 0, sizeof(b2));
	for (int r = 0; r < 3; r++)
	{
		a[r].c = c;
		a[r].rank = r;
		a[r].mode = r == 1 ? 2 : 1;         /* rank 1 fails and aborts */
	}
	a[0].buf = b0;
	a[2].buf = b2;
	run_ranks(a, 3);
	CHECK_EQ_INT(a[1].rc, HW_ERR_NOMEM);
	for (int r = 0; r < 3; r += 2)
	{
		CHECK_EQ_INT(a[r].rc, HW_ERR_CANCELLED);
		CHECK_MSG(strcmp(a[r].err.msg, "rank 1: out of memory in the backward pass") == 0, "%s", a[r].err.msg);
		CHECK_MSG(a[r].waited < 10.0, "rank %d waited %.3f s: the abort did not wake it", r, a[r].waited);
	}
	/* the first error stays: a second abort does not replace it */
	hw_coll_abort(c, -1, "cancelled");
	CHECK_EQ_INT(hw_coll_error(c, &err), HW_ERR_CANCELLED);
	CHECK(strcmp(err.msg, "rank 1: out of memory in the backward pass") == 0);
	hw_coll_destroy(c);
}
