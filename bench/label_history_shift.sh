#!/usr/bin/env bash
# bench/label_history_shift.sh: how label history differs between training
# sequences and real prediction time, before and after label times, on the
# real pagila database (../shared/data/pagila) and the rentals_30d task of
# bench/pagila_tasks.sh (rentals in the 30 days after each of 4 cutoffs 20
# days apart).  Not part of CI.
#
#   bench/label_history_shift.sh
#
# It applies the sampler's history rule in SQL (hw_task_label_visible in
# src/core/task.h: a seed at T shows the labels of its customer observed
# before T and known by T, the newest history_max = 16; t_24_label_history
# checks that the sampler and rt_predict apply exactly this rule) to
#   1        every seed (customer, cutoff) as its sequence sees it (hash
#            splits: the seeds of one customer share a split, so train, val
#            and test each have this same distribution)
#   2, 3     a time split (val_from cutoff 3, test_from cutoff 4): the train
#            seeds (cutoffs 1-2) and the test seeds (cutoff 4)
#   4        rt_predict(task, customer, T*) for every customer at the next
#            cutoff T* = cutoff 4 + 20 days (what a caller would forecast)
# under two label times:
#   before   label_time = obs_time (the default; the behaviour before)
#   after    options {"label_horizon": "30 days"}: label_time = obs + 30 days
# Columns: share of sequences with any history; mean age (days) of the
# newest history label; share of shown history labels whose window was
# still open at T (counted from rentals after T: a leak in training, and
# at real prediction time a label that cannot exist yet).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"
pagila=${HW_SHARED_DIR:-$HW_ROOT/../shared}/data/pagila
[ -f "$pagila/pagila-schema.sql" ] || { echo "SKIP: $pagila not found"; exit 0; }

if [ -z "${PGHOST:-}" ]; then
	tmp=$(mktemp -d /tmp/headwater_bench.XXXXXX)
	trap 'hw_cluster_stop "$tmp"; rm -rf "$tmp"' EXIT
	hw_cluster_start "$tmp" "${HW_BENCH_PORT:-54338}"
fi
db=hw_bench_label_shift
dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
psql -X -q -d "$db" -v ON_ERROR_STOP=0 -o /dev/null -c "SET client_min_messages = error" \
	-f "$pagila/pagila-schema.sql" -f "$pagila/pagila-data.sql" 2>/dev/null
psql -X -q -d "$db" -v ON_ERROR_STOP=1 <<'SQL'
SET timezone = 'UTC';
-- the seeds of rentals_30d, exactly as bench/pagila_tasks.sh defines them
CREATE TEMP TABLE seed AS
SELECT c.customer_id, t.k, t.cutoff AS obs
FROM customer c,
     (SELECT k, min(rental_date) + k * interval '20 days' AS cutoff
      FROM rental, generate_series(1, 4) k GROUP BY k) t;
CREATE TEMP TABLE seq AS                        -- the sequences to look at
SELECT '1 seeds (hash split: any)' AS scenario, customer_id, obs FROM seed
UNION ALL
SELECT '2 time split: train (cutoffs 1-2)', customer_id, obs FROM seed WHERE k <= 2
UNION ALL
SELECT '3 time split: test (cutoff 4)', customer_id, obs FROM seed WHERE k = 4
UNION ALL
SELECT '4 predict at cutoff 4 + 20 days', customer_id, (SELECT max(obs) + interval '20 days' FROM seed) FROM customer;
CREATE TEMP TABLE horizon (name text, h interval);
INSERT INTO horizon VALUES ('before (label_time = obs_time)', '0'), ('after (label_horizon 30 days)', '30 days');
-- history of each sequence under each label time: the newest 16 visible labels
CREATE TEMP TABLE hist AS
SELECT h.name, q.scenario, q.customer_id, q.obs, s.obs AS label_obs,
       row_number() OVER (PARTITION BY h.name, q.scenario, q.customer_id, q.obs ORDER BY s.obs DESC) AS rk
FROM horizon h, seq q
JOIN seed s ON s.customer_id = q.customer_id AND s.obs < q.obs
WHERE s.obs + h.h <= q.obs;
DELETE FROM hist WHERE rk > 16;
SELECT h.name AS label_time, q.scenario, count(*) AS sequences,
       round(100.0 * avg((EXISTS (SELECT 1 FROM hist x WHERE x.name = h.name AND x.scenario = q.scenario
                                  AND x.customer_id = q.customer_id AND x.obs = q.obs))::int), 1) AS pct_with_history,
       round(avg((SELECT extract(epoch FROM q.obs - max(x.label_obs)) / 86400 FROM hist x
                  WHERE x.name = h.name AND x.scenario = q.scenario AND x.customer_id = q.customer_id
                    AND x.obs = q.obs))::numeric, 1) AS mean_age_newest_days,
       round(100.0 * (SELECT avg((x.label_obs + interval '30 days' > x.obs)::int) FROM hist x
                      WHERE x.name = h.name AND x.scenario = q.scenario), 1) AS pct_labels_window_open
FROM horizon h, seq q
GROUP BY h.name, q.scenario ORDER BY h.name DESC, q.scenario;
SQL
echo "machine load: $(cut -d' ' -f1-3 /proc/loadavg)"
