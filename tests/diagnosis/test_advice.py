"""ddlab.diagnosis.advice: every flag a suggestion proposes is one the user's release takes.

The suggestion of every fixture (one per signature at least) is rendered for three
releases and three algorithms; every ``--flag [value]`` it proposes (written in
backticks) is read by that release's own parser table (:func:`ddlab.config.sglang.
flag_table`, with the DDTree fork's overlay for DDTREE) and must draw no error. A
``--`` outside a proposal is only allowed inside a double-quoted quote of the log.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ddlab.config.sglang import flag_table
from ddlab.diagnosis.advice import family, render
from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.sglang_reading import read_sglang
from fieldkit import proposals, quarter, quarters

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"
VERSIONS = ("0.4.10.post2", "0.5.10", "0.5.23")
ALGORITHMS = ("EAGLE", "DFLASH", "DDTREE")


def _crash_logs() -> list[Path]:
    names = list(LOGS.glob("*.log")) + list(LOGS.glob("sglang/*.log")) + list(LOGS.glob("pastes/*.log"))
    # the real logs that stand for issue 24's classes (work split only)
    names += [LOGS / "real" / f"{i}.log" for i in json.loads((LOGS / "real" / "classes.json").read_text())["logs"]]
    return sorted(p for p in names if not p.name.startswith(("healthy", "stopped", "startup_cut")))


LOG_FILES = _crash_logs()


def _refused(argv: list[str], table) -> list[str]:
    if len(argv) == 1 and "=" not in argv[0]:  # a flag named without a value: it must exist
        return [] if table.action(argv[0]) else [f"{argv[0]}: no such option"]
    return [str(f) for f in table.check(argv) if f.level == "error"]


# Each test reads a quarter of the crash logs, each log once (diagnose keeps its last readings), and judges the advice
# for every release and algorithm from that reading: make check the first quarter, make test all four.
@pytest.mark.parametrize("q", quarters())
def test_every_proposed_flag_is_taken_by_that_release(q):
    tables = {(v, a): flag_table(v, overlays=("ddtree",) if a == "DDTREE" else ())
              for v in VERSIONS for a in ALGORITHMS}
    problems = []
    for path in quarter(LOG_FILES, q):
        text = path.read_bytes().decode("utf-8")
        for (version, algorithm), table in tables.items():
            result = diagnose(text, version=version, algorithm=algorithm)
            for argv in proposals(result.suggestion or ""):
                problems += [f"{path.name} ({version}, {algorithm}): {p}" for p in _refused(argv, table)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("q", quarters())
def test_no_ddtree_advice_for_other_algorithms(q):
    """Only a log that itself asks for DDTree (an unknown algorithm, a fork flag) may hear of it."""
    for path in quarter(LOG_FILES, q):
        text = path.read_bytes().decode("utf-8")
        if re.search(r"ddtree", text, re.I) and diagnose(text).kind == "bad_argument":
            continue
        for algorithm in ("NONE", "EAGLE3", "DFLASH", "NGRAM"):
            suggestion = diagnose(text, version="0.5.23", algorithm=algorithm).suggestion
            assert not re.search(r"ddtree|budget\+1", suggestion or "", re.I), (path.name, algorithm, suggestion)


def test_a_log_read_again_for_another_release_is_not_read_again_and_its_answers_are_not_shared():
    text = (LOGS / "replay_size.journal-iso.log").read_text()
    read_sglang.cache_clear()
    first = diagnose(text)
    first.facts["changed_by_the_caller"] = True
    for version, algorithm in [("0.4.10.post2", "EAGLE"), ("0.5.23", "DDTREE")]:
        named = diagnose(text, version=version, algorithm=algorithm)
        assert (named.sglang_version, named.algorithm) == (version, algorithm)
    again = diagnose(text)
    assert read_sglang.cache_info().hits == 3 and read_sglang.cache_info().misses == 1
    assert "changed_by_the_caller" not in again.facts and again.render() == diagnose(text + "\n").render()
    assert "budget+1" in diagnose(text, algorithm="DDTREE").suggestion  # the advice is still each caller's own


def test_ddtree_users_get_the_budget_sizing():
    text = (LOGS / "replay_size.journal-iso.log").read_text()
    assert "budget+1" in diagnose(text, algorithm="DDTREE").suggestion
    assert "budget+1" not in diagnose(text, algorithm="EAGLE").suggestion


@pytest.mark.parametrize("version, spelled", [
    ("0.4.10.post2", "`--cuda-graph-max-bs 16`"), ("0.5.10", "`--cuda-graph-max-bs 16`"),
    ("0.5.23", "`--cuda-graph-max-bs-decode 16`"),
], ids=["0.4.10", "0.5.10", "0.5.23"])
def test_flag_names_follow_the_release(version, spelled):
    text = (LOGS / "capture_failed_oom.cat.log").read_text()
    assert spelled in diagnose(text, version=version).suggestion


@pytest.mark.parametrize("version, graphs_off", [
    ("0.4.10.post2", "`--disable-cuda-graph`"), ("0.5.23", "`--cuda-graph-backend-decode=disabled`"),
], ids=["0.4.10", "0.5.23"])
def test_turning_graphs_off_is_said_the_way_the_release_says_it(version, graphs_off):
    text = (LOGS / "replay_none.journal.log").read_text()
    assert graphs_off in diagnose(text, version=version).suggestion


def test_without_a_version_the_advice_is_neutral():
    text = "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    suggestion = diagnose(text).suggestion
    assert "`--cuda-graph-max-bs-decode 16` (before 0.5.14: `--cuda-graph-max-bs 16`)" in suggestion
    assert "`--cuda-graph-backend-decode=disabled` (before 0.5.14: `--disable-cuda-graph`)" in suggestion


def test_a_sentence_needing_a_flag_the_release_lacks_is_dropped():
    sentences = ("Keep this.", "Try `--speculative-dflash-block-size 8`.")
    assert render(sentences, "0.4.10.post2") == "Keep this."
    assert render(sentences, "0.5.23") == "Keep this. Try `--speculative-dflash-block-size 8`."
    assert render(("Algorithm `--speculative-algorithm DFLASH`.",), "0.5.10") == ""


def test_a_given_version_and_algorithm_win_over_the_logs_own():
    text = (LOGS / "sglang" / "cuda_graph_replay__0.5.23__nonetype-copy-replay-inputs.log").read_text()
    from_log = diagnose(text)
    given = diagnose(text, version="0.4.10.post2", algorithm="EAGLE3")
    assert (from_log.sglang_version, from_log.algorithm) == ("0.5.20", "DFLASH")
    assert (given.sglang_version, given.algorithm) == ("0.4.10.post2", "EAGLE3")
    assert "`--disable-cuda-graph`" in given.suggestion


def test_the_positional_patterns_argument_still_works():
    text = (LOGS / "healthy.journal.log").read_text()
    evidence = diagnose(text, [r"Capture cuda graph end"]).evidence
    assert any("Capture cuda graph end" in line for line in evidence)


@pytest.mark.parametrize("name, family_", [
    ("EAGLE", "eagle"), ("eagle3", "eagle"), ("NEXTN", "eagle"), ("DFLASH", "dflash"), ("DDTREE", "ddtree"),
    ("NGRAM", "ngram"), ("NONE", "none"), (None, None), ("SOMETHING", None),
], ids=lambda v: str(v))
def test_algorithm_families(name, family_):
    assert family(name) == family_


def test_unknown_says_the_first_error_line_and_where_to_look():
    text = ("[2026-12-01 08:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/opt/sglang/.venv/lib/python3.11/site-packages/sglang/srt/layers/logits_processor.py", '
            "line 547, in forward\n"
            "    aux = torch.cat(aux_pruned_states, dim=-1)\n"
            "UnboundLocalError: cannot access local variable 'aux_pruned_states'\n")
    result = diagnose(text)
    assert result.kind == "unknown"
    assert "line 1: UnboundLocalError" in result.suggestion
    assert "sglang/srt/layers/logits_processor.py:547 (forward)" in result.suggestion


# --- issue 23 item 9: the next step moves on instead of looping ------------------------

KV_LOG = (LOGS / "kv_pool_oom.journal.log").read_text()


def _kv_log(fraction: float) -> str:
    return KV_LOG.replace("mem_fraction_static=0.42", f"mem_fraction_static={fraction}")


def _proposed_fraction(suggestion: str) -> float | None:
    found = re.search(r"`--mem-fraction-static ([0-9.]+)`", suggestion)
    return float(found[1]) if found else None


def test_following_the_kv_pool_advice_never_loops():
    """A user who takes every proposed fraction and crashes the same way each time: the
    proposals rise strictly, never pass 0.95, and end on the next lever (context, running
    requests, the envelope command for the host) within a few starts."""
    fraction, tried, seen = 0.80, [], []
    for _ in range(10):
        suggestion = diagnose(_kv_log(fraction), version="0.5.23", host="gpu1",
                              tried={"mem_fraction_static": tried}).suggestion
        proposed = _proposed_fraction(suggestion)
        if proposed is None:
            break
        assert proposed > fraction and proposed <= 0.95 and proposed not in seen, suggestion
        seen.append(proposed)
        tried.append(fraction)
        fraction = proposed
    else:
        pytest.fail(f"still raising the fraction after 10 starts: {seen}")
    assert len(seen) <= 4, seen
    assert "`--max-running-requests 24` (now 48)" in suggestion
    assert "`ddlab envelope --host gpu1 --search max_running_requests=..48" in suggestion
    assert "was tried" in suggestion or "were tried" in suggestion


def test_a_value_tried_before_is_never_proposed_again():
    tried = {"mem_fraction_static": [0.92]}
    suggestion = diagnose(_kv_log(0.88), tried=tried).suggestion
    assert _proposed_fraction(suggestion) is None
    assert "0.88, 0.92 were tried" in suggestion


@pytest.mark.parametrize("now, proposed", [(8, "`--cuda-graph-max-bs 4` (now 8)"),
                                            (160, "`--cuda-graph-max-bs 80` (now 160)"),
                                            (1, "at batch size 1 already")],
                         ids=["8", "160", "1"])
def test_the_capture_advice_proposes_smaller_graphs_than_those_in_use(now, proposed):
    text = (LOGS / "capture_failed.journal-iso-precise.log").read_text()
    text = text.replace("cuda_graph_max_bs=8", f"cuda_graph_max_bs={now}")
    suggestion = diagnose(text).suggestion
    assert proposed in suggestion, suggestion
    assert "`--cuda-graph-max-bs 16`" not in suggestion and "-decode 16`" not in suggestion
    assert "`--mem-fraction-static 0.83` (now 0.88)" in suggestion
