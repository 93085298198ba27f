"""Held-out round 119 (issue 24): folded into ``work``; its one miss, a HIP kernel the runtime would not dispatch
because the platform has no PCIe atomics (hostcall unsupported), was the label's, disputed, and read by a new rule.

Round 119 (h119001-h119003; three log files committed to three users' repositories, each pinned to a commit) was
measured once on main at 77b73ff3: crashed 3/3, kind 2/3, phase 3/3. docs/diagnosis.md, "Held-out round 119", tells
the round.

- h119002 (kevin-mii/sglang, an SGLang fork on MI355X, MiniMax-M3 with an EAGLE3 draft at TP4, AMD_LOG_LEVEL=1):
  after "Capture target prefill CUDA graph begin" on every rank, the HIP runtime's "Pcie atomics not enabled,
  hostcall not supported", "AQL dispatch failed!", hipModuleLaunchKernel's hipErrorIllegalState and each rank's bare
  "RuntimeError: HIP error". The runtime gives up a kernel's dispatch when its code object asks for a hostcall buffer
  and the device has no PCIe atomics (ROCm clr rocm-6.2.2 rocclr/device/rocm/rocvirtual.cpp:3064-3075; "AQL
  dispatch failed!" :3411, hipErrorIllegalState hipamd/src/hip_module.cpp:420-422). That is a dispatch: a launch on
  a capturing stream is recorded, never dispatched (STREAM_CAPTURE, hipamd/src/hip_internal.hpp:231-237,
  hip_module.cpp:441), so the kernel ran eagerly and the capture is only where. The platform cannot run the kernel:
  kind [cuda_graph_capture, unsupported_gpu], disputed; read by device_crashes/hostcall.py hip_hostcall_unsupported,
  whose advice names the platform (no PCIe atomics: a VF or passthrough VM, a root port or BIOS without AtomicOps).
- h119001 (a LoRA server's health-check warning cleared while it serves) and h119003 (an Ascend start refusing
  TASK_QUEUE_ENABLE=2 in NPU graph capture) read as labelled at the measurement.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, alike_cases, assert_reads_alike_either_way, assert_reads_as_labelled,
                      disputed, folded_round, reads, real, said, with_carriage_returns)

_IDS = folded_round(REAL_MANIFEST, 119)

# the signature each undisputed log is read by
_SIGNATURES = {
    "h119001": None,  # 'Health check failed' cleared by the batches and 200s after it: healthy, serving
    "h119003": "capture_failed",  # 'Capture cuda graph failed: Do not support TASK_QUEUE_ENABLE = 2 during NPU ...'
}


def test_round119_is_folded_into_work_with_one_dispute_and_none_left():
    assert _IDS == ["h119001", "h119002", "h119003"]
    assert disputed(REAL_MANIFEST, _IDS) == ["h119002"]
    assert REAL_MANIFEST["h119002"]["kind_disputed"] == ["cuda_graph_capture", "unsupported_gpu"]
    assert REAL_MANIFEST["h119002"]["second_look"]
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 1, "cuda_graph_capture": 2}
    assert all(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round119_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_round119_logs_with_carriage_returns_are_h119001():
    assert with_carriage_returns(_IDS) == ["h119001"]


@pytest.mark.parametrize("log_id", alike_cases(_IDS))
def test_round119_logs_read_the_same_as_their_bytes_decode(log_id):
    assert_reads_alike_either_way(log_id)


def test_the_disputed_reads_as_its_second_look():
    found = real("h119002")
    assert (found.crashed, found.kind, found.phase, found.signature) == (
        True, "unsupported_gpu", "graph_capture", "hip_hostcall_unsupported")
    assert "hostcall not supported" in found.cause
    assert "PCIe atomics" in found.suggestion


# --- h119002: hostcall on a platform without PCIe atomics -----------------------------------------------------------

_CAPTURE = ("[2026-09-24 22:10:18 TP0] Load weight end. elapsed=0.25 s, type=LlamaForCausalLMEagle3, avail "
            "mem=218.54 GB, mem usage=1.65 GB.\n"
            "[2026-09-24 22:10:18 TP0] Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[4, 8, "
            "16], avail mem=218.00 GB\n")
_LAUNCH = ("'hipModuleLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ, smem, stream, params, "
           "extra)' failed with 'hipErrorIllegalState'\n"
           "[2026-09-24 22:10:26 TP0] RuntimeError: HIP error\n"
           "RuntimeError: HIP error\n")


def _runtime(first: str) -> str:
    return (f":1:rocvirtual.cpp           :3650: 5626911410317 us:  {first}\n"
            ":1:rocvirtual.cpp           :3990: 5626911410340 us:  AQL dispatch failed!\n")


# h119002's form; the runtime's thread-stamped form (AMD_LOG_LEVEL's pid and tid), in serving
@pytest.mark.parametrize("text, phase", [
    (_CAPTURE + _runtime("Pcie atomics not enabled, hostcall not supported") + _LAUNCH, "graph_capture"),
    ("[2026-09-24 22:12:01 TP0] Prefill batch, #new-seq: 1, #new-token: 12, #cached-token: 0, full token usage: "
     "0.00, #running-req: 0, #queue-req: 0\n"
     ":1:rocvirtual.cpp           :2902: 1550313166 us: 7740 : [tid:0x7f5681dfb6c0] Pcie atomics not enabled, "
     "hostcall not supported\n"
     ":1:rocvirtual.cpp           :3235: 1550313176 us: 7740 : [tid:0x7f5681dfb6c0] AQL dispatch failed!\n"
     + _LAUNCH, "serving"),
], ids=["h119002", "tid-serving"])
def test_hostcall_without_pcie_atomics_is_unsupported_gpu(text, phase):
    assert said(text, family="sglang") == (True, "unsupported_gpu", "hip_hostcall_unsupported")
    assert reads(text, family="sglang")[2] == phase


# near misses: the runtime's other hostcall failure (a buffer it could not make, rocvirtual.cpp:3070, not the
# platform), a failed dispatch with no reason given, a capturing stream's own error (the capture's)
@pytest.mark.parametrize("text", [
    _CAPTURE + _runtime("Kernel expects a hostcall buffer, but none found") + _LAUNCH,
    _CAPTURE + ":1:rocvirtual.cpp           :3990: 5626911410340 us:  AQL dispatch failed!\n" + _LAUNCH,
    _CAPTURE + "RuntimeError: HIP error: operation not permitted when stream is capturing\n",
], ids=["no-buffer", "no-reason", "capturing"])
def test_other_hip_launch_failures_are_not_the_platform(text):
    assert said(text, family="sglang")[2] != "hip_hostcall_unsupported"
    assert reads(text, family="sglang")[1] != "unsupported_gpu"
