"""Prompt sets for a workload: the shipped ones (chat, code, math) and the user's JSONL.

Acceptance differs sharply between kinds of text (a drafter guesses code's next
token far more often than a chat reply's), so a workload sweep measures each set's
accept length on its own, and its throughput on all of them mixed. The shipped sets
are small (six prompts each), in the repo (``params/prompts/NAME.jsonl``, one
``{"text": ...}`` per line), never downloaded. A set is named by its file's stem:
``chat``, or ``/data/support.jsonl`` read as ``support`` (:func:`ddlab.lab.measure.load_prompts`
reads it: JSON lines with ``text`` or ``prompt``, else a prompt per line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ddlab.core.errors import ConfigError
from ddlab.core.paths import params_dir

__all__ = ["SHIPPED", "PromptSet", "load_sets", "mixed", "shipped_path"]

SHIPPED = ("chat", "code", "math")


@dataclass(frozen=True)
class PromptSet:
    """A named list of prompts."""

    name: str
    prompts: tuple


def shipped_path(name: str) -> Path:
    """Where a shipped set lives: the project's ``params/prompts/NAME.jsonl``, else the one
    beside ddlab's own source (a project of its own need not copy them)."""
    path = params_dir() / "prompts" / f"{name}.jsonl"
    own = Path(__file__).resolve().parents[3] / "params" / "prompts" / f"{name}.jsonl"
    return path if path.is_file() or not own.is_file() else own


def load_sets(names) -> list[PromptSet]:
    """Each of ``names`` (a shipped set's name or a file's path) read, checked, in order;
    two sets of one name are refused (their figures would be one row)."""
    from ddlab.lab.measure import load_prompts

    sets = []
    for given in names:
        path = shipped_path(given) if given in SHIPPED else Path(str(given)).expanduser()
        if given not in SHIPPED and not path.is_file():
            raise ConfigError(f"prompts={given!r}: neither a shipped set nor a file",
                              fix=f"name one of {', '.join(SHIPPED)}, or give a JSONL file "
                                  'of {"text": ...} lines', key="prompts", value=given)
        name = given if given in SHIPPED else path.stem
        if any(s.name == name for s in sets):
            raise ConfigError(f"prompts: {name!r} given twice", fix="name each set once",
                              key="prompts", value=given)
        sets.append(PromptSet(name, tuple(load_prompts(path))))
    return sets


def mixed(sets: list[PromptSet]) -> list[str]:
    """Every set's prompts interleaved (chat 1, code 1, math 1, chat 2, ...), so any
    run of consecutive requests draws on every set."""
    longest = max((len(s.prompts) for s in sets), default=0)
    return [s.prompts[i] for i in range(longest) for s in sets if i < len(s.prompts)]
