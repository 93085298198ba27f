"""Reading a vLLM server log: which family wrote it, vLLM's line prefixes, startup phases.

Contract: :func:`detect_family` says whether a log is vLLM's or SGLang's from its text (``sglang`` unless vLLM's marks
outnumber SGLang's: every log ddlab read before vLLM keeps its reading). :func:`vllm_lines` splits a vLLM log into
:class:`~ddlab.diagnosis.logtext.Line` records with vLLM's own prefixes peeled after the collectors': the process tag
``(EngineCore_DP0 pid=N)``, ``(APIServer pid=N)``, ``(VllmWorker rank=N pid=N)``, ``(VllmWorkerProcess pid=N)``,
``(Worker_TP1 pid=N)`` and the logger's stamp ``INFO 12-03 10:00:00 [file.py:N]`` (0.8 on; before: ``INFO 12-03 10:00:00
file.py:N]``), written by ``_FORMAT`` (vllm/logger.py:28 (0.34.0)) on every line of a record, tracebacks included
(``NewLineFormatter``, vllm/logging_utils/formatter.py:74 (0.34.0)).

:func:`vllm_phase_reached` is the last startup phase a vLLM log reached, from the lines vLLM writes at each
step (the releases' ``path:line`` at each marker below). The facts a log states are read by :mod:`.vllm_facts`,
its metrics lines by :mod:`.vllm_metrics`.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ddlab.crashes.signature import Screen
from ddlab.diagnosis.logtext import PHASES, Line, split_lines
from ddlab.diagnosis.vllm_capture_lines import CAPTURE_STEP
from ddlab.diagnosis.vllm_kv_lines import KV_SERVING
from ddlab.diagnosis.vllm_model_lines import MODEL_BUILD
from ddlab.vllm_crashes.entrypoints import FRONT_DOOR, IMPORT_NOTICE, TEXT_MARKS

__all__ = ["FAMILIES", "detect_family", "told_family", "family_marks", "vllm_lines", "VLLM_PREFIXES", "vllm_phase_reached",
           "vllm_phase_marker", "VLLM_READY_RE", "VLLM_PROGRESS_RE", "VLLM_STAMP",
           "VLLM_TIME", "VLLM_FILEINFO", "VLLM_STATS", "ENGINE_START_RE"]

FAMILIES = ("sglang", "vllm")

# the process tag vLLM puts before each line of a child process (vllm/utils/system_utils.py decorate_logs, and the
# logger's %(vllm_process_name)s): one word, then optional words (rank=N, TP0), then pid=N; Ray adds ", ip=host".
# (round 24) Ray names a Serve replica's actor "ServeReplica:<app>:<deployment>" (ray-project/ray 5a7cb61
# python/ray/serve/_private/common.py, DeploymentID.to_replica_actor_class_name), the word its log prefix carries
_PROC = r"\([A-Za-z][\w-]*(?::[\w.-]+)*(?: [\w=-]+)*? ?pid=\d+(?:, ip=[\w.-]+)?\)\s"
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)"
# vLLM's logger stamp, level to "[file.py:N]" (what follows it: a space, or the line's end): its time (round 58:
# its seconds optional, a datefmt a user's VLLM_LOGGING_CONFIG_PATH may set, logger.py:27, :127-133 (0.11.0)) and
# its file info ("file:N]" before 0.8, then "[file:N]") are spelled once here for every reader of the stamp
VLLM_TIME = r"\d\d-\d\d \d\d:\d\d(?::\d\d(?:\.\d+)?)?"
VLLM_FILEINFO = r"(?:\[[\w./<>-]+:\d+\]|[\w./<>-]+:\d+\])"
VLLM_STAMP = rf"{_LEVEL} {VLLM_TIME} {VLLM_FILEINFO}"
_STAMP = rf"{VLLM_STAMP}(?: |$)"
# (round 19) the logger's stamp at a level no traceback is logged at (logger.exception logs at ERROR): a
# record of its own, never the rest of an exception's message above it (vllm/logger.py:28 _FORMAT (0.34.0))
_QUIET_STAMP_RE = re.compile(r"(?:DEBUG|INFO|WARNING|WARN) \d\d-\d\d \d\d:\d\d:\d\d")
VLLM_PREFIXES = tuple(re.compile(p) for p in (
    rf"^{_PROC}",
    rf"^{_STAMP}",
    # (round 29) the stamp's "[file.py:N]" alone, its level and time left out by the writer (the logger's
    # _FORMAT "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s", vllm/logger.py:28 (0.34.0));
    # (round 64) or its level kept, only the time left out ("ERROR [core.py:1349] ")
    rf"^(?:{_LEVEL} )?\[[\w./<>-]+\.py:\d+\] ",
    # a process supervisor's own prefix before vLLM's (Lemonade: "<time> [Error] (Process) "), or a
    # launcher's time and level before vLLM's process tag, which is peeled next ("... [ERROR]   (APIServer")
    rf"^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? \[\w+\](?: \(\w+\) |\s+(?={_PROC}))",
    # (round 15) a viewer's date and time ("2025-07-10 08:59:40 ") right before vLLM's own stamp or process tag: vLLM's
    # stamp has no year (_DATE_FORMAT "%m-%d %H:%M:%S", vllm/logger.py:33 (0.34.0), :24 (0.7.3)): the collector's date
    rf"^\d{{4}}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+(?={_PROC}|{_STAMP})",
    # the rest of a collector's ISO time whose zone is set off by a space ("... +08:00 CST ")
    r"^[+-]\d\d:?\d\d(?: [A-Z]{2,5})? ",
    # DJL Serving (LMI, which runs vLLM) relaying its worker's output: "INFO  PyProcess W-162-model-stdout: " (round 5: the level may be cut)
    r"^[A-Z]*\s+PyProcess W-[\w.-]+-std(?:out|err):\s",
))

# vLLM's Prometheus counters of served work (v1/metrics/loggers.py, v1/spec_decode/metrics.py:231 (0.34.0))
VLLM_COUNTER = (r"^\s*vllm:(?:spec_decode_num_(?:accepted_tokens|draft_tokens|drafts)\w*|generation_tokens"
                r"|prompt_tokens|request_success)_total")
# (round 14) a line grep printed with its file's name in front (logtext's paste prefixes peel it)
_GREP_FILE = r"(?:[\w.-]+\.(?:log|out|err|txt)(?::\d+)?:)?"
_VLLM_MARKS = re.compile(
    # (a worker's tag: "Worker" and its parallel ranks, v1/executor/multiproc_executor.py:1248-1261 (0.34.0); round
    # 56: any "Vllm..." class, as "VllmWorkerProcess", executor/multiproc_worker_utils.py:161 (0.7.3), or NeMo-RL's)
    rf"^\s*{_GREP_FILE}(?:{_PROC})?{_STAMP}|\((?:EngineCore\w*|APIServer|Vllm\w*"
    r"|Worker(?:_(?:DP|PP|PCP|TP|DCP|EP)\d+)+|LLMRayActor)\b"
    r"|\bvllm[/\\](?:v1|engine|worker|entrypoints|executor|spec_decode|model_executor|config"
    r"|compilation|distributed|transformers_utils|utils|platforms)[/\\]"
    # (round 58) vllm-omni, whose stages run vLLM's engine: its modules' logger names ("ERROR:vllm_omni.x:") and paths
    r"|[/\\]\.cache[/\\]vllm[/\\]|\bvllm (?:serve|\[-h\])|vLLM|\bvllm\.|\bvllm_omni[./\\]"
    # names and texts only vLLM writes: its config keys and engine parts, its model registry's error, V0's
    # speculative-decoding metrics line (vllm/engine/metrics.py:484 (0.6.4.post1))
    # (each word an alternative of its own: a :class:`Screen` asks each only where its text is)
    r"|\bgpu_memory_utilization\b|\bmax_model_len\b|\bmax_num_scheduled_tokens\b|\bnum_speculative_tokens\b"
    r"|\bspeculative_config\b|\bEngineCore\w*\b|\bAsyncLLM\w*\b|\bLLMEngine\b|\bSpecDecodeWorker\b|\bVllmWorker\w*\b"
    r"|# GPU blocks: \d|Cannot find model module\.|Speculative metrics: Draft acceptance rate:"
    # texts no SGLang release writes (both wheels, 0.4.10.post2 and 0.5.23, searched): vLLM's top config class and its
    # V2 model runner (vllm/config/vllm.py:3087 (0.30.0)), the dtype check (vllm/platforms/cuda.py:692 (0.34.0)), the
    # startup memory check (vllm/v1/worker/utils.py:790 (0.34.0)), the offline LLM's bar
    # (vllm/entrypoints/common/offline.py:601 (0.34.0), entrypoints/llm.py:931 (0.6.4.post1)), its environment
    # variables (vllm/envs.py) and the installed package's frames; the pipeline-parallel refusal's second sentence
    # (vllm/config/model.py:1595 (0.34.0), config.py:541 (0.6.4.post1))
    r"|Supported models implement the `SupportsPP` interface"
    r"|\bVllmConfig\b|\bModel Runner V2\b|Bfloat16 is only supported on GPUs with compute capability"
    r"|Free memory on device\b[^(]{0,30}\([\d.]+/[\d.]+ GiB\) on startup"
    r"|Processed prompts:|\bVLLM_[A-Z][A-Z0-9_]*=|[/\\](?:site|dist)-packages[/\\]vllm(?:_ascend)?[/\\]"
    # (round 4: vllm_ascend's frames; pydantic's ArgsKwargs input of vLLM's config dataclasses; the
    # weight loader's refusal, models/utils.py:454 (0.34.0): no SGLang wheel writes them)
    r"|\binput_value=ArgsKwargs\(|There is no module or parameter named '"
    # (round 5: V0's spec-decode worker's vocabulary assert, spec_decode/spec_decode_worker.py:1067
    # (0.6.4.post1), printed as its traceback's code line; no SGLang wheel has it)
    r"|assert all\(vocab_sizes\[0\] == vocab_size for"
    # (round 6, each in no SGLang wheel: the default loader's unfilled parameters, model_loader/default_loader.py:611
    # (0.34.0); the V1 model runner's method without a drafter, v1/worker/gpu_model_runner.py:698 (0.30.0); V1's
    # refusal of speculation, platforms/rocm.py:184 (0.7.3); the attention heads against the TP size,
    # config/model.py:1581 (0.34.0); V1's speculative metrics line, v1/spec_decode/metrics.py:121 (0.34.0))
    r"|Following weights were not initialized from checkpoint|Unknown speculative decoding method:"
    r"|Speculative decoding is not yet supported on VLLM V1"
    r"|Total number of attention heads \(\d+\) must be divisible by tensor parallel size|SpecDecoding metrics:"
    # (round 7, in no SGLang wheel: NIXL's handshake check, kv_connector/v1/nixl/base_worker.py:2970 (0.34.0))
    r"|Number of KV layers must match between (?:prefill and decode|producer and consumer)"
    # (its Prometheus series: "vllm:" and a metric name, v1/metrics/loggers.py (0.34.0))
    r"|^\s*vllm:[a-z_]+(?:\{|\s)"
    # (round 8, in no SGLang wheel: the KV cache's check for one request at the max seq len,
    # v1/core/kv_cache_planning.py:125 (0.34.0), V0's worker/worker.py:500 (0.6.4.post1); the
    # speculative config class, config/speculative.py (0.34.0), config.py (0.6.4.post1))
    r"|To serve at least one request with the model's max seq len"
    r"|is larger than the maximum number of tokens that can be stored in KV cache|\bSpeculativeConfig\b"
    # (round 13, in no SGLang wheel: V0's multiprocessing engine, engine/multiprocessing/ (0.6.4.post1);
    # get_config's refusal and its hint, transformers_utils/config.py:790-797 (0.30.0), :957 (0.34.0))
    r"|\bMQLLMEngine\w*|Invalid repository ID or local directory specified:"
    r"|For Mistral models: ensure the presence of a 'params\.json'"
    # (round 18, in no SGLang wheel (0.2.12, 0.3.0, 0.4.10.post2, 0.5.23 searched; SGLang's own refusal is
    # "Unsupported tool_call_parser: "): the OpenAI server's check of --tool-call-parser,
    # entrypoints/openai/api_server.py:594 (0.6.4.post1), entrypoints/common/cli_args.py:630 (0.34.0))
    r"|invalid tool call parser: \S+ \(chose from \{"
    # (round 24) the shared-memory queue's stall notice (device_communicators/shm_broadcast.py:115 (0.34.0), :54
    # (0.11.1)); SGLang's copy words it "No available block found in %s second." (:361 (0.4.10.post2), :372 (0.5.23))
    r"|No available shared memory broadcast block found in \d+ seconds?"
    # (round 60) V1's capture bar (v1/worker/gpu_model_runner.py:3496 (0.11.0); in no SGLang wheel), /health answered
    # 500 (V0 raises a dead engine's error there, vllm_crashes/engine.py; SGLang's 503, http_server.py:733 (0.5.23))
    r'|Capturing CUDA graphs \((?:decode|mixed prefill-decode), [A-Z_]+\)|"GET /health HTTP/[\d.]+" 500\b'
    rf"|{FRONT_DOOR}|{TEXT_MARKS}",  # (round 64) the front door's NameError; (round 65) more of vLLM's texts
    re.M)
# (round 21) SGLang 0.1.x's model runner, whose weight loading is vLLM's (its weight_utils lines carry
# vLLM's stamp): "Rank N: load weight end." (0.1.14 srt/managers/router/model_runner.py:334) and
# "Rank N: max_total_num_token=..., " (model_rpc.py:108-113); in no vLLM wheel
# (round 56) SGLang's stamp (0.5.23 srt/utils/common.py:2630), not DeepSpeed's "[date] [LEVEL] [file:line:func] ",
# (round 59) nor LMCache's "[date] LMCache LEVEL: ", its logger's under either server (lmcache-0.3.1 logging.py:25)
# (round 91) SGLang 0.2.x's model runner's rank prefix "[gpu=N] " (0.2.12 srt/model_executor/model_runner.py:97, :143,
# :195, :284); in no vLLM wheel: its start-up under vLLM's custom all-reduce warnings (one per rank) is SGLang's
# (round 104) SGLang's capture bar, "Capturing batches (avail_mem=N GB)" (0.4.7.post1
# model_executor/cuda_graph_runner.py:403; "(bs=N avail_mem=...)" 0.4.10.post2 :480, 0.5.10 :784); in no vLLM
# wheel (vLLM's is "Capturing CUDA graph shapes" / "Capturing CUDA graphs (...)"): under vLLM's import notices, SGLang's
_SGLANG_MARKS = re.compile(
    r"sglang|server_args=|launch_server|fired up and ready to roll|(?:Prefill|Decode) batch\b|^\s*\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z][A-Z_]*\d+)*\]"
    r"(?! \[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] \[[\w.]+:\d+:\w+\] | LMCache (?:DEBUG|INFO|WARNING|ERROR|CRITICAL):"
    r"|\[[A-Za-z]\w*\]\[[DIWEC]\] )"
    r"|^\s*Rank \d+: (?:load weight end\.|max_total_num_token=\d+, )|^\s*\[gpu=\d+\] "
    r"|Capturing batches \((?:bs=\d+ )?avail_mem=", re.M | re.I)

_VLLM_SCREEN, _SGLANG_SCREEN = Screen(_VLLM_MARKS), Screen(_SGLANG_MARKS)


def family_marks(text: str) -> tuple[int, int]:
    """(lines with vLLM's marks, its import notice counted once; lines with SGLang's): see :func:`detect_family`."""
    lines = (text or "").splitlines()
    vllm = [ln for ln in lines if _VLLM_SCREEN.hit(ln)]
    notices = sum(1 for ln in vllm if IMPORT_NOTICE.search(ln))
    return len(vllm) - max(notices - 1, 0), sum(1 for ln in lines if _SGLANG_SCREEN.hit(ln))


def detect_family(text: str) -> str:
    """``vllm`` when vLLM's marks (its stamp, process tags, ``vllm/`` paths, its name, its config keys) are on more
    than three times as many lines as SGLang's (its name, ``server_args=``, ``launch_server``, its batch lines, its
    stamp); else ``sglang`` (also when neither shows: :func:`told_family` tells that case). SGLang imports vLLM in
    many releases, so an SGLang log may carry a few of vLLM's lines (its import notice: counted once)."""
    return told_family(text)[0]


def told_family(text: str) -> tuple[str, bool]:
    """(:func:`detect_family`'s answer, whether any line named either server), from one scan."""
    vllm, sglang = family_marks(text)
    return ("vllm" if vllm > 3 * sglang else "sglang"), bool(vllm or sglang)


# Ray's log deduplication appends " [repeated Nx across cluster]" to a line its workers printed
# alike (ray/_private/ray_logging.py); vLLM's Ray workers' tracebacks come so
_RAY_REPEATED_RE = re.compile(r"[ \t]*\[repeated \d+x across cluster\][ \t]*(?=\r?$)", re.M)


# a record flattened onto one line keeps the tag vLLM writes before each line (decorate_logs): a line
# starts where the leading tag recurs; a viewer's widened spaces in a metrics line are made single
_LEAD_TAG_RE = re.compile(rf"^\s*(?P<tag>{_PROC[:-2]})\s")
# a frame line a terminal wrapped inside its path: the next line (no quote before it) ends the path
_WRAPPED_FRAME_RE = re.compile(r'(File "[^"\n]*?)[ \t]*\r?\n(?=[^"\n]*", line \d+)')
_WIDE_METRICS_RE = re.compile(r"\bAvg\s+(?:prompt|generation)\s+throughput:")


# (round 82) a project's logger that takes over vLLM's records and writes each as "[ISO date time.us][TAG][L] message
# [pid,tid][file.py:N,function]" (vllm-ascend deployments' "[UC]" logger): vLLM's stamp is rebuilt from it, its level
# letter spelled out, so the message reads as vLLM's own record ("Worker proc VllmWorker-14 died unexpectedly (exit
# code: None), shutting down executor.", v1/executor/multiproc_executor.py monitor_workers); only a line that has both
# the bracketed head and the "[pid,tid][file.py:N,function]" tail is rebuilt
_WRAPPED_RECORD_RE = re.compile(
    r"^\[\d{4}-(?P<day>\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)?\]\[[A-Za-z]\w*\]\[(?P<level>[DIWEC])\] "
    r"(?P<msg>.*?) \[\d+,\d+\]\[(?P<file>[\w.-]+\.py):(?P<line>\d+),\w+\][ \t]*$", re.M)
_LEVELS = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "CRITICAL"}


def restamped(text: str) -> str:
    """``text`` with each record a wrapping logger wrote (above) in vLLM's own stamp."""
    return _WRAPPED_RECORD_RE.sub(lambda m: f"{_LEVELS[m['level']]} {m['day']} {m['time']} [{m['file']}:{m['line']}] "
                                            f"{m['msg']}", text)


def vllm_lines(text: str) -> list[Line]:
    """The lines, the collectors' and vLLM's prefixes (and Ray's repeat suffix) peeled (above), a wrapping
    logger's records restamped (:func:`restamped`)."""
    text = "\n".join(re.sub(rf"(?<=\S)\s+(?={re.escape(lead['tag'])}\s)", "\n", raw)
                     if (lead := _LEAD_TAG_RE.match(raw)) else raw
                     for raw in _WRAPPED_FRAME_RE.sub(r"\1", _RAY_REPEATED_RE.sub("", restamped(text))).splitlines())
    return [replace(ln, msg=re.sub(r"(?<=\S) {2,}(?=\S)", " ", ln.msg)) if _WIDE_METRICS_RE.search(ln.msg)
            else ln for ln in split_lines(text, extra=VLLM_PREFIXES, record=_QUIET_STAMP_RE)]


# --- startup phases ---------------------------------------------------------------
# Each marker is a line vLLM writes when a step starts or ends (V1: 0.30.0 / 0.33.0 / 0.34.0; V0: 0.6.4.post1), strongest last.
_PHASE_MARKERS = (
    # "Starting to load model" (v1/worker/gpu_model_runner.py), the loaders' shard bars, "Loading weights took"
    # (model_loader/default_loader.py:544 (0.34.0)): the draft loads after (round 15) vllm-neuron's load_model
    # compiles and loads the model through NxD Inference (vllm-neuron
    # vllm_neuron/worker/neuronx_distributed_model_loader.py:240-241, a5ef7c8): its load shards the weights
    # ("Sharding weights on load...", neuronx-distributed-inference
    # src/neuronx_distributed_inference/models/application_base.py:405, 4bcdc54; "Done Sharding weights in",
    # neuronx-distributed src/neuronx_distributed/trace/model_builder.py:857, fbac349) or reads them presharded
    # (application_base.py:391), then puts them on the device
    ("load_weights", re.compile(
        r"Starting to load model|Loading (?:safetensors|pt|bin) checkpoint shards|Loading weights took"
        r"|Loading drafter model|Sharding weights on load|Done Sharding weights in"
        r"|Loading presharded checkpoints for ranks" rf"|{MODEL_BUILD}"  # (round 69) a MoE layer built (.vllm_model_lines)
        # (round 55) the V2 model runner's only start-of-loading line, just before its loader's load_model
        # (v1/worker/gpu/model_runner.py:358 (0.28.0), :412 (0.34.0); V1 gpu_model_runner.py:2634 (0.11.0))
        r"|Loading model from scratch\.\.\."
        # (round 92) tpu_inference's get_model, on vLLM's TPU platform, before it builds the JAX model and loads
        # its weights (get_flax_model / get_vllm_model: tpu-inference 0.13.2 models/common/model_loader.py:364,
        # :386, :348)
        r"|Loading model with MODEL_IMPL_TYPE=")),
    # the weights are in ("Model loading took": v1/worker/gpu/model_runner.py:442 (0.34.0); V0 "Loading model weights
    # took": worker/model_runner.py:1077 (0.6.4.post1)); then the profiling run (torch.compile in it), the KV cache's
    # size (v1/worker/gpu_worker.py:796, v1/core/kv_cache_utils.py:1169 (0.34.0); V0 "# GPU blocks":
    # executor/gpu_executor.py:113 (0.6.4.post1)); (round 49) a KV connector registering the KV caches just allocated,
    # which vLLM hands it only from initialize_kv_cache (v1/worker/gpu_model_runner.py:7340 (0.23.0)): "Registering kv
    # caches!" (kv_connector/v1/lmcache_mp_connector.py:555, LMCache's own copy logs it too), "Registering kv caches" /
    # "Registering KV caches" (lmcache_integration/multi_process_adapter.py:423, vllm_v1_adapter.py:787), "Registering
    # KV_Caches." (nixl/worker.py:823, mooncake/mooncake_connector.py:1391; all 0.23.0): the caches exist, the graphs
    # are not captured yet; (rounds 57, 79) the graphs' memory profiled in determine_available_memory, its estimate and
    # its off notice (gpu_model_runner.py:6681, :6807, gpu_worker.py:517, :596 (0.27.1)); (round 77) the profiling run's
    # end ("Initial profiling/warmup run took", compilation/monitor.py:82, decorators.py:572 (0.30.0)); (round 109) a
    # multimodal model's encoder cache budget, logged only as profile_run profiles the encoder (v1/worker/
    # gpu_model_runner.py:1827, :1864 (0.9.0), :6168, :6201 (0.23.0); gpu/model_runner.py:1070, :1082 ->
    # gpu/mm/encoder_runner.py:132 (0.34.0); vllm_ascend 0.9.0rc1 worker/model_runner_v1.py:1361 in _profile_multimodal)
    ("memory_pool", re.compile(
        r"Model loading took|Loading model weights took|Memory profiling takes|Available KV cache memory|# GPU blocks: \d"
        r"|KV cache size: [\d,]+ tokens|Maximum concurrency for|Dynamo bytecode transform|Compiling a graph for|Registering"
        r" (?:kv|KV)[ _][Cc]aches\b|(?:Profiling|Estimated) CUDA graph memory: |CUDA graph memory profiling is disabled"
        r"|Initial profiling/warmup run took|Encoder cache will be initialized with a budget of")),
    # "Capturing CUDA graphs" (v1/worker/gpu/cudagraph_utils.py:459 (0.34.0); "Capturing cudagraphs for decoding",
    # worker/model_runner.py:1400 (0.6.4.post1); (round 69) vllm-ascend's "Capturing ACL graphs (mixed prefill-decode,
    # PIECEWISE)", vllm_ascend/worker/model_runner_v1.py:2525 (v0.10.1rc1), :3509 (v0.11.0rc0)), "Graph capturing
    # finished" (v1/worker/gpu/model_runner.py:1217 (0.34.0); worker/model_runner.py:1518 (0.6.4.post1))
    ("graph_capture", re.compile(
        # (round 7: the drafters' bars name what they capture, "Capturing prefill CUDA graphs",
        # "Capturing multi-module MTP CUDA graphs": v1/worker/gpu/spec_decode/autoregressive/speculator.py:139, multi_module_mtp/speculator.py:138 (0.34.0))
        r"Capturing (?:[\w-]+ ){0,3}(?:CUDA|ACL) graphs?|Capturing the model for CUDA graphs|Capturing cudagraph"
        r"|Graph capturing finished" rf"|{CAPTURE_STEP}"  # (rounds 68, 75) .vllm_capture_lines
        # (vLLM round 80) kernel_warmup's FlashInfer autotune, which compile_or_warm_up_model runs after the KV cache
        # is allocated and right before capture_model (model_executor/warmup/kernel_warmup.py:72, :146;
        # v1/worker/gpu_worker.py:558, :606, :610 (0.22.0))
        r"|Using FlashInfer autotune cache file: |Skipping FlashInfer autotune because it is disabled"
        # (vLLM round 99) torch.compile's graph for one batch size, compiled or loaded from its cache: the profiling
        # run compiles the general shape only ("shape None"), a size's graph is built in compile_or_warm_up_model,
        # its compile_sizes' warm-up or capture_model (compilation/backends.py:123-126, :154-158, :196;
        # cuda_piecewise_backend.py:93-97; v1/worker/gpu_worker.py:252-267 (0.9.2))
        r"|Directly load the (?:\d+-th graph|compiled graph\(s\)) for shape \d+ from"
        r"|Compiling a graph for shape \d+ takes")),
    # the engine is built and takes requests: "init engine (profile, create kv cache, warmup model) took"
    # (v1/engine/core.py:459 (0.34.0)); then the API server: "Starting vLLM server on"
    # (entrypoints/launchers/api_server/entry.py:139 (0.34.0)), "Starting vLLM API server" (older), the tasks the engine
    # serves ("Supported tasks: [...]", launchers/api_server/entry.py:135 (0.34.0), :135 (0.30.0)), the routes
    # (launchers/launcher.py:188, :197 (0.34.0)), uvicorn's start and "Application startup complete." (round 32) vLLM's
    # start line always names the address ("Starting vLLM API server %d on %s", entrypoints/openai/api_server.py:1349
    # (0.9.1), :947 (0.15.1); "Starting vLLM server on %s", :602 (0.20.0), :682 (0.27.1);
    # launchers/api_server/entry.py:139 (0.30.0, 0.34.0)): a deploy script's own "Starting vLLM server..." is no server's
    ("ready", re.compile(
        r"init engine \(profile, create kv cache, warmup model\) took"
        r"|Starting vLLM (?:API )?server(?: \d+)? on\b|Available routes are|Route: /|Uvicorn running on"
        r"|Application startup complete|Started server process|^Supported tasks: \[")),
    # serving: the periodic metrics line (v1/metrics/loggers.py:283 (0.34.0); V0
    # engine/metrics.py:450 (0.6.4.post1)), the speculative metrics (v1/spec_decode/metrics.py:121
    # (0.34.0); V0 engine/metrics.py:484), a request answered, an offline generate's bar
    ("serving", re.compile(
        r"Avg prompt throughput: [\d.]+ tokens/s|SpecDecoding metrics:|Speculative metrics:"
        r"|\"(?:POST|GET) /(?:v1/|generate|invocations)\S* HTTP/[\d.]+\" 200|Processed prompts:|Added request"
    # (round 96) V0's async engine closing one request's stream, its output finished or an error handed to it:
    # "Finished request ID." (engine/async_llm_engine.py:120, :131 (0.4.0.post1); :141, :152 (0.5.4); :179, :188
    # (0.8.5.post1)), written only for a request added to a running engine (unanchored: a Ray actor's prefix whose
    # colour codes lost their escape byte, "[[36m(VLLMActor pid=N) [[0m INFO ...", is left on the message)
    r"|\bFinished request [\w-]+\.$"
    # (round 55) sleep mode, which start-up never enters (v1/engine/core.py:1127, abstract.py:442 (0.34.0)):
    # v1/executor/abstract.py:306, :325, device_allocator/cumem.py:239, v1/worker/gpu_worker.py:142 (0.11.1)
    r"|It took [\d.]+ seconds to (?:fall asleep|wake up)\b|CuMemAllocator: sleep freed|Sleep mode freed"
    # (rounds 55-67) a KV connector's or KV cache's lines for a request admitted or a batch run (.vllm_kv_lines)
    rf"|{KV_SERVING}"
    # (round 61) vllm-omni's stage clients, only in add_request_async (vllm-omni 0.30.0 stage_engine_core_client.py:245)
    r"|\] stage-\d+ \[rep-\d+\] add request: "
    # (round 86) and its per-request record, pformat of {'type': 'request_level_metrics', ...}, logged only by
    # on_finalize_request once a request finished its last stage (vllm-omni be81443c entrypoints/log_utils.py:529)
    r"|^\{'type': 'request_level_metrics',"
    # (vLLM round 80) InputProcessor.process_inputs' notices, which only a request added meets (AsyncLLM.add_request,
    # LLMEngine.add_request: v1/engine/input_processor.py:225, :236; async_llm.py:356; llm_engine.py:248 (0.19.1))
    r"|Passing (?:raw prompts|tokenization_kwargs) to InputProcessor is deprecated"
    # (round 63) a GRPO trainer's calls to its rollout server (trl f2cd577 trl/scripts/vllm_serve.py:497, :1124, :1156)
    r'|"(?:GET|POST) /(?:get_world_size|\w+_communicator|update_named_param)/ HTTP/[\d.]+" 200\b'
    # (round 7) a counter of served work that /metrics exports above 0 (v1/spec_decode/metrics.py:231,
    # :255; v1/metrics/loggers.py (0.34.0)), as Prometheus writes it or a dashboard's table ("name{...} | N")
    rf"|{VLLM_COUNTER}\{{[^}}]*\}}\s*\|?\s*0*[1-9][\d.]*(?:e\+?\d+)?\s*$")),
)
# vLLM serves once uvicorn has started it ("Application startup complete." follows the routes)
VLLM_READY_RE = re.compile(r"Application startup complete|Uvicorn running on")
# lines that show the server (or the engine) carrying on past an error: a metrics line counts only when tokens
# moved (the API server keeps logging while a stuck engine sends nothing new); an answered POST generated, while a
# GET reads stored state without the engine (GET /v1/models, a job's status GET /v1/responses/{id}:
# openai/models/api_router.py:20, openai/responses/api_router.py:80 (0.34.0); round 6: a video job polled while hung)
VLLM_STATS = r"Avg (?:prompt|generation) throughput: "  # the stats logger's line (0.20.0 v1/metrics/loggers.py:224)
VLLM_PROGRESS_RE = re.compile(
    rf"Application startup complete|{VLLM_STATS}[\d.]*[1-9][\d.]* tokens/s"
    r"|\"POST /(?:v1/|generate)\S* HTTP/[\d.]+\" 200")


_PHASE_SCREENS = tuple((name, Screen(regex)) for name, regex in reversed(_PHASE_MARKERS))


def vllm_phase_marker(msg: str) -> str | None:
    """The phase a vLLM line announces, or None."""
    return next((name for name, screen in _PHASE_SCREENS if screen.hit(msg)), None)


# (round 33) vLLM's server logs its non-default args, builds the engine, and only then starts uvicorn
# (entrypoints/openai/api_server.py:539 setup_server, :692 build_async_engine_client, then serve_http (0.20.0);
# launchers/launcher.py:369, api_server/entry.py:190, :141 (0.34.0)); the offline LLM logs them as it is built
# (entrypoints/llm.py:379 (0.20.0), :350 (0.34.0)). So uvicorn's "Started server process" before such a line is
# another app's (one that builds vLLM's engine in its startup) or an earlier run's: not this engine's ready
_UVICORN_START_RE = re.compile(r"Started server process \[\d+\]")
# (round 100) the engine's own first line, "Initializing an LLM engine (v%s) with config" (0.5.0
# engine/llm_engine.py:162), "Initializing a V1 LLM engine (v%s) with config" (0.10.2 v1/engine/core.py:76): vLLM's
# server logs it before it starts uvicorn too, so a uvicorn start before it is an embedding app's (NVIDIA NIM starts
# its server, then builds the engine in its application startup) or an earlier run's
ENGINE_START_RE = re.compile(r"non-default args: \{|\bargs: Namespace\(|Initializing an? (?:V1 )?LLM engine \(v")
# (round 97) IPython 8's traceback prints each frame's source lines as "[1099](link) code" ("-> [1096](link)" the
# current one): a vLLM logger call quoted there ('logger.info("Loading model weights took %.4f GB",', V0
# worker/model_runner.py:1099 (0.6.6.post1)) is source shown, not a line the run logged
_IPYTHON_CODE_RE = re.compile(r"^\s*(?:-+>\s*)?\[\d+\]\([^()\s]*\)")
# (round 98) V1's engine core dumping the step that failed in execute_model, called only from step() on a scheduled
# batch (v1/engine/core.py:211-215 (0.9.1); logging_utils/dump_input.py:79-80 (0.9.1), :76 (0.9.2)): a request
# scheduled in it, new or running, was being served (its empty lists are not). The phase reached only: the dump is
# the failure's own record, no sign that the server went on past it (no phase marker for the root cause's choice)
_DUMPED_STEP_RE = re.compile(r"SchedulerOutput\(scheduled_new_reqs=\[NewRequestData\(req_id="
                             r"|scheduled_cached_reqs=\[?CachedRequestData\(req_ids?=\[?'")


def vllm_phase_reached(lines: list[Line]) -> tuple[str, Line | None]:
    """The last startup phase reached, and the line that first reached it (a drafter's
    "Loading weights took" after the target's KV cache does not go back)."""
    best, at = 0, None
    args_at = max((line.no for line in lines if ENGINE_START_RE.search(line.msg)), default=-1)
    for line in lines:
        name = None if _IPYTHON_CODE_RE.match(line.msg) else (
            vllm_phase_marker(line.msg) or ("serving" if _DUMPED_STEP_RE.search(line.msg) else None))
        if name == "ready" and line.no < args_at and _UVICORN_START_RE.search(line.msg):
            continue
        index = PHASES.index(name) if name else 0
        if index > best:
            best, at = index, line
    return PHASES[best], at
