"""The rules that held-out round 26 of the vLLM corpus (w2601-w2616, measured once at 9258518 with its logs
af8627c) showed missing: Triton refusing an fp8 type the GPU's architecture lacks (w2601) and Triton finding no
C compiler, its traceback cut on the raise line (w2609).

Each rule is general and cited from the source that prints its text (Triton's wheels; vLLM's): the log that
showed it is one case, a text written from the source in another form is the other, and a text beside it that
the rule must not take is a third. The source checks skip where the wheels are not unpacked (CI); the readings
run everywhere.
"""

from __future__ import annotations

from fieldkit import library_text_test, read_log, reads, vllm_signature, vllm_traceback

LIBRARY_SOURCES = [
    # Triton lowering an fp8 type the target lacks; fp8e4nv only from sm89 on NVIDIA GPUs
    ("triton", "3.4.0", "triton/language/core.py",
     "raise ValueError(f'type {self} not supported in this architecture. '"),
    ("triton", "3.5.0", "triton/language/core.py",
     "raise ValueError(f'type {self} not supported in this architecture. '"),
    ("triton", "3.4.0", "triton/backends/nvidia/compiler.py",
     'if capability >= 89:\n                supported_fp8_dtypes.add("fp8e4nv")'),
    # Triton's _build with no C compiler (the raise its only one in _build; the message on the next line)
    ("triton", "3.4.0", "triton/runtime/build.py",
     'raise RuntimeError(\n                "Failed to find C compiler. Please specify via CC environment variable'),
    ("triton", "3.5.0", "triton/runtime/build.py",
     'raise RuntimeError(\n                "Failed to find C compiler. Please specify via CC environment variable'),
]

test_each_rules_library_text_is_in_its_wheel = library_text_test(LIBRARY_SOURCES)

_TRITON_COMPILE = ("triton/compiler/compiler.py", 276, "compile",
                   "module = src.make_ir(options, codegen_fns, module_map, context)")


# --- w2601: Triton refusing fp8e4nv on an sm80 GPU -------------------------------------------------------------

def test_an_fp8_type_the_architecture_lacks_is_unsupported_gpu():
    """w2601: the engine core re-raising a worker's "Worker failed with error 'at 1:0: def fused_moe_kernel(
    ... ValueError("type fp8e4nv not supported in this architecture. ..." (an A100, cut mid-tuple); read
    unknown before. Triton's whole CompilationError reads the same, in vLLM's log and in SGLang's."""
    assert reads(read_log("w2601.log"))[:2] == (True, "unsupported_gpu")
    assert vllm_signature(read_log("w2601.log")) == "vllm_unsupported_gpu"
    whole = vllm_traceback(_TRITON_COMPILE, exc=(
        "triton.compiler.errors.CompilationError: at 1:0:\ndef fused_moe_kernel(\n^\nValueError(\"type fp8e4nv "
        "not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")"))
    assert reads(whole)[:2] == (True, "unsupported_gpu")
    sglang = ("[2026-12-04 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
              "ValueError: type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
              "('fp8e4b15', 'fp8e5')\n")
    assert reads(sglang, "sglang")[:2] == (True, "unsupported_gpu")


def test_another_triton_compile_error_is_still_kernel_compile():
    """Triton's CompilationError of something else (a shape it cannot lower) stays a failed build."""
    other = vllm_traceback(_TRITON_COMPILE, exc=(
        "triton.compiler.errors.CompilationError: at 12:4:\n    acc = tl.dot(a, b)\n    ^\n"
        "AssertionError('All values in both first input shape ([constexpr[16], constexpr[8]]) and second input "
        "shape ([constexpr[8], constexpr[16]]) must be >= 16!')"))
    assert reads(other)[:2] == (True, "kernel_compile")


# --- w2609: Triton with no C compiler, cut on the raise line ---------------------------------------------------

_DRIVER = ("triton/backends/nvidia/driver.py", 57, "compile_module_from_src",
           "so = _build(name, src_path, tmpdir, library_dirs(), include_dir, libraries)")


def test_no_c_compiler_cut_on_the_raise_line_is_kernel_compile():
    """w2609: the engine core's traceback through Triton's driver set-up, cut on triton/runtime/build.py's
    raise line ("Failed to find C compiler. Please", triton 3.2.0's one-line form); read unknown before. The
    newer form (the message on the line after ``raise RuntimeError(``) and the whole exception line read the
    same."""
    assert reads(read_log("w2609.log"))[:2] == (True, "kernel_compile")
    assert vllm_signature(read_log("w2609.log")) == "vllm_triton_no_c_compiler_cut"
    newer = vllm_traceback(_DRIVER, ("triton/runtime/build.py", 32, "_build", "raise RuntimeError("), exc=None)
    assert vllm_signature(newer) == "vllm_triton_no_c_compiler_cut"
    whole = vllm_traceback(_DRIVER, ("triton/runtime/build.py", 32, "_build", "raise RuntimeError("), exc=(
        "RuntimeError: Failed to find C compiler. Please specify via CC environment variable or set "
        "triton.knobs.build.impl."))
    assert reads(whole)[:2] == (True, "kernel_compile")
    assert vllm_signature(whole) == "vllm_kernel_compile"


def test_a_traceback_cut_elsewhere_in_tritons_build_is_not_it():
    """Cut on _load_module_from_path's raise (a module built but not loadable), or above the raise line in
    _build, it is no missing compiler."""
    loading = vllm_traceback(_DRIVER, ("triton/runtime/build.py", 64, "_load_module_from_path",
                                       'raise RuntimeError(f"Failed to load newly compiled {name} from {path}")'),
                             exc=None)
    assert vllm_signature(loading) != "vllm_triton_no_c_compiler_cut"
    above = vllm_traceback(_DRIVER, exc=None)
    assert vllm_signature(above) != "vllm_triton_no_c_compiler_cut"
