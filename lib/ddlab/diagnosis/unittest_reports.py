"""A test runner's report after a traceback: never more of the exception's message (round 93); a test's own
failed check: never the server's crash (round 100).

unittest's TextTestRunner.run prints separator2, 70 dashes, then "Ran N test(s) in T s" after the errors it
lists (CPython 3.11.7 Lib/unittest/runner.py:36, :226-229; printErrorList's own separator2 comes before each
traceback, :156). A harness's lines after it (its command line, flags included) are not the error's words:
:mod:`.tracebacks` ends an open message at either line.

(round 100) unittest runs a test method through TestCase._callTestMethod (CPython 3.11.7 Lib/unittest/case.py:579;
SGLang's CustomTestCase wraps it in a retry: 0.5.6.post2 sglang/test/test_utils.py:1695-1700), and its assert
methods fail by raising the case's failureException, AssertionError (case.py:703 in TestCase.fail). A chain through
a test method whose AssertionError was raised in the test's own code (unittest's case.py, a test module) is the test
judging what the server answered (a benchmark's latency over its bound), not the server failing:
:func:`.tracebacks.client_script` takes it once the server served. An AssertionError raised in the server's code, a
test driving an engine in its own process, stays the server's.
"""

from __future__ import annotations

import re

__all__ = ["UNITTEST_REPORT", "failed_check", "run_end", "before_verdict"]

_RAN_LINE = r"Ran \d+ tests? in \d+\.\d+s\s*$"
UNITTEST_REPORT = re.compile(rf"^(?:-{{70}}\s*$|{_RAN_LINE})")
_RAN = re.compile(rf"^{_RAN_LINE}")
_VERDICT = re.compile(r"^(?:OK|FAILED)(?: \((?:(?:failures|errors|skipped|expected failures|unexpected successes)=\d+"
                      r"(?:, )?)+\))?\s*$")
_TEST_CODE = re.compile(r"(?:^|[/\\])(?:unittest[/\\]case\.py|test[/\\][^/\\]+\.py|test_[^/\\]+\.py)$")


def failed_check(raised: list) -> bool:
    """The blocks (``.type``, ``.frames`` of ``.file``, ``.func``) are a test method's failed check."""
    through_test = any(f.func == "_callTestMethod" for block in raised for f in block.frames)
    return through_test and any(block.type == "AssertionError" and block.frames and _TEST_CODE.search(
        block.frames[-1].file) for block in raised)


def run_end(lines: list) -> int | None:
    """The line number (``.no``, ``.msg``) of unittest's last word on a run: "OK" or "FAILED (...)" after "Ran N
    tests in T s" (runner.py:226-229, :243-256). The test process printed it once its run was over: a plain line
    after it that no logger stamped is a CI wrapper's (its pod's, its job's), not the server's. A traceback after it
    is still read (round 94's h94004: a launcher's TimeoutError printed on stderr after the runner's stdout)."""
    ran = None
    for line in lines:
        if _RAN.match(line.msg):
            ran = line.no
        elif ran is not None and line.msg.strip():
            if _VERDICT.match(line.msg):
                return line.no
            ran = None
    return None


def before_verdict(found: list, lines: list) -> list:
    """The candidates (``.first_no``, ``.lines``, ``.chain``) less a CI wrapper's after unittest's verdict
    (:func:`run_end`): a plain line, or a bare "Error: ..." read as an exception, that no logger stamped and no
    traceback's frames carry."""
    end = run_end(lines)
    return [c for c in found if end is None or c.first_no < end or any(ln.time for ln in c.lines)
            or (c.chain is not None and any(block.frames for block in c.chain.raised))]
