"""Held-out round 75 (issue 24): pybind11's "incompatible function arguments", the graph runners' capture lists.

Round 75 (h75001-h75010; excerpts of issue and pull-request threads) was measured once on main at 109c13f (with the
round's logs, b8a07e1): crashed 10/10, kind 9/10, phase 5/6. docs/diagnosis.md, "Held-out round 75", tells the
round. Both misses were ddlab's:

- h75003, the one line "TypeError: m_grouped_fp8_fp4_gemm_nt_contiguous(): incompatible function arguments.":
  pybind11's refusal when no overload of a compiled binding takes the call (pybind11 2.13.6
  include/pybind11/pybind11.h:1044-1046); DeepGEMM 2.4.2 renamed the keyword ``m_indices`` that SGLang's JIT warmup
  passed (0.5.10 layers/deep_gemm_wrapper/compile_utils.py:301). ``compiled_op_mismatch`` (crashes/kinds/
  packages.py) takes it: dependency_mismatch, as it takes torch's schema refusals.
- h75008, ktransformers' SGLang fork: "Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32]" and a bare 0/8 bar, cut.
  The CUDA-graph runner logs its batch sizes in its constructor, before capture() and its "Capturing batches" bar
  (0.5.9 model_executor/cuda_graph_runner.py:299, :370, :501); the piecewise runner its token counts the same way
  (0.5.9 model_executor/piecewise_cuda_graph_runner.py:175). Both lines now mark graph_capture (diagnosis/
  logtext.py's phase table); h55009 (an NPU start whose "Capture npu graph begin" no marker reads) reads
  graph_capture by the same line (its phase labelled null, not in the log).
Each positive test here fails on b8a07e1.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, folded_round, \
    reads, said

_IDS = folded_round(REAL_MANIFEST, 75)


def test_round75_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h750{n:02d}" for n in range(1, 11)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h75003", "compiled_op_mismatch"),
    ("h75008", None),
], ids=lambda v: str(v))
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h75003: pybind11 refusing a call no overload of a compiled binding takes -----------------------------------

_GEMM = "m_grouped_fp8_fp4_gemm_nt_contiguous"
_REFUSED = (f"TypeError: {_GEMM}(): incompatible function arguments. The following argument types are supported:\n"
            "    1. (a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor], d: torch.Tensor, "
            "grouped_layout: torch.Tensor) -> None\n\n"
            "Invoked with: (tensor(...), tensor(...)), (tensor(...), tensor(...)), tensor(...); kwargs: "
            "m_indices=tensor(...)\n")


# the same refusal in other forms, written from the source (pybind11 2.13.6 pybind11.h:1044-1046, the overloads'
# list and "Invoked with", :1080): the whole message under 0.5.10's JIT-warmup frame (compile_utils.py:301 passes
# m_indices= by name), the message alone, a compiled class's constructor refused (the same line's "constructor")
@pytest.mark.parametrize("text", [
    "[2026-04-29 08:12:40 DP0 TP0 EP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/deep_gemm_wrapper/compile_utils.py", line 297, '
    "in execute\n    deep_gemm.m_grouped_fp8_gemm_nt_contiguous(\n" + _REFUSED,
    _REFUSED,
    "TypeError: __init__(): incompatible constructor arguments. The following argument types are supported:\n"
    "    1. deep_gemm_cpp.Runtime(arg0: str)\n\nInvoked with: 3\n",
], ids=["warmup-frame", "message", "constructor"])
def test_pybind11_refusing_a_call_is_a_compiled_op_mismatch(text):
    assert said(text) == (True, "dependency_mismatch", "compiled_op_mismatch")


# near misses: the words in prose (no binding's "NAME():"), pybind11's other "incompatible" (two modules defining
# one name, pybind11.h:1256), a C compiler's pointer-type warning, mypy's argument check
@pytest.mark.parametrize("text", [
    "deep_gemm fails with incompatible function arguments after the upgrade\n",
    'ImportError: Error during initialization: multiple incompatible definitions with name "Runtime"!\n',
    "csrc/gemm.cu:41:12: warning: incompatible function pointer types passing 'void (*)(int)' [-Wincompatible-"
    "function-pointer-types]\n",
    'sglang/srt/layers/quant.py:12: error: Argument 1 to "gemm" has incompatible type "int"; expected "Tensor"\n',
], ids=["prose", "pybind-init", "compiler-warning", "mypy"])
def test_other_incompatible_texts_are_not_a_compiled_op_mismatch(text):
    assert said(text)[2] != "compiled_op_mismatch"


# --- h75008: the graph runners' capture lists, logged before their bars ------------------------------------------

_POOL = ("[2025-05-20 10:00:01 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.1 GB\n"
         "[2025-05-20 10:00:02 TP0] KV Cache is allocated. #tokens: 400000, K size: 12.00 GB, V size: 12.00 GB\n")


# the same lines in other forms, written from the source: 0.4.6.post4's list after the pool (cuda_graph_runner.py
# :197, rank0_log), 0.5.9's on a stamped rank with no bar (:299), the piecewise runner's token counts (0.5.9
# piecewise_cuda_graph_runner.py:175), the fork's list with its bar under a bare stamp
@pytest.mark.parametrize("text", [
    _POOL + "[2025-05-20 10:00:03 TP0] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48]\n",
    "[2026-02-01 09:00:00 TP0] Capture cuda graph bs [1, 2, 4, 8]\n",
    _POOL + "[2025-11-10 19:59:09 TP0] Capture cuda graph num tokens [4, 8, 12, 16, 20, 24, 28, 32]\n",
    "[2026-02-17 23:20:54] Capture cuda graph bs [1, 2, 4]\n\n  0%|          | 0/3 [00:00<?, ?it/s]\n",
], ids=["0.4.6.post4", "0.5.9-alone", "piecewise", "fork-bar"])
def test_a_graph_runners_capture_list_is_graph_capture(text):
    assert reads(text) == (False, None, "graph_capture")


# near misses: the server's arguments naming the sizes, the flag on a command line, prose asking about the sizes
@pytest.mark.parametrize("text", [
    "[2026-02-01 09:00:00] server_args=ServerArgs(model_path='m', cuda_graph_max_bs=8, cuda_graph_bs=[1, 2, 4, 8])\n",
    "python -m sglang.launch_server --model-path m --cuda-graph-bs 1 2 4 8\n",
    "how do I capture cuda graph bs 1 2 4 only?\n",
], ids=["server-args", "command", "prose"])
def test_other_lines_naming_the_sizes_are_not_graph_capture(text):
    assert reads(text)[2] != "graph_capture"


# --- the lines the round cites ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("pybind11", "2.13.6", "pybind11/include/pybind11/pybind11.h", 1044,
     'std::string msg = std::string(overloads->name) + "(): incompatible "'),
    ("pybind11", "2.13.6", "pybind11/include/pybind11/pybind11.h", 1046,
     '" arguments. The following argument types are supported:\\n";'),
    ("pybind11", "2.13.6", "pybind11/include/pybind11/pybind11.h", 1080, 'msg += "\\nInvoked with: ";'),
    ("pybind11", "2.13.6", "pybind11/include/pybind11/pybind11.h", 1256, "multiple incompatible definitions"),
    ("sglang", "0.5.10", "sglang/srt/layers/deep_gemm_wrapper/compile_utils.py", 301, "m_indices=self.m_indices[:m],"),
    ("sglang", "0.5.10", "sglang/srt/layers/deep_gemm_wrapper/compile_utils.py", 297,
     "deep_gemm.m_grouped_fp8_gemm_nt_contiguous("),
    ("sglang", "0.5.9", "sglang/srt/model_executor/cuda_graph_runner.py", 299,
     'log_info_on_rank0(logger, f"Capture cuda graph bs {self.capture_bs}")'),
    ("sglang", "0.5.9", "sglang/srt/model_executor/cuda_graph_runner.py", 370, "self.capture()"),
    ("sglang", "0.5.9", "sglang/srt/model_executor/cuda_graph_runner.py", 501, 'f"Capturing batches ({bs='),
    ("sglang", "0.5.9", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py", 175,
     'logger, f"Capture cuda graph num tokens {self.capture_num_tokens}"'),
    ("sglang", "0.4.6.post4", "sglang/srt/model_executor/cuda_graph_runner.py", 197,
     'rank0_log(f"Capture cuda graph bs {self.capture_bs}")'),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_round_cites_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
