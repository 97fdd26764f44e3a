#!/bin/sh
# roce-dump on the golden captures (--check passes, one line per RoCEv2
# frame), on a corrupted copy (--check fails, the frame is reported), and on
# files it cannot read (exit 2).
# usage: test_roce_dump.sh ROCE_DUMP PCAP_DIR
set -u
dump=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

n=0
for f in "$dir"/*.pcap; do
	n=$((n + 1))
	"$dump" --check "$f" >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "$f: --check exit $rc"
	sum=$(grep '^summary:' "$tmp/out")
	roce=$(echo "$sum" | sed -n 's/.* frames, \([0-9]*\) RoCEv2 .*/\1/p')
	lines=$(grep -c -E '^[0-9]+ ' "$tmp/out")
	[ "$roce" = "$lines" ] || fail "$f: $lines lines for $roce RoCEv2 frames"
	echo "$sum" | grep -q '(.* ok, 0 bad)' || fail "$f: $sum"
	grep -q 'icrc ok' "$tmp/out" || [ "$roce" = 0 ] || fail "$f: no 'icrc ok'"
done
[ $n -ge 10 ] || fail "only $n pcaps in $dir"

# RETH and AETH fields are decoded.
"$dump" "$dir/rc_write_4k.pcap" | grep -q 'RC_RDMA_WRITE_FIRST .* reth va 0x[0-9a-f]* rkey 0x[0-9a-f]* len 4096' ||
	fail "no RETH fields"
"$dump" "$dir/rc_write_4k.pcap" | grep -q 'RC_ACKNOWLEDGE .* aeth ACK credits 31 msn' || fail "no AETH"
"$dump" "$dir/rc_atomic_cas.pcap" | grep -q 'RC_COMPARE_SWAP .* atmeth va' || fail "no AtomicETH"
"$dump" "$dir/ud_send.pcap" | grep -q 'UD_SEND_ONLY .* deth qkey 0x11111111' || fail "no DETH"
# QP1 MADs are named as CM messages (lib/cm).
"$dump" "$dir/rc_send_rdmacm.pcap" >"$tmp/cm"
for msg in 'REQ tid 0x[0-9a-f]* comm 0x[0-9a-f]* sid 0x10648af' 'REP tid' 'RTU tid' 'DREQ tid' 'DREP tid'; do
	grep -q "UD_SEND_ONLY .* qpn 0x000001 .* cm $msg" "$tmp/cm" || fail "no CM $msg in rc_send_rdmacm.pcap"
done
"$dump" "$dir/ud_send.pcap" | grep -q ' cm ' && fail "a UD send to another QP named as a CM MAD"
"$dump" "$dir/rc_send_pingpong_oob_tcp.pcap" | grep -q ', 0 RoCEv2 (0 ok, 0 bad), [1-9][0-9]* non-RoCE skipped' ||
	fail "TCP frames not skipped"

# Flip one payload bit of the first frame: pcap header 24 + record header 16,
# then Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 = byte 94 is the first payload byte.
cp "$dir/rc_send_pingpong.pcap" "$tmp/bad.pcap"
off=94
v=$(od -An -tu1 -j $off -N1 "$tmp/bad.pcap" | tr -d ' ')
printf "\\$(printf %o $((v ^ 1)))" | dd of="$tmp/bad.pcap" bs=1 seek=$off conv=notrunc 2>/dev/null
"$dump" --check "$tmp/bad.pcap" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "corrupted copy: --check exit $rc, want 1"
grep -q '^1 RC_SEND_ONLY .* icrc BAD' "$tmp/out" || fail "corrupted frame not reported: $(head -1 "$tmp/out")"
grep -q '(15 ok, 1 bad)' "$tmp/out" || fail "summary: $(grep summary "$tmp/out")"
"$dump" "$tmp/bad.pcap" >/dev/null 2>&1 || fail "without --check the exit status must be 0"

# Break the IPv4 checksum of frame 2: still counted as RoCEv2, and bad.
cp "$dir/rc_send_pingpong.pcap" "$tmp/bad2.pcap"
len1=$(od -An -tu4 -j 32 -N4 "$tmp/bad2.pcap" | tr -d ' ')
off=$((24 + 16 + len1 + 16 + 14 + 8))   # TTL of frame 2
printf '\001' | dd of="$tmp/bad2.pcap" bs=1 seek=$off conv=notrunc 2>/dev/null
"$dump" --check "$tmp/bad2.pcap" >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "IP checksum: want exit 1"
grep -q '^2 DROP IP_CHECKSUM' "$tmp/out" || fail "IP checksum drop not reported"

# Unreadable input: exit 2 with a message on stderr.
"$dump" --check "$tmp/missing.pcap" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'cannot read' "$tmp/err" || fail "missing file"
echo "not a pcap" >"$tmp/text.pcap"
"$dump" --check "$tmp/text.pcap" >/dev/null 2>&1
[ $? -eq 2 ] || fail "text file"
head -c 100 "$dir/rc_send_4k.pcap" >"$tmp/short.pcap"
"$dump" --check "$tmp/short.pcap" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "truncated pcap: want exit 2 ($(cat "$tmp/err"))"
"$dump" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no arguments"

[ $fails -eq 0 ] && echo "roce-dump: all checks passed"
exit $((fails != 0))
