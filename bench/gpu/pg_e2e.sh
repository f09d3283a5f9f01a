#!/usr/bin/env bash
# bench/gpu/pg_e2e.sh: headwater end to end inside PostgreSQL on a GPU machine,
# `rt_train(device => 'cuda')` and then `'cpu'` on the same model, tasks,
# splits and seed, from a relocatable PostgreSQL 15 bundle (made by
# bench/gpu/build_pg_bundle.sh on Debian 12; see prepare.sh), so the machine
# needs no PostgreSQL of its own.  Run from anywhere, as root or not:
#
#   bash bench/gpu/pg_e2e.sh [RESULTS_DIR]
#
# Needs, in the checkout: headwater.so, headwater_cuda.so (may be absent: the
# cuda run then fails clearly), headwater.control, sql/headwater--0.1.0.sql,
# the bundle, and .dev/lib when the machine lacks OpenBLAS and its runtime.
# Does: unpack -> libraries (bundle fallbacks only for sonames the machine
# lacks) -> an unprivileged cluster owner -> initdb -> start (unix socket
# only) -> CREATE EXTENSION -> demo shop (rt_demo_shop) -> the demo's model
# and three tasks -> per device ('cuda', then 'cpu'): rt_train (tiny preset,
# restart: the same tasks, splits and seed) + rt_evaluate + rt_predict ->
# bulk scoring (rt_predict_into rows/s on the GPU and the CPU, the two
# compared) -> single-row rt_predict from 1 / 8 / 32 pgbench clients,
# without and with the serving worker -> bulk scoring of the base preset ->
# headwater.job / checkpoint_metric / train_log -> stop.
# Every step has a timeout; the whole script ends within ~11 minutes.
# Files in RESULTS_DIR: e2e.log (everything), summary.txt, ldd.txt, server.log.
#
# RESULTS_DIR: argument, else $HW_GPU_RESULTS, else ./gpu-results.
# Environment (all optional): HW_PG_BUNDLE (default .dev/pg/pg15-bundle.tar.xz
# in the checkout), HW_E2E_DIR (where to unpack, default /tmp/hwe2e),
# HW_E2E_PORT (54555), HW_E2E_SCALE (demo customers, 500), HW_E2E_STEPS (200),
# HW_E2E_USER (cluster owner to use/create), HW_E2E_SWITCH (force
# runuser|setpriv|su), HW_E2E_DEVICES (default "cuda cpu"), HW_E2E_BUDGET
# (seconds, 600), HW_E2E_BULK (1: the bulk-scoring part), HW_E2E_BULK_ROWS
# (its sizes, "10000 100000 1000000"), HW_E2E_CLIENTS (1: the pgbench part;
# needs pgbench in the bundle), HW_E2E_CLIENT_SECS (8), HW_E2E_BASE_ROWS
# (100000; 0 skips the base preset).
set -u -o pipefail

START=$(date +%s)
DEADLINE=$((START + ${HW_E2E_BUDGET:-600}))   # no step runs past this; then tables (<=20 s) and stop (<=25 s)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${1:-${HW_GPU_RESULTS:-./gpu-results}}
PORT=${HW_E2E_PORT:-54555}
SCALE=${HW_E2E_SCALE:-500}
STEPS=${HW_E2E_STEPS:-200}
DEVICES=${HW_E2E_DEVICES:-cuda cpu}
BUNDLE=${HW_PG_BUNDLE:-$REPO/.dev/pg/pg15-bundle.tar.xz}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
exec > >(tee -a "$OUT/e2e.log") 2>&1
TEE_PID=$!
: > "$OUT/summary.txt"

step() { echo; echo "=== $(date +%T) (+$(( $(date +%s) - START ))s) $*"; CUR=$*; T0=$(date +%s); }
result() {  # result STATUS [note]
	local line
	line=$(printf '%-5s %4ss  %s%s' "$1" $(( $(date +%s) - T0 )) "$CUR" "${2:+  ($2)}")
	echo "--- $line"; echo "$line" >> "$OUT/summary.txt"
}
# tmo WANT: seconds a step may take: WANT, capped by what is left before the deadline
tmo() { local left=$((DEADLINE - $(date +%s))); [ "$left" -lt "$1" ] && echo "$left" || echo "$1"; }
skip_if_late() { [ $((DEADLINE - $(date +%s))) -ge 5 ] && return 1; result SKIP "deadline"; return 0; }

FAILED=0
CLUSTER_UP=0
finish() {
	trap - EXIT INT TERM
	if [ "$CLUSTER_UP" = 1 ]; then
		step "stop the cluster"
		if timeout 25 "${OWN[@]}" "$BIN/pg_ctl" -D "$PGD/data" -m fast -w -t 20 stop; then result OK
		else
			local pid; pid=$(head -1 "$PGD/data/postmaster.pid" 2>/dev/null)
			[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
			result FAIL "pg_ctl stop failed; killed postmaster $pid"
		fi
	fi
	[ -n "${PGD:-}" ] && [ -f "$PGD/server.log" ] && cp "$PGD/server.log" "$OUT/server.log" && chmod 644 "$OUT/server.log"
	echo; echo "=== $(date +%T) (+$(( $(date +%s) - START ))s) summary ($OUT/summary.txt)"
	cat "$OUT/summary.txt"
	if [ "$FAILED" != 0 ] && [ -f "$OUT/server.log" ]; then
		echo "=== server log tail"; tail -n 60 "$OUT/server.log"
	fi
	echo "=== done, $(( $(date +%s) - START ))s"
	exec >&- 2>&-; wait "$TEE_PID" 2>/dev/null || sleep 1   # let tee finish e2e.log
}
trap finish EXIT
trap 'echo "interrupted"; exit 130' INT TERM

# ---------------------------------------------------------------- 0. machine
step "machine and inputs"
{
	date -u; uname -a; (. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME"); ldd --version 2>&1 | head -1
	echo "id: $(id)  nproc: $(nproc)"; free -g 2>/dev/null | head -2
	df -h /tmp /dev/shm 2>/dev/null
	timeout 20 nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv 2>&1 || echo "nvidia-smi: unavailable"
	ls -l /dev/nvidia* 2>&1 | head -5
	ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(cublas|cublasLt|cudart|nccl)\.so\.[0-9]+$' | tr '\n' ' '; echo
	(ldconfig -p 2>/dev/null | grep -E 'libnccl\.so|libcuda\.so\.1') || echo "ldconfig: no libnccl/libcuda entries"
	echo "repo: $REPO"
	ls -l "$BUNDLE" "$REPO/headwater.so" "$REPO/headwater_cuda.so" "$REPO/headwater.control" \
	      "$REPO/sql/headwater--0.1.0.sql" 2>&1
	ls -l "$REPO/.dev/lib" 2>&1
}
missing=
for f in "$BUNDLE" "$REPO/headwater.so" "$REPO/headwater.control" "$REPO/sql/headwater--0.1.0.sql"; do
	[ -e "$f" ] || missing="$missing $f"
done
if [ -n "$missing" ]; then result FAIL "missing:$missing"; FAILED=1; exit 1; fi
[ -e "$REPO/headwater_cuda.so" ] || echo "WARNING: headwater_cuda.so missing: the cuda run will fail"
result OK

# ---------------------------------------------------------------- 1. unpack
step "unpack the bundle"
W=
for d in "${HW_E2E_DIR:-/tmp/hwe2e}" /var/tmp/hwe2e /dev/shm/hwe2e; do
	# only ever delete a directory this script made (marker file)
	if [ -e "$d" ]; then
		if [ -f "$d/.hw_e2e" ]; then
			# a server an earlier run left behind (checked: its command line names this directory)
			opid=$(head -1 "$d/pg/data/postmaster.pid" 2>/dev/null)
			[ -n "$opid" ] && tr '\0' ' ' < "/proc/$opid/cmdline" 2>/dev/null | grep -q -- "$d/pg/data" \
				&& { echo "killing the server $opid left by an earlier run"; kill -9 "$opid"; sleep 1; }
			rm -rf "$d"
		else echo "$d exists and is not ours: not using it"; continue; fi
	fi
	mkdir -p "$d" && chmod 755 "$d" && touch "$d/.hw_e2e" || continue
	if ! timeout 60 tar -C "$d" -xJf "$BUNDLE"; then echo "unpack into $d failed"; rm -rf "$d"; continue; fi
	# a noexec mount (tried with a script: the libraries are not resolved yet)
	printf '#!/bin/sh\nexit 0\n' > "$d/.x.sh" && chmod 755 "$d/.x.sh"
	if "$d/.x.sh"; then W=$d; break; fi
	echo "binaries do not run from $d; trying another place"; rm -rf "$d"
done
[ -n "$W" ] || { result FAIL "no directory to unpack into"; FAILED=1; exit 1; }
P=$W/hwpg
BIN=$P/lib/postgresql/15/bin
PKGLIB=$P/lib/postgresql/15/lib
SHARE=$P/share/postgresql/15
PGD=$W/pg
head -1 "$P/MANIFEST"
# the extension as `make install` lays it out: .so in pkglibdir, control + script in sharedir/extension
install -m 755 "$REPO/headwater.so" "$PKGLIB/headwater.so"
[ -e "$REPO/headwater_cuda.so" ] && install -m 755 "$REPO/headwater_cuda.so" "$PKGLIB/headwater_cuda.so"
install -m 644 "$REPO/headwater.control" "$REPO/sql/headwater--0.1.0.sql" "$SHARE/extension/"
# a copy of .dev/lib (if any) the cluster owner can read (the repo may sit under /root)
mkdir -p "$W/devlib"
[ -d "$REPO/.dev/lib" ] && cp -L "$REPO"/.dev/lib/*.so* "$W/devlib/"
chmod -R a+rX "$W/devlib" "$P"
result OK "$W, $(du -sh "$W" | cut -f1)"

# ---------------------------------------------------------------- 2. libraries
step "shared libraries"
LDP=$W/devlib:$P/syslib
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && LDP=$LDP:$d; done
export LD_LIBRARY_PATH=$LDP${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$BIN:$PATH
objs=("$BIN"/* "$PKGLIB"/*.so)
from_fallback=
for pass in 1 2 3 4 5 6; do
	nf=$(ldd "${objs[@]}" 2>/dev/null | awk '$2 == "=>" && $3 == "not" {print $1}' | sort -u)
	[ -z "$nf" ] && break
	added=0
	for so in $nf; do
		if [ -f "$P/syslib/fallback/$so" ]; then
			cp "$P/syslib/fallback/$so" "$P/syslib/$so"; from_fallback="$from_fallback $so"; added=1
		fi
	done
	[ "$added" = 0 ] && break
done
{
	echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
	echo "taken from the bundle's fallback dir (missing on this machine):${from_fallback:- none}"
	for o in "${objs[@]}"; do echo "== $o"; ldd "$o" 2>&1; done
} > "$OUT/ldd.txt"
echo "fallback libraries used:${from_fallback:- none}"
ldd "$BIN/postgres" | grep -E 'icu|ldap|lber|ssl|xml'
ldd "$PKGLIB/headwater.so" | grep -E 'openblas|gomp|gfortran'
[ -e "$PKGLIB/headwater_cuda.so" ] && ldd "$PKGLIB/headwater_cuda.so" | grep -E 'cublas|cudart|nccl|not found'
missing=$(ldd "${objs[@]}" 2>/dev/null | awk '$3 == "not" {print $1}' | sort -u | tr '\n' ' ')
if [ -n "$missing" ]; then
	echo "NOT FOUND: $missing (see ldd.txt)"
	if ldd "$BIN/postgres" "$BIN/initdb" "$BIN/pg_ctl" "$BIN/psql" "$PKGLIB/headwater.so" | grep -q "not found"; then
		result FAIL "not found: $missing"; FAILED=1; exit 1
	fi
	result WARN "not found (CUDA backend only?): $missing"
else
	result OK "${from_fallback:+fallback:$from_fallback}"
fi

# ---------------------------------------------------------------- 3. owner
step "cluster owner and user switch"
OWNER= SWITCH=
if [ "$(id -u)" -ne 0 ]; then
	OWNER=$(id -un); SWITCH=none; how="not root: running as $OWNER"
else
	try_user() { id "$1" >/dev/null 2>&1; }
	# HW_E2E_USER: that user (made when missing); else postgres or hwpg (an earlier run's) when
	# one exists; else a new hwpg
	for u in ${HW_E2E_USER:-postgres hwpg}; do try_user "$u" && { OWNER=$u; how="existing user $u"; break; }; done
	if [ -z "$OWNER" ]; then
		u=${HW_E2E_USER:-hwpg}
		if command -v useradd >/dev/null && useradd -r -M -d "$W" -s /bin/sh "$u" 2>&1; then how="useradd $u"
		elif command -v adduser >/dev/null && { adduser --system --no-create-home --home "$W" --shell /bin/sh "$u" 2>&1 \
		         || adduser -S -D -H -h "$W" -s /bin/sh "$u" 2>&1; }; then how="adduser $u"
		elif try_user nobody; then u=nobody; how="no useradd/adduser: using nobody"
		elif [ -w /etc/passwd ]; then
			echo "hwpg:x:7654:7654:hw e2e:$W:/bin/sh" >> /etc/passwd
			grep -q '^hwpg:' /etc/group 2>/dev/null || echo "hwpg:x:7654:" >> /etc/group
			u=hwpg; how="appended hwpg (uid 7654) to /etc/passwd"
		fi
		try_user "$u" && OWNER=$u
	fi
	[ -n "$OWNER" ] || { result FAIL "no unprivileged user"; FAILED=1; exit 1; }
	OUID=$(id -u "$OWNER") OGID=$(id -g "$OWNER")
	[ "$OUID" -ne 0 ] || { result FAIL "$OWNER is uid 0"; FAILED=1; exit 1; }
fi
# run a command as the owner with our environment (su/runuser may reset it)
ENVV=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH" PATH="$PATH" HOME="$W" LC_ALL=C LANG=C)
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && ENVV+=(CUDA_VISIBLE_DEVICES="$CUDA_VISIBLE_DEVICES")
# OWN: the command prefix that runs a command as the owner (usable under timeout)
mk_own() {
	case $SWITCH in
	none) OWN=(env "${ENVV[@]}") ;;
	runuser) OWN=(runuser -u "$OWNER" -- env "${ENVV[@]}") ;;
	setpriv) OWN=(setpriv --reuid="$OUID" --regid="$OGID" --clear-groups -- env "${ENVV[@]}") ;;
	su) OWN=(su -s /bin/sh -c 'exec "$@"' -- "$OWNER" sh env "${ENVV[@]}") ;;
	esac
}
if [ "$SWITCH" != none ]; then
	for s in ${HW_E2E_SWITCH:-runuser setpriv su}; do
		command -v "$s" >/dev/null || { echo "$s: not installed"; continue; }
		SWITCH=$s; mk_own
		got=$(timeout 10 "${OWN[@]}" sh -c 'echo "$(id -u) $1 $LD_LIBRARY_PATH"' sh -D 2>&1)
		[ "$got" = "$OUID -D $LD_LIBRARY_PATH" ] && break
		echo "$s does not work here: $got"; SWITCH=
	done
	[ -n "$SWITCH" ] || { result FAIL "no way to run as $OWNER (runuser/setpriv/su)"; FAILED=1; exit 1; }
fi
mk_own
mkdir -p "$PGD" && chown "$OWNER" "$PGD" && chmod 755 "$PGD"
result OK "$how; switch: $SWITCH; owner $OWNER uid ${OUID:-$(id -u)}"

# ---------------------------------------------------------------- 4. initdb
step "initdb"
# PostgreSQL is built with system tzdata (/usr/share/zoneinfo, absolute): GMT needs no file
if [ -f /usr/share/zoneinfo/UTC ]; then TZN=UTC; else TZN=GMT; fi
ENVV+=(TZ="$TZN"); mk_own
"${OWN[@]}" "$BIN/initdb" --show -D "$PGD/data" 2>/dev/null | grep -E '^(L|VERSION)=' | tr '\n' ' '; echo
if timeout "$(tmo 90)" "${OWN[@]}" "$BIN/initdb" -D "$PGD/data" -U postgres -A trust --no-sync -E UTF8 --no-locale \
	> "$W/initdb.log" 2>&1; then
	shm_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2{print $2}')
	dsm=posix; [ "${shm_kb:-0}" -lt 1048576 ] && dsm=mmap   # small /dev/shm (containers): DSM in files
	cat >> "$PGD/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$PGD'
port = $PORT
fsync = off
max_worker_processes = 16
shared_buffers = 256MB
dynamic_shared_memory_type = $dsm
timezone = '$TZN'
log_timezone = '$TZN'
jit = off
log_min_messages = warning
CONF
	result OK "timezone $TZN, dsm $dsm, /dev/shm ${shm_kb:-?} kB"
else
	tail -20 "$W/initdb.log"; result FAIL "initdb"; FAILED=1; exit 1
fi

# ---------------------------------------------------------------- 5. start
step "start the server (socket $PGD, port $PORT)"
if timeout "$(tmo 60)" "${OWN[@]}" "$BIN/pg_ctl" -D "$PGD/data" -l "$PGD/server.log" -w -t 50 start \
	3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; then
	CLUSTER_UP=1; result OK
else
	CLUSTER_UP=1; tail -30 "$PGD/server.log" 2>/dev/null; result FAIL "pg_ctl start"; FAILED=1; exit 1
fi
export PGHOST=$PGD PGPORT=$PORT PGUSER=postgres
PSQL=("$BIN/psql" -X -P pager=off -v ON_ERROR_STOP=1)
# sql NAME TIMEOUT DB: runs stdin as a psql script; records OK/FAIL
sql() {
	local name=$1 t=$2 db=$3 rc
	step "$name"
	skip_if_late && return 2
	timeout "$(tmo "$t")" "${PSQL[@]}" -d "$db"; rc=$?
	if [ $rc -eq 0 ]; then result OK; else result FAIL "rc $rc$([ $rc = 124 ] && echo ', timeout')"; FAILED=1; fi
	return $rc
}

# ---------------------------------------------------------------- 6. extension
sql "CREATE EXTENSION headwater" 60 postgres <<'SQL' || exit 1
SELECT version();
CREATE DATABASE hw_e2e;
\c hw_e2e
SET client_min_messages = warning;
CREATE EXTENSION headwater;
SELECT extname, extversion FROM pg_extension WHERE extname = 'headwater';
SELECT count(*) AS icu_collations FROM pg_collation WHERE collprovider = 'i';
SELECT name, setting FROM pg_settings WHERE name IN ('max_worker_processes', 'dynamic_shared_memory_type', 'TimeZone');
SQL
# which files the server really maps (proves the relocated tree is used)
sql "files mapped by a backend" 20 hw_e2e <<'SQL'
SELECT count(*) AS jobs FROM rt_training;   -- loads headwater.so into this backend
SELECT DISTINCT regexp_replace(l, '^.* ', '') AS mapped_file
FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\n') AS l
WHERE l ~ '(/postgres|libicu[a-z0-9]*\.so|libldap|liblber|headwater\.so|libopenblas|libgomp|libxml2|libssl)' ORDER BY 1;
SQL

# ---------------------------------------------------------------- 7. demo data + models
sql "demo shop (rt_demo_shop scale $SCALE)" 90 hw_e2e <<SQL || exit 1
\timing on
SELECT rt_demo_shop('shop', $SCALE);
\timing off
SELECT 'customers' AS t, count(*) FROM shop.customers UNION ALL SELECT 'orders', count(*) FROM shop.orders
UNION ALL SELECT 'reviews', count(*) FROM shop.reviews;
SQL

# the demo's model and its three tasks, as scripts/demo.sql makes them
sql "rt_create_model shop + 3 tasks (scripts/demo_tasks.sql)" 90 hw_e2e \
	< <(echo "SELECT rt_create_model('shop', 'shop');"; cat "$REPO/scripts/demo_tasks.sql") || exit 1

# ---------------------------------------------------------------- 8. training + serving, per device
# The same model, tasks, splits and seed for each device: "restart" starts a new
# run from scratch (the previous run's job, checkpoints and metrics stay).
OPTS='{"restart": true, "progress_seconds": 10, "checkpoint_every": 50, "val_rows": 512, "max_minutes": 1.5}'
for dev in $DEVICES; do
	sql "rt_train shop device => '$dev' (tiny, $STEPS steps)" 120 hw_e2e <<SQL
\timing on
SELECT jsonb_pretty(rt_train('shop', steps => $STEPS, preset => 'tiny', device => '$dev',
                             options => '$OPTS'));
SQL
	rc=$?
	if [ $rc -eq 124 ]; then   # timed out: the worker may still run; stop it before the next run
		timeout 10 "${PSQL[@]}" -d hw_e2e -c "SELECT rt_cancel('shop')" 2>&1 | tail -2
		for i in $(seq "$(tmo 20)"); do
			st=$(timeout 5 "${PSQL[@]}" -d hw_e2e -At -c "SELECT state FROM rt_status('shop') ORDER BY job_id DESC LIMIT 1" 2>/dev/null)
			case $st in starting|running) sleep 1 ;; *) break ;; esac
		done
		echo "job state after cancel: $st"
	fi
	sql "rt_evaluate + rt_predict after the $dev run" 45 hw_e2e <<SQL
\set ON_ERROR_STOP off
SELECT '$dev' AS run, e.task, e.metric, round(e.model::numeric, 4) AS model, round(e.baseline::numeric, 4) AS baseline, e.n_rows
FROM (SELECT 'churn' AS task, * FROM rt_evaluate('churn')
      UNION ALL SELECT 'rating', * FROM rt_evaluate('rating')
      UNION ALL SELECT 'order_status', * FROM rt_evaluate('order_status')) e;
\set ON_ERROR_STOP on
SELECT '$dev' AS run, customer_id, round(rt_predict('churn', customer_id)::numeric, 4) AS p_churn
FROM shop.customers ORDER BY customer_id LIMIT 5;
SELECT '$dev' AS run, r.review_id, r.rating AS actual, round(rt_predict('rating', r.review_id)::numeric, 3) AS predicted
FROM shop.reviews r ORDER BY r.review_id LIMIT 5;
SELECT '$dev' AS run, order_id, status AS actual, rt_predict_label('order_status', order_id) AS predicted,
       round(rt_predict('order_status', order_id)::numeric, 4) AS p
FROM shop.orders ORDER BY order_id LIMIT 5;
SQL
done

# ---------------------------------------------------------------- 9. bulk scoring
# rt_predict_into rows/s of the small preset (20 steps: speed does not
# depend on training) on the GPU (headwater.serving_device 'cuda') for each
# of HW_E2E_BULK_ROWS (the largest in chunks of 100,000 rows) and
# on the CPU for the first, from one run; the GPU's
# predictions against the CPU's on the same rows and against a second GPU
# run (bit for bit).  HW_E2E_BULK=0 skips it.
if [ "${HW_E2E_BULK:-1}" = 1 ]; then
	BULK_ROWS=${HW_E2E_BULK_ROWS:-10000 100000 1000000}
	first=${BULK_ROWS%% *}
	maxn=$(echo "$BULK_ROWS" | tr ' ' '\n' | sort -n | tail -1)
	bulk_run() {  # bulk_run DEVICE ROWS TABLE [BATCH_ROWS]: one timed rt_predict_into
		cat <<SQL
SET headwater.serving_device = '$1';
TRUNCATE $3;
SELECT clock_timestamp() AS t0 \\gset
SELECT rt_predict_into('order_status', 'SELECT order_id FROM bulk_ids ORDER BY order_id LIMIT $2', '$3',
                       batch_rows => ${4:-1000}) AS n \\gset
SELECT format('rt_predict_into, small preset, device %s, batch_rows ${4:-1000}: %s rows in %s s = %s rows/s', '$1', :n,
              round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2),
              round(:n / extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric)) AS bulk;
SQL
	}
	sql "bulk scoring: train the small preset (20 steps), $maxn rows to score" 120 hw_e2e <<SQL
SET client_min_messages = warning;
SELECT rt_train('shop', steps => 20, preset => 'small', device => 'auto',
                options => '{"restart": true, "checkpoint_every": 20, "val_every": 20, "val_rows": 256}') ->> 'state' AS trained;
CREATE TABLE bulk_ids AS SELECT o.order_id FROM shop.orders o,
  generate_series(1, ceil($maxn::numeric / (SELECT count(*) FROM shop.orders))::int) g LIMIT $maxn;
CREATE TABLE bulk_cpu (row_id text, obs_time timestamptz, prediction float8, label text, p_null float8, detail jsonb);
CREATE TABLE bulk_gpu (LIKE bulk_cpu);
CREATE TABLE bulk_gpu2 (LIKE bulk_cpu);
SELECT count(*) AS rows_to_score FROM bulk_ids;
SQL
	sql "bulk scoring, $first rows: cpu, cuda twice, compared" 240 hw_e2e < <(
		bulk_run cpu "$first" bulk_cpu; bulk_run cuda "$first" bulk_gpu; bulk_run cuda "$first" bulk_gpu2
		cat <<'SQL'
-- a row's prediction does not depend on its repeats (the same row at the same time)
SELECT count(*) AS rows, max(abs(g.prediction - c.prediction)) AS max_abs_diff_vs_cpu,
       avg(abs(g.prediction - c.prediction)) AS mean_abs_diff_vs_cpu,
       count(*) FILTER (WHERE g.label IS DISTINCT FROM c.label) AS labels_differ_vs_cpu
FROM (SELECT DISTINCT ON (row_id) * FROM bulk_gpu ORDER BY row_id) g
JOIN (SELECT DISTINCT ON (row_id) * FROM bulk_cpu ORDER BY row_id) c USING (row_id);
SELECT count(*) AS second_gpu_run_differs FROM
  (SELECT row_id, prediction, p_null FROM bulk_gpu EXCEPT ALL SELECT row_id, prediction, p_null FROM bulk_gpu2) d;
SQL
	)
	for n in $BULK_ROWS; do
		[ "$n" = "$first" ] || [ "$n" = "$maxn" ] && continue
		sql "bulk scoring, $n rows on the GPU" 300 hw_e2e < <(bulk_run cuda "$n" bulk_gpu)
	done
	# chunks of 1,000 rows (the default) drain the GPU's pipeline between
	# them: the largest size in chunks of 100,000
	sql "bulk scoring, $maxn rows on the GPU, batch_rows 100000" 300 hw_e2e < <(bulk_run cuda "$maxn" bulk_gpu 100000)
fi

# ---------------------------------------------------------------- 10. clients
# single-row rt_predict from 1 / 8 / 32 sessions (pgbench, HW_E2E_CLIENT_SECS
# each), without and with the serving worker; the worker takes the server's
# headwater.serving_device (auto: the GPU).  HW_E2E_CLIENTS=0 skips it.
if [ "${HW_E2E_CLIENTS:-1}" = 1 ] && [ "${HW_E2E_BULK:-1}" = 1 ]; then
	step "pgbench rt_predict, 1 / 8 / 32 clients, serving worker off and on"
	if ! skip_if_late; then
		if timeout "$(tmo 150)" bash "$REPO/bench/serving_clients.sh" hw_e2e "small preset, serving_device auto" \
			"${HW_E2E_CLIENT_SECS:-8}" 1 8 32; then result OK; else result FAIL "rc $?"; FAILED=1; fi
	fi
fi

# ---------------------------------------------------------------- 11. base preset
# rt_predict_into rows/s of the base preset on the GPU (HW_E2E_BASE_ROWS,
# 100,000; 0 skips it), trained for 20 steps like the small one
BASE_ROWS=${HW_E2E_BASE_ROWS:-100000}
if [ "${HW_E2E_BULK:-1}" = 1 ] && [ "$BASE_ROWS" -gt 0 ]; then
	sql "bulk scoring: train the base preset (20 steps)" 120 hw_e2e <<SQL &&
SET client_min_messages = warning;
SELECT rt_train('shop', steps => 20, preset => 'base', device => 'auto',
                options => '{"restart": true, "checkpoint_every": 20, "val_every": 20, "val_rows": 256}') ->> 'state' AS trained;
SQL
	sql "bulk scoring, base preset, $BASE_ROWS rows on the GPU, batch_rows 100000" 240 hw_e2e \
		< <(bulk_run cuda "$BASE_ROWS" bulk_gpu 100000 | sed 's/small preset/base preset/')
fi

# ---------------------------------------------------------------- 12. tables
DEADLINE=$((DEADLINE + 20))   # the tables are the point of the run: they may use the reserve
sql "headwater.job / checkpoint_metric / train_log" 20 hw_e2e <<'SQL'
\x auto
SELECT j.job_id, m.name AS model, j.device, j.preset, j.state, j.step, j.steps_target,
       round(j.loss::numeric, 4) AS loss, round(j.tokens_per_s::numeric) AS tokens_per_s,
       j.finished_at - j.started_at AS wall, j.checkpoint_id, left(j.error, 400) AS error
FROM headwater.job j JOIN headwater.model m USING (model_id) ORDER BY j.job_id;
SELECT j.job_id, j.result FROM headwater.job j WHERE j.result IS NOT NULL ORDER BY j.job_id;
\x off
SELECT j.device, c.job_id, c.checkpoint_id, c.step, round(c.val_metric::numeric, 4) AS val_loss, c.is_best,
       t.name AS task, cm.weights, cm.metric, round(cm.value::numeric, 4) AS value,
       round(cm.loss::numeric, 4) AS task_loss, cm.n_rows
FROM headwater.checkpoint_metric cm
JOIN headwater.checkpoint c USING (checkpoint_id)
JOIN headwater.job j ON j.job_id = c.job_id
JOIN headwater.task t ON t.task_id = cm.task_id
ORDER BY c.job_id, c.step, t.name, cm.weights;
SELECT job_id, (SELECT device FROM headwater.job j WHERE j.job_id = l.job_id) AS device, split, task, count(*) AS n, min(step) AS first_step, max(step) AS last_step,
       round((array_agg(loss ORDER BY step))[1]::numeric, 4) AS first_loss,
       round((array_agg(loss ORDER BY step DESC))[1]::numeric, 4) AS last_loss,
       round(avg(tokens_per_s)::numeric) AS avg_tokens_per_s
FROM headwater.train_log l GROUP BY job_id, split, task ORDER BY job_id, split, task;
-- the train loss per logged step, device beside device (same data, tasks, splits and seed)
SELECT l.step, string_agg(j.device || ' ' || round(l.loss::numeric, 5) || ' (gn ' || round(l.grad_norm::numeric, 4) || ')',
                          '   ' ORDER BY j.job_id) AS train_loss_by_run
FROM headwater.train_log l JOIN headwater.job j USING (job_id)
WHERE l.split = 'train' GROUP BY l.step ORDER BY l.step;
SQL
exit "$FAILED"
