-- bench/accuracy/shop_segment_swap.sql: does the customer's segment reach
-- the shop model's predictions?  (run.sh with ACC_SEGMENT_SWAP=1, after the
-- served test predictions and before the model is dropped; psql variables
-- model, seed and dump (a CSV file).)
--
-- rt_demo_shop's order counts depend on the segment (at most 13 orders for
-- vip, 9 business, 7 consumer), and so does its churn rule (vip -1).  The
-- GBDT splits on the segment; headwater was seen to predict 0 for VIP
-- customers with a recent order where the GBDT predicted 1.  Here every test
-- row of both tasks is predicted twice by the served (checkpoint, weights):
-- as the data is, and with vip and consumer exchanged in shop.customers
-- (business unchanged, every other cell the same) after rt_refresh.  A
-- model that reads the segment moves its predictions; one that does not
-- gives the same numbers.  One CSV row per test row:
--   task, customer_id, segment, label, pred, p1, pred_swapped, p1_swapped
-- (p1: P(label >= 1) for an ordinal orders_30d, P(true) for churn, NULL
-- otherwise).  The database is changed (the segments are swapped back and
-- the snapshot rebuilt at the end), so run it last.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE TEMP TABLE swap_preds (pass text, task text, customer_id text, prediction float8, p1 float8);
CREATE FUNCTION pg_temp.predict_all(pass text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t text;
	short text;
BEGIN
	FOR t IN SELECT k.task FROM rt_tasks(current_setting('acc.model')) k ORDER BY 1 LOOP
		short := substr(t, strpos(t, '_') + 1);
		INSERT INTO swap_preds
		SELECT pass, short, p.row_id, p.prediction,
		       coalesce((p.detail -> 'p_at_least' ->> '1')::float8,
		                CASE WHEN short = 'churn' THEN p.prediction END)
		FROM rt_predict_table(t, format(
			'SELECT customer_id, obs_time FROM acc.rows WHERE task = %L AND split = ''test'' ORDER BY customer_id', short)) p;
	END LOOP;
END $$;
SELECT pg_temp.predict_all('as_is');
CREATE TEMP TABLE swapped AS
SELECT customer_id, segment FROM shop.customers WHERE segment IN ('vip', 'consumer');
UPDATE shop.customers c SET segment = CASE s.segment WHEN 'vip' THEN 'consumer' ELSE 'vip' END::shop.segment
FROM swapped s WHERE c.customer_id = s.customer_id;
SELECT rt_refresh(current_setting('acc.model')) IS NOT NULL AS refreshed;
SELECT pg_temp.predict_all('swapped');
UPDATE shop.customers c SET segment = s.segment FROM swapped s WHERE c.customer_id = s.customer_id;
SELECT rt_refresh(current_setting('acc.model')) IS NOT NULL AS refreshed;
COPY (
	SELECT a.task, a.customer_id, c.segment, r.label, a.prediction AS pred, a.p1,
	       b.prediction AS pred_swapped, b.p1 AS p1_swapped
	FROM swap_preds a
	JOIN swap_preds b ON b.pass = 'swapped' AND b.task = a.task AND b.customer_id = a.customer_id
	JOIN shop.customers c ON c.customer_id::text = a.customer_id
	JOIN acc.rows r ON r.task = a.task AND r.split = 'test' AND r.customer_id = c.customer_id
	WHERE a.pass = 'as_is'
	ORDER BY 1, 2
) TO STDOUT WITH (FORMAT csv, HEADER) \g :dump
