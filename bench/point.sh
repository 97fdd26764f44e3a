#!/bin/bash
# bench/point.sh: one roce-perftest point over a running lab, with what
# every counter of both daemons did meanwhile (retransmits, drops by reason,
# NAKs, ethdev imissed/oerrors, tx_drops, worker polls and idle backoffs).
#
#   bench/point.sh [-n LAB] [-b BUILD] [-t SEC] TEST SIZE [PERFTEST_ARG...]
#
#   -n LAB    lab name (scripts/lab.sh -n) [POINT_LAB, default rlab]
#   -b BUILD  build with app/perftest [default: the one the lab was brought up with]
#   -t SEC    perftest -D SEC [POINT_SEC, 3]
#   -c CPUS   run both perftest processes under taskset -c CPUS [POINT_CPUS],
#             e.g. 0: off the CPU of daemon a's worker (scripts/lab.sh: 1)
# TEST is write_bw, read_bw or send_bw. Server on host b, client on host a
# (to b's kernel address), each under a timeout; the client's CSV row, the
# counter deltas of both daemons and the CPU time each daemon used (user +
# system, all its threads, /proc/PID/stat) per frame it sent or received are
# printed: a cost that scheduling noise does not change much, unlike Gb/s. Root; the lab must be up
# (scripts/lab.sh -n LAB -b BUILD up). Exit status: the client's.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
LAB_NAME=${POINT_LAB:-rlab}
SEC=${POINT_SEC:-3}
BUILD_ARG=()
CPUS=${POINT_CPUS:-}

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while getopts "n:b:t:c:h" opt; do
	case $opt in
	n) LAB_NAME=$OPTARG ;;
	b) BUILD_ARG=(-b "$OPTARG") ;;
	t) SEC=$OPTARG ;;
	c) CPUS=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { usage >&2; exit 2; }
TEST=$1 SIZE=$2
shift 2
case $TEST in write_bw|read_bw|send_bw) ;; *) echo "point: TEST: write_bw, read_bw or send_bw" >&2; exit 2 ;; esac
[[ $SIZE =~ ^[0-9]+$ && $SEC =~ ^[0-9]+$ ]] && [ "$SEC" -ge 1 ] && [ "$SEC" -le 60 ] ||
	{ echo "point: bad SIZE or -t" >&2; exit 2; }
PIN=()
if [ -n "$CPUS" ]; then
	[[ $CPUS =~ ^[0-9]+([,-][0-9]+)*$ ]] || { echo "point: bad -c '$CPUS'" >&2; exit 2; }
	PIN=(taskset -c "$CPUS")
fi

LAB=("$SRC/scripts/lab.sh" -n "$LAB_NAME" "${BUILD_ARG[@]}")
STATE=${LAB_STATE:-/tmp/roce-lab}/$LAB_NAME
BUILD=${BUILD_ARG[1]:-$(sed -n 's/^LAB_BUILD=//p' "$STATE/lab.env" 2>/dev/null)}
PERFTEST=$(cd "$BUILD" 2>/dev/null && pwd)/app/perftest/roce-perftest
[ -x "$PERFTEST" ] || { echo "point: no $PERFTEST (lab $LAB_NAME up? -b?)" >&2; exit 2; }
TMP=$(mktemp -d /tmp/roce-point.XXXXXX) || exit 2
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill -INT "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

ARGS=(-s "$SIZE" -D "$SEC" --report_gbits --output csv "$@")
LIMIT=$((SEC * 3 + 30))
CNT=("$SRC/bench/roce_counters.py")
# utime + stime of daemon h, in clock ticks
cpu_ticks() { # host
	local pid
	pid=$(cat "$STATE/$1.pid" 2>/dev/null) || return 0
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null
}
CPU_A0=$(cpu_ticks a) CPU_B0=$(cpu_ticks b)
"${CNT[@]}" snap "$LAB_NAME-a" "$LAB_NAME-b" > "$TMP/before"
timeout -s INT $LIMIT "${LAB[@]}" run b "${PIN[@]}" "$PERFTEST" "$TEST" "${ARGS[@]}" > "$TMP/server" 2>&1 &
SRV=$!
for _ in $(seq 100); do
	ip netns exec "$LAB_NAME-b" ss -ltnH 'sport = :18515' 2>/dev/null | grep -q . && break
	sleep 0.1
done
timeout -s INT $LIMIT "${LAB[@]}" run a "${PIN[@]}" "$PERFTEST" "$TEST" "${ARGS[@]}" 198.18.0.2 > "$TMP/client" 2>&1
RC=$?
wait "$SRV" 2>/dev/null
SRV=""
"${CNT[@]}" snap "$LAB_NAME-a" "$LAB_NAME-b" > "$TMP/after"
CPU_A1=$(cpu_ticks a) CPU_B1=$(cpu_ticks b)
grep -m1 '^test,' "$TMP/client"
grep -m1 ',client,' "$TMP/client" || { echo "point: client failed ($RC):"; tail -5 "$TMP/client"; }
"${CNT[@]}" delta "$TMP/before" "$TMP/after" | tee "$TMP/delta"
# CPU per frame handled (sent + received by its port)
HZ=$(getconf CLK_TCK)
for h in a b; do
	c0=CPU_${h^^}0 c1=CPU_${h^^}1
	[ -n "${!c0}" ] && [ -n "${!c1}" ] || continue
	frames=$(sed -n "s/^$LAB_NAME-$h:.* eth_ipackets=\([0-9]*\).* eth_opackets=\([0-9]*\).*/\1 \2/p" "$TMP/delta" |
		awk '{ print $1 + $2 }')
	awk -v h="$h" -v t=$((${!c1} - ${!c0})) -v hz="$HZ" -v f="${frames:-0}" 'BEGIN {
		printf "cpu %s: %.2f s, %s frames, %.2f us per frame\n", h, t / hz, f, (f > 0 ? 1e6 * t / hz / f : 0) }'
done
exit $RC
