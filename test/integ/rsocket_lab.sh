#!/bin/bash
# rsockets end to end (issue 21): Debian's unmodified rstream, riostream
# and rcopy (rdmacm-utils) through our librdmacm.so.1 and libibverbs.so.1
# between the two lab hosts: blocking, non-blocking and poll-driven (async)
# transfers of several sizes with data verification, a tiny socket buffer
# that makes every transfer wait for buffer announcements, IPv6, riomap and
# riowrite, a file copied with rcopy; datagram rsockets with udpong (echo
# and one way, non-blocking, blocking, async, IPv4 and IPv6) and every echo
# of udpong's server checked byte for byte by rsocket_dgram_check; then unmodified TCP programs over
# Debian's librspreload.so (which calls our r* symbols): rstream in its
# plain-sockets mode at both ends, and python3 sending a file to
# rsocket_sink with the checksum of both ends compared; and a hostile peer
# whose malformed control message fails its own connection (EPROTO, what
# it sent before still read) while an rstream transfer on the same hosts
# goes on; last, keepalive: with the link to the server cut, a client with
# SO_KEEPALIVE (TCP_KEEPIDLE 1) blocked in rrecv learns its peer is gone
# while one without it is still waiting. Also librspreload's fork mode
# (RDMAV_FORK_SAFE=1) with a forking TCP server, and its fallback to TCP
# when nobody listens on rsockets. TAP output; needs root and rdmacm-utils (skips otherwise).
# Run under flock -o /tmp/roce-lab.lock.
set -uo pipefail

SRC=${ROCE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${ROCE_BUILD_DIR:-$SRC/build}
LAB="$SRC/scripts/lab.sh -b $BUILD"
unset LD_LIBRARY_PATH # the daemons must not load the shims
SHIMS="$BUILD/drivers/verbs-shim:$BUILD/drivers/rdmacm-shim"
SINK="$BUILD/test/integ/rsocket_sink"
HOSTILE="$BUILD/test/integ/rsocket_hostile"
DGCHECK="$BUILD/test/integ/rsocket_dgram_check"
KACHECK="$BUILD/test/integ/rsocket_keepalive"
FORKTCP="$BUILD/test/integ/fork_tcp"
RSPRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
ASAN_PRE=${INTEG_CHILD_PRELOAD:-}
W=$(mktemp -d /tmp/roce-rsocket-XXXXXX)
L=rsck
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() {
	n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift
	for f in "$@"; do [ -f "$f" ] && sed 's/^/# /' "$f" | tail -30; done
}
cleanup() { $LAB -n $L down > /dev/null 2>&1; rm -rf "$W"; }
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP needs root (network namespaces)"; exit 0; fi
for t in rstream riostream rcopy udpong python3 sha256sum; do
	command -v "$t" > /dev/null || { echo "1..0 # SKIP needs $t"; exit 0; }
done
[ -f "$RSPRELOAD" ] || { echo "1..0 # SKIP needs librdmacm1's librspreload.so"; exit 0; }
echo "1..22"

# run HOST [PRELOAD] -- CMD...: a program on a lab host over both shims
run() {
	local h=$1 pre=$2
	shift 3
	pre=$(echo "$ASAN_PRE${ASAN_PRE:+${pre:+:}}$pre")
	$LAB -n $L run "$h" env LD_LIBRARY_PATH="$SHIMS" ${pre:+LD_PRELOAD=$pre} \
		${ASAN_PRE:+ASAN_OPTIONS=${INTEG_CHILD_ASAN_OPTIONS:-}} "$@"
}
# pair NAME PRELOAD "SERVER CMD" "CLIENT CMD": server on a, client on b
# (retried while nobody listens yet); both must exit 0. Outputs $W/NAME.{s,c}
pair() {
	local name=$1 pre=$2 srv=$3 cli=$4 pid rs rc i
	run a "$pre" -- timeout 60 $srv > "$W/$name.s" 2>&1 &
	pid=$!
	for ((i = 0; i < 20; i++)); do
		sleep 0.5
		run b "$pre" -- timeout 60 $cli > "$W/$name.c" 2>&1
		rc=$?
		grep -qiE "refused|rconnect|connect:" "$W/$name.c" || break
	done
	wait "$pid"
	rs=$?
	pair_crc=$rc
	[ "$rc" = 0 ] && [ "$rs" = 0 ]
}
rstream_pair() { # NAME "OPTIONS" [PRELOAD] [SERVER ADDR]
	local a=${4:-198.18.0.11}
	pair "$1" "${3:-}" "rstream -b $a $2" "rstream -s $a $2"
}
check() { # NAME DESCRIPTION
	if [ "$rc_pair" = 0 ]; then ok "$2"; else not_ok "$2" "$W/$1.c" "$W/$1.s"; fi
}

$LAB -n $L down > /dev/null 2>&1
if ! $LAB -n $L up > "$W/up" 2>&1; then
	not_ok "lab up" "$W/up"
	exit 1
fi
ok "lab up"

rstream_pair blk "-S 4096 -C 200 -T v"; rc_pair=$?
check blk "rstream blocking, 4 KiB x 200 each way, verified"
rstream_pair big "-S 1000000 -C 10 -T v"; rc_pair=$?
check big "rstream blocking, 1 MB x 10 each way, verified"
rstream_pair nb "-S 65536 -C 50 -T n -T v"; rc_pair=$?
check nb "rstream non-blocking (-T n), 64 KiB x 50, verified"
rstream_pair async "-S 100000 -C 50 -T a -T v"; rc_pair=$?
check async "rstream async (rpoll, -T a), 100000 B x 50, verified"
rstream_pair tiny "-B 4096 -S 30000 -C 40 -T v"; rc_pair=$?
check tiny "rstream with 4 KiB socket buffers: every transfer waits for buffer announcements"
rstream_pair ipv6 "-S 8192 -C 50 -T v" "" 2001:db8::11; rc_pair=$?
check ipv6 "rstream over IPv6, verified"
pair rio "" "riostream -b 198.18.0.11 -S 65536 -C 50 -T v" "riostream -s 198.18.0.11 -S 65536 -C 50 -T v"
rc_pair=$?
check rio "riostream: riomap at the receiver, riowrite into it, 64 KiB x 50, verified"
pair rio_async "" "riostream -b 198.18.0.11 -S 4096 -C 200 -T a -T v" \
	"riostream -s 198.18.0.11 -S 4096 -C 200 -T a -T v"
rc_pair=$?
check rio_async "riostream async (rpoll), 4 KiB x 200, verified"

head -c 3000000 /dev/urandom > "$W/src.bin"
# rcopy's server serves until killed: its time limit ends it, the client's exit counts
pair rcopy "" "timeout -s INT 8 rcopy" "rcopy $W/src.bin 198.18.0.11:$W/dst.bin"
rc_pair=$?
[ "$pair_crc" = 0 ] && cmp -s "$W/src.bin" "$W/dst.bin" && rc_pair=0
check rcopy "rcopy of a 3 MB file arrives byte for byte"

# Datagram rsockets: Debian's udpong (the UD QPs found by SIDR). udpong
# checks no data and exits 0 whatever happens; it prints its result line
# only for a test whose exchanges all completed, with the server's count of
# the one-way messages that arrived.
# One way only: udpong's echo mode waits 1 ms for each answer and, on a
# late one, sends the stale answer back from then on (it reads answers
# into the message it sends), which never ends on a path slower than 1 ms
# per round trip; rsocket_dgram_check does the echoes, verified.
run a "" -- timeout -s INT 90 udpong -b 198.18.0.11 -T b > "$W/udpong4.s" 2>&1 &
u4=$!
run a "" -- timeout -s INT 90 udpong -b 2001:db8::11 -p 7175 -T b > "$W/udpong6.s" 2>&1 &
u6=$!
sleep 1
# The line must be there (login, start and end answered: every exchange of
# the run worked); the count is reported, not required to be all: one way,
# udpong sends its messages in one burst without retransmission, and in
# 3 of about 12 runs on the loaded lab some or all of a burst were lost
# (doc/rdma-cm.md, "Datagram rsockets"); rsocket_dgram_check below requires
# every echo, retrying a lost one.
udpong_case() { # NAME TRANSFERS "OPTIONS" DESCRIPTION
	local got
	run b "" -- timeout 30 udpong $3 > "$W/$1.c" 2>&1
	got=$(awk '$1 == "custom" { print $3 }' "$W/$1.c")
	if [ -n "$got" ]; then ok "$4: the server counted $got of $2"; else not_ok "$4" "$W/$1.c"; fi
}
udpong_case ud_nb 200 "-s 198.18.0.11 -S 64 -C 200" \
	"udpong one way (non-blocking), 64 B x 200"
udpong_case ud_blk 200 "-s 198.18.0.11 -S 1000 -C 200 -T b" \
	"udpong one way, blocking, 1000 B x 200"
udpong_case ud_async 200 "-s 198.18.0.11 -S 1016 -C 200 -T a" \
	"udpong one way, async (rpoll), 1016 B (the largest on a 1024 MTU) x 200"
run b "" -- timeout 60 "$DGCHECK" 198.18.0.11 7174 100 16 1000 1016 > "$W/dgc4.c" 2>&1
if grep -q "^verified 300$" "$W/dgc4.c"; then
	ok "datagram rsockets against udpong's server: 300 echoes of 16..1016 B equal byte for byte, EMSGSIZE beyond the MTU"
else
	not_ok "datagram rsockets: 300 echoes verified against udpong's server" "$W/dgc4.c" "$W/udpong4.s"
fi
run b "" -- timeout 60 "$DGCHECK" 2001:db8::11 7175 100 16 1000 > "$W/dgc6.c" 2>&1
if grep -q "^verified 200$" "$W/dgc6.c"; then
	ok "datagram rsockets over IPv6: 200 echoes of 16..1000 B equal byte for byte"
else
	not_ok "datagram rsockets over IPv6: 200 echoes verified" "$W/dgc6.c" "$W/udpong6.s"
fi
# after the verified IPv6 echoes (run first, the server once counted 61 of
# 200: the first burst to a new IPv6 peer lost messages; not explained yet)
udpong_case ud_ipv6 200 "-s 2001:db8::11 -p 7175 -S 512 -C 200" \
	"udpong one way over IPv6, 512 B x 200"
# the servers serve until stopped: SIGINT to the processes this script started
kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill -INT "$1" 2> /dev/null; }
kill_tree "$u4"; kill_tree "$u6"
wait "$u4" "$u6" 2> /dev/null

# librspreload: unmodified TCP programs
rstream_pair pre_rstream "-T s -S 65536 -C 50 -T v" "$RSPRELOAD"; rc_pair=$?
check pre_rstream "rstream -T s (plain TCP sockets) through librspreload at both ends, verified"

head -c 4194304 /dev/urandom > "$W/tcp.bin"
# shellcheck disable=SC2016
PYCLI='import socket,sys
s=socket.create_connection((sys.argv[1],int(sys.argv[2])))
s.sendall(open(sys.argv[3],"rb").read())
s.shutdown(socket.SHUT_WR)
s.close()'
run a "" -- timeout 60 "$SINK" 198.18.0.11 7471 > "$W/tcp.out" 2> "$W/sink.err" &
pid=$!
for ((i = 0; i < 20; i++)); do
	sleep 0.5
	run b "$RSPRELOAD" -- timeout 60 /usr/bin/python3 -c "$PYCLI" 198.18.0.11 7471 "$W/tcp.bin" \
		> "$W/py.c" 2>&1
	rc=$?
	grep -q "ConnectionRefused" "$W/py.c" || break
done
wait "$pid"
rs=$?
want=$(sha256sum < "$W/tcp.bin"); got=$(sha256sum < "$W/tcp.out")
if [ "$rc" = 0 ] && [ "$rs" = 0 ] && [ "$want" = "$got" ]; then
	ok "python3 (plain TCP) through librspreload sends 4 MiB; sha256 equal at both ends"
else
	echo "client $rc sink $rs; sha256 sent $want received $got ($(stat -c %s "$W/tcp.out") bytes)" > "$W/m"
	not_ok "python3 through librspreload: 4 MiB with equal sha256" "$W/m" "$W/py.c" "$W/sink.err"
fi

# A hostile peer: valid conn data, "hello", then control message 99. Its
# connection fails with EPROTO after the 5 bytes; rstream alongside is untouched.
run a "" -- timeout 60 "$SINK" 198.18.0.11 7473 > "$W/hostile.out" 2> "$W/hostile.err" &
spid=$!
run a "" -- timeout 60 rstream -b 198.18.0.11 -S 65536 -C 100 -T v > "$W/side.s" 2>&1 &
rpid=$!
for ((i = 0; i < 20; i++)); do
	sleep 0.5
	run b "" -- timeout 30 "$HOSTILE" 198.18.0.11 7473 e0000063 > "$W/hostile.c" 2>&1
	hrc=$?
	grep -q "rdma_connect" "$W/hostile.c" || break
done
run b "" -- timeout 60 rstream -s 198.18.0.11 -S 65536 -C 100 -T v > "$W/side.c" 2>&1
crc=$?
wait "$spid"; src=$?
wait "$rpid"; rrc=$?
if [ "$hrc" = 0 ] && [ "$src" = 1 ] && [ "$(cat "$W/hostile.out")" = hello ] &&
	grep -q "rrecv: Protocol error" "$W/hostile.err" && [ "$crc" = 0 ] && [ "$rrc" = 0 ]; then
	ok "a malformed control message fails only its connection (EPROTO after the bytes before it)"
else
	echo "hostile $hrc sink $src (want 1) got '$(cat "$W/hostile.out")'; rstream client $crc server $rrc" > "$W/m"
	not_ok "a malformed control message fails only its connection" "$W/m" "$W/hostile.c" \
		"$W/hostile.err" "$W/side.c" "$W/side.s"
fi

# librspreload's fork mode (RDMAV_FORK_SAFE=1, rdma-core's preload.c): a
# TCP connection is made first and moved onto an rsocket at its first read
# or write after the fork, to the address the TCP peer has. So host a's
# kernel holds the daemon's address too (shared-NIC, as doc/deploy.md;
# UDP 4791 stays the daemon's: lab.sh drops it at the kernel's ingress).
# fork_tcp's server forks a child per connection, its clients are plain
# sockets (python3 cannot take the fork path: SOCK_CLOEXEC, accept4). The
# daemon on a must count one established CM connection per client.
$LAB -n $L run a sh -c 'ip addr add "$LAB_SELF_IP/32" dev "$LAB_IF"'
cm_est() { $LAB -n $L telemetry a /roce/cm | tr ',{}' '\n\n\n' | sed -n 's/^ *"cm_established": *//p'; }
est0=$(cm_est)
head -c 2000000 /dev/urandom > "$W/fork.bin"
run a "$RSPRELOAD" -- env RDMAV_FORK_SAFE=1 timeout 60 "$FORKTCP" server 198.18.0.11 7477 2 "$W/fork.out" \
	> "$W/fork.s" 2>&1 &
fpid=$!
frc=0
for c in 1 2; do
	for ((i = 0; i < 20; i++)); do
		sleep 0.5
		run b "$RSPRELOAD" -- env RDMAV_FORK_SAFE=1 timeout 30 "$FORKTCP" client 198.18.0.11 7477 \
			"$W/fork.bin" > "$W/fork.c$c" 2>&1
		rc=$?
		grep -q "refused" "$W/fork.c$c" || break
	done
	[ "$rc" = 0 ] || frc=$rc
done
wait "$fpid"; fsrc=$?
est1=$(cm_est)
want=$(sha256sum < "$W/fork.bin")
if [ "$frc" = 0 ] && [ "$fsrc" = 0 ] && [ "$want" = "$(sha256sum < "$W/fork.out.0")" ] &&
	[ "$want" = "$(sha256sum < "$W/fork.out.1")" ] && [ $((est1 - est0)) = 2 ]; then
	ok "librspreload fork mode: a forking TCP server's children take 2 clients' connections onto rsockets (2 CM connections), 2 MB each, sha256 equal"
else
	echo "clients $frc server $fsrc; cm_established $est0 -> $est1 (want +2)" > "$W/m"
	not_ok "librspreload fork mode (RDMAV_FORK_SAFE=1), forking server" "$W/m" "$W/fork.c1" \
		"$W/fork.c2" "$W/fork.s"
fi

# librspreload's fallback: a client's rconnect refused (nobody listens on
# rsockets) turns its socket into a kernel one (transpose_socket, which
# asks rgetsockname(fd, NULL, &zero) for the family: EFAULT from it failed
# every such connect()) and connects over TCP to a kernel server on a.
run a "" -- timeout 60 /usr/bin/python3 -c 'import socket,sys,hashlib
l=socket.create_server(("198.18.0.11",7479)); c,_=l.accept(); h=hashlib.sha256()
while True:
    b=c.recv(65536)
    if not b: break
    h.update(b)
print(h.hexdigest())' > "$W/fb.s" 2>&1 &
fbpid=$!
for ((i = 0; i < 20; i++)); do
	sleep 0.5
	run b "$RSPRELOAD" -- timeout 30 /usr/bin/python3 -c "$PYCLI" 198.18.0.11 7479 "$W/fork.bin" \
		> "$W/fb.c" 2>&1
	rc=$?
	grep -q "ConnectionRefused" "$W/fb.c" || break
done
wait "$fbpid"; fbs=$?
if [ "$rc" = 0 ] && [ "$fbs" = 0 ] && [ "$(cat "$W/fb.s")" = "${want%% *}" ]; then
	ok "librspreload falls back to TCP when rconnect is refused: python3 sends 2 MB to a kernel server, sha256 equal"
else
	echo "client $rc server $fbs" > "$W/m"
	not_ok "librspreload's fallback to a kernel socket" "$W/m" "$W/fb.c" "$W/fb.s"
fi
$LAB -n $L run a sh -c 'ip addr del "$LAB_SELF_IP/32" dev "$LAB_IF"'

# Keepalive: two idle connections to a server on a; the link is cut. The one
# with SO_KEEPALIVE (every 1 s: a zero-length RDMA WRITE) sees its write's
# retries run out and its blocked rrecv fail; the one without still waits.
run a "" -- timeout 90 "$KACHECK" server 198.18.0.11 7475 2 > "$W/ka.s" 2>&1 &
kspid=$!
# the client: started again while the server does not listen yet (it exits at once)
for ((i = 0; i < 20; i++)); do
	sleep 0.5
	run b "" -- timeout 60 "$KACHECK" client 198.18.0.11 7475 1 > "$W/ka1.c" 2>&1 &
	k1=$!
	for ((j = 0; j < 100; j++)); do
		grep -q connected "$W/ka1.c" && break 2
		kill -0 "$k1" 2> /dev/null || break
		sleep 0.1
	done
	wait "$k1"
done
run b "" -- timeout 35 "$KACHECK" client 198.18.0.11 7475 0 > "$W/ka0.c" 2>&1 &
k0=$!
for ((i = 0; i < 20; i++)); do grep -q "accepted 2" "$W/ka.s" && break; sleep 0.5; done
ip -n "$L-a" link set "$L-a" down
wait "$k1"; rk1=$?
wait "$k0"; rk0=$?
ip -n "$L-a" link set "$L-a" up
kill_tree "$kspid"
wait "$kspid" 2> /dev/null
if [ "$rk1" = 0 ] && grep -q "^detected:" "$W/ka1.c" && [ "$rk0" = 124 ]; then
	ok "keepalive: with the link cut, SO_KEEPALIVE finds the peer gone ($(sed -n 's/^detected: //p' "$W/ka1.c")); without it rrecv still waits"
else
	echo "keepalive client exit $rk1 (want 0), plain client exit $rk0 (want 124, still waiting)" > "$W/m"
	not_ok "keepalive finds a vanished peer" "$W/m" "$W/ka1.c" "$W/ka0.c" "$W/ka.s"
fi
exit $failed
