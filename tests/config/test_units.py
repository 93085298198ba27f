"""ddlab.config.units: rendered units match the goldens, pass `systemd-analyze verify`, and
make systemd run exactly the intended argv (checked under a real systemd and
against a reference parser written from systemd.syntax(7)/systemd.service(5)).

Regenerate the goldens after an intended change:
    DDLAB_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/config/test_units.py -k golden
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlab import cli
from ddlab.config.bases import Config
from ddlab.config.units import env_assignment, exec_quote, render_unit
from ddlab.config.variants import make_variant
from ddlab.core.errors import ConfigError, UnitError
from testhost.host import UNIT_DIR

GOLDEN = Path(__file__).parent.parent / "golden"
ANALYZE = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
GOLDEN_PYTHON = "/usr/bin/python3"  # for bases whose python is null (the host's)

# Values a user (or a hostile base file) could put into a unit.
ADVERSARIAL = ["a b", '"q"', "'s'", "$HOME", "${HOME}", "$", "%h", "%%", ";rm -rf /", ";",
               "\\;", "\\", "\\\\n", "x\\", "", " lead", "trail ", "\t", "a\x01b\x7f", "#x",
               "-x", "@x", "é ü 漢字 🚀", "--port", "a=b c=d"]
ADV_IDS = [repr(v)[1:-1] or "empty" for v in ADVERSARIAL]


# --- a reference parser, written from the man pages ---------------------------------

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\", '"': '"', "'": "'", "s": " "}


def _logical_lines(text: str) -> list[str]:
    """Lines with comments dropped and backslash continuations joined (systemd.syntax(7))."""
    out, pending = [], None
    for raw in text.split("\n"):
        if pending is None and raw.lstrip().startswith(("#", ";")):
            continue
        line = raw if pending is None else pending + raw
        escaped = False
        for ch in line:
            escaped = not escaped and ch == "\\"
        if escaped:
            pending = line[:-1] + " "
        else:
            out.append(line)
            pending = None
    assert pending is None, "unit ends inside a continued line"
    return out


def _unescape(text: str, i: int) -> tuple[str, int]:
    c = text[i]
    if c in _ESCAPES:
        return _ESCAPES[c], i + 1
    width = {"x": 2, "u": 4, "U": 8}.get(c)
    if width:
        return chr(int(text[i + 1:i + 1 + width], 16)), i + 1 + width
    if c in "01234567":
        return chr(int(text[i:i + 3], 8)), i + 3
    raise AssertionError(f"unknown escape \\{c} in {text!r}")


def _words(value: str) -> list[str]:
    """Split and unquote like extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE), strictly:
    quotes only around whole words, no lone ';' (ddlab renders one command)."""
    words, i, n = [], 0, len(value)
    while True:
        while i < n and value[i] in " \t":
            i += 1
        if i == n:
            return words
        assert not (value[i] == ";" and (i + 1 == n or value[i + 1] in " \t")), "lone ;"
        quote = value[i] if value[i] in "\"'" else None
        i += bool(quote)
        word = []
        while True:
            if i == n or (not quote and value[i] in " \t"):
                assert not quote, f"unbalanced quote in {value!r}"
                break
            c = value[i]
            if quote and c == quote:
                i += 1
                assert i == n or value[i] in " \t", "closing quote not followed by space"
                break
            assert quote or c not in "\"'", f"quote inside a bare word in {value!r}"
            if c == "\\":
                ch, i = _unescape(value, i + 1)
                word.append(ch)
            else:
                word.append(c)
                i += 1
        words.append("".join(word))


def _undouble(word: str, mark: str) -> str:
    """``%%`` -> ``%`` (specifiers) or ``$$`` -> ``$`` (exec-time variables); any other
    use of the mark would change the value, so it fails the test."""
    out, i = [], 0
    while i < len(word):
        if word[i] == mark:
            assert word[i + 1:i + 2] == mark, f"bare {mark} left in {word!r}"
            i += 1
        out.append(word[i])
        i += 1
    return "".join(out)


def _settings(unit_text: str) -> list[tuple[str, str]]:
    return [tuple(line.split("=", 1)) for line in _logical_lines(unit_text)
            if "=" in line and not line.startswith("[")]


def reference_argv(unit_text: str) -> list[str]:
    """The argv systemd execs for the unit's ExecStart= (per the man pages)."""
    [value] = [v for k, v in _settings(unit_text) if k == "ExecStart"]
    words = [_undouble(w, "%") for w in _words(value)]
    return [words[0]] + [_undouble(w, "$") for w in words[1:]]


def reference_env(unit_text: str) -> dict:
    pairs = [_undouble(w, "%") for k, v in _settings(unit_text) if k == "Environment"
             for w in _words(v)]
    return dict(p.split("=", 1) for p in pairs)


# --- goldens and verify -------------------------------------------------------------

_GOLDEN_CASES = {
    "ddtree": ("ddtree", None),
    "dflash": ("dflash", None),
    "local": ("local", None),
    "ddtree-b32-nograph": ("ddtree", ["speculative_ddtree_budget=32", "disable_cuda_graph=true"]),
}


@pytest.mark.parametrize("golden", list(_GOLDEN_CASES), ids=list(_GOLDEN_CASES))
def test_rendered_unit_matches_golden(golden):
    base, overrides = _GOLDEN_CASES[golden]
    text = render_unit(make_variant(base, overrides), python=GOLDEN_PYTHON)
    path = GOLDEN / f"{golden}.service"
    if os.environ.get("DDLAB_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"no golden {path.name}; run with DDLAB_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path.name} changed; if intended: DDLAB_UPDATE_GOLDEN=1"


def _verify(tmp_path: Path, units: dict[str, str]) -> None:
    """One `systemd-analyze verify` over all units; it must say nothing at all
    (it exits 0 on warnings such as an unknown escape, so the output is the test)."""
    if not os.access(ANALYZE, os.X_OK):
        pytest.skip(f"{ANALYZE} missing (Debian package systemd; `make hostdeps`)")
    paths = []
    for name, text in units.items():
        paths.append(tmp_path / f"ddlab-test-{name}.service")
        paths[-1].write_text(text)
    done = subprocess.run([ANALYZE, "verify", *map(str, paths)], capture_output=True,
                          text=True, timeout=60)
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 0 and not said, said


def test_every_golden_case_passes_systemd_analyze_verify(tmp_path):
    units = {}
    for golden, (base, overrides) in _GOLDEN_CASES.items():
        # verify checks that the executable exists: use this interpreter.
        variant = make_variant(base, [*(overrides or []), f"python={sys.executable}"])
        units[golden] = render_unit(variant)
    _verify(tmp_path, units)


def _adversarial_variant(value: str, i: int = 0):
    return make_variant("local", {"flags.shadow-arg": value, "flags.tail": [value, "end"],
                                  f"env.DDLAB_ADV{i}": value, "python": sys.executable})


def test_adversarial_values_pass_verify_and_round_trip(tmp_path):
    units = {}
    for i, value in enumerate(ADVERSARIAL):
        variant = _adversarial_variant(value, i)
        text = render_unit(variant)
        assert reference_argv(text) == variant.config.argv(), value
        assert reference_env(text)[f"DDLAB_ADV{i}"] == value
        units[f"adv{i}"] = text
    _verify(tmp_path, units)


def test_must_show_cli_unit_passes_verify(tmp_path, capsys):
    """`ddlab unit --set speculative_ddtree_budget=32 --set disable_cuda_graph=true`
    (default base local), and the same against the ddtree base."""
    argv = ["unit", "--set", "speculative_ddtree_budget=32", "--set", "disable_cuda_graph=true"]
    assert cli.main(argv) == 0
    local = capsys.readouterr().out
    assert cli.main([*argv, "--base", "ddtree", "--set", f"python={sys.executable}"]) == 0
    ddtree = capsys.readouterr().out
    for text in (local, ddtree):
        assert "--speculative-ddtree-budget 32" in text and "--disable-cuda-graph" in text
    assert "Description=ddlab variant ddtree-b32-nograph-" in ddtree
    _verify(tmp_path, {"cli-local": local, "cli-ddtree": ddtree})


def test_cli_unit_errors(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["unit", "--set"])
    assert info.value.code == 2
    capsys.readouterr()
    assert cli.main(["unit", "--set", "speculative_ddtree_budgt=3"]) == 1
    assert "did you mean --speculative-ddtree-budget?" in capsys.readouterr().err
    assert cli.main(["unit", "--set", "budget"]) == 1
    assert "override 'budget': must be KEY=VALUE" in capsys.readouterr().err
    assert cli.main(["unit", "--base", "nope"]) == 1
    assert "available: " in capsys.readouterr().err


# --- quoting rules ------------------------------------------------------------------


@pytest.mark.parametrize("arg,quoted", [
    ("plain-1.5:x=y,z/@+", "plain-1.5:x=y,z/@+"), ("a b", '"a b"'), ('"q"', '"\\"q\\""'),
    ("'s'", "\"'s'\""), ("$HOME", '"$$HOME"'), ("%h", '"%%h"'), (";", '";"'),
    (";rm -rf /", '";rm -rf /"'), ("\\", '"\\\\"'), ("", '""'), ("\t", '"\\x09"'),
    ("é", '"é"'),
], ids=["plain", "space", "dquote", "squote", "dollar", "percent", "semicolon", "rm",
        "backslash", "empty", "tab", "unicode"])
def test_exec_quote(arg, quoted):
    assert exec_quote(arg) == quoted


def test_env_assignment_quotes_and_keeps_dollar_literal():
    assert env_assignment("A", 'x "y" $HOME %h \\') == '"A=x \\"y\\" $HOME %%h \\\\"'


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\0b"], ids=["newline", "cr", "nul"])
def test_unwritable_values_raise_unit_error(bad):
    with pytest.raises(UnitError, match="line break|NUL"):
        render_unit(make_variant("local", {"flags.x": bad}), python=sys.executable)
    with pytest.raises(UnitError):
        render_unit(make_variant("local", {"env.X": bad}), python=sys.executable)
    with pytest.raises(UnitError):
        render_unit(make_variant("local", {}), python=sys.executable, description=bad)


@pytest.mark.parametrize("python", ["python3", ".venv/bin/python", "/opt/$x/python",
                                    "/opt/a\"b", "/opt/bin/"],
                         ids=["bare", "relative", "dollar", "quote", "dir"])
def test_executable_must_be_a_plain_absolute_path(python):
    with pytest.raises(UnitError, match="absolute path") as info:
        render_unit(make_variant("local", {}), python=python)
    assert "try python=" in str(info.value)  # Python's words (the CLI's: --set python=)


def test_python_null_without_a_host_interpreter_is_a_config_error():
    with pytest.raises(ConfigError, match="python: not set"):
        render_unit(make_variant("local", {}))


def test_unit_defaults_and_overrides():
    text = render_unit(make_variant("local", {"unit.restart": "on-failure", "unit.user": "sg"}),
                       python=sys.executable)
    assert "Type=simple\n" in text and "KillMode=control-group\n" in text
    assert "Restart=on-failure\n" in text and "User=sg\n" in text
    assert text.rstrip().endswith("[Install]\nWantedBy=multi-user.target")
    assert "Restart=no\n" in render_unit(make_variant("local", {}), python=sys.executable)


def test_description_escapes_percent_and_masks_secrets():
    variant = make_variant("local", {"env.HF_TOKEN": "hf_planted", "flags.x": "50%"})
    text = render_unit(variant, python=sys.executable)
    [desc] = [v for k, v in _settings(text) if k == "Description"]
    assert "hf_planted" not in desc and "env.HF_TOKEN -> ***" in desc
    assert "50%%" in desc and "hf_planted" not in variant.name


_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\n\r\0"),
                max_size=12)


@settings(max_examples=150, deadline=None)
@given(args=st.lists(_TEXT, min_size=1, max_size=5), env=_TEXT)
def test_property_reference_parser_recovers_argv_and_env(args, env):
    config = Config.from_dict({"command": {"python": "/usr/bin/python3", "module": "m"},
                               "flags": {"--x": args}, "env": {"E": env}}, base="prop")
    text = render_unit(make_variant(config, {}))
    assert reference_argv(text) == config.argv()
    assert reference_env(text) == {"E": env}


# --- under a real systemd -----------------------------------------------------------

_DUMP = """\
import json, os, sys
argv = open("/proc/self/cmdline", "rb").read().split(b"\\0")[:-1]
out = {"argv": [a.decode("utf-8", "surrogateescape") for a in argv], "cwd": os.getcwd(),
       "env": {k: v for k, v in os.environ.items() if k.startswith("DDLAB_ADV")}}
with open("dump.json.tmp", "w") as fh:
    json.dump(out, fh)
os.rename("dump.json.tmp", "dump.json")
"""


def test_systemd_runs_exactly_the_intended_argv(testhost):
    """Install the unit in a real systemd, start it, and compare what the process got."""
    base = Path(testhost.shared_dir) / "argv test %n $HOME 'q'"
    bindir = Path(testhost.shared_dir) / "bin dir %h"  # no quote or $: systemd refuses those
    bindir.mkdir()
    base.mkdir()
    (base / "ddlab_test_argv_dump.py").write_text(_DUMP)
    (bindir / "python").symlink_to(sys.executable)  # an executable path that needs quoting
    overrides = {"python": str(bindir / "python"), "module": "ddlab_test_argv_dump",
                 "unit.working_directory": str(base), "flags.first": ADVERSARIAL[0],
                 "flags.rest": ADVERSARIAL[1:], "flags.switch": True,
                 **{f"env.DDLAB_ADV{i}": v for i, v in enumerate(ADVERSARIAL)}}
    variant = make_variant("local", overrides)
    unit = f"ddlab-test-argv-{os.getpid()}.service"
    path = f"{UNIT_DIR}/{unit}"  # the test host's own /run
    testhost.run(["sh", "-c", 'cat > "$1"', "sh", path], input=render_unit(variant))
    try:
        testhost.run(["systemctl", "daemon-reload"])
        testhost.run(["systemctl", "start", unit])
        dump = base / "dump.json"
        deadline = time.monotonic() + 30
        while not dump.exists():
            assert time.monotonic() < deadline, testhost.run(
                ["journalctl", "-u", unit, "--no-pager"], check=False).stdout
            time.sleep(0.05)
        got = json.loads(dump.read_text())
    finally:
        testhost.run(["rm", "-f", "--", path])
        testhost.run(["systemctl", "stop", unit], check=False)
        testhost.run(["systemctl", "reset-failed", unit], check=False)
        testhost.run(["systemctl", "daemon-reload"], check=False)
    assert got["argv"] == variant.config.argv()
    assert got["env"] == {f"DDLAB_ADV{i}": v for i, v in enumerate(ADVERSARIAL)}
    assert got["cwd"] == str(base)
