"""Python tracebacks in a server log, grouped into exception chains.

Contract: :func:`find_chains` reads :class:`ddlab.diagnosis.logtext.Line` records and
returns every :class:`Chain` it finds, in log order. A chain is what one
``traceback.print_exc`` prints: one or more :class:`Raised` blocks joined by
"During handling of the above exception, another exception occurred:" or "The
above exception was the direct cause of the following exception:"; the last
block printed is the outermost exception. An exception line with no traceback
before it (a log cut short, or an ``logger.error(f"...{e}")`` echo of one) is
an *orphan*: a one-block chain with no frames. Frames with no
``Traceback (most recent call last):`` above them (a paste that starts
mid-traceback) open a block all the same, and ``File`` lines whose indentation
was stripped still count. A traceback that never reaches its exception line
(the log or the paste ends first) is kept as a *cut* chain: it says a crash
was being reported, not which; unless the paste ends inside the exception
line's type name and only one of torch's own types fits it (``torch.O``).

Why a state machine and not one regex: SGLang prints tracebacks from several processes (TP ranks, scheduler,
tokenizer manager, launcher) into one stream. A traceback's own lines are unstamped; lines stamped by
SGLang's logger, or written by another journal identifier (systemd), that arrive while a traceback's frames
are open are treated as interleaved and skipped, not as the end of the traceback. A message continues onto
unstamped lines ("Possible solutions: ..." after a capture failure, torch's CUDA error hints) until a blank
line, a stamped line or another record starts (a line that carried a C++ log prefix, torch's ``[W207 ...]``
warning included, is another record); or a test runner's report, :mod:`.unittest_reports`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ddlab.crashes.frames import own_script, ray_driver, router_frames
from ddlab.diagnosis.cut_names import HEAD_CUT as _HEAD_CUT, cut_type, ipython_type, unshifted
from ddlab.diagnosis.logtext import READY_MARK, Line
from ddlab.diagnosis.unittest_reports import UNITTEST_REPORT, failed_check

__all__ = ["Frame", "Raised", "Chain", "find_chains", "client_script", "router_launch", "cut_type", "ACCESS_RE"]


def _cut_anywhere(text: str) -> str:
    """A regex for ``text`` or any prefix of it (a paste cut inside it)."""
    return "".join(f"(?:{re.escape(ch)}" for ch in text) + ")?" * len(text)


# the header; at the end of a paste also cut inside ("... hit an exception: Traceback (most rec"),
# anywhere inside after SGLang's announcement of a traceback ("<Process> hit an exception:
# {traceback}", 0.4.10.post2 managers/scheduler.py:2574, 0.5.23 :6372 and the other processes')
_TRACEBACK_RE = re.compile(rf"(?:Traceback \(most rec{_cut_anywhere('ent call last):')}"
                           rf"|(?<=hit an exception: )"
                           rf"{_cut_anywhere('Traceback (most recent call last):')})\s*$")
_FRAME_RE = re.compile(rf'^\s*(?:File "|{_HEAD_CUT})(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
_CUT_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)$')  # a frame line the paste cut mid-path
# (vLLM round 64) a frame a reporter condensed to "path/to/file.py:N, in func", a whole line of its own
_SHORT_FRAME_RE = re.compile(r"^\s*(?P<file>(?:[\w.~-]*/)+[\w.-]+\.py):(?P<line>\d+), in (?P<func>\w+)\s*$")
_PY_FRAME_RE = re.compile(rf'^\s*(?:File "|{_HEAD_CUT})[^"]+", line \d+, in \S+')  # not faulthandler's "line N in f"
# (round 13) Ray re-raises a task's error as a class named after both, "RayTaskError(Cause)"
# (ray python/ray/exceptions.py, RayTaskError.as_instanceof_cause: "RayTaskError({})".format(cause));
# (vLLM round 16) a class a C++ binding registers under a name in lower camel case, printed with its
# module as every class outside builtins is (CPython 3.11.7 Lib/traceback.py:858-863, format_exception_only:
# "nixl._bindings.nixlBackendError", pybind11's py::register_exception in ai-dynamo/nixl 0.2.0
# src/bindings/python/nixl_bindings.cpp:161): only with its module and an exception's suffix
_EXC_RE = re.compile(r"^(?P<type>(?:(?:[A-Za-z_]\w*\.)*[A-Z]\w*|(?:[A-Za-z_]\w*\.)+[a-z]\w*(?:Error|Exception))"
                     r"(?:\([A-Z]\w*\))?)(?::(?:[ \t]+(?P<msg>.*))?)?$")
# the separator of two blocks; at the end of a paste also cut inside ("During handling of the
# above exception, another exceptio")
_CHAIN_RE = re.compile(
    rf"^\s*(?:During handling{_cut_anywhere(' of the above exception, another exception occurred:')}"
    rf"|The above exception{_cut_anywhere(' was the direct cause of the following exception:')})\s*$")
# another record: a shell's or the kernel's word on a process, argparse's usage, a logging record
# (Python's default "LEVEL:name:"; conda's "LEVEL name:func(N): ", as `conda run` reports that the command
# it ran failed: conda/conda 974c598 conda/common/io.py _FORMATTER, 018420c conda/cli/main_run.py execute's
# log.error), a unit's, a script's
_RECORD_START_RE = re.compile(
    r"^(?:Killed\b|Aborted\b|Segmentation fault\b|Fatal Python error|usage: "
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):\s|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) [\w.]+:\w+\(\d+\): "
    r"|\S+\.service: |\S+: line \d+: )")
_ORPHAN_SUFFIXES = ("Error", "Exception", "Failed", "Failure")
_PROGRESS_RE = re.compile(r"\d+%\s*\||Completed \| \d+/\d+")
_MAX_FOREIGN = 60
_ANSWERED_RE = re.compile(r'"(?:GET|POST) /\S* HTTP/[\d.]+" 2\d\d\b')  # uvicorn's access line, answered
_MAX_CONTINUATION = 40
_LINK_GAP = 6


@dataclass
class Frame:
    """``File "path", line N, in func`` and the code line under it."""

    file: str
    line: int
    func: str
    code: str = ""
    at: Line | None = None
    code_at: Line | None = None


@dataclass
class Raised:
    """One printed exception: its traceback header, frames and message."""

    header: str
    frames: list[Frame] = field(default_factory=list)
    type: str = ""
    message: str = ""
    start: Line | None = None
    exc_lines: list[Line] = field(default_factory=list)
    link: Line | None = None  # "During handling ..." / "The above exception ..." above it

    @property
    def text(self) -> str:
        """``Type: message`` with every continuation line."""
        return f"{self.type}: {self.message}" if self.message else self.type

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0] if self.text else ""


@dataclass
class Chain:
    """Exceptions printed together; ``raised[-1]`` is the outermost."""

    raised: list[Raised]
    orphan: bool = False
    cut: bool = False
    # (vLLM round 27) logged by a request handler that answered the request and went on (a family's
    # record reading says so: :func:`ddlab.diagnosis.vllm_records.with_handler_records`): the request
    # signature it takes
    handled: object = None

    @property
    def outermost(self) -> Raised:
        """The last block that reached its exception line (the last block when none did)."""
        return next((r for r in reversed(self.raised) if r.type), self.raised[-1])

    @property
    def header(self) -> str:
        return self.raised[0].header

    @property
    def lines(self) -> list[Line]:
        """Every log line that belongs to the chain, in order."""
        seen = []
        for raised in self.raised:
            seen += [raised.start] if raised.start else []
            for frame in raised.frames:
                seen += [ln for ln in (frame.at, frame.code_at) if ln]
            seen += raised.exc_lines
        return sorted(seen, key=lambda line: line.no)

    @property
    def frames(self) -> list[Frame]:
        """Every frame of every block, outermost block last."""
        return [frame for raised in self.raised for frame in raised.frames]

    @property
    def first_no(self) -> int:
        return min(line.no for line in self.lines)

    @property
    def last_no(self) -> int:
        return max(line.no for line in self.lines)

    @property
    def text(self) -> str:
        return "\n".join(line.msg for line in self.lines)


def client_script(chain: Chain, lines: list[Line]) -> bool:
    """(round 35) A script's own traceback (:func:`ddlab.crashes.frames.own_script`; round 100, a test's failed
    check, :func:`.unittest_reports.failed_check`) printed once the server served (its "ready to roll", or an
    answered 2xx): a client died of its own error, not the server. (round 57) Or Ray's driver's, an actor's."""
    ours = own_script(chain.frames) or failed_check(chain.raised)
    return ray_driver(chain.lines, lines) or bool(chain.outermost.type) and ours and any(
        READY_MARK.search(ln.msg) or _ANSWERED_RE.search(ln.msg) for ln in lines if ln.no < chain.first_no)


def router_launch(chain: Chain | None) -> bool:
    """(round 35) SGLang's router died in its launch (:func:`ddlab.crashes.frames.router_frames`): a process
    of its own, which the workers' progress lines do not carry past; its phase is launch."""
    return chain is not None and router_frames(chain.frames)

def _is_exception_line(msg: str, strict: bool) -> re.Match | None:
    match = _EXC_RE.match(msg)
    if not match:
        return None
    # (round 70) the class's own name: Ray's "RayTaskError(Cause)" ends in "Error" (crashes/signature.py)
    last = match["type"].split("(", 1)[0].rsplit(".", 1)[-1]
    if strict:
        said = match["msg"] or msg.endswith(":")  # "ImportError:" with the message below
        return match if said and last.endswith(_ORPHAN_SUFFIXES) else None
    camel = any(c.islower() for c in last)
    return match if camel and (match["msg"] is not None or last.endswith(_ORPHAN_SUFFIXES)
                               or "." in match["type"] or last.endswith(("Interrupt", "Exit"))) else None


class _Parser:
    """Walks the lines once; see the module docstring for the states."""

    def __init__(self):
        self.chains: list[Chain] = []
        self.block: Raised | None = None   # a traceback whose frames are open
        self.message: Raised | None = None  # an exception whose message may continue
        self.owner: Line | None = None       # the line that opened the block
        self.link_at: int | None = None      # line no of a chain separator
        self.link_line: Line | None = None   # and the separator itself
        self.last_no = 0                     # last line taken into the open block
        self.foreign = 0
        self.gap = False                     # a blank line inside an open message

    def feed(self, line: Line) -> None:
        if self.message is not None and self._continues(line):
            return
        if self.block is not None:
            self._in_frames(line)
        else:
            self._idle(line)

    def _continues(self, line: Line) -> bool:
        """Whether ``line`` goes on the open message; one blank line may sit inside it
        (huggingface_hub's messages have paragraphs), a second one ends it."""
        msg = line.msg
        if not msg.strip():
            self.gap, ended = not self.gap, self.gap
            self.message = None if ended else self.message
            return not ended
        ended = (_CHAIN_RE.match(msg) or _TRACEBACK_RE.search(msg) or line.level is not None or line.record
                 or self._foreign(line) or _RECORD_START_RE.match(msg) or _PROGRESS_RE.search(msg)
                 or _PY_FRAME_RE.match(msg) or (self.gap and _is_exception_line(msg.strip(), strict=False))
                 or UNITTEST_REPORT.match(msg) or len(self.message.exc_lines) > _MAX_CONTINUATION)
        if ended:
            self.message, self.gap = None, False
            return False
        self.message.message += ("\n\n" if self.gap else "\n") + msg.strip()
        self.message.exc_lines.append(line)
        self.gap = False
        return True

    def _foreign(self, line: Line) -> bool:
        owner = self.owner
        return line.stamped or (owner is not None and line.ident is not None
                                and owner.ident is not None and line.ident != owner.ident)

    def _own(self, line: Line) -> bool:
        """A line of the open traceback; a stamped line counts when it follows on."""
        if not self._foreign(line):
            return True
        owner = self.owner
        return (line.stamped and owner is not None and line.rank == owner.rank
                and line.no == self.last_no + 1)

    def _idle(self, line: Line) -> None:
        msg = line.msg
        if _CHAIN_RE.match(msg):
            self.link_at, self.link_line = line.no, line
        elif _TRACEBACK_RE.search(msg):
            self._open(line)
        elif _PY_FRAME_RE.match(msg) or _SHORT_FRAME_RE.match(msg):
            self._open(line, header=False)
            self._in_frames(line)
        elif (match := _is_exception_line(msg.strip(), strict=True)) and not line.msg.startswith(" "):
            raised = Raised(header="", type=match["type"], message=match["msg"] or "",
                            start=None, exc_lines=[line])
            self.chains.append(Chain([raised], orphan=True))
            self.message, self.owner, self.gap = raised, line, False

    def _open(self, line: Line, header: bool = True) -> None:
        """Open a traceback at its header line (or, headerless, at its first frame)."""
        text = _TRACEBACK_RE.split(line.msg)[0].strip() if header else ""
        self.block = Raised(header=text, start=line if header else None)
        self.owner, self.foreign, self.last_no = line, 0, line.no
        linked = self.link_at is not None and line.no - self.link_at <= _LINK_GAP
        if linked and self.chains and not (self.chains[-1].orphan or self.chains[-1].cut):
            self.block.link = self.link_line
            self.chains[-1].raised.append(self.block)
        else:
            self.chains.append(Chain([self.block]))
        self.link_at = None

    def _in_frames(self, line: Line) -> None:
        msg, block = line.msg, self.block
        if _TRACEBACK_RE.search(msg):
            self._drop_open_block()
            self._open(line)
        elif frame := _FRAME_RE.match(msg) or _SHORT_FRAME_RE.match(msg):
            block.frames.append(Frame(frame["file"], int(frame["line"]), frame["func"] or "", at=line))
            self.last_no = line.no
        elif cut := _CUT_FRAME_RE.match(msg):  # where the paste ends: the path still says where
            block.frames.append(Frame(cut["file"], 0, "", at=line))
            self.last_no = line.no
        elif self._is_code(line):
            last = block.frames[-1] if block.frames else None
            if last and not last.code and not set(msg.strip()) <= set("^~ "):
                last.code, last.code_at = msg.strip(), line
            elif last and last.code_at is not None and line.no == last.code_at.no + 1 \
                    and not set(msg.strip()) <= set("^~ ") and not msg.lstrip().startswith(("^", "~")):
                # a second code line right below a frame's: a paste that lost the frames between
                # (cut-middle) kept the code line of the frame it goes on at; where it is, is unknown
                block.frames.append(Frame("", 0, "", code=msg.strip(), at=line))
            self.last_no = line.no
        elif self._own(line) and (match := _is_exception_line(unshifted(msg, block.frames, _is_exception_line),
                                                              strict=False)):
            block.type, block.message = match["type"], match["msg"] or ""
            block.exc_lines = [line]
            self.block, self.message, self.gap = None, block, False
        else:
            self.foreign += 1
            if self.foreign > _MAX_FOREIGN:
                self._drop_open_block()

    def _is_code(self, line: Line) -> bool:
        """The source line under a frame: indented, or right below it where a paste stripped that; no exception."""
        msg = line.msg
        if not msg.strip() or not self._own(line):
            return False
        if msg[:1].isspace():
            return unshifted(msg, self.block.frames, _is_exception_line) == msg
        frames = self.block.frames
        return (bool(frames) and frames[-1].at is not None and frames[-1].at.no == line.no - 1
                and not frames[-1].code and not _is_exception_line(msg, strict=False))

    def _drop_open_block(self) -> None:
        """A traceback that never reached its exception line stays, and cuts its chain."""
        chain, block = self.chains[-1], self.block
        if block.frames or block.header:
            chain.cut = True
        else:
            chain.raised.remove(block)
            if not chain.raised:
                self.chains.pop()
        self.block = None


# (round 19) uvicorn's access line: the server answered a request (uvicorn/logging.py:107 (0.54.0),
# AccessFormatter: "METHOD PATH HTTP/v" STATUS), written once the handler has returned
ACCESS_RE = re.compile(r'"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) /\S* HTTP/[\d.]+" \d{3}\b')


def _reunite(chains: list[Chain], lines: list[Line] = ()) -> list[Chain]:
    """An exception line pasted just above the cut traceback that raised it is its message; not
    across an access line (round 19): the request the exception ended was answered before the
    traceback below it began, which is another record's."""
    answered = [ln.no for ln in lines if ACCESS_RE.search(ln.msg)]
    kept: list[Chain] = []
    for chain in chains:
        previous = kept[-1] if kept else None
        if (previous is not None and previous.orphan and chain.cut and len(chain.raised) == 1
                and chain.first_no - previous.last_no <= _LINK_GAP
                and not any(previous.last_no < no < chain.first_no for no in answered)):
            block, orphan = chain.raised[0], previous.raised[0]
            block.type, block.message, block.exc_lines = orphan.type, orphan.message, orphan.exc_lines
            kept[-1] = Chain([block])
            continue
        if (previous is not None and previous.orphan and not chain.cut and chain.first_no == previous.last_no + 1
                and previous.raised[0].type.endswith(f"({chain.outermost.type.rsplit('.', 1)[-1]})")):
            kept[-1] = chain  # (round 70) Ray's "RayTaskError(Cause): ray::f()" heads f's own traceback
            continue
        kept.append(chain)
    return kept


def _complete_cut_type(chains: list[Chain], lines: list[Line]) -> None:
    """A traceback whose paste ends inside its exception line's type name: that type, where only
    one of torch's fits (the message is lost)."""
    last = next((ln for ln in reversed(lines) if ln.msg.strip()), None)
    name = cut_type(last.msg) if last is not None else None
    if not chains or not name or not chains[-1].raised[-1].frames:
        return
    block = chains[-1].raised[-1]
    # a prefix with no lowercase letter ("torch.O") is no exception line: the block is cut; one
    # with ("torch.Ou") was read as an exception of that name, with no message
    cut = chains[-1].cut and not block.type and last.no > chains[-1].last_no
    if cut or (block.exc_lines == [last] and not block.message):
        block.type, block.exc_lines = name, [last]
        block.message = f"(the paste ends inside this line: {last.msg.strip()!r})"
        chains[-1].cut = False


def _complete_ipython_type(chains: list[Chain]) -> None:
    """A cut traceback whose IPython header named its exception: that type (the message is past the cut)."""
    for chain in chains:
        block = chain.raised[-1]
        named = ipython_type(block.start.msg) if block.start is not None else None
        if chain.cut and not block.type and named:
            block.type, block.exc_lines = named, [block.start]
            block.message = "(IPython's header names it; the paste ends before its message)"
            chain.cut = False


def find_chains(lines: list[Line]) -> list[Chain]:
    """Every exception chain (orphan exception lines and cut tracebacks included), in log order."""
    parser = _Parser()
    for line in lines:
        parser.feed(line)
    if parser.block is not None:
        parser._drop_open_block()
    chains = _reunite(parser.chains, lines)
    _complete_cut_type(chains, lines)
    _complete_ipython_type(chains)
    return chains
