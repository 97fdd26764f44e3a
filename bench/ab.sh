#!/bin/bash
# bench/ab.sh: lab configurations side by side. For R rounds, each round
# brings the lab up once per configuration and runs every point on it
# (bench/point.sh), so every configuration sees the same machine load (the
# order of the configurations is reversed every other round, so that none
# always goes first); then medians per configuration and point. For a noisy, shared machine, where
# only ratios measured together mean anything.
#
#   bench/ab.sh [-n LAB] [-b BUILD] [-r R] [-t SEC] CONF... -- TEST:SIZE[:ARGS]...
#
#   CONF      NAME or NAME:VAR=VALUE[;VAR=VALUE...]: environment of
#             scripts/lab.sh and bench/point.sh for that configuration, e.g.
#             'ring512:LAB_PMD_ARGS=framecnt=512' 'yield:LAB_IDLE=yield'
#             'base:LAB_BUILD=/path/to/other/build' 'pin0:POINT_CPUS=0'
#   TEST:SIZE write_bw|read_bw|send_bw and message bytes, e.g. write_bw:65536;
#             :ARGS more perftest arguments, comma-separated: write_bw:65536:-t,4
#   -n LAB    lab name [AB_LAB, default rab]   -b BUILD  default build [build]
#   -r R      rounds [3]                         -t SEC    seconds per point [3]
#
# Prints one line per run and a table: median Gb/s, retransmitted frames as a
# share of frames sent, frames lost between the PMDs (sent by one port, not
# received by the other: the receiving af_packet ring overflowed), RNR NAKs,
# timeouts, CPU time of daemon a and b per frame their port handled
# (bench/point.sh), and failed runs. Raw lines also in $AB_OUT (default
# /tmp/roce-ab-LAB.txt). Root; uses scripts/lab.sh (brought down at exit).
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
LAB_NAME=${AB_LAB:-rab}
BUILD=build
ROUNDS=3
SEC=3

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() { echo "ab: $*" >&2; exit 2; }

while getopts "n:b:r:t:h" opt; do
	case $opt in
	n) LAB_NAME=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	t) SEC=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
CONFS=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do CONFS+=("$1"); shift; done
[ $# -gt 0 ] && shift
POINTS=("$@")
[ ${#CONFS[@]} -ge 1 ] && [ ${#POINTS[@]} -ge 1 ] || { usage >&2; exit 2; }
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] || die "bad -r"
[[ $SEC =~ ^[0-9]+$ ]] && [ "$SEC" -ge 1 ] && [ "$SEC" -le 60 ] || die "bad -t"
[ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || die "no build directory"
for p in "${POINTS[@]}"; do
	[[ $p =~ ^(write_bw|read_bw|send_bw):[0-9]+(:[-a-z_0-9,=]+)?$ ]] || die "bad point '$p'"
done
for c in "${CONFS[@]}"; do
	[[ $c =~ ^[A-Za-z0-9_.-]+(:[A-Z_]+=[^\;]*(\;[A-Z_]+=[^\;]*)*)?$ ]] || die "bad configuration '$c'"
done
OUT=${AB_OUT:-/tmp/roce-ab-$LAB_NAME.txt}
: > "$OUT" || die "cannot write $OUT"
LAB=("$SRC/scripts/lab.sh" -n "$LAB_NAME")
trap '"${LAB[@]}" down > /dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

# value of KEY=N in a counter line
field() { local v; v=$(grep -o " $2=-\?[0-9]*" <<< " $1" | head -1 | cut -d= -f2); echo "${v:-0}"; }

for r in $(seq "$ROUNDS"); do
	order=("${CONFS[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((i = ${#CONFS[@]} - 1; i >= 0; i--)); do order+=("${CONFS[i]}"); done
	fi
	for c in "${order[@]}"; do
		name=${c%%:*}
		envs=()
		[ "$name" != "$c" ] && IFS=';' read -r -a envs <<< "${c#*:}"
		"${LAB[@]}" down > /dev/null 2>&1
		if ! env LAB_BUILD="$BUILD" "${envs[@]}" "${LAB[@]}" up > "$OUT.up" 2>&1; then
			echo "ab: round $r $name: lab did not come up:" >&2
			tail -5 "$OUT.up" >&2
			continue
		fi
		for p in "${POINTS[@]}"; do
			IFS=: read -r t s extra <<< "$p"
			xargs=()
			[ -n "$extra" ] && IFS=, read -r -a xargs <<< "$extra"
			res=$(env "${envs[@]}" timeout $((SEC * 3 + 60)) "$SRC/bench/point.sh" -n "$LAB_NAME" -t "$SEC" \
				"$t" "$s" "${xargs[@]}" 2>&1)
			bw=$(awk -F, '$3 == "client" { print $10 }' <<< "$res")
			a=$(grep "^$LAB_NAME-a:" <<< "$res") b=$(grep "^$LAB_NAME-b:" <<< "$res")
			sent=$(( $(field "$a" eth_opackets) + $(field "$b" eth_opackets) ))
			recv=$(( $(field "$a" eth_ipackets) + $(field "$b" eth_ipackets) ))
			retx=$(( $(field "$a" retransmits) + $(field "$b" retransmits) ))
			rnr=$(( $(field "$a" nak_rx_rnr) + $(field "$b" nak_rx_rnr) ))
			tmo=$(( $(field "$a" timeouts) + $(field "$b" timeouts) ))
			[ -n "$extra" ] && s="$s:$extra"
			cpa=$(sed -n 's/^cpu a: .* \([0-9.]*\) us per frame$/\1/p' <<< "$res")
			cpb=$(sed -n 's/^cpu b: .* \([0-9.]*\) us per frame$/\1/p' <<< "$res")
			line="round=$r conf=$name test=$t size=$s gbps=${bw:-failed} frames=$sent retx=$retx lost=$((sent - recv)) rnr=$rnr timeouts=$tmo cpu_a_us=${cpa:-0} cpu_b_us=${cpb:-0}"
			echo "$line" | tee -a "$OUT"
		done
	done
done
echo
echo "medians of $ROUNDS rounds (retx and lost: % of frames sent; failed: runs without a result)"
awk '
function kv(k,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } return "" }
function med(list,   n, v, i, j, t) {
	n = split(list, v, " "); if (n == 0) return "-"
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
{
	key = kv("test") " " kv("size") " " kv("conf")
	if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
	if (kv("gbps") == "failed") { failed[key]++; next }
	g[key] = g[key] " " kv("gbps")
	if (kv("frames") > 0) {
		rx[key] = rx[key] " " 100 * kv("retx") / kv("frames")
		lo[key] = lo[key] " " 100 * kv("lost") / kv("frames")
	}
	rn[key] = rn[key] " " kv("rnr"); tm[key] = tm[key] " " kv("timeouts")
	ca[key] = ca[key] " " kv("cpu_a_us"); cb[key] = cb[key] " " kv("cpu_b_us")
}
END {
	printf "%-9s %8s %-12s %8s %7s %7s %6s %8s %9s %9s %6s\n", "test", "size", "conf", "Gb/s", "retx%", "lost%", "rnr", "timeouts", "cpu_a_us", "cpu_b_us", "failed"
	for (i = 1; i <= nk; i++) {
		split(order[i], k, " ")
		printf "%-9s %8s %-12s %8.3f %7.2f %7.2f %6d %8d %9.2f %9.2f %6d\n", k[1], k[2], k[3], med(g[order[i]]),
			med(rx[order[i]]), med(lo[order[i]]), med(rn[order[i]]), med(tm[order[i]]),
			med(ca[order[i]]), med(cb[order[i]]), failed[order[i]]
	}
}' "$OUT" | { read -r h; echo "$h"; sort -k1,1 -k2,2n -s; }
