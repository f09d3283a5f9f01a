-- ---------------------------------------------------------------------------
-- Prediction and evaluation (code: src/pg/serve/)
-- A task is named 'model.task' (split at the last dot), or by its bare name
-- when one of the caller's own models has it (src/pg/task/task_ref.c): another
-- role's task is always named with its model.
-- A row is named by its primary key: the value for a one-column key, ROW(...)
-- or an array for a composite key (columns in primary key order).
-- obs_time: what the model may see (default now).
-- checkpoint: which checkpoint of the task's model (default NULL: the task's
-- best, by its own val metric in the current run).
-- weights: 'last' (the checkpoint's parameters) or 'average' (their running
-- average, kept when the run's ema_decay > 0); default NULL: whichever had
-- the task's better validation.  With checkpoint NULL, the named weights'
-- best checkpoint.
-- context (rt_predict, _label, _proba): labels the caller knows and the task
-- does not, '[{"obs_time": "...", "label": ...}, ...]', each observed before
-- obs_time; they join the row's label history (src/pg/serve/predict_context.c).
-- ---------------------------------------------------------------------------
CREATE FUNCTION rt_predict(task text, row_id anyelement, obs_time timestamptz DEFAULT NULL,
                           checkpoint bigint DEFAULT NULL, context jsonb DEFAULT NULL,
                           weights text DEFAULT NULL)
RETURNS float8
AS 'MODULE_PATHNAME', 'rt_predict' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_predict(text, anyelement, timestamptz, bigint, jsonb, text) IS
'numerical: the value; boolean: P(true); timestamp: epoch seconds; categorical: probability of the most likely label; NULL when the model predicts NULL';

CREATE FUNCTION rt_predict_label(task text, row_id anyelement, obs_time timestamptz DEFAULT NULL,
                           checkpoint bigint DEFAULT NULL, context jsonb DEFAULT NULL,
                           weights text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'rt_predict_label' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_predict_label(text, anyelement, timestamptz, bigint, jsonb, text) IS
'the prediction as text: categorical label, true/false, timestamp, or number';

CREATE FUNCTION rt_predict_proba(task text, row_id anyelement, obs_time timestamptz DEFAULT NULL,
                           checkpoint bigint DEFAULT NULL, context jsonb DEFAULT NULL,
                           weights text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'rt_predict_proba' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_predict_proba(text, anyelement, timestamptz, bigint, jsonb, text) IS
'the full prediction: p_null, label, and the distribution over categories (categorical) or the value';

CREATE FUNCTION rt_predict_batch(task text, row_ids anyarray, obs_time timestamptz DEFAULT NULL,
                                 checkpoint bigint DEFAULT NULL, weights text DEFAULT NULL)
RETURNS TABLE (row_id text, prediction float8, label text, p_null float8, detail jsonb)
AS 'MODULE_PATHNAME', 'rt_predict_batch' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_predict_batch(text, anyarray, timestamptz, bigint, text) IS
'predict many rows in one pass (rows in the order given)';

-- Whole tables.  query: one SELECT run as the caller, returning the key
-- columns of the task's anchor table in primary key order (or one ROW/array
-- column) and optionally a timestamptz column obs_time (NULL: whole snapshot).
CREATE FUNCTION rt_predict_table(task text, query text, checkpoint bigint DEFAULT NULL,
                                 weights text DEFAULT NULL)
RETURNS TABLE (row_id text, obs_time timestamptz, prediction float8, label text, p_null float8, detail jsonb)
AS 'MODULE_PATHNAME', 'rt_predict_table' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_predict_table(text, text, bigint, text) IS
'predict every row a query returns (key columns, optional obs_time), one result row per query row, in query order';

CREATE FUNCTION rt_predict_into(task text, query text, target_table regclass, batch_rows integer DEFAULT 1000,
                                checkpoint bigint DEFAULT NULL, weights text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'rt_predict_into' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_predict_into(text, text, regclass, integer, bigint, text) IS
'predict every row a query returns and INSERT the results into an existing table (columns row_id and any of obs_time, prediction, label, p_null, detail) in batches with a NOTICE each; returns the rows written; one transaction';

CREATE FUNCTION rt_evaluate(task text, split text DEFAULT 'test', checkpoint bigint DEFAULT NULL,
                            weights text DEFAULT NULL)
RETURNS TABLE (metric text, model float8, baseline float8, n_rows bigint)
AS 'MODULE_PATHNAME', 'rt_evaluate' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_evaluate(text, text, bigint, text) IS
'metrics of a task on a split (default test) for a checkpoint and weights (default: the best of the task), beside the trivial baseline';

CREATE FUNCTION rt_serving_workers()
RETURNS TABLE (model text, checkpoint_id bigint, weights text, pid int, state text, batches bigint, "rows" bigint)
AS 'MODULE_PATHNAME', 'rt_serving_workers' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_serving_workers() IS
'the serving workers of this database (headwater.serving_worker) for the models the caller may predict with: what each serves, its process, its state, and its forwards (batches) and rows answered';
