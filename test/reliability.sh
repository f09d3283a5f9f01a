#!/usr/bin/env bash
# test/reliability.sh: training survives kills, restarts and cancels; bad
# options and concurrent calls are refused at call time.
# Run by test/run_tests.sh against its throwaway cluster (PGHOST/PGPORT/PGUSER
# set; HW_CLUSTER_DIR = the cluster's directory, for the restart test).
# Prints TAP-like lines and exits non-zero if any check fails.
set -uo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

db=hw_reliability
source "$(dirname "$0")/tap.sh"
json_int() { # json_int KEY TEXT: the integer value of "KEY": N in TEXT, or -1
	if [[ $2 =~ \"$1\":\ *(-?[0-9]+) ]]; then echo "${BASH_REMATCH[1]}"; else echo -1; fi
}

dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
q "CREATE EXTENSION headwater" >/dev/null
q "SELECT rt_demo_shop('shop', 200)" >/dev/null
q "SELECT rt_create_model('shop', 'shop')" >/dev/null
q "SELECT rt_create_task('shop', 'order_status', anchor_table => 'orders', target_column => 'status')" >/dev/null
long="steps => 100000, preset => 'tiny', options => '{\"checkpoint_every\": 5, \"val_every\": 1000}'"

# 1. pg_terminate_backend on the worker: job failed with the reason,
#    last checkpoint intact, the next rt_train resumes from it.
q "SELECT rt_train('shop', $long, wait => false)" >/dev/null
wait_for "SELECT EXISTS (SELECT 1 FROM headwater.checkpoint WHERE step >= 10)" 120 \
	|| not_ok "training reached a checkpoint at step 10" "$(q 'SELECT * FROM rt_status()')"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'headwater training'" >/dev/null
wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 30
check "terminated worker: job marked failed with the reason" \
	"SELECT state = 'failed' AND error LIKE '%terminated%' FROM rt_status('shop') ORDER BY job_id DESC LIMIT 1"
ck=$(q "SELECT max(step) FROM headwater.checkpoint")
check "terminated worker: its checkpoints are intact" \
	"SELECT count(*) > 0 AND bool_and(EXISTS (SELECT 1 FROM headwater.checkpoint_state s WHERE s.checkpoint_id = c.checkpoint_id)) FROM headwater.checkpoint c"
res=$(q "SELECT rt_train('shop', steps => $((ck + 5)), preset => 'tiny')")
expect "rt_train after a kill resumes from the last checkpoint (step $ck -> $((ck + 5)))" \
	$([ "$(json_int steps_done "$res")" = $((ck + 5)) ] && [ "$(json_int resumed_from "$res")" = "$ck" ] && echo 1 || echo 0) "$res"

# 2. A cancelled caller (statement_timeout) makes the worker checkpoint and
#    stop; no orphan worker stays behind.
before=$(q "SELECT count(*) FROM headwater.checkpoint")
err=$(psql -X -qAt -d "$db" -c "SET statement_timeout = '3s'" -c "SELECT rt_train('shop', $long)" 2>&1)
if grep -q "asked to write a checkpoint and stop" <<< "$err"; then ok "cancelled caller: the error says the worker checkpoints and stops"
else not_ok "cancelled caller: the error says the worker checkpoints and stops" "$err"; fi
wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 30
check "cancelled caller: no orphan worker" \
	"SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')"
check "cancelled caller: job cancelled and a checkpoint written" \
	"SELECT (SELECT state FROM rt_status('shop') ORDER BY job_id DESC LIMIT 1) = 'cancelled' AND count(*) > $before FROM headwater.checkpoint"

# 2b. A caller whose session dies (connection lost, backend terminated)
#     leaves no orphan: the worker checkpoints and stops.
psql -X -qAt -d "$db" -c "SELECT rt_train('shop', $long)" >/dev/null 2>&1 &
wait_for "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 60
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT rt_train(%' AND backend_type = 'client backend' AND pid <> pg_backend_pid()" >/dev/null
wait
if wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 60; then
	ok "caller's session killed: the worker stops"
else
	not_ok "caller's session killed: the worker stops" "$(q 'SELECT * FROM rt_status()')"
fi
check "caller's session killed: job cancelled (after a checkpoint)" \
	"SELECT state = 'cancelled' FROM rt_status('shop') ORDER BY job_id DESC LIMIT 1"

# 3. Concurrent rt_train on the same model is refused with the job's name.
q "SELECT rt_train('shop', $long, wait => false)" >/dev/null
wait_for "SELECT EXISTS (SELECT 1 FROM rt_status('shop') WHERE state = 'running')" 30
err=$(q "SELECT rt_train('shop', steps => 10, preset => 'tiny')")
if grep -q "already being trained by job" <<< "$err"; then ok "concurrent rt_train refused"
else not_ok "concurrent rt_train refused" "$err"; fi
q "SELECT rt_cancel('shop')" >/dev/null
wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 30
check "rt_cancel: job cancelled" "SELECT state = 'cancelled' FROM rt_status('shop') ORDER BY job_id DESC LIMIT 1"

# 4. pg_ctl restart -m immediate mid-training: logged state intact, the
#    UNLOGGED batch table usable again, training resumes.
if [ -n "${HW_CLUSTER_DIR:-}" ]; then
	q "SELECT rt_train('shop', $long, wait => false)" >/dev/null
	wait_for "SELECT EXISTS (SELECT 1 FROM headwater.checkpoint WHERE job_id = (SELECT max(job_id) FROM headwater.job) AND step > 0)" 120
	ck=$(q "SELECT max(step) FROM headwater.checkpoint")
	nck=$(q "SELECT count(*) FROM headwater.checkpoint")
	hw_as_owner "$HW_PG_BINDIR/pg_ctl" -D "$HW_CLUSTER_DIR/data" -m immediate -w restart -l "$HW_CLUSTER_DIR/server.log" >/dev/null 2>&1
	wait_for "SELECT true" 60
	check "crash restart: checkpoints intact" "SELECT count(*) >= $nck FROM headwater.checkpoint"
	check "crash restart: the vanished job shows as failed" \
		"SELECT state = 'failed' FROM rt_status('shop') ORDER BY job_id DESC LIMIT 1"
	check "crash restart: rt_sample_batches works on the UNLOGGED batch table" \
		"SELECT count(*) = 1 FROM rt_sample_batches('shop', 'order_status', n => 1, batch_size => 2, seq_len => 64)"
	# the worker may write checkpoints between the read of ck above and the
	# crash: resume from what the crash left (a race seen on a fast host)
	ck=$(q "SELECT max(step) FROM headwater.checkpoint")
	res=$(q "SELECT rt_train('shop', steps => $((ck + 5)), preset => 'tiny')")
	expect "crash restart: rt_train resumes" \
		$([ "$(json_int steps_done "$res")" = $((ck + 5)) ] && [ "$(json_int resumed_from "$res")" -ge "$ck" ] && echo 1 || echo 0) "$res"
fi

# 5. A role without SELECT on a source table cannot train on it, even as a
#    member of the model's owner role; a role that does not own the model
#    cannot train it at all.
q "DROP ROLE IF EXISTS hw_noread" >/dev/null
q "DROP ROLE IF EXISTS hw_modelers" >/dev/null
q "CREATE ROLE hw_modelers; CREATE ROLE hw_noread LOGIN IN ROLE hw_modelers;
   GRANT USAGE ON SCHEMA shop TO hw_modelers; GRANT SELECT ON ALL TABLES IN SCHEMA shop TO hw_modelers" >/dev/null
q "SET ROLE hw_modelers; SELECT rt_create_model('shop_nr', 'shop')" >/dev/null
q "SET ROLE hw_modelers; SELECT rt_create_task('shop_nr', 'order_status_nr', anchor_table => 'orders', target_column => 'status')" >/dev/null
q "REVOKE SELECT ON shop.orders FROM hw_modelers" >/dev/null
err=$(psql -X -qAt -U hw_noread -d "$db" -c "SELECT rt_train('shop_nr', steps => 10, preset => 'tiny')" 2>&1)
if grep -q 'cannot SELECT from shop.orders' <<< "$err"; then ok "a role without SELECT cannot train"
else not_ok "a role without SELECT cannot train" "$err"; fi
err=$(psql -X -qAt -U hw_noread -d "$db" -c "SELECT rt_train('shop', steps => 10, preset => 'tiny')" 2>&1)
if grep -q 'may not train model "shop"' <<< "$err"; then ok "a role that does not own the model cannot train it"
else not_ok "a role that does not own the model cannot train it" "$err"; fi
q "SELECT rt_drop_model('shop_nr')" >/dev/null

# 6. An absurd option is refused by the call (22023, naming it) and never
#    reaches a worker: threads 100000 used to crash the worker and make the
#    postmaster restart every process.  A crash restart keeps the
#    postmaster's PID but replaces its children (the checkpointer).
wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 30
ckpt_before=$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
pm_before=$(q "SELECT pg_postmaster_start_time()")
[ -n "${HW_CLUSTER_DIR:-}" ] && pm_pid_before=$(head -1 "$HW_CLUSTER_DIR/data/postmaster.pid")
err=$(psql -X -qAt -v VERBOSITY=verbose -d "$db" \
	-c "SELECT rt_train('shop', steps => 1, preset => 'tiny', options => '{\"threads\": 100000}')" 2>&1)
if grep -q '22023: invalid value for rt_train option "threads": 100000' <<< "$err" && grep -q 'HINT: .*0 to 1024' <<< "$err"; then
	ok "threads 100000: refused at call time (22023, the option, the value, the range)"
else
	not_ok "threads 100000: refused at call time (22023, the option, the value, the range)" "$err"
fi
sleep 1
expect "threads 100000: no crash restart (postmaster and checkpointer unchanged)" \
	$([ "$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")" = "$ckpt_before" ] &&
	  [ "$(q "SELECT pg_postmaster_start_time()")" = "$pm_before" ] &&
	  { [ -z "${HW_CLUSTER_DIR:-}" ] || [ "$(head -1 "$HW_CLUSTER_DIR/data/postmaster.pid")" = "$pm_pid_before" ]; } &&
	  echo 1 || echo 0) "checkpointer $ckpt_before -> $(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")"

# 7. Three concurrent rt_train(wait => false) on one model: exactly one
#    starts; the others get 55006 at call time, naming the running job, and
#    no job fails.
out=$(mktemp -d)
last_job=$(q "SELECT coalesce(max(job_id), 0) FROM headwater.job")
# connected first, then all three call at the same instant
at=$(q "SELECT (clock_timestamp() + interval '1.5 s')::text")
for i in 1 2 3; do
	psql -X -qAt -v VERBOSITY=verbose -d "$db" \
		-c "SELECT pg_sleep(greatest(0, extract(epoch FROM '$at'::timestamptz - clock_timestamp())))" \
		-c "SELECT rt_train('shop', $long, wait => false)" >"$out/$i" 2>&1 &
done
wait
running=$(q "SELECT string_agg(job_id::text, ',') FROM headwater.job WHERE job_id > $last_job")
started=$(grep -l '"state": "running"' "$out"/? | wc -l)
refused=$(grep -l "55006: model \"shop\" is already being trained by job $running\$" "$out"/? | wc -l)
expect "concurrent rt_train: exactly one starts (job $running)" \
	$([ "$started" -eq 1 ] && [[ $running =~ ^[0-9]+$ ]] && echo 1 || echo 0) "$(cat "$out"/?)"
expect "concurrent rt_train: the other two get 55006 naming job $running" \
	$([ "$refused" -eq 2 ] && grep -q "HINT:  Wait for it with rt_wait($running)" "$out"/? && echo 1 || echo 0) "$(cat "$out"/?)"
check "concurrent rt_train: one worker trains and no job failed" \
	"SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'headwater training') = 1
	    AND NOT EXISTS (SELECT 1 FROM headwater.job WHERE job_id > $last_job AND state = 'failed')"
rm -rf "$out"
q "SELECT rt_cancel('shop')" >/dev/null
wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 30

# 8. Data parallel, two rank threads (docs/distributed.md): rt_cancel stops
#    every rank after a checkpoint of rank 0, and the run resumes with two
#    ranks; pg_terminate_backend mid-run stops the worker and its rank
#    threads, the job and its ranks (headwater.rendezvous) are failed.
dp="preset => 'tiny', options => '{\"checkpoint_every\": 5, \"val_every\": 1000, \"ranks\": 2, \"batch_size\": 4, \"seq_len\": 64}'"
q "SELECT rt_train('shop', steps => 100000, $dp, wait => false)" >/dev/null
wait_for "SELECT EXISTS (SELECT 1 FROM headwater.checkpoint WHERE job_id = (SELECT max(job_id) FROM headwater.job) AND step > 0)" 120 \
	|| not_ok "data parallel: training reached a checkpoint" "$(q 'SELECT * FROM rt_status()')"
q "SELECT rt_cancel('shop')" >/dev/null
wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 60
check "data parallel, rt_cancel: job and both ranks cancelled, checkpointed at the stop" \
	"SELECT j.state = 'cancelled'
	        AND (SELECT string_agg(r.state, ',' ORDER BY r.rank) FROM headwater.rendezvous r WHERE r.job_id = j.job_id) = 'cancelled,cancelled'
	        AND (SELECT max(c.step) FROM headwater.checkpoint c WHERE c.job_id = j.job_id) = j.step
	 FROM headwater.job j ORDER BY j.job_id DESC LIMIT 1"
ck=$(q "SELECT step FROM headwater.job ORDER BY job_id DESC LIMIT 1")
res=$(q "SELECT rt_train('shop', steps => $((ck + 3)), $dp)")
expect "data parallel: rt_train resumes the cancelled run with two ranks ($ck -> $((ck + 3)))" \
	$([ "$(json_int steps_done "$res")" = $((ck + 3)) ] && [ "$(json_int resumed_from "$res")" = "$ck" ] &&
	  [ "$(json_int ranks "$res")" = 2 ] && echo 1 || echo 0) "$res"
q "SELECT rt_train('shop', steps => 100000, $dp, wait => false)" >/dev/null
wait_for "SELECT EXISTS (SELECT 1 FROM headwater.job j WHERE j.job_id = (SELECT max(job_id) FROM headwater.job) AND j.step > $((ck + 3)))" 120 \
	|| not_ok "data parallel: the second run trains" "$(q 'SELECT * FROM rt_status()')"
q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'headwater training'" >/dev/null
if wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 30; then
	ok "data parallel, terminated worker: it stops with its rank threads"
else
	not_ok "data parallel, terminated worker: it stops with its rank threads" "$(q 'SELECT * FROM rt_status()')"
fi
check "data parallel, terminated worker: job and both ranks failed" \
	"SELECT j.state = 'failed' AND j.error LIKE '%terminated%'
	        AND (SELECT string_agg(r.state, ',' ORDER BY r.rank) FROM headwater.rendezvous r WHERE r.job_id = j.job_id) = 'failed,failed'
	 FROM headwater.job j ORDER BY j.job_id DESC LIMIT 1"

dropdb "$db" >/dev/null 2>&1
psql -X -qAt -d postgres -c "DROP ROLE IF EXISTS hw_noread" -c "DROP ROLE IF EXISTS hw_modelers" >/dev/null 2>&1
tap_finish
