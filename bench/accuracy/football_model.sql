-- bench/accuracy/football_model.sql: headwater on the football database as a
-- new user would set it up (football.sh): one model over schema football with
-- defaults, one query task per benchmark task from its task tables, the
-- tables' own split in a `split` column (train / val / test by observation
-- time, the same rows the GBDT and the baselines use), and each label's
-- window as `label_horizon` (docs/user_guide.md, *Label history*: a label
-- is known only when its window has ended, so the earlier labels shown as
-- history are only those a forecaster would have had at obs_time).
-- match, goal and shootout are dated (their `date` is the time column);
-- team, tournament and player are not, so a team's player rows include the
-- scorers of later years (a player row exists once he has scored for the
-- team at any time up to the data's end): as loaded, the schema shows a
-- team's future scorers, without their goals, at every obs_time.  Kept as a
-- new user would load it; the GBDT does not read player rows for the team
-- tasks.
-- psql variable: model (the model's name; the tasks are <model>_<task>).
\set ON_ERROR_STOP on
SET timezone = 'UTC';
SELECT rt_create_model(:'model', 'football');
SELECT rt_create_task(:'model', :'model' || '_team_unbeaten', anchor_table => 'team', query => $$
  SELECT team_id, obs_time::timestamptz AS obs_time, label AS unbeaten, split FROM (
    SELECT *, 'train' AS split FROM football_task.team_unbeaten_train
    UNION ALL SELECT *, 'val' FROM football_task.team_unbeaten_val
    UNION ALL SELECT *, 'test' FROM football_task.team_unbeaten_test) t
$$, options => '{"label_horizon": "90 days"}');
SELECT rt_create_task(:'model', :'model' || '_team_goals', anchor_table => 'team', query => $$
  SELECT team_id, obs_time::timestamptz AS obs_time, label AS goals_per_match, split FROM (
    SELECT *, 'train' AS split FROM football_task.team_goals_train
    UNION ALL SELECT *, 'val' FROM football_task.team_goals_val
    UNION ALL SELECT *, 'test' FROM football_task.team_goals_test) t
$$, options => '{"label_horizon": "365 days"}');
SELECT rt_create_task(:'model', :'model' || '_player_scores', anchor_table => 'player', query => $$
  SELECT player_id, obs_time::timestamptz AS obs_time, label AS scores, split FROM (
    SELECT *, 'train' AS split FROM football_task.player_scores_train
    UNION ALL SELECT *, 'val' FROM football_task.player_scores_val
    UNION ALL SELECT *, 'test' FROM football_task.player_scores_test) t
$$, options => '{"label_horizon": "365 days"}');
SELECT task, n_train, n_val, n_test, split_method, options FROM rt_tasks(:'model') ORDER BY task;
SELECT table_name, column_name, semantic_type, is_time_column FROM rt_describe(:'model')
WHERE is_time_column OR semantic_type = 'timestamp' ORDER BY 1, 2;
