"""ddlab.params and ddlab.flags: base configs, overrides, validation, variant names."""

from __future__ import annotations

import hashlib
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlab.config.bases import Config, list_bases, load_base
from ddlab.config.flags import FLAGS
from ddlab.core.checks import closest
from ddlab.config.overrides import parse_overrides
from ddlab.config.sglang import known_option_names
from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError

SAFE_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def _config(**flags) -> Config:
    return Config.from_dict({"command": {"python": "/usr/bin/python3", "module": "m"},
                             "flags": flags}, base="t")


# --- bases --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ddtree", "dflash", "local"])
def test_shipped_bases_load(name):
    config = load_base(name)
    assert config.base == name and config.description
    assert config.flags["speculative-algorithm"] in ("DDTREE", "DFLASH")
    assert re.fullmatch(r"[0-9a-f]{12}", config.hash)


def test_ddtree_base_argv():
    argv = load_base("ddtree").argv()
    assert argv[:3] == ["/opt/sglang/.venv/bin/python", "-m", "sglang.launch_server"]
    joined = " ".join(argv)
    for part in ("--speculative-algorithm DDTREE", "--speculative-ddtree-budget 16",
                 "--speculative-ddtree-topk-cap 4", "--mem-fraction-static 0.85",
                 "--port 30000", "--host 127.0.0.1", "--enable-metrics"):
        assert part in joined


def test_local_base_uses_the_host_interpreter():
    config = load_base("local")
    assert config.python is None and config.module == "ddlab.target"
    assert config.argv(python="/x/python")[:3] == ["/x/python", "-m", "ddlab.target"]


def test_unknown_base_lists_the_available_ones():
    with pytest.raises(ConfigError, match="available: .*ddtree.*local") as info:
        load_base("ddtre")
    assert "did you mean ddtree?" in str(info.value)


def test_base_from_a_file_and_errors_name_the_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("command: {python: /p, module: m}\nflags: {port: 0}\n")
    with pytest.raises(ConfigError, match=r"mine.yaml: port=0: must be an integer in 1\.\.65535"):
        load_base(path)
    path.write_text("command: {python: /p, module: m}\nflags: {port: 8000}\n")
    assert load_base(str(path)).base == "mine"


# --- flags --------------------------------------------------------------------------


def test_flag_spellings_switches_removal_and_lists():
    config = _config(speculative_ddtree_budget=8, **{
        "disable-cuda-graph": True, "enable-metrics": False, "context-length": None,
        "cuda_graph_bs": [1, 2, 4]})
    assert config.flags == {"speculative-ddtree-budget": 8, "disable-cuda-graph": True,
                            "cuda-graph-bs": [1, 2, 4]}
    assert config.argv()[3:] == ["--speculative-ddtree-budget", "8", "--disable-cuda-graph",
                                 "--cuda-graph-bs", "1", "2", "4"]


def test_unknown_flags_pass_through_verbatim():
    config = _config(**{"speculative-ddtree-shadow-linear": True, "my_fork_knob": 0.5,
                        "speculative-ddtree-topk-cap": 8})
    assert config.argv()[3:] == ["--speculative-ddtree-shadow-linear", "--my-fork-knob", "0.5",
                                 "--speculative-ddtree-topk-cap", "8"]


@pytest.mark.parametrize("typo,meant", [
    ("speculative_ddtree_budgt", "speculative-ddtree-budget"),
    ("speculative-ddtree-topk-capp", "speculative-ddtree-topk-cap"),
    ("mem-fraction-statc", "mem-fraction-static"),
    ("disable-cuda-grpah", "disable-cuda-graph"),
    ("contxt-length", "context-length"),
    ("Port", "port"),
], ids=["budgt", "capp", "statc", "swap", "contxt", "case"])
def test_near_miss_of_a_known_flag_is_an_error(typo, meant):
    with pytest.raises(ConfigError) as info:
        make_variant("ddtree", {typo: 1})
    assert f"did you mean --{meant}?" in str(info.value) and typo in str(info.value)
    assert " flags." in str(info.value) and "verbatim" in str(info.value)  # on purpose


@pytest.mark.parametrize("flag", [  # the fork's flag, and real SGLang flags ddlab does not register
    "speculative-ddtree-shadow-linear", "speculative-ddtree-tree-mode", "cuda-graph-bs-prefill",
    "cuda-graph-max-bs-prefill", "enable-dp-attention", "nnodes", "speculative-token-map",
    "load-format", "dist-init-addr", "tokenizer-path", "page-size", "max-lora-rank",
    "schedule-policy", "enable-mixed-chunk", "disable-overlap-schedule", "watchdog-timeout",
    "speculative-accept-threshold-single", "mm-attention-backend", "log-requests",
], ids=lambda f: f)
def test_legitimately_different_unknown_flags_pass(flag):
    # near a registered name (load-format ~ log-format) is no typo when SGLang has it
    assert closest(flag, FLAGS) is None or flag in known_option_names()
    assert make_variant("ddtree", {flag: True}).config.flags[flag] is True


@pytest.mark.parametrize("key,meant", [
    ("topk", "topk_cap"), ("cap", "topk_cap"), ("ddtree_budget", "speculative_ddtree_budget"),
    ("graph", "cuda_graph"), ("ddtree-topk", "speculative-ddtree-topk-cap"),
], ids=["topk", "cap", "ddtree-budget", "graph", "kebab"])
def test_part_of_a_known_key_is_a_near_miss(key, meant):
    # the hint in the spelling given: kebab for a kebab key
    with pytest.raises(ConfigError) as info:
        make_variant("local", {key: 8})
    assert f"did you mean {meant}?" in str(info.value) and f"flags.{key.replace('_', '-')}=" \
        in str(info.value)
    assert make_variant("local", {f"flags.{key}": 8}).config.flags[key.replace("_", "-")] == 8


def test_flags_namespace_passes_a_near_miss_on_purpose():
    config = make_variant("ddtree", {"flags.speculative-ddtree-budgt": 3}).config
    assert config.flags["speculative-ddtree-budgt"] == 3
    assert Config.from_dict(config.to_dict()) == config  # round trip keeps it verbatim


@pytest.mark.parametrize("key,value,allowed", [
    ("speculative_ddtree_budget", 0, "must be an integer >= 1"),
    ("speculative_ddtree_budget", "abc", "must be an integer >= 1"),
    ("speculative_ddtree_budget", 32.0, "must be an integer >= 1"),
    ("speculative_ddtree_topk_cap", 0, "must be an integer >= 1"),
    ("mem_fraction_static", 0, r"must be a number in \(0, 1\]"),
    ("mem_fraction_static", 1.5, r"must be a number in \(0, 1\]"),
    ("port", 0, r"must be an integer in 1\.\.65535"),
    ("port", 65536, r"must be an integer in 1\.\.65535"),
    ("speculative_algorithm", "bad name!", r"must be a name \(letters, digits, _ \. \+ -\)"),
    ("disable_cuda_graph", "sometimes", "must be true"),
    ("cuda_graph_bs", [1, 0], "must be a non-empty list of integers >= 1 each"),
    ("model_path", "", "must be a non-empty string"),
], ids=["budget0", "budget-text", "budget-float", "topk0", "mem0", "mem1.5", "port0",
        "port-high", "algorithm", "switch-text", "list", "empty-path"])
def test_known_flags_are_validated(key, value, allowed):
    with pytest.raises(ConfigError, match=allowed) as info:
        make_variant("ddtree", {key: value})
    text = str(info.value)
    assert text.startswith(f"{key}=") and "; try " in text, "said with the key as given"


def test_error_message_grammar():
    with pytest.raises(ConfigError) as info:
        make_variant("ddtree", ["speculative_ddtree_budget=0"])
    assert str(info.value) == ("speculative_ddtree_budget=0: must be an integer >= 1; "
                               "try speculative_ddtree_budget=32")  # Python's words
    assert info.value.key == "speculative-ddtree-budget" and info.value.value == 0


def test_algorithm_names_are_taken_in_any_case_as_sglang_upper_cases_them():
    """SGLang upper-cases --speculative-algorithm before it resolves it (0.5.23
    speculative/spec_info.py:65): `dflash` and `nextn` are real spellings."""
    for name in ("dflash", "nextn", "DSPARK", "DFLASH"):
        variant = make_variant("dflash", [f"algorithm={name}"])
        assert variant.config.flags["speculative-algorithm"] == name


def test_real_flags_near_a_registered_one_are_no_typos():
    """dcp-size and dwdp-size are real 0.5.23 flags, one edit from dp-size."""
    for flag in ("dcp-size", "dwdp-size"):
        assert closest(flag, FLAGS) == "dp-size"
        assert make_variant("dflash", {flag: 2}).config.flags[flag] == 2
    with pytest.raises(ConfigError, match="did you mean --dp-size"):
        make_variant("dflash", {"dpp-size": 2})  # in no release: a typo


@pytest.mark.parametrize("key, value", [("context_length", "32k"), ("context_length", "32Ki"),
                                        ("max_total_tokens", "64k"),
                                        ("max_prefill_tokens", "16Ki")],
                         ids=["ctx-32k", "ctx-32Ki", "tokens-64k", "prefill-16Ki"])
def test_human_readable_ints_are_taken_as_sglang_takes_them(key, value):
    config = make_variant("dflash", {key: value}).config
    assert config.flags[key.replace("_", "-")] == value
    with pytest.raises(ConfigError, match=r"must be an integer \(or 32k, 32Ki\)"):
        make_variant("dflash", {key: "32K"})  # SGLang's suffixes are case-sensitive


def test_yaml_1_1_words_stay_strings():
    """`--set x=off` must not silently remove a flag (YAML 1.1 reads off as false)."""
    config = make_variant("dflash", ["kv_cache_dtype=off", "unit.restart=no"]).config
    assert config.flags["kv-cache-dtype"] == "off" and config.unit["restart"] == "no"
    with pytest.raises(ConfigError, match="disable_cuda_graph=off: must be true"):
        make_variant("dflash", ["disable_cuda_graph=off"])


def test_numbers_given_as_text_are_accepted():
    assert make_variant("ddtree", {"budget": "32"}).config.flags["speculative-ddtree-budget"] == 32


def test_registry_is_consistent():
    shorts = [f.short for f in FLAGS.values()] + [f.off_token for f in FLAGS.values()]
    assert len(shorts) == len(set(shorts)), "two flags share a variant-name token"
    for flag in FLAGS.values():
        if flag.kind == "choice":
            slugs = {re.sub(r"[^a-z0-9]+", "-", c.lower()) for c in flag.choices}
            assert len(slugs) == len(flag.choices), flag.name
        if flag.kind not in ("switch", "choice"):
            assert flag.example is not None, flag.name


# --- env and unit fields ------------------------------------------------------------


def test_env_and_unit_validation():
    with pytest.raises(ConfigError, match="env name"):
        make_variant("ddtree", {"env.1BAD": "x"})
    with pytest.raises(ConfigError, match="did you mean unit.working_directory"):
        make_variant("ddtree", {"unit.working_dir": "/x"})
    with pytest.raises(ConfigError, match="must be one of no, always, on-success"):
        make_variant("ddtree", {"unit.restart": "sometimes"})
    with pytest.raises(ConfigError, match="absolute"):
        make_variant("ddtree", {"unit.working_directory": "rel/dir"})
    config = make_variant("ddtree", ["unit.restart=no", "unit.WorkingDirectory=/srv",
                                     "env.SGLANG_DDTREE_MAX_TOPK=8"]).config
    assert config.unit["restart"] == "no" and config.unit["working_directory"] == "/srv"
    assert config.env["SGLANG_DDTREE_MAX_TOPK"] == "8"


# --- overrides ----------------------------------------------------------------------


def test_parse_overrides_yaml_scalars():
    assert parse_overrides(["a=32", "b=0.85", "c=true", "d=null", "e=", "f=text",
                            "g=[1, 2, 4]", "h=a: b", "i=x=y"]) == {
        "a": 32, "b": 0.85, "c": True, "d": None, "e": None, "f": "text", "g": [1, 2, 4],
        "h": "a: b", "i": "x=y"}
    assert parse_overrides({"budget": 32}) == {"budget": 32}
    assert parse_overrides(None) == {}


@pytest.mark.parametrize("bad", ["budget", "=3", " =3", 3], ids=["no-equals", "no-key",
                                                                 "blank-key", "not-text"])
def test_malformed_override_is_a_config_error_naming_it(bad):
    with pytest.raises(ConfigError, match="must be KEY=VALUE") as info:
        parse_overrides([bad])
    assert repr(bad) in str(info.value)


def test_aliases():
    v = make_variant("ddtree", {"budget": 32, "topk_cap": 8, "cuda_graph": False,
                                "algorithm": "DDTREE"})
    assert v.config.flags["speculative-ddtree-budget"] == 32
    assert v.config.flags["speculative-ddtree-topk-cap"] == 8
    assert v.config.flags["disable-cuda-graph"] is True
    back = make_variant(v.config, {"cuda_graph": True})
    assert "disable-cuda-graph" not in back.config.flags
    with pytest.raises(ConfigError, match="cuda_graph='off': must be true or false"):
        make_variant("ddtree", {"cuda_graph": "off"})


def test_aliases_are_taken_in_either_spelling_as_flags_are():
    # the README: `--set` keys are snake or kebab case; the aliases too (topk-cap, cuda-graph)
    kebab = make_variant("ddtree", ["topk-cap=8", "cuda-graph=false"])
    snake = make_variant("ddtree", ["topk_cap=8", "cuda_graph=false"])
    assert kebab.config.flags["speculative-ddtree-topk-cap"] == 8
    assert kebab.config.flags["disable-cuda-graph"] is True
    assert (kebab.name, kebab.hash) == (snake.name, snake.hash)
    with pytest.raises(ConfigError, match="cuda-graph='off': must be true or false; "
                                          "try cuda-graph=false"):
        make_variant("ddtree", {"cuda-graph": "off"})
    with pytest.raises(ConfigError, match="sets the same thing"):
        make_variant("ddtree", ["topk-cap=8", "topk_cap=4"])


def test_a_near_miss_is_named_in_the_spelling_given():
    with pytest.raises(ConfigError) as kebab:
        make_variant("ddtree", ["topk-cp=8"])
    with pytest.raises(ConfigError) as snake:
        make_variant("ddtree", ["topk_cp=8"])
    assert "did you mean topk-cap? try topk-cap=VALUE" in str(kebab.value)
    assert "did you mean topk_cap? try topk_cap=VALUE" in str(snake.value)


def test_conflicting_overrides_are_an_error():
    with pytest.raises(ConfigError, match="same thing"):
        make_variant("ddtree", {"budget": 32, "speculative_ddtree_budget": 64})
    same = make_variant("ddtree", {"budget": 32, "speculative-ddtree-budget": 32})
    assert same.name == "ddtree-b32"


def test_unknown_namespace_and_python_module_overrides():
    with pytest.raises(ConfigError, match="did you mean env.X"):
        make_variant("ddtree", {"evn.X": "1"})
    v = make_variant("ddtree", {"python": "/usr/bin/python3", "module": "sglang.other"})
    assert v.config.argv()[:3] == ["/usr/bin/python3", "-m", "sglang.other"]
    with pytest.raises(ConfigError, match="dotted module name"):
        make_variant("ddtree", {"module": "not a module"})


# --- names and hashes ---------------------------------------------------------------


def test_variant_name_example_and_changes():
    v = make_variant("ddtree", ["budget=32", "topk_cap=8", "cuda_graph=false"])
    assert v.name == "ddtree-b32-k8-nograph"
    assert v.unit_name == "ddlab-ddtree-b32-k8-nograph.service"
    assert v.changes == {"speculative-ddtree-budget": (16, 32),
                         "speculative-ddtree-topk-cap": (4, 8), "disable-cuda-graph": (None, True)}
    assert v.describe_changes() == ("speculative-ddtree-budget 16 -> 32, "
                                    "speculative-ddtree-topk-cap 4 -> 8, disable-cuda-graph -> on")
    assert v.hash == v.config.hash != v.base.hash


def test_same_overrides_in_any_order_give_the_same_name_hash_and_argv():
    items = ["budget=64", "mem_fraction_static=0.8", "cuda_graph=false", "env.A=1",
             "flags.zeta=1", "flags.alpha=2", "unit.restart=on-failure"]
    orders = [items, items[::-1]] + [random.Random(seed).sample(items, len(items))
                                     for seed in range(10)]
    seen = {(v.name, v.hash, tuple(v.config.argv()))
            for v in (make_variant("ddtree", order) for order in orders)}
    assert len(seen) == 1


def test_no_change_is_the_base_name_and_hash():
    v = make_variant("ddtree", {"budget": 16})
    assert v.name == "ddtree" and v.hash == load_base("ddtree").hash and not v.changes


@pytest.mark.parametrize("overrides,name", [
    ({"mem_fraction_static": 0.9, "port": 8000}, "ddtree-mem0p9"),
    ({"budget": 256, "algorithm": "DFLASH"}, "ddtree-dflash-b256"),
    ({"enable_metrics": False}, "ddtree-nometrics"),
    ({"disable_cuda_graph": True, "cuda_graph_bs": [1, 2, 4]}, "ddtree-nograph-gbsl1-2-4"),
    ({"chunked_prefill_size": -1}, "ddtree-chunkm1"),
], ids=["float", "choice-first", "removed-switch", "list", "negative"])
def test_exact_names(overrides, name):
    assert make_variant("ddtree", overrides).name == name


@pytest.mark.parametrize("overrides,name", [
    ({"port": 8000}, "local-port8000"),
    ({"port": 8000, "budget": 32}, "local-b32"),
    ({"algorithm": None, "budget": None, "topk_cap": None, "speculative_draft_model_path": None},
     "local-nospec"),
    ({"algorithm": None, "budget": None, "topk_cap": None, "speculative_draft_model_path": None,
      "cuda_graph": False, "port": 8000}, "local-nospec-nograph"),
], ids=["port-alone", "port-incidental", "nospec", "nospec-nograph-port"])
def test_names_say_what_matters(overrides, name):
    assert make_variant("local", overrides).name == name


def test_names_that_leave_something_out_stay_apart():
    only_algorithm = make_variant("local", {"algorithm": None})  # the budget, cap, draft stay
    assert only_algorithm.name == f"local-nospec-{only_algorithm.hash[:8]}"
    ports = [make_variant("local", {"budget": 32, "port": p}) for p in (8000, 8001)]
    assert ports[0].name == ports[1].name and ports[0].hash != ports[1].hash
    in_a_sweep = make_variant("local", {"port": 8000}, unnamed={"port"})
    assert in_a_sweep.name == "local" and in_a_sweep.hash != load_base("local").hash


def test_inexact_or_long_names_end_in_the_hash():
    v = make_variant("ddtree", {"speculative-ddtree-shadow-linear": True})
    assert v.name == f"ddtree-speculative-ddtree-shadow-linear-{v.hash[:8]}"
    long = make_variant("ddtree", {f"flags.knob{i}": i for i in range(30)})
    assert len(long.name) <= 64 and long.name.endswith(long.hash[:8])
    a = make_variant("ddtree", {"model_path": "a b"})
    b = make_variant("ddtree", {"model_path": "a/b"})
    assert a.name != b.name  # slugs alike, names not


@settings(max_examples=60, deadline=None)
@given(value=st.text(max_size=30), key=st.sampled_from(["flags.x", "model_path", "env.X",
                                                         "python", "module", "served_model_name"]))
def test_names_are_always_safe(value, key):
    try:
        v = make_variant("ddtree", {key: value})
    except ConfigError:
        return
    assert SAFE_NAME.fullmatch(v.name) and len(v.name) <= 64, v.name
    assert ".." not in v.name and "/" not in v.name


def test_hash_is_stable_across_runs_and_machines():
    config = _config(speculative_ddtree_budget=32, **{"disable-cuda-graph": True})
    canonical = ('{"env":{},"flags":{"disable-cuda-graph":true,"speculative-ddtree-budget":32},'
                 '"module":"m","python":"/usr/bin/python3","unit":{}}')
    assert config.hash == hashlib.sha256(canonical.encode()).hexdigest()[:12] == "cc8b7e0d81b6"
    reordered = _config(**{"disable-cuda-graph": True, "speculative-ddtree-budget": 32})
    assert reordered.hash == config.hash


def test_to_dict_round_trip():
    v = make_variant("ddtree", ["budget=32", "flags.knob=[1, 2]", "env.X=1"])
    assert Config.from_dict(v.config.to_dict()) == v.config
    d = v.to_dict()
    assert d["name"] == v.name and d["changes"]["speculative-ddtree-budget"] == [16, 32]


@pytest.mark.parametrize("flags,error", [
    ({"speculative-ddtree-budgt": 3}, "did you mean --speculative-ddtree-budget?"),
    ({"budget": 3}, "is a notebook alias"),
    ({"port": 3, "Port": 4}, "did you mean --port?"),
    ({"speculative_ddtree_budget": 3, "speculative-ddtree-budget": 4}, "given twice"),
], ids=["near-miss", "alias", "case", "twice"])
def test_base_file_flag_names_are_checked(flags, error):
    with pytest.raises(ConfigError, match=re.escape(error)):
        Config.from_dict({"command": {"python": "/p", "module": "m"}, "flags": flags})


def test_base_file_explicit_flag_passes_a_near_miss():
    config = Config.from_dict({"command": {"python": "/p", "module": "m"},
                               "flags": {"--speculative-ddtree-budgt": 3}})
    assert config.argv()[3:] == ["--speculative-ddtree-budgt", "3"]


@pytest.mark.parametrize("d,error", [
    ({"command": {"python": "/p", "module": "m"}, "flagz": {}}, "did you mean flags?"),
    ({"command": {"pyhton": "/p", "module": "m"}}, "did you mean python?"),
    ({"command": {"python": "/p", "module": "m"}, "env": ["A"]}, "env=['A']: must be a mapping"),
], ids=["top", "command", "env-shape"])
def test_base_file_shape_errors(d, error):
    with pytest.raises(ConfigError, match=re.escape(error)):
        Config.from_dict(d)


def test_list_bases():
    assert {"ddtree", "dflash", "local"} <= set(list_bases())


@pytest.mark.parametrize("names", [("modèle", "modéle"), ("模型", "模式"), ("a_b", "a.b")],
                         ids=["accents", "cjk", "punctuation"])
def test_base_names_that_read_alike_never_name_two_configs_alike(tmp_path, names):
    """Issue 23 item 17: two bases whose names differ only where a name cannot hold them
    (non-ASCII letters, punctuation) were both ``mod-le``; the name now carries the hash."""
    variants = []
    for budget, name in zip((16, 32), names):
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"command: {{module: ddlab.target}}\nflags: {{speculative-ddtree-budget: "
                        f"{budget}}}\n", encoding="utf-8")
        variants.append(make_variant(str(path), {}))
    assert variants[0].name != variants[1].name
    assert all(re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{8}", v.name) for v in variants)
    assert make_variant("ddtree", {}).name == "ddtree"  # an exact base name stays bare
