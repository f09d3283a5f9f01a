# scripts/lib.sh: shared shell helpers for the demo and the test command.
# Sourced, not executed.  Everything here is idempotent.

HW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HW_PG_BINDIR=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)

hw_log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# The Debian packages the build, the demo and the tests need.  Presence of a
# file is no proof: postgresql-client-15 ships pgxs.mk and libblas-dev (the
# reference BLAS) ships a cblas.h, so decide by the package database.
HW_REQUIRED_PACKAGES=(postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap libopenblas-dev)

hw_missing_packages() {
	local p status
	for p in "${HW_REQUIRED_PACKAGES[@]}"; do
		status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
		[ "$status" = "install ok installed" ] || printf '%s\n' "$p"
	done
}

# Install what a fresh Debian 12 machine lacks, when we can (root or CI), then
# check that every package and the exact files the build uses are really there
# (fails loudly otherwise: a green run must not hide a missing install step).
hw_install_deps() {
	local need
	need=($(hw_missing_packages))
	if [ ${#need[@]} -ne 0 ]; then
		if [ "$(id -u)" -ne 0 ]; then
			hw_log "missing packages: ${need[*]} (not root: install them with sudo apt-get install ${need[*]})"
			return 1
		fi
		hw_log "installing ${need[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq || { hw_log "apt-get update failed"; return 1; }
		apt-get install -y -qq "${need[@]}" >/dev/null || { hw_log "apt-get install ${need[*]} failed"; return 1; }
	fi
	need=($(hw_missing_packages))
	if [ ${#need[@]} -ne 0 ]; then
		hw_log "FATAL: packages still not installed: ${need[*]}"
		return 1
	fi
	local f
	for f in "$(pg_config --includedir-server)/postgres.h" "$(pg_config --pgxs)" \
	         /usr/share/postgresql/15/extension/pgtap.control "$(hw_openblas_include)/cblas.h"; do
		[ -e "$f" ] || { hw_log "FATAL: $f is missing although its package is installed"; return 1; }
	done
	command -v pg_prove >/dev/null 2>&1 || { hw_log "FATAL: pg_prove not found (postgresql-15-pgtap)"; return 1; }
	ls /usr/lib/*/libopenblas.so* /usr/lib/*/openblas*/libopenblas.so* >/dev/null 2>&1 \
		|| { hw_log "FATAL: libopenblas.so not found (libopenblas-dev)"; return 1; }
}

# OpenBLAS's own header directory (never the reference BLAS's cblas.h).
hw_openblas_include() {
	local d
	for d in /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/*/openblas-pthread \
	         /usr/include/*/openblas-openmp /usr/include/openblas; do
		[ -e "$d/cblas.h" ] && { echo "$d"; return; }
	done
	echo /usr/include/openblas-not-found
}

# Run a command as the cluster owner (postgres refuses to run as root).
hw_as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "${HW_PG_OWNER:-postgres}" -- "$@"
	else
		"$@"
	fi
}

# hw_cluster_start DIR PORT: create (if needed) and start a cluster in DIR,
# listening only on a unix socket in DIR; exports PGHOST/PGPORT/PGUSER.
hw_cluster_start() {
	local dir=$1 port=$2
	mkdir -p "$dir"
	if [ "$(id -u)" -eq 0 ]; then
		id "${HW_PG_OWNER:-postgres}" >/dev/null 2>&1 \
			|| useradd --system --create-home "${HW_PG_OWNER:-postgres}"
		chown "${HW_PG_OWNER:-postgres}" "$dir"
		chmod 755 "$dir"
	fi
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		hw_as_owner "$HW_PG_BINDIR/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 >/dev/null
		cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
fsync = off
max_worker_processes = 16
shared_buffers = 256MB
log_min_messages = warning
CONF
	fi
	# fds 3-9 closed: the server must not inherit a caller's open files (a
	# flock(1) lock held by the caller would be held for the server's life)
	hw_as_owner "$HW_PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
		3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
	export PGHOST=$dir PGPORT=$port PGUSER=postgres
}

hw_cluster_stop() {
	local dir=$1
	[ -f "$dir/data/postmaster.pid" ] || return 0
	hw_as_owner "$HW_PG_BINDIR/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

hw_build_install() {
	hw_log "building"
	make -C "$HW_ROOT" -s -j"$(nproc)" >/dev/null
	hw_log "installing into $(pg_config --pkglibdir)"
	make -C "$HW_ROOT" -s install >/dev/null
}

# hw_bench_cluster PORT [private]: the server a benchmark runs against.  With
# PGHOST set, that server (nothing is built or started).  Otherwise build and
# install this tree under the shared test lock (do not call this while
# holding /tmp/hw_test.lock yourself), start a throwaway cluster in a new
# HW_BENCH_DIR=/tmp/headwater_bench.*, and stop and delete it on exit
# (HW_BENCH_ON_EXIT, when set, runs first, e.g. to keep the server log).
# "private": serve a private copy of this build's library from
# $HW_BENCH_DIR/lib (HW_BENCH_PRIVATE_LIB), because another engineer's
# `make install` on this shared machine rewrites $libdir/headwater.so in
# place, which kills a process that has it mapped and would put a
# different build under a long run.  Background workers find it through
# dynamic_library_path; a database's SQL functions are pointed at it by
# hw_bench_private_lib DB after CREATE EXTENSION.
hw_bench_cluster() {
	local port=$1 mode=${2:-}
	[ -z "${PGHOST:-}" ] || return 0
	HW_BENCH_DIR=$(mktemp -d /tmp/headwater_bench.XXXXXX)
	# the hook in a subshell: an error in it must not skip the stop
	trap '(eval "${HW_BENCH_ON_EXIT:-}") || true; hw_cluster_stop "$HW_BENCH_DIR"; rm -rf "$HW_BENCH_DIR"' EXIT
	flock /tmp/hw_test.lock bash -c "source '$HW_ROOT/scripts/lib.sh'; hw_build_install"
	if [ "$mode" = private ]; then
		HW_BENCH_PRIVATE_LIB=$HW_BENCH_DIR/lib
		mkdir -p "$HW_BENCH_PRIVATE_LIB"
		cp "$HW_ROOT/headwater.so" "$HW_BENCH_PRIVATE_LIB/headwater.so"
		chmod 755 "$HW_BENCH_PRIVATE_LIB" "$HW_BENCH_PRIVATE_LIB/headwater.so"
	fi
	hw_cluster_start "$HW_BENCH_DIR" "$port"
	if [ -n "${HW_BENCH_PRIVATE_LIB:-}" ]; then
		psql -X -q -d postgres -o /dev/null -c "ALTER SYSTEM SET dynamic_library_path = '$HW_BENCH_PRIVATE_LIB:\$libdir'" \
			-c "SELECT pg_reload_conf()"
		sleep 1
	fi
}

# hw_bench_private_lib DB: after CREATE EXTENSION in DB, load its functions
# from the private library copy of hw_bench_cluster ... private (no-op
# without one).
hw_bench_private_lib() {
	[ -n "${HW_BENCH_PRIVATE_LIB:-}" ] || return 0
	psql -X -q -d "$1" -v ON_ERROR_STOP=1 -o /dev/null \
		-c "UPDATE pg_proc SET probin = 'headwater' WHERE probin = '\$libdir/headwater'"
}

# hw_bench_shop DB SCALE: a fresh database DB with the extension (on the
# private library when there is one), the demo shop at SCALE customers in
# schema shop, model shop and the cell task order_status (orders.status),
# untrained: the serving benchmarks' common set-up.
hw_bench_shop() {
	local db=$1 scale=$2
	dropdb --if-exists "$db" >/dev/null 2>&1
	createdb "$db"
	psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 -o /dev/null -c "SET client_min_messages = warning" \
		-c "CREATE EXTENSION headwater"
	hw_bench_private_lib "$db"
	psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 -o /dev/null -c "SET client_min_messages = warning" \
		-c "SELECT rt_demo_shop('shop', $scale)" -c "SELECT rt_create_model('shop', 'shop')" \
		-c "SELECT rt_create_task('shop', 'order_status', anchor_table => 'orders', target_column => 'status')"
}
