"""A search's report, answer first: the boundary or the culprit in one sentence,
then what is known and what is not, the trials as a table, a figure of outcome by value.

The trials come from the store (each a cell of the search's sweep, in the order
it ran) joined with the search's own record of them (role, fallback level); so a
search that was interrupted still reports the trials it finished.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from html import escape

import pandas as pd
from matplotlib.figure import Figure

from ddlab.sweeps.search import CUT, describe_point, serves_as_asked
from ddlab.sweeps.search_run import SearchRun, outcome_of
from ddlab.sweeps.store import DONE_STATES, Store

__all__ = ["SearchReport", "search_report", "trials_frame", "outcome_by_value"]

# exit codes: answered; the answer is that nothing fits / nothing to bisect (10: 3 is
# "crashed" for every verb); the budget ran out first (4, as a watch's timeout);
# interrupted; failed (an error stopped it). The table: ddlab.cli.EXIT_CODES.
NOTHING_FOUND_EXIT = 10
EXIT_CODES = {"found": 0, "none": NOTHING_FOUND_EXIT, "budget": 4, "interrupted": 130, "failed": 1,
              "dry-run": 0}
SERVES, SAME, OTHER = "#1a7f37", "#cf222e", "#bc4c00"


@dataclass
class SearchReport:
    """A bisect's or an envelope's answer, trials and figure (``render()``: text,
    ``to_dict()``: JSON, ``exit_code``: for scripts)."""

    kind: str
    search_id: str
    status: str                  # done | budget | interrupted | failed | dry-run
    answer: str
    found: bool = False
    known: list = field(default_factory=list)
    uncertain: list = field(default_factory=list)
    trials: pd.DataFrame = field(default_factory=pd.DataFrame)
    plan: str = ""
    error: str = ""
    failure: str = ""            # bisect: the bad config's failure
    found_after: int = 0         # bisect: the trials it took to find the culprit
    deploy: str = ""             # envelope on a base of another family: its values, deployed

    @property
    def outcome(self) -> str:
        if self.status == "done":
            return "found" if self.found else "none"
        return self.status

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.outcome, 1)

    @property
    def headline(self) -> str:
        kind = self.kind.upper()
        n = len(self.trials)
        if self.status == "dry-run":
            return f"DRY RUN: {kind} planned; nothing touched the host"
        if self.status == "interrupted":
            return f"{kind} INTERRUPTED after {n} trials: {self.answer}"
        if self.status == "failed":
            return f"{kind} FAILED after {n} trials: {self.error or self.answer}"
        if self.status == "budget":
            return f"{kind} OUT OF BUDGET after {n} trials: {self.answer}"
        return f"{kind} ({n} trials): {self.answer}"

    @property
    def next_step(self) -> str:
        if self.status == "dry-run":
            return "run it: the same parameters without dry_run"
        if self.status in ("interrupted", "failed", "budget"):
            more = " with a larger max_trials / max_time_s" if self.status == "budget" else ""
            return f"run the same {self.kind} again{more}: its finished trials are reused"
        if self.kind == "envelope":
            if self.found and self.deploy:
                return f"deploy the envelope's values ({self.deploy}), then sweep around them"
            return ("deploy the envelope's values (ddlab deploy --set ...), then sweep around "
                    "them" if self.found else "widen the ranges, or add a fallback")
        return ("look at the culprit's code path (ddlab deploy --probe-fn ...), or keep it out"
                if self.found else "check the good and the bad config")

    def to_dict(self) -> dict:
        trials = json.loads(self.trials.to_json(orient="records")) if not self.trials.empty else []
        return {"state": self.status, "headline": self.headline, "next_step": self.next_step,
                "kind": self.kind, "search_id": self.search_id, "answer": self.answer,
                "found": self.found, "known": self.known, "uncertain": self.uncertain,
                "failure": self.failure, "found_after": self.found_after,
                "error": self.error, "trials": trials,
                "exit_code": self.exit_code}

    def render(self) -> str:
        rows = [self.headline, f"next step: {self.next_step}"]
        rows += [f"  known: {line}" for line in self.known]
        rows += [f"  uncertain: {line}" for line in self.uncertain]
        if self.plan:
            rows.append(self.plan)
        if not self.trials.empty:
            rows.append(self.table().to_string(index=False, max_colwidth=60))
        return "\n".join(rows)

    def table(self) -> pd.DataFrame:
        """The trials with the columns a reader wants first."""
        if self.trials.empty:
            return self.trials
        first = ["trial", "role", "fallback", "changes", "outcome", "phase", "reused", "name"]
        cols = [c for c in first if c in self.trials.columns and (
            c != "fallback" or self.trials[c].astype(bool).any())]
        return self.trials[cols]

    def figure(self) -> Figure:
        return outcome_by_value(self.trials, kind=self.kind)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.render())

    def _repr_html_(self) -> str:
        colour = SERVES if self.outcome == "found" else SAME
        items = "".join(f"<li>{escape(line)}</li>" for line in self.known + self.uncertain)
        return (f"<div style='border-left:6px solid {colour};padding:4px 10px'>"
                f"<b style='color:{colour}'>{escape(self.headline)}</b><br>"
                f"<b>next step:</b> {escape(self.next_step)}<ul>{items}</ul></div>")


def trials_frame(store: Store, search_id: str, run: SearchRun | None = None) -> pd.DataFrame:
    """One row per finished trial of the search, in the order they ran (``attrs["searched"]``:
    the envelope's keys)."""
    known = {json.dumps(t.point, sort_keys=True, default=str): t for t in (run.trials if run else [])}
    envelope = run is not None and run.plan.kind == "envelope" and run.result is not None
    family = run.plan.family if run is not None else None
    rows = []
    for cell in store.cells(search_id):
        if cell["role"] != "trial" or cell["status"] not in DONE_STATES:
            continue
        point = cell.get("point") or {}
        trial = known.get(json.dumps(point, sort_keys=True, default=str))
        # the search's own reading (an envelope's value the server cut is no "serves")
        outcome = trial.outcome if trial is not None else outcome_of(cell)
        ok, failure = serves_as_asked(outcome, trial.key if trial is not None else "")
        words = ("serves" if ok else f"is {CUT} ({outcome.cut})" if failure == CUT
                 else outcome.words)
        row = {"trial": trial.number if trial else None, "role": trial.role if trial else "trial",
               "level": trial.level if trial else None,
               "fallback": run.result.level_words(trial.level) if envelope and trial else "",
               "changes": describe_point(point, family), "applied": list(point),
               "outcome": words, "failure": failure, "phase": outcome.phase,
               "cause": outcome.cut if failure == CUT else outcome.cause, "note": outcome.note,
               "reused": bool(trial and trial.outcome.reused), "name": cell["name"],
               "config_hash": cell["config_hash"], "run_dir": outcome.run_dir}
        row.update({f"point.{k}": v for k, v in point.items()})
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty and frame["trial"].notna().all():
        frame = frame.sort_values("trial", kind="stable").reset_index(drop=True)
        frame["trial"] = frame["trial"].astype(int)
    elif not frame.empty:
        frame["trial"] = range(1, len(frame) + 1)
    frame.attrs["searched"] = [k.key for k in run.plan.keys] if run is not None else []
    frame.attrs["answer"] = dict(run.result.current) if envelope else {}
    return frame


def search_report(run: SearchRun | None, *, store: Store, search_id: str, kind: str,
                  status: str, error: str = "", plan: str = "") -> SearchReport:
    """The report of a search that ran (``run``) or stopped before it could say (None)."""
    frame = trials_frame(store, search_id, run) if status != "dry-run" else pd.DataFrame()
    result = run.result if run is not None else None
    if result is None:
        answer = ("nothing run yet" if status == "dry-run" else
                  f"{len(frame)} trials finished before it stopped; the answer is not settled")
        return SearchReport(kind=kind, search_id=search_id, status=status, answer=answer,
                            trials=frame, plan=plan, error=error,
                            uncertain=[] if status == "dry-run" else ["the answer"])
    known = [run.reference] if run.reference else []
    if result.spent:
        known.append(f"stopped: {result.spent}")
    failure = getattr(result, "failure", "")
    if kind == "bisect" and failure and not frame.empty:
        other = frame[(frame["failure"] != "") & (frame["failure"] != failure)]
        for kind_, rows in other.groupby("failure"):
            numbers = ", ".join(f"#{n}" for n in rows["trial"])
            known.append(f"trial(s) {numbers} failed differently ({kind_}): not the bad "
                         f"config's {failure}; kept apart, not merged")
    return SearchReport(kind=kind, search_id=search_id, status=status, answer=result.answer,
                        found=result.found, known=known, uncertain=result.uncertain(),
                        trials=frame, plan=plan, error=error, failure=failure,
                        found_after=getattr(result, "found_after", 0),
                        deploy=_deploy_words(run) if kind == "envelope" else "")


def _deploy_words(run: SearchRun) -> str:
    """``ddlab deploy --base vllm-eagle3 --set num_speculative_tokens=2 --set
    cuda_graph=false``: the envelope's answer with the fallbacks it kept, on a base of a
    family other than SGLang ('' for SGLang's, whose next step is unchanged)."""
    from ddlab.config.families import DEFAULT_FAMILY
    from ddlab.config.flags import render_value
    from ddlab.core.redact import MASK, holds_secret, looks_secret
    from ddlab.sweeps.search_plan import _merge

    plan = run.plan
    if plan.family.name == DEFAULT_FAMILY or not run.result.found:
        return ""
    settings = _merge(plan.fixed, run.result.point(), plan.family)
    host = "" if plan.profile.name == "local" else f" --host {plan.profile.name}"
    shown = {k: MASK if looks_secret(k.rpartition(".")[2]) or holds_secret(v) else v
             for k, v in settings.items()}
    return (f"ddlab deploy{host} --base {plan.base}"
            + "".join(f" --set {k}={render_value(v)}" for k, v in shown.items()))


class _SearchFigure(Figure):
    """A Figure that shows itself in a notebook (as PNG) without pyplot."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()


def outcome_by_value(frame: pd.DataFrame, *, kind: str = "envelope") -> Figure:
    """Envelope: each searched key's trials at their value (x, log2 for wide ranges) by
    fallback level (y), green o where it served, red x with the failure where not.
    Bisect: which changes each trial applied (a dot per change), coloured by outcome."""
    if kind == "bisect":
        return _changes_figure(frame)
    searched = frame.attrs.get("searched") or [
        c.removeprefix("point.") for c in frame.columns if c.startswith("point.")]
    keys = [f"point.{k}" for k in searched if f"point.{k}" in frame.columns]
    fig = _SearchFigure(figsize=(5.5 * max(len(keys), 1), 3.2))
    axes = fig.subplots(1, max(len(keys), 1), squeeze=False)[0]
    for ax, column in zip(axes, keys or [None]):
        if column is None:
            ax.text(0.5, 0.5, "no trials yet", ha="center", va="center")
            continue
        _key_panel(ax, _slice(frame, column, keys), column)
    return fig


def _slice(frame: pd.DataFrame, column: str, keys: list[str]) -> pd.DataFrame:
    """The trials of ``column``'s search: those with every other searched key at the value
    the envelope settled on (all trials that set ``column`` when nothing is settled)."""
    rows = frame[frame[column].notna()]
    answer = frame.attrs.get("answer") or {}
    for other in keys:
        value = answer.get(other.removeprefix("point."))
        if other != column and value is not None:
            rows = rows[rows[other] == value]
    return rows


def _key_panel(ax, rows: pd.DataFrame, column: str) -> None:
    levels = rows["level"].fillna(0).astype(int)
    for (_, row), level in zip(rows.iterrows(), levels):
        ok = row["outcome"] == "serves"
        colour = SERVES if ok else SAME
        ax.plot(row[column], level, "o" if ok else "x", ms=9, mew=2, color=colour)
        ax.annotate(f"#{row['trial']}" + ("" if ok else f" {row['failure']}"),
                    (row[column], level), textcoords="offset points", xytext=(4, 6),
                    fontsize=7, color=colour)
    values = rows[column].astype(float)
    if len(values) and values.min() > 0 and values.max() / values.min() >= 8:
        ax.set_xscale("log", base=2)
    shown = sorted(set(levels)) or [0]
    labels = {lv: rows.loc[levels == lv, "fallback"].iloc[0] for lv in set(levels)}
    ax.set_yticks(shown)
    ax.set_yticklabels([labels.get(lv) or f"level {lv}" for lv in shown], fontsize=8)
    ax.set_ylim(-0.5, max(shown) + 0.7)
    key = column.removeprefix("point.")
    ax.set_xlabel(key)
    ax.set_title(f"{key}: outcome by value", fontsize=10)


def _changes_figure(frame: pd.DataFrame) -> Figure:
    keys = [c.removeprefix("point.") for c in frame.columns if c.startswith("point.")] \
        if not frame.empty else []
    fig = _SearchFigure(figsize=(max(4.0, 1.1 * len(keys) + 3), 0.45 * max(len(frame), 2) + 1.6))
    ax = fig.subplots()
    if frame.empty:
        ax.text(0.5, 0.5, "no trials yet", ha="center", va="center")
        return fig
    bad = frame.loc[frame["role"] == "bad", "failure"]
    failure = bad.iloc[0] if not bad.empty else ""
    for y, (_, row) in enumerate(frame.iterrows()):
        colour = SERVES if row["outcome"] == "serves" else SAME if row["failure"] == failure \
            else OTHER
        applied = [x for x, key in enumerate(keys) if key in row["applied"]]
        ax.scatter(applied, [y] * len(applied), s=80, color=colour)
        ax.text(len(keys) - 0.4, y, f"#{row['trial']} {row['role']}: {row['outcome']}",
                va="center", fontsize=8, color=colour)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(keys, rotation=35, ha="right", fontsize=8)
    ax.set_yticks([])
    ax.set_xlim(-0.6, len(keys) + 3.5)
    ax.invert_yaxis()
    ax.set_title("bisect: the changes each trial applied (green serves, red the bad config's "
                 "failure, orange another)", fontsize=9)
    return fig
