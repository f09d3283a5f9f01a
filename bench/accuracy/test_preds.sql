-- bench/accuracy/test_preds.sql: the served predictions of every task of a
-- model on its test rows of acc.rows, for paired.py (run.sh, before the model
-- is dropped; psql variables model, seed and dump (a CSV file)).  Reads only:
-- rt_predict_table with the task's serving checkpoint and weights (the
-- figures rt_evaluate reports).  One row per test row:
-- method, seed, task (acc.rows' name), customer_id, label, pred.
\set ON_ERROR_STOP on
CREATE TEMP TABLE test_preds (method text, seed int, task text, customer_id text, label float8, pred float8);
DO $$
DECLARE
	t text;
	short text;
BEGIN
	FOR t IN SELECT k.task FROM rt_tasks(current_setting('acc.model')) k ORDER BY 1 LOOP
		short := substr(t, strpos(t, '_') + 1);
		INSERT INTO test_preds
		SELECT 'headwater', current_setting('acc.seed')::int, short, p.row_id, r.label, p.prediction
		FROM rt_predict_table(t, format(
			'SELECT customer_id, obs_time FROM acc.rows WHERE task = %L AND split = ''test'' ORDER BY customer_id', short)) p
		JOIN acc.rows r ON r.task = short AND r.split = 'test' AND r.customer_id::text = p.row_id AND r.obs_time = p.obs_time;
	END LOOP;
END $$;
COPY (SELECT * FROM test_preds ORDER BY task, customer_id) TO STDOUT WITH (FORMAT csv, HEADER) \g :dump
