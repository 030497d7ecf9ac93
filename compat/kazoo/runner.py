"""Runs the Kazoo compatibility suite and prints one line per test and a
closing ``<kind>: N passed, N failed`` line; exits 1 if anything failed.

Usage: runner.py [--server zkd|zookeeper] [--members N] [--zkd-bin PATH]
                 [-k SUBSTRING]... [--keep] [--test-timeout SECONDS]

Skips count as failures: a scenario that cannot run is not a pass.
"""

import argparse
import faulthandler
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import kzsuite  # noqa: E402


class Result(unittest.TestResult):
    """Prints each outcome as it happens and keeps the counts."""

    def __init__(self, out, tails):
        super().__init__()
        self.out = out
        self.tails = tails
        self.passed = 0
        self.failed_names = []
        self._t0 = 0.0

    def startTest(self, test):
        super().startTest(test)
        self._t0 = time.monotonic()
        _watchdog.arm(test.id())

    def stopTest(self, test):
        _watchdog.disarm()
        super().stopTest(test)

    def _line(self, test, word):
        self.out.write("%-4s %s (%.1fs)\n" % (word, test.id(), time.monotonic() - self._t0))
        self.out.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1
        self._line(test, "ok")

    def _fail(self, test, err, word):
        self.failed_names.append(test.id())
        self._line(test, word)
        self.out.write(self._exc_info_to_string(err, test))
        if self.tails and hasattr(test, "clusters"):
            for cl in test.clusters():
                self.out.write(cl.log_tails() + "\n")
        self.out.flush()

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, err, "FAIL")

    def addError(self, test, err):
        super().addError(test, err)
        if isinstance(test, unittest.suite._ErrorHolder):  # setUpClass and friends
            self.failed_names.append(test.id())
            self.out.write("ERR  %s\n%s" % (test.id(), self._exc_info_to_string(err, test)))
            self.out.flush()
            return
        self._fail(test, err, "ERR")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is None:
            return
        # The test as a whole gets no addSuccess after a failed subtest;
        # count it failed once, and show every failing subtest.
        if test.id() not in self.failed_names:
            self.failed_names.append(test.id())
        self._line(subtest, "FAIL")
        self.out.write(self._exc_info_to_string(err, test))
        if self.tails and hasattr(test, "clusters"):
            for cl in test.clusters():
                self.out.write(cl.log_tails() + "\n")
        self.out.flush()

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.failed_names.append(test.id())
        self.out.write("SKIP %s: %s (counted as failed)\n" % (test.id(), reason))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.failed_names.append(test.id())
        self._line(test, "XFAIL")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.failed_names.append(test.id())
        self._line(test, "XPASS")


class Watchdog:
    """Ends the run if one test hangs: dumps every thread's stack, stops
    the servers and exits with the counts so far (the hung test failed)."""

    def __init__(self):
        self.limit = 120.0
        self.result = None
        self.label = "kazoo"
        self._timer = None

    def arm(self, name):
        self.disarm()
        self._timer = threading.Timer(self.limit, self._fire, args=(name,))
        self._timer.daemon = True
        self._timer.start()

    def disarm(self):
        if self._timer:
            self._timer.cancel()
            self._timer = None

    def _fire(self, name):
        sys.stdout.write("HUNG %s: still running after %.0fs; stacks:\n" % (name, self.limit))
        sys.stdout.flush()
        faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
        harness.stop_all()
        passed = self.result.passed if self.result else 0
        failed = len(self.result.failed_names) + 1 if self.result else 1
        sys.stdout.write("%s: %d passed, %d failed\n" % (self.label, passed, failed))
        sys.stdout.flush()
        os._exit(1)


_watchdog = Watchdog()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", choices=("zkd", "zookeeper"), default="zkd")
    ap.add_argument("--members", type=int, default=1,
                    help="ensemble size (zkd: 1 until ensembles land, issue 3)")
    ap.add_argument("--zkd-bin", default=os.environ.get("ZKD_BIN"))
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run only tests whose id contains this (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--no-tails", action="store_true", help="do not print server logs on failure")
    ap.add_argument("--test-timeout", type=float, default=120.0)
    args = ap.parse_args(argv)

    label = "kazoo" if args.server == "zkd" else "kazoo-zookeeper"
    if args.server == "zkd" and not (args.zkd_bin and os.access(args.zkd_bin, os.X_OK)):
        print("runner: no executable zkd binary (ZKD_BIN=%r)" % args.zkd_bin)
        print("%s: 0 passed, 1 failed" % label)
        return 1

    base = tempfile.mkdtemp(prefix="zkd-kazoo-")
    kzsuite.CONFIG.kind = args.server
    kzsuite.CONFIG.members = args.members
    kzsuite.CONFIG.zkd_bin = args.zkd_bin and os.path.abspath(args.zkd_bin)
    kzsuite.CONFIG.base_dir = base
    kzsuite.setup_logging(os.path.join(base, "kazoo-client.log"))

    def on_signal(signum, frame):
        harness.stop_all()
        print("runner: interrupted by signal %d" % signum)
        print("%s: 0 passed, 1 failed" % label)
        os._exit(1)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    loader = unittest.TestLoader()
    suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    if args.patterns:
        suite = _filter(suite, args.patterns)
    result = Result(sys.stdout, tails=not args.no_tails)
    _watchdog.limit = args.test_timeout
    _watchdog.result = result
    _watchdog.label = label
    t0 = time.monotonic()
    print("runner: %s (members=%d), %d tests, dir %s" % (
        args.server, args.members, suite.countTestCases(), base))
    sys.stdout.flush()
    try:
        suite.run(result)
    finally:
        harness.stop_all()
    failed = len(result.failed_names)
    if result.testsRun == 0:
        print("runner: no test ran")
        failed += 1
    if failed:
        print("runner: failed: " + ", ".join(result.failed_names))
        print("runner: logs kept in %s" % base)
    elif not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    print("runner: %.1fs" % (time.monotonic() - t0))
    print("%s: %d passed, %d failed" % (label, result.passed, failed))
    return 1 if failed else 0


def _filter(suite, patterns):
    out = unittest.TestSuite()
    for t in _iter(suite):
        if any(p in t.id() for p in patterns):
            out.addTest(t)
    return out


def _iter(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _iter(t)
        else:
            yield t


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
