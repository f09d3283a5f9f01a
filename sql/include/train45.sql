-- sql/include/train45.sql: one run of t_45_numeric_loss (psql variables
-- run, loss): model m45 from scratch, one training step, its step-1 loss.
SELECT rt_create_model('m45', 't45') IS NOT NULL AS created \gset
SELECT rt_create_task('m45', 'rating45', anchor_table => 'reviews', target_column => 'rating',
                      options => jsonb_build_object('loss', :'loss')) IS NOT NULL AS task \gset
SELECT rt_train('m45', steps => 1, preset => 'tiny',
                options => '{"val_every": 1000, "checkpoint_every": 1000, "log_every": 1, "seed": 45}') IS NOT NULL AS trained \gset
INSERT INTO loss45
SELECT :run, :'loss', l.loss FROM headwater.train_log l JOIN headwater.model m USING (model_id)
WHERE m.name = 'm45' AND l.split = 'train' AND l.step = 1;
SELECT rt_drop_model('m45') IS NOT NULL AS dropped \gset
