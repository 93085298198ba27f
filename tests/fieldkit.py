"""Helpers for the tests of real logs (tests/diagnosis/test_field*.py, test_vllm_round*.py):
where the corpora and the unpacked wheels are, a work-split SGLang log diagnosed and its
reading in the labels' terms, a vLLM log read as bytes decoded (its line ends kept), what
``diagnose`` says of it in one tuple, a traceback written as vLLM's logger writes it, a
text checked against the (vLLM or SGLang) wheel it is cited from, the quarters a test that
reads a whole corpus runs in, and each corpus's work split with its known misses (known_misses.json)."""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from pathlib import Path

import pytest

from ddlab.config.vllm import vllm_table
from ddlab.diagnosis.diagnosis import diagnose

LOGS = Path(__file__).parent / "fixtures" / "logs"
VLLM_REAL = LOGS / "vllm-real"
REAL = LOGS / "real"  # SGLang's
REAL_MANIFEST = {log["id"]: log for log in json.loads((REAL / "manifest.json").read_text())["logs"]}
VLLM_MANIFEST = {log["id"]: log for log in json.loads((VLLM_REAL / "manifest.json").read_text())["logs"]}
# A test that reads a whole corpus runs in quarters (every fourth log from the first, second, ...): make check
# runs the first, make test all four, which its workers share out (each whole corpus is 2-16 CPU-s).
QUARTERS = 4
# the vLLM wheels, unpacked for reading (tools/fetch_wheels.py fetches them; a test that reads one skips
# without, its reason naming that command)
VLLM_WHEELS = Path("/work/wheels/vllm")


def quarters() -> list:
    """The ``quarter`` parameter of a corpus-wide test: 0 in make check, 1-3 also in make test."""
    return [0, *(pytest.param(q, marks=pytest.mark.slow) for q in range(1, QUARTERS))]


def quarter(items: list, q: int) -> list:
    """Quarter ``q`` of ``items``: every fourth, from the ``q``-th."""
    return items[q::QUARTERS]


def real(log_id: str):
    """The diagnosis of SGLang corpus log ``log_id``, which must be of the work split (a
    held-out log is read by no test)."""
    assert REAL_MANIFEST[log_id]["split"] == "work", f"{log_id}: only work-split logs are read by tests"
    return diagnose((REAL / f"{log_id}.log").read_text(encoding="utf-8"))


def reading(found) -> tuple:
    """``(crashed, kind, phase)`` as the labels put them: a kind only for a crash or a
    request's error."""
    return found.crashed, found.kind if found.crashed or found.kind == "request_error" else None, found.phase


def assert_reads_as_labelled(log_id: str, signature: str | None) -> None:
    """SGLang corpus log ``log_id`` (work split) reads as its labels: crashed and kind, the
    phase where the log shows it (and no second look disputes it), by ``signature``."""
    found, log = real(log_id), REAL_MANIFEST[log_id]
    got = reading(found)
    assert got[:2] == (log["crashed"], log["kind"]), (log_id, got)
    assert found.signature == signature, (log_id, found.signature)
    if log["phase_in_log"] and not log.get("phase_disputed"):
        assert got[2] == log["phase"], (log_id, got)


# the vLLM releases whose real parsers are tabled (ddlab.config.vllm): each judges the advice for every vLLM log
VLLM_RELEASES = ("0.30.0", "0.33.0", "0.34.0")
_SGLANG_WORDS = re.compile(r"mem-fraction-static|cuda-graph|speculative-num|sglang", re.I)
_FRAGMENT = re.compile(r"`([^`]*)`")
_QUOTE = re.compile(r'"[^"]*"')


def proposals(suggestion: str) -> list[list[str]]:
    """Every ``--flag [value]`` the advice proposes (in backticks; none outside them but in a quote)."""
    rest = _QUOTE.sub("", _FRAGMENT.sub("", suggestion))
    assert not re.search(r"(?<![\w-])--[a-z]", rest), f"a flag outside backticks: {suggestion}"
    return [f.split() for f in _FRAGMENT.findall(suggestion) if f.startswith("--")]


def vllm_advice_problems(name: str, text: str, own: bool = True) -> tuple[list[str], dict[str, int]]:
    """What is wrong with the advice vLLM's reading of ``text`` gives, unnamed and for each tabled release: SGLang's
    flags or name in it (``own``: a vLLM log, not an SGLang fixture read in vLLM's dialect, which may quote its
    library), a proposed flag that release's parser does not take; and how many proposals each release judged. The
    log is read once (read_vllm keeps its last readings); every release's advice is judged from that reading."""
    advice = {v: diagnose(text, family="vllm", version=v).suggestion or "" for v in (None, *VLLM_RELEASES)}
    problems = [f"{name} ({v or 'no release named'}): SGLang's words: {a}"
                for v, a in advice.items() if own and _SGLANG_WORDS.search(a)]
    proposed = dict.fromkeys(VLLM_RELEASES, 0)
    for release in VLLM_RELEASES:
        table = _vllm_table(release)
        for argv in (*proposals(advice[None]), *proposals(advice[release])):
            proposed[release] += 1
            if len(argv) == 1:
                problems += [] if table.match(argv[0])[0] else [f"{name} ({release}): {argv[0]}: no such option"]
            else:
                problems += [f"{name} ({release}): {f}" for f in table.check(list(argv)) if f.level == "error"]
    return problems, proposed


@cache
def _vllm_table(release: str):
    return vllm_table(release)


def read_log(name: str | Path) -> str:
    """A corpus log by its file name (or any path), as its bytes decode: CRLF stays CRLF."""
    path = name if isinstance(name, Path) else VLLM_REAL / name
    return path.read_bytes().decode("utf-8")


def said(text: str, family: str | None = None) -> tuple:
    """``(crashed, kind, signature)``: what ``diagnose`` says of ``text``."""
    found = diagnose(text, family=family)
    return found.crashed, found.kind, found.signature


def reads(text: str, family: str | None = None) -> tuple:
    """``(crashed, kind, phase)``: the verdict ``diagnose`` gives ``text`` (the round modules' check)."""
    found = diagnose(text, family=family)
    return found.crashed, found.kind, found.phase


def vllm_signature(text: str, family: str | None = "vllm") -> str | None:
    """The signature ``diagnose`` names for ``text`` read as vLLM's (or as ``family`` says)."""
    return diagnose(text, family=family).signature


# the stamp vLLM's logger puts on each line of a traceback it logs (an engine core's)
STAMP = "ERROR 12-03 10:00:00 [core.py:1000] "


def vllm_traceback(*frames: tuple[str, int, str, str], exc: str | None, head: str = STAMP) -> str:
    """A traceback as vLLM's logger writes it, ``head`` (a process tag, the stamp) on every
    line; ``frames``: (path under site-packages, line, function, code); ``exc`` None: cut."""
    out = [head + "Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'{head}  File "/usr/lib/python3.12/site-packages/{path}", line {line}, in {func}',
                f"{head}    {code}"]
    if exc:
        out.append(head + exc)
    return "\n".join(out) + "\n"


def assert_in_wheel(release: str, path: str, text: str) -> None:
    """``text`` is in ``path`` of vLLM ``release``'s unpacked wheel (skips where it is not)."""
    _assert_in_source(VLLM_WHEELS / release / path, text)


# the SGLang wheels, unpacked for reading like vLLM's (a test that reads one skips without)
SGLANG_WHEELS = Path("/work/wheels")


def assert_in_sglang_wheel(release: str, path: str, text: str) -> None:
    """``text`` is in ``path`` of SGLang ``release``'s unpacked wheel (skips where it is not)."""
    assert_in_library_wheel("sglang", release, path, text)


def assert_in_library_wheel(package: str, release: str, path: str, text: str) -> None:
    """``text`` is in ``path`` of another package's unpacked wheel (triton 3.4.0 as
    /work/wheels/triton-3.4.0/), skipping where it is not."""
    _assert_in_source(SGLANG_WHEELS / f"{package}-{release}" / path, text)


def assert_at_line(package: str, release: str, path: str, line: int, text: str) -> None:
    """Line ``line`` (1-based) of ``path`` in a package's unpacked wheel (/work/wheels/sglang-0.1.16/)
    holds ``text``: where a rule reads a frame's line number (skips where it is not unpacked)."""
    source = SGLANG_WHEELS / f"{package}-{release}" / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)


def wheel_text_test(sources: list[tuple[str, str, str]]):
    """A round module's check that each rule's text is in vLLM's wheel: ``(release, path, text)`` rows,
    one test each, named ``release:path`` (assign it to ``test_each_rules_text_is_vllms_own``)."""

    @pytest.mark.parametrize(("release", "path", "text"), sources, ids=[f"{r}:{p}" for r, p, _ in sources])
    def test(release, path, text):
        assert_in_wheel(release, path, text)

    return test


def library_text_test(sources: list[tuple[str, str, str, str]]):
    """The same for texts of other packages: ``(package, release, path, text)`` rows, named
    ``package-release:path`` (assign it to ``test_each_rules_library_text_is_in_its_wheel``)."""

    @pytest.mark.parametrize(("package", "release", "path", "text"), sources,
                             ids=[f"{k}-{r}:{p}" for k, r, p, _ in sources])
    def test(package, release, path, text):
        assert_in_library_wheel(package, release, path, text)

    return test


def not_unpacked(source: Path) -> str:
    """A skip's reason where a wheel's file is missing: the path, and the command that fetches it."""
    return f"{source} not unpacked here (python tools/fetch_wheels.py --for {source})"


def _assert_in_source(source: Path, text: str) -> None:
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text()


# The fields each work-split log misses, by corpus (test_work_readings.py reads every log against it)
KNOWN_MISSES = json.loads((LOGS / "known_misses.json").read_text())
FIELDS = ("crashed", "kind", "phase")


def corpus_tool(corpus: str = "real"):
    """tools/diagnosis_corpus.py reading ``corpus`` ("real": SGLang's, or "vllm-real"), a fresh module each
    call (a test may point its ``LOGS`` elsewhere)."""
    spec = importlib.util.spec_from_file_location(f"diagnosis_corpus_{corpus.replace('-', '_')}",
                                                  Path(__file__).resolve().parents[1] / "tools" / "diagnosis_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.REAL = LOGS / corpus
    return module


def work_logs(corpus: str) -> list[dict]:
    """The work split of ``corpus``, by id."""
    return sorted(corpus_tool(corpus).load("work"), key=lambda log: log["id"])


def implied_work_counts(corpus: str) -> tuple[int, int, int]:
    """(crashed, kind, phase) right over the work split, from its labels and known misses alone: what the
    floors say, without reading a log (test_work_readings.py holds each log to its known misses)."""
    work = work_logs(corpus)
    measured = (len(work), sum(not log.get("kind_disputed") for log in work),
                sum(bool(log["phase_in_log"]) and not log.get("phase_disputed") for log in work))
    return tuple(n - sum(field in fields for fields in KNOWN_MISSES[corpus].values())
                 for n, field in zip(measured, FIELDS))


def folded_round(manifest: dict, number: int) -> list[str]:
    """The ids of held-out round ``number`` in ``manifest`` (id -> entry), sorted, each folded into work."""
    ids = sorted(log_id for log_id, log in manifest.items() if log.get("heldout_round") == number)
    assert all(manifest[log_id]["split"] == "work" for log_id in ids), number
    return ids


def with_carriage_returns(ids: list[str]) -> list[str]:
    """Those of ``ids`` whose SGLang corpus log holds a carriage return (a progress bar's redraws, CRLF): the logs
    whose text differs as ``ddlab diagnose FILE`` reads it (``read_log``: CR kept) and as Python's newline
    translation gives it to ``ddlab.diagnose`` (each CR a line break)."""
    return [log_id for log_id in ids if b"\r" in (REAL / f"{log_id}.log").read_bytes()]


# a log past this many bytes takes seconds a reading (h122026, 2.87 MB, 23,543 lines: about 5 s on this VM, 2026-12-08):
# a test that reads it twice more runs in make test only
LARGE_LOG_BYTES = 1_000_000


def alike_cases(ids: list[str]) -> list:
    """:func:`with_carriage_returns` of ``ids`` as a parametrize list, each log past :data:`LARGE_LOG_BYTES` marked
    slow (make test reads it both ways, make check does not)."""
    return [pytest.param(log_id, marks=pytest.mark.slow) if (REAL / f"{log_id}.log").stat().st_size > LARGE_LOG_BYTES
            else log_id for log_id in with_carriage_returns(ids)]


def assert_reads_alike_either_way(log_id: str) -> None:
    """The SGLang corpus log ``log_id`` reads the same with its carriage returns kept and translated."""
    path = REAL / f"{log_id}.log"
    assert reads(read_log(path)) == reads(path.read_text(encoding="utf-8")), log_id


def disputed(manifest: dict, ids: list[str]) -> list[str]:
    """Those of ``ids`` whose kind or phase a second look disputed (``kind_disputed``, ``phase_disputed``)."""
    return [log_id for log_id in ids if manifest[log_id].get("kind_disputed") or manifest[log_id].get("phase_disputed")]


def assert_vllm_logs_read_as_labelled(ids: list[str]) -> dict:
    """Each vLLM corpus log of ``ids`` reads as labelled (crashed; the kind unless disputed; the phase where the
    log shows it, unless disputed) but in the fields known_misses.json lists for it; returns those listed misses."""
    left = {log_id: KNOWN_MISSES["vllm-real"][log_id] for log_id in ids if log_id in KNOWN_MISSES["vllm-real"]}
    for log_id in ids:
        log, missed = VLLM_MANIFEST[log_id], left.get(log_id, [])
        got = reads(read_log(f"{log_id}.log"))
        kind = got[1] if got[0] or got[1] == "request_error" else None
        if "crashed" not in missed:
            assert got[0] == log["crashed"], (log_id, got)
        if "kind" not in missed and not log.get("kind_disputed"):
            assert kind == log["kind"], (log_id, got)
        if log["phase_in_log"] and "phase" not in missed and not log.get("phase_disputed"):
            assert got[2] == log["phase"], (log_id, got)
    return left
