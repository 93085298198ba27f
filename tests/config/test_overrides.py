"""Values keep their text (issue 25, item 4): what the user typed is what reaches argv.

YAML 1.1 read ``010`` as 8, a revision ``0123456`` as 42798 and ``3.10`` as 3.1, and
a float flag wrote ``1e-3`` back as ``0.001``: the command that reached the host was
not the one typed. Here each value goes in by ``--set``, by a base file in params/,
by a host profile's ``overrides`` and by ``ddlab run -p``, and comes out of
``Config.argv()`` as typed; the flag's own type checks the text (argparse's reading:
``int("010")`` is 10), and refuses what it cannot read.
"""

from __future__ import annotations

import textwrap

import pytest

from ddlab.config.bases import load_base
from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError
from ddlab.hosts.profiles import load_host
from ddlab.report.parameters import parameter_grid, parse_parameters

# (override key, flag, the text typed): a flag of each type the text meets
TYPED = [
    ("revision", "revision", "010"),                                 # str (SGLang's, no entry)
    ("revision", "revision", "0123456"),                             # a commit id, octal to 1.1
    ("speculative_draft_model_revision", "speculative-draft-model-revision", "3.10"),
    ("budget", "speculative-ddtree-budget", "010"),                  # int: argparse reads 10
    ("mamba_full_memory_ratio", "mamba-full-memory-ratio", "3.10"),  # float
    ("mem_fraction_static", "mem-fraction-static", "1e-3"),          # float, range checked
    ("served_model_name", "served-model-name", "on"),                # str: not True
    ("disaggregation_mode", "disaggregation-mode", "null"),          # a choice named null
]
IDS = [f"{flag}={text}" for _, flag, text in TYPED]


def words_of(config, flag: str) -> list[str]:
    argv = config.argv(python="python")
    i = argv.index(f"--{flag}")
    return argv[i:i + 2]


@pytest.mark.parametrize("key, flag, text", TYPED, ids=IDS)
def test_set_values_reach_argv_as_typed(key, flag, text):
    variant = make_variant("ddtree", [f"{key}={text}"])
    assert words_of(variant.config, flag) == [f"--{flag}", text]


@pytest.mark.parametrize("key, flag, text", TYPED, ids=IDS)
def test_base_file_values_reach_argv_as_typed(tmp_path, key, flag, text):
    path = tmp_path / "typed.yaml"
    path.write_text(textwrap.dedent(f"""\
        command: {{python: null, module: sglang.launch_server}}
        flags:
          model-path: Qwen/Qwen3-8B
          {flag}: {text}
        env:
          SGLANG_SOME_REVISION: {text}
        """))
    config = load_base(path)
    assert words_of(config, flag) == [f"--{flag}", text]
    assert config.env.get("SGLANG_SOME_REVISION") == (None if text == "null" else text)


@pytest.mark.parametrize("key, flag, text", TYPED, ids=IDS)
def test_host_profile_overrides_reach_argv_as_typed(tmp_path, key, flag, text):
    path = tmp_path / "typed-host.yaml"
    path.write_text(f"base: ddtree\noverrides: {{{key}: {text}}}\n")
    profile = load_host(str(path))
    assert words_of(make_variant("ddtree", profile.overrides).config, flag) == [f"--{flag}", text]


@pytest.mark.parametrize("key, flag, text", TYPED, ids=IDS)
def test_run_parameters_reach_argv_as_typed(key, flag, text):
    """``ddlab run sweep -p budget 010``: the parameter, then the sweep's grid, keep the text."""
    params = parse_parameters([(key, text)])
    grid = parameter_grid(None, None, None, {key: f"[{text}]"})
    for value in (params[key], grid[key][0]):
        assert words_of(make_variant("ddtree", {key: value}).config, flag) == [f"--{flag}", text]


@pytest.mark.parametrize("text", ["on", "yes", "true", "ON", "Yes"])
def test_a_switch_takes_on_and_yes_as_true(text):
    """store_true flags: ddlab's (enable-metrics) and one only a release's table knows."""
    config = make_variant("dflash", [f"enable_metrics={text}", f"enable_mixed_chunk={text}"]).config
    argv = config.argv(python="python")
    assert "--enable-metrics" in argv and "--enable-mixed-chunk" in argv
    assert text not in argv


def test_null_still_removes_a_flag_whose_type_has_no_null():
    config = make_variant("ddtree", ["budget=null", "revision=null"]).config
    assert "speculative-ddtree-budget" not in config.flags and "revision" not in config.flags
    quoted = make_variant("ddtree", ["revision='null'"]).config  # quoted: the text itself
    assert words_of(quoted, "revision") == ["--revision", "null"]


@pytest.mark.parametrize("key, text, allowed", [
    ("budget", "abc", "must be an integer >= 1; try .*budget=32"),
    ("budget", "3.10", "must be an integer >= 1"),
    ("budget", "0x10", "must be an integer >= 1"),                 # argparse's int refuses it
    ("mem_fraction_static", "3.10", r"must be a number in \(0, 1\]"),
    ("mem_fraction_static", "1e-3x", r"must be a number in \(0, 1\]"),
    ("port", "0123456", "must be an integer in 1..65535"),         # 123456, not 42798
    ("enable_metrics", "sometimes", "must be true, on or yes"),
], ids=["budget-abc", "budget-3.10", "budget-0x10", "mem-3.10", "mem-1e-3x", "port-0123456",
        "switch-sometimes"])
def test_text_the_flags_type_cannot_read_is_refused_naming_it(key, text, allowed):
    with pytest.raises(ConfigError, match=allowed) as info:
        make_variant("ddtree", [f"{key}={text}"])
    assert str(info.value).startswith(f"{key}={text}: ") and "\n" not in str(info.value)


def test_names_and_hashes_stay_for_values_in_their_own_spelling():
    """Hashes measured on main before the change (a resumed sweep finds its cells)."""
    assert make_variant("ddtree", ["budget=32"]).hash == "89fb82cded5d"
    assert make_variant("ddtree", {"budget": "32"}).hash == "89fb82cded5d"
    both = make_variant("ddtree", ["mem_fraction_static=0.5", "cuda_graph=false"])
    assert (both.name, both.hash) == ("ddtree-nograph-mem0p5", "7f02afc37ce6")
    odd = make_variant("local", ["device_memory_gb=0.5", "chunked_prefill_size=-1"])
    assert (odd.name, odd.hash) == ("local-chunkm1-devmem0p5", "d0746273684a")


def test_another_spelling_is_another_name_and_hash():
    """``010`` and ``10`` start the same server, but not the same command."""
    ten, typed = make_variant("ddtree", ["budget=10"]), make_variant("ddtree", ["budget=010"])
    assert (ten.name, typed.name) == ("ddtree-b10", "ddtree-b010") and ten.hash != typed.hash
    assert make_variant("ddtree", ["mem_fraction_static=0.50"]).name == "ddtree-mem0p50"
    assert make_variant("ddtree", ["budget=+5"]).name.startswith("ddtree-b5-")  # inexact: hashed
    assert typed.describe_changes() == "speculative-ddtree-budget 16 -> 010"


def test_frames_read_a_typed_value_as_its_flags_type():
    from ddlab.config.flags import typed_value

    assert typed_value("speculative-ddtree-budget", "010") == 10
    assert typed_value("mem-fraction-static", "1e-3") == 0.001
    assert typed_value("revision", "010") == "010"
