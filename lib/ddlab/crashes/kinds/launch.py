"""Launch: arguments, ports, model repositories, draft checkpoints (packages that do not match:
:mod:`.packages`, spliced into :data:`SIGNATURES` where they always stood; a reasoning parser the
tokenizer cannot take: :mod:`.parsers`).

Texts: docs/sglang.md sections 4.5-4.7 (arguments, ports, the hub). The hub's
texts are transformers' and huggingface_hub's, not SGLang's (SGLang adds no
wording); the draft path is resolved before the target's when speculative
decoding is on. In a quoted rejected flag the log's words are kept in double
quotes; a flag ddlab proposes is in backticks (``advice`` checks those).
"""

from __future__ import annotations

import re

from ddlab.crashes.kinds.models import ARCH_UNSUPPORTED, MODEL_TYPE_KEY  # ddlab.vllm_crashes.library voices them from here
from ddlab.crashes.kinds import arg_asserts, packages, parsers, rendezvous
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "ARCH_UNSUPPORTED", "MODEL_TYPE_KEY"]

_USER_ERRORS = r"(?:\w+\.)*(?:ValueError|AssertionError|NotImplementedError|TypeError|KeyError)"
# A flag a runtime error names as its own remedy ("... ran out, try to increase
# --mamba-full-memory-ratio") does not make the error a rejected argument, nor does an
# error the event loop raised: arguments are checked at launch.
_ADVICE_FLAG = (r"\btry (?:to )?(?:increase|decrease|raise|lower|reduce|set|use|enable|disable|add)\b"
                r"[^\n]{0,60}?--[a-z]")
_SERVING_FRAMES = r", in (?:event_loop_\w+|run_batch|forward_batch_generation|process_batch_result\w*)\s*$"
_ARGS_CHECK = r"server_args\.py|arg_groups[/\\]\w+\.py"


def _first(patterns, text: str) -> re.Match | None:
    for pattern in patterns:
        if match := regex(pattern).search(text):
            return match
    return None


def _argparse_detail(found: Found) -> str | None:
    match = _first((r"unrecognized arguments?: (.+)", r"ambiguous option: (--?[\w-]+)",
                    r"argument (--?[\w-]+)"), found.text)
    return f'Rejected: "{match[1].strip()}".' if match else None


def _algorithm_detail(found: Found) -> str | None:
    match = _first((r"Unknown speculative algorithm name: (\w+)", r"invalid choice: '(\w+)'"), found.text)
    name = match[1].upper() if match else ""
    if name == "DDTREE":
        return ("DDTREE exists in no SGLang release, only in the DDTree pull request (#29907) and "
                "forks: install that build on the host.")
    if name == "DFLASH":
        return "DFLASH exists from SGLang 0.5.14: upgrade SGLang on the host."
    return f'"{name}" is not a builtin of this release: check the name.' if name else None


UNKNOWN_ALGORITHM = Signature(
    "unknown_algorithm", "bad_argument", "this SGLang has no such speculative algorithm",
    ("This SGLang build lacks the speculative algorithm it was asked for.",),
    patterns=(r"Unknown speculative algorithm",),
    lines=(r"Unknown speculative algorithm", r"argument --speculative[-_]algorithm: invalid choice"),
    priority=95, phase="launch", detail=_algorithm_detail,
    sources=(("0.4.10.post2", "sglang/srt/server_args.py:1327"),
             ("0.5.10", "sglang/srt/speculative/spec_info.py:31"),
             ("0.5.14", "sglang/srt/speculative/spec_info.py:57"),
             ("0.5.18", "sglang/srt/speculative/spec_info.py:61"),
             ("0.5.20", "sglang/srt/speculative/spec_info.py:66"),
             ("0.5.23", "sglang/srt/speculative/spec_info.py:65")))

ARGPARSE = Signature(
    "argparse", "bad_argument", "the command line was rejected",
    ("Fix the flag argparse names: check its spelling in `python -m sglang.launch_server -h` "
     "on the host (flags are renamed across releases).",),
    lines=(r"\berror: (?:unrecognized arguments?|argument -|the following arguments are required"
           r"|ambiguous option|one of the arguments|invalid choice|expected one argument)",
           r"^usage: \S*(?:launch_server|sglang)\S*(?: serve)? \[-h\]"),
    priority=90, phase="launch", detail=_argparse_detail,
    by_algorithm=(("ddtree", "DDTree's flags (`--speculative-ddtree-budget` ...) exist only in the "
                             "fork's build: install it on the host, or drop them."),),
    sources=(("0.4.10.post2", "sglang/srt/server_args.py:1327"),
             ("0.5.23", "sglang/srt/server_args.py:353")))

MISSING_OPTION = Signature(
    "missing_option", "bad_argument", "the options do not go together",
    ("Add the option the message asks for, or drop the one that conflicts.",),
    patterns=(r"requires (?:setting |specifying |passing )?--[a-z][\w-]+",
              r"--[a-z][\w-]+ (?:is|are) required (?:for|when|with)",
              r"(?:cannot|can ?not|can't) be used (?:with|together)"),
    priority=88, phase="launch",
    by_algorithm=tuple((fam, "This algorithm needs a drafter: `--speculative-draft-model-path`.")
                       for fam in ("dflash", "ddtree", "eagle")),
    sources=(("0.5.14", "sglang/srt/arg_groups/speculative_hook.py:144"),
             ("0.5.23", "sglang/srt/arg_groups/speculative_hook.py:326")))

def _spec_args_detail(found: Found) -> str | None:
    match = regex(r"requires? (speculative_\w+) ?== ?(speculative_\w+) ?\+ ?(\d+), got (\d+) and (\d+)").search(
        found.text)
    if not match:
        return None
    want, base = (f"`--{name.replace('_', '-')}`" for name in match.group(1, 2))
    return f"It got {match[4]} and {match[5]}: set {want} to {base} + {match[3]}."


# A speculative worker checks the speculative arguments it was built with (auto-filled values
# included) and refuses them in its own words, naming the ServerArgs fields: "topk=1 requires
# speculative_num_draft_tokens == speculative_num_steps + 1, got 8 and 5" (0.5.23
# speculative/base_spec_worker.py:126, multi_layer_eagle_worker_v2.py:151; "DFLASH Domino requires
# speculative_num_draft_tokens > 1", dflash_worker_v2.py:527; "DSpark speculative_num_draft_tokens
# must be >= 2", dspark_components/dspark_config.py:55); the same words from the argument checks
# (server_args.py, arg_groups/) are server_args_error
_SPEC_ARG_RULE = (r"\brequires? (?:that )?speculative_[a-z_]+ ?(?:==|!=|>=|<=|>|<|=)",
                  r"\bspeculative_[a-z_]+ must (?:be|match|equal)\b")
SPEC_ARGS_REFUSED = Signature(
    "spec_args_refused", "bad_argument", "the speculative arguments do not go together",
    ("The speculative worker refused its arguments at startup (the release fills steps, top-k and "
     "draft tokens for some models when they are not given): set `--speculative-num-steps`, "
     "`--speculative-eagle-topk` and `--speculative-num-draft-tokens` explicitly, as the message "
     "requires.",),
    types=r"(?:\w+\.)*(?:AssertionError|ValueError)", patterns=_SPEC_ARG_RULE,
    absent=(_SERVING_FRAMES, _ARGS_CHECK), priority=87, phase="launch", detail=_spec_args_detail,
    sources=(("0.5.23", "sglang/srt/speculative/base_spec_worker.py:126"),
             ("0.5.23", "sglang/srt/speculative/multi_layer_eagle_worker_v2.py:151"),
             ("0.5.23", "sglang/srt/speculative/dflash_worker_v2.py:527"),
             ("0.5.23", "sglang/srt/speculative/dspark_components/dspark_config.py:55")))

SERVER_ARGS_ERROR = Signature(
    "server_args_error", "bad_argument", "the server arguments were rejected",
    ("The server arguments were refused while being checked: read the message and fix or drop "
     "the option it names.",),
    patterns=(r".",), types=_USER_ERRORS, context=(_ARGS_CHECK,), priority=40, phase="launch",
    sources=(("0.4.10.post2", "sglang/srt/server_args.py:440"),
             ("0.5.23", "sglang/srt/arg_groups/speculative_hook.py:169")))

FLAG_VALUE = Signature(
    "flag_value_error", "bad_argument", "an option's value was rejected",
    ("An option's value was refused: fix the flag the message names.",),
    patterns=(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)+",), types=_USER_ERRORS,
    absent=(_ADVICE_FLAG, _SERVING_FRAMES), priority=35, phase="launch",
    sources=(("0.5.23", "sglang/srt/arg_groups/speculative_hook.py:177"),))


def _dtype_detail(found: Found) -> str | None:
    match = regex(r"Set dtype=torch\.(\w+)").search(found.text)
    return f"Start the server with `--dtype {match[1]}`, as the message says." if match else None


# a quantization method that builds its weights in one dtype only asserts it and names the setting:
# "float16 is required for MoE compressed models. Set dtype=torch.float16" (0.4.10.post2
# layers/quantization/compressed_tensors/compressed_tensors_moe.py:338, CompressedTensorsWNA16MoEMethod
# .create_weights; the launch's dtype, bfloat16 by default for such a model, is what it refuses)
DTYPE_REQUIRED = Signature(
    "dtype_required", "bad_argument", "the model's quantization needs another --dtype",
    ("The quantized layers are built in one dtype only and the server's dtype is another: set "
     "`--dtype` to the one the message names (or use a checkpoint quantized for the dtype you want).",),
    patterns=(r"\bis required for [\w ]+\. Set dtype=torch\.\w+",), types=_USER_ERRORS, priority=45,
    phase="load_weights", detail=_dtype_detail,
    sources=(("0.4.10.post2",
              "sglang/srt/layers/quantization/compressed_tensors/compressed_tensors_moe.py:338"),))


def _quant_dtype_detail(found: Found) -> str | None:
    match = regex(r"is not supported for quantization method \w+\. Supported dtypes: \[torch\.(\w+)").search(
        found.text)
    return f"The method takes `--dtype {match[1]}` (the first dtype it lists)." if match else None


# (round 31) the loader checks the launch's dtype against every quantization method's activation dtypes
# (get_supported_act_dtypes): "torch.bfloat16 is not supported for quantization method awq. Supported
# dtypes: [torch.float16]" (0.4.10.post2 model_loader/loader.py:149, 0.5.23 :269, _get_quantization_config,
# the check vLLM's config carries: vllm_quant_dtype); --dtype auto takes the checkpoint's (bfloat16)
_QUANT_DTYPE = r"\S+ is not supported for quantization method \w+\. Supported dtypes: \["
QUANT_DTYPE = Signature(
    "quant_dtype_unsupported", "bad_argument", "the quantization method does not take the model's dtype",
    ("The checkpoint's quantization method runs only with the dtypes the error lists and the server's "
     "dtype (`--dtype auto`: the checkpoint's torch_dtype) is another: pass `--dtype` with a listed one "
     "(`--dtype float16` for AWQ / GPTQ), or a method that takes it (awq_marlin, gptq_marlin on a GPU "
     "that runs Marlin).",),
    patterns=(_QUANT_DTYPE,), types=_USER_ERRORS, priority=45, phase="load_weights",
    detail=_quant_dtype_detail,
    sources=(("0.4.10.post2", "sglang/srt/model_loader/loader.py:149"),
             ("0.5.23", "sglang/srt/model_loader/loader.py:269")))

# (round 29) each model's attention asserts that its heads split evenly over the tensor-parallel ranks,
# with no message: "assert self.total_num_heads % tp_size == 0" (0.4.10.post2 models/qwen2.py:116; 0.5.23
# models/qwen2.py:167), the KV heads' "assert self.total_num_kv_heads % tp_size == 0" and, fewer KV heads
# than ranks, "assert tp_size % self.total_num_kv_heads == 0" (:173, :177), the same over the attention
# TP group with DP attention (attn_tp_size, models/qwen3_5.py:1293), in 89 files of models/ and layers/:
# the code line of the failed assert is the only text, the launch's --tp-size is what does not fit
_HEADS = r"(?:self\.)?\w*heads\w*"
_TP = r"(?:self\.|get_parallel\(\)\.)?(?:attn_|kv_)?tp_size"
_TP_HEADS_ASSERT = rf"^\s*assert (?:{_HEADS} % {_TP}|{_TP} % {_HEADS}) == 0\b"


def _tp_heads_detail(found: Found) -> str | None:
    tp, dp = found.facts.get("tp_size"), found.facts.get("dp_size")
    return (f"This launch had `--tp-size {tp}`" + (f" and `--dp-size {dp}`." if dp else ".")) if tp else None


TP_HEADS_ASSERT = Signature(
    "tp_heads_assert", "bad_argument", "the attention heads do not divide over the tensor-parallel ranks",
    ("The model's attention asserted that its heads split evenly over the tensor-parallel ranks: "
     "each rank takes an equal share of the attention heads (num_attention_heads in config.json) and "
     "of the KV heads (num_key_value_heads, or the ranks a multiple of them). Pick a `--tp-size` that "
     "divides them (with DP attention the attention group is `--tp-size` / `--dp-size`) and use the "
     "other GPUs for data or pipeline parallelism.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(r".",), context=(_TP_HEADS_ASSERT,), priority=82,
    phase="load_weights", detail=_tp_heads_detail,
    sources=(("0.4.10.post2", "sglang/srt/models/qwen2.py:116"), ("0.5.23", "sglang/srt/models/qwen2.py:167"),
             ("0.5.23", "sglang/srt/models/qwen2.py:173"), ("0.5.23", "sglang/srt/models/qwen2.py:177"),
             ("0.5.23", "sglang/srt/models/qwen3_5.py:1293")))


def _context_detail(found: Found) -> str | None:
    match = regex(r"context_length \((\d+)\) is greater than the derived context_length "
                  r"\((\d+)\)").search(found.text)
    return (f"Asked for {match[1]} tokens; the model's own limit is {match[2]}: keep "
            f"`--context-length` at {match[2]} or below.") if match else None


CONTEXT_OVER_MODEL = Signature(
    "context_length_over_model", "bad_argument", "the context length is longer than the model's",
    ("Ask for at most the model's derived context length (the message names it) with "
     "`--context-length`, or allow more with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 in the "
     "server's environment (the message warns of wrong outputs past it).",),
    patterns=(r"User-specified context_length \(\d+\) is greater than the derived context_length",),
    types=r"(?:\w+\.)*ValueError", priority=92, detail=_context_detail,
    sources=(("0.4.10.post2", "sglang/srt/configs/model_config.py:166"),
             ("0.5.23", "sglang/srt/configs/model_config.py:1298")))


def _port_detail(found: Found) -> str | None:
    match = _first((r"address \('[^']*', (\d+)", r"\bat (\d+) is not available", r"\bport (\d{2,5})\b",
                    r"\[[^\]]*\]:(\d{2,5})\b", r":(\d{2,5})'?\)"), found.text)
    port = match[1] if match else found.facts.get("port")
    name = regex(r"\b(\w+_port) at \d+").search(found.text)
    return f"The port in question: {port}" + (f" ({name[1]})." if name else ".") if port else None


# (round 61) NCCL's own sockets: its system-call checks write "NCCL WARN Call to bind failed: <strerror>"
# (src/include/checks.h:63, SYSCHECKGOTO (NCCL v2.27.3-1)). Its RAS client socket (localhost:28028 or
# NCCL_RAS_ADDR) is optional: a failed bind logs "RAS failed to establish a client listening socket"
# (src/ras/client_support.cc:160, :166) and the caller drops the result ((void)rasClientInitSocket(),
# src/ras/ras.cc:106), so the communicator goes on; a bootstrap socket that cannot bind fails as NCCL's
# ncclSystemError (nccl). Neither is a port the server was given
_NOT_NCCLS = r"(?<!NCCL WARN Call to bind failed: )"
PORT_IN_USE = Signature(
    "port_in_use", "port_in_use", "the port is already taken",
    ("Free the port (an old server still running? `ss -ltnp` shows who holds it) or give this "
     "server another `--port` (its internal ports move with it).",),
    patterns=(_NOT_NCCLS + r"address already in use", r"EADDRINUSE", r"\[Errno (?:98|48)\]",
              r"is not available in \d+ seconds", r"is used by a process already", rendezvous.PORT_TAKEN),
    lines=(r"error while attempting to bind on address", _NOT_NCCLS + r"address already in use",
           rendezvous.PORT_TAKEN),
    priority=85, detail=_port_detail, fatal=True,
    sources=(("0.4.10.post2", "sglang/srt/utils.py:586"),
             ("0.5.10", "sglang/srt/utils/network.py:75"),
             ("0.5.14", "sglang/srt/utils/network.py:85"),
             ("0.5.23", "sglang/srt/utils/network.py:103"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:450"),
             ("uvicorn 0.54.0", "uvicorn/server.py:190 (Server.startup: logger.error(exc), the OSError of "
                                "loop.create_server)"),
             ("CPython 3.12.3", "Lib/asyncio/base_events.py:1562 (create_server: error while attempting to "
                                "bind on address %r: %s)"), *rendezvous.PORT_TAKEN_SOURCES))


# transformers' processor loaders ask cached_files for their config files with missing ones allowed: it
# answers None when none is there (transformers 4.56.1 utils/hub.py:445 a folder, :590 the Hub or the
# cache), the loader indexes that None, and its `except Exception` re-raises the TypeError as "Can't load
# image processor for 'X'. ... a directory containing a preprocessor_config.json file"
# (image_processing_base.py:347, :355; the feature extractor's and the video processor's loaders alike,
# feature_extraction_utils.py:523, :531, video_processing_utils.py:700, :708; the processor's own,
# processing_utils.py:998)
_PROCESSOR_CANT_LOAD = r"Can't load (?:(?:image |video )?processor|feature extractor) for"
_PROCESSOR_LOOKUP = (r", in get_(?:image_processor|feature_extractor|video_processor)_dict\n"
                     r"\s*resolved_(?:image_processor|feature_extractor|video_processor)_file = "
                     r"resolved_(?:image_processor|feature_extractor|video_processor)_files\[0\]")
_PROCESSOR_FILES = ("transformers found none of the model's processor files (preprocessor_config.json, "
                    "processor_config.json, video_preprocessor_config.json) in the checkpoint: a quantized "
                    "or fine-tuned copy of a multimodal model often ships without them. Copy them from the "
                    "base model's repo into a local folder with the weights and give that folder as "
                    "`--model-path`.")
_TRANSFORMERS_PROCESSOR_SOURCES = (
    ("transformers 4.56.1", "transformers/utils/hub.py:445"),
    ("transformers 4.56.1", "transformers/utils/hub.py:590"),
    ("transformers 4.56.1", "transformers/image_processing_base.py:347"),
    ("transformers 4.56.1", "transformers/image_processing_base.py:355"),
    ("transformers 4.56.1", "transformers/feature_extraction_utils.py:531"),
    ("transformers 4.56.1", "transformers/video_processing_utils.py:708"),
    ("transformers 4.56.1", "transformers/processing_utils.py:998"))


# (issue 28, vLLM's first texts) the hub answering 401 / 403 in requests' words ("{status} Client Error:
# {reason} for url:", requests 2.34.2 requests/models.py:1158), which huggingface_hub's requests-based
# releases re-raise as "{status} Client Error." (utils/_http.py hf_raise_for_status): a private or gated
# repo, or no token
_HUB_REFUSED = r"\b40[13] Client Error\b"


def _hub_detail(found: Found) -> str | None:
    text = found.text
    if regex(r"access a gated repo|Cannot access gated repo|is restricted|GatedRepoError").search(text):
        return ("The repo is gated: accept its license on huggingface.co with the account whose "
                "token the host uses (HF_TOKEN in the unit's environment), then retry.")
    if regex(r"OfflineModeIsEnabled|offline mode is enabled").search(text):
        return ("HF_HUB_OFFLINE=1 is set in the server's environment and the files are not in its "
                "Hugging Face cache: download them first (`hf download REPO` with HF_HUB_OFFLINE "
                "unset, on the host or into the same cache), or give a local folder as "
                "`--model-path`.")
    if regex(r"couldn't connect to|LocalEntryNotFoundError|offline").search(text):
        return ("The host could not reach huggingface.co and the files are not cached: download "
                "them first (`hf download REPO`), then run with HF_HUB_OFFLINE=1.")
    # transformers' cached_file: the repo (or folder) exists but lacks the file asked for
    if match := regex(r"does not appear to have (?:a )?files? named ([\w.-]+?)\.?(?:\s|$)").search(text):
        return (f"The repo (or folder) exists but has no {match[1]}: a fine-tuned checkpoint often ships "
                "without its base model's processor or tokenizer files; copy them from the base model's "
                "repo into a local folder with the weights and give that folder as `--model-path`.")
    if regex(_PROCESSOR_CANT_LOAD).search(text):
        return _PROCESSOR_FILES
    if regex(r"not a valid model identifier|Repository Not Found|Repo id must").search(text):
        return "The name is neither a Hugging Face repo nor an existing folder: check its spelling."
    if regex(_HUB_REFUSED).search(text):
        return ("The hub refused the request (401 / 403): the repo is private or gated, or the name is "
                "wrong (the hub answers 401 for a repo it does not show this token): set HF_TOKEN in the "
                "server's environment for an account with access (a gated repo's license accepted), or check "
                "the name.")
    return None


MODEL_NOT_FOUND = Signature(
    "model_not_found", "model_not_found", "the model could not be found or accessed",
    ("Check `--model-path`: the folder must exist on the host with config.json and weights, or "
     "the name must be a Hugging Face repo id that is cached or reachable.",),
    patterns=(r"is not a local folder and is not a valid model identifier",
              r"RepositoryNotFoundError|Repository Not Found for url|GatedRepoError",
              r"You are trying to access a gated repo|Cannot access gated repo for url",
              r"Access to model \S+ is restricted",
              r"HFValidationError|Repo id must (?:be in the form|use alphanumeric)",
              r"LocalEntryNotFoundError|Cannot find any model weights",
              r"does not appear to have (?:a )?files? named",
              r"No such file or directory: "
              r"'[^']*(?:config\.json|\.safetensors|tokenizer[^']*|model[^']*)'",
              r"Can't load (?:the )?(?:config|configuration|tokenizer|model) (?:for|of)", _PROCESSOR_CANT_LOAD,
              r"couldn't connect to 'https://huggingface\.co'",
              r"Incorrect path_or_model_id",
              r"OfflineModeIsEnabled", r"offline mode is enabled\. To disable it", _HUB_REFUSED),
    lines=(r"Cannot access gated repo for url", r"You are trying to access a gated repo",
           r"offline mode is enabled\. To disable it",
           r"is not a local folder and is not a valid model identifier",
           r"Repository Not Found for url"),
    priority=85, phase="launch", detail=_hub_detail,
    by_algorithm=tuple((fam, "With speculative decoding the drafter's path "
                             "(`--speculative-draft-model-path`) is resolved first: check it too.")
                       for fam in ("eagle", "dflash", "ddtree")),
    sources=(("0.4.10.post2", "sglang/srt/model_loader/loader.py:347"),
             ("0.5.23", "sglang/srt/model_loader/loader.py:581"),
             ("0.5.23", "sglang/srt/utils/hf_transformers/config.py:379"),
             ("0.5.23", "sglang/srt/arg_groups/speculative_hook.py:154"),
             ("transformers 5.19.0", "transformers/utils/hub.py:570"),
             ("transformers 5.19.0", "transformers/utils/hub.py:611"),
             ("transformers 5.19.0", "transformers/utils/hub.py:621"),
             ("huggingface_hub 2.4.0", "huggingface_hub/utils/_http.py:890"),
             ("huggingface_hub 2.4.0", "huggingface_hub/utils/_http.py:947"),
             ("huggingface_hub 2.4.0", "huggingface_hub/utils/_http.py:295"),
             ("huggingface_hub 2.4.0", "huggingface_hub/errors.py:86"), *_TRANSFORMERS_PROCESSOR_SOURCES,
             ("requests 2.34.2", "requests/models.py:1158 ({status} Client Error: {reason} for url: {url})"),
             ("huggingface_hub (requests-based)", "huggingface_hub/utils/_http.py (hf_raise_for_status: "
                                                 "f\"{response.status_code} Client Error.\")")))

# the same failure in a paste cut before the OSError: only the chained TypeError of the lookup is there
PROCESSOR_FILES_MISSING = Signature(
    "processor_files_missing", "model_not_found", "the checkpoint has none of its processor's files",
    (_PROCESSOR_FILES,),
    types=r"TypeError", patterns=(r"^TypeError: 'NoneType' object is not subscriptable$",),
    context=(_PROCESSOR_LOOKUP,), priority=85, phase="launch", sources=_TRANSFORMERS_PROCESSOR_SOURCES)


DRAFT_INCOMPATIBLE = Signature(
    "draft_incompatible", "draft_incompatible", "the draft checkpoint does not fit the algorithm",
    ("The draft model cannot be loaded or run by this speculative algorithm: check that "
     "`--speculative-draft-model-path` is a drafter trained for this target and this algorithm, "
     "in a format your SGLang release reads.",),
    patterns=(r"'(?:model\.)?midlayer\.[\w.]+'", r"DFLASH requires draft num_hidden_layers",
              r"DFLASH dflash_config\.mask_token"),
    priority=86, phase="load_weights",
    by_algorithm=(("eagle", "An EAGLE3 drafter's weights are named midlayer.*: its config must "
                            "name an EAGLE3 architecture (LlamaForCausalLMEagle3), and "
                            "`--speculative-algorithm EAGLE3` must be set, not EAGLE."),
                  ("dflash", "A DFLASH drafter needs its dflash_config (mask token, block size)."),),
    sources=(("0.4.10.post2", "sglang/srt/models/llama_eagle3.py:130"),
             ("0.5.23", "sglang/srt/models/llama_eagle3.py:339"),
             ("0.5.14", "sglang/srt/speculative/dflash_utils.py:430"),
             ("0.5.23", "sglang/srt/speculative/dflash_utils.py:548"),
             ("0.5.23", "sglang/srt/speculative/dflash_utils.py:684")))

SIGNATURES = [UNKNOWN_ALGORITHM, ARGPARSE, MISSING_OPTION, SPEC_ARGS_REFUSED, SERVER_ARGS_ERROR, FLAG_VALUE,
              DTYPE_REQUIRED, CONTEXT_OVER_MODEL, PORT_IN_USE, MODEL_NOT_FOUND, PROCESSOR_FILES_MISSING,
              TP_HEADS_ASSERT,  # (round 29)
              QUANT_DTYPE,  # (round 31)
              *parsers.SIGNATURES, *arg_asserts.SIGNATURES,  # (rounds 66, 84)
              *packages.SIGNATURES,
              DRAFT_INCOMPATIBLE]
