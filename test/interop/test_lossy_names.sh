#!/bin/bash
# lossy_link's names of the IB CM messages it drops (rxe_interop.sh decides a
# rerun on them, doc/interop.md) against rxe's own rdma_cm handshake: the
# frames and attribute IDs tshark shows in ../shared/rxe-peer/pcaps
# (rc_send_rdmacm.pcap: two connections, each REQ REP RTU, then DREQs that
# crossed and their DREPs), and no name for UD SENDs to other QPs.
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
echo "1..3"
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
