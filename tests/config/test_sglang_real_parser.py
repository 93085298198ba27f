"""The commands ddlab renders and the flags its advice proposes, through the wheels' own parsers.

tests/config/test_sglang.py and tests/diagnosis/test_advice.py read the same commands with
the recorded tables (:class:`ddlab.config.sglang.FlagTable`, an emulation of argparse). This
file asks each release's real argparse instead: ``tools/sglang_parse.py`` builds it with the
wheel's own ``ServerArgs.add_cli_args`` and runs ``parse_args`` (the wheel is downloaded into
~/.cache/ddlab/sglang when absent; a wheel that cannot be fetched skips, saying why). So the
emulation cannot drift from argparse unnoticed. The DDTree fork's flags are in no wheel: they
are taken out of a command before it is parsed (the fork adds them; its table is the overlay).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from test_sglang import CASES  # the recorded-table test's variants: base x release x overrides

from ddlab.config.sglang import flag_table
from ddlab.config.variants import make_variant
from ddlab.diagnosis.diagnosis import diagnose

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sglang_parse", ROOT / "tools" / "sglang_parse.py")
sglang_parse = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sglang_parse)

OVERLAY = json.loads((ROOT / "lib/ddlab/config/sglang_flags/ddtree-fork.json").read_text())
FORK = {o: a["nargs"] for a in OVERLAY["options"] for o in a["options"]}  # option -> nargs
LOGS = ROOT / "tests" / "fixtures" / "logs"
ADVICE_RELEASES = ("0.4.10.post2", "0.5.10", "0.5.23")
ALGORITHMS = ("EAGLE", "DFLASH", "DDTREE", None)  # None: the algorithm the log names, if any


def _real_parse(version: str, commands: list[list[str]]) -> list[dict]:
    try:
        return sglang_parse.parse(version, commands)
    except FileNotFoundError as error:
        pytest.skip(f"sglang {version}: no wheel to parse with: {error}")


def _without_fork_flags(argv: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(argv):
        name = argv[i].split("=", 1)[0]
        if name in FORK:
            i += 1 if ("=" in argv[i] or FORK[name] == 0) else 2
            continue
        out.append(argv[i])
        i += 1
    return out


RELEASES = sorted({release for _, release, _ in CASES})


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_every_rendered_base_command_is_accepted_by_the_wheels_parser(release):
    rendered = []
    for base, at, overrides in CASES:
        if at == release:
            config = make_variant(base, overrides).config
            argv = config.argv(python="python")[3:]
            rendered.append((f"{base} {overrides}", _without_fork_flags(argv)
                             if config.sglang.get("fork") else argv))
    assert rendered
    results = _real_parse(release, [argv for _, argv in rendered])
    refused = [f"{name}: {r['error']}" for (name, _), r in zip(rendered, results) if not r["ok"]]
    assert not refused, "\n".join(refused)


def _proposals(release: str) -> dict[tuple[str, ...], str]:
    """Every argv fragment the advice proposes for ``release`` (fork flags taken out),
    with one log that proposes it."""
    found: dict[tuple[str, ...], str] = {}
    logs = sorted(p for p in [*LOGS.glob("*.log"), *LOGS.glob("sglang/*.log"), *LOGS.glob("pastes/*.log")]
                  if not p.name.startswith(("healthy", "stopped", "startup_cut")))
    for path in logs:
        text = path.read_bytes().decode("utf-8")
        for algorithm in ALGORITHMS:
            suggestion = diagnose(text, version=release, algorithm=algorithm).suggestion or ""
            for fragment in re.findall(r"`(--[^`]*)`", suggestion):
                words = tuple(_without_fork_flags(fragment.split()))
                if words:
                    found.setdefault(words, path.name)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("release", ADVICE_RELEASES)
def test_every_proposed_flag_is_accepted_by_the_wheels_parser(release):
    proposals = _proposals(release)
    assert proposals
    results = _real_parse(release, [["--model-path", "m", *words] for words in proposals])
    table = flag_table(release)  # committed from this wheel (test_sglang_tables.py)
    refused = []
    for (words, log), result in zip(proposals.items(), results):
        named_only = len(words) == 1 and "=" not in words[0]  # "lower `--max-running-requests`"
        if result["ok"] and not (named_only and table.action(words[0]) is None):
            continue  # (a named flag must be spelled in full, not taken as a prefix)
        if named_only and table.action(words[0]) and "expected one argument" in (result["error"] or ""):
            continue
        refused.append(f"{' '.join(words)} (advice for {log}): {result['error']}")
    assert not refused, "\n".join(refused)
