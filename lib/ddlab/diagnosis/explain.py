"""What a diagnosis quotes and says beside its kind: the evidence lines (the root cause's chain,
the phase line, the exit, the markers and the caller's patterns, at most 40), the cause in one
line, and the advice when no signature explains the crash. Shared by both families' readings
(:func:`ddlab.diagnosis.diagnosis.diagnose`).

Why: the verdict is only as good as what it shows for itself; a cause cut mid-word or evidence
that leaves out the raising frame sends the reader back to the whole log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ddlab.crashes.kinds.native import FATAL_SIGNAL_DUMP, STARTUP_SIGNAL_DUMP
from ddlab.crashes.kinds.runtime import HANG
from ddlab.diagnosis.exits import ENDED_UNASKED, ROUTER_START_PANIC, SHELL_QUIT_RE, Exit
from ddlab.diagnosis.logtext import Line
from ddlab.diagnosis.rootcause import Candidate
from ddlab.diagnosis.sglang_reading import MARKER_RE
from ddlab.diagnosis.signatures import WRAPPER_LINES, regex
from ddlab.diagnosis.vllm_facts import listed_below

__all__ = ["evidence", "cause", "unknown_advice"]

_EXIT_CODE_RE = re.compile(r"\bExit code: -?\d+|exit code:? -?\d+")
_MAX_EVIDENCE = 40
# a child's negative exit code that is a signal sent to it, not a fault (those are native_crash)
_SENT_SIGNALS = {"1": "SIGHUP", "2": "SIGINT", "3": "SIGQUIT", "15": "SIGTERM"}
_DUMPED_LOOP_RE = re.compile(r'^\s*(?:File "|event_loop_)')  # a hang told by a dumped frame
# Python prints a raised message whole, and a first line that ends with a colon introduces the
# line that tells: the exception dynamo wrapped (torch 2.13.0 _dynamo/exc.py:261, "backend={name!r}
# raised:\n{type}: {msg}"), the architectures SGLang found no processor for (0.5.23
# managers/multimodal_processor.py:86), Triton's error after the source it quotes and the caret
# (triton 3.4.0 compiler/errors.py:18-28, "at L:C:\n<source>\n^\n<error>"). Not SGLang's own
# advice after an empty "Capture cuda graph failed: " (0.5.23 runner/decode_cuda_graph_runner.py:603,
# runner_backend_utils/__init__.py:14-15), nor a line another writer put between.
_TRITON_AT_RE = re.compile(r"\bat \d+:\d+:$")
_CARET_RE = re.compile(r"^\s*\^+\s*$")
_NOT_THE_MESSAGE_RE = re.compile(
    r"^(?:Possible solutions:|Traceback |Process \S+:$|During handling |The above exception |In file included from |"
    r"[IWEF]\d{0,4}\s*[\d:. ]*\S+:\d+\]|\[?\d{4}-\d\d-\d\d|(?:INFO|WARNING|ERROR|DEBUG)\b)")
# a log line that ends with a colon introduces the items listed under it, one a line ("- name"): the Rust frontend's
# refusal names the arguments only there (vLLM round 115: "The following arguments are not implemented in Rust
# frontend yet:", "- api_key", the strings of vllm 0.22.0's vllm/vllm-rs, src/cmd/src/cli/unsupported.rs)
_LIST_ITEM_RE = re.compile(r"^\s*[-*] (\S.{0,79})$")


# --- evidence -----------------------------------------------------------------------

def _chain_evidence(candidate: Candidate) -> list[Line]:
    chain, raised, signature = candidate.chain, candidate.raised, candidate.signature
    picked = [chain.raised[0].start]
    for block in chain.raised:
        picked += [block.link, block.start]  # the separator says how the blocks are joined
        picked += block.exc_lines[:6]
        if block is not raised and block.frames:  # where an inner exception was raised
            picked += [block.frames[-1].at, block.frames[-1].code_at]
    frames = raised.frames[-3:] + [
        f for f in raised.frames
        if signature and any(regex(c, re.I | re.M).search(f"{f.at.msg}\n{f.code}") for c in signature.context)
    ]
    for frame in frames:
        picked += [ln for ln in (frame.at, frame.code_at) if ln]
    return picked


def evidence(lines, best, phase_line, exit_seen, patterns, crashed) -> list[str]:
    picked: dict[int, Line] = {}

    def add(found):
        picked.update((ln.no, ln) for ln in found if ln is not None)

    if best is not None:
        add(_chain_evidence(best) if best.chain else best.lines)
    if crashed:
        add([phase_line])
        add(ln for ln in lines if _EXIT_CODE_RE.search(ln.msg) or
            any(regex(p, re.I).search(ln.msg) for p in WRAPPER_LINES))
        add(exit_seen.lines)
    add([ln for ln in lines if MARKER_RE.search(ln.msg)][-12:])
    add([ln for ln in lines if any(p.search(ln.text) for p in patterns)][-20:])
    ordered = [picked[no].text for no in sorted(picked)]
    return ordered if len(ordered) <= _MAX_EVIDENCE else ordered[:8] + ordered[-(_MAX_EVIDENCE - 8):]


# --- cause and advice when no signature explains it -----------------------------------

def unknown_advice(best: Candidate | None, exit_seen: Exit) -> str:
    native = r"Segmentation fault|Aborted|core-dump|SEGV|ABRT|Fatal Python"
    if exit_seen.why and re.search(native, exit_seen.why):
        return ("A native crash (segfault / abort), no Python exception: rerun with "
                "CUDA_LAUNCH_BLOCKING=1 and PYTHONFAULTHANDLER=1 (the faulthandler dump shows the "
                "thread), then with CUDA graphs off to rule them out.")
    if best is None and exit_seen.why and SHELL_QUIT_RE.search(exit_seen.why):  # (round 64)
        return ("The shell says SIGQUIT ended the process ('Quit'), a signal another process sent: SGLang's "
                "children send it to their parent when one of them fails (\"Scheduler hit an exception\", the "
                "detokenizer, the watchdog), and a process that embeds the engine without SGLang's handler "
                "dies of it. The child's own error is not in this log: get its whole output (the engine's "
                "stderr, `journalctl -u UNIT -o cat`) and read the first traceback.")
    if best is None and exit_seen.why == ENDED_UNASKED:
        return ("The server was killed mid-startup without a word: look for the kernel's OOM killer "
                "(`journalctl -k | grep -i -E 'out of memory|killed process'`; on unified memory, DGX "
                "Spark or GH200, the weights and the KV pool share the host's RAM: lower "
                "--mem-fraction-static), else a timeout of the script that started it.")
    if best is None and exit_seen.why == ROUTER_START_PANIC:  # (round 71)
        return ("sgl-router's start-up health check used a blocking HTTP client inside its async start, and "
                "tokio panicked dropping it: a bug of that router (sglang PR 7619, June 2025, moved the check "
                "to a thread of its own). Upgrade sglang-router; the workers themselves are not at fault.")
    if best is None:
        return ("The process failed without an error in this log: read the whole journal "
                "(`journalctl -u UNIT -o cat`), the lines before the exit usually say why.")
    if best.cut:
        where = best.where("sglang")
        at = f"; its last frame is {where}" if where else ""
        return (f"The log ends inside a traceback (line {best.first_no}){at}: get the whole log "
                "(`journalctl -u UNIT -o cat`), the exception line below the frames names the error.")
    if (sent := re.search(r"exit code:? -(\d+)\b", best.cause, re.I)) and sent[1] in _SENT_SIGNALS:
        name = _SENT_SIGNALS[sent[1]]
        return (f"The process was ended by {name} (exit code -{sent[1]}), a signal another process sent, "
                "not a fault of its own (SGLang sends SIGQUIT when one of its processes fails: "
                "managers/scheduler.py after \"Scheduler hit an exception\", utils/watchdog.py): the first "
                "error is that process's, earlier in the log; get the whole log (`journalctl -u UNIT -o cat`).")
    where = best.where("sglang")
    look = f" It was raised at {where}: start reading there." if where else ""
    # (round 32) retract_decode runs when the KV pool cannot hold the next decode step (0.5.8.post1
    # managers/scheduler.py:2165-2178, 0.4.10.post2 :1656-1661, 0.5.23 :4469-4493): a fault under it is
    # the retract path's, which a scheduler that never fills its pool does not take
    if best.raised is not None and any(f.func == "retract_decode" for f in best.raised.frames):
        look += (" It failed inside the scheduler's retract (retract_decode), which it runs when the KV "
                 "pool has no room for the next decode step: a bug on that path, report it with this log; "
                 "until it is fixed, fewer running requests (`--max-running-requests`) or a larger pool "
                 "(`--mem-fraction-static`) make the retract rarer.")
    return (f"No known crash signature. The first error is line {best.first_no}: {best.cause[:160]}."
            f"{look} If it recurs, add a Signature (ddlab.crashes.kinds) with a fixture log.")


def _completed(best: Candidate) -> str:
    """The cause, its first line completed by the line below that tells when it ends with a colon."""
    raised, said = best.raised, best.cause
    if raised is None or said != raised.first_line or not said.endswith(":") or "\n" not in raised.message:
        return said
    first, *below = raised.message.split("\n")
    if not first.strip():
        return said  # a message that starts on the next line: where it ends is not told
    if _TRITON_AT_RE.search(first):
        caret = next((at for at, line in enumerate(below) if _CARET_RE.match(line)), None)
        below = below[caret + 1:] if caret is not None else []
    line = next((line.strip() for line in below if line.strip()), "")
    return f"{said} {line}" if line and not _NOT_THE_MESSAGE_RE.match(line) else said


def _listed(said: str | None, best: Candidate | None, lines: Sequence[Line]) -> str | None:
    """A log line's cause that ends with a colon, completed by the items listed under it."""
    if not said or best is None or best.raised is not None or not best.lines or not said.rstrip().endswith(":"):
        return said
    start = next((at for at, line in enumerate(lines) if line.no > best.lines[-1].no), len(lines))
    items = listed_below(lines, start, _LIST_ITEM_RE, 8)
    return f"{said.rstrip()} {', '.join(items)}"[:240] if items else said


def cause(best: Candidate | None, exit_seen: Exit, lines: Sequence[Line] = ()) -> str | None:
    """One line: the exception's message or the fatal line, cut near 240 characters; one that ends with a colon
    completed by what it introduces: a raised message's next line that tells (:func:`_completed`), or the items a
    log line lists under it (:func:`_listed`, over ``lines``)."""
    return _listed(_one_line(best, exit_seen), best, lines)


def _one_line(best: Candidate | None, exit_seen: Exit) -> str | None:
    """The cause before its completion by the lines under it."""
    if best is None:
        return exit_seen.why
    if best.signature is not None and best.signature.kind == "native_crash" \
            and best.cause.startswith("Extension modules:"):
        return ("a fatal signal's thread dump, its header cut (CPython lists the extension modules "
                f"only after a fatal error): {best.cause[:120]} ...")
    if best.signature is FATAL_SIGNAL_DUMP:
        return ("a fatal signal's thread dump (faulthandler), the scheduler running a step: "
                f"{best.cause.strip()}")
    if best.signature is STARTUP_SIGNAL_DUMP:
        return f"a fatal signal's thread dump (faulthandler), no event loop on the stack: {best.cause.strip()}"
    if best.signature is not None and best.signature.kind == "hang" and len(best.lines) == 1:
        if _DUMPED_LOOP_RE.match(best.cause):
            return f"a thread dump shows a scheduler in its event loop, no error: {best.cause.strip()}"
        # SGLang's watchdog state dump; vLLM's hang texts are error lines of their own
        if best.signature is HANG and not re.search(r"watchdog timeout|debug info", best.cause, re.I):
            return f"the scheduler watchdog's dump (no error): {best.cause.strip()}"
    said = _completed(best)
    text = said if not (best.wrapper and exit_seen.why) else f"{said} [{exit_seen.why}]"
    if len(text) <= 240:
        return text
    cut = text.rfind(". ", 120, 240)
    return text[:cut + 1] + " ..." if cut > 0 else text[:240] + " ..."
