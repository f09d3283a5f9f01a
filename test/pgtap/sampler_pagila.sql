-- sampler_pagila.sql: tasks and batches on the real pagila database
-- (../shared/data/pagila): a composite-key anchor found by inference, a
-- query task with an observation time, a cell task on a partitioned table;
-- the virtual seed row's truth equals the query's value for its anchor key.
-- Skipped when HW_SHARED_DIR is empty or pagila is absent.
\ir include/pagila.sql

\if :have_pagila
SET timezone = 'UTC';
SELECT plan(12);
SELECT lives_ok($$ SELECT rt_create_model('pagila', 'public') $$, 'model');

-- composite key (actor_id, film_id): the widest returned key wins over actor and film
SELECT is(rt_create_task('pagila', 'pg_rating', $$
	SELECT fa.actor_id, fa.film_id, f.rating::text AS rating FROM film_actor fa JOIN film f USING (film_id) $$)
	->> 'anchor_table', 'film_actor', 'anchor inferred: film_actor');
SELECT is((SELECT n_seeds FROM rt_tasks('pagila') WHERE task = 'pg_rating'),
          (SELECT count(*) FROM film_actor), 'one seed per film_actor row');
SELECT is((SELECT n_categories FROM rt_tasks('pagila') WHERE task = 'pg_rating'), 5, 'five ratings: own category block');
SELECT ok((rt_create_task('pagila', 'pg_late', $$
	SELECT rental_id, rental_date AS observation_time, return_date - rental_date > interval '5 days' AS late
	FROM rental WHERE return_date IS NOT NULL $$) ->> 'seeds')::int > 15000, 'query task with observation time');
SELECT lives_ok($$ SELECT rt_create_task('pagila', 'pg_amount', anchor_table => 'payment', target_column => 'amount') $$,
                'cell task on the partitioned payment table');

CREATE TEMP TABLE ids AS
	SELECT 'pg_rating' AS task, id FROM rt_sample_batches('pagila', 'pg_rating', 'train', 2, 8, 128, 5) id
	UNION ALL SELECT 'pg_late', id FROM rt_sample_batches('pagila', 'pg_late', 'train', 2, 8, 128, 5) id
	UNION ALL SELECT 'pg_amount', id FROM rt_sample_batches('pagila', 'pg_amount', 'train', 2, 8, 128, 5) id;
SELECT is((SELECT count(*) FROM ids), 6::bigint, 'six batches');
CREATE TEMP TABLE seqs AS
SELECT i.task, i.id, s AS b,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'out_perm'))[s * 128 + 1:(s + 1) * 128] AS out_perm,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'in_perm'))[s * 128 + 1:(s + 1) * 128] AS in_perm,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'col_perm'))[s * 128 + 1:(s + 1) * 128] AS col_perm,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'is_target'))[s * 128 + 1:(s + 1) * 128] AS tgt
FROM ids i, generate_series(0, 7) s;
SELECT is((SELECT count(*) FROM seqs
           WHERE (SELECT array_agg(v ORDER BY v) FROM unnest(out_perm) v) <> (SELECT array_agg(g::float8) FROM generate_series(0, 127) g)
              OR (SELECT array_agg(v ORDER BY v) FROM unnest(in_perm) v) <> (SELECT array_agg(g::float8) FROM generate_series(0, 127) g)
              OR (SELECT array_agg(v ORDER BY v) FROM unnest(col_perm) v) <> (SELECT array_agg(g::float8) FROM generate_series(0, 127) g)),
          0::bigint, 'all permutations are permutations');
SELECT is((SELECT count(*) FROM seqs WHERE (SELECT count(*) FROM unnest(tgt) v WHERE v = 1) <> 1), 0::bigint,
          'one target per sequence');

-- the truth in the virtual row equals the query's value for the anchor's key
CREATE TEMP TABLE cells AS
SELECT s.task, s.id, s.b, q.* FROM seqs s, rt_batch_sequence(s.id, s.b) q
WHERE s.task = 'pg_rating' AND NOT q.is_padding;
-- (c1: the first cell of sequence row 1, whichever column it is: the key
-- columns actor_id and film_id emit no cells by default)
SELECT is((SELECT count(*) FROM cells c0 JOIN cells c1 ON c1.id = c0.id AND c1.b = c0.b AND c1.seq_row = 1
                                                     AND c1.position = (SELECT min(x.position) FROM cells x
                                                                        WHERE x.id = c0.id AND x.b = c0.b
                                                                          AND x.seq_row = 1)
           WHERE c0.seq_row = 0 AND c0.is_target
             AND c0.value = (SELECT f.rating::text FROM film f
                             WHERE f.film_id = split_part(c1.row_key, E'\x1f', 2)::int)
             AND c1.table_name = 'film_actor'), 16::bigint,
          'sequence row 1 is the anchor (composite key) and row 0 carries its truth');
SELECT is((SELECT count(DISTINCT column_name) FROM cells WHERE seq_row = 0), 2::bigint,
          'the virtual seed row has two cells (observation time, target)');
SELECT ok((SELECT bool_and(is_null) FROM cells WHERE seq_row = 0 AND column_name = 'observation time'),
          'no observation time: the virtual row''s time cell is NULL');
SELECT * FROM finish();
\else
SELECT plan(1);
SELECT skip('pagila not found (HW_SHARED_DIR empty or data/pagila absent)', 1);
SELECT * FROM finish();
\endif
