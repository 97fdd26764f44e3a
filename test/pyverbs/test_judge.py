#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""run_pyverbs.py's verdict without a lab: pinned skips, their labels and
messages, stale pins, and the device-generic module list (no root needed)."""
import os
import sys
import tempfile
import unittest
import unittest.mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_pyverbs as rp  # noqa: E402

rp.log = lambda *a: None   # the verdict's report is not what is tested here

DEV = 'dpdk_roce0'


def rec(tid, outcome, reason=''):
    return {'id': tid, 'module': rp.module_of(tid), 'outcome': outcome, 'reason': reason}


def all_pinned_skips():
    return [rec(tid, 'skip', pin[1][0].format(dev=DEV)) for tid, pin in rp.PINNED_SKIPS.items()]


def modules_of(records):
    return sorted({r['module'] for r in records})


class JudgeTest(unittest.TestCase):
    def judge(self, records, modules=None):
        return rp.judge(records, modules or modules_of(records), DEV)

    def test_pins_are_labelled_and_explained(self):
        self.assertGreater(len(rp.PINNED_SKIPS), 0)
        for tid, (label, messages, reason) in rp.PINNED_SKIPS.items():
            self.assertIn(label, (rp.FEATURE_GAP, rp.NO_HARDWARE), tid)
            self.assertTrue(messages and all(messages), tid)
            self.assertTrue(reason, tid)
            self.assertTrue(tid.startswith('tests.test_') and rp.module_of(tid), tid)

    def test_every_pinned_skip_with_its_message_passes(self):
        records = all_pinned_skips() + [rec('tests.test_pd.PDTest.test_alloc_pd', 'pass')]
        self.assertEqual(self.judge(records), [])

    def test_device_name_in_message(self):
        # a pin's message may name the device: {dev}
        tid = 'tests.test_rdmacm.CMTestCase.test_rdmacm_sync_traffic'
        pin = (rp.FEATURE_GAP, ("Device {dev} doesn't have net interface",), 'example')
        with unittest.mock.patch.dict(rp.PINNED_SKIPS, {tid: pin}):
            records = [r for r in all_pinned_skips() if r['id'] == tid]
            self.assertEqual(records[0]['reason'], f"Device {DEV} doesn't have net interface")
            self.assertEqual(self.judge(all_pinned_skips()), [])
            other = [r for r in all_pinned_skips() if r['id'] != tid] + [
                rec(tid, 'skip', "Device other0 doesn't have net interface")]
            self.assertEqual(len(self.judge(other)), 1, 'another device: another message')

    def test_rdmacm_has_no_pins(self):
        # issues 15 and 21: every rdma_cm test runs, multicast included
        pins = [t for t in rp.PINNED_SKIPS if rp.module_of(t) == 'test_rdmacm']
        self.assertEqual(pins, [])

    def test_unpinned_skip_fails(self):
        records = all_pinned_skips() + [
            rec('tests.test_qp.QPTest.test_create_rc_qp_no_attr', 'skip',
                'Create RC QP without attrs is not supported')]
        bad = self.judge(records)
        self.assertEqual(len(bad), 1)
        self.assertTrue(bad[0].startswith('UNEXPECTED SKIP: tests.test_qp.QPTest.'), bad)

    def test_pinned_skip_with_another_message_fails(self):
        records = all_pinned_skips()
        records[0]['reason'] = 'No supported port is up, can\'t run traffic'
        bad = self.judge(records)
        self.assertEqual(len(bad), 1)
        self.assertTrue(bad[0].startswith('SKIP WITH ANOTHER MESSAGE: ' + records[0]['id']), bad)

    def test_pinned_test_that_passes_fails(self):
        records = all_pinned_skips()
        records[3]['outcome'], records[3]['reason'] = 'pass', ''
        bad = self.judge(records)
        self.assertEqual(len(bad), 1)
        self.assertTrue(bad[0].startswith('PINNED SKIP NOW PASS: ' + records[3]['id']), bad)

    def test_pinned_test_that_did_not_run_fails_in_its_module_only(self):
        records = all_pinned_skips()
        gone = records.pop(5)
        bad = self.judge(records, modules_of(records + [gone]))
        self.assertEqual(bad, [f"PINNED TEST DID NOT RUN: {gone['id']}: remove it from "
                               "PINNED_SKIPS"])
        # A run of other modules does not miss it.
        others = [r for r in records if r['module'] != gone['module']]
        self.assertEqual(self.judge(others), [])

    def test_failures_and_errors_fail(self):
        records = all_pinned_skips() + [
            rec('tests.test_qp.QPTest.test_modify_qp', 'fail', 'AssertionError: 1 != 2'),
            rec('tests.test_cq.CQTest.test_resize_cq', 'error', 'PyverbsRDMAError: EIO'),
            rec('tests.test_pd.PDTest.test_alloc_pd', 'xpass')]
        bad = self.judge(records)
        self.assertEqual([b.split(':')[0] for b in bad], ['FAIL', 'ERROR', 'XPASS'])

    def test_pinned_errors_are_feature_gaps_with_exact_messages(self):
        # empty since RSS works (issue 19); any pin that comes back must be of this shape
        for tid, (label, messages, reason) in rp.PINNED_ERRORS.items():
            self.assertEqual(label, rp.FEATURE_GAP, tid)
            self.assertTrue(reason and messages, tid)
            self.assertTrue(all('Errno: 95' in m for m in messages), 'EOPNOTSUPP only: ' + tid)
            self.assertNotIn(tid, rp.PINNED_SKIPS)

    # The mechanism, on a pin of the shape the list takes (it holds none today).
    @unittest.mock.patch.dict(rp.PINNED_ERRORS, {'tests.test_x.XTest.test_y': (
        rp.FEATURE_GAP, ('PyverbsRDMAError: Failed to create X. Errno: 95, Operation not supported',),
        'a verb the test does not turn into a skip')})
    def test_a_pinned_error_passes_only_with_its_message(self):
        tid, (_, messages, _) = next(iter(rp.PINNED_ERRORS.items()))
        self.assertEqual(self.judge(all_pinned_skips() + [rec(tid, 'error', messages[0])]), [])
        bad = self.judge(all_pinned_skips() + [rec(tid, 'error', 'PyverbsRDMAError: EIO')])
        self.assertEqual([b.split(':')[0] for b in bad], ['ERROR'])
        bad = self.judge(all_pinned_skips() + [rec(tid, 'fail', messages[0])])
        self.assertTrue(bad and bad[0].startswith('PINNED ERROR NOW FAIL: ' + tid), bad)
        bad = self.judge(all_pinned_skips() + [rec(tid, 'pass')])
        self.assertTrue(bad and bad[0].startswith('PINNED ERROR NOW PASS: ' + tid), bad)
        others = all_pinned_skips()
        bad = self.judge(others, modules_of(others) + [rp.module_of(tid)])
        self.assertIn(f'PINNED TEST DID NOT RUN: {tid}: remove it from PINNED_ERRORS', bad)

    def test_raw_packet_flow_and_rss_tests_have_no_pins(self):
        # issue 19: RAW_PACKET QPs, flow steering and RSS QPs run
        pins = [t for t in list(rp.PINNED_SKIPS) + list(rp.PINNED_ERRORS)
                if rp.module_of(t) in ('test_flow', 'test_rss_traffic') or '_raw_' in t]
        self.assertEqual(pins, [])

    def test_module_without_tests_fails(self):
        bad = self.judge(all_pinned_skips(), modules_of(all_pinned_skips()) + ['test_new'])
        self.assertEqual(bad, ['NO TESTS RAN: test_new'])


class ModulesTest(unittest.TestCase):
    def test_vendor_modules_left_out(self):
        with tempfile.TemporaryDirectory() as d:
            for fn in ('test_qp.py', 'test_mlx5_dc.py', 'test_efadv.py', 'test_efa_srd.py',
                       'test_rdmacm.py', 'mlx5_base.py', 'utils.py', 'test_cq.py.gz'):
                open(os.path.join(d, fn), 'w').close()
            self.assertEqual(rp.generic_modules(d), ['test_qp', 'test_rdmacm'])

    def test_module_of(self):
        self.assertEqual(rp.module_of('tests.test_qp.QPTest.test_x'), 'test_qp')
        self.assertEqual(rp.module_of('setUpClass (tests.test_mr.MRTest)'), 'test_mr')


if __name__ == '__main__':
    unittest.main(verbosity=2)
