"""The rules that held-out round 26 of the vLLM corpus (w2601-w2616, measured once at 9258518 with its logs
af8627c) showed missing: Triton refusing an fp8 type the GPU's architecture lacks (w2601), Triton finding no C
compiler, its traceback cut on the raise line (w2609), the base Platform's NotImplementedError of a vLLM that
detected no device platform (w2610), and the engine's refusal of one request's prompt longer than
max_model_len, in a paste copied from HTML source (w2615).

Each rule is general and cited from the source that prints its text (Triton's wheels; vLLM's): the log that
showed it is one case, a text written from the source in another form is the other, and a text beside it that
the rule must not take is a third. The source checks skip where the wheels are not unpacked (CI); the readings
run everywhere.
"""

from __future__ import annotations

from fieldkit import library_text_test, read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_NO_CC = 'raise RuntimeError(\n                "Failed to find C compiler. Please specify via CC environment'
LIBRARY_SOURCES = [
    # Triton lowering an fp8 type the target lacks; fp8e4nv only from sm89 on NVIDIA GPUs
    ("triton", "3.4.0", "triton/language/core.py",
     "raise ValueError(f'type {self} not supported in this architecture. '"),
    ("triton", "3.5.0", "triton/language/core.py",
     "raise ValueError(f'type {self} not supported in this architecture. '"),
    ("triton", "3.4.0", "triton/backends/nvidia/compiler.py",
     'if capability >= 89:\n                supported_fp8_dtypes.add("fp8e4nv")'),
    # Triton's _build with no C compiler (the raise its only one in _build; the message on the next line)
    ("triton", "3.4.0", "triton/runtime/build.py", _NO_CC),
    ("triton", "3.5.0", "triton/runtime/build.py", _NO_CC),
]

SOURCES = [
    # UnspecifiedPlatform: no platform plugin active, the base Platform's methods raise
    ("0.7.3", "vllm/platforms/__init__.py",
     '"No platform detected, vLLM is running on UnspecifiedPlatform")'),
    ("0.7.3", "vllm/platforms/interface.py",
     'def is_async_output_supported(cls, enforce_eager: Optional[bool]) -> bool:\n        """\n'
     '        Check if the current platform supports async output.\n        """\n'
     '        raise NotImplementedError'),
    ("0.7.3", "vllm/config.py", 'raise RuntimeError("Failed to infer device type")'),
    ("0.34.0", "vllm/config/device.py", '"Failed to infer device type, please set "'),
    # one request's prompt over max_model_len, and V0's async engine handing it to that request
    ("0.7.3", "vllm/engine/llm_engine.py", 'f"The prompt (total length {len(prompt_ids)}) is too long "'),
    ("0.34.0", "vllm/v1/engine/input_processor.py", 'f"The {prompt_type} prompt (length {prompt_len}) is "'),
    ("0.30.0", "vllm/v1/engine/input_processor.py",
     'f"longer than the maximum model length of {max_prompt_len}. "'),
    ("0.7.3", "vllm/engine/async_llm_engine.py",
     "except ValueError as e:\n                # TODO: use a vLLM specific error for failed validation"),
]

test_each_rules_library_text_is_in_its_wheel = library_text_test(LIBRARY_SOURCES)
test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)

_TRITON_COMPILE = ("triton/compiler/compiler.py", 276, "compile",
                   "module = src.make_ir(options, codegen_fns, module_map, context)")


# --- w2601: Triton refusing fp8e4nv on an sm80 GPU ----------------------------------------------------------

def test_an_fp8_type_the_architecture_lacks_is_unsupported_gpu():
    """w2601: the engine core re-raising a worker's "Worker failed with error 'at 1:0: def fused_moe_kernel(
    ... ValueError("type fp8e4nv not supported in this architecture. ..." (an A100, cut mid-tuple); read
    unknown before. Triton's whole CompilationError reads the same, in vLLM's log and in SGLang's."""
    assert reads(read_log("w2601.log"))[:2] == (True, "unsupported_gpu")
    assert vllm_signature(read_log("w2601.log")) == "vllm_unsupported_gpu"
    whole = vllm_traceback(_TRITON_COMPILE, exc=(
        "triton.compiler.errors.CompilationError: at 1:0:\ndef fused_moe_kernel(\n^\n"
        "ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
        "('fp8e4b15', 'fp8e5')\")"))
    assert reads(whole)[:2] == (True, "unsupported_gpu")
    sglang = ("[2026-12-04 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
              "ValueError: type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
              "('fp8e4b15', 'fp8e5')\n")
    assert reads(sglang, "sglang")[:2] == (True, "unsupported_gpu")


def test_another_triton_compile_error_is_still_kernel_compile():
    """Triton's CompilationError of something else (a shape it cannot lower) stays a failed build."""
    other = vllm_traceback(_TRITON_COMPILE, exc=(
        "triton.compiler.errors.CompilationError: at 12:4:\n    acc = tl.dot(a, b)\n    ^\n"
        "AssertionError('All values in both first input shape ([constexpr[16], constexpr[8]]) and second "
        "input shape ([constexpr[8], constexpr[16]]) must be >= 16!')"))
    assert reads(other)[:2] == (True, "kernel_compile")


# --- w2609: Triton with no C compiler, cut on the raise line ------------------------------------------------

_DRIVER = ("triton/backends/nvidia/driver.py", 57, "compile_module_from_src",
           "so = _build(name, src_path, tmpdir, library_dirs(), include_dir, libraries)")
_RAISE = ("triton/runtime/build.py", 32, "_build", "raise RuntimeError(")


def test_no_c_compiler_cut_on_the_raise_line_is_kernel_compile():
    """w2609: the engine core's traceback through Triton's driver set-up, cut on triton/runtime/build.py's
    raise line ("Failed to find C compiler. Please", triton 3.2.0's one-line form); read unknown before. The
    newer form (the message on the line after ``raise RuntimeError(``) and the whole exception line read the
    same."""
    assert reads(read_log("w2609.log"))[:2] == (True, "kernel_compile")
    assert vllm_signature(read_log("w2609.log")) == "vllm_triton_no_c_compiler_cut"
    assert vllm_signature(vllm_traceback(_DRIVER, _RAISE, exc=None)) == "vllm_triton_no_c_compiler_cut"
    whole = vllm_traceback(_DRIVER, _RAISE, exc=(
        "RuntimeError: Failed to find C compiler. Please specify via CC environment variable or set "
        "triton.knobs.build.impl."))
    assert reads(whole)[:2] == (True, "kernel_compile")
    assert vllm_signature(whole) == "vllm_kernel_compile"


def test_a_traceback_cut_elsewhere_in_tritons_build_is_not_it():
    """Cut on _load_module_from_path's raise (a module built but not loadable), or above the raise line in
    _build, it is no missing compiler."""
    loading = vllm_traceback(_DRIVER, ("triton/runtime/build.py", 64, "_load_module_from_path",
                                       'raise RuntimeError(f"Failed to load newly compiled {name} from '
                                       '{path}")'), exc=None)
    assert vllm_signature(loading) != "vllm_triton_no_c_compiler_cut"
    above = vllm_traceback(_DRIVER, exc=None)
    assert vllm_signature(above) != "vllm_triton_no_c_compiler_cut"


# --- w2610: vLLM on UnspecifiedPlatform ---------------------------------------------------------------------

_BASE_PLATFORM = ("vllm/platforms/interface.py", 204, "is_async_output_supported",
                  "raise NotImplementedError")
_CONFIG = ("vllm/config.py", 684, "verify_async_output_proc",
           "if not current_platform.is_async_output_supported(self.enforce_eager):")


def test_the_base_platforms_not_implemented_is_no_platform_detected():
    """w2610: the API server's config build ending in the base Platform's is_async_output_supported, a bare
    NotImplementedError (every built-in platform overrides it: vLLM runs on UnspecifiedPlatform, no platform
    detected), then the MQLLMEngine's copy, cut; read unknown before. The device config's own words for it,
    "Failed to infer device type", read the same."""
    assert reads(read_log("w2610.log")) == (True, "dependency_mismatch", "launch")
    assert vllm_signature(read_log("w2610.log")) == "vllm_no_platform"
    written = vllm_traceback(_CONFIG, _BASE_PLATFORM, exc="NotImplementedError")
    assert vllm_signature(written) == "vllm_no_platform"
    words = vllm_traceback(("vllm/config/device.py", 47, "__post_init__", "raise RuntimeError("), exc=(
        "RuntimeError: Failed to infer device type, please set the environment variable "
        "`VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue."))
    assert vllm_signature(words) == "vllm_no_platform"
    assert reads(words)[:2] == (True, "dependency_mismatch")


def test_a_platform_lacking_one_method_is_not_it():
    """A base method some built-in platforms leave alone (get_current_memory_usage: the CPU and TPU
    platforms, 0.7.3), or a NotImplementedError raised by a platform's own code, says nothing of detection."""
    memory = vllm_traceback(("vllm/platforms/interface.py", 316, "get_current_memory_usage",
                             "raise NotImplementedError"), exc="NotImplementedError")
    assert vllm_signature(memory) != "vllm_no_platform"
    own = vllm_traceback(("vllm/platforms/cpu.py", 120, "get_device_name", "raise NotImplementedError"),
                         exc="NotImplementedError")
    assert vllm_signature(own) != "vllm_no_platform"


# --- w2615: one request's prompt longer than max_model_len, in Xinference's HTML-escaped paste ------------

_ASYNC = ("vllm/engine/async_llm_engine.py", 745, "engine_step",
          "await self.engine.add_request_async(**new_request)")


def test_a_prompt_longer_than_max_model_len_is_one_requests_error():
    """w2615: V0's async engine refusing one request in _validate_model_input ("The decoder prompt (length
    17772) is longer than the maximum model length of 16384."), handed to that request's stream (xoscar's
    [address=..., pid=...] tag in the message); read a crash before. V1's input processor words it the same;
    releases before prompt_type name it "The prompt (total length N) is too long to fit into the model"."""
    assert reads(read_log("w2615.log")) == (False, "request_error", "serving")
    assert vllm_signature(read_log("w2615.log")) == "vllm_request_refused"
    older = vllm_traceback(_ASYNC, ("vllm/engine/llm_engine.py", 1960, "_validate_model_inputs",
                                    "raise ValueError("),
                           exc="ValueError: The prompt (total length 9000) is too long to fit into the model "
                               "(context length 8192). Make sure that `max_model_len` is no smaller than the "
                               "number of text tokens.")
    assert reads(older)[:2] == (False, "request_error")
    v1 = ("ERROR 12-01 10:00:00 [serving_chat.py:200] Error in preprocessing prompt inputs\n"
          "ValueError: The decoder prompt (length 5000) plus the number of requested output tokens (at least "
          "1) is longer than the maximum model length of 5000. Make sure that `max_model_len` is no smaller "
          "than the number of text tokens (prompt + requested output tokens).\n")
    assert reads(v1)[:2] == (False, "request_error")


def test_max_model_len_over_the_models_is_not_a_request():
    """The config's own refusal of a max_model_len longer than the model's, at launch, is no request's."""
    launch = vllm_traceback(("vllm/config.py", 3100, "_get_and_verify_max_len", "raise ValueError("), exc=(
        "ValueError: User-specified max_model_len (32768) is greater than the derived max_model_len "
        "(max_position_embeddings=4096 or model_max_length=None in model's config.json)."))
    assert vllm_signature(launch) != "vllm_request_refused"
    assert reads(launch)[0] is True


def test_a_traceback_pasted_from_html_source_reads_as_printed():
    """A paste copied from a page's HTML source keeps its character references (File &quot;path&quot;): the
    frames read as Python printed them, so a rule that reads a frame (Triton's _build, cut) still sees it."""
    escaped = vllm_traceback(_DRIVER, _RAISE, exc=None).replace('"', "&quot;")
    assert vllm_signature(escaped) == "vllm_triton_no_c_compiler_cut"
    assert reads(escaped)[:2] == (True, "kernel_compile")
