-- bench/accuracy/shop_rows.sql: the demo shop tasks' rows (key, obs_time,
-- label, split) in acc.rows (outside the model's schema shop).
--   churn       boolean: no order in the 60 days after 2024-10-01 (the
--               planted rule of docs/demo_database.md: recent orders, recent
--               returns, low ratings, segment).  One cutoff, so the split is
--               by customer: customer_id % 10 = 8 val, = 9 test, else train.
--   orders_30d  numerical: orders in [cutoff, cutoff + 30 days), cutoffs
--               2024-05-01, 06-01, 07-01 train, 08-01 val, 09-01 test (all
--               before the churn cutoff; windows end by the next cutoff).
--               25% of customers "lapse" (orders only in the first half of
--               their window): recency decides.  Customers signed up after
--               a cutoff have no row there.  The test cutoff keeps the
--               customers with customer_id % 5 = 4 only (a fifth of the
--               customers: 4,000 rows at scale 20,000, 1,000 at 5,000; the
--               evaluation time of headwater on a shared 2-core machine).
-- Test-set size: at scale 20,000 (run.sh's default) churn
-- has 2,000 test customers and orders_30d 4,000 test rows, so a difference
-- with the GBDT of about 0.01 AUROC / 0.007 MAE is outside the 95% paired
-- interval; at 5,000 (500 / 1,000 rows) only about 0.02 / 0.014 is.
CREATE SCHEMA acc;
-- the labels below look up each customer's orders in a window: without this
-- index every lookup scans all orders (minutes at scale 20,000)
CREATE INDEX IF NOT EXISTS orders_customer_time ON shop.orders (customer_id, ordered_at);
CREATE TABLE acc.rows (task text, customer_id int, obs_time timestamptz, label float8, split text);
INSERT INTO acc.rows
SELECT 'churn', c.customer_id, timestamptz '2024-10-01 00:00+00',
       (NOT EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer_id = c.customer_id
                      AND o.ordered_at >= timestamptz '2024-10-01 00:00+00'
                      AND o.ordered_at <  timestamptz '2024-10-01 00:00+00' + interval '60 days'))::int,
       CASE c.customer_id % 10 WHEN 8 THEN 'val' WHEN 9 THEN 'test' ELSE 'train' END
FROM shop.customers c;
WITH cut(cutoff, split) AS (VALUES
	(timestamptz '2024-05-01 00:00+00', 'train'), ('2024-06-01 00:00+00', 'train'),
	('2024-07-01 00:00+00', 'train'), ('2024-08-01 00:00+00', 'val'), ('2024-09-01 00:00+00', 'test'))
INSERT INTO acc.rows
SELECT 'orders_30d', c.customer_id, cut.cutoff,
       (SELECT count(*) FROM shop.orders o WHERE o.customer_id = c.customer_id
          AND o.ordered_at >= cut.cutoff AND o.ordered_at < cut.cutoff + interval '30 days'),
       cut.split
FROM shop.customers c, cut
WHERE c.signup_at < cut.cutoff AND (cut.split <> 'test' OR c.customer_id % 5 = 4);
