#!/usr/bin/env bash
# bench/accuracy/run.sh: headwater vs a GBDT on hand-written leak-free SQL
# features vs a trivial baseline, on the same rows and the same split.
#
#   bench/accuracy/run.sh [steps] [seeds] [scale]
#       steps  headwater's budget per model and seed (default 400: about
#              5 minutes of a quiet 2-core machine per pagila run, small
#              preset at ~0.6 s a step plus validation; the shop at scale
#              20000 takes ~1.25 s a step with validation: 1000 steps ~22 min)
#       seeds  "1 2 3" (headwater's rt_train seed option, XGBoost's seed)
#       scale  demo shop customers (default 20000: 2,000 churn test customers
#              and 4,000 order rows, enough for the paired interval to tell
#              ~0.01 AUROC; at 5000 the interval is about twice as wide)
#   environment: ACC_DBS ("pagila shop": the databases to run), ACC_PRESET
#   (small), ACC_VAL_EVERY (steps/5), ACC_MAX_MINUTES
#   (a safety cap per run, default none; a run it stops says stopped_on
#   max_minutes), ACC_OPTIONS (more rt_train options, JSON members without
#   braces, e.g. '"val_rows": 5000', for experiments; the label says so),
#   ACC_NUM_TASK_OPTIONS (rt_create_task options of the numerical tasks,
#   orders_30d and rentals_21d, as JSON, e.g. '{"loss": "ordinal"}'; default
#   '{}'; the label says so), ACC_MODEL_SQL (SQL run after each model and
#   its tasks are made, before training, for experiments such as
#   rt_set_column_type('acc_pagila', ...); the label says so),
#   ACC_OUT (results folder), HW_BENCH_PORT (54338), ACC_TRAJECTORY (1:
#   after each run, every candidate (checkpoint, weights) with its val and
#   test metric and the one served, trajectory.sql; costs a forward pass
#   over the test rows per candidate, changes no figure), ACC_DUMP (1:
#   every candidate's val and test predictions in candidates_<db>_<seed>.csv,
#   candidates_dump.sql, for ensemble_study.py, threshold_study.py and
#   ranking_study.py), ACC_SEGMENT_SWAP (1: the shop's test rows predicted
#   again with the vip and consumer segments exchanged, in
#   segment_swap_shop_<seed>.csv, shop_segment_swap.sql; read it with
#   segment_swap_study.py).
# The shop also writes shop_customers.csv (shop_customers.sql), and its
#   report adds shop_oracle.py (the Bayes floor of orders_30d) and
#   shop_drift.py (the same rows month by month: the test month is not
#   like the training months).
# Always: every run's served test predictions (test_preds.sql) and the
#   GBDT's (gbdt.py) in preds_*.csv; report.md ends with paired.py's
#   comparison (the difference and its 95% paired-bootstrap interval over
#   the test rows).
#
# Tasks (rows in acc.rows of each database; *_rows.sql say why):
#   pagila  heavy_21d (boolean), rentals_21d (numerical): customer x 4 cutoffs,
#           time split 2 train / 1 val / 1 test cutoff
#   shop    churn (boolean, rt_demo_shop's planted rule, split by customer),
#           orders_30d (numerical): customer x 5 monthly cutoffs, 3/1/1
# headwater: one model per database and seed (both tasks), defaults except
#   val_every/checkpoint_every, trained from scratch, rt_evaluate on test
#   (the task's serving checkpoint: best val metric).
# GBDT: gbdt.py on *_features.sql (only rows dated before obs_time).
# Needs python3-xgboost (installed here with apt-get when root; used only by
# this benchmark).  Not part of CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/lib.sh"
cd "$HW_ROOT"
steps=${1:-400}
seeds=${2:-"1 2 3"}
scale=${3:-20000}
dbs=${ACC_DBS:-pagila shop}
preset=${ACC_PRESET:-small}
val_every=${ACC_VAL_EVERY:-$(( steps / 5 > 10 ? steps / 5 : 10 ))}
max_minutes=${ACC_MAX_MINUTES:-}
extra_options=${ACC_OPTIONS:-}
num_task_options=${ACC_NUM_TASK_OPTIONS:-'{}'}
pagila=${HW_SHARED_DIR:-$HW_ROOT/../shared}/data/pagila
[ -f "$pagila/pagila-schema.sql" ] || { echo "SKIP: $pagila not found"; exit 0; }
py=/usr/bin/python3
if ! $py -c 'import xgboost, numpy' 2>/dev/null; then
	[ "$(id -u)" -eq 0 ] || { echo "FATAL: needs python3-xgboost (apt-get install python3-xgboost)"; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-xgboost >/dev/null
fi
out=${ACC_OUT:-$(mktemp -d /tmp/headwater_acc.XXXXXX)}
mkdir -p "$out"
res=$out/results.tsv
: > "$res"
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "accuracy bench: databases '$dbs', steps $steps, seeds '$seeds', preset $preset, val_every $val_every, max_minutes ${max_minutes:-none}, shop scale $scale${extra_options:+, options $extra_options}"
echo "start $(date -u +%FT%TZ), load $(load), results in $out, commit $(git -C "$HW_ROOT" rev-parse --short HEAD)"

# A throwaway cluster (unless PGHOST is set) serving a private copy of this
# build's library: on a shared machine another `make install` rewrites
# $libdir/headwater.so in place during the hour this runs, which kills a
# training worker that has it mapped (scripts/lib.sh hw_bench_cluster).  The
# server log is kept with the results.
HW_BENCH_ON_EXIT='cp "$HW_BENCH_DIR/server.log" "$out/server.log" 2>/dev/null'
hw_bench_cluster "${HW_BENCH_PORT:-54338}" private
echo "library: $(md5sum "${HW_BENCH_PRIVATE_LIB:+$HW_BENCH_PRIVATE_LIB/headwater.so}" 2>/dev/null || md5sum "$(pg_config --pkglibdir)/headwater.so")"
q() { local db=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }
for db in acc_pagila acc_shop; do
	dropdb --if-exists "$db" >/dev/null 2>&1
	createdb "$db"
done
psql -X -q -d acc_pagila -v ON_ERROR_STOP=0 -o /dev/null -c "SET client_min_messages = error" \
	-f "$pagila/pagila-schema.sql" -f "$pagila/pagila-data.sql" 2>/dev/null
q acc_pagila -c "SET client_min_messages = warning" -c "CREATE EXTENSION headwater" -f "$here/pagila_rows.sql"
q acc_shop -o /dev/null -c "SET client_min_messages = warning" -c "CREATE EXTENSION headwater" \
	-c "SELECT rt_demo_shop('shop', $scale, 42)" -f "$here/shop_rows.sql"
for db in acc_pagila acc_shop; do
	hw_bench_private_lib "$db"
	if [ -n "${HW_BENCH_PRIVATE_LIB:-}" ]; then
		# prove it: the library mapped by a backend that called a headwater function
		psql -X -q -At -d "$db" -c "SELECT * FROM rt_tasks('no_such_model')" \
			-c "SELECT 'library mapped: ' || string_agg(DISTINCT m, ' ') FROM regexp_split_to_table(pg_read_file('/proc/' || pg_backend_pid() || '/maps'), E'\\n') l, LATERAL substring(l FROM '(/\\S*headwater\\.so)') m WHERE m IS NOT NULL" 2>/dev/null
	fi
	q "$db" -c "SELECT task, split, obs_time::date, count(*) AS n, round(avg(label)::numeric, 3) AS mean_label
	            FROM acc.rows GROUP BY 1, 2, 3 ORDER BY 1, 3"
done

# GBDT and trivial baselines
t0=$(date +%s)
for f in $dbs; do
	q "acc_$f" -f "$here/${f}_features.sql" > "$out/${f}_features.csv"
	if [ "$f" = shop ]; then q acc_shop -f "$here/shop_customers.sql" > "$out/shop_customers.csv"; fi
	$py "$here/gbdt.py" "$out/${f}_features.csv" "$seeds" "$res" "$out/preds_gbdt_$f.csv"
done
echo "features + GBDT: $(( $(date +%s) - t0 )) s, load $(load)"

# headwater: one model per database and seed, both tasks, from scratch
opts() {
	local o="\"seed\": $1, \"val_every\": $val_every, \"checkpoint_every\": $val_every"
	[ -n "$max_minutes" ] && o="$o, \"max_minutes\": $max_minutes"
	[ -n "$extra_options" ] && o="$o, $extra_options"
	echo "{$o}"
}
for seed in $seeds; do
	for db in $dbs; do
		q "acc_$db" -o /dev/null -v num_task_options="$num_task_options" -c "SET client_min_messages = warning" \
			-f "$here/${db}_model.sql"
		[ -z "${ACC_MODEL_SQL:-}" ] || q "acc_$db" -o /dev/null -c "SET client_min_messages = warning" -c "$ACC_MODEL_SQL"
		t0=$(date +%s); l0=$(load)
		r=$(q "acc_$db" -At -c "SET client_min_messages = warning" \
			-c "SELECT rt_train('acc_$db', steps => $steps, preset => '$preset', options => '$(opts "$seed")')")
		echo "headwater $db seed $seed: $(echo "$r" | $py -c 'import json,sys; r=json.load(sys.stdin); print("steps", r["steps_done"], "stopped_on", r["stopped_on"], "wall_s", r["wall_s"], "tokens/s", r["tokens_per_s"], "serving", {k: (v["step"], v.get("weights"), round(v["value"], 4) if v["value"] is not None else None) for k, v in r["serving"].items()})')"
		echo "$r" > "$out/train_${db}_$seed.json"
		q "acc_$db" -At -F $'\t' -c "
			SELECT substr(k.task, length('$db') + 2), 'headwater ($preset, $steps steps${extra_options:+, $extra_options}$([ "$num_task_options" != '{}' ] && echo ", tasks $num_task_options")${ACC_MODEL_SQL:+, after: ${ACC_MODEL_SQL//\'/\'\'}})', $seed, e.metric, e.model, e.n_rows
			FROM rt_tasks('acc_$db') k, LATERAL rt_evaluate(k.task) e
			WHERE e.metric IN ('auroc', 'mae')" >> "$res"
		echo "  train + evaluate $(( $(date +%s) - t0 )) s, load before $l0, after $(load)"
		q "acc_$db" -c "SET acc.model = 'acc_$db'" -c "SET acc.seed = $seed" -v dump="$out/preds_hw_${db}_$seed.csv" \
			-f "$here/test_preds.sql"
		if [ -n "${ACC_TRAJECTORY:-}" ]; then
			q "acc_$db" -v model="acc_$db" -f "$here/trajectory.sql" | tee "$out/trajectory_${db}_$seed.txt"
		fi
		if [ -n "${ACC_DUMP:-}" ]; then
			q "acc_$db" -v model="acc_$db" -v dump="$out/candidates_${db}_$seed.csv" -f "$here/candidates_dump.sql"
		fi
		if [ -n "${ACC_SEGMENT_SWAP:-}" ] && [ "$db" = shop ]; then
			q "acc_$db" -o /dev/null -c "SET acc.model = 'acc_$db'" -v dump="$out/segment_swap_${db}_$seed.csv" \
				-f "$here/shop_segment_swap.sql"
		fi
		q "acc_$db" -o /dev/null -c "SELECT rt_drop_model('acc_$db')"
	done
done
echo "end $(date -u +%FT%TZ), load $(load)"
{ $py "$here/report.py" "$res"
  for db in $dbs; do echo; echo "== $db: headwater vs the GBDT, paired on the test rows"; $py "$here/paired.py" "$out"/preds_*_"$db"*.csv; done
  if [[ " $dbs " == *" shop "* ]]; then
	echo; echo "== shop orders_30d: the Bayes floor and where each method loses to it (shop_oracle.py)"
	$py "$here/shop_oracle.py" "$out/shop_customers.csv" "$out"/preds_hw_shop_*.csv "$out/preds_gbdt_shop.csv"
	echo; echo "== shop orders_30d: the rows the methods differ on, month by month (shop_drift.py)"
	(cd "$here" && $py shop_drift.py "$out/shop_customers.csv" "$out"/preds_hw_shop_*.csv "$out/preds_gbdt_shop.csv")
  fi
} | tee "$out/report.md"
