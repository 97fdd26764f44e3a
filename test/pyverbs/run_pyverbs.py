#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 6 acceptance: rdma-core's pyverbs suite over the verbs shim.

Copies the v44 tests Debian's python3-pyverbs ships
(/usr/share/doc/rdma-core/tests, partly gzipped) to a temporary folder,
brings up a two-host lab (scripts/lab.sh, name pyvNNNNN, idle mode sleep),
runs MODULES on host a with /usr/bin/python3 (pyverbs_suite.py: unittest as
tests/run_tests.py runs it; server and client on the one device, through the
daemon's internal loopback), tears the lab down and judges the outcome:

- any failure or error fails the test;
- a skip passes only with a reason listed in ALLOWED_SKIPS, each a feature
  the device does not advertise (or the host cannot provide); any other
  skip fails, so a verb that regresses to EOPNOTSUPP cannot hide as a skip.

Prints "pyverbs: N passed, N failed, N skipped", the counts per module and
every skip reason. Exit 0 pass, 1 fail, 77 skip (not root, no pyverbs or
no shipped tests).
"""
import argparse
import collections
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MODULES = ['test_device', 'test_pd', 'test_mr', 'test_cq', 'test_cq_events', 'test_qp',
           'test_qpex', 'test_addr', 'test_atomic', 'test_cqex', 'test_shared_pd',
           'test_relaxed_ordering']
SHIPPED_TESTS = '/usr/share/doc/rdma-core/tests'
SYSTEM_PYTHON = '/usr/bin/python3'
SKIP = 77

# (reason regex, test id regex, why the skip is honest)
ALLOWED_SKIPS = [
    (r'Device memory is not supported', r'.',
     'max_dm_size is 0: no device memory'),
    (r'Allocating dmabuf is not supported by .*', r'\.DmaBuf|dmabuf',
     'the host has no GPU that exports dma-bufs (the test allocates before any verb)'),
    (r'Create MW is not supported|Create memory window of type 3 is not supported', r'\.MWTest\.',
     'max_mw is 0, no IBV_DEVICE_MEM_WINDOW: ibv_alloc_mw is EOPNOTSUPP'),
    (r'Create Raw Packet QP .*is not supported', r'\.test_.*raw',
     'max_raw_ethy_qp is 0: raw packet QPs are EOPNOTSUPP'),
    (r'Create XRCD is not supported', r'xrc',
     'no IBV_DEVICE_XRC: ibv_open_xrcd is EOPNOTSUPP'),
    (r'Extended QP is not supported on this device', r'atomic_write|bind_mw',
     'send_ops_flags ATOMIC_WRITE / BIND_MW: neither RDMA atomic write nor MWs are offered'),
]


def log(*a):
    print(*a, flush=True)


def copy_tests(dst):
    """Copy the shipped tests into dst/tests and gunzip the compressed ones."""
    tdir = os.path.join(dst, 'tests')
    shutil.copytree(SHIPPED_TESTS, tdir)
    for fn in os.listdir(tdir):
        if fn.endswith('.gz'):
            path = os.path.join(tdir, fn)
            with gzip.open(path, 'rb') as src, open(path[:-3], 'wb') as out:
                shutil.copyfileobj(src, out)
            os.unlink(path)
    return tdir


def lab(args, *cmd, timeout, check=True, capture=False):
    env = dict(os.environ, LAB_NAME=args.lab, LAB_BUILD=args.build, LAB_IDLE='sleep',
               LAB_PMD='af_packet')
    return subprocess.run([os.path.join(args.source, 'scripts', 'lab.sh'), *cmd], env=env,
                          timeout=timeout, check=check, text=True,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.STDOUT if capture else None)


def allowed_skip(rec):
    for reason, tid, why in ALLOWED_SKIPS:
        if re.fullmatch(reason, rec['reason']) and re.search(tid, rec['id'], re.I):
            return why
    return None


def judge(records, modules):
    by_mod = collections.OrderedDict((m, collections.Counter()) for m in modules)
    bad = []
    skips = collections.OrderedDict()
    for r in records:
        by_mod.setdefault(r['module'], collections.Counter())[r['outcome']] += 1
        if r['outcome'] in ('fail', 'error', 'xpass'):
            bad.append(f"{r['outcome'].upper()}: {r['id']}: {r['reason']}")
        elif r['outcome'] == 'skip':
            why = allowed_skip(r)
            if why is None:
                bad.append(f"UNEXPLAINED SKIP: {r['id']}: {r['reason']}")
            skips.setdefault((r['reason'], why), []).append(r['id'].split('.', 2)[-1])
    total = collections.Counter(r['outcome'] for r in records)
    failed = total['fail'] + total['error'] + total['xpass']
    log(f"pyverbs: {total['pass']} passed, {failed} failed, {total['skip']} skipped")
    for m, c in by_mod.items():
        log(f"  {m}: {c['pass']} passed, {c['fail'] + c['error'] + c['xpass']} failed,"
            f" {c['skip']} skipped")
        if sum(c.values()) == 0:
            bad.append(f'NO TESTS RAN: {m}')
    for (reason, why), ids in skips.items():
        log(f"  skip x{len(ids)} '{reason}': {why or 'NOT AN ALLOWED REASON'}")
        for i in ids:
            log(f'      {i}')
    for b in bad:
        log(b)
    return not bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--source', required=True, help='source root (scripts/lab.sh)')
    ap.add_argument('--build', required=True, help='build dir (daemon, shim)')
    ap.add_argument('--timeout', type=int, default=180, help='suite run limit, seconds')
    ap.add_argument('modules', nargs='*', default=MODULES)
    args = ap.parse_args()
    args.lab = f'pyv{os.getpid() % 100000}'

    if os.geteuid() != 0:
        log('pyverbs: skipped: needs root (network namespaces)')
        return SKIP
    if not os.path.isdir(SHIPPED_TESTS) or not os.access(SYSTEM_PYTHON, os.X_OK):
        log(f'pyverbs: skipped: no {SHIPPED_TESTS} or {SYSTEM_PYTHON} (python3-pyverbs)')
        return SKIP
    if subprocess.run([SYSTEM_PYTHON, '-c', 'import pyverbs.device'],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        log('pyverbs: skipped: /usr/bin/python3 cannot import pyverbs')
        return SKIP
    shim = os.path.join(args.build, 'drivers', 'verbs-shim', 'libibverbs.so.1')
    if not os.path.exists(shim):
        log(f'pyverbs: no {shim}')
        return 1

    tmp = tempfile.mkdtemp(prefix='pyverbs-')
    try:
        tdir = copy_tests(tmp)
        result_json = os.path.join(tmp, 'result.json')
        lab(args, 'up', timeout=90)
        try:
            dev = lab(args, 'run', 'a', SYSTEM_PYTHON, '-c',
                      'import pyverbs.device as d; print(d.get_device_list()[0].name.decode())',
                      timeout=30, capture=True).stdout.strip().splitlines()[-1]
            log(f'pyverbs: device {dev}, lab {args.lab}, tests from {SHIPPED_TESTS}')
            run = lab(args, 'run', 'a', SYSTEM_PYTHON,
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pyverbs_suite.py'),
                      tdir, result_json, dev, *args.modules,
                      timeout=args.timeout, check=False)
        finally:
            down = lab(args, 'down', timeout=60, check=False, capture=True)
            log(down.stdout.strip())
        if not os.path.exists(result_json):
            log(f'pyverbs: the suite wrote no result (exit {run.returncode})')
            return 1
        with open(result_json) as f:
            records = json.load(f)
        ok = judge(records, args.modules)
        if down.returncode != 0:
            log('pyverbs: a daemon did not exit cleanly')
            ok = False
        return 0 if ok else 1
    except subprocess.TimeoutExpired as ex:
        log(f'pyverbs: timed out: {ex.cmd}')
        return 1
    except subprocess.CalledProcessError as ex:
        log(f'pyverbs: failed (exit {ex.returncode}): {ex.cmd}')
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
