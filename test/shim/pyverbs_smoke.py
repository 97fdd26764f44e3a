#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""pyverbs (Debian's python3-pyverbs, rdma-core 44) over the verbs shim.

Run by test_shim_pyverbs with LD_LIBRARY_PATH at the built shim and
ROCE_DAEMON_SOCKET at a lib/ctl test server. Creates PD/MR/CQ/QP through
pyverbs, moves an RC QP RESET->INIT->RTR->RTS, checks what query_qp reports
and a few documented errors. Prints one "ok <step>" line per step and
"ALL OK" at the end; any failure raises (non-zero exit).
"""
import errno
import sys

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context, get_device_list
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr


def step(name):
    print('ok', name, flush=True)


def expect_errno(code, fn, *args):
    try:
        fn(*args)
    except PyverbsRDMAError as ex:
        assert ex.error_code == code, f'{fn}: errno {ex.error_code}, expected {code}'
        return
    raise AssertionError(f'{fn} did not fail')


def main():
    names = [d.name.decode() for d in get_device_list()]
    assert names == ['dpdk_roce0'], names
    step('device list')
    with Context(name='dpdk_roce0') as ctx:
        attr = ctx.query_device()
        assert attr.vendor_id == 0xffffff and attr.vendor_part_id == 0
        port = ctx.query_port(1)
        assert port.state == e.IBV_PORT_ACTIVE
        assert port.link_layer == e.IBV_LINK_LAYER_ETHERNET
        gid = ctx.query_gid(1, 1)
        assert str(gid) == '0000:0000:0000:0000:0000:ffff:c612:0001', str(gid)
        expect_errno(errno.EINVAL, ctx.query_port, 7)
        step('query device/port/gid')

        with PD(ctx) as pd:
            mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
            assert mr.lkey == mr.rkey and mr.lkey != 0
            mr.write(b'pyverbs through the shim', 24)
            assert mr.read(24, 0) == b'pyverbs through the shim'
            step('PD and MR')

            cq = CQ(ctx, 16)
            cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
            qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
            assert qp.qp_state == e.IBV_QPS_RESET
            assert qp.qp_num >= 2
            step('CQ and QP')

            init = QPAttr(qp_state=e.IBV_QPS_INIT)
            init.pkey_index = 0
            init.port_num = 1
            init.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_LOCAL_WRITE
            qp.to_init(init)
            assert qp.qp_state == e.IBV_QPS_INIT

            rtr = QPAttr(qp_state=e.IBV_QPS_RTR)
            rtr.path_mtu = e.IBV_MTU_1024
            rtr.dest_qp_num = qp.qp_num
            rtr.rq_psn = 0x123
            rtr.max_dest_rd_atomic = 1
            rtr.min_rnr_timer = 12
            rtr.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=1), is_global=1,
                                 port_num=1)
            qp.to_rtr(rtr)
            assert qp.qp_state == e.IBV_QPS_RTR

            rts = QPAttr(qp_state=e.IBV_QPS_RTS)
            rts.sq_psn = 0x456
            rts.timeout = 14
            rts.retry_cnt = 7
            rts.rnr_retry = 7
            rts.max_rd_atomic = 1
            qp.to_rts(rts)
            assert qp.qp_state == e.IBV_QPS_RTS
            step('RESET->INIT->RTR->RTS')

            qattr, iattr = qp.query(e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_RQ_PSN |
                                    e.IBV_QP_DEST_QPN | e.IBV_QP_CAP)
            assert qattr.qp_state == e.IBV_QPS_RTS
            assert qattr.sq_psn == 0x456 and qattr.rq_psn == 0x123
            assert qattr.dest_qp_num == qp.qp_num
            assert qattr.cap.max_send_wr >= 8 and iattr.cap.max_recv_wr >= 8
            step('query_qp')

            back = QPAttr(qp_state=e.IBV_QPS_RTR)
            expect_errno(errno.EINVAL, qp.modify, back, e.IBV_QP_STATE)
            step('invalid transition refused')
            qp.close()
            cq.close()
            mr.close()
    print('ALL OK', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
