"""The rules that held-out round 22 of the vLLM corpus (vx01-vx23, measured once at 925f2ec with its logs
bfce8b6) showed missing: a layer's weight loader refusing a checkpoint tensor's shape (vx02, vx03), aiter's
list of the GPU archs its C++ kernels build for (vx11), and V0's engine iteration timeout (vx20).

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.6.4.post1 to 0.34.0;
aiter by its GitHub commit, no wheel holds its source): the log that showed it is one case, a text written
from the source in another form is the other, and a text beside it that the rule must not take is a third.
The source checks skip where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import REAL, read_log, reads, vllm_signature, vllm_traceback, wheel_text_test


_TRIED = 'f"Tried to load weights of size {loaded_weight.size()}"'
_BARE = "assert param_data.shape == loaded_weight.shape"
_TIMED_OUT = '"Engine iteration timed out. This should never happen!")'
SOURCES = [
    # a layer's weight_loader: the size check with its message (V1 releases), without one (V0), the sharded
    # layers' shape check
    ("0.30.0", "vllm/model_executor/layers/linear.py", _TRIED),
    ("0.33.0", "vllm/model_executor/layers/linear.py", _TRIED),
    ("0.34.0", "vllm/model_executor/layers/linear.py", _TRIED),
    ("0.34.0", "vllm/model_executor/layers/linear.py", 'f"to a parameter of size {param.size()}"'),
    ("0.6.4.post1", "vllm/model_executor/layers/linear.py", "assert param.size() == loaded_weight.size()\n"),
    ("0.7.3", "vllm/model_executor/layers/linear.py", "assert param.size() == loaded_weight.size()\n"),
    ("0.6.4.post1", "vllm/model_executor/layers/linear.py", _BARE),
    ("0.34.0", "vllm/model_executor/layers/linear.py", _BARE),
    ("0.34.0", "vllm/model_executor/parameter.py", _BARE),
    # V0's engine loop: the wait with a timeout, its log line, the default
    ("0.6.4.post1", "vllm/engine/async_llm_engine.py", "async with asyncio_timeout(ENGINE_ITERATION_TIMEOUT_S):"),
    ("0.6.4.post1", "vllm/engine/async_llm_engine.py", _TIMED_OUT),
    ("0.6.3.post1", "vllm/engine/async_llm_engine.py", _TIMED_OUT),
    ("0.7.3", "vllm/engine/async_llm_engine.py", _TIMED_OUT),
    ("0.6.4.post1", "vllm/engine/async_llm_engine.py", 'logger.error("Engine background task failed", exc_info=e)'),
    ("0.6.4.post1", "vllm/envs.py", 'os.environ.get("VLLM_ENGINE_ITERATION_TIMEOUT_S", "60")'),
    ("0.34.0", "vllm/envs.py", '"VLLM_ROCM_USE_AITER": lambda: ('),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


# --- vx02, vx03: a layer's weight loader refusing a checkpoint tensor's shape ----------------------------------

_LOADER = ("vllm/model_executor/model_loader/default_loader.py", 300, "load_weights",
           "loaded_weights = model.load_weights(self.get_all_weights(model_config, model))")
_LINEAR = ("vllm/model_executor/layers/linear.py", 411, "weight_loader",
           "assert param.size() == loaded_weight.size(), (")
_SIZES = ("AssertionError: Tried to load weights of size torch.Size([4096, 2048])to a parameter of size "
          "torch.Size([2048, 2048])")


def test_a_weight_loaders_size_check_is_weights_unreadable():
    """vx02: an engine core's traceback tail, the size check's frame and its message (the speculative draft
    the thread is about shows in no line): read unknown at launch before. The same message as 0.34.0 logs it
    under the loader's frames, and V0's bare shape check, raised in the sharded layer's frame (vx03: read
    unknown before; the frames and the assert line are all the paste says, and the assert compares only the
    checkpoint's tensor with its parameter)."""
    assert reads(read_log("vx02.log")) == (True, "weights_unreadable", "load_weights")
    assert vllm_signature(read_log("vx02.log")) == "vllm_loader_shape"
    assert reads(read_log("vx03.log")) == (True, "weights_unreadable", "load_weights")
    logged = vllm_traceback(_LOADER, _LINEAR, exc=_SIZES)
    assert reads(logged, family="vllm") == (True, "weights_unreadable", "load_weights")
    assert vllm_signature(logged) == "vllm_loader_shape"
    bare = vllm_traceback(("vllm/model_executor/models/llama.py", 438, "load_weights",
                           "weight_loader(param, loaded_weight)"),
                          ("vllm/model_executor/layers/linear.py", 355, "weight_loader",
                           "assert param_data.shape == loaded_weight.shape"), exc="AssertionError", head="")
    assert vllm_signature(bare) == "vllm_loader_shape"


def test_other_asserts_of_the_weight_loader_are_not_a_shape_refusal():
    """The same loader's other asserts (the shard id, an output size) say nothing of the checkpoint tensor's
    shape; an AssertionError raised below the shape check's frame (a deeper frame) is not that check's; the
    default loader's own text keeps its signature."""
    shard = vllm_traceback(("vllm/model_executor/models/llama.py", 438, "load_weights",
                            "weight_loader(param, loaded_weight)"),
                           ("vllm/model_executor/layers/linear.py", 470, "weight_loader",
                            "assert loaded_shard_id < len(self.output_sizes)"), exc="AssertionError", head="")
    assert vllm_signature(shard) != "vllm_loader_shape"
    assert reads(shard, family="vllm")[1] != "weights_unreadable"
    deeper = vllm_traceback(_LINEAR, ("vllm/model_executor/utils.py", 80, "copy_weight_",
                                      "assert dst.is_contiguous()"), exc="AssertionError", head="")
    assert vllm_signature(deeper) != "vllm_loader_shape"
    default = ("AssertionError: Attempted to load weight (torch.Size([4096])) into parameter "
               "(torch.Size([2048]))")
    assert vllm_signature(default) == "vllm_weights_unreadable"


# --- vx11: aiter's list of the GPU archs its C++ kernels build for ---------------------------------------------
# ROCm/aiter e4048607a5 csrc/cpp_itfs/utils.py:144-161 (validate_and_update_archs: assert all(arch in
# allowed_archs ...), f"One of GPU archs of {archs} is invalid or not supported"); 227c47698e :100-117

def test_aiters_arch_list_refusing_the_gpu_is_unsupported_gpu():
    """vx11: a TP worker's traceback in aiter's cpp_itfs build, the assert's message naming gfx1201 (read
    unknown before: SGLang's aiter rule reads chip_info's other text and was not in vLLM's list). The
    GPU_ARCHS form (several archs) and chip_info's text, now in vLLM's list too."""
    assert reads(read_log("vx11.log"))[:2] == (True, "unsupported_gpu")
    assert vllm_signature(read_log("vx11.log")) == "vllm_aiter_arch_unsupported"
    several = "AssertionError: One of GPU archs of ['gfx942', 'gfx1030'] is invalid or not supported\n"
    assert vllm_signature(several) == "vllm_aiter_arch_unsupported"
    chip = "KeyError: 'Unknown GPU architecture: gfx1201. Supported architectures: [\\'gfx942\\']'\n"
    assert reads(chip, family="vllm")[:2] == (True, "unsupported_gpu")


def test_other_arch_texts_are_not_aiters():
    """hipcc's own warning for a flag it does not take (the same module, logger.warning) and an arch list
    that only mentions support are not the refusal."""
    warned = "WARNING 08-10 19:58:01 [utils.py:139] --offload-arch=gfx1201 is not supported by hipcc.\n"
    assert vllm_signature(warned) != "vllm_aiter_arch_unsupported"
    listed = "INFO 08-10 19:58:01 [rocm.py:200] GPU archs of ['gfx1201'] are supported by this build\n"
    assert vllm_signature(listed) != "vllm_aiter_arch_unsupported"


# --- vx20: V0's engine iteration timeout -----------------------------------------------------------------------

_STARTED = ("INFO 04-02 10:21:01 llm_engine.py:429] init engine (profile, create kv cache, warmup model) took "
            "11.03 seconds\nINFO 04-02 10:21:28 async_llm_engine.py:209] Added request c75966.\n")


def test_v0s_engine_iteration_timeout_is_a_hang_while_serving():
    """vx20: a ready V0 server, one request added, 60 s later the loop's "Engine iteration timed out" and
    "Engine background task failed" (read as the engine's death, unknown, before). The line alone, as 0.7.3
    logs it above its traceback, is the same."""
    assert reads(read_log("vx20.log")) == (True, "hang", "serving")
    assert vllm_signature(read_log("vx20.log")) == "vllm_iteration_timeout"
    alone = _STARTED + ("ERROR 04-02 10:22:28 [async_llm_engine.py:840] Engine iteration timed out. This should "
                        "never happen!\nERROR 04-02 10:22:28 [async_llm_engine.py:68] Engine background task "
                        "failed\n")
    assert reads(alone, family="vllm") == (True, "hang", "serving")


def test_the_engines_death_alone_stays_an_echo():
    """The background task's failure without the timeout line says only that the loop died (unknown, the
    echo), and a request's own asyncio timeout is not the engine's."""
    dead = _STARTED + "ERROR 04-02 10:22:28 async_llm_engine.py:66] Engine background task failed\n"
    assert reads(dead, family="vllm")[:2] == (True, "unknown")
    assert vllm_signature(dead) == "vllm_engine_dead"
    other = _STARTED + "ERROR 04-02 10:22:28 serving_chat.py:300] Request c75966 timed out.\n"
    assert vllm_signature(other) != "vllm_iteration_timeout"


def test_a_vllm_hangs_cause_is_its_own_line_not_sglangs_watchdog_dump():
    """vLLM's hang texts are error lines of vLLM's own (V0's iteration timeout; V1's shared-memory
    broadcast stall): the cause is that line. "the scheduler watchdog's dump (no error)" is SGLang's
    watchdog state dump (sglang/srt/utils/watchdog.py), which an SGLang hang still says."""
    from ddlab.diagnosis.diagnosis import diagnose

    timed_out = diagnose(read_log("vx20.log"))
    assert timed_out.cause == "Engine iteration timed out. This should never happen!"
    stall = diagnose(read_log("vu01.log"))
    assert stall.signature == "vllm_shm_stall"
    assert stall.cause.startswith("No available shared memory broadcast block found in 60 seconds.")
    sglang = diagnose(read_log(REAL / "a007.log"))
    assert (sglang.signature, sglang.cause) == ("hang", "the scheduler watchdog's dump (no error): "
                                                "self.cur_batch.batch_size()=1")
