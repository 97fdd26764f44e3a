#!/bin/bash
# The lab: two hosts on one machine, each a network namespace, joined by a
# veth pair, each running a roce-daemon on its end of the link.
#
#   scripts/lab.sh up                  create the hosts, start both daemons
#   scripts/lab.sh run a CMD [ARG...]  run CMD on host a (or b) with the verbs
#                                      shim preloaded and the daemon's socket set
#   scripts/lab.sh telemetry a CMD     query host a's daemon (/roce/port/stats,0)
#   scripts/lab.sh wait-cm a [SECS]    wait (10 s or SECS) until host a's daemon
#                                      holds an rdma_cm id: a listener started
#                                      in the background is there (exit 1 if not)
#   scripts/lab.sh stop a [SIG]        stop host a's daemon only with SIGTERM (or
#                                      SIG: INT, TERM); prints "daemon a: exited RC
#                                      after MS ms"; exit status: the daemon's
#   scripts/lab.sh start a             start host a's daemon again (after stop, or
#                                      with -S at `up`) and wait until it is ready
#   scripts/lab.sh status              what is up, PIDs, addresses
#   scripts/lab.sh relay [ARG...]      (a lab up with -R) restart the relay
#                                      with lossy_link's impairments, e.g.
#                                      --loss 5 --dup 5 --reorder 5; none: clean.
#                                      A restart cuts the link for its duration
#                                      (seconds on a loaded machine): to change
#                                      impairments under traffic, start it once
#                                      with them and --paused, then use impair
#   scripts/lab.sh impair on|off       turn the running relay's impairments on
#                                      or off (SIGUSR1/SIGUSR2: no gap in the
#                                      link); waits until the relay confirms
#   scripts/lab.sh down                SIGTERM the daemons, remove everything;
#                                      exit status 0 only if both daemons exited 0
#
# Options (before the subcommand; environment variable in brackets):
#   -n NAME   lab name [LAB_NAME, default rlab]: namespaces and veths NAME-a,
#             NAME-b; several labs can run at once with different names
#   -b DIR    build directory with app/roce-daemon [LAB_BUILD, default build]
#   -p PMD    af_packet | af_xdp | af_xdp_shared | memif [LAB_PMD, default
#             af_packet]. memif: the daemons talk over net_memif (a is the
#             server, b the client, socket STATE/memif.sock); the veth pair
#             only carries the kernels' own traffic (the programs' TCP)
#   -m MTU    IP MTU of the link and the daemons [LAB_MTU, default 1500]
#             `up` records these three and -w in the lab's state (lab.env); every
#             other command of that lab uses the recorded ones unless given
#             again, so `lab.sh -b B up` then `lab.sh run a CMD` runs B's shim
#   -i MODE   worker idle mode none|pause|yield|sleep [LAB_IDLE, default sleep]
#   -w N      worker lcores per daemon, 1-4 [LAB_WORKERS, default 1]; each
#             worker gets its own RX/TX queue (af_packet qpairs=N; af_xdp
#             cannot: net_af_xdp sees one queue on a veth). The workers share
#             the machine's CPUs with the control thread: use an idle backoff
#             (the default sleep) on a 2-core machine
#   -P        capture: each daemon writes STATE/a.pcapng (--pcap) [LAB_PCAP=1]
#   -K        do not add the tc ingress drop of UDP 4791 on af_packet links
#             [LAB_KERNEL_DROP=0]
#   -D        network only, no daemons [LAB_NO_DAEMONS=1]
#   -R        relay [LAB_RELAY=1]: the hosts' veths end in a third namespace
#             NAME-r (NAME-ra, NAME-rb) where test/interop/lossy_link of the
#             build relays every frame, clean until `relay` gives it
#             impairments (this kernel has no sch_netem); af_packet only
#   -V VID    both daemons' ports on 802.1Q VLAN VID 1..4094 (`vlan =` in
#             their [port], as rxe on a VLAN netdev) [LAB_VLAN, default 0:
#             untagged]; recorded in lab.env like -m. The kernels' own
#             addresses stay untagged on the veths (the programs' TCP)
#   -S HOSTS  `up` starts only these daemons, in this order: "b" or "ba"
#             [LAB_START, default ab]; `start` the others later
#   LAB_OWNER `up` ties the lab to a process (environment only): a PID, or
#             "session": the leader of lab.sh's session (under `meson test`,
#             the test itself: meson starts each test with setsid). A
#             watchdog (its own session, STATE/watchdog.pid) looks every
#             0.5 s and, once the owner has ended (a SIGKILL included: meson's
#             timeout kills the test's whole process group), takes the lab
#             down as `down` does. Unset (an interactive `up`): no owner, the
#             lab stays until `down`. test/meson.build sets "session" for
#             every test (its default test setup)
#   LAB_MAX_QPS  the daemons' max_qps (environment only, default 256)
#   LAB_NICE  the daemons' nice value (environment only, default -5): a
#             dataplane that waits for a CPU behind busy applications stops
#             answering, and its peers exhaust their retries (see
#             doc/architecture.md, lcore stalls); 0 to run them as any process
#   LAB_DAEMON_CONF more [daemon] lines for both daemons' config (environment
#             only, newline-separated), e.g. 'max_inflight_packets = 1024'
#   LAB_PMD_ARGS more devargs for both daemons' port, appended (environment
#             only), e.g. framecnt=512 to try another af_packet ring size
#   LAB_PORT_CONF more [port p0] lines for both daemons' config (environment
#             only, newline-separated), e.g. 'rx_mbuf_size = 2048' 
#
# Hosts (addresses from 198.18.0.0/15 and 2001:db8::/32 only):
#   host a: kernel 198.18.0.1  2001:db8::1    daemon 198.18.0.11  2001:db8::11
#   host b: kernel 198.18.0.2  2001:db8::2    daemon 198.18.0.12  2001:db8::12
# In af_xdp_shared mode the daemon shares the kernel's address (the XDP
# program hands it only RoCEv2; the kernel keeps ARP and everything else).
# In af_xdp mode the PMD's XDP program hands the daemon every frame, so the
# kernels cannot talk over the link: a second veth pair NAME-ma/NAME-mb
# (198.18.1.1, 198.18.1.2; LAB_MGMT_IP, LAB_PEER_MGMT_IP in `run`) carries
# the programs' own TCP exchange.
# Each daemon resolves the other at start-up (`resolve =` in its config).
#
# State (configs, logs, PIDs, exit codes) lives in $LAB_STATE/NAME
# (default /tmp/roce-lab/NAME). Only processes this script started are ever
# signalled, by the PIDs it recorded.
set -uo pipefail

# given on the command line or in the environment (else: lab.env, then defaults)
GIVEN_BUILD=${LAB_BUILD:+1}
GIVEN_PMD=${LAB_PMD:+1}
GIVEN_MTU=${LAB_MTU:+1}
GIVEN_WORKERS=${LAB_WORKERS:+1}
GIVEN_VLAN=${LAB_VLAN:+1}
LAB_NAME=${LAB_NAME:-rlab}
LAB_BUILD=${LAB_BUILD:-build}
LAB_PMD=${LAB_PMD:-af_packet}
LAB_MTU=${LAB_MTU:-1500}
LAB_IDLE=${LAB_IDLE:-sleep}
LAB_WORKERS=${LAB_WORKERS:-1}
LAB_VLAN=${LAB_VLAN:-0}
LAB_PCAP=${LAB_PCAP:-0}
LAB_KERNEL_DROP=${LAB_KERNEL_DROP:-1}
LAB_NO_DAEMONS=${LAB_NO_DAEMONS:-0}
GIVEN_RELAY=${LAB_RELAY:+1}
LAB_RELAY=${LAB_RELAY:-0}
LAB_START=${LAB_START:-ab}
LAB_TIMEOUT=${LAB_TIMEOUT:-30}
AF_PACKET_FRAMES=2048  # af_packet ring slots per queue (write_config)

usage() {
	sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

die() {
	echo "lab.sh: $*" >&2
	exit 1
}

while getopts "n:b:p:m:i:w:S:V:PKDRh" opt; do
	case $opt in
	n) LAB_NAME=$OPTARG ;;
	b) LAB_BUILD=$OPTARG; GIVEN_BUILD=1 ;;
	p) LAB_PMD=$OPTARG; GIVEN_PMD=1 ;;
	m) LAB_MTU=$OPTARG; GIVEN_MTU=1 ;;
	i) LAB_IDLE=$OPTARG ;;
	w) LAB_WORKERS=$OPTARG; GIVEN_WORKERS=1 ;;
	P) LAB_PCAP=1 ;;
	K) LAB_KERNEL_DROP=0 ;;
	D) LAB_NO_DAEMONS=1 ;;
	R) LAB_RELAY=1; GIVEN_RELAY=1 ;;
	S) LAB_START=$OPTARG ;;
	V) LAB_VLAN=$OPTARG; GIVEN_VLAN=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 1 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { usage >&2; exit 1; }
CMD=$1
shift

[[ $LAB_NAME =~ ^[a-z0-9]{1,10}$ ]] || die "name '$LAB_NAME': 1-10 of a-z 0-9 (interface names are NAME-a)"
STATE=${LAB_STATE:-/tmp/roce-lab}/$LAB_NAME

# What `up` recorded (KEY=value lines, read as data, never sourced), for the
# settings not given again. `up` itself starts from the given ones.
load_lab_env() {
	local line key val
	[ -f "$STATE/lab.env" ] || return 0
	while IFS= read -r line; do
		key=${line%%=*}
		val=${line#*=}
		case $key in
		LAB_BUILD) [ -n "$GIVEN_BUILD" ] || LAB_BUILD=$val ;;
		LAB_PMD) [ -n "$GIVEN_PMD" ] || LAB_PMD=$val ;;
		LAB_MTU) [ -n "$GIVEN_MTU" ] || LAB_MTU=$val ;;
		LAB_WORKERS) [ -n "$GIVEN_WORKERS" ] || LAB_WORKERS=$val ;;
		LAB_RELAY) [ -n "$GIVEN_RELAY" ] || LAB_RELAY=$val ;;
		LAB_VLAN) [ -n "$GIVEN_VLAN" ] || LAB_VLAN=$val ;;
		esac
	done < "$STATE/lab.env"
}
[ "$CMD" = up ] || load_lab_env
case $LAB_PMD in af_packet|af_xdp|af_xdp_shared|memif) ;; *) die "unknown PMD '$LAB_PMD'" ;; esac
[[ $LAB_START =~ ^(a|b|ab|ba)$ ]] || die "bad -S '$LAB_START' (a, b, ab or ba)"
[[ $LAB_MTU =~ ^[0-9]+$ ]] || die "bad MTU '$LAB_MTU'"
[[ $LAB_WORKERS =~ ^[1-4]$ ]] || die "bad worker count '$LAB_WORKERS' (1-4)"
[[ $LAB_RELAY =~ ^[01]$ ]] || die "bad LAB_RELAY '$LAB_RELAY' (0 or 1)"
[[ $LAB_VLAN =~ ^[0-9]{1,4}$ ]] && [ "$LAB_VLAN" -le 4094 ] ||
	die "bad VLAN '$LAB_VLAN' (0: untagged, 1..4094)"
[ "$LAB_VLAN" = 0 ] || [ "$LAB_PMD" != af_xdp_shared ] ||
	die "-V: not with af_xdp_shared (the daemon refuses vlan in shared mode)"
# lossy_link reads with AF_PACKET, where the kernel has taken the tag out of the frame
[ "$LAB_VLAN" = 0 ] || [ "$LAB_RELAY" = 0 ] ||
	die "-V: not with -R (the relay would forward the frames untagged)"
[ "$LAB_RELAY" = 0 ] || [ "$LAB_PMD" = af_packet ] || die "-R: only with af_packet"
# net_af_xdp (22.11) takes the queues it may use from ethtool's combined
# channel count; a veth has separate RX and TX channels and no combined ones
# (ethtool -l: n/a; -L combined 2 is refused): "Specified queue count 2 is
# larger than combined queue count 1", even on a veth made with 2 queues.
[ "$LAB_WORKERS" = 1 ] || [ "$LAB_PMD" = af_packet ] || [ "$LAB_PMD" = memif ] ||
	die "-w $LAB_WORKERS: only with af_packet or memif (net_af_xdp sees one queue on a veth)"
[[ ${LAB_MAX_QPS:-256} =~ ^[0-9]+$ ]] || die "bad LAB_MAX_QPS '$LAB_MAX_QPS'"
[[ ${LAB_PMD_ARGS:-} =~ ^[a-z_]+=[A-Za-z0-9_./-]+(,[a-z_]+=[A-Za-z0-9_./-]+)*$ ]] || [ -z "${LAB_PMD_ARGS:-}" ] ||
	die "bad LAB_PMD_ARGS '$LAB_PMD_ARGS' (key=value,...)"

BUILD=$(cd "$LAB_BUILD" 2>/dev/null && pwd) || BUILD=$LAB_BUILD
DAEMON=$BUILD/app/roce-daemon/roce-daemon
XDP_OBJ=$BUILD/app/roce-daemon/roce_xdp.o
TC_OBJ=$BUILD/app/roce-daemon/roce_tc_drop.o
SHIM_DIR=$BUILD/drivers/verbs-shim
RELAY=$BUILD/test/interop/lossy_link

ns() { echo "$LAB_NAME-$1"; }
ifname() { echo "$LAB_NAME-$1"; }
kernel_ip4() { [ "$1" = a ] && echo 198.18.0.1 || echo 198.18.0.2; }
kernel_ip6() { [ "$1" = a ] && echo 2001:db8::1 || echo 2001:db8::2; }
# the kernel's address for TCP between the hosts (af_xdp: the management link)
mgmt_ip4() {
	if [ "$LAB_PMD" = af_xdp ]; then
		[ "$1" = a ] && echo 198.18.1.1 || echo 198.18.1.2
	else
		kernel_ip4 "$1"
	fi
}
peer() { [ "$1" = a ] && echo b || echo a; }
daemon_ip4() {
	if [ "$LAB_PMD" = af_xdp_shared ]; then kernel_ip4 "$1"
	elif [ "$1" = a ]; then echo 198.18.0.11; else echo 198.18.0.12; fi
}
daemon_ip6() {
	if [ "$LAB_PMD" = af_xdp_shared ]; then kernel_ip6 "$1"
	elif [ "$1" = a ]; then echo 2001:db8::11; else echo 2001:db8::12; fi
}
prefix() { echo "$LAB_NAME-$1"; }

ns_exists() { ip netns list 2>/dev/null | grep -qw "^$(ns "$1")"; }

# PID of host $1's daemon if it is alive and still our roce-daemon.
daemon_pid() {
	local f=$STATE/$1.pid pid
	[ -f "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "roce-daemon.*$STATE/$1.conf" || return 1
	echo "$pid"
}

write_config() { # host
	local h=$1 p=$(peer "$1") cpu_ctl cpu_wrk devargs mode=dedicated lcores w
	if [ "$(nproc)" -ge 2 ]; then
		# a: control on CPU 0, worker on CPU 1; b the other way round.
		if [ "$h" = a ]; then cpu_ctl=0; cpu_wrk=1; else cpu_ctl=1; cpu_wrk=0; fi
	else
		cpu_ctl=0; cpu_wrk=0
	fi
	# lcore 0 is the control thread, 1..N the workers: the first worker on
	# cpu_wrk, the next ones alternate starting with the control thread's CPU.
	lcores="0@$cpu_ctl,1@$cpu_wrk"
	for ((w = 2; w <= LAB_WORKERS; w++)); do
		if [ $((w % 2)) = 0 ]; then lcores="$lcores,$w@$cpu_ctl"; else lcores="$lcores,$w@$cpu_wrk"; fi
	done
	case $LAB_PMD in
	af_packet)
		# framecnt: the receive ring must hold what a peer sends without
		# waiting for us: a QP's window of unacknowledged packets (lib/xport
		# XPORT_MAX_UNACKED, 1024) plus its go-back-N resend, or 16 READ
		# responses of 64 frames. The PMD's default (512) overflowed while a
		# worker slept or was descheduled, and each loss cost a window
		# (doc/benchmarks.md). bench/sweep.sh gives linkrate the same.
		devargs="net_af_packet0,iface=$(ifname "$h"),framecnt=$AF_PACKET_FRAMES"
		[ "$LAB_WORKERS" -gt 1 ] && devargs="$devargs,qpairs=$LAB_WORKERS"
		if [ "$LAB_MTU" -gt 1964 ]; then
			devargs="$devargs,framesz=4608,blocksz=36864"
		fi ;;
	af_xdp)
		devargs="net_af_xdp0,iface=$(ifname "$h"),start_queue=0,queue_count=1" ;;
	af_xdp_shared)
		devargs="net_af_xdp0,iface=$(ifname "$h"),start_queue=0,queue_count=1,xdp_prog=$XDP_OBJ"
		mode=shared ;;
	memif)
		# One socket for both namespaces: a path (abstract sockets are per
		# namespace). a listens; b connects, and reconnects (the daemon's
		# link tracking) when a comes (back). bsize holds the largest frame.
		local role=server bsize=2048
		[ "$h" = b ] && role=client
		[ "$LAB_MTU" -gt 2030 ] && bsize=$(( (LAB_MTU + 18 + 127) / 128 * 128 ))
		devargs="net_memif0,role=$role,id=0,socket-abstract=no,socket=$STATE/memif.sock,bsize=$bsize"
		[ "$LAB_WORKERS" -gt 1 ] && devargs="$devargs,rsize=10"
		;;
	esac
	[ -n "${LAB_PMD_ARGS:-}" ] && devargs="$devargs,$LAB_PMD_ARGS"
	cat > "$STATE/$h.conf" <<EOF
; generated by scripts/lab.sh for host $h of lab $LAB_NAME
[daemon]
socket = $STATE/$h.sock
lcores = $lcores
eal_args = --no-huge --no-shconf -m 256 --file-prefix=$(prefix "$h") --no-pci
idle = $LAB_IDLE
max_qps = ${LAB_MAX_QPS:-256}
${LAB_DAEMON_CONF:-}

[port p0]
devargs = $devargs
mode = $mode
mtu = $LAB_MTU
ipv4 = $(daemon_ip4 "$h")/24
ipv6 = $(daemon_ip6 "$h")/64
resolve = $(daemon_ip4 "$p"), $(daemon_ip6 "$p")
$( [ "$LAB_VLAN" = 0 ] || echo "vlan = $LAB_VLAN")
${LAB_PORT_CONF:-}
EOF
}

start_daemon() { # host
	local h=$1 pcap=()
	[ "$LAB_PCAP" = 1 ] && pcap=(--pcap "$STATE/$h.pcapng")
	rm -f "$STATE/$h.pid" "$STATE/$h.rc"
	# the memif server binds its socket: a stale one (a killed server) blocks it
	[ "$LAB_PMD" = memif ] && [ "$h" = a ] && rm -f "$STATE/memif.sock"
	# The wrapper (nice and ip netns exec both exec) records the daemon's PID and, when it ends, its exit
	# status. `ip netns exec` execs the daemon, so $! is the daemon itself.
	STATE_DIR=$STATE LAB_NICE=${LAB_NICE:--5} setsid bash -c '
		nice -n "$LAB_NICE" ip netns exec "$1" "$2" --config "$3" "${@:5}" > "$4.log" 2>&1 &
		echo $! > "$4.pid"
		wait $!
		echo $? > "$4.rc"' lab "$(ns "$h")" "$DAEMON" "$STATE/$h.conf" "$STATE/$h" \
		"${pcap[@]}" < /dev/null > /dev/null 2>&1 &
}

wait_ready() { # host
	local h=$1 deadline=$((SECONDS + LAB_TIMEOUT))
	while [ $SECONDS -lt $deadline ]; do
		if grep -q "roce-daemon: ready" "$STATE/$h.log" 2>/dev/null; then
			return 0
		fi
		if [ -f "$STATE/$h.rc" ]; then
			echo "lab.sh: daemon $h exited with status $(cat "$STATE/$h.rc"):" >&2
			tail -20 "$STATE/$h.log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "lab.sh: daemon $h not ready after ${LAB_TIMEOUT}s:" >&2
	tail -20 "$STATE/$h.log" >&2
	return 1
}

# Wait until host $1's port 0 reports its link up (both daemons started).
wait_link() { # host
	local h=$1 deadline=$((SECONDS + LAB_TIMEOUT))
	command -v dpdk-telemetry.py > /dev/null || return 0
	while [ $SECONDS -lt $deadline ]; do
		echo /roce/port/info,0 | dpdk-telemetry.py -f "$(prefix "$h")" 2>/dev/null |
			grep -q '"link": "up"' && return 0
		sleep 0.2
	done
	echo "lab.sh: daemon $h: port link not up after ${LAB_TIMEOUT}s" >&2
	return 1
}

stop_daemon() { # host [signal]; prints and returns its exit status
	local h=$1 sig=${2:-TERM} pid deadline rc t0
	pid=$(daemon_pid "$h") || {
		if [ -f "$STATE/$h.rc" ]; then
			rc=$(cat "$STATE/$h.rc")
			echo "daemon $h: exited $rc"
			rm -f "$STATE/$h.pid"
			return "$rc"
		fi
		rm -f "$STATE/$h.pid"
		return 0
	}
	t0=$(date +%s%N)
	kill -"$sig" "$pid" 2>/dev/null
	deadline=$((SECONDS + 10))
	while [ ! -f "$STATE/$h.rc" ] && [ $SECONDS -lt $deadline ]; do
		sleep 0.05
	done
	if [ ! -f "$STATE/$h.rc" ]; then
		echo "daemon $h: no exit after SIG$sig, sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null
		sleep 0.5
		rm -f "$STATE/$h.pid"
		return 137
	fi
	rc=$(cat "$STATE/$h.rc")
	echo "daemon $h: exited $rc after $((($(date +%s%N) - t0) / 1000000)) ms (SIG$sig)"
	rm -f "$STATE/$h.pid"
	return "$rc"
}

net_up() {
	local h
	ip netns add "$(ns a)" && ip netns add "$(ns b)" || return 1
	if [ "$LAB_RELAY" = 1 ]; then
		relay_net_up || return 1
	else
		ip link add "$(ifname a)" netns "$(ns a)" mtu "$LAB_MTU" type veth \
			peer name "$(ifname b)" netns "$(ns b)" mtu "$LAB_MTU" || return 1
	fi
	if [ "$LAB_PMD" = af_xdp ]; then
		ip link add "$(ifname ma)" netns "$(ns a)" type veth \
			peer name "$(ifname mb)" netns "$(ns b)" || return 1
		for h in a b; do
			ip -n "$(ns "$h")" addr add "$(mgmt_ip4 "$h")/24" dev "$(ifname "m$h")" &&
			ip -n "$(ns "$h")" link set "$(ifname "m$h")" up || return 1
		done
	fi
	for h in a b; do
		local n i
		n=$(ns "$h"); i=$(ifname "$h")
		ip -n "$n" link set lo up
		# Kernel-made UDP must not reach the PMDs with unfinished checksums.
		ip netns exec "$n" ethtool -K "$i" tx off rx off gro off gso off tso off \
			> /dev/null 2>&1 || true
		ip -n "$n" addr add "$(kernel_ip4 "$h")/24" dev "$i"
		ip -n "$n" addr add "$(kernel_ip6 "$h")/64" dev "$i" nodad
		ip -n "$n" link set "$i" up || return 1
		if [ "$LAB_PMD" = af_packet ] && [ "$LAB_KERNEL_DROP" = 1 ] && [ -f "$TC_OBJ" ]; then
			ip netns exec "$n" tc qdisc add dev "$i" clsact &&
			ip netns exec "$n" tc filter add dev "$i" ingress bpf direct-action \
				obj "$TC_OBJ" sec tc || return 1
		fi
	done
}

# -R: each host's veth ends in the relay namespace, lossy_link joins the ends.
relay_net_up() {
	local h r
	r=$(ns r)
	ip netns add "$r" || return 1
	ip -n "$r" link set lo up
	# the relay's own kernel stays silent on the link (no IPv6 autoconfiguration)
	ip netns exec "$r" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 \
		net.ipv6.conf.all.disable_ipv6=1 > /dev/null 2>&1 || true
	for h in a b; do
		ip link add "$(ifname "$h")" netns "$(ns "$h")" mtu "$LAB_MTU" type veth \
			peer name "$(ifname "r$h")" netns "$r" mtu "$LAB_MTU" || return 1
		# frames go through as they are: no offloads merging or splitting them
		ip netns exec "$r" ethtool -K "$(ifname "r$h")" tx off rx off gro off gso off tso off \
			> /dev/null 2>&1 || true
		ip -n "$r" link set "$(ifname "r$h")" up || return 1
	done
	relay_start
}

# The PID recorded in file $1 if that process is alive and its command line
# still matches $2 (a reused PID does not).
recorded_pid() {
	local pid
	pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
		tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "$2" &&
		echo "$pid"
}

relay_pid() { recorded_pid "$STATE/relay.pid" "lossy_link.*$(ifname ra)"; }

relay_stop() {
	local pid i
	pid=$(relay_pid) || return 0
	kill -TERM "$pid" 2>/dev/null
	# proc_stat, not kill -0: an exited relay is a zombie until PID 1 reaps
	# it, and PID 1 of a container may never do (kill -0 succeeds on one)
	for i in $(seq 50); do proc_stat "$pid" 3 > /dev/null || break; sleep 0.05; done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$STATE/relay.pid"
	return 0
}

# (Re)start the relay with lossy_link's arguments $@; its counts go to relay.log.
relay_start() {
	[ -x "$RELAY" ] || { echo "lab.sh: no $RELAY (build it: ninja -C $LAB_BUILD)" >&2; return 1; }
	relay_stop
	# A link is not a process that waits for a CPU: the relay runs SCHED_FIFO
	# (LAB_RELAY_RT, default 10; 0: at the daemons' nice value). At nice -5
	# beside ten busy-polling programs on two cores it got a slice every few
	# ms and frames waited up to 205 ms in its queue, three times
	# ibv_rc_pingpong's ACK timeout (session 14's soak). Its work per frame
	# is two batched syscalls, bounded by what the daemons send.
	local rt=
	[ "${LAB_RELAY_RT:-10}" != 0 ] && chrt -f "${LAB_RELAY_RT:-10}" true 2> /dev/null &&
		rt="chrt -f ${LAB_RELAY_RT:-10}"
	STATE_DIR=$STATE LAB_NICE=${LAB_NICE:--5} RELAY_RT=$rt setsid bash -c '
		# shellcheck disable=SC2086
		nice -n "$LAB_NICE" $RELAY_RT ip netns exec "$1" "$2" "${@:5}" "$3" "$4" >> "$STATE_DIR/relay.log" 2>&1 &
		echo $! > "$STATE_DIR/relay.pid"' relay "$(ns r)" "$RELAY" "$(ifname ra)" "$(ifname rb)" "$@" \
		< /dev/null > /dev/null 2>&1
	echo "relay: $*" >> "$STATE/relay.log"
	sleep 0.2
	relay_pid > /dev/null || { echo "lab.sh: relay did not start:" >&2; tail -3 "$STATE/relay.log" >&2; return 1; }
}

cmd_relay() {
	[ "$LAB_RELAY" = 1 ] || die "lab $LAB_NAME has no relay (up with -R)"
	ns_exists r || die "lab $LAB_NAME is not up"
	relay_start "$@"
}

# Impairments on/off in the running relay, by signal: the link has no gap.
# Waits (3 s at most) for the relay's "lossy_link: impairments on|off" line.
cmd_impair() {
	local pid sig before i
	[ $# -eq 1 ] && { [ "$1" = on ] || [ "$1" = off ]; } || die "usage: lab.sh impair on|off"
	[ "$LAB_RELAY" = 1 ] || die "lab $LAB_NAME has no relay (up with -R)"
	pid=$(relay_pid) || die "lab $LAB_NAME: the relay is not running"
	sig=USR1
	[ "$1" = off ] && sig=USR2
	before=$(grep -c "^lossy_link: impairments " "$STATE/relay.log" 2>/dev/null)
	kill -"$sig" "$pid" || die "impair: cannot signal the relay ($pid)"
	for i in $(seq 60); do
		[ "$(grep -c "^lossy_link: impairments " "$STATE/relay.log" 2>/dev/null)" -gt "${before:-0}" ] &&
			tail -n 1 "$STATE/relay.log" | grep -q "^lossy_link: impairments $1$" && return 0
		sleep 0.05
	done
	die "impair $1: the relay ($pid) did not confirm"
}

net_down() {
	local h
	relay_stop
	ip netns del "$(ns r)" 2>/dev/null
	for h in a b; do
		if ns_exists "$h"; then
			ip -n "$(ns "$h")" link set dev "$(ifname "$h")" xdp off 2>/dev/null
			ip netns del "$(ns "$h")" 2>/dev/null
		fi
	done
	return 0
}

# ---- the owner (LAB_OWNER): the lab goes down when it ends ----

# Field $2 of live process $1's /proc/PID/stat (6: its session, 22: its
# start time, which a reused PID does not share); fails for a process that
# is gone or a zombie.
proc_stat() {
	local stat n=$(($2 - 2))
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) } # the command may hold spaces and parentheses
	set -- $stat
	[ "$1" != Z ] || return 1
	echo "${!n}"
}
proc_start() { proc_stat "$1" 22; }

# The PID LAB_OWNER names, or nothing (no owner).
owner_pid() {
	local sid
	case ${LAB_OWNER:-} in
	"") return 0 ;;
	session)
		sid=$(proc_stat $$ 6)
		# a session whose leader is gone (or init's) has no owner to follow
		if [ -z "$sid" ] || [ "$sid" -le 1 ] || ! proc_start "$sid" > /dev/null; then
			echo "lab.sh: LAB_OWNER=session: session leader ${sid:-?} is gone; the lab has no owner" >&2
			return 0
		fi
		echo "$sid" ;;
	*)
		[[ $LAB_OWNER =~ ^[0-9]+$ ]] && proc_start "$LAB_OWNER" > /dev/null ||
			die "LAB_OWNER '$LAB_OWNER': not a live PID (or 'session')"
		echo "$LAB_OWNER" ;;
	esac
}

# PID of the lab's watchdog if it is alive and still ours.
watchdog_pid() { recorded_pid "$STATE/watchdog.pid" "lab.sh.* -n $LAB_NAME _watch "; }

watchdog_start() { # owner-pid; the watchdog records itself before the lab is made
	local start k
	start=$(proc_start "$1") || { echo "lab.sh: owner $1 is gone" >&2; return 1; }
	echo "owner $1 (start $start)" > "$STATE/watchdog.log"
	setsid "$BASH" "$0" -n "$LAB_NAME" _watch "$1" "$start" < /dev/null >> "$STATE/watchdog.log" 2>&1 &
	for ((k = 0; k < 100; k++)); do
		watchdog_pid > /dev/null && return 0
		sleep 0.05
	done
	echo "lab.sh: the owner's watchdog did not start" >&2
	return 1
}

watchdog_stop() {
	local pid
	pid=$(watchdog_pid) || return 0
	[ "$pid" = $$ ] && return 0 # the watchdog's own `down`
	kill -TERM "$pid" 2>/dev/null
	rm -f "$STATE/watchdog.pid"
}

# (internal) the watchdog: until owner $1 (start time $2) ends or the lab goes
# down, look every 0.5 s; then `down`. Its own session: a kill of the owner's
# process group does not reach it.
cmd_watch() {
	local owner=$1 start=$2
	echo $$ > "$STATE/watchdog.pid"
	while [ "$(proc_start "$owner")" = "$start" ]; do
		[ "$(cat "$STATE/watchdog.pid" 2>/dev/null)" = $$ ] || exit 0 # down, or another lab
		sleep 0.5
	done
	echo "$(date -u +%T) owner $owner ended: taking lab $LAB_NAME down"
	cmd_down
	echo "$(date -u +%T) down: exit status $?"
	rm -f "$STATE/watchdog.pid"
}

fail_up() {
	echo "lab.sh: up failed, tearing down" >&2
	cmd_down > /dev/null 2>&1
	exit 1
}

cmd_up() {
	local owner
	[ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
	if ns_exists a || ns_exists b || ns_exists r; then
		die "lab $LAB_NAME is already up (scripts/lab.sh -n $LAB_NAME down)"
	fi
	if [ "$LAB_NO_DAEMONS" != 1 ]; then
		[ -x "$DAEMON" ] || die "no $DAEMON (build it: ninja -C $LAB_BUILD)"
		if [ "$LAB_PMD" = af_xdp_shared ] && [ ! -f "$XDP_OBJ" ]; then
			die "no $XDP_OBJ (clang-14 missing at build time?)"
		fi
	fi
	rm -rf "$STATE"
	mkdir -p "$STATE" || die "cannot create $STATE"
	{
		echo "LAB_NAME=$LAB_NAME"; echo "LAB_BUILD=$BUILD"; echo "LAB_PMD=$LAB_PMD"
		echo "LAB_MTU=$LAB_MTU"; echo "LAB_WORKERS=$LAB_WORKERS"; echo "LAB_RELAY=$LAB_RELAY"
		echo "LAB_VLAN=$LAB_VLAN"
	} > "$STATE/lab.env"
	trap fail_up INT TERM
	owner=$(owner_pid) || fail_up
	[ -z "$owner" ] || watchdog_start "$owner" || fail_up
	net_up || fail_up
	if [ "$LAB_NO_DAEMONS" != 1 ]; then
		write_config a
		write_config b
		local order=$LAB_START k
		for ((k = 0; k < ${#order}; k++)); do
			start_daemon "${order:k:1}"
			# a memif client that starts first finds no server: it is ready
			# (link down) and connects once the server is there
			[ "$LAB_PMD" = memif ] && wait_ready "${order:k:1}" || true
		done
		for ((k = 0; k < ${#order}; k++)); do
			wait_ready "${order:k:1}" || fail_up
		done
		# "ready" comes before a port's link: a test that starts at once
		# could meet PORT_DOWN on the far host (the install test's retry)
		if [ ${#order} = 2 ]; then
			wait_link a && wait_link b || fail_up
		fi
	fi
	trap - INT TERM
	cmd_status
}

cmd_down() {
	local rc=0 h
	for h in a b; do
		stop_daemon "$h" || rc=1
	done
	net_down
	rm -f "$STATE"/*.sock
	# last: a `down` killed half-way (meson SIGTERMs a test that timed out,
	# then SIGKILLs its group 0.5 s later) leaves the watchdog to finish it
	watchdog_stop
	return $rc
}

cmd_stop() {
	[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: lab.sh stop a|b [INT|TERM]"
	case $1 in a|b) ;; *) die "host must be a or b" ;; esac
	case ${2:-TERM} in INT|TERM) ;; *) die "signal must be INT or TERM" ;; esac
	ns_exists "$1" || die "lab $LAB_NAME is not up"
	stop_daemon "$1" "${2:-TERM}"
}

cmd_start() {
	[ $# -eq 1 ] || die "usage: lab.sh start a|b"
	case $1 in a|b) ;; *) die "host must be a or b" ;; esac
	ns_exists "$1" || die "lab $LAB_NAME is not up"
	! daemon_pid "$1" > /dev/null || die "daemon $1 is running"
	[ -f "$STATE/$1.conf" ] || die "no $STATE/$1.conf"
	# the log is appended to by nobody else: start a fresh one, keep the old
	[ -f "$STATE/$1.log" ] && mv "$STATE/$1.log" "$STATE/$1.log.$(date +%s%N)"
	start_daemon "$1"
	wait_ready "$1"
}

cmd_status() {
	local h pid
	for h in a b; do
		if ! ns_exists "$h"; then
			echo "host $h: down"
			continue
		fi
		pid=$(daemon_pid "$h") && pid="daemon pid $pid" || pid="no daemon"
		echo "host $h: netns $(ns "$h") if $(ifname "$h") kernel $(kernel_ip4 "$h") $(kernel_ip6 "$h")" \
			"daemon $(daemon_ip4 "$h") $(daemon_ip6 "$h") ($pid, telemetry prefix $(prefix "$h"))" \
			"tcp $(mgmt_ip4 "$h")"
	done
	if [ "$LAB_RELAY" = 1 ]; then
		pid=$(relay_pid) && pid="lossy_link pid $pid" || pid="no relay process"
		echo "relay: netns $(ns r) $(ifname ra) <-> $(ifname rb) ($pid, $(grep '^relay:' \
			"$STATE/relay.log" 2>/dev/null | tail -1))"
	fi
	pid=$(watchdog_pid) && echo "owner: $(head -1 "$STATE/watchdog.log") (watchdog pid $pid)"
	echo "state: $STATE ($LAB_PMD, mtu $LAB_MTU, $LAB_WORKERS worker(s), vlan $LAB_VLAN, build $BUILD)"
}

cmd_run() {
	[ $# -ge 2 ] || die "usage: lab.sh run a|b CMD [ARG...]"
	local h=$1
	shift
	case $h in a|b) ;; *) die "host must be a or b" ;; esac
	ns_exists "$h" || die "lab $LAB_NAME is not up"
	local env=(ROCE_DAEMON_SOCKET="$STATE/$h.sock" LAB_HOST="$h"
		LAB_SELF_IP="$(daemon_ip4 "$h")" LAB_PEER_IP="$(daemon_ip4 "$(peer "$h")")"
		LAB_SELF_IP6="$(daemon_ip6 "$h")" LAB_PEER_IP6="$(daemon_ip6 "$(peer "$h")")"
		LAB_KERNEL_IP="$(kernel_ip4 "$h")" LAB_IF="$(ifname "$h")"
		LAB_MGMT_IP="$(mgmt_ip4 "$h")" LAB_PEER_MGMT_IP="$(mgmt_ip4 "$(peer "$h")")")
	if [ -e "$SHIM_DIR/libibverbs.so.1" ]; then
		env+=(LD_LIBRARY_PATH="$SHIM_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
	fi
	exec ip netns exec "$(ns "$h")" env "${env[@]}" "$@"
}

cmd_telemetry() {
	[ $# -eq 2 ] || die "usage: lab.sh telemetry a|b /roce/port/stats,0"
	command -v dpdk-telemetry.py > /dev/null || die "dpdk-telemetry.py not found (package dpdk)"
	echo "$2" | dpdk-telemetry.py -f "$(prefix "$1")"
}

# A server started in the background listens once its rdma_cm id exists; a
# client that comes earlier is rejected (REJ 8, invalid service ID), as
# loaded CI hosts showed after fixed sleeps of 0.5 and 0.7 s.
cmd_wait_cm() {
	[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: lab.sh wait-cm a|b [SECONDS]"
	local end=$(($(date +%s) + ${2:-10}))
	while [ "$(date +%s)" -lt "$end" ]; do
		cmd_telemetry "$1" /roce/cm 2> /dev/null | grep -qE '"rdma_cm_ids": [1-9]' && return 0
		sleep 0.1
	done
	return 1
}

case $CMD in
up) cmd_up ;;
down) cmd_down ;;
stop) cmd_stop "$@" ;;
start) cmd_start "$@" ;;
status) cmd_status ;;
run) cmd_run "$@" ;;
telemetry) cmd_telemetry "$@" ;;
wait-cm) cmd_wait_cm "$@" ;;
relay) cmd_relay "$@" ;;
impair) cmd_impair "$@" ;;
_watch) [ $# -eq 2 ] || die "usage: (internal) lab.sh -n NAME _watch PID START"; cmd_watch "$@" ;;
*) usage >&2; exit 1 ;;
esac
