"""Runtime: NCCL and distributed peers, hangs, health checks and the warmup request.

An NCCL error is often the echo of another rank's death, so it ranks low; a
capture failure that only wraps a lost distributed peer (gloo "Connection
closed by peer") is ``nccl``, not a capture problem; an abort that torch's NCCL
watchdog threw (its ``Exception raised from ... ProcessGroupNCCL.cpp``) is
``nccl`` too, never a bare native crash. torch's exit warning "destroy_process_group()
was not called" is a warning: it decides nothing. Ranks that never met through torch's store (the
rendezvous, rank 0's NCCL ID) are :mod:`.rendezvous`, spliced into :data:`SIGNATURES` here.

``hang`` and ``health_check`` split what "the server stopped answering" used to
mean. ``hang``: the scheduler itself stopped making progress and says so or is
shown so: its watchdog's timeout (``soft=True`` only reports, no crash), the
watchdog's debug dump, a py-spy or faulthandler dump of a scheduler stuck in its
event loop, or no batch line for ``--watchdog-timeout`` seconds while requests
wait. ``health_check``: a client's probe failed: the HTTP server's health check
got no answer ("Health check failed", cleared when a scheduler rank logs after
it), ``/health`` answers only 503 (the server never became healthy), or the
launcher's warmup request timed out or got an error. When both are in a log the
hang is the cause and the failed probe its symptom. A warmup failure is the
launcher's generic wrapper, so it only counts when nothing more specific is in
the log (docs/sglang.md section 4.4).
"""

from __future__ import annotations

import re

from ddlab.crashes.kinds.native import LOOP_FILE
from ddlab.crashes.kinds.rendezvous import DIST_INIT_TIMEOUT, UNIQUE_ID_WAIT
from ddlab.crashes.kinds.rendezvous import NVSHMEM_INIT  # (round 29)
from ddlab.crashes.kinds.rendezvous import STORE_PING_NONCE  # (round 33)
from ddlab.crashes.kinds.warmup import HARNESS_START_TIMEOUT, WARMUP_ERROR_BODY  # (rounds 94, 59)
from ddlab.crashes.kinds.warmup import WARMUP_FAILED, WARMUP_READ_TIMEOUT, WARMUP_STATUS_CUT
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES"]

_NCCL_ADVICE = ("Check NCCL: rerun with NCCL_DEBUG=INFO; make sure every GPU of `--tp-size` is "
                "visible and free (CUDA_VISIBLE_DEVICES) and /dev/shm is large enough; try "
                "NCCL_P2P_DISABLE=1 or `--disable-custom-all-reduce`. If another rank crashed "
                "first, its error is the real cause.")

# NCCL's own trace of a failed call returning up its stack (NCCL_DEBUG=INFO; NCCLCHECK in
# src/include/checks.h logs "file:line -> result" for a result other than ncclSuccess): one that
# returns through init.cc is the communicator's creation failing (ncclCommInitRank), a paste
# whose Python traceback is cut still says NCCL
_NCCL_INIT_FAILED = r"\bNCCL INFO init\.cc:\d+ -> [1-9]\d*\s*$"

# (vLLM round 23) torch_npu runs ops through a task queue: an op that fails there records "the current
# working operator name is <op>" (ReadQueue, get_func_error_msg), the next enqueue throws "The Inner error is
# reported as above. The process exits for this inner error, and <that>" and each later one logs "Inner error
# happened with CAN_EXIT status, detail: <that>" (Ascend/pytorch torch_npu/csrc/core/npu/NPUQueue.cpp Enqueue;
# ReadQueue, get_func_error_msg at 0041145): an HCCL collective named there failed on this NPU
_HCCL_OP_FAILED = (r"(?:Inner error happened with CAN_EXIT status, detail: |The process exits for this inner "
                   r"error, and )the current working operator name is Hccl\w+")
# (vLLM round 24) cupy's NCCL binding (Ray's collectives and compiled-graph channels use it) raises
# NcclError('%s: %s' % (ERROR2[status], ncclGetErrorString(status))) from check_status (cupy/cupy 0fc0619
# cupy_backends/cuda/libs/nccl.pyx): "NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error ..."
_CUPY_NCCL = r"\bNcclError: NCCL_ERROR_(?!SUCCESS)[A-Z_]+"
NCCL = Signature(
    "nccl", "nccl", "NCCL / distributed communication failed",
    (_NCCL_ADVICE,),
    patterns=(r"\bNCCL error\b", r"\bnccl(?:UnhandledCuda|System|Internal|InvalidUsage"
              r"|InvalidArgument|Remote)Error\b", r"DistBackendError",
              r"ProcessGroupNCCL(?!.{0,200}destroy_process_group)",
              r"Watchdog caught collective operation timeout", r"NCCL communicator was aborted",
              _HCCL_OP_FAILED, _CUPY_NCCL),
    lines=(r"Watchdog caught collective operation timeout", r"\bNCCL error\b", _CUPY_NCCL,
           r"^Exception raised from \w+ at \S*ProcessGroupNCCL\.cpp:\d+", _HCCL_OP_FAILED,
           # (vLLM round 105) torch's heartbeat monitor's LOG(FATAL), then abort, after a rank's collective timeout
           # (c10d/ProcessGroupNCCL.cpp HeartbeatMonitor::runLoop's exitReason, getNCCLWatchdogTimeoutExitMsg)
           r"Terminating the process after attempting to dump debug info, due to collective timeout or exception\."),
    priority=30, running=True,
    sources=(("torch_npu (Ascend/pytorch 0041145)", "torch_npu/csrc/core/npu/NPUQueue.cpp:163 "
                                                    "(get_func_error_msg: the current working operator "
                                                    "name is <op>), :413 "
                                                    "(Repository::Enqueue: The process exits for this inner "
                                                    "error, and ..., after SetStatus(CAN_EXIT) :410)"),
             ("torch_npu (Ascend/pytorch 9e73e70)", "torch_npu/csrc/core/npu/NPUQueue.cpp:308 (Repository::"
                                                    "MakeSureQueueEmpty: Inner error happened with CAN_EXIT "
                                                    "status, detail: ...)"),
             ("0.4.10.post2", "sglang/srt/distributed/device_communicators/pynccl_wrapper.py:350"),
             ("0.5.10", "sglang/srt/distributed/device_communicators/pynccl_wrapper.py:376"),
             ("0.5.23", "sglang/srt/distributed/device_communicators/pynccl_wrapper.py:474"),
             ("torch 2.6.0", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:623 (WorkNCCL::"
                             "checkTimeout: Watchdog caught collective operation timeout), :2365 "
                             "(checkForNCCLErrorsInternal: NCCL error: ...)"),
             ("torch 2.6.0", "torch/csrc/distributed/c10d/NCCLUtils.cpp:21 (NCCLComm::getNcclComm: NCCL "
                             "communicator was aborted on rank N)"),
             ("cupy (cupy/cupy 0fc0619)", "cupy_backends/cuda/libs/nccl.pyx:119 (NcclError: '%s: %s' % "
                                          "(ERROR2[status], msg)), :128 (check_status)")))

# (round 78) the custom all-reduce (the tensor-parallel communicator beside NCCL, vLLM's kernels in SGLang 0.1.x)
# checks each CUDA call with CUDACHECK, which prints "Failed: Cuda error %s:%d '%s'" with its own __FILE__ and
# exits the process (vLLM v0.4.3 csrc/custom_all_reduce.cuh:14-21; its :307 opens a peer's buffer with
# cudaIpcOpenMemHandle, where GPUs without P2P get "peer access is not supported between these two devices").
# SGLang 0.1.17 takes vLLM's P2P test out (srt/utils.py:456-463, monkey_patch_vllm_p2p_access_check: its
# gpu_p2p_access_check made to return True, called before the distributed init at srt/managers/controller/
# model_runner.py:243; 0.1.16 has no such patch), so the all-reduce is set up on GPUs that cannot take it. The
# macro's format is common (NCCL's examples print the same): the file's name, as far as a cut path shows it, is
# what says the custom all-reduce. Not ``running``: its buffers are opened when the communicator is made at
# startup (and at each graph capture), so the phase is what the log shows
_CUSTOM_AR = r"^Failed: Cuda error (?:\S*/)?custom_all_red"
CUSTOM_ALL_REDUCE = Signature(
    "custom_all_reduce_failed", "nccl", "the custom all-reduce failed a CUDA call",
    ("The custom all-reduce between the tensor-parallel GPUs (used instead of NCCL for small tensors over NVLink "
     "or PCIe P2P) failed a CUDA call and ended the process; \"peer access is not supported\" means these GPUs "
     "cannot map each other's memory (no P2P between them).",
     "Retry with `--disable-custom-all-reduce` (NCCL does every all-reduce).",
     "Where that runs, P2P between these GPUs is the suspect (NCCL_P2P_DISABLE=1 to test; the driver, IOMMU). "
     "SGLang 0.1.17 has no such option and skips vLLM's P2P test: 0.1.16 keeps the test, a newer release has "
     "the option."),
    patterns=(_CUSTOM_AR,), lines=(_CUSTOM_AR,), priority=60, fatal=True,
    sources=(("vllm v0.4.3 (tag)", "csrc/custom_all_reduce.cuh:14-21 (CUDACHECK: printf(\"Failed: Cuda error "
                                   "%s:%d '%s'\\n\", __FILE__, __LINE__, cudaGetErrorString(e)); exit(EXIT_FAILURE))"),
             ("vllm v0.4.3 (tag)", "csrc/custom_all_reduce.cuh:307 (CUDACHECK(cudaIpcOpenMemHandle(...)))"),
             ("sglang 0.1.17", "sglang/srt/utils.py:456"),
             ("sglang 0.1.17", "sglang/srt/managers/controller/model_runner.py:243")))

# not ``running``: a communicator is created at startup (and by a group made later), so the
# phase is what the log shows, launch where it shows nothing
NCCL_INIT = Signature(
    "nccl_init_failed", "nccl", "NCCL could not create its communicator",
    ("NCCL's own trace shows the communicator's creation failing (ncclCommInitRank); the NCCL WARN "
     "line above it says why (a peer node it could not connect to, a transport it could not set "
     "up).", _NCCL_ADVICE),
    patterns=(_NCCL_INIT_FAILED,), lines=(_NCCL_INIT_FAILED,), priority=30,
    sources=(("NCCL 2.21.5 (v2.21.5-1)", "src/include/checks.h:111 (NCCLCHECK: \"%s:%d -> %d\"), "
                                        "src/init.cc:1826 (ncclCommInitRank)"),))

# NCCL's network transport failing while it moves data: the InfiniBand verbs completion of a
# send or receive came back with an error status (src/transport/net_ib.cc, ncclIbTest: "NET/IB :
# Got completion from peer %s with error %d, opcode %d, len %d, vendor err %d", then it returns
# ncclRemoteError), and NCCL's proxy progress thread stopping on such an error (src/proxy.cc,
# ncclProxyProgress: INFO "%s:%d -> %d [Progress Thread]", the result stored as the
# communicator's async error): every collective of that communicator fails from then on
_NCCL_NET = (r"\bNCCL WARN NET/IB ?: Got completion from peer \S+ with error \d+",
             r"\bNCCL INFO \S+\.cc:\d+ -> [1-9]\d* \[Progress Thread\]\s*$")
# ibv_wc_status (rdma-core libibverbs/verbs.h), the ones a lost link or peer gives
_IB_STATUS = {"5": "IBV_WC_WR_FLUSH_ERR: the queue pair was already in error, this request was flushed",
              "12": "IBV_WC_RETRY_EXC_ERR: the transport retry counter was exceeded, the peer's NIC never "
                    "acknowledged (a link down, a wrong RoCE GID index, the peer gone)",
              "13": "IBV_WC_RNR_RETRY_EXC_ERR: the peer had no receive posted in time"}


def _ib_status(found: Found) -> str | None:
    codes = [c for c in dict.fromkeys(regex(r"with error (\d+)").findall(found.text)) if c in _IB_STATUS]
    return " ".join(f"Completion error {c} is {_IB_STATUS[c]}." for c in codes) or None


NCCL_NET = Signature(
    "nccl_net_error", "nccl", "NCCL's network transport failed (an InfiniBand completion error)",
    ("NCCL's InfiniBand / RoCE transport got an error completion from the peer node and its proxy "
     "thread stopped: the collectives between the nodes fail. Check the fabric between the nodes "
     "(`ibstat`, `ibv_devinfo`, the links' error counters), that NCCL_IB_HCA names the NICs that "
     "reach the other node and, on RoCE, NCCL_IB_GID_INDEX; NCCL_IB_DISABLE=1 (TCP sockets) tells a "
     "fabric fault from the rest.", _NCCL_ADVICE),
    patterns=_NCCL_NET, lines=_NCCL_NET, priority=30, detail=_ib_status,
    sources=(("NCCL 2.19.4 (v2.19.4-1)", "src/transport/net_ib.cc:1333 (ncclIbTest: NET/IB : Got completion "
                                         "from peer %s with error %d, opcode %d, len %d, vendor err %d)"),
             ("NCCL 2.21.5 (v2.21.5-1)", "src/proxy.cc:878 (ncclProxyProgress: "
                                         "\"%s:%d -> %d [Progress Thread]\"), :892")))

# torch's TCPStore client waited for a key another rank never wrote: its socket read timed out
# (torch/csrc/distributed/c10d/socket.cpp, SocketImpl::waitForInput: C10D_WARNING "waitForInput:
# socket {} timed out after {}ms"; TCPStore.cpp, TCPStore::doWait then raises DistStoreError "wait
# timeout after {}ms"). The line is a warning: alone it decides nothing; it explains the traceback
# the same process cuts or leaves unexplained right after it (``explains``).
_STORE_WAIT = (r"\bwaitForInput: socket .{0,300}? timed out after \d+\s*ms",
               r"\bwait timeout after \d+\s*ms, keys:")
STORE_WAIT_TIMEOUT = Signature(
    "store_wait_timeout", "nccl", "a rank waited on torch's store for a peer that never came",
    ("This rank waited on torch.distributed's store (the TCPStore on node 0) for a key another rank "
     "never wrote, until the timeout: that rank died, hung or never reached the same point. Its own "
     "log holds the first error; a rank that is only slow needs a longer timeout (SGLang's "
     "`--dist-timeout`).", _NCCL_ADVICE),
    patterns=_STORE_WAIT, lines=_STORE_WAIT, priority=29, explains=True,
    sources=(("torch 2.6.0", "torch/csrc/distributed/c10d/socket.cpp:490 (SocketImpl::waitForInput: "
                             "waitForInput: socket {} timed out after {}ms)"),
             ("torch 2.6.0", "torch/csrc/distributed/c10d/TCPStore.cpp:575 (TCPStore::doWait: wait "
                             "timeout after {}ms, keys: {})")))

# (round 81) torch's collective fingerprint check (TORCH_DISTRIBUTED_DEBUG=DETAIL wraps each group in a
# ProcessGroupWrapper that allgathers every collective's op and sequence number first) failing under the wrapper,
# "Detected mismatch between collectives on ranks. Rank 13 is running collective: ...": the ranks are out of step
PEER_LOST = Signature(
    "capture_peer_lost", "nccl", "a distributed peer was lost (seen during graph capture)",
    ("Another rank died or hung while this one captured CUDA graphs (a gloo / NCCL connection "
     "closed): find the first rank that failed; no graph setting fixes this.", _NCCL_ADVICE),
    patterns=(r"Capture\b[\w\s-]{0,40}?\bcuda ?graph failed: .{0,200}?(?:gloo|Connection closed by peer"
              r"|NCCL error|Connection reset by peer|Detected mismatch between collectives on ranks)",),
    priority=82, phase="graph_capture",
    sources=(("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:390"),
             ("sglang 0.5.6.post2", "sglang/srt/model_executor/cuda_graph_runner.py:354-356"),
             ("gloo (pytorch/gloo 70dc360)", "gloo/transport/tcp/pair.cc:554 (Connection closed by peer)"),
             ("torch (pytorch/pytorch 017943b)", "torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp:170 "
                                                 "(CollectiveFingerPrint::verify_tensors: Detected mismatch "
                                                 "between collectives on ranks)")))

def _failed_rank(found: Found) -> str | None:
    if match := regex(r"from rank (\d+)").search(found.text):
        return (f"Rank {match[1]} is the one that failed: its own log (on its node) holds the first "
                "error.")
    return None


# consequences of another rank's failure: they rank just above NCCL's own errors (30), so the
# failing rank's error wins when the log has it, and they win over a cut or unknown traceback
PEER_FAILED_LOADING = Signature(
    "peer_failed_loading", "nccl", "another rank did not finish loading the model",
    ("This rank loaded its weights but another rank did not (SGLang's barrier after loading): "
     "the other rank's own log holds the cause (often an out-of-memory kill or a slow node); "
     "no setting of this rank fixes it.", _NCCL_ADVICE),
    patterns=(r"could finish the model loading, but there are other ranks",),
    lines=(r"could finish the model loading, but there are other ranks",),
    priority=31, phase="load_weights",
    sources=(("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:705"),
             ("0.5.23", "sglang/srt/model_executor/model_runner_components/load_model_utils.py:394")))

PEER_BARRIER = Signature(
    "peer_barrier_failed", "nccl", "a rank waited at a barrier for a rank that failed",
    ("This rank reached torch's monitored barrier and another rank reported an error or never "
     "came: that rank failed first.", _NCCL_ADVICE),
    patterns=(r"reached monitoredBarrier, but received errors while waiting for send/recv from rank \d+",),
    lines=(r"reached monitoredBarrier, but received errors while waiting for send/recv from rank \d+",),
    priority=31, detail=_failed_rank,
    sources=(("torch 2.6.0", "torch/csrc/distributed/c10d/ProcessGroupGloo.cpp:2981 (monitoredBarrier: "
                             "Rank N successfully reached monitoredBarrier, but received errors while "
                             "waiting for send/recv from rank M)"),
             ("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:698")))

# torch's Gloo process group could not connect its full mesh of ranks (torch/csrc/distributed/c10d/
# ProcessGroupGloo.cpp, the ProcessGroupGloo constructor: connectFullMesh's std::runtime_error caught
# and logged, then raised, as "Gloo connectFullMesh failed with " + what; gloo's TCP pair gives the
# socket error, "[.../gloo/transport/tcp/pair.cc:N] no error" when the connect itself timed out).
# SGLang builds a gloo group beside each NCCL group (its CPU group, 0.4.10.post2
# distributed/parallel_state.py:240, 0.5.23 :404), so the ranks never met over that interface: often
# the interface Gloo bound to (where the host name does not resolve to a local address torch falls
# back to loopback: ProcessGroupGloo.cpp createDefaultDevice, its warning names GLOO_SOCKET_IFNAME).
# Not ``running``: a group is made at startup, the phase is what the log shows.
_GLOO_MESH = r"\bGloo connectFullMesh failed with\b"
GLOO_MESH = Signature(
    "gloo_mesh_failed", "nccl", "torch's Gloo process group could not connect the ranks",
    ("The ranks could not connect their Gloo (CPU) process group, which SGLang creates next to each "
     "NCCL group: check that every node reaches the others on the interface torch picked (set "
     "GLOO_SOCKET_IFNAME, and NCCL_SOCKET_IFNAME, to the interface that carries `--dist-init-addr`: "
     "where the host name does not resolve to a local address torch binds Gloo to loopback), that no "
     "firewall blocks the ports between the nodes, and that every rank started; with "
     "\"Connection reset / closed by peer\" another rank died first and its log holds the cause.",
     _NCCL_ADVICE),
    patterns=(_GLOO_MESH,), lines=(_GLOO_MESH,), priority=32,
    sources=(("torch 2.6.0", "torch/csrc/distributed/c10d/ProcessGroupGloo.cpp:799 (ProcessGroupGloo::"
                             "ProcessGroupGloo: context->connectFullMesh :795, on std::runtime_error "
                             "logAndThrow(\"Gloo connectFullMesh failed with \" + what))"),
             ("gloo (pytorch/gloo 70dc360)", "gloo/transport/tcp/pair.cc:152 (Pair::connectCallback: "
                                             "signalException(GLOO_ERROR_MSG(error.what())))"),
             ("0.4.10.post2", "sglang/srt/distributed/parallel_state.py:240"),
             ("0.5.23", "sglang/srt/distributed/parallel_state.py:404")))

# gloo's TCP transport losing its peer in the middle of a collective (gloo/transport/tcp/pair.cc,
# Pair::read: "Read error " + peer + ": " + strerror(errno) :538, "Read timeout " + peer :523,
# "Connection closed by peer " + peer :554; Pair::write: "Write timeout " + peer :314;
# unbound_buffer.cc: "Timed out waiting Nms for recv/send operation" :79, :130), each prefixed with
# GLOO_ERROR_MSG's "[file:line] ". SGLang's CPU group is gloo: broadcast_pyobj, which shares each
# loop's requests among the ranks (0.4.10.post2 utils.py:1063, 0.5.23 utils/common.py:2715, over the
# gloo group made at 0.5.23 distributed/parallel_state.py:404), and its barriers run over it, so
# every rank still alive raises the same error once a peer died or hung. Another rank's own error
# explains it (it ranks just above NCCL's echo; PEER_LOST's reading, outside capture); ``running``:
# a collective between the ranks, no startup step.
_GLOO_PEER = (r"gloo[/\\]transport[/\\]tcp[/\\]\w+\.cc:\d+\] (?:Read error|Read timeout|Write timeout"
              r"|Connection closed by peer|Timed out waiting \d+\s*ms for (?:recv|send) operation)")
GLOO_PEER_LOST = Signature(
    "gloo_peer_lost", "nccl", "a peer rank was lost in a gloo collective (SGLang's CPU group)",
    ("gloo's TCP transport lost the connection to another rank in the middle of a collective "
     "(SGLang shares each step's requests among the ranks over its gloo CPU group): that rank "
     "died, hung or its node became unreachable. Its own log (on its node) holds the first "
     "error; a timeout with no error anywhere is the network between the nodes (GLOO_SOCKET_IFNAME "
     "picks the interface).", _NCCL_ADVICE),
    patterns=(_GLOO_PEER,), lines=(_GLOO_PEER,), priority=31, running=True,
    sources=(("gloo (pytorch/gloo 70dc360)", "gloo/transport/tcp/pair.cc:538 (Read error)"),
             ("gloo (pytorch/gloo 70dc360)", "gloo/transport/tcp/pair.cc:554 (Connection closed by peer)"),
             ("gloo (pytorch/gloo 70dc360)", "gloo/transport/tcp/pair.cc:523 (Read timeout), :314 "
                                             "(Write timeout)"),
             ("gloo (pytorch/gloo 70dc360)", "gloo/transport/tcp/unbound_buffer.cc:79, :130 "
                                             "(Timed out waiting)"),
             ("0.4.10.post2", "sglang/srt/utils.py:1063"),
             ("0.5.23", "sglang/srt/utils/common.py:2715"),
             ("0.5.23", "sglang/srt/distributed/parallel_state.py:404")))


_TP_RANK_LINE = r"^\[[^\]]*\bTP\d+\b[^\]]*\] "  # a line a scheduler rank stamped
# SGLang's HTTP server's own sentence, capitalised ("Health check failed. Server couldn't get a response from
# detokenizer ...", the sources below); (round 76) not sgl-router's per-worker probe "Worker URL health check
# failed: ...", a DEBUG line its wait_for_healthy_workers loop logs and retries while workers start, failing only
# at its timeout ("Workers failed to become healthy after Ns": sgl-router src/core/worker_manager.rs:1031 in
# the log's own location, Oct 2025; pyxyzc/sglang d23f5b5 sgl-router/src/core/worker_manager.rs)
_HEALTH_FAILED = r"(?-i:Health check failed)"

HEALTH_CHECK = Signature(
    "health_check", "health_check", "the server's health check got no answer",
    ("The HTTP server's health check got no answer from the scheduler / detokenizer in time: "
     "dump the scheduler's stack (`py-spy dump --pid PID`) to see where it waits, retry with "
     "{graphs_off} to rule out a graph hang.",),
    patterns=(_HEALTH_FAILED,), lines=(_HEALTH_FAILED,),
    priority=20, phase="serving", cleared_by=(_TP_RANK_LINE,),
    sources=(("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:296"),
             ("0.5.10", "sglang/srt/entrypoints/http_server.py:542"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:793")))

HEALTH_UNAVAILABLE = Signature(
    "health_unavailable", "health_check", "/health answers 503: the server never became healthy",
    ("`/health` answers 503 while the server is starting (its warmup has not finished) or after "
     "a failed health check: read the log above the first 503 for the warmup request (the "
     "launcher's `_wait_and_warmup`) and for errors of the scheduler ranks; `curl "
     "http://HOST:PORT/get_server_info` shows what it waits for.",),
    lines=(r'"GET /health(?:_generate)? HTTP/[\d.]+" 503\b',),
    priority=18, phase="ready",
    cleared_by=(r'"GET /health(?:_generate)? HTTP/[\d.]+" 200\b', r"The server is fired up and ready to roll"),
    sources=(("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:248"),
             ("0.5.10", "sglang/srt/entrypoints/http_server.py:491"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:736")))


_PYSPY_LOOP = rf"^\s*event_loop_\w+ \((?:\S*/)?{LOOP_FILE}:\d+\)\s*$"  # py-spy: func (file:line)
_FAULTHANDLER_LOOP = rf'^\s*File "[^"]*{LOOP_FILE}", line \d+ in event_loop_\w+\s*$'
_WHERE = (r"^\s*(?P<func>[A-Za-z_]\w*) \((?P<file>[\w./-]+\.py):(?P<line>\d+)\)\s*$",
          r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<func>\S+)')


def _stuck_at(found: Found) -> str | None:
    """The innermost frame of the first dumped main thread (py-spy or faulthandler)."""
    for pattern in _WHERE:
        for match in regex(pattern, re.M).finditer(found.frames):
            if not regex(r"(?:threading|_monitor|selectors|subprocess|queue|_contextlib|connection|popen_\w+"
                         r"|process|spawn)\.py$").search(match["file"]):
                return f"{match['func']} ({match['file']}:{match['line']})"
    return None


def _hang_detail(found: Found) -> str | None:
    parts = []
    if where := _stuck_at(found):
        parts.append(f"The dumped stack waits in {where}.")
        if regex(r"recv|\bsend\b|send_|all_reduce|all_gather|broadcast|barrier|wait|resolve_batch_result"
                 r"|_pp_recv").search(where):
            parts.append("A wait on another rank or thread: find the rank that stopped first "
                         "(its own log), it holds the others.")
    if timeout := found.facts.get("watchdog_timeout"):
        parts.append(f"The server args say watchdog_timeout={timeout}.")
    return " ".join(parts) or None


HANG = Signature(
    "hang", "hang", "the scheduler stopped making progress (no error)",
    ("The scheduler stopped making progress without raising: read where its main thread waits "
     "(the dump below the watchdog line; `py-spy dump --pid PID` on a live server), retry with "
     "{graphs_off} to rule out a CUDA graph hang, and raise `--watchdog-timeout` only if a "
     "step is legitimately that slow.",),
    patterns=(r"[Ww]atchdog timeout \((?![^)]*soft=True)",),
    lines=(r"[Ww]atchdog timeout \((?![^)]*soft=True)", r"^\w+ debug info:$",
           r"^self\.cur_batch\.batch_size\(\)=\d+", _PYSPY_LOOP),
    priority=22, phase="serving", running=True, detail=_hang_detail,
    sources=(("0.4.10.post2", "sglang/srt/managers/scheduler.py:2134"),
             ("0.4.10.post2", "sglang/srt/managers/scheduler.py:2128"),
             ("0.4.10.post2", "sglang/srt/utils.py:1911"),
             ("0.5.10", "sglang/srt/utils/watchdog.py:154"),
             ("0.5.10", "sglang/srt/utils/watchdog.py:150"),
             ("0.5.10", "sglang/srt/utils/common.py:2276"),
             ("0.5.23", "sglang/srt/utils/watchdog.py:154"),
             ("py-spy 0.4.2 (v0.4.2)", "src/dump.rs:112 (write_trace: 'Thread N (idle): \"MainThread\"'), "
                                       ":131 ('func (file.py:line)')"),
             ("CPython 3.12.3", "Modules/faulthandler.c:579 (faulthandler_thread: dump_traceback_later's "
                                "watchdog dumps each thread)"),
             ("CPython 3.12.3", "Python/traceback.c:1363 (write_thread_id: Thread 0x... "
                                "(most recent call first))")),
    cleared_by=(r"[Ww]atchdog timeout \([^)]*soft=True",))

# faulthandler prints the same frames for a fatal signal as for a dump on request: a
# scheduler in its event loop is a hang only when no fatal signal is there (native_crash
# ranks above this one) and its thread was waiting; SGLang's faulthandler dumps only on a fatal
# signal, so a dump of a scheduler running a step is native.FATAL_SIGNAL_DUMP (dump_reading)
HANG_DUMP = Signature(
    "hang_thread_dump", "hang", "a thread dump shows the scheduler waiting in its event loop",
    HANG.advice, lines=(_FAULTHANDLER_LOOP,), priority=11, phase="serving", running=True,
    detail=_hang_detail,
    sources=(("CPython 3.12.3", "Modules/faulthandler.c:579 (faulthandler_thread, for "
                                "dump_traceback_later), :805 (faulthandler_user, for register)"),
             ("CPython 3.12.3", "Python/traceback.c:1363 (write_thread_id: Thread 0x... "
                                "(most recent call first))"),
             ("0.4.10.post2", "sglang/srt/managers/scheduler.py:772")))

SIGNATURES = [NCCL, NCCL_INIT, NCCL_NET, STORE_WAIT_TIMEOUT, UNIQUE_ID_WAIT, GLOO_MESH, GLOO_PEER_LOST, PEER_LOST,
              PEER_FAILED_LOADING, PEER_BARRIER, DIST_INIT_TIMEOUT, HANG, HANG_DUMP, HEALTH_CHECK,
              HEALTH_UNAVAILABLE, WARMUP_FAILED,
              WARMUP_STATUS_CUT, WARMUP_READ_TIMEOUT,
              WARMUP_ERROR_BODY, HARNESS_START_TIMEOUT,  # (rounds 59, 94)
              NVSHMEM_INIT,  # (round 29)
              STORE_PING_NONCE,  # (round 33)
              CUSTOM_ALL_REDUCE]  # (round 78)
