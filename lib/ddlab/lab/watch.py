"""Watch a deployed variant until it is ready, crashed or timed out.

The loop polls the service's state over the host's open connection every
``poll_s`` (0.2 s: a death is seen well within a second), follows its log
(this start's only) for the startup phase, and shows a heartbeat every
``heartbeat_s`` with elapsed time, phase and the last log line. A background
thread asks ``/v1/models`` (then ``/health``) whether the server answers.

- *ready*: the service runs AND the server answers. "Ready" is not "works":
  with ``probe=True`` it then sends requests that drive the speculative
  verify path (one alone, then two at once) and keeps watching for
  ``grace_s``; in the field the replay crash only happens then. Probes lost
  with a dropped SSH connection are sent again (twice at most).
- *crashed*: the unit failed, the process is gone, or systemd restarted it
  since ddlab started it (``NRestarts``: a crash loop under ``Restart=always``
  is never "ready"; the verdict says how many restarts).
- *timeout*: ``timeout_s`` passed; the log tail says where it hung.
- *interrupted*: Ctrl-C; recorded, then :class:`ddlab.core.errors.Interrupted`
  (a KeyboardInterrupt carrying the verdict) is raised so the caller restores.

Whatever the end, the diagnosis of this start's log (:mod:`ddlab.diagnosis.diagnosis`)
and the verdict are written to the run folder (``journal.log``,
``verdict.json``) before :func:`watch` returns or raises. The log is masked
(:mod:`ddlab.core.redact`) before anything reads it: the verdict quotes it, and
it is printed, displayed and stored.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from ddlab.core.errors import Interrupted, ServiceError
from ddlab.core.progress import Heartbeat
from ddlab.core.redact import redact_text
from ddlab.core.run_folders import write_json, write_text
from ddlab.diagnosis import diagnosis as dx
from ddlab.hosts.services import ServiceState
from ddlab.lab.deploy import Deployed, Lab
from ddlab.lab.probes import ProbeResult, probe_server

__all__ = ["Verdict", "watch", "PHASE_LABELS", "EXIT_CODES",
           "PROBE_FAILED_EXIT"]

# Exit codes of `ddlab watch` by verdict, so scripts can branch on them (docs/DESIGN.md).
EXIT_CODES = {"ready": 0, "crashed": 3, "timeout": 4, "interrupted": 130}
PROBE_FAILED_EXIT = 5  # ready, but a probe request failed: "ready" is not "works"

PHASE_LABELS = {"launch": "launching", "load_weights": "loading weights",
                "memory_pool": "allocating the KV cache", "graph_capture": "capturing cuda graphs",
                "ready": "ready", "serving": "serving"}


@dataclass
class Verdict:
    """How a watch ended; ``to_dict()`` is the one JSON object the CLI prints last."""

    state: str                      # ready | crashed | timeout | interrupted
    variant: str
    host: str
    service: str
    elapsed_s: float
    diagnosis: dx.Diagnosis
    service_state: dict = field(default_factory=dict)
    restarts: int = 0
    probes: list[ProbeResult] = field(default_factory=list)
    log_tail: list[str] = field(default_factory=list)
    run_dir: str = ""

    @property
    def probe_failed(self) -> bool:
        """Ready, but a probe request failed: the server answers, yet does not work."""
        return self.state == "ready" and any(not p.ok for p in self.probes)

    @property
    def exit_code(self) -> int:
        return PROBE_FAILED_EXIT if self.probe_failed else EXIT_CODES.get(self.state, 1)

    @property
    def headline(self) -> str:
        d = self.diagnosis
        where = f"{self.variant} on {self.host}"
        if self.state == "ready":
            probed = [p for p in self.probes if p.ok]
            if self.probes and len(probed) < len(self.probes):
                bad = next(p for p in self.probes if not p.ok)
                return f"READY but a probe failed: {where}: {bad.error}"
            extra = ""
            if probed and probed[-1].spec_accept_length:
                extra = f", verify path ran (accept length {probed[-1].spec_accept_length:.2f})"
            return f"READY: {where} after {self.elapsed_s:.1f} s{extra}"
        if self.state == "crashed":
            restarts = f", {self.restarts} restarts" if self.restarts else ""
            return (f"CRASHED: {where}: {d.kind} in phase {d.phase}{restarts}: "
                    f"{d.cause or 'no cause in the log'}")
        if self.state == "timeout":
            return f"TIMEOUT: {where} not ready after {self.elapsed_s:.0f} s, stuck in phase {d.phase}"
        return f"INTERRUPTED: {where} after {self.elapsed_s:.1f} s, in phase {d.phase}"

    @property
    def next_step(self) -> str:
        if self.state == "crashed":
            return self.diagnosis.suggestion or "read journal.log in the run folder"
        if self.state == "timeout":
            return ("raise the timeout if the phase was still progressing; otherwise read the "
                    "log tail for where it hangs")
        if self.state == "interrupted":
            return "run the watch again, or restore the baseline"
        if any(not p.ok for p in self.probes):
            return "the server answers but a generation failed: read journal.log"
        return "measure it (ddlab.sweep with this variant) or sweep around it"

    def to_dict(self) -> dict:
        d = self.diagnosis.to_dict()
        return {"state": self.state, "variant": self.variant, "elapsed_s": round(self.elapsed_s, 3),
                "headline": self.headline, "next_step": self.next_step, **d,
                "host": self.host, "service": self.service, "restarts": self.restarts,
                "service_state": self.service_state, "probes": [asdict(p) for p in self.probes],
                "log_tail": self.log_tail, "run_dir": self.run_dir}

    def render(self) -> str:
        """Verdict first, then the details a person reads next."""
        rows = [self.headline, f"next step:  {self.next_step}", f"service:    {self.service}"
                f" ({self.service_state.get('active_state')}/{self.service_state.get('sub_state')})"]
        rows.append(self.diagnosis.render())
        if self.probes:
            rows.append("probes:     " + "; ".join(
                f"bs {p.batch}: " + (f"{p.completion_tokens} tokens, accept length "
                                     f"{p.spec_accept_length}" if p.ok else f"FAILED {p.error}")
                for p in self.probes))
        if self.run_dir:
            rows.append(f"evidence:   {self.run_dir}")
        return "\n".join(rows)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's text/plain
        printer.text(self.render())

    def journal_excerpt(self, lines: int = 60) -> str:
        """The last ``lines`` of this start's log, from the run folder's journal.log."""
        path = Path(self.run_dir) / "journal.log"
        text = path.read_text(encoding="utf-8") if path.is_file() else "\n".join(self.log_tail)
        tail = text.rstrip().splitlines()[-lines:]
        return f"--- last {len(tail)} lines of {path} ---\n" + "\n".join(tail)

    def _repr_html_(self) -> str:
        from html import escape

        colour = {"ready": "#1a7f37", "crashed": "#cf222e"}.get(self.state, "#9a6700")
        return (f"<div style='border-left:6px solid {colour};padding:4px 10px'>"
                f"<b style='color:{colour}'>{escape(self.headline)}</b><br>"
                f"<b>next step:</b> {escape(self.next_step)}"
                f"<pre style='font-size:90%'>{escape(self.render())}</pre></div>")


class _ReadyChecker(threading.Thread):
    """Asks the server, off the main loop, whether it answers (a slow HTTP call
    must not delay seeing a crash)."""

    def __init__(self, base_url: str, interval_s: float = 0.5):
        super().__init__(daemon=True, name="ddlab-ready-check")
        self.base_url = base_url
        self.interval_s = interval_s
        self.ready = threading.Event()
        self.stopped = threading.Event()
        self.model = None

    def run(self) -> None:
        with httpx.Client(timeout=2.0) as client:
            while not self.stopped.is_set() and not self.ready.is_set():
                self._check(client)
                self.stopped.wait(self.interval_s)

    def _check(self, client: httpx.Client) -> None:
        """/health 200 is ready and 503 is starting (SGLang's meaning); a server
        without /health is ready once /v1/models lists a model."""
        try:
            health = client.get(f"{self.base_url}/health").status_code
            if health == 503:
                return
            resp = client.get(f"{self.base_url}/v1/models")
            data = resp.json().get("data") if resp.status_code == 200 else None
            if data:
                self.model = data[0].get("id")
            if health == 200 or data:
                self.ready.set()
        except (httpx.HTTPError, ValueError):
            pass


class _Follower:
    """This start's log, fetched incrementally; phase and last line for the heartbeat."""

    def __init__(self, lab: Lab, deployed: Deployed):
        self.lab, self.deployed = lab, deployed
        self.text, self.cursor = "", None

    def poll(self) -> None:
        more, self.cursor = self.lab.manager.read_logs(
            self.deployed.service, invocation=self.deployed.invocation or None, cursor=self.cursor)
        self.text += more

    def settle(self, budget_s: float = 0.8) -> str:
        """Read until the log stops growing (a dying process's last lines can lag)."""
        deadline = time.monotonic() + budget_s
        while True:
            before = len(self.text)
            self.poll()
            if (len(self.text) == before and before) or time.monotonic() > deadline:
                return self.text
            time.sleep(0.1)

    @property
    def status(self) -> str:
        phase = PHASE_LABELS.get(dx.phase_of(self.text), "launching")
        lines = [dx.strip_prefix(l) for l in self.text.strip().splitlines()[-1:]]
        last = lines[0][:100] if lines else "(no log yet)"
        return f"{phase} | {last}"


def watch(lab: Lab, *, timeout_s: float = 600.0, probe: bool = False, grace_s: float = 5.0,
          poll_s: float = 0.2, heartbeat_s: float = 5.0, patterns=()) -> Verdict:
    """Watch the variant deployed on ``lab`` (see the module docstring)."""
    deployed = lab.current
    if deployed is None:
        raise ServiceError(f"host {lab.name!r}: no ddlab variant is deployed there",
                           fix=f"deploy one first: ddlab deploy --host {lab.name}")
    run_dir = Path(deployed.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    follower = _Follower(lab, deployed)
    checker = _ReadyChecker(lab.transport.http_base(deployed.port))
    loop = _Loop(lab, deployed, follower, checker, timeout_s=timeout_s, probe=probe,
                 grace_s=grace_s, poll_s=poll_s)
    beat = Heartbeat(f"watch {deployed.name}", timeout_s, interval_s=heartbeat_s,
                     record=run_dir / "heartbeat.log")
    checker.start()
    try:
        state = loop.run(beat)
    except KeyboardInterrupt as interrupt:
        raise Interrupted(verdict=_finish(loop, "interrupted", beat, patterns)) from interrupt
    finally:
        checker.stopped.set()
    return _finish(loop, state, beat, patterns)


class _Loop:
    def __init__(self, lab, deployed, follower, checker, *, timeout_s, probe, grace_s, poll_s):
        self.lab, self.deployed, self.follower, self.checker = lab, deployed, follower, checker
        self.timeout_s, self.probe, self.grace_s, self.poll_s = timeout_s, probe, grace_s, poll_s
        self.started = time.monotonic()
        self.state: ServiceState | None = None
        self.probes: list[ProbeResult] = []
        self._probe_thread: threading.Thread | None = None
        self._probe_done_at: float | None = None

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def run(self, beat: Heartbeat) -> str:
        last_log = next_beat = float("-inf")
        while True:
            self.state = self.lab.manager.state(self.deployed.service)
            if self._crashed():
                return "crashed"
            if time.monotonic() - last_log >= 1.0:
                self.follower.poll()
                last_log = time.monotonic()
            if self.checker.ready.is_set() and self.state.running and self._probed():
                return "ready"
            if self.elapsed_s > self.timeout_s:
                return "timeout"
            if time.monotonic() >= next_beat:  # the status reads the whole log: not every poll
                beat.beat(self._status(), force=True)
                next_beat = time.monotonic() + beat.interval_s
            time.sleep(self.poll_s)

    def _crashed(self) -> bool:
        s = self.state
        gone = s.active_state in ("inactive", "failed") and s.sub_state in ("dead", "failed")
        return s.failed or gone or s.n_restarts > 0

    def _probed(self) -> bool:
        """True once probes (if asked) are done and the grace period passed alive."""
        if not self.probe:
            return True
        if self._probe_thread is None:
            self._probe_thread = threading.Thread(target=self._run_probes, daemon=True,
                                                  name="ddlab-probe")
            self._probe_thread.start()
            return False
        if self._probe_done_at is None:
            return False
        return time.monotonic() - self._probe_done_at >= self.grace_s

    def _run_probes(self) -> None:
        """Probe; probes lost with a dropped SSH connection (no HTTP status, and the
        connection dropped meanwhile) say nothing of the server: probe again (twice at most)."""
        try:
            for _attempt in range(3):
                link = self.lab.transport.link
                self.probes = probe_server(self.lab.transport.http_base(self.deployed.port))
                lost = any(not p.ok and p.status is None for p in self.probes)
                if not (lost and self.lab.transport.link != link):
                    break
        except Exception as err:  # a probe that could not run is a failed probe, not a pass
            self.probes = [ProbeResult(ok=False, batch=1, error=f"{type(err).__name__}: {err}")]
        finally:
            self._probe_done_at = time.monotonic()

    def _status(self) -> str:
        s = self.state
        text = f"{self.follower.status} | {s.active_state}/{s.sub_state}"
        if self._probe_thread is not None:
            text += " | probing" if self._probe_done_at is None else " | probed, grace period"
        return text


def _unexplained_death(diagnosis: dx.Diagnosis, s: ServiceState, text: str) -> dx.Diagnosis:
    """The service died but its log shows no known failure: say what is known."""
    how = (f"killed by signal {s.exit_status}" if s.exit_kind == "killed"
           else f"exited with status {s.exit_status}" if s.exit_status is not None
           else f"{s.active_state}/{s.sub_state} ({s.result})")
    lines = [dx.strip_prefix(l) for l in text.strip().splitlines() if l.strip()]
    last = lines[-1] if lines else "the log is empty"
    return dataclasses.replace(
        diagnosis, crashed=True, kind="unknown", cause=f"the process {how}; last log line: {last}",
        evidence=diagnosis.evidence or lines[-10:], exit_status=diagnosis.exit_status or how,
        suggestion="no known crash signature: read journal.log; run the command by hand to see it fail")


def _finish(loop: _Loop, state: str, beat: Heartbeat, patterns) -> Verdict:
    """Diagnose this start's log and write the evidence, before anything returns or raises."""
    if state == "crashed":
        text = loop.follower.settle()
    else:
        loop.follower.poll()
        text = loop.follower.text
    text = redact_text(text)  # a server logs its own secrets (SGLang: server_args=...api_key=)
    s = loop.state
    diagnosis = dx.diagnose(text, patterns=patterns)
    if state == "crashed" and not diagnosis.crashed:
        diagnosis = _unexplained_death(diagnosis, s, text)
    restarts = s.n_restarts if s else 0  # since the start ddlab made (a manual start resets it)
    verdict = Verdict(state=state, variant=loop.deployed.name, host=loop.lab.name,
                      service=loop.deployed.service, elapsed_s=loop.elapsed_s, diagnosis=diagnosis,
                      service_state=s.to_dict() if s else {}, restarts=restarts,
                      probes=list(loop.probes), log_tail=text.strip().splitlines()[-30:],
                      run_dir=str(loop.deployed.run_dir))
    run_dir = Path(loop.deployed.run_dir)
    write_text(run_dir / "journal.log", text)
    write_json(run_dir / "verdict.json", verdict.to_dict())
    beat.close(verdict.headline)
    return verdict
