-- t_12_catalog_demo: the demo shop database, its model, overrides and refresh.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
RESET client_min_messages;
SET timezone = 'UTC';
SELECT rt_demo_shop('cat_shop', 200);
-- deterministic: the same seed gives the same data, another seed other data
SELECT rt_demo_shop('cat_shop2', 200) IS NOT NULL AS made;
SELECT rt_demo_shop('cat_shop3', 200, 7) IS NOT NULL AS made;
SELECT (SELECT md5(string_agg(format('%s|%s|%s|%s', order_id, customer_id, ordered_at, status), ',' ORDER BY order_id)) FROM cat_shop.orders)
     = (SELECT md5(string_agg(format('%s|%s|%s|%s', order_id, customer_id, ordered_at, status), ',' ORDER BY order_id)) FROM cat_shop2.orders) AS same_seed_same_data,
       (SELECT md5(string_agg(format('%s|%s|%s|%s', order_id, customer_id, ordered_at, status), ',' ORDER BY order_id)) FROM cat_shop.orders)
     = (SELECT md5(string_agg(format('%s|%s|%s|%s', order_id, customer_id, ordered_at, status), ',' ORDER BY order_id)) FROM cat_shop3.orders) AS other_seed_same_data;
SET client_min_messages = warning;
DROP SCHEMA cat_shop2, cat_shop3 CASCADE;
RESET client_min_messages;

SELECT rt_create_model('cat_shop', 'cat_shop');
SELECT table_name, column_name, sql_type, semantic_type, is_time_column, null_count, n_rows, fk_target
FROM rt_describe('cat_shop');
SELECT child_table, child_columns, parent_table, parent_columns, n_edges FROM headwater.model_fk
WHERE model_id = (SELECT model_id FROM headwater.model WHERE name = 'cat_shop') ORDER BY fk_idx;

-- every FK edge of the snapshot equals the SQL join on the key columns
WITH o AS (SELECT order_id, customer_id, gift_recipient_id, row_number() OVER (ORDER BY order_id) - 1 AS r FROM cat_shop.orders),
     c AS (SELECT customer_id, row_number() OVER (ORDER BY customer_id) - 1 AS r FROM cat_shop.customers),
     ref AS (SELECT 'orders_customer_id_fkey' AS fk, o.r AS child_row, c.r AS parent_row FROM o JOIN c USING (customer_id)
             UNION ALL
             SELECT 'orders_gift_recipient_id_fkey', o.r, c.r FROM o JOIN c ON c.customer_id = o.gift_recipient_id),
     snap AS (SELECT fk_name AS fk, child_row, parent_row FROM rt_snapshot_edges('cat_shop')
              WHERE fk_name IN ('orders_customer_id_fkey', 'orders_gift_recipient_id_fkey'))
SELECT (SELECT count(*) FROM ref) AS ref_edges,
       (SELECT count(*) FROM (SELECT * FROM ref EXCEPT SELECT * FROM snap) d) AS missing,
       (SELECT count(*) FROM (SELECT * FROM snap EXCEPT SELECT * FROM ref) d) AS extra;
-- composite FK returns -> order_items
WITH i AS (SELECT order_id, line_no, row_number() OVER (ORDER BY order_id, line_no) - 1 AS r FROM cat_shop.order_items),
     rt AS (SELECT order_id, line_no, row_number() OVER (ORDER BY return_id) - 1 AS r FROM cat_shop.returns),
     ref AS (SELECT rt.r AS child_row, i.r AS parent_row FROM rt JOIN i USING (order_id, line_no)),
     snap AS (SELECT child_row, parent_row FROM rt_snapshot_edges('cat_shop') WHERE child_table = 'returns')
SELECT (SELECT count(*) FROM ref) AS ref_edges,
       (SELECT count(*) FROM (SELECT * FROM ref EXCEPT SELECT * FROM snap) d) AS missing,
       (SELECT count(*) FROM (SELECT * FROM snap EXCEPT SELECT * FROM ref) d) AS extra;

-- overrides: rating as categorical, then back; products given launched_on as time column (inference
-- leaves it out: products is an entity and launched_on not creation-like); all kept by rt_refresh
SELECT rt_set_column_type('cat_shop', 'reviews', 'rating', 'categorical') IS NOT NULL AS done;
SELECT column_name, semantic_type, stats FROM rt_describe('cat_shop') WHERE table_name = 'reviews' AND column_name = 'rating';
SELECT value, count FROM headwater.model_category
WHERE model_id = (SELECT model_id FROM headwater.model WHERE name = 'cat_shop') AND column_name = 'rating' ORDER BY cat_idx;
SELECT rt_set_time_column('cat_shop', 'products', 'launched_on') IS NOT NULL AS done;
SELECT rt_set_column_type('cat_shop', 'products', 'description', 'ignored') IS NOT NULL AS done;
SELECT rt_refresh('cat_shop') IS NOT NULL AS refreshed;
SELECT table_name, column_name, semantic_type, is_time_column FROM rt_describe('cat_shop')
WHERE (table_name, column_name) IN (('reviews', 'rating'), ('products', 'launched_on'), ('products', 'description'));
SELECT options FROM headwater.model WHERE name = 'cat_shop';
SELECT rt_set_column_type('cat_shop', 'reviews', 'rating', NULL) IS NOT NULL AS done;
SELECT column_name, semantic_type FROM rt_describe('cat_shop') WHERE table_name = 'reviews' AND column_name = 'rating';

-- without text embeddings: text columns are ignored
SELECT rt_create_model('cat_shop_notext', 'cat_shop', '{"embed_text": false}');
SELECT table_name, column_name, semantic_type FROM rt_describe('cat_shop_notext') WHERE semantic_type = 'ignored';

SELECT rt_drop_model('cat_shop'), rt_drop_model('cat_shop_notext');
SET client_min_messages = warning;
DROP SCHEMA cat_shop CASCADE;
RESET client_min_messages;
