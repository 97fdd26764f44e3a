#!/bin/bash
# Congestion testbed: N senders and one receiver, each a network namespace
# with a roce-daemon, joined by a user-space switch (bench/ecn_switch) whose
# port to the receiver is the bottleneck: shaped to -r Mb/s, marking CE
# between K_min and K_max (RED-like), dropping at the tail of its buffer.
# Every sender runs roce-perftest write_bw to the receiver for -T seconds;
# the switch reports queue depth, marks, drops and bytes per sender every
# 10 ms; analyze.py prints per-flow rates, Jain's index, goodput and drops.
#
#   bench/congestion/testbed.sh [options] [MODE...]    MODE: dcqcn delay none (default all)
#     -b DIR   build directory [build]
#     -n N     senders, 2..4 [2]
#     -r MBPS  bottleneck rate [100]
#     -T SEC   traffic time per mode, 2..60 [10]
#     -o DIR   results (CSV, logs, PNG) [/tmp/ecn-testbed]
#     -k/-K/-B BYTES  switch K_min / K_max / buffer [5000 / 50000 / 250000]
#     -p PCT   marking probability at K_max [100]
#     -N US    the receivers' CNP interval (cnp_interval_us) [50]
#     -L MBPS  the hosts' line rate: they pace at it (dcqcn_pace_line) [= -r: an
#              N:1 incast of links as fast as the bottleneck]
#     -D US    cc = delay: the target RTT (delay_target_us) [1500]
#     -S BYTES the pacer's burst (pace_burst_bytes) [4480: 4 frames]
#     -t US    DCQCN's rate increase timer T (dcqcn_timer_us) [4000]
#     -a US    DCQCN's alpha period K (dcqcn_alpha_us) [1000]
#     -f F     DCQCN's fast recovery stages F (dcqcn_f) [1]
#     -e PCT   cc = delay: beta of the decrease (delay_beta_pct) [80]
#     -m MTU   IP MTU of every link and daemon [1500: path MTU 1024]; 4200
#              gives path MTU 4096 (af_packet frames of 4608 bytes)
#
# Needs root. Namespaces ecntb-s1..N, ecntb-r, ecntb-sw; veths ecntbh-*/ecntbw-*;
# addresses 198.18.20.0/24 only. Wrap it in the lab lock as the lab suites:
#   flock -o /tmp/roce-lab.lock bench/congestion/testbed.sh
# Everything it creates is removed on exit; only processes it started are
# signalled, by their PIDs.
set -uo pipefail

BUILD=build N=2 MBPS=100 SECS=10 OUT=/tmp/ecn-testbed KMIN=5000 KMAX=50000 BUF=250000 PMAX=100 CNP_US=50 LINE=
DELAY_US=1500 BURST=4480 TIMER_US=4000 ALPHA_US=1000 F_STAGES=1 BETA=80 MTU=1500
while getopts "b:n:r:T:o:k:K:B:p:N:L:D:S:t:a:f:e:m:h" opt; do
	case $opt in
	b) BUILD=$OPTARG ;; n) N=$OPTARG ;; r) MBPS=$OPTARG ;; T) SECS=$OPTARG ;;
	o) OUT=$OPTARG ;; k) KMIN=$OPTARG ;; K) KMAX=$OPTARG ;; B) BUF=$OPTARG ;; p) PMAX=$OPTARG ;; N) CNP_US=$OPTARG ;; L) LINE=$OPTARG ;;
	D) DELAY_US=$OPTARG ;; S) BURST=$OPTARG ;; m) MTU=$OPTARG ;;
	t) TIMER_US=$OPTARG ;; a) ALPHA_US=$OPTARG ;; f) F_STAGES=$OPTARG ;; e) BETA=$OPTARG ;;
	h) sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
MODES=("$@")
LINE=${LINE:-$MBPS}
[ ${#MODES[@]} -gt 0 ] || MODES=(dcqcn delay none)
[[ $N =~ ^[2-4]$ ]] || { echo "testbed: -n 2..4" >&2; exit 2; }
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 2 ] && [ "$SECS" -le 60 ] || { echo "testbed: -T 2..60" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "testbed: must run as root" >&2; exit 1; }

BUILD=$(cd "$BUILD" && pwd) || exit 1
PY=${PYTHON:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
DAEMON=$BUILD/app/roce-daemon/roce-daemon
PERF=$BUILD/app/perftest/roce-perftest
SWITCH=$BUILD/bench/ecn_switch
TC_OBJ=$BUILD/app/roce-daemon/roce_tc_drop.o
SHIM_DIR=$BUILD/drivers/verbs-shim
for f in "$DAEMON" "$PERF" "$SWITCH"; do [ -x "$f" ] || { echo "testbed: no $f" >&2; exit 1; }; done
mkdir -p "$OUT" || exit 1
STATE=$OUT/state
P=ecntb

hosts() { local i; for ((i = 1; i <= N; i++)); do echo "s$i"; done; echo r; }
kip() { [ "$1" = r ] && echo 198.18.20.100 || echo "198.18.20.${1#s}"; }
dip() { [ "$1" = r ] && echo 198.18.20.110 || echo "198.18.20.$((10 + ${1#s}))"; }

PIDS=()
cleanup() {
	local p h
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	PIDS=()
	for h in $(hosts) sw; do ip netns del "$P-$h" 2>/dev/null; done
	return 0
}
trap 'cleanup; exit 130' INT TERM

net_up() {
	local h n
	ip netns add "$P-sw" || return 1
	ip -n "$P-sw" link set lo up
	for h in $(hosts); do
		n=$P-$h
		ip netns add "$n" || return 1
		ip link add "${P}h-$h" netns "$n" mtu "$MTU" type veth peer name "${P}w-$h" netns "$P-sw" \
			mtu "$MTU" || return 1
		ip -n "$n" link set lo up
		ip netns exec "$n" ethtool -K "${P}h-$h" tx off rx off gro off gso off tso off > /dev/null 2>&1
		ip netns exec "$P-sw" ethtool -K "${P}w-$h" tx off rx off gro off gso off tso off > /dev/null 2>&1
		ip -n "$n" addr add "$(kip "$h")/24" dev "${P}h-$h"
		ip -n "$n" link set "${P}h-$h" up
		ip -n "$P-sw" link set "${P}w-$h" up
		if [ -f "$TC_OBJ" ]; then
			ip netns exec "$n" tc qdisc add dev "${P}h-$h" clsact &&
			ip netns exec "$n" tc filter add dev "${P}h-$h" ingress bpf direct-action \
				obj "$TC_OBJ" sec tc || return 1
		fi
	done
}

write_config() { # host mode
	local h=$1 mode=$2 resolve="" x
	if [ "$h" = r ]; then
		for x in $(hosts); do [ "$x" = r ] || resolve="$resolve${resolve:+, }$(dip "$x")"; done
	else
		resolve=$(dip r)
	fi
	cat > "$STATE/$h.conf" <<EOF
; generated by bench/congestion/testbed.sh
[daemon]
socket = $STATE/$h.sock
lcores = 0@0,1@1
eal_args = --no-huge --no-shconf -m 256 --file-prefix=$P-$h --no-pci
idle = sleep
max_qps = 64
telemetry = no

[port p0]
devargs = net_af_packet0,iface=${P}h-$h,framecnt=2048$([ "$MTU" -gt 1964 ] && echo ",framesz=4608,blocksz=36864")
mtu = $MTU
ipv4 = $(dip "$h")/24
resolve = $resolve
ecn = ect0
cc = $mode
cnp = yes
cnp_interval_us = $CNP_US
; DCQCN scaled to a ${MBPS} Mb/s bottleneck (the paper's values are for 40 GbE;
; tuned with bench/congestion/ccsim, doc/congestion.md section 6)
dcqcn_line_mbps = $LINE
dcqcn_ai_mbps = 1
dcqcn_hai_mbps = 5
dcqcn_timer_us = $TIMER_US
dcqcn_alpha_us = $ALPHA_US
dcqcn_f = $F_STAGES
dcqcn_pace_line = yes
pace_burst_bytes = $BURST
; cc = delay: the target above the path's RTT without a queue (software on a shared
; host: hundreds of us), R_AI scaled as DCQCN's
delay_target_us = $DELAY_US
delay_ai_mbps = 1
delay_beta_pct = $BETA
EOF
}

start_daemon() { # host
	local h=$1
	nice -n -5 ip netns exec "$P-$h" "$DAEMON" --config "$STATE/$h.conf" > "$STATE/$h.log" 2>&1 &
	PIDS+=($!)
}

wait_ready() { # host
	local h=$1 t
	for ((t = 0; t < 300; t++)); do
		grep -q "roce-daemon: ready" "$STATE/$h.log" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "testbed: daemon $h not ready:" >&2
	tail -5 "$STATE/$h.log" >&2
	return 1
}

run_in() { # host CMD...
	local h=$1
	shift
	ip netns exec "$P-$h" env ROCE_DAEMON_SOCKET="$STATE/$h.sock" \
		LD_LIBRARY_PATH="$SHIM_DIR" "$@"
}

run_mode() { # mode
	local mode=$1 h i port swpid
	local -a clients=() servers=()
	echo "== $mode: $N senders, bottleneck $MBPS Mb/s, K_min $KMIN K_max $KMAX P_max $PMAX% buffer $BUF, CNP interval ${CNP_US}us, hosts at $LINE Mb/s, burst $BURST B, DCQCN T ${TIMER_US}us K ${ALPHA_US}us F $F_STAGES, delay target ${DELAY_US}us beta $BETA%, ${SECS}s, load $(cut -d' ' -f1-3 /proc/loadavg)"
	rm -rf "$STATE"
	mkdir -p "$STATE"
	net_up || { echo "testbed: network setup failed" >&2; cleanup; return 1; }
	: > "$OUT/$mode.macs"
	for ((i = 1; i <= N; i++)); do
		echo "s$i $(ip -n "$P-s$i" -o link show "${P}h-s$i" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)" \
			>> "$OUT/$mode.macs"
	done
	# the bottleneck (first interface) is the switch's port to the receiver
	local ifs=("${P}w-r")
	for ((i = 1; i <= N; i++)); do ifs+=("${P}w-s$i"); done
	# the switch stands for hardware: real-time priority when the kernel allows
	# it (it sleeps in ppoll between frames), so a loaded host does not delay
	# its frames and with them every ACK and CNP
	local rt=()
	chrt -f 10 true 2> /dev/null && rt=(chrt -f 10)
	"${rt[@]}" nice -n -5 ip netns exec "$P-sw" "$SWITCH" -r "$MBPS" -k "$KMIN" -K "$KMAX" -p "$PMAX" -b "$BUF" \
		-t $((SECS + 30)) -i 10 -o "$OUT/$mode.switch.csv" "${ifs[@]}" \
		2> "$STATE/switch.log" &
	swpid=$!
	PIDS+=($swpid)
	for h in $(hosts); do write_config "$h" "$mode"; start_daemon "$h"; done
	for h in $(hosts); do wait_ready "$h" || { cleanup; return 1; }; done
	# one write_bw server per sender on the receiver, then the clients
	for ((i = 1; i <= N; i++)); do
		port=$((18600 + i))
		run_in r nice -n 10 "$PERF" write_bw -p "$port" -s 65536 -D "$SECS" \
			--stall-timeout=0 > "$STATE/server$i.log" 2>&1 &
		servers+=($!)
		PIDS+=($!)
	done
	sleep 1
	for ((i = 1; i <= N; i++)); do
		port=$((18600 + i))
		run_in "s$i" nice -n 10 "$PERF" write_bw -p "$port" -s 65536 -D "$SECS" \
			--stall-timeout=0 --output=csv "$(kip r)" > "$OUT/$mode.client$i.csv" \
			2> "$STATE/client$i.log" &
		clients+=($!)
		PIDS+=($!)
	done
	local deadline=$((SECONDS + SECS + 40))
	for i in "${clients[@]}" "${servers[@]}"; do
		while kill -0 "$i" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	done
	kill "$swpid" 2>/dev/null
	wait "$swpid" 2>/dev/null
	for h in $(hosts); do cp "$STATE/$h.log" "$OUT/$mode.$h.log" 2>/dev/null; done
	cp "$STATE/switch.log" "$OUT/$mode.switch.log" 2>/dev/null
	for ((i = 1; i <= N; i++)); do cp "$STATE/client$i.log" "$OUT/$mode.client$i.log"; done
	cleanup
	"$PY" "$HERE/analyze.py" --mode "$mode" --rate "$MBPS" --kmax "$KMAX" --senders "$N" \
		--macs "$OUT/$mode.macs" "$OUT/$mode.switch.csv" "$OUT"/"$mode".client*.csv
}

rc=0
for m in "${MODES[@]}"; do
	case $m in dcqcn|delay|none) ;; *) echo "testbed: mode $m: dcqcn, delay or none" >&2; exit 2 ;; esac
	run_mode "$m" || rc=1
done
"$PY" "$HERE/analyze.py" --plot "$OUT" "${MODES[@]}" || true
exit $rc
