#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judge and summarise `meson test` runs: what "N passed" means in CI.

meson 1.0 counts a TAP test OK when its subtests are SKIP or TODO, and an
exit-status test that exits 77 as SKIP. This reads each tree's
meson-logs/testlog.json, counts every test's TAP lines (ok, not ok, # SKIP,
# TODO, "Bail out!", "# RETRIED:" diagnostics) and prints one line per suite,
then one closing "tests: N passed, N failed, N skipped" line.

With --strict (scripts/test.sh passes it when CI=true) the run fails when
  * a registered test is missing from a tree, or a tree has a test that is not
    registered in the expected list (test/ci/expected-tests.txt): a missing
    dependency that drops a suite from the build cannot pass unnoticed;
  * a test or a subtest is skipped and no rule of test/ci/allowed-skips.txt
    allows it;
  * any subtest is TODO;
  * a test was retried more often than its suite's cap allows (the tests cap
    their own reruns; this is a second line).
Without --strict the same findings are printed as warnings (a developer
without root sees which suites did not run).

usage: ci_report.py [--strict] [--expected FILE] [--allow FILE] TREE=TESTLOG.json...
Exit 0 when nothing failed, 1 otherwise, 2 on bad usage or unreadable logs.
"""
import argparse
import collections
import fnmatch
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_EXPECTED = os.path.join(HERE, '..', 'test', 'ci', 'expected-tests.txt')
DEFAULT_ALLOW = os.path.join(HERE, '..', 'test', 'ci', 'allowed-skips.txt')

FAIL_RESULTS = {'FAIL', 'TIMEOUT', 'ERROR', 'UNEXPECTEDPASS', 'INTERRUPT'}
SKIP_RESULTS = {'SKIP', 'EXPECTEDFAIL'}

TAP_LINE = re.compile(r'^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?(.*?)\s*$')
TAP_DIRECTIVE = re.compile(r'#\s*(SKIP|TODO)\b\s*(.*)$', re.IGNORECASE)
TAP_PLAN = re.compile(r'^1\.\.(\d+)(?:\s*#\s*SKIP\b\s*(.*))?', re.IGNORECASE)
RETRIED = re.compile(r'^#\s*RETRIED:\s*(.*)$')


class Counts:
    """One test's subtests (or the test itself when it is not TAP)."""

    def __init__(self):
        self.passed = self.failed = self.skipped = self.todo = self.retried = 0
        self.skips = []      # (subtest name, reason)
        self.todos = []      # (subtest name, reason)
        self.retries = []    # diagnostic text
        self.bailed = None

    def add(self, other):
        for k in ('passed', 'failed', 'skipped', 'todo', 'retried'):
            setattr(self, k, getattr(self, k) + getattr(other, k))


def parse_tap(text):
    """Counts of a TAP stream; None when the output is not TAP at all."""
    c = Counts()
    tap = False
    for raw in text.splitlines():
        line = raw.rstrip()
        m = TAP_PLAN.match(line)
        if m:
            tap = True
            if m.group(2) is not None and m.group(1) == '0':
                c.skipped += 1
                c.skips.append(('(whole test)', m.group(2).strip()))
            continue
        if line.startswith('Bail out!'):
            tap = True
            c.bailed = line[len('Bail out!'):].strip() or 'no reason given'
            continue
        m = RETRIED.match(line)
        if m:
            c.retried += 1
            c.retries.append(m.group(1))
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        tap = True
        ok = m.group(1) == 'ok'
        rest = m.group(3)
        d = TAP_DIRECTIVE.search(rest)
        name = (rest[:d.start()] if d else rest).strip()
        if d and d.group(1).upper() == 'SKIP':
            c.skipped += 1
            c.skips.append((name, d.group(2).strip()))
        elif d and d.group(1).upper() == 'TODO':
            c.todo += 1
            c.todos.append((name, d.group(2).strip()))
        elif ok:
            c.passed += 1
        else:
            c.failed += 1
    return c if tap else None


def load_log(path):
    tests = []
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.strip()
            if line:
                tests.append(json.loads(line))
    return tests


def load_retried(log_path):
    """{short test name: [text]} from retried.txt beside a testlog.json: the
    reruns a test recorded itself (Criterion's TAP output drops a test's own
    lines; test/integ writes there through ROCE_RETRY_LOG)."""
    out = collections.defaultdict(list)
    path = os.path.join(os.path.dirname(log_path), 'retried.txt')
    if os.path.exists(path):
        with open(path, encoding='utf-8', errors='replace') as f:
            for line in f:
                test, sep, text = line.rstrip('\n').partition('\t')
                if sep:
                    out[test].append(text)
    return out


def suite_of(name):
    """'roce-dpdk:engine / engine_rc' -> 'engine'; no suite -> the test name."""
    proj, _, test = name.partition(' / ')
    _, _, suite = proj.partition(':')
    return suite or test


def short_name(name):
    return name.partition(' / ')[2] or name


def load_expected(path):
    """{tree: set of test names}; lines 'TREE TEST-NAME'."""
    exp = collections.defaultdict(set)
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                tree, _, test = line.partition(' ')
                exp[tree].add(test.strip())
    return exp


def load_allow(path):
    """[(tree glob, test glob, subtest glob, reason)]; lines
    'TREE-GLOB TEST-GLOB SUBTEST-GLOB | why the skip is honest'."""
    rules = []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            pat, sep, why = line.partition('|')
            parts = pat.split()
            if not sep or len(parts) != 3 or not why.strip():
                raise ValueError(f'{path}:{n}: want "TREE TEST SUBTEST | reason"')
            rules.append((parts[0], parts[1], parts[2], why.strip()))
    return rules


def allowed(rules, tree, test, subtest):
    for t, n, s, why in rules:
        if fnmatch.fnmatchcase(tree, t) and fnmatch.fnmatchcase(short_name(test), n) \
                and fnmatch.fnmatchcase(subtest, s):
            return why
    return None


DETAIL_TESTS = 4   # failed tests whose output the report repeats
DETAIL_LINES = 25  # the last lines of each stream repeated


def print_detail(tree, t, out):
    """Repeat the end of a failed test's output next to the verdict: CI shows
    only the tail of a run, and meson's --print-errorlogs text scrolls away
    behind the second tree."""
    print(f'--- {tree}: {t["name"]}: {t["result"]}, exit status {t.get("returncode")}, '
          f'{t.get("duration", 0):.1f} s', file=out)
    for stream in ('stdout', 'stderr'):
        text = (t.get(stream) or '').rstrip('\n')
        if not text:
            continue
        tail = text.split('\n')[-DETAIL_LINES:]
        print(f'--- {stream}, last {len(tail)} lines:', file=out)
        for line in tail:
            print('|' + line[:300], file=out)


def judge(trees, expected, rules, strict, out=sys.stdout):
    """Print the table; return the list of problems (empty: pass)."""
    problems = []    # policy: missing tests, unexpected skips, TODO, bail-outs
    failures = []    # tests meson itself reports failed
    warnings = []
    failed_logs = []  # (tree, testlog entry) of each failed test
    rows = collections.OrderedDict()   # (tree, suite) -> [tests, Counts, failed tests]
    total = Counts()
    for tree, tests, retried in trees:
        names = {t['name'] for t in tests}
        if expected is not None:
            for missing in sorted(expected.get(tree, set()) - names):
                (problems if strict else warnings).append(f'{tree}: registered test missing from the run: {missing}')
            for extra in sorted(names - expected.get(tree, set())):
                (problems if strict else warnings).append(f'{tree}: test not in test/ci/expected-tests.txt: {extra} '
                                '(add it there)')
        for t in tests:
            name, res = t['name'], t['result']
            key = (tree, suite_of(name))
            row = rows.setdefault(key, [0, Counts(), []])
            row[0] += 1
            c = parse_tap(t.get('stdout') or '')
            if c is None:
                # not TAP: the test itself is the one case
                c = Counts()
                if res == 'OK':
                    c.passed = 1
                elif res in SKIP_RESULTS:
                    c.skipped = 1
                    c.skips.append(('(whole test)', 'exit status 77'))
                else:
                    c.failed = 1
            elif res in FAIL_RESULTS and c.failed == 0:
                c.failed = 1    # a crash or timeout after the last ok line
            for r in retried.get(short_name(name), []):
                c.retried += 1
                c.retries.append(r)
            if res in FAIL_RESULTS:
                failed_logs.append((tree, t))
                row[2].append(short_name(name))
                failures.append(f'{tree}: {name}: {res}')
            if c.bailed is not None:
                problems.append(f'{tree}: {name}: Bail out! {c.bailed}')
            for sub, why in c.skips:
                rule = allowed(rules, tree, name, sub)
                if rule is None:
                    (problems if strict else warnings).append(
                        f'{tree}: {name}: unexpected skip: {sub}: {why}')
            for sub, why in c.todos:
                (problems if strict else warnings).append(
                    f'{tree}: {name}: TODO: {sub}: {why}')
            for r in c.retries:
                print(f'# {tree}: {short_name(name)}: retried: {r}', file=out)
            row[1].add(c)
            total.add(c)

    for w in warnings:
        print(f'warning: {w}', file=out)
    for tree, t in failed_logs[:DETAIL_TESTS]:
        print_detail(tree, t, out)
    for p in failures + problems:
        print(f'problem: {p}', file=out)
    print(f'{"tree":8} {"suite":10} {"tests":>5} {"passed":>7} {"failed":>6} '
          f'{"skipped":>7} {"todo":>4} {"retried":>7}', file=out)
    for (tree, suite), (ntests, c, failed) in rows.items():
        print(f'{tree:8} {suite:10} {ntests:5} {c.passed:7} {c.failed:6} {c.skipped:7} '
              f'{c.todo:4} {c.retried:7}' + (f'  FAILED: {" ".join(failed)}' if failed else ''),
              file=out)
    # the closing line: subtests, plus each policy problem as one failure
    print(f'tests: {total.passed} passed, {total.failed + len(problems)} failed, '
          f'{total.skipped} skipped', file=out)
    return failures + problems


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    ap.add_argument('--strict', action='store_true')
    ap.add_argument('--expected', default=DEFAULT_EXPECTED,
                    help="the registered tests; '' skips that check (a partial run)")
    ap.add_argument('--allow', default=DEFAULT_ALLOW)
    ap.add_argument('logs', nargs='+', metavar='TREE=TESTLOG')
    a = ap.parse_args(argv)
    trees = []
    for spec in a.logs:
        tree, sep, path = spec.partition('=')
        if not sep:
            ap.error(f'{spec}: want TREE=TESTLOG.json')
        try:
            trees.append((tree, load_log(path), load_retried(path)))
        except (OSError, ValueError) as e:
            print(f'ci_report: {path}: {e}', file=sys.stderr)
            return 2
    try:
        expected = load_expected(a.expected) if a.expected else None
        rules = load_allow(a.allow)
    except (OSError, ValueError) as e:
        print(f'ci_report: {e}', file=sys.stderr)
        return 2
    return 1 if judge(trees, expected, rules, a.strict) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
