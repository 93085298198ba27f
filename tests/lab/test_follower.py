"""The watch's log follower reads the phase again only while it can still change.

Reading the phase is a pass over the whole text the follower holds; a server that serves on
through the probes and the grace period adds lines at every poll, and each pass over a 2.5 MB log
cost 2.7 s of CPU (2026-12-05). Once the log is serving past SGLang's ready line (vLLM's phases
only go forward) no later line changes what the watch reads of it. The follower is driven here
with a real journal (tests/fixtures/logs/healthy.journal.log) handed over a line per poll by a
service manager that only reads a list.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ddlab.lab import watch as watch_mod
from ddlab.lab.deploy import Deployed

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "healthy.journal.log"


class _Lines:
    """A service manager's read_logs over a list of lines: one more line a poll."""

    def __init__(self, lines):
        self.lines, self.at = lines, 0

    def read_logs(self, service, *, invocation=None, cursor=None):
        self.at += 1
        return "".join(self.lines[self.at - 1:self.at]), str(self.at)


@pytest.fixture
def passes(monkeypatch):
    counted = []
    real = watch_mod._phase_of

    def counting(text, dialect):
        counted.append(len(text))
        return real(text, dialect)

    monkeypatch.setattr(watch_mod, "_phase_of", counting)
    return counted


def _follow(lines, dialect="sglang"):
    lab = SimpleNamespace(manager=_Lines(lines))
    deployed = Deployed(name="v", hash="h", service="v.service", port=1, run_dir=Path("."))
    follower = watch_mod._Follower(lab, deployed, dialect)
    phases = []
    for _ in lines:
        follower.poll()
        phases.append(follower.phase)
    return follower, phases


def test_serving_past_the_ready_line_is_read_no_more(passes):
    lines = LOG.read_text().splitlines(keepends=True)
    serving = lines[39:41]
    lines = lines[:41] + serving * 50  # a server that goes on serving
    follower, phases = _follow(lines)
    ready_at = next(i for i, line in enumerate(lines) if "ready to roll" in line)
    assert phases[ready_at] == "ready" and phases[-1] == "serving"
    first_serving = phases.index("serving")
    assert first_serving > ready_at
    assert len(passes) == first_serving + 2, "one pass a poll until serving, none after"
    assert watch_mod._phase_of(follower.text, "sglang") == "serving", "what a full pass says"


def test_a_warmup_read_as_serving_before_the_ready_line_is_read_again(passes):
    lines = LOG.read_text().splitlines(keepends=True)
    ready_at = next(i for i, line in enumerate(lines) if "ready to roll" in line)
    # the warmup's prefill with a request queued behind it reads as serving before the ready line
    warmup = ("Nov 29 09:53:05 gpu-h200-07 python3[48211]: [2026-11-29 09:53:05 TP0] Prefill batch, "
              "#new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, "
              "#queue-req: 1\n")
    lines = lines[:ready_at] + [warmup] + lines[ready_at:ready_at + 1]
    follower, phases = _follow(lines)
    assert phases[-2:] == ["serving", "ready"], "the ready line after the warmup's batch is read"
    assert len(passes) == len(lines) + 1
