"""Reading an SGLang server log as text: prefixes and startup phases.

Contract: :func:`split_lines` turns any of the forms ddlab meets -- journal
``short``/``short-precise``/``short-iso``/``short-iso-precise``/``short-full``/
``short-unix``/``short-monotonic``, ``-o cat``, a plain process log, or a log
pasted from somewhere else -- into :class:`Line` records. It removes the
journal prefix, ANSI colour codes and control characters, CR of CRLF, and the
prefixes other collectors put in front of each line (docker compose
``name  | ``, Kubernetes ``<time> stdout F `` and ``[pod/x/y] ``, cloud logging
``ERROR <time> [severity: ERROR] ``, CI and collector timestamps, Ray ``(Actor pid=N, ip=A) ``,
torch's ``[rank0]:`` and C++ ``[E1208 ...]``, glog, markdown quotes, Akash Console's
``[service]: ``, a deployment's own ``<date> <time> LEVEL <pid> [ DP0 TP0 file.py:N] ``, a log
viewer's time and source columns on lines of their own above each line), then
splits SGLang's own ``[2026-11-29 09:53:16 DP0 TP1] `` stamp into ``time`` and
``rank`` (tags ``DP PP ATTN_CP MOE_DP TP EP``; none at all on a one-GPU
server). Everything downstream (tracebacks, signatures, phases, decode lines)
reads ``Line.msg``, so no recogniser is anchored to one layout. The ``Decode batch`` lines'
figures are :mod:`.decode_lines`.

Why here and not in :mod:`ddlab.diagnosis.diagnosis`: the watch heartbeat needs
:func:`phase_of` and the bench needs the decode lines (:mod:`.decode_lines`) without the
crash machinery; :mod:`ddlab.diagnosis.diagnosis` re-exports them (DESIGN.md).
The facts a log states (server args, DDTree sizes) are :mod:`.facts`.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, replace

from ddlab.crashes.signature import Screen
from ddlab.diagnosis import collapsed, glued_records, long_lines, pytest_reports
from ddlab.diagnosis.jax_pool_lines import JAX_MEMORY_POOL  # (round 106) sglang-jax's KV pool: memory_pool
from ddlab.diagnosis.pastes import (dedented, error_body_message, join_wrapped_frames, json_records, peel_box_border,
                                    peel_line_numbers, peel_relay_level, respaced, split_flattened, split_glued_bar,
                                    split_glued_terminate, unlinked, unquote_emphasis, unquote_inline_code)
from ddlab.diagnosis.precompile_lines import FLASHINFER_AUTOTUNE, JAX_PRECOMPILE  # (rounds 83, 117): graph_capture
from ddlab.diagnosis.serving_lines import MID_SERVING_TEXTS, WEIGHT_UPDATE
from ddlab.diagnosis.viewer_prefixes import (RAY_TAG, RELAY_PREFIXES, RFC3339 as _ISO, OMNI_STAGE_TAG,
                                             peel_desktop_time, peel_task_label)

__all__ = ["Line", "split_lines", "strip_prefix", "PHASES", "phase_of", "phase_reached", "phase_marker",
           "is_progress_bar", "WARMUP_RE", "READY_MARK", "shows_startup_lines"]

# (round 54) an ESC spelt "ESC" (vLLM RESET "\033[0;0m": 0.10.2 utils:174); (round 86) split_lines: a CR spelt "^M"
_ANSI_RE = re.compile(r"(?:\x1b\[|\x9b|#033\[|\^\[\[)[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|(?<!\w)ESC\[[0-9;]*m")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_CTIME = rf"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) {_MONTH} [ \d]\d \d\d:\d\d:\d\d \d{{4}}"  # C's ctime(), no newline
_JOURNAL_TS = (
    r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?"
    rf"(?:{_MONTH} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"
    # (a zone's letters, never a log level: "...Z ERROR 04-07 02:11:20" is docker's time before vLLM's stamp)
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"(?: (?!(?:ERROR|DEBUG|TRACE|FATAL|INFO|WARN)\b)[A-Z]{2,5})?"
    r"|\d{9,}\.\d+"
    r"|\[\s*\d+\.\d+\])"
)
# (a host is never a date followed by a time: "<ISO>Z 2024-11-14 22:16:37,096 - ..." is a collector's
# stamp before a program's own, whose "22:" no ident is)
_JOURNAL_RE = re.compile(
    rf"^{_JOURNAL_TS} (?!\d{{4}}-\d\d-\d\d[ T]\d\d:\d\d)"
    r"(?P<host>[\w.-]+) (?P<ident>[^\s\[\]:]+)(?:\[(?P<pid>\d+)\])?: ?")
_JOURNAL_MARK_RE = re.compile(r"^-- .* --$")  # "-- Boot ... --", "-- No entries --"
_SGLANG_RE = re.compile(
    r"^(?:\[(?P<time>(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?)"
    r"|(?P<bare>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?))"
    r"(?P<tags>(?: [A-Z][A-Z_]*\d+)*)\] ?")
# torch's C++ (c10) log and glog: a severity letter, the date (torch >= 2.4 drops the
# leading zero of the month: E207 is Feb 7), the time, [a thread id,] file:line.
_CPP_LOG_RE = re.compile(r"^\[?(?P<level>[IWEF])\d{3,4} [\d:.]+ +(?:\d+ )?[\w.]+:\d+\] ")
# What other collectors and writers put in front of a line, tried in order, repeatedly.
_PASTE_PREFIXES = tuple(re.compile(p) for p in (
    r"^> ?",                                                            # markdown quote
    rf"^{_ISO} (?:stdout|stderr) [FP] ",                                # Kubernetes CRI log
    r"^\[pod/[^\]\s]+\] ",                                              # kubectl logs --prefix
    *RELAY_PREFIXES,                                                    # viewers and relays (viewer_prefixes.py)
    r"^\d{10,13}\t[^\t]*\t",                                           # collector: epoch-ms TAB time TAB
    rf"^\[{_ISO}\] [\w.-]+ >> ",                                        # job launcher: [time] pod >>
    rf"^\[[\w.-]+(?: [\w.-]+)?\]:(?: {_ISO} \d+ (?:stdout|stderr): ?| ?$)",  # sidecar: [name id]: time N stderr:
    rf"^\[{_ISO}\](?: |$)",                                               # collector: [ISO time]
    rf"^{_ISO}\s+(?:(?:TRACE|DEBUG|INFO|WARN|ERROR)\s+[\w.<>]+: )?",      # CI / tracing timestamps
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - [\w.]+ - [A-Z]+ - ",          # a launcher's Python logging
    r"^[a-z0-9][\w.-]*\s+\| ",                                          # docker compose "name  | "
    OMNI_STAGE_TAG, RAY_TAG,                                            # omni stage (86); Ray actor, engine core
    r"^\[rank\d+\]: ?",                                                  # torch elastic
    # (round 14) grep over several files (-H): "FILE:" (and "LINE:" with -n) before each matching line
    # (GNU grep's output, src/grep.c print_line_head); a log file's name, its extension one a log has
    r"^[\w.-]+\.(?:log|out|err|txt)(?::\d+)?:(?=\S)",
    # Akash Console's lease log viewer: "[service]: " (the pod name before its first "-"; an SDL
    # service name is lowercase), akash-network/console apps/deploy-web/src/services/
    # provider-proxy/logFormatters.ts:6 (formatLogMessage)
    r"^\[[a-z0-9]*\]: ",
    # Open MPI's mpirun --timestamp-output / --tag-output: ctime, [jobid,rank], <stream>: (open-mpi/ompi
    # orte/mca/iof/base/iof_base_output.c, orte_iof_base_write_output); a line cut before its colon too
    rf"^(?:{_CTIME}(?:\[\d+,\d+\])?|\[\d+,\d+\])<(?:stdout|stderr|stddiag)>(?::|$)",
    # (round 42) a collector's "MM-DD hh:mm:ss.mmm" glued to each line (a frame's indent kept), a space before
    # an unindented one; never vLLM's stamp (level first, no ms: 0.20.0 vllm/logger.py:22-26) nor SGLang's
    # ("[YYYY-MM-DD hh:mm:ss...] ": 0.5.10 srt/utils/common.py:1137-1141)
    r"^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}(?: (?=\S)|(?= )|$)",
    r"^(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d [\d:]+ [\w.]+:\d+\] ",        # vLLM-style logger
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| \w+ \| [\w.]+ \| ",              # SGLang 0.1 logger
    # (round 24) a deployment's own Python logging format around SGLang's rank prefix: "%(asctime)s
    # %(levelname)s %(process)d [" + configure_logger's prefix (" DP10 TP10 EP10", empty on one GPU;
    # 0.4.10.post2 managers/scheduler.py:2504-2512, 0.5.23 :6279-6291) + " %(filename)s:%(lineno)d] ",
    # repeated on each line of a record where its formatter does so (SGLang's own is "[time prefix] ",
    # 0.5.23 utils/common.py:2630)
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d+ "
    r"\[(?: ?[A-Z][A-Z_]*\d+)* ?[\w.-]+\.py:\d+\](?: |$)",
    # Python's exception-group gutter (traceback.TracebackException.format, 3.11+): "  | "
    # before each line of a group's traceback, "  + " before its header
    r"^ *(?:\| ?|\+ (?=Exception Group Traceback))",
))
_PROGRESS_BAR_RE = re.compile(r"\d+%\s*\||Completed \| \d+/\d+|\|\s*\d+/\d+ \[")


@dataclass(frozen=True)
class Line:
    """One log line. ``text`` keeps SGLang's prefix; ``msg`` drops it too."""

    no: int
    text: str
    msg: str
    ident: str | None = None
    pid: str | None = None
    time: str | None = None
    rank: str | None = None
    level: str | None = None  # I W E F of a C++ (torch c10, glog) log prefix it carried
    # (round 19) it carried a server logger's stamp at a level no traceback is logged at (vLLM's "INFO
    # 08-07 04:48:56 [file.py:N]"): the first line of a record of its own, never an exception's message
    record: bool = False
    actor: bool = False  # (round 57) it carried Ray's tag of a task's or actor's line (viewer_prefixes.RAY_TAG)

    @property
    def stamped(self) -> bool:
        """True when SGLang's logger stamped it: the first line of a log record."""
        return self.time is not None


def strip_prefix(line: str) -> str:
    """Remove a journal ``short``/``short-iso`` (or other journalctl) prefix."""
    match = _JOURNAL_RE.match(line)
    return line[match.end():] if match else line


def _clean(raw: str) -> str:
    return _CONTROL_RE.sub("", _ANSI_RE.sub("", raw)).rstrip()


def _unprefix(text: str, extra: tuple[re.Pattern, ...] = (),
              peeled: list[str] | None = None) -> tuple[str, str | None]:
    """``text`` without the collectors' and writers' prefixes (see the module docstring)
    and a dialect's own (``extra``, tried after them), and the severity of a C++ log prefix
    among them (``W`` for a warning); each prefix peeled is added to ``peeled`` when given."""
    level = None
    for _ in range(5 + len(extra)):
        if cpp := _CPP_LOG_RE.match(text):
            text, level = text[cpp.end():], cpp["level"]
            continue
        for prefix in (*_PASTE_PREFIXES, *extra):
            match = prefix.match(text)
            if match and match.end():
                if peeled is not None:
                    peeled.append(match[0])
                text = text[match.end():]
                break
        else:
            return text, level
    return text, level


def is_progress_bar(msg: str) -> bool:
    """A tqdm line (weights, graph capture): printed by any rank, in any order."""
    return bool(_PROGRESS_BAR_RE.search(msg))


# a traceback copied out of a JSON string keeps its escaped quotes: File \"path\", line N
_ESCAPED_FRAME_RE = re.compile(r'^\s*File \\"')


# (vLLM round 26) a paste copied from a page's HTML source keeps its character references: File &quot;path&quot;
_HTML_ENTITY_RE = re.compile(r"&(?:quot|#0*39|#x0*27|lt|gt|amp);", re.I)


def _unescaped(text: str) -> str:
    """A frame line copied from a JSON string, its quotes as Python printed them; a line copied from HTML
    source, its character references read back."""
    if _HTML_ENTITY_RE.search(text):
        text = html.unescape(text)
    return text.replace('\\"', '"') if _ESCAPED_FRAME_RE.match(text) else text


# (round 34) a log viewer's copy that puts each record's columns on lines of their own above what the
# process wrote: the viewer's time alone on its line ("2025-10-11 23:23:17"; SGLang's stamp is bracketed)
# and below it, where the viewer shows one, the record's source (a pod's name, one word). Where such time
# lines stand above most of the paste's other lines, they are the viewer's, and so is a one-word line
# right below most of them (read as blank lines: the paste's line numbers stay); a log with a few dates
# of its own (a job script's) keeps them.
_COLUMN_TIME_RE = re.compile(r"^\s*\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s*$")
_COLUMN_SOURCE_RE = re.compile(r"^\s*\w[\w.:/-]*\s*$")
_COLUMNED_SHARE = 0.8  # of the other lines with a time line above, and of the time lines with a source


def _peel_viewer_columns(raws: list[str]) -> list[str]:
    times = {i for i, raw in enumerate(raws) if _COLUMN_TIME_RE.match(raw)}
    sources = {i + 1 for i in times if i + 1 < len(raws) and i + 1 not in times
               and _COLUMN_SOURCE_RE.match(raws[i + 1])}
    columns = times | (sources if len(sources) >= _COLUMNED_SHARE * len(times) else set())
    if len(times) < 3 or len(times) < _COLUMNED_SHARE * (len(raws) - len(columns)):
        return raws
    return ["" if i in columns else raw for i, raw in enumerate(raws)]


def split_lines(text: str, extra: tuple[re.Pattern, ...] = (), record: re.Pattern | None = None) -> list[Line]:
    """Split ``text`` into :class:`Line` records (CRLF, ANSI and prefixes handled);
    ``extra``: a server family's own line prefixes, peeled after the collectors' (vLLM's
    process tag and logger stamp, :mod:`.vllm_log`). SGLang's stamp is split off as before.
    ``record``: a peeled prefix it matches makes the line :attr:`Line.record`."""
    lines = []
    raws = pytest_reports.python_frames(dedented(peel_line_numbers(peel_box_border(_peel_viewer_columns(
        peel_task_label(peel_desktop_time(json_records(text.replace("^M", "\r").splitlines()))))))))
    for no, raw in enumerate(raws, start=1):
        cleaned = unquote_emphasis(unquote_inline_code(_clean(unlinked(raw))))
        if _JOURNAL_MARK_RE.match(cleaned):
            continue
        ident = pid = None
        journal = _JOURNAL_RE.match(cleaned)
        if journal:
            ident, pid = journal["ident"], journal["pid"]
            cleaned = cleaned[journal.end():]
        peeled: list[str] = []
        cleaned, level = _unprefix(cleaned, extra, peeled)
        own = record is not None and any(record.match(p) for p in peeled)
        actor = any(re.match(RAY_TAG, p) for p in peeled)
        for part in _parts(_unescaped(unquote_emphasis(cleaned))):  # (round 87) bold after a stamp too
            time = rank = None
            msg = part
            stamp = _SGLANG_RE.match(msg)
            if stamp:
                time, rank = stamp["time"] or stamp["bare"], stamp["tags"].strip() or None
                msg = msg[stamp.end():]
            lines.append(Line(no, part, error_body_message(msg), ident, pid, time, rank, level, own, actor))
    return join_wrapped_frames(peel_relay_level(lines, _restamp))


def _parts(text: str) -> list[str]:
    """The lines one pasted line holds (:mod:`.pastes`; tqdm-glued text split), each bounded (:mod:`.long_lines`)."""
    return [long_lines.bounded(piece) for spaced in respaced(text) for flat in split_flattened(spaced)
            for whole in collapsed.split_collapsed(flat) for glued in split_glued_bar(whole)
            for term in split_glued_terminate(glued) for piece in glued_records.split_glued_record(term)]


def _restamp(line: Line, msg: str) -> Line:
    """``line`` with the message ``msg``, stamped by SGLang's own stamp in it (if any)."""
    stamp = _SGLANG_RE.match(msg)
    if not stamp:
        return replace(line, msg=msg, time=None, rank=None)
    return replace(line, msg=msg[stamp.end():], time=stamp["time"] or stamp["bare"],
                   rank=stamp["tags"].strip() or None)


# --- startup phases -----------------------------------------------------------

PHASES = ("launch", "load_weights", "memory_pool", "graph_capture", "ready", "serving")
# The model loader chosen and starting, after "Load weight begin" (0.5.23 load_model_utils.py:327, :346; loader.py
# :4174, :4207, :4219, :3555, :3821, :3559, :3828); its weights' format (0.4.5.post1 weight_utils.py:255, 0.5.23 :692)
_MODEL_LOADER = r"Using \w+ModelLoader\b|\w+ModelLoader: Loading|Model is already quantized, loading directly"
# SGLang Diffusion loading its modules: the DiT loader's "Loading model from N safetensors files" (0.5.6.post1
# multimodal_gen/runtime/loader/component_loader.py:659; round 34: "Loading %s from %s safetensors files",
# 0.5.7 :708, 0.5.9 component_loaders/transformer_loader.py:123, 0.5.19 :383), (round 65) its end "Loaded
# model with N.NNB parameters" (0.5.6.post2 :692), the pipeline's "Loading required modules" bar (0.5.23 :625)
_DIT_LOADER = (r"Loading \w+ from \d+ safetensors file(?:s|\(s\))?\b"
               r"|Loading required modules:|Loaded model with [\d.]+B parameters")
# (round 38) SGLang's MLX runner (Apple silicon) loading through mlx_lm: "Loading MLX model: PATH", then "MLX model
# loaded in Ns", its "Load weight end"; the attention discovery and pool sizing follow (0.5.13
# hardware_backend/mlx/model_runner.py:403, :462, then :150 find_attention_layers, :178 _compute_pool_size)
_MLX_LOADING, _MLX_LOADED = r"Loading MLX model: ", r"MLX model loaded in [\d.]+s"
_PHASE_MARKERS = (
    ("load_weights", re.compile(
        r"Load weight begin|Loading (?:safetensors|pt|bin) checkpoint shards|loading shards:"
        rf"|{_DIT_LOADER}|{_MODEL_LOADER}|{_MLX_LOADING}|Using model weights format\b", re.I)),
    ("memory_pool", re.compile(rf"Load weight end|KV Cache is allocated|Memory pool end|{_MLX_LOADED}"
                               rf"|{JAX_MEMORY_POOL}", re.I)),
    # "Capture cuda graph end" too: a paste that starts after the bars (0.4.6.post5 model_executor/model_runner.py:1101;
    # 0.5.23 model_runner_components/cuda_graph_setup.py:696); (round 75) the runners' lists before their bars, "Capture
    # cuda graph bs [...]" (0.5.9 model_executor/cuda_graph_runner.py:299), "... num tokens [...]" (0.5.9 piecewise_cuda_graph_runner.py:175)
    ("graph_capture", re.compile(r"Capture\b.{0,40}\bcuda graph (?:begin|end|bs \[|num tokens \[)|Capturing batches|"
                                 + JAX_PRECOMPILE + "|" + FLASHINFER_AUTOTUNE, re.I)),
    ("ready", re.compile(r"The server is fired up and ready to roll")),
    ("serving", re.compile(r"Decode batch\b")),
)
READY_MARK = dict(_PHASE_MARKERS)["ready"]  # "ready to roll": the launcher's warmup returned
_PHASE_END = re.compile(r"Memory pool end|Capture\b.{0,40}\bcuda graph end", re.I)
# The HTTP server is up and the launcher's warmup request runs: past graph capture, not yet "ready to roll"
# (sglang/srt/entrypoints/http_server.py, _wait_and_warmup). A --warmups warmup runs in the app's lifespan
# before it serves: "Running warmup NAME" (0.4.10.post2 srt/warmup.py:33 from entrypoints/http_server.py:151;
# 0.5.23 srt/entrypoints/warmup.py:37, :420). uvicorn's own start lines come before those (uvicorn 0.54.0
# server.py:101 "Started server process [N]", lifespan/on.py:48 "Waiting for application startup."): SGLang
# starts uvicorn once its schedulers reported ready (0.5.23 entrypoints/http_server.py:3156
# Engine._launch_subprocesses waits for them), and the app's startup starts the warmup thread (:450)
WARMUP_RE = re.compile(r"Uvicorn running on|Application startup complete|\"GET /(?:get_)?model_info HTTP"
                       r"|Running warmup \S|Started server process \[\d+\]|Waiting for application startup\.")
# A decode step that ran out of KV room retracts requests (0.4.6 managers/scheduler.py:1336 "Decode out of
# memory happened", 0.4.10.post2 scheduler.py:1666 and 0.5.10 scheduler.py:2596 "KV cache pool is full.
# Retract requests."): only a decode batch being served does that.
_RETRACT = r"Decode out of memory happened\.|KV cache pool is full\. Retract requests\."
_AFTER_READY = re.compile(rf"Prefill batch\b|\"(?:POST|GET) /(?:generate|v1/)\S* HTTP/[\d.]+\" 200|{_RETRACT}")
# A paste that begins mid-serving: batch lines and answered generation requests with no startup line before
# them ("ready to roll" long gone). Any endpoint a client POSTs to (an RL trainer's /update_weights_from_tensor,
# a line cut inside its path) but the launcher's /freeze_gc (0.5.23 entrypoints/http_server.py:2561); a client's
# other requests (a cache flush, uvicorn's 400, SGLang Diffusion's sampling params): .serving_lines
_MID_SERVING = re.compile(rf"Prefill batch\b|\"POST /(?!freeze_gc\b)[^\"\s]*(?: HTTP/[\d.]+\" 200|$)|{_RETRACT}"
                          rf"|{MID_SERVING_TEXTS}")
# The launcher's warmup is one request: a prefill batch with requests waiting behind it is
# traffic, served, even where no "ready to roll" line comes (an offline Engine prints none)
_QUEUED_PREFILL = re.compile(r"Prefill batch\b.*#queue-req: [1-9]")
# Lines a starting server writes (the launcher's, the scheduler's init, uvicorn's start, the NCCL communicator's
# init: 0.4.6.post5 distributed/device_communicators/pynccl.py:79, 0.5.23 pynccl.py:87) show the startup.
_STARTUP_RE = re.compile(
    r"server_args=|sglang is using nccl==|Init torch distributed begin|Load weight begin|Loading (?:safetensors|pt|bin) checkpoint"
    rf"|{_DIT_LOADER}|{_MODEL_LOADER}|{_MLX_LOADING}"
    r"|KV Cache is allocated|Capture\b.{0,40}\bcuda graph|Capturing batches|Uvicorn running on"
    rf"|{JAX_PRECOMPILE}|{JAX_MEMORY_POOL}"
    r"|Application startup complete|Started server process|scheduler is dead|died during initialization"
    r"|Initialization failed|The server is fired up", re.I)

# (round 39) SGLang 0.1.x stamps no rank; its model runner names the rank in its load lines: "Rank N: load
# weight begin." / "... end." (0.1.13 srt/managers/router/model_runner.py:281, :312; 0.1.16 :295, :334)
_RANK_SAID = re.compile(r"\bRank (\d+): load weight (?:begin|end)\.", re.I)
_PHASE_SCREENS = tuple((PHASES.index(name), Screen(regex)) for name, regex in reversed(_PHASE_MARKERS))


def _phase_index(msg: str, ready: bool) -> int:
    for index, screen in _PHASE_SCREENS:
        if screen.hit(msg):
            return index
    if ready and _AFTER_READY.search(msg):
        return PHASES.index("serving")
    return 0


def phase_marker(msg: str) -> str | None:
    """The phase a line announces (``load_weights`` ... ``serving``), or None."""
    index = _phase_index(msg, ready=False)
    return PHASES[index] if index else None


def phase_reached(lines: list[Line]) -> tuple[str, Line | None]:
    """The last startup phase reached, and the line that first reached it (a drafter's
    "Load weight begin" after the target's graphs does not go back). A batch line or an
    answered generation request with no startup line before it is ``serving``: the paste
    began mid-serving. The HTTP server up (uvicorn's start) is ``ready``: the launcher's
    warmup runs; batch lines count as serving only after "ready to roll" (the warmup's own
    prefill is no serving). Before the HTTP server is up, a startup is only as far as its slowest
    rank: ranks that began loading and never printed "Load weight end" are still loading (a rank
    is its stamp's tags, or 0.1.x's "Rank N:" in its load lines)."""
    best, at, started, fired = 0, None, False, False
    ready = PHASES.index("ready")
    ranks: dict[str, tuple[int, Line]] = {}  # each stamped rank's own startup phase
    for line in lines:
        index = _phase_index(line.msg, fired)
        if WEIGHT_UPDATE.search(line.msg):  # a running server's weight update (.serving_lines, round 82)
            index = PHASES.index("serving")
        said = None if line.rank else _RANK_SAID.search(line.msg)
        rank = line.rank or (said and f"Rank {said[1]}")
        # a rank that printed the end of its phase is past it: "Memory pool end" (0.4.10.post2 model_executor/
        # model_runner.py:1304, 0.5.23 mem_cache/kv_cache_configurator.py:499) is that rank's capture starting
        own = index + 1 if _PHASE_END.search(line.msg) else index
        if 0 < index < ready and rank and own > ranks.get(rank, (0, None))[0]:
            ranks[rank] = (own, line)
        fired = fired or index >= ready
        if not index and not started and _MID_SERVING.search(line.msg):
            index = PHASES.index("serving")
        if not index and WARMUP_RE.search(line.msg):
            index = ready
        if not index and _QUEUED_PREFILL.search(line.msg):
            index = PHASES.index("serving")
        started = started or bool(_STARTUP_RE.search(line.msg))
        # "ready to roll" is logged once the warmup returned (0.4.10.post2 entrypoints/http_server.py:1107,
        # 0.5.23 :2600): a request or batch line before it in the run was the warmup's
        if best > ready and READY_MARK.search(line.msg):
            best, at = ready, line
        if index > best:
            best, at = index, line
    slowest = min(ranks.values(), key=lambda r: r[0], default=None)
    if best < ready and slowest is not None and slowest[0] < best:
        best, at = slowest
    return PHASES[best], at


def shows_startup_lines(lines: list[Line]) -> bool:
    """Whether the lines show the server starting (any startup line, any phase line)."""
    return any(_STARTUP_RE.search(ln.msg) or phase_marker(ln.msg) for ln in lines
               if not is_progress_bar(ln.msg) or "Capturing batches" in ln.msg)


def phase_of(text: str) -> str:
    """The last startup phase the log reached (``launch`` ... ``serving``)."""
    return phase_reached(split_lines(text))[0]
