#!/bin/bash
# test/gpu/device/gpu_checks.sh: the CUDA backend's checks on a GPU machine
# that has no build tools of ours: the GPU test (full), the step benchmark
# (base preset in four GEMM modes, tiny and small), and the quick GPU test
# under compute-sanitizer memcheck.  Needs what prepare.sh builds (carry
# .dev, headwater_cuda.so, test/gpu/test_cuda_backend,
# bench/bin/train_step_cuda); writes gpu_log, gpu_test, gpu_bench and
# gpu_sanitizer .txt into $OUT.  Worst case ~7.5 minutes (each part has a
# timeout); ~1.5 minutes on an H100.
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMP_NUM_THREADS=16
L=$OUT/gpu_log.txt
step() { echo "=== $* ($(date +%T))" | tee -a $L; }
step env
{ nvidia-smi; nvcc --version | tail -2; uname -r; ls /usr/local/cuda/lib64 | grep -E 'nccl|cublas.so|cudart.so'; } >>$L 2>&1
for lib in libnccl.so.2 libcublas.so.13 libcublasLt.so.13 libcudart.so.13; do
  if ! ldd headwater_cuda.so | grep -q "$lib => /"; then
    f=$(find / -xdev -name "$lib" -not -path '/proc/*' 2>/dev/null | head -1)
    [ -n "$f" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$f") && echo "found $f" >>$L
  fi
done
ldd test/gpu/test_cuda_backend | grep -E "not found|nccl|cublas|openblas" >>$L 2>&1
step gpu-test full
timeout 150 stdbuf -oL -eL test/gpu/test_cuda_backend >$OUT/gpu_test.txt 2>&1; echo "rc=$?" >>$OUT/gpu_test.txt
tail -3 $OUT/gpu_test.txt >>$L
step bench base bf16 with attention and CPU
timeout 80 stdbuf -oL bench/bin/train_step_cuda --attention --cpu-steps 2 >$OUT/gpu_bench.txt 2>&1; echo "rc=$?" >>$OUT/gpu_bench.txt
for g in bf16x tf32 fp32; do
  step bench base $g
  timeout 25 stdbuf -oL bench/bin/train_step_cuda --gemm $g --cpu-steps 0 >>$OUT/gpu_bench.txt 2>&1; echo "rc=$?" >>$OUT/gpu_bench.txt
done
step bench tiny and small
for p in tiny small; do timeout 25 stdbuf -oL bench/bin/train_step_cuda --preset $p --cpu-steps 1 >>$OUT/gpu_bench.txt 2>&1; echo "rc=$?" >>$OUT/gpu_bench.txt; done
step compute-sanitizer memcheck quick test
HW_GPU_TEST_QUICK=1 timeout 90 "$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)" --tool memcheck --print-limit 20 stdbuf -oL test/gpu/test_cuda_backend >$OUT/gpu_sanitizer.txt 2>&1; echo "rc=$?" >>$OUT/gpu_sanitizer.txt
tail -5 $OUT/gpu_sanitizer.txt >>$L
step done
