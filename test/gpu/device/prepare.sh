#!/usr/bin/env bash
# test/gpu/device/prepare.sh: builds, on this (Debian 12, GPU-less) machine,
# what a bare GPU machine needs to run gpu_checks.sh and pg_e2e.sh: the
# extension and the CUDA library, the GPU test and benchmark programs,
# .dev/lib (OpenBLAS and its runtime, which such a machine lacks) and
# .dev/pg/pg15-bundle.tar.xz (a relocatable PostgreSQL 15; needs
# icu-devtools for icupkg).  .dev is git-ignored (.git/info/exclude).
# Then carry .dev headwater.so headwater_cuda.so sql/headwater--0.1.0.sql
# test/gpu/test_cuda_backend bench/bin/train_step_cuda (~61 MiB) and run
#   bash test/gpu/device/gpu_checks.sh; OUT=$OUT bash test/gpu/device/pg_e2e.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
make -s USE_CUDA=1 all test/gpu/test_cuda_backend bench/bin/train_step_cuda
mkdir -p .dev/lib
for l in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libgomp.so.1; do
	cp -L "/lib/x86_64-linux-gnu/$l" .dev/lib/
done
[ -f .dev/pg/pg15-bundle.tar.xz ] || bash test/gpu/device/build_pg_bundle.sh
du -shc .dev headwater.so headwater_cuda.so sql/headwater--0.1.0.sql test/gpu/test_cuda_backend bench/bin/train_step_cuda | tail -1
