-- t_49_count_ramps: the model option count_ramps (off by default; the
-- anchor row's child counts also reach the model as ramps in log2(1 + n),
-- so a step between 2 and 3 children is one linear map away;
-- docs/model.md).  The features are checked by hand and by finite
-- differences in the unit tests (count_ramp_features_hand_computed,
-- model_count_ramps_only_where_counted, model_count_ramps_gradient,
-- model_predict_batch_equals_single_count_ramps); here: the option's errors, its place in the
-- checkpoint config and the parameter table, and that a model trained
-- with it, and one without it (the default), both serve.  Also the other
-- model options of that kind: head_adamw, head_weight_decay, absolute_time.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SET timezone = 'UTC';
CREATE SCHEMA t49;
CREATE TABLE t49.customer (customer_id int PRIMARY KEY, age float8);
CREATE TABLE t49.orders (order_id int PRIMARY KEY, customer_id int NOT NULL REFERENCES t49.customer,
                         ordered_at timestamptz NOT NULL);
-- 24 customers with 0-5 orders in January
INSERT INTO t49.customer SELECT i, 20 + i FROM generate_series(1, 24) i;
INSERT INTO t49.orders SELECT 10 * c + k, c, timestamptz '2024-01-01' + (c + 4 * k) * interval '1 day'
FROM generate_series(1, 24) c, generate_series(1, 5) k WHERE k <= c % 6;
SELECT rt_create_model('m49', 't49') IS NOT NULL AS model_ok;
SELECT s ->> 'seeds' AS seeds
FROM rt_create_task('m49', 't49_regular', $$
	SELECT customer_id, timestamptz '2024-03-01' AS obs_time, customer_id % 6 >= 3 AS regular
	FROM t49.customer $$, options => '{"split_ratios": [1, 0, 0]}') s;
RESET client_min_messages;

\i sql/include/err.sql

-- 1. errors (before any job starts): a value that is not true or false
SELECT * FROM pg_temp.err($$ SELECT rt_train('m49', steps => 1, options => '{"count_ramps": 2}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_train('m49', steps => 1, options => '{"count_ramps": "yes"}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_train('m49', steps => 1, options => '{"count_ramps": null}') $$);

-- 2. with the option: the checkpoint says true, the parameter table has enc.cramp.w [D, 32 x 12 x 4]
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m49', steps => 2, preset => 'tiny',
              options => '{"val_every": 1000, "checkpoint_every": 1000, "val_batches": 1, "val_rows": 4,
                           "log_every": 1, "warmup_steps": 0, "seed": 49, "count_ramps": true}') r;
RESET client_min_messages;
SELECT config ->> 'count_ramps' AS count_ramps FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49';
SELECT shape FROM rt_model_params('t49_regular') WHERE name = 'enc.cramp.w';
SELECT count(*) AS served FROM t49.customer WHERE rt_predict('t49_regular', customer_id, '2024-03-01') IS NOT NULL;

-- 3. trained from scratch with the default: the checkpoint says false, no enc.cramp.w, one tensor fewer
SELECT count(*) AS tensors_with FROM rt_model_params('t49_regular') \gset
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m49', steps => 2, preset => 'tiny',
              options => '{"restart": true, "val_every": 1000, "checkpoint_every": 1000, "val_batches": 1,
                           "val_rows": 4, "log_every": 1, "warmup_steps": 0, "seed": 49}') r;
RESET client_min_messages;
SELECT config ->> 'count_ramps' AS count_ramps FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49' ORDER BY checkpoint_id DESC LIMIT 1;
SELECT count(*) FILTER (WHERE name = 'enc.cramp.w') AS cramp_tensors, :tensors_with - count(*) AS fewer
FROM rt_model_params('t49_regular');
SELECT count(*) AS served FROM t49.customer WHERE rt_predict('t49_regular', customer_id, '2024-03-01') IS NOT NULL;

-- 4. count_ramps without child_counts: nothing to ramp, so off (no error)
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m49', steps => 1, preset => 'tiny',
              options => '{"restart": true, "val_every": 1000, "checkpoint_every": 1000, "val_batches": 1,
                           "val_rows": 4, "log_every": 1, "warmup_steps": 0, "seed": 49,
                           "child_counts": false, "count_ramps": true}') r;
RESET client_min_messages;
SELECT config ->> 'count_ramps' AS count_ramps, config ->> 'child_counts' AS child_counts FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49' ORDER BY checkpoint_id DESC LIMIT 1;

-- 5. head_adamw (an option, off by default; unit model_head_adamw_moves_heads_by_adamw):
-- refused when not a flag, written into the checkpoint's config when given, false by default
SELECT * FROM pg_temp.err($$ SELECT rt_train('m49', steps => 1, options => '{"head_adamw": 2}') $$);
SELECT config ->> 'head_adamw' AS head_adamw_default FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49' ORDER BY checkpoint_id DESC LIMIT 1;
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m49', steps => 2, preset => 'tiny',
              options => '{"restart": true, "val_every": 1000, "checkpoint_every": 1000, "val_batches": 1,
                           "val_rows": 4, "log_every": 1, "warmup_steps": 0, "seed": 49, "head_adamw": true}') r;
RESET client_min_messages;
SELECT config ->> 'head_adamw' AS head_adamw FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49' ORDER BY checkpoint_id DESC LIMIT 1;
SELECT count(*) AS served FROM t49.customer WHERE rt_predict('t49_regular', customer_id, '2024-03-01') IS NOT NULL;

-- 6. head_weight_decay (0 by default: the heads undecayed; unit
-- model_head_weight_decay_only_on_heads): refused out of range or not a
-- number, the default 0 beside weight_decay's 0.3 in the checkpoint's
-- config, a value given kept apart from weight_decay
SELECT * FROM pg_temp.err($$ SELECT rt_train('m49', steps => 1, options => '{"head_weight_decay": -0.1}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_train('m49', steps => 1, options => '{"head_weight_decay": "none"}') $$);
SELECT config ->> 'weight_decay' AS weight_decay, config ->> 'head_weight_decay' AS head_weight_decay_default
FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49' ORDER BY checkpoint_id DESC LIMIT 1;
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m49', steps => 2, preset => 'tiny',
              options => '{"restart": true, "val_every": 1000, "checkpoint_every": 1000, "val_batches": 1,
                           "val_rows": 4, "log_every": 1, "warmup_steps": 0, "seed": 49,
                           "weight_decay": 0.2, "head_weight_decay": 0}') r;
RESET client_min_messages;
SELECT config ->> 'weight_decay' AS weight_decay, config ->> 'head_weight_decay' AS head_weight_decay
FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49' ORDER BY checkpoint_id DESC LIMIT 1;
SELECT count(*) AS served FROM t49.customer WHERE rt_predict('t49_regular', customer_id, '2024-03-01') IS NOT NULL;

-- 7. absolute_time (true by default; false: timestamps read relative to the
-- observation time only; unit model_absolute_time_off_reads_times_relative_only):
-- refused when not a flag, true in the checkpoint's config by default,
-- false kept when given, and such a model serves
SELECT * FROM pg_temp.err($$ SELECT rt_train('m49', steps => 1, options => '{"absolute_time": "no"}') $$);
SELECT config ->> 'absolute_time' AS absolute_time_default FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49' ORDER BY checkpoint_id DESC LIMIT 1;
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m49', steps => 2, preset => 'tiny',
              options => '{"restart": true, "val_every": 1000, "checkpoint_every": 1000, "val_batches": 1,
                           "val_rows": 4, "log_every": 1, "warmup_steps": 0, "seed": 49, "absolute_time": false}') r;
RESET client_min_messages;
SELECT config ->> 'absolute_time' AS absolute_time FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm49' ORDER BY checkpoint_id DESC LIMIT 1;
SELECT count(*) AS served FROM t49.customer WHERE rt_predict('t49_regular', customer_id, '2024-03-01') IS NOT NULL;

SET client_min_messages = warning;
SELECT rt_drop_model('m49');
DROP SCHEMA t49 CASCADE;
