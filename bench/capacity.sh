#!/bin/bash
# bench/capacity.sh: issue 18's points where the stack is the limit (one
# daemon's loopback; two daemons over net_memif; memif's own link rate) for
# one or more builds side by side, each run between two readings of the
# machine's floor.
#
#   bench/capacity.sh [-r ROUNDS] [-t SEC] [-n LAB] [-P POINTS] NAME:BUILD...
#
# In every round each build in turn runs every point once, on a fresh lab
# per kind (scripts/lab.sh -m 4200: path MTU 4096; af_packet for the
# loopback points, memif for the memif ones), one lab at a time: an older
# daemon whose worker does not sleep when idle would take a CPU from the
# build being measured. The builds' order is reversed every other round.
#
#   POINTS  comma-separated, each one of
#           TEST:SIZE        loopback: roce-perftest --single-process on host
#                            a (both QPs on daemon a, frames through its
#                            loopback; one worker lcore and the application)
#           memif:TEST:SIZE  two daemons over net_memif: server on b, client
#                            on a, both pinned to the CPU of the receiving
#                            daemon's worker (b's, CPU 0, for WRITE and SEND;
#                            a's, CPU 1, for READ), as bench/sweep.sh does
#           link:FRAME       bench/linkrate over net_memif (rx on CPU 0, tx on
#                            CPU 1), FRAME bytes per frame: the link limit,
#                            run once per round (name "link")
#           TEST = write_bw, send_bw, read_bw, write_lat (loopback only).
#           Default: issue 18's goal table, loopback and memif:
#           write_bw:64,send_bw:64,read_bw:64,write_bw:4096,write_bw:65536,
#           write_bw:1048576,read_bw:65536,send_bw:65536,write_lat:8,
#           memif:write_bw:64,memif:write_bw:4096,memif:write_bw:65536,
#           memif:write_bw:1048576,link:4154
#   -r ROUNDS  [3]   -t SEC  seconds per bandwidth point [3]   -n LAB  lab
#           name, 1-8 of a-z 0-9 [rcap]
#   Also, per build and round: bench/engine_bench OP 64 2000000 for write,
#   send and read, pinned to CPU 1 with no lab up (one core: no placement).
#
# Around each run, bench/c2c_bench -q gives the one-way time of a cache
# line between CPUs 0 and 1. On a VM that time is the host's choice and
# can change from one minute to the next (session 23: 51-64 or 249-292 ns
# on this machine, nothing between), and the 64 B rates and memif's link
# rate follow it. A run whose two readings fall in different classes is
# "mixed" and left out of the medians; the classes are "near" and "far"
# when the readings of the whole run spread more than twofold (split at
# the geometric mean of the extremes), else "one". The reading before each
# run also gives the ring alone (c2c_bench's 384-byte slots from CPU 1 to
# CPU 0 with no work, two lines each as a small RC WQE: a bound no consumer
# of such a ring passes).
#
# Prints one line per run: round, name, c2c before and after, test, size,
# value1, value2, busy ns per message (worker 0 of daemon a, and of b over
# memif, from /roce/lcore/stats busy_ns), ring M slots/s. value1/value2:
# M msg/s and Gb/s; write_lat: typical and p99 us; engine_OP: engine and
# application ns per message; link_memif: Mpps and Gb/s of frames. Then
# medians per name, point and class; the ratio of every other build to the
# first over the rounds where both ran in the same class; and, per class,
# the issue's ratios: memif 64 B WRITE rate / loopback's, and memif
# payload Gb/s of >= 4 KiB messages / linkrate's payload rate (Mpps x
# (FRAME - 58) bytes: Ethernet, IPv4, UDP, BTH and ICRC taken off); and
# write_lat's typical latency over its floor, twice the class's median
# c2c one-way time (a half round trip hands a line to the worker and one
# back, each what c2c_bench times; doc/benchmarks.md, session 27). Raw
# lines also in $CAPACITY_OUT (default /tmp/roce-capacity-LAB.txt). Root;
# labs are brought down at exit.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3
SEC=3
LAB_NAME=rcap
POINTS=write_bw:64,send_bw:64,read_bw:64,write_bw:4096,write_bw:65536,write_bw:1048576,read_bw:65536,send_bw:65536,write_lat:8,memif:write_bw:64,memif:write_bw:4096,memif:write_bw:65536,memif:write_bw:1048576,link:4154

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() { echo "capacity: $*" >&2; exit 2; }

while getopts "r:t:n:P:h" opt; do
	case $opt in
	r) ROUNDS=$OPTARG ;;
	t) SEC=$OPTARG ;;
	n) LAB_NAME=$OPTARG ;;
	P) POINTS=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { usage >&2; exit 2; }
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 30 ] || die "bad -r"
[[ $SEC =~ ^[0-9]+$ ]] && [ "$SEC" -ge 1 ] && [ "$SEC" -le 60 ] || die "bad -t"
[[ $LAB_NAME =~ ^[a-z0-9]{1,8}$ ]] || die "bad lab name '$LAB_NAME'"
[ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
IFS=, read -r -a PTS <<<"$POINTS"
LOOP_PTS=() MEMIF_PTS=() LINK_PTS=()
for p in "${PTS[@]}"; do
	if [[ $p =~ ^(write_bw|send_bw|read_bw|write_lat):[0-9]+$ ]]; then
		LOOP_PTS+=("$p")
	elif [[ $p =~ ^memif:((write_bw|send_bw|read_bw):[0-9]+)$ ]]; then
		MEMIF_PTS+=("${BASH_REMATCH[1]}")
	elif [[ $p =~ ^link:([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 64 ] && [ "${BASH_REMATCH[1]}" -le 9000 ]; then
		LINK_PTS+=("${BASH_REMATCH[1]}")
	else
		die "bad point '$p'"
	fi
done
NAMES=() BUILDS=()
for nb in "$@"; do
	[[ $nb =~ ^([a-z0-9_]+):(.+)$ ]] || die "bad NAME:BUILD '$nb'"
	[ "${BASH_REMATCH[1]}" != link ] || die "the name 'link' is the link-rate runs'"
	b=$(cd "${BASH_REMATCH[2]}" 2>/dev/null && pwd) || die "no build directory '${BASH_REMATCH[2]}'"
	[ -x "$b/app/roce-daemon/roce-daemon" ] && [ -x "$b/app/perftest/roce-perftest" ] &&
		[ -x "$b/bench/engine_bench" ] || die "no daemon, roce-perftest or engine_bench in $b"
	NAMES+=("${BASH_REMATCH[1]}") BUILDS+=("$b")
done
C2C=${BUILDS[0]}/bench/c2c_bench
LINKRATE=${BUILDS[0]}/bench/linkrate
[ -x "$C2C" ] || die "no bench/c2c_bench in ${BUILDS[0]}"
[ ${#LINK_PTS[@]} = 0 ] || [ -x "$LINKRATE" ] || die "no bench/linkrate in ${BUILDS[0]}"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (the workers and the applications on CPUs 0 and 1)"
OUT=${CAPACITY_OUT:-/tmp/roce-capacity-$LAB_NAME.txt}
: > "$OUT"
TMP=$(mktemp -d /tmp/roce-capacity.XXXXXX) || exit 2
LR_PIDS=()

lab() { "$SRC/scripts/lab.sh" -n "$LAB_NAME" "$@"; }
cleanup() {
	local p
	for p in "${LR_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	lab down > /dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT

# "one_way_ns ring_mslots" from c2c_bench -q (the ring moving a small RC WQE's one line)
c2c() {
	timeout 30 "$C2C" 0 1 -q 2>/dev/null | awk '/^c2c / { sub(/.*one_way_ns=/, ""); o = $1 }
		/work=0.* lines=0 / { sub(/.*mslots_per_s=/, ""); m = $1 } END { if (o != "") print o, (m != "" ? m : "-") }'
}
busy_ns() { # host -> worker 0's busy_ns of its daemon (telemetry), empty if none
	"$SRC/bench/roce_counters.py" get "$LAB_NAME-$1" lcore0.busy_ns 2>/dev/null | sed 's/^-$//'
}
csv_field() { # file role column -> that row's value
	awk -F, -v role="$2" -v col="$3" '/^test,/ { for (i = 1; i <= NF; i++) idx[$i] = i; next }
		idx["role"] && $idx["role"] == role { print $idx[col]; exit }' "$1"
}
per_msg() { # before after iterations -> ns per message or "-"
	awk -v a="$1" -v b="$2" -v it="$3" 'BEGIN { if (a != "" && b != "" && it > 0) printf "%.1f", (b - a) / it; else print "-" }'
}

# One perftest run of build index I: prints "c2c0 c2c1 value1 value2 busy ring".
perftest_run() { # index kind(loop|memif) test size
	local i=$1 kind=$2 t=$3 s=$4 b=${BUILDS[$1]} c0 c1 ring a0 a1 b0 b1 srv="" args role=single
	local log="$TMP/client.log" pf=${BUILDS[$1]}/app/perftest/roce-perftest
	if [ "$t" = write_lat ]; then args=(-n 50000); else args=(-D "$SEC"); fi
	read -r c0 ring <<<"$(c2c)"
	a0=$(busy_ns a)
	if [ "$kind" = loop ]; then
		timeout -s INT $((SEC * 3 + 60)) "$SRC/scripts/lab.sh" -n "$LAB_NAME" -b "$b" run a \
			"$pf" "$t" -s "$s" "${args[@]}" --single-process --output csv > "$log" 2>&1
	else
		local cpu=0
		[ "$t" = read_bw ] && cpu=1
		b0=$(busy_ns b)
		timeout -s INT $((SEC * 3 + 60)) "$SRC/scripts/lab.sh" -n "$LAB_NAME" -b "$b" run b \
			taskset -c $cpu "$pf" "$t" -s "$s" "${args[@]}" --output csv > "$TMP/server.log" 2>&1 &
		srv=$!
		local deadline=$((SECONDS + 10))
		while [ $SECONDS -lt $deadline ] && kill -0 "$srv" 2>/dev/null &&
			! ip netns exec "$LAB_NAME-b" ss -ltnH 'sport = :18515' 2>/dev/null | grep -q .; do
			sleep 0.1
		done
		timeout -s INT $((SEC * 3 + 60)) "$SRC/scripts/lab.sh" -n "$LAB_NAME" -b "$b" run a \
			taskset -c $cpu "$pf" "$t" -s "$s" "${args[@]}" --output csv 198.18.0.2 > "$log" 2>&1
		wait "$srv" 2>/dev/null
		b1=$(busy_ns b)
		role=client
	fi
	a1=$(busy_ns a)
	read -r c1 _ <<<"$(c2c)"
	local it v1 v2 busy
	it=$(csv_field "$log" $role iterations)
	if [ "$t" = write_lat ]; then
		v1=$(csv_field "$log" $role t_typical_us) v2=$(csv_field "$log" $role t_p99_us) busy=-
	else
		v1=$(csv_field "$log" $role msg_rate_mpps)
		v2=$(awk -v m="$(csv_field "$log" $role bw_avg)" 'BEGIN { if (m != "") printf "%.1f", m * 8 * 1.048576 / 1000 }')
		busy=$(per_msg "$a0" "$a1" "${it:-0}")
		[ "$kind" = memif ] && busy="$busy/$(per_msg "${b0:-}" "${b1:-}" "${it:-0}")"
	fi
	echo "${c0:--} ${c1:--} ${v1:--} ${v2:--} $busy ${ring:--}"
}

# One linkrate run over memif: prints "c2c0 c2c1 mpps gbps - ring".
EAL=(--no-huge --no-shconf -m 256 --no-pci --no-telemetry --log-level=pmd.net.memif:error)
link_run() { # frame
	local f=$1 bsize=2048 sock="$TMP/lr.sock" c0 c1 ring rx mpps gbps
	while [ $bsize -lt "$f" ]; do bsize=$((bsize * 2)); done
	read -r c0 ring <<<"$(c2c)"
	rm -f "$sock"
	taskset -c 0 "$LINKRATE" -l 0 "${EAL[@]}" --file-prefix="$LAB_NAME-lrx" \
		--vdev="net_memif0,role=server,socket=$sock,socket-abstract=no,bsize=$bsize" -- --role rx \
		--size "$f" --mbuf-size $((f + 1152)) --timeout $((SEC + 20)) > "$TMP/lr-rx.log" 2>&1 &
	rx=$!
	LR_PIDS=("$rx")
	local deadline=$((SECONDS + 15))
	while [ $SECONDS -lt $deadline ] && kill -0 "$rx" 2>/dev/null && [ ! -S "$sock" ]; do sleep 0.05; done
	taskset -c 1 timeout $((SEC + 20)) "$LINKRATE" -l 1 "${EAL[@]}" --file-prefix="$LAB_NAME-ltx" \
		--vdev="net_memif0,role=client,socket=$sock,socket-abstract=no,bsize=$bsize" -- --role tx \
		--size "$f" --mbuf-size $((f + 1152)) --duration "$SEC" --dst-mac ff:ff:ff:ff:ff:ff \
		--timeout 15 > "$TMP/lr-tx.log" 2>&1
	wait "$rx" 2>/dev/null
	LR_PIDS=()
	read -r c1 _ <<<"$(c2c)"
	if grep -q "window=steady" "$TMP/lr-rx.log"; then
		mpps=$(sed -n 's/^result .* mpps=\([^ ]*\).*/\1/p' "$TMP/lr-rx.log" | head -1)
		gbps=$(sed -n 's/^result .* gbps=\([^ ]*\).*/\1/p' "$TMP/lr-rx.log" | head -1)
	fi
	echo "${c0:--} ${c1:--} ${mpps:--} ${gbps:--} - ${ring:--}"
}

emit() { # round name test size "c2c0 c2c1 v1 v2 busy ring"
	local r=$1 n=$2 t=$3 s=$4 c0 c1 v1 v2 busy ring
	read -r c0 c1 v1 v2 busy ring <<<"$5"
	echo "$r $n $c0 $c1 $t $s $v1 $v2 $busy $ring" | tee -a "$OUT"
}

# Every point of one kind for build index I, on a fresh lab of PMD.
points_on_lab() { # round index kind pmd test_prefix point...
	local r=$1 i=$2 kind=$3 pmd=$4 pfx=$5 p
	shift 5
	[ $# -gt 0 ] || return 0
	lab -b "${BUILDS[$i]}" -p "$pmd" -m 4200 up > "$TMP/up.log" 2>&1 ||
		die "the $pmd lab did not come up for ${NAMES[$i]}: $(tail -2 "$TMP/up.log" | tr '\n' ' ')"
	for p; do
		emit "$r" "${NAMES[$i]}" "$pfx${p%%:*}" "${p#*:}" "$(perftest_run "$i" "$kind" "${p%%:*}" "${p#*:}")"
	done
	lab down > /dev/null 2>&1
}

echo "# round name c2c0_ns c2c1_ns test size value1 value2 busy_ns_per_msg ring_mslots" | tee -a "$OUT"
for ((r = 1; r <= ROUNDS; r++)); do
	order=("${!BUILDS[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#BUILDS[@]} - 1; i >= 0; i--)); do order+=("$i"); done
	fi
	for i in "${order[@]}"; do
		n=${NAMES[$i]}
		lab down > /dev/null 2>&1 # the engine alone first, on a quiet CPU 1
		for op in write send read; do
			e=$(taskset -c 1 "${BUILDS[$i]}/bench/engine_bench" "$op" 64 2000000 2>/dev/null)
			en=$(sed -n 's/.*engine_ns_per_msg=\([0-9.]*\).*/\1/p' <<<"$e")
			ap=$(sed -n 's/.*app_ns_per_msg=\([0-9.]*\).*/\1/p' <<<"$e")
			emit "$r" "$n" "engine_$op" 64 "- - ${en:--} ${ap:--} - -"
		done
		points_on_lab "$r" "$i" loop af_packet "" "${LOOP_PTS[@]}"
		points_on_lab "$r" "$i" memif memif memif_ "${MEMIF_PTS[@]}"
	done
	for f in "${LINK_PTS[@]}"; do
		emit "$r" link link_memif "$f" "$(link_run "$f")"
	done
done

python3 - "$OUT" "${NAMES[@]}" <<'EOF'
import collections, math, statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l[0].isdigit()]
names = sys.argv[2:]
c2c = [float(x) for r in rows for x in r[2:4] if x != "-"]
split = math.sqrt(max(c2c) * min(c2c)) if c2c and max(c2c) > 2 * min(c2c) else None
def cls(r):
    if r[4].startswith("engine_"):
        return "core"
    if r[2] == "-" or r[3] == "-":
        return "mixed"
    if split is None:
        return "one"
    a, b = float(r[2]) < split, float(r[3]) < split
    return ("near" if a else "far") if a == b else "mixed"
num = lambda x: None if x in ("-", "") else float(x)
runs = collections.defaultdict(dict)   # (round, test, size) -> name -> (class, v1, v2, busy)
rings = collections.defaultdict(list)
for r in rows:
    c = cls(r)
    runs[(r[0], r[4], r[5])][r[1]] = (c, num(r[6]), num(r[7]), r[8])
    if r[9] != "-" and c not in ("mixed", "core"):
        rings[c].append(float(r[9]))
med = lambda v: st.median(v) if v else None
fmt = lambda x: "-" if x is None else "%.3f" % x
print("\n# c2c one-way ns: %s" % (", ".join("%.0f" % x for x in sorted(c2c)) if c2c else "none"))
if split:
    print("# classes split at %.0f ns: near below, far above; mixed runs left out" % split)
for c in sorted(rings):
    print("# %s: the ring alone %.1f M slots/s (median of %d readings)" % (c, st.median(rings[c]), len(rings[c])))
def values(t, s, n):
    by = collections.defaultdict(list)
    for (rd, tt, ss), d in runs.items():
        if (tt, ss) == (t, s) and n in d and d[n][0] != "mixed":
            by[d[n][0]].append(d[n])
    return by
print("%-15s %-8s %-7s %-5s %3s %10s %10s %12s" % ("point", "size", "name", "class", "n", "value1", "value2", "busy_ns"))
keys = sorted({(k[1], k[2]) for k in runs}, key=lambda k: (k[0], int(k[1])))
medians = {}
for t, s in keys:
    for n in names + ["link"]:
        for c, v in sorted(values(t, s, n).items()):
            m1 = med([x[1] for x in v if x[1] is not None])
            m2 = med([x[2] for x in v if x[2] is not None])
            medians[(t, s, n, c)] = (m1, m2)
            busy = [x[3] for x in v if x[3] != "-"]
            bmed = "-"
            if busy:
                parts = list(zip(*[b.split("/") for b in busy]))
                bmed = "/".join("%.1f" % st.median(float(y) for y in p if y != "-") if any(y != "-" for y in p) else "-" for p in parts)
            print("%-15s %-8s %-7s %-5s %3d %10s %10s %12s" % (t, s, n, c, len(v), fmt(m1), fmt(m2), bmed))
    for n in names[1:]:
        by = collections.defaultdict(list)
        for (rd, tt, ss), d in runs.items():
            if (tt, ss) == (t, s) and n in d and names[0] in d and d[n][0] == d[names[0]][0] != "mixed" \
                    and d[n][1] and d[names[0]][1]:
                by[d[n][0]].append(d[n][1] / d[names[0]][1])
        for c, v in sorted(by.items()):
            print("%-15s %-8s %-7s %-5s %3d   %s/%s of value1: %.3f (%.3f-%.3f)" % (t, s, n, c, len(v), n,
                  names[0], st.median(v), min(v), max(v)))
# write_lat's floor: a half round trip moves at least two lines between the
# cores (the post to the worker, the data back), each the hand-over that
# c2c_bench times (one_way_ns), so 2 x one_way_ns of the class.
c2c_by = collections.defaultdict(list)
for r in rows:
    c = cls(r)
    if c not in ("mixed", "core"):
        c2c_by[c] += [float(x) for x in r[2:4] if x != "-"]
print("\n# write_lat typical / its floor (2 x c2c one-way of the class; goal <= 0.6 us)")
for (t, s, n, c), (v1, v2) in sorted(medians.items()):
    if t == "write_lat" and v1 and c2c_by.get(c):
        floor = 2 * st.median(c2c_by[c]) / 1000
        print("%-7s %-5s write_lat %s B: %.3f us / floor %.3f us = %.2f" % (n, c, s, v1, floor, v1 / floor))
print("\n# issue 18's ratios, medians per class")
for n in names:
    for c in ("near", "far", "one"):
        m, l = medians.get(("memif_write_bw", "64", n, c)), medians.get(("write_bw", "64", n, c))
        if m and l and m[0] and l[0]:
            print("%-7s %-5s memif 64 B WRITE / loopback's: %.3f (%.2f / %.2f M msg/s; goal >= 0.5)" % (n, c, m[0] / l[0], m[0], l[0]))
        for (t, s, nn, cc), (v1, v2) in sorted(medians.items()):
            if nn != n or cc != c or not t.startswith("memif_") or int(s) < 4096 or v2 is None:
                continue
            for (lt, ls, ln, lc), (lm, lg) in medians.items():
                if lt == "link_memif" and lc == c and lm:
                    pay = lm * (int(ls) - 58) * 8 / 1000
                    print("%-7s %-5s %s %s B / memif link payload (%s B frames): %.3f (%.1f / %.1f Gb/s; goal >= 0.8)" % (
                        n, c, t, s, ls, v2 / pay, v2, pay))
EOF
