"""Diagnosis of logs written from SGLang's real texts, release by release.

tests/fixtures/logs/sglang/index.json says, per log, the release, the source lines the
texts come from (some logs are real runs of the 0.5.23 launcher), and what the
diagnosis must be: crashed, kind, phase and (where given) the signature.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlab.diagnosis.diagnosis import diagnose

HERE = Path(__file__).parent.parent / "fixtures" / "logs" / "sglang"
INDEX: dict[str, dict] = json.loads((HERE / "index.json").read_text())


def _diagnose(name: str, **kw):
    return diagnose((HERE / name).read_text(), **kw)


def test_every_log_has_an_entry():
    assert {p.name for p in HERE.glob("*.log")} == set(INDEX)


@pytest.mark.parametrize("name", sorted(INDEX), ids=sorted(INDEX))
def test_real_text_log(name):
    want, got = INDEX[name], _diagnose(name)
    assert (got.crashed, got.kind, got.phase) == (want["crashed"], want["kind"], want["phase"]), got.render()
    if want.get("signature"):
        assert got.signature == want["signature"], got.render()
    if got.crashed:
        assert got.cause and "\n" not in got.cause and got.suggestion


REPLAYS = [n for n in INDEX if INDEX[n]["kind"] == "cuda_graph_replay"]


def test_replay_failures_of_every_generation_are_covered():
    assert {INDEX[n]["version"] for n in REPLAYS} >= {"0.4.10.post2", "0.5.10", "0.5.23"}
    assert all(_diagnose(name).kind == "cuda_graph_replay" for name in REPLAYS)


def test_the_eager_runner_is_no_graph_replay_and_graphs_off_is_no_advice():
    result = _diagnose("forward_input_mismatch__0.5.23__eager-verify-fill-from-size-mismatch.log")
    assert (result.kind, result.signature) == ("forward_input_mismatch", "eager_input_mismatch")
    assert "disabled" not in result.suggestion and "--disable-cuda-graph" not in result.suggestion
    assert "sizes 16 and 33" in result.suggestion


def test_a_None_input_in_the_0_5_23_replay_copy_names_the_field():
    result = _diagnose("cuda_graph_replay__0.5.23__nonetype-copy-replay-inputs.log")
    assert "forward_batch.positions" in result.suggestion
    assert "`--cuda-graph-backend-decode=disabled`" in result.suggestion  # 0.5.20+ from the dict


def test_the_weights_leave_no_room_advice_quotes_sglangs_own_floor():
    result = _diagnose("kv_pool_oom__0.5.23__loaded-weights-leave-no-kv.log")
    assert "`--mem-fraction-static 0.13`" in result.suggestion
    assert result.cause.startswith("ValueError: Loaded weights leave no GPU memory for the KV cache")


@pytest.mark.parametrize("name, words", [
    ("model_not_found__0.5.23__gated-repo.log", "gated"),
    ("model_not_found__0.5.23__draft-repo-offline.log", "HF_HUB_OFFLINE=1"),
    ("model_not_found__0.5.23__hub-repo-not-found.log", "spelling"),
], ids=["gated", "offline", "unknown-repo"])
def test_hub_advice_follows_the_hubs_words(name, words):
    assert words in _diagnose(name).suggestion


def test_slots_are_not_cuda_memory():
    for name in ("slots_exhausted__0.4.10.post2__decode-out-of-memory.log",
                 "slots_exhausted__0.4.10.post2__alloc-req-slots.log"):
        result = _diagnose(name)
        assert result.kind == "slots_exhausted" and "--max-running-requests" in result.suggestion


@pytest.mark.parametrize("name, release", [
    ("kv_pool_oom__0.5.10__not-enough-memory-current-value.log", "0.5.10"),
    ("kv_pool_oom__0.5.23__not-enough-memory.log", "0.5.20"),
    ("cuda_graph_capture__0.4.10.post2__capture-failed-oom.log", "0.4.10.post2"),
], ids=["repr-0.5.10", "dict-0.5.23", "repr-0.4.10"])
def test_the_version_comes_from_the_server_args_line_in_both_forms(name, release):
    assert _diagnose(name).sglang_version == release


def test_sources_are_reported_with_the_kind():
    result = _diagnose("kv_pool_oom__0.5.23__not-enough-memory.log")
    assert "sglang/srt/model_executor/pool_configurator.py:96 (0.5.23)" in result.sources
    assert "texts from:" in result.render()
