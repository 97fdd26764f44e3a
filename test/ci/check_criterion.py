#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""How our Criterion tests must run, and why (prints TAP).

Criterion 2.4 exits 1 although every TAP line is "ok" when a test logged a
warning (cr_log_warn) or an error, or when a test's worker died by a signal
in its teardown or after it (src/core/runner.c and client.c: the exit status
also counts warnings and errors). With plain --tap it is quiet: neither the
warning nor "crashed during its setup or teardown" is printed anywhere, and
meson reports an ERROR without a reason. So:
  1. no test source calls cr_log_warn (log the retry with cr_log_info;
     cr_log_error only where the test fails anyway);
  2. every Criterion test registered in the build runs with
     --tap=/dev/stdout (crit_tap), which the default test setup's wrapper
     scripts/crit_tap.sh turns into clean TAP on stdout for meson and
     everything else (Criterion's log, the cases' output) on stderr, where
     CI's report (scripts/ci_report.py) shows its tail;
  3. a suite's .fini never calls cr_assert or cr_expect: Criterion ignores
     a failure there (the test stays "ok", the exit status 0); a check in a
     teardown uses t_fini_check() (test/daemon/helpers.h), which aborts.
Cases 4 to 11 run criterion_probe (test/ci/criterion_probe.c) and check that
the installed Criterion still behaves as the rules assume.

Usage: check_criterion.py SRC_ROOT BUILD_ROOT PROBE
"""
import json
import os
import re
import subprocess
import sys

SRC, BUILD, PROBE = sys.argv[1:4]
WRAP = os.path.join(SRC, 'scripts', 'crit_tap.sh')
TAP_OUT = '--tap=/dev/stdout'
WARN = re.compile(r'\bcr_log_warn\s*\(|\bcr_log\s*\(\s*CR_LOG_WARNING\b')
SCANNED = ('test', 'fuzz', 'bench')
n = 0
failed = 0


def result(ok, what, detail=''):
    global n, failed
    n += 1
    failed += not ok
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    if not ok:
        for line in detail.splitlines()[:40]:
            print(f'# {line}')


def warn_calls():
    """file:line of every warning logged by a test source."""
    return [f'{rel}:{i}: {line.strip()}' for rel, text in sources()
            for i, line in enumerate(text.splitlines(), 1) if WARN.search(line)]


def sources():
    """(relative path, text) of every C file the rules apply to (the probe excepted)."""
    probe_src = os.path.join('test', 'ci', 'criterion_probe.c')
    for top in SCANNED:
        for root, dirs, files in os.walk(os.path.join(SRC, top)):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, SRC)
                if name.endswith(('.c', '.h')) and rel != probe_src:
                    with open(path, errors='replace') as f:
                        yield rel, f.read()


def fini_checks():
    """file: fini function of every .fini defined in its own file that asserts."""
    hits = []
    for rel, text in sources():
        for fn in sorted(set(re.findall(r'\.fini\s*=\s*(\w+)', text))):
            m = re.search(r'^' + fn + r'\s*\([^)]*\)\s*\n\{(.*?)^\}', text, re.M | re.S)
            if m and re.search(r'\bcr_(assert|expect)\w*\s*\(', m.group(1)):
                hits.append(f'{rel}: {fn}()')
    return hits


def links_criterion(path):
    """True when the ELF file @path names libcriterion among what it needs."""
    try:
        with open(path, 'rb') as f:
            return b'libcriterion.so' in f.read()
    except OSError:
        return False


def criterion_tests():
    """(name, cmd) of every registered test whose program links Criterion."""
    with open(os.path.join(BUILD, 'meson-info', 'intro-tests.json')) as f:
        tests = json.load(f)
    return [(t['name'], t['cmd']) for t in tests
            if t['cmd'] and links_criterion(t['cmd'][0])]


def probe(case, tap=TAP_OUT, wrap=True):
    """Run one probe case as meson does (through the wrapper) or bare."""
    cmd = ([WRAP] if wrap else []) + [PROBE, tap, '-j1', f'--filter=probe/{case}']
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    lines = [line for line in p.stdout.splitlines() if re.match(r'(not )?ok\b', line)]
    ran = [line for line in lines if '# SKIP' not in line]
    all_ok = len(ran) == 1 and ran[0].startswith('ok ')
    tap_only = all(re.match(r'(TAP version|1\.\.|#|(not )?ok\b)', line)
                   for line in p.stdout.splitlines() if line.strip())
    return p.returncode, all_ok and tap_only, p.stderr, f'exit {p.returncode}\n{p.stdout}{p.stderr}'


print('TAP version 13')
print('1..11')

hits = warn_calls()
result(not hits, 'no test source logs a Criterion warning (it turns a pass into exit 1)',
       '\n'.join(hits))

tests = criterion_tests()
bad = [f'{name}: {" ".join(cmd[1:])}' for name, cmd in tests
       if TAP_OUT not in cmd or '--tap' in cmd]
result(tests and not bad,
       f'every Criterion test runs with {TAP_OUT} ({len(tests)} registered in this build)',
       '\n'.join(bad) if tests else 'no Criterion test found in meson-info/intro-tests.json')

hits = fini_checks()
result(not hits, 'no .fini asserts (Criterion ignores a failure there)', '\n'.join(hits))

rc, ok, err, out = probe('passes')
result(rc == 0 and ok, 'a passing test exits 0', out)

rc, ok, err, out = probe('logs_info')
result(rc == 0 and ok, 'an info line keeps the exit status 0', out)

rc, ok, err, out = probe('logs_warn')
result(rc == 1 and ok and '[WARN] probe: a warning line' in err,
       f'a warning: every line ok, exit 1, and with {TAP_OUT} the warning on stderr', out)

rc, ok, err, out = probe('dies_in_fini')
result(rc == 1 and ok and 'crashed during its setup or teardown' in err,
       'a signal in the teardown: every line ok, exit 1, the reason on stderr', out)

rc, ok, err, out = probe('prints_to_stdout')
result(rc == 0 and ok and 'probe: a line of the case on stdout' in err,
       "a case's own stdout goes to stderr: stdout is TAP only", out)

rc, ok, err, out = probe('logs_warn', wrap=False)
result(rc == 1 and '[WARN] probe: a warning line' in out and 'probe::logs_warn' in out,
       f'without the wrapper {TAP_OUT} still shows the warning (on stdout or stderr)', out)

rc, ok, err, out = probe('logs_warn', tap='--tap', wrap=False)
result(rc == 1 and ok and 'WARN' not in err,
       'plain --tap: the same exit 1 with nothing on stderr (why rule 2)', out)
rc, ok, err, out = probe('fails_in_fini')
result(rc == 0 and ok, 'a failed cr_expect in the teardown: still ok and exit 0 (why rule 3)', out)
sys.exit(1 if failed else 0)
