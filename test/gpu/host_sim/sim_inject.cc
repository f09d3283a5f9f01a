/* sim_inject.cc: the C entry of the host simulation's fault injection
 * (shim/cuda_runtime.h), linked into part 3 only.  test_cuda_backend.c
 * declares it weak: on a real GPU it is absent and those tests are left out. */
#include "cuda_runtime.h"

extern "C" void
hw_sim_inject(int kind, int after)
{
	sim_fault_kind = kind;
	sim_fault_after = after;
}
