"""Which ``--probe-fn`` (ddlab deploy) to suggest for a graph crash whose traceback names no field.

A replay or capture crash in the field said nothing of which forward-batch
field was None; a probe (:mod:`ddlab.probes`) on the innermost server method on
that path logs every argument's fields when it raises. :func:`probe_target`
reads that method off the traceback's frames.
"""

from __future__ import annotations

import re

__all__ = ["PROBE_KINDS", "probe_target"]

# Crashes whose traceback names no field: a probe on the verify path says which is None.
PROBE_KINDS = ("cuda_graph_replay", "cuda_graph_capture")
_SERVER_CODE = re.compile(r"/((?:sglang|ddlab/target)/[\w/]+)\.py$")


def probe_target(frames) -> str | None:
    """The ``--probe-fn`` for a traceback, as module.Class.method: the innermost server method
    the forward batch was passed to (its caller's code line hands it ``forward_batch``: the
    replay path); failing that, the innermost method a graph runner called on itself
    (``self.capture_one_shape(`` in the same file: the capture path, whose calls carry no
    batch). The class is the file's, SGLang's naming (``decode_cuda_graph_runner.py`` holds
    ``DecodeCudaGraphRunner``). None when no frame qualifies."""
    pairs = list(zip(frames, frames[1:]))
    for caller, frame in reversed(pairs):
        where = _SERVER_CODE.search(frame.file.replace("\\", "/"))
        if where and "forward_batch" in caller.code and "self." in caller.code:
            return _method_path(where.group(1), frame.func)
    for caller, frame in reversed(pairs):
        where = _SERVER_CODE.search(frame.file.replace("\\", "/"))
        if (where and "graph_runner" in where.group(1) and caller.file == frame.file
                and f"self.{frame.func}(" in caller.code):
            return _method_path(where.group(1), frame.func)
    return None


def _method_path(path: str, func: str) -> str:
    module = path.replace("/", ".")
    owner = "".join(part.capitalize() for part in module.rsplit(".", 1)[-1].split("_"))
    return f"{module}.{owner}.{func}"
