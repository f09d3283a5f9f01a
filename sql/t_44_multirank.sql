-- t_44_multirank: data-parallel training on the CPU backend
-- (docs/distributed.md).  Two ranks (threads, one model replica each, the
-- in-process collective) and one rank accumulating two micro-batches train
-- the tiny preset to BIT-IDENTICAL parameters (the raw float32 bytes of
-- rt_model_params) and the same losses at every step; one rank without
-- accumulation does not (the check has teeth).  A rank that times out
-- fails the job naming it; headwater.rendezvous holds the ranks; the options
-- are checked at call time (hosts, for training across machines, is planned:
-- an unknown option).
\set VERBOSITY default
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SELECT rt_demo_shop('t44', 200) IS NOT NULL AS demo;
SELECT rt_create_model('m44', 't44') IS NOT NULL AS created;
SELECT (rt_create_task('m44', 'gift44', anchor_table => 'orders', target_column => 'is_gift') ->> 'seeds')::int > 0 AS task;
-- one model trained three times from scratch (the sampler keys a task's
-- batches by its name: one task, so the runs see the same seeds); after
-- each run, the md5 of its final checkpoint's raw parameters
CREATE TEMP TABLE r44 (m text, r jsonb, params text);
CREATE FUNCTION pg_temp.run44(label text, opts text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE res jsonb;
BEGIN
	res := rt_train('m44', steps => 6, preset => 'tiny',
	                options => ('{"batch_size": 4, "seq_len": 48, "val_every": 3, "checkpoint_every": 1000, '
	                            '"val_batches": 1, "val_rows": 16, "log_every": 1, "warmup_steps": 2, "seed": 44, '
	                            '"check_every": 2, "threads": 2, "restart": true, ' || opts || '}')::jsonb);
	INSERT INTO r44
	SELECT label, res, md5(string_agg(p.data, ''::bytea ORDER BY p.name))
	FROM rt_model_params('gift44', (res ->> 'checkpoint_id')::bigint) p;
END $$;
SELECT pg_temp.run44('ranks2', '"ranks": 2'), pg_temp.run44('accum2', '"grad_accum": 2'),
       pg_temp.run44('single', '"ranks": 1');
RESET client_min_messages;

\i sql/include/err.sql

-- 1. all three ran; the layouts are reported
SELECT m, r ->> 'state' AS state, r ->> 'steps_done' AS steps, r ->> 'ranks' AS ranks,
       r ->> 'grad_accum' AS grad_accum, r ? 'param_checksum' AS checked
FROM r44 ORDER BY m;

-- 2. two ranks == one rank with two micro-batches, bit for bit: parameters
--    of the final checkpoints, the ranks' checksums, every logged loss
SELECT (SELECT params FROM r44 WHERE m = 'ranks2') = (SELECT params FROM r44 WHERE m = 'accum2') AS ranks_equal_accum,
       (SELECT params FROM r44 WHERE m = 'ranks2') <> (SELECT params FROM r44 WHERE m = 'single') AS differs_from_one_batch,
       (SELECT r ->> 'param_checksum' FROM r44 WHERE m = 'ranks2')
         = (SELECT r ->> 'param_checksum' FROM r44 WHERE m = 'accum2') AS checksums_equal;
CREATE TEMP VIEW l44 AS
SELECT r.m, l.step, l.split, l.task, l.loss, l.grad_norm, l.metrics
FROM headwater.train_log l JOIN r44 r ON l.job_id = (r.r ->> 'job_id')::bigint;
SELECT count(*) AS rows_compared,
       bool_and(a.loss = b.loss AND a.grad_norm IS NOT DISTINCT FROM b.grad_norm
                AND a.metrics IS NOT DISTINCT FROM b.metrics) AS same_losses
FROM l44 a JOIN l44 b ON a.step = b.step AND a.split = b.split AND a.task IS NOT DISTINCT FROM b.task
                     AND a.metrics ->> 'weights' IS NOT DISTINCT FROM b.metrics ->> 'weights'
                     AND a.m = 'ranks2' AND b.m = 'accum2';
-- the single-batch run saw half the sequences: other losses
SELECT bool_or(a.loss <> b.loss) AS single_differs
FROM l44 a JOIN l44 b ON a.step = b.step AND a.split = b.split AND a.split = 'train' AND a.m = 'ranks2' AND b.m = 'single';

-- 3. a rank that does not arrive in time fails the job, naming it: the last
--    rank sleeps 3 s at the start of each step (headwater.debug_rank_stall_ms,
--    a superuser-only test hook), rank 0 waits 0.2 s for it at the first
--    all-reduce.  (A 1 us timeout without a late rank was not enough: on an
--    idle machine the two threads can meet within it at every collective.)
SET client_min_messages = warning;
SET headwater.debug_rank_stall_ms = 3000;
SELECT e.code AS sqlstate,
       regexp_replace(regexp_replace(regexp_replace(e.message, '(job|rank|step|rank\(s\)) [0-9]+', '\1 N', 'g'),
                                     'waited [0-9.e-]+ s', 'waited T s'),
                      'at the (all-reduce|checksum comparison) for', 'at a gradient exchange or check for')
         AS message
FROM pg_temp.err($$SELECT rt_train('m44', steps => 3, preset => 'tiny',
                   options => '{"batch_size": 4, "seq_len": 48, "ranks": 2, "rank_timeout": 0.2, "restart": true,
                                "threads": 2, "val_every": 1000, "checkpoint_every": 1000}')$$) e;
RESET headwater.debug_rank_stall_ms;
RESET client_min_messages;
SELECT j.state, j.error ~ 'rank 0 waited 0.2 s at the all-reduce for rank\(s\) 1, which did not arrive \(timeout\)' AS names_rank
FROM headwater.job j JOIN headwater.model m USING (model_id) WHERE m.name = 'm44' ORDER BY j.job_id DESC LIMIT 1;

-- 4. the ranks of a job in headwater.rendezvous: one row each for the
--    two-rank runs (state = the job's), none for one rank
SELECT r.m, count(z.*) AS rank_rows, string_agg(z.state || '/' || z.device, ',' ORDER BY z.rank) AS states,
       bool_and(z.unique_id IS NULL) AS no_nccl_id, count(DISTINCT z.host) <= 1 AS one_host
FROM r44 r LEFT JOIN headwater.rendezvous z ON z.job_id = (r.r ->> 'job_id')::bigint
GROUP BY r.m ORDER BY r.m;
SELECT string_agg(z.state, ',' ORDER BY z.rank) AS timed_out_job_ranks
FROM headwater.rendezvous z
WHERE z.job_id = (SELECT max(j.job_id) FROM headwater.job j JOIN headwater.model m USING (model_id) WHERE m.name = 'm44');

-- 5. checked at call time
SELECT o AS options, e.code AS sqlstate, e.message, e.hint
FROM (VALUES ('{"ranks": 0}'), ('{"ranks": 65}'), ('{"ranks": "2"}'), ('{"devices": "some"}'),
             ('{"devices": 0}'), ('{"ranks": 2, "devices": 2}'), ('{"grad_accum": 0}'),
             ('{"grad_accum": 2000}'), ('{"check_every": 0}'), ('{"rank_timeout": 0}'),
             ('{"hosts": ["db1"]}'), ('{"hosts": ["db1", "db2"]}')) v(o),
     LATERAL pg_temp.err(format('SELECT rt_train(%L, steps => 10, preset => %L, options => %L)',
                                'm44', 'tiny', o)) e;
