#!/usr/bin/env bash
# bench/sampler_compare.sh: same-run throughput comparison of the sampler of
# another build (OLD: a bench/bin/sampler built from an earlier commit, e.g.
#   git archive 7bb1b9a | tar -x -C /tmp/base && make -C /tmp/base bench/bin/sampler)
# against this tree's, alternated round by round: OLD, this tree with
# --child-sampling uniform --key-cells 1 (the previous sampler's batches),
# the new defaults, and recent + key cells.  Prints figures only.
#
#   bench/sampler_compare.sh OLD_BINARY SNAPSHOT|synthetic TABLE.COLUMN [rounds 3] [threads 1,2] [S 1024]
set -uo pipefail
old=$1; snap=$2; task=$3; rounds=${4:-3}; threads=${5:-1,2}; S=${6:-1024}
new=$(cd "$(dirname "$0")" && pwd)/bin/sampler
make -s -C "$(dirname "$0")/.." bench/bin/sampler
if [ "$snap" = synthetic ]; then src=(--rows 1000000); else src=(--snapshot "$snap" --task "$task"); fi
for r in $(seq 1 "$rounds"); do
	echo "== round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
	"$old" "${src[@]}" --S "$S" --batches 100 --threads "$threads" | grep -E '^threads [0-9]+: [0-9]+ seq' | sed 's/^/base           /'
	"$new" "${src[@]}" --S "$S" --batches 100 --threads "$threads" --no-query-load --child-sampling uniform --key-cells 1 \
		| grep -E '^threads [0-9]+: [0-9]+ seq' | sed 's/^/uniform+kc     /'
	"$new" "${src[@]}" --S "$S" --batches 100 --threads "$threads" --no-query-load \
		| grep -E '^threads [0-9]+: [0-9]+ seq' | sed 's/^/new defaults   /'
	"$new" "${src[@]}" --S "$S" --batches 100 --threads "$threads" --no-query-load --key-cells 1 \
		| grep -E '^threads [0-9]+: [0-9]+ seq' | sed 's/^/recent+kc      /'
done
