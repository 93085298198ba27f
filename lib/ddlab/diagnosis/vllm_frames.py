"""Which vLLM phase a traceback's frames show: vLLM's own functions at each step of its start-up and while it
serves (:data:`FRAME_PHASES`), read by :mod:`.vllm_diagnosis` (startup frames win over serving frames).
(Moved here from vllm_diagnosis.py, unchanged, when round 54 added the busy loop's RPC rule.)"""

from __future__ import annotations

import re

from ddlab.crashes.frames import frame_regex
from ddlab.diagnosis.cut_names import ipython_type

__all__ = ["FRAME_PHASES", "STARTUP_FRAMES", "CONFIG_FRAMES", "ENGINE_BUILT_FRAMES", "frame_phases",
           "ipython_frames"]


# vLLM's own functions at each step (V1 0.30.0-0.34.0: v1/worker/gpu_worker.py,
# v1/worker/gpu_model_runner.py, v1/engine/core.py, v1/core/kv_cache_utils.py; V0 0.6.4.post1:
# worker/worker.py, worker/model_runner.py, engine/llm_engine.py, spec_decode/)
# (the loaded weights are processed in load_model: a quantized layer repacked for its kernel,
# model_loader/base_loader.py:122, kernels/linear/mixed_precision/marlin.py:95 (0.34.0); round 8: the
# layers create their weights while initialize_model builds the model, layers/linear.py:179, :382,
# model_loader/base_loader.py:54 (0.34.0))
# (round 72) the checkpoint readers the loaders iterate while load_weights runs (safetensors_weights_iterator,
# pt_weights_iterator, ...: model_loader/weight_utils.py:430, its safe_open :441 (0.8.5.post1), called from the default
# loader's _get_weights_iterator, model_loader/loader.py:379 (0.8.5.post1); default_loader.py:198 (0.9.1)); nothing
# else in vLLM calls them
_LOAD = (r"load_model|load_weights|_initialize_model|get_model|initialize_model|download_weights_from_hf\w*"
         r"|process_weights_after_loading|\w+_marlin_repack|create_weights|\w+_weights_iterator")
_POOL = (r"determine_available_memory|determine_num_available_blocks|profile_run|_initialize_kv_caches"
         r"|initialize_cache|initialize_from_config|get_kv_cache_configs?|_?check_enough_kv_cache_memory"
         r"|raise_if_cache_size_invalid|initialize_kv_cache\w*|_init_cache_engine"
         # (round 19) a KV transfer connector registering the KV caches just allocated (PD: NIXL registers
         # their memory): v1/worker/gpu_model_runner.py:7474 in initialize_kv_cache (0.30.0);
         # v1/worker/gpu/kv_connector.py:69, the connector's wrapper built with the caches (0.34.0)
         r"|register_kv_caches"
         # (round 55) the KV cache's tensors allocated: initialize_kv_cache -> initialize_kv_cache_tensors ->
         # _allocate_kv_cache_tensors (v1/worker/gpu_model_runner.py:4929, :4699 (0.11.1)); vllm-ascend's runner
         # keeps the name (vllm_ascend/worker/model_runner_v1.py:2499, the paste's frame)
         r"|_allocate_kv_cache\w*"
         # (round 74) the specs' uniformity test, called only while get_kv_cache_config sizes the cache (itself
         # or through unify_hybrid_kv_cache_specs): 0.10.2 v1/core/kv_cache_utils.py:747, called at :1051, :1089,
         # :1118 (get_kv_cache_config :1094, from the engine core's _initialize_kv_caches, v1/engine/core.py:193);
         # renamed is_kv_cache_spec_uniform (0.11.0 v1/core/kv_cache_utils.py:755, called at :1106, :1144, :1170, in
         # unify_hybrid_kv_cache_specs and get_kv_cache_groups, under get_kv_cache_configs :1258; core.py:199)
         r"|is_kv_cache_(?:type|spec)_uniform"
         # (round 87) the oldest V0 engine's own: LLMEngine._init_cache asks each worker's
         # profile_num_available_blocks for the blocks that fit, then builds the cache engines
         # (0.2.1.post1 engine/llm_engine.py:190, worker/worker.py:73)
         r"|_init_cache|profile_num_available_blocks")
# (torch's CUDAGraph.capture_begin / capture_end run only inside a capture: torch/cuda/graphs.py)
_CAPTURE = (r"capture_model|_capture_cudagraphs|compile_or_warm_up_model|_warm_up_model|capture"
            r"|capture_begin|capture_end"
            # (round 28) the HPU runner warms its graphs up bucket by bucket (worker/hpu_model_runner.py:1482
            # warmup_graphs, called from warmup_model :1645 (0.7.3)); vllm-gaudi's warmup_multimodal_graphs
            r"|warmup_\w*graphs"
            # (round 51) an attention backend's metadata built for a graph: the runner asks for it only when
            # _dummy_run builds its batch for_cudagraph_capture (0.11.1 v1/worker/gpu_model_runner.py:1557-1558,
            # :1571-1572, :3757), run from _capture_cudagraphs (:4294, :4304) and from FlashInfer's warmup
            # under compile_or_warm_up_model (model_executor/warmup/kernel_warmup.py:68, gpu_worker.py:425),
            # never from profile_run (:4131); the builders' default, v1/attention/backends/utils.py:323 (0.11.1)
            r"|build_for_cudagraph_capture|build_metadata_for_cudagraph_capture"
            # (round 85) kernel_warmup and its DeepGEMM warmup, which compile_or_warm_up_model alone runs, after the
            # compile sizes' dummy runs and right before capture_model (0.11.1 v1/worker/gpu_worker.py:425, :429;
            # model_executor/warmup/kernel_warmup.py:37; deep_gemm_warmup.py:312 deep_gemm_warmup, :296
            # deepgemm_grouped_fp8_gemm_nt_contiguous_warmup, :220 _deepgemm_grouped_fp8_gemm_nt_contiguous_warmup)
            r"|kernel_warmup|deep_gemm_warmup|_?deepgemm_\w+_warmup")
# (run_engine_core is no startup frame: it builds the engine and then runs its busy loop)
# (the communicators are built when the ranks' groups are: pynccl.py:180's ncclCommInitRank
# (0.30.0-0.34.0), :99 (0.6.4.post1))
# (round 61) the oldest V0 workers' own, underscored: _init_distributed_environment runs the first all_reduce that
# meets the peers (0.2.7 worker/worker.py:194, :220), called from the worker's init_model (:74)
_INIT = (r"init_device|init_worker_distributed_environment|_?init_distributed_environment"
         r"|initialize_model_parallel|_init_executor|_init_workers_ray|ncclCommInitRank")
_SERVING = (r"run_busy_loop|_process_engine_step|step_with_batch_queue|step|execute_model|sample_tokens"
            r"|output_handler|_run_speculative_decoding_step|_run_no_spec|propose|generate|_run_engine"
            r"|engine_step|run_engine_loop|_process_input_queue|execute_model_req"
            # V0's TP workers' step loop, run from the executor's execute_model
            # (worker/worker_base.py:78, executor/distributed_gpu_executor.py:77 (0.6.4.post1))
            r"|start_worker_execution_loop"
            # a request's LoRA adapter activated (V0 worker/model_runner.py set_active_loras ->
            # lora/models.py:376 activate_adapter (0.6.4.post1); 0.34.0 lora/model_manager.py:355)
            r"|activate_adapter|set_active_adapters|set_active_loras"
            # (round 39) a request handed to a built engine: LLMEngine.add_request (v1/engine/llm_engine.py:196
            # (0.10.2), :229 (0.34.0)), AsyncLLM's add_request / _add_request (v1/engine/async_llm.py:266, :308
            # (0.10.2); :411, :581 (0.34.0)), LLM's _add_request (entrypoints/llm.py:1510 (0.10.2)); the engine
            # core client is built, and its engines have said they are ready, before any request is added
            # (v1/engine/core_client.py:492-510 (0.10.2))
            r"|_?add_request"
            # (round 55) sleep mode's wake-up: only a built engine is put to sleep and woken, by its user
            # (LLM.wake_up, entrypoints/llm.py:1240; LLMEngine.wake_up, engine/llm_engine.py:1856 ->
            # executor/executor_base.py:216 collective_rpc("wake_up") -> worker/worker.py:140 -> the allocator,
            # device_allocator/cumem.py:207 (0.7.3)) or by the server's /wake_up route and a checkpoint's restore
            # (entrypoints/serve/dev/sleep/api_router.py:56, v1/engine/core.py:2510 (0.34.0)); start-up never wakes it
            r"|wake_up"
            # (round 57) an attention backend's prefill over context already in the KV cache: TurboQuant takes
            # _continuation_prefill only where a request's seq_len exceeds its q_len by a chunk of over 128
            # tokens (v1/attention/backends/turboquant_attn.py:589, :621-622, :650 (0.20.0); :798, :890
            # (0.34.0)); the runner's start-up batches have none (_dummy_run's seq_lens = max_query_len,
            # v1/worker/gpu_model_runner.py:5439; FlashInfer's mixed warm-up, 16 tokens,
            # model_executor/warmup/kernel_warmup.py:72-78 (0.20.0)): a request's chunked prefill or cache hit
            r"|_continuation_prefill"
            # (round 64) a KV connector's scheduler side, asked by Scheduler.schedule() on each engine step: the
            # blocks a request was just given (update_state_after_alloc) and the step's connector metadata
            # (build_connector_meta, the offloading connector's _build_store_jobs) (v1/core/sched/scheduler.py:439,
            # :1001, :1258; distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py:873, :1023, :1253 (0.27.1))
            r"|update_state_after_alloc|build_connector_meta|_build_store_jobs"
            # (round 96) a request's structured-output key, computed only for a request that asks for guided decoding
            # (EngineCore.add_request -> grammar_init -> _async_create_grammar -> structured_output_key: v1/engine/
            # core.py:158, v1/structured_output/__init__.py:108, v1/structured_output/request.py:49 (0.8.0)); the
            # source builds between 0.7.3 and 0.8.0 named it Request.guided_decoding_key (the paste's v1/request.py)
            r"|guided_decoding_key|structured_output_key")
# (round 65) verl's vLLM rollout server putting its engines' workers to sleep, or waking them, between rollouts
# (verl's workers/rollout/vllm_rollout/vllm_async_server.py, AsyncvLLMServer.sleep: ``await
# asyncio.gather(*[worker.sleep.remote() for worker in self.workers])``, the paste's frame :563): sleep mode, which
# only a built engine enters (the round-55 reasoning above for wake_up, v1/engine/core.py:1127 (0.34.0))
_VERL_SLEEP = r'vllm_rollout/vllm_async_server\.py", line \d+, in (?:sleep|wake_up)[ \t]*$'
# (round 67) vllm-ascend's sampler: its runner calls it only from execute_model (vllm_ascend 0.11.0rc0
# worker/model_runner_v1.py:2030, :2044); its profile_run samples nothing (:2534, "TODO: need to rum a dummy
# sampler"; 0.12.0rc1 :2312) and its warm-up runs only _dummy_run (worker/worker_v1.py:305, :359)
_ASCEND_SAMPLER = r'vllm_ascend/sample/sampler\.py", line \d+, in \w+[ \t]*$'
# (round 70) the penalties' token counts: only a batch whose requests ask for a penalty counts its tokens
# (get_token_bin_counts_and_mask, model_executor/layers/utils.py:8, its scatter_add_ :18 (0.7.2); :27, :37 (0.34.0);
# V0's _get_bin_counts_and_mask, model_executor/layers/sampler.py:339, :349 (0.6.4.post1)). Start-up never does:
# V1's profile_run samples nothing in 0.7.2 (v1/worker/gpu_model_runner.py:1012, "TODO(woosuk): Consider the memory
# usage of the sampler"; the sampler only in execute_model, :804), its dummy sampler run asks no penalty from 0.8.0
# (:1296, no_penalties=True); V0's profile run samples with top_p/top_k only (worker/model_runner.py:1243 (0.7.2)).
# The frame, or its code line where a paste cut the frame's "File" line above it
_PENALTY_COUNTS = (r', line \d+, in _?get_(?:token_)?bin_counts_and_mask[ \t]*$'
                   r'|^[ \t]+bin_counts\.scatter_add_\(1, tokens, torch\.ones_like\(tokens\)\)[ \t]*$')
# (round 71) vllm-omni's Voxtral TTS encoding a reference audio's waveform (encode_waveforms, called from the
# generation stage's embed_multimodal: models/voxtral_tts/voxtral_tts_audio_tokenizer.py:990,
# voxtral_tts_audio_generation.py:1007 (vllm-omni 0.30.0)). Start-up encodes no dummy audio: both Voxtral stages
# skip the multimodal profile (deploy/voxtral_tts.yaml:46, :71), which the runners' profile_run honours
# (worker/gpu_generation_model_runner.py:931 (vllm-omni 0.30.0); vLLM 0.20.0 v1/worker/gpu_model_runner.py:5792);
# so only a request's reference audio (voice cloning) reaches it
_VOXTRAL_ENCODE = r'voxtral_tts/voxtral_tts_audio_tokenizer\.py", line \d+, in encode_waveforms[ \t]*$'
# (round 44) a model's constructor building one of its layers: vLLM builds the model only in initialize_model,
# which the loaders' load_model calls (model_executor/model_loader/utils.py:48, base_loader.py:49 (0.13.0);
# utils.py, base_loader.py:54 (0.34.0)), each layer a class of model_executor/layers/ or a plugin's op put in its
# place (vllm-ascend's AscendFusedMoE for FusedMoE, vllm_ascend/utils.py:662-668 (0.12.0rc1)). A model file's
# __init__ frame whose next frame is a layer's __init__ is the weights' step, whatever cut the paste shows (a
# model file's own parsers and processing classes build no layer)
# (round 56) or the models' helper that builds a model's decoder layers one by one, make_layers (or its list
# comprehension, where a paste cut its own frame: ``layer_fn(prefix=f"{prefix}.{idx}")``), called only from
# the model classes' constructors (model_executor/models/utils.py:543, :558 (0.7.2); :950, :978 (0.34.0))
# (round 63) or a vllm-omni diffusion model's constructor building one of torch's own layers, which allocate their
# parameters in __init__ (torch/nn/modules/linear.py): vllm-omni builds the model only in its loader's load_model,
# under the target device (vllm-omni 0.30.0 diffusion/model_loader/diffusers_loader.py:640, :1216-1218)
# (round 72) or a model's constructor allocating its own parameters under torch's device context: torch's
# DeviceContext.__torch_function__ (torch/utils/_device.py) runs only inside a `with torch.device(...)` block, which
# vLLM opens only around building the model (0.2.4 model_executor/model_loader.py:116-117, `with torch.device("cuda"):
# model = model_class(...)`, from the worker's load_model, worker/model_runner.py:36; model_loader/loader.py:451-452
# `with target_device: model = _initialize_model(...)` (0.8.5.post1)): Mixtral's expert weights, `torch.empty(...)`
# in MixtralMoE.__init__ (0.2.4 models/mixtral.py:183)
_MODEL_BUILT = (r'model_executor/models/\w+\.py", line \d+, in __init__[ \t]*\n(?:[ \t]+(?!File ")\S.*\n){0,3}'
                r'[ \t]*File "[^"\n]*/(?:model_executor/layers|vllm_ascend/ops)/[\w/]+\.py", line \d+, in __init__[ \t]*$'
                r'|model_executor/models/utils\.py", line \d+, in make_layers[ \t]*$'
                r'|model_executor/models/utils\.py", line \d+, in <(?:listcomp|genexpr)>[ \t]*\n[ \t]+(?!File ")'
                r'.*\blayer_fn\(prefix='
                r'|vllm_omni/diffusion/models/[\w/]+\.py", line \d+, in __init__[ \t]*\n(?:[ \t]+(?!File ")\S.*\n){0,3}'
                r'[ \t]*File "[^"\n]*/torch/nn/modules/\w+\.py", line \d+, in __init__[ \t]*$'
                r'|model_executor/models/\w+\.py", line \d+, in __init__[ \t]*\n(?:[ \t]*(?!File ")\S.*\n){0,3}'
                r'[ \t]*File "[^"\n]*/torch/utils/_device\.py", line \d+, in __torch_function__[ \t]*$')
# (round 54) a multiprocessing worker's busy loop runs each RPC the executor broadcasts, ``output = func(*args,
# **kwargs)`` (v1/executor/multiproc_executor.py:957, its failure logged "WorkerProc hit an exception." at :962
# (0.20.0); :649/:654 0.10.2, :1211/:1223 0.34.0). The loop starts once the worker is built and READY (:861, after
# init_device :611 and load_model :619); vLLM's own start-up then sends it only the steps below
# (v1/executor/abstract.py:123-125 initialize_from_config, compile_or_warm_up_model; :147 determine_available_memory;
# :150 get_kv_cache_spec; :207 get_kv_connector_handshake_metadata; :293 get_supported_tasks; v1/engine/core.py:270
# update_max_model_len (0.20.0)). Any other method there (execute_model, sleep, a worker extension's method such
# as an RL trainer's weight update: v1/worker/worker_base.py:253-259) comes from a running engine or its user's
# collective_rpc, which only a built engine takes: the busy loop's frame and the method's next is serving (not
# torch's decorator frame, decorate_context, torch 2.13.0 utils/_contextlib.py:124, which hides the method's name)
_STARTUP_RPCS = (r"init_worker|init_device|load_model|initialize_from_config|initialize_cache|compile_or_warm_up_model"
                 r"|determine_available_memory|get_kv_cache_spec|get_kv_connector_handshake_metadata"
                 r"|get_supported_tasks|update_max_model_len")
_AFTER_START_RPC = (r"in worker_busy_loop[ \t]*\n[ \t]+output = func\(\*args, \*\*kwargs\)[ \t]*\n"
                    rf'[ \t]*File "(?![^"\n]*/torch/)[^"\n]+", line \d+, in (?!(?:{_STARTUP_RPCS})\b)\w+[ \t]*$')
# (round 56) the same RPCs asked from above: a user's code (an RL trainer's generation worker) calling
# collective_rpc on its LLM or AsyncLLM, which exist only once their engine is built (LLM.__init__ builds it,
# entrypoints/llm.py:282, before collective_rpc can be called, :474; AsyncLLM.collective_rpc,
# v1/engine/async_llm.py:676 (0.10.2); entrypoints/llm.py:583, v1/engine/async_llm.py:1272 (0.34.0)). vLLM's own
# start-up calls it from its executors, engines and workers (abstract.py, core.py, worker_base.py), not counted
_USER_RPC = (r'^[ \t]*File "(?![^"\n]*/vllm(?:_ascend)?/(?:v1/)?(?:executor|engine|worker|distributed)/)[^"\n]+", '
             r'line \d+, in \w+[ \t]*\n[ \t]+(?!File ").*\.collective_rpc\(')
FRAME_PHASES = (
    ("load_weights", frame_regex(_LOAD, also=_MODEL_BUILT)),
    ("memory_pool", frame_regex(_POOL)),
    ("graph_capture", frame_regex(_CAPTURE)),
    ("serving", frame_regex(_SERVING, also=f"{_AFTER_START_RPC}|{_USER_RPC}|{_VERL_SLEEP}|{_ASCEND_SAMPLER}"
                                          f"|{_PENALTY_COUNTS}|{_VOXTRAL_ENCODE}")),
)
STARTUP_FRAMES = frame_regex(f"{_LOAD}|{_POOL}|{_CAPTURE}|{_INIT}", also=_MODEL_BUILT)
# (round 76) an engine class's from_engine_args and V0's async engine's _init_engine build the engine and return it
# (engine/async_llm_engine.py:374, :431 ``engine = cls(``, :360 ``self.engine = self._init_engine(``, :489 (0.5.1);
# :557, :576 (0.6.2)): a traceback through them is the engine being built, never a step of it (a fault only a
# running server meets is no serving one there); the config made first (CONFIG_FRAMES) keeps its own reading
ENGINE_BUILT_FRAMES = frame_regex(r"from_engine_args|_init_engine")
# (round 75) the engine's config being made from its args: EngineArgs.create_engine_config (engine/arg_utils.py:997,
# its create_model_config at :1018 (0.9.1); :2313 (0.34.0)), which every engine's from_engine_args calls before it
# builds the engine (engine/llm_engine.py:494, v1/engine/llm_engine.py:142, v1/engine/async_llm.py:185 (0.9.1)) and
# vLLM's server calls in build_async_engine_client_from_engine_args (entrypoints/openai/api_server.py:162, :177),
# which run_server_worker enters (:1343) before it starts uvicorn (serve_http, :1351; 0.34.0
# launchers/api_server/entry.py:82): nothing of this engine was built, and no uvicorn line before it is its server's
CONFIG_FRAMES = frame_regex(r"create_engine_config")


def frame_phases(frames: str) -> list[str]:
    found = [name for name, pattern in FRAME_PHASES if pattern.search(frames)]
    if "serving" in found and STARTUP_FRAMES.search(frames):
        found.remove("serving")
    return found


# (round 94) IPython's verbose traceback (ultratb's, the one Colab and the older notebooks print): under its header
# ("RuntimeError    Traceback (most recent call last)", cut_names.ipython_type) each frame is the file, in Colab a
# link to it, then " in f(args)" ("[/usr/.../vllm/worker/model_runner.py](https://localhost:8080/#) in
# profile_run(self)"), its code lines numbered below, no "File ..., line N, in f" line that the tracebacks' reader
# takes as a frame. Those frames, written as a traceback's, are the phase's as any other frames are
_IPYTHON_FRAME_RE = re.compile(r"^\[?[^\s\[\]]+\.py\]?(?:\([^()\s]*\))? in (\w+)\(")
_IPYTHON_SPAN = 400


def ipython_frames(msgs: list[str]) -> str:
    """The frames of the IPython traceback that ``msgs`` (the log's lines above an exception's, nearest last) end
    in, as ", in f" lines; "" where no IPython header is above them or a Python traceback's opens in between."""
    frames = []
    for msg in reversed(msgs[-_IPYTHON_SPAN:]):
        if ipython_type(msg):
            return "".join(f"\n, in {name}" for name in reversed(frames))
        if "Traceback (most recent call last):" in msg:
            return ""
        if match := _IPYTHON_FRAME_RE.match(msg.strip()):
            frames.append(match.group(1))
    return ""
