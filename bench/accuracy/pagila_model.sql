-- bench/accuracy/pagila_model.sql: headwater's model and tasks on pagila
-- (defaults; what would show the future is made invisible):
--   rental.return_date ignored (as bench/pagila_tasks.sh: a rental before
--     obs_time may be returned after it);
--   payment (and its partitions) moved out of the modelled schema: 79% of
--     pagila's payments are dated more than 30 days before their rental, so a
--     payment visible at obs_time would show its rental (an FK parent, shown
--     whatever its time) from after obs_time: the future rentals the labels
--     count.  The GBDT does not use payments either.
DO $$
DECLARE t regclass;
BEGIN
	FOR t IN SELECT c.oid::regclass FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	         WHERE n.nspname = 'public' AND c.relname ~ '^payment' AND c.relkind IN ('r', 'p')
	LOOP
		EXECUTE format('ALTER TABLE %s SET SCHEMA acc', t);
	END LOOP;
END $$;
SELECT rt_create_model('acc_pagila', 'public', '{"column_types": {"rental.return_date": "ignored"}}');
SELECT rt_create_task('acc_pagila', 'pagila_heavy_21d', query => $$
  SELECT customer_id, obs_time, label::int::boolean AS heavy, split FROM acc.rows WHERE task = 'heavy_21d'
$$);
SELECT rt_create_task('acc_pagila', 'pagila_rentals_21d', query => $$
  SELECT customer_id, obs_time, label AS rentals, split FROM acc.rows WHERE task = 'rentals_21d'
$$, options => :'num_task_options');
