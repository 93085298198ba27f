"""The rules that round 7 of the vLLM corpus (vh01-vh30, measured once) showed missing.

Each rule is general and cited from the wheels (vLLM 0.6.4.post1, 0.30.0, 0.33.0, 0.34.0; the
kerutils header SGLang 0.5.23 vendors, as FlashMLA does) or from the log's machine text (CANN's,
as vllm-ascend's log shows it): the round-7 log that showed it is one case, a text written from the
source in another form is the other, and a text beside it that the rule must not take is a third.
SGLang's reading of every SGLang log is unchanged (test_vllm_diagnosis.test_every_sglang_log_is_read_as_sglang
and the SGLang corpus floors).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import assert_in_wheel, read_log, reads, vllm_traceback


# --- a kernel refuses the shapes it was handed: kernel_config_unsupported ------------------

def test_marlins_shape_check_is_a_kernel_refusing_the_configuration():
    """vh24: "Weight input_size_per_partition = 448 is not divisible by min_thread_k = 128"
    (quantization/utils/marlin_utils.py:108 (0.6.4.post1), :191 (0.34.0), verify_marlin_supports_shape):
    the Marlin kernel takes no weight of this per-rank shape; read unknown before."""
    for release in ("0.6.4.post1", "0.34.0"):
        assert_in_wheel(release, "vllm/model_executor/layers/quantization/utils/marlin_utils.py",
                        'f"by min_thread_k = {GPTQ_MARLIN_MIN_THREAD_K}. "')
    assert reads(read_log("vh24.log")) == (True, "kernel_config_unsupported", "load_weights")
    # the output side's check, in a V1 engine core's traceback through the loader
    stamped = vllm_traceback(
        ("vllm/model_executor/model_loader/base_loader.py", 50, "load_model",
         "model = initialize_model(vllm_config=vllm_config, model_config=model_config)"),
        ("vllm/model_executor/layers/quantization/utils/marlin_utils.py", 180, "verify_marlin_supports_shape",
         "raise ValueError("),
        exc="ValueError: Weight output_size_per_partition = 1000 is not divisible by  min_thread_n = 64. "
            "Consider reducing tensor_parallel_size or running with --quantization gptq.")
    found = diagnose(stamped)
    assert (found.crashed, found.kind, found.phase) == (True, "kernel_config_unsupported", "load_weights")
    # another ValueError of the loader is not this rule's
    other = stamped.replace("Weight output_size_per_partition = 1000 is not divisible by  min_thread_n = 64",
                            "Weight 1000 is not a weight")
    assert diagnose(other).kind != "kernel_config_unsupported"


def test_a_tensor_map_the_cuda_driver_refuses_is_a_kernel_refusing_its_shapes():
    """vh27: kerutils' host code (FlashMLA's, vendored by SGLang 0.5.23 too) prints "Failed to create
    tensormap" and "Dim: N" when cuTensorMapEncodeTiled refuses the tensor it is handed, then
    KU_ASSERT(false), which prints "Assertion `false` failed (host.h:140)" and throws (host.h:42-53,
    :169): read as not crashed before."""
    header = Path("/work/wheels/sglang-0.5.23/sglang/kernels/jit/csrc/deep_select/vendor/3rdparty/kerutils/"
                  "include/kerutils/host/host.h")
    if not header.exists():
        pytest.skip(f"{header} not unpacked here")
    source = header.read_text()
    assert 'fprintf(stderr, "Failed to create tensormap\\n");' in source
    assert '"Assertion `%s` failed (%s:%d)"' in source and "THROW_KU_EXCEPTION" in source
    text = read_log("vh27.log")
    assert diagnose(text).crashed and diagnose(text).kind == "kernel_config_unsupported"
    # the same lines inside a vLLM engine core's report: the same kind
    tagged = "".join(f"(EngineCore_DP0 pid=1) ERROR 08-01 10:00:00 [core.py:900] {ln}\n" for ln in text.splitlines())
    assert diagnose(tagged, family="vllm").kind == "kernel_config_unsupported"
    # "Failed to create" something else is not this rule's
    assert diagnose("Failed to create tensorboard writer\n").kind != "kernel_config_unsupported"


def test_a_cann_operators_tiling_check_is_the_operator_refusing_its_inputs():
    """vh29: an Ascend operator's tiling check ("[FUNC:CheckFAISeqlenDataInTND][FILE:
    fused_infer_attention_score_tiling.cpp]", CANN's E89999 inner error under "aclnn... failed,
    error code is 561002", as vllm-ascend's log shows it): the fused attention operator refuses the
    shapes of the batch it was given; read unknown before."""
    text = read_log("vh29.log")
    assert detect_family(text) == "vllm"
    assert reads(text)[:2] == (True, "kernel_config_unsupported")
    # the same operator failing without its tiling check named is not this rule's
    cut = "\n".join(ln for ln in text.splitlines() if "tiling" not in ln) + "\n"
    assert diagnose(cut).kind != "kernel_config_unsupported"


# --- a model's config class lacks a setting vLLM reads: arch_unsupported --------------------

def test_a_model_config_class_without_a_setting_vllm_reads_is_an_architecture_it_cannot_read():
    """vh25: "AttributeError: 'MLPSpeculatorConfig' object has no attribute 'num_attention_heads'"
    while the engine config is built (engine/arg_utils.py create_speculative_config, :2172 (0.34.0));
    vLLM reads the text model's settings from the model's config class (config.py:526 (0.6.4.post1),
    transformers_utils/model_arch_config_convertor.py:557 (0.30.0)), as SGLang's config_layout_unknown;
    read unknown before."""
    assert_in_wheel("0.30.0", "vllm/transformers_utils/model_arch_config_convertor.py",
                    "self.hf_text_config.num_attention_heads")
    assert_in_wheel("0.34.0", "vllm/engine/arg_utils.py", "return SpeculativeConfig(**self.speculative_config)")
    assert reads(read_log("vh25.log")) == (True, "arch_unsupported", "launch")
    stamped = vllm_traceback(
        ("vllm/engine/arg_utils.py", 1500, "create_engine_config", "model_config = self.create_model_config()"),
        ("vllm/transformers_utils/model_arch_config_convertor.py", 557, "get_num_attention_heads",
         "self.hf_text_config.num_attention_heads,"),
        exc="AttributeError: 'FooVisionConfig' object has no attribute 'num_attention_heads'")
    found = diagnose(stamped)
    assert (found.crashed, found.kind) == (True, "arch_unsupported")
    # vLLM's own engine config classes lacking a field are a mismatch of versions, not the model's
    own = stamped.replace("'FooVisionConfig'", "'VllmConfig'")
    assert diagnose(own).kind != "arch_unsupported"


# --- PD disaggregation: the KV layout of prefill and decode disagree: pd_transfer -----------

def test_nixls_handshake_refusing_a_kv_layer_mismatch_is_a_pd_transfer_failure():
    """vh26: "AssertionError: Number of KV layers must match between producer and consumer" (NIXL's
    handshake check, kv_connector/v1/nixl/base_worker.py:2369 (0.30.0), :2905 (0.33.0), :2970 (0.34.0),
    worded "between prefill and decode" there): the decode side cannot read the prefill side's KV
    cache, no transfer can succeed; read (as SGLang's) unknown before."""
    for release, line in (("0.30.0", 2369), ("0.33.0", 2905), ("0.34.0", 2970)):
        assert_in_wheel(release, "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py",
                        '"Number of KV layers must match between prefill and decode"')
    text = read_log("vh26.log")
    assert detect_family(text) == "vllm"
    assert reads(text)[:2] == (True, "pd_transfer")
    worded = "AssertionError: Number of KV layers must match between prefill and decode\n"
    assert reads(worded)[:2] == (True, "pd_transfer")
    # another assertion of the same words' shape is not this rule's
    assert diagnose("AssertionError: Number of layers must match\n").kind != "pd_transfer"


# --- phases --------------------------------------------------------------------------------

def test_prometheus_counters_of_served_work_are_vllms_and_say_it_served():
    """vh14: rows of vLLM's /metrics series ("vllm:spec_decode_num_accepted_tokens_per_pos_total{...} | 7",
    v1/spec_decode/metrics.py:231, :255 (0.34.0)): vLLM's names, and a counter of served work above 0
    is a server that served; read as SGLang's, launch, before."""
    assert_in_wheel("0.34.0", "vllm/v1/spec_decode/metrics.py", '"vllm:spec_decode_num_accepted_tokens_per_pos"')
    text = read_log("vh14.log")
    assert detect_family(text) == "vllm"
    assert reads(text) == (False, None, "serving")
    # Prometheus' own text format, no table
    plain = 'vllm:generation_tokens_total{model_name="m"} 1234.0\n'
    assert reads(plain) == (False, None, "serving")
    # a counter still at 0 served nothing
    assert reads('vllm:generation_tokens_total{model_name="m"} 0.0\n')[2] != "serving"


def test_a_drafters_capture_bar_names_what_it_captures():
    """vh15: "Capturing prefill CUDA graphs (FULL): 90%| 44/49" (the drafter's bar,
    v1/worker/gpu/spec_decode/autoregressive/speculator.py:139 (0.34.0)), then an illegal memory
    access: the fault came while graphs were captured; read serving before."""
    assert_in_wheel("0.34.0", "vllm/v1/worker/gpu/spec_decode/autoregressive/speculator.py",
                    'progress_bar_desc="Capturing prefill CUDA graphs"')
    assert reads(read_log("vh15.log")) == (True, "cuda_illegal_access", "graph_capture")
    mtp = read_log("vh15.log").replace("Capturing prefill CUDA graphs (FULL)", "Capturing multi-module MTP CUDA graphs")
    assert reads(mtp)[2] == "graph_capture"
    # a bar of something else before the same fault is no capture
    other = read_log("vh15.log").replace("Capturing prefill CUDA graphs (FULL)", "Processed prompts")
    assert reads(other)[2] != "graph_capture"


def test_a_docker_timestamp_before_vllms_stamp_is_no_journal_line_and_the_call_above_a_cut_counts():
    """vh06: `docker logs -t` puts "2025-04-07T09:11:20.834019363Z " before vLLM's "ERROR 04-07
    02:11:20 [core.py:390]"; the journal reading took "ERROR" for a time zone and peeled the line
    to "11:20 [core.py:390] ...", so no frame was read. And the paste starts below the frame line of
    the call `self.collective_rpc("execute_model", ...)` (v1/executor/abstract.py: the executor runs
    the worker method by its name): that code line is read with the frames, so the phase is serving."""
    text = read_log("vh06.log")
    assert reads(text) == (True, "unknown", "serving")
    # the same lines with the model runner's method at startup: not serving
    startup = text.replace('collective_rpc("execute_model"', 'collective_rpc("determine_available_memory"')
    assert reads(startup)[2] == "memory_pool"
    # a journal line whose zone is letters still is one
    from ddlab.diagnosis.logtext import split_lines
    line = split_lines("2025-04-07 09:11:20 CEST gpu01 vllm[123]: hello\n")[0]
    assert (line.ident, line.pid, line.msg) == ("vllm", "123", "hello")
