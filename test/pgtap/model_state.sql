-- model_state: the SQL inspection surface of a trained model (model engineer):
-- rt_model_params lists the parameter table of model.h with the stored
-- values; rt_debug_tape writes one forward/backward's tape, rt_tape reads it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
SET timezone = 'UTC';
SELECT plan(16);

SELECT lives_ok($$ SELECT rt_demo_shop('shop', 100, 7) $$, 'demo database');
SELECT lives_ok($$ SELECT rt_create_model('shop', 'shop') $$, 'model');
SELECT lives_ok($$ SELECT rt_create_task('shop', 'status', anchor_table => 'orders', target_column => 'status') $$,
                'cell task orders.status');
SELECT lives_ok($$ SELECT rt_train('shop', steps => 3, preset => 'tiny') $$, 'three training steps (tiny preset)');

CREATE TEMP TABLE p AS SELECT * FROM rt_model_params('status');

-- tiny: 15 encoder tensors + 2 layers x (3 sublayers x 7 + 4 FFN) + final norm + 10 head tensors
-- + the relative-time, link-code and child-count weights (rel_time, link_types,
-- child_counts: on by default; count_ramps, off, would add enc.cramp.w: t_49)
-- and the ordinal head, last
SELECT is((SELECT count(*) FROM p), 81::bigint, 'tiny has 81 parameter tensors');
SELECT is((SELECT shape FROM p WHERE name = 'head.ord.w'), '{16,64}'::int[], 'ordinal head weights [16, D]');
SELECT is((SELECT shape FROM p WHERE name = 'enc.ts_rel.w'), '{64,20}'::int[], 'relative-time weights [D, 20]');
SELECT is((SELECT shape FROM p WHERE name = 'enc.link.w'), '{64,32}'::int[], 'link-code weights [D, 32]');
SELECT is((SELECT shape FROM p WHERE name = 'enc.cnt.w'), '{64,384}'::int[], 'child-count weights [D, 32 x 12]');
SELECT is((SELECT shape FROM p WHERE name = 'layer1.col.tau'), '{4}'::int[], 'per-head tau of 4 heads');
SELECT is((SELECT optimizer || '/' || weight_decay FROM p WHERE name = 'layer0.ffn.w2'), 'muon/true',
          '2-D hidden matrix: Muon with weight decay');
SELECT is((SELECT optimizer || '/' || weight_decay FROM p WHERE name = 'enc.null_emb'), 'adamw/false',
          'embedding vector: AdamW without decay');
SELECT ok((SELECT bool_and(length(data) = 4 * numel AND numel = (SELECT coalesce(exp(sum(ln(s))), 0)::bigint FROM unnest(shape) s))
           FROM p), 'data holds numel float32 values of the stated shape');
SELECT ok((SELECT rms > 0 AND rms < 10 FROM p WHERE name = 'layer0.out.wq'), 'trained weights have a sane RMS');

SELECT ok(rt_debug_tape('status') > 0, 'rt_debug_tape records ops');
SELECT is((SELECT count(*) FROM rt_tape('status') WHERE op = 'attention'), 6::bigint,
          'the tape has one attention op per sublayer (2 layers x 3)');

SELECT * FROM finish();
