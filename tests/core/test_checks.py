"""One number check, one did-you-mean, one env-name rule (ddlab.core.checks), and no
other module words them again."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from ddlab.core.caller import set_caller
from ddlab.core.checks import check_env_name, check_number, closest
from ddlab.core.errors import ConfigError, UnitError

LIB = Path(__file__).resolve().parents[2] / "lib" / "ddlab"


@pytest.mark.parametrize("value, how, words", [
    (0, {"minimum": 1, "integer": True}, "n=0: must be an integer >= 1; try n=4"),
    (True, {"minimum": 1, "integer": True}, "n=True: must be an integer >= 1"),
    (2.0, {"minimum": 1, "integer": True}, "n=2.0: must be an integer >= 1"),
    (0, {"above": True, "seconds": True}, "n=0: must be a finite number of seconds > 0; try n=600"),
    (math.nan, {}, "n=nan: must be a finite number >= 0; try n=5"),
    (math.inf, {"seconds": True, "note": "0: no limit", "example": 60},
     "n=inf: must be a finite number of seconds >= 0 (0: no limit); try n=60"),
    ("5", {}, "n='5': must be a finite number >= 0"),
], ids=["zero-int", "bool", "float-for-int", "zero-seconds", "nan", "inf-with-note", "text"])
def test_a_number_out_of_bounds_is_refused_in_one_grammar(value, how, words):
    previous = set_caller("python")
    try:
        with pytest.raises(ConfigError) as info:
            check_number("n", value, **how)
    finally:
        set_caller(previous)
    assert str(info.value).startswith(words) and info.value.key == "n"


@pytest.mark.parametrize("value, how", [(1, {"minimum": 1, "integer": True}), (0, {}),
                                        (0.5, {"above": True}), (7, {"seconds": True})])
def test_a_number_within_bounds_passes(value, how):
    check_number("n", value, **how)


def test_the_fix_is_in_the_callers_words():
    previous = set_caller("cli")
    try:
        with pytest.raises(ConfigError, match="try --max-time 3600"):
            check_number("max_time_s", -1, seconds=True, example=3600)
    finally:
        set_caller(previous)


@pytest.mark.parametrize("word, candidates, expected", [
    ("budgett", ["budget", "topk_cap"], "budget"),
    ("tp-sise", ["tp-size", "dp-size"], "tp-size"),
    ("budget", ["budget"], None),                    # itself: no suggestion
    ("xyz", ["budget"], None),
    ("Speculative_Ddtree_Budgt", ["speculative-ddtree-budget"], "speculative-ddtree-budget"),
], ids=["typo", "one-letter", "itself", "far", "case-and-dashes"])
def test_did_you_mean_has_one_rule(word, candidates, expected):
    assert closest(word, candidates) == expected


@pytest.mark.parametrize("name", ["1X", "A-B", "", None, "A B"])
def test_an_env_name_has_one_rule(name):
    with pytest.raises(UnitError, match=r"env name .*: must match \[A-Za-z_\]"):
        check_env_name(name, error=UnitError)


def test_no_other_module_words_a_number_check_or_a_did_you_mean_of_its_own():
    """The wordings live in core/checks.py; probes/hook.py runs alone inside the server
    (it imports nothing of ddlab) and keeps difflib."""
    words = re.compile(r"must be (a finite number|an integer >=|a number of seconds)"
                       r"|get_close_matches|must match \[A-Za-z_\]")
    found = [f"{p.relative_to(LIB)}:{n}" for p in LIB.rglob("*.py")
             if p.name != "checks.py" and p.parts[-2:] != ("probes", "hook.py")
             and "target" not in p.relative_to(LIB).parts[:1]
             for n, line in enumerate(p.read_text().splitlines(), 1) if words.search(line)]
    assert not found, found
