"""vLLM held-out round 105 (8 logs, w10501-w10508), folded into work after its misses were read.

Measured once on main at 74edfafa (staged as f79881a6 beside round 104): crashed 8/8, kind 4/8, phase 4/4. Four
misses, read against the source of the releases the logs show (0.23-0.31 development builds: the nearest wheels):

- w10501 (kind, fixed): ``--numa-bind`` under Slurm, "NUMA binding was requested, but vLLM could not detect the
  GPU-to-NUMA topology automatically. Pass --numa-bind-nodes explicitly or disable --numa-bind." (0.30.0
  vllm/utils/numa_utils.py:254; no detection where the CPU affinity is already constrained, :59-99): a flag the host
  cannot honour as given, bad_argument (vllm_crashes/parallel_sizes.py ``NUMA_NODES_UNDETECTED``).
- w10504 (kind, fixed): the MoE oracle raising for the backend named with ``--moe-backend``, "Mxfp4 MoE backend
  'B12X_MXFP4' does not support the deployment configuration since kernel does not support batch invariance."
  (0.30.0 fused_moe/oracle/mxfp4.py:431-437, :455; modular_kernel.py:589-590): two settings of the user's that do not
  go together, bad_argument (vllm_crashes/moe_schemes.py ``MOE_BACKEND_FEATURE_REFUSED``).
- w10506 (kind, fixed): torch's NCCL heartbeat monitor ending the rank after a peer's collective timeout,
  "Terminating the process after attempting to dump debug info, due to collective timeout or exception." (torch
  c10d/ProcessGroupNCCL.cpp HeartbeatMonitor::runLoop), after the IB ports' "local catastrophic error": nccl
  (crashes/kinds/runtime.py ``NCCL``' lines).
- Left: w10505 (kind: a harness's digest whose only fatal text is "Error: 'model.layers.43.mtp_block.main_norm.weight'";
  the DeepGEMM "undefined symbol" ddlab reads is no failure in vLLM, which takes a deep_gemm that fails to import
  for absent, 0.30.0 utils/import_utils.py:415-432, utils/deep_gemm.py:177-207) (known_misses.json).

Each positive test below failed at 74edfafa (before the fixes). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said)

_ROUND = [f"w105{n:02d}" for n in range(1, 9)]


def test_the_round_is_folded_with_its_eight_logs():
    assert folded_round(VLLM_MANIFEST, 105) == _ROUND


def test_nothing_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled_but_one_left():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {"w10505": ["kind"]}


# --- w10501: --numa-bind on a host vLLM cannot map -----------------------------------------------------------------

def test_the_undetected_numa_map_is_the_flags_refusal():
    assert said(read_log("w10501.log")) == (True, "bad_argument", "vllm_numa_nodes_undetected")
    assert reads(read_log("w10501.log"))[2] == "launch"
    assert "--numa-bind-nodes" in diagnose(read_log("w10501.log")).suggestion


def test_another_numa_error_is_not_read_so():
    text = read_log("w10501.log").replace("could not detect the GPU-to-NUMA", "found no GPU-to-NUMA")
    assert said(text)[2] != "vllm_numa_nodes_undetected"


# --- w10504: the named MoE backend refusing batch invariance --------------------------------------------------------

def test_the_moe_backends_feature_refusal_is_the_flags():
    assert said(read_log("w10504.log")) == (True, "bad_argument", "vllm_moe_backend_feature_refused")
    assert reads(read_log("w10504.log"))[2] == "load_weights"


def test_a_lora_refusal_is_read_the_same():
    text = read_log("w10504.log").replace("support batch invariance.", "support LoRA.")
    assert said(text)[1:] == ("bad_argument", "vllm_moe_backend_feature_refused")


def test_a_refusal_for_the_device_is_not_read_so():
    text = read_log("w10504.log").replace("support batch invariance.", "support current device NVIDIA GB10.")
    assert said(text)[2] != "vllm_moe_backend_feature_refused"


# --- w10506: torch's heartbeat monitor ending the rank after a collective timeout -----------------------------------

def test_the_heartbeat_monitors_exit_after_a_timeout_is_nccl():
    assert said(read_log("w10506.log")) == (True, "nccl", "vllm_nccl")
    assert reads(read_log("w10506.log"))[2] == "serving"


def test_the_watchdogs_own_hang_is_not_read_so():
    text = read_log("w10506.log").replace("due to collective timeout or exception.",
                                          "due to ProcessGroupNCCL watchdog hang.")
    assert said(text)[1] != "nccl"


# --- w10505: left --------------------------------------------------------------------------------------------------

def test_the_harness_digest_still_reads_the_deep_gemm_line():
    assert said(read_log("w10505.log"))[:2] == (True, "dependency_mismatch")


# --- the lines the rules and the left miss cite ---------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.30.0", "vllm/utils/numa_utils.py", '"NUMA binding was requested, but vLLM could not detect the "'),
    ("0.30.0", "vllm/utils/numa_utils.py", '"CPU affinity is already constrained for this process. "'),
    ("0.23.0", "vllm/utils/numa_utils.py", '"GPU-to-NUMA topology automatically. Pass --numa-bind-nodes "'),
    ("0.34.0", "vllm/utils/numa_utils.py", '"GPU-to-NUMA topology automatically. Pass --numa-bind-nodes "'),
    ("0.30.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py",
     "raise ValueError(_make_log_unsupported(backend, reason))"),
    ("0.30.0", "vllm/model_executor/layers/fused_moe/modular_kernel.py",
     'return False, _make_reason("batch invariance")'),
    ("0.30.0", "vllm/model_executor/layers/fused_moe/modular_kernel.py", 'return False, _make_reason("LoRA")'),
    ("0.30.0", "vllm/utils/deep_gemm.py", 'logger.warning_once("Failed to import vendored deep_gemm: %s", e)'),
    ("0.30.0", "vllm/utils/import_utils.py",
     'return _has_module("deep_gemm") or _has_module("vllm.third_party.deep_gemm")'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
