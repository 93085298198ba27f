"""What held-out round 35 of the vLLM corpus (w3501-w3510, measured once at 1f54444 with its logs 5b9fb74)
showed: one miss, w3506, a vLLM 0.10.0 start (V0 fallback, TP=4) whose only traceback is the API server's own
SIGTERM handler, "KeyboardInterrupt: terminated", a few seconds after the engine process started. Labelled
crashed/unknown at launch; ddlab reads it as not crashed (the log ends at launch). vLLM's source says the
handler is how the server stops when it is asked to while initializing, and vLLM sends itself no SIGTERM: the
start was stopped from outside with no error of its own in the log, so its kind is disputed (``kind_disputed``:
["unknown", null], as w3114's), no rule added.

The tests pin ddlab's reading: the corpus log, the handler's text in another form (raised while the frontend
waits on the engine's setup), and the near miss that must still read as a crash (the frontend's own "Engine
process failed to start" when the engine dies during setup). The source checks skip where the wheels are not
unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

import json

import pytest

from fieldkit import VLLM_REAL, VLLM_WHEELS, read_log, reads, vllm_signature, wheel_text_test

_API = "vllm/entrypoints/openai/api_server.py"
test_each_rules_text_is_vllms_own = wheel_text_test([
    # setup_server's handler: a SIGTERM while initializing becomes KeyboardInterrupt("terminated")
    ("0.10.0", _API, "# Interrupt server on sigterm while initializing"),
    ("0.10.0", _API, 'raise KeyboardInterrupt("terminated")'),
    ("0.10.0", _API, "signal.signal(signal.SIGTERM, signal_handler)"),
    # the V0 frontend's own word when the engine process dies during its setup
    ("0.10.0", _API, '"Engine process failed to start. See stack "'),
    # vLLM's only signals to processes: kill_process_tree's SIGKILLs, never a SIGTERM to itself
    ("0.10.0", "vllm/utils/__init__.py", "os.kill(child.pid, signal.SIGKILL)"),
])

# (line, text) of vLLM 0.10.0's api_server.py that the log's frames and the second look cite
_LINES_0100 = [
    (1773, "def signal_handler(*_) -> None:"),
    (1775, 'raise KeyboardInterrupt("terminated")'),
    (1777, "signal.signal(signal.SIGTERM, signal_handler)"),
    (1856, "uvloop.run(run_server(args))"),
    (292, '"Engine process failed to start. See stack "'),
]


@pytest.mark.parametrize(("line", "text"), _LINES_0100, ids=[str(line) for line, _ in _LINES_0100])
def test_the_cited_lines_are_vllm_0100s(line, text):
    source = VLLM_WHEELS / "0.10.0" / _API
    if not source.exists():
        pytest.skip(f"{source} not unpacked here")
    assert text in source.read_text().splitlines()[line - 1], (source, line)


_HEAD = "/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/openai/api_server.py"


def _start(log: str) -> str:
    """w3506's lines before its traceback: the args, the V0 fallback, the engine process started."""
    return log.split("Traceback (most recent call last):")[0]


def test_a_sigterm_while_initializing_is_a_stop_not_a_crash():
    """w3506: the API server's SIGTERM handler raises in uvloop's signal dispatch while the loop waits;
    nothing of the engine's failure before it: not crashed, the log ends at launch (ddlab's reading, the
    label's kind disputed)."""
    log = read_log("w3506.log")
    assert reads(log) == (False, None, "launch")
    assert vllm_signature(log) is None
    manifest = json.loads((VLLM_REAL / "manifest.json").read_text())
    entry = next(entry for entry in manifest["logs"] if entry["id"] == "w3506")
    assert entry["kind_disputed"] == ["unknown", None] and "api_server.py:1773" in entry["second_look"]
    # another form: the handler raised while the frontend waits on the engine's setup (api_server.py:286)
    waiting = _start(log) + "\n".join([
        "Traceback (most recent call last):",
        f'  File "{_HEAD}", line 1856, in <module>',
        "    uvloop.run(run_server(args))",
        f'  File "{_HEAD}", line 286, in build_async_engine_client_from_engine_args',
        "    await mq_engine_client.setup()",
        f'  File "{_HEAD}", line 1775, in signal_handler',
        '    raise KeyboardInterrupt("terminated")',
        "KeyboardInterrupt: terminated", ""])
    assert reads(waiting) == (False, None, "launch")


def test_the_engine_dying_during_setup_is_still_a_crash():
    """The near miss: the same start where the V0 frontend finds the engine process dead and says so
    (api_server.py:292): a crash at launch, whatever ends the process after it."""
    failed = _start(read_log("w3506.log")) + "\n".join([
        "Traceback (most recent call last):",
        f'  File "{_HEAD}", line 1856, in <module>',
        "    uvloop.run(run_server(args))",
        f'  File "{_HEAD}", line 292, in build_async_engine_client_from_engine_args',
        "    raise RuntimeError(",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.", ""])
    assert reads(failed) == (True, "unknown", "launch")
