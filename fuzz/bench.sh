#!/bin/sh
# Run every libFuzzer target (fuzz/fuzz.sh) for RUNS executions (default
# 10 M) or SECONDS (default 14400) each, whichever comes first, one after
# the other under nice, and print a Markdown table of what each did:
# executions, time, exec/s (of the wall clock, and per second of the
# fuzzer's own CPU time: what the machine's load does not change), the
# load average during the run (the mean of the 1-minute figure sampled every
# 10 s), coverage (cov, ft), corpus size and findings.
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
	cpu=$(cat "$work/$1.cpu" 2>/dev/null)
	cpurate=?
	[ -n "$cpu" ] && [ "${execs:-0}" -gt 0 ] && cpurate=$(awk -v e="$execs" -v c="$cpu" 'BEGIN { printf "%d", (c > 0 ? e / c : 0) }')
	load=$(awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print "?" }' "$work/$1.load")
	printf '| %s | %s | %s s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "${execs:-?}" "$t" "${rate:-?}" \
		"$cpurate" "$load" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$found"
}

echo "| target | executions | time | exec/s | exec per CPU-second | load average | cov | ft | corpus | findings |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for t in $targets; do
	: > "$work/$t.load"
	mkdir -p "$work/$t"
	(while :; do cut -d' ' -f1 /proc/loadavg >> "$work/$t.load"; sleep 10; done) &
	sampler=$!
	# the fuzzer's CPU time (user + system): fuzz.sh's "fuzz: cpu" line.
	# libFuzzer's -timeout is of the wall clock: at nice 19 on a loaded
	# machine inputs of milliseconds went unscheduled for 15 s, then (with
	# 120) for 135 and 141 s (session 11), so 600 s here (FUZZ_TIMEOUT
	# overrides); a hang is still one.
	FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-600} FUZZ_CPU_FILE="$work/$t.cpu" nice "$here/fuzz.sh" "$t" "$secs" \
		"$here/../../shared/rxe-peer/pcaps" "$work/$t" "$runs" > "$work/$t.out" 2>&1
	rc=$?
	kill "$sampler"
	wait "$sampler" 2>/dev/null
	row "$t" $rc
done
echo "(work dir $work)"
