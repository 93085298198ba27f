"""Searches (issue 15): bisect a failing variant, find the envelope that serves.

First the search logic against plain functions: arithmetic ones for every
boundary and every culprit, and the embedded target's own start-up run in this
process (weights, KV pool, graph capture: its real errors, read by ddlab's
diagnosis) as the oracle that says where the true boundary is. Then real searches
on the embedded target, each trial a server deployed by the process manager of a
temp project whose host has a baseline service: the field's walk-down from a
``kv_pool_oom`` to the envelope that serves (with the capture crash and the
graphs-off fallback on the way), a rerun that reuses every trial, a bisect over 8
changes, two changes that crash only together, and a different failure kept apart.
"""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
import traceback
import uuid
from itertools import combinations
from pathlib import Path

import pytest
import yaml

import ddlab
import sweepkit
from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError
from ddlab.hosts import connect, manager_for
from ddlab.hosts.profiles import load_host
from ddlab.hosts.services import ServiceSpec
from ddlab.sweeps.search import Outcome, Trials
from ddlab.sweeps.bisect import Change, bisect_search, changes_between
from ddlab.sweeps.envelope import envelope_search, parse_fallbacks, parse_search
from labkit import REPLAY_FAULT, wait_for

SERVES = Outcome("serves")
LONGER = "env.SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
# The field's 27B walk-down, scaled to the target: a 0.5 GB device, graphs captured up to
# bs 256 (an H200's default), asked for 128k context and 256 running requests.
AS_ASKED = {LONGER: "1", "device_memory_gb": 0.5, "cuda_graph_max_bs_decode": 256,
            "context_length": 131072, "max_running_requests": 256}
SEARCH = ["context_length=4096..131072", "max_running_requests=1..256"]
# the walk-down's second key: the server at 16384 tokens fits 1 slot, so 1..4 walks down
# 2 to the same answer as 1..256 (128 .. 2: six target starts more) and 1..16 (8, 4, 2: two
# more); the top of the range is still above what the server runs (issue 23 item 6: before,
# the top 'served' whatever the server ran)
WALK = [SEARCH[0], "max_running_requests=1..4"]
FAST = {"timeout_s": 120}


def per_key_bound(spec) -> int:
    """The issue's bound: ceil(log2(range)) + 3 trials per searched key, the range
    counted in candidates."""
    return math.ceil(math.log2(len(spec.values))) + 3


def crash(kind: str) -> Outcome:
    return Outcome("crashed", kind)


# --- the search logic, with plain functions ---------------------------------------------


@pytest.mark.parametrize("item, values", [
    ("context_length=4096..131072", (4096, 8192, 16384, 32768, 65536, 131072)),
    ("context_length=4Ki..16Ki", (4096, 8192, 16384)),
    ("context_length=3000..9000", (3000, 4096, 8192, 9000)),
    ("cuda_graph_max_bs_decode=..8", (1, 2, 4, 8)),
    ("max_running_requests=8..12", (8, 9, 10, 11, 12)),
    ({"max_running_requests": "..3"}, (1, 2, 3)),
], ids=["pow2", "human-ints", "pow2-inner", "low-end-from-flag-table", "integers", "mapping"])
def test_search_ranges_step_by_powers_of_two_where_the_flag_wants_them(item, values):
    assert tuple(parse_search(item).values) == values


def test_a_huge_range_is_lazy_and_binary_searched_within_its_bound():
    """Issue 23 item 12: 1..10**13 was materialised (a bare MemoryError); a range is lazy."""
    import tracemalloc

    tracemalloc.start()
    spec = parse_search(f"max_running_requests=1..{10 ** 13}")
    trials = Trials(lambda p: SERVES if p.get("max_running_requests", 1) <= 123_456_789
                    else crash("cuda_oom"), max_trials=60)
    env = envelope_search([spec], [], trials, {})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert env.current["max_running_requests"] == 123_456_789
    assert len(trials.done) <= per_key_bound(spec)
    assert peak < 2_000_000, f"{peak} bytes traced"


@pytest.mark.parametrize("argv, said", [
    (["--search", f"max_running_requests=1..{2 ** 70}"], "an end beyond 4611686018427387904"),
    ([f"--search=k{i}=1..4" for i in range(20)], "--search: 20 keys; at most 8"),
    (["--search", "context_length=4096..8192",
      *[f"--fallback=mem_fraction_static=0.{i + 1}" for i in range(9)]],
     "--fallback: 9 fallbacks; at most 8"),
], ids=["beyond-2**62", "20-keys", "9-fallbacks"])
def test_too_many_keys_or_too_wide_a_range_is_one_line(argv, said, capsys):
    from ddlab.cli import main

    assert main(["envelope", "--dry-run", *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err, err


@pytest.mark.parametrize("item, said", [
    ("context_length=4096..", "no highest value given, and the flag table has none"),
    ("mem_fraction_static=0.5..0.9", "not an integer flag"),
    ("max_running_requests=64..8", "the range is empty"),
    ("max_running_requests=0..8", "outside the flag's range: must be an integer >= 1"),
    ("context_length", "must be KEY=LO..HI"),
    ("max_runing_requests=8..16", "did you mean"),
], ids=["no-top", "float-flag", "empty", "below-flag-min", "no-range", "typo"])
def test_a_bad_search_range_says_what_is_allowed(item, said):
    with pytest.raises(ConfigError, match=said):
        parse_search(item)


def test_fallbacks_are_override_mappings_applied_in_order():
    assert parse_fallbacks(["cuda_graph=false", "mem_fraction_static=0.8,budget=8"]) == [
        {"cuda_graph": False}, {"mem_fraction_static": 0.8, "budget": 8}]
    assert parse_fallbacks({"cuda_graph": False}) == [{"cuda_graph": False}]


def _memory_oracle(kv_limit: int, graph_limit: int | None):
    """A server whose KV pool holds context < ``kv_limit``, and whose graphs capture when
    context x running requests < ``graph_limit`` (None: always)."""
    def test(point):
        ctx, running = point["context_length"], point.get("max_running_requests", 256)
        if ctx >= kv_limit:
            return crash("kv_pool_oom")
        if point.get("cuda_graph", True) and graph_limit is not None and ctx * running >= graph_limit:
            return crash("cuda_graph_capture")
        return SERVES
    return test


CONTEXTS = (4096, 8192, 16384, 32768, 65536, 131072)


@pytest.mark.parametrize("kv_limit", [*CONTEXTS, 1 << 20], ids=lambda v: f"kv<{v}")
@pytest.mark.parametrize("graphs", ["capture-fine", "capture-crashes"])
def test_the_envelope_finds_every_boundary_within_the_bound(kv_limit, graphs):
    spec = parse_search("context_length=4096..131072")
    trials = Trials(_memory_oracle(kv_limit, None if graphs == "capture-fine" else 1),
                    max_trials=50)
    env = envelope_search([spec], parse_fallbacks("cuda_graph=false"), trials,
                          {"context_length": 131072})
    serving = [c for c in CONTEXTS if c < kv_limit]
    result = env.results[0]
    assert len(trials.done) <= per_key_bound(spec), [t.point for t in trials.log]
    if not serving:
        assert result.good is None and not env.found
        assert env.answer.startswith("context_length: even 4096 fails with kv_pool_oom")
        return
    assert result.value(result.good) == serving[-1]
    assert env.level == (0 if graphs == "capture-fine" else 1)
    tried = {t.point["context_length"]: t.outcome for t in trials.log if t.level == env.level}
    assert tried[serving[-1]].ok, "a trial on the serving side proves it"
    if serving[-1] != CONTEXTS[-1]:
        above = CONTEXTS[CONTEXTS.index(serving[-1]) + 1]
        assert tried[above].failure == "kv_pool_oom", "and one on the failing side"
        assert f"context_length {serving[-1]} serves" in env.answer
        assert f"{above} fails with kv_pool_oom" in env.answer


@pytest.mark.parametrize("limit", [8, 9, 100, 255, 256, 300], ids=str)
def test_an_integer_key_is_binary_searched(limit):
    spec = parse_search("max_running_requests=8..256")
    trials = Trials(lambda p: SERVES if p.get("max_running_requests", 48) <= limit
                    else crash("cuda_oom"), max_trials=50)
    env = envelope_search([spec], [], trials, {})  # the ask: the default, 48
    assert env.current["max_running_requests"] == min(limit, 256)
    assert len(trials.done) <= per_key_bound(spec)


def test_the_walk_down_with_two_keys_keeps_the_fallback_and_each_found_value():
    keys = [parse_search(s) for s in SEARCH]
    trials = Trials(_memory_oracle(32768, 8 * 8192), max_trials=12)
    env = envelope_search(keys, parse_fallbacks("cuda_graph=false"), trials,
                          {"context_length": 131072, "max_running_requests": 256})
    outcomes = [(t.role, t.level, t.point["context_length"], t.outcome.words) for t in trials.log]
    assert outcomes[:3] == [("ask", 0, 131072, "fails with kv_pool_oom"),
                            ("trial", 0, 4096, "fails with cuda_graph_capture"),
                            ("trial", 1, 4096, "serves")]
    assert env.found and env.current == {"context_length": 16384, "max_running_requests": 256}
    assert env.answer == ("context_length 16384 serves with graphs off; 32768 fails with "
                          "kv_pool_oom (as given, even 4096 fails with cuda_graph_capture); "
                          "max_running_requests 256 (the top of the range) serves with graphs off")


def test_a_value_the_server_cut_is_not_serving_for_the_key_searched():
    """Issue 23 item 6, the logic alone: a ready server that ran max_running_requests=10
    whatever was asked above it 'serves' for another key, never for this one."""
    def test(point):
        asked = point.get("max_running_requests", 48)
        cut = ("max_running_requests",) if asked > 10 else ()
        return Outcome("serves", cut_keys=cut, cut=f"the server ran max_running_requests=10, "
                       f"not {asked}" if cut else "")

    spec = parse_search("max_running_requests=1..256")
    env = envelope_search([spec], [], Trials(test, max_trials=20), {})
    assert env.answer == "max_running_requests 10 serves; 11 is cut by the server", env.answer
    assert env.asked_serves, "the config as asked serves (with what the server made of it)"


def test_a_key_that_never_serves_leaves_the_next_key_as_asked():
    """The envelope notebook's defaults on `local` (issue 22): the model's derived context
    length is 320, so every context_length from 4096 fails, while the config as asked
    (context_length unset) serves. max_running_requests is searched with context_length
    as asked, not at 4096, which fails for context_length's reason every time."""
    def test(point):
        if "context_length" in point:
            return crash("unknown")
        return SERVES if point.get("max_running_requests", 48) <= 64 else crash("cuda_oom")

    keys = [parse_search(s) for s in SEARCH]
    trials = Trials(test, max_trials=20)
    env = envelope_search(keys, parse_fallbacks("cuda_graph=false"), trials,
                          {"context_length": None, "max_running_requests": None})
    assert env.current == {"context_length": None, "max_running_requests": 64}
    assert env.answer == ("context_length: even 4096 fails with unknown at every fallback (as "
                          "given, even 4096 fails with unknown); max_running_requests 64 serves "
                          "with graphs off; 65 fails with cuda_oom")
    assert not env.found


def test_a_spent_budget_says_what_is_known_and_what_is_not():
    keys = [parse_search(s) for s in SEARCH]
    trials = Trials(_memory_oracle(32768, 8 * 8192), max_trials=4)
    env = envelope_search(keys, parse_fallbacks("cuda_graph=false"), trials,
                          {"context_length": 131072, "max_running_requests": 256})
    assert env.spent == "the budget of 4 trials is spent" and not env.found
    assert env.uncertain() == [
        "context_length with graphs off: 4096 serves, 32768 fails with kv_pool_oom; the values "
        "between are untried", "max_running_requests: not searched"]
    timed = Trials(_memory_oracle(32768, None), max_time_s=1e-9)
    assert envelope_search(keys, [], timed, {}).spent.startswith("the time budget of 1e-09 s")


def _target_startup(point: dict) -> Outcome:
    """The embedded target's real start-up in this process (weights, KV pool, capture),
    its error read by ddlab's diagnosis: a real oracle of serving vs failing at start."""
    from ddlab.target.args import parse_args
    from ddlab.target.engine import Engine

    argv = ["--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "16",
            "--speculative-ddtree-topk-cap", "4", "--device-memory-gb", "0.5",
            "--cuda-graph-max-bs-decode", "256",
            "--context-length", str(point["context_length"]),
            "--max-running-requests", str(point["max_running_requests"])]
    if point.get("cuda_graph") is False:
        argv.append("--disable-cuda-graph")
    try:
        Engine(parse_args(argv))
    except Exception:
        return crash(ddlab.diagnose(traceback.format_exc()).kind)
    finally:
        gc.collect()  # the pools are hundreds of MB
    return SERVES


@pytest.mark.slow
def test_the_answer_is_the_true_boundary_of_the_targets_own_arithmetic(monkeypatch):
    """Every candidate tried with graphs off, the search's answer against the scan."""
    monkeypatch.setenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1")
    keys = [parse_search(s) for s in SEARCH]
    trials = Trials(_target_startup, max_trials=12)
    env = envelope_search(keys, parse_fallbacks("cuda_graph=false"), trials,
                          {"context_length": 131072, "max_running_requests": 256})
    scan = {c: _target_startup({"context_length": c, "max_running_requests": 256,
                                "cuda_graph": False}) for c in CONTEXTS}
    serving = [c for c, outcome in scan.items() if outcome.ok]
    assert serving == list(CONTEXTS[:len(serving)]), f"monotone: {scan}"
    assert env.current["context_length"] == serving[-1] == 16384
    assert scan[32768].failure == "kv_pool_oom"
    assert [t.outcome.failure for t in trials.log[:2]] == ["kv_pool_oom", "cuda_graph_capture"]
    assert len(trials.done) <= per_key_bound(keys[0]) + 1  # max_running_requests: no new trial


EIGHT = [Change(f"k{i}", i) for i in range(8)]


@pytest.mark.parametrize("culprit", range(8), ids=lambda i: f"k{i}")
def test_one_culprit_among_8_is_found_within_2log2_8_plus_2_trials(culprit):
    trials = Trials(lambda p: crash("cuda_graph_replay") if f"k{culprit}" in p else SERVES)
    b = bisect_search(EIGHT, trials)
    assert b.minimal == [culprit] and b.found
    assert b.found_after <= 2 * math.log2(8) + 2
    assert b.confirm.ok and b.answer == (
        f"culprit: k{culprit}={culprit}: the good config with only this change fails with "
        "cuda_graph_replay; removing it makes the bad config serve")


@pytest.mark.parametrize("pair", list(combinations(range(8), 2)), ids=str)
def test_two_changes_that_fail_only_together_are_both_returned(pair):
    a, b_ = (f"k{i}" for i in pair)
    trials = Trials(lambda p: crash("cuda_graph_replay") if a in p and b_ in p else SERVES,
                    max_trials=16)
    b = bisect_search(EIGHT, trials)
    assert b.minimal == list(pair) and b.found
    assert all(outcome.ok for name, outcome in b.proof.items() if name != "minimal")
    assert b.answer.startswith(f"culprits, together: {a}={pair[0]}, {b_}={pair[1]}: ")


def test_a_different_failure_is_kept_apart_never_merged():
    """k2 alone fails with kv_pool_oom (the bad config's failure); k5 alone with a replay
    crash: trials with k5 but not k2 do not reproduce the bad config's failure."""
    def test(point):
        if "k2" in point:
            return crash("kv_pool_oom")
        return crash("cuda_graph_replay") if "k5" in point else SERVES
    trials = Trials(test, max_trials=20)
    b = bisect_search(EIGHT, trials)
    assert b.failure == "kv_pool_oom" and b.minimal == [2]
    others = [t for t in trials.log if t.outcome.failure == "cuda_graph_replay"]
    assert others, "a trial failed the other way"
    assert b.answer.endswith("the bad config without it fails differently: cuda_graph_replay")


def test_a_bisect_that_cannot_start_says_why():
    assert bisect_search(EIGHT, Trials(lambda p: crash("kv_pool_oom"))).answer == (
        "the good config does not serve: it fails with kv_pool_oom; nothing to bisect from")
    assert bisect_search(EIGHT, Trials(lambda p: SERVES)).answer == \
        "the bad config serves: nothing to bisect"
    spent = bisect_search(EIGHT, Trials(lambda p: crash("x") if "k1" in p else SERVES,
                                        max_trials=3))
    assert spent.spent and spent.uncertain() == ["which of k0=0, k1=1, k2=2, k3=3 cause the x"]
    assert spent.answer.startswith("not settled: the x comes from some of these 4 changes")


def test_changes_between_two_configs_are_override_keys():
    good = make_variant("local", ["cuda_graph=false"]).config
    bad = make_variant("local", [REPLAY_FAULT, "env.X=1", "speculative_ddtree_topk_cap=null"]).config
    changes = changes_between(good, bad)
    assert {c.key: c.value for c in changes} == {
        "cuda_graph": True, "debug_drop_verify_field": "positions",
        "speculative_ddtree_topk_cap": None, "env.X": "1"}
    assert make_variant(good, {c.key: c.value for c in changes}).hash == bad.hash


# --- real searches on the embedded target ----------------------------------------------


class Host:
    """A temp project whose local host has a baseline service ddlab must put back."""

    def __init__(self, project: sweepkit.Project, baseline: str):
        self.project, self.baseline = project, baseline
        self.manager = manager_for(connect(load_host("local")))

    def baseline_pid(self) -> int:
        state = self.manager.state(self.baseline)
        assert state.active_state == "active", f"the baseline runs: {state}"
        return state.main_pid

    def runs(self) -> dict:
        """sweep id -> config hash -> {run state: how many runs}."""
        from ddlab.sweeps.store import Store

        with Store(self.project.store_path) as store:
            return {sweep_id: sweepkit.run_counts(self.project.store_path, sweep_id)
                    for sweep_id in store.sweep_ids()}


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    project = sweepkit.make_project(tmp_path_factory.mktemp("search"))
    baseline = f"ddlab-test-baseline-{uuid.uuid4().hex[:6]}"
    (project.root / "params" / "hosts" / "local.yaml").write_text(yaml.safe_dump(
        {"state_dir": str(project.state), "baseline_service": baseline}))
    with sweepkit.using(project):
        host = Host(project, baseline)
        host.manager.install(ServiceSpec(baseline, [sys.executable, "-c",
                                                    "import time; time.sleep(3600)"], workdir="/"))
        host.manager.start(baseline)
        wait_for(lambda: host.manager.state(baseline).active_state == "active", what="baseline")
        try:
            yield host
        finally:
            host.manager.remove(baseline)


def _put_back(host: Host, pid_before: int) -> None:
    assert not host.project.lock_path.exists(), "the lock is released"
    assert [s for s in host.project.services() if s != host.baseline] == [], "no variant left"
    wait_for(lambda: not sweepkit.target_pids(host.project.port), timeout_s=10,
             what="no target server left")
    assert host.baseline_pid() != pid_before, "the baseline was stopped once and started again"


@pytest.mark.slow
def test_the_fields_walk_down_automated_on_the_embedded_target(host, tmp_path):
    before = host.baseline_pid()
    report = ddlab.envelope(base="local", fixed=AS_ASKED, search=WALK, max_trials=24,
                            fallback=["cuda_graph=false"], run_dir=tmp_path, **FAST)
    print(f"OUTCOME: {report.headline}")
    print(report.table().to_string())
    assert report.status == "done" and report.found and report.exit_code == 0
    # the server cuts max_running_requests to what its KV pool holds at 16384 tokens (issue 23
    # item 6: it said "256 (the top of the range) serves", while the server ran fewer)
    head, _, tail = report.answer.partition("; max_running_requests ")
    assert head == ("context_length 16384 serves with graphs off; 32768 fails with kv_pool_oom "
                    "(as given, even 4096 fails with cuda_graph_capture)"), report.answer
    slots = int(tail.split()[0])
    assert tail == f"{slots} serves with graphs off; {slots + 1} is cut by the server", tail
    trials = report.trials
    cut = trials[trials["failure"] == "cut by the server"]
    assert not cut.empty and all(f"max_running_requests={slots}," in c for c in cut["cause"])
    # issue 23 item 6: before, every value up to the top 'served' (the ready server ran fewer
    # slots) and the answer was the top; now no value above what the server runs serves as
    # asked for the key searched (the first key's trials ran max_running_requests at 256)
    second = trials[trials["point.max_running_requests"] != 256]
    assert second.loc[second["outcome"] == "serves", "point.max_running_requests"].max() == slots
    first = trials.iloc[0]
    assert (first["role"], first["failure"]) == ("ask", "kv_pool_oom"), "from the kv_pool_oom"
    assert (first["point.context_length"], first["point.max_running_requests"]) == (131072, 256)
    capture = trials[trials["failure"] == "cuda_graph_capture"]
    assert len(capture) == 1 and capture.iloc[0]["phase"] == "graph_capture"
    off = trials[trials["point.cuda_graph"] == False]  # noqa: E712
    assert off.iloc[0]["outcome"] == "serves", "the graphs-off fallback serves"
    proof = {row["point.context_length"]: row["outcome"] for _, row in off.iterrows()
             if row["point.max_running_requests"] == 256}  # the first key's trials
    assert proof[16384] == "serves" and proof[32768] == "fails with kv_pool_oom", \
        "one trial on each side of the boundary"
    spec = parse_search(WALK[0])
    assert len(trials) <= per_key_bound(spec) + per_key_bound(parse_search(WALK[1]))
    assert "reference for ddlab-tiny" in report.known[0], "lossless: a reference ran first"
    assert all(n == "" for n in trials.loc[trials["outcome"] == "serves", "note"]), \
        "every serving trial was checked for lossless tokens"
    _put_back(host, before)
    saved = json.loads((tmp_path / "verdict.json").read_text())
    assert saved["headline"] == report.headline and (tmp_path / "trials.csv").is_file()
    assert (tmp_path / "outcome-by-value.png").stat().st_size > 10_000

    # the same search again: every trial from the store, the host not touched at all
    runs = host.runs()
    pid = host.baseline_pid()
    again = ddlab.envelope(base="local", fixed=AS_ASKED, search=WALK, max_trials=24,
                           fallback=["cuda_graph=false"], **FAST)
    assert again.answer == report.answer and again.search_id == report.search_id
    assert again.trials["reused"].all() and host.runs() == runs, "no trial ran twice"
    assert host.baseline_pid() == pid, "the baseline was not stopped"
    frame = ddlab.load_report(report.search_id).frame
    assert set(frame["config_hash"]) >= set(trials["config_hash"]), "trials are sweep cells"
    with pytest.raises(ConfigError, match="is an envelope search, not a sweep"):
        ddlab.sweep(resume=report.search_id)


# The bisect among 8 changes (the dropped verify field the culprit) runs on the real test
# host, over SSH: tests/reliability/test_search_host.py.


@pytest.mark.slow
def test_bisect_returns_both_changes_that_crash_only_together(host):
    """The dropped field crashes only with graphs on: from a graphs-off good config, the
    two changes are the answer, neither alone (the search's bound with more changes in
    the way is test_two_changes_that_fail_only_together_are_both_returned's)."""
    report = ddlab.bisect(base="local", good=["cuda_graph=false"],
                          bad=["cuda_graph=true", REPLAY_FAULT], **FAST)
    print(f"OUTCOME: {report.headline}")
    assert report.found, report.table().to_string()
    assert report.answer.startswith("culprits, together: graphs on, debug_drop_verify_field="
                                    "positions: the good config with these 2 changes "
                                    "fails with cuda_graph_replay")
    outcome = dict(zip(report.trials["changes"], report.trials["outcome"]))
    assert outcome["graphs on"] == outcome[REPLAY_FAULT] == "serves", \
        "each alone serves: tried"


@pytest.mark.slow
def test_bisect_keeps_a_different_failure_apart(host):
    """The bad config dies of its KV pool before it could serve; the dropped field makes
    trials without the pool change crash later, at replay: another failure, reported."""
    report = ddlab.bisect(base="local", bad=[REPLAY_FAULT, "mem_fraction_static=0.001",
                                             "budget=8", "random_seed=3"], **FAST)
    print(f"OUTCOME: {report.headline}")
    assert report.failure == "kv_pool_oom" and report.found
    assert report.answer.startswith("culprit: mem_fraction_static=0.001: ")
    assert report.answer.endswith("the bad config without it fails differently: "
                                  "cuda_graph_replay")
    assert any("failed differently (cuda_graph_replay): not the bad config's kv_pool_oom; "
               "kept apart, not merged" in line for line in report.known), report.known


def test_a_ctrl_c_that_threading_turned_into_another_error_is_an_interrupted_search(host, monkeypatch):
    """A Ctrl-C landing in a thread wait's lock restore reaches the search as RuntimeError('release
    unlocked lock'), raised while the KeyboardInterrupt was handled (CPython 3.11.7
    Lib/threading.py:283, :336), here from the runner's first cell on the held host (outside the
    cell's own recorded run): the search's sweep is interrupted, the interrupt reaches the caller
    with the report, and the host is put back. Before: the RuntimeError passed the search's
    handler, its sweep was called failed and the caller got the RuntimeError."""
    from ddlab.core.errors import Interrupted
    from ddlab.sweeps import search_run
    from ddlab.sweeps.store import Store

    cells = []

    def ctrl_c_as_the_cell_starts(lab, *args, **kwargs):
        cells.append(lab.name)
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("release unlocked lock")

    monkeypatch.setattr(search_run, "run_cell", ctrl_c_as_the_cell_starts)
    before = host.baseline_pid()
    with pytest.raises(Interrupted) as caught:
        ddlab.bisect(base="local", good=["cuda_graph=false"],
                     bad=["cuda_graph=false", "random_seed=11"], **FAST)
    report = caught.value.verdict
    assert cells == ["local"] and report is not None and report.status == "interrupted", report
    with Store(host.project.store_path) as store:
        assert store.sweep(report.search_id)["status"] == "interrupted"
    _put_back(host, before)


def test_a_dry_run_plans_and_touches_nothing(host):
    pid = host.baseline_pid()
    report = ddlab.envelope(base="local", fixed=AS_ASKED, search=SEARCH,
                            fallback=["cuda_graph=false"], dry_run=True)
    assert report.headline == "DRY RUN: ENVELOPE planned; nothing touched the host"
    assert "search context_length in 4096..131072 (6 candidates, powers of two)" in report.plan
    assert "fallback 1: graphs off" in report.plan
    assert host.baseline_pid() == pid and not host.project.lock_path.exists()
    with pytest.raises(ConfigError, match="the good and the bad config are the same config"):
        ddlab.bisect(base="local", bad=[], dry_run=True)
    with pytest.raises(ConfigError, match=r"max_trials=0: must be an integer >= 1"):
        ddlab.bisect(base="local", bad=[REPLAY_FAULT], max_trials=0, dry_run=True)
    with pytest.raises(ConfigError, match="a key is searched twice"):
        ddlab.envelope(base="local", search=["context_length=..256", "flags.context-length=1..8"],
                       dry_run=True)


def test_the_cli_verbs_print_the_answer_then_one_json_line(host):
    done = sweepkit_ddlab(host, "envelope", "--base", "local", "--dry-run",
                          *[f"--set={k}={v}" for k, v in AS_ASKED.items()],
                          *[f"--search={s}" for s in SEARCH], "--fallback", "cuda_graph=false")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("DRY RUN: ENVELOPE planned")
    assert json.loads(done.stdout.splitlines()[-1])["state"] == "dry-run"


def sweepkit_ddlab(host: Host, *args: str):
    import subprocess

    return subprocess.run([str(Path(sys.executable).with_name("ddlab")), *args],
                          capture_output=True, text=True, timeout=120, env=host.project.env())


@pytest.mark.slow
@pytest.mark.parametrize("notebook, parameters, headline", [
    ("envelope", {"fixed": AS_ASKED, "dry_run": True}, "DRY RUN: ENVELOPE planned"),
    ("bisect", {"bad": {"debug_drop_verify_field": "num_token_non_padded"}, "dry_run": True},
     "DRY RUN: BISECT planned"),
], ids=["envelope", "bisect"])
def test_the_notebooks_run_headless(host, notebook, parameters, headline):
    run = ddlab.run_notebook(notebook, {"base": "local", **parameters})
    assert run.status == "ok", run.render()
    assert run.verdict["headline"].startswith(headline)


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["envelope", "--set", "budget=32", "--search", "max_running_requests=1..2"],
    ["bisect", "--good", "budget=16", "--bad", "budget=32"],
], ids=["envelope-set-budget", "bisect-good-budget"])
def test_an_alias_in_the_asked_config_does_not_clash_with_the_reference(tmp_path, argv):
    """Issue 23 item 11: with no lossless reference stored, the reference cell (the start
    config without speculation) merged `budget=32` with `speculative_ddtree_budget: None`
    and the search failed at once: 'sets the same thing as budget; keep one of them'. The
    reference cell runs before any trial, so one trial is enough to reach it."""
    project = sweepkit.make_project(tmp_path)
    done = subprocess.run([str(Path(sys.executable).with_name("ddlab")), *argv, "--max-trials",
                           "1", "--timeout", "120"], capture_output=True, text=True,
                          timeout=300, env=project.env())
    assert "sets the same thing" not in done.stderr, done.stderr[-2000:]
    assert done.returncode in (0, 4, 10), (done.returncode, done.stderr[-2000:])
    assert "nospec-nograph" in done.stderr, "the reference cell ran"
    assert json.loads(done.stdout.splitlines()[-1])["kind"] == argv[0]


@pytest.mark.slow
def test_a_search_that_fails_still_prints_its_json_line_last(tmp_path):
    """Issue 23 item 13: --help promises the JSON line last; a search that failed (here: its
    host's state folder cannot be made) printed only the error. Now the error on stderr,
    the report's JSON the last line of stdout, exit 1."""
    project = sweepkit.make_project(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the state folder should be\n")
    (project.root / "params" / "hosts" / "local.yaml").write_text(
        yaml.safe_dump({"state_dir": str(blocker / "state")}))
    done = subprocess.run([str(Path(sys.executable).with_name("ddlab")), "envelope", "--search",
                           "max_running_requests=1..2", "--max-trials", "2"],
                          capture_output=True, text=True, timeout=300, env=project.env())
    assert done.returncode == 1, (done.stdout, done.stderr[-2000:])
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["state"] == "failed" and report["kind"] == "envelope"
    assert report["error"] and "not-a-folder" in done.stderr
