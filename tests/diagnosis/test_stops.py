"""A log that did not crash but was stopped says how (ddlab.diagnosis.stops): "NOT CRASHED: stopped by
SIGTERM (...), in phase launch" where it said "still starting, or cut short" of a start someone ended,
and "the server is serving" of a server that no longer was. Corpus logs of each writer, texts written
from the source in another form, and near misses that must read as before; the texts are checked in
the wheels they are cited from (skipped where those are not unpacked)."""

from __future__ import annotations

import pytest

from fieldkit import LOGS, VLLM_REAL, assert_in_library_wheel, assert_in_sglang_wheel, assert_in_wheel, read_log

from ddlab.diagnosis.diagnosis import diagnose

HEALTHY = (LOGS / "healthy.journal.log").read_text()
SIGTERM = "stopped by SIGTERM (its handler raised KeyboardInterrupt: terminated)"
VLLM_HTTP = "stopped by SIGINT or SIGTERM (vLLM shut its HTTP server down)"


def _verdict(text: str) -> str:
    return diagnose(text).render().splitlines()[0]


STOPPED = [
    (VLLM_REAL / "w3506.log", f"NOT CRASHED: {SIGTERM}, in phase launch"),
    (VLLM_REAL / "w3110.log", f"NOT CRASHED: {VLLM_HTTP}, in phase serving"),
    (VLLM_REAL / "w3108.log", f"NOT CRASHED: {VLLM_HTTP}, in phase ready"),
    # the engine core's line comes before uvicorn's: the first stop line names it
    (VLLM_REAL / "w3509.log",
     "NOT CRASHED: stopped by SIGINT or SIGTERM (vLLM's engine: Shutdown initiated), in phase serving"),
    # the stats logger's last line, one second after the stop, reports the interval before it
    (VLLM_REAL / "w3704.log", f"NOT CRASHED: {VLLM_HTTP}, in phase serving"),
    (VLLM_REAL / "w3706.log",
     "NOT CRASHED: stopped by SIGINT or SIGTERM (vLLM's engine: Shutdown initiated), in phase serving"),
    (LOGS / "real" / "h34001.log", "NOT CRASHED: stopped by SIGTERM (it drained its requests), in phase serving"),
    (LOGS / "stopped.journal.log", 'NOT CRASHED: stopped by systemd (its "Stopping" line), in phase serving'),
]


@pytest.mark.parametrize(("path", "verdict"), STOPPED, ids=[path.name for path, _ in STOPPED])
def test_a_corpus_log_that_was_stopped_says_how(path, verdict):
    assert _verdict(read_log(path)) == verdict


def test_a_ctrl_c_and_v0s_engine_handler_after_serving_are_named():
    ctrl_c = HEALTHY + "Traceback (most recent call last):\n  File \"/srv/x.py\", line 3, in <module>\nKeyboardInterrupt\n"
    assert _verdict(ctrl_c) == "NOT CRASHED: stopped by Ctrl-C (KeyboardInterrupt), in phase serving"
    engine = HEALTHY + "KeyboardInterrupt: MQLLMEngine terminated\n"
    assert _verdict(engine) == f"NOT CRASHED: {SIGTERM}, in phase serving"


def test_uvicorns_own_shutdown_names_no_signal():
    text = HEALTHY + "Nov 29 09:54:00 gpu-h200-07 python3[48211]: [2026-11-29 09:54:00] INFO:     Shutting down\n"
    assert _verdict(text) == 'NOT CRASHED: shut down (uvicorn: "Shutting down"), in phase serving'


def test_a_stop_that_more_serving_follows_is_not_the_end():
    """A stop line with batches after it (the run went on, or a second run served) names no stop."""
    lines = HEALTHY.splitlines(keepends=True)
    ready = next(i for i, line in enumerate(lines) if "fired up" in line)
    text = "".join(lines[:ready + 1]) + "[2026-11-29 09:53:07] INFO:     Shutting down\n" + "".join(lines[ready + 1:])
    assert _verdict(text) == "NOT CRASHED: the server is serving"


def test_a_crash_and_a_start_that_just_ends_read_as_before():
    crash = (LOGS / "replay_none.journal.log").read_text()
    stopped_after = crash + "Nov 29 10:00:00 gpu systemd[1]: Stopping ddlab-ddtree.service - ddlab ddtree...\n"
    assert _verdict(stopped_after) == _verdict(crash) and _verdict(crash).startswith("CRASHED: ")
    start = "".join(HEALTHY.splitlines(keepends=True)[:5])
    assert _verdict(start) == "NOT CRASHED: the log stops in phase launch (still starting, or cut short)"


TEXTS = [
    (("vllm", "0.10.0", "vllm/entrypoints/openai/api_server.py"), 'raise KeyboardInterrupt("terminated")'),
    (("vllm", "0.7.3", "vllm/engine/multiprocessing/engine.py"), 'raise KeyboardInterrupt("MQLLMEngine terminated")'),
    (("vllm", "0.10.0", "vllm/entrypoints/launcher.py"), 'logger.info("Shutting down FastAPI HTTP server.")'),
    (("vllm", "0.30.0", "vllm/entrypoints/launchers/launcher.py"),
     'logger.info_once("[shutdown] API server: shutdown triggered")'),
    (("sglang", "0.5.23", "sglang/srt/managers/tokenizer_manager.py"),
     'f"SIGTERM received. {signum=} {frame=}. Draining requests and shutting down..."'),
    (("uvicorn", "0.54.0", "uvicorn/server.py"), 'logger.info("Shutting down")'),
    (("vllm", "0.20.0", "vllm/v1/engine/core.py"), 'logger.info("Shutdown initiated (timeout=%d)", shutdown_timeout)'),
    (("vllm", "0.20.0", "vllm/v1/metrics/loggers.py"), '"Avg prompt throughput: %.1f tokens/s",'),
]


@pytest.mark.parametrize(("where", "text"), TEXTS, ids=[f"{p}-{r}:{path}" for (p, r, path), _ in TEXTS])
def test_each_stop_text_is_its_writers_own(where, text):
    package, release, path = where
    if package == "vllm":
        assert_in_wheel(release, path, text)
    elif package == "sglang":
        assert_in_sglang_wheel(release, path, text)
    else:
        assert_in_library_wheel(package, release, path, text)
