-- t_43_budget: rt_train's max_minutes time budget.  A run whose budget is
-- used up before its steps stops there with a checkpoint, state succeeded
-- and "stopped_on": "max_minutes"; a later call resumes from it.  The option
-- is checked at call time like the others.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t43', 200) IS NOT NULL AS demo;
SELECT rt_create_model('m43', 't43') IS NOT NULL AS created;
SELECT (rt_create_task('m43', 'gift43', anchor_table => 'orders', target_column => 'is_gift') ->> 'seeds')::int > 0 AS task;
CREATE TEMP TABLE r43 AS
SELECT rt_train('m43', steps => 1000000, preset => 'tiny',
                options => '{"max_minutes": 0.01, "val_every": 1000, "checkpoint_every": 1000, "val_batches": 1,
                             "val_rows": 16, "log_every": 1, "warmup_steps": 0, "seed": 43}') AS r;
RESET client_min_messages;

\i sql/include/err.sql

-- 1. stopped on the budget, long before its steps, checkpointed there
SELECT r ->> 'state' AS state, r ->> 'stopped_on' AS stopped_on,
       (r ->> 'steps_done')::int BETWEEN 1 AND 999999 AS stopped_early,
       (r ->> 'wall_s')::float < 60 AS quick,
       r -> 'checkpoint_id' <> 'null' AS checkpointed
FROM r43;
SELECT c.step = (SELECT (r ->> 'steps_done')::int FROM r43) AS last_checkpoint_at_stop,
       c.val_metric IS NOT NULL AS validated
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm43' ORDER BY c.step DESC LIMIT 1;
-- the learning rate followed the budget: down from the peak (3e-3), not below the floor
CREATE TEMP VIEW lr43 AS
SELECT l.step, l.lr FROM headwater.train_log l JOIN headwater.model m USING (model_id)
WHERE m.name = 'm43' AND l.split = 'train';
SELECT (SELECT max(step) FROM lr43) = 1
       OR (SELECT lr FROM lr43 ORDER BY step DESC LIMIT 1) < (SELECT lr FROM lr43 ORDER BY step LIMIT 1) AS lr_decayed,
       (SELECT min(lr) FROM lr43) >= 2.99e-4 AS above_floor;

-- 2. a later call resumes from the stop, without a jump in the learning rate
SET client_min_messages = warning;
CREATE TEMP TABLE r43b AS
SELECT rt_train('m43', steps => (SELECT (r ->> 'steps_done')::int + 3 FROM r43), preset => 'tiny',
                options => '{"val_every": 1000, "checkpoint_every": 1000, "val_batches": 1, "val_rows": 16,
                             "log_every": 1, "warmup_steps": 0, "seed": 43}') AS r;
RESET client_min_messages;
SELECT r ->> 'state' AS state, r ->> 'stopped_on' AS stopped_on,
       (r ->> 'resumed_from')::int = (SELECT (r ->> 'steps_done')::int FROM r43) AS resumed_at_stop
FROM r43b;
SELECT count(*) AS resumed_steps,
       max(lr) <= (SELECT lr FROM lr43 WHERE step = (SELECT (r ->> 'steps_done')::int FROM r43)) * 1.000001 AS no_lr_jump,
       min(lr) >= 2.99e-4 AS above_floor
FROM lr43 WHERE step > (SELECT (r ->> 'steps_done')::int FROM r43);

-- 4. a budget is all a run needs: without steps it trains until the budget
--    ends, validating by time on the way (that the closing validation ends
--    inside the budget is the unit tests' arithmetic; here the wall time is
--    only bounded loosely, a loaded machine may be slow)
SET client_min_messages = warning;
CREATE TEMP TABLE r43c AS
SELECT rt_train('m43', preset => 'tiny',
                options => '{"restart": true, "max_minutes": 0.05, "val_batches": 1, "val_rows": 16, "seed": 43}') AS r;
RESET client_min_messages;
SELECT r ->> 'state' AS state, r ->> 'stopped_on' AS stopped_on,
       (r ->> 'steps_done')::int > 1 AS trained,
       (r ->> 'wall_s')::float BETWEEN 1.5 AND 3.0 + 5 AS near_budget
FROM r43c;
-- validations spaced by time: more than the closing one, at most 20 in all
SELECT count(DISTINCT l.step) BETWEEN 2 AND 20 AS validated_by_time
FROM headwater.train_log l JOIN headwater.model m USING (model_id)
WHERE m.name = 'm43' AND l.split = 'val'
  AND l.job_id = (SELECT (r ->> 'job_id')::bigint FROM r43c);
-- each validation by time wrote a checkpoint, and every checkpoint ends its
-- schedule where the run stood (a resume after a cancel goes on from there)
SELECT count(*) FILTER (WHERE c.val_metric IS NOT NULL) >= 2 AS checkpoints_at_validations,
       bool_and((c.config ->> 'total_steps')::int = c.step) AS schedules_end_at_their_step
FROM headwater.checkpoint c WHERE c.job_id = (SELECT (r ->> 'job_id')::bigint FROM r43c);

-- 3. checked at call time
SELECT * FROM pg_temp.err($$SELECT rt_train('m43', steps => 10, preset => 'tiny', options => '{"max_minutes": 0}')$$);
SELECT * FROM pg_temp.err($$SELECT rt_train('m43', steps => 10, preset => 'tiny', options => '{"max_minutes": -1}')$$);
SELECT * FROM pg_temp.err($$SELECT rt_train('m43', steps => 10, preset => 'tiny', options => '{"max_minutes": "5"}')$$);
