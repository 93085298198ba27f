"""Held-out round 101 (issue 24): sgl-kernel-npu's DeepEP refusing a prefill dispatch larger than the capacity its
two environment variables set, on a two-node Ascend NPU CI job.

Round 101 (h101001, h101005, h101007, h101008, h101010, h101011, h101012; users' own log repositories and
sgl-project/sglang's issues) was measured once on main at 66b14a51: crashed 7/7, kind 6/7, phase 7/7.
docs/diagnosis.md, "Held-out round 101", tells the round.

- h101011 (SGLang on Ascend, a k8s CI run of a performance test: Qwen3-Coder-480B w8a8, TP32 DP32 with DP
  attention, `--moe-a2a-backend deepep`, DEEPEP_NORMAL_LONG_SEQ_ROUND=6 and
  DEEPEP_NORMAL_LONG_SEQ_PER_ROUND_TOKENS=512): the server served, then a 3584-token prefill on DP2 reached
  sgl-kernel-npu's get_dispatch_layout, whose check "topk_idx.size(0) <= round * per_round_tokens" (6 * 512 = 3072)
  threw (sgl-kernel-npu e368d3ce csrc/deepep/deep_ep.cpp:101, exception.hpp:16-17, :28-34; buffer.py:187). The
  kubectl "error:" about a missing yaml at the top is the harness's. Read unknown; fixed: device_crashes/npu_deepep.py
  NPU_DEEPEP_CAPACITY (kernel_config_unsupported, as labelled).
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real, said

_IDS = folded_round(REAL_MANIFEST, 101)


def test_round101_is_folded_into_work_with_one_fix():
    assert _IDS == ["h101001", "h101005", "h101007", "h101008", "h101010", "h101011", "h101012"]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


# fails on 66b14a51's code, which read (True, "unknown", "serving")
def test_h101011_npu_deepeps_capacity_refusal_is_kernel_config_unsupported():
    found = real("h101011")
    assert (found.crashed, found.kind, found.phase) == (True, "kernel_config_unsupported", "serving")
    assert found.signature == "npu_deepep_capacity"
    assert "DEEPEP_NORMAL_LONG_SEQ_ROUND" in found.suggestion


# --- sgl-kernel-npu's capacity check, and what it must not read --------------------------------------------------

_SERVED = ["[2025-12-27 06:05:21] The server is fired up and ready to roll!",
           "[2025-12-27 06:07:42 DP2 TP2 EP2] Prefill batch, #new-seq: 1, #new-token: 3584, #cached-token: 0, "
           "token usage: 0.00, #running-req: 0, #queue-req: 0, "]
_PKG = "/usr/local/python3.11.13/lib/python3.11/site-packages"
_FAILED = "RuntimeError: Failed: Assertion error /__w/sgl-kernel-npu/sgl-kernel-npu/csrc/deepep/deep_ep.cpp:"


def _crash(message: str) -> str:
    lines = [*_SERVED,
             "[2025-12-27 06:07:45 DP2 TP2 EP2] Scheduler hit an exception: Traceback (most recent call last):",
             f'  File "{_PKG}/sglang/srt/managers/scheduler.py", line 2866, in run_scheduler_process',
             "    scheduler.event_loop_overlap()",
             f'  File "{_PKG}/sglang/srt/layers/moe/token_dispatcher/deepep.py", line 440, in _dispatch_core',
             "    ) = buffer.get_dispatch_layout(",
             f'  File "{_PKG}/deep_ep/buffer.py", line 187, in get_dispatch_layout',
             "    ) = self.runtime.get_dispatch_layout(", message]
    return "\n".join(lines) + "\n"


def test_the_capacity_check_as_e368d3ce_spells_it():
    text = _crash(_FAILED + "101 error message or error code is 'topk_idx.size(0) <= round * per_round_tokens'")
    assert reads(text, family="sglang") == (True, "kernel_config_unsupported", "serving")


def test_the_capacity_check_as_later_releases_spell_it_with_its_numbers():
    text = _crash(_FAILED + "124 error message or error code is '(num_tokens <= configured_capacity) num_tokens "
                  "(3584) must not exceed the configured capacity (3072), calculated as round (6) * "
                  "per_round_tokens (512).")
    assert reads(text, family="sglang") == (True, "kernel_config_unsupported", "serving")


# near miss: the Buffer's other asserts (a tensor's shape here) are not the capacity refusal
def test_another_deepep_npu_assert_is_not_the_capacity_refusal():
    text = _crash(_FAILED + "98 error message or error code is 'topk_idx.dim() == 2'")
    assert said(text, family="sglang")[2] != "npu_deepep_capacity"


# near miss: the range check of per_round_tokens itself (a later release's) is a setting refused, not a dispatch
def test_the_per_round_range_check_is_not_the_capacity_refusal():
    text = _crash(_FAILED + "118 error message or error code is '(per_round_tokens >= static_cast<int>("
                  "MIN_TOKENS_PER_ROUND) && per_round_tokens <= static_cast<int>(MAX_TOKENS_PER_ROUND)) "
                  "per_round_tokens (16) must be in the range [32, 8192].")
    assert said(text, family="sglang")[2] != "npu_deepep_capacity"


# near miss: the condition quoted in prose (an issue's text) without DeepEP's exception is no crash of this kind
def test_the_condition_quoted_in_prose_is_not_read():
    text = "\n".join([*_SERVED, "note: deep_ep asserts topk_idx.size(0) <= round * per_round_tokens on NPU"]) + "\n"
    assert reads(text, family="sglang")[1] != "kernel_config_unsupported"


# --- the lines cited (sgl-kernel-npu has no wheel here: its lines are cited from the repository, e368d3ce) ----------

_CITED = [("sglang", "0.5.7", "sglang/srt/layers/moe/token_dispatcher/deepep.py", 440,
           ") = buffer.get_dispatch_layout(")]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
