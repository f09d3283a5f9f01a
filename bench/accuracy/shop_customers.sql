-- bench/accuracy/shop_customers.sql: every shop customer's segment, signup
-- and order times before rt_demo_shop's cutoff, as epoch seconds (CSV, no
-- header): the input of shop_oracle.py and shop_drift.py, which recompute
-- the orders_30d rows from it.  run.sh writes it to shop_customers.csv.
COPY (
	SELECT c.customer_id, c.segment, extract(epoch FROM c.signup_at),
	       coalesce(string_agg(extract(epoch FROM o.ordered_at)::text, ' ' ORDER BY o.ordered_at)
	                FILTER (WHERE o.ordered_at < timestamptz '2024-10-01 00:00+00'), '')
	FROM shop.customers c LEFT JOIN shop.orders o USING (customer_id)
	GROUP BY 1, 2, 3 ORDER BY 1
) TO STDOUT WITH (FORMAT csv);
