"""Paste formats that move a log's line boundaries, put back before anything reads the lines.

Contract: :func:`split_flattened`, :func:`split_glued_bar`, :func:`split_glued_terminate` and
:func:`error_body_message` take one line's text (its collector prefixes already
peeled) and return the lines it really was; :func:`join_wrapped_frames` and
:func:`peel_relay_level` take :class:`ddlab.diagnosis.logtext.Line` records and
return them with a terminal's wrap undone and a relaying logger's level field
peeled. :func:`ddlab.diagnosis.logtext.split_lines` applies them all.

- *Flattened*: a traceback whose line breaks became single spaces (a paste
  through a one-line field): "... (most recent call last):   File "x", line 1,
  in f     code KeyError: 'k'  During handling ...". Each printed line began with
  its own indentation (frames 2, code 4), the exception line with none.
- *Wrapped*: a terminal wrapped a long frame line at its width, so the function's
  name (or its tail) is on the next line: ``line 218, in exposed`` / ``_step``; or a
  reporter broke it after the path: ``File "x.py",`` / ``line 499, in f``.
- *Relayed*: a launcher that re-logs a child's stderr line by line with its own
  ``[time] ERROR: `` (a level and one space; uvicorn's own level prefix is
  padded) in front of every line of a traceback.
- *Glued*: another writer's text after a tqdm bar (tqdm redraws with CR and no newline), and
  the C++ runtime's "terminate called recursively" (libstdc++'s
  verbose terminate handler, then abort) written into the middle of another
  writer's line; so can CPython's "Fatal Python error: " header.
- *A client's answer*: the server's JSON error body pasted from the client
  (SGLang's ``ErrorResponse``: ``{"object": "error", "message": ...}``), read as
  the message it carries.
- *Indented*: a whole paste shifted right by the same indentation (a markdown code block, a
  list item's continuation), shifted back.
- *Line numbers*: a paste copied out of an editor or pager with each line's number in
  front (vim's ``:set number``: ``16433 [2026-...] ...``), numbers rising down the paste.
- *Inline code*: a line the reporter wrapped in markdown's inline code span
  (`` `ImportError: ...` ``; a span may open on one line and close on a later one),
  read without the backticks.
- *Emphasis*: a whole line the reporter wrapped in markdown emphasis (``**_OSError: ..._**``),
  read without the markers.
- *Container JSON logs*: Docker's json-file records (``{"log":"...","stream":...}``), several
  on one pasted line, read as the lines they carry (escapes decoded: ANSI colours, quotes).
- *Issue links*: GitHub turning ``#N`` into a link (``frame [#45](https://...)``), read as ``#N``.
- *Box border*: a paste copied out of a terminal UI that frames the log in a box (each line padded
  and closed by ``│``, later lines opened by it), read without the frame.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import replace

__all__ = ["respaced", "split_flattened", "split_glued_bar", "split_glued_terminate", "error_body_message",
           "join_wrapped_frames", "peel_relay_level", "unquote_inline_code", "unquote_emphasis",
           "peel_line_numbers", "dedented", "json_records", "unlinked", "peel_box_border"]

# --- flattened tracebacks ------------------------------------------------------------

_FLAT_RE = re.compile(r'Traceback \(most recent call last\): {1,3}File "')
_FLAT_FRAME = r' (?=  File "[^"]+", line \d+)'                      # "  File ..." began a line
_FLAT_CODE = r"(?<=\S) (?= {4,}\S)"                                  # so did a code or caret line
_FLAT_LINK = (r"  (?=During handling of the above exception, another exception occurred:"
              r"|The above exception was the direct cause of the following exception:)"
              r"|(?:(?<=occurred:)|(?<=exception:))  (?=Traceback \(most rec)")
_FLAT_SPLIT = re.compile(f"{_FLAT_FRAME}|{_FLAT_CODE}|{_FLAT_LINK}")
# the exception line after a frame's code line: "Type: message" (or a bare Type at the end)
_FLAT_EXC = re.compile(r" (?=(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Warning|Failure)"
                       r"(?:: |:?$))")


def split_flattened(text: str) -> list[str]:
    """A traceback flattened onto one line, as the lines it was printed as."""
    if not _FLAT_RE.search(text):
        return [text]
    out = []
    for part in _FLAT_SPLIT.split(text):
        if part.startswith("    ") and (exc := _FLAT_EXC.search(part)):  # code, then the exception
            out += [part[:exc.start()], part[exc.end():]]
        else:
            out.append(part)
    return out


# --- a paste that lost every space and line break -------------------------------------------

# A paste through a field that strips whitespace keeps the machine texts' words but not their
# spaces or line breaks: "[2026-02-0311:41:46]ERROR:ExceptioninASGIapplicationTraceback(mostrecent
# calllast):File\"/x/uvicorn/protocols/http/httptools_impl.py\",line411,inrun_asgiresult=...".
# The fixed texts are put back where they start a line: SGLang's stamp (0.5.23 utils/log_utils.py
# "[%(asctime)s%(prefix)s] ", asctime "%Y-%m-%d %H:%M:%S"), Python's traceback header, frame
# lines ('  File "{}", line {}, in {}', CPython Lib/traceback.py) and chain separators, uvicorn's
# access line ('%s - "%s %s HTTP/%s" %d', uvicorn/logging.py:107) and "Exception in ASGI
# application" (uvicorn/protocols/http/httptools_impl.py:426). A frame's function name and its
# code stay glued (nothing tells where one ends); its path and line number are whole.
_TAG_RE = re.compile(r"[A-Z_]+\d+")


def _spaced_tags(tags: str) -> str:
    """``DP0TP1`` -> `` DP0 TP1`` (the stamp's rank tags, each after a space)."""
    return "".join(f" {tag}" for tag in _TAG_RE.findall(tags))


_SPACELESS_RE = re.compile(r'Traceback\(mostrecentcalllast\):|File"[^"]+",line\d+,in')
_SPACELESS_BREAK = re.compile(
    r'(?=\[\d{4}-\d\d-\d\d\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[A-Z_]+\d+)*\])|(?=Traceback\(mostrecentcalllast\):)'
    r'|(?<=\(mostrecentcalllast\):)|(?=File"[^"]+",line\d+,in)'
    r'|(?=Duringhandlingoftheaboveexception,anotherexceptionoccurred:)'
    r'|(?=Theaboveexceptionwasthedirectcauseofthefollowingexception:)')
_SPACELESS_TEXTS = (
    (re.compile(r"^\[(\d{4}-\d\d-\d\d)(\d\d:\d\d:\d\d(?:[.,]\d+)?)((?:[A-Z_]+\d+)*)\]"),
     lambda m: f"[{m[1]} {m[2]}{_spaced_tags(m[3])}] "),
    (re.compile(r"^Traceback\(mostrecentcalllast\):"), lambda m: "Traceback (most recent call last):"),
    (re.compile(r'^File"([^"]+)",line(\d+),in'), lambda m: f'  File "{m[1]}", line {m[2]}, in '),
    (re.compile(r"^Duringhandlingoftheaboveexception,anotherexceptionoccurred:"),
     lambda m: "During handling of the above exception, another exception occurred:"),
    (re.compile(r"^Theaboveexceptionwasthedirectcauseofthefollowingexception:"),
     lambda m: "The above exception was the direct cause of the following exception:"),
)
_SPACELESS_INLINE = (
    (re.compile(r"(INFO|WARNING|ERROR|DEBUG|CRITICAL):(?=\d{1,3}(?:\.\d{1,3}){3}:\d+-\"|Exceptionin)"),
     lambda m: f"{m[1]}:     "),
    (re.compile(r'(\d{1,3}(?:\.\d{1,3}){3}:\d+)-"(GET|POST|PUT|DELETE|PATCH)(/\S*?)HTTP/([\d.]+)"(\d{3})'),
     lambda m: f'{m[1]} - "{m[2]} {m[3]} HTTP/{m[4]}" {m[5]} '),
    (re.compile(r"ExceptioninASGIapplication"), lambda m: "Exception in ASGI application"),
)


def respaced(text: str) -> list[str]:
    """A paste with no space and no line break left, as the lines its machine texts began."""
    if " " in text or not _SPACELESS_RE.search(text):
        return [text]
    out = []
    for part in filter(None, _SPACELESS_BREAK.split(text)):
        for pattern, spaced in _SPACELESS_TEXTS:
            if match := pattern.match(part):
                part = spaced(match) + part[match.end():]
                break
        for pattern, spaced in _SPACELESS_INLINE:
            part = pattern.sub(spaced, part)
        out.append(part)
    return out


# --- text glued after a progress bar -------------------------------------------------------

# tqdm redraws its bar with CR and no newline, so whatever another writer prints next
# (faulthandler's "Fatal Python error: Segmentation fault", an exception, a log record)
# lands on the bar's line. A bar ends with its "[elapsed<remaining, rate]" block
# ({l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]);
# a fatal error can also interrupt a bar before that block.
_GLUED_RE = re.compile(r"^(?P<bar>.*?\d+%\s*(?:Completed\s*)?\|(?:[^|]*\|)?\s*\d+/\d+ \[[\d:?]+<[^\]]*\])"
                       r"\s*(?P<tail>\S.*)$"
                       r"|^(?P<cut>.*?\d+%\s*\|.*?)(?P<fatal>Fatal Python error: .*)$")


def split_glued_bar(text: str) -> list[str]:
    """A line that holds a progress bar with another writer's text glued to its end, as two."""
    match = _GLUED_RE.match(text) if "%" in text else None  # a bar shows its percentage
    if not match:
        return [text]
    if match["bar"] is not None:
        return [match["bar"], *split_glued_bar(match["tail"])]
    return [match["cut"].rstrip(), match["fatal"]]


# --- glued C++ runtime messages ----------------------------------------------------------

# libstdc++ 12.2.0 libsupc++/vterminate.cc (__gnu_cxx::__verbose_terminate_handler): written
# unbuffered to stderr, so it lands inside whatever line another writer was printing; so does
# CPython's fatal error header, written straight to the stderr descriptor (CPython 3.12
# Modules/faulthandler.c faulthandler_fatal_error, Python/pylifecycle.c fatal_error: "Fatal
# Python error: "), as when two processes' dumps run together
_TERMINATE_RE = re.compile(r"^(?P<head>.*\S)(?P<tail>(?:terminate called (?:recursively|after throwing an "
                           r"instance of|without an active exception)|Fatal Python error: ).*)$")
# CPython's list of extension modules after a fatal error's dump is written the same way (3.12
# Python/pylifecycle.c _Py_DumpExtensionModules: "Extension modules: " and names joined by ", "),
# module names only: another writer's text glued after a name (a stamped record's "[") is its own line
_MODULES_RE = re.compile(r"^(?P<head>Extension modules: [\w.]+(?:, [\w.]+)*(?: \(total: \d+\))?)"
                         r"(?P<tail>[^\w\s,.(].*)$")


def split_glued_terminate(text: str) -> list[str]:
    """A line with the C++ runtime's terminate message (or CPython's fatal error header) glued
    into it, as two; so is an extension module list with another writer's line glued to it."""
    match = _TERMINATE_RE.match(text) or _MODULES_RE.match(text)
    return [match["head"], match["tail"]] if match else [text]


# --- a client's copy of the server's error answer -------------------------------------------

# SGLang's OpenAI-compatible error body (0.4.10.post2 entrypoints/openai/protocol.py:48,
# 0.5.23 :106 ErrorResponse; 0.5.23 entrypoints/openai/serving_base.py:214 fills it)
_ERROR_BODY_RE = re.compile(r'^\{\s*"object"\s*:\s*"error"\s*,\s*"message"\s*:\s*"(?P<msg>(?:[^"\\]|\\.)*)"')


def error_body_message(text: str) -> str:
    """The message of the server's JSON error answer (a quote escaped by the paste read as
    a quote); any other text as it is."""
    match = _ERROR_BODY_RE.match(text.strip())
    if not match:
        return text
    raw = match["msg"].replace("\\'", "'")
    try:
        return json.loads(f'"{raw}"')
    except ValueError:
        return raw


# --- a paste indented as a whole ------------------------------------------------------------------

def dedented(raws: list[str]) -> list[str]:
    """A paste whose every line is indented (a markdown indented code block: 4 or more; a list
    item's continuation: 2 or 3, "- " or "1. ") with that indentation removed, so a traceback's
    own indentation reads as printed and an exception line alone starts its line."""
    filled = [raw for raw in raws if raw.strip()]
    indent = min((len(raw) - len(raw.lstrip(" ")) for raw in filled), default=0)
    return [raw[indent:] for raw in raws] if indent else raws


# --- an editor's line numbers ------------------------------------------------------------------

# vim's ``:set number`` (and less -N, cat -n) puts the line's number and a space (or a tab) in front
# of each line; a line the editor shows empty keeps its bare number. No SGLang or Python line starts
# so, and a collector's epoch-ms prefix has 13 digits: up to 7 are a line number.
_LINE_NO_RE = re.compile(r"^ *(\d{1,7})(?:[ \t]|$)")
_NUMBERED_SHARE = 0.8  # of the paste's lines; the rest is the editor's own (its file status line)


def peel_line_numbers(raws: list[str]) -> list[str]:
    """A paste whose lines (all but a few) start with a line number, the numbers rising, mostly
    one by one (a few skipped lines allowed), without those numbers."""
    numbered = [(i, m) for i, raw in enumerate(raws) if (m := _LINE_NO_RE.match(raw))]
    filled = sum(1 for raw in raws if raw.strip())
    if len(numbered) < 3 or len(numbered) < _NUMBERED_SHARE * filled:
        return raws
    values = [int(m[1]) for _, m in numbered]
    steps = [b - a for a, b in zip(values, values[1:])]
    if min(steps) < 1 or sum(step == 1 for step in steps) < _NUMBERED_SHARE * len(steps):
        return raws
    out = list(raws)
    for i, match in numbered:
        out[i] = raws[i][match.end():]
    return out


# --- a terminal UI's box border ----------------------------------------------------------------

# A log copied out of a terminal UI that frames it (a pager or log viewer drawing a box with
# box-drawing characters, U+2502 and its heavy and double forms) keeps the frame: each line padded with
# spaces to the box's width and closed by the border, a line after the first opened by it and one
# space. Neither Python nor SGLang ends a line with one, so a paste whose lines (all but a few) end in
# one is such a copy, read without the frame.
_BOX = "\u2502\u2503\u2551"
_BOX_END_RE = re.compile(rf"\s*[{_BOX}]\s*$")
_BOX_START_RE = re.compile(rf"^\s*[{_BOX}] ?")
_BOXED_SHARE = 0.8  # of the paste's lines; the last one may be cut before its border


def peel_box_border(raws: list[str]) -> list[str]:
    """A paste framed by a terminal UI's box (its lines end in a vertical border), without the frame."""
    filled = [raw for raw in raws if raw.strip()]
    boxed = sum(1 for raw in filled if _BOX_END_RE.search(raw))
    if boxed < 2 or boxed < _BOXED_SHARE * len(filled):
        return raws
    return [_BOX_START_RE.sub("", _BOX_END_RE.sub("", raw), count=1) for raw in raws]


# --- a markdown inline code span around a line ------------------------------------------------

# GitHub's inline code: a run of one or two backticks opens a span, the same run closes it (it may go on over
# line breaks); three open a fenced block. Python and vLLM print no backtick at a line's ends: one there is the
# reporter's, also before a message's own `name` pair (huggingface_hub 0.26.2 utils/_validators.py:156; round 62).
_INLINE_RES = (re.compile(r"^(?P<run>`{1,2})(?!`)(?P<body>[^`]+)(?P=run)?$"),
               re.compile(r"^(?P<body>[^`]*[^`\s])`{1,2}$"),
               re.compile(r"^`(?P<body>[^`\s][^`]*(?:`[^`]*`[^`]*)+)$"))


def unquote_inline_code(text: str) -> str:
    """A line in a markdown inline code span, without the span's own backticks; others as they are."""
    match = next((m for r in _INLINE_RES if (m := r.match(text))), None) if "`" in text else None
    return match["body"] if match else text


# --- container JSON log records -------------------------------------------------------------

# Docker's json-file log driver writes each line a container printed as one JSON object,
# {"log":"LINE\n","stream":"stderr","time":"..."}; a paste of `docker logs` from the files (or a
# collector) runs them together. The record's string is the line, its escapes JSON's.
_RECORD_RE = re.compile(r'\{"log":\s*"(?P<log>(?:[^"\\]|\\.)*)"(?:,\s*"\w+":\s*"(?:[^"\\]|\\.)*")*\s*\}')


def json_records(raws: list[str]) -> list[str]:
    """Pasted lines, each line that holds container JSON log records as the lines they carry
    (text outside the records, a record the paste cut, kept as it is)."""
    out: list[str] = []
    for raw in raws:
        records = list(_RECORD_RE.finditer(raw))
        if not records:
            out.append(raw)
            continue
        at = 0
        for record in records:
            out += [raw[at:record.start()].strip()] if raw[at:record.start()].strip() else []
            out += json.loads(f'"{record["log"]}"').splitlines() or [""]
            at = record.end()
        out += [raw[at:].strip()] if raw[at:].strip() else []
    return out


# --- GitHub's issue links -------------------------------------------------------------------

# GitHub renders "#N" in a comment as a link to issue or pull N; copied back as markdown it is
# "[#N](https://github.com/OWNER/REPO/pull/N)" (a c10 backtrace's "frame #N:" among them)
_ISSUE_LINK_RE = re.compile(r"\[#(\d+)\]\(https?://github\.com/[^)\s]+/(?:issues|pull)/\1\)")


def unlinked(text: str) -> str:
    """``text`` with GitHub's issue links put back as the ``#N`` they were."""
    return _ISSUE_LINK_RE.sub(r"#\1", text)


# --- markdown emphasis around a line ------------------------------------------------------

# GitHub's emphasis: a run of up to three of ``*`` / ``_`` opens it, the same run reversed closes it
# (``**_text_**``: bold italic). Python and SGLang start no line with ``*`` and end none with ``_*``;
# a name with underscores (``__init__``, ``_pickle.X: y_``) has no space inside, or ends in the same
# run it starts with only by chance, so an ``_``-only run counts only around words with a space
# between them, starting with a letter.
_EMPHASIS_RE = re.compile(r"^(?P<run>[*_]{1,3})(?P<body>[^\s*_].*[^\s*_])(?P<close>[*_]{1,3})$")


def unquote_emphasis(text: str) -> str:
    """A whole line in markdown emphasis (``**...**``, ``_..._``, ``**_..._**``), without the
    markers; any other line as it is."""
    match = _EMPHASIS_RE.match(text)
    if not match or match["close"] != match["run"][::-1]:
        return text
    if "*" not in match["run"] and not (" " in match["body"] and match["body"][0].isalpha()):
        return text
    return match["body"]


# --- wrapped frame lines ----------------------------------------------------------------

_WRAPPED_FRAME_RE = re.compile(r'^\s*File "[^"]+", line \d+,? in(?: (?P<name>\S+))?$')
_NAME_REST_RE = re.compile(r"^ ?[\w<>.]+$")
_TERMINAL_WIDTH = 80  # a line wraps at the terminal's width; a shorter one ended there


def _wrapped_rest(frame, line) -> bool:
    """``line`` is the rest of ``frame``'s function name, which the terminal wrapped."""
    match = _WRAPPED_FRAME_RE.match(frame.msg)
    rest = line.msg.strip()
    if not (match and line.no == frame.no + 1 and _NAME_REST_RE.match(line.msg)) or keyword.iskeyword(rest):
        return False
    return match["name"] is None or len(frame.text) >= _TERMINAL_WIDTH


# a frame line broken after its path's comma (a reporter reflowing the paste onto short lines):
# ``File "x.py",`` then ``line 499, in _init_mamba_pool``
_REFLOWED_HEAD_RE = re.compile(r'^\s*File "[^"]+",$')
_REFLOWED_TAIL_RE = re.compile(r"^\s*line \d+, in [\w<>.]+$")


def _reflowed_rest(frame, line) -> bool:
    return (line.no == frame.no + 1 and bool(_REFLOWED_HEAD_RE.match(frame.msg))
            and bool(_REFLOWED_TAIL_RE.match(line.msg)))


def join_wrapped_frames(lines: list) -> list:
    """Frame lines a terminal wrapped inside the function's name (or a reporter broke after
    the path), joined again."""
    out: list = []
    for line in lines:
        if out and _wrapped_rest(out[-1], line):
            out[-1] = replace(out[-1], text=out[-1].text + line.msg, msg=out[-1].msg + line.msg)
            continue
        if out and _reflowed_rest(out[-1], line):
            rest = f" {line.msg.strip()}"
            out[-1] = replace(out[-1], text=out[-1].text + rest, msg=out[-1].msg + rest)
            continue
        out.append(line)
    return out


# --- a launcher relaying a child's stderr --------------------------------------------------

_RELAYED_HEADER_RE = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL): Traceback \(most recent call last\):")


def peel_relay_level(lines: list, restamp) -> list:
    """Where a stamped line is ``LEVEL: Traceback ...`` (one space: a relay's format, not
    uvicorn's padded prefix), that ``LEVEL: `` is peeled from every stamped line that has it;
    the relay's stamp goes with it (``restamp(line, msg)`` reads the message's own stamp)."""
    levels = {m[1] for ln in lines if ln.stamped and (m := _RELAYED_HEADER_RE.match(ln.msg))}
    if not levels:
        return lines
    out = []
    for line in lines:
        level = next((lv for lv in levels if line.stamped and (line.msg == f"{lv}:"
                                                             or line.msg.startswith(f"{lv}: "))), None)
        out.append(restamp(line, line.msg[len(level) + 2:]) if level else line)
    return out
