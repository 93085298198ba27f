"""vLLM held-out round 119 (4 logs, w11901-w11904), folded into work with no miss to read.

Measured once on main at e3df88be (staged as 284a0ed7): crashed 4/4, kind 4/4, phase 4/4. Nothing was fixed, no rule
was added, nothing is disputed and nothing is left; the round's readings are pinned here, so a later change that reads
one of them another way says which:

- w11901: a Slurm job's stdout on MareNostrum 5 (romeramarc/Tfg-mn5-llm-serving): vLLM 0.15.1 serves
  Qwen2.5-14B-Instruct, the job's /health poll gets 200, then the job script stops the server, "Shutting down FastAPI
  HTTP server." (0.15.1 vllm/entrypoints/launcher.py:110, on the serve task's cancellation): not crashed, ready (no
  request reached it).
- w11902: another job of the same setup answers 1,819 /v1/completions, then the job stops the server; beside the
  server's lines the eval client writes its own JSON record, "level": "ERROR", with its own traceback in "exc_info"
  (the client's script, no server frame): not crashed, serving.
- w11903: a vLLM source build (0.1.dev18496+gd4e0675a7, IsseiHasegawa/vLLM-experiment) whose Hugging Face download
  inside load_weights fails in huggingface_hub's xet_get, "RuntimeError: Task error: File reconstruction error: IO
  Error: Disk quota exceeded (os error 122)", then "Engine core initialization failed": unknown at load_weights as
  labelled (no kind named a full disk or quota). Relabelled disk_full when that kind came (2026-12-08,
  crashes/kinds/disks.py, the manifest's ``relabelled``): its round's figure stays as measured (kind 1/1).
- w11904: the same build answers 280 completions, then the engine core's signal handler gets SIGINT ("[shutdown]
  EngineCore: trigger received signal=SIGINT", 0.23.0 vllm/v1/engine/core.py:1178-1181) and the API server's output
  handler logs the EngineDeadError of the engine it just stopped ("AsyncLLM output_handler failed.", 0.23.0
  vllm/v1/engine/async_llm.py:704, the log's line): a stop, not a fault: not crashed, serving.

All four copies keep their carriage returns (banner lines, CRLF records, tqdm redraws); each reads the same with them
kept and translated.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_REAL, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, read_log, reads, said)

_ROUND = [f"w119{n:02d}" for n in range(1, 5)]


def test_the_round_is_folded_with_its_four_logs():
    assert folded_round(VLLM_MANIFEST, 119) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


@pytest.mark.parametrize(("log_id", "verdict", "phase"), [
    ("w11901", (False, None, None), "ready"),
    ("w11902", (False, None, None), "serving"),
    ("w11903", (True, "disk_full", "disk_full"), "load_weights"),
    ("w11904", (False, None, None), "serving"),
])
def test_each_log_is_read_by_its_signature(log_id, verdict, phase):
    text = read_log(f"{log_id}.log")
    assert said(text) == _in_vllms_words(verdict)
    assert said(text, "vllm") == _in_vllms_words(verdict)
    assert reads(text)[2] == phase


def _in_vllms_words(verdict: tuple) -> tuple:
    crashed, kind, signature = verdict
    return crashed, kind, signature and f"vllm_{signature}"


def test_the_disk_quota_is_read_as_a_full_disk_with_the_quota_and_the_download_named():
    from ddlab.diagnosis.diagnosis import diagnose
    found = diagnose(read_log("w11903.log"))
    assert found.cause == ("RuntimeError: Task error: File reconstruction error: IO Error: Disk quota exceeded "
                           "(os error 122)")
    assert "`quota -s`" in found.suggestion and "HF_HOME" in found.suggestion
    assert "`--download-dir`" in found.suggestion and "VLLM_CACHE_ROOT" in found.suggestion


@pytest.mark.parametrize(("log_id", "returns"), [("w11901", 5), ("w11902", 5), ("w11903", 122), ("w11904", 39)])
def test_the_copies_keep_their_carriage_returns_and_read_alike_either_way(log_id, returns):
    text = read_log(f"{log_id}.log")
    assert text.count("\r") == returns
    assert reads(text) == reads((VLLM_REAL / f"{log_id}.log").read_text(encoding="utf-8"))


# --- the lines the labels rest on -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.15.1", "vllm/entrypoints/launcher.py",
     '        logger.info("Shutting down FastAPI HTTP server.")\n        return server.shutdown()'),
    ("0.23.0", "vllm/v1/engine/core.py", '                    "[shutdown] EngineCore: trigger received signal=%s",'),
    ("0.23.0", "vllm/v1/engine/async_llm.py", '                logger.exception("AsyncLLM output_handler failed.")'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
