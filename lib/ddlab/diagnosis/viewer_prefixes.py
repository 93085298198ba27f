"""What a hosted log service's viewer writes before each line it shows, peeled as a paste prefix.

Contract: :data:`CLOUD_LOGGING` matches the prefix Google Cloud Logging's viewer puts before an
entry's text when a user copies it out: the entry's severity (a name of the LogSeverity enum,
googleapis google/logging/type/log_severity.proto: DEFAULT, DEBUG, INFO, NOTICE, WARNING, ERROR,
CRITICAL, ALERT, EMERGENCY), its RFC 3339 timestamp (nanoseconds, 'Z'), and, in the Logs Explorer's
copy of a textPayload entry as public pastes show it, the severity once more as '[severity: ERROR] '
(a Cloud Run traceback copied so reads 'ERROR 2026-03-04T07:17:34.871003Z [severity: ERROR]
Traceback (most recent call last): ...' beside the LogEntry it came from, whose "severity" is
"ERROR"). The echo is peeled only behind the severity and time and only where it names the same
severity, so a line of a process's own that says '[severity: ...]' keeps it. :mod:`.logtext` tries
it with the other collectors' prefixes, before SGLang's own '[YYYY-MM-DD hh:mm:ss TPn] ' stamp is
read. :data:`RFC3339` is the timestamp it reads, which logtext's other collector prefixes
(Kubernetes, CI, job launchers, sidecars) read too. :data:`RAY_TAG` is the tag Ray's driver puts before
each line of a task's or an actor's that it prints (its own lines carry none), which vLLM's engine core
writes too. :func:`peel_desktop_time` peels the local time Docker Desktop's log view puts before each
line of a container's output. :data:`TORCHSERVE_RELAY` is what TorchServe's frontend writes before each
line its Python worker prints (the worker's stdout at INFO, its stderr at WARN). :data:`COLON_STAMP` is a
wrapper's local time and a colon before each line it relays (a shell loop stamping a process's output).
:data:`CMD_RANK_TAG` is a job launcher's tag of the command and its two indices before each line it relays.
:func:`peel_task_label` peels Slurm's task label (``srun --label``) before each line of a task's output.
:data:`CONSOLE_ROW` (vLLM round 90) is a log console's table row copied as text: a bar, the line's RFC 3339 time, a
bar ("  | 2025-03-07T05:56:27.270Z | "), a non-breaking space before it where the copy kept one.

Why a module of its own: logtext.py is at its ~400-line bound (../shared/STYLE.md), and a viewer's
prefix is a fact about the viewer, not about SGLang.
"""

from __future__ import annotations

import re

__all__ = ["CLOUD_LOGGING", "RFC3339", "RAY_TAG", "TORCHSERVE_RELAY", "COLON_STAMP", "CMD_RANK_TAG", "OMNI_STAGE_TAG",
           "CONSOLE_ROW", "RELAY_PREFIXES", "peel_desktop_time", "peel_task_label"]

_SEVERITY = "DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY"
RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"

# (vLLM round 90) a log console's row: "| time |" before the line's own text (its leading blanks, a NBSP, kept out)
CONSOLE_ROW = rf"^[ \t\xa0]*\| {RFC3339} \| "

# (round 43) "ERROR 2026-02-18T14:43:05.821451064Z [severity: ERROR] " (the echo optional)
CLOUD_LOGGING = re.compile(rf"^(?P<severity>{_SEVERITY}) {RFC3339} (?:\[severity: (?P=severity)\](?: |$))?")

_COLOUR = r"(?:\[\d{1,3}(?:;\d{1,3})*m)?"  # an ANSI colour whose ESC byte a paste lost: [36m
# (round 75) or whose ESC and "[" (and the leading "0;") it lost: vLLM colours its process tag CYAN "\033[0;36m"
# and RESET "\033[0;0m" (vllm/utils/system_utils.py:25-26, :181 _add_prefix (0.14.0)), pasted as "0;36m(...)0;0m "
# or "36m(EngineCore_DP0 pid=820)0m "; a tag so coloured may stand right before the next one, as the engine core's
# before the Ray worker's whose line it relays ("36m(EngineCore_DP0 pid=820)(RayWorkerWrapper pid=1189) INFO ...")
_BARE_COLOUR = r"(?:\[?\d{1,3}(?:;\d{1,3})*m)?"
# Ray's tag "(Name pid=N, ip=A) " before a worker's line, the engine core's alike; a SkyPilot job's node names its
# Ray task "NAME," or "head, rank=0," (skypilot 0.8.0 sky/backends/cloud_vm_ray_backend.py:638, :646): "(worker1,
# rank=1, pid=N, ip=A) " (round 43's h43004). (round 57) The driver prints its tasks' and actors' lines under it
# and its own lines bare (ray-project/ray doc/source/ray-observability/ray-logging.rst, "Driver logs", "Worker
# logs"), so which lines carried it tells the driver's from an actor's (logtext's Line.actor). (round 81) The name is
# the actor's repr where its class defines __repr__: the worker prints ":actor_name:" + repr(actor) after __init__
# (ray-project/ray python/ray/_raylet.pyx, execute_task), the log monitor keeps what follows the token as the name
# (ray 2.43.0 _private/log_monitor.py:379-383, the token _private/ray_constants.py:320) and the driver prints it
# before "pid=" (_private/worker.py:2091-2092): "(WorkerDict(rank=54 pod=p-0) pid=384, ip=10.1.2.3) ", one level
# of parentheses taken
RAY_TAG = (rf"^{_COLOUR}\((?:[\w-]+ |[\w-]+\([^()]*\) |[\w.-]+, (?:rank=\d+, )?)?pid=\d+(?:, ip=[\w.-]+)?\){_COLOUR} "
           rf"|^(?:\d{{1,3}};)*\d{{1,3}}m\([\w-]+ pid=\d+\){_BARE_COLOUR}(?: |(?=\([\w-]+ pid=\d+\)))")

# (round 74) TorchServe's frontend reads its Python worker's stdout and stderr line by line and logs each line to
# its MODEL_LOG logger, at INFO (stdout) or WARN (stderr), on a thread named "W-<port>-<model>_<version>-stdout"
# ("-stderr") (pytorch/serve frontend/server/src/main/java/org/pytorch/serve/wlm/WorkerLifeCycle.java,
# ReaderThread: super(name + "-stdout"), loggerModelOutput.info(result) / .warn(result)), with its console
# layout "%d{ISO8601} [%-5p] %t %c - %m%n" (frontend/server/src/main/resources/log4j2.xml): "2024-11-18T16:43:45,496
# [INFO ] W-9000-model_1.0-stdout MODEL_LOG - " before each line, a traceback's frame lines included
TORCHSERVE_RELAY = (r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{3} \[(?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ?\] "
                    r"W-\d+-\S+-std(?:out|err) MODEL_LOG -(?: |$)")

# (vLLM round 78) a wrapper's local time and a colon before each line of the process's output, as a shell loop
# stamping what it relays writes (`echo "$(date '+%F %T'): $line"`): "2025-06-27 17:14:23: (VllmWorker rank=1
# pid=N) ERROR ...". Neither server's logger ends a time with a colon (vLLM's "LEVEL MM-DD hh:mm:ss [file:N] ",
# 0.9.1 vllm/logger.py:22-26; SGLang's bracketed "[YYYY-MM-DD hh:mm:ss] ", 0.5.23 srt/utils/common.py:2630)
COLON_STAMP = r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?: (?=\S)"

# (round 86) a job launcher's tag before each line of a command it ran, the command and two indices (its node's
# and the process's), after the launcher's bracketed time: "[2025-12-08 15:20:22] [/bin/sh@<0,0>]:   File ...",
# a traceback's frame lines as Python wrote them after it (CPython 3.11.7 Lib/traceback.py:111-125 writes them
# bare, so the time and the tag are the relay's). Which launcher writes it was not found in the code searched
# (docs/diagnosis.md, round 86); the tag is peeled only as the whole line's prefix: "[", a command with no space,
# bracket or "@", "@<N,N>]:", then a space or the line's end; SGLang's stamp is "[YYYY-MM-DD hh:mm:ss...] " and
# no tag (0.5.23 srt/utils/common.py:2630)
CMD_RANK_TAG = r"^(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?\] )?\[[^\s\[\]@]+@<\d+,\d+>\]:(?: |$)"


# (round 60) Docker Desktop's log view copies each line of a container's output after its local time,
# "2025-02-06 07:14:10 " (no fraction, no zone; a line the container printed blank keeps the bare time), before
# SGLang's own bracketed stamp or before a launcher's traceback and pip's lines. A bare time
# is also how some writers stamp their own records (NIXL's "<time> NIXL INFO", the router's "<time>  INFO",
# a deployment's "<time> ERROR <pid> [file:N]") and how a paste cut inside SGLang's stamp starts ("<time>
# DP3 TP3] "), so it is peeled only where it stands before most of the paste's lines and before a line no
# writer stamps itself: a traceback's own (Python's traceback.print_exception writes them bare: CPython
# 3.11.7 Lib/traceback.py:111-125) or SGLang's stamp ("[YYYY-MM-DD hh:mm:ss...] ": 0.5.10
# srt/utils/common.py:1137-1141), which only a collector puts a time before.
_DESKTOP_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: |$)")
_COLLECTED_RE = re.compile(r'^(?:Traceback \(most recent call last\):|\s*File "[^"]+", line \d+|\[\d{4}-\d\d-\d\d )')
# (vLLM round 115) the view's other copy: the local time with its milliseconds and a bar, "2026-05-01 18:30:34.153 | "
# (a line the container printed blank keeps "<time> |"), before vLLM's lines as before a traceback's (w11505, a
# Docker Desktop copy on WSL2; vn01's traceback). A program's own logger may begin its records alike (a time, a bar, a
# level column: "<time> | ERROR    | module:function:line - ..."), so this form is peeled only before a line no writer
# stamps itself: a traceback's (above), or vLLM's own, whose records begin with the process tag or the level and never
# with a date (vllm 0.20.0 vllm/logger.py:22-26 "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d]",
# utils/system_utils.py:209 "({worker_name} pid={pid}) ")
_DESKTOP_BAR_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \|(?: |$)")
_VLLM_OWN_RE = re.compile(r"^(?:\([\w-]+(?: [\w-]+)? pid=\d+\) "
                          r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[)")


def _peeled(raws: list[str], time_re: re.Pattern, collected: tuple[re.Pattern, ...]) -> list[str] | None:
    timed = [time_re.match(raw) for raw in raws]
    shown = sum(1 for raw in raws if raw.strip())
    if sum(1 for m in timed if m) * 2 <= shown or not any(
            m and any(c.match(raw[m.end():]) for c in collected) for m, raw in zip(timed, raws)):
        return None
    return [raw[m.end():] if m else raw for m, raw in zip(timed, raws)]


def peel_desktop_time(raws: list[str]) -> list[str]:
    """``raws`` without Docker Desktop's time before each line, where the paste carries it (see above)."""
    return (_peeled(raws, _DESKTOP_TIME_RE, (_COLLECTED_RE,))
            or _peeled(raws, _DESKTOP_BAR_TIME_RE, (_COLLECTED_RE, _VLLM_OWN_RE)) or raws)


# (round 88) Slurm's srun --label writes the task's number, zero-padded to the width of the job's largest, and
# ": " before each line a task prints (SchedMD/slurm src/common/write_labelled_message.c, _write_label:
# ``"%0*d: "``): "0: [2025-03-05 03:55:55 TP0] Scheduler hit an exception: ...", "0:   File ...". Numbered lines
# of a paste's own ("1: ...") read alike, so the label is peeled only where one width of it stands before most of
# the paste's lines and before a line no writer stamps itself (a traceback's, SGLang's stamp: see above)
_TASK_LABEL_RE = re.compile(r"^(\d{1,5}): ")


def peel_task_label(raws: list[str]) -> list[str]:
    """``raws`` without srun's task label before each line, where the paste carries it (see above)."""
    labels = [_TASK_LABEL_RE.match(raw) for raw in raws]
    shown = sum(1 for raw in raws if raw.strip())
    widths = {len(m[1]) for m in labels if m}
    if (sum(1 for m in labels if m) * 2 <= shown or len(widths) != 1
            or not any(m and _COLLECTED_RE.match(raw[m.end():]) for m, raw in zip(labels, raws))):
        return raws
    return [raw[m.end():] if m else raw for m, raw in zip(labels, raws)]

# (vLLM round 86) vllm-omni's stage tag: each stage's process sets VLLM_LOGGING_PREFIX to "[Stage-N] " (vllm-omni
# vllm_omni/entrypoints/omni_stage.py:249 (be81443c)), which vLLM's logger writes before the level (vllm 0.13.0
# vllm/logger.py:22), after the worker's "(Worker pid=N) " tag: "(Worker pid=48884) [Stage-1] ERROR 01-19 ...";
# peeled with that tag (as RAY_TAG would peel it) and only before a level, so a line's own "[Stage-N] message"
# (omni_stage.py:566) keeps it, and a stage's own line with no process tag is read as before
OMNI_STAGE_TAG = r"^\((?:[\w-]+ )?pid=\d+\) \[Stage-\d+\] (?=(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) )"

# The prefixes above that logtext.py's paste prefixes try in one place, in this order: cloud logging (round
# 43), TorchServe's relay (74), a wrapper's "T: " stamp (78), a launcher's command and rank tag (86), a log
# console's row (90)
RELAY_PREFIXES = (CLOUD_LOGGING.pattern, TORCHSERVE_RELAY, COLON_STAMP, CMD_RANK_TAG, CONSOLE_ROW)
