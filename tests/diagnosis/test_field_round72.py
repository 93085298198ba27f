"""Held-out round 72 (issue 24): Triton's launch refused on ROCm, transformers' fallback refusing an architecture.

Round 72 (h72001-h72013; excerpts of issue and pull-request threads) was measured once on main at fca87be (with the
round's logs, 8aff804): crashed 13/13, kind 10/13, phase 6/6. docs/diagnosis.md, "Held-out round 72", tells the
round. The three misses were ddlab's:

- h72001 and h72002 (one failure, two pastes), Grok's fused_rmsnorm Triton kernel ending in "RuntimeError: Triton
  Error [HIP]:  Code: 1, Messsage: invalid argument": Triton's generated launcher checks hipModuleLaunchKernel with
  gpuAssert ("%s Code: %d, Messsage: %s", triton 3.4.0 backends/amd/driver.py:384, the launch :395-399); code 1,
  hipErrorInvalidValue, is the launch refusing what it was given (the pointer check turns its own invalid value into
  another text, :435-438). The CUDA launcher prints "Triton Error [CUDA]: invalid argument" for the same refusal
  (backends/nvidia/driver.py:268, cuLaunchKernelEx :362). Read as ``triton_launch_refused``
  (device_crashes/compilers.py): kernel_config_unsupported, not where the frames are the loader's (_init_handles,
  load_binary: amd driver.c:105 prints the same text for loadBinary's checks, :169-170).
- h72007, "ValueError: XLMRobertaForSequenceClassification has no SGlang implementation and the Transformers
  implementation is not compatible with SGLang.": resolve_transformers_arch's refusal, with the default
  `--model-impl auto`, of an architecture SGLang's registry lacks and whose transformers class is not backend-
  compatible (0.4.10.post2 model_loader/utils.py:67-69, 0.5.10 :180-181; transformers 4.56.1 modeling_utils.py:5988-
  5989). Read as ``transformers_fallback_refused`` (crashes/kinds/models.py): arch_unsupported.

No label was disputed. Each positive test here fails on 8aff804.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, folded_round, \
    said

_IDS = folded_round(REAL_MANIFEST, 72)


def test_round72_is_folded_into_work_with_no_label_disputed():
    assert _IDS == [f"h720{n:02d}" for n in range(1, 14)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h72001", "triton_launch_refused"),
    ("h72002", "triton_launch_refused"),
    ("h72007", "transformers_fallback_refused"),
], ids=lambda v: v)
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h72001, h72002: Triton's launcher, its launch refused with an invalid argument -----------------------------

_HIP_REFUSED = "RuntimeError: Triton Error [HIP]:  Code: 1, Messsage: invalid argument\n"
_JIT_340 = ('  File "/usr/local/lib/python3.12/dist-packages/triton/runtime/jit.py", line 390, in <lambda>\n'
            "    return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)\n"
            '  File "/usr/local/lib/python3.12/dist-packages/triton/runtime/jit.py", line 617, in run\n'
            "    kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, kernel.packed_metadata, "
            "launch_metadata,\n")
_STAMPED = ("[2025-04-08 09:12:44 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/layers/elementwise.py", line 260, in fused_rmsnorm\n'
            "    fused_rmsnorm_kernel[(bs,)](\n")


# the same refusal in other forms, written from the source: triton 3.4.0's AMD launcher (its __call__ passes the
# cooperative-grid flag) under SGLang's scheduler, its CUDA launcher's text, the bare exception line
@pytest.mark.parametrize("text", [
    _STAMPED + _JIT_340
    + '  File "/usr/local/lib/python3.12/dist-packages/triton/backends/amd/driver.py", line 599, in __call__\n'
    "    self.launch(self.launch_cooperative_grid, *args)\n" + _HIP_REFUSED,
    _STAMPED + _JIT_340
    + '  File "/usr/local/lib/python3.12/dist-packages/triton/backends/nvidia/driver.py", line 708, in __call__\n'
    "    self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid, self.launch_pdl,\n"
    "RuntimeError: Triton Error [CUDA]: invalid argument\n",
    _HIP_REFUSED,
], ids=["triton-3.4.0-amd", "triton-3.4.0-cuda", "bare"])
def test_tritons_launch_refused_is_a_kernel_config_this_gpu_does_not_take(text):
    assert said(text)[:3] == (True, "kernel_config_unsupported", "triton_launch_refused")


# near misses: the loader's check (the same glue on the binary Triton built, under _init_handles), another HIP code
# of the launch (a capture in progress: h55003's form), CUDA's illegal access through Triton, prose quoting the text
@pytest.mark.parametrize("text", [
    _JIT_340 + '  File "/usr/local/lib/python3.12/dist-packages/triton/compiler/compiler.py", line 490, in '
    "_init_handles\n    self.module, self.function, self.n_regs, self.n_spills, self.n_max_threads = "
    "driver.active.utils.load_binary(\n" + _HIP_REFUSED,
    _JIT_340 + "RuntimeError: Triton Error [HIP]: Code: 900, operation not permitted when stream is capturing\n",
    _JIT_340 + "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered\n",
    "the kernel fails with Triton Error [HIP]:  Code: 1, Messsage: invalid argument on my MI250, any idea?\n",
], ids=["loader", "capturing", "illegal-access", "prose"])
def test_other_triton_errors_are_not_its_launch_refused(text):
    assert said(text)[2] != "triton_launch_refused"


# --- h72007: transformers' fallback refusing a class SGLang cannot drive ---------------------------------------

_REFUSED = ("ValueError: XLMRobertaForSequenceClassification has no SGlang implementation and the Transformers "
            "implementation is not compatible with SGLang.\n")


# the same raise in other forms, written from 0.5.10's source: the scheduler's traceback through the model load,
# another architecture's name
@pytest.mark.parametrize("text", [
    "[2025-10-02 08:01:15] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/loader.py", line 737, in load_model\n'
    "    model = _initialize_model(\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/loader.py", line 263, in _initialize_model\n'
    "    model_class, _ = get_model_architecture(model_config)\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/utils.py", line 220, in get_model_architecture\n'
    "    architectures = resolve_transformers_arch(model_config, architectures)\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/utils.py", line 180, in resolve_transformers_arch\n'
    "    raise ValueError(\n" + _REFUSED,
    _REFUSED.replace("XLMRobertaForSequenceClassification", "ModernBertForMaskedLM"),
], ids=["scheduler-0.5.10", "another-arch"])
def test_transformers_fallback_refused_is_an_unsupported_architecture(text):
    assert said(text) == (True, "arch_unsupported", "transformers_fallback_refused")


# near misses: the fallback's warning when transformers' class is compatible (it serves on), the forced
# `--model-impl transformers` refusal (another text: the user chose the implementation), prose
@pytest.mark.parametrize("text", [
    "[2025-10-02 08:01:15] XLMRobertaForSequenceClassification has no SGLang implementation, falling back to "
    "Transformers implementation. Some features may not be supported and performance may not be optimal.\n",
    "ValueError: The Transformers implementation of XLMRobertaModel is not compatible with SGLang.\n",
    "it says the model has no SGlang implementation and the Transformers implementation is not compatible\n",
], ids=["fallback-warning", "forced-transformers", "prose"])
def test_other_fallback_texts_are_not_its_refusal(text):
    assert said(text)[2] != "transformers_fallback_refused"


# --- the lines the rules cite ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("triton", "3.4.0", "triton/backends/amd/driver.py", 381, 'const char* prefix = "Triton Error [HIP]: ";'),
    ("triton", "3.4.0", "triton/backends/amd/driver.py", 384, '"%s Code: %d, Messsage: %s", prefix, code, str'),
    ("triton", "3.4.0", "triton/backends/amd/driver.py", 399, "HIP_CHECK(hipSymbolTable.hipModuleLaunchKernel("),
    ("triton", "3.4.0", "triton/backends/amd/driver.py", 436, "if (status == hipErrorInvalidValue) {{"),
    ("triton", "3.4.0", "triton/backends/amd/driver.py", 438, "cannot be accessed from Triton (cpu tensor?)"),
    ("triton", "3.4.0", "triton/backends/amd/driver.c", 105, 'const char *prefix = "Triton Error [HIP]: ";'),
    ("triton", "3.4.0", "triton/backends/amd/driver.c", 169, "HIP_CHECK(hipSymbolTable.hipModuleLoadDataEx("),
    ("triton", "3.4.0", "triton/backends/nvidia/driver.py", 268, 'const char* prefix = "Triton Error [CUDA]: ";'),
    ("triton", "3.4.0", "triton/backends/nvidia/driver.py", 362, "CUDA_CHECK(cuLaunchKernelExHandle(&config,"),
    ("triton", "3.0.0", "triton/backends/amd/driver.py", 265, '"%s Code: %d, Messsage: %s", prefix, code, str'),
    ("triton", "3.0.0", "triton/backends/amd/driver.py", 276, "HIP_CHECK(hipSymbolTable.hipModuleLaunchKernel("),
    ("sglang", "0.4.10.post2", "sglang/srt/model_loader/utils.py", 67, "if not model_module.is_backend_compatible():"),
    ("sglang", "0.4.10.post2", "sglang/srt/model_loader/utils.py", 69,
     'f"{arch} has no SGlang implementation and the Transformers "'),
    ("sglang", "0.5.10", "sglang/srt/model_loader/utils.py", 181,
     'f"{arch} has no SGlang implementation and the Transformers "'),
    ("sglang", "0.5.10", "sglang/srt/model_loader/utils.py", 220,
     "architectures = resolve_transformers_arch(model_config, architectures)"),
    ("transformers", "4.56.1", "transformers/modeling_utils.py", 5989, "return cls._supports_attention_backend"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_round_cites_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
