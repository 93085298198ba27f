"""Runtime: NCCL and distributed peers, hangs, health checks and the warmup request.

An NCCL error is often the echo of another rank's death, so it ranks low; a
capture failure that only wraps a lost distributed peer (gloo "Connection
closed by peer") is ``nccl``, not a capture problem. A warmup request that
times out or gets an error status means the server never answered
(``health_check``); it is the launcher's generic wrapper, so it only counts
when nothing more specific is in the log (docs/sglang.md section 4.4).
"""

from __future__ import annotations

from ddlab.diagnosis.signature import Signature

__all__ = ["SIGNATURES"]

_NCCL_ADVICE = ("Check NCCL: rerun with NCCL_DEBUG=INFO; make sure every GPU of `--tp-size` is "
                "visible and free (CUDA_VISIBLE_DEVICES) and /dev/shm is large enough; try "
                "NCCL_P2P_DISABLE=1 or `--disable-custom-all-reduce`. If another rank crashed "
                "first, its error is the real cause.")

NCCL = Signature(
    "nccl", "nccl", "NCCL / distributed communication failed",
    (_NCCL_ADVICE,),
    patterns=(r"\bNCCL error\b", r"\bnccl(?:UnhandledCuda|System|Internal|InvalidUsage"
              r"|InvalidArgument|Remote)Error\b", r"DistBackendError", r"ProcessGroupNCCL",
              r"Watchdog caught collective operation timeout", r"NCCL communicator was aborted"),
    lines=(r"Watchdog caught collective operation timeout", r"\bNCCL error\b"),
    priority=30,
    sources=(("0.4.10.post2", "sglang/srt/distributed/device_communicators/pynccl_wrapper.py:350"),
             ("0.5.10", "sglang/srt/distributed/device_communicators/pynccl_wrapper.py:376"),
             ("0.5.23", "sglang/srt/distributed/device_communicators/pynccl_wrapper.py:474"),
             ("torch 2.14.1", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp")))

PEER_LOST = Signature(
    "capture_peer_lost", "nccl", "a distributed peer was lost (seen during graph capture)",
    ("Another rank died or hung while this one captured CUDA graphs (a gloo / NCCL connection "
     "closed): find the first rank that failed; no graph setting fixes this.", _NCCL_ADVICE),
    patterns=(r"Capture\b[\w\s-]{0,40}?\bcuda ?graph failed: .{0,200}?(?:gloo|Connection closed by peer"
              r"|NCCL error|Connection reset by peer)",),
    priority=82, phase="graph_capture",
    sources=(("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:390"),
             ("gloo", "gloo/transport/tcp/pair.cc (Connection closed by peer)")))

HEALTH_CHECK = Signature(
    "health_check", "health_check", "the server stopped answering",
    ("The server stopped answering: the scheduler or the detokenizer is stuck. Dump the "
     "scheduler's stack (`py-spy dump --pid PID`), retry with {graphs_off} to rule out a graph "
     "hang; raise `--watchdog-timeout` only if a step is legitimately slow.",),
    patterns=(r"Health check failed", r"watchdog timeout"),
    lines=(r"Health check failed", r"\bwatchdog timeout\b", r"^\w+ debug info:$"),
    priority=20, phase="serving",
    sources=(("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:296"),
             ("0.4.10.post2", "sglang/srt/managers/scheduler.py:2134"),
             ("0.5.10", "sglang/srt/utils/watchdog.py:154"),
             ("0.5.10", "sglang/srt/utils/watchdog.py:150"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:793"),
             ("0.5.23", "sglang/srt/utils/watchdog.py:154")))

WARMUP_FAILED = Signature(
    "warmup_failed", "health_check", "the server did not answer its warmup request",
    ("The server started but did not answer its own warmup request (a timeout, or an error "
     "status from something in between): if it timed out, the first generation hangs (dump "
     "the scheduler's stack with `py-spy dump --pid PID`); a 502 usually comes from an HTTP "
     "proxy in the environment (set no_proxy=127.0.0.1,localhost).",),
    patterns=(r"Read timed out|ReadTimeout|TimeoutError|timed out",
              r"res=<Response \[\d+\]>|status_code == 200", r"ConnectionError|Connection refused"),
    context=(r"_wait_and_warmup|_execute_server_warmup|Initialization failed\. warmup error",),
    priority=15, phase="ready", echo=True,
    sources=(("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:1086"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:2494"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:2533")))

SIGNATURES = [NCCL, PEER_LOST, HEALTH_CHECK, WARMUP_FAILED]
