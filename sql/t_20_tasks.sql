-- t_20_tasks: rt_create_task on a tiny hand-written schema: cell and query
-- tasks, the summary, rt_tasks, and every error a user can make.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
RESET client_min_messages;
SET timezone = 'UTC';
CREATE SCHEMA tk;
SET search_path = tk, public;
CREATE TABLE customer (
	id      int PRIMARY KEY,
	segment text,
	age     float8
);
CREATE TABLE orders (
	oid      int PRIMARY KEY,
	cust     int REFERENCES customer,
	at       timestamptz,
	amount   float8,
	returned bool
);
INSERT INTO customer VALUES (1, 'gold', 30), (2, 'silver', 40), (3, 'gold', 50), (4, NULL, 60);
INSERT INTO orders VALUES
	(10, 1, '2024-01-10', 10, false), (11, 1, '2024-01-20', 20, true),
	(12, 1, '2024-01-30', 30, false), (13, 2, '2024-01-05', 40, NULL),
	(14, 3, '2024-02-01', 50, false);
SELECT rt_create_model('tk', 'tk', '{"column_types": {"customer": {"segment": "categorical"}}}') IS NOT NULL AS model_ok;

-- a cell task: predict orders.amount (numerical, the column's own stats)
SELECT rt_create_task('tk', 'tk_amount', anchor_table => 'orders', target_column => 'amount');
-- a cell task on a categorical column, split options
SELECT rt_create_task('tk', 'tk_segment', anchor_table => 'customer', target_column => 'segment',
                      options => '{"split_ratios": [0.5, 0.25, 0.25], "split_seed": 7}') ->> 'categories' AS k;
-- a query task with an observation time, a boolean target
SELECT rt_create_task('tk', 'tk_returns', query => $$
	SELECT o.cust AS id, o.at AS observation_time, o.returned FROM orders o WHERE o.returned IS NOT NULL $$,
	anchor_table => 'customer');
-- a query task with a text target: its own category block; no time column
SELECT rt_create_task('tk', 'tk_seg_q', $$ SELECT id, coalesce(segment, 'none') AS seg FROM customer; $$,
                      anchor_table => 'customer') - 'splits' AS summary;
-- numeric query target: z-score stats over the train split only
SELECT (s ->> 'seeds')::int AS seeds, (s ->> 'target_stype') AS stype, (s -> 'target_mean') IS NOT NULL AS has_mean
FROM rt_create_task('tk', 'tk_spend', $$ SELECT cust AS id, sum(amount) AS total FROM orders GROUP BY cust $$,
                    anchor_table => 'customer', target_stype => 'numerical') AS s;
-- the anchor inferred from the key the query returns; obs_time as a column name
SELECT rt_create_task('tk', 'tk_late', $$ SELECT oid, at AS obs_time, at > '2024-01-15' AS late FROM orders $$)
       ->> 'anchor_table' AS inferred_anchor;
SELECT task, kind, anchor_table, target, target_stype, observation_time, n_seeds,
       n_train + n_val + n_test = n_seeds AS splits_add_up, null_targets, n_categories, label_history
FROM rt_tasks('tk');

-- errors: nothing half-made after each
SELECT rt_create_task('nope', 'x', anchor_table => 'orders', target_column => 'amount');
SELECT rt_create_task('tk', 'tk_amount', anchor_table => 'orders', target_column => 'amount');
SELECT rt_create_task('tk', 'bad1', $$ SELEC 1 $$, anchor_table => 'customer');
SELECT rt_create_task('tk', 'bad2', $$ SELECT 1 / 0 AS id, 1 AS y $$, anchor_table => 'customer');
SELECT rt_create_task('tk', 'bad3', $$ SELECT age, segment FROM customer $$, anchor_table => 'customer');
SELECT rt_create_task('tk', 'bad4', $$ SELECT id, age, segment FROM customer $$, anchor_table => 'customer');
SELECT rt_create_task('tk', 'bad5', $$ SELECT id, age, segment FROM customer $$, anchor_table => 'customer',
                      target_column => 'age');
SELECT rt_create_task('tk', 'bad6', $$ SELECT NULL::int AS id, 1.0 AS y UNION ALL SELECT 1, 2.0 $$,
                      anchor_table => 'customer');
SELECT rt_create_task('tk', 'bad7', $$ SELECT g AS id, 1.0 AS y FROM generate_series(1, 12) g $$,
                      anchor_table => 'customer');
SELECT rt_create_task('tk', 'bad8', $$ SELECT id, segment FROM customer $$, anchor_table => 'customer',
                      target_stype => 'numerical');
SELECT rt_create_task('tk', 'bad9', anchor_table => 'orders', target_column => 'amount', target_stype => 'categorical');
SELECT rt_create_task('tk', 'bad10', anchor_table => 'orders', target_column => 'oid');
SELECT rt_create_task('tk', 'bad11', anchor_table => 'orders');
SELECT rt_create_task('tk', 'bad12', $$ SELECT 1 AS x, 2.0 AS y $$);
SELECT rt_create_task('tk', 'bad13', $$ SELECT id, age FROM customer WHERE false $$, anchor_table => 'customer');
SELECT rt_create_task('tk', 'bad14', anchor_table => 'nosuch', target_column => 'x');
SELECT rt_create_task('tk', 'bad15', anchor_table => 'orders', target_column => 'amount', options => '{"colour": 1}');
SELECT rt_create_task('tk', 'bad16', anchor_table => 'orders', target_column => 'amount',
                      options => '{"split_ratios": [0.5, 0.5, 0.5]}');
SELECT rt_create_task('tk', 'bad17', $$ SELECT id, age, now() AS t FROM customer $$, anchor_table => 'customer',
                      target_column => 'age', observation_time_column => 'nosuch');
-- the loss of a numerical target: "mae" by default (above), "huber" on request,
-- stored with the task; anything else, or a loss on a boolean target, is refused
SELECT s ->> 'loss' AS loss FROM rt_create_task('tk', 'tk_spend_huber',
	$$ SELECT cust AS id, sum(amount) AS total FROM orders GROUP BY cust $$, anchor_table => 'customer',
	options => '{"loss": "huber"}') AS s;
SELECT options ->> 'loss' AS stored_loss FROM headwater.task WHERE name = 'tk_spend_huber';
SELECT rt_create_task('tk', 'bad18', anchor_table => 'orders', target_column => 'amount', options => '{"loss": "l3"}');
SELECT rt_create_task('tk', 'bad19', anchor_table => 'orders', target_column => 'amount', options => '{"loss": 1}');
SELECT rt_create_task('tk', 'bad20', $$ SELECT oid, at AS obs_time, at > '2024-01-15' AS late FROM orders $$,
                      options => '{"loss": "mae"}');
SELECT rt_drop_task('tk', 'tk_spend_huber');
SELECT count(*) AS tasks_after_errors FROM rt_tasks('tk');

SELECT rt_drop_task('tk', 'tk_spend');
SELECT rt_drop_task('tk', 'tk_spend');
SELECT task FROM rt_tasks('tk');
