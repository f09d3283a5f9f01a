-- scripts/demo.sql: the demo's SQL (run by scripts/demo.sh with -v scale, -v steps).
\set ON_ERROR_STOP on
\pset pager off
SET client_min_messages = notice;

CREATE EXTENSION IF NOT EXISTS headwater;
\echo '== the built-in demo shop database'
SELECT rt_demo_shop('shop', :scale);

\echo '== rt_create_model: discover, type, embed, snapshot'
SELECT rt_create_model('shop', 'shop');
SELECT table_name, column_name, sql_type, semantic_type, is_time_column AS time, null_count, fk_target
FROM rt_describe('shop');

\echo '== three tasks: churn (boolean, query), rating (numerical cell), order status (categorical cell)'
\ir demo_tasks.sql

\echo '== rt_train: small preset on the CPU, in a background worker (progress below)'
SELECT rt_train('shop', steps => :steps, preset => 'small',
                options => '{"progress_seconds": 15}') AS train_result \gset
SELECT jsonb_pretty(:'train_result'::jsonb);

\echo '== rt_evaluate on the test split, beside the trivial baselines, with the checkpoint each task serves from'
\echo '   and its weights (last parameters or their average), chosen per task on its own validation metric;'
\echo '   rt_train reports them under "serving")'
SELECT e.task, e.metric, round(e.model::numeric, 3) AS model, round(e.baseline::numeric, 3) AS baseline,
       e.n_rows, (:'train_result'::jsonb -> 'serving' -> e.task ->> 'step')::int AS checkpoint_step,
       (:'train_result'::jsonb -> 'serving' -> e.task ->> 'checkpoint_id')::bigint AS checkpoint_id,
       :'train_result'::jsonb -> 'serving' -> e.task ->> 'weights' AS weights
FROM (SELECT 'churn' AS task, * FROM rt_evaluate('churn')
      UNION ALL SELECT 'rating', * FROM rt_evaluate('rating')
      UNION ALL SELECT 'order_status', * FROM rt_evaluate('order_status')) e;

\echo '== a few predictions'
SELECT customer_id, segment, round(rt_predict('churn', customer_id)::numeric, 3) AS p_churn
FROM shop.customers ORDER BY customer_id LIMIT 5;
SELECT r.review_id, p.category, p.brand, r.rating AS actual,
       round(rt_predict('rating', r.review_id)::numeric, 2) AS predicted
FROM shop.reviews r JOIN shop.products p USING (product_id) ORDER BY r.review_id LIMIT 5;
SELECT order_id, status AS actual, rt_predict_label('order_status', order_id) AS predicted,
       rt_predict_proba('order_status', order_id) -> 'probs' AS distribution
FROM shop.orders ORDER BY order_id LIMIT 5;
