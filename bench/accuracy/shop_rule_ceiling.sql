-- bench/accuracy/shop_rule_ceiling.sql: what the demo shop's planted churn
-- rule (docs/demo_database.md) scores on the benchmark's own val and test
-- rows (acc.rows of shop_rows.sql), as a binary predictor "score >= 2":
-- the ceiling a model can reach on `churn`, and what it reaches when it
-- gets one part of the rule wrong.  Variants:
--   full            the rule
--   no_returns      without the returns term
--   recency_vip     only "no order in the 90 days before" and vip
--   recency         only "no order in the 90 days before"
-- each computed twice: with the customer's own orders (customer_id), and
-- with orders they received as gifts (gift_recipient_id) counted as their
-- own, which is what a model that cannot tell the two foreign keys apart
-- sees (docs/model.md, "Link codes").
--   psql -d acc_shop -f bench/accuracy/shop_rule_ceiling.sql
WITH c AS (
	SELECT r.customer_id, r.label, r.split,
	       (NOT EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer_id = r.customer_id
	                      AND o.ordered_at < r.obs_time AND o.ordered_at >= r.obs_time - interval '90 days'))::int AS noord,
	       (NOT EXISTS (SELECT 1 FROM shop.orders o WHERE (o.customer_id = r.customer_id OR o.gift_recipient_id = r.customer_id)
	                      AND o.ordered_at < r.obs_time AND o.ordered_at >= r.obs_time - interval '90 days'))::int AS noord_gifts,
	       (EXISTS (SELECT 1 FROM shop.returns rt JOIN shop.orders o USING (order_id) WHERE o.customer_id = r.customer_id
	                  AND rt.returned_at < r.obs_time AND rt.returned_at >= r.obs_time - interval '90 days'))::int AS ret,
	       coalesce((SELECT avg(rating) <= 2 FROM shop.reviews v
	                 WHERE v.customer_id = r.customer_id AND v.created_at < r.obs_time), false)::int AS lowr,
	       (cu.segment = 'vip')::int AS vip
	FROM acc.rows r JOIN shop.customers cu USING (customer_id)
	WHERE r.task = 'churn' AND r.split IN ('val', 'test')),
v AS (
	SELECT c.split, c.label, x.variant, x.orders, x.score
	FROM c, LATERAL (VALUES
		('full', 'own', (2 * noord + ret + lowr - vip >= 2)::int),
		('no_returns', 'own', (2 * noord + lowr - vip >= 2)::int),
		('recency_vip', 'own', (2 * noord - vip >= 2)::int),
		('recency', 'own', noord),
		('full', 'own + received gifts', (2 * noord_gifts + ret + lowr - vip >= 2)::int),
		('no_returns', 'own + received gifts', (2 * noord_gifts + lowr - vip >= 2)::int),
		('recency_vip', 'own + received gifts', (2 * noord_gifts - vip >= 2)::int),
		('recency', 'own + received gifts', noord_gifts)) x(variant, orders, score))
-- AUROC of a binary score: P(score_pos > score_neg) + P(tie) / 2
SELECT p.split, p.variant, p.orders,
       round((sum(CASE WHEN p.score > n.score THEN 1.0 WHEN p.score = n.score THEN 0.5 ELSE 0 END)
              / count(*))::numeric, 4) AS auroc
FROM v p JOIN v n ON n.split = p.split AND n.variant = p.variant AND n.orders = p.orders AND n.label = 0
WHERE p.label = 1
GROUP BY 1, 2, 3
ORDER BY 1 DESC, 3, 4 DESC;
