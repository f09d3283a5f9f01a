-- bench/accuracy/football_features.sql: the GBDT's hand-written features for
-- every row of the football tasks (football_task.<task>_{train,val,test}),
-- computed ONLY from matches and goals dated at or before the row's obs_time
-- (a match is dated at 00:00 of its day, so a match on obs_time itself is
-- known; every label window starts strictly after obs_time).  What a strong
-- data scientist writes for these tasks: recent form (last 5 / 10 matches,
-- last 90 days, 1 and 3 years), rest, home/neutral and friendly shares, an
-- Elo rating replayed match by match (so a rating at T has seen only matches
-- dated <= T), opponents' strength; for a player his goals over 1/2/3 years,
-- recency, penalty/own-goal shares, career goals and his team's form.
-- Output: CSV on stdout: task, row_key ('<entity id>@<obs date>'), split,
-- label (0/1 or goals per match), then numeric features (empty = missing).
\set ON_ERROR_STOP on
SET client_min_messages = warning;
SET search_path = football, football_task, public;

-- one row per (team, played match): its goals for/against, venue, tournament type
CREATE TEMP TABLE ff_tm AS
SELECT m.match_id, m.date, m.home_team_id AS team_id, m.away_team_id AS opp_id, m.home_score AS gf,
       m.away_score AS ga, NOT coalesce(m.neutral, false) AS at_home, coalesce(m.neutral, false) AS neutral,
       t.name = 'Friendly' AS friendly
FROM match m JOIN tournament t USING (tournament_id) WHERE m.home_score IS NOT NULL AND m.away_score IS NOT NULL
UNION ALL
SELECT m.match_id, m.date, m.away_team_id, m.home_team_id, m.away_score, m.home_score, false,
       coalesce(m.neutral, false), t.name = 'Friendly'
FROM match m JOIN tournament t USING (tournament_id) WHERE m.home_score IS NOT NULL AND m.away_score IS NOT NULL;

-- Elo replayed in date order (K 20 friendly / 40 otherwise, scaled by the goal
-- difference; +100 for the home side unless neutral): each (team, match) row
-- gets the team's and its opponent's rating before the match and its own after.
ALTER TABLE ff_tm ADD elo_before float8, ADD opp_elo_before float8, ADD elo_after float8;
CREATE TEMP TABLE ff_elo (match_id int PRIMARY KEY, home_before float8, away_before float8,
                          home_after float8, away_after float8);
DO $$
DECLARE
	r record;
	rating float8[];
	rh float8; ra float8; eh float8; s float8; k float8; g int;
BEGIN
	rating := array_fill(1500::float8, ARRAY[(SELECT max(team_id) FROM team)]);
	FOR r IN SELECT m.match_id, m.home_team_id h, m.away_team_id a, m.home_score hs, m.away_score aws,
	                coalesce(m.neutral, false) neu, t.name = 'Friendly' fr
	         FROM match m JOIN tournament t USING (tournament_id)
	         WHERE m.home_score IS NOT NULL AND m.away_score IS NOT NULL ORDER BY m.date, m.match_id
	LOOP
		rh := rating[r.h]; ra := rating[r.a];
		eh := 1 / (1 + 10 ^ ((ra - rh - CASE WHEN r.neu THEN 0 ELSE 100 END) / 400));
		s := CASE WHEN r.hs > r.aws THEN 1 WHEN r.hs = r.aws THEN 0.5 ELSE 0 END;
		g := abs(r.hs - r.aws);
		k := CASE WHEN r.fr THEN 20 ELSE 40 END * CASE WHEN g <= 1 THEN 1 WHEN g = 2 THEN 1.5 ELSE (11 + g) / 8.0 END;
		rating[r.h] := rh + k * (s - eh);
		rating[r.a] := ra - k * (s - eh);
		INSERT INTO ff_elo VALUES (r.match_id, rh, ra, rating[r.h], rating[r.a]);
	END LOOP;
END $$;
UPDATE ff_tm x SET elo_before = CASE WHEN m.home_team_id = x.team_id THEN e.home_before ELSE e.away_before END,
                   opp_elo_before = CASE WHEN m.home_team_id = x.team_id THEN e.away_before ELSE e.home_before END,
                   elo_after = CASE WHEN m.home_team_id = x.team_id THEN e.home_after ELSE e.away_after END
FROM ff_elo e JOIN match m USING (match_id) WHERE e.match_id = x.match_id;
CREATE INDEX ON ff_tm (team_id, date);
ANALYZE ff_tm;

-- every (team, T) the team tasks ask about, and every (player's team, T) of the player task
CREATE TEMP TABLE ff_team_t AS
SELECT DISTINCT team_id, obs_time FROM (
	SELECT team_id, obs_time FROM team_unbeaten_train UNION ALL SELECT team_id, obs_time FROM team_unbeaten_val
	UNION ALL SELECT team_id, obs_time FROM team_unbeaten_test UNION ALL SELECT team_id, obs_time FROM team_goals_train
	UNION ALL SELECT team_id, obs_time FROM team_goals_val UNION ALL SELECT team_id, obs_time FROM team_goals_test
	UNION ALL SELECT p.team_id, s.obs_time FROM (SELECT * FROM player_scores_train UNION ALL SELECT * FROM player_scores_val
	                                             UNION ALL SELECT * FROM player_scores_test) s JOIN player p USING (player_id)) u;

CREATE TEMP TABLE ff_team AS
SELECT k.team_id, k.obs_time, l10.*, y1.*, y3.*, q.*, lst.*
FROM ff_team_t k
CROSS JOIN LATERAL (   -- the last 10 and last 5 matches
	SELECT count(*) AS n_last10,
	       avg((gf > ga)::int) AS win10, avg((gf = ga)::int) AS draw10, avg((gf < ga)::int) AS loss10,
	       avg(gf) AS gf10, avg(ga) AS ga10, avg(opp_elo_before) AS opp_elo10,
	       avg((gf > ga)::int) FILTER (WHERE rn <= 5) AS win5, avg((gf >= ga)::int) FILTER (WHERE rn <= 5) AS unbeaten5,
	       avg(gf) FILTER (WHERE rn <= 5) AS gf5, avg(ga) FILTER (WHERE rn <= 5) AS ga5,
	       avg((gf >= ga)::int) AS unbeaten10
	FROM (SELECT *, row_number() OVER (ORDER BY date DESC) rn FROM
	      (SELECT gf, ga, opp_elo_before, date FROM ff_tm t WHERE t.team_id = k.team_id AND t.date <= k.obs_time
	       ORDER BY date DESC LIMIT 10) l) l) l10
CROSS JOIN LATERAL (   -- the last year
	SELECT count(*) AS n_1y, avg((gf > ga)::int) AS win_1y, avg((gf >= ga)::int) AS unbeaten_1y,
	       avg(gf) AS gf_1y, avg(ga) AS ga_1y, avg(at_home::int) AS home_1y, avg(neutral::int) AS neutral_1y,
	       avg(friendly::int) AS friendly_1y, avg(opp_elo_before) AS opp_elo_1y,
	       sum(gf) AS goals_1y
	FROM ff_tm t WHERE t.team_id = k.team_id AND t.date <= k.obs_time AND t.date > k.obs_time - interval '1 year') y1
CROSS JOIN LATERAL (   -- the last 3 years
	SELECT count(*) AS n_3y, avg((gf > ga)::int) AS win_3y, avg((gf >= ga)::int) AS unbeaten_3y,
	       avg(gf) AS gf_3y, avg(ga) AS ga_3y, avg(friendly::int) AS friendly_3y, avg(at_home::int) AS home_3y,
	       avg(opp_elo_before) AS opp_elo_3y, avg((gf > ga)::int) FILTER (WHERE NOT friendly) AS win_comp_3y
	FROM ff_tm t WHERE t.team_id = k.team_id AND t.date <= k.obs_time AND t.date > k.obs_time - interval '3 years') y3
CROSS JOIN LATERAL (   -- the last 90 days (the previous label window, complete at T)
	SELECT count(*) AS n_90d, avg((gf >= ga)::int) AS unbeaten_90d, avg(gf) AS gf_90d
	FROM ff_tm t WHERE t.team_id = k.team_id AND t.date <= k.obs_time AND t.date > k.obs_time - interval '90 days') q
CROSS JOIN LATERAL (   -- rest and rating after the last match; career length
	SELECT extract(epoch FROM k.obs_time - max(date)) / 86400 AS days_since_match,
	       (array_agg(elo_after ORDER BY date DESC, match_id DESC))[1] AS elo,
	       (array_agg(elo_before ORDER BY date DESC, match_id DESC))[10] AS elo_10_ago,
	       count(*) AS n_all
	FROM ff_tm t WHERE t.team_id = k.team_id AND t.date <= k.obs_time) lst;
CREATE INDEX ON ff_team (team_id, obs_time);
ANALYZE ff_team;

\set team_cols 'n_last10, win10, draw10, loss10, gf10, ga10, opp_elo10, win5, unbeaten5, gf5, ga5, unbeaten10, n_1y, win_1y, unbeaten_1y, gf_1y, ga_1y, home_1y, neutral_1y, friendly_1y, opp_elo_1y, n_3y, win_3y, unbeaten_3y, gf_3y, ga_3y, friendly_3y, home_3y, opp_elo_3y, win_comp_3y, n_90d, unbeaten_90d, gf_90d, days_since_match, elo, elo_trend, n_all, month, year'
CREATE TEMP VIEW ff_team_cols AS   -- the team features: the columns named in team_cols
SELECT *, elo - elo_10_ago AS elo_trend, extract(month FROM obs_time) AS month, extract(year FROM obs_time) AS year
FROM ff_team;

CREATE TEMP TABLE ff_rows AS
SELECT 'team_unbeaten' AS task, team_id || '@' || obs_time::date AS row_key, 'train' AS split, label::int::float8 AS label, team_id, obs_time FROM team_unbeaten_train
UNION ALL SELECT 'team_unbeaten', team_id || '@' || obs_time::date, 'val', label::int, team_id, obs_time FROM team_unbeaten_val
UNION ALL SELECT 'team_unbeaten', team_id || '@' || obs_time::date, 'test', label::int, team_id, obs_time FROM team_unbeaten_test
UNION ALL SELECT 'team_goals', team_id || '@' || obs_time::date, 'train', label, team_id, obs_time FROM team_goals_train
UNION ALL SELECT 'team_goals', team_id || '@' || obs_time::date, 'val', label, team_id, obs_time FROM team_goals_val
UNION ALL SELECT 'team_goals', team_id || '@' || obs_time::date, 'test', label, team_id, obs_time FROM team_goals_test;

-- players: goals over 1/2/3 years, recency, shares, career; his team's form at T
CREATE TEMP TABLE ff_prow AS
SELECT 'player_scores' AS task, player_id || '@' || obs_time::date AS row_key, split, label::int::float8 AS label,
       player_id, obs_time
FROM (SELECT *, 'train' AS split FROM player_scores_train UNION ALL SELECT *, 'val' FROM player_scores_val
      UNION ALL SELECT *, 'test' FROM player_scores_test) s;

COPY (SELECT r.task, r.row_key, r.split, r.label, :team_cols
      FROM ff_rows r JOIN ff_team_cols f USING (team_id, obs_time) ORDER BY r.task, r.obs_time, r.team_id)
TO STDOUT WITH (FORMAT csv, HEADER) \g :team_csv
COPY (SELECT r.task, r.row_key, r.split, r.label, g.*,
      f.elo AS team_elo, f.win10 AS team_win10, f.gf10 AS team_gf10, f.gf_1y AS team_gf_1y,
      f.n_1y AS team_matches_1y, f.goals_1y AS team_goals_1y, f.days_since_match AS team_days_since_match, f.friendly_1y AS team_friendly_1y, f.opp_elo_1y AS team_opp_elo_1y,
      g.goals_1y::float8 / nullif(f.goals_1y, 0) AS share_of_team_goals_1y, extract(year FROM r.obs_time) AS year
      FROM ff_prow r JOIN player p USING (player_id) JOIN ff_team f ON f.team_id = p.team_id AND f.obs_time = r.obs_time
      CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE o.date > r.obs_time - interval '1 year') AS goals_1y,
         count(*) FILTER (WHERE o.date > r.obs_time - interval '2 years') AS goals_2y,
         count(*) FILTER (WHERE o.date > r.obs_time - interval '3 years') AS goals_3y,
         count(DISTINCT o.match_id) FILTER (WHERE o.date > r.obs_time - interval '1 year') AS matches_scored_1y,
         count(DISTINCT o.match_id) FILTER (WHERE o.date > r.obs_time - interval '3 years') AS matches_scored_3y,
         count(*) AS career_goals, extract(epoch FROM r.obs_time - max(o.date)) / 86400 AS days_since_goal, extract(epoch FROM r.obs_time - min(o.date)) / 86400 AS days_since_first_goal,
         avg(coalesce(o.penalty, false)::int) AS penalty_share, avg(coalesce(o.own_goal, false)::int) AS own_goal_share
         FROM goal o WHERE o.player_id = r.player_id AND o.date <= r.obs_time) g
      ORDER BY r.obs_time, r.player_id)
TO STDOUT WITH (FORMAT csv, HEADER) \g :player_csv
