#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run modules of rdma-core's tests/ as its run_tests.py does, record each outcome.

Runs inside a lab host (run_pyverbs.py starts it with `lab.sh run`), under
Debian's /usr/bin/python3 so the system pyverbs loads the shim's
libibverbs.so.1 from LD_LIBRARY_PATH.

usage: pyverbs_suite.py TESTS_DIR RESULT_JSON DEVICE MODULE...

The test package is loaded exactly as tests/run_tests.py loads it (its
argument parser sees `--dev DEVICE`); the verbose unittest report goes to
stdout, and RESULT_JSON gets one record per test:
{"id", "module", "outcome": pass|fail|error|skip|xfail|xpass, "reason"}.
"""
import json
import os
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
