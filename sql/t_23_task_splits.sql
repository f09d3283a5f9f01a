-- t_23_task_splits: caller-given splits of query tasks on the demo shop: a
-- split column, a time split (options split/val_from/test_from), their
-- errors, and the default hash split unchanged.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
RESET client_min_messages;
SET timezone = 'UTC';
SELECT rt_demo_shop('ts_shop', 200) IS NOT NULL AS shop_ok;
SELECT rt_create_model('ts_shop', 'ts_shop') IS NOT NULL AS model_ok;
SET search_path = ts_shop, public;

-- 1. a split column decides each seed's split; it is neither a feature nor the target
CREATE TEMP VIEW col_q AS
	SELECT order_id, ordered_at AS observation_time, is_gift,
	       CASE order_id % 5 WHEN 0 THEN 'test' WHEN 1 THEN 'val' ELSE 'train' END AS split
	FROM orders;
SELECT s ->> 'target' AS target, s ->> 'split_method' AS split_method, s -> 'splits' AS splits,
       s ->> 'seeds' AS seeds
FROM rt_create_task('ts_shop', 'ts_col', $$ SELECT * FROM col_q $$) AS s;
SELECT split, count(*) FROM col_q GROUP BY split ORDER BY split;
SELECT n_train = (SELECT count(*) FROM col_q WHERE split = 'train') AS train_ok,
       n_val = (SELECT count(*) FROM col_q WHERE split = 'val') AS val_ok,
       n_test = (SELECT count(*) FROM col_q WHERE split = 'test') AS test_ok,
       target, split_method, options
FROM rt_tasks('ts_shop') WHERE task = 'ts_col';
-- the stored splits are read back by the sampler (every split can be sampled)
SELECT split, count(*) AS batches
FROM (VALUES ('train'), ('val'), ('test')) v(split),
     LATERAL rt_sample_batches('ts_shop', 'ts_col', v.split, n => 1, batch_size => 2, seq_len => 16) b
GROUP BY split ORDER BY split;
-- a varchar split column works too, and a split may be empty
SELECT s -> 'splits' = (SELECT jsonb_build_object('train', count(*) FILTER (WHERE order_id % 2 = 0),
                                                 'val', 0, 'test', count(*) FILTER (WHERE order_id % 2 = 1))
                        FROM orders) AS varchar_ok
FROM rt_create_task('ts_shop', 'ts_col2', $$
	SELECT order_id, is_gift, (CASE WHEN order_id % 2 = 0 THEN 'train' ELSE 'test' END)::varchar(5) AS split
	FROM orders $$) AS s;

-- 2. bad split values: 22023 naming the task, the first bad value and a row count
\set VERBOSITY default
SELECT rt_create_task('ts_shop', 'ts_bad1', $$
	SELECT order_id, is_gift, CASE WHEN order_id % 10 = 0 THEN 'validation' ELSE 'train' END AS split FROM orders $$);
SELECT rt_create_task('ts_shop', 'ts_bad2', $$
	SELECT order_id, is_gift, CASE WHEN order_id <= 3 THEN NULL ELSE 'test' END AS split FROM orders $$);
SELECT rt_create_task('ts_shop', 'ts_bad3', $$ SELECT order_id, is_gift, 1 AS split FROM orders $$);
SELECT rt_create_task('ts_shop', 'ts_bad4', $$ SELECT order_id, is_gift, 'Train' AS split FROM orders $$);

-- 3. a time split: obs < val_from train, val_from <= obs < test_from val, the rest test
CREATE TEMP VIEW time_q AS
	SELECT order_id, ordered_at AS observation_time, is_gift FROM orders;
SELECT s ->> 'split_method' AS split_method, s -> 'splits' AS splits,
       s -> 'splits' = (SELECT jsonb_build_object(
                            'train', count(*) FILTER (WHERE observation_time < '2024-09-01 00:00+00'),
                            'val', count(*) FILTER (WHERE observation_time >= '2024-09-01 00:00+00'
                                                      AND observation_time < '2024-11-15 12:00+00'),
                            'test', count(*) FILTER (WHERE observation_time >= '2024-11-15 12:00+00'))
                        FROM time_q) AS counts_match_sql
FROM rt_create_task('ts_shop', 'ts_time', $$ SELECT * FROM time_q $$,
                    options => '{"split": "time", "val_from": "2024-09-01", "test_from": "2024-11-15 12:00"}') AS s;
SELECT task, n_train, n_val, n_test, split_method, options ->> 'val_from' AS val_from, label_history
FROM rt_tasks('ts_shop') WHERE task = 'ts_time';
-- the observation time may be the anchor row's own time (orders.ordered_at)
SELECT s ->> 'observation_time' AS observation_time, s -> 'splits' = t.splits AS same_as_query_column
FROM rt_create_task('ts_shop', 'ts_time_anchor', $$ SELECT order_id, is_gift FROM orders $$,
                    options => '{"split": "time", "val_from": "2024-09-01", "test_from": "2024-11-15 12:00"}') AS s,
     (SELECT jsonb_build_object('train', n_train, 'val', n_val, 'test', n_test) AS splits
      FROM rt_tasks('ts_shop') WHERE task = 'ts_time') t;
-- equal cutoffs: no val split
SELECT s -> 'splits' ->> 'val' AS val
FROM rt_create_task('ts_shop', 'ts_time_noval', $$ SELECT * FROM time_q $$,
                    options => '{"split": "time", "val_from": "2024-10-01", "test_from": "2024-10-01"}') AS s;
SELECT rt_sample_batches('ts_shop', 'ts_time', 'test', n => 1, batch_size => 2, seq_len => 16) > 0 AS sampled;

-- 4. bad time-split options: 22023 with hints
SELECT rt_create_task('ts_shop', 'ts_tbad1', $$ SELECT * FROM time_q $$,
                      options => '{"split": "time", "val_from": "2024-09-01"}');
SELECT rt_create_task('ts_shop', 'ts_tbad2', $$ SELECT * FROM time_q $$, options => '{"split": "time"}');
SELECT rt_create_task('ts_shop', 'ts_tbad3', $$ SELECT * FROM time_q $$,
                      options => '{"split": "time", "val_from": "next june", "test_from": "2024-11-01"}');
SELECT rt_create_task('ts_shop', 'ts_tbad4', $$ SELECT * FROM time_q $$,
                      options => '{"split": "time", "val_from": 20240901, "test_from": "2024-11-01"}');
SELECT rt_create_task('ts_shop', 'ts_tbad5', $$ SELECT * FROM time_q $$,
                      options => '{"split": "time", "val_from": "2024-11-01", "test_from": "2024-09-01"}');
SELECT rt_create_task('ts_shop', 'ts_tbad6', $$ SELECT * FROM time_q $$, options => '{"split": "random"}');
SELECT rt_create_task('ts_shop', 'ts_tbad7', $$ SELECT * FROM time_q $$, options => '{"val_from": "2024-09-01"}');
-- no observation time: products has no time column
SELECT rt_create_task('ts_shop', 'ts_tbad8', $$ SELECT product_id, price FROM products $$,
                      options => '{"split": "time", "val_from": "2024-09-01", "test_from": "2024-11-01"}');
-- a cell task has no query to split by time
SELECT rt_create_task('ts_shop', 'ts_tbad9', anchor_table => 'orders', target_column => 'is_gift',
                      options => '{"split": "time", "val_from": "2024-09-01", "test_from": "2024-11-01"}');
-- a split column and a time split at once
SELECT rt_create_task('ts_shop', 'ts_tbad10', $$ SELECT * FROM col_q $$,
                      options => '{"split": "time", "val_from": "2024-09-01", "test_from": "2024-11-01"}');
SELECT count(*) AS tasks_after_errors FROM rt_tasks('ts_shop');

-- 5. the hash split is the default and {"split": "hash"} changes nothing
SELECT s -> 'splits' AS splits, s ? 'split_method' AS has_split_method
FROM rt_create_task('ts_shop', 'ts_hash', $$ SELECT * FROM time_q $$) AS s;
CREATE TEMP TABLE hash1 AS SELECT n_train, n_val, n_test, split_method FROM rt_tasks('ts_shop') WHERE task = 'ts_hash';
CREATE TEMP TABLE hash1_id AS
	SELECT rt_sample_batches('ts_shop', 'ts_hash', 'val', n => 1, batch_size => 4, seq_len => 16) AS id;
CREATE TEMP TABLE hash1_batch AS SELECT seed_idx FROM headwater.batch WHERE batch_id IN (SELECT id FROM hash1_id);
SELECT rt_drop_task('ts_shop', 'ts_hash');
SELECT s -> 'splits' AS splits
FROM rt_create_task('ts_shop', 'ts_hash', $$ SELECT * FROM time_q $$, options => '{"split": "hash"}') AS s;
CREATE TEMP TABLE hash2_id AS
	SELECT rt_sample_batches('ts_shop', 'ts_hash', 'val', n => 1, batch_size => 4, seq_len => 16) AS id;
CREATE TEMP TABLE hash2_batch AS SELECT seed_idx FROM headwater.batch WHERE batch_id IN (SELECT id FROM hash2_id);
SELECT (SELECT row(n_train, n_val, n_test, split_method) FROM hash1) =
       (SELECT row(n_train, n_val, n_test, split_method) FROM rt_tasks('ts_shop') WHERE task = 'ts_hash') AS same_split,
       (SELECT seed_idx FROM hash1_batch) = (SELECT seed_idx FROM hash2_batch) AS same_batch,
       (SELECT cardinality(seed_idx) FROM hash2_batch) AS batch_seeds;
SELECT task, split_method FROM rt_tasks('ts_shop') ORDER BY task;

SELECT rt_drop_model('ts_shop');
SET client_min_messages = warning;
DROP SCHEMA ts_shop CASCADE;
