"""Held-out round 22 (issue 24): folded into ``work``, its misses fixed by general rules read from the source.

Round 22 (h22001-h22006) was measured once on main at 37e9073 (with the round's logs, 75e011e; ac4ae77 reads
them the same: crashed 5/6, kind 2/6, phase 2/2) and folded into ``work``; docs/diagnosis.md, "Held-out round
22", explains the four misses: h22002, h22003 and h22004 were ddlab's, h22005's kind is disputed on the second
look (its crashed label stays, and stays a miss). A rule's test reads the corpus log (work split since the
fold), a text written from the same source texts, and a near miss that must not read the same way; the
positive tests fail on 37e9073 (the near misses hold on both). A text cited from a wheel is checked there where
the wheel is unpacked (skipped elsewhere).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import REAL_MANIFEST, assert_in_sglang_wheel, assert_reads_as_labelled, reading, real

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 22}


def test_round22_is_folded_into_work():
    assert sorted(_ROUND) == [f"h22{n:03d}" for n in range(1, 7)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log["kind"] == "unknown" for log in _ROUND.values())
    assert sum(not log["crashed"] for log in _ROUND.values()) == 2
    assert sum(log["phase_in_log"] for log in _ROUND.values()) == 2
    disputed = {log_id for log_id, log in _ROUND.items() if log.get("kind_disputed") or log.get("phase_disputed")}
    assert disputed == {"h22005"}


# the logs 37e9073 read as labelled (None: healthy)
@pytest.mark.parametrize(("log_id", "signature"), [
    ("h22001", None),                # healthy: 2048-token prefill batches, the last line cut mid-field
    ("h22006", "native_crash"),      # a faulthandler dump's end and CPython's 'Extension modules:' list
])
def test_round22_logs_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h22002: a layer's weight_loader copying a checkpoint tensor of another shape ------------------------
# SGLang's loaders place a checkpoint tensor with ``.copy_(loaded_weight)`` and check no shape of their own
# (0.5.23 layers/moe/fused_moe_triton/layer.py:879 in _load_w13, :969 in _load_w2; layers/linear.py:582;
# model_loader/weight_utils.py:1586; 0.4.10.post2 layers/moe/fused_moe_triton/layer.py:283): torch's
# broadcast check in copy_ refuses, and the raising frame is the loader's copy

_LOADER = ("[2026-06-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_loader/loader.py", line 700, '
           "in load_weights_and_postprocess\n"
           "    model.load_weights(weights)\n"
           '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/models/qwen2.py", line 600, in load_weights\n'
           "    weight_loader(param, loaded_weight)\n")
_DEFAULT_LOADER = ('  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_loader/weight_utils.py", '
                   "line 1586, in default_weight_loader\n"
                   "    param.data.copy_(loaded_weight)\n"
                   "RuntimeError: The expanded size of the tensor (2048) must match the existing size (4096) at "
                   "non-singleton dimension 0.  Target sizes: [2048].  Tensor sizes: [4096]\n")
_FORWARD = ("[2026-06-01 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/models/qwen2.py", line 300, in forward\n'
            "    hidden_states = hidden_states + residual\n"
            "RuntimeError: The size of tensor a (6144) must match the size of tensor b (3072) at non-singleton "
            "dimension 1\n")


def test_a_loader_copying_a_checkpoint_tensor_of_another_shape_is_weights_unreadable():
    assert_reads_as_labelled("h22002", "loader_copy_shape")
    # the default loader's copy, in torch's other wording of the same refusal
    other = diagnose(_LOADER + _DEFAULT_LOADER)
    assert reading(other) == (True, "weights_unreadable", "load_weights") and other.signature == "loader_copy_shape"


def test_the_same_size_error_outside_a_loader_is_not_a_checkpoint_problem():
    near = diagnose(_FORWARD)
    assert near.kind != "weights_unreadable" and near.signature != "loader_copy_shape"
    # a bare size line with no frame stays unknown (round 12's h12019)
    assert real("h12019").signature != "loader_copy_shape"


def test_the_loader_copy_texts_are_in_the_wheels():
    assert_in_sglang_wheel("0.5.23", "sglang/srt/layers/moe/fused_moe_triton/layer.py",
                           "            expert_data.copy_(loaded_weight)\n\n    def _load_w2(")
    assert_in_sglang_wheel("0.5.23", "sglang/srt/model_loader/weight_utils.py", "        param.data.copy_(loaded_weight)")
    assert_in_sglang_wheel("0.4.10.post2", "sglang/srt/layers/moe/fused_moe_triton/layer.py",
                           "        expert_data.copy_(loaded_weight)")


# --- h22003, h22004: DeepGEMM called where the wrapper never imported it ----------------------------------
# 0.5.23 layers/deep_gemm_wrapper/entrypoint.py:18-19 imports deep_gemm only when ENABLE_JIT_DEEPGEMM, which
# configurer.py:47-50 leaves False where the import fails; tf32_hc_prenorm_gemm (:295) calls it unguarded

_CAPTURE = ("\n[2026-09-21 06:49:24 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1045, in init_all_cuda_graphs\n'
            "    self.tp_worker.init_cuda_graphs()\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker.py", line 443, in init_cuda_graphs\n'
            "    self.model_runner.init_cuda_graphs(\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", lin')
_CALL = ('  File "/sgl-workspace/sglang/python/sglang/srt/layers/deep_gemm_wrapper/entrypoint.py", line 295, '
         "in tf32_hc_prenorm_gemm\n"
         "    deep_gemm.tf32_hc_prenorm_gemm(x, fn, out, sqrsum, num_splits=num_splits)\n")


def test_deep_gemm_not_imported_is_a_dependency_mismatch():
    # the error line cut after the name (only forward frames: the phase is not in the log)
    assert_reads_as_labelled("h22003", "dependency_mismatch")
    # in full, before the scheduler's own traceback through the graph capture, cut before its exception:
    # the NameError is the cause, the capture only where it was raised
    assert_reads_as_labelled("h22004", "dependency_mismatch")
    assert real("h22004").phase == "graph_capture"
    written = diagnose(_CALL + "NameError: name 'deep_gemm' is not defined\n" + _CAPTURE)
    assert reading(written) == (True, "dependency_mismatch", "graph_capture")


def test_another_name_not_defined_in_the_capture_stays_a_capture_error():
    near = diagnose(_CALL.replace("deep_gemm.", "deep_gemm_ops.") + "NameError: name 'deep_gemm_ops' is not defined\n"
                    + _CAPTURE)
    assert (near.kind, near.signature) == ("cuda_graph_capture", "capture_error")


def test_the_deep_gemm_import_texts_are_in_the_wheel():
    entry = "sglang/srt/layers/deep_gemm_wrapper/entrypoint.py"
    assert_in_sglang_wheel("0.5.23", entry, "if ENABLE_JIT_DEEPGEMM:\n    import deep_gemm\n")
    assert_in_sglang_wheel("0.5.23", entry, "    deep_gemm.tf32_hc_prenorm_gemm(x, fn, out, sqrsum, num_splits=num_splits)")
    assert_in_sglang_wheel("0.5.23", "sglang/srt/layers/deep_gemm_wrapper/configurer.py",
                           "    try:\n        import deep_gemm  # noqa: F401\n    except (ImportError, OSError, RuntimeError):\n"
                           "        return False\n")


# --- h22005: the kind disputed on the second look ----------------------------------------------------------

def test_h22005_failed_health_checks_around_an_answered_request_are_disputed_toward_health_check():
    """Labelled not crashed (a chat request answered 200 between two failed health checks); the second look
    reads health_check, ddlab's reading: the last line is another failed check, and a streaming response's
    200 is logged before any token (0.4.10.post2 entrypoints/openai/serving_chat.py:375-379). The kind is not
    measured; crashed stays as labelled."""
    log = REAL_MANIFEST["h22005"]
    assert log["kind_disputed"] == [None, "health_check"] and "StreamingResponse" in log["second_look"]
    found = real("h22005")
    assert (found.crashed, found.kind, found.signature) == (True, "health_check", "health_check")
    assert_in_sglang_wheel("0.4.10.post2", "sglang/srt/entrypoints/openai/serving_chat.py",
                           "        return StreamingResponse(\n            self._generate_chat_stream(")
    assert_in_sglang_wheel("0.5.23", "sglang/srt/entrypoints/http_server.py",
                           'f"Health check failed. Server couldn\'t get a response from detokenizer for last "')
