"""What held-out round 45 of the vLLM corpus (w4501-w4505, measured once at a22b0f1 with its logs 47ae574)
showed: crashed 4/5, kind 4/5, phase 0/0. Its one miss was read from the source (docs/diagnosis.md,
"Held-out round 45"):

- w4505: a vLLM 0.10.2 CPU start whose log ends in torch's store client warning "TCP client failed to
  connect/validate to host {}:{} - retrying (try=0, timeout=1800000ms, ...)". The warning is a C10D_WARNING
  inside TCPStore::TCPStore's connect loop (pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp, the
  log's own line TCPStore.cpp:347 of torch 2.8.0, which vLLM 0.10.2 pins): the client sleeps and tries again,
  and only past its deadline logs "... - timed out (try={}, timeout={}ms)" and rethrows (what
  ``dist_init_timeout`` reads as nccl). The store is the one vLLM's CPU worker makes for its distributed
  environment (vllm 0.10.2 v1/worker/cpu_worker.py:76-79, distributed/parallel_state.py:1019-1024). The log
  shows one retry and nothing after it, so no end of the start: no rule added, the label nccl disputed
  (``kind_disputed`` [nccl, None]); crashed stays as labelled, a miss.

The four healthy logs (w4501-w4504) read as not crashed, as labelled.
"""

from __future__ import annotations

from fieldkit import VLLM_MANIFEST, read_log, reads, vllm_signature, wheel_text_test

_MANIFEST = VLLM_MANIFEST
_ROUND = [f"w45{n:02d}" for n in range(1, 6)]


def test_the_round_is_folded_with_its_five_logs():
    round45 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 45)
    assert round45 == _ROUND
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round45)


def test_each_log_reads_as_labelled_but_the_disputed_one():
    """The four healthy logs read as not crashed; w4505's kind is ddlab's (None: not crashed), its crashed
    the round's one miss (the corpus has no crashed dispute)."""
    for log_id in _ROUND:
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        kind = got[1] if got[0] or got[1] == "request_error" else None
        assert kind == (log["kind_disputed"][1] if "kind_disputed" in log else log["kind"]), log_id
        assert got[0] == (log["crashed"] if log_id != "w4505" else False), log_id
        assert not log["phase_in_log"], log_id


# --- w4505: torch's store client still retrying is not a failed start -------------------------------------

_STACK = ("Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:686 (most recent "
          "call first):\n"
          "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f8d319785e8 in libc10.so)\n"
          "frame #3: c10d::TCPStore::ping() + 0x1b0 (0x7f8d1b0d2c40 in libtorch_cpu.so)\n\n")


def test_a_store_client_still_retrying_is_not_a_crash():
    """w4505, and a Linux worker's log ending the same way at a later try: torch retries past the warning
    (TCPStore.cpp's connect loop), so neither log shows the start ending."""
    assert reads(read_log("w4505.log")) == (False, None, "launch")
    assert _MANIFEST["w4505"]["kind_disputed"] == ["nccl", None]
    assert "TCPStore.cpp:347" in _MANIFEST["w4505"]["second_look"]
    linux = ("INFO 03-02 10:00:00 [cpu_worker.py:70] Warning: NUMA is not enabled in this build.\n"
             "[W302 10:00:05.222395820 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate to host "
             "10.0.0.7:29500 - retrying (try=3, timeout=1800000ms, delay=2210ms): Failed to recv, got 0 bytes. "
             "Connection was likely closed. Did the remote server shutdown or crash?\n" + _STACK)
    assert reads(linux)[:2] == (False, None)


def test_the_same_loop_timing_out_is_the_start_failing():
    """The near miss: past its deadline the loop logs "- timed out" and rethrows (C10D_ERROR, then throw), and
    the DistNetworkError ends the process: a crash, nccl in both registries (SGLang's ``dist_init_timeout``,
    and since the session after round 45 vLLM's voice of it, ``vllm_dist_init_timeout``: before it a vLLM log
    read unknown), never the retry's reading."""
    timed_out = ("INFO 03-02 10:00:00 [cpu_worker.py:70] Warning: NUMA is not enabled in this build.\n"
                 "[E302 10:30:05.222395820 TCPStore.cpp:335] [c10d] TCP client failed to connect/validate to "
                 "host 10.0.0.7:29500 - timed out (try=11, timeout=1800000ms): Failed to recv, got 0 bytes. "
                 "Connection was likely closed. Did the remote server shutdown or crash?\n"
                 "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely "
                 "closed. Did the remote server shutdown or crash?\n")
    assert reads(timed_out)[:2] == (True, "nccl")
    assert vllm_signature(timed_out) == "vllm_dist_init_timeout"
    assert reads(timed_out, family="sglang")[:2] == (True, "nccl")
    assert vllm_signature(timed_out, family="sglang") == "dist_init_timeout"


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.10.2", "vllm/v1/worker/cpu_worker.py", "init_worker_distributed_environment(self.vllm_config, self.rank,"),
    ("0.10.2", "vllm/distributed/parallel_state.py", "torch.distributed.init_process_group("),
])
