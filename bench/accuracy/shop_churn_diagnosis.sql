-- bench/accuracy/shop_churn_diagnosis.sql: where a trained model of the
-- demo shop's churn task (task shop_churn of bench/accuracy/shop_model.sql,
-- trained in database acc_shop) departs from the planted rule: its mean
-- prediction on the val and test rows by the rule's parts, then, for
-- customers the rule calls safe (an order in the last 90 days, no vip, no
-- low ratings), by days since their last order (the rule's line is 90).
--   psql -d acc_shop -f bench/accuracy/shop_churn_diagnosis.sql
CREATE TEMP TABLE diag_pred AS
SELECT p.row_id::int AS customer_id, p.prediction
FROM rt_predict_batch('shop_churn',
                      (SELECT array_agg(customer_id ORDER BY customer_id) FROM acc.rows
                       WHERE task = 'churn' AND split IN ('val', 'test')),
                      timestamptz '2024-10-01 00:00+00') p;
CREATE TEMP TABLE diag AS
SELECT r.customer_id, r.label, r.split, p.prediction,
       (NOT EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer_id = r.customer_id
                      AND o.ordered_at < r.obs_time AND o.ordered_at >= r.obs_time - interval '90 days'))::int AS noord,
       (EXISTS (SELECT 1 FROM shop.orders o WHERE o.gift_recipient_id = r.customer_id
                  AND o.ordered_at < r.obs_time AND o.ordered_at >= r.obs_time - interval '90 days'))::int AS gift90,
       (EXISTS (SELECT 1 FROM shop.returns rt JOIN shop.orders o USING (order_id) WHERE o.customer_id = r.customer_id
                  AND rt.returned_at < r.obs_time AND rt.returned_at >= r.obs_time - interval '90 days'))::int AS ret,
       coalesce((SELECT avg(rating) <= 2 FROM shop.reviews v
                 WHERE v.customer_id = r.customer_id AND v.created_at < r.obs_time), false)::int AS lowr,
       (cu.segment = 'vip')::int AS vip,
       extract(epoch FROM r.obs_time - (SELECT max(o.ordered_at) FROM shop.orders o
                                        WHERE o.customer_id = r.customer_id AND o.ordered_at < r.obs_time)) / 86400 AS days_since
FROM acc.rows r JOIN shop.customers cu USING (customer_id) JOIN diag_pred p USING (customer_id)
WHERE r.task = 'churn';
SELECT split, noord, gift90 AS gift_in_90d, ret, lowr, vip, (2 * noord + ret + lowr - vip >= 2)::int AS rule_high,
       count(*) AS n, round(avg(label)::numeric, 2) AS churn_rate, round(avg(prediction)::numeric, 2) AS mean_pred
FROM diag GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 7, 2, 3, 4, 5, 6;
SELECT width_bucket(days_since, 0, 100, 10) * 10 AS days_since_last_order_up_to, count(*) AS n,
       round(avg(label)::numeric, 2) AS churn_rate, round(avg(prediction)::numeric, 2) AS mean_pred,
       sum((prediction > 0.7)::int) AS predicted_above_07
FROM diag WHERE noord = 0 AND vip = 0 AND lowr = 0 GROUP BY 1 ORDER BY 1;
