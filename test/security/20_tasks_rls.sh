# test/security/20_tasks_rls.sh (sourced by test/security.sh): tasks that
# cannot be squatted, and row-level security respected in serving
# (docs/security.md, "Tasks and row-level security").
#
# Uses the suite's roles, $db, mallory's model "malm" (schema maldata) and
# the helpers q, as, expect, code.  Builds the owner's model "rlsm" on a
# schema owned by hw_owner (the table owner, so row-level security does not
# apply to it); the suite's "shop" checkpoint is corrupted by then.

# tr_err ROLE SQL KEY: the whole error (SQLSTATE, message, detail, hint) with
# KEY written as K, so that errors about two different keys can be compared
tr_err() {
	psql -X -qAt -U "$1" -d "$db" -c "\\set VERBOSITY verbose" -c "$2" 2>&1 | grep -v '^LOCATION' | sed "s/$3/K/g"
}

# --- setup: the owner's second model, on tables it owns
q "SELECT rt_demo_shop('rls_shop', 200)" >/dev/null
q "ALTER SCHEMA rls_shop OWNER TO hw_owner;
   DO \$\$ DECLARE r record; BEGIN
     FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'rls_shop' LOOP
       EXECUTE format('ALTER TABLE rls_shop.%I OWNER TO hw_owner', r.tablename);
     END LOOP; END \$\$;
   GRANT USAGE ON SCHEMA rls_shop TO hw_reader;
   GRANT SELECT ON ALL TABLES IN SCHEMA rls_shop TO hw_reader" >/dev/null
as hw_owner "SELECT rt_create_model('rlsm', 'rls_shop')" >/dev/null
as hw_owner "SELECT rt_create_task('rlsm', 'segment', anchor_table => 'customers', target_column => 'segment')" >/dev/null
as hw_owner "SELECT rt_create_task('rlsm', 'spare', anchor_table => 'orders', target_column => 'status')" >/dev/null
tr_out=$(as hw_owner "SELECT rt_train('rlsm', steps => 4, preset => 'tiny', options => '{\"val_every\": 2, \"checkpoint_every\": 2}')")
expect "tasks/rls setup: the owner trains a model on tables it owns" $([[ $tr_out == *steps_done* ]] && echo 1 || echo 0) "$tr_out"
as hw_owner "SELECT rt_grant_predict('rlsm', 'hw_reader')" >/dev/null

# --- squatting: a task of the same name in another role's model
tr_owner_before=$(as hw_owner "SELECT rt_predict('segment', 1)")
tr_reader_before=$(as hw_reader "SELECT rt_predict('rlsm.segment', 1)")
tr_out=$(as hw_mallory "SELECT rt_create_task('malm', 'segment', anchor_table => 'person', target_column => 'age') IS NOT NULL")
expect "a task name is unique within its model only: mallory names a task of its own model like the owner's" \
	$([ "$tr_out" = t ] && echo 1 || echo 0) "$tr_out"
# the owner drops a task to redefine it; mallory takes the name at once
as hw_owner "SELECT rt_drop_task('rlsm', 'spare')" >/dev/null
tr_out=$(as hw_mallory "SELECT rt_create_task('malm', 'spare', anchor_table => 'person', target_column => 'score') IS NOT NULL")
expect "mallory names a task like the one the owner just dropped" $([ "$tr_out" = t ] && echo 1 || echo 0) "$tr_out"
q "GRANT USAGE ON SCHEMA maldata TO PUBLIC; GRANT SELECT ON ALL TABLES IN SCHEMA maldata TO PUBLIC" >/dev/null
as hw_mallory "SELECT rt_grant_predict('malm', 'public')" >/dev/null
tr_out=$(as hw_mallory "SELECT rt_train('malm', steps => 3, preset => 'tiny', options => '{\"restart\": true, \"val_every\": 2, \"checkpoint_every\": 2}')")
expect "mallory trains the squatting tasks and lets every role predict with them" \
	$([[ $tr_out == *steps_done* ]] && echo 1 || echo 0) "$tr_out"

tr_out=$(as hw_owner "SELECT rt_predict('segment', 1)")
expect "squatting: the owner's short name still serves the owner's model (same prediction as before)" \
	$([ -n "$tr_owner_before" ] && [[ $tr_owner_before != *ERROR* ]] && [ "$tr_out" = "$tr_owner_before" ] && echo 1 || echo 0) \
	"before: $tr_owner_before; now: $tr_out"
tr_out=$(as hw_reader "SELECT rt_predict('rlsm.segment', 1)")
expect "squatting: the owner's grantee calling 'rlsm.segment' gets the owner's model's prediction" \
	$([[ $tr_reader_before != *ERROR* ]] && [ "$tr_out" = "$tr_reader_before" ] && echo 1 || echo 0) \
	"before: $tr_reader_before; now: $tr_out"
tr_out=$(as hw_reader "SELECT * FROM rt_evaluate('rlsm.segment', 'train')")
expect "squatting: the grantee's rt_evaluate('rlsm.segment') evaluates the owner's task" \
	$([[ $tr_out != *ERROR* && -n $tr_out ]] && echo 1 || echo 0) "$tr_out"
tr_c=$(code hw_reader "SELECT rt_predict('segment', 1)")
tr_out=$(as hw_reader "SELECT rt_predict('segment', 1)")
expect "squatting: a short name never resolves to another role's model (the grantee's 'segment': 42704, no model named)" \
	$([ "$tr_c" = 42704 ] && [[ $tr_out != *malm* && $tr_out != *rlsm* ]] && echo 1 || echo 0) "sqlstate $tr_c: $tr_out"
tr_c=$(code hw_owner "SELECT rt_predict('spare', 1)")
tr_out=$(as hw_owner "SELECT rt_predict('spare', 1); SELECT * FROM rt_evaluate('spare')")
expect "squatting: after the owner dropped 'spare', its short name is not found instead of serving mallory's" \
	$([ "$tr_c" = 42704 ] && [[ $tr_out != *malm* ]] && echo 1 || echo 0) "sqlstate $tr_c: $tr_out"
tr_out=$(as hw_owner "SELECT rt_create_task('rlsm', 'spare', anchor_table => 'orders', target_column => 'status') IS NOT NULL")
expect "squatting: the owner can still create the name in its own model" $([ "$tr_out" = t ] && echo 1 || echo 0) "$tr_out"
tr_out=$(as hw_mallory "SELECT rt_predict('segment', 1) IS NOT DISTINCT FROM rt_predict('malm.segment', 1)")
expect "the squatter's own short name serves its own model" $([ "$tr_out" = t ] && echo 1 || echo 0) "$tr_out"
tr_c=$(code hw_mallory "SELECT rt_predict('rlsm.segment', 1)")
tr_out=$(tr_err hw_mallory "SELECT rt_predict('rlsm.segment', 1)" segment)
tr_out2=$(tr_err hw_mallory "SELECT rt_predict('rlsm.no_such_task', 1)" no_such_task)
expect "another role's qualified task: refused (42501) alike whether the task exists or not" \
	$([ "$tr_c" = 42501 ] && [ "$tr_out" = "$tr_out2" ] && echo 1 || echo 0) "$tr_out | $tr_out2"
tr_c=$(code "${PGUSER:-$(id -un)}" "SELECT rt_predict('segment', 1)")
tr_out=$(q "SELECT rt_predict('segment', 1)")
expect "a short name in several models a superuser sees is ambiguous (42725), naming them as 'model.task'" \
	$([ "$tr_c" = 42725 ] && [[ $tr_out == *"'malm.segment'"* && $tr_out == *"'rlsm.segment'"* ]] && echo 1 || echo 0) \
	"sqlstate $tr_c: $tr_out"
tr_c=$(code hw_owner "SELECT rt_create_task('rlsm', 'a.b', anchor_table => 'orders', target_column => 'total')")
expect "a task name with a dot is refused (22023)" $([ "$tr_c" = 22023 ] && echo 1 || echo 0) "sqlstate $tr_c"

# --- row-level security on the anchor table: hw_reader sees 10 customers
as hw_owner "ALTER TABLE rls_shop.customers ENABLE ROW LEVEL SECURITY;
             CREATE POLICY reader_ten ON rls_shop.customers FOR SELECT TO hw_reader USING (customer_id <= 10)" >/dev/null
tr_out=$(as hw_reader "SELECT count(*) FROM rls_shop.customers")
expect "rls setup: the policy shows hw_reader 10 of 200 customers" $([ "$tr_out" = 10 ] && echo 1 || echo 0) "$tr_out"
for tr_fn in rt_predict rt_predict_label; do
	tr_hidden=$(tr_err hw_reader "SELECT $tr_fn('rlsm.segment', 50)" 50)
	tr_none=$(tr_err hw_reader "SELECT $tr_fn('rlsm.segment', 100000)" 100000)
	expect "rls: $tr_fn for a row hidden by the policy fails exactly like a key that does not exist" \
		$([[ $tr_hidden == *ERROR* ]] && [ "$tr_hidden" = "$tr_none" ] && echo 1 || echo 0) "hidden: $tr_hidden | missing: $tr_none"
done
tr_hidden=$(tr_err hw_reader "SELECT * FROM rt_predict_batch('rlsm.segment', ARRAY[5, 50, 7])" 50)
tr_none=$(tr_err hw_reader "SELECT * FROM rt_predict_batch('rlsm.segment', ARRAY[5, 100000, 7])" 100000)
expect "rls: rt_predict_batch with a hidden row fails exactly like one with a missing key" \
	$([[ $tr_hidden == *ERROR* ]] && [ "$tr_hidden" = "$tr_none" ] && echo 1 || echo 0) "hidden: $tr_hidden | missing: $tr_none"
tr_hidden=$(tr_err hw_reader "SELECT * FROM rt_predict_batch('rlsm.segment', ARRAY[50, 100000])" 50)
tr_none=$(tr_err hw_reader "SELECT * FROM rt_predict_batch('rlsm.segment', ARRAY[100001, 100000])" 100001)
expect "rls: a batch names its first failing key in order, hidden or missing alike" \
	$([[ $tr_hidden == *ERROR* ]] && [ "$tr_hidden" = "$tr_none" ] && echo 1 || echo 0) "hidden: $tr_hidden | missing: $tr_none"
tr_hidden=$(tr_err hw_reader "SELECT * FROM rt_predict_table('rlsm.segment', 'SELECT 50')" 50)
tr_none=$(tr_err hw_reader "SELECT * FROM rt_predict_table('rlsm.segment', 'SELECT 100000')" 100000)
expect "rls: rt_predict_table whose query names a hidden row fails exactly like a missing key" \
	$([[ $tr_hidden == *ERROR* ]] && [ "$tr_hidden" = "$tr_none" ] && echo 1 || echo 0) "hidden: $tr_hidden | missing: $tr_none"
tr_out=$(as hw_reader "SELECT rt_predict('rlsm.segment', 5) IS NOT NULL OR rt_predict_label('rlsm.segment', 5) IS NULL;
                       SELECT count(*) FROM rt_predict_batch('rlsm.segment', ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
                       SELECT count(*) FROM rt_predict_table('rlsm.segment', 'SELECT customer_id FROM rls_shop.customers')")
expect "rls: the visible rows still predict (one, a batch of 10, a table query that sees 10)" \
	$([ "$tr_out" = $'t\n10\n10' ] && echo 1 || echo 0) "$tr_out"
tr_c=$(code hw_reader "SELECT * FROM rt_evaluate('rlsm.segment', 'train')")
expect "rls: rt_evaluate over rows the role cannot all see is refused (42501)" \
	$([ "$tr_c" = 42501 ] && echo 1 || echo 0) "sqlstate $tr_c"
tr_out=$(as hw_owner "SELECT rt_predict('segment', 50) IS NOT NULL OR rt_predict_label('segment', 50) IS NULL;
                      SELECT count(*) FROM rt_predict_batch('segment', ARRAY[1, 50, 150, 200]);
                      SELECT count(*) FROM rt_predict_table('segment', 'SELECT customer_id FROM rls_shop.customers');
                      SELECT count(*) > 0 FROM rt_evaluate('segment', 'train')")
expect "rls: the table owner (row-level security not forced) predicts and evaluates every row" \
	$([ "$tr_out" = $'t\n4\n200\nt' ] && echo 1 || echo 0) "$tr_out"
