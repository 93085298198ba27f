"""Held-out round 16's misses (issue 24), each fixed by a general rule read from the source.

Round 16 (h16001-h16011) was measured once on main at cef672f (crashed 10/11, kind 9/11, phase 3/3)
and folded into ``work``; docs/diagnosis.md, "Held-out round 16", explains each miss. No label was
disputed: both misses were ddlab's. Every test here reads the corpus log (now work split), a text
written from the same source texts, or a near miss that must not read the same way; each rule's positive tests fail
on cef672f (the near misses hold on both). A text cited from a wheel is checked there where the wheel
is unpacked (skipped elsewhere).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import REAL_MANIFEST, assert_in_library_wheel, assert_in_sglang_wheel, assert_reads_as_labelled


# --- h16001: a helper thread's uncaught exception (threading.excepthook) is not the server's death ----

def _thread(target: str, path: str, exc: str, name: str = "Thread-11") -> str:
    return (f"Exception in thread {name} ({target}):\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
            "    self.run()\n"
            '  File "/usr/lib/python3.10/threading.py", line 953, in run\n'
            "    self._target(*self._args, **self._kwargs)\n"
            f'  File "/sgl/python/sglang/srt/{path}", line 630, in {target}\n'
            "    self.step()\n"
            f"{exc}\n")


_PREFETCH = _thread("prefetch_thread_func", "managers/cache_controller.py",
                    "NameError: name 'MooncakeStore' is not defined")


@pytest.mark.parametrize("text", [_PREFETCH,
                                  _PREFETCH.replace("Thread-11 (prefetch_thread_func)", "Thread-4"),
                                  _PREFETCH.split("\n", 1)[1]],  # the excepthook's header left out
                         ids=["py310-name", "py39-name", "no-header"])
def test_a_helper_threads_uncaught_exception_alone_is_not_a_crash(text):
    found = diagnose("[2025-08-01 10:00:00] INFO:     127.0.0.1:4000 - \"GET /health HTTP/1.1\" 200 OK\n" + text)
    assert (found.crashed, found.signature) == (False, None)
    assert found.cause == "NameError: name 'MooncakeStore' is not defined"
    assert "helper thread" in found.suggestion


def test_a_helper_threads_death_with_the_server_going_down_is_still_a_crash():
    # the same thread's traceback, then the scheduler's own death: the scheduler's is the crash
    sched = ("[2025-08-01 10:00:05] Scheduler hit an exception: Traceback (most recent call last):\n"
             '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2560, in run_scheduler_process\n'
             "    scheduler.event_loop_normal()\n"
             "ValueError: the batch is empty\n")
    found = diagnose(_PREFETCH + sched)
    assert found.crashed and found.cause == "ValueError: the batch is empty"
    # a thread whose exception is a known fatal one still reads as that
    cuda = diagnose(_thread("backup_thread_func", "managers/cache_controller.py",
                            "RuntimeError: CUDA error: an illegal memory access was encountered"))
    assert (cuda.crashed, cuda.kind) == (True, "cuda_illegal_access")


def test_the_scheduler_loops_own_tracebacks_are_not_a_helper_thread():
    # the overlap worker's forward thread of releases before it caught its exception (the
    # scheduler then waits on it for ever), and a traceback SGLang caught and logged itself
    forward = diagnose(_thread("forward_thread_func", "managers/tp_worker_overlap_thread.py",
                               "ValueError: the batch is empty", name="Thread-3"))
    assert (forward.crashed, forward.kind) == (True, "unknown")
    caught = diagnose("[2025-08-01 10:00:05] TpModelWorkerClient hit an exception: Traceback (most recent call last):\n"
                      '  File "/sgl/python/sglang/srt/managers/tp_worker_overlap_thread.py", line 141, in '
                      "forward_thread_func\n"
                      "    self.forward_thread_func_()\n"
                      "ValueError: the batch is empty\n")
    assert (caught.crashed, caught.kind) == (True, "unknown")


def test_sglangs_fatal_loops_catch_their_exception_and_hicaches_threads_do_not():
    # unpacked from sglang 0.4.10.post2's wheel where /work/wheels has it (skipped elsewhere)
    assert_in_sglang_wheel("0.4.10.post2", "sglang/srt/managers/scheduler.py",
                           '        logger.error(f"Scheduler hit an exception: {traceback}")\n'
                           "        parent_process.send_signal(signal.SIGQUIT)")
    assert_in_sglang_wheel("0.4.10.post2", "sglang/srt/managers/tp_worker_overlap_thread.py",
                           '            logger.error(f"TpModelWorkerClient hit an exception: {traceback}")\n'
                           "            self.parent_process.send_signal(signal.SIGQUIT)")
    assert_in_sglang_wheel("0.4.10.post2", "sglang/srt/managers/cache_controller.py",
                           "            self.prefetch_thread = threading.Thread(\n"
                           "                target=self.prefetch_thread_func, daemon=True")
    assert_in_sglang_wheel("0.5.23", "sglang/srt/managers/cache_controller.py",
                           "        self.prefetch_thread = threading.Thread(\n"
                           "            target=self.prefetch_thread_func, daemon=True")


# --- h16004: a traceback cut while a Triton backend ran its compiler as a subprocess ------------------

_TA = "/env/lib/python3.11/site-packages/triton"
_TRITON = ("[2026-04-22 08:39:15 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
           f'  File "{_TA}/compiler/compiler.py", line 310, in compile\n'
           "    next_module = compile_ir(module, metadata)\n"
           "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
           f'  File "{_TA}/backends/ascend/compiler.py", line 778, in <lambda>\n'
           "    lambda src, metadata: linalg_to_bin_enable_npu_compile_A2_A3(\n"
           f'  File "{_TA}/backends/ascend/compiler.py", line 549, in linalg_to_bin_enable_npu_compile_A2_A3\n')


@pytest.mark.parametrize("cut", ["    ret = subprocess.run(cmd_list, capture_",
                                 "    ret = subprocess.run(cmd_list, capture_output=True, check=True)\n",
                                 "    subprocess.run(ptxas_cmd, check=True, close_fds=False, stderr=flog)\n"],
                         ids=["cut-in-line", "whole-line", "nvidia-ptxas"])
def test_a_traceback_cut_on_a_triton_backends_compiler_subprocess_is_kernel_compile(cut):
    text = _TRITON
    if "ptxas" in cut:
        text = text.replace("backends/ascend/compiler.py\", line 549, in linalg_to_bin_enable_npu_compile_A2_A3",
                            "backends/nvidia/compiler.py\", line 424, in make_cubin")
    found = diagnose(text + cut)
    assert (found.crashed, found.kind, found.signature) == (True, "kernel_compile", "kernel_compile_cut")


def test_other_cuts_in_tritons_compile_are_not_a_compiler_failure():
    # cut on another line of the backend (not the compiler's subprocess)
    other = diagnose(_TRITON + '    metadata["shared"] = get_shared(src)\n')
    assert other.signature != "kernel_compile_cut" and other.kind != "kernel_compile"
    # a subprocess run outside Triton's compile (a launcher's own helper)
    outside = diagnose("Traceback (most recent call last):\n"
                       '  File "/app/launch.py", line 20, in main\n'
                       "    start()\n"
                       '  File "/app/triton_tools/compiler.py", line 9, in start\n'
                       "    ret = subprocess.run(cmd, check=True)\n")
    assert outside.signature != "kernel_compile_cut" and outside.kind != "kernel_compile"


def test_tritons_backends_run_their_compiler_with_check():
    # the unpacked wheels of triton-ascend 3.2.0 and triton 3.4.0 (pip download --no-deps, unzipped
    # under /work/wheels; skipped where they are not)
    assert_in_library_wheel("triton-ascend", "3.2.0", "triton/backends/ascend/compiler.py",
                            "        ret = subprocess.run(cmd_list, capture_output=True, check=True)")
    assert_in_library_wheel("triton-ascend", "3.2.0", "triton/compiler/compiler.py",
                            "            next_module = compile_ir(module, metadata)")
    assert_in_library_wheel("triton", "3.4.0", "triton/backends/nvidia/compiler.py",
                            "                subprocess.run(ptxas_cmd, check=True, close_fds=False, stderr=flog)")


# --- the round's corpus logs (work split since the fold) ----------------------------------------------

@pytest.mark.parametrize(("log_id", "signature"), [
    ("h16001", None),                  # only HiCache's prefetch thread died: not a crash
    ("h16004", "kernel_compile_cut"),  # cut on triton-ascend's compile subprocess.run
])
def test_round16_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_no_round16_label_is_disputed():
    folded = [log for log in REAL_MANIFEST.values() if log.get("heldout_round") == 16]
    assert len(folded) == 11 and all(log["split"] == "work" for log in folded)
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in folded)
