"""The rules that held-out rounds 11 and 12 of the vLLM corpus (vl01-vl19, vm01-vm20, each measured
once) showed missing.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.6.4.post1,
0.7.3, 0.30.0, 0.33.0, 0.34.0; torch's CUDA check and the CUDA runtime's error text; torch_npu's
error table): the log that showed it is one case, a text written from the source in another form is
the other, and a text beside it that the rule must not take is a third. The source checks are a test
of their own, which skips where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import (VLLM_WHEELS, assert_in_wheel, read_log, reads, vllm_signature, vllm_traceback,
                     wheel_text_test)


SOURCES = [
    # the fused experts' weights a checkpoint's names map onto
    ("0.34.0", "vllm/model_executor/layers/fused_moe/unquantized_fused_moe_method.py",
     'layer.register_parameter("w2_weight", w2_weight)'),
    ("0.7.3", "vllm/model_executor/layers/fused_moe/layer.py", 'layer.register_parameter("w2_weight", w2_weight)'),
    # the API server's output handler, and the client raising what the engine forwarded there
    ("0.30.0", "vllm/v1/engine/async_llm.py", "outputs = await engine_core.get_output_async()"),
    ("0.33.0", "vllm/v1/engine/async_llm.py", "outputs = await engine_core.get_output_async()"),
    ("0.34.0", "vllm/v1/engine/async_llm.py", "outputs = await engine_core.get_output_async()"),
    ("0.34.0", "vllm/v1/engine/core_client.py", "# from this (run_output_handler) task to shut down the server."),
    ("0.34.0", "vllm/v1/engine/output_processor.py", '"""Propagate error to all generate() tasks."""'),
    # structured output: the grammar refusing a token, the scheduler ending that request
    ("0.30.0", "vllm/v1/structured_output/backend_xgrammar.py", '"Failed to advance FSM for request %s "'),
    ("0.33.0", "vllm/v1/structured_output/backend_xgrammar.py", '"Failed to advance FSM for request %s "'),
    ("0.30.0", "vllm/v1/core/sched/scheduler.py", '"Unexpected: grammar rejected tokens %s for request %s. "'),
    ("0.34.0", "vllm/v1/core/sched/scheduler.py", '"Unexpected: grammar rejected tokens %s for request %s. "'),
    # the pynccl communicator's warm-up all-reduce, run only while it is built
    ("0.6.4.post1", "vllm/distributed/device_communicators/pynccl.py", "            self.all_reduce(data)\n"),
    ("0.7.3", "vllm/distributed/device_communicators/pynccl.py", "            self.all_reduce(data)\n"),
    ("0.30.0", "vllm/distributed/device_communicators/pynccl.py", "            self.all_reduce(data)\n"),
    ("0.34.0", "vllm/distributed/device_communicators/pynccl.py", "            self.all_reduce(data)\n"),
    # vLLM's only faulthandler dump on request goes to a file of its own
    ("0.34.0", "vllm/utils/watch_dog.py", "faulthandler.dump_traceback(file=f, all_threads=True)"),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


def test_the_warmup_all_reduce_is_only_in_the_communicators_construction():
    """The pynccl code line read as a startup occurs once in each release, in the construction."""
    for release, at in (("0.7.3", "def __init__("), ("0.34.0", "def _init_comm(")):
        assert_in_wheel(release, "vllm/distributed/device_communicators/pynccl.py", at)
        source = (VLLM_WHEELS / release / "vllm/distributed/device_communicators/pynccl.py").read_text()
        assert source.count("self.all_reduce(data)") == 1
        before = source[:source.index("self.all_reduce(data)")]
        assert before.rindex("def ") == before.rindex(at.split("(")[0])


# --- torch's "CUDA error: invalid configuration argument": a launch refused, no fault ---------

def test_an_invalid_launch_configuration_is_a_kernel_config_unsupported():
    """vm06: a V0 engine's memory-profiling run after "Model loading took 66.5477 GiB", then torch's
    "CUDA error: invalid configuration argument" (cudaErrorInvalidConfiguration, 9: a launch asking for
    more threads, blocks or shared memory than the device gives) with torch's hint lines; read
    cuda_illegal_access before (the hint lines alone)."""
    assert reads(read_log("vm06.log")) == (True, "kernel_config_unsupported", "memory_pool")
    frames = (("vllm/v1/worker/gpu_worker.py", 300, "determine_available_memory", "self.model_runner.profile_run()"),
              ("vllm/model_executor/layers/fused_moe/fused_moe.py", 900, "invoke_fused_moe_kernel", "kernel[grid]("))
    text = vllm_traceback(*frames, exc="torch.AcceleratorError: CUDA error: invalid configuration argument")
    assert reads(text)[:2] == (True, "kernel_config_unsupported")
    assert diagnose("RuntimeError: CUDA error: invalid configuration argument\n", family="vllm").kind \
        == "kernel_config_unsupported"
    # an illegal access stays one, and "invalid argument" (cudaErrorInvalidValue: any call) is no launch
    assert reads(text.replace("invalid configuration argument", "an illegal memory access was encountered"))[1] \
        == "cuda_illegal_access"
    assert reads(text.replace("invalid configuration argument", "invalid argument"))[1] != "kernel_config_unsupported"


# --- a fused expert's weight the model has no parameter for -----------------------------------

def test_a_fused_experts_weight_name_is_a_checkpoint_tensor():
    """vm12: qwen3_vl_moe's load_fused_expert_weights looks "layers.0.mlp.experts.w2_weight" up in
    params_dict and raises KeyError (the paste starts inside the frame's line); the fused experts'
    weights are w13_weight / w2_weight (unquantized_fused_moe_method.py:96, :117 (0.34.0)): read
    unknown at launch before."""
    assert reads(read_log("vm12.log")) == (True, "weights_unreadable", "load_weights")
    frames = (("vllm/model_executor/model_loader/default_loader.py", 300, "load_weights",
               "loaded = model.load_weights(self.get_all_weights(model_config, model))"),
              ("vllm/model_executor/models/qwen3_moe.py", 500, "load_weights", "param = params_dict[name]"))
    for name in ("w13_weight", "w2_weight", "w2_weight_scale_inv"):
        said = reads(vllm_traceback(*frames, exc=f"KeyError: 'model.layers.3.mlp.experts.{name}'"))
        assert said == (True, "weights_unreadable", "load_weights"), name
    # a name that ends in no tensor's suffix, raised elsewhere than at the params_dict[name] lookup (which
    # round 28's vllm_params_lookup reads whatever the name), or a bare one with no module path, is not this
    other = (frames[0], ("vllm/model_executor/models/qwen3_moe.py", 480, "load_weights",
                         "shard = stacked[name]"))
    assert reads(vllm_traceback(*other, exc="KeyError: 'model.layers.3.mlp.experts.w2_gate'"))[1] \
        != "weights_unreadable"
    assert reads(vllm_traceback(*frames, exc="KeyError: 'w2_weight'"))[1] != "weights_unreadable"


# --- the output handler's frame in a request's traceback: the engine failed -------------------

_HANDLER = (("vllm/entrypoints/openai/chat_completion/serving.py", 487, "chat_completion_stream_generator",
             "async for res in result_generator:"),
            ("vllm/v1/engine/async_llm.py", 579, "generate", "out = q.get_nowait() or await q.get()"),
            ("vllm/v1/engine/output_processor.py", 88, "get", "raise output"),
            ("vllm/v1/engine/async_llm.py", 660, "output_handler", "outputs = await engine_core.get_output_async()"))


def test_the_output_handlers_failure_in_a_streamed_request_is_the_engines():
    """vm17: a chat stream's traceback (serving.py:984) through generate's queue into the API server's
    output_handler and engine_core.get_output_async(), cut there: what the engine core client
    forwarded (the engine's failure) raised "to shut down the server" and handed to every request;
    read one request's error (not crashed) before."""
    assert reads(read_log("vm17.log")) == (True, "unknown", "serving")
    cut = vllm_traceback(*_HANDLER, exc=None)
    assert reads(cut) == (True, "unknown", "serving")
    dead = vllm_traceback(*_HANDLER, exc="vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
                                         "issue. See stack trace (above) for the root cause.")
    assert reads(dead)[:2] == (True, "unknown")
    # the same stream's traceback raised in the request's own handling stays one request's error
    own = vllm_traceback(*_HANDLER[:1], ("vllm/entrypoints/openai/chat_completion/serving.py", 700,
                                         "chat_completion_stream_generator", "tool_parser.extract(delta)"),
                         exc=None)
    assert reads(own)[:2] == (False, "request_error")


# --- structured output: the grammar refusing a token ends one request ------------------------

def test_a_grammar_refusing_tokens_is_one_requests_error():
    """vm18 (MTP + grammar: xgrammar's "Failed to advance FSM", the scheduler's "grammar rejected
    tokens [...] ... Terminating request.", the server's internal error) and vm19 (seven "Failed to
    advance FSM" lines for one request): the request ends with an error, the engine steps on; read
    as nothing before."""
    for log in ("vm18.log", "vm19.log"):
        found = diagnose(read_log(log))
        assert (found.crashed, found.kind) == (False, "request_error"), log
    line = ("(EngineCore_DP0 pid=7) ERROR 12-04 10:00:00 [scheduler.py:2058] Unexpected: grammar rejected "
            "tokens [1710, 198] for request chatcmpl-1. Terminating request.\n")
    assert (diagnose(line).crashed, diagnose(line).kind) == (False, "request_error")
    # the words in a request's own prompt, logged by the server, are no grammar failure
    quoted = ("(APIServer pid=1) INFO 12-04 10:00:00 [logger.py:40] Received request chatcmpl-1: prompt: "
              "'why does it say Failed to advance FSM for request?'\n")
    assert diagnose(quoted).kind is None


# --- round 11, vl07: the communicator's warm-up all-reduce is a startup ------------------------

def test_the_pynccl_warmup_all_reduce_shows_a_worker_starting():
    """vl07: a TP worker's NCCL error in pynccl's warm-up all_reduce (pynccl.py:105 (0.7.3), :190
    (0.34.0)), its traceback joined into two lines; NCCL faults with no startup shown read as a
    running server's, serving before; the warm-up's code line shows the communicator being built."""
    assert reads(read_log("vl07.log")) == (True, "nccl", "launch")
    frames = (("vllm/distributed/device_communicators/pynccl.py", 190, "_init_comm", "self.all_reduce(data)"),
              ("vllm/distributed/device_communicators/pynccl_wrapper.py", 291, "NCCL_CHECK",
               'raise RuntimeError(f"NCCL error: {error_str}")'))
    exc = "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
    assert reads(vllm_traceback(*frames, exc=exc)) == (True, "nccl", "launch")
    # the same error in an all-reduce of a step (no warm-up line): a running server's
    step = (("vllm/distributed/device_communicators/pynccl.py", 280, "all_reduce", "self.nccl.ncclAllReduce("),
            frames[1])
    assert reads(vllm_traceback(*step, exc=exc)) == (True, "nccl", "serving")


# --- round 11, vl08: an Ascend runtime fault code --------------------------------------------

def test_an_npu_calls_device_fault_code_is_an_illegal_access():
    """vl08: vllm-ascend on a 310P, "npuSynchronizeDevice:...compiler_depend.ts:508 NPU function error:
    AclrtSynchronizeDeviceWithTimeout, error code is 507013" while the KV cache tensors' format is
    cast; 507013 is the runtime's "System Direct Memory Access (DMA) hardware execution error"
    (torch_npu NPUErrorCodes.h; CANN ACL_ERROR_RT_SYS_DMA): a fault of the device's own execution,
    read unknown before."""
    assert reads(read_log("vl08.log")) == (True, "cuda_illegal_access", "memory_pool")
    call = ("RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:508 NPU "
            "function error: AclrtSynchronizeDeviceWithTimeout, error code is {}\n")
    for code in (507013, 507015, 507035, 507044):
        assert vllm_signature(call.format(code)) == "vllm_npu_fault_code", code
    assert diagnose("[Error]: The vector core execution is abnormal.\n", family="vllm").kind == "cuda_illegal_access"
    # a code that is no device fault (the device failing to start, an empty context) is not this
    for code in (507033, 107002, 5070130):
        assert vllm_signature(call.format(code)) != "vllm_npu_fault_code", code


# --- a faulthandler dump of vLLM's frames: a fatal signal ------------------------------------

def test_a_faulthandler_dump_of_vllms_frames_is_a_native_crash():
    """vm08: only the stack faulthandler writes on a fatal signal ('File "...", line N in f', no
    comma), ipex-llm's vLLM 0.8.3 in profile_run, header and end cut; vLLM dumps in that form on
    request only to a watchdog file of its own (utils/watch_dog.py:92 (0.34.0)): read as nothing
    before."""
    assert reads(read_log("vm08.log")) == (True, "native_crash", "memory_pool")
    dump = ('  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 3000 in '
            '_dummy_run\n'
            '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 3100 in '
            'profile_run\n')
    assert reads(dump, "vllm") == (True, "native_crash", "memory_pool")
    # a Python traceback's frames (with the comma) are no dump, nor another package's dumped frames
    assert diagnose(dump.replace(" in ", ", in "), family="vllm").kind != "native_crash"  # a cut traceback
    assert not diagnose(dump.replace("/vllm/", "/mylib/"), family="vllm").crashed
