"""vLLM held-out round 117 (3 logs, w11701-w11703), folded into work after its misses were read.

Measured once on main at 57933ae0 (staged as c7ce16bb): crashed 3/3, kind 1/3, phase 2/3. Two logs missed, read
against the source of the vLLM releases near theirs:

- w11701 (kind, fixed): the headless worker of a two-node DGX Spark TP2 run of a vLLM 0.25.2.dev0 build, DeepSeek V4
  (NVFP4) with a DSpark draft: the draft's MXFP4 MoE method takes the 'FLASHINFER_CUTLASS_MXFP4_MXFP8' backend, and
  after its weights load, ``convert_weight_to_mxfp4_moe_kernel_format`` raises "Unsupported mxfp4_backend for
  Mxfp4MoEMethod: Mxfp4MoeBackend.FLASHINFER_CUTLASS_MXFP4_MXFP8. Expected TRTLLM, Triton, AITER, or XPU backend."
  (0.23.0 model_executor/layers/fused_moe/oracle/mxfp4.py:1528-1532; the selector takes a ``--moe-backend`` backend,
  "flashinfer_cutlass" among them, :242-246, :600-618; 0.28.0 converts FlashInfer CUTLASS, :1609-1611). A backend the
  method cannot lay its weights out for: kernel_config_unsupported as labelled (vllm_crashes/moe_schemes.py
  ``MXFP4_BACKEND_UNCONVERTED``; the oracle's other refusals, an unknown ``--moe-backend`` value or no backend left,
  are not this).
- w11703 (kind fixed, phase disputed): vLLM 0.18.0 serving Qwen3-8B with ``--kv-cache-dtype bfloat16``: the warm-up
  dummy run of compile_or_warm_up_model writes the KV cache through FlashAttention's reshape_and_cache_flash, whose
  kernel takes "auto" and the FP8 names only: "RuntimeError: Unsupported data type of kv cache: bfloat16". vLLM's
  help calls bfloat16 "an invalid option for models that do not default to fp8" (config/cache.py:53-55): the flag's
  value, bad_argument as labelled (vllm_crashes/kv_cache_dtypes.py ``KV_CACHE_DTYPE_NATIVE_NAME``; an FP8 or MLA name
  in the message, or the kernel's "Unsupported input type", is not this). The labelled phase, memory_pool, was
  disputed to graph_capture: the KV cache was allocated before (v1/executor/abstract.py:117-118 (0.18.0)) and the
  corpus reads compile_or_warm_up_model's warm-up as graph_capture (vf19, w3610, w8015), as ddlab does.
- w11702 (read as labelled): the head node of another two-node run of the same build, serving to the file's end.

The positive tests below failed at 57933ae0 (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said, vllm_signature, vllm_traceback)

_ROUND = [f"w117{n:02d}" for n in range(1, 4)]
_WORKER = "(Worker_TP1 pid=462) ERROR 07-18 21:14:17 [multiproc_executor.py:898] "
_AFTER_LOAD = ("vllm/model_executor/model_loader/utils.py", 113, "process_weights_after_loading",
               "quant_method.process_weights_after_loading(module)")
_SETUP = ("vllm/model_executor/layers/quantization/mxfp4.py", 678, "_setup_kernel",
          "convert_weight_to_mxfp4_moe_kernel_format(")
_CONVERT = ("vllm/model_executor/layers/fused_moe/oracle/mxfp4.py", 1582, "convert_weight_to_mxfp4_moe_kernel_format",
            "raise ValueError(")
_CORE = "(EngineCore pid=406) ERROR 10-09 09:37:17 [core.py:1099] "
_WARMUP = ("vllm/v1/worker/gpu_worker.py", 697, "compile_or_warm_up_model",
           "hidden_states, last_hidden_states = self.model_runner._dummy_run(")
_UPDATE = ("vllm/v1/attention/backends/flash_attn.py", 819, "do_kv_cache_update", "reshape_and_cache_flash(")
_CACHE_OP = ("vllm/_custom_ops.py", 2593, "reshape_and_cache_flash", "torch.ops._C_cache_ops.reshape_and_cache_flash(")


def _convert(exc: str) -> str:
    return vllm_traceback(_AFTER_LOAD, _SETUP, _CONVERT, exc=exc, head=_WORKER)


def _write(exc: str) -> str:
    return vllm_traceback(_WARMUP, _UPDATE, _CACHE_OP, exc=exc, head=_CORE)


def test_the_round_is_folded_with_its_three_logs():
    assert folded_round(VLLM_MANIFEST, 117) == _ROUND


def test_w11703s_phase_is_the_one_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w11703"]
    assert VLLM_MANIFEST["w11703"]["phase_disputed"] == ["memory_pool", "graph_capture"]
    assert not VLLM_MANIFEST["w11703"].get("kind_disputed")


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


def test_the_head_node_serves():
    assert reads(read_log("w11702.log")) == (False, None, "serving")


# --- w11701: the MXFP4 MoE method with no weight conversion for the backend chosen ----------------------------------

def test_an_mxfp4_backend_the_method_cannot_convert_is_kernel_config_unsupported():
    assert said(read_log("w11701.log")) == (True, "kernel_config_unsupported", "vllm_mxfp4_backend_unconverted")
    assert reads(read_log("w11701.log")) == (True, "kernel_config_unsupported", "load_weights")


def test_the_later_releases_wording_reads_the_same():
    text = _convert("ValueError: Unsupported mxfp4_backend for Mxfp4MoEMethod: "
                    "Mxfp4MoeBackend.FLASHINFER_CUTLASS_MXFP4_BF16. Expected TRTLLM, Triton, AITER, XPU, or emulation "
                    "backend.")
    assert vllm_signature(text) == "vllm_mxfp4_backend_unconverted"
    assert said(text)[:2] == (True, "kernel_config_unsupported")


def test_the_advice_names_moe_backend():
    from ddlab.diagnosis.diagnosis import diagnose
    assert "`--moe-backend`" in diagnose(read_log("w11701.log")).suggestion


def test_the_oracles_other_refusals_are_not_this():
    unknown = _convert("ValueError: moe_backend='cutlass' is not supported for MXFP4 MoE. Expected one of "
                       "['deep_gemm', 'flashinfer_trtllm', 'flashinfer_cutlass', 'triton', 'marlin'].")
    assert vllm_signature(unknown) != "vllm_mxfp4_backend_unconverted"
    none_left = _convert("NotImplementedError: No MXFP4 MoE backend supports the deployment configuration.")
    assert vllm_signature(none_left) != "vllm_mxfp4_backend_unconverted"
    feature = _convert("ValueError: Mxfp4 MoE backend 'B12X_MXFP4' does not support the deployment configuration "
                       "since kernel does not support batch invariance.")
    assert vllm_signature(feature) == "vllm_moe_backend_feature_refused"


# --- w11703: --kv-cache-dtype bfloat16 refused by the KV-cache write kernel -------------------------------------------

def test_the_models_own_precision_named_as_kv_cache_dtype_is_bad_argument():
    assert said(read_log("w11703.log")) == (True, "bad_argument", "vllm_kv_cache_dtype_native_name")
    assert reads(read_log("w11703.log")) == (True, "bad_argument", "graph_capture")


def test_float16_reads_the_same():
    text = _write("RuntimeError: Unsupported data type of kv cache: float16")
    assert vllm_signature(text) == "vllm_kv_cache_dtype_native_name"
    assert said(text)[:2] == (True, "bad_argument")


def test_another_cache_type_or_the_input_type_is_not_this():
    mla = _write("RuntimeError: Unsupported data type of kv cache: fp8_ds_mla")
    assert vllm_signature(mla) != "vllm_kv_cache_dtype_native_name"
    src = _write("RuntimeError: Unsupported input type of kv cache: Float8_e4m3fn")
    assert vllm_signature(src) != "vllm_kv_cache_dtype_native_name"


# --- the lines the rules cite ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.23.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py",
     '            f"Unsupported mxfp4_backend for Mxfp4MoEMethod: {mxfp4_backend}. "\n'
     '            f"Expected TRTLLM, Triton, AITER, or XPU backend."'),
    ("0.23.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py",
     '        "flashinfer_cutlass": [\n'
     "            Mxfp4MoeBackend.FLASHINFER_CUTLASS_MXFP4_BF16,"),
    ("0.28.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py",
     '            "Expected TRTLLM, FlashInfer CUTLASS, Triton, AITER, XPU, or "'),
    ("0.18.0", "vllm/config/cache.py",
     "    bfloat16 instead, this is an invalid option for models that do not default\n    to fp8."),
    ("0.18.0", "vllm/v1/attention/backends/flash_attn.py",
     '        return kv_cache_dtype in ["auto", "float16", "bfloat16"]'),
    ("0.18.0", "vllm/v1/executor/abstract.py",
     '        self.collective_rpc("initialize_from_config", args=(kv_cache_configs,))\n'
     '        compilation_times: list[float] = self.collective_rpc("compile_or_warm_up_model")'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
