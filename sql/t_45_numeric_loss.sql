-- t_45_numeric_loss: a numerical task's "loss" option reaches training.
-- The same model, seed and task are trained for one step three times, each
-- from scratch: with "huber", "mae" and "huber" again.  The step sees the same
-- batch and the same initial weights each time, so the step-1 training loss
-- is identical for the two Huber runs and differs for the MAE run only if
-- the stored option is what the training loss uses.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t45', 200) IS NOT NULL AS demo;
CREATE TEMP TABLE loss45 (run int, loss_option text, step1_loss float8);
-- (each call its own transaction: the training worker must see the model)
\set run 1
\set loss huber
\i sql/include/train45.sql
\set run 2
\set loss mae
\i sql/include/train45.sql
\set run 3
\set loss huber
\i sql/include/train45.sql
RESET client_min_messages;
SELECT count(*) AS runs, count(step1_loss) AS logged FROM loss45;
SELECT (SELECT step1_loss FROM loss45 WHERE run = 1) = (SELECT step1_loss FROM loss45 WHERE run = 3) AS huber_runs_equal,
       (SELECT step1_loss FROM loss45 WHERE run = 1) <> (SELECT step1_loss FROM loss45 WHERE run = 2) AS mae_differs;
