"""The rules that held-out round 32 of the vLLM corpus (w3201-w3217, measured once at 0611703 with its logs
77abcaa) showed missing: an EAGLE head's loader meeting a checkpoint tensor it has no parameter for (w3201: a
draft trained with another layer than the head vLLM builds); the draft-model proposer refusing a draft TP that
is not the target's (w3203); a package that subscripts a class only a newer Python makes generic, failing at
its import (w3207); gpt-oss's Harmony vocabulary file missing or empty (w3208); an argparse refusal that a
later start of the server shows was an earlier run's (w3209); a `--chat-template` that is neither a file nor a
template (w3210).

Each rule is general and cited from vLLM's source (its wheels) or the library's: the log that showed it is one
case, a text written from the source in another form is the other, and a text beside it that the rule must not
take is a third. The source checks skip where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_EAGLE3 = "vllm/model_executor/models/llama_eagle3.py"
_DRAFT = "vllm/v1/spec_decode/draft_model.py"
_TP_TEXT = "f\"Currently, 'draft_tensor_parallel_size' and 'tensor_parallel_size' \""
_CHAT = "vllm/entrypoints/chat_utils.py"
test_each_rules_text_is_vllms_own = wheel_text_test([
    # the EAGLE-3 head's loader looks each checkpoint name up among its own parameters
    ("0.20.0", _EAGLE3, "                param = params_dict[name]"),
    ("0.20.0", _EAGLE3, 'name = name.replace("midlayer.", "layers.0.")'),
    ("0.20.0", "vllm/model_executor/models/registry.py",
     '"Eagle3LlamaForCausalLM": ("llama_eagle3", "Eagle3LlamaForCausalLM"),'),
    ("0.20.0", "vllm/model_executor/models/llama_eagle.py", "param = params_dict[name]"),
    # the draft-model proposer's TP check
    ("0.15.1", _DRAFT, _TP_TEXT), ("0.20.0", _DRAFT, _TP_TEXT), ("0.27.1", _DRAFT, _TP_TEXT),
    ("0.20.0", _DRAFT, "self._raise_if_draft_tp_mismatch()"),
    # the chat template's check before the server starts
    ("0.6.4.post1", _CHAT, 'f"appears path-like, but doesn\'t exist!")'),
    ("0.9.1", _CHAT, 'f"appears path-like, but doesn\'t exist!")'),
    ("0.20.0", _CHAT, 'f"appears path-like, but doesn\'t exist! "'),
    ("0.20.0", _CHAT, 'raise FileNotFoundError("the supplied chat template path doesn\'t exist")'),
    ("0.20.0", "vllm/entrypoints/openai/cli_args.py", "validate_chat_template(args.chat_template)"),
    # gpt-oss's Harmony encoding, loaded by the API server
    ("0.15.1", "vllm/entrypoints/openai/parser/harmony_utils.py",
     "_harmony_encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)"),
    ("0.27.1", "vllm/entrypoints/openai/parser/harmony_utils.py",
     "_harmony_encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)"),
    # a start's lines that only a parse that succeeded logs
    ("0.9.1", "vllm/entrypoints/openai/api_server.py", 'logger.info("vLLM API server version %s", VLLM_VERSION)'),
    ("0.9.1", "vllm/entrypoints/openai/cli_args.py", 'logger.info("non-default args: %s", non_default_args)'),
    ("0.20.0", "vllm/entrypoints/utils.py", 'message = "vLLM server version %s, serving model %s"'),
    ("0.27.1", "vllm/entrypoints/serve/utils/api_utils.py",
     'logger.info("non-default args: %s", non_default_args)'),
    # vLLM's own start line names the address it serves on
    ("0.9.1", "vllm/entrypoints/openai/api_server.py", 'logger.info("Starting vLLM API server %d on %s"'),
    ("0.20.0", "vllm/entrypoints/openai/api_server.py", 'logger.info("Starting vLLM server on %s", listen_address)'),
])

_LOADER = [("vllm/v1/worker/gpu_model_runner.py", 4802, "load_model", "self.drafter.load_model(self.model)"),
           ("vllm/model_executor/model_loader/default_loader.py", 381, "load_weights",
            "loaded_weights = model.load_weights(self.get_all_weights(model_config, model))")]


def test_an_eagle_heads_loader_meeting_a_tensor_it_lacks_is_a_draft_that_does_not_fit():
    assert reads(read_log("w3201.log")) == (True, "draft_incompatible", "load_weights")
    assert vllm_signature(read_log("w3201.log")) == "vllm_eagle_head_params"
    eagle1 = vllm_traceback(*_LOADER, ("vllm/model_executor/models/llama_eagle.py", 152, "load_weights",
                                       "param = params_dict[name]"),
                            exc="KeyError: 'layers.0.mlp.experts.0.w1.weight'")
    assert vllm_signature(eagle1) == "vllm_eagle_head_params"
    # near miss: the same lookup in the target's own model is a checkpoint the loader cannot place
    target = eagle1.replace("llama_eagle.py", "llama.py")
    assert reads(target, "vllm")[:2] == (True, "weights_unreadable")
    # near miss: NVIDIA's Eagle 2.5 vision-language model is no EAGLE drafter
    vlm = eagle1.replace("llama_eagle.py", "eagle2_5_vl.py")
    assert vllm_signature(vlm) != "vllm_eagle_head_params"


_PROPOSER = [("vllm/v1/worker/gpu_model_runner.py", 592, "__init__", "self.drafter = DraftModelProposer("),
             (_DRAFT, 31, "__init__", "self._raise_if_draft_tp_mismatch()"),
             (_DRAFT, 47, "_raise_if_draft_tp_mismatch", "raise ValueError(")]
_TP_REFUSED = ("ValueError: Currently, 'draft_tensor_parallel_size' and 'tensor_parallel_size' must be the same. "
               "Got 2 and 8. Please pass 'draft_tensor_parallel_size' in the speculative_config.")


def test_a_draft_tp_other_than_the_targets_is_refused_at_launch():
    assert reads(read_log("w3203.log")) == (True, "bad_argument", "launch")
    assert vllm_signature(read_log("w3203.log")) == "vllm_draft_tp_mismatch"
    found = vllm_traceback(*_PROPOSER, exc=_TP_REFUSED)
    assert reads(found, "vllm")[:2] == (True, "bad_argument")
    assert vllm_signature(found) == "vllm_draft_tp_mismatch"
    # near miss: V0's tensor-parallel draft failing while serving is another check
    v0 = found.replace(_TP_REFUSED, "ValueError: Cannot handle cases where distributed draft workers generate "
                                    "no tokens")
    assert vllm_signature(v0) != "vllm_draft_tp_mismatch"


_IMPORTED = [("vllm/compilation/passes/fusion/allreduce_rms_fusion.py", 90, "<module>",
              "import flashinfer.comm as _flashinfer_comm"),
             ("flashinfer/comm/fd_exchange.py", 55, "<module>",
              "def _fd_ancillary(fd: int) -> tuple[tuple[int, int, array.array[int]]]:")]


def test_a_package_subscripting_a_class_only_a_newer_python_makes_generic_is_a_dependency_mismatch():
    assert reads(read_log("w3207.log")) == (True, "dependency_mismatch", "graph_capture")
    assert vllm_signature(read_log("w3207.log")) == "vllm_python_too_old"
    # Python 3.8's words for a builtin subscripted before 3.9 made it generic
    py38 = vllm_traceback(("vllm/config.py", 12, "<module>", "def f(x: list[int]) -> None:"),
                          exc="TypeError: 'type' object is not subscriptable")
    assert reads(py38, "vllm")[:2] == (True, "dependency_mismatch")
    assert vllm_signature(py38) == "vllm_python_too_old"
    # near miss: the same TypeError raised inside a running function is the code's, not the interpreter's
    running = vllm_traceback(*_IMPORTED[:1], ("vllm/model_executor/layers/sampler.py", 300, "forward",
                                              "probs = array.array[0]"),
                             exc="TypeError: type 'array.array' is not subscriptable")
    assert vllm_signature(running) != "vllm_python_too_old"


_API = "(APIServer pid=21) "
_HARMONY = [("vllm/entrypoints/openai/parser/harmony_utils.py", 83, "get_encoding",
             "_harmony_encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)"),
            ("openai_harmony/__init__.py", 699, "load_harmony_encoding",
             "inner: _PyHarmonyEncoding = _load_harmony_encoding(name)")]
_READY = _API + "INFO 02-09 09:58:07 [api_server.py:665] Supported tasks: ['generate']\n"


def test_a_harmony_vocabulary_missing_or_empty_is_a_model_file_not_found():
    assert reads(read_log("w3208.log")) == (True, "model_not_found", "ready")
    assert vllm_signature(read_log("w3208.log")) == "vllm_harmony_vocab_missing"
    missing = vllm_traceback(*_HARMONY, head=_API, exc="openai_harmony.HarmonyError: invalid tiktoken vocab "
                             "file: No such file or directory (os error 2)")
    assert reads(_READY + missing, "vllm") == (True, "model_not_found", "ready")
    offline = vllm_traceback(*_HARMONY, head=_API, exc="openai_harmony.HarmonyError: error downloading or "
                             "loading vocab file: failed to download or load vocab file")
    assert vllm_signature(_READY + offline) == "vllm_harmony_vocab_missing"
    # near miss: Harmony refusing a message it parses is a request's, not its vocabulary's
    parsing = vllm_traceback(*_HARMONY, head=_API, exc="openai_harmony.HarmonyError: unexpected tokens "
                             "remaining in message header")
    assert vllm_signature(_READY + parsing) != "vllm_harmony_vocab_missing"


_USAGE = "usage: api_server.py [-h] [--host HOST] [--port PORT]\n"
_REFUSED = "api_server.py: error: unrecognized arguments: --enable-metrics\n"
_BIND = vllm_traceback(("vllm/entrypoints/openai/api_server.py", 1263, "create_server_socket", "sock.bind(addr)"),
                       exc="OSError: [Errno 98] Address already in use", head="")
_STARTED = "INFO 06-20 20:03:41 [api_server.py:1287] vLLM API server version 0.9.1\n"


def test_an_argparse_refusal_a_later_start_follows_is_an_earlier_runs():
    assert reads(read_log("w3209.log")) == (True, "port_in_use", "launch")
    assert reads(_USAGE + _REFUSED + _STARTED + _BIND, "vllm") == (True, "port_in_use", "launch")
    newer = _STARTED.replace("vLLM API server version 0.9.1", "vLLM server version 0.20.0, serving model m")
    assert reads(_USAGE + _REFUSED + newer + _BIND, "vllm")[:2] == (True, "port_in_use")
    # a deploy script's own "Starting vLLM server..." is no start of vLLM's server (which names its address)
    wrapper = "2025-06-20 20:03:33,664 - __main__ - INFO - Starting vLLM server...\n"
    assert reads(wrapper + _STARTED + _BIND, "vllm") == (True, "port_in_use", "launch")
    own = "INFO 06-20 20:05:00 [api_server.py:1349] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    assert reads(_STARTED + own + _BIND, "vllm")[2] == "ready"
    # near miss: with no later start the refusal is the run's end
    assert reads(_USAGE + _REFUSED, "vllm")[:2] == (True, "bad_argument")
    assert reads(_STARTED + _USAGE + _REFUSED, "vllm")[:2] == (True, "bad_argument")


_TEMPLATE = [("vllm/entrypoints/openai/cli_args.py", 370, "validate_parsed_serve_args",
              "validate_chat_template(args.chat_template)"),
             (_CHAT, 1111, "validate_chat_template", "raise ValueError(")]


def test_a_chat_template_that_is_neither_a_file_nor_a_template_is_a_bad_argument():
    assert reads(read_log("w3210.log")) == (True, "bad_argument", "launch")
    assert vllm_signature(read_log("w3210.log")) == "vllm_chat_template_missing"
    newer = vllm_traceback(*_TEMPLATE, head="", exc="ValueError: The supplied chat template string (chatml.jinja) "
                           "appears path-like, but doesn't exist! Tried: chatml.jinja and /usr/lib/python3.12/"
                           "site-packages/vllm/transformers_utils/chat_templates/chatml.jinja")
    assert reads(newer, "vllm") == (True, "bad_argument", "launch")
    # near miss: a template that loads and then fails to render a request is the request's
    render = vllm_traceback(*_TEMPLATE[:1], head="", exc="jinja2.exceptions.TemplateSyntaxError: unexpected '}'")
    assert vllm_signature(render) != "vllm_chat_template_missing"
