-- bench/accuracy/football_preds.sql: headwater's served predictions for every
-- test row of the three football tasks (football.sh, after training; reads
-- only): rt_predict_table over football_task.<task>_test with each row's
-- obs_time, the task's serving checkpoint and weights.  Written as paired.py's
-- rows: method, seed, task, row_key ('<entity id>@<obs date>', as
-- football_features.sql), label, pred.  psql variables: model, seed, dump.
\set ON_ERROR_STOP on
SET timezone = 'UTC';
CREATE TEMP TABLE fb_preds (method text, seed int, task text, row_key text, label float8, pred float8);
INSERT INTO fb_preds
SELECT 'headwater', :seed, 'team_unbeaten', t.team_id || '@' || t.obs_time::date, t.label::int, p.prediction
FROM rt_predict_table(:'model' || '_team_unbeaten',
                      'SELECT team_id, obs_time::timestamptz AS obs_time FROM football_task.team_unbeaten_test') p
JOIN football_task.team_unbeaten_test t ON t.team_id::text = p.row_id AND t.obs_time::timestamptz = p.obs_time;
INSERT INTO fb_preds
SELECT 'headwater', :seed, 'team_goals', t.team_id || '@' || t.obs_time::date, t.label, p.prediction
FROM rt_predict_table(:'model' || '_team_goals',
                      'SELECT team_id, obs_time::timestamptz AS obs_time FROM football_task.team_goals_test') p
JOIN football_task.team_goals_test t ON t.team_id::text = p.row_id AND t.obs_time::timestamptz = p.obs_time;
INSERT INTO fb_preds
SELECT 'headwater', :seed, 'player_scores', t.player_id || '@' || t.obs_time::date, t.label::int, p.prediction
FROM rt_predict_table(:'model' || '_player_scores',
                      'SELECT player_id, obs_time::timestamptz AS obs_time FROM football_task.player_scores_test') p
JOIN football_task.player_scores_test t ON t.player_id::text = p.row_id AND t.obs_time::timestamptz = p.obs_time;
-- every test row predicted once, none NULL: else the comparison would not be on the same rows
SELECT task, count(*) AS predicted, count(pred) AS not_null FROM fb_preds GROUP BY task ORDER BY task;
COPY (SELECT * FROM fb_preds ORDER BY task, row_key) TO STDOUT WITH (FORMAT csv, HEADER) \g :dump
