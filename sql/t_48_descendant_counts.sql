-- t_48_descendant_counts: the sampler option descendant_counts (on by
-- default; on, a row's free child-count slots count rows two or three FKs
-- down, here a customer's order lines and their returns; docs/sampler.md).  The
-- counts themselves are checked by hand in the unit test
-- sampler_descendant_counts_hand_case; here: the option's errors, its
-- place in the checkpoint config, that predictions read it from there (a
-- model served with the option flipped predicts differently, so the counts
-- reach the model), that a checkpoint from before the option (no key)
-- predicts as one trained without it, the default, and that a resumed
-- run keeps its checkpoint's sampler options and seed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SET timezone = 'UTC';
CREATE SCHEMA t48;
CREATE TABLE t48.customer (customer_id int PRIMARY KEY, age float8);
CREATE TABLE t48.orders (order_id int PRIMARY KEY, customer_id int NOT NULL REFERENCES t48.customer,
                         ordered_at timestamptz NOT NULL);
CREATE TABLE t48.item (item_id int PRIMARY KEY, order_id int NOT NULL REFERENCES t48.orders, qty float8);
CREATE TABLE t48.ret (ret_id int PRIMARY KEY, item_id int NOT NULL REFERENCES t48.item,
                      returned_at timestamptz NOT NULL);
-- 24 customers, 1-3 orders each in January, two lines per order; every
-- third customer returned its first line of each order
INSERT INTO t48.customer SELECT i, 20 + i FROM generate_series(1, 24) i;
INSERT INTO t48.orders SELECT 10 * c + k, c, timestamptz '2024-01-01' + (c + 7 * k) * interval '1 day'
FROM generate_series(1, 24) c, generate_series(1, 3) k WHERE k <= 1 + c % 3;
INSERT INTO t48.item SELECT 10 * order_id + l, order_id, l FROM t48.orders, generate_series(1, 2) l;
INSERT INTO t48.ret SELECT i.item_id, i.item_id, o.ordered_at + interval '3 days'
FROM t48.item i JOIN t48.orders o USING (order_id) WHERE o.customer_id % 3 = 0 AND i.qty = 1;
SELECT rt_create_model('m48', 't48') IS NOT NULL AS model_ok;
SELECT s ->> 'seeds' AS seeds
FROM rt_create_task('m48', 't48_returner', $$
	SELECT customer_id, timestamptz '2024-03-01' AS obs_time, customer_id % 3 = 0 AS returner
	FROM t48.customer $$, options => '{"split_ratios": [1, 0, 0]}') s;
RESET client_min_messages;

\i sql/include/err.sql

-- 1. errors (before any job starts): a value that is not true or false
SELECT * FROM pg_temp.err($$ SELECT rt_train('m48', steps => 1, options => '{"descendant_counts": 1}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_train('m48', steps => 1, options => '{"descendant_counts": "yes"}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_sample_batches('m48', 't48_returner', options => '{"descendant_counts": 1}') $$);
SELECT count(*) AS batches FROM rt_sample_batches('m48', 't48_returner', n => 1, batch_size => 2, seq_len => 32,
                                                  options => '{"descendant_counts": false}');

-- 2. trained with the option: the checkpoint says true
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m48', steps => 2, preset => 'tiny',
              options => '{"val_every": 1000, "checkpoint_every": 1000, "val_batches": 1, "val_rows": 4,
                           "log_every": 1, "warmup_steps": 0, "seed": 48, "descendant_counts": true}') r;
RESET client_min_messages;
SELECT config ->> 'descendant_counts' AS descendant_counts FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm48';
CREATE TABLE t48.p_on AS SELECT customer_id, rt_predict('t48_returner', customer_id, '2024-03-01') AS p
FROM t48.customer;

-- 3. the same parameters served with the option off predict differently
-- for customers with returns (their counts are gone) ...
UPDATE headwater.checkpoint c SET config = jsonb_set(config, '{descendant_counts}', 'false')
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm48';
\c
SET timezone = 'UTC';
CREATE TABLE t48.p_off AS SELECT customer_id, rt_predict('t48_returner', customer_id, '2024-03-01') AS p
FROM t48.customer;
SELECT count(*) FILTER (WHERE a.p <> b.p) > 0 AS off_changes_predictions
FROM t48.p_on a JOIN t48.p_off b USING (customer_id);
-- 4. ... and a checkpoint without the key (written before the option) is
-- read as off: the same predictions as with false
UPDATE headwater.checkpoint c SET config = config - 'descendant_counts'
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm48';
\c
SET timezone = 'UTC';
SELECT count(*) FILTER (WHERE rt_predict('t48_returner', customer_id, '2024-03-01') = b.p) AS same_as_off,
       count(*) AS customers
FROM t48.p_off b;

-- 5. trained from scratch with the default: the checkpoint says true
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m48', steps => 2, preset => 'tiny',
              options => '{"restart": true, "val_every": 1000, "checkpoint_every": 1000, "val_batches": 1,
                           "val_rows": 4, "log_every": 1, "warmup_steps": 0, "seed": 48}') r;
RESET client_min_messages;
SELECT config ->> 'descendant_counts' AS descendant_counts FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm48' ORDER BY checkpoint_id DESC LIMIT 1;

-- 6. a resumed run keeps its checkpoint's sampler options (not today's
-- defaults) unless the call names them
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m48', steps => 2, preset => 'tiny',
              options => '{"restart": true, "val_every": 1000, "checkpoint_every": 1000, "val_batches": 1,
                           "val_rows": 4, "log_every": 1, "warmup_steps": 0, "seed": 48,
                           "descendant_counts": false, "key_cells": true, "recent_children": 8}') r;
SELECT r ->> 'state' AS state FROM rt_train('m48', steps => 4, preset => 'tiny') r;
RESET client_min_messages;
SELECT step, config ->> 'descendant_counts' AS descendant_counts, config ->> 'key_cells' AS key_cells,
       config ->> 'recent_children' AS recent_children, config ->> 'seed' AS seed
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm48' ORDER BY checkpoint_id DESC LIMIT 1;
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m48', steps => 6, preset => 'tiny', options => '{"descendant_counts": true}') r;
RESET client_min_messages;
SELECT step, config ->> 'descendant_counts' AS descendant_counts, config ->> 'key_cells' AS key_cells
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm48' ORDER BY checkpoint_id DESC LIMIT 1;
-- a mix of the checkpoint's recent_children (8) and a narrower child_width is refused
\i sql/include/err.sql
SELECT * FROM pg_temp.err($$ SELECT rt_train('m48', steps => 8, preset => 'tiny', options => '{"child_width": 4}') $$);
SELECT max(step) AS last_step FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'm48';
-- recent_children alone is checked against the child_width the run keeps (32), not the default (16)
SET client_min_messages = warning;
SELECT r ->> 'state' AS state FROM rt_train('m48', steps => 8, preset => 'tiny', options => '{"child_width": 32}') r;
SELECT r ->> 'state' AS state FROM rt_train('m48', steps => 10, preset => 'tiny', options => '{"recent_children": 20}') r;
RESET client_min_messages;
SELECT step, config ->> 'child_width' AS child_width, config ->> 'recent_children' AS recent_children
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm48' ORDER BY checkpoint_id DESC LIMIT 1;
-- a damaged config (child_width 0) is refused, naming the checkpoint, until the call names the option
UPDATE headwater.checkpoint c SET config = jsonb_set(config, '{child_width}', '0')
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm48' AND c.step = 10;
SELECT code, regexp_replace(message, 'checkpoint [0-9]+', 'checkpoint N') AS message, hint
FROM pg_temp.err($$ SELECT rt_train('m48', steps => 12, preset => 'tiny') $$);
SET client_min_messages = warning;
SELECT r ->> 'state' AS state FROM rt_train('m48', steps => 12, preset => 'tiny', options => '{"child_width": 24}') r;
RESET client_min_messages;
SELECT step, config ->> 'child_width' AS child_width, config ->> 'recent_children' AS recent_children
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm48' ORDER BY checkpoint_id DESC LIMIT 1;

SET client_min_messages = warning;
DROP SCHEMA t48 CASCADE;
SELECT rt_drop_model('m48');
