"""Logs as people paste them: other collectors' prefixes, cut tracebacks, ranks, C++ lines.

tests/fixtures/logs/pastes/ holds invented logs in SGLang's real formats, each with one
quirk (index.json: the quirk, and crashed / kind / phase / signature / how the cause
starts). The unit tests below read single lines the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.logtext import split_lines
from ddlab.diagnosis.tracebacks import find_chains

HERE = Path(__file__).parent.parent / "fixtures" / "logs" / "pastes"
INDEX: dict[str, dict] = json.loads((HERE / "index.json").read_text())


def test_every_paste_has_an_entry():
    assert {p.name for p in HERE.glob("*.log")} == set(INDEX)


@pytest.mark.parametrize("name", sorted(INDEX), ids=sorted(INDEX))
def test_pasted_log(name):
    want = INDEX[name]
    got = diagnose((HERE / name).read_bytes().decode("utf-8"))
    assert (got.crashed, got.kind, got.phase) == (want["crashed"], want["kind"], want["phase"]), got.render()
    if want["signature"]:
        assert got.signature == want["signature"], got.render()
    if want["cause_starts"]:
        assert got.cause.startswith(want["cause_starts"]), got.cause


BEGIN = "Load weight begin."
PREFIXED = {  # id: (line, msg, rank)
    "compose": (f"sglang-1  | [2026-12-01 08:00:00 TP1] {BEGIN}", BEGIN, "TP1"),
    "kubernetes-cri": (f"2026-12-01T08:00:00.123456789Z stdout F [2026-12-01 08:00:00] {BEGIN}", BEGIN, None),
    "kubectl-prefix": (f"[pod/sglang-0/server] [2026-12-01 08:00:00 TP0] {BEGIN}", BEGIN, "TP0"),
    "cloud-logging": (f"ERROR 2026-12-01T08:00:00.209237575Z [2026-12-01 08:00:00] {BEGIN}", BEGIN, None),
    "collector-tabs": (f"1764576000000\t2026-12-01T08:00:00Z\t[2026-12-01 08:00:00] {BEGIN}", BEGIN, None),
    "ci-rank0": ('2026-12-01T08:00:00.6371779Z [rank0]:   File "x.py", line 1, in f',
                 '  File "x.py", line 1, in f', None),
    "ray-actor": (f"(SGLangEngine pid=952, ip=10.1.2.3) [2026-12-01 08:00:00 TP0] {BEGIN}", BEGIN, "TP0"),
    # SkyPilot names each node's Ray task "workerN, rank=R," (skypilot 0.8.0 cloud_vm_ray_backend.py:646; h43004)
    # or a one-node job's "NAME," (:638); a parenthesis with no pid stays the process's own text
    "skypilot-worker": (f"(worker1, rank=1, pid=6813, ip=10.202.0.41) [2026-12-01 08:00:00 DP8 TP8] {BEGIN}",
                        BEGIN, "DP8 TP8"),
    "skypilot-task": (f"(sglang-serve, pid=4021) [2026-12-01 08:00:00 TP0] {BEGIN}", BEGIN, "TP0"),
    "no-pid-parenthesis": (f"(worker1, rank=1) [2026-12-01 08:00:00 TP0] {BEGIN}",
                           f"(worker1, rank=1) [2026-12-01 08:00:00 TP0] {BEGIN}", None),
    "markdown-quote": (f"> [2026-12-01 08:00:00 DP13 TP13] {BEGIN}", BEGIN, "DP13 TP13"),
    "attn-cp-tag": (f"[2026-12-01 08:00:00 ATTN_CP1 TP1] {BEGIN}", BEGIN, "ATTN_CP1 TP1"),
    "all-tags": (f"[2026-12-01 08:00:00 DP0 PP0 MOE_DP0 TP0 EP0] {BEGIN}", BEGIN, "DP0 PP0 MOE_DP0 TP0 EP0"),
    "lost-bracket": ("2026-12-01 08:00:00 TP0] Decode batch.", "Decode batch.", "TP0"),
    "ansi-cr": (f"\x1b[33m[2026-12-01 08:00:00]\x1b[0m {BEGIN}\r", BEGIN, None),
}


@pytest.mark.parametrize("line, msg, rank", PREFIXED.values(), ids=PREFIXED.keys())
def test_prefixes_are_removed_and_the_stamp_read(line, msg, rank):
    (read,) = split_lines(line)
    assert (read.msg, read.rank) == (msg, rank)


def test_a_traceback_without_its_header_is_still_a_traceback():
    text = ('  File "/x/sglang/srt/managers/scheduler.py", line 10, in run_batch\n'
            "    result = self.model_worker.forward_batch_generation(batch)\n"
            "RuntimeError: boom\n")
    (chain,) = find_chains(split_lines(text))
    assert [f.func for f in chain.outermost.frames] == ["run_batch"]
    assert chain.outermost.type == "RuntimeError"


def test_a_traceback_cut_before_its_exception_is_kept_as_cut():
    text = ("[2026-12-01 08:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/x/sglang/srt/managers/scheduler.py", line 10, in event_loop_normal\n'
            "    result = self.run_batch(batch)\n")
    (chain,) = find_chains(split_lines(text))
    assert chain.cut and not chain.outermost.type
    result = diagnose(text)
    assert (result.crashed, result.kind, result.phase) == (True, "unknown", "serving")
    assert "exception line is missing" in result.cause and "journalctl" in result.suggestion


def test_faulthandler_frames_are_no_python_traceback():
    text = ("Current thread 0x00007f01 (most recent call first):\n"
            '  File "/x/linear.py", line 12 in weight_loader\n')
    assert find_chains(split_lines(text)) == []
