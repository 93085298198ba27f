"""The model SGLang is asked to serve: an architecture, a model type or a config layout it does not know.

Texts: transformers' (an unknown model type or configuration class; a KeyError of
CONFIG_MAPPING; a GGUF architecture its GGUF loader does not map), SGLang's model
registry ("Model architectures [...] are not supported for now"; before registry.py,
0.2/0.3: "Unsupported architectures: X. Supported list: [...]"), its fallback to
transformers' implementation ("Cannot find model module. 'X' is not a registered model in
the Transformers library", or "X has no SGlang implementation and the Transformers implementation
is not compatible with SGLang."), its multimodal processor registry, and ``ModelConfig``
reading text settings from a config class of a layout it does not know. The kind is
``arch_unsupported``: a newer transformers or SGLang, or a processor whose module failed
to import. One text here is ``model_not_found``: a model path naming a file, which transformers reads
as the config itself and cannot decode (:data:`MODEL_PATH_IS_A_FILE`).
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "ARCH_UNSUPPORTED", "MODEL_TYPE_KEY", "CONFIG_WITHOUT_MODEL_TYPE"]

_NEWER_ARCH = ("The checkpoint's model type is newer than the installed transformers (or this "
               "SGLang): upgrade transformers to a release that knows it, or SGLang (its pin moves "
               "with new models); `--trust-remote-code` helps only if the repo ships its own code.")
_ARCH_SOURCES = (("transformers 5.19.0", "transformers/models/auto/configuration_auto.py:432"),
                 ("transformers 5.19.0", "transformers/models/auto/configuration_auto.py:107"),
                 ("0.4.10.post2", "sglang/srt/models/registry.py:33"),
                 ("0.5.10", "sglang/srt/models/registry.py:49"),
                 ("0.5.23", "sglang/srt/models/registry.py:64"),
                 ("vllm 0.6.3.post1", "vllm/model_executor/models/registry.py:318"),
                 ("vllm 0.21.0", "vllm/model_executor/models/registry.py:1014"),
                 # SGLang's own registry before it had a module of its own (load_model_cls_srt,
                 # patched into vLLM's ModelRegistry): "Unsupported architectures: X. Supported list: [...]"
                 ("sglang 0.3.0", "sglang/srt/model_executor/model_runner.py:618"))

# the registry's refusal cut by the paste right after "are not supported" (vLLM 0.6.3.post1
# model_executor/models/registry.py:318, 0.13.0 :820, 0.21.0 :1014: "Model architectures [...] are not
# supported for now. Supported architectures: [...]"): the bracketed list then the refusal decide, whatever of
# " for now." the cut keeps; the message must end there (another "not supported ..." sentence is no refusal)
_CUT_REFUSAL = r"Model architectures? \[[^\]\n]*\] (?:are|is) not supported(?: (?:f(?:o(?:r(?: (?:no?)?)?)?)?)?)?\s*$"

ARCH_UNSUPPORTED = Signature(
    "arch_unsupported", "arch_unsupported", "the model's architecture is unknown to this install",
    (_NEWER_ARCH,),
    patterns=(r"does not recognize this architecture",
              r"Model architectures? .{0,300}? not supported for now", _CUT_REFUSAL,
              r"Unrecognized model_type", r"Unrecognized configuration class",
              r"Unsupported architectures: \S+\. Supported list: \["),
    lines=(r"does not recognize this architecture", r"are not supported for now\.", _CUT_REFUSAL,
           r"Unsupported architectures: \S+\. Supported list: \["),
    priority=84, phase="launch", sources=_ARCH_SOURCES)

MODEL_TYPE_KEY = Signature(
    "model_type_key", "arch_unsupported", "transformers has no config class for the model type",
    (_NEWER_ARCH,),
    types=r"KeyError", patterns=(r"^KeyError: '[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*'$",),
    context=(r"configuration_auto\.py|CONFIG_MAPPING|get_config|AutoConfig|model_config\.py",),
    priority=70, phase="launch", sources=_ARCH_SOURCES)

# a traceback cut below transformers' config lookup: AutoConfig.from_pretrained's
# ``CONFIG_MAPPING[config_dict["model_type"]]`` followed by a deeper frame is the lazy mapping's
# own __getitem__ raising KeyError for a model type this transformers does not know
# (transformers 5.19.0 models/auto/configuration_auto.py:107), which from_pretrained turns into
# "does not recognize this architecture" (:432); the paste ends before either exception line
# (round 54) or a traceback whose first frame is that lookup: a chain's first traceback starts at the
# frame that caught its exception, and the only handler around the lookup is from_pretrained's own
# ``except KeyError`` (transformers 4.56.1 models/auto/configuration_auto.py:1309-1311, the same
# "does not recognize this architecture" ValueError), so the exception is the unknown model type's
# KeyError, also where the paste ends on that frame
_LOOKUP_FIRST = (r'File "[^"\n]*configuration_auto\.py", line \d+, in from_pretrained\n\s*'
                 r'config_class = CONFIG_MAPPING\[config_dict\["model_type"\]\]')
MODEL_TYPE_LOOKUP_CUT = Signature(
    "model_type_lookup_cut", "arch_unsupported", "transformers' config lookup failed for the model type",
    (_NEWER_ARCH,),
    patterns=(r".",),
    context=(r'(?:configuration_auto\.py", line \d+, in from_pretrained\n\s*config_class = '
             r'CONFIG_MAPPING\[config_dict\["model_type"\]\]\n(?:\s*[~^]+\n)?\s*File "'
             r"|Traceback \(most recent call last\):\n\s*" + _LOOKUP_FIRST + ")",),
    priority=69, phase="launch", cut_ok=True,
    sources=_ARCH_SOURCES + (
        ("transformers 4.56.1", "transformers/models/auto/configuration_auto.py:1309"),))

# (round 26) SGLang 0.1.x's router looks the model class up by the checkpoint's architectures in
# get_model_cls_by_arch_name, called from ModelRunner.load_model (0.1.16 managers/router/model_runner.py:294);
# the function imports the model modules (:49) and else raises only "Unsupported architectures: X.
# Supported list: [...]" (:57; 0.1.14 and 0.1.15 :57, 0.1.13 :48). A traceback whose last frame is that
# function at its raise line (by the line of a release read, or by the code line) is that ValueError,
# also where the paste ends inside the frame's own line (its name cut: "in get_")
_ROUTER_RAISE = (r"model_class = get_model_cls_by_arch_name\(architectures\)\n\s*File \"[^\"\n]*"
                 r"managers[/\\]router[/\\]model_runner\.py\", line (?:(?:48|57), in get_\w*\s*"
                 r"|\d+, in get_model_cls_by_arch_name\n\s*raise ValueError\(\s*)\Z")
ROUTER_ARCH_LOOKUP_CUT = Signature(
    "router_arch_lookup_cut", "arch_unsupported", "SGLang 0.1.x's router has no model class for the architecture",
    (_NEWER_ARCH,),
    patterns=(r".",), context=(_ROUTER_RAISE,), priority=69, phase="load_weights", cut_ok=True,
    sources=(("sglang 0.1.16", "sglang/srt/managers/router/model_runner.py:57"),
             ("sglang 0.1.16", "sglang/srt/managers/router/model_runner.py:294"),
             ("sglang 0.1.14", "sglang/srt/managers/router/model_runner.py:57"),
             ("sglang 0.1.13", "sglang/srt/managers/router/model_runner.py:48")))

MODEL_TYPE_ALONE = Signature(
    "model_type_key_alone", "arch_unsupported", "a KeyError that names a model type",
    (_NEWER_ARCH,),
    types=r"KeyError", patterns=(r"^KeyError: '(?=[a-z0-9_-]*[0-9_])[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+'$"
                                 r"|^KeyError: '[a-z]+\d+[a-z0-9]*'$",),
    absent=(r'File "',), priority=30, phase="launch", sources=_ARCH_SOURCES)

# a GGUF checkpoint's config is read by transformers' own GGUF loader, which maps only the GGUF
# architectures it lists (GGUF_SUPPORTED_ARCHITECTURES, the keys of its config mapping): another one
# is refused by name (transformers 4.51.3 modeling_gguf_pytorch_utils.py:401, load_gguf_checkpoint,
# reached from AutoConfig through configuration_utils.py:681 _get_config_dict)
GGUF_ARCH_UNSUPPORTED = Signature(
    "gguf_arch_unsupported", "arch_unsupported",
    "transformers' GGUF loader does not know the model's architecture",
    ("transformers reads a GGUF checkpoint's config itself and maps only the GGUF architectures its "
     "release lists: upgrade transformers to one that lists this architecture, or serve the model's "
     "safetensors checkpoint (the original repository) instead of the GGUF file.",),
    types=r"(?:\w+\.)*ValueError", patterns=(r"GGUF model with architecture \S+ is not supported yet",),
    lines=(r"GGUF model with architecture \S+ is not supported yet",),
    priority=84, phase="launch",
    sources=(("transformers 4.51.3", "transformers/modeling_gguf_pytorch_utils.py:401"),
             ("transformers 4.51.3", "transformers/configuration_utils.py:681")))

def _mm_processor_detail(found: Found) -> str | None:
    match = regex(r"No processor registered for architecture: (\[[^\]]*\]?)").search(found.text)
    return f"The architecture: {match[1]}." if match else None


# SGLang's multimodal processors register themselves by architecture when their module imports;
# a module that fails to import is skipped with a warning ("Ignore import error when loading
# sglang.srt.multimodal.processors.X: ...", 0.4.10.post2 managers/multimodal_processor.py:23,
# 0.5.23 :24), so the model is then unknown to this install as a multimodal model
MM_PROCESSOR_MISSING = Signature(
    "mm_processor_missing", "arch_unsupported", "no multimodal processor for the model's architecture",
    ("This SGLang has no multimodal processor for the model's architecture. Look earlier in the log "
     "for \"Ignore import error when loading sglang.srt.multimodal.processors...\": a processor whose "
     "module failed to import (a missing or mismatched package) is skipped, and installing what it "
     "names brings it back; else the architecture is newer than this release: upgrade SGLang.",),
    types=r"(?:\w+\.)*ValueError", patterns=(r"No processor registered for architecture",),
    priority=84, phase="launch", detail=_mm_processor_detail,
    sources=(("0.4.10.post2", "sglang/srt/managers/multimodal_processor.py:47"),
             ("0.5.23", "sglang/srt/managers/multimodal_processor.py:86")))

# SGLang reads the model's text settings (hidden_size, num_attention_heads ...) from the
# checkpoint's config, or from the sub-config of a multimodal layout it knows (text_config,
# language_config, thinker_config ...: 0.4.10.post2 hf_transformers_utils.py:72 get_hf_text_config,
# 0.5.23 utils/hf_transformers/common.py:547); a config class of another layout has no such
# attribute where ModelConfig reads it (0.4.10.post2 configs/model_config.py:186, 0.5.23 :1566)
CONFIG_LAYOUT_UNKNOWN = Signature(
    "config_layout_unknown", "arch_unsupported", "SGLang cannot read the model's config",
    ("SGLang found no text-model settings in the checkpoint's config: its config class is of a "
     "layout this release does not know (a multimodal or remote-code model it does not support). "
     "Upgrade SGLang to a release that lists the architecture, or serve a supported variant.",),
    types=r"(?:\w+\.)*AttributeError", patterns=(r"'\w*Config' object has no attribute '\w+'",),
    context=(r"configs[/\\]model_config\.py",), priority=72, phase="launch",
    sources=(("0.4.10.post2", "sglang/srt/configs/model_config.py:186"),
             ("0.4.10.post2", "sglang/srt/hf_transformers_utils.py:72"),
             ("0.5.23", "sglang/srt/configs/model_config.py:1566"),
             ("0.5.23", "sglang/srt/utils/hf_transformers/common.py:547")))

# (round 34) an architecture SGLang's registry lacks falls back to transformers' implementation
# (get_model_architecture: 0.5.19 model_loader/utils.py:228-229, reached from the model load and from the
# tokenizer manager's multimodal processor lookup, :252); resolve_transformers_arch refuses one that
# transformers does not have either when the config's auto_map has no AutoModel (0.5.19 :154-160, 0.5.9
# :54, 0.5.8 :53): neither knows the model. Its other refusal, an auto_map whose remote code failed to
# load (0.5.19 :162-167: "... loading the custom model from auto_map failed"), is the repository's code
# against this transformers, not an unknown architecture: not read here
TRANSFORMERS_ARCH_UNKNOWN = Signature(
    "transformers_arch_unknown", "arch_unsupported",
    "neither SGLang nor transformers has a class for the model's architecture",
    ("Neither this SGLang nor the installed transformers has a model class for the checkpoint's "
     "architecture, and its config's `auto_map` names no `AutoModel` (no remote code to fall back "
     "to). Upgrade SGLang to a release that lists the architecture (or transformers, for its "
     "fallback), or serve a supported variant; check the config's `architectures` if the model "
     "should be a known one.",),
    types=r"(?:\w+\.)*ValueError",
    patterns=(r"Cannot find model module\. '[\w.]+' is not a registered model in the Transformers "
              r"library \(only relevant",),
    priority=84, phase="launch",
    sources=(("0.5.19", "sglang/srt/model_loader/utils.py:154"),
             ("0.5.19", "sglang/srt/model_loader/utils.py:229"),
             ("sglang 0.5.9", "sglang/srt/model_loader/utils.py:54")))

# (round 72) the same fallback's refusal of a class transformers has but SGLang cannot drive: with
# `--model-impl auto` (the default) an architecture the registry lacks is handed to transformers' class,
# and one whose class is not backend-compatible (transformers 4.56.1 modeling_utils.py:5988-5989, its
# `_supports_attention_backend`) raises "X has no SGlang implementation and the Transformers implementation
# is not compatible with SGLang." (0.4.10.post2 model_loader/utils.py:67-69, 0.5.10 :180-181, reached from
# get_model_architecture :101): no model class SGLang can serve for that architecture
TRANSFORMERS_FALLBACK_REFUSED = Signature(
    "transformers_fallback_refused", "arch_unsupported",
    "SGLang has no class for the model's architecture and transformers' class is not compatible",
    ("This SGLang has no model class for the checkpoint's architecture, and the class transformers has "
     "for it does not support SGLang's attention backend (`_supports_attention_backend`), so the "
     "fallback refused it. Upgrade SGLang to a release that lists the architecture (`python -c \"from "
     "sglang.srt.models.registry import ModelRegistry; print(ModelRegistry.get_supported_archs())\"`), "
     "or serve a supported variant of the model.",),
    types=r"(?:\w+\.)*ValueError",
    patterns=(r"\w+ has no SGlang implementation and the Transformers implementation is not compatible",),
    priority=84, phase="launch",
    sources=(("0.4.10.post2", "sglang/srt/model_loader/utils.py:68"),
             ("0.5.10", "sglang/srt/model_loader/utils.py:180"),
             ("transformers 4.56.1", "transformers/modeling_utils.py:5988")))

# (round 56) a model path that names a file: transformers takes a path that is a file as the config file
# itself (4.56.1 configuration_utils.py:709-711) and reads it as JSON text (:756 -> _dict_from_json_file
# :864-866), which SGLang asks for first (0.5.1 hf_transformers_utils.py:129, get_config); a weights
# file (.pth, .bin, .safetensors) fails to decode as UTF-8 (its first bytes are binary: pickle's 0x80),
# and from_pretrained re-raises it as "It looks like the config file at '{file}' is not a valid JSON file."
# (:759-760). A folder's or a repo's config resolves to ".../config.json": a file not named *.json there,
# or the decode error inside _dict_from_json_file, is the path naming something that is no model folder.
# A config.json that is not valid JSON (a cut download) is not read here
_CONFIG_READER = r'configuration_utils\.py", line \d+,? in _dict_from_json_file\s*$'
_CONFIG_SOURCES = (("transformers 4.56.1", "transformers/configuration_utils.py:709"),
                   ("transformers 4.56.1", "transformers/configuration_utils.py:711"),
                   ("transformers 4.56.1", "transformers/configuration_utils.py:756"),
                   ("transformers 4.56.1", "transformers/configuration_utils.py:760"),
                   ("transformers 4.56.1", "transformers/configuration_utils.py:866"),
                   ("sglang 0.5.1", "sglang/srt/hf_transformers_utils.py:129"))
_PATH_IS_A_FILE = ("`--model-path` names a file, which transformers read as the model's config and could "
                   "not decode: give the model's folder (config.json, the tokenizer's files and the "
                   "weights); a PyTorch state dict (.pth) must first be saved as a Hugging Face "
                   "checkpoint (`save_pretrained`) with its config.",)
MODEL_PATH_IS_A_FILE = Signature(
    "model_path_is_a_file", "model_not_found", "the model path is a file, not a model folder",
    _PATH_IS_A_FILE, types=r"UnicodeDecodeError|OSError|EnvironmentError",
    patterns=(r"codec can't decode byte 0x[0-9a-fA-F]{2}",
              r"It looks like the config file at '[^']*(?<!\.json)' is not a valid JSON file\."),
    # the decode error inside the config read, or the re-raise itself (its text is in the chain)
    context=(rf"{_CONFIG_READER}|It looks like the config file at '[^']*(?<!\.json)' is not a valid JSON file",),
    priority=85, phase="launch", sources=_CONFIG_SOURCES)

# (round 65) a config.json with no model type: AutoConfig.from_pretrained raises "Unrecognized model in PATH.
# Should have a `model_type` key in its config.json, or contain one of the following strings in its name: ..."
# only after it read the config (transformers 4.56.1 models/auto/configuration_auto.py:1288 get_config_dict,
# :1307 no "model_type", :1323-1327 no known type in the path's name, :1329-1333): the folder and its config
# are there (a missing folder is hub.py:511's "not a local folder", a folder without config.json returns no
# config at configuration_utils.py:735-736), so the model was found and its type is what transformers cannot
# tell: an EAGLE3 draft or a converted checkpoint saved without it
CONFIG_WITHOUT_MODEL_TYPE = Signature(
    "config_without_model_type", "arch_unsupported", "the checkpoint's config.json names no model type",
    ("The checkpoint's config.json has no `model_type` (and its path names none transformers knows), so "
     "transformers cannot tell which config class reads it: add the `model_type` of its architecture to "
     "config.json (a converted or hand-written checkpoint often lacks it), or check that the path is the "
     "model's own folder.",),
    types=r"(?:\w+\.)*ValueError", patterns=(r"Unrecognized model in ",),
    priority=84, phase="launch",
    by_algorithm=tuple((fam, "With speculative decoding the drafter's config "
                             "(`--speculative-draft-model-path`) is read the same way: a draft's config.json "
                             "needs its `model_type` too (a Llama-style EAGLE3 draft's is \"llama\").")
                       for fam in ("eagle", "dflash", "ddtree")),
    sources=(("transformers 4.56.1", "transformers/models/auto/configuration_auto.py:1307"),
             ("transformers 4.56.1", "transformers/models/auto/configuration_auto.py:1330"),
             ("transformers 4.56.1", "transformers/configuration_utils.py:736")))

SIGNATURES = [ARCH_UNSUPPORTED, CONFIG_WITHOUT_MODEL_TYPE, GGUF_ARCH_UNSUPPORTED, MM_PROCESSOR_MISSING,
              CONFIG_LAYOUT_UNKNOWN, TRANSFORMERS_ARCH_UNKNOWN, TRANSFORMERS_FALLBACK_REFUSED, MODEL_TYPE_KEY,
              MODEL_TYPE_LOOKUP_CUT, ROUTER_ARCH_LOOKUP_CUT, MODEL_TYPE_ALONE, MODEL_PATH_IS_A_FILE]
