#!/usr/bin/env bash
# test/gpu/host_sim/run.sh: runs the device code of cuda/*.cu on the HOST
# (sim.h: blocks in turn, CUDA threads as std::threads, barriers for
# __syncthreads and warp shuffles) against the CPU implementations:
#   1. cuda/attention.cu (plan, forward, backward) vs src/core/attention_reference.c's
#      dense reference (kernels extracted between HW_SIM_BEGIN/END);
#   2. cuda/util.cu, norm.cu, activations.cu, encoder.cu, loss.cu, optim.cu
#      (launches rewritten by launch2sim.py; CUB's sort replaced by a stable
#      std::sort) vs the CPU backend, src/backend/backend_cpu*.c.
#   3. the whole library: every cuda/*.cu (runtime and cuBLAS shimmed: one
#      simulated device whose memory is host memory, synchronous streams,
#      cublasGemmEx done on the host with cuBLAS's column-major contract and
#      bf16 rounding) linked into the CUDA backend tests (test/gpu/*.c), run with
#      HW_GPU_TEST_QUICK=1 (no 300-step run, no NCCL), plus the fault
#      injection tests (sim_inject.cc: a CUDA error or a C++ exception
#      injected into the runtime shim, to check how the backend reports it).
# No GPU needed.  This checks the code's logic, not the GPU: nothing about
# real streams, memory, cuBLAS's own kernels, NCCL or speed.
# Usage: run.sh [1|2|3 ...]   (default: all three)
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
sim="$root/test/gpu/host_sim"
out=$(mktemp -d /tmp/hw_host_sim.XXXXXX)
trap 'rm -rf "$out"' EXIT
CXX="g++ -std=c++20 -O2 -pthread -fopenmp -Wall -Wno-unknown-pragmas -Wno-unused-function -Wno-unused-variable"
inc=(-I"$root/src" -I"$root/test/fixtures")

# every core object and the synthetic batch fixture, for all three parts
# (the fixture's model helpers need the model, so no part links a subset)
objs=()
for c in "$root"/src/core/*.c "$root"/test/fixtures/synth_batch.c; do
	o="$out/core_$(basename "$c" .c).o"
	gcc -std=gnu11 -O2 -fopenmp "${inc[@]}" -c "$c" -o "$o"
	objs+=("$o")
done
bobjs=()
for c in "$root"/src/backend/*.c; do
	b=$(basename "$c" .c)
	gcc -std=gnu11 -O2 -fopenmp "${inc[@]}" -c "$c" -o "$out/$b.o"
	bobjs+=("$out/$b.o")
done

parts=${*:-1 2 3}
rc=0
if [[ " $parts " == *" 1 "* ]]; then
echo "== host simulation 1: cuda/attention.cu"
awk '/HW_SIM_BEGIN/{f=1;next} /HW_SIM_END/{f=0} f' "$root/cuda/attention.cu" > "$out/attention_body.inc"
$CXX "${inc[@]}" -I"$sim" -I"$out" "$sim/sim_attention.cc" "${objs[@]}" "${bobjs[@]}" -o "$out/sim_attention" \
	-lopenblas -lm
"$out/sim_attention" || rc=1
fi

if [[ " $parts " == *" 2 "* ]]; then
echo "== host simulation 2: cuda/{util,norm,activations,encoder,loss,optim}.cu"
kobjs=()
for f in util norm activations encoder loss optim; do
	python3 "$sim/launch2sim.py" "$root/cuda/$f.cu" "$out/$f.cc"
	$CXX -I"$sim/shim" -I"$sim" -I"$root/cuda" "${inc[@]}" -c "$out/$f.cc" -o "$out/k_$f.o"
	kobjs+=("$out/k_$f.o")
done
$CXX -I"$sim/shim" -I"$sim" -I"$root/cuda" "${inc[@]}" "$sim/sim_kernels.cc" "${kobjs[@]}" \
	"${bobjs[@]}" "${objs[@]}" -o "$out/sim_kernels" -lopenblas -lm
"$out/sim_kernels" || rc=1
fi

if [[ " $parts " == *" 3 "* ]]; then
echo "== host simulation 3: headwater_cuda (all of cuda/) under the CUDA backend tests (test/gpu)"
aobjs=()
for f in "$root"/cuda/*.cu; do
	b=$(basename "$f" .cu)
	python3 "$sim/launch2sim.py" "$f" "$out/all_$b.cc"
	$CXX -I"$sim/shim" -I"$sim" -I"$root/cuda" "${inc[@]}" -c "$out/all_$b.cc" -o "$out/all_$b.o"
	aobjs+=("$out/all_$b.o")
done
tobjs=()
for c in "$root"/test/gpu/*.c; do
	b=$(basename "$c" .c)
	gcc -std=gnu11 -O2 -fopenmp "${inc[@]}" -I"$root/cuda" -c "$c" -o "$out/gpu_$b.o"
	tobjs+=("$out/gpu_$b.o")
done
$CXX -I"$sim/shim" -I"$sim" -c "$sim/sim_inject.cc" -o "$out/sim_inject.o"
$CXX "${tobjs[@]}" "$out/sim_inject.o" "${aobjs[@]}" "${objs[@]}" "${bobjs[@]}" \
	-o "$out/test_cuda_backend_sim" -lopenblas -lm
HW_GPU_TEST_QUICK=1 stdbuf -oL "$out/test_cuda_backend_sim" || rc=1
fi
exit $rc
