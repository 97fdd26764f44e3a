#!/bin/bash
# lossy_link's names of the IB CM messages it drops (rxe_interop.sh decides a
# rerun on them, doc/interop.md) against rxe's own rdma_cm handshake: the
# frames and attribute IDs tshark shows in ../shared/rxe-peer/pcaps
# (rc_send_rdmacm.pcap: two connections, each REQ REP RTU, then DREQs that
# crossed and their DREPs), no name for UD SENDs to other QPs, and exit
# status 2 for a file that is not a capture or is cut short.
#   test_lossy_names.sh LOSSY_LINK PCAP_DIR
set -u
lossy=$1 pcaps=$2
want='1 REQ
2 REP
3 RTU
24 REQ
25 REP
26 RTU
67 DREQ
68 DREQ
69 DREP
70 DREQ
71 DREP'
echo "1..4"
got=$("$lossy" --names "$pcaps/rc_send_rdmacm.pcap" 2>&1)
rc=$?
if [[ $rc == 0 && $got == "$want" ]]; then
    echo "ok 1 - rxe's rdma_cm handshake: every CM message named, at its frame"
else
    echo "not ok 1 - rxe's rdma_cm handshake (rc $rc)"
    diff <(echo "$want") <(echo "$got") | sed 's/^/# /'
fi
got=$("$lossy" --names "$pcaps/ud_send.pcap" 2>&1)
rc=$?
if [[ $rc == 0 && -z $got ]]; then
    echo "ok 2 - UD SENDs to other QPs: no CM message"
else
    echo "not ok 2 - UD SENDs to other QPs (rc $rc): $got" | head -3
fi
"$lossy" --names "$0" >/dev/null 2>&1
rc=$?
if [[ $rc == 2 ]]; then
    echo "ok 3 - a file that is not a pcap: exit status 2"
else
    echo "not ok 3 - a file that is not a pcap: exit status $rc, want 2"
fi
cut=$(mktemp /tmp/lossy-names.XXXXXX)
trap 'rm -f "$cut"' EXIT
head -c 3000 "$pcaps/rc_send_rdmacm.pcap" > "$cut" # ends inside frame 24
got=$("$lossy" --names "$cut" 2>&1)
rc=$?
if [[ $rc == 2 && $got == *"after frame 23"* ]]; then
    echo "ok 4 - a capture cut short: the frames before it, then exit status 2"
else
    echo "not ok 4 - a capture cut short: exit status $rc, want 2"
    echo "$got" | sed 's/^/# /' | tail -n 3
fi
