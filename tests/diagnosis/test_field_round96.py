"""Held-out round 96 (issue 24): a vLLM helper SGLang imports only if vLLM imports, called anyway, is
dependency_mismatch.

Round 96 (h96001-h96012; twelve SGLang issue threads) was measured once on main at 32e28a8 (staged as 837a0076):
crashed 12/12, kind 9/12, phase 11/11. docs/diagnosis.md, "Held-out round 96", tells the round.

- h96003, a GPTQ model on SGLang 0.4.5: "NameError: name 'check_marlin_supported' is not defined" in gptq.py's
  is_gptq_marlin_compatible (0.4.5 sglang/srt/layers/quantization/gptq.py:328). The name comes from vLLM inside a
  ``try`` whose ``except ImportError`` goes on without it (:13-28), and 0.4.5's [srt] extra installs no vLLM
  (METADATA:248-255): the vLLM it needs is missing, dependency_mismatch (crashes/kinds/module_attrs.py
  guarded_import_missing; read unknown before).
- h96001's kind is disputed (dependency_mismatch -> unknown: SGLang 0.4.2.post3's linear.py:424-426 passes tp_rank to
  vLLM's _ColumnvLLMParameter, which takes no such keyword in the pinned vllm 0.6.4.post1, parameter.py:82, nor
  later), h96005's too (dependency_mismatch -> nccl: the custom all-reduce's CUDA-only path on ROCm,
  0.4.3.post2 _custom_ops.py:15, cuda_wrapper.py:117). None left.

The positive test fails on 837a0076.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, VLLM_WHEELS, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 96)


def test_round96_is_folded_into_work_with_two_disputes_and_none_left():
    assert _IDS == [f"h960{n:02d}" for n in range(1, 13)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h96001", "h96005"]
    assert REAL_MANIFEST["h96001"]["kind_disputed"] == ["dependency_mismatch", "unknown"]
    assert REAL_MANIFEST["h96005"]["kind_disputed"] == ["dependency_mismatch", "nccl"]
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


def test_the_rounds_fixed_miss_reads_as_labelled():
    found = real("h96003")
    assert (found.crashed, found.kind, found.phase, found.signature) == (
        True, "dependency_mismatch", "launch", "guarded_import_missing")


@pytest.mark.parametrize("log_id", ["h96001", "h96005"])
def test_the_disputed_logs_keep_their_reading(log_id):
    found = real(log_id)
    assert (found.crashed, found.kind) == (True, "unknown")


# --- h96003: a vLLM helper SGLang imports under a guard, called without it ---------------------------------------

_SGL = "/usr/lib/python3.11/site-packages/sglang"
_HEAD = [
    "Traceback (most recent call last):",
    f'  File "{_SGL}/srt/managers/tokenizer_manager.py", line 159, in __init__',
    "    self.model_config = ModelConfig(",
    f'  File "{_SGL}/srt/configs/model_config.py", line 281, in _verify_quantization',
    "    quantization_override = method.override_quantization_method(",
]
_GPTQ = [
    f'  File "{_SGL}/srt/layers/quantization/gptq.py", line 328, in is_gptq_marlin_compatible',
    "    return check_marlin_supported(",
    "           ^^^^^^^^^^^^^^^^^^^^^^",
]


@pytest.mark.parametrize("exc", [
    "NameError: name 'check_marlin_supported' is not defined",
    "NameError: name 'GPTQMarlinMoEMethod' is not defined",
    "NameError: name 'CompressedTensorsWNA16MoEMethod' is not defined",
], ids=["marlin-check", "gptq-moe", "compressed-tensors-moe"])
def test_a_guarded_vllm_name_missing_in_sglangs_quantization_is_dependency_mismatch(exc):
    assert reads("\n".join(_HEAD + _GPTQ + [exc]) + "\n", family="sglang")[:2] == (True, "dependency_mismatch")


# near misses: another undefined name there (SGLang's own), or the vLLM name raised outside the quantization code
@pytest.mark.parametrize(("frames", "exc"), [
    (_GPTQ, "NameError: name 'marlin_sizes' is not defined"),
    ([f'  File "{_SGL}/srt/models/llama.py", line 88, in forward', "    check_marlin_supported("],
     "NameError: name 'check_marlin_supported' is not defined"),
], ids=["sglang-name", "model-frame"])
def test_another_name_error_is_no_dependency_mismatch(frames, exc):
    assert reads("\n".join(_HEAD + frames + [exc]) + "\n", family="sglang")[1] != "dependency_mismatch"


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.4.5", "sglang/srt/layers/quantization/gptq.py", 13, "try:"),
    ("sglang", "0.4.5", "sglang/srt/layers/quantization/gptq.py", 22, "check_marlin_supported,"),
    ("sglang", "0.4.5", "sglang/srt/layers/quantization/gptq.py", 27, "except ImportError:"),
    ("sglang", "0.4.5", "sglang/srt/layers/quantization/gptq.py", 328, "return check_marlin_supported("),
    ("sglang", "0.4.5", "sglang-0.4.5.dist-info/METADATA", 259, "vllm==0.6.7.dev2; extra == \"srt-hip\""),
    ("sglang", "0.4.2.post3", "sglang/srt/layers/quantization/__init__.py", 6,
     "from vllm.model_executor.layers.quantization.awq import AWQConfig"),
    ("sglang", "0.4.2.post3", "sglang/srt/layers/linear.py", 424, "param.load_column_parallel_weight("),
    ("sglang", "0.4.2.post3", "sglang/srt/layers/linear.py", 426, "tp_rank=self.tp_rank,"),
    ("sglang", "0.4.2.post3", "sglang/srt/layers/parameter.py", 92, "tp_rank: int,"),
    ("sglang", "0.4.2.post3", "sglang-0.4.2.post3.dist-info/METADATA", 244, "vllm==0.6.4.post1; extra == \"srt\""),
    ("sglang", "0.4.3.post2", "sglang/srt/_custom_ops.py", 15,
     'use_vllm_custom_allreduce = os.environ.get("USE_VLLM_CUSTOM_ALLREDUCE", default=True)'),
    ("sglang", "0.4.3.post2", "sglang/srt/distributed/device_communicators/cuda_wrapper.py", 117,
     'assert so_file is not None, "libcudart is not loaded in the current process"'),
    ("sglang", "0.4.3.post2", "sglang/srt/distributed/device_communicators/custom_all_reduce.py", 279,
     "lib = CudaRTLibrary()"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)


def test_the_0_4_5_srt_extra_installs_no_vllm():
    import pathlib
    meta = pathlib.Path("/work/wheels/sglang-0.4.5/sglang-0.4.5.dist-info/METADATA")
    if not meta.exists():
        pytest.skip(f"{meta} not unpacked here")
    srt = [ln for ln in meta.read_text().splitlines() if ln.startswith("Requires-Dist:") and 'extra == "srt"' in ln]
    assert srt and not [ln for ln in srt if "vllm" in ln]


@pytest.mark.parametrize(("release", "line"), [("0.6.4.post1", 82), ("0.7.0", 101), ("0.7.2", 103), ("0.8.0", 103)])
def test_vllms_column_parameter_takes_no_tp_rank(release, line):
    source = VLLM_WHEELS / release / "vllm/model_executor/parameter.py"
    if not source.exists():
        pytest.skip(f"{source} not unpacked here")
    assert source.read_text().splitlines()[line - 1].strip() == (
        "def load_column_parallel_weight(self, loaded_weight: torch.Tensor):")
