"""Which error in a log is the crash: candidates, what the server carried on past, the root cause.

Contract: :func:`root_cause` takes a log's lines and exception chains and
returns the :class:`Candidate` that explains the crash, or None. Candidates
are every exception chain (:mod:`.tracebacks`), every line a signature
recognises outside a chain (argparse's usage error, uvicorn's bind error, a
C++ ``what():``, a kernel's device assert, an error SGLang logs instead of
raising) and every generic echo line ("Received sigquit from a child
process", either spelling). The rules:

1. Within one chain the outermost exception decides; a capture failure that
   wraps a CUDA OOM is a capture failure. Only when the outermost matches no
   signature are the inner ones asked, outermost first.
2. Generic echoes (:data:`~ddlab.diagnosis.signatures.WRAPPERS`: "Rank 0
   scheduler is dead", the launcher's ``EOFError``, "Initialization failed.
   warmup error") never win over anything else; an echo a signature explains
   (a warmup request that timed out) wins over the bare ones.
3. Among recognised errors the highest signature priority wins (specific over
   generic; NCCL and health-check failures are often consequences); on a tie,
   the earliest in the log (the first rank to fail started it).
4. With nothing recognised, the earliest complete exception is the cause (kind
   ``unknown``), then a traceback the log cuts before its exception line, then
   a generic echo. A log with no candidate at all but a c10 backtrace's frame
   (``frame #N: ...``, only a C++ exception's message carries one) has that
   frame as its cause: a paste cut to the middle of the exception.

"Carried on past": a recognised error is survived when "ready to roll" or a
batch line of the same rank (or of no rank) follows it, or a line its
signature's ``cleared_by`` names; an unrecognised one also when a later startup
phase line follows (a warning printed with a traceback). Progress bars are not
a startup going on: any rank prints them, in any order. A ``fatal`` signature
(uvicorn's bind error, a slot pool that ran out, a fatal signal) is never
survived. A line a C++ logger wrote at INFO or WARNING severity is no
candidate (torch's exit warning about ``destroy_process_group``), nor one that
Python's warnings module wrote (round 28: an idle check warning of a leak). Of
a signature's ``lines``, the first listed wins a tie (argparse's ``error:`` line
over its ``usage:`` block). A native crash after an unexplained exception is
its teardown: the exception is the cause; so is a
/health 503 beside one (round 98, :mod:`.consequences`).

After the tokenizer manager's SIGTERM notice (an operator asked the server to stop), the generic
echoes of its children ending ("crashed with exit code -15", SIGQUIT) are that stop, no candidate.

A warning a signature reads (``explains``: torch's store socket timing out) is set apart the
same way: never the crash alone, it explains a cut or unexplained traceback the same rank prints
right after it.

Request errors (signatures marked ``request``, and any traceback through the
HTTP server's request handlers) are set apart: the crash is picked among the
others; when there is none, the most specific request error is returned
(``request=True``: the server kept serving); when the crash is a cut or
unexplained traceback (or a generic echo) that the same rank printed right
after a request error of a kind of its own (a PD transfer), that error is the
crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ddlab.crashes.kinds.requests import ANSWERED_4XX, ASGI_ERROR, NOT_A_REQUEST, REQUEST_FRAMES
from ddlab.diagnosis.consequences import yielded
from ddlab.diagnosis.logtext import Line, is_progress_bar, phase_marker
from ddlab.diagnosis.signatures import SGLANG, Registry, Signature, regex
from ddlab.diagnosis.stops import SGLANG_SIGTERM_NOTICE, VLLM_SHUTDOWN_TRIGGERED, exited_on_stop
from ddlab.diagnosis.tracebacks import ACCESS_RE, Chain, Raised, client_script, router_launch
from ddlab.diagnosis.unittest_reports import before_verdict

__all__ = ["Candidate", "candidates", "root_cause", "clean_cause", "stop_asked", "PROGRESS_RE"]

PROGRESS_RE = re.compile(r"The server is fired up and ready to roll|Decode batch\b|Prefill batch\b")
_LEVEL_RE = re.compile(r"^(?:ERROR|CRITICAL|FATAL|WARNING):\s*")
_NATIVE_RE = re.compile(r"^Fatal Python error: ")  # CPython's own fatal errors, not exceptions
_QUIET_LEVELS = ("I", "W")  # a C++ log line at INFO or WARNING severity decides nothing
_NEAR = 6  # lines between a request's error and the traceback of the death it explains
# a frame of c10's backtrace (torch c10/util/Backtrace.cpp: "frame #N: SYMBOL + OFFSET (ADDR in
# LIB)"), which only a C++ exception's message carries (c10::Error::what()): where the log shows
# nothing else, a paste cut to the middle of that message, an error the process died of
_C10_FRAME_RE = re.compile(r"^frame #\d+: .+ \(0x[0-9a-f]+ in \S+\)\s*$")
# (vLLM round 24) a C++ logger's warning that prints a caught c10::Error's what() carries its backtrace
# ("Exception raised from X at F:N (most recent call first):", then "frame #N: ..."): torch's TCPStore
# client logs C10D_WARNING("sendBytes failed on {}: {}", socket_.repr(), e.what()) (pytorch/pytorch
# torch/csrc/distributed/c10d/TCPStore.cpp:106, TCPClient::sendRaw): those frames are the warning's
_C10_RAISED_RE = re.compile(r"^Exception raised from \S+ at \S+ \(most recent call first\):\s*$")
_CPP_RE = re.compile(r"^\s*(?:what\(\):\s*|terminate called after throwing an instance of \S+\s*)")
# (round 30) the tokenizer manager's SIGTERM handler: an operator asked the server to stop (0.4.10.post2
# managers/tokenizer_manager.py:1988, 0.5.23 managers/tokenizer_manager.py:4068); the children it then
# ends report "crashed with exit code -15" (utils/watchdog.py:217-219) and SIGQUIT: a stop, no crash
# (vLLM round 31) or vLLM's API server's SIGTERM handler (0.34.0 entrypoints/launchers/launcher.py:256, :289)
SIGTERM_NOTICE_RE = re.compile(f"{SGLANG_SIGTERM_NOTICE}|{VLLM_SHUTDOWN_TRIGGERED}")


def stop_asked(lines: list[Line]) -> int | None:
    """The index in ``lines`` of the SIGTERM notice that ends the run (none after which a startup phase
    line follows: a run started again after it), or None."""
    stop = None
    for i, line in enumerate(lines):
        if SIGTERM_NOTICE_RE.search(line.msg):
            stop = i
        elif stop is not None and phase_marker(line.msg):
            stop = None
    return stop


def _warned(lines: list[Line], at: int) -> bool:
    """The c10 frame at ``lines[at]`` belongs to a backtrace that a C++ INFO or WARNING line prints."""
    while at > 0 and (_C10_FRAME_RE.search(lines[at].msg) or _C10_RAISED_RE.search(lines[at].msg)):
        at -= 1
    return lines[at].level in _QUIET_LEVELS and not _C10_FRAME_RE.search(lines[at].msg)


@dataclass
class Candidate:
    """One error the log shows; the root cause is picked among these."""

    first_no: int
    last_no: int
    cause: str
    signature: Signature | None = None
    wrapper: bool = False
    chain: Chain | None = None
    raised: Raised | None = None
    lines: list[Line] = field(default_factory=list)
    cut: bool = False
    rank: str | None = None
    request: bool = False  # one request's error: the server kept serving unless it died of it
    order: int = 0  # which of its signature's ``lines`` matched: the first is the most telling
    warning: bool = False  # a warning line (``explains``): only explains a crash right after it
    thread: bool = False  # a helper thread died of it (threading.excepthook): the process went on

    def where(self, package: str) -> str | None:
        """``package/x.py:N (func)``: the innermost frame of the failing exception in
        ``package`` (``sglang``, ``vllm``; any frame if none is), its path from the package."""
        frames = self.raised.frames if self.raised is not None else []
        ours = [f for f in frames if package in f.file] or frames
        if not ours:
            return None
        frame = ours[-1]
        at = frame.file.rfind(f"{package}/")
        path = frame.file[at:] if at >= 0 else frame.file
        return f"{path}:{frame.line} ({frame.func})" if frame.func else f"{path}:{frame.line}"


def clean_cause(text: str) -> str:
    """The message of a line: no level prefix, no C++ ``what():``."""
    return _CPP_RE.sub("", _LEVEL_RE.sub("", text.strip())).strip()


def _best(type_name: str, text: str, chain_text: str, request: bool = False,
          registry: Registry = SGLANG) -> Signature | None:
    # in a request's handler only what counts there (Signature.counts_in_a_handler), or (vLLM round 57) a
    # crash's error via a stream all requests share
    hits = [s for s in registry.signatures if s.matches_exception(type_name, text, chain_text)
            and (not request or s.counts_in_a_handler or registry.shared(s, chain_text))]
    dead = [s for s in hits if request and s.echo and s.fatal and not s.request]
    return max(dead or hits, key=lambda s: s.priority, default=None)


def _is_wrapper(chain: Chain, registry: Registry = SGLANG) -> bool:
    texts = (chain.header, chain.outermost.text)
    return (any(regex(w).search(t) for w in registry.wrappers for t in texts)
            or bool(registry.wrapper_frames and regex(registry.wrapper_frames, re.M).search(chain.text)))


def _rank(lines: list[Line]) -> str | None:
    return next((ln.rank for ln in lines if ln.stamped), None)


# (round 16) A traceback whose outermost frames are threading.py's _bootstrap_inner and run is one
# threading.excepthook printed ("Exception in thread NAME (TARGET):" above it; CPython 3.10
# Lib/threading.py:1016 _bootstrap_inner calls self.run() and hands what escapes to the excepthook): the
# exception left a thread's target uncaught and ended that thread only; the process goes on. SGLang's
# loops whose death must stop the server catch their exception and signal the parent themselves, so their
# tracebacks start at their own frame: the scheduler (0.4.10.post2 managers/scheduler.py:2574 "Scheduler
# hit an exception", then SIGQUIT), the overlap worker thread (managers/tp_worker_overlap_thread.py:139-145
# "TpModelWorkerClient hit an exception", SIGQUIT), the watchdog (scheduler.py:2140). A helper thread
# (HiCache's prefetch and backup threads, 0.4.10.post2 managers/cache_controller.py:329, :332; 0.5.23
# :457, :466, daemon threads nothing restarts) dies alone. Not the overlap worker's forward_thread_func
# of releases before it caught (sgl-project/sglang PR 1738): the scheduler waits on it for ever
_THREAD_TARGETS_NOT_HELPERS = r"forward_thread_func_?"


def _helper_thread_died(chain: Chain) -> bool:
    """The chain is a helper thread's uncaught exception, printed by threading.excepthook."""
    frames = chain.outermost.frames
    if len(frames) < 2 or frames[0].func != "_bootstrap_inner" or not frames[0].file.endswith("threading.py"):
        return False
    target = next((f for f in frames if not f.file.endswith("threading.py")), None)
    return target is not None and not re.fullmatch(_THREAD_TARGETS_NOT_HELPERS, target.func)


def _chain_candidate(chain: Chain, registry: Registry = SGLANG) -> Candidate:
    chain_text, rank = chain.text, _rank(chain.lines)
    span = (chain.first_no, chain.last_no)
    # raised in an HTTP request handler: one request's error, whatever it raised
    request = bool(regex(REQUEST_FRAMES, re.M).search(chain_text)
                   and not regex(NOT_A_REQUEST, re.M).search(chain_text)) or chain.handled is not None
    for raised in reversed(chain.raised):  # outermost first
        if raised.type and (signature := _best(raised.type, raised.text, chain_text, request, registry)):
            return Candidate(*span, raised.first_line, signature, wrapper=signature.echo,
                             chain=chain, raised=raised, rank=rank, request=signature.request)
    outer = chain.outermost
    if not outer.type:
        where = chain.header or "frames with no exception line"
        cause = f"the log ends inside a traceback ({where}): its exception line is missing"
        known = [s for s in registry.signatures if s.matches_context(chain_text)  # (vLLM round 58) as in _best
                 and (chain.handled is None or s.counts_in_a_handler)]
        signature = max(known, key=lambda s: s.priority, default=chain.handled)
        return Candidate(*span, cause, signature, chain=chain, raised=outer, cut=signature is None,
                         wrapper=bool(signature and signature.echo), rank=rank,
                         request=bool(signature and signature.request))
    if request:
        return Candidate(*span, outer.first_line, chain.handled or ASGI_ERROR, chain=chain, raised=outer,
                         rank=rank, request=True)
    return Candidate(*span, outer.first_line, None, wrapper=_is_wrapper(chain, registry),
                     chain=chain, raised=outer, rank=rank, thread=_helper_thread_died(chain))


# (round 28) a line Python's warnings module wrote ("path/x.py:N: UserWarning: msg", CPython Lib/warnings.py
# _formatwarnmsg_impl) is a warning: the process goes on past it (SGLang 0.4.5's idle check_memory warns of a
# pool leak and raises only in CI: managers/scheduler.py:1118-1120, crash_on_warnings, utils.py)
_WARNINGS_LINE_RE = re.compile(r"^\s*(?:\S*[/\\])?[\w.-]+\.py:\d+: \w*Warning: ")


def _line_candidate(line: Line, registry: Registry = SGLANG) -> Candidate | None:
    hits = registry.line_hits(line.msg, line.time is not None)
    warned = "Warning: " in line.msg and _WARNINGS_LINE_RE.search(line.msg)
    # (vLLM round 53) a line an ``explains`` signature reads is that warning, whatever else in it matches;
    if line.level in _QUIET_LEVELS or warned or any(s.explains for s in hits):  # torch's exit warning, glog I
        if not (hits := [s for s in hits if s.explains]):  # a warning that may explain what follows it
            return None
    cause = clean_cause(line.msg)
    if hits:
        best = max(hits, key=lambda s: s.priority)
        order = next(i for i, p in enumerate(best.lines) if regex(p, re.I).search(line.msg))
        return Candidate(line.no, line.no, cause, best, wrapper=best.echo, lines=[line], rank=line.rank,
                         request=best.request, order=order, warning=best.explains)
    if any(regex(p, re.I).search(line.msg) for p in registry.wrapper_lines):
        return Candidate(line.no, line.no, cause, None, wrapper=True, lines=[line], rank=line.rank)
    if _NATIVE_RE.search(line.msg):
        return Candidate(line.no, line.no, cause, None, lines=[line], rank=line.rank)
    return None


def _survived(candidate: Candidate, progress: list[tuple[int, str | None]], advanced: int,
              lines: list[Line]) -> bool:
    if (candidate.signature and candidate.signature.fatal) or router_launch(candidate.chain):
        return False
    if candidate.signature and candidate.signature.carried_on(lines, candidate.first_no, candidate.last_no):
        return True
    later = [rank for no, rank in progress if no > candidate.last_no]
    same = [rank for rank in later if rank is None or candidate.rank is None or rank == candidate.rank]
    if same:
        return True
    return candidate.signature is None and advanced > candidate.last_no


# (round 20) Python's warnings module writes "path/file.py:N: SomeWarning: ..." and quotes the source line
# under it (CPython Lib/warnings.py _formatwarnmsg_impl): a warning raised while a logging call runs (a
# coroutine collected unawaited as logger.exception formats its traceback) quotes that call
_WARNING_RE = re.compile(r"[\w.-]+\.py:\d+: \w*Warning: ")


def _caught_ends(lines: list[Line], registry: Registry) -> set[int]:
    """The numbers of the lines that write a record ``registry.caught`` names: the record itself (its
    traceback follows it), or the logging call a warnings-module line quotes (the traceback ends above)."""
    if not registry.caught:  # SGLang's registry names none: no scan of every line
        return set()

    def named(line: Line) -> bool:
        return any(regex(p, re.I).search(line.msg) for p in registry.caught)
    return ({line.no for line, quoted in zip(lines, lines[1:]) if _WARNING_RE.search(line.text) and named(quoted)}
            | {line.no for line in lines if named(line) and not line.msg.lstrip().startswith("logger.")})


def _caught(chain: Chain, ends: set[int], registry: Registry) -> bool:
    """The traceback is one the server logged under a record it catches and goes on past: that record
    is right above it, or the logging call is quoted right below its exception (the warning's lines may
    be read as the traceback's tail)."""
    return (any(regex(p, re.I).search(chain.header) for p in registry.caught)
            or any(chain.first_no - 1 <= no <= chain.last_no + 1 for no in ends))


def candidates(lines: list[Line], chains: list[Chain], registry: Registry = SGLANG) -> list[Candidate]:
    """Every error the server did not carry on past (see the module docstring); ``registry``:
    the server family's signatures, echoes and progress lines (SGLang's by default)."""
    # a pasted line split in two (a glued writer's text) keeps its number: the raw text tells them apart
    covered = {(line.no, line.text) for chain in chains for line in chain.lines}
    ends = _caught_ends(lines, registry)
    found = [_chain_candidate(chain, registry) for chain in chains  # not Ctrl-C (a stop), not a client's
             if chain.outermost.type != "KeyboardInterrupt" and not client_script(chain, lines)
             and not _caught(chain, ends, registry)]
    found += [c for line in lines if (line.no, line.text) not in covered
              and (c := _line_candidate(line, registry))]
    found = before_verdict(found, lines)  # (round 100) a CI wrapper's lines after unittest's verdict are no candidate
    if not found and (frame := next((ln for i, ln in enumerate(lines) if _C10_FRAME_RE.search(ln.msg)
                                     and not _warned(lines, i)), None)):
        found = [Candidate(frame.no, frame.no, clean_cause(frame.msg), None, lines=[frame], rank=frame.rank)]
    progress_re = registry.progress or PROGRESS_RE
    marker = registry.phase_marker or phase_marker
    progress = [(ln.no, ln.rank) for ln in lines if progress_re.search(ln.msg)]
    advanced = max((ln.no for ln in lines if marker(ln.msg) and not is_progress_bar(ln.msg)),
                   default=0)
    _answered(found, lines)
    if (stop := stop_asked(lines)) is not None:  # the echoes of a stop the operator asked for (a SIGTERM)
        found = [c for c in found if not (c.first_no > lines[stop].no and (  # (round 117) and its own exit
            c.signature.echo if c.signature else c.wrapper or exited_on_stop(c.chain)))]
    # a request's error does not stop the server: the server carrying on is what makes it one
    # (vLLM round 31) progress after a dead engine's echo (v1/metrics/loggers.py:169-174) carries nothing past
    dead = [c.first_no for c in found if c.signature and c.signature.fatal]
    return [c for c in found if c.request or not _survived(
        c, [p for p in progress if not any(c.last_no < no < p[0] for no in dead)], advanced, lines)]


# (round 19) uvicorn's access line of a client's request the server answered with a 4xx status: the
# request_http_4xx signature's own line
_ANSWERED_4XX_RE = re.compile(ANSWERED_4XX)


# a traceback that starts in asyncio's runner left the server's event loop (its teardown, printed first as the
# context of what the request raised after it: round 14's h14009), or one of the server's start-up: no request's
_LEFT_THE_LOOP = rf'asyncio[/\\]runners\.py", line \d+, in run\s*$|{NOT_A_REQUEST}'


def _answered(found: list[Candidate], lines: list[Line]) -> None:
    """An exception nothing recognises whose very next line is uvicorn's access line answering a
    client's request with a 4xx status (the same process) is that request's error: the handler caught
    it, logged it with its traceback and answered the client (vLLM's OpenAI handlers: logger.exception,
    then create_error_response, 400 unless told: entrypoints/openai/serving_chat.py:170-171,
    serving_engine.py:168-172 (0.6.4.post1); serve/exception_handling/error_response.py:14-17
    (0.34.0)), and the server serves on. It takes the access line's request signature. So is a
    traceback (cut or not) whose header line is right under a request handler's own error line (the
    message of its logger.exception record: "Error in preprocessing prompt inputs", serving_chat.py:170
    (0.6.4.post1)): it takes that line's signature."""
    by_no = {ln.no: ln for ln in lines}
    answers = {c.first_no: c for c in found if c.request and c.signature and c.lines
               and _ANSWERED_4XX_RE.search(c.lines[0].msg)}
    # a request handler's logger.exception(message) record: its message line (a request signature's
    # line, "Error in preprocessing prompt inputs") and right under it the traceback it logs
    headers = {c.first_no: c for c in found if c.request and c.signature and c.lines
               and c.signature.kind == "request_error"}
    for c in found:
        if c.request or c.signature is not None or c.wrapper or c.chain is None:
            continue
        # (round 65) a bare exception line under a record's message is its exc_info (nixl/base_worker.py:1455-1461)
        header = headers.get(c.first_no - 1) if not regex(_LEFT_THE_LOOP, re.M).search(c.chain.text) else None
        if header and c.chain.raised[0].start is None and ACCESS_RE.search(header.lines[0].msg):
            header = None
        answer = None if c.cut else answers.get(c.last_no + 1)
        told = header or answer
        line = by_no.get(told.first_no) if told else None
        if line is not None and (line.rank is None or c.rank is None or line.rank == c.rank):
            c.signature, c.request = told.signature, True


def _pick(found: list[Candidate]) -> Candidate | None:
    """The crash among the candidates that are not one request's error (rules 1-4)."""
    known = [c for c in found if c.signature and not c.wrapper]
    if known:
        best = max(known, key=lambda c: (c.signature.priority, -c.order, -c.first_no))
        return yielded(best, found)  # a teardown or a /health 503 after an unexplained exception (.consequences)
    for tier in ([c for c in found if not c.wrapper and not c.cut], [c for c in found if c.cut]):
        if tier:
            return min(tier, key=lambda c: c.first_no)
    echoes = [c for c in found if c.signature]
    if echoes:
        return max(echoes, key=lambda c: (c.signature.priority, -c.first_no))
    return min(found, key=lambda c: c.first_no, default=None)


def _explained(crash: Candidate, requests: list[Candidate]) -> Candidate | None:
    """The request error the process died of: logged by the same rank just before a crash
    that nothing else explains (a cut traceback, an unknown exception, a generic echo)."""
    if crash.signature is not None and not crash.wrapper:
        return None
    before = [r for r in requests if 0 <= crash.first_no - r.last_no <= _NEAR
              and (r.rank is None or crash.rank is None or r.rank == crash.rank)
              and r.signature.kind != "request_error"]
    return max(before, key=lambda r: (r.last_no, r.signature.priority), default=None)


def root_cause(lines: list[Line], chains: list[Chain], registry: Registry = SGLANG) -> Candidate | None:
    """The candidate that explains the crash (rules in the module docstring), or None. A
    request error is returned (``request=True``) only when nothing crashed, or when the crash
    is explained by it (the candidate then has ``request=False``). ``registry`` is the server
    family's (:data:`~ddlab.diagnosis.signatures.SGLANG` unless given)."""
    found = candidates(lines, chains, registry)
    requests = [c for c in found if c.request]
    warnings = [c for c in found if c.warning and not c.request]
    crash = _pick([c for c in found if not c.request and not c.warning and not c.thread])
    if crash is not None:
        cause = _explained(crash, requests + warnings)
        if cause is None:
            return crash
        cause.request = cause.warning = False
        return cause
    threads = [c for c in found if c.thread]  # only a helper thread died: the server went on
    return max(requests, key=lambda c: (c.signature.priority, -c.first_no),
               default=min(threads, key=lambda c: c.first_no, default=None))
