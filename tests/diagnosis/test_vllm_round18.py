"""The rules that held-out round 18 of the vLLM corpus (vs01-vs28, measured once at 64f1195) showed
missing.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.6.4.post1, 0.7.3, 0.11.1,
0.30.0, 0.33.0, 0.34.0, the compiled FlashAttention extension in them; Triton 3.4.0's CUDA driver glue and its
compiled binding; CUDA's driver header): the log that showed it is one case, a text written from the source in
another form is the other, and a text beside it that the rule must not take is a third. The source checks skip
where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import (STAMP, VLLM_WHEELS, assert_in_library_wheel, read_log, reads, vllm_signature,
                     vllm_traceback, wheel_text_test)


_PARSER = 'f"invalid tool call parser: {args.tool_call_parser} "'
_NO_CONFIG = '"Could not detect config format for no config file found. "'
_CONFIG = "vllm/transformers_utils/config.py"
SOURCES = [
    # V0's engine logs a KeyError's str (the quoted key) as its record's message; the bitsandbytes quant state
    ("0.6.4.post1", "vllm/engine/multiprocessing/engine.py", "        logger.exception(e)\n"),
    ("0.7.3", "vllm/engine/multiprocessing/engine.py", "        logger.exception(e)\n"),
    ("0.6.4.post1", "vllm/model_executor/model_loader/loader.py",
     '"absmax", "quant_map", "nested_absmax", "nested_quant_map",'),
    # the OpenAI server's check of --tool-call-parser
    ("0.6.4.post1", "vllm/entrypoints/openai/api_server.py", 'raise KeyError(f"invalid tool call parser: '),
    ("0.7.3", "vllm/entrypoints/openai/api_server.py", 'raise KeyError(f"invalid tool call parser: '),
    ("0.11.1", "vllm/entrypoints/openai/api_server.py", _PARSER),
    ("0.30.0", "vllm/entrypoints/launchers/launcher.py", _PARSER),
    ("0.33.0", "vllm/entrypoints/common/cli_args.py", _PARSER),
    ("0.34.0", "vllm/entrypoints/common/cli_args.py", _PARSER),
    ("0.34.0", "vllm/entrypoints/common/cli_args.py",
     'f"(chose from {{ {\',\'.join(valid_tool_parses)} }})"'),
    # get_config finding no config file
    ("0.11.1", _CONFIG, _NO_CONFIG),
    ("0.30.0", _CONFIG, _NO_CONFIG),
    ("0.33.0", _CONFIG, _NO_CONFIG),
    ("0.34.0", _CONFIG, _NO_CONFIG),
    # the stream generator catches, logs and answers the client (vs25's second look)
    ("0.6.4.post1", "vllm/entrypoints/openai/serving_chat.py",
     'logger.exception("Error in chat completion stream generator.")\n'
     "            data = self.create_streaming_error_response(str(e))"),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


def _assert_in_binary(path: Path, text: str) -> None:
    """``text`` in a compiled file's bytes (an extension's strings), skipping where it is not unpacked."""
    if not path.exists():
        pytest.skip(f"{path} not unpacked here")
    assert text.encode() in path.read_bytes()


@pytest.mark.parametrize("path", ["0.6.4.post1/vllm/vllm_flash_attn/vllm_flash_attn_c.abi3.so",
                                  "0.34.0/vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so"])
def test_flash_attentions_gpu_check_is_in_vllms_extension(path):
    _assert_in_binary(VLLM_WHEELS / path, "FlashAttention only supports Ampere GPUs or newer.")


def test_tritons_texts_are_tritons_own():
    assert_in_library_wheel("triton", "3.4.0", "triton/backends/nvidia/driver.c",
                            'const char *prefix = "Triton Error [CUDA]: ";')
    assert_in_library_wheel("triton", "3.4.0", "triton/backends/nvidia/driver.c",
                            "cuModuleLoadData(&mod, data)")
    for wheel in ("triton-3.4.0", "triton-ascend-3.2.0"):
        _assert_in_binary(Path("/work/wheels") / wheel / "triton/_C/libtriton.so", "PassManager::run failed")
    header = Path("/usr/local/cuda-13.0/include/cuda.h")
    if not header.exists():
        pytest.skip(f"{header} not here")
    assert "This indicates that the device kernel image is invalid." in header.read_text()


# --- V0's engine message: a checkpoint tensor's name, quoted (a KeyError's str) ----------------------------

_V0 = "ERROR 12-09 00:49:29 engine.py:366] "
_RUN_MP = ("vllm/engine/multiprocessing/engine.py", 357, "run_mp_engine",
           "engine = MQLLMEngine.from_engine_args(engine_args=engine_args,")


def _engine_record(message: str) -> str:
    bar = "Loading safetensors checkpoint shards:   0% Completed | 0/8 [00:00<?, ?it/s]\n"
    return bar + _V0 + message + "\n" + vllm_traceback(_RUN_MP, exc=None, head=_V0)


def test_a_checkpoint_tensors_name_as_v0s_engine_message_is_weights_unreadable():
    """vs04: "'layers.0.mlp.down_proj.weight.absmax'" logged by run_mp_engine (a bitsandbytes checkpoint's
    quant state), its traceback cut in from_engine_args; read unknown before."""
    assert reads(read_log("vs04.log")) == (True, "weights_unreadable", "load_weights")
    assert vllm_signature(read_log("vs04.log")) == "vllm_weight_name_in_engine_message"
    for key in ("'model.layers.3.self_attn.qkv_proj.weight.quant_map'", "'lm_head.qweight'",
                "'layers.0.mlp.experts.w2_weight_scale_inv'"):
        assert reads(_engine_record(key))[:2] == (True, "weights_unreadable"), key


def test_another_quoted_key_as_v0s_engine_message_is_not_a_tensor():
    """A KeyError of a config key ('model_type'), or a module's name with no tensor's suffix, is no checkpoint
    tensor: not this rule."""
    for key in ("'model_type'", "'layers.0.mlp'", "'rope_scaling.factor'"):
        assert vllm_signature(_engine_record(key)) != "vllm_weight_name_in_engine_message", key


# --- the OpenAI server's --tool-call-parser check -----------------------------------------------------------

def test_an_unknown_tool_call_parser_is_a_bad_argument_and_names_vllm():
    """vs19: the check's KeyError alone, one line (no other mark of either server); read unknown, as SGLang's,
    before: its text is vLLM's alone, so it names the server."""
    assert reads(read_log("vs19.log")) == (True, "bad_argument", "launch")
    assert diagnose(read_log("vs19.log")).family == "vllm"
    assert vllm_signature(read_log("vs19.log"), None) == "vllm_tool_parser_unknown"
    tagged = vllm_traceback(("vllm/entrypoints/common/cli_args.py", 629, "validate_parsed_serve_args",
                             "raise KeyError("),
                            exc="KeyError: 'invalid tool call parser: qwen4 (chose from { hermes,mistral })'",
                            head="(APIServer pid=1) ")
    assert reads(tagged)[:2] == (True, "bad_argument")


def test_sglangs_own_tool_parser_refusal_and_a_parsers_runtime_error_are_not_it():
    """SGLang's refusal ("Unsupported tool_call_parser: X", function_call_parser.py:150 (0.5.23)) stays
    SGLang's; a parser's error extracting one response's calls is no launch refusal."""
    sglang = "ValueError: Unsupported tool_call_parser: kimi_k2\n"
    assert diagnose(sglang).family == "sglang" and vllm_signature(sglang, None) != "vllm_tool_parser_unknown"
    runtime = STAMP + "Error in extracting tool call from response.\n"
    assert vllm_signature(runtime) != "vllm_tool_parser_unknown"


# --- a model path with no config file ----------------------------------------------------------------------

_API = "(APIServer pid=48263) "
_GET_CONFIG = ("vllm/transformers_utils/config.py", 948, "get_config", "raise ValueError(")


def test_no_config_file_is_model_not_found():
    """vs20: get_config's "Could not detect config format for no config file found." (a diffusers repo), the
    re-raise cut after its first line; read unknown before."""
    assert reads(read_log("vs20.log")) == (True, "model_not_found", "launch")
    assert vllm_signature(read_log("vs20.log")) == "vllm_no_config_file"
    whole = vllm_traceback(_GET_CONFIG, exc="ValueError: Could not detect config format for no config file "
                           "found. With config_format 'auto', ensure your model has either config.json (HF "
                           "format) or params.json (Mistral format).", head=_API)
    assert reads(whole)[:2] == (True, "model_not_found")


def test_another_config_format_error_is_not_it():
    """A config that was found but is of a format vLLM has no parser for is another refusal."""
    other = vllm_traceback(_GET_CONFIG, exc="ValueError: Unsupported config format: yaml", head=_API)
    assert vllm_signature(other) != "vllm_no_config_file"


# --- FlashAttention refusing a GPU older than Ampere -------------------------------------------------------

def test_flash_attention_refusing_a_pre_ampere_gpu_is_unsupported_gpu():
    """vs10: V0's "Error in model execution (input dumped to ...): FlashAttention only supports Ampere GPUs
    or newer." (a Turing GPU); read unknown before."""
    assert reads(read_log("vs10.log"))[:2] == (True, "unsupported_gpu")
    assert vllm_signature(read_log("vs10.log")) == "vllm_flash_attn_pre_ampere"
    v1 = vllm_traceback(("vllm/v1/attention/backends/flash_attn.py", 600, "forward",
                         "flash_attn_varlen_func("),
                        exc="RuntimeError: FlashAttention only supports Ampere GPUs or newer.")
    assert reads(v1)[:2] == (True, "unsupported_gpu")


def test_the_selectors_notice_for_volta_and_turing_is_no_crash():
    """vLLM's attention selector tells it picks another backend on such a GPU (attention/selector.py:262
    (0.6.4.post1)): no crash."""
    notice = ("INFO 01-11 13:09:00 selector.py:261] Cannot use FlashAttention-2 backend for Volta and Turing "
              "GPUs.\n")
    assert reads(notice)[0] is False


# --- Triton: a kernel image the driver refuses, a pass pipeline that fails -------------------------------

_COMPILER = ("triton/compiler/compiler.py", 390, "_init_handles",
             "self.module, self.function, self.n_regs, self.n_spills = driver.active.utils.load_binary(")


def test_a_triton_kernel_image_the_driver_refuses_is_kernel_compile():
    """vs24: inductor's precompile loading a Triton binary, "RuntimeError: Triton Error [CUDA]: device kernel
    image is invalid" under BackendCompilerFailed; read unknown before."""
    assert reads(read_log("vs24.log"))[:2] == (True, "kernel_compile")
    assert vllm_signature(read_log("vs24.log")) == "vllm_triton_invalid_image"
    whole = vllm_traceback(_COMPILER, exc="RuntimeError: Triton Error [CUDA]: device kernel image is invalid")
    assert reads(whole)[:2] == (True, "kernel_compile")


def test_other_cuda_errors_are_not_a_refused_triton_image():
    """Triton's prefix with another CUDA error, or torch's own error for an invalid image (a prebuilt kernel),
    are not this rule."""
    oom = vllm_traceback(_COMPILER, exc="RuntimeError: Triton Error [CUDA]: out of memory")
    assert vllm_signature(oom) != "vllm_triton_invalid_image"
    torch = vllm_traceback(("vllm/_custom_ops.py", 10, "f", "torch.ops._C.f()"),
                           exc="RuntimeError: CUDA error: device kernel image is invalid")
    assert vllm_signature(torch) != "vllm_triton_invalid_image"


def test_a_failed_triton_pass_pipeline_is_kernel_compile():
    """vs26: "torch._inductor.exc.InductorError: RuntimeError: PassManager::run failed" in V0's engine record,
    workers killed; read unknown before. The log names no GPU (the label's unsupported_gpu is disputed)."""
    assert reads(read_log("vs26.log"))[:2] == (True, "kernel_compile")
    assert vllm_signature(read_log("vs26.log")) == "vllm_triton_pass_failed"
    plain = vllm_traceback(("triton/compiler/compiler.py", 297, "compile",
                            "next_module = compile_ir(module, metadata)"),
                           ("triton/backends/amd/compiler.py", 250, "make_llir", "pm.run(mod)"),
                           exc="RuntimeError: PassManager::run failed")
    assert reads(plain)[:2] == (True, "kernel_compile")


def test_another_inductor_error_is_not_a_failed_pass_pipeline():
    other = vllm_traceback(("torch/_inductor/compile_fx.py", 100, "compile_fx", "return f()"),
                           exc="torch._inductor.exc.InductorError: RuntimeError: CUDA driver error: out of "
                               "memory")
    assert vllm_signature(other) != "vllm_triton_pass_failed"


def test_vs25_reads_as_one_requests_error():
    """vs25 (disputed, kept as ddlab reads it): Triton's MLIR failure for compute capability 7.0, then the
    stream generator's "Error in chat completion stream generator." and nothing after it: one request's
    error, no crash shown."""
    assert reads(read_log("vs25.log"))[:2] == (False, "request_error")
