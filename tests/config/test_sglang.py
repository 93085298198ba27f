"""ddlab.config.sglang and ddlab.lab.commands: commands checked with the real releases'
parser tables before anything touches a host.

What the issue asked: every command that ``ddlab unit`` renders from the shipped bases
is accepted by the real parser of every release the base is for; the false rejections
are gone; a removed flag is an error that names its replacement; a deprecated one a
warning; a value real SGLang accepts is never refused.
"""

from __future__ import annotations

import pytest

from ddlab.config.bases import list_bases, load_base
from ddlab.config.sglang import (flag_table, known_option_names, nearest_release, parse_version,
                                 releases, spelled)
from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError
from ddlab.lab.commands import check_command

# What people vary on the shipped bases (the demo's and the axes).
OVERRIDES = [[], ["budget=32"], ["topk_cap=8"], ["cuda_graph=false"],
             ["budget=64", "topk_cap=1", "cuda_graph=false"], ["context_length=32k"],
             ["mem_fraction_static=0.8", "max_running_requests=16"]]


def _for(base: str) -> list[str]:
    """The committed releases a base is written for (``sglang.since``)."""
    since = load_base(base).sglang.get("since", "0")
    return [r for r in releases() if parse_version(r) >= parse_version(since)]


CASES = [(base, release, overrides) for base in list_bases("sglang") if base != "local"
         for release in _for(base) for overrides in OVERRIDES
         if base == "ddtree" or not any(o.split("=")[0] in ("budget", "topk_cap") for o in overrides)]


@pytest.mark.parametrize("base, release, overrides", CASES,
                         ids=[f"{b}-{r}-{'+'.join(o) or 'as-is'}" for b, r, o in CASES])
def test_every_rendered_base_command_is_accepted_by_its_releases(base, release, overrides):
    variant = make_variant(base, overrides)
    check = check_command(variant.config, version=release, version_source="the test")
    assert check.table is not None and check.errors == [], [str(f) for f in check.errors]


def test_the_bases_say_which_releases_they_are_for():
    for base in ("ddtree", "dflash"):
        assert load_base(base).sglang["since"] == "0.5.14"
    variant = make_variant("dflash", [])
    too_old = check_command(variant.config, version="0.5.10", version_source="the test")
    assert any("base dflash is for SGLang 0.5.14 or newer, and the host runs 0.5.10" in str(f)
               for f in too_old.errors)


def test_the_embedded_target_is_checked_with_its_own_parser():
    check = check_command(make_variant("local", ["budget=8", "cuda_graph=false"]).config)
    assert check.table.product.startswith("ddlab's target") and check.findings == []
    bad = check_command(make_variant("local", ["flags.no-such-flag=1"]).config)
    assert [f.option for f in bad.errors] == ["--no-such-flag"]


@pytest.mark.parametrize("override", ["algorithm=dflash", "algorithm=nextn", "algorithm=DSPARK",
                                      "context_length=32k", "max_total_tokens=64k",
                                      "dcp_size=2", "dwdp_size=2"],
                         ids=lambda o: o)
def test_what_real_sglang_takes_is_never_refused(override):
    """The issue's false rejections: each passes ddlab and the 0.5.23 table, silently."""
    config = make_variant("dflash", [override]).config
    check = check_command(config, version="0.5.23", version_source="the test")
    assert check.findings == [], [str(f) for f in check.findings]


@pytest.mark.parametrize("override, replacement", [
    ("cuda_graph_max_bs=16", "--cuda-graph-max-bs-decode"),
    ("flags.cuda-graph-bs=[1,2,4]", "--cuda-graph-bs-decode"),
    ("flags.disable-piecewise-cuda-graph=true", "--cuda-graph-backend-prefill=disabled"),
    ("mamba_scheduler_strategy=auto", "--mamba-radix-cache-strategy"),
], ids=["cuda-graph-max-bs", "cuda-graph-bs", "disable-piecewise", "mamba-scheduler"])
def test_a_removed_flag_is_an_error_naming_its_replacement(override, replacement):
    variant = make_variant("dflash", [override])
    check = check_command(variant.config, version="0.5.23", version_source="the test")
    (error,) = check.errors
    assert "removed in SGLang 0.5.20" in error.message and error.fix.startswith(f"use {replacement}")
    with pytest.raises(ConfigError, match="removed in SGLang 0.5.20") as info:
        check.raise_errors(variant.name)
    assert f"use {replacement}" in str(info.value)
    older = check_command(variant.config, version="0.5.18", version_source="the test")
    assert older.errors == [] and "deprecated" in str(older.warnings[0])


def test_graphs_off_is_a_deprecation_warning_on_0_5_23_not_an_error():
    check = check_command(make_variant("dflash", ["cuda_graph=false"]).config, version="0.5.23",
                          version_source="the test")
    assert check.errors == []
    assert [w.option for w in check.warnings] == ["--disable-cuda-graph"]
    assert "--cuda-graph-backend-{decode,prefill}=disabled" in check.warnings[0].fix


def test_an_unknown_algorithm_is_a_warning_it_may_be_a_plugin():
    check = check_command(make_variant("dflash", ["algorithm=MYSPEC"]).config, version="0.5.23",
                          version_source="the test")
    assert check.errors == [] and "no builtin of SGLang 0.5.23" in str(check.warnings[0])
    assert "Unknown speculative algorithm name: MYSPEC" in str(check.warnings[0])


def test_ddtree_needs_its_fork_declared():
    config = make_variant("ddtree", []).config
    assert check_command(config, version="0.5.23", version_source="t").findings == []
    bare = make_variant("ddtree", ["sglang.fork=null"]).config
    options = {f.option for f in check_command(bare, version="0.5.23", version_source="t").errors}
    assert options == {"--speculative-ddtree-budget", "--speculative-ddtree-topk-cap"}


def test_a_private_builds_flags_are_declared_not_guessed():
    config = make_variant("dflash", ["flags.my-private-knob=3"]).config
    assert [f.option for f in check_command(config, version="0.5.23",
                                            version_source="t").errors] == ["--my-private-knob"]
    declared = make_variant("dflash", ["flags.my-private-knob=3",
                                       "sglang.extra_flags=[my-private-knob]"]).config
    assert check_command(declared, version="0.5.23", version_source="t").findings == []


def test_sglang_keys_are_validated_before_anything():
    with pytest.raises(ConfigError, match="sglang.fork='vllm': ddlab has no table of that fork"):
        make_variant("dflash", ["sglang.fork=vllm"])
    with pytest.raises(ConfigError, match="sglang.version='latest': must be a release number"):
        make_variant("dflash", ["sglang.version=latest"])


@pytest.mark.parametrize("asked, used", [("0.5.23", "0.5.23"), ("0.5.25", "0.5.23"),
                                         ("0.5.19", "0.5.19"), ("0.5.10.post1", "0.5.10.post1"),
                                         ("0.5.14.post1", "0.5.14"), ("0.5.9", "0.4.10.post2"),
                                         ("0.3.0", "0.4.10.post2"), (None, "0.5.23")],
                         ids=lambda v: str(v))
def test_the_nearest_release_stands_for_a_version(asked, used):
    assert nearest_release(asked) == used
    table = flag_table(asked)
    assert table.version == used
    assert ("nearest release" in table.label) == bool(asked and asked != used)


# --- a version with no table of its own (issue 25, item 2) ------------------------------

NEW_FLAGS = ["--speculative-tree-width", "4", "--kv-cache-dtype", "fp4_e2m1_next",
             "--cuda-graph-max", "8"]  # an option, a choice and an abbreviation 0.5.23 lacks


def test_a_release_newer_than_every_table_warns_on_what_the_newest_does_not_know():
    findings = flag_table("0.5.24").check(NEW_FLAGS)
    assert [f.level for f in findings] == ["warning"] * 4, [str(f) for f in findings]
    first, *rest = map(str, findings)
    assert first.startswith("SGLang 0.5.24: newer than every table ddlab has; checked "
                            "against SGLang 0.5.23, the newest")
    assert "generate its table: python tools/sglang_flags.py 0.5.24" in first
    for said, option in zip(rest, ["--speculative-tree-width", "--kv-cache-dtype",
                                   "--cuda-graph-max"]):
        assert said.startswith(option) and "SGLang 0.5.23" in said and "the host runs SGLang " \
            "0.5.24" in said and said.endswith("python tools/sglang_flags.py 0.5.24"), said


def test_a_release_newer_than_every_table_deploys_with_warnings_not_errors():
    config = make_variant("dflash", [f"flags.{NEW_FLAGS[0][2:]}=4"]).config
    check = check_command(config, version="0.6.0", version_source="asked the host")
    check.raise_errors("dflash")  # no error
    assert [n for n in check.notes() if "--speculative-tree-width" in n]
    assert check_command(config, version="0.5.23", version_source="the test").errors


def test_a_removed_flag_is_still_an_error_on_a_newer_release():
    """The history knows it was removed (0.5.20): not a flag the newest table lacks."""
    findings = flag_table("0.5.24").check(["--cuda-graph-max-bs", "16"])
    assert [f.level for f in findings] == ["warning", "error"]
    assert "removed in SGLang 0.5.20" in str(findings[1])


@pytest.mark.parametrize("asked, how", [
    ("0.5.14.post1", "no table of its own; checked against SGLang 0.5.14, the nearest older: "
                     "flags added or removed since are not known"),
    ("0.3.0", "older than every table ddlab has; checked against SGLang 0.4.10.post2, the "
              "oldest")], ids=["between", "older"])
def test_a_version_without_its_own_table_is_a_visible_warning(asked, how):
    check = check_command(make_variant("ddtree", []).config, version=asked,
                          version_source="asked the host")
    warnings = [str(f) for f in check.warnings if f.option == "sglang.version"]
    assert warnings == [f"SGLang {asked}: {how}; generate its table: "
                        f"python tools/sglang_flags.py {asked}"]
    assert f"warning: {warnings[0]}" in check.notes()


@pytest.mark.parametrize("option, version, spelling", [
    ("--cuda-graph-max-bs-decode", "0.5.10", "--cuda-graph-max-bs"),
    ("--cuda-graph-max-bs-decode", "0.5.23", "--cuda-graph-max-bs-decode"),
    ("--cuda-graph-max-bs", "0.5.23", "--cuda-graph-max-bs-decode"),
    ("--mamba-radix-cache-strategy", "0.5.10", "--mamba-scheduler-strategy"),
], ids=lambda v: str(v))
def test_advice_uses_the_spelling_of_the_users_release(option, version, spelling):
    assert spelled(option, version) == spelling


def test_known_option_names_include_every_release_and_the_fork():
    names = known_option_names()
    assert {"dcp-size", "cuda-graph-max-bs", "speculative-ddtree-budget",
            "mamba-radix-cache-strategy"} <= names


@pytest.mark.parametrize("override, refused", [
    ("kv_cache_dtype=fp9", "fp9"), ("attention_backend=nope", "nope"),
    ("flags.cuda-graph-backend-decode=nope", "nope"),
], ids=["kv-cache-dtype", "attention-backend", "cuda-graph-backend-decode"])
def test_choice_lists_of_0_5_23_are_checked(override, refused):
    """The issue's other way round: flags with real choice lists that ddlab did not check."""
    check = check_command(make_variant("dflash", [override]).config, version="0.5.23",
                          version_source="the test")
    (error,) = check.errors
    assert f"={refused!r}: not one of " in error.message and error.fix.startswith("choose one of")


@pytest.mark.parametrize("override", ["kv_cache_dtype=fp8_e5m2", "attention_backend=flashinfer",
                                      "flags.cuda-graph-backend-decode=breakable"], ids=lambda o: o)
def test_a_listed_choice_passes(override):
    check = check_command(make_variant("dflash", [override]).config, version="0.5.23",
                          version_source="the test")
    assert check.findings == [], [str(f) for f in check.findings]


def test_a_deprecated_flag_that_errors_on_use_is_an_error():
    """0.5.18's --enable-expert-distribution-metrics is a DeprecatedAction with an
    error_message (0.5.18 sglang/srt/server_args.py:8706), which calls parser.error
    (0.5.18 sglang/srt/arg_groups/argparse_actions.py:40-41): 0.5.18's argparse stops
    with "... is no longer supported"."""
    findings = flag_table("0.5.18").check(["--enable-expert-distribution-metrics"])
    assert [f.level for f in findings] == ["error"]
    assert "--expert-balancedness-report-mode" in str(findings[0])


def _deprecated_options():
    for release in releases():
        for action in flag_table(release).actions:
            if action.get("deprecated"):
                yield release, action


@pytest.mark.parametrize("release, action", list(_deprecated_options()),
                         ids=lambda x: x if isinstance(x, str) else x["options"][0])
def test_only_a_deprecated_flag_its_release_refuses_is_an_error(release, action):
    """Across the six tables: ``on_use`` errors -> an error naming the replacement (one
    flag: 0.5.18's --enable-expert-distribution-metrics); stores / ignored -> a warning."""
    option = action["options"][0]
    value = [] if action["nargs"] == 0 else [str((action["choices"] or ["1"])[0])]
    said = [f for f in flag_table(release).check([option, *value]) if f.option == option]
    (finding,) = said
    refused = action["deprecated"]["on_use"] == "errors"
    assert finding.level == ("error" if refused else "warning"), str(finding)
    replacement = action["deprecated"]["replacement"]
    assert finding.fix == (f"use {replacement}" if replacement else "drop it")
    assert ("no longer supported" in finding.message) == refused
