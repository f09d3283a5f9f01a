#!/usr/bin/env bash
# bench/serving_soak.sh: does a serving backend leak?  pgbench keeps
# `clients` sessions predicting for `minutes` while this script samples every
# session's memory and the whole server's.
#
#   bench/serving_soak.sh [minutes] [clients] [preset] [scale] [interval_s]
#                         default: 10 8 small 2000 30
#   HW_SOAK_BATCH=0         rt_predict only (default 1: one transaction in
#                           41 is the batch script below)
#   HW_SOAK_LEAK_KB_MIN=50  the verdict's threshold on anonymous-memory growth
#   HW_SOAK_KEEP=DIR        copy the samples, the transaction log and the
#                           memory-context logs there
#
# Workload (demo shop at `scale`, cell task orders.status, the model trained
# 20 steps: memory does not depend on training quality): pgbench script 1,
# weight 40, is rt_predict of a random order; script 2, weight 1, is
# rt_predict_batch of 40 consecutive random orders (more than one B = 32
# batch) and rt_predict_table of 10, the paths that allocate most.
#
# Every interval_s seconds: each pgbench backend's /proc/<pid>/smaps_rollup
# (Rss; Pss; Private = Private_Clean + Private_Dirty, its own pages;
# Anonymous) and the sum of Pss and Rss over the postmaster and all its
# children (the server's total).  At the end a table over time (with the
# throughput and latency of each interval from pgbench's transaction log)
# and the verdict: per backend, the least-squares slopes of Private and
# Anonymous in KB/min from minute 1 to the end (a leak is steady growth;
# the first minute is warm-up: the model cache, catalog caches, the
# activation arena a first batch touches).  With a
# throwaway cluster also each backend's memory-context total
# (pg_log_backend_memory_contexts, from the server log) at minute 1 and just
# before the end.  Uses the server in PGHOST/PGPORT when set (then no
# memory-context part: the server log is not ours), else starts a throwaway
# cluster with a private copy of the library (scripts/lib.sh).
# Prints figures and a verdict line; exits 0 either way.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"
minutes=${1:-10}
clients=${2:-8}
preset=${3:-small}
scale=${4:-2000}
interval=${5:-30}
batch=${HW_SOAK_BATCH:-1}
leak_kb_min=${HW_SOAK_LEAK_KB_MIN:-50}
secs=$((minutes * 60))

hw_bench_cluster "${HW_BENCH_PORT:-54340}" private
db=hw_bench_soak
q() { psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 "$@"; }
hw_bench_shop "$db" "$scale"
q -c "SET client_min_messages = warning" \
  -c "SELECT rt_train('shop', steps => 20, preset => '$preset', options => '{\"val_every\": 1000, \"checkpoint_every\": 1000}')" >/dev/null
norders=$(q -c "SELECT count(*) FROM shop.orders")
[ "$(q -c "SELECT min(order_id) = 1 AND max(order_id) = count(*) FROM shop.orders")" = t ] \
	|| { echo "FATAL: shop.orders ids are not 1..$norders"; exit 1; }

work=$(mktemp -d /tmp/hw_soak.XXXXXX)
chmod 755 "$work"
if [ -n "${HW_BENCH_DIR:-}" ]; then HW_BENCH_ON_EXIT="rm -rf '$work'"; else trap "rm -rf '$work'" EXIT; fi
printf '\\set id random(1, %s)\nSELECT rt_predict('"'"'order_status'"'"', :id);\n' "$norders" > "$work/single.sql"
cat > "$work/batch.sql" <<SQL
\\set id random(1, $((norders - 40)))
SELECT count(*) FROM rt_predict_batch('order_status', ARRAY(SELECT generate_series(:id, :id + 39)));
SELECT count(*) FROM rt_predict_table('order_status', 'SELECT order_id FROM shop.orders WHERE order_id BETWEEN :id AND :id + 9 ORDER BY 1');
SQL
scripts=(-f "$work/single.sql@40")
[ "$batch" = 0 ] || scripts+=(-f "$work/batch.sql@1")

echo "soak: $minutes min, $clients clients, preset $preset, demo shop scale $scale, sample every ${interval}s, batch script $([ "$batch" = 0 ] && echo off || echo 'on (weight 1 in 41)')"
echo "start $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src sql || echo ' + local changes')"
echo "OPENBLAS_CORETYPE of the server: ${OPENBLAS_CORETYPE:-unset}; headwater.serving_shared_cache = $(q -c 'SHOW headwater.serving_shared_cache' 2>/dev/null || echo 'on (default)')"

postmaster=$(head -1 "$(q -c 'SHOW data_directory')/postmaster.pid")
# "rss pss private anon" in kB from a pid's smaps_rollup; zeros once it is gone
mem() {
	local m
	m=$(awk '/^Rss:/ {r = $2} /^Pss:/ {p = $2} /^Private_(Clean|Dirty):/ {v += $2} /^Anonymous:/ {a = $2}
	         END {print r + 0, p + 0, v + 0, a + 0}' /proc/"$1"/smaps_rollup 2>/dev/null) || true
	echo "${m:-0 0 0 0}"
}
bench_pids() { q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' ORDER BY pid"; }
sample() {   # epoch kind pid rss pss private anon [title]: kind backend (pgbench's), other, server (the sum)
	# one pass over the server's processes, so the backends and the total
	# are read at the same moment (backends leave as pgbench ends)
	local now p m bench rss=0 pss=0 r s _
	bench=" $(bench_pids | tr '\n' ' ') "
	now=$(date +%s.%N)
	for p in "$postmaster" $(pgrep -P "$postmaster"); do
		m=$(mem "$p")
		read -r r s _ _ <<< "$m"
		rss=$((rss + r)); pss=$((pss + s))
		if [[ "$bench" == *" $p "* ]]; then echo "$now backend $p $m"
		else echo "$now other $p $m $( { tr '\0 ' '__' < /proc/"$p"/cmdline; } 2>/dev/null | sed 's/_*$//')"; fi
	done
	echo "$now server 0 $rss $pss 0 0"
}
# memory-context totals of the pgbench backends, from the server log
log=${HW_BENCH_DIR:+$HW_BENCH_DIR/server.log}
contexts() {   # LABEL: every pgbench backend logs its contexts; the log part into $work/contexts_LABEL.log
	[ -n "$log" ] || return 0
	local off
	off=$(stat -c %s "$log")
	local n i
	n=$(q -c "SELECT count(pg_log_backend_memory_contexts(pid)) FROM pg_stat_activity WHERE application_name = 'pgbench'")
	# each logs at its next CHECK_FOR_INTERRUPTS: wait for all (20 s at most)
	for i in $(seq 1 40); do
		sleep 0.5
		[ "$(tail -c +$((off + 1)) "$log" | grep -c 'Grand total:')" -ge "$n" ] && break
	done
	sleep 0.5
	tail -c +$((off + 1)) "$log" > "$work/contexts_$1.log"
}

(cd "$work" && exec pgbench -n -d "$db" -c "$clients" -j "$clients" -T "$secs" "${scripts[@]}" \
	-l --log-prefix=pb > "$work/pgbench.txt" 2>&1) &
pb=$!
t0=$(date +%s.%N)
for _ in $(seq 1 300); do [ "$(bench_pids | wc -l)" -ge "$clients" ] && break; sleep 0.2; done
: > "$work/samples"
next=$interval
sample >> "$work/samples"
ctx1=0
ctx_jobs=()
while kill -0 "$pb" 2>/dev/null; do
	el=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print int(b - a)}')
	# in the background: a backend busy in a long batch logs only when it is done
	if [ "$ctx1" = 0 ] && [ "$el" -ge 65 ] && [ "$secs" -ge 120 ]; then contexts minute1 & ctx_jobs+=($!); ctx1=1; fi
	if [ "$ctx1" = 1 ] && [ "$el" -ge $((secs - 15)) ]; then contexts end & ctx_jobs+=($!); ctx1=2; fi
	if [ "$el" -ge "$next" ] && [ "$el" -lt $((secs - 2)) ]; then
		sample >> "$work/samples"
		next=$((next + interval))
		# the last sample as close to the end as possible
		[ "$next" -ge $((secs - 2)) ] && [ "$el" -lt $((secs - 11)) ] && next=$((secs - 10))
	fi
	sleep 1
done
wait "$pb" || { echo "pgbench failed:"; cat "$work/pgbench.txt"; exit 1; }
for j in "${ctx_jobs[@]}"; do wait "$j" || true; done
echo "end $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
grep -E '^(number of transactions actually processed|number of failed|tps)' "$work/pgbench.txt" || true
grep -E '^(SQL script| *- weight| *- [0-9]+ transactions)' "$work/pgbench.txt" || true

# transaction log: client tx latency_us script epoch_s epoch_us
cat "$work"/pb.* > "$work/tx"
awk -v secs="$secs" '{r += ($4 == 0 ? 1 : 50)} END {printf "rows predicted: %d in %d s = %.1f rows/s (rt_predict 1, batch script 50 per transaction)\n", r, secs, r / secs}' "$work/tx"
# the first transaction of each client includes the model load
awk '!($1 in seen) {seen[$1] = 1; next} {print}' "$work/tx" > "$work/tx_warm"
pct() { sort -n | awk -v p="$1" '{v[NR] = $1} END {if (!NR) {print "-"; exit} i = int(NR * p) + 1; if (i > NR) i = NR; printf "%.1f", v[i] / 1000}'; }
for s in 0 1; do
	n=$(awk -v s="$s" '$4 == s' "$work/tx_warm" | wc -l)
	[ "$n" -gt 0 ] || continue
	echo "script $s ($([ "$s" = 0 ] && echo 'rt_predict, 1 row' || echo 'rt_predict_batch 40 + rt_predict_table 10')): $n transactions after each client's first," \
		"p50 $(awk -v s="$s" '$4 == s {print $3}' "$work/tx_warm" | pct 0.5) ms, p99 $(awk -v s="$s" '$4 == s {print $3}' "$work/tx_warm" | pct 0.99) ms"
done

echo
echo "memory over time (MB; per pgbench backend: private = pages no other process maps, rss; pss_sum = their PSS summed;"
echo "server = PSS of the postmaster and all its children; others = server - pss_sum: postmaster, auxiliary processes, this script's psql):"
printf '%6s %7s %9s %9s %4s %12s %12s %10s %10s %10s %10s\n' t_min tps p50_ms p99_ms n private_mean private_max rss_mean pss_sum server_pss others_pss
times=$(awk '{print $1}' "$work/samples" | sort -un)
prev=$t0
for t in $times; do
	# the interval's transactions; rt_predict latencies (script 0) into lat_win
	tps=$(awk -v a="$prev" -v b="$t" -v f="$work/lat_win" 'BEGIN {printf "" > f}
		{e = $5 + $6 / 1e6} e > a && e <= b {n++; if ($4 == 0) print $3 > f} END {printf "%.1f", n / (b - a)}' "$work/tx")
	p50=$(pct 0.5 < "$work/lat_win"); p99=$(pct 0.99 < "$work/lat_win")
	awk -v t="$t" -v t0="$t0" -v tps="$tps" -v p50="$p50" -v p99="$p99" '
		$1 == t && $2 == "backend" {n++; pr += $6; if ($6 > mx) mx = $6; rs += $4; ps += $5}
		$1 == t && $2 == "server" {spss = $5}
		END {printf "%6.1f %7s %9s %9s %4d %12.1f %12.1f %10.1f %10.1f %10.1f %10.1f\n", (t - t0) / 60, tps, p50, p99, n,
		     n ? pr / n / 1024 : 0, mx / 1024, n ? rs / n / 1024 : 0, ps / 1024, spss / 1024, (spss - ps) / 1024}' "$work/samples"
	prev=$t
done

echo
# verdict: per backend, least-squares slope over minutes (from minute 1 on)
# of private and of anonymous kB.  The verdict is on anonymous (heap and
# anonymous maps, where a leak of palloc or malloc memory lands): private
# also counts shared memory and file pages no other process maps yet, so
# with one client it grows as the backend reads new pages into shared
# buffers, a bounded growth that is no leak.
awk -v t0="$t0" -v thr="$leak_kb_min" '
	function slope(k,   d) { d = n[k] * sxx[k] - sx[k] * sx[k]; return d > 0 ? (n[k] * sxy[k] - sx[k] * sy[k]) / d : 0 }
	function add(k, v) { n[k]++; sx[k] += m; sy[k] += v; sxx[k] += m * m; sxy[k] += m * v
	                     if (!(k in first)) first[k] = v; last[k] = v }
	{ m = ($1 - t0) / 60 }
	m < 1 { next }
	$2 == "server" { add("server", $5); next }
	$2 != "backend" { next }
	{ add("p" $3, $6); add("a" $3, $7); pid[$3] = 1; if (!f0) f0 = m; f1 = m }
	END {
		for (p in pid) if (n["p" p] >= 3) {
			nb++
			sp = slope("p" p); sa = slope("a" p); tp += sp; ta += sa
			if (nb == 1 || sp > mp) mp = sp; if (nb == 1 || sa > ma) ma = sa
			gp += last["p" p] - first["p" p]; ga += last["a" p] - first["a" p]
		}
		if (!nb) { print "verdict: too few samples after minute 1 (run at least 2-3 minutes)"; exit }
		printf "per backend, minute %.1f to %.1f, %d backends: private slope mean %.1f KB/min (max %.1f), growth mean %.0f KB; anonymous slope mean %.1f KB/min (max %.1f), growth mean %.0f KB\n",
			f0, f1, nb, tp / nb, mp, gp / nb, ta / nb, ma, ga / nb
		if ("server" in n) printf "server total PSS: slope %.1f KB/min, growth %.0f KB (%.1f -> %.1f MB)\n",
			slope("server"), last["server"] - first["server"], first["server"] / 1024, last["server"] / 1024
		printf "verdict: %s (threshold: mean anonymous slope %d KB/min per backend)\n",
			(ta / nb > thr ? "STEADY GROWTH of anonymous memory: a leak? look at the memory contexts" : \
			 tp / nb > thr ? "no leak: anonymous memory flat; private grows by shared pages (shared buffers) only this backend has mapped so far" : \
			 "no steady growth"), thr
	}' "$work/samples"

# the other processes whose PSS changed by 1 MB or more from minute 1 to the
# end (shared buffers a process touches for the first time count into its
# PSS: e.g. the checkpointer writing pages no backend has read)
awk -v t0="$t0" '$2 == "other" && ($1 - t0) >= 60 { if (!($3 in a)) { a[$3] = $5; name[$3] = $8 } b[$3] = $5 }
	END { for (p in a) if (b[p] - a[p] >= 1024 || a[p] - b[p] >= 1024) line = line sprintf(" %s %+.1f MB;", name[p], (b[p] - a[p]) / 1024)
	      print "other server processes, PSS change from minute 1 to the end:" (line == "" ? " none over 1 MB" : line) }' "$work/samples"

# memory contexts: per backend, the total of the long-lived ones (all but
# the current query's: MessageContext, TopPortalContext, the transaction's
# contexts and their children) at minute 1 and before the end, and the
# top-level contexts that changed most
ctx_sum() {   # log -> "pid level1_context bytes" (children summed into their level-1 ancestor)
	sed -n 's/.*\[\([0-9]*\)\].*level: \([0-9]*\); \(.*\)$/\1 \2 \3/p' "$1" | awk '
		{ pid = $1; lvl = $2; $1 = $2 = ""; sub(/^ +/, "")
		  if (match($0, /[0-9]+ total in/)) bytes = substr($0, RSTART, RLENGTH - 9); else next
		  if (lvl == 0) top[pid] = "TopMemoryContext"; else if (lvl == 1) { name = $0; sub(/:.*/, "", name); if (name ~ /^[0-9]+ more child contexts/) name = "(more_children)"; gsub(/ /, "_", name); top[pid] = name }
		  s[pid " " top[pid]] += bytes }
		END { for (k in s) print k, s[k] }'
}
if [ -s "$work/contexts_minute1.log" ] && [ -s "$work/contexts_end.log" ]; then
	ctx_sum "$work/contexts_minute1.log" | sed 's/^/a /' > "$work/ctx"
	ctx_sum "$work/contexts_end.log" | sed 's/^/b /' >> "$work/ctx"
	awk '
		$3 ~ /^(MessageContext|TopPortalContext|TopTransactionContext|CurTransactionContext|ErrorContext)$/ { next }
		{ v[$1, $2] += $4 + 0; c[$1, $2, $3] += $4 + 0; pids[$2] = 1; names[$3] = 1 }
		END {
			for (p in pids) if (((("a", p) in v)) && ((("b", p) in v))) {
				n++; d = v["b", p] - v["a", p]; sd += d; sa += v["a", p]; sb += v["b", p]
				if (n == 1 || d > dmax) dmax = d; if (n == 1 || d < dmin) dmin = d
				for (k in names) g[k] += c["b", p, k] - c["a", p, k]
			}
			if (!n) { print "memory contexts: no backend logged at both points"; exit }
			printf "memory contexts (long-lived, per backend): %.0f KB at minute 1, %.0f KB before the end; change mean %+.1f KB (min %+.0f, max %+.0f) over %d backends\n",
				sa / n / 1024, sb / n / 1024, sd / n / 1024, dmin / 1024, dmax / 1024, n
			line = ""
			for (k in g) if (g[k] != 0) line = line sprintf(" %s %+.1f KB;", k, g[k] / n / 1024)
			print "  change by top-level context (mean per backend):" (line == "" ? " none" : line)
		}' "$work/ctx"
fi
[ -z "${HW_SOAK_KEEP:-}" ] || cp "$work"/contexts_*.log "$work/samples" "$work/tx" "$HW_SOAK_KEEP"/ 2>/dev/null || true
