-- bench/accuracy/shop_features.sql: the GBDT's hand-written features for each
-- row of acc.rows (demo shop), strictly from rows dated before obs_time.
-- orders.status is not used (a "returned" status reveals returns after
-- obs_time); returns count by returned_at, reviews by created_at.
-- Output: CSV on stdout, one line per acc.rows row.
CREATE TEMP TABLE ord AS
SELECT o.order_id, o.customer_id, o.ordered_at, o.is_gift, o.coupon_code IS NOT NULL AS coupon,
       (SELECT sum(i.quantity * i.unit_price) FROM shop.order_items i WHERE i.order_id = o.order_id) AS amount,
       (SELECT count(*) FROM shop.order_items i WHERE i.order_id = o.order_id) AS n_lines
FROM shop.orders o;
CREATE INDEX ON ord (customer_id, ordered_at);
CREATE TEMP TABLE ret AS
SELECT o.customer_id, r.returned_at, r.refund_amount FROM shop.returns r JOIN shop.orders o USING (order_id);
CREATE INDEX ON ret (customer_id, returned_at);
CREATE INDEX ON shop.reviews (customer_id, created_at);
\copy (SELECT a.task, a.customer_id, a.split, a.label, f.* FROM acc.rows a CROSS JOIN LATERAL (SELECT (c.segment = 'consumer')::int AS seg_consumer, (c.segment = 'business')::int AS seg_business, (c.segment = 'vip')::int AS seg_vip, c.newsletter::int AS newsletter, (c.referred_by IS NOT NULL)::int AS referred, extract(epoch FROM a.obs_time - c.signup_at) / 86400 AS days_since_signup, o.* , rt.*, rv.* FROM shop.customers c, LATERAL (SELECT count(*) AS n_orders, count(*) FILTER (WHERE ordered_at >= a.obs_time - interval '7 days') AS n_orders_7d, count(*) FILTER (WHERE ordered_at >= a.obs_time - interval '30 days') AS n_orders_30d, count(*) FILTER (WHERE ordered_at >= a.obs_time - interval '90 days') AS n_orders_90d, extract(epoch FROM a.obs_time - max(ordered_at)) / 86400 AS days_since_last_order, extract(epoch FROM a.obs_time - min(ordered_at)) / 86400 AS days_since_first_order, coalesce(sum(amount), 0) AS total_amount, avg(amount) AS mean_amount, coalesce(sum(amount) FILTER (WHERE ordered_at >= a.obs_time - interval '90 days'), 0) AS amount_90d, avg(n_lines) AS mean_lines, count(*) FILTER (WHERE is_gift) AS n_gift, count(*) FILTER (WHERE coupon) AS n_coupon FROM ord WHERE ord.customer_id = a.customer_id AND ordered_at < a.obs_time) o, LATERAL (SELECT count(*) AS n_returns, count(*) FILTER (WHERE returned_at >= a.obs_time - interval '30 days') AS n_returns_30d, count(*) FILTER (WHERE returned_at >= a.obs_time - interval '90 days') AS n_returns_90d, extract(epoch FROM a.obs_time - max(returned_at)) / 86400 AS days_since_last_return, coalesce(sum(refund_amount), 0) AS total_refund FROM ret WHERE ret.customer_id = a.customer_id AND returned_at < a.obs_time) rt, LATERAL (SELECT count(*) AS n_reviews, avg(rating) AS mean_rating, min(rating) AS min_rating, avg(rating) FILTER (WHERE created_at >= a.obs_time - interval '90 days') AS mean_rating_90d, count(*) FILTER (WHERE rating <= 2) AS n_low_ratings, extract(epoch FROM a.obs_time - max(created_at)) / 86400 AS days_since_last_review FROM shop.reviews rv WHERE rv.customer_id = a.customer_id AND created_at < a.obs_time) rv WHERE c.customer_id = a.customer_id) f ORDER BY a.task, a.obs_time, a.customer_id) TO STDOUT WITH (FORMAT csv, HEADER)
