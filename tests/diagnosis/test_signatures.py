"""ddlab.diagnosis.signatures: the registry is data, tied to sources, and every entry is exercised.

That every signature and kind has a fixture is checked in test_diagnosis.py, next to
the fixture table it extends.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddlab.config.sglang import releases
from ddlab.diagnosis.logtext import PHASES
from ddlab.diagnosis.signatures import KIND_MEANINGS, KINDS, SIGNATURES, by_name


def test_signature_names_are_unique():
    names = [s.name for s in SIGNATURES]
    assert len(names) == len(set(names))


def test_kinds_are_explained_and_unknown_is_last():
    assert KINDS[-1] == "unknown" and len(set(KINDS)) == len(KINDS)
    assert all(KIND_MEANINGS[kind] for kind in KINDS)
    assert {s.kind for s in SIGNATURES} == set(KINDS) - {"unknown"}


@pytest.mark.parametrize("signature", SIGNATURES, ids=[s.name for s in SIGNATURES])
def test_signature_is_well_formed(signature):
    assert signature.kind in KINDS and signature.kind != "unknown"
    assert signature.patterns or signature.lines
    assert signature.phase is None or signature.phase in PHASES
    assert signature.advice or signature.detail, "a signature says what to do"
    for pattern in (*signature.patterns, *signature.context, *signature.absent, *signature.lines,
                    *((signature.types,) if signature.types else ())):
        re.compile(pattern)


@pytest.mark.parametrize("signature", SIGNATURES, ids=[s.name for s in SIGNATURES])
def test_signature_cites_where_its_texts_come_from(signature):
    assert signature.sources, "sources=((release, 'path:line'), ...)"
    for origin, where in signature.sources:
        if origin[:1].isdigit():  # an SGLang release: a path in its wheel, with a line
            assert origin in releases(), f"{origin}: not a release with a flag table"
            assert re.match(r"sglang/\S+\.py(?::\d+)?", where), where
        else:
            assert origin and where


def test_sglang_signatures_cite_a_line_in_the_wheel():
    cited = [where for s in SIGNATURES for origin, where in s.sources if origin[:1].isdigit()]
    with_line = [w for w in cited if re.match(r"sglang/\S+\.py:\d+$", w)]
    assert len(with_line) >= len(cited) - 2, "all but the argparse-built texts name a line"


def test_the_kinds_table_in_the_docs_lists_every_kind():
    table = (Path(__file__).parents[2] / "docs" / "diagnosis.md").read_text()
    rows = set(re.findall(r"^\| `(\w+)` \|", table, re.M))
    assert rows == set(KINDS)


def test_by_name_lists_the_names_on_a_miss():
    assert by_name("kv_pool_oom").kind == "kv_pool_oom"
    with pytest.raises(KeyError, match="known: .*cuda_oom"):
        by_name("no_such_signature")
