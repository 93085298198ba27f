"""Held-out round 90 (issue 24): a library's skipped-extension notice is a warning; DeepGEMM's missing
scale-layout case is a refused configuration; the weights' format line is the load.

Round 90 (h90001-h90012; issue bodies archived in yunwei37/vllm-exp) was measured once on main at 3894f55 (with
the round's logs, fe1f2a6): crashed 12/12, kind 10/12, phase 11/12. docs/diagnosis.md, "Held-out round 90", tells
the round. All three misses were ddlab's:

- h90004, Gemma-3-12B on a 16 GB GPU: torchao's import logs "Skipping import of cpp extensions: ...: undefined
  symbol: ..." at DEBUG and goes on without its compiled ops (torchao 0.10.0 torchao/__init__.py:38-39); the
  scheduler later dies of torch.OutOfMemoryError while the FP8 layers are built. The notice is a warning
  (crashes/kinds/skipped_imports.py skipped_cpp_extension): it never outranks the exception that killed the
  process.
- h90007, Qwen3-0.6B-FP8 on an H100: DeepGEMM's "AssertionError: Unknown cases: sf.dtype=torch.int32, gran=(1,
  128), arch=90a" (deepseek-ai/DeepGEMM cc416ee deep_gemm/utils/layout.py:175: int32 scales have cases on SM100
  only), handed UE8M0 scales by SGLang 0.4.7.post1 (deep_gemm_wrapper/configurer.py:32) during CUDA graph
  capture: kernel_config_unsupported wherever it surfaces (device_crashes/scale_layouts.py).
- h90008, eight TP ranks' "Using model weights format ['*.safetensors']": written by download_weights_from_hf in
  the loader's _prepare_weights (0.4.5.post1 model_loader/weight_utils.py:255, loader.py:270; 0.5.23
  weight_utils.py:692), a load_weights marker (diagnosis/logtext.py).

Each positive test fails on fe1f2a6.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 90)


def test_round90_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h900{n:02d}" for n in range(1, 13)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "reading"), [
    ("h90004", (True, "cuda_oom", "load_weights")),
    ("h90007", (True, "kernel_config_unsupported", "graph_capture")),
    ("h90008", (False, None, "load_weights")),
], ids=["h90004", "h90007", "h90008"])
def test_the_rounds_misses_read_as_labelled(log_id, reading):
    found = real(log_id)
    assert (found.crashed, found.kind if found.crashed else None, found.phase) == reading


_SRT = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
_HEAD = "[2025-06-24 08:54:27 TP0] Scheduler hit an exception: Traceback (most recent call last):"
_SYM = "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"


def _frame(path: str, line: int, func: str, code: str, root: str = _SRT) -> list[str]:
    return [f'  File "{root}/{path}", line {line}, in {func}', f"    {code}"]


def _traceback(*frames: list[str], error: str) -> str:
    return "\n".join([_HEAD, *(line for frame in frames for line in frame), error])


# --- h90004: a library's skipped-extension notice before the death -------------------------------------------------

_LOAD = _frame("model_executor/model_runner.py", 435, "load_model", "self.model = get_model(")
_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 114.00 MiB. GPU 0 has a total capacity of "
        "15.58 GiB of which 54.38 MiB is free.")
_NOTICE = f"[2025-04-20 14:03:03 TP0] Skipping import of cpp extensions: /x/torchao/_C.abi3.so: undefined symbol: {_SYM}"


# the notice before a load's OOM, and (another torchao path) before an older torch's OOM class
@pytest.mark.parametrize(("text", "kind"), [
    (_NOTICE + "\n[2025-04-20 14:03:12 TP0] Load weight begin. avail mem=15.27 GB\n" + _traceback(_LOAD, error=_OOM),
     "cuda_oom"),
    (_NOTICE.replace("/x/", "/opt/venv/lib/python3.11/site-packages/") + "\n"
     + _traceback(_LOAD, error="torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
     "cuda_oom"),
], ids=["oom", "older-torch-oom"])
def test_a_skipped_extension_notice_never_decides_over_the_death(text, kind):
    assert reads(text + "\n", family="sglang")[:2] == (True, kind)


# near misses: the same undefined symbol as the exception the process died of stays dependency_mismatch; so does a
# line of it alone with no notice around it
@pytest.mark.parametrize("text", [
    _traceback(_LOAD, error=f"ImportError: /x/sgl_kernel/common_ops.abi3.so: undefined symbol: {_SYM}"),
    f"[2025-04-20 14:03:03 TP0] OSError: /x/sgl_kernel/common_ops.abi3.so: undefined symbol: {_SYM}\n"
    "[2025-04-20 14:03:04] Received sigquit from a child process. It usually means the child failed.",
], ids=["raised-import", "bare-line"])
def test_an_undefined_symbol_the_process_died_of_stays_a_mismatch(text):
    assert reads(text + "\n", family="sglang")[:2] == (True, "dependency_mismatch")


# --- h90007: DeepGEMM's missing scale-layout case --------------------------------------------------------------------

_SERVING = _frame("managers/tp_worker.py", 190, "forward_batch_generation",
                  "logits_output = self.model_runner.forward(forward_batch)")
_GROUPED = _frame("layers/quantization/deep_gemm_wrapper/entrypoint.py", 64, "grouped_gemm_nt_f8f8bf16_contig",
                  "_grouped_gemm_nt_f8f8bf16_contig_raw(lhs, rhs, out, m_indices)")
_DG = "/usr/local/lib/python3.10/dist-packages"
_DISPATCH = _frame("deep_gemm/dispatch.py", 137, "m_grouped_fp8_gemm_nt_contiguous",
                   "sfa = transform_sf_into_required_layout(sfa, mn=m, k=k, recipe=recipe, is_sfa=True)", root=_DG)
_LAYOUT = _frame("deep_gemm/utils/layout.py", 175, "transform_sf_into_required_layout",
                 "assert False, f'Unknown cases: {sf.dtype=}, {gran=}, arch={get_device_arch()}'", root=_DG)


# the grouped GEMM while serving (dispatch.py:137), and another missing case (int32 at (128, 128) on Hopper)
@pytest.mark.parametrize("error", [
    "AssertionError: Unknown cases: sf.dtype=torch.int32, gran=(1, 128), arch=90a",
    "AssertionError: Unknown cases: sf.dtype=torch.int32, gran=(128, 128), arch=90a",
], ids=["serving-1x128", "serving-128x128"])
def test_deepgemms_unknown_scale_case_is_a_refused_configuration(error):
    text = _traceback(_SERVING, _GROUPED, _DISPATCH, _LAYOUT, error=error) + "\n"
    assert reads(text, family="sglang")[:2] == (True, "kernel_config_unsupported")


# near misses: another "Unknown cases" assert (not DeepGEMM's scale case), and the same words raised as a
# ValueError, keep their reading
@pytest.mark.parametrize("error", [
    "AssertionError: Unknown cases: mode=3",
    "ValueError: Unknown cases: sf.dtype=torch.int32, gran=(1, 128), arch=90a",
], ids=["other-assert", "other-type"])
def test_other_unknown_cases_are_no_refused_configuration(error):
    text = _traceback(_SERVING, _GROUPED, error=error) + "\n"
    assert reads(text, family="sglang")[1] != "kernel_config_unsupported"


# --- h90008: the weights' format line is the load -------------------------------------------------------------------

# 0.5.x logs it once on rank 0, with no rank tag (log_info_on_rank0)
@pytest.mark.parametrize("line", [
    "[2025-05-01 10:08:11 TP3] Using model weights format ['*.safetensors']",
    "[2026-02-01 10:08:11] Using model weights format ['*.bin']",
], ids=["0.4-rank", "0.5-rank0"])
def test_the_weights_format_line_marks_the_load(line):
    text = "[2025-05-01 10:08:10 TP0] Init torch distributed ends. mem usage=0.00 GB\n" + line + "\n"
    assert reads(text, family="sglang") == (False, None, "load_weights")


# near miss: the model's own format notice before it (fp8.py's "Detected fp8 checkpoint") marks no load alone
def test_the_fp8_notice_alone_marks_no_load():
    text = ("[2025-05-01 10:08:11 TP0] Detected fp8 checkpoint. Please note that the format is experimental and "
            "subject to change.\n")
    assert reads(text, family="sglang")[2] != "load_weights"


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("torchao", "0.10.0", "torchao/__init__.py", 39, 'logging.debug(f"Skipping import of cpp extensions: {e}")'),
    ("torchao", "0.9.0", "torchao/__init__.py", 44, 'logging.debug("Skipping import of cpp extensions")'),
    ("sglang", "0.4.7.post1", "sglang/srt/layers/quantization/deep_gemm_wrapper/configurer.py", 32,
     "DEEPGEMM_SCALE_UE8M0 = DEEPGEMM_BLACKWELL"),
    ("sglang", "0.4.7.post1", "sglang/srt/layers/quantization/fp8_utils.py", 241,
     "scale_ue8m0=deep_gemm_wrapper.DEEPGEMM_SCALE_UE8M0,"),
    ("sglang", "0.4.5.post1", "sglang/srt/model_loader/weight_utils.py", 255,
     'logger.info("Using model weights format %s", allow_patterns)'),
    ("sglang", "0.4.5.post1", "sglang/srt/model_loader/loader.py", 270, "hf_folder = download_weights_from_hf("),
    ("sglang", "0.5.23", "sglang/srt/model_loader/weight_utils.py", 692,
     'log_info_on_rank0(logger, f"Using model weights format {allow_patterns}")'),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
