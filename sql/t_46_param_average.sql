-- t_46_param_average: rt_train's ema_decay (the parameter average).
-- Validation measures the average and predictions read it: each
-- checkpoint's recorded val metric (every val row) equals rt_evaluate on the
-- val split at that checkpoint -- which would not hold if serving read the
-- last parameters while validation read the average -- and the two differ
-- (the same checkpoint's average and last parameters predict differently).
-- The decay is kept in the checkpoint's config and survives a resume.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t46', 200) IS NOT NULL AS demo;
SELECT rt_create_model('m46', 't46') IS NOT NULL AS created;
SELECT (rt_create_task('m46', 'votes46', anchor_table => 'reviews', target_column => 'helpful_votes',
                       target_stype => 'numerical') ->> 'seeds')::int > 0 AS task;
CREATE TEMP TABLE r46 AS
SELECT rt_train('m46', steps => 20, preset => 'tiny',
                options => '{"ema_decay": 0.9, "val_every": 10, "checkpoint_every": 10, "val_batches": 1,
                             "val_rows": 100000, "seed": 3}') AS r;
-- the same model, same seed, without the average (ema_decay 0)
SELECT rt_create_model('m46b', 't46') IS NOT NULL AS created;
SELECT (rt_create_task('m46b', 'votes46b', anchor_table => 'reviews', target_column => 'helpful_votes',
                       target_stype => 'numerical') ->> 'seeds')::int > 0 AS task;
SELECT rt_train('m46b', steps => 20, preset => 'tiny',
                options => '{"ema_decay": 0, "val_every": 10, "checkpoint_every": 10, "val_batches": 1,
                             "val_rows": 100000, "seed": 3}') ->> 'state' AS state_b;
RESET client_min_messages;

-- 1. the run, its checkpoints and their recorded decay
SELECT r ->> 'state' AS state, r ->> 'steps_done' AS steps FROM r46;
SELECT m.name, c.step, c.config ->> 'ema_decay' AS ema_decay
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name IN ('m46', 'm46b') ORDER BY 1, 2;

-- 2. validation and serving read the same parameters: the recorded val MAE
--    (all val rows) is rt_evaluate's on the val split, at every checkpoint,
--    with and without the average
SELECT m.name, c.step, cm.n_rows = e.n_rows AS same_rows,
       abs(cm.value - e.model) < 1e-5 * greatest(1, abs(e.model)) AS same_mae
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
JOIN headwater.checkpoint_metric cm USING (checkpoint_id)
JOIN headwater.task t ON t.task_id = cm.task_id,
LATERAL rt_evaluate(t.name, 'val', c.checkpoint_id) e
WHERE m.name IN ('m46', 'm46b') AND e.metric = 'mae'
ORDER BY 1, 2;

-- 3. the average is not the last parameters: same seed and batches, the
--    two models' step-20 predictions differ (the first 20 reviews)
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id) IS DISTINCT FROM rt_predict('votes46b', review_id)) > 0
       AS average_differs,
       count(*) AS rows
FROM (SELECT review_id FROM t46.reviews ORDER BY 1 LIMIT 20) r;

-- 4. a resume keeps the run's decay (from its state) and goes on
SET client_min_messages = warning;
SELECT r ->> 'state' AS state, r ->> 'resumed_from' AS resumed_from, r ->> 'steps_done' AS steps
FROM rt_train('m46', steps => 25, preset => 'tiny', options => '{"val_batches": 1, "val_rows": 16}') r;
RESET client_min_messages;
SELECT c.step, c.config ->> 'ema_decay' AS ema_decay
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm46' AND c.step = 25;
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id) IS NULL) AS null_predictions
FROM (SELECT review_id FROM t46.reviews ORDER BY 1 LIMIT 20) r;

SET client_min_messages = warning;
SELECT rt_drop_model('m46');
SELECT rt_drop_model('m46b');
DROP SCHEMA t46 CASCADE;
