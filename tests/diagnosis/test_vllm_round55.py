"""What held-out round 55 of the vLLM corpus (w5501-w5529, measured once at 99fcdc4 with its logs 196450d)
showed: crashed 29/29, kind 26/29, phase 16/25. Its eleven misses were read from the source (docs/diagnosis.md,
"Held-out round 55"):

- w5501: sleep mode's wake-up, frames executor_base.py wake_up -> worker.py wake_up -> cumem.py wake_up, cut.
  Only a built engine is put to sleep and woken (0.7.3 entrypoints/llm.py:1240, engine/llm_engine.py:1856,
  executor/executor_base.py:216, worker/worker.py:140, device_allocator/cumem.py:207; 0.34.0
  entrypoints/serve/dev/sleep/api_router.py:56, v1/engine/core.py:2510). Fixed: ``wake_up`` is a serving frame
  (diagnosis/vllm_frames.py ``_SERVING``).
- w5502: the engine falling asleep on POST /sleep ("It took %.6f seconds to fall asleep.", 0.11.1
  v1/executor/abstract.py:306-307; "CuMemAllocator: sleep freed", cumem.py:239; "Sleep mode freed",
  v1/worker/gpu_worker.py:142). Fixed: those lines are serving markers (diagnosis/vllm_log.py).
- w5519: vllm-ascend's runner out of NPU memory in ``_allocate_kv_cache_tensors`` (0.11.1
  v1/worker/gpu_model_runner.py:4699, called at :4929 from initialize_kv_cache_tensors). Fixed: a memory_pool
  frame (``_POOL``).
- w5525: NIXL's debug line for a request the scheduler admitted ("NIXLConnector update_state_after_alloc:",
  0.10.1.1 nixl_connector.py:292, called only in Scheduler.schedule, v1/core/sched/scheduler.py:164, :466), then
  a worker's "WorkerProc hit an exception." (cut). Fixed: a serving marker.
- w5528: the V2 model runner's "Loading model from scratch..." (0.28.0 v1/worker/gpu/model_runner.py:358, just
  before its loader's load_model). Fixed: a load_weights marker.
- w5517: Tenstorrent's plugin refusing --max_model_len with the flag and bound to set. Fixed: a ValueError
  ending "Set --<flag> to <value> or lower/higher" is bad_argument (vllm_crashes/messages.py ``FLAG_BOUND``).
- w5529: cut at ``self.nccl.ncclCommInitRank(`` (0.6.3.post1 pynccl.py:89); below it only NCCL_CHECK raises
  (pynccl_wrapper.py:244, :223): kind disputed on a second look (labelled unknown, ddlab's nccl kept).
- w5504, w5509, w5510, w5526: left misses (tests/fixtures/logs/known_misses.json; docs say why).
"""

from __future__ import annotations


import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, folded_round, not_unpacked,
                      read_log, reads, vllm_traceback)

_MANIFEST = VLLM_MANIFEST
_ROUND = [f"w55{n:02d}" for n in range(1, 30)]
_LEFT = {"w5504": ["kind", "phase"], "w5509": ["phase"], "w5510": ["phase"], "w5526": ["phase"]}


def test_the_round_is_folded_with_its_twenty_nine_logs():
    assert folded_round(VLLM_MANIFEST, 55) == _ROUND


def test_each_log_reads_as_labelled_but_the_misses_left():
    """Crashed and kind as labelled (a disputed kind aside), the phase where the log shows it; the misses left
    are the four known_misses.json names."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == _LEFT


# --- w5501: sleep mode's wake-up frames ------------------------------------------------------------------------

_WAKE_V0 = [("vllm/executor/executor_base.py", 216, "wake_up", 'self.collective_rpc("wake_up")'),
            ("vllm/worker/worker.py", 140, "wake_up", "allocator.wake_up()"),
            ("vllm/device_allocator/cumem.py", 207, "wake_up", "create_and_map(handle)")]
_OOM = "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62"


def test_a_wake_up_traceback_is_serving():
    """The corpus log: '(ActorModelRayActor pid=348952)' frames of 0.7.3's wake_up, cut at create_and_map."""
    assert reads(read_log("w5501.log")) == (True, "unknown", "serving")


def test_the_same_wake_up_in_another_form():
    """0.8.5.post1's lines (executor_base.py:224, worker.py:152, cumem.py:224) through LLM.wake_up, the
    allocator's CUDA error shown."""
    frames = [("vllm/entrypoints/llm.py", 1300, "wake_up", "self.llm_engine.wake_up(tags)"),
              ("vllm/executor/executor_base.py", 224, "wake_up", 'self.collective_rpc("wake_up", kwargs=dict(tags=tags))'),
              ("vllm/worker/worker.py", 152, "wake_up", "allocator.wake_up(tags=tags)"),
              ("vllm/device_allocator/cumem.py", 224, "wake_up", "create_and_map(handle)")]
    assert reads(vllm_traceback(*frames, exc=_OOM, head=""))[2] == "serving"


@pytest.mark.parametrize("frames", [
    [("vllm/worker/worker.py", 130, "init_device", "self.init_worker_distributed_environment()"), *_WAKE_V0],
    [("my_app/pool.py", 10, "wake_up_workers", "pool.start()")],
], ids=["under-a-start-up-frame", "another-name"])
def test_a_wake_up_frame_under_start_up_or_another_name_is_not_serving(frames):
    """A start-up frame above wins over the serving frame; a function that only begins with wake_up is none."""
    assert reads(vllm_traceback(*frames, exc=_OOM, head=""))[2] != "serving"


# --- w5502: the engine falling asleep ---------------------------------------------------------------------------

def test_the_sleep_lines_are_serving():
    """The corpus log: cumem's and the worker's freed-memory lines, 'It took ... seconds to fall asleep.', POST
    /sleep 200; no error."""
    assert reads(read_log("w5502.log")) == (False, None, "serving")


def test_the_same_sleep_mode_in_another_form():
    """V0's wake-up line (0.8.5.post1 executor/executor_base.py:226), after the engine's start."""
    text = ("INFO 05-01 10:00:00 [llm_engine.py:431] init engine (profile, create kv cache, warmup model) took 20.1 "
            "seconds\nINFO 05-01 10:05:00 [executor_base.py:226] It took 1.204511 seconds to wake up tags "
            "['weights'].\n")
    assert reads(text) == (False, None, "serving")


@pytest.mark.parametrize("line", [
    "INFO 05-01 10:00:00 [arg_utils.py:1000] non-default args: {'enable_sleep_mode': True}",
    "INFO 05-01 10:00:00 [gpu_worker.py:200] It took 3.1 seconds to load the model.",
], ids=["the-flag", "another-took"])
def test_a_sleep_mode_flag_or_another_timing_is_not_serving(line):
    assert reads(line + "\n")[2] != "serving"


# --- w5519: the KV cache's tensors allocated ---------------------------------------------------------------------

_ALLOC = ("vllm/v1/worker/gpu_model_runner.py", 4722, "_allocate_kv_cache_tensors",
          "tensor = torch.zeros(kv_cache_tensor.size, dtype=torch.int8, device=self.device)")
_CUDA_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
             "of 79.19 GiB of which 1.20 GiB is free.")


def test_an_oom_allocating_the_kv_cache_tensors_is_the_memory_pool():
    """The corpus log: vllm-ascend's _allocate_kv_cache_tensors, 'NPU out of memory', under the worker's tag."""
    assert reads(read_log("w5519.log")) == (True, "cuda_oom", "memory_pool")


def test_the_same_allocation_in_another_form():
    """vLLM's own runner (0.11.1 v1/worker/gpu_model_runner.py:4699), the traceback's last frame alone."""
    assert reads(vllm_traceback(_ALLOC, exc=_CUDA_OOM)) == (True, "cuda_oom", "memory_pool")


def test_an_oom_while_serving_is_not_the_memory_pool():
    serving = ("vllm/v1/worker/gpu_model_runner.py", 2000, "execute_model", "hidden = self.model(input_ids)")
    assert reads(vllm_traceback(serving, exc=_CUDA_OOM))[2] == "serving"


# --- w5525: a KV connector told of a scheduled request ------------------------------------------------------------

_WORKER_FAILED = "(VllmWorker TP0 pid=2940) ERROR 08-17 18:19:26 [multiproc_executor.py:601] WorkerProc hit an exception.\n"


def test_a_connector_line_for_a_scheduled_request_is_serving():
    """The corpus log: three engines' NIXL update_state_after_alloc lines, then a worker's failure (cut)."""
    assert reads(read_log("w5525.log")) == (True, "unknown", "serving")


def test_the_same_connector_line_in_another_form():
    """0.34.0's line (distributed/kv_transfer/kv_connector/v1/nixl/pull_scheduler.py:113)."""
    line = ("(EngineCore_DP0 pid=5) DEBUG 03-01 09:00:00 [nixl/pull_scheduler.py:113] NIXLConnector "
            "update_state_after_alloc: num_external_tokens=16, kv_transfer_params={'do_remote_prefill': True}\n")
    assert reads(line + _WORKER_FAILED) == (True, "unknown", "serving")


def test_the_connector_at_start_up_is_not_serving():
    """NIXL's start-up line alone before the same failure reads no serving."""
    line = "(EngineCore_DP0 pid=5) INFO 03-01 09:00:00 [nixl_connector.py:100] NIXL is available\n"
    assert reads(line + _WORKER_FAILED)[2] != "serving"


# --- w5528: the V2 model runner's start of loading ---------------------------------------------------------------

def test_loading_from_scratch_is_load_weights():
    """The corpus log: 'Using V2 Model Runner', 'Loading model from scratch...', the attention backends."""
    assert reads(read_log("w5528.log")) == (False, None, "load_weights")


def test_the_same_loading_line_in_another_form():
    """0.34.0's line (v1/worker/gpu/model_runner.py:412), bare."""
    assert reads("(EngineCore_DP0 pid=9) INFO 04-02 11:00:00 [gpu/model_runner.py:412] Loading model from "
                 "scratch...\n") == (False, None, "load_weights")


def test_the_runner_chosen_alone_is_not_load_weights():
    assert reads("(EngineCore pid=522) INFO 08-21 19:42:37 [gpu_worker.py:396] Using V2 Model Runner\n")[2] \
        != "load_weights"


# --- w5517: a ValueError naming the flag and the bound to set ------------------------------------------------------

def test_a_value_error_naming_the_flag_and_bound_is_bad_argument():
    """The corpus log: Tenstorrent's 'Set --max_model_len to 32768 or lower in vLLM.'"""
    assert reads(read_log("w5517.log")) == (True, "bad_argument", "launch")


def test_the_same_refusal_in_another_form():
    """A dashed flag, another bound, the ValueError under a worker's traceback."""
    frames = [("vllm/worker/worker.py", 183, "load_model", "self.model_runner.load_model()")]
    exc = "ValueError: this device takes at most 32 sequences (received 256). Set --max-num-seqs to 32 or lower."
    assert reads(vllm_traceback(*frames, exc=exc))[1] == "bad_argument"


@pytest.mark.parametrize("exc", [
    "RuntimeError: the device ran out of memory. Set --max-num-seqs to 32 or lower.",
    "ValueError: the device refused the batch. Set --max-num-seqs accordingly.",
], ids=["not-a-value-error", "no-bound"])
def test_other_errors_naming_a_flag_are_not_bad_argument(exc):
    assert reads(vllm_traceback(("vllm/worker/worker.py", 183, "load_model", "self.model_runner.load_model()"),
                                exc=exc))[1] != "bad_argument"


# --- w5529: the kind disputed ----------------------------------------------------------------------------------

def test_a_cut_at_ncclcomminitrank_reads_nccl_and_the_label_is_disputed():
    assert reads(read_log("w5529.log"))[1] == "nccl"
    assert _MANIFEST["w5529"]["kind_disputed"] == ["unknown", "nccl"]


@pytest.mark.parametrize(("release", "path", "line", "code"), [
    ("0.7.3", "vllm/entrypoints/llm.py", 1240, "def wake_up(self):"),
    ("0.7.3", "vllm/engine/llm_engine.py", 1856, "def wake_up(self) -> None:"),
    ("0.7.3", "vllm/executor/executor_base.py", 216, 'self.collective_rpc("wake_up")'),
    ("0.7.3", "vllm/worker/worker.py", 140, "allocator.wake_up()"),
    ("0.7.3", "vllm/device_allocator/cumem.py", 207, "create_and_map(handle)"),
    ("0.7.3", "vllm/device_allocator/cumem.py", 75, "python_create_and_map(*allocation_handle)"),
    ("0.34.0", "vllm/entrypoints/serve/dev/sleep/api_router.py", 56, "wake_up(tags)"),
    ("0.34.0", "vllm/v1/engine/core.py", 2510, 'self.wake_up(["kv_cache"])'),
    ("0.34.0", "vllm/v1/engine/core.py", 1127, "model_executor.sleep(level)"),
    ("0.34.0", "vllm/v1/executor/abstract.py", 442, 'self.collective_rpc("sleep", kwargs=dict(level=level))'),
    ("0.11.1", "vllm/v1/executor/abstract.py", 307, '"It took %.6f seconds to fall asleep."'),
    ("0.11.1", "vllm/v1/executor/abstract.py", 325, '"It took %.6f seconds to wake up tags %s."'),
    ("0.11.1", "vllm/device_allocator/cumem.py", 240, '"CuMemAllocator: sleep freed'),
    ("0.11.1", "vllm/v1/worker/gpu_worker.py", 143, '"Sleep mode freed'),
    ("0.8.5.post1", "vllm/executor/executor_base.py", 210, '"It took %.6f seconds to fall asleep."'),
    ("0.8.5.post1", "vllm/executor/executor_base.py", 226, '"It took %.6f seconds to wake up tags %s."'),
    ("0.11.1", "vllm/v1/worker/gpu_model_runner.py", 4699, "def _allocate_kv_cache_tensors("),
    ("0.11.1", "vllm/v1/worker/gpu_model_runner.py", 4929,
     "kv_cache_raw_tensors = self._allocate_kv_cache_tensors(kv_cache_config)"),
    ("0.10.1.1", "vllm/v1/core/sched/scheduler.py", 164, "def schedule(self) -> SchedulerOutput:"),
    ("0.10.1.1", "vllm/v1/core/sched/scheduler.py", 466, "self.connector.update_state_after_alloc("),
    ("0.10.1.1", "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", 293,
     '"NIXLConnector update_state_after_alloc: "'),
    ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/pull_scheduler.py", 113,
     '"NIXLConnector update_state_after_alloc: "'),
    ("0.28.0", "vllm/v1/worker/gpu/model_runner.py", 358, 'logger.info_once("Loading model from scratch...")'),
    ("0.34.0", "vllm/v1/worker/gpu/model_runner.py", 412, 'logger.info_once("Loading model from scratch...")'),
    ("0.11.0", "vllm/v1/worker/gpu_model_runner.py", 2634, 'logger.info("Loading model from scratch...")'),
    ("0.11.0", "vllm/v1/worker/gpu_model_runner.py", 2602, '"Starting to load model %s..."'),
    ("0.34.0", "vllm/utils/argparse_utils.py", 157, '"""ArgumentParser that allows both underscore and dash in names."""'),
    ("0.34.0", "vllm/utils/argparse_utils.py", 381, "# Convert underscores to dashes and vice versa in argument names"),
    ("0.6.3.post1", "vllm/distributed/device_communicators/pynccl.py", 89,
     "self.comm: ncclComm_t = self.nccl.ncclCommInitRank("),
    ("0.6.3.post1", "vllm/distributed/device_communicators/pynccl_wrapper.py", 244,
     'self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm),'),
    ("0.6.3.post1", "vllm/distributed/device_communicators/pynccl_wrapper.py", 223,
     'raise RuntimeError(f"NCCL error: {error_str}")'),
])
def test_the_cited_lines(release, path, line, code):
    """The lines the rules and the second look cite."""
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert code in source.read_text().splitlines()[line - 1]
