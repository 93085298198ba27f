"""vLLM: exception texts that round 16 showed in V0's engine records (NIXL's status names, Python's missing
module), NIXL texts of round 17 (the connector's failure record, NIXL not installed) and the texts round 18
showed (a checkpoint tensor's name as V0's engine message, the tool-call parser check, a model with no config
file, FlashAttention's GPU check, Triton's kernel image and pass pipeline), round 55's plugin refusal that names
the flag and its bound (``FLAG_BOUND``, in :mod:`.vllm`'s list beside the argument checks), advice in vLLM's flags.

V0's multiprocessing engine logs the exception itself as its record's message above the traceback (read by
:mod:`ddlab.diagnosis.vllm_records`), so a paste cut before the exception line still shows its text, often
with no type: these signatures read the text whatever the type.

Cited as :mod:`.vllm` cites: ``(release, "vllm/path.py:line")`` in the wheels, a library's file by name. Part
of :mod:`.vllm`'s list, in its order.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ddlab.device_crashes import compilers
from ddlab.vllm_crashes.library import (V0 as _V0, DEPENDENCY, MODEL_NOT_FOUND, UNREADABLE, UNSUPPORTED_GPU,
                                        from_texts, voiced)
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "NIXL_STATUS", "NO_MODULE_NAMED", "NIXL_TRANSFER_FAILURE", "NIXL_UNAVAILABLE",
           "TENSOR_KEY_MESSAGE", "TOOL_PARSER_UNKNOWN", "FLAG_BOUND", "NO_CONFIG_FILE", "FLASH_ATTN_PRE_AMPERE",
           "TRITON_INVALID_IMAGE", "TRITON_PASS_FAILED", "QUANT_SCHEME_GPU", "QUANT_SCHEME_CHECK", "QUANT_DTYPE",
           "QUANT_METHOD_GPU", "CUTE_DSL_ARCH", "TRANSFORMERS_INCOMPATIBLE"]

# (round 16) NIXL's Python bindings raise one exception class per error status, its message the status's name
# (nixl_bindings.cpp throw_nixl_exception, e.g. "throw nixlBackendError(nixlEnumStrings::statusStr(status)...)":
# ai-dynamo/nixl 0.2.0 src/bindings/python/nixl_bindings.cpp:91, :106, the names at src/core/nixl_agent.cpp:50,
# :55; v1.4.0 nixl_bindings.cpp:107, :122, src/core/nixl_enum_strings.cpp:64, :74); its agent is the KV transfer
# of a PD deployment (vLLM's NIXL connector, Dynamo's patched V0 engine). Raised where a frame of the chain is
# NIXL's or calls it (its name or path says nixl), and not in NIXL's use for other transfers (the EPLB
# communicator's, weight transfer) nor for one request's handshake (:data:`.backends.NIXL_HANDSHAKE`)
_NIXL_STATUSES = (r"NOT_POSTED|INVALID_PARAM|BACKEND|NOT_FOUND|MISMATCH|NOT_ALLOWED|REPOST_ACTIVE|UNKNOWN"
                  r"|NOT_SUPPORTED|REMOTE_DISCONNECT|CANCELED|NO_TELEMETRY")
_NIXL_STATUS = rf"^(?:(?:\w+\.)*nixl\w*Error: |Exception: )?NIXL_ERR_(?:{_NIXL_STATUSES})\s*$"


def _nixl_status(found: Found) -> str | None:
    match = regex(rf"NIXL_ERR_(?:{_NIXL_STATUSES})").search(found.text)
    if match and match[0] == "NIXL_ERR_BACKEND":
        return ("NIXL_ERR_BACKEND is its transport backend (UCX by default) failing: `ucx_info -v` and "
                "`ucx_info -d` in the server's environment show the UCX it loads and the devices it sees (the "
                "NIXL and UCX builds must match: a pip-installed NIXL brings its own UCX); UCX_TLS and "
                "UCX_NET_DEVICES choose the transports.")
    return f"NIXL's status: {match[0]}." if match else None


NIXL_STATUS = Signature(
    "vllm_nixl_status_error", "pd_transfer", "NIXL returned an error status (PD KV transfer)",
    ("NIXL, the KV transfer library between the prefill and the decode instances, returned an error: at "
     "startup its agent or backend could not be set up or register the KV cache, while serving a transfer or a "
     "remote agent's metadata failed. NIXL's own lines above it say why (more with NIXL_LOG_LEVEL=DEBUG); check "
     "that both instances run the same NIXL and reach each other over its transport, and the KV transfer "
     "settings (`--kv-transfer-config`).",),
    patterns=(_NIXL_STATUS,), context=(r"^\s+\S.*nixl",),
    absent=(r"eplb|weight_transfer", r"Handshake failed for request"),
    priority=80, detail=_nixl_status,
    sources=(("NIXL (ai-dynamo/nixl) 0.2.0", "src/bindings/python/nixl_bindings.cpp:91, :106 "
                                             "(throw_nixl_exception), :161, :166 (register_exception)"),
             ("NIXL (ai-dynamo/nixl) 0.2.0", "src/core/nixl_agent.cpp:50, :55 (statusStr)"),
             ("NIXL (ai-dynamo/nixl) v1.4.0", "src/bindings/python/nixl_bindings.cpp:107, :122"),
             ("NIXL (ai-dynamo/nixl) v1.4.0", "src/core/nixl_enum_strings.cpp:64, :74")))

# (round 16) CPython's message for an import that finds no module ("No module named 'X'": Lib/importlib/
# _bootstrap.py:1117-1118, _ERR_MSG, raised as ModuleNotFoundError at :1140 (3.11.7)): the installed packages
# lack a module the code imports (a library of another release, a plugin not installed), whatever type the
# paste shows for it (V0's engine logs only its str)
_NO_MODULE = r"^(?:(?:\w+\.)*\w+: )?No module named '([\w.]+)'\s*$"


def _no_module(found: Found) -> str | None:
    match = regex(_NO_MODULE, re.I | re.M).search(found.text)
    if not match:
        return None
    top = match[1].split(".")[0]
    if top == match[1]:
        return f"Nothing named {top} is installed where vLLM runs: install it (`pip show {top}` must find it)."
    return (f"{top} is installed without {match[1]}: the installed {top} is another release than the code "
            f"that imports it expects (`pip show {top}`; for a connector's library, the release vLLM's docs pin).")


NO_MODULE_NAMED = replace(
    DEPENDENCY, name="vllm_no_module_named", title="a module could not be imported (No module named ...)",
    patterns=(_NO_MODULE,), lines=(), types=None, context=(), absent=(), priority=45, phase=None,
    detail=_no_module,
    sources=(("CPython 3.11.7", "Lib/importlib/_bootstrap.py:1117 (_ERR_MSG_PREFIX 'No module named ')"),
             ("CPython 3.11.7", "Lib/importlib/_bootstrap.py:1140 (raise ModuleNotFoundError(_ERR_MSG...))")))

# (round 17) the NIXL connector's structured failure record, "NIXL transfer failure: %s | Context: %s"
# (_log_failure, kv_connector/v1/nixl/base_worker.py:1118 (0.30.0), :1378 (0.33.0), :1455 (0.34.0)): every
# caller catches the error and logs it so, then goes on: a handshake with a remote engine that failed (the
# handshake future's done_callback, "handshake_setup_failed", :1513 (0.34.0); the requests waiting on it,
# "handshake_failed", :1549), a transfer's failed state or exception (:3499, :3509), a notification (:3577;
# pull_worker.py:479, :540, :637; push_worker.py:390, :422, :512, :755): the requests it names fail or are
# recomputed and the engine serves on. One request's error (or one remote engine's); the exception logged
# with it (exc_info) is part of the record (a NIXL status raised in it and shown whole still reads as
# vllm_nixl_status_error: the record's line is not part of the traceback's chain). Where the paste cuts the
# record's line off, its traceback is the handshake callback's by its frame: every release catches there
# (done_callback: nixl_connector.py:1096-1099 (0.11.1), logger.exception("Handshake with %s failed");
# base_worker.py:1172-1183 (0.30.0), :1499-1518 (0.34.0), _log_failure)
# (round 65) or the record's line cut right after its failure type, which every failure_type vLLM logs ends in
# _failed or _exception (handshake_setup_failed, transfer_exception, ...: nixl/base_worker.py:1455, :1513 (0.34.0);
# nixl_connector.py:1192, :1222 (0.14.0)), a paste that quotes "NIXL transfer failure: handshake_setup_failed" alone
_NIXL_FAILURE = r"NIXL transfer failure: (?:\w+(?:\. .*)? \| Context: \{|\w+_(?:failed|exception)[ \t]*$)"
_NIXL_CALLBACK = r'nixl(?:_connector|/\w*worker)\.py", line \d+, in done_callback\s*$'
NIXL_TRANSFER_FAILURE = Signature(
    "vllm_nixl_transfer_failure", "request_error", "NIXL's KV transfer failed for a request (PD, logged)",
    ("The decode instance's NIXL connector logged a failed KV transfer step and carried on: the requests it "
     "names fail (or are recomputed, with `kv_load_failure_policy`), the engine serves on. Its failure_type "
     "says which step: handshake_setup_failed / handshake_failed, the decode side could not reach the "
     "prefill instance's NIXL side channel (its host and port in the request's kv_transfer_params, "
     "VLLM_NIXL_SIDE_CHANNEL_PORT) or its agent metadata did not match; transfer_failed / "
     "transfer_exception, the transfer itself (NIXL's status in the exception). The exception logged with "
     "it says why.",),
    patterns=(r".",), context=(rf"{_NIXL_FAILURE}|{_NIXL_CALLBACK}",), lines=(_NIXL_FAILURE,), cut_ok=True,
    priority=4, request=True, phase="serving",
    sources=(("0.30.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1118"),
             ("0.30.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1176"),
             ("0.33.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1378"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1455"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1513"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:3509"),
             ("vllm 0.11.1", "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py:1099")))

# (round 17) NIXL's connector built where NIXL cannot be imported: the import's failure leaves the wrapper
# None with a warning only ("NIXL is not available", nixl_connector.py:75 (0.11.1), distributed/
# nixl_utils.py:63 (0.34.0)); the connector's worker then refuses to start, RuntimeError("NIXL is not
# available") (nixl_connector.py:792 (0.11.1); nixl/base_worker.py:404 (0.30.0), :611 (0.33.0), :670
# (0.34.0)): the package the `--kv-transfer-config` needs is not installed. Only the raised error: the
# warning alone is every server's that does not use NIXL
NIXL_UNAVAILABLE = replace(
    DEPENDENCY, name="vllm_nixl_unavailable", title="NIXL is not installed (NixlConnector)",
    advice=("vLLM's NixlConnector was configured (`--kv-transfer-config`) but NIXL cannot be imported where "
            "vLLM runs: install NIXL (`pip install nixl`, or the build for this CUDA / ROCm) in the server's "
            "environment; `python -c 'import nixl._api'` shows the import's own error. The AttributeError of "
            "the connector's shutdown after it is a follow-on.",),
    # (the exception's text may run on with the paste's next lines: the line itself ends at its message)
    patterns=(r"^(?:RuntimeError: )?NIXL is not available\s*(?:$|\n)",), types=r"(?:\w+\.)*RuntimeError|",
    lines=(r"^RuntimeError: NIXL is not available\s*$",), context=(), absent=(), priority=60, phase=None,
    detail=None,
    sources=(("vllm 0.11.1", "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py:792"),
             ("0.30.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:404"),
             ("0.33.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:611"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:670"),
             ("0.34.0", "vllm/distributed/nixl_utils.py:63")))

# (round 18) V0's engine logs a KeyError as its str, the key quoted with no type (run_mp_engine's
# logger.exception(e): engine/multiprocessing/engine.py:366 (0.6.4.post1), :400 (0.7.3); read as the cut
# traceback's exception by :mod:`ddlab.diagnosis.vllm_records`): a quoted checkpoint tensor's name is the
# loader's lookup of a name the model has no parameter for (weights.WEIGHT_NAME's names), or one of the
# quant-state tensors of a pre-quantized bitsandbytes checkpoint, whose suffixes vLLM's loader knows
# ("absmax", "quant_map", "nested_absmax", "nested_quant_map", "bitsandbytes": model_loader/loader.py:825
# (0.6.4.post1), _is_4bit_weight_name; weight.quant_state.bitsandbytes__nf4); (round 67) or an int8 one's
# ("SCB", "weight_format": loader.py:818-821 (0.6.4.post1), _is_8bit_weight_name; SCB the row scales, :838)
_TENSOR_NAMES = (r"(?:w\d+_)?weight|bias|qweight|qzeros|scales?|g_idx"
                 r"|(?:w\d+_)?(?:weight_scale(?:_inv|_2)?|input_scale|weight_packed|weight_shape|[kv]_scale)"
                 r"|zeros|deq_scale|(?:nested_)?(?:absmax|quant_map)|quant_state\.bitsandbytes__\w+|SCB|weight_format")
_TENSOR_KEY = rf"^(?:Exception: )?'(?:[\w-]+\.)+(?:{_TENSOR_NAMES})'\s*$"
TENSOR_KEY_MESSAGE = replace(
    UNREADABLE, name="vllm_weight_name_in_engine_message",
    title="V0's engine message is a checkpoint tensor's name (a KeyError's str)",
    advice=UNREADABLE.advice + (
        "A quantized checkpoint's own tensors (a bitsandbytes checkpoint's absmax / quant_map) that the "
        "model's loader cannot place: pass the checkpoint's quantization (`--quantization bitsandbytes "
        "--load-format bitsandbytes` on releases that need both) or use a vLLM release whose loader supports "
        "this pre-quantized layout.",),
    types=r"Exception", patterns=(_TENSOR_KEY,), lines=(), context=(), absent=(), priority=60,
    phase="load_weights", detail=None,
    sources=(("0.6.4.post1", "vllm/engine/multiprocessing/engine.py:366"),
             ("0.7.3", "vllm/engine/multiprocessing/engine.py:400"),
             ("0.6.4.post1", "vllm/model_executor/model_loader/loader.py:825"),
             ("0.6.4.post1", "vllm/model_executor/model_loader/loader.py:819")))

# (round 18) the OpenAI server checks `--tool-call-parser` against the parsers it registers before it starts,
# KeyError(f"invalid tool call parser: {name} (chose from {{ ... }})"): entrypoints/openai/api_server.py:594
# (0.6.4.post1), :921 (0.7.3), :1959 (0.11.1); entrypoints/launchers/launcher.py:240 (0.30.0);
# entrypoints/common/cli_args.py:621 (0.33.0), :630 (0.34.0)
_TOOL_PARSER = r"invalid tool call parser: \S+ \(chose from \{"
TOOL_PARSER_UNKNOWN = Signature(
    "vllm_tool_parser_unknown", "bad_argument", "--tool-call-parser names a parser this vLLM does not have",
    ("`--tool-call-parser` names no parser this vLLM release registers (the error lists the ones it has): "
     "pick one of them, install a vLLM release that ships the model's parser, or load the parser's module "
     "with `--tool-parser-plugin` and name it as the module registers it.",),
    patterns=(_TOOL_PARSER,), lines=(_TOOL_PARSER,), priority=90, phase="launch",
    sources=(("0.6.4.post1", "vllm/entrypoints/openai/api_server.py:594"),
             ("0.7.3", "vllm/entrypoints/openai/api_server.py:921"),
             ("vllm 0.11.1", "vllm/entrypoints/openai/api_server.py:1959"),
             ("0.30.0", "vllm/entrypoints/launchers/launcher.py:240"),
             ("0.33.0", "vllm/entrypoints/common/cli_args.py:621"),
             ("0.34.0", "vllm/entrypoints/common/cli_args.py:630")))

# (round 18) get_config with config_format "auto" finds neither config.json nor params.json at the model
# path and raises "Could not detect config format for no config file found." (transformers_utils/config.py:585
# (0.11.1), :781 (0.30.0), :903 (0.33.0), :948 (0.34.0)); its except re-raises as "Invalid repository ID or
# local directory specified" (MODEL_NOT_FOUND's text), often cut from the paste: no model vLLM can load there.
# (round 25) Releases before get_config's rewrite raise the same finding as "No supported config format found
# in {model}" (config.py:168 (0.6.3.post1), :176 (0.6.4.post1); "... in {model}." :263 (0.7.3)), after
# file_or_path_exists found neither file on the path, in the hub cache, or on the hub
_NO_CONFIG = r"Could not detect config format for no config file found\."
_NO_CONFIG_FORMAT = r"No supported config format found in \S"
NO_CONFIG_FILE = from_texts(
    MODEL_NOT_FOUND, texts=(_NO_CONFIG, _NO_CONFIG_FORMAT), name="vllm_no_config_file",
    title="the model path has no config.json nor params.json",
    advice=("The model path (a folder or a Hugging Face repo) has neither config.json (Hugging Face "
            "format) nor params.json (Mistral format) at its top: not a model vLLM can load as given (a "
            "wrong folder or subfolder, a download that did not finish, a repo of another layout such as a "
            "diffusers pipeline, which vLLM-Omni or another server serves). Give `vllm serve` the folder "
            "with config.json as its model, or give `--config-format` where the config is in another "
            "format. A Hugging Face repo id that reads so was not found, not reachable (gated without the "
            "host's token, no network) or not cached offline: check the name and `hf download` it first.",),
    priority=86, phase="launch",
    sources=(("0.30.0", "vllm/transformers_utils/config.py:781"),
             ("vllm 0.11.1", "vllm/transformers_utils/config.py:585"),
             ("0.33.0", "vllm/transformers_utils/config.py:903"),
             ("0.34.0", "vllm/transformers_utils/config.py:948"),
             ("0.6.4.post1", "vllm/transformers_utils/config.py:176"),
             ("0.7.3", "vllm/transformers_utils/config.py:263")))

# (round 18) vLLM's FlashAttention build checks the GPU on every call and refuses before sm80 (the
# flash_api.cpp check of vllm-flash-attn, its text in the compiled extension:
# vllm_flash_attn/vllm_flash_attn_c.abi3.so (0.6.4.post1), vllm_flash_attn/_vllm_fa2_C.abi3.so (0.34.0));
# V0's model runner wraps it as "Error in model execution (input dumped to ...): <the text>"
# (worker/model_runner_base.py)
_FA_PRE_AMPERE = r"FlashAttention only supports Ampere GPUs or newer"
FLASH_ATTN_PRE_AMPERE = from_texts(
    UNSUPPORTED_GPU, texts=(_FA_PRE_AMPERE,), name="vllm_flash_attn_pre_ampere",
    title="FlashAttention refused this GPU (older than Ampere)",
    advice=("vLLM's FlashAttention kernels need an Ampere (sm80) or newer GPU and this one is older (Volta, "
            "Turing): choose another attention backend (`VLLM_ATTENTION_BACKEND=XFORMERS` on V0 releases; "
            "TRITON_ATTN or FLASHINFER where the release has them, `--attention-backend` in newer ones), or "
            "use an Ampere or newer GPU.",),
    priority=81,
    sources=(("vllm 0.6.4.post1", "vllm/vllm_flash_attn/vllm_flash_attn_c.abi3.so (compiled: FlashAttention "
                                  "only supports Ampere GPUs or newer.)"),
             ("vllm 0.34.0", "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so (compiled: FlashAttention only "
                             "supports Ampere GPUs or newer.)")))

# (round 18) Triton's "Triton Error [CUDA]: device kernel image is invalid" and its MLIR passes'
# "PassManager::run failed": SGLang's signatures (compilers.py), vLLM's advice
TRITON_INVALID_IMAGE = voiced(
    compilers.TRITON_INVALID_IMAGE,
    ("The CUDA driver refused the binary of a kernel Triton had just compiled (torch.compile's "
     "inductor or vLLM's Triton kernels): the ptxas Triton used targets a newer CUDA than the driver "
     "(`nvidia-smi` shows the driver's CUDA; TRITON_PTXAS_PATH can point at the system toolkit's "
     "ptxas), or a cache from another install is reused: clear ~/.triton/cache and "
     "~/.cache/vllm/torch_compile_cache; `--enforce-eager` skips torch.compile's kernels.",))
TRITON_PASS_FAILED = voiced(
    compilers.TRITON_PASS_FAILED,
    ("Triton could not lower a kernel (torch.compile's inductor or vLLM's own Triton kernels) for "
     "this GPU: its MLIR passes failed. MLIR's diagnostics above it (\"error: Failures have been "
     "detected while processing an MLIR pass pipeline\", the failing pass) say which; a GPU that this "
     "Triton's backend does not support, or a Triton of another release than the torch expects, are "
     "the usual causes. `--enforce-eager` skips inductor's kernels; a Triton-free attention backend "
     "avoids vLLM's.",))

# (round 19) a compressed-tensors checkpoint's scheme checks the GPU's compute capability while the model's
# layers get their quantization methods (get_quant_method -> get_scheme ->
# self._check_scheme_supported(scheme.get_min_capability())) and raises RuntimeError("Quantization scheme is
# not supported for the current GPU. Min capability: N. Current capability: M."), its only raise there
# (compressed_tensors.py:134 (0.6.4.post1, a tuple of three strings: "... for ', 'the current GPU ..."),
# :201 (0.7.3), :279, :287 (0.11.1), :398, :406 (0.30.0), :402, :410 (0.33.0, 0.34.0); the call at :331
# (0.6.4.post1), :438 (0.7.3), :722 (0.11.1), :940 (0.30.0), :994 (0.33.0, 0.34.0))
_SCHEME_GPU = r"Quantization scheme is not supported for (?:', ')?the current GPU"
_SCHEME_ADVICE = ("The checkpoint's compressed-tensors quantization scheme needs a newer GPU than this one (the "
                  "error's Min capability against the Current capability: 75 is Turing, 80 Ampere, 89 Ada, 90 "
                  "Hopper): use a checkpoint quantized for this GPU (another scheme, GPTQ / AWQ with a kernel "
                  "for it, or the unquantized model), or a newer GPU.",)
_SCHEME_SOURCES = (
    (_V0, "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:134"),
    ("0.7.3", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:201"),
    ("vllm 0.11.1", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:287"),
    ("0.30.0", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:406"),
    ("0.33.0", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:410"),
    ("0.34.0", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:402"),
    ("0.34.0", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:410"),
    ("0.34.0", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py:994"))
QUANT_SCHEME_GPU = from_texts(
    UNSUPPORTED_GPU, texts=(_SCHEME_GPU,), name="vllm_quant_scheme_gpu",
    title="the checkpoint's quantization scheme needs a newer GPU", advice=_SCHEME_ADVICE,
    priority=81, phase="load_weights", sources=_SCHEME_SOURCES)
# the same check seen in its frames, the message cut: the capability check's call in get_scheme (a traceback
# through it was raised inside the check), or a RuntimeError raised from the check's own raise
_SCHEME_CALL = r"^\s*self\._check_scheme_supported\(scheme\.get_min_capability\(\)\)\s*$"
_SCHEME_RAISE = r'", line \d+, in _check_scheme_supported\s*\n\s*raise RuntimeError\($'
QUANT_SCHEME_CHECK = replace(
    QUANT_SCHEME_GPU, name="vllm_quant_scheme_check",
    title="the checkpoint's quantization scheme failed its GPU capability check (message cut)",
    patterns=(r".",), lines=(), types=r"RuntimeError", context=(rf"{_SCHEME_CALL}|{_SCHEME_RAISE}",),
    cut_ok=True, priority=80)

# (round 19) the quantization method takes only some activation dtypes: "torch.bfloat16 is not supported for
# quantization method gptq. Supported dtypes: [torch.float16]" (model_loader/loader.py:114 (0.6.3.post1),
# _get_quantization_config, while the model is built; the config's own check from 0.6.4: config.py:2101
# (0.6.4.post1), :3236 (0.7.3); config/vllm.py:266 (0.11.1), :846 (0.30.0), :940 (0.33.0), :902 (0.34.0))
_QUANT_DTYPE = r"\S+ is not supported for quantization method \w+\. Supported dtypes: \["
QUANT_DTYPE = Signature(
    "vllm_quant_dtype", "bad_argument", "the quantization method does not take the model's dtype",
    ("The checkpoint's quantization method runs only with the dtypes the error lists, and the model's "
     "`--dtype` (by default the checkpoint's torch_dtype, or the one the platform forces: bfloat16 on CPU) is "
     "another: pass `--dtype` with one of the listed dtypes (`--dtype float16` for GPTQ / AWQ), or use a "
     "checkpoint quantized with a method this dtype and platform support.",),
    patterns=(_QUANT_DTYPE,), lines=(_QUANT_DTYPE,), priority=84, fatal=True,
    sources=((_V0, "vllm/config.py:2101"), ("vllm 0.6.3.post1", "vllm/model_executor/model_loader/loader.py:114"),
             ("0.7.3", "vllm/config.py:3236"),
             ("vllm 0.11.1", "vllm/config/vllm.py:266"), ("0.30.0", "vllm/config/vllm.py:846"),
             ("0.33.0", "vllm/config/vllm.py:940"), ("0.34.0", "vllm/config/vllm.py:902")))

# (round 21) the same check's other half: the quantization method needs a newer GPU, "The quantization method
# fp8 is not supported for the current GPU. Minimum capability: 90. Current capability: 86." (ValueError; its
# message line model_executor/model_loader/loader.py:108 (0.6.3.post1, while the model is built), then the
# config's: config.py:2095 (0.6.4.post1), :3230 (0.7.3); config/vllm.py:259 (0.11.1), :409 (0.14.0), :839
# (0.30.0), :933 (0.33.0), :895 (0.34.0)); the method's own get_min_capability against the GPU's
_QUANT_GPU = r"The quantization method \S+ is not supported for the current GPU\. Minimum capability: \d+"
QUANT_METHOD_GPU = from_texts(
    UNSUPPORTED_GPU, texts=(_QUANT_GPU,), name="vllm_quant_method_gpu",
    title="the quantization method needs a newer GPU",
    advice=("The checkpoint's (or `--quantization`'s) method needs the compute capability the error's Minimum "
            "names and this GPU has the Current one (75 is Turing, 80 / 86 Ampere, 89 Ada, 90 Hopper): use a "
            "checkpoint quantized for this GPU (GPTQ / AWQ, or the unquantized model), a vLLM release whose "
            "method runs here (later releases run FP8 weights on Ampere through Marlin), or a newer GPU.",),
    priority=81,
    sources=(("0.34.0", "vllm/config/vllm.py:895"), ("0.33.0", "vllm/config/vllm.py:933"),
             ("0.30.0", "vllm/config/vllm.py:839"), ("vllm 0.14.0", "vllm/config/vllm.py:409"),
             ("vllm 0.11.1", "vllm/config/vllm.py:259"), ("0.7.3", "vllm/config.py:3230"), (_V0, "vllm/config.py:2095"),
             ("vllm 0.6.3.post1", "vllm/model_executor/model_loader/loader.py:108")))

# (round 19) CuTe DSL (NVIDIA CUTLASS's Python DSL, which vLLM's and FlashInfer's CuTe kernels are written in)
# checks the GPU's architecture when a kernel's MMA or copy atom is built: "expects arch to be one of
# [Arch.sm_120a, ...], but got Arch.sm_121a" (nvidia-cutlass-dsl-libs-core 4.8.1
# nvidia_cutlass_dsl/dsl_packages/cutlass/cute/nvgpu/warp/mma.py:456, :864; tcgen05/mma.py:443; tcgen05/copy.py:136;
# raised as DSLUserCodeError there, as OpError in older releases): the kernel has no build for this GPU
_CUTE_DSL, _NVGPU = "nvidia-cutlass-dsl-libs-core 4.8.1", "nvidia_cutlass_dsl/dsl_packages/cutlass/cute/nvgpu"
_CUTE_ARCH = r"expects arch to be one of \[[^\]]*\], but got (?:Arch\.)?sm_\w+"
CUTE_DSL_ARCH = from_texts(
    UNSUPPORTED_GPU, texts=(_CUTE_ARCH,), name="vllm_cute_dsl_arch",
    title="a CuTe DSL kernel has no build for this GPU's architecture",
    advice=("A kernel written in CUTLASS's CuTe DSL (an MoE, FP4 / FP8 GEMM or attention kernel of vLLM or "
            "FlashInfer) supports only the architectures the error lists, and this GPU is another (sm_121 is "
            "DGX Spark's GB10, sm_120 the RTX 50 / RTX PRO Blackwell): choose another kernel backend for it (the "
            "MoE / GEMM backend flags or environment variables of this release), a vLLM / FlashInfer / "
            "nvidia-cutlass-dsl release that lists this architecture, or set CUTE_DSL_ARCH only where the GPU "
            "really is one of the listed ones.",),
    priority=81,
    sources=((_CUTE_DSL, f"{_NVGPU}/warp/mma.py:456"), (_CUTE_DSL, f"{_NVGPU}/warp/mma.py:864"),
             (_CUTE_DSL, f"{_NVGPU}/tcgen05/mma.py:443"), (_CUTE_DSL, f"{_NVGPU}/tcgen05/copy.py:136")))

# (round 50) An architecture this vLLM does not implement falls back to its Transformers backend, which refuses a
# model whose Transformers class is not backend-compatible: resolve_transformers_arch raises "{arch} has no vLLM
# implementation and the Transformers implementation is not compatible with vLLM." (model_executor/model_loader/
# utils.py:66-68 (0.7.2), :75-77 (0.7.3); " Try setting VLLM_USE_V1=0." added, :75-78 (0.8.5.post1), :207-210
# (0.9.1)), and under --model-impl transformers "The Transformers implementation of {arch} is not compatible with
# vLLM." (utils.py:69-71 (0.8.5.post1); models/registry.py:861-864 (0.11.1), :1413-1416 (0.34.0)). It runs where
# get_model_architecture resolves the class the loader builds (_initialize_model, model_loader/loader.py:123
# (0.8.5.post1), utils.py:52 (0.9.1)): load_weights. V0's engine logs the text as its record's message
_NOT_COMPATIBLE = (r"\S+ has no vLLM implementation and the Transformers implementation is not compatible with vLLM"
                   r"|The Transformers implementation of '?\S+?'? is not compatible with vLLM")
TRANSFORMERS_INCOMPATIBLE = Signature(
    "vllm_transformers_incompatible", "arch_unsupported",
    "no vLLM implementation of the architecture, and its Transformers class is not one vLLM's backend can run",
    ("This vLLM has no implementation of the model's architecture, and its Transformers backend (the fallback) "
     "cannot run the model's Transformers class either (it is not marked compatible with vLLM's attention). "
     "Use a vLLM release whose supported-models list names the architecture; where the message says \"Try "
     "setting VLLM_USE_V1=0\" and the engine is V1, that release's V0 engine may implement it. Under "
     "`--model-impl transformers`, drop the flag so that vLLM's own implementation is used where there is one.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_NOT_COMPATIBLE,), lines=(_NOT_COMPATIBLE,), priority=72,
    phase="load_weights",
    sources=(("vllm 0.7.2", "vllm/model_executor/model_loader/utils.py:66"),
             ("vllm 0.8.5.post1", "vllm/model_executor/model_loader/utils.py:75"),
             ("vllm 0.9.1", "vllm/model_executor/model_loader/utils.py:207"),
             ("vllm 0.8.5.post1", "vllm/model_executor/model_loader/utils.py:69"),
             ("vllm 0.11.1", "vllm/model_executor/models/registry.py:861"),
             ("0.34.0", "vllm/model_executor/models/registry.py:1413")))

# (round 55) a platform plugin's model refusing the launch's length with the flag to change as the remedy: "...
# do not support max_model_len greater than 32768 on N150 (received 65536). Set --max_model_len to 32768 or lower
# in vLLM." (Tenstorrent's tt-metal, models/tt_transformers/tt/generator_vllm.py, initialize_vllm_model, run
# when the plugin's worker loads the model). vLLM's parser takes a flag spelt with underscores as the dashed one
# (FlexibleArgumentParser, utils/argparse_utils.py:157, :381 (0.34.0)): a ValueError that ends "Set --<flag> to <value>
# or lower/higher" names the launch's own value as what is refused
_SET_FLAG = r"\bSet --[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+ to [\w.]+ or (?:lower|less|smaller|higher|more|larger)\b"
FLAG_BOUND = Signature(
    "vllm_flag_bound", "bad_argument", "a launch value is over what the model or its platform allows",
    ("The model (or the platform plugin that runs it) refuses a launch value and names the flag and the "
     "bound: start again with the value the message gives (for a length, `--max-model-len`).",),
    patterns=(_SET_FLAG,), types=r"(?:\w+\.)*ValueError", priority=60, phase="launch",
    sources=(("0.34.0", "vllm/utils/argparse_utils.py:157"), ("0.34.0", "vllm/utils/argparse_utils.py:381")))

SIGNATURES: list[Signature] = [NIXL_STATUS, NO_MODULE_NAMED, NIXL_TRANSFER_FAILURE, NIXL_UNAVAILABLE,
                               TENSOR_KEY_MESSAGE, TOOL_PARSER_UNKNOWN, NO_CONFIG_FILE, FLASH_ATTN_PRE_AMPERE,
                               TRITON_INVALID_IMAGE, TRITON_PASS_FAILED, QUANT_SCHEME_GPU, QUANT_SCHEME_CHECK,
                               QUANT_DTYPE, QUANT_METHOD_GPU, CUTE_DSL_ARCH,
                               TRANSFORMERS_INCOMPATIBLE]
