"""vLLM: a start refused before the engine runs: the weight loaders' refusals (``weights_unreadable``)
and the config's own checks (``bad_argument``: a check in vLLM's config classes, pydantic's words for a
validator's ValueError, the V2 model runner's requirement); a model config vLLM cannot read
(``arch_unsupported``) is :mod:`.archs`, listed here in its place; round 9 added
the argument parser's own refusals, a traceback cut in the loop that reads the checkpoint files and a
negative KV cache share that explains an engine's cut traceback; round 94 an OpenVINO IR exported without its KV
cache, which the OpenVINO backend's loader (optimum-intel) refuses.

Each is a text or a frame of vLLM's own source (cited ``(release, "vllm/path.py:line")`` in the
wheels of 0.30.0, 0.33.0, 0.34.0 and 0.6.4.post1, as in :mod:`.vllm`), or of vllm-ascend as its
log shows it. (Found by round 4 of the vLLM corpus, like the capture texts now in
:mod:`.graphs` and the speculative conflicts in :mod:`.speculative`.)
"""

from __future__ import annotations

from ddlab.vllm_crashes import archs
from ddlab.vllm_crashes.library import V0 as _V0
from ddlab.crashes.signature import NO_LATER_FRAME, Found, Signature, regex

__all__ = ["SIGNATURES", "SIZES"]

# --- weights: the loaders' refusals ---------------------------------------------------

_NO_PARAM = r"There is no module or parameter named '(?P<name>[^']+)' in (?P<model>\w+)"


def _no_param_detail(found: Found) -> str | None:
    said = regex(_NO_PARAM).search(found.text)
    if not said:
        return None
    return (f"The checkpoint names '{said['name']}', which {said['model']} does not have: the weights "
            "were saved for another class or layout (a multimodal checkpoint's prefix, a draft saved as "
            "a whole model, another converter) than the architecture vLLM built.")


# the generic loader (AutoWeightsLoader._load_module) walks the model's modules by each checkpoint
# name's prefix and raises where a prefix names none
NO_SUCH_PARAM = Signature(
    "vllm_no_such_param", "weights_unreadable", "the checkpoint names a module the model does not have",
    ("The checkpoint's tensor names do not fit the model class vLLM built from config.json: check "
     "`architectures` in config.json against the weights; for a draft (EAGLE, MTP), use a checkpoint "
     "converted for this vLLM release and method.",),
    patterns=(_NO_PARAM,), lines=(rf"^(?:ValueError: )?{_NO_PARAM}",),
    priority=82, phase="load_weights", detail=_no_param_detail,
    sources=(("0.34.0", "vllm/model_executor/models/utils.py:454"),
             ("0.33.0", "vllm/model_executor/models/utils.py:443"),
             ("0.30.0", "vllm/model_executor/models/utils.py:412"),
             (_V0, "vllm/model_executor/models/utils.py:216")))

# the default loader checks that every parameter got a tensor (strict loading)
_NOT_INIT = r"Following weights were not initialized from checkpoint"
NOT_INITIALIZED = Signature(
    "vllm_weights_not_initialized", "weights_unreadable", "the checkpoint lacks tensors the model needs",
    ("Parameters of the model got no tensor from the checkpoint: the checkpoint lacks them (a fine-tune "
     "saved without a part, e.g. its MTP layers when a speculative method uses them) or names them "
     "otherwise; save the checkpoint whole, or drop the method that needs the missing part.",),
    patterns=(_NOT_INIT,), lines=(_NOT_INIT,), priority=82, phase="load_weights", fatal=True,
    sources=(("0.34.0", "vllm/model_executor/model_loader/default_loader.py:611"),
             ("0.33.0", "vllm/model_executor/model_loader/default_loader.py:570"),
             ("0.30.0", "vllm/model_executor/model_loader/default_loader.py:468")))

# V0's EAGLE model builds its fc layer with a bias only when config.json says eagle_fc_bias
EAGLE_BIAS = Signature(
    "vllm_eagle_fc_bias", "weights_unreadable", "the EAGLE checkpoint has a bias its config does not declare",
    ("The EAGLE checkpoint holds `fc.bias`, but its config.json does not set \"eagle_fc_bias\": true, so "
     "vLLM built the layer without one: add that key to the draft's config.json (or convert the "
     "checkpoint with the converter for this release).",),
    patterns=(r"Found bias in the loaded weights but the model config doesn't have bias",),
    priority=82, phase="load_weights",
    sources=((_V0, "vllm/model_executor/models/eagle.py:153"), (_V0, "vllm/model_executor/models/eagle.py:51")))

# a LoRA adapter's matrices are copied into the layer's stacked buffers when it is activated (per
# request's adapter); a size that is not the layer's is an adapter made for another model
SIZES = (r"size of tensor a \(\d+\) must match the size of tensor b \(\d+\)"
          r"|expanded size of the tensor \(\d+\) must match the existing size \(\d+\)")
LORA_SHAPE = Signature(
    "vllm_lora_shape", "weights_unreadable", "a LoRA adapter's tensors do not fit the model",
    ("A LoRA adapter's matrix has another size than the layer it is applied to: the adapter was "
     "trained for another model (another hidden size); with speculative decoding, an adapter meant for "
     "the target is also applied to the draft model.",),
    patterns=(SIZES,), context=(r", in set_lora\s*$",), priority=81,
    sources=((_V0, "vllm/lora/models.py:408"), (_V0, "vllm/lora/layers.py:269"),
             ("0.34.0", "vllm/lora/model_manager.py:396"), ("0.34.0", "vllm/lora/layers/base.py:85")))

# (round 22) a layer's own weight_loader checks the checkpoint's tensor against its parameter before it
# copies it: "assert param.size() == loaded_weight.size(), (f"Tried to load weights of size {...}" f"to a
# parameter of size {...}")" (layers/linear.py:411-414 (0.34.0), :408 (0.33.0), :402 (0.30.0); no message
# in V0: :233 (0.6.4.post1), :241 (0.7.3)), and the sharded layers' "assert param_data.shape ==
# loaded_weight.shape" with none (linear.py:608 (0.34.0), :355 (0.6.4.post1); parameter.py, the MoE and
# vocab layers alike). Either the message, or an AssertionError raised by that comparison (its line the
# last frame's code): a tensor whose shape is not its parameter's, as the default loader's "Attempted to
# load weight (...) into parameter (...)" (vllm_weights_unreadable)
_TRIED = r"Tried to load weights of size (?:torch\.Size\()?\[[\d, ]*\]\)?\s*to a parameter of size"
_SHAPE_ASSERT_LAST = (r"^[ \t]*assert param(?:_data)?\.(?:shape|size\(\)) == loaded_weight\.(?:shape|size\(\))"
                      r"[^\n]*(?:\n(?![ \t]*File \")[^\n]*)*\Z")


def _loader_shape_detail(found: Found) -> str | None:
    said = regex(r"Tried to load weights of size (?:torch\.Size\()?(\[[^\]]*\])\)?\s*to a parameter of size "
                 r"(?:torch\.Size\()?(\[[^\]]*\])").search(found.text)
    shapes = f"A tensor of shape {said[1]} was offered to a parameter of shape {said[2]}: t" if said else "T"
    return (f"{shapes}he checkpoint was made for another configuration than the one vLLM built (another "
            "size or layer layout in config.json, another converter or quantization; for a draft model, a "
            "conversion for another speculative method or release).")


LOADER_SHAPE = Signature(
    "vllm_loader_shape", "weights_unreadable", "a checkpoint tensor does not fit its layer's parameter",
    ("A layer's weight loader refused a checkpoint tensor whose shape is not its parameter's: check that "
     "config.json (and `--quantization`, `--hf-overrides`) matches the weights, and for a draft model "
     "(`--speculative-config`) that it was converted for this method and release.",),
    types=r"AssertionError", patterns=(r".",), context=(rf"{_TRIED}|{_SHAPE_ASSERT_LAST}",),
    priority=81, phase="load_weights", detail=_loader_shape_detail,
    sources=(("0.34.0", "vllm/model_executor/layers/linear.py:412"),
             ("0.33.0", "vllm/model_executor/layers/linear.py:409"),
             ("0.30.0", "vllm/model_executor/layers/linear.py:403"),
             ("0.34.0", "vllm/model_executor/layers/linear.py:608"),
             (_V0, "vllm/model_executor/layers/linear.py:233"), (_V0, "vllm/model_executor/layers/linear.py:355"),
             ("0.7.3", "vllm/model_executor/layers/linear.py:241"),
             ("0.34.0", "vllm/model_executor/parameter.py:167")))

# --- arguments: the config's own checks -----------------------------------------------

# an exception raised in a check of vLLM's config classes (vllm/config/*.py; V0: vllm/config.py):
# __post_init__, the pydantic validators, _verify_args / verify_*; NotImplementedError is not
# wrapped by pydantic, so it arrives bare. The raising frame is the last one of the chain.
_CONFIG_CHECK = (r'vllm[/\\]config(?:[/\\]\w+)?\.py", line \d+, in (?:__init__|__post_init__|_?verify\w*'
                 r'|\w*validat\w*|_check\w*)\s*\n' + NO_LATER_FRAME)
CONFIG_CHECK = Signature(
    "vllm_config_check", "bad_argument", "vLLM's config refused the arguments",
    ("vLLM's config classes check the arguments (and the speculative config's JSON) when the engine "
     "config is built, before anything loads: the exception names the value or combination refused; "
     "change that flag or `--speculative-config` key, or use a release that supports it.",),
    patterns=(r".",), context=(_CONFIG_CHECK,), cut_ok=True, priority=34, phase="launch",
    sources=(("0.34.0", "vllm/config/speculative.py:1646"), ("0.34.0", "vllm/engine/arg_utils.py:2172"),
             ("0.34.0", "vllm/config/utils.py:77"), (_V0, "vllm/config.py:1428")))

# pydantic's line for a ValueError raised in a validator of a pydantic dataclass (vLLM's config
# classes): "Value error, MESSAGE [type=value_error, input_value=ArgsKwargs((), {...}), ...]"
_VALUE_ERROR_LINE = r"^\s*Value error, .{0,2000}?\[type=value_error, input_value=ArgsKwargs\("
CONFIG_VALUE_ERROR = Signature(
    "vllm_config_value_error", "bad_argument", "a vLLM config class refused a value",
    CONFIG_CHECK.advice, lines=(_VALUE_ERROR_LINE,), priority=36, phase="launch", fatal=True,
    sources=(("0.34.0", "vllm/config/utils.py:77"),
             ("pydantic 2", "pydantic_core ValidationError (Value error, ... [type=value_error])")))

# (round 79) SamplingParams checks its own values when it is built (__post_init__ calls _verify_args:
# sampling_params.py:351, the raise :416 (0.11.0); "max_tokens must be at least 1, got N." :417, :405 (0.13.0)): a
# program that drives the engine itself (a trainer's rollout, an offline LLM.generate) passes the value and dies of the
# ValueError with the generation it asked for. The OpenAI server's handlers build it for a request and answer that
# request (its frames there: request_error, not this)
_SAMPLING_CHECK = r'[/\\]sampling_params\.py", line \d+, in _verify_args\s*\n' + NO_LATER_FRAME
SAMPLING_PARAMS_REFUSED = Signature(
    "vllm_sampling_params_refused", "bad_argument", "vLLM's SamplingParams refused a value the caller passed",
    ("The program driving vLLM built SamplingParams with a value vLLM refuses (the message names it: a max_tokens "
     "below 1 is a prompt longer than the length budget the program subtracts it from). Fix the value where the "
     "program computes it (a shorter prompt, a larger max length), or have it skip such a prompt.",),
    types=r"(?:\w+\.)*ValueError", patterns=(r".",), context=(_SAMPLING_CHECK,),
    absent=(r"[/\\]entrypoints[/\\]openai[/\\]|[/\\]serving_\w+\.py\"|[/\\]api_server\.py\"",), priority=36,
    phase="serving",
    sources=(("vllm 0.11.0", "vllm/sampling_params.py:351"), ("vllm 0.11.0", "vllm/sampling_params.py:416"),
             ("vllm 0.13.0", "vllm/sampling_params.py:405")))

# the model's attention heads are split over the TP ranks (verify_with_parallel_config, which the
# engine config runs before anything loads; round 6)
_TP_HEADS = r"Total number of attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)"


def _tp_heads_detail(found: Found) -> str | None:
    said = regex(_TP_HEADS).search(found.text)
    if not said:
        return None
    heads, tp = int(said[1]), int(said[2])
    fits = [d for d in range(1, heads + 1) if heads % d == 0]
    near = [max(d for d in fits if d < tp)] + [d for d in fits if d > tp][:1]
    sizes = " or ".join(str(d) for d in near)
    return f"{heads} attention heads split evenly over `--tensor-parallel-size` {sizes} (now {tp})."


TP_HEADS = Signature(
    "vllm_tp_heads", "bad_argument", "the attention heads do not divide over the tensor-parallel ranks",
    ("Each tensor-parallel rank takes an equal share of the model's attention heads: pick a "
     "`--tensor-parallel-size` that divides them (and use the other GPUs for data or pipeline "
     "parallelism).",),
    patterns=(_TP_HEADS,), lines=(_TP_HEADS,), priority=88, phase="launch", fatal=True,
    detail=_tp_heads_detail,
    sources=(("0.34.0", "vllm/config/model.py:1581"), ("0.33.0", "vllm/config/model.py:1561"),
             ("0.30.0", "vllm/config/model.py:1428"), (_V0, "vllm/config.py:531")))

# a feature of the release that only the V2 model runner has, refused with the switch named
V2_RUNNER = Signature(
    "vllm_needs_v2_runner", "bad_argument", "the configuration needs vLLM's V2 model runner",
    ("This model or feature runs only on vLLM's V2 model runner: relaunch with "
     "VLLM_USE_V2_MODEL_RUNNER=1 in the environment (or drop the feature).",),
    patterns=(r"requires? (?:the )?V2 model runner", r"requires? VLLM_USE_V2_MODEL_RUNNER=1"),
    absent=(r"input_processor\.py",), priority=84, phase="launch",
    sources=(("0.30.0", "vllm/model_executor/models/qwen3_dflash.py:128"),
             ("0.33.0", "vllm/model_executor/models/qwen3_dflash.py:134"),
             ("0.30.0", "vllm/distributed/ec_transfer/ec_connector/cpu/connector.py:42")))

# (round 72) V1's AsyncLLM (or LLMEngine) built while the engine settings chose V0: each refuses when envs.VLLM_USE_V1
# is False (v1/engine/async_llm.py:142-147, v1/engine/llm_engine.py:51-56 (0.8.5.post1); async_llm.py:155-160
# (0.9.1)). Unset, VLLM_USE_V1 is decided while the engine config is built and set False where a setting is one V1
# does not run (engine/arg_utils.py:1107-1116, the fallback :1648-1656 (0.8.5.post1)); VLLM_USE_V1=0 sets it so: the
# launch's settings, refused before anything loads
V1_ENGINE_OFF = Signature(
    "vllm_v1_engine_off", "bad_argument", "V1's engine was built while the settings chose the V0 engine",
    ("The program built vLLM's V1 engine (AsyncLLM, LLMEngine), but the engine settings chose V0 "
     "(VLLM_USE_V1=0 in the environment, or, with it unset, a setting V1 does not run, named in the 'not "
     "supported by the V1 Engine. Falling back to V0' warning above): set VLLM_USE_V1=1, which names the "
     "setting V1 refuses, then drop that setting; or build the V0 engine (AsyncLLMEngine, LLMEngine) as "
     "the message says.",),
    patterns=(r"Using V1 (?:Async)?LLMEngine, but envs\.VLLM_USE_V1=False",), types=r"(?:\w+\.)*ValueError",
    priority=84, phase="launch",
    sources=(("vllm 0.8.5.post1", "vllm/v1/engine/async_llm.py:143"), ("vllm 0.9.1", "vllm/v1/engine/async_llm.py:155"),
             ("vllm 0.8.5.post1", "vllm/v1/engine/llm_engine.py:52"),
             ("vllm 0.8.5.post1", "vllm/engine/arg_utils.py:1116"),
             ("vllm 0.8.5.post1", "vllm/engine/arg_utils.py:1654")))

# (round 83) the CPU platform's attention selector refuses the V0 engine: get_attn_backend_cls raises "CPU backend only
# supports V1." when use_v1 is False (platforms/cpu.py:102 (0.10.0, 0.10.1.1), :103 (0.10.2), :106 (0.11.0)); V0 is
# the launch's choice (VLLM_USE_V1=0, or a setting V1 does not run, as V1_ENGINE_OFF says)
CPU_V1_ONLY = Signature(
    "vllm_cpu_v1_only", "bad_argument", "the CPU backend runs only vLLM's V1 engine",
    ("vLLM's CPU backend runs only the V1 engine, and the launch chose V0 (VLLM_USE_V1=0 in the environment, or a "
     "setting V1 does not run, named in the 'Falling back to V0' warning above): set VLLM_USE_V1=1 and drop that "
     "setting.",),
    patterns=(r"CPU backend only supports V1\.",), types=r"(?:\w+\.)*ValueError", priority=84, phase="launch",
    sources=(("vllm 0.10.0", "vllm/platforms/cpu.py:102"), ("vllm 0.10.1.1", "vllm/platforms/cpu.py:102"),
             ("vllm 0.10.2", "vllm/platforms/cpu.py:103"), ("vllm 0.11.0", "vllm/platforms/cpu.py:106")))

# (round 24) vLLM's Ray executor takes the placement group it runs in (the caller's, or Ray's current one:
# a Ray Serve deployment's) and refuses a bundle of more than one device: one worker per bundle, one
# device each (initialize_ray_cluster, v1/executor/ray_utils.py:346 (0.34.0), :601 (0.30.0);
# executor/ray_utils.py:268 (0.6.4.post1))
PLACEMENT_BUNDLE = Signature(
    "vllm_placement_bundle", "bad_argument", "the Ray placement group has a bundle of more than one GPU",
    ("vLLM runs one worker per placement-group bundle, each with one GPU: give the deployment (or the "
     "placement group vLLM runs in) one bundle of {\"GPU\": 1} per tensor-parallel rank, not one bundle "
     "holding them all.",),
    types=r"(?:\w+\.)*ValueError", patterns=(r"Placement group bundle cannot have more than 1 \w+\.",),
    priority=72, phase="launch",
    sources=(("0.34.0", "vllm/v1/executor/ray_utils.py:346"), ("0.30.0", "vllm/v1/executor/ray_utils.py:601"),
             (_V0, "vllm/executor/ray_utils.py:268")))

# (round 34) More devices asked (tensor x pipeline parallel size, the world size) than the Ray cluster has:
# inside a placement group vLLM refuses it at once (ValueError "The number of required GPUs exceeds the
# total number of available GPUs in the placement group. Required number of devices: ..."); without one it
# only warns in the same words and waits on the placement group it creates, the failure a ValueError after
# PG_WAIT_TIMEOUT, 1800 s (initialize_ray_cluster, executor/ray_utils.py:329-333, :342-344, _wait_until_pg_ready
# :226-249 (0.8.5.post1); v1/executor/ray_utils.py:351-355, :364-367 (0.34.0); 0.6.4.post1 raises in both,
# :274, :282). The warning (lines) is the cause of a start that ends in that wait. (round 42) The wait's own
# ValueError is the same refusal, also where Ray counts the GPUs but has them busy (executor/ray_utils.py:226-229
# (0.7.2); v1/executor/ray_utils.py:245-259 (0.34.0): "Tensor parallel size may exceed available GPUs").
# (round 97) 0.4.2-0.5 refuse in the same words where the Ray cluster (no placement group) has too few (:106, 0.4.2)
_PG_DEVICES = (r"The number of required \w+s exceeds the total number of available \w+s in the "
               r"(?:placement group|cluster)")
PLACEMENT_DEVICES = Signature(
    "vllm_placement_devices", "bad_argument", "more GPUs asked than the Ray cluster has (or has free)",
    ("The launch asks for more GPUs (`--tensor-parallel-size` times `--pipeline-parallel-size`) than the "
     "Ray cluster has, or has free, so vLLM waits on a placement group that cannot be made (up to 30 "
     "minutes, then ValueError: Cannot provide a placement group): `ray status` shows the GPUs Ray sees "
     "and those in use; ask for no more (a smaller `--tensor-parallel-size`), free them, or add GPUs first.",),
    patterns=(_PG_DEVICES, r"\bCannot provide a placement group (?:of|requiring) "), lines=(_PG_DEVICES,),
    priority=72, phase="launch",
    sources=(("0.34.0", "vllm/v1/executor/ray_utils.py:352"), ("0.34.0", "vllm/v1/executor/ray_utils.py:365"),
             (_V0, "vllm/executor/ray_utils.py:274"), (_V0, "vllm/executor/ray_utils.py:282"),
             ("vllm 0.7.2", "vllm/executor/ray_utils.py:227"), ("0.34.0", "vllm/v1/executor/ray_utils.py:246"),
             ("vllm 0.4.2", "vllm/executor/ray_utils.py:106"), ("vllm 0.5.0", "vllm/executor/ray_utils.py:106")))

# --- (round 9) the command line, the checkpoint files, the KV cache's share ------------------

# vLLM's argument parser (FlexibleArgumentParser: vllm/utils.py up to 0.8, vllm/utils/argparse_utils.py
# since) raises ValueError itself for a command line it refuses (`vllm serve --model X`, utils.py:1343
# (0.8.5); no model or a bad --config, argparse_utils.py:366, :555, :580, :635 (0.34.0)); 0.6 and 0.7
# refuse `--model` in the serve command (scripts.py:34 (0.6.4.post1), entrypoints/cli/serve.py:27
# (0.7.3)). Since 0.30 the `--model` text is only a warning line, which no exception carries
_PARSER_RAISED = (r'vllm[/\\]utils(?:[/\\]argparse_utils)?\.py", line \d+, in (?:parse_args|_pull_args_from_config'
                  r'|_?load_config_file)\s*\n' + NO_LATER_FRAME
                  + r"|^(?:ValueError: )?With `vllm serve`, you should provide the model as a positional argument")
CLI_REFUSED = Signature(
    "vllm_cli_refused", "bad_argument", "vLLM's argument parser refused the command line",
    ("vLLM's own argument parser refused the command line before anything started: the message "
     "names what to change (`vllm serve MODEL --flag value`: the model is the first positional "
     "argument, or `model:` in the `--config` YAML file).",),
    patterns=(r".",), context=(_PARSER_RAISED,), priority=86, phase="launch",
    sources=(("0.34.0", "vllm/utils/argparse_utils.py:366"),
             ("0.34.0", "vllm/utils/argparse_utils.py:580"), ("0.34.0", "vllm/utils/argparse_utils.py:635"),
             (_V0, "vllm/scripts.py:34"), ("0.7.3", "vllm/entrypoints/cli/serve.py:27")))

# A model's load_weights iterates the loader's checkpoint iterator (the generic AutoWeightsLoader's
# generators over it, model_executor/models/utils.py:99, :108 (0.7.3), :281, :291 (0.34.0)); below
# that loop only the loader's generators run, which open and read the checkpoint files
# (model_loader/loader.py:351 -> weight_utils.py:425 safe_open, :460 torch.load (0.7.3)). A
# traceback cut right at that loop (its exception line missing) failed reading the files
_WEIGHTS_LOOP = (r'vllm[/\\]model_executor[/\\]models[/\\]\w+\.py", line \d+, in (?:load_weights|<genexpr>'
                 r'|_groupby_prefix|_load_module)\s*\n[ \t]*for [\w, ()]+ in (?:weights|group)\b[^\n]*\Z')
WEIGHTS_ITERATION_CUT = Signature(
    "vllm_weights_iteration_cut", "weights_unreadable", "reading the checkpoint files failed (the traceback is cut)",
    ("The traceback stops where the model's weight loader reads the checkpoint files (the error line "
     "is cut off): a shard that is truncated or not a safetensors / PyTorch file (a Git LFS pointer, an "
     "interrupted download). Check the files (`huggingface-cli download` again, or compare sizes) and "
     "that `--load-format` matches them.",),
    patterns=(r".",), context=(_WEIGHTS_LOOP,), cut_ok=True, priority=30, phase="load_weights",
    sources=(("0.7.3", "vllm/model_executor/models/utils.py:99"), ("0.7.3", "vllm/model_executor/models/utils.py:108"),
             ("0.34.0", "vllm/model_executor/models/utils.py:281"),
             ("0.7.3", "vllm/model_executor/model_loader/weight_utils.py:425")))

# V1's worker logs the memory left for the KV cache after profiling ("Available KV cache memory: %s
# GiB", v1/worker/gpu_worker.py:641 (0.30.0), :796 (0.34.0)); at or below zero the engine's check
# raises "No available memory for the cache blocks" (v1/core/kv_cache_utils.py:878 (0.30.0),
# kv_cache_planning.py:106 (0.34.0)). A negative figure explains an engine traceback cut right after it
_KV_NEGATIVE = r"Available KV cache memory: -\d"
KV_NEGATIVE = Signature(
    "vllm_kv_negative", "kv_pool_oom", "no GPU memory was left for the KV cache (a negative share)",
    ("After the weights and the profiling run nothing of the `--gpu-memory-utilization` share was left "
     "for the KV cache (the figure is negative): raise `--gpu-memory-utilization`, or lower "
     "`--max-num-batched-tokens` / `--max-model-len` (a smaller profiling batch), or use more GPUs.",),
    lines=(_KV_NEGATIVE,), priority=30, phase="memory_pool", explains=True,
    sources=(("0.30.0", "vllm/v1/worker/gpu_worker.py:641"), ("0.34.0", "vllm/v1/worker/gpu_worker.py:796"),
             ("0.30.0", "vllm/v1/core/kv_cache_utils.py:878"), ("0.34.0", "vllm/v1/core/kv_cache_planning.py:106")))

# (round 28) a model's load_weights looks each checkpoint name up with "param = params_dict[name]"
# (0.7.3 models/llama.py:440, 0.34.0 models/llama4.py:620): a KeyError raised at that line, its last
# frame, is a checkpoint tensor the model has no parameter or buffer for, whatever the name ends in (an
# activation's "act_fn.beta"; weight_name_unknown takes the usual weight/bias/scale names anywhere)
_PARAMS_LOOKUP = (r'vllm[/\\]model_executor[/\\]models[/\\]\w+\.py", line \d+, in load_weights\w*\s*\n'
                  r'[ \t]*param = params_dict\[name\]\s*\n' + NO_LATER_FRAME)
PARAMS_LOOKUP = Signature(
    "vllm_params_lookup", "weights_unreadable",
    "the checkpoint holds a tensor the model has no parameter for",
    ("The checkpoint names a tensor this vLLM release's implementation of the model does not have (the "
     "KeyError's name): a checkpoint made for a newer implementation, or converted for another model or "
     "quantization. Use a vLLM release whose model code matches the checkpoint, or the checkpoint's "
     "revision made for this one.",),
    types=r"KeyError", patterns=(r"^KeyError: '(?:[\w-]+\.)+[\w-]+'",), context=(_PARAMS_LOOKUP,),
    priority=79, phase="load_weights",
    sources=(("0.7.3", "vllm/model_executor/models/llama.py:440"),
             ("0.34.0", "vllm/model_executor/models/llama4.py:620")))

# --- PD disaggregation: the two sides' KV caches do not fit -------------------------------

# NIXL's handshake checks the remote side's KV layout against its own (_validate_remote_agent_handshake):
# another count of KV layers means no block the prefill side sends fits the decode side's cache
_KV_LAYERS = r"Number of KV layers must match between (?:prefill and decode|producer and consumer)"
PD_KV_LAYOUT = Signature(
    "vllm_pd_kv_layout", "pd_transfer", "the prefill and decode sides' KV caches have other layouts",
    ("The prefill and decode instances hold KV caches of different layouts (another count of KV layers): "
     "both must serve the same model with the same layer layout; a speculative drafter on one side only "
     "adds its layers there. Give both sides the same `--speculative-config` (or none) and model.",),
    patterns=(_KV_LAYERS,), lines=(rf"^(?:AssertionError: )?{_KV_LAYERS}",), priority=85, running=True,
    sources=(("0.30.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:2369"),
             ("0.33.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:2905"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:2970")))

# (round 41) a parallel layer's weight_loader takes this rank's shard of the checkpoint's tensor with
# "loaded_weight.narrow(output_dim, start_idx, shard_size)" (0.9.2 layers/linear.py:706, 0.10.2 :720
# MergedColumnParallelLinear; :484, :1002, :1132 the other layers), and torch's narrow refuses a shard past the
# tensor's end: "start (S) + length (L) exceeds dimension size (N)." (aten/src/ATen/native/TensorShape.cpp,
# narrow's TORCH_CHECK): the checkpoint's tensor is smaller than the one this layer was built for
_NARROW = r"\bstart \(\d+\) \+ length \(\d+\) exceeds dimension size \(\d+\)"

LOADER_NARROW = Signature(
    "vllm_loader_narrow", "weights_unreadable", "a checkpoint tensor is smaller than its layer's shard",
    LOADER_SHAPE.advice, types=r"RuntimeError", patterns=(_NARROW,),
    context=(r", in weight_loader\w*\s*$", r"^\s*\w+ = loaded_weight\.narrow\("), priority=81,
    phase="load_weights",
    sources=(("vllm 0.9.2", "vllm/model_executor/layers/linear.py:706"),
             ("vllm 0.10.2", "vllm/model_executor/layers/linear.py:720"),
             ("torch", "aten/src/ATen/native/TensorShape.cpp (narrow: start (S) + length (L) exceeds dimension "
                       "size (N).)")))

# (round 94) vLLM's OpenVINO backend loads a folder's OpenVINO IR as it is (OVModelForCausalLM.from_pretrained with
# use_cache left True, model_executor/model_loader/openvino.py:137-143 (0.5.1)); optimum-intel reads the cache from
# the IR (its past_key_values inputs, modeling_decoder.py:122) and refuses an IR exported without them, "`use_cache`
# was set to `True` but the loaded model only supports `use_cache=False`" (:158-164, :170-171, optimum-intel 1.18.1).
# The checkpoint does not fit the loader; the reverse text (a caller's use_cache=False) is not read
_OV_NO_CACHE = r"`use_cache` was set to `True` but the loaded model only supports `use_cache=False`"
OPENVINO_IR_NO_CACHE = Signature(
    "vllm_openvino_ir_no_cache", "weights_unreadable", "the OpenVINO IR was exported without its KV cache",
    ("vLLM's OpenVINO backend loads the model folder's OpenVINO IR as it is, and this IR was exported without "
     "past key values (a `--task text-generation` export): export it again with them, `optimum-cli export "
     "openvino --model MODEL --task text-generation-with-past DIR` (quantization flags as before), or give vLLM "
     "the original checkpoint and let it convert.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_OV_NO_CACHE,), priority=80, phase="load_weights",
    sources=(("vllm 0.5.1", "vllm/model_executor/model_loader/openvino.py:137"),
             ("optimum-intel 1.18.1", "optimum/intel/openvino/modeling_decoder.py:122"),
             ("optimum-intel 1.18.1", "optimum/intel/openvino/modeling_decoder.py:159"),
             ("optimum-intel 1.18.1", "optimum/intel/openvino/modeling_decoder.py:171")))

SIGNATURES: list[Signature] = [NO_SUCH_PARAM, NOT_INITIALIZED, EAGLE_BIAS, LORA_SHAPE, LOADER_SHAPE, LOADER_NARROW,
                               CONFIG_CHECK, CONFIG_VALUE_ERROR, SAMPLING_PARAMS_REFUSED, TP_HEADS, V2_RUNNER,
                               V1_ENGINE_OFF, CPU_V1_ONLY, *archs.SIGNATURES, PLACEMENT_BUNDLE,
                               PLACEMENT_DEVICES, PD_KV_LAYOUT,
                               CLI_REFUSED, WEIGHTS_ITERATION_CUT, KV_NEGATIVE, PARAMS_LOOKUP, OPENVINO_IR_NO_CACHE]
