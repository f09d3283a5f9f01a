-- t_46_param_average: rt_train's ema_decay (the parameter average) and the
-- per-task choice between a checkpoint's two weights.
-- Two runs of one model and task (same name, seed, data: the same batches),
-- without and with the average: training is the same (the same train loss
-- at the end: the average is only read); the run with the average validates
-- each checkpoint twice, on its last parameters (the same figures as the
-- plain run's, to the bit) and on the average (other figures); the task is
-- served from the (checkpoint, weights) with its best val metric, and
-- rt_train says which; forcing either choice serves it (the last parameters
-- predict exactly what the plain run predicts, the average otherwise); and
-- the recorded val metric of the served weights (every val row) equals
-- rt_evaluate on the val split at that checkpoint, through the shared model
-- cache and without it.  The decay is kept in the checkpoint's config and
-- survives a resume.  The weights argument of rt_predict* and rt_evaluate
-- names the weights: each one's recorded val metric is rt_evaluate's with
-- it, 'last' predicts what the plain run predicts, an average the run did
-- not keep or an unknown name is an error.
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
                options => '{"ema_decay": 0, "val_every": 10, "checkpoint_every": 10, "val_batches": 1, "train_precision": "fp32",
                             "val_rows": 100000, "seed": 3}');
RESET client_min_messages;

\i sql/include/err.sql
-- validation computes in the run's train_precision (fp32 here: the runs
-- ask for it); served predictions follow headwater.inference_precision
-- (bf16 where the processor has it), so the comparisons of validation with
-- rt_evaluate below serve in fp32 too
SET headwater.inference_precision = fp32;

-- validation reads what serving reads: at each checkpoint of the 20-step
-- run, the recorded val MAE (all val rows) of the weights the task would be
-- served from there (the better of the two; ties: the average) is
-- rt_evaluate's on the val split (in schema t46, not pg_temp: part 6
-- reconnects)
CREATE FUNCTION t46.val_equals_evaluate() RETURNS TABLE (step int, weights text, same_rows boolean, same_mae boolean)
LANGUAGE sql AS $$
	SELECT v.step, v.weights, v.n_rows = e.n_rows, abs(v.value - e.model) < 1e-5 * greatest(1, abs(e.model))
	FROM (SELECT DISTINCT ON (c.step) c.step, c.checkpoint_id, cm.weights, cm.value, cm.n_rows, t.name
	      FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
	      JOIN headwater.checkpoint_metric cm USING (checkpoint_id)
	      JOIN headwater.task t ON t.task_id = cm.task_id
	      WHERE m.name = 'm46' AND c.step <= 20
	      ORDER BY c.step, cm.value, cm.loss, cm.weights) v,
	LATERAL rt_evaluate(v.name, 'val', v.checkpoint_id) e
	WHERE e.metric = 'mae'
	ORDER BY 1
$$;
-- the validation rows of m46's checkpoints
CREATE FUNCTION t46.val_rows() RETURNS TABLE (step int, weights text, value float8, loss float8)
LANGUAGE sql AS $$
	SELECT c.step, cm.weights, cm.value, cm.loss
	FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
	JOIN headwater.checkpoint_metric cm USING (checkpoint_id)
	WHERE m.name = 'm46' AND c.step <= 20
$$;

-- 1. the plain run: one row per checkpoint (the last parameters), and
--    validation = serving
SELECT r ->> 'state' AS state, r ->> 'steps_done' AS steps, r ->> 'ema_decay' AS ema_decay,
       r -> 'serving' -> 'votes46' ->> 'weights' AS served_weights FROM runs;
SELECT step, weights FROM t46.val_rows() ORDER BY 1, 2;
SELECT * FROM t46.val_equals_evaluate();
CREATE TEMP TABLE plain_val AS SELECT * FROM t46.val_rows();
CREATE TEMP TABLE p46 AS
SELECT review_id, rt_predict('votes46', review_id) AS plain FROM (SELECT review_id FROM t46.reviews ORDER BY 1 LIMIT 20) r;
-- a run without an average has none to name; 'last' is what it serves
SELECT e.code, regexp_replace(e.message, 'checkpoint \d+', 'checkpoint N') AS message, e.hint
FROM pg_temp.err('SELECT * FROM rt_evaluate(''votes46'', ''val'', NULL, ''average'')') e;
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id, weights => 'last') IS DISTINCT FROM plain) AS differ
FROM p46;
SET client_min_messages = warning;
SELECT rt_drop_model('m46');

-- 2. the same model and task with the average
SELECT rt_create_model('m46', 't46') IS NOT NULL AS created;
SELECT (rt_create_task('m46', 'votes46', anchor_table => 'reviews', target_column => 'helpful_votes',
                       target_stype => 'numerical') ->> 'seeds')::int > 0 AS task;
INSERT INTO runs SELECT 'average', rt_train('m46', steps => 20, preset => 'tiny',
                options => '{"ema_decay": 0.9, "val_every": 10, "checkpoint_every": 10, "val_batches": 1, "train_precision": "fp32",
                             "val_rows": 100000, "seed": 3}');
RESET client_min_messages;
SELECT run, r ->> 'state' AS state, r ->> 'ema_decay' AS ema_decay FROM runs ORDER BY 1;
SELECT m.name, c.step, c.config ->> 'ema_decay' AS ema_decay
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
WHERE m.name = 'm46' ORDER BY 1, 2;
-- the same training: the last batch's loss is the same to the bit
SELECT count(DISTINCT r ->> 'train_loss') = 1 AS same_training FROM runs;
-- both weights validated at each checkpoint; the last parameters' figures
-- are the plain run's to the bit, the average's are others
SELECT step, weights FROM t46.val_rows() ORDER BY 1, 2;
SELECT v.step, v.weights, v.value = p.value AND v.loss = p.loss AS same_as_plain
FROM t46.val_rows() v JOIN plain_val p USING (step) ORDER BY 1, 2;
-- rt_train reports the weights with the better val MAE (ties: the average)
SELECT (SELECT r -> 'serving' -> 'votes46' ->> 'weights' FROM runs WHERE run = 'average') =
       (SELECT weights FROM t46.val_rows() ORDER BY value, loss, weights LIMIT 1) AS reported_best_weights;

-- 3. validation = serving through the shared model cache (the default;
--    part 6: through a private load)
SELECT * FROM t46.val_equals_evaluate();

-- 4. each weights served when its validation is the best: the last
--    parameters predict exactly what the plain run predicts (its best
--    checkpoint is the same step: the same validation figures), the
--    average something else, and rt_evaluate follows the choice
--    (t46.force(w): the other weights' recorded metric made 1000 worse,
--    from the session's copy saved_metric; in schema t46: part 6 reconnects)
CREATE TEMP TABLE saved_metric AS SELECT * FROM headwater.checkpoint_metric;
CREATE FUNCTION t46.force(w text) RETURNS void LANGUAGE sql AS $$
	UPDATE headwater.checkpoint_metric cm SET value = s.value + CASE WHEN cm.weights = w THEN 0 ELSE 1000 END
	FROM saved_metric s
	WHERE s.checkpoint_id = cm.checkpoint_id AND s.task_id = cm.task_id AND s.weights = cm.weights
$$;
SELECT t46.force('last');
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id) IS DISTINCT FROM plain) AS differ_from_plain,
       count(*) AS rows
FROM p46;
SELECT * FROM t46.val_equals_evaluate();
SELECT t46.force('average');
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id) IS DISTINCT FROM plain) > 0 AS average_served,
       count(*) AS rows
FROM p46;
SELECT * FROM t46.val_equals_evaluate();
-- and back to what validation measured
UPDATE headwater.checkpoint_metric cm SET value = s.value FROM saved_metric s
WHERE s.checkpoint_id = cm.checkpoint_id AND s.task_id = cm.task_id AND s.weights = cm.weights;

-- 4b. the weights argument names the weights, whatever is served: every
--     (checkpoint, weights)'s recorded val MAE is rt_evaluate's with it;
--     'last' (its best checkpoint) predicts what the plain run predicts,
--     'average' other values; every prediction function takes it
SELECT c.step, cm.weights, abs(cm.value - e.model) < 1e-5 * greatest(1, abs(e.model)) AS same_mae
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
JOIN headwater.checkpoint_metric cm USING (checkpoint_id),
LATERAL rt_evaluate('votes46', 'val', c.checkpoint_id, cm.weights) e
WHERE m.name = 'm46' AND c.step <= 20 AND e.metric = 'mae' ORDER BY 1, 2;
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id, weights => 'last') IS DISTINCT FROM plain) AS last_differ,
       count(*) FILTER (WHERE rt_predict('votes46', review_id, weights => 'average') IS DISTINCT FROM plain) > 0 AS average_differs
FROM p46;
CREATE TEMP TABLE into46 (row_id text, prediction float8);
SET client_min_messages = warning;
SELECT rt_predict_into('votes46', 'SELECT review_id FROM t46.reviews ORDER BY 1 LIMIT 20', 'into46',
                       weights => 'average') AS written;
RESET client_min_messages;
SELECT count(*) FILTER (WHERE b.prediction IS DISTINCT FROM rt_predict('votes46', p.review_id, weights => 'average')
                          OR t.prediction IS DISTINCT FROM b.prediction
                          OR i.prediction IS DISTINCT FROM b.prediction
                          OR rt_predict_proba('votes46', p.review_id, weights => 'average') ->> 'value' IS NULL
                          OR rt_predict_label('votes46', p.review_id, weights => 'average') IS NULL) AS disagree,
       count(*) AS rows
FROM p46 p
JOIN rt_predict_batch('votes46', (SELECT array_agg(review_id ORDER BY review_id) FROM p46), weights => 'average') b
  ON b.row_id = p.review_id::text
JOIN rt_predict_table('votes46', 'SELECT review_id FROM t46.reviews ORDER BY 1 LIMIT 20', weights => 'average') t
  ON t.row_id = p.review_id::text
JOIN into46 i ON i.row_id = p.review_id::text;
SELECT e.* FROM pg_temp.err('SELECT rt_predict(''votes46'', 1, weights => ''mean'')') e;
SELECT e.* FROM pg_temp.err('SELECT * FROM rt_evaluate(''votes46'', ''val'', NULL, '''')') e;

-- 5. a resume keeps the run's decay (from its state) and goes on
SET client_min_messages = warning;
SELECT r ->> 'state' AS state, r ->> 'resumed_from' AS resumed_from, r ->> 'steps_done' AS steps,
       r ->> 'ema_decay' AS ema_decay
FROM rt_train('m46', steps => 25, preset => 'tiny', options => '{"val_batches": 1, "val_rows": 16, "train_precision": "fp32"}') r;
RESET client_min_messages;
SELECT c.step, c.config ->> 'ema_decay' AS ema_decay, count(cm.*) AS val_rows
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id)
LEFT JOIN headwater.checkpoint_metric cm USING (checkpoint_id)
WHERE m.name = 'm46' AND c.step = 25 GROUP BY 1, 2;
SELECT count(*) FILTER (WHERE rt_predict('votes46', review_id) IS NULL) AS null_predictions
FROM p46;

-- 6. validation = serving through a private load, either weights: a new
--    session (nothing cached) without the shared model cache
\c
SET headwater.serving_shared_cache = off;
SET headwater.inference_precision = fp32;
SELECT * FROM t46.val_equals_evaluate();
CREATE TEMP TABLE saved_metric AS SELECT * FROM headwater.checkpoint_metric;
SELECT t46.force('average');
SELECT * FROM t46.val_equals_evaluate();
SELECT t46.force('last');
SELECT * FROM t46.val_equals_evaluate();
RESET headwater.serving_shared_cache;

SET client_min_messages = warning;
SELECT rt_drop_model('m46');
DROP SCHEMA t46 CASCADE;
