-- test/security/sweep.sql: the bad-input sweep (run by test/security.sh as a
-- non-superuser that owns model 'shop' with the trained task 'order_status').
--
-- Every function of the extension (found in pg_depend, so a new function is
-- swept without editing this file) is called once per (argument, bad value):
-- that argument takes a bad value of its type (NULL, empty, huge, absurd,
-- the wrong kind), the others a good value.  This file prints a psql script
-- (test/security.sh runs it) in which each call is its own top-level
-- statement, so statement_timeout bounds it, inside a transaction rolled
-- back even when it succeeds; psql's :SQLSTATE is recorded after each call.
-- A call is GOOD when it returns or raises an error whose SQLSTATE is
-- outside class XX (internal error, data corrupted); a crash ends the
-- session before "sweep finished".
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE TEMP TABLE sweep_good (fn text, arg text, val text);   -- fn NULL: any function
INSERT INTO sweep_good VALUES
	(NULL, 'model', $$'shop'$$), (NULL, 'name', $$'sweep_model'$$), (NULL, 'source_schema', $$'shop'$$),
	(NULL, 'options', $${}$$::text), (NULL, 'table_name', $$'orders'$$), (NULL, 'column_name', $$'status'$$),
	(NULL, 'stype', $$'categorical'$$), (NULL, 'key', $$'1'$$), (NULL, 'role', $$'hw_reader'$$),
	(NULL, 'schema', $$'sweep_shop'$$), (NULL, 'scale', '20'), (NULL, 'seed', '1'), (NULL, 'k', '1'),
	(NULL, 'salt', '1'), (NULL, 'first_id', '1'), (NULL, 'nprod', '5'),
	(NULL, 'task', $$'order_status'$$), ('rt_create_task', 'task', $$'sweep_task'$$),
	(NULL, 'query', 'NULL::text'), (NULL, 'anchor_table', $$'orders'$$), (NULL, 'target_column', $$'total'$$),
	(NULL, 'target_stype', 'NULL::text'), (NULL, 'observation_time_column', 'NULL::text'),
	(NULL, 'split', $$'test'$$), ('rt_sample_batches', 'split', $$'train'$$), (NULL, 'n', '1'),
	(NULL, 'batch_size', '2'), (NULL, 'seq_len', '32'), (NULL, 'batch_id', '1'), (NULL, 'b', '0'),
	(NULL, 'checkpoint', 'NULL::bigint'), (NULL, 'steps', '6'), (NULL, 'tasks', 'NULL::text[]'),
	(NULL, 'preset', $$'tiny'$$), (NULL, 'device', $$'cpu'$$), (NULL, 'wait', 'true'), (NULL, 'job', '1'),
	(NULL, 'row_id', '1'), (NULL, 'row_ids', 'ARRAY[1, 2]'), (NULL, 'obs_time', 'NULL::timestamptz');
UPDATE sweep_good SET val = $$'{"val_every": 1000}'::jsonb$$ WHERE arg = 'options';

CREATE TEMP TABLE sweep_bad (typ text, val text);
INSERT INTO sweep_bad VALUES
	('text', 'NULL::text'), ('text', $$''$$), ('text', $$repeat('x', 10000)$$), ('text', $$'a''b"c\'$$),
	('integer', 'NULL::int'), ('integer', '-1'), ('integer', '0'), ('integer', '2147483647'),
	('bigint', 'NULL::bigint'), ('bigint', '-1'), ('bigint', '9223372036854775807'),
	('jsonb', 'NULL::jsonb'), ('jsonb', $$'[]'::jsonb$$), ('jsonb', $$'"str"'::jsonb$$),
	('jsonb', $${"bogus": 1}$$::text), ('jsonb', $$'{"threads": 100000, "lr": -1}'::jsonb$$),
	('text[]', 'NULL::text[]'), ('text[]', $$'{}'::text[]$$), ('text[]', 'ARRAY[NULL]::text[]'),
	('text[]', $$ARRAY['nosuch']$$),
	('timestamp with time zone', 'NULL::timestamptz'), ('timestamp with time zone', $$'infinity'::timestamptz$$),
	('timestamp with time zone', $$'-infinity'::timestamptz$$),
	('timestamp with time zone', $$'294000-01-01'::timestamptz$$),
	('boolean', 'NULL::bool'),
	('anyelement', 'NULL::int'), ('anyelement', 'NULL::text'), ('anyelement', 'NULL::varchar'),
	('anyelement', $$'zzz'::text$$), ('anyelement', 'ROW(1, 2)'), ('anyelement', 'ARRAY[1, 2, 3]'),
	('anyelement', '1e300::float8'), ('anyelement', '-1'),
	('anyarray', 'NULL::int[]'), ('anyarray', $$'{}'::int[]$$), ('anyarray', 'ARRAY[NULL]::int[]'),
	('anyarray', 'ARRAY[[1, 2], [3, 4]]'), ('anyarray', $$ARRAY['x', NULL]$$);
-- a jsonb literal written as text above: cast it
UPDATE sweep_bad SET val = quote_literal(val) || '::jsonb' WHERE typ = 'jsonb' AND val LIKE '{%';

-- the calls, in a stable order
CREATE TEMP TABLE sweep_call (n serial, call text);
DO $gen$
DECLARE
	f record;
	args text[];
	bad record;
BEGIN
	FOR f IN
		SELECT p.proname, n.nspname, p.proargnames AS names,
		       ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t) AS types
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
		JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'headwater'
		WHERE p.pronargs > 0
		ORDER BY p.proname, p.oid
	LOOP
		FOR i IN 1 .. array_length(f.types, 1) LOOP
			FOR bad IN SELECT val FROM sweep_bad WHERE typ = f.types[i] ORDER BY val LOOP
				args := ARRAY[]::text[];
				FOR j IN 1 .. array_length(f.types, 1) LOOP
					args := args || format('%I => %s', f.names[j],
						CASE WHEN j = i THEN bad.val
						ELSE coalesce((SELECT g.val FROM sweep_good g
						               WHERE g.arg = f.names[j] AND (g.fn IS NULL OR g.fn = f.proname)
						               ORDER BY g.fn IS NULL LIMIT 1),   -- the function's own first
						              format('NULL::%s', f.types[j])) END);
				END LOOP;
				INSERT INTO sweep_call (call) VALUES
					(format('SELECT count(*) FROM %I.%I(%s)', f.nspname, f.proname, array_to_string(args, ', ')));
			END LOOP;
		END LOOP;
	END LOOP;
END
$gen$;

-- the script: preamble, one block per call, the report
SELECT $pre$\set ON_ERROR_STOP 0
\set QUIET 1
SET client_min_messages = error;
SET statement_timeout = '10s';
CREATE TEMP TABLE sweep_result (n int, call text, sqlstate text, message text);
$pre$;
SELECT format(E'BEGIN;\n%s;\n\\set st :SQLSTATE\n\\set msg :LAST_ERROR_MESSAGE\nROLLBACK;\n'
              || E'INSERT INTO sweep_result VALUES (%s, %L, :''st'', '
              || E'CASE WHEN :''st'' = ''00000'' THEN ''returned'' ELSE :''msg'' END);\n'
              -- a call that started a job in the background: let it end (at most 10 s)
              || E'DO $w$ BEGIN FOR i IN 1 .. 50 LOOP EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity '
              || E'WHERE backend_type = ''headwater training''); PERFORM pg_sleep(0.2); END LOOP; END $w$;\n',
              call, n, call)
FROM sweep_call ORDER BY n;
SELECT $post$\set QUIET 0
\pset tuples_only on
\pset format unaligned
SELECT format('# %s calls, %s functions; by SQLSTATE: %s', count(*),
              count(DISTINCT split_part(split_part(call, ' FROM ', 2), '(', 1)),
              (SELECT string_agg(s || ' x' || c, ', ' ORDER BY c DESC, s)
               FROM (SELECT sqlstate s, count(*) c FROM sweep_result GROUP BY 1) z))
FROM sweep_result;
SELECT CASE WHEN sqlstate LIKE 'XX%' THEN 'BAD' ELSE 'GOOD' END || ' ' || sqlstate || ' ' || call
       || ' -- ' || left(message, 200)
FROM sweep_result ORDER BY 1, n;
-- per function: how its calls ended
SELECT format('#   %s: %s', f, string_agg(s || ' x' || c, ', ' ORDER BY c DESC, s))
FROM (SELECT split_part(split_part(call, ' FROM ', 2), '(', 1) f, sqlstate s, count(*) c
      FROM sweep_result GROUP BY 1, 2) z GROUP BY f ORDER BY f;
SELECT 'sweep finished';
$post$;
