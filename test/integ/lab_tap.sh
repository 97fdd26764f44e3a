# Sourced by the lab test scripts of test/integ (not run): the lab command,
# TAP reporting and the helpers they share. The script sets L (its lab
# name) and W (its scratch directory) before calling them; n and failed
# count its TAP lines and failures.
# shellcheck shell=bash

SRC=${ROCE_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${ROCE_BUILD_DIR:-$SRC/build}
LAB="$SRC/scripts/lab.sh -b $BUILD"
unset LD_LIBRARY_PATH   # the daemons must not load the shims
# sanitizer builds: the uninstrumented tools load instrumented shims
PRE=()
if [ -n "${INTEG_CHILD_PRELOAD:-}" ]; then
	PRE=(env "LD_PRELOAD=$INTEG_CHILD_PRELOAD" "ASAN_OPTIONS=${INTEG_CHILD_ASAN_OPTIONS:-}")
fi
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
# not_ok DESCRIPTION [FILE...]: the last 40 lines of each file as TAP comments
not_ok() {
	n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift
	for f in "$@"; do [ -f "$f" ] && sed 's/^/# /' "$f" | tail -40; done
}
# run a|b CMD...: on a lab host, with the verbs shim
run() { local h=$1; shift; $LAB -n "$L" run "$h" "${PRE[@]}" "$@"; }
# stat a|b COUNTER: the port counter of that host's daemon
stat() {
	$LAB -n "$L" telemetry "$1" /roce/port/stats,0 2>/dev/null |
		grep -o "\"$2\": [0-9]*" | grep -o '[0-9]*$'
}
# wait_listen a|b PORT: a TCP listener on that host (perftest's server), 15 s at most
wait_listen() {
	local i
	for ((i = 0; i < 150; i++)); do
		ip netns exec "$L-$1" ss -Hltn "sport = :$2" | grep -q LISTEN && return 0
		sleep 0.1
	done
	return 1
}
