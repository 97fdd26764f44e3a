#!/bin/bash
# bench/loopback.sh: issue 18's loopback points for one or more builds side
# by side, each run beside the machine's floor read in the same minute.
#
#   bench/loopback.sh [-r ROUNDS] [-t SEC] [-n LAB] [-P POINTS] NAME:BUILD...
#
# In every round each build in turn gets a fresh lab (scripts/lab.sh -p
# af_packet -m 4200: path MTU 4096) and runs every point once; the builds'
# order is reversed every other round. One lab at a time: an older daemon
# whose worker does not sleep when idle would take a CPU from the build
# being measured. Each run is a single-process
# roce-perftest on host a (`--single-process`: both QPs on daemon a, frames
# through its loopback, one worker lcore and the application thread).
#
# Around each run, bench/c2c_bench -q gives the one-way time of a cache
# line between CPUs 0 and 1 (the worker's and the application's). On a VM
# that time is the host's choice and can change from one minute to the
# next (session 23: 54 or 260 ns on this machine, nothing between), and the
# 64 B rates follow it. A run whose two readings fall in different classes
# is "mixed" and left out of the medians; the classes are "near" and "far"
# when the readings of the whole run spread more than twofold (split at the
# geometric mean of the extremes), else "one".
#
#   POINTS  comma-separated TEST:SIZE, TEST = write_bw, send_bw, read_bw,
#           write_lat [default: the issue's goal table:
#           write_bw:64,send_bw:64,read_bw:64,write_bw:4096,write_bw:65536,
#           write_bw:1048576,read_bw:65536,send_bw:65536,write_lat:8]
#   -r ROUNDS  [3]   -t SEC  seconds per bandwidth point [3]  -n LAB  lab
#           name, 1-8 of a-z 0-9 [rlb]
#   Also, per build and round: bench/engine_bench OP 64 2000000 for write,
#   send and read, pinned to CPU 1 (one core: no placement), its engine and
#   application ns per message.
#
# Prints one line per run (round, name, c2c before/after, test, size,
# M msg/s, Gb/s, worker busy ns per message from /roce/lcore/stats, the
# ring-alone rate read before the run: c2c_bench's 384-byte slots from
# CPU 1 to CPU 0 with no work, a bound no consumer of such a ring passes;
# write_lat: typical and p99 us; engine_OP: engine and application ns per
# message), then medians per name, point and class,
# and the median ratio of every other build to the first over the rounds
# where both ran in the same class. Raw lines also in $LOOPBACK_OUT
# (default /tmp/roce-loopback-LAB.txt). Root; labs are brought down at exit.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3
SEC=3
LAB_PFX=rlb
POINTS=write_bw:64,send_bw:64,read_bw:64,write_bw:4096,write_bw:65536,write_bw:1048576,read_bw:65536,send_bw:65536,write_lat:8

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() { echo "loopback: $*" >&2; exit 2; }

while getopts "r:t:n:P:h" opt; do
	case $opt in
	r) ROUNDS=$OPTARG ;;
	t) SEC=$OPTARG ;;
	n) LAB_PFX=$OPTARG ;;
	P) POINTS=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { usage >&2; exit 2; }
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 30 ] || die "bad -r"
[[ $SEC =~ ^[0-9]+$ ]] && [ "$SEC" -ge 1 ] && [ "$SEC" -le 60 ] || die "bad -t"
[[ $LAB_PFX =~ ^[a-z0-9]{1,8}$ ]] || die "bad lab name '$LAB_PFX'"
[ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
IFS=, read -r -a PTS <<<"$POINTS"
for p in "${PTS[@]}"; do
	[[ $p =~ ^(write_bw|send_bw|read_bw|write_lat):[0-9]+$ ]] || die "bad point '$p'"
done
NAMES=() BUILDS=()
for nb in "$@"; do
	[[ $nb =~ ^([a-z0-9_]+):(.+)$ ]] || die "bad NAME:BUILD '$nb'"
	b=$(cd "${BASH_REMATCH[2]}" 2>/dev/null && pwd) || die "no build directory '${BASH_REMATCH[2]}'"
	[ -x "$b/app/roce-daemon/roce-daemon" ] && [ -x "$b/app/perftest/roce-perftest" ] &&
		[ -x "$b/bench/engine_bench" ] || die "no daemon, roce-perftest or engine_bench in $b"
	NAMES+=("${BASH_REMATCH[1]}") BUILDS+=("$b")
done
C2C=${BUILDS[0]}/bench/c2c_bench
[ -x "$C2C" ] || die "no bench/c2c_bench in ${BUILDS[0]}"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (the worker on CPU 1, the application on CPU 0)"
OUT=${LOOPBACK_OUT:-/tmp/roce-loopback-$LAB_PFX.txt}
: > "$OUT"
TMP=$(mktemp -d /tmp/roce-loopback.XXXXXX) || exit 2

lab() { "$SRC/scripts/lab.sh" -n "$LAB_PFX" "$@"; }
cleanup() {
	lab down > /dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT

# "one_way_ns ring_mslots": c2c_bench's line ping-pong and its ring alone
# (384-byte slots handed from CPU 1 to CPU 0 with no work: the most WQEs
# per second any consumer of such a ring could take at this placement)
c2c() {
	timeout 30 "$C2C" 0 1 -q 2>/dev/null | awk '/^c2c / { sub(/.*one_way_ns=/, ""); o = $1 }
		/work=0/ { sub(/.*mslots_per_s=/, ""); m = $1 } END { if (o != "") print o, (m != "" ? m : "-") }'
}
busy_ns() { # worker 0's busy_ns of daemon a (telemetry)
	python3 - "/var/run/dpdk/$LAB_PFX-a/dpdk_telemetry.v2" <<'EOF' 2>/dev/null
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect(sys.argv[1])
info = json.loads(s.recv(1024))
s.send(b"/roce/lcore/stats,0")
print(int(json.loads(s.recv(info["max_output_len"]))["/roce/lcore/stats"]["busy_ns"]))
EOF
}
csv_field() { # file column -> the single-process row's value
	awk -F, -v col="$2" '/^test,/ { for (i = 1; i <= NF; i++) idx[$i] = i; next }
		idx["role"] && $idx["role"] == "single" { print $idx[col]; exit }' "$1"
}

# One run: prints "c2c0 c2c1 value1 value2 busy" (value1/2: M msg/s and Gb/s,
# or typical and p99 us for write_lat), "-" where it failed.
one_run() { # index test size
	local i=$1 t=$2 s=$3 b=${BUILDS[$1]} c0 c1 b0 b1 log="$TMP/run.log" args
	if [ "$t" = write_lat ]; then args=(-n 50000); else args=(-D "$SEC"); fi
	read -r c0 ring <<<"$(c2c)"
	b0=$(busy_ns)
	timeout -s INT $((SEC * 3 + 60)) "$SRC/scripts/lab.sh" -n "$LAB_PFX" -b "$b" run a \
		"$b/app/perftest/roce-perftest" "$t" -s "$s" "${args[@]}" --single-process --output csv \
		> "$log" 2>&1
	b1=$(busy_ns)
	read -r c1 _ <<<"$(c2c)"
	local it v1 v2
	it=$(csv_field "$log" iterations)
	if [ "$t" = write_lat ]; then
		v1=$(csv_field "$log" t_typical_us) v2=$(csv_field "$log" t_p99_us)
	else
		v1=$(csv_field "$log" msg_rate_mpps)
		v2=$(awk -v m="$(csv_field "$log" bw_avg)" 'BEGIN { if (m != "") printf "%.1f", m * 8 * 1.048576 / 1000 }')
	fi
	awk -v t="$t" -v ring="${ring:--}" -v c0="${c0:--}" -v c1="${c1:--}" -v v1="${v1:--}" -v v2="${v2:--}" -v b0="${b0:-}" -v b1="${b1:-}" \
		-v it="${it:-0}" 'BEGIN { printf "%s %s %s %s %s %s\n", c0, c1, v1, v2,
		(b0 != "" && b1 != "" && it > 0 && v2 != "-" && t != "write_lat") ? sprintf("%.1f", (b1 - b0) / it) : "-", ring }'
}

echo "# round name c2c0_ns c2c1_ns test size value1 value2 busy_ns_per_msg ring_mslots (value1/2: M msg/s Gb/s; write_lat: typical p99 us; engine: engine app ns)" | tee -a "$OUT"
for ((r = 1; r <= ROUNDS; r++)); do
	order=("${!BUILDS[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#BUILDS[@]} - 1; i >= 0; i--)); do order+=("$i"); done
	fi
	for i in "${order[@]}"; do
		lab down > /dev/null 2>&1 # (the engine alone first, on a quiet CPU 1)
		for op in write send read; do
			e=$(taskset -c 1 "${BUILDS[$i]}/bench/engine_bench" "$op" 64 2000000 2>/dev/null)
			en=$(sed -n 's/.*engine_ns_per_msg=\([0-9.]*\).*/\1/p' <<<"$e")
			ap=$(sed -n 's/.*app_ns_per_msg=\([0-9.]*\).*/\1/p' <<<"$e")
			echo "$r ${NAMES[$i]} - - engine_$op 64 ${en:--} ${ap:--} - -" | tee -a "$OUT"
		done
		lab -b "${BUILDS[$i]}" -p af_packet -m 4200 up > "$TMP/up.log" 2>&1 ||
			die "the lab did not come up for ${NAMES[$i]}: $(tail -2 "$TMP/up.log" | tr '\n' ' ')"
		for p in "${PTS[@]}"; do
			echo "$r ${NAMES[$i]} $(one_run "$i" "${p%%:*}" "${p#*:}" | awk -v t="${p%%:*}" -v s="${p#*:}" \
				'{ print $1, $2, t, s, $3, $4, $5, $6 }')" | tee -a "$OUT"
		done
	done
done
lab down > /dev/null 2>&1

python3 - "$OUT" "${NAMES[@]}" <<'EOF'
import collections, math, statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l[0].isdigit()]
names = sys.argv[2:]
c2c = [float(x) for r in rows for x in r[2:4] if x != "-"]
split = None
if c2c and max(c2c) > 2 * min(c2c):
    split = math.sqrt(max(c2c) * min(c2c))
def cls(r):
    if r[2] == "-" and r[3] == "-" and r[4].startswith("engine"):
        return "core"
    if r[2] == "-" or r[3] == "-":
        return "mixed"
    if split is None:
        return "one"
    a, b = float(r[2]) < split, float(r[3]) < split
    return ("near" if a else "far") if a == b else "mixed"
num = lambda x: None if x == "-" else float(x)
runs = collections.defaultdict(dict)
rings = collections.defaultdict(list)
for r in rows:
    runs[(r[0], r[4], r[5])][r[1]] = (cls(r), num(r[6]), num(r[7]), num(r[8]))
    if len(r) > 9 and r[9] != "-" and cls(r) not in ("mixed", "core"):
        rings[cls(r)].append(float(r[9]))
print("\n# c2c one-way ns: %s" % (", ".join("%.0f" % x for x in sorted(c2c)) if c2c else "none"))
if split:
    print("# classes split at %.0f ns: near below, far above; mixed runs left out" % split)
for c in sorted(rings):
    print("# %s: the ring alone (c2c_bench, no work per slot) %.1f M slots/s, median of %d readings" % (c, st.median(rings[c]), len(rings[c])))
print("%-12s %-8s %-7s %-5s %3s %10s %10s %10s" % ("point", "size", "name", "class", "n", "value1", "value2", "busy_ns"))
med = lambda v: st.median(v) if v else float("nan")
keys = sorted({(k[1], k[2]) for k in runs}, key=lambda k: (k[0], int(k[1])))
for t, s in keys:
    for n in names:
        bycls = collections.defaultdict(list)
        for (rd, tt, ss), d in runs.items():
            if (tt, ss) == (t, s) and n in d and d[n][0] != "mixed":
                bycls[d[n][0]].append(d[n])
        for c in sorted(bycls):
            v = bycls[c]
            print("%-12s %-8s %-7s %-5s %3d %10.3f %10.3f %10s" % (t, s, n, c, len(v),
                  med([x[1] for x in v if x[1] is not None]), med([x[2] for x in v if x[2] is not None]),
                  "%.1f" % med([x[3] for x in v if x[3] is not None]) if any(x[3] is not None for x in v) else "-"))
    for n in names[1:]:
        bycls = collections.defaultdict(list)
        for (rd, tt, ss), d in runs.items():
            if (tt, ss) == (t, s) and n in d and names[0] in d and d[n][0] == d[names[0]][0] != "mixed" \
                    and d[n][1] and d[names[0]][1]:
                bycls[d[n][0]].append(d[n][1] / d[names[0]][1])
        for c in sorted(bycls):
            v = bycls[c]
            print("%-12s %-8s %-7s %-5s %3d   ratio %s/%s of value1 %.3f (%.3f-%.3f)" % (t, s, n, c, len(v), n,
                  names[0], st.median(v), min(v), max(v)))
EOF
