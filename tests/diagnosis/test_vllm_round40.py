"""What held-out round 40 of the vLLM corpus (w4001-w4015, measured once at 90f36d0 with its logs 2173dca)
showed: no miss (crashed 15/15, kind 15/15, phase 12/12). Nothing was fixed and no rule was added; the round
was folded into ``work`` and its readings are pinned here, each log with the signature that reads it, so a
later change that reads one of them another way says which.

Nine of the fifteen are vllm-ascend issue threads (Ascend NPUs: the caching allocator's out-of-memory, an AI
core kernel fault, ACL graph capture, a quantization description missing a weight), two are V0's engine
iteration timeout (vLLM's own thread and a TTS project driving AsyncLLMEngine), and four come from three
committed files (w4008 and w4009 are two starts of one file on vllm-metal).
"""

from __future__ import annotations

from fieldkit import VLLM_MANIFEST, read_log, reads, vllm_signature

_MANIFEST = VLLM_MANIFEST

# the signature that reads each crashed log (None: an unknown death with no text of a kind)
_SIGNATURES = {
    "w4001": None,                        # DPEngineCoreProc has no attribute 'dp_rank' in the busy loop
    "w4002": "vllm_cuda_oom",             # torch_npu's caching allocator out of memory, serving
    "w4004": None,                        # the NPU's addmm refusing the vision encoder's shapes, profile run
    "w4005": "vllm_npu_kernel_fault",     # an AI core exception surfacing at the next stream sync
    "w4006": "vllm_iteration_timeout",    # V0's "Engine iteration timed out"
    "w4007": "vllm_iteration_timeout",
    "w4008": "vllm_model_not_found",      # a local path that does not exist, taken for a repo id
    "w4009": "vllm_port_in_use",          # macOS errno 48
    "w4011": None,                        # vllm-ascend's KV cache layer-name assert (gpt-oss)
    "w4012": "vllm_weight_name_unknown",  # the ascend quantization description lacks a weight
    "w4013": "vllm_compiled_op_mismatch",  # torch.ops._C has no weak_ref_tensor while capturing
    "w4014": "vllm_cuda_oom",             # the profile run's vision batch out of device memory
    "w4015": "vllm_capture_cut",          # ACL graph capture out of streams, the traceback cut
}


def test_the_round_is_folded_with_its_fifteen_logs():
    round40 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 40)
    assert round40 == [f"w40{n:02d}" for n in range(1, 16)]
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round40)


def test_each_log_reads_as_labelled():
    """Crashed and kind for all fifteen, the phase where the log shows it (none of the round's is disputed)."""
    for log_id in (f"w40{n:02d}" for n in range(1, 16)):
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        assert got[0] == log["crashed"], log_id
        assert (got[1] if log["crashed"] else None) == log["kind"], log_id
        if log["phase_in_log"]:
            assert got[2] == log["phase"], log_id
        assert "kind_disputed" not in log and "phase_disputed" not in log, log_id


def test_each_crashed_log_is_read_by_its_signature():
    for log_id, signature in _SIGNATURES.items():
        assert vllm_signature(read_log(f"{log_id}.log")) == signature, log_id


def test_the_rounds_healthy_runs_are_no_crash():
    """w4003 and w4010: starts that complete and answer every request 200, the files ending on idle
    throughput lines (w4010's TensorFlow cuFFT/cuDNN/cuBLAS E-lines are another library's noise)."""
    for name in ("w4003.log", "w4010.log"):
        assert reads(read_log(name))[:2] == (False, None), name
