-- t_52_serving_worker: with headwater.serving_worker on, single-row
-- rt_predict / rt_predict_label go through one worker per (model,
-- checkpoint, weights) and answer what the session computes itself, bit
-- for bit; rt_serving_workers shows it to those who may predict with the
-- model; only a superuser turns it on; a killed worker costs nothing but
-- time (the session predicts itself or starts another); an idle one stops.
-- (Batching across concurrent sessions: test/serving_worker.sh.)
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t52shop', 200) IS NOT NULL AS demo;
SELECT rt_create_model('m52', 't52shop') IS NOT NULL AS created;
SELECT rt_create_task('m52', 'status52', anchor_table => 'orders', target_column => 'status') IS NOT NULL AS task;
SELECT rt_create_task('m52', 'qty52', anchor_table => 'order_items', target_column => 'quantity') IS NOT NULL AS task;
SELECT rt_train('m52', steps => 3, preset => 'tiny', options => '{"checkpoint_every": 1}') ->> 'state' AS trained;
RESET client_min_messages;
\i sql/include/err.sql

-- 1. off by default; the session's own predictions as the reference
SHOW headwater.serving_worker;
CREATE TABLE t52_orders AS
SELECT order_id, rt_predict('status52', order_id) AS p, rt_predict_label('status52', order_id) AS l
FROM t52shop.orders ORDER BY order_id LIMIT 40;
CREATE TABLE t52_items AS
SELECT order_id, line_no, rt_predict('qty52', ROW(order_id, line_no)) AS p,
       rt_predict_label('qty52', ROW(order_id, line_no)) AS l
FROM t52shop.order_items ORDER BY 1, 2 LIMIT 30;
SELECT count(*) AS workers FROM rt_serving_workers();

-- 2. on: the worker answers every single-row call, the same bits
SET headwater.serving_worker = on;
SET headwater.serving_worker_window_ms = 0;
-- (no idle stop while the test counts its rows; section 4 stops it)
SET headwater.serving_worker_idle_s = 3600;
SELECT count(*) AS orders,
       count(*) FILTER (WHERE p IS DISTINCT FROM rt_predict('status52', order_id)) AS p_differs,
       count(*) FILTER (WHERE l IS DISTINCT FROM rt_predict_label('status52', order_id)) AS l_differs
FROM t52_orders;
SELECT count(*) AS items,
       count(*) FILTER (WHERE p IS DISTINCT FROM rt_predict('qty52', ROW(order_id, line_no))) AS p_differs,
       count(*) FILTER (WHERE l IS DISTINCT FROM rt_predict_label('qty52', ROW(order_id, line_no))) AS l_differs
FROM t52_items;
-- probabilities and context labels stay in the session (not counted)
SELECT rt_predict_proba('status52', (SELECT min(order_id) FROM t52_orders)) ? 'probs' AS proba;
SELECT model, weights IN ('last', 'average') AS weights, pid IS NOT NULL AS has_pid, state, "rows",
       batches BETWEEN 1 AND "rows" AS batches
FROM rt_serving_workers();
SELECT count(*) AS worker_processes FROM pg_stat_activity WHERE backend_type = 'headwater serving';
-- the session's precision travels with its rows (the worker's own is not used)
SET headwater.serving_worker = off;
SET headwater.inference_precision = fp32;
CREATE TABLE t52_fp32 AS SELECT order_id, rt_predict('status52', order_id) AS p FROM t52_orders;
SET headwater.serving_worker = on;
SELECT count(*) FILTER (WHERE p IS DISTINCT FROM rt_predict('status52', order_id)) AS fp32_differs FROM t52_fp32;
SELECT "rows" AS rows_with_fp32 FROM rt_serving_workers();
RESET headwater.inference_precision;

-- 3. rt_serving_workers shows only models the caller may predict with;
--    only a superuser turns the worker on
CREATE ROLE t52_other;
SET ROLE t52_other;
SELECT count(*) AS visible_to_other FROM rt_serving_workers();
SELECT * FROM pg_temp.err($$SET headwater.serving_worker = on$$);
RESET ROLE;
DROP ROLE t52_other;

-- 4. a killed worker: the same answers (the session predicts itself or
--    starts another worker); with a 1 s idle time the new one stops alone
SET headwater.serving_worker_idle_s = 1;
SELECT pg_terminate_backend(pid) AS killed FROM rt_serving_workers();
SELECT pg_sleep(0.5) IS NOT NULL AS waited;
SELECT count(*) FILTER (WHERE p IS DISTINCT FROM rt_predict('status52', order_id)) AS p_differs_after_kill
FROM t52_orders;
SELECT count(*) FILTER (WHERE state = 'ready') AS restarted FROM rt_serving_workers();
SELECT pg_sleep(3) IS NOT NULL AS idle;
SELECT count(*) AS workers_after_idle FROM rt_serving_workers();
SELECT count(*) AS processes_after_idle FROM pg_stat_activity WHERE backend_type = 'headwater serving';

-- 5. a worker that cannot start (the model's owner may not log in: its
--    connection fails): the session predicts itself, promptly
CREATE ROLE t52_owner LOGIN;
GRANT USAGE ON SCHEMA t52shop TO t52_owner;
GRANT SELECT ON ALL TABLES IN SCHEMA t52shop TO t52_owner;
SET ROLE t52_owner;
SET client_min_messages = warning;
SELECT rt_create_model('m52b', 't52shop') IS NOT NULL AS created;
SELECT rt_create_task('m52b', 'status52b', anchor_table => 'orders', target_column => 'status') IS NOT NULL AS task;
SELECT rt_train('m52b', steps => 2, preset => 'tiny') ->> 'state' AS trained;
RESET client_min_messages;
RESET ROLE;
ALTER ROLE t52_owner NOLOGIN;
SET headwater.serving_worker = off;
CREATE TABLE t52_b AS SELECT order_id, rt_predict('m52b.status52b', order_id) AS p FROM t52_orders;
SET headwater.serving_worker = on;
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) FILTER (WHERE p IS DISTINCT FROM rt_predict('m52b.status52b', order_id)) AS differs_without_worker
FROM t52_b;
SELECT clock_timestamp() - :'t0'::timestamptz < interval '20 seconds' AS prompt;
SELECT count(*) AS workers_of_m52b FROM rt_serving_workers() WHERE model = 'm52b';
SET client_min_messages = warning;
SELECT rt_drop_model('m52b') IS NOT NULL AS dropped;
RESET client_min_messages;
DROP OWNED BY t52_owner;
DROP ROLE t52_owner;
RESET headwater.serving_worker;
DROP TABLE t52_orders, t52_items, t52_fp32, t52_b;
