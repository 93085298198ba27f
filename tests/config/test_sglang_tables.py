"""The SGLang flag tables in lib/ddlab/config/sglang_flags/ agree with the real wheels.

Each committed ``sglang-VERSION.json`` is regenerated from its PyPI wheel by
tools/sglang_flags.py (downloaded into ~/.cache/ddlab/sglang when absent; a
wheel that cannot be fetched skips its test, saying why) and must be identical.
Then the facts ddlab relies on are read from the tables, and argv lists are
checked the way each release's argparse would.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import re
from pathlib import Path

import pytest

from ddlab.config.sglang import flag_table

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "lib" / "ddlab" / "config" / "sglang_flags"
_spec = importlib.util.spec_from_file_location("sglang_flags", ROOT / "tools" / "sglang_flags.py")
sglang_flags = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sglang_flags)

COMMITTED = sglang_flags.load_tables(TABLES)
VERSIONS = list(COMMITTED)
INDEX = json.loads((TABLES / "index.json").read_text())
OVERLAY = json.loads((TABLES / "ddtree-fork.json").read_text())


def option(version: str, name: str) -> dict | None:
    return next((a for a in COMMITTED[version]["options"] if name in a["options"]), None)


# --- the tables are what the wheels give --------------------------------------------


# Every release PyPI lists from 0.5.10 to 0.5.23, post releases included (pip index
# versions sglang, 2026-12-02: 0.5.23 is the newest), and 0.4.10.post2 for the old bases.
EVERY_RELEASE = ["0.4.10.post2", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12", "0.5.12.post1",
                 "0.5.13", "0.5.13.post1", "0.5.14", "0.5.15", "0.5.15.post1", "0.5.16",
                 "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]


def test_every_release_from_0_5_10_to_0_5_23_is_committed():
    assert VERSIONS == EVERY_RELEASE
    assert INDEX["versions"] == EVERY_RELEASE


@pytest.mark.parametrize("version", EVERY_RELEASE[1:], ids=EVERY_RELEASE[1:])
def test_each_release_is_checked_with_its_own_table(version):
    assert flag_table(version).version == version and flag_table(version).stand_in is None


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS, ids=VERSIONS)
def test_committed_table_is_what_the_wheel_gives(version):
    try:
        table = sglang_flags.build_table(version, sglang_flags.DEFAULT_CACHE)
    except FileNotFoundError as error:
        pytest.skip(f"sglang {version}: no wheel to check against: {error}")
    committed = (TABLES / f"sglang-{version}.json").read_text()
    fresh = sglang_flags.render(table)
    diff = list(difflib.unified_diff(committed.splitlines(), fresh.splitlines(), lineterm="", n=0))
    assert not diff, (f"sglang-{version}.json is stale; run: python tools/sglang_flags.py "
                      f"{version}\n" + "\n".join(line[:200] for line in diff[:12]))


def test_index_is_built_from_the_committed_tables():
    rebuilt = sglang_flags.render(sglang_flags.build_index(list(COMMITTED.values())))
    assert rebuilt == (TABLES / "index.json").read_text(), \
        f"index.json is stale; run: python tools/sglang_flags.py {' '.join(VERSIONS)}"


@pytest.mark.parametrize("version", VERSIONS, ids=VERSIONS)
def test_every_option_records_where_it_is_declared(version):
    unplaced = [a["options"] for a in COMMITTED[version]["options"]
                if a["options"] != ["-h", "--help"] and not a["where"]]
    assert not unplaced


_LOCATION_KEYS = {"where", "type_where", "resolved_at", "plugin_register"}
_IN_WHEEL = re.compile(r"sglang/[\w/]+\.py:\d+")  # a file:line inside the wheel
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.\w+)+")  # stdlib / third-party: json.loads, no line
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?!/)[\w.-]+/|\b[A-Za-z]:\\|~/")


def _strings(value, key=None):
    """(key, string) for every string in a JSON document, keys included."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield "<key>", name
            yield from _strings(item, "builtins" if key == "builtins" else name)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)


@pytest.mark.parametrize("path", sorted(TABLES.glob("*.json")), ids=lambda p: p.name)
def test_no_table_holds_an_absolute_path(path):
    """The tables are committed: a path of the machine that generated them (a pyenv
    Python's argparse.py, json/__init__.py) must not get in. SGLang's own help
    texts may name paths (/v1/realtime, /tmp/...); nothing else may."""
    document = json.loads(path.read_text())
    absolute = [(key, text[:120]) for key, text in _strings(document)
                if key != "help" and _ABSOLUTE.search(text)]
    assert not absolute
    locations = [text for key, text in _strings(document)
                 if (key in _LOCATION_KEYS or key == "builtins") and text]
    misplaced = [text for text in locations
                 if not (_IN_WHEEL.fullmatch(text) or _DOTTED.fullmatch(text))]
    assert not misplaced


def test_locations_outside_sglang_are_dotted_names():
    help_flag = option("0.5.23", "--help")
    assert help_flag["where"] == "argparse.ArgumentParser.__init__"
    assert option("0.5.23", "--extra-metric-labels")["type_where"] == "json.loads"
    assert option("0.5.23", "--context-length")["type_where"].startswith("sglang/srt/")


# --- graph, mamba, memory and speculative flags across releases -----------------------


RETIRED = [  # option, deprecated in, removed in, replacement
    ("--cuda-graph-max-bs", "0.5.14", "0.5.20", "--cuda-graph-max-bs-decode"),
    ("--cuda-graph-bs", "0.5.14", "0.5.20", "--cuda-graph-bs-decode"),
    ("--disable-piecewise-cuda-graph", "0.5.14", "0.5.20", "--cuda-graph-backend-prefill=disabled"),
    ("--mamba-scheduler-strategy", "0.5.14", "0.5.20", "--mamba-radix-cache-strategy"),
]


@pytest.mark.parametrize("name, deprecated_in, removed_in, replacement", RETIRED,
                         ids=[r[0] for r in RETIRED])
def test_retired_flag_history(name, deprecated_in, removed_in, replacement):
    entry = INDEX["flags"][name]
    assert (entry["deprecated_in"], entry["removed_in"], entry["replacement"]) == (
        deprecated_in, removed_in, replacement)
    assert option("0.5.18", name)["deprecated"]["on_use"] == "stores"
    assert option("0.5.20", name) is None and option("0.5.23", name) is None


@pytest.mark.parametrize("name", ["--cuda-graph-max-bs", "--cuda-graph-bs"])
def test_an_old_graph_flag_is_an_ambiguous_prefix_since_0_5_20(name):
    said = sglang_flags.match_option(COMMITTED["0.5.20"], name)
    assert said == (f"error: ambiguous option: {name} could match "
                    f"{name}-decode, {name}-prefill")
    assert INDEX["flags"][name]["in_newest"]["0.5.23"] == said


# What the issue found against the real parsers of 0.5.21 and 0.5.22 (their own tables now;
# before, 0.5.20's stood for both): flags they have, and what 0.5.22 changed.
SINCE_0_5_21 = ["--speculative-draft-sink-size", "--cuda-graph-max-seq-len-prefill",
                "--cuda-graph-prefill-max-context", "--context-bucket"]


@pytest.mark.parametrize("version", ["0.5.21", "0.5.22"])
def test_flags_new_in_0_5_21_and_0_5_22_are_accepted_on_their_release(version):
    argv = [w for flag in SINCE_0_5_21 for w in (flag, "2")]
    if version == "0.5.22":
        argv += ["--speculative-use-block-verification"]
    assert [str(f) for f in flag_table(version).check(argv)] == []
    assert INDEX["flags"]["--speculative-use-block-verification"]["first_seen"] == "0.5.22"
    assert {INDEX["flags"][f]["first_seen"] for f in SINCE_0_5_21} == {"0.5.21"}


def test_0_5_22_drops_tc_piecewise_and_deprecates_dp_attention():
    """0.5.22 removed --cuda-graph-tc-compiler and the tc_piecewise prefill backend and
    deprecated --enable-dp-attention; the history said 0.5.23 (the next table then)."""
    on = {v: flag_table(v) for v in ("0.5.21", "0.5.22")}
    argv = ["--cuda-graph-backend-prefill", "tc_piecewise", "--cuda-graph-tc-compiler", "eager"]
    assert [f.level for f in on["0.5.21"].check(argv)] == []
    assert [(f.option, f.level) for f in on["0.5.22"].check(argv)] == [
        ("--cuda-graph-backend-prefill", "error"), ("--cuda-graph-tc-compiler", "error")]
    assert INDEX["flags"]["--cuda-graph-tc-compiler"]["removed_in"] == "0.5.22"
    assert INDEX["flags"]["--enable-dp-attention"]["deprecated_in"] == "0.5.22"
    assert [f.level for f in on["0.5.22"].check(["--enable-dp-attention"])] == ["warning"]
    assert on["0.5.21"].check(["--enable-dp-attention"]) == []


def test_disable_cuda_graph_still_parses_on_0_5_23_but_is_deprecated():
    flag = option("0.5.23", "--disable-cuda-graph")
    assert flag["deprecated"] == {"by": "DeprecatedStoreTrueAction", "on_use": "stores",
                                  "replacement": "--cuda-graph-backend-{decode,prefill}=disabled"}


def test_mamba_radix_cache_strategy_adds_extra_buffer_lazy():
    assert option("0.5.23", "--mamba-radix-cache-strategy")["choices"] == [
        "auto", "no_buffer", "extra_buffer", "extra_buffer_lazy"]


@pytest.mark.parametrize("name", ["--context-length", "--max-total-tokens", "--max-prefill-tokens"])
def test_token_counts_are_human_readable_on_0_5_23(name):
    assert option("0.5.23", name)["type"] == "human_readable_int"


@pytest.mark.parametrize("name", ["--kv-cache-dtype", "--attention-backend",
                                  "--cuda-graph-backend-decode"])
def test_backend_flags_have_choice_lists_on_0_5_23(name):
    assert option("0.5.23", name)["choices"]


def test_speculative_algorithm_is_a_free_string_with_a_registry_on_0_5_23():
    assert option("0.5.23", "--speculative-algorithm")["choices"] is None
    registry = COMMITTED["0.5.23"]["speculative_algorithms"]
    assert set(registry["builtins"]) == {"DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3",
                                         "FROZEN_KV_MTP", "STANDALONE", "NGRAM", "NONE"}
    assert registry["aliases"]["NEXTN"]["to"] == "EAGLE"
    assert registry["case_insensitive"]


def test_speculative_algorithm_was_a_choice_list_before_0_5_14():
    choices = INDEX["speculative_algorithms"]["argparse_choices"]
    assert choices["0.5.10"] == ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]
    assert choices["0.5.14"] is None


def test_no_release_has_ddtree():
    assert not [name for name in INDEX["flags"] if "ddtree" in name]
    assert "DDTREE" not in INDEX["speculative_algorithms"]["names"]


def test_the_ddtree_overlay_says_where_each_fact_comes_from():
    names = {tuple(a["options"]): a["known_from"] for a in OVERLAY["options"]}
    assert names[("--speculative-ddtree-budget",)][0] == "pr"
    assert names[("--speculative-ddtree-topk-cap",)] == ["notes"]
    assert names[("--speculative-ddtree-shadow-linear",)] == ["notes"]
    assert {e["name"] for e in OVERLAY["env"]} >= {"SGLANG_DDTREE_MAX_TOPK"}


# --- checking an argv list as a release's argparse would ------------------------------


ARGV = [  # version, argv, what argparse says (None: accepted)
    ("0.5.23", ["--context-length", "32k", "--tp-size", "1"], None),
    ("0.5.23", ["--context-len=32Ki"], None),  # a unique prefix: taken (ddlab warns)
    ("0.5.23", ["--cuda-graph-bs-decode", "1", "2", "4", "--disable-cuda-graph"], None),
    ("0.5.23", ["--cuda-graph-max-bs", "16"], "ambiguous option: --cuda-graph-max-bs could match"),
    ("0.5.23", ["--speculative-ddtree-budget", "32"], "not an option of SGLang 0.5.23"),
    ("0.5.23", ["--kv-cache-dtype", "fp9"], "--kv-cache-dtype='fp9': not one of auto"),
    ("0.5.23", ["--context-length", "32K"], r"not an integer \(32768, 32k, 32Ki\)"),
    ("0.5.23", ["--tp-size"], "argument --tp-size: expected one argument"),
    ("0.5.18", ["--cuda-graph-max-bs", "16"], None),
    ("0.5.10", ["--speculative-algorithm", "DFLASH"], "not one of EAGLE, EAGLE3, NEXTN"),
]


@pytest.mark.parametrize("version, argv, error", ARGV,
                         ids=[f"{v}:{' '.join(a)}" for v, a, _ in ARGV])
def test_a_table_reads_argv_as_the_release_would(version, argv, error):
    errors = [str(f) for f in flag_table(version).check(argv) if f.level == "error"]
    if error is None:
        assert errors == []
    else:
        assert len(errors) == 1 and re.search(error, errors[0]), errors


def test_the_tool_and_the_library_read_options_alike():
    """tools/sglang_flags.py records what the newest release makes of a removed option
    with the library's own emulation: the two never disagree."""
    for name in ("--cuda-graph-max-bs", "--mamba-scheduler-strategy", "--cuda-graph-bs"):
        said = INDEX["flags"][name]["in_newest"]["0.5.23"]
        assert said == sglang_flags.match_option(COMMITTED["0.5.23"], name)
