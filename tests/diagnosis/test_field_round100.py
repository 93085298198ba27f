"""Held-out round 100 (issue 24): a CI test's own failed latency check on an Ascend NPU server that served, and a
Slurm job whose host memory ran out before two survivors met a CUDA OOM.

Round 100 (h100001-h100010, no h100006; users' own log repositories) was measured once on main at 295134f, staged
again as 62225209 on 71dbd63 (round 99 merged), where it reads the same: crashed 8/9, kind 7/9, phase 8/8.
docs/diagnosis.md, "Held-out round 100", tells the round.

- h100004, SGLang 0.5.6.post2 on Ascend (a k8s CI run of a performance test): the server was ready and answered the
  benchmark (576 successful requests); the only tracebacks are the test's, unittest's AssertionError from its
  assertLessEqual on the mean ITL through TestCase._callTestMethod (CPython 3.11 Lib/unittest/case.py:579, :703;
  SGLang's CustomTestCase's retry, 0.5.6.post2 sglang/test/test_utils.py:1695-1700), and the CI wrapper's "Error:
  Pod logs ended but target pattern was not detected" after unittest's "FAILED (errors=1)" (runner.py:228, :244).
  Read crashed unknown; fixed: diagnosis/unittest_reports.py failed_check (a client's, tracebacks.client_script)
  and before_verdict (rootcause.candidates takes no unstamped line after unittest's verdict
  that no traceback's frames carry).
- h100009 (SGLang Diffusion under Slurm): left (known_misses.json). Two of six ranks vanish while streaming 53.2 GiB
  each to CPU (four report it), the survivors' NCCL group fails on the exited peers, two fall back to a native load
  and meet CUDA OOM, and Slurm reports "Detected 2 oom_kill events": host memory ran out first, as labelled; ddlab
  reads the fallback's CUDA OOM.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 100)


def test_round100_is_folded_into_work_with_one_fix_and_one_left():
    assert _IDS == [f"h1000{n:02d}" for n in range(1, 11) if n != 6]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == ["h100009"]
    assert KNOWN_MISSES["real"]["h100009"] == ["kind"]


# fails on 62225209's code, which read (True, "unknown", "serving") from the wrapper's line after the verdict
def test_h100004_a_ci_tests_failed_latency_check_is_no_crash():
    found = real("h100004")
    assert (found.crashed, found.kind, found.phase) == (False, None, "serving")


def test_h100009_is_left_reading_the_fallbacks_cuda_oom():
    found = real("h100009")
    assert (found.crashed, found.kind, found.phase) == (True, "cuda_oom", "load_weights")


# --- a test's own check, and the wrapper after unittest's verdict ---------------------------------------------------

_SERVED = ["[2026-02-06 12:22:32] The server is fired up and ready to roll!",
           "[2026-02-06 12:22:38 DP0 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 128, #cached-token: 0, "
           "token usage: 0.00, #running-req: 0, #queue-req: 0, "]
_PKG = "/usr/local/python3.11.14/lib/python3.11/site-packages"
_LIB = "/usr/local/python3.11.14/lib/python3.11"


def _test_traceback(inner: list[str], exc: str) -> list[str]:
    return ["Traceback (most recent call last):",
            f'  File "{_PKG}/sglang/srt/utils/common.py", line 2527, in retry', "    return fn()",
            f'  File "{_LIB}/unittest/case.py", line 579, in _callTestMethod', "    if method() is not None:",
            '  File "/root/sglang/test/registered/perf/test_perf.py", line 72, in test_throughput',
            "    self.run_throughput()", *inner, exc]


_FAIL = [f'  File "{_LIB}/unittest/case.py", line 703, in fail', "    raise self.failureException(msg)"]
_REPORT = ["", "-" * 70, "Ran 1 test in 2823.283s", "", "FAILED (errors=1)"]
_WRAPPER = "Error: Pod logs ended but target pattern was not detected"


def _log(*parts: list[str]) -> str:
    return "\n".join(line for part in parts for line in part) + "\n"


def test_a_tests_failed_assertion_after_the_server_served_is_no_crash():
    text = _log(_SERVED, _test_traceback(_FAIL, "AssertionError: 79.59 not less than or equal to 45.9"), _REPORT)
    assert reads(text, family="sglang") == (False, None, "serving")


def test_a_ci_wrappers_error_after_unittests_verdict_is_no_crash():
    assert reads(_log(_SERVED, _REPORT, [_WRAPPER]), family="sglang") == (False, None, "serving")


# near miss: an AssertionError the server's own code raised, a test driving an engine in its process, stays a crash
def test_an_assertion_raised_in_the_servers_code_under_a_test_is_still_a_crash():
    inner = [f'  File "{_PKG}/sglang/srt/managers/scheduler.py", line 1200, in event_loop_normal',
             "    assert batch.is_empty()"]
    text = _log(_SERVED, _test_traceback(inner, "AssertionError"), _REPORT)
    assert reads(text, family="sglang")[0] is True


# near miss: another exception through the test method is not a failed check
def test_a_runtime_error_through_a_test_method_is_still_a_crash():
    inner = [f'  File "{_PKG}/sglang/srt/entrypoints/engine.py", line 300, in generate', "    return ret"]
    text = _log(_SERVED, _test_traceback(inner, "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"),
                _REPORT)
    assert reads(text, family="sglang")[0] is True


# near miss: a server's traceback before the verdict is still read; only what follows the verdict is the wrapper's
def test_a_scheduler_crash_before_unittests_verdict_is_still_a_crash():
    crash = ["[2026-02-06 12:23:00 DP0 TP0 EP0] Scheduler hit an exception: Traceback (most recent call last):",
             f'  File "{_PKG}/sglang/srt/managers/scheduler.py", line 2680, in run_scheduler_process',
             "    scheduler.event_loop_normal()", "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"]
    assert reads(_log(_SERVED, crash, _REPORT), family="sglang")[0] is True


# near miss: a traceback after the verdict (a launcher's, on stderr, round 94's h94004) is still read
def test_a_traceback_after_unittests_verdict_is_still_read():
    late = ["Traceback (most recent call last):",
            f'  File "{_PKG}/sglang/test/test_utils.py", line 687, in popen_launch_server',
            '    raise TimeoutError("Server failed to start within the timeout period.")',
            "TimeoutError: Server failed to start within the timeout period."]
    assert reads(_log(["[2026-02-06 12:01:09] server_args=ServerArgs(model_path='m')"], _REPORT, late),
                 family="sglang")[0] is True


# --- the lines cited ---------------------------------------------------------------------------------------------

_CITED = [
    ("sglang", "0.5.6.post2", "sglang/test/test_utils.py", 1695, "def _callTestMethod(self, method):"),
    ("sglang", "0.5.6.post2", "sglang/test/test_utils.py", 1700,
     "lambda: super(CustomTestCase, self)._callTestMethod(method),"),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)


_STDLIB = [("case.py", 579, "if method() is not None:"), ("case.py", 703, "raise self.failureException(msg)"),
           ("runner.py", 228, 'self.stream.writeln("Ran %d test%s in %.3fs" %'),
           ("runner.py", 244, 'self.stream.write("FAILED")')]


@pytest.mark.parametrize(("path", "line", "text"), _STDLIB, ids=[f"{p}:{n}" for p, n, _ in _STDLIB])
def test_each_cited_unittest_line_is_cpythons(path, line, text):
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the lines cited are CPython 3.11's")
    import unittest
    source = Path(unittest.__file__).parent / path
    assert text in source.read_text().splitlines()[line - 1], (source, line)
