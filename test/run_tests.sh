#!/usr/bin/env bash
# test/run_tests.sh: the one test command (README; .ci/run calls it).
#
# Installs missing packages (when root), builds, installs, starts a throwaway
# PostgreSQL cluster in a temp directory as a non-root user, runs
#   1. the C unit tests of src/core and src/backend   (make unit)
#   2. the pg_regress suites (sql/t_*.sql vs expected/)
#   3. the pgTAP suites (test/pgtap/*.sql, one fresh database each, pg_prove)
# stops the cluster and exits non-zero on any failure, printing the diffs.
set -uo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"

hw_install_deps || exit 1
hw_build_install || { echo "build failed"; exit 1; }

failures=()

hw_log "unit tests"
make -s unit || failures+=(unit)

hw_log "include graph (folders only include downwards, no cycles)"
python3 scripts/check_includes.py || failures+=(include-graph)

# CUDA backend tests: only where headwater_cuda.so was built (nvcc present);
# without a GPU the program prints a loud SKIP and exits 0.
if [ -f headwater_cuda.so ]; then
	hw_log "CUDA backend tests (test/gpu)"
	if make -s test/gpu/test_cuda_backend; then
		test/gpu/test_cuda_backend || failures+=(gpu)
	else
		failures+=(gpu-build)
	fi
fi

tmp=$(mktemp -d /tmp/headwater_test.XXXXXX)
port=${HW_TEST_PORT:-54329}
trap 'hw_cluster_stop "$tmp"; rm -rf "$tmp"' EXIT
hw_log "starting a throwaway cluster in $tmp (port $port)"
hw_cluster_start "$tmp" "$port" || { cat "$tmp/server.log"; exit 1; }
# tests that use ../shared/data find it here; they skip when it is absent
export HW_SHARED_DIR=${HW_SHARED_DIR:-$(cd "$HW_ROOT/../shared" 2>/dev/null && pwd)}

hw_log "pg_regress"
if ! make -s installcheck PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER="$PGUSER"; then
	failures+=(pg_regress)
	[ -f regression.diffs ] && cat regression.diffs
fi

hw_log "pgTAP"
for t in test/pgtap/*.sql; do
	[ -e "$t" ] || continue
	db="tap_$(basename "$t" .sql)"
	dropdb --if-exists "$db" >/dev/null 2>&1
	createdb "$db" && psql -q -X -d "$db" -c 'CREATE EXTENSION pgtap' >/dev/null \
		|| { failures+=("$t"); continue; }
	PGDATABASE=$db pg_prove -q --ext .sql "$t" || failures+=("$t")
done

hw_log "security (privilege escalation, injection, access control, crash inputs, bad-input sweep)"
HW_CLUSTER_DIR=$tmp bash test/security.sh || failures+=(security)

hw_log "shared model cache (damaged files rebuilt, unwritable directory)"
HW_CLUSTER_DIR=$tmp bash test/serving_shared.sh || failures+=(serving_shared)

hw_log "serving worker (concurrent sessions, batching, cancel)"
HW_CLUSTER_DIR=$tmp bash test/serving_worker.sh || failures+=(serving_worker)

hw_log "reliability (kill, crash restart, cancel, concurrency, privileges)"
HW_CLUSTER_DIR=$tmp bash test/reliability.sh || failures+=(reliability)

if [ ${#failures[@]} -ne 0 ]; then
	hw_log "FAILED: ${failures[*]}"
	echo "--- server log tail ---"; tail -n 40 "$tmp/server.log"
	exit 1
fi
hw_log "all tests passed"
