-- bench/accuracy/trajectory.sql: where the served choice stands among all
-- the candidates (run.sh with ACC_TRAJECTORY=1, before the model is
-- dropped; psql variable model).  For every task, checkpoint and weights
-- (the last parameters, and their average when the run kept one): the
-- recorded val metric, the test metric (rt_evaluate on the test split with
-- those weights: its weights argument) and whether it is the served one.
-- Reads only.  Costs one forward pass over the test rows per candidate.
\set ON_ERROR_STOP on
CREATE TEMP TABLE saved AS
SELECT cm.*, t.name AS task, ck.step, ck.is_best
FROM headwater.checkpoint_metric cm JOIN headwater.task t USING (task_id)
JOIN headwater.checkpoint ck USING (checkpoint_id) JOIN headwater.model m ON m.model_id = t.model_id
WHERE m.name = :'model';
-- the served (checkpoint, weights) of each task: hw_checkpoint_find_task's order
CREATE TEMP TABLE served AS
SELECT DISTINCT ON (task) task, checkpoint_id, weights FROM saved
ORDER BY task, CASE WHEN metric IN ('auroc', 'accuracy') THEN value ELSE -value END DESC NULLS LAST,
         loss NULLS LAST, (weights = 'average') DESC, is_best DESC, step DESC, checkpoint_id DESC;
CREATE TEMP TABLE traj (task text, step int, weights text, val float8, test float8);
DO $$
DECLARE
	c record;
	v float8;
BEGIN
	FOR c IN SELECT * FROM saved ORDER BY task, step, weights LOOP
		SELECT e.model INTO v FROM rt_evaluate(c.task, 'test', c.checkpoint_id, c.weights) e WHERE e.metric = c.metric;
		INSERT INTO traj VALUES (c.task, c.step, c.weights, c.value, v);
	END LOOP;
END $$;
SELECT j.task, j.step, j.weights, round(j.val::numeric, 4) AS val, round(j.test::numeric, 4) AS test,
       CASE WHEN s.task IS NOT NULL THEN 'served' ELSE '' END AS served
FROM traj j JOIN saved d USING (task, step, weights)
LEFT JOIN served s ON s.task = j.task AND s.checkpoint_id = d.checkpoint_id AND s.weights = j.weights
ORDER BY 1, 2, 3;
