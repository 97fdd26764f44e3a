#!/bin/bash
# Link state on real links (issue 17), TAP output for meson:
#  - veth (net_af_packet): the link goes down under a running ibv_rc_pingpong;
#    every open context (two ibv_asyncwatch) hears IBV_EVENT_PORT_ERR then
#    IBV_EVENT_PORT_ACTIVE, ibv_devinfo and /roce/port/info follow, frames
#    sent meanwhile are counted as tx_link_down, the pingpong's QPs end in
#    "transport retry counter exceeded" as on a pulled cable, and new QPs
#    work once the link is back; a short flap under ib_write_bw (long
#    transport timeout) is survived;
#  - memif (net_memif between the two daemons): the client daemon starts
#    before the server and both ports become ACTIVE; stopping and restarting
#    either daemon flaps the other's port, and traffic runs afterwards.
# Needs root, ibverbs-utils and perftest (skips otherwise). Run under
# flock -o /tmp/roce-lab.lock like every lab suite.
set -uo pipefail

# the lab command, PRE (sanitizer preload), TAP counting, ok/not_ok; it unsets
# LD_LIBRARY_PATH (meson points it at the shim; the daemons must not load it)
. "$(dirname "$0")/lab_tap.sh"
W=$(mktemp -d /tmp/roce-link-XXXXXX)
LABS=()

check() { # description command...
	local what=$1; shift
	if "$@" > "$W/check.out" 2>&1; then ok "$what"; else not_ok "$what" "$W/check.out"; fi
}

cleanup() {
	local l
	for l in "${LABS[@]}"; do $LAB -n "$l" down > /dev/null 2>&1; done
	rm -rf "$W"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP needs root (network namespaces)"; exit 0; fi
for t in ibv_devinfo ibv_asyncwatch ibv_rc_pingpong ib_write_bw dpdk-telemetry.py; do
	command -v "$t" > /dev/null || { echo "1..0 # SKIP needs $t"; exit 0; }
done
echo "1..16"

run() { # lab host cmd...: a verbs program on host through the shim
	local l=$1 h=$2; shift 2
	$LAB -n "$l" run "$h" "${PRE[@]}" "$@"
}
# the same, backgrounded with &: the job's PID is then the program's chain
# (lab.sh, ip netns exec, env and timeout all exec; timeout passes SIGTERM on)
run_bg() {
	local l=$1 h=$2; shift 2
	exec $LAB -n "$l" run "$h" "${PRE[@]}" "$@"
}
state() { run "$1" "$2" ibv_devinfo -d dpdk_roce0 | awk '/state:/ { print $2; exit }'; }
tel() { $LAB -n "$1" telemetry "$2" "$3" 2>/dev/null; }
# wait up to $3 s for host $2's port state to be $4
wait_state() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[ "$(state "$1" "$2")" = "$4" ] && return 0
		sleep 0.1
	done
	echo "host $2: $(state "$1" "$2"), wanted $4"
	return 1
}
# the daemons resolved each other (the lab's `resolve =`), up to 10 s
wait_neigh() {
	local i
	for ((i = 0; i < 100; i++)); do
		tel "$1" a /roce/neigh | grep -q reachable && tel "$1" b /roce/neigh | grep -q reachable &&
			return 0
		sleep 0.1
	done
	return 1
}
wait_listen() { # lab host port
	local i
	for ((i = 0; i < 150; i++)); do
		ip netns exec "$1-$2" ss -Hltn "sport = :$3" | grep -q LISTEN && return 0
		sleep 0.1
	done
	return 1
}
# a pingpong pair a <- b of $2 iterations on TCP port $3; outputs in $W/$1.{s,c}
pingpong() { # lab iters port
	local l=$1 pid rs rc
	run "$l" a timeout 40 ibv_rc_pingpong -g 1 -p "$3" -n "$2" > "$W/$l.s" 2>&1 &
	pid=$!
	wait_listen "$l" a "$3"
	run "$l" b timeout 30 ibv_rc_pingpong -g 1 -p "$3" -n "$2" 198.18.0.1 > "$W/$l.c" 2>&1
	rc=$?
	wait "$pid"
	rs=$?
	[ "$rc" = 0 ] && [ "$rs" = 0 ] && grep -q "$2 iters" "$W/$l.c"
}
# once more if the first failed (a 2-core machine under load can stall a
# daemon), visibly: "# RETRIED:" and meson-logs/retried.txt (doc/testing.md)
pingpong_retry() {
	pingpong "$@" && return 0
	echo "# RETRIED: pingpong on $1: $(tail -1 "$W/$1.c" 2>/dev/null)"
	[ -n "${ROCE_RETRY_LOG:-}" ] && printf 'link_lab\tpingpong on %s failed once\n' "$1" >> "$ROCE_RETRY_LOG"
	sleep 1
	pingpong "$@"
}
# events a watcher printed: "ERR ACTIVE ..."
events() { sed -n 's/.*IBV_EVENT_PORT_\([A-Z]*\).*/\1/p' "$1" | tr '\n' ' '; }
wait_events() { # file expected-prefix seconds
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[[ "$(events "$1")" == "$2"* ]] && return 0
		sleep 0.1
	done
	echo "events in $1: '$(events "$1")', wanted '$2'"
	return 1
}

# ---- veth, net_af_packet ----
L=lnkv
LABS+=("$L")
$LAB -n $L down > /dev/null 2>&1
if ! $LAB -n $L -p af_packet up > "$W/up.out" 2>&1; then
	not_ok "veth lab up" "$W/up.out"
	exit 1
fi
wait_neigh $L
check "veth: ports ACTIVE at start" wait_state $L a 5 PORT_ACTIVE

# two contexts watch a's async events
run $L a timeout 120 ibv_asyncwatch -d dpdk_roce0 > "$W/watch1" 2>&1 &
run $L a timeout 120 ibv_asyncwatch -d dpdk_roce0 > "$W/watch2" 2>&1 &
sleep 0.5
# a long pingpong that the pulled cable interrupts
run_bg $L a timeout 60 ibv_rc_pingpong -g 1 -p 18610 -n 1000000 > "$W/long.s" 2>&1 &
lsrv=$!
wait_listen $L a 18610
run_bg $L b timeout 60 ibv_rc_pingpong -g 1 -p 18610 -n 1000000 198.18.0.1 > "$W/long.c" 2>&1 &
lcli=$!
sleep 1
# frames both daemons dropped for a dead link (whichever side had a send outstanding)
tx_link_down() {
	local h s=0 v
	for h in a b; do
		v=$(tel "$1" $h /roce/port/stats,0 | grep -o '"tx_link_down": [0-9]*' | grep -o '[0-9]*$')
		s=$((s + ${v:-0}))
	done
	echo $s
}
tx_before=$(tx_link_down $L)
ip -n $L-b link set $L-b down
check "veth down: a's port goes DOWN" wait_state $L a 5 PORT_DOWN
tel_link() { tel "$1" "$2" /roce/port/info,0 | grep -q "\"link\": \"$3\""; }
check "veth down: /roce/port/info agrees" tel_link $L a down
both_events() { wait_events "$W/watch1" "$1" 10 && wait_events "$W/watch2" "$1" 10; }
check "veth down: every context hears PORT_ERR" both_events ERR
# past the retry budget (7 x 67 ms) the side with a send outstanding reports
# IBV_WC_RETRY_EXC_ERR (12), as on a pulled cable; the other side may wait for
# a receive forever (so would it on a NIC): stop it then
retried=0
for ((i = 0; i < 150; i++)); do
	grep -q "retry counter exceeded\|status.*(12)" "$W/long.c" "$W/long.s" && { retried=1; break; }
	sleep 0.1
done
sleep 0.5
kill "$lcli" "$lsrv" 2> /dev/null
wait "$lcli"; rcli=$?
wait "$lsrv"; rsrv=$?
if [ "$retried" = 1 ]; then
	ok "veth down: the running pingpong's QPs exhaust their retries (client exit $rcli, server $rsrv)"
else
	not_ok "veth down: the running pingpong's QPs exhaust their retries (client exit $rcli)" \
		"$W/long.c" "$W/long.s"
fi
tx_after=$(tx_link_down $L)
check "veth down: frames sent meanwhile are counted as tx_link_down (${tx_before:-?} -> ${tx_after:-?})" \
	test "${tx_after:-0}" -gt "${tx_before:-0}"
ip -n $L-b link set $L-b up
both_state() { wait_state "$1" a "$2" "$3" && wait_state "$1" b "$2" "$3"; }
check "veth up: a's and b's ports ACTIVE again" both_state $L 5 PORT_ACTIVE
check "veth up: every context hears PORT_ERR then PORT_ACTIVE" both_events "ERR ACTIVE"
check "veth up: new QPs work (pingpong)" pingpong_retry $L 300 18611
# a short flap under a stream with a long transport timeout (-u 18: ~1 s per try)
run $L a timeout 40 ib_write_bw -D 6 -u 18 -s 4096 > "$W/bw.s" 2>&1 &
bsrv=$!
wait_listen $L a 18515
run $L b timeout 40 ib_write_bw -D 6 -u 18 -s 4096 198.18.0.1 > "$W/bw.c" 2>&1 &
bcli=$!
sleep 2.5
ip -n $L-b link set $L-b down
sleep 0.5
ip -n $L-b link set $L-b up
wait "$bcli"; rcli=$?
wait "$bsrv"
bw_line='^ *4096 +[0-9]+ +[0-9.]+ +[0-9.]+'
if [ "$rcli" = 0 ] && grep -qE "$bw_line" "$W/bw.c"; then
	ok "veth: ib_write_bw survives a 0.5 s flap (retries carry it)"
elif [ "$rcli" = 1 ] && grep -qE "$bw_line" "$W/bw.c" &&
	grep -q "ethernet_read_keys: Couldn't read remote address" "$W/bw.c" &&
	! grep -qiE "completion with error|failed to complete|couldn't post" "$W/bw.c" "$W/bw.s"; then
	# The stream ran through the flap and its result was printed; then
	# perftest's closing exchange over its own TCP socket failed on both
	# sides. That happens on 0d43dab too and is not diagnosed
	# (doc/testing.md, "Known intermittent failure"): say so, do not hide it.
	echo "# perftest's closing TCP exchange failed after the stream's result (doc/testing.md, known intermittent failure)"
	ok "veth: ib_write_bw survives a 0.5 s flap (retries carry it; the closing TCP exchange failed)"
else
	not_ok "veth: ib_write_bw survives a 0.5 s flap (exit $rcli)" "$W/bw.c" "$W/bw.s"
fi
downs=$(tel $L a /roce/port/info,0 | grep -o '"link_downs": [0-9]*' | grep -o '[0-9]*$')
check "veth: link transitions counted (link_downs = ${downs:-?})" test "${downs:-0}" -ge 2
check "veth lab down: daemons exit 0" $LAB -n $L down

# ---- memif between the daemons ----
L=lnkm
LABS+=("$L")
$LAB -n $L down > /dev/null 2>&1
# the client (b) starts first and finds no server
if ! $LAB -n $L -p memif -S ba up > "$W/up.out" 2>&1; then
	not_ok "memif lab up (client first)" "$W/up.out"
	exit 1
fi
check "memif, client started first: both ports ACTIVE" both_state $L 10 PORT_ACTIVE
wait_neigh $L
check "memif: traffic" pingpong_retry $L 300 18612
run $L b timeout 120 ibv_asyncwatch -d dpdk_roce0 > "$W/mwatch" 2>&1 &
sleep 0.5
$LAB -n $L stop a > /dev/null
if wait_state $L b 5 PORT_DOWN > "$W/check.out" 2>&1 && $LAB -n $L start a > "$W/start.out" 2>&1 &&
	wait_state $L b 10 PORT_ACTIVE >> "$W/check.out" 2>&1 &&
	wait_events "$W/mwatch" "ERR ACTIVE" 5 >> "$W/check.out" 2>&1; then
	ok "memif: the server daemon restarts; the client's port goes DOWN, reconnects, ACTIVE, events"
else
	not_ok "memif: server restart" "$W/check.out" "$W/start.out"
fi
$LAB -n $L stop b > /dev/null
if wait_state $L a 5 PORT_DOWN > "$W/check.out" 2>&1 && $LAB -n $L start b > "$W/start.out" 2>&1 &&
	wait_state $L a 10 PORT_ACTIVE >> "$W/check.out" 2>&1 && wait_neigh $L &&
	pingpong_retry $L 300 18613 >> "$W/check.out" 2>&1; then
	ok "memif: the client daemon restarts; the server's port flaps, traffic runs afterwards"
else
	not_ok "memif: client restart" "$W/check.out" "$W/start.out" "$W/$L.c" "$W/$L.s"
fi
exit $failed
