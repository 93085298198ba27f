"""The lossless check: greedy tokens of a speculative variant against the model's own.

SGLang 0.5.23's shape of the field's bug: a verify field dropped before the graph
replay is *skipped* (``--debug-drop-verify-mode skip``), so the graph replays stale
buffers and the server serves wrong tokens without crashing. Ready and probed, it
must still not pass: graphs on -> ``wrong_output``; graphs off -> right tokens.
The comparison itself is checked on hand-made outputs first.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import ddlab

from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError
from ddlab.lab import lossless as ll
from ddlab.lab.deploy import deployed
from ddlab.sweeps.plan import BASELINE_OVERRIDES
from ddlab.lab.watch import watch
from labkit import clean, free_port, outputs_in, site_fixture  # noqa: F401 (clean: a fixture)

# process-local only: the lossless check (the reference, the batch, the comparison) and the
# READY verdict's decode-line notes are the same code on every host kind; the skip mode's
# WRONG OUTPUT on systemd-ssh (reference, check, journal over SSH) is
# tests/lab/test_probed_replay.py's skip-mode test, and reading a systemd unit's journal
# over SSH is every systemd-ssh test of tests/lab/test_watch.py
site = site_fixture("process-local")


def _reference(*ids_lists, accept=None) -> ll.Reference:
    outputs = [ll.Output(ids=list(ids), text="", accept_length=accept) for ids in ids_lists]
    return ll.Reference(model="m", prompts=[f"p{i}" for i in range(len(outputs))],
                        max_new_tokens=4, outputs=outputs, source="test")


def test_equal_tokens_pass_and_the_first_difference_is_named():
    ref = _reference([1, 2, 3, 4], [5, 6, 7, 8])
    same = ll.compare(ref, [ll.Output([1, 2, 3, 4], ""), ll.Output([5, 6, 7, 8], "")])
    assert same.ok and same.match_rate == 1.0 and not same.first_diff
    wrong = ll.compare(ref, [ll.Output([1, 2, 3, 4], "", 2.5), ll.Output([5, 9, 9, 8], "", 2.5)])
    assert not wrong.ok and wrong.match_rate == 0.75
    assert {k: wrong.first_diff[k] for k in ("prompt_index", "position", "expected", "actual")} \
        == {"prompt_index": 1, "position": 1, "expected": 6, "actual": 9}
    assert "prompt 1 ('p1') diverges at token 1: expected 6, got 9" in wrong.summary
    assert "accept length 2.50" in wrong.summary


def test_a_shorter_output_differs_at_its_end_and_tolerance_allows_a_rate():
    ref = _reference([1, 2, 3, 4])
    short = ll.compare(ref, [ll.Output([1, 2, 3], "")])
    assert not short.ok and short.first_diff["position"] == 3 and short.first_diff["actual"] == "<end>"
    assert ll.compare(ref, [ll.Output([1, 2, 3, 9], "")], tolerance=0.75).ok
    assert not ll.compare(ref, [ll.Output([1, 2, 9, 9], "")], tolerance=0.75).ok


def test_without_output_ids_the_text_is_compared_and_the_summary_says_so():
    ref = ll.Reference(model="m", prompts=["p"], max_new_tokens=4,
                       outputs=[ll.Output([], "abcd")], source="test")
    check = ll.compare(ref, [ll.Output([], "abXd")])
    assert not check.ok and "characters (no output_ids)" in check.compared


@pytest.mark.parametrize("bad", [0, 1.5, -1, float("nan"), "1", True, None])
def test_a_tolerance_outside_0_to_1_is_refused_with_the_fix(bad):
    with pytest.raises(ConfigError, match="lossless_tolerance=.*token match rate in") as err:
        ll.check_tolerance(bad)
    assert "1.0 demands every token equal" in err.value.fix


def test_references_are_stored_by_model_prompts_and_length(tmp_path):
    ref = _reference([1, 2], [3, 4])
    path = ll.save_reference(ref, store=tmp_path)
    assert ll.load_reference("m", ref.prompts, 4, store=tmp_path).outputs[1].ids == [3, 4]
    assert ll.load_reference("m", ref.prompts, 5, store=tmp_path) is None
    assert ll.load_reference("other", ref.prompts, 4, store=tmp_path) is None
    path.write_text("{ not json")
    assert ll.load_reference("m", ref.prompts, 4, store=tmp_path) is None  # broken: none


def _watched(site, overrides: dict):
    variant = make_variant(site.base, {"port": free_port(), **overrides})
    site.made.append(variant.unit_name)
    with deployed(site.profile, variant) as (lab, _dep):
        verdict = watch(lab, timeout_s=120, probe=True, grace_s=0.5)
    site.assert_put_back(variant.unit_name)
    return verdict


PROMPTS_OF_MY_OWN = ["def add(a, b):\n    ", "The capital of France is"]


def test_the_prompts_are_the_callers_or_the_shipped_ones():
    assert ll.check_prompts(PROMPTS_OF_MY_OWN) == tuple(PROMPTS_OF_MY_OWN)
    assert ll.check_prompts(()) == ll.check_prompts(None) == ll.PROMPTS
    # each prompt set is a reference of its own
    assert ll.reference_key("m", PROMPTS_OF_MY_OWN, 32) != ll.reference_key("m", ll.PROMPTS, 32)


@pytest.mark.parametrize("bad", ["one string, not a list", [""], ["ok", 3], ["x" * 4001],
                                 ["p"] * 33, {"a": 1}])
def test_bad_prompts_are_refused_with_the_value_and_the_fix(bad):
    with pytest.raises(ConfigError, match="lossless_prompts=.*must be a list of 1 to 32") as err:
        ll.check_prompts(bad)
    assert "e.g." in err.value.fix


def test_a_sweeps_prompts_and_tolerance_survive_the_store_and_bad_ones_stop_it_early(tmp_path):
    from ddlab.sweeps.plan import SweepOptions

    options = SweepOptions(lossless_prompts=PROMPTS_OF_MY_OWN, lossless_tolerance=0.99)
    again = SweepOptions(**json.loads(json.dumps(options.__dict__)))  # as the store keeps it
    assert again == options and again.lossless_prompts == tuple(PROMPTS_OF_MY_OWN)
    assert SweepOptions(lossless_prompts=list(ll.PROMPTS)).lossless_prompts == ()
    with pytest.raises(ConfigError, match="lossless_prompts"):
        ddlab.sweep(lossless_prompts="a string", dry_run=True)
    with pytest.raises(ConfigError, match="lossless_prompts"):
        ddlab.watch("no-such-host-anywhere", lossless_prompts=[""])


@pytest.mark.slow
def test_skip_mode_wrong_tokens_are_flagged_with_graphs_on_and_pass_with_graphs_off(clean, tmp_path):
    site = clean
    with outputs_in(tmp_path / "outputs"):
        plain = _watched(site, BASELINE_OVERRIDES)
        assert plain.state == "ready", plain.render()
        assert plain.lossless["recorded"] and not plain.lossless["checked"], plain.lossless
        fault = {"debug_drop_verify_field": "num_token_non_padded",
                 "debug_drop_verify_mode": "skip"}
        wrong = _watched(site, fault)
        right = _watched(site, {**fault, "cuda_graph": False})
    assert wrong.state == "wrong_output" and wrong.exit_code == 7, wrong.render()
    assert all(p.ok for p in wrong.probes), "it serves: only the tokens are wrong"
    assert wrong.headline.startswith("WRONG OUTPUT: ") and "diverges at token" in wrong.headline
    assert wrong.diagnosis.kind == "lossless_violation" and "graphs off" in wrong.next_step
    assert wrong.lossless["checked"] and wrong.lossless["first_diff"]["expected"] != \
        wrong.lossless["first_diff"]["actual"]
    saved = json.loads((Path(wrong.run_dir) / "verdict.json").read_text())
    assert saved["state"] == "wrong_output" and saved["lossless"]["match_rate"] < 1.0
    prompts = len(ll.PROMPTS)  # the check's batch reached the scheduler as one batch (one
    # request per prompt, sent at once, arrived a few at a time on a loaded machine)
    assert f"Prefill batch, #new-seq: {prompts}," in (Path(wrong.run_dir) / "journal.log").read_text()
    assert right.state == "ready" and right.lossless["ok"] and right.lossless["match_rate"] == 1.0, \
        right.render()
    assert right.lossless["took_s"] < 5  # measured per cell; the budget is in bench/


@pytest.mark.slow
def test_a_sweep_marks_the_wrong_cell_and_its_verdict_says_so_first(tmp_path):
    """The eager baseline cell records the reference; the skip-mode cells with graphs on
    are measured but WRONG OUTPUT, never the best cell; with graphs off they are right."""
    import sweepkit

    project = sweepkit.make_project(tmp_path)
    with sweepkit.using(project):
        report = ddlab.sweep(budget=None, topk_cap=None, cuda_graph=[True, False],
                             fixed={"debug_drop_verify_field": "num_token_non_padded",
                                    "debug_drop_verify_mode": "skip"},
                             lossless_prompts=PROMPTS_OF_MY_OWN,
                             **{k: v for k, v in sweepkit.FAST_OPTIONS.items() if k != "grace_s"})
    frame = report.frame.set_index(["role", "cuda_graph"])
    # the user's prompts were compared, and the cells table says so
    said = frame.loc[("grid", True), "lossless"]
    assert "2 prompts alone and in one batch" in said and "fails tolerance 1" in said, said
    assert "reference" in frame.loc[("baseline", False), "lossless"]
    assert frame.loc[("baseline", False), "status"] == "measured", "eager: the reference"
    # the dropped field reaches the no-speculation decode graph as well: caught too
    assert frame.loc[("baseline", True), "status"] == "wrong_output"
    assert frame.loc[("grid", True), "status"] == "wrong_output"
    assert frame.loc[("grid", False), "status"] == "measured"
    assert frame.loc[("grid", True), "output_tok_s"] > 0, "measured, to show how fast it is wrong"
    headline = report.verdict.headline
    assert "2 WRONG OUTPUT (not lossless" in headline.split(". Best")[0], headline
    best = report.verdict.summary.get("best") or {}
    assert best.get("cuda_graph") is not True, "a wrong cell is never the best"


@pytest.mark.slow
def test_graphs_asked_for_but_never_run_are_said_in_the_ready_verdict(clean, tmp_path):
    """Seen on the H200 (docs/gpu-run, fault c1): graphs sized for 16 tokens per request
    and a verify batch of 33 under 0.5.23's width guard run eagerly, at half the speed;
    the cell looked healthy. Its READY verdict now says the figures are eager ones."""
    with outputs_in(tmp_path / "outputs"):
        verdict = _watched(clean, {"speculative_ddtree_budget": 32,
                                   "debug_graph_tokens_per_req": 16})
    assert verdict.state == "ready", verdict.render()
    assert any("every decode line says cuda graph: False" in n for n in verdict.notes), \
        verdict.notes


@pytest.mark.slow
def test_a_sweep_names_a_graphs_on_cell_that_ran_without_them_and_never_picks_it(tmp_path):
    """The H200's fault c1 (docs/gpu-run): measured at half the graphs' speed, it looked
    like a healthy cell. Its row says the graphs never ran, the headline names it, and
    it is never the best cell."""
    import sweepkit

    project = sweepkit.make_project(tmp_path)
    with sweepkit.using(project):
        report = ddlab.sweep(budget=32, topk_cap=4, cuda_graph=True, baseline=False,
                             extra=[{"debug_graph_tokens_per_req": 16}],
                             **{k: v for k, v in sweepkit.FAST_OPTIONS.items() if k != "grace_s"})
    frame = report.frame.set_index("role")
    assert frame.loc["grid", "graphs_ran"] == True  # noqa: E712
    assert frame.loc["extra", "status"] == "measured" and frame.loc["extra", "graphs_ran"] == False  # noqa: E712
    summary = report.verdict.summary
    assert summary["graphs_not_run"] == [frame.loc["extra", "name"]]
    assert f"warning: {frame.loc['extra', 'name']} (1 cell) asked for CUDA graphs but ran " \
        "WITHOUT them" in report.verdict.render()
    assert re.search(r"; \d+ warnings?$", report.verdict.headline), "a busy host: more"
    assert summary["best"]["name"] == frame.loc["grid", "name"]
