-- t_24_label_history: label history without a train/test shift.  A label
-- is history for a sequence observed at T only when it was known by T
-- (label_time <= T: a label_time column or options.label_horizon; default
-- the observation time); training and rt_predict apply the same rule, so
-- for one (entity, obs_time) the history rows are identical tensor for
-- tensor; rt_predict's context labels join the history; errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SET timezone = 'UTC';
CREATE SCHEMA t24;
CREATE TABLE t24.customer (customer_id int PRIMARY KEY, age float8);
CREATE TABLE t24.visit (visit_id int PRIMARY KEY, customer_id int NOT NULL REFERENCES t24.customer,
                        at timestamptz NOT NULL, amount float8);
INSERT INTO t24.customer SELECT c, 20 + c FROM generate_series(1, 16) c;
-- 1 to 4 visits a customer over 2022-01..03 (the task's windows)
INSERT INTO t24.visit
SELECT c * 10 + k, c, timestamptz '2022-01-01' + ((c * 7 + k * 19) % 80) * interval '1 day', c + k
FROM generate_series(1, 16) c, generate_series(1, 1 + c % 4) k;
SELECT rt_create_model('m24', 't24') IS NOT NULL AS model_ok;
-- visits in the 30 days after each of four cutoffs 20 days apart: a label
-- is known 30 days after its cutoff, so the previous cutoff's is not yet
CREATE TEMP VIEW q24 AS
SELECT c.customer_id, t.cutoff AS obs_time,
       (SELECT count(*) FROM t24.visit v WHERE v.customer_id = c.customer_id
          AND v.at >= t.cutoff AND v.at < t.cutoff + interval '30 days')::float8 AS visits
FROM t24.customer c,
     (VALUES (timestamptz '2022-01-01'), ('2022-01-21'), ('2022-02-10'), ('2022-03-02')) t(cutoff);
RESET client_min_messages;

\i sql/include/err.sql

-- 1. label_horizon, a label_time column, the default
SELECT s ->> 'label_time' AS label_time, s ->> 'seeds' AS seeds
FROM rt_create_task('m24', 'v24', $$ SELECT * FROM q24 $$, options => '{"label_horizon": "30 days"}') s;
SELECT s ->> 'label_time' AS label_time
FROM rt_create_task('m24', 'v24q', $$ SELECT *, obs_time + interval '30 days' AS label_time FROM q24 $$) s;
SELECT s ? 'label_time' AS has_label_time
FROM rt_create_task('m24', 'v24n', $$ SELECT * FROM q24 $$) s;
SELECT task, n_seeds, options FROM rt_tasks('m24') ORDER BY task;

-- errors: a label known before its observation, the wrong type, both ways
-- at once, a bad horizon, a horizon on a cell task
SELECT * FROM pg_temp.err($$ SELECT rt_create_task('m24', 'bad', $q$ SELECT *, obs_time - interval '1 day' AS label_time FROM q24 $q$) $$);
SELECT * FROM pg_temp.err($$ SELECT rt_create_task('m24', 'bad', $q$ SELECT *, 5 AS label_time FROM q24 $q$) $$);
SELECT * FROM pg_temp.err($$ SELECT rt_create_task('m24', 'bad', $q$ SELECT *, obs_time AS label_time FROM q24 $q$, options => '{"label_horizon": "1 day"}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_create_task('m24', 'bad', $q$ SELECT * FROM q24 $q$, options => '{"label_horizon": "-1 day"}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_create_task('m24', 'bad', $q$ SELECT * FROM q24 $q$, options => '{"label_horizon": 30}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_create_task('m24', 'bad', anchor_table => 'customer', target_column => 'age', options => '{"label_horizon": "1 day"}') $$);
-- NULL label_time: never known, never history (accepted)
SELECT s ->> 'seeds' AS seeds
FROM rt_create_task('m24', 'v24null', $$ SELECT *, NULL::timestamptz AS label_time FROM q24 $$) s;
SELECT rt_drop_task('m24', 'v24null');

-- a small model to predict with
SET client_min_messages = warning;
SELECT r ->> 'state' AS state
FROM rt_train('m24', steps => 3, preset => 'tiny',
              options => '{"val_every": 1000, "checkpoint_every": 1000, "val_batches": 1, "val_rows": 8,
                           "log_every": 1, "warmup_steps": 0, "seed": 24}') r;
RESET client_min_messages;

-- history rows of sequence b of a batch: (row_key, column, value) with the
-- cells' numeric and timestamp tensor values
CREATE FUNCTION pg_temp.hist(bid bigint, bb int)
RETURNS TABLE (seq_row int, row_key text, column_name text, value text, num float8, ts float8[])
LANGUAGE sql AS $$
	WITH s AS (SELECT * FROM rt_batch_sequence(bid, bb)),
	     nv AS (SELECT "values" v, shape FROM rt_batch_tensor(bid, 'numeric_values')),
	     tv AS (SELECT "values" v FROM rt_batch_tensor(bid, 'timestamp_values'))
	SELECT s.seq_row, s.row_key, s.column_name, s.value, nv.v[bb * nv.shape[2] + s.position + 1],
	       tv.v[(bb * nv.shape[2] + s.position) * 15 + 1 : (bb * nv.shape[2] + s.position) * 15 + 15]
	FROM s, nv, tv
	WHERE s.table_name LIKE 'task %' AND s.seq_row > 0
$$;
-- the seed of sequence b of a batch: its customer and observation time
CREATE FUNCTION pg_temp.seed_of(bid bigint, bb int, OUT customer int, OUT obs timestamptz)
LANGUAGE sql AS $$
	SELECT (SELECT row_key::int FROM rt_batch_sequence(bid, bb) WHERE seq_row = 1 LIMIT 1),
	       (SELECT value::timestamptz FROM rt_batch_sequence(bid, bb) WHERE seq_row = 0 AND column_name = 'observation time')
$$;

-- 2. the history respects label_time: at 2022-03-02 the 2022-02-10 label
-- (known 03-12) is left out with the horizon, shown without it
SELECT t AS task, h.seq_row > 0 AS is_history, h.column_name, h.value
FROM unnest(ARRAY['v24', 'v24q', 'v24n']) t,
     LATERAL pg_temp.hist(rt_debug_predict_batch(t, 5, '2022-03-02'), 0) h
WHERE h.column_name = 'observation time'
ORDER BY t, h.value;

-- 3. training and prediction: the same history for the same (customer,
-- obs_time), tensor for tensor, for every sequence of two training batches
-- of each task
CREATE TEMP TABLE train24 AS
SELECT t AS task, b AS batch_id, bb, (pg_temp.seed_of(b, bb)).*
FROM unnest(ARRAY['v24', 'v24n']) t,
     LATERAL rt_sample_batches('m24', t, 'train', n => 2, batch_size => 8, seq_len => 128) b,
     generate_series(0, 7) bb;
CREATE TEMP TABLE pred24 AS
SELECT task, batch_id, bb, rt_debug_predict_batch(task, customer, obs) AS pred_id FROM train24;
SELECT p.task, count(*) AS sequences,
       sum((SELECT count(*) FROM pg_temp.hist(p.batch_id, p.bb))) AS train_history_cells,
       sum((SELECT count(*) FROM pg_temp.hist(p.pred_id, 0))) AS pred_history_cells,
       sum((SELECT count(*) FROM ((SELECT row_key, column_name, value, num, ts FROM pg_temp.hist(p.batch_id, p.bb)
                                   EXCEPT ALL
                                   SELECT row_key, column_name, value, num, ts FROM pg_temp.hist(p.pred_id, 0))
                                  UNION ALL
                                  (SELECT row_key, column_name, value, num, ts FROM pg_temp.hist(p.pred_id, 0)
                                   EXCEPT ALL
                                   SELECT row_key, column_name, value, num, ts FROM pg_temp.hist(p.batch_id, p.bb))) d))
         AS differing_cells
FROM pred24 p GROUP BY p.task ORDER BY p.task;
-- the seeds' history labels are all known by the seed's obs time (horizon task)
SELECT count(*) AS history_labels_known_too_late
FROM train24 t, LATERAL pg_temp.hist(t.batch_id, t.bb) h
WHERE t.task = 'v24' AND h.column_name = 'observation time'
  AND h.value::timestamptz + interval '30 days' > t.obs;

-- 4. context labels: they enter the sequence as history rows and change
-- the prediction
SELECT h.seq_row > 0 AS is_history, h.row_key, h.column_name, h.value,
       round(h.num::numeric, 4) AS num
FROM pg_temp.hist(rt_debug_predict_batch('v24', 5, '2022-03-02',
                  context => '[{"obs_time": "2022-02-25", "label": 9}]'), 0) h
WHERE h.row_key LIKE 'context%';
SELECT round(((9 - target_mean) / target_std)::numeric, 4) AS expected_num FROM rt_tasks('m24') WHERE task = 'v24';
-- (the unrounded values: visits are counts, so predictions are integers and
-- a context label may move the value without crossing a rounding boundary)
SELECT rt_predict_proba('v24', 5, '2022-03-02') ->> 'unrounded' IS DISTINCT FROM
       rt_predict_proba('v24', 5, '2022-03-02', context => '[{"obs_time": "2022-02-25", "label": 9}]') ->> 'unrounded'
       AS context_changes_prediction;
SELECT rt_predict('v24', 5, '2022-03-02') = rt_predict('v24', 5, '2022-03-02', context => '[]') AS empty_context_same,
       rt_predict_proba('v24', 5, '2022-03-02', context => '[{"obs_time": "2022-02-25", "label": null}]') ? 'p_null'
         AS null_label_ok,
       rt_predict_proba('v24', 5, '2022-03-02', context => '[{"obs_time": "2022-02-25", "label": 1.5}]') ? 'value' AS proba_ok;

-- context errors: not an array, not an object, unknown key, missing time,
-- a time that does not parse, observed too late, the wrong label type, no
-- obs_time
SELECT * FROM pg_temp.err($$ SELECT rt_predict('v24', 5, '2022-03-02', context => '{"obs_time": "2022-02-25", "label": 1}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_predict('v24', 5, '2022-03-02', context => '[1]') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_predict('v24', 5, '2022-03-02', context => '[{"obs_time": "2022-02-25", "label": 1, "x": 2}]') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_predict('v24', 5, '2022-03-02', context => '[{"label": 1}]') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_predict('v24', 5, '2022-03-02', context => '[{"obs_time": "soon", "label": 1}]') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_predict('v24', 5, '2022-03-02', context => '[{"obs_time": "2022-03-02", "label": 1}]') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_predict('v24', 5, '2022-03-02', context => '[{"obs_time": "2022-02-25", "label": "many"}]') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_predict('v24', 5, NULL, context => '[{"obs_time": "2022-02-25", "label": 1}]') $$);
-- the debug function is the model owner's
CREATE ROLE t24_reader;
SELECT rt_grant_predict('m24', 't24_reader');
SET ROLE t24_reader;
SELECT code, message FROM pg_temp.err($$ SELECT rt_debug_predict_batch('m24.v24', 5, '2022-03-02') $$);
RESET ROLE;
SELECT rt_revoke_predict('m24', 't24_reader');
DROP ROLE t24_reader;

SET client_min_messages = warning;
SELECT rt_drop_model('m24');
DROP SCHEMA t24 CASCADE;
