"""The rules that held-out round 33 of the vLLM corpus (w3301-w3314, measured once at 30a9747 with its logs
d04d963) showed missing: the AWS Neuron runtime failing a model's execution on an out-of-bounds memory access
(w3303: NRT_EXEC_OOB, status 1006, an accelerator kernel's fault); torch refusing the empty device string that
vLLM's device config gets from a platform it could not detect (w3308: UnspecifiedPlatform's device type, "";
its label, unknown, is disputed: the corpus reads no platform detected as dependency_mismatch since w2610).

Each rule is general and cited from vLLM's source (its wheels) or the library's: the log that showed it is one
case, a text written from the source in another form is the other, and a text beside it that the rule must not
take is a third. The source checks skip where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_ARGS = "vllm/engine/arg_utils.py"
_DEVICE = "vllm/config/device.py"
_FROM_PLATFORM = "device_config = DeviceConfig(device=cast(Device, current_platform.device_type))"
test_each_rules_text_is_vllms_own = wheel_text_test([
    # the engine config takes its device type from the platform vLLM detected
    ("0.15.1", _ARGS, _FROM_PLATFORM), ("0.20.0", _ARGS, _FROM_PLATFORM), ("0.34.0", _ARGS, _FROM_PLATFORM),
    # and the device config hands it to torch.device as it is
    ("0.15.1", _DEVICE, "self.device = torch.device(self.device_type)"),
    ("0.20.0", _DEVICE, "self.device = torch.device(self.device_type)"),
    ("0.34.0", _DEVICE, "self.device = torch.device(self.device_type)"),
    # no platform detected: the base class's device type is the empty string
    ("0.20.0", "vllm/platforms/interface.py", 'class UnspecifiedPlatform(Platform):\n'
                                              '    _enum = PlatformEnum.UNSPECIFIED\n    device_type = ""'),
    ("0.20.0", "vllm/platforms/__init__.py",
     'logger.debug("No platform detected, vLLM is running on UnspecifiedPlatform")'),
])

_NEURON_STEP = [
    ("vllm/v1/engine/core.py", 411, "step", "model_output = future.result()"),
    ("vllm_neuron/worker/neuronx_distributed_model_runner.py", 759, "execute_model",
     "return self._execute_model_for_text(scheduler_output)"),
    ("neuronx_distributed_inference/models/model_wrapper.py", 721, "_forward", "return self.model(*args)"),
]


def test_the_neuron_runtimes_out_of_bounds_execution_is_an_accelerator_kernel_fault():
    """w3303: vllm-neuron's engine core dies on the first request in the compiled context-encoding model,
    "RuntimeError: Failed to execute the model status=1006 message=Execution Out-Of-Bounds Memory Access"
    (a TorchScript traceback of neuronx_distributed's spmd forward); read unknown before. NRT_EXEC_OOB (1006:
    "one or more indirect memcopies and/or embedding updates are out of bound", aws-neuron-sdk's
    nrt_status.h) is the device's illegal memory access."""
    assert reads(read_log("w3303.log")) == (True, "cuda_illegal_access", "serving")
    assert vllm_signature(read_log("w3303.log")) == "vllm_neuron_exec_oob"
    written = vllm_traceback(*_NEURON_STEP, exc=(
        "RuntimeError: Failed to execute the model status=1006 message=Execution Out-Of-Bounds Memory Access"))
    assert vllm_signature(written) == "vllm_neuron_exec_oob"
    assert reads(written)[:2] == (True, "cuda_illegal_access")
    # the runtime's own line for it (Neuron Runtime 2.19.5.0's release notes), before the engine's traceback
    runtime = ("2026-Jun-27 02:23:02.0123 243:251 ERROR  TDRV:exec_process_custom_notification  Received "
               "notification generated at runtime: failed to run scatter/gather (indirect memory copy), due to "
               "out-of-bound access.\n") + written.replace("status=1006 message=Execution Out-Of-Bounds Memory "
                                                            "Access", "status=1006")
    assert vllm_signature(runtime) == "vllm_neuron_exec_oob"


def test_the_neuron_runtimes_other_execution_statuses_are_not_it():
    """NRT_EXEC_COMPLETED_WITH_NUM_ERR (1003, a NaN produced) and NRT_EXEC_NC_BUSY (1005, the core held by
    another process) fail the same call in the same words but fault nothing."""
    numerical = vllm_traceback(*_NEURON_STEP, exc=(
        "RuntimeError: Failed to execute the model status=1003 message=Numerical Error"))
    assert vllm_signature(numerical) != "vllm_neuron_exec_oob"
    assert reads(numerical)[1] != "cuda_illegal_access"
    busy = vllm_traceback(*_NEURON_STEP, exc="RuntimeError: Failed to execute the model status=1005 message=Busy")
    assert reads(busy)[1] != "cuda_illegal_access"


_LLM = [("vllm/entrypoints/llm.py", 351, "__init__", "self.llm_engine = LLMEngine.from_engine_args("),
        ("vllm/v1/engine/llm_engine.py", 172, "from_engine_args",
         "vllm_config = engine_args.create_engine_config(usage_context)")]
_EMPTY = "RuntimeError: Device string must not be empty"


def test_an_empty_device_string_in_vllms_device_config_is_no_platform_detected():
    """w3308: a FastAPI wrapper's LLM(...) on a node where Triton finds no driver and torch no CUDA runtime:
    create_engine_config -> DeviceConfig(device=current_platform.device_type) -> config/device.py's
    `self.device = torch.device(self.device_type)`, "RuntimeError: Device string must not be empty" (c10's
    Device parser); read bad_argument (ready) before. The device type came from UnspecifiedPlatform (""):
    vLLM detected no platform, as `vllm_no_platform` reads it."""
    assert reads(read_log("w3308.log")) == (True, "dependency_mismatch", "launch")
    assert vllm_signature(read_log("w3308.log")) == "vllm_no_platform"
    # 0.34.0's lines, the API server's own start
    written = vllm_traceback(
        ("vllm/entrypoints/openai/api_server.py", 120, "build_async_engine_client_from_engine_args",
         "vllm_config = engine_args.create_engine_config(usage_context=usage_context)"),
        (_ARGS, 2292, "create_engine_config", _FROM_PLATFORM),
        (_DEVICE, 68, "__post_init__", "self.device = torch.device(self.device_type)"), exc=_EMPTY, head="")
    assert vllm_signature(written) == "vllm_no_platform"
    assert reads(written) == (True, "dependency_mismatch", "launch")
    assert "Device string must not be empty" in diagnose(written).suggestion  # the advice says how it got there
    assert vllm_signature(vllm_traceback(*_LLM, (_ARGS, 1606, "create_engine_config", _FROM_PLATFORM),
                                         (_DEVICE, 73, "__post_init__",
                                          "self.device = torch.device(self.device_type)"), exc=_EMPTY)) \
        == "vllm_no_platform"


def test_an_empty_device_string_elsewhere_is_not_it():
    """torch.device("") in the caller's own code (an unset DEVICE variable) says nothing of vLLM's platform."""
    own = vllm_traceback(("my_app/server.py", 40, "load", 'model = model.to(os.environ.get("DEVICE", ""))'),
                         ("torch/nn/modules/module.py", 1343, "to", "device, dtype, non_blocking, "
                          "convert_to_format = torch._C._nn._parse_to(*args, **kwargs)"), exc=_EMPTY, head="")
    assert vllm_signature(own) != "vllm_no_platform"


_UVICORN = "INFO:     Started server process [2163909]\nINFO:     Waiting for application startup.\n"
_ARGS_LINE = "INFO 04-28 01:32:37 [utils.py:233] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct'}\n"


def test_uvicorns_start_before_vllms_args_is_not_this_engines_ready():
    """vLLM's server logs its args, builds the engine and only then starts uvicorn (api_server.py:539, :692,
    then serve_http (0.20.0)): uvicorn's "Started server process" before vLLM's args line is an app that
    builds the engine in its own startup (w3308's FastAPI wrapper), whose crash there is the engine's launch."""
    crash = vllm_traceback(("my_app/server.py", 357, "get_llm", "_llm = LLM(**llm_kwargs)"), *_LLM,
                           (_ARGS, 1606, "create_engine_config", _FROM_PLATFORM),
                           (_DEVICE, 73, "__post_init__", "self.device = torch.device(self.device_type)"),
                           exc=_EMPTY, head="")
    assert reads(_UVICORN + _ARGS_LINE + crash) == (True, "dependency_mismatch", "launch")


def test_uvicorns_start_after_vllms_args_is_still_ready():
    """Near miss: the same lines in vLLM's own order (args, then uvicorn) keep uvicorn's start as ready."""
    crash = vllm_traceback(("starlette/routing.py", 694, "lifespan",
                            "async with self.lifespan_context(app) as maybe_state:"),
                           ("vllm/entrypoints/openai/api_server.py", 180, "lifespan", "await _run_task()"),
                           exc="RuntimeError: lifespan task failed", head="")
    assert reads(_ARGS_LINE + _UVICORN + crash)[2] == "ready"
    assert reads(_UVICORN + _ARGS_LINE + crash)[2] == "launch"
