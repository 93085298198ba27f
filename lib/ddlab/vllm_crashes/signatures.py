"""vLLM: its crash texts, mapped onto ddlab's kinds, with advice in vLLM's words and flags.

Texts are cited as ``(release, "vllm/path.py:line")`` in the wheels of 0.30.0, 0.33.0 and 0.34.0 (the V1 engine) and
0.6.4.post1 (the V0 engine's texts, for older pastes); the line is where the text is written. Where a kind means the
same as SGLang's it is the same kind (``kv_pool_oom``, ``cuda_graph_capture``, ``port_in_use``, ``bad_argument``
...); one kind came with vLLM's logs, for both servers: ``disk_full`` (:mod:`.disks`). Texts that come from the
libraries both servers use (torch's CUDA errors, NCCL, Hugging Face, transformers, Triton, Python) are SGLang's
signatures with their patterns kept and their advice rewritten in vLLM's flags (:mod:`.library`); speculative
decoding's own texts (its config, its token budget, the draft against the target) are :mod:`.speculative`, one
request's errors :mod:`.requests`, CUDA graphs' (capture, replay) :mod:`.graphs`, a start refused by the weight
loaders or the config's own checks :mod:`.loading`, the engine's death and stalls :mod:`.engine`. The engine's own
echoes of a death elsewhere ("Engine core initialization failed. See root cause above", ``EngineDeadError``,
"EngineCore failed to start.", "AsyncLLM output_handler failed.") are ``echo`` signatures of kind ``unknown``: they
never win over the error they echo, and alone they say where that error is printed.

Advice names vLLM's flags in backticks (``--gpu-memory-utilization``,
``--max-model-len``, ``--enforce-eager``, ``--compilation-config``,
``--speculative-config`` with ``num_speculative_tokens``); every one is taken by the
parser tables of 0.30.0, 0.33.0 and 0.34.0 (tests/diagnosis/test_vllm_diagnosis.py).
"""

from __future__ import annotations

from ddlab.vllm_crashes import (adapters, ascend, backends, disks, engine, entrypoints, graphs, installs, library,
                                linear_backends, loading, messages, neuron, parallel_sizes, requests, speculative)
from ddlab.vllm_crashes.engine import ECHO_LINES, SERVING_ECHOES
from ddlab.vllm_crashes.requests import CAUGHT, ENGINE_STREAMS
from ddlab.crashes.signature import Found, Signature, regex, unwrapped

__all__ = ["SIGNATURES", "ECHO_LINES", "SERVING_ECHOES", "CAUGHT", "ENGINE_STREAMS"]

_V0 = library.V0


def _utilization(found: Found) -> float | None:
    value = found.facts.get("gpu_memory_utilization")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _more_utilization(found: Found) -> str:
    now = _utilization(found)
    if now is not None and round(now + 0.05, 2) <= 0.98:
        return (f"`--gpu-memory-utilization` is {now:g}: try `--gpu-memory-utilization "
                f"{round(now + 0.05, 2):.2f}` (the share of GPU memory vLLM may take).")
    return ("Raise `--gpu-memory-utilization` (the share of GPU memory vLLM may take; "
            "another process on the GPU counts against it).")


def _kv_detail(found: Found) -> str:
    estimate = regex(r"estimated maximum model length is (\d+)").search(found.text)
    wanted = regex(r"max seq len \((\d+)\)").search(found.text)
    said = [_more_utilization(found)]
    if estimate:
        said.append(f"Or serve shorter requests: vLLM computed that `--max-model-len "
                    f"{estimate[1]}` fits (now {wanted[1] if wanted else 'longer'}).")
    elif wanted:
        said.append(f"Or a shorter `--max-model-len` than {wanted[1]}.")
    if found.facts.get("speculative_method"):
        said.append("The draft model's weights and its KV cache count too.")
    return " ".join(said)


# --- the KV cache ---------------------------------------------------------------------

KV_NO_MEMORY = Signature(
    "vllm_kv_no_memory", "kv_pool_oom", "no GPU memory is left for the KV cache blocks",
    ("After the weights, the profiling run's activations and (V1) the CUDA graphs, nothing of "
     "the `--gpu-memory-utilization` share is left for the KV cache.",),
    patterns=(r"No available memory for the cache blocks",),
    lines=(r"No available memory for the cache blocks",),
    context=(r"No available memory for the cache blocks",), cut_ok=True,
    priority=72, phase="memory_pool", fatal=True, detail=_kv_detail,
    sources=((_V0, "vllm/worker/worker.py:493"),
             ("0.30.0", "vllm/v1/core/kv_cache_utils.py:880"),
             ("0.33.0", "vllm/v1/core/kv_cache_planning.py:58"),
             ("0.34.0", "vllm/v1/core/kv_cache_planning.py:108")))

KV_MAX_LEN = Signature(
    "vllm_kv_max_len", "kv_pool_oom", "the KV cache cannot hold one request of --max-model-len",
    ("The KV cache that fits is smaller than one request of `--max-model-len` tokens.",),
    patterns=(r"To serve at least one request with the model\S* max seq len",
              r"KV\s*cach?e?\s*is needed, which is larger than the available KV cache memory",
              r"max seq len \(\d+\) is larger than the maximum number of tokens that can be stored in KV cache"),
    lines=(r"To serve at least one request with the model\S* max seq len",
           r"max seq len \(\d+\) is larger than the maximum number of tokens that can be stored in KV cache"),
    context=(r"To serve at least one request|is larger than the maximum number of tokens",), cut_ok=True,
    priority=73, phase="memory_pool", fatal=True, detail=_kv_detail,
    sources=((_V0, "vllm/worker/worker.py:499"),
             ("0.30.0", "vllm/v1/core/kv_cache_utils.py:902"),
             ("0.33.0", "vllm/v1/core/kv_cache_planning.py:80"),
             ("0.34.0", "vllm/v1/core/kv_cache_planning.py:127")))

# (round 15) a traceback cut at the KV cache's memory check, its exception line not pasted: the check
# raises only the two texts above ("No available memory for the cache blocks", "To serve at least one
# request ..."; check_enough_kv_cache_memory, v1/core/kv_cache_utils.py:663, raises at :686, :707 (0.11.1);
# _check_enough_kv_cache_memory, kv_cache_utils.py:872 (0.30.0), kv_cache_planning.py:50 (0.33.0), :99
# (0.34.0)): a traceback whose last frame is that call (or inside it) is one of them. A deeper frame
# below it, or any exception line, is not this
_KV_CHECK_LAST = (r"(?:\b_?check_enough_kv_cache_memory\(|, in _?check_enough_kv_cache_memory\b)[^\n]*"
                  r"(?:\n(?!\s*File \")[^\n]*)*\Z")
KV_CHECK_CUT = Signature(
    "vllm_kv_check_cut", "kv_pool_oom", "the KV cache's memory check failed (the traceback is cut)",
    ("The traceback ends in vLLM's check that the KV cache fits (its exception line is cut off): either "
     "nothing is left for the KV cache blocks or the cache cannot hold one request of `--max-model-len` "
     "tokens; the whole log says which.",),
    # (its pattern only names one of the texts: whole, they are vllm_kv_no_memory's and vllm_kv_max_len's)
    patterns=(r"No available memory for the cache blocks",), context=(_KV_CHECK_LAST,), cut_ok=True,
    priority=31, phase="memory_pool", detail=_kv_detail,
    sources=(("0.30.0", "vllm/v1/core/kv_cache_utils.py:872"), ("vllm 0.11.1", "vllm/v1/core/kv_cache_utils.py:663"),
             ("0.33.0", "vllm/v1/core/kv_cache_planning.py:50"),
             ("0.34.0", "vllm/v1/core/kv_cache_planning.py:99")))

# V0 logs the block count before it checks it ("# GPU blocks: %d", executor/gpu_executor.py:113 (0.6.4.post1)); 0 raises
# at once (worker.py:493); (round 78) 0.7.3 names the device ("# cuda blocks", executor_base.py:111, cuda.py:72)
GPU_BLOCKS_ZERO = Signature(
    "vllm_gpu_blocks_zero", "kv_pool_oom", "the profiling run left 0 GPU blocks for the KV cache",
    ("vLLM found room for 0 KV cache blocks after profiling, so the engine stops (\"No available "
     "memory for the cache blocks\").",),
    lines=(r"# (?:GPU|cuda|rocm) blocks: 0\b",), priority=71, phase="memory_pool", fatal=True, detail=_kv_detail,
    sources=((_V0, "vllm/executor/gpu_executor.py:113"), ("0.7.3", "vllm/executor/executor_base.py:111"),
             ("0.7.3", "vllm/worker/worker.py:538"), (_V0, "vllm/executor/distributed_gpu_executor.py:57"),
             (_V0, "vllm/worker/worker.py:493")))

# V0 workers wrap a failed method: "Error executing method initialize_cache" (worker_base.py:478)
# and "Exception in worker X while processing method initialize_cache" (multiproc_worker_utils.py:230);
# initialize_cache checks the cache's size first (raise_if_cache_size_invalid, worker.py:268)
INIT_CACHE_FAILED = Signature(
    "vllm_initialize_cache_failed", "kv_pool_oom", "a V0 worker failed to initialize the KV cache",
    ("The V0 worker's `initialize_cache` failed; it checks first that the KV cache holds one "
     "request of `--max-model-len` (raise_if_cache_size_invalid), then warms up and captures the "
     "CUDA graphs: the exception below this line says which.",),
    lines=(r"Error executing method '?initialize_cache\b", r"while processing method initialize_cache\b"),
    priority=40, phase="memory_pool", detail=_kv_detail,
    sources=((_V0, "vllm/worker/worker_base.py:478"),
             (_V0, "vllm/executor/multiproc_worker_utils.py:230"),
             (_V0, "vllm/worker/worker.py:268")))

# the worker wrapper logs a method that raised, then re-raises it (worker/worker_base.py:478
# (0.6.4.post1), :579 (0.7.3); v1/executor/ray_utils.py:87 (0.30.0)): the worker's own traceback
# follows; alone (cut below it) a crash of unknown cause, in the method's phase (vllm_diagnosis)
WORKER_METHOD_FAILED = Signature(
    "vllm_worker_method_failed", "unknown", "a worker's method raised",
    ("A worker process's method raised; the wrapper only reports it. The worker's traceback is "
     "printed right below this line (in a Ray cluster its lines carry `(RayWorkerWrapper pid=N)`) "
     "and names the error: get the whole log.",),
    lines=(r"Error executing method '?\w+'?\. This might cause deadlock in distributed execution",),
    priority=4, echo=True, fatal=True,
    sources=((_V0, "vllm/worker/worker_base.py:478"), ("0.7.3", "vllm/worker/worker_base.py:579"),
             ("0.30.0", "vllm/v1/executor/ray_utils.py:87")))

# (round 38) the hybrid KV cache manager off (--disable-hybrid-kv-cache-manager; a KV connector, "Turning off
# hybrid kv cache manager because `--kv-transfer-config` is set"; --kv-events-config; 0.19.1 config/vllm.py
# :1190-1258), get_kv_cache_groups makes a hybrid model's specs one type and raises where Mamba or linear-
# attention state stays beside attention while the KV cache is sized: "Hybrid KV cache manager is disabled
# but failed to convert ..." (v1/core/kv_cache_utils.py, 0.9.1 :920, 0.19.1 :1216-1219, 0.23.0 :1425), from
# 0.27.1 "Failed to promote local ..." (:1529; 0.34.0 kv_cache_planning.py:854, its other caller catches it)
_HYBRID_KV = (r"Hybrid KV cache manager is disabled but failed to convert the KV cache specs"
              r"|Failed to promote local KV cache specs to one unified type")
HYBRID_KV_UNIFY = Signature(
    "vllm_hybrid_kv_unify", "bad_argument", "the hybrid KV cache manager is off and this model needs it",
    ("This model mixes KV cache types (attention beside Mamba or linear-attention state) that only vLLM's "
     "hybrid KV cache manager can size, and the manager was turned off: by "
     "`--disable-hybrid-kv-cache-manager`, a KV connector (`--kv-transfer-config`), `--kv-events-config`, "
     "or a platform without it. Serve this model without that setting, or with a connector that supports "
     "the hybrid manager and `--no-disable-hybrid-kv-cache-manager`.",),
    patterns=(_HYBRID_KV,), lines=(_HYBRID_KV,), priority=74, phase="memory_pool", fatal=True,
    sources=(("0.30.0", "vllm/v1/core/kv_cache_utils.py:1880"),
             ("0.33.0", "vllm/v1/core/kv_cache_planning.py:814"),
             ("0.34.0", "vllm/v1/core/kv_cache_planning.py:854")))

# --- arguments ------------------------------------------------------------------------


def _derived_detail(found: Found) -> str | None:
    said = regex(r"derived max_model_len \((\w+)=(\d+)").search(found.text)
    if said:
        return f"The model's config says {said[1]}={said[2]}: `--max-model-len {said[2]}` at most."
    return None


MAX_LEN_OVER_MODEL = Signature(
    "vllm_max_len_over_model", "bad_argument", "--max-model-len is longer than the model's own",
    ("`--max-model-len` asks for more tokens than the model's config.json allows: give at most the "
     "model's length (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 overrides the check, at the risk of wrong "
     "output past the trained positions).",),
    patterns=(r"User-specified max_model_len \(\d+\) is greater than the derived max_model_len",),
    lines=(r"User-specified max_model_len \(\d+\) is greater than the derived max_model_len",),
    priority=89, phase="launch", detail=_derived_detail,
    sources=((_V0, "vllm/config.py:1982"), ("0.30.0", "vllm/config/model.py:2525"),
             ("0.33.0", "vllm/config/model.py:2665"), ("0.34.0", "vllm/config/model.py:2709")))

BF16_GPU = Signature(
    "vllm_bf16_gpu", "unsupported_gpu", "this GPU cannot run bfloat16",
    ("The GPU is older than compute capability 8.0 and has no bfloat16: run the model in float16 "
     "with `--dtype half`, or use an Ampere or newer GPU.",),
    patterns=(r"Bfloat16 is only supported on GPUs with compute capability of at least 8\.0",),
    lines=(r"Bfloat16 is only supported on GPUs with compute capability of at least 8\.0",),
    priority=85, phase="launch",
    sources=((_V0, "vllm/worker/worker.py:480"), ("0.30.0", "vllm/platforms/cuda.py:681"),
             ("0.33.0", "vllm/platforms/cuda.py:651"), ("0.34.0", "vllm/platforms/cuda.py:692")))


def _argparse_detail(found: Found) -> str | None:
    said = regex(r"error: argument ([-\w/]+)").search(found.text)
    flag = said[1].split("/")[0] if said else None
    if flag in ("--speculative-config", "--compilation-config") and "cannot be converted" in found.text:
        example = ('{"method":"eagle3","num_speculative_tokens":3}' if flag == "--speculative-config"
                   else '{"cudagraph_mode":"PIECEWISE"}')
        return (f"`{flag}` takes one JSON argument, quoted for the shell as a whole (single quotes "
                f"around it): `{flag} {example}`.")
    unknown = regex(r"unrecognized arguments?: +(\S+)").search(found.text)
    if unknown and "_" in unknown[1]:
        return (f"\"{unknown[1]}\" looks like a config key: vLLM's flags are dashed and each takes its "
                "own value (a space, not a quoted \"flag value\" pair).")
    return None


ARGPARSE = Signature(
    "vllm_argparse", "bad_argument", "vllm serve rejected its command line",
    ("Fix the flag argparse names (`vllm serve --help=all` lists the release's flags; they "
     "change between releases).",),
    lines=(r"\berror: (?:unrecognized arguments?|argument -|the following arguments are required"
           r"|ambiguous option|one of the arguments|invalid choice|expected one argument)",
           r"^usage: vllm\b",
           # (round 56) a subcommand refused: "vllm: error: argument subparser: invalid choice: 'X' (choose from
           # ...)", the subparsers' dest (0.10.2 entrypoints/cli/main.py:41), or a launcher's ("argument command")
           r"\berror: argument \w+: invalid choice: '[^'\n]*' \(choose from "),
    priority=90, phase="launch", detail=_argparse_detail,
    # (round 32) argparse's error exits its process (status 2); the server version and its non-default args
    # are logged only after a parse that succeeded (0.9.1 entrypoints/openai/api_server.py:1287-1288,
    # cli_args.py:309; 0.20.0 entrypoints/utils.py:233, :279; 0.30.0 serve/utils/api_utils.py:286, :327;
    # 0.34.0 entrypoints/common/startup.py:96, :18):
    # either after the refusal is a later start, whose end is the run's
    cleared_by=(r"\bvLLM (?:API )?server version \S+", r"\bnon-default args: \{"),
    sources=(("0.30.0", "vllm/engine/arg_utils.py:161"),
             ("0.33.0", "vllm/engine/arg_utils.py:167"),
             ("0.34.0", "vllm/engine/arg_utils.py:167"),
             ("0.34.0", "vllm/entrypoints/cli/serve.py:172"),
             ("0.34.0", "vllm/entrypoints/cli/main.py:98"),
             ("python", "argparse.py (ArgumentParser.error)")))

CONFIG_INVALID = Signature(
    "vllm_config_invalid", "bad_argument", "an engine config refused its arguments",
    ("vLLM's config classes validate the arguments when the engine config is built: the "
     "\"Value error\" line under the validation error names the value; fix that flag (or the "
     "model's config file it was read from).",),
    patterns=(r"validation errors? for (?:ModelConfig|VllmConfig|CacheConfig|SchedulerConfig|ParallelConfig"
              r"|CompilationConfig|LoadConfig|DeviceConfig|StructuredOutputsConfig|EngineArgs"
              # (round 28) the other pydantic config classes EngineArgs builds (0.34.0 config/lora.py:29-30)
              r"|LoRAConfig|MultiModalConfig|PoolerConfig|KVTransferConfig|ObservabilityConfig)",),
    lines=(r"validation errors? for (?:ModelConfig|VllmConfig|CacheConfig|SchedulerConfig|ParallelConfig"
           r"|CompilationConfig)\b",),
    priority=40, phase="launch",
    sources=(("0.34.0", "vllm/engine/arg_utils.py:2172"), ("0.34.0", "vllm/config/utils.py:72"),
             ("0.34.0", "vllm/config/lora.py:30"), ("0.34.0", "vllm/engine/arg_utils.py:2729"),
             ("pydantic 2", "pydantic_core ValidationError (N validation error for X)")))

# --- callers written for another vLLM release -----------------------------------------

API_MISMATCH = Signature(
    "vllm_api_mismatch", "dependency_mismatch", "the code driving vLLM was written for another vLLM release",
    ("The program that builds the engine (a training framework, a script) passes an argument or "
     "reads an attribute this vLLM release does not have: install the vLLM version that program "
     "pins, or a release of the program made for this vLLM.",),
    patterns=(r"(?:EngineArgs|AsyncEngineArgs|LLM|SamplingParams|LLMEngine|AsyncLLMEngine)\.__init__\(\) got an "
              r"unexpected keyword argument",
              r"'(?:LLMEngine|AsyncLLMEngine|AsyncLLM|LLM|EngineCoreClient|SyncMPClient)' object has no attribute"),
    priority=78,
    sources=(("0.30.0", "vllm/entrypoints/llm.py:298"), ("0.34.0", "vllm/entrypoints/llm.py:305"),
             (_V0, "vllm/entrypoints/llm.py:179")))

# (round 24) a model repo's instructions add an import of its own module to the `vllm` console script (the
# script pip writes imports only vllm.entrypoints.cli.main and calls main()), so its code patches vLLM
# when vllm starts; an AttributeError or ImportError raised under that import is the patch reaching for a
# name this vLLM release does not have (dots.ocr's patch reads BaseMultiModalItemTracker._placeholder_str,
# a method of vllm/entrypoints/chat_utils.py:386 (0.7.3), :187 (0.6.4.post1) that the class no longer has
# (:588 (0.30.0), :606 (0.11.1)))
PATCHED_ENTRY = Signature(
    "vllm_patched_entry_mismatch", "dependency_mismatch",
    "a module imported into the vllm command expects another vLLM",
    ("The `vllm` command was edited to import a model's own module, and that module reaches for a vLLM name "
     "this release does not have: install the vLLM version the model's repo pins (its README or "
     "requirements), or the repo's release made for this vLLM.",),
    types=r"(?:\w+\.)*(?:AttributeError|ImportError|ModuleNotFoundError)", patterns=(r".",),
    context=(r'bin[/\\]vllm", line \d+, in <module>\n(?:\(\S+ pid=\d+\))?\s*(?:from (?!vllm\b)[\w.]+ import'
             r"|import (?!vllm\b)\w)",), priority=77, phase="launch", cut_ok=True,
    sources=(("0.7.3", "vllm/entrypoints/chat_utils.py:386"), (_V0, "vllm/entrypoints/chat_utils.py:187"),
             ("0.30.0", "vllm/entrypoints/chat_utils.py:588")))

# --- the startup memory check, NCCL's init cut short ----------------------------------

_FREE_RE = (r"Free memory on device\b[^(]{0,30}\((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup is less "
            r"than (?P<what>desired GPU memory utilization|the engine's budget)")


def _free_detail(found: Found) -> str | None:
    said = next((m for text in unwrapped(found.text) if (m := regex(_FREE_RE).search(text))), None)
    if not said or said["what"] != "desired GPU memory utilization" or not float(said["total"]):
        return None
    share = int(float(said["free"]) / float(said["total"]) * 100) / 100 - 0.01
    if share < 0.1:
        return None
    return (f"{said['free']} of {said['total']} GiB were free: `--gpu-memory-utilization {share:.2f}` is "
            "the most that fits beside what the GPU already holds (less room for the KV cache).")


# V1 reserves `--gpu-memory-utilization` x the GPU's memory for the engine (weights, activations,
# graphs, KV cache) and refuses to start when less than that is free (request_memory,
# vllm/v1/worker/utils.py:790 (0.34.0)): the allocation that would fail is refused before it is
# made, so the kind is a CUDA OOM's and the fix is the opposite of the KV cache's (a smaller share); one
# line of text (0.14.0 vllm/v1/worker/utils.py:264), also read wrapped at a terminal's width (round 74)
STARTUP_FREE_MEMORY = Signature(
    "vllm_startup_free_memory", "cuda_oom", "less GPU memory is free than --gpu-memory-utilization asks for",
    ("vLLM takes `--gpu-memory-utilization` of the GPU's whole memory and checks at startup that so "
     "much is free; another process (an old server, a notebook, another rank's model) holds the rest: "
     "free the GPU (`nvidia-smi` lists who holds it) or lower `--gpu-memory-utilization` to the share "
     "that is free.",),
    patterns=(_FREE_RE,), lines=(_FREE_RE,), priority=74, phase="launch", fatal=True, detail=_free_detail,
    wrapped=True,
    sources=(("0.34.0", "vllm/v1/worker/utils.py:790"), ("0.34.0", "vllm/v1/worker/utils.py:764"),
             ("0.33.0", "vllm/v1/worker/utils.py:763"), ("0.33.0", "vllm/v1/worker/utils.py:742"),
             ("0.30.0", "vllm/v1/worker/utils.py:545")))

# NCCL's communicator init between the ranks (pynccl.py:180 (0.30.0-0.34.0), :99 (0.6.4.post1)):
# below the call only NCCL_CHECK raises ("NCCL error: ...", pynccl_wrapper.py:464 (0.34.0), :223
# (0.6.4.post1)), so a traceback cut there is NCCL's failure; its whole text is vllm_nccl's
NCCL_INIT_CUT = Signature(
    "vllm_nccl_init_cut", "nccl", "NCCL's communicator init failed (the traceback is cut below it)",
    ("The traceback ends inside NCCL's communicator init (`ncclCommInitRank`), the first "
     "connection between the ranks; the \"NCCL error: ...\" line below it is cut off. Rerun with "
     "NCCL_DEBUG=INFO to see why the ranks could not connect; check the GPUs are visible "
     "(CUDA_VISIBLE_DEVICES), /dev/shm is large enough in a container (docker run with ipc=host) and "
     "P2P works (NCCL_P2P_DISABLE=1 to test).",),
    patterns=(r"NCCL error",), context=(r"self\.nccl\.ncclCommInitRank\(|, in ncclCommInitRank\s*$",),
    cut_ok=True, priority=29, phase="launch",
    sources=((_V0, "vllm/distributed/device_communicators/pynccl.py:99"),
             ("0.30.0", "vllm/distributed/device_communicators/pynccl.py:180"),
             ("0.33.0", "vllm/distributed/device_communicators/pynccl.py:180"),
             ("0.34.0", "vllm/distributed/device_communicators/pynccl.py:180"),
             ("0.34.0", "vllm/distributed/device_communicators/pynccl_wrapper.py:464"),
             (_V0, "vllm/distributed/device_communicators/pynccl_wrapper.py:223")))


# --- the custom all-reduce, pipeline parallelism, GGUF files, a workers' RPC timeout ----

# csrc/custom_all_reduce.cuh's CUDACHECK prints "Failed: Cuda error %s:%d '%s'" with its own
# __FILE__ and exits the process (the format and the path are in vllm/_C_stable_libtorch.abi3.so
# (0.34.0)): a CUDA call of vLLM's custom all-reduce (the tensor-parallel communicator beside
# NCCL) failed; the path may be cut, so the file's name is matched as far as it is shown
_CUSTOM_AR = r"^Failed: Cuda error \S*/custom_all_red"
CUSTOM_ALL_REDUCE = Signature(
    "vllm_custom_all_reduce", "nccl", "vLLM's custom all-reduce failed a CUDA call",
    ("vLLM's own all-reduce between the tensor-parallel GPUs (used instead of NCCL for small "
     "tensors over NVLink or PCIe P2P) failed a CUDA call and ended the process: retry with "
     "`--disable-custom-all-reduce` (NCCL does every all-reduce); if that runs, P2P between these "
     "GPUs is the suspect (NCCL_P2P_DISABLE=1, the driver, IOMMU).",),
    patterns=(_CUSTOM_AR,), lines=(_CUSTOM_AR,), priority=60, fatal=True, running=True,
    sources=(("vllm csrc", "csrc/custom_all_reduce.cuh (CUDACHECK; its format and __FILE__ are in "
                           "vllm/_C_stable_libtorch.abi3.so of the 0.34.0 wheel)"),))

# the model's class lacks SupportsPP (0.6.2 and older: its architecture is not in _PP_SUPPORTED_MODELS, the list
# the message prints) and --pipeline-parallel-size > 1 was given: refused when the config is verified
_PP = r"Pipeline parallelism is (?:not supported for this model|only supported for the following +architectures)"
PP_UNSUPPORTED = Signature(
    "vllm_pp_unsupported", "bad_argument", "the model does not support pipeline parallelism",
    ("This model's implementation in vLLM has no pipeline parallelism: drop "
     "`--pipeline-parallel-size` (use `--tensor-parallel-size` across the GPUs instead).",),
    patterns=(_PP,), lines=(_PP,), priority=88, phase="launch",
    sources=(("vllm 0.6.2", "vllm/config.py:423"), (_V0, "vllm/config.py:540"), ("0.30.0", "vllm/config/model.py:1441"),
             ("0.33.0", "vllm/config/model.py:1574"), ("0.34.0", "vllm/config/model.py:1594")))

# the GGUF loader takes a local file only; a Hugging Face id (or a missing path) is refused
# when the weights are prepared
GGUF_NOT_A_FILE = Signature(
    "vllm_gguf_not_a_file", "model_not_found", "the GGUF loader was given no local file",
    ("vLLM's GGUF loader reads one local .gguf file: pass its path (download it first), not a "
     "Hugging Face repository id; a draft model given with a GGUF target is loaded the same way.",),
    patterns=(r"(?:^|ValueError: )\S+ is not a file\.",), types=r"(?:\w+\.)*ValueError",
    lines=(r"^ValueError: \S+ is not a file\.\s*$",),
    priority=80, phase="load_weights",
    sources=((_V0, "vllm/model_executor/model_loader/loader.py:1113"),))

SIGNATURES: list[Signature] = [
    KV_NO_MEMORY, KV_MAX_LEN, KV_CHECK_CUT, GPU_BLOCKS_ZERO, INIT_CACHE_FAILED, WORKER_METHOD_FAILED,
    HYBRID_KV_UNIFY, *graphs.SIGNATURES, *linear_backends.SIGNATURES,
    ARGPARSE, CONFIG_INVALID, MAX_LEN_OVER_MODEL, messages.FLAG_BOUND, BF16_GPU, engine.ENGINE_DEAD,
    engine.ENGINE_PROCESS_RAISED, engine.OUTPUT_HANDLER_FAILED, engine.V0_LOOP_RAISED, engine.SHM_STALL, API_MISMATCH,
    PATCHED_ENTRY, engine.CGRAPH_TIMEOUT,
    requests.REQUEST_TOO_LONG, *speculative.SIGNATURES, *library.SIGNATURES,
    STARTUP_FREE_MEMORY, NCCL_INIT_CUT, CUSTOM_ALL_REDUCE, PP_UNSUPPORTED, GGUF_NOT_A_FILE,
    speculative.DRAFT_VOCAB_V0, engine.RPC_TIMEOUT, engine.QUEUE_TIMEOUT, engine.ITERATION_TIMEOUT,
    engine.LOOP_TIMEOUT, engine.LOOP_WAIT_CANCELLED, engine.LOOP_TIMEOUT_RAISED,
    engine.KV_SEND_REQUEST_GONE, requests.STREAM_ERROR, *loading.SIGNATURES,
    requests.PREPROCESS_ERROR, requests.MODEL_CHECK_ERROR, requests.GRAMMAR_REJECTED, requests.UTILITY_FAILED,
    requests.HANDLER_LOGGED, requests.OMNI_STAGE_ERROR, requests.TOOL_PARSER_ERROR, requests.ADD_LORA_FAILED,
    requests.OMNI_STAGE_RESULT_RAISED, *backends.SIGNATURES, *neuron.SIGNATURES, *parallel_sizes.SIGNATURES,
    *adapters.SIGNATURES, *ascend.SIGNATURES, *messages.SIGNATURES, *entrypoints.SIGNATURES, *installs.SIGNATURES,
    *disks.SIGNATURES,
]
