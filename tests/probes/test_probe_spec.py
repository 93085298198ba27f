"""A probe is checked before anything touches a host; the files and environment that arm it."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

import ddlab.probes
from ddlab.core.errors import ConfigError
from ddlab.probes import ProbeSpec, install_files, parse_probe, parse_probes, probe_env

RUNNER = "ddlab.target.cuda_graph_runner.CudaGraphRunner"
SGLANG = "sglang.srt.model_executor.cuda_graph_runner.CudaGraphRunner.replay"


@pytest.mark.parametrize("text, spec", [
    (SGLANG, ProbeSpec(SGLANG, "error", None)),
    (f"{SGLANG}:error", ProbeSpec(SGLANG, "error", None)),
    (f"{RUNNER}.replay_prepare:first=3", ProbeSpec(f"{RUNNER}.replay_prepare", "first", 3)),
    (f"{RUNNER}.execute:first=50", ProbeSpec(f"{RUNNER}.execute", "first", 50)),
    ("ddlab.target.cuda_graph_runner._grouped_foreach_copy_:time",
     ProbeSpec("ddlab.target.cuda_graph_runner._grouped_foreach_copy_", "time", None)),
], ids=["default-error", "error", "first", "first-at-bound", "time"])
def test_a_probe_parses(text, spec):
    assert parse_probe(text) == spec


@pytest.mark.parametrize("spec", [ProbeSpec(SGLANG), ProbeSpec(SGLANG, "first", 7),
                                  ProbeSpec("a.b", "time")], ids=["error", "first", "time"])
def test_to_text_round_trips(spec):
    assert parse_probe(spec.to_text()) == spec


BAD = [
    ("", "empty", "DOTTED.PATH[:MODE]"),
    ("   ", "empty", "DOTTED.PATH[:MODE]"),
    ("mod.fn :first=2", "contains a space", "DOTTED.PATH[:MODE]"),
    ("mod.fn;rm -rf /", "contains a space", "DOTTED.PATH[:MODE]"),
    ("mod.fn;reboot", "';' not allowed in the path (letters, digits, _ and . only",
     "DOTTED.PATH[:MODE]"),
    ("mod.$(reboot)", "'$' '(' ')' not allowed", "DOTTED.PATH[:MODE]"),
    ("mod.fn|cat", "'|' not allowed", "DOTTED.PATH[:MODE]"),
    ("mod/fn.x", "'/' not allowed", "DOTTED.PATH[:MODE]"),
    ("mod..fn", "an empty segment", "DOTTED.PATH[:MODE]"),
    (".mod.fn", "an empty segment", "DOTTED.PATH[:MODE]"),
    ("mod.2fn", "segment '2fn' is not a Python identifier", "DOTTED.PATH[:MODE]"),
    ("mod.class.fn", "segment 'class' is not a Python identifier", "DOTTED.PATH[:MODE]"),
    ("replay", "names no function inside a module", "MODULE.CLASS.METHOD"),
    ("mod.fn:", "mode '' is unknown; allowed: error, first=N, time", "try mod.fn:error"),
    ("mod.fn:eror", "mode 'eror' is unknown", "did you mean error?"),
    ("mod.fn:time=3", "mode 'time=3' is unknown", "did you mean time?"),
    ("mod.fn:first", "mode 'first' needs a count", "try mod.fn:first=3"),
    ("mod.fn:first=0", "first=0: N must be a whole number from 1 to 50", "try mod.fn:first=3"),
    ("mod.fn:first=-2", "first=-2: N must be a whole number", "try mod.fn:first=3"),
    ("mod.fn:first=1.5", "first=1.5: N must be a whole number", "try mod.fn:first=3"),
    ("mod.fn:first=x", "first=x: N must be a whole number", "try mod.fn:first=3"),
    ("mod.fn:first=51", "first=51: N must be a whole number from 1 to 50", "try mod.fn:first=3"),
    ("mod.fn:first=2:time", "first=2:time: N must be a whole number", "try mod.fn:first=3"),
]


@pytest.mark.parametrize("text, problem, fix", BAD, ids=[repr(case[0]) for case in BAD])
def test_a_bad_probe_names_the_value_and_the_fix(text, problem, fix):
    with pytest.raises(ConfigError) as caught:
        parse_probe(text)
    assert str(caught.value).startswith(f"probe {text!r}: ")
    assert problem in caught.value.message
    assert fix in caught.value.fix
    assert caught.value.value == text and caught.value.key == "probe"


@pytest.mark.parametrize("value", [None, 3], ids=["none", "int"])
def test_a_probe_that_is_not_text_is_refused(value):
    with pytest.raises(ConfigError, match="empty"):
        parse_probe(value)


def test_parse_probes_drops_duplicates_and_keeps_order():
    specs = parse_probes(["b.f:time", "a.g", "b.f:time", "a.g:error", "a.g:first=2"])
    assert specs == [ProbeSpec("b.f", "time"), ProbeSpec("a.g"), ProbeSpec("a.g", "first", 2)]


def test_parse_probes_takes_a_lone_string_as_one_probe():
    assert parse_probes("a.g:first=2") == [ProbeSpec("a.g", "first", 2)]


def test_parse_probes_fails_on_the_first_bad_one():
    with pytest.raises(ConfigError, match=r"probe 'a\.g:first=0'"):
        parse_probes(["b.f", "a.g:first=0"])


def test_probe_env_gives_the_hooks_json_and_puts_the_folder_first():
    env = probe_env(["m.f:first=2", "m.C.g", "m.f:first=2"], "/srv/run/probes",
                    pythonpath="/opt/site:/usr/lib/extra")
    assert json.loads(env["DDLAB_PROBES"]) == [{"target": "m.f", "mode": "first", "n": 2},
                                               {"target": "m.C.g", "mode": "error", "n": None}]
    assert env["PYTHONPATH"] == "/srv/run/probes:/opt/site:/usr/lib/extra"
    assert " " not in env["DDLAB_PROBES"]


def test_probe_env_without_a_pythonpath_is_the_folder_alone():
    assert probe_env(["m.f"], Path("/srv/p"))["PYTHONPATH"] == "/srv/p"


def test_probe_env_checks_the_probes_first():
    with pytest.raises(ConfigError, match="not allowed"):
        probe_env(["m.f`id`"], "/srv/p")


def test_install_files_writes_the_hook_and_the_sitecustomize(tmp_path):
    written = install_files(tmp_path / "probe")
    assert [p.name for p in written] == ["ddlab_probe_hook.py", "sitecustomize.py"]
    source = Path(ddlab.probes.__file__).parent
    assert written[0].read_text() == (source / "hook.py").read_text()
    assert written[1].read_text() == (source / "sitecustomize_template.py").read_text()


@pytest.mark.parametrize("name", ["hook.py", "sitecustomize_template.py"])
def test_the_host_side_files_import_the_standard_library_only(name):
    """They run where ddlab is not installed."""
    tree = ast.parse((Path(ddlab.probes.__file__).parent / name).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported - {"__future__", "ddlab_probe_hook"} <= set(sys.stdlib_module_names)


@pytest.mark.parametrize("name", ddlab.probes.__all__)
def test_every_public_name_resolves(name):
    assert getattr(ddlab.probes, name) is not None
