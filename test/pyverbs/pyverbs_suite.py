#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run modules of rdma-core's tests/ as its run_tests.py does, record each outcome.

Runs inside a lab host (run_pyverbs.py starts it with `lab.sh run`), under
Debian's /usr/bin/python3 so the system pyverbs loads the shim's
libibverbs.so.1 from LD_LIBRARY_PATH.

usage: pyverbs_suite.py TESTS_DIR RESULT_JSON DEVICE MODULE...

The test package is loaded exactly as tests/run_tests.py loads it (its
argument parser sees `--dev DEVICE`), with one adaptation: a device without
sysfs gets its GIDs' net devices from ibv_query_gid_ex (use_gid_netdev). The
verbose unittest report goes to stdout, and RESULT_JSON gets one record per test:
{"id", "module", "outcome": pass|fail|error|skip|xfail|xpass, "reason"}.
"""
import ipaddress
import json
import os
import socket
import subprocess
import sys
import unittest
from importlib.machinery import SourceFileLoader


class RecordingResult(unittest.TextTestResult):
    """TextTestResult that also keeps (id, outcome, reason) for every test."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.records = []

    def _record(self, test, outcome, reason=''):
        tid = test.id()
        parts = tid.split('.')
        # tests.test_qp.QPTest.test_x -> test_qp; setUpClass errors: "setUpClass (tests.test_qp.X)"
        module = next((p for p in parts if p.startswith('test_')), parts[0])
        self.records.append({'id': tid, 'module': module, 'outcome': outcome,
                             'reason': str(reason).strip().splitlines()[-1] if reason else ''})

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, 'pass')

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, 'fail', self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, 'error', self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, 'skip', reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, 'xfail', self._exc_info_to_string(err, test))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, 'xpass')


def gid_netdev(dev, port, idx):
    """(address, MAC) of GID @idx as its net device holds it, or (None, None).

    The net device is the one ibv_query_gid_ex() reports (ndev_ifindex: the
    kernel interface that holds the GID's address); the address is the GID's
    own (IPv4 for an IPv4-mapped GID). A link-local GID gives none: rdma_cm
    would need the interface's scope with it, and the RoCEv2 GIDs of the
    global addresses are there to use.
    """
    import pyverbs.device as d
    with d.Context(name=dev) as ctx:
        try:
            entry = ctx.query_gid_ex(port, idx)
        except Exception:   # an empty slot (ENODATA)
            return None, None
    if not entry.ndev_ifindex:
        return None, None
    addr = ipaddress.IPv6Address(entry.gid_str())
    if addr.is_link_local:
        return None, None
    ip = str(addr.ipv4_mapped or addr)
    ifname = socket.if_indextoname(entry.ndev_ifindex)
    out = subprocess.check_output(['ip', '-j', 'link', 'show', ifname])
    return ip, json.loads(out.decode())[0]['address']


def use_gid_netdev(base):
    """Let rdma-core's tests find a GID's net device without sysfs.

    tests/base.py (v44) finds the interface of a device in
    /sys/class/infiniband/DEV/device/net/, which only the kernel's RDMA
    drivers create: our device has no sysfs entry, and without an address
    every rdma_cm test skips ("doesn't have net interface"). The same
    information comes from the verbs API (ibv_query_gid_ex's ndev_ifindex,
    what newer rdma-core reads as well), so where sysfs has nothing the
    lookup asks it instead; with sysfs the tests' own code runs unchanged.
    """
    sysfs_lookup = base.RDMATestCase._get_ip_mac

    def _get_ip_mac(self, dev, port, idx):
        if idx is None or os.path.exists(f'/sys/class/infiniband/{dev}/device/net/'):
            return sysfs_lookup(self, dev, port, idx)
        ip, mac = gid_netdev(dev, port, idx)
        self.args.append([dev, port, idx, ip, mac])
    base.RDMATestCase._get_ip_mac = _get_ip_mac


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    tests_dir, result_json, dev, modules = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    sys.path.insert(0, tests_dir)
    from args_parser import parser  # rdma-core's tests/args_parser.py
    sys.argv = [os.path.join(tests_dir, 'run_tests.py'), '--dev', dev]
    parser.parse_args()
    SourceFileLoader('tests', os.path.join(tests_dir, '__init__.py')).load_module()
    import tests.base
    use_gid_netdev(tests.base)
    suite = unittest.defaultTestLoader.loadTestsFromNames(['tests.' + m for m in modules])
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=RecordingResult)
    result = runner.run(suite)
    records = result.records
    ok = result.wasSuccessful()
    with open(result_json, 'w') as f:
        json.dump(records, f, indent=1)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
