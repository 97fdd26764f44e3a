#!/bin/bash
# RoCE on a VLAN (issue 20's priority tagging, `vlan` in [port]): two daemons
# on 802.1Q VLAN 100 (scripts/lab.sh -V 100) with pcp = 3, as rxe on a
# VLAN netdev eth0.100. An unmodified ib_write_bw pair and an rping pair
# (rdma_cm through both shims) run between them while tcpdump captures host
# a's veth; then the capture must show every RoCE frame tagged VID 100 with
# PCP 3 (a CNP with cnp_pcp 5: none are expected on a clean veth, the unit
# tests cover them) and every ARP frame of the daemons' addresses tagged VID
# 100; telemetry shows the port's vlan and counts the kernels' untagged
# ARP (their TCP exchange) as another VLAN's (rx_other_vlan).
# TAP output; needs root, perftest, rdmacm-utils, tcpdump and tshark (skips
# otherwise). Run under flock -o /tmp/roce-lab.lock.
set -uo pipefail

SRC=${ROCE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${ROCE_BUILD_DIR:-$SRC/build}
LAB="$SRC/scripts/lab.sh -b $BUILD"
unset LD_LIBRARY_PATH   # the daemons must not load the shims
PRE=()
if [ -n "${INTEG_CHILD_PRELOAD:-}" ]; then
	PRE=(env "LD_PRELOAD=$INTEG_CHILD_PRELOAD" "ASAN_OPTIONS=${INTEG_CHILD_ASAN_OPTIONS:-}")
fi
# rping through both shims (lab.sh sets only the verbs shim's directory)
RCM=(env "LD_LIBRARY_PATH=$BUILD/drivers/verbs-shim:$BUILD/drivers/rdmacm-shim")
W=$(mktemp -d /tmp/roce-vlan-XXXXXX)
L=vlanl
VID=100
PCP=3
CNP_PCP=5
n=0
failed=0
cap_pid=

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() {
	n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift
	for f in "$@"; do [ -f "$f" ] && sed 's/^/# /' "$f" | tail -40; done
}
stop_capture() {
	[ -n "$cap_pid" ] || return 0
	kill -INT "$cap_pid" 2>/dev/null
	wait "$cap_pid" 2>/dev/null
	cap_pid=
}
cleanup() { stop_capture; $LAB -n $L down > /dev/null 2>&1; rm -rf "$W"; }
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP needs root (network namespaces)"; exit 0; fi
for t in ib_write_bw rping tcpdump tshark dpdk-telemetry.py; do
	command -v "$t" > /dev/null || { echo "1..0 # SKIP needs $t"; exit 0; }
done
echo "1..7"

run() { local h=$1; shift; $LAB -n $L run "$h" "${PRE[@]}" "$@"; }
tel() { $LAB -n $L telemetry "$1" "$2" 2>/dev/null; }
stat() { # host counter
	tel "$1" /roce/port/stats,0 | grep -o "\"$2\": [0-9]*" | grep -o '[0-9]*$'
}
wait_listen() {
	local i
	for ((i = 0; i < 150; i++)); do
		ip netns exec "$L-$1" ss -Hltn "sport = :$2" | grep -q LISTEN && return 0
		sleep 0.1
	done
	return 1
}
# both daemons resolved each other (ARP on VLAN 100)
wait_neigh() {
	local i
	for ((i = 0; i < 100; i++)); do
		tel a /roce/neigh | grep -q '198.18.0.12 ' && tel b /roce/neigh | grep -q '198.18.0.11 ' &&
			return 0
		sleep 0.1
	done
	return 1
}

$LAB -n $L down > /dev/null 2>&1
# Only daemon a first: the capture starts before b, so it sees b's ARP at start-up.
if ! LAB_PORT_CONF=$'pcp = '$PCP$'\ncnp_pcp = '$CNP_PCP $LAB -n $L -V $VID -S a up > "$W/up" 2>&1; then
	not_ok "lab on VLAN $VID" "$W/up"
	exit 1
fi
ip netns exec "$L-a" timeout 120 tcpdump -i "$L-a" -n -U -s 160 -w "$W/a.pcap" \
	> /dev/null 2> "$W/tcpdump.err" &
cap_pid=$!
for ((i = 0; i < 100; i++)); do grep -q "listening on" "$W/tcpdump.err" && break; sleep 0.1; done
if ! $LAB -n $L start b > "$W/start" 2>&1 || ! wait_neigh; then
	not_ok "daemon b on VLAN $VID resolves a and a resolves b" "$W/start" "$W/tcpdump.err"
	exit 1
fi
info_a=$(tel a /roce/port/info,0)
info_b=$(tel b /roce/port/info,0)
if echo "$info_a" | grep -q "\"vlan\": $VID" && echo "$info_b" | grep -q "\"vlan\": $VID" &&
	echo "$info_a" | grep -q "\"pcp\": $PCP" && tel a /roce/port/gids,0 | grep -q "\"vlan\": $VID"; then
	ok "telemetry: port and GIDs on VLAN $VID, pcp $PCP, neighbours resolved over it"
else
	echo "a: $info_a" > "$W/info"; echo "b: $info_b" >> "$W/info"
	not_ok "telemetry shows vlan $VID" "$W/info"
fi

# ib_write_bw: unmodified perftest through the verbs shim (TCP exchange over the kernels' untagged addresses)
run a timeout 60 ib_write_bw -d dpdk_roce0 -s 4096 -n 2000 > "$W/bw.s" 2>&1 &
sp=$!
wait_listen a 18515
run b timeout 60 ib_write_bw -d dpdk_roce0 -s 4096 -n 2000 198.18.0.1 > "$W/bw.c" 2>&1
rc=$?
wait $sp
rs=$?
if [ $rc = 0 ] && [ $rs = 0 ] && grep -qE "^ *4096 +2000 +[0-9.]+ +[0-9.]+" "$W/bw.c"; then
	ok "ib_write_bw on VLAN $VID: $(grep -E '^ *4096 +2000' "$W/bw.c" | awk '{ print $4 }') MB/s"
else
	not_ok "ib_write_bw on VLAN $VID (client $rc, server $rs)" "$W/bw.c" "$W/bw.s"
fi

# rping: rdma_cm (CM MADs on QP1) and its RC QP over the VLAN
run a "${RCM[@]}" timeout 60 rping -s -a 198.18.0.11 -C 20 -V > "$W/rping.s" 2>&1 &
sp=$!
sleep 0.5
run b "${RCM[@]}" timeout 60 rping -c -a 198.18.0.11 -C 20 -V > "$W/rping.c" 2>&1
rc=$?
wait $sp
rs=$?
if [ $rc = 0 ] && [ $rs = 0 ]; then
	ok "rping -C 20 -V on VLAN $VID (rdma_cm)"
else
	not_ok "rping on VLAN $VID (client $rc, server $rs)" "$W/rping.c" "$W/rping.s"
fi
sleep 0.3
stop_capture

# The capture: RoCE frames (UDP 4791) with their tag, BTH opcode; ARP of the daemons' addresses.
tshark -r "$W/a.pcap" -n -Y "udp.dstport == 4791" -T fields -E separator=' ' -E occurrence=f \
	-e vlan.id -e vlan.priority -e infiniband.bth.opcode > "$W/roce" 2> "$W/tshark.err"
total=$(wc -l < "$W/roce")
data=$(awk -v v=$VID -v p=$PCP '$1 == v && $2 == p && $3 != 129' "$W/roce" | wc -l)
cnp=$(awk -v v=$VID -v p=$CNP_PCP '$1 == v && $2 == p && $3 == 129' "$W/roce" | wc -l)
if [ "$total" -ge 2000 ] && [ $((data + cnp)) = "$total" ]; then
	ok "every one of $total RoCE frames tagged VID $VID, PCP $PCP ($cnp CNPs at PCP $CNP_PCP)"
else
	awk -v v=$VID '!($1 == v)' "$W/roce" | sort | uniq -c | head -20 > "$W/bad"
	echo "total $total, data $data, cnp $cnp" >> "$W/bad"
	not_ok "every RoCE frame tagged VID $VID with PCP $PCP" "$W/bad" "$W/tshark.err"
fi
mads=$(tshark -r "$W/a.pcap" -n -Y "udp.dstport == 4791 && infiniband.bth.destqp == 1" \
	-T fields -e vlan.id 2> /dev/null | grep -c "^$VID$")
if [ "$mads" -ge 4 ]; then
	ok "rdma_cm's MADs (QP1) on VLAN $VID: $mads"
else
	not_ok "CM MADs tagged VID $VID: $mads" "$W/tshark.err"
fi
tshark -r "$W/a.pcap" -n -Y "arp.src.proto_ipv4 in {198.18.0.11 198.18.0.12}" -T fields \
	-E separator=' ' -e vlan.id -e arp.opcode > "$W/arp" 2>> "$W/tshark.err"
arp=$(wc -l < "$W/arp")
arp_tagged=$(awk -v v=$VID '$1 == v' "$W/arp" | wc -l)
if [ "$arp" -ge 2 ] && [ "$arp" = "$arp_tagged" ] && grep -q " 1$" "$W/arp" && grep -q " 2$" "$W/arp"; then
	ok "ARP requests and replies of the daemons: all $arp tagged VID $VID"
else
	not_ok "daemons' ARP tagged VID $VID ($arp_tagged of $arp)" "$W/arp" "$W/tshark.err"
fi
# The kernels' own ARP for the perftest TCP exchange is untagged: not the daemons' (rx_other_vlan).
oa=$(stat a rx_other_vlan); ob=$(stat b rx_other_vlan)
if [ "${oa:-0}" -ge 1 ] && [ "${ob:-0}" -ge 1 ]; then
	ok "the kernels' untagged ARP is left alone and counted (rx_other_vlan a=$oa b=$ob)"
else
	echo "rx_other_vlan a=$oa b=$ob" > "$W/o"
	not_ok "untagged frames counted in rx_other_vlan on both" "$W/o"
fi
exit $failed
