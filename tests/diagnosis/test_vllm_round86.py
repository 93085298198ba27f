"""What held-out round 86 of the vLLM corpus (w8601-w8622, measured once on main at 395a1ce with its logs c45b1a2)
showed: crashed 18/22, kind 16/22, phase 13/16. Its eight misses were read from the source (docs/diagnosis.md,
"Held-out round 86"): seven fixed (w8621's crash among them), two kinds disputed, none left:

- w8601 (phase): vllm-omni's per-request 'request_level_metrics' record, written only for a finished request
  (vllm-omni be81443c entrypoints/log_utils.py:529), is serving (diagnosis/vllm_log.py).
- w8604 (crashed, kind): vllm-omni's stage error result raised into its own request (async_omni.py:867 (be81443c))
  is one request's error (vllm_crashes/requests.py OMNI_STAGE_RESULT_RAISED).
- w8606 (crashed): vllm-omni's "[Stage-N] " logging prefix (omni_stage.py:249 (be81443c)) after a worker's tag is
  peeled (diagnosis/viewer_prefixes.py OMNI_STAGE_TAG).
- w8607 (kind): disputed to cuda_graph_capture (a traceback cut inside the capture frames, as w7302).
- w8611 (kind): the registry's refusal cut after "are not supported" is arch_unsupported (crashes/kinds/models.py,
  registry.py:1014 (0.21.0)).
- w8612 (phase): a CR written out in caret notation ("^M") at a line's end is peeled (diagnosis/logtext.py).
- w8621 (crashed; kind disputed to unknown): a paste's first frame line cut inside its path opens the traceback
  (diagnosis/tracebacks.py).
- w8622 (crashed, kind): a traceback through the model runner's add_lora is the utility call's failure, answered
  to the caller (v1/engine/core.py:1341 (0.21.0); vllm_crashes/requests.py ADD_LORA_FAILED).

Each positive test below failed at c45b1a2 (before the fixes). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said, vllm_traceback)

_ROUND = [f"w86{n:02d}" for n in range(1, 23)]


def test_the_round_is_folded_with_its_twenty_two_logs():
    assert folded_round(VLLM_MANIFEST, 86) == _ROUND


def test_two_kinds_of_the_round_are_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w8607", "w8621"]


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w8611: the registry's refusal cut after "are not supported" -----------------------------------------------------

def test_the_cut_registry_refusal_is_arch_unsupported():
    assert said(read_log("w8611.log"))[:2] == (True, "arch_unsupported")


@pytest.mark.parametrize("exc", [
    "ValueError: Model architectures ['BertForTokenClassification'] are not supported for",
    "ValueError: Model architectures ['BertForTokenClassification'] are not supported",
], ids=["for", "supported"])
def test_the_cut_refusal_in_another_form(exc):
    """0.21.0's frame, the refusal cut at two other places."""
    frame = ("vllm/model_executor/models/registry.py", 1013, "_raise_for_unsupported", "raise ValueError(")
    assert said(vllm_traceback(frame, exc=exc), family="vllm")[:2] == (True, "arch_unsupported")


def test_the_registry_refusal_is_vllms_own():
    assert_in_wheel("0.21.0", "vllm/model_executor/models/registry.py",
                    'f"Model architectures {architectures} are not supported for now. "')


@pytest.mark.parametrize("text", [
    "ValueError: Model architectures ['X'] are not supported with pipeline parallelism yet.\n",
    "ValueError: Model architectures ['X'] failed to be inspected. Please check the logs for more details.\n",
], ids=["another-sentence", "inspect"])
def test_near_misses_are_no_cut_refusal(text):
    assert said(text, family="vllm")[1] != "arch_unsupported"


# --- w8612: a CR in caret notation at a line's end --------------------------------------------------------------------

_STEP = [("vllm/v1/worker/worker_base.py", 373, "execute_model",
          "return self.worker.execute_model(scheduler_output, *args, **kwargs)"),
         ("vllm/v1/worker/gpu_worker.py", 476, "execute_model", "output = self.model_runner.execute_model(")]
_CARET_HEAD = "^[[1;36m(Worker_TP1 pid=7)^[[0;0m ERROR 10-13 17:28:00 [multiproc_executor.py:694] "


def _caret_cr(text: str) -> str:
    return "".join(line + "^M\n" for line in text.splitlines())


def test_the_caret_cr_worker_step_is_serving():
    assert reads(read_log("w8612.log")) == (True, "unknown", "serving")


def test_the_caret_cr_in_another_form():
    """0.11's step frames through torch's no_grad wrapper, cut at the worker's frame, every line ending in "^M"."""
    frames = [('vllm/v1/worker/worker_base.py', 373, "execute_model",
               "return self.worker.execute_model(scheduler_output, *args, **kwargs)"),
              ("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)")]
    text = vllm_traceback(*frames, exc=None, head=_CARET_HEAD).split("\n", 1)[1]
    text += _CARET_HEAD + '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 476, in ' \
                          "execute_model\n"
    assert reads(_caret_cr(text), family="vllm")[2] == "serving"


def test_near_misses_keep_their_phase():
    """A load_model frame with "^M" endings is no step of serving."""
    frame = ("vllm/v1/worker/gpu_worker.py", 200, "load_model", "self.model_runner.load_model()")
    text = _caret_cr(vllm_traceback(frame, exc="RuntimeError: boom", head=_CARET_HEAD))
    assert reads(text, family="vllm")[2] != "serving"


# --- w8606: vllm-omni's stage tag between the worker's tag and the level ---------------------------------------------

def test_the_stage_tagged_worker_traceback_is_a_crash():
    assert reads(read_log("w8606.log"))[:2] == (True, "unknown")


def test_the_stage_tag_in_another_form():
    """Stage 0's worker under a tensor-parallel tag, its step's frames alone (the header and the exception cut)."""
    text = vllm_traceback(*_STEP, exc=None, head="(Worker_TP1 pid=9) [Stage-0] ERROR 01-19 04:24:05 "
                                                 "[multiproc_executor.py:822] ").split("\n", 1)[1]
    assert reads(text, family="vllm")[:2] == (True, "unknown")


def test_the_stage_prefix_is_vllm_omnis_own():
    assert_in_wheel("0.13.0", "vllm/logger.py", 'f"{envs.VLLM_LOGGING_PREFIX}%(levelname)s %(asctime)s "')


def test_near_misses_are_no_stage_crash():
    text = "(Worker pid=3) [Stage-1] INFO 01-19 04:24:05 [gpu_model_runner.py:1] Model loading took 3.2 GiB\n"
    assert said(text, family="vllm")[0] is False


# --- w8621: a paste's first frame line cut inside its path ------------------------------------------------------------

_CUT_FRAME = ('/python3.12/site-packages/vllm/lora/ops/triton_ops/lora_shrink.py", line 151, in _lora_shrink\n'
              "ERROR 05-16 07:10:58 [core.py:398]     assert token_lora_mapping.size(0) == M\n")


def test_the_head_cut_traceback_is_a_crash():
    assert reads(read_log("w8621.log"))[:2] == (True, "unknown")


def test_the_head_cut_frame_in_another_form():
    """Its first line cut later in the path, a bare AssertionError under the engine's stamp."""
    text = ('triton_ops/lora_shrink.py", line 151, in _lora_shrink\n'
            "ERROR 05-16 07:10:58 [core.py:398]     assert token_lora_mapping.size(0) == M\n"
            "ERROR 05-16 07:10:58 [core.py:398] AssertionError\n")
    assert said(text, family="vllm")[0] is True


def test_the_fatal_handler_is_at_that_line():
    assert_in_wheel("0.8.5.post1", "vllm/v1/engine/core.py", 'logger.exception("EngineCore encountered a fatal error.")')
    assert_in_wheel("0.8.5.post1", "vllm/lora/ops/triton_ops/lora_shrink.py", "assert token_lora_mapping.size(0) == M")


@pytest.mark.parametrize("text", [
    "ERROR 05-16 07:10:58 [core.py:398] AssertionError\n",
    'see lora_shrink.py", line 151, in _lora_shrink for the check\nAssertionError\n',
], ids=["no-frame", "prose"])
def test_near_misses_are_no_head_cut_frame(text):
    assert said(text, family="vllm")[0] is False


# --- w8622: the engine core's add_lora utility call failing -----------------------------------------------------------

_ADD_LORA = [("vllm/v1/engine/core.py", 1100, "add_lora", "return self.model_executor.add_lora(lora_request)"),
             ("vllm/v1/worker/lora_model_runner_mixin.py", 276, "add_lora",
              "return self.lora_manager.add_adapter(lora_request)"),
             ("vllm/lora/worker_manager.py", 122, "_load_adapter", "peft_helper.validate_legal(self.lora_config)")]
_RANK = "ValueError: LoRA rank 64 is greater than max_lora_rank 16."


def test_the_add_lora_failure_is_one_calls_error():
    assert said(read_log("w8622.log"))[:2] == (False, "request_error")


def test_the_add_lora_failure_in_another_form():
    """0.22.0's utility line (:1365), the whole exception."""
    text = vllm_traceback(*_ADD_LORA, exc=_RANK, head="(EngineCore_DP0 pid=5) ERROR 07-01 10:00:00 [core.py:1365] ")
    assert said(text, family="vllm")[:2] == (False, "request_error")


@pytest.mark.parametrize("release, path, text", [
    ("0.21.0", "vllm/v1/engine/core.py", 'logger.exception("Invocation of %s method failed", name)'),
    ("0.21.0", "vllm/v1/engine/core.py", 'output.failure_message = f"Call to {name} method failed: {str(e)}"'),
    ("0.21.0", "vllm/v1/worker/lora_model_runner_mixin.py", "    def add_lora(self, lora_request: LoRARequest)"),
], ids=["logged", "answered", "add_lora"])
def test_the_utility_failure_is_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


def test_near_misses_the_fatal_handler_still_crashes():
    text = ("ERROR 07-01 10:00:00 [core.py:1142] EngineCore encountered a fatal error.\n"
            + vllm_traceback(*_ADD_LORA, exc=_RANK, head="ERROR 07-01 10:00:00 [core.py:1142] "))
    assert said(text, family="vllm")[0] is True


# --- w8604: vllm-omni's stage error raised into its own request -------------------------------------------------------

_OMNI_FRAME = ("vllm_omni/entrypoints/async_omni.py", 867, "generate", "raise RuntimeError(result)")


def test_the_raised_stage_result_is_one_requests_error():
    assert said(read_log("w8604.log"))[:2] == (False, "request_error")


def test_the_raised_stage_result_in_another_form():
    """Stage 1's error text, no access line after it."""
    text = vllm_traceback(_OMNI_FRAME, exc="RuntimeError: {'request_id': 'chatcmpl-1', 'stage_id': 1, 'error': "
                                           "'list index out of range'}", head="(APIServer pid=3) ERROR 02-25 19:37:34 "
                                                                         "[api_server.py:725] ")
    assert said(text, family="vllm")[:2] == (False, "request_error")


def test_the_handler_answers_the_request():
    assert_in_library_wheel("vllm-omni", "0.30.0", "vllm_omni/entrypoints/openai/api_server.py",
                            'logger.exception("Chat completion failed: %s", e)')


def test_near_misses_are_no_stage_result():
    text = vllm_traceback(_OMNI_FRAME, exc="RuntimeError: {'stage_id': 0, 'error': 'boom'}")
    assert said(text, family="vllm")[2] != "vllm_omni_stage_result_raised"


# --- w8601: vllm-omni's record of a finished request ------------------------------------------------------------------

_STARTED = "(APIServer pid=1) INFO 01-04 14:20:00 [api_server.py:1] vLLM API server version 0.12.0\n"


def test_the_request_metrics_record_is_serving():
    assert reads(read_log("w8601.log")) == (False, None, "serving")


def test_the_request_metrics_record_in_another_form():
    """After a start-up line, the record's first two lines."""
    text = _STARTED + ("(APIServer pid=1) INFO 01-04 14:28:29 [log_utils.py:529] {'type': 'request_level_metrics',\n"
                       "(APIServer pid=1) INFO 01-04 14:28:29 [log_utils.py:529]  'request_id': 'chatcmpl-1',\n")
    assert reads(text, family="vllm")[2] == "serving"


def test_near_misses_are_no_request_record():
    text = _STARTED + "(APIServer pid=1) INFO 01-04 14:28:29 [log_utils.py:1] stats: {'type': 'request_level_metrics'}\n"
    assert reads(text, family="vllm")[2] != "serving"
