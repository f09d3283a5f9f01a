#!/usr/bin/env bash
# bench/accuracy/football.sh: headwater against a GBDT on hand-written
# leak-free SQL features and against trivial baselines, on REAL data: the
# international football database (every men's international since 1872,
# its goals and shoot-outs; CC0) and its three temporal entity tasks, on the
# same test rows.
#
#   bench/accuracy/football.sh [minutes] [seeds] [data dir]
#       minutes   headwater's training budget per seed (rt_train option
#                 max_minutes, steps left out: the budget drives the run);
#                 default 30 (on the CPU)
#       seeds     default "1 2 3": headwater's rt_train seed, XGBoost's seed
#       data dir  the football database's folder (README.md, load.sh,
#                 tasks.sql and the CSVs); default $FB_DATA, else
#                 ../shared/data/football beside the repository.  It is not
#                 shipped with the repository: without it the benchmark
#                 stops with an error saying where it looked.
#   environment: FB_DATA (the data dir), FB_OUT (results folder; default a
#   new /tmp/headwater_football.*), FB_PORT (the throwaway cluster's port,
#   default 54339), FB_PRESET (rt_train preset, default auto), FB_STEPS
#   (rt_train steps; default: left out, the budget alone), FB_OPTIONS
#   (more rt_train options, JSON members without braces, for experiments;
#   the method's label says so), FB_MODEL_SQL (SQL run after the model and
#   its tasks are made, before training, for experiments such as
#   rt_set_column_type; the method's label says so).  With PGHOST set it uses that server
#   instead of a throwaway cluster (database fb_acc, dropped and recreated).
#
# Example smoke run (each stage, a tiny budget):
#   FB_PRESET=tiny nice -n 19 bench/accuracy/football.sh 1 "1"
#
# Tasks (football_task.<task>_{train,val,test}, the data's tasks.sql, split by
# observation time: train windows end by 2016, val 2016-2019, test 2020-2024):
#   team_unbeaten  boolean, AUROC: a team loses none of its matches in (T, T+90 days]
#   team_goals     numeric, MAE:   its goals per match in (T, T+365 days]
#   player_scores  boolean, AUROC: a scorer of the last 3 years scores in (T, T+365 days]
# headwater: defaults through the SQL API, as a new user: one model over
#   schema football with all three tasks (football_model.sql: query tasks from
#   the task tables with their `split` column and label_horizon), rt_train
#   per seed from scratch, then rt_predict_table over each test table
#   (football_preds.sql); the metric is computed here (football_score.py) on
#   the test rows.
# GBDT: gbdt.py (XGBoost, small grid, early stopping on val) on
#   football_features.sql (only matches and goals dated <= obs_time).
# Trivial: train positive rate / train mean and median (gbdt.py) and the
#   entity's own last-year value (football_score.py).
# report.md: a table per task (per seed, mean ± std), the paired bootstrap
#   interval of headwater - GBDT on the same test rows (paired.py), the
#   player task within and between teams (football_coverage.py, from
#   player_team.csv), the machine, the date, the commit and the command.
# Needs python3-xgboost (installed with apt-get when root).  Not part of CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/lib.sh"
cd "$HW_ROOT"
command_line="bench/accuracy/football.sh$(printf ' %q' "$@")"
minutes=${1:-30}
seeds=${2:-"1 2 3"}
data=${3:-${FB_DATA:-$HW_ROOT/../shared/data/football}}
preset=${FB_PRESET:-auto}
steps=${FB_STEPS:-NULL}
extra_options=${FB_OPTIONS:-}
for f in load.sh load.sql tasks.sql results.csv goalscorers.csv shootouts.csv; do
	if [ ! -f "$data/$f" ]; then
		echo "FATAL: the football database is not at '$data' ($f missing): pass its folder as the third" \
			"argument or set FB_DATA (it holds README.md, load.sh, tasks.sql and the CSVs)" >&2
		exit 1
	fi
done
data=$(cd "$data" && pwd)
py=/usr/bin/python3
if ! $py -c 'import xgboost, numpy' 2>/dev/null; then
	[ "$(id -u)" -eq 0 ] || { echo "FATAL: needs python3-xgboost (apt-get install python3-xgboost)" >&2; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-xgboost >/dev/null
fi
out=${FB_OUT:-$(mktemp -d /tmp/headwater_football.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
res=$out/results.tsv
: > "$res"
rm -f "$out"/preds_*.csv
load() { cut -d' ' -f1-3 /proc/loadavg; }
commit=$(git -C "$HW_ROOT" rev-parse --short HEAD)$(git -C "$HW_ROOT" diff --quiet HEAD -- src sql cuda 2>/dev/null || echo "+local changes")
echo "football accuracy bench: $minutes min per seed, seeds '$seeds', preset $preset, steps ${FB_STEPS:-by the budget}${extra_options:+, options $extra_options}"
echo "start $(date -u +%FT%TZ), load $(load), data $data, results in $out, commit $commit"

# A throwaway cluster serving a private copy of this build's library (as
# run.sh: another `make install` on a shared machine must not swap the
# library under a long training run).  The server log is kept with the results.
HW_BENCH_ON_EXIT='cp "$HW_BENCH_DIR/server.log" "$out/server.log" 2>/dev/null'
hw_bench_cluster "${FB_PORT:-54339}" private
export PGTZ=UTC
db=fb_acc
q() { psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }
dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
q -c "SET client_min_messages = warning" -c "CREATE EXTENSION headwater"
hw_bench_private_lib "$db"
t0=$(date +%s)
bash "$data/load.sh" -d "$db" > "$out/load.txt"
cat "$out/load.txt"
echo "loaded in $(( $(date +%s) - t0 )) s"
# each player's team, for football_coverage.py (the player task by team)
q -c "\\copy (SELECT p.player_id, t.name AS team FROM football.player p JOIN football.team t USING (team_id) ORDER BY 1) TO '$out/player_team.csv' WITH (FORMAT csv, HEADER)"

# GBDT, last-value and trivial baselines
t0=$(date +%s)
q -v team_csv="$out/team_features.csv" -v player_csv="$out/player_features.csv" -f "$here/football_features.sql"
echo "features: $(( $(date +%s) - t0 )) s, load $(load)"
t0=$(date +%s)
$py "$here/gbdt.py" "$out/team_features.csv" "$seeds" "$res" "$out/preds_gbdt_team.csv"
$py "$here/gbdt.py" "$out/player_features.csv" "$seeds" "$res" "$out/preds_gbdt_player.csv"
echo "GBDT: $(( $(date +%s) - t0 )) s, load $(load)"

# headwater: one model (all three tasks) per seed, trained from scratch
label="headwater (preset $preset, $minutes min${extra_options:+, $extra_options}${FB_MODEL_SQL:+, after: $FB_MODEL_SQL})"
for seed in $seeds; do
	t0=$(date +%s)
	q -v model=football -c "SET client_min_messages = warning" -f "$here/football_model.sql" > "$out/model_$seed.txt"
	[ -z "${FB_MODEL_SQL:-}" ] || q -c "SET client_min_messages = warning" -c "$FB_MODEL_SQL" >> "$out/model_$seed.txt"
	[ "$seed" = "$(echo $seeds | cut -d' ' -f1)" ] && cat "$out/model_$seed.txt"
	echo "model and tasks: $(( $(date +%s) - t0 )) s"
	t0=$(date +%s); l0=$(load)
	opts="{\"max_minutes\": $minutes, \"seed\": $seed${extra_options:+, $extra_options}}"
	r=$(q -At -c "SET client_min_messages = warning" \
		-c "SELECT rt_train('football', steps => $steps, preset => '$preset', options => '$opts')")
	echo "$r" > "$out/train_$seed.json"
	echo "headwater seed $seed: $(echo "$r" | $py -c 'import json,sys; r=json.load(sys.stdin); print("steps", r["steps_done"], "stopped_on", r["stopped_on"], "wall_s", r["wall_s"], "tokens/s", r["tokens_per_s"], "serving", {k: (v["step"], v.get("weights"), v["metric"], round(v["value"], 4) if v["value"] is not None else None) for k, v in r["serving"].items()})')"
	echo "  train $(( $(date +%s) - t0 )) s, load before $l0, after $(load)"
	t0=$(date +%s)
	q -v model=football -v seed="$seed" -v dump="$out/preds_hw_$seed.csv" -f "$here/football_preds.sql"
	echo "  predict the test rows $(( $(date +%s) - t0 )) s"
	q -o /dev/null -c "SELECT rt_drop_model('football')"
done
$py "$here/football_score.py" "$label" "$out/team_features.csv" "$out/player_features.csv" "$res" "$out"/preds_hw_*.csv
echo "end $(date -u +%FT%TZ), load $(load)"

{ echo "# headwater vs a GBDT vs trivial baselines on the football database"
  echo
  echo "- command: \`$command_line\`${FB_PRESET:+ (FB_PRESET=$FB_PRESET)}${FB_OPTIONS:+ (FB_OPTIONS=$FB_OPTIONS)}${FB_MODEL_SQL:+ (FB_MODEL_SQL=$FB_MODEL_SQL)}"
  echo "- date: $(date -u +%F), commit $commit"
  echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs"
  echo "- data: $(sed -n 's/^Source: //p' "$data/README.md" | head -1)"
  echo "- headwater: one model (all three tasks), preset $preset, max_minutes $minutes per seed, seeds $seeds"
  $py "$here/report.py" "$res"
  echo
  echo "== headwater vs the GBDT, paired on the test rows"
  $py "$here/paired.py" "$out"/preds_hw_*.csv "$out"/preds_gbdt_*.csv
  echo
  echo "== player_scores within and between teams"
  $py "$here/football_coverage.py" "$out" "$data"
} | tee "$out/report.md"
