"""vLLM: the OpenAI server's own start-up texts: its checks of the parsed arguments and what it loads beside
the engine (round 32: the chat template, gpt-oss's Harmony vocabulary), and the scheduler config's check of the
token budget against the length (round 62), which any entry point's engine config runs before anything loads;
and vLLM's own front door (``LLM``, ``SamplingParams``) undefined in a caller whose import of it failed (round 62);
a vllm-omni pipeline refusing the engine backend its deploy config names (round 69); texts that mark a log as
vLLM's (round 65), and its import notice, which counts once (SGLang round 73); an object given where ``LLM`` takes
the model's or tokenizer's name or path (round 100); the Rust frontend refusing arguments it does not implement
(round 115).

The API server checks some arguments only after argparse took them (``validate_parsed_serve_args``), before
any engine starts, and it builds its handlers once the engine is up: a file it needs there missing is a start
that fails at ``ready``, its engine already built. Cited as :mod:`.signatures` cites: ``(release,
"vllm/path.py:line")`` in the wheels, a library's file by name. Part of :mod:`.signatures`' list.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "FRONT_DOOR", "TEXT_MARKS", "IMPORT_NOTICE", "CHAT_TEMPLATE_MISSING", "HARMONY_VOCAB_MISSING",
           "BATCHED_UNDER_LEN", "FRONT_DOOR_UNDEFINED", "OMNI_ENGINE_BACKEND",
           "SERVE_FLAGS_CONFLICT", "MODEL_PATH_NOT_STR", "RUST_FRONTEND_REFUSED"]

# `--chat-template` takes a file, a Jinja template inline, or (0.11+) a name in vLLM's own template directory;
# validate_chat_template refuses a value with none of "{}\n" that is no existing path ("appears path-like, but
# doesn't exist!"), or a Path that does not exist: chat_utils.py:402 (0.6.4.post1), :834 (0.9.1), :1113
# (0.20.0), :1338 (0.27.1), :1475 (0.30.0), called from validate_parsed_serve_args (entrypoints/openai/cli_args.py
# :370 (0.20.0), launchers/cli_args.py:445 (0.30.0), common/cli_args.py:548 (0.34.0))
_PATH_LIKE = r"The supplied chat template string \(.*\) appears path-like, but doesn't exist!"
_NO_PATH = r"the supplied chat template path doesn't exist"
CHAT_TEMPLATE_MISSING = Signature(
    "vllm_chat_template_missing", "bad_argument", "--chat-template names no file and is no template",
    ("`--chat-template` takes the path of a Jinja template file (or the template itself, inline); the value "
     "given is neither a file that exists where the server runs nor a template. Give the file's full path, or "
     "leave the flag out to use the chat template the model's tokenizer config carries.",),
    patterns=(_PATH_LIKE, _NO_PATH), types=r"(?:ValueError|FileNotFoundError)", priority=88, phase="launch",
    sources=(("0.30.0", "vllm/entrypoints/chat_utils.py:1475"), ("0.30.0", "vllm/entrypoints/chat_utils.py:1458"),
             ("0.6.4.post1", "vllm/entrypoints/chat_utils.py:402"),
             ("0.30.0", "vllm/entrypoints/launchers/cli_args.py:445"),
             ("0.34.0", "vllm/entrypoints/common/cli_args.py:548"),
             ("vllm 0.9.1", "vllm/entrypoints/chat_utils.py:834"),
             ("vllm 0.20.0", "vllm/entrypoints/chat_utils.py:1113")))

# gpt-oss's API server loads the Harmony encoding (get_encoding: entrypoints/openai/parser/harmony_utils.py:83
# (0.15.1), :63 (0.20.0), :100 (0.27.1), :101 (0.30.0), :100 (0.34.0)). openai_harmony reads the o200k_base.tiktoken vocabulary from the
# directory TIKTOKEN_ENCODINGS_BASE names, checking its SHA-256, or downloads it into its cache
# (TIKTOKEN_RS_CACHE_DIR): a file missing there or failing the check is "invalid tiktoken vocab file: ...", a
# download that failed "error downloading or loading vocab file: ..." (openai/harmony 55dc322
# src/tiktoken_ext/public_encodings.rs: LoadError, Encoding::load, load_tiktoken_vocab's "hash mismatch:
# computed=..., expected=..."). Either way the file the model's tokenizer needs is not there (an offline host, a
# download cut short): as a model file that cannot be reached. Harmony's other errors (a message it cannot
# parse) are a request's
_VOCAB = r"(?:invalid tiktoken vocab file|error downloading or loading vocab file): "
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _vocab_detail(found: Found) -> str | None:
    if _EMPTY_SHA256 in found.text:
        return ("The vocabulary file is empty (its SHA-256 is that of no bytes): a download that wrote nothing. "
                "Replace it with the whole file.")
    if regex(r"No such file or directory").search(found.text):
        return "No vocabulary file is where openai_harmony looked (TIKTOKEN_ENCODINGS_BASE / o200k_base.tiktoken)."
    return None


HARMONY_VOCAB_MISSING = Signature(
    "vllm_harmony_vocab_missing", "model_not_found", "gpt-oss's Harmony vocabulary file is missing or incomplete",
    ("gpt-oss's Harmony encoding needs the o200k_base.tiktoken vocabulary: openai_harmony downloads it from "
     "openaipublic.blob.core.windows.net/encodings/, or reads it from the directory TIKTOKEN_ENCODINGS_BASE "
     "names and checks its SHA-256. On a host without internet, download o200k_base.tiktoken elsewhere, put "
     "it in a directory the server can read and set TIKTOKEN_ENCODINGS_BASE to that directory.",),
    patterns=(_VOCAB,), types=r"(?:openai_harmony\.)?HarmonyError", priority=86, detail=_vocab_detail,
    sources=(("0.34.0", "vllm/entrypoints/openai/parser/harmony_utils.py:100"),
             ("0.30.0", "vllm/entrypoints/openai/parser/harmony_utils.py:101"),
             ("vllm 0.15.1", "vllm/entrypoints/openai/parser/harmony_utils.py:83"),
             ("openai/harmony 55dc322", "src/tiktoken_ext/public_encodings.rs (LoadError::InvalidTiktokenVocabFile, "
                                        "load_tiktoken_vocab: hash mismatch)")))

# (round 62) the scheduler's budget per step is below the longest sequence with chunked prefill off: the
# scheduler config's own check, run when the engine config is built (config/scheduler.py:367 (0.34.0), in
# verify_max_model_len; :238 (0.11.0); V0 config.py:1042 (0.6.3.post1), :1578 (0.7.3)). Its warning when the
# budget is over max_num_seqs * max_model_len (scheduler.py:253 (0.11.0)) is no refusal.
_BATCHED_UNDER_LEN = (r"max_num_batched_tokens \((\d+)\) is smaller than max_model_len \((\d+)\)\. "
                      r"This effectively limits the maximum sequence length")


def _batched_under_len_detail(found: Found) -> str | None:
    said = regex(_BATCHED_UNDER_LEN).search(found.text)
    return (f"`--max-num-batched-tokens` {said[1]} is below `--max-model-len` {said[2]} with chunked prefill off."
            if said else None)


BATCHED_UNDER_LEN = Signature(
    "vllm_batched_under_len", "bad_argument", "the tokens per step are fewer than the longest sequence",
    ("Without chunked prefill a prompt is prefilled in one step, so `--max-num-batched-tokens` must be at "
     "least `--max-model-len`: raise the first, lower the second, or turn on `--enable-chunked-prefill`.",),
    patterns=(_BATCHED_UNDER_LEN,), lines=(_BATCHED_UNDER_LEN,), priority=88, phase="launch", fatal=True,
    detail=_batched_under_len_detail,
    sources=(("0.34.0", "vllm/config/scheduler.py:367"), ("vllm 0.11.0", "vllm/config/scheduler.py:238"),
             ("0.7.3", "vllm/config.py:1578"), ("vllm 0.6.3.post1", "vllm/config.py:1042")))

# (round 79) V1's encoder budget, computed when the scheduler and the GPU model runner are built, refuses a multimodal
# item larger than the tokens per step with chunked multimodal input off: "Chunked MM input disabled but
# max_tokens_per_mm_item (N) is larger than max_num_batched_tokens (M). Please increase max_num_batched_tokens."
# (v1/core/encoder_cache_manager.py:243 (0.10.0), :329 (0.11.1), :302 (0.18.0)): the launch's token budget refused
_MM_OVER_BUDGET = (r"Chunked MM input disabled but max_tokens_per_mm_item \((\d+)\) is larger than "
                   r"max_num_batched_tokens \((\d+)\)")


def _mm_over_budget_detail(found: Found) -> str | None:
    said = regex(_MM_OVER_BUDGET).search(found.text)
    return (f"One multimodal item takes {said[1]} tokens, over `--max-num-batched-tokens` {said[2]}." if said else None)


MM_ITEM_OVER_BUDGET = Signature(
    "vllm_mm_item_over_budget", "bad_argument", "a multimodal item needs more tokens than one step's budget",
    ("With chunked multimodal input off, one image (or other item) must fit in one step: raise "
     "`--max-num-batched-tokens` to at least the item's tokens the message names, or lower the model's largest "
     "item (`--mm-processor-kwargs`, `--limit-mm-per-prompt`).",),
    patterns=(_MM_OVER_BUDGET,), lines=(_MM_OVER_BUDGET,), types=r"(?:\w+\.)*ValueError", priority=88,
    phase="launch", detail=_mm_over_budget_detail,
    sources=(("vllm 0.10.0", "vllm/v1/core/encoder_cache_manager.py:243"),
             ("vllm 0.11.1", "vllm/v1/core/encoder_cache_manager.py:329"),
             ("vllm 0.18.0", "vllm/v1/core/encoder_cache_manager.py:302")))

# (round 62) an evaluation harness imports vLLM's front door under a guard ("try: from vllm import LLM,
# SamplingParams / except ImportError: vllm = None", EvolvingLMMs-Lab/lmms-eval 192f193 lmms_eval/models/vllm.py:25-28)
# and builds the engine later (:57, "self.client = LLM("): vLLM failed to import where the harness runs, and the
# harness says so only as CPython's NameError for the name (Python/ceval.c NAME_ERROR_MSG "name '%.200s' is not
# defined"). A name of vLLM's top-level API only: another undefined name is the caller's own bug (round 64: a
# vLLM mark, diagnosis/vllm_log.py, for a paste that shows nothing else of vLLM's)
FRONT_DOOR = (r"^(?:\w+\.)*NameError: name '(?-i:LLM|SamplingParams|LLMEngine|AsyncLLMEngine|EngineArgs|AsyncEngineArgs)' "
               r"is not defined")
FRONT_DOOR_UNDEFINED = Signature(
    "vllm_front_door_undefined", "dependency_mismatch", "the caller's import of vLLM failed (its LLM is undefined)",
    ("The program imports vLLM under a guard that swallows an ImportError, so vLLM's classes are undefined when "
     "it builds the engine: run `python -c \"import vllm\"` in the same environment to see why the import fails "
     "(vLLM not installed, or a torch / CUDA build it does not match), and fix that.",),
    patterns=(FRONT_DOOR,), priority=70, phase="launch",
    sources=(("EvolvingLMMs-Lab/lmms-eval 192f193", "lmms_eval/models/vllm.py:25-28 (try: from vllm import LLM, "
                                                    "SamplingParams / except ImportError)"),
             ("CPython 3.11", "Python/ceval.c (NAME_ERROR_MSG: name '%.200s' is not defined)")))

# (round 69) a vllm-omni pipeline that runs only on one engine checks the stage's engine_backend (the deploy
# config's key; OmniDiffusionConfig.engine_backend defaults to "default") in its constructor and refuses the stage:
# "DreamZeroPipeline requires the AR-Diffusion engine; set engine_backend: ... in the deploy config (got
# engine_backend='default')." (vllm-project/vllm-omni 86bdcaf vllm_omni/diffusion/models/dreamzero/
# pipeline_dreamzero.py:212-216; its per-role form "... engine for the 'x' role; set ..." in later commits)
_OMNI_BACKEND = (r"\b\w+Pipeline requires the [\w-]+ engine(?: for the '[^']*' role)?; set engine_backend: \S+ "
                 r"in the deploy config \(got engine_backend=")
OMNI_ENGINE_BACKEND = Signature(
    "vllm_omni_engine_backend", "bad_argument", "the deploy config names an engine this pipeline cannot run on",
    ("This vllm-omni pipeline runs only on the engine the message names: set the stage's `engine_backend` in the "
     "deploy config (the YAML file vllm-omni serve reads) to that class's import path, as the message says.",),
    patterns=(_OMNI_BACKEND,), types=r"(?:\w+\.)*ValueError", priority=88, phase="launch",
    sources=(("vllm-project/vllm-omni 86bdcaf", "vllm_omni/diffusion/models/dreamzero/pipeline_dreamzero.py:212"),))

# (round 65) more of vLLM's own texts, each a vLLM mark (diagnosis/vllm_log.py) and in no SGLang wheel (0.1.11 to
# 0.5.23): V1's error for a dead engine core, which its clients raise (v1/engine/exceptions.py:9, core_client.py:426,
# :566, async_llm.py:288 (0.13.0)), as a harness's Ray task shows it ("RayTaskError(EngineDeadError)"); verl's vLLM
# rollout modules (verl/workers/rollout/vllm_rollout/, whose servers run vLLM's engine); NIXL's failure record as
# vLLM's connector writes it (nixl/base_worker.py:1455 (0.34.0), nixl_connector.py:1192 (0.14.0))
# (round 69) the pipeline-parallel refusal of 0.6.2 and older, which prints its list of architectures
# (vllm/config.py:423-425 (0.6.2), :272-274 (0.5.1)); in no SGLang wheel
# (round 72) vLLM's engine argument classes, EngineArgs and AsyncEngineArgs (engine/arg_utils.py:23, :758 (0.5.1);
# :82, :1077 (0.6.2)), as a caller that builds them prints its TypeError (Xinference's vLLM backend); in no SGLang wheel
# (round 73) V1's multiprocessing executor raising a worker's failure in the engine core, "Worker failed with error
# '<the worker's error>', please check the stack trace above for the root cause" (v1/executor/multiproc_executor.py:186
# (0.8.5.post1), :225 (0.10.0), :550 (0.34.0)), the one line a user often quotes; in no SGLang wheel
# (round 75) V0's scheduler ignoring one prompt too long for it (core/scheduler.py:896, :916 (0.6.3.post1); :670, :684
# (0.5.0); the request's signature, requests.py REQUEST_TOO_LONG), a line users quote alone; in no SGLang wheel
TEXT_MARKS = (r"\bEngineDeadError\b|[/\\]vllm_rollout[/\\]|NIXL transfer failure: \w"
              r"|Pipeline parallelism is only supported for the following +architectures: \["
              r"|\b(?:Async)?EngineArgs\b|\bWorker failed with error '"
              r"|\bInput prompt \(\d+ tokens\)(?: \+ lookahead slots \(\d+\))? is too long and exceeds "
              # (round 76) the tool-call parsers' records of one response they could not parse
              # (hermes_tool_parser.py:157, :454 (0.11.0); requests.py TOOL_PARSER_ERROR), a plugin's copy
              # printing them bare; in no SGLang wheel (its function_call detectors word theirs otherwise)
              r"|\bError (?:trying to handle streaming tool call|in extracting tool call from response)\b"
              # (round 78) the capture bar's name from 0.7 to 0.10 (worker/model_runner.py:1484 (0.7.3), :1432
              # (0.10.2); v1/worker/gpu_model_runner.py:2309 (0.9.2)); in no SGLang wheel (0.1.6 to 0.5.23); no \b
              # before it: a carriage return a paste spelt "^M" is glued to it ("^MCapturing CUDA graph shapes")
              r"|Capturing CUDA graph shapes\b")
# (SGLang round 73) vLLM's platform notice, logged when vLLM is imported (vllm/platforms/__init__.py:207 (0.7.3), :287
# (0.34.0)) by each process that imports it, SGLang's too where SGLang imports vLLM (0.4.4.post1
# srt/layers/quantization/__init__.py:9): however many processes print it, it tells one fact, vLLM imported
IMPORT_NOTICE = regex(r"Automatically detected platform \w+\.")

# (round 81) Unsloth's SyntheticDataKit runs `vllm serve` as a subprocess and echoes its stdout ("vLLM STDOUT: "),
# reading it line by line until "Starting vLLM API server on"; an empty read is the pipe's end, the server process
# gone or its stdout closed before it was ready, and Unsloth prints "Stdout stream ended before readiness message
# detected." (unslothai/unsloth 4813fda unsloth/dataprep/synthetic.py:130-134; unsloth_zoo's later launcher prints it
# when the capture closed or poll() returned). Why the server ended is on its stderr, which Unsloth does not echo
_STDOUT_ENDED = r"^Stdout stream ended before readiness message detected\.\s*$"
LAUNCHER_STDOUT_ENDED = Signature(
    "vllm_launcher_stdout_ended", "unknown", "the vLLM server subprocess ended before it was ready",
    ("The launcher (Unsloth) saw the `vllm serve` subprocess's stdout end before its ready line: the server "
     "exited during start-up. Its error is on the subprocess's stderr, which the launcher does not print: run "
     "the same `vllm serve` command by hand (or print the launcher's stderr tail) to see it.",),
    lines=(_STDOUT_ENDED,), priority=3, fatal=True, phase="launch",
    sources=(("unsloth 4813fda", "unsloth/dataprep/synthetic.py:133 (Stdout stream ended before readiness "
                                 "message detected.)"),))

# (round 98) validate_parsed_serve_args checks flags that need each other before any engine starts, with TypeErrors:
# "Error: --enable-auto-tool-choice requires --tool-call-parser", "Error: --enable-reasoning requires
# --reasoning-parser", "Error: --enable-auto-tool-choice and --enable-reasoning cannot be enabled at the same time"
# (entrypoints/openai/cli_args.py:286, :291, :297-299 (0.7.2, 0.7.3), :281-294 (0.8.0), :284-289 (0.8.3), :296
# (0.9.1)): the flags as given, bad_argument
_SERVE_FLAGS = (r"Error: --enable-auto-tool-choice and --enable-reasoning cannot be enabled at the same time"
                r"|Error: --enable-(?:auto-tool-choice|reasoning) requires --(?:tool-call|reasoning)-parser")
SERVE_FLAGS_CONFLICT = Signature(
    "vllm_serve_flags_conflict", "bad_argument", "the server's flags need each other or exclude each other",
    ("The OpenAI server checks its flags before it starts: `--enable-auto-tool-choice` needs `--tool-call-parser`, "
     "reasoning needs `--reasoning-parser`, and from 0.7.2 until 0.8.3 automatic tool choice and reasoning cannot "
     "be on together (drop one of the two, or use 0.8.3 or later, which takes both). Fix the command line as the "
     "message says.",),
    patterns=(_SERVE_FLAGS,), types=r"(?:\w+\.)*TypeError", priority=88, phase="launch",
    sources=(("0.7.3", "vllm/entrypoints/openai/cli_args.py:297"), ("0.7.3", "vllm/entrypoints/openai/cli_args.py:286"),
             ("0.7.3", "vllm/entrypoints/openai/cli_args.py:291"),
             ("vllm 0.8.0", "vllm/entrypoints/openai/cli_args.py:292"),
             ("vllm 0.9.1", "vllm/entrypoints/openai/cli_args.py:296")))

# (round 100) ``LLM(model=..., tokenizer=...)`` takes the model's and the tokenizer's names or paths (str): the
# ModelConfig asks each whether it is an S3 URL, ``is_s3(model) or is_s3(tokenizer)`` (0.8.3 vllm/config.py:461), and
# is_s3 is ``return model_or_path.lower().startswith('s3://')`` (0.8.3 vllm/transformers_utils/utils.py:15; 0.6.4.post1
# :9, 0.9.2 :17). A loaded tokenizer or model object there has no ``lower``: Python's "'X' object has no attribute
# 'lower'", or transformers' own "X has no attribute lower" (tokenization_utils_base.py's __getattr__). Read only where
# is_s3's line is in the chain (another .lower() on an object is not this)
_NOT_STR = r"\bhas no attribute '?lower'?\s*$"
_IS_S3 = r", in is_s3[ \t]*\n[ \t]*return model_or_path\.lower\(\)"
MODEL_PATH_NOT_STR = Signature(
    "vllm_model_path_not_str", "bad_argument", "an object was given where vLLM takes a model's or tokenizer's name",
    ("vLLM's `LLM(model=..., tokenizer=...)` (and the engine arguments) take the Hugging Face name or the local "
     "folder of the model and of the tokenizer, as strings, not loaded objects: save the tokenizer (or the merged "
     "PEFT model) with `save_pretrained(\"DIR\")` and pass `tokenizer=\"DIR\"` (or leave it out to use the model's "
     "own); for a PEFT adapter pass the base model's name and the adapter through `enable_lora=True` and "
     "`LoRARequest`.",),
    types=r"(?:\w+\.)*AttributeError", patterns=(_NOT_STR,), context=(_IS_S3,), priority=80, phase="launch",
    sources=(("vllm 0.8.3", "vllm/config.py:461"), ("vllm 0.8.3", "vllm/transformers_utils/utils.py:15"),
             ("vllm 0.9.2", "vllm/transformers_utils/utils.py:17")))

# (round 115) with VLLM_USE_RUST_FRONTEND=1 (off by default: vllm 0.22.0 vllm/envs.py:140, :551; 0.34.0 :174, :624)
# `vllm serve` runs the API side as the vllm-rs binary, handing it the non-default arguments as JSON ("Launching Rust
# frontend: ... --args-json {...}", 0.22.0 v1/utils.py:366; 0.34.0 :372), while the engine core starts beside it.
# The binary refuses an argument it does not implement yet, as a clap error on --args-json: "The following arguments
# are not implemented in Rust frontend yet:", "- name" lines, "Remove these arguments to continue." (the strings of
# 0.22.0's vllm/vllm-rs, src/cmd/src/cli/unsupported.rs, in 0.34.0's too) and exits (2); the launcher sees it only
# when it next waits on its processes, "Process RustFrontend (PID: N) died with exit code 2" (0.22.0 v1/utils.py:533;
# 0.34.0 :586), often after the engine came up. An argument it only ignores is a warning ("argument 'x' currently
# has no effect in Rust frontend, ignoring"), no refusal: read only on the header line
_RUST_REFUSED = r"^The following arguments are not implemented in Rust frontend yet:\s*$"


def _rust_refused_detail(found: Found) -> str | None:
    names = found.facts.get("rust_frontend_refused") or []
    flags = ", ".join(f"`--{name.replace('_', '-')}`" for name in names)
    return f"The Rust frontend refused: {flags}." if names else None


RUST_FRONTEND_REFUSED = Signature(
    "vllm_rust_frontend_refused", "bad_argument", "the Rust frontend does not implement arguments it was given",
    ("`VLLM_USE_RUST_FRONTEND=1` serves the API through the Rust frontend (vllm-rs), which refuses arguments it does "
     "not implement yet and exits at once, while the engine goes on starting: leave out the arguments it lists under "
     "\"not implemented in Rust frontend yet\", or unset `VLLM_USE_RUST_FRONTEND` (or set it to 0) to serve through "
     "the Python API server, which takes them.",),
    lines=(_RUST_REFUSED,), priority=88, fatal=True, detail=_rust_refused_detail,
    sources=(("0.34.0", "vllm/envs.py:174"), ("0.34.0", "vllm/v1/utils.py:372"), ("0.34.0", "vllm/v1/utils.py:586"),
             ("vllm 0.22.0", "vllm/vllm-rs (src/cmd/src/cli/unsupported.rs: The following arguments are not "
                             "implemented in Rust frontend yet: / Remove these arguments to continue.)"),
             ("vllm 0.22.0", "vllm/envs.py:551"), ("vllm 0.22.0", "vllm/v1/utils.py:533")))

SIGNATURES: list[Signature] = [CHAT_TEMPLATE_MISSING, HARMONY_VOCAB_MISSING, BATCHED_UNDER_LEN, MM_ITEM_OVER_BUDGET, FRONT_DOOR_UNDEFINED,
                               OMNI_ENGINE_BACKEND,
                               LAUNCHER_STDOUT_ENDED,  # (round 81)
                               SERVE_FLAGS_CONFLICT,  # (round 98)
                               MODEL_PATH_NOT_STR,  # (round 100)
                               RUST_FRONTEND_REFUSED]  # (round 115)
