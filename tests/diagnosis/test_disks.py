"""A full disk or a spent quota is ``disk_full`` (ddlab/crashes/kinds/disks.py), for both servers; the same errno on
/dev/shm, in a warning, or SGLang's KV slots' "No space left for only one request" is not.

The real log is vLLM round 119's w11903 (hf_xet's "Disk quota exceeded (os error 122)" in a model download, read
``unknown`` before the kind came); the paste fixture tests/fixtures/logs/pastes/tail-only__hub-download-enospc.log
is CPython's ENOSPC in the hub's download under SGLang. The near misses below keep their kinds.
"""

from __future__ import annotations

import errno
import os

import pytest

from fieldkit import LOGS, assert_at_line, read_log, real, said, vllm_traceback

_STAMP = "[2026-12-08 01:02:03 TP0] "


def _sglang_scheduler_traceback(*frames: tuple[str, int, str, str], exc: str) -> str:
    out = [_STAMP + "Load weight begin. avail mem=78.52 GB", _STAMP + "Scheduler hit an exception: Traceback (most "
           "recent call last):"]
    for path, line, func, code in frames:
        out += [f'  File "/usr/local/lib/python3.12/dist-packages/{path}", line {line}, in {func}', f"    {code}"]
    return "\n".join([*out, exc, "", "[2026-12-08 01:02:04] Received sigquit from a child process. It usually "
                      "means the child failed.", ""])


def test_the_errno_strings_are_the_kernels_as_python_prints_them():
    assert (errno.ENOSPC, os.strerror(errno.ENOSPC)) == (28, "No space left on device")
    assert (errno.EDQUOT, os.strerror(errno.EDQUOT)) == (122, "Disk quota exceeded")
    assert str(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x")) == "[Errno 28] No space left on device: '/x'"


def test_a_write_to_a_full_device_raises_the_text_the_signature_reads(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this host (Linux's always-full device)")
    with pytest.raises(OSError) as raised, open("/dev/full", "wb", buffering=0) as full:
        full.write(b"x")
    text = _sglang_scheduler_traceback(("triton/runtime/cache.py", 125, "put", "f.write(data)"),
                                       exc=f"OSError: {raised.value}")
    assert said(text) == (True, "disk_full", "disk_full")


def test_the_quota_in_a_vllm_download_is_a_full_disk_and_the_advice_names_the_quota_and_the_cache():
    from ddlab.diagnosis.diagnosis import diagnose
    found = diagnose(read_log("w11903.log"))
    assert (found.crashed, found.kind, found.signature, found.phase) == (True, "disk_full", "vllm_disk_full",
                                                                          "load_weights")
    assert "`quota -s`" in found.suggestion and "`df -h`" not in found.suggestion
    assert "HF_HOME" in found.suggestion and "the model's download" in found.suggestion


def test_a_kernel_cache_write_names_the_path_and_says_no_download():
    from ddlab.diagnosis.diagnosis import diagnose
    text = _sglang_scheduler_traceback(
        ("triton/runtime/cache.py", 125, "put", "f.write(data)"),
        exc="OSError: [Errno 28] No space left on device: '/root/.triton/cache/tmp.pid_7_12/_fwd_kernel.cubin'")
    found = diagnose(text)
    assert (found.crashed, found.kind) == (True, "disk_full")
    assert "/root/.triton/cache/tmp.pid_7_12/_fwd_kernel.cubin" in found.suggestion
    assert "`df -h`" in found.suggestion and "the model's download" not in found.suggestion


def test_a_vllm_engine_line_with_rusts_words_decides_alone():
    line = ("(EngineCore pid=3559) ERROR 12-08 01:02:03 [core.py:1269] RuntimeError: Task error: File reconstruction "
            "error: IO Error: No space left on device (os error 28)\n")
    assert said(line, "vllm") == (True, "disk_full", "vllm_disk_full")


def test_a_vllm_traceback_through_the_hub_is_a_full_disk():
    text = vllm_traceback(("huggingface_hub/file_download.py", 563, "xet_get", "with session.new_file_download_group("),
                          exc="RuntimeError: Task error: File reconstruction error: IO Error: No space left on device "
                              "(os error 28)")
    assert said(text, "vllm")[:2] == (True, "disk_full")


@pytest.mark.parametrize("text", [
    # the same errno on /dev/shm is memory (tmpfs): host_oom
    _sglang_scheduler_traceback(("torch/multiprocessing/reductions.py", 560, "reduce_storage", "fd, size = s._share_"
                                 "fd_cpu_()"), exc="OSError: [Errno 28] No space left on device: '/dev/shm/torch_9_1'"),
], ids=["dev-shm"])
def test_the_errno_on_dev_shm_stays_host_memory(text):
    assert said(text)[:2] == (True, "host_oom")


def test_a_warning_with_the_errno_decides_nothing():
    warned = ("/usr/lib/python3/dist-packages/joblib/_multiprocessing_helpers.py:44: UserWarning: [Errno 28] No "
              "space left on device.  joblib will operate in serial mode\n"
              "[2026-12-08 01:02:03] The server is fired up and ready to roll!\n")
    assert said(warned)[:2] == (False, None)


def test_the_hubs_free_space_check_before_a_download_is_no_crash():
    warned = ("/usr/lib/python3/dist-packages/huggingface_hub/file_download.py:653: UserWarning: Not enough free disk "
              "space to download the file. The expected file size is: 3963.59 MB. The target location "
              "/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/blobs only has 2100.12 MB free disk space.\n"
              "  warnings.warn(\n"
              "[2026-12-08 01:02:03] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=60.1 GB\n"
              "[2026-12-08 01:02:09] The server is fired up and ready to roll!\n")
    assert said(warned)[:2] == (False, None)


@pytest.mark.parametrize(("log_id", "kind"), [
    ("h10032", "host_oom"),  # a SIGBUS beside joblib's ENOSPC warning: /dev/shm full (shm_full)
    ("a034", "slots_exhausted"),  # "No space left for only one request": the KV token slots
])
def test_the_real_near_misses_keep_their_kinds(log_id, kind):
    assert real(log_id).kind == kind


def test_nccls_shm_segment_on_a_full_dev_shm_stays_host_memory():
    text = (LOGS / "independent" / "nccl__shm-unhandled-system-error-tp2-journal-short.log").read_text()
    assert said(text)[1] == "host_oom"


def test_the_paste_fixtures_frames_are_the_hubs():
    assert_at_line("huggingface_hub", "0.26.2", "huggingface_hub/file_download.py", 457, "temp_file.write(chunk)")
    assert_at_line("huggingface_hub", "0.26.2", "huggingface_hub/file_download.py", 1545, "http_get(")
    assert_at_line("sglang", "0.5.23", "sglang/srt/model_loader/weight_utils.py", 692, "Using model weights format")
