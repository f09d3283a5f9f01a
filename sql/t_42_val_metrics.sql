-- t_42_val_metrics: per-task validation and per-task checkpoint choice.
-- Every validation evaluates each trained task on a fixed sample of its val
-- split with its own metric (auroc for a boolean, mae for a numerical) and
-- stores one headwater.checkpoint_metric row per (checkpoint, task, weights:
-- the last parameters and, with rt_train's default ema_decay, their
-- average); a task is served from the (checkpoint, weights) of the current
-- run with its best metric (is_best where it has none); rt_predict* take
-- checkpoint => ...
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t42', 200) IS NOT NULL AS demo;
SELECT rt_create_model('m42', 't42') IS NOT NULL AS created;
SELECT (rt_create_task('m42', 'gift42', anchor_table => 'orders', target_column => 'is_gift') ->> 'seeds')::int > 0 AS task;
SELECT (rt_create_task('m42', 'votes42', anchor_table => 'reviews', target_column => 'helpful_votes',
                       target_stype => 'numerical') ->> 'seeds')::int > 0 AS task;
CREATE TEMP TABLE r42 AS
SELECT rt_train('m42', steps => 40, preset => 'tiny',
                options => '{"val_every": 10, "checkpoint_every": 10, "val_batches": 1, "val_rows": 48, "seed": 42}') AS r;
-- a second model, for its checkpoint
SELECT rt_create_model('m42b', 't42') IS NOT NULL AS created;
SELECT (rt_create_task('m42b', 'gift42b', anchor_table => 'orders', target_column => 'is_gift') ->> 'seeds')::int > 0 AS task;
SELECT rt_train('m42b', steps => 10, preset => 'tiny', options => '{"val_every": 10, "val_batches": 1, "val_rows": 16}') ->> 'state' AS state_b;
RESET client_min_messages;

\i sql/include/err.sql

-- the checkpoint of m42 a task's default prediction is served from: the one
-- whose predictions on a few rows equal the default ones (rt_predict_proba:
-- votes42 has integer labels, so its predictions round, and two checkpoints
-- can round alike on five rows; the unrounded values tell them apart)
CREATE FUNCTION pg_temp.served(task text) RETURNS bigint LANGUAGE sql AS $$
	SELECT c.checkpoint_id FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
	WHERE m.name = 'm42'
	  AND NOT EXISTS (
	    SELECT 1 FROM (SELECT order_id AS id FROM (SELECT order_id FROM t42.orders ORDER BY 1 LIMIT 5) o WHERE task = 'gift42'
	                   UNION ALL
	                   SELECT review_id FROM (SELECT review_id FROM t42.reviews ORDER BY 1 LIMIT 5) r WHERE task = 'votes42') ids
	    WHERE rt_predict_proba(task, ids.id, checkpoint => c.checkpoint_id) IS DISTINCT FROM rt_predict_proba(task, ids.id))
	ORDER BY c.step DESC LIMIT 1
$$;

-- 1. the run succeeded with a checkpoint every 10 steps
SELECT r ->> 'state' AS state, r ->> 'steps_done' AS steps,
       jsonb_object_keys(r -> 'serving') AS serving_task
FROM r42 ORDER BY 3;
SELECT count(*) AS checkpoints FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'm42';

-- 2. one metric row per (checkpoint, task, weights), with the task's metric
SELECT t.name AS task, cm.metric, count(*) AS rows, count(DISTINCT cm.weights) AS weights, bool_and(cm.n_rows > 0) AS counted,
       bool_and(cm.loss IS NOT NULL) AS has_loss,
       bool_and(cm.metric <> 'auroc' OR cm.value BETWEEN 0 AND 1) AS auroc_in_0_1,
       bool_and(cm.metric <> 'mae' OR cm.value >= 0) AS mae_nonneg
FROM headwater.checkpoint_metric cm JOIN headwater.task t USING (task_id)
WHERE t.model_id = (SELECT model_id FROM headwater.model WHERE name = 'm42')
GROUP BY 1, 2 ORDER BY 1;
-- (two tasks x two weights at every checkpoint)
SELECT count(*) AS checkpoints_without_all_four
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm42' AND (SELECT count(*) FROM headwater.checkpoint_metric cm WHERE cm.checkpoint_id = c.checkpoint_id) <> 4;
-- the same rows every time: n_rows does not change between validations
SELECT t.name AS task, count(DISTINCT cm.n_rows) AS distinct_n_rows
FROM headwater.checkpoint_metric cm JOIN headwater.task t USING (task_id)
WHERE t.name IN ('gift42', 'votes42') GROUP BY 1 ORDER BY 1;
-- and in train_log, per task
SELECT task, count(*) AS val_rows, bool_and(metrics ? (CASE task WHEN 'gift42' THEN 'auroc' ELSE 'mae' END)) AS has_metric
FROM headwater.train_log WHERE split = 'val' AND task IN ('gift42', 'votes42') GROUP BY 1 ORDER BY 1;

-- and on the job, for rt_status
SELECT j.val_metrics ?& ARRAY['val_loss', 'gift42', 'votes42'] AS job_val_metrics,
       j.val_metrics -> 'gift42' ? 'auroc' AS gift_auroc, j.val_metrics -> 'votes42' ? 'mae' AS votes_mae
FROM headwater.job j JOIN headwater.model m USING (model_id) WHERE m.name = 'm42';

-- 3. the serving checkpoint of each task is the argmax (auroc) / argmin (mae)
--    of its metric in the run (ties: lower loss, the average, is_best, later step), as
--    rt_train reports it
CREATE TEMP VIEW best42 AS
SELECT DISTINCT ON (t.name) t.name AS task, cm.checkpoint_id, cm.weights, cm.metric, cm.value
FROM headwater.checkpoint_metric cm JOIN headwater.task t USING (task_id)
JOIN headwater.checkpoint c USING (checkpoint_id)
WHERE t.name IN ('gift42', 'votes42') AND cm.value IS NOT NULL
ORDER BY t.name, CASE WHEN cm.metric = 'auroc' THEN cm.value ELSE -cm.value END DESC, cm.loss, cm.weights, c.is_best DESC, c.step DESC;
SELECT b.task, b.metric,
       (r42.r -> 'serving' -> b.task ->> 'checkpoint_id')::bigint = b.checkpoint_id AS reported_is_best,
       (r42.r -> 'serving' -> b.task ->> 'weights') = b.weights AS reported_weights,
       (r42.r -> 'serving' -> b.task ->> 'metric') = b.metric AS reported_metric,
       (r42.r -> 'serving' -> b.task ->> 'value')::float8 = b.value AS reported_value,
       pg_temp.served(b.task) = b.checkpoint_id AS served_is_best
FROM best42 b, r42 ORDER BY 1;

-- 4. checkpoint => the served one gives the default predictions, in every
--    function; another checkpoint gives other ones
SELECT rt_predict('gift42', o.order_id) = rt_predict('gift42', o.order_id, checkpoint => b.checkpoint_id) AS predict_same,
       rt_predict_label('gift42', o.order_id) = rt_predict_label('gift42', o.order_id, NULL, b.checkpoint_id) AS label_same,
       rt_predict_proba('gift42', o.order_id) = rt_predict_proba('gift42', o.order_id, checkpoint => b.checkpoint_id) AS proba_same
FROM (SELECT min(order_id) AS order_id FROM t42.orders) o, best42 b WHERE b.task = 'gift42';
SELECT (SELECT array_agg(prediction) FROM rt_predict_batch('gift42', (SELECT array_agg(order_id ORDER BY order_id) FROM t42.orders))) =
       (SELECT array_agg(prediction) FROM rt_predict_batch('gift42', (SELECT array_agg(order_id ORDER BY order_id) FROM t42.orders),
                                                           checkpoint => b.checkpoint_id)) AS batch_same
FROM best42 b WHERE b.task = 'gift42';
SELECT bool_or(rt_predict('gift42', o.order_id, checkpoint => c.checkpoint_id) IS DISTINCT FROM rt_predict('gift42', o.order_id))
         AS other_checkpoint_differs
FROM t42.orders o, headwater.checkpoint c, best42 b
WHERE b.task = 'gift42' AND c.checkpoint_id <> b.checkpoint_id
  AND c.model_id = (SELECT model_id FROM headwater.model WHERE name = 'm42');

-- 5. the choice follows the table: make the first checkpoint the best on
--    gift42 only (AUROC 1.0 there, 0.5 at the others: the model may reach
--    1.0 itself, and a tie goes to the lower loss); votes42 keeps its own
UPDATE headwater.checkpoint_metric
SET value = CASE WHEN checkpoint_id = (SELECT min(checkpoint_id) FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
                                       WHERE m.name = 'm42') THEN 1.0 ELSE 0.5 END
WHERE task_id = (SELECT task_id FROM headwater.task WHERE name = 'gift42');
SELECT pg_temp.served('gift42') = (SELECT min(checkpoint_id) FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'm42') AS gift_follows,
       pg_temp.served('votes42') = (SELECT checkpoint_id FROM best42 WHERE task = 'votes42') AS votes_unchanged;
-- without metric rows, a task falls back to is_best (mixed val loss)
DELETE FROM headwater.checkpoint_metric WHERE task_id = (SELECT task_id FROM headwater.task WHERE name = 'gift42');
SELECT pg_temp.served('gift42') = (SELECT checkpoint_id FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
                                   WHERE m.name = 'm42' AND c.is_best) AS falls_back_to_is_best;

-- 6. a bad checkpoint is an error
SELECT e.* FROM pg_temp.err('SELECT rt_predict(''gift42'', 1, checkpoint => -1)') e;
SELECT e.* FROM pg_temp.err('SELECT rt_predict_label(''gift42'', 1, checkpoint => 999999999)') e;
SELECT e.code, regexp_replace(e.message, '[0-9]+', 'N') AS message
FROM pg_temp.err(format('SELECT rt_predict_proba(''gift42'', 1, checkpoint => %s)',
                        (SELECT c.checkpoint_id FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
                         WHERE m.name = 'm42b' LIMIT 1))) e;
SELECT e.code, regexp_replace(e.message, '[0-9]+', 'N') AS message
FROM pg_temp.err('SELECT * FROM rt_predict_batch(''gift42'', ARRAY[1], checkpoint => -5)') e;

-- 7. private like the other headwater tables; rows go with their checkpoint
CREATE ROLE r42_nobody NOLOGIN;
SELECT has_table_privilege('r42_nobody', 'headwater.checkpoint_metric', 'SELECT') AS public_can_read;
DROP ROLE r42_nobody;
DELETE FROM headwater.checkpoint WHERE model_id = (SELECT model_id FROM headwater.model WHERE name = 'm42');
SELECT count(*) AS metric_rows_left FROM headwater.checkpoint_metric cm JOIN headwater.task t USING (task_id)
WHERE t.name = 'votes42';

-- 8. by default a validation (with the tasks' metrics) runs where a
--    checkpoint is written, and only there; val_every still overrides it
SET client_min_messages = warning;
SELECT rt_train('m42b', steps => 12, preset => 'tiny', options => '{"restart": true, "checkpoint_every": 4, "val_rows": 16}') ->> 'state' AS state_c;
SELECT rt_train('m42b', steps => 6, preset => 'tiny', options => '{"restart": true, "checkpoint_every": 4, "val_every": 3, "val_rows": 16}') ->> 'state' AS state_d;
RESET client_min_messages;
SELECT j.steps_target, array_agg(DISTINCT l.step ORDER BY l.step) FILTER (WHERE l.split = 'val' AND l.task IS NULL) AS val_steps,
       array_agg(DISTINCT l.step ORDER BY l.step) FILTER (WHERE l.split = 'val' AND l.task = 'gift42b') AS task_val_steps,
       (SELECT array_agg(c.step ORDER BY c.step) FROM headwater.checkpoint c WHERE c.job_id = j.job_id) AS checkpoint_steps
FROM headwater.job j JOIN headwater.model m USING (model_id) JOIN headwater.train_log l USING (job_id)
WHERE m.name = 'm42b' AND j.job_id > (SELECT min(job_id) FROM headwater.job j2 JOIN headwater.model m2 USING (model_id) WHERE m2.name = 'm42b')
GROUP BY j.job_id, j.steps_target ORDER BY j.job_id;

SET client_min_messages = warning;
SELECT rt_drop_model('m42b');
SELECT rt_drop_model('m42');
DROP SCHEMA t42 CASCADE;
