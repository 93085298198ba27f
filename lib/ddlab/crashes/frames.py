"""Where a process was, read from the frames printed around a crash: startup, warmup, serving.

Contract: :data:`FRAME_PHASES` maps each phase to a regex over a crash's frame
text (a Python traceback's ``File "...", line N, in f``, faulthandler's ``File
"...", line N in f``, py-spy's ``f (file.py:N)``, and the code line of a call
that a cut paste keeps, ``scheduler.event_loop_normal()``); :func:`frame_phases`
returns the phases they show (SGLang Diffusion's component loaders' frames are load_weights too, but under a
request's stage, :data:`_DIFFUSION_LOAD`). Startup frames (loading, pool sizing, capture,
torch distributed init, the scheduler's constructor) mean the process never
finished starting, so they win over serving frames in the same text
(:data:`STARTUP_FRAMES`). The names are SGLang's own functions, 0.1.x to 0.5.x
(``forward_fill_batch`` and ``exposed_step`` are the old router's), and those of
the threads that only exist once the scheduler serves: the 0.4.x scheduler's
``watchdog_thread`` (started at the end of ``Scheduler.__init__``) and the PD
KV sender's per-request transfer functions.

Why a module: the phase (:mod:`.diagnosis`) and the speculative-feature rule
(:mod:`.kinds.speculative`) both need to know whether frames are startup's.
"""

from __future__ import annotations

import re

from ddlab.crashes.kinds.diffusion import DIFFUSION_FORWARD_FRAMES

__all__ = ["FRAME_PHASES", "STARTUP_FRAMES", "CAPTURE_PROFILER", "frame_phases", "frame_regex", "shows_startup",
           "own_script", "ray_driver", "router_frames"]

_IN = r"(?:,| line \d+) in "  # a traceback's "File ..., line N, in f", faulthandler's "line N in f"


def frame_regex(names: str, calls: str = "", also: str = "") -> re.Pattern:
    """Frames of functions ``names`` in the three dump formats, code lines calling ``calls`` and the regex
    ``also`` (each where given); vLLM's frame phases are written with it too (:mod:`ddlab.diagnosis.vllm_frames`)."""
    call = rf"|^\s*(?:\w+ = )?[\w.]*\.(?:{calls})\(" if calls else ""
    more = f"|{also}" if also else ""
    return re.compile(rf"{_IN}(?:{names})\s*$|^\s*(?:{names}) \([\w./<>-]+:\d+\)\s*${call}{more}", re.M)


# the LoRA manager built right after the model loaded, before the memory pool (0.4.10.post2
# model_executor/model_runner.py:328 between load_model :285 and init_memory_pool :331; 0.5.23 :733 after
# load_model :715): it loads the adapters' weights and wraps the model's layers (lora/lora_manager.py
# init_state); only startup calls it (a request's adapter load is load_lora_adapter)
# A quantization method's create_weights is called by a layer's constructor only (0.4.10.post2
# layers/moe/fused_moe_triton/layer.py:164 in FusedMoE.__init__; 0.5.23 :561), and the layers are built
# by _initialize_model (0.5.23 model_loader/loader.py:309); the quantization config is made right before
# it (0.5.23 model_loader/loader.py:837, initialize_model_for_startup) and a layer's quant method in the
# layer's __init__ (get_quant_method, 0.5.23 layer.py:500): a constructor in
# sglang/srt/layers/quantization/ is the model being built, after the loader started
# (round 80) A quantization method's post-load step, process_weights_after_loading (requantizing, repacking),
# is called by the model loaders right after the model's load_weights (0.5.5.post3 model_loader/loader.py:618 in
# load_weights_and_postprocess, load_weights at :607; :731, :839, :1498 in the other loaders' load_model; 0.5.23
# :1089 in postprocess_weights, called from load_weights_and_postprocess :1030) and by the weight updates that go
# through that function (0.5.5.post3 model_executor/model_runner.py:915, read as load_weights already by its
# load_weights_and_postprocess frame): the weights being loaded, in faulthandler's dumps cut below it too
_LOAD = (r"load_model|load_weights\w*|_initialize_model|weight_loader|init_lora_manager|create_weights"
         r"|process_weights_after_loading")
_QUANT_BUILT = (r'sglang[/\\]srt[/\\]layers[/\\]quantization[/\\][\w/\\]*\.py", line \d+,? in __init__\s*$'
                # (round 18) so is a constructor of a model's own module: the model class and the
                # layers it builds for itself (0.5.23 model_loader/loader.py:309, model_class(**kwargs)
                # in _initialize_model, the only caller of a model class)
                r'|sglang[/\\]srt[/\\]models[/\\][\w/\\]*\.py", line \d+,? in __init__\s*$'
                # (round 56) and a quantization config choosing a layer's method: get_quant_method is called
                # by the layers' constructors only (0.5.1 layers/linear.py:160 in LinearBase.__init__ :139,
                # layers/moe/fused_moe_triton/layer.py:202, vocab_parallel_embedding.py:260,
                # radix_attention.py:81; 0.5.23 linear.py:276, fused_moe_triton/layer.py:494, :500,
                # vocab_parallel_embedding.py:304, radix_attention.py:105), its scheme lookup under it
                # (0.5.1 quantization/compressed_tensors/compressed_tensors.py:131 get_scheme -> :522
                # _get_scheme_from_parts)
                r'|sglang[/\\]srt[/\\]layers[/\\]quantization[/\\][\w/\\]*\.py", line \d+,? in get_quant_method\s*$')
_POOL = (r"init_memory_pools?|_resolve_memory_pool_config|profile_max_num_token|init_cache_with_memory_pool"
         # the scheduler's pool and radix cache (HiCache's storage included: 0.4.10.post2
         # managers/scheduler.py:561, called from its constructor at :393)
         r"|init_memory_pool_and_cache"
         r"|maybe_register_hicache\w*"
         # the KV pool's buffers allocated in its constructor (0.5.10 mem_cache/memory_pool.py:780, :845)
         r"|_create_buffers"
         # the pools' builders, run once at startup (0.5.23 mem_cache/memory_pool.py:1426
         # _init_mamba_pool, kv_cache_configurator.py:585 _init_pools, :865 _init_unified_mamba_pools,
         # deepseek_v4_memory_pool.py:1541 _init_compressed_pools)
         r"|_init_\w*pools?")
_GRAPH_SETUP = r"init_cuda_graphs|init_device_graphs|init_all_cuda_graphs|capture_cuda_graphs"
# (round 106) sglang-jax's precompile, its graph capture (its lines: diagnosis/precompile_lines.py): the scheduler's
# constructor calls the worker's run_precompile, which compiles the forward for each padded size in precompile_extend
# and precompile_decode (sgl-project/sglang-jax 8a5deaa8 python/sgl_jax/srt/managers/scheduler.py:298-301,
# managers/tp_worker.py:187-189, :191, :235; the overlap worker's run_precompile, tp_worker_overlap_thread.py:191-192);
# later commits hand them to a compilation manager's precompile_all, _precompile_extend and _precompile_decode (cddbf6f
# model_executor/compilation_manager.py:132, :147, :206). Startup frames: the forward run under them is no request's;
# a cut paste's last code line calling one has it on the stack
_JAX_PRECOMPILE = r"run_precompile|_?precompile_(?:extend|decode|all)"
_CAPTURE = rf"{_GRAPH_SETUP}|_?capture\w*|{_JAX_PRECOMPILE}"
# a graph runner's profiler callback: the runner makes its profiler only around the capture
# (--enable-profile-cuda-graph; 0.5.23 model_executor/runner/decode_cuda_graph_runner.py:1273 in
# _capture, the callback defined at :1015 and handed to torch's profiler at :1044), so its frame is
# the capture under way; the scheduler's own profiler has no such frame in a graph runner
CAPTURE_PROFILER = r'graph_runner\.py", line \d+,? in on_trace_ready\s*$'
# (round 110) a CUDA graph runner's constructor: the model runner logs "Capture cuda graph begin" and then builds the
# runner (0.5.5 model_executor/model_runner.py:1985-1995 in init_device_graphs), whose __init__ allocates the graphs'
# buffers and captures, wrapping a failure as "Capture cuda graph failed" (0.5.5 cuda_graph_runner.py:228, :381-384;
# 0.4.10.post2 :235, :387-390); the EAGLE drafters' runners are built by the draft worker's constructor (0.5.5
# speculative/eagle_worker.py:182 init_cuda_graphs -> :224, :237): a frame in one's __init__ is the capture under way
# (not a vision encoder's runner, multimodal/vit_cuda_graph_runner.py in 0.5.23: not the server's startup graphs)
_RUNNER_BUILT = r'(?:model_executor|speculative)[/\\][\w/\\]*cuda_graph_runner\.py", line \d+,? in __init__\s*$'
_INIT = r"init_torch_distributed|initialize_model_parallel|init_model_parallel_group|ncclCommInitRank"
_WARMUP = r"_wait_and_warmup|_execute_server_warmup"
_SERVING = (r"event_loop_\w+|run_event_loop|dispatch_event_loop|run_batch|process_batch_result\w*|forward_step"
            r"|exposed_step|forward_fill_batch|forward_decode_batch|forward_batch_generation"
            # 0.2.x / 0.3.x's model worker stepping a prefill batch (0.2.12 managers/tp_worker.py:443,
            # called from forward_step :238; 0.3.0 :493)
            r"|forward_prefill_batch"
            r"|forward_batch_speculative_generation|forward_thread_func_?|verify|replay|replay_prepare"
            r"|get_next_batch_to_run|get_model_worker_batch|prepare_for_extend|prepare_for_decode"
            r"|retract_decode|resolve_batch_result|spec_prepare_for_decode|watchdog_thread"
            r"|send_kvcache\w*|process_layers?|transfer_worker|transfer_sync|_pp_recv_proxy_tensors"
            # the tokenizer manager handing a request its output or its abort (0.4.10.post2
            # managers/tokenizer_manager.py:1505, :1809; 0.5.23 :2480, :3577)
            r"|_handle_batch_output|_handle_abort_req"
            # the scheduler admitting a waiting request into a prefill batch, and HiCache loading
            # its prefix back from host memory (0.4.10.post2 managers/schedule_policy.py:497,
            # mem_cache/base_prefix_cache.py:86; 0.5.23 schedule_policy.py:1395,
            # mem_cache/unified_radix_cache.py:3586, :1820)
            r"|add_one_req\w*|init_load_back|load_back"
            # (round 37) a request's prefix cached in the radix tree, and HiCache writing a node it hit
            # back to host memory (0.5.13 mem_cache/unified_radix_cache.py:707 cache_finished_req and
            # :779 cache_unfinished_req call insert; _insert_helper :1094 -> _inc_hit_count :1747 ->
            # write_backup :1468; hiradix_cache.py:896, :905), or evicting for a request's room under
            # write-back (:1427, hiradix_cache.py:1053): only a request caches or evicts a node (the
            # warmup's is told by the log's lines, diagnosis/phase.py)
            r"|cache_finished_req|cache_unfinished_req|_inc_hit_count|write_backup"
            # the grammar backend filling a request's vocab mask for its next token (0.4.10.post2
            # sampling/sampling_batch_info.py:171, :193 from model_executor/model_runner.py:1702;
            # 0.5.23 constrained/base_grammar_backend.py:84, model_runner.py:2085): a constrained
            # request being decoded, which the launcher's warmup never is
            r"|fill_vocab_mask\w*|update_regex_vocab_mask|fill_next_token_bitmask"
            # the scheduler moving requests whose grammar compiled into its waiting queue (0.4.10.post2
            # managers/scheduler.py:2017 from get_new_batch_prefill :1496; 0.5.23
            # constrained/grammar_manager.py:211): a grammar queue only constrained requests fill
            r"|move_ready_grammar_requests|get_ready_grammar_requests")
# the data-parallel controller's request loop (0.4.10.post2 managers/data_parallel_controller.py:316; 0.5.23
# :927), not (round 85) the detokenizer's: its event_loop runs from launch on, blocked on the scheduler's
# socket (0.4.4.post1 managers/detokenizer_manager.py:107 recv_pyobj, entered from run_detokenizer_process :263
# right after the manager is built; 0.4.10.post2 :106; 0.5.23 :184-188), so its frame alone is no request's;
# a batch's output handled under it still says serving: the loop's call of its dispatcher (0.4.10.post2 :110, 0.5.23
# :189) or of trim_matched_stop (0.4.2 :143, :105), a handler's frame (0.5.23 :228, :310, :450), or the log's lines
_LOOP = (r"^(?!.*detokenizer_manager\.py).*(?:,| line \d+) in event_loop\s*$"
         r"|^\s*event_loop \((?![^)]*detokenizer_manager\.py)[\w./<>-]+:\d+\)\s*$")
_DETOKENIZED = (r"_request_dispatcher|trim_matched_stop|handle_batch_token_id_out|handle_batch_embedding_out"
                r"|_decode_batch_token_id_output")

# (round 28) a cut paste's last code line calling the model load, also cut inside the name ("self.load_mo";
# 0.4.5.post3 model_executor/model_runner.py:191 ``self.load_model()`` in initialize): the callee is on
# the stack, as with the graph setup's call below
_LOAD_CALL = r"^\s*[\w.]*\.load_mo(?:d(?:e(?:l(?:\(.*)?)?)?)?\s*$"
# (round 53) and one calling the LoRA manager's set-up, ``self.init_lora_manager()`` in initialize (0.5.3.post1
# model_executor/model_runner.py:418, after load_model :346, before init_memory_pool :435; 0.5.4 :446; 0.5.5
# :454): its frame is read as load_weights above, and the call's callee is on the stack
_LORA_CALL = "init_lora_manager"
# (round 57) the model runner's own forward steps: ModelRunner.forward -> _forward_raw -> forward_extend (0.5.7
# model_executor/model_runner.py:2210, :2288 -> :2155 self.model.forward) are reached only from a scheduled batch
# (0.5.7 managers/tp_worker.py:200, :421, :476, :497 under run_batch; 0.5.23 tp_worker.py:276, :675, :767, :787;
# _forward_raw 0.5.23 model_runner.py:1860). The one caller at startup, PP's dynamic-chunking profile (0.5.7
# scheduler_pp_mixin.py:617 from scheduler.py:763 in init_chunked_prefill, caught there and warned), runs under
# Scheduler.__init__, a startup frame that wins. The graph runners call the model itself (0.5.7
# model_runner.py:1949 in _dummy_run; cuda_graph_runner's capture), and an attention backend's forward_extend is
# another file's: only model_runner.py's frames count
_RUNNER_FORWARD = r'model_executor[/\\]model_runner\.py", line \d+,? in (?:_forward_raw|forward_extend)\s*$'
# (round 73) the prefix cache evicting to make room: the radix caches' evict and its helpers (0.5.10
# mem_cache/hi_mamba_radix_cache.py:738 evict -> :722 _evict_device_leaf -> :600 _evict_regular; radix_cache.py,
# mamba_radix_cache.py, swa_radix_cache.py, hiradix_cache.py) are called only while requests are batched: the
# code line ``tree_cache.evict(...)`` of evict_from_tree_cache (0.5.10 mem_cache/common.py:252), under the slot
# allocation of an extend or decode batch (:207, :268, :405; managers/schedule_batch.py:1615, :1939, :2032), a
# request's prefix loaded back (hi_mamba_radix_cache.py:367) or cached unfinished (mamba_radix_cache.py:667)
_CACHE_EVICT = r'mem_cache[/\\][\w/\\]*\.py", line \d+,? in _?evict(?:_\w+)?\s*$|^\s*[\w.]*tree_cache\.evict\('
# (round 87) the model runner building its attention backend: initialize calls it right after the KV pool and
# before the graphs are captured (0.4.10.post2 model_executor/model_runner.py:338, after init_memory_pool :331,
# before init_cuda_graphs :339; 0.5.5 :478, :471, :479; 0.5.12 :766, after init_memory_pool :749, before
# init_device_graphs :791 and init_piecewise_cuda_graphs :825): the backend's buffers (0.5.12
# layers/attention/flashinfer_backend.py:202, the workspace) are allocated in the pool's phase, as the log
# says: "Memory pool end" printed, no "Capture ... begin" (model_runner.py's frame only: a speculative
# worker's own init_attention_backend runs after the target's capture, 0.5.12 speculative/eagle_worker.py:226)
_ATTN_BACKEND = r'model_executor[/\\]model_runner\.py", line \d+,? in init_attention_backend\s*$'
# (round 88) the weight-update handlers: the scheduler dispatches an update request to its handler (0.4.3.post2
# managers/scheduler.py:425-431, :1679-1681 init_weights_update_group -> tp_worker.py:187-188 ->
# model_executor/model_runner.py:436, its group's barrier :475; 0.5.12 scheduler.py:1438-1453,
# scheduler_update_weights_mixin.py:70 -> tp_worker.py:105 -> model_runner.py:1921), reached only through the
# HTTP API or the Engine (0.4.3.post2 entrypoints/http_server.py:257, :276, :291; 0.5.12 :1136) once the server
# serves: init_weights_update_group, update_weights_from_distributed and update_weights_from_tensor (0.4.3.post2
# model_runner.py:436, :482, :515; 0.5.12 :1921, :1980, :2070). update_weights_from_disk (0.4.3.post2 :363) is
# one too, but it loads through the model's load_weights (:401-402), a startup frame that still wins below it
_WEIGHT_UPDATE = r"init_weights_update_group|update_weights_from_(?:distributed|tensor|disk)"
FRAME_PHASES = (
    ("load_weights", frame_regex(_LOAD, _LORA_CALL, also=f"{_QUANT_BUILT}|{_LOAD_CALL}")),
    ("memory_pool", frame_regex(_POOL, also=_ATTN_BACKEND)),
    # a cut paste's last code line calling the graph setup (0.4.10.post2 model_executor/
    # model_runner.py:339 ``self.init_cuda_graphs()``): the callee is on the stack
    ("graph_capture", frame_regex(_CAPTURE, f"{_GRAPH_SETUP}|{_JAX_PRECOMPILE}",
                                  also=f"{CAPTURE_PROFILER}|{_RUNNER_BUILT}")),
    ("ready", frame_regex(_WARMUP)),
    ("serving", frame_regex(f"{_SERVING}|{_DETOKENIZED}|{_WEIGHT_UPDATE}",
                            rf"event_loop_\w+|run_event_loop|{_DETOKENIZED}",
                            also=f"{_RUNNER_FORWARD}|{_CACHE_EVICT}|{_LOOP}")),
)
# (round 50) SGLang Diffusion loading its pipeline's components (the DiT, encoders, VAE: their weights):
# the pipeline's constructor loads each module (0.5.12 multimodal_gen/runtime/pipelines_core/
# composed_pipeline_base.py:130 load_modules, :431 PipelineComponentLoader.load_component) through the
# component loader's template method (0.5.12 loader/component_loaders/component_loader.py:99 load, :138
# load_customized, its fallback :156 load_native, :415 load_component; 0.5.6 loader/component_loader.py:138,
# :184, :195; 0.5.23 component_loaders/component_loader.py:332, :1053). A stage that finds its component not
# loaded yet loads it under a request (0.5.12 pipelines_core/stages/denoising.py:619-621 in
# _prepare_denoising_loop from forward :1238; decoding.py:186-187 in load_model from forward :212): there the
# frames are that request's (its stage's forward frame, kinds/diffusion.py's DIFFUSION_FORWARD_FRAMES).
# (round 82) The DiT loader's checkpoint load under it: maybe_load_fsdp_model builds the model and streams the
# safetensors into it through load_model_from_full_model_state_dict (0.5.8.post1 multimodal_gen/runtime/loader/
# fsdp_load.py:78, :145-147, :230, each tensor placed on the device at :284 torch.empty_like), called by the
# transformer loader's load_customized (0.5.8.post1 loader/component_loader.py:728; 0.5.6 :660, fsdp_load.py:68,
# :136, :221; 0.5.12 component_loaders/transformer_loader.py:124, fsdp_load.py:170, :249, :357; 0.5.23
# component_loaders/component_loader.py:760, fsdp_load.py:261, :471, :585) and by pipelines building their own
# modules (0.5.8.post1 pipelines/comfyui_zimage_pipeline.py:342)
_DIFFUSION_LOAD = re.compile(
    r'multimodal_gen[/\\]runtime[/\\](?:loader[/\\](?:component_loaders[/\\]\w+|component_loader)\.py", '
    r'line \d+,? in (?:load|load_customized|load_native|load_component)'
    r'|loader[/\\]fsdp_load\.py", line \d+,? in (?:maybe_load_fsdp_model|load_model_from_full_model_state_dict)'
    r'|pipelines_core[/\\]composed_pipeline_base\.py", line \d+,? in load_modules)\s*$', re.M)
_DIFFUSION_FORWARD = re.compile(DIFFUSION_FORWARD_FRAMES, re.M)
# the server's parts being built: their constructors run once, at startup
_BUILT = (r'sglang[/\\]srt[/\\](?:(?:distributed|model_executor|layers|models)[/\\][\w/\\]*'
          r'|managers[/\\](?:scheduler|tp_worker)\w*)\.py", line \d+,? in __init__\s*$')
STARTUP_FRAMES = re.compile(
    rf"{frame_regex(f'{_LOAD}|{_POOL}|{_CAPTURE}|{_INIT}').pattern}|{_BUILT}|{CAPTURE_PROFILER}"
    r"|^\s*(?:[\w.]+ = )?(?:Scheduler|TpModelWorker\w*|TpWorkerClass|ModelRunner|\w+Worker)\(\s*$", re.M)


def frame_phases(frames: str) -> list[str]:
    """The phases the frames show; serving frames count only when no startup frame is there."""
    found = [name for name, pattern in FRAME_PHASES if pattern.search(frames)]
    if ("load_weights" not in found and _DIFFUSION_LOAD.search(frames)
            and not _DIFFUSION_FORWARD.search(frames)):  # (round 50, above)
        found.insert(0, "load_weights")
    if "serving" in found and STARTUP_FRAMES.search(frames):
        found.remove("serving")
    return found


def shows_startup(frames: str) -> bool:
    """Whether the frames are a process that had not finished starting."""
    return bool(STARTUP_FRAMES.search(frames))


# (round 35) Whose process a traceback is. A script's own: its first frame is a script's ``<module>`` (not
# runpy's: ``python -m``), and every frame is in that script's folder or Python's standard library
# (lib/python3.N/, not its site-packages), none in an installed package nor in SGLang's (sglang/srt/,
# sglang/launch_server.py ...; sglang_router, sgl_kernel): a test harness or client of its own making (an
# offline Engine's script goes through SGLang's frames, a client library's through site-packages)
_STDLIB = re.compile(r"[/\\]lib[/\\]python3(?:\.\d+)?[/\\](?!(?:site|dist)-packages[/\\])")
_PACKAGE = re.compile(r"[/\\](?:site-packages|dist-packages|sglang_router|sgl_kernel"
                      r"|sglang[/\\](?:srt|lang|test|cli|multimodal_gen))[/\\]|[/\\]sglang[/\\]\w+\.py$")
# SGLang's router started from its launcher: sglang-router 0.1.6 sglang_router/launch_router.py:364
# ``def launch_router``, :429 ``router.start()``, which blocks in the Rust server (router.py:118-123);
# the router is a process of its own, with no batch or "ready to roll" line: the workers' progress is not its
_ROUTER_LAUNCH = re.compile(r"(?:^|[/\\])sglang_router[/\\]launch_router\.py$")


def own_script(frames: list) -> bool:
    """The frames (``.file``, ``.func``) are a script's own, whole from its ``<module>`` (see above)."""
    first = frames[0].file if len(frames) > 1 and frames[0].func == "<module>" else ""
    folder = first[:max(first.rfind("/"), first.rfind("\\")) + 1]
    return bool(folder) and not _STDLIB.search(first) and all(
        (f.file.startswith(folder) or _STDLIB.search(f.file)) and not _PACKAGE.search(f.file)
        for f in frames)


# (round 57) Ray's driver prints its actors' lines under their tag (diagnosis/viewer_prefixes.py RAY_TAG; a child an
# actor starts writes to the actor's log, tagged alike) and its own lines bare. Where every line SGLang's logger
# stamped carried the tag and a traceback's lines carry none, the traceback is the driver's, a process that is no
# server: a script's ray.get of an actor's call that failed (sglang 0.4.4.post3 model_runner.py:549-562 catches the
# weight-update group's error and answers the call with it, the server going on). The driver reporting an actor's
# death (Ray's RayActorError, ActorDiedError, ActorUnavailableError, WorkerCrashedError) tells of the server's
# process: not read so
_ACTOR_DIED = re.compile(r"\b(?:RayActorError|ActorDiedError|ActorUnavailableError|WorkerCrashedError)\b"
                         r"|[Tt]he actor died")


def ray_driver(chain_lines: list, lines: list) -> bool:
    """The traceback's lines (``.actor``, ``.msg``) are Ray's driver's, the server's lines before them an actor's."""
    first = min((line.no for line in chain_lines), default=0)
    stamped = [line for line in lines if line.stamped and line.no < first]
    return (bool(stamped) and all(line.actor for line in stamped) and not any(line.actor for line in chain_lines)
            and not any(_ACTOR_DIED.search(line.msg) for line in chain_lines))


def router_frames(frames: list) -> bool:
    """The frames went through SGLang's router's ``launch_router`` (see above)."""
    return any(f.func == "launch_router" and _ROUTER_LAUNCH.search(f.file) for f in frames)
