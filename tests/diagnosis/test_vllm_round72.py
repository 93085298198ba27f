"""What held-out round 72 of the vLLM corpus (w7201-w7222, measured once on main at f50a79d with its logs 2f3975d)
showed: crashed 22/22, kind 17/22, phase 16/19. Its six misses were read from the source (docs/diagnosis.md,
"Held-out round 72"); all six were ddlab's to fix, none is disputed:

- w7206 (phase): Mixtral's expert weights allocated in the model's constructor (``torch.empty(...)``, 0.2.4
  model_executor/models/mixtral.py:183) under torch's device context (torch/utils/_device.py __torch_function__),
  which vLLM opens only around building the model (0.2.4 model_executor/model_loader.py:116-117; 0.8.5.post1
  model_executor/model_loader/loader.py:451-452): load_weights (diagnosis/vllm_frames.py, _MODEL_BUILT).
- w7209 (kind): Xinference building vLLM's AsyncEngineArgs with a field its vLLM lacks (limit_mm_per_prompt, in 0.6.2
  engine/arg_utils.py:134, not in 0.5.1): vLLM's engine argument classes (0.5.1 engine/arg_utils.py:23, :758) are a
  vLLM mark, so the log reads as vLLM's and its caller built for another release, dependency_mismatch
  (vllm_crashes/entrypoints.py TEXT_MARKS; the rule vllm_api_mismatch was there).
- w7210 (kind and phase): NCCL's "NCCL cannot be captured in a graph" (NVIDIA/nccl src/misc/strongstream.cc, warned
  only while the stream captures, then ncclInvalidUsage) under V0's capture in initialize_cache (0.5.1
  worker/worker.py:214, :230; worker/model_runner.py:980): cuda_graph_capture at graph_capture
  (vllm_crashes/graphs.py, vllm_nccl_uncapturable).
- w7212 (kind): a traceback cut on Triton's _build calling the C compiler (``ret = subprocess.check_call(cc_cmd)``,
  triton 3.4.0 runtime/build.py:51), which raises CalledProcessError when the compiler fails: kernel_compile
  (device_crashes/compilers.py, triton_build_cut).
- w7214 (kind and phase): torch's MapAllocator refusing to map a safetensors shard, "unable to mmap N bytes from file
  <...>: Cannot allocate memory (12)": host_oom (crashes/kinds/memory.py); the loaders' weight iterators
  (safetensors_weights_iterator, 0.8.5.post1 model_loader/weight_utils.py:430) are load_weights.
- w7218 (kind): V1's AsyncLLM refusing to build while VLLM_USE_V1 is False (0.8.5.post1 v1/engine/async_llm.py:143;
  the flag set False by the engine settings, engine/arg_utils.py:1116): bad_argument at launch
  (vllm_crashes/loading.py, vllm_v1_engine_off).

Each positive test below failed at 2f3975d (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      not_unpacked, read_log, reads, said, vllm_traceback)

_ROUND = [f"w72{n:02d}" for n in range(1, 23)]
_SP = "/usr/lib/python3.10/site-packages"


def test_the_round_is_folded_with_its_twenty_two_logs():
    assert folded_round(VLLM_MANIFEST, 72) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    """Crashed, kind and phase as labelled, but w7213: since vLLM round 82 its "[time][UC][I] ... [pid,tid][file:N,func]"
    records are restamped as vLLM's and the log read as vLLM's, its two stall notices a hang (known_misses.json)."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {"w7213": ["crashed", "kind"]}


# --- w7206: a model's constructor allocating its weights under torch's device context ---------------------------------

def test_mixtrals_expert_weights_failing_to_allocate_is_the_weights_step():
    assert reads(read_log("w7206.log")) == (True, "cuda_oom", "load_weights")


def test_the_same_allocation_in_another_form():
    """0.2.4's next expert weight (mixtral.py:188, w2), its frames indented and the OOM whole."""
    text = (f'  File "{_SP}/vllm/model_executor/models/mixtral.py", line 188, in __init__\n'
            "    torch.empty(self.ffn_dim_per_partition * self.num_experts,\n"
            f'  File "{_SP}/torch/utils/_device.py", line 77, in __torch_function__\n'
            "    return func(*args, **kwargs)\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB.\n")
    assert reads(text) == (True, "cuda_oom", "load_weights")


@pytest.mark.parametrize("text", [
    # a model's forward allocating under a device context (no constructor)
    f'  File "{_SP}/vllm/model_executor/models/mixtral.py", line 290, in forward\n'
    "    x = torch.empty(n, d)\n"
    f'  File "{_SP}/torch/utils/_device.py", line 77, in __torch_function__\n'
    "    return func(*args, **kwargs)\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory.\n",
    # a user's own model file of the same name, not vLLM's
    '  File "/home/u/my_models/mixtral.py", line 182, in __init__\n'
    "    torch.empty(n, d)\n"
    f'  File "{_SP}/torch/utils/_device.py", line 77, in __torch_function__\n'
    "    return func(*args, **kwargs)\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory.\n",
], ids=["forward", "users-model"])
def test_near_misses_are_no_model_built(text):
    assert reads(text, "vllm")[2] != "load_weights"


# --- w7209: a caller built for another vLLM release passing AsyncEngineArgs a field it lacks --------------------------

def test_xinferences_engine_args_refused_is_a_caller_for_another_vllm():
    assert said(read_log("w7209.log")) == (True, "dependency_mismatch", "vllm_api_mismatch")
    assert reads(read_log("w7209.log")) == (True, "dependency_mismatch", "launch")


def test_the_same_engine_args_refusal_in_another_form():
    """A script building EngineArgs (0.5.1 engine/arg_utils.py:23) with 0.6's field, no vLLM frame in its traceback."""
    text = ("Traceback (most recent call last):\n"
            '  File "/home/u/serve.py", line 12, in <module>\n'
            "    args = EngineArgs(model=m, limit_mm_per_prompt={'image': 2})\n"
            "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'limit_mm_per_prompt'\n")
    assert reads(text) == (True, "dependency_mismatch", "launch")


@pytest.mark.parametrize("name", ["ServerArgs", "TrainEngineArgs"], ids=["sglangs", "a-longer-name"])
def test_near_misses_are_no_vllm_engine_args(name):
    text = ("Traceback (most recent call last):\n"
            '  File "/home/u/serve.py", line 12, in <module>\n'
            f"    args = {name}(foo=1)\n"
            f"TypeError: {name}.__init__() got an unexpected keyword argument 'foo'\n")
    assert reads(text)[1] != "dependency_mismatch"


# --- w7210: NCCL refusing a collective inside V0's CUDA graph capture ------------------------------------------------

_UNCAPTURABLE = ("node1:2211:2211 [0] misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph if either it "
                 "wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.\n")


def test_nccl_refusing_the_capture_is_a_failed_capture():
    assert said(read_log("w7210.log")) == (True, "cuda_graph_capture", "vllm_nccl_uncapturable")
    assert reads(read_log("w7210.log")) == (True, "cuda_graph_capture", "graph_capture")


def test_the_same_nccl_refusal_in_another_form():
    """0.4.0.post1's Ray executor warming its workers up (ray_gpu_executor.py:253, "This includes capturing the model
    into CUDA graph"), a worker's NCCL warning above the driver's traceback, no capture frame in it."""
    text = ("(RayWorkerVllm pid=3301) " + _UNCAPTURABLE + vllm_traceback(
        ("vllm/executor/ray_gpu_executor.py", 253, "_init_cache", 'self._run_workers("warm_up_model")'),
        ("vllm/executor/ray_gpu_executor.py", 340, "_run_workers", "ray_worker_outputs = ray.get(ray_worker_outputs)"),
        exc="ray.exceptions.RayTaskError(RuntimeError): ray::RayWorkerVllm.execute_method() (pid=3301) RuntimeError: "
            "NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)", head=""))
    assert reads(text) == (True, "cuda_graph_capture", "graph_capture")


@pytest.mark.parametrize("warning", [
    "",  # the worker's NCCL error alone
    "node1:2211:2211 [0] misc/strongstream.cc:393 NCCL WARN Cuda failure 'out of memory'\n",  # another NCCL warning
], ids=["no-warning", "another-warning"])
def test_near_misses_are_no_uncapturable_nccl(warning):
    text = warning + ("(VllmWorkerProcess pid=1) ERROR 07-08 13:05:36 multiproc_worker_utils.py:226] Exception in "
                      "worker VllmWorkerProcess while processing method initialize_cache: NCCL error: invalid usage "
                      "(run with NCCL_DEBUG=WARN for details), Traceback (most recent call last):\n")
    assert reads(text, "vllm")[1] == "nccl"


# --- w7212: a traceback cut on Triton's C compiler call --------------------------------------------------------------

def test_a_traceback_cut_on_tritons_compiler_call_is_a_failed_build():
    assert said(read_log("w7212.log")) == (True, "kernel_compile", "triton_build_cut")
    assert said(read_log("w7212.log"), "vllm") == (True, "kernel_compile", "vllm_triton_build_cut")


def test_the_same_build_cut_in_another_form():
    """triton 3.4.0's launcher build: compile_module_from_src in runtime/build.py, its _build's call at :51."""
    text = ("Traceback (most recent call last):\n"
            f'  File "{_SP}/triton/runtime/build.py", line 88, in compile_module_from_src\n'
            "    so = _build(name, src_path, tmpdir, library_dirs or [], include_dirs or [], libraries or [])\n"
            f'  File "{_SP}/triton/runtime/build.py", line 51, in _build\n'
            "    subprocess.check_call(cc_cmd, stdout=subprocess.DEVNULL)\n")
    assert reads(text)[:2] == (True, "kernel_compile")


@pytest.mark.parametrize("frame", [
    f'  File "{_SP}/triton/runtime/build.py", line 48, in _build\n    cc_cmd += [f"-l{{lib}}" for lib in libraries]\n',
    '  File "/home/u/mylib/build.py", line 48, in _build\n    ret = subprocess.check_call(cc_cmd)\n',
], ids=["another-line", "another-build"])
def test_near_misses_are_no_triton_build(frame):
    assert reads("Traceback (most recent call last):\n" + frame)[1] != "kernel_compile"


# --- w7214: torch refused a safetensors shard's mapping for want of host memory ---------------------------------------

def test_a_shard_mapping_refused_with_enomem_is_host_memory_while_loading():
    assert reads(read_log("w7214.log")) == (True, "host_oom", "load_weights")


def test_the_same_mapping_refusal_in_another_form():
    """0.6.4.post1's V0 engine (engine.py:366), its loader's frames (weight_utils.py:407)."""
    text = vllm_traceback(
        ("vllm/model_executor/model_loader/loader.py", 398, "load_model",
         "model.load_weights(self._get_all_weights(model_config, model))"),
        ("vllm/model_executor/model_loader/weight_utils.py", 407, "safetensors_weights_iterator",
         'with safe_open(st_file, framework="pt") as f:'),
        exc="RuntimeError: unable to mmap 4984147224 bytes from file </models/m/model-00001-of-00004.safetensors>: "
            "Cannot allocate memory (12)", head="ERROR 11-20 10:00:00 engine.py:366] ")
    assert reads(text) == (True, "host_oom", "load_weights")


def test_a_near_miss_is_no_host_memory():
    """The same refusal with another errno (a device that cannot be mapped)."""
    text = vllm_traceback(
        ("vllm/model_executor/model_loader/weight_utils.py", 407, "safetensors_weights_iterator",
         'with safe_open(st_file, framework="pt") as f:'),
        exc="RuntimeError: unable to mmap 4984147224 bytes from file </mnt/fuse/model.safetensors>: No such device (19)",
        head="ERROR 11-20 10:00:00 engine.py:366] ")
    assert reads(text)[1] != "host_oom"


# --- w7218: V1's engine built while the settings chose V0 -------------------------------------------------------------

def test_v1s_async_llm_refused_with_v1_off_is_the_launchs_setting():
    assert said(read_log("w7218.log")) == (True, "bad_argument", "vllm_v1_engine_off")
    assert reads(read_log("w7218.log")) == (True, "bad_argument", "launch")


def test_the_same_v1_refusal_in_another_form():
    """0.8.5.post1's V1 LLMEngine (v1/engine/llm_engine.py:52), built by the offline LLM."""
    text = vllm_traceback(
        ("vllm/entrypoints/llm.py", 243, "__init__", "self.llm_engine = LLMEngine.from_engine_args("),
        ("vllm/v1/engine/llm_engine.py", 52, "__init__", "raise ValueError("),
        exc="ValueError: Using V1 LLMEngine, but envs.VLLM_USE_V1=False. This should not happen. As a workaround, "
            "try using LLMEngine.from_vllm_config(...) or explicitly set VLLM_USE_V1=0 or 1 and report this issue on "
            "Github.", head="")
    assert reads(text) == (True, "bad_argument", "launch")


def test_a_near_miss_is_no_crash():
    """The words in a program's own INFO line."""
    text = "INFO 05-01 10:00:00 [my_app.py:1] note: Using V1 AsyncLLMEngine, but envs.VLLM_USE_V1=False is documented\n"
    assert reads(text, "vllm")[0] is False


# --- the rules' texts, at the lines the releases hold -----------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.2.4", "vllm/model_executor/models/mixtral.py", 183, "torch.empty(self.ffn_dim_per_partition * self.num_experts,"),
    ("0.2.4", "vllm/model_executor/model_loader.py", 116, 'with torch.device("cuda"):'),
    ("0.2.4", "vllm/model_executor/model_loader.py", 117, "model = model_class(model_config.hf_config, linear_method)"),
    ("0.2.4", "vllm/worker/model_runner.py", 36, "self.model = get_model(self.model_config)"),
    ("0.8.5.post1", "vllm/model_executor/model_loader/loader.py", 451, "with target_device:"),
    ("0.8.5.post1", "vllm/model_executor/model_loader/loader.py", 452, "model = _initialize_model(vllm_config=vllm_config)"),
    ("0.5.1", "vllm/engine/arg_utils.py", 23, "class EngineArgs:"),
    ("0.5.1", "vllm/engine/arg_utils.py", 758, "class AsyncEngineArgs(EngineArgs):"),
    ("0.6.2", "vllm/engine/arg_utils.py", 1077, "class AsyncEngineArgs(EngineArgs):"),
    ("0.6.2", "vllm/engine/arg_utils.py", 134, "limit_mm_per_prompt: Optional[Mapping[str, int]] = None"),
    ("0.5.1", "vllm/worker/worker.py", 200, "def initialize_cache(self, num_gpu_blocks: int,"),
    ("0.5.1", "vllm/worker/worker.py", 214, "self._warm_up_model()"),
    ("0.5.1", "vllm/worker/worker.py", 230, "self.model_runner.capture_model(self.gpu_cache)"),
    ("0.5.1", "vllm/worker/model_runner.py", 928, 'logger.info("CUDA graphs can take additional 1~3 GiB memory per GPU. "'),
    ("0.5.1", "vllm/worker/model_runner.py", 980, "with graph_capture() as graph_capture_context:"),
    ("0.5.1", "vllm/distributed/parallel_state.py", 263, "pynccl_comm = self.pynccl_comm"),
    ("0.4.0.post1", "vllm/executor/ray_gpu_executor.py", 253, 'self._run_workers("warm_up_model")'),
    ("0.4.0.post1", "vllm/executor/ray_gpu_executor.py", 340, "ray_worker_outputs = ray.get(ray_worker_outputs)"),
    ("0.8.5.post1", "vllm/model_executor/model_loader/weight_utils.py", 430, "def safetensors_weights_iterator("),
    ("0.8.5.post1", "vllm/model_executor/model_loader/weight_utils.py", 441, 'with safe_open(st_file, framework="pt") as f:'),
    ("0.8.5.post1", "vllm/model_executor/model_loader/loader.py", 379, "weights_iterator = safetensors_weights_iterator("),
    ("0.9.1", "vllm/model_executor/model_loader/default_loader.py", 198, "weights_iterator = safetensors_weights_iterator("),
    ("0.8.5.post1", "vllm/v1/engine/core.py", 396, 'logger.exception("EngineCore failed to start.")'),
    ("0.8.5.post1", "vllm/v1/engine/async_llm.py", 143, "raise ValueError("),
    ("0.8.5.post1", "vllm/v1/engine/async_llm.py", 144, '"Using V1 AsyncLLMEngine, but envs.VLLM_USE_V1=False. "'),
    ("0.9.1", "vllm/v1/engine/async_llm.py", 156, '"Using V1 AsyncLLMEngine, but envs.VLLM_USE_V1=False. "'),
    ("0.8.5.post1", "vllm/v1/engine/llm_engine.py", 53, '"Using V1 LLMEngine, but envs.VLLM_USE_V1=False. "'),
    ("0.8.5.post1", "vllm/engine/arg_utils.py", 1116, "envs.set_vllm_use_v1(use_v1)"),
    ("0.8.5.post1", "vllm/engine/arg_utils.py", 1654, 'msg += "Falling back to V0. "'),
], ids=["mixtral-w1", "device-context", "model-class", "load-model", "target-device", "initialize-model",
        "engine-args-0.5.1", "async-engine-args-0.5.1", "async-engine-args-0.6.2", "limit-mm-0.6.2", "initialize-cache",
        "warm-up", "capture-model", "capture-notice", "graph-capture", "pynccl-in-capture", "ray-warm-up",
        "ray-get", "iterator-def", "safe-open",
        "iterator-call-0.8.5", "iterator-call-0.9.1", "core-failed-to-start", "async-llm-raise", "async-llm-text",
        "async-llm-text-0.9.1", "llm-engine-text", "set-use-v1", "fallback"])
def test_each_cited_vllm_line_holds_its_text(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)


def test_torchs_device_context_is_a_torch_function_hook():
    """torch's DeviceContext (torch/utils/_device.py) hooks every op through __torch_function__ (torch 2.8.0)."""
    source = VLLM_WHEELS.parent / "torch-2.8.0" / "torch/utils/_device.py"
    if not source.exists():
        pytest.skip(not_unpacked(source))
    text = source.read_text()
    assert "class DeviceContext(TorchFunctionMode):" in text and "def __torch_function__(self, func, types" in text
