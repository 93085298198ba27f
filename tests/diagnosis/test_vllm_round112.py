"""vLLM held-out round 112 (3 logs, w11201-w11203), folded into work with no miss to read.

Measured once on main at 045c43ca (staged as bad84da4): crashed 3/3, kind 3/3, phase 3/3. Nothing was fixed, no rule
was added, nothing is disputed and nothing is left; the round's readings are pinned here, each log with the signature
that reads it, so a later change that reads one of them another way says which:

- w11201: a CPU source build of vLLM 0.8.5.dev32 serving Qwen2.5-1.5B-Instruct (dmasirkar/vLLM-testing-on-CPU's
  README): V1 refuses device cpu and falls back to V0, the server comes up and answers two /v1/completions requests
  (serving). Not crashed.
- w11202: vLLM 0.6.4.post1 on a GTX 1080 (xlisp/jimw-vllm's README): the first request's Triton kernel build prints
  'LLVM ERROR: Unsupported rounding mode for conversion.' and LLVM's fatal error handler ends the engine process; the
  MQLLMEngine client's health check finds it gone, "Engine process (pid N) died." (0.6.4.post1
  vllm/engine/multiprocessing/client.py:173, logged by _set_errored at :282), and the launcher stops the server,
  "MQLLMEngine is already dead, terminating server process" (vllm/entrypoints/launcher.py:99): kernel_compile, read
  by the LLVM fatal-error rule (device_crashes/compilers.py ``LLVM_FATAL``), phase serving.
- w11203: `vllm serve` on Windows (jazzwang/snippet's py/vllm/vllm.md) dies importing vllm/platforms/cuda.py, whose
  line 15 is ``import vllm._C`` (0.8.0, the wheel nearest the 0.8.1 the page's uv tool install builds): "No module
  named 'vllm._C'", an install without its compiled extension: dependency_mismatch, read by the import rule
  (crashes/kinds/packages.py ``DEPENDENCY``), phase launch.

None of the three copies has a carriage return (the READMEs and the notes page keep none).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said)

_ROUND = [f"w112{n:02d}" for n in range(1, 4)]


def test_the_round_is_folded_with_its_three_logs():
    assert folded_round(VLLM_MANIFEST, 112) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


@pytest.mark.parametrize(("log_id", "verdict", "phase"), [
    ("w11201", (False, None, None), "serving"),
    ("w11202", (True, "kernel_compile", "vllm_llvm_fatal"), "serving"),
    ("w11203", (True, "dependency_mismatch", "vllm_dependency_mismatch"), "launch"),
])
def test_each_log_is_read_by_its_signature(log_id, verdict, phase):
    text = read_log(f"{log_id}.log")
    assert said(text) == verdict
    assert said(text, "vllm") == verdict
    assert reads(text)[2] == phase


def test_the_copies_have_no_carriage_returns():
    for log_id in _ROUND:
        assert "\r" not in read_log(f"{log_id}.log"), log_id


# --- the lines the labels rest on -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.6.4.post1", "vllm/engine/multiprocessing/client.py",
     '                    f"Engine process (pid {self._engine_process.pid}) died."))'),
    ("0.6.4.post1", "vllm/entrypoints/launcher.py",
     '            logger.fatal("MQLLMEngine is already dead, terminating server "'),
    ("0.8.0", "vllm/platforms/cuda.py", "import vllm._C  # noqa"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
