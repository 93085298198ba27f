"""``ddlab runs``: every run ddlab left, newest first, as a DataFrame.

Two sources, both read as they are (nothing here writes):

- the store (``outputs/ddlab.sqlite``): one row per sweep, with what it varies
  (``budget 4,16,32 × cap 1,4 × graphs on,off``), its host, its status, and the
  headline and best cell its report would give (counted from its cells);
- the run folders under ``outputs/``: ``<time>-<notebook>-<name>/run.json``
  (``ddlab run``; plain papermill and JupyterLab runs leave one too, with a
  ``kind``), ``<time>-plot-<sweep>/verdict.json`` (``ddlab plot``) and
  ``runs/<time>-<variant>/config.json`` (``ddlab deploy``; ``verdict.json`` once
  watched).

A sweep run through a notebook is one row, the sweep's, pointing at the
notebook's folder (its report). Each row says what to open (``report``: the
run's ``report.html``, else its folder, else ""); ``render()`` shows it relative
to where the user stands when that reads well (``outputs/...``, ``../outputs/...``).
A ``kind`` no run can have is an error naming the kinds, never "no runs yet".
Run folders are read for what they hold: a key
missing, a file half-written or of an older layout leaves a blank, never an
error, so one odd folder cannot hide the others.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd

from ddlab.config.variants import describe_changes
from ddlab.core.errors import ConfigError
from ddlab.core.paths import outputs_dir, project_root
from ddlab.sweeps.store import Store
from ddlab.sweeps.plan import describe_grid
from ddlab.report.notebooks import run_outcome

__all__ = ["KINDS", "RUN_COLUMNS", "Runs", "list_runs", "shown_path"]

RUN_COLUMNS = ["id", "kind", "what", "host", "state", "headline", "best", "when", "via", "folder",
               "report"]
# The kinds every project may have (a notebook's name is a kind too: poll, ...).
KINDS = ("sweep", "deploy", "plot", "bisect", "envelope")


class Runs(pd.DataFrame):
    """The runs, newest first (:data:`RUN_COLUMNS`); ``render()`` is the text ``ddlab runs``
    prints: per run, a line with when, kind, state, host and id, then what and the verdict."""

    @property
    def _constructor(self):
        return Runs

    def render(self) -> str:
        if self.empty:
            return "no runs yet in this project's outputs/ (ddlab run sweep, ddlab deploy ...)"
        blocks = []
        for _, run in self.iterrows():
            when = run["when"].strftime("%Y-%m-%d %H:%M") if pd.notna(run["when"]) else "?"
            rows = [f"{when}  {run['kind']:<8} {run['state'] or '?':<12} {run['host'] or '-':<8} "
                    f"{run['id']}"]
            rows += [f"    {text}" for text in (run["what"], run["headline"]) if text]
            if run["best"] and run["best"].split()[0] not in (run["headline"] or ""):
                rows.append(f"    best: {run['best']}")
            if run["report"]:
                label = "report" if run["report"].endswith(".html") else "folder"
                rows.append(f"    {label}: {shown_path(run['report'])}")
            blocks.append("\n".join(rows))
        return "\n".join(blocks)


def list_runs(*, kind: str | None = None, last: int | None = None,
              outputs: str | Path | None = None, store: Store | None = None) -> Runs:
    """Every run (``kind``: only that kind; ``last``: only the newest so many)."""
    root = Path(outputs) if outputs else outputs_dir()
    folders = [_folder_row(path) for path in _run_folders(root)]
    rows = [row for row in folders if row]
    if store is None and (root / "ddlab.sqlite").is_file():
        store = Store(root / "ddlab.sqlite")
    if store is not None:
        rows = _with_sweeps(rows, store)
    for row in rows:
        row["report"] = _report_of(row, root)
    frame = Runs(rows, columns=RUN_COLUMNS)
    frame["when"] = pd.to_datetime(frame["when"], utc=True)
    if kind:
        _check_kind(kind, set(frame["kind"]))
        frame = frame[frame["kind"] == kind]
    frame = frame.sort_values("when", ascending=False, na_position="last", kind="stable")
    frame = Runs(frame.head(last) if last else frame).reset_index(drop=True)
    for n in frame.index[frame["headline"].isna()]:  # a sweep kept: its verdict, only now
        frame.loc[n, ["headline", "best"]] = _sweep_verdict(store, frame.loc[n])
    return frame


def _check_kind(kind: str, present: set) -> None:
    """``kind`` must be one a run can have: ConfigError naming them otherwise."""
    notebooks = {p.stem for p in (project_root() / "notebooks").glob("*.ipynb")}
    known = sorted(set(KINDS) | notebooks | {k for k in present if isinstance(k, str)})
    if kind not in known:
        raise ConfigError(f"kind={kind!r}: not a kind of run",
                          fix=f"choose one of: {', '.join(known)}", value=kind)


def _report_of(row: dict, root: Path) -> str:
    """What to open for a run: its report.html, else its folder (a deploy's, a plot's
    figures, a CLI sweep's cells), else ""."""
    folder = row.get("folder") or ""
    if not folder and row.get("kind") in ("sweep", "bisect", "envelope"):
        folder = str(root / "sweeps" / str(row["id"]))
    if folder and Path(folder, "report.html").is_file():
        return str(Path(folder, "report.html"))
    return folder if folder and Path(folder).is_dir() else ""


def shown_path(path: str | Path) -> str:
    """``path`` as a person types it from here: relative to the current folder when it
    is inside it or one folder up (``outputs/...``, ``../outputs/...``), else absolute."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return relative if not relative.startswith(f"..{os.sep}..") else str(path)


# --- the store's sweeps --------------------------------------------------------------


def _with_sweeps(rows: list[dict], store: Store) -> list[dict]:
    """The store's sweeps as rows; a notebook run of a stored sweep joins its row."""
    sweeps = {record["id"]: _sweep_row(record) for record in store.sweeps()}
    out = []
    for row in rows:
        sweep = sweeps.get(row.pop("sweep_id", None) or "")
        if sweep is not None and row["kind"] == sweep["kind"]:  # the newest folder wins
            if not sweep["folder"] or (row["when"] or "") > (sweep["_folder_when"] or ""):
                sweep.update(folder=row["folder"], via=row["via"], _folder_when=row["when"])
            continue
        out.append(row)
    for sweep in sweeps.values():
        del sweep["_folder_when"]
    return out + list(sweeps.values())


def _sweep_row(record: dict) -> dict:
    """A stored sweep; its headline and best cell are counted later, for the rows kept."""
    inputs = record.get("grid") or {}
    return {"id": record["id"], "kind": str(inputs.get("search") or "sweep"),
            "what": _searched(inputs) if inputs.get("search") else
            describe_grid(inputs.get("grid") or {}, inputs.get("extra") or ()),
            "host": record["host"], "state": record["status"], "headline": None, "best": None,
            "when": _when(record.get("created_utc")), "via": "", "folder": "",
            "_folder_when": None}


def _sweep_verdict(store: Store, row) -> list[str]:
    """``[headline, best]`` of a stored sweep, as its report would say them."""
    from ddlab.sweeps.results import load_cells
    from ddlab.report.verdicts import sweep_verdict

    record = store.sweep(row["id"]) or {}
    verdict = sweep_verdict(load_cells(row["id"], store=store), sweep_id=row["id"],
                            status=row["state"], resume=record.get("resume_command") or "",
                            error=record.get("error") or "")
    return [verdict.headline, _best(verdict.summary)]


def _searched(inputs: dict) -> str:
    """What a search (``ddlab.sweeps.search_run``, stored as a sweep) looked through."""
    if inputs.get("search") == "bisect":
        return f"bisect: {len(inputs.get('changes') or [])} changes between a good and a bad config"
    keys = [f"{k[0]} {k[1]}..{k[2]}" for k in inputs.get("keys") or []
            if isinstance(k, (list, tuple)) and len(k) >= 3]
    return f"{inputs.get('search')}: {', '.join(keys) or '?'}"


def _best(summary: dict) -> str:
    """``local-b16 at 2089 tok/s, 2.28x`` (``, a tie`` when others are within noise)."""
    best = summary.get("best") or {}
    if not best.get("name"):
        return ""
    words = [best["name"]]
    if _number(best.get("output_tok_s")):
        words.append(f"at {best['output_tok_s']:.0f} tok/s")
    if _number(best.get("speedup")):
        words[-1] += f", {best['speedup']:.2f}x"
    if summary.get("ties"):
        words.append(f"(a tie with {len(summary['ties'])} more)")
    return " ".join(words)


# --- run folders -----------------------------------------------------------------------


def _run_folders(root: Path) -> list[Path]:
    """Folders that hold a run: notebook runs and ``ddlab plot`` folders under ``root``,
    deploys under ``root/runs``."""
    found = [p.parent for p in root.glob("*/run.json")]
    found += [p.parent for p in root.glob("*-plot-*/verdict.json") if p.parent not in found]
    found += [p.parent for p in (root / "runs").glob("*/config.json")]
    return found


def _folder_row(folder: Path) -> dict | None:
    run, verdict = _json(folder / "run.json"), _json(folder / "verdict.json")
    if (folder / "run.json").is_file():
        return _notebook_row(folder, run, verdict)
    if (folder / "config.json").is_file():
        return _deploy_row(folder, _json(folder / "config.json"), verdict)
    if verdict:
        return _plot_row(folder, verdict)
    return None


def _notebook_row(folder: Path, run: dict, verdict: dict) -> dict:
    """A notebook run: ``ddlab run`` (no ``kind`` in run.json), papermill or JupyterLab."""
    # <time>-<notebook>-<name>/ when run.json does not say (half-written, another writer's)
    notebook = Path(str(run.get("notebook") or "")).stem or (folder.name.split("-") + ["?"])[1]
    params = run.get("parameters") if isinstance(run.get("parameters"), dict) else {}
    status = str(run.get("status") or "?")
    return {"id": folder.name, "kind": notebook, "what": _parameters(params),
            "host": str(params.get("host") or verdict.get("host") or ""),
            "state": run.get("outcome") or run_outcome(status, verdict),
            "headline": str(run.get("headline") or verdict.get("headline") or run.get("error")
                            or ""),
            "best": _best(verdict.get("summary") or {}),
            "when": _when(run.get("started_utc")) or _stamp_of(folder),
            "via": str(run.get("kind") or "ddlab run"), "folder": str(folder),
            "sweep_id": verdict.get("sweep_id")}


def _deploy_row(folder: Path, config: dict, verdict: dict) -> dict:
    """``ddlab deploy`` (or the deploy notebook): the variant, then its watch's verdict."""
    changes = {k: tuple(v) for k, v in (config.get("changes") or {}).items()
               if isinstance(v, (list, tuple)) and len(v) == 2}
    name = str(config.get("name") or folder.name)
    return {"id": folder.name, "kind": "deploy",
            "what": f"{name}: {describe_changes(changes)}" if changes else name,
            "host": str(config.get("host") or verdict.get("host") or ""),
            "state": str(verdict.get("state") or "deployed"),
            "headline": str(verdict.get("headline") or f"deployed {name}; not watched (yet)"),
            "best": "", "when": _stamp_of(folder), "via": "", "folder": str(folder)}


def _plot_row(folder: Path, verdict: dict) -> dict:
    """``ddlab plot``: the figures of a stored sweep, its verdict beside them."""
    return {"id": folder.name, "kind": "plot", "what": f"sweep {verdict.get('sweep_id', '?')}",
            "host": "", "state": str(verdict.get("state") or ""),
            "headline": str(verdict.get("headline") or ""),
            "best": _best(verdict.get("summary") or {}), "when": _stamp_of(folder),
            "via": "ddlab plot", "folder": str(folder)}


def _parameters(params: dict) -> str:
    """``budget=[4, 16], topk_cap=1``: a run's parameters, ddlab's own ``run_dir`` left out."""
    shown = [f"{k}={v}" for k, v in params.items() if k != "run_dir"]
    text = ", ".join(shown)
    return text if len(text) <= 100 else text[:99] + "…"


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _when(text) -> str | None:
    """An ISO UTC time (``2026-12-01T01:45:00Z``) from either form ddlab writes."""
    for form in ("%Y%m%dT%H%M%SZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.strptime(str(text), form))
        except ValueError:
            continue
    return None


def _stamp_of(folder: Path) -> str | None:
    """The time a run folder's name starts with (``20261201T014500Z-...``)."""
    return _when(folder.name.split("-", 1)[0])


def _number(value) -> bool:
    return isinstance(value, (int, float)) and value == value
