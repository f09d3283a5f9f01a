-- bench/accuracy/shop_model.sql: headwater's model and tasks on the demo shop
-- (defaults; two columns that would show the future are made invisible):
--   orders.status: "returned" reveals returns dated after obs_time;
--   customers.first_order_id: an FK to the first order, a parent row that the
--     sampler shows even when it is dated after obs_time (a customer signed
--     up before a cutoff whose first order falls in the label window).
-- The FK is dropped in this benchmark copy (an ignored column keeps its edge).
ALTER TABLE shop.customers DROP CONSTRAINT IF EXISTS customers_first_order_id_fkey;
SELECT rt_create_model('acc_shop', 'shop', '{"column_types": {"orders.status": "ignored", "customers.first_order_id": "ignored"}}');
SELECT rt_create_task('acc_shop', 'shop_churn', query => $$
  SELECT customer_id, obs_time, label::int::boolean AS churned, split FROM acc.rows WHERE task = 'churn'
$$);
SELECT rt_create_task('acc_shop', 'shop_orders_30d', query => $$
  SELECT customer_id, obs_time, label AS orders, split FROM acc.rows WHERE task = 'orders_30d'
$$, options => :'num_task_options');
