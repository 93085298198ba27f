"""Held-out round 43 (issue 24): its one miss, h43001, fixed by a cloud log viewer's prefix peeled.

Round 43 (h43001-h43010; excerpts of issue and pull-request threads) was measured once on main at 1b007c4
(with the round's logs, def9d64: crashed 10/10, kind 10/10, phase 4/5); docs/diagnosis.md, "Held-out
round 43", explains the miss. h43001 is a scheduler's traceback copied out of Google Cloud Logging's
viewer: every line reads 'ERROR 2026-02-18T14:43:05.821451064Z [severity: ERROR] ' before what SGLang
wrote, and the copy lost Python's indentation. The severity and time were peeled already; the severity's
echo, '[severity: ERROR] ', was not, so no line began with SGLang's stamp or a frame, no traceback was
read and the phase fell back to launch. The echo is peeled now behind the severity and time
(diagnosis/viewer_prefixes.py), only where it names the same severity; read through it, the frames are a
scheduler's overlap loop running a batch: serving, as labelled. No label was disputed. A text cited from a
wheel's source is checked there where it is unpacked (skipped elsewhere).
"""

from __future__ import annotations

from fieldkit import REAL_MANIFEST, assert_at_line, reading, reads, real

from ddlab.diagnosis.logtext import split_lines

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 43}

# the viewer's prefix as h43001 shows it
_AT = "ERROR 2026-02-18T14:43:05.821451064Z [severity: ERROR] "


def test_round43_is_folded_into_work_with_no_label_disputed():
    assert sorted(_ROUND) == [f"h430{i:02d}" for i in range(1, 11)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())


def test_h43001_reads_as_labelled():
    found = real("h43001")
    assert reading(found) == (True, "unknown", "serving")
    assert "scheduler.py:2279" in found.suggestion  # its last frame, read through the prefix


def test_the_prefix_and_its_severity_echo_are_peeled():
    header, frame = split_lines(f"{_AT}[2026-02-18 14:43:05 TP1] Scheduler hit an exception: Traceback "
                                "(most recent call last):\n"
                                f'{_AT}File "/x/scheduler.py", line 3076, in run_scheduler_process\n')
    assert (header.time, header.rank) == ("2026-02-18 14:43:05", "TP1")
    assert header.msg == "Scheduler hit an exception: Traceback (most recent call last):"
    assert frame.msg == 'File "/x/scheduler.py", line 3076, in run_scheduler_process'


# --- another form, written from the source (0.5.8.post1, the release before the checkout h43001 ran: its
# scheduler.py:3076 lies between 0.5.8.post1's :2974 and 0.5.9's :3169): the viewer's prefix at another
# severity and time, the frames' indentation kept

_SOURCE = "/sgl-workspace/sglang/python/sglang/srt/"
_ELSEWHERE = "CRITICAL 2026-01-30T08:01:12Z [severity: CRITICAL] "
_OTHER_FORM = "\n".join(_ELSEWHERE + line for line in (
    "[2026-01-30 08:01:12 TP3] Scheduler hit an exception: Traceback (most recent call last):",
    f'  File "{_SOURCE}managers/scheduler.py", line 2974, in run_scheduler_process',
    "    scheduler.event_loop_overlap()",
    f'  File "{_SOURCE}managers/scheduler.py", line 1125, in event_loop_overlap',
    "    batch_result = self.run_batch(batch)",
    f'  File "{_SOURCE}managers/scheduler.py", line 2294, in run_batch',
    "    batch_result = self.model_worker.forward_batch_generation(",
)) + "\n"


def test_the_prefix_at_another_severity_reads_the_same():
    assert reads(_OTHER_FORM) == (True, "unknown", "serving")
    assert split_lines(_OTHER_FORM)[1].msg == f'  File "{_SOURCE}managers/scheduler.py", line 2974, ' \
                                              "in run_scheduler_process"


def test_the_frames_are_a_scheduler_running_a_batch():
    base = "sglang/srt/managers/scheduler.py"
    assert_at_line("sglang", "0.5.8.post1", base, 2974, "scheduler.event_loop_overlap()")
    assert_at_line("sglang", "0.5.8.post1", base, 2995,
                   'logger.error(f"Scheduler hit an exception: {traceback}")')
    assert_at_line("sglang", "0.5.8.post1", base, 1095, "def event_loop_overlap(self):")
    assert_at_line("sglang", "0.5.8.post1", base, 1125, "batch_result = self.run_batch(batch)")
    assert_at_line("sglang", "0.5.8.post1", base, 2244, "def run_batch(")
    assert_at_line("sglang", "0.5.8.post1", base, 2294,
                   "batch_result = self.model_worker.forward_batch_generation(")


# --- near misses: an echo that is not the viewer's, and the prefix on a start that did not fail --------

def test_an_echo_of_another_severity_or_without_the_viewers_time_is_kept():
    other, = split_lines("ERROR 2026-02-18T14:43:05Z [severity: WARNING] a line of the process's own\n")
    assert other.msg == "[severity: WARNING] a line of the process's own"
    own, = split_lines("[severity: ERROR] a line of the process's own\n")
    assert own.msg == "[severity: ERROR] a line of the process's own"


def test_an_echo_before_a_startup_traceback_reads_no_serving():
    # the peeled prefix says nothing of the phase: a scheduler built at start reads launch
    # (0.5.8.post1 managers/scheduler.py:2937 builds Scheduler( before :2974 runs its loop; :346
    # init_model_worker)
    text = "\n".join(_AT + line for line in (
        "[2026-02-18 14:43:05 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        f'File "{_SOURCE}managers/scheduler.py", line 2937, in run_scheduler_process',
        "scheduler = Scheduler(",
        f'File "{_SOURCE}managers/scheduler.py", line 346, in __init__',
        "self.init_model_worker()",
    )) + "\n"
    assert reads(text)[2] == "launch"


def test_the_prefix_on_a_healthy_start_reads_no_crash():
    # 0.5.8.post1 model_executor/model_runner.py:808, entrypoints/http_server.py:1665
    text = "\n".join(f"INFO 2026-02-18T14:40:{s}Z [severity: INFO] {line}" for s, line in (
        ("01.5", "[2026-02-18 14:40:01 TP0] Load weight begin. avail mem=178.50 GB"),
        ("44.1", "[2026-02-18 14:40:44 TP0] Load weight end. elapsed=43.12 s, type=DeepseekV2ForCausalLM, "
                 "avail mem=40.10 GB, mem usage=138.40 GB."),
        ("59.0", "[2026-02-18 14:40:59] The server is fired up and ready to roll!"),
    )) + "\n"
    assert reads(text) == (False, None, "ready")
