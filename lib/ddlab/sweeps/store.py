"""The results store: one SQLite file, ``outputs/ddlab.sqlite``.

Three tables:

- ``sweeps``: one row per sweep (host, base, grid, options, status, the
  command that resumes it);
- ``runs``: one row per deploy + watch (+ bench) of a variant, inside a sweep
  or not: full config (secrets masked), verdict, metrics, run folder;
- ``cells``: a sweep's plan, one row per grid point, keyed by config hash,
  pointing at the run that finished it.

Every write is its own transaction, committed before the call returns, in
WAL mode: a process killed with SIGKILL loses at most the cell it was in, and
the file opens cleanly afterwards. Several processes may use it at once (a
sweep and a plot notebook, sweeps on two hosts): a write waits up to
``BUSY_TIMEOUT_S`` for another's, and so does opening a new store. Loaders
return pandas DataFrames for notebooks and plots.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from ddlab.core.errors import ConfigError, StoreError
from ddlab.core.paths import outputs_dir
from ddlab.core.redact import redact, redact_text

__all__ = ["Store", "connect", "default_path", "find_sweep", "integrity_ok", "DONE_STATES"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS sweeps (
    id TEXT PRIMARY KEY,
    created_utc TEXT NOT NULL,
    host TEXT NOT NULL,
    base TEXT NOT NULL,
    grid TEXT NOT NULL,
    options TEXT NOT NULL,
    status TEXT NOT NULL,
    ended_utc TEXT,
    resume_command TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sweep_id TEXT REFERENCES sweeps(id),
    variant TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    host TEXT NOT NULL,
    config TEXT NOT NULL,
    state TEXT NOT NULL,
    verdict TEXT,
    metrics TEXT,
    run_dir TEXT,
    started_utc TEXT NOT NULL,
    ended_utc TEXT
);
CREATE TABLE IF NOT EXISTS cells (
    sweep_id TEXT NOT NULL REFERENCES sweeps(id),
    config_hash TEXT NOT NULL,
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    role TEXT NOT NULL DEFAULT 'grid',
    point TEXT NOT NULL,
    config TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    run_id INTEGER REFERENCES runs(id),
    PRIMARY KEY (sweep_id, config_hash)
);
"""

# Columns added after a table was first made: (table, column, type); a store made
# before gets them on open (ALTER TABLE), so old stores keep working.
ADDED_COLUMNS = (("sweeps", "error", "TEXT"),)

BUSY_TIMEOUT_S = 30.0  # how long a write (or opening a new store) waits for another process

# A cell in one of these states is finished: resume skips it (``ready``: a search's
# trial, watched and probed but not benchmarked).
DONE_STATES = ("measured", "ready", "wrong_output", "crashed", "timeout")


def default_path() -> Path:
    return outputs_dir() / "ddlab.sqlite"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _dumps(obj: Any) -> str:
    return json.dumps(redact(obj), sort_keys=True, default=str)


class Store:
    """A connection to the store; every method commits before it returns."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self._set_up()
                return
            except sqlite3.OperationalError as err:
                # Two processes opening a new store at once: switching it to WAL is refused
                # at once ("database is locked"), without SQLite's busy wait. Wait here.
                if "locked" in str(err) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                self._refuse(err)
            except sqlite3.DatabaseError as err:
                self._refuse(err)

    def _set_up(self) -> None:
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        for table, column, kind in ADDED_COLUMNS:
            have = {row["name"] for row in self.db.execute(f"PRAGMA table_info({table})")}
            try:
                if column not in have:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            except sqlite3.OperationalError as err:  # another process added it meanwhile
                if "duplicate column" not in str(err):
                    raise

    def _refuse(self, err: sqlite3.DatabaseError):
        self.db.close()
        raise StoreError(f"store {str(self.path)!r}: {err}", fix="move the file aside and run again",
                         path=str(self.path)) from err

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
        with self.db:  # one transaction, committed on exit
            return self.db.execute(sql, args)

    # --- sweeps ----------------------------------------------------------

    def add_sweep(self, sweep_id: str, *, host: str, base: str, grid: dict, options: dict,
                  resume_command: str = "") -> None:
        self._write("INSERT INTO sweeps (id, created_utc, host, base, grid, options, status,"
                    " resume_command) VALUES (?, ?, ?, ?, ?, ?, 'running', ?)",
                    (sweep_id, _now(), host, base, _dumps(grid), _dumps(options), resume_command))

    def set_sweep_status(self, sweep_id: str, status: str, *, error: str = "") -> None:
        """A sweep that runs (again) has no end time; any other status ends it now.
        ``error``: what stopped a failed one (one line; a later status clears it)."""
        self._write("UPDATE sweeps SET status = ?, ended_utc = ?, error = ? WHERE id = ?",
                    (status, None if status == "running" else _now(),
                     redact_text(" ".join(error.split())) or None, sweep_id))

    def forget_unstarted_sweep(self, sweep_id: str) -> bool:
        """Remove a sweep that never started a cell (no run of it, not even a lost one),
        with its planned cells: it failed to start, and an empty failed sweep would
        only stand in the way of ``latest``. True when it was removed."""
        self.db.execute("BEGIN IMMEDIATE")  # one transaction: a run may not start meanwhile
        try:
            if self.db.execute("SELECT 1 FROM runs WHERE sweep_id = ? LIMIT 1",
                               (sweep_id,)).fetchone():
                self.db.execute("ROLLBACK")
                return False
            self.db.execute("DELETE FROM cells WHERE sweep_id = ?", (sweep_id,))
            removed = self.db.execute("DELETE FROM sweeps WHERE id = ?", (sweep_id,)).rowcount
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return removed > 0

    def sweeps(self) -> list[dict]:
        """Every sweep's record, newest first (``ddlab runs``)."""
        rows = self.db.execute("SELECT * FROM sweeps ORDER BY created_utc DESC, rowid DESC")
        return [_decode(row, ("grid", "options")) for row in rows.fetchall()]

    def sweep(self, sweep_id: str) -> dict | None:
        row = self.db.execute("SELECT * FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
        return _decode(row, ("grid", "options")) if row else None

    def latest_sweep_id(self) -> str | None:
        row = self.db.execute("SELECT id FROM sweeps ORDER BY created_utc DESC, rowid DESC"
                              " LIMIT 1").fetchone()
        return row["id"] if row else None

    def sweep_ids(self) -> list[str]:
        return [r["id"] for r in self.db.execute("SELECT id FROM sweeps ORDER BY created_utc")]

    # --- cells -----------------------------------------------------------

    def plan_cell(self, sweep_id: str, *, config_hash: str, name: str, position: int,
                  point: dict, config: dict, role: str = "grid") -> None:
        """Register a grid point with its full config; a point already planned keeps its status."""
        self._write("INSERT OR IGNORE INTO cells (sweep_id, config_hash, name, position, role,"
                    " point, config) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (sweep_id, config_hash, name, position, role, _dumps(point), _dumps(config)))

    def cell_status(self, sweep_id: str) -> dict[str, str]:
        """config hash -> status, for resume."""
        rows = self.db.execute("SELECT config_hash, status FROM cells WHERE sweep_id = ?",
                               (sweep_id,))
        return {r["config_hash"]: r["status"] for r in rows}

    # --- runs ------------------------------------------------------------

    def add_run(self, *, variant: str, config_hash: str, host: str, config: dict,
                sweep_id: str | None = None, run_dir: str | None = None) -> int:
        cur = self._write("INSERT INTO runs (sweep_id, variant, config_hash, host, config, state,"
                          " run_dir, started_utc) VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
                          (sweep_id, variant, config_hash, host, _dumps(config), run_dir, _now()))
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, *, state: str, verdict: dict | None = None,
                   metrics: dict | None = None, cell: bool = False) -> None:
        """The run's outcome; with ``cell``, its cell (the run's sweep and config hash) takes
        the run's state and id in the same transaction: a process killed in between would
        leave a finished run whose cell a resume runs again (seen once in CI)."""
        with self.db:
            self.db.execute("UPDATE runs SET state = ?, verdict = ?, metrics = ?, ended_utc = ?"
                            " WHERE id = ?", (state, _dumps(verdict) if verdict is not None else None,
                                              _dumps(metrics) if metrics is not None else None,
                                              _now(), run_id))
            if cell:
                self.db.execute("UPDATE cells SET status = ?, run_id = ? WHERE (sweep_id, config_hash)"
                                " = (SELECT sweep_id, config_hash FROM runs WHERE id = ?)",
                                (state, run_id, run_id))

    def abandon_runs(self, sweep_id: str) -> int:
        """Mark the sweep's runs still 'running' as 'lost' (their process was killed);
        call it holding the host's lock, so none of them can still be running."""
        cur = self._write("UPDATE runs SET state = 'lost', ended_utc = ? WHERE sweep_id = ?"
                          " AND state = 'running'", (_now(), sweep_id))
        return cur.rowcount

    def bracket_metrics(self, sweep_id: str) -> dict[str, list[dict]]:
        """The sweep's bracketing runs (a baseline measured again after the grid):
        config hash -> their metrics, oldest first."""
        rows = self.db.execute("SELECT config_hash, metrics FROM runs WHERE sweep_id = ? AND"
                               " state = 'bracket' ORDER BY id", (sweep_id,))
        out: dict[str, list[dict]] = {}
        for row in rows:
            out.setdefault(row["config_hash"], []).append(json.loads(row["metrics"] or "{}"))
        return out

    def failed_brackets(self, sweep_id: str) -> dict[str, list[dict]]:
        """The sweep's bracketing runs that measured nothing (the baseline's re-measurement
        crashed, timed out, errored, was interrupted or lost): config hash -> each run's
        ``state`` and ``verdict``, oldest first. A bracket is a run of a baseline cell after
        the run that finished the cell."""
        rows = self.db.execute(
            "SELECT r.config_hash, r.state, r.verdict FROM runs r JOIN cells c"
            " ON c.sweep_id = r.sweep_id AND c.config_hash = r.config_hash"
            " WHERE r.sweep_id = ? AND c.role = 'baseline' AND c.run_id IS NOT NULL"
            " AND r.id > c.run_id AND r.state != 'bracket' ORDER BY r.id", (sweep_id,))
        out: dict[str, list[dict]] = {}
        for row in rows:
            out.setdefault(row["config_hash"], []).append(
                {"state": row["state"], "verdict": json.loads(row["verdict"] or "{}")})
        return out

    def run(self, run_id: int) -> dict | None:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _decode(row, ("config", "verdict", "metrics")) if row else None

    def cells(self, sweep_id: str) -> list[dict]:
        """A sweep's cells in plan order, each with its run (config, verdict, metrics)."""
        rows = self.db.execute(
            "SELECT c.name, c.config_hash, c.position, c.role, c.point, c.config, c.status,"
            " c.run_id, r.verdict, r.metrics, r.run_dir, r.state, r.host"
            " FROM cells c LEFT JOIN runs r ON r.id = c.run_id"
            " WHERE c.sweep_id = ? ORDER BY c.position", (sweep_id,))
        return [_decode(r, ("point", "config", "verdict", "metrics")) for r in rows]


def _decode(row: sqlite3.Row, json_columns: tuple[str, ...]) -> dict:
    out = dict(row)
    for key in json_columns:
        if out.get(key) is not None:
            out[key] = json.loads(out[key])
    return out


def find_sweep(store: Store, given: str = "latest", *, name: str = "sweep") -> str:
    """A stored sweep's id from what a user may give (``name`` is the parameter, for the
    error): its id; ``latest`` (or ""); or the name or path of a run folder that holds its
    verdict (``ddlab run sweep``'s ``20261201T024425Z-sweep-demo``, a plain papermill or
    ``ddlab plot`` run's), as ``ddlab runs`` lists them. ConfigError otherwise, listing the
    newest ids."""
    given = str(given or "").strip()
    sweep_id = store.latest_sweep_id() if given in ("", "latest") else given
    if sweep_id and store.sweep(sweep_id) is None:
        sweep_id = _swept_in(store, given)
    if sweep_id and store.sweep(sweep_id) is not None:
        return sweep_id
    known = ", ".join(store.sweep_ids()[-5:]) or "none yet: run notebooks/sweep.ipynb"
    found = "" if given in ("", "latest") else " (its run folder names none)" \
        if _folder(store, given) else " (nor a run folder)"
    raise ConfigError(f"{name}={given!r}: no such sweep in {store.path}{found}",
                      fix=f"use 'latest', a sweep id or a run folder's name (ddlab runs lists "
                          f"them); the newest ids: {known}", value=given)


def _folder(store: Store, given: str) -> Path | None:
    """The run folder ``given`` names: a path, or a name under the store's outputs folder."""
    for folder in (Path(given), store.path.parent / given, store.path.parent / "runs" / given):
        if given and folder.is_dir():
            return folder
    return None


def _swept_in(store: Store, given: str) -> str | None:
    """The sweep id a run folder's verdict (or its record) names, None when none."""
    folder = _folder(store, given)
    for record in ("verdict.json", "run.json"):
        try:
            data = json.loads((folder / record).read_text()) if folder else {}
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("sweep_id"), str):
            return data["sweep_id"]
    return None


def connect(path: str | Path | None = None) -> Store:
    """Open the store (default ``outputs/ddlab.sqlite``)."""
    return Store(path)


def integrity_ok(path: str | Path) -> bool:
    """True when SQLite's own integrity check passes (used after kill -9 tests)."""
    with closing(sqlite3.connect(path)) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
