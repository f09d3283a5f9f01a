#!/usr/bin/env bash
# test/serving_worker.sh: the serving worker (headwater.serving_worker)
# under concurrent sessions: 8 sessions predicting 30 rows each at once get,
# each, the answers a session computes alone (bit for bit); the worker
# batched rows of several sessions into one forward; a session cancelled
# while it waits leaves the worker serving the others; no process crashed.
# Run by test/run_tests.sh against its throwaway cluster (PGHOST/PGPORT/
# PGUSER set; HW_CLUSTER_DIR = the cluster's directory).  Prints TAP-like
# lines and exits non-zero if any check fails.
set -uo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

db=hw_serving_worker
source "$(dirname "$0")/tap.sh"
signals_before=$(grep -c "terminated by signal" "$HW_CLUSTER_DIR/server.log")
tmp=$(mktemp -d /tmp/hw_serving_worker.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
q "SET client_min_messages = warning; CREATE EXTENSION headwater" >/dev/null
q "SELECT rt_demo_shop('shop', 200, 5)" >/dev/null
q "SELECT rt_create_model('shop', 'shop')" >/dev/null
q "SELECT rt_create_task('shop', 'status', anchor_table => 'orders', target_column => 'status')" >/dev/null
q "SELECT rt_train('shop', steps => 3, preset => 'tiny', options => '{\"checkpoint_every\": 1}')" >/dev/null

# session k predicts orders k, k+8, k+16, ... (30 of them), one call each;
# the output is exact text (float8 prints every bit)
preds() { # preds k worker(on|off)
	psql -X -qAt -d "$db" -c "SET headwater.serving_worker = $2" \
		-c "SET headwater.serving_worker_window_ms = 20" -c "SET headwater.serving_worker_idle_s = 600" \
		-c "SELECT string_agg(order_id || ':' || rt_predict('status', order_id) || ':' || rt_predict_label('status', order_id), ',' ORDER BY order_id)
		    FROM (SELECT order_id FROM shop.orders ORDER BY order_id OFFSET $1 LIMIT 240) o WHERE (order_id - $1) % 8 = 0" 2>&1
}
for k in $(seq 0 7); do preds "$k" off > "$tmp/alone_$k"; done
for k in $(seq 0 7); do preds "$k" on > "$tmp/worker_$k" & done
wait
same=1
for k in $(seq 0 7); do
	cmp -s "$tmp/alone_$k" "$tmp/worker_$k" || { same=0; echo "# session $k: $(head -c 200 "$tmp/worker_$k")"; }
done
expect "8 concurrent sessions through the worker = each session alone, bit for bit" $same ""
stats=$(q "SELECT \"rows\" || ' ' || batches FROM rt_serving_workers()")
read -r rows batches <<< "${stats:-0 0}"
expect "the worker answered the rows ($rows of $((8 * 30 * 2)) calls; the rest ran in their sessions)" \
	$([ "$rows" -ge $((8 * 30)) ] && echo 1 || echo 0) "$stats"
expect "rows of several sessions shared forwards ($rows rows in $batches forwards)" \
	$([ "$batches" -gt 0 ] && [ "$batches" -lt "$rows" ] && echo 1 || echo 0) "$stats"
# the worker's forwards are announced to the sessions (its forward slot:
# an end time, no forward in flight once the sessions are done)
wpid=$(q "SELECT pid FROM rt_serving_workers() LIMIT 1")
read -r threads ended <<< "$(slot_of "$wpid")"
expect "the worker's forward slot: no forward now, an end time" \
	$([ "${threads:-x}" = 0 ] && [ "${ended:-0}" -gt 0 ] && echo 1 || echo 0) "slot of $wpid: ${threads:-none} ${ended:-}"

# a session cancelled while it waits: the worker goes on serving the others
psql -X -qAt -d "$db" -c "SET headwater.serving_worker = on" \
	-c "SELECT count(rt_predict('status', order_id)) FROM shop.orders, generate_series(1, 50)" > "$tmp/cancelled" 2>&1 &
sleep 1
q "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = '$db' AND query LIKE '%generate_series(1, 50)%' AND pid <> pg_backend_pid()" >/dev/null
wait
expect "the cancelled session reports the cancel" $(grep -q "canceling statement" "$tmp/cancelled" && echo 1 || echo 0) \
	"$(cat "$tmp/cancelled")"
preds 3 on > "$tmp/after_cancel"
expect "after the cancel the worker serves the same answers" $(cmp -s "$tmp/alone_3" "$tmp/after_cancel" && echo 1 || echo 0) \
	"$(head -c 200 "$tmp/after_cancel")"
check "the worker is still the one serving" "SELECT count(*) = 1 AND bool_and(state = 'ready') FROM rt_serving_workers()"

q "SELECT pg_terminate_backend(pid) FROM rt_serving_workers()" >/dev/null
signals_after=$(grep -c "terminated by signal" "$HW_CLUSTER_DIR/server.log")
expect "no server process crashed" $([ "$signals_after" -eq "$signals_before" ] && echo 1 || echo 0) \
	"$(grep "terminated by signal" "$HW_CLUSTER_DIR/server.log" | tail -3)"
dropdb --if-exists "$db" >/dev/null 2>&1
tap_finish
