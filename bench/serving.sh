#!/usr/bin/env bash
# bench/serving.sh: prediction speed on the demo shop database.
#
#   bench/serving.sh [preset] [scale] [pgbench_seconds] [batch_rows]
#                    default: small 2000 60 10000
#
# Prints, for the cell task orders.status:
#   - rt_predict, one row: p50/p99 latency over 200 calls in one session;
#   - rt_predict_batch of batch_rows rows: rows/s;
#   - rt_predict_table and rt_predict_into of batch_rows / 5 rows: rows/s;
#   - pgbench with rt_predict of a random order at 1, 8 and 32 clients for
#     pgbench_seconds each, without and with the serving worker
#     (headwater.serving_worker, window HW_BENCH_WINDOW_MS, default 2):
#     transactions/s, latency p50/p99, first-call latency (model load) and
#     backend RSS after the first call and at the end (growth = what a
#     session keeps); with the worker, its forwards and rows (rows per
#     forward: the batching across sessions);
#   - the training worker's tokens/s (30 steps) as before.
# HW_BENCH_PGBENCH=0 stops after the single-row and bulk figures.
# Memory over a long run (leaks): bench/serving_soak.sh.
# The model is trained for a few steps only: speed does not depend on how
# well it is trained.  Uses the server in PGHOST/PGPORT when set, else starts
# a throwaway cluster.  Prints figures; never decides pass/fail.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"
preset=${1:-small}
scale=${2:-2000}
secs=${3:-60}
nrows=${4:-10000}

hw_bench_cluster "${HW_BENCH_PORT:-54338}"
db=hw_bench_serving
q() { psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 "$@"; }
hw_bench_shop "$db" "$scale"
echo "machine load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OPENBLAS_CORETYPE of the server: ${OPENBLAS_CORETYPE:-unset (OpenBLAS picks by the processor)}"
echo "bulk requests (batch, table, into) on: headwater.serving_device = $(q -c "SELECT current_setting('headwater.serving_device', true)")"

# Training inside the worker: tokens/s as the worker measures it (the rate
# over the last second of steps), to compare with bench/bin/train_step.
res=$(q -c "SET client_min_messages = warning" -c "SELECT rt_train('shop', steps => 30, preset => '$preset', options => '{\"val_every\": 1000, \"checkpoint_every\": 1000}')")
echo "worker, preset $preset, 30 steps: $res"

q <<SQL
SET client_min_messages = warning;
-- the rows to predict: nrows orders (repeated when the shop has fewer)
CREATE TABLE bench_ids AS
  SELECT order_id FROM (SELECT order_id FROM shop.orders ORDER BY order_id) o, generate_series(1, 1 + $nrows / (SELECT count(*) FROM shop.orders)::int) g
  LIMIT $nrows;
-- first call of a session: loads the model
SELECT clock_timestamp() AS t0 \gset
SELECT rt_predict('order_status', 1) IS NULL AS warm \gset
SELECT format('first rt_predict of a session (model load), preset $preset: %s ms',
              round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric * 1000));
CREATE TEMP TABLE lat (ms float8);
DO \$\$
DECLARE t0 timestamptz; ids int[];
BEGIN
  SELECT array_agg(order_id ORDER BY order_id) INTO ids FROM (SELECT order_id FROM shop.orders ORDER BY order_id LIMIT 200) s;
  FOR i IN 1 .. array_length(ids, 1) LOOP
    t0 := clock_timestamp();
    PERFORM rt_predict('order_status', ids[i]);
    INSERT INTO lat VALUES (extract(epoch FROM clock_timestamp() - t0) * 1000);
  END LOOP;
END \$\$;
SELECT format('rt_predict, one row, preset $preset: p50 %s ms, p99 %s ms over %s calls',
              round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2),
              round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2), count(*)) FROM lat;
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS n FROM rt_predict_batch('order_status', (SELECT array_agg(order_id) FROM bench_ids)) \gset
SELECT format('rt_predict_batch, preset $preset: %s rows in %s s = %s rows/s', :n,
              round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 3),
              round(:n / extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric));
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS n FROM rt_predict_table('order_status', 'SELECT order_id FROM bench_ids LIMIT $nrows / 5') \gset
SELECT format('rt_predict_table, preset $preset: %s rows in %s s = %s rows/s', :n,
              round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 3),
              round(:n / extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric));
CREATE TABLE bench_preds (row_id text, obs_time timestamptz, prediction float8, label text, p_null float8, detail jsonb);
SELECT clock_timestamp() AS t0 \gset
SELECT rt_predict_into('order_status', 'SELECT order_id FROM bench_ids LIMIT $nrows / 5', 'bench_preds') AS n \gset
SELECT format('rt_predict_into, preset $preset: %s rows in %s s = %s rows/s', :n,
              round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 3),
              round(:n / extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric));
SQL

if [ "${HW_BENCH_PGBENCH:-1}" = 0 ]; then
	echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg) (pgbench part skipped: HW_BENCH_PGBENCH=0)"
	exit 0
fi

# pgbench: one rt_predict of a random order per transaction, 1, 8 and 32
# clients, without and with the serving worker
bash "$HW_ROOT/bench/serving_clients.sh" "$db" "preset $preset" "$secs" 1 8 32
echo "machine load after: $(cut -d' ' -f1-3 /proc/loadavg)"
