"""What held-out round 80 of the vLLM corpus (w8001-w8019, measured once on main at f215349 with its logs 8025d89)
showed: crashed 18/19, kind 14/19, phase 12/14. Its seven misses were read from the source (docs/diagnosis.md,
"Held-out round 80"): five fixed, one disputed, one left:

- w8001, w8012 (kind): vLLM's WNA16 MoE GEMM checks the experts' per-GPU shapes against its tile, "size_k must
  divisible by BLOCK_SIZE_K" (vllm-project/vllm 0e4d37b csrc/moe/moe_wna16.cu:307-310, called from
  model_executor/layers/fused_moe/fused_moe.py:526 (0.8.5.post1)): kernel_config_unsupported
  (vllm_crashes/wna16.py).
- w8013 (kind): torch inductor's GPUTooOldForTriton, "Found NAME which is too old to be supported by the triton GPU
  compiler" (torch 2.8.0 _inductor/exc.py:133-135): unsupported_gpu (device_crashes/device.py UNSUPPORTED_GPU).
- w8015 (phase): kernel_warmup's "Using FlashInfer autotune cache file: " is compile_or_warm_up_model's, after the KV
  cache and before capture_model (model_executor/warmup/kernel_warmup.py:146, v1/worker/gpu_worker.py:606, :610
  (0.22.0)): graph_capture (diagnosis/vllm_log.py's phase table).
- w8009 (phase): "Passing raw prompts to InputProcessor is deprecated" is met only by a request added
  (v1/engine/input_processor.py:236, async_llm.py:356 (0.19.1)): serving.
- w8019 (kind disputed: cuda_illegal_access, unknown): torch_npu's "The Inner error is reported as above" with
  "ERR00100 PTA call acl api failed" is the task queue refusing the next op after any earlier error
  (torch_npu/csrc/core/npu/NPUQueue.cpp:413), no fault shown, as w6720, w7323 and w7324.
- w8010 (crashed, kind) left (known_misses.json; docs/diagnosis.md says why).

Each positive test below failed at 8025d89 (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (SGLANG_WHEELS, VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, not_unpacked, read_log, reads, said, vllm_traceback)

_ROUND = [f"w80{n:02d}" for n in range(1, 20)]


def test_the_round_is_folded_with_its_nineteen_logs():
    assert folded_round(VLLM_MANIFEST, 80) == _ROUND


def test_one_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w8019"]
    assert VLLM_MANIFEST["w8019"]["kind_disputed"] == ["cuda_illegal_access", "unknown"]


def test_each_log_reads_as_labelled_but_the_one_left():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {"w8010": ["crashed", "kind"]}


# --- w8001, w8012: the WNA16 MoE GEMM refusing the experts' shapes ----------------------------------------------------

@pytest.mark.parametrize("log_id", ["w8001", "w8012"])
def test_the_wna16_shape_check_is_kernel_config_unsupported(log_id):
    assert said(read_log(f"{log_id}.log")) == (True, "kernel_config_unsupported", "vllm_wna16_shape_refused")


def test_the_wna16_shape_check_is_read_at_graph_capture():
    assert reads(read_log("w8001.log")) == (True, "kernel_config_unsupported", "graph_capture")


def test_the_other_shape_check_in_another_form():
    """V1's engine core, the group-size check of the same kernel (moe_wna16.cu:309-310) raised through
    fused_moe.py:526 (0.8.5.post1) in the profiling run."""
    text = vllm_traceback(
        ("vllm/model_executor/layers/fused_moe/fused_moe.py", 526, "invoke_fused_moe_kernel",
         "ops.moe_wna16_gemm(A, C, B, B_scale, B_zp,"),
        ("vllm/_custom_ops.py", 1254, "moe_wna16_gemm", "torch.ops._moe_C.moe_wna16_gemm(input, output, b_qweight, "
                                                         "b_scales,"),
        exc="RuntimeError: BLOCK_SIZE_K must divisible by group_size", head="(EngineCore_DP0 pid=7) ")
    assert said(text, family="vllm")[:2] == (True, "kernel_config_unsupported")


def test_the_kernels_call_is_in_the_wheel():
    assert_in_wheel("0.8.5.post1", "vllm/model_executor/layers/fused_moe/fused_moe.py", "ops.moe_wna16_gemm(")


@pytest.mark.parametrize("text", [
    "RuntimeError: size_k must be divisible by block_size_k\n",  # other words: no such check of this kernel
    "INFO 01-01 00:00:00 [fused_moe.py:1] Using moe_wna16 with BLOCK_SIZE_K=128\n",
], ids=["other-words", "notice"])
def test_near_misses_are_no_wna16_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_wna16_shape_refused"


# --- w8013: torch inductor refusing a GPU Triton cannot compile for ----------------------------------------------------

def test_the_gpu_too_old_for_triton_is_unsupported_gpu():
    assert said(read_log("w8013.log"))[:2] == (True, "unsupported_gpu")


def test_the_same_refusal_in_another_form():
    """The same GPUTooOldForTriton on a T4's older sibling under vLLM's engine core (torch 2.8.0 exc.py:133-135)."""
    text = vllm_traceback(
        ("torch/_inductor/compile_fx.py", 1800, "compile_fx", "raise GPUTooOldForTriton(device_props, inspect.currentframe())"),
        exc="torch._inductor.exc.GPUTooOldForTriton: Found Tesla P100-PCIE-16GB which is too old to be supported by "
            "the triton GPU compiler, which is used as the backend. Triton only supports devices of CUDA Capability "
            ">= 7.0, but your device is of CUDA capability 6.0", head="(EngineCore_DP0 pid=7) ")
    assert said(text, family="vllm")[:2] == (True, "unsupported_gpu")


def test_the_text_is_torchs_own():
    source = SGLANG_WHEELS / "torch-2.8.0" / "torch/_inductor/exc.py"
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert "which is too old to be supported by the triton GPU compiler" in source.read_text()


@pytest.mark.parametrize("text", [
    "INFO 01-01 00:00:00 [a.py:1] Triton supports devices of CUDA Capability >= 7.0\n",
    "RuntimeError: Found Tesla P40 which is too old to run this model\n",
], ids=["notice", "other-words"])
def test_near_misses_are_no_gpu_refusal(text):
    assert said(text)[1] != "unsupported_gpu"


# --- w8015: kernel_warmup's FlashInfer autotune -----------------------------------------------------------------------

def test_the_autotune_notice_is_graph_capture():
    assert reads(read_log("w8015.log")) == (False, None, "graph_capture")


def test_the_autotune_notice_in_another_form():
    """0.22.0's notice (kernel_warmup.py:146) after the KV cache's size, under a worker's tag."""
    text = ("(EngineCore_DP0 pid=7) INFO 01-02 10:00:00 [kv_cache_utils.py:1087] GPU KV cache size: 100,000 tokens\n"
            "(EngineCore_DP0 pid=7) INFO 01-02 10:00:01 [kernel_warmup.py:146] Using FlashInfer autotune cache file: "
            "/root/.cache/vllm/flashinfer_autotune_cache/a.json\n")
    assert reads(text, family="vllm") == (False, None, "graph_capture")


def test_the_notice_is_in_the_wheel():
    assert_in_wheel("0.22.0", "vllm/model_executor/warmup/kernel_warmup.py", "Using FlashInfer autotune cache file: ")


def test_a_near_miss_is_no_autotune_notice():
    text = ("(EngineCore_DP0 pid=7) INFO 01-02 10:00:00 [kv_cache_utils.py:1087] GPU KV cache size: 100,000 tokens\n"
            "(EngineCore_DP0 pid=7) INFO 01-02 10:00:01 [a.py:1] FlashInfer autotune cache file written\n")
    assert reads(text, family="vllm")[2] == "memory_pool"


# --- w8009: InputProcessor's notice on a request added -----------------------------------------------------------------

def test_the_input_processor_notice_is_serving():
    assert reads(read_log("w8009.log")) == (False, None, "serving")


def test_the_tokenization_notice_in_another_form():
    text = ("(APIServer pid=1) WARNING 01-02 10:00:00 [input_processor.py:225] Passing tokenization_kwargs to "
            "InputProcessor is deprecated and will be removed in v0.18.\n")
    assert reads(text, family="vllm") == (False, None, "serving")


def test_the_input_processor_notice_is_in_the_wheel():
    assert_in_wheel("0.19.1", "vllm/v1/engine/input_processor.py", '"Passing raw prompts to InputProcessor is deprecated "')


def test_a_near_miss_is_no_request():
    text = "(APIServer pid=1) WARNING 01-02 10:00:00 [a.py:1] Passing raw prompts is deprecated\n"
    assert reads(text, family="vllm")[2] != "serving"
