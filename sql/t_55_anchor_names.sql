-- t_55_anchor_names: the names of the rows a task predicts about (a text
-- column of its anchor table, nearly every value distinct) emit no cells
-- unless anchor_names is set; the same text in a table that is no task's
-- anchor still shows.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
RESET client_min_messages;
SET timezone = 'UTC';
CREATE SCHEMA an;
SET search_path = an, public;
CREATE TABLE league (id int PRIMARY KEY, title text);
CREATE TABLE team (id int PRIMARY KEY, league_id int REFERENCES league, name text, city text, founded float8);
-- 12 teams: every name distinct, three cities; 10 leagues, every title distinct
INSERT INTO league SELECT i, 'league ' || i FROM generate_series(1, 10) i;
INSERT INTO team SELECT i, 1 + i % 10, 'team ' || i, 'city ' || i % 3, 1900 + i FROM generate_series(1, 12) i;
SELECT rt_create_model('an', 'an') IS NOT NULL AS model_ok;
SELECT table_name, column_name, semantic_type FROM rt_describe('an')
WHERE semantic_type IN ('text', 'categorical') ORDER BY 1, 2;
SELECT rt_create_task('an', 'an_founded', anchor_table => 'team', target_column => 'founded',
                      options => '{"split_ratios": [1, 0, 0]}') ->> 'seeds' AS seeds;

-- the cells of one batch by column: team.name is gone by default; city
-- (three values) and the league's title (league is no task's anchor) stay
CREATE FUNCTION pg_temp.cells(opts jsonb) RETURNS TABLE (table_name text, column_name text, cells bigint) AS $$
DECLARE
	batch bigint;
BEGIN
	SELECT min(b) INTO batch
	FROM rt_sample_batches('an', 'an_founded', n => 1, batch_size => 4, seq_len => 16, options => opts) b;
	RETURN QUERY SELECT s.table_name::text, s.column_name::text, count(*)
		FROM generate_series(0, 3) q, rt_batch_sequence(batch, q) s
		WHERE NOT s.is_padding GROUP BY 1, 2 ORDER BY 1, 2;
END $$ LANGUAGE plpgsql;
SELECT * FROM pg_temp.cells('{}');
SELECT * FROM pg_temp.cells('{"anchor_names": true}');
SELECT count(*) FROM rt_sample_batches('an', 'an_founded', options => '{"anchor_names": 1}');

-- training hides them too, and each checkpoint keeps the list
SET client_min_messages = warning;
SELECT r ->> 'state' AS state FROM rt_train('an', steps => 4, preset => 'tiny', options => '{"val_every": 2}') r;
RESET client_min_messages;
SELECT DISTINCT config -> 'hidden_names' AS hidden_names, config -> 'anchor_names' AS anchor_names
FROM headwater.checkpoint c JOIN headwater.model m USING (model_id) WHERE m.name = 'an';
CREATE TABLE public.an_before AS SELECT id, rt_predict('an.an_founded', id) AS p FROM an.team;

-- a task on league makes its titles names of anchor rows too; a league left
-- with nothing but its key keeps the key's cell, so its row keeps its place
SELECT rt_create_task('an', 'an_size', $$ SELECT l.id, (SELECT count(*) FROM team t WHERE t.league_id = l.id) AS n
	FROM league l $$, anchor_table => 'league', options => '{"split_ratios": [1, 0, 0]}') ->> 'seeds' AS seeds;
SELECT * FROM pg_temp.cells('{}');
-- but the trained model keeps seeing what it saw: its checkpoint's list, not
-- the rule over today's tasks, decides (a new session: nothing cached)
\c
SET search_path = an, public;
SELECT count(*) AS teams, count(*) FILTER (WHERE b.p = rt_predict('an.an_founded', b.id)) AS same_prediction
FROM public.an_before b;
SELECT rt_drop_model('an');
DROP TABLE public.an_before;
