"""The phase of a crash: the startup phase reached, raised to what the error and its frames say.

Contract: :func:`frames_near` gathers the frames printed around the root cause
(its traceback, tracebacks of other ranks a few lines away, and thread dumps:
faulthandler's, py-spy's, native backtraces; a compiler's diagnostics block, MLIR's
"FILE:LINE:COL: error: ..." lines, reaches from its last line: round 91); :func:`crash_phase` returns the
phase: the last startup phase line reached, raised to the signature's phase,
to what the message says ("Capture cuda graph failed") and to what the frames
show (:mod:`.frames`; serving frames only when no startup frame is there).
Two rules read the log around it:

- A log that shows nothing of the startup (no startup line before the error,
  no startup frame) is a paste from a running server: a fault only a running
  server meets (a signature marked ``running``: a kernel fault reported
  asynchronously, a collective timing out, a fatal signal, a hang) is
  ``serving`` there. Every other error keeps ``launch`` (where nothing is known).
- A crash after the HTTP server came up and before "ready to roll" is the
  launcher's warmup request: ``ready``, as in SGLang's own startup order, unless a
  rank's prefill batches took more sequences than the warmup sends (a client's), or the
  scheduler pads an image request after a /generate was answered (the warmup to /generate
  sends text only).
- A traceback in the scheduler's event loop before its first pass (``run_event_loop``
  with no serving frame below it) is ``ready`` too: the loop's own setup, not a step.
- (round 87) The crashing rank's own frames, where they name a startup step, decide the
  phase over another rank's later progress line: only its own lines raise it.
"""

from __future__ import annotations

import re

from ddlab.crashes.frames import frame_phases, shows_startup
from ddlab.diagnosis.logtext import PHASES, WARMUP_RE, Line, phase_reached, shows_startup_lines
from ddlab.diagnosis.rootcause import Candidate
from ddlab.diagnosis.tracebacks import Chain, router_launch

__all__ = ["frames_near", "crash_phase"]

_READY_RE = re.compile(r"The server is fired up and ready to roll")
_DUMP_LINE_RE = re.compile(
    r'^\s*File "[^"]+", line \d+ in \S+'               # faulthandler's frames
    r"|^(?:Current thread|Thread) 0x[0-9a-f]+"          # and its thread headers
    r"|^Thread \d+ \((?:idle|active|gil)\)"             # py-spy's thread headers
    r"|^\s*[A-Za-z_<][\w<>]* \([\w./<>-]+:\d+\)\s*$"   # and its frames
    r"|^\s*\d+\s+0x[0-9a-f]+ |^frame #\d+: ")           # native backtraces (UCX, c10)
_NEAR_LINES = 12
# (round 91) a compiler's diagnostics (MLIR's and clang's "FILE:LINE:COL: error|note|warning: ...", each with its
# source and caret lines, printed once per pass that fails) are one report: the traceback that raises it
# (Triton's "RuntimeError: PassManager::run failed", triton backends/amd/compiler.py make_llir pm.run) follows
# the block's last one, not the first
_DIAGNOSTIC_RE = re.compile(r"^\S+:\d+:\d+: (?:error|note|warning): ")
_DIAGNOSTIC_GAP = 3  # the source and caret lines under one diagnostic, and a blank one
_TEXT_PHASES = (  # what a message or the header printed with it says about where
    ("graph_capture", re.compile(r"Capture\b[\w\s-]{0,40}?\bcuda ?graph failed", re.I)),
    # the overlap scheduler's forward thread runs batches (tp_worker_overlap_thread.py:144)
    ("serving", re.compile(r"TpModelWorkerClient hit an exception")),
    # (round 65) a layer's quantization method missing when the layer makes its weights: create_weights is
    # called by the layers' constructors only (0.5.10 layers/moe/fused_moe_triton/layer.py:276 in __init__
    # :158; 0.5.23 :561, linear.py:494 via _initialize_partition from __init__ :436,
    # vocab_parallel_embedding.py:342, radix_attention.py:107) and the methods' own create_weights under them,
    # so "... has no attribute 'create_weights'" (a ModelSlim config finding no MoE scheme returns None,
    # 0.5.10 quantization/modelslim/modelslim.py:234-238) or a call of it refused is the model being built
    ("load_weights", re.compile(r"object has no attribute 'create_weights'"
                                r"|\bcreate_weights\(\) (?:got an unexpected keyword|missing \d+ required)")),
)
_STARTUP_PHASES = ("load_weights", "memory_pool", "graph_capture")
# a speculative step's batch input (0.5.23 speculative/eagle_info.py:318 EagleDraftExtendInput)
# in an error of the attention backend's per-batch metadata init (not its capture variant,
# init_forward_metadata_capture_cuda_graph): a draft extend or verify batch being served
_SPEC_STEP_RE = re.compile(r"\b\w*(?:DraftExtend|Verify)Input\b")
_PER_BATCH_INIT_RE = re.compile(r"(?:,| line \d+) in init_forward_metadata\s*$", re.M)


# (round 20) the scheduler's event loop before its first pass: run_event_loop sets itself up (0.5.23
# managers/scheduler.py:1975-1983, Triton's load hooks: "Engine init (graph capture, warmups) is done")
# before it dispatches to the loop (:1989, :2010 dispatch_event_loop). run_scheduler_process calls it
# (:6368) once the scheduler has sent its init result, while the HTTP server comes up: a traceback
# whose frames below run_event_loop hold no serving frame is the server finishing its startup, before
# any request (ready), not a step of serving
_LOOP_ENTRY_RE = re.compile(r'^\s*File "[^"]+", line \d+, in run_event_loop\s*$', re.M)


def _loop_entry(frames: str) -> bool:
    entries = list(_LOOP_ENTRY_RE.finditer(frames))
    if not entries:
        return False
    below = frames[entries[-1].end():]
    return bool(re.search(r'^\s*File "', below, re.M)) and "serving" not in frame_phases(below)


def _spec_step(said: str, frames: str) -> bool:
    return bool(_SPEC_STEP_RE.search(said) and _PER_BATCH_INIT_RE.search(frames)
                and not shows_startup(frames))
# torch's watchdog names the timed-out collective by its number on the group
# (ProcessGroupNCCL.cpp, WorkNCCL(SeqNum=N, ...)): one of a group's first is startup's
# barrier or pool sizing, never a serving step (each issues one per layer)
_FIRST_COLLECTIVES_RE = re.compile(r"WorkNCCL\(SeqNum=(\d+)\b")
_FIRST_COLLECTIVES = 16


def _first_collective(cause: str) -> bool:
    seq = _FIRST_COLLECTIVES_RE.search(cause)
    return seq is not None and int(seq[1]) <= _FIRST_COLLECTIVES


# (round 31) the launcher's warmup is one request of num_dp_ranks prompts (0.5.23
# entrypoints/http_server.py:2454-2456, 0.4.10.post2 :1022 ``["The capital city of France is"] * dp_size``):
# a rank whose prefill batches ("Prefill batch, #new-seq: N", 0.5.23
# managers/scheduler_components/metrics_reporter.py:754-755; "Prefill batch. #new-seq: N", 0.4.10.post2
# managers/scheduler_metrics_mixin.py:93-94) took more sequences than that before "ready to roll"
# served other requests: a client's, not the warmup's
_NEW_SEQS_RE = re.compile(r"\bPrefill batch(?: \[\d+\])?[.,] #new-seq: (\d+),")
_DP_SIZE_RE = re.compile(r"\bdp_size=(\d+)\b")


def _beyond_warmup(before: list[Line]) -> bool:
    dp = next((int(m[1]) for ln in before if (m := _DP_SIZE_RE.search(ln.msg))), 1)
    seqs: dict[str | None, int] = {}
    for ln in before:
        if match := _NEW_SEQS_RE.search(ln.msg):
            seqs[ln.rank] = seqs.get(ln.rank, 0) + int(match[1])
    return any(n > dp for n in seqs.values())


# (round 51) the launcher's warmup to /generate sends text only: "The capital city of France is" (0.3.6
# server.py:596, posted :599-606; 0.4.10.post2 entrypoints/http_server.py:1022), and the releases that warm a
# VLM up with an image send it to /v1/chat/completions (0.5.10 entrypoints/http_server.py:1786-1790). The
# scheduler pads input ids for an image only for a request that carries one (0.3.6 managers/scheduler.py:552-
# 557, ``if recv_req.image_inputs is not None``): a scheduler taking in an image request after a /generate
# was answered is taking in a client's request, past the warmup
_IMAGE_INTAKE_RE = re.compile(
    r", in handle_generate_request\s*\n\s*req\.origin_input_ids = self\.pad_input_ids_func\(")
_GENERATE_ANSWERED_RE = re.compile(r'"POST /generate HTTP/[\d.]+" 200\b')


def _client_image(before: list[Line], frames: str) -> bool:
    return bool(_IMAGE_INTAKE_RE.search(frames)) and any(_GENERATE_ANSWERED_RE.search(ln.msg) for ln in before)


def _rewrapped(lines: list[Line], best: Candidate | None) -> str:
    """Lines right below the cause that quote its message: a wrapper re-raising it with where it
    was raised ("Capture cuda graph failed: " + the error, 0.5.23 model_executor/
    runner_backend_utils/__init__.py:18)."""
    if best is None:
        return ""
    message = best.cause.split(": ", 1)[-1].strip()
    if len(message) < 24:
        return ""
    return "".join(f"\n{ln.msg}" for ln in lines if ln.no > best.first_no and ln.no - best.last_no <= 3
                   and message in ln.msg)


# (round 87) A rank's startup steps are its own: each rank's scheduler builds its model runner by itself (0.5.12
# managers/scheduler.py:437 init_model_worker in Scheduler.__init__, model_executor/model_runner.py:609 initialize),
# so another rank's later progress line ("Capture piecewise CUDA graph begin", 0.5.12 model_runner.py:3077) says
# nothing of where the crashing rank was. Where the crashing rank's frames name a startup step below the phase the
# log reached, the phase is that step, raised only to the crashing rank's own lines (and the lines no rank stamped)
def _own_rank(phase: str, lines: list[Line], best: Candidate | None, shown: list[str]) -> str:
    steps = [name for name in shown if name in _STARTUP_PHASES]
    rank = best.rank if best is not None else None
    if not rank or not steps or PHASES.index(steps[-1]) >= PHASES.index(phase):
        return phase
    own = [ln for ln in lines if ln.no < best.first_no and ln.rank in (None, rank)]
    return max([phase_reached(own)[0], steps[-1]], key=PHASES.index)


def _diagnostics_end(best: Candidate, lines: list[Line]) -> int:
    """The last line of the compiler diagnostics block a diagnostic line opens (its own where it opens none)."""
    end = best.last_no
    if best.chain is not None or not best.lines or not _DIAGNOSTIC_RE.match(best.lines[-1].msg):
        return end
    for ln in lines:
        if ln.no <= end:
            continue
        if ln.no - end > _DIAGNOSTIC_GAP:
            break
        if _DIAGNOSTIC_RE.match(ln.msg):
            end = ln.no
    return end


def frames_near(best: Candidate | None, chains: list[Chain], lines: list[Line]) -> str:
    """The crash's traceback and those printed right around it (another rank's echo, the
    scheduler's traceback below a kernel's assert) and the thread dumps around it."""
    if best is None:
        return ""
    last = _diagnostics_end(best, lines)
    near = [c for c in chains if c is best.chain or abs(c.first_no - last) <= _NEAR_LINES
            or abs(best.first_no - c.last_no) <= _NEAR_LINES]
    span = 5 * _NEAR_LINES
    dumped = [ln.msg for ln in lines if -span <= ln.no - best.last_no <= span
              and _DUMP_LINE_RE.match(ln.msg)]
    return "\n".join([c.text for c in near] + dumped)


def crash_phase(lines: list[Line], phase: str, best: Candidate | None, signature, frames: str) -> str:
    """The phase reached, raised to what the signature, the message or the frames imply
    (see the module docstring)."""
    shown = frame_phases(frames)
    phase = _own_rank(phase, lines, best, shown)
    hints = [signature.phase] if signature and signature.phase else []
    said = best.cause if best is not None else ""
    said += f"\n{best.chain.header}" if best is not None and best.chain is not None else ""
    said += _rewrapped(lines, best)
    hints += [name for name, text in _TEXT_PHASES if text.search(said)]
    hints += [("ready" if name == "serving" and _loop_entry(frames) else name) for name in shown]
    hints += ["serving"] if _spec_step(said, frames) else []
    phase = max([phase, *hints], key=PHASES.index)
    if best is None:  # a failed exit with no error line: where the log stopped
        return phase
    if router_launch(best.chain):  # (round 35) the router's own launch, whatever its workers reached
        return "launch"
    before = [ln for ln in lines if ln.no < best.first_no]
    if (phase == "launch" and signature is not None and signature.running and not shows_startup(frames)
            and not shows_startup_lines([ln for ln in lines if ln.no <= best.last_no])
            and not _first_collective(best.cause)):
        phase = "serving"
    warming = any(WARMUP_RE.search(ln.msg) for ln in before)
    ready = any(_READY_RE.search(ln.msg) for ln in before)
    warmup = "ready" in shown or (signature is not None and signature.phase == "ready")
    if warmup and not ready:  # the launcher's warmup request failed: batch lines before it are its own
        return "ready"
    if (warming and not ready and PHASES.index(phase) >= PHASES.index("graph_capture")
            and not (phase == "serving" and (_beyond_warmup(before) or _client_image(before, frames)))):
        return "ready"
    return phase


def is_startup(phase: str) -> bool:
    """A phase before the server could serve anything (launch is where nothing is known)."""
    return phase in _STARTUP_PHASES
