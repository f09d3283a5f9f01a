-- bench/accuracy/candidates_dump.sql: every candidate's predictions (run.sh
-- with ACC_DUMP=1, before the model is dropped; psql variables model and
-- dump (a CSV file)).  For every task, checkpoint and weights: the val
-- metric recorded in training and rt_predict_table's prediction for the
-- task's val and test rows of acc.rows (val rows of orders-like tasks with
-- many rows: one in five customers), to study ensembles offline
-- (ensemble_study.py).  Reads only: each candidate through the weights
-- argument of rt_predict_table.
\set ON_ERROR_STOP on
CREATE TEMP TABLE saved AS
SELECT cm.*, t.name AS task, ck.step
FROM headwater.checkpoint_metric cm JOIN headwater.task t USING (task_id)
JOIN headwater.checkpoint ck USING (checkpoint_id) JOIN headwater.model m ON m.model_id = t.model_id
WHERE m.name = :'model';
CREATE TEMP TABLE preds (task text, step int, weights text, val float8, split text,
                         customer_id text, obs_time timestamptz, label float8, pred float8, unrounded float8);
DO $$
DECLARE
	c record;
	short text;
BEGIN
	FOR c IN SELECT * FROM saved ORDER BY task, step, weights LOOP
		short := substr(c.task, strpos(c.task, '_') + 1);
		INSERT INTO preds
		SELECT c.task, c.step, c.weights, c.value, r.split, p.row_id, p.obs_time, r.label, p.prediction,
		       coalesce((p.detail ->> 'unrounded')::float8, p.prediction)
		FROM rt_predict_table(c.task, format(
			'SELECT customer_id, obs_time FROM acc.rows WHERE task = %L AND (split = ''test'' OR (split = ''val'' AND customer_id %% 5 = 3)) ORDER BY customer_id, obs_time', short),
			c.checkpoint_id, c.weights) p
		JOIN acc.rows r ON r.task = short AND r.customer_id::text = p.row_id AND r.obs_time = p.obs_time;
	END LOOP;
END $$;
COPY (SELECT * FROM preds ORDER BY 1, 2, 3, 5, 6, 7) TO STDOUT WITH (FORMAT csv, HEADER) \g :dump
