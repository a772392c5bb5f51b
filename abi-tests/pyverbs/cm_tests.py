#!/usr/bin/env python3
"""cm_tests.py --src DIR --results FILE [--dev DEV] [--only NAME...]

Runs the CMTestCase tests of rdma-core's tests/test_rdmacm.py (from the
source tree DIR, with pyverbs on PYTHONPATH) with rdma-core's own harness,
and writes one line per test to FILE as soon as the test ends:

    lib    PATH                       (each librdmacm/libibverbs mapped, real path)
    plan   NAME                       (every test, before the first one runs)
    result NAME pass|skip|fail SECONDS DETAIL

DETAIL is the skip reason or the last line of the failure. Output of the
tests themselves goes to stdout/stderr. The librdmacm in use is whatever the
dynamic linker gives pyverbs (LD_LIBRARY_PATH, LD_PRELOAD).

Only tests/test_rdmacm.py is imported: the `tests` package is set up
without running its __init__.py, which would import every test module.
"""
import argparse
import importlib
import os
import sys
import time
import types
import unittest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', required=True, help='rdma-core source tree')
    ap.add_argument('--results', required=True)
    ap.add_argument('--dev', default='rxe0')
    ap.add_argument('--only', nargs='*', default=None, help='test method names')
    opts = ap.parse_args()

    tests_dir = os.path.join(opts.src, 'tests')
    # tests/args_parser.py is imported as a top-level module by the harness.
    sys.path.insert(0, tests_dir)
    from args_parser import parser
    sys.argv = [sys.argv[0], '--dev', opts.dev]
    parser.parse_args()
    pkg = types.ModuleType('tests')
    pkg.__path__ = [tests_dir]
    sys.modules['tests'] = pkg
    mod = importlib.import_module('tests.test_rdmacm')

    names = unittest.defaultTestLoader.getTestCaseNames(mod.CMTestCase)
    if opts.only:
        names = [n for n in names if n in opts.only]
    out = open(opts.results, 'w', buffering=1)
    # Which librdmacm/libibverbs pyverbs got (the caller checks them).
    with open('/proc/self/maps') as maps:
        libs = sorted({line.split()[-1] for line in maps if os.path.basename(
            line.split()[-1]).startswith(('librdmacm.so', 'libibverbs.so'))})
    for lib in libs:
        out.write(f'lib {os.path.realpath(lib)}\n')
    for n in names:
        out.write(f'plan {n}\n')

    class Recorder(unittest.TextTestResult):
        def startTest(self, test):
            self._t0 = time.monotonic()
            super().startTest(test)

        def _record(self, test, outcome, detail=''):
            secs = time.monotonic() - self._t0
            detail = ' '.join(str(detail).split())[:300]
            out.write(f'result {test._testMethodName} {outcome} {secs:.1f} {detail}\n')

        def addSuccess(self, test):
            super().addSuccess(test)
            self._record(test, 'pass')

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._record(test, 'skip', reason)

        def _last_line(self, test, err):
            text = self._exc_info_to_string(err, test).strip().splitlines()
            return text[-1] if text else '?'

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._record(test, 'fail', self._last_line(test, err))

        def addError(self, test, err):
            super().addError(test, err)
            self._record(test, 'fail', self._last_line(test, err))

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._record(test, 'fail', 'expected failure')

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._record(test, 'fail', 'unexpected success')

    suite = unittest.TestSuite(mod.CMTestCase(n) for n in names)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Recorder, stream=sys.stdout)
    res = runner.run(suite)
    out.close()
    return 0 if res.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
