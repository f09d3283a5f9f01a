#!/usr/bin/env bash
# bench/serving_cache.sh: what a backend pays to serve a trained model: the
# latency of its first rt_predict (fresh session, library not yet loaded) and
# of its second, and its memory from /proc/<pid>/smaps_rollup (Private =
# this backend's own pages, Shared = pages it shares with other processes,
# e.g. the model cache file in the OS page cache), for the first backend
# that serves the model and for extra backends after it.
#
#   bench/serving_cache.sh [preset] [scale] [extra]   default: small 2000 3
#   HW_SHARED_CACHE=off bench/serving_cache.sh ...    every session loads
#       privately (headwater.serving_shared_cache = off: the code path of
#       the per-backend cache before the shared one), to compare
#
# Uses the server in PGHOST/PGPORT when set, else starts a throwaway cluster.
# The model is trained for a few steps only (speed and memory do not depend
# on how well it is trained).  Prints figures; never decides pass/fail.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"
preset=${1:-small}
scale=${2:-2000}
extra=${3:-3}

hw_bench_cluster "${HW_BENCH_PORT:-54339}"
db=hw_bench_serving_cache
q() { psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 "$@"; }
hw_bench_shop "$db" "$scale"
q -c "SET client_min_messages = warning" \
  -c "SELECT rt_train('shop', steps => 20, preset => '$preset', options => '{\"val_every\": 1000, \"checkpoint_every\": 1000}')" >/dev/null
echo "machine load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "headwater.serving_shared_cache = ${HW_SHARED_CACHE:-on}"
echo "preset $preset, demo shop scale $scale ($(q -c "SELECT sum(n_live_tup) FROM pg_stat_user_tables WHERE schemaname = 'shop'") rows)"

# One fresh session: the time to load the library (LOAD), the latency of
# its first and second rt_predict, and its smaps_rollup after them: Private
# (pages no other process maps), Shared, PSS, and Anonymous (its own heap
# and anonymous memory: what it costs beyond the shared page cache).
# With "hold", the session then stays until bench_done has a row, so that
# the extra sessions share the cache file's pages with a live backend.
session() {
	q <<SQL
SET client_min_messages = warning;
CREATE TEMP TABLE m (k text, v float8);
CREATE FUNCTION pg_temp.kb(what text) RETURNS float8 LANGUAGE sql AS \$\$
  SELECT sum((regexp_match(l, '^\S+:\s+(\d+) kB'))[1]::float8)
  FROM regexp_split_to_table(pg_read_file('/proc/self/smaps_rollup'), E'\n') l
  WHERE l ~ ('^(' || what || '):') \$\$;
INSERT INTO m VALUES ('priv0', pg_temp.kb('Private_Clean|Private_Dirty'));
SELECT clock_timestamp() AS t0 \gset
LOAD 'headwater';
INSERT INTO m VALUES ('load_ms', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000);
SET headwater.serving_shared_cache = ${HW_SHARED_CACHE:-on};
SELECT clock_timestamp() AS t0 \gset
SELECT rt_predict('order_status', 1) IS NOT NULL AS x \gset
INSERT INTO m VALUES ('first_ms', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000);
SELECT clock_timestamp() AS t0 \gset
SELECT rt_predict('order_status', 2) IS NOT NULL AS x \gset
INSERT INTO m VALUES ('second_ms', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000);
INSERT INTO m VALUES ('priv', pg_temp.kb('Private_Clean|Private_Dirty')),
                     ('shared', pg_temp.kb('Shared_Clean|Shared_Dirty')),
                     ('pss', pg_temp.kb('Pss')), ('anon', pg_temp.kb('Anonymous'));
SELECT format('load %s ms, first rt_predict %s ms, second %s ms; private %s MB (%s before), shared %s MB, PSS %s MB, anonymous %s MB',
  round(max(v) FILTER (WHERE k = 'load_ms')::numeric, 1),
  round(max(v) FILTER (WHERE k = 'first_ms')::numeric, 1), round(max(v) FILTER (WHERE k = 'second_ms')::numeric, 2),
  round((max(v) FILTER (WHERE k = 'priv') / 1024)::numeric, 1), round((max(v) FILTER (WHERE k = 'priv0') / 1024)::numeric, 1),
  round((max(v) FILTER (WHERE k = 'shared') / 1024)::numeric, 1), round((max(v) FILTER (WHERE k = 'pss') / 1024)::numeric, 1),
  round((max(v) FILTER (WHERE k = 'anon') / 1024)::numeric, 1))
FROM m;
$( [ "${1:-}" = hold ] && echo "DO \$\$ BEGIN FOR i IN 1 .. 1200 LOOP EXIT WHEN EXISTS (SELECT 1 FROM bench_done); PERFORM pg_sleep(0.1); END LOOP; END \$\$;" )
SQL
}

q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS bench_done" -c "CREATE TABLE bench_done (x int)"
out=$(mktemp)
session hold >"$out" &
holder=$!
for _ in $(seq 1 600); do [ -s "$out" ] && break; sleep 0.1; done
echo "first backend after training (stays connected): $(cat "$out")"
for i in $(seq 1 "$extra"); do
	echo "extra backend $i:                                $(session)"
done
q -c "INSERT INTO bench_done VALUES (1)"
wait "$holder"
rm -f "$out"
echo "cache files: $(ls -l "$(q -c 'SHOW data_directory')/pg_headwater/serving" 2>/dev/null | awk 'NR > 1 {n++; b += $5} END {printf "%d, %.1f MB", n, b / 1048576}')"
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"
