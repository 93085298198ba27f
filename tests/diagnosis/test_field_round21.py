"""Held-out round 21 (issue 24): folded into ``work``, its misses fixed by general rules read from the source.

Round 21 (h21001-h21012) was measured once on main at 64f1195 with the logs commit 4f4ba8a (37e9073, with
round 20's fixes, reads them identically: crashed 12/12, kind 7/12, phase 7/7); three logs were then dropped
for text that is not verbatim inside machine lines (h21008, h21011, h21012: the manifest's ``dropped``), and
the nine kept folded into ``work``; docs/diagnosis.md, "Held-out round 21", explains the misses, all four
ddlab's. A rule's test reads the corpus log (work split since the fold), a text written from the same
source texts, and a near miss that must not read the same way; the positive tests fail on 37e9073 (the
near misses hold on both). A text cited from a wheel is checked there where the wheel is unpacked
(skipped elsewhere).
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import (REAL, REAL_MANIFEST, assert_in_library_wheel, assert_in_sglang_wheel, assert_reads_as_labelled,
                      real)

# --- h21004: SGLang 0.1.x's own lines among the vLLM-stamped lines of the weights it loads with vLLM's code ---
# "Rank N: load weight end." (0.1.14 srt/managers/router/model_runner.py:334), "Rank N: max_total_num_token=...,
# " (model_rpc.py:108-113); the "INFO 03-27 19:02:43 weight_utils.py:163]" lines are vLLM's logger, imported

_VLLM_WEIGHTS = "INFO 03-27 19:02:43 weight_utils.py:163] Using model weights format ['*.bin']\n"
_RANKS = ("Rank 0: load weight end.\nRank 1: load weight end.\n"
          "Rank 0: max_total_num_token=52656, max_prefill_num_token=8776, context_len=4096, \n")


def test_sglang_01_model_runner_lines_are_sglang():
    assert detect_family(_VLLM_WEIGHTS * 4 + _RANKS) == "sglang"


def test_a_rank_line_of_another_kind_is_not_sglangs():
    # vLLM's stamped lines with a rank line SGLang 0.1.x does not write stay vLLM's
    assert detect_family(_VLLM_WEIGHTS * 4 + "Rank 0: loading weights\n") == "vllm"
    # the words inside a sentence, not at a line's start
    assert detect_family(_VLLM_WEIGHTS * 4 + "see: Rank 0: load weight end.\n") == "vllm"


# --- the fold ----------------------------------------------------------------------------------------------

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 21}


def test_round21_is_folded_into_work_without_its_three_dropped_logs():
    kept = [f"h21{n:03d}" for n in (1, 2, 3, 4, 5, 6, 7, 9, 10)]
    assert sorted(_ROUND) == kept and all(log["split"] == "work" for log in _ROUND.values())
    assert Counter(log["kind"] for log in _ROUND.values())["unknown"] == 3
    assert sum(not log["crashed"] for log in _ROUND.values()) == 1
    assert sum(log["phase_in_log"] for log in _ROUND.values()) == 5
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())
    dropped = json.loads((REAL / "manifest.json").read_text())["dropped"]
    for log_id in ("h21008", "h21011", "h21012"):
        assert "round 21" in dropped[log_id] and not (REAL / f"{log_id}.log").exists()


# the logs main's code read as labelled (None: unknown or healthy)
@pytest.mark.parametrize(("log_id", "signature"), [
    ("h21003", None),            # dynamo's Unsupported (a logger call) chained under the model runner's init
    ("h21004", None),            # healthy: a 0.1.x TP=2 startup (its family: above)
    ("h21005", None),            # split_with_sizes on sizes that do not add up, cut at forward_batch_generation
    ("h21007", None),            # torch.empty in init_overlap returning cudaErrorInvalidValue
    ("h21009", "native_crash"),  # the launcher's side only: the scheduler died of SIGABRT (exit code -6)
])
def test_round21_logs_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h21001: torch_npu refusing the update of a captured NPU graph before its replay --------------------------
# torch_npu 2.5.1 include/torch_npu/csrc/core/npu/NPUGraph.h:23-24 (graph_task_update_begin / _end),
# interface/AclInterface.h:206, :208 (AclmdlRICaptureTaskUpdateBegin / End), NPUException.h:170-171
# (NPU_CHECK_ERROR: "NPU function error: <call>, error code is N"); SGLang 0.5.23 updates the graph for every
# replay (hardware_backend/npu/graph_runner/npu_cudagraph_backend.py:156-189, npu_graph_runner.py:199-205)

_NPU_GRAPHS = "/usr/local/python3.11.13/lib/python3.11/site-packages/torch_npu/npu/graphs.py"
_UPDATE = ("Traceback (most recent call last):\n"
           f'  File "{_NPU_GRAPHS}", line 75, in graph_task_update_begin\n'
           "    _graph_task_update_begin(stream, handle)\n"
           "RuntimeError: graph_task_update_begin:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:40 NPU function "
           "error: c10_npu::acl::AclmdlRICaptureTaskUpdateBegin(stream, handle), error code is 507899\n")


def test_a_refused_update_of_a_captured_npu_graph_is_a_replay_failure():
    assert_reads_as_labelled("h21001", "npu_graph_update_failed")
    found = real("h21001")
    assert found.phase == "serving" and "captured NPU graph" in found.suggestion
    other = diagnose(_UPDATE)
    assert (other.crashed, other.kind, other.phase, other.signature) == (True, "cuda_graph_replay", "serving",
                                                                         "npu_graph_update_failed")


def test_other_acl_calls_failing_are_not_a_graph_update():
    # the same check on an op's launch (an aclnn call), the same runtime code: no graph named
    op = diagnose(_UPDATE.replace("c10_npu::acl::AclmdlRICaptureTaskUpdateBegin(stream, handle)", "call aclnnArange")
                  .replace("graph_task_update_begin", "arange_out_op_api"))
    assert op.signature != "npu_graph_update_failed" and op.kind != "cuda_graph_replay"
    # the capture's own task group (AclmdlRICaptureTaskGrpBegin, AclInterface.h:202) refused: not a replay
    capture = diagnose(_UPDATE.replace("AclmdlRICaptureTaskUpdateBegin", "AclmdlRICaptureTaskGrpBegin"))
    assert capture.signature != "npu_graph_update_failed"


def test_torch_npu_and_sglang_say_where_the_update_is():
    include = "torch_npu/include/torch_npu/csrc/core/npu"
    assert_in_library_wheel("torch_npu", "2.5.1", f"{include}/interface/AclInterface.h",
                            "aclError AclmdlRICaptureTaskUpdateEnd(aclrtStream stream);\n")
    assert_in_library_wheel("torch_npu", "2.5.1", f"{include}/NPUGraph.h",
                            "TORCH_NPU_API void graph_task_update_end(c10_npu::NPUStream stream);\n")
    assert_in_sglang_wheel("0.5.23", "sglang/srt/hardware_backend/npu/graph_runner/npu_cudagraph_backend.py",
                           "        NPUGraph.update must complete before replay can consume the updated\n")


# --- h21002: HiCache's copy of the speculative draft model's KV pool -----------------------------------------
# the draft tier exists only with a draft worker and the hierarchical cache (0.5.16
# mem_cache/kv_cache_builder.py:73-127, managers/cache_controller.py:848-852); each backup copies it too
# (hybrid_cache/hybrid_cache_controller.py:426-427, managers/cache_controller.py:725-726)

_CONTROLLER = "/sgl-workspace/sglang/python/sglang/srt/managers/cache_controller.py"
_BACKUP = ("Traceback (most recent call last):\n"
           f'  File "{_CONTROLLER}", line 726, in start_writing\n'
           "    self.mem_pool_host_draft.backup_from_device_all_layer(\n"
           '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/memory_pool_host.py", line 900, in '
           "backup_from_device_all_layer\n"
           "    transfer_kv_all_layer_mla(\n"
           "IndexError: index 4096 is out of bounds for dimension 0 with size 4096\n")


def test_a_crash_in_hicaches_draft_tier_is_speculative_decoding_with_the_hierarchical_cache():
    assert_reads_as_labelled("h21002", "spec_feature_conflict")
    assert "hierarchical cache" in real("h21002").suggestion
    other = diagnose(_BACKUP.replace("mem_pool_host_draft.backup_from_device_all_layer",
                                     "mem_pool_host_draft.load_to_device_per_layer"))
    assert (other.crashed, other.kind, other.signature) == (True, "spec_feature_conflict", "spec_feature_conflict")


def test_the_target_models_own_backup_is_not_the_speculative_path():
    # the same backup of the target model's pool (mem_pool_host): nothing speculative in the frames
    target = diagnose(_BACKUP.replace("mem_pool_host_draft", "mem_pool_host"))
    assert target.kind != "spec_feature_conflict"


# --- h21006: SGLang's JIT kernel refusing a tensor through its TensorMatcher ---------------------------------
# 0.5.23 sglang/kernels/jit/include/sgl_kernel/tensor.h:541-550 (verify: "Tensor match failed for ... at FILE:LINE
# \n- Root cause: ..."), :231 ("Size mismatch for NAME: expected N but got M"); tvm-ffi raises it as InternalError

_MATCH = ("  File \"python/tvm_ffi/cython/function.pxi\", line 929, in tvm_ffi.core.Function.__call__\n"
          "tvm.error.InternalError: Tensor match failed for Tensor<8, 576>[strides=<576, 1>, dtype=bfloat16, "
          "device=cuda:0] at /sgl-workspace/sglang/python/sglang/jit_kernel/csrc/elementwise/rope.cuh:90\n"
          "- Root cause: Size mismatch for shape#1('head_dim'): expected 512 but got 576\n")


def test_a_jit_kernels_tensor_match_failure_is_a_kernel_check():
    assert_reads_as_labelled("h21006", "kernel_check_failed")
    assert "Size mismatch for shape#0('batch_size'): expected 1015 but got 1024" in real("h21006").suggestion
    other = diagnose(_MATCH)
    assert (other.crashed, other.kind, other.signature) == (True, "kernel_config_unsupported", "kernel_check_failed")


def test_a_size_mismatch_outside_the_kernels_check_is_not_one():
    # torch's own size error (a RuntimeError, no tvm-ffi InternalError) is not a kernel's check
    torch_error = diagnose("RuntimeError: The size of tensor a (1015) must match the size of tensor b (1024) at "
                           "non-singleton dimension 0\n")
    assert torch_error.signature != "kernel_check_failed"
    # the words in a person's sentence
    prose = diagnose("the kernel says Tensor match failed for Tensor<1024> somewhere\n")
    assert prose.signature != "kernel_check_failed"


def test_sglangs_tensor_matcher_says_it():
    assert_in_sglang_wheel("0.5.23", "sglang/kernels/jit/include/sgl_kernel/tensor.h",
                           '      oss << "Tensor match failed for ";\n')


# --- h21010: aiter has no entry for this GPU's gfx architecture ----------------------------------------------
# ROCm/aiter 8248e0cb70 aiter/jit/utils/chip_info.py:63-67, :75-79 (KeyError(f"Unknown GPU architecture: {gfx}.
# Supported architectures: {list(gfx_mapping.keys())}")); the rocminfo lookup's wrapped in RuntimeError (:70-71)

_SUPPORTED = "['native', 'gfx90a', 'gfx908', 'gfx940', 'gfx941', 'gfx942', 'gfx945', 'gfx1100', 'gfx950']"


def test_aiter_refusing_the_gpus_architecture_is_unsupported_gpu():
    assert_reads_as_labelled("h21010", "aiter_arch_unsupported")
    wrapped = diagnose("RuntimeError: Get GPU arch from rocminfo failed \"Unknown GPU architecture: gfx1201. "
                       f"Supported architectures: {_SUPPORTED}\"\n")
    assert (wrapped.crashed, wrapped.kind, wrapped.signature) == (True, "unsupported_gpu", "aiter_arch_unsupported")


def test_aiters_cpp_kernels_refusing_the_gpus_architecture_is_unsupported_gpu_under_sglang_too():
    """aiter's second refusal of the GPU (its C++ template kernels' arch list, ROCm/aiter e4048607a5
    csrc/cpp_itfs/utils.py:144-161; read first in vLLM's round 22, vx11) is SGLang's as well: SGLang calls
    the same aiter on ROCm. Here in SGLang's own stamp, the assertion under a scheduler's exception."""
    log = ("[2026-08-10 19:58:01 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/opt/venv/lib/python3.12/site-packages/aiter_meta/csrc/cpp_itfs/utils.py", line 145, in '
           "validate_and_update_archs\n    assert all(\n"
           "AssertionError: One of GPU archs of ['gfx1201'] is invalid or not supported\n")
    found = diagnose(log)
    assert (found.crashed, found.kind, found.signature) == (True, "unsupported_gpu", "aiter_arch_unsupported")
    other = diagnose("[2026-08-10 19:58:01 TP1] AssertionError: One of GPU archs is fine\n")
    assert other.signature != "aiter_arch_unsupported"


def test_the_bare_lookup_and_other_unknown_architectures_are_not_aiters():
    # the first KeyError of the chain alone (the arch as a key) says nothing of what is supported
    bare = diagnose("KeyError: 'gfx1101'\n")
    assert bare.signature != "aiter_arch_unsupported" and bare.kind != "unsupported_gpu"
    # another tool's warning with the same words and no list of supported architectures
    other = diagnose("WARNING: Unknown GPU architecture: gfx1101\n")
    assert other.signature != "aiter_arch_unsupported"
