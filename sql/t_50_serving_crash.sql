-- t_50_serving_crash: bad inputs to prediction and evaluation get a clear
-- error (SQLSTATE, the object's name, a hint) and never crash the backend:
-- NULL and mistyped keys, composite keys of the wrong arity, absurd
-- obs_time and checkpoint arguments, a damaged checkpoint (twice in one
-- session), a task whose column vanished in an rt_refresh.  The backend's
-- pid is compared at the end: a crash would have ended this session.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t50shop', 200) IS NOT NULL AS demo;
SELECT rt_create_model('m50', 't50shop') IS NOT NULL AS created;
SELECT rt_create_task('m50', 'status50', anchor_table => 'orders', target_column => 'status') IS NOT NULL AS task;
SELECT rt_create_task('m50', 'news50', anchor_table => 'customers', target_column => 'newsletter') IS NOT NULL AS task;
SELECT rt_create_task('m50', 'qty50', anchor_table => 'order_items', target_column => 'quantity') IS NOT NULL AS task;
SELECT rt_train('m50', steps => 3, preset => 'tiny', options => '{"checkpoint_every": 1}') ->> 'state' AS trained;
-- a second, small model
CREATE SCHEMA t50b;
CREATE TABLE t50b.customer (id int PRIMARY KEY, segment text, vip bool, joined timestamptz);
INSERT INTO t50b.customer SELECT i, (ARRAY['a','b','c'])[1 + i % 3], i % 4 = 0, '2024-01-01'::timestamptz + i * interval '1 day' FROM generate_series(1, 60) i;
SELECT rt_create_model('m50b', 't50b') IS NOT NULL AS created;
SELECT rt_create_task('m50b', 'vip50b', anchor_table => 'customer', target_column => 'vip') IS NOT NULL AS task;
CREATE TEMP TABLE t50b_train AS SELECT rt_train('m50b', steps => 2, preset => 'tiny', options => '{"checkpoint_every": 1}') AS r;
SELECT r ->> 'state' AS trained FROM t50b_train;
RESET client_min_messages;
SET TimeZone = 'UTC';
CREATE TEMP TABLE t50_pid AS SELECT pg_backend_pid() AS pid;
-- errors whose message holds a checkpoint id (it varies): the id masked
CREATE FUNCTION pg_temp.t50_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; hint text;
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
	RETURN st || ': ' || regexp_replace(msg, 'checkpoint [0-9]+', 'checkpoint N', 'g') || E'\nHINT: ' || hint;
END $$;

-- healthy predictions to compare with
SELECT rt_predict_proba('status50', 5) ? 'p_null' AS predicts;
SELECT rt_predict_proba('qty50', ROW(5, 1)) ? 'p_null' AS predicts;

-- 1. NULL arguments: task, key (any type), batch arrays and their elements
SELECT rt_predict_label('status50', NULL::varchar);
SELECT rt_predict('status50', NULL::text);
SELECT rt_predict('status50', NULL::int);
SELECT rt_predict_proba('status50', NULL::bigint);
SELECT rt_predict(NULL, 5);
SELECT rt_predict_label(NULL, 5);
SELECT rt_predict_proba(NULL, 5);
SELECT * FROM rt_predict_batch(NULL, ARRAY[1, 2]);
SELECT * FROM rt_predict_batch('status50', NULL::int[]);
SELECT * FROM rt_predict_batch('status50', ARRAY[1, NULL, 3]);
SELECT * FROM rt_evaluate(NULL);
SELECT * FROM rt_model_params(NULL);
SELECT rt_predict('qty50', ROW(5, NULL::int));
SELECT rt_predict('qty50', ARRAY[NULL, 1]);
SELECT count(*) FROM rt_predict_batch('qty50', ARRAY[ROW(5, 1), ROW(5, NULL::int)]);
-- key values of another type: read as the key column's type
SELECT rt_predict('status50', 'abc'::text);
SELECT rt_predict('status50', 5.5);
SELECT rt_predict_label('status50', 'abc'::varchar);
SELECT rt_predict('qty50', ROW('x'::text, 1));
SELECT rt_predict_proba('status50', '5'::text) = rt_predict_proba('status50', 5) AS text_key_same;
SELECT rt_predict_proba('status50', 5::bigint) = rt_predict_proba('status50', 5) AS bigint_key_same;
SELECT rt_predict('status50', 987654);

-- 2. composite keys of the wrong arity
SELECT rt_predict('qty50', ROW(1));
SELECT rt_predict('qty50', ARRAY[1, 2, 3]);
SELECT rt_predict('qty50', 5);
SELECT rt_predict_label('status50', ROW(5, 6));
SELECT rt_predict('status50', ARRAY[5, 6]);
SELECT count(*) FROM rt_predict_batch('qty50', ARRAY[5, 6]);
SELECT rt_predict_proba('qty50', ARRAY[5, 1]) = rt_predict_proba('qty50', ROW(5, 1)) AS array_key_same;
SELECT rt_predict_proba('status50', ROW(5)) = rt_predict_proba('status50', 5) AS row_key_same;
SELECT count(*) FROM rt_predict_batch('qty50', ARRAY[ROW(5, 1), ROW(7, 1)]);
SELECT count(*) FROM rt_predict_batch('status50', ARRAY[]::int[]);

-- 5. absurd obs_time and checkpoint arguments, unknown split
SELECT rt_predict('status50', 5, 'infinity');
SELECT rt_predict('status50', 5, '-infinity');
SELECT rt_predict_label('status50', 5, '294000-01-01');
SELECT rt_predict_proba('status50', 5, '4000-01-01 BC');
SELECT count(*) FROM rt_predict_batch('status50', ARRAY[1, 2], 'infinity');
SELECT rt_predict_proba('status50', 5, '2023-06-01') ? 'p_null' AS predicts;
SELECT * FROM rt_evaluate('status50', 'test', -5);
SELECT * FROM rt_evaluate('status50', 'test', -1);
SELECT * FROM rt_evaluate('status50', 'test', 0);
SELECT pg_temp.t50_try(format('SELECT * FROM rt_evaluate(%L, %L, %s)', 'status50', 'test',
	(SELECT max(checkpoint_id) FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'm50b')));
SELECT * FROM rt_evaluate('status50', 'holdout');
SELECT * FROM rt_evaluate('status50', '');
-- every checkpoint of both models in one statement: more entries than the
-- per-session cache holds (4), so entries are evicted and rebuilt on the way
SELECT count(*) > 0 AS evaluated_all FROM headwater.checkpoint c JOIN headwater.model m USING (model_id),
	LATERAL rt_evaluate(CASE m.name WHEN 'm50' THEN 'status50' ELSE 'vip50b' END,
						CASE m.name WHEN 'm50' THEN 'val' ELSE 'train' END, c.checkpoint_id) e
	WHERE m.name IN ('m50', 'm50b');
SELECT count(*) AS checkpoints FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name IN ('m50', 'm50b');

-- 3. a damaged checkpoint (the one the task is served from, as rt_train
--    reported it): the same clear error every time, nothing half
--    built stays cached, and the session goes on
CREATE TEMP TABLE t50_ck AS
	SELECT s.checkpoint_id, s.chunk_no, s.data FROM headwater.checkpoint_state s
	WHERE s.checkpoint_id = (SELECT (r -> 'serving' -> 'vip50b' ->> 'checkpoint_id')::bigint FROM t50b_train)
	  AND s.chunk_no = (SELECT min(chunk_no) FROM headwater.checkpoint_state s2 WHERE s2.checkpoint_id = s.checkpoint_id);
-- (m50b is cached from the evaluation above; a refresh gives it a new entry
-- that must load the checkpoint again)
SELECT rt_refresh('m50b') IS NOT NULL AS refreshed;
UPDATE headwater.checkpoint_state s SET data = set_byte(s.data, 200, (get_byte(s.data, 200) + 1) % 256)
	FROM t50_ck k WHERE s.checkpoint_id = k.checkpoint_id AND s.chunk_no = k.chunk_no;
SELECT pg_temp.t50_try($$SELECT rt_predict('vip50b', 1)$$);
SELECT pg_temp.t50_try($$SELECT rt_predict('vip50b', 1)$$);
\set VERBOSITY terse
SELECT rt_predict('vip50b', 2) IS NULL;
SELECT rt_predict('vip50b', 2) IS NULL;
\set VERBOSITY default
SELECT pg_temp.t50_try($$SELECT * FROM rt_evaluate('vip50b')$$);
BEGIN;
SAVEPOINT s1;
SELECT pg_temp.t50_try($$SELECT rt_predict_label('vip50b', 3)$$);
ROLLBACK TO SAVEPOINT s1;
SELECT rt_predict_proba('status50', 5) ? 'p_null' AS other_model_predicts;
COMMIT;
-- repaired: it serves again
UPDATE headwater.checkpoint_state s SET data = k.data
	FROM t50_ck k WHERE s.checkpoint_id = k.checkpoint_id AND s.chunk_no = k.chunk_no;
SELECT rt_predict_proba('vip50b', 1) ? 'p_null' AS predicts;

-- 4. a source column dropped, then rt_refresh: its task gets a clear error,
--    the model's other tasks keep serving in the same session
SELECT rt_predict_proba('news50', 5) ? 'p_null' AS predicts;
ALTER TABLE t50shop.customers DROP COLUMN newsletter;
SELECT rt_refresh('m50') IS NOT NULL AS refreshed;
SELECT rt_predict('news50', 5);
SELECT rt_predict_proba('status50', 5) ? 'p_null' AS healthy_task_predicts;
SELECT rt_predict('news50', 5);
SELECT rt_predict_proba('qty50', ROW(5, 1)) ? 'p_null' AS healthy_task_predicts;
SELECT count(*) > 0 AS healthy_task_evaluates FROM rt_evaluate('status50', 'val');
SELECT * FROM rt_evaluate('news50', 'val');
-- two refreshes in one transaction: each is seen
BEGIN;
SELECT rt_refresh('m50') IS NOT NULL AS refreshed;
SELECT rt_predict_proba('status50', 5) ? 'p_null' AS predicts;
ALTER TABLE t50shop.orders DROP COLUMN status;
SELECT rt_refresh('m50') IS NOT NULL AS refreshed;
SELECT rt_predict('status50', 5);
ROLLBACK;
SELECT rt_predict_proba('status50', 5) ? 'p_null' AS predicts_after_rollback;
-- dropping the broken task leaves the others as they were
SELECT rt_drop_task('m50', 'news50');
SELECT rt_predict('news50', 5);
SELECT rt_predict_proba('status50', 5) ? 'p_null' AS predicts;

-- still the same backend: nothing above crashed it
SELECT pid = pg_backend_pid() AS same_backend FROM t50_pid;

SET client_min_messages = warning;
SELECT rt_drop_model('m50');
SELECT rt_drop_model('m50b');
DROP SCHEMA t50shop CASCADE;
DROP SCHEMA t50b CASCADE;
