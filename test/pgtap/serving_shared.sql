-- serving_shared: the model cache shared by all backends (serving_shared.c).
-- Two other sessions (dblink, each its own backend) serve the same task:
-- both map the one cache file; predictions through it are bit-identical to
-- a private load of the same checkpoint (headwater.serving_shared_cache
-- off); a new best checkpoint is seen by both live sessions at their next
-- call, through a new file, and the old checkpoint's file is removed;
-- rt_drop_model removes the model's files.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
CREATE EXTENSION IF NOT EXISTS dblink;
SET timezone = 'UTC';
SELECT plan(16);

SELECT lives_ok($$ SELECT rt_demo_shop('shop', 150, 7) $$, 'demo database');
SELECT lives_ok($$ SELECT rt_create_model('shop', 'shop') $$, 'model');
SELECT lives_ok($$ SELECT rt_create_task('shop', 'status', anchor_table => 'orders', target_column => 'status') $$,
                'cell task orders.status');
SELECT lives_ok($$ SELECT rt_train('shop', steps => 3, preset => 'tiny', options => '{"checkpoint_every": 1}') $$,
                'three training steps (tiny preset)');

CREATE TEMP TABLE ids AS
  SELECT (SELECT oid FROM pg_database WHERE datname = current_database()) AS db,
         (SELECT model_id FROM headwater.model WHERE name = 'shop') AS model;
-- this model's cache files: (checkpoint id, size)
CREATE FUNCTION pg_temp.cache_files() RETURNS TABLE (checkpoint bigint, bytes bigint) LANGUAGE sql AS $$
  SELECT substring(f FROM '_c([0-9]+)_')::bigint, (pg_stat_file('pg_headwater/serving/' || f)).size
  FROM pg_ls_dir('pg_headwater/serving', true, false) f
  WHERE f LIKE (SELECT format('v%%\_d%s\_m%s\_c%%.hwsc', db, model) FROM ids) $$;
-- predictions of 40 orders as one text (float8 output is exact)
CREATE FUNCTION pg_temp.preds(ck bigint DEFAULT NULL) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(row_id || ':' || prediction || ':' || label || ':' || p_null, ',' ORDER BY row_id::int)
  FROM rt_predict_batch('status', (SELECT array_agg(order_id) FROM (SELECT order_id FROM shop.orders ORDER BY order_id LIMIT 40) o),
                        checkpoint => ck) $$;
CREATE TEMP TABLE conn AS
  SELECT format('dbname=%s host=%s port=%s user=%s', current_database(),
                split_part(current_setting('unix_socket_directories'), ',', 1), current_setting('port'), current_user) AS s;
SELECT dblink_connect('a', (SELECT s FROM conn));
SELECT dblink_connect('b', (SELECT s FROM conn));
-- the same helper in the other sessions
SELECT dblink_exec(c, $$ CREATE FUNCTION pg_temp.preds() RETURNS text LANGUAGE sql AS 'SELECT string_agg(row_id || '':'' || prediction || '':'' || label || '':'' || p_null, '','' ORDER BY row_id::int) FROM rt_predict_batch(''status'', (SELECT array_agg(order_id) FROM (SELECT order_id FROM shop.orders ORDER BY order_id LIMIT 40) o))' $$)
FROM unnest(ARRAY['a', 'b']) c;

CREATE TEMP TABLE r (what text PRIMARY KEY, v text);
INSERT INTO r SELECT 'a1', v FROM dblink('a', 'SELECT pg_temp.preds()') AS t(v text);
SELECT is((SELECT count(*) FROM pg_temp.cache_files()), 1::bigint, 'the first prediction wrote one cache file');
INSERT INTO r SELECT 'b1', v FROM dblink('b', 'SELECT pg_temp.preds()') AS t(v text);
SELECT is((SELECT v FROM r WHERE what = 'b1'), (SELECT v FROM r WHERE what = 'a1'),
          'a second session predicts the same from the same file');
SELECT ok((SELECT count(*) = 1 FROM pg_temp.cache_files()), 'still one file: the second session mapped it');
CREATE TEMP TABLE ck1 AS SELECT checkpoint FROM pg_temp.cache_files();

SET headwater.serving_shared_cache = off;
SELECT is(pg_temp.preds(), (SELECT v FROM r WHERE what = 'a1'),
          'bit-identical to a private load of the same checkpoint (40 predictions, float8 exact)');
SELECT is(rt_predict_proba('status', 7)::text,
          (SELECT v FROM dblink('a', $$ SELECT rt_predict_proba('status', 7)::text $$) AS t(v text)),
          'rt_predict_proba identical too');
RESET headwater.serving_shared_cache;

-- a new training run: its best checkpoint is what the task is served from now
SELECT lives_ok($$ SELECT rt_train('shop', steps => 5, preset => 'tiny', options => '{"restart": true, "checkpoint_every": 1}') $$,
                'a restarted run writes new checkpoints');
INSERT INTO r SELECT 'a2', v FROM dblink('a', 'SELECT pg_temp.preds()') AS t(v text);
INSERT INTO r SELECT 'b2', v FROM dblink('b', 'SELECT pg_temp.preds()') AS t(v text);
SET headwater.serving_shared_cache = off;
INSERT INTO r VALUES ('private2', pg_temp.preds());
RESET headwater.serving_shared_cache;
SELECT isnt((SELECT v FROM r WHERE what = 'a2'), (SELECT v FROM r WHERE what = 'a1'),
            'the live session a predicts differently after the new checkpoint');
SELECT is((SELECT v FROM r WHERE what = 'a2'), (SELECT v FROM r WHERE what = 'private2'),
          'session a serves the new best checkpoint (= a private load of it)');
SELECT is((SELECT v FROM r WHERE what = 'b2'), (SELECT v FROM r WHERE what = 'private2'),
          'session b serves the new best checkpoint too');
SELECT ok((SELECT count(*) = 1 AND bool_and(checkpoint NOT IN (SELECT checkpoint FROM ck1)) FROM pg_temp.cache_files()),
          'one file, of the new checkpoint: the old checkpoint''s file was removed');

SELECT dblink_disconnect('a');
SELECT dblink_disconnect('b');
SELECT lives_ok($$ SELECT rt_drop_model('shop') $$, 'drop the model');
SELECT is((SELECT count(*) FROM pg_temp.cache_files()), 0::bigint, 'rt_drop_model removed its cache files');

SELECT * FROM finish();
