-- t_47_integer_predictions: a numerical task whose train labels are all
-- integers (counts, ratings) and which is fitted with the ordinal loss (the
-- default where the labels span at most 17 values: the median of a learnt
-- distribution) or the MAE loss (asked for) predicts integers (the median
-- of integer labels is one); rt_predict_proba keeps the unrounded value,
-- which rounds to the prediction.  Not with the huber loss, nor with
-- fractional labels (MAE by default).  A task stored without a loss (made
-- before the ordinal default) keeps the MAE regression.  rt_evaluate's MAE
-- is the MAE of what rt_predict returns on the test rows (computed here by
-- hand), and the val MAE recorded in training is rt_evaluate's on val:
-- validation, evaluation and serving read the same rounded values.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t47', 200) IS NOT NULL AS demo;
CREATE TABLE t47.rows47 AS
SELECT c.customer_id, cut.obs_time,
       (SELECT count(*) FROM t47.orders o WHERE o.customer_id = c.customer_id
          AND o.ordered_at >= cut.obs_time AND o.ordered_at < cut.obs_time + interval '60 days')::float8 AS n,
       CASE c.customer_id % 5 WHEN 0 THEN 'val' WHEN 1 THEN 'test' ELSE 'train' END AS split
FROM t47.customers c,
     (VALUES (timestamptz '2024-06-01 00:00+00'), ('2024-08-01 00:00+00')) cut(obs_time);
SELECT rt_create_model('m47', 't47') IS NOT NULL AS created;
-- the task summaries say which tasks round, and which use the ordinal loss
SELECT t, s ->> 'loss' AS loss, s ->> 'ordinal_levels' AS levels, s ->> 'rounds_predictions' AS rounds
FROM (VALUES
  ('counts47', rt_create_task('m47', 'counts47', query => $$ SELECT customer_id, obs_time, n, split FROM t47.rows47 $$)),
  ('mae47', rt_create_task('m47', 'mae47', query => $$ SELECT customer_id, obs_time, n, split FROM t47.rows47 $$,
                           options => '{"loss": "mae"}')),
  ('legacy47', rt_create_task('m47', 'legacy47', query => $$ SELECT customer_id, obs_time, n, split FROM t47.rows47 $$)),
  ('huber47', rt_create_task('m47', 'huber47', query => $$ SELECT customer_id, obs_time, n, split FROM t47.rows47 $$,
                             options => '{"loss": "huber"}')),
  ('halves47', rt_create_task('m47', 'halves47', query => $$ SELECT customer_id, obs_time, n / 2 + 0.25 AS h, split FROM t47.rows47 $$)),
  ('rating47', rt_create_task('m47', 'rating47', anchor_table => 'reviews', target_column => 'rating',
                              target_stype => 'numerical'))) v(t, s)
ORDER BY 1;
-- the ordinal loss asked for where the labels are not integers: refused, nothing created
SELECT rt_create_task('m47', 'bad47', query => $$ SELECT customer_id, obs_time, n / 2 + 0.25 AS h, split FROM t47.rows47 $$,
                      options => '{"loss": "ordinal"}');
SELECT count(*) AS tasks FROM rt_tasks('m47');
-- the default is stored with each task: the loss each one trains with
SELECT name, options ->> 'loss' AS stored_loss FROM headwater.task WHERE name LIKE '%47' ORDER BY 1;
-- legacy47 as a task made before the ordinal default was stored: no loss
UPDATE headwater.task SET options = options - 'loss' WHERE name = 'legacy47';
SELECT r ->> 'state' AS state FROM rt_train('m47', steps => 20, preset => 'tiny',
       options => '{"val_every": 10, "checkpoint_every": 10, "val_batches": 1, "val_rows": 100000, "seed": 5}') r;
RESET client_min_messages;

-- 1. integer predictions where the task rounds, and the unrounded value
--    rounds to them (to the nearest integer); elsewhere no unrounded value
CREATE TEMP TABLE p47 AS
SELECT t.task, r.customer_id, r.obs_time, r.n, r.split,
       rt_predict(t.task, r.customer_id, r.obs_time) AS pred,
       rt_predict_proba(t.task, r.customer_id, r.obs_time) AS proba
FROM t47.rows47 r, (VALUES ('counts47'), ('mae47'), ('legacy47'), ('huber47'), ('halves47')) t(task);
SELECT task, count(*) AS rows,
       count(*) FILTER (WHERE pred = round(pred)) AS integer_predictions,
       count(*) FILTER (WHERE proba ? 'unrounded') AS with_unrounded,
       count(*) FILTER (WHERE proba ? 'unrounded'
                          AND abs((proba ->> 'unrounded')::float8 - pred) <= 0.5
                          AND (proba ->> 'value')::float8 = pred) AS nearest
FROM p47 GROUP BY 1 ORDER BY 1;
-- the ordinal loss: rt_predict_proba gives P(label >= v) for each value v
-- above the smallest train label, and the prediction is their median (the
-- value before the first v below 1/2); the regression tasks give none
SELECT task, count(*) FILTER (WHERE proba ? 'p_at_least') AS with_distribution,
       count(*) FILTER (WHERE pred = coalesce(
           (SELECT min(k::int) FROM jsonb_each_text(proba -> 'p_at_least') e(k, v) WHERE v::float8 < 0.5) - 1,
           (SELECT max(k::int) FROM jsonb_each_text(proba -> 'p_at_least') e(k, v)))) AS median_of_distribution
FROM p47 GROUP BY 1 ORDER BY 1;
SELECT count(*) FILTER (WHERE pred <> round(pred)) > 0 AS huber_fractional
FROM p47 WHERE task = 'huber47';
SELECT count(*) AS rows, count(*) FILTER (WHERE p = round(p)) AS integer_predictions
FROM (SELECT rt_predict('rating47', review_id) AS p FROM t47.reviews ORDER BY review_id LIMIT 50) x;

-- 2. rt_evaluate's test MAE is the MAE of rt_predict's values on the test
--    rows (the task's split column), rounded or not: evaluation and
--    rt_predict key each sequence's random draws by (row, obs_time), so
--    both see the same sequence (hw_sampler_seed_batch, _build_for_seeds)
SELECT p.task, abs(e.model - avg(abs(p.pred - CASE p.task WHEN 'halves47' THEN p.n / 2 + 0.25 ELSE p.n END))) < 1e-9
         AS evaluate_is_rt_predict,
       count(*) AS test_rows
FROM p47 p, LATERAL rt_evaluate(p.task, 'test') e
WHERE p.split = 'test' AND e.metric = 'mae'
GROUP BY p.task, e.model ORDER BY 1;

-- 3. validation recorded the rounded MAE: each (checkpoint, weights)'s val
--    metric is rt_evaluate's on val with them
SELECT t.name, c.step, cm.weights, abs(cm.value - e.model) < 1e-9 AS same_mae
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
JOIN headwater.checkpoint_metric cm USING (checkpoint_id)
JOIN headwater.task t ON t.task_id = cm.task_id,
LATERAL rt_evaluate(t.name, 'val', c.checkpoint_id, cm.weights) e
WHERE m.name = 'm47' AND t.name = 'counts47' AND e.metric = 'mae' ORDER BY 1, 2, 3;

SET client_min_messages = warning;
SELECT rt_drop_model('m47');
DROP SCHEMA t47 CASCADE;
