"""Held-out round 94 (issue 24): SGLang's test harness killing a server that never answered its probe is a crash at
launch, health_check.

Round 94 (h94001-h94010; seven files of users' log repositories, three SGLang issue threads) was measured once on
main at b1d7f9f (with the round's logs; staged again on main at 9c260ea as 94a30db): crashed 9/10, kind 9/10,
phase 10/10. docs/diagnosis.md, "Held-out round 94", tells the round.

- h94004, an Ascend NPU PD prefill node (TP16, DP attention) under SGLang's nightly test harness: every rank's "Init
  torch distributed begin.", Gloo's notice "[Gloo] Rank 8 is NOT connected to: [1]", then nothing for an hour, and
  the harness's "TimeoutError: Server failed to start within the timeout period." in its launch thread, read as a
  helper thread's death (not crashed). popen_launch_server polls /health_generate until its timeout, kills the
  server's process tree and raises it (0.5.6.post2 sglang/test/test_utils.py:683-684; 0.5.10 :817, :976): the server
  never became healthy, a crash at launch, health_check (crashes/kinds/warmup.py harness_start_timeout). The kind is
  disputed (labelled nccl): gloo prints its notice and raises nothing (facebookincubator/gloo cc44198
  gloo/transport/tcp/context.cc:241-259), and no rank logs again, so what the init waited on is not in the log.

Each positive test fails on 94a30db.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 94)


def test_round94_is_folded_into_work_with_one_dispute_and_no_miss_left():
    assert _IDS == [f"h940{n:02d}" for n in range(1, 11)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h94004"]
    assert REAL_MANIFEST["h94004"]["kind_disputed"] == ["nccl", "health_check"]
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


def test_the_rounds_miss_reads_as_settled():
    found = real("h94004")
    assert (found.crashed, found.kind, found.phase, found.signature) == (
        True, "health_check", "launch", "harness_start_timeout")


# --- h94004: the test harness's startup timeout ------------------------------------------------------------------

_SGL = "/usr/local/lib/python3.11/site-packages/sglang"
_START = [
    "[2026-01-04 02:23:49 DP0 TP0 EP0] Init torch distributed begin.",
    "[2026-01-04 02:23:49 DP0 TP1 EP1] Init torch distributed begin.",
]
_TIMEOUT = [
    "Traceback (most recent call last):",
    f'  File "{_SGL}/test/test_utils.py", line 684, in popen_launch_server',
    '    raise TimeoutError("Server failed to start within the timeout period.")',
    "TimeoutError: Server failed to start within the timeout period.",
]
# the test's own launch thread wrapping it, as threading.excepthook prints it
_THREAD = [
    "Exception in thread Thread-2 (launch_node):",
    *_TIMEOUT,
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
    "    self.run()",
    '  File "/usr/lib/python3.11/threading.py", line 982, in run',
    "    self._target(*self._args, **self._kwargs)",
    '  File "/data/sglang/test/nightly/disaggregation_utils.py", line 296, in launch_node',
    '    raise RuntimeError(f"Failed to start {role} node on {node_ip}: {e}")',
    "RuntimeError: Failed to start prefill node on 10.0.0.7: Server failed to start within the timeout period.",
]
# 0.5.8+: the poll returns the text and popen_launch_server raises it after killing the server
_RETURNED = [
    "Traceback (most recent call last):",
    f'  File "{_SGL}/test/test_utils.py", line 976, in popen_launch_server',
    "    raise TimeoutError(error_msg)",
    "TimeoutError: Server failed to start within the timeout period",
]


@pytest.mark.parametrize("harness", [_TIMEOUT, _THREAD, _RETURNED], ids=["raised", "launch-thread", "0.5.10"])
def test_the_harness_killing_a_server_that_never_answered_is_health_check_at_launch(harness):
    assert reads("\n".join(_START + harness) + "\n", family="sglang") == (True, "health_check", "launch")


# near miss: an error of the server's own above the harness's timeout decides
def test_a_servers_own_error_above_the_harness_timeout_decides():
    text = "\n".join(_START + [
        "[rank1]:[E104 02:24:49.707542570 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
        "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
        "[2026-01-04 02:24:49 DP0 TP1 EP1] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{_SGL}/srt/distributed/parallel_state.py", line 1300, in init_distributed_environment',
        "    torch.distributed.init_process_group(",
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
    ] + _THREAD) + "\n"
    assert reads(text, family="sglang")[:2] == (True, "nccl")


# near miss: gloo's connectivity notice alone raises nothing (lazy init connects no pair at the mesh): no crash
def test_gloos_connectivity_notice_alone_is_no_crash():
    text = "\n".join(_START + [
        "[Gloo] Rank 0 is connected to 0 peer ranks. Expected number of connected peer ranks is : 3",
        "[Gloo] Rank 0 is NOT connected to: [1, 2, 3]",
    ]) + "\n"
    assert reads(text, family="sglang")[0] is False


# near miss: another thread's exception that names no harness timeout is still a helper thread's death
def test_a_helper_threads_other_exception_is_still_no_crash():
    text = "\n".join(_THREAD).replace("Server failed to start within the timeout period", "prefetch queue closed")
    assert reads(text + "\n", family="sglang")[0] is False


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.6.post2", "sglang/test/test_utils.py", 683, "kill_process_tree(process.pid)"),
    ("sglang", "0.5.6.post2", "sglang/test/test_utils.py", 684,
     'raise TimeoutError("Server failed to start within the timeout period.")'),
    ("sglang", "0.5.10", "sglang/test/test_utils.py", 817,
     'return False, "Server failed to start within the timeout period"'),
    ("sglang", "0.5.10", "sglang/test/test_utils.py", 970, "kill_process_tree(process.pid)"),
    ("sglang", "0.5.10", "sglang/test/test_utils.py", 976, "raise TimeoutError(error_msg)"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
