"""How argparse counts the words after an option, for reading a server's argv as its own
parser would: SGLang's (:mod:`ddlab.config.sglang`) and vLLM's (:mod:`ddlab.config.vllm`)
tables both read argv with these three rules.

A word that starts with ``-`` is an option unless it is a negative number (argparse's
``_negative_number_matcher``, which both parsers keep: they add no option that looks like
one); ``nargs`` ``?``, ``*``, ``+`` or a count says how many of the words up to the next
option an option takes.
"""

from __future__ import annotations

import re

__all__ = ["free_words", "looks_like_option", "arity"]


def free_words(rest: list[str]) -> int:
    """How many words before the next option (an unknown option's values: skipped, not judged)."""
    return next((n for n, word in enumerate(rest) if looks_like_option(word)), len(rest))


def looks_like_option(word: str) -> bool:
    return word.startswith("-") and not re.fullmatch(r"-\d+(\.\d*)?([eE][-+]?\d+)?", word)


def arity(option: str, nargs, rest: list[str]) -> int:
    """How many of the following words ``nargs`` takes; ValueError when too few are there."""
    free = free_words(rest)
    if nargs in ("?", "*", "+"):
        if nargs == "+" and free == 0:
            raise ValueError(f"argument {option}: expected at least one argument")
        return min(free, 1) if nargs == "?" else free
    need = 1 if nargs is None else int(nargs)
    if free < need:
        raise ValueError(f"argument {option}: expected "
                         + ("one argument" if need == 1 else f"{need} arguments"))
    return need
