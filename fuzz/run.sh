#!/bin/sh
# Build the libFuzzer target for roce_parse with clang, seed a corpus from the
# golden captures (one file per frame) and fuzz for a bounded time.
#
# usage: fuzz/run.sh [SECONDS] [PCAP_DIR] [WORK_DIR]
#   SECONDS   fuzzing time (default 60)
#   PCAP_DIR  pcaps to seed from (default ../shared/rxe-peer/pcaps of the source tree)
#   WORK_DIR  binary, corpus and crash artifacts (default: a new temp dir, kept)
# Exit: 0 no finding, 1 a crash/invariant failure (artifact kept in WORK_DIR),
#       77 clang with libFuzzer is not available (skip).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
secs=${1:-60}
pcaps=${2:-$src/../shared/rxe-peer/pcaps}
work=${3:-$(mktemp -d /tmp/roce-fuzz.XXXXXX)}

cc=""
for c in clang-14 clang; do
	if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
done
if [ -z "$cc" ]; then
	echo "fuzz: clang not found, skipping"
	exit 77
fi
crc_flags="-lz"
if pkg-config --exists libisal 2>/dev/null; then
	crc_flags="-DROCE_HAVE_ISAL $(pkg-config --cflags --libs libisal)"
fi
mkdir -p "$work/corpus"
bin="$work/fuzz_roce_parse"
# shellcheck disable=SC2086
if ! "$cc" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I"$src/lib/roce" \
	"$here/fuzz_roce_parse.c" "$src"/lib/roce/roce_*.c $crc_flags -o "$bin" 2>"$work/build.log"; then
	if grep -q -i "fuzzer" "$work/build.log" && ! "$cc" -fsanitize=fuzzer -x c /dev/null -o /dev/null 2>/dev/null; then
		echo "fuzz: $cc has no libFuzzer runtime, skipping"
		exit 77
	fi
	cat "$work/build.log"
	exit 1
fi

# One corpus file per frame of every pcap (classic pcap, either byte order).
/usr/bin/python3 - "$pcaps" "$work/corpus" <<'PY'
import glob, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
n = 0
for path in sorted(glob.glob(os.path.join(src, "*.pcap"))):
    data = open(path, "rb").read()
    if len(data) < 24:
        continue
    magic = data[:4]
    end = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off, k = 24, 0
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        k += 1
        name = "%s-%03d" % (os.path.basename(path)[:-5], k)
        open(os.path.join(dst, name), "wb").write(frame)
        n += 1
print("fuzz: %d seed frames from %s" % (n, src))
PY

echo "fuzz: $bin for ${secs}s, work dir $work"
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=9100 \
	-print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" >"$work/fuzz.log" 2>&1 || {
	tail -40 "$work/fuzz.log"
	echo "fuzz: FAILED, artifacts in $work"
	exit 1
}
grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$work/fuzz.log" || true
echo "fuzz: no crash in ${secs}s"
