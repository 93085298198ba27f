"""Workload sweeps (issue 27): concurrency levels measured on one server start per cell.

The real sweep runs ddlab's target through the process manager of a temp project
(``sweepkit``); how many times a server started is counted from what the servers
themselves wrote (their start banner in each cell's log) and from the server's own
request counter, which only a server that stayed up keeps counting across levels.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

import ddlab
import sweepkit
from ddlab.core.errors import ConfigError
from ddlab.report.verdicts import HEADLINE_MAX
from ddlab.sweeps.levels import crossover, verdict_of_level
from ddlab.sweeps.plan import SweepOptions
from ddlab.sweeps.prompt_sets import SHIPPED, load_sets, mixed
from ddlab.sweeps.store import Store
from ddlab.sweeps.workload import accept_per_position

LEVELS = [1, 4, 16]
START_BANNER = "The server is fired up and ready to roll!"


# --- options, prompt sets, the arithmetic ---------------------------------------------


@pytest.mark.parametrize("given, levels, workload", [
    (1, (1,), False), ([4], (4,), False), ([16, 1, 4, 4], (1, 4, 16), True),
], ids=["int", "one-item-list", "unsorted-repeats"])
def test_concurrency_levels_are_sorted_and_one_level_stays_a_plain_sweep(given, levels, workload):
    options = SweepOptions(concurrency=given)
    assert (options.levels, options.workload) == (levels, workload)
    assert isinstance(options.concurrency, int) == (not workload)  # stored as before


@pytest.mark.parametrize("given", [[], [0], [1, "x"]], ids=["empty", "zero", "text"])
def test_a_bad_level_is_refused_before_anything_runs(given):
    with pytest.raises(ConfigError, match="concurrency"):
        SweepOptions(concurrency=given)


def test_shipped_sets_are_in_the_repo_and_mix_every_set(tmp_path):
    sets = load_sets(SHIPPED)
    assert [s.name for s in sets] == list(SHIPPED) and all(len(s.prompts) >= 3 for s in sets)
    prompts = mixed(sets)
    assert prompts[:3] == [s.prompts[0] for s in sets]  # any run of requests meets every set
    mine = tmp_path / "support.jsonl"
    mine.write_text('{"text": "Hello, my order"}\n{"prompt": "Where is"}\n')
    assert [(s.name, s.prompts) for s in load_sets([str(mine)])] == [
        ("support", ("Hello, my order", "Where is"))]
    with pytest.raises(ConfigError, match="neither a shipped set nor a file"):
        load_sets(["poetry"])


def test_accept_per_position_is_the_share_of_steps_that_accepted_at_least_p():
    histograms = [[1, 2, 3], [0, 1]]  # steps with 0, 1, 2 drafts accepted
    steps = 1 + 2 + 3 + 0 + 1
    assert accept_per_position(histograms) == [round((2 + 3 + 1) / steps, 4),
                                               round(3 / steps, 4)]
    assert accept_per_position([]) == []


def _frame(name: str, intervals: list[tuple]) -> pd.DataFrame:
    rows = [{"name": name, "role": "grid", "status": "measured", "concurrency": c,
             "speedup": (lo + hi) / 2, "speedup_ci_low": lo, "speedup_ci_high": hi}
            for c, (lo, hi) in zip((1, 2, 4, 8, 16), intervals)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("intervals, up_to, ties, loses, every", [
    ([(1.5, 2.0), (1.2, 1.6), (0.9, 1.1), (0.6, 0.8)], 2, 4, 8, False),
    ([(1.5, 2.0), (1.1, 1.3), (1.05, 1.2)], 4, None, None, True),
    ([(0.9, 1.2), (0.7, 0.9)], None, 1, 2, False),
    ([(1.2, 1.4), (0.7, 0.9), (0.95, 1.1)], 1, 4, 2, False),
    ([(1.5, 2.0), (0.9, 1.1), (1.2, 1.5)], 1, 2, None, False),
], ids=["pays-ties-loses", "every-level", "never-pays", "loses-before-it-ties", "pays-again"])
def test_crossover_reads_each_levels_interval(intervals, up_to, ties, loses, every):
    found = crossover(_frame("b16", intervals))[0]
    assert (found["pays_up_to"], found["ties_at"], found["loses_at"], found["every_level"]) == (
        up_to, ties, loses, every)
    words = found["words"]
    assert words.startswith("b16 ")
    if every:
        assert "pays at every level tried" in words
    if up_to and not every:
        low, high = intervals[[1, 2, 4, 8].index(up_to)]
        assert f"pays up to concurrency {up_to} ({(low + high) / 2:.2f}x [{low:.2f}-{high:.2f}])" in words
    if loses and up_to:
        assert f"loses at {loses} (" in words
    again = [c for c, (low, _) in zip((1, 2, 4, 8), intervals) if low > 1 and c > (ties or 99)]
    assert found["pays_again_at"] == (again[0] if again else None)
    assert ("pays again at" in words) == bool(again)


def test_a_level_measured_once_has_no_interval_and_claims_nothing():
    row = {"speedup": 1.8, "speedup_ci_low": None, "speedup_ci_high": None}
    assert verdict_of_level(row) == "ties"


# --- a real workload sweep: one start per cell, every level on it ----------------------


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    project = sweepkit.make_project(tmp_path_factory.mktemp("workload"))
    run_dir = project.outputs / "run"
    run_dir.mkdir(parents=True)
    options = {k: v for k, v in sweepkit.FAST_OPTIONS.items() if k != "grace_s"}
    with sweepkit.using(project):
        report = ddlab.sweep(budget=[16], topk_cap=[4], cuda_graph=[False], concurrency=LEVELS,
                             probe=False, **options, run_dir=run_dir)
    return project, report, run_dir


@pytest.mark.slow  # a real workload sweep (the module's fixture, ~18 s)
def test_each_cell_starts_its_server_once_not_once_per_level(workload):
    project, report, _ = workload
    cells = report.frame
    assert list(cells["status"]) == ["measured", "measured"]
    folder = project.outputs / "sweeps" / report.sweep_id
    logs = sorted(folder.glob("*/journal.log"))
    assert len(logs) == len(cells)  # a run folder per cell, none per level
    starts = [log.read_text().count(START_BANNER) for log in logs]
    assert starts == [1] * len(cells), starts  # each server said it started once
    runs = sweepkit.run_counts(project.store_path, report.sweep_id)
    assert sorted(sum(states.values()) for states in runs.values()) == [1, 1]
    for cell in Store(project.store_path).cells(report.sweep_id):
        levels = cell["metrics"]["levels"]
        assert [lv["concurrency"] for lv in levels] == LEVELS
        # the server's own count of finished requests grows by exactly each level's
        # requests: one process served every level (a restart would start it from 0)
        after = [lv["server_requests_after"] for lv in levels]
        served = [lv["n_requests_total"] for lv in levels]
        assert all(b - a == n for a, b, n in zip(after, after[1:], served[1:])), (after, served)
        assert after[0] > served[0]  # the warmup and acceptance passes came first, same server
        # 16 clients connecting at once are all served (the target's listen backlog)
        assert [lv["n_failed_total"] for lv in levels] == [0] * len(LEVELS)


@pytest.mark.slow  # a real workload sweep (the module's fixture, ~18 s)
def test_each_level_has_its_interval_and_a_speedup_at_the_same_level(workload):
    _, report, run_dir = workload
    levels = report.levels
    assert sorted(levels["concurrency"].unique()) == LEVELS
    grid = levels[levels["role"] == "grid"].sort_values("concurrency")
    base = levels[levels["role"] == "baseline"].sort_values("concurrency")
    assert (base["speedup"] == 1.0).all()
    ratio = grid["output_tok_s"].to_numpy() / base["output_tok_s"].to_numpy()
    assert grid["speedup"].to_numpy() == pytest.approx(ratio, rel=1e-6)
    assert grid["output_tok_s_ci_low"].notna().all() and grid["rounds"].ge(3).all()
    assert grid["user_tok_s"].gt(0).all()
    # the server's counters covered exactly the measured requests: the same ratio as theirs
    assert grid["accept_length_server"].to_numpy() == pytest.approx(
        grid["accept_length"].to_numpy(), rel=1e-9)
    written = pd.read_csv(run_dir / "levels.csv")
    assert len(written) == len(levels) and "user_tok_s" in written


@pytest.mark.slow  # a real workload sweep (the module's fixture, ~18 s)
def test_the_verdict_says_where_each_config_stops_paying(workload):
    _, report, run_dir = workload
    verdict = report.verdict
    answer = verdict.workload
    assert answer["levels"] == LEVELS
    (config,) = answer["crossover"]
    assert set(config["by_level"].values()) <= {"pays", "ties", "loses"}
    assert len(verdict.headline) <= HEADLINE_MAX and "\n" not in verdict.headline
    assert re.match(r"SWEEP DONE: 2 cells x 3 levels", verdict.headline), verdict.headline
    assert f"crossover: {config['words']}" in verdict.details
    assert [b["concurrency"] for b in answer["best_per_level"]] == LEVELS
    stored = json.loads((run_dir / "verdict.json").read_text())
    assert stored["workload"]["crossover"][0]["words"] == config["words"]


@pytest.mark.slow  # a real workload sweep (the module's fixture, ~18 s)
def test_acceptance_per_prompt_set_comes_from_the_servers_counters(workload):
    _, report, _ = workload
    cells = {c["role"]: c for c in report.verdict.workload["prompt_sets"]}
    sets = cells["grid"]["sets"]
    assert [s["set"] for s in sets] == list(SHIPPED)
    for one in sets:
        assert one["accept_source"] == "server counters"
        assert one["accept_length"] == pytest.approx(one["accept_length_requests"], rel=1e-9)
        positions = one["accept_per_position"]
        assert positions and all(a >= b for a, b in zip(positions, positions[1:]))
    assert len({round(s["accept_length"], 3) for s in sets}) > 1  # sets differ
    assert all(s["accept_length"] is None for s in cells["baseline"]["sets"])  # no speculation


@pytest.mark.slow  # a real workload sweep (the module's fixture, ~18 s)
def test_the_workload_figures_draw_and_a_single_level_sweep_has_none(workload):
    _, report, _ = workload
    pareto = ddlab.pareto(report.levels)
    speedup = ddlab.speedup_vs_concurrency(report.levels)
    assert len(pareto.axes[0].lines) >= 2  # the config's curve and the baseline's
    assert [t.get_text() for t in speedup.axes[0].get_xticklabels()] == [str(c) for c in LEVELS]
    assert ddlab.pareto(pd.DataFrame()) is None


@pytest.mark.slow  # a real workload sweep (the module's fixture, ~18 s)
def test_results_md_names_every_levels_csv_column(workload):
    """docs/results.md: each column of levels.csv is in its levels table or, for the cell's
    own columns, in the cells.csv table."""
    from labkit import REPO

    text = (REPO / "docs" / "results.md").read_text()
    named = set()
    for marker in ("csv-columns", "levels-columns"):
        lines = text.split(f"<!-- {marker} -->", 1)[1].splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("|"))
        end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
        named |= set(re.findall(r"`([^`]+)`", "\n".join(row.split("|")[1]
                                                         for row in lines[start + 2:end])))
    patterns = [re.compile(re.escape(n).replace(r"<figure>", r"\w+").replace(r"<key>", r"[\w.]+")
                           + "$") for n in named]
    columns = pd.read_csv(workload[2] / "levels.csv").columns
    missing = [c for c in columns if not any(p.match(c) for p in patterns)
               and not any(c == f"{n}{end}" for n in named for end in ("_ci_low", "_ci_high"))]
    assert not missing, f"levels.csv columns docs/results.md leaves out: {missing}"


# --- the family says where its acceptance is (a plug-in, no branch on its name) -------


def test_a_third_familys_counters_give_its_own_acceptance_without_a_branch_on_its_name():
    """A family names its counters and its formula (MetricsCounters); the workload reads
    whatever a family names: a family ddlab has never heard of needs no code here."""
    import copy
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    from ddlab.config.families import MetricsCounters, family_named
    from ddlab.sweeps.workload import _accept_from, _per_position_from, read_counters

    readings = iter([
        "# HELP x:acc_total accepted\nx:acc_total{engine=\"0\"} 10\nx:acc_total{engine=\"1\"} 2\n"
        "x:steps_total 8\nx:done_total 1\nx:acc_pos_total{position=\"0\"} 7\n"
        "sglang:generation_tokens_total 999\nsglang:spec_verify_calls_total 1\n",
        "x:acc_total{engine=\"0\"} 40\nx:acc_total{engine=\"1\"} 12\n"
        "x:steps_total 24\nx:done_total 3\nx:acc_pos_total{position=\"0\"} 19\n"
        "sglang:generation_tokens_total 999\nsglang:spec_verify_calls_total 1\n"])

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = next(readings).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    third = copy.copy(family_named("vllm"))
    third.name = "third"
    third.counters = MetricsCounters("x:acc_total", "x:steps_total", "x:done_total",
                                     per_position="x:acc_pos_total", bonus=0.5)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with httpx.Client() as client:
            before, after = read_counters(client, url, third), read_counters(client, url, third)
    finally:
        server.shutdown()
        server.server_close()
    assert (before["x:acc_total"], after["x:acc_total"], after["x:done_total"]) == (12, 52, 3)
    assert _accept_from(before, after, third) == 0.5 + 40 / 16  # its formula, its counters
    assert _per_position_from(before, after, third) == [0.75]     # (19 - 7) / 16
    assert "sglang:generation_tokens_total" not in after  # another family's counters: not read
