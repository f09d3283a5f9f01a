#!/usr/bin/env bash
# bench/serving_precision.sh: the served model in fp32 and in bf16
# (headwater.inference_precision) on the demo shop database, same run.
#
#   bench/serving_precision.sh [preset] [scale] [rows] [steps] [rounds]
#                              default: small 2000 10000 200 2
#
# Trains the cell task orders.status for `steps` steps, then, alternating the
# two precisions over `rounds` rounds in one session:
#   - rt_predict, one row: p50/p99 latency over 100 calls;
#   - rt_predict_into of `rows` rows: rows/s of wall time and rows per CPU
#     second of the backend (utime + stime of its /proc/self/stat, all its
#     threads: the figure to compare on a shared machine);
# and the ratio bf16 / fp32 of each.  Then the agreement of the two
# precisions on those rows: accuracy against the orders' status in each,
# share of equal labels, largest probability difference.
# Needs a superuser (reads /proc/self/stat with pg_read_file).  Uses the
# server in PGHOST/PGPORT when set, else starts a throwaway cluster.  Prints
# figures; never decides pass/fail.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"
preset=${1:-small}
scale=${2:-2000}
nrows=${3:-10000}
steps=${4:-200}
rounds=${5:-2}

hw_bench_cluster "${HW_BENCH_PORT:-54339}"
db=hw_bench_precision
q() { psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 "$@"; }
hw_bench_shop "$db" "$scale"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
     "avx512_bf16: $(grep -qw avx512_bf16 /proc/cpuinfo && echo yes || echo no); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
res=$(q -c "SET client_min_messages = warning" -c "SELECT rt_train('shop', steps => $steps, preset => '$preset', options => '{\"val_every\": 1000, \"checkpoint_every\": 1000}')")
echo "trained, preset $preset, $steps steps: $res"

q <<SQL
SET client_min_messages = warning;
CREATE TABLE bench_ids AS
  SELECT order_id FROM (SELECT order_id FROM shop.orders ORDER BY order_id) o,
                       generate_series(1, 1 + $nrows / (SELECT count(*) FROM shop.orders)::int) g
  LIMIT $nrows;
CREATE TABLE bench_preds (precision text, row_id text, prediction float8, label text, detail jsonb);
CREATE TABLE bench_runs (precision text, round int, what text, value float8);
-- the backend's CPU time (all its threads) in seconds
CREATE FUNCTION pg_temp.cpu_s() RETURNS float8 LANGUAGE sql AS \$\$
  SELECT (f[12]::float8 + f[13]::float8) / 100
  FROM (SELECT string_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ') AS f) s
\$\$;
SQL

for r in $(seq 1 "$rounds"); do
	for p in fp32 bf16; do
		q <<SQL
SET client_min_messages = warning;
SET headwater.inference_precision = $p;
SELECT rt_predict('order_status', 1) IS NULL AS warm \gset
CREATE TEMP TABLE lat (ms float8);
DO \$\$
DECLARE t0 timestamptz; ids int[];
BEGIN
  SELECT array_agg(order_id ORDER BY order_id) INTO ids FROM (SELECT order_id FROM shop.orders ORDER BY order_id LIMIT 100) s;
  FOR i IN 1 .. array_length(ids, 1) LOOP
    t0 := clock_timestamp();
    PERFORM rt_predict('order_status', ids[i]);
    INSERT INTO lat VALUES (extract(epoch FROM clock_timestamp() - t0) * 1000);
  END LOOP;
END \$\$;
INSERT INTO bench_runs SELECT '$p', $r, 'p50_ms', percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM lat;
INSERT INTO bench_runs SELECT '$p', $r, 'p99_ms', percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) FROM lat;
CREATE TEMP TABLE preds (row_id text, prediction float8, label text, detail jsonb);
SELECT clock_timestamp() AS t0, pg_temp.cpu_s() AS c0 \gset
SELECT rt_predict_into('order_status', 'SELECT order_id FROM bench_ids', 'preds') AS n \gset
INSERT INTO bench_runs VALUES
  ('$p', $r, 'rows_per_s', :n / extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)),
  ('$p', $r, 'rows_per_cpu_s', :n / greatest(pg_temp.cpu_s() - :c0, 0.01));
INSERT INTO bench_preds SELECT '$p', row_id, prediction, label, detail FROM preds WHERE $r = 1;
SQL
	done
done

q <<SQL
SELECT format('round %s %s: rt_predict one row p50 %s ms p99 %s ms; rt_predict_into %s rows: %s rows/s wall, %s rows per CPU-second',
              round, precision,
              round(max(value) FILTER (WHERE what = 'p50_ms')::numeric, 2), round(max(value) FILTER (WHERE what = 'p99_ms')::numeric, 2),
              $nrows, round(max(value) FILTER (WHERE what = 'rows_per_s')::numeric, 1),
              round(max(value) FILTER (WHERE what = 'rows_per_cpu_s')::numeric, 1))
FROM bench_runs GROUP BY round, precision ORDER BY round, precision DESC;
SELECT format('bf16 / fp32 (medians over rounds): rows/s wall x%s, rows per CPU-second x%s, one-row p50 x%s',
              round((b.rs / f.rs)::numeric, 2), round((b.rc / f.rc)::numeric, 2), round((b.p50 / f.p50)::numeric, 2))
FROM (SELECT precision,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE what = 'rows_per_s') AS rs,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE what = 'rows_per_cpu_s') AS rc,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE what = 'p50_ms') AS p50
      FROM bench_runs GROUP BY precision) f
JOIN (SELECT precision,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE what = 'rows_per_s') AS rs,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE what = 'rows_per_cpu_s') AS rc,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE what = 'p50_ms') AS p50
      FROM bench_runs GROUP BY precision) b ON f.precision = 'fp32' AND b.precision = 'bf16';
-- agreement on the predicted rows (each order once)
WITH f AS (SELECT DISTINCT ON (row_id) * FROM bench_preds WHERE precision = 'fp32'),
     b AS (SELECT DISTINCT ON (row_id) * FROM bench_preds WHERE precision = 'bf16'),
     j AS (SELECT f.row_id, f.label AS lf, b.label AS lb, f.prediction AS pf, b.prediction AS pb, o.status::text AS truth
           FROM f JOIN b USING (row_id) JOIN shop.orders o ON o.order_id::text = f.row_id)
SELECT format('%s orders: accuracy fp32 %s, bf16 %s; same label %s%%; largest |prediction fp32 - bf16| %s',
              count(*), round(avg((lf = truth)::int)::numeric, 4), round(avg((lb = truth)::int)::numeric, 4),
              round(100 * avg((lf = lb)::int)::numeric, 2), round(max(abs(pf - pb))::numeric, 5))
FROM j;
SQL
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"
