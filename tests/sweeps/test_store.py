"""The results store: real SQLite files, a second connection as the reader, and a
writer process killed with SIGKILL between (and during) its writes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from ddlab.core.errors import ConfigError, StoreError
from ddlab.sweeps.store import DONE_STATES, Store, find_sweep, integrity_ok


def _reader(path):
    """A separate connection: it sees only what was committed."""
    return contextlib.closing(sqlite3.connect(path))


def _count(path, sql: str, args=()) -> int:
    with _reader(path) as db:
        return db.execute(sql, args).fetchone()[0]


def test_every_write_is_committed_before_it_returns(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    with Store(path) as store:
        store.add_sweep("s1", host="local", base="local", grid={"budget": [4]}, options={})
        assert not store.db.in_transaction
        assert _count(path, "SELECT COUNT(*) FROM sweeps WHERE status = 'running'") == 1
        store.plan_cell("s1", config_hash="h1", name="local-b4", position=0, point={"budget": 4},
                        config={"flags": {"budget": 4}})
        assert _count(path, "SELECT COUNT(*) FROM cells WHERE status = 'pending'") == 1
        run_id = store.add_run(variant="local-b4", config_hash="h1", host="local", config={},
                               sweep_id="s1")
        assert _count(path, "SELECT COUNT(*) FROM runs WHERE state = 'running'") == 1
        store.finish_run(run_id, state="measured", verdict={"state": "ready"},
                         metrics={"accept_length": 3.5}, cell=True)
        assert _count(path, "SELECT COUNT(*) FROM cells WHERE status = 'measured' AND run_id = ?",
                      (run_id,)) == 1
        store.set_sweep_status("s1", "done")
        assert _count(path, "SELECT COUNT(*) FROM sweeps WHERE status = 'done'"
                            " AND ended_utc IS NOT NULL") == 1
        store.set_sweep_status("s1", "running")  # resumed: not ended any more
        assert store.sweep("s1")["ended_utc"] is None
        assert not store.db.in_transaction
        assert store.cells("s1")[0]["metrics"] == {"accept_length": 3.5}


def test_planning_a_cell_again_keeps_its_status(tmp_path):
    """Resume registers the plan again: a finished cell must stay finished."""
    with Store(tmp_path / "ddlab.sqlite") as store:
        store.add_sweep("s1", host="local", base="local", grid={}, options={})
        plan = {"config_hash": "h1", "name": "c", "position": 0, "point": {}, "config": {}}
        store.plan_cell("s1", **plan)
        run_id = store.add_run(variant="c", config_hash="h1", host="local", config={}, sweep_id="s1")
        store.finish_run(run_id, state="crashed", cell=True)
        store.plan_cell("s1", **plan)
        assert store.cell_status("s1") == {"h1": "crashed"}


def test_configs_are_stored_with_secrets_masked(tmp_path):
    with Store(tmp_path / "ddlab.sqlite") as store:
        run_id = store.add_run(variant="v", config_hash="h", host="local",
                               config={"env": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345"}})
        env = store.run(run_id)["config"]["env"]
    assert "hf_abcdefghijklmnopqrstuvwxyz012345" not in str(env) and env["HF_TOKEN"]


def test_a_file_that_is_not_a_store_is_a_store_error(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    path.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(StoreError) as info:
        Store(path)
    assert str(path) in str(info.value) and "move the file aside" in str(info.value)


WRITER = textwrap.dedent("""
    import sys
    from ddlab.sweeps.store import Store
    store = Store(sys.argv[1])
    store.add_sweep("s", host="local", base="local", grid={}, options={})
    for i in range(100000):
        h = f"h{i:05d}"
        store.plan_cell("s", config_hash=h, name=f"cell-{i}", position=i, point={"i": i},
                        config={"flags": {"i": i}, "padding": "x" * 2000})
        run_id = store.add_run(variant=f"cell-{i}", config_hash=h, host="local",
                               config={"i": i}, sweep_id="s")
        store.finish_run(run_id, state="measured", metrics={"i": i}, cell=True)
        print(h, run_id, flush=True)
""")


def test_a_writer_killed_with_sigkill_leaves_every_committed_row_exactly_once(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    committed = []
    with subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                          text=True) as writer:
        try:
            for line in writer.stdout:  # each line is printed after its cell's last commit
                committed.append(line.split())
                if len(committed) == 40:
                    break
        finally:
            os.kill(writer.pid, signal.SIGKILL)  # mid-stream: the writer never stopped writing
            writer.wait()
    assert writer.returncode == -signal.SIGKILL and len(committed) == 40

    assert integrity_ok(path)
    with Store(path) as store:
        cells = {c["config_hash"]: c for c in store.cells("s")}
        for config_hash, run_id in committed:
            cell = cells[config_hash]
            assert cell["status"] in DONE_STATES and cell["run_id"] == int(run_id)
            assert cell["metrics"] == {"i": int(config_hash[1:])}
    with _reader(path) as db:
        dupes = db.execute("SELECT config_hash FROM runs GROUP BY config_hash HAVING COUNT(*) > 1")
        assert dupes.fetchall() == [], "no run recorded twice"
        unfinished = db.execute("SELECT COUNT(*) FROM runs WHERE state = 'running'").fetchone()[0]
    assert unfinished <= 1, "at most the one cell in flight was lost"


def test_runs_left_running_by_a_killed_process_are_marked_lost(tmp_path):
    with Store(tmp_path / "ddlab.sqlite") as store:
        store.add_sweep("s", host="local", base="local", grid={}, options={})
        done = store.add_run(variant="a", config_hash="a", host="local", config={}, sweep_id="s")
        store.finish_run(done, state="measured")
        left = store.add_run(variant="b", config_hash="b", host="local", config={}, sweep_id="s")
        other = store.add_run(variant="c", config_hash="c", host="local", config={}, sweep_id=None)
        assert store.abandon_runs("s") == 1
        assert [store.run(i)["state"] for i in (done, left, other)] == ["measured", "lost", "running"]
        assert store.run(left)["ended_utc"]


def test_a_sweep_that_never_started_a_cell_is_forgotten_one_that_did_is_kept(tmp_path):
    with Store(tmp_path / "ddlab.sqlite") as store:
        for sweep_id in ("unstarted", "started"):
            store.add_sweep(sweep_id, host="local", base="local", grid={}, options={})
            store.plan_cell(sweep_id, config_hash="h1", name="c", position=0, point={},
                            config={})
        store.add_run(variant="c", config_hash="h1", host="local", config={}, sweep_id="started")
        assert store.forget_unstarted_sweep("unstarted") is True
        assert store.forget_unstarted_sweep("started") is False
        assert store.sweep_ids() == ["started"] and store.cell_status("unstarted") == {}
        assert not store.db.in_transaction
        store.set_sweep_status("started", "failed", error="HostError: host\n gone")
        assert [(s["id"], s["error"]) for s in store.sweeps()] == [("started", "HostError: host gone")]


def test_a_store_made_before_the_error_column_gets_it_on_open(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    with Store(path) as store:
        store.add_sweep("old", host="local", base="local", grid={}, options={})
    with _reader(path) as db:  # as an older ddlab left it
        db.execute("ALTER TABLE sweeps DROP COLUMN error")
        db.commit()
    with Store(path) as store:
        assert store.sweep("old")["error"] is None
        store.set_sweep_status("old", "failed", error="ServiceError: x")
        assert store.sweep("old")["error"] == "ServiceError: x"


def test_a_sweep_is_found_by_its_id_latest_or_a_run_folder_that_holds_it(tmp_path, monkeypatch):
    """What ``ddlab runs`` shows is what every verb that takes a sweep takes: the id, the
    run folder's name (``ddlab run``'s, whose verdict names the sweep) or its path."""
    outputs = tmp_path / "outputs"
    with Store(outputs / "ddlab.sqlite") as store:
        for sweep_id in ("20261201T010000Z-local-b4", "20261201T020000Z-local-b16"):
            store.add_sweep(sweep_id, host="local", base="local", grid={}, options={})
        folder = outputs / "20261201T005959Z-sweep-demo"
        folder.mkdir()
        (folder / "verdict.json").write_text(json.dumps({"sweep_id": "20261201T010000Z-local-b4"}))
        poll = outputs / "20261201T030000Z-poll-default"
        poll.mkdir()
        (poll / "verdict.json").write_text(json.dumps({"state": "ready"}))
        assert find_sweep(store, "20261201T010000Z-local-b4") == "20261201T010000Z-local-b4"
        assert find_sweep(store, "latest") == find_sweep(store, "") == "20261201T020000Z-local-b16"
        assert find_sweep(store, "20261201T005959Z-sweep-demo") == "20261201T010000Z-local-b4"
        monkeypatch.chdir(tmp_path)
        assert find_sweep(store, "outputs/20261201T005959Z-sweep-demo/") == \
            "20261201T010000Z-local-b4", "the path a shell completes"
        with pytest.raises(ConfigError) as info:
            find_sweep(store, "20261201T030000Z-poll-default", name="resume")
        assert str(info.value).startswith("resume='20261201T030000Z-poll-default': no such "
                                          "sweep in ") and "(its run folder names none)" in \
            str(info.value)
        assert "a run folder's name (ddlab runs lists them)" in str(info.value)
