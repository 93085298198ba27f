"""Searches over SSH on the real test host (issue 15): ``ddlab bisect`` finds the
dropped verify field among 4 changes (among 8, each culprit in turn, is
tests/sweeps/test_search.py's, in-process: here the trials over SSH are under test);
and ``ddlab envelope``, walking the field's deployment down from a ``kv_pool_oom``
to the envelope that serves (each trial a systemd unit of the embedded target on the
test host), interrupted with SIGINT in the middle of a trial, puts the baseline back,
then resumes without running a finished trial twice and gives the walk-down's answer.

The bench is ``faultkit``'s: a temp project whose ``th`` profile reaches the test
host (systemd over SSH) and names a baseline service that ddlab must stop and put back.
"""

from __future__ import annotations

import math
import signal
import time

import faultkit as fk
import pytest

import sweepkit
from ddlab.sweeps.envelope import parse_search
from ddlab.sweeps.store import DONE_STATES, Store
from labkit import REPLAY_FAULT, last_json, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

AS_ASKED = ["--set", "env.SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
            "--set", "device_memory_gb=0.5", "--set", "cuda_graph_max_bs_decode=256",
            "--set", "context_length=131072", "--set", "max_running_requests=256"]
# the first key of tests/sweeps/test_search.py's walk-down (which searches max_running_requests
# after it, on this machine): the interrupt and the resume over SSH are under test here
SEARCH = ["context_length=4096..131072"]
ENVELOPE = ["envelope", "--host", "th", *AS_ASKED, "--search", SEARCH[0],
            "--fallback", "cuda_graph=false", "--timeout", "120", "--max-trials", "24"]
ANSWER = ("context_length 16384 serves with graphs off; 32768 fails with kv_pool_oom (as "
          "given, even 4096 fails with cuda_graph_capture)")


def _fresh(bench: fk.Bench, tmp_path) -> fk.Bench:
    wait_for(bench.baseline_active, timeout_s=60, what="the baseline to run before the test")
    assert bench.lock() is None and bench.variants() == []
    bench.project.outputs = tmp_path / "outputs"
    return bench


def _trials_done(bench: fk.Bench) -> dict[str, str]:
    """config hash -> status of the search's finished trial cells (the latest sweep's)."""
    if not bench.store_path.exists():
        return {}
    with Store(bench.store_path) as store:
        sweep_id = store.latest_sweep_id()
        cells = store.cells(sweep_id) if sweep_id else []
    return {c["config_hash"]: c["status"] for c in cells
            if c["role"] == "trial" and c["status"] in DONE_STATES}


def _running(bench: fk.Bench) -> bool:
    """A trial's server is deployed on the host right now."""
    return bool(bench.current_service())


def test_bisect_over_ssh_finds_the_dropped_verify_field(th, tmp_path):
    bench = _fresh(th, tmp_path)
    bad = [REPLAY_FAULT, "budget=8", "topk_cap=2", "env.DDLAB_TEST_NOTE=1"]
    done = fk.ddlab_in(bench, "bisect", "--host", "th", "--timeout", "120",
                       *[f"--bad={item}" for item in bad], timeout_s=800)
    assert done.returncode == 0, done.stderr[-3000:]
    report = last_json(done.stdout)
    print(f"OUTCOME: found after {report['found_after']} of {len(report['trials'])} trials: "
          f"{report['headline']}")
    assert report["answer"] == ("culprit: debug_drop_verify_field=positions: the good "
                                "config with only this change fails with cuda_graph_replay; "
                                "removing it makes the bad config serve")
    assert report["failure"] == "cuda_graph_replay"
    roles = [t["role"] for t in report["trials"]]
    assert roles[:2] == ["good", "bad"] and roles[-1] == "confirm", roles
    assert report["found_after"] <= 2 * math.log2(len(bad)) + 2
    bench.assert_put_back()


def test_an_interrupted_envelope_resumes_without_running_a_trial_twice(th, tmp_path):
    """Also the walk-down over SSH: the resumed search gives the same answer for
    context_length, in the bound, as tests/sweeps/test_search.py's walk-down on this machine."""
    bench = _fresh(th, tmp_path)
    proc = fk.popen_ddlab(bench, *ENVELOPE)
    try:
        def two_done_and_a_third_running():
            assert proc.poll() is None, f"ended first: {proc.communicate()}"
            return len(_trials_done(bench)) >= 2 and _running(bench)
        wait_for(two_done_and_a_third_running, timeout_s=400, what="a third trial running")
        done_before = _trials_done(bench)
        sent = fk.interrupt(proc.pid, signal.SIGINT)
        out, err = fk.finish(proc, timeout_s=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    took_s = time.monotonic() - sent
    assert proc.returncode == 130, err[-3000:]
    assert "[envelope] resume: run the same search again" in err
    assert last_json(out)["state"] == "interrupted", "the JSON line is still the last (item 13)"
    bench.assert_put_back()
    print(f"OUTCOME: SIGINT in trial {len(done_before) + 1}: exit 130, baseline back "
          f"{took_s:.1f} s after the signal")
    with Store(bench.store_path) as store:
        search_id = store.latest_sweep_id()
        assert store.sweep(search_id)["status"] == "interrupted"

    resumed = fk.ddlab_in(bench, *ENVELOPE, timeout_s=800)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    report = last_json(resumed.stdout)
    assert report["answer"] == ANSWER, report["answer"]
    assert report["search_id"] == search_id and report["found"]
    trials = report["trials"]
    print(f"OUTCOME: {len(trials)} trials over SSH: {report['headline']}")
    assert (trials[0]["role"], trials[0]["failure"]) == ("ask", "kv_pool_oom")
    assert [t["failure"] for t in trials].count("cuda_graph_capture") == 1
    off = {t["point.context_length"]: t["outcome"] for t in trials
           if t.get("point.cuda_graph") is False}
    assert off[16384] == "serves" and off[32768] == "fails with kv_pool_oom", "both sides"
    assert len(trials) <= sum(math.ceil(math.log2(len(parse_search(s).values))) + 3
                              for s in SEARCH)
    assert all(t["run_dir"] for t in trials), "each trial's evidence is on disk"
    counts = sweepkit.run_counts(bench.store_path, search_id)
    for config_hash in done_before:
        assert sum(counts[config_hash].values()) == 1, f"a finished trial ran again: {counts}"
    reused = [t for t in report["trials"] if t["config_hash"] in done_before]
    assert len(reused) == len(done_before) and all(t["reused"] for t in reused)
    assert any(not t["reused"] for t in report["trials"]), "the rest ran now"
    bench.assert_put_back()
