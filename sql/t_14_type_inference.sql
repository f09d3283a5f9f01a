-- t_14_type_inference: the rules of type inference and time-column choice
-- (docs/catalog.md), each on a hand-built table, and rt_describe's reasons.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS headwater;
RESET client_min_messages;
SET timezone = 'UTC';
CREATE SCHEMA t14;
SET search_path = t14, public;
-- an entity: birth_date is an attribute; last_update a maintenance stamp
CREATE TABLE customers (
	customer_id int PRIMARY KEY,
	birth_date  date,
	last_update timestamptz,
	tier_level  int,             -- code name, 3 values in 40 rows: categorical
	visits      int              -- no code name: numerical
);
-- events of customers: created_at wins over order_date
CREATE TABLE orders (
	order_id    int PRIMARY KEY,
	customer_id int NOT NULL REFERENCES customers,
	order_date  date,
	created_at  timestamptz,
	due_date    date,            -- attribute
	status      int,             -- integer status code without an FK: categorical
	status_id   smallint,        -- code named like an id, few values: categorical
	type_code   bigint,          -- code with too many values: numerical
	quantity    int,             -- a measure with many values: numerical
	ref_id      int,             -- named like an id, many values: identifier
	note        text
);
-- events named after their table; one child of orders
CREATE TABLE shipments (
	shipment_id int PRIMARY KEY,
	order_id    int REFERENCES orders,
	shipped_at  timestamptz,     -- the only candidate date of a child table
	expires_at  timestamptz      -- attribute
);
-- an entity (customers and "Tickets" reference it, it references nothing):
-- neither an attribute date nor a date that is not creation-like is its time
CREATE TABLE stores (
	store_id     int PRIMARY KEY,
	opening_date date,           -- attribute
	launched_on  date            -- not creation-like, and stores is an entity
);
ALTER TABLE customers ADD COLUMN home_store int REFERENCES stores;
CREATE TABLE readings (at timestamptz, flag int, level int);   -- no PK, no FK: events
-- CamelCase names are normalized: "CreationDate" is creation-like, "StatusID" a code
CREATE TABLE "Tickets" (
	"TicketID"     int PRIMARY KEY,
	"StoreID"      int REFERENCES stores,
	"StatusID"     int,
	"CreationDate" timestamp,
	"ClosedAt"     timestamp
);

INSERT INTO stores SELECT i, '2020-01-01'::date + i, '2019-06-01'::date + i FROM generate_series(1, 5) i;
INSERT INTO customers
SELECT i, '1970-01-01'::date + i * 300, '2024-06-01'::timestamptz + i * interval '1 hour',
       1 + i % 3, i * 7 % 41, 1 + i % 5
FROM generate_series(1, 40) i;
INSERT INTO orders
SELECT i, 1 + i % 40, '2024-01-01'::date + i, '2024-01-01'::timestamptz + i * interval '1 day',
       '2024-02-01'::date + i, i % 7, (i % 4)::smallint, (i % 50)::bigint, i * 13 % 97, i, 'n' || (i % 3)
FROM generate_series(1, 80) i;
INSERT INTO shipments SELECT i, i, '2024-01-03'::timestamptz + i * interval '1 day', '2025-01-01' FROM generate_series(1, 60) i;
INSERT INTO readings SELECT '2024-03-01'::timestamptz + i * interval '1 minute', i % 2, i FROM generate_series(1, 30) i;
INSERT INTO "Tickets" SELECT i, 1 + i % 5, i % 3, '2024-05-01'::timestamp + i * interval '1 day', NULL FROM generate_series(1, 20) i;

SELECT rt_create_model('t14', 't14');
SELECT table_name, column_name, sql_type, semantic_type, is_time_column, inference
FROM rt_describe('t14') ORDER BY table_name COLLATE "C", column_name COLLATE "C";
SELECT table_name, time_column, time_reason FROM headwater.model_table
WHERE model_id = (SELECT model_id FROM headwater.model WHERE name = 't14') ORDER BY table_idx;
-- an integer code's categories are its values as ::text gives them, with counts
SELECT column_name, value, count FROM headwater.model_category
WHERE model_id = (SELECT model_id FROM headwater.model WHERE name = 't14') AND table_name = 'orders'
ORDER BY column_name, value COLLATE "C";
-- the counts come from the snapshot's cells: they equal the SQL counts
(SELECT 'status' AS column_name, status::text AS value, count(*) FROM t14.orders GROUP BY 2
 UNION ALL SELECT 'status_id', status_id::text, count(*) FROM t14.orders GROUP BY 2
 UNION ALL SELECT 'flag', flag::text, count(*) FROM t14.readings GROUP BY 2)
EXCEPT
SELECT column_name, value, count FROM headwater.model_category
WHERE model_id = (SELECT model_id FROM headwater.model WHERE name = 't14');
SELECT column_name, stats FROM rt_describe('t14')
WHERE table_name = 'orders' AND column_name IN ('status', 'quantity', 'ref_id', 'type_code')
ORDER BY column_name;

-- overrides still win: a code forced numerical, a measure forced categorical,
-- the entity given its launch date as time column, the orders none
SET client_min_messages = warning;
SELECT rt_set_column_type('t14', 'orders', 'status', 'numerical') IS NOT NULL AS set;
SELECT rt_set_column_type('t14', 'orders', 'quantity', 'categorical') IS NOT NULL AS set;
SELECT rt_set_column_type('t14', 'orders', 'status_id', 'ignored') IS NOT NULL AS set;
SELECT rt_set_time_column('t14', 'stores', 'launched_on') IS NOT NULL AS set;
SELECT rt_set_time_column('t14', 'orders', NULL) IS NOT NULL AS set;
RESET client_min_messages;
SELECT table_name, column_name, semantic_type, is_time_column, inference
FROM rt_describe('t14')
WHERE (table_name, column_name) IN (('orders', 'status'), ('orders', 'quantity'), ('orders', 'status_id'),
                                    ('orders', 'created_at'), ('stores', 'launched_on'), ('stores', 'opening_date'))
ORDER BY table_name, column_name;
SELECT table_name, time_column, time_reason FROM headwater.model_table
WHERE model_id = (SELECT model_id FROM headwater.model WHERE name = 't14') AND table_name IN ('orders', 'stores')
ORDER BY table_idx;
-- rt_refresh keeps them; back to inference
SET client_min_messages = warning;
SELECT rt_refresh('t14') IS NOT NULL AS refreshed;
SELECT count(*) FILTER (WHERE inference LIKE '%overridden%') AS overridden,
       count(*) FILTER (WHERE inference LIKE '%set by rt_set_time_column%') AS time_set
FROM rt_describe('t14');
SELECT rt_set_column_type('t14', 'orders', 'status', NULL) IS NOT NULL AS reset;
SELECT rt_set_time_column('t14', 'orders', 'order_date') IS NOT NULL AS set;
RESET client_min_messages;
SELECT column_name, semantic_type, is_time_column, inference FROM rt_describe('t14')
WHERE table_name = 'orders' AND column_name IN ('status', 'order_date', 'created_at') ORDER BY column_name;

-- the same overrides given as options of rt_create_model
SET client_min_messages = warning;
SELECT rt_create_model('t14_opt', 't14', '{"time_columns": {"customers": "birth_date", "readings": null},
                                           "column_types": {"readings": {"flag": "numerical"}}}') IS NOT NULL AS created;
RESET client_min_messages;
SELECT table_name, column_name, semantic_type, is_time_column, inference FROM rt_describe('t14_opt')
WHERE (table_name, column_name) IN (('customers', 'birth_date'), ('readings', 'flag'), ('readings', 'at'))
ORDER BY table_name, column_name;
SELECT rt_drop_model('t14_opt');

RESET search_path;
SELECT rt_drop_model('t14');
SET client_min_messages = warning;
DROP SCHEMA t14 CASCADE;
RESET client_min_messages;
