#!/usr/bin/env bash
# bench/predict_table.sh: rt_predict_table's speed on a trained model of an
# existing database: rows/s of one call over the first N rows of a query.
#
#   bench/predict_table.sh DB TASK QUERY [ROWS] [ROUNDS]
#       DB      a database with the extension and a trained model
#       TASK    the task to serve ('model.task' or its short name)
#       QUERY   rt_predict_table's query (key columns, optional obs_time),
#               ordered, e.g. 'SELECT player_id, obs_time::timestamptz AS
#               obs_time FROM football_task.player_scores_test ORDER BY 2, 1'
#       ROWS    rows per call (default 1000; the query is cut with LIMIT)
#       ROUNDS  calls (default 2)
#   Connection: the usual PGHOST / PGPORT / PGUSER.  The model is loaded by
#   a first rt_predict before the timed calls.  To compare two builds, run
#   it against one server whose library is switched between runs (a
#   private copy through dynamic_library_path, as scripts/lib.sh
#   hw_bench_cluster ... private does), alternating.
set -euo pipefail
db=${1:?database}
task=${2:?task}
query=${3:?query}
rows=${4:-1000}
rounds=${5:-2}
q() { psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 "$@"; }

limited="SELECT * FROM ($query) q LIMIT $rows"
first=$(q -c "SELECT row_id FROM rt_predict_table('$task', \$q\$$limited\$q\$) LIMIT 1")
echo "task $task, $rows rows a call, first row $first; machine load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
	t=$(q -c "SELECT clock_timestamp()")
	n=$(q -c "SELECT count(*) FROM rt_predict_table('$task', \$q\$$limited\$q\$)")
	s=$(q -c "SELECT extract(epoch FROM clock_timestamp() - '$t'::timestamptz)")
	echo "round $r: $n rows in $(printf '%.2f' "$s") s, $(echo "$n / $s" | bc -l | xargs printf '%.1f') rows/s"
done
