"""Probe records read back out of server logs, whatever prefixes the lines carry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlab.probes import none_fields, probe_records

RAISED = {"pid": 48211, "rank": 0, "target": "m.C.replay", "mode": "error", "event": "raised",
          "call": 7, "summaries": {"args": [{"name": "self", "type": "C"}], "subject": "fb",
                                   "fields": [{"name": "positions", "type": "NoneType", "value": None},
                                              {"name": "input_ids", "type": "Tensor",
                                               "shape": [132], "dtype": "torch.int64",
                                               "device": "cuda:0"}]},
          "error": {"type": "TypeError", "message": "copy_(): argument 'src'"}}
LINE = "DDLAB_PROBE " + json.dumps(RAISED, separators=(",", ":"))
# As the field's hand-patched SGLang printed them (tests/fixtures/logs/).
DIAG_JOURNAL = ("Nov 29 09:53:18 gpu-h200-07 python3[48211]: [2026-11-29 09:53:18 TP0] DFLASH_DIAG "
                "verify bs=4 raw_bs=4 num_tokens_per_bs=33 input_ids=torch.Size([132]) "
                "positions=torch.Size([132]) seq_lens=torch.Size([4]) out_cache_loc=None")
DIAG_SHAPES = ("[2026-12-03 08:00:31 TP0] DFLASH_DIAG replay bs=1 raw_num_token=65 "
               "graph_num_tokens_per_bs=16 input_ids.shape=(65,) out_cache_loc.shape=(65,)")


@pytest.mark.parametrize("prefix", [
    "", "[2026-11-30 09:14:02] ", "[2026-11-30 09:14:02 TP0] ",
    "Nov 30 09:14:02 host python[123]: ", "Nov 30 09:14:02 host python3[123]: [2026-11-30 09:14:02 TP1] ",
], ids=["bare", "sglang", "sglang-rank", "journald", "journald-sglang"])
def test_a_probe_line_is_read_under_any_prefix(prefix):
    assert probe_records(f"{prefix}{LINE}\n") == [{**RAISED, "source": "DDLAB_PROBE"}]


def test_lines_that_only_look_like_records_are_skipped():
    log = "\n".join([
        "Environment=DDLAB_PROBES=[{\"target\":\"m.f\"}]",   # the env var, not a record
        LINE[:60],                                           # a line cut short
        "DDLAB_PROBE not json",
        "[2026-11-30 09:14:02 TP0] Decode batch. #running-req: 1",
        LINE,
    ])
    assert [r["call"] for r in probe_records(log)] == [7]


def test_a_dflash_diag_line_becomes_a_diag_record():
    [record] = probe_records(DIAG_JOURNAL)
    assert record["source"] == "DFLASH_DIAG" and record["event"] == "diag"
    assert (record["tag"], record["pid"], record["rank"]) == ("verify", 48211, 0)
    fields = {f["name"]: f for f in record["summaries"]["fields"]}
    assert fields["bs"] == {"name": "bs", "type": "int", "value": 4}
    assert fields["input_ids"] == {"name": "input_ids", "type": "Tensor", "shape": [132]}
    assert fields["out_cache_loc"] == {"name": "out_cache_loc", "type": "NoneType", "value": None}


def test_a_dflash_diag_shape_attribute_joins_its_field():
    [record] = probe_records(DIAG_SHAPES)
    fields = {f["name"]: f for f in record["summaries"]["fields"]}
    assert fields["input_ids"] == {"name": "input_ids", "type": "Tensor", "shape": [65]}
    assert record["tag"] == "replay" and none_fields([record]) == []


def test_a_dflash_diag_json_line_is_taken_as_given():
    [record] = probe_records('[2026-11-29 09:53:18 TP0] DFLASH_DIAG {"step": 3, "ok": false}')
    assert record["step"] == 3 and record["source"] == "DFLASH_DIAG" and record["rank"] == 0


def test_a_dflash_diag_value_of_other_kinds():
    [record] = probe_records("DFLASH_DIAG mode=TARGET_VERIFY ratio=0.5 graph=True "
                             "shape=torch.Size([4, 33])")
    fields = {f["name"]: f for f in record["summaries"]["fields"]}
    assert fields["mode"] == {"name": "mode", "type": "str", "text": "TARGET_VERIFY"}
    assert fields["ratio"]["value"] == 0.5 and fields["graph"]["value"] is True
    assert fields["shape"]["shape"] == [4, 33]
    assert record["tag"] is None


def test_none_fields_come_from_failures_only_in_order_once():
    first = {**RAISED, "event": "call", "mode": "first",
             "summaries": {"fields": [{"name": "seq_lens", "type": "NoneType", "value": None}]}}
    log = "\n".join([DIAG_JOURNAL, "DDLAB_PROBE " + json.dumps(first), LINE, LINE])
    assert none_fields(probe_records(log)) == ["out_cache_loc", "positions"]


def test_none_fields_of_records_without_summaries_is_empty():
    assert none_fields([{"event": "raised", "summaries": None}, {"event": "armed"}]) == []


def test_the_cause_names_where_it_learned_which_field_is_none():
    """A replay crash whose log holds the field's DFLASH_DIAG line: the verdict's first
    words name the None field and say the DFLASH_DIAG line told it (not a probe)."""
    from ddlab.diagnosis.diagnosis import diagnose

    crash = (Path(__file__).parent.parent / "fixtures" / "logs" / "sglang"
             / "cuda_graph_replay__0.5.23__nonetype-copy-replay-inputs.log").read_text()
    cause = diagnose(DIAG_JOURNAL + "\n" + crash).cause
    assert cause.startswith("out_cache_loc is None (DFLASH_DIAG): "), cause
    probed = diagnose(LINE + "\n" + crash).cause
    assert "is None (DDLAB_PROBE): " in probed and "DFLASH_DIAG" not in probed, probed


HOSTILE = {
    "nested 10^5 deep": "DDLAB_PROBE " + '{"a":' * 100_000 + "1" + "}" * 100_000,
    "nested 100 deep, short": "DDLAB_PROBE " + '{"a":' * 100 + "1" + "}" * 100,
    "a list nested 10^5 deep": "DDLAB_PROBE {\"x\": " + "[" * 100_000 + "]" * 100_000 + "}",
    "a 1 MB string": 'DDLAB_PROBE {"target": "' + "x" * 1_000_000 + '"}',
    "a diag line of 1 MB": "DFLASH_DIAG {" + '"a": 1, ' * 150_000 + '"b": 2}',
    "cut short": 'DDLAB_PROBE {"event": "raised", "target": "m.f", "summ',
}


@pytest.mark.parametrize("line", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_record_that_cannot_be_read_is_skipped_and_counted(line):
    """Issue 23 item 3: one hostile DDLAB_PROBE line ended watch, sweep and diagnose with a
    RecursionError; now it is skipped, counted, and the records around it still count."""
    good = json.dumps({"event": "raised", "target": "m.f", "summaries": {"fields": [
        {"name": "num_token_non_padded", "type": "NoneType"}]}})
    records = probe_records("\n".join([f"DDLAB_PROBE {good}", line, f"DDLAB_PROBE {good}"]))
    assert len(records) == 2 and records.skipped == 1
    assert none_fields(records) == ["num_token_non_padded"]


def test_the_diagnosis_of_a_log_with_a_hostile_record_counts_it():
    import ddlab

    log = "\n".join(["[2026-11-30 09:14:02] Load weight begin.", HOSTILE["nested 10^5 deep"],
                     "[2026-11-30 09:14:05] The server is fired up and ready to roll!"])
    found = ddlab.diagnose(log)
    assert not found.crashed
    assert found.facts["probe_records_skipped"] == 1
    assert "probe_records_skipped=1" in found.render()
