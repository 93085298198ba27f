"""vLLM: a model it cannot build from the model's config (``arch_unsupported``): a config class without a
setting vLLM reads, a config that names no architecture (round 8's ValueError; round 71: V0's warning that
explains the crash right after it), a MoE class that finds no MoE layer, the Transformers fallback that cannot
shard the architecture, (round 77) V0's max-length check asserting a rope_scaling layout it does not know, (round 79)
the registry's failure to inspect a listed architecture's class (kind unknown: its cause is logged elsewhere), (round
85) get_hf_text_config's assert that a text_config holds the text model's heads, (round 95) a multimodal argument
for a model this release does not build as multimodal (``bad_argument``, as the corpus labels it), (round 96) LoRA
enabled for a model class that has no LoRA support (``bad_argument``). Split
from :mod:`.loading` (round 71), whose list holds these in their place.

Each is a text or a frame of vLLM's own source, cited ``(release, "vllm/path.py:line")`` as in :mod:`.loading`.
"""

from __future__ import annotations

from ddlab.vllm_crashes.library import V0 as _V0
from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES"]

# (round 7) vLLM reads the text model's settings (num_attention_heads, hidden_size ...) from the
# model's config class (config.py:526 (0.6.4.post1); transformers_utils/model_arch_config_convertor.py:557
# (0.30.0)), also a draft's while the speculative config is built (engine/arg_utils.py:2172 (0.34.0)):
# a config class without one is a layout vLLM cannot read, as SGLang's config_layout_unknown. vLLM's
# own engine config classes (VllmConfig, CacheConfig ...) lacking a field are a plugin or release
# mismatch, not the model's
_ENGINE_CONFIGS = (r"'(?:Vllm|Model|Cache|Parallel|Scheduler|Compilation|Speculative|Device|Load|LoRA|Lora"
                   r"|Observability|KVTransfer|KVEvents|StructuredOutputs|DecodingConfig|Pooler|Multi\w*)Config'")
MODEL_CONFIG_LAYOUT = Signature(
    "vllm_model_config_layout", "arch_unsupported", "vLLM cannot read a setting of the model's config",
    ("The model's (or the draft's) config class lacks a setting vLLM reads to build the engine: its "
     "layout is one this release does not know (a speculator, multimodal or remote-code config). Use a "
     "vLLM release that lists the architecture (or method), or a checkpoint whose config has the setting.",),
    types=r"(?:\w+\.)*AttributeError", patterns=(r"'\w*Config' object has no attribute '\w+'",),
    absent=(rf"{_ENGINE_CONFIGS} object has no attribute",), priority=72, phase="launch",
    sources=((_V0, "vllm/config.py:526"),
             ("0.30.0", "vllm/transformers_utils/model_arch_config_convertor.py:557"),
             ("0.34.0", "vllm/engine/arg_utils.py:2172")))

# (round 8) the model registry picks the model class by the architectures the model's config names
# (inspect_model_cls / resolve_model_cls, model_executor/models/registry.py:1454, :1507 (0.34.0), :1375
# (0.33.0), :1326 (0.30.0)), run while ModelConfig is built (pydantic words it "Value error, ..."): a
# config naming none is an architecture vLLM cannot tell. V0 only warns (registry.py:376 (0.6.4.post1))
_NO_ARCH = r"No model architectures are specified"
NO_ARCHITECTURES = Signature(
    "vllm_no_architectures", "arch_unsupported", "the model's config names no architecture",
    ("The model's config.json names no `architectures`, so vLLM cannot pick a model class: a "
     "checkpoint of a model type that needs its own plug-in or code (register it, or "
     "`--trust-remote-code` where the repo ships code), or a config missing the key: add it, or "
     "`--hf-overrides {\"architectures\":[\"XForCausalLM\"]}` with the model's class.",),
    types=r"(?:\w+\.)*(?:ValueError|ValidationError)", patterns=(_NO_ARCH,),
    lines=(rf"^\s*Value error, {_NO_ARCH}",), priority=84, phase="launch",
    sources=(("0.34.0", "vllm/model_executor/models/registry.py:1454"),
             ("0.34.0", "vllm/model_executor/models/registry.py:1507"),
             ("0.33.0", "vllm/model_executor/models/registry.py:1375"),
             ("0.30.0", "vllm/model_executor/models/registry.py:1326")))

# (round 71) Up to 0.10.0 the registry only warns of a config naming no architectures ("No model architectures are
# specified", _normalize_archs: model_executor/models/registry.py:400 (0.7.3), :376 (0.6.4.post1), :499 (0.10.0)) and
# goes on with what it was given: None (a config.json with no "architectures") is iterated at once, "'NoneType'
# object is not iterable" (registry.py:403 (0.7.3), :503 (0.10.0) filter; inspect_model_cls's loop :386 (0.6.4.post1)),
# and an empty list leaves no class, _raise_for_unsupported's ValueError (:420 (0.7.3)): every path raises while
# ModelConfig is built (config.py:426 (0.7.3), from create_model_config, engine/arg_utils.py:1127). The warning
# explains the crash right after it that nothing else names (a bare TypeError, a traceback cut before its line)
V0_NO_ARCHITECTURES = Signature(
    "vllm_no_architectures_warned", "arch_unsupported",
    "the model's config names no architecture (V0's warning, then the registry fails on it)",
    NO_ARCHITECTURES.advice, lines=(rf"^{_NO_ARCH}\s*$",), priority=30, phase="launch", explains=True,
    sources=(("0.7.3", "vllm/model_executor/models/registry.py:400"),
             ("0.7.3", "vllm/model_executor/models/registry.py:403"),
             ("0.6.4.post1", "vllm/model_executor/models/registry.py:376"),
             ("vllm 0.10.0", "vllm/model_executor/models/registry.py:499"),
             ("0.7.3", "vllm/config.py:426")))

# (round 24) a MoE model class finds, after building the layers the checkpoint's config describes, not
# one MoE layer, and raises RuntimeError("No <Name> layer found in model.layers.") (hunyuan_v1.py:1013,
# glm4_moe.py:622 (0.11.1); glm4_moe.py:509, hy_v3.py:486, afmoe.py:538, openpangu.py:1191 (0.34.0)): the
# config is of a layout (dense) the class does not handle. Others only log it (llama4.py:756): no raise
MOE_LAYERS_MISSING = Signature(
    "vllm_moe_layers_missing", "arch_unsupported",
    "the MoE model class found no MoE layer in the model's config",
    ("vLLM built the MoE class the checkpoint's `architectures` names, but its config describes no MoE "
     "layer (a dense variant under the MoE name, or a config this release reads otherwise): serve it "
     "under its dense architecture, or use a vLLM release that lists the variant.",),
    types=r"RuntimeError", patterns=(r"No \w+ layer found in model\.layers\.",),
    priority=72, phase="load_weights",
    sources=(("0.34.0", "vllm/model_executor/models/glm4_moe.py:509"),
             ("0.34.0", "vllm/model_executor/models/hy_v3.py:486"),
             ("0.34.0", "vllm/model_executor/models/afmoe.py:538"),
             ("0.34.0", "vllm/model_executor/models/openpangu.py:1191")))

# (round 36) an architecture vLLM does not implement falls back to its Transformers backend ("X has no vLLM
# implementation, falling back to Transformers implementation.", 0.7.3 model_executor/model_loader/utils.py:78-81),
# which shards only a model whose Transformers class has a tensor-parallel plan, and raises while the model is
# built where it has none and the tensor-parallel size is above 1: "Trying to run tensor parallelization but
# the model does not support it yet!" (0.7.3 model_executor/models/transformers.py:185-189), f"{type(self.model)}
# does not support tensor parallel yet!" (0.8.5.post1 :235-236, 0.9.1 :273-274, 0.10.0 :547-548), f"... does
# not support tensor parallel. {tip}" (0.11.1 models/transformers/base.py:266-272, 0.20.0 :478-484). From
# 0.27.1 it only warns ("does not define a tensor parallel plan", transformers/base.py:440-451)
_NO_TP_PLAN = (r"(?:Trying to run tensor parallelization but the model does not support it yet!"
               r"|<class '[\w.]+'> does not support tensor parallel(?: yet!|\. ))")
FALLBACK_NO_TP = Signature(
    "vllm_transformers_fallback_no_tp", "arch_unsupported",
    "vLLM's Transformers fallback cannot shard this architecture over tensor-parallel ranks",
    ("vLLM has no implementation of this architecture and serves it through its Transformers backend, "
     "which shards only models whose Transformers class defines a tensor-parallel plan; this one does not. "
     "Use a vLLM release that implements the architecture (its supported-models list), or serve it with "
     "`--tensor-parallel-size 1` (pipeline parallelism or a quantized checkpoint to fit it).",),
    types=r"ValueError", patterns=(_NO_TP_PLAN,), lines=(_NO_TP_PLAN,), priority=72, phase="load_weights",
    sources=(("0.7.3", "vllm/model_executor/models/transformers.py:188"),))

# (round 98) the Transformers backend builds the model on the meta device and rebuilds each module that holds a buffer
# left there from the config alone, ``new_buffer = getattr(type(module)(self.config), name)`` in init_buffers
# (0.8.3 model_executor/models/transformers.py:297, 0.8.5.post1 :296, 0.9.1 :350, 0.9.2 :350): a module of the
# model's own code whose __init__ takes more than the config (MiniMax's attention, layer_idx) cannot be rebuilt so.
# The fallback cannot build this architecture, which this release does not implement itself
_BUFFER_REBUILD = r"in init_buffers\s*\n[ \t]*new_buffer = getattr\(type\(module\)\(self\.config\), name\)"
FALLBACK_BUFFER_MODULE = Signature(
    "vllm_transformers_fallback_buffer_module", "arch_unsupported",
    "vLLM's Transformers fallback cannot rebuild one of the model's modules from its config",
    ("vLLM has no implementation of this architecture and serves it through its Transformers backend, which "
     "rebuilds each module holding a buffer from the model config alone; this model's module needs more "
     "arguments. Use a vLLM release that implements the architecture (its supported-models list, or the "
     "architecture name vLLM registers for this model in `architectures` of config.json), or a newer vLLM whose "
     "Transformers backend no longer rebuilds modules so.",),
    types=r"TypeError", patterns=(r"__init__\(\) missing \d+ required (?:positional|keyword-only) arguments?: ",),
    context=(_BUFFER_REBUILD,), priority=72, phase="load_weights",
    sources=(("vllm 0.9.2", "vllm/model_executor/models/transformers.py:350"),
             ("vllm 0.9.1", "vllm/model_executor/models/transformers.py:350"),
             ("vllm 0.8.5.post1", "vllm/model_executor/models/transformers.py:296")))

# (round 77) V0's ModelConfig derives the model's length from its rope_scaling (_get_and_verify_max_len) and asserts
# a "factor" for every rope type it does not list as factorless: ``assert "factor" in rope_scaling`` (config.py:1287
# (0.5.0), :1426 (0.5.1), :1535 (0.5.4), :1746 (0.6.2), after its own mrope case :1743-1744); 0.6.3.post1 reads
# ``rope_scaling.get("factor", 1.0)`` (:1754). The model's rope_scaling has a layout this release does not know
# (Qwen2-VL's mrope before 0.6.2): the bare assert, its code line under that frame
_ROPE_FACTOR = r'in _get_and_verify_max_len\s*\n[ \t]*assert "factor" in rope_scaling[ \t]*$'
ROPE_FACTOR_MISSING = Signature(
    "vllm_rope_factor_missing", "arch_unsupported", "vLLM does not know the model's rope_scaling layout",
    ("vLLM's model config asserts that the model's `rope_scaling` has a `factor`: this release does not know the "
     "model's rope type (an mrope or other layout newer than it). Use a vLLM release that supports the model; a "
     "transformers release that rewrites rope_scaling (`type` -> `rope_type`) can cause it too: install the "
     "transformers this vLLM pins.",),
    types=r"AssertionError", patterns=(r"",), context=(_ROPE_FACTOR,), priority=72, phase="launch",
    sources=(("vllm 0.5.0", "vllm/config.py:1287"), ("vllm 0.5.1", "vllm/config.py:1426"),
             ("vllm 0.5.4", "vllm/config.py:1535"), ("vllm 0.6.2", "vllm/config.py:1746"),
             ("vllm 0.6.3.post1", "vllm/config.py:1754")))

# (round 85) get_hf_text_config asserts that a config with a text_config has the text model's settings there:
# ``assert hasattr(config.text_config, "num_attention_heads")``, "Assert here to fail early if transformers config
# doesn't align with this assumption" (0.7.2 vllm/transformers_utils/config.py:564-567, 0.6.4.post1 :545, 0.7.3 :708;
# 0.8.5.post1 ``assert hasattr(text_config, ...)`` :776), run from ModelConfig.__init__: a multimodal config whose text
# settings are not where vLLM reads them, a layout it cannot read (as MODEL_CONFIG_LAYOUT): the bare assert under
# that frame
_TEXT_HEADS = (r'in get_hf_text_config\s*\n[ \t]*assert hasattr\((?:config\.)?text_config, "num_attention_heads"\)'
               r'[ \t]*$')
TEXT_CONFIG_LAYOUT = Signature(
    "vllm_text_config_layout", "arch_unsupported", "vLLM cannot find the text model's settings in the model's config",
    ("vLLM reads a multimodal model's text settings (`num_attention_heads` ...) from its config's `text_config`, "
     "and this config's has none there: a layout this release does not know, or a config.json rewritten by a "
     "merge or export tool. Use a vLLM release that lists the architecture, or the base model's config.json.",),
    types=r"AssertionError", patterns=(r"",), context=(_TEXT_HEADS,), priority=72, phase="launch",
    sources=(("vllm 0.7.2", "vllm/transformers_utils/config.py:567"),
             ("vllm 0.6.4.post1", "vllm/transformers_utils/config.py:545"),
             ("0.7.3", "vllm/transformers_utils/config.py:708"),
             ("vllm 0.8.5.post1", "vllm/transformers_utils/config.py:776")))

# (round 79) the model registry's _raise_for_unsupported raises "Model architectures [...] failed to be inspected.
# Please check the logs for more details." where an architecture is one vLLM lists but its class could not be
# imported or inspected (registry.py:372 (0.7.3), :438 (0.9.2), :803 (0.13.0)); "... are not supported for now"
# (:377 (0.7.3), :820 (0.13.0)) is the unknown architecture (models.py ARCH_UNSUPPORTED). The architecture is known:
# the cause is the failure logged above it (an import error, a package of another release), which the paste may not
# show, so the kind is unknown, as the corpus labels the bare text (rounds 20, 58), also where pydantic wraps it while
# ModelConfig is built ("Value error, ..."), which is no argument refused (signatures.py CONFIG_INVALID)
_INSPECT_FAILED = r"Model architectures \[[^\]\n]*\] failed to be inspected"
ARCH_INSPECT_FAILED = Signature(
    "vllm_arch_inspect_failed", "unknown", "vLLM could not inspect the model class the config names",
    ("vLLM lists the model's architecture but could not import or inspect its class; the lines above the error "
     "(the inspection's own traceback) name why: a transformers or other package too old or too new for this "
     "vLLM, a model file that fails to import. Install the versions this vLLM pins, or a vLLM release that "
     "supports the model.",),
    types=r"(?:\w+\.)*(?:ValueError|ValidationError)", patterns=(_INSPECT_FAILED,),
    lines=(rf"^\s*(?:Value error, )?{_INSPECT_FAILED}",), priority=84, phase="launch",
    sources=(("0.7.3", "vllm/model_executor/models/registry.py:372"),
             ("vllm 0.9.2", "vllm/model_executor/models/registry.py:438"),
             ("vllm 0.13.0", "vllm/model_executor/models/registry.py:803")))

# (round 95) ModelConfig builds a MultiModalConfig only where the registry lists the architecture as multimodal, and
# otherwise refuses the multimodal arguments: "`limit_mm_per_prompt` is only supported for multimodal models."
# (config.py:223 (0.6.3.post1), :482 (0.8.3), :590 (0.8.5.post1), :708 (0.9.2), :775 (0.10.0); 0.6.2 :238 without
# the backquotes), "`mm_processor_kwargs` is only supported ..." (:711 (0.9.2)), raised while the engine config is
# built (create_model_config): the flag refused for this model, bad_argument (round 18's vs21 reads the same text
# under pydantic's "Value error, " as CONFIG_INVALID, ranked above it). A model the release does not know as
# multimodal (an architecture newer than it, run through the Transformers fallback) is the other cause, which the
# advice names
_MM_ONLY = r"`?(?:limit_mm_per_prompt|mm_processor_kwargs)`? is only supported for multimodal models"
MM_ARGS_TEXT_MODEL = Signature(
    "vllm_mm_args_text_model", "bad_argument", "a multimodal argument for a model vLLM does not build as multimodal",
    ("vLLM refuses `--limit-mm-per-prompt` (or `--mm-processor-kwargs`) because the model it resolved is not a "
     "multimodal one in this release's registry: drop the flag for a text-only model, or, for a vision model, "
     "use a vLLM release that lists its architecture (the supported-models page; an architecture it does not "
     "know runs through the text-only Transformers fallback).",),
    types=r"(?:\w+\.)*(?:ValueError|ValidationError)", patterns=(_MM_ONLY,),
    lines=(rf"^\s*(?:Value error, )?{_MM_ONLY}",), priority=35, phase="launch",
    sources=(("vllm 0.8.3", "vllm/config.py:482"), ("vllm 0.8.5.post1", "vllm/config.py:590"),
             ("vllm 0.9.2", "vllm/config.py:708"), ("vllm 0.10.0", "vllm/config.py:775"),
             ("vllm 0.6.3.post1", "vllm/config.py:223")))

# (round 96) the loader building a model whose class does not support LoRA while the engine has a LoRA config (the
# server's --enable-lora): _get_model_initialization_kwargs raises "Model CLASS does not support LoRA, but LoRA is
# enabled. Support for this model may be added in the future. ..." (model_executor/model_loader/loader.py:74 (0.5.0),
# :124 (0.5.4), :134 (0.6.2), :133 (0.6.3.post1)), inside load_model, as the model is built: the flag refused for
# this model, bad_argument. The workers' "<class ...> does not support LoRA" (worker/worker_base.py:126 (0.6.4.post1))
# and V1's "V1 does not support LoRA yet." are other texts, not read here
_LORA_UNSUPPORTED = r"Model \w+ does not support LoRA, but LoRA is enabled"
LORA_UNSUPPORTED_MODEL = Signature(
    "vllm_lora_unsupported_model", "bad_argument", "LoRA enabled for a model class without LoRA support",
    ("vLLM's class for this model does not support LoRA adapters, and the engine was started with LoRA enabled "
     "(`--enable-lora`, `--lora-modules`, or `enable_lora=True` in LLM(...)): start it without them, or serve the "
     "adapter merged into the weights (PEFT's merge_and_unload), or use a vLLM release whose supported-models page "
     "marks the architecture with LoRA support.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_LORA_UNSUPPORTED,), lines=(rf"^\s*{_LORA_UNSUPPORTED}",), priority=35,
    sources=(("vllm 0.5.0", "vllm/model_executor/model_loader/loader.py:74"),
             ("vllm 0.5.4", "vllm/model_executor/model_loader/loader.py:124"),
             ("vllm 0.6.2", "vllm/model_executor/model_loader/loader.py:134"),
             ("vllm 0.6.3.post1", "vllm/model_executor/model_loader/loader.py:133")))

SIGNATURES: list[Signature] = [MODEL_CONFIG_LAYOUT, NO_ARCHITECTURES, V0_NO_ARCHITECTURES, MOE_LAYERS_MISSING,
                               FALLBACK_NO_TP, FALLBACK_BUFFER_MODULE, ROPE_FACTOR_MISSING, TEXT_CONFIG_LAYOUT,
                               ARCH_INSPECT_FAILED, MM_ARGS_TEXT_MODEL, LORA_UNSUPPORTED_MODEL]
