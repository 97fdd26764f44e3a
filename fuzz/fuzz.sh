#!/bin/sh
# Build one libFuzzer target with clang (ASan + UBSan, the project compiler
# is gcc), seed its corpus (fuzz/seeds.py) and fuzz it, bounded.
#
# usage: fuzz/fuzz.sh TARGET [SECONDS] [PCAP_DIR] [WORK_DIR] [RUNS]
#   TARGET    roce_parse | cm_mad | xport | ctl | config | neigh
#   SECONDS   -max_total_time (default 60)
#   PCAP_DIR  pcaps to seed from (default ../shared/rxe-peer/pcaps of the source tree)
#   WORK_DIR  binary, corpus, log and crash artifacts (default: a new temp dir, kept)
#   RUNS      -runs (default: unbounded, the time bounds the run)
# A corpus already in WORK_DIR/corpus is kept (a long run continues a short one).
# Exit: 0 no finding, 1 a crash/invariant failure (artifact kept in WORK_DIR),
#       77 clang with libFuzzer (or DPDK for neigh) is not available (skip).
# fuzz/bench.sh runs every target for 10 M executions and tabulates the stats.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
target=${1:?usage: fuzz.sh TARGET [SECONDS] [PCAP_DIR] [WORK_DIR] [RUNS]}
secs=${2:-60}
pcaps=${3:-$src/../shared/rxe-peer/pcaps}
work=${4:-$(mktemp -d "/tmp/roce-fuzz-$target.XXXXXX")}
runs=${5:-}

cc=""
for c in clang-14 clang; do
	if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
done
if [ -z "$cc" ]; then
	echo "fuzz: clang not found, skipping"
	exit 77
fi

# Every library directory but the named ones (lib/qp may be split into
# several: whatever is not excluded comes along), as sources and -I flags.
lib_except() {
	for d in "$src"/lib/*/; do
		d=${d%/}
		skip=0
		for x in "$@"; do [ "$(basename "$d")" = "$x" ] && skip=1; done
		[ $skip = 1 ] || echo "$d"
	done
}
srcs_of() { for d in "$@"; do for f in "$d"/*.c; do [ -e "$f" ] && echo "$f"; done; done; return 0; }
incs_of() { for d in "$@"; do printf -- '-I%s ' "$d"; done; }

crc_flags="-lz"
if pkg-config --exists libisal 2>/dev/null; then
	crc_flags="-DROCE_HAVE_ISAL $(pkg-config --cflags --libs libisal)"
fi
maxlen=4096
extra=""
case "$target" in
roce_parse)
	dirs="$src/lib/roce"
	files="$here/fuzz_roce_parse.c $(srcs_of $dirs)"
	maxlen=9100 ;;
cm_mad)
	dirs="$src/lib/cm"
	files="$here/fuzz_cm_mad.c $(ls "$src"/lib/cm/cm_*.c)"
	crc_flags="" ;;
xport)
	dirs="$(lib_except ctl ipc cm) $src/test/engine"
	files="$here/fuzz_xport.c $src/test/engine/sim.c $(srcs_of $(lib_except ctl ipc cm))"
	maxlen=16384 ;;
ctl)
	dirs="$(lib_except) $src/test/ctl"
	files="$here/fuzz_ctl.c $(srcs_of $(lib_except))"
	maxlen=16384 ;;
config)
	dirs="$src/app/roce-daemon $(lib_except)"
	files="$here/fuzz_config.c $(find "$src/lib" -name dcqcn.c -o -name delay_cc.c)" # it includes config.c
	extra="$(pkg-config --cflags --libs inih)"
	maxlen=8192 ;;
neigh)
	if ! pkg-config --exists libdpdk; then echo "fuzz: no DPDK, skipping"; exit 77; fi
	dirs="$src/app/roce-daemon $(lib_except)"
	files="$here/fuzz_neigh.c $(for f in neigh neigh_kernel neigh_table daemon_state gid config; do echo "$src/app/roce-daemon/$f.c"; done) $(find "$src/lib" -name dcqcn.c -o -name delay_cc.c -o -name roce_mcast.c -o -name roce_csum.c)"
	extra="$(pkg-config --cflags --libs libdpdk inih) -Wno-unused-command-line-argument"
	maxlen=9100 ;;
*)
	echo "fuzz: unknown target $target" >&2
	exit 2 ;;
esac

mkdir -p "$work/corpus"
bin="$work/fuzz_$target"
# shellcheck disable=SC2086
set -- "$cc" -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined $(incs_of $dirs) $files $crc_flags $extra
cmd="$*"
# The binary of an earlier run in WORK_DIR is kept if it was built by the
# same command and no source or header is newer (clang under ASan takes
# minutes for lib/ on a loaded machine; bench.sh and the suite reuse it).
stale=1
if [ -x "$bin" ] && [ "$(cat "$work/build.cmd" 2>/dev/null)" = "$cmd" ]; then
	# shellcheck disable=SC2086
	[ -z "$(find $files $dirs -maxdepth 1 -name '*.[ch]' -newer "$bin" | head -1)" ] && stale=0
fi
if [ $stale = 1 ] && ! { rm -f "$bin" "$work/build.cmd"; "$@" -o "$bin" 2>"$work/build.log"; }; then
	if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return d[0] + (int)n; }' |
		"$cc" -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then
		echo "fuzz: $cc has no libFuzzer runtime, skipping"
		exit 77
	fi
	cat "$work/build.log"
	exit 1
fi
[ $stale = 0 ] || echo "$cmd" > "$work/build.cmd"
/usr/bin/python3 "$here/seeds.py" "$target" "$pcaps" "$work/corpus" "$src"

limit="-max_total_time=$secs"
[ -n "$runs" ] && limit="$limit -runs=$runs"
echo "fuzz: $bin for ${secs}s${runs:+ or $runs runs}, work dir $work"
# FUZZ_CPU_FILE: where to write the fuzzer's CPU seconds (user + system; bench.sh)
cpu_file=${FUZZ_CPU_FILE:-/dev/null}
# FUZZ_TIMEOUT: libFuzzer's -timeout, seconds of the wall clock for one input
# (default 10; bench.sh's niced long runs use more: see there)
timeout=${FUZZ_TIMEOUT:-10}
timer=""
[ -x /usr/bin/time ] && timer="/usr/bin/time -f %U_%S -o $work/time.out"
rc=0
# shellcheck disable=SC2086
$timer "$bin" $limit -timeout="$timeout" -rss_limit_mb=2048 -max_len=$maxlen -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" >"$work/fuzz.log" 2>&1 || rc=$?
awk -F_ '/^[0-9.]+_[0-9.]+$/ { print $1 + $2 }' "$work/time.out" 2>/dev/null > "$cpu_file" || true
[ $rc = 0 ] || {
	tail -40 "$work/fuzz.log"
	echo "fuzz: FAILED, artifacts in $work"
	exit 1
}
grep -E "^stat::number_of_executed_units|^stat::new_units_added|^#[0-9]+ *DONE" "$work/fuzz.log" || true
echo "fuzz: no finding in ${secs}s"
