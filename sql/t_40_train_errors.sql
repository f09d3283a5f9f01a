-- t_40_train_errors: bad arguments to training, prediction and evaluation get
-- a clear error (SQLSTATE, the object's name, a hint) and change nothing.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
CREATE SCHEMA t40;
CREATE TABLE t40.customer (id int PRIMARY KEY, segment text, vip bool, joined timestamptz);
CREATE TABLE t40.purchase (id int PRIMARY KEY, customer_id int REFERENCES t40.customer, amount float8, at timestamptz);
INSERT INTO t40.customer SELECT i, (ARRAY['a','b','c'])[1 + i % 3], i % 4 = 0, '2024-01-01'::timestamptz + i * interval '1 day' FROM generate_series(1, 60) i;
INSERT INTO t40.purchase SELECT i, 1 + i % 60, i * 1.5, '2024-03-01'::timestamptz + i * interval '1 hour' FROM generate_series(1, 300) i;
SELECT rt_create_model('m40', 't40') IS NOT NULL AS created;
SELECT (rt_create_task('m40', 'vip40', anchor_table => 'customer', target_column => 'vip') ->> 'seeds')::int AS seeds;
RESET client_min_messages;

-- rt_train: arguments
SELECT rt_train('m40', steps => -5);
SELECT rt_train('m40', steps => 0);
SELECT rt_train('m40', preset => 'huge');
SELECT rt_train('m40', device => 'tpu');
SELECT rt_train('m40', options => '{"learning_rate": 0.1}');
SELECT rt_train('m40', options => '[1, 2]');
SELECT rt_train('nosuchmodel');
SELECT rt_train('m40', tasks => ARRAY['vip40', 'nosuchtask']);
SELECT rt_train(NULL);
-- sampler options with bad values: refused by the call
DO $$ BEGIN PERFORM rt_train('m40', steps => 1, options => '{"child_sampling": "newest"}');
EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', regexp_replace(SQLERRM, 'job [0-9]+', 'job N'); END $$;
DO $$ BEGIN PERFORM rt_train('m40', steps => 1, options => '{"key_cells": 1}');
EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', regexp_replace(SQLERRM, 'job [0-9]+', 'job N'); END $$;
-- device 'cuda' without a CUDA build or GPU: the worker reports it
DO $$ BEGIN PERFORM rt_train('m40', steps => 1, device => 'cuda');
EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', regexp_replace(SQLERRM, 'job [0-9]+', 'job N'); END $$;

-- follow / stop
SELECT rt_cancel('m40');
SELECT rt_cancel('nosuchmodel');
SELECT rt_wait(987654);
SELECT count(*) FROM rt_status('nosuchmodel');

-- prediction and evaluation before training, and bad names
SELECT rt_predict('vip40', 1);
SELECT rt_predict('nosuchtask', 1);
SELECT * FROM rt_evaluate('vip40', 'holdout');
SELECT * FROM rt_evaluate('vip40');

-- nothing was left behind by the failed calls
SELECT count(*) AS jobs_other_than_failed FROM headwater.job WHERE state <> 'failed';
SELECT count(*) AS checkpoints FROM headwater.checkpoint;

SET client_min_messages = warning;
SELECT rt_drop_model('m40');
DROP SCHEMA t40 CASCADE;

-- the options as rows (the settings table): the sampler's, with their ranges
-- and what a resumed run keeps; rt_sample_batches takes the same ranges
SELECT name, type, value_range, default_value, kept_on_resume
FROM rt_settings() WHERE setting_group = 'sampler' ORDER BY name;
SELECT count(*) AS options, count(*) FILTER (WHERE kept_on_resume) AS kept,
       count(*) FILTER (WHERE name = 'hosts') AS hosts
FROM rt_settings();
