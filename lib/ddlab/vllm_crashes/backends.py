"""vLLM: texts of other backends and of features (round 13: ROCm's HIP and ROCr runtimes, a LoRA adapter's rank,
V0's Mooncake pipe, NIXL's handshake and vllm-ascend's Mooncake for one request, ptxas, the Neuron compiler, a request
answered 500; round 15: one answered 4xx; round 48: a CUDA-only call handed another platform's device), vLLM's advice.

Cited as :mod:`.vllm` cites: ``(release, "vllm/path.py:line")`` in the wheels, a library's file
by name. Part of :mod:`.vllm`'s list, in its order.
"""

from __future__ import annotations

from ddlab.crashes.kinds import requests
from ddlab.device_crashes import compilers, device
from ddlab.vllm_crashes.library import KERNEL_COMPILE, UNSUPPORTED_GPU, V0, from_texts, voiced
from ddlab.crashes.signature import Found, Signature

__all__ = ["SIGNATURES", "NO_DEVICE_FUNCTION", "AMD_PAGE_FAULT", "LORA_RANK", "MOONCAKE_PIPE", "PTXAS_ERROR",
           "NEURON_COMPILE", "NEURON_EXEC_OOB", "REQUEST_5XX", "REQUEST_4XX", "NIXL_HANDSHAKE",
           "ASCEND_MOONCAKE_REQUEST", "MOONCAKE_REGISTER", "NO_PLATFORM",
           "ENCODER_ATTENTION", "KV_TRANSFER_V0", "FA_VERSION_GPU", "UVA_UNAVAILABLE",
           "RAY_NODE_NO_DEVICE", "CUDA_CALL_OTHER_DEVICE", "RAY_UNREGISTERED", "RAY_WORKER_UNREGISTERED"]

_V0 = V0

# (round 13) the runtime's "invalid device function" (HIP's, CUDA's): SGLang's signature, vLLM's advice
NO_DEVICE_FUNCTION = voiced(device.NO_DEVICE_FUNCTION, (
    UNSUPPORTED_GPU.advice[0] + " On ROCm: a torch / vLLM built for this GPU's gfx target "
    "(`rocminfo | grep gfx`; PYTORCH_ROCM_ARCH when building), or HSA_OVERRIDE_GFX_VERSION to a "
    "supported target of the same family.",))

# (round 13) ROCr's own line for a GPU page fault, read in SGLang's registry since its round
AMD_PAGE_FAULT = voiced(device.AMD_GPU_PAGE_FAULT, (
    "A kernel on the AMD GPU read or wrote an address not mapped for it (ROCr aborts the process with "
    "'Memory access fault by GPU node-N'; the host's `dmesg` names it): rerun with AMD_SERIALIZE_KERNEL=3 "
    "(or HIP_LAUNCH_BLOCKING=1) to find the kernel, then bisect: `--enforce-eager`, another attention "
    "backend (VLLM_ROCM_USE_AITER=0), and a newer ROCm / vLLM if the kernel is theirs.",))

# (round 13) a LoRA adapter whose rank is above --max-lora-rank: the worker's adapter check
# (lora/worker_manager.py:111 (0.6.4.post1); lora/peft_helper.py validate_legal, :109 (0.7.3),
# :126 (0.30.0), :196 (0.33.0), :203 (0.34.0)); an adapter is loaded when a request names it
_LORA_RANK = r"LoRA rank \d+ is greater than max_lora_rank \d+"
LORA_RANK = Signature(
    "vllm_lora_rank", "bad_argument", "a LoRA adapter's rank is above --max-lora-rank",
    ("The LoRA adapter's rank is larger than the engine was started for: start vLLM with "
     "`--max-lora-rank` at least the adapter's rank (the `r` in its adapter_config.json).",),
    patterns=(_LORA_RANK,), lines=(_LORA_RANK,), priority=80, running=True,
    sources=((_V0, "vllm/lora/worker_manager.py:111"), ("0.7.3", "vllm/lora/peft_helper.py:109"),
             ("0.30.0", "vllm/lora/peft_helper.py:126"), ("0.33.0", "vllm/lora/peft_helper.py:196"),
             ("0.34.0", "vllm/lora/peft_helper.py:203")))

# (round 13) V0's PD pipe over Mooncake: the transfer engine returning an error for a KV transfer
# raises in the pipe's receive or send thread (distributed/kv_transfer/kv_pipe/mooncake_pipe.py:163-164
# (0.7.3), transfer_sync), and the engine dies on it
_MOONCAKE_PIPE = r"^(?:Exception: )?Transfer Return Error\s*$"
MOONCAKE_PIPE = Signature(
    "vllm_mooncake_pipe_failed", "pd_transfer", "a KV transfer over Mooncake failed (V0's pipe)",
    ("Mooncake's transfer engine failed a KV transfer between the prefill and decode instances: check "
     "that both reach each other over the configured protocol (the mooncake config's `protocol`, "
     "`device_name` for RDMA, the metadata server) and that the transfer engine's own log shows no "
     "error; V0's PD pipe has no retry, the V1 Mooncake connector in newer releases fails one request.",),
    patterns=(_MOONCAKE_PIPE,), context=(r"mooncake_pipe\.py|Transfer Return Error",),
    lines=(_MOONCAKE_PIPE,), priority=80, running=True,
    sources=(("0.7.3", "vllm/distributed/kv_transfer/kv_pipe/mooncake_pipe.py:163"),
             ("0.7.3", "vllm/distributed/kv_transfer/kv_pipe/mooncake_pipe.py:164")))

# (round 23) a PD connector over Mooncake registers each KV cache region with the transfer engine while the
# worker initialises its KV cache; a refusal is fatal: vllm-ascend's connector raises "Mooncake memory
# registration failed." (vllm_ascend 0.11.0rc0 distributed/mooncake_connector.py:957-959, _register),
# vLLM's own "Mooncake batch memory registration failed." (0.34.0 kv_connector/v1/mooncake/
# mooncake_connector.py:2487, :2539). Mooncake's Ascend transport logs the refusal first, as glog's
# E-line "Register mem ret:<adxl status>." (kvcache-ai/Mooncake ascend_direct_transport.cpp,
# AscendDirectTransport::registerLocalMemory, then return -1; "Register mem ret: N, errmsg: ..." in
# transfer_executor_base.cpp, 48870ae): the register step's own line, when the raise is cut
_MOONCAKE_REGISTER = (r"\bMooncake (?:batch )?memory registration failed",
                      r"\bRegister mem ret: ?-?\d+")
MOONCAKE_REGISTER = Signature(
    "vllm_mooncake_register_failed", "pd_transfer", "Mooncake could not register the KV cache for PD transfer",
    ("The KV connector could not register the KV cache's memory with Mooncake's transfer engine while the "
     "worker set up its KV cache: the transfer engine refused it (the status in Mooncake's line; on Ascend "
     "the ADXL / HCCL memory registration). Check the transfer engine's protocol and devices in the "
     "`--kv-transfer-config` (`kv_connector_extra_config`), that the NPUs / NICs it names are this node's, "
     "and that Mooncake, CANN and the connector's releases match.",),
    patterns=_MOONCAKE_REGISTER, lines=_MOONCAKE_REGISTER, priority=46, phase="memory_pool", fatal=True,
    sources=(("vllm_ascend 0.11.0rc0", "vllm_ascend/distributed/mooncake_connector.py:959"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py:2487"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py:2539"),
             ("Mooncake (kvcache-ai/Mooncake)", "mooncake-transfer-engine/src/transport/ascend_transport/"
                                                "ascend_direct_transport/ascend_direct_transport.cpp "
                                                "(registerLocalMemory: Register mem ret:<ret>.)")))

# (round 13) ptxas' own diagnostic in Triton's make_cubin error: SGLang's signature (compilers.py)
PTXAS_ERROR = voiced(compilers.PTXAS_ERROR, KERNEL_COMPILE.advice)

# (round 13) AWS Neuron: the XLA compile cache runs neuronx-cc as a subprocess and raises Python's
# CalledProcessError when it exits non-zero (libneuronxla neuron_cc_wrapper.py, call_neuron_compiler;
# CPython Lib/subprocess.py, CalledProcessError.__str__: "Command '...' returned non-zero exit status N")
_NEURON_CC = r"CalledProcessError: Command '\['[^']*\bneuronx-cc'"
NEURON_COMPILE = from_texts(KERNEL_COMPILE, name="vllm_neuron_compile", title="the Neuron compiler (neuronx-cc) failed",
                         advice=("The Neuron compiler failed on a graph of the model (its own log, under the "
                                 "compile cache's directory, says why): a Neuron SDK release that supports this "
                                 "model and configuration, or a smaller bucket / batch in the neuron config.",),
                         texts=(_NEURON_CC,),
                         sources=(("libneuronxla", "libneuronxla/neuron_cc_wrapper.py (call_neuron_compiler: raise "
                                                   "subprocess.CalledProcessError(res.returncode, cmd, ...))"),
                                  ("CPython 3.12", "Lib/subprocess.py (CalledProcessError.__str__: Command '%s' "
                                                   "returned non-zero exit status %d.)")))

# (round 33) AWS Neuron: the runtime fails a model's execution with NRT_EXEC_OOB, "one or more indirect
# memcopies and/or embedding updates are out of bound" (aws-neuron/aws-neuron-sdk 86a9286
# src/libnrt/include/nrt/nrt_status.h:49, NRT_EXEC_OOB = 1006; release-notes/runtime/aws-neuronx-runtime-lib/
# index.rst, Neuron Runtime 2.19.5.0: the out-of-bound check of a gather / scatter, its line "failed to run
# scatter/gather (indirect memory copy), due to out-of-bound access" and return code 1006); torch-neuronx raises
# it from the compiled model's call as
# "Failed to execute the model status=<NRT_STATUS> message=<its text>" (NxD Inference's release notes quote
# status=1003 "Numerical Error" so): an index out of range on the device, the accelerator's illegal memory
# access. Other statuses (1003 a NaN, 1005 a busy core) fault nothing and are not read so
_NEURON_OOB = (r"\bFailed to execute the model status=1006\b", r"\bmessage=Execution Out-Of-Bounds Memory Access\b",
               r"\bfailed to run scatter/gather \(indirect memory copy[^)\n]*\),? due to out-of-bound access")
NEURON_EXEC_OOB = Signature(
    "vllm_neuron_exec_oob", "cuda_illegal_access",
    "the Neuron runtime failed an execution: out-of-bounds memory access (NRT_EXEC_OOB)",
    ("A compiled graph on the Neuron device indexed memory out of range (an indirect copy, a gather or an "
     "embedding update: NRT_EXEC_OOB, status 1006), Neuron's illegal memory access; the engine cannot go on. "
     "Typical causes are an index past a table the graph was compiled for: a token id past the vocabulary, a "
     "position or block index past the compiled sequence length / bucket, or a KV-cache block count the "
     "model was not compiled for (`num_gpu_blocks_override`, the neuron config's `max_context_length`, "
     "`seq_len`, buckets). Recompile the model for the serving settings (or serve with the settings it was "
     "compiled with), then a Neuron SDK / vllm-neuron release that supports this model.",),
    patterns=_NEURON_OOB, lines=_NEURON_OOB, priority=60, running=True,
    sources=(("Neuron runtime (aws-neuron/aws-neuron-sdk 86a9286)",
              "src/libnrt/include/nrt/nrt_status.h:49 (NRT_EXEC_OOB = 1006)"),
             ("Neuron runtime (aws-neuron/aws-neuron-sdk)",
              "release-notes/runtime/aws-neuronx-runtime-lib/index.rst, Neuron Runtime Library 2.19.5.0 "
              "(out-of-bound detection for gather / scatter, NRT_EXEC_OOB = 1006)")))

# (round 13) uvicorn's access line of a request answered 500: vLLM's server answers one request's own
# failure so and serves on (entrypoints/serve/exception_handling/error_response.py:70 (0.34.0)); an
# engine's death answered so has its own, fatal texts, which win
REQUEST_5XX = voiced(requests.REQUEST_5XX, requests.REQUEST_5XX.advice,
                      sources=(("0.34.0", "vllm/entrypoints/serve/exception_handling/error_response.py:70"),))

# (round 15) uvicorn's access line of a client's request answered 4xx: vLLM refuses a request as sent with
# 400 by default (create_error_response, entrypoints/openai/serving_engine.py:107 (0.7.3);
# serve/exception_handling/error_response.py:17 (0.34.0)), a body its schema refuses too (api_server.py:749
# (0.7.3)), with no traceback, and serves on; a GET (a probe, the launcher) proves nothing
REQUEST_4XX = voiced(requests.REQUEST_4XX, (
    "The server answered a request with a 4xx status (uvicorn's access line) and kept serving: vLLM refused "
    "the request as the client sent it and logs no traceback for it; the response's body says why (a field "
    "or value it does not take, a prompt longer than `--max-model-len`, a model name other than "
    "`--served-model-name`, no API key where the server runs with `--api-key`). Fix the client's request; the "
    "server needs no change unless every client is refused the same way.",), detail=requests.REQUEST_4XX.detail,
    sources=(("0.7.3", "vllm/entrypoints/openai/serving_engine.py:107"),
             ("0.7.3", "vllm/entrypoints/openai/api_server.py:749"),
             ("0.34.0", "vllm/entrypoints/serve/exception_handling/error_response.py:17")))

# (round 13) NIXL's handshake with the remote (prefill) agent failing for one request: the decode worker
# logs it with the handshake's exception, marks that request's blocks invalid and the request as a failed
# receive (distributed/kv_transfer/kv_connector/v1/nixl_connector.py:1111-1116 (0.11.1), request_ready);
# the engine serves on: one request's error, the exception logged with it included
_NIXL_HANDSHAKE = r"Handshake failed for request \S+"
NIXL_HANDSHAKE = Signature(
    "vllm_nixl_handshake_failed", "request_error", "NIXL's handshake failed for one request (PD)",
    ("The decode instance could not complete NIXL's handshake with the prefill instance for this request "
     "(its blocks are marked invalid; the request fails or is recomputed): the exception logged with it "
     "says why; an engine id mismatch means the request's kv_transfer_params name another prefill instance "
     "than the one reached (a proxy routing to the wrong prefill, or two instances with one engine id).",),
    # the exception logged under the line: its traceback's outer frame is the callback (:1104, :1107)
    patterns=(r".",), context=(rf'{_NIXL_HANDSHAKE}|nixl_connector\.py", line \d+, in request_ready\s*$',),
    lines=(_NIXL_HANDSHAKE,), cut_ok=True,
    priority=4, request=True, phase="serving",
    # (a release outside the unpacked five: 0.30.0 to 0.34.0 have no such line)
    sources=(("vllm 0.11.1", "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py:1112"),))

# (round 13) vllm-ascend's Mooncake connector: the decode side's transfer thread logs one request's failed
# KV read ("Mooncake transfer failed for request R", then raises; the thread catches it, logs "Failed to
# transfer KV cache for request R: E", signals the prefill side done and takes the next request):
# vllm-ascend v0.12.0rc1 vllm_ascend/distributed/mooncake_connector.py:387, :482; v0.15.0rc1
# vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py:441, :547 (_handle_request)
_ASCEND_MOONCAKE = (r"\bMooncake transfer failed for request \S+", r"\bFailed to transfer KV cache for request \S+: ")
ASCEND_MOONCAKE_REQUEST = Signature(
    "vllm_ascend_mooncake_request_failed", "request_error", "a KV transfer over Mooncake failed for one request",
    ("The decode instance's Mooncake transfer of one request's KV cache from the prefill instance failed (the "
     "transfer engine's own lines above say why: a peer segment it cannot connect to, a timeout) and the "
     "connector went on with the next request: check that the two instances reach each other over the "
     "transfer engine's network (the Ascend direct transport's ports, the device IPs); if every request "
     "fails, the deployment is down though the engine lives.",),
    lines=_ASCEND_MOONCAKE, priority=9, request=True, phase="serving",
    sources=(("vllm-ascend v0.12.0rc1", "vllm_ascend/distributed/mooncake_connector.py:387, :482"),
             ("vllm-ascend v0.15.0rc1", "vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py:441, "
                                        ":547")))

# (round 26) vLLM on no device platform: each built-in platform plugin tests the install and the machine (NVML
# finding a GPU, the vllm package's version for a CPU build, libtpu, amdsmi, habana_frameworks, ...) and, none
# active, vLLM runs on UnspecifiedPlatform ("No platform detected", platforms/__init__.py:210-212 (0.7.3);
# the vllm package's metadata missing "may cause platform detection to fail", :26-28), whose methods are
# the base Platform's: is_async_output_supported raises a bare NotImplementedError (platforms/interface.py:204
# (0.7.3); every built-in platform overrides it), get_device_name too (:187 (0.7.3), :603 (0.34.0)); the
# device config says it in words: "Failed to infer device type" (config.py:1660 (0.7.3), config/device.py:47
# (0.34.0)). (round 33) From the releases whose engine config passes the platform's device type in
# (`DeviceConfig(device=cast(Device, current_platform.device_type))`, engine/arg_utils.py:1356 (0.15.1),
# :1606 (0.20.0), :2052 (0.30.0), :2292 (0.34.0)) that check is passed over: UnspecifiedPlatform's device_type
# is "" (platforms/interface.py:979 (0.20.0), :1340 (0.30.0), :1529 (0.34.0)) and the device config hands it to
# torch as it is (`self.device = torch.device(self.device_type)`, config/device.py:75 (0.15.1), :73 (0.20.0),
# :78 (0.30.0), :68 (0.34.0)),
# whose parser refuses it, "Device string must not be empty" (pytorch 035f215 c10/core/Device.cpp:74): read
# only below that frame; an empty device string elsewhere (the caller's own torch.device) is not read so
_BASE_PLATFORM = (r'[/\\]vllm[/\\]platforms[/\\]interface\.py", line \d+, in '
                  r'(?:is_async_output_supported|get_device_name)[ \t]*\n'
                  r'[ \t]*raise NotImplementedError[ \t]*$')
_NO_DEVICE_TYPE = r"^(?:RuntimeError: )?Failed to infer device type\b"
_EMPTY_DEVICE = r"^(?:RuntimeError: )?Device string must not be empty\s*$"
_DEVICE_CONFIG = (r'[/\\]vllm[/\\]config(?:[/\\]device)?\.py", line \d+, in __post_init__[ \t]*\n'
                  r'[ \t]*self\.device = torch\.device\(self\.device_type\)[ \t]*$')


def _empty_device_detail(found: Found) -> str | None:
    if "Device string must not be empty" not in found.text:
        return None
    return ("Here the base class's device type, empty, reached torch (\"Device string must not be empty\"): the "
            "same no platform detected.")


NO_PLATFORM = Signature(
    "vllm_no_platform", "dependency_mismatch", "vLLM detected no device platform (UnspecifiedPlatform)",
    ("vLLM found no device platform to run on: the base Platform class answered (it raises "
     "NotImplementedError), as on a machine where no platform plugin found its device. Check, in the "
     "environment the server runs in, that the GPU is visible (`nvidia-smi`; a container needs the GPUs "
     "passed in, docker's gpus option or the NVIDIA runtime), that vLLM is installed as a package "
     "(`pip show vllm`: a source tree with no package metadata fails detection) and is a build for this "
     "device, not a CPU one; `VLLM_LOGGING_LEVEL=DEBUG` logs why each platform was passed over.",),
    types=r"NotImplementedError|RuntimeError",
    patterns=(r"^NotImplementedError\s*$", _NO_DEVICE_TYPE, _EMPTY_DEVICE),
    context=(rf"{_BASE_PLATFORM}|{_NO_DEVICE_TYPE}|{_DEVICE_CONFIG}",),
    lines=(_NO_DEVICE_TYPE,), priority=70, phase="launch", detail=_empty_device_detail,
    sources=(("0.7.3", "vllm/platforms/interface.py:204"), ("0.7.3", "vllm/platforms/interface.py:187"),
             ("0.34.0", "vllm/platforms/interface.py:603"), ("0.7.3", "vllm/platforms/__init__.py:210"),
             ("0.7.3", "vllm/platforms/__init__.py:26"), ("0.7.3", "vllm/config.py:1660"),
             ("0.34.0", "vllm/config/device.py:47"), ("0.30.0", "vllm/engine/arg_utils.py:2052"),
             ("0.34.0", "vllm/engine/arg_utils.py:2292"), ("0.30.0", "vllm/platforms/interface.py:1340"),
             ("0.34.0", "vllm/platforms/interface.py:1529"), ("0.30.0", "vllm/config/device.py:78"),
             ("0.34.0", "vllm/config/device.py:68"),
             ("torch (pytorch 035f215)", "c10/core/Device.cpp:74 (Device string must not be empty)")))

# (round 28) an attention backend built for a decoder only: its impl's __init__ refuses the encoder's and
# the cross-attention's types an encoder-decoder (or an encoder-only) model asks for
# (attention/backends/hpu_attn.py:156 (0.7.3), :157 (0.6.4.post1); flashinfer.py:929 (0.7.3);
# v1/attention/backends/flashinfer.py:2085 (0.34.0)), while the model's layers are built
_ENCODER_ATTN = (r"Encoder self-attention and encoder/decoder cross-attention are not implemented for "
                 r"\w+Impl\b")
ENCODER_ATTENTION = Signature(
    "vllm_encoder_attention", "kernel_config_unsupported", "the attention backend has no encoder attention",
    ("This attention backend implements decoder self-attention only; the model (encoder-decoder, or with "
     "an encoder) needs encoder or cross-attention: choose a backend that has them "
     "(`VLLM_ATTENTION_BACKEND`; on GPUs XFORMERS has both), or a platform / release whose "
     "backend supports this model.",),
    patterns=(_ENCODER_ATTN,), lines=(_ENCODER_ATTN,), priority=75, phase="load_weights",
    sources=(("0.7.3", "vllm/attention/backends/hpu_attn.py:156"),
             ("0.6.4.post1", "vllm/attention/backends/hpu_attn.py:157"),
             ("0.34.0", "vllm/v1/attention/backends/flashinfer.py:2085")))

# (round 30) V0's PD disaggregation: the model runner hands each step's KV caches and hidden states to the
# KV-transfer agent after the forward (worker/model_runner.py:1743 (0.7.3), get_kv_transfer_group()
# .send_kv_caches_and_hidden_states; its receive before it, :1697), the agent to its connector
# (distributed/kv_transfer/kv_transfer_agent.py:52-63, :68-75 (0.7.3)); SimpleConnector reshapes each layer's
# cache to the model config's (-1, KV heads / TP, hidden size / heads) there (kv_connector/simple_connector.py
# :150, :184-185 (0.7.3)), which an MLA model's cache does not have. What any connector raises in these calls
# is the KV transfer failing, and a V0 worker's exception in execute_model takes the engine down
_KV_TRANSFER_FRAMES = (r'[/\\]kv_transfer[/\\][\w/\\]*\.py", line \d+, in '
                       r'(?:send|recv)_kv_caches_and_hidden_states\s*$')
KV_TRANSFER_V0 = Signature(
    "vllm_kv_transfer_v0", "pd_transfer", "V0's KV connector failed sending or receiving a step's KV caches",
    ("The worker raised inside V0's KV-transfer connector while sending (prefill side) or receiving (decode "
     "side) a step's KV caches and hidden states, and the engine died with it: the exception under those "
     "frames says what. A shape error there is the connector's cache layout not fitting the model's "
     "(V0's SimpleConnector reshapes each layer's cache to KV heads x head size, which an MLA model such as "
     "DeepSeek's does not have): a connector and release that support this model's KV cache (V1's KV "
     "connectors, `--kv-transfer-config`), the same model, TP size and release on both instances.",),
    patterns=(r".",), context=(_KV_TRANSFER_FRAMES,), absent=(r"out of memory|OutOfMemoryError",),
    priority=30, running=True, phase="serving",
    sources=(("0.7.3", "vllm/distributed/kv_transfer/kv_transfer_agent.py:52"),
             ("0.7.3", "vllm/distributed/kv_transfer/kv_transfer_agent.py:68"),
             ("0.7.3", "vllm/worker/model_runner.py:1743"),
             ("0.7.3", "vllm/distributed/kv_transfer/kv_connector/simple_connector.py:184")))

# (round 30) V1's FlashAttention backend in vLLM 0.7.1-0.7.2 asserts, as each attention layer's impl is built
# with the model, that the FA version it chose runs here: FA2 (every GPU below compute capability 9.0) needs
# 8.0 and a vllm_flash_attn build that imports, FA3 9.0 (vllm 0.7.2 v1/attention/backends/flash_attn.py
# :142-156, "assert is_fa_version_supported(self.fa_version)", a bare AssertionError; the reason only in the
# ERROR line above it, "Cannot use FA version %d is not supported due to %s", :151-154;
# vllm_flash_attn/flash_attn_interface.py:32-49, _is_fa2_supported / _is_fa3_supported). From 0.7.3 the
# check is get_flash_attn_version's, which catches it (attention/backends/utils.py:611 (0.7.3)). An FA build
# that did not import fails the same assert (its reason, "FA2 is unavaible due to: ...", only in the ERROR
# line above the traceback, which this rule does not read): the advice names both
_FA_ASSERT = r"^[ \t]*assert is_fa_version_supported\(self\.fa_version\)[ \t]*$"
FA_VERSION_GPU = Signature(
    "vllm_fa_version_gpu", "unsupported_gpu", "V1's FlashAttention backend does not run on this GPU",
    ("vLLM's V1 FlashAttention backend refused this GPU: its FlashAttention 2 needs compute capability 8.0 "
     "or newer, FlashAttention 3 9.0 (`nvidia-smi --query-gpu=name,compute_cap --format=csv`; a T4 or V100 "
     "is 7.x). On such a GPU run the V0 engine (`VLLM_USE_V1=0`, its XFormers backend) or a newer vLLM "
     "that picks another attention backend for it; if `VLLM_FLASH_ATTN_VERSION` is set, unset it. If the "
     "ERROR line above the traceback says 'FA2 is unavaible due to', the install's FlashAttention build did "
     "not import: reinstall vLLM with its matching torch.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(r".",), context=(_FA_ASSERT,),
    priority=72, phase="load_weights",
    sources=(("vllm 0.7.2", "vllm/v1/attention/backends/flash_attn.py:156"),
             ("vllm 0.7.2", "vllm/v1/attention/backends/flash_attn.py:151"),
             ("vllm 0.7.2", "vllm/vllm_flash_attn/flash_attn_interface.py:32"),
             ("vllm 0.7.2", "vllm/vllm_flash_attn/flash_attn_interface.py:40"),
             ("0.7.3", "vllm/attention/backends/utils.py:611")))

# (round 42) The V2 model runner (vLLM 0.14+) keeps its request state in UVA buffers, pinned host memory the
# GPU addresses directly, and refuses to build them where vLLM says pinned memory is unavailable
# (UvaBuffer.__init__, "raise RuntimeError(\"UVA is not available\")", v1/worker/gpu/buffer_utils.py:47 (0.28.0),
# :42 (0.34.0); is_uva_available = is_pin_memory_available() or a CPU platform, utils/platform_utils.py:51-57).
# On CUDA and ROCm pinned memory is off only under WSL: a WSL2 kernel below 4.19.121, or (CUDA) without
# VLLM_WSL2_ENABLE_PIN_MEMORY=1 (platforms/cuda.py:290-309, rocm.py:555-567, interface.py:993-1006 (0.28.0)):
# a capability the platform vLLM runs on does not give it, read as unsupported_gpu (the runner cannot run there)
UVA_UNAVAILABLE = Signature(
    "vllm_uva_unavailable", "unsupported_gpu", "the V2 model runner needs UVA (pinned host memory) this platform lacks",
    ("vLLM's V2 model runner keeps its request state in UVA buffers (pinned host memory the GPU reads "
     "directly), and vLLM found no pinned memory here: on a GPU that is WSL (a WSL2 kernel older than "
     "4.19.121, or VLLM_WSL2_ENABLE_PIN_MEMORY not set to 1; the \"Using 'pin_memory=False' as WSL is "
     "detected\" warning says which). Run `wsl --update` and start with VLLM_WSL2_ENABLE_PIN_MEMORY=1, or "
     "with VLLM_USE_V2_MODEL_RUNNER=0 (the V1 model runner), or on native Linux.",),
    types=r"(?:\w+\.)*RuntimeError", patterns=(r"\bUVA is not available\b",), priority=72, phase="launch",
    sources=(("0.34.0", "vllm/v1/worker/gpu/buffer_utils.py:42"), ("vllm 0.28.0", "vllm/v1/worker/gpu/buffer_utils.py:47"),
             ("vllm 0.28.0", "vllm/utils/platform_utils.py:57"), ("vllm 0.28.0", "vllm/platforms/cuda.py:299"),
             ("vllm 0.28.0", "vllm/platforms/interface.py:1002")))

# (round 43) Without a placement group of its own, vLLM's Ray executor makes one and first checks that the node
# it runs on (the driver's) has one free device of the platform's Ray key (current_platform.ray_device_key: "GPU"
# on CUDA, ROCm, XPU; "TPU"; "NPU" on vllm-ascend, vllm_ascend/platform.py:52 (0.11.0rc0)), refusing with
# "ValueError: Current node has no {device_str} available. {current_node_resource=}. vLLM engine cannot start
# without {device_str}. ..." (initialize_ray_cluster, executor/ray_utils.py:335-340 (0.7.2), :366-372 (0.10.2);
# v1/executor/ray_utils.py:464-470 (0.18.0); gone by 0.34.0).
# The resources are Ray's free ones on that node: Ray started there without the devices (or advertising
# another key, 'GPU': 8.0 where the platform asks for 'NPU'), or all of them taken: a launch the cluster as
# started cannot satisfy, bad_argument at launch as the placement group's wait (loading.PLACEMENT_DEVICES)
RAY_NODE_NO_DEVICE = Signature(
    "vllm_ray_node_no_device", "bad_argument", "Ray offers no free device of the platform's kind on vLLM's node",
    ("vLLM's Ray executor needs one free device of its platform's Ray resource ('GPU'; 'NPU' on vllm-ascend; "
     "'TPU') on the node it is started from, and the current_node_resource it printed has none: `ray status` "
     "shows what Ray advertises and what is in use. Start Ray on that node with the devices visible (on Ascend "
     "Ray must list 'NPU', not 'GPU': declare it with `ray start --resources='{\"NPU\": 8}'` if it is not "
     "detected), free the devices another job holds, or run `vllm serve` on a node that has them.",),
    types=r"(?:\w+\.)*ValueError", patterns=(r"\bCurrent node has no \w+ available\b",), priority=72,
    phase="launch",
    sources=(("vllm 0.7.2", "vllm/executor/ray_utils.py:337"), ("vllm 0.10.2", "vllm/executor/ray_utils.py:369"),
             ("vllm 0.18.0", "vllm/v1/executor/ray_utils.py:466")))

# (round 48) torch's CUDA API takes only a CUDA device: torch.cuda.set_device -> _get_device_index raises
# "ValueError: Expected a cuda device, but got: {device}" for any other type (torch/cuda/_utils.py:34 in the
# torch vllm-ascend 0.8.5 runs, the log's frame; torch 2.13.0 torch/cuda/_utils.py:582). vLLM 0.8.5.post1's
# Ray worker sets its device that way on every platform but TPU before the first step
# (setup_device_if_necessary, executor/ray_utils.py:105-119, the call :117, from execute_model_ray :130); from
# 0.9.1 it asks the platform (current_platform.set_device, ray_utils.py:116), which resolves to
# torch.<device_type>.set_device (platforms/interface.py:498-501 (0.9.1); a method, interface.py:301 (0.9.2);
# vllm_ascend 0.9.2rc1 platform.py:97-98 torch.npu.set_device). A CUDA-only call handed an NPU's (XPU's,
# HPU's, ...) device is code of another platform reached on this one: a vLLM and a platform plug-in whose
# releases do not fit. A CPU device there is a caller's own tensor on the wrong device, not read so
_OTHER_DEVICE = r"\bExpected a cuda(?: or cpu)? device, but got: (?:npu|xpu|hpu|mps|xla|mlu|musa)(?::\d+)?\b"
CUDA_CALL_OTHER_DEVICE = Signature(
    "vllm_cuda_call_other_device", "dependency_mismatch",
    "a CUDA-only call got another platform's device (torch: Expected a cuda device)",
    ("torch's CUDA API was handed a device of another platform (the device after 'but got:', npu on Ascend): "
     "code written for CUDA ran on this platform. In vLLM 0.8.5 the Ray executor's worker sets its device with "
     "torch.cuda.set_device on every platform but TPU; from 0.9.1 it asks the platform. Serve with "
     "`--distributed-executor-backend mp` on one node, or install a vLLM release whose Ray path is "
     "platform-aware together with the plug-in release made for it (vllm-ascend's README names the pair), in a "
     "fresh environment.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_OTHER_DEVICE,), priority=72,
    sources=(("vllm 0.8.5.post1", "vllm/executor/ray_utils.py:117"),
             ("vllm 0.8.5.post1", "vllm/executor/ray_utils.py:130"),
             ("vllm 0.9.1", "vllm/executor/ray_utils.py:116"),
             ("vllm 0.9.1", "vllm/platforms/interface.py:498"),
             ("vllm 0.9.2", "vllm/platforms/interface.py:301"),
             ("vllm_ascend 0.9.2rc1", "vllm_ascend/platform.py:98"),
             ("torch 2.13.0", "torch/cuda/_utils.py:582 (Expected a cuda device, but got: {device})")))

# (round 61) A Ray process's core worker registers with its node's raylet as it starts (ray.init in the driver, each
# worker process); where the raylet does not answer (its socket file gone, the raylet dead) it logs "Failed to register
# worker <id> to Raylet. <status>" at ERROR and exits at once (ray-project/ray 4580f26 src/ray/core_worker/
# core_worker.cc:182-184, RAY_LOG(ERROR), QuickExit()). vLLM's Ray executor starts the cluster and its workers at
# launch; Ray's IPC failure names no kind of ddlab's. A log of Ray's lines alone shows no vLLM mark: SGLang's
# registry reads the line as a crash's echo (diagnosis/signatures.py WRAPPER_LINES)
RAY_UNREGISTERED = r"\bFailed to register worker \w+ to Raylet\."
RAY_WORKER_UNREGISTERED = Signature(
    "vllm_ray_worker_unregistered", "unknown", "a Ray process could not register with its raylet and exited",
    ("Ray's core worker could not register with the node's raylet (the status after 'to Raylet.' says why: "
     "a missing socket file means the raylet is gone or another Ray session's temp folder was cleaned): "
     "`ray status` and the raylet's log (/tmp/ray/session_latest/logs/raylet.out) show it. Stop stale Ray "
     "sessions (`ray stop`), keep /tmp/ray from being cleaned under a running cluster, and start again.",),
    lines=(RAY_UNREGISTERED,), priority=60, fatal=True,
    sources=(("ray 4580f26", "src/ray/core_worker/core_worker.cc:182-184 (Failed to register worker ... to "
                             "Raylet., QuickExit())"),))

SIGNATURES: list[Signature] = [ASCEND_MOONCAKE_REQUEST, MOONCAKE_REGISTER, NIXL_HANDSHAKE, NO_DEVICE_FUNCTION, AMD_PAGE_FAULT, LORA_RANK, MOONCAKE_PIPE, PTXAS_ERROR, NEURON_COMPILE, NEURON_EXEC_OOB,
                               REQUEST_5XX, REQUEST_4XX,
                               NO_PLATFORM, ENCODER_ATTENTION,
                               KV_TRANSFER_V0, FA_VERSION_GPU, UVA_UNAVAILABLE, RAY_NODE_NO_DEVICE,
                               CUDA_CALL_OTHER_DEVICE, RAY_WORKER_UNREGISTERED]
