#!/usr/bin/env bash
# bench/gpu/run.sh: the GPU checks and benchmarks on any machine with an
# NVIDIA GPU and this repository checked out:
#   1. unpacks .dev/gpu-files.tar.xz (bench/gpu/prepare.sh, built elsewhere)
#      when it is there and newer than headwater_cuda.so; else builds what is
#      missing when nvcc and the build dependencies are there (make USE_CUDA=1
#      all test/gpu/test_cuda_backend bench/bin/train_step_cuda);
#   2. gpu_checks.sh: the GPU test, the step benchmark, compute-sanitizer;
#   3. pg_e2e.sh: rt_train(device => 'cuda') and 'cpu' inside PostgreSQL, when
#      a PostgreSQL bundle is present (HW_PG_BUNDLE, default
#      .dev/pg/pg15-bundle.tar.xz; bench/gpu/build_pg_bundle.sh makes one).
#
#   bash bench/gpu/run.sh [RESULTS_DIR]
#
# RESULTS_DIR: argument, else $HW_GPU_RESULTS, else ./gpu-results.  Exits
# non-zero when a part fails; the files in RESULTS_DIR say which.
set -u
res=${1:-${HW_GPU_RESULTS:-./gpu-results}}
mkdir -p "$res" && res=$(cd "$res" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
files=.dev/gpu-files.tar.xz
if [ -f "$files" ] && { [ ! -e headwater_cuda.so ] || [ "$files" -nt headwater_cuda.so ]; }; then
	echo "unpacking $files"
	tar -xJf "$files" || exit 1
	touch headwater_cuda.so
elif command -v nvcc >/dev/null && command -v pg_config >/dev/null; then
	make -s USE_CUDA=1 all test/gpu/test_cuda_backend bench/bin/train_step_cuda || exit 1
fi
rc=0
bash "$here/gpu_checks.sh" "$res" || rc=1
grep -q 'rc=0$' "$res/gpu_test.txt" 2>/dev/null || rc=1
if [ -f "${HW_PG_BUNDLE:-$root/.dev/pg/pg15-bundle.tar.xz}" ]; then
	bash "$here/pg_e2e.sh" "$res" || rc=1
else
	echo "SKIP pg_e2e.sh: no PostgreSQL bundle (bench/gpu/build_pg_bundle.sh)"
fi
echo "results in $res (rc=$rc)"
exit $rc
