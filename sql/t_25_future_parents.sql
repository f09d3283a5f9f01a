-- t_25_future_parents: a parent row dated after the observation time is not
-- shown (sampler option future_parents, "hide" by default; "follow" = the
-- sampler before the option).  The shape of the demo shop's leak: a
-- customer's first_order_id points at an order that may come after the
-- cutoff.  Also: the option's errors, its place in the checkpoint config,
-- and a checkpoint from before the option (no key) predicting with "hide".
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SET timezone = 'UTC';
CREATE SCHEMA t25;
CREATE TABLE t25.customer (customer_id int PRIMARY KEY, signup_at timestamptz NOT NULL, first_order_id int);
CREATE TABLE t25.orders (order_id int PRIMARY KEY, customer_id int NOT NULL REFERENCES t25.customer,
                         ordered_at timestamptz NOT NULL, amount float8);
ALTER TABLE t25.customer ADD FOREIGN KEY (first_order_id) REFERENCES t25.orders;
-- customer 1: first order on Feb 10 (after the Feb 1 cutoff); customer 2: on
-- Jan 5 (before it); customer 3: signed up on Feb 15 (after the cutoff: the
-- anchor, kept) with its first order on Jan 31 (before it: kept)
INSERT INTO t25.customer VALUES (1, '2024-01-01', NULL), (2, '2024-01-01', NULL), (3, '2024-02-15', NULL);
INSERT INTO t25.orders VALUES (10, 1, '2024-02-10', 50), (11, 1, '2024-02-20', 60),
                              (20, 2, '2024-01-05', 5), (21, 2, '2024-01-15', 7),
                              (30, 3, '2024-01-31', 9);
UPDATE t25.customer SET first_order_id = customer_id * 10;
SELECT rt_create_model('m25', 't25') IS NOT NULL AS model_ok;
SELECT table_name, column_name, semantic_type FROM rt_describe('m25')
WHERE column_name IN ('signup_at', 'ordered_at', 'first_order_id') ORDER BY 1, 2;
SELECT s ->> 'seeds' AS seeds
FROM rt_create_task('m25', 't25_buys', $$
	SELECT customer_id, timestamptz '2024-02-01' AS obs_time,
	       EXISTS (SELECT 1 FROM t25.orders o WHERE o.customer_id = c.customer_id
	               AND o.ordered_at >= '2024-02-01' AND o.ordered_at < '2024-03-01') AS buys
	FROM t25.customer c $$, options => '{"split_ratios": [1, 0, 0]}') s;
RESET client_min_messages;

\i sql/include/err.sql

-- the rows of each sequence of a batch: (anchor customer, rows in order);
-- in a schema of its own, as it outlives the reconnection below
CREATE SCHEMA t25fn;
CREATE FUNCTION t25fn.seq_rows(bid bigint, n int)
RETURNS TABLE (customer text, seq_rows text) LANGUAGE sql AS $$
	SELECT (SELECT min(row_key) FROM rt_batch_sequence(bid, b) WHERE seq_row = 1),
	       (SELECT string_agg(table_name || ' ' || coalesce(row_key, '-'), ', ' ORDER BY seq_row)
	        FROM (SELECT DISTINCT seq_row, table_name, row_key FROM rt_batch_sequence(bid, b)
	              WHERE NOT is_padding) r)
	FROM generate_series(0, n - 1) b ORDER BY 1
$$;

-- 1. default (hide): customer 1 shows neither its first order (Feb 10) nor
-- any other order (both after the cutoff); customer 2 shows its first order
-- (Jan 5) as a parent; customer 3, signed up after the cutoff, is the
-- anchor and stays, with its first order (Jan 31)
SELECT * FROM t25fn.seq_rows((SELECT b FROM rt_sample_batches('m25', 't25_buys', n => 1, batch_size => 3, seq_len => 32) b), 3);
-- 2. follow: customer 1's first order, dated after the cutoff, comes back
-- (the leak: an order inside the label window)
SELECT * FROM t25fn.seq_rows((SELECT b FROM rt_sample_batches('m25', 't25_buys', n => 1, batch_size => 3, seq_len => 32,
                                                                options => '{"future_parents": "follow"}') b), 3);
-- and "hide" spelled out is the default, batch for batch
CREATE TEMP TABLE ids_default AS SELECT b FROM rt_sample_batches('m25', 't25_buys', n => 1, batch_size => 3, seq_len => 32) b;
CREATE TEMP TABLE ids_hide AS SELECT b FROM rt_sample_batches('m25', 't25_buys', n => 1, batch_size => 3, seq_len => 32,
                                                              options => '{"future_parents": "hide"}') b;
SELECT (SELECT t."values" FROM ids_default, rt_batch_tensor(ids_default.b, 'seq_row_ids') t) =
       (SELECT t."values" FROM ids_hide, rt_batch_tensor(ids_hide.b, 'seq_row_ids') t) AS hide_is_default;

-- 3. errors: rt_sample_batches and rt_train (before any job starts)
SELECT * FROM pg_temp.err($$ SELECT rt_sample_batches('m25', 't25_buys', options => '{"future_parents": "show"}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_sample_batches('m25', 't25_buys', options => '{"future_parents": true}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_train('m25', steps => 1, options => '{"future_parents": "show"}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_train('m25', steps => 1, options => '{"future_parents": 1}') $$);

-- 4. the option is stored with the checkpoint, and prediction samples as
-- training did: a model trained with "follow" shows customer 1's future
-- first order in rt_predict's batch
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m25', steps => 2, preset => 'tiny',
              options => '{"val_every": 1000, "checkpoint_every": 1000, "val_batches": 1, "val_rows": 4,
                           "log_every": 1, "warmup_steps": 0, "seed": 25, "future_parents": "follow"}') r;
RESET client_min_messages;
SELECT config ->> 'future_parents' AS future_parents FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm25';
SELECT * FROM t25fn.seq_rows(rt_debug_predict_batch('t25_buys', 1, '2024-02-01'), 1);
-- a checkpoint written before the option (no key in its config) loads and
-- predicts with the leak-free default
UPDATE headwater.checkpoint c SET config = config - 'future_parents'
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm25';
\c
SET timezone = 'UTC';
SELECT * FROM t25fn.seq_rows(rt_debug_predict_batch('t25_buys', 1, '2024-02-01'), 1);
SELECT rt_predict('t25_buys', 1, '2024-02-01') IS NOT NULL AS predicts;

SET client_min_messages = warning;
DROP SCHEMA t25 CASCADE;
DROP SCHEMA t25fn CASCADE;
SELECT rt_drop_model('m25');
