"""What held-out round 58 of the vLLM corpus (w5801-w5825, measured once at 7ebc398 with its logs 8e64ee0)
showed: crashed 23/25, kind 22/25, phase 17/19. Its three misses were read from the source (docs/diagnosis.md,
"Held-out round 58"), and each was ddlab's:

- w5802: vllm-omni's orchestrator line "Stage 0 error on request ...: list index out of range", logged through
  Python's default format ("ERROR:vllm_omni.entrypoints.omni_llm:"), read as no server's. The stage worker puts
  an error result for each request of the batch that raised and takes the next batch; the orchestrator logs it
  and goes on (vllm-omni 0548674 vllm_omni/entrypoints/omni_stage.py:720-729, omni_llm.py:355-362). Fixed:
  ``vllm_omni`` names a vLLM log (diagnosis/vllm_log.py), the line is one request's error
  (vllm_crashes/requests.py OMNI_STAGE_ERROR).
- w5809: a chat stream's traceback through RequestOutputCollector.get's ``raise output`` into AsyncLLM's
  output_handler, cut at that frame, under a stamp whose time has no seconds. Whatever output_handler raises ends
  it and is handed to every request (0.11.0 v1/engine/async_llm.py:435-437, :479-481;
  v1/engine/output_processor.py:318-323, :59). Fixed: the stamp without seconds (VLLM_LOGGING_CONFIG_PATH, 0.11.0
  logger.py:127-133), the output_handler frame line is the handler's death (vllm_crashes/engine.py
  OUTPUT_HANDLER_FAILED), also in a handler's record (diagnosis/rootcause.py).
- w5810: "Invocation of collective_rpc method failed", then under the same stamp the NCCL error the method raised:
  the engine core logs a utility call's failure, answers the caller and goes on (0.8.5.post1
  v1/engine/core.py:459-462). Fixed: a chain under that record's stamp is the utility call's failure
  (diagnosis/vllm_records.py with_utility_records).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.vllm_log import detect_family, vllm_lines
from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, folded_round, not_unpacked,
                      read_log, reads, said, vllm_traceback)

_ROUND = [f"w58{n:02d}" for n in range(1, 26)]


def test_the_round_is_folded_with_its_twenty_five_logs():
    assert folded_round(VLLM_MANIFEST, 58) == _ROUND


def test_each_log_reads_as_labelled():
    """Crashed and kind as labelled, the phase where the log shows it: no miss is left."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w5802: a vllm-omni stage's error for one request ----------------------------------------------------------

def test_a_stage_error_on_a_request_is_that_requests_error():
    """The corpus log: the stage worker's batch lines, then the orchestrator's 'Stage 0 error on request'."""
    assert said(read_log("w5802.log")) == (False, "request_error", "vllm_omni_stage_request_error")
    assert reads(read_log("w5802.log")) == (False, "request_error", "serving")


def test_the_same_stage_error_in_another_form():
    """Later vllm-omni: vLLM's own stamp and the orchestrator's name before the same words (async_omni.py)."""
    text = ("INFO 01-05 09:00:00 [omni_stage.py:512] [Stage-1] Received batch size=1, request_ids=['chatcmpl-42']\n"
            "ERROR 01-05 09:00:01 [async_omni.py:371] [AsyncOmni] Stage 1 error on request chatcmpl-42: "
            "'NoneType' object is not subscriptable\n")
    assert said(text) == (False, "request_error", "vllm_omni_stage_request_error")


@pytest.mark.parametrize("line", [
    "ERROR:vllm_omni.entrypoints.omni_llm:Stage error on request 12: boom",
    "INFO:vllm_omni.entrypoints.omni_llm:Stage 0 error on request handling is now verbose",
], ids=["no-stage-number", "no-request-id"])
def test_other_stage_lines_are_not_a_stage_error(line):
    assert said(line)[2] != "vllm_omni_stage_request_error"


@pytest.mark.parametrize(("text", "family"), [
    ("ERROR:vllm_omni.entrypoints.omni_llm:Stage 0 error on request 0_ab: boom", "vllm"),
    ('  File "/usr/lib/python3.12/site-packages/vllm_omni/entrypoints/omni_stage.py", line 721, in run', "vllm"),
    ("ERROR:my_vllm_omni_fork.server:Stage 0 error on request 0_ab: boom", "sglang"),
], ids=["its-logger-name", "its-path", "another-package"])
def test_vllm_omni_names_a_vllm_log(text, family):
    assert detect_family(text) == family


# --- w5809: AsyncLLM's output handler, cut at its frame ---------------------------------------------------------

_HEAD = "(APIServer pid=7) ERROR 05-02 09:00:00 [serving.py:963] "
_STREAM = [("vllm/entrypoints/openai/chat_completion/serving.py", 578, "chat_completion_stream_generator",
            "async for res in result_generator:"),
           ("vllm/v1/engine/async_llm.py", 809, "generate", "out = q.get_nowait() or await q.get()"),
           ("vllm/v1/engine/output_processor.py", 93, "get", "raise output")]
_HANDLER_FRAME = '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/async_llm.py", line 894, in output_handler'


def test_a_stream_cut_at_the_output_handler_is_its_death():
    """The corpus log: the chat handler's record, frames down to output_handler's, cut there."""
    assert said(read_log("w5809.log"))[:2] == (True, "unknown")
    assert reads(read_log("w5809.log")) == (True, "unknown", "serving")


def test_the_same_death_in_another_form():
    """0.34.0's frames (chat_completion/serving.py, async_llm.py:894), seconds in the stamp, cut alike."""
    text = vllm_traceback(*_STREAM, exc=None, head=_HEAD) + _HEAD + _HANDLER_FRAME + "\n"
    assert said(text) == (True, "unknown", "vllm_output_handler_failed")


def test_a_stamp_without_its_seconds_is_peeled():
    line = "(APIServer pid=2640) INFO 11-03 23:14 [api_server.py:1885] vLLM API server version 0.11.0"
    assert vllm_lines(line)[0].msg == "vLLM API server version 0.11.0"


@pytest.mark.parametrize("last", [
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/output_processor.py", line 500, in process_outputs',
    '  File "/usr/lib/python3.12/site-packages/my_app/streams.py", line 12, in output_handler',
], ids=["another-engine-frame", "another-packages-output-handler"])
def test_other_frames_below_the_stream_stay_one_requests_error(last):
    text = ("ERROR 05-02 09:00:00 [serving_chat.py:963] Error in chat completion stream generator.\n"
            + vllm_traceback(*_STREAM, exc=None, head="ERROR 05-02 09:00:00 [serving_chat.py:963] ")
            + "ERROR 05-02 09:00:00 [serving_chat.py:963] " + last + "\n")
    assert said(text)[:2] == (False, "request_error")


# --- w5810: a utility call's failure under its record's stamp --------------------------------------------------

_TAG = "(EngineCore_DP0 pid=9) "
_UTILITY = [("vllm/v1/engine/core.py", 2043, "_invoke_utility_method", "result = get_result()"),
            ("vllm/v1/engine/core.py", 540, "collective_rpc", "return self.model_executor.collective_rpc("),
            ("vllm/distributed/device_communicators/pynccl.py", 130, "__init__",
             "self.comm: ncclComm_t = self.nccl.ncclCommInitRank(")]
_NCCL = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"


def _record(stamp: str, exc: str) -> str:
    head = f"{_TAG}{stamp} "
    return f"{head}Invocation of collective_rpc method failed\n" + vllm_traceback(*_UTILITY, exc=exc, head=head)


def test_an_nccl_error_of_a_utility_call_is_the_callers_error():
    """The corpus log: the record's line, the user's '(skipped traceback)', its last line under the stamp."""
    assert said(read_log("w5810.log")) == (False, "request_error", "vllm_utility_call_failed")


def test_the_same_failure_in_another_form():
    """0.34.0's record (v1/engine/core.py:2055), its whole traceback under the stamp."""
    assert said(_record("ERROR 05-02 09:00:00 [core.py:2055]", _NCCL))[:2] == (False, "request_error")


@pytest.mark.parametrize("text", [
    # the engine's own death under another stamp, after the answered call
    _record("ERROR 05-02 09:00:00 [core.py:2055]", "RuntimeError: cache busy")
    + vllm_traceback(("vllm/v1/engine/core.py", 1000, "run_busy_loop", "self._process_engine_step()"),
                     exc=_NCCL, head=f"{_TAG}ERROR 05-02 09:00:05 [core.py:1012] "),
    # the same error logged before the record, under its own stamp
    vllm_traceback(("vllm/v1/engine/core.py", 1000, "run_busy_loop", "self._process_engine_step()"),
                   exc=_NCCL, head=f"{_TAG}ERROR 05-02 08:59:59 [core.py:1012] ")
    + f"{_TAG}ERROR 05-02 09:00:00 [core.py:2055] Invocation of collective_rpc method failed\n",
], ids=["a-later-death", "an-earlier-death"])
def test_an_nccl_error_outside_the_record_stays_a_crash(text):
    assert said(text)[:2] == (True, "nccl")


@pytest.mark.parametrize(("release", "path", "line", "code"), [
    ("0.8.5.post1", "vllm/v1/engine/core.py", 459, 'logger.exception("Invocation of %s method failed", method_name)'),
    ("0.8.5.post1", "vllm/v1/engine/core.py", 460, "output.failure_message = (f\"Call to {method_name} method\""),
    ("0.8.5.post1", "vllm/v1/engine/core.py", 462, "self.output_queue.put_nowait("),
    ("0.11.0", "vllm/logger.py", 27, '_DATE_FORMAT = "%m-%d %H:%M:%S"'),
    ("0.11.0", "vllm/logger.py", 127, "if VLLM_LOGGING_CONFIG_PATH:"),
    ("0.11.0", "vllm/v1/engine/async_llm.py", 387, "out = q.get_nowait() or await q.get()"),
    ("0.11.0", "vllm/v1/engine/async_llm.py", 435, "async def output_handler():"),
    ("0.11.0", "vllm/v1/engine/async_llm.py", 437, "while True:"),
    ("0.11.0", "vllm/v1/engine/async_llm.py", 439, "outputs = await engine_core.get_output_async()"),
    ("0.11.0", "vllm/v1/engine/async_llm.py", 479, "except Exception as e:"),
    ("0.11.0", "vllm/v1/engine/async_llm.py", 480, 'logger.exception("AsyncLLM output_handler failed.")'),
    ("0.11.0", "vllm/v1/engine/async_llm.py", 481, "output_processor.propagate_error(e)"),
    ("0.11.0", "vllm/v1/engine/output_processor.py", 59, "raise output"),
    ("0.11.0", "vllm/v1/engine/output_processor.py", 318, "def propagate_error(self, e: Exception):"),
    ("0.11.0", "vllm/v1/engine/output_processor.py", 323, "state.queue.put(e)"),
    ("0.11.0", "vllm/entrypoints/openai/serving_chat.py", 1145,
     'logger.exception("Error in chat completion stream generator.")'),
    ("0.34.0", "vllm/v1/engine/async_llm.py", 894, "outputs = await engine_core.get_output_async()"),
    ("0.34.0", "vllm/v1/engine/async_llm.py", 950, "except Exception as e:"),
    ("0.34.0", "vllm/v1/engine/async_llm.py", 958, "output_processor.propagate_error(e)"),
    ("0.34.0", "vllm/v1/engine/output_processor.py", 93, "raise output"),
])
def test_the_cited_lines(release, path, line, code):
    """The lines the rules cite."""
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert code in source.read_text().splitlines()[line - 1]
