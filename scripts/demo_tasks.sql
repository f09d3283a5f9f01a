-- scripts/demo_tasks.sql: the demo's three tasks on model "shop" (included by
-- scripts/demo.sql; bench/gpu/pg_e2e.sh runs it too).
SELECT rt_create_task('shop', 'churn', query => $$
  SELECT c.customer_id,
         timestamptz '2024-10-01 00:00+00' AS obs_time,
         NOT EXISTS (SELECT 1 FROM shop.orders o
                     WHERE o.customer_id = c.customer_id
                       AND o.ordered_at >= timestamptz '2024-10-01 00:00+00'
                       AND o.ordered_at <  timestamptz '2024-10-01 00:00+00' + interval '60 days') AS churned
  FROM shop.customers c
$$);
SELECT rt_create_task('shop', 'rating', anchor_table => 'reviews', target_column => 'rating');
SELECT rt_create_task('shop', 'order_status', anchor_table => 'orders', target_column => 'status');
