#!/usr/bin/env bash
# bench/serving_threads.sh: rt_predict_batch on the OpenMP team vs on one
# thread (GUC headwater.serving_threads), to see what the machine's other
# load does to a multi-batch request (docs/BENCHMARKS.md, soak section).
#
#   bash bench/serving_threads.sh [preset=tiny] [scale=300] [reps=3]
#
# Trains 3 steps on the demo shop's order_status, then times
# rt_predict_batch of 16 rows (one batch: always one thread), 17 rows (two
# batches) and 10 batches' worth, each `reps` times, with
# serving_threads = 0 (every CPU, the default) and = 1.  Prints the load
# average beside the figures: run it on an idle machine and beside a
# training job to compare.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"
preset=${1:-tiny}
scale=${2:-300}
reps=${3:-3}
hw_bench_cluster "${HW_BENCH_PORT:-54340}"
hw_bench_shop hw_bench_threads "$scale"
psql -X -q -At -d hw_bench_threads -v ON_ERROR_STOP=1 -o /dev/null -c "SET client_min_messages = warning" \
	-c "SELECT rt_train('shop', steps => 3, preset => '$preset')"
B=$(psql -X -q -At -d hw_bench_threads -c "SELECT CASE '$preset' WHEN 'tiny' THEN 16 ELSE 32 END")
echo "serving_threads bench: preset $preset (B = $B), scale $scale, $(nproc) CPUs, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %-8s %s\n' threads rows "ms per call (each rep)"
for threads in 0 1; do
	for n in $B $((B + 1)) $((10 * B)); do
		ms=$(psql -X -q -At -d hw_bench_threads -v ON_ERROR_STOP=1 -c "SET headwater.serving_threads = $threads" -c "
			SELECT count(*) FROM rt_predict_batch('order_status', (SELECT array_agg(order_id) FROM (SELECT order_id FROM shop.orders LIMIT $n) x));" -c "
			DO \$\$ DECLARE t0 timestamptz; o text := ''; BEGIN
				FOR i IN 1..$reps LOOP
					t0 := clock_timestamp();
					PERFORM count(*) FROM rt_predict_batch('order_status', (SELECT array_agg(order_id) FROM (SELECT order_id FROM shop.orders LIMIT $n) x));
					o := o || round(extract(epoch FROM clock_timestamp() - t0) * 1000) || ' ';
				END LOOP;
				RAISE NOTICE '%', o;
			END \$\$" 2>&1 | sed -n 's/^NOTICE: *//p')
		printf '%-8s %-8s %s\n' "$threads" "$n" "$ms"
	done
done
echo "end load $(cut -d' ' -f1-3 /proc/loadavg)"
