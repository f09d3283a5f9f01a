#!/usr/bin/env bash
# test/serving_shared.sh: a damaged shared model cache file is detected and
# rebuilt, never trusted and never a crash: bytes flipped inside (same
# length: the checksum), the file truncated, replaced by garbage, or made
# empty; also a directory that cannot be written (the session serves from a
# private copy with the same predictions) and stale temporary files of gone
# processes removed.  Each damage is done while no backend maps the file
# (the files are read-only: nothing of ours writes one a backend maps).
# Run by test/run_tests.sh against its throwaway cluster (PGHOST/PGPORT/
# PGUSER set; HW_CLUSTER_DIR = the cluster's directory).  Prints TAP-like
# lines and exits non-zero if any check fails.
set -uo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

db=hw_serving_shared
source "$(dirname "$0")/tap.sh"
dir="$HW_CLUSTER_DIR/data/pg_headwater/serving"
signals_before=$(grep -c "terminated by signal" "$HW_CLUSTER_DIR/server.log")

dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
q "SET client_min_messages = warning; CREATE EXTENSION headwater" >/dev/null
q "SELECT rt_demo_shop('shop', 150, 3)" >/dev/null
q "SELECT rt_create_model('shop', 'shop')" >/dev/null
q "SELECT rt_create_task('shop', 'status', anchor_table => 'orders', target_column => 'status')" >/dev/null
q "SELECT rt_train('shop', steps => 3, preset => 'tiny', options => '{\"checkpoint_every\": 1}')" >/dev/null
dbid=$(q "SELECT oid FROM pg_database WHERE datname = current_database()")
mid=$(q "SELECT model_id FROM headwater.model WHERE name = 'shop'")
# 40 predictions as one text (float8 output is exact), each from a new session
preds="SELECT string_agg(row_id || ':' || prediction || ':' || label || ':' || p_null, ',' ORDER BY row_id::int)
  FROM rt_predict_batch('status', (SELECT array_agg(order_id) FROM (SELECT order_id FROM shop.orders ORDER BY order_id LIMIT 40) o))"
private=$(psql -X -qAt -d "$db" -c "SET headwater.serving_shared_cache = off" -c "$preds" 2>&1)
first=$(q "$preds")
file=$(ls "$dir"/v*_d"${dbid}"_m"${mid}"_c*.hwsc 2>/dev/null | head -1)
expect "a prediction writes the cache file" $([ -n "$file" ] && [ -s "$file" ] && echo 1 || echo 0) "$(ls -l "$dir" 2>&1)"
expect "predictions through the file = a private load's" $([ "$first" = "$private" ] && echo 1 || echo 0) "$first / $private"
size=$(stat -c %s "$file")
mode=$(stat -c %a "$file")
expect "the file is read-only, for the server's user only (mode $mode)" $([ "$mode" = 400 ] && echo 1 || echo 0) "$mode"
dirmode=$(stat -c %a "$dir")
expect "its directory is the server user's only (mode $dirmode)" $([ "$dirmode" = 700 ] && echo 1 || echo 0) "$dirmode"

# damage FILE with a command, then a new session must predict the same and
# leave a whole, valid file of the original size behind
damaged() { # damaged "description" command...
	local what=$1 got logn
	shift
	"$@" 2>/dev/null
	logn=$(grep -c "removing the damaged shared model cache file" "$HW_CLUSTER_DIR/server.log")
	got=$(q "$preds")
	if [ "$got" = "$first" ] && [ "$(stat -c %s "$file" 2>/dev/null)" = "$size" ] && \
	   [ "$(grep -c "removing the damaged shared model cache file" "$HW_CLUSTER_DIR/server.log")" -gt "$logn" ]; then
		ok "$what: detected (LOG), rebuilt, same predictions"
	else
		not_ok "$what: detected (LOG), rebuilt, same predictions" "got ${got:0:200}; size $(stat -c %s "$file" 2>&1)"
	fi
}
flip() { # flips 16 bytes in the middle of the file, length unchanged
	chmod u+w "$file"
	printf 'XXXXXXXXXXXXXXXX' | dd of="$file" bs=1 seek=$((size / 2)) conv=notrunc status=none
}
damaged "bytes flipped in the middle (checksum)" flip
damaged "bytes flipped in the header" bash -c "chmod u+w '$file' && printf 'NOTHWSC!' | dd of='$file' bs=1 seek=0 conv=notrunc status=none"
damaged "truncated to half" bash -c "chmod u+w '$file' && truncate -s $((size / 2)) '$file'"
damaged "one byte appended" bash -c "chmod u+w '$file' && printf 'x' >> '$file'"
damaged "empty" bash -c "chmod u+w '$file' && : > '$file'"
damaged "garbage" bash -c "chmod u+w '$file' && head -c 100 /dev/urandom > '$file'"

# a stale temporary file of a process that is gone: removed at the next build
touch "$dir/tmp.999999.0.hwsc"
q "SELECT rt_train('shop', steps => 4, preset => 'tiny', options => '{\"restart\": true, \"checkpoint_every\": 1}')" >/dev/null
q "$preds" >/dev/null
expect "a stale temporary file is removed at the next file build" $([ ! -e "$dir/tmp.999999.0.hwsc" ] && echo 1 || echo 0) "$(ls "$dir")"
expect "one file of the model after the new checkpoint" \
	$([ "$(ls "$dir"/v*_d"${dbid}"_m"${mid}"_c*.hwsc | wc -l)" = 1 ] && echo 1 || echo 0) "$(ls "$dir")"

# a directory that cannot be written: served from a private copy, same
# predictions, a LOG line, no error
newpriv=$(psql -X -qAt -d "$db" -c "SET headwater.serving_shared_cache = off" -c "$preds" 2>&1)
rm -f "$dir"/v*_d"${dbid}"_m"${mid}"_c*.hwsc
chmod 500 "$dir"
got=$(q "$preds")
chmod 700 "$dir"
expect "an unwritable cache directory: same predictions from a private load" \
	$([ "$got" = "$newpriv" ] && echo 1 || echo 0) "${got:0:200}"

# the forward slots (serving_threads.c): every backend's slot says whether
# it is inside a forward; after a session's calls, and after a bulk call
# cancelled inside its forward, its slot must say none (0 threads) and give
# the end of its last forward
touch "$HW_CLUSTER_DIR"/data/pg_headwater/forward_slots_1     # as a server with another max_connections left it
out=$(psql -X -qAt -d "$db" -c "SELECT pg_backend_pid()" -c "$preds" -c "SELECT rt_predict('status', min(order_id)) IS NOT NULL FROM shop.orders" 2>&1)
pid=$(head -1 <<< "$out")
read -r threads ended <<< "$(slot_of "$pid")"
expect "a session's forward slot: its pid, no forward after its calls, an end time" \
	$([ "${threads:-x}" = 0 ] && [ "${ended:-0}" -gt 0 ] && echo 1 || echo 0) "slot of $pid: ${threads:-none} ${ended:-}"
expect "the slot file of another slot count is removed" \
	$([ ! -e "$HW_CLUSTER_DIR"/data/pg_headwater/forward_slots_1 ] && echo 1 || echo 0) "$(ls "$HW_CLUSTER_DIR"/data/pg_headwater)"
# a bulk call cancelled inside its forward (seen in its slot)
PGAPPNAME=hw_slot_test psql -X -qAt -d "$db" \
	-c "SELECT count(*) FROM rt_predict_batch('status', (SELECT array_agg(order_id) FROM shop.orders, generate_series(1, 200)))" \
	>/dev/null 2>&1 &
bg=$!
pid=""
threads=""
for _ in $(seq 1 300); do
	[ -z "$pid" ] && pid=$(q "SELECT pid FROM pg_stat_activity WHERE application_name = 'hw_slot_test'")
	[ -n "$pid" ] && read -r threads ended <<< "$(slot_of "$pid")" && [ "${threads:-0}" -gt 0 ] && break
	sleep 0.05
done
inside=${threads:-0}
q "SELECT pg_cancel_backend($pid)" >/dev/null
wait $bg
read -r threads ended <<< "$(slot_of "$pid")"
expect "a bulk call cancelled inside its forward ($inside threads) leaves none in its slot" \
	$([ "$inside" -gt 0 ] && [ "${threads:-x}" = 0 ] && echo 1 || echo 0) "slot of $pid: ${threads:-none} ${ended:-}; inside: $inside"

# the per-call lookups run from plans saved per session: in one session,
# a column added to and dropped from headwater.task between calls, then the
# extension dropped and created again, must give the same predictions and
# then the plain "does not exist" error (replanned, not a stale plan)
one=$(psql -X -qAt -d "$db" -v ON_ERROR_STOP=0 2>&1 <<SQL
$preds;
SET client_min_messages = warning;
ALTER TABLE headwater.task ADD COLUMN probe int;
$preds;
ALTER TABLE headwater.task DROP COLUMN probe;
$preds;
DROP EXTENSION headwater CASCADE;
CREATE EXTENSION headwater;
SELECT rt_predict('status', 1);
SQL
)
readarray -t lines <<< "$one"
expect "saved plans: the same predictions after headwater.task changed in the session" \
	$([ "${lines[0]}" = "$got" ] && [ "${lines[1]}" = "$got" ] && [ "${lines[2]}" = "$got" ] && echo 1 || echo 0) "${one:0:300}"
expect "saved plans: after DROP and CREATE EXTENSION in the session, the task is not found (no stale plan)" \
	$(echo "$one" | grep -q 'task "status" does not exist' && ! echo "$one" | grep -qi 'cache lookup\|could not open relation\|internal' && echo 1 || echo 0) "${one:0:400}"

if [ "$(grep -c "terminated by signal" "$HW_CLUSTER_DIR/server.log")" -gt "$signals_before" ]; then
	not_ok "no backend was terminated by a signal (no crash)" "$(grep "terminated by signal" "$HW_CLUSTER_DIR/server.log" | tail -3)"
else
	ok "no backend was terminated by a signal (no crash)"
fi

dropdb "$db"
tap_finish
