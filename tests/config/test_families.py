"""The server family as a plug-in (issue 28 item 1): one interface, a registry, a base that
names its family, SGLang behind it unchanged, vLLM the second.

Real parts only: the shipped bases, the committed vLLM and SGLang tables, the real
``ddlab.target`` checkpoints, the real wheels' source for every HTTP path a family cites
(skipped, with the reason, where the wheels are not unpacked)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ddlab.config.bases import Config, list_bases, load_base
from ddlab.config.families import (DEFAULT_FAMILY, EMBEDDED_MODELS, FAMILIES, TARGET_MODULE, Family,
                                   family_named)
from ddlab.config.units import exec_words, render_unit
from ddlab.config.variants import make_variant
from ddlab.config.vllm import releases
from ddlab.core.errors import ConfigError
from ddlab.lab.commands import check_command, installed_version

ROOT = Path(__file__).resolve().parents[2]
WHEELS = {"sglang": Path("/work/wheels/sglang-0.5.23"), "vllm": Path("/work/wheels/vllm/0.34.0")}
VLLM_BASES = ["vllm-eagle3", "vllm-mtp", "vllm-ngram"]


# --- the registry and the interface -------------------------------------------------------


@pytest.mark.parametrize("name", list(FAMILIES), ids=list(FAMILIES))
def test_each_family_fills_the_interface(name):
    family = FAMILIES[name]
    assert isinstance(family, Family) and family.name == name and family_named(name) is family
    for attribute in ("label", "package", "server_module", "log_dialect", "acceptance",
                      "model_flag", "draft_flag", "algorithm_key", "spec_prefix",
                      "version_named_in"):
        assert isinstance(getattr(family, attribute), str) and getattr(family, attribute), attribute
    assert family.server_module.split(".")[0] == family.package
    for path in (family.api.health, family.api.completions, family.api.metrics):
        assert path.startswith("/") and path in family.api.sources
    assert all(knob.name == key for key, knob in family.knobs.items())
    assert set(family.default_grid) <= set(family.knobs)  # a default grid varies knobs
    assert "cuda_graph" in family.knobs  # graphs on / off: one word in every family
    assert family.baseline and all(value is None for value in family.baseline.values())
    # what reports and the envelope say in the family's words (no branch on its name)
    assert set(family.table_knobs) <= set(family.knobs) and family.table_knobs, "its table's knobs"
    assert isinstance(family.table_accept, str) and family.table_accept
    for size in family.search_sizes:  # named as what a search can take: its integer flags
        assert family.search_flag(family.override_target(size)[1]).kind in ("int", "human_int"), size


def test_a_third_familys_words_reach_the_envelopes_error_and_the_sweep_table(monkeypatch, tmp_path):
    """The envelope's "search a size such as ..." and a sweep table's knob and acceptance
    columns come from the family's attributes, and a verdict's "without speculation" words
    from its baseline keys; before, these branched on the names "vllm" and "sglang"."""
    import copy

    import sweepkit
    from ddlab.report.verdicts import SweepReport, sweep_verdict
    from ddlab.sweeps.envelope import parse_search
    from ddlab.sweeps.results import load_cells

    third = copy.copy(family_named("sglang"))
    third.name, third.search_sizes = "third", ("max_running_requests",)
    third.table_knobs, third.table_accept = ("speculative_ddtree_budget",), "tokens per step"
    monkeypatch.setitem(FAMILIES, "third", third)
    with pytest.raises(ConfigError) as info:
        parse_search("mem_fraction_static=0.5..0.9", third)
    assert info.value.fix.startswith("search a size such as max_running_requests;"), info.value.fix
    sweepkit.synthetic_sweep(tmp_path / "ddlab.sqlite", [("measured", {"output_tok_s": 100.0})] * 6)
    frame = load_cells(store=tmp_path / "ddlab.sqlite").assign(family="third",
                                                               speculative_ddtree_budget=16)
    table = SweepReport(sweep_id="s", frame=frame, verdict=sweep_verdict(frame, sweep_id="s", status="done")).table()
    assert "speculative_ddtree_budget" in table and "tokens per step" in table
    assert not {"budget", "topk_cap", "accept_length", "num_speculative_tokens"} & set(table.columns)
    other = copy.copy(family_named("vllm"))  # a family that says no words of its own
    other.baseline = {"draft_config": None}  # how to run it without speculation: its keys
    assert other.baseline_words() == "--set draft_config=null"


def test_a_base_without_a_family_is_sglang_and_every_shipped_base_loads():
    assert DEFAULT_FAMILY == "sglang"
    families = {base: load_base(base).family.name for base in list_bases()}
    assert {b for b, f in families.items() if f == "vllm"} == set(VLLM_BASES)
    assert all(f == "sglang" for b, f in families.items() if b not in VLLM_BASES)
    assert list_bases("vllm") == VLLM_BASES and "local" in list_bases("sglang")
    for base in list_bases("sglang"):  # none of the SGLang bases names a family
        assert "family" not in (ROOT / "params" / "base" / f"{base}.yaml").read_text()


@pytest.mark.parametrize("given, guess", [("tgi", None), ("vlm", "vllm"), ("SGLang", "sglang"),
                                          (3, None)], ids=["unknown", "typo", "case", "number"])
def test_an_unknown_family_is_refused_naming_the_value_and_the_fix(given, guess):
    data = {**load_base("local").to_dict(), "family": given}
    with pytest.raises(ConfigError) as caught:
        Config.from_dict(data)
    err = caught.value
    assert f"family={given!r}" in err.message and "sglang, vllm" in err.message
    assert "family: sglang or family: vllm" in err.fix
    assert (f"did you mean {guess}?" in err.fix) == (guess is not None)


def test_a_base_file_with_an_unknown_family_names_the_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text((ROOT / "params" / "base" / "vllm-ngram.yaml").read_text()
                    .replace("family: vllm", "family: vllmm"))
    with pytest.raises(ConfigError, match=r"mine\.yaml: family='vllmm'.*did you mean vllm"):
        load_base(path)


def test_a_release_section_belongs_to_its_own_family():
    with pytest.raises(ConfigError, match="a vllm base names its release under vllm:"):
        Config.from_dict({**load_base("vllm-ngram").to_dict(), "sglang": {"version": "0.5.23"}})
    with pytest.raises(ConfigError, match="a sglang base names its release under sglang:"):
        Config.from_dict({**load_base("local").to_dict(), "vllm": {"version": "0.34.0"}})


# --- SGLang behind the interface, unchanged -----------------------------------------------


@pytest.mark.parametrize("base", ["local", "ddtree", "dflash"])
def test_naming_sglang_changes_nothing_of_an_sglang_config(base):
    plain = load_base(base)
    named = Config.from_dict({**plain.to_dict(), "family": "sglang"}, base=base)
    assert named == plain and named.hash == plain.hash and named.argv("py") == plain.argv("py")
    assert "family" not in plain.to_dict()  # stored configs and goldens keep their shape
    variant = make_variant(base, ["budget=32", "cuda_graph=false"])
    assert variant.name == f"{base}-b32-nograph"  # a DDTree base's knobs, as before


def test_sglangs_argv_is_its_flags_one_group_each():
    config = load_base("local")
    groups = config.family.command_groups(config)
    assert config.argv("py") == ["py", "-m", TARGET_MODULE, *[w for g in groups for w in g]]
    assert len(groups) == len(config.flags) and groups[0][0] == "--model-path"


# --- vLLM: the command --------------------------------------------------------------------


@pytest.mark.parametrize("release", releases(), ids=releases())
@pytest.mark.parametrize("base", VLLM_BASES, ids=VLLM_BASES)
def test_a_vllm_base_renders_vllm_serve_that_each_release_accepts(base, release):
    config = make_variant(base, [f"vllm.version={release}"]).config
    argv = config.argv()
    model = config.flags["model"]
    assert argv[:5] == [config.python, "-m", "vllm.entrypoints.cli.main", "serve", model]
    assert config.family.parser_words(config) == argv[4:]
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == config.flags["speculative_config"]
    assert "--no-enforce-eager" in argv  # enforce_eager: false, the off form
    check = check_command(config)
    assert not check.errors and check.table.version == release
    assert check.against.startswith(f"flags checked against vLLM {release} (declared")


@pytest.mark.parametrize("base", VLLM_BASES, ids=VLLM_BASES)
def test_a_vllm_unit_runs_the_same_argv(base):
    variant = make_variant(base, ["num_speculative_tokens=2"])
    unit = render_unit(variant)
    line = next(l for l in unit.replace("\\\n", " ").splitlines() if l.startswith("ExecStart="))
    assert exec_words(line.partition("=")[2]) == variant.config.argv()


def test_a_vllm_config_round_trips_and_hashes_apart_from_sglang():
    config = load_base("vllm-eagle3")
    again = Config.from_dict(config.to_dict(), base="vllm-eagle3")
    assert again == config and again.hash == config.hash and again.argv() == config.argv()
    assert config.to_dict()["family"] == "vllm" and "sglang" not in config.to_dict()
    # what to_dict gives away is a copy: changing it cannot change the frozen config
    config.to_dict()["flags"]["speculative_config"]["num_speculative_tokens"] = 9
    assert config.flags["speculative_config"]["num_speculative_tokens"] == 3 and \
        Config.from_dict(config.to_dict()).hash == config.hash


@pytest.mark.parametrize("flags, said", [
    ({"max_num_seq": 8}, "did you mean --max-num-seqs?"),
    ({"speculative_config": {"method": "eagle4", "num_speculative_tokens": 2}}, "eagle4"),
    ({"speculative_config": {"metod": "ngram"}}, "metod"),
    ({"compilation_config": {"cudagraph_mode": "ful"}}, "cudagraph_mode"),
    ({"max_model_len": "32Ki"}, "max-model-len"),
], ids=["abbreviation", "method", "key", "graph-mode", "value"])
def test_vllm_flags_are_refused_by_the_release_table_when_the_config_is_made(flags, said):
    data = load_base("vllm-ngram").to_dict()
    with pytest.raises(ConfigError) as caught:
        Config.from_dict({**data, "flags": {**data["flags"], **flags}})
    assert said in f"{caught.value.message} {caught.value.fix}"


def test_the_host_release_is_checked_too_not_only_the_newest():
    """``max_num_active_seqs`` is new in 0.33.0: the config (newest table) takes it, the
    check with a host that runs 0.30.0 refuses it, naming the flag and when it came."""
    config = make_variant("vllm-ngram", ["max_num_active_seqs=8"]).config
    assert "--max-num-active-seqs" in config.argv()
    old = check_command(config, version="0.30.0", version_source="the test")
    assert [f.option for f in old.errors] == ["--max-num-active-seqs"]
    assert "first in vLLM 0.33.0" in old.errors[0].message
    too_old = check_command(make_variant("vllm-ngram", ["vllm.since=0.33.0"]).config,
                            version="0.30.0", version_source="the test")
    assert [f.option for f in too_old.errors] == ["vllm.since"]


# --- vLLM: knobs and overrides ------------------------------------------------------------


@pytest.mark.parametrize("overrides, name, words", [
    (["num_speculative_tokens=4"], "vllm-eagle3-t4", '"num_speculative_tokens":4'),
    (["cuda_graph=false"], "vllm-eagle3-eager", "--enforce-eager"),
    (["method=eagle", "num_speculative_tokens=2"], "vllm-eagle3-t2-eagle", '"method":"eagle"'),
    (["max-num-seqs=8"], None, "--max-num-seqs 8"),
    (["speculative_config.draft_tensor_parallel_size=1"], None, "\"draft_tensor_parallel_size\":1"),
    ({"speculative_config": None}, "vllm-eagle3-nospec", None),
], ids=["tokens", "eager", "method", "flag", "inner-key", "nospec"])
def test_a_vllm_knob_sets_its_flag_and_names_the_variant(overrides, name, words):
    variant = make_variant("vllm-eagle3", overrides)
    text = " ".join(variant.config.argv())
    if name:
        assert variant.name == name
    if words:
        assert words in text
    else:
        assert "--speculative-config" not in text
    assert make_variant(variant.config, []).hash == variant.hash


@pytest.mark.parametrize("key", ["budget", "topk_cap", "speculative_ddtree_budget"])
def test_sglangs_knobs_on_a_vllm_base_are_refused_naming_the_knobs(key):
    with pytest.raises(ConfigError) as caught:
        make_variant("vllm-eagle3", [f"{key}=8"])
    assert caught.value.message.startswith(f"{key}: not a knob")
    assert "num_speculative_tokens, method, cuda_graph" in caught.value.message
    assert ("is an SGLang knob" in caught.value.message) == (key in ("budget", "topk_cap"))


def test_a_vllm_knobs_value_is_checked_by_the_real_fields():
    with pytest.raises(ConfigError, match=r"num_speculative_tokens=0: must be > 0"):
        make_variant("vllm-ngram", ["num_speculative_tokens=0"])
    with pytest.raises(ConfigError, match="cuda_graph='yes please': must be true or false"):
        make_variant("vllm-ngram", {"cuda_graph": "yes please"})


# --- on the embedded target ---------------------------------------------------------------


def test_the_embedded_models_are_the_targets_builtins():
    from ddlab.target.checkpoint import BUILTIN

    assert EMBEDDED_MODELS == BUILTIN


@pytest.mark.parametrize("base", VLLM_BASES, ids=VLLM_BASES)
def test_on_the_embedded_target_a_vllm_command_is_the_target_in_vllm_dialect(base):
    config = load_base(base)
    embedded = config.family.embedded(config)
    argv = embedded.argv(python="py")
    assert argv[:6] == ["py", "-m", TARGET_MODULE, "--dialect", "vllm", EMBEDDED_MODELS[0]]
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec.get("model") in (None, EMBEDDED_MODELS[1])  # ngram and mtp have no drafter
    assert {k: v for k, v in spec.items() if k != "model"} == \
        {k: v for k, v in config.flags["speculative_config"].items() if k != "model"}
    check = check_command(embedded, version="0.30.0", version_source="the test")
    assert check.table.product == "vLLM" and not check.errors  # vLLM's table, not SGLang's


def test_on_the_embedded_target_an_sglang_command_is_what_the_local_base_runs():
    local, ddtree = load_base("local"), load_base("ddtree")
    embedded = ddtree.family.embedded(ddtree)
    assert embedded.module == local.module and embedded.python is None
    assert embedded.flags["model-path"] == local.flags["model-path"]
    assert embedded.flags["speculative-draft-model-path"] == \
        local.flags["speculative-draft-model-path"]


# --- the version on a host ----------------------------------------------------------------


def test_vllms_version_is_read_from_a_checkout_without_importing_it(tmp_path):
    """vllm/_version.py as the build writes it (``__version__ = version = '0.34.0'``,
    vllm/_version.py:21 (0.34.0)); the package itself raises when imported."""
    from ddlab.hosts import connect
    from ddlab.hosts.profiles import load_host

    package = tmp_path / "checkout" / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise SystemExit('imported vllm')\n")
    (package / "_version.py").write_text("__version__ = version = '0.33.0'\n"
                                         "__version_tuple__ = version_tuple = (0, 33, 0)\n")
    with connect(load_host("local")) as transport:
        assert installed_version(transport, sys.executable, str(package.parent), "vllm") == "0.33.0"
        assert installed_version(transport, sys.executable, str(tmp_path), "vllm") is None


# --- the HTTP API, from the real source ---------------------------------------------------


def _cited() -> list[tuple[str, str, str]]:
    return [(name, path, source) for name, family in FAMILIES.items()
            for path, source in family.api.sources.items()]


@pytest.mark.parametrize("name, path, source", _cited(), ids=[f"{n}{p}" for n, p, _ in _cited()])
def test_every_http_path_cites_the_line_that_serves_it(name, path, source):
    root = WHEELS[name]
    if not root.is_dir():
        pytest.skip(f"the {name} wheel is not unpacked at {root}")
    file, line = re.match(r"(\S+):(\d+)", source).groups()
    lines = (root / file).read_text().splitlines()
    near = "\n".join(lines[int(line) - 1:int(line) + 1])  # the decorator, or its argument
    assert f'"{path}"' in near, f"{file}:{line} does not serve {path}"


# --- one sweep, one family ------------------------------------------------------------------


def test_a_vllm_sweep_varies_its_knobs_with_a_baseline_without_speculation():
    from ddlab.sweeps.plan import describe_grid, plan_sweep

    plan = plan_sweep("vllm-eagle3", {"num_speculative_tokens": [2, 4], "cuda_graph": [True, False]})
    roles = [(c.role, c.variant.name) for c in plan.cells]
    assert roles[:2] == [("baseline", "vllm-eagle3-nospec-eager"), ("baseline", "vllm-eagle3-nospec")]
    assert {n for r, n in roles if r == "grid"} == {"vllm-eagle3-t2", "vllm-eagle3-t2-eager",
                                                    "vllm-eagle3-t4", "vllm-eagle3-t4-eager"}
    for cell in plan.cells:
        argv = cell.variant.config.argv()
        assert ("--speculative-config" in argv) == (cell.role == "grid")
        assert ("--enforce-eager" in argv) == (cell.point.get("cuda_graph") is False)
    assert describe_grid(plan.grid) == "tokens 2,4 × graphs on,off"
    default = plan_sweep("vllm-ngram")  # no grid: the family's own, never DDTree's
    assert set(default.grid) == set(FAMILIES["vllm"].default_grid)


@pytest.mark.parametrize("key", ["budget", "topk_cap", "num_speculative_token"])
def test_a_grid_key_the_family_does_not_know_is_refused_before_any_cell(key):
    from ddlab.sweeps.plan import plan_sweep

    with pytest.raises(ConfigError) as caught:
        plan_sweep("vllm-eagle3", {key: [2]})
    err = caught.value
    assert err.message.startswith(f"grid key {key!r}: base vllm-eagle3 is of the vllm family")
    assert "num_speculative_tokens, method, cuda_graph" in err.message
    assert err.knobs == list(FAMILIES["vllm"].knobs)
    assert ("did you mean num_speculative_tokens?" in err.fix) == (key == "num_speculative_token")
