"""The rules that round 10 of the vLLM corpus (vk01-vk14, measured once) showed missing.

Each rule is general and cited from vLLM's source (the wheels 0.6.4.post1, 0.7.3, 0.30.0, 0.33.0,
0.34.0): the round-10 log that showed it is one case, a text written from the source in another form
is the other, and a text beside it that the rule must not take is a third. The source checks are a
test of their own, which skips where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import read_log, reads, vllm_traceback, wheel_text_test


def _without(text: str, part: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if part not in line)


SOURCES = [
    # vLLM's refusal of a model it finds no config for (get_config)
    ("0.30.0", "vllm/transformers_utils/config.py", '"Invalid repository ID or local directory specified:"'),
    ("0.34.0", "vllm/transformers_utils/config.py", '"Invalid repository ID or local directory specified:"'),
    # the shared-memory queue's notice, and the lines that end the slow work it names
    ("0.34.0", "vllm/distributed/device_communicators/shm_broadcast.py",
     '"time-consuming work (e.g. compilation, "'),
    ("0.34.0", "vllm/compilation/backends.py", '"%sCompiling a graph for compile range %s takes %.2f s",'),
    ("0.30.0", "vllm/compilation/backends.py", '"Compiling a graph for compile range %s takes %.2f s",'),
    ("0.34.0", "vllm/compilation/monitor.py", '"%storch.compile took %.2f s in total"'),
    ("0.34.0", "vllm/v1/worker/gpu_worker.py", '"Available KV cache memory: %s GiB",'),
    ("0.34.0", "vllm/model_executor/model_loader/default_loader.py", '"Loading weights took %.2f seconds",'),
    ("0.34.0", "vllm/v1/worker/gpu/model_runner.py", '"Model loading took %s GiB memory and %.6f seconds",'),
    # a V0 multiprocessing worker's report of the method it was running
    ("0.6.4.post1", "vllm/executor/multiproc_worker_utils.py", '"Exception in worker %s while processing method %s.",'),
    ("0.7.3", "vllm/executor/multiproc_worker_utils.py", '"Exception in worker %s while processing method %s.",'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


# --- vLLM's own refusal of a model path: model_not_found --------------------------------------

_CONFIG = (("vllm/engine/arg_utils.py", 1300, "create_model_config", "return ModelConfig("),
           ("vllm/transformers_utils/config.py", 968, "get_config", "raise ValueError(error_message) from e"))


def test_vllms_invalid_repository_or_directory_is_a_model_not_found():
    """vk08: get_config's "Invalid repository ID or local directory specified: '...'" with its
    checklist (transformers_utils/config.py:957 (0.34.0), :912 (0.33.0), :790 (0.30.0)), raised from
    whatever the lookup raised; a destructor's noise follows it: read unknown before."""
    assert reads(read_log("vk08.log")) == (True, "model_not_found", "launch")
    exc = ("ValueError: Invalid repository ID or local directory specified: '/models/llama'.\n"
           "Please verify the following requirements:\n1. Provide a valid Hugging Face repository ID.")
    assert reads(vllm_traceback(*_CONFIG, exc=exc)) == (True, "model_not_found", "launch")
    # another ValueError about a repository is not this refusal
    other = vllm_traceback(*_CONFIG, exc="ValueError: Invalid repository type: 'space'.")
    assert reads(other)[1] != "model_not_found"
    # nor the words quoted inside an INFO line
    quoted = ("INFO 12-03 10:00:00 [config.py:9] retrying after Invalid repository ID or local "
              "directory specified: 'x'.\n")
    assert not diagnose(quoted, family="vllm").crashed


# --- the shared-memory notice, then the slow work it names ending: no hang ----------------------

def test_a_shared_memory_notice_followed_by_the_end_of_the_slow_work_is_no_hang():
    """vk10: "No available shared memory broadcast block found in 60 seconds" (shm_broadcast.py:115
    (0.34.0)) names compilation and weight / KV cache work as what it may be; a worker then logs its
    graph compiled (backends.py:422) and its KV cache memory (gpu_worker.py:796), and the engine
    fails to start with a cut traceback: unknown at memory_pool, read as a hang before."""
    text = read_log("vk10.log")
    assert reads(text) == (True, "unknown", "memory_pool")
    # with no step ended after the notice, the notice still reads as the engine's stall
    assert reads(_without(text, "Worker_PP0"))[1] == "hang"
    # each of the step-ending lines alone clears it
    for line in ("(Worker_PP0 pid=7) INFO 01-11 03:46:45 [monitor.py:20] torch.compile took 48.42 s in total\n",
                 "(Worker_PP0 pid=7) INFO 01-11 03:46:45 [default_loader.py:544] Loading weights took 3.10 seconds\n",
                 "(Worker_PP0 pid=7) INFO 01-11 03:46:45 [model_runner.py:442] Model loading took 4.2 GiB memory "
                 "and 3.500000 seconds\n"):
        lines = _without(text, "Worker_PP0").splitlines(keepends=True)
        assert reads("".join(lines[:1] + [line] + lines[1:]))[1] == "unknown", line


# --- a V0 worker's "while processing method" names the phase -----------------------------------

def test_a_v0_workers_method_header_names_the_phase_of_the_crash_beside_it():
    """vk14: a TP worker's CUDA OOM next to another worker's "Exception in worker VllmWorkerProcess
    while processing method load_model." (multiproc_worker_utils.py:243 (0.7.3), :230 (0.6.4.post1));
    the driver runs one method on every worker at once, so the header names the step: load_weights,
    read launch before."""
    text = read_log("vk14.log")
    assert reads(text) == (True, "cuda_oom", "load_weights")
    pool = text.replace("method load_model", "method determine_num_available_blocks")
    assert reads(pool) == (True, "cuda_oom", "memory_pool")
    # a method that is no loading or memory step (the device's setup), or no header: launch
    assert reads(text.replace("method load_model", "method init_device")) == (True, "cuda_oom", "launch")
    assert reads(_without(text, "while processing method")) == (True, "cuda_oom", "launch")
