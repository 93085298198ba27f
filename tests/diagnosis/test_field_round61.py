"""Held-out round 61 (issue 24): a TCPStore client's warning alone, read as no crash.

Round 61 (h61001-h61009; excerpts of issue threads and pull requests) was measured once on main at 9928463
(with the round's logs, 04a4b7d): crashed 8/9, kind 8/9, phase 4/4. docs/diagnosis.md, "Held-out round 61",
tells the round. Its one miss, h61003 (ddlab said not crashed; labelled crashed, nccl), is a label the second
look disputes, not a rule: the paste is rank 1's "[c10d] recvValue failed on ...: Failed to recv, got 0 bytes.
Connection was likely closed. Did the remote server shutdown or crash?" and its C++ backtrace, the
C10D_WARNING torch's TCPStore client writes before it rethrows a failed read (TCPStore.cpp:125, as the line
names it; the read's error torch 2.8.0 Utils.hpp:682-686), which the NCCL heartbeat monitor's store check
catches and gives up on as a store torn down (ProcessGroupNCCL.hpp:604, :616): written whenever rank 0's
process goes first, an orderly exit as well as a crash. Its kind is disputed (``kind_disputed`` [nccl, null])
and its crashed stays a known miss. No rule was added, so no test here fails on 04a4b7d: this module holds the
fold, each log's reading, the warning in other forms read the same, near misses where a failure follows it,
and the wheels' lines the second look cites.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed,
                      folded_round, reading, reads, real)

_IDS = folded_round(REAL_MANIFEST, 61)


def test_round61_is_folded_into_work_with_h61003s_kind_disputed_and_its_crashed_known():
    assert _IDS == [f"h610{i:02d}" for i in range(1, 10)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h61003"]
    entry = REAL_MANIFEST["h61003"]
    assert entry["kind_disputed"] == ["nccl", None] and (entry["crashed"], entry["kind"]) == (True, "nccl")
    assert all(cite in entry["second_look"]
               for cite in ("TCPStore.cpp:125", "Utils.hpp:682", "HeartbeatMonitor"))
    assert {i: KNOWN_MISSES["real"][i] for i in _IDS if i in KNOWN_MISSES["real"]} == {"h61003": ["crashed"]}


def test_h61008s_markdown_quote_carries_the_corpus_tag():
    # the description's '  > ' quote: the corpus's tag for a markdown quote's marker, no new tag
    assert "blockquote-marker" in REAL_MANIFEST["h61008"]["paste"]
    assert not [i for i, log in REAL_MANIFEST.items() if "md-quote" in log["paste"]]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h61001", None),                    # a 0.1.x router's 'KV cache pool leak detected!' warnings: no crash
    ("h61002", None),                    # an Ascend pp=2 start's scheduler traceback, cut in TpModelWorker
    ("h61004", "capture_failed"),        # HIP's hipErrorCapturedEvent, then the scheduler died during init
    ("h61005", "nccl"),                  # two ranks' NCCL watchdog timeouts of ALLREDUCEs of different sizes
    ("h61006", None),                    # lmms-eval's traceback down to SGLang's Engine, cut
    ("h61007", None),                    # a healthy pool and graph capture at 0.00 GB left
    ("h61008", "kv_weights_fill_gpu"),   # the quoted 'Loaded weights leave no GPU memory for the KV cache'
    ("h61009", "port_in_use"),           # SGLang's metrics port held by another 'sglang' process
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_other_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h61003: the TCPStore client's warning, alone ---------------------------------------------------

def test_h61003_reads_as_no_crash_the_second_looks_reading():
    found = real("h61003")
    assert reading(found) == (False, None, "launch") and found.signature is None


_SITE = "/usr/local/lib/python3.12/dist-packages/torch/lib"
_CLOSED = ("Failed to recv, got 0 bytes. Connection was likely closed. "
           "Did the remote server shutdown or crash?")
_STR = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"


def _warning(rank: str = "[rank1]:", utils_line: int = 682, error: str = _CLOSED,
             monitor: str = "HeartbeatMonitor::runLoop()") -> str:
    """The client's C10D_WARNING and its backtrace (TCPStore.cpp:125), down to the monitor's check."""
    return (f"{rank}[W1119 17:59:26.271588084 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=61, "
            f"addr=[localhost]:33850, remote=[localhost]:30005): {error}\n"
            "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/"
            f"Utils.hpp:{utils_line} (most recent call first):\n"
            f"frame #0: c10::Error::Error(c10::SourceLocation, {_STR}) + 0x80 "
            f"(0x7090b977eeb0 in {_SITE}/libc10.so)\n"
            f"frame #1: <unknown function> + 0x5d694d1 (0x70909d7ef4d1 in {_SITE}/libtorch_cpu.so)\n"
            f"frame #4: c10d::TCPStore::check(std::vector<{_STR}, std::allocator<{_STR} > > const&) + 0x31e "
            f"(0x7fe50b81a1be in {_SITE}/libtorch_cpu.so)\n"
            f"frame #5: c10d::ProcessGroupNCCL::{monitor} + 0x398 "
            f"(0x7fe4cd9340c8 in {_SITE}/libtorch_cuda.so)\n"
            "frame #6: <unknown function> + 0xdc253 "
            "(0x7fe5e2c04253 in /usr/lib/x86_64-linux-gnu/libstdc++.so.6)\n\n")


_GAVE_UP = ("[rank1]:[W1119 17:59:26.271690000 ProcessGroupNCCL.cpp:1826] [PG ID 0 PG GUID 0 Rank 1] "
            'Failed to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down '
            f"too early), with error: {_CLOSED}\n")


# the same source text in other forms: the whole backtrace and the monitor's own warning that it gave up,
# an older torch's heartbeatMonitor() frame and a reset connection (the vLLM corpus's vx10 form), the
# monitor's warning alone, and the warning after SGLang's own last line
@pytest.mark.parametrize("text", [
    _warning() + _GAVE_UP,
    _warning("[rank3]:", 675, "Connection reset by peer", "heartbeatMonitor()"),
    _GAVE_UP,
    "[2025-11-19 17:59:20 TP1] Load weight begin. avail mem=23.20 GB, mem usage=0.00 GB.\n" + _warning(),
], ids=["with-the-monitors-warning", "older-frame-reset", "monitors-warning-alone", "after-sglangs-line"])
def test_the_store_clients_warning_alone_is_no_crash(text):
    assert reads(text)[:2] == (False, None)


# near misses: a failure the log does show after the warning: the launcher's report that a scheduler
# died, the same network error raised into Python uncaught, the NCCL watchdog's timeout
@pytest.mark.parametrize(("text", "kind"), [
    (_warning() + "[2025-11-19 17:59:30] Rank 0 scheduler died during initialization (exit code: -9). "
     "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. "
     "Run `dmesg -T | grep -i oom` to check.\n", "host_oom"),
    ("Traceback (most recent call last):\n"
     '  File "/opt/run.py", line 3, in <module>\n'
     "    dist.barrier()\n"
     f"torch.distributed.DistNetworkError: {_CLOSED}\n", "unknown"),
    (_warning() + "[rank1]:[E1119 18:09:26.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
     "Timeout(ms)=600000) ran for 600005 milliseconds before timing out.\n", "nccl"),
], ids=["a-scheduler-died", "raised-uncaught", "watchdog-timeout"])
def test_a_failure_after_the_warning_is_still_read(text, kind):
    assert reads(text)[:2] == (True, kind)


_C10D = "torch/include/torch/csrc/distributed/c10d"


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("torch", "2.8.0", f"{_C10D}/Utils.hpp", 682, "C10_THROW_ERROR("),
    ("torch", "2.8.0", f"{_C10D}/Utils.hpp", 684, '"Failed to recv, got 0 bytes. "'),
    ("torch", "2.8.0", f"{_C10D}/ProcessGroupNCCL.hpp", 604, "class HeartbeatMonitor {"),
    ("torch", "2.8.0", f"{_C10D}/ProcessGroupNCCL.hpp", 616, "virtual void runLoop();"),
    ("torch", "2.8.0", f"{_C10D}/ProcessGroupNCCL.hpp", 137, 'kStoreDumpKey = "exception_dump";'),
    ("sglang", "0.5.5", "sglang-0.5.5.dist-info/METADATA", 261, "Requires-Dist: torch==2.8.0"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_second_look_cites_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
