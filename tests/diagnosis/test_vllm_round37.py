"""What held-out round 37 of the vLLM corpus (w3701-w3707, measured once at 98d1753 with its logs 73e3426)
showed: no miss (crashed 7/7, kind 7/7, phase 3/3). The collector's two doubts were read in the source after
the fold, and the readings are pinned here; no rule was added.

- w3701 (cuda_oom at launch, as labelled): V1's startup free-memory check in the worker's ``init_device``
  ("Free memory on device (13.58/15.99 GiB) on startup is less than desired GPU memory utilization (0.85,
  13.59 GiB)", vllm 0.10.2 v1/worker/gpu_worker.py:176-189, the raise at :180 as the log's frame says):
  refused before any allocation, read cuda_oom as the corpus reads this check since vc15 (w3501, w3502);
  the collector's other reading, kv_pool_oom, does not fit: no pool is sized yet.
- w3707 (dependency_mismatch at launch, as labelled): an offline ``LLM()`` engine whose worker module cannot
  be imported: vllm 0.11.2's GPU model runner imports the n-gram proposer at module load
  (v1/worker/gpu_model_runner.py:135), which imports numba (v1/spec_decode/ngram_proposer.py:6), and numba
  refuses the installed NumPy ("ImportError: Numba needs NumPy 2.2 or less. Got NumPy 2.4.", numba 0.61.2
  numba/__init__.py:42-45, run at import, :59; the vLLM wheel pins numba==0.61.2 and leaves numpy unpinned,
  vllm-0.11.2.dist-info/METADATA:73, :26).

The source checks skip where the wheels are not unpacked (CI).
"""

from __future__ import annotations

from fieldkit import (VLLM_REAL, library_text_test, read_log, reads, vllm_signature, vllm_traceback,
                      wheel_text_test)

test_each_rules_text_is_vllms_own = wheel_text_test([
    # w3701: V1's startup free-memory check, 0.10.2's words (the signature cites 0.30.0-0.34.0's)
    ("0.10.2", "vllm/v1/worker/gpu_worker.py", "if self.init_snapshot.free_memory < self.requested_memory:"),
    ("0.10.2", "vllm/v1/worker/gpu_worker.py", 'f"is less than desired GPU memory utilization "'),
    # w3707: the model runner imports the n-gram proposer, and it numba, whether or not it is used
    ("0.11.2", "vllm/v1/worker/gpu_model_runner.py", "from vllm.v1.spec_decode.ngram_proposer import NgramProposer"),
    ("0.11.2", "vllm/v1/spec_decode/ngram_proposer.py",
     "from numba import get_num_threads, jit, njit, prange, set_num_threads"),
    ("0.11.2", "vllm-0.11.2.dist-info/METADATA", "Requires-Dist: numba==0.61.2"),
])

test_each_rules_library_text_is_in_its_wheel = library_text_test([
    # w3707: numba's own check of NumPy's version, both bounds, run when numba is imported
    ("numba", "0.61.2", "numba/__init__.py", 'msg = (f"Numba needs NumPy 2.2 or less. Got NumPy "'),
    ("numba", "0.61.2", "numba/__init__.py", 'msg = (f"Numba needs NumPy 1.24 or greater. Got NumPy "'),
    ("numba", "0.61.2", "numba-0.61.2.dist-info/METADATA", "Requires-Dist: numpy<2.3,>=1.24"),
])


def test_the_startup_free_memory_check_is_cuda_oom_at_launch():
    """w3701 and the check's text as a bare process's traceback ends it (no vLLM prefix)."""
    assert reads(read_log("w3701.log")) == (True, "cuda_oom", "launch")
    assert vllm_signature(read_log("w3701.log")) == "vllm_startup_free_memory"
    bare = vllm_traceback(
        ("vllm/v1/worker/gpu_worker.py", 180, "init_device", "raise ValueError("),
        exc="ValueError: Free memory on device (7.1/23.99 GiB) on startup is less than desired GPU memory "
            "utilization (0.9, 21.59 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.", head="")
    assert reads(bare)[:2] == (True, "cuda_oom")


def test_numba_refusing_numpy_under_the_worker_import_is_dependency_mismatch():
    """w3707 (an offline engine, no API server) and numba's other refusal (NumPy too old, numba 0.61.2
    numba/__init__.py:37-40) under the same import chain, as vLLM's logger writes an engine core's."""
    log = read_log("w3707.log")
    assert reads(log) == (True, "dependency_mismatch", "launch")
    assert vllm_signature(log) == "vllm_import_error"
    other = vllm_traceback(
        ("vllm/v1/worker/gpu_worker.py", 52, "<module>", "from vllm.v1.worker.gpu_model_runner import GPUModelRunner"),
        ("vllm/v1/worker/gpu_model_runner.py", 135, "<module>",
         "from vllm.v1.spec_decode.ngram_proposer import NgramProposer"),
        ("vllm/v1/spec_decode/ngram_proposer.py", 6, "<module>",
         "from numba import get_num_threads, jit, njit, prange, set_num_threads"),
        ("numba/__init__.py", 59, "<module>", "_ensure_critical_deps()"),
        ("numba/__init__.py", 40, "_ensure_critical_deps", "raise ImportError(msg)"),
        exc="ImportError: Numba needs NumPy 1.24 or greater. Got NumPy 1.23.",
        head="(EngineCore_DP0 pid=7) ERROR 12-03 10:00:00 [core.py:842] ")
    assert reads(other)[:2] == (True, "dependency_mismatch")


def test_the_rounds_healthy_runs_and_its_refused_request_are_no_crash():
    """w3704-w3706 (stopped in order, or idle at the file's end) and w3702 (one request refused, 400, the
    next answered 200)."""
    for name in ("w3704.log", "w3705.log", "w3706.log"):
        assert reads(read_log(name))[:2] == (False, None), name
    assert reads(read_log("w3702.log"))[:2] == (False, "request_error")
    assert (VLLM_REAL / "w3703.log").exists() and reads(read_log("w3703.log")) == (True, "bad_argument", "launch")
