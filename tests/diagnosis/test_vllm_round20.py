"""The rules that held-out round 20 of the vLLM corpus (vu01-vu13, measured once at ac4ae77 with its logs)
showed missing.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.11.1, 0.14.0, 0.30.0,
0.33.0, 0.34.0): the log that showed it is one case, a text written from the source in another form is the
other, and a text beside it that the rule must not take is a third. The source checks skip where the wheels
are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import read_log, reads, vllm_traceback, wheel_text_test


_DUMP = "vllm/logging_utils/dump_input.py"
_DUMP_OUTPUT = 'logger.error("Dumping scheduler output for model execution: %s", dump_obj)'
_DUMP_STATS = 'logger.error("Dumping scheduler stats: %s", scheduler_stats)'
_RERAISE = ("dump_engine_exception(\n                self.vllm_config, scheduler_output, self.scheduler.make_stats()\n"
            "            )\n            raise err")
SOURCES = [
    # the engine core's dump of the step it failed on, then the re-raise (log_error_detail)
    ("0.11.1", _DUMP, _DUMP_OUTPUT), ("0.30.0", _DUMP, _DUMP_OUTPUT), ("0.33.0", _DUMP, _DUMP_OUTPUT),
    ("0.34.0", _DUMP, _DUMP_OUTPUT), ("0.30.0", _DUMP, _DUMP_STATS), ("0.34.0", _DUMP, _DUMP_STATS),
    ("0.30.0", "vllm/v1/engine/core.py", _RERAISE),
    # the API server's chat-template warmup: caught, logged, startup goes on
    ("0.14.0", "vllm/entrypoints/openai/serving_chat.py",
     "# Log but don't fail server startup if warmup fails\n            logger.exception(\"Chat template warmup failed\")"),
    ("0.14.0", "vllm/entrypoints/openai/serving_chat.py", "await self._preprocess_chat("),
    ("0.14.0", "vllm/entrypoints/openai/api_server.py", "await state.openai_serving_chat.warmup()"),
    ("0.30.0", "vllm/renderers/base.py", 'logger.warning("Chat template warmup failed", exc_info=True)'),
    ("0.33.0", "vllm/renderers/base.py", 'logger.warning("Chat template warmup failed", exc_info=True)'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


# --- the engine core's dump of the step it failed on, cut above its first record --------------------------

_TAG = "(EngineCore_DP0 pid=7) ERROR 12-03 10:00:00 [dump_input.py:79] "


def test_the_scheduler_output_dump_is_the_engine_dying_while_serving():
    """vu06: only the dump's "Dumping scheduler output for model execution: SchedulerOutput(...)" and the
    stats record, cut; read not crashed (launch) before."""
    assert reads(read_log("vu06.log")) == (True, "unknown", "serving")
    stats = _TAG.replace(":79", ":81") + "Dumping scheduler stats: SchedulerStats(num_running_reqs=2, "
    assert reads(stats, family="vllm") == (True, "unknown", "serving")


def test_a_scheduler_output_printed_otherwise_is_not_it():
    """A debug print of a SchedulerOutput, or the dump's words with no object under another file's stamp, is no dump
    of a failed step. (Round 70: any ERROR line under dump_input.py's own stamp is that dump, whatever its text: the
    file writes only inside dump_engine_exception, logging_utils/dump_input.py:69-81 (0.10.1.1), so this near miss
    moved to another file's stamp.)"""
    debug = "(EngineCore_DP0 pid=7) DEBUG 12-03 10:00:00 [core.py:400] scheduled SchedulerOutput(scheduled_new_reqs=[])"
    assert reads(debug, family="vllm")[0] is False
    other = (_TAG.replace("dump_input.py", "debug_utils.py")
             + "Dumping scheduler output for model execution: <failed to dump>")
    assert reads(other, family="vllm")[0] is False


# --- the chat-template warmup's caught error ----------------------------------------------------------------

_CHAT = "(APIServer pid=1) ERROR 01-08 12:21:38 [serving_chat.py:222] "
_WARMUP = ("vllm/entrypoints/openai/serving_chat.py", 201, "warmup", "await self._preprocess_chat(")
_PREP = ("vllm/entrypoints/openai/serving_engine.py", 1209, "_preprocess_chat",
         "request_prompt = apply_hf_chat_template(")
_EXC = ("vllm.entrypoints.chat_utils.ChatTemplateResolutionError: As of transformers v4.44, default chat "
        "template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.")


def test_the_chat_template_warmups_error_is_no_requests_and_no_crash():
    """vu08: the traceback's tail, then the warnings module quoting the logging call
    ('logger.exception("Chat template warmup failed")'); read one request's error before. And the whole
    record as 0.14.0 writes it (its message above the traceback)."""
    assert reads(read_log("vu08.log"))[:2] == (False, None)
    whole = _CHAT + "Chat template warmup failed\n" + vllm_traceback(_WARMUP, _PREP, exc=_EXC, head=_CHAT)
    assert reads(whole, family="vllm")[:2] == (False, None)


def test_the_renderers_warmup_warning_is_no_crash_either():
    """0.30.0 and later log the same warmup's error at WARNING from the renderer (renderers/base.py:370)."""
    head = "(APIServer pid=1) WARNING 01-08 12:21:38 [base.py:370] "
    render = ("vllm/renderers/base.py", 364, "warmup",
              'self.render_chat([[{"role": "user", "content": "warmup"}]], chat_params)')
    text = head + "Chat template warmup failed\n" + vllm_traceback(render, exc="ValueError: boom", head=head)
    assert reads(text, family="vllm")[:2] == (False, None)


def test_another_error_logged_at_startup_is_still_a_crash():
    """A traceback under another record at the same place is not the warmup's."""
    head = "(APIServer pid=1) ERROR 01-08 12:21:38 [api_server.py:300] "
    text = head + "Something else failed\n" + vllm_traceback(_WARMUP, exc="ValueError: boom", head=head)
    assert reads(text, family="vllm")[:2] == (True, "unknown")


def test_a_chat_requests_preprocessing_error_stays_one_requests():
    """The same frames under the request handler's own record stay one request's error."""
    handler = ("vllm/entrypoints/openai/serving_chat.py", 288, "create_chat_completion",
               "await self._preprocess_chat(")
    request = (_CHAT + "Error in preprocessing prompt inputs\n"
               + vllm_traceback(handler, _PREP, exc=_EXC, head=_CHAT))
    assert reads(request, family="vllm")[:2] == (False, "request_error")
