-- t_56_date_undated: with date_undated a row of a table without a time
-- column (a player) takes the time of the rows it links to (his first goal)
-- and no sequence observed before that time shows it; the checkpoint
-- stores the option and prediction builds its sequences the same way.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
RESET client_min_messages;
SET timezone = 'UTC';
CREATE SCHEMA du;
SET search_path = du, public;
CREATE TABLE team (id int PRIMARY KEY, rating float8);
CREATE TABLE player (id int PRIMARY KEY, team_id int REFERENCES team, height float8);
CREATE TABLE goal (id int PRIMARY KEY, player_id int REFERENCES player, at timestamptz, minute float8);
-- 4 teams of 5 players; player p first scores on day 10 p of 2024, then 30
-- and 60 days later
INSERT INTO team SELECT i, i FROM generate_series(1, 4) i;
INSERT INTO player SELECT p, 1 + (p - 1) / 5, 1.7 + p / 100.0 FROM generate_series(1, 20) p;
INSERT INTO goal SELECT 3 * (p - 1) + k, p, '2024-01-01'::timestamptz + (10 * p + 30 * k) * interval '1 day', 10 * k
FROM generate_series(1, 20) p, generate_series(0, 2) k;
SELECT rt_create_model('du', 'du') IS NOT NULL AS model_ok;
SELECT table_name, is_time_column FROM rt_describe('du') WHERE column_name IN ('at', 'height', 'rating') ORDER BY 1;
SELECT rt_create_task('du', 'du_goals', anchor_table => 'team', query => $$
  SELECT t.id, o AS obs_time, (SELECT count(*) FROM goal g JOIN player p ON p.id = g.player_id
                               WHERE p.team_id = t.id AND g.at > o AND g.at <= o + interval '60 days')::float8 AS n
  FROM team t, generate_series('2024-01-15'::timestamptz, '2024-12-15', interval '1 month') o
$$, options => '{"split_ratios": [1, 0, 0]}') ->> 'seeds' AS seeds;

-- per sequence of one batch: the player rows it shows, and those that first
-- scored after its observation time (counted here in SQL, from the goals)
CREATE FUNCTION pg_temp.players(opts jsonb) RETURNS TABLE (sequences bigint, players bigint, before_first_goal bigint) AS $$
DECLARE
	batch bigint;
BEGIN
	SELECT min(b) INTO batch
	FROM rt_sample_batches('du', 'du_goals', n => 1, batch_size => 16, seq_len => 128, options => opts) b;
	RETURN QUERY
	WITH seq AS (SELECT q, s.* FROM generate_series(0, 15) q, rt_batch_sequence(batch, q) s WHERE NOT s.is_padding),
	obs AS (SELECT q, value::timestamptz AS t FROM seq WHERE column_name = 'observation time' AND seq_row = 0),
	shown AS (SELECT DISTINCT q, row_key::int AS player_id FROM seq WHERE table_name = 'player')
	SELECT count(DISTINCT o.q), count(sh.player_id),
	       count(*) FILTER (WHERE (SELECT min(g.at) FROM goal g WHERE g.player_id = sh.player_id) > o.t)
	FROM obs o LEFT JOIN shown sh USING (q);
END $$ LANGUAGE plpgsql;
SELECT * FROM pg_temp.players('{"date_undated": false}');
SELECT * FROM pg_temp.players('{"date_undated": true}');
SELECT count(*) FROM rt_sample_batches('du', 'du_goals', options => '{"date_undated": "yes"}');

-- the players of team 1 in the sequence rt_predict builds for 2024-02-01:
-- three have scored by then (days 10, 20, 30), five exist
CREATE FUNCTION pg_temp.predict_players() RETURNS bigint AS $$
DECLARE
	batch bigint := rt_debug_predict_batch('du.du_goals', 1, obs_time => '2024-02-01');
BEGIN
	RETURN (SELECT count(DISTINCT s.row_key) FROM rt_batch_sequence(batch, 0) s WHERE s.table_name = 'player');
END $$ LANGUAGE plpgsql;
SET client_min_messages = warning;
SELECT r ->> 'state' AS state FROM rt_train('du', steps => 2, preset => 'tiny', options => '{"date_undated": true}') r;
RESET client_min_messages;
SELECT DISTINCT config -> 'date_undated' AS date_undated
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'du';
SELECT pg_temp.predict_players() AS players_dated;
SET client_min_messages = warning;
SELECT r ->> 'state' AS state FROM rt_train('du', steps => 2, preset => 'tiny', options => '{"restart": true, "date_undated": false}') r;
RESET client_min_messages;
SELECT pg_temp.predict_players() AS players_undated;
SELECT rt_drop_model('du');
