# test/security/30_serving_batches.sh: sourced by test/security.sh (q, as,
# code, expect, check; $db with hw_owner's trained model "shop" and its task
# "order_status", hw_reader, hw_mallory).  The shared cache key across time
# zones, callers' queries that are not one SELECT, the debug tape's owner,
# bounds on inspection batches, and catalog SQL under a hostile search_path.

# a fresh best checkpoint: an earlier check damaged the previous one
res=$(as hw_owner "SELECT rt_train('shop', steps => 2, preset => 'tiny', options => '{\"restart\": true, \"checkpoint_every\": 2}')")
expect "serving checks: the owner retrains its model" $([[ $res == *steps_done* ]] && echo 1 || echo 0) "$res"
shop_id=$(q "SELECT model_id FROM headwater.model WHERE name = 'shop'")

# --------------------------------------------------------------------------
# The shared cache file's name carries the model's state key: sessions that
# differ only in TimeZone and DateStyle must share one file, not rebuild
# (and delete) each other's on every call.
cache_files() {
	q "SELECT string_agg(f || '@' || (pg_stat_file('pg_headwater/serving/' || f)).modification, ',' ORDER BY f)
	   FROM pg_ls_dir('pg_headwater/serving') f WHERE f LIKE '%\_m${shop_id}\_%.hwsc'"
}
zone_a="SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY';"
zone_b="SET TimeZone = 'Pacific/Chatham'; SET DateStyle = 'SQL, DMY';"
as hw_owner "$zone_a SELECT rt_predict('order_status', 1)" >/dev/null
files_a=$(cache_files)
sleep 1.1   # a rebuilt file would show a later modification time
as hw_owner "$zone_b SELECT rt_predict('order_status', 2)" >/dev/null
files_b=$(cache_files)
as hw_owner "$zone_a SELECT rt_predict('order_status', 3)" >/dev/null
files_c=$(cache_files)
expect "shared cache: sessions in other time zones and date styles use the same file, unrebuilt" \
	$([ -n "$files_a" ] && [ "$files_a" = "$files_b" ] && [ "$files_b" = "$files_c" ] && echo 1 || echo 0) \
	"UTC: $files_a; Chatham: $files_b; UTC again: $files_c"

# --------------------------------------------------------------------------
# rt_predict_table / rt_predict_into run one plain SELECT of the caller's and
# nothing else: a write, a lock, EXPLAIN or SHOW is refused before it runs.
q "DROP SCHEMA IF EXISTS hwo CASCADE; CREATE SCHEMA hwo AUTHORIZATION hw_owner" >/dev/null
as hw_owner "CREATE TABLE hwo.log (n int); CREATE TABLE hwo.keys (order_id int);
             INSERT INTO hwo.keys VALUES (1), (2);
             CREATE TABLE hwo.preds (row_id text, prediction float8)" >/dev/null
not_select() { # not_select "description" SQL-of-the-call
	local got msg
	got=$(code hw_owner "$2")
	msg=$(as hw_owner "$2")
	if [ "$got" = 0A000 ] && [[ $msg == *rt_predict_* ]]; then ok "$1"; else not_ok "$1" "sqlstate $got: $msg"; fi
}
for query in "INSERT INTO hwo.log VALUES (1) RETURNING 1" \
             "WITH w AS (INSERT INTO hwo.log VALUES (2) RETURNING n) SELECT n FROM w" \
             "EXPLAIN ANALYZE INSERT INTO hwo.log VALUES (3)" \
             "SHOW search_path" \
             "SELECT order_id FROM hwo.keys FOR UPDATE" \
             "SELECT k.order_id FROM (SELECT order_id FROM hwo.keys FOR SHARE) k" \
             "SELECT order_id INTO hwo.made FROM hwo.keys" \
             "SELECT 1; INSERT INTO hwo.log VALUES (4)"; do
	lit=${query//\'/\'\'}
	not_select "rt_predict_table refuses (0A000): $query" "SELECT count(*) FROM rt_predict_table('order_status', '$lit')"
done
not_select "rt_predict_into refuses (0A000): INSERT ... RETURNING" \
	"SELECT rt_predict_into('order_status', 'INSERT INTO hwo.log VALUES (5) RETURNING 1', 'hwo.preds')"
check "refused queries ran nothing: no row logged, no table made, no prediction written" \
	"SELECT (SELECT count(*) FROM hwo.log) = 0 AND to_regclass('hwo.made') IS NULL AND (SELECT count(*) FROM hwo.preds) = 0"
out=$(as hw_owner "SELECT count(*) FROM rt_predict_table('order_status', 'WITH k AS (SELECT order_id FROM hwo.keys) SELECT order_id FROM k')")
expect "a SELECT with a plain WITH still predicts" $([ "$out" = 2 ] && echo 1 || echo 0) "$out"

# --------------------------------------------------------------------------
# The debug tape (ops, shapes, timings) is the model owner's.
as hw_owner "SELECT rt_debug_tape('order_status')" >/dev/null
refused "PUBLIC cannot read headwater.tape" hw_reader "SELECT count(*) FROM headwater.tape" 'table tape'
refused "nor can another role with its own models" hw_mallory "SELECT count(*) FROM headwater.tape" 'table tape'
out=$(as hw_owner "SELECT count(*) > 0 AND bool_and(seq >= 0) FROM rt_tape('order_status')")
expect "the owner reads its model's tape through rt_tape" $([ "$out" = t ] && echo 1 || echo 0) "$out"
refused "rt_tape of another role's model is refused" hw_reader "SELECT count(*) FROM rt_tape('shop.order_status')"

# --------------------------------------------------------------------------
# Inspection batches: per-call bounds, a storage limit, pruning.
batches="SELECT count(*) FROM headwater.batch WHERE model_id = $shop_id"
before=$(q "$batches")
got=$(code hw_owner "SELECT count(*) FROM rt_sample_batches('shop', 'order_status', n => 5, batch_size => 4096, seq_len => 65535)")
msg=$(as hw_owner "SELECT count(*) FROM rt_sample_batches('shop', 'order_status', n => 5, batch_size => 4096, seq_len => 65535)")
expect "rt_sample_batches of 1.3 G cells is refused (54000, naming the limit)" \
	$([ "$got" = 54000 ] && [[ $msg == *cells* ]] && echo 1 || echo 0) "sqlstate $got: $msg"
got=$(code hw_owner "SELECT count(*) FROM rt_sample_batches('shop', 'order_status', n => 100000, batch_size => 1, seq_len => 2)")
expect "rt_sample_batches of 100000 batches is refused (22023)" $([ "$got" = 22023 ] && echo 1 || echo 0) "sqlstate $got"
out=$(psql -X -qAt -d "$db" -c "SET headwater.max_batch_storage = '1MB'" -v VERBOSITY=verbose \
	-c "SELECT count(*) FROM rt_sample_batches('shop', 'order_status', n => 40, batch_size => 32, seq_len => 1024)" 2>&1)
expect "more than headwater.max_batch_storage is refused (54000)" \
	$([[ $out == *54000*max_batch_storage* ]] && echo 1 || echo 0) "$out"
after=$(q "$batches")
expect "refused calls store nothing" $([ "$before" = "$after" ] && echo 1 || echo 0) "batches $before -> $after"
got=$(code hw_mallory "SELECT public.rt_version(); SET headwater.max_batch_storage = '100GB'")
expect "a role that is not a superuser cannot raise the limit (42501)" $([ "$got" = 42501 ] && echo 1 || echo 0) "sqlstate $got"
for i in $(seq 1 20); do
	as hw_owner "SELECT count(*) FROM rt_sample_batches('shop', 'order_status', n => 2, batch_size => 2, seq_len => 16, seed => $i)" >/dev/null
done
last=$(as hw_owner "SELECT max(b) FROM rt_sample_batches('shop', 'order_status', n => 2, batch_size => 2, seq_len => 16) b")
out=$(q "SELECT count(*) FROM headwater.batch WHERE model_id = $shop_id AND split <> 'predict'")
expect "repeated sampling keeps the model's batches bounded (the last 16 calls: at most 32 batches)" \
	$([ "$out" -le 32 ] && [ "$out" -ge 2 ] && echo 1 || echo 0) "$out batches"
out=$(as hw_owner "SELECT count(*) FROM rt_batch_sequence($last, 1)")
expect "the latest call's batches are still readable" $([[ $out =~ ^[1-9][0-9]*$ ]] && echo 1 || echo 0) "$out"

# --------------------------------------------------------------------------
# rt_create_model's catalog SQL runs as the caller: with a hostile schema
# first on the caller's search_path, none of its functions or operators run.
q "DROP SCHEMA IF EXISTS shadow CASCADE; CREATE SCHEMA shadow AUTHORIZATION hw_mallory" >/dev/null
as hw_mallory "
CREATE TABLE shadow.calls (fn text);
CREATE FUNCTION shadow.record(fn text) RETURNS void LANGUAGE sql SECURITY DEFINER
	AS \$\$ INSERT INTO shadow.calls VALUES (fn) \$\$;
CREATE FUNCTION shadow.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM shadow.record('unnest'); RETURN QUERY SELECT * FROM pg_catalog.unnest(\$1); END \$\$;
CREATE FUNCTION shadow.coalesce(regclass, regclass) RETURNS regclass LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM shadow.record('coalesce'); RETURN COALESCE(\$1, \$2); END \$\$;
CREATE FUNCTION shadow.pg_partition_root(regclass) RETURNS regclass LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM shadow.record('pg_partition_root'); RETURN pg_catalog.pg_partition_root(\$1); END \$\$;
CREATE FUNCTION shadow.format_type(oid, int) RETURNS text LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM shadow.record('format_type'); RETURN pg_catalog.format_type(\$1, \$2); END \$\$;
CREATE FUNCTION shadow.jsonb_object_keys(jsonb) RETURNS SETOF text LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM shadow.record('jsonb_object_keys'); RETURN QUERY SELECT pg_catalog.jsonb_object_keys(\$1); END \$\$;
CREATE FUNCTION shadow.jsonb_typeof(jsonb) RETURNS text LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM shadow.record('jsonb_typeof'); RETURN pg_catalog.jsonb_typeof(\$1); END \$\$;
CREATE FUNCTION shadow.oid_eq(oid, oid) RETURNS bool LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM shadow.record('= (oid)'); RETURN \$1 OPERATOR(pg_catalog.=) \$2; END \$\$;
CREATE OPERATOR shadow.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = shadow.oid_eq);
CREATE FUNCTION shadow.jsonb_get(jsonb, text) RETURNS text LANGUAGE plpgsql AS
	\$\$ BEGIN PERFORM shadow.record('->>'); RETURN \$1 OPERATOR(pg_catalog.->>) \$2; END \$\$;
CREATE OPERATOR shadow.->> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = shadow.jsonb_get);
GRANT USAGE ON SCHEMA shadow TO PUBLIC;" >/dev/null
# the trap works: a plain query of the victim's under that path calls it
as hw_owner "SET search_path = shadow, pg_catalog, public; SELECT count(*) FROM unnest(ARRAY[1])" >/dev/null
check "the shadowing functions are live (a plain query under the path calls them)" \
	"SELECT count(*) > 0 FROM shadow.calls"
q "TRUNCATE shadow.calls" >/dev/null
out=$(as hw_owner "SET search_path = shadow, pg_catalog, public;
	SELECT public.rt_create_model('shadowed', 'shop', '{\"time_columns\": {\"orders\": \"ordered_at\"}, \"column_types\": {\"orders.status\": \"categorical\"}}') IS NOT NULL")
expect "rt_create_model builds under a hostile search_path" $([ "$out" = t ] && echo 1 || echo 0) "$out"
out=$(q "SELECT coalesce(string_agg(DISTINCT fn, ', '), 'none') FROM shadow.calls")
expect "rt_create_model calls none of the shadowing functions and operators" \
	$([ "$out" = none ] && echo 1 || echo 0) "called: $out"
as hw_owner "SELECT rt_drop_model('shadowed')" >/dev/null
q "DROP SCHEMA shadow CASCADE; DROP SCHEMA hwo CASCADE" >/dev/null
