"""Sweep verdicts: answer first, details after.

- :class:`SweepVerdict`: a sweep's answer in one line (cells measured and
  crashed, the crash kinds, the best cell and its speedup) and what to try
  next; it displays itself in notebooks (the sweep notebook's first output).
- :class:`SweepReport`: the verdict with the cells as a DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

import pandas as pd

from ddlab.lab.stats import missing
from ddlab.lab.verdict import PREEMPTED_EXIT

__all__ = ["SweepVerdict", "SweepReport", "sweep_verdict", "TABLE_COLUMNS"]

# the display table: a figure's 95% interval beside it as one short column ("544-612";
# a speedup's ends in "noise" when it holds 1x); every number stays in .frame
TABLE_COLUMNS = ["name", "role", "status", "kind", "budget", "topk_cap", "cuda_graph",
                 "accept_length", "output_tok_s", "tok_s_ci", "speedup", "speedup_ci",
                 "ttft_ms_p50", "tpot_ms_p50", "rounds", "load_warning"]


@dataclass
class SweepVerdict:
    """A sweep's answer first: counts, crash kinds, best cell, next step."""

    sweep_id: str
    status: str
    summary: dict
    resume: str = ""
    crashes: list[dict] = field(default_factory=list)
    error: str = ""     # what stopped a failed sweep (the exception, one line)

    @property
    def headline(self) -> str:
        s = self.summary
        if self.status == "dry-run":
            to_run = s.get("cells", 0) - s.get("measured", 0) - s.get("crashed", 0)
            return f"DRY RUN: {s.get('cells', 0)} cells planned, {to_run} to run; nothing touched the host"
        head = (f"SWEEP {self.status.upper()}: {s.get('cells', 0)} cells, {s.get('measured', 0)} "
                f"measured, {s.get('crashed', 0)} crashed")
        if s.get("hosts"):
            head += f" over {len(s['hosts'])} hosts ({', '.join(s['hosts'])})"
        if s.get("wrong_output"):
            head = (f"{head}, {s['wrong_output']} WRONG OUTPUT (not lossless: "
                    f"{', '.join(s.get('wrong_cells', [])[:3])})")
        if s.get("crash_kinds"):
            head += f" ({', '.join(s['crash_kinds'])})"
        if s.get("scheduler_ended"):
            head += (f", {s['scheduler_ended']} ended by the scheduler, not crashed "
                     f"({', '.join(s.get('ended_kinds', []))})")
        if s.get("preempted"):
            head += f", {s['preempted']} preempted by another ddlab run (not crashed)"
        if s.get("graphs_not_run"):
            head += (f", {len(s['graphs_not_run'])} asked for CUDA graphs but ran WITHOUT them "
                     f"({', '.join(s['graphs_not_run'][:3])})")
        best = s.get("best")
        if best:
            speed = ""
            if not missing(best.get("speedup")):
                speed = (f", {best['speedup']:.2f}x{_interval(best, 'speedup', '.2f')} over no "
                         "speculation" + (" (within noise)" if best.get("within_noise") else ""))
            accept = ("" if missing(best.get("accept_length")) else
                      f", accept length {best['accept_length']:.2f}")
            ties = s.get("ties") or []
            label = "Fastest, a tie within noise" if ties else "Best"
            where = f" on {best['host']}" if s.get("hosts") and best.get("host") else ""
            head += (f". {label}: {best['name']}{_point(best)}{where} at {best['output_tok_s']:.1f}"
                     f"{_interval(best, 'output_tok_s', '.1f')} tok/s{speed}{accept}")
            if ties:
                names = ", ".join(f"{t['name']}{_point(t)}" for t in ties[:4])
                more = f" and {len(ties) - 4} more" if len(ties) > 4 else ""
                head += f"; ties with {names}{more} (95% intervals overlap)"
        if s.get("load_warnings"):
            head += (f"; {len(s['load_warnings'])} cell(s) with a load warning (a busy host or "
                     "a drifting baseline: see load_warning)")
        if self.error:
            head += f"; stopped by {self.error}"
        return head

    @property
    def next_step(self) -> str:
        if self.status == "dry-run":
            return "run it: the same parameters without dry_run"
        if self.status == "preempted":
            return ("another ddlab run has the host now (see above): once it is done, resume "
                    f"it (--wait queues behind that run): {self.resume}")
        if self.status != "done":
            return f"resume it: {self.resume}" if self.resume else "run it again"
        if self.summary.get("wrong_output"):
            return (f"{self.summary['wrong_cells'][0]} serves other tokens than the model "
                    "without speculation: watch it alone (ddlab watch --probe) for the first "
                    "difference; with graphs on, try it with graphs off")
        if self.crashes:
            first = self.crashes[0]
            return f"{first['name']} crashed ({first['kind']}): {first.get('suggestion') or 'see its journal.log'}"
        if self.summary.get("scheduler_ended"):
            return (f"{self.summary['ended_cells'][0]}: the scheduler ended its job "
                    f"({', '.join(self.summary.get('ended_kinds', []))}): raise the profile's "
                    "time_limit (or use another partition), then resume the sweep")
        if self.summary.get("ties"):
            return ("tell the tied cells apart: sweep just them with a tighter ci_target and "
                    "more max_rounds, on a quiet host")
        return "narrow the grid around the best cell, or a tighter ci_target for tighter figures"

    @property
    def exit_code(self) -> int:
        """For scripts: 9 when another ddlab run took the host (preempted), else 0 (a
        sweep that failed or was interrupted raises instead)."""
        return PREEMPTED_EXIT if self.status == "preempted" else 0

    def to_dict(self) -> dict:
        return {"state": self.status, "headline": self.headline, "next_step": self.next_step,
                "notes": self.notes,
                "sweep_id": self.sweep_id, "summary": self.summary, "crashes": self.crashes}

    @property
    def notes(self) -> list[str]:
        """What the reader must know to read the figures, once per sweep."""
        nodes = self.summary.get("nodes")
        if not nodes:
            return []
        return [f"no baseline: Slurm jobs are ephemeral (nothing was stopped or put back); "
                f"cells ran on node(s) {', '.join(nodes)}"]

    def render(self) -> str:
        rows = [self.headline, f"next step: {self.next_step}", *self.notes]
        rows += [f"  crashed: {c['name']}: {c['kind']} in {c.get('phase')}: {c.get('cause')}"
                 for c in self.crashes]
        return "\n".join(rows)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.render())

    def _repr_html_(self) -> str:
        findings = self.crashes or self.summary.get("wrong_output") \
            or self.summary.get("graphs_not_run")
        colour = ("#9a6700" if self.status == "preempted" else "#cf222e" if self.status != "done"
                  else "#9a6700" if findings else "#1a7f37")
        crashes = "".join(f"<li><b>{escape(c['name'])}</b>: {escape(str(c['kind']))} in "
                          f"{escape(str(c.get('phase')))}: {escape(str(c.get('cause')))}</li>"
                          for c in self.crashes)
        return (f"<div style='border-left:6px solid {colour};padding:4px 10px'>"
                f"<b style='color:{colour}'>{escape(self.headline)}</b><br>"
                f"<b>next step:</b> {escape(self.next_step)}"
                + "".join(f"<br><i>{escape(n)}</i>" for n in self.notes)
                + f"<ul>{crashes}</ul></div>")


def _point(best: dict) -> str:
    """`` (budget 16, cap 4, graphs off)``: a variant's name omits what equals its base."""
    words = [f"{label} {best[key]:g}" for key, label in (("budget", "budget"), ("topk_cap", "cap"))
             if not missing(best.get(key))]
    if best.get("cuda_graph") is not None:
        words.append(f"graphs {'on' if best['cuda_graph'] else 'off'}")
    return f" ({', '.join(words)})" if words else ""


def _span(low, high, fmt: str) -> str:
    return f"{low:{fmt}}-{high:{fmt}}" if not (missing(low) or missing(high)) else ""


def _interval(row: dict, key: str, fmt: str) -> str:
    """`` [low-high]``: a figure's 95% interval, empty when unknown."""
    low, high = row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")
    return f" [{low:{fmt}}-{high:{fmt}}]" if not (missing(low) or missing(high)) else ""


def sweep_verdict(frame: pd.DataFrame, *, sweep_id: str, status: str, resume: str = "",
                  error: str = "") -> SweepVerdict:
    from ddlab.lab.results import summarize

    crashed = frame[frame["status"].isin(["crashed", "timeout"])] if not frame.empty else frame
    crashes = [{k: (None if pd.isna(row[k]) else row[k]) for k in
                ("name", "kind", "phase", "cause", "suggestion", "run_dir")}
               for _, row in crashed.iterrows()]
    return SweepVerdict(sweep_id=sweep_id, status=status, summary=summarize(frame),
                        resume=resume, crashes=crashes, error=" ".join(error.split()))




@dataclass
class SweepReport:
    """A sweep's cells and verdict, for display."""

    sweep_id: str
    frame: pd.DataFrame
    verdict: SweepVerdict
    provenance: dict = field(default_factory=dict)  # where and with what it ran (report.provenance)

    def table(self) -> pd.DataFrame:
        """The cells with the columns a reader wants first."""
        if self.frame.empty:
            return self.frame
        shown = self.frame.copy()
        shown["tok_s_ci"] = [_span(r.get("output_tok_s_ci_low"), r.get("output_tok_s_ci_high"), ".0f")
                             for _, r in shown.iterrows()]
        shown["speedup_ci"] = [_span(r.get("speedup_ci_low"), r.get("speedup_ci_high"), ".2f")
                               + (" noise" if r.get("within_noise") is True else "")
                               for _, r in shown.iterrows()]
        for column in ("budget", "topk_cap", "rounds"):
            if column in shown:
                shown[column] = shown[column].astype("Int64")
        cols = [c for c in TABLE_COLUMNS if c in shown.columns]
        return shown[cols].round({"accept_length": 2, "output_tok_s": 1, "speedup": 2,
                                  "ttft_ms_p50": 1, "tpot_ms_p50": 2})

    def _repr_html_(self) -> str:
        return self.verdict._repr_html_()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.verdict.render())
