#!/bin/bash
# Instructions per packet of the transport engine, per side, counted with
# callgrind (deterministic): requester -> link -> responder -> ACK -> completer
# for 64 B and 4 KiB RDMA WRITE, SEND and READ (path MTU 4096: one data
# packet per message; and 4 KiB at MTU 1024: four), bursts of 32 messages,
# excluding payload copies (memcpy/memmove/memset self cost is subtracted)
# and CRC (none is computed in the measured functions). "per packet" divides
# by the data packets (requests for WRITE/SEND, responses for READ); the
# side's share of ACKs and its completions are included.
#
# Side A = requester + completer (side_a_* in engine_bench.c), side B =
# responder (side_b_*). "engine" mode counts the engine alone; "wire" mode
# adds header build (roce_build_headers) on the sender and header parse
# (roce_parse_no_icrc) on the receiver.
#
# Usage: bench/engine_callgrind.sh [path/to/engine_bench] [MESSAGES]
# Goal (issue 4): <= 300 instructions per packet per side.
set -euo pipefail

BENCH=${1:-build/bench/engine_bench}
MSGS=${2:-2000}
command -v valgrind >/dev/null || { echo "engine_callgrind: valgrind not installed" >&2; exit 1; }
[ -x "$BENCH" ] || { echo "engine_callgrind: $BENCH not found (build it first)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# total Ir collected minus the self cost of the copy routines
count() { # side op size mode mtu -> "instructions copies packets"
	local side=$1 op=$2 size=$3 mode=$4 mtu=$5 out="$TMP/cg.$1.$2.$3.$4.$5"
	local line
	line=$(valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
		--toggle-collect="side_${side}_*" "$BENCH" "$op" "$size" "$MSGS" "$mode" "$mtu" 2>/dev/null)
	local data_pkts
	data_pkts=$(sed -n 's/.*data_pkts=\([0-9]*\).*/\1/p' <<<"$line")
	callgrind_annotate --threshold=100 --auto=no "$out" 2>/dev/null | awk -v pk="$data_pkts" '
		/PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
		/:[_a-z]*mem(cpy|move|set)[_a-z0-9]* \[/ { v = $1; gsub(",", "", v); copy += v }
		END { printf "%d %d %d\n", total - copy, copy, pk }'
}

printf "%-6s %-6s %-5s %-7s %10s %10s %10s %10s\n" op size mtu mode A/pkt B/pkt copyA/pkt copyB/pkt
row() { # op size mode mtu
	local ia ca pk ib cb
	read -r ia ca pk <<<"$(count a "$1" "$2" "$3" "$4")"
	read -r ib cb _ <<<"$(count b "$1" "$2" "$3" "$4")"
	awk -v op="$1" -v sz="$2" -v mtu="$4" -v mode="$3" -v ia="$ia" -v ib="$ib" -v ca="$ca" \
		-v cb="$cb" -v pk="$pk" 'BEGIN { printf "%-6s %-6s %-5s %-7s %10.1f %10.1f %10.1f %10.1f\n",
		op, sz, mtu, mode, ia / pk, ib / pk, ca / pk, cb / pk }'
}
for mode in engine wire; do
	for op in write send read; do
		row "$op" 64 "$mode" 4096
		row "$op" 4096 "$mode" 4096
		row "$op" 4096 "$mode" 1024
	done
done
echo "goal: <= 300 instructions per packet per side (engine mode; copies and CRC excluded)"
