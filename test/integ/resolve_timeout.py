"""Address resolution through the daemon (pyverbs over the verbs shim).

Run by test_integ on lab host a (LAB_PEER_IP set by lab.sh). An RC QP whose
path leads to an address nobody answers (198.18.0.99, in the lab's /24) must
fail modify-to-RTR with ETIMEDOUT after a bounded time, as Linux rxe did
(rxe-peer oracle: ETIMEDOUT after about 1 s); so must ibv_create_ah towards
it (not in the oracle; by source, Linux resolves an AH's MAC with the same
ib_resolve_eth_dmac() as a modify); the peer daemon's address resolves. Prints
one line per check; any failure raises (non-zero exit).
"""
import errno
import ipaddress
import os
import time

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

BOUND_S = 15.0  # neigh_retry_ms x (neigh_retries + 1) is 3 s by default


def gid_of(ipv4):
    mapped = ipaddress.IPv6Address('::ffff:' + ipv4).packed
    return GID(':'.join(mapped[i:i + 2].hex() for i in range(0, 16, 2)))


def rtr(qp, dgid):
    attr = QPAttr(qp_state=e.IBV_QPS_RTR)
    attr.path_mtu = e.IBV_MTU_1024
    attr.dest_qp_num = 0x11
    attr.rq_psn = 0
    attr.max_dest_rd_atomic = 1
    attr.min_rnr_timer = 12
    attr.ah_attr = AHAttr(gr=GlobalRoute(dgid=dgid, sgid_index=1), is_global=1, port_num=1)
    qp.to_rtr(attr)


def expect_timeout(what, fn):
    start = time.monotonic()
    try:
        fn()
    except PyverbsRDMAError as ex:
        took = time.monotonic() - start
        assert ex.error_code == errno.ETIMEDOUT, f'{what}: errno {ex.error_code}'
        assert took < BOUND_S, f'{what}: took {took:.1f} s'
        print(what, 'ETIMEDOUT', f'{took:.1f}s', flush=True)
        return
    raise AssertionError(f'{what} did not fail')


def main():
    nobody = gid_of('198.18.0.99')
    with Context(name='dpdk_roce0') as ctx, PD(ctx) as pd:
        cq = CQ(ctx, 16)
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
        init = QPAttr(qp_state=e.IBV_QPS_INIT)
        init.pkey_index = 0
        init.port_num = 1
        init.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
        qp.to_init(init)
        expect_timeout('rtr', lambda: rtr(qp, nobody))
        assert qp.qp_state == e.IBV_QPS_INIT, 'a failed modify changes nothing'
        expect_timeout('ah', lambda: AH(pd, attr=AHAttr(
            gr=GlobalRoute(dgid=nobody, sgid_index=1), is_global=1, port_num=1)))
        rtr(qp, gid_of(os.environ['LAB_PEER_IP']))
        assert qp.qp_state == e.IBV_QPS_RTR
        print('reachable rtr ok', flush=True)


if __name__ == '__main__':
    main()
