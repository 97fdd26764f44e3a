#!/bin/sh
# crosscheck.py without its external references: with CI=true (CI's setting)
# it must fail, outside CI it skips (exit 77). tshark is hidden by a PATH
# without it, scapy by a PYTHONPATH package named scapy that cannot import.
# usage: test_crosscheck_ci.sh PYTHON CROSSCHECK_PY ROCE_GEN_FRAMES ROCE_PARSE_FRAMES
set -u
py=$1 xc=$2 gen=$3 parse=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mkdir "$tmp/scapy"
echo 'raise ImportError("hidden by test_crosscheck_ci.sh")' >"$tmp/scapy/__init__.py"

run() { # WANT_EXIT WANT_TEXT NAME ENV...
	want=$1 text=$2 name=$3
	shift 3
	env -u CI "$@" "$py" "$xc" "$gen" "$parse" >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq "$want" ] || fail "$name: exit $rc, want $want"
	grep -qF "$text" "$tmp/out" || fail "$name: no '$text' in: $(cat "$tmp/out")"
}

run 1 'CI=true and tshark missing' 'no tshark, CI=true' PATH=/nonexistent CI=true
run 77 'skipped: tshark missing' 'no tshark, not CI' PATH=/nonexistent
run 1 'CI=true and scapy (python3-scapy) missing' 'no scapy, CI=true' PYTHONPATH="$tmp" CI=true
run 77 'skipped: scapy (python3-scapy) missing' 'no scapy, not CI' PYTHONPATH="$tmp"
run 1 'CI=true and scapy (python3-scapy), tshark missing' 'neither, CI=true' \
	PATH=/nonexistent PYTHONPATH="$tmp" CI=true

[ $fails -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "crosscheck fails without its references in CI and skips outside"
