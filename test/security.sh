#!/usr/bin/env bash
# test/security.sh: a hostile role against headwater (docs/security.md).
# Run by test/run_tests.sh against its throwaway cluster (PGHOST/PGPORT/PGUSER
# = a superuser; HW_CLUSTER_DIR = the cluster's directory, for its log).
# One check per hole: privilege escalation through search_path (backend and
# training worker), SQL injection through names, access control for
# training, job control and serving, inputs that used to crash the server,
# and a bad-input sweep over every SQL function.  TAP-like output; exits
# non-zero if any check fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../scripts/lib.sh"
source "$here/tap.sh"

db=hw_security
log=${HW_CLUSTER_DIR:-}/server.log
crashes() { # lines of the server log that tell of a crashed server process
	local c=0
	[ -f "$log" ] && c=$(grep -cE 'terminated by signal|was terminated by exception|server process .* exited with exit code [^01]' "$log")
	echo "${c:-0}"
}
as() { # as ROLE SQL: run SQL as a login role (own connection, no superuser)
	local role=$1; shift
	psql -X -qAt -U "$role" -d "$db" -c "$1" 2>&1
}
is_super() { q "SELECT rolsuper FROM pg_roles WHERE rolname = '$1'"; }

crashes_before=$(crashes)
pm_pid_before=$(head -n 1 "${HW_CLUSTER_DIR:-/nonexistent}/data/postmaster.pid" 2>/dev/null)

qp() { psql -X -qAt -d postgres -c "$1" 2>&1; }
dropdb --if-exists "$db" >/dev/null 2>&1
for r in hw_owner hw_reader hw_mallory hw_group; do qp "DROP ROLE IF EXISTS $r" >/dev/null; done
createdb "$db"
q "CREATE EXTENSION headwater" >/dev/null
q "SELECT rt_demo_shop('shop', 200)" >/dev/null
q "CREATE ROLE hw_owner LOGIN PASSWORD 'owner-secret'; CREATE ROLE hw_reader LOGIN;
   CREATE ROLE hw_mallory LOGIN; CREATE ROLE hw_group NOLOGIN;
   GRANT USAGE ON SCHEMA shop TO hw_owner, hw_reader;
   GRANT SELECT ON ALL TABLES IN SCHEMA shop TO hw_owner;
   GRANT CREATE ON DATABASE $db TO hw_mallory, hw_owner" >/dev/null
# the owner's model, trained a little (tiny preset)
as hw_owner "SELECT rt_create_model('shop', 'shop')" >/dev/null
as hw_owner "SELECT rt_create_task('shop', 'order_status', anchor_table => 'orders', target_column => 'status')" >/dev/null
res=$(as hw_owner "SELECT rt_train('shop', steps => 4, preset => 'tiny', options => '{\"val_every\": 2, \"checkpoint_every\": 2}')")
expect "setup: the owner trains its model" $([[ $res == *steps_done* ]] && echo 1 || echo 0) "$res"

# --------------------------------------------------------------------------
# 1. search_path hijack: an operator in a schema of the caller's that shadows
#    pg_catalog's would run as the extension owner in owner-context SQL.
q "CREATE SCHEMA mal AUTHORIZATION hw_mallory; CREATE SCHEMA maldata AUTHORIZATION hw_mallory" >/dev/null
as hw_mallory "
CREATE FUNCTION mal.escalate() RETURNS bool LANGUAGE plpgsql AS \$\$
BEGIN
	BEGIN EXECUTE 'ALTER ROLE hw_mallory SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
	RETURN true;
END \$\$;
CREATE FUNCTION mal.eq_text(text, text) RETURNS bool LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM mal.escalate(); RETURN \$1 OPERATOR(pg_catalog.=) \$2; END \$\$;
CREATE FUNCTION mal.eq_int(int, int) RETURNS bool LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM mal.escalate(); RETURN \$1 OPERATOR(pg_catalog.=) \$2; END \$\$;
CREATE FUNCTION mal.eq_bigint(bigint, bigint) RETURNS bool LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM mal.escalate(); RETURN \$1 OPERATOR(pg_catalog.=) \$2; END \$\$;
CREATE OPERATOR mal.= (LEFTARG = text, RIGHTARG = text, FUNCTION = mal.eq_text);
CREATE OPERATOR mal.= (LEFTARG = int, RIGHTARG = int, FUNCTION = mal.eq_int);
CREATE OPERATOR mal.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = mal.eq_bigint);
CREATE TABLE maldata.person (id int PRIMARY KEY, age int, score float8);
CREATE TABLE maldata.visit (id int PRIMARY KEY, person_id int REFERENCES maldata.person, n int);
INSERT INTO maldata.person SELECT g, 20 + g % 50, (g % 7)::float8 FROM generate_series(1, 60) g;
INSERT INTO maldata.visit SELECT g, 1 + g % 60, g % 5 FROM generate_series(1, 240) g;" >/dev/null
hijack="SET search_path = mal, pg_catalog;"
for call in "SELECT * FROM public.rt_status()" "SELECT * FROM public.rt_status('shop')" "SELECT * FROM public.rt_tasks('shop')" \
            "SELECT public.rt_predict('shop.order_status', 1)" "SELECT public.rt_cancel('shop')" "SELECT public.rt_wait(1)" \
            "SELECT * FROM public.rt_describe('shop')" "SELECT public.rt_grant_predict('shop', 'hw_mallory')"; do
	as hw_mallory "$hijack $call" >/dev/null
done
expect "search_path hijack in a backend: the role stays non-superuser" \
	$([ "$(is_super hw_mallory)" = f ] && echo 1 || echo 0) "hw_mallory rolsuper = $(is_super hw_mallory)"
# the same operator on the caller's own model, through every owner-context path
out=$(as hw_mallory "$hijack
	SELECT public.rt_create_model('malm', 'maldata') IS NOT NULL;
	SELECT public.rt_create_task('malm', 'mal_score', anchor_table => 'person', target_column => 'score') IS NOT NULL;
	SELECT count(*) >= 0 FROM public.rt_describe('malm');
	SELECT count(*) >= 0 FROM public.rt_tasks('malm');
	SELECT public.rt_refresh('malm') IS NOT NULL;")
expect "search_path hijack: the caller's own model builds under the pinned path" \
	$([[ $out != *ERROR* ]] && echo 1 || echo 0) "$out"
expect "search_path hijack on the role's own model (create, describe, refresh): still non-superuser" \
	$([ "$(is_super hw_mallory)" = f ] && echo 1 || echo 0) "hw_mallory rolsuper = $(is_super hw_mallory)"
# the training worker connects as the role and inherits its role-level settings
q "ALTER ROLE hw_mallory SET search_path = mal, pg_catalog" >/dev/null
out=$(as hw_mallory "SELECT public.rt_train('malm', steps => 3, preset => 'tiny', options => '{\"val_every\": 2, \"checkpoint_every\": 2}')")
expect "search_path hijack: the worker trains the role's model" $([[ $out == *steps_done* ]] && echo 1 || echo 0) "$out"
as hw_mallory "SELECT public.rt_predict('mal_score', 1); SELECT * FROM public.rt_evaluate('mal_score')" >/dev/null
expect "search_path hijack in the training worker and serving: the role stays non-superuser" \
	$([ "$(is_super hw_mallory)" = f ] && echo 1 || echo 0) "hw_mallory rolsuper = $(is_super hw_mallory)"
q "ALTER ROLE hw_mallory RESET search_path" >/dev/null

# --------------------------------------------------------------------------
# 2. SQL injection through names: a model name that is a SQL fragment.
evil="x' || (SELECT string_agg(rolname || ':' || coalesce(rolpassword, ''), ',') FROM pg_authid) || '"
evil_sql=${evil//\'/\'\'}
out=$(as hw_mallory "SELECT rt_create_model('$evil_sql', 'maldata')" 2>&1)
expect "injection: a model name with quotes is just a name" $([[ $out != *ERROR* ]] && echo 1 || echo 0) "$out"
as hw_mallory "SELECT rt_create_task('$evil_sql', 'evil_task', anchor_table => 'person', target_column => 'age')" >/dev/null
out=$(as hw_mallory "SELECT rt_train('$evil_sql', steps => 2, preset => 'tiny', wait => false)"; sleep 2
      as hw_mallory "SELECT rt_train('$evil_sql', steps => 2, preset => 'tiny', wait => false)"
      as hw_mallory "SELECT * FROM rt_status('$evil_sql')"
      as hw_mallory "SELECT rt_cancel('$evil_sql')"
      as hw_mallory "SELECT rt_refresh('$evil_sql')"
      as hw_mallory "SELECT rt_drop_task('$evil_sql', 'nosuch')"
      as hw_mallory "SELECT rt_create_model('$evil_sql', 'maldata')")
expect "injection: no password hash and no other role leaks through results, errors or hints" \
	$([[ $out != *SCRAM* && $out != *hw_owner* && $out != *md5* ]] && echo 1 || echo 0) "$out"
wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 60

# --------------------------------------------------------------------------
# 3. Access control: training, job control and serving.
code() { # code ROLE SQL: the SQLSTATE of the statement's error, or "ok"
	local out
	out=$(psql -X -qAt -U "$1" -d "$db" -v VERBOSITY=verbose -c "\\set VERBOSITY verbose" -c "$2" 2>&1)
	if [[ $out =~ ERROR:\ +([0-9A-Z]{5}): ]]; then echo "${BASH_REMATCH[1]}"; else echo ok; fi
}
refused() { # refused "description" ROLE SQL [text the message must contain]
	local got msg
	got=$(code "$2" "$3")
	msg=$(as "$2" "$3")
	if [ "$got" = 42501 ] && [[ $msg == *"${4:-}"* ]]; then ok "$1"; else not_ok "$1" "sqlstate $got: $msg"; fi
}
allowed() { # allowed "description" ROLE SQL
	local got
	got=$(as "$2" "$3")
	if [[ $got != *ERROR* ]]; then ok "$1"; else not_ok "$1" "$got"; fi
}
q "GRANT SELECT ON ALL TABLES IN SCHEMA shop TO hw_reader" >/dev/null
refused "a role with SELECT on the sources cannot train someone else's model" hw_reader \
	"SELECT rt_train('shop', steps => 6, preset => 'tiny', options => '{\"restart\": true}')" 'hw_reader'
refused "nor cancel its jobs" hw_reader "SELECT rt_cancel('shop')" '"shop"'
refused "nor drop it" hw_reader "SELECT rt_drop_model('shop')"
refused "nor refresh it" hw_reader "SELECT rt_refresh('shop')"
refused "nor add a task" hw_reader "SELECT rt_create_task('shop', 'x', anchor_table => 'orders', target_column => 'total')"
refused "nor read its weights" hw_reader "SELECT count(*) FROM rt_model_params('shop.order_status')"
refused "nor run its tape" hw_reader "SELECT rt_debug_tape('shop.order_status')"
refused "nor predict without a grant" hw_reader "SELECT rt_predict('shop.order_status', 1)" 'rt_grant_predict'
refused "nor evaluate without a grant" hw_reader "SELECT * FROM rt_evaluate('shop.order_status')"
refused "nor predict in batch without a grant" hw_reader "SELECT * FROM rt_predict_batch('shop.order_status', ARRAY[1, 2])"
refused "nor grant itself prediction" hw_reader "SELECT rt_grant_predict('shop', 'hw_reader')"
out=$(as hw_reader "SELECT count(*) FROM rt_status(); SELECT count(*) FROM rt_training; SELECT count(*) FROM rt_status('shop')")
expect "another role's jobs are invisible in rt_status and rt_training (and the view is readable)" \
	$([ "$out" = $'0\n0\n0' ] && echo 1 || echo 0) "$out"
out=$(as hw_owner "SELECT count(*) > 0 FROM rt_training")
expect "the owner sees its jobs in rt_training" $([ "$out" = t ] && echo 1 || echo 0) "$out"
job=$(q "SELECT max(job_id) FROM headwater.job j JOIN headwater.model m USING (model_id) WHERE m.name = 'shop'")
refused "rt_wait on another role's job is refused" hw_reader "SELECT rt_wait($job)"
allowed "the owner grants prediction" hw_owner "SELECT rt_grant_predict('shop', 'hw_group')"
q "GRANT hw_group TO hw_reader" >/dev/null
allowed "a member of a granted role predicts" hw_reader "SELECT rt_predict('shop.order_status', 1)"
allowed "and evaluates" hw_reader "SELECT * FROM rt_evaluate('shop.order_status')"
refused "a grant does not give the weights" hw_reader "SELECT count(*) FROM rt_model_params('shop.order_status')"
q "REVOKE SELECT ON shop.orders FROM hw_reader" >/dev/null
refused "prediction needs SELECT on the anchor table" hw_reader "SELECT rt_predict('shop.order_status', 1)" 'shop.orders'
q "GRANT SELECT ON shop.orders TO hw_reader" >/dev/null
out=$(as hw_owner "SELECT role FROM rt_grants('shop')")
expect "rt_grants lists the grant" $([ "$out" = hw_group ] && echo 1 || echo 0) "$out"
allowed "the owner revokes it" hw_owner "SELECT rt_revoke_predict('shop', 'hw_group')"
refused "after the revoke, prediction is refused again" hw_reader "SELECT rt_predict('shop.order_status', 1)"
allowed "a grant to public lets every role predict" hw_owner "SELECT rt_grant_predict('shop', 'public')"
allowed "(every role)" hw_reader "SELECT rt_predict('shop.order_status', 2)"
as hw_owner "SELECT rt_revoke_predict('shop', 'public')" >/dev/null

# --------------------------------------------------------------------------
# 4. Inputs that used to crash a server process: clear errors, one backend
#    lives through all of them.
out=$(psql -X -qAt -U hw_owner -d "$db" -v ON_ERROR_STOP=0 <<'SQL' 2>&1
SELECT pg_backend_pid() AS pid \gset
SELECT rt_predict_label('order_status', NULL::varchar);
SELECT rt_predict('order_status', NULL::text);
SELECT rt_predict('order_status', NULL::int);
SELECT rt_predict_proba('order_status', NULL::bigint);
SELECT * FROM rt_predict_batch('order_status', ARRAY[1, NULL]::int[]);
SELECT rt_predict('order_status', ROW(1, 2));
SELECT rt_predict('order_status', ARRAY[1, 2, 3]);
SELECT rt_predict('order_status', 'not a number'::text);
SELECT rt_predict('order_status', 1, 'infinity');
SELECT rt_train('shop', steps => 8, preset => 'tiny', options => '{"threads": 100000}');
SELECT rt_train('shop', steps => 8, preset => 'tiny', options => '{"threads": -3}');
SELECT rt_train('shop', steps => 8, preset => 'tiny', options => '{"checkpoint_every": "often"}');
SELECT rt_create_model('bogus_types', 'shop', '{"column_types": {"orders.status": "bogus"}}');
SELECT rt_create_model('bogus_cols', 'shop', '{"column_types": {"nosuch.col": "numerical"}}');
SELECT 'alive:' || (pg_backend_pid() = :pid);
SQL
)
expect "crash inputs: the same backend answers after all of them" \
	$([[ $out == *alive:true* ]] && echo 1 || echo 0) "$out"
n_err=$(grep -c '^ERROR:' <<<"$out")
expect "crash inputs: each one is an error (14 of 14)" $([ "$n_err" -eq 14 ] && echo 1 || echo 0) "$out"
expect "crash inputs: no XX000 internal error" $([[ $out != *XX000* && $out != *"internal error"* ]] && echo 1 || echo 0) "$out"
# --------------------------------------------------------------------------
# 5. The bad-input sweep: every SQL function of the extension, each argument
#    NULL / empty / huge / of the wrong kind in turn (test/security/sweep.sql).
script=$(mktemp /tmp/hw_sweep.XXXXXX.sql)
psql -X -qAt -U hw_owner -d "$db" -v ON_ERROR_STOP=1 -f "$here/security/sweep.sql" > "$script" 2>&1
sweep=$(psql -X -qAt -U hw_owner -d "$db" -f "$script" 2>/dev/null)
rm -f "$script"
echo "$sweep" | grep -E '^#' 
bad=$(echo "$sweep" | grep -E '^BAD' || true)
total=$(echo "$sweep" | grep -cE '^(GOOD|BAD)')
expect "bad-input sweep: $total calls, each a clear error (SQLSTATE outside class XX) or a result" \
	$([ -z "$bad" ] && [ "$total" -gt 100 ] && echo 1 || echo 0) "$(echo "$sweep" | grep -vE '^GOOD' | head -n 40)"
expect "bad-input sweep: the role is still not a superuser and the session ran to the end" \
	$([[ $sweep == *"sweep finished"* ]] && [ "$(is_super hw_owner)" = f ] && echo 1 || echo 0) "$(echo "$sweep" | tail -n 5)"

# --------------------------------------------------------------------------
# 6. A corrupted checkpoint: the load fails with XX001, and the next call in the
# same session must fail the same way, not crash
ck=$(q "SELECT checkpoint_id FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'shop' AND c.is_best")
q "UPDATE headwater.checkpoint_state SET data = overlay(data placing '\\xdeadbeef'::bytea from 200) WHERE checkpoint_id = $ck AND chunk_no = 0" >/dev/null
out=$(psql -X -qAt -U hw_owner -d "$db" -v ON_ERROR_STOP=0 <<'SQL' 2>&1
SELECT pg_backend_pid() AS pid \gset
SELECT rt_predict('order_status', 1);
SELECT rt_predict('order_status', 1);
SELECT * FROM rt_evaluate('order_status');
SELECT 'alive:' || (pg_backend_pid() = :pid);
SQL
)
expect "corrupted checkpoint: clear errors (XX001) and the session survives repeated calls" \
	$([[ $out == *alive:true* && $(grep -c '^ERROR:' <<<"$out") -eq 3 ]] && echo 1 || echo 0) "$out"


# --------------------------------------------------------------------------
# 7. The hostile neighbour: one file per concern (test/security/*.sh), sourced
# so that they share the roles, the database $db, the owner's trained model
# "shop" with its task "order_status", and the TAP counters.
for f in "$here"/security/*.sh; do
	[ -e "$f" ] || continue
	echo "# $(basename "$f")"
	source "$f"
done

# --------------------------------------------------------------------------
wait_for "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'headwater training')" 60
pm_pid_after=$(head -n 1 "${HW_CLUSTER_DIR:-/nonexistent}/data/postmaster.pid" 2>/dev/null)
crashes_after=$(crashes)
expect "no server process crashed during the suite (server log), postmaster PID unchanged" \
	$([ "$crashes_after" = "$crashes_before" ] && [ "$pm_pid_after" = "$pm_pid_before" ] && echo 1 || echo 0) \
	"crash lines $crashes_before -> $crashes_after; postmaster $pm_pid_before -> $pm_pid_after"

dropdb "$db" >/dev/null 2>&1
for r in hw_owner hw_reader hw_mallory hw_group; do qp "DROP ROLE IF EXISTS $r" >/dev/null; done
tap_finish
