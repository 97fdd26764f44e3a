#!/bin/bash
# Jumbo frames in 2 KiB mbufs (issue 17): two daemons on net_memif at IP MTU
# 9000 with rx_mbuf_size = 2048, so every 4096-byte RoCE frame arrives in
# several mbufs (memif chains them: DPDK 22.11's net_af_packet drops a frame
# longer than its mbuf and net_af_xdp carries at most 3456 bytes, so neither
# can scatter). Checks: RoCE MTU 4096, ib_write_bw both ways at -m 4096,
# ibv_rc_pingpong with data validation, every large frame counted as
# rx_multiseg and none dropped; and a PMD that cannot scatter refuses the
# setting with a clear error. TAP output; needs root, ibverbs-utils and
# perftest (skips otherwise). Run under flock -o /tmp/roce-lab.lock.
set -uo pipefail

W=$(mktemp -d /tmp/roce-scatter-XXXXXX)
L=lnkj
# shellcheck source=lab_tap.sh
. "$(dirname "$0")/lab_tap.sh"
cleanup() { $LAB -n $L down > /dev/null 2>&1; rm -rf "$W"; }
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP needs root (network namespaces)"; exit 0; fi
for t in ibv_devinfo ibv_rc_pingpong ib_write_bw dpdk-telemetry.py; do
	command -v "$t" > /dev/null || { echo "1..0 # SKIP needs $t"; exit 0; }
done
echo "1..6"

pair() { # port server-and-client command...; outputs in $W/s, $W/c
	local port=$1 pid rs rc
	shift
	run a timeout 60 "$@" > "$W/s" 2>&1 &
	pid=$!
	wait_listen a "$port"
	run b timeout 60 "$@" 198.18.0.1 > "$W/c" 2>&1
	rc=$?
	wait "$pid"
	rs=$?
	[ "$rc" = 0 ] && [ "$rs" = 0 ]
}

$LAB -n $L down > /dev/null 2>&1
if ! LAB_PORT_CONF="rx_mbuf_size = 2048" $LAB -n $L -p memif -m 9000 up > "$W/up" 2>&1; then
	not_ok "memif lab at mtu 9000 with 2 KiB RX mbufs" "$W/up"
	exit 1
fi
mtus=$(for h in a b; do run $h ibv_devinfo -d dpdk_roce0 | awk '/active_mtu/ { print $2 }'; done | tr '\n' ' ')
if [ "$mtus" = "4096 4096 " ]; then ok "RoCE active_mtu 4096 on both hosts"
else echo "active_mtu: $mtus" > "$W/m"; not_ok "RoCE active_mtu 4096 on both hosts" "$W/m"; fi

m0a=$(stat a rx_multiseg); m0b=$(stat b rx_multiseg)
if pair 18515 ib_write_bw -b -m 4096 -s 65536 -n 500 &&
	grep -qE "^ *65536 +500 +[0-9.]+ +[0-9.]+" "$W/c"; then
	ok "ib_write_bw both ways, 4096-byte frames, 64 KiB messages"
else
	not_ok "ib_write_bw both ways at -m 4096" "$W/c" "$W/s"
fi
m1a=$(stat a rx_multiseg); m1b=$(stat b rx_multiseg)
# 500 x 64 KiB = 8000 frames of 4096 payload bytes each way
if [ $((m1a - m0a)) -ge 8000 ] && [ $((m1b - m0b)) -ge 8000 ]; then
	ok "every large frame arrived in several mbufs and was made whole (a +$((m1a - m0a)), b +$((m1b - m0b)))"
else
	echo "rx_multiseg a $m0a -> $m1a, b $m0b -> $m1b" > "$W/m"
	not_ok "large frames counted as rx_multiseg on both hosts" "$W/m"
fi
if pair 18520 ibv_rc_pingpong -g 1 -p 18520 -m 4096 -s 16384 -n 200 -c &&
	grep -q "200 iters" "$W/c"; then
	ok "ibv_rc_pingpong -m 4096 -s 16384 with data validation (-c)"
else
	not_ok "ibv_rc_pingpong -m 4096 -s 16384 -c" "$W/c" "$W/s"
fi
drops=$(( $(stat a rx_multiseg_drops) + $(stat b rx_multiseg_drops) + $(stat a rx_drops) + $(stat b rx_drops) ))
if [ "$drops" = 0 ]; then ok "no frame dropped (rx_multiseg_drops, rx_drops)"
else echo "drops: $drops" > "$W/m"; not_ok "no frame dropped" "$W/m"; fi
$LAB -n $L down > /dev/null 2>&1

# a PMD without scatter RX: a clear error at start-up
$LAB -n $L down > /dev/null 2>&1
if ! LAB_PORT_CONF="rx_mbuf_size = 2048" $LAB -n $L -p af_packet -m 4200 up > "$W/up" 2>&1 &&
	grep -q "rx_mbuf_size = 2048 is below the largest frame.*no scatter" "$W/up"; then
	ok "net_af_packet refuses rx_mbuf_size below the frame, saying why"
else
	not_ok "net_af_packet refuses rx_mbuf_size below the frame" "$W/up"
fi
exit $failed
