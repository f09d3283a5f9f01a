-- bench/accuracy/pagila_rows.sql: the pagila tasks' rows (key, obs_time, label,
-- split), one row per (customer, cutoff), in acc.rows (outside the model's
-- schema public).  headwater's tasks and the GBDT read the same rows.
--
-- Pagila's rentals come in five bursts exactly 21 days apart (May 24-31,
-- Jun 14-21, Jul 5-12, Jul 26-Aug 2, Aug 16-23, 2022; plus 182 rentals on
-- Feb 14).  Cutoffs at the start of bursts 2..5, horizon 21 days: each label
-- window holds exactly one burst and ends by the next cutoff, so a label is
-- never in the future of a later seed (label history stays leak-free).
-- A 30-day horizon would either overlap the next cutoff or leave <= 3
-- cutoffs, and "rents again within 30 days" is 99.7-100% true here.
--   rentals_21d  numerical: rentals in [cutoff, cutoff + 21 days)
--   heavy_21d    boolean:   rentals_21d >= 7 (the test cutoff's median)
-- Split by time: 2022-06-14 and 2022-07-05 train, 2022-07-26 val,
-- 2022-08-16 test.
CREATE SCHEMA acc;
CREATE TABLE acc.rows (task text, customer_id int, obs_time timestamptz, label float8, split text);
WITH cut(cutoff, split) AS (VALUES
	(timestamptz '2022-06-14 00:00+00', 'train'), ('2022-07-05 00:00+00', 'train'),
	('2022-07-26 00:00+00', 'val'), ('2022-08-16 00:00+00', 'test')),
n AS (
	SELECT c.customer_id, cut.cutoff, cut.split,
	       (SELECT count(*) FROM rental r WHERE r.customer_id = c.customer_id
	          AND r.rental_date >= cut.cutoff AND r.rental_date < cut.cutoff + interval '21 days') AS n
	FROM customer c, cut
	WHERE c.create_date < cut.cutoff)
INSERT INTO acc.rows
SELECT 'rentals_21d', customer_id, cutoff, n, split FROM n
UNION ALL
SELECT 'heavy_21d', customer_id, cutoff, (n >= 7)::int, split FROM n;
