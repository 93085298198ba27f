"""vLLM held-out round 103 (16 logs, w10301-w10316), folded into work after its misses were read.

Measured once on main at 61416885 (staged as 10e6dd35 beside round 102): crashed 15/16, kind 13/16, phase 13/15.
Five misses, read against the source of the releases the logs show:

- w10304 (kind, fixed): a development tree's ViT full CUDA graphs replaying a video batch, ``_run_budget_graph``
  copying the replay's inputs into its captured buffers' first rows ("buf[:n].copy_(src)", as released vLLM's
  ``padding_logic(buf, src)``, 0.28.0 v1/worker/encoder_cudagraph.py:359-370): cuda_graph_replay, round 101's
  ``vllm_replay_inputs`` (vllm_crashes/graphs.py ``_REPLAY_INPUT_FRAMES`` takes that copy too).
- w10306 (crashed, fixed): Ray's "*** SIGTERM received at time=... ***" dump at an LLM run's exit, then the compiled
  DAG's clean teardown: abseil's failure handler dumps SIGTERM as it dumps SIGSEGV, and vLLM's own shutdown of its Ray
  workers tells to ignore it (0.7.3 executor/ray_distributed_executor.py:104-107): a stop, no native crash
  (crashes/kinds/native.py ``NATIVE_CRASH`` reads no SIGTERM dump).
- w10307 (kind, fixed): FlashInfer's TRT-LLM FP4 GEMM shuffling an NVFP4 layer's scale factors in tiles of 128 rows
  ("assert M % 128 == 0", flashinfer 0.6.11.post2 utils.py:882; vLLM 0.20.2 nvfp4/flashinfer.py:117):
  kernel_config_unsupported (vllm_crashes/linear_backends.py ``FP4_SCALE_ROWS``).
- w10301, w10302 (phase disputed, serving -> ready): Ray multi-node starts whose files end at uvicorn's "Application
  startup complete."; no line only a served request writes (an access line, a stats line of non-zero throughput).

Each positive test below failed at the round 102 commit (before the fixes). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said)

_ROUND = [f"w103{n:02d}" for n in range(1, 17)]


def test_the_round_is_folded_with_its_sixteen_logs():
    assert folded_round(VLLM_MANIFEST, 103) == _ROUND


def test_two_phases_are_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w10301", "w10302"]
    assert VLLM_MANIFEST["w10301"]["phase_disputed"] == ["serving", "ready"]
    assert VLLM_MANIFEST["w10302"]["phase_disputed"] == ["serving", "ready"]


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w10304: the encoder graphs' copy as a development tree writes it ---------------------------------------------

def test_the_encoder_graphs_first_rows_copy_is_the_replay():
    assert said(read_log("w10304.log")) == (True, "cuda_graph_replay", "vllm_replay_inputs")
    assert '{"cudagraph_mm_encoder":false}' in diagnose(read_log("w10304.log")).suggestion


def test_another_copy_in_the_encoder_is_not_read_so():
    text = read_log("w10304.log").replace("in _run_budget_graph", "in _prepare_inputs")
    assert "in _run_budget_graph" not in text
    assert said(text)[2] != "vllm_replay_inputs"


# --- w10306: a SIGTERM's dump at exit ------------------------------------------------------------------------------

def test_rays_sigterm_dump_is_no_crash():
    assert reads(read_log("w10306.log"))[:2] == (False, None)


def test_a_sigsegv_dump_is_still_a_native_crash():
    text = read_log("w10306.log").replace("SIGTERM received", "SIGSEGV received")
    assert said(text)[:2] == (True, "native_crash")


# --- w10307: FlashInfer's FP4 scale shuffle in tiles of 128 rows ------------------------------------------------------

def test_the_fp4_scale_rows_assert_is_the_kernels_config():
    assert said(read_log("w10307.log")) == (True, "kernel_config_unsupported", "vllm_flashinfer_fp4_scale_rows")
    assert reads(read_log("w10307.log"))[2] == "load_weights"
    assert "VLLM_NVFP4_GEMM_BACKEND" in diagnose(read_log("w10307.log")).suggestion


def test_another_assert_of_the_shuffle_is_not_read_so():
    text = read_log("w10307.log").replace("assert M % 128 == 0", "assert K % 4 == 0")
    assert "M % 128" not in text
    assert said(text)[2] != "vllm_flashinfer_fp4_scale_rows"


# --- w10301, w10302: disputed, ddlab's reading kept ----------------------------------------------------------------

def test_the_starts_read_ready():
    assert reads(read_log("w10301.log")) == (False, None, "ready")
    assert reads(read_log("w10302.log")) == (False, None, "ready")


# --- the lines the rules and disputes cite --------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.28.0", "vllm/v1/worker/encoder_cudagraph.py", "padding_logic(buf, src)"),
    ("0.7.3", "vllm/executor/ray_distributed_executor.py",
     '"from logging.cc regarding SIGTERM received, please ignore because "'),
    ("0.20.2", "vllm/model_executor/kernels/linear/nvfp4/flashinfer.py", "shuffle_matrix_sf_a(weight_scale.view("),
    ("0.20.2", "vllm/model_executor/kernels/linear/nvfp4/flashinfer.py", "epilogue_tile_m = 128"),
    ("0.20.2", "vllm/envs.py", '"flashinfer-cutlass",'),
    ("0.10.1.1", "vllm/entrypoints/openai/api_server.py", "await asyncio.sleep(envs.VLLM_LOG_STATS_INTERVAL)"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


@pytest.mark.parametrize(("package", "release", "path", "text"), [
    ("flashinfer-python", "0.6.11.post2", "flashinfer/utils.py", "    assert M % 128 == 0"),
    ("flashinfer-python", "0.6.11.post2", "flashinfer/quantization/fp4_quantization.py",
     "row_indices = get_shuffle_matrix_sf_a_row_indices(input_tensor, epilogue_tile_m)"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_the_libraries_own(package, release, path, text):
    assert_in_library_wheel(package, release, path, text)
