"""Rendezvous: ranks that never met through torch.distributed's store (TCPStore).

Before any NCCL communicator exists the ranks meet through the store on the first node (SGLang's
``--dist-init-addr``), and each communicator's ID goes from rank 0 to the others through it: a node
that cannot reach the store (``dist_init_timeout``) and a rank that waited there for rank 0's ID
(``nccl_unique_id_wait``) are both ``nccl``, and both say where to look (the address, rank 0's own
log). :mod:`.runtime` splices these into its own list where they stood, so the registry's order is
unchanged but for the one added after the store's wait timeout. (round 29) NVSHMEM, DeepEP's transport,
meets its peers through a bootstrap of its own: its failing to connect them is ``nccl`` too. (round 33)
A store client whose ping the port answers with something else than the store's echo is ``nccl`` too.
(vLLM round 73) The store's server failing to listen on its port is the port taken: :mod:`.launch`'s
``port_in_use`` reads it with :data:`PORT_TAKEN`.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["DIST_INIT_TIMEOUT", "UNIQUE_ID_WAIT", "NVSHMEM_INIT", "STORE_PING_NONCE", "PORT_TAKEN",
           "PORT_TAKEN_SOURCES"]


def _rendezvous(found: Found) -> str | None:
    if match := regex(r"connect to \(([\w.:-]+), (\d+)\)|connect/validate to host ([\w.:-]+):(\d+)"
                      r"|failed to connect to \[?([\w.:-]+?)\]?:(\d+)").search(found.text):
        host, port = next((match[i], match[i + 1]) for i in (1, 3, 5) if match[i])
        return (f"This node waited for {host}:{port}: `nc -zv {host} {port}` from here tells whether it is "
                "reachable.")
    return None


# torch's TCPStore client (torch.distributed's rendezvous: SGLang's --dist-init-addr) gave up
# reaching the store on the first node; no NCCL communicator exists yet
DIST_INIT_TIMEOUT = Signature(
    "dist_init_timeout", "nccl", "torch distributed could not reach the rendezvous of the nodes",
    ("torch.distributed could not reach the rendezvous store (node 0's `--dist-init-addr`) before "
     "its timeout: the nodes never met. Start node 0 first and check that every node passes the "
     "same `--dist-init-addr` and `--nnodes` and its own `--node-rank`, that node 0's address is the "
     "one other nodes can reach, and that no firewall blocks the port; GLOO_SOCKET_IFNAME / "
     "NCCL_SOCKET_IFNAME pick the interface.",),
    patterns=(r"The client socket has timed out after \d+\s*m?s while trying to connect to",
              r"The client socket has failed to connect to",
              r"TCP client failed to connect/validate to host \S+ - timed out",
              r"Timed out after \d+ seconds waiting for clients\. \d+/\d+ clients joined"),
    lines=(r"The client socket has timed out after \d+\s*m?s while trying to connect to",
           r"The client socket has failed to connect to",
           r"TCP client failed to connect/validate to host \S+ - timed out",
           r"Timed out after \d+ seconds waiting for clients\. \d+/\d+ clients joined"),
    priority=32, phase="launch", detail=_rendezvous,
    sources=(("torch 2.6.0", "torch/csrc/distributed/c10d/socket.cpp:1018 (SocketConnectOp::"
                             "throwTimeoutError: The client socket has timed out after {} while trying to "
                             "connect to ({}, {})), :809, :939 (has failed to connect to ...)"),
             ("torch 2.6.0", "torch/csrc/distributed/c10d/TCPStore.cpp:319 (TCPStore::TCPStore: TCP client "
                             "failed to connect/validate to host {}:{} - timed out), :378 (TCPStore::"
                             "waitForWorkers: Timed out after {} seconds waiting for clients. {}/{} clients "
                             "joined.)"),
             ("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:551"),
             ("0.5.23", "sglang/srt/distributed/bootstrap.py:322")))


# (round 24) a rank that creates an NCCL communicator gets its ID from rank 0 through the store: rank 0
# sets the key, every other rank blocks in store->get until the store's timeout; on an error torch
# raises DistBackendError "[R] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via
# c10d key-value store by key 'K', but store->get('K') got error: <the store's error>. This may
# indicate a possible application crash on rank 0 or a network set up issue." (pytorch/pytorch
# torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, ProcessGroupNCCL::broadcastUniqueNCCLID; older
# torch spelled it "retreiving" and had no last sentence; the XCCL and MCCL process groups copy the text
# with their own names). The store's error is often several lines (its C++ frames), so a paste may
# keep only the last sentence. Ranks just above NCCL's own errors (30), as another rank's failure does;
# not ``running``: communicators are made at startup and by a group's first collective
_UNIQUE_ID = (r"is setting up \w*CCL communicator and retr(?:ie|ei)ving \w*UniqueId from \[0\] via c10d "
              r"key-value store",
              r"This may indicate a possible application crash on rank 0 or a network set up issue")
UNIQUE_ID_WAIT = Signature(
    "nccl_unique_id_wait", "nccl", "a rank waited on torch's store for rank 0's NCCL ID and gave up",
    ("This rank was creating an NCCL communicator and waited on torch.distributed's store for the ID "
     "rank 0 writes there, until the store gave up: rank 0 (of that group) crashed, hung or is still "
     "busy before it (a long load or warmup), or this node cannot reach the store. Rank 0's own log "
     "holds the first error; a rank 0 that is only slow needs a longer timeout (SGLang's "
     "`--dist-timeout`), and a node that cannot reach node 0 needs the network checked "
     "(`--dist-init-addr`, GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME).",),
    patterns=_UNIQUE_ID, lines=_UNIQUE_ID, priority=31,
    sources=(("torch 2.6.0", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2414 (ProcessGroupNCCL::"
                             "broadcastUniqueNCCLID: [R] is setting up NCCL communicator and retrieving "
                             "ncclUniqueId from [0] via c10d key-value store by key ..., but "
                             "store->get(...) got error: ... This may indicate a possible application crash "
                             "on rank 0 or a network set up issue. :2423)"),))

# (round 29) NVSHMEM (DeepEP's transport) sets up its connections to every PE at init: a failure there
# ("nvshmem setup connections failed", NVIDIA/nvshmem v3.4.5-0 src/host/init/init.cu:1046-1047; its
# bootstrap losing a peer, "allgather of gpu_info failed", src/host/topo/topo.cpp:223) is only logged
# ("nvshmemi_common_init failed, continuing", init.cu:1107), and the next NVSHMEM call exits the process
# (NVSHMEMI_CHECK_INIT_STATUS, src/include/internal/host/nvshmem_internal.h:49, exit(-1) in
# NVSHMEMI_ERROR_EXIT, src/include/non_abi/nvshmemx_error.h:49-55: status 255), or init exits itself
# ("nvshmem initialization failed, exiting", init.cu:1119)
_NVSHMEM = (r"\bNVSHMEM API called before NVSHMEM initialization has completed",
            r"\bnvshmem initialization failed, exiting", r"\bnvshmem setup connections failed\b",
            r"\ballgather of gpu_info failed\b")
NVSHMEM_INIT = Signature(
    "nvshmem_init_failed", "nccl", "NVSHMEM (DeepEP's transport) could not connect the ranks at startup",
    ("NVSHMEM, the transport DeepEP's all-to-all runs on, could not connect every rank's GPU at startup "
     "(its bootstrap lost a peer, or no transport device reached the remote ranks), and the first "
     "NVSHMEM call after it ended the process. A peer that closed the bootstrap socket died first: read "
     "the other node's log too. Check that every node runs the same DeepEP and NVSHMEM build, that the "
     "RDMA NICs are visible in the container (`ibv_devices`) with GPUDirect RDMA loaded (`lsmod | grep "
     "peermem`), and pick the interface and NICs with NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME and "
     "NVSHMEM_HCA_LIST; NVSHMEM_DEBUG=INFO says why. Without DeepEP (`--moe-a2a-backend none`) the "
     "server does not use NVSHMEM.",),
    patterns=_NVSHMEM, lines=_NVSHMEM, priority=33, phase="launch", fatal=True,
    sources=(("NVSHMEM 3.4.5 (NVIDIA/nvshmem v3.4.5-0)", "src/include/internal/host/nvshmem_internal.h:49 "
                                                         "(NVSHMEM API called before NVSHMEM initialization "
                                                         "has completed), src/host/init/init.cu:1119"),
             ("NVSHMEM 3.4.5 (NVIDIA/nvshmem v3.4.5-0)", "src/host/init/init.cu:1046-1047 (nvshmem setup "
                                                         "connections failed), :1107 (continuing)"),
             ("NVSHMEM 3.4.5 (NVIDIA/nvshmem v3.4.5-0)", "src/host/topo/topo.cpp:223 (allgather of gpu_info "
                                                         "failed)")))

# (round 33) torch's TCPStore client pings the store after connecting: it sends its pid as a nonce and
# asserts that the server echoes it back (TCPStore::ping: TORCH_INTERNAL_ASSERT(nonce == returnedNonce,
# "Ping failed, invalid nonce returned"), torch/csrc/distributed/c10d/TCPStore.cpp:418 as the assert
# names it); another answer means what listens on the store's port is not this job's TCPStore server
_PING = (r"Ping failed, invalid nonce returned",)
STORE_PING_NONCE = Signature(
    "store_ping_nonce", "nccl", "the rendezvous store's port answered with something else than the store",
    ("torch.distributed's store client reached the rendezvous port but the answer was not the store's "
     "echo of its ping: what listens there is not this job's TCPStore server (another process or an "
     "earlier run still holding the port, or two jobs given the same port). Pick a free port for the "
     "rendezvous (SGLang's `--dist-init-addr` / `--port`, MASTER_PORT for torchrun and ray launchers), "
     "check with `ss -ltnp | grep PORT` on node 0 who holds it, and make each engine of a colocated "
     "RL job use its own port.",),
    patterns=_PING, lines=_PING, priority=32, phase="launch",
    sources=(("torch (the build's own assert)",
              "torch/csrc/distributed/c10d/TCPStore.cpp:418 (TCPStore::ping: nonce == returnedNonce INTERNAL "
              "ASSERT FAILED ... Ping failed, invalid nonce returned)"),))


# (vLLM round 73) the store's server on libuv (torch's default TCPStore backend since 2.4) binds, then
# listens: "The server socket has failed to listen on any local network address. port: {}, useIpv6: {},
# code: {}, name: {}, message: {}" (pytorch/pytorch 01afc5c
# torch/csrc/distributed/c10d/TCPStoreLibUvBackend.cpp, UvTcpServer::makeWithPort, after uv_tcp_bind's own
# check "has failed to bind"). libuv's bind does not report a port in use: it keeps EADDRINUSE as the
# handle's delayed error and listen returns it (libuv src/unix/tcp.c, uv__tcp_bind: tcp->delayed_error =
# UV__ERR(errno), bind failing with EADDRINUSE only; uv__tcp_listen: return tcp->delayed_error), so this
# listen failure is the port taken (code -98, name EADDRINUSE), unless the line names another error. A paste
# often ends before the name (or the code's last digit): still the port
PORT_TAKEN = (r"The server socket has failed to listen on any local network address\. port: \d+(?!\d)"
              r"(?!, useIpv6: \w+, code: -?\d+, name: (?!EADDRINUSE\b))")
PORT_TAKEN_SOURCES = (("torch (pytorch/pytorch 01afc5c)",
                       "torch/csrc/distributed/c10d/TCPStoreLibUvBackend.cpp (UvTcpServer::makeWithPort: The "
                       "server socket has failed to listen on any local network address. port: {}, useIpv6: "
                       "{}, code: {}, name: {}, message: {})"),
                      ("libuv (libuv/libuv)", "src/unix/tcp.c (uv__tcp_bind: tcp->delayed_error = "
                                              "UV__ERR(errno) on EADDRINUSE; uv__tcp_listen returns "
                                              "it)"))
