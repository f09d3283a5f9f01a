#!/usr/bin/env bash
# bench/sampler.sh: sampler throughput on real snapshots: the demo shop at
# ~1M rows and ../shared/data/pagila (when present), plus the synthetic
# snapshot of bench/sampler.c.  Prints figures; never decides pass/fail.
#
#   bench/sampler.sh [scale]     default scale 37000 customers (~1.0M rows)
#
# Uses the server in PGHOST/PGPORT when set, else starts a throwaway cluster.
# Snapshots are dumped with rt_snapshot_bytes() to files under
# ${HW_BENCH_DIR:-/tmp/headwater_bench_sampler} and read by bench/bin/sampler.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$HW_ROOT"
scale=${1:-37000}
out=${HW_BENCH_DIR:-/tmp/headwater_bench_sampler}
mkdir -p "$out"

if [ -z "${PGHOST:-}" ]; then
	tmp=$(mktemp -d /tmp/headwater_bench.XXXXXX)
	trap 'hw_cluster_stop "$tmp"; rm -rf "$tmp"' EXIT
	hw_build_install
	hw_cluster_start "$tmp" "${HW_BENCH_PORT:-54349}"
fi
make -s bench/bin/sampler bench/bin/sampler_recency
db=hw_bench_sampler
q() { psql -X -q -At -d "$db" -v ON_ERROR_STOP=1 "$@"; }

if [ ! -s "$out/shop_$scale.snap" ]; then
	dropdb --if-exists "$db" >/dev/null 2>&1
	createdb "$db"
	q -c "SET client_min_messages = warning" -c "CREATE EXTENSION headwater"
	q -c "SET client_min_messages = warning" -c "SELECT rt_demo_shop('shop', $scale)" >/dev/null
	q -c "SET client_min_messages = warning" -c "SELECT rt_create_model('shop', 'shop', '{\"embed_text\": false}')" >/dev/null
	q -c "SELECT encode(rt_snapshot_bytes('shop'), 'base64')" | base64 -d > "$out/shop_$scale.snap"
fi
pagila=${HW_SHARED_DIR:-$HW_ROOT/../shared}/data/pagila
if [ -d "$pagila" ] && [ ! -s "$out/pagila.snap" ]; then
	dropdb --if-exists "${db}_pagila" >/dev/null 2>&1
	createdb "${db}_pagila"
	psql -X -q -d "${db}_pagila" -f "$pagila/pagila-schema.sql" >/dev/null 2>&1 || true
	psql -X -q -d "${db}_pagila" -f "$pagila/pagila-data.sql" >/dev/null 2>&1 || true
	psql -X -q -At -d "${db}_pagila" -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
		-c "CREATE EXTENSION headwater" -c "SELECT rt_create_model('pagila', 'public')" >/dev/null
	psql -X -q -At -d "${db}_pagila" -c "SELECT encode(rt_snapshot_bytes('pagila'), 'base64')" | base64 -d > "$out/pagila.snap"
fi

echo "== demo shop, scale $scale (predict orders.status)"
bench/bin/sampler --snapshot "$out/shop_$scale.snap" --task orders.status --batches 100
if [ -s "$out/pagila.snap" ]; then
	echo "== pagila (predict payment.amount)"
	bench/bin/sampler --snapshot "$out/pagila.snap" --task payment.amount --batches 100
fi
echo "== synthetic shop, 1M rows (predict orders.status)"
bench/bin/sampler --rows 1000000 --batches 100
echo "== recency: customers' latest orders at 2024-10-01 (demo), latest rentals at 2022-09-01 (pagila)"
bench/bin/sampler_recency "$out/shop_$scale.snap" customers orders 1727740800
[ -s "$out/pagila.snap" ] && bench/bin/sampler_recency "$out/pagila.snap" customer rental 1661990400
