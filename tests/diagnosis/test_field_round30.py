"""Held-out round 30 (issue 24): ddlab's misses fixed by general rules from the source.

Round 30 (h30001-h30013, log files committed to public repositories, pinned to a commit, at most 3 per
repository: ROCm and RTX 3090 benchmark notes, a DGX Spark setup, course and setup repositories) was
measured once on main at 60f6dc1 (with the round's logs, 33c4991: crashed 10/13, kind 8/13, phase 7/7);
docs/diagnosis.md, "Held-out round 30", explains the five misses, and the round is folded into ``work``.
h30003: a KeyError naming a fused MoE layer's AWQ tensor (``w2_qweight``) in load_weights: weights_unreadable.
h30007: SGLang's JIT Marlin MoE kernel refusing a per-rank slice that does not divide into its scale groups
("Runtime check failed at ...moe_wna16_marlin.cuh:963: size_k = 704, is not divisible by b_scales.size(1)
= 5"): kernel_config_unsupported. h30008, h30013: a startup that ends with CPython's resource tracker
warning of leaked semaphores and nothing else: every process of the server ended with no stop asked,
a crash (unknown). h30009: an operator's SIGTERM after serving (the tokenizer manager's "SIGTERM
received ... Draining requests" notice), the children then reporting "crashed with exit code -15": a stop,
the three 400 answers before it a request's error. A rule's test reads the corpus log (work split since
the fold), texts written from the source and near misses that must not read the same way; the positive
tests fail on 60f6dc1 (the near misses hold on both). A text cited from a wheel is checked there where
the wheel is unpacked (skipped elsewhere); CPython's resource tracker is read from this interpreter's
standard library.
"""

from __future__ import annotations

import inspect
import multiprocessing.resource_tracker

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import REAL_MANIFEST, assert_at_line, assert_in_sglang_wheel, assert_reads_as_labelled, reading

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 30}


def test_round30_is_folded_into_work_with_nothing_disputed():
    assert sorted(_ROUND) == [f"h300{i:02d}" for i in range(1, 14)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())


def test_the_rounds_five_misses_read_as_labelled():
    assert_reads_as_labelled("h30003", "weight_name_unknown")
    assert_reads_as_labelled("h30007", "kernel_config_unsupported")  # its phase is not in the log
    assert_reads_as_labelled("h30008", None)
    assert_reads_as_labelled("h30009", "request_http_4xx")
    assert_reads_as_labelled("h30013", None)


# --- h30009: an operator's SIGTERM after serving -----------------------------------------------------------
# the tokenizer manager's handler (0.4.10.post2 managers/tokenizer_manager.py:1988, 0.5.23 :4068), the
# subprocess watchdog's report of a child that exited (0.5.23 utils/watchdog.py:217-219), SIGQUIT's handler

_SERVING = ("[2026-08-02 00:00:00] The server is fired up and ready to roll!\n"
            "[2026-08-02 00:09:40] Decode batch, #running-req: 1, #full token: 0, cuda graph: True, "
            "gen throughput (token/s): 1.14, #queue-req: 0\n"
            '[2026-08-02 00:09:40] INFO:     127.0.0.1:43920 - "POST /v1/chat/completions HTTP/1.1" 400 Bad '
            "Request\n")
_SIGTERM = "[2026-08-02 00:17:43] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
_CHILD = ("[2026-08-02 00:17:43] Subprocess detokenizer (pid=31379) crashed with exit code -15. Triggering "
          "SIGQUIT for cleanup...\n"
          "[2026-08-02 00:17:43] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n")


def test_the_children_ending_after_an_operators_sigterm_are_a_stop():
    found = diagnose(_SERVING + _SIGTERM + _CHILD)
    assert reading(found) == (False, "request_error", "serving")
    assert found.signature == "request_http_4xx"
    assert reading(diagnose(_SERVING.replace(" 400 Bad Request", " 200 OK") + _SIGTERM + _CHILD))[:2] == (
        False, None)


def test_a_child_ending_with_no_sigterm_asked_or_an_error_after_it_is_still_a_crash():
    assert reading(diagnose(_SERVING + _CHILD))[:2] == (True, "unknown")
    error = ("[2026-08-02 00:17:44] Scheduler hit an exception: Traceback (most recent call last):\n"
             '  File "/x/sglang/srt/managers/scheduler.py", line 10, in event_loop_normal\n'
             "    self.run_batch()\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert diagnose(_SERVING + _SIGTERM + error + _CHILD).crashed
    # a run started again after the stop (its startup lines) is not stopped by the earlier SIGTERM
    again = "[2026-08-02 00:20:00] Load weight begin. avail mem=97.74 GB\n"
    assert reading(diagnose(_SERVING + _SIGTERM + again + _CHILD))[:2] == (True, "unknown")
    # the same silence with requests waiting and no stop asked is still a hang
    late = "[2026-08-02 00:17:43] INFO:     127.0.0.1:1 - \"GET /v1/models HTTP/1.1\" 200 OK\n"
    assert diagnose(_SERVING.replace("#queue-req: 0", "#queue-req: 3") + late).kind == "hang"


def test_sglangs_sigterm_notice_and_the_childs_exit_report_are_in_the_wheels():
    said = 'f"SIGTERM received. {signum=} {frame=}. Draining requests and shutting down..."'
    assert_at_line("sglang", "0.5.23", "sglang/srt/managers/tokenizer_manager.py", 4068, said)
    assert_at_line("sglang", "0.4.10.post2", "sglang/srt/managers/tokenizer_manager.py", 1988, said)
    assert_at_line("sglang", "0.5.23", "sglang/srt/utils/watchdog.py", 219, '"Triggering SIGQUIT for cleanup..."')
    assert_in_sglang_wheel("0.5.23", "sglang/srt/utils/watchdog.py", 'f"with exit code {proc.exitcode}. "')


# --- h30008, h30013: a startup that ends with the resource tracker's leak warning --------------------------
# CPython Lib/multiprocessing/resource_tracker.py: EOF once every process has exited (:8), then main()'s
# finally warns of what was left registered (3.12 :249-256)

_START = ("[2026-08-01 22:25:30] Init torch distributed begin.\n"
          "[2026-08-01 22:25:31] Load weight begin. avail mem=97.74 GB\n"
          "Multi-thread loading shards:  96% Completed | 47/49 [09:32<00:14,  7.50s/it]")
_TRACKER = ("/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: resource_tracker: There "
            "appear to be 1 leaked semaphore objects to clean up at shutdown\n"
            "  warnings.warn('resource_tracker: There appear to be %d '\n")


def test_a_startup_ended_by_the_trackers_warning_is_a_crash():
    found = diagnose(_START + _TRACKER)
    assert reading(found) == (True, "unknown", "load_weights")
    assert "resource_tracker" in found.cause and "OOM killer" in found.suggestion
    capture = ("[2026-08-01 21:51:16] Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[4, "
               "8], avail mem=11.81 GB\n  0%|          | 0/58 [00:00<?, ?it/s]")
    assert reading(diagnose(capture + _TRACKER.replace("1 leaked semaphore", "2 leaked shared_memory"))) == (
        True, "unknown", "graph_capture")


def test_the_trackers_warning_after_ready_or_after_a_stop_is_no_crash():
    ready = "[2026-05-25 17:24:19] The server is fired up and ready to roll!\n"
    assert not diagnose(_START + "\n" + ready + _TRACKER).crashed
    assert not diagnose(_START + "\nKeyboardInterrupt\n" + _TRACKER).crashed
    assert not diagnose(_START + "\n" + _SIGTERM + _TRACKER).crashed
    assert not diagnose(_START).crashed  # a log that just stops mid-startup, as before
    other = _TRACKER.replace("There appear to be 1 leaked semaphore objects", "process died unexpectedly")
    assert not diagnose(_START + "\n" + other).crashed


def test_the_trackers_text_is_cpythons():
    source = inspect.getsource(multiprocessing.resource_tracker)
    assert "we get EOF when all other processes have exited" in source
    assert "resource_tracker: There appear to be " in source and "clean up at shutdown" in source


# --- h30003: a KeyError naming a fused MoE layer's WNA16 tensor ---------------------------------------------

_QWEN = "/x/sglang/python/sglang/srt/models/qwen3_5.py"


def _key(name: str) -> str:
    return ("[2026-05-25 17:55:03 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{_QWEN}", line 1958, in load_weights\n    param = params_dict[name_mapped]\n'
            f"KeyError: '{name}'\n")


def test_a_fused_moe_layers_quantized_tensor_the_model_lacks_is_weights_unreadable():
    for name in ("model.layers.0.mlp.experts.w2_qweight", "model.layers.3.mlp.experts.w13_qzeros",
                 "model.layers.0.mlp.experts.w2_scales", "model.layers.0.mlp.experts.w13_g_idx"):
        found = diagnose(_key(name))
        assert reading(found) == (True, "weights_unreadable", "load_weights"), name
        assert found.signature == "weight_name_unknown", name


def test_another_key_is_not_a_checkpoint_tensor():
    for name in ("model.layers.0.mlp.experts.w2_qweightx", "model.layers.0.mlp.experts.wx_qweight",
                 "model.layers.0.mlp.experts.w2_router"):
        assert diagnose(_key(name)).kind != "weights_unreadable", name


def test_the_moe_wna16_tensors_are_in_the_wheel():
    wna16 = "sglang/srt/layers/quantization/moe_wna16.py"
    assert_at_line("sglang", "0.5.23", wna16, 301, 'layer.register_parameter("w13_qweight", w13_qweight)')
    assert_at_line("sglang", "0.5.23", wna16, 314, 'layer.register_parameter("w2_qweight", w2_qweight)')
    assert_at_line("sglang", "0.5.23", wna16, 338, 'layer.register_parameter("w2_scales", w2_scales)')
    assert_at_line("sglang", "0.5.23", "sglang/srt/models/qwen3_5.py", 2338, "param = params_dict[name_mapped]")


# --- h30007: the JIT Marlin MoE kernel refusing a slice that does not divide into its groups ---------------

_CUH = "/data/sglang/python/sglang/jit_kernel/csrc/gemm/marlin_moe/moe_wna16_marlin.cuh"
_JIT = ('  File "/data/sglang/python/sglang/jit_kernel/moe_wna16_marlin.py", line 138, in moe_wna16_marlin_gemm\n'
        "    module.moe_wna16_marlin_gemm(\n"
        '  File "python/tvm_ffi/cython/function.pxi", line 929, in tvm_ffi.core.Function.__call__\n')
_SIGQUIT = "\n[2026-06-11 05:11:11] Received sigquit from a child process. It usually means the child failed.\n"


def test_the_jit_marlin_kernels_shape_check_is_the_kernel_refusing_the_config():
    for said in (f"Runtime check failed at {_CUH}:963: size_k = 704, is not divisible by b_scales.size(1) = 5",
                 f"Failed at {_CUH}:1033: size_k = 704, is not divisible by b_scales.size(1) = 5",
                 f"Runtime check failed at {_CUH}:628: prob_k = 704 is not divisible by group_blocks = 8",
                 f"Runtime check failed at {_CUH}:702: prob_k = 64 is not divisible by thread_k = 128"):
        found = diagnose(_JIT + f"RuntimeError: {said}" + _SIGQUIT)
        assert found.crashed and found.kind == "kernel_config_unsupported", said
        assert "`--ep-size`" in found.suggestion, said


def test_another_runtime_check_is_not_the_marlin_shape():
    for said in (f"Runtime check failed at {_CUH}:905: b_q_weight is not contiguous",
                 "Runtime check failed at /x/jit_kernel/csrc/norm.cuh:40: size_k = 3, is not divisible by "
                 "num_groups = 2",
                 f"Runtime check failed at {_CUH}:872: Shape mismatch: a.size(0) = 3, size_m = 4"):
        assert diagnose(_JIT + f"RuntimeError: {said}" + _SIGQUIT).kind != "kernel_config_unsupported", said


def test_the_runtime_check_and_the_marlin_checks_are_in_the_wheels():
    jit = "sglang/jit_kernel"
    assert_at_line("sglang", "0.5.13", f"{jit}/include/sgl_kernel/utils.h", 86, 'os << "Runtime check failed at "')
    cuh = f"{jit}/csrc/gemm/marlin_moe/moe_wna16_marlin.cuh"
    assert_at_line("sglang", "0.5.13", cuh, 964, '", is not divisible by b_scales.size(1) = ", num_groups);')
    assert_at_line("sglang", "0.5.13", cuh, 959, '", is not divisible by num_groups = ", num_groups);')
    assert_at_line("sglang", "0.5.13", cuh, 628, '" is not divisible by group_blocks = ", group_blocks);')
    assert_at_line("sglang", "0.5.13", cuh, 702, '" is not divisible by thread_k = ", thread_k);')
    assert_at_line("sglang", "0.5.23", "sglang/kernels/jit/include/sgl_kernel/utils.h", 79, 'os << "Failed at "')
    assert_at_line("sglang", "0.5.23", "sglang/kernels/jit/csrc/gemm/marlin_moe/moe_wna16_marlin.cuh", 1034,
                   '", is not divisible by b_scales.size(1) = ", num_groups);')
