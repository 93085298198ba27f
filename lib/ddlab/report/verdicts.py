"""Sweep verdicts: answer first, details after.

- :class:`SweepVerdict`: a sweep's answer in one line of at most
  :data:`HEADLINE_MAX` characters (its state, the counts, the best cell or "no
  winner within noise", how many warnings), then the details (the best cell in
  full, the ties, each warning: load, speedups that have no baseline, drift not
  measured, graphs asked for but not run, sweeps of other workloads compared), then
  what to try next; it displays itself in notebooks (the sweep notebook's first
  output). However many cells tie or warn, the headline stays one line.
- :class:`SweepReport`: the verdict with the cells as a DataFrame; ``table()`` is
  the display table: no NaN, None or <NA> in it (blank), a speedup without a
  baseline is ``n/a`` with its note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from numbers import Real

import pandas as pd

from ddlab.config.families import FAMILIES, family_named
from ddlab.lab.stats import missing
from ddlab.lab.verdict import PREEMPTED_EXIT
from ddlab.report.workload_words import (
    workload_details,
    workload_headline,
    workload_next_step,
    workload_warnings,
)

__all__ = ["SweepVerdict", "SweepReport", "sweep_verdict", "TABLE_COLUMNS", "HEADLINE_MAX"]

# the display table: a figure's 95% interval beside it as one short column ("544-612";
# a speedup's ends in "noise" when it holds 1x); every number stays in .frame
TABLE_COLUMNS = ["name", "role", "status", "kind", "budget", "topk_cap", "cuda_graph",
                 "accept_length", "output_tok_s", "tok_s_ci", "speedup", "speedup_ci",
                 "ttft_ms_p50", "tpot_ms_p50", "rounds", "load_warning", "speedup_note",
                 "bracket_note"]

HEADLINE_MAX = 160  # one line in a terminal, a banner and the index
_NAMES_SHOWN = 6    # cells named in a detail line before "and N more"


@dataclass
class SweepVerdict:
    """A sweep's answer first: counts, crash kinds, best cell, warnings, next step."""

    sweep_id: str
    status: str
    summary: dict
    resume: str = ""
    crashes: list[dict] = field(default_factory=list)
    error: str = ""     # what stopped a failed sweep (the exception, one line)
    what: str = ""      # the sweep in words, ``local b4.16.32 x cap1.4 x graphs`` (titles)
    cautions: list[str] = field(default_factory=list)  # warnings from outside its cells
    # pool members whose production could not be put back: host, baseline, why, command
    hosts_not_back: list[dict] = field(default_factory=list)
    # a workload sweep's answer (several concurrency levels): levels, crossover per config,
    # best per level, accept length per prompt set (ddlab.report.workload_words)
    workload: dict = field(default_factory=dict)

    @property
    def headline(self) -> str:
        """One line, at most HEADLINE_MAX characters; :attr:`details` hold the rest."""
        s = self.summary
        if self.status == "dry-run":
            to_run = s.get("cells", 0) - s.get("measured", 0) - s.get("crashed", 0)
            return f"DRY RUN: {s.get('cells', 0)} cells planned, {to_run} to run; nothing touched the host"
        state = f"SWEEP {self.status.upper()}: "
        count = len(self.warnings)
        tail = f"; {count} warning{'s' if count != 1 else ''}" if count else ""
        stopped = f"; stopped by {self.error}" if self.error else ""
        if self.hosts_not_back:  # never cut: production is down there
            hosts = ", ".join(d["host"] for d in self.hosts_not_back)
            stopped = f"; production NOT put back on {hosts}{stopped}"
        bests = ((self._best(True), self._best(False)) if not self.workload else
                 (workload_headline(self.workload, True), workload_headline(self.workload, False)))
        for counts, best in ((self._counts(True, True), bests[0]),
                             (self._counts(False, True), bests[0]),
                             (self._counts(False, False), bests[0]),
                             (self._counts(False, False), bests[1])):
            head = f"{state}{counts}{best}{tail}"
            if len(head + stopped) <= HEADLINE_MAX:
                return head + stopped
        return _cut(head + stopped, HEADLINE_MAX)

    def _counts(self, full: bool, hosts: bool) -> str:
        """``7 cells, 6 measured, 1 crashed (cuda_graph_replay), 1 WRONG OUTPUT (not
        lossless) over 3 hosts (h1, h2, h3)``; not ``full``: no kinds; not ``hosts``: no
        host names."""
        s = self.summary
        words = f"{s.get('cells', 0)} cells, {s.get('measured', 0)} measured, {s.get('crashed', 0)} crashed"
        if full and s.get("crash_kinds"):
            words += f" ({', '.join(s['crash_kinds'])})"
        if s.get("wrong_output"):
            words += f", {s['wrong_output']} WRONG OUTPUT (not lossless)"
        if s.get("scheduler_ended"):
            words += f", {s['scheduler_ended']} ended by the scheduler" + (
                f", not crashed ({', '.join(s.get('ended_kinds', []))})" if full else "")
        if s.get("preempted"):
            words += f", {s['preempted']} preempted" + (" (not crashed)" if full else "")
        if s.get("hosts"):
            words += f" over {len(s['hosts'])} hosts" + (f" ({', '.join(s['hosts'])})" if hosts else "")
        if self.workload.get("levels"):
            levels = self.workload["levels"]
            words = words.replace(" cells,", f" cells x {len(levels)} levels"
                                  + (f" ({levels[0]}-{levels[-1]})," if full else ","), 1)
        return words

    def _best(self, full: bool) -> str:
        """``. Best: name on host at 500.0 tok/s, 2.50x``, or, when the fastest ties with
        others, ``. No winner within noise (4 tie; fastest name at 840.0 tok/s)``."""
        s = self.summary
        best = s.get("best")
        if not best:
            return ""
        where = f" on {best['host']}" if s.get("hosts") and best.get("host") else ""
        name = best["name"] if full else _cut(best["name"], 32)
        speed = "" if missing(best.get("speedup")) or not full else f", {best['speedup']:.2f}x"
        if speed and best.get("within_noise"):
            speed += " (within noise)"
        ties = s.get("ties") or []
        if ties:
            return (f". No winner within noise ({len(ties) + 1} tie; fastest {name}{where} "
                    f"at {best['output_tok_s']:.1f} tok/s)")
        return f". Best: {name}{where} at {best['output_tok_s']:.1f} tok/s{speed}"

    @property
    def warnings(self) -> list[str]:
        """What makes a figure suspect or a comparison unfair, one line each."""
        s = self.summary
        out = []
        if s.get("graphs_not_run"):
            out.append(f"{_names(s['graphs_not_run'])} asked for CUDA graphs but ran WITHOUT them: "
                       "their figures are eager ones, never the best")
        for note, names in (s.get("no_speedup") or {}).items():
            out.append(f"speedup {note}: {_names(names)}")
        for name, note in (s.get("drift_not_measured") or {}).items():
            out.append(note.replace(": its ", f": {name}'s ", 1))
        if s.get("load_warnings"):
            out.append(f"load: {_names(s['load_warnings'])} measured on a busy host or against a "
                       "drifting baseline: their figures are suspect (see load_warning)")
        return out + workload_warnings(self.workload) + list(self.cautions)

    @property
    def details(self) -> list[str]:
        """The lines below the headline: the best cell in full, ties, wrong output, the
        cells the scheduler ended, each warning, what stopped the sweep."""
        s = self.summary
        rows = workload_details(self.workload) if self.workload else []
        best = s.get("best") if not self.workload else None  # per level, above
        if best:
            label = "fastest, a tie within noise" if s.get("ties") else "best"
            rows.append(f"{label}: {_described(best, s.get('hosts'))}")
        if s.get("ties") and not self.workload:
            shown = "; ".join(_described(t, s.get("hosts"), brief=True)
                              for t in s["ties"][:_NAMES_SHOWN])
            more = (f"; and {len(s['ties']) - _NAMES_SHOWN} more" if len(s["ties"]) > _NAMES_SHOWN
                    else "")
            rows.append(f"ties with it (95% intervals overlap): {shown}{more}")
        if s.get("wrong_output"):
            rows.append(f"WRONG OUTPUT (not lossless, never the best): {_names(s['wrong_cells'])}")
        if s.get("scheduler_ended"):
            rows.append(f"ended by the scheduler, not crashed ({', '.join(s.get('ended_kinds', []))}): "
                        f"{_names(s['ended_cells'])}")
        if s.get("pending") and self.status not in ("done", "dry-run"):
            rows.append(f"not run yet: {s['pending']} cell{'s' if s['pending'] != 1 else ''} "
                        "(pending; resume runs them)")
        rows += [f"production not put back: {d['words']}" for d in self.hosts_not_back]
        rows += [f"warning: {w}" for w in self.warnings]
        if self.error:
            rows.append(f"stopped by: {self.error}")
        return rows + self.notes

    @property
    def next_step(self) -> str:
        if self.status == "dry-run":
            return "run it: the same parameters without dry_run"
        if self.hosts_not_back:
            commands = "; ".join(f"{d['command']} (production of {d['host']})"
                                 for d in self.hosts_not_back)
            then = (f"; then resume it: {self.resume}" if self.resume and
                    self.status not in ("done", "dry-run") else "")
            return f"put production back when the host answers: {commands}{then}"
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
        if self.workload:
            return workload_next_step(self.workload)
        if self.summary.get("ties"):
            return ("tell the tied cells apart: sweep just them with a tighter ci_target and "
                    "more max_rounds, on a quiet host")
        return "narrow the grid around the best cell, or a tighter ci_target for tighter figures"

    @property
    def exit_code(self) -> int:
        """For scripts: 1 when a host's production could not be put back (ddlab's code for
        "the host is not back", as a watch whose restore failed) or the sweep failed, 9
        when another ddlab run took the host (preempted), 130 interrupted, else 0."""
        if self.hosts_not_back:
            return 1
        return {"failed": 1, "interrupted": 130, "preempted": PREEMPTED_EXIT}.get(self.status, 0)

    def to_dict(self) -> dict:
        return {"state": self.status, "headline": self.headline, "details": self.details,
                "warnings": self.warnings, "next_step": self.next_step, "notes": self.notes,
                "what": self.what, "sweep_id": self.sweep_id, "summary": self.summary,
                "crashes": self.crashes, "hosts_not_back": self.hosts_not_back,
                "exit_code": self.exit_code, **({"workload": self.workload} if self.workload else {})}

    @property
    def notes(self) -> list[str]:
        """What the reader must know to read the figures, once per sweep."""
        nodes = self.summary.get("nodes")
        if not nodes:
            return []
        return [f"no baseline: Slurm jobs are ephemeral (nothing was stopped or put back); "
                f"cells ran on node(s) {', '.join(nodes)}"]

    def render(self) -> str:
        """The headline, the details, the next step, then each crash."""
        rows = [self.headline, *self.details, f"next step: {self.next_step}"]
        rows += [f"  crashed: {c['name']}: {c['kind']} in {c.get('phase')}: {c.get('cause')}"
                 for c in self.crashes]
        return "\n".join(rows)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.render())

    def _repr_html_(self) -> str:
        from ddlab.report.html import banner_word

        word, colour = banner_word("ok" if self.status in ("done", "dry-run") else self.status,
                                   self.to_dict())
        crashes = "".join(f"<li><b>{escape(c['name'])}</b>: {escape(str(c['kind']))} in "
                          f"{escape(str(c.get('phase')))}: {escape(str(c.get('cause')))}</li>"
                          for c in self.crashes)
        details = "".join(f"<li>{escape(line)}</li>" for line in self.details)
        return (f"<div class='ddlab-verdict-output' style='border-left:6px solid {colour};"
                f"padding:4px 10px'><b style='color:{colour}'>{escape(word)}: "
                f"{escape(self.headline)}</b><ul style='margin:2px 0'>{details}</ul>"
                f"<b>next step:</b> {escape(self.next_step)}"
                + (f"<ul>{crashes}</ul>" if crashes else "") + "</div>")


def _names(names: list) -> str:
    """``a, b, c and 4 more (7 cells)``."""
    names = list(names)
    shown = ", ".join(map(str, names[:_NAMES_SHOWN]))
    more = f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
    return f"{shown}{more} ({len(names)} cell{'s' if len(names) != 1 else ''})"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _described(row: dict, hosts=None, *, brief: bool = False) -> str:
    """``name (budget 16, cap 4, graphs off) on h1 at 500.0 [490.1-510.2] tok/s, 2.50x
    [2.40-2.61] over no speculation, accept length 5.00`` (or the speedup's note);
    ``brief``: up to the tok/s."""
    where = f" on {row['host']}" if hosts and row.get("host") else ""
    if brief:
        return (f"{row['name']}{_point(row)}{where} at {row['output_tok_s']:.1f}"
                f"{_interval(row, 'output_tok_s', '.1f')} tok/s")
    speed = ""
    if not missing(row.get("speedup")):
        speed = (f", {row['speedup']:.2f}x{_interval(row, 'speedup', '.2f')} over no "
                 "speculation" + (" (within noise)" if row.get("within_noise") else ""))
    elif row.get("speedup_note"):
        speed = f", speedup {row['speedup_note']}"
    accept = ("" if missing(row.get("accept_length")) else
              f", {_accept_words(row)} {row['accept_length']:.2f}")
    return (f"{row['name']}{_point(row)}{where} at {row['output_tok_s']:.1f}"
            f"{_interval(row, 'output_tok_s', '.1f')} tok/s{speed}{accept}")


def _family(frame: pd.DataFrame):  # a sweep's family: its cells say it (older: none, SGLang)
    named = frame["family"].dropna().astype(str) if "family" in frame else ()
    return FAMILIES.get(next(iter(named), ""), family_named(None))


def _table_columns(frame: pd.DataFrame) -> list[str]:
    """TABLE_COLUMNS with the sweep's family's knobs in place of DDTree's budget and cap."""
    at = TABLE_COLUMNS.index("budget")
    return [*TABLE_COLUMNS[:at], *_family(frame).table_knobs, *TABLE_COLUMNS[at + 2:]]


def _accept_words(row: dict) -> str:  # the acceptance figure in the cell's family's words
    return FAMILIES.get(str(row.get("family")), family_named(None)).acceptance


def _point(best: dict) -> str:
    """`` (budget 16, cap 4, graphs off)``: a variant's name omits what equals its base
    (a vLLM cell: `` (num_speculative_tokens 4, method eagle3, graphs off)``)."""
    keys = ("budget", "cap", "num_speculative_tokens", "method")
    words = [f"{key} {best[k]}" if isinstance(best[k], str) else f"{key} {best[k]:g}"
             for k, key in zip(("budget", "topk_cap", *keys[2:]), keys) if not missing(best.get(k))]
    if best.get("cuda_graph") is not None:
        words.append(f"graphs {'on' if best['cuda_graph'] else 'off'}")
    return f" ({', '.join(words)})" if words else ""


_FORMATS = {"accept_length": ".2f", "output_tok_s": ".1f", "speedup": ".2f",
            "ttft_ms_p50": ".1f", "tpot_ms_p50": ".2f", "budget": "g", "topk_cap": "g",
            "num_speculative_tokens": "g", "rounds": ".0f"}


def _shown(column: str, value) -> str:
    """A table cell as text: blank when unknown, a figure rounded, graphs on / off."""
    if missing(value) or value is pd.NA:
        return ""
    if column == "cuda_graph":
        return "on" if value else "off"
    if column in _FORMATS and isinstance(value, Real) and not isinstance(value, bool):
        return f"{value:{_FORMATS[column]}}"
    return str(value)


def _span(low, high, fmt: str) -> str:
    return f"{low:{fmt}}-{high:{fmt}}" if not (missing(low) or missing(high)) else ""


def _interval(row: dict, key: str, fmt: str) -> str:
    """`` [low-high]``: a figure's 95% interval, empty when unknown."""
    low, high = row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")
    return f" [{low:{fmt}}-{high:{fmt}}]" if not (missing(low) or missing(high)) else ""


def sweep_verdict(frame: pd.DataFrame, *, sweep_id: str, status: str, resume: str = "",
                  error: str = "", what: str = "", cautions=(), not_back=(),
                  workload: dict | None = None) -> SweepVerdict:
    """The verdict of a sweep's cells (``frame``: :func:`ddlab.sweeps.results.load_cells`'s);
    ``what``: the sweep in words; ``cautions``: warnings from outside its cells;
    ``not_back``: pool members whose production could not be put back; ``workload``: a
    workload sweep's answer (:func:`ddlab.report.workload_words.workload_answer`)."""
    from ddlab.sweeps.results import summarize

    crashed = frame[frame["status"].isin(["crashed", "timeout"])] if not frame.empty else frame
    crashes = [{k: (None if pd.isna(row[k]) else row[k]) for k in
                ("name", "kind", "phase", "cause", "suggestion", "run_dir")}
               for _, row in crashed.iterrows()]
    return SweepVerdict(sweep_id=sweep_id, status=status, summary=summarize(frame),
                        resume=resume, crashes=crashes, error=" ".join(error.split()),
                        what=what, cautions=list(cautions), hosts_not_back=list(not_back),
                        workload=dict(workload or {}))


@dataclass
class SweepReport:
    """A sweep's cells and verdict, for display."""

    sweep_id: str
    frame: pd.DataFrame
    verdict: SweepVerdict
    provenance: dict = field(default_factory=dict)  # where and with what it ran (report.provenance)
    # a workload sweep: a row per cell and level (ddlab.sweeps.levels.load_levels); else empty
    levels: pd.DataFrame = field(default_factory=pd.DataFrame)

    def table(self) -> pd.DataFrame:
        """The cells with the columns a reader wants first, as text ready to show: figures
        rounded, a 95% interval beside its figure, graphs ``on`` / ``off``, a speedup
        without its baseline ``n/a`` (``speedup_note`` says why), anything unknown blank
        (never NaN, None or <NA>)."""
        if self.frame.empty:
            return self.frame
        shown = self.frame.copy()
        shown["tok_s_ci"] = [_span(r.get("output_tok_s_ci_low"), r.get("output_tok_s_ci_high"), ".0f")
                             for _, r in shown.iterrows()]
        shown["speedup_ci"] = [_span(r.get("speedup_ci_low"), r.get("speedup_ci_high"), ".2f")
                               + (" noise" if r.get("within_noise") is True else "")
                               for _, r in shown.iterrows()]
        cols = [c for c in _table_columns(shown) if c in shown.columns]
        out = pd.DataFrame({c: [_shown(c, v) for v in shown[c]] for c in cols}, index=shown.index)
        if "speedup_note" in shown:
            out["speedup"] = [v or ("n/a" if isinstance(note, str) and note else "")
                              for v, note in zip(out["speedup"], shown["speedup_note"])]
        return out.rename(columns={"accept_length": _family(shown).table_accept})

    def _repr_html_(self) -> str:
        return self.verdict._repr_html_()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.verdict.render())
