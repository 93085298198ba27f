"""Native crashes: a fatal signal (segfault, bus error, abort) with no Python exception that explains it.

The texts are the writers' own: CPython's faulthandler ("Fatal Python error:
Segmentation fault", then each thread's frames, the crashing one under
"Current thread 0x...", then "Extension modules: ..."), tvm-ffi's segfault handler (SGLang's JIT kernels load
it: "!!!!!!! Segfault encountered !!!!!!!" and native frames), UCX's ("====
backtrace (tid: N) ===="), glog's failure signal handler, the shell's report of
a child a signal killed ("Segmentation fault (core dumped)"), and SGLang's own
report of a child that died of a signal ("crashed with exit code -11", dynamo's
"Exit code: -6 (SIGABRT)", torch elastic's "failed (exitcode: -11) local_rank: 0"). A native crash ranks below every Python
exception a signature knows: an abort that a C++ ``what():`` explains (the NCCL
watchdog) is that error, a compiler that segfaults is ``kernel_compile``.

The suggestion names where it happened: the last Python frame of the crashing
thread (faulthandler lists the most recent first) or, without one, the
innermost native symbol of the dump; the phase comes from those frames like any
traceback's.
"""

from __future__ import annotations

import re

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "SIGNALS", "FATAL_SIGNAL_DUMP", "STARTUP_SIGNAL_DUMP", "LOOP_FILE", "dump_reading", "dumped_while_running"]

# the files that define the scheduler's event loops (``event_loop_*``): the Scheduler and its
# mixins, 0.4.10.post2 managers/scheduler.py:753, disaggregation/prefill.py:266, decode.py:661;
# 0.5.23 managers/scheduler.py:2026, managers/scheduler_pp_mixin.py:217 (event_loop_pp_disagg_prefill),
# disaggregation/prefill.py:684, disaggregation/decode.py:3123, multiplex/multiplexing_mixin.py:100,
# hardware_backend/mlx/scheduler_mixin.py:123 (a dump may print the file name alone: "prefill.py")
LOOP_FILE = r"(?:scheduler\w*|prefill|decode|multiplexing_mixin)\.py"
SIGNALS = r"Segmentation fault|Bus error|Aborted|Floating point exception|Illegal instruction"
_EXIT_SIGNAL = r"-(?:4|6|7|8|11)\b"  # SIGILL SIGABRT SIGBUS SIGFPE SIGSEGV as a negative exit code
_DUMP_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<func>\S+)', re.M)
# tvm-ffi prints native frames as Python ones: File "<unknown>", line 0, in void f<true>(...)
_UNKNOWN_FRAME = re.compile(r'^\s*File "<unknown>", line \d+, in (?:[\w:<>]+ )?([A-Za-z_][\w:~]*)', re.M)
_NATIVE_FRAME = re.compile(r"^\s*(?:\d+\s+0x[0-9a-f]+\s+(?P<sym>[A-Za-z_][\w:<>~]*)\(\)"
                           r"|frame #\d+: (?P<cpp>[A-Za-z_][\w:<>~]*))", re.M)
_SKIP = re.compile(r"threading\.py|_monitor\.py|multiprocessing[/\\]|<string>|<unknown>|selectors\.py"
                   r"|queue\.py|subprocess\.py|signal|sigaction|ucs_|gsignal|pthread_kill|abort\b|^raise$"
                   r"|Backtrace|SegFault|c10::Error|torchCheckFail", re.I)


def _last_frame(found: Found) -> str | None:
    """The crashing thread's most recent Python frame (faulthandler: after "Current
    thread"), else the first SGLang frame of any dumped thread, else the innermost native
    functions of a native backtrace (below the signal handler's own)."""
    text = found.frames
    current = text.split("Current thread", 1)[1] if "Current thread" in text else ""
    for block in (current, text):
        for frame in _DUMP_FRAME.finditer(block):
            if not _SKIP.search(frame["file"]):
                path = frame["file"][frame["file"].rfind("sglang/"):] if "sglang/" in frame["file"] \
                    else frame["file"]
                return f"{frame['func']} ({path}:{frame['line']})"
    names = _UNKNOWN_FRAME.findall(text)
    names += [m["sym"] or m["cpp"] for m in _NATIVE_FRAME.finditer(text)]
    names = [n.split("(")[0] for n in names if n and not _SKIP.search(n)]
    return "native code " + " <- ".join(dict.fromkeys(names[:3])) if names else None


def _native_detail(found: Found) -> str:
    where = _last_frame(found)
    at = f"The crashing thread was in {where}, phase {found.phase}. " if where else \
        f"Phase {found.phase}; no thread dump in the log says where. "
    hint = ""
    if regex(r"nccl|ncclComm|ProcessGroupNCCL|all_reduce|proxy\.cc").search(found.frames):
        hint = ("It died inside NCCL: rerun with NCCL_DEBUG=INFO and check that every rank runs "
                "the same NCCL; `--disable-custom-all-reduce` rules out the custom all-reduce. ")
    elif regex(r"mooncake|nixl|nvshmem|deep_ep|transfer_kv|ucx|libucs").search(found.frames):
        hint = ("It died inside a transfer library (Mooncake / NIXL / NVSHMEM / DeepEP): check its "
                "version against the one your SGLang release pins, and its network settings. ")
    return (at + hint).strip()


NATIVE_CRASH = Signature(
    "native_crash", "native_crash", "a native crash (fatal signal) with no Python exception",
    ("A process died of a signal in native code, so no Python exception says why. Get the "
     "crashing thread's stack: rerun with PYTHONFAULTHANDLER=1 (and CUDA_LAUNCH_BLOCKING=1 if "
     "it is a GPU kernel), or enable core dumps (`ulimit -c unlimited`) and run `gdb -batch -ex "
     "bt python CORE`; then retry with {graphs_off} to rule out CUDA graphs.",),
    patterns=(rf"crashed with exit code {_EXIT_SIGNAL}", rf"Exit code: {_EXIT_SIGNAL}",
              rf"died during initialization \(exit code: {_EXIT_SIGNAL}\)"),
    lines=(rf"^Fatal Python error: .{{0,40}}(?:{SIGNALS})",
           r"!!!!!!! Segfault encountered !!!!!!!",
           r"^==== backtrace \(tid:\s*\d+\) ====",
           # one frame of that backtrace ("%2d 0x%016lx %s()  %s:%u", UCS_DEBUG_BACKTRACE_LINE_FMT),
           # printed bare to stderr only by ucs_handle_error (a fatal signal, a fatal error then
           # abort()); UCX's logger prefixes its own copies: a paste that starts below the header
           r"^\s*\d{1,3} 0x[0-9a-f]{16} \S+\(\)  \S+:\d+\s*$",
           # (vLLM round 103) not SIGTERM's: abseil's handler dumps it too (abseil-cpp 0565e00
           # absl/debugging/failure_signal_handler.cc failure_signal_data lists SIGTERM beside SIGSEGV), which Ray's
           # logging.cc installs in every process, so a process stopped as asked (vLLM's own shutdown of its Ray
           # workers: "If you see error log from logging.cc regarding SIGTERM received, please ignore because this
           # is the expected termination process in Ray", 0.7.3 executor/ray_distributed_executor.py:104-107)
           # prints it: a stop, no fault
           r"^\*\*\* (?:SIG(?!TERM\b)\w+|Aborted at) .{0,80}(?:received|\(@0x)",
           r"^Current thread 0x[0-9a-f]+ \(most recent call first\):",
           # the shell's report of a child killed by a fatal signal: strsignal's name, " (core
           # dumped)" with a core; from a script, "FILE: line N: PID NAME (core dumped) COMMAND"
           rf"^(?:{SIGNALS})(?: \(core dumped\))?\s*$",
           rf"^\S+: line \d+: +\d+ (?:{SIGNALS}) +(?:\(core dumped\) )?\S",
           rf"crashed with exit code {_EXIT_SIGNAL}", rf"Exit code: {_EXIT_SIGNAL}",
           rf"died during initialization \(exit code: {_EXIT_SIGNAL}\)",
           # (round 60) torch elastic (torchrun) reporting a worker a signal ended: its agent's "failed
           # (exitcode: -11) local_rank: N" and the root-cause block's "exitcode  : -11 (pid: N)"
           rf"failed \(exitcode: {_EXIT_SIGNAL}\) local_rank: \d+", rf"^\s*exitcode\s*: {_EXIT_SIGNAL} \(pid: \d+\)",
           # (vLLM round 79) a container's or a shell's exit status 128+N for a process a fatal signal N ended (bash's
           # manual, "Exit Status"; Docker and containerd report it so), as a platform writes it for its worker (RunPod's
           # console: "worker exited with exit code 136", SIGFPE); 137 (SIGKILL) is no native crash
           r"\bexited with exit code 1(?:3[2456]|39)\b",
           # CPython's Py_FatalError aborts whatever follows the colon; a paste that cuts the
           # line (several processes' headers run together) still shows a fatal error
           r"^Fatal Python error: ?",
           # libstdc++'s terminate handler, then abort(): terminate re-entered (a second thread
           # throwing while the first terminates), or called with no exception to report
           r"^terminate called recursively", r"^terminate called without an active exception",
           # (round 44) or called with an uncaught C++ exception: its type, then what() where it derives from
           # std::exception; ranked below every kind, so a what() a signature knows (NCCL's watchdog) is that
           r"^terminate called after throwing an instance of '",
           # CPython lists the loaded extension modules after a fatal error's thread dump, and
           # nowhere else (faulthandler's own dump_traceback and its watchdog do not): a paste
           # cut after the dump's header still shows the fatal signal
           r"^Extension modules: \S",
           # the list's end, " (total: N)" (3.12 Python/pylifecycle.c _Py_DumpExtensionModules),
           # where a paste starts inside the list
           r"^[\w.]+(?:, [\w.]+)+ \(total: \d+\)\s*$",
           # (vLLM round 79) or a paste of the list's middle alone, header and end cut (wrapped at a width, a name
           # broken at each end): only that list is a line of 8 or more bare module names joined by ", "
           # (_Py_DumpExtensionModules writes each name, ", " between), 4 of them dotted (a package's extension);
           # a repr's list quotes its names, an import or a log line opens with a word and a space
           r"^(?=(?:(?:[^,.\n]*, )*[^,.\n]*\.[^,\n]*, ){4})(?:[A-Za-z_]\w*(?:\.\w+)*, ){7,}[A-Za-z_]\w*(?:\.\w+)*\.?\s*$"),
    priority=12, fatal=True, running=True, detail=_native_detail,
    sources=(("CPython 3.12.3", "Modules/faulthandler.c:302 (faulthandler_fatal_error: Fatal Python error: "
                                "Segmentation fault / Bus error / Aborted, the names :77, :68, :74)"),
             ("CPython 3.12.3", "Python/traceback.c:1361 (write_thread_id: Current thread 0x...)"),
             ("CPython 3.12.3", "Python/pylifecycle.c:2817 (_Py_DumpExtensionModules: Extension modules: "
                                "..., (total: N) :2829; called by faulthandler_fatal_error and fatal_error "
                                ":2898 only)"),
             ("apache-tvm-ffi 0.1.15", "src/ffi/backtrace.cc:156 (!!!!!!! Segfault encountered !!!!!!!)"),
             ("UCX 9466d10", "src/ucs/debug/debug.c:666 (ucs_debug_print_backtrace: ==== backtrace "
                             "(tid: N) ====)"),
             ("UCX 9466d10", "src/ucs/debug/debug.c:45 (a frame: %2d 0x%016lx %s()  %s:%u), :666, :1094"),
             ("glog 0.7.1 (v0.7.1)", "src/signalhandler.cc:200 (DumpSignalInfo: *** SIGSEGV (@0x...) "
                                     "received by PID ...), :175 (DumpTimeInfo: *** Aborted at)"),
             ("abseil 20260817.0", "absl/debugging/failure_signal_handler.cc:267 (WriteSignalMessage: "
                                   "*** SIGSEGV received at time=...)"),
             ("libstdc++ 12.2.0", "libsupc++/vterminate.cc:49 (__verbose_terminate_handler: terminate "
                                  "called recursively, :93 without an active exception, then abort() :95)"),
             ("libstdc++ (gcc-mirror/gcc 1676372)", "libsupc++/vterminate.cc:67 (terminate called after throwing an "
                                                    "instance of '...', then what() :85, abort() :95)"),
             ("torch 2.13.0", "torch/distributed/elastic/multiprocessing/api.py:1003 (SubprocessContext._poll: "
                              "failed (exitcode: %s) local_rank: %s (pid: %s) of binary: %s)"),
             ("torch 2.13.0", "torch/distributed/elastic/multiprocessing/errors/__init__.py:188 "
                              "(_FAILURE_FORMAT_TEMPLATE: exitcode  : ${exitcode} (pid: ${pid}))"),
             ("0.5.10", "sglang/srt/utils/watchdog.py:217"),
             ("0.5.23", "sglang/srt/utils/watchdog.py:217"),
             ("0.5.23", "sglang/srt/entrypoints/engine.py:2006"),
             ("bash 5.2 (bash-5.2)", "jobs.c:4321 (notify_of_job_status: j_strsignal(termsig), then "
                                     "\" (core dumped)\" :4324; from a script pretty_print_job :4311)")))

# SGLang enables faulthandler in its scheduler (0.4.10.post2 managers/scheduler.py:2516, 0.5.10
# :3551, 0.5.23 :6295: ``faulthandler.enable()``, no dump_traceback_later, no register), and its
# watchdog dumps with py-spy: a faulthandler-format dump in its log is a fatal signal's. A dump
# whose scheduler thread was waiting (its innermost frame a wait) is a hang the signal ended
# (runtime.HANG_DUMP); one whose scheduler was running a step is the signal's: this reading.
FATAL_SIGNAL_DUMP = Signature(
    "fatal_signal_dump", "native_crash",
    "a fatal signal's thread dump: the scheduler was running, not waiting",
    NATIVE_CRASH.advice,
    lines=(rf'^\s*File "[^"]*{LOOP_FILE}", line \d+ in event_loop_\w+\s*$',),
    priority=10, fatal=True, running=True, detail=_native_detail,
    sources=(("CPython 3.12.3", "Modules/faulthandler.c:314 (faulthandler_fatal_error: dumps each thread)"),
             ("CPython 3.12.3", "Python/traceback.c:1363 (write_thread_id: Thread 0x... (most recent call "
                                "first)), :1246 (dump_frame: File \"...\", line N in f)"),
             ("0.4.10.post2", "sglang/srt/managers/scheduler.py:2516"),
             ("0.5.10", "sglang/srt/managers/scheduler.py:3551"),
             ("0.5.23", "sglang/srt/managers/scheduler.py:6295")))

# (round 18) the same dump with no event loop on the stack: a scheduler still starting (its model
# loaded, its workers built: run_scheduler_process -> Scheduler.__init__ -> TpModelWorker ->
# ModelRunner) when the signal came. faulthandler.enable() (0.5.23 managers/scheduler.py:6295, also
# data_parallel_controller.py:956) dumps only on a fatal signal, and SGLang's watchdog, which also
# runs while the scheduler initializes, dumps with py-spy (0.5.23 utils/watchdog.py:152,
# pyspy_dump_schedulers): a frame of SGLang's own code in faulthandler's format ('line N in f', no
# comma) is a fatal signal's dump, however little of it a paste kept (the header, the innermost or the
# outermost frames). Ranked below the event loop's readings (HANG_DUMP and this module's dump_reading
# decide a dump that shows the loop)
STARTUP_SIGNAL_DUMP = Signature(
    "startup_signal_dump", "native_crash", "a fatal signal's thread dump of SGLang's process (no event loop)",
    NATIVE_CRASH.advice,
    lines=(r'^\s*File "[^"]*sglang[/\\]srt[/\\][^"]*\.py", line \d+ in \w+\s*$',),
    priority=9, fatal=True, running=True, detail=_native_detail,
    sources=(("CPython 3.12.3", "Python/traceback.c:1246 (dump_frame: File \"...\", line N in f)"),
             ("0.4.10.post2", "sglang/srt/managers/scheduler.py:2516"),
             ("0.5.23", "sglang/srt/managers/scheduler.py:6295"),
             ("0.5.23", "sglang/srt/managers/data_parallel_controller.py:956"),
             ("0.5.23", "sglang/srt/utils/watchdog.py:152")))

_DUMP_THREAD = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+")
_DUMP_LOOP = re.compile(rf'^\s*File "[^"]*{LOOP_FILE}", line \d+ in event_loop_\w+\s*$')
# a thread that waits: in the standard library's waits, or in a function named for one
_WAITING = re.compile(r'File "[^"]*(?:threading|queue|selectors|connection|socket)\.py"'
                      r"|\bin (?:_?wait\w*|recv\w*|\w+_recv\w*|poll|select|acquire|join|get|sleep|synchronize"
                      r"|barrier|all_reduce|all_gather|broadcast|resolve_batch_result)\s*$")


def dumped_while_running(frames: str) -> bool:
    """In a faulthandler dump, the thread that runs the scheduler's event loop was inside a
    step, not waiting: its innermost frame (the first printed) is no wait."""
    block: list[str] = []
    for line in frames.splitlines():
        if _DUMP_THREAD.match(line):
            block = []
        elif _DUMP_FRAME.match(line):
            block.append(line)
            if _DUMP_LOOP.match(line):
                return not _WAITING.search(block[0])
    return False


def dump_reading(signature: Signature | None, frames: str, hang: Signature) -> Signature | None:
    """A dumped scheduler read as a hang (``hang``), whose thread was running a step when the
    dump was written: the fatal signal's dump (faulthandler writes SGLang's only on one)."""
    return FATAL_SIGNAL_DUMP if signature is hang and dumped_while_running(frames) else signature


SIGNATURES = [NATIVE_CRASH, FATAL_SIGNAL_DUMP, STARTUP_SIGNAL_DUMP]
