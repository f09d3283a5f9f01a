-- t_41_train_robust: rt_train checks every argument and option when it is
-- called (22023 naming the option, the value, and the range in the hint)
-- instead of letting the worker fail or crash; steps is a total (below the
-- resume point is an error, at it a NOTICE); the worker's timestamps move;
-- a restart starts a new run that resume and prediction follow; model names
-- with quotes are never pasted into SQL; rt_training is readable by all.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t41', 200) IS NOT NULL AS demo;
SELECT rt_create_model('m41', 't41') IS NOT NULL AS created;
-- every seed in train: no validation, so no checkpoint is ever "best" and
-- prediction picks by run and step alone
SELECT (rt_create_task('m41', 'status41', anchor_table => 'orders', target_column => 'status',
                       options => '{"split_ratios": [1, 0, 0]}') ->> 'seeds')::int > 0 AS task;
RESET client_min_messages;

\i sql/include/err.sql

-- 1. every option: wrong JSON type or out of range, refused by the call
--    (threads 100000 used to crash the worker and restart the server)
\x on
SELECT o AS options, e.code AS sqlstate,
       regexp_replace(e.message, '[0-9.]+ ([kMGTP]B|bytes)', 'N', 'g') AS message, e.hint
FROM (VALUES ('{"threads": 100000}'), ('{"threads": -1}'), ('{"threads": "4"}'), ('{"threads": 2.5}'),
             ('{"checkpoint_every": 0}'), ('{"val_every": 0}'), ('{"val_batches": 1001}'), ('{"log_every": 0}'),
             ('{"lr": 0}'), ('{"lr": 5}'), ('{"lr": "0.1"}'), ('{"warmup_steps": -1}'),
             ('{"weight_decay": 2}'), ('{"batch_size": 0}'), ('{"batch_size": 5000}'), ('{"seq_len": 1}'),
             ('{"seq_len": 70000}'), ('{"seed": -1}'), ('{"seed": 1e30}'), ('{"d_model": 5000}'),
             ('{"d_model": 90}'), ('{"n_layers": 0}'), ('{"n_layers": 65}'), ('{"n_heads": 3}'),
             ('{"full_attention": "yes"}'), ('{"full_attention": 2}'), ('{"max_rows": 0}'),
             ('{"child_width": 65}'), ('{"progress_seconds": -1}'), ('{"restart": 1}'), ('{"restart": null}'),
             ('{"task_weights": [1]}'), ('{"task_weights": {"status41": -1}}'),
             ('{"task_weights": {"status41": 0}}'), ('{"task_weights": {"nosuchtask": 1}}'),
             ('{"split_seed": 7}'),
             ('{"batch_size": 4096, "seq_len": 4096}'),
             ('{"batch_size": 4096, "seq_len": 256, "d_model": 4096, "n_heads": 64, "n_layers": 64}'),
             ('{"cell_dropout": 1}'), ('{"cell_dropout": "0.1"}'), ('{"recent_weight": 0.5}'), ('{"recent_weight": 101}'), ('{"ema_decay": 1}'), ('{"ema_decay": "0.9"}')) v(o),
     pg_temp.err(format('SELECT rt_train(%L, steps => 1, preset => %L, options => %L)', 'm41', 'tiny', o)) e;
-- arguments
SELECT a AS arguments, e.code AS sqlstate, e.message, e.hint
FROM (VALUES ('steps => 2000000000'), ('tasks => ARRAY[NULL]::text[]'), ('tasks => ARRAY[]::text[]')) v(a),
     pg_temp.err(format('SELECT rt_train(%L, %s, preset => %L)', 'm41', a, 'tiny')) e;
\x off
-- nothing started
SELECT count(*) AS jobs FROM headwater.job j JOIN headwater.model m USING (model_id) WHERE m.name = 'm41';

-- 2. a run (threads above the CPU count are clamped, not an error); the
--    times the worker writes move: one created_at per checkpoint
SET client_min_messages = warning;
CREATE TEMP TABLE run AS
SELECT 'first' AS run, rt_train('m41', steps => 3, preset => 'tiny',
                                options => '{"checkpoint_every": 1, "val_batches": 1, "threads": 1024}') AS r;
RESET client_min_messages;
SELECT r->>'state' AS state, r->>'resumed_from' AS resumed_from, r->>'steps_done' AS steps_done FROM run;
SELECT count(*) AS checkpoints, count(DISTINCT c.created_at) AS distinct_created_at
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'm41';
SELECT started_at < updated_at AS updated_after_start, started_at < finished_at AS finished_after_start
FROM headwater.job WHERE job_id = (SELECT (r->>'job_id')::bigint FROM run);

-- 3. steps is a total: below the resume point an error, at it a NOTICE
SELECT * FROM pg_temp.err($$SELECT rt_train('m41', steps => 2, preset => 'tiny')$$);
SELECT r->>'state' AS state, r->>'job_id' IS NULL AS no_job, r->>'steps_done' AS steps_done
FROM rt_train('m41', steps => 3, preset => 'tiny') r;

-- 4. restart starts a new run: prediction uses it (not the older run's
--    later step), and resuming continues it
SET client_min_messages = warning;
INSERT INTO run SELECT 'restart', rt_train('m41', steps => 2, preset => 'tiny',
                                           options => '{"restart": true, "checkpoint_every": 1, "val_batches": 1, "seed": 7}');
RESET client_min_messages;
SELECT r->>'resumed_from' AS resumed_from, r->>'steps_done' AS steps_done FROM run WHERE run = 'restart';
SELECT rt_debug_tape('status41') > 0 AS tape;
SELECT DISTINCT t.checkpoint_id = (SELECT (r->>'checkpoint_id')::bigint FROM run WHERE run = 'restart') AS serves_new_run
FROM rt_tape('status41') t;
SET client_min_messages = warning;
INSERT INTO run SELECT 'resume', rt_train('m41', steps => 3, preset => 'tiny', options => '{"val_batches": 1}');
RESET client_min_messages;
SELECT r->>'resumed_from' AS resumed_from, r->>'steps_done' AS steps_done FROM run WHERE run = 'resume';
SELECT count(DISTINCT lineage) AS runs,
       count(*) FILTER (WHERE lineage = (SELECT (r->>'job_id')::bigint FROM run WHERE run = 'restart')) AS in_new_run
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'm41';

-- a restart that is stopped before its first checkpoint still ends the old
-- run: the next call starts from scratch
SET client_min_messages = warning;
INSERT INTO run SELECT 'stopped', rt_train('m41', steps => 100000, preset => 'tiny',
                                           options => '{"restart": true, "checkpoint_every": 100000}', wait => false);
DO $$ BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN (SELECT lineage IS NOT NULL FROM headwater.job WHERE job_id = (SELECT (r->>'job_id')::bigint FROM run WHERE run = 'stopped'));
		PERFORM pg_sleep(0.1);
	END LOOP;
	PERFORM pg_terminate_backend(pid) FROM headwater.job WHERE job_id = (SELECT (r->>'job_id')::bigint FROM run WHERE run = 'stopped');
	FOR i IN 1..600 LOOP
		EXIT WHEN (SELECT state <> 'running' FROM headwater.job WHERE job_id = (SELECT (r->>'job_id')::bigint FROM run WHERE run = 'stopped'));
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
INSERT INTO run SELECT 'after', rt_train('m41', steps => 1, preset => 'tiny', options => '{"val_batches": 1}');
RESET client_min_messages;
SELECT j.state, j.error LIKE 'terminated%' AS terminated, count(c.*) AS checkpoints
FROM headwater.job j LEFT JOIN headwater.checkpoint c USING (job_id)
WHERE j.job_id = (SELECT (r->>'job_id')::bigint FROM run WHERE run = 'stopped') GROUP BY 1, 2;
SELECT r->>'state' AS state, r->>'resumed_from' AS resumed_from, r->>'steps_done' AS steps_done FROM run WHERE run = 'after';

-- 5. a model name with a quote: quoted in every hint, never pasted into SQL
SET client_min_messages = warning;
SELECT rt_create_model('t41''q', 't41') IS NOT NULL AS created;
SELECT rt_create_task('t41''q', 'status41q', anchor_table => 'orders', target_column => 'status') IS NOT NULL AS task;
RESET client_min_messages;
SELECT r->>'state' AS state, regexp_replace(r->>'hint', 'rt_wait\([0-9]+\)', 'rt_wait(N)') AS hint
FROM rt_train('t41''q', steps => 100000, preset => 'tiny', wait => false) r;
SELECT code, regexp_replace(message, 'job [0-9]+', 'job N') AS message, regexp_replace(hint, '\([0-9]+\)', '(N)') AS hint
FROM pg_temp.err($$SELECT rt_train('t41''q', steps => 1, preset => 'tiny')$$);
SET client_min_messages = warning;
SELECT rt_cancel('t41''q') > 0 AS cancelled;
SELECT rt_wait(max(job_id)) ->> 'state' AS state FROM headwater.job j JOIN headwater.model m USING (model_id) WHERE m.name = 't41''q';
RESET client_min_messages;
SELECT * FROM pg_temp.err($$SELECT rt_cancel('t41''q')$$);
SELECT * FROM pg_temp.err($$SELECT rt_train('t41''q', tasks => ARRAY['nosuchtask'])$$);

-- 6. rt_training is readable by any role
CREATE ROLE t41_reader;
SET ROLE t41_reader;
SELECT count(*) >= 0 AS readable FROM rt_training;
RESET ROLE;
DROP ROLE t41_reader;

SET client_min_messages = warning;
SELECT rt_drop_model('m41');
SELECT rt_drop_model('t41''q');
DROP SCHEMA t41 CASCADE;
