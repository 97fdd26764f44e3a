#!/bin/bash
# bench/rate_limit.sh: the engine's packet pacer seen from an application.
# roce-perftest write_bw --pacing-kbps=K calls ibv_modify_qp_rate_limit on its
# RC QP in RTS (the shim turns that into IBV_QP_RATE_LIMIT; the daemon hands
# the rate to the engine's requester). The client on lab host a writes to
# host b for SEC seconds per rate; the asked and the measured rates are
# printed side by side, after an unlimited run (this machine's ceiling).
# (Debian's ib_write_bw cannot be used: its --rate_limit_type=HW sets the
# AV's static_rate, and PP is for raw Ethernet QPs only.)
#
#   bench/rate_limit.sh [-n LAB] [-b BUILD] [-t SEC] [-s SIZE] [MBPS...]
#
#   -n LAB    lab name (scripts/lab.sh -n) [RL_LAB, default rlim]
#   -b BUILD  build directory [build]
#   -t SEC    seconds per rate [3]         -s SIZE  message bytes [4096]
#   MBPS      asked rates in Mb/s [10 100 1000 10000]
#
# "payload" is what roce-perftest reports (message bytes); "wire" adds what the
# pacer charges per packet (lib/xport xport_internal.h XPORT_PACE_OVERHEAD, 96 B
# of headers, FCS, preamble and gap) for packets of the path MTU, so it is
# the figure to compare with the asked rate; "wire/asked" is their ratio. A
# rate above what the machine reaches unlimited cannot be met and is marked.
# Root; brings a lab up and down (scripts/lab.sh); wrap in
# `flock -o /tmp/roce-lab.lock` where other labs may run.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
LAB_NAME=${RL_LAB:-rlim}
BUILD=build
SEC=3
SIZE=4096
OVERHEAD=96 # XPORT_PACE_OVERHEAD

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
while getopts "n:b:t:s:h" opt; do
	case $opt in
	n) LAB_NAME=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	t) SEC=$OPTARG ;;
	s) SIZE=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(10 100 1000 10000)
[[ $SEC =~ ^[0-9]+$ && $SEC -ge 1 && $SEC -le 30 && $SIZE =~ ^[0-9]+$ && $SIZE -ge 64 ]] ||
	{ echo "rate_limit: bad -t or -s" >&2; exit 2; }
for r in "${RATES[@]}"; do
	[[ $r =~ ^[0-9]+$ && $r -ge 1 && $r -le 100000 ]] || { echo "rate_limit: bad rate $r" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "rate_limit: needs root (network namespaces)" >&2; exit 2; }
PT=$(cd "$BUILD" 2>/dev/null && pwd)/app/perftest/roce-perftest
[ -x "$PT" ] || { echo "rate_limit: no $PT (build it)" >&2; exit 2; }

LAB=("$SRC/scripts/lab.sh" -n "$LAB_NAME" -b "$BUILD")
TMP=$(mktemp -d /tmp/roce-ratelimit.XXXXXX) || exit 2
cleanup() { "${LAB[@]}" down >/dev/null 2>&1; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM
"${LAB[@]}" up > "$TMP/lab" 2>&1 || { cat "$TMP/lab" >&2; echo "rate_limit: lab did not come up" >&2; exit 1; }

# The path MTU both ends use: the port's active MTU (ibv_devinfo on host a).
MTU=$("${LAB[@]}" run a ibv_devinfo 2>/dev/null | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' | head -1)
[[ ${MTU:-} =~ ^[0-9]+$ ]] || MTU=1024

# One run; prints the average payload rate in Mb/s ("-" on failure).
run() { # extra client args...
	local limit=$((SEC + 20))
	timeout -s INT $limit "${LAB[@]}" run b "$PT" write_bw -s "$SIZE" -D "$SEC" \
		> "$TMP/server" 2>&1 &
	local spid=$!
	sleep 1
	timeout -s INT $limit "${LAB[@]}" run a "$PT" write_bw -s "$SIZE" -D "$SEC" --report_gbits \
		--output=csv "$@" 198.18.0.2 > "$TMP/client" 2>&1
	local rc=$?
	wait "$spid"
	# CSV: test,connection,role,device,size,iterations,qps,seconds,bw_peak,bw_avg,...
	local gbps
	gbps=$(awk -F, '$3 == "client" { print $10 }' "$TMP/client" | tail -1)
	if [ $rc -ne 0 ] || [ -z "$gbps" ]; then
		cat "$TMP/client" >> "$TMP/failures"
		echo "-"
		return
	fi
	awk -v g="$gbps" 'BEGIN { printf "%.3f", g * 1000 }'
}

wire() { awk -v p="$1" -v m="$MTU" -v o="$OVERHEAD" 'BEGIN { printf "%.3f", p * (m + o) / m }'; }

echo "roce-perftest write_bw ${SIZE} B, ${SEC} s per rate, path MTU ${MTU}, lab ${LAB_NAME}"
CEIL=$(run)
[ "$CEIL" = "-" ] && { echo "rate_limit: the unlimited run failed:" >&2; cat "$TMP/failures" >&2; exit 1; }
printf '%-12s %14s %14s %11s\n' "asked Mb/s" "payload Mb/s" "wire Mb/s" "wire/asked"
printf '%-12s %14s %14s %11s\n' "unlimited" "$CEIL" "$(wire "$CEIL")" "-"
rc=0
for r in "${RATES[@]}"; do
	got=$(run --pacing-kbps=$((r * 1000)))
	if [ "$got" = "-" ]; then
		printf '%-12s %14s %14s %11s\n' "$r" "failed" "-" "-"
		rc=1
		continue
	fi
	w=$(wire "$got")
	note=$(awk -v w="$w" -v c="$(wire "$CEIL")" -v r="$r" \
		'BEGIN { if (r > 0.95 * c) print " (above this machine'"'"'s ceiling)" }')
	printf '%-12s %14s %14s %11s%s\n' "$r" "$got" "$w" \
		"$(awk -v w="$w" -v r="$r" 'BEGIN { printf "%.3f", w / r }')" "$note"
done
[ -s "$TMP/failures" ] && { echo "--- failed runs' client output:"; cat "$TMP/failures"; }
exit $rc
