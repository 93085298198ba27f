"""Helpers for the tests of real vLLM logs (tests/diagnosis/test_vllm_round*.py): where the
corpus and the unpacked wheels are, a log read as bytes decoded (its line ends kept), and
what ``diagnose`` says of it in one tuple."""

from __future__ import annotations

from pathlib import Path

from ddlab.diagnosis.diagnosis import diagnose

LOGS = Path(__file__).parent / "fixtures" / "logs"
VLLM_REAL = LOGS / "vllm-real"
# the vLLM wheels, unpacked for reading (tools/ fetch them; a test that reads one skips without)
VLLM_WHEELS = Path("/work/wheels/vllm")


def read_log(name: str | Path) -> str:
    """A corpus log by its file name (or any path), as its bytes decode: CRLF stays CRLF."""
    path = name if isinstance(name, Path) else VLLM_REAL / name
    return path.read_bytes().decode("utf-8")


def said(text: str, family: str | None = None) -> tuple:
    """``(crashed, kind, signature)``: what ``diagnose`` says of ``text``."""
    found = diagnose(text, family=family)
    return found.crashed, found.kind, found.signature
