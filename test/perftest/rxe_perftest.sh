#!/usr/bin/env bash
# rxe_perftest.sh ROCE_PERFTEST RXE_PEER_DIR WORK_DIR
#
# Runs roce-perftest against the real Linux rxe (Soft-RoCE) in one QEMU guest
# of the shared rxe-peer harness (peer.sh run): every mode in single-process
# mode with --verify and CSV output, a client/server pair over TCP on the
# guest's loopback, a parameter mismatch, and the human table. The guest is
# booted once; the assertions run here on its output.
#
# Environment: RXE_CACHE_DIR (default /var/tmp/rxe-cache: the guest images,
# built by the harness when missing), RXE_PEER_NS (default derived from
# WORK_DIR, so two build directories do not collide). Needs root (netns).
# Exit 77 (skip) only when qemu-system-x86_64 is missing.
set -uo pipefail

bin=${1:?roce-perftest binary}
rxe=${2:?rxe-peer directory}
work=${3:?work directory}

if ! command -v qemu-system-x86_64 >/dev/null; then
    echo "qemu-system-x86_64 not found: skipping the rxe test"
    exit 77
fi
[[ -x $rxe/peer.sh ]] || { echo "FAIL: no rxe-peer harness at $rxe"; exit 1; }
[[ -x $bin ]] || { echo "FAIL: $bin is not executable"; exit 1; }

mkdir -p "$work"
export RXE_CACHE_DIR=${RXE_CACHE_DIR:-/var/tmp/rxe-cache}
export RXE_WORK_DIR=$work
export RXE_PEER_NS=${RXE_PEER_NS:-rxe-pt-$(printf '%s' "$work" | cksum | cut -c1-8)}
export RXE_BOOT_TIMEOUT=${RXE_BOOT_TIMEOUT:-90}
export RXE_TEST_TIMEOUT=90        # peer.sh waits this + 60 s for the guest script
export RXE_EXTRA_FILES="$bin=/usr/bin/roce-perftest"

# Cases: name | arguments | iterations expected in the CSV | minimum checks.
# Every case runs as: roce-perftest ARGS $SP (single process, verify, CSV).
CASES=(
    "write_bw|write_bw -s 4096 -n 64|64|64"
    "write_bw_uc_2qp|write_bw -c UC -q 2 -s 4096 -n 32|64|64"
    "read_bw|read_bw -s 4096 -n 64|64|64"
    "send_bw|send_bw -s 4096 -n 64|64|64"
    "send_bw_ud|send_bw -c UD -s 1024 -n 64|64|64"
    "atomic_fadd|atomic_bw -A FETCH_AND_ADD -n 64|64|65"
    "atomic_cas|atomic_bw -A CMP_AND_SWAP -n 64|64|65"
    "write_lat|write_lat -n 100|100|200"
    "send_lat|send_lat -n 100|100|200"
    "read_lat|read_lat -s 64 -n 50|50|50"
    "atomic_lat|atomic_lat -n 50|50|51"
)

guest_script() {
    # shellcheck disable=SC2016 # expanded in the guest
    echo 'SP="-d rxe0 -x $RXE_GID_IDX --single-process --verify --output csv --stall-timeout 20"'
    echo 'TP="-d rxe0 -x $RXE_GID_IDX --stall-timeout 20 -p 18600"'
    # one case: prefix each output line with the case name, then the exit status
    echo 'run() { n=$1; shift; timeout 40 roce-perftest "$@" >/tmp/o 2>&1; rc=$?; sed "s/^/$n| /" /tmp/o; echo "### CASE $n rc=$rc"; }'
    # a client/server pair over the guest's loopback; the client retries while
    # the server is not listening yet
    cat <<'EOF'
pair() {
    n=$1; sargs=$2; cargs=$3
    timeout 40 roce-perftest $sargs >/tmp/s 2>&1 & spid=$!
    i=0
    while :; do
        timeout 40 roce-perftest $cargs 127.0.0.1 >/tmp/c 2>&1; rc=$?
        [ $rc -eq 0 ] && break
        grep -q "Couldn't connect" /tmp/c || break
        i=$((i + 1)); [ $i -ge 100 ] && break
        sleep 0.2
    done
    wait $spid; src=$?
    sed "s/^/${n}_client| /" /tmp/c; echo "### CASE ${n}_client rc=$rc"
    sed "s/^/${n}_server| /" /tmp/s; echo "### CASE ${n}_server rc=$src"
}
EOF
    local c name args
    for c in "${CASES[@]}"; do
        IFS='|' read -r name args _ _ <<<"$c"
        echo "run $name $args \$SP"
    done
    echo 'pair tcp_send "send_bw $TP -s 2048 -n 64 --verify --output csv" "send_bw $TP -s 2048 -n 64 --verify --output csv"'
    echo 'pair tcp_mismatch "write_bw $TP -s 4096 -n 8" "write_bw $TP -s 8192 -n 8"'
    echo 'run table write_bw -d rxe0 -x $RXE_GID_IDX --single-process -s 1024 -n 16'
    echo 'echo "### GUEST-DONE"'
}

log=$work/guest.log
t0=$SECONDS
"$rxe/peer.sh" run "$(guest_script)" >"$log" 2>&1
peer_rc=$?
echo "guest run: $((SECONDS - t0)) s, peer.sh rc=$peer_rc, log $log"

fails=0 checks=0
ok()   { checks=$((checks + 1)); echo "ok   $*"; }
fail() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL $*"; }

grep -q '^### GUEST-DONE' "$log" || { fail "guest script did not finish"; tail -40 "$log"; }

case_rc() { sed -n "s/^### CASE $1 rc=\([0-9]*\).*/\1/p" "$log" | tail -1; }
case_out() { sed -n "s/^$1| //p" "$log"; }

# check_csv NAME ITERS MIN_CHECKS: one CSV row with the expected iterations,
# a positive measurement and a passed verification.
check_csv() {
    local name=$1 iters=$2 min=$3 rc rows
    rc=$(case_rc "$name")
    [[ $rc == 0 ]] || { fail "$name: exit status '${rc:-none}'"; case_out "$name" | tail -5; return; }
    rows=$(case_out "$name" | grep -v '^test,' | grep ',')
    if [[ $(wc -l <<<"$rows") -ne 1 || -z $rows ]]; then
        fail "$name: expected one CSV row, got: $rows"; return
    fi
    # columns: 6 iterations, 10 bw_avg, 12 msg_rate, 13 t_min, 14 t_max, 15 t_typical,
    #          21 verify, 22 verify_checked, 23 verify_errors
    if awk -F, -v it="$iters" -v min="$min" '
        { bw = ($10 != "" && $10 > 0 && $12 > 0); lat = ($15 != "" && $13 > 0 && $13 <= $15 && $15 <= $14) }
        !($6 == it && (bw || lat) && $21 == "ok" && $22 >= min && $23 == 0) { exit 1 }' <<<"$rows"; then
        ok "$name: $rows"
    else
        fail "$name: $rows (want iterations $iters, a measurement > 0, verify ok with >= $min checks)"
    fi
}

for c in "${CASES[@]}"; do
    IFS='|' read -r name _ iters min <<<"$c"
    check_csv "$name" "$iters" "$min"
done
# the receiver measures too; both ends verify
check_csv tcp_send_client 64 64
check_csv tcp_send_server 64 64

for side in client server; do
    rc=$(case_rc "tcp_mismatch_$side")
    if [[ $rc == 1 ]] && case_out "tcp_mismatch_$side" | grep -q 'Parameter mismatch: size (-s)'; then
        ok "tcp_mismatch_$side: refused"
    else
        fail "tcp_mismatch_$side: rc '${rc:-none}', $(case_out "tcp_mismatch_$side" | head -3)"
    fi
done

table=$(case_out table)
if [[ $(case_rc table) == 0 ]] &&
   grep -qx '                    RDMA_Write BW Test' <<<"$table" &&
   grep -qx ' #bytes     #iterations    BW peak\[MiB/sec\]    BW average\[MiB/sec\]   MsgRate\[Mpps\]' <<<"$table" &&
   grep -qE $'^ 1024 +16 +[0-9]+\\.[0-9]{2} +[0-9]+\\.[0-9]{2} *\t\t +[0-9]+\\.[0-9]{6}$' <<<"$table" &&
   grep -qE '^ local address: LID 0000 QPN 0x[0-9a-f]{4,6} PSN 0x[0-9a-f]+ RKey 0x[0-9a-f]{6} VAddr 0x[0-9a-f]{14}$' <<<"$table" &&
   grep -qE '^ GID: ([0-9]{2,3}:){15}[0-9]{2,3}$' <<<"$table"; then
    ok "table: perftest layout"
else
    fail "table: layout differs:"; echo "$table"
fi

echo "$checks checks, $fails failed"
((fails == 0)) || { echo "--- guest output tail"; tail -30 "$log"; exit 1; }
exit 0
