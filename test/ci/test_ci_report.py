#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""scripts/ci_report.py judged on made-up meson logs (TAP output).

Each case writes a testlog.json as meson 1.0 would, runs the report as CI does
(--strict) and checks its exit status and what it names. Prints TAP.
"""
import json
import os
import subprocess
import sys
import tempfile

REPORT = sys.argv[1]
n = 0
failed = 0
lines = []    # printed after the plan (meson 1.0 miscounts a trailing plan)


def log(path, tests):
    with open(path, 'w') as f:
        for name, result, stdout in tests:
            f.write(json.dumps({'name': name, 'result': result, 'stdout': stdout,
                                'returncode': 0 if result == 'OK' else 1}) + '\n')


def run(tmp, tests, expected, allow, strict=True, retried=''):
    lp = os.path.join(tmp, 'testlog.json')
    if retried:
        with open(os.path.join(tmp, 'retried.txt'), 'w') as f:
            f.write(retried)
    ep = os.path.join(tmp, 'expected.txt')
    ap = os.path.join(tmp, 'allow.txt')
    log(lp, tests)
    with open(ep, 'w') as f:
        f.write(''.join(f'release {e}\n' for e in expected))
    with open(ap, 'w') as f:
        f.write(''.join(a + '\n' for a in allow))
    args = [sys.executable, REPORT, '--expected', ep, '--allow', ap, f'release={lp}']
    if strict:
        args.insert(2, '--strict')
    p = subprocess.run(args, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def case(name, want_rc, tests, expected=None, allow=(), want=(), strict=True, retried='',
         not_want=()):
    global n, failed
    n += 1
    if expected is None:
        expected = [t[0] for t in tests]
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = run(tmp, tests, expected, list(allow), strict, retried)
    bad = [w for w in want if w not in out] + [f'(unwanted) {w}' for w in not_want if w in out]
    if rc == want_rc and not bad:
        lines.append(f'ok {n} - {name}')
    else:
        failed += 1
        lines.append(f'not ok {n} - {name} (exit {rc}, want {want_rc}; missing {bad})')
        lines.extend('# ' + line for line in out.splitlines())


TAP_OK = 'TAP version 13\n1..2\nok 1 - a::one\nok 2 - a::two\n'
TAP_SKIP = 'TAP version 13\n1..2\nok 1 - a::one\nok 2 - a::two # SKIP needs root\n'
TAP_TODO = 'TAP version 13\n1..2\nok 1 - a::one\nnot ok 2 - a::two # TODO not yet\n'
TAP_PLAN_SKIP = '1..0 # SKIP qemu-system-x86_64 not installed\n'
TAP_BAIL = '1..5\nok 1 - daemon/start\nBail out! the shim finds no device\n'
TAP_RETRY = ('1..2\nok 1 - x\n# RETRIED: write_bw/1024/rs: stalls +2 (first attempt: '
             'retry counter exceeded)\nok 2 - write_bw/1024/rs\n')
T = 'roce-dpdk:s / t'
U = 'roce-dpdk:s / u'

case('all passing is 0, with the closing line', 0, [(T, 'OK', TAP_OK)],
     want=['tests: 2 passed, 0 failed, 0 skipped', 'release  s'])
case('a skipped subtest fails CI', 1, [(T, 'OK', TAP_SKIP)],
     want=['unexpected skip: a::two: needs root', 'tests: 1 passed, 1 failed, 1 skipped'])
case('a skipped subtest is only a warning outside CI', 0, [(T, 'OK', TAP_SKIP)],
     want=['warning: release: roce-dpdk:s / t: unexpected skip'], strict=False)
case('an allowed skip passes, by tree, test and subtest', 0, [(T, 'OK', TAP_SKIP)],
     allow=['release t a::two | honest reason'])
case('an allow rule for another subtest does not cover it', 1, [(T, 'OK', TAP_SKIP)],
     allow=['release t a::one | honest reason'])
case('a TODO fails CI', 1, [(T, 'OK', TAP_TODO)], want=['TODO: a::two: not yet'])
case('a whole-test TAP skip (a 1..0 plan with SKIP) fails CI', 1, [(T, 'SKIP', TAP_PLAN_SKIP)],
     want=['unexpected skip: (whole test): qemu-system-x86_64 not installed'])
case('an exit-77 test fails CI', 1, [(T, 'SKIP', 'fuzz: clang not found, skipping\n')],
     want=['unexpected skip: (whole test)'])
case('a bail-out fails', 1, [(T, 'FAIL', TAP_BAIL)],
     want=['Bail out! the shim finds no device'])
case('a crash after the last ok line fails', 1, [(T, 'FAIL', '1..12\nok 1 - a\n')],
     want=['tests: 1 passed, 1 failed'])
case('a registered test missing from the run fails CI', 1, [(T, 'OK', TAP_OK)],
     expected=[T, U], want=['registered test missing from the run: ' + U])
case('a test not in the registered list fails CI', 1, [(T, 'OK', TAP_OK), (U, 'OK', TAP_OK)],
     expected=[T], want=['not in test/ci/expected-tests.txt: ' + U])
case('retries are counted and named', 0, [(T, 'OK', TAP_RETRY)],
     want=['retried: write_bw/1024/rs: stalls +2', 'release  s              1       2      0'
           '       0    0       1'])
case('reruns a test recorded in retried.txt are counted', 0, [(T, 'OK', TAP_OK)],
     retried='t\tstream: stalls_long +1\n',
     want=['retried: stream: stalls_long +1', 'release  s              1       2      0'
           '       0    0       1'])
case("a failed test's exit status and last output lines are repeated", 1,
     [(T, 'ERROR', TAP_OK + '# cleanup: lab.sh down failed\n')],
     want=['--- release: roce-dpdk:s / t: ERROR, exit status 1',
           '|# cleanup: lab.sh down failed', '|ok 2 - a::two'])
case("a passing test's output is not repeated", 0, [(T, 'OK', TAP_OK + '# quiet\n')],
     want=['tests: 2 passed'], not_want=['|# quiet', '--- release'])
case('a malformed allow rule is a usage error', 2, [(T, 'OK', TAP_OK)],
     allow=['release t a::two no reason'])

print(f'1..{n}')
print('\n'.join(lines))
sys.exit(1 if failed else 0)
