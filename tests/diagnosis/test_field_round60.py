"""Held-out round 60 (issue 24): Docker Desktop's local time before each line of a container's output.

Round 60 (h60001-h60011; excerpts of issue threads and pull requests) was measured once on main at 3e01c63
(with the round's logs, 394fa9f): crashed 11/11, kind 10/11, phase 8/8. docs/diagnosis.md, "Held-out round 60",
tells the round. Its one miss, h60002's kind (ddlab said unknown; labelled dependency_mismatch), is read as
labelled once Docker Desktop's time ("2025-02-06 07:14:10 " before every line) is peeled
(diagnosis/viewer_prefixes.py, peel_desktop_time): the launcher's import chain then ends on "ModuleNotFoundError:
No module named 'uvicorn'" (0.4.2.post2 launch_server.py:6, srt/entrypoints/http_server.py:35), which wins over
the restarted launcher's traceback the paste cuts before its exception line (rootcause.py's rules 3 and 4: that
start runs the same import, and reinstalling transformers brings no uvicorn). This module holds the fold, each
log's reading, the rule in other forms, near misses that must not be peeled, and the wheel's lines it cites.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, folded_round,
                      real, said)

_IDS = folded_round(REAL_MANIFEST, 60)


def test_round60_is_folded_into_work_with_no_label_disputed_and_no_miss_left():
    assert _IDS == [f"h600{i:02d}" for i in range(1, 12)]
    assert not disputed(REAL_MANIFEST, _IDS)
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h60001", "native_crash"),          # Xinference's faulthandler dump of a segmentation fault
    ("h60002", "import_error"),          # Docker Desktop's time on each line; uvicorn missing, a restart cut
    ("h60003", None),                    # a launch output cut at the server_args line: healthy
    ("h60004", None),                    # a single quoted 'Received sigquit from a child process' line
    ("h60005", "kv_tokens_exhausted"),   # sglang-jax's 'Decode out of memory' before its scheduler traceback
    ("h60006", None),                    # a MUSA start's platform-plugin lines: healthy
    ("h60007", "lora_adapter_tensor_missing"),  # a Gemma 4 LoRA adapter's quoted load error
    ("h60008", None),                    # a 0.2.x ModelTpServer traceback in forward_decode_batch, cut
    ("h60009", None),                    # a SageMaker 0.2.x ModelTpServer traceback, cut
    ("h60010", "request_http_4xx"),      # a '403 Forbidden' access line and a rollout manager's retries
    ("h60011", None),                    # a 0.2.x controller_init_state traceback into get_model, cut
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h60002s_cause_is_the_first_starts_import_error_not_the_cut_restart():
    found = real("h60002")
    assert (found.cause, found.signature) == ("ModuleNotFoundError: No module named 'uvicorn'", "import_error")


def test_h60005_is_read_from_sglang_jaxs_own_allocation_error():
    # sgl_jax's ScheduleBatch.alloc_paged_token_slots_decode logs SGLang's message, then raises it as a RuntimeError
    # (sgl-project/sglang-jax python/sgl_jax/srt/managers/schedule_batch.py); the traceback is cut before it
    assert real("h60005").cause == "Decode out of memory. Try to lower your batch size."
    assert "site-packages/sgl_jax/srt/managers/scheduler.py" in (REAL / "h60005.log").read_text()


_T = "2025-02-06 07:14:"
_LAUNCH = (f'{_T}10 Traceback (most recent call last):\n'
           f'{_T}10   File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
           f'{_T}10     return _run_code(code, main_globals, None,\n'
           f'{_T}10   File "/usr/lib/python3.10/runpy.py", line 86, in _run_code\n'
           f'{_T}10     exec(code, run_globals)\n'
           f'{_T}10   File "/sgl-workspace/sglang/python/sglang/launch_server.py", line 6, in <module>\n'
           f'{_T}10     from sglang.srt.entrypoints.http_server import launch_server\n')


# the same source text in other forms: the whole first start with no restart, the restart cut on a bare time
# line (a blank line the container printed), a later release's frame (0.4.4.post1 http_server.py, orjson) after
# SGLang's own stamped lines, each under Docker Desktop's time
@pytest.mark.parametrize("text", [
    _LAUNCH + (f'{_T}10   File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/http_server.py", line 35, '
               'in <module>\n'
               f"{_T}10     import uvicorn\n"
               f"{_T}10 ModuleNotFoundError: No module named 'uvicorn'\n"),
    _LAUNCH + (f'{_T}10   File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/http_server.py", line 35, '
               'in <module>\n'
               f"{_T}10     import uvicorn\n"
               f"{_T}10 ModuleNotFoundError: No module named 'uvicorn'\n"
               f"{_T}39 Traceback (most recent call last):\n"
               f'{_T}39   File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
               f"{_T}39\n"),
    (f"{_T}09 [2025-02-06 07:14:09] Setting up the server.\n" + _LAUNCH
     + (f'{_T}10   File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/http_server.py", line 36, '
        'in <module>\n'
        f"{_T}10     import orjson\n"
        f"{_T}10 ModuleNotFoundError: No module named 'orjson'\n")),
], ids=["whole-first-start", "restart-cut-on-a-bare-time", "stamped-lines-before"])
def test_docker_desktops_time_before_a_launch_import_error_is_dependency_mismatch(text):
    assert said(text) == (True, "dependency_mismatch", "import_error")


def _split(text: str) -> list[str]:
    from ddlab.diagnosis.logtext import split_lines
    return [line.msg for line in split_lines(text)]


def test_the_peeled_time_leaves_sglangs_own_stamp_to_be_read():
    from ddlab.diagnosis.logtext import split_lines
    lines = split_lines(f"{_T}09 [2025-02-06 07:14:09 TP0] Load weight begin.\n{_T}09 Traceback (most recent call "
                        "last):\n")
    assert (lines[0].time, lines[0].rank, lines[0].msg) == ("2025-02-06 07:14:09", "TP0", "Load weight begin.")
    assert lines[1].msg == "Traceback (most recent call last):"


# near misses: a bare time a writer puts on its own records (NIXL's, the router's), a cut SGLang stamp, a time
# before only a few of the paste's lines (a job script's), a time followed by something other than a space
@pytest.mark.parametrize(("text", "kept"), [
    ("2025-12-10 05:50:30 NIXL INFO    _api.py:361 Backend UCX was instantiated\n"
     "2025-12-10 05:50:30 NIXL INFO    _api.py:251 Initialized NIXL agent: a1\n", "2025-12-10 05:50:30 NIXL"),
    ("2025-11-04 10:05:37  INFO sglang_router_rs::server: src/server.rs:830: Starting router\n"
     "2025-11-04 10:05:38  ERROR sglang_router_rs::server: worker failed\n", "2025-11-04 10:05:37  INFO"),
    ("2025-02-06 07:14:10 job started\nTraceback (most recent call last):\n"
     '  File "/opt/run.py", line 3, in <module>\nValueError: bad\nsome line\n', "2025-02-06 07:14:10 job"),
    ("2025-02-06 07:14:10,123 Traceback (most recent call last):\n"
     '2025-02-06 07:14:10,123   File "/opt/run.py", line 3, in <module>\n', "2025-02-06 07:14:10,123"),
], ids=["nixl-records", "router-records", "a-scripts-date", "with-milliseconds"])
def test_near_misses_keep_their_time(text, kept):
    assert _split(text)[0].startswith(kept)


def test_a_paste_cut_inside_sglangs_stamp_keeps_its_rank():
    from ddlab.diagnosis.logtext import split_lines
    lines = split_lines("2026-01-13 04:50:49 DP3 TP3] Prefill batch, #new-seq: 1\n"
                        '  File "/opt/run.py", line 3, in <module>\n'
                        "2026-01-13 04:50:50 DP3 TP3] Decode batch, #running-req: 1\n")
    assert [(line.time, line.rank) for line in lines[::2]] == [("2026-01-13 04:50:49", "DP3 TP3"),
                                                             ("2026-01-13 04:50:50", "DP3 TP3")]


def test_a_writers_own_timed_records_with_no_traceback_line_are_not_peeled():
    text = "2025-02-06 07:14:10 server starting\n2025-02-06 07:14:11 ModuleNotFoundError: No module named 'x'\n"
    assert _split(text)[1].startswith("2025-02-06 07:14:11 ")


_EP = "sglang/srt/entrypoints"


@pytest.mark.parametrize(("path", "line", "text"), [
    ("sglang/launch_server.py", 6, "from sglang.srt.entrypoints.http_server import launch_server"),
    (f"{_EP}/http_server.py", 35, "import uvicorn"),
    ("sglang-0.4.2.post2.dist-info/METADATA", 236, 'Requires-Dist: uvicorn; extra == "runtime-common"'),
], ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_each_line_the_reading_cites_is_the_releases(path, line, text):
    assert_at_line("sglang", "0.4.2.post2", path, line, text)


def test_the_later_releases_frame_is_its_own():
    assert_at_line("sglang", "0.4.4.post1", f"{_EP}/http_server.py", 36, "import orjson")
