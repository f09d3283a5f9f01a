# test/tap.sh: TAP-style helpers for the shell-driven suites (reliability,
# security).  Sourced; the suite sets $db before calling q/check.
failed=0
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
not_ok() { n=$((n+1)); failed=$((failed+1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "#   ${2//$'\n'/$'\n#   '}"; }
expect() { # expect "description" condition-result(0/1) detail
	if [ "$2" -eq 1 ]; then ok "$1"; else not_ok "$1" "$3"; fi
}
q() { psql -X -qAt -d "$db" -c "$1" 2>&1; }
check() { # check "description" "SQL returning t"
	local got
	got=$(psql -X -qAt -d "$db" -c "$2" 2>&1)
	if [ "$got" = "t" ]; then ok "$1"; else not_ok "$1" "got: $got"; fi
}
wait_for() { # wait_for "SQL returning t" seconds
	for _ in $(seq 1 $((${2:-60} * 5))); do
		[ "$(q "$1")" = "t" ] && return 0
		sleep 0.2
	done
	return 1
}
slot_of() { # slot_of PID: "threads ended_us" of the backend's forward slot (serving_threads.c), or nothing
	od -A n -t u4 -w64 -v "$HW_CLUSTER_DIR"/data/pg_headwater/forward_slots_* 2>/dev/null |
		awk -v pid="$1" '$1 == pid { printf "%d %.0f\n", $2, $3 + $4 * 4294967296; exit }'
}
tap_finish() { # prints the plan and returns the suite's status
	echo "1..$n"
	[ "$failed" -eq 0 ]
}
