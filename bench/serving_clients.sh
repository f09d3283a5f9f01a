#!/usr/bin/env bash
# bench/serving_clients.sh: single-row rt_predict from many sessions at once,
# without and with the serving worker, on a database that holds the demo
# shop with a trained order_status task.
#
#   bench/serving_clients.sh DB LABEL SECONDS [CLIENTS ...]   (clients: 1 8 32)
#
# For each client count, pgbench runs one rt_predict of a random order per
# transaction for SECONDS, first with headwater.serving_worker off (each
# session predicts on its own CPU model), then on (the sessions hand their
# rows to one worker that batches what arrives within
# HW_BENCH_WINDOW_MS, default 2, and predicts on the server's
# headwater.serving_device).  Prints transactions/s, latency p50/p99 (the
# first call of each session, which loads the model, apart), and the
# sessions' backend RSS after warm-up and near the end; then the worker's
# cumulative rows and forwards (rows per forward: the batching).
# Uses psql and pgbench from PATH and the server of PGHOST/PGPORT/PGUSER.
# LABEL names the run in the output (the preset, the device).
set -euo pipefail
db=$1 label=$2 secs=$3
shift 3
clients=${*:-1 8 32}
q() { psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 "$@"; }

norders=$(q -c "SELECT count(*) FROM shop.orders")
work=$(mktemp -d /tmp/hw_bench_clients.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
printf '\\set id random(1, %s)\nSELECT rt_predict('"'"'order_status'"'"', :id);\n' "$norders" > "$work/script.sql"

rss_of_bench() {   # sessions, sum and max RSS (kB) of the pgbench sessions' backends
	local pids p r sum=0 max=0 n=0
	pids=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'")
	for p in $pids; do
		r=$(awk '/VmRSS/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)
		[ -n "$r" ] || r=0
		sum=$((sum + r)); n=$((n + 1)); [ "$r" -gt "$max" ] && max=$r
	done
	echo "$n $sum $max"
}
pct() {   # pct FILE P: the P quantile of a sorted column of µs, in ms
	awk -v p="$2" '{ v[NR] = $1 } END { i = int(NR * p) + 1; if (i > NR) i = NR; printf "%.2f", v[i] / 1000 }' "$1"
}

for worker in off on; do
for c in $clients; do
	logs=$work/log
	rm -rf "$logs" && mkdir -m 755 "$logs"
	(cd "$logs" && PGOPTIONS="-c headwater.serving_worker=$worker -c headwater.serving_worker_window_ms=${HW_BENCH_WINDOW_MS:-2}" \
		pgbench -n -d "$db" -c "$c" -j "$c" -T "$secs" -f "$work/script.sql" -l --log-prefix=pb \
		> "$logs/out.txt" 2>&1) &
	pb=$!
	sleep $(( secs < 20 ? 3 : 10 ))
	read -r n0 s0 m0 < <(rss_of_bench)
	sleep $(( secs < 20 ? secs - 5 : secs - 13 ))
	read -r n1 s1 m1 < <(rss_of_bench)
	wait "$pb" || { echo "pgbench failed ($label, worker $worker, $c clients):"; tail -5 "$logs/out.txt"; continue; }
	tps=$(awk '/^tps/ {print $3; exit}' "$logs/out.txt")
	# per-transaction log: client id, tx no, latency µs, ...; the first
	# transaction of each client includes the model load
	cat "$logs"/pb* | awk '{print $1, $3}' | sort -n -k1,1 -s > "$logs/lat.txt"
	awk '!($1 in seen) { seen[$1] = 1; print $2 > "'"$logs"'/first.txt"; next } { print $2 }' "$logs/lat.txt" \
		| sort -n > "$logs/rest.txt"
	sort -n "$logs/first.txt" -o "$logs/first.txt"
	stats="p50 $(pct "$logs/rest.txt" 0.50) ms, p99 $(pct "$logs/rest.txt" 0.99) ms over $(wc -l < "$logs/rest.txt") transactions; first call per session: median $(pct "$logs/first.txt" 0.5) ms, max $(pct "$logs/first.txt" 1) ms"
	echo "pgbench rt_predict, $label, serving worker $worker, $c clients, ${secs}s: $tps tps; $stats;" \
		"backend RSS: $n0 sessions $((s0 / 1024)) MB total / $((m0 / 1024)) MB max after warm-up," \
		"$n1 sessions $((s1 / 1024)) MB / $((m1 / 1024)) MB max near the end"
done
done
echo "serving workers after the runs (cumulative): $(q -c "SELECT string_agg(format('%s checkpoint %s: %s rows in %s forwards', model, checkpoint_id, \"rows\", batches), '; ') FROM rt_serving_workers()")"
