#!/bin/bash
# bench/sweep.sh: our stack against the raw limit of the same link.
#
#   bench/sweep.sh [options]          (root: creates network namespaces)
#
# 1. Link limit: bench/linkrate (tx on host a, rx on host b, one polling lcore
#    each) over every frame size our messages produce, on the PMDs asked for:
#    net_af_packet / net_af_xdp on a veth pair between namespaces LAB-a and
#    LAB-b (set up like scripts/lab.sh: offloads off, the tc drop of UDP
#    4791 on af_packet when the daemon's BPF object is built), net_memif
#    between two processes. Round trips (ping/pong) at the 8 B SEND frame.
#    Optionally (-T) dpdk-testpmd txonly/rxonly as a cross-check.
# 2. Ours: scripts/lab.sh brings up two daemons (lab LAB), roce-perftest
#    runs WRITE/READ/SEND bandwidth over message sizes (-D SEC each) and 8 B
#    WRITE/SEND latency (-n N), -R rounds interleaved, medians; the daemons'
#    retransmit counters (telemetry /roce/port/stats,0) are read around every
#    run, and the frames lost between the two PMDs (sent by one daemon's
#    port, not received by the other's: af_packet ring overflows, which
#    this PMD does not count as imissed). Skipped with a message when the daemon, the perftest or the lab is
#    not there or does not run. memif: scripts/lab.sh -p memif (the
#    daemons over net_memif, linkrate over memif as the link limit).
#    loopback (a PMD name of its own): one daemon, both QPs on it
#    (roce-perftest --single-process, frames through the daemon's loopback
#    path): the stack's capacity per worker core; no link phase.
#    CPU per message of every bandwidth point: roce-perftest's own
#    (cpu_ns_per_msg: its process in the measured window) and each daemon's
#    (utime + stime over the run / messages at the measured rate over the
#    run's wall time), and each daemon's worker busy time per message
#    (telemetry busy_ns: its loop iterations that did work, so a busy-polling
#    lcore's cost, not its wall time), in ours_bw.csv and the "ours" table.
# 3. Daemon memory (VmRSS/VmHWM) with 0, 1, 1k, 16k QPs held by bench/qp_hold
#    (MEM_QP_CMD), the lab brought up again with max_qps = MEM_MAX_QPS.
# Then CSV files, a table with our throughput as a ratio of the link limit
# for the same frame size (goals: >= 0.9 x at >= 4 KiB, >= 0.7 x at 64 B),
# and PNG plots (gnuplot).
#
# Options (environment variable in brackets):
#   -b DIR    build directory [BENCH_BUILD, default build]
#   -o DIR    output directory [BENCH_OUT, default DIR/bench-results]
#   -p LIST   PMDs, comma-separated: af_packet,af_xdp,memif,loopback [BENCH_PMDS, af_packet]
#   -m MTU    IP MTU of the link, as lab.sh -m [BENCH_MTU, 1500]
#   -r N      runs of each link point, interleaved; medians reported [BENCH_REPS, 3]
#   -R N      rounds of our points, interleaved; medians [BENCH_OURS_REPS, 3]
#   -d SEC    seconds per point (linkrate --duration, perftest -D) [BENCH_DURATION, 2]
#   -s LIST   message sizes, comma-separated [BENCH_SIZES, 64,128,...,1048576]
#   -n N      latency iterations (perftest -n, linkrate ping --count) [BENCH_LAT_ITERS, 10000]
#   -T        also run dpdk-testpmd txonly/rxonly [BENCH_TESTPMD=1]
#   -L        link limit only, skip our stack [BENCH_LINK_ONLY=1]
#   -I DIR    copy the PNG plots there too, e.g. doc/img [BENCH_IMG]
#   -P        measure nothing: tables and plots again from the CSVs in -o DIR
#   BENCH_LAB       lab name LAB: namespaces LAB-a, LAB-b, DPDK file prefixes
#                   LAB-* (default rbench; 1-8 of a-z 0-9), so that sweeps of
#                   several builds can run one after another without meeting
#   BENCH_PMD_ARGS  more devargs for the af_packet/af_xdp port of linkrate and
#                   of the lab's daemons (LAB_PMD_ARGS), e.g. framecnt=512
#
# Our part runs these command templates (bash, run with a timeout); the
# placeholders are {lab} (scripts/lab.sh -n LAB -b BUILD), {perftest} (the
# roce-perftest binary), {test} (write_bw, read_bw, send_bw, write_lat,
# send_lat), {args} (-s SIZE, -D or -n, --report_gbits, --output csv) and
# {pin} (see OURS_PIN):
#   OURS_SERVER_CMD  default '{lab} run b {pin} {perftest} {test} {args}'; empty:
#                    no server (single-process mode)
#   OURS_CLIENT_CMD  default '{lab} run a {pin} {perftest} {test} {args} 198.18.0.2'
#                    single process: '{lab} run a {perftest} {test} {args} --single-process'
#   OURS_PIN         1 (default): {pin} is `taskset -c CPU` with the CPU of the
#                    worker of the daemon that receives the data (b's, CPU 0,
#                    for WRITE and SEND; a's, CPU 1, for READ), so that the
#                    sending daemon has its core as linkrate's tx has; empty
#                    for latency tests and on fewer than 2 CPUs. 0: {pin} is
#                    always empty (the scheduler places the applications)
#   PERFTEST_EXTRA   more perftest flags for every run (e.g. -e for SEND)
#   MEM_QP_CMD       creates and holds {n} QPs on daemon a; default
#                    '{lab} run a {qp_hold} {n} 2'; empty: no QP points
#   MEM_MAX_QPS      the daemons' max_qps for the memory points (16640)
#
# Thread placement (2 cores): linkrate tx and ping on CPU 1, rx and pong on
# CPU 0, as lab.sh places the workers of daemons a and b. Only our own
# namespaces (LAB-a, LAB-b), addresses from 198.18.0.0/15, every run
# under a timeout, processes ended by their PIDs, everything removed at exit.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BENCH_BUILD=${BENCH_BUILD:-build}
BENCH_OUT=${BENCH_OUT:-}
BENCH_PMDS=${BENCH_PMDS:-af_packet}
BENCH_MTU=${BENCH_MTU:-1500}
BENCH_REPS=${BENCH_REPS:-3}
BENCH_DURATION=${BENCH_DURATION:-2}
BENCH_SIZES=${BENCH_SIZES:-64,128,256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144,524288,1048576}
BENCH_LAT_ITERS=${BENCH_LAT_ITERS:-10000}
BENCH_TESTPMD=${BENCH_TESTPMD:-0}
BENCH_LINK_ONLY=${BENCH_LINK_ONLY:-0}
BENCH_IMG=${BENCH_IMG:-}
REPLOT=0
OURS_SERVER_CMD=${OURS_SERVER_CMD-'{lab} run b {pin} {perftest} {test} {args}'}
OURS_CLIENT_CMD=${OURS_CLIENT_CMD-'{lab} run a {pin} {perftest} {test} {args} 198.18.0.2'}
OURS_PIN=${OURS_PIN:-1}
PERFTEST_EXTRA=${PERFTEST_EXTRA:-}
MEM_QP_CMD=${MEM_QP_CMD-'{lab} run a {qp_hold} {n} 2'}
MEM_MAX_QPS=${MEM_MAX_QPS:-16640}
BENCH_OURS_REPS=${BENCH_OURS_REPS:-3}
BENCH_LAB=${BENCH_LAB:-rbench}
BENCH_PMD_ARGS=${BENCH_PMD_ARGS:-}
# af_packet ring slots, as scripts/lab.sh gives its daemons (see there)
AF_PACKET_FRAMES=2048

usage() {
	sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

die() {
	echo "sweep: $*" >&2
	exit 1
}

while getopts "b:o:p:m:r:R:d:s:n:TLI:Ph" opt; do
	case $opt in
	b) BENCH_BUILD=$OPTARG ;;
	o) BENCH_OUT=$OPTARG ;;
	p) BENCH_PMDS=$OPTARG; BENCH_PMDS_SET=1 ;;
	m) BENCH_MTU=$OPTARG ;;
	r) BENCH_REPS=$OPTARG ;;
	R) BENCH_OURS_REPS=$OPTARG ;;
	d) BENCH_DURATION=$OPTARG ;;
	s) BENCH_SIZES=$OPTARG ;;
	n) BENCH_LAT_ITERS=$OPTARG ;;
	T) BENCH_TESTPMD=1 ;;
	L) BENCH_LINK_ONLY=1 ;;
	I) BENCH_IMG=$OPTARG ;;
	P) REPLOT=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 1 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { usage >&2; exit 1; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_uint "$BENCH_MTU" && [ "$BENCH_MTU" -ge 576 ] && [ "$BENCH_MTU" -le 9000 ] || die "bad MTU '$BENCH_MTU'"
is_uint "$BENCH_REPS" && [ "$BENCH_REPS" -ge 1 ] && [ "$BENCH_REPS" -le 20 ] || die "bad -r '$BENCH_REPS'"
is_uint "$BENCH_OURS_REPS" && [ "$BENCH_OURS_REPS" -ge 1 ] && [ "$BENCH_OURS_REPS" -le 20 ] || die "bad -R '$BENCH_OURS_REPS'"
is_uint "$MEM_MAX_QPS" && [ "$MEM_MAX_QPS" -ge 16400 ] && [ "$MEM_MAX_QPS" -le 1048576 ] || die "bad MEM_MAX_QPS '$MEM_MAX_QPS' (16400 or more)"
is_uint "$BENCH_DURATION" && [ "$BENCH_DURATION" -ge 1 ] && [ "$BENCH_DURATION" -le 60 ] || die "bad -d '$BENCH_DURATION'"
is_uint "$BENCH_LAT_ITERS" && [ "$BENCH_LAT_ITERS" -ge 100 ] && [ "$BENCH_LAT_ITERS" -le 1000000 ] || die "bad -n '$BENCH_LAT_ITERS'"
[[ $BENCH_LAB =~ ^[a-z0-9]{1,8}$ ]] || die "bad BENCH_LAB '$BENCH_LAB' (1-8 of a-z 0-9)"
[ -z "$BENCH_PMD_ARGS" ] || [[ $BENCH_PMD_ARGS =~ ^[a-z_]+=[A-Za-z0-9_./-]+(,[a-z_]+=[A-Za-z0-9_./-]+)*$ ]] ||
	die "bad BENCH_PMD_ARGS '$BENCH_PMD_ARGS' (key=value,...)"
IFS=, read -r -a SIZES <<< "$BENCH_SIZES"
for s in "${SIZES[@]}"; do
	is_uint "$s" && [ "$s" -ge 1 ] && [ "$s" -le 8388608 ] || die "bad message size '$s'"
done
IFS=, read -r -a PMDS <<< "$BENCH_PMDS"
# (re-plotting accepts any name: rows from other links, e.g. a real NIC)
for p in "${PMDS[@]}"; do
	case $p in af_packet|af_xdp|memif|loopback) ;; *) [ "$REPLOT" = 1 ] || die "unknown PMD '$p' (af_packet, af_xdp, memif, loopback)" ;; esac
done
[ "$REPLOT" = 1 ] || [ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"

BUILD=$(cd "$BENCH_BUILD" 2>/dev/null && pwd) || die "no build directory '$BENCH_BUILD'"
LINKRATE=$BUILD/bench/linkrate
DAEMON=$BUILD/app/roce-daemon/roce-daemon
PERFTEST=$BUILD/app/perftest/roce-perftest
QP_HOLD=$BUILD/bench/qp_hold
TC_OBJ=$BUILD/app/roce-daemon/roce_tc_drop.o
LAB=$SRC/scripts/lab.sh
LAB_NAME=$BENCH_LAB
OUT=${BENCH_OUT:-$BUILD/bench-results}
[ "$REPLOT" = 1 ] || [ -x "$LINKRATE" ] || die "no $LINKRATE (DPDK found at configure time? ninja -C $BENCH_BUILD bench/linkrate)"
mkdir -p "$OUT/logs" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
RUN=$OUT/run
mkdir -p "$RUN"

NS_A=$LAB_NAME-a
NS_B=$LAB_NAME-b
# EAL: no hugepages needed, a prefix per role so we never meet other DPDK
# processes, no PCI scan, no telemetry socket.
EAL_COMMON=(--no-huge --no-shconf -m 256 --no-pci --no-telemetry --log-level=pmd.net.memif:error)
LAT_FRAME=66   # 8 B SEND: 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 8 + 4 ICRC
ROCE_HDRS=58   # per frame without extension headers (RETH/AETH ignored)

# ---- processes and cleanup ------------------------------------------------

PIDS=()

# Start "$@" in the background, remember its PID.
spawn() { # outfile cmd...
	local out=$1
	shift
	"$@" > "$out" 2>&1 < /dev/null &
	PIDS+=($!)
	LAST_PID=$!
}

# Wait for PID up to SEC seconds, then SIGINT, then SIGKILL. Status in $?.
reap() { # pid sec
	local pid=$1 deadline=$((SECONDS + $2)) rc
	while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "sweep: pid $pid still running after $2 s, stopping it" >&2
		kill -INT "$pid" 2>/dev/null
		sleep 2
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	rc=$?
	local keep=() p
	for p in "${PIDS[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
	PIDS=("${keep[@]}")
	return $rc
}

ns_exists() { ip netns list 2>/dev/null | grep -qw "^$1"; }

net_down() {
	local ns
	for ns in $NS_A $NS_B; do
		if ns_exists "$ns"; then
			ip -n "$ns" link set dev "$ns" xdp off 2>/dev/null
			ip netns del "$ns" 2>/dev/null
		fi
	done
	rm -f "$RUN"/memif*.sock
}

LAB_UP=0
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -INT "$p" 2>/dev/null
	done
	sleep 0.5
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	PIDS=()
	if [ "$LAB_UP" = 1 ]; then
		LAB_BUILD=$BUILD "$LAB" -n $LAB_NAME down > /dev/null 2>&1
		LAB_UP=0
	fi
	net_down
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- link set-up, as scripts/lab.sh does it --------------------------------

KERNEL_DROP=no
net_up() { # pmd
	local pmd=$1 h ns
	net_down
	ip netns add $NS_A && ip netns add $NS_B || return 1
	ip link add $NS_A netns $NS_A mtu "$BENCH_MTU" type veth \
		peer name $NS_B netns $NS_B mtu "$BENCH_MTU" || return 1
	KERNEL_DROP=no
	for h in a b; do
		ns=$LAB_NAME-$h
		ip -n "$ns" link set lo up
		ip netns exec "$ns" ethtool -K "$ns" tx off rx off gro off gso off tso off > /dev/null 2>&1
		ip -n "$ns" addr add "198.18.0.$([ $h = a ] && echo 1 || echo 2)/24" dev "$ns"
		ip -n "$ns" link set "$ns" up || return 1
		if [ "$pmd" = af_packet ] && [ -f "$TC_OBJ" ]; then
			ip netns exec "$ns" tc qdisc add dev "$ns" clsact &&
			ip netns exec "$ns" tc filter add dev "$ns" ingress bpf direct-action \
				obj "$TC_OBJ" sec tc || return 1
			KERNEL_DROP=yes
		fi
	done
}

mac_of() { # ns
	ip -n "$1" -o link show "$1" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}

# Largest IB path MTU (256..4096) whose packets fit the IP MTU (IPv4 + UDP +
# BTH + RETH + ICRC = 60 bytes of headers), capped by what the PMD carries.
path_mtu() { # pmd
	local max_frame=9000 m=4096
	[ "$1" = af_xdp ] && max_frame=3456
	while [ $m -gt 256 ] && { [ $((m + 60)) -gt "$BENCH_MTU" ] || [ $((m + 74)) -gt $max_frame ]; }; do
		m=$((m / 2))
	done
	echo $m
}

frame_of() { # size pmtu -> frame bytes of a full packet of that message
	local p=$1
	[ "$p" -gt "$2" ] && p=$2
	echo $((p + ROCE_HDRS))
}

# vdev args of host h (a: sender, b: receiver) for one frame size
vdev_of() { # pmd host frame
	local pmd=$1 h=$2 frame=$3 bsize=2048 extra=${BENCH_PMD_ARGS:+,$BENCH_PMD_ARGS}
	case $pmd in
	af_packet)
		if [ "$BENCH_MTU" -gt 1964 ]; then
			echo "net_af_packet0,iface=$LAB_NAME-$h,framecnt=$AF_PACKET_FRAMES,framesz=4608,blocksz=36864$extra"
		else
			echo "net_af_packet0,iface=$LAB_NAME-$h,framecnt=$AF_PACKET_FRAMES$extra"
		fi ;;
	af_xdp)
		echo "net_af_xdp0,iface=$LAB_NAME-$h,start_queue=0,queue_count=1$extra" ;;
	memif)
		while [ $bsize -lt "$frame" ]; do bsize=$((bsize * 2)); done
		# b is the server (it starts first and creates the socket)
		echo "net_memif0,role=$([ $h = b ] && echo server || echo client),socket=$RUN/memif.sock,socket-abstract=no,bsize=$bsize" ;;
	esac
}

# mbuf data room (headroom included) for one frame size: af_packet with
# framesz=4608 needs framesz - 32 bytes after the headroom whatever the frame.
mbuf_of() { # pmd frame
	local pmd=$1 frame=$2 room=2176
	if [ "$pmd" = af_packet ] && [ "$BENCH_MTU" -gt 1964 ]; then
		room=4736
	fi
	if [ $((frame + 128)) -gt $room ]; then
		room=$((frame + 1152))
		[ "$pmd" = af_xdp ] && room=3712
	fi
	echo $room
}

# Run CMD... in host h: in its namespace for veth PMDs, as is for memif.
in_host() { # pmd host cmd...
	local pmd=$1 h=$2
	shift 2
	if [ "$pmd" = memif ]; then
		"$@"
	else
		ip netns exec "$LAB_NAME-$h" "$@"
	fi
}

# The receiver is listening: memif socket created / "ready" printed.
wait_listening() { # pmd outfile pid
	local deadline=$((SECONDS + 15))
	while [ $SECONDS -lt $deadline ] && kill -0 "$3" 2>/dev/null; do
		if [ "$1" = memif ]; then
			[ -S "$RUN/memif.sock" ] && return 0
		else
			grep -q "linkrate: ready" "$2" 2>/dev/null && return 0
		fi
		sleep 0.05
	done
	return 1
}

kv() { # key file: value of key=value in the "result" line
	sed -n "s/^result .* $1=\([^ ]*\).*/\1/p; s/^result $1=\([^ ]*\).*/\1/p" "$2" | head -1
}

# ---- link limit: linkrate ------------------------------------------------

# One throughput point; appends a row to link_raw.csv.
linkrate_point() { # pmd frame rep
	local pmd=$1 frame=$2 rep=$3 tag=$1-$2-$3 rxo txo rx tx dmac
	rxo=$OUT/logs/linkrate-$tag-rx.log
	txo=$OUT/logs/linkrate-$tag-tx.log
	rm -f "$RUN/memif.sock"
	dmac=ff:ff:ff:ff:ff:ff
	[ "$pmd" != memif ] && dmac=$(mac_of $NS_B)
	spawn "$rxo" in_host "$pmd" b "$LINKRATE" -l 0 "${EAL_COMMON[@]}" --file-prefix=$LAB_NAME-rx \
		--vdev="$(vdev_of "$pmd" b "$frame")" -- --role rx --size "$frame" --mbuf-size "$(mbuf_of "$pmd" "$frame")" \
		--timeout $((BENCH_DURATION + 20))
	rx=$LAST_PID
	if ! wait_listening "$pmd" "$rxo" "$rx"; then
		echo "sweep: linkrate rx ($pmd, $frame B) did not start, see $rxo" >&2
		reap "$rx" 1
		return 1
	fi
	spawn "$txo" in_host "$pmd" a "$LINKRATE" -l 1 "${EAL_COMMON[@]}" --file-prefix=$LAB_NAME-tx \
		--vdev="$(vdev_of "$pmd" a "$frame")" -- --role tx --size "$frame" --mbuf-size "$(mbuf_of "$pmd" "$frame")" \
		--duration "$BENCH_DURATION" --dst-mac "$dmac" --timeout 15
	tx=$LAST_PID
	reap "$rx" $((BENCH_DURATION + 25))
	reap "$tx" 10
	[ "$pmd" = af_xdp ] && ip -n $NS_A link set dev $NS_A xdp off 2>/dev/null &&
		ip -n $NS_B link set dev $NS_B xdp off 2>/dev/null
	local mpps gbps txm lost
	mpps=$(kv mpps "$rxo"); gbps=$(kv gbps "$rxo"); lost=$(kv lost "$rxo"); txm=$(kv mpps "$txo")
	if [ "$(kv window "$rxo")" = all ]; then
		# every frame came within the receiver's warmup: the sender stalled
		echo "sweep: linkrate $pmd $frame B run $rep: no steady window (sender stalled?), not counted; see $rxo $txo" >&2
		return 1
	fi
	if [ -z "$mpps" ] || [ -z "$txm" ]; then
		echo "sweep: linkrate $pmd $frame B run $rep failed, see $rxo $txo" >&2
		return 1
	fi
	echo "$pmd,$BENCH_MTU,linkrate,$frame,$rep,$mpps,$gbps,$txm,$lost,$KERNEL_DROP" >> "$OUT/link_raw.csv"
	printf "  %-9s %5d B  run %d: %8.3f Mpps %8.3f Gb/s (tx %.3f Mpps, lost %s)\n" \
		"$pmd" "$frame" "$rep" "$mpps" "$gbps" "$txm" "$lost"
}

# Round trips at one frame size; appends to link_latency.csv.
linkrate_latency() { # pmd frame
	local pmd=$1 frame=$2 po pi pong ping dmac
	po=$OUT/logs/linkrate-$pmd-$frame-pong.log
	pi=$OUT/logs/linkrate-$pmd-$frame-ping.log
	rm -f "$RUN/memif.sock"
	dmac=ff:ff:ff:ff:ff:ff
	[ "$pmd" != memif ] && dmac=$(mac_of $NS_B)
	spawn "$po" in_host "$pmd" b "$LINKRATE" -l 0 "${EAL_COMMON[@]}" --file-prefix=$LAB_NAME-rx \
		--vdev="$(vdev_of "$pmd" b "$frame")" -- --role pong --size "$frame" --timeout 40 \
		--mbuf-size "$(mbuf_of "$pmd" "$frame")"
	pong=$LAST_PID
	if ! wait_listening "$pmd" "$po" "$pong"; then
		echo "sweep: linkrate pong ($pmd) did not start, see $po" >&2
		reap "$pong" 1
		return 1
	fi
	spawn "$pi" in_host "$pmd" a "$LINKRATE" -l 1 "${EAL_COMMON[@]}" --file-prefix=$LAB_NAME-tx \
		--vdev="$(vdev_of "$pmd" a "$frame")" -- --role ping --size "$frame" --mbuf-size "$(mbuf_of "$pmd" "$frame")" \
		--count "$BENCH_LAT_ITERS" --duration 20 --dst-mac "$dmac" --timeout 15
	ping=$LAST_PID
	reap "$ping" 45
	reap "$pong" 10
	[ "$pmd" = af_xdp ] && ip -n $NS_A link set dev $NS_A xdp off 2>/dev/null &&
		ip -n $NS_B link set dev $NS_B xdp off 2>/dev/null
	local p50 p99 n lost
	p50=$(kv rtt_p50_us "$pi"); p99=$(kv rtt_p99_us "$pi"); n=$(kv count "$pi"); lost=$(kv lost "$pi")
	if [ -z "$p50" ]; then
		echo "sweep: linkrate ping $pmd failed, see $pi $po" >&2
		return 1
	fi
	echo "$pmd,$BENCH_MTU,$frame,$n,$lost,$(kv rtt_min_us "$pi"),$p50,$p99,$(kv rtt_max_us "$pi")" \
		>> "$OUT/link_latency.csv"
	printf "  %-9s %5d B  round trip: p50 %.2f us, p99 %.2f us (%s probes, %s lost)\n" \
		"$pmd" "$frame" "$p50" "$p99" "$n" "$lost"
}

# ---- link limit: dpdk-testpmd (cross-check) --------------------------------

# testpmd crashes in net_memif when the peer disconnects while it polls (as
# linkrate would without --linger): run it in a shell of its own so the
# crash report lands in its log, not on our terminal. Bounded by timeout.
in_shell() {
	bash -c '"$@"; exit $?' in_shell "$@"
}

testpmd_point() { # pmd frame
	local pmd=$1 frame=$2 rxo txo rx tx dmac rxv txv
	local txpmd=(--forward-mode=txonly "--txpkts=$frame" "--tx-ip=198.18.0.11,198.18.0.12"
		"--tx-udp=49152,4791")
	rxo=$OUT/logs/testpmd-$pmd-$frame-rx.log
	txo=$OUT/logs/testpmd-$pmd-$frame-tx.log
	rm -f "$RUN/memif.sock"
	rxv=$(vdev_of "$pmd" b "$frame")
	txv=$(vdev_of "$pmd" a "$frame")
	if [ "$pmd" = memif ]; then
		# testpmd's rxonly sees nothing as memif server here: roles swapped
		rxv=${rxv/role=server/role=client}
		txv=${txv/role=client/role=server}
	else
		dmac=$(mac_of $NS_B)
		txpmd+=("--eth-peer=0,$dmac")
	fi
	local mbuf
	mbuf=$(mbuf_of "$pmd" "$frame")
	local tp=(--nb-cores=1 --stats-period=1 --burst=32 --total-num-mbufs=16384
		"--mbuf-size=$mbuf" "--max-pkt-len=$((frame > 1518 ? frame : 1518))")
	# fwd lcore: tx on 1, rx on 0; the main lcores only print stats
	if [ "$pmd" = memif ]; then
		spawn "$txo" in_shell timeout -s INT $((BENCH_DURATION + 3)) dpdk-testpmd -l 0,1 "${EAL_COMMON[@]}" \
			--file-prefix=$LAB_NAME-ttx --vdev="$txv" -- "${tp[@]}" "${txpmd[@]}"
		tx=$LAST_PID
		wait_listening memif /dev/null "$tx"
		spawn "$rxo" in_shell timeout -s INT $((BENCH_DURATION + 2)) dpdk-testpmd -l 0,1 --main-lcore 1 \
			"${EAL_COMMON[@]}" --file-prefix=$LAB_NAME-trx --vdev="$rxv" -- "${tp[@]}" --forward-mode=rxonly
		rx=$LAST_PID
	else
		spawn "$rxo" in_host "$pmd" b timeout -s INT $((BENCH_DURATION + 4)) dpdk-testpmd -l 0,1 \
			--main-lcore 1 "${EAL_COMMON[@]}" --file-prefix=$LAB_NAME-trx --vdev="$rxv" -- "${tp[@]}" \
			--forward-mode=rxonly
		rx=$LAST_PID
		sleep 1.5
		spawn "$txo" in_host "$pmd" a timeout -s INT $((BENCH_DURATION + 1)) dpdk-testpmd -l 0,1 \
			"${EAL_COMMON[@]}" --file-prefix=$LAB_NAME-ttx --vdev="$txv" -- "${tp[@]}" "${txpmd[@]}"
		tx=$LAST_PID
	fi
	reap "$rx" $((BENCH_DURATION + 15))
	reap "$tx" 10
	[ "$pmd" = af_xdp ] && ip -n $NS_A link set dev $NS_A xdp off 2>/dev/null &&
		ip -n $NS_B link set dev $NS_B xdp off 2>/dev/null
	# per-second Rx-pps samples: median of the non-zero ones
	local mpps
	mpps=$(grep -a 'Rx-pps:' "$rxo" | awk '$2 > 0 { print $2 / 1e6 }' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.6f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	if [ -z "$mpps" ]; then
		echo "sweep: testpmd $pmd $frame B gave no rate, see $rxo $txo" >&2
		return 1
	fi
	echo "$pmd,$BENCH_MTU,testpmd,$frame,1,$mpps,$(awk -v m="$mpps" -v f="$frame" 'BEGIN { printf "%.6f", m * f * 8 / 1e3 }'),,,$KERNEL_DROP" \
		>> "$OUT/link_raw.csv"
	printf "  %-9s %5d B  testpmd: %8.3f Mpps\n" "$pmd" "$frame" "$mpps"
}

link_phase() { # pmd
	local pmd=$1 pmtu frames f rep s
	pmtu=$(path_mtu "$pmd")
	frames=(64)
	for s in "${SIZES[@]}"; do frames+=("$(frame_of "$s" "$pmtu")"); done
	mapfile -t frames < <(printf '%s\n' "${frames[@]}" | sort -n -u)
	echo "== link limit: $pmd, IP MTU $BENCH_MTU (path MTU $pmtu), frames ${frames[*]} B"
	if [ "$pmd" != memif ]; then
		net_up "$pmd" || { echo "sweep: network set-up failed" >&2; net_down; return 1; }
		echo "  veth $NS_A <-> $NS_B, kernel drop of UDP 4791 on af_packet: $KERNEL_DROP"
	fi
	for rep in $(seq 1 "$BENCH_REPS"); do
		for f in "${frames[@]}"; do
			linkrate_point "$pmd" "$f" "$rep"
		done
	done
	linkrate_latency "$pmd" $LAT_FRAME
	if [ "$BENCH_TESTPMD" = 1 ]; then
		if command -v dpdk-testpmd > /dev/null; then
			for f in "${frames[@]}"; do testpmd_point "$pmd" "$f"; done
		else
			echo "  dpdk-testpmd not found (package dpdk): cross-check skipped"
		fi
	fi
	net_down
}

# ---- our stack -----------------------------------------------------------

OURS_WHY=""

ours_available() { # pmd; sets OURS_WHY when not
	OURS_WHY=""
	if [ "$BENCH_LINK_ONLY" = 1 ]; then OURS_WHY="-L given"
	elif [ ! -x "$DAEMON" ]; then OURS_WHY="no $DAEMON (not built)"
	elif [ ! -x "$PERFTEST" ]; then OURS_WHY="no $PERFTEST (not built)"
	elif [ ! -x "$LAB" ]; then OURS_WHY="no $LAB"
	fi
	[ -z "$OURS_WHY" ]
}

# Fill a command template.
expand() { # template test args
	local c=$1
	c=${c//\{lab\}/$LAB -n $LAB_NAME -b $BUILD}
	c=${c//\{perftest\}/$PERFTEST}
	c=${c//\{qp_hold\}/$QP_HOLD}
	c=${c//\{test\}/$2}
	c=${c//\{args\}/$3}
	c=${c//\{pin\}/$(app_pin "$2")}
	echo "$c"
}

# {pin}: the applications share the CPU of the daemon that receives the data
# (scripts/lab.sh: worker a on CPU 1, worker b on CPU 0), the sender keeps its own.
app_pin() { # test
	[ "$OURS_PIN" = 1 ] && [ "$(nproc)" -ge 2 ] || return 0
	case $1 in
	write_bw|send_bw) echo "taskset -c 0" ;;
	read_bw) echo "taskset -c 1" ;;
	esac
}

# Column NAME of the first client/single-process row of roce-perftest's CSV.
csv_field() { # file column
	awk -F, -v col="$2" '
		/^test,connection,role,/ { for (i = 1; i <= NF; i++) idx[$i] = i; next }
		idx["role"] && ($idx["role"] == "client" || $idx["role"] == "single") {
			print $idx[col]; exit }' "$1"
}

# Port counters of both lab daemons summed (telemetry /roce/port/stats,0,
# read straight from their telemetry sockets: one python start per call):
# "retransmits tx_packets timeouts nak_rx_psn_seq_error lost nak_rx_rnr",
# lost = frames the two ports sent minus frames they received (what the
# link, i.e. the receiving af_packet ring, dropped), empty on failure.
port_counters() {
	python3 - "$LAB_NAME" 2> /dev/null <<'PY'
import json, socket, sys
keys = ("retransmits", "tx_packets", "timeouts", "nak_rx_psn_seq_error", "lost", "nak_rx_rnr")
tot = dict.fromkeys(keys, 0)
for h in "ab":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(3)
    s.connect("/var/run/dpdk/%s-%s/dpdk_telemetry.v2" % (sys.argv[1], h))
    info = json.loads(s.recv(4096))
    s.send(b"/roce/port/stats,0")
    st = json.loads(s.recv(info["max_output_len"]))["/roce/port/stats"]
    s.close()
    st["lost"] = int(st["eth_opackets"]) - int(st["eth_ipackets"])
    for k in keys:
        tot[k] += int(st[k])
print(" ".join(str(tot[k]) for k in keys))
PY
}

# "busy_a busy_b": each lab daemon's worker 0 busy_ns (telemetry
# /roce/lcore/stats,0: the time of its loop iterations that did work), - if
# a daemon does not answer (b in loopback, or an older daemon).
lcore_busy() {
	python3 - "$LAB_NAME" 2> /dev/null <<'PY'
import json, socket, sys
out = []
for h in "ab":
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(3)
        s.connect("/var/run/dpdk/%s-%s/dpdk_telemetry.v2" % (sys.argv[1], h))
        info = json.loads(s.recv(4096))
        s.send(b"/roce/lcore/stats,0")
        out.append(str(int(json.loads(s.recv(info["max_output_len"]))["/roce/lcore/stats"]["busy_ns"])))
        s.close()
    except Exception:
        out.append("-")
print(" ".join(out))
PY
}

# "a b c d" - "e f g h", field by field (empty if either is empty)
counters_delta() { # after before
	[ -n "$1" ] && [ -n "$2" ] || return 0
	awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), x[i] - y[i]; print "" }'
}

# One perftest run (server + client, or one process). Log in $OURS_LOG,
# port counter deltas of the run (both daemons) in $OURS_CNT.
ours_run() { # test args tag
	local test=$1 args="$2 $PERFTEST_EXTRA" tag=$3 srv="" cli rc limit before
	OURS_LOG=$OUT/logs/ours-$tag-client.log
	limit=$((BENCH_DURATION * 3 + 30))
	local ca0 cb0 w0=$SECONDS busy0
	ca0=$(daemon_ticks a) cb0=$(daemon_ticks b)
	before=$(port_counters)
	busy0=$(lcore_busy)
	if [ -n "$OURS_SERVER_CMD" ]; then
		spawn "$OUT/logs/ours-$tag-server.log" timeout -s INT $limit bash -c "$(expand "$OURS_SERVER_CMD" "$test" "$args")"
		srv=$LAST_PID
		local deadline=$((SECONDS + 10))
		while [ $SECONDS -lt $deadline ] && kill -0 "$srv" 2>/dev/null &&
			! ip netns exec $NS_B ss -ltnH 'sport = :18515' 2>/dev/null | grep -q .; do
			sleep 0.1
		done
	fi
	spawn "$OURS_LOG" timeout -s INT $limit bash -c "$(expand "$OURS_CLIENT_CMD" "$test" "$args")"
	cli=$LAST_PID
	reap "$cli" $((limit + 5))
	rc=$?
	[ -n "$srv" ] && reap "$srv" 15
	OURS_CNT=$(counters_delta "$(port_counters)" "$before")
	OURS_BUSY="$busy0 $(lcore_busy)"
	local ca1 cb1
	ca1=$(daemon_ticks a) cb1=$(daemon_ticks b)
	OURS_CPU="$((${ca1:-0} - ${ca0:-0})) $((${cb1:-0} - ${cb0:-0})) $((SECONDS - w0))"
	return $rc
}

# utime + stime (clock ticks) of lab daemon h, all its threads
daemon_ticks() { # h
	local pid
	pid=$(cat "${LAB_STATE:-/tmp/roce-lab}/$LAB_NAME/$1.pid" 2>/dev/null) || return 0
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null
}

# "cpu_a_ns cpu_b_ns": each daemon's CPU ns per message of a run at @p mmsgs
# M msg/s (its CPU over the run, set-up included, / the messages of the whole
# run's wall time at that rate: an upper bound when the run idles around -D)
daemon_cpu_per_msg() { # mmsgs
	read -r ta tb w <<< "$OURS_CPU"
	awk -v ta="${ta:-0}" -v tb="${tb:-0}" -v w="${w:-0}" -v d="$BENCH_DURATION" -v mr="$1" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		if (w < d) w = d
		n = mr * 1e6 * w
		if (n > 0) printf "%.1f %.1f", ta / hz * 1e9 / n, tb / hz * 1e9 / n; else printf "- -" }'
}

# "busy_a_ns busy_b_ns": each daemon's worker busy time per message of a
# run of @p iters messages (OURS_BUSY: its busy_ns before and after; the
# whole run, set-up included, so with the idle loops left out this is the
# lcore's CPU per message); - where a daemon gave none
daemon_busy_per_msg() { # iters
	read -r a0 b0 a1 b1 <<< "$OURS_BUSY"
	awk -v a0="$a0" -v b0="$b0" -v a1="$a1" -v b1="$b1" -v n="${1:-0}" 'BEGIN {
		if (n > 0 && a0 != "-" && a1 != "-" && a0 != "") printf "%.1f", (a1 - a0) / n; else printf "-"
		if (n > 0 && b0 != "-" && b1 != "-" && b0 != "") printf " %.1f", (b1 - b0) / n; else printf " -" }'
}

lab_up() { # pmd logfile [max_qps]
	local p=$1
	[ "$p" = loopback ] && p=af_packet # one daemon of the usual lab, its loopback path
	net_down
	# the memory points hold up to 16 k QPs of one client: no per-client QP quota then
	LAB_MAX_QPS=${3:-256} LAB_DAEMON_CONF=${3:+client_max_qps = 0} LAB_PMD_ARGS=$BENCH_PMD_ARGS \
		LAB_BUILD=$BUILD "$LAB" -n $LAB_NAME -p "$p" -m "$BENCH_MTU" up >> "$2" 2>&1 &&
		{ LAB_UP=1; return 0; }
	LAB_BUILD=$BUILD "$LAB" -n $LAB_NAME down > /dev/null 2>&1
	return 1
}

lab_down() { # logfile
	LAB_BUILD=$BUILD "$LAB" -n $LAB_NAME down >> "$1" 2>&1 ||
		echo "  (lab down reported an unclean daemon exit, see $1)"
	LAB_UP=0
}

# median of the numbers on stdin (empty when none)
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ours_raw.csv -> ours_bw.csv / ours_lat.csv: medians per point over the runs
ours_medians() { # pmd
	local pmd=$1 test s col
	for test in write_bw read_bw send_bw; do
		for s in "${SIZES[@]}"; do
			local sel="\$1 == \"$pmd\" && \$2 == $BENCH_MTU && \$3 == \"$test\" && \$4 == $s && \$6 != \"\""
			local n
			n=$(awk -F, "$sel" "$OUT/ours_raw.csv" | wc -l)
			[ "$n" -gt 0 ] || continue
			local row="$pmd,$BENCH_MTU,$test,$s"
			for col in 6 7 10 11 12 14 15 17 18 19 20 21; do
				row="$row,$(awk -F, "$sel && \$$col != \"\" { print \$$col }" "$OUT/ours_raw.csv" | median)"
			done
			echo "$row,$n" >> "$OUT/ours_bw.csv"
		done
	done
	for test in write_lat send_lat; do
		local sel="\$1 == \"$pmd\" && \$2 == $BENCH_MTU && \$3 == \"$test\" && \$8 != \"\""
		[ "$(awk -F, "$sel" "$OUT/ours_raw.csv" | wc -l)" -gt 0 ] || continue
		echo "$pmd,$BENCH_MTU,$test,8,$(awk -F, "$sel { print \$8 }" "$OUT/ours_raw.csv" | median),$(awk -F, "$sel { print \$9 }" "$OUT/ours_raw.csv" | median),$(awk -F, "$sel" "$OUT/ours_raw.csv" | wc -l)" >> "$OUT/ours_lat.csv"
	done
}

# Bandwidth (WRITE/READ/SEND over the sizes) and 8 B latency, BENCH_OURS_REPS
# rounds, each round every point once (interleaved), then medians.
ours_phase() { # pmd
	local pmd=$1 test s rc rep log=$OUT/logs/lab-$pmd.log
	if ! ours_available "$pmd"; then
		echo "== ours ($pmd): skipped: $OURS_WHY"
		echo "$pmd,skipped,$OURS_WHY" >> "$OUT/ours_status.csv"
		return 0
	fi
	echo "== ours ($pmd): scripts/lab.sh -n $LAB_NAME -p $pmd -m $BENCH_MTU up; $BENCH_OURS_REPS interleaved rounds"
	if ! lab_up "$pmd" "$log"; then
		OURS_WHY="the lab did not come up (see $log)"
		echo "== ours ($pmd): skipped: $OURS_WHY"
		echo "$pmd,skipped,$OURS_WHY" >> "$OUT/ours_status.csv"
		return 0
	fi
	local ok=0 failed=0 srv_cmd=$OURS_SERVER_CMD cli_cmd=$OURS_CLIENT_CMD
	if [ "$pmd" = loopback ]; then # one process, both QPs, one daemon
		OURS_SERVER_CMD=""
		OURS_CLIENT_CMD='{lab} run a {perftest} {test} {args} --single-process'
	fi
	for rep in $(seq 1 "$BENCH_OURS_REPS"); do
		for test in write_bw read_bw send_bw; do
			for s in "${SIZES[@]}"; do
				ours_run "$test" "-s $s -D $BENCH_DURATION --report_gbits --output csv" "$pmd-$test-$s-$rep"
				rc=$?
				local bw mr it cnt
				bw=$(csv_field "$OURS_LOG" bw_avg); mr=$(csv_field "$OURS_LOG" msg_rate_mpps)
				it=$(csv_field "$OURS_LOG" iterations)
				cnt=${OURS_CNT:-- - - - - -}
				if [ $rc -ne 0 ] || [ -z "$bw" ]; then
					failed=$((failed + 1))
					echo "  #$rep $test $s B: failed (status $rc, see $OURS_LOG)"
					echo "$pmd,$BENCH_MTU,$test,$s,$rep,,,,,${cnt// /,},failed($rc)" | sed 's/,-/,/g' >> "$OUT/ours_raw.csv"
					# nothing works: do not spend a timeout on every point
					if [ $ok = 0 ] && [ $failed -ge 2 ]; then
						OURS_WHY="roce-perftest does not run over the lab: '$(grep -m1 -v '^[[:space:]]*$' "$OURS_LOG" | sed 's/^ *//' | cut -c1-100)' (see $OURS_LOG)"
						break 3
					fi
					continue
				fi
				ok=$((ok + 1))
				local an dc db
				an=$(csv_field "$OURS_LOG" cpu_ns_per_msg)
				dc=$(daemon_cpu_per_msg "$mr")
				db=$(daemon_busy_per_msg "$it")
				# pmd,mtu,test,size,rep,gbps,mmsgs,t_typical,t_p99,retransmits,tx_packets,timeouts,psn_naks,
				# lost_frames,rnr_naks,status,app_cpu_ns,cpu_a_ns,cpu_b_ns,busy_a_ns,busy_b_ns
				echo "$pmd,$BENCH_MTU,$test,$s,$rep,$bw,$mr,,,${cnt// /,},ok,${an:--},${dc// /,},${db// /,}" | sed 's/,-/,/g' >> "$OUT/ours_raw.csv"
				printf "  #%d %-9s %8d B: %9.3f Gb/s %8.4f Mmsg/s  (%s iterations; retransmits %s of %s frames sent, %s lost, %s RNR NAKs; CPU ns/msg app %s, daemon a %s, b %s; worker busy ns/msg a %s, b %s)\n" \
					"$rep" "$test" "$s" "$bw" "$mr" "$it" "$(cut -d' ' -f1 <<< "$cnt")" "$(cut -d' ' -f2 <<< "$cnt")" \
					"$(cut -d' ' -f5 <<< "$cnt")" "$(cut -d' ' -f6 <<< "$cnt")" "${an:--}" "${dc% *}" "${dc#* }" "${db% *}" "${db#* }"
			done
		done
		for test in write_lat send_lat; do
			ours_run "$test" "-s 8 -n $BENCH_LAT_ITERS --output csv" "$pmd-$test-8-$rep"
			local p50 p99
			p50=$(csv_field "$OURS_LOG" t_typical_us); p99=$(csv_field "$OURS_LOG" t_p99_us)
			cnt=${OURS_CNT:-- - - - - -}
			if [ -z "$p50" ]; then
				echo "  #$rep $test 8 B: failed (see $OURS_LOG)"
				continue
			fi
			echo "$pmd,$BENCH_MTU,$test,8,$rep,,,$p50,$p99,${cnt// /,},ok" | sed 's/,-/,/g' >> "$OUT/ours_raw.csv"
			printf "  #%d %-9s        8 B: p50 %.2f us, p99 %.2f us (retransmits %s)\n" "$rep" "$test" "$p50" "$p99" "$(cut -d' ' -f1 <<< "$cnt")"
		done
	done
	OURS_SERVER_CMD=$srv_cmd OURS_CLIENT_CMD=$cli_cmd
	if [ $ok -gt 0 ]; then
		ours_medians "$pmd"
		echo "$pmd,ran,$ok runs ok $failed failed" >> "$OUT/ours_status.csv"
	else
		echo "== ours ($pmd): skipped: ${OURS_WHY:-no point succeeded}"
		echo "$pmd,skipped,${OURS_WHY:-no point succeeded}" >> "$OUT/ours_status.csv"
	fi
	ours_memory_point "$pmd" 256 0 baseline
	lab_down "$log"
	[ "$pmd" = loopback ] || ours_memory "$pmd"
}

# ==== daemon memory with 1, 1k, 16k QPs =====================================
# MEM_QP_CMD ({n}, {lab}, {perftest}, {qp_hold}) creates {n} QPs on daemon a
# and holds them; default: bench/qp_hold {n} 2 through the verbs shim. The lab
# is brought up again with max_qps = MEM_MAX_QPS (default 16640) for these
# points, and its baseline (no QP) is recorded first: the daemon sizes its QP
# tables from max_qps. VmRSS of daemon a is sampled every 0.1 s while the
# command runs (max kept), VmHWM read after.

daemon_kb() { # pid field
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null
}

ours_memory_point() { # pmd max_qps n status
	local pid
	pid=$(cat "${LAB_STATE:-/tmp/roce-lab}/$LAB_NAME/a.pid" 2>/dev/null)
	[ -n "$pid" ] && [ -r "/proc/$pid/status" ] || { echo "  memory: no daemon PID found"; return 1; }
	echo "$1,$2,$3,$(daemon_kb "$pid" VmRSS),$(daemon_kb "$pid" VmHWM),$4,," >> "$OUT/ours_mem.csv"
	printf "  memory: max_qps %d, %5d QPs: VmRSS %s kB, VmHWM %s kB (%s)\n" "$2" "$3" \
		"$(daemon_kb "$pid" VmRSS)" "$(daemon_kb "$pid" VmHWM)" "$4"
}

ours_memory() { # pmd
	local pmd=$1 pid n cmd mx cur hwm rc log=$OUT/logs/lab-$pmd-mem.log
	[ -n "$MEM_QP_CMD" ] || { echo "  memory: MEM_QP_CMD empty: QP points not measured"; return 0; }
	if ! lab_up "$pmd" "$log" "$MEM_MAX_QPS"; then
		echo "  memory: the lab did not come up with max_qps $MEM_MAX_QPS (see $log)"
		return 0
	fi
	pid=$(cat "${LAB_STATE:-/tmp/roce-lab}/$LAB_NAME/a.pid" 2>/dev/null)
	ours_memory_point "$pmd" "$MEM_MAX_QPS" 0 baseline || { lab_down "$log"; return 0; }
	for n in 1 1024 16384; do
		cmd=$(expand "$MEM_QP_CMD" "" "")
		cmd=${cmd//\{n\}/$n}
		spawn "$OUT/logs/mem-$pmd-$n.log" timeout -s INT 120 bash -c "$cmd"
		local job=$LAST_PID
		mx=0
		while kill -0 "$job" 2>/dev/null; do
			cur=$(daemon_kb "$pid" VmRSS)
			[ -n "$cur" ] && [ "$cur" -gt "$mx" ] && mx=$cur
			sleep 0.1
		done
		reap "$job" 1
		rc=$?
		hwm=$(daemon_kb "$pid" VmHWM)
		# qp_hold's create cost: mean over all n, and over the last 1024 (the cost at n)
		local cu lu
		cu=$(sed -n 's/.*create_us_per_qp \([0-9.]*\).*/\1/p' "$OUT/logs/mem-$pmd-$n.log" | head -1)
		lu=$(sed -n 's/.* last_us \([0-9.]*\).*/\1/p' "$OUT/logs/mem-$pmd-$n.log" | head -1)
		echo "$pmd,$MEM_MAX_QPS,$n,$mx,$hwm,$([ $rc = 0 ] && echo ok || echo "failed($rc)"),$cu,$lu" >> "$OUT/ours_mem.csv"
		printf "  memory: max_qps %d, %5d QPs: max VmRSS %s kB, VmHWM %s kB (command status %d; %s)\n" \
			"$MEM_MAX_QPS" "$n" "$mx" "$hwm" "$rc" "$(grep -m1 created "$OUT/logs/mem-$pmd-$n.log")"
	done
	lab_down "$log"
}
# ==== end of memory ==========================================================

# ---- summary, ratios, plots -----------------------------------------------

median_link() { # pmd tool frame -> median mpps
	awk -F, -v p="$1" -v t="$2" -v f="$3" -v m="$BENCH_MTU" \
		'$1 == p && $2 == m && $3 == t && $4 == f { print $6 }' "$OUT/link_raw.csv" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.6f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

summarize() {
	local pmd f s pmtu
	echo "pmd,mtu,frame,linkrate_mpps,linkrate_gbps,testpmd_mpps,linkrate_min_mpps,linkrate_max_mpps,runs" > "$OUT/link.csv"
	for pmd in "${PMDS[@]}"; do
		for f in $(awk -F, -v p="$pmd" -v m="$BENCH_MTU" '$1 == p && $2 == m { print $4 }' "$OUT/link_raw.csv" | sort -n -u); do
			local lr tp
			lr=$(median_link "$pmd" linkrate "$f"); tp=$(median_link "$pmd" testpmd "$f")
			[ -n "$lr" ] || continue
			local spread
			spread=$(awk -F, -v p="$pmd" -v f="$f" -v m="$BENCH_MTU" \
				'$1 == p && $2 == m && $3 == "linkrate" && $4 == f {
					if (!n || $6 < lo) lo = $6; if (!n || $6 > hi) hi = $6; n++ }
				END { printf "%.6f,%.6f,%d", lo, hi, n }' "$OUT/link_raw.csv")
			echo "$pmd,$BENCH_MTU,$f,$lr,$(awk -v m="$lr" -v f="$f" 'BEGIN { printf "%.6f", m * f * 8 / 1e3 }'),$tp,$spread" >> "$OUT/link.csv"
		done
	done
	# sweep.csv: per test and message size, the link limit at that frame size
	# (payload Gb/s = frames/s x payload per frame) and ours as a ratio of it.
	echo "pmd,mtu,test,size,frame,link_mpps,link_payload_gbps,ours_gbps,ours_mmsgs,ratio,goal,verdict,retransmits,tx_frames,retx_pct,lost_frames,frame_ratio" > "$OUT/sweep.csv"
	for pmd in "${PMDS[@]}"; do
		pmtu=$(path_mtu "$pmd")
		for test in write_bw read_bw send_bw; do
			for s in "${SIZES[@]}"; do
				f=$(frame_of "$s" "$pmtu")
				local lm og om rt tx lf
				lm=$(awk -F, -v p="$pmd" -v f="$f" '$1 == p && $3 == f { print $4 }' "$OUT/link.csv")
				[ -n "$lm" ] || continue
				og=$(awk -F, -v p="$pmd" -v t="$test" -v s="$s" -v m="$BENCH_MTU" \
					'$1 == p && $2 == m && $3 == t && $4 == s { print $5 }' "$OUT/ours_bw.csv" 2>/dev/null | tail -1)
				om=$(awk -F, -v p="$pmd" -v t="$test" -v s="$s" -v m="$BENCH_MTU" \
					'$1 == p && $2 == m && $3 == t && $4 == s { print $6 }' "$OUT/ours_bw.csv" 2>/dev/null | tail -1)
				rt=$(awk -F, -v p="$pmd" -v t="$test" -v s="$s" -v m="$BENCH_MTU" \
					'$1 == p && $2 == m && $3 == t && $4 == s { printf "%d", $7 }' "$OUT/ours_bw.csv" 2>/dev/null | tail -1)
				tx=$(awk -F, -v p="$pmd" -v t="$test" -v s="$s" -v m="$BENCH_MTU" \
					'$1 == p && $2 == m && $3 == t && $4 == s { printf "%d", $8 }' "$OUT/ours_bw.csv" 2>/dev/null | tail -1)
				# (ours_bw.csv of older sweeps, re-plotted with -P, has no lost_frames)
				lf=$(awk -F, -v p="$pmd" -v t="$test" -v s="$s" -v m="$BENCH_MTU" \
					'NR == 1 { has = $10 == "lost_frames" }
					has && $1 == p && $2 == m && $3 == t && $4 == s && $10 != "" { printf "%d", $10 }' \
					"$OUT/ours_bw.csv" 2>/dev/null | tail -1)
				awk -v p="$pmd" -v m="$BENCH_MTU" -v t="$test" -v s="$s" -v f="$f" -v lm="$lm" \
					-v pm="$pmtu" -v og="$og" -v om="$om" -v rt="$rt" -v tx="$tx" -v lf="$lf" 'BEGIN {
					pay = s < pm ? s : pm
					lg = lm * pay * 8 / 1e3
					goal = s >= 4096 ? 0.9 : (s == 64 ? 0.7 : "")
					ratio = ""; verdict = "no data"
					if (og != "" && lg > 0) {
						ratio = sprintf("%.3f", og / lg)
						verdict = goal == "" ? "-" : (ratio + 0 >= goal ? "meets" : "below")
					}
					pct = (tx != "" && tx > 0) ? sprintf("%.1f", 100 * rt / tx) : ""
					# single-frame messages: the frames our stack moved per second
					# (a READ is two: request and response) against the link frame rate
					fr = ""
					if (om != "" && lm > 0 && s <= pm)
						fr = sprintf("%.3f", om * (t == "read_bw" ? 2 : 1) / lm)
					printf "%s,%s,%s,%s,%s,%.6f,%.6f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", p, m, t, s, f, lm, lg,
						og, om, ratio, goal, verdict, rt, tx, pct, lf, fr }' >> "$OUT/sweep.csv"
			done
		done
	done
	# perftest's write_lat/send_lat report half round trips: so does the link column
	echo "pmd,mtu,test,size,ours_p50_us,ours_p99_us,link_frame,link_half_rtt_p50_us,link_half_rtt_p99_us" > "$OUT/latency.csv"
	for pmd in "${PMDS[@]}"; do
		local lp50 lp99
		lp50=$(awk -F, -v p="$pmd" -v m="$BENCH_MTU" '$1 == p && $2 == m { v = sprintf("%.3f", $7 / 2) } END { print v }' "$OUT/link_latency.csv" 2>/dev/null)
		lp99=$(awk -F, -v p="$pmd" -v m="$BENCH_MTU" '$1 == p && $2 == m { v = sprintf("%.3f", $8 / 2) } END { print v }' "$OUT/link_latency.csv" 2>/dev/null)
		for test in write_lat send_lat; do
			local row
			row=$(awk -F, -v p="$pmd" -v t="$test" -v m="$BENCH_MTU" '$1 == p && $2 == m && $3 == t { v = $5 "," $6 } END { print v }' "$OUT/ours_lat.csv" 2>/dev/null)
			echo "$pmd,$BENCH_MTU,$test,8,${row:-,},$LAT_FRAME,$lp50,$lp99" >> "$OUT/latency.csv"
		done
	done
}

# A CSV as an aligned table, empty fields shown as '-'.
show_csv() { # [file]
	sed -e 's/^,/-,/' -e ':a' -e 's/,,/,-,/' -e 'ta' -e 's/,$/,-/' "$@" | column -t -s,
}

print_tables() {
	echo
	echo "== link limit (linkrate rx rate, median, min, max of the runs; frame = Ethernet through ICRC)"
	show_csv "$OUT/link.csv"
	echo
	echo "== ours as a ratio of the link limit at the same frame size (goal: >= 0.9 at >= 4 KiB, >= 0.7 at 64 B);"
	echo "   medians of $BENCH_OURS_REPS interleaved runs; retransmits/tx_frames: both daemons, per run (median);"
	echo "   frame_ratio (single-frame messages): frames moved per second, a READ counting request and response, / link Mpps"
	awk -F, 'NR == 1 || $8 != "" ' "$OUT/sweep.csv" | show_csv
	if ! awk -F, 'NR > 1 && $8 != "" { found = 1 } END { exit !found }' "$OUT/sweep.csv"; then
		echo "(no numbers of ours:"
		tail -n +2 "$OUT/ours_status.csv" | sed 's/^\([^,]*\),[^,]*,/  \1: /'
		echo ")"
	fi
	if [ "$(wc -l < "$OUT/ours_bw.csv")" -gt 1 ]; then
		echo
		echo "== ours: medians per point; CPU ns per message: roce-perftest's process in its window (app_cpu_ns),"
		echo "   each daemon over the run (cpu_a_ns, cpu_b_ns; loopback: a only); worker 0's busy time per message (busy_a_ns, busy_b_ns:"
		echo "   its loop iterations that did work, from /roce/lcore/stats busy_ns; the lcore's CPU cost, not its polling). loopback = one daemon, --single-process"
		show_csv "$OUT/ours_bw.csv"
	fi
	echo
	echo "== latency, 8 B, half round trips (ours: perftest t_typical/t_p99; link: linkrate ping/pong of a $LAT_FRAME B frame / 2)"
	show_csv "$OUT/latency.csv"
	if [ "$(wc -l < "$OUT/ours_mem.csv")" -gt 1 ]; then
		echo
		echo "== daemon a memory (kB; max VmRSS sampled while the QPs are held)"
		show_csv "$OUT/ours_mem.csv"
	fi
}

plots() {
	command -v gnuplot > /dev/null || { echo "sweep: gnuplot not found: no plots (apt-get install gnuplot-nox)"; return 0; }
	local pmd gp=$RUN/plot.gp
	# link limit: all PMDs, frames/s and Gb/s against frame size
	{
		echo "set terminal pngcairo size 1000,420 font ',10' noenhanced"
		echo "set output '$OUT/linkrate-mtu$BENCH_MTU.png'"
		echo "set datafile separator ','"
		echo "set multiplot layout 1,2 title 'Link limit, IP MTU $BENCH_MTU: bench/linkrate, one lcore per end, median and min..max of the runs'"
		echo "set logscale x 2; set grid; set key top right; set xlabel 'frame bytes (Ethernet..ICRC)'"
		echo "set ylabel 'Mframes/s'; set logscale y"
		printf "plot "
		local first=1
		for pmd in "${PMDS[@]}"; do
			[ $first = 1 ] || printf ", "
			first=0
			printf "'%s' using (strcol(1) eq '%s' ? \$3 : 1/0):4:7:8 with yerrorlines title '%s'" "$OUT/link.csv" "$pmd" "$pmd"
			if awk -F, -v p="$pmd" '$1 == p && $6 != "" { f = 1 } END { exit !f }' "$OUT/link.csv"; then
				printf ", '%s' using (strcol(1) eq '%s' ? \$3 : 1/0):6 with points pt 6 title '%s testpmd'" "$OUT/link.csv" "$pmd" "$pmd"
			fi
		done
		echo
		echo "unset logscale y; set ylabel 'Gb/s (frame bytes)'; set key top left"
		printf "plot "
		first=1
		for pmd in "${PMDS[@]}"; do
			[ $first = 1 ] || printf ", "
			first=0
			printf "'%s' using (strcol(1) eq '%s' ? \$3 : 1/0):5 with linespoints title '%s'" "$OUT/link.csv" "$pmd" "$pmd"
		done
		echo
		echo "unset multiplot"
	} > "$gp"
	gnuplot "$gp" 2> "$OUT/logs/gnuplot.log" || echo "sweep: gnuplot failed, see $OUT/logs/gnuplot.log"
	# per PMD: bandwidth and message rate against message size, link limit and ours
	for pmd in "${PMDS[@]}"; do
		awk -F, -v p="$pmd" '$1 == p' "$OUT/sweep.csv" | grep -q . || continue
		local have_ours=0
		awk -F, -v p="$pmd" '$1 == p && $8 != "" { f = 1 } END { exit !f }' "$OUT/sweep.csv" && have_ours=1
		{
			echo "set terminal pngcairo size 1000,420 font ',10' noenhanced"
			echo "set output '$OUT/bandwidth-$pmd-mtu$BENCH_MTU.png'"
			echo "set datafile separator ','"
			echo "set multiplot layout 1,2 title '$pmd, IP MTU $BENCH_MTU: our stack against the link limit$([ $have_ours = 1 ] || echo ' (ours not measured)')'"
			echo "set logscale x 2; set grid; set key bottom right; set xlabel 'message bytes'"
			echo "set format x '%.0b%B'"
			echo "set ylabel 'Gb/s (payload)'"
			printf "plot '%s' using (strcol(1) eq '%s' && strcol(3) eq 'write_bw' ? \$4 : 1/0):7 with lines lw 2 dt 2 lc rgb 'black' title 'link limit'" "$OUT/sweep.csv" "$pmd"
			if [ $have_ours = 1 ]; then
				for t in write_bw read_bw send_bw; do
					printf ", '%s' using (strcol(1) eq '%s' && strcol(3) eq '%s' ? \$4 : 1/0):8 with linespoints title '%s'" "$OUT/sweep.csv" "$pmd" "$t" "$t"
				done
			fi
			echo
			echo "set ylabel 'million messages/s'; set logscale y; set key top right"
			printf "plot '%s' using (strcol(1) eq '%s' && strcol(3) eq 'write_bw' ? \$4 : 1/0):(\$6 / ceil(\$4 / (\$5 - 58.0))) with lines lw 2 dt 2 lc rgb 'black' title 'link limit'" "$OUT/sweep.csv" "$pmd"
			if [ $have_ours = 1 ]; then
				for t in write_bw read_bw send_bw; do
					printf ", '%s' using (strcol(1) eq '%s' && strcol(3) eq '%s' ? \$4 : 1/0):9 with linespoints title '%s'" "$OUT/sweep.csv" "$pmd" "$t" "$t"
				done
			fi
			echo
			echo "unset multiplot"
		} > "$gp"
		gnuplot "$gp" 2>> "$OUT/logs/gnuplot.log" || echo "sweep: gnuplot failed, see $OUT/logs/gnuplot.log"
		[ $have_ours = 1 ] || continue
		{
			echo "set terminal pngcairo size 640,420 font ',10' noenhanced"
			echo "set output '$OUT/ratio-$pmd-mtu$BENCH_MTU.png'"
			echo "set datafile separator ','"
			echo "set title '$pmd, IP MTU $BENCH_MTU: ours / link limit at the same frame size'"
			echo "set logscale x 2; set grid; set key bottom right; set xlabel 'message bytes'"
			echo "set format x '%.0b%B'; set ylabel 'ratio'; set yrange [0:1<*]"
			echo "set arrow from 4096,0.9 to 1048576,0.9 nohead dt 2 lc rgb 'red'"
			echo "set label 'goal 0.9' at 4096,0.95 tc rgb 'red'"
			echo "set arrow from 64,0.7 to 90,0.7 nohead lw 2 lc rgb 'red'"
			echo "set label '0.7' at 64,0.75 tc rgb 'red'"
			printf "plot "
			local first=1 t
			for t in write_bw read_bw send_bw; do
				[ $first = 1 ] || printf ", "
				first=0
				printf "'%s' using (strcol(1) eq '%s' && strcol(3) eq '%s' ? \$4 : 1/0):10 with linespoints title '%s'" "$OUT/sweep.csv" "$pmd" "$t" "$t"
			done
			echo
		} > "$gp"
		gnuplot "$gp" 2>> "$OUT/logs/gnuplot.log" || echo "sweep: gnuplot failed, see $OUT/logs/gnuplot.log"
	done
	plot_ours
	if [ -n "$BENCH_IMG" ]; then
		mkdir -p "$BENCH_IMG" && cp "$OUT"/linkrate-mtu*.png "$OUT"/bandwidth-*-mtu*.png "$BENCH_IMG"/ &&
			{ cp "$OUT"/ratio-*-mtu*.png "$OUT"/ours-mtu*.png "$BENCH_IMG"/ 2>/dev/null; true; } &&
			echo "plots copied to $BENCH_IMG"
	fi
}

# ours-mtuM.png: every PMD (loopback too) from ours_bw.csv, WRITE: Gb/s,
# Mmsg/s and CPU ns per message (perftest's process, daemon a) against size
plot_ours() {
	local gp=$RUN/plot-ours.gp pmd first t
	awk -F, 'NR > 1 && $3 == "write_bw" && $5 != "" { f = 1 } END { exit !f }' "$OUT/ours_bw.csv" 2>/dev/null || return 0
	{
		echo "set terminal pngcairo size 1400,420 font ',10' noenhanced"
		echo "set output '$OUT/ours-mtu$BENCH_MTU.png'"
		echo "set datafile separator ','"
		echo "set multiplot layout 1,3 title 'ours, WRITE, IP MTU $BENCH_MTU (medians of $BENCH_OURS_REPS rounds; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))'"
		echo "set logscale x 2; set grid; set key top left; set xlabel 'message bytes'; set format x '%.0b%B'"
		for t in "5:Gb/s (payload)" "6:million messages/s" "cpu:CPU ns per message"; do
			echo "set ylabel '${t#*:}'"
			[ "${t%%:*}" = 6 ] && echo "set logscale y; set key top right"
			[ "${t%%:*}" = cpu ] && echo "set logscale y; set key top left"
			printf "plot "
			first=1
			for pmd in "${PMDS[@]}"; do
				if [ "${t%%:*}" = cpu ]; then
					[ $first = 1 ] || printf ", "
					printf "'%s' using (strcol(1) eq '%s' && strcol(3) eq 'write_bw' ? \$4 : 1/0):12 with linespoints title '%s app', " "$OUT/ours_bw.csv" "$pmd" "$pmd"
					printf "'%s' using (strcol(1) eq '%s' && strcol(3) eq 'write_bw' ? \$4 : 1/0):13 with linespoints dt 2 title '%s daemon a'" "$OUT/ours_bw.csv" "$pmd" "$pmd"
				else
					[ $first = 1 ] || printf ", "
					printf "'%s' using (strcol(1) eq '%s' && strcol(3) eq 'write_bw' ? \$4 : 1/0):%s with linespoints title '%s'" "$OUT/ours_bw.csv" "$pmd" "${t%%:*}" "$pmd"
				fi
				first=0
			done
			echo
		done
		echo "unset multiplot"
	} > "$gp"
	gnuplot "$gp" 2>> "$OUT/logs/gnuplot.log" || echo "sweep: gnuplot failed, see $OUT/logs/gnuplot.log"
}

# ---- main -----------------------------------------------------------------

if [ "$REPLOT" = 1 ]; then
	[ -f "$OUT/link_raw.csv" ] || die "no $OUT/link_raw.csv to plot (run without -P first)"
	# the PMDs and MTU of that run, unless given
	[ -n "${BENCH_PMDS_SET:-}" ] || mapfile -t PMDS < <(awk -F, 'NR > 1 && !seen[$1]++ { print $1 }' "$OUT/link_raw.csv")
	BENCH_MTU=$(awk -F, 'NR == 2 { print $2 }' "$OUT/link_raw.csv")
else
	rm -f "$OUT"/{link_raw,link_latency,ours_raw,ours_bw,ours_lat,ours_mem,ours_status,link,sweep,latency}.csv \
		"$OUT"/linkrate-mtu*.png "$OUT"/bandwidth-*-mtu*.png "$OUT"/ratio-*-mtu*.png \
		"$OUT"/logs/*.log
	echo "pmd,mtu,tool,frame,rep,rx_mpps,rx_gbps,tx_mpps,lost,kernel_drop" > "$OUT/link_raw.csv"
	echo "pmd,mtu,frame,probes,lost,rtt_min_us,rtt_p50_us,rtt_p99_us,rtt_max_us" > "$OUT/link_latency.csv"
	echo "pmd,mtu,test,size,rep,bw_gbps,msg_rate_mpps,t_typical_us,t_p99_us,retransmits,tx_packets,timeouts,psn_naks,lost_frames,rnr_naks,status,app_cpu_ns,cpu_a_ns,cpu_b_ns,busy_a_ns,busy_b_ns" > "$OUT/ours_raw.csv"
	echo "pmd,mtu,test,size,bw_gbps,msg_rate_mpps,retransmits,tx_packets,timeouts,lost_frames,rnr_naks,app_cpu_ns,cpu_a_ns,cpu_b_ns,busy_a_ns,busy_b_ns,runs" > "$OUT/ours_bw.csv"
	echo "pmd,mtu,test,size,t_typical_us,t_p99_us,runs" > "$OUT/ours_lat.csv"
	echo "pmd,max_qps,qps,vmrss_kb,vmhwm_kb,status,create_us_per_qp,create_us_last1k" > "$OUT/ours_mem.csv"
	echo "pmd,status,detail" > "$OUT/ours_status.csv"
	echo "sweep: build $BUILD, output $OUT, PMDs ${PMDS[*]}, IP MTU $BENCH_MTU, $BENCH_REPS x ${BENCH_DURATION}s per link point"
	for pmd in "${PMDS[@]}"; do
		[ "$pmd" = loopback ] || link_phase "$pmd"
		ours_phase "$pmd"
	done
fi
summarize
print_tables
plots
echo "results: $OUT/{link,sweep,latency}.csv, $OUT/*.png"
