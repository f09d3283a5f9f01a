-- sampler_demo: properties of sampled batches on the demo shop database
-- (rt_demo_shop, scale 200): permutations, padding, one target per
-- sequence, fk_adj against the source FKs' direction, the leakage rule,
-- split stability across drop/create, determinism of batches.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SET timezone = 'UTC';
SELECT plan(15);

SELECT lives_ok($$ SELECT rt_demo_shop('shop', 200, 42) $$, 'demo database');
SELECT lives_ok($$ SELECT rt_create_model('shop', 'shop') $$, 'model');
SELECT lives_ok($$ SELECT rt_create_task('shop', 'churn', query => $q$
  SELECT c.customer_id,
         timestamptz '2024-10-01 00:00+00' AS obs_time,
         NOT EXISTS (SELECT 1 FROM shop.orders o
                     WHERE o.customer_id = c.customer_id
                       AND o.ordered_at >= timestamptz '2024-10-01 00:00+00'
                       AND o.ordered_at <  timestamptz '2024-10-01 00:00+00' + interval '60 days') AS churned
  FROM shop.customers c $q$) $$, 'query task churn (demo_database.md)');
SELECT lives_ok($$ SELECT rt_create_task('shop', 'status', anchor_table => 'orders', target_column => 'status') $$,
                'cell task orders.status');

CREATE TEMP TABLE ids AS
	SELECT 'churn' AS task, id FROM rt_sample_batches('shop', 'churn', 'train', 3, 8, 256, 1) id
	UNION ALL
	SELECT 'status', id FROM rt_sample_batches('shop', 'status', 'train', 3, 8, 256, 1) id
	UNION ALL
	SELECT 'status_follow', id FROM rt_sample_batches('shop', 'status', 'train', 3, 8, 256, 1,
	                                                  '{"future_parents": "follow"}') id;

-- one row per (batch, sequence) with the tensors it needs
CREATE TEMP TABLE seqs AS
SELECT i.task, i.id, s AS b, 256 AS len,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'col_perm'))[s * 256 + 1:(s + 1) * 256] AS col_perm,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'out_perm'))[s * 256 + 1:(s + 1) * 256] AS out_perm,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'in_perm'))[s * 256 + 1:(s + 1) * 256] AS in_perm,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'is_padding'))[s * 256 + 1:(s + 1) * 256] AS pad,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'is_target'))[s * 256 + 1:(s + 1) * 256] AS tgt,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'column_ids'))[s * 256 + 1:(s + 1) * 256] AS cols
FROM ids i, generate_series(0, 7) s;

CREATE FUNCTION pg_temp.perm_ok(perm float8[], pad float8[]) RETURNS bool LANGUAGE sql AS $$
	SELECT (SELECT array_agg(v ORDER BY v) FROM unnest(perm) v) = (SELECT array_agg(g::float8) FROM generate_series(0, 255) g)
	   AND NOT EXISTS (SELECT 1 FROM unnest(perm) WITH ORDINALITY AS u(v, i)
	                   WHERE (pad[v::int + 1] = 1) <> (i > (SELECT count(*) FROM unnest(pad) p WHERE p = 0)))
$$;
SELECT is((SELECT count(*) FROM seqs WHERE NOT (pg_temp.perm_ok(col_perm, pad) AND pg_temp.perm_ok(out_perm, pad)
                                              AND pg_temp.perm_ok(in_perm, pad))), 0::bigint,
          'col_perm, out_perm, in_perm are permutations with padding last');
SELECT is((SELECT count(*) FROM seqs WHERE (SELECT count(*) FROM unnest(tgt) v WHERE v = 1) <> 1), 0::bigint,
          'exactly one target per sequence');
SELECT is((SELECT count(*) FROM seqs s, generate_series(2, 256) j
           WHERE s.pad[j] = 0 AND s.cols[s.col_perm[j]::int + 1] < s.cols[s.col_perm[j - 1]::int + 1]), 0::bigint,
          'col_perm sorts column ids');

-- leakage: no row whose time is after the seed's observation time, except
-- the anchor (row 1 of a query task's sequence, row 0 of a cell task's);
-- with future_parents "follow" (status_follow) such a row may appear, but
-- only as a parent (fk_adj[x, r] = 1 for some row x of the sequence)
CREATE TEMP TABLE cells AS
SELECT s.task, s.id, s.b, q.*
FROM seqs s, rt_batch_sequence(s.id, s.b) q WHERE NOT q.is_padding;
CREATE TEMP TABLE tcols AS
SELECT table_name, column_name FROM rt_describe('shop') WHERE is_time_column;
CREATE TEMP TABLE row_time AS
SELECT c.task, c.id, c.b, c.seq_row, max(c.value::timestamptz) AS t
FROM cells c JOIN tcols USING (table_name, column_name) WHERE NOT c.is_null GROUP BY 1, 2, 3, 4;
CREATE TEMP TABLE obs AS
SELECT c.task, c.id, c.b, c.value::timestamptz AS obs FROM cells c
WHERE c.seq_row = 0 AND ((c.task = 'churn' AND c.column_name = 'observation time')
                      OR (c.task IN ('status', 'status_follow') AND c.column_name = 'ordered_at'));
CREATE TEMP TABLE adj AS
SELECT i.id, (SELECT shape[2] FROM rt_batch_tensor(i.id, 'fk_adj')) AS r,
       (SELECT "values" FROM rt_batch_tensor(i.id, 'fk_adj')) AS a FROM ids i;
SELECT is((SELECT count(*) FROM obs), 72::bigint, 'every sequence has an observation time');
SELECT is((SELECT count(*) FROM row_time rt JOIN obs o USING (task, id, b)
           WHERE rt.t > o.obs AND rt.seq_row > CASE rt.task WHEN 'churn' THEN 1 ELSE 0 END
             AND rt.task <> 'status_follow'), 0::bigint,
          'no row after the observation time but the anchor (future_parents "hide", the default)');
SELECT ok((SELECT count(*) FROM row_time rt JOIN obs o USING (task, id, b)
           WHERE rt.t > o.obs AND rt.seq_row > 0 AND rt.task = 'status_follow') > 0,
          'with future_parents "follow" some rows after the observation time are shown (as parents)');
SELECT is((SELECT count(*) FROM row_time rt JOIN obs o USING (task, id, b) JOIN adj USING (id)
           WHERE rt.t > o.obs AND rt.seq_row > 0
             AND NOT EXISTS (SELECT 1 FROM generate_series(0, adj.r - 1) x
                             WHERE adj.a[rt.b * adj.r * adj.r + x * adj.r + rt.seq_row + 1] = 1)),
          0::bigint, 'no row after the observation time is reached as a child');

-- determinism and split stability: the same batches after drop and create
CREATE TEMP TABLE before AS SELECT b.batch_number, b.seed_idx FROM headwater.batch b
	JOIN headwater.task t USING (task_id) WHERE t.name = 'churn' ORDER BY 1;
SELECT lives_ok($$ SELECT rt_drop_task('shop', 'churn') $$, 'drop churn');
SELECT lives_ok($$ SELECT rt_create_task('shop', 'churn', query => $q$
  SELECT c.customer_id,
         timestamptz '2024-10-01 00:00+00' AS obs_time,
         NOT EXISTS (SELECT 1 FROM shop.orders o
                     WHERE o.customer_id = c.customer_id
                       AND o.ordered_at >= timestamptz '2024-10-01 00:00+00'
                       AND o.ordered_at <  timestamptz '2024-10-01 00:00+00' + interval '60 days') AS churned
  FROM shop.customers c $q$) $$, 'create churn again (now after status in model order)');
SELECT is((SELECT count(*) FROM rt_sample_batches('shop', 'churn', 'train', 3, 8, 256, 1)), 3::bigint, 'sample again');
SELECT results_eq($$ SELECT b.batch_number, b.seed_idx FROM headwater.batch b JOIN headwater.task t USING (task_id)
                     WHERE t.name = 'churn' ORDER BY 1 $$,
                  $$ SELECT * FROM before $$, 'same split and same batches after drop and create');
SELECT * FROM finish();
