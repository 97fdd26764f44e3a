#!/bin/sh
# Build the libFuzzer target for lib/cm (fuzz_cm_mad.c) with clang, seed a
# corpus with the CM MADs of the golden captures (the UD payload of every
# frame to QP1, after BTH and DETH) and fuzz for a bounded time.
#
# usage: fuzz/run_cm.sh [SECONDS] [PCAP_DIR] [WORK_DIR]
# Exit: 0 no finding, 1 a crash/invariant failure (artifact kept in WORK_DIR),
#       77 clang with libFuzzer is not available (skip).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
secs=${1:-60}
pcaps=${2:-$src/../shared/rxe-peer/pcaps}
work=${3:-$(mktemp -d /tmp/roce-fuzz-cm.XXXXXX)}

cc=""
for c in clang-14 clang; do
	if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
done
if [ -z "$cc" ]; then
	echo "fuzz: clang not found, skipping"
	exit 77
fi
mkdir -p "$work/corpus"
bin="$work/fuzz_cm_mad"
if ! "$cc" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I"$src/lib/cm" \
	"$here/fuzz_cm_mad.c" "$src"/lib/cm/cm_*.c -o "$bin" 2>"$work/build.log"; then
	if ! "$cc" -fsanitize=fuzzer -x c /dev/null -o /dev/null 2>/dev/null; then
		echo "fuzz: $cc has no libFuzzer runtime, skipping"
		exit 77
	fi
	cat "$work/build.log"
	exit 1
fi

# One corpus file per MAD to QP1 (UD SEND ONLY, opcode 0x64) of every pcap.
/usr/bin/python3 - "$pcaps" "$work/corpus" <<'PY'
import glob, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
n = 0
for path in sorted(glob.glob(os.path.join(src, "*.pcap"))):
    data = open(path, "rb").read()
    if len(data) < 24:
        continue
    end = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        f = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(f) < 34 or f[12:14] != b"\x08\x00" or f[23] != 17:
            continue
        l4 = 14 + (f[14] & 0xf) * 4
        if len(f) < l4 + 8 + 20 + 256 or f[l4 + 2:l4 + 4] != b"\x12\xb7":
            continue
        bth = l4 + 8
        if f[bth] != 0x64 or f[bth + 5:bth + 8] != b"\x00\x00\x01":
            continue
        open(os.path.join(dst, "mad-%03d" % n), "wb").write(f[bth + 20:bth + 20 + 256])
        n += 1
print("fuzz: %d seed MADs from %s" % (n, src))
PY

echo "fuzz: $bin for ${secs}s, work dir $work"
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
	-print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" >"$work/fuzz.log" 2>&1 || {
	tail -40 "$work/fuzz.log"
	echo "fuzz: FAILED, artifacts in $work"
	exit 1
}
grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$work/fuzz.log" || true
echo "fuzz: no crash in ${secs}s"
