"""vLLM held-out round 121 (3 logs, w12101-w12103), folded into work with no miss to read.

Measured once on main at 230e26e3 (staged as 65112d00): crashed 3/3, kind 3/3, phase 3/3. Nothing was fixed, no rule
was added, nothing is disputed and nothing is left; the round's readings are pinned here, so a later change that reads
one of them another way says which. Three whole server logs of one research repository (OscarTsao/CultureDx), vLLM
0.17.1 serving Qwen/Qwen3-32B-AWQ on one GPU:

- w12101: the server starts, answers 8 POST /v1/chat/completions with 200, then stops: "Shutting down FastAPI HTTP
  server." (0.17.1 vllm/entrypoints/launcher.py:122, on the serve task's cancellation) and uvicorn's clean shutdown:
  not crashed, serving.
- w12102: a start refused by the worker's startup check, "ValueError: Free memory on device cuda:0 (0.68/31.35 GiB) on
  startup is less than desired GPU memory utilization (0.9, 28.21 GiB)" (0.17.1 vllm/v1/worker/utils.py:412-420), then
  the API server's "Engine core initialization failed" (vllm/v1/engine/utils.py:1011): another process holds the GPU,
  cuda_oom at launch (signature vllm_startup_free_memory).
- w12103: a 3.5-hour run answering 3,187 chat completions with 200 and refusing 93 with 400, each refusal the chat
  route's "Error in preprocessing prompt inputs" (0.17.1 vllm/entrypoints/openai/chat_completion/serving.py:311) with
  "VLLMValidationError: You passed 6145 input tokens and requested 2048 output tokens. However, the model's context
  length is only 8192 tokens ..." (vllm/renderers/params.py:337-346): the client's requests refused, the server goes
  on: not crashed, request_error at serving.

All three copies keep their carriage returns (CRLF banner lines, tqdm redraws); each reads the same with them kept and
translated.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_REAL, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, read_log, reads, said)

_ROUND = [f"w121{n:02d}" for n in range(1, 4)]


def test_the_round_is_folded_with_its_three_logs():
    assert folded_round(VLLM_MANIFEST, 121) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


@pytest.mark.parametrize(("log_id", "verdict", "phase"), [
    ("w12101", (False, None, None), "serving"),
    ("w12102", (True, "cuda_oom", "vllm_startup_free_memory"), "launch"),
    ("w12103", (False, "request_error", "vllm_request_http_4xx"), "serving"),
])
def test_each_log_is_read_by_its_signature(log_id, verdict, phase):
    text = read_log(f"{log_id}.log")
    assert said(text) == verdict
    assert said(text, "vllm") == verdict
    assert reads(text)[2] == phase


def test_the_free_memory_refusal_is_the_cause():
    from ddlab.diagnosis.diagnosis import diagnose
    found = diagnose(read_log("w12102.log"))
    assert found.cause.startswith("ValueError: Free memory on device cuda:0 (0.68/31.35 GiB) on startup is less than "
                                  "desired GPU memory utilization (0.9, 28.21 GiB).")


@pytest.mark.parametrize(("log_id", "returns"), [("w12101", 64), ("w12102", 39),
                                                 pytest.param("w12103", 2668, marks=pytest.mark.slow)])  # 1.36 MB
def test_the_copies_keep_their_carriage_returns_and_read_alike_either_way(log_id, returns):
    text = read_log(f"{log_id}.log")
    assert text.count("\r") == returns
    assert reads(text) == reads((VLLM_REAL / f"{log_id}.log").read_text(encoding="utf-8"))


# --- the lines the labels rest on -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.17.1", "vllm/entrypoints/launcher.py", '        logger.info("Shutting down FastAPI HTTP server.")'),
    ("0.17.1", "vllm/v1/worker/utils.py", '            f"is less than desired GPU memory utilization "'),
    ("0.17.1", "vllm/v1/engine/utils.py", '"Engine core initialization failed. "'),
    ("0.17.1", "vllm/entrypoints/openai/chat_completion/serving.py",
     '            logger.exception("Error in preprocessing prompt inputs")'),
    ("0.17.1", "vllm/renderers/params.py", '                f"However, the model\'s context length is only "'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
