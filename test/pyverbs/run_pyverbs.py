#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issues 6 and 22: rdma-core's pyverbs suite over the verbs shim.

Copies the v44 tests Debian's python3-pyverbs ships
(/usr/share/doc/rdma-core/tests, partly gzipped) to a temporary folder,
brings up a two-host lab (scripts/lab.sh, name pyvNNNNN, idle mode sleep),
runs every device-generic module (each test_*.py but those of one vendor's
device, VENDOR_MODULES; none is left out otherwise) on host a with
/usr/bin/python3 (pyverbs_suite.py: unittest as tests/run_tests.py runs it;
server and client on the one device, through the daemon's internal
loopback: v44 cannot put them on two hosts, see ONE_HOST), tears the lab
down and judges the outcome:

- any failure or error fails the test;
- a skip passes only if its test id is in PINNED_SKIPS with the same skip
  message; each pin carries a label, 'feature-gap' (a verb we do not
  implement yet) or 'no-hardware' (the host cannot have it), and a reason;
  any other skip fails, so a verb that regresses to EOPNOTSUPP cannot hide;
- a pinned test that passes, or that no longer exists, fails too: the pin
  is stale and must go, so the list stays honest;
- an error passes only if its test id is in PINNED_ERRORS with the same
  last line of its traceback: a test whose harness does not turn a missing
  verb's EOPNOTSUPP into a skip (label 'feature-gap' only, each with its
  reason); the same stale-pin rules apply.

Prints "pyverbs: N passed, N failed, N skipped", the counts per module and
every skip by label. Exit 0 pass, 1 fail, 77 skip (not root, no pyverbs or
no shipped tests).
"""
import argparse
import collections
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SHIPPED_TESTS = '/usr/share/doc/rdma-core/tests'
SYSTEM_PYTHON = '/usr/bin/python3'
SKIP = 77

# Modules for one vendor's device, left out: they drive that vendor's direct
# verbs provider (mlx5dv_*, efadv_*: DevX, DR steering, DC, crypto, UAR, VFIO,
# SRD...) through its own provider library, which only opens that hardware.
# (module name prefix, vendor, why)
VENDOR_MODULES = [
    ('test_mlx5_', 'NVIDIA ConnectX', 'mlx5dv direct verbs and DevX objects of libmlx5'),
    ('test_efa', 'AWS EFA', 'efadv direct verbs and the SRD transport of libefa'),
]

# Why the suite's two ends run on one host (issue 22 asked for two): in v44
# every test builds its client and server as two resource objects in one
# Python process on the one device of --dev/--port/--gid (RDMATestCase has a
# single config; create_players() makes both from self.dev_info), swaps QPNs,
# PSNs, GIDs, MR keys and addresses by reading the other object's attributes
# (pre_run(), sync_remote_attr()), and takes the UD/RoCE AH's destination GID
# from its own GID table. rdmacm tests fork both sides from that process
# (multiprocessing Barrier and Queue). No option or config names a remote
# host; splitting would mean rewriting the harness, not configuring it.
ONE_HOST = 'rdma-core v44 tests: both sides are objects of one process on one device'

FEATURE_GAP = 'feature-gap'   # a verb or capability the stack does not implement yet
NO_HARDWARE = 'no-hardware'   # something this host cannot have

# Every skip the suite may report: test id -> (label, skip messages, reason).
# The skip message must be one of the messages exactly ({dev}: device name).
PINNED_SKIPS = {}
# Every error it may report, the same way (the last line of the traceback):
# only a missing verb (EOPNOTSUPP) that the test does not turn into a skip.
PINNED_ERRORS = {}


def _pin(label, messages, reason, *test_ids, pins=PINNED_SKIPS):
    for tid in test_ids:
        assert 'tests.' + tid not in PINNED_SKIPS and 'tests.' + tid not in PINNED_ERRORS, tid
        pins['tests.' + tid] = (label, messages, reason)


_pin(NO_HARDWARE, ('Allocating dmabuf is not supported by /dev/dri/renderD128',
                   'Device /dev/dri/renderD128 is not present',
                   'Lack of permission to access /dev/dri/renderD128'),
     'dma-buf MRs: the test allocates the dma-buf from a GPU render node before any '
     'verb, and the host has no GPU that exports one (with one, ibv_reg_dmabuf_mr '
     'would still be EOPNOTSUPP: a feature gap behind the missing hardware)',
     'test_mr.DmaBufMRTest.test_dmabuf_dereg_mr',
     'test_mr.DmaBufMRTest.test_dmabuf_dereg_mr_twice',
     'test_mr.DmaBufMRTest.test_dmabuf_lkey',
     'test_mr.DmaBufMRTest.test_dmabuf_read',
     'test_mr.DmaBufMRTest.test_dmabuf_reg_mr',
     'test_mr.DmaBufMRTest.test_dmabuf_reg_mr_bad_flags',
     'test_mr.DmaBufMRTest.test_dmabuf_rkey',
     'test_mr.DmaBufMRTest.test_dmabuf_write',
     'test_mr.DmaBufTestCase.test_dmabuf_rc_traffic',
     'test_mr.DmaBufTestCase.test_dmabuf_rdma_traffic')
_pin(NO_HARDWARE, ('cuda-python 12.0+ must be installed to run CUDA tests',),
     'CUDA dma-buf: needs an NVIDIA GPU and cuda-python, which Debian does not package',
     'test_cuda_dmabuf.DmabufCudaTest.test_cuda_dmabuf_rdma_write_traffic')


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


def lab(args, *cmd, timeout, check=True, capture=False, start=None):
    env = dict(os.environ, LAB_NAME=args.lab, LAB_BUILD=args.build, LAB_IDLE='sleep',
               LAB_PMD='af_packet')
    if start:
        env['LAB_START'] = start
    return subprocess.run([os.path.join(args.source, 'scripts', 'lab.sh'), *cmd], env=env,
                          timeout=timeout, check=check, text=True,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.STDOUT if capture else None)


def module_of(test_id):
    """tests.test_qp.QPTest.test_x -> test_qp (also inside 'setUpClass (...)')."""
    return next((p for p in test_id.replace('(', '.').split('.') if p.startswith('test_')), '')


def generic_modules(tdir):
    """Every test_*.py of the shipped tests but the vendor ones (logged)."""
    mods = []
    for fn in sorted(os.listdir(tdir)):
        if not (fn.startswith('test_') and fn.endswith('.py')):
            continue
        mod = fn[:-3]
        vendor = next((v for v in VENDOR_MODULES if mod.startswith(v[0])), None)
        if vendor:
            log(f'pyverbs: left out {mod}: {vendor[1]} only ({vendor[2]})')
        else:
            mods.append(mod)
    return mods


def judge(records, modules, dev):
    """Log the outcome; return the list of problems (empty: pass)."""
    by_mod = collections.OrderedDict((m, collections.Counter()) for m in modules)
    bad = []
    skips = collections.OrderedDict()   # (label, messages, reason) -> [test ids]
    errors = collections.OrderedDict()  # the same, of PINNED_ERRORS
    seen = set()
    for r in records:
        tid, outcome = r['id'], r['outcome']
        seen.add(tid)
        by_mod.setdefault(r['module'], collections.Counter())[outcome] += 1
        pin = PINNED_SKIPS.get(tid)
        epin = PINNED_ERRORS.get(tid)
        if outcome == 'error' and epin is not None and r['reason'] in epin[1]:
            errors.setdefault(epin, []).append(tid)
        elif epin is not None and outcome != 'error':
            bad.append(f"PINNED ERROR NOW {outcome.upper()}: {tid} ({epin[0]}: {epin[2]}): "
                       "remove it from PINNED_ERRORS")
        elif outcome in ('fail', 'error', 'xpass'):
            bad.append(f"{outcome.upper()}: {tid}: {r['reason']}")
        elif outcome == 'skip':
            if pin is None:
                bad.append(f"UNEXPECTED SKIP: {tid}: {r['reason']}")
            elif r['reason'] not in [m.format(dev=dev) for m in pin[1]]:
                bad.append(f"SKIP WITH ANOTHER MESSAGE: {tid}: '{r['reason']}', "
                           f"pinned {pin[1]}")
            else:
                skips.setdefault(pin, []).append(tid)
        elif pin is not None:
            bad.append(f"PINNED SKIP NOW {outcome.upper()}: {tid} ({pin[0]}: {pin[2]}): "
                       "remove it from PINNED_SKIPS")
    for name, pins in (('PINNED_SKIPS', PINNED_SKIPS), ('PINNED_ERRORS', PINNED_ERRORS)):
        for tid in pins:
            if module_of(tid) in modules and tid not in seen:
                bad.append(f"PINNED TEST DID NOT RUN: {tid}: remove it from {name}")
    total = collections.Counter(r['outcome'] for r in records)
    pinned_errors = sum(len(ids) for ids in errors.values())
    failed = total['fail'] + total['error'] + total['xpass'] - pinned_errors
    log(f"pyverbs: {total['pass']} passed, {failed} failed, {total['skip']} skipped, "
        f"{pinned_errors} pinned errors")
    for m, c in by_mod.items():
        log(f"  {m}: {c['pass']} passed, {c['fail'] + c['error'] + c['xpass']} failed,"
            f" {c['skip']} skipped")
        if sum(c.values()) == 0:
            bad.append(f'NO TESTS RAN: {m}')
    for label in (FEATURE_GAP, NO_HARDWARE):
        n = sum(len(ids) for pin, ids in skips.items() if pin[0] == label)
        log(f"  skipped as {label}: {n}")
        for (lab_, _, reason), ids in skips.items():
            if lab_ != label:
                continue
            log(f"    x{len(ids)} {reason}")
            for tid in ids:
                log(f'      {tid}')
    for (label, _, reason), ids in errors.items():
        log(f"  errored as pinned ({label}): x{len(ids)} {reason}")
        for tid in ids:
            log(f'      {tid}')
    for b in bad:
        log(b)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--source', required=True, help='source root (scripts/lab.sh)')
    ap.add_argument('--build', required=True, help='build dir (daemon, shim)')
    ap.add_argument('--timeout', type=int, default=180, help='suite run limit, seconds')
    ap.add_argument('modules', nargs='*',
                    help='run only these modules (default: every device-generic one)')
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
        modules = args.modules or generic_modules(tdir)
        log(f"pyverbs: {len(modules)} modules: {' '.join(modules)}")
        log(f'pyverbs: {ONE_HOST}')
        result_json = os.path.join(tmp, 'result.json')
        # Shared-NIC arrangement on host a (as doc/deploy.md's): its kernel
        # interface holds the daemon's address too, so the daemon reports
        # that interface as the GID's net device (ibv_query_gid_ex
        # ndev_ifindex) and the rdma_cm tests find an address to use. The
        # daemon reads the interfaces when it starts: b first, the address,
        # then a.
        lab(args, 'up', timeout=90, start='b')
        try:
            lab(args, 'run', 'a', 'sh', '-c', 'ip addr add "$LAB_SELF_IP/32" dev "$LAB_IF"',
                timeout=20)
            lab(args, 'start', 'a', timeout=60)
            dev = lab(args, 'run', 'a', SYSTEM_PYTHON, '-c',
                      'import pyverbs.device as d; print(d.get_device_list()[0].name.decode())',
                      timeout=30, capture=True).stdout.strip().splitlines()[-1]
            log(f'pyverbs: device {dev}, lab {args.lab}, tests from {SHIPPED_TESTS}')
            started = time.monotonic()
            # both shims: pyverbs' cmid module loads librdmacm.so.1
            shims = ':'.join(os.path.join(args.build, 'drivers', d)
                             for d in ('verbs-shim', 'rdmacm-shim'))
            run = lab(args, 'run', 'a', 'env', f'LD_LIBRARY_PATH={shims}', SYSTEM_PYTHON,
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pyverbs_suite.py'),
                      tdir, result_json, dev, *modules,
                      timeout=args.timeout, check=False)
            log(f'pyverbs: the suite took {time.monotonic() - started:.0f} s')
        finally:
            down = lab(args, 'down', timeout=60, check=False, capture=True)
            log(down.stdout.strip())
        if not os.path.exists(result_json):
            log(f'pyverbs: the suite wrote no result (exit {run.returncode})')
            return 1
        with open(result_json) as f:
            records = json.load(f)
        ok = not judge(records, modules, dev)
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
