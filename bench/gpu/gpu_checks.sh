#!/usr/bin/env bash
# bench/gpu/gpu_checks.sh: the CUDA backend's checks and step benchmark on a
# GPU machine: the GPU test (full), the training-step benchmark (base preset
# in four GEMM modes with the CPU backend's step beside it, tiny and small),
# and the quick GPU test under compute-sanitizer memcheck.
#
#   bash bench/gpu/gpu_checks.sh [RESULTS_DIR]
#
# RESULTS_DIR: argument, else $HW_GPU_RESULTS, else ./gpu-results.  Writes
# gpu_log.txt, gpu_test.txt, gpu_bench.txt and gpu_sanitizer.txt there.
# Needs the repository built with CUDA (`make USE_CUDA=1 all
# test/gpu/test_cuda_backend bench/bin/train_step_cuda`, which bench/gpu/run.sh
# does when nvcc is found), or the files bench/gpu/prepare.sh builds on another
# machine, copied into this checkout.  Each part has a timeout: at most ~7.5
# minutes; ~1.5 minutes on an H100.
set -u
res=${1:-${HW_GPU_RESULTS:-./gpu-results}}
mkdir -p "$res" && res=$(cd "$res" && pwd)
cd "$(dirname "$0")/../.."
# OpenBLAS and its runtime from prepare.sh, for a machine without them
[ -d .dev/lib ] && export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
L=$res/gpu_log.txt
: > "$L"
step() { echo "=== $* ($(date +%T))" | tee -a "$L"; }
for f in headwater_cuda.so test/gpu/test_cuda_backend bench/bin/train_step_cuda; do
	[ -e "$f" ] || { echo "missing $f: build with CUDA first (see bench/gpu/README.md)" | tee -a "$L"; exit 1; }
done
step env
{ nvidia-smi; nvcc --version 2>/dev/null | tail -2; uname -r; ls /usr/local/cuda/lib64 2>/dev/null | grep -E 'nccl|cublas.so|cudart.so'; } >>"$L" 2>&1
# CUDA libraries installed outside the loader's path (pip wheels, /opt): add their directory
for lib in libnccl.so.2 libcublas.so.13 libcublasLt.so.13 libcudart.so.13; do
	if ! ldd headwater_cuda.so | grep -q "$lib => /"; then
		f=$(find / -xdev -name "$lib" -not -path '/proc/*' 2>/dev/null | head -1)
		[ -n "$f" ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "$f") && echo "found $f" >>"$L"
	fi
done
ldd test/gpu/test_cuda_backend | grep -E "not found|nccl|cublas|openblas" >>"$L" 2>&1
step gpu-test full
timeout 150 stdbuf -oL -eL test/gpu/test_cuda_backend >"$res/gpu_test.txt" 2>&1; echo "rc=$?" >>"$res/gpu_test.txt"
tail -3 "$res/gpu_test.txt" >>"$L"
step bench base bf16 with attention and CPU
timeout 80 stdbuf -oL bench/bin/train_step_cuda --attention --cpu-steps 2 >"$res/gpu_bench.txt" 2>&1; echo "rc=$?" >>"$res/gpu_bench.txt"
for g in bf16x tf32 fp32; do
	step bench base $g
	timeout 25 stdbuf -oL bench/bin/train_step_cuda --gemm $g --cpu-steps 0 >>"$res/gpu_bench.txt" 2>&1; echo "rc=$?" >>"$res/gpu_bench.txt"
done
step bench tiny and small
for p in tiny small; do
	timeout 25 stdbuf -oL bench/bin/train_step_cuda --preset $p --cpu-steps 1 >>"$res/gpu_bench.txt" 2>&1; echo "rc=$?" >>"$res/gpu_bench.txt"
done
step compute-sanitizer memcheck quick test
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
HW_GPU_TEST_QUICK=1 timeout 90 "$san" --tool memcheck --print-limit 20 stdbuf -oL test/gpu/test_cuda_backend >"$res/gpu_sanitizer.txt" 2>&1; echo "rc=$?" >>"$res/gpu_sanitizer.txt"
tail -5 "$res/gpu_sanitizer.txt" >>"$L"
step done
echo "results in $res"
