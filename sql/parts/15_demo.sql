-- ---------------------------------------------------------------------------
-- 15_demo.sql: rt_demo_shop(), the synthetic shop database with planted
-- signal (docs/demo_database.md documents every rule).
--
-- Randomness: every draw is headwater.demo_u(seed, key, salt), a hash of the
-- row's key, so the data depend only on (scale, seed), never on plan or
-- row order (no setseed/random()).
-- ---------------------------------------------------------------------------

CREATE FUNCTION headwater.demo_u(seed int, k bigint, salt int)
RETURNS float8 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$$ SELECT (pg_catalog.hashint8extended($2 * 1000003 + $3, $1) & 2147483647)::float8 / 2147483648.0 $$;
COMMENT ON FUNCTION headwater.demo_u(int, bigint, int) IS 'uniform [0,1) from a hash (demo generator)';

-- standard normal from two uniforms (Box-Muller)
CREATE FUNCTION headwater.demo_n(seed int, k bigint, salt int)
RETURNS float8 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$$ SELECT sqrt(-2 * ln(1 - headwater.demo_u($1, $2, $3))) * cos(2 * pi() * headwater.demo_u($1, $2, $3 + 7777)) $$;

CREATE FUNCTION rt_demo_shop(schema text DEFAULT 'shop', scale int DEFAULT 1000, seed int DEFAULT 42)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	old_path text := current_setting('search_path');
	cutoff   constant timestamptz := '2024-10-01 00:00:00+00';
	t_begin  constant timestamptz := '2024-01-01 00:00:00+00';
	t_end    constant timestamptz := '2025-01-31 00:00:00+00';
	nprod    int;
	n_pre    bigint;
	summary  text;
BEGIN
	IF scale IS NULL OR scale < 10 THEN
		RAISE EXCEPTION 'scale must be at least 10 customers, not %', scale
			USING ERRCODE = 'invalid_parameter_value', HINT = 'rt_demo_shop(''shop'', 200) makes about 6000 rows.';
	END IF;
	IF schema IS NULL OR EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = schema) THEN
		RAISE EXCEPTION 'schema "%" already exists', schema
			USING ERRCODE = 'duplicate_schema', HINT = 'Pick a new schema name or DROP SCHEMA ... CASCADE first.';
	END IF;
	nprod := greatest(20, scale / 4);
	EXECUTE format('CREATE SCHEMA %I', schema);
	PERFORM set_config('search_path', quote_ident(schema) || ', pg_catalog', true);

	CREATE TYPE segment AS ENUM ('consumer', 'business', 'vip');
	CREATE TYPE category AS ENUM ('electronics', 'books', 'clothing', 'home', 'toys', 'grocery');
	CREATE TYPE order_status AS ENUM ('placed', 'shipped', 'delivered', 'cancelled', 'returned');

	CREATE TABLE customers (
		customer_id    int PRIMARY KEY,
		name           text NOT NULL,
		email          text,
		segment        segment NOT NULL,
		country        text NOT NULL,
		signup_at      timestamptz NOT NULL,
		newsletter     bool NOT NULL,
		referred_by    int REFERENCES customers,        -- self-reference
		first_order_id int                              -- FK to orders, added below (cycle)
	);
	COMMENT ON COLUMN customers.segment IS 'customer segment: consumer, business or vip';
	CREATE TABLE products (
		product_id  int PRIMARY KEY,
		name        text NOT NULL,
		category    category NOT NULL,
		brand       text NOT NULL,
		description text,
		price       numeric(10,2) NOT NULL,
		in_stock    bool,
		launched_on date
	);
	CREATE TABLE orders (
		order_id          int PRIMARY KEY,
		customer_id       int NOT NULL REFERENCES customers,
		gift_recipient_id int REFERENCES customers,    -- second FK to customers
		ordered_at        timestamptz NOT NULL,
		status            order_status NOT NULL,
		is_gift           bool NOT NULL,
		coupon_code       text
	);
	ALTER TABLE customers ADD FOREIGN KEY (first_order_id) REFERENCES orders;
	CREATE TABLE order_items (
		order_id   int NOT NULL REFERENCES orders,
		line_no    int NOT NULL,
		product_id int NOT NULL REFERENCES products,
		quantity   int NOT NULL,
		unit_price numeric(10,2) NOT NULL,
		PRIMARY KEY (order_id, line_no)
	);
	CREATE TABLE reviews (
		review_id     int PRIMARY KEY,
		customer_id   int NOT NULL REFERENCES customers,
		product_id    int NOT NULL REFERENCES products,
		order_id      int REFERENCES orders,
		rating        int NOT NULL CHECK (rating BETWEEN 1 AND 5),
		title         text,
		body          text,
		created_at    timestamptz NOT NULL,
		helpful_votes int
	);
	CREATE TABLE returns (
		return_id     int PRIMARY KEY,
		order_id      int NOT NULL,
		line_no       int NOT NULL,
		reason        text NOT NULL,
		returned_at   timestamptz NOT NULL,
		refund_amount numeric(10,2),
		FOREIGN KEY (order_id, line_no) REFERENCES order_items   -- composite FK
	);

	-- customers ----------------------------------------------------------------
	INSERT INTO customers (customer_id, name, email, segment, country, signup_at, newsletter, referred_by)
	SELECT i,
		(ARRAY['Ada','Ben','Cleo','Dev','Eva','Finn','Gus','Hana','Ivo','Jun','Kai','Lea','Max','Nia','Oli','Pia','Raj','Sol','Tom','Uma'])[1 + floor(headwater.demo_u(seed, i, 1) * 20)::int]
		|| ' ' ||
		(ARRAY['Abbott','Baker','Chen','Diaz','Evans','Fischer','Garcia','Hughes','Ito','Jones','Khan','Lopez','Moreau','Novak','Okafor','Patel','Quinn','Rossi','Silva','Tanaka'])[1 + floor(headwater.demo_u(seed, i, 2) * 20)::int],
		CASE WHEN headwater.demo_u(seed, i, 3) < 0.1 THEN NULL ELSE 'user' || i || '@example.com' END,
		CASE WHEN headwater.demo_u(seed, i, 4) < 0.6 THEN 'consumer'
		     WHEN headwater.demo_u(seed, i, 4) < 0.9 THEN 'business' ELSE 'vip' END::segment,
		(ARRAY['DE','FR','US','GB','JP','BR','IN','NL'])[1 + floor(headwater.demo_u(seed, i, 5) * 8)::int],
		'2023-01-01 00:00:00+00'::timestamptz + headwater.demo_u(seed, i, 6) * interval '578 days',
		headwater.demo_u(seed, i, 7) < 0.4,
		CASE WHEN i > 10 AND headwater.demo_u(seed, i, 8) < 0.3
		     THEN 1 + floor(headwater.demo_u(seed, i, 9) * (i - 1))::int END
	FROM generate_series(1, scale) i;

	-- products: quality lives in the brand (4 good, 4 average, 4 poor brands) --
	INSERT INTO products
	SELECT p,
		'Item ' || p,
		c.cat,
		c.brand,
		CASE WHEN headwater.demo_u(seed, p, 12) < 0.05 THEN NULL ELSE
		(ARRAY['Sturdy','Compact','Classic','Modern','Handy','Elegant','Basic','Deluxe'])[1 + floor(headwater.demo_u(seed, p, 13) * 8)::int]
		|| ' ' || c.cat::text || ' item by ' || c.brand || ', '
		|| (ARRAY['great for everyday use','a popular gift','made to last','new this season','limited edition','easy to clean'])[1 + floor(headwater.demo_u(seed, p, 14) * 6)::int]
		END,
		round((CASE c.cat WHEN 'electronics' THEN 60 WHEN 'books' THEN 8 WHEN 'clothing' THEN 12
		                  WHEN 'home' THEN 20 WHEN 'toys' THEN 10 ELSE 2 END
		       * exp(headwater.demo_u(seed, p, 15) * 2.3))::numeric, 2),
		CASE WHEN headwater.demo_u(seed, p, 16) < 0.05 THEN NULL ELSE headwater.demo_u(seed, p, 16) < 0.85 END,
		('2022-01-01'::date + floor(headwater.demo_u(seed, p, 17) * 900)::int)
	FROM generate_series(1, nprod) p,
	LATERAL (SELECT (enum_range(NULL::category))[1 + floor(headwater.demo_u(seed, p, 10) * 6)::int] AS cat,
	                (ARRAY['Acme','Borealis','Cobalt','Dynamo','Ember','Fjord','Granite','Helix','Ion','Juniper','Krait','Lumen'])[1 + floor(headwater.demo_u(seed, p, 11) * 12)::int] AS brand) c;

	-- orders before the cutoff: 30% of customers "lapse" (order only early) --
	INSERT INTO orders (order_id, customer_id, gift_recipient_id, ordered_at, status, is_gift, coupon_code)
	SELECT row_number() OVER (ORDER BY o.at, o.cid, o.k), o.cid,
		CASE WHEN headwater.demo_u(seed, o.cid * 64 + o.k, 22) < 0.08
		     THEN 1 + floor(headwater.demo_u(seed, o.cid * 64 + o.k, 23) * scale)::int END,
		o.at, 'delivered', false,
		CASE WHEN headwater.demo_u(seed, o.cid * 64 + o.k, 24) < 0.15
		     THEN (ARRAY['WELCOME10','SPRING','VIP20','FREESHIP'])[1 + floor(headwater.demo_u(seed, o.cid * 64 + o.k, 25) * 4)::int] END
	FROM (
		SELECT c.customer_id AS cid, k,
			s.start + (cutoff - s.start) * (CASE WHEN headwater.demo_u(seed, c.customer_id, 20) < 0.25 THEN 0.5 ELSE 1.0 END)
			          * headwater.demo_u(seed, c.customer_id * 64 + k, 21) AS at
		FROM customers c
		CROSS JOIN LATERAL (SELECT greatest(c.signup_at, t_begin) AS start) s
		CROSS JOIN LATERAL generate_series(1, floor(headwater.demo_u(seed, c.customer_id, 26)
			* CASE c.segment WHEN 'vip' THEN 14 WHEN 'business' THEN 10 ELSE 8 END)::int) k
	) o;
	ANALYZE customers;
	ANALYZE products;
	UPDATE orders SET is_gift = gift_recipient_id IS NOT NULL;
	SELECT count(*) INTO n_pre FROM orders;
	PERFORM headwater.demo_shop_fill(seed, 0, nprod);

	ANALYZE reviews;
	-- churn: decided from what is visible at the cutoff -----------------------
	CREATE TEMP TABLE demo_churn ON COMMIT DROP AS
	SELECT c.customer_id,
		(CASE WHEN f.last_order IS NULL OR f.last_order < cutoff - interval '90 days' THEN 2.0 ELSE 0 END
		 + CASE WHEN f.recent_returns > 0 THEN 1.0 ELSE 0 END
		 + CASE WHEN f.avg_rating <= 2.0 THEN 1.0 ELSE 0 END
		 - CASE WHEN c.segment = 'vip' THEN 1.0 ELSE 0 END) AS score
	FROM customers c
	LEFT JOIN (SELECT customer_id, max(ordered_at) AS last_order FROM orders
	           WHERE ordered_at < cutoff GROUP BY customer_id) lo USING (customer_id)
	LEFT JOIN (SELECT o.customer_id, count(*) AS recent_returns FROM returns r JOIN orders o USING (order_id)
	           WHERE r.returned_at >= cutoff - interval '90 days' AND r.returned_at < cutoff
	           GROUP BY o.customer_id) rr USING (customer_id)
	LEFT JOIN (SELECT customer_id, avg(rating) AS avg_rating FROM reviews
	           WHERE created_at < cutoff GROUP BY customer_id) ar USING (customer_id)
	CROSS JOIN LATERAL (SELECT lo.last_order, coalesce(rr.recent_returns, 0) AS recent_returns, ar.avg_rating) f;

	-- orders after the cutoff: customers who stay order in the 60-day window
	INSERT INTO orders (order_id, customer_id, gift_recipient_id, ordered_at, status, is_gift, coupon_code)
	SELECT n_pre + row_number() OVER (ORDER BY o.at, o.cid, o.k), o.cid, NULL, o.at, 'delivered', false, NULL
	FROM (
		SELECT d.customer_id AS cid, k,
			CASE WHEN k <= 3 THEN cutoff + headwater.demo_u(seed, d.customer_id * 64 + k, 31) * interval '59 days'
			     ELSE cutoff + interval '60 days' + headwater.demo_u(seed, d.customer_id * 64 + k, 31) * (t_end - cutoff - interval '60 days') END AS at
		FROM demo_churn d
		CROSS JOIN LATERAL generate_series(1, 5) k
		WHERE NOT (CASE WHEN d.score >= 2 THEN headwater.demo_u(seed, d.customer_id, 30) < 0.92
		                ELSE headwater.demo_u(seed, d.customer_id, 30) < 0.08 END)
		  AND (k = 1 OR headwater.demo_u(seed, d.customer_id * 64 + k, 32) < 0.45)
	) o;
	PERFORM headwater.demo_shop_fill(seed, n_pre, nprod);

	UPDATE customers c SET first_order_id = f.first
	FROM (SELECT customer_id, min(order_id) AS first FROM orders GROUP BY customer_id) f
	WHERE f.customer_id = c.customer_id;

	ANALYZE customers; ANALYZE products; ANALYZE orders; ANALYZE order_items; ANALYZE reviews; ANALYZE returns;
	SELECT format('schema %s: %s customers, %s products, %s orders, %s order_items, %s reviews, %s returns',
	              quote_ident(schema),
	              (SELECT count(*) FROM customers), (SELECT count(*) FROM products), (SELECT count(*) FROM orders),
	              (SELECT count(*) FROM order_items), (SELECT count(*) FROM reviews), (SELECT count(*) FROM returns))
	  INTO summary;
	DROP TABLE demo_churn;
	PERFORM set_config('search_path', old_path, true);
	RETURN summary;
END
$fn$;
COMMENT ON FUNCTION rt_demo_shop(text, int, int) IS
	'create the synthetic shop database (about 30 rows per customer) with planted signal; see docs/demo_database.md';

-- items, returns, reviews and statuses of the orders with order_id > first_id
-- (search_path already points at the demo schema)
CREATE FUNCTION headwater.demo_shop_fill(seed int, first_id bigint, nprod int)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	t_end constant timestamptz := '2025-01-31 00:00:00+00';
	next_return int;
	next_review int;
BEGIN
	-- 1-4 lines an order; popular products are drawn more often
	INSERT INTO order_items (order_id, line_no, product_id, quantity, unit_price)
	SELECT o.order_id, l,
		1 + floor(power(headwater.demo_u(seed, o.order_id * 8 + l, 40), 1.5) * nprod)::int,
		1 + floor(power(headwater.demo_u(seed, o.order_id * 8 + l, 41), 3) * 3)::int,
		0
	FROM orders o
	CROSS JOIN LATERAL generate_series(1, 1 + floor(headwater.demo_u(seed, o.order_id, 42) * 4)::int) l
	WHERE o.order_id > first_id;
	UPDATE order_items i SET unit_price = p.price FROM products p
	WHERE p.product_id = i.product_id AND i.order_id > first_id;
	-- fresh statistics: the statements below join the just-filled tables
	ANALYZE order_items;
	ANALYZE orders;

	-- 3% of orders are cancelled (no returns, no reviews)
	UPDATE orders SET status = 'cancelled'
	WHERE order_id > first_id AND headwater.demo_u(seed, order_id, 43) < 0.03;

	-- returns: expensive clothing and electronics come back (rule (c))
	SELECT coalesce(max(return_id), 0) INTO next_return FROM returns;
	INSERT INTO returns (return_id, order_id, line_no, reason, returned_at, refund_amount)
	SELECT next_return + row_number() OVER (ORDER BY i.order_id, i.line_no), i.order_id, i.line_no,
		CASE p.category WHEN 'clothing' THEN (ARRAY['wrong size','wrong size','not as described'])[1 + floor(headwater.demo_u(seed, i.order_id * 8 + i.line_no, 45) * 3)::int]
		                WHEN 'electronics' THEN (ARRAY['defective','defective','not as described'])[1 + floor(headwater.demo_u(seed, i.order_id * 8 + i.line_no, 45) * 3)::int]
		                ELSE (ARRAY['changed mind','damaged in transit'])[1 + floor(headwater.demo_u(seed, i.order_id * 8 + i.line_no, 45) * 2)::int] END,
		o.ordered_at + (3 + headwater.demo_u(seed, i.order_id * 8 + i.line_no, 46) * 17) * interval '1 day',
		CASE WHEN headwater.demo_u(seed, i.order_id * 8 + i.line_no, 47) < 0.1 THEN NULL ELSE i.unit_price * i.quantity END
	FROM order_items i JOIN orders o USING (order_id) JOIN products p USING (product_id)
	WHERE i.order_id > first_id AND o.status <> 'cancelled'
	  AND headwater.demo_u(seed, i.order_id * 8 + i.line_no, 44) <
	      CASE WHEN (p.category = 'clothing' AND p.price >= 60) OR (p.category = 'electronics' AND p.price >= 300)
	           THEN 0.7 ELSE 0.02 END;

	UPDATE orders o SET status = 'returned'
	FROM (SELECT DISTINCT order_id FROM returns WHERE order_id > first_id) r
	WHERE r.order_id = o.order_id AND o.status <> 'cancelled';
	UPDATE orders SET status = CASE WHEN ordered_at > t_end - interval '2 days' THEN 'placed' ELSE 'shipped' END::order_status
	WHERE order_id > first_id AND status = 'delivered' AND ordered_at > t_end - interval '7 days';

	ANALYZE returns;
	-- reviews: 35% of delivered lines; rating = brand quality + category + segment + noise (rule (b))
	SELECT coalesce(max(review_id), 0) INTO next_review FROM reviews;
	INSERT INTO reviews (review_id, customer_id, product_id, order_id, rating, title, body, created_at, helpful_votes)
	SELECT next_review + row_number() OVER (ORDER BY i.order_id, i.line_no), o.customer_id, i.product_id,
		CASE WHEN headwater.demo_u(seed, i.order_id * 8 + i.line_no, 51) < 0.1 THEN NULL ELSE i.order_id END,
		greatest(1, least(5, round(3.2
			+ CASE WHEN p.brand IN ('Acme','Borealis','Cobalt','Dynamo') THEN 1.2
			       WHEN p.brand IN ('Ion','Juniper','Krait','Lumen') THEN -1.5 ELSE 0 END
			+ CASE p.category WHEN 'electronics' THEN -0.3 WHEN 'books' THEN 0.4 WHEN 'clothing' THEN -0.2
			                  WHEN 'home' THEN 0.2 WHEN 'toys' THEN 0.3 ELSE 0 END
			+ CASE c.segment WHEN 'business' THEN -0.6 WHEN 'vip' THEN 0.6 ELSE 0 END
			+ 0.5 * headwater.demo_n(seed, i.order_id * 8 + i.line_no, 52))))::int,
		CASE WHEN headwater.demo_u(seed, i.order_id * 8 + i.line_no, 53) < 0.5 THEN NULL
		     ELSE (ARRAY['My review','About this ' || p.category::text,'Purchase notes','Quick thoughts'])[1 + floor(headwater.demo_u(seed, i.order_id * 8 + i.line_no, 54) * 4)::int] END,
		'Bought this ' || p.category::text || ' item '
		|| (ARRAY['for my home office','as a gift','for the kids','for a trip','to replace an old one','on a whim'])[1 + floor(headwater.demo_u(seed, i.order_id * 8 + i.line_no, 55) * 6)::int]
		|| '; arrived ' || (ARRAY['on time','a bit late','early'])[1 + floor(headwater.demo_u(seed, i.order_id * 8 + i.line_no, 56) * 3)::int] || '.',
		o.ordered_at + (2 + headwater.demo_u(seed, i.order_id * 8 + i.line_no, 57) * 28) * interval '1 day',
		CASE WHEN headwater.demo_u(seed, i.order_id * 8 + i.line_no, 58) < 0.4 THEN NULL
		     ELSE floor(headwater.demo_u(seed, i.order_id * 8 + i.line_no, 59) * 20)::int END
	FROM order_items i JOIN orders o USING (order_id) JOIN products p USING (product_id)
	JOIN customers c ON c.customer_id = o.customer_id
	WHERE i.order_id > first_id AND o.status <> 'cancelled'
	  AND headwater.demo_u(seed, i.order_id * 8 + i.line_no, 50) < 0.35;
END
$fn$;
