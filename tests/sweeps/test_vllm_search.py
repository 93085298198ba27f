"""Bisect, envelope and a workload sweep on a vLLM base (issue 28 item 4): the loop's last
verbs on ``local`` in vLLM's dialect, in vLLM's words.

First what needs no server: the changes a bisect tries are the family's override keys
(``num_speculative_tokens``, a key of ``--speculative-config``, ``cuda_graph`` for
``--enforce-eager``), never one opaque JSON flag; an envelope's key is read and bounded by
vLLM's own table; the envelope notebook's default search (SGLang's) gives way to the
family's; a workload sweep asks no ``--enable-metrics`` of vLLM. Then real searches and a
real workload sweep on the embedded target (``python -m ddlab.target --dialect vllm``),
each trial a server deployed by the process manager of a temp project: a bisect that
finds the wrong-token fault from its lossless violation (through plain papermill), an
envelope that falls back to ``--enforce-eager`` when the graphs' capture does not fit,
and a sweep at concurrency 1 and 4 whose acceptance is vLLM's own figure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import ddlab
import sweepkit
from ddlab.config.families import FAMILIES
from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError
from ddlab.sweeps.bisect import changes_between
from ddlab.sweeps.envelope import parse_search, start_value
from ddlab.sweeps.search import describe_point
from labkit import DDLAB, REPO

VLLM = FAMILIES["vllm"]
WRONG_TOKENS = "flags.debug_drop_verify_field=seq_lens"  # graphs on: silent wrong tokens
FAST = {"timeout_s": 120}


# --- without a server --------------------------------------------------------------------


def test_a_bisects_changes_are_the_familys_override_keys():
    """Before, the whole ``--speculative-config`` was one change (``flags.speculative_config=
    {...}``): a bisect could not tell the drafted tokens from the drafter."""
    good = make_variant("vllm-eagle3").config
    bad = make_variant("vllm-eagle3", [WRONG_TOKENS, "num_speculative_tokens=4",
                                       "cuda_graph=false", "speculative_config.model=other/drafter",
                                       "max_num_seqs=null", "env.X=1"]).config
    changes = changes_between(good, bad)
    assert {c.key: c.value for c in changes} == {
        "num_speculative_tokens": 4, "speculative_config.model": "other/drafter",
        "cuda_graph": False, "max_num_seqs": None, "debug_drop_verify_field": "seq_lens",
        "env.X": "1"}
    assert make_variant(good, {c.key: c.value for c in changes}).hash == bad.hash
    labels = [c.label for c in changes]
    assert "graphs off (--enforce-eager)" in labels and "num_speculative_tokens=4" in labels


def test_speculation_removed_or_added_is_one_change():
    good = make_variant("vllm-eagle3").config
    nospec = make_variant("vllm-eagle3", ["speculative_config=null"]).config
    assert [(c.key, c.value) for c in changes_between(good, nospec)] == [
        ("speculative_config", None)]
    back = changes_between(nospec, good)
    assert [c.key for c in back] == ["speculative_config"]
    assert make_variant(nospec, {c.key: c.value for c in back}).hash == good.hash


def test_graphs_are_said_in_vllms_flags_and_sglangs_words_are_unchanged():
    assert describe_point({"cuda_graph": False}, VLLM) == "graphs off (--enforce-eager)"
    assert describe_point({"cuda_graph": True}, VLLM) == "graphs on (--no-enforce-eager)"
    assert describe_point({"cuda_graph": False}) == "graphs off"
    assert describe_point({"cuda_graph": False}, FAMILIES["sglang"]) == "graphs off"


def test_an_envelope_key_is_read_and_bounded_by_vllms_table():
    spec = parse_search("num_speculative_tokens=..8", VLLM)  # > 0: speculative.py:455
    assert (spec.values[0], spec.values[-1], spec.pow2) == (1, 8, False)
    assert start_value(spec, make_variant("vllm-eagle3").config) == 3  # inside the JSON
    assert parse_search("max_model_len=64..320", VLLM).values == (64, 128, 256, 320)
    with pytest.raises(ConfigError, match="gpu_memory_utilization is not an integer flag "
                                          r"\(float\).*num_speculative_tokens, max_num_seqs"):
        parse_search("gpu_memory_utilization=1..2", VLLM)
    with pytest.raises(ConfigError, match="budget is an SGLang knob"):
        parse_search("budget=4..32", VLLM)


def test_search_plans_on_a_vllm_base_speak_vllm():
    bisect = ddlab.bisect(base="vllm-eagle3", bad=[WRONG_TOKENS, "num_speculative_tokens=4",
                                                  "cuda_graph=false"], dry_run=True)
    assert "change 1: num_speculative_tokens=4" in bisect.plan
    assert "change 2: graphs off (--enforce-eager)" in bisect.plan
    assert "speculative_config=" not in bisect.plan
    envelope = ddlab.envelope(base="vllm-eagle3", search={"num_speculative_tokens": "..4"},
                              fallback=[{"cuda_graph": False}], dry_run=True)
    assert "search num_speculative_tokens in 1..4 (4 candidates, integers)" in envelope.plan
    assert "fallback 1: graphs off (--enforce-eager)" in envelope.plan


def test_the_envelope_notebooks_default_search_gives_way_to_the_familys():
    """The notebook's default is SGLang's (context_length, max_running_requests), which a
    vLLM base refused; the family's own stands in, as the sweep's default grid does."""
    default = {"context_length": "4096..131072", "max_running_requests": "8..256"}
    report = ddlab.envelope(base="vllm-eagle3", search=default, dry_run=True)
    assert "search num_speculative_tokens in 1..16" in report.plan
    assert "search max_num_seqs in 8..256" in report.plan
    sglang = ddlab.envelope(base="local", search=default, dry_run=True)
    assert "search context_length in 4096..131072" in sglang.plan


def test_a_workload_sweep_asks_no_enable_metrics_of_vllm():
    """vLLM serves /metrics without a flag; SGLang's --enable-metrics is no vLLM option (it
    was added to every cell, and the plan refused it)."""
    plan = ddlab.sweep(base="vllm-eagle3", grid={"num_speculative_tokens": [2]},
                       cuda_graph=[False], concurrency=[1, 4], dry_run=True)
    cell = make_variant("vllm-eagle3", {"num_speculative_tokens": 2, "cuda_graph": False})
    assert cell.hash in set(plan.frame["config_hash"]), "the cell as the grid says, no more"
    sglang = ddlab.sweep(base="local", budget=[4], topk_cap=[4], cuda_graph=[False],
                         concurrency=[1, 4], dry_run=True)
    counted = make_variant("local", {"budget": 4, "topk_cap": 4, "cuda_graph": False,
                                     "enable_metrics": True})
    assert counted.hash in set(sglang.frame["config_hash"]), "SGLang's cells count, as before"


# --- on the embedded target in vLLM's dialect --------------------------------------------


def _vllm_project(folder: Path) -> sweepkit.Project:
    """A temp project whose vLLM bases listen on its free port."""
    project = sweepkit.make_project(folder)
    for path in (project.root / "params" / "base").glob("vllm-*.yaml"):
        data = yaml.safe_load(path.read_text())
        data["flags"]["port"] = project.port
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return project


@pytest.mark.slow
def test_papermill_bisect_finds_the_wrong_token_fault_on_a_vllm_base(tmp_path):
    """``papermill notebooks/bisect.ipynb out.ipynb -p base vllm-eagle3 -p bad ...``: the
    lossless reference (no speculation, eager) runs first, so the fault that only serves
    wrong tokens is a failure (before, no reference was asked for a vLLM config and the
    bad config 'served'); the answer names the fault, not the drafted tokens."""
    project = _vllm_project(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "papermill", str(REPO / "notebooks" / "bisect.ipynb"),
         str(tmp_path / "out.ipynb"), "-p", "base", "vllm-eagle3",
         "-p", "bad", "{debug_drop_verify_field: seq_lens, num_speculative_tokens: 4}",
         "-p", "timeout_s", "120", "-p", "run_dir", str(run_dir)],
        capture_output=True, text=True, timeout=420, env=project.env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    print(f"OUTCOME: {verdict['headline']}")
    assert verdict["found"] and verdict["failure"] == "lossless_violation", verdict["headline"]
    assert verdict["answer"].startswith("culprit: debug_drop_verify_field=seq_lens: "), \
        verdict["answer"]
    assert verdict["answer"].endswith("removing it makes the bad config serve")
    assert any(line.startswith("reference for ddlab-tiny: vllm-eagle3-nospec-eager serves")
               for line in verdict["known"]), verdict["known"]
    trials = pd.read_csv(run_dir / "trials.csv")
    serves = trials[trials["outcome"] == "serves"]
    assert set(serves["changes"]) == {"as given", "num_speculative_tokens=4"}
    assert serves["note"].isna().all(), "every serving trial was checked for lossless tokens"
    for folder in trials["run_dir"]:
        assert "--dialect vllm ddlab-tiny" in (Path(folder) / "unit.service").read_text()
    sweepkit.assert_host_put_back(project)


@pytest.mark.slow
def test_the_envelope_falls_back_to_enforce_eager_when_capture_does_not_fit(tmp_path):
    """A 0.03 GiB device: the graphs' static buffers do not fit at any drafted length
    (the capture's OOM, in phase graph_capture); ``--enforce-eager`` serves every one."""
    project = _vllm_project(tmp_path)
    with sweepkit.using(project):
        report = ddlab.envelope(base="vllm-eagle3", fixed={"device_memory_gb": 0.03},
                                search={"num_speculative_tokens": "1..2"},
                                fallback=[{"cuda_graph": False}], run_dir=tmp_path, **FAST)
    print(f"OUTCOME: {report.headline}")
    print(report.table().to_string())
    assert report.found and report.exit_code == 0
    assert report.answer.startswith("num_speculative_tokens 2 (the top of the range) serves "
                                    "with graphs off (--enforce-eager) (as given, even 1 "
                                    "fails with "), report.answer
    assert report.next_step == (
        "deploy the envelope's values (ddlab deploy --base vllm-eagle3 --set "
        "device_memory_gb=0.03 --set cuda_graph=false --set num_speculative_tokens=2), "
        "then sweep around them")
    trials = report.trials
    graphs = trials[trials["fallback"] == "as given"]
    assert len(graphs) == 3 and (graphs["phase"] == "graph_capture").all(), graphs.to_string()
    eager = trials[trials["fallback"] == "with graphs off (--enforce-eager)"]
    assert list(eager["point.num_speculative_tokens"]) == [1, 2]
    assert (eager["outcome"] == "serves").all()
    sweepkit.assert_host_put_back(project)


@pytest.mark.slow
def test_a_workload_sweep_on_a_vllm_base_measures_every_level_in_its_words(tmp_path):
    """``ddlab run sweep -p base vllm-eagle3 -p concurrency '[1, 4]'``: each cell's server
    at both levels, its acceptance vLLM's mean acceptance length from its own counters
    (per prompt set and per draft position), the speedup per level over the eager
    no-speculation baseline."""
    project = _vllm_project(tmp_path)
    done = subprocess.run(
        [DDLAB, "run", "sweep", "-p", "base", "vllm-eagle3",
         "-p", "grid", "{num_speculative_tokens: [2]}", "-p", "cuda_graph", "[false]",
         "-p", "concurrency", "[1, 4]", "-p", "requests", "4", "-p", "max_new_tokens", "32",
         "-p", "max_rounds", "3", "-p", "ci_target", "0", "-p", "bracket", "False"],
        capture_output=True, text=True, timeout=600, env=project.env(), cwd=REPO)  # 1 round a level
    runs = project.runs()
    assert done.returncode == 0 and runs, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    levels = pd.read_csv(runs[-1] / "levels.csv")
    assert sorted(set(levels["concurrency"])) == [1, 4] and len(levels) == 4
    assert set(levels["family"]) == {"vllm"}
    spec = levels[levels["role"] == "grid"]
    for _, row in spec.iterrows():  # 1 + accepted / drafts: 1 .. tokens + 1
        assert 1 < row["accept_length_server"] <= 3, row.to_dict()
        assert row["speedup"] > 0 and row["server_requests_after"] > 0
    assert levels[levels["role"] == "baseline"]["accept_length_server"].isna().all()
    verdict = json.loads((runs[-1] / "verdict.json").read_text())
    details = "\n".join(verdict["details"])
    assert "mean acceptance length by prompt set, vllm-eagle3-t2-eager: chat " in details
    assert "(server counters); accepted at draft position 1/2: chat " in details
    for folder in pd.read_csv(runs[-1] / "cells.csv")["run_dir"]:
        unit = (Path(folder) / "unit.service").read_text()
        assert "--dialect vllm ddlab-tiny" in unit and "enable-metrics" not in unit
    sweepkit.assert_host_put_back(project)
