"""The verdict of a watch: how it ended, why, and what to try next.

:class:`Verdict` is what :func:`ddlab.lab.watch.watch` returns (and what an
:class:`ddlab.core.errors.Interrupted` carries): the state, the diagnosis of
this start's log, the probes, the lossless check, and the notes a reader must
know. Its ``headline`` and ``next_step`` come first in every rendering (the
answer first); ``to_dict()`` is the one JSON object the CLI prints last, and
``exit_code`` the documented code scripts branch on (docs/DESIGN.md).
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ddlab.diagnosis import diagnosis as dx
from ddlab.diagnosis.exits import CRASHED_EXIT
from ddlab.lab.verify_requests import ProbeResult

__all__ = ["Verdict", "PHASE_LABELS", "EXIT_CODES", "PROBE_FAILED_EXIT", "SCHEDULER_ENDED_EXIT",
           "PREEMPTED_EXIT"]

# Exit codes of `ddlab watch` by verdict, so scripts can branch on them (docs/DESIGN.md).
SCHEDULER_ENDED_EXIT = 8  # the scheduler (Slurm) ended the job: not the server's crash
PREEMPTED_EXIT = 9  # another ddlab run took the host (--force): not the server's crash
EXIT_CODES = {"ready": 0, "crashed": CRASHED_EXIT, "timeout": 4, "connection_lost": 6, "wrong_output": 7,
              "scheduler_ended": SCHEDULER_ENDED_EXIT, "preempted": PREEMPTED_EXIT,
              "interrupted": 130}
PROBE_FAILED_EXIT = 5  # ready, but a probe request failed: "ready" is not "works"

PHASE_LABELS = {"launch": "launching", "load_weights": "loading weights",
                "memory_pool": "allocating the KV cache", "graph_capture": "capturing cuda graphs",
                "ready": "ready", "serving": "serving"}



@dataclass
class Verdict:
    """How a watch ended; ``to_dict()`` is the one JSON object the CLI prints last."""

    state: str                      # ready | wrong_output | crashed | timeout | connection_lost
    #                                 | scheduler_ended | preempted | interrupted
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
    notes: list[str] = field(default_factory=list)   # what else the reader must know
    lost: str = ""                  # connection_lost: what the connection said last
    restore_error: str = ""         # the watch ended, but putting the baseline back failed
    lossless: dict = field(default_factory=dict)  # the lossless check (LosslessCheck.to_dict)
    # flag -> {"asked", "ran", "given"}: what a ready server ran otherwise than configured
    ran_otherwise: dict = field(default_factory=dict)

    @property
    def probe_failed(self) -> bool:
        """Ready, but a probe request failed: the server answers, yet does not work."""
        return self.state == "ready" and any(not p.ok for p in self.probes)

    @property
    def exit_code(self) -> int:
        """ddlab's documented code (docs/DESIGN.md): 0 ready, 3 crashed, 4 timeout, 5 ready
        but a probe failed, 6 connection lost, 7 wrong output (not lossless), 8 the
        scheduler ended the job (Slurm), 9 preempted (another ddlab run took the host),
        130 interrupted; 1 when the restore failed."""
        if self.restore_error:
            return 1
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
        if self.state == "wrong_output":
            return f"WRONG OUTPUT: {where}: not lossless: {d.cause}"
        if self.state == "crashed":
            restarts = f", {self.restarts} restarts" if self.restarts else ""
            return (f"CRASHED: {where}: {d.kind} in phase {d.phase}{restarts}: "
                    f"{d.cause or 'no cause in the log'}")
        if self.state == "timeout":
            return f"TIMEOUT: {where} not ready after {self.elapsed_s:.0f} s, stuck in phase {d.phase}"
        if self.state == "scheduler_ended":
            return f"SCHEDULER ENDED THE JOB (not a crash): {where}: {d.cause}"
        if self.state == "preempted":
            return f"PREEMPTED (not a crash): {where}: {d.cause}"
        if self.state == "connection_lost":
            return (f"CONNECTION LOST: {where} after {self.elapsed_s:.1f} s, last seen in phase "
                    f"{d.phase}: {self.lost}")
        return f"INTERRUPTED: {where} after {self.elapsed_s:.1f} s, in phase {d.phase}"

    @property
    def next_step(self) -> str:
        if self.restore_error:
            return f"the baseline is not back ({self.restore_error}): ddlab restore --host " \
                   f"{shlex.quote(self.host)} finishes it"
        if self.state == "connection_lost":
            return ("the variant may still run and the baseline be down: when the host answers, "
                    f"ddlab watch --host {shlex.quote(self.host)} (or ddlab restore --host "
                    f"{shlex.quote(self.host)})")
        if self.state in ("crashed", "wrong_output", "scheduler_ended", "preempted"):
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
                "exit_code": self.exit_code,
                "log_tail": self.log_tail, "run_dir": self.run_dir, "notes": self.notes,
                "lost": self.lost, "restore_error": self.restore_error, "lossless": self.lossless,
                "ran_otherwise": self.ran_otherwise}

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
        if self.lossless:
            rows.append(f"lossless:   {self.lossless.get('summary') or self.lossless.get('why')}")
        rows += [f"note:       {note}" for note in self.notes]
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

        colour = {"ready": "#1a7f37", "crashed": "#cf222e",
                  "wrong_output": "#cf222e"}.get(self.state, "#9a6700")
        return (f"<div style='border-left:6px solid {colour};padding:4px 10px'>"
                f"<b style='color:{colour}'>{escape(self.headline)}</b><br>"
                f"<b>next step:</b> {escape(self.next_step)}"
                f"<pre style='font-size:90%'>{escape(self.render())}</pre></div>")
