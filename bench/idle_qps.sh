#!/bin/bash
# bench/idle_qps.sh: what N connected but idle RC QPs cost one busy QP, and
# the daemon memory they take. One daemon (host a of scripts/lab.sh), the
# busy QP is roce-perftest --single-process (both ends on that daemon,
# frames through its loopback path).
#
#   bench/idle_qps.sh [-n QPS] [-r ROUNDS] [-d SEC] [-s SIZE] BUILD...
#
# For each round and each BUILD (the order reversed every other round, so
# that none always goes first): the lab up with that build's daemon and shim
# (LAB_MAX_QPS = QPS + 256, client_max_qps = 0), then
#   alone: perftest write_bw -s SIZE -D SEC, one QP;
#   idle:  bench/qp_hold QPS HOLD connect (QPS QPs joined in pairs, moved
#          to RTS, nothing posted) and, while they are held, the same perftest;
# the daemon's Rss and Pss (/proc/PID/smaps_rollup) before and while the QPs
# are held, and its CPU time (utime + stime of every thread) over each
# perftest run, each run between two readings of bench/c2c_bench -q (c2c=:
# one-way ns between CPUs 0 and 1 before and after alone, before and after
# idle; the VM runs them near or far apart and the rate follows). Printed
# per run, then medians per build, and the ratio's median over the rounds
# whose four readings fall in one placement class:
#   alone_mmsgs, idle_mmsgs   message rate of the busy QP (M msg/s)
#   ratio                     idle / alone (goal >= 0.9)
#   d_ns / a_ns               CPU ns per message of the daemon (whole process
#                             over the whole perftest run / messages) and of
#                             perftest (its CPU in the measured window / messages,
#                             both sides: one process), alone and idle
#   rss_kb_qp, pss_kb_qp      (held - before) / QPS
# perftest and qp_hold are always the first BUILD's (their ABI is the
# shim's; only the daemon and the shim change between builds).
# Options: -n QPS [16384] -r ROUNDS [3] -d SEC [3] -s SIZE [64]
#          -l LAB name [IDLEQ_LAB, default perfiq] -o FILE raw lines [/tmp/roce-idle-LAB.txt]
# Root; take the lab lock around it: flock -o /tmp/roce-lab.lock bench/idle_qps.sh ...
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
QPS=16384
ROUNDS=3
SEC=3
SIZE=64
LAB_NAME=${IDLEQ_LAB:-perfiq}
OUT=""

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() { echo "idle_qps: $*" >&2; exit 2; }

while getopts "n:r:d:s:l:o:h" opt; do
	case $opt in
	n) QPS=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	d) SEC=$OPTARG ;;
	s) SIZE=$OPTARG ;;
	l) LAB_NAME=$OPTARG ;;
	o) OUT=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { usage >&2; exit 2; }
[[ $QPS =~ ^[0-9]+$ ]] && [ "$QPS" -ge 2 ] && [ "$QPS" -le 262144 ] || die "bad -n '$QPS' (2..262144)"
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] || die "bad -r '$ROUNDS'"
[[ $SEC =~ ^[0-9]+$ ]] && [ "$SEC" -ge 1 ] && [ "$SEC" -le 30 ] || die "bad -d '$SEC'"
[[ $SIZE =~ ^[0-9]+$ ]] && [ "$SIZE" -ge 1 ] && [ "$SIZE" -le 1048576 ] || die "bad -s '$SIZE'"
[[ $LAB_NAME =~ ^[a-z0-9]{1,8}$ ]] || die "bad lab name '$LAB_NAME'"
[ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
BUILDS=()
for b in "$@"; do
	b=$(cd "$b" 2>/dev/null && pwd) || die "no build directory '$b'"
	[ -x "$b/app/roce-daemon/roce-daemon" ] || die "no daemon in $b"
	BUILDS+=("$b")
done
PERFTEST=${BUILDS[0]}/app/perftest/roce-perftest
QP_HOLD=${BUILDS[0]}/bench/qp_hold
C2C=${BUILDS[0]}/bench/c2c_bench
[ -x "$PERFTEST" ] && [ -x "$QP_HOLD" ] || die "no roce-perftest or bench/qp_hold in ${BUILDS[0]}"
OUT=${OUT:-/tmp/roce-idle-$LAB_NAME.txt}
: > "$OUT"
TMP=$(mktemp -d /tmp/roce-idleq.XXXXXX) || exit 2
LAB=("$SRC/scripts/lab.sh" -n "$LAB_NAME")
STATE=${LAB_STATE:-/tmp/roce-lab}/$LAB_NAME
HOLD_PID="" # (TERM: an asynchronous command of a script ignores INT)

cleanup() {
	[ -n "$HOLD_PID" ] && kill -TERM "$HOLD_PID" 2>/dev/null && wait "$HOLD_PID" 2>/dev/null
	"${LAB[@]}" down > /dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT

daemon_pid() { cat "$STATE/a.pid" 2>/dev/null; }
# utime + stime of the daemon (all threads), clock ticks
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null; }
# kB of field Rss or Pss in smaps_rollup
smaps_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null; }
field() { # csv column
	awk -F, -v col="$2" '/^test,/ { for (i = 1; i <= NF; i++) idx[$i] = i; next }
		idx["role"] && $idx["role"] == "single" { print $idx[col]; exit }' "$1"
}

# One perftest run; prints "mmsgs app_ns daemon_ns" (empty fields on failure).
busy_run() { # build tag
	local pid t0 t1 mr an hz
	hz=$(getconf CLK_TCK)
	pid=$(daemon_pid)
	t0=$(cpu_ticks "$pid")
	local w0=$SECONDS
	timeout -s INT $((SEC * 3 + 30)) "${LAB[@]}" -b "$1" run a "$PERFTEST" write_bw -s "$SIZE" -D "$SEC" \
		--single-process --output csv > "$TMP/$2.log" 2>&1
	t1=$(cpu_ticks "$pid")
	mr=$(field "$TMP/$2.log" msg_rate_mpps)
	an=$(field "$TMP/$2.log" cpu_ns_per_msg)
	[ -n "$mr" ] || { echo "  $2: perftest failed: $(tail -2 "$TMP/$2.log" | tr '\n' ' ')" >&2; echo "- - -"; return; }
	# daemon CPU over the run (SEC of traffic and the set-up around it) per
	# message sent in the SEC seconds at the measured rate
	awk -v t=$((t1 - t0)) -v hz="$hz" -v mr="$mr" -v s="$SEC" -v an="${an:--}" -v w=$((SECONDS - w0)) 'BEGIN {
		printf "%s %s %.1f\n", mr, an, (mr > 0 ? t / hz * 1e9 / (mr * 1e6 * (w > s ? w : s)) : 0) }'
}

# One-way ns of a cache line between CPUs 0 and 1 (bench/c2c_bench -q):
# the VM may run them near or far apart, and the 64 B rate follows it
# (doc/benchmarks.md, session 23), so each run is framed by two readings.
c2c() { timeout 30 "$C2C" 0 1 -q 2>/dev/null | sed -n 's/^c2c .*one_way_ns=\([0-9.]*\).*/\1/p'; }

one_round() { # build round
	local b=$1 r=$2 pid alone idle rss0 pss0 rss1 pss1
	local conf="client_max_qps = 0"
	"${LAB[@]}" down > /dev/null 2>&1
	if ! LAB_MAX_QPS=$((QPS + 256)) LAB_DAEMON_CONF=$conf "${LAB[@]}" -b "$b" up > "$TMP/lab.log" 2>&1; then
		echo "  round $r $b: the lab did not come up: $(tail -2 "$TMP/lab.log" | tr '\n' ' ')"
		return
	fi
	pid=$(daemon_pid)
	local c0 c1 c2 c3
	c0=$(c2c)
	alone=$(busy_run "$b" "alone-$r")
	c1=$(c2c)
	rss0=$(smaps_kb "$pid" Rss) pss0=$(smaps_kb "$pid" Pss)
	"${LAB[@]}" -b "$b" run a "$QP_HOLD" "$QPS" $((SEC * 3 + 30 > 60 ? 60 : SEC * 3 + 30)) connect > "$TMP/hold.log" 2>&1 &
	HOLD_PID=$!
	local deadline=$((SECONDS + 600))
	while [ $SECONDS -lt $deadline ] && kill -0 "$HOLD_PID" 2>/dev/null && ! grep -q holding "$TMP/hold.log"; do
		sleep 0.2
	done
	if ! grep -q holding "$TMP/hold.log"; then
		echo "  round $r $b: qp_hold did not hold $QPS QPs: $(tail -2 "$TMP/hold.log" | tr '\n' ' ')"
		kill -TERM "$HOLD_PID" 2>/dev/null; wait "$HOLD_PID" 2>/dev/null; HOLD_PID=""
		return
	fi
	sleep 1
	rss1=$(smaps_kb "$pid" Rss) pss1=$(smaps_kb "$pid" Pss)
	c2=$(c2c)
	idle=$(busy_run "$b" "idle-$r")
	c3=$(c2c)
	kill -TERM "$HOLD_PID" 2>/dev/null
	wait "$HOLD_PID" 2>/dev/null
	HOLD_PID=""
	read -r am aa ad <<< "$alone"
	read -r im ia id <<< "$idle"
	local line
	line=$(awk -v b="$b" -v r="$r" -v am="$am" -v aa="$aa" -v ad="$ad" -v im="$im" -v ia="$ia" -v id="$id" \
		-v r0="$rss0" -v r1="$rss1" -v p0="$pss0" -v p1="$pss1" -v n="$QPS" \
		-v c2c="${c0:--},${c1:--},${c2:--},${c3:--}" 'BEGIN {
		printf "round=%s build=%s alone_mmsgs=%s idle_mmsgs=%s ratio=%s d_ns_alone=%s d_ns_idle=%s a_ns_alone=%s a_ns_idle=%s rss_kb_qp=%.2f pss_kb_qp=%.2f c2c=%s",
			r, b, am, im, (am > 0 && im != "-" ? sprintf("%.3f", im / am) : "-"), ad, id, aa, ia,
			(r1 - r0) / n, (p1 - p0) / n, c2c }')
	echo "  $line ($(grep -m1 connected "$TMP/hold.log"))"
	echo "$line" >> "$OUT"
}

echo "== idle_qps: $QPS connected idle QPs + 1 busy write_bw -s $SIZE -D $SEC, $ROUNDS rounds; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
	order=("${BUILDS[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((i = ${#BUILDS[@]} - 1; i >= 0; i--)); do order+=("${BUILDS[i]}"); done
	fi
	for b in "${order[@]}"; do one_round "$b" "$r"; done
done

echo "== medians ($OUT)"
awk '
function kv(k,   i, n, a, f) { n = split($0, f, " "); for (i = 1; i <= n; i++) { split(f[i], a, "="); if (a[1] == k) return a[2] } return "" }
function med(s,   n, v, i, j, t) { n = split(s, v, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n == 0 ? "-" : (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }
function add(k, x) { if (x != "" && x != "-") col[b, k] = col[b, k] " " x }
{ b = kv("build"); if (!(b in seen)) { seen[b] = 1; order[++nb] = b }
  add("am", kv("alone_mmsgs")); add("im", kv("idle_mmsgs")); add("ra", kv("ratio"))
  add("da", kv("d_ns_alone")); add("di", kv("d_ns_idle")); add("aa", kv("a_ns_alone")); add("ai", kv("a_ns_idle"))
  add("rq", kv("rss_kb_qp")); add("pq", kv("pss_kb_qp")); runs[b]++
  nc = split(kv("c2c"), cv, ","); line_c2c[NR] = kv("c2c"); line_b[NR] = b; line_ra[NR] = kv("ratio")
  for (i = 1; i <= nc; i++) if (cv[i] != "-" && cv[i] != "") { if (cmin == "" || cv[i] + 0 < cmin) cmin = cv[i] + 0; if (cv[i] + 0 > cmax) cmax = cv[i] + 0 } }
END {
  printf "%-40s %5s %11s %11s %6s %10s %10s %10s %10s %9s %9s\n", "build", "runs", "alone_Mmsg", "idle_Mmsg", "ratio",
	"d_ns_alone", "d_ns_idle", "a_ns_alone", "a_ns_idle", "rss_kB/QP", "pss_kB/QP"
  for (i = 1; i <= nb; i++) { b = order[i]
	printf "%-40s %5d %11s %11s %6s %10s %10s %10s %10s %9s %9s\n", b, runs[b], med(col[b, "am"]), med(col[b, "im"]),
		med(col[b, "ra"]), med(col[b, "da"]), med(col[b, "di"]), med(col[b, "aa"]), med(col[b, "ai"]),
		med(col[b, "rq"]), med(col[b, "pq"]) }
  # the ratio over rounds whose four c2c readings fall on one side of the
  # split (geometric mean of the extremes, when they spread over twofold)
  cut = (cmin != "" && cmax > 2 * cmin) ? sqrt(cmin * cmax) : 0
  for (l in line_b) { nc = split(line_c2c[l], cv, ","); near = 0; far = 0
	for (i = 1; i <= nc; i++) if (cv[i] != "-" && cv[i] != "") { if (cut == 0 || cv[i] + 0 < cut) near++; else far++ }
	if (near + far == 4 && (near == 0 || far == 0) && line_ra[l] != "-")
		same[line_b[l]] = same[line_b[l]] " " line_ra[l] }
  printf "ratio over rounds in one placement (c2c split at %s ns; all rounds one class when 0):\n", cut ? sprintf("%.0f", cut) : "0"
  for (i = 1; i <= nb; i++) { b = order[i]; n = split(same[b], tmp, " ")
	printf "%-40s %5d %6s\n", b, n, med(same[b]) } }' "$OUT"
