-- t_21_batches: rt_sample_batches on a tiny hand-written schema; the exact
-- sequence a person reads with rt_batch_sequence, and the tensors behind it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
RESET client_min_messages;
SET timezone = 'UTC';
CREATE SCHEMA bt;
SET search_path = bt, public;
CREATE TABLE customer (id int PRIMARY KEY, age float8);
CREATE TABLE orders (
	oid    int PRIMARY KEY,
	cust   int NOT NULL REFERENCES customer,
	at     timestamptz NOT NULL,
	amount float8
);
INSERT INTO customer VALUES (1, 30), (2, 40);
INSERT INTO orders VALUES
	(10, 1, '2024-01-10', 10), (11, 1, '2024-01-20', 20),
	(12, 1, '2024-01-30', 30), (13, 2, '2024-01-05', NULL);
SELECT rt_create_model('bt', 'bt') IS NOT NULL AS model_ok;
SELECT table_name, column_name, semantic_type FROM rt_describe('bt') ORDER BY 1, 2;

-- cell task: predict orders.amount; all seeds in train so the batch is known
SELECT rt_create_task('bt', 'bt_amount', anchor_table => 'orders', target_column => 'amount',
                      options => '{"split_ratios": [1, 0, 0]}') ->> 'seeds' AS seeds;
CREATE TEMP TABLE ids AS SELECT * FROM rt_sample_batches('bt', 'bt_amount', n => 1, batch_size => 4, seq_len => 16);
SELECT count(*) AS batches FROM ids;
-- sequence 0 and 1, cell by cell: the seed row first (its amount masked but
-- carrying the truth), then its customer (a parent), then the customer's
-- other orders up to the seed's time (children after it are never shown)
SELECT s.* FROM ids, rt_batch_sequence(ids.rt_sample_batches, 0) s;
SELECT s.* FROM ids, rt_batch_sequence(ids.rt_sample_batches, 1) s WHERE NOT is_padding;
SELECT t.shape, t.dtype, t."values" FROM ids, rt_batch_tensor(ids.rt_sample_batches, 'fk_adj') t;
SELECT name, t.shape, t.dtype, t."values"[1:16] AS sequence_0, t."values"[17:32] AS sequence_1
FROM ids, unnest(ARRAY['col_perm', 'out_perm', 'in_perm', 'column_ids', 'seq_row_ids', 'is_target']) name,
     rt_batch_tensor(ids.rt_sample_batches, name) t;
SELECT name, t."values" FROM ids, unnest(ARRAY['target_stype', 'task_idx', 'cat_emb_start', 'cat_emb_count']) name,
     rt_batch_tensor(ids.rt_sample_batches, name) t;

-- query task with an observation time and label history: the virtual task
-- row first, then the anchor, then earlier labels of the same customer and
-- its orders up to the observation time, newest first
SELECT rt_create_task('bt', 'bt_spend', $$
	SELECT c.id, d AS observation_time,
	       (SELECT coalesce(sum(o.amount), 0) FROM orders o WHERE o.cust = c.id AND o.at >= d AND o.at < d + interval '10 days') AS spend
	FROM customer c, (VALUES (timestamptz '2024-01-15'), ('2024-01-25')) v(d) $$,
	anchor_table => 'customer', options => '{"split_ratios": [1, 0, 0]}') ->> 'seeds' AS seeds;
CREATE TEMP TABLE ids2 AS SELECT * FROM rt_sample_batches('bt', 'bt_spend', n => 2, batch_size => 4, seq_len => 12, seed => 3);
SELECT b, s.* FROM ids2, generate_series(0, 3) b, rt_batch_sequence(ids2.rt_sample_batches, b) s
WHERE ids2.rt_sample_batches = (SELECT min(rt_sample_batches) FROM ids2) AND NOT s.is_padding
ORDER BY b, s.position;

-- key cells: by default the key columns (customer.id, orders.oid, orders.cust)
-- emit no cells, their information is the rows and fk_adj; key_cells keeps them
CREATE TEMP TABLE ids3 AS SELECT * FROM rt_sample_batches('bt', 'bt_amount', n => 1, batch_size => 4, seq_len => 16,
                                                          options => '{"key_cells": true}');
SELECT s.* FROM ids3, rt_batch_sequence(ids3.rt_sample_batches, 1) s WHERE NOT is_padding;
-- recent children: with room for one order per customer, the customer of
-- the seed (customer 1, observed 2024-01-25) shows its most recent visible
-- order (11, 2024-01-20; 12 is after the observation time)
CREATE TEMP TABLE ids4 AS SELECT * FROM rt_sample_batches('bt', 'bt_spend', n => 1, batch_size => 4, seq_len => 12, seed => 3,
                                                          options => '{"child_width": 1}');
SELECT b, s.* FROM ids4, generate_series(0, 3) b, rt_batch_sequence(ids4.rt_sample_batches, b) s
WHERE NOT s.is_padding AND s.table_name = 'orders' ORDER BY b, s.position;

-- errors
SELECT * FROM rt_sample_batches('bt', 'bt_amount', options => '{"nosuch": 1}');
SELECT * FROM rt_sample_batches('bt', 'bt_amount', options => '{"child_sampling": "newest"}');
SELECT * FROM rt_sample_batches('bt', 'bt_amount', options => '{"recent_children": 20}');
-- the sampler options have rt_train's ranges (the settings table)
SELECT * FROM rt_sample_batches('bt', 'bt_amount', options => '{"child_width": 65}');
SELECT * FROM rt_sample_batches('bt', 'bt_amount', options => '{"max_rows": "5"}');
SELECT * FROM rt_sample_batches('bt', 'bt_amount', options => '[]');
SELECT * FROM rt_sample_batches('bt', 'bt_amount', 'val');
SELECT * FROM rt_sample_batches('bt', 'bt_amount', 'nosplit');
SELECT * FROM rt_sample_batches('bt', 'nosuch');
SELECT * FROM rt_batch_sequence(-1, 0);
SELECT * FROM ids, rt_batch_sequence(ids.rt_sample_batches, 9);
SELECT * FROM ids, rt_batch_tensor(ids.rt_sample_batches, 'nosuch');
-- dropping the task drops its batches
SELECT rt_drop_task('bt', 'bt_amount');
SELECT count(*) AS batches_left FROM ids, rt_batch_tensor(ids.rt_sample_batches, 'fk_adj');
