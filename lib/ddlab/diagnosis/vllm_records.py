"""vLLM's log records read whole (round 16): what the lines of one record say together.

Contract: vLLM's logger writes every line of a record under the record's own prefix (``NewLineFormatter``
repeats the text before the message after each newline: vllm/logging_utils/formatter.py:17 (0.7.3), :77
(0.34.0)), the traceback of ``logger.exception`` or ``exc_info=True`` included; Python's default formatter
writes the traceback's lines bare under the prefixed message. Two readings follow, used by
:func:`ddlab.diagnosis.vllm_diagnosis.read_vllm`:

- :func:`without_debug_tracebacks`: a traceback in a record logged at DEBUG (``logger.debug(...,
  exc_info=True)``, the trace of a fallback the code took before it went on: "Failed to load AutoProcessor
  chat template for %s", entrypoints/chat_utils.py:463 (0.11.1), renderers/hf.py:304 (0.34.0)) is no error of
  the run: its lines are blanked (their numbers kept), the record's message line kept.
- :func:`with_engine_messages`: V0's multiprocessing engine logs the exception itself as the record's message
  (``run_mp_engine``: ``logger.exception(e)``, its str; ``MQLLMEngine.start``: ``logger.exception(repr(e))``;
  engine/multiprocessing/engine.py:400, :140 (0.7.3), :366, :135 (0.6.4.post1)). A traceback cut before its
  exception line whose outermost frame is one of those two takes the message right above it as its
  exception (a repr ``Type('message')`` gives the type; a str gives ``Exception``, as
  :mod:`.vllm_diagnosis` reads a V0 worker's header), where the message is the same record's (the traceback
  line under the same prefix, or bare) and logged at ERROR or with no level shown.
- :func:`with_announced_traceback` (round 49): a log that ends at the message of a failure vLLM's worker logs
  with ``logger.exception`` ("WorkerProc hit an exception.") was cut before that record's traceback: a cut chain;
  so is one that ends at V0's engine process's own record of what ended it (round 53, run_mp_engine's).
- :func:`with_handler_records` (round 27): a chain every line of which the log shows under an ERROR stamp of
  the OpenAI chat or completion handler ("serving_chat.py:N]", "[serving_completion.py:N]") is a traceback
  that handler logged for one request before it answered it (``HANDLER_LOGGED`` of
  :mod:`ddlab.vllm_crashes.requests` says where): the chain is marked handled, one request's error.
- :func:`dumped_step` (round 70): a line under the ERROR stamp of vLLM's ``dump_input.py`` is part of the engine
  core's dump of the step it failed on, whatever the paste kept of that record: the engine core died while serving.
- :func:`with_utility_records` (round 58): so is a chain every line of which the log shows under the stamp of
  the engine core's "Invocation of ... method failed" record, after it: what a utility method raised, which
  the engine logged and answered the caller with (``UTILITY_FAILED`` says where), whatever it raised but a sticky
  CUDA fault (round 93: an illegal memory access leaves the process unable to run CUDA work, the engine's death).
- :func:`with_first_code_line` (round 76): a paste that starts on a traceback's last code line, its exception line
  right under it: the code line is part of that exception's chain (the call that raised).
"""

from __future__ import annotations

import re

from ddlab.diagnosis.logtext import Line
from ddlab.diagnosis.tracebacks import Chain, Raised
from ddlab.diagnosis.vllm_log import VLLM_FILEINFO, VLLM_STAMP, VLLM_TIME
from ddlab.vllm_crashes.requests import STICKY_CUDA_FAULT

__all__ = ["without_debug_tracebacks", "with_engine_messages", "with_announced_traceback", "with_handler_records",
           "with_utility_records", "only_vllm_services", "dumped_step", "with_first_code_line"]

_BARE_TYPE_RE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)\s*$")
_SEPARATOR_RE = re.compile(r"^\s*(?:The above exception was the direct cause of the following exception"
                           r"|During handling of the above exception, another exception occurred):\s*$")

_TRACEBACK = "Traceback (most recent call last):"
# the prefix up to vLLM's stamp at DEBUG (vllm/logger.py:22 (0.7.3), :28 (0.34.0); before 0.8 "file:N]",
# then "[file:N]"); a process tag or a collector's prefix before it is part of the record's prefix
_DEBUG_RE = re.compile(rf"^(?P<prefix>.{{0,120}}?\bDEBUG {VLLM_TIME} {VLLM_FILEINFO} ?)(?P<msg>.*)$")
# V0's MQLLMEngine functions that log the exception as the message (engine/multiprocessing/engine.py)
_ENGINE_FILE = re.compile(r"[/\\]vllm[/\\]engine[/\\]multiprocessing[/\\]engine\.py$")
_ENGINE_FUNCS = ("run_mp_engine", "start")
_REPR_RE = re.compile(r"^(?P<type>(?:\w+\.)*\w*(?:Error|Exception|Interrupt|Exit))\((?P<q>['\"])(?P<msg>.*)(?P=q),?\)$")
_OTHER_LEVEL_RE = re.compile(r"\b(?:DEBUG|INFO|WARNING|WARN)\b")


def without_debug_tracebacks(text: str) -> str:
    """``text`` with the tracebacks of records logged at DEBUG blanked, from the traceback's first line to the
    last line under the same prefix (the record's message line kept; line numbers unchanged)."""
    lines = text.splitlines(keepends=True)
    out, index = list(lines), 0
    while index < len(lines):
        match = _DEBUG_RE.match(lines[index].rstrip("\r\n"))
        if not (match and match["msg"].strip() == _TRACEBACK):
            index += 1
            continue
        prefix = match["prefix"]
        while index < len(lines) and lines[index].startswith(prefix):
            body = lines[index].rstrip("\r\n")
            out[index] = lines[index][len(body):]  # the line's end kept
            index += 1
    return "".join(out)


def _same_record(text: str, msg: str) -> bool:
    """``msg`` is the message of the record whose traceback starts on the next line of ``text``: that line
    under the same prefix or bare, the message logged at ERROR (or with no level shown)."""
    raws = [raw.rstrip() for raw in text.splitlines()]
    for raw, below in zip(raws, raws[1:]):
        if raw.endswith(msg) and below.endswith(_TRACEBACK):
            prefix, under = raw[:len(raw) - len(msg)], below[:len(below) - len(_TRACEBACK)]
            if (under == prefix or not under.strip()) and not _OTHER_LEVEL_RE.search(prefix):
                return True
    return False


def with_engine_messages(chains: list[Chain], lines: list[Line], text: str) -> list[Chain]:
    """V0's engine tracebacks cut before their exception line, given the exception its record's message says."""
    by_no = {line.no: line for line in lines}
    for chain in chains:
        first, outer = chain.raised[0], chain.outermost
        if outer.type or first.start is None or not first.frames:
            continue
        frame = first.frames[0]
        if not (_ENGINE_FILE.search(frame.file) and frame.func in _ENGINE_FUNCS):
            continue
        above = by_no.get(first.start.no - 1)
        said = above.msg.strip() if above else ""
        if not said or said.startswith(("File ", _TRACEBACK)) or not _same_record(text, said):
            continue
        rep = _REPR_RE.match(said)
        outer.type, outer.message = (rep["type"], rep["msg"]) if rep else ("Exception", said)
        outer.exc_lines = [above]
        chain.cut = False
    return chains


# (round 49) vLLM's worker reports a failure with ``logger.exception``: one record, the message and then the
# traceback under it (its RPC loop, "WorkerProc hit an exception.": v1/executor/multiproc_executor.py:987 (0.23.0),
# :1223 (0.34.0); its main, "WorkerProc failed.": :894 (0.23.0), :1097 (0.34.0)). A log whose last line is that
# message was cut before the traceback: a traceback cut at its header, read as any cut traceback is (a crash
# reported, not which), as SGLang's "Scheduler hit an exception: " cut there is (:mod:`.tracebacks`). (The engine
# core's "EngineCore failed to start." and "EngineCore encountered a fatal error.", and the worker's "WorkerProc
# failed to start.", are read wherever they are as the engine's death, `vllm_engine_dead`.)
_ANNOUNCED_RE = re.compile(r"(?:^|\] )WorkerProc (?:hit an exception|failed)\.\s*$")


# (round 69) and so is one that ends at that message and the traceback's header under it, the record's next line
# (logger.exception writes the traceback right under the message, the record's prefix on each line: the module
# docstring), nothing of the traceback after it (vllm-ascend's "Capturing ACL graphs" then this, 0.10.1.1's
# worker_busy_loop, multiproc_executor.py:596)
def _said(text: str) -> list[str]:
    """The lines of ``text`` that say something, right-stripped."""
    return [raw.rstrip() for raw in text.splitlines() if raw.strip()]


def _same_prefix(text: str, message: str, header: str) -> bool:
    """Whether ``text`` ends with ``message`` then ``header`` on its last two lines, under the same prefix."""
    raws = _said(text)
    if len(raws) < 2:
        return False
    above, below = raws[-2], raws[-1]
    return above.endswith(message) and below.endswith(header) and above[:-len(message)] == below[:-len(header)]


# (round 53) So is V0's engine process logging what ended it: run_mp_engine's ``logger.exception(e)``, the exception's
# str as the record's message and its traceback under it, then ``raise e`` (engine/multiprocessing/engine.py:365-368
# (0.6.4.post1); the call at :389 (0.7.2), :400 (0.7.3), :448 (0.8.0, 0.8.5.post1), :458 (0.9.2), :456 (0.10.0)). A
# log whose last record is that one, at ERROR with no traceback line under it, was cut before the traceback
_ENGINE_RECORD_RE = re.compile(rf"\bERROR {VLLM_TIME} \[?engine\.py:(?:366|389|400|448|456|458)\] ?")


def _engine_record(lines: list[Line], text: str) -> Line | None:
    """The first line of the log's last record where that record is run_mp_engine's (above), else None."""
    raws = _said(text)
    stamp = _ENGINE_RECORD_RE.search(raws[-1]) if raws else None
    if stamp is None:
        return None
    prefix, at = raws[-1][:stamp.end()], len(raws) - 1
    while at > 0 and raws[at - 1].startswith(prefix):
        at -= 1
    said = [raw[len(prefix):].strip() for raw in raws[at:]]
    if not said[0] or any(msg.startswith((_TRACEBACK, "File ")) for msg in said):
        return None
    return next((line for line in reversed(lines) if line.msg.strip() == said[0]), None)


def with_announced_traceback(chains: list[Chain], lines: list[Line], text: str = "") -> list[Chain]:
    """``chains`` and, where the log's last line is vLLM's announcement of a logged exception (above) that no
    chain holds, logged at ERROR or with no level shown, a cut chain that starts at it; or where its last record
    is the engine process's (above), a cut chain that starts at the record's message."""
    said = [line for line in lines if line.msg.strip()]
    last = said[-1] if said else None
    if len(said) > 1 and last.msg.strip() == _TRACEBACK:  # (round 69) cut right under its header: the same record
        last = said[-2] if _same_prefix(text, said[-2].msg, _TRACEBACK) else last
    start = _engine_record(lines, text)
    if start is None and (last is None or last.record or not _ANNOUNCED_RE.search(last.msg)):  # (record: stamped
        return chains  # INFO, DEBUG, WARNING)
    start = start or last
    if any(start in chain.lines for chain in chains):
        return chains
    return [*chains, Chain([Raised(header=start.msg.strip(), start=start)], cut=True)]


# (round 70) every record logging_utils/dump_input.py writes is an ERROR inside _dump_engine_exception (:69, :76, :79,
# :81 (0.10.1.1); :69-:85 (0.9.1)), which only dump_engine_exception calls, and that only where the model's step
# raised, before the exception is raised on (v1/engine/core.py:214 execute_model (0.9.1), :272
# execute_model_with_error_logging (0.10.1.1), :628 log_error_detail (0.34.0)): the engine core's busy loop dies of it
_DUMP_STAMP_RE = re.compile(rf"\bERROR {VLLM_TIME} \[?dump_input\.py:\d+\](?: |$)")


def dumped_step(text: str) -> bool:
    """Whether a line of ``text`` carries the ERROR stamp of vLLM's dump of a failed step (above)."""
    return "dump_input.py:" in text and any(_DUMP_STAMP_RE.search(raw) for raw in text.splitlines())


# the stamp of a record the OpenAI chat or completion handler logs at ERROR, at the end of a line's prefix
_HANDLER_STAMP_RE = re.compile(rf"\bERROR {VLLM_TIME} \[?serving_(?:chat|completion)\.py:\d+\] ?$")


def with_handler_records(chains: list[Chain], text: str, signature) -> list[Chain]:
    """The chains whose every line ``text`` shows under the chat or completion handler's ERROR stamp, marked
    handled by ``signature`` (one request's error)."""
    stamped = []
    for raw in text.splitlines():
        if "serving_" in raw and (at := re.search(r"serving_(?:chat|completion)\.py:\d+\] ?", raw)):
            if _HANDLER_STAMP_RE.search(raw[:at.end()]):
                stamped.append(raw[at.end():].rstrip())
    if not stamped:
        return chains
    for chain in chains:
        if _shown_under(chain, stamped):
            chain.handled = signature
    return chains


def with_first_code_line(chains: list[Chain], lines: list[Line]) -> list[Chain]:
    """(round 76) A paste that starts on its traceback's last code line (the frame line above it cut: a reporter
    copying the last lines): the exception line right under it is that traceback's, the code line part of its
    chain (the call that raised: a caller building EngineArgs, installs.py); a bare exception type there, then
    a chain's separator and the next traceback, is that chain's inner exception (the shm queue's bare
    TimeoutError under the executor's RPC, engine.py QUEUE_TIMEOUT)."""
    said = [line for line in lines if line.msg.strip()]
    if len(said) < 2 or not said[0].msg.startswith((" ", "\t")):
        return chains
    code, raised_at = said[0], said[1]
    for chain in chains:
        raised = chain.raised[0]
        if chain.orphan and raised.start is None and raised.exc_lines and raised.exc_lines[0].no == raised_at.no:
            raised.start = code
            return chains
    if (_BARE_TYPE_RE.match(raised_at.msg) and len(said) > 3 and _SEPARATOR_RE.match(said[2].msg) and chains
            and chains[0].first_no == said[3].no):
        chains[0].raised.insert(0, Raised(header="", type=raised_at.msg.strip(), start=code, exc_lines=[raised_at]))
    return chains


def _shown_under(chain: Chain, bodies: list[str]) -> bool:
    """Every line of ``chain`` that says something is the end of one of ``bodies`` (what a record's stamp had
    after it on a line of the log)."""
    said = [line.msg.rstrip() for line in chain.lines if line.msg.strip()]
    return bool(said) and all(any(body.endswith(msg) for body in bodies) for msg in said)


# (round 28) docker compose writes each line of each service's output under "NAME  | " (the name padded to
# the longest: docker/compose-cli cmd/formatter/logs.go, logConsumer.Log and Presenter.setPrefix "%-Ns |"),
# the services' lines interleaved as they came. Where several services are there and some carry vLLM's
# stamp, the others are other programs (a web backend's traceback is none of vLLM's): their lines are dropped
_COMPOSE_RE = re.compile(r"^([a-z0-9][\w.-]*)\s+\| ")
_ANY_STAMP_RE = re.compile(rf"\b{VLLM_STAMP}")


def only_vllm_services(text: str) -> str:
    """``text`` with the lines of the docker compose services that show no vLLM stamp blanked (their
    numbers kept), where another service does (one service, or none with a stamp: ``text`` as it is)."""
    raws = text.splitlines()
    sources = [(said[1], said.end()) if (said := _COMPOSE_RE.match(raw)) else (None, 0) for raw in raws]
    return _without_unstamped(raws, sources) or text


def _without_unstamped(raws: list[str], sources: list[tuple[str | None, int]]) -> str | None:
    """The lines joined, those of the sources that show no vLLM stamp blanked, where several sources are
    there and some but not all show one; else None. ``sources``: each line's source (None: a line of no
    source, kept) and where its own text starts (a stamp is looked for from there)."""
    stamped: dict[str, bool] = {}
    for raw, (name, start) in zip(raws, sources):
        if name is not None:
            stamped[name] = stamped.get(name, False) or bool(_ANY_STAMP_RE.search(raw, start))
    if len(stamped) < 2 or all(stamped.values()) or not any(stamped.values()):
        return None
    return "\n".join("" if name is not None and not stamped[name] else raw
                     for raw, (name, _) in zip(raws, sources)) + "\n"


# (round 39) `tail` of several files (a workflow's `tail -f logs/*.out`) writes "==> NAME <==" before each
# file's part, again whenever its output turns to another file (GNU coreutils src/tail.c write_header:
# printf ("%s==> %s <==\n", ...), with more than one file or -v). Where some files' parts carry vLLM's stamp,
# the others are other programs (a proxy's own uvicorn answering 500 is none of vLLM's): their lines are
# dropped, as docker compose's other services' are
_TAIL_HEADER_RE = re.compile(r"^==> (.+) <==\s*$")


def only_vllm_files(text: str) -> str:
    """``text`` with the parts of a multi-file ``tail`` whose file shows no vLLM stamp in any of its parts
    blanked (their numbers kept), where another file's does (no headers, or no file with a stamp: ``text``
    as it is). Lines before the first header are kept."""
    if "==> " not in text:
        return text
    raws, sources, name = text.splitlines(), [], None
    for raw in raws:  # a header line is its file's, with no text of its own
        header = _TAIL_HEADER_RE.match(raw)
        name = header[1] if header else name
        sources.append((name, len(raw) if header else 0))
    return _without_unstamped(raws, sources) or text


# (round 58) the engine core's record of a failed utility call (collective_rpc, a weight update, a cache reset):
# ``logger.exception("Invocation of %s method failed", ...)``, then the caller is answered with the failure and
# the engine's loop goes on (v1/engine/core.py:459-462 (0.8.5.post1), :2055-2056 (0.34.0)); the record's
# traceback, or what a paste kept of it, repeats the record's stamp (its level, time and "[core.py:N]")
_UTILITY_RECORD_RE = re.compile(rf"\b(ERROR {VLLM_TIME} {VLLM_FILEINFO}) ?Invocation of \w+ method failed")


def _utility_bodies(text: str) -> list[str]:
    """What the lines under the stamp of an "Invocation of ... method failed" record say, after that record."""
    bodies, stamp = [], None
    for raw in text.splitlines():
        if said := _UTILITY_RECORD_RE.search(raw):
            stamp = said[1]
        elif stamp and (at := raw.find(stamp)) >= 0:
            bodies.append(raw[at + len(stamp):].rstrip())
    return bodies


# (round 93) but not a CUDA fault the call met: CUDA's kernel faults are sticky, "This leaves the process in an
# inconsistent state and any further CUDA work will return the same error. To continue using CUDA, the process must
# be terminated and relaunched" (CUDA Runtime API, cudaErrorIllegalAddress (700), cudaErrorAssert (710),
# cudaErrorIllegalInstruction (715), cudaErrorMisalignedAddress (716), cudaErrorLaunchFailure (719)), and torch
# reports one at a later call (its "CUDA kernel errors might be asynchronously reported" hint): the answered call
# leaves an engine whose next step raises the same, to run_engine_core's fatal handler (v1/engine/core.py:562-568,
# :502 (0.9.0)). The fault is the engine's, cuda_illegal_access, not the caller's error
# (vllm_crashes/requests.py STICKY_CUDA_FAULT)
_STICKY_RE = re.compile(STICKY_CUDA_FAULT)


def with_utility_records(chains: list[Chain], text: str, signature) -> list[Chain]:
    """The chains whose every line ``text`` shows under a failed utility call's record stamp (above), marked
    handled by ``signature`` (the caller's error: the engine answered it and kept serving), but for a sticky CUDA
    fault (above: the engine's own death)."""
    if "method failed" not in text or not (bodies := _utility_bodies(text)):
        return chains
    for chain in chains:
        if chain.handled is None and _shown_under(chain, bodies) and not _STICKY_RE.search(chain.text):
            chain.handled = signature
    return chains
