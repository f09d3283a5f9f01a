-- t_46_param_average: rt_train's ema_decay (the parameter average).
-- Two runs of one model and task (same name, seed, data: the same batches),
-- without and with the average: training is the same (the same train loss
-- at the end: the average is only read), the served predictions differ
-- (so serving reads the average, not the last parameters), and each
-- checkpoint's recorded val metric (every val row) equals rt_evaluate on the
-- val split at that checkpoint, through the shared model cache and without
-- it (validation and serving read the same parameters).  The decay is kept
-- in the checkpoint's config and survives a resume.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t46', 200) IS NOT NULL AS demo;
CREATE TEMP TABLE runs (run text, r jsonb);
-- the plain run (ema_decay 0)
SELECT rt_create_model('m46', 't46') IS NOT NULL AS created;
SELECT (rt_create_task('m46', 'votes46', anchor_table => 'reviews', target_column => 'helpful_votes',
                       target_stype => 'numerical') ->> 'seeds')::int > 0 AS task;
INSERT INTO runs SELECT 'plain', rt_train('m46', steps => 20, preset => 'tiny',
                options => '{"ema_decay": 0, "val_every": 10, "checkpoint_every": 10, "val_batches": 1,
                             "val_rows": 100000, "seed": 3}');
RESET client_min_messages;

\i sql/include/err.sql

-- validation reads what serving reads: the recorded val MAE (all val rows)
-- is rt_evaluate's on the val split at each checkpoint of the 20-step run
-- (in schema t46, not pg_temp: part 5 reconnects)
CREATE FUNCTION t46.val_equals_evaluate() RETURNS TABLE (step int, same_rows boolean, same_mae boolean)
LANGUAGE sql AS $$
	SELECT c.step, cm.n_rows = e.n_rows, abs(cm.value - e.model) < 1e-5 * greatest(1, abs(e.model))
	FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
	JOIN headwater.checkpoint_metric cm USING (checkpoint_id)
	JOIN headwater.task t ON t.task_id = cm.task_id,
	LATERAL rt_evaluate(t.name, 'val', c.checkpoint_id) e
	WHERE m.name = 'm46' AND e.metric = 'mae' AND c.step <= 20
	ORDER BY 1
$$;

-- 1. the plain run: its checkpoints, and validation = serving
SELECT r ->> 'state' AS state, r ->> 'steps_done' AS steps, r ->> 'ema_decay' AS ema_decay FROM runs;
SELECT * FROM t46.val_equals_evaluate();
CREATE TEMP TABLE p46 AS
SELECT review_id, rt_predict('votes46', review_id) AS plain FROM (SELECT review_id FROM t46.reviews ORDER BY 1 LIMIT 20) r;
SET client_min_messages = warning;
SELECT rt_drop_model('m46');

-- 2. the same model and task with the average
SELECT rt_create_model('m46', 't46') IS NOT NULL AS created;
SELECT (rt_create_task('m46', 'votes46', anchor_table => 'reviews', target_column => 'helpful_votes',
                       target_stype => 'numerical') ->> 'seeds')::int > 0 AS task;
INSERT INTO runs SELECT 'average', rt_train('m46', steps => 20, preset => 'tiny',
                options => '{"ema_decay": 0.9, "val_every": 10, "checkpoint_every": 10, "val_batches": 1,
                             "val_rows": 100000, "seed": 3}');
RESET client_min_messages;
SELECT run, r ->> 'state' AS state, r ->> 'ema_decay' AS ema_decay FROM runs ORDER BY 1;
SELECT m.name, c.step, c.config ->> 'ema_decay' AS ema_decay
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm46' ORDER BY 1, 2;
-- the same training: the last batch's loss is the same to the bit
SELECT count(DISTINCT r ->> 'train_loss') = 1 AS same_training FROM runs;
-- served from the average: other predictions than the plain run's
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id) IS DISTINCT FROM plain) > 0 AS average_served,
       count(*) AS rows
FROM p46;

-- 3. validation = serving with the average, through the shared model cache
--    (the default; part 5: through a private load)
SELECT * FROM t46.val_equals_evaluate();

-- 4. a resume keeps the run's decay (from its state) and goes on
SET client_min_messages = warning;
SELECT r ->> 'state' AS state, r ->> 'resumed_from' AS resumed_from, r ->> 'steps_done' AS steps,
       r ->> 'ema_decay' AS ema_decay
FROM rt_train('m46', steps => 25, preset => 'tiny', options => '{"val_batches": 1, "val_rows": 16}') r;
RESET client_min_messages;
SELECT c.step, c.config ->> 'ema_decay' AS ema_decay
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm46' AND c.step = 25;
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id) IS NULL) AS null_predictions
FROM p46;

-- 5. validation = serving with the average through a private load: a new
--    session (nothing cached) without the shared model cache
\c
SET headwater.serving_shared_cache = off;
SELECT * FROM t46.val_equals_evaluate();
RESET headwater.serving_shared_cache;

SET client_min_messages = warning;
SELECT rt_drop_model('m46');
DROP SCHEMA t46 CASCADE;
