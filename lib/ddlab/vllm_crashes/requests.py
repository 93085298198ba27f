"""vLLM: one request's errors, the OpenAI server answering it with an error and serving on.

Signatures marked ``request`` (:mod:`ddlab.diagnosis.rootcause`: they never make a crash of
their own). Cited as :mod:`.vllm` cites: ``(release, "vllm/path.py:line")`` in the wheels.
"""

from __future__ import annotations

from ddlab.device_crashes.device import CUDA_FAULT_WORDS
from ddlab.vllm_crashes.library import V0
from ddlab.crashes.signature import Signature

__all__ = ["REQUEST_TOO_LONG", "STREAM_ERROR", "PREPROCESS_ERROR", "MODEL_CHECK_ERROR", "GRAMMAR_REJECTED",
           "CAUGHT", "CAUGHT_SOURCES", "ENGINE_STREAMS", "UTILITY_FAILED", "HANDLER_LOGGED", "OMNI_STAGE_ERROR",
           "TOOL_PARSER_ERROR", "ADD_LORA_FAILED", "OMNI_STAGE_RESULT_RAISED", "STICKY_CUDA_FAULT"]

_V0 = V0

# (round 26) the engine's own check of one request's prompt against max_model_len: V0's
# _validate_model_input (0.6.4.post1 engine/llm_engine.py:2025, 0.7.3 :1960; its later form, prompt_type
# named, is V1's), V1's input processor (0.30.0 v1/engine/input_processor.py:472, 0.34.0 :584, :594); V0's
# async engine hands the ValueError to that request's stream and steps on (0.7.3
# engine/async_llm_engine.py:736-743)
_PROMPT_TOO_LONG = (r"\bThe (?:(?:decoder|encoder) )?prompt \((?:total )?length \d+\) "
                    r"(?:is longer than the maximum model length of \d+"
                    r"|plus the number of requested output tokens|is too long to fit into the model)")

# (round 75) V0's scheduler, admitting a waiting prompt longer than its limit (max_model_len, or the batched-token
# budget) or than the block manager can ever hold: it warns, marks the prompt's sequences FINISHED_IGNORED, sets the
# group aside and goes on to the next (0.6.3.post1 core/scheduler.py:894-902, :914-923; 0.5.0 :669-676, :683-691; the
# texts at :895, :915 (0.6.4.post1), :1092 (0.7.3)); the engine answers the ignored request as finished
# (engine/llm_engine.py:1189 (0.6.3.post1)) and steps on
_PROMPT_IGNORED = (r"\bInput prompt \(\d+ tokens\)(?: \+ lookahead slots \(\d+\))? is too long"
                   r" and exceeds (?:limit of \d+|the capacity of block_manager)")

# the OpenAI server refusing one request (answered 400) while it keeps serving
REQUEST_TOO_LONG = Signature(
    "vllm_request_refused", "request_error", "vLLM refused one request",
    ("One request was refused and the server kept serving: a prompt plus `max_tokens` longer than "
     "`--max-model-len`, or input the chat template cannot render. Shorten the request or its "
     "`max_tokens`; a longer `--max-model-len` needs the KV cache to hold it.",),
    patterns=(r"This model's maximum context length is \d+ tokens", _PROMPT_TOO_LONG, _PROMPT_IGNORED),
    lines=(r"This model's maximum context length is \d+ tokens", _PROMPT_TOO_LONG, _PROMPT_IGNORED),
    priority=12, request=True, phase="serving",
    sources=((_V0, "vllm/entrypoints/openai/serving_engine.py:274"),
             (_V0, "vllm/entrypoints/openai/serving_chat.py:170"),
             ("0.30.0", "vllm/renderers/params.py:365"), ("0.33.0", "vllm/renderers/params.py:405"),
             ("0.34.0", "vllm/renderers/params.py:405"),
             (_V0, "vllm/engine/llm_engine.py:2025"), ("0.7.3", "vllm/engine/llm_engine.py:1960"),
             ("0.7.3", "vllm/engine/async_llm_engine.py:736"),
             ("0.30.0", "vllm/v1/engine/input_processor.py:472"),
             ("0.34.0", "vllm/v1/engine/input_processor.py:584"),
             (_V0, "vllm/core/scheduler.py:895"), (_V0, "vllm/core/scheduler.py:915"),
             ("0.7.3", "vllm/core/scheduler.py:1092")))

# the OpenAI server's streaming handlers catch what one request's stream raised, log it with its
# traceback and send the client an error chunk (logger.exception, then create_error_response):
# one request's error, the server serves on. Ranked below every other signature, so an error
# of a kind of its own (a dead engine, a CUDA fault) raised into the stream keeps that kind
_STREAM_ERROR = r"Error in (?:chat )?completion stream generator\."
# the handler that caught it is the traceback's outermost frame (chat_completion/serving.py:473,
# :510, completion/serving.py:343 (0.34.0); serving_chat.py:250, serving_completion.py:232 (0.6.4.post1))
_STREAM_FRAME = r", in (?:chat_)?completion_stream_generator(?:_raw)?\s*$"
STREAM_ERROR = Signature(
    "vllm_stream_error", "request_error", "one streamed request failed in its handler",
    ("One streamed request raised in vLLM's OpenAI handler and got an error chunk; the server kept "
     "serving. The traceback under \"Error in ... stream generator\" names the request's fault (its "
     "sampling or structured-output parameters, the chat template): fix the request, or report the "
     "traceback if the request is valid.",),
    patterns=(r".",), context=(rf"{_STREAM_ERROR}|{_STREAM_FRAME}",), lines=(_STREAM_ERROR,), cut_ok=True,
    priority=4, request=True, phase="serving",
    sources=((_V0, "vllm/entrypoints/openai/serving_chat.py:577"),
             ("0.30.0", "vllm/entrypoints/openai/chat_completion/serving.py:906"),
             ("0.30.0", "vllm/entrypoints/openai/completion/serving.py:498"),
             ("0.34.0", "vllm/entrypoints/openai/chat_completion/serving.py:963"),
             ("0.34.0", "vllm/entrypoints/openai/completion/serving.py:623"),
             ("0.34.0", "vllm/entrypoints/openai/chat_completion/serving.py:510")))

# (round 57) V0's AsyncLLMEngine hands each open request's stream the exception its engine loop died
# of: the loop's task ends only by an exception (engine/async_llm_engine.py:48-53, :69 error_callback),
# and the callback marks the engine errored and propagates that exception to every stream (:682-684,
# :145-156); only a request's own ValueError from add_request goes to that one request (:737-739). So a
# handler's traceback through generate's stream (:1006, ``async for output in await self.add_request(``;
# all 0.7.2) that raised an error of a crash's kind (a CUDA OOM in the forward) is the engine's death
ENGINE_STREAMS = r'engine[/\\]async_llm_engine\.py", line \d+, in generate\s*$'

# the OpenAI server's handlers render and tokenize each request's prompt; what that raises is logged
# with its traceback and answered with an error (logger.exception("Error in preprocessing prompt
# inputs"), then create_error_response): one request's error. The handler is the traceback's outer
# frame under vllm/entrypoints/openai/ (the offline LLM's own _preprocess_chat, entrypoints/common/,
# is no request). Ranked low like the stream's (round 5)
_PREPROCESS = r"Error in preprocessing prompt inputs"
_HANDLER_FRAME = (r"entrypoints[/\\]openai[/\\][\w/\\]*\.py\", line \d+, in (?:create_chat_completion"
                  r"|create_completion|create_embedding|_preprocess_chat|_preprocess_completion"
                  r"|render_chat_request|render_completion_request)\s*$")
PREPROCESS_ERROR = Signature(
    "vllm_request_preprocess", "request_error", "one request's prompt could not be prepared",
    ("The OpenAI server could not render or tokenize one request's prompt (its messages, the chat "
     "template, its length) and answered it with an error; the server kept serving. The message under "
     "the traceback names the request's fault: fix the request (a prompt plus `max_tokens` within "
     "`--max-model-len`, messages the chat template takes).",),
    patterns=(r".",), context=(rf"{_PREPROCESS}|{_HANDLER_FRAME}",), lines=(_PREPROCESS,), cut_ok=True,
    priority=4, request=True, phase="serving",
    sources=((_V0, "vllm/entrypoints/openai/serving_chat.py:170"),
             (_V0, "vllm/entrypoints/openai/serving_completion.py:112"),
             (_V0, "vllm/entrypoints/openai/serving_engine.py:424"),
             ("0.34.0", "vllm/entrypoints/openai/chat_completion/serving.py:288"),
             ("0.34.0", "vllm/entrypoints/openai/completion/serving.py:160"),
             # (round 9) the completion handler's renderer step, as the chat one's
             ("0.30.0", "vllm/entrypoints/openai/completion/serving.py:88"),
             ("0.34.0", "vllm/entrypoints/openai/completion/serving.py:139")))

# (round 27) what the OpenAI chat and completion handlers log at ERROR they log for one request and then
# answer it with an error (every logger.exception / logger.error of entrypoints/openai/serving_chat.py and
# serving_completion.py is followed by create_error_response or an error chunk: serving_chat.py:156-157
# "Error in applying chat template from request" (0.6.3.post1; :158 in 0.6.3's sdist), :170-171
# (0.6.4.post1), :197-198 (0.7.3), :1343-1345 (0.14.0); serving_completion.py:112-113 (0.7.3), :512
# (0.14.0)); vLLM's formatter repeats the record's stamp, "serving_chat.py:N]", on each line of its
# traceback. A traceback (or its last line alone) under that stamp is that request's error whatever it
# raised: :func:`ddlab.diagnosis.vllm_records.with_handler_records` reads the stamp and gives it this
# signature. Its lines are 0.6.3's own record messages for it (the chat template, the multi-modal data),
# which a traceback right under them takes as the preprocessing one's does. Above the access line's 4xx (8):
# the handler's own traceback names the request's fault, the 400 after it only that one went out (vt23)
_HANDLER_MESSAGES = (r"Error in applying chat template from request", r"Error in loading multi-modal data")
HANDLER_LOGGED = Signature(
    "vllm_request_handler_error", "request_error",
    "vLLM's OpenAI handler logged one request's error and answered it",
    ("vLLM's chat or completion handler caught an error of one request, logged it and answered that request "
     "with an error (HTTP 400 unless told); the server kept serving. The exception names the request's "
     "fault: a chat template that does not parse or render (the model's, or `--chat-template`), messages "
     "it refuses, a prompt longer than `--max-model-len`; fix the template or the request.",),
    lines=_HANDLER_MESSAGES, priority=9, request=True, phase="serving",
    sources=(("vllm 0.6.3.post1", "vllm/entrypoints/openai/serving_chat.py:156, :162"),
             (_V0, "vllm/entrypoints/openai/serving_chat.py:170"),
             ("0.7.3", "vllm/entrypoints/openai/serving_chat.py:197"),
             ("0.7.3", "vllm/entrypoints/openai/serving_completion.py:112"),
             ("vllm 0.14.0", "vllm/entrypoints/openai/serving_completion.py:512")))

# (round 24) OpenAIServing checks each request's model name against its base models (_check_model ->
# _is_model_supported, whose generator expression is the innermost frame: serving_engine.py:194, :639-640
# (0.6.4.post1), :173, :486-487 (0.6.3.post1)): what that raises fails the one request being checked
_MODEL_CHECK = (r'entrypoints[/\\]openai[/\\]serving_engine\.py", line \d+, in '
                r"(?:_check_model|_is_model_supported|<genexpr>\n\s*"
                r"return any\(model\.name == model_name for model in self\.base_model_paths\))")
MODEL_CHECK_ERROR = Signature(
    "vllm_request_model_check", "request_error", "one request's model name could not be checked",
    ("The OpenAI server failed while checking one request's `model` against the served names and "
     "answered it with an error. A server built by code of its own (a Ray Serve deployment) must hand "
     "OpenAIServing the base model paths in this release's types (BaseModelPath, not plain strings): "
     "use the example of the installed vLLM release.",),
    patterns=(r".",), context=(_MODEL_CHECK,), cut_ok=True, priority=4, request=True, phase="serving",
    sources=((_V0, "vllm/entrypoints/openai/serving_engine.py:640"),
             (_V0, "vllm/entrypoints/openai/serving_engine.py:194")))

# (round 20) what the API server catches while it starts and logs with its traceback, then goes on: the chat
# template's warmup renders one dummy chat through the handler's own _preprocess_chat, so its traceback
# looks like a request's, but no request was made and nothing stops ("Log but don't fail server startup if
# warmup fails": entrypoints/openai/serving_chat.py:222 (0.14.0) logger.exception, called from
# api_server.py:1096 init_app_state; renderers/base.py:370 (0.30.0), :383 (0.33.0) logger.warning with
# exc_info, the traceback at WARNING)
CAUGHT = (r"Chat template warmup failed",)
CAUGHT_SOURCES = (("0.14.0", "vllm/entrypoints/openai/serving_chat.py:222"),
                  ("0.14.0", "vllm/entrypoints/openai/api_server.py:1096"),
                  ("0.30.0", "vllm/renderers/base.py:370"), ("0.33.0", "vllm/renderers/base.py:383"))

# (round 12) structured output: the grammar refusing a token the model chose. The xgrammar backend logs
# each token its matcher does not accept ("Failed to advance FSM for request %s for tokens %s. Please
# file an issue.", v1/structured_output/backend_xgrammar.py:169 (0.30.0), :276 (0.33.0)) and the
# scheduler, whose accept_tokens then fails, finishes that one request with an error ("Unexpected:
# grammar rejected tokens %s for request %s. Terminating request.", v1/core/sched/scheduler.py:2058
# (0.30.0), :2436 (0.33.0), :2492 (0.34.0): request.status = FINISHED_ERROR); the engine steps on
_GRAMMAR = (r"Failed to advance FSM for request \S+ for tokens \d+",
            r"Unexpected: grammar rejected tokens \[[\d, ]*\] for request \S+\. Terminating request")
GRAMMAR_REJECTED = Signature(
    "vllm_grammar_rejected", "request_error", "the grammar refused a token of one structured-output request",
    ("One structured-output request was ended because its grammar refused a token the model produced "
     "(xgrammar's matcher would not advance); the engine kept serving. With speculative decoding "
     "(MTP, EAGLE, n-gram), a run of drafted tokens is checked at once: retry that request without "
     "speculative decoding or without the grammar to see which one; otherwise check that the schema "
     "and the tokenizer's special tokens agree, or try another `--structured-outputs-config` backend.",),
    lines=_GRAMMAR, priority=6, request=True, phase="serving",
    sources=(("0.30.0", "vllm/v1/structured_output/backend_xgrammar.py:169"),
             ("0.33.0", "vllm/v1/structured_output/backend_xgrammar.py:276"),
             ("0.30.0", "vllm/v1/core/sched/scheduler.py:2058"),
             ("0.33.0", "vllm/v1/core/sched/scheduler.py:2436"),
             ("0.34.0", "vllm/v1/core/sched/scheduler.py:2492")))

# (round 23) the V1 engine core's utility calls: a client (the API server, or a trainer's weight-sync calls
# through it: collective_rpc, reset_prefix_cache) asks the engine to run a method; what the method raises
# is logged with its traceback and sent back to the caller as the call's failure, and the engine's busy
# loop goes on (EngineCoreProc._invoke_utility_method: logger.exception("Invocation of %s method failed",
# name), then output.failure_message = "Call to ... method failed": v1/engine/core.py:2055-2056 (0.34.0),
# :1849 (0.33.0), :1609 (0.30.0), :918 (0.11.1), :459-461 (0.8.5.post1), :349 (0.7.3)). The caller's error, not
# the engine's death, whatever the method raised (round 58: an NCCL error of a weight-sync communicator's init);
# :func:`ddlab.diagnosis.vllm_records.with_utility_records` gives it the record's traceback under its stamp
_UTILITY = r"Invocation of \w+ method failed"
UTILITY_FAILED = Signature(
    "vllm_utility_call_failed", "request_error", "one utility call to the engine core failed and was answered",
    ("A client's call into the engine core (a utility method: collective_rpc, a weight update, a cache "
     "reset) raised; the engine logged it, answered the caller with the failure and kept serving. The "
     "traceback under \"Invocation of ... method failed\" names the method's own fault (for collective_rpc, "
     "the worker method it ran: a weight-sync communicator an RL trainer sets up); fix that call, or "
     "the caller's setup, and retry.",),
    lines=(_UTILITY,), priority=4, request=True, phase="serving",
    sources=(("0.34.0", "vllm/v1/engine/core.py:2055"), ("0.33.0", "vllm/v1/engine/core.py:1849"),
             ("0.30.0", "vllm/v1/engine/core.py:1609"), ("vllm 0.8.5.post1", "vllm/v1/engine/core.py:459"),
             ("0.7.3", "vllm/v1/engine/core.py:349")))

# (round 58) vllm-omni's stages: a stage worker catches what one batch raised, logs it and puts an error result
# for each of the batch's requests on its output queue, then takes the next batch (vllm-omni 0548674
# vllm_omni/entrypoints/omni_stage.py:720-729, inside its ``while True``); the orchestrator logs "Stage %s error
# on request %s: %s" for that request and goes on to the next result (entrypoints/omni_llm.py:355-362 and
# async_omni.py:366-373, ``continue``; later "[OmniLLM] Stage ..." and the async one raising into that request
# alone). One request's error: the stages keep serving
_OMNI_STAGE = r"\bStage \d+ error on request \S+: "
_OMNI = "vllm-omni (vllm-project/vllm-omni 0548674)"
OMNI_STAGE_ERROR = Signature(
    "vllm_omni_stage_request_error", "request_error", "one request failed in a vllm-omni stage",
    ("A vllm-omni stage failed on one batch of requests (the text after \"error on request ...:\" is what "
     "that batch raised); the stage answered those requests with the error and went on to the next batch. "
     "The stage worker's own log (its \"Failed on batch\" record) holds the traceback: fix that request's "
     "inputs, or report the traceback if the request is valid.",),
    lines=(_OMNI_STAGE,), priority=4, request=True, phase="serving",
    sources=((_OMNI, "vllm_omni/entrypoints/omni_stage.py:721"), (_OMNI, "vllm_omni/entrypoints/omni_llm.py:357"),
             (_OMNI, "vllm_omni/entrypoints/async_omni.py:368")))

# (round 76) the tool-call parsers catch what parsing one response raised, log it and hand the handler no tool
# call: the whole response's parse returns it as plain content (hermes_tool_parser.py:156-161, "Error in
# extracting tool call from response." (0.11.0); :108 (0.6.3.post1); the granite parsers' "... from response %s",
# granite_tool_parser.py:84 (0.11.0)), the streamed one skips that delta ("Error trying to handle streaming tool
# call.", then ``return None``: hermes_tool_parser.py:453-455 (0.11.0), :337 (0.6.3.post1); a parser copied into a
# plugin logs the same); the chat handler that cannot tell whether to extract tool calls answers a plain completion
# (serving_chat.py:812-816 (0.8.0), :1044 (0.8.5.post1), :1539 (0.13.0), logger.error). One response's tool call
# lost, the server serves on. The traceback under the record (or its frames cut) sits in the parser's
# extract_tool_calls(_streaming), which its own ``except Exception`` wraps
_TOOL_PARSER = (r"Error in extracting tool call from response\b", r"Error trying to handle streaming tool call\b",
                r"Error in chat_completion_full_generator - cannot determine if tools should be extracted")
_TOOL_PARSER_FRAME = r'_tool_parser\.py", line \d+, in extract_tool_calls(?:_streaming)?\s*$'
TOOL_PARSER_ERROR = Signature(
    "vllm_tool_parser_error", "request_error", "a tool-call parser failed on one response and passed it on",
    ("The tool-call parser (`--tool-call-parser`, or a plugin's) could not parse the tool call of one model "
     "response; vLLM answered that response as plain text (a streamed one without that delta) and kept serving. "
     "The model's output does not follow the parser's format: check that the parser matches the model (and its "
     "chat template), or give the request fewer or simpler tools.",),
    patterns=(r".",), context=(rf"{'|'.join(_TOOL_PARSER)}|{_TOOL_PARSER_FRAME}",), lines=_TOOL_PARSER,
    cut_ok=True, priority=4, request=True, phase="serving",
    sources=(("vllm 0.11.0", "vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py:157"),
             ("vllm 0.11.0", "vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py:454"),
             ("vllm 0.6.3.post1", "vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py:108"),
             ("vllm 0.6.3.post1", "vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py:337"),
             ("vllm 0.11.0", "vllm/entrypoints/openai/tool_parsers/granite_tool_parser.py:84"),
             ("vllm 0.8.0", "vllm/entrypoints/openai/serving_chat.py:812"),
             ("vllm 0.8.5.post1", "vllm/entrypoints/openai/serving_chat.py:1044"),
             ("vllm 0.13.0", "vllm/entrypoints/openai/serving_chat.py:1539")))

# (round 86) the engine core's add_lora utility: EngineCore.add_lora runs the workers' add_lora
# (v1/worker/lora_model_runner_mixin.py:274-276 (0.21.0): lora_manager.add_adapter), a utility method the
# client calls; what it raises is caught by _invoke_utility_method, logged under "Invocation of %s method
# failed" and answered to the caller as "Call to add_lora method failed: ..." (v1/engine/core.py:1341
# (0.21.0), :1365 (0.22.0), :1849 (0.33.0), :2055 (0.34.0)), and the engine goes on. A request's own LoRA
# is loaded in the step's set_active_loras, never through this frame. A paste cut above the record's message
# still shows the frame; the fatal handler's text in the log ("EngineCore encountered a fatal error.") wins, and
# (round 93) so does a sticky CUDA fault the call met (STICKY_CUDA_FAULT; diagnosis/vllm_records.py: CUDA's illegal
# memory access leaves the process unable to run CUDA work, the engine's next step dies of it; cuda_illegal_access)
STICKY_CUDA_FAULT = rf"CUDA error: (?:{CUDA_FAULT_WORDS}|device-side assert triggered)"  # device.py's words
_ADD_LORA_FRAME = r'lora_model_runner_mixin\.py", line \d+, in add_lora\s*$'
ADD_LORA_FAILED = Signature(
    "vllm_add_lora_failed", "request_error", "one add_lora call to the engine core failed and was answered",
    ("Loading a LoRA adapter through the engine's add_lora call (`/v1/load_lora_adapter`, a launcher's adapter "
     "load) failed; the engine answered that call with the error and kept serving. The frames name why (the "
     "adapter's rank above `--max-lora-rank`, modules LoRA does not support, a path it cannot read): fix the "
     "adapter or the server's LoRA limits, then load it again.",),
    patterns=(r".",), context=(_ADD_LORA_FRAME,), absent=(r"EngineCore encountered a fatal error", STICKY_CUDA_FAULT),
    cut_ok=True, priority=85, request=True, phase="serving",  # over what the adapter raised (vllm_lora_rank's 80)
    sources=(("vllm 0.21.0", "vllm/v1/engine/core.py:1341"), ("vllm 0.22.0", "vllm/v1/engine/core.py:1365"),
             ("0.33.0", "vllm/v1/engine/core.py:1849"), ("0.34.0", "vllm/v1/engine/core.py:2055"),
             ("vllm 0.21.0", "vllm/v1/worker/lora_model_runner_mixin.py:276")))

# (round 86) the same stage error result raised into its own request: vllm-omni's async generate() takes each
# stage's result for that request from the request's queue and, on an error result (the stage worker's dict
# {"request_id", "stage_id", "error"}: omni_stage.py:826-830 (be81443c)), logs "Stage %s error on request ..."
# and raises RuntimeError(result) into that request alone (async_omni.py:860-867 (be81443c)); the API server's
# handler logs it and answers the request 500 (openai/api_server.py:1246-1248 (vllm-omni 0.30.0), "Chat
# completion failed"), and the stages serve on
_OMNI_RESULT = r"RuntimeError: \{'request_id': '[^']*', 'stage_id': \d+, 'error': "
OMNI_STAGE_RESULT_RAISED = Signature(
    "vllm_omni_stage_result_raised", "request_error", "one request's vllm-omni stage error raised into it",
    OMNI_STAGE_ERROR.advice, types=r"RuntimeError", patterns=(_OMNI_RESULT,), priority=4, request=True,
    phase="serving",
    sources=(("vllm-omni (vllm-project/vllm-omni be81443c)", "vllm_omni/entrypoints/async_omni.py:867"),
             ("vllm-omni (vllm-project/vllm-omni be81443c)", "vllm_omni/entrypoints/omni_stage.py:830"),
             ("vllm-omni 0.30.0", "vllm_omni/entrypoints/openai/api_server.py:1247")))
