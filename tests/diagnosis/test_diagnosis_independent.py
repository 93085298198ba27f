"""Independent check of the crash classifier.

The logs in tests/fixtures/logs/independent/ were written from how SGLang,
PyTorch, uvicorn, argparse, transformers and systemd really print (journal
`short`, `short-iso`, `-o cat` and plain process logs), without reading
ddlab's signatures. expected.json maps each file name to the expected
crashed / kind / phase; `healthy__*` logs must also yield an accept length.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ddlab.diagnosis.diagnosis import diagnose

HERE = Path(__file__).parent.parent / "fixtures" / "logs" / "independent"
EXPECTED: dict[str, dict] = json.loads((HERE / "expected.json").read_text())


def test_every_log_has_an_expectation():
    logs = {p.name for p in HERE.glob("*.log")}
    assert logs == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED), ids=sorted(EXPECTED))
def test_independent_log(name: str):
    want = EXPECTED[name]
    text = (HERE / name).read_text()
    got = diagnose(text)

    assert (got.crashed, got.kind, got.phase) == (want["crashed"], want["kind"], want["phase"]), (
        f"cause={got.cause!r}"
    )

    if name.startswith("healthy__"):
        assert got.decode, "a healthy serving log should have a decode summary"
        accept = {k: v for k, v in got.decode.items()
                  if "accept_len" in k and isinstance(v, (int, float))}
        assert accept, f"no accept length in decode summary: {got.decode}"
        # every accept-length figure must lie within the values the log printed
        printed = [float(x) for x in re.findall(r"accept len: ([0-9.]+)", text)]
        lo, hi = min(printed), max(printed)
        for key, value in accept.items():
            assert lo - 1e-6 <= value <= hi + 1e-6, (key, value, lo, hi)
