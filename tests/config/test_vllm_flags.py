"""vLLM's ``vllm serve`` command line, as the real wheels' parsers record it.

The tables in lib/ddlab/config/vllm_flags/ are made by tools/vllm_flags.py from
each release's own ``make_arg_parser`` (a throwaway venv per release; the slow
test regenerates them where those venvs exist). Here: the tables load and say
how they were made; each vLLM base renders to an argv that each release's
table accepts; a bad flag, value, JSON key or method is refused with a message
naming what is allowed; values keep their text; a release without a table is
read with the nearest older one, and says so.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ddlab.config.bases import list_bases, load_base
from ddlab.config.vllm import (load_vllm_base, nearest_release, releases, render_serve,
                               vllm_base_names, vllm_table)
from ddlab.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "lib" / "ddlab" / "config" / "vllm_flags"
_spec = importlib.util.spec_from_file_location("vllm_flags", ROOT / "tools" / "vllm_flags.py")
vllm_flags = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vllm_flags)

RELEASES = ["0.30.0", "0.33.0", "0.34.0"]  # 0.34.0: the newest on PyPI (2026-12-03)
BASES = ["vllm-eagle3", "vllm-mtp", "vllm-ngram"]
ASKED = {"model": "Qwen/Qwen3-8B", "speculative_config": {"method": "ngram",
         "num_speculative_tokens": 3, "prompt_lookup_max": 4}, "max_num_seqs": 8}


def words_after(argv: list[str], option: str) -> str:
    return argv[argv.index(option) + 1]


# --- the recorded tables ----------------------------------------------------------------


def test_every_tabled_release_is_committed_and_indexed():
    assert releases() == RELEASES
    assert list(vllm_flags.load_tables(TABLES)) == RELEASES


@pytest.mark.parametrize("version", RELEASES, ids=RELEASES)
def test_table_says_how_it_was_made_and_holds_the_flags_ddlab_writes(version):
    table = vllm_table(version).table
    assert table["vllm"] == version and table["wheel_sha256"]
    assert "make_arg_parser" in table["generated_by"] and "torch 2.13.0" in table["generated_by"]
    assert table["cannot_know"]
    for option in ("--speculative-config", "--enforce-eager", "--compilation-config",
                   "--gpu-memory-utilization", "--max-num-seqs", "--max-model-len",
                   "--tensor-parallel-size", "--port"):
        assert vllm_table(version).by_option[option]["where"].startswith("vllm/")
    assert vllm_table(version).by_option["--compilation-config"]["json_class"] == \
        "CompilationConfig"
    assert {"method", "model", "num_speculative_tokens"} <= set(
        table["speculative_config"]["fields"])


def test_committed_files_are_stable_renderings_and_the_index_is_theirs():
    tables = vllm_flags.load_tables(TABLES)
    for version, table in tables.items():
        assert (TABLES / f"vllm-{version}.json").read_text() == vllm_flags.render(table)
    index = vllm_flags.render(vllm_flags.build_index(list(tables.values())))
    assert (TABLES / "index.json").read_text() == index


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES, ids=RELEASES)
def test_committed_table_is_what_the_real_parser_gives(version):
    python = vllm_flags.venv_python(version, vllm_flags.DEFAULT_VENVS)
    if not python.exists():
        pytest.skip(f"no venv at {python.parent.parent}: tools/vllm_flags.py {version} --setup")
    built = vllm_flags.build_table(version, vllm_flags.DEFAULT_VENVS, vllm_flags.DEFAULT_WHEELS)
    assert vllm_flags.render(built) == (TABLES / f"vllm-{version}.json").read_text()


# --- what changed between releases, as the tables record it ------------------------------


def methods(version: str) -> list[str]:
    return vllm_table(version).table["speculative_config"]["methods"]["SpeculativeMethod"][
        "values"]


def test_speculative_methods_follow_the_releases():
    assert "medusa" in methods("0.30.0") and "medusa" not in methods("0.33.0")
    assert "step5_mtp" not in methods("0.30.0") and "step5_mtp" in methods("0.33.0")
    assert "custom_class" in methods("0.33.0") and "custom_class" not in methods("0.34.0")
    for version in RELEASES:
        assert {"eagle", "eagle3", "mtp", "ngram", "draft_model", "suffix", "dflash"} <= \
            set(methods(version))


def test_hidden_negatives_are_recorded_where_vllm_registers_them():
    assert "--no-enable-prefix-caching" not in vllm_table("0.30.0").by_option["--enable-prefix-caching"].get("hidden", [])  # noqa: E501
    for version in ("0.33.0", "0.34.0"):
        action = vllm_table(version).by_option["--enable-prefix-caching"]
        assert "--no-enable-prefix-caching" in action["hidden"]
        assert "--disable-prefix-caching" in action["options"]


# --- the bases ------------------------------------------------------------------------------


def test_the_vllm_bases_are_bases_like_the_others():
    assert vllm_base_names() == BASES == list_bases("vllm")
    for base in BASES:  # by name and by path, as every base loads
        assert load_base(base).family.name == "vllm"
        assert load_base(ROOT / "params" / "base" / f"{base}.yaml").flags == load_base(base).flags


@pytest.mark.parametrize("version", RELEASES, ids=RELEASES)
@pytest.mark.parametrize("base", BASES, ids=BASES)
def test_each_base_renders_an_argv_each_release_accepts(base, version):
    flags = load_vllm_base(base)["flags"]
    rendered = render_serve(flags, version)
    assert rendered.argv[:3] == ["vllm", "serve", flags["model"]]
    spec = json.loads(words_after(rendered.argv, "--speculative-config"))
    assert spec == flags["speculative_config"]
    assert json.loads(words_after(rendered.argv, "--compilation-config")) == \
        flags["compilation_config"]
    assert "--no-enforce-eager" in rendered.argv
    assert not [f for f in vllm_table(version).check(rendered.argv[2:]) if f.level == "error"]
    deprecated = [f for f in rendered.warnings if "cudagraph_capture_sizes" in f.message]
    assert bool(deprecated) == (version == "0.34.0")  # model runner V2 takes other sizes


# --- refusals, with what is allowed ------------------------------------------------------------

REFUSED = [
    # too far from --max-num-seqs for core.checks.closest (ddlab's one did-you-mean): no guess
    ({"max_num_sequences": 8}, r"^--max-num-sequences: not an option of vLLM 0\.34\.0; vllm serve --help"),
    ({"max_num_seq": 8}, r"--max-num-seq: not an option.*did you mean --max-num-seqs\?"),
    ({"dtype": "bf16"}, r"--dtype 'bf16': not one of auto, bfloat16, .*choose one of"),
    ({"max_model_len": "32Ki"}, r"--max-model-len '32Ki': not an integer \(25k, 1K\), -1 or auto"),
    ({"speculative_config": {"metod": "eagle3"}},
     r"key 'metod': not a field of vLLM 0\.34\.0's SpeculativeConfig, "
     r"vllm/config/speculative\.py:\d+.*its fields: enforce_eager, num_speculative_tokens.*"
     r"did you mean method\?"),
    ({"speculative_config": {"method": "eagle4", "num_speculative_tokens": 2}},
     r"method 'eagle4': not a speculative method of vLLM 0\.34\.0 \(SpeculativeMethod, "
     r"vllm/config/speculative\.py:\d+\); its methods: ngram, .*eagle3"),
    ({"speculative_config": {"method": "ngram", "num_speculative_tokens": 0}},
     r"num_speculative_tokens=0: must be > 0 .*give num_speculative_tokens an integer > 0"),
    ({"speculative_config": {"method": "ngram", "target_model_config": {}}},
     r"key 'target_model_config': set by vLLM itself"),
    ({"compilation_config": {"cudagraph_mode": "ful"}},
     r"cudagraph_mode='ful': not one of NONE, PIECEWISE, FULL, FULL_DECODE_ONLY"),
    ({"compilation_config": {"cudagraph_sizes": [1, 2]}},
     r"key 'cudagraph_sizes': not a field of vLLM 0\.34\.0's CompilationConfig"),
    ({"enforce_eager": "yes"}, r"'yes': not an option, and no option before it takes it"),
]


@pytest.mark.parametrize("extra, message", REFUSED, ids=[next(iter(e)) + "=" + str(
    next(iter(e.values())))[:30] for e, _ in REFUSED])
def test_bad_flags_values_and_json_are_refused_saying_what_is_allowed(extra, message):
    with pytest.raises(ConfigError, match=message) as caught:
        render_serve({**ASKED, **extra}, "0.34.0")
    assert caught.value.table == "vLLM 0.34.0"


def test_a_method_of_one_release_is_refused_by_another():
    asked = {**ASKED, "speculative_config": {"method": "medusa", "num_speculative_tokens": 2}}
    assert render_serve(asked, "0.30.0").argv
    with pytest.raises(ConfigError, match="method 'medusa': not a speculative method of vLLM "
                                          r"0\.33\.0"):
        render_serve(asked, "0.33.0")


def test_a_plugin_method_is_a_warning_only_where_the_release_takes_names():
    asked = {**ASKED, "speculative_config": {"method": "my_tree", "num_speculative_tokens": 2}}
    rendered = render_serve(asked, "0.34.0", custom_methods=("my_tree",))
    assert "a plugin registers it" in rendered.warnings[0].message
    with pytest.raises(ConfigError, match="'my_tree': not a speculative method of vLLM 0.33.0"):
        render_serve(asked, "0.33.0", custom_methods=("my_tree",))


def test_a_per_model_mtp_name_warns_as_vllm_does():
    asked = {**ASKED, "speculative_config": {"method": "mimo_mtp", "num_speculative_tokens": 1}}
    warning, = render_serve(asked, "0.33.0").warnings
    assert "replaced with mtp" in warning.message and "speculative.py:" in warning.message


def test_the_parser_reading_of_an_abbreviation_and_an_ambiguity():
    table = vllm_table("0.34.0")
    prefix, = table.check(["m", "--max-num-seq", "3"])
    assert prefix.level == "warning" and "abbreviation of --max-num-seqs" in prefix.message
    ambiguous, = table.check(["m", "--max-num", "3"])
    assert ambiguous.level == "error" and "ambiguous option" in ambiguous.message


# --- values keep their text -----------------------------------------------------------------

TYPED = [("max_num_seqs", "--max-num-seqs", "010"), ("max_model_len", "--max-model-len", "32k"),
         ("gpu_memory_utilization", "--gpu-memory-utilization", "0.850"),
         ("gpu_memory_utilization", "--gpu-memory-utilization", "1e-1"),
         ("revision", "--revision", "0123456"), ("port", "--port", "08000")]


@pytest.mark.parametrize("key, option, text", TYPED, ids=[f"{o}={t}" for _, o, t in TYPED])
def test_values_reach_argv_as_typed(key, option, text):
    assert words_after(render_serve({**ASKED, key: text}, "0.34.0").argv, option) == text


def test_json_values_keep_their_text():
    asked = {**ASKED, "speculative_config": {"method": "eagle3", "model": "AngelSlim/x",
                                             "revision": "0123456", "num_speculative_tokens": "03"}}
    spec = json.loads(words_after(render_serve(asked, "0.34.0").argv, "--speculative-config"))
    assert spec["revision"] == "0123456" and spec["num_speculative_tokens"] == "03"


# --- a release without its own table --------------------------------------------------------

STAND_INS = [("0.31.0", "0.30.0"), ("0.33.1", "0.33.0"), ("0.35.0", "0.34.0"), ("0.29.0", "0.30.0")]


@pytest.mark.parametrize("asked, used", STAND_INS, ids=[a for a, _ in STAND_INS])
def test_a_release_without_a_table_is_read_with_the_nearest_and_says_so(asked, used):
    assert nearest_release(asked) == used
    warning, = render_serve(ASKED, asked).warnings
    assert f"vLLM {asked}: no table of its own; checked against vLLM {used}" in warning.message
    assert warning.fix == f"generate its table: python tools/vllm_flags.py {asked} --setup"


@pytest.mark.parametrize("version", [None, *RELEASES], ids=["none", *RELEASES])
def test_a_tabled_release_reads_with_its_own_table_silently(version):
    assert render_serve(ASKED, version).warnings == ()
