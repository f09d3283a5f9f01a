-- t_53_count_windows: the sampler option count_windows ("std" by default;
-- "events": on a long history whose events come faster than the narrowest
-- window of the timestamp std, the child-count windows reach down to half
-- the typical interval between a row's dated children; docs/sampler.md).
-- The windows themselves are checked in test_sampler_windows.c; here: the
-- option's errors, the default, its place in the checkpoint config, that
-- predictions read it from there (served with "std" the same parameters
-- predict differently, so the windows reach the model), and that a
-- checkpoint from before the option (no key) predicts as one with "std".
-- The same for mean_windows ("time" by default; "recent": windows 1-5 of
-- the child means over a row's last 1, 3, 5, 10, 20 children, checked in
-- test_sampler_means_many.c).  And for time_ramps ("events" by default:
-- the model's recency ramps narrowed by the same rule as the count
-- windows; "std": not narrowed; checked in test_sampler_windows.c and
-- test_rel_time.c).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SET timezone = 'UTC';
CREATE SCHEMA t53;
-- 24 customers, an order every 10 days (3-5 orders each); an archive of
-- notes over a century widens the timestamp std to decades
CREATE TABLE t53.customer (customer_id int PRIMARY KEY, age float8);
CREATE TABLE t53.orders (order_id int PRIMARY KEY, customer_id int NOT NULL REFERENCES t53.customer,
                         ordered_at timestamptz NOT NULL, amount float8);
CREATE TABLE t53.archive (note_id int PRIMARY KEY, noted_at timestamptz NOT NULL);
INSERT INTO t53.customer SELECT i, 20 + i FROM generate_series(1, 24) i;
INSERT INTO t53.orders SELECT 10 * c + k, c, timestamptz '2024-01-01' + (c + 10 * k) * interval '1 day', k
FROM generate_series(1, 24) c, generate_series(1, 5) k WHERE k <= 3 + c % 3;
INSERT INTO t53.archive SELECT i, timestamptz '1924-01-01' + i * interval '1000 days' FROM generate_series(0, 36) i;
SELECT rt_create_model('m53', 't53') IS NOT NULL AS model_ok;
SELECT s ->> 'seeds' AS seeds
FROM rt_create_task('m53', 't53_busy', $$
	SELECT customer_id, timestamptz '2024-03-01' AS obs_time, customer_id % 3 = 0 AS busy
	FROM t53.customer $$, options => '{"split_ratios": [1, 0, 0]}') s;
RESET client_min_messages;

\i sql/include/err.sql

-- 1. errors (before any job starts): an unknown name, a number
SELECT * FROM pg_temp.err($$ SELECT rt_train('m53', steps => 1, options => '{"count_windows": "weekly"}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_train('m53', steps => 1, options => '{"count_windows": 1}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_sample_batches('m53', 't53_busy', options => '{"count_windows": "x"}') $$);
SELECT count(*) AS batches FROM rt_sample_batches('m53', 't53_busy', n => 1, batch_size => 2, seq_len => 32,
                                                  options => '{"count_windows": "std"}');
SELECT count(*) FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'm53';
SELECT default_value FROM rt_settings() WHERE name = 'count_windows';
SELECT * FROM pg_temp.err($$ SELECT rt_train('m53', steps => 1, options => '{"mean_windows": "last5"}') $$);
SELECT default_value FROM rt_settings() WHERE name = 'mean_windows';
SELECT * FROM pg_temp.err($$ SELECT rt_train('m53', steps => 1, options => '{"time_ramps": "days"}') $$);
-- the ramps are the model's, not the batches': not an option of rt_sample_batches
SELECT * FROM pg_temp.err($$ SELECT rt_sample_batches('m53', 't53_busy', options => '{"time_ramps": "events"}') $$);
SELECT default_value FROM rt_settings() WHERE name = 'time_ramps';

-- 2. trained with "events" and "recent": the checkpoint says so
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m53', steps => 2, preset => 'tiny',
              options => '{"val_every": 1000, "checkpoint_every": 1000, "val_batches": 1, "val_rows": 4,
                           "log_every": 1, "warmup_steps": 0, "seed": 53, "count_windows": "events",
                           "mean_windows": "recent", "time_ramps": "events"}') r;
RESET client_min_messages;
SELECT config ->> 'count_windows' AS count_windows, config ->> 'mean_windows' AS mean_windows,
       config ->> 'time_ramps' AS time_ramps
FROM headwater.checkpoint c
JOIN headwater.model m USING (model_id) WHERE m.name = 'm53';
CREATE TABLE t53.p_events AS SELECT customer_id, rt_predict('t53_busy', customer_id, '2024-03-01') AS p
FROM t53.customer;

-- 3. the same parameters served with "std" predict differently: the
-- customers' order counts fall in other windows
UPDATE headwater.checkpoint c SET config = jsonb_set(config, '{count_windows}', '"std"')
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm53';
\c
SET timezone = 'UTC';
CREATE TABLE t53.p_std AS SELECT customer_id, rt_predict('t53_busy', customer_id, '2024-03-01') AS p
FROM t53.customer;
SELECT count(*) FILTER (WHERE a.p <> b.p) > 0 AS std_changes_predictions
FROM t53.p_events a JOIN t53.p_std b USING (customer_id);

-- 4. a checkpoint without the key (written before the option) is read as
-- "std": the same predictions
UPDATE headwater.checkpoint c SET config = config - 'count_windows'
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm53';
\c
SET timezone = 'UTC';
SELECT count(*) FILTER (WHERE rt_predict('t53_busy', customer_id, '2024-03-01') = b.p) AS same_as_std,
       count(*) AS customers
FROM t53.p_std b;

-- 5. served with mean_windows "time" the same parameters predict
-- differently (the last orders' mean amount is not all orders' mean); a
-- checkpoint without the key predicts as "time"
UPDATE headwater.checkpoint c SET config = jsonb_set(config, '{mean_windows}', '"time"')
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm53';
\c
SET timezone = 'UTC';
CREATE TABLE t53.p_time AS SELECT customer_id, rt_predict('t53_busy', customer_id, '2024-03-01') AS p
FROM t53.customer;
SELECT count(*) FILTER (WHERE a.p <> b.p) > 0 AS time_changes_predictions
FROM t53.p_std a JOIN t53.p_time b USING (customer_id);
UPDATE headwater.checkpoint c SET config = config - 'mean_windows'
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm53';
\c
SET timezone = 'UTC';
SELECT count(*) FILTER (WHERE rt_predict('t53_busy', customer_id, '2024-03-01') = b.p) AS same_as_time,
       count(*) AS customers
FROM t53.p_time b;

-- 6. served with time_ramps "std" the same parameters predict differently
-- (orders 10 to 60 days old fall on no ramp of a decades-wide std); a
-- checkpoint without the key predicts as "std"
UPDATE headwater.checkpoint c SET config = jsonb_set(config, '{time_ramps}', '"std"')
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm53';
\c
SET timezone = 'UTC';
CREATE TABLE t53.p_ramps_std AS SELECT customer_id, rt_predict('t53_busy', customer_id, '2024-03-01') AS p
FROM t53.customer;
SELECT count(*) FILTER (WHERE a.p <> b.p) > 0 AS std_ramps_change_predictions
FROM t53.p_time a JOIN t53.p_ramps_std b USING (customer_id);
UPDATE headwater.checkpoint c SET config = config - 'time_ramps'
FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm53';
\c
SET timezone = 'UTC';
SELECT count(*) FILTER (WHERE rt_predict('t53_busy', customer_id, '2024-03-01') = b.p) AS same_as_std_ramps,
       count(*) AS customers
FROM t53.p_ramps_std b;

SET client_min_messages = warning;
DROP SCHEMA t53 CASCADE;
SELECT rt_drop_model('m53');
