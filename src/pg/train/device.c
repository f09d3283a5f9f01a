/*
 * device.c: choosing the compute backend for a training worker.
 *
 * The CPU backend is linked in.  The CUDA backend lives in a separate
 * library, headwater_cuda.so, built only where nvcc exists; it is dlopen'ed
 * here on demand, by a training worker or by a backend whose bulk
 * prediction may go to a GPU (headwater.serving_device) -- never in
 * _PG_init or the postmaster, so a server without the CUDA libraries never
 * loads it.
 *   device 'cpu'   the CPU backend
 *   device 'cuda'  the CUDA backend; an error with a hint if it was not built
 *                  or no GPU is visible
 *   device 'auto'  CUDA when built and a GPU is visible, else the CPU (the
 *                  job's status line says which)
 */
#include "postgres.h"

#include <dlfcn.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "core/backend.h"
#include "pg/base/hw_pg.h"
#include "pg/train/hw_train.h"
#include "pg/train/hw_device.h"

typedef int (*cuda_count_fn)(void);
typedef int (*cuda_create_fn)(int device, HwBackend **out, HwError *err);
typedef int (*hw_cuda_collective_create_fn)(int nranks, HwBackend **bes, double timeout_s,
											HwCollective **out, HwError *err);

static void *cuda_lib;
static const char *cuda_unavailable_reason;

/* Loads headwater_cuda.so once; returns NULL (and sets the reason) when absent. */
static void *
cuda_library(void)
{
	char path[MAXPGPATH];

	if (cuda_lib != NULL || cuda_unavailable_reason != NULL)
		return cuda_lib;
	snprintf(path, sizeof(path), "%s/headwater_cuda.so", pkglib_path);
	cuda_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (cuda_lib == NULL)
	{
		char *reason = psprintf("the CUDA backend is not installed (%s)", dlerror());

		/* kept for the process's later calls (a bulk prediction's context goes) */
		cuda_unavailable_reason = MemoryContextStrdup(TopMemoryContext, reason);
		pfree(reason);
	}
	return cuda_lib;
}

int
hw_pg_cuda_device_count(const char **why_not)
{
	void *lib = cuda_library();
	cuda_count_fn count;
	int n;

	if (lib == NULL)
	{
		*why_not = cuda_unavailable_reason;
		return 0;
	}
	count = (cuda_count_fn) dlsym(lib, "hw_cuda_device_count");
	n = count ? count() : 0;
	if (n == 0)
		*why_not = "no CUDA device is visible to the server";
	return n;
}

HwBackend *
hw_pg_cuda_backend_try(int device, HwError *err)
{
	const char *why_not = NULL;
	cuda_create_fn create;
	HwBackend  *be = NULL;

	if (hw_pg_cuda_device_count(&why_not) <= device)
	{
		hw_error_set(err, HW_ERR_INVALID, "%s", why_not ? why_not : "the CUDA device is not visible to the server");
		return NULL;
	}
	create = (cuda_create_fn) dlsym(cuda_lib, "hw_cuda_backend_create");
	if (create == NULL)
	{
		hw_error_set(err, HW_ERR_INVALID, "headwater_cuda.so has no hw_cuda_backend_create (incomplete build)");
		return NULL;
	}
	if (create(device, &be, err) != HW_OK)
		return NULL;
	return be;
}

HwBackend *
hw_pg_backend_create(const char *device, int threads, HwJobShared *job)
{
	return hw_pg_backend_create_rank(device, threads, 0, job);
}

HwBackend *
hw_pg_backend_create_rank(const char *device, int threads, int rank, HwJobShared *job)
{
	HwError     err = {0};
	HwBackend  *be = NULL;
	const char *why_not = NULL;
	int         ngpu;

	if (strcmp(device, "cpu") != 0 && (ngpu = hw_pg_cuda_device_count(&why_not)) > 0)
	{
		cuda_create_fn create = (cuda_create_fn) dlsym(cuda_lib, "hw_cuda_backend_create");

		if (rank >= ngpu)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rank %d needs GPU %d, but %d GPU(s) are visible to the server", rank, rank, ngpu),
					 errhint("Ask for at most %d devices, or devices => \"all\".", ngpu)));
		if (create == NULL)
			why_not = "headwater_cuda.so has no hw_cuda_backend_create (incomplete build)";
		else if (create(rank, &be, &err) != HW_OK)
			hw_pg_raise_core_error(&err, "starting the CUDA backend");
		else
			return be;
	}
	if (strcmp(device, "cuda") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("device 'cuda' is not available: %s", why_not ? why_not : "unknown reason"),
				 errhint("Build with nvcc present (make USE_CUDA=1 && make install) on a machine with an NVIDIA GPU, "
						 "or use device => 'cpu' (or 'auto').")));
	if (strcmp(device, "auto") == 0 && job != NULL)
		ereport(LOG, (errmsg("headwater: device 'auto' uses the CPU: %s",
							 why_not ? why_not : "CUDA not requested")));
	be = hw_backend_cpu_create(threads, &err);
	if (be == NULL)
		hw_pg_raise_core_error(&err, "starting the CPU backend");
	return be;
}

const char *
hw_pg_backend_name(HwBackend *be)
{
	return be->ops->name;
}

HwCollective *
hw_pg_collective_create(HwBackend **bes, int nranks, double timeout_s)
{
	HwError       err = {0};
	HwCollective *c = NULL;

	if (strcmp(bes[0]->ops->name, "cpu") == 0)
		c = hw_coll_local_create(nranks, timeout_s, &err);
	else
	{
		hw_cuda_collective_create_fn create = cuda_lib == NULL ? NULL :
			(hw_cuda_collective_create_fn) dlsym(cuda_lib, "hw_cuda_collective_create");

		if (create == NULL)
			hw_error_set(&err, HW_ERR_INVALID, "headwater_cuda.so has no hw_cuda_collective_create (rebuild it)");
		else
			(void) create(nranks, bes, timeout_s, &c, &err);
	}
	if (c == NULL)
		hw_pg_raise_core_error(&err, "starting the collective of the ranks");
	return c;
}
