#!/bin/sh
# Run every libFuzzer target (fuzz/fuzz.sh) for RUNS executions (default
# 10 M) or SECONDS (default 14400) each, whichever comes first, one after
# the other under nice, and print a Markdown table of what each did:
# executions, time, exec/s, coverage (cov, ft), corpus size and findings.
# doc/security.md records these figures.
#
# usage: fuzz/bench.sh [RUNS] [SECONDS] [WORK_DIR] [TARGET...]
#   WORK_DIR keeps one directory per target (binary, corpus, fuzz.log,
#   artifacts); default a new temp dir. A corpus left there by an earlier
#   run is continued.
set -u
here=$(cd "$(dirname "$0")" && pwd)
runs=${1:-10000000}
secs=${2:-14400}
work=${3:-$(mktemp -d /tmp/roce-fuzz-bench.XXXXXX)}
shift 3 2>/dev/null || shift $#
targets=${*:-roce_parse cm_mad xport ctl config neigh}

# one table row from a target's fuzz.log
row() { # target rc
	log="$work/$1/fuzz.log"
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
	found=none
	[ "$2" = 0 ] || found="$(ls "$work/$1" | grep -E '^(crash|timeout|leak|oom)-' | head -3 | tr '\n' ' ')"
	t=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
	[ -n "$t" ] || t=$(( ${execs:-0} / (${rate:-1} > 0 ? ${rate:-1} : 1) ))
	printf '| %s | %s | %s s | %s | %s | %s | %s | %s |\n' "$1" "${execs:-?}" "$t" "${rate:-?}" \
		"${cov:-?}" "${ft:-?}" "${corp:-?}" "$found"
}

echo "| target | executions | time | exec/s | cov | ft | corpus | findings |"
echo "|---|---|---|---|---|---|---|---|"
for t in $targets; do
	nice "$here/fuzz.sh" "$t" "$secs" "$here/../../shared/rxe-peer/pcaps" "$work/$t" "$runs" \
		> "$work/$t.out" 2>&1
	row "$t" $?
done
echo "(work dir $work)"
