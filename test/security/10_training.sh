# test/security/10_training.sh: a hostile neighbour against training
# (docs/security.md, "Limits on training").  Sourced by test/security.sh:
# q, as, expect, check, wait_for, $db and the roles come from there.
# Its own two models of hw_owner (t10a, t10b), tiny preset, few steps.

as hw_owner "SELECT rt_create_model('t10a', 'shop'); SELECT rt_create_model('t10b', 'shop')" >/dev/null
as hw_owner "SELECT rt_create_task('t10a', 'status10a', anchor_table => 'orders', target_column => 'status')" >/dev/null
as hw_owner "SELECT rt_create_task('t10b', 'status10b', anchor_table => 'orders', target_column => 'status')" >/dev/null
mid=$(q "SELECT model_id FROM headwater.model WHERE name = 't10a'")
long="steps => 100000, preset => 'tiny', options => '{\"checkpoint_every\": 100000, \"val_every\": 100000, \"batch_size\": 4, \"seq_len\": 32}'"
no_worker="SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')"
worker_of() { echo "SELECT j.pid FROM headwater.job j JOIN headwater.model m USING (model_id)
                    WHERE m.name = '$1' AND j.state = 'running' ORDER BY j.job_id DESC LIMIT 1"; }
last_job() { echo "SELECT j.job_id FROM headwater.job j JOIN headwater.model m USING (model_id)
                   WHERE m.name = '$1' ORDER BY j.job_id DESC LIMIT 1"; }

# 1. Advisory locks SQL can build do not touch training's locks: mallory
#    holds (26743, id), the old training lock (the owner's rt_train failed
#    55006 "already being trained"), then (26744, id), the old launch lock
#    (rt_train hung; here it would hit lock_timeout).
for cls in 26743 26744; do
	psql -X -qAt -U hw_mallory -d "$db" -c "SELECT pg_advisory_lock($cls, $mid)" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
	wait_for "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_roles r ON r.rolname = 'hw_mallory'
	          JOIN pg_stat_activity a ON a.pid = l.pid AND a.usesysid = r.oid
	          WHERE l.locktype = 'advisory' AND l.classid = $cls AND l.objid = $mid AND l.granted)" 10
	res=$(psql -X -qAt -U hw_owner -d "$db" -c "SET lock_timeout = '5s'" \
		-c "SELECT rt_train('t10a', steps => 2, preset => 'tiny', options => '{\"restart\": true}')" 2>&1)
	expect "mallory's pg_advisory_lock($cls, model id) neither blocks nor refuses the owner's rt_train" \
		$([[ $res == *'"state": "succeeded"'* ]] && echo 1 || echo 0) "$res"
	q "SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a WHERE a.usename = 'hw_mallory'" >/dev/null
	wait $!
done

# 2. The rank stall is a superuser-only setting, not an rt_train option.
res=$(psql -X -qAt -U hw_mallory -d "$db" -c "SELECT rt_version()" -c "SET headwater.debug_rank_stall_ms = 60000" 2>&1)
expect "a non-superuser cannot set headwater.debug_rank_stall_ms" \
	$([[ $res == *'permission denied to set parameter'* ]] && echo 1 || echo 0) "$res"
res=$(as hw_owner "SELECT rt_train('t10a', steps => 2, preset => 'tiny', options => '{\"debug_rank_stall_ms\": 60000}')")
expect "rt_train rejects debug_rank_stall_ms as an unknown option" \
	$([[ $res == *'unknown rt_train option "debug_rank_stall_ms"'* ]] && echo 1 || echo 0) "$res"

# 3. The per-role cap: with 1 job allowed, the owner's second concurrent job
#    is refused (53400) naming the setting, the role and its count.
q "ALTER ROLE hw_owner SET headwater.max_training_workers_per_role = 1" >/dev/null
as hw_owner "SELECT rt_train('t10a', $long, wait => false)" >/dev/null
wait_for "SELECT EXISTS ($(worker_of t10a))" 30
res=$(psql -X -qAt -U hw_owner -d "$db" -v VERBOSITY=verbose \
	-c "SELECT rt_train('t10b', steps => 2, preset => 'tiny', wait => false)" 2>&1)
expect "per-role cap: the second concurrent job of a role is refused (53400), naming the limit" \
	$([[ $res == *53400* && $res == *'role "hw_owner" already runs 1 training job'* &&
	     $res == *'headwater.max_training_workers_per_role = 1'* && $res == *rt_cancel* ]] && echo 1 || echo 0) "$res"
as hw_owner "SELECT rt_cancel('t10a')" >/dev/null
wait_for "$no_worker" 30
q "ALTER ROLE hw_owner RESET headwater.max_training_workers_per_role" >/dev/null

# 4. rt_drop_model while a job of the model runs is refused; a query cancel
#    of the worker is an rt_cancel (cancelled, with a checkpoint); then the
#    drop goes through.
as hw_owner "SELECT rt_train('t10b', $long, wait => false)" >/dev/null
wait_for "SELECT coalesce((SELECT step >= 2 FROM headwater.job WHERE job_id = ($(last_job t10b))), false)" 60
res=$(psql -X -qAt -U hw_owner -d "$db" -v VERBOSITY=verbose -c "SELECT rt_drop_model('t10b')" 2>&1)
expect "rt_drop_model during a job is refused (55006) with the way out" \
	$([[ $res == *55006* && $res == *'a training job of the model is running'* && $res == *rt_cancel* ]] &&
	  [ "$(q "SELECT count(*) FROM headwater.model WHERE name = 't10b'")" = 1 ] && echo 1 || echo 0) "$res"
q "SELECT pg_cancel_backend(($(worker_of t10b)))" >/dev/null
wait_for "$no_worker" 30
check "pg_cancel_backend of a worker: job cancelled with a checkpoint" \
	"SELECT j.state = 'cancelled' AND EXISTS (SELECT 1 FROM headwater.checkpoint c WHERE c.job_id = j.job_id)
	 FROM headwater.job j WHERE j.job_id = ($(last_job t10b))"
res=$(as hw_owner "SELECT rt_drop_model('t10b')")
expect "rt_drop_model once the job has stopped" \
	$([[ $res != *ERROR* ]] && [ "$(q "SELECT count(*) FROM headwater.model WHERE name = 't10b'")" = 0 ] && echo 1 || echo 0) "$res"

# 5. pg_terminate_backend on a worker whose late rank stalls (60 s a step,
#    rank_timeout a day) ends it within seconds.
q "SET headwater.debug_rank_stall_ms = 60000;
   SELECT rt_train('t10a', steps => 100, preset => 'tiny', wait => false,
                   options => '{\"restart\": true, \"ranks\": 2, \"rank_timeout\": 86400, \"threads\": 2, \"batch_size\": 4, \"seq_len\": 32}')" >/dev/null
wait_for "SELECT EXISTS (SELECT 1 FROM headwater.rendezvous WHERE job_id = ($(last_job t10a)))" 30
sleep 1.5
stalled=$(q "SELECT step FROM headwater.job WHERE job_id = ($(last_job t10a))")
t0=$(date +%s.%N)
q "SELECT pg_terminate_backend(($(worker_of t10a)))" >/dev/null
wait_for "$no_worker" 60
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
expect "pg_terminate_backend ends a stalled data-parallel worker within 3 s (took ${took} s)" \
	$([ "$stalled" = 0 ] && awk -v t="$took" 'BEGIN { exit !(t < 3) }' &&
	  [ "$(q "SELECT state = 'failed' AND error LIKE '%terminated%' FROM headwater.job WHERE job_id = ($(last_job t10a))")" = t ] &&
	  echo 1 || echo 0) "step when terminated: $stalled; $(q "SELECT state, error FROM headwater.job WHERE job_id = ($(last_job t10a))")"
as hw_owner "SELECT rt_drop_model('t10a')" >/dev/null
