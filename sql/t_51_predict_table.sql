-- t_51_predict_table: batched prediction equals single-row prediction bit
-- for bit (same checkpoint, same obs_time), for rt_predict_batch,
-- rt_predict_table and rt_predict_into; one-column and composite keys;
-- per-row obs_time; bad queries; the INSERT privilege; a cancel during
-- rt_predict_into leaves the target table as it was (one transaction).
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t51shop', 200) IS NOT NULL AS demo;
SELECT rt_create_model('m51', 't51shop') IS NOT NULL AS created;
SELECT rt_create_task('m51', 'status51', anchor_table => 'orders', target_column => 'status') IS NOT NULL AS task;
SELECT rt_create_task('m51', 'qty51', anchor_table => 'order_items', target_column => 'quantity') IS NOT NULL AS task;
SELECT rt_train('m51', steps => 3, preset => 'tiny', options => '{"checkpoint_every": 1}') ->> 'state' AS trained;
RESET client_min_messages;
SET TimeZone = 'UTC';
\i sql/include/err.sql

-- 1. batch == single, bit for bit: float8 equality of the prediction and
-- p_null, jsonb equality of the detail; 150 orders in one call (several
-- batches of the model) vs one rt_predict per row
CREATE TABLE t51_ids AS SELECT order_id, ordered_at FROM t51shop.orders ORDER BY order_id LIMIT 150;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE b.prediction IS DISTINCT FROM rt_predict('status51', i.order_id)) AS prediction_differs,
       count(*) FILTER (WHERE b.detail IS DISTINCT FROM rt_predict_proba('status51', i.order_id)) AS detail_differs,
       count(*) FILTER (WHERE b.label IS DISTINCT FROM rt_predict_label('status51', i.order_id)) AS label_differs
FROM rt_predict_batch('status51', (SELECT array_agg(order_id ORDER BY order_id) FROM t51_ids)) b
JOIN t51_ids i ON i.order_id::text = b.row_id;
-- rt_predict_table with a per-row obs_time (the order's own time) against
-- rt_predict at that time, and without obs_time against the batch
SELECT count(*) AS rows,
       count(*) FILTER (WHERE p.obs_time IS DISTINCT FROM i.ordered_at) AS obs_time_differs,
       count(*) FILTER (WHERE p.prediction IS DISTINCT FROM rt_predict('status51', i.order_id, i.ordered_at)) AS prediction_differs,
       count(*) FILTER (WHERE p.detail IS DISTINCT FROM rt_predict_proba('status51', i.order_id, i.ordered_at)) AS detail_differs
FROM rt_predict_table('status51', 'SELECT order_id, ordered_at AS obs_time FROM t51_ids ORDER BY order_id') p
JOIN t51_ids i ON i.order_id::text = p.row_id;
SELECT count(*) AS differs FROM
  (SELECT row_id, prediction, p_null, detail FROM rt_predict_table('status51', 'SELECT order_id FROM t51_ids')
   EXCEPT ALL
   SELECT row_id, prediction, p_null, detail FROM rt_predict_batch('status51', (SELECT array_agg(order_id) FROM t51_ids))) d;
-- headwater.serving_threads: a multi-batch request on one thread gives the
-- same bits as on the whole team (the default); values outside 0..1024 are
-- refused by the setting itself
CREATE TEMP TABLE t51_team AS
SELECT row_id, prediction, p_null, detail FROM rt_predict_batch('status51', (SELECT array_agg(order_id) FROM t51_ids));
SET headwater.serving_threads = 1;
SELECT current_setting('headwater.serving_threads') AS threads, count(*) AS differs FROM
  (SELECT * FROM t51_team
   EXCEPT ALL
   SELECT row_id, prediction, p_null, detail FROM rt_predict_batch('status51', (SELECT array_agg(order_id) FROM t51_ids))) d;
RESET headwater.serving_threads;
SELECT code FROM pg_temp.err($$SET headwater.serving_threads = -1$$);
-- headwater.serving_device: 'cpu' gives the team's bits; 'auto' too on a
-- server without a GPU (and the GPU's within bf16 bounds where there is
-- one); 'cuda' scores on a GPU or is refused with 0A000, naming the task
-- and why; a value outside auto/cpu/cuda is refused by the setting
SET headwater.serving_device = 'cpu';
SELECT count(*) AS cpu_differs FROM
  (SELECT * FROM t51_team
   EXCEPT ALL
   SELECT row_id, prediction, p_null, detail FROM rt_predict_batch('status51', (SELECT array_agg(order_id) FROM t51_ids))) d;
SET headwater.serving_device = 'auto';
SELECT count(*) AS rows, count(*) FILTER (WHERE abs(a.prediction - t.prediction) > 5e-3) AS auto_differs
FROM rt_predict_batch('status51', (SELECT array_agg(order_id) FROM t51_ids)) a JOIN t51_team t USING (row_id);
SET headwater.serving_device = 'cuda';
SELECT CASE WHEN code = '-' THEN 'scored on a GPU'
            WHEN code = '0A000' AND message LIKE 'headwater.serving_device ''cuda'' cannot score task "status51": %'
                 AND hint LIKE 'Set headwater.serving_device to ''auto''%' THEN 'refused: no GPU'
            ELSE code || ' ' || message END AS cuda
FROM pg_temp.err($$SELECT count(*) FROM rt_predict_batch('status51', (SELECT array_agg(order_id) FROM t51_ids))$$);
-- a single batch stays on the session's CPU model whatever the device
SELECT rt_predict('status51', (SELECT min(order_id) FROM t51_ids)) IS NOT DISTINCT FROM
       (SELECT prediction FROM t51_team ORDER BY row_id::int LIMIT 1) AS single_row_on_cpu;
RESET headwater.serving_device;
SELECT code FROM pg_temp.err($$SET headwater.serving_device = 'tpu'$$);
-- composite key: the key columns in primary key order, or one ROW column
SELECT count(*) AS rows,
       count(*) FILTER (WHERE p.prediction IS DISTINCT FROM rt_predict('qty51', ROW(k.order_id, k.line_no))) AS differs
FROM (SELECT order_id, line_no FROM t51shop.order_items ORDER BY 1, 2 LIMIT 60) k
JOIN rt_predict_table('qty51', 'SELECT order_id, line_no FROM t51shop.order_items ORDER BY 1, 2 LIMIT 60') p
  ON p.row_id = format('(%s, %s)', k.order_id, k.line_no);
SELECT count(*) AS rows FROM rt_predict_table('qty51', 'SELECT ROW(order_id, line_no) FROM t51shop.order_items LIMIT 7');
-- query order is kept
SELECT row_id FROM rt_predict_table('status51', 'SELECT order_id FROM t51_ids ORDER BY order_id DESC LIMIT 3');

-- 2. bad queries: errors with a SQLSTATE, the task named, a hint; a
-- statement other than one SELECT is never run
SELECT q, e.* FROM unnest(ARRAY[
	NULL, ' ; ', 'SELECT FROM', 'DELETE FROM t51_ids', 'SELECT 1; SELECT 2',
	'SELECT order_id, ordered_at::text AS obs_time FROM t51_ids', 'SELECT ordered_at AS obs_time FROM t51_ids',
	'SELECT 999999', 'SELECT NULL::int', 'SELECT 1, 2',
	'SELECT order_id, ''infinity''::timestamptz AS obs_time FROM t51_ids']) WITH ORDINALITY AS u(q, i),
	pg_temp.err(format('SELECT * FROM rt_predict_table(%L, %L)', 'status51', q)) e ORDER BY i;
SELECT count(*) AS ids_kept FROM t51_ids;
SELECT * FROM pg_temp.err($$SELECT * FROM rt_predict_table('nosuch51', 'SELECT 1')$$);
SELECT count(*) FROM rt_predict_table('status51', 'SELECT order_id FROM t51_ids WHERE false');

-- 3. rt_predict_into: batches with a NOTICE each, only the target's
-- columns among the outputs, other columns get their defaults
CREATE TABLE t51_preds (row_id text, prediction float8, label text, p_null float8, note text DEFAULT 'x');
CREATE TABLE t51_norowid (prediction float8);
SELECT rt_predict_into('status51', 'SELECT order_id FROM t51_ids', 't51_preds', batch_rows => 60);
SELECT count(*) AS rows, count(DISTINCT note) AS notes,
       count(*) FILTER (WHERE p.prediction IS DISTINCT FROM rt_predict('status51', p.row_id::int)) AS prediction_differs,
       count(*) FILTER (WHERE p.label IS DISTINCT FROM rt_predict_label('status51', p.row_id::int)) AS label_differs
FROM t51_preds p;
SELECT e.* FROM unnest(ARRAY[
	$$SELECT rt_predict_into('status51', 'SELECT order_id FROM t51_ids', NULL)$$,
	$$SELECT rt_predict_into('status51', 'SELECT order_id FROM t51_ids', 0::regclass)$$,
	$$SELECT rt_predict_into('status51', 'SELECT order_id FROM t51_ids', 't51_preds', batch_rows => 0)$$,
	$$SELECT rt_predict_into('status51', 'SELECT order_id FROM t51_ids', 't51_norowid')$$]) WITH ORDINALITY AS u(c, i),
	pg_temp.err(c) e ORDER BY i;
-- the caller needs the predict right and INSERT on the target, and the
-- query runs as the caller
CREATE ROLE t51_reader;
SELECT rt_grant_predict('m51', 't51_reader') IS NOT NULL AS granted;
GRANT USAGE ON SCHEMA t51shop TO t51_reader;
GRANT SELECT ON t51shop.orders, t51_ids TO t51_reader;
SET ROLE t51_reader;
SELECT * FROM pg_temp.err($$SELECT rt_predict_into('m51.status51', 'SELECT order_id FROM t51_ids', 't51_preds')$$);
RESET ROLE;
GRANT INSERT ON t51_preds TO t51_reader;
SET ROLE t51_reader;
SELECT rt_predict_into('m51.status51', 'SELECT order_id FROM t51_ids ORDER BY order_id LIMIT 5', 't51_preds');
SELECT * FROM pg_temp.err($$SELECT rt_predict_into('m51.status51', 'SELECT order_id FROM t51shop.order_items', 't51_preds')$$);
RESET ROLE;
SELECT count(*) AS rows FROM t51_preds;

-- 4. cancel during rt_predict_into: the whole call is one transaction, so
-- the target keeps exactly the rows it had (a big query, cancelled by a
-- statement timeout part-way)
SET client_min_messages = warning;
SET statement_timeout = '1500ms';
SELECT rt_predict_into('status51', 'SELECT order_id FROM t51_ids, generate_series(1, 400)', 't51_preds', batch_rows => 100);
RESET statement_timeout;
RESET client_min_messages;
SELECT count(*) AS rows_after_cancel FROM t51_preds;
DROP TABLE t51_preds, t51_norowid, t51_ids;
DROP OWNED BY t51_reader;
DROP ROLE t51_reader;
