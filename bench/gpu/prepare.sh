#!/usr/bin/env bash
# bench/gpu/prepare.sh: for a GPU machine that cannot build (no compiler, no
# OpenBLAS, no PostgreSQL): builds, on a Debian 12 machine with nvcc (a GPU is
# not needed), everything bench/gpu/run.sh needs there, in two files
# (.dev is git-ignored):
#   .dev/gpu-files.tar.xz      the extension and the CUDA library, the GPU test
#                              and benchmark programs, .dev/lib (OpenBLAS and
#                              its runtime); ~8 MiB
#   .dev/pg/pg15-bundle.tar.xz a relocatable PostgreSQL 15 (build_pg_bundle.sh;
#                              needs icu-devtools for icupkg); ~13 MiB
# Copy both into the GPU machine's checkout of the same commit, at the same
# paths, and run there: bash bench/gpu/run.sh [RESULTS_DIR] (it unpacks the
# first).
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s USE_CUDA=1 all test/gpu/test_cuda_backend bench/bin/train_step_cuda
mkdir -p .dev/lib
for l in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libgomp.so.1; do
	cp -L "/lib/x86_64-linux-gnu/$l" .dev/lib/
done
[ -f .dev/pg/pg15-bundle.tar.xz ] || bash bench/gpu/build_pg_bundle.sh
tar -cf - headwater.so headwater_cuda.so sql/headwater--0.1.0.sql test/gpu/test_cuda_backend \
	bench/bin/train_step_cuda .dev/lib | xz -6 -T0 > .dev/gpu-files.tar.xz.tmp
mv .dev/gpu-files.tar.xz.tmp .dev/gpu-files.tar.xz
ls -l .dev/gpu-files.tar.xz .dev/pg/pg15-bundle.tar.xz
