#!/usr/bin/env bash
# bench/future_parents.sh: does the demo's churn AUROC depend on parents from
# after the observation time?  (sampler option future_parents, docs/sampler.md)
#
#   bash bench/future_parents.sh [steps] [scale] [preset] [max_minutes] [seeds]
#
# On the built-in demo shop (rt_demo_shop, seed 42) with the demo's churn
# task (scripts/demo.sql), per seed: trains with future_parents "follow" (the
# sampler before the option: e.g. a customer's first_order_id shows an order
# from inside the label window) and evaluates (rt_evaluate('churn'), test
# split); evaluates the same checkpoints with "hide" (their config edited),
# which shows what the leak adds at evaluation; then trains again from
# scratch with "hide" (the default), same seed and budget, and evaluates.
# One task throughout, so every figure is on the same test rows.
#
# Installs under /tmp/hw_test.lock, then trains from a private copy of the
# library (hw_bench_cluster ... private in scripts/lib.sh: another session's
# `make install` must not replace a mapped headwater.so).  Prints figures with the load average.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"

steps=${1:-300}
scale=${2:-3000}
preset=${3:-tiny}
max_minutes=${4:-5}
seeds=${5:-7}
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "future_parents bench: steps $steps, scale $scale, preset $preset, max_minutes $max_minutes, seeds '$seeds'"
echo "start $(date -u +%FT%TZ), load $(load), commit $(git rev-parse --short HEAD), $(nproc) CPUs"

hw_bench_cluster "${HW_BENCH_PORT:-54339}" private >/dev/null
q() { psql -X -q -v ON_ERROR_STOP=1 -d fp "$@"; }
dropdb --if-exists fp >/dev/null 2>&1
createdb fp
q -o /dev/null -c "SET client_min_messages = warning" -c "CREATE EXTENSION headwater"
hw_bench_private_lib fp
q -o /dev/null -c "SET client_min_messages = warning" -c "SELECT rt_demo_shop('shop', $scale, 42)"
# how many churn seeds the leak touches: no order before the cutoff, a
# first order after it (the parent the sampler used to show)
q -c "SELECT count(*) AS customers,
             count(*) FILTER (WHERE o.ordered_at > '2024-10-01') AS first_order_after_cutoff,
             count(*) FILTER (WHERE o.ordered_at > '2024-10-01' AND o.ordered_at < timestamptz '2024-10-01' + interval '60 days')
               AS first_order_in_label_window
      FROM shop.customers c LEFT JOIN shop.orders o ON o.order_id = c.first_order_id"

q -o /dev/null -c "SET client_min_messages = warning" -c "SELECT rt_create_model('m', 'shop')" \
	-c "SELECT rt_create_task('m', 'churn', query => \$q\$
  SELECT c.customer_id,
         timestamptz '2024-10-01 00:00+00' AS obs_time,
         NOT EXISTS (SELECT 1 FROM shop.orders o
                     WHERE o.customer_id = c.customer_id
                       AND o.ordered_at >= timestamptz '2024-10-01 00:00+00'
                       AND o.ordered_at <  timestamptz '2024-10-01 00:00+00' + interval '60 days') AS churned
  FROM shop.customers c \$q\$)"
# one task (its name keys the split), so every figure is on the same test rows
evaluate() {   # $1: label
	q -At -c "SELECT format('%s: %s %s (baseline %s), %s test rows', '$1', metric, round(model::numeric, 4),
	                        round(baseline::numeric, 4), n_rows)
	          FROM rt_evaluate('churn') WHERE metric IN ('auroc', 'average_precision', 'log_loss')"
}
train() {      # $1: future_parents, $2: seed
	local t0=$(date +%s)
	q -At -c "SET client_min_messages = warning" -c "SELECT format('seed %s, trained %s: steps %s, stopped_on %s, val_loss %s',
	             $2, '$1', r ->> 'steps_done', r ->> 'stopped_on', round((r ->> 'val_loss')::numeric, 4))
	          FROM rt_train('m', steps => $steps, preset => '$preset',
	                        options => '{\"seed\": $2, \"threads\": 1, \"max_minutes\": $max_minutes, \"restart\": true,
	                                     \"future_parents\": \"$1\"}') r"
	echo "  $(( $(date +%s) - t0 )) s, load $(load)"
}
for seed in $seeds; do
	train follow "$seed"
	evaluate "seed $seed, follow-trained, sampled follow"
	# the same checkpoints evaluated without the leak (each psql call is a
	# fresh session: the served model is cached per backend)
	q -o /dev/null -c "UPDATE headwater.checkpoint c SET config = jsonb_set(config, '{future_parents}', '\"hide\"')
	                   FROM headwater.model m WHERE m.model_id = c.model_id AND m.name = 'm'"
	evaluate "seed $seed, follow-trained, sampled hide"
	train hide "$seed"
	evaluate "seed $seed, hide-trained, sampled hide"
done
echo "end $(date -u +%FT%TZ), load $(load)"
