"""vLLM: an install whose parts do not fit each other or the GPU (round 76).

``dependency_mismatch``: a kernel library vLLM stands a stub in for (DeepGEMM missing or too old), kernels whose
PTX a newer toolkit built than the driver can load, a caller that builds vLLM's engine arguments for another
release, worded by a Python older than 3.10. ``unsupported_gpu``: the attention selector finding no backend where
one that fits the model is refused only for this GPU's compute capability, or (round 77) a traceback cut inside V0's
bfloat16 check of the GPU, whose one raise is that refusal; (round 83) vLLM's attention-backend registry not knowing
the name an older vllm-ascend's backend gives itself (``dependency_mismatch``); (round 89) transformers' processor
refusing the tokenizer vLLM wraps in its cache (``dependency_mismatch``); (round 90) V0's FlashInfer backend
calling a wrapper class its import left None (``dependency_mismatch``); (round 94) an op of vLLM's compiled
extension called where its silent import failed (``dependency_mismatch``); (round 100) xFormers finding no
attention operator because its CUDA extension is not built or not loaded (``dependency_mismatch``); (round 113) torch
built without CUDA reached by code that takes a CUDA path (``dependency_mismatch``); (round 114) a model's head_dim
that a newer transformers leaves None, multiplied in vLLM's model construction (``dependency_mismatch``). Cited as
:mod:`.signatures` cites: ``(release, "vllm/path.py:line")`` in the wheels, a library's text by name. Part of
:mod:`.signatures`' list.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "DEEP_GEMM_MISSING", "PTX_TOOLCHAIN", "ENGINE_ARGS_KEYWORD", "ATTENTION_GPU",
           "BF16_CHECK_CUT", "PLUGIN_BACKEND_NAME", "PROCESSOR_CACHED_TOKENIZER", "FLASHINFER_WRAPPER_NONE",
           "C_OPS_UNBOUND", "XFORMERS_NO_CUDA_BUILD", "TORCH_WITHOUT_CUDA", "HEAD_DIM_NONE"]

_ADVICE = ("Installed packages do not match this vLLM: install it in a fresh environment with the torch "
           "it pins (`pip install vllm==X` brings its own), then `pip check`.",)

# vLLM's DeepGEMM wrapper imports deep_gemm lazily and resolves its functions by name (_lazy_init:
# ``if not has_deep_gemm(): return``, then getattr(_dg, NAME, None): utils/deep_gemm.py:123-124, :133-136
# (0.13.0)); a function left unresolved calls the stub, which raises this (_missing, :83-88 (0.13.0), :85 the
# raise; :106-110 (0.14.0); fp8_paged_mqa_logits' ``return _missing()``, :299 (0.13.0)): no deep_gemm, or one
# older than this vLLM calls
_DEEP_GEMM = r"DeepGEMM backend is not available or outdated\. Please install or update the `deep_gemm`"
DEEP_GEMM_MISSING = Signature(
    "vllm_deep_gemm_missing", "dependency_mismatch", "vLLM called DeepGEMM, which is not installed or too old",
    ("vLLM called a DeepGEMM kernel (FP8 GEMMs, DeepSeek-V3.2's sparse attention indexer) and found no deep_gemm "
     "it could use: the package is not installed, or is older than this vLLM calls. Install the DeepGEMM "
     "release this vLLM names (its docs, or `tools/install_deepgemm.sh` in its repository), or turn DeepGEMM "
     "off (VLLM_USE_DEEP_GEMM=0) where the model has another kernel.",),
    patterns=(_DEEP_GEMM,), lines=(_DEEP_GEMM,), priority=81,
    sources=(("vllm 0.13.0", "vllm/utils/deep_gemm.py:85"), ("vllm 0.13.0", "vllm/utils/deep_gemm.py:299"),
             ("vllm 0.13.0", "vllm/utils/deep_gemm.py:123"), ("vllm 0.14.0", "vllm/utils/deep_gemm.py:107"),
             ("vllm 0.11.1", "vllm/utils/deep_gemm.py:85")))

# the CUDA runtime's cudaErrorUnsupportedPtxVersion (222): "the provided PTX was compiled with an unsupported
# toolchain", most often PTX a newer compiler made than the driver's JIT supports (CUDA runtime API,
# driver_types.h); torch prints it as "CUDA error: <that string>" (c10/cuda/CUDAException.cpp:43), vLLM's executor
# in "Worker failed with error '...'" (v1/executor/multiproc_executor.py:342 (0.13.0)): wheels built by a CUDA
# toolkit newer than the installed driver
_PTX = r"\bthe provided PTX was compiled with an unsupported toolchain\b|\bcudaErrorUnsupportedPtxVersion\b"
PTX_TOOLCHAIN = Signature(
    "vllm_ptx_toolchain", "dependency_mismatch", "kernels were built by a newer CUDA toolkit than the driver runs",
    ("A kernel's PTX was compiled by a CUDA toolkit newer than the installed NVIDIA driver can load "
     "(cudaErrorUnsupportedPtxVersion): the wheels (torch, vLLM, flashinfer ...) and the driver do not match. "
     "Upgrade the driver to one that supports the wheels' CUDA (`nvidia-smi` shows the CUDA it supports), "
     "or install the builds of torch and vLLM for the CUDA your driver runs.",),
    patterns=(_PTX,), lines=(_PTX,), priority=81,
    sources=(("CUDA runtime", "driver_types.h cudaErrorUnsupportedPtxVersion (222)"),
             ("torch 2.14.1", "c10/cuda/CUDAException.cpp:43"),
             ("vllm 0.13.0", "vllm/v1/executor/multiproc_executor.py:342")))

# a caller that builds vLLM's engine arguments itself (a training framework's vLLM engine) and passes a field this
# release's dataclass lacks: under Python 3.9 and older the TypeError names the generated __init__ alone ("__init__()
# got an unexpected keyword argument 'X'"; 3.10 names the class, signatures.py API_MISMATCH), so the call is read
# from the last frame's code line, which builds EngineArgs / AsyncEngineArgs / LLM / SamplingParams
# (engine/arg_utils.py:23, :779 (0.5.0), dataclasses; limit_mm_per_prompt came at :134 (0.6.2))
_BUILT_HERE = (r"(?:\b(?:Async)?EngineArgs|\bLLM|\bSamplingParams)\([^\n]*\n(?:[ \t]*[~^]+[ \t]*\n)?"
               r"(?:\(\S+ pid=\d+\) )?(?:\w+\.)*TypeError: __init__\(\) got an unexpected keyword argument")
ENGINE_ARGS_KEYWORD = Signature(
    "vllm_engine_args_keyword", "dependency_mismatch", "the code driving vLLM was written for another vLLM release",
    ("The program that builds the engine (a training framework, a script) passes an engine argument this vLLM "
     "release does not have: install the vLLM version that program pins, or a release of the program made for "
     "this vLLM.",),
    types=r"(?:\w+\.)*TypeError", patterns=(r"^(?:TypeError: )?__init__\(\) got an unexpected keyword argument",),
    context=(_BUILT_HERE,), priority=78, phase="launch",
    sources=(("vllm 0.5.0", "vllm/engine/arg_utils.py:779"), ("vllm 0.5.0", "vllm/engine/arg_utils.py:23"),
             ("vllm 0.6.2", "vllm/engine/arg_utils.py:134")))

# V1's attention selector lists, for each backend it refused, why ("compute capability not supported" among them:
# v1/attention/backend.py:249-250 (0.14.0), attention/backends/abstract.py:243-244 (0.13.0)), and raises "No valid
# attention backend found for <device> with <config>. Reasons: {NAME: [...], ...}" when none is left
# (platforms/cuda.py:337-341 (0.13.0, 0.14.0)). A backend refused for the compute capability alone fits the model
# and would run it on another GPU: this GPU has no build of the attention the model needs
_GPU_ONLY = (r"No valid attention backend found for \w+ with .*Reasons: \{.*\b[A-Z][A-Z0-9_]*: "
             r"\[compute capability not supported\]")
ATTENTION_GPU = Signature(
    "vllm_attention_gpu_unsupported", "unsupported_gpu", "the attention the model needs has no build for this GPU",
    ("vLLM's attention selector found no backend for this model on this GPU: the backend that fits the model "
     "(sparse MLA, an MLA or sink variant) is refused only for the GPU's compute capability (the Reasons list "
     "says which). Run the model on a GPU that backend supports (sparse MLA: Hopper or Blackwell), or a variant "
     "of the model whose attention another backend serves.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_GPU_ONLY,), lines=(_GPU_ONLY,), priority=81,
    sources=(("vllm 0.13.0", "vllm/platforms/cuda.py:338"), ("vllm 0.14.0", "vllm/platforms/cuda.py:338"),
             ("vllm 0.14.0", "vllm/v1/attention/backend.py:250"),
             ("vllm 0.13.0", "vllm/attention/backends/abstract.py:244")))

# (round 77) V0's worker checks the model's dtype against the GPU right after torch.cuda.set_device (init_model,
# worker.py:71 (0.2.7)); _check_if_gpu_supports_dtype raises only "Bfloat16 is only supported on GPUs with compute
# capability of at least 8.0" for bfloat16 below 8.0 (worker.py:225-234 (0.2.7), the raise :231; :306-317
# (0.4.0.post1); :352-358 (0.5.4); :455-468 (0.6.2)): the device it reads was set just before, so a traceback cut in
# that frame is that refusal (signatures.py BF16_GPU reads its text; the pattern here is only asked with the
# frame last, which a whole traceback never has, as compilers.py TRITON_BUILD_CUT's)
_BF16_CHECK = (r'[/\\]worker[/\\]worker\.py", line \d+, in _check_if_gpu_supports_dtype[ \t]*'
               r'(?:\n[ \t]*raise ValueError\([^\n]*)?\s*\Z')
BF16_CHECK_CUT = Signature(
    "vllm_bf16_check_cut", "unsupported_gpu", "this GPU cannot run bfloat16 (a traceback cut in vLLM's dtype check)",
    ("The GPU is older than compute capability 8.0 and has no bfloat16 (vLLM's dtype check raised; the paste is "
     "cut before its message): run the model in float16 with `--dtype half`, or use an Ampere or newer GPU.",),
    types=r"(?:\w+\.)*ValueError", patterns=(r"Bfloat16 is only supported on GPUs with compute capability",),
    context=(_BF16_CHECK,), cut_ok=True, priority=80, phase="launch",
    sources=(("vllm 0.2.7", "vllm/worker/worker.py:231"), ("vllm 0.2.7", "vllm/worker/worker.py:71"),
             ("vllm 0.4.0.post1", "vllm/worker/worker.py:312"), ("vllm 0.5.4", "vllm/worker/worker.py:358"),
             ("vllm 0.6.2", "vllm/worker/worker.py:468")))

# (round 83) vLLM looks a backend up in its enum by the name the backend class gives itself
# (AttentionBackendEnum[self.attn_backend.get_name()]: distributed/kv_transfer/kv_connector/utils.py:231 (0.13.0),
# model_executor/layers/attention/attention.py:358 (0.21.0)), and the enum's lookup raises "Unknown attention backend:
# 'NAME'. Valid options are: ..." for a name it lacks (attention/backends/registry.py:29 (0.13.0),
# v1/attention/backends/registry.py:29 (0.14.0, 0.21.0)). vllm-ascend's backends named themselves "ASCEND",
# "ASCEND_MLA", "ASCEND_SFA", "VLLM_ASCEND_MLA" (vllm_ascend/attention/attention_v1.py:48, mla_v1.py:40 (0.11.0rc0);
# mla_v1.py:51 (0.9.2rc1)) until it took the enum's "CUSTOM" (attention_v1.py:50 (0.12.0rc1)): a user's
# --attention-backend is one of vLLM's own names, so that name refused is a vllm-ascend older than the vLLM it runs in
_PLUGIN_NAME = r"Unknown attention backend: '(?:VLLM_)?ASCEND(?:_[A-Z]+)?'\. Valid options are: "
PLUGIN_BACKEND_NAME = Signature(
    "vllm_plugin_backend_name", "dependency_mismatch", "vLLM does not know the attention backend the plugin names",
    ("vLLM looked up the attention backend by the name the platform plugin's backend gives itself, and this vLLM's "
     "registry has no such name: the installed vllm-ascend is older (or newer) than this vLLM. Install the "
     "vllm-ascend release made for this vLLM (their versions match: vllm==X with vllm-ascend==X.rcN), or the "
     "vLLM release the plugin names.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_PLUGIN_NAME,), lines=(_PLUGIN_NAME,), priority=81, phase="launch",
    sources=(("vllm 0.13.0", "vllm/attention/backends/registry.py:29"),
             ("vllm 0.14.0", "vllm/v1/attention/backends/registry.py:29"),
             ("vllm 0.13.0", "vllm/distributed/kv_transfer/kv_connector/utils.py:231"),
             ("vllm 0.21.0", "vllm/model_executor/layers/attention/attention.py:358"),
             ("vllm-ascend 0.11.0rc0", "vllm_ascend/attention/attention_v1.py:48"),
             ("vllm-ascend 0.12.0rc1", "vllm_ascend/attention/attention_v1.py:50")))

# (round 89) vLLM hands a model's HF processor its own tokenizer (``kwargs["tokenizer"] = self.tokenizer``,
# inputs/registry.py:136-137 (0.9.2), skipped for transformers 4.53.0 alone, :133-136), a subclass it names
# "Cached<Name>" (transformers_utils/tokenizer.py:108, :135 (0.9.2)). transformers 4.53 passes such a keyword to the
# processor's __init__ (processing_utils.py:1089-1090 (4.53.1); 4.52.4 set it after, :985-987), whose class check
# refuses it where the processor names the slow class alone (check_argument_for_proper_class, :568-570 (4.53.1);
# WhisperProcessor's tokenizer_class = "WhisperTokenizer", models/whisper/processing_whisper.py:38): the installed
# transformers is newer than this vLLM's processor call fits. A tokenizer of the user's own (no "Cached") is not read
_CACHED_REFUSED = r"Received a Cached\w+ for argument tokenizer, but a \S+ was expected\b"
PROCESSOR_CACHED_TOKENIZER = Signature(
    "vllm_processor_cached_tokenizer", "dependency_mismatch",
    "the installed transformers' processor refuses the tokenizer vLLM hands it",
    ("vLLM passed its cached tokenizer to the model's transformers processor, and the installed transformers "
     "checks that argument's class strictly (transformers 4.53 and later; the processor names the slow tokenizer "
     "class alone): this transformers is newer than this vLLM was made for. Install the transformers this vLLM "
     "release was tested with (for vLLM 0.9.x: `pip install 'transformers<4.53'`), or a vLLM release that fits the "
     "installed transformers; `pip show transformers vllm` shows both.",),
    types=r"(?:\w+\.)*TypeError", patterns=(_CACHED_REFUSED,), lines=(_CACHED_REFUSED,), priority=81,
    sources=(("vllm 0.9.2", "vllm/inputs/registry.py:137"), ("vllm 0.9.2", "vllm/inputs/registry.py:133"),
             ("vllm 0.9.2", "vllm/transformers_utils/tokenizer.py:135"),
             ("transformers 4.53.1", "transformers/processing_utils.py:569"),
             ("transformers 4.53.1", "transformers/processing_utils.py:1090"),
             ("transformers 4.52.4", "transformers/processing_utils.py:987"),
             ("transformers 4.53.1", "transformers/models/whisper/processing_whisper.py:38")))

# (round 90) V0's FlashInfer backend imports flashinfer's wrapper classes in a try whose ImportError binds each to
# None (attention/backends/flashinfer.py:5-16 (0.6.3.post1)): with flashinfer missing, or a release whose modules do
# not hold those names, the backend still loads where VLLM_ATTENTION_BACKEND=FLASHINFER names it, and the first
# forward's _get_prefill_wrapper (:115-118) or _get_decode_wrapper (:128) calls None: "TypeError: 'NoneType'
# object is not callable" on the line that builds the wrapper. Read only where that frame of vLLM's flashinfer.py
# raised it (a None called elsewhere is not this)
_WRAPPER_NONE = (r'attention[/\\]backends[/\\]flashinfer\.py", line \d+, in _get_\w+[ \t]*\n'
                 r'[^\n]*\b(?:CUDAGraph)?Batch(?:Prefill|Decode)WithPagedKVCacheWrapper\([^\n]*\n'
                 r'(?:[^\n]*[~^]{3,}[ \t]*\n)?[^\n]*TypeError: \'NoneType\' object is not callable')
FLASHINFER_WRAPPER_NONE = Signature(
    "vllm_flashinfer_wrapper_none", "dependency_mismatch", "V0's FlashInfer backend found no flashinfer to import",
    ("vLLM's FlashInfer attention backend (chosen by VLLM_ATTENTION_BACKEND=FLASHINFER or for the model) could not "
     "import flashinfer's wrapper classes, and called the None it left in their place: flashinfer is not installed "
     "in this environment, or its release does not fit this vLLM. `pip show flashinfer` says which; install the "
     "flashinfer wheel built for this torch and CUDA that this vLLM release names in its docs, or unset "
     "VLLM_ATTENTION_BACKEND to use the default backend.",),
    types=r"(?:\w+\.)*TypeError", patterns=(r"'NoneType' object is not callable",), context=(_WRAPPER_NONE,),
    priority=81,
    sources=(("vllm 0.6.3.post1", "vllm/attention/backends/flashinfer.py:15"),
             ("vllm 0.6.3.post1", "vllm/attention/backends/flashinfer.py:117"),
             ("vllm 0.6.3.post1", "vllm/attention/backends/flashinfer.py:128")))

# (round 94) vLLM 0.4.1 binds its compiled ops in a try whose ImportError is passed over (``try: from vllm._C import
# cache_ops as vllm_cache_ops`` / ``ops as vllm_ops``, ``except ImportError: pass``, vllm/_custom_ops.py:5-9), so an
# install or build whose vllm._C does not import (missing, or built against another torch) starts, and the first op
# called raises NameError on the unbound name (reshape_and_cache, :183: at the first forward, the profile run or the
# graph capture). Read only where _custom_ops.py raised it (those names unbound anywhere else are not this)
_C_UNBOUND = (r'[/\\]_custom_ops\.py", line \d+, in \w+\s*\n[^\n]*\bvllm_(?:cache_)?ops\.\w+\([^\n]*\n'
              r"(?:[^\n]*[~^]{3,}[ \t]*\n)?NameError: name 'vllm_(?:cache_)?ops' is not defined")
C_OPS_UNBOUND = Signature(
    "vllm_c_ops_unbound", "dependency_mismatch", "vLLM's compiled ops (vllm._C) did not import",
    ("vLLM's compiled extension (vllm._C) did not import, and its release passes that over until an op is called: "
     "`python -c 'import vllm._C'` shows why (missing: a source tree run without its build, `pip install -e .` "
     "to build it; an undefined symbol: built against another torch). Install the vLLM wheel with the torch it "
     "pins in a fresh environment, or rebuild from a clean tree (remove build/ and the .so files first).",),
    types=r"NameError", patterns=(r"\bname 'vllm_(?:cache_)?ops' is not defined",), context=(_C_UNBOUND,),
    priority=81,
    sources=(("vllm 0.4.1", "vllm/_custom_ops.py:5"), ("vllm 0.4.1", "vllm/_custom_ops.py:183")))

# (round 100) xFormers' memory_efficient_attention picks the first operator that takes the inputs and, finding none,
# raises NotImplementedError "No operator found for `memory_efficient_attention_forward` with inputs:" then each
# operator's reasons (xformers 0.0.28.post3 xformers/ops/fmha/dispatch.py:69). Each operator adds "xFormers wasn't
# build with CUDA support" where its C++/CUDA extension is not built or did not load (``not _built_with_cuda``,
# xformers/ops/fmha/common.py:370, AttentionOpBase.not_supported_reasons): an xformers wheel built for another torch
# or CUDA, or one built without the toolkit. The GPU's capability is another reason of its own ("requires device with
# capability > (8, 0) ...", flash.py:593); the base minimum is (5, 0) (common.py:304), so cutlassF, refused on a
# V100 for the build alone, would run there: the install is what fails. Read only where the build line is among the
# reasons (a capability or dtype alone is not this)
_XF_NO_OP = r"No operator found for `memory_efficient_attention_\w+` with inputs"
XFORMERS_NO_CUDA_BUILD = Signature(
    "vllm_xformers_no_cuda_build", "dependency_mismatch", "xFormers' CUDA kernels are not built or did not load",
    ("xFormers found no attention kernel it could run, and each one says \"xFormers wasn't build with CUDA "
     "support\": its compiled extension does not match the installed torch and CUDA (a wheel for another torch, "
     "or built without the CUDA toolkit). `python -m xformers.info` shows it; install the xformers release this "
     "vLLM pins with the torch it pins (`pip install vllm==X` in a fresh environment brings both), or pick another "
     "attention backend (`VLLM_ATTENTION_BACKEND=FLASH_ATTN` where the GPU takes it; on a V100 the fixed xformers "
     "build's cutlassF kernel runs).",),
    types=r"(?:\w+\.)*NotImplementedError", patterns=(_XF_NO_OP,),
    context=(r"xFormers wasn't build with CUDA support",), priority=80,
    sources=(("xformers 0.0.28.post3", "xformers/ops/fmha/common.py:370"),
             ("xformers 0.0.28.post3", "xformers/ops/fmha/common.py:304 (CUDA_MINIMUM_COMPUTE_CAPABILITY = (5, 0))"),
             ("xformers 0.0.28.post3", "xformers/ops/fmha/flash.py:593 (fa2F's (8, 0))"),
             ("xformers 0.0.28.post3", "xformers/ops/fmha/dispatch.py:69")))

# (round 113) torch's CUDA initialisation raises AssertionError("Torch not compiled with CUDA enabled") where the
# installed torch has no CUDA module (``not hasattr(torch._C, "_cuda_getDeviceCount")``, torch 2.8.0
# torch/cuda/__init__.py:402-403, _lazy_init; the first CUDA tensor or torch.cuda call gets there): a CPU build, or a
# device's build (torch 2.5.1 with torch_npu on Ascend), under code that takes a CUDA path. vLLM 0.7.3's DeepSeek
# YaRN rope builds its tables on device="cuda" whatever the platform (model_executor/layers/rotary_embedding.py:654,
# :673); 0.8.0 asks the platform (current_platform.device_type, :740, :759), so an NPU plug-in runs it only with a
# vLLM that fits it. The torch build and the code calling it do not fit; the other assert of the same check ("libcudart
# functions unavailable", :404-407) is a broken CUDA build, not read here
_NO_CUDA = r"\bTorch not compiled with CUDA enabled\b"
TORCH_WITHOUT_CUDA = Signature(
    "vllm_torch_without_cuda", "dependency_mismatch", "torch was built without CUDA, and vLLM's code asked for CUDA",
    ("The installed torch has no CUDA (a CPU build, or the Ascend/ROCm/XPU build a device plug-in uses), and code "
     "this vLLM ran asked for a CUDA tensor or device: the torch, vLLM and plug-in builds do not fit each other. On "
     "NVIDIA GPUs install the CUDA build of the torch this vLLM pins (`python -c 'import torch; print(torch.version."
     "cuda)'` prints None for a CPU build); with a device plug-in (vllm-ascend ...) install the vLLM release that "
     "plug-in release names (vllm==X with vllm-ascend==X.rcN), not a vLLM build older or newer than it.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(_NO_CUDA,), lines=(rf"^(?:AssertionError: )?{_NO_CUDA}",),
    priority=80,
    sources=(("torch 2.8.0", "torch/cuda/__init__.py:403 (raise AssertionError(\"Torch not compiled with CUDA "
                             "enabled\"))"),
             ("vllm 0.7.3", "vllm/model_executor/layers/rotary_embedding.py:654 (device=\"cuda\")"),
             ("vllm 0.8.0", "vllm/model_executor/layers/rotary_embedding.py:740 "
                            "(device=current_platform.device_type)")))

# (round 114) vLLM up to 0.8.5 reads the attention's head size as ``getattr(config, "head_dim", hidden_size //
# num_heads)`` (model_executor/models/llama.py:132-134 (0.6.6), :130-131 (0.8.5.post1), MistralForCausalLM's class
# too), whose default is taken only where the attribute is missing. transformers 4.52 stopped filling MistralConfig's
# head_dim from hidden_size // num_attention_heads (configuration_mistral.py:146, "head_dim or ..." (4.51.3);
# "self.head_dim = head_dim" (4.52.4); Mixtral's alike, :175), so a checkpoint whose config.json has none gives
# head_dim None, and the first product in the model's __init__ raises "unsupported operand type(s) for *: 'int' and
# 'NoneType'" (llama.py:134, q_size). vLLM 0.9.0 takes None as missing (llama.py:134-136; config.py:1112-1113,
# "Some configs may set head_dim=None"): a transformers newer than this vLLM. Read only where the raising frame is
# a vLLM model's __init__ and its line uses head_dim (another None in model code is not this)
_HEAD_DIM_NONE = (r'model_executor[/\\]models[/\\]\w+\.py", line \d+, in __init__[ \t]*\n[^\n]*\bhead_dim\b[^\n]*\n'
                  r"(?:[^\n]*[~^]{3,}[ \t]*\n)?[^\n]*TypeError: unsupported operand type\(s\) for [^\n]*'NoneType'")
HEAD_DIM_NONE = Signature(
    "vllm_head_dim_none", "dependency_mismatch", "the model's config gives head_dim None, which this vLLM multiplies",
    ("The installed transformers leaves the model config's `head_dim` None where config.json has none (transformers "
     "4.52 and later, for Mistral and Mixtral configs), and this vLLM (before 0.9.0) uses the attribute as it is: "
     "the transformers is newer than this vLLM was made for. Install the transformers it was released with (for "
     "vLLM 0.6.x-0.8.x: `pip install 'transformers<4.52'`), or a vLLM release of 0.9.0 or later; or give the "
     "model's head size (`--hf-overrides '{\"head_dim\": 128}'` with hidden_size / num_attention_heads).",),
    types=r"(?:\w+\.)*TypeError", patterns=(r"unsupported operand type\(s\) for [^:]+: (?:'\w+' and 'NoneType'"
                                          r"|'NoneType' and '\w+')",),
    context=(_HEAD_DIM_NONE,), priority=81, phase="load_weights",
    sources=(("vllm 0.6.6", "vllm/model_executor/models/llama.py:134"),
             ("vllm 0.6.6", "vllm/model_executor/models/llama.py:132"),
             ("vllm 0.9.0", "vllm/model_executor/models/llama.py:135"),
             ("vllm 0.9.0", "vllm/config.py:1112"),
             ("transformers 4.51.3", "transformers/models/mistral/configuration_mistral.py:146"),
             ("transformers 4.52.4", "transformers/models/mistral/configuration_mistral.py:146")))

SIGNATURES: list[Signature] = [DEEP_GEMM_MISSING, PTX_TOOLCHAIN, ENGINE_ARGS_KEYWORD, ATTENTION_GPU, BF16_CHECK_CUT,
                               PLUGIN_BACKEND_NAME, PROCESSOR_CACHED_TOKENIZER, FLASHINFER_WRAPPER_NONE,
                               C_OPS_UNBOUND, XFORMERS_NO_CUDA_BUILD, TORCH_WITHOUT_CUDA, HEAD_DIM_NONE]
