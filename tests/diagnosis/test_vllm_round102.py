"""vLLM held-out round 102 (12 logs, w10201-w10212), folded into work after its misses were read.

Measured once on main at 3cafdf3c (staged as 3e32d34a after round 101 merged): crashed 12/12, kind 10/12, phase 10/12.
Four misses, read against the source of the releases the logs show:

- w10207 (phase, fixed): one file of six benchmark servers, five stopped by SIGTERM ('[shutdown] EngineCore: trigger
  received signal=', v1/engine/core.py:1333 (0.27.1); uvicorn's 'Application shutdown complete.'), the sixth dying
  in capture_model; an earlier run's startup and requests said serving. The phase reached is now the last run's, from
  the first start line ('non-default args', 'Initializing a V1 LLM engine') after the last shutdown a start follows:
  diagnosis/vllm_runs.py last_started. It also reads round 91's w9118 (graph_capture) and w9119 (launch: the last
  command line refused, argparse's "usage: vllm" its start), left there.
- w10201 (kind disputed, unsupported_gpu -> unknown): 'cutlass_gemm_caller.cuh:62, Error Internal' is the check of
  gemm_op.run's status after can_implement passed (:52); vLLM's own check chose CutlassFp8BlockScaledMMKernel for the
  capability (0.27.1 scaled_mm/cutlass.py:288-295, w8a8_utils.py:21-28); no text names the GPU or the shape.
- w10203 (kind disputed, not crashed -> request_error): the three 400s were answered 28-38 s before the SIGTERM, while
  the server served (no request cut by the shutdown): a client's request refused as sent, the corpus's request_error.
- w10208 (phase disputed, serving -> ready): two offline LLM(...) engines, each ending at 'Supported tasks'
  (entrypoints/llm.py:360 (0.13.0)); no line of vLLM's shows a prompt processed.

The positive tests below failed at 3e32d34a (before the fix). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.vllm_log import vllm_lines
from ddlab.diagnosis.vllm_runs import last_started
from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said)

_ROUND = [f"w102{n:02d}" for n in range(1, 13)]
_LAST_START = "(APIServer pid=7394) INFO 07-01 14:00:21 [api_utils.py:273] non-default args:"


def test_the_round_is_folded_with_its_twelve_logs():
    assert folded_round(VLLM_MANIFEST, 102) == _ROUND


def test_two_kinds_and_a_phase_are_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w10201", "w10203", "w10208"]
    assert VLLM_MANIFEST["w10201"]["kind_disputed"] == ["unsupported_gpu", "unknown"]
    assert VLLM_MANIFEST["w10203"]["kind_disputed"] == [None, "request_error"]
    assert VLLM_MANIFEST["w10208"]["phase_disputed"] == ["serving", "ready"]


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w10207: the last of a file's runs ---------------------------------------------------------------------------

def test_the_last_run_dies_in_graph_capture():
    assert said(read_log("w10207.log")) == (True, "cuda_illegal_access", "vllm_cuda_illegal_access")
    assert reads(read_log("w10207.log"))[2] == "graph_capture"


def test_the_last_run_starts_at_its_own_args():
    lines = last_started(vllm_lines(read_log("w10207.log")))
    assert "non-default args: {" in lines[0].msg
    assert not any("Application startup complete" in line.msg for line in lines)


def test_round_91s_files_of_the_same_pipeline_read_their_last_run():
    assert reads(read_log("w9118.log")) == (True, "cuda_illegal_access", "graph_capture")
    assert said(read_log("w9119.log"))[2] == "vllm_argparse" and reads(read_log("w9119.log"))[2] == "launch"


def test_a_file_ending_in_a_shutdown_is_read_whole():
    text = read_log("w10207.log")
    text = text[:text.index(_LAST_START)]
    assert reads(text) == (False, None, "serving")


def test_runs_with_no_shutdown_between_are_read_whole():
    text = read_log("w10207.log").replace("[shutdown] EngineCore: trigger received signal=", "[core.py] EngineCore: ")
    text = text.replace("Application shutdown complete.", "Application shutdown.")
    assert "trigger received signal=" not in text and "Application shutdown complete" not in text
    assert reads(text)[2] == "serving"


# --- w10201, w10203, w10208: disputed, ddlab's reading kept ------------------------------------------------------

def test_the_disputed_logs_keep_ddlabs_reading():
    assert said(read_log("w10201.log"))[:2] == (True, "unknown")
    assert said(read_log("w10203.log")) == (False, "request_error", "vllm_request_http_4xx")
    assert reads(read_log("w10208.log")) == (False, None, "ready")


# --- the lines the rule and disputes cite --------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.27.1", "vllm/v1/engine/core.py", '"[shutdown] EngineCore: trigger received signal=%s"'),
    ("0.27.1", "vllm/v1/engine/core.py", '"Initializing a V1 LLM engine (v%s) with config: %s"'),
    ("0.27.1", "vllm/entrypoints/serve/utils/api_utils.py", 'logger.info("non-default args: %s", non_default_args)'),
    ("0.27.1", "vllm/model_executor/layers/quantization/utils/w8a8_utils.py",
     "return ops.cutlass_scaled_mm_supports_block_fp8(capability)"),
    ("0.27.1", "vllm/model_executor/kernels/linear/scaled_mm/cutlass.py", "if not CUTLASS_BLOCK_FP8_SUPPORTED:"),
    ("0.13.0", "vllm/entrypoints/llm.py", 'logger.info("Supported tasks: %s", supported_tasks)'),
    ("0.13.0", "vllm/entrypoints/llm.py", 'desc="Processed prompts"'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


def test_uvicorns_shutdown_line():
    assert_in_library_wheel("uvicorn", "0.54.0", "uvicorn/lifespan/on.py",
                            'self.logger.info("Application shutdown complete.")')
