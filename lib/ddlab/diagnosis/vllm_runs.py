"""A file of several vLLM servers started one after another: the phase reached is the last run's (vLLM round 102).

A benchmark script that starts a server, measures it, stops it and starts the next writes every run into one file.
Each run ends in its own shutdown: V1's engine core logs "[shutdown] EngineCore: trigger received signal=%s" on the
signal that stops it (v1/engine/core.py:1333 (0.27.1)), and uvicorn "Application shutdown complete." as the API
server's lifespan ends (uvicorn/lifespan/on.py:76 (0.54.0)). The next run starts over: its API server logs its
"non-default args: %s" (entrypoints/serve/utils/api_utils.py:273 (0.27.1)) before it builds the engine, whose core
logs "Initializing a V1 LLM engine (v%s) with config: %s" (v1/engine/core.py:122 (0.27.1)); a command line the
parser refuses starts with argparse's "usage: vllm ..." (CPython Lib/argparse.py ``error`` prints the usage first)
and ends there. An earlier run's "Application startup complete." or its answered requests say nothing of how far
the last one got: :func:`last_started` keeps the lines from the first start line after the last shutdown a start
follows. A file with no shutdown before a start (one run, or runs a crash ended with no stop) is kept whole.
"""

from __future__ import annotations

import re

from ddlab.diagnosis.logtext import Line
from ddlab.diagnosis.vllm_log import ENGINE_START_RE

__all__ = ["last_started"]

_SHUTDOWN_RE = re.compile(r"\[shutdown\] EngineCore: trigger received signal=|Application shutdown complete\.")
_START_RE = re.compile(rf"{ENGINE_START_RE.pattern}|^usage: vllm\b")  # a run's first lines, as vllm_phase_reached's


def last_started(lines: list[Line]) -> list[Line]:
    """The lines of the last run that started after an earlier run's shutdown (all of them where none did)."""
    cut, ended = None, False
    for index, line in enumerate(lines):
        if _SHUTDOWN_RE.search(line.msg):
            ended = True
        elif ended and _START_RE.search(line.msg):
            cut, ended = index, False
    return lines if cut is None else lines[cut:]
