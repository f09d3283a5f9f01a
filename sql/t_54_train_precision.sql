-- t_54_train_precision: the option train_precision ("auto" by default: bf16
-- where the processor can; "bf16" runs the transformer layers' GEMMs in bf16
-- with fp32 accumulation on a processor with AVX512_BF16; "fp32").
-- The arithmetic itself is checked against fp32 in test_train_bf16.c; here:
-- the option's errors, its default, that "fp32" and "auto" train on any
-- machine, and that "bf16" either trains (AVX512_BF16) or is refused with
-- SQLSTATE 0A000 and a hint, leaving the model as it was.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SET timezone = 'UTC';
CREATE SCHEMA t54;
CREATE TABLE t54.customer (customer_id int PRIMARY KEY, age float8);
CREATE TABLE t54.orders (order_id int PRIMARY KEY, customer_id int NOT NULL REFERENCES t54.customer,
                         ordered_at timestamptz NOT NULL, amount float8);
INSERT INTO t54.customer SELECT i, 20 + i FROM generate_series(1, 24) i;
INSERT INTO t54.orders SELECT 10 * c + k, c, timestamptz '2024-01-01' + (c + 10 * k) * interval '1 day', k
FROM generate_series(1, 24) c, generate_series(1, 5) k WHERE k <= 3 + c % 3;
SELECT rt_create_model('m54', 't54') IS NOT NULL AS model_ok;
SELECT s ->> 'seeds' AS seeds
FROM rt_create_task('m54', 't54_busy', $$
	SELECT customer_id, timestamptz '2024-03-01' AS obs_time, customer_id % 3 = 0 AS busy
	FROM t54.customer $$, options => '{"split_ratios": [1, 0, 0]}') s;
RESET client_min_messages;

\i sql/include/err.sql

-- 1. errors (before any job starts): an unknown name, a number
SELECT * FROM pg_temp.err($$ SELECT rt_train('m54', steps => 1, options => '{"train_precision": "half"}') $$);
SELECT * FROM pg_temp.err($$ SELECT rt_train('m54', steps => 1, options => '{"train_precision": 16}') $$);
SELECT count(*) FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'm54';
SELECT default_value, setting_group FROM rt_settings() WHERE name = 'train_precision';

-- 2. "fp32" and "auto" train anywhere (auto: bf16 where the processor can)
CREATE FUNCTION pg_temp.train(prec text, steps int) RETURNS text LANGUAGE sql AS $$
	SELECT r ->> 'state' FROM rt_train('m54', steps => steps, preset => 'tiny',
		options => jsonb_build_object('val_every', 1000, 'checkpoint_every', 1000, 'val_batches', 1,
		                              'val_rows', 4, 'log_every', 1, 'warmup_steps', 0, 'seed', 54,
		                              'train_precision', prec)) r $$;
SET client_min_messages = warning;
SELECT pg_temp.train('fp32', 2) AS fp32_state;
SELECT pg_temp.train('auto', 4) AS auto_state;
RESET client_min_messages;
SELECT count(*) AS logged_steps, bool_and(loss = loss AND loss < 'Infinity') AS losses_finite
FROM headwater.train_log l JOIN headwater.model m USING (model_id) WHERE m.name = 'm54';

-- 3. "bf16": trained on a processor with AVX512_BF16, else refused (0A000,
-- a hint) with the model unchanged; either way one of these lines
SET client_min_messages = warning;
DO $$
DECLARE
	before bigint;
	code text;
	hint text;
BEGIN
	SELECT max(l.step) INTO before FROM headwater.train_log l JOIN headwater.model m USING (model_id)
	WHERE m.name = 'm54';
	BEGIN
		PERFORM pg_temp.train('bf16', 6);
		IF (SELECT max(l.step) FROM headwater.train_log l JOIN headwater.model m USING (model_id)
			WHERE m.name = 'm54') = 6 THEN
			RAISE WARNING 'bf16: trained to step 6, or refused with 0A000 and the model left at step 4';
		ELSE
			RAISE WARNING 'bf16: the run did not reach step 6';
		END IF;
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, hint = PG_EXCEPTION_HINT;
		IF code = '0A000' AND hint LIKE '%"auto"%' AND before = (SELECT max(l.step) FROM headwater.train_log l
				JOIN headwater.model m USING (model_id) WHERE m.name = 'm54') THEN
			RAISE WARNING 'bf16: trained to step 6, or refused with 0A000 and the model left at step 4';
		ELSE
			RAISE WARNING 'bf16: unexpected error % (hint %)', code, hint;
		END IF;
	END;
END $$;

SET client_min_messages = warning;
DROP SCHEMA t54 CASCADE;
SELECT rt_drop_model('m54');
